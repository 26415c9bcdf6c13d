/*
 * part_catalog.c -- the durable queue catalog and its in-memory index.
 *
 * The catalog lives in data_dir/catalog.db, written only by its own writer
 * thread (struct part_engine.catw), one transaction per operation. Why a
 * file of its own: queues are shared by all partitions of a tenant, so
 * putting them in one partition would make that partition's load and
 * health every tenant's problem; a separate file also keeps growing P a
 * matter of adding empty files. Queue operations are rare next to message
 * traffic, so group commit is not needed here.
 *
 * Queue ids come from an AUTOINCREMENT key and are never reused: a queue
 * deleted and created again under the same name is a different queue, and
 * messages or receipt handles of the old one can never reach the new one.
 *
 * In memory: two chained hash maps (tenant+name, id) and a tenant map,
 * under one rwlock. Loop threads only take the read lock; the catalog
 * writer takes the write lock briefly after each commit.
 *
 * Ownership: the maps hold one reference on each live queue; writers and
 * lookups take their own with part__queue_ref(). Tenants live until the
 * engine closes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "part_int.h"

#define LOG_MOD "partitions"

static const char CATALOG_SCHEMA[] =
    "CREATE TABLE IF NOT EXISTS queues("
    " id INTEGER PRIMARY KEY AUTOINCREMENT, tenant TEXT NOT NULL, name TEXT NOT NULL,"
    " created_ms INTEGER NOT NULL, modified_ms INTEGER NOT NULL,"
    " visibility_s INTEGER NOT NULL, delay_s INTEGER NOT NULL, retention_s INTEGER NOT NULL,"
    " fifo INTEGER NOT NULL, dlq_id INTEGER NOT NULL, max_receive INTEGER NOT NULL,"
    " max_message_size INTEGER NOT NULL, receive_wait_s INTEGER NOT NULL,"
    " UNIQUE(tenant, name));"
    "CREATE TABLE IF NOT EXISTS queue_attrs(queue_id INTEGER NOT NULL, key TEXT NOT NULL,"
    " value TEXT NOT NULL, PRIMARY KEY(queue_id, key)) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS queue_tags(queue_id INTEGER NOT NULL, key TEXT NOT NULL,"
    " value TEXT NOT NULL, PRIMARY KEY(queue_id, key)) WITHOUT ROWID;";

struct part_queue_config part_queue_config_default(void)
{
    return (struct part_queue_config){
        .visibility_timeout_s = 30,
        .delay_s = 0,
        .retention_s = 345600,
        .fifo = false,
        .dlq_target_id = 0,
        .max_receive_count = 0,
        .max_message_size = 1048576,
        .receive_wait_s = 0,
    };
}

/* ---- hashing ----------------------------------------------------------- */

static uint64_t hash_bytes(uint64_t h, const char *s)
{
    /* FNV-1a: the keys are queue names, not attacker-chosen at scale
     * (creation is authenticated and rate limited). */
    for (; *s; s++) {
        h ^= (uint8_t)*s;
        h *= 1099511628211ull;
    }
    return h;
}

static uint64_t hash_name(const char *tenant, const char *name)
{
    uint64_t h = hash_bytes(14695981039346656037ull, tenant);
    h ^= 0xff;
    h *= 1099511628211ull;
    return hash_bytes(h, name);
}

static uint64_t hash_id(uint64_t id)
{
    id ^= id >> 33;
    id *= 0xff51afd7ed558ccdull;
    id ^= id >> 33;
    return id;
}

static struct part_tenant *tenant_find(struct part_catalog *c, const char *name)
{
    struct part_tenant *t = c->tenants[hash_bytes(14695981039346656037ull, name) % c->tenant_cap];
    while (t != NULL && strcmp(t->name, name) != 0) {
        t = t->next;
    }
    return t;
}

/* Caller holds the write lock. */
static struct part_tenant *tenant_get(struct part_catalog *c, const char *name)
{
    struct part_tenant *t = tenant_find(c, name);
    if (t == NULL) {
        size_t b = hash_bytes(14695981039346656037ull, name) % c->tenant_cap;
        t = sl_xcalloc(1, sizeof *t);
        t->name = sl_xstrdup(name);
        t->next = c->tenants[b];
        c->tenants[b] = t;
    }
    return t;
}

static struct part_queue *find_by_name(struct part_catalog *c, const char *tenant, const char *name)
{
    struct part_queue *q = c->by_name[hash_name(tenant, name) % c->cap];
    while (q != NULL && (strcmp(q->name, name) != 0 || strcmp(q->tenant_name, tenant) != 0)) {
        q = q->next_by_name;
    }
    return q;
}

