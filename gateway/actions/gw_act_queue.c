/*
 * gw_act_queue.c -- the SQS queue actions: CreateQueue, GetQueueUrl,
 * ListQueues, DeleteQueue, GetQueueAttributes, SetQueueAttributes,
 * PurgeQueue, TagQueue, UntagQueue, ListQueueTags and
 * ListDeadLetterSourceQueues.
 *
 * Queue attributes are stored as the strings SQS shows (only those a
 * client set; defaults are filled in when read), plus the typed fields the
 * storage engine acts on (part_queue_config), derived here from them.
 *
 * Threading: loop threads. Catalog reads are in-memory and synchronous;
 * catalog writes are partition jobs finished from their completion.
 */
#include "gw_act.h"

#include "gw_act_beyond.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LIST_QUEUES_CAP 1000 /* SQS returns at most 1000 URLs per call */
#define PURGE_INTERVAL_MS 60000

/* ---- attribute defaults and the typed config -------------------------- */

struct attr_default {
    enum gw_sqs_qattr attr;
    const char *value;
    bool fifo_only;
};

/* What GetQueueAttributes shows for an attribute nobody set (the
 * defaults in the Amazon SQS API Reference, CreateQueue). */
static const struct attr_default attr_defaults[] = {
    {GW_SQS_QATTR_DELAY_SECONDS, "0", false},
    {GW_SQS_QATTR_MAXIMUM_MESSAGE_SIZE, "1048576", false},
    {GW_SQS_QATTR_MESSAGE_RETENTION_PERIOD, "345600", false},
    {GW_SQS_QATTR_RECEIVE_MESSAGE_WAIT_TIME_SECONDS, "0", false},
    {GW_SQS_QATTR_VISIBILITY_TIMEOUT, "30", false},
    {GW_SQS_QATTR_SQS_MANAGED_SSE_ENABLED, "true", false},
    {GW_SQS_QATTR_FIFO_QUEUE, "true", true},
    {GW_SQS_QATTR_CONTENT_BASED_DEDUPLICATION, "false", true},
    {GW_SQS_QATTR_DEDUPLICATION_SCOPE, "queue", true},
    {GW_SQS_QATTR_FIFO_THROUGHPUT_LIMIT, "perQueue", true},
};

static const char *attr_default_value(enum gw_sqs_qattr attr, bool fifo)
{
    for (size_t i = 0; i < SL_ARRAY_LEN(attr_defaults); i++) {
        if (attr_defaults[i].attr == attr && (fifo || !attr_defaults[i].fifo_only)) {
            return attr_defaults[i].value;
        }
    }
    return NULL;
}

/* sluice's own attributes as a queue that never set them has them: not
 * shown (GetQueueAttributes "All" lists SQS's set exactly), but a
 * CreateQueue naming these values matches such a queue. */
static const struct attr_default own_defaults[] = {
    {GW_SQS_QATTR_SLUICE_PRIORITY, "false", false},
    {GW_SQS_QATTR_SLUICE_IDEMPOTENT_SENDS, "false", false},
    {GW_SQS_QATTR_SLUICE_IDEMPOTENCY_WINDOW_SECONDS, "300",
     false}, /* GW_SQS_IDEMPOTENCY_WINDOW_DEFAULT_S */
};

_Static_assert(GW_SQS_IDEMPOTENCY_WINDOW_MAX_S == PART_IDEMPOTENCY_WINDOW_MAX_S,
               "the window the gateway accepts is the one the catalog keeps");

static bool attr_is_integer(enum gw_sqs_qattr a)
{
    switch (a) {
    case GW_SQS_QATTR_SLUICE_IDEMPOTENCY_WINDOW_SECONDS:
    case GW_SQS_QATTR_DELAY_SECONDS:
    case GW_SQS_QATTR_MAXIMUM_MESSAGE_SIZE:
    case GW_SQS_QATTR_MESSAGE_RETENTION_PERIOD:
    case GW_SQS_QATTR_RECEIVE_MESSAGE_WAIT_TIME_SECONDS:
    case GW_SQS_QATTR_VISIBILITY_TIMEOUT:
    case GW_SQS_QATTR_KMS_DATA_KEY_REUSE_PERIOD_SECONDS:
        return true;
    default:
        return false;
    }
}

static bool attr_is_bool(enum gw_sqs_qattr a)
{
    return a == GW_SQS_QATTR_FIFO_QUEUE || a == GW_SQS_QATTR_CONTENT_BASED_DEDUPLICATION ||
           a == GW_SQS_QATTR_SQS_MANAGED_SSE_ENABLED || a == GW_SQS_QATTR_SLUICE_PRIORITY ||
           a == GW_SQS_QATTR_SLUICE_IDEMPOTENT_SENDS;
}

/* The canonical stored text of a validated attribute value: integers and
 * booleans normalised (so "030" and "30" compare equal), others as sent. */
static char *attr_canonical(const struct gw_sqs_qattr_value *v)
{
    char num[32];
    if (attr_is_integer(v->attr)) {
        snprintf(num, sizeof num, "%lld", (long long)v->number);
        return sl_xstrdup(num);
    }
    if (attr_is_bool(v->attr)) {
        return sl_xstrdup(v->number ? "true" : "false");
    }
    return sl_xstrndup(v->value.p, v->value.n);
}

static const char *kv_find(const struct part_kv *kv, size_t n, const char *key)
{
    for (size_t i = 0; i < n; i++) {
        if (strcmp(kv[i].key, key) == 0) {
            return kv[i].value;
        }
    }
    return NULL;
}

/* The effective text of an attribute of an existing queue. */
static const char *attr_effective(const struct part_queue_info *qi, enum gw_sqs_qattr a)
{
    const char *v = kv_find(qi->attrs, qi->attr_count, gw_sqs_qattr_name(a));
    return v != NULL ? v : attr_default_value(a, qi->cfg.fifo);
}

/* attr_effective, with sluice's unshown defaults: what CreateQueue
 * compares its attributes with. */
static const char *attr_compared(const struct part_queue_info *qi, enum gw_sqs_qattr a)
{
    const char *v = attr_effective(qi, a);
    for (size_t i = 0; v == NULL && i < SL_ARRAY_LEN(own_defaults); i++) {
        v = own_defaults[i].attr == a && !qi->cfg.fifo ? own_defaults[i].value : NULL;
    }
    return v;
}

