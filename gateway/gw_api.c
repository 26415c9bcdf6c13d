/*
 * gw_api.c -- the dispatcher behind the SQS listener: per request it
 * tells the protocol (AWS JSON 1.0 or the SQS query protocol), authenticates
 * (SigV4, header or presigned, against the configuration snapshot the
 * request started with), routes the call (X-Amz-Target, or the form's
 * Action), decodes it (gw_sqs_decode.c, gw_sqs_query.c) and dispatches it
 * through the action table
 * (gw_actions.def) to a handler (gw_act_<group>.h), which answers now or
 * later through the action services (gw_act.h). It also owns the api's
 * and each loop's lifetime, running the action groups' hooks
 * (struct gw_act_hooks) without knowing what they do.
 *
 * Request life: HEADERS+BODY (gw_h2) -> healthz? -> PROTOCOL -> AUTH ->
 * ROUTE -> a slot of the tenant's concurrent requests (gw__act_enter) ->
 * DECODE -> HANDLER -> gw__act_finish (respond, log, free the slot). The
 * HTTP version is invisible here (struct gw_request).
 *
 * The protocol, from the headers alone, so even an authentication failure
 * answers in the client's own protocol (docs/api.md):
 *  - an X-Amz-Target header: JSON 1.0;
 *  - else a POST with Content-Type application/x-www-form-urlencoded
 *    (parameters allowed), or a GET or POST whose query string has an
 *    Action parameter: the query protocol, whose form is the body (or, for a
 *    POST with an empty body, the query string: a presigned POST carries
 *    its form there) or the GET's query string. It may be posted to "/"
 *    or to a queue's URL path "/TENANT/QUEUE", which names the queue when
 *    the form has no QueueUrl (a QueueUrl in the form wins);
 *  - else JSON, whose routing answers the error below.
 * A query request's body cap is the protocol layer's until Action is
 * known, then the action's (checked before the rest of the form is
 * decoded); the token precheck runs after that, before the decode, as for
 * JSON.
 *
 * Routing choices where AWS is silent (see also docs/api.md):
 *  - GET /healthz answers 200 "ok" without authentication (docs/api.md),
 *    and on a cluster's node 503 with the reason while it cannot serve
 *    (api_health; the protocol layer calls it).
 *  - Everything else is authenticated first, so an unsigned probe learns
 *    nothing but MissingAuthenticationToken.
 *  - The method must be POST; the path is not checked beyond SigV4 (which
 *    signs it), because some SDKs (Ruby, see floci-io/floci#17) post JSON
 *    calls to the queue URL's path instead of "/".
 *  - A non-POST request, a missing X-Amz-Target, or one that is not
 *    "AmazonSQS.<Action>" of gw_actions.def: UnknownOperationException
 *    (query code InvalidAction), 400.
 *  - A Content-Type other than application/x-amz-json-1.0 (parameters
 *    such as "; charset=utf-8" are allowed): InvalidParameterValue 400.
 *
 * Threading: gw_api_new/free/config_changed on the main thread; everything
 * else on the I/O loop threads, each with its own struct gw_api_loop (the
 * SigV4 key cache is per loop, so it needs no lock).
 *
 * Ownership: a struct gw_act_ctx per request (heap), holding one snapshot
 * reference, handed to the handler, which ends the request.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cfg.h"
#include "gw.h"
#include "gw_act.h"
#include "gw_admin.h"
#include "gw_api.h"
#include "gw_transport.h"
#include "gw_sqs.h"

#define SIGV4_KEY_CACHE_SLOTS 256
#define SIGV4_SERVICE "sqs"
#define JSON_CONTENT_TYPE "application/x-amz-json-1.0"

static const struct {
    gw_act_fn *handler;
} action_table[GW_SQS_ACT__COUNT] = {
#define GW_SQS_ACTION(name, camel, snake, fn) [GW_SQS_ACT_##name] = {fn},
#include "gw_actions.def"
#undef GW_SQS_ACTION
};

/* The action groups that keep state beyond one request. */
static const struct gw_act_hooks *const hooks[] = {
    &gw__act_queue_hooks,
    &gw__move_hooks,
    &gw__pause_hooks,
};

#define RUN_HOOKS(name, arg)                                                                       \
    do {                                                                                           \
        for (size_t i_ = 0; i_ < SL_ARRAY_LEN(hooks); i_++) {                                      \
            if (hooks[i_]->name != NULL) {                                                         \
                hooks[i_]->name(arg);                                                              \
            }                                                                                      \
        }                                                                                          \
    } while (0)

