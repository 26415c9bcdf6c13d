/*
 * gw_admin_read.c -- the admin API's reads: GET /tenants (each tenant's
 * effective limits and usage), GET /api/queues (counts, DLQ links and
 * pause state of every queue), GET /api/queues/T/Q (the same with its
 * attributes and tags) and GET /api/partitions (each writer's health and
 * commit figures). Reads only the catalog's in-memory state and counters:
 * nothing here touches SQLite.
 *
 * Stack: above gw_admin_util.c and gw_pause.c. Loop threads.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gw_admin_routes.h"
#include "gw_act.h"

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
static void add_keyed_limits(struct gw_admin_req *r, const struct cfg_tenant *t,
                             struct pol_tenant_state *st, uint64_t now_ns, json_t *limits,
                             json_t *usage)
{
    json_t *queues = json_object(), *queue_tokens = json_object();
    json_t *actions = json_object(), *action_tokens = json_object();
    for (size_t i = 0; i < t->limits.queue_rate_count; i++) {
        const struct cfg_queue_rate *q = &t->limits.queue_rates[i];
        struct pol_gcra *g =
            st != NULL ? pol_limiter_queue_rate(r->api->limiter, st, q->queue, strlen(q->queue))
                       : NULL;
        json_object_set_new(queues, q->queue, rate_json(&q->rate));
        json_object_set_new(queue_tokens, q->queue, json_integer(tokens_now(g, now_ns)));
    }
    for (int a = 0; a < CFG_ACTION_KEY_COUNT; a++) {
        const struct cfg_rate *rate = &t->limits.actions[a];
        const char *name = cfg_action_key_name((enum cfg_action_key)a);
        if (rate->requests_per_second > 0) {
            struct pol_gcra *g =
                st != NULL ? pol_tenant_action_rate(st, (enum cfg_action_key)a) : NULL;
            json_object_set_new(actions, name, rate_json(rate));
            json_object_set_new(action_tokens, name, json_integer(tokens_now(g, now_ns)));
        }
    }
    json_object_set_new(limits, "queues", queues);
    json_object_set_new(limits, "actions", actions);
    json_object_set_new(usage, "queue_tokens_available", queue_tokens);
    json_object_set_new(usage, "action_tokens_available", action_tokens);
}

static json_t *tenant_json(struct gw_admin_req *r, const struct cfg_tenant *t, uint64_t now_ns)
{
    int64_t backlog = 0, inflight = 0;
    part_tenant_counts(r->api->engine, t->name, &backlog, &inflight);
    struct pol_tenant_state *st = pol_limiter_find(r->api->limiter, t->name, strlen(t->name));
    uint64_t tokens = st != NULL ? pol_gcra_available(&st->rate, now_ns) : 0;
    uint32_t polls = st != NULL ? pol_slots_used(&st->long_polls) : 0;
    uint32_t requests = st != NULL ? pol_slots_used(&st->requests) : 0;
    const struct cfg_limits *lim = &t->limits;
    json_t *o =
        json_pack("{s:s, s:{s:f, s:I, s:I, s:I, s:I, s:I, s:I}, s:s, s:{s:I, s:I},"
                  " s:{s:I, s:I, s:I, s:I, s:I}}",
                  "name", t->name, "limits", "requests_per_second", lim->requests_per_second,
                  "burst", (json_int_t)lim->burst, "max_inflight", (json_int_t)lim->max_inflight,
                  "max_backlog", (json_int_t)lim->max_backlog, "max_long_polls",
                  (json_int_t)lim->max_long_polls, "max_queues", (json_int_t)lim->max_queues,
                  "max_concurrent_requests", (json_int_t)lim->max_concurrent_requests, "on_excess",
                  t->on_excess == CFG_EXCESS_SPILL ? "spill" : "reject", "spill", "delay_seconds",
                  (json_int_t)t->spill.delay_seconds, "aged_after_seconds",
                  (json_int_t)t->spill.aged_after_seconds, "usage", "tokens_available",
                  (json_int_t)SL_MIN(tokens, (uint64_t)INT64_MAX), "long_polls", (json_int_t)polls,
                  "requests_in_progress", (json_int_t)requests, "backlog", (json_int_t)backlog,
                  "inflight", (json_int_t)inflight);
    add_keyed_limits(r, t, st, now_ns, json_object_get(o, "limits"), json_object_get(o, "usage"));
    return o;
}

/* The tenant's shard: the k partitions its sends go to, in shard order,
 * placed as the SQS actions place them (gw__act_shard: same key, P and k),
 * so an operator sees which tenants share a partition. */