static struct part_queue *find_by_id(struct part_catalog *c, uint64_t id)
{
    struct part_queue *q = c->by_id[hash_id(id) % c->cap];
    while (q != NULL && q->id != id) {
        q = q->next_by_id;
    }
    return q;
}

static void map_link(struct part_catalog *c, struct part_queue *q)
{
    size_t bn = hash_name(q->tenant_name, q->name) % c->cap;
    size_t bi = hash_id(q->id) % c->cap;
    q->next_by_name = c->by_name[bn];
    c->by_name[bn] = q;
    q->next_by_id = c->by_id[bi];
    c->by_id[bi] = q;
}

/* Caller holds the write lock. Doubles the maps when they get crowded. */
static void map_insert(struct part_catalog *c, struct part_queue *q)
{
    if (c->count + 1 > c->cap) {
        size_t old_cap = c->cap;
        struct part_queue **old = c->by_id;
        free(c->by_name);
        c->cap *= 2;
        c->by_name = sl_xcalloc(c->cap, sizeof *c->by_name);
        c->by_id = sl_xcalloc(c->cap, sizeof *c->by_id);
        for (size_t i = 0; i < old_cap; i++) {
            struct part_queue *it = old[i];
            while (it != NULL) {
                struct part_queue *next = it->next_by_id;
                map_link(c, it);
                it = next;
            }
        }
        free(old);
    }
    map_link(c, q);
    c->count++;
}

static void map_remove(struct part_catalog *c, struct part_queue *q)
{
    struct part_queue **pp = &c->by_name[hash_name(q->tenant_name, q->name) % c->cap];
    while (*pp != q) {
        pp = &(*pp)->next_by_name;
    }
    *pp = q->next_by_name;
    pp = &c->by_id[hash_id(q->id) % c->cap];
    while (*pp != q) {
        pp = &(*pp)->next_by_id;
    }
    *pp = q->next_by_id;
    c->count--;
}

/* ---- queue objects ----------------------------------------------------- */

static void kv_free(struct part_kv *kv, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free((char *)kv[i].key);
        free((char *)kv[i].value);
    }
    free(kv);
}

static struct part_kv *kv_dup(const struct part_kv *kv, size_t n)
{
    struct part_kv *out = sl_xcalloc(n ? n : 1, sizeof *out);
    for (size_t i = 0; i < n; i++) {
        out[i].key = sl_xstrdup(kv[i].key);
        out[i].value = sl_xstrdup(kv[i].value);
    }
    return out;
}

static int kv_cmp(const void *a, const void *b)
{
    return strcmp(((const struct part_kv *)a)->key, ((const struct part_kv *)b)->key);
}

/* Upserts (value != NULL) or removes (value == NULL) keys in a sorted set. */
static void kv_apply(struct part_kv **set, size_t *n, const struct part_kv *chg, size_t nchg)
{
    for (size_t i = 0; i < nchg; i++) {
        size_t j = 0;
        while (j < *n && strcmp((*set)[j].key, chg[i].key) != 0) {
            j++;
        }
        if (j < *n) {
            free((char *)(*set)[j].value);
            if (chg[i].value != NULL) {
                (*set)[j].value = sl_xstrdup(chg[i].value);
                continue;
            }
            free((char *)(*set)[j].key);
            (*set)[j] = (*set)[*n - 1];
            (*n)--;
        } else if (chg[i].value != NULL) {
            *set = sl_xrealloc(*set, (*n + 1) * sizeof **set);
            (*set)[*n].key = sl_xstrdup(chg[i].key);
            (*set)[*n].value = sl_xstrdup(chg[i].value);
            (*n)++;
        }
    }
    if (*n > 1) {
        qsort(*set, *n, sizeof **set, kv_cmp);
    }
}

static struct part_queue *queue_new(struct part_engine *e, uint64_t id, const char *tenant,
                                    const char *name)
{
    struct part_queue *q = sl_xcalloc(1, sizeof *q);
    atomic_init(&q->refs, 1);
    q->id = id;
    q->tenant_name = sl_xstrdup(tenant);
    q->name = sl_xstrdup(name);
    q->per = sl_xcalloc(e->nparts, sizeof *q->per);
    q->nparts = e->nparts;
    for (uint32_t p = 0; p < e->nparts; p++) {
        atomic_init(&q->per[p].head_priority[PART_LANE_MAIN], INT64_MAX);
        atomic_init(&q->per[p].head_priority[PART_LANE_OVERFLOW], INT64_MAX);
    }
    q->attrs = sl_xcalloc(1, sizeof *q->attrs);
    q->tags = sl_xcalloc(1, sizeof *q->tags);
    pthread_mutex_init(&q->wait_mu, NULL);
    return q;
}

