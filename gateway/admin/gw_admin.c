/*
 * gw_admin.c -- the admin listener: authentication, routing, GET /metrics
 * (see gw_metrics.c for the numbers) and GET /healthz. The /tenants and
 * /api/... routes (docs/admin.md) are in the gw_admin_*.c files named by
 * gw_admin_routes.h.
 *
 * Authentication (docs/policy.md, "Admin API and metrics"), against the
 * configuration snapshot the request started with:
 *  - "Authorization: Bearer TOKEN" is accepted when admin.bearer_token is
 *    set and TOKEN equals it; the comparison is of SHA-256 digests with
 *    CRYPTO_memcmp, so its time says nothing about the token (not even its
 *    length).
 *  - Otherwise the request must carry a SigV4 signature by the admin's
 *    access key (service "sqs", the configured region), verified as the
 *    SQS listener verifies its requests (same 15-minute clock window).
 *  - No credentials, a malformed header or a bearer token when none is
 *    configured: 401. A wrong token, a tenant's key, or a bad signature:
 *    403. Both with a JSON body {"error": CODE, "message": TEXT}.
 * GET /healthz answers without authentication, as on the SQS listener.
 *
 * Every POST is a write: it takes a token of the listener's write rate
 * (429 past it) and leaves an audit line naming the principal
 * (gw_admin_util.c).
 *
 * Threading: loop threads; each loop has its own SigV4 key cache and
 * partitions client (for the writes and the redrive runners).
 * Ownership: a route owns its struct gw_admin_req (and its snapshot
 * reference) until it answers, possibly from an engine completion.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>
#include <openssl/crypto.h>
#include <openssl/sha.h>

#include "cfg.h"
#include "gw_act.h"
#include "gw_admin.h"
#include "gw_admin_routes.h"
#include "gw_console.h"
#include "gw_peer_ration.h"

#define ADMIN_KEY_CACHE_SLOTS 16
#define SIGV4_SERVICE "sqs"

static void *loop_start(void *app, struct uv_loop_s *loop)
{
    struct gw_admin_loop *l = sl_xcalloc(1, sizeof(*l));
    l->base.api = app;
    l->base.loop = loop;
    int rc = part_client_new(l->base.api->engine, loop, &l->base.part);
    SL_ASSERT(rc == SL_OK);
    l->keys = sigv4_key_cache_new(ADMIN_KEY_CACHE_SLOTS);
    return l;
}

static void loop_drain(void *loop_ctx)
{
    struct gw_admin_loop *l = loop_ctx;
    /* Requests are answered at once or from a commit; redrives started
     * here stop taking batches, as those of the SQS loops do. */
    l->base.draining = true;
    gw__move_hooks.loop_drain(&l->base);
}

static void loop_stop(void *loop_ctx)
{
    struct gw_admin_loop *l = loop_ctx;
    part_client_close(l->base.part);
    sigv4_key_cache_free(l->keys);
    free(l);
}

/* ---- authentication ----------------------------------------------------------- */

/* Constant-time equality of a presented token and the configured one. */
static bool token_equal(struct sl_slice presented, const char *configured)
{
    unsigned char a[SHA256_DIGEST_LENGTH], b[SHA256_DIGEST_LENGTH];
    SHA256((const unsigned char *)presented.p, presented.n, a);
    SHA256((const unsigned char *)configured, strlen(configured), b);
    return CRYPTO_memcmp(a, b, sizeof(a)) == 0;
}

struct auth_failure {
    int status; /* 401 or 403 */
    const char *code;
    const char *message;
};

static bool auth_fail(struct auth_failure *f, int status, const char *code, const char *message)
{
    *f = (struct auth_failure){status, code, message};
    return false;
}

static bool authenticate_bearer(const struct cfg_snapshot *snap, struct sl_slice token,
                                struct auth_failure *f)
{
    if (snap->admin.bearer_token == NULL) {
        return auth_fail(f, 401, "Unauthorized",
                         "Bearer tokens are not enabled (admin.bearer_token is not set); sign "
                         "the request with the admin's SigV4 credentials.");
    }
    if (!token_equal(token, snap->admin.bearer_token)) {
        return auth_fail(f, 403, "AccessDenied", "The bearer token is not valid.");
    }
    return true;
}

/* sigv4_secret_fn over the snapshot: only the admin's key is known here. */
static int find_admin_secret(void *arg, struct sl_slice access_key_id, const char **secret)
{
    const struct cfg_snapshot *snap = arg;
    struct cfg_principal who;
    if (!cfg_find_principal(snap, access_key_id.p, access_key_id.n, &who) ||
        who.kind != CFG_PRINCIPAL_ADMIN) {
        return SL_ENOTFOUND;
    }
    *secret = who.secret_access_key;
    return SL_OK;
}