/* SluiceIdempotentSends and SluiceIdempotencyWindowSeconds, which may come
 * in separate requests, as the one number the engine keeps: the window,
 * 0 when off. stored (NULL for a new queue) has the queue's attributes. */
static void apply_idempotency(const struct gw_sqs_qattrs *attrs,
                              const struct part_queue_info *stored, struct part_queue_config *cfg)
{
    const struct gw_sqs_qattr_value *on =
        gw_sqs_qattrs_find(attrs, GW_SQS_QATTR_SLUICE_IDEMPOTENT_SENDS);
    const struct gw_sqs_qattr_value *win =
        gw_sqs_qattrs_find(attrs, GW_SQS_QATTR_SLUICE_IDEMPOTENCY_WINDOW_SECONDS);
    if (on == NULL && win == NULL) {
        return;
    }
    bool enabled = on != NULL ? on->number != 0 : cfg->idempotency_window_s > 0;
    uint32_t window = GW_SQS_IDEMPOTENCY_WINDOW_DEFAULT_S;
    const char *kept =
        stored != NULL ? kv_find(stored->attrs, stored->attr_count,
                                 gw_sqs_qattr_name(GW_SQS_QATTR_SLUICE_IDEMPOTENCY_WINDOW_SECONDS))
                       : NULL;
    if (win != NULL) {
        window = (uint32_t)win->number;
    } else if (kept != NULL) {
        window = (uint32_t)strtoul(kept, NULL, 10); /* stored canonical and in range */
    }
    cfg->idempotency_window_s = enabled ? window : 0;
}

/* A RedrivePolicy names its dead-letter queue by ARN; the engine wants its
 * id. SQS requires the DLQ in the same account (tenant) and region, of the
 * same type, and allowed by the DLQ's RedriveAllowPolicy. Returns SL_OK,
 * or SL_EINVAL with err set. */
static int redrive_resolve(struct gw_act_ctx *ctx, const char *tenant, const char *source_name,
                           bool fifo, struct sl_slice policy, struct part_queue_config *cfg,
                           struct gw_sqs_err *err)
{
    json_error_t jerr;
    json_t *doc = json_loadb(policy.p, policy.n, 0, &jerr);
    const char *arn_text = json_string_value(json_object_get(doc, "deadLetterTargetArn"));
    json_t *mrc = json_object_get(doc, "maxReceiveCount");
    long long max_receive = json_is_integer(mrc)  ? (long long)json_integer_value(mrc)
                            : json_is_string(mrc) ? strtoll(json_string_value(mrc), NULL, 10)
                                                  : 0;
    struct gw_sqs_arn arn;
    const char *reason = NULL;
    uint64_t dlq_id = 0;
    struct part_queue_config dlq_cfg;
    char name[GW_SQS_MAX_QUEUE_NAME_LEN + 1];

    if (arn_text == NULL || !gw_sqs_parse_arn(sl_slice_cstr(arn_text), &arn) || max_receive < 1 ||
        max_receive > 1000) {
        reason = "Invalid value for deadLetterTargetArn or maxReceiveCount.";
    } else if (!sl_slice_eq_cstr(arn.account, tenant) ||
               !sl_slice_eq_cstr(arn.region, ctx->snap->region) || arn.name.n >= sizeof name) {
        reason = "Dead-letter target does not exist.";
    } else {
        memcpy(name, arn.name.p, arn.name.n);
        name[arn.name.n] = '\0';
        if (part_queue_find(ctx->api->engine, tenant, name, &dlq_id, &dlq_cfg) != SL_OK) {
            reason = "Dead-letter target does not exist.";
        } else if (dlq_cfg.fifo != fifo) {
            reason = "Dead-letter queue must be same type of queue as the source.";
        } else if (source_name != NULL && strcmp(name, source_name) == 0) {
            reason = "A queue cannot be its own dead-letter queue.";
        }
    }
    if (reason == NULL && source_name != NULL) {
        /* The DLQ's RedriveAllowPolicy may refuse this source. */
        struct part_queue_info *dlq = NULL;
        if (part_queue_get(ctx->api->engine, dlq_id, &dlq) == SL_OK) {
            const char *allow = kv_find(dlq->attrs, dlq->attr_count, "RedriveAllowPolicy");
            json_t *ap = allow != NULL ? json_loads(allow, 0, NULL) : NULL;
            const char *perm = json_string_value(json_object_get(ap, "redrivePermission"));
            if (perm != NULL && strcmp(perm, "denyAll") == 0) {
                reason = "The dead-letter queue does not allow any source queue.";
            } else if (perm != NULL && strcmp(perm, "byQueue") == 0) {
                struct sl_buf src;
                sl_buf_init(&src);
                gw__act_queue_arn(ctx, tenant, source_name, &src);
                bool listed = false;
                json_t *arns = json_object_get(ap, "sourceQueueArns");
                size_t i;
                json_t *it;
                json_array_foreach(arns, i, it)
                {
                    const char *s = json_string_value(it);
                    listed = listed || (s != NULL && strcmp(s, src.p) == 0);
                }
                sl_buf_free(&src);
                if (!listed) {
                    reason = "The dead-letter queue's RedriveAllowPolicy does not list this "
                             "source queue.";
                }
            }
            json_decref(ap);
            part_queue_info_free(dlq);
        }
    }
    json_decref(doc);
    if (reason != NULL) {
        gw_sqs_err_set(err, GW_SQS_E_INVALID_PARAMETER_VALUE,
                       "Value %.*s for parameter RedrivePolicy is invalid. Reason: %s",
                       (int)SL_MIN(policy.n, 300), policy.p, reason);
        return SL_EINVAL;
    }
    cfg->dlq_target_id = dlq_id;
    cfg->max_receive_count = (uint32_t)max_receive;
    return SL_OK;
}

/* Applies validated attributes to the typed config (for_create: of a new
 * queue). Returns SL_OK, or SL_EINVAL with err set. */
