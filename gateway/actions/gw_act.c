/*
 * gw_act.c -- the services every SQS action handler uses (gw_act.h):
 * ending a request (reply, log line, counters, free), resolving the
 * request's queue under tenant isolation, queue URLs and ARNs, the
 * per-loop placement cache, admission through policy and storage errors.
 *
 * Threading: loop threads; the placement cache is per loop, so unlocked.
 * Ownership: ending a request frees its ctx and drops its snapshot
 * reference.
 */
#include "gw_act.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LOG_MODULE "api"

/* ---- ending a request ---------------------------------------------------- */

/* The tenant label of ctx's principal: its name, the admin's label, or
 * NULL before authentication succeeded. */
static const char *principal_label(const struct gw_act_ctx *ctx)
{
    if (ctx->principal.kind == CFG_PRINCIPAL_ADMIN && ctx->principal.secret_access_key != NULL) {
        return GW_METRICS_ADMIN_TENANT;
    }
    return ctx->principal.tenant != NULL ? ctx->principal.tenant->name : NULL;
}

static void log_request(struct gw_act_ctx *ctx, int status, enum gw_sqs_error error)
{
    if (ctx->snap != NULL && !ctx->snap->log_requests) {
        return;
    }
    if (!sl_log_enabled(SL_LOG_INFO)) {
        return;
    }
    const char *tenant = "-";
    if (ctx->principal.kind == CFG_PRINCIPAL_ADMIN && ctx->principal.secret_access_key != NULL) {
        tenant = "(admin)";
    } else if (ctx->principal.tenant != NULL) {
        tenant = ctx->principal.tenant->name;
    }
    const char *action = ctx->action < GW_SQS_ACT__COUNT ? gw_sqs_action_name(ctx->action) : "-";
    const char *code = error != GW_SQS_OK ? gw_sqs_error_info(error)->query_code : "-";
    uint64_t now = sl_mono_ns();
    uint64_t us = now > ctx->http->start_mono_ns ? (now - ctx->http->start_mono_ns) / 1000 : 0;
    const char *id = ctx->http->request_id != NULL ? ctx->http->request_id : "-";
    if (strcmp(tenant, "-") != 0) { /* authenticated */
        sl_log(SL_LOG_INFO, LOG_MODULE,
               "request id=%s tenant=%s action=%s status=%d error=%s us=%" PRIu64, id, tenant,
               action, status, code, us);
        return;
    }
    /* Nobody pays for an unauthenticated request, so its lines are
     * rationed: a flood of them must not fill the disk. */
    static struct sl_log_limit anonymous_log = SL_LOG_LIMIT(20, 1000);
    sl_log_limited(&anonymous_log, SL_LOG_INFO, LOG_MODULE,
                   "request id=%s tenant=%s action=%s status=%d error=%s us=%" PRIu64, id, tenant,
                   action, status, code, us);
}

static void ctx_free(struct gw_act_ctx *ctx)
{
    if (ctx->entered) {
        pol_request_release(ctx->limits);
    }
    gw_sqs_request_fini(&ctx->req);
    if (ctx->snap != NULL) {
        cfg_snapshot_unref(ctx->snap);
    }
    free(ctx);
}

void gw__act_finish(struct gw_act_ctx *ctx, struct gw_sqs_reply *reply)
{
    struct gw_header headers[GW_SQS_REPLY_MAX_HEADERS];
    size_t n = gw_sqs_reply_headers(reply, headers);
    log_request(ctx, reply->status, reply->error);
    uint64_t now = sl_mono_ns();
    gw_metrics_count_request(ctx->api->metrics, principal_label(ctx), ctx->action, reply->error,
                             now > ctx->http->start_mono_ns ? now - ctx->http->start_mono_ns : 0);
    if (ctx->queue_id != 0) {
        gw_metrics_count_queue_request(ctx->api->metrics, ctx->queue_id, ctx->action, reply->error);
    }
    size_t len = 0;
    char *body = reply->body.n > 0 ? sl_buf_take(&reply->body, &len) : NULL; /* not copied */
    gw_exchange_respond_take(ctx->ex, reply->status, headers, n, body, len);
    ctx_free(ctx);
}