static bool authenticate_sigv4(struct gw_admin_loop *l, const struct cfg_snapshot *snap,
                               const struct gw_request *req, struct auth_failure *f)
{
    const struct sigv4_verifier v = {
        .region = snap->region,
        .service = SIGV4_SERVICE,
        .now_s = (int64_t)(sl_wall_ms() / 1000),
        .cache = l->keys,
        .find_secret = find_admin_secret,
        .arg = (void *)snap,
    };
    enum sigv4_failure failure;
    if (gw__auth_sigv4(req, &v, &failure, NULL) == SL_OK) {
        return true;
    }
    switch (failure) {
    case SIGV4_FAIL_MISSING:
    case SIGV4_FAIL_MALFORMED:
        return auth_fail(f, 401, "Unauthorized",
                         "The Authorization header is neither a Bearer token nor an AWS "
                         "Signature Version 4.");
    case SIGV4_FAIL_UNKNOWN_KEY:
        return auth_fail(f, 403, "AccessDenied",
                         "Only the admin credentials may use the admin listener.");
    default:
        return auth_fail(f, 403, "AccessDenied",
                         "The request signature is not valid for the admin credentials (or is "
                         "dated more than 15 minutes from the server's clock).");
    }
}

/* The Authorization value, or a refusal that needs neither the body nor
 * the loop (a session token, no credentials at all). */
static const struct gw_header *authorization(const struct gw_request *req, struct auth_failure *f)
{
    if (gw_request_header(req, "x-amz-security-token") != NULL) {
        auth_fail(f, 403, "AccessDenied", "Session tokens are not supported.");
        return NULL;
    }
    const struct gw_header *authz = gw_request_header(req, "authorization");
    if (authz == NULL || authz->value.n == 0) {
        auth_fail(f, 401, "Unauthorized",
                  "The admin listener requires the admin credentials: SigV4 or "
                  "Authorization: Bearer.");
        return NULL;
    }
    return authz;
}

/* Authenticates req as the admin: its bearer token, or its SigV4
 * signature. Without l (the headers have arrived, the body has not), the
 * signature is not checked yet: every refusal made then is the one the
 * whole request would get, so it can be sent before the body is read, and
 * true means only the signature is left to check. */
static bool authenticate(struct gw_api *api, struct gw_admin_loop *l,
                         const struct cfg_snapshot *snap, const struct gw_request *req,
                         struct gw_console_verdict *cv, struct auth_failure *f)
{
    switch (gw__console_authenticate(api->console, snap, req, cv)) {
    case GW_CONSOLE_AUTH_OK:
        return true;
    case GW_CONSOLE_AUTH_REFUSED:
        return auth_fail(f, cv->status, cv->code, cv->message);
    case GW_CONSOLE_AUTH_NONE:
        break;
    }
    const struct gw_header *authz = authorization(req, f);
    if (authz == NULL) {
        return false;
    }
    struct sl_slice v = authz->value;
    if (v.n > 7 && strncasecmp(v.p, "Bearer ", 7) == 0) {
        return authenticate_bearer(snap, (struct sl_slice){v.p + 7, v.n - 7}, f);
    }
    if (l != NULL) {
        return authenticate_sigv4(l, snap, req, f);
    }
    struct sigv4_auth auth;
    enum sigv4_failure failure;
    if (sigv4_parse_authorization(v, &auth, &failure, NULL) != SL_OK) {
        return auth_fail(f, 401, "Unauthorized",
                         "The Authorization header is neither a Bearer token nor an AWS "
                         "Signature Version 4.");
    }
    const char *secret;
    if (find_admin_secret((void *)snap, auth.access_key_id, &secret) != SL_OK) {
        return auth_fail(f, 403, "AccessDenied",
                         "Only the admin credentials may use the admin listener.");
    }
    return true;
}

/* ---- GET /metrics ---------------------------------------------------------------- */

static void answer_metrics(struct gw_admin_loop *l, const struct cfg_snapshot *snap,
                           struct gw_exchange *ex)
{
    struct gw_metrics_sources src = {
        .snap = snap,
        .engine = l->base.api->engine,
        .limiter = l->base.api->limiter,
        .now_ns = sl_mono_ns(),
        .conns = l->base.api->conns,
        .admin_conns = l->base.api->admin_conns,
        .budget = l->base.api->budget,
    };
    struct sl_buf out;
    sl_buf_init(&out);
    gw_metrics_render(l->base.api->metrics, &src, &out);
    gw__admin_respond_text(ex, 200, "text/plain; version=0.0.4; charset=utf-8", out.p, out.n);
    sl_buf_free(&out);
}

