/*
 * gw_console_session.h -- (gateway-internal) the web console's browser
 * sessions (gw_console_session.c): what a login creates, what its cookie
 * finds again, and the CSRF token every write of that session must carry.
 *
 * A session is known by the SHA-256 of its cookie value only, so neither a
 * memory dump nor the time a lookup takes gives a usable cookie away. It
 * ends at logout, after GW_CONSOLE_IDLE_S without a request, after
 * GW_CONSOLE_LIFETIME_S in any case, and as soon as the admin secret it was
 * opened with is no longer the configured one (a reload that rotates the
 * secret logs every browser out).
 *
 * Every function takes the time (monotonic ns) as an argument, so expiry is
 * tested without waiting.
 *
 * Threading: one store serves every loop thread of the admin listener; a
 * mutex guards it. Calls are short (a scan of at most
 * GW_CONSOLE_MAX_SESSIONS slots).
 */
#ifndef SLUICE_GW_CONSOLE_SESSION_H
#define SLUICE_GW_CONSOLE_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sl.h"

#define GW_CONSOLE_IDLE_S 1800u      /* a session unused this long ends */
#define GW_CONSOLE_LIFETIME_S 43200u /* and any session after 12 hours */
#define GW_CONSOLE_MAX_SESSIONS 64u  /* a new login past this ends the least recently used */

/* 32 random bytes in lower-case hex, and a NUL. */
#define GW_CONSOLE_TOKEN_CAP 65u
/* A session's name in the audit log: 8 bytes of a hash of the cookie's
 * hash, in hex. Naming it cannot help anyone forge the cookie. */
#define GW_CONSOLE_LABEL_CAP 17u

struct gw_console_sessions;

/* What a login hands the browser. */
struct gw_console_login {
    char cookie[GW_CONSOLE_TOKEN_CAP]; /* the session cookie's value */
    char csrf[GW_CONSOLE_TOKEN_CAP];   /* the token writes must echo */
    char label[GW_CONSOLE_LABEL_CAP];
};

/* What a cookie finds. */
struct gw_console_session_view {
    char csrf[GW_CONSOLE_TOKEN_CAP];
    char label[GW_CONSOLE_LABEL_CAP];
    uint64_t expires_in_s; /* until the idle or the lifetime limit, whichever is first */
};

struct gw_console_sessions *gw__console_sessions_new(void);
void gw__console_sessions_free(struct gw_console_sessions *s);

/* Opens a session for a login with credential (the admin secret in force,
 * whose SHA-256 is kept to end the session when it changes). Always
 * succeeds: when the store is full the least recently used session ends. */
void gw__console_session_open(struct gw_console_sessions *s, struct sl_slice credential,
                              uint64_t now_ns, struct gw_console_login *out);

/* Finds the live session of a cookie value and marks it used at now_ns.
 * credential is the admin secret in force now. Returns SL_OK and fills
 * *out; SL_ENOTFOUND for an unknown, expired or ended session, or one
 * opened under another secret (which also ends it). */
int gw__console_session_find(struct gw_console_sessions *s, struct sl_slice cookie,
                             struct sl_slice credential, uint64_t now_ns,
                             struct gw_console_session_view *out);

/* Ends the session of a cookie value. Returns SL_OK, or SL_ENOTFOUND. */
int gw__console_session_close(struct gw_console_sessions *s, struct sl_slice cookie);

/* True when presented is the session's CSRF token; constant time in the
 * token's content (CRYPTO_memcmp of SHA-256 digests). */
bool gw__console_csrf_equal(const char *expected, struct sl_slice presented);

/* Live sessions at now_ns (for tests and the log). */
size_t gw__console_sessions_live(struct gw_console_sessions *s, uint64_t now_ns);

#endif
