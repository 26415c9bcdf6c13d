/*
 * cfg_validate.c -- the raw YAML tree to an immutable struct cfg_snapshot,
 * applying defaults and checking every key, type and range.
 *
 * Validation never stops at the first problem: each one is reported into
 * the collector at the node it is about (the offending key or value), the
 * built-in default stays in place, and the walk goes on, so one run of
 * --check-config lists everything wrong with a file. Only when nothing was
 * reported is the snapshot returned.
 *
 * The schema (keys, types, ranges, defaults) is documented in
 * docs/config.md; keep both in step.
 *
 * Threading: runs on the loading thread only; reads the environment for
 * "env:NAME" secrets and the file system for the TLS files.
 * Ownership: the snapshot being built is freed on any problem.
 */
#include "cfg_cluster.h"
#include "cfg_int.h"
#include "cfg_sections.h"
#include "cfg_value.h"

#include "sl.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- ranges (docs/config.md lists the same) ----------------------------- */

#define PARTITIONS_MAX 1024
#define IO_THREADS_MAX 256
#define CONNECTIONS_MAX 1000000
#define MAX_QUEUES_MAX 1000000
/* server.*_budget_bytes: below the floor one largest request body (2 MiB
 * and change) could not be taken. */
#define BUDGET_MIN ((uint64_t)4 << 20)
#define BUDGET_MAX ((uint64_t)1 << 40)
#define RPS_MAX 1000000.0
#define BURST_MAX 100000000
#define MAX_INFLIGHT_MAX 120000000
#define MAX_BACKLOG_MAX 1000000000000ull
#define MAX_LONG_POLLS_MAX 1000000
#define MAX_CONCURRENT_REQUESTS_MAX 1000000
#define SPILL_DELAY_MAX 900          /* SQS's DelaySeconds ceiling */
#define SPILL_AGED_AFTER_MAX 1209600 /* 14 days, SQS's longest retention */
#define REGION_MAX 64

/* ---- the walk's state ------------------------------------------------------ */

/* The settings a tenant inherits from defaults: and may override. */
struct tenant_settings {
    struct cfg_limits limits;
    enum cfg_on_excess on_excess;
    struct cfg_spill spill;
    bool auto_create_queues;
    struct cfg_queue_defaults queue_defaults;
};

static void set_rps(struct vctx *v, const struct cfg__node *k, const struct cfg__node *val,
                    double *out)
{
    double x;
    if (cfg__get_number(v, k, val, &x) != SL_OK) {
        return;
    }
    if (!(x > 0 && x <= RPS_MAX)) {
        REPORT(v, val, "requests_per_second must be above 0 and at most %.0f, not %s", RPS_MAX,
               cfg__qnode(val));
        return;
    }
    *out = x;
}

/* One bucket, limits.queues.NAME or limits.actions.NAME, named path in
 * messages. r starts as the entry inherited from defaults (zero when
 * none), so a tenant may override one of its two keys; whatever neither
 * sets is missing. */
static void load_rate(struct vctx *v, const char *path, const struct cfg__node *name,
                      const struct cfg__node *m, struct cfg_rate *r)
{
    if (m->kind != CFG__MAPPING) {
        REPORT(v, m, "%s must be a mapping, not %s", path, cfg__describe(m));
        return;
    }
    char where[sizeof("in ") + 512];
    snprintf(where, sizeof(where), "in %s", path);
    bool have_rps = r->requests_per_second > 0;
    bool have_burst = r->burst > 0;
    for (size_t i = 0; i < m->count; i++) {
        const struct cfg__node *key = m->pairs[i].key;
        const struct cfg__node *val = m->pairs[i].value;
        if (cfg__key_is(key, "requests_per_second")) {
            set_rps(v, key, val, &r->requests_per_second);
            have_rps = true;
        } else if (cfg__key_is(key, "burst")) {
            cfg__set_u32(v, key, val, 1, BURST_MAX, &r->burst);
            have_burst = true;
        } else {
            cfg__report_unknown(v, CFG__SEC_RATE, where, key);
        }
    }
    if (!have_rps) {
        REPORT(v, name, "missing requests_per_second in %s", path);
    }
    if (!have_burst) {
        REPORT(v, name, "missing burst in %s", path);
    }
}

