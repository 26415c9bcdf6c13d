/*
 * part_client.c -- the client layer: per-loop clients, jobs' lives, their
 * hand-over to writers (corked during completions), and completions back
 * on the submitting loop (over uv_async).
 *
 * Stack: under part_submit.c and part_poll.c (which build, route and
 * finish jobs through it) and the engine (part__client_install); above
 * the writers and the catalog thread, which finish jobs through the
 * e->hooks this file installs (complete, submit). Calls part_catalog.c
 * and part_catalog_db.c (what a freed job held) and part_receipt.c.
 *
 * Job flow: a loop thread builds a struct part_job (copying every input),
 * appends it to a writer's locked queue and signals the writer. The writer
 * runs it inside its next group commit and, after the commit, hands it to
 * part__complete(), which appends it to the submitting client's locked
 * completion list and calls uv_async_send(). Because uv_async_send
 * coalesces, the async callback drains the whole list each time. A job
 * that fans out (a delete batch over several partitions, purge, delete
 * queue) has sub-jobs that finish into their parent; the parent completes
 * when the last one does.
 *
 * Ownership: a job is owned by exactly one place at a time: a writer
 * queue, a waiter list, or a completion list; it is freed on its loop
 * after its callback (receives after their uv_timer has closed).
 */
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include "part_catalog.h"
#include "part_catalog_db.h"
#include "part_client.h"
#include "part_gdir.h"
#include "part_receipt.h"
#include "part_sched.h"

/* ---- job plumbing ------------------------------------------------------ */

/* Appends the list head..tail (n jobs) to w's queue with one lock and one
 * wake-up; a writer that is gone fails them instead. */
static void writer_submit_list(struct part_writer *w, struct part_job *head, struct part_job *tail,
                               size_t n)
{
    struct part_job *refused = NULL; /* over their tenant's writer_job_cap */
    pthread_mutex_lock(&w->mu);
    bool dead = !w->started || w->exited;
    if (!dead) {
        tail->next = NULL;
        uint64_t now_ns = sl_mono_ns();
        int64_t cost = 0;
        if (w->index == UINT32_MAX) { /* the catalog thread: one queue, in order */
            for (struct part_job *j = head; j != NULL; j = j->next) {
                j->cost = part__job_cost(j);
                j->enq_ns = now_ns;
                cost += j->cost;
            }
            if (w->tail) {
                w->tail->next = head;
            } else {
                w->head = head;
            }
            w->tail = tail;
        } else {
            for (struct part_job *j = head, *next; j != NULL; j = next) {
                next = j->next;
                j->cost = part__job_cost(j);
                j->enq_ns = now_ns;
                if (part__sched_push(&w->sched, j)) {
                    cost += j->cost;
                } else {
                    j->next = refused;
                    refused = j;
                    n--;
                }
            }
        }
        atomic_fetch_add(&w->queued, (int64_t)n);
        atomic_fetch_add_explicit(&w->queued_cost, cost, memory_order_relaxed);
        pthread_cond_signal(&w->cv);
    }
    pthread_mutex_unlock(&w->mu);
    while (refused != NULL) {
        struct part_job *job = refused;
        refused = job->next;
        job->next = NULL;
        job->status = SL_ELIMIT;
        part__complete(job);
    }
    if (dead) {
        int status = atomic_load(&w->failed) ? SL_EIO : SL_ECLOSED;
        while (head != NULL) {
            struct part_job *job = head;
            head = job == tail ? NULL : job->next;
            job->next = NULL;
            job->status = status;
            part__complete(job);
        }
    }
}

void part__writer_submit(struct part_writer *w, struct part_job *job)
{
    writer_submit_list(w, job, job, 1);
}

/* The client whose completions this thread is calling back (on_async), or
 * NULL: what those callbacks submit is corked on that client. */
static _Thread_local struct part_client *corking;

