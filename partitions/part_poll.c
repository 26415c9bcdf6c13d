/*
 * part_poll.c -- receives across partitions and long polling: a receive's
 * plan (which partitions, which lane, in what order), parking it when
 * nothing is ready, waking it after a commit, and its deadline, cancel
 * and drain.
 *
 * Stack: under part_submit.c (part_receive) and the engine (drain,
 * part__poll_install); above the writers, which reach it only through
 * the e->hooks this file installs (receive_continue, wake,
 * flush_waiters), and the catalog thread (flush_waiters on a queue
 * delete). Calls part_client.c to route and complete receives.
 *
 * Long polling: each queue has a FIFO of waiting receives (queue->wait_mu)
 * and a wake sequence. A receive records the sequence before it looks at
 * the counters; it parks only if the sequence is unchanged when it takes
 * the lock to park, so a commit between "nothing here" and "park" is never
 * missed. A writer that made n messages ready wakes at most n waiters and
 * sends each straight to its own partition. A waiter's deadline is a
 * uv_timer on its client's loop; the timer, a cancel or a drain takes the
 * waiter out under the same lock, or flags it if a writer holds it now.
 */
#include <string.h>

#include <uv.h>

#include "part_client.h"
#include "part_poll.h"

/* ---- a waiter's deadline, cancel and drain ----------------------------- */

/* Takes job out of its waiter list if it is parked; otherwise flags it, so
 * the writer holding it finishes it. True when it was parked. */
static bool recv_unpark(struct part_job *job, int flag)
{
    struct part_queue *q = job->q;
    struct part_recv *r = job->recv;
    pthread_mutex_lock(&q->wait_mu);
    bool parked = r->waiting;
    if (parked) {
        if (r->wprev) {
            r->wprev->recv->wnext = r->wnext;
        } else {
            q->wait_head = r->wnext;
        }
        if (r->wnext) {
            r->wnext->recv->wprev = r->wprev;
        } else {
            q->wait_tail = r->wprev;
        }
        r->wprev = r->wnext = NULL;
        r->waiting = false;
    }
    atomic_fetch_or(&r->flags, flag);
    pthread_mutex_unlock(&q->wait_mu);
    return parked;
}

void part_client_drain(struct part_client *c)
{
    c->draining = true;
    for (struct part_job *job = c->recv_head; job != NULL; job = job->recv->cnext) {
        if (recv_unpark(job, PART_RECV_EXPIRED)) {
            job->status = SL_OK;
            part__complete(job);
        }
    }
}

void part__recv_timeout(uv_timer_t *t)
{
    struct part_job *job = t->data;
    if (recv_unpark(job, PART_RECV_EXPIRED)) {
        job->status = SL_OK;
        part__complete(job);
    }
}

/* Ends the receive ticket of client c early, flagged flag, completing it
 * with status if it was parked (else its writer finishes it). */
static void recv_end(struct part_client *c, uint64_t ticket, int flag, int status)
{
    for (struct part_job *job = c->recv_head; job != NULL; job = job->recv->cnext) {
        if (job->recv->ticket == ticket) {
            if (recv_unpark(job, flag)) {
                job->status = status;
                part__complete(job);
            }
            return;
        }
    }
}

void part_receive_cancel(struct part_client *c, uint64_t ticket)
{
    recv_end(c, ticket, PART_RECV_CANCELLED, SL_ECLOSED);
}

void part_receive_expire(struct part_client *c, uint64_t ticket)
{
    recv_end(c, ticket, PART_RECV_EXPIRED, SL_OK);
}

/* ---- long polling ------------------------------------------------------ */

/* Ready messages of q's lane on partition p, as of the last commit. */
static int64_t lane_ready(struct part_queue *q, uint32_t p, int lane)
{
    int64_t overflow = atomic_load(&q->per[p].overflow_ready);
    return lane == PART_LANE_OVERFLOW ? overflow : atomic_load(&q->per[p].ready) - overflow;
}

static int64_t head_of(struct part_queue *q, uint32_t p, int lane)
{
    return atomic_load(&q->per[p].head_priority[lane]);
}

/* Whether partition a's head comes after b's: by priority, then (equal
 * priorities, as on a priority queue) by send time. */
static bool head_after(struct part_queue *q, uint32_t a, uint32_t b, int lane)
{
    int64_t pa = head_of(q, a, lane);
    int64_t pb = head_of(q, b, lane);
    return pa > pb || (pa == pb && atomic_load(&q->per[a].head_sent[lane]) >
                                       atomic_load(&q->per[b].head_sent[lane]));
}

/* Orders the partitions with messages ready in the lane of the receive's
 * current pass, best head first (first, if not UINT32_MAX, goes first
 * regardless). False when there is none. */