static int apply_typed(struct gw_act_ctx *ctx, const char *tenant, const char *name,
                       const struct gw_sqs_qattrs *attrs, bool for_create,
                       struct part_queue_config *cfg, struct gw_sqs_err *err)
{
    for (size_t i = 0; i < attrs->count; i++) {
        const struct gw_sqs_qattr_value *v = &attrs->items[i];
        uint32_t n = v->number < 0 ? 0 : (uint32_t)v->number;
        switch (v->attr) {
        case GW_SQS_QATTR_DELAY_SECONDS:
            cfg->delay_s = n;
            break;
        case GW_SQS_QATTR_VISIBILITY_TIMEOUT:
            cfg->visibility_timeout_s = n;
            break;
        case GW_SQS_QATTR_MESSAGE_RETENTION_PERIOD:
            cfg->retention_s = n;
            break;
        case GW_SQS_QATTR_MAXIMUM_MESSAGE_SIZE:
            cfg->max_message_size = n;
            break;
        case GW_SQS_QATTR_RECEIVE_MESSAGE_WAIT_TIME_SECONDS:
            cfg->receive_wait_s = n;
            break;
        case GW_SQS_QATTR_CONTENT_BASED_DEDUPLICATION:
            cfg->content_based_dedup = v->number != 0;
            break;
        case GW_SQS_QATTR_FIFO_THROUGHPUT_LIMIT:
            cfg->throughput_per_group = sl_slice_eq_cstr(v->value, "perMessageGroupId");
            break;
        case GW_SQS_QATTR_DEDUPLICATION_SCOPE:
            /* Fixed when the queue is made: SQS keeps deduplicating as the
             * queue was created when the attribute changes later, and the
             * scope decides where the queue's groups live. */
            if (for_create) {
                cfg->dedup_per_group = sl_slice_eq_cstr(v->value, "messageGroup");
            }
            break;
        case GW_SQS_QATTR_SLUICE_PRIORITY:
            cfg->priority_order = v->number != 0;
            break;
        case GW_SQS_QATTR_SLUICE_EXCLUSIVITY_KEY:
            cfg->exclusive = v->value.n > 0;
            break;
        case GW_SQS_QATTR_SLUICE_FILTER_KEYS:
            cfg->filtered = v->value.n > 0;
            break;
        case GW_SQS_QATTR_REDRIVE_POLICY:
            if (v->value.n == 0) {
                cfg->dlq_target_id = 0;
                cfg->max_receive_count = 0;
            } else if (redrive_resolve(ctx, tenant, name, cfg->fifo, v->value, cfg, err) != SL_OK) {
                return SL_EINVAL;
            }
            break;
        default:
            break;
        }
    }
    return SL_OK;
}

/* Attributes as stored key/value pairs (strings owned by the caller's
 * array; free with free_kv). Removal ("" for the policies) maps to NULL. */
static struct part_kv *attrs_to_kv(const struct gw_sqs_qattrs *attrs, bool for_update)
{
    struct part_kv *kv = sl_xcalloc(attrs->count + 1, sizeof *kv);
    for (size_t i = 0; i < attrs->count; i++) {
        const struct gw_sqs_qattr_value *v = &attrs->items[i];
        kv[i].key = gw_sqs_qattr_name(v->attr);
        bool removes = v->value.n == 0 &&
                       (v->attr == GW_SQS_QATTR_POLICY || v->attr == GW_SQS_QATTR_REDRIVE_POLICY ||
                        v->attr == GW_SQS_QATTR_REDRIVE_ALLOW_POLICY);
        kv[i].value = removes && for_update ? NULL : attr_canonical(v);
    }
    return kv;
}

static void free_kv(struct part_kv *kv, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free((char *)kv[i].value);
    }
    free(kv);
}

static struct part_kv *tags_to_kv(const struct gw_sqs_tag *tags, size_t n)
{
    struct part_kv *kv = sl_xcalloc(n + 1, sizeof *kv);
    for (size_t i = 0; i < n; i++) {
        kv[i].key = sl_xstrndup(tags[i].key.p, tags[i].key.n);
        kv[i].value = sl_xstrndup(tags[i].value.p, tags[i].value.n);
    }
    return kv;
}

static void free_tags_kv(struct part_kv *kv, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free((char *)kv[i].key);
    }
    free_kv(kv, n);
}

static struct part_cookie cookie_of(struct gw_act_ctx *ctx)
{
    return (struct part_cookie){.ptr = ctx};
}

static void reply_queue_url(struct gw_act_ctx *ctx, const char *tenant, const char *name)
{
    struct sl_buf url;
    sl_buf_init(&url);
    gw__act_queue_url(ctx, tenant, name, &url);
    struct gw_sqs_reply reply;
    gw__act_reply_init(ctx, &reply);
    gw_sqs_reply_queue_url(&reply, (struct sl_slice){url.p, url.n});
    gw__act_finish(ctx, &reply);
    gw_sqs_reply_fini(&reply);
    sl_buf_free(&url);
}

/* A job's completion with nothing to answer but success. */
static void done_empty(struct part_cookie cookie, int status, const struct part_result *res)
{
    struct gw_act_ctx *ctx = cookie.ptr;
    (void)res;
    if (status != SL_OK) {
        gw__act_fail_storage(ctx, status);
        return;
    }
    gw__act_reply_empty(ctx);
}

/* Submit functions that refuse a job leave the completion unrun. */
static void submitted(struct gw_act_ctx *ctx, int rc)
{
    if (rc != SL_OK) {
        gw__act_fail_storage(ctx, rc);
    }
}

/* ---- the 60-second rules ---------------------------------------------------- */

/* SQS's two 60-second rules share one small table under purge_lock: one
 * PurgeQueue per queue (a mark keyed by the queue id), and no CreateQueue
 * of a name deleted less than 60 s ago (keyed by "tenant/name", with
 * queue_id 0). The table lives in memory: a restart forgets it. */
#define MARK_NAME_MAX (64 + 1 + GW_SQS_MAX_QUEUE_NAME_LEN + 1) /* "tenant/name" */

struct gw_purge_mark {
    uint64_t queue_id;
    char name[MARK_NAME_MAX];
    uint64_t at_ms;
};