static int cmp_queue_rate(const void *a, const void *b)
{
    return strcmp(((const struct cfg_queue_rate *)a)->queue,
                  ((const struct cfg_queue_rate *)b)->queue);
}

/* limits.queues: queue name -> bucket, merged per queue into the entries
 * l already holds (from defaults; l owns them, sorted). section is
 * "tenants.acme.limits" or "defaults.limits". */
static void load_queue_rates(struct vctx *v, const char *section, const struct cfg__node *k,
                             const struct cfg__node *m, struct cfg_limits *l)
{
    if (cfg__want_mapping(v, k, m) != SL_OK) {
        return;
    }
    size_t inherited = l->queue_rate_count;
    if (m->count == 0) {
        return;
    }
    l->queue_rates = sl_xrealloc(l->queue_rates, (inherited + m->count) * sizeof(*l->queue_rates));
    for (size_t i = 0; i < m->count; i++) {
        const struct cfg__node *name = m->pairs[i].key;
        char path[512];
        struct cfg_rate scratch = {0};
        struct cfg_rate *r = &scratch;
        if (!cfg__queue_name_valid(name->value, name->len)) {
            REPORT(v, name,
                   "invalid queue name %s in %s.queues: use 1 to %d of A-Z a-z 0-9 _ -, "
                   "optionally ending in .fifo",
                   cfg__qnode(name), section, CFG_QUEUE_NAME_MAX);
            snprintf(path, sizeof(path), "%s.queues.%s", section, cfg__qnode(name));
        } else {
            snprintf(path, sizeof(path), "%s.queues.%s", section, name->value);
            struct cfg_queue_rate key = {.queue = name->value};
            struct cfg_queue_rate *old =
                bsearch(&key, l->queue_rates, inherited, sizeof(key), cmp_queue_rate);
            if (old == NULL) {
                old = &l->queue_rates[l->queue_rate_count++];
                *old = (struct cfg_queue_rate){.queue = sl_xstrndup(name->value, name->len)};
            }
            r = &old->rate;
        }
        load_rate(v, path, name, m->pairs[i].value, r);
    }
    qsort(l->queue_rates, l->queue_rate_count, sizeof(*l->queue_rates), cmp_queue_rate);
}

/* Says why name is not an action key: the batch form of one, a key in the
 * wrong case, or unknown (listing the keys). */
static void report_bad_action(struct vctx *v, const char *section, const struct cfg__node *name)
{
    enum cfg_action_key key;
    if (cfg_action_key_of(name->value, name->len, &key)) {
        REPORT(v, name,
               "action %s is limited by the key %s in %s.actions (a batch costs one token per "
               "entry)",
               cfg__qnode(name), cfg_action_key_name(key), section);
        return;
    }
    for (int i = 0; i < CFG_ACTION_KEY_COUNT; i++) {
        const char *want = cfg_action_key_name((enum cfg_action_key)i);
        if (name->len == strlen(want) && strncasecmp(name->value, want, name->len) == 0) {
            REPORT(v, name, "unknown action %s in %s.actions; action names are case-sensitive: %s",
                   cfg__qnode(name), section, want);
            return;
        }
    }
    struct sl_buf list;
    sl_buf_init(&list);
    for (int i = 0; i < CFG_ACTION_KEY_COUNT; i++) {
        sl_buf_printf(&list, "%s%s", i ? ", " : "", cfg_action_key_name((enum cfg_action_key)i));
    }
    REPORT(v, name, "unknown action %s in %s.actions (allowed: %s)", cfg__qnode(name), section,
           list.p);
    sl_buf_free(&list);
}