static void queue_free(struct part_queue *q)
{
    kv_free(q->attrs, q->attr_count);
    kv_free(q->tags, q->tag_count);
    pthread_mutex_destroy(&q->wait_mu);
    for (uint32_t p = 0; p < q->nparts; p++) {
        part__groups_free(q->per[p].groups);
    }
    free(q->per);
    free(q->tenant_name);
    free(q->name);
    free(q);
}

struct part_queue *part__queue_ref(struct part_engine *e, uint64_t id)
{
    struct part_catalog *c = &e->catalog;
    pthread_rwlock_rdlock(&c->lock);
    struct part_queue *q = find_by_id(c, id);
    if (q != NULL) {
        atomic_fetch_add(&q->refs, 1);
    }
    pthread_rwlock_unlock(&c->lock);
    return q;
}

void part__queue_unref(struct part_queue *q)
{
    if (q != NULL && atomic_fetch_sub(&q->refs, 1) == 1) {
        queue_free(q);
    }
}

bool part__queue_cfg(struct part_engine *e, struct part_queue *q, struct part_queue_config *out)
{
    pthread_rwlock_rdlock(&e->catalog.lock);
    bool live = !q->deleted;
    *out = q->cfg;
    pthread_rwlock_unlock(&e->catalog.lock);
    return live;
}

bool part__queue_known(struct part_engine *e, uint64_t id)
{
    pthread_rwlock_rdlock(&e->catalog.lock);
    bool known = find_by_id(&e->catalog, id) != NULL;
    pthread_rwlock_unlock(&e->catalog.lock);
    return known;
}

static void qcount_add(struct part_qcount *c, const struct part_qdelta *d)
{
    atomic_fetch_add(&c->ready, d->ready);
    atomic_fetch_add(&c->inflight, d->inflight);
    atomic_fetch_add(&c->delayed, d->delayed);
    atomic_fetch_add(&c->overflow_ready, d->overflow_ready);
    atomic_fetch_add(&c->overflow_delayed, d->overflow_delayed);
}

void part__counts_add(struct part_queue *q, uint32_t p, const struct part_qdelta *d)
{
    qcount_add(&q->per[p], d);
    qcount_add(&q->total, d);
    atomic_fetch_add(&q->tenant->backlog, d->ready + d->delayed);
    atomic_fetch_add(&q->tenant->inflight, d->inflight);
}

uint64_t part__tenant_aging(const struct part_queue *q)
{
    return atomic_load_explicit(&q->tenant->aged_after_ms, memory_order_relaxed);
}

void part__queue_foreach(struct part_engine *e, void (*fn)(struct part_queue *q, void *arg),
                         void *arg)
{
    struct part_catalog *c = &e->catalog;
    pthread_rwlock_rdlock(&c->lock);
    for (size_t i = 0; i < c->cap; i++) {
        for (struct part_queue *q = c->by_id[i]; q != NULL; q = q->next_by_id) {
            fn(q, arg);
        }
    }
    pthread_rwlock_unlock(&c->lock);
}

/* ---- public reads ------------------------------------------------------ */

int part_queue_find(struct part_engine *e, const char *tenant, const char *name, uint64_t *id,
                    struct part_queue_config *cfg)
{
    struct part_catalog *c = &e->catalog;
    pthread_rwlock_rdlock(&c->lock);
    struct part_queue *q = find_by_name(c, tenant, name);
    if (q != NULL) {
        *id = q->id;
        if (cfg != NULL) {
            *cfg = q->cfg;
        }
    }
    pthread_rwlock_unlock(&c->lock);
    return q != NULL ? SL_OK : SL_ENOTFOUND;
}

/* Caller holds a lock. */
static struct part_queue_info *info_of(const struct part_queue *q)
{
    struct part_queue_info *qi = sl_xcalloc(1, sizeof *qi);
    qi->id = q->id;
    qi->tenant = sl_xstrdup(q->tenant_name);
    qi->name = sl_xstrdup(q->name);
    qi->created_ms = q->created_ms;
    qi->modified_ms = q->modified_ms;
    qi->cfg = q->cfg;
    qi->attrs = kv_dup(q->attrs, q->attr_count);
    qi->attr_count = q->attr_count;
    qi->tags = kv_dup(q->tags, q->tag_count);
    qi->tag_count = q->tag_count;
    return qi;
}

