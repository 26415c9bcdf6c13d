/*
 * gw_admin.c -- the admin listener: authentication, GET /metrics (see
 * gw_metrics.c for the numbers), GET /tenants and GET /healthz.
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
 * Threading: loop threads; each loop has its own SigV4 key cache.
 * Ownership: everything a request builds is freed before it returns; the
 * snapshot reference is dropped at the end of on_request.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>
#include <openssl/crypto.h>
#include <openssl/sha.h>

#include "cfg.h"
#include "gw.h"
#include "gw_act.h"
#include "gw_admin.h"
#include "gw_console.h"
#include "gw_metrics.h"
#include "gw_auth.h"

#define ADMIN_KEY_CACHE_SLOTS 16
#define SIGV4_SERVICE "sqs"

struct admin_loop {
    struct gw_api *api;
    struct sigv4_key_cache *keys;
};

static void *loop_start(void *app, struct uv_loop_s *loop)
{
    (void)loop;
    struct admin_loop *l = sl_xcalloc(1, sizeof(*l));
    l->api = app;
    l->keys = sigv4_key_cache_new(ADMIN_KEY_CACHE_SLOTS);
    return l;
}

static void loop_drain(void *loop_ctx)
{
    (void)loop_ctx; /* every admin request is answered at once */
}

static void loop_stop(void *loop_ctx)
{
    struct admin_loop *l = loop_ctx;
    sigv4_key_cache_free(l->keys);
    free(l);
}

/* ---- answers ------------------------------------------------------------- */

static void respond_text(struct gw_exchange *ex, int status, const char *ctype, const void *body,
                         size_t n)
{
    const struct gw_header h[] = {
        {SL_SLICE_LIT("content-type"), {ctype, strlen(ctype)}},
    };
    gw_exchange_respond(ex, status, h, SL_ARRAY_LEN(h), body, n);
}

