/*
 * part_sched.c -- a partition writer's job queue, shared fairly among
 * tenants: one FIFO flow per tenant, served deficit round robin by cost
 * (part__job_cost: messages per job) when the writer takes a group
 * commit's batch.
 *
 * Why: a writer used to drain its queue in arrival order, so a tenant
 * with ten thousand queued jobs delayed a quiet tenant's one job by all of
 * them. With a flow per tenant, a quiet tenant's job is in the next batch
 * the writer takes unless more tenants than a batch holds (max_batch_jobs)
 * have jobs waiting: every active flow gets at most its deficit plus one
 * quantum per turn. The weighting by cost keeps a tenant of 10-message
 * batches from taking ten times the share of one sending single messages.
 *
 * Order: a tenant's jobs on one partition keep their order; jobs of
 * different tenants may be reordered, which nothing relies on (each
 * commit is atomic, and SQS promises no cross-client order). A barrier
 * (part_barrier: "after every job queued so far") is a fence instead: it
 * is taken only once every job pushed before it has been taken, into the
 * same or an earlier batch.
 *
 * Stack: a leaf under part_client.c (push) and part_writer.c (take);
 * everything but part__sched_note_waits runs under the writer's mu.
 */
#include <stdlib.h>

#include "part_sched.h"

static size_t slot_of(const struct part_tenant *t, size_t cap)
{
    uint64_t h = (uint64_t)(uintptr_t)t;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return (size_t)h & (cap - 1);
}

static void map_put(struct part_flow **map, size_t cap, struct part_flow *f)
{
    size_t i = slot_of(f->tenant, cap);
    while (map[i] != NULL) {
        i = (i + 1) & (cap - 1);
    }
    map[i] = f;
}

/* The flow of tenant t, made on first use. Flows live as long as the
 * writer: a writer serves few tenants, each a small struct. */
static struct part_flow *flow_of(struct part_sched *s, struct part_tenant *t)
{
    if (s->cap > 0) {
        for (size_t i = slot_of(t, s->cap); s->map[i] != NULL; i = (i + 1) & (s->cap - 1)) {
            if (s->map[i]->tenant == t) {
                return s->map[i];
            }
        }
    }
    if (2 * (s->nflows + 1) > s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 16;
        struct part_flow **map = sl_xcalloc(cap, sizeof *map);
        for (size_t i = 0; i < s->cap; i++) {
            if (s->map[i] != NULL) {
                map_put(map, cap, s->map[i]);
            }
        }
        free(s->map);
        s->map = map;
        s->cap = cap;
    }
    struct part_flow *f = sl_xcalloc(1, sizeof *f);
    f->tenant = t;
    map_put(s->map, s->cap, f);
    s->nflows++;
    return f;
}

/* The jobs a tenant's own requests make. The rest are never refused:
 * releases undo leases, moves belong to a running task (it has one job
 * out at a time), fences and catalog changes are the engine's own. */
static bool capped_op(enum part_op op)
{
    return op == PART_OP_SEND || op == PART_OP_RECEIVE || op == PART_OP_DELETE ||
           op == PART_OP_CHANGE_VIS;
}

bool part__sched_push(struct part_sched *s, struct part_job *job)
{
    job->next = NULL;
    if (job->op == PART_OP_BARRIER) {
        job->seq = ++s->seq;
        s->njobs++;
        if (s->fence_tail != NULL) {
            s->fence_tail->next = job;
        } else {
            s->fence_head = job;
        }
        s->fence_tail = job;
        return true;
    }
    struct part_tenant *t = job->q != NULL ? job->q->tenant : NULL;
    struct part_flow *f = flow_of(s, t);
    uint32_t cap = t != NULL ? atomic_load_explicit(&t->writer_job_cap, memory_order_relaxed) : 0;
    if (cap > 0 && f->jobs >= cap && capped_op(job->op)) {
        return false;
    }
    job->seq = ++s->seq;
    s->njobs++;
    if (f->tail != NULL) {
        f->tail->next = job;
    } else {
        f->head = job;
    }
    f->tail = job;
    f->jobs++;
    if (!f->active) {
        /* A newcomer joins at the back of the ring with one quantum of
         * credit, as Linux's sch_drr does: it is served when the ring
         * reaches it, not a whole turn later. */
        f->active = true;
        f->deficit = PART_SCHED_QUANTUM;
        f->next_active = NULL;
        if (s->ring_tail != NULL) {
            s->ring_tail->next_active = f;
        } else {
            s->ring_head = f;
        }
        s->ring_tail = f;
    }
    return true;
}