/* ---- the api object ---------------------------------------------------- */

static enum part_durability durability_of(const struct cfg_snapshot *snap)
{
    return snap->durability == CFG_DURABILITY_FSYNC ? PART_DURABILITY_FSYNC : PART_DURABILITY_OS;
}

/* What the partitions enforce per tenant, at start and after every
 * reload: spill.aged_after_seconds (they sideline aged messages), and
 * limits.max_concurrent_requests as the cap on its jobs waiting at any one
 * writer (docs/policy.md, "Concurrency"): the request cap bounds them
 * already, this holds whatever else submits for the tenant. */
static void apply_tenant_settings(struct part_engine *engine, const struct cfg_snapshot *snap)
{
    for (size_t i = 0; i < snap->tenant_count; i++) {
        const struct cfg_tenant *t = &snap->tenants[i];
        part_tenant_set_aging(engine, t->name, pol_aging_ms(&t->spill));
        part_tenant_set_job_cap(engine, t->name, t->limits.max_concurrent_requests);
    }
}

int gw_api_new(struct cfg_holder *holder, struct gw_api **out, char *err, size_t errlen)
{
    if (holder == NULL) {
        snprintf(err, errlen, "gw_api_new: no configuration holder");
        return SL_EINVAL;
    }
    struct cfg_snapshot *snap = cfg_holder_get(holder);
    struct part_options opt = {
        .data_dir = snap->data_dir,
        .partitions = snap->partitions,
        .durability = durability_of(snap),
    };
    /* A cluster's engine replicates the catalog and every partition over
     * the nodes' Raft ports (docs/design.md "Cluster"). */
    const struct cfg_cluster *cc = &snap->cluster;
    struct part_cluster_node *nodes = NULL;
    struct part_cluster_options cluster = {0};
    if (cc->enabled) {
        nodes = sl_xcalloc(cc->node_count, sizeof(*nodes));
        for (size_t i = 0; i < cc->node_count; i++) {
            nodes[i] = (struct part_cluster_node){cc->nodes[i].id, cc->nodes[i].raft.host,
                                                  cc->nodes[i].raft.port, cc->nodes[i].peer.host,
                                                  cc->nodes[i].peer.port};
        }
        cluster = (struct part_cluster_options){.node_id = cc->node_id,
                                                .nodes = nodes,
                                                .node_count = cc->node_count,
                                                .secret = cc->secret,
                                                .secret_len = cc->secret_len,
                                                .snapshot_entries = cc->snapshot_entries,
                                                .memory_budget = cc->memory_budget};
        opt.cluster = &cluster;
    }
    struct part_engine *engine = NULL;
    int rc = part_engine_open(&opt, &engine, err, errlen);
    free(nodes);
    if (rc != SL_OK) {
        cfg_snapshot_unref(snap);
        return rc;
    }
    struct gw_opstore *ops = NULL;
    rc =
        gw_opstore_open(snap->data_dir, opt.durability == PART_DURABILITY_FSYNC, &ops, err, errlen);
    if (rc != SL_OK) {
        part_engine_close(engine);
        cfg_snapshot_unref(snap);
        return rc;
    }
    struct gw_api *api = sl_xcalloc(1, sizeof(*api));
    api->ops = ops;
    api->holder = holder;
    api->engine = engine;
    api->limiter = pol_limiter_new(snap, sl_mono_ns());
    api->metrics = gw_metrics_new();
    api->admin_auth_failures = gw__peer_ration_new(
        GW_ADMIN_AUTH_FAILURES_PER_S, GW_ADMIN_AUTH_FAILURES_BURST, GW_ADMIN_AUTH_PEERS);
    pol_gcra_init(&api->admin_writes, GW_ADMIN_WRITES_PER_S, GW_ADMIN_WRITES_BURST);
    api->console = gw__console_new(engine, api->metrics);
    apply_tenant_settings(engine, snap);
    RUN_HOOKS(api_init, api);
    cfg_snapshot_unref(snap);
    *out = api;
    return SL_OK;
}

void gw_api_free(struct gw_api *api)
{
    if (api == NULL) {
        return;
    }
    /* Every loop has stopped, so every job has completed: closing the
     * engine commits what is queued and joins the writers. */
    RUN_HOOKS(api_free, api);
    gw__console_free(api->console); /* its sampler reads the engine */
    gw_opstore_close(api->ops);
    part_engine_close(api->engine);
    pol_limiter_free(api->limiter);
    gw_metrics_free(api->metrics);
    gw__peer_ration_free(api->admin_auth_failures);
    free(api);
}

