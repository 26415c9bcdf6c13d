/*
 * gw_metrics.c -- request counters per tenant (lock-free on the hot path)
 * and the Prometheus text rendering of GET /metrics. See gw_act.h.
 *
 * The tenant and queue tables are open addressing over atomic pointers. A lookup
 * probes without a lock; a miss takes grow_lock, probes again and inserts.
 * When the table passes half full it is replaced by one twice the size;
 * the old table stays allocated (chained through `older`) until
 * gw_metrics_free, so a reader still probing it is never left dangling --
 * at worst it misses and takes the lock. Tenant blocks are never freed
 * before gw_metrics_free either: counters of a tenant removed by a reload
 * keep counting up, as Prometheus counters must. A deleted queue's block
 * stays too (its series just stops being rendered): a few hundred bytes
 * per queue ever used, which a restart returns.
 *
 * Every counter is a relaxed atomic: counts need no ordering, and a
 * scrape reads each number on its own (a scrape racing a request may see
 * the request's count without its duration; the next scrape agrees).
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfg.h"
#include "gw_act.h"
#include "part.h"
#include "pol.h"

#define ACTION_SLOTS (GW_SQS_ACT__COUNT + 1) /* + "never routed" */
#define HIST_MAX_BOUNDS 16
#define TABLE_INITIAL 64

/* Histogram upper bounds in microseconds (le="..." in seconds). */
static const uint64_t duration_bounds_us[] = {
    500,    1000,   2500,    5000,    10000,   25000,    50000,    100000,
    250000, 500000, 1000000, 2500000, 5000000, 10000000, 20000000,
};
static const uint64_t age_bounds_us[] = {
    100000,    500000,    1000000,    5000000,    10000000,    30000000,    60000000,
    300000000, 900000000, 1800000000, 3600000000, 21600000000, 86400000000,
};

_Static_assert(PART_WAIT_BUCKETS - 1 <= HIST_MAX_BOUNDS, "the writer wait histogram fits");

struct hist_spec {
    const uint64_t *bounds_us;
    size_t n;
};
static const struct hist_spec duration_spec = {duration_bounds_us,
                                               SL_ARRAY_LEN(duration_bounds_us)};
static const struct hist_spec age_spec = {age_bounds_us, SL_ARRAY_LEN(age_bounds_us)};

/* Non-cumulative bucket counts (the last is +Inf) and the sum; cumulated
 * when rendered. */
struct hist {
    _Atomic uint64_t bucket[HIST_MAX_BOUNDS + 1];
    _Atomic uint64_t sum_us;
};

/* What every block of a block table starts with: its key. */
struct block {
    char name[72];
};

struct tenant_block {
    struct block head; /* the tenant's name */
    _Atomic uint64_t requests[ACTION_SLOTS][GW_SQS_E__COUNT];
    _Atomic uint64_t spilled;
    struct hist first_receive_age;
    struct hist receive_latency;
};

/* Per queue the outcome is only its class: a queue block stays small
 * (tenants have few blocks, queues may have many). */
enum queue_outcome { QO_OK, QO_THROTTLED, QO_CLIENT_ERROR, QO_SERVER_ERROR, QO_COUNT_ };

struct queue_block {
    struct block head; /* the queue id, in decimal */
    _Atomic uint64_t requests[GW_SQS_ACT__COUNT][QO_COUNT_];
    _Atomic uint64_t first_attempt_ms; /* latest AgeOfFirstAttempt seen */
    _Atomic uint64_t empty_receives;   /* ReceiveMessage answered with no message */
    _Atomic uint64_t deduplicated;     /* FIFO sends answered as duplicates */
};

struct table {
    size_t cap; /* power of two */
    _Atomic(struct block *) *slots;
    struct table *older;
};

/* An insert-only open-addressing table of blocks: lookups are lock-free,
 * inserts take grow_lock, a table that grows keeps the older one (readers
 * may still be probing it) until the end. */
struct block_table {
    _Atomic(struct table *) table;
    pthread_mutex_t grow_lock;
    size_t count; /* guarded by grow_lock */
};

struct gw_metrics {
    struct block_table tenants;
    struct block_table queues;
    struct hist duration[ACTION_SLOTS];
    _Atomic uint64_t admin_auth_failed;    /* wrong or missing admin credentials */
    _Atomic uint64_t admin_auth_throttled; /* refused unchecked: too many failures */
};

/* ---- the tables ------------------------------------------------------------ */

static uint64_t hash_name(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s != '\0'; s++) {
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    }
    return h;
}

static struct table *table_new(size_t cap, struct table *older)
{
    struct table *t = sl_xcalloc(1, sizeof(*t));
    t->cap = cap;
    t->slots = sl_xcalloc(cap, sizeof(*t->slots));
    t->older = older;
    return t;
}

/* The block of name in t, or NULL; *free_slot gets the first empty slot. */
static struct block *table_probe(struct table *t, const char *name, uint64_t h, size_t *free_slot)
{
    size_t mask = t->cap - 1;
    for (size_t i = 0; i < t->cap; i++) {
        size_t at = (h + i) & mask;
        struct block *b = atomic_load_explicit(&t->slots[at], memory_order_acquire);
        if (b == NULL) {
            *free_slot = at;
            return NULL;
        }
        if (strcmp(b->name, name) == 0) {
            return b;
        }
    }
    *free_slot = SIZE_MAX; /* cannot happen below half full */
    return NULL;
}

static void table_put(struct table *t, struct block *b)
{
    size_t slot;
    SL_ASSERT(table_probe(t, b->name, hash_name(b->name), &slot) == NULL && slot != SIZE_MAX);
    atomic_store_explicit(&t->slots[slot], b, memory_order_release);
}

static void block_table_init(struct block_table *bt)
{
    atomic_init(&bt->table, table_new(TABLE_INITIAL, NULL));
    pthread_mutex_init(&bt->grow_lock, NULL);
}

static void block_table_fini(struct block_table *bt)
{
    struct table *t = atomic_load(&bt->table);
    for (size_t i = 0; i < t->cap; i++) {
        free(atomic_load(&t->slots[i]));
    }
    while (t != NULL) {
        struct table *older = t->older;
        free(t->slots);
        free(t);
        t = older;
    }
    pthread_mutex_destroy(&bt->grow_lock);
}