void part__submit_partition(struct part_engine *e, uint32_t p, struct part_job *job)
{
    job->partition = p;
    struct part_client *c = corking;
    if (c == NULL || c->engine != e) {
        part__writer_submit(&e->writers[p], job);
        return;
    }
    job->next = NULL;
    if (c->cork_tail[p] != NULL) {
        c->cork_tail[p]->next = job;
    } else {
        c->cork_head[p] = job;
    }
    c->cork_tail[p] = job;
    c->ncorked++;
}

static void cork_flush(struct part_client *c)
{
    for (uint32_t p = 0; p < c->engine->nparts && c->ncorked > 0; p++) {
        struct part_job *head = c->cork_head[p], *tail = c->cork_tail[p];
        if (head == NULL) {
            continue;
        }
        size_t n = 1;
        for (struct part_job *j = head; j != tail; j = j->next) {
            n++;
        }
        c->cork_head[p] = c->cork_tail[p] = NULL;
        c->ncorked -= n;
        writer_submit_list(&c->engine->writers[p], head, tail, n);
    }
}

static void recv_free(struct part_recv *r)
{
    for (size_t i = 0; i < PART_MAX_BATCH; i++) {
        free((void *)r->msgs[i].body.p); /* the block of every column (fill_message) */
    }
    free(r->parts);
    free(r->order);
    free(r->filter);
    free(r);
}

static void job_free_now(struct part_job *job)
{
    free(job->msgs); /* and the messages' bytes after it */
    free(job->rh);
    if (job->parent == NULL) {
        free(job->entry_status);
    }
    free(job->res.sent);
    part_queue_info_free(job->res.queue);
    part__catalog_req_free(job->cat);
    if (job->recv != NULL) {
        recv_free(job->recv);
    }
    part__queue_unref(job->q);
    part__queue_unref(job->dest_q);
    free(job);
}

static void on_timer_closed(uv_handle_t *h)
{
    job_free_now(h->data);
}

static void job_free(struct part_job *job)
{
    if (job->recv != NULL && job->recv->timer_init) {
        uv_close((uv_handle_t *)&job->recv->timer, on_timer_closed);
        return;
    }
    job_free_now(job);
}

static void client_free(struct part_client *c)
{
    pthread_mutex_destroy(&c->mu);
    free(c->cork_head);
    free(c->cork_tail);
    free(c);
}

/* A FIFO send gives back the directory counts of its messages that were
 * not stored (its job failed, or they were duplicates), as their rows
 * will never be; a partition that became a group's first is woken. */
static void gdir_give_back(struct part_job *job)
{
    struct part_engine *e = job->engine;
    const struct part_sent *sent = job->parent != NULL ? job->parent->res.sent : job->res.sent;
    for (size_t i = 0; i < job->nmsgs; i++) {
        const struct part_send_msg *m = &job->msgs[i];
        if (job->status == SL_OK && sent != NULL && !sent[m->index].duplicate) {
            continue;
        }
        uint32_t first = part__gdir_drop(job->q->gdir, m->group_id, job->partition, 1);
        if (first != PART_GDIR_NONE) {
            /* as part__gdir_handed_over (part_batch.c): first may lease it */
            atomic_fetch_add_explicit(&job->q->per[first].handovers, 1, memory_order_release);
            e->hooks.wake(e, job->q, first, 1);
        }
    }
    job->gdir_held = false;
}

void part__job_free(struct part_job *job)
{
    job_free_now(job);
}