void gw_api_set_connlimit(struct gw_api *api, struct gw_connlimit *sqs, struct gw_connlimit *admin)
{
    api->conns = sqs;
    api->admin_conns = admin;
}

void gw_api_set_config_path(struct gw_api *api, const char *path)
{
    api->config_path = path;
}

void gw_api_set_budget(struct gw_api *api, struct gw_budget *budget)
{
    api->budget = budget;
}

void gw_api_config_changed(struct gw_api *api, struct cfg_snapshot *snap)
{
    /* New rates apply at once; each tenant's bucket keeps its level, so a
     * reload never hands out a free burst. */
    pol_limiter_apply(api->limiter, snap, sl_mono_ns());
    apply_tenant_settings(api->engine, snap);
}

/* ---- per loop ------------------------------------------------------------ */

static void *loop_start(void *app, struct uv_loop_s *loop)
{
    struct gw_api_loop *l = sl_xcalloc(1, sizeof(*l));
    l->api = app;
    l->loop = loop;
    l->keys = sigv4_key_cache_new(SIGV4_KEY_CACHE_SLOTS);
    l->shards = sl_xcalloc(GW_SHARD_CACHE_SLOTS, sizeof(*l->shards));
    int rc = part_client_new(l->api->engine, loop, &l->part);
    SL_ASSERT(rc == SL_OK);
    RUN_HOOKS(loop_init, l);
    return l;
}

static void loop_drain(void *loop_ctx)
{
    struct gw_api_loop *l = loop_ctx;
    l->draining = true;
    /* Waiting long polls answer empty now, so they do not hold shutdown. */
    part_client_drain(l->part);
    RUN_HOOKS(loop_drain, l);
}

static void loop_stop(void *loop_ctx)
{
    struct gw_api_loop *l = loop_ctx;
    RUN_HOOKS(loop_free, l);
    part_client_close(l->part);
    sigv4_key_cache_free(l->keys);
    free(l->shards);
    free(l);
}

/* ---- helpers ------------------------------------------------------------- */

static bool content_type_is_json(struct sl_slice v)
{
    return gw_media_type_is(v, JSON_CONTENT_TYPE);
}

/* The protocol of a request, from its headers (see the top of the file). */
static enum gw_sqs_protocol protocol_of(const struct gw_request *req)
{
    return gw_request_is_query(req) ? GW_SQS_PROTO_QUERY : GW_SQS_PROTO_JSON;
}

/* A query request's form: a GET's query string; a POST's body, or its
 * query string when the body is empty (a presigned POST). */
static struct sl_slice query_form(const struct gw_request *req)
{
    struct sl_slice path, query;
    gw_request_split_path(req->path, &path, &query);
    if (sl_slice_eq_cstr(req->method, "POST") && req->body.n > 0) {
        return req->body;
    }
    return query;
}

/* ---- authentication --------------------------------------------------------- */

static enum gw_sqs_error sigv4_error(enum sigv4_failure f)
{
    switch (f) {
    case SIGV4_FAIL_NONE:
        return GW_SQS_OK;
    case SIGV4_FAIL_MISSING:
        return GW_SQS_E_MISSING_AUTHENTICATION_TOKEN;
    case SIGV4_FAIL_MALFORMED:
    case SIGV4_FAIL_INCOMPLETE:
        return GW_SQS_E_INCOMPLETE_SIGNATURE;
    case SIGV4_FAIL_UNKNOWN_KEY:
        return GW_SQS_E_INVALID_CLIENT_TOKEN_ID;
    case SIGV4_FAIL_MISMATCH:
    case SIGV4_FAIL_SCOPE:
        return GW_SQS_E_SIGNATURE_DOES_NOT_MATCH;
    case SIGV4_FAIL_EXPIRED:
        return GW_SQS_E_REQUEST_EXPIRED;
    case SIGV4_FAIL_TOKEN:
        return GW_SQS_E_UNRECOGNIZED_CLIENT;
    }
    return GW_SQS_E_INCOMPLETE_SIGNATURE;
}

/* The message to send for a SigV4 failure: the table's (AWS's) words, with
 * the verifier's reason appended where it helps the client and leaks
 * nothing (never for a mismatch: that would help forging). */