/* The tenant's limiter state for a tenant's request, or NULL (the admin,
 * no principal yet, or a tenant the limiter has not seen). Looked up once
 * per request: the precheck, admission and a charge all need it. */
static struct pol_tenant_state *tenant_state(struct gw_act_ctx *ctx)
{
    if (ctx->principal.kind != CFG_PRINCIPAL_TENANT || ctx->principal.tenant == NULL) {
        return NULL;
    }
    if (ctx->limits == NULL) {
        const char *name = ctx->principal.tenant->name;
        ctx->limits = pol_limiter_find(ctx->api->limiter, name, strlen(name));
    }
    return ctx->limits;
}

/* Sends err, with Retry-After when retry_after_ns is a wait hint. */
static void answer_error(struct gw_act_ctx *ctx, const struct gw_sqs_err *err,
                         uint64_t retry_after_ns)
{
    struct gw_sqs_reply reply;
    gw__act_reply_init(ctx, &reply);
    gw_sqs_reply_error(&reply, err);
    gw_sqs_reply_retry_after(&reply, retry_after_ns);
    gw__act_finish(ctx, &reply);
    gw_sqs_reply_fini(&reply);
}

void gw__act_fail(struct gw_act_ctx *ctx, const struct gw_sqs_err *err)
{
    if (!ctx->charged) {
        struct pol_tenant_state *state = tenant_state(ctx);
        if (state != NULL) {
            pol_gcra_charge(&state->rate, 1, sl_mono_ns());
        }
        ctx->charged = true;
    }
    answer_error(ctx, err, 0);
}

void gw__act_not_implemented(struct gw_act_ctx *ctx)
{
    struct gw_sqs_err err;
    gw_sqs_err_set(&err, GW_SQS_E_UNSUPPORTED_OPERATION, "%s is not implemented yet.",
                   gw_sqs_action_name(ctx->action));
    gw__act_fail(ctx, &err);
}

void gw__act_no_iam(struct gw_act_ctx *ctx)
{
    struct gw_sqs_err err;
    gw_sqs_err_set(&err, GW_SQS_E_UNSUPPORTED_OPERATION,
                   "%s is not supported: sluice has no IAM; a tenant's credentials reach exactly "
                   "its own queues.",
                   gw_sqs_action_name(ctx->action));
    gw__act_fail(ctx, &err);
}

void gw__act_reply_init(const struct gw_act_ctx *ctx, struct gw_sqs_reply *reply)
{
    gw_sqs_reply_init_for(reply, ctx->protocol, ctx->action, ctx->http->request_id);
}

void gw__act_reply_empty(struct gw_act_ctx *ctx)
{
    struct gw_sqs_reply reply;
    gw__act_reply_init(ctx, &reply);
    gw_sqs_reply_empty(&reply);
    gw__act_finish(ctx, &reply);
    gw_sqs_reply_fini(&reply);
}

void gw__act_storage_err(int status, struct gw_sqs_err *err)
{
    if (status == SL_ENOTFOUND) {
        gw_sqs_err_set(err, GW_SQS_E_QUEUE_DOES_NOT_EXIST, NULL);
    } else if (status == SL_ECLOSED) {
        gw_sqs_err_set(err, GW_SQS_E_SERVICE_UNAVAILABLE, "The service is shutting down.");
    } else if (status == SL_ELIMIT) {
        /* the tenant's jobs at one partition writer reached its cap */
        gw_sqs_err_set(err, GW_SQS_E_REQUEST_THROTTLED,
                       "Too many requests of this tenant are waiting for storage; retry later.");
    } else if (status == SL_EUNAVAIL) {
        /* a cluster's partition has no leader this node can reach now (an
         * election, a lost quorum): the SDKs retry a 503 with back-off */
        gw_sqs_err_set(err, GW_SQS_E_SERVICE_UNAVAILABLE,
                       "The partition has no reachable leader right now; retry later.");
    } else if (status == SL_EBUDGET) {
        /* a cluster node's replicated images (held in memory) reached its
         * memory_budget: throttled until receives and deletes free it */
        gw_sqs_err_set(err, GW_SQS_E_REQUEST_THROTTLED,
                       "This node's memory budget for replicated queues is spent; retry later.");
    } else if (status == SL_EBUSY) {
        /* the partitions' "full": the disk is full or below its watermark;
         * transient, the client retries */
        gw_sqs_err_set(err, GW_SQS_E_SERVICE_UNAVAILABLE,
                       "The disk is full or nearly full; retry later.");
    } else {
        gw_sqs_err_set(err, GW_SQS_E_INTERNAL_ERROR, "Storage failed: %s.", sl_strerror(status));
    }
}