void part_queue_info_free(struct part_queue_info *qi)
{
    if (qi == NULL) {
        return;
    }
    kv_free(qi->attrs, qi->attr_count);
    kv_free(qi->tags, qi->tag_count);
    free(qi->tenant);
    free(qi->name);
    free(qi);
}

int part_queue_get(struct part_engine *e, uint64_t id, struct part_queue_info **out)
{
    struct part_catalog *c = &e->catalog;
    pthread_rwlock_rdlock(&c->lock);
    struct part_queue *q = find_by_id(c, id);
    if (q != NULL) {
        *out = info_of(q);
    }
    pthread_rwlock_unlock(&c->lock);
    return q != NULL ? SL_OK : SL_ENOTFOUND;
}

static int ref_cmp(const void *a, const void *b)
{
    const struct part_queue_ref *x = a, *y = b;
    int r = strcmp(x->tenant, y->tenant);
    return r != 0 ? r : strcmp(x->name, y->name);
}

static void list_push(struct part_queue_list *l, size_t *cap, const struct part_queue *q)
{
    if (l->count == *cap) {
        *cap = *cap ? *cap * 2 : 16;
        l->items = sl_xrealloc(l->items, *cap * sizeof *l->items);
    }
    l->items[l->count++] =
        (struct part_queue_ref){q->id, sl_xstrdup(q->tenant_name), sl_xstrdup(q->name)};
}

int part_queue_list(struct part_engine *e, const char *tenant, const char *prefix,
                    struct part_queue_list *out)
{
    struct part_catalog *c = &e->catalog;
    size_t plen = prefix ? strlen(prefix) : 0, cap = 0;
    *out = (struct part_queue_list){0};
    pthread_rwlock_rdlock(&c->lock);
    for (size_t i = 0; i < c->cap; i++) {
        for (struct part_queue *q = c->by_id[i]; q != NULL; q = q->next_by_id) {
            if ((tenant == NULL || strcmp(q->tenant_name, tenant) == 0) &&
                strncmp(q->name, plen ? prefix : "", plen) == 0) {
                list_push(out, &cap, q);
            }
        }
    }
    pthread_rwlock_unlock(&c->lock);
    if (out->count > 1) {
        qsort(out->items, out->count, sizeof *out->items, ref_cmp);
    }
    return SL_OK;
}

int part_queue_dlq_sources(struct part_engine *e, uint64_t target_id, struct part_queue_list *out)
{
    struct part_catalog *c = &e->catalog;
    size_t cap = 0;
    *out = (struct part_queue_list){0};
    pthread_rwlock_rdlock(&c->lock);
    for (size_t i = 0; i < c->cap; i++) {
        for (struct part_queue *q = c->by_id[i]; q != NULL; q = q->next_by_id) {
            if (target_id != 0 && q->cfg.dlq_target_id == target_id) {
                list_push(out, &cap, q);
            }
        }
    }
    pthread_rwlock_unlock(&c->lock);
    if (out->count > 1) {
        qsort(out->items, out->count, sizeof *out->items, ref_cmp);
    }
    return SL_OK;
}

void part_queue_list_free(struct part_queue_list *l)
{
    for (size_t i = 0; i < l->count; i++) {
        free(l->items[i].tenant);
        free(l->items[i].name);
    }
    free(l->items);
    *l = (struct part_queue_list){0};
}

static void counts_load(const struct part_qcount *c, struct part_counts *out)
{
    out->ready = atomic_load(&c->ready);
    out->inflight = atomic_load(&c->inflight);
    out->delayed = atomic_load(&c->delayed);
    out->overflow_ready = atomic_load(&c->overflow_ready);
    out->overflow_delayed = atomic_load(&c->overflow_delayed);
}

/* The oldest ready message's send time: every row's priority is its send
 * time (part_send's default, which the gateway never overrides), so it is
 * the best head of either lane on any partition. */
static uint64_t oldest_ready(const struct part_queue *q, uint32_t first, uint32_t end)
{
    int64_t best = INT64_MAX;
    for (uint32_t p = first; p < end; p++) {
        for (int lane = 0; lane < 2; lane++) {
            best = SL_MIN(best, atomic_load(&q->per[p].head_priority[lane]));
        }
    }
    return best == INT64_MAX || best < 0 ? 0 : (uint64_t)best;
}

