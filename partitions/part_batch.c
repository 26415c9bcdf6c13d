/*
 * part_batch.c -- a writer's batch: the counter deltas, group counts and
 * dead timer entries that one transaction's message operations collect,
 * applied by the writer only after the COMMIT.
 *
 * Stack: under part_ops.c (which fills it) and part_writer.c (which
 * applies and clears it); calls part_catalog.c (queue references) and
 * part_groups.c.
 */
#include <stdlib.h>
#include <string.h>

#include "part_batch.h"
#include "part_bytes.h"
#include "part_catalog.h"
#include "part_gdir.h"
#include "part_gheap.h"
#include "part_groups.h"

void part__item_list_add(struct part_item_list *l, uint64_t due, int64_t rowid, uint8_t kind)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 64;
        l->v = sl_xrealloc(l->v, l->cap * sizeof *l->v);
    }
    l->v[l->n++] = (struct part_heap_item){due, rowid, kind};
}

_Atomic bool part__test_skip_announce;

struct part_delta *part__delta_of(struct part_batch *b, struct part_queue *q)
{
    q->per[b->part].gen++;
    for (size_t i = 0; i < b->n; i++) {
        if (b->d[i].q == q) {
            return &b->d[i];
        }
    }
    if (b->n == b->cap) {
        b->cap = b->cap ? b->cap * 2 : 16;
        b->d = sl_xrealloc(b->d, b->cap * sizeof *b->d);
    }
    atomic_fetch_add(&q->refs, 1);
    b->d[b->n] = (struct part_delta){.q = q};
    return &b->d[b->n++];
}

/* v messages of q entered (v > 0) or left (v < 0) state in lane. */
void part__delta_state(struct part_batch *b, struct part_queue *q, int state, int lane, int64_t v)
{
    struct part_delta *d = part__delta_of(b, q);
    if (state == PART_STATE_READY) {
        d->c.ready += v;
        d->c.overflow_ready += lane == PART_LANE_OVERFLOW ? v : 0;
        if (v > 0) {
            d->woke += v;
        }
    } else if (state == PART_STATE_INFLIGHT) {
        d->c.inflight += v;
    } else {
        d->c.delayed += v;
        d->c.overflow_delayed += lane == PART_LANE_OVERFLOW ? v : 0;
    }
}

void part__note_available(struct part_batch *b, struct part_queue *q, const char *group)
{
    if (!q->fifo || group == NULL ||
        atomic_load_explicit(&part__test_skip_announce, memory_order_relaxed)) {
        return;
    }
    /* Locked or not, it goes in: the receive that pops a locked group
     * drops it without reading a row, while asking here would scan the
     * batch's group deltas for every row the batch changes. */
    struct part_qcount *qc = &q->per[b->part];
    if (qc->avail == NULL) {
        qc->avail = part__gheap_new();
    }
    part__gheap_push(qc->avail, PART_GHEAD_UNKNOWN, 0, group);
}

void part__note_group(struct part_batch *b, struct part_queue *q, const char *group,
                      int64_t inflight)
{
    if (group == NULL) {
        return;
    }
    if (b->ng == b->gcap) {
        b->gcap = b->gcap ? b->gcap * 2 : 16;
        b->g = sl_xrealloc(b->g, b->gcap * sizeof *b->g);
    }
    part__delta_of(b, q); /* keeps q referenced until the batch is applied */
    b->g[b->ng++] = (struct part_group_delta){q, sl_xstrdup(group), inflight};
}

int64_t part__batch_group_delta(const struct part_batch *b, const struct part_queue *q,
                                const char *group)
{
    int64_t sum = 0;
    for (size_t i = 0; i < b->ng; i++) {
        if (b->g[i].q == q && strcmp(b->g[i].group, group) == 0) {
            sum += b->g[i].inflight;
        }
    }
    return sum;
}

void part__note_gone(struct part_batch *b, int64_t rowid)
{
    if (b->ngone == b->gone_cap) {
        b->gone_cap = b->gone_cap ? b->gone_cap * 2 : 64;
        b->gone = sl_xrealloc(b->gone, b->gone_cap * sizeof *b->gone);
    }
    b->gone[b->ngone++] = rowid;
}

void part__note_stale(struct part_batch *b, uint64_t due, int64_t rowid, uint8_t kind)
{
    part__item_list_add(&b->stale, due, rowid, kind);
}

/* A row of q goes from (state, lane) to (to_state, to_lane); group (may be
 * NULL) is its message group. */
void part__delta_move(struct part_batch *b, struct part_queue *q, int state, int lane, int to_state,
                      int to_lane, const char *group)
{
    part__delta_state(b, q, state, lane, -1);
    part__delta_state(b, q, to_state, to_lane, 1);
    if (state == PART_STATE_INFLIGHT && to_state != PART_STATE_INFLIGHT) {
        part__note_group(b, q, group, -1);
        part__note_available(b, q, group);
    } else if (to_state == PART_STATE_READY && state != PART_STATE_READY) {
        part__note_available(b, q, group); /* a timer made it ready */
    } else if (state != PART_STATE_INFLIGHT && to_state == PART_STATE_INFLIGHT) {
        part__note_group(b, q, group, 1);
    }
}

static void gnote_add(struct part_batch *b, struct part_gnotes *l, struct part_queue *q,
                      const char *group)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 16;
        l->v = sl_xrealloc(l->v, l->cap * sizeof *l->v);
    }
    part__delta_of(b, q); /* keeps q referenced until the batch is cleared */
    l->v[l->n++] = (struct part_group_delta){q, sl_xstrdup(group), 0};
}

