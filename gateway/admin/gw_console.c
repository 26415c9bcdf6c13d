/*
 * gw_console.c -- the web console's HTTP side (gw_console.h): serves the
 * embedded files, logs a browser in with the admin secret and out again,
 * and checks a session cookie, with its CSRF token on writes, for the
 * admin API.
 *
 * Why these choices (docs/console.md says the same to operators):
 *  - The cookie is HttpOnly (no script reads it), SameSite=Strict (no
 *    other site's page makes the browser send it), Path=/, and over TLS
 *    Secure with the __Host- prefix (no subdomain or cleartext page can
 *    set it). It lives no longer than the session's lifetime.
 *  - SameSite alone leaves older browsers and same-site attackers, so each
 *    write also needs the session's CSRF token in a header, which another
 *    origin cannot read (no CORS headers here) and a form cannot send; and
 *    a write that names its Origin must name this listener.
 *  - Failed logins are rationed per client address (a burst for typos,
 *    then one a second): the login is the one place a guess costs nothing
 *    else, and one client's guessing must not lock the others out.
 *  - Every answer carries a Content-Security-Policy without 'unsafe-inline'
 *    and without any other origin, so even a message body that slipped
 *    into the page as markup could not run.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <openssl/crypto.h>
#include <openssl/sha.h>

#include "cfg.h"
#include "gw_console.h"
#include "gw_console_assets.h"
#include "gw_console_history.h"
#include "gw_act.h"
#include "gw_peer_ration.h"

#define COOKIE_NAME "sluice_session"
#define COOKIE_NAME_TLS "__Host-sluice_session"
#define LOGIN_BODY_MAX 4096u

#define CSP                                                                                        \
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "              \
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

struct gw_console {
    struct gw_console_sessions *sessions;
    struct gw_console_history *history; /* NULL without an engine */
    struct gw_metrics *metrics;         /* borrowed; may be NULL */
    struct gw_peer_ration *login_failures;
};

struct gw_console *gw__console_new(struct part_engine *engine, struct gw_metrics *metrics)
{
    struct gw_console *c = sl_xcalloc(1, sizeof(*c));
    c->metrics = metrics;
    c->history = engine != NULL ? gw__console_history_start(engine) : NULL;
    c->sessions = gw__console_sessions_new();
    c->login_failures = gw__peer_ration_new(
        GW_CONSOLE_LOGIN_FAILURES_PER_S, GW_CONSOLE_LOGIN_FAILURES_BURST, GW_CONSOLE_LOGIN_PEERS);
    return c;
}

void gw__console_free(struct gw_console *c)
{
    if (c == NULL) {
        return;
    }
    gw__console_history_stop(c->history);
    gw__console_sessions_free(c->sessions);
    gw__peer_ration_free(c->login_failures);
    free(c);
}

/* ---- answers ------------------------------------------------------------------ */

/* The headers every console answer carries, then up to EXTRA_MAX more. */
#define SECURITY_HEADERS 4u
#define EXTRA_MAX 4u

static void respond(struct gw_exchange *ex, int status, const struct gw_header *extra, size_t n,
                    const void *body, size_t len)
{
    struct gw_header h[SECURITY_HEADERS + EXTRA_MAX] = {
        {SL_SLICE_LIT("content-security-policy"), SL_SLICE_LIT(CSP)},
        {SL_SLICE_LIT("x-content-type-options"), SL_SLICE_LIT("nosniff")},
        {SL_SLICE_LIT("x-frame-options"), SL_SLICE_LIT("DENY")},
        {SL_SLICE_LIT("referrer-policy"), SL_SLICE_LIT("no-referrer")},
    };
    SL_ASSERT(n <= EXTRA_MAX);
    memcpy(h + SECURITY_HEADERS, extra, n * sizeof(*extra));
    gw_exchange_respond(ex, status, h, SECURITY_HEADERS + n, body, len);
}

/* A JSON object o (taken) with status; cookie, when not NULL, as
 * Set-Cookie. Never cached: it may carry a CSRF token. */