static json_t *shard_json(struct gw_admin_req *r, const struct cfg_snapshot *snap,
                          const struct cfg_tenant *t)
{
    uint32_t partitions;
    uint32_t k = gw__act_shard_k(r->api, snap, &partitions);
    uint32_t shard[GW_MAX_SHARD];
    json_t *list = json_array();
    if (pol_shard_place(part_engine_key(r->api->engine), PART_KEY_LEN, t->name, strlen(t->name),
                        partitions, k, shard) == SL_OK) {
        for (uint32_t i = 0; i < k; i++) {
            json_array_append_new(list, json_integer(shard[i]));
        }
    }
    return list;
}

void gw__admin_get_tenants(struct gw_admin_req *r)
{
    const struct cfg_snapshot *snap = r->snap;
    uint64_t now_ns = sl_mono_ns();
    json_t *list = json_array();
    for (size_t i = 0; i < snap->tenant_count; i++) {
        json_t *tenant = tenant_json(r, &snap->tenants[i], now_ns);
        json_object_set_new(tenant, "partitions", shard_json(r, snap, &snap->tenants[i]));
        json_array_append_new(list, tenant);
    }
    gw__admin_json(r, 200, json_pack("{s:o}", "tenants", list));
}

/* ---- queues ------------------------------------------------------------------------ */

/* "T/Q" names of the queues in l (borrowed), as a JSON array. */
static json_t *names_json(const struct part_queue_list *l)
{
    json_t *a = json_array();
    for (size_t i = 0; i < l->count; i++) {
        json_array_append_new(a, json_string(l->items[i].name));
    }
    return a;
}

static void queue_url(const struct cfg_snapshot *snap, const char *tenant, const char *name,
                      struct sl_buf *out)
{
    const char *host = snap->listen.host;
    bool v6 = strchr(host, ':') != NULL;
    sl_buf_printf(out, "%s://%s%s%s:%u/%s/%s", snap->tls.enabled ? "https" : "http", v6 ? "[" : "",
                  host, v6 ? "]" : "", snap->listen.port, tenant, name);
}

/* Which queues name which as their dead-letter queue, for a whole list at
 * once: (target id, source name) pairs sorted by target, from one pass over
 * the typed configs, so /api/queues costs a binary search per queue
 * instead of a scan of the catalog per queue. */
struct dlq_pair {
    uint64_t target;
    const char *source; /* borrowed from the queue list */
};

struct dlq_index {
    struct dlq_pair *pairs;
    size_t n;
};

static int pair_cmp(const void *a, const void *b)
{
    const struct dlq_pair *x = a, *y = b;
    if (x->target != y->target) {
        return x->target < y->target ? -1 : 1;
    }
    return strcmp(x->source, y->source);
}

static void dlq_index_build(struct part_engine *e, const struct part_queue_list *all,
                            struct dlq_index *ix)
{
    ix->pairs = sl_xcalloc(all->count + 1, sizeof *ix->pairs);
    ix->n = 0;
    for (size_t i = 0; i < all->count; i++) {
        struct part_queue_config cfg;
        uint64_t id;
        if (part_queue_find(e, all->items[i].tenant, all->items[i].name, &id, &cfg) == SL_OK &&
            cfg.dlq_target_id != 0) {
            ix->pairs[ix->n++] = (struct dlq_pair){cfg.dlq_target_id, all->items[i].name};
        }
    }
    qsort(ix->pairs, ix->n, sizeof *ix->pairs, pair_cmp);
}

/* The names of the queues whose DLQ is id, as a JSON array. */
static json_t *dlq_of_indexed(const struct dlq_index *ix, uint64_t id)
{
    size_t lo = 0, hi = ix->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ix->pairs[mid].target < id) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    json_t *a = json_array();
    for (; lo < ix->n && ix->pairs[lo].target == id; lo++) {
        json_array_append_new(a, json_string(ix->pairs[lo].source));
    }
    return a;
}

static json_t *queue_json(struct gw_admin_req *r, uint64_t id, bool full,
                          const struct dlq_index *ix);

json_t *gw__admin_queue_json(struct gw_admin_req *r, uint64_t id, bool full)
{
    return queue_json(r, id, full, NULL);
}