static int auth_fail(enum sigv4_failure f, const char *why, struct gw_sqs_err *err)
{
    enum gw_sqs_error code = sigv4_error(f);
    const char *base = gw_sqs_error_info(code)->message;
    if (why != NULL && (f == SIGV4_FAIL_MALFORMED || f == SIGV4_FAIL_INCOMPLETE ||
                        f == SIGV4_FAIL_EXPIRED || f == SIGV4_FAIL_SCOPE)) {
        return gw_sqs_err_set(err, code, "%s %s", base, why);
    }
    return gw_sqs_err_set(err, code, NULL);
}

/* sigv4_secret_fn over the request's snapshot; fills ctx->principal. */
static int find_principal(void *arg, struct sl_slice access_key_id, const char **secret)
{
    struct gw_act_ctx *ctx = arg;
    if (!cfg_find_principal(ctx->snap, access_key_id.p, access_key_id.n, &ctx->principal)) {
        return SL_ENOTFOUND;
    }
    *secret = ctx->principal.secret_access_key;
    return SL_OK;
}

/* Verifies the request's signature and fills ctx->principal. */
static int authenticate(struct gw_act_ctx *ctx, struct gw_api_loop *l, struct gw_sqs_err *err)
{
    const struct sigv4_verifier v = {
        .region = ctx->snap->region,
        .service = SIGV4_SERVICE,
        .now_s = (int64_t)(sl_wall_ms() / 1000),
        .cache = l->keys,
        .find_secret = find_principal,
        .arg = ctx,
    };
    enum sigv4_failure failure;
    const char *why = NULL;
    if (gw__auth_sigv4(ctx->http, &v, &failure, &why) != SL_OK) {
        memset(&ctx->principal, 0, sizeof(ctx->principal));
        return auth_fail(failure, why, err);
    }
    return SL_OK;
}

/* What authenticate() would refuse before it needs the body, checked in
 * the same order as sigv4_authenticate (session token, no Authorization,
 * a malformed one, an unknown access key), so the answer is the same one
 * the whole request would get -- only the body is never read. */
static int preauthenticate(struct gw_act_ctx *ctx, struct gw_sqs_err *err)
{
    const struct gw_request *req = ctx->http;
    if (gw_request_header(req, "x-amz-security-token") != NULL) {
        return auth_fail(SIGV4_FAIL_TOKEN, NULL, err);
    }
    const struct gw_header *authz = gw_request_header(req, "authorization");
    struct sl_slice path, query;
    gw_request_split_path(req->path, &path, &query);
    struct sigv4_auth auth;
    enum sigv4_failure failure;
    const char *why = NULL;
    char key_buf[256];
    if (authz == NULL && sigv4_query_is_presigned(query)) {
        if (sigv4_presigned_access_key(query, key_buf, sizeof key_buf, &auth.access_key_id,
                                       &failure, &why) != SL_OK) {
            return auth_fail(failure, why, err);
        }
    } else if (authz == NULL) {
        return auth_fail(SIGV4_FAIL_MISSING, NULL, err);
    } else if (sigv4_parse_authorization(authz->value, &auth, &failure, &why) != SL_OK) {
        return auth_fail(failure, why, err);
    }
    const char *secret;
    if (find_principal(ctx, auth.access_key_id, &secret) != SL_OK) {
        memset(&ctx->principal, 0, sizeof(ctx->principal));
        return auth_fail(SIGV4_FAIL_UNKNOWN_KEY, NULL, err);
    }
    memset(&ctx->principal, 0, sizeof(ctx->principal)); /* not proven until signed */
    return SL_OK;
}

/* ---- the request path -------------------------------------------------------- */

static int body_cap(struct gw_act_ctx *ctx, size_t n, struct gw_sqs_err *err)
{
    size_t max_body = gw_sqs_action_max_body(ctx->action);
    if (n > max_body) {
        return gw_sqs_err_set(err, GW_SQS_E_REQUEST_TOO_LARGE,
                              "The request body is %zu bytes; %s takes at most %zu.", n,
                              gw_sqs_action_name(ctx->action), max_body);
    }
    return SL_OK;
}

/* The query protocol: the Action of the form, then its cap. */
static int route_query(struct gw_act_ctx *ctx, struct gw_sqs_err *err)
{
    struct sl_slice form = query_form(ctx->http);
    int rc = gw_sqs_query_action(form, &ctx->action, err);
    return rc != SL_OK ? rc : body_cap(ctx, form.n, err);
}