static void respond_json(struct gw_exchange *ex, int status, json_t *o, const char *cookie)
{
    char *text = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(o);
    struct gw_header h[EXTRA_MAX] = {
        {SL_SLICE_LIT("content-type"), SL_SLICE_LIT("application/json")},
        {SL_SLICE_LIT("cache-control"), SL_SLICE_LIT("no-store")},
    };
    size_t n = 2;
    if (cookie != NULL) {
        h[n++] = (struct gw_header){SL_SLICE_LIT("set-cookie"), sl_slice_cstr(cookie)};
    }
    if (status == 429) {
        h[n++] = (struct gw_header){SL_SLICE_LIT("retry-after"), SL_SLICE_LIT("1")};
    }
    respond(ex, status, h, n, text, strlen(text));
    free(text);
}

/* {"error": code, "message": message}, the admin listener's error shape. */
static void respond_error(struct gw_exchange *ex, int status, const char *code, const char *message)
{
    respond_json(ex, status, json_pack("{s:s, s:s}", "error", code, "message", message), NULL);
}

static void redirect(struct gw_exchange *ex, const char *location)
{
    const struct gw_header h[] = {
        {SL_SLICE_LIT("location"), sl_slice_cstr(location)},
        {SL_SLICE_LIT("cache-control"), SL_SLICE_LIT("no-store")},
    };
    respond(ex, 303, h, SL_ARRAY_LEN(h), NULL, 0);
}

static const struct gw_console_asset *asset_named(struct sl_slice name)
{
    for (size_t i = 0; i < gw__console_asset_count; i++) {
        if (sl_slice_eq_cstr(name, gw__console_assets[i].name)) {
            return &gw__console_assets[i];
        }
    }
    return NULL;
}

/* An embedded file, revalidated by its entity tag: the binary is the
 * only version there is, so a browser may keep it until sluiced changes. */
static void respond_asset(struct gw_exchange *ex, const struct gw_request *req,
                          const struct gw_console_asset *a)
{
    const struct gw_header h[] = {
        {SL_SLICE_LIT("content-type"), sl_slice_cstr(a->media_type)},
        {SL_SLICE_LIT("etag"), sl_slice_cstr(a->etag)},
        {SL_SLICE_LIT("cache-control"), SL_SLICE_LIT("no-cache")},
    };
    const struct gw_header *inm = gw_request_header(req, "if-none-match");
    if (inm != NULL && sl_slice_eq_cstr(inm->value, a->etag)) {
        respond(ex, 304, h + 1, SL_ARRAY_LEN(h) - 1, NULL, 0);
        return;
    }
    respond(ex, 200, h, SL_ARRAY_LEN(h), a->bytes, a->len);
}

/* ---- cookies ---------------------------------------------------------------- */

bool gw__console_cookie(const struct gw_request *req, struct sl_slice *value)
{
    for (size_t i = 0; i < req->header_count; i++) {
        const struct gw_header *h = &req->headers[i];
        if (!sl_slice_eq_cstr(h->name, "cookie")) {
            continue;
        }
        const char *p = h->value.p, *end = p + h->value.n;
        while (p < end) {
            while (p < end && (*p == ' ' || *p == ';')) {
                p++;
            }
            const char *pair = p;
            while (p < end && *p != ';') {
                p++;
            }
            const char *eq = memchr(pair, '=', (size_t)(p - pair));
            if (eq == NULL) {
                continue;
            }
            struct sl_slice name = {pair, (size_t)(eq - pair)};
            if (sl_slice_eq_cstr(name, COOKIE_NAME) || sl_slice_eq_cstr(name, COOKIE_NAME_TLS)) {
                *value = (struct sl_slice){eq + 1, (size_t)(p - eq - 1)};
                return true;
            }
        }
    }
    return false;
}

/* Set-Cookie for value (empty: clear it) into out. */
static void cookie_header(bool tls, const char *value, uint64_t max_age_s, char *out, size_t cap)
{
    snprintf(out, cap, "%s=%s; Path=/; Max-Age=%llu; HttpOnly; SameSite=Strict%s",
             tls ? COOKIE_NAME_TLS : COOKIE_NAME, value, (unsigned long long)max_age_s,
             tls ? "; Secure" : "");
}

#define COOKIE_HEADER_CAP 160u

static struct sl_slice admin_secret(const struct cfg_snapshot *snap)
{
    return sl_slice_cstr(snap->admin.secret_access_key != NULL ? snap->admin.secret_access_key
                                                               : "");
}