/* limits.actions: action key -> bucket, merged per action. */
static void load_action_rates(struct vctx *v, const char *section, const struct cfg__node *k,
                              const struct cfg__node *m, struct cfg_limits *l)
{
    if (cfg__want_mapping(v, k, m) != SL_OK) {
        return;
    }
    for (size_t i = 0; i < m->count; i++) {
        const struct cfg__node *name = m->pairs[i].key;
        struct cfg_rate scratch = {0};
        struct cfg_rate *r = &scratch;
        for (int a = 0; a < CFG_ACTION_KEY_COUNT; a++) {
            if (cfg__key_is(name, cfg_action_key_name((enum cfg_action_key)a))) {
                r = &l->actions[a];
            }
        }
        char path[512];
        if (r == &scratch) {
            report_bad_action(v, section, name);
            snprintf(path, sizeof(path), "%s.actions.%s", section, cfg__qnode(name));
        } else {
            snprintf(path, sizeof(path), "%s.actions.%s", section, name->value);
        }
        load_rate(v, path, name, m->pairs[i].value, r);
    }
}

/* section: "defaults.limits" or "tenants.acme.limits". */
static void load_limits(struct vctx *v, const char *section, const struct cfg__node *k,
                        const struct cfg__node *m, struct cfg_limits *l)
{
    if (cfg__want_mapping(v, k, m) != SL_OK) {
        return;
    }
    char where[512];
    snprintf(where, sizeof(where), "in %s", section);
    for (size_t i = 0; i < m->count; i++) {
        const struct cfg__node *key = m->pairs[i].key;
        const struct cfg__node *val = m->pairs[i].value;
        if (cfg__key_is(key, "requests_per_second")) {
            set_rps(v, key, val, &l->requests_per_second);
        } else if (cfg__key_is(key, "burst")) {
            cfg__set_u32(v, key, val, 1, BURST_MAX, &l->burst);
        } else if (cfg__key_is(key, "max_inflight")) {
            cfg__set_u32(v, key, val, 1, MAX_INFLIGHT_MAX, &l->max_inflight);
        } else if (cfg__key_is(key, "max_backlog")) {
            uint64_t x;
            if (cfg__get_uint(v, key, val, 1, MAX_BACKLOG_MAX, &x) == SL_OK) {
                l->max_backlog = x;
            }
        } else if (cfg__key_is(key, "max_long_polls")) {
            cfg__set_u32(v, key, val, 1, MAX_LONG_POLLS_MAX, &l->max_long_polls);
        } else if (cfg__key_is(key, "max_concurrent_requests")) {
            cfg__set_u32(v, key, val, 1, MAX_CONCURRENT_REQUESTS_MAX, &l->max_concurrent_requests);
        } else if (cfg__key_is(key, "max_queues")) {
            cfg__set_u32(v, key, val, 1, MAX_QUEUES_MAX, &l->max_queues);
        } else if (cfg__key_is(key, "queues")) {
            load_queue_rates(v, section, key, val, l);
        } else if (cfg__key_is(key, "actions")) {
            load_action_rates(v, section, key, val, l);
        } else {
            cfg__report_unknown(v, CFG__SEC_LIMITS, where, key);
        }
    }
}

static void load_spill(struct vctx *v, const char *where, const struct cfg__node *k,
                       const struct cfg__node *m, struct cfg_spill *sp)
{
    if (cfg__want_mapping(v, k, m) != SL_OK) {
        return;
    }
    for (size_t i = 0; i < m->count; i++) {
        const struct cfg__node *key = m->pairs[i].key;
        const struct cfg__node *val = m->pairs[i].value;
        if (cfg__key_is(key, "delay_seconds")) {
            cfg__set_u32(v, key, val, 0, SPILL_DELAY_MAX, &sp->delay_seconds);
        } else if (cfg__key_is(key, "aged_after_seconds")) {
            cfg__set_u32(v, key, val, 1, SPILL_AGED_AFTER_MAX, &sp->aged_after_seconds);
        } else {
            cfg__report_unknown(v, CFG__SEC_SPILL, where, key);
        }
    }
}

