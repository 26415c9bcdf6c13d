/*
 * gw_act_util.c -- what every SQS action handler shares: resolving the
 * request's queue under tenant isolation, queue URLs and ARNs, the
 * per-loop placement cache, admission through policy, storage errors, and
 * the stored form of message attributes.
 *
 * Threading: loop threads; the placement cache is per loop, so unlocked.
 */
#include "gw_act_store.h"

#include <stdio.h>
#include <string.h>

static bool copy_slice(struct sl_slice s, char *out, size_t cap)
{
    if (s.n == 0 || s.n >= cap) {
        return false;
    }
    memcpy(out, s.p, s.n);
    out[s.n] = '\0';
    return true;
}

bool gw__act_resolve(struct gw_act_ctx *ctx, const struct gw_sqs_queue_ref *ref, struct gw_queue *q)
{
    struct gw_sqs_err err;
    const struct cfg_tenant *own = ctx->principal.tenant;

    /* A tenant's credentials reach only its own queues; another tenant's
     * queue answers exactly as a queue that does not exist, so that
     * neither data nor existence leaks. */
    bool ok = copy_slice(ref->tenant, q->tenant, sizeof q->tenant) &&
              copy_slice(ref->name, q->name, sizeof q->name);
    if (ok && own != NULL && strcmp(own->name, q->tenant) != 0) {
        ok = false;
    }
    if (ok && own == NULL && cfg_find_tenant(ctx->snap, ref->tenant.p, ref->tenant.n) == NULL) {
        ok = false;
    }
    if (ok && part_queue_find(ctx->api->engine, q->tenant, q->name, &q->id, &q->cfg) != SL_OK) {
        ok = false;
    }
    if (!ok) {
        gw_sqs_err_set(&err, GW_SQS_E_QUEUE_DOES_NOT_EXIST, NULL);
        gw__act_fail(ctx, &err);
        return false;
    }
    ctx->queue_id = q->id;
    return true;
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

static uint32_t name_hash(const char *s)
{
    uint32_t h = 2166136261u; /* FNV-1a: a cache slot, not a security boundary */
    for (; *s != '\0'; s++) {
        h = (h ^ (uint8_t)*s) * 16777619u;
    }
    return h;
}

uint32_t gw__act_shard(struct gw_act_ctx *ctx, const char *tenant, const uint32_t **shard)
{
    struct gw_api_loop *l = ctx->loop;
    uint32_t partitions = part_engine_partitions(ctx->api->engine);
    uint32_t k = SL_MIN(ctx->snap->shard_size, partitions);
    k = SL_MIN(k, GW_MAX_SHARD);
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

bool gw__act_admit(struct gw_act_ctx *ctx, const char *tenant, const char *queue,
                   enum pol_action_class action, uint32_t cost, bool *spill)
{
    *spill = false;
    if (ctx->principal.kind == CFG_PRINCIPAL_ADMIN) {
        return true; /* the contract: admin requests are not counted */
    }
    const struct cfg_tenant *t = ctx->principal.tenant;
    struct pol_limiter *limiter = ctx->api->limiter;
    struct pol_tenant_state *state = pol_limiter_find(limiter, tenant, strlen(tenant));
    if (state == NULL) {
        return true; /* a tenant the limiter has not seen yet: next reload adds it */
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
        return true;
    case POL_SPILL:
        *spill = true;
        return true;
    case POL_THROTTLE:
        break;
    }
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
    gw__act_fail(ctx, &err);
    return false;
}

void gw__act_fail_storage(struct gw_act_ctx *ctx, int status)
{
    struct gw_sqs_err err;
    if (status == SL_ENOTFOUND) {
        gw_sqs_err_set(&err, GW_SQS_E_QUEUE_DOES_NOT_EXIST, NULL);
    } else if (status == SL_ECLOSED) {
        gw_sqs_err_set(&err, GW_SQS_E_SERVICE_UNAVAILABLE, "The service is shutting down.");
    } else {
        gw_sqs_err_set(&err, GW_SQS_E_INTERNAL_ERROR, "Storage failed: %s.", sl_strerror(status));
    }
    gw__act_fail(ctx, &err);
}

/* ---- stored message attributes ------------------------------------------ */

static void put_u32(struct sl_buf *out, size_t v)
{
    uint8_t b[4] = {(uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v};
    sl_buf_append(out, b, sizeof b);
}

static bool get_u32(struct sl_slice *in, size_t *v)
{
    if (in->n < 4) {
        return false;
    }
    const uint8_t *b = (const uint8_t *)in->p;
    *v = (size_t)b[0] << 24 | (size_t)b[1] << 16 | (size_t)b[2] << 8 | (size_t)b[3];
    in->p += 4;
    in->n -= 4;
    return true;
}

static bool get_bytes(struct sl_slice *in, struct sl_slice *out)
{
    size_t n;
    if (!get_u32(in, &n) || n > in->n) {
        return false;
    }
    out->p = in->p;
    out->n = n;
    in->p += n;
    in->n -= n;
    return true;
}

void gw__attrs_encode(const struct gw_sqs_msg_attr *attrs, size_t n, struct sl_buf *out)
{
    for (size_t i = 0; i < n; i++) {
        put_u32(out, attrs[i].name.n);
        sl_buf_append(out, attrs[i].name.p, attrs[i].name.n);
        put_u32(out, attrs[i].data_type.n);
        sl_buf_append(out, attrs[i].data_type.p, attrs[i].data_type.n);
        sl_buf_append_byte(out, attrs[i].type == GW_SQS_ATTR_BINARY ? 2 : 1);
        put_u32(out, attrs[i].value.n);
        sl_buf_append(out, attrs[i].value.p, attrs[i].value.n);
    }
}

int gw__attrs_decode(struct sl_slice blob, struct gw_sqs_msg_attr *out, size_t cap)
{
    size_t n = 0;
    while (blob.n > 0) {
        if (n == cap) {
            return -1;
        }
        struct gw_sqs_msg_attr *a = &out[n];
        if (!get_bytes(&blob, &a->name) || !get_bytes(&blob, &a->data_type) || blob.n < 1) {
            return -1;
        }
        uint8_t transport = (uint8_t)blob.p[0];
        blob.p++;
        blob.n--;
        if (!get_bytes(&blob, &a->value)) {
            return -1;
        }
        if (transport == 2) {
            a->type = GW_SQS_ATTR_BINARY;
        } else if (a->data_type.n >= 6 && memcmp(a->data_type.p, "Number", 6) == 0) {
            a->type = GW_SQS_ATTR_NUMBER;
        } else {
            a->type = GW_SQS_ATTR_STRING;
        }
        n++;
    }
    return (int)n;
}

void gw__act_reply(struct gw_act_ctx *ctx, struct json_t *body)
{
    struct gw_sqs_reply reply;
    gw_sqs_reply_init(&reply);
    gw_sqs_reply_ok(&reply, body);
    gw__act_finish(ctx, &reply);
    gw_sqs_reply_fini(&reply);
}