bool part__sched_empty(const struct part_sched *s)
{
    return s->njobs == 0;
}

/* Moves the ring's head flow to its tail. */
static void ring_rotate(struct part_sched *s)
{
    struct part_flow *f = s->ring_head;
    if (f == s->ring_tail) {
        return;
    }
    s->ring_head = f->next_active;
    f->next_active = NULL;
    s->ring_tail->next_active = f;
    s->ring_tail = f;
}

static void ring_pop(struct part_sched *s)
{
    struct part_flow *f = s->ring_head;
    s->ring_head = f->next_active;
    if (s->ring_head == NULL) {
        s->ring_tail = NULL;
    }
    f->next_active = NULL;
    f->active = false;
    f->deficit = 0; /* an idle flow banks no credit */
}

struct part_job *part__sched_take(struct part_sched *s, size_t max, size_t *n, int64_t *cost)
{
    struct part_job *out = NULL, **tail = &out;
    size_t taken = 0;
    *cost = 0;
    while (taken < max && s->ring_head != NULL) {
        struct part_flow *f = s->ring_head;
        struct part_job *j = f->head;
        if ((int64_t)j->cost > f->deficit) {
            /* Its turn is over (or, for a job dearer than a quantum, it
             * saves up over several turns). */
            f->deficit += PART_SCHED_QUANTUM;
            ring_rotate(s);
            continue;
        }
        f->deficit -= j->cost;
        f->head = j->next;
        if (f->head == NULL) {
            f->tail = NULL;
        }
        f->jobs--;
        j->next = NULL;
        *tail = j;
        tail = &j->next;
        taken++;
        *cost += j->cost;
        if (f->head == NULL) {
            ring_pop(s);
        }
    }
    /* A fence goes once nothing pushed before it still waits: every flow's
     * head is its oldest job. */
    uint64_t oldest = UINT64_MAX;
    for (struct part_flow *f = s->fence_head != NULL ? s->ring_head : NULL; f != NULL;
         f = f->next_active) {
        oldest = SL_MIN(oldest, f->head->seq);
    }
    while (s->fence_head != NULL && s->fence_head->seq < oldest) {
        struct part_job *j = s->fence_head;
        s->fence_head = j->next;
        if (s->fence_head == NULL) {
            s->fence_tail = NULL;
        }
        j->next = NULL;
        *tail = j;
        tail = &j->next;
        taken++;
        *cost += j->cost;
    }
    s->njobs -= taken;
    *n = taken;
    return out;
}

/* Bounds of the histogram, in microseconds: a commit takes from tens of
 * microseconds (durability os) to milliseconds (fsync), a backlog
 * seconds. */
static const uint64_t wait_bounds_us[PART_WAIT_BUCKETS - 1] = {
    50,    100,   250,    500,    1000,   2500,    5000,    10000,
    25000, 50000, 100000, 250000, 500000, 1000000, 2500000,
};

const uint64_t *part_wait_bounds_us(void)
{
    return wait_bounds_us;
}

void part__sched_note_waits(const struct part_job *jobs, uint64_t now_ns)
{
    for (const struct part_job *j = jobs; j != NULL; j = j->next) {
        if (j->q == NULL) {
            continue;
        }
        uint64_t us = now_ns > j->enq_ns ? (now_ns - j->enq_ns) / 1000 : 0;
        size_t b = 0;
        while (b < PART_WAIT_BUCKETS - 1 && us > wait_bounds_us[b]) {
            b++;
        }
        struct part_tenant *t = j->q->tenant;
        atomic_fetch_add_explicit(&t->wait_bucket[b], 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&t->wait_sum_us, us, memory_order_relaxed);
    }
}

void part__sched_free(struct part_sched *s)
{
    for (size_t i = 0; i < s->cap; i++) {
        free(s->map[i]);
    }
    free(s->map);
    *s = (struct part_sched){0};
}