/* queue_defaults: SQS attributes of auto-created queues, in SQS's ranges
 * (CreateQueue); each key set here overrides the inherited one. */
static void load_queue_defaults(struct vctx *v, const char *where, const struct cfg__node *k,
                                const struct cfg__node *m, struct cfg_queue_defaults *qd)
{
    static const uint32_t range[CFG_QD_N][2] = {
        [CFG_QD_VISIBILITY_TIMEOUT] = {0, 43200},
        [CFG_QD_DELAY_SECONDS] = {0, 900},
        [CFG_QD_MESSAGE_RETENTION_PERIOD] = {60, 1209600},
        [CFG_QD_MAXIMUM_MESSAGE_SIZE] = {1024, 1048576},
        [CFG_QD_RECEIVE_MESSAGE_WAIT_TIME_SECONDS] = {0, 20},
    };
    if (cfg__want_mapping(v, k, m) != SL_OK) {
        return;
    }
    for (size_t i = 0; i < m->count; i++) {
        const struct cfg__node *key = m->pairs[i].key;
        const struct cfg__node *val = m->pairs[i].value;
        int d = 0;
        while (d < CFG_QD_N &&
               !cfg__key_is(key, cfg_queue_default_name((enum cfg_queue_default)d))) {
            d++;
        }
        if (d == CFG_QD_N) {
            cfg__report_unknown(v, CFG__SEC_QUEUE_DEFAULTS, where, key);
            continue;
        }
        uint64_t x;
        if (cfg__get_uint(v, key, val, range[d][0], range[d][1], &x) == SL_OK) {
            qd->set[d] = true;
            qd->value[d] = (uint32_t)x;
        }
    }
}

/* limits, on_excess, spill, auto_create_queues: shared by defaults: and
 * each tenant. Returns
 * false when the key is none of them. prefix names the section in
 * messages ("defaults" or "tenants.acme"). */
static bool load_setting(struct vctx *v, const char *prefix, const struct cfg__node *key,
                         const struct cfg__node *val, struct tenant_settings *ts)
{
    char where[sizeof("tenants..limits") + (size_t)QUOTE_MAX * 4 + 16];
    if (cfg__key_is(key, "limits")) {
        snprintf(where, sizeof(where), "%s.limits", prefix);
        load_limits(v, where, key, val, &ts->limits);
    } else if (cfg__key_is(key, "spill")) {
        snprintf(where, sizeof(where), "in %s.spill", prefix);
        load_spill(v, where, key, val, &ts->spill);
    } else if (cfg__key_is(key, "on_excess")) {
        bool spill;
        if (cfg__get_enum(v, key, val, "reject", "spill", &spill) == SL_OK) {
            ts->on_excess = spill ? CFG_EXCESS_SPILL : CFG_EXCESS_REJECT;
        }
    } else if (cfg__key_is(key, "auto_create_queues")) {
        cfg__set_bool(v, key, val, &ts->auto_create_queues);
    } else if (cfg__key_is(key, "queue_defaults")) {
        snprintf(where, sizeof(where), "in %s.queue_defaults", prefix);
        load_queue_defaults(v, where, key, val, &ts->queue_defaults);
    } else {
        return false;
    }
    return true;
}

static void load_defaults(struct vctx *v, const struct cfg__node *k, const struct cfg__node *m,
                          struct tenant_settings *ts)
{
    if (cfg__want_mapping(v, k, m) != SL_OK) {
        return;
    }
    for (size_t i = 0; i < m->count; i++) {
        if (!load_setting(v, "defaults", m->pairs[i].key, m->pairs[i].value, ts)) {
            cfg__report_unknown(v, CFG__SEC_DEFAULTS, "in defaults", m->pairs[i].key);
        }
    }
}