static bool find_session(struct gw_console *c, const struct cfg_snapshot *snap,
                         const struct gw_request *req, struct gw_console_session_view *view)
{
    struct sl_slice cookie;
    return gw__console_cookie(req, &cookie) &&
           gw__console_session_find(c->sessions, cookie, admin_secret(snap), sl_mono_ns(), view) ==
               SL_OK;
}

/* A browser names the origin of a page that sends a write; only this
 * listener's own pages may. */
static bool same_origin(const struct gw_request *req)
{
    const struct gw_header *origin = gw_request_header(req, "origin");
    if (origin == NULL) {
        return true;
    }
    const char *scheme = req->tls ? "https://" : "http://";
    size_t n = strlen(scheme);
    return origin->value.n == n + req->authority.n && memcmp(origin->value.p, scheme, n) == 0 &&
           memcmp(origin->value.p + n, req->authority.p, req->authority.n) == 0;
}

/* ---- login ----------------------------------------------------------------------- */

void gw__console_open(struct gw_console *c, const struct cfg_snapshot *snap, uint64_t now_ns,
                      struct gw_console_login *out)
{
    gw__console_session_open(c->sessions, admin_secret(snap), now_ns, out);
}

static bool secret_equal(struct sl_slice presented, struct sl_slice configured)
{
    unsigned char a[SHA256_DIGEST_LENGTH], b[SHA256_DIGEST_LENGTH];
    SHA256((const unsigned char *)presented.p, presented.n, a);
    SHA256((const unsigned char *)configured.p, configured.n, b);
    return configured.n > 0 && CRYPTO_memcmp(a, b, sizeof(a)) == 0;
}

/* A refused login is a failed authentication of the admin listener, in
 * sluice_admin_auth_failures_total, where an alert on guessing sees it. */
static void count_refusal(struct gw_console *c, bool throttled)
{
    if (c->metrics != NULL) {
        gw_metrics_count_admin_auth(c->metrics, throttled);
    }
}

/* POST /console/login {"secret": "..."}: the admin's secret access key
 * opens a session. */
static void login(struct gw_console *c, const struct cfg_snapshot *snap, struct gw_exchange *ex,
                  const struct gw_request *req)
{
    uint64_t now = sl_mono_ns();
    if (!gw__peer_ration_allowed(c->login_failures, req->peer, now)) {
        count_refusal(c, true);
        respond_error(ex, 429, "TooManyRequests",
                      "Too many failed logins; wait a few seconds and try again.");
        return;
    }
    if (!same_origin(req)) {
        /* A login from another site's page would sign the browser in to
         * whatever account that page chose. */
        respond_error(ex, 403, "AccessDenied",
                      "A console login must come from the admin listener's own origin.");
        return;
    }
    if (req->body.n > LOGIN_BODY_MAX) {
        respond_error(ex, 413, "PayloadTooLarge", "A login body is at most 4 KiB.");
        return;
    }
    json_error_t jerr;
    json_t *body = json_loadb(req->body.p, req->body.n, JSON_REJECT_DUPLICATES, &jerr);
    const char *secret = NULL;
    size_t secret_len = 0;
    if (body == NULL || json_unpack(body, "{s:s%}", "secret", &secret, &secret_len) != 0) {
        json_decref(body);
        respond_error(ex, 400, "BadRequest",
                      "The login body must be a JSON object {\"secret\": STRING}.");
        return;
    }
    if (!secret_equal((struct sl_slice){secret, secret_len}, admin_secret(snap))) {
        json_decref(body);
        gw__peer_ration_charge(c->login_failures, req->peer, now);
        count_refusal(c, false);
        sl_log(SL_LOG_WARN, "audit", "principal=- route=\"POST /console/login\" status=403");
        respond_error(ex, 403, "AccessDenied", "That is not the admin secret.");
        return;
    }
    json_decref(body);
    struct gw_console_login in;
    gw__console_open(c, snap, now, &in);
    char cookie[COOKIE_HEADER_CAP];
    cookie_header(req->tls, in.cookie, GW_CONSOLE_LIFETIME_S, cookie, sizeof(cookie));
    sl_log(SL_LOG_INFO, "audit",
           "principal=admin:session:%s route=\"POST /console/login\" status=200", in.label);
    respond_json(ex, 200,
                 json_pack("{s:s, s:I}", "csrf_token", in.csrf, "expires_in_s",
                           (json_int_t)GW_CONSOLE_IDLE_S),
                 cookie);
    OPENSSL_cleanse(&in, sizeof(in));
    OPENSSL_cleanse(cookie, sizeof(cookie));
}

