/*
 * part_gheap.c -- a binary min-heap of a FIFO queue's available groups on
 * one partition, keyed by head (priority, id), with a membership table so
 * that a group has at most one entry however often it is announced.
 *
 * Stack: a leaf over part_groups.c (the membership table counts entries
 * per group, 0 or 1).
 */
#include <stdlib.h>
#include <string.h>

#include "part_gheap.h"
#include "part_groups.h"

struct part_gheap {
    struct part_gheap_entry *v;
    size_t n;
    size_t cap;
    struct part_groups *in; /* groups with an entry */
};

struct part_gheap *part__gheap_new(void)
{
    struct part_gheap *h = sl_xcalloc(1, sizeof *h);
    h->in = part__groups_new();
    return h;
}

void part__gheap_free(struct part_gheap *h)
{
    if (h != NULL) {
        for (size_t i = 0; i < h->n; i++) {
            free(h->v[i].group);
        }
        free(h->v);
        part__groups_free(h->in);
        free(h);
    }
}

size_t part__gheap_size(const struct part_gheap *h)
{
    return h != NULL ? h->n : 0;
}

static bool less(const struct part_gheap_entry *a, const struct part_gheap_entry *b)
{
    return a->priority < b->priority || (a->priority == b->priority && a->id < b->id);
}

static void swap(struct part_gheap_entry *a, struct part_gheap_entry *b)
{
    struct part_gheap_entry t = *a;
    *a = *b;
    *b = t;
}

bool part__gheap_push(struct part_gheap *h, int64_t priority, int64_t id, const char *group)
{
    if (part__groups_get(h->in, group) > 0) {
        return false;
    }
    part__groups_add(h->in, group, 1);
    if (h->n == h->cap) {
        h->cap = h->cap ? h->cap * 2 : 16;
        h->v = sl_xrealloc(h->v, h->cap * sizeof *h->v);
    }
    size_t i = h->n++;
    h->v[i] = (struct part_gheap_entry){priority, id, sl_xstrdup(group)};
    while (i > 0 && less(&h->v[i], &h->v[(i - 1) / 2])) {
        swap(&h->v[i], &h->v[(i - 1) / 2]);
        i = (i - 1) / 2;
    }
    return true;
}

bool part__gheap_pop(struct part_gheap *h, struct part_gheap_entry *out)
{
    if (h == NULL || h->n == 0) {
        return false;
    }
    *out = h->v[0];
    part__groups_add(h->in, out->group, -1);
    h->v[0] = h->v[--h->n];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < h->n && less(&h->v[l], &h->v[m])) {
            m = l;
        }
        if (r < h->n && less(&h->v[r], &h->v[m])) {
            m = r;
        }
        if (m == i) {
            break;
        }
        swap(&h->v[i], &h->v[m]);
        i = m;
    }
    if (h->n == 0 && h->cap > 4096) { /* a burst's array is not kept for good */
        free(h->v);
        h->v = NULL;
        h->cap = 0;
    }
    return true;
}