/* True when the mark (queue_id, name) is younger than 60 s. When it is not
 * and record is set, records it as of now_ms. Expired marks are dropped
 * while scanning, so the table holds only the last minute's. */
static bool mark_recent(struct gw_api *api, uint64_t queue_id, const char *name, uint64_t now_ms,
                        bool record)
{
    bool recent = false;
    pthread_mutex_lock(&api->purge_lock);
    size_t kept = 0;
    for (size_t j = 0; j < api->purge_count; j++) {
        const struct gw_purge_mark *m = &api->purges[j];
        if (now_ms < m->at_ms || now_ms - m->at_ms >= PURGE_INTERVAL_MS) {
            continue; /* expired (or the wall clock stepped back) */
        }
        recent = recent || (m->queue_id == queue_id && strcmp(m->name, name) == 0);
        api->purges[kept++] = *m;
    }
    api->purge_count = kept;
    if (!recent && record) {
        if (api->purge_count == api->purge_cap) {
            api->purge_cap = api->purge_cap ? api->purge_cap * 2 : 16;
            api->purges = sl_xrealloc(api->purges, api->purge_cap * sizeof *api->purges);
        }
        struct gw_purge_mark *m = &api->purges[api->purge_count++];
        m->queue_id = queue_id;
        snprintf(m->name, sizeof m->name, "%s", name);
        m->at_ms = now_ms;
    }
    pthread_mutex_unlock(&api->purge_lock);
    return recent;
}

static void marks_init(struct gw_api *api)
{
    pthread_mutex_init(&api->purge_lock, NULL);
}

static void marks_free(struct gw_api *api)
{
    pthread_mutex_destroy(&api->purge_lock);
    free(api->purges);
    api->purges = NULL;
}

const struct gw_act_hooks gw__act_queue_hooks = {
    .api_init = marks_init,
    .api_free = marks_free,
};

/* ---- CreateQueue ---------------------------------------------------------- */

static void create_done(struct part_cookie cookie, int status, const struct part_result *res)
{
    struct gw_act_ctx *ctx = cookie.ptr;
    const struct gw_sqs_create_queue_req *r = &ctx->req.u.create_queue;
    if (status == SL_EEXIST && res->queue != NULL) {
        /* CreateQueue is idempotent for the same attributes; any attribute
         * given with another value than the queue has is a conflict. */
        const struct part_queue_info *qi = res->queue;
        for (size_t i = 0; i < r->attributes.count; i++) {
            const struct gw_sqs_qattr_value *v = &r->attributes.items[i];
            char *want = attr_canonical(v);
            const char *have = attr_compared(qi, v->attr);
            bool same = have != NULL ? strcmp(want, have) == 0 : want[0] == '\0';
            free(want);
            if (!same) {
                struct gw_sqs_err err;
                gw_sqs_err_set(&err, GW_SQS_E_QUEUE_NAME_EXISTS,
                               "A queue already exists with the same name and a different value "
                               "for attribute %s",
                               gw_sqs_qattr_name(v->attr));
                gw__act_fail(ctx, &err);
                return;
            }
        }
        reply_queue_url(ctx, qi->tenant, qi->name);
        return;
    }
    if (status != SL_OK) {
        gw__act_fail_storage(ctx, status);
        return;
    }
    reply_queue_url(ctx, res->queue->tenant, res->queue->name);
}

/* True when tenant already has limits.max_queues queues and name is not
 * one of them (CreateQueue of an existing queue stays idempotent). Counted
 * from the catalog at each CreateQueue (and each auto-creation), a cold
 * action; creates racing each other may pass the bound by as many as are
 * in flight. */
static bool over_queue_cap(const struct gw_act_ctx *ctx, const char *tenant, const char *name)
{
    struct part_queue_list list = {0};
    part_queue_list(ctx->api->engine, tenant, NULL, &list);
    bool over = list.count >= ctx->principal.tenant->limits.max_queues;
    for (size_t i = 0; over && i < list.count; i++) {
        over = strcmp(list.items[i].name, name) != 0;
    }
    part_queue_list_free(&list);
    return over;
}

void gw__act_create_queue(struct gw_act_ctx *ctx)
{
    const struct gw_sqs_create_queue_req *r = &ctx->req.u.create_queue;
    struct gw_sqs_err err;
    if (ctx->principal.tenant == NULL) {
        gw_sqs_err_set(&err, GW_SQS_E_ACCESS_DENIED,
                       "The admin credentials reach tenants' queues through their URLs; create "
                       "a queue with the tenant's own credentials.");
        gw__act_fail(ctx, &err);
        return;
    }
    const char *tenant = ctx->principal.tenant->name;
    char name[GW_SQS_MAX_QUEUE_NAME_LEN + 1];
    snprintf(name, sizeof name, "%.*s", (int)r->queue_name.n, r->queue_name.p);

    if (gw__act_queue_may_create(ctx, tenant, name, &err) != SL_OK) {
        gw__act_fail(ctx, &err);
        return;
    }
    struct part_queue_config cfg = part_queue_config_default();
    cfg.fifo = r->fifo;
    /* The source does not exist yet, so it cannot be refused by the DLQ's
     * allow policy by name; SQS checks that on SetQueueAttributes too. */
    if (apply_typed(ctx, tenant, name, &r->attributes, true, &cfg, &err) != SL_OK) {
        gw__act_fail(ctx, &err);
        return;
    }
    apply_idempotency(&r->attributes, NULL, &cfg);
    struct part_kv *attrs = attrs_to_kv(&r->attributes, false);
    struct part_kv *tags = tags_to_kv(r->tags, r->tag_count);
    int rc = part_queue_create(ctx->loop->part, tenant, name, &cfg, attrs, r->attributes.count,
                               tags, r->tag_count, cookie_of(ctx), create_done);
    free_kv(attrs, r->attributes.count);
    free_tags_kv(tags, r->tag_count);
    submitted(ctx, rc);
}