/* The block named name, made zeroed (size bytes) on first use. */
static struct block *block_get(struct block_table *bt, const char *name, size_t size)
{
    uint64_t h = hash_name(name);
    size_t slot;
    struct table *t = atomic_load_explicit(&bt->table, memory_order_acquire);
    struct block *b = table_probe(t, name, h, &slot);
    if (b != NULL) {
        return b;
    }
    pthread_mutex_lock(&bt->grow_lock);
    t = atomic_load_explicit(&bt->table, memory_order_acquire);
    b = table_probe(t, name, h, &slot);
    if (b == NULL) {
        b = sl_xcalloc(1, size);
        snprintf(b->name, sizeof(b->name), "%s", name);
        if ((bt->count + 1) * 2 > t->cap) {
            struct table *bigger = table_new(t->cap * 2, t);
            for (size_t i = 0; i < t->cap; i++) {
                struct block *old = atomic_load_explicit(&t->slots[i], memory_order_relaxed);
                if (old != NULL) {
                    table_put(bigger, old);
                }
            }
            table_put(bigger, b);
            atomic_store_explicit(&bt->table, bigger, memory_order_release);
        } else {
            table_put(t, b);
        }
        bt->count++;
    }
    pthread_mutex_unlock(&bt->grow_lock);
    return b;
}

static struct tenant_block *tenant_get(struct gw_metrics *m, const char *name)
{
    if (name == NULL || name[0] == '\0') {
        name = GW_METRICS_NO_TENANT;
    }
    return (struct tenant_block *)block_get(&m->tenants, name, sizeof(struct tenant_block));
}

static void queue_key(uint64_t queue_id, char key[24])
{
    snprintf(key, 24, "%" PRIu64, queue_id);
}

static struct queue_block *queue_get(struct gw_metrics *m, uint64_t queue_id)
{
    char key[24];
    queue_key(queue_id, key);
    return (struct queue_block *)block_get(&m->queues, key, sizeof(struct queue_block));
}

/* The queue's block if it has one (no insert). */
static struct queue_block *queue_find(struct gw_metrics *m, uint64_t queue_id)
{
    char key[24];
    size_t slot;
    queue_key(queue_id, key);
    struct table *t = atomic_load_explicit(&m->queues.table, memory_order_acquire);
    return (struct queue_block *)table_probe(t, key, hash_name(key), &slot);
}

struct gw_metrics *gw_metrics_new(void)
{
    struct gw_metrics *m = sl_xcalloc(1, sizeof(*m));
    block_table_init(&m->tenants);
    block_table_init(&m->queues);
    return m;
}

void gw_metrics_free(struct gw_metrics *m)
{
    if (m == NULL) {
        return;
    }
    block_table_fini(&m->tenants);
    block_table_fini(&m->queues);
    free(m);
}

/* ---- counting ---------------------------------------------------------------- */

static void hist_observe(struct hist *h, const struct hist_spec *spec, uint64_t us)
{
    size_t i = 0;
    while (i < spec->n && us > spec->bounds_us[i]) {
        i++;
    }
    atomic_fetch_add_explicit(&h->bucket[i], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&h->sum_us, us, memory_order_relaxed);
}

void gw_metrics_count_request(struct gw_metrics *m, const char *tenant, enum gw_sqs_action action,
                              enum gw_sqs_error outcome, uint64_t duration_ns)
{
    size_t a = (size_t)action < ACTION_SLOTS ? (size_t)action : GW_SQS_ACT__COUNT;
    size_t o = (size_t)outcome < GW_SQS_E__COUNT ? (size_t)outcome : GW_SQS_OK;
    struct tenant_block *b = tenant_get(m, tenant);
    atomic_fetch_add_explicit(&b->requests[a][o], 1, memory_order_relaxed);
    hist_observe(&m->duration[a], &duration_spec, duration_ns / 1000);
}

static enum queue_outcome queue_outcome_of(enum gw_sqs_error e)
{
    if (e == GW_SQS_OK) {
        return QO_OK;
    }
    if (e == GW_SQS_E_REQUEST_THROTTLED || e == GW_SQS_E_OVER_LIMIT) {
        return QO_THROTTLED;
    }
    return gw_sqs_error_info(e)->sender ? QO_CLIENT_ERROR : QO_SERVER_ERROR;
}

void gw_metrics_count_queue_request(struct gw_metrics *m, uint64_t queue_id,
                                    enum gw_sqs_action action, enum gw_sqs_error outcome)
{
    if ((size_t)action >= GW_SQS_ACT__COUNT || (size_t)outcome >= GW_SQS_E__COUNT) {
        return;
    }
    atomic_fetch_add_explicit(&queue_get(m, queue_id)->requests[action][queue_outcome_of(outcome)],
                              1, memory_order_relaxed);
}

void gw_metrics_note_queue_first_attempt(struct gw_metrics *m, uint64_t queue_id, uint64_t age_ms)
{
    atomic_store_explicit(&queue_get(m, queue_id)->first_attempt_ms, age_ms, memory_order_relaxed);
}

uint64_t gw_metrics_queue_first_attempt(struct gw_metrics *m, uint64_t queue_id)
{
    struct queue_block *b = queue_find(m, queue_id);
    return b != NULL ? atomic_load_explicit(&b->first_attempt_ms, memory_order_relaxed) : 0;
}

void gw_metrics_count_empty_receive(struct gw_metrics *m, uint64_t queue_id)
{
    atomic_fetch_add_explicit(&queue_get(m, queue_id)->empty_receives, 1, memory_order_relaxed);
}

void gw_metrics_count_admin_auth(struct gw_metrics *m, bool throttled)
{
    atomic_fetch_add_explicit(throttled ? &m->admin_auth_throttled : &m->admin_auth_failed, 1,
                              memory_order_relaxed);
}

void gw_metrics_count_deduplicated(struct gw_metrics *m, uint64_t queue_id, uint64_t n)
{
    atomic_fetch_add_explicit(&queue_get(m, queue_id)->deduplicated, n, memory_order_relaxed);
}

void gw_metrics_count_spill(struct gw_metrics *m, const char *tenant, uint64_t n)
{
    atomic_fetch_add_explicit(&tenant_get(m, tenant)->spilled, n, memory_order_relaxed);
}

void gw_metrics_observe_first_receive_age(struct gw_metrics *m, const char *tenant, uint64_t age_ms)
{
    hist_observe(&tenant_get(m, tenant)->first_receive_age, &age_spec, age_ms * 1000);
}

void gw_metrics_observe_receive_latency(struct gw_metrics *m, const char *tenant,
                                        uint64_t duration_ns)
{
    hist_observe(&tenant_get(m, tenant)->receive_latency, &duration_spec, duration_ns / 1000);
}

/* ---- rendering ------------------------------------------------------------------ */

static uint64_t load(_Atomic uint64_t *v)
{
    return atomic_load_explicit(v, memory_order_relaxed);
}

void gw_metrics_append_label_value(struct sl_buf *out, const char *v)
{
    for (; *v != '\0'; v++) {
        switch (*v) {
        case '\\':
            sl_buf_append_cstr(out, "\\\\");
            break;
        case '"':
            sl_buf_append_cstr(out, "\\\"");
            break;
        case '\n':
            sl_buf_append_cstr(out, "\\n");
            break;
        default:
            sl_buf_append_byte(out, *v);
        }
    }
}