int part_queue_counts(struct part_engine *e, uint64_t queue_id, uint32_t partition,
                      struct part_counts *out)
{
    if (partition != PART_ALL_PARTITIONS && partition >= e->nparts) {
        return SL_EINVAL;
    }
    struct part_catalog *c = &e->catalog;
    pthread_rwlock_rdlock(&c->lock);
    struct part_queue *q = find_by_id(c, queue_id);
    if (q != NULL) {
        bool all = partition == PART_ALL_PARTITIONS;
        counts_load(all ? &q->total : &q->per[partition], out);
        out->oldest_ready_ms =
            all ? oldest_ready(q, 0, q->nparts) : oldest_ready(q, partition, partition + 1);
    }
    pthread_rwlock_unlock(&c->lock);
    return q != NULL ? SL_OK : SL_ENOTFOUND;
}

void part_tenant_counts(struct part_engine *e, const char *tenant, int64_t *backlog,
                        int64_t *inflight)
{
    struct part_catalog *c = &e->catalog;
    pthread_rwlock_rdlock(&c->lock);
    struct part_tenant *t = tenant_find(c, tenant);
    *backlog = t ? atomic_load(&t->backlog) : 0;
    *inflight = t ? atomic_load(&t->inflight) : 0;
    pthread_rwlock_unlock(&c->lock);
}

void part_tenant_stats(struct part_engine *e, const char *tenant, struct part_tenant_stats *out)
{
    struct part_catalog *c = &e->catalog;
    *out = (struct part_tenant_stats){0};
    pthread_rwlock_rdlock(&c->lock);
    struct part_tenant *t = tenant_find(c, tenant);
    if (t != NULL) {
        out->expired = atomic_load(&t->expired);
        out->aged = atomic_load(&t->aged);
        out->dead_lettered = atomic_load(&t->dead_lettered);
    }
    pthread_rwlock_unlock(&c->lock);
}

void part_tenant_set_aging(struct part_engine *e, const char *tenant, uint64_t aged_after_ms)
{
    /* Tenants are otherwise made by the catalog writer with a tenant's
     * first queue; making one here, under the same write lock, lets the
     * setting precede that queue. */
    struct part_catalog *c = &e->catalog;
    pthread_rwlock_wrlock(&c->lock);
    atomic_store(&tenant_get(c, tenant)->aged_after_ms, aged_after_ms);
    pthread_rwlock_unlock(&c->lock);
}

/* ---- open / load ------------------------------------------------------- */

int part__sql_exec(sqlite3 *db, const char *sql)
{
    char *msg = NULL;
    int rc = sqlite3_exec(db, sql, NULL, NULL, &msg);
    if (rc != SQLITE_OK) {
        sl_log(SL_LOG_ERROR, LOG_MOD, "sqlite: %s: %s", msg ? msg : sqlite3_errstr(rc), sql);
        sqlite3_free(msg);
        return SL_EIO;
    }
    return SL_OK;
}

static void load_kvs(sqlite3 *db, struct part_engine *e, const char *table)
{
    char sql[128];
    snprintf(sql, sizeof sql, "SELECT queue_id, key, value FROM %s ORDER BY queue_id, key", table);
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        return;
    }
    bool tags = strcmp(table, "queue_tags") == 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        struct part_queue *q = find_by_id(&e->catalog, (uint64_t)sqlite3_column_int64(st, 0));
        if (q == NULL) {
            continue;
        }
        struct part_kv kv = {(const char *)sqlite3_column_text(st, 1),
                             (const char *)sqlite3_column_text(st, 2)};
        kv_apply(tags ? &q->tags : &q->attrs, tags ? &q->tag_count : &q->attr_count, &kv, 1);
    }
    sqlite3_finalize(st);
}

static void row_cfg(sqlite3_stmt *st, int col, struct part_queue_config *cfg)
{
    cfg->visibility_timeout_s = (uint32_t)sqlite3_column_int64(st, col);
    cfg->delay_s = (uint32_t)sqlite3_column_int64(st, col + 1);
    cfg->retention_s = (uint32_t)sqlite3_column_int64(st, col + 2);
    cfg->fifo = sqlite3_column_int(st, col + 3) != 0;
    cfg->dlq_target_id = (uint64_t)sqlite3_column_int64(st, col + 4);
    cfg->max_receive_count = (uint32_t)sqlite3_column_int64(st, col + 5);
    cfg->max_message_size = (uint32_t)sqlite3_column_int64(st, col + 6);
    cfg->receive_wait_s = (uint32_t)sqlite3_column_int64(st, col + 7);
}