void gw__act_fail_storage(struct gw_act_ctx *ctx, int status)
{
    struct gw_sqs_err err;
    gw__act_storage_err(status, &err);
    gw__act_fail(ctx, &err);
}

/* ---- queues ------------------------------------------------------------- */

static bool copy_slice(struct sl_slice s, char *out, size_t cap)
{
    if (s.n == 0 || s.n >= cap) {
        return false;
    }
    memcpy(out, s.p, s.n);
    out[s.n] = '\0';
    return true;
}

int gw__act_find_queue(const struct gw_act_ctx *ctx, struct sl_slice tenant, struct sl_slice name,
                       struct gw_queue *q)
{
    const struct cfg_tenant *own = ctx->principal.tenant;
    if (!copy_slice(tenant, q->tenant, sizeof q->tenant) ||
        !copy_slice(name, q->name, sizeof q->name)) {
        return SL_ENOTFOUND;
    }
    /* A tenant's credentials reach only its own queues; another tenant's
     * queue answers exactly as a queue that does not exist, so that
     * neither data nor existence leaks. */
    if (own != NULL && strcmp(own->name, q->tenant) != 0) {
        return SL_ENOTFOUND;
    }
    if (own == NULL && cfg_find_tenant(ctx->snap, tenant.p, tenant.n) == NULL) {
        return SL_ENOTFOUND;
    }
    if (part_queue_find(ctx->api->engine, q->tenant, q->name, &q->id, &q->cfg) != SL_OK) {
        return SL_ENOTFOUND;
    }
    return SL_OK;
}

int gw__act_not_ready(struct gw_act_ctx *ctx)
{
    if (part_engine_ready(ctx->api->engine)) {
        return SL_OK;
    }
    /* A cluster's node still catching up may not know the queue yet: a
     * retry (on it, or another node) finds out. */
    struct gw_sqs_err err;
    gw_sqs_err_set(&err, GW_SQS_E_SERVICE_UNAVAILABLE,
                   "This node is catching up with the cluster; retry later.");
    gw__act_fail(ctx, &err);
    return SL_EUNAVAIL;
}

int gw__act_resolve(struct gw_act_ctx *ctx, const struct gw_sqs_queue_ref *ref, struct gw_queue *q)
{
    if (gw__act_find_queue(ctx, ref->tenant, ref->name, q) != SL_OK) {
        if (gw__act_not_ready(ctx) != SL_OK) {
            return SL_EUNAVAIL;
        }
        struct gw_sqs_err err;
        gw_sqs_err_set(&err, GW_SQS_E_QUEUE_DOES_NOT_EXIST, NULL);
        gw__act_fail(ctx, &err);
        return SL_ENOTFOUND;
    }
    ctx->queue_id = q->id;
    return SL_OK;
}

void gw__act_queue_url(const struct gw_act_ctx *ctx, const char *tenant, const char *name,
                       struct sl_buf *out)
{
    struct sl_slice authority = ctx->http->authority;
    sl_buf_printf(out, "%s://%.*s/%s/%s", ctx->http->tls ? "https" : "http", (int)authority.n,
                  authority.p, tenant, name);
}

void gw__act_queue_arn(const struct gw_act_ctx *ctx, const char *tenant, const char *name,
                       struct sl_buf *out)
{
    sl_buf_printf(out, "arn:aws:sqs:%s:%s:%s", ctx->snap->region, tenant, name);
}

/* ---- policy ------------------------------------------------------------- */

static uint32_t name_hash(const char *s)
{
    uint32_t h = 2166136261u; /* FNV-1a: a cache slot, not a security boundary */
    for (; *s != '\0'; s++) {
        h = (h ^ (uint8_t)*s) * 16777619u;
    }
    return h;
}