static void gnotes_clear(struct part_gnotes *l)
{
    for (size_t i = 0; i < l->n; i++) {
        free(l->v[i].group);
    }
    l->n = 0;
}

/* A row of q leaves the partition (deleted, expired, moved away). */
void part__delta_gone(struct part_batch *b, struct part_queue *q, int state, int lane,
                      const char *group)
{
    part__delta_state(b, q, state, lane, -1);
    if (state == PART_STATE_INFLIGHT) {
        part__note_group(b, q, group, -1);
    }
    /* Released, or its head left (a DLQ move, retention): a free group
     * with rows behind it must be found again. */
    part__note_available(b, q, group);
    part__note_gdir_gone(b, q, group);
}

void part__note_gdir_gone(struct part_batch *b, struct part_queue *q, const char *group)
{
    if (q->gdir != NULL && group != NULL) { /* FIFO and exclusive queues */
        gnote_add(b, &b->gdir_gone, q, group);
    }
}

void part__gdir_move_in(struct part_writer *w, struct part_batch *b, struct part_queue *q,
                        const char *group)
{
    if (q->gdir != NULL && group != NULL) {
        part__gdir_add(q->gdir, group, w->index);
        gnote_add(b, &b->gdir_added, q, group);
        part__note_available(b, q, group);
    }
}

/* Drops each noted row's count on w's partition; wakes the partitions
 * that became a group's first. */
static void gnotes_drop(struct part_writer *w, const struct part_gnotes *l)
{
    struct part_engine *e = w->engine;
    for (size_t i = 0; i < l->n; i++) {
        struct part_queue *q = l->v[i].q;
        uint32_t first = part__gdir_drop(q->gdir, l->v[i].group, w->index, 1);
        if (first != PART_GDIR_NONE) {
            part__gdir_handed_over(q, first);
            e->hooks.wake(e, q, first, 1);
        }
    }
}

void part__batch_gdir_apply(struct part_writer *w, struct part_batch *b)
{
    gnotes_drop(w, &b->gdir_gone);
}

void part__batch_gdir_undo(struct part_writer *w, struct part_batch *b)
{
    gnotes_drop(w, &b->gdir_added);
}

void part__gdir_handed_over(struct part_queue *q, uint32_t p)
{
    /* release: the writer that sees the new count also sees the directory */
    atomic_fetch_add_explicit(&q->per[p].handovers, 1, memory_order_release);
}

void part__batch_groups_apply(struct part_writer *w, struct part_batch *b)
{
    for (size_t i = 0; i < b->n; i++) {
        struct part_groups *g = b->d[i].q->per[w->index].groups;
        if (b->d[i].groups_cleared && g != NULL) {
            part__groups_clear(g);
        }
    }
    for (size_t i = 0; i < b->ng; i++) {
        struct part_qcount *qc = &b->g[i].q->per[w->index];
        if (qc->groups == NULL) {
            qc->groups = part__groups_new();
        }
        part__groups_add(qc->groups, b->g[i].group, b->g[i].inflight);
    }
    for (size_t i = 0; i < b->n; i++) {
        part__groups_publish(b->d[i].q, w->index);
    }
}

void part__batch_clear(struct part_batch *b)
{
    for (size_t i = 0; i < b->ng; i++) {
        free(b->g[i].group);
    }
    b->ng = 0;
    gnotes_clear(&b->gdir_gone);
    gnotes_clear(&b->gdir_added);
    for (size_t i = 0; i < b->n; i++) {
        part__queue_unref(b->d[i].q);
    }
    b->n = 0;
    b->ngone = 0;
    b->stale.n = 0;
    b->fired.n = 0;
    if (b->gone_cap > 65536) { /* a big purge's: not kept for good */
        free(b->gone);
        b->gone = NULL;
        b->gone_cap = 0;
    }
    b->sql_failed = false;
}

void part__batch_free(struct part_batch *b)
{
    free(b->d);
    free(b->g);
    free(b->gdir_gone.v);
    free(b->gdir_added.v);
    free(b->gone);
    free(b->stale.v);
    free(b->fired.v);
}

/* ---- the replicated note ------------------------------------------------ */

void part__batch_note(const struct part_batch *b, struct sl_buf *out)
{
    sl_buf_reset(out);
    for (size_t i = 0; i < b->n; i++) {
        const struct part_delta *d = &b->d[i];
        int64_t v[7] = {
            (int64_t)d->q->id,     d->c.ready, d->c.inflight, d->c.delayed, d->c.overflow_ready,
            d->c.overflow_delayed, d->woke};
        uint8_t bytes[PART_NOTE_DELTA_BYTES];
        for (size_t k = 0; k < 7; k++) {
            part__put_be(bytes + 8 * k, (uint64_t)v[k], 8);
        }
        sl_buf_append(out, bytes, sizeof bytes);
    }
}

bool part__note_delta(struct sl_slice note, size_t i, struct part_note_delta *d)
{
    if (note.n % PART_NOTE_DELTA_BYTES != 0 || i >= note.n / PART_NOTE_DELTA_BYTES) {
        return false;
    }
    const uint8_t *p = (const uint8_t *)note.p + i * PART_NOTE_DELTA_BYTES;
    int64_t v[7];
    for (size_t k = 0; k < 7; k++) {
        v[k] = (int64_t)part__get_be(p + 8 * k, 8);
    }
    *d = (struct part_note_delta){(uint64_t)v[0], {v[1], v[2], v[3], v[4], v[5]}, v[6]};
    return true;
}