/* ---- routes ------------------------------------------------------------------------ */

#define ASSETS_PREFIX "/console/assets/"

/* The embedded files that are no secret: what the login page needs, and
 * the console's script and style (the data comes from the API). */
static bool is_public_asset(struct sl_slice path, struct sl_slice *name)
{
    size_t n = strlen(ASSETS_PREFIX);
    if (path.n <= n || memcmp(path.p, ASSETS_PREFIX, n) != 0) {
        return false;
    }
    *name = (struct sl_slice){path.p + n, path.n - n};
    return true;
}

bool gw__console_is_public(const struct gw_request *req)
{
    struct sl_slice path, query;
    gw_request_split_path(req->path, &path, &query);
    return sl_slice_eq_cstr(req->method, "POST") && sl_slice_eq_cstr(path, "/console/login");
}

enum gw_headers_verdict gw__console_public_headers(struct gw_exchange *ex,
                                                   const struct gw_request *partial)
{
    const struct gw_header *len = gw_request_header(partial, "content-length");
    if (len == NULL) {
        return GW_HEADERS_CONTINUE; /* chunked: login() checks what arrived */
    }
    uint64_t n = 0;
    for (size_t i = 0; i < len->value.n && n <= LOGIN_BODY_MAX; i++) {
        char d = len->value.p[i];
        n = d >= '0' && d <= '9' ? n * 10 + (uint64_t)(d - '0') : LOGIN_BODY_MAX + 1;
    }
    if (n <= LOGIN_BODY_MAX) {
        return GW_HEADERS_CONTINUE;
    }
    respond_error(ex, 413, "PayloadTooLarge", "A login body is at most 4 KiB.");
    return GW_HEADERS_ANSWERED;
}

bool gw__console_public(struct gw_console *c, const struct cfg_snapshot *snap,
                        struct gw_exchange *ex, const struct gw_request *req)
{
    struct sl_slice path, query, name;
    gw_request_split_path(req->path, &path, &query);
    bool get = sl_slice_eq_cstr(req->method, "GET");
    if (gw__console_is_public(req)) {
        login(c, snap, ex, req);
    } else if (get && (sl_slice_eq_cstr(path, "/") || sl_slice_eq_cstr(path, "/console"))) {
        redirect(ex, "/console/");
    } else if (get && sl_slice_eq_cstr(path, "/console/login")) {
        respond_asset(ex, req, asset_named(SL_SLICE_LIT("login.html")));
    } else if (get && is_public_asset(path, &name)) {
        const struct gw_console_asset *a = asset_named(name);
        if (a == NULL || sl_slice_eq_cstr(name, "index.html") ||
            sl_slice_eq_cstr(name, "login.html")) {
            respond_error(ex, 404, "NotFound", "No such console file.");
        } else {
            respond_asset(ex, req, a);
        }
    } else if (get && sl_slice_eq_cstr(path, "/console/") &&
               gw_request_header(req, "authorization") == NULL) {
        struct gw_console_session_view view;
        if (find_session(c, snap, req, &view)) {
            respond_asset(ex, req, asset_named(SL_SLICE_LIT("index.html")));
        } else {
            redirect(ex, "/console/login");
        }
    } else {
        return false;
    }
    return true;
}

/* ---- the session check ---------------------------------------------------------------- */

static enum gw_console_auth refuse(struct gw_console_verdict *v, int status, const char *code,
                                   const char *message)
{
    v->status = status;
    v->code = code;
    v->message = message;
    return GW_CONSOLE_AUTH_REFUSED;
}

