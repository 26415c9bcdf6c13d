/*
 * part_catalog.c -- the queue catalog in memory: queue objects, the maps
 * that find them, their counters, tenants, and the public reads.
 *
 * Stack: below the writers and the client layer (which look queues up and
 * count messages) and below part_catalog_db.c (which loads and changes the
 * maps); calls only part_groups.c. catalog.db itself is part_catalog_db.c's.
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

#include "part_catalog.h"
#include "part_gdir.h"
#include "part_gheap.h"
#include "part_groups.h"

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
struct part_tenant *part__tenant_get(struct part_catalog *c, const char *name)
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

struct part_queue *part__queue_by_name(struct part_catalog *c, const char *tenant, const char *name)
{
    struct part_queue *q = c->by_name[hash_name(tenant, name) % c->cap];
    while (q != NULL && (strcmp(q->name, name) != 0 || strcmp(q->tenant_name, tenant) != 0)) {
        q = q->next_by_name;
    }
    return q;
}

struct part_queue *part__queue_by_id(struct part_catalog *c, uint64_t id)
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
void part__catalog_insert(struct part_catalog *c, struct part_queue *q)
{
    if (c->count + 1 > c->cap) {
        size_t old_cap = c->cap;
        struct part_queue **old = c->by_id;
        free(c->by_name);
        c->cap = c->cap > 0 ? c->cap * 2 : 16;
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

void part__catalog_remove(struct part_catalog *c, struct part_queue *q)
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

void part__kv_free(struct part_kv *kv, size_t n)
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
void part__kv_apply(struct part_kv **set, size_t *n, const struct part_kv *chg, size_t nchg)
{
    for (size_t i = 0; i < nchg; i++) {
        size_t j = 0;
        while (j < *n && strcmp((*set)[j].key, chg[i].key) != 0) {
            j++;
        }
        if (j < *n) {
            struct part_kv *kv = &(*set)[j];
            /* The analyzer cannot tell the entry moved into a hole below
             * from the one freed here; each value is freed exactly once. */
            free((char *)kv->value); // NOLINT(clang-analyzer-unix.Malloc)
            kv->value = NULL;
            if (chg[i].value != NULL) {
                kv->value = sl_xstrdup(chg[i].value);
                continue;
            }
            free((char *)kv->key);
            (*n)--;
            if (j != *n) {
                *kv = (*set)[*n]; /* the last entry fills the hole */
            }
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

struct part_queue *part__queue_new(struct part_engine *e, uint64_t id, const char *tenant,
                                   const char *name, bool fifo, bool grouped)
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
        q->per[p].gen = 1; /* not walked yet: the first receive rebuilds avail */
    }
    q->attrs = sl_xcalloc(1, sizeof *q->attrs);
    q->tags = sl_xcalloc(1, sizeof *q->tags);
    pthread_mutex_init(&q->wait_mu, NULL);
    q->fifo = fifo;
    q->gdir = fifo || grouped ? part__gdir_new() : NULL;
    return q;
}

static void queue_free(struct part_queue *q)
{
    part__kv_free(q->attrs, q->attr_count);
    part__kv_free(q->tags, q->tag_count);
    pthread_mutex_destroy(&q->wait_mu);
    for (uint32_t p = 0; p < q->nparts; p++) {
        part__groups_free(q->per[p].groups);
        part__gheap_free(q->per[p].avail);
    }
    free(q->per);
    part__gdir_free(q->gdir);
    free(q->tenant_name);
    free(q->name);
    free(q);
}