int part__catalog_open(struct part_engine *e, char *err, size_t errlen)
{
    struct part_catalog *c = &e->catalog;
    pthread_rwlock_init(&c->lock, NULL);
    c->cap = 64;
    c->by_name = sl_xcalloc(c->cap, sizeof *c->by_name);
    c->by_id = sl_xcalloc(c->cap, sizeof *c->by_id);
    c->tenant_cap = 256;
    c->tenants = sl_xcalloc(c->tenant_cap, sizeof *c->tenants);

    char path[4096];
    snprintf(path, sizeof path, "%s/catalog.db", e->data_dir);
    if (sqlite3_open_v2(path, &c->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) !=
        SQLITE_OK) {
        snprintf(err, errlen, "%s: %s", path, c->db ? sqlite3_errmsg(c->db) : "cannot open");
        return SL_EIO;
    }
    const char *sync = e->opt.durability == PART_DURABILITY_FSYNC ? "FULL" : "NORMAL";
    char pragmas[256];
    snprintf(pragmas, sizeof pragmas,
             "PRAGMA journal_mode=WAL; PRAGMA synchronous=%s; PRAGMA foreign_keys=OFF;", sync);
    if (part__sql_exec(c->db, pragmas) != SL_OK || part__sql_exec(c->db, CATALOG_SCHEMA) != SL_OK) {
        snprintf(err, errlen, "%s: unusable catalog: %s", path, sqlite3_errmsg(c->db));
        return SL_EIO;
    }
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(c->db,
                           "SELECT id, tenant, name, created_ms, modified_ms, visibility_s,"
                           " delay_s, retention_s, fifo, dlq_id, max_receive, max_message_size,"
                           " receive_wait_s FROM queues",
                           -1, &st, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "%s: %s", path, sqlite3_errmsg(c->db));
        return SL_EIO;
    }
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct part_queue *q = queue_new(e, (uint64_t)sqlite3_column_int64(st, 0),
                                         (const char *)sqlite3_column_text(st, 1),
                                         (const char *)sqlite3_column_text(st, 2));
        q->created_ms = (uint64_t)sqlite3_column_int64(st, 3);
        q->modified_ms = (uint64_t)sqlite3_column_int64(st, 4);
        row_cfg(st, 5, &q->cfg);
        q->tenant = tenant_get(c, q->tenant_name);
        map_insert(c, q);
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        snprintf(err, errlen, "%s: %s", path, sqlite3_errmsg(c->db));
        return SL_EIO;
    }
    load_kvs(c->db, e, "queue_attrs");
    load_kvs(c->db, e, "queue_tags");
    sl_log(SL_LOG_INFO, LOG_MOD, "catalog: %zu queues", c->count);
    return SL_OK;
}

void part__catalog_close(struct part_engine *e)
{
    struct part_catalog *c = &e->catalog;
    if (c->db != NULL) {
        sqlite3_close(c->db);
        c->db = NULL;
    }
    for (size_t i = 0; c->by_id != NULL && i < c->cap; i++) {
        struct part_queue *q = c->by_id[i];
        while (q != NULL) {
            struct part_queue *next = q->next_by_id;
            part__queue_unref(q);
            q = next;
        }
    }
    free(c->by_id);
    free(c->by_name);
    for (size_t i = 0; c->tenants != NULL && i < c->tenant_cap; i++) {
        struct part_tenant *t = c->tenants[i];
        while (t != NULL) {
            struct part_tenant *next = t->next;
            free(t->name);
            free(t);
            t = next;
        }
    }
    free(c->tenants);
    pthread_rwlock_destroy(&c->lock);
}

/* ---- catalog jobs (catalog writer thread) ------------------------------- */

void part__catalog_req_free(struct part_catalog_req *r)
{
    if (r == NULL) {
        return;
    }
    free(r->tenant);
    free(r->name);
    kv_free(r->kvs, r->nkv);
    kv_free(r->tags, r->ntags);
    for (size_t i = 0; i < r->nkeys; i++) {
        free(r->keys[i]);
    }
    free(r->keys);
    free(r);
}

static int step_done(sqlite3_stmt *st)
{
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? SL_OK : SL_EIO;
}

static int kv_write(sqlite3 *db, const char *table, uint64_t qid, const struct part_kv *kv,
                    size_t n)
{
    char ins[128], del[128];
    snprintf(ins, sizeof ins, "INSERT OR REPLACE INTO %s(queue_id, key, value) VALUES(?,?,?)",
             table);
    snprintf(del, sizeof del, "DELETE FROM %s WHERE queue_id=? AND key=?", table);
    for (size_t i = 0; i < n; i++) {
        sqlite3_stmt *st = NULL;
        if (sqlite3_prepare_v2(db, kv[i].value ? ins : del, -1, &st, NULL) != SQLITE_OK) {
            return SL_EIO;
        }
        sqlite3_bind_int64(st, 1, (sqlite3_int64)qid);
        sqlite3_bind_text(st, 2, kv[i].key, -1, SQLITE_STATIC);
        if (kv[i].value) {
            sqlite3_bind_text(st, 3, kv[i].value, -1, SQLITE_STATIC);
        }
        if (step_done(st) != SL_OK) {
            return SL_EIO;
        }
    }
    return SL_OK;
}