/* ---- routing ------------------------------------------------------------------------- */

/* Who the authenticated request is, for the audit line: the bearer token
 * or the admin's access key id (never a secret). */
static void principal_of(const struct gw_request *req, char *out, size_t cap)
{
    const struct gw_header *authz = gw_request_header(req, "authorization");
    struct sl_slice v = authz != NULL ? authz->value : (struct sl_slice){"", 0};
    struct sigv4_auth auth;
    enum sigv4_failure failure;
    if (v.n > 7 && strncasecmp(v.p, "Bearer ", 7) == 0) {
        snprintf(out, cap, "admin:bearer");
    } else if (sigv4_parse_authorization(v, &auth, &failure, NULL) == SL_OK) {
        snprintf(out, cap, "admin:sigv4:%.*s", (int)SL_MIN(auth.access_key_id.n, 64),
                 auth.access_key_id.p);
    } else {
        snprintf(out, cap, "admin");
    }
}

#define ANY "*"

/* The admin API (docs/admin.md): method, path segments after /api ("*"
 * matches one segment), handler. POST routes are writes. */
static const struct admin_route {
    const char *method;
    const char *segs[GW_ADMIN_MAX_SEGS];
    gw_admin_route_fn *fn;
} ROUTES[] = {
    {"GET", {"queues"}, gw__admin_get_queues},
    {"GET", {"queues", ANY, ANY}, gw__admin_get_queue},
    {"GET", {"queues", ANY, ANY, "messages"}, gw__admin_peek},
    {"POST", {"queues", ANY, ANY, "pause"}, gw__admin_pause},
    {"POST", {"queues", ANY, ANY, "resume"}, gw__admin_resume},
    {"POST", {"queues", ANY, ANY, "purge"}, gw__admin_purge},
    {"POST", {"queues", ANY, ANY, "messages", ANY, "delete"}, gw__admin_msg_delete},
    {"POST", {"queues", ANY, ANY, "messages", ANY, "move"}, gw__admin_msg_move},
    {"GET", {"partitions"}, gw__admin_get_partitions},
    {"GET", {"cluster"}, gw__admin_get_cluster},
    {"GET", {"redrives"}, gw__admin_get_redrives},
    {"GET", {"redrives", ANY}, gw__admin_get_redrive},
    {"POST", {"redrives"}, gw__admin_start_redrive},
    {"POST", {"redrives", ANY, "cancel"}, gw__admin_cancel_redrive},
    {"POST", {"reload"}, gw__admin_reload},
    {"POST", {"backup"}, gw__admin_backup},
    {"GET", {"backup"}, gw__admin_backup_status},
};

static bool route_matches(const struct admin_route *rt, const struct gw_admin_req *r)
{
    size_t n = 0;
    while (n < GW_ADMIN_MAX_SEGS && rt->segs[n] != NULL) {
        n++;
    }
    if (n != r->nseg) {
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        if (strcmp(rt->segs[i], ANY) != 0 && strcmp(rt->segs[i], r->seg[i]) != 0) {
            return false;
        }
    }
    return true;
}

/* Finds and runs the route of an authenticated /api request (or
 * /tenants). Always takes ownership of r. */
static void dispatch(struct gw_admin_req *r, struct sl_slice path)
{
    if (sl_slice_eq_cstr(path, "/tenants")) {
        if (r->post) {
            gw__admin_fail(r, 405, "MethodNotAllowed", "GET /tenants only.");
        } else {
            gw__admin_get_tenants(r);
        }
        return;
    }
    static const char api[] = "/api/";
    if (path.n <= sizeof api - 1 || memcmp(path.p, api, sizeof api - 1) != 0 ||
        gw__admin_split_path(
            r, (struct sl_slice){path.p + sizeof api - 1, path.n - (sizeof api - 1)}) != SL_OK) {
        gw__admin_fail(r, 404, "NotFound",
                       "No such route. The admin listener serves GET /healthz, /metrics, "
                       "/tenants and the /api/ routes of docs/admin.md.");
        return;
    }
    bool path_known = false;
    for (size_t i = 0; i < SL_ARRAY_LEN(ROUTES); i++) {
        if (!route_matches(&ROUTES[i], r)) {
            continue;
        }
        path_known = true;
        if (strcmp(ROUTES[i].method, r->post ? "POST" : "GET") != 0) {
            continue;
        }
        if (r->post && gw__admin_write_admit(r) != SL_OK) {
            return;
        }
        ROUTES[i].fn(r);
        return;
    }
    if (path_known) {
        gw__admin_fail(r, 405, "MethodNotAllowed", "This route takes %s.",
                       r->post ? "GET only" : "POST only");
    } else {
        gw__admin_fail(r, 404, "NotFound", "No such admin route (docs/admin.md lists them).");
    }
}