int gw__act_queue_may_create(struct gw_act_ctx *ctx, const char *tenant, const char *name,
                             struct gw_sqs_err *err)
{
    char key[MARK_NAME_MAX];
    snprintf(key, sizeof key, "%s/%s", tenant, name);
    if (mark_recent(ctx->api, 0, key, sl_wall_ms(), false)) {
        return gw_sqs_err_set(err, GW_SQS_E_QUEUE_DELETED_RECENTLY, NULL);
    }
    if (over_queue_cap(ctx, tenant, name)) {
        return gw_sqs_err_set(err, GW_SQS_E_OVER_LIMIT,
                              "Tenant %s has reached its limit of %u queues (limits.max_queues).",
                              tenant, ctx->principal.tenant->limits.max_queues);
    }
    return SL_OK;
}

/* ---- auto-creation ------------------------------------------------------------ */

struct auto_create {
    struct gw_act_ctx *ctx;
    gw_act_fn *resume;
};

static void auto_create_done(struct part_cookie cookie, int status, const struct part_result *res)
{
    struct auto_create *ac = cookie.ptr;
    struct gw_act_ctx *ctx = ac->ctx;
    gw_act_fn *resume = ac->resume;
    free(ac);
    /* SL_EEXIST: another send (or a CreateQueue) made it meanwhile */
    if (status != SL_OK && status != SL_EEXIST) {
        gw__act_fail_storage(ctx, status);
        return;
    }
    if (status == SL_OK && res->queue != NULL) {
        sl_log(SL_LOG_INFO, "actions", "queue %s/%s created by its first send (auto_create_queues)",
               res->queue->tenant, res->queue->name);
    }
    resume(ctx);
}

bool gw__act_auto_create_applies(const struct gw_act_ctx *ctx, const struct gw_sqs_queue_ref *ref)
{
    const struct cfg_tenant *own = ctx->principal.tenant;
    bool fifo = false;
    return own != NULL && own->auto_create_queues && !ctx->auto_created &&
           sl_slice_eq_cstr(ref->tenant, own->name) && gw_sqs_queue_name_valid(ref->name, &fifo);
}

bool gw__act_auto_create(struct gw_act_ctx *ctx, const struct gw_sqs_queue_ref *ref,
                         gw_act_fn *resume)
{
    const struct cfg_tenant *own = ctx->principal.tenant;
    bool fifo = false;
    if (!gw__act_auto_create_applies(ctx, ref)) {
        return false;
    }
    (void)gw_sqs_queue_name_valid(ref->name, &fifo);
    char name[GW_SQS_MAX_QUEUE_NAME_LEN + 1];
    snprintf(name, sizeof name, "%.*s", (int)ref->name.n, ref->name.p);
    struct gw_sqs_err err;
    int rc = gw__act_queue_may_create(ctx, own->name, name, &err);
    if (rc != SL_OK && err.code == GW_SQS_E_QUEUE_DELETED_RECENTLY) {
        return false; /* a queue just deleted does not come back by itself */
    }
    if (rc != SL_OK) {
        gw__act_fail(ctx, &err);
        return true;
    }
    ctx->auto_created = true;
    struct part_queue_config cfg = part_queue_config_default();
    cfg.fifo = fifo;
    /* the tenant's queue_defaults, typed and as stored attributes (which
     * GetQueueAttributes shows, as if CreateQueue had named them) */
    const struct cfg_queue_defaults *qd = &own->queue_defaults;
    uint32_t *typed[CFG_QD_N] = {
        [CFG_QD_VISIBILITY_TIMEOUT] = &cfg.visibility_timeout_s,
        [CFG_QD_DELAY_SECONDS] = &cfg.delay_s,
        [CFG_QD_MESSAGE_RETENTION_PERIOD] = &cfg.retention_s,
        [CFG_QD_MAXIMUM_MESSAGE_SIZE] = &cfg.max_message_size,
        [CFG_QD_RECEIVE_MESSAGE_WAIT_TIME_SECONDS] = &cfg.receive_wait_s,
    };
    struct part_kv kv[CFG_QD_N];
    char text[CFG_QD_N][16];
    size_t nkv = 0;
    for (int d = 0; d < CFG_QD_N; d++) {
        if (qd->set[d]) {
            *typed[d] = qd->value[d];
            snprintf(text[nkv], sizeof text[nkv], "%u", qd->value[d]);
            kv[nkv] =
                (struct part_kv){cfg_queue_default_name((enum cfg_queue_default)d), text[nkv]};
            nkv++;
        }
    }
    struct auto_create *ac = sl_xmalloc(sizeof *ac);
    *ac = (struct auto_create){ctx, resume};
    rc = part_queue_create(ctx->loop->part, own->name, name, &cfg, kv, nkv, NULL, 0,
                           (struct part_cookie){.ptr = ac}, auto_create_done);
    if (rc != SL_OK) {
        free(ac);
        gw__act_fail_storage(ctx, rc);
    }
    return true;
}

/* ---- GetQueueUrl ------------------------------------------------------------ */

void gw__act_get_queue_url(struct gw_act_ctx *ctx)
{
    const struct gw_sqs_get_queue_url_req *r = &ctx->req.u.get_queue_url;
    struct gw_sqs_queue_ref ref = {.name = r->queue_name};
    if (r->has_owner) {
        ref.tenant = r->owner;
    } else if (ctx->principal.tenant != NULL) {
        ref.tenant = sl_slice_cstr(ctx->principal.tenant->name);
    }
    struct gw_queue q;
    if (gw__act_resolve(ctx, &ref, &q) == SL_OK) {
        reply_queue_url(ctx, q.tenant, q.name);
    }
}

/* ---- ListQueues -------------------------------------------------------------- */

static int compare_ref_to_token(const struct part_queue_ref *q, const char *token)
{
    char key[64 + 1 + GW_SQS_MAX_QUEUE_NAME_LEN + 1];
    snprintf(key, sizeof key, "%s/%s", q->tenant, q->name);
    return strcmp(key, token);
}

