/*
 * part_gdir.c -- a FIFO queue's group directory: group -> the partitions
 * holding its live messages, oldest first, with a count each.
 *
 * A chained hash table under one mutex. An entry lives while its group
 * has a live message somewhere, so memory follows the live groups, not
 * history. The partitions of an entry sit in the entry itself while there
 * is one (the usual case: one allocation per group); a second one moves
 * them to an array of their own. `spanning` counts the entries with more
 * than one partition, so that the lock rule costs the receive path
 * nothing while no group is split (part__gdir_may_lease).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "part_gdir.h"
#include "part_groups.h"

struct gslot {
    uint32_t part;
    int64_t count; /* live messages of the group there (with reservations) */
    int64_t rank;  /* start-up only: its place in the list (part__gdir_load) */
};

struct gentry {
    struct gentry *next;
    uint64_t hash;
    struct gslot *slots; /* &one, or an array of cap */
    uint32_t n;
    uint32_t cap;
    struct gslot one;
    char name[]; /* NUL-terminated */
};

struct part_gdir {
    pthread_mutex_t mu;
    struct gentry **buckets; /* NULL until the first group */
    size_t cap;              /* a power of two, or 0 */
    _Atomic int64_t count;   /* entries */
    _Atomic int64_t spanning;
};

struct part_gdir *part__gdir_new(void)
{
    struct part_gdir *d = sl_xcalloc(1, sizeof *d);
    pthread_mutex_init(&d->mu, NULL);
    return d;
}

static void entry_free(struct gentry *e)
{
    if (e->slots != &e->one) {
        free(e->slots);
    }
    free(e);
}

void part__gdir_free(struct part_gdir *d)
{
    if (d == NULL) {
        return;
    }
    for (size_t i = 0; i < d->cap; i++) {
        for (struct gentry *e = d->buckets[i], *next; e != NULL; e = next) {
            next = e->next;
            entry_free(e);
        }
    }
    free(d->buckets);
    pthread_mutex_destroy(&d->mu);
    free(d);
}

/* The link that points at group's entry, or at the NULL ending its chain
 * (d->cap > 0). */
static struct gentry **find_slot(const struct part_gdir *d, const char *group, uint64_t h)
{
    struct gentry **slot = &d->buckets[h & (d->cap - 1)];
    while (*slot != NULL && ((*slot)->hash != h || strcmp((*slot)->name, group) != 0)) {
        slot = &(*slot)->next;
    }
    return slot;
}

static struct gentry *find(const struct part_gdir *d, const char *group)
{
    return d->cap > 0 ? *find_slot(d, group, part__group_hash(group)) : NULL;
}

static void grow(struct part_gdir *d)
{
    size_t cap = d->cap ? d->cap * 2 : 16;
    struct gentry **buckets = sl_xcalloc(cap, sizeof *buckets);
    for (size_t i = 0; i < d->cap; i++) {
        for (struct gentry *e = d->buckets[i], *next; e != NULL; e = next) {
            next = e->next;
            e->next = buckets[e->hash & (cap - 1)];
            buckets[e->hash & (cap - 1)] = e;
        }
    }
    free(d->buckets);
    d->buckets = buckets;
    d->cap = cap;
}

/* group's entry, made (empty) if it has none. */
static struct gentry *find_or_make(struct part_gdir *d, const char *group)
{
    if ((size_t)atomic_load_explicit(&d->count, memory_order_relaxed) >= d->cap) {
        grow(d);
    }
    uint64_t h = part__group_hash(group);
    struct gentry **slot = find_slot(d, group, h);
    if (*slot == NULL) {
        size_t len = strlen(group);
        struct gentry *e = sl_xcalloc(1, sizeof *e + len + 1);
        e->hash = h;
        e->slots = &e->one;
        e->cap = 1;
        memcpy(e->name, group, len + 1);
        *slot = e;
        atomic_fetch_add_explicit(&d->count, 1, memory_order_relaxed);
    }
    return *slot;
}

/* Inserts partition p at index at of e's list, count 0. */
static struct gslot *slot_insert(struct part_gdir *d, struct gentry *e, uint32_t at, uint32_t p)
{
    if (e->n == e->cap) {
        uint32_t cap = e->cap * 2 < 4 ? 4 : e->cap * 2;
        struct gslot *v = sl_xmalloc(cap * sizeof *v);
        memcpy(v, e->slots, e->n * sizeof *v);
        if (e->slots != &e->one) {
            free(e->slots);
        }
        e->slots = v;
        e->cap = cap;
    }
    memmove(&e->slots[at + 1], &e->slots[at], (e->n - at) * sizeof *e->slots);
    e->slots[at] = (struct gslot){.part = p, .count = 0, .rank = INT64_MAX};
    if (++e->n == 2) {
        atomic_fetch_add(&d->spanning, 1);
    }
    return &e->slots[at];
}