/* Answers {"error": code, "message": message} with status. */
static void respond_error(struct gw_exchange *ex, int status, const char *code, const char *message)
{
    json_t *o = json_pack("{s:s, s:s}", "error", code, "message", message);
    char *text = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(o);
    struct gw_header h[2] = {{SL_SLICE_LIT("content-type"), SL_SLICE_LIT("application/json")}};
    size_t n = 1;
    if (status == 401) {
        h[n++] = (struct gw_header){SL_SLICE_LIT("www-authenticate"),
                                    SL_SLICE_LIT("Bearer realm=\"sluice-admin\"")};
    } else if (status == 429) {
        h[n++] = (struct gw_header){SL_SLICE_LIT("retry-after"), SL_SLICE_LIT("1")};
    }
    gw_exchange_respond(ex, status, h, n, text, strlen(text));
    free(text);
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

static bool authenticate_sigv4(struct admin_loop *l, const struct cfg_snapshot *snap,
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
static bool authenticate(struct gw_api *api, struct admin_loop *l, const struct cfg_snapshot *snap,
                         const struct gw_request *req, struct auth_failure *f)
{
    struct gw_console_verdict cv;
    switch (gw__console_authenticate(api->console, snap, req, &cv)) {
    case GW_CONSOLE_AUTH_OK:
        return true;
    case GW_CONSOLE_AUTH_REFUSED:
        return auth_fail(f, cv.status, cv.code, cv.message);
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

static void answer_metrics(struct admin_loop *l, const struct cfg_snapshot *snap,
                           struct gw_exchange *ex)
{
    struct gw_metrics_sources src = {
        .snap = snap,
        .engine = l->api->engine,
        .limiter = l->api->limiter,
        .now_ns = sl_mono_ns(),
        .conns = l->api->conns,
        .admin_conns = l->api->admin_conns,
        .budget = l->api->budget,
    };
    struct sl_buf out;
    sl_buf_init(&out);
    gw_metrics_render(l->api->metrics, &src, &out);
    respond_text(ex, 200, "text/plain; version=0.0.4; charset=utf-8", out.p, out.n);
    sl_buf_free(&out);
}

/* ---- GET /tenants ------------------------------------------------------------------ */

static json_t *rate_json(const struct cfg_rate *r)
{
    return json_pack("{s:f, s:I}", "requests_per_second", r->requests_per_second, "burst",
                     (json_int_t)r->burst);
}

static json_int_t tokens_now(struct pol_gcra *g, uint64_t now_ns)
{
    return g != NULL ? (json_int_t)SL_MIN(pol_gcra_available(g, now_ns), (uint64_t)INT64_MAX) : 0;
}

/* limits.queues and limits.actions into limits, and the tokens each of
 * those buckets holds now into usage, keyed alike. */
static void add_keyed_limits(struct admin_loop *l, const struct cfg_tenant *t,
                             struct pol_tenant_state *st, uint64_t now_ns, json_t *limits,
                             json_t *usage)
{
    json_t *queues = json_object(), *queue_tokens = json_object();
    json_t *actions = json_object(), *action_tokens = json_object();
    for (size_t i = 0; i < t->limits.queue_rate_count; i++) {
        const struct cfg_queue_rate *q = &t->limits.queue_rates[i];
        struct pol_gcra *g =
            st != NULL ? pol_limiter_queue_rate(l->api->limiter, st, q->queue, strlen(q->queue))
                       : NULL;
        json_object_set_new(queues, q->queue, rate_json(&q->rate));
        json_object_set_new(queue_tokens, q->queue, json_integer(tokens_now(g, now_ns)));
    }
    for (int a = 0; a < CFG_ACTION_KEY_COUNT; a++) {
        const struct cfg_rate *r = &t->limits.actions[a];
        const char *name = cfg_action_key_name((enum cfg_action_key)a);
        if (r->requests_per_second > 0) {
            struct pol_gcra *g =
                st != NULL ? pol_tenant_action_rate(st, (enum cfg_action_key)a) : NULL;
            json_object_set_new(actions, name, rate_json(r));
            json_object_set_new(action_tokens, name, json_integer(tokens_now(g, now_ns)));
        }
    }
    json_object_set_new(limits, "queues", queues);
    json_object_set_new(limits, "actions", actions);
    json_object_set_new(usage, "queue_tokens_available", queue_tokens);
    json_object_set_new(usage, "action_tokens_available", action_tokens);
}

static json_t *tenant_json(struct admin_loop *l, const struct cfg_tenant *t, uint64_t now_ns)
{
    int64_t backlog = 0, inflight = 0;
    part_tenant_counts(l->api->engine, t->name, &backlog, &inflight);
    struct pol_tenant_state *st = pol_limiter_find(l->api->limiter, t->name, strlen(t->name));
    uint64_t tokens = st != NULL ? pol_gcra_available(&st->rate, now_ns) : 0;
    uint32_t polls = st != NULL ? pol_slots_used(&st->long_polls) : 0;
    const struct cfg_limits *lim = &t->limits;
    json_t *o = json_pack(
        "{s:s, s:{s:f, s:I, s:I, s:I, s:I, s:I}, s:s, s:{s:I, s:I}, s:{s:I, s:I, s:I, s:I}}",
        "name", t->name, "limits", "requests_per_second", lim->requests_per_second, "burst",
        (json_int_t)lim->burst, "max_inflight", (json_int_t)lim->max_inflight, "max_backlog",
        (json_int_t)lim->max_backlog, "max_long_polls", (json_int_t)lim->max_long_polls,
        "max_queues", (json_int_t)lim->max_queues, "on_excess",
        t->on_excess == CFG_EXCESS_SPILL ? "spill" : "reject", "spill", "delay_seconds",
        (json_int_t)t->spill.delay_seconds, "aged_after_seconds",
        (json_int_t)t->spill.aged_after_seconds, "usage", "tokens_available",
        (json_int_t)SL_MIN(tokens, (uint64_t)INT64_MAX), "long_polls", (json_int_t)polls, "backlog",
        (json_int_t)backlog, "inflight", (json_int_t)inflight);
    add_keyed_limits(l, t, st, now_ns, json_object_get(o, "limits"), json_object_get(o, "usage"));
    return o;
}

/* The tenant's shard: the k partitions its sends go to, in shard order,
 * placed as the SQS actions place them (gw__act_shard: same key, P and k),
 * so an operator sees which tenants share a partition. */
static json_t *shard_json(struct admin_loop *l, const struct cfg_snapshot *snap,
                          const struct cfg_tenant *t)
{
    uint32_t partitions;
    uint32_t k = gw__act_shard_k(l->api, snap, &partitions);
    uint32_t shard[GW_MAX_SHARD];
    json_t *list = json_array();
    if (pol_shard_place(part_engine_key(l->api->engine), PART_KEY_LEN, t->name, strlen(t->name),
                        partitions, k, shard) == SL_OK) {
        for (uint32_t i = 0; i < k; i++) {
            json_array_append_new(list, json_integer(shard[i]));
        }
    }
    return list;
}

static void answer_tenants(struct admin_loop *l, const struct cfg_snapshot *snap,
                           struct gw_exchange *ex)
{
    uint64_t now_ns = sl_mono_ns();
    json_t *list = json_array();
    for (size_t i = 0; i < snap->tenant_count; i++) {
        json_t *tenant = tenant_json(l, &snap->tenants[i], now_ns);
        json_object_set_new(tenant, "partitions", shard_json(l, snap, &snap->tenants[i]));
        json_array_append_new(list, tenant);
    }
    json_t *o = json_pack("{s:o}", "tenants", list);
    char *text = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(o);
    respond_text(ex, 200, "application/json", text, strlen(text));
    free(text);
}

/* ---- routing ------------------------------------------------------------------------- */

static void on_request(void *loop_ctx, struct gw_exchange *ex, const struct gw_request *req)
{
    struct admin_loop *l = loop_ctx;
    struct sl_slice path, query;
    gw_request_split_path(req->path, &path, &query);
    bool get = sl_slice_eq_cstr(req->method, "GET");
    if (get && sl_slice_eq_cstr(path, "/healthz")) {
        respond_text(ex, 200, "text/plain", "ok", 2);
        return;
    }

    struct cfg_snapshot *snap = cfg_holder_get(l->api->holder);
    if (gw__console_public(l->api->console, snap, ex, req)) {
        cfg_snapshot_unref(snap);
        return;
    }
    struct auth_failure f;
    uint64_t now = sl_mono_ns();
    if (pol_gcra_available(&l->api->admin_auth_failures, now) == 0) {
        /* Guessing a bearer token or a secret costs as much as the guesser
         * likes unless failures are rationed; while they come too fast,
         * nobody's credentials are checked. /healthz stays open. */
        gw_metrics_count_admin_auth(l->api->metrics, true);
        respond_error(ex, 429, "TooManyRequests",
                      "Too many failed authentications on the admin listener; retry in a few "
                      "seconds.");
    } else if (!authenticate(l->api, l, snap, req, &f)) {
        pol_gcra_take(&l->api->admin_auth_failures, 1, POL_PPM, now, NULL);
        gw_metrics_count_admin_auth(l->api->metrics, false);
        respond_error(ex, f.status, f.code, f.message);
    } else if (gw__console_serve(l->api->console, snap, ex, req)) {
        /* a console route */
    } else if (!sl_slice_eq_cstr(path, "/metrics") && !sl_slice_eq_cstr(path, "/tenants")) {
        respond_error(ex, 404, "NotFound",
                      "The admin listener serves GET /metrics, GET /tenants and GET /healthz.");
    } else if (!get) {
        respond_error(ex, 405, "MethodNotAllowed", "Only GET is supported here.");
    } else if (sl_slice_eq_cstr(path, "/metrics")) {
        answer_metrics(l, snap, ex);
    } else {
        answer_tenants(l, snap, ex);
    }
    cfg_snapshot_unref(snap);
}

/* A request with a body: credentials that cannot pass are refused before
 * the body is read (gw_headers_fn). */
static enum gw_headers_verdict on_headers(void *loop_ctx, struct gw_exchange *ex,
                                          const struct gw_request *partial)
{
    struct admin_loop *l = loop_ctx;
    if (gw__console_is_public(partial)) {
        return GW_HEADERS_CONTINUE;
    }
    struct cfg_snapshot *snap = cfg_holder_get(l->api->holder);
    struct auth_failure f;
    bool pass = authenticate(l->api, NULL, snap, partial, &f);
    cfg_snapshot_unref(snap);
    if (pass) {
        return GW_HEADERS_CONTINUE;
    }
    respond_error(ex, f.status, f.code, f.message);
    return GW_HEADERS_ANSWERED;
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
