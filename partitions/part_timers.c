/*
 * part_timers.c -- a writer's timer heap, and what keeps it bounded by the
 * partition's live messages.
 *
 * An entry is never removed from the middle of the heap: a delete, a purge
 * or a changed lease would have to find it first. Instead the writer tells
 * the heap, after each COMMIT, which entries died: every entry of a row
 * that is gone (PART_TIMER_VISIBLE and _EXPIRE; msg.id is AUTOINCREMENT, so
 * a row id is never reused in a partition file), or one exact entry that a
 * newer one superseded (an extended lease, a DLQ move's new retention, an
 * earlier aging check). Those go into an open-addressing table of
 * tombstones. A popped entry that matches one is dropped without a lookup
 * in SQLite; and once the table holds max(PART_TIMERS_COMPACT_MIN, n / 4)
 * tombstones, one pass filters the heap and re-heapifies it (O(n)), which
 * is O(1) amortised per tombstone.
 *
 * Bound: each tombstone stands for at most two entries (a gone row's lease
 * and retention), so compaction starts once the dead entries reach about
 * half the heap: the heap holds at most about twice its live entries, or
 * live + 2 * PART_TIMERS_COMPACT_MIN while that is more. (With n / 2 as
 * the trigger, k gone rows' 2k dead entries beside any live one would keep
 * k below n / 2 for ever.)
 *
 * A superseded entry's tombstone counts once: entries can be equal (the
 * same lease end set twice in one millisecond), and each tombstone takes
 * out one of them.
 */
#include <stdlib.h>

#include "part_timers.h"

/* Tombstone tags: an entry's (due << 2 | kind), kind being 1..3. */
#define TOMB_ROW 0            /* every VISIBLE and EXPIRE entry of the row */
#define TOMB_TAKEN UINT64_MAX /* used up; still occupies its probe chain */
#define TOMBS_INITIAL 1024

static bool heap_less(const struct part_heap_item *a, const struct part_heap_item *b)
{
    return a->due < b->due || (a->due == b->due && a->rowid < b->rowid);
}

/* Puts it at hole i and moves it down to its place. */
static void sift_down(struct part_heap *h, size_t i, struct part_heap_item it)
{
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= h->n) {
            break;
        }
        if (c + 1 < h->n && heap_less(&h->items[c + 1], &h->items[c])) {
            c++;
        }
        if (!heap_less(&h->items[c], &it)) {
            break;
        }
        h->items[i] = h->items[c];
        i = c;
    }
    h->items[i] = it;
}