static bool recv_plan(struct part_engine *e, struct part_job *job, uint32_t first)
{
    struct part_recv *r = job->recv;
    struct part_queue *q = job->q;
    int lane = r->lanes[r->pass];
    r->norder = 0;
    for (size_t i = 0; i < r->nparts; i++) {
        uint32_t p = r->parts[i];
        if (p != first && lane_ready(q, p, lane) > 0 && part__partition_ok(e, p)) {
            /* insertion sort by head priority: a handful of partitions */
            size_t k = r->norder++;
            while (k > 0 && head_after(q, r->order[k - 1], p, lane)) {
                r->order[k] = r->order[k - 1];
                k--;
            }
            r->order[k] = p;
        }
    }
    if (first != UINT32_MAX) {
        memmove(r->order + 1, r->order, r->norder * sizeof *r->order);
        r->order[0] = first;
        r->norder++;
    }
    return r->norder > 0;
}

static void recv_no_message(struct part_engine *e, struct part_job *job);

/* Sends the receive to partition p of its current plan. On a priority
 * queue it may take there only rows no worse than the best head of the
 * plan's other partitions (ties included, so that it always progresses):
 * a receive of ten then gets the ten best of the shard, not the ten best
 * of the partition whose best is best. Each visit's commit publishes its
 * partition's new head before the receive continues, so the next plan
 * sees it. A receive that keeps finding nothing under its bound (heads
 * moved by other receives) goes plain after PART_STRICT_HOPS_MAX
 * visits. */
static void recv_submit(struct part_engine *e, struct part_job *job, uint32_t p)
{
    struct part_recv *r = job->recv;
    r->bound = INT64_MAX;
    r->bound_sent = INT64_MAX;
    if (r->strict && r->hops < PART_STRICT_HOPS_MAX) {
        int lane = r->lanes[r->pass];
        uint32_t best = UINT32_MAX;
        for (size_t i = 0; i < r->norder; i++) {
            uint32_t o = r->order[i];
            if (o != p && lane_ready(job->q, o, lane) > 0 &&
                (best == UINT32_MAX || head_after(job->q, best, o, lane))) {
                best = o;
            }
        }
        if (best != UINT32_MAX) {
            r->bound = head_of(job->q, best, lane);
            r->bound_sent = atomic_load(&job->q->per[best].head_sent[lane]);
        }
        r->hops++;
    }
    part__submit_partition(e, p, job);
}

/* A retry of a FIFO receive (an attempt id) first visits, one after the
 * other, each partition of its read set where the queue has messages in
 * flight: only there can the attempt's leases be, and exec_receive
 * replays them instead of leasing. False when none is left to visit. */
static bool replay_next(struct part_engine *e, struct part_job *job)
{
    struct part_recv *r = job->recv;
    while (r->next < r->nparts) {
        uint32_t p = r->parts[r->next++];
        if (atomic_load(&job->q->per[p].inflight) > 0 && part__partition_ok(e, p)) {
            part__submit_partition(e, p, job);
            return true;
        }
    }
    return false;
}

/* The replayed messages in the order the first receive returned them
 * (each partition found its own in row order). */
static void replay_sort(struct part_recv *r)
{
    for (size_t i = 1; i < r->nmsgs; i++) {
        struct part_message m = r->msgs[i];
        uint8_t pos = r->pos[i];
        size_t k = i;
        for (; k > 0 && r->pos[k - 1] > pos; k--) {
            r->msgs[k] = r->msgs[k - 1];
            r->pos[k] = r->pos[k - 1];
        }
        r->msgs[k] = m;
        r->pos[k] = pos;
    }
}

/* The replay visits are over: the attempt's messages if any were left,
 * else the receive starts as an ordinary one (or, replay only, answers
 * none). */
static void replay_done(struct part_engine *e, struct part_job *job)
{
    struct part_recv *r = job->recv;
    r->replaying = false;
    r->next = 0;
    if (r->nmsgs > 0 || r->replay_only) {
        replay_sort(r);
        part__complete(job);
    } else {
        part__recv_dispatch(e, job, UINT32_MAX);
    }
}

void part__recv_dispatch(struct part_engine *e, struct part_job *job, uint32_t first)
{
    struct part_recv *r = job->recv;
    if (r->replaying) {
        if (!replay_next(e, job)) {
            replay_done(e, job);
        }
        return;
    }
    /* the sequence before the counters: see the file comment */
    r->seen_seq = atomic_load(&job->q->wake_seq);
    r->pass = 0;
    if (atomic_load_explicit(&job->q->dequeue_paused, memory_order_acquire)) {
        /* the writer would lease nothing (exec_receive): skip the trip */
        recv_no_message(e, job);
        return;
    }
    if (!recv_plan(e, job, first)) {
        r->pass = 1;
        if (!recv_plan(e, job, UINT32_MAX)) {
            recv_no_message(e, job);
            return;
        }
    }
    r->next = 1;
    recv_submit(e, job, r->order[0]);
}

/* A receive found nothing: completes it, or parks it until a commit wakes
 * it or its deadline passes. */