/* Authenticates req (authenticate's loop may be NULL: before the body,
 * what can be checked is), with failures rationed per client address:
 * guessing a bearer token or a secret costs as much as the guesser likes
 * unless failures are, so while they come too fast from one address its
 * credentials are not checked (429; /healthz stays open). Per address, so
 * one client's guessing does not lock out the others (the on-call's
 * sluicectl, Prometheus's scrape). Both entry points go through here, so
 * a guess sent with a body is rationed and counted like one without.
 * Returns true when req passed; otherwise ex is answered. */
static bool admit(struct gw_api *api, struct gw_admin_loop *l, struct cfg_snapshot *snap,
                  struct gw_exchange *ex, const struct gw_request *req,
                  struct gw_console_verdict *cv)
{
    uint64_t now = sl_mono_ns();
    if (!gw__peer_ration_allowed(api->admin_auth_failures, req->peer, now)) {
        gw_metrics_count_admin_auth(api->metrics, true);
        gw__admin_respond_error(ex, 429, "TooManyRequests",
                                "Too many failed authentications from this address on the admin "
                                "listener; retry in a few seconds.");
        return false;
    }
    struct auth_failure f;
    if (authenticate(api, l, snap, req, cv, &f)) {
        return true;
    }
    gw__peer_ration_charge(api->admin_auth_failures, req->peer, now);
    gw_metrics_count_admin_auth(api->metrics, false);
    gw__admin_respond_error(ex, f.status, f.code, f.message);
    return false;
}

static void on_request(void *loop_ctx, struct gw_exchange *ex, const struct gw_request *req)
{
    struct gw_admin_loop *l = loop_ctx;
    struct sl_slice path, query;
    gw_request_split_path(req->path, &path, &query);
    bool get = sl_slice_eq_cstr(req->method, "GET");
    if (get && sl_slice_eq_cstr(path, "/healthz")) {
        gw__admin_respond_text(ex, 200, "text/plain", "ok", 2);
        return;
    }

    struct cfg_snapshot *snap = cfg_holder_get(l->base.api->holder);
    if (gw__console_public(l->base.api->console, snap, ex, req)) {
        cfg_snapshot_unref(snap);
        return;
    }
    struct gw_console_verdict cv = {.principal = ""};
    bool admitted = admit(l->base.api, l, snap, ex, req, &cv); /* else answered */
    if (!admitted || gw__console_serve(l->base.api->console, snap, ex, req)) {
        /* answered: rationed, refused, or a console route */
    } else if (sl_slice_eq_cstr(path, "/metrics")) {
        if (get) {
            answer_metrics(l, snap, ex);
        } else {
            gw__admin_respond_error(ex, 405, "MethodNotAllowed", "GET /metrics only.");
        }
    } else if (!get && !sl_slice_eq_cstr(req->method, "POST")) {
        gw__admin_respond_error(ex, 405, "MethodNotAllowed",
                                "The admin API takes GET (reads) and POST (writes).");
    } else {
        struct gw_admin_req *r = sl_xcalloc(1, sizeof *r);
        r->l = l;
        r->api = l->base.api;
        r->ex = ex;
        r->http = req;
        r->snap = cfg_snapshot_ref(snap);
        r->post = !get;
        r->query = query;
        if (cv.principal[0] != '\0') {
            snprintf(r->principal, sizeof r->principal, "%s", cv.principal);
        } else {
            principal_of(req, r->principal, sizeof r->principal);
        }
        dispatch(r, path);
    }
    cfg_snapshot_unref(snap);
}

/* A request with a body: credentials that cannot pass are refused before
 * the body is read (gw_headers_fn). */
static enum gw_headers_verdict on_headers(void *loop_ctx, struct gw_exchange *ex,
                                          const struct gw_request *partial)
{
    struct gw_admin_loop *l = loop_ctx;
    if (gw__console_is_public(partial)) {
        return gw__console_public_headers(ex, partial);
    }
    struct cfg_snapshot *snap = cfg_holder_get(l->base.api->holder);
    struct gw_console_verdict cv = {.principal = ""};
    bool pass = admit(l->base.api, NULL, snap, ex, partial, &cv);
    cfg_snapshot_unref(snap);
    return pass ? GW_HEADERS_CONTINUE : GW_HEADERS_ANSWERED;
}

struct gw_handler gw_admin_handler(struct gw_api *api)
{
    return (struct gw_handler){
        .app = api,
        .loop_start = loop_start,
        .loop_drain = loop_drain,
        .loop_stop = loop_stop,
        .on_request = on_request,
        .on_headers = on_headers,
    };
}