/* Adds the tenant to the snapshot, complete or not (a problem is reported
 * then, and the snapshot is dropped). */
static void load_tenant(struct vctx *v, const struct cfg__node *name, const struct cfg__node *m,
                        const struct tenant_settings *defaults)
{
    struct cfg_snapshot *s = v->s;
    bool name_ok = cfg_tenant_name_valid(name->value, name->len);
    if (!name_ok) {
        REPORT(v, name, "invalid tenant name %s: use 1 to 64 of A-Z a-z 0-9 _ -", cfg__qnode(name));
    }
    if (m->kind != CFG__MAPPING) {
        REPORT(v, m, "tenant %s must be a mapping, not %s", cfg__qnode(name), cfg__describe(m));
        return;
    }
    /* Messages name the section the way the file spells it. */
    char prefix[QUOTE_MAX * 4 + 16];
    char where[sizeof(prefix) + 16];
    snprintf(prefix, sizeof(prefix), "tenants.%s", name_ok ? name->value : cfg__qnode(name));
    snprintf(where, sizeof(where), "in tenant %s", cfg__qnode(name));

    struct cfg_tenant t = {0};
    struct tenant_settings ts = *defaults;
    cfg__limits_own(&ts.limits); /* the tenant's own copy of the per-queue limits */
    const struct cfg__node *akid_node = NULL;
    for (size_t i = 0; i < m->count; i++) {
        const struct cfg__node *key = m->pairs[i].key;
        const struct cfg__node *val = m->pairs[i].value;
        if (cfg__key_is(key, "access_key_id")) {
            cfg__set_access_key_id(v, key, val, &t.access_key_id);
            akid_node = val;
        } else if (cfg__key_is(key, "secret_access_key")) {
            cfg__set_secret(v, key, val, &t.secret_access_key);
            if (t.secret_access_key == NULL) {
                t.secret_access_key = sl_xstrdup(""); /* reported; not missing */
            }
        } else if (!load_setting(v, prefix, key, val, &ts)) {
            cfg__report_unknown(v, CFG__SEC_TENANT, where, key);
        }
    }
    if (akid_node == NULL) {
        REPORT(v, name, "missing access_key_id in tenant %s", cfg__qnode(name));
    }
    if (t.secret_access_key == NULL) {
        REPORT(v, name, "missing secret_access_key in tenant %s", cfg__qnode(name));
    }
    if (t.access_key_id != NULL) {
        struct sl_buf owner;
        sl_buf_init(&owner);
        sl_buf_printf(&owner, "tenant %s", cfg__qnode(name));
        cfg__note_key_use(v, t.access_key_id, akid_node, sl_buf_take(&owner, NULL));
    }
    t.name = sl_xstrndup(name->value, name->len);
    t.limits = ts.limits;
    t.on_excess = ts.on_excess;
    t.spill = ts.spill;
    t.auto_create_queues = ts.auto_create_queues;
    t.queue_defaults = ts.queue_defaults;
    s->tenants[s->tenant_count++] = t; /* owned by s from here, complete or not */
}

static int cmp_tenant(const void *a, const void *b)
{
    return strcmp(((const struct cfg_tenant *)a)->name, ((const struct cfg_tenant *)b)->name);
}

static void load_tenants(struct vctx *v, const struct cfg__node *k, const struct cfg__node *m,
                         const struct tenant_settings *defaults)
{
    if (cfg__want_mapping(v, k, m) != SL_OK) {
        return;
    }
    v->s->tenants = sl_xcalloc(m->count ? m->count : 1, sizeof(struct cfg_tenant));
    for (size_t i = 0; i < m->count; i++) {
        load_tenant(v, m->pairs[i].key, m->pairs[i].value, defaults);
    }
    qsort(v->s->tenants, v->s->tenant_count, sizeof(struct cfg_tenant), cmp_tenant);
}