static void family(struct sl_buf *out, const char *name, const char *type, const char *help)
{
    sl_buf_printf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* Appends `name{k1="v1",...}` (pairs: key, value, ..., NULL). */
static void sample_start(struct sl_buf *out, const char *name, const char *const *labels)
{
    sl_buf_append_cstr(out, name);
    if (labels[0] == NULL) {
        return;
    }
    sl_buf_append_byte(out, '{');
    for (size_t i = 0; labels[i] != NULL; i += 2) {
        sl_buf_printf(out, "%s%s=\"", i > 0 ? "," : "", labels[i]);
        gw_metrics_append_label_value(out, labels[i + 1]);
        sl_buf_append_byte(out, '"');
    }
    sl_buf_append_byte(out, '}');
}

static void sample_u64(struct sl_buf *out, const char *name, const char *const *labels, uint64_t v)
{
    sample_start(out, name, labels);
    sl_buf_printf(out, " %" PRIu64 "\n", v);
}

static void sample_i64(struct sl_buf *out, const char *name, const char *const *labels, int64_t v)
{
    sample_start(out, name, labels);
    sl_buf_printf(out, " %" PRId64 "\n", v);
}

static void sample_f(struct sl_buf *out, const char *name, const char *const *labels, double v)
{
    sample_start(out, name, labels);
    sl_buf_printf(out, " %.15g\n", v);
}

/* One histogram's samples; key/value label the series (key NULL: none). */
static void hist_render(struct sl_buf *out, const char *name, const char *key, const char *value,
                        struct hist *h, const struct hist_spec *spec)
{
    char bucket[128], sum[128], count[128], le[32];
    snprintf(bucket, sizeof(bucket), "%s_bucket", name);
    snprintf(sum, sizeof(sum), "%s_sum", name);
    snprintf(count, sizeof(count), "%s_count", name);
    uint64_t cum = 0;
    for (size_t i = 0; i <= spec->n; i++) {
        cum += load(&h->bucket[i]);
        if (i < spec->n) {
            snprintf(le, sizeof(le), "%g", (double)spec->bounds_us[i] / 1e6);
        } else {
            snprintf(le, sizeof(le), "+Inf");
        }
        const char *with_key[] = {key, value, "le", le, NULL};
        const char *only_le[] = {"le", le, NULL};
        sample_u64(out, bucket, key != NULL ? with_key : only_le, cum);
    }
    const char *labels[] = {key, value, NULL};
    sample_f(out, sum, labels, (double)load(&h->sum_us) / 1e6);
    sample_u64(out, count, labels, cum);
}

static uint64_t hist_count(struct hist *h)
{
    uint64_t n = 0;
    for (size_t i = 0; i <= HIST_MAX_BOUNDS; i++) {
        n += load(&h->bucket[i]);
    }
    return n;
}

static int cmp_block(const void *a, const void *b)
{
    const struct block *x = *(struct block *const *)a;
    const struct block *y = *(struct block *const *)b;
    return strcmp(x->name, y->name);
}

/* The tenant blocks, sorted by name (stable output). Caller frees. */
static struct tenant_block **blocks_sorted(struct gw_metrics *m, size_t *n)
{
    struct block_table *bt = &m->tenants;
    pthread_mutex_lock(&bt->grow_lock);
    struct table *t = atomic_load(&bt->table);
    struct tenant_block **v = sl_xcalloc(bt->count + 1, sizeof(*v));
    size_t k = 0;
    for (size_t i = 0; i < t->cap; i++) {
        struct block *b = atomic_load(&t->slots[i]);
        if (b != NULL) {
            v[k++] = (struct tenant_block *)b;
        }
    }
    pthread_mutex_unlock(&bt->grow_lock);
    qsort(v, k, sizeof(*v), cmp_block);
    *n = k;
    return v;
}

static const char *action_label(size_t a)
{
    return a < GW_SQS_ACT__COUNT ? gw_sqs_action_name((enum gw_sqs_action)a) : "(unknown)";
}

static const char *outcome_label(size_t o)
{
    return o == GW_SQS_OK ? "ok" : gw_sqs_error_info((enum gw_sqs_error)o)->query_code;
}

static void render_requests(struct sl_buf *out, struct gw_metrics *m, struct tenant_block **v,
                            size_t n)
{
    family(out, "sluice_requests_total", "counter",
           "SQS requests answered, by tenant, action and outcome (ok or the SQS error code).");
    for (size_t i = 0; i < n; i++) {
        for (size_t a = 0; a < ACTION_SLOTS; a++) {
            for (size_t o = 0; o < GW_SQS_E__COUNT; o++) {
                uint64_t c = load(&v[i]->requests[a][o]);
                if (c > 0) {
                    const char *l[] = {"tenant",  v[i]->head.name,  "action", action_label(a),
                                       "outcome", outcome_label(o), NULL};
                    sample_u64(out, "sluice_requests_total", l, c);
                }
            }
        }
    }
    family(out, "sluice_throttled_requests_total", "counter",
           "Requests refused by policy (RequestThrottled or OverLimit), by tenant.");
    for (size_t i = 0; i < n; i++) {
        uint64_t c = 0;
        for (size_t a = 0; a < ACTION_SLOTS; a++) {
            c += load(&v[i]->requests[a][GW_SQS_E_REQUEST_THROTTLED]);
            c += load(&v[i]->requests[a][GW_SQS_E_OVER_LIMIT]);
        }
        const char *l[] = {"tenant", v[i]->head.name, NULL};
        sample_u64(out, "sluice_throttled_requests_total", l, c);
    }
    family(out, "sluice_spilled_messages_total", "counter",
           "Messages accepted into the overflow lane (on_excess: spill), by tenant.");
    for (size_t i = 0; i < n; i++) {
        const char *l[] = {"tenant", v[i]->head.name, NULL};
        sample_u64(out, "sluice_spilled_messages_total", l, load(&v[i]->spilled));
    }
    family(out, "sluice_request_duration_seconds", "histogram",
           "Time from a complete request to its answer (long polls included), by action.");
    for (size_t a = 0; a < ACTION_SLOTS; a++) {
        if (hist_count(&m->duration[a]) > 0) {
            hist_render(out, "sluice_request_duration_seconds", "action", action_label(a),
                        &m->duration[a], &duration_spec);
        }
    }
    family(out, "sluice_first_receive_age_seconds", "histogram",
           "Age of a message at its first receive (SQS AgeOfFirstAttempt), by tenant.");
    for (size_t i = 0; i < n; i++) {
        if (hist_count(&v[i]->first_receive_age) > 0) {
            hist_render(out, "sluice_first_receive_age_seconds", "tenant", v[i]->head.name,
                        &v[i]->first_receive_age, &age_spec);
        }
    }
    family(out, "sluice_receive_latency_seconds", "histogram",
           "ReceiveMessage time from request to answer, by tenant.");
    for (size_t i = 0; i < n; i++) {
        if (hist_count(&v[i]->receive_latency) > 0) {
            hist_render(out, "sluice_receive_latency_seconds", "tenant", v[i]->head.name,
                        &v[i]->receive_latency, &duration_spec);
        }
    }
}

/* What the partitions' timers and receives did to each tenant's messages. */
static void render_tenant_stats(struct sl_buf *out, const struct gw_metrics_sources *src)
{
    static const struct {
        const char *name;
        const char *help;
    } fam[] = {
        {"sluice_expired_messages_total",
         "Messages dropped at the end of their queue's MessageRetentionPeriod, by tenant."},
        {"sluice_aged_messages_total",
         "Ready messages sidelined to the overflow lane for age (spill.aged_after_seconds), by "
         "tenant."},
        {"sluice_dead_lettered_messages_total",
         "Messages moved to a dead-letter queue past maxReceiveCount, by tenant."},
    };
    const struct cfg_snapshot *s = src->snap;
    struct part_tenant_stats *st = sl_xcalloc(s->tenant_count + 1, sizeof(*st));
    for (size_t i = 0; i < s->tenant_count; i++) {
        part_tenant_stats(src->engine, s->tenants[i].name, &st[i]);
    }
    for (size_t f = 0; f < SL_ARRAY_LEN(fam); f++) {
        family(out, fam[f].name, "counter", fam[f].help);
        for (size_t i = 0; i < s->tenant_count; i++) {
            uint64_t v = f == 0 ? st[i].expired : f == 1 ? st[i].aged : st[i].dead_lettered;
            const char *l[] = {"tenant", s->tenants[i].name, NULL};
            sample_u64(out, fam[f].name, l, v);
        }
    }
    const struct hist_spec wait_spec = {part_wait_bounds_us(), PART_WAIT_BUCKETS - 1};
    family(out, "sluice_writer_queue_wait_seconds", "histogram",
           "Time the tenant's jobs waited at partition writers before a group commit took "
           "them, by tenant.");
    for (size_t i = 0; i < s->tenant_count; i++) {
        struct hist h;
        uint64_t n = 0;
        for (size_t b = 0; b <= HIST_MAX_BOUNDS; b++) {
            uint64_t v = b < PART_WAIT_BUCKETS ? st[i].wait_bucket[b] : 0;
            atomic_init(&h.bucket[b], v);
            n += v;
        }
        atomic_init(&h.sum_us, st[i].wait_sum_us);
        if (n > 0) {
            hist_render(out, "sluice_writer_queue_wait_seconds", "tenant", s->tenants[i].name, &h,
                        &wait_spec);
        }
    }
    free(st);
}

static void render_tenants(struct sl_buf *out, const struct gw_metrics_sources *src)
{
    const struct cfg_snapshot *s = src->snap;
    if (s == NULL) {
        return;
    }
    if (src->engine != NULL) {
        family(out, "sluice_tenant_backlog_messages", "gauge",
               "Stored messages not in flight (ready and delayed, every lane), by tenant.");
        for (size_t i = 0; i < s->tenant_count; i++) {
            int64_t backlog = 0, inflight = 0;
            part_tenant_counts(src->engine, s->tenants[i].name, &backlog, &inflight);
            const char *l[] = {"tenant", s->tenants[i].name, NULL};
            sample_i64(out, "sluice_tenant_backlog_messages", l, backlog);
        }
        family(out, "sluice_tenant_inflight_messages", "gauge",
               "Received and not yet deleted messages, by tenant.");
        for (size_t i = 0; i < s->tenant_count; i++) {
            int64_t backlog = 0, inflight = 0;
            part_tenant_counts(src->engine, s->tenants[i].name, &backlog, &inflight);
            const char *l[] = {"tenant", s->tenants[i].name, NULL};
            sample_i64(out, "sluice_tenant_inflight_messages", l, inflight);
        }
        render_tenant_stats(out, src);
    }
    if (src->limiter != NULL) {
        family(out, "sluice_tenant_rate_tokens_available", "gauge",
               "Tokens in the tenant's rate-limit bucket now (limits.burst when full).");
        for (size_t i = 0; i < s->tenant_count; i++) {
            const char *name = s->tenants[i].name;
            struct pol_tenant_state *t = pol_limiter_find(src->limiter, name, strlen(name));
            const char *l[] = {"tenant", name, NULL};
            sample_u64(out, "sluice_tenant_rate_tokens_available", l,
                       t != NULL ? pol_gcra_available(&t->rate, src->now_ns) : 0);
        }
        family(out, "sluice_tenant_long_polls", "gauge",
               "ReceiveMessage calls of the tenant waiting now (long polls).");
        for (size_t i = 0; i < s->tenant_count; i++) {
            const char *name = s->tenants[i].name;
            struct pol_tenant_state *t = pol_limiter_find(src->limiter, name, strlen(name));
            const char *l[] = {"tenant", name, NULL};
            sample_u64(out, "sluice_tenant_long_polls", l,
                       t != NULL ? pol_slots_used(&t->long_polls) : 0);
        }
        family(out, "sluice_tenant_requests_in_progress", "gauge",
               "Requests of the tenant being served now, all connections "
               "(limits.max_concurrent_requests caps them).");
        for (size_t i = 0; i < s->tenant_count; i++) {
            const char *name = s->tenants[i].name;
            struct pol_tenant_state *t = pol_limiter_find(src->limiter, name, strlen(name));
            const char *l[] = {"tenant", name, NULL};
            sample_u64(out, "sluice_tenant_requests_in_progress", l,
                       t != NULL ? pol_slots_used(&t->requests) : 0);
        }
    }
}

/* One per-queue gauge, from counts (one per queue of ql). */
enum queue_gauge { QG_READY, QG_INFLIGHT, QG_DELAYED, QG_OVERFLOW, QG_OLDEST_AGE, QG_COUNT_ };

static double queue_gauge_value(enum queue_gauge g, const struct part_counts *c, uint64_t now_ms)
{
    switch (g) {
    case QG_READY:
        return (double)c->ready;
    case QG_INFLIGHT:
        return (double)c->inflight;
    case QG_DELAYED:
        return (double)c->delayed;
    case QG_OVERFLOW:
        return (double)(c->overflow_ready + c->overflow_delayed);
    case QG_OLDEST_AGE:
        return c->oldest_ready_ms == 0 || c->oldest_ready_ms > now_ms
                   ? 0.0
                   : (double)(now_ms - c->oldest_ready_ms) / 1000.0;
    case QG_COUNT_:
        break;
    }
    return 0.0;
}

/* sluice_queue_requests_total: live queues only, non-zero series only. */
static void render_queue_requests(struct sl_buf *out, struct gw_metrics *m,
                                  const struct part_queue_list *ql)
{
    static const char *const outcome[QO_COUNT_] = {
        [QO_OK] = "ok",
        [QO_THROTTLED] = "throttled",
        [QO_CLIENT_ERROR] = "client_error",
        [QO_SERVER_ERROR] = "server_error",
    };
    family(out, "sluice_queue_requests_total", "counter",
           "Requests that named a queue, by queue, action and outcome class.");
    for (size_t i = 0; i < ql->count; i++) {
        struct queue_block *b = queue_find(m, ql->items[i].id);
        for (size_t a = 0; b != NULL && a < GW_SQS_ACT__COUNT; a++) {
            for (size_t o = 0; o < QO_COUNT_; o++) {
                uint64_t c = load(&b->requests[a][o]);
                if (c > 0) {
                    const char *l[] = {"tenant", ql->items[i].tenant, "queue",   ql->items[i].name,
                                       "action", action_label(a),     "outcome", outcome[o],
                                       NULL};
                    sample_u64(out, "sluice_queue_requests_total", l, c);
                }
            }
        }
    }
    family(out, "sluice_queue_empty_receives_total", "counter",
           "ReceiveMessage calls answered with no message (after any long-poll wait), by "
           "queue.");
    for (size_t i = 0; i < ql->count; i++) {
        struct queue_block *b = queue_find(m, ql->items[i].id);
        const char *l[] = {"tenant", ql->items[i].tenant, "queue", ql->items[i].name, NULL};
        sample_u64(out, "sluice_queue_empty_receives_total", l,
                   b != NULL ? load(&b->empty_receives) : 0);
    }
}

static int u64_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* How many queues name each queue as their dead-letter queue: what an
 * alert joins on to tell a DLQ that fills up from a busy queue. One pass
 * over the typed configs and a sort, then a binary search per queue. */
static void render_dlq_sources(struct sl_buf *out, struct part_engine *e,
                               const struct part_queue_list *ql)
{
    uint64_t *targets = sl_xcalloc(ql->count + 1, sizeof *targets);
    size_t nt = 0;
    for (size_t i = 0; i < ql->count; i++) {
        struct part_queue_config cfg;
        uint64_t id;
        if (part_queue_find(e, ql->items[i].tenant, ql->items[i].name, &id, &cfg) == SL_OK &&
            cfg.dlq_target_id != 0) {
            targets[nt++] = cfg.dlq_target_id;
        }
    }
    qsort(targets, nt, sizeof *targets, u64_cmp);
    family(out, "sluice_queue_dead_letter_sources", "gauge",
           "Queues whose RedrivePolicy names this queue as their dead-letter queue (0: not a "
           "DLQ), by queue.");
    for (size_t i = 0; i < ql->count; i++) {
        /* the run of equal targets: lower bound, then count */
        uint64_t id = ql->items[i].id;
        size_t lo = 0, hi = nt;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (targets[mid] < id) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        size_t n = 0;
        while (lo + n < nt && targets[lo + n] == id) {
            n++;
        }
        const char *l[] = {"tenant", ql->items[i].tenant, "queue", ql->items[i].name, NULL};
        sample_f(out, "sluice_queue_dead_letter_sources", l, (double)n);
    }
    free(targets);
}

/* FIFO queues only: groups locked now; FIFO queues and standard queues
 * with idempotent sends: sends deduplicated; exclusive queues: values
 * held. */
static void render_fifo(struct sl_buf *out, struct gw_metrics *m, struct part_engine *e,
                        const struct part_queue_list *ql, const struct part_counts *counts)
{
    bool *fifo = sl_xcalloc(3 * (ql->count + 1), sizeof *fifo);
    bool *keyed = fifo + ql->count + 1;
    bool *exclusive = keyed + ql->count + 1;
    for (size_t i = 0; i < ql->count; i++) {
        uint64_t id;
        struct part_queue_config cfg;
        bool found = part_queue_find(e, ql->items[i].tenant, ql->items[i].name, &id, &cfg) == SL_OK;
        fifo[i] = found && cfg.fifo;
        keyed[i] = fifo[i] || (found && cfg.idempotency_window_s > 0);
        exclusive[i] = found && cfg.exclusive;
    }
    family(out, "sluice_exclusive_values_inflight", "gauge",
           "Exclusivity values of an exclusive queue with a message in flight (held: no other "
           "message of the value is delivered), by queue.");
    for (size_t i = 0; i < ql->count; i++) {
        if (exclusive[i]) {
            const char *l[] = {"tenant", ql->items[i].tenant, "queue", ql->items[i].name, NULL};
            sample_f(out, "sluice_exclusive_values_inflight", l, (double)counts[i].groups_inflight);
        }
    }
    family(out, "sluice_exclusive_blocked_messages", "gauge",
           "Ready messages of an exclusive queue waiting behind a held value, as the last "
           "receive on each partition found them (a lower bound when it filled up first; at "
           "most 4096 a partition), by queue.");
    for (size_t i = 0; i < ql->count; i++) {
        if (exclusive[i]) {
            const char *l[] = {"tenant", ql->items[i].tenant, "queue", ql->items[i].name, NULL};
            sample_f(out, "sluice_exclusive_blocked_messages", l,
                     (double)counts[i].exclusive_blocked);
        }
    }
    family(out, "sluice_fifo_groups_inflight", "gauge",
           "Message groups of a FIFO queue with a message in flight (locked), by queue.");
    for (size_t i = 0; i < ql->count; i++) {
        if (fifo[i]) {
            const char *l[] = {"tenant", ql->items[i].tenant, "queue", ql->items[i].name, NULL};
            sample_f(out, "sluice_fifo_groups_inflight", l, (double)counts[i].groups_inflight);
        }
    }
    family(out, "sluice_fifo_groups_split", "gauge",
           "Message groups of a FIFO queue with live messages on more than one partition (a "
           "move in place or a shard change put them there; only the oldest leases), by queue.");
    for (size_t i = 0; i < ql->count; i++) {
        if (fifo[i]) {
            const char *l[] = {"tenant", ql->items[i].tenant, "queue", ql->items[i].name, NULL};
            sample_f(out, "sluice_fifo_groups_split", l, (double)counts[i].groups_split);
        }
    }
    family(out, "sluice_fifo_deduplicated_sends_total", "counter",
           "Sends to a FIFO queue, or a standard queue with idempotent sends, accepted as "
           "duplicates within the deduplication interval (not stored again), by queue.");
    for (size_t i = 0; i < ql->count; i++) {
        if (keyed[i]) {
            struct queue_block *b = queue_find(m, ql->items[i].id);
            const char *l[] = {"tenant", ql->items[i].tenant, "queue", ql->items[i].name, NULL};
            sample_u64(out, "sluice_fifo_deduplicated_sends_total", l,
                       b != NULL ? load(&b->deduplicated) : 0);
        }
    }
    free(fifo);
}

static void render_queues(struct sl_buf *out, struct gw_metrics *m, struct part_engine *e)
{
    static const struct {
        const char *name;
        const char *help;
    } fam[QG_COUNT_] = {
        [QG_READY] = {"sluice_queue_ready_messages",
                      "Messages ready to receive (every lane), by queue."},
        [QG_INFLIGHT] = {"sluice_queue_inflight_messages",
                         "Messages received and not yet deleted, by queue."},
        [QG_DELAYED] = {"sluice_queue_delayed_messages",
                        "Messages not yet visible (delay, or spilled), by queue."},
        [QG_OVERFLOW] = {"sluice_queue_overflow_messages",
                         "Messages in the overflow lane (spilled or aged; also counted as "
                         "ready or delayed), by queue."},
        [QG_OLDEST_AGE] = {"sluice_queue_oldest_message_age_seconds",
                           "Age of the oldest ready message (0 when none), by queue."},
    };
    struct part_queue_list ql = {0};
    part_queue_list(e, NULL, NULL, &ql);
    struct part_counts *counts = sl_xcalloc(ql.count + 1, sizeof(*counts));
    for (size_t i = 0; i < ql.count; i++) {
        part_queue_counts(e, ql.items[i].id, PART_ALL_PARTITIONS, &counts[i]);
    }
    uint64_t now_ms = sl_wall_ms();
    for (size_t f = 0; f < QG_COUNT_; f++) {
        family(out, fam[f].name, "gauge", fam[f].help);
        for (size_t i = 0; i < ql.count; i++) {
            const char *l[] = {"tenant", ql.items[i].tenant, "queue", ql.items[i].name, NULL};
            sample_f(out, fam[f].name, l,
                     queue_gauge_value((enum queue_gauge)f, &counts[i], now_ms));
        }
    }
    render_fifo(out, m, e, &ql, counts);
    free(counts);
    render_dlq_sources(out, e, &ql);
    render_queue_requests(out, m, &ql);
    part_queue_list_free(&ql);
}

/* One per-partition family from vals[np]. */
static void partition_family(struct sl_buf *out, const char *name, const char *type,
                             const char *help, const double *vals, uint32_t np)
{
    family(out, name, type, help);
    for (uint32_t p = 0; p < np; p++) {
        char pl[16];
        snprintf(pl, sizeof(pl), "%" PRIu32, p);
        const char *l[] = {"partition", pl, NULL};
        sample_f(out, name, l, vals[p]);
    }
}

/* The connection caps of each listener (gw_connlimit.h): what is open, the
 * caps in force, and every connection refused at accept or accept that
 * failed, by reason, so that an operator sees a flood the log only samples. */
static void render_connections(struct sl_buf *out, const struct gw_metrics_sources *src)
{
    struct {
        const char *name;
        struct gw_connlimit *cl;
        struct gw_connlimit_stats st;
    } l[] = {{"sqs", src->conns, {0}}, {"admin", src->admin_conns, {0}}};
    for (size_t i = 0; i < SL_ARRAY_LEN(l); i++) {
        if (l[i].cl != NULL) {
            gw__connlimit_stats(l[i].cl, &l[i].st);
        }
    }
    enum { OPEN, PEERS, LIMIT, REFUSED, HTTP_REFUSED, VERSIONS };
    static const char *const head[] = {
        [OPEN] = "# HELP sluice_connections_open Open client connections.\n"
                 "# TYPE sluice_connections_open gauge\n",
        [PEERS] = "# HELP sluice_connection_peers Peer addresses with an open connection.\n"
                  "# TYPE sluice_connection_peers gauge\n",
        [LIMIT] = "# HELP sluice_connections_limit The connection caps in force (for sqs: "
                  "server.max_connections and _per_peer).\n"
                  "# TYPE sluice_connections_limit gauge\n",
        [REFUSED] = "# HELP sluice_connections_refused_total Connections closed at accept, and "
                    "accept calls that failed, by reason.\n"
                    "# TYPE sluice_connections_refused_total counter\n",
        [HTTP_REFUSED] = "# HELP sluice_http_refused_total Requests refused and connections cut "
                         "by the protocol layer (either HTTP version), by reason.\n"
                         "# TYPE sluice_http_refused_total counter\n",
        [VERSIONS] = "# HELP sluice_http_connections_total Connections by the HTTP version they "
                     "speak.\n"
                     "# TYPE sluice_http_connections_total counter\n",
    };
    for (int f = OPEN; f <= VERSIONS; f++) {
        sl_buf_append_cstr(out, head[f]);
        for (size_t i = 0; i < SL_ARRAY_LEN(l); i++) {
            const struct gw_connlimit_stats *st = &l[i].st;
            const char *n = l[i].name;
            if (l[i].cl == NULL) {
                continue;
            }
            if (f == OPEN) {
                sl_buf_printf(out, "sluice_connections_open{listener=\"%s\"} %" PRIu64 "\n", n,
                              st->open);
            } else if (f == PEERS) {
                sl_buf_printf(out, "sluice_connection_peers{listener=\"%s\"} %" PRIu64 "\n", n,
                              st->peers);
            } else if (f == LIMIT) {
                sl_buf_printf(out,
                              "sluice_connections_limit{listener=\"%s\",scope=\"process\"} %u\n"
                              "sluice_connections_limit{listener=\"%s\",scope=\"peer\"} %u\n",
                              n, st->max_connections, n, st->max_per_peer);
            } else if (f == HTTP_REFUSED) {
                for (int r = 0; r < GW_HTTP_REFUSAL_COUNT; r++) {
                    sl_buf_printf(out,
                                  "sluice_http_refused_total{listener=\"%s\",reason=\"%s\"} "
                                  "%" PRIu64 "\n",
                                  n, gw__http_refusal_name((enum gw_http_refusal)r),
                                  st->http_refused[r]);
                }
            } else if (f == VERSIONS) {
                for (int v = 0; v < GW_HTTP_VERSION_COUNT; v++) {
                    sl_buf_printf(out,
                                  "sluice_http_connections_total{listener=\"%s\",version=\"%s\"} "
                                  "%" PRIu64 "\n",
                                  n, gw__http_version_name((enum gw_http_version)v),
                                  st->connections[v]);
                }
            } else {
                for (int r = 0; r < GW_CONN_REFUSAL_COUNT; r++) {
                    sl_buf_printf(out,
                                  "sluice_connections_refused_total{listener=\"%s\",reason="
                                  "\"%s\"} %" PRIu64 "\n",
                                  n, gw__conn_refusal_name((enum gw_conn_refusal)r),
                                  st->refused[r]);
                }
            }
        }
    }
}

/* The memory budgets of the protocol layer (gw_budget.h): bytes held now,
 * the limits in force, and the streams refused or cut to stay within them. */
static void render_budgets(struct sl_buf *out, struct gw_budget *b)
{
    struct gw_budget_stats st;
    gw__budget_stats(b, &st);
    sl_buf_append_cstr(out, "# HELP sluice_memory_budget_bytes Bytes held against each "
                            "process-wide budget (request bodies buffered, responses not yet "
                            "sent).\n"
                            "# TYPE sluice_memory_budget_bytes gauge\n");
    for (int k = 0; k < GW_BUDGET_KIND_COUNT; k++) {
        sl_buf_printf(out, "sluice_memory_budget_bytes{budget=\"%s\"} %" PRIu64 "\n",
                      gw__budget_kind_name((enum gw_budget_kind)k), st.used[k]);
    }
    sl_buf_append_cstr(out, "# HELP sluice_memory_budget_limit_bytes The budgets in force "
                            "(server.request_body_budget_bytes, "
                            "server.response_budget_bytes).\n"
                            "# TYPE sluice_memory_budget_limit_bytes gauge\n");
    for (int k = 0; k < GW_BUDGET_KIND_COUNT; k++) {
        sl_buf_printf(out, "sluice_memory_budget_limit_bytes{budget=\"%s\"} %" PRIu64 "\n",
                      gw__budget_kind_name((enum gw_budget_kind)k), st.limit[k]);
    }
    sl_buf_append_cstr(out, "# HELP sluice_memory_budget_refusals_total Streams refused or "
                            "reset to stay within the budgets, by reason.\n"
                            "# TYPE sluice_memory_budget_refusals_total counter\n");
    for (int r = 0; r < GW_BUDGET_REFUSAL_COUNT; r++) {
        sl_buf_printf(out, "sluice_memory_budget_refusals_total{reason=\"%s\"} %" PRIu64 "\n",
                      gw__budget_refusal_name((enum gw_budget_refusal)r), st.refused[r]);
    }
}

/* Each group's Raft state as this node sees it: the catalog's as one
 * series per family, the partitions' by partition. A follower's lag is
 * derived in Prometheus (docs/operations.md, "Watching a cluster"). */
static void render_raft(struct sl_buf *out, struct part_engine *e, uint32_t np)
{
    static const struct {
        const char *suffix, *help;
    } fields[] = {
        {"term", "The latest Raft term this node has seen for the group."},
        {"commit_index", "The highest entry of the group's log this node knows committed."},
        {"applied_index", "The highest entry of the group's log applied to this node's image."},
        {"snapshot_bytes", "The size of the group's last snapshot taken or installed on this "
                           "node since it started; 0: none."},
    };
    enum { NFIELDS = 4 };
    _Static_assert(SL_ARRAY_LEN(fields) == NFIELDS, "one row per field");
    double *v = sl_xcalloc((size_t)NFIELDS * (np + 1), sizeof(double));
    for (uint32_t p = 0; p <= np; p++) {
        struct part_group_stats st;
        part_engine_group_stats(e, p < np ? p : PART_CATALOG, &st);
        const uint64_t f[NFIELDS] = {st.term, st.commit_index, st.applied_index, st.snapshot_bytes};
        for (size_t i = 0; i < NFIELDS; i++) {
            v[i * (np + 1) + p] = (double)f[i];
        }
    }
    for (size_t i = 0; i < NFIELDS; i++) {
        char name[96];
        snprintf(name, sizeof(name), "sluice_cluster_catalog_raft_%s", fields[i].suffix);
        family(out, name, "gauge", fields[i].help);
        sl_buf_printf(out, "%s %.15g\n", name, v[i * (np + 1) + np]);
        snprintf(name, sizeof(name), "sluice_partition_raft_%s", fields[i].suffix);
        partition_family(out, name, "gauge", fields[i].help, v + i * (np + 1), np);
    }
    free(v);
}

/* A cluster's node: its id, and the leader of each group as it last
 * learnt it (docs/design.md "Cluster"). Nothing on one node. */
static void render_cluster(struct sl_buf *out, struct part_engine *e)
{
    uint16_t self = part_engine_node_id(e);
    if (self == 0) {
        return;
    }
    family(out, "sluice_cluster_node_id", "gauge", "This node's id (cluster.node_id).");
    sl_buf_printf(out, "sluice_cluster_node_id %u\n", self);
    family(out, "sluice_cluster_catalog_leader_node", "gauge",
           "The node that leads the catalog's Raft group, as this node knows it; 0: none.");
    sl_buf_printf(out, "sluice_cluster_catalog_leader_node %llu\n",
                  (unsigned long long)part_engine_leader(e, PART_CATALOG));
    uint32_t np = part_engine_partitions(e);
    double *v = sl_xcalloc(np + 1, sizeof(double));
    for (uint32_t p = 0; p < np; p++) {
        v[p] = (double)part_engine_leader(e, p);
    }
    struct part_cluster_stats cs;
    if (part_engine_cluster_stats(e, &cs) == SL_OK) {
        family(out, "sluice_cluster_rejected_total", "counter",
               "Connections to this node's Raft or peer port refused at the handshake, by "
               "reason (unauthenticated, another cluster, an unknown node, ...).");
        for (size_t i = 0; i < PART_CLUSTER_REJECT_REASONS; i++) {
            const char *reason = part_cluster_reject_reason(i);
            sl_buf_printf(out, "sluice_cluster_rejected_total{port=\"raft\",reason=\"%s\"} %llu\n",
                          reason, (unsigned long long)cs.raft_rejected[i]);
            sl_buf_printf(out, "sluice_cluster_rejected_total{port=\"peer\",reason=\"%s\"} %llu\n",
                          reason, (unsigned long long)cs.peer_rejected[i]);
        }
        family(out, "sluice_cluster_peer_frames_total", "counter",
               "Frames on the peer port: jobs forwarded to their leaders and their answers.");
        sl_buf_printf(out, "sluice_cluster_peer_frames_total{direction=\"in\"} %llu\n",
                      (unsigned long long)cs.peer_frames_in);
        sl_buf_printf(out, "sluice_cluster_peer_frames_total{direction=\"out\"} %llu\n",
                      (unsigned long long)cs.peer_frames_out);
        family(out, "sluice_cluster_image_bytes", "gauge",
               "Memory the replicated images of this node's groups hold: their pages in use "
               "(not free pages, nor the in-memory WAL of at most 1000 pages a group).");
        sl_buf_printf(out, "sluice_cluster_image_bytes %llu\n", (unsigned long long)cs.image_bytes);
        family(out, "sluice_cluster_memory_budget_bytes", "gauge",
               "The memory_budget in force: sends are refused while the images hold more.");
        sl_buf_printf(out, "sluice_cluster_memory_budget_bytes %llu\n",
                      (unsigned long long)cs.memory_budget);
        family(out, "sluice_cluster_budget_refusals_total", "counter",
               "Sends refused (RequestThrottled) while the images held more than the budget.");
        sl_buf_printf(out, "sluice_cluster_budget_refusals_total %llu\n",
                      (unsigned long long)cs.budget_refusals);
        family(out, "sluice_cluster_nodes_configured", "gauge",
               "The nodes of this node's cluster.nodes, itself included.");
        sl_buf_printf(out, "sluice_cluster_nodes_configured %u\n", cs.nodes_configured);
    }
    partition_family(out, "sluice_partition_leader_node", "gauge",
                     "The node that leads the partition's Raft group, as this node knows it; 0: "
                     "none.",
                     v, np);
    free(v);
    render_raft(out, e, np);
}

static void render_partitions(struct sl_buf *out, struct part_engine *e)
{
    enum {
        DEPTH,
        LOAD,
        BACKLOG,
        COMMITS,
        JOBS,
        AVG,
        COMMIT_S,
        BATCH_S,
        FAILED,
        TIMERS,
        DEDUP_IDS,
        SELECT_STEPS,
        NVALS
    };
    /* in the order of the enum, which is the order of the page */
    static const struct {
        const char *name, *type, *help;
    } families[NVALS] = {
        [DEPTH] = {"sluice_partition_writer_queue_depth", "gauge",
                   "Jobs waiting at the partition's writer thread."},
        [LOAD] = {"sluice_partition_load_messages", "gauge",
                  "The send choice's load of the partition: its backlog plus the messages of the "
                  "jobs waiting at its writer."},
        [BACKLOG] = {"sluice_partition_backlog_messages", "gauge",
                     "Ready and delayed messages of every queue stored in the partition."},
        [COMMITS] = {"sluice_partition_commits_total", "counter",
                     "Group commits of the partition."},
        [JOBS] = {"sluice_partition_committed_jobs_total", "counter",
                  "Jobs committed by the partition (the sum of batch sizes)."},
        [AVG] = {"sluice_partition_batch_size_average", "gauge",
                 "Average jobs per group commit since start."},
        [COMMIT_S] = {"sluice_partition_commit_seconds_total", "counter",
                      "Time spent in COMMIT (the fsync with durability: fsync)."},
        [BATCH_S] = {"sluice_partition_batch_seconds_total", "counter",
                     "Time in group-commit transactions, BEGIN to the end of COMMIT."},
        [FAILED] = {"sluice_partition_failed", "gauge",
                    "1 when the partition hit a storage error (its jobs fail)."},
        [TIMERS] = {"sluice_partition_timers", "gauge",
                    "Entries in the partition writer's timer heap."},
        [DEDUP_IDS] = {"sluice_partition_fifo_dedup_ids", "gauge",
                       "FIFO deduplication ids held by the partition's in-memory index (the last "
                       "five minutes', and expired ones until a send sweeps them)."},
        [SELECT_STEPS] = {"sluice_partition_fifo_select_steps_total", "counter",
                          "SQLite VM steps FIFO receives spent choosing groups and rows."},
    };
    uint32_t np = part_engine_partitions(e);
    double *v[NVALS];
    for (size_t i = 0; i < NVALS; i++) {
        v[i] = sl_xcalloc(np + 1, sizeof(double));
    }
    for (uint32_t p = 0; p < np; p++) {
        struct part_partition_stats st = {0};
        part_engine_stats(e, p, &st);
        v[DEPTH][p] = (double)part_engine_partition_queued(e, p);
        v[LOAD][p] = (double)part_engine_partition_load(e, p);
        v[BACKLOG][p] = (double)st.backlog;
        v[COMMITS][p] = (double)st.commits;
        v[JOBS][p] = (double)st.jobs;
        v[AVG][p] = st.commits > 0 ? (double)st.jobs / (double)st.commits : 0.0;
        v[COMMIT_S][p] = (double)st.commit_us / 1e6;
        v[BATCH_S][p] = (double)st.batch_us / 1e6;
        v[FAILED][p] = st.failed ? 1.0 : 0.0;
        v[TIMERS][p] = (double)st.timers;
        v[DEDUP_IDS][p] = (double)st.fifo_dedup_ids;
        v[SELECT_STEPS][p] = (double)st.fifo_select_steps;
    }
    for (size_t i = 0; i < NVALS; i++) {
        partition_family(out, families[i].name, families[i].type, families[i].help, v[i], np);
        free(v[i]);
    }
    render_cluster(out, e);
}

/* The low-disk watermark (server.min_free_disk_bytes): free space of the
 * data directory's file system, and whether sends are refused for it. */
static void render_disk(struct sl_buf *out, struct part_engine *e)
{
    uint64_t free_bytes = 0;
    bool low = false;
    part_engine_disk(e, &free_bytes, &low);
    family(out, "sluice_disk_free_bytes", "gauge",
           "Free bytes of the data directory's file system (sampled at most once a second).");
    sl_buf_printf(out, "sluice_disk_free_bytes %llu\n", (unsigned long long)free_bytes);
    family(out, "sluice_disk_low", "gauge",
           "1 while free disk is below server.min_free_disk_bytes: sends are refused (503).");
    sl_buf_printf(out, "sluice_disk_low %d\n", low ? 1 : 0);
}

void gw_metrics_render(struct gw_metrics *m, const struct gw_metrics_sources *src,
                       struct sl_buf *out)
{
    /* Constant 1 with the build in its labels, as Prometheus exporters do:
     * a join on it tells which build produced any other series. */
    family(out, "sluice_build_info", "gauge", "The sluiced build: version and git commit.");
    sl_buf_printf(out, "sluice_build_info{version=\"%s\",commit=\"%s\"} 1\n", sl_version(),
                  sl_build_commit());
    size_t n = 0;
    struct tenant_block **v = blocks_sorted(m, &n);
    render_requests(out, m, v, n);
    free(v);
    render_tenants(out, src);
    sl_buf_printf(out,
                  "# HELP sluice_admin_auth_failures_total Admin listener requests refused: "
                  "failed authentication, or refused unchecked while failures are throttled.\n"
                  "# TYPE sluice_admin_auth_failures_total counter\n"
                  "sluice_admin_auth_failures_total{outcome=\"failed\"} %" PRIu64 "\n"
                  "sluice_admin_auth_failures_total{outcome=\"throttled\"} %" PRIu64 "\n",
                  load(&m->admin_auth_failed), load(&m->admin_auth_throttled));
    if (src->engine != NULL) {
        render_queues(out, m, src->engine);
        render_partitions(out, src->engine);
        render_disk(out, src->engine);
    }
    if (src->conns != NULL || src->admin_conns != NULL) {
        render_connections(out, src);
    }
    if (src->budget != NULL) {
        render_budgets(out, src->budget);
    }
}