struct part_queue *part__queue_ref(struct part_engine *e, uint64_t id)
{
    struct part_catalog *c = &e->catalog;
    pthread_rwlock_rdlock(&c->lock);
    struct part_queue *q = part__queue_by_id(c, id);
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
    bool known = part__queue_by_id(&e->catalog, id) != NULL;
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

void part__groups_publish(struct part_queue *q, uint32_t p)
{
    struct part_qcount *qc = &q->per[p];
    int64_t now = (int64_t)part__groups_count(qc->groups);
    int64_t was = atomic_exchange(&qc->groups_inflight, now);
    atomic_fetch_add(&q->total.groups_inflight, now - was);
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
    struct part_queue *q = part__queue_by_name(c, tenant, name);
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
struct part_queue_info *part__queue_info(const struct part_queue *q)
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
    part__kv_free(qi->attrs, qi->attr_count);
    part__kv_free(qi->tags, qi->tag_count);
    free(qi->tenant);
    free(qi->name);
    free(qi);
}

int part_queue_get(struct part_engine *e, uint64_t id, struct part_queue_info **out)
{
    struct part_catalog *c = &e->catalog;
    pthread_rwlock_rdlock(&c->lock);
    struct part_queue *q = part__queue_by_id(c, id);
    if (q != NULL) {
        *out = part__queue_info(q);
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
    out->groups_inflight = atomic_load(&c->groups_inflight);
}

/* The lowest ready priority of partitions [first, end), either lane. */
static int64_t best_head(const struct part_queue *q, uint32_t first, uint32_t end)
{
    int64_t best = INT64_MAX;
    for (uint32_t p = first; p < end; p++) {
        for (int lane = 0; lane < 2; lane++) {
            best = SL_MIN(best, atomic_load(&q->per[p].head_priority[lane]));
        }
    }
    return best;
}

/* The oldest ready message's send time: a row's priority is its send
 * time (part_send's default, which only a priority queue's sends
 * override; there it is not known, 0), so it is the best head of either
 * lane on any partition. A FIFO row's priority is
 * its sequence number, a clock in microseconds that runs at least as fast
 * as the send times: within a few of them of the send time in ms. */
static uint64_t oldest_ready(const struct part_queue *q, uint32_t first, uint32_t end)
{
    int64_t best = best_head(q, first, end);
    if (best == INT64_MAX || best < 0 || q->cfg.priority_order) {
        return 0;
    }
    return q->cfg.fifo ? (uint64_t)best / 1000u : (uint64_t)best;
}

int part_queue_counts(struct part_engine *e, uint64_t queue_id, uint32_t partition,
                      struct part_counts *out)
{
    if (partition != PART_ALL_PARTITIONS && partition >= e->nparts) {
        return SL_EINVAL;
    }
    struct part_catalog *c = &e->catalog;
    pthread_rwlock_rdlock(&c->lock);
    struct part_queue *q = part__queue_by_id(c, queue_id);
    if (q != NULL) {
        bool all = partition == PART_ALL_PARTITIONS;
        counts_load(all ? &q->total : &q->per[partition], out);
        out->groups_live = all && q->gdir != NULL ? part__gdir_groups(q->gdir) : 0;
        out->groups_split = all && q->gdir != NULL ? part__gdir_spanning(q->gdir) : 0;
        out->oldest_ready_ms =
            all ? oldest_ready(q, 0, q->nparts) : oldest_ready(q, partition, partition + 1);
        out->best_priority =
            all ? best_head(q, 0, q->nparts) : best_head(q, partition, partition + 1);
        out->exclusive_blocked = 0;
        for (uint32_t p = all ? 0 : partition; p < (all ? q->nparts : partition + 1); p++) {
            /* never more than are ready now: a drained partition shows 0
             * without waiting for its next receive */
            out->exclusive_blocked += SL_MIN(atomic_load(&q->per[p].excl_blocked),
                                             SL_MAX(atomic_load(&q->per[p].ready), 0));
        }
    }
    pthread_rwlock_unlock(&c->lock);
    return q != NULL ? SL_OK : SL_ENOTFOUND;
}

unsigned part_queue_pause(struct part_engine *e, uint64_t queue_id)
{
    if (e->repl == NULL) {
        return 0;
    }
    struct part_queue *q = part__queue_ref(e, queue_id);
    if (q == NULL) {
        return 0;
    }
    unsigned flags = atomic_load(&q->pause);
    part__queue_unref(q);
    return flags;
}

int part_queue_set_dequeue_paused(struct part_engine *e, uint64_t queue_id, bool paused)
{
    struct part_queue *q = part__queue_ref(e, queue_id);
    if (q == NULL) {
        return SL_ENOTFOUND;
    }
    bool was = atomic_exchange_explicit(&q->dequeue_paused, paused, memory_order_acq_rel);
    if (was && !paused) {
        /* Parked receives waited through the pause; what is ready now
         * wakes them as a commit would (a receive that finds nothing
         * parks again until its deadline). */
        int64_t ready = atomic_load(&q->total.ready);
        if (ready > 0) {
            e->hooks.wake(e, q, UINT32_MAX, ready);
        }
    }
    part__queue_unref(q);
    return SL_OK;
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
        for (size_t b = 0; b < PART_WAIT_BUCKETS; b++) {
            out->wait_bucket[b] = atomic_load_explicit(&t->wait_bucket[b], memory_order_relaxed);
        }
        out->wait_sum_us = atomic_load_explicit(&t->wait_sum_us, memory_order_relaxed);
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
    atomic_store(&part__tenant_get(c, tenant)->aged_after_ms, aged_after_ms);
    pthread_rwlock_unlock(&c->lock);
}

void part_tenant_set_job_cap(struct part_engine *e, const char *tenant, uint32_t cap)
{
    struct part_catalog *c = &e->catalog;
    pthread_rwlock_wrlock(&c->lock);
    atomic_store(&part__tenant_get(c, tenant)->writer_job_cap, cap);
    pthread_rwlock_unlock(&c->lock);
}

/* ---- set-up ------------------------------------------------------------ */

void part__catalog_init(struct part_engine *e)
{
    struct part_catalog *c = &e->catalog;
    pthread_rwlock_init(&c->lock, NULL);
    c->cap = 64;
    c->by_name = sl_xcalloc(c->cap, sizeof *c->by_name);
    c->by_id = sl_xcalloc(c->cap, sizeof *c->by_id);
    c->tenant_cap = 256;
    c->tenants = sl_xcalloc(c->tenant_cap, sizeof *c->tenants);
}

void part__catalog_free(struct part_engine *e)
{
    struct part_catalog *c = &e->catalog;
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