static int exec_create(struct part_engine *e, struct part_job *job, struct part_queue **created)
{
    struct part_catalog *c = &e->catalog;
    struct part_catalog_req *r = job->cat;
    pthread_rwlock_rdlock(&c->lock);
    struct part_queue *old = find_by_name(c, r->tenant, r->name);
    if (old != NULL) {
        job->res.queue = info_of(old);
    }
    pthread_rwlock_unlock(&c->lock);
    if (old != NULL) {
        return SL_EEXIST;
    }
    uint64_t now = part__now(e);
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(c->db,
                           "INSERT INTO queues(tenant, name, created_ms, modified_ms,"
                           " visibility_s, delay_s, retention_s, fifo, dlq_id, max_receive,"
                           " max_message_size, receive_wait_s)"
                           " VALUES(?,?,?,?,?,?,?,?,?,?,?,?)",
                           -1, &st, NULL) != SQLITE_OK) {
        return SL_EIO;
    }
    sqlite3_bind_text(st, 1, r->tenant, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, r->name, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 3, (sqlite3_int64)now);
    sqlite3_bind_int64(st, 4, (sqlite3_int64)now);
    sqlite3_bind_int64(st, 5, r->cfg.visibility_timeout_s);
    sqlite3_bind_int64(st, 6, r->cfg.delay_s);
    sqlite3_bind_int64(st, 7, r->cfg.retention_s);
    sqlite3_bind_int(st, 8, r->cfg.fifo);
    sqlite3_bind_int64(st, 9, (sqlite3_int64)r->cfg.dlq_target_id);
    sqlite3_bind_int64(st, 10, r->cfg.max_receive_count);
    sqlite3_bind_int64(st, 11, r->cfg.max_message_size);
    sqlite3_bind_int64(st, 12, r->cfg.receive_wait_s);
    if (step_done(st) != SL_OK) {
        return SL_EIO;
    }
    uint64_t id = (uint64_t)sqlite3_last_insert_rowid(c->db);
    if (kv_write(c->db, "queue_attrs", id, r->kvs, r->nkv) != SL_OK ||
        kv_write(c->db, "queue_tags", id, r->tags, r->ntags) != SL_OK) {
        return SL_EIO;
    }
    struct part_queue *q = queue_new(e, id, r->tenant, r->name);
    q->created_ms = q->modified_ms = now;
    q->cfg = r->cfg;
    kv_apply(&q->attrs, &q->attr_count, r->kvs, r->nkv);
    kv_apply(&q->tags, &q->tag_count, r->tags, r->ntags);
    *created = q;
    return SL_OK;
}

static int touch(struct part_engine *e, uint64_t id, const struct part_queue_config *cfg,
                 uint64_t now)
{
    sqlite3_stmt *st = NULL;
    const char *sql = cfg ? "UPDATE queues SET modified_ms=?, visibility_s=?, delay_s=?,"
                            " retention_s=?, fifo=?, dlq_id=?, max_receive=?, max_message_size=?,"
                            " receive_wait_s=? WHERE id=?"
                          : "UPDATE queues SET modified_ms=? WHERE id=?";
    if (sqlite3_prepare_v2(e->catalog.db, sql, -1, &st, NULL) != SQLITE_OK) {
        return SL_EIO;
    }
    sqlite3_bind_int64(st, 1, (sqlite3_int64)now);
    if (cfg) {
        sqlite3_bind_int64(st, 2, cfg->visibility_timeout_s);
        sqlite3_bind_int64(st, 3, cfg->delay_s);
        sqlite3_bind_int64(st, 4, cfg->retention_s);
        sqlite3_bind_int(st, 5, cfg->fifo);
        sqlite3_bind_int64(st, 6, (sqlite3_int64)cfg->dlq_target_id);
        sqlite3_bind_int64(st, 7, cfg->max_receive_count);
        sqlite3_bind_int64(st, 8, cfg->max_message_size);
        sqlite3_bind_int64(st, 9, cfg->receive_wait_s);
        sqlite3_bind_int64(st, 10, (sqlite3_int64)id);
    } else {
        sqlite3_bind_int64(st, 2, (sqlite3_int64)id);
    }
    return step_done(st);
}