static void list_reply(struct gw_act_ctx *ctx, const struct part_queue_list *list, size_t first,
                       bool paged, int32_t max_results)
{
    size_t cap = paged ? (size_t)max_results : LIST_QUEUES_CAP;
    size_t n = SL_MIN(list->count - first, cap);
    struct sl_buf *urls = sl_xcalloc(n + 1, sizeof *urls);
    struct sl_slice *slices = sl_xcalloc(n + 1, sizeof *slices);
    for (size_t i = 0; i < n; i++) {
        const struct part_queue_ref *q = &list->items[first + i];
        gw__act_queue_url(ctx, q->tenant, q->name, &urls[i]);
        slices[i] = (struct sl_slice){urls[i].p, urls[i].n};
    }
    /* NextToken only when paging was asked for and more remain (SQS). */
    char token[2 * (64 + 1 + GW_SQS_MAX_QUEUE_NAME_LEN + 1) + 4] = "";
    if (paged && first + n < list->count && n > 0) {
        const struct part_queue_ref *last = &list->items[first + n - 1];
        char key[64 + 1 + GW_SQS_MAX_QUEUE_NAME_LEN + 1];
        int len = snprintf(key, sizeof key, "%s/%s", last->tenant, last->name);
        sl_base64url_encode((const uint8_t *)key, (size_t)len, token);
    }
    struct gw_sqs_reply reply;
    gw__act_reply_init(ctx, &reply);
    gw_sqs_reply_queue_urls(&reply, slices, n, sl_slice_cstr(token));
    gw__act_finish(ctx, &reply);
    gw_sqs_reply_fini(&reply);
    for (size_t i = 0; i < n; i++) {
        sl_buf_free(&urls[i]);
    }
    free(urls);
    free(slices);
}

/* Where a page starts: after the queue the NextToken names. Returns false
 * for a token that is not one of ours. */
static bool page_start(const struct part_queue_list *list, bool has_token, struct sl_slice token,
                       size_t *first)
{
    *first = 0;
    if (!has_token) {
        return true;
    }
    uint8_t raw[160];
    size_t raw_len = 0;
    if (token.n == 0 || token.n > 200 ||
        sl_base64url_decode(token.p, token.n, raw, &raw_len) != SL_OK || raw_len >= sizeof raw) {
        return false;
    }
    raw[raw_len] = '\0';
    while (*first < list->count && compare_ref_to_token(&list->items[*first], (char *)raw) <= 0) {
        (*first)++;
    }
    return true;
}

void gw__act_list_queues(struct gw_act_ctx *ctx)
{
    const struct gw_sqs_list_queues_req *r = &ctx->req.u.list_queues;
    char prefix[GW_SQS_MAX_QUEUE_NAME_LEN + 1];
    snprintf(prefix, sizeof prefix, "%.*s", (int)SL_MIN(r->prefix.n, GW_SQS_MAX_QUEUE_NAME_LEN),
             r->has_prefix ? r->prefix.p : "");
    /* The admin's ListQueues lists every tenant's queues (docs/api.md). */
    const char *tenant = ctx->principal.tenant != NULL ? ctx->principal.tenant->name : NULL;
    struct part_queue_list list;
    part_queue_list(ctx->api->engine, tenant, prefix, &list);
    size_t first;
    if (!page_start(&list, r->has_next_token, r->next_token, &first)) {
        part_queue_list_free(&list);
        struct gw_sqs_err err;
        gw_sqs_err_set(&err, GW_SQS_E_INVALID_PARAMETER_VALUE, "Invalid NextToken value.");
        gw__act_fail(ctx, &err);
        return;
    }
    list_reply(ctx, &list, first, r->has_max_results, r->max_results);
    part_queue_list_free(&list);
}

/* ---- ListDeadLetterSourceQueues --------------------------------------------- */

void gw__act_list_dead_letter_source_queues(struct gw_act_ctx *ctx)
{
    const struct gw_sqs_list_dead_letter_source_queues_req *r =
        &ctx->req.u.list_dead_letter_source_queues;
    struct gw_queue q;
    if (gw__act_resolve(ctx, &r->queue, &q) != SL_OK) {
        return;
    }
    struct part_queue_list list;
    part_queue_dlq_sources(ctx->api->engine, q.id, &list);
    size_t first;
    if (!page_start(&list, r->has_next_token, r->next_token, &first)) {
        part_queue_list_free(&list);
        struct gw_sqs_err err;
        gw_sqs_err_set(&err, GW_SQS_E_INVALID_PARAMETER_VALUE, "Invalid NextToken value.");
        gw__act_fail(ctx, &err);
        return;
    }
    list_reply(ctx, &list, first, r->has_max_results, r->max_results);
    part_queue_list_free(&list);
}

/* ---- DeleteQueue, PurgeQueue ------------------------------------------------- */

static void delete_queue_done(struct part_cookie cookie, int status, const struct part_result *res)
{
    struct gw_act_ctx *ctx = cookie.ptr;
    if (status == SL_OK) {
        /* SQS blocks the name for 60 s after a delete. */
        const struct gw_sqs_queue_ref *ref = &ctx->req.u.delete_queue.queue;
        char key[MARK_NAME_MAX];
        snprintf(key, sizeof key, "%.*s/%.*s", (int)ref->tenant.n, ref->tenant.p, (int)ref->name.n,
                 ref->name.p);
        mark_recent(ctx->api, 0, key, sl_wall_ms(), true);
        /* Ids are never reused: a pause left behind would stay in ops.db
         * and the set for good. A failure to record it is logged there and
         * undone at the next start (gw_pause.c). */
        unsigned was, now;
        (void)gw__pause_set(ctx->api, ctx->queue_id, GW_PAUSE_ENQUEUE | GW_PAUSE_DEQUEUE, false,
                            &was, &now);
    }
    done_empty(cookie, status, res);
}

void gw__act_delete_queue(struct gw_act_ctx *ctx)
{
    struct gw_queue q;
    if (gw__act_resolve(ctx, &ctx->req.u.delete_queue.queue, &q) == SL_OK) {
        submitted(ctx, part_queue_delete(ctx->loop->part, q.id, cookie_of(ctx), delete_queue_done));
    }
}

void gw__act_purge_queue(struct gw_act_ctx *ctx)
{
    struct gw_queue q;
    if (gw__act_resolve(ctx, &ctx->req.u.purge_queue.queue, &q) != SL_OK) {
        return;
    }
    if (mark_recent(ctx->api, q.id, "", sl_wall_ms(), true)) {
        struct gw_sqs_err err;
        gw_sqs_err_set(&err, GW_SQS_E_PURGE_QUEUE_IN_PROGRESS,
                       "Only one PurgeQueue operation on %s is allowed every 60 seconds.", q.name);
        gw__act_fail(ctx, &err);
        return;
    }
    submitted(ctx, part_purge(ctx->loop->part, q.id, cookie_of(ctx), done_empty));
}