uint32_t gw__act_shard_k(const struct gw_api *api, const struct cfg_snapshot *snap,
                         uint32_t *partitions)
{
    *partitions = part_engine_partitions(api->engine);
    return SL_MIN(SL_MIN(snap->shard_size, *partitions), GW_MAX_SHARD);
}

uint32_t gw__act_shard(struct gw_act_ctx *ctx, const char *tenant, const uint32_t **shard)
{
    struct gw_api_loop *l = ctx->loop;
    uint32_t partitions;
    uint32_t k = gw__act_shard_k(ctx->api, ctx->snap, &partitions);
    struct gw_shard_cache_entry *e = &l->shards[name_hash(tenant) % GW_SHARD_CACHE_SLOTS];
    if (e->partitions != partitions || e->k != k || strcmp(e->tenant, tenant) != 0) {
        const uint8_t *key = part_engine_key(ctx->api->engine);
        int rc =
            pol_shard_place(key, PART_KEY_LEN, tenant, strlen(tenant), partitions, k, e->shard);
        SL_ASSERT(rc == SL_OK); /* k <= P <= POL_MAX_PARTITIONS by config validation */
        snprintf(e->tenant, sizeof e->tenant, "%s", tenant);
        e->partitions = partitions;
        e->k = k;
    }
    *shard = e->shard;
    return k;
}

/* The per-action bucket of the request's action, or NULL: ctx->action is
 * exact, and a batch action shares its single form's key. */
static struct pol_gcra *action_rate(const struct gw_act_ctx *ctx, struct pol_tenant_state *state)
{
    const char *name = gw_sqs_action_name(ctx->action);
    enum cfg_action_key key;
    if (!cfg_action_key_of(name, strlen(name), &key)) {
        return NULL;
    }
    return pol_tenant_action_rate(state, key);
}

/* Answers RequestThrottled (or err's code) for a request refused for the
 * tenant's limits, with Retry-After from retry_after_ns (0: no hint), and
 * charges nothing for it: a refusal spends no token, as in SQS, so that a
 * client retrying at the refill rate gets in. Only malformed requests are
 * charged (gw__act_fail). Always takes ownership of ctx. */
static void throttle(struct gw_act_ctx *ctx, const struct gw_sqs_err *err, uint64_t retry_after_ns)
{
    ctx->charged = true;
    answer_error(ctx, err, retry_after_ns);
}

/* How long until a tenant that owes `owed` tokens, at least a burst,
 * owes less than a burst: the wait before the precheck lets it in again;
 * 0 (no hint) without a rate. */
static uint64_t debt_wait_ns(const struct cfg_limits *lim, uint64_t owed)
{
    if (lim->requests_per_second <= 0) {
        return 0;
    }
    double tokens = (double)(owed - lim->burst + 1);
    return (uint64_t)(tokens / lim->requests_per_second * 1e9);
}

int gw__act_precheck(struct gw_act_ctx *ctx)
{
    struct pol_tenant_state *state = tenant_state(ctx);
    if (state == NULL) {
        return SL_OK;
    }
    const struct cfg_limits *lim = &ctx->principal.tenant->limits;
    uint64_t owed = pol_gcra_owed(&state->rate, sl_mono_ns());
    if (owed < lim->burst) {
        return SL_OK;
    }
    bool send =
        ctx->action == GW_SQS_ACT_SEND_MESSAGE || ctx->action == GW_SQS_ACT_SEND_MESSAGE_BATCH;
    if (send && ctx->principal.tenant->on_excess == CFG_EXCESS_SPILL) {
        return SL_OK; /* over the rate, a send spills: that is decided at admission */
    }
    struct gw_sqs_err err;
    gw_sqs_err_set(&err, GW_SQS_E_REQUEST_THROTTLED, "Rate exceeded for tenant %s.",
                   ctx->principal.tenant->name);
    throttle(ctx, &err, debt_wait_ns(lim, owed));
    return SL_EBUSY;
}