/* ix: the DLQ links of every queue, or NULL to look this one's up. */
static json_t *queue_json(struct gw_admin_req *r, uint64_t id, bool full,
                          const struct dlq_index *ix)
{
    struct part_engine *e = r->api->engine;
    struct part_queue_info *qi = NULL;
    struct part_counts c = {0};
    if (part_queue_get(e, id, &qi) != SL_OK ||
        part_queue_counts(e, id, PART_ALL_PARTITIONS, &c) != SL_OK) {
        part_queue_info_free(qi);
        return NULL;
    }
    struct sl_buf url, arn;
    sl_buf_init(&url);
    sl_buf_init(&arn);
    queue_url(r->snap, qi->tenant, qi->name, &url);
    sl_buf_printf(&arn, "arn:aws:sqs:%s:%s:%s", r->snap->region, qi->tenant, qi->name);
    uint64_t now = sl_wall_ms();
    uint64_t oldest_s =
        c.oldest_ready_ms != 0 && now > c.oldest_ready_ms ? (now - c.oldest_ready_ms) / 1000 : 0;
    json_t *dlq_of;
    if (ix != NULL) {
        dlq_of = dlq_of_indexed(ix, id);
    } else {
        struct part_queue_list sources;
        part_queue_dlq_sources(e, id, &sources);
        dlq_of = names_json(&sources);
        part_queue_list_free(&sources);
    }
    json_t *target = json_null();
    struct part_queue_info *dlq = NULL;
    if (qi->cfg.dlq_target_id != 0 && part_queue_get(e, qi->cfg.dlq_target_id, &dlq) == SL_OK) {
        target = json_string(dlq->name);
        part_queue_info_free(dlq);
    }
    unsigned paused = gw__pause_flags(r->api, id);
    double first_attempt_s = (double)gw_metrics_queue_first_attempt(r->api->metrics, id) / 1e3;
    json_t *o =
        json_pack("{s:s, s:s, s:s, s:s, s:b, s:I, s:I, s:I, s:I, s:I, s:f, s:o, s:o, s:{s:b, s:b}}",
                  "tenant", qi->tenant, "name", qi->name, "url", url.p, "arn", arn.p, "fifo",
                  qi->cfg.fifo, "ready", (json_int_t)SL_MAX(c.ready, 0), "inflight",
                  (json_int_t)SL_MAX(c.inflight, 0), "delayed", (json_int_t)SL_MAX(c.delayed, 0),
                  "overflow", (json_int_t)SL_MAX(c.overflow_ready + c.overflow_delayed, 0),
                  "oldest_age_s", (json_int_t)oldest_s, "age_of_first_attempt_s", first_attempt_s,
                  "dlq_of", dlq_of, "redrive_target", target, "paused", "enqueue",
                  (paused & GW_PAUSE_ENQUEUE) != 0, "dequeue", (paused & GW_PAUSE_DEQUEUE) != 0);
    sl_buf_free(&url);
    sl_buf_free(&arn);
    if (full) {
        json_t *attrs = json_object(), *tags = json_object();
        char num[32];
        const struct {
            const char *name;
            uint64_t value;
        } typed[] = {
            {"VisibilityTimeout", qi->cfg.visibility_timeout_s},
            {"DelaySeconds", qi->cfg.delay_s},
            {"MessageRetentionPeriod", qi->cfg.retention_s},
            {"MaximumMessageSize", qi->cfg.max_message_size},
            {"ReceiveMessageWaitTimeSeconds", qi->cfg.receive_wait_s},
            {"CreatedTimestamp", qi->created_ms / 1000},
            {"LastModifiedTimestamp", qi->modified_ms / 1000},
        };
        for (size_t i = 0; i < SL_ARRAY_LEN(typed); i++) {
            snprintf(num, sizeof num, "%" PRIu64, typed[i].value);
            json_object_set_new(attrs, typed[i].name, json_string(num));
        }
        /* the stored attributes (RedrivePolicy, FIFO settings, ...) as set */
        for (size_t i = 0; i < qi->attr_count; i++) {
            json_object_set_new(attrs, qi->attrs[i].key, json_string(qi->attrs[i].value));
        }
        for (size_t i = 0; i < qi->tag_count; i++) {
            json_object_set_new(tags, qi->tags[i].key, json_string(qi->tags[i].value));
        }
        if (paused != 0) {
            json_object_set_new(attrs, "SluicePaused", json_string(gw__pause_name(paused)));
        }
        /* what GetQueueAttributes All adds on the queues that opted in */
        if (qi->cfg.exclusive) {
            snprintf(num, sizeof num, "%lld", (long long)SL_MAX(c.groups_inflight, 0));
            json_object_set_new(attrs, "SluiceHeldValues", json_string(num));
            snprintf(num, sizeof num, "%lld", (long long)SL_MAX(c.exclusive_blocked, 0));
            json_object_set_new(attrs, "SluiceBlockedMessages", json_string(num));
        }
        if (qi->cfg.priority_order && c.best_priority != INT64_MAX) {
            snprintf(num, sizeof num, "%lld", (long long)c.best_priority);
            json_object_set_new(attrs, "SluiceLowestReadyPriority", json_string(num));
        }
        json_object_set_new(o, "attributes", attrs);
        json_object_set_new(o, "tags", tags);
    }
    part_queue_info_free(qi);
    return o;
}