static void load_admin(struct vctx *v, const struct cfg__node *k, const struct cfg__node *m,
                       const struct cfg__node **listen_node)
{
    struct cfg_admin *a = &v->s->admin;
    if (cfg__want_mapping(v, k, m) != SL_OK) {
        return;
    }
    a->enabled = true;
    a->listen.host = sl_xstrdup("127.0.0.1");
    a->listen.port = 9325;
    *listen_node = k;
    const struct cfg__node *akid_node = NULL;
    bool have_secret = false;
    for (size_t i = 0; i < m->count; i++) {
        const struct cfg__node *key = m->pairs[i].key;
        const struct cfg__node *val = m->pairs[i].value;
        if (cfg__key_is(key, "listen")) {
            cfg__set_endpoint(v, key, val, &a->listen);
            *listen_node = val;
        } else if (cfg__key_is(key, "access_key_id")) {
            cfg__set_access_key_id(v, key, val, &a->access_key_id);
            akid_node = val;
        } else if (cfg__key_is(key, "secret_access_key")) {
            cfg__set_secret(v, key, val, &a->secret_access_key);
            have_secret = true;
        } else if (cfg__key_is(key, "bearer_token")) {
            cfg__set_secret(v, key, val, &a->bearer_token);
            if (a->bearer_token != NULL && !cfg__chars_in(a->bearer_token, "-._~+/=")) {
                /* It travels in an Authorization header (RFC 6750 b64token). */
                REPORT(v, val, "bearer_token may only hold A-Z a-z 0-9 - . _ ~ + / =");
            }
        } else {
            cfg__report_unknown(v, CFG__SEC_ADMIN, "in admin", key);
        }
    }
    if (akid_node == NULL) {
        REPORT(v, k, "missing access_key_id in admin");
    }
    if (!have_secret) {
        REPORT(v, k, "missing secret_access_key in admin");
    }
    if (a->access_key_id != NULL) {
        cfg__note_key_use(v, a->access_key_id, akid_node, sl_xstrdup("admin"));
    }
}

/* server: process-wide limits that protect the gateway from its clients. */
static void load_server(struct vctx *v, const struct cfg__node *k, const struct cfg__node *m)
{
    struct cfg_server *srv = &v->s->server;
    if (cfg__want_mapping(v, k, m) != SL_OK) {
        return;
    }
    for (size_t i = 0; i < m->count; i++) {
        const struct cfg__node *key = m->pairs[i].key;
        const struct cfg__node *val = m->pairs[i].value;
        if (cfg__key_is(key, "max_connections")) {
            cfg__set_u32(v, key, val, 0, CONNECTIONS_MAX, &srv->max_connections);
        } else if (cfg__key_is(key, "max_connections_per_peer")) {
            cfg__set_u32(v, key, val, 0, CONNECTIONS_MAX, &srv->max_connections_per_peer);
        } else if (cfg__key_is(key, "min_free_disk_bytes")) {
            cfg__get_uint(v, key, val, 0, UINT64_MAX, &srv->min_free_disk_bytes);
        } else if (cfg__key_is(key, "request_body_budget_bytes")) {
            cfg__set_budget(v, key, val, BUDGET_MIN, BUDGET_MAX, &srv->request_body_budget_bytes);
        } else if (cfg__key_is(key, "response_budget_bytes")) {
            cfg__set_budget(v, key, val, BUDGET_MIN, BUDGET_MAX, &srv->response_budget_bytes);
        } else {
            cfg__report_unknown(v, CFG__SEC_SERVER, "in server", key);
        }
    }
}

/* A TLS file is opened now, so that a bad path is found by --check-config
 * and not at the first handshake. */