int gw__act_enter(struct gw_act_ctx *ctx)
{
    struct pol_tenant_state *state = tenant_state(ctx);
    if (state == NULL) {
        return SL_OK; /* the admin, or a tenant the limiter has not seen yet */
    }
    if (pol_request_acquire(state)) {
        ctx->entered = true;
        return SL_OK;
    }
    struct gw_sqs_err err;
    gw_sqs_err_set(&err, GW_SQS_E_REQUEST_THROTTLED,
                   "Tenant %s has %u requests in progress, its limit "
                   "(limits.max_concurrent_requests).",
                   ctx->principal.tenant->name,
                   ctx->principal.tenant->limits.max_concurrent_requests);
    throttle(ctx, &err, 0); /* no telling when a slot frees */
    return SL_EBUSY;
}

int gw__act_admit(struct gw_act_ctx *ctx, const char *tenant, const char *queue,
                  enum pol_action_class action, uint32_t cost, bool *spill)
{
    *spill = false;
    /* One admission per request: a second would take the tokens twice,
     * and a bucket of burst 1 would then refuse the request every time. */
    SL_ASSERT(!ctx->charged);
    ctx->charged = true; /* settled here: admitted, or refused for free below */
    if (ctx->principal.kind == CFG_PRINCIPAL_ADMIN) {
        return SL_OK; /* docs/api.md: admin requests are never rate-limited */
    }
    const struct cfg_tenant *t = ctx->principal.tenant;
    struct pol_limiter *limiter = ctx->api->limiter;
    /* A tenant reaches only its own queues (gw__act_find_queue), so the
     * queue's tenant is the principal's. */
    SL_ASSERT(strcmp(tenant, t->name) == 0);
    struct pol_tenant_state *state = tenant_state(ctx);
    if (state == NULL) {
        return SL_OK; /* a tenant the limiter has not seen yet: next reload adds it */
    }
    int64_t backlog = 0;
    int64_t inflight = 0;
    part_tenant_counts(ctx->api->engine, tenant, &backlog, &inflight);
    struct pol_admit_input in = {
        .tenant = t,
        .action = action,
        .cost = cost,
        .backlog = backlog > 0 ? (uint64_t)backlog : 0,
        .inflight = inflight > 0 ? (uint64_t)inflight : 0,
        .now_ns = sl_mono_ns(),
        .queue_rate = pol_limiter_queue_rate(limiter, state, queue, strlen(queue)),
        .action_rate = action_rate(ctx, state),
    };
    struct pol_admit_result res;
    switch (pol_admit(&state->rate, &in, &res)) {
    case POL_ADMIT:
        return SL_OK;
    case POL_SPILL:
        *spill = true;
        return SL_OK;
    case POL_THROTTLE:
        break;
    }
    /* Nothing is charged: pol_admit spent no token, and charging one here
     * would keep a client that retries at the refill rate out for good
     * (each retry would take the token its wait had earned). */
    struct gw_sqs_err err;
    if (res.reason == POL_REASON_INFLIGHT) {
        gw_sqs_err_set(&err, GW_SQS_E_OVER_LIMIT,
                       "Tenant %s is at its limit of %u in-flight messages.", tenant,
                       t->limits.max_inflight);
    } else if (res.reason == POL_REASON_BACKLOG) {
        gw_sqs_err_set(&err, GW_SQS_E_REQUEST_THROTTLED,
                       "Tenant %s has reached its backlog limit of %llu stored messages.", tenant,
                       (unsigned long long)t->limits.max_backlog);
    } else if (res.reason == POL_REASON_QUEUE_RATE) {
        gw_sqs_err_set(&err, GW_SQS_E_REQUEST_THROTTLED, "Rate exceeded for queue %s of tenant %s.",
                       queue, tenant);
    } else if (res.reason == POL_REASON_ACTION_RATE) {
        gw_sqs_err_set(&err, GW_SQS_E_REQUEST_THROTTLED, "Rate exceeded for %s of tenant %s.",
                       gw_sqs_action_name(ctx->action), tenant);
    } else {
        gw_sqs_err_set(&err, GW_SQS_E_REQUEST_THROTTLED, "Rate exceeded for tenant %s.", tenant);
    }
    throttle(ctx, &err, res.retry_after_ns);
    return SL_EBUSY;
}