/* ---- GetQueueAttributes ------------------------------------------------------ */

void gw__act_get_queue_attributes(struct gw_act_ctx *ctx)
{
    const struct gw_sqs_get_queue_attributes_req *r = &ctx->req.u.get_queue_attributes;
    struct gw_queue q;
    if (gw__act_resolve(ctx, &r->queue, &q) != SL_OK) {
        return;
    }
    struct part_queue_info *qi = NULL;
    struct part_counts counts = {0};
    if (part_queue_get(ctx->api->engine, q.id, &qi) != SL_OK ||
        part_queue_counts(ctx->api->engine, q.id, PART_ALL_PARTITIONS, &counts) != SL_OK) {
        part_queue_info_free(qi);
        gw__act_fail_storage(ctx, SL_ENOTFOUND);
        return;
    }
    /* values live until the reply is written: numbers and the ARN in
     * per-attribute buffers */
    /* + SluicePaused, three below and the two filtered depths */
    struct gw_sqs_tag attrs[GW_SQS_QATTR__COUNT + 6];
    char nums[GW_SQS_QATTR__COUNT][32];
    size_t n_attrs = 0;
    struct sl_buf arn;
    sl_buf_init(&arn);
    for (int a = 0; a < GW_SQS_QATTR__COUNT; a++) {
        if ((r->wanted & (1u << a)) == 0) {
            continue;
        }
        const char *value = NULL;
        char *num = nums[a];
        switch ((enum gw_sqs_qattr)a) {
        case GW_SQS_QATTR_APPROXIMATE_NUMBER_OF_MESSAGES:
            snprintf(num, sizeof nums[a], "%lld", (long long)SL_MAX(counts.ready, 0));
            value = num;
            break;
        case GW_SQS_QATTR_APPROXIMATE_NUMBER_OF_MESSAGES_NOT_VISIBLE:
            snprintf(num, sizeof nums[a], "%lld", (long long)SL_MAX(counts.inflight, 0));
            value = num;
            break;
        case GW_SQS_QATTR_APPROXIMATE_NUMBER_OF_MESSAGES_DELAYED:
            snprintf(num, sizeof nums[a], "%lld", (long long)SL_MAX(counts.delayed, 0));
            value = num;
            break;
        case GW_SQS_QATTR_CREATED_TIMESTAMP:
            snprintf(num, sizeof nums[a], "%llu", (unsigned long long)(qi->created_ms / 1000));
            value = num;
            break;
        case GW_SQS_QATTR_LAST_MODIFIED_TIMESTAMP:
            snprintf(num, sizeof nums[a], "%llu", (unsigned long long)(qi->modified_ms / 1000));
            value = num;
            break;
        case GW_SQS_QATTR_QUEUE_ARN:
            gw__act_queue_arn(ctx, qi->tenant, qi->name, &arn);
            value = arn.p;
            break;
        default:
            value = attr_effective(qi, (enum gw_sqs_qattr)a);
            break;
        }
        if (value != NULL) {
            attrs[n_attrs++] = (struct gw_sqs_tag){
                sl_slice_cstr(gw_sqs_qattr_name((enum gw_sqs_qattr)a)), sl_slice_cstr(value)};
        }
    }
    /* One attribute of sluice's own beside SQS's, with "All" only and only
     * while an operator has the queue paused: clients that compare
     * attribute sets see SQS's exactly otherwise. */
    bool all = r->wanted == (1u << GW_SQS_QATTR__COUNT) - 1;
    unsigned paused = gw__pause_flags(ctx->api, q.id);
    if (paused != 0 && all) {
        attrs[n_attrs++] = (struct gw_sqs_tag){SL_SLICE_LIT("SluicePaused"),
                                               sl_slice_cstr(gw__pause_name(paused))};
    }
    /* Read-only, with "All" only, on the queues that opted in (docs/api.md,
     * "Beyond SQS"): what an operator looks for on them. */
    char held[32];
    char blocked[32];
    char lowest[32];
    if (all && qi->cfg.exclusive) {
        snprintf(held, sizeof held, "%lld", (long long)SL_MAX(counts.groups_inflight, 0));
        attrs[n_attrs++] =
            (struct gw_sqs_tag){SL_SLICE_LIT("SluiceHeldValues"), sl_slice_cstr(held)};
        snprintf(blocked, sizeof blocked, "%lld", (long long)SL_MAX(counts.exclusive_blocked, 0));
        attrs[n_attrs++] =
            (struct gw_sqs_tag){SL_SLICE_LIT("SluiceBlockedMessages"), sl_slice_cstr(blocked)};
    }
    if (all && qi->cfg.priority_order && counts.best_priority != INT64_MAX) {
        snprintf(lowest, sizeof lowest, "%lld", (long long)counts.best_priority);
        attrs[n_attrs++] =
            (struct gw_sqs_tag){SL_SLICE_LIT("SluiceLowestReadyPriority"), sl_slice_cstr(lowest)};
    }
    /* Asked for by name, with its filter (docs/api.md, "Filtered
     * receives"): counted through the filter index on this thread, as an
     * operator's peek reads. */
    char fready[32];
    char finflight[32];
    if (r->filter.count > 0) {
        struct part_filter_pair pairs[PART_FILTER_MAX];
        struct gw_sqs_err err;
        int rc = gw__beyond_filter_check(ctx, q.id, qi->cfg.filtered, &r->filter, "AttributeNames",
                                         pairs, &err);
        int64_t ready = 0, inflight = 0;
        if (rc == SL_OK) {
            rc = part_filter_depth(ctx->api->engine, q.id, pairs, r->filter.count, &ready,
                                   &inflight, NULL);
            if (rc != SL_OK) {
                gw_sqs_err_set(&err, GW_SQS_E_QUEUE_DOES_NOT_EXIST, NULL);
            }
        }
        if (rc != SL_OK) {
            part_queue_info_free(qi);
            sl_buf_free(&arn);
            gw__act_fail(ctx, &err);
            return;
        }
        snprintf(fready, sizeof fready, "%lld", (long long)ready);
        snprintf(finflight, sizeof finflight, "%lld", (long long)inflight);
        if (r->want_filtered_ready) {
            attrs[n_attrs++] =
                (struct gw_sqs_tag){SL_SLICE_LIT("SluiceFilteredMessages"), sl_slice_cstr(fready)};
        }
        if (r->want_filtered_inflight) {
            attrs[n_attrs++] = (struct gw_sqs_tag){SL_SLICE_LIT("SluiceFilteredMessagesNotVisible"),
                                                   sl_slice_cstr(finflight)};
        }
    }
    struct gw_sqs_reply reply;
    gw__act_reply_init(ctx, &reply);
    gw_sqs_reply_string_map(&reply, attrs, n_attrs);
    part_queue_info_free(qi);
    sl_buf_free(&arn);
    gw__act_finish(ctx, &reply);
    gw_sqs_reply_fini(&reply);
}