static int route(struct gw_act_ctx *ctx, struct gw_sqs_err *err)
{
    const struct gw_request *req = ctx->http;
    if (ctx->protocol == GW_SQS_PROTO_QUERY) {
        return route_query(ctx, err);
    }
    if (!sl_slice_eq_cstr(req->method, "POST")) {
        return gw_sqs_err_set(err, GW_SQS_E_UNKNOWN_OPERATION,
                              "Only POST requests with X-Amz-Target: AmazonSQS.<Action> and "
                              "Content-Type: " JSON_CONTENT_TYPE
                              ", or query-protocol requests (a form with Action=<Action>), are "
                              "supported.");
    }
    const struct gw_header *target = gw_request_header(req, "x-amz-target");
    if (target == NULL) {
        return gw_sqs_err_set(err, GW_SQS_E_UNKNOWN_OPERATION,
                              "The request has no X-Amz-Target header; expected "
                              "AmazonSQS.<Action>.");
    }
    if (!gw_sqs_action_from_target(target->value, &ctx->action)) {
        return gw_sqs_err_set(err, GW_SQS_E_UNKNOWN_OPERATION,
                              "The action or operation %.*s is not valid for this endpoint.",
                              (int)SL_MIN(target->value.n, 200), target->value.p);
    }
    const struct gw_header *ctype = gw_request_header(req, "content-type");
    if (ctype == NULL || !content_type_is_json(ctype->value)) {
        return gw_sqs_err_set(err, GW_SQS_E_INVALID_PARAMETER_VALUE,
                              "The Content-Type must be " JSON_CONTENT_TYPE ".");
    }
    return body_cap(ctx, req->body.n, err);
}

/* The queue URL a query request was posted to ("http://HOST/TENANT/QUEUE"),
 * or nothing when it went to "/". */
static void posted_queue_url(const struct gw_request *req, struct sl_buf *out)
{
    struct sl_slice path, query;
    gw_request_split_path(req->path, &path, &query);
    if (path.n <= 1) {
        return;
    }
    sl_buf_append_cstr(out, req->tls ? "https://" : "http://");
    sl_buf_append(out, req->authority.p, req->authority.n);
    sl_buf_append(out, path.p, path.n);
}

static int decode(struct gw_act_ctx *ctx, struct gw_sqs_err *err)
{
    const struct gw_request *req = ctx->http;
    if (ctx->protocol == GW_SQS_PROTO_JSON) {
        return gw_sqs_decode(ctx->action, req->body, &ctx->req, err);
    }
    struct sl_buf url;
    sl_buf_init(&url);
    posted_queue_url(req, &url);
    int rc = gw_sqs_query_decode(query_form(req), (struct sl_slice){url.p, url.n}, &ctx->req, err);
    sl_buf_free(&url);
    if (rc == SL_OK && ctx->req.action != ctx->action) {
        /* routing read the first literal "Action="; the form must agree */
        return gw_sqs_err_set(err, GW_SQS_E_INVALID_QUERY_PARAMETER,
                              "The parameter Action is given more than once.");
    }
    return rc;
}

/* The actions whose handlers call gw__act_admit themselves, with the
 * queue they resolved and the cost of their entries. */
static bool handler_admits(enum gw_sqs_action a)
{
    switch (a) {
    case GW_SQS_ACT_SEND_MESSAGE:
    case GW_SQS_ACT_SEND_MESSAGE_BATCH:
    case GW_SQS_ACT_RECEIVE_MESSAGE:
    case GW_SQS_ACT_DELETE_MESSAGE:
    case GW_SQS_ACT_DELETE_MESSAGE_BATCH:
    case GW_SQS_ACT_CHANGE_MESSAGE_VISIBILITY:
    case GW_SQS_ACT_CHANGE_MESSAGE_VISIBILITY_BATCH:
    case GW_SQS_ACT_START_MESSAGE_MOVE_TASK:
    case GW_SQS_ACT_LIST_MESSAGE_MOVE_TASKS:
    case GW_SQS_ACT_CANCEL_MESSAGE_MOVE_TASK:
        return true;
    default:
        return false;
    }
}

/* /healthz (gw_health_fn): 200 "ok"; a cluster's node that cannot serve
 * answers 503, so that a load balancer sends its clients elsewhere
 * meanwhile. Any node serves every partition, so one group without a
 * quorum is enough: "no quorum: catalog, partition 3" names them. A node
 * that knows its leaders but is still applying what it knows committed
 * (just started, or back from a cut) says "catching up". */