static void set_tls_file(struct vctx *v, const struct cfg__node *k, const struct cfg__node *val,
                         char **out)
{
    char *path = NULL;
    int fd = cfg__open_file(v, k, val, &path);
    if (fd >= 0) {
        close(fd);
        free(*out);
        *out = path;
    }
}

static void load_tls(struct vctx *v, const struct cfg__node *k, const struct cfg__node *m)
{
    struct cfg_tls *t = &v->s->tls;
    if (cfg__want_mapping(v, k, m) != SL_OK) {
        return;
    }
    t->enabled = true;
    bool have_cert = false;
    bool have_key = false;
    for (size_t i = 0; i < m->count; i++) {
        const struct cfg__node *key = m->pairs[i].key;
        const struct cfg__node *val = m->pairs[i].value;
        if (cfg__key_is(key, "cert_file")) {
            set_tls_file(v, key, val, &t->cert_file);
            have_cert = true;
        } else if (cfg__key_is(key, "key_file")) {
            set_tls_file(v, key, val, &t->key_file);
            have_key = true;
        } else {
            cfg__report_unknown(v, CFG__SEC_TLS, "in tls", key);
        }
    }
    if (!have_cert) {
        REPORT(v, k, "missing cert_file in tls");
    }
    if (!have_key) {
        REPORT(v, k, "missing key_file in tls");
    }
}

static uint32_t cpu_count(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : (uint32_t)SL_MIN(n, IO_THREADS_MAX);
}

static void set_defaults(struct cfg_snapshot *s, struct tenant_settings *ts)
{
    s->listen.host = sl_xstrdup("127.0.0.1");
    s->listen.port = 9324;
    s->region = sl_xstrdup("us-east-1");
    s->data_dir = sl_xstrdup("./sluice-data");
    s->partitions = 16;
    s->shard_size = 2;
    s->durability = CFG_DURABILITY_FSYNC;
    s->io_threads = 0;
    s->log_requests = true;
    s->server.min_free_disk_bytes = 64ull << 20;
    *ts = (struct tenant_settings){
        .limits = {.requests_per_second = 1000,
                   .burst = 2000,
                   .max_inflight = 120000,
                   .max_backlog = 1000000,
                   .max_long_polls = 1000,
                   .max_concurrent_requests = 2000,
                   .max_queues = 10000},
        .on_excess = CFG_EXCESS_REJECT,
        .spill = {.delay_seconds = 30, .aged_after_seconds = 300},
    };
}