enum gw_console_auth gw__console_authenticate(struct gw_console *c, const struct cfg_snapshot *snap,
                                              const struct gw_request *req,
                                              struct gw_console_verdict *v)
{
    struct sl_slice cookie;
    if (gw_request_header(req, "authorization") != NULL || !gw__console_cookie(req, &cookie)) {
        return GW_CONSOLE_AUTH_NONE;
    }
    struct gw_console_session_view view;
    if (gw__console_session_find(c->sessions, cookie, admin_secret(snap), sl_mono_ns(), &view) !=
        SL_OK) {
        return refuse(v, 401, "Unauthorized",
                      "The console session has expired or ended; log in again.");
    }
    bool write = !sl_slice_eq_cstr(req->method, "GET") && !sl_slice_eq_cstr(req->method, "HEAD");
    if (write) {
        const struct gw_header *token = gw_request_header(req, GW_CONSOLE_CSRF_HEADER);
        if (token == NULL || !gw__console_csrf_equal(view.csrf, token->value)) {
            OPENSSL_cleanse(&view, sizeof(view));
            return refuse(v, 403, "AccessDenied",
                          "A write with the console's session cookie needs the session's CSRF "
                          "token in the X-Sluice-CSRF header.");
        }
        if (!same_origin(req)) {
            OPENSSL_cleanse(&view, sizeof(view));
            return refuse(v, 403, "AccessDenied",
                          "A console write must come from the admin listener's own origin.");
        }
    }
    snprintf(v->principal, sizeof(v->principal), "admin:session:%s", view.label);
    OPENSSL_cleanse(&view, sizeof(view));
    return GW_CONSOLE_AUTH_OK;
}

/* ---- authenticated routes ---------------------------------------------------------------- */

/* GET /console/session: the page asks for its CSRF token after a reload
 * (the token is in no cookie and in no file). */
static void session_info(struct gw_console *c, const struct cfg_snapshot *snap,
                         struct gw_exchange *ex, const struct gw_request *req)
{
    struct gw_console_session_view view;
    if (!find_session(c, snap, req, &view)) {
        respond_error(ex, 400, "BadRequest",
                      "This request is not authenticated by a console session; there is no "
                      "CSRF token to give.");
        return;
    }
    respond_json(ex, 200,
                 json_pack("{s:s, s:s, s:I}", "csrf_token", view.csrf, "session", view.label,
                           "expires_in_s", (json_int_t)view.expires_in_s),
                 NULL);
    OPENSSL_cleanse(&view, sizeof(view));
}

/* POST /console/logout: ends the cookie's session (if any) and clears the
 * cookie; authentication already checked its CSRF token. */
static void logout(struct gw_console *c, struct gw_exchange *ex, const struct gw_request *req)
{
    struct sl_slice cookie;
    bool ended =
        gw__console_cookie(req, &cookie) && gw__console_session_close(c->sessions, cookie) == SL_OK;
    char clear[COOKIE_HEADER_CAP];
    cookie_header(req->tls, "", 0, clear, sizeof(clear));
    respond_json(ex, 200, json_pack("{s:b}", "ended", ended), clear);
}

bool gw__console_serve(struct gw_console *c, const struct cfg_snapshot *snap,
                       struct gw_exchange *ex, const struct gw_request *req)
{
    struct sl_slice path, query;
    gw_request_split_path(req->path, &path, &query);
    bool get = sl_slice_eq_cstr(req->method, "GET");
    bool post = sl_slice_eq_cstr(req->method, "POST");
    if (get && sl_slice_eq_cstr(path, "/console/")) {
        respond_asset(ex, req, asset_named(SL_SLICE_LIT("index.html")));
    } else if (get && sl_slice_eq_cstr(path, "/console/session")) {
        session_info(c, snap, ex, req);
    } else if (get && sl_slice_eq_cstr(path, "/console/history") && c->history != NULL) {
        respond_json(ex, 200, gw__console_history_json(c->history), NULL);
    } else if (post && sl_slice_eq_cstr(path, "/console/logout")) {
        logout(c, ex, req);
    } else if (path.n >= strlen("/console/") && memcmp(path.p, "/console/", 9) == 0) {
        respond_error(ex, get || post ? 404 : 405, get || post ? "NotFound" : "MethodNotAllowed",
                      "The console serves GET /console/, GET /console/login, GET "
                      "/console/session, GET /console/history, POST /console/login and POST "
                      "/console/logout.");
    } else {
        return false;
    }
    return true;
}
