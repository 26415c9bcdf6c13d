/*
 * gw_runq.c -- a loop's run queue: whole requests taken round robin across
 * connections, in turns of at most GW_RUNQ_TURN_NS (why: gw_runq.h).
 *
 * A turn runs in the loop's check phase, right after the poll phase in
 * which the reads queued the requests, so an idle server adds no system
 * call and no delay: the request runs in the same loop iteration it was
 * read in. Only when a turn is cut does the idle handle make the next
 * poll return at once, and what arrived meanwhile is queued behind the
 * round in progress, one request per connection per round.
 *
 * Invariants:
 *  1. A flow is in the round (first..last) exactly while it has items.
 *  2. An item's flow is non-NULL exactly while it is queued.
 *  3. The idle handle is active whenever the round is not empty.
 */
#include "gw_runq.h"

static bool round_empty(const struct gw_runq *q)
{
    return q->first == NULL;
}

static void round_append(struct gw_runq *q, struct gw_runq_flow *f)
{
    f->next = NULL;
    if (q->last != NULL)
        q->last->next = f;
    else
        q->first = f;
    q->last = f;
}

static struct gw_runq_flow *round_pop(struct gw_runq *q)
{
    struct gw_runq_flow *f = q->first;
    q->first = f->next;
    if (q->first == NULL)
        q->last = NULL;
    f->next = NULL;
    return f;
}

static void round_unlink(struct gw_runq *q, struct gw_runq_flow *f)
{
    struct gw_runq_flow *prev = NULL;
    for (struct gw_runq_flow *it = q->first; it != NULL; prev = it, it = it->next) {
        if (it != f)
            continue;
        if (prev != NULL)
            prev->next = f->next;
        else
            q->first = f->next;
        if (q->last == f)
            q->last = prev;
        f->next = NULL;
        return;
    }
}

static struct gw_runq_item *flow_take(struct gw_runq_flow *f)
{
    struct gw_runq_item *item = f->head;
    f->head = item->next;
    if (f->head == NULL)
        f->tail = NULL;
    item->next = NULL;
    item->flow = NULL;
    return item;
}

static void on_idle(uv_idle_t *h)
{
    (void)h; /* only there to keep the poll from blocking */
}

static void on_check(uv_check_t *h)
{
    struct gw_runq *q = h->data;
    if (round_empty(q))
        return;
    uint64_t start = uv_hrtime();
    while (!round_empty(q)) {
        struct gw_runq_flow *f = round_pop(q);
        struct gw_runq_item *item = flow_take(f);
        if (f->head != NULL)
            round_append(q, f);
        q->items_run++;
        /* May push, remove, or free any other item or flow. */
        item->run(item);
        if (!round_empty(q) && uv_hrtime() - start >= GW_RUNQ_TURN_NS) {
            q->turns_cut++;
            return; /* the idle handle is still active: the next poll does not block */
        }
    }
    uv_idle_stop(&q->idle);
}

int gw__runq_init(struct gw_runq *q, uv_loop_t *loop)
{
    *q = (struct gw_runq){0};
    if (uv_check_init(loop, &q->check) != 0 || uv_idle_init(loop, &q->idle) != 0)
        return SL_EIO;
    q->check.data = q;
    q->idle.data = q;
    if (uv_check_start(&q->check, on_check) != 0)
        return SL_EIO;
    /* The check must not keep a stopping loop alive; waiting items do,
     * through the idle handle. */
    uv_unref((uv_handle_t *)&q->check);
    return SL_OK;
}

void gw__runq_flow_init(struct gw_runq_flow *f, struct gw_runq *q)
{
    *f = (struct gw_runq_flow){.q = q};
}

bool gw__runq_flow_empty(const struct gw_runq_flow *f)
{
    return f->head == NULL;
}

void gw__runq_push(struct gw_runq_flow *f, struct gw_runq_item *item, gw_runq_fn *run)
{
    SL_ASSERT(item->flow == NULL);
    item->run = run;
    item->next = NULL;
    item->flow = f;
    if (f->tail != NULL) {
        f->tail->next = item;
    } else {
        f->head = item;
        round_append(f->q, f); /* it had no items, so it was not in the round */
    }
    f->tail = item;
    /* Queued outside a poll phase (a timer, a flush that resumed parsing),
     * the item must not wait for the next I/O event. */
    uv_idle_start(&f->q->idle, on_idle);
}

bool gw__runq_remove(struct gw_runq_item *item)
{
    struct gw_runq_flow *f = item->flow;
    if (f == NULL)
        return false;
    struct gw_runq_item *prev = NULL;
    for (struct gw_runq_item *it = f->head; it != item; prev = it, it = it->next)
        SL_ASSERT(it != NULL);
    if (prev != NULL)
        prev->next = item->next;
    else
        f->head = item->next;
    if (f->tail == item)
        f->tail = prev;
    item->next = NULL;
    item->flow = NULL;
    if (f->head == NULL)
        round_unlink(f->q, f);
    if (round_empty(f->q))
        uv_idle_stop(&f->q->idle);
    return true;
}