static void load_top(struct vctx *v, const struct cfg__node *root)
{
    struct cfg_snapshot *s = v->s;
    struct tenant_settings ts;
    set_defaults(s, &ts);
    const struct cfg__node *shard_val = NULL;
    const struct cfg__node *listen_node = NULL;
    const struct cfg__node *admin_listen = NULL;
    const struct cfg__node *defaults[2] = {NULL, NULL};
    const struct cfg__node *tenants[2] = {NULL, NULL};

    for (size_t i = 0; i < root->count; i++) {
        const struct cfg__node *key = root->pairs[i].key;
        const struct cfg__node *val = root->pairs[i].value;
        if (cfg__key_is(key, "listen")) {
            cfg__set_endpoint(v, key, val, &s->listen);
            listen_node = val;
        } else if (cfg__key_is(key, "tls")) {
            load_tls(v, key, val);
        } else if (cfg__key_is(key, "region")) {
            const char *r = cfg__get_string(v, key, val);
            if (r != NULL && (strlen(r) > REGION_MAX || !cfg__chars_in(r, "-"))) {
                REPORT(v, val, "region must be 1 to %d of A-Z a-z 0-9 -, not %s", REGION_MAX,
                       cfg__qnode(val));
            } else if (r != NULL) {
                cfg__replace_str(&s->region, r);
            }
        } else if (cfg__key_is(key, "data_dir")) {
            const char *d = cfg__get_string(v, key, val);
            if (d != NULL) {
                cfg__replace_str(&s->data_dir, d);
            }
        } else if (cfg__key_is(key, "partitions")) {
            cfg__set_u32(v, key, val, 1, PARTITIONS_MAX, &s->partitions);
        } else if (cfg__key_is(key, "shard_size")) {
            uint64_t x;
            if (cfg__get_uint(v, key, val, 1, PARTITIONS_MAX, &x) == SL_OK) {
                s->shard_size = (uint32_t)x;
                shard_val = val;
            }
        } else if (cfg__key_is(key, "durability")) {
            bool os;
            if (cfg__get_enum(v, key, val, "fsync", "os", &os) == SL_OK) {
                s->durability = os ? CFG_DURABILITY_OS : CFG_DURABILITY_FSYNC;
            }
        } else if (cfg__key_is(key, "io_threads")) {
            cfg__set_u32(v, key, val, 0, IO_THREADS_MAX, &s->io_threads);
        } else if (cfg__key_is(key, "log_requests")) {
            cfg__set_bool(v, key, val, &s->log_requests);
        } else if (cfg__key_is(key, "server")) {
            load_server(v, key, val);
        } else if (cfg__key_is(key, "admin")) {
            load_admin(v, key, val, &admin_listen);
        } else if (cfg__key_is(key, "defaults")) {
            defaults[0] = key;
            defaults[1] = val;
        } else if (cfg__key_is(key, "tenants")) {
            tenants[0] = key;
            tenants[1] = val;
        } else if (cfg__key_is(key, "cluster")) {
            cfg__load_cluster(v, key, val);
        } else {
            cfg__report_unknown(v, CFG__SEC_TOP, "at the top level", key);
        }
    }

    if (s->io_threads == 0) {
        s->io_threads = cpu_count();
    }
    if (shard_val == NULL) {
        s->shard_size = SL_MIN(s->shard_size, s->partitions);
    } else if (s->shard_size > s->partitions) {
        REPORT(v, shard_val, "shard_size must not exceed partitions (%u), not %u", s->partitions,
               s->shard_size);
    }
    /* load_admin sets admin_listen whenever it enables admin */
    if (s->admin.enabled && admin_listen != NULL && s->admin.listen.port == s->listen.port &&
        strcmp(s->admin.listen.host, s->listen.host) == 0) {
        REPORT(v, admin_listen, "admin.listen must differ from listen%s",
               listen_node != NULL ? "" : " (127.0.0.1:9324 by default)");
    }
    /* defaults: first, so each tenant starts from them wherever they are. */
    if (defaults[0] != NULL) {
        load_defaults(v, defaults[0], defaults[1], &ts);
    }
    s->default_limits = ts.limits;
    s->default_on_excess = ts.on_excess;
    s->default_spill = ts.spill;
    s->default_auto_create_queues = ts.auto_create_queues;
    if (tenants[0] != NULL) {
        load_tenants(v, tenants[0], tenants[1], &ts);
    }
    cfg__check_key_reuse(v);
}

struct cfg_snapshot *cfg__validate(const struct cfg__node *root, const char *source,
                                   const char *base_dir, struct cfg__diagbuf *db)
{
    size_t before = db->count;
    if (root == NULL || cfg__node_is_null(root)) {
        cfg__diag_add(db, 1, 1, "the configuration is empty");
        return NULL;
    }
    if (root->kind != CFG__MAPPING) {
        cfg__diag_add(db, root->line, root->column, "the configuration must be a mapping, not %s",
                      cfg__describe(root));
        return NULL;
    }
    struct vctx v = {.db = db, .base_dir = base_dir};
    v.s = sl_xcalloc(1, sizeof(*v.s));
    v.s->source = sl_xstrdup(source);
    load_top(&v, root);
    if (db->count != before) {
        cfg__snapshot_free(v.s);
        return NULL;
    }
    v.s->_refs = 1;
    cfg__snapshot_index(v.s);
    return v.s;
}
