/*
 * part_groups.c -- in-flight messages per message group, for one queue on
 * one partition: what fair dequeue (part_receive_req.noisy_*) compares.
 *
 * A chained hash table owned by one writer thread, so it takes no locks.
 * Entries exist only while their group has messages in flight: a group
 * whose count drops to zero is unlinked, so a queue that cycles through
 * millions of group ids keeps a table the size of what is in flight now.
 */
#include <stdlib.h>
#include <string.h>

#include "part_groups.h"

struct group_entry {
    struct group_entry *next;
    uint64_t hash;
    int64_t inflight;
    char name[]; /* NUL-terminated */
};

struct part_groups {
    struct group_entry **buckets;
    size_t cap; /* a power of two */
    size_t count;
};

uint64_t part__group_hash(const char *s)
{
    uint64_t h = 14695981039346656037ull; /* FNV-1a */
    for (; *s != '\0'; s++) {
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    }
    return h;
}

struct part_groups *part__groups_new(void)
{
    struct part_groups *g = sl_xcalloc(1, sizeof *g);
    g->cap = 16;
    g->buckets = sl_xcalloc(g->cap, sizeof *g->buckets);
    return g;
}

void part__groups_clear(struct part_groups *g)
{
    for (size_t i = 0; i < g->cap; i++) {
        struct group_entry *e = g->buckets[i];
        while (e != NULL) {
            struct group_entry *next = e->next;
            free(e);
            e = next;
        }
        g->buckets[i] = NULL;
    }
    g->count = 0;
}

void part__groups_free(struct part_groups *g)
{
    if (g != NULL) {
        part__groups_clear(g);
        free(g->buckets);
        free(g);
    }
}

static struct group_entry **find_slot(const struct part_groups *g, const char *group, uint64_t h)
{
    struct group_entry **slot = &g->buckets[h & (g->cap - 1)];
    while (*slot != NULL && ((*slot)->hash != h || strcmp((*slot)->name, group) != 0)) {
        slot = &(*slot)->next;
    }
    return slot;
}

size_t part__groups_count(const struct part_groups *g)
{
    return g != NULL ? g->count : 0;
}

int64_t part__groups_get(const struct part_groups *g, const char *group)
{
    struct group_entry *e = *find_slot(g, group, part__group_hash(group));
    return e != NULL ? e->inflight : 0;
}

static void grow(struct part_groups *g)
{
    size_t cap = g->cap * 2;
    struct group_entry **buckets = sl_xcalloc(cap, sizeof *buckets);
    for (size_t i = 0; i < g->cap; i++) {
        struct group_entry *e = g->buckets[i];
        while (e != NULL) {
            struct group_entry *next = e->next;
            e->next = buckets[e->hash & (cap - 1)];
            buckets[e->hash & (cap - 1)] = e;
            e = next;
        }
    }
    free(g->buckets);
    g->buckets = buckets;
    g->cap = cap;
}

void part__groups_add(struct part_groups *g, const char *group, int64_t delta)
{
    uint64_t h = part__group_hash(group);
    struct group_entry **slot = find_slot(g, group, h);
    struct group_entry *e = *slot;
    if (e == NULL) {
        if (delta <= 0) {
            return; /* a group with nothing in flight has no entry */
        }
        size_t len = strlen(group);
        e = sl_xmalloc(sizeof *e + len + 1);
        e->next = NULL;
        e->hash = h;
        e->inflight = 0;
        memcpy(e->name, group, len + 1);
        *slot = e;
        g->count++;
    }
    e->inflight += delta;
    if (e->inflight <= 0) {
        *slot = e->next;
        free(e);
        g->count--;
    } else if (g->count > g->cap) {
        grow(g);
    }
}