void part__complete(struct part_job *job)
{
    if (job->origin != NULL) {
        job->engine->hooks.answer(job); /* another node waits for it */
        return;
    }
    struct part_job *parent = job->parent;
    if (job->gdir_held) {
        gdir_give_back(job);
    }
    if (parent != NULL && parent->op == PART_OP_SEND) {
        /* A share of a send: its failure is its entries' alone. */
        for (size_t i = 0; job->status != SL_OK && i < job->nmsgs; i++) {
            parent->entry_status[job->msgs[i].index] = job->status;
        }
        job_free_now(job);
        if (atomic_fetch_sub(&parent->pending, 1) == 1) {
            part__complete(parent);
        }
        return;
    }
    if (parent != NULL) {
        /* Any failure wins; a deleted queue's purges do not: the queue is
         * gone either way and restart removes what a failed partition kept. */
        if (job->status != SL_OK && job->status != SL_ENOTFOUND && parent->op != PART_OP_Q_DELETE) {
            parent->status = job->status; /* benign race between writers */
        }
        job_free_now(job);
        if (atomic_fetch_sub(&parent->pending, 1) == 1) {
            part__complete(parent);
        }
        return;
    }
    struct part_client *c = job->client;
    if (c == NULL) { /* internal job nobody waits for */
        job_free_now(job);
        return;
    }
    pthread_mutex_lock(&c->mu);
    c->pending--;
    if (c->closed) {
        /* Its loop closed the client first: nobody is left to call back. */
        bool last = c->pending == 0 && c->handle_closed;
        pthread_mutex_unlock(&c->mu);
        job_free_now(job);
        if (last) {
            client_free(c);
        }
        return;
    }
    job->next = NULL;
    if (c->done_tail) {
        c->done_tail->next = job;
    } else {
        c->done_head = job;
    }
    c->done_tail = job;
    pthread_mutex_unlock(&c->mu);
    uv_async_send(&c->async);
}

/* ---- clients ----------------------------------------------------------- */

struct part_job *part__job_new(struct part_client *c, enum part_op op, uint64_t queue_id,
                               struct part_cookie cookie, part_done_fn *done)
{
    struct part_job *job = sl_xcalloc(1, sizeof *job);
    job->op = op;
    job->engine = c->engine;
    job->client = c;
    job->cookie = cookie;
    job->done = done;
    job->queue_id = queue_id;
    pthread_mutex_lock(&c->mu);
    c->pending++;
    pthread_mutex_unlock(&c->mu);
    return job;
}

/* Frees a job that job_new made but that was never submitted. */
void part__job_discard(struct part_job *job)
{
    struct part_client *c = job->client;
    pthread_mutex_lock(&c->mu);
    c->pending--;
    pthread_mutex_unlock(&c->mu);
    job_free(job);
}

static void recv_unlist(struct part_client *c, struct part_job *job)
{
    struct part_recv *r = job->recv;
    if (r->cprev) {
        r->cprev->recv->cnext = r->cnext;
    } else if (c->recv_head == job) {
        c->recv_head = r->cnext;
    }
    if (r->cnext) {
        r->cnext->recv->cprev = r->cprev;
    }
    r->cprev = r->cnext = NULL;
}

/* Puts back messages that a cancelled receive leased in the race. */
static void release_leases(struct part_engine *e, struct part_job *job)
{
    struct part_recv *r = job->recv;
    if (r->replayed) {
        return; /* the leases are the first receive's: they stay its */
    }
    for (size_t i = 0; i < r->nmsgs; i++) {
        if (r->msgs[i].partition == UINT32_MAX) {
            continue;
        }
        uint32_t p = r->msgs[i].partition;
        struct part_job *rel = sl_xcalloc(1, sizeof *rel);
        rel->op = PART_OP_RELEASE;
        rel->engine = e;
        rel->queue_id = job->queue_id;
        rel->q = job->q;
        atomic_fetch_add(&job->q->refs, 1);
        rel->rh = sl_xcalloc(r->nmsgs, sizeof *rel->rh);
        rel->entry_status = sl_xcalloc(r->nmsgs, sizeof *rel->entry_status);
        for (size_t k = i; k < r->nmsgs; k++) {
            if (r->msgs[k].partition == p) {
                struct part_rh_entry *en = &rel->rh[rel->nrh];
                en->index = rel->nrh++;
                en->rh = (struct part_receipt){p, job->queue_id, r->msgs[k].sequence,
                                               r->msgs[k].receive_count};
                r->msgs[k].partition = UINT32_MAX;
            }
        }
        part__submit_partition(e, p, rel);
    }
}