/* ---- SetQueueAttributes ------------------------------------------------------- */

void gw__act_set_queue_attributes(struct gw_act_ctx *ctx)
{
    const struct gw_sqs_set_queue_attributes_req *r = &ctx->req.u.set_queue_attributes;
    struct gw_queue q;
    if (gw__act_resolve(ctx, &r->queue, &q) != SL_OK) {
        return;
    }
    struct part_queue_config cfg = q.cfg;
    struct gw_sqs_err err;
    if (apply_typed(ctx, q.tenant, q.name, &r->attributes, false, &cfg, &err) != SL_OK) {
        gw__act_fail(ctx, &err);
        return;
    }
    struct part_queue_info *stored = NULL;
    if (gw_sqs_qattrs_find(&r->attributes, GW_SQS_QATTR_SLUICE_IDEMPOTENT_SENDS) != NULL) {
        (void)part_queue_get(ctx->api->engine, q.id, &stored); /* NULL: the default window */
    }
    apply_idempotency(&r->attributes, stored, &cfg);
    part_queue_info_free(stored);
    struct part_kv *attrs = attrs_to_kv(&r->attributes, true);
    int rc = part_queue_set_attributes(ctx->loop->part, q.id, &cfg, attrs, r->attributes.count,
                                       cookie_of(ctx), done_empty);
    free_kv(attrs, r->attributes.count);
    submitted(ctx, rc);
}

/* ---- tags ---------------------------------------------------------------------- */

/* How many tags the queue would have with these merged in (a key it has
 * already is overwritten, not added). */
static size_t tags_after_merge(struct gw_act_ctx *ctx, uint64_t queue_id,
                               const struct gw_sqs_tag *add, size_t n)
{
    struct part_queue_info *qi = NULL;
    if (part_queue_get(ctx->api->engine, queue_id, &qi) != SL_OK) {
        return n; /* the write itself will find the queue gone */
    }
    size_t total = qi->tag_count;
    for (size_t i = 0; i < n; i++) {
        bool known = false;
        for (size_t j = 0; j < qi->tag_count && !known; j++) {
            known = sl_slice_eq_cstr(add[i].key, qi->tags[j].key);
        }
        total += !known;
    }
    part_queue_info_free(qi);
    return total;
}

void gw__act_tag_queue(struct gw_act_ctx *ctx)
{
    const struct gw_sqs_tag_queue_req *r = &ctx->req.u.tag_queue;
    struct gw_queue q;
    if (gw__act_resolve(ctx, &r->queue, &q) != SL_OK) {
        return;
    }
    if (tags_after_merge(ctx, q.id, r->tags, r->tag_count) > GW_SQS_MAX_TAGS) {
        struct gw_sqs_err err;
        gw_sqs_err_set(&err, GW_SQS_E_INVALID_PARAMETER_VALUE,
                       "Too many tags: a queue has at most %u tags.", GW_SQS_MAX_TAGS);
        gw__act_fail(ctx, &err);
        return;
    }
    struct part_kv *tags = tags_to_kv(r->tags, r->tag_count);
    int rc = part_queue_tag(ctx->loop->part, q.id, tags, r->tag_count, cookie_of(ctx), done_empty);
    free_tags_kv(tags, r->tag_count);
    submitted(ctx, rc);
}

void gw__act_untag_queue(struct gw_act_ctx *ctx)
{
    const struct gw_sqs_untag_queue_req *r = &ctx->req.u.untag_queue;
    struct gw_queue q;
    if (gw__act_resolve(ctx, &r->queue, &q) != SL_OK) {
        return;
    }
    char **keys = sl_xcalloc(r->key_count + 1, sizeof *keys);
    for (size_t i = 0; i < r->key_count; i++) {
        keys[i] = sl_xstrndup(r->keys[i].p, r->keys[i].n);
    }
    int rc = part_queue_untag(ctx->loop->part, q.id, (const char *const *)keys, r->key_count,
                              cookie_of(ctx), done_empty);
    for (size_t i = 0; i < r->key_count; i++) {
        free(keys[i]);
    }
    free(keys);
    submitted(ctx, rc);
}

void gw__act_list_queue_tags(struct gw_act_ctx *ctx)
{
    struct gw_queue q;
    if (gw__act_resolve(ctx, &ctx->req.u.list_queue_tags.queue, &q) != SL_OK) {
        return;
    }
    struct part_queue_info *qi = NULL;
    if (part_queue_get(ctx->api->engine, q.id, &qi) != SL_OK) {
        gw__act_fail_storage(ctx, SL_ENOTFOUND);
        return;
    }
    struct gw_sqs_tag *tags = sl_xcalloc(qi->tag_count + 1, sizeof *tags);
    for (size_t i = 0; i < qi->tag_count; i++) {
        tags[i].key = sl_slice_cstr(qi->tags[i].key);
        tags[i].value = sl_slice_cstr(qi->tags[i].value);
    }
    struct gw_sqs_reply reply;
    gw__act_reply_init(ctx, &reply);
    gw_sqs_reply_string_map(&reply, tags, qi->tag_count);
    free(tags);
    part_queue_info_free(qi);
    gw__act_finish(ctx, &reply);
    gw_sqs_reply_fini(&reply);
}