static void recv_no_message(struct part_engine *e, struct part_job *job)
{
    struct part_recv *r = job->recv;
    struct part_queue *q = job->q;
    /* A stopped partition's counters (or one not open yet) say nothing of
     * what its file holds: "no message" would hide them, so the receive
     * fails instead. */
    for (size_t i = 0; i < r->nparts; i++) {
        int status = part__partition_status(e, r->parts[i]);
        if (status != SL_OK) {
            job->status = status;
            part__complete(job);
            return;
        }
    }
    job->status = SL_OK;
    if (r->deadline_ns == 0 || sl_mono_ns() >= r->deadline_ns) {
        part__complete(job);
        return;
    }
    pthread_mutex_lock(&q->wait_mu);
    int flags = atomic_load(&r->flags);
    if ((flags & (PART_RECV_CANCELLED | PART_RECV_EXPIRED)) || atomic_load(&e->draining)) {
        pthread_mutex_unlock(&q->wait_mu);
        job->status = (flags & PART_RECV_CANCELLED) ? SL_ECLOSED : SL_OK;
        part__complete(job);
        return;
    }
    if (atomic_load(&q->wake_seq) != r->seen_seq) {
        /* something became ready since this receive looked: look again */
        pthread_mutex_unlock(&q->wait_mu);
        part__recv_dispatch(e, job, UINT32_MAX);
        return;
    }
    r->waiting = true;
    if (r->woken && q->wait_head != NULL) { /* keep its turn */
        r->wnext = q->wait_head;
        q->wait_head->recv->wprev = job;
        q->wait_head = job;
    } else {
        r->wprev = q->wait_tail;
        if (q->wait_tail) {
            q->wait_tail->recv->wnext = job;
        } else {
            q->wait_head = job;
        }
        q->wait_tail = job;
    }
    pthread_mutex_unlock(&q->wait_mu);
}

static struct part_job *pop_waiter(struct part_queue *q)
{
    struct part_job *job = q->wait_head;
    if (job != NULL) {
        q->wait_head = job->recv->wnext;
        if (q->wait_head) {
            q->wait_head->recv->wprev = NULL;
        } else {
            q->wait_tail = NULL;
        }
        job->recv->wnext = NULL;
        job->recv->waiting = false;
    }
    return job;
}

static void wake(struct part_engine *e, struct part_queue *q, uint32_t p, int64_t n)
{
    struct part_job *woken[64];
    size_t nw = 0;
    pthread_mutex_lock(&q->wait_mu);
    atomic_fetch_add(&q->wake_seq, 1);
    while (n-- > 0 && nw < SL_ARRAY_LEN(woken)) {
        struct part_job *job = pop_waiter(q);
        if (job == NULL) {
            break;
        }
        job->recv->woken = true;
        woken[nw++] = job;
    }
    pthread_mutex_unlock(&q->wait_mu);
    for (size_t i = 0; i < nw; i++) {
        part__recv_dispatch(e, woken[i], p);
    }
}

void part__flush_waiters(struct part_queue *q, int status)
{
    pthread_mutex_lock(&q->wait_mu);
    atomic_fetch_add(&q->wake_seq, 1);
    struct part_job *list = q->wait_head;
    q->wait_head = q->wait_tail = NULL;
    for (struct part_job *j = list; j != NULL; j = j->recv->wnext) {
        j->recv->waiting = false;
    }
    pthread_mutex_unlock(&q->wait_mu);
    while (list != NULL) {
        struct part_job *job = list;
        list = job->recv->wnext;
        job->recv->wnext = job->recv->wprev = NULL;
        job->status = status;
        part__complete(job);
    }
}

/* A receive that leased what it could here: done, or on to the next
 * partition of its plan, or (nothing found anywhere) to long polling. */
static void receive_continue(struct part_engine *e, struct part_job *job)
{
    struct part_recv *r = job->recv;
    if (job->status != SL_OK || (atomic_load(&r->flags) & PART_RECV_CANCELLED)) {
        part__complete(job);
        return;
    }
    if (r->replaying) {
        if (!replay_next(e, job)) {
            replay_done(e, job);
        }
        return;
    }
    if (r->nmsgs == r->max) {
        part__complete(job);
        return;
    }
    if (r->strict && r->hops < PART_STRICT_HOPS_MAX) {
        /* plan again: the partition just visited published its new head */
        if (recv_plan(e, job, UINT32_MAX)) {
            r->next = 1;
            recv_submit(e, job, r->order[0]);
            return;
        }
        r->next = r->norder;
    }
    while (r->next < r->norder) {
        uint32_t p = r->order[r->next++];
        if (lane_ready(job->q, p, r->lanes[r->pass]) > 0) {
            part__submit_partition(e, p, job);
            return;
        }
    }
    if (r->pass == 0) { /* on to the other lane */
        r->pass = 1;
        if (recv_plan(e, job, UINT32_MAX)) {
            r->next = 1;
            recv_submit(e, job, r->order[0]);
            return;
        }
    }
    if (r->nmsgs > 0) {
        part__complete(job);
    } else {
        recv_no_message(e, job);
    }
}

void part__poll_install(struct part_engine *e)
{
    e->hooks.receive_continue = receive_continue;
    e->hooks.wake = wake;
    e->hooks.flush_waiters = part__flush_waiters;
}