void gw__admin_get_queues(struct gw_admin_req *r)
{
    char tenant[80];
    const char *only = gw__admin_query(r, "tenant", tenant, sizeof tenant);
    json_t *list = json_array();
    struct part_queue_list all;
    part_queue_list(r->api->engine, only, NULL, &all);
    struct dlq_index ix;
    dlq_index_build(r->api->engine, &all, &ix);
    for (size_t i = 0; i < all.count; i++) {
        /* Queues of tenants no longer configured stay in the catalog but
         * are out of reach, as they are for the SQS API. */
        if (cfg_find_tenant(r->snap, all.items[i].tenant, strlen(all.items[i].tenant)) == NULL) {
            continue;
        }
        json_t *q = queue_json(r, all.items[i].id, false, &ix);
        if (q != NULL) {
            json_array_append_new(list, q);
        }
    }
    free(ix.pairs);
    part_queue_list_free(&all);
    gw__admin_json(r, 200, json_pack("{s:o}", "queues", list));
}

void gw__admin_get_queue(struct gw_admin_req *r)
{
    struct gw_queue q;
    if (gw__admin_queue(r, r->seg[1], r->seg[2], &q) != SL_OK) {
        return;
    }
    json_t *o = gw__admin_queue_json(r, q.id, true);
    if (o == NULL) {
        gw__admin_fail_storage(r, SL_ENOTFOUND, "The queue");
        return;
    }
    /* ?filter=KEY=VALUE: how many messages carrying it are ready and in
     * flight (docs/api.md, "Filtered receives"), as GetQueueAttributes'
     * SluiceFilteredMessages count them */
    char filter[600];
    if (gw__admin_query(r, "filter", filter, sizeof filter) != NULL) {
        const char *eq = strchr(filter, '=');
        int64_t ready = 0;
        int64_t inflight = 0;
        int rc = SL_EINVAL;
        if (eq != NULL) {
            struct part_filter_pair pair = {{filter, (size_t)(eq - filter)}, sl_slice_cstr(eq + 1)};
            rc = part_filter_depth(r->api->engine, q.id, &pair, 1, &ready, &inflight, NULL);
        }
        if (rc != SL_OK) {
            json_decref(o);
            gw__admin_fail(r, 400, "BadRequest",
                           "filter must be KEY=VALUE, KEY a message attribute the queue indexes "
                           "(its SluiceFilterKeys).");
            return;
        }
        json_object_set_new(o, "filtered",
                            json_pack("{s:s, s:I, s:I}", "filter", filter, "ready",
                                      (json_int_t)ready, "inflight", (json_int_t)inflight));
    }
    gw__admin_json(r, 200, o);
}

/* ---- GET /api/partitions ------------------------------------------------------------ */

void gw__admin_get_partitions(struct gw_admin_req *r)
{
    struct part_engine *e = r->api->engine;
    uint32_t n = part_engine_partitions(e);
    /* Ready and in flight per partition: the catalog counts per queue,
     * so sum every queue's share. */
    int64_t *ready = sl_xcalloc(n, sizeof *ready);
    int64_t *inflight = sl_xcalloc(n, sizeof *inflight);
    struct part_queue_list all;
    part_queue_list(e, NULL, NULL, &all);
    for (size_t i = 0; i < all.count; i++) {
        for (uint32_t p = 0; p < n; p++) {
            struct part_counts c;
            if (part_queue_counts(e, all.items[i].id, p, &c) == SL_OK) {
                ready[p] += c.ready;
                inflight[p] += c.inflight;
            }
        }
    }
    part_queue_list_free(&all);
    json_t *list = json_array();
    for (uint32_t p = 0; p < n; p++) {
        struct part_partition_stats st = {0};
        part_engine_stats(e, p, &st);
        double commits = (double)st.commits;
        json_array_append_new(
            list, json_pack("{s:I, s:b, s:I, s:I, s:I, s:f, s:f, s:f, s:I, s:I, s:I}", "index",
                            (json_int_t)p, "ok", part_engine_partition_ok(e, p), "queued_jobs",
                            (json_int_t)part_engine_partition_queued(e, p), "commits",
                            (json_int_t)st.commits, "jobs", (json_int_t)st.jobs, "batch_size_avg",
                            commits > 0 ? (double)st.jobs / commits : 0.0, "commit_latency_ms_avg",
                            commits > 0 ? (double)st.commit_us / commits / 1000.0 : 0.0,
                            "batch_latency_ms_avg",
                            commits > 0 ? (double)st.batch_us / commits / 1000.0 : 0.0, "timers",
                            (json_int_t)st.timers, "ready", (json_int_t)SL_MAX(ready[p], 0),
                            "inflight", (json_int_t)SL_MAX(inflight[p], 0)));
    }
    free(ready);
    free(inflight);
    /* cluster: whether GET /api/cluster has more to show (the console asks
     * it only then) */
    gw__admin_json(r, 200,
                   json_pack("{s:o, s:b}", "partitions", list, "cluster",
                             part_engine_node_id(r->api->engine) != 0));
}