static int exec_delete(struct part_engine *e, uint64_t id)
{
    static const char *const sqls[] = {"DELETE FROM queues WHERE id=?",
                                       "DELETE FROM queue_attrs WHERE queue_id=?",
                                       "DELETE FROM queue_tags WHERE queue_id=?"};
    for (size_t i = 0; i < SL_ARRAY_LEN(sqls); i++) {
        sqlite3_stmt *st = NULL;
        if (sqlite3_prepare_v2(e->catalog.db, sqls[i], -1, &st, NULL) != SQLITE_OK) {
            return SL_EIO;
        }
        sqlite3_bind_int64(st, 1, (sqlite3_int64)id);
        if (step_done(st) != SL_OK) {
            return SL_EIO;
        }
    }
    return SL_OK;
}

void part__catalog_exec(struct part_engine *e, struct part_job *job)
{
    struct part_catalog *c = &e->catalog;
    struct part_catalog_req *r = job->cat;
    struct part_queue *created = NULL;
    uint64_t now = part__now(e);
    if (job->op != PART_OP_Q_CREATE && !part__queue_known(e, job->queue_id)) {
        job->status = SL_ENOTFOUND;
        part__complete(job);
        return;
    }
    if (part__sql_exec(c->db, "BEGIN IMMEDIATE") != SL_OK) {
        job->status = SL_EIO;
        part__complete(job);
        return;
    }
    int rc = SL_OK;
    switch (job->op) {
    case PART_OP_Q_CREATE:
        rc = exec_create(e, job, &created);
        break;
    case PART_OP_Q_SET_ATTRS:
        rc = touch(e, job->queue_id, &r->cfg, now);
        if (rc == SL_OK) {
            rc = kv_write(c->db, "queue_attrs", job->queue_id, r->kvs, r->nkv);
        }
        break;
    case PART_OP_Q_TAG:
    case PART_OP_Q_UNTAG:
        rc = touch(e, job->queue_id, NULL, now);
        if (rc == SL_OK) {
            rc = kv_write(c->db, "queue_tags", job->queue_id, r->kvs, r->nkv);
        }
        break;
    case PART_OP_Q_DELETE:
        rc = exec_delete(e, job->queue_id);
        break;
    default:
        SL_ASSERT(!"not a catalog op");
    }
    if (rc != SL_OK || part__sql_exec(c->db, "COMMIT") != SL_OK) {
        part__sql_exec(c->db, "ROLLBACK");
        if (created != NULL) {
            part__queue_unref(created);
        }
        job->status = rc == SL_EEXIST ? SL_EEXIST : SL_EIO;
        part__complete(job);
        return;
    }

    /* Committed: make it visible in memory. */
    struct part_queue *q = NULL;
    pthread_rwlock_wrlock(&c->lock);
    if (created != NULL) {
        created->tenant = tenant_get(c, created->tenant_name);
        map_insert(c, created);
        q = created;
    } else {
        q = find_by_id(c, job->queue_id);
        SL_ASSERT(q != NULL); /* only this thread removes queues */
        q->modified_ms = now;
        if (job->op == PART_OP_Q_SET_ATTRS) {
            q->cfg = r->cfg;
            kv_apply(&q->attrs, &q->attr_count, r->kvs, r->nkv);
        } else if (job->op == PART_OP_Q_TAG || job->op == PART_OP_Q_UNTAG) {
            kv_apply(&q->tags, &q->tag_count, r->kvs, r->nkv);
        } else if (job->op == PART_OP_Q_DELETE) {
            map_remove(c, q);
            q->deleted = true;
        }
    }
    job->res.queue = info_of(q);
    pthread_rwlock_unlock(&c->lock);

    if (job->op != PART_OP_Q_DELETE) {
        job->status = SL_OK;
        part__complete(job);
        return;
    }
    /* The name is free now; remove the messages from every partition. The
     * job completes when the last purge does (restart does the same for a
     * purge that a crash interrupted, see part_writer.c). */
    part__flush_waiters(q, SL_ENOTFOUND);
    job->status = SL_OK;
    atomic_store(&job->pending, (int)e->nparts);
    for (uint32_t p = 0; p < e->nparts; p++) {
        struct part_job *sub = sl_xcalloc(1, sizeof *sub);
        sub->op = PART_OP_PURGE;
        sub->engine = e;
        sub->parent = job;
        sub->queue_id = job->queue_id;
        sub->q = q;
        atomic_fetch_add(&q->refs, 1);
        sub->partition = p;
        part__submit_partition(e, p, sub);
    }
    part__queue_unref(q); /* the map's reference */
}
