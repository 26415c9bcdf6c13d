/*
 * gw_console.h -- (gateway-internal) the web console on the admin listener
 * (gw_console.c): its static pages, the browser login that opens a session
 * cookie, logout, and the session check that lets the admin API accept
 * that cookie (with its CSRF token on writes) beside SigV4 and bearer
 * tokens. gw_admin.c calls it at three points of a request:
 *
 *   1. gw__console_public() before authentication: the login page and its
 *      files, POST /console/login, and a browser without credentials sent
 *      to the login page;
 *   2. gw__console_authenticate() inside authentication, for a request
 *      with a session cookie and no Authorization header;
 *   3. gw__console_serve() after authentication: the console's own
 *      authenticated routes (its page, GET /console/session, logout).
 *
 * The console has no route that changes data: its pages call the admin
 * API (docs/admin.md), as sluicectl does.
 *
 * Threading: one struct gw_console serves every loop thread (its session
 * store and login limiter are thread-safe).
 */
#ifndef SLUICE_GW_CONSOLE_H
#define SLUICE_GW_CONSOLE_H

#include <stdbool.h>

#include "gw_console_session.h"
#include "gw_admin.h"
#include "gw_transport.h"

struct cfg_snapshot;
struct gw_console;
struct gw_metrics;
struct part_engine;

/* Failed logins allowed per client address: a few typos, then one a
 * second; meters are kept for this many addresses at once. */
#define GW_CONSOLE_LOGIN_FAILURES_PER_S 1
#define GW_CONSOLE_LOGIN_FAILURES_BURST 10u
#define GW_CONSOLE_LOGIN_PEERS 256u

/* The header a console write carries its session's CSRF token in. */
#define GW_CONSOLE_CSRF_HEADER "x-sluice-csrf"

/* The value of the session cookie among req's Cookie headers (any of
 * them: HTTP/2 may split one into several, RFC 9113 §8.2.3), under either
 * of its names. Borrows from req. */
bool gw__console_cookie(const struct gw_request *req, struct sl_slice *value);

/* True when req goes to a console route that answers without credentials
 * (the login page, its files, POST /console/login), so that on_headers
 * lets its body in. */
bool gw__console_is_public(const struct gw_request *req);

/* The on_headers verdict (gw_transport.h) for such a request: a login whose
 * Content-Length says it is too large is answered 413 before its body
 * is read, since anyone may send one. */
enum gw_headers_verdict gw__console_public_headers(struct gw_exchange *ex,
                                                   const struct gw_request *partial);

/* Answers the console's requests that come before authentication: the
 * public routes above, redirects from "/" and "/console", and the console
 * page for a browser: served with a live session cookie, else a redirect
 * to the login page. A request with an Authorization header for the
 * console page is left to authentication (a tenant's key gets its 403).
 * Returns true when it answered ex. */
bool gw__console_public(struct gw_console *c, const struct cfg_snapshot *snap,
                        struct gw_exchange *ex, const struct gw_request *req);

/* Opens a session for the admin secret of snap, as a successful login
 * does (which has checked the secret). */
void gw__console_open(struct gw_console *c, const struct cfg_snapshot *snap, uint64_t now_ns,
                      struct gw_console_login *out);

enum gw_console_auth {
    GW_CONSOLE_AUTH_NONE,    /* no session cookie, or an Authorization header: not ours */
    GW_CONSOLE_AUTH_OK,      /* a live session, and on a write its CSRF token */
    GW_CONSOLE_AUTH_REFUSED, /* see status, code, message */
};

#define GW_CONSOLE_PRINCIPAL_CAP 40u

struct gw_console_verdict {
    int status; /* 401 or 403 when refused */
    const char *code;
    const char *message;
    char principal[GW_CONSOLE_PRINCIPAL_CAP]; /* "admin:session:LABEL" when OK */
};

/* Authenticates req by its session cookie against the admin secret of
 * snap. A write (any method but GET and HEAD) must also carry the
 * session's CSRF token in GW_CONSOLE_CSRF_HEADER and, when it has an
 * Origin header, come from the admin listener's own origin. */
enum gw_console_auth gw__console_authenticate(struct gw_console *c, const struct cfg_snapshot *snap,
                                              const struct gw_request *req,
                                              struct gw_console_verdict *v);

/* Answers the console's authenticated routes: GET /console/ (the page),
 * GET /console/session (the CSRF token of the cookie's session), GET
 * /console/history (the queues' last minutes) and POST /console/logout
 * (ends the session and clears the cookie). Returns true
 * when req was one of them and answered. */
bool gw__console_serve(struct gw_console *c, const struct cfg_snapshot *snap,
                       struct gw_exchange *ex, const struct gw_request *req);

#endif