static int api_health(void *app, char *why, size_t cap)
{
    struct part_engine *e = ((struct gw_api *)app)->engine;
    uint32_t np = part_engine_partitions(e);
    size_t n = (size_t)snprintf(why, cap, "no quorum:");
    bool lost = false;
    /* i = 0 is the catalog, then the partitions */
    for (uint32_t i = 0; i <= np && part_engine_node_id(e) != 0; i++) {
        struct part_group_stats st;
        uint32_t p = i == 0 ? PART_CATALOG : i - 1;
        if (part_engine_group_stats(e, p, &st) != SL_OK || !st.no_quorum) {
            continue;
        }
        const char *sep = lost ? ", " : " ";
        lost = true;
        if (n + 24 >= cap) { /* the body stays short: the rest is in /metrics */
            snprintf(why + n, cap - n, "%s...", sep);
            break;
        }
        n += (size_t)(p == PART_CATALOG
                          ? snprintf(why + n, cap - n, "%scatalog", sep)
                          : snprintf(why + n, cap - n, "%spartition %u", sep, (unsigned)p));
    }
    if (lost) {
        return 503;
    }
    bool ready = part_engine_ready(e);
    snprintf(why, cap, "%s", ready ? "ok" : "catching up");
    return ready ? 200 : 503;
}

static void on_request(void *loop_ctx, struct gw_exchange *ex, const struct gw_request *req)
{
    struct gw_api_loop *l = loop_ctx;
    struct gw_act_ctx *ctx = sl_xcalloc(1, sizeof(*ctx));
    ctx->api = l->api;
    ctx->loop = l;
    ctx->ex = ex;
    ctx->http = req;
    ctx->action = GW_SQS_ACT__COUNT; /* "-" in the log until routed */
    ctx->protocol = protocol_of(req);
    ctx->snap = cfg_holder_get(l->api->holder);

    struct gw_sqs_err err;
    /* Authentication first: nothing is charged to a tenant before the
     * request proves it comes from that tenant. Each failure after it
     * costs the tenant a token (gw__act_fail). */
    if (authenticate(ctx, l, &err) != SL_OK || route(ctx, &err) != SL_OK) {
        gw__act_fail(ctx, &err);
        return;
    }
    if (gw__act_enter(ctx) != SL_OK || gw__act_precheck(ctx) != SL_OK) {
        return;
    }
    if (decode(ctx, &err) != SL_OK) {
        gw__act_fail(ctx, &err);
        return;
    }
    if (!handler_admits(ctx->action)) {
        /* Queue configuration and listings cost one token of the tenant's
         * rate too: a TagQueue flood lands on a writer others share. */
        bool spill_unused;
        const char *tenant = ctx->principal.tenant != NULL ? ctx->principal.tenant->name : "";
        if (gw__act_admit(ctx, tenant, "", POL_ACTION_OTHER, 1, &spill_unused) != SL_OK) {
            return;
        }
    }
    action_table[ctx->action].handler(ctx);
}

/* A request with a body, before the body: refused now when it would be
 * refused anyway for its credentials, so an unsigned upload costs nothing
 * but its headers. Known keys go on; the signature needs the body. */
static enum gw_headers_verdict on_headers(void *loop_ctx, struct gw_exchange *ex,
                                          const struct gw_request *partial)
{
    struct gw_api_loop *l = loop_ctx;
    struct gw_act_ctx *ctx = sl_xcalloc(1, sizeof(*ctx));
    ctx->api = l->api;
    ctx->loop = l;
    ctx->ex = ex;
    ctx->http = partial;
    ctx->action = GW_SQS_ACT__COUNT;
    ctx->protocol = protocol_of(partial);
    ctx->snap = cfg_holder_get(l->api->holder);
    struct gw_sqs_err err;
    if (preauthenticate(ctx, &err) != SL_OK) {
        gw__act_fail(ctx, &err); /* responds and frees ctx */
        return GW_HEADERS_ANSWERED;
    }
    cfg_snapshot_unref(ctx->snap);
    free(ctx);
    return GW_HEADERS_CONTINUE;
}

/* ---- handlers ------------------------------------------------------------------ */

struct gw_handler gw_api_sqs_handler(struct gw_api *api)
{
    return (struct gw_handler){
        .app = api,
        .loop_start = loop_start,
        .loop_drain = loop_drain,
        .loop_stop = loop_stop,
        .on_request = on_request,
        .on_headers = on_headers,
        .health = api_health,
    };
}

struct gw_handler gw_api_admin_handler(struct gw_api *api)
{
    return gw_admin_handler(api);
}