static struct gslot *slot_of(struct gentry *e, uint32_t p, uint32_t *at)
{
    for (uint32_t i = 0; i < e->n; i++) {
        if (e->slots[i].part == p) {
            *at = i;
            return &e->slots[i];
        }
    }
    return NULL;
}

void part__gdir_place(struct part_gdir *d, const char *const *groups, const uint32_t *homes,
                      size_t n, uint32_t *out)
{
    pthread_mutex_lock(&d->mu);
    for (size_t i = 0; i < n; i++) {
        struct gentry *e = find_or_make(d, groups[i]);
        struct gslot *s = e->n > 0 ? &e->slots[e->n - 1] : slot_insert(d, e, 0, homes[i]);
        s->count++;
        out[i] = s->part;
    }
    pthread_mutex_unlock(&d->mu);
}

void part__gdir_add(struct part_gdir *d, const char *group, uint32_t p)
{
    pthread_mutex_lock(&d->mu);
    struct gentry *e = find_or_make(d, group);
    uint32_t at;
    struct gslot *s = slot_of(e, p, &at);
    if (s == NULL) {
        s = slot_insert(d, e, e->n, p);
    }
    s->count++;
    pthread_mutex_unlock(&d->mu);
}

uint32_t part__gdir_drop(struct part_gdir *d, const char *group, uint32_t p, int64_t n)
{
    uint32_t now_first = PART_GDIR_NONE;
    pthread_mutex_lock(&d->mu);
    uint64_t h = part__group_hash(group);
    struct gentry **link = d->cap > 0 ? find_slot(d, group, h) : NULL;
    struct gentry *e = link != NULL ? *link : NULL;
    uint32_t at = 0;
    struct gslot *s = e != NULL ? slot_of(e, p, &at) : NULL;
    /* Counts never fall below the rows, so s exists; were it otherwise,
     * dropping the partition is the safe way out (the lock stays local). */
    if (s != NULL && (s->count -= n) <= 0) {
        memmove(&e->slots[at], &e->slots[at + 1], (e->n - at - 1) * sizeof *e->slots);
        if (--e->n == 1) {
            atomic_fetch_sub(&d->spanning, 1);
        }
        if (e->n == 0) {
            *link = e->next;
            entry_free(e);
            atomic_fetch_sub_explicit(&d->count, 1, memory_order_relaxed);
        } else if (at == 0) {
            now_first = e->slots[0].part;
        }
    }
    pthread_mutex_unlock(&d->mu);
    return now_first;
}

bool part__gdir_may_lease(struct part_gdir *d, const char *group, uint32_t p)
{
    /* No entry spans partitions: a group with rows on p has p first (its
     * count there holds it in the list, and lists grow only at the end).
     * Acquire pairs with the increment made under the mutex. */
    if (atomic_load_explicit(&d->spanning, memory_order_acquire) == 0) {
        return true;
    }
    pthread_mutex_lock(&d->mu);
    const struct gentry *e = find(d, group);
    bool ok = e == NULL || e->n == 0 || e->slots[0].part == p;
    pthread_mutex_unlock(&d->mu);
    return ok;
}

void part__gdir_load(struct part_gdir *d, const char *group, uint32_t p, int64_t count,
                     int64_t rank, bool sorted)
{
    if (count <= 0) {
        return;
    }
    pthread_mutex_lock(&d->mu);
    struct gentry *e = find_or_make(d, group);
    uint32_t at;
    struct gslot *s = slot_of(e, p, &at);
    if (s == NULL) {
        at = e->n;
        while (sorted && at > 0 && e->slots[at - 1].rank > rank) {
            at--;
        }
        s = slot_insert(d, e, at, p);
    }
    s->count += count;
    s->rank = SL_MIN(s->rank, rank);
    pthread_mutex_unlock(&d->mu);
}

int64_t part__gdir_groups(const struct part_gdir *d)
{
    return atomic_load_explicit(&d->count, memory_order_relaxed);
}

int64_t part__gdir_spanning(const struct part_gdir *d)
{
    return atomic_load_explicit(&d->spanning, memory_order_relaxed);
}

size_t part__gdir_parts(struct part_gdir *d, const char *group, uint32_t *out, int64_t *counts,
                        size_t max)
{
    pthread_mutex_lock(&d->mu);
    const struct gentry *e = find(d, group);
    size_t n = e != NULL ? e->n : 0;
    for (size_t i = 0; i < n && i < max; i++) {
        out[i] = e->slots[i].part;
        counts[i] = e->slots[i].count;
    }
    pthread_mutex_unlock(&d->mu);
    return n;
}