void part__heap_push(struct part_heap *h, uint64_t due, int64_t rowid, uint8_t kind)
{
    if (h->n == h->cap) {
        h->cap = h->cap ? h->cap * 2 : 256;
        h->items = sl_xrealloc(h->items, h->cap * sizeof *h->items);
    }
    size_t i = h->n++;
    struct part_heap_item it = {due, rowid, kind};
    while (i > 0 && heap_less(&it, &h->items[(i - 1) / 2])) {
        h->items[i] = h->items[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h->items[i] = it;
}

struct part_heap_item part__heap_pop(struct part_heap *h)
{
    struct part_heap_item top = h->items[0];
    struct part_heap_item last = h->items[--h->n];
    if (h->n > 0) {
        sift_down(h, 0, last);
    }
    return top;
}

/* ---- tombstones -------------------------------------------------------- */

static uint64_t tag_of(uint64_t due, uint8_t kind)
{
    return due << 2 | kind;
}

static size_t tomb_slot(const struct part_heap *h, int64_t rowid, uint64_t tag)
{
    /* splitmix64's finaliser: row ids and due times are both sequential */
    uint64_t x = (uint64_t)rowid * 0x9e3779b97f4a7c15ull ^ tag;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return (size_t)(x ^ (x >> 31)) & (h->tomb_cap - 1);
}

static void tomb_insert(struct part_heap *h, int64_t rowid, uint64_t tag)
{
    size_t i = tomb_slot(h, rowid, tag);
    while (h->tombs[i].rowid != 0) {
        i = (i + 1) & (h->tomb_cap - 1);
    }
    h->tombs[i] = (struct part_tomb){rowid, tag};
    h->ntombs++;
}

static void tomb_add(struct part_heap *h, int64_t rowid, uint64_t tag)
{
    if (rowid == 0) {
        return; /* 0 marks a free slot; no row or queue has it */
    }
    if ((h->ntombs + 1) * 2 > h->tomb_cap) {
        /* used-up tombstones are left behind */
        size_t live = 0;
        for (size_t i = 0; i < h->tomb_cap; i++) {
            live += h->tombs[i].rowid != 0 && h->tombs[i].tag != TOMB_TAKEN;
        }
        size_t cap = TOMBS_INITIAL;
        while (cap < 2 * (live + 1)) {
            cap *= 2;
        }
        struct part_tomb *old = h->tombs;
        size_t old_cap = h->tomb_cap;
        h->tombs = sl_xcalloc(cap, sizeof *h->tombs);
        h->tomb_cap = cap;
        h->ntombs = 0;
        for (size_t i = 0; i < old_cap; i++) {
            if (old[i].rowid != 0 && old[i].tag != TOMB_TAKEN) {
                tomb_insert(h, old[i].rowid, old[i].tag);
            }
        }
        free(old);
    }
    tomb_insert(h, rowid, tag);
}

/* Whether (rowid, tag) has a tombstone; consume: use it up. */
static bool tomb_take(struct part_heap *h, int64_t rowid, uint64_t tag, bool consume)
{
    for (size_t i = tomb_slot(h, rowid, tag); h->tombs[i].rowid != 0;
         i = (i + 1) & (h->tomb_cap - 1)) {
        if (h->tombs[i].rowid == rowid && h->tombs[i].tag == tag) {
            if (consume) {
                h->tombs[i].tag = TOMB_TAKEN;
            }
            return true;
        }
    }
    return false;
}

bool part__heap_forgotten(struct part_heap *h, const struct part_heap_item *it)
{
    if (h->ntombs == 0) {
        return false;
    }
    /* an AGE entry's rowid is a queue id: rows' tombstones do not apply */
    if (it->kind != PART_TIMER_AGE && tomb_take(h, it->rowid, TOMB_ROW, false)) {
        return true;
    }
    return tomb_take(h, it->rowid, tag_of(it->due, it->kind), true);
}

bool part__heap_pop_due(struct part_heap *h, uint64_t now, struct part_heap_item *out)
{
    while (h->n > 0 && h->items[0].due <= now) {
        *out = part__heap_pop(h);
        if (!part__heap_forgotten(h, out)) {
            return true;
        }
    }
    return false;
}

static size_t compact_at(const struct part_heap *h)
{
    return SL_MAX((size_t)PART_TIMERS_COMPACT_MIN, h->n / 4);
}

/* Drops every forgotten entry, restores the heap order bottom-up and
 * forgets the tombstones. */
static void compact(struct part_heap *h)
{
    size_t kept = 0;
    for (size_t i = 0; i < h->n; i++) {
        if (!part__heap_forgotten(h, &h->items[i])) {
            h->items[kept++] = h->items[i];
        }
    }
    h->n = kept;
    for (size_t i = h->n / 2; i > 0; i--) {
        sift_down(h, i - 1, h->items[i - 1]);
    }
    free(h->tombs);
    h->tombs = NULL;
    h->tomb_cap = 0;
    h->ntombs = 0;
    if (h->cap > 256 && h->n < h->cap / 4) {
        h->cap = SL_MAX((size_t)256, 2 * h->n);
        h->items = sl_xrealloc(h->items, h->cap * sizeof *h->items);
    }
}

void part__heap_forget_row(struct part_heap *h, int64_t rowid)
{
    tomb_add(h, rowid, TOMB_ROW);
    /* a purge forgets many rows at once: keep the table's size in check */
    if (h->ntombs >= 2 * compact_at(h)) {
        compact(h);
    }
}

void part__heap_forget(struct part_heap *h, uint64_t due, int64_t rowid, uint8_t kind)
{
    tomb_add(h, rowid, tag_of(due, kind));
}

void part__heap_tidy(struct part_heap *h)
{
    if (h->ntombs >= compact_at(h)) {
        compact(h);
    }
}

void part__heap_free(struct part_heap *h)
{
    free(h->items);
    free(h->tombs);
    *h = (struct part_heap){0};
}