/* Completions come in bursts (a group commit completes all its jobs at
 * once), and a caller often submits its next job from the callback. Those
 * submissions are corked and handed to each writer in lists, every
 * CORK_FLUSH jobs and when the burst is done: one lock and one wake-up per
 * writer instead of per job, and a writer that finished its group does
 * not start a new one with the first few resubmissions while the rest are
 * still being made (a trickle of tiny groups, each with its own commit). */
#define CORK_FLUSH 64

static void on_async(uv_async_t *h)
{
    struct part_client *c = h->data;
    pthread_mutex_lock(&c->mu);
    struct part_job *list = c->done_head;
    c->done_head = c->done_tail = NULL;
    pthread_mutex_unlock(&c->mu);
    struct part_client *outer = corking;
    corking = c;
    while (list != NULL) {
        struct part_job *job = list;
        list = job->next;
        job->next = NULL;
        if (job->recv != NULL) {
            struct part_recv *r = job->recv;
            recv_unlist(c, job);
            if (r->timer_init) {
                uv_timer_stop(&r->timer);
            }
            if (atomic_load(&r->flags) & PART_RECV_CANCELLED) {
                release_leases(c->engine, job);
                job->status = SL_ECLOSED;
            }
            if (job->status == SL_OK) {
                for (size_t i = 0; i < r->nmsgs; i++) {
                    const struct part_message *m = &r->msgs[i];
                    struct part_receipt rh = {m->partition, m->queue_id, m->sequence,
                                              m->receive_count};
                    part__receipt_encode(c->engine, &rh, r->msgs[i].receipt);
                }
                job->res.messages = r->msgs;
                job->res.message_count = r->nmsgs;
            }
        }
        if (job->entry_status != NULL) {
            job->res.entry_status = job->entry_status;
            job->res.entry_count = job->op == PART_OP_SEND ? job->nmsgs : job->nrh;
        }
        job->res.purged = atomic_load(&job->purged);
        job->done(job->cookie, job->status, &job->res);
        job_free(job);
        if (c->ncorked >= CORK_FLUSH) {
            cork_flush(c);
        }
    }
    cork_flush(c);
    corking = outer;
}

int part_client_new(struct part_engine *e, uv_loop_t *loop, struct part_client **out)
{
    struct part_client *c = sl_xcalloc(1, sizeof *c);
    c->engine = e;
    c->loop = loop;
    c->cork_head = sl_xcalloc(e->nparts, sizeof *c->cork_head);
    c->cork_tail = sl_xcalloc(e->nparts, sizeof *c->cork_tail);
    pthread_mutex_init(&c->mu, NULL);
    if (uv_async_init(loop, &c->async, on_async) != 0) {
        client_free(c);
        return SL_EIO;
    }
    c->async.data = c;
    *out = c;
    return SL_OK;
}

static void on_client_closed(uv_handle_t *h)
{
    struct part_client *c = h->data;
    pthread_mutex_lock(&c->mu);
    c->handle_closed = true;
    bool last = c->pending == 0;
    pthread_mutex_unlock(&c->mu);
    if (last) {
        client_free(c);
    }
}

void part_client_close(struct part_client *c)
{
    if (c == NULL) {
        return;
    }
    SL_ASSERT(c->recv_head == NULL);
    /* Completions already queued for the loop will not be called back;
     * later ones are dropped by part__complete. */
    pthread_mutex_lock(&c->mu);
    c->closed = true;
    struct part_job *list = c->done_head;
    c->done_head = c->done_tail = NULL;
    pthread_mutex_unlock(&c->mu);
    while (list != NULL) {
        struct part_job *job = list;
        list = job->next;
        job_free(job);
    }
    uv_close((uv_handle_t *)&c->async, on_client_closed);
}

void part__client_install(struct part_engine *e)
{
    e->hooks.complete = part__complete;
    e->hooks.submit = part__submit_partition;
}
