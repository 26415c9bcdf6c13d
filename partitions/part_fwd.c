/*
 * part_fwd.c -- a cluster's forwarding (part_fwd.h): jobs for a group led
 * elsewhere go to its leader as frames on the peer port, run there as that
 * node's own jobs, and come back into the waiting job.
 *
 * A request frame carries what the leader's writer reads of the job: the
 * operation, queue, partition and the operation's inputs (a send's
 * messages, a receive's remaining count, lane and lease, the receipts of a
 * delete or visibility change, a catalog change). The answer carries what
 * the writer would have written into the job: a send's ids and sequence
 * numbers, a receive's messages, each entry's status, a purge's count, a
 * catalog change's queue. A leased message's receipt handle is made on
 * this node, from the partition, row and receive count the leader
 * returned, with the engine key every node derives alike.
 *
 * A job is forwarded once: a forwarded job that finds its node no longer
 * leading fails with SL_EUNAVAIL, and so does a job whose leader is not
 * known or whose link dies before the answer (the gateway answers 503 and
 * the client retries). The leader's writer runs the job and answers it
 * when it finishes (part__complete calls e->hooks.answer).
 *
 * Wire (big-endian, part_bytes.h): u8 kind (1 request, 2 answer), u64 id;
 * a request then u8 op, u64 queue, u32 partition, the inputs; an answer
 * then i32 status and the outputs. Bytes are u32 length + bytes; an
 * optional string is u8 present + bytes.
 *
 * Threading: on_frame and on_link_down run on the peer port's thread;
 * forward and answer on writer threads, the catalog thread or a loop. The
 * table of jobs waiting for an answer is under f->mu; every call into the
 * peer port holds f->port read-locked, and closing takes it for writing,
 * so that nothing reaches the port after it closed. The two are never
 * held together: the port's thread calls back (on_link_down) holding its
 * own lock, which a send takes too.
 */
#include "part_fwd.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "part_bytes.h"
#include "part_catalog.h"
#include "part_catalog_db.h"
#include "part_client.h"
#include "part_filter.h"
#include "part_peer_transport.h"
#include "part_repl.h"

#define LOG_MOD "partitions"
#define KIND_REQUEST 1
#define KIND_ANSWER 2
#define WAIT_BUCKETS 256u /* a power of two */

/* A job of this node waiting for another node's answer. */
struct waiting {
    uint64_t id;
    uint16_t node;
    struct part_job *job;
    struct waiting *next;
};

/* Where a job that another node forwarded came from. */
struct part_fwd_origin {
    struct part_fwd *f;
    uint64_t id;   /* the origin's */
    uint64_t link; /* the link it came on: the answer goes back on it */
};

struct part_fwd {
    struct part_engine *e;
    struct part__peer_node *peer;
    uint16_t self;
    pthread_rwlock_t port; /* closed, and peer's life */
    bool closed;
    pthread_mutex_t mu; /* the waiting table */
    struct waiting *buckets[WAIT_BUCKETS];
    uint64_t next_id;
};

static struct sl_log_limit fwd_log_limit = SL_LOG_LIMIT(5, 60000);

/* ---- encoding ------------------------------------------------------------ */

static void put_u(struct sl_buf *b, uint64_t v, size_t bytes)
{
    uint8_t tmp[8];
    part__put_be(tmp, v, bytes);
    sl_buf_append(b, tmp, bytes);
}

static void put_bytes(struct sl_buf *b, const void *p, size_t n)
{
    put_u(b, n, 4);
    if (n > 0) {
        sl_buf_append(b, p, n);
    }
}

static void put_str(struct sl_buf *b, const char *s)
{
    put_u(b, s != NULL, 1);
    if (s != NULL) {
        put_bytes(b, s, strlen(s));
    }
}

/* A frame being read: every get past its end (or of a bad length) sets
 * bad and returns zeros, checked once at the end. */
struct rd {
    const uint8_t *p;
    size_t n;
    bool bad;
};

static uint64_t get_u(struct rd *r, size_t bytes)
{
    if (r->bad || r->n < bytes) {
        r->bad = true;
        return 0;
    }
    uint64_t v = part__get_be(r->p, bytes);
    r->p += bytes;
    r->n -= bytes;
    return v;
}

static struct sl_slice get_bytes(struct rd *r)
{
    size_t n = (size_t)get_u(r, 4);
    if (r->bad || r->n < n) {
        r->bad = true;
        return (struct sl_slice){"", 0};
    }
    struct sl_slice s = {(const char *)r->p, n};
    r->p += n;
    r->n -= n;
    return s;
}

/* An optional string; NULL when absent. Owned by the caller. */
static char *get_str(struct rd *r)
{
    if (get_u(r, 1) == 0) {
        return NULL;
    }
    struct sl_slice s = get_bytes(r);
    return r->bad ? NULL : sl_xstrndup(s.p, s.n);
}

static void put_cfg(struct sl_buf *b, const struct part_queue_config *c)
{
    put_u(b, c->visibility_timeout_s, 4);
    put_u(b, c->delay_s, 4);
    put_u(b, c->retention_s, 4);
    put_u(b, c->fifo, 1);
    put_u(b, c->dedup_per_group, 1);
    put_u(b, c->dlq_target_id, 8);
    put_u(b, c->max_receive_count, 4);
    put_u(b, c->max_message_size, 4);
    put_u(b, c->receive_wait_s, 4);
    put_u(b, c->content_based_dedup, 1);
    put_u(b, c->throughput_per_group, 1);
    put_u(b, c->priority_order, 1);
    put_u(b, c->idempotency_window_s, 4);
    put_u(b, c->exclusive, 1);
    put_u(b, c->filtered, 1);
}

static struct part_queue_config get_cfg(struct rd *r)
{
    struct part_queue_config c;
    c.visibility_timeout_s = (uint32_t)get_u(r, 4);
    c.delay_s = (uint32_t)get_u(r, 4);
    c.retention_s = (uint32_t)get_u(r, 4);
    c.fifo = get_u(r, 1) != 0;
    c.dedup_per_group = get_u(r, 1) != 0;
    c.dlq_target_id = get_u(r, 8);
    c.max_receive_count = (uint32_t)get_u(r, 4);
    c.max_message_size = (uint32_t)get_u(r, 4);
    c.receive_wait_s = (uint32_t)get_u(r, 4);
    c.content_based_dedup = get_u(r, 1) != 0;
    c.throughput_per_group = get_u(r, 1) != 0;
    c.priority_order = get_u(r, 1) != 0;
    c.idempotency_window_s = (uint32_t)get_u(r, 4);
    c.exclusive = get_u(r, 1) != 0;
    c.filtered = get_u(r, 1) != 0;
    return c;
}

static void put_kvs(struct sl_buf *b, const struct part_kv *kv, size_t n)
{
    put_u(b, n, 4);
    for (size_t i = 0; i < n; i++) {
        put_str(b, kv[i].key);
        put_str(b, kv[i].value);
    }
}

/* An owned array of owned strings (part__kv_free frees it). */
static struct part_kv *get_kvs(struct rd *r, size_t *n)
{
    size_t count = (size_t)get_u(r, 4);
    if (r->bad || count > r->n) {
        r->bad = true;
        *n = 0;
        return NULL;
    }
    struct part_kv *kv = sl_xcalloc(count + 1, sizeof *kv);
    for (size_t i = 0; i < count; i++) {
        kv[i].key = get_str(r);
        kv[i].value = get_str(r);
        if (kv[i].key == NULL) {
            r->bad = true;
        }
    }
    *n = count;
    return kv;
}

/* ---- the leader's side: a forwarded job --------------------------------------- */

static void answer_frame(struct part_fwd *f, uint64_t link, const struct sl_buf *b)
{
    pthread_rwlock_rdlock(&f->port);
    int rc = f->closed ? SL_ECLOSED : part__peer_reply(f->peer, link, b->p, b->n);
    pthread_rwlock_unlock(&f->port);
    if (rc != SL_OK) {
        /* the origin learns it from its link, and retries */
        sl_log_limited(&fwd_log_limit, SL_LOG_WARN, LOG_MOD, "forwarding: an answer is lost: %s",
                       sl_strerror(rc));
    }
}

static void put_message(struct sl_buf *b, const struct part_message *m, uint8_t pos)
{
    put_bytes(b, m->message_id, strlen(m->message_id));
    put_u(b, m->queue_id, 8);
    put_u(b, m->source_queue_id, 8);
    put_u(b, m->partition, 4);
    put_bytes(b, m->body.p, m->body.n);
    put_bytes(b, m->attrs.p, m->attrs.n);
    put_bytes(b, m->sys_attrs.p, m->sys_attrs.n);
    put_bytes(b, m->digests.p, m->digests.n);
    put_str(b, m->group_id);
    put_str(b, m->dedup_id);
    put_u(b, (uint64_t)m->priority, 8);
    put_u(b, m->receive_count, 4);
    put_u(b, m->sent_ms, 8);
    put_u(b, m->first_receive_ms, 8);
    put_u(b, m->sequence, 8);
    put_u(b, pos, 1);
}

static void put_queue(struct sl_buf *b, const struct part_queue_info *qi)
{
    put_u(b, qi != NULL, 1);
    if (qi == NULL) {
        return;
    }
    put_u(b, qi->id, 8);
    put_str(b, qi->tenant);
    put_str(b, qi->name);
    put_u(b, qi->created_ms, 8);
    put_u(b, qi->modified_ms, 8);
    put_cfg(b, &qi->cfg);
    put_kvs(b, qi->attrs, qi->attr_count);
    put_kvs(b, qi->tags, qi->tag_count);
}

/* e->hooks.answer: a forwarded job finished here (any thread). */
static void answer(struct part_job *job)
{
    struct part_fwd_origin *o = job->origin;
    struct sl_buf b;
    sl_buf_init(&b);
    put_u(&b, KIND_ANSWER, 1);
    put_u(&b, o->id, 8);
    put_u(&b, (uint32_t)job->status, 4);
    switch (job->op) {
    case PART_OP_SEND: {
        size_t n = job->res.sent != NULL ? job->nmsgs : 0;
        put_u(&b, n, 4);
        for (size_t i = 0; i < n; i++) {
            const struct part_sent *s = &job->res.sent[i];
            put_bytes(&b, s->message_id, strlen(s->message_id));
            put_u(&b, s->partition, 4);
            put_u(&b, s->sequence, 8);
            put_u(&b, s->duplicate, 1);
        }
        break;
    }
    case PART_OP_RECEIVE:
        put_u(&b, job->recv->nmsgs, 4);
        for (size_t i = 0; i < job->recv->nmsgs; i++) {
            put_message(&b, &job->recv->msgs[i], job->recv->pos[i]);
        }
        break;
    case PART_OP_DELETE:
    case PART_OP_CHANGE_VIS:
    case PART_OP_RELEASE:
        put_u(&b, job->nrh, 4);
        for (size_t i = 0; i < job->nrh; i++) {
            put_u(&b, (uint32_t)job->entry_status[i], 4);
        }
        break;
    case PART_OP_PURGE:
        put_u(&b, atomic_load(&job->purged), 8);
        break;
    case PART_OP_MOVE:
        put_u(&b, job->res.moved, 8);
        put_u(&b, job->res.move_skipped, 8);
        put_u(&b, job->res.move_cursor, 8);
        put_u(&b, job->res.move_exhausted, 1);
        put_u(&b, job->res.move_held, 1);
        break;
    case PART_OP_REMOVE:
    case PART_OP_BARRIER:
        break; /* the status says it all */
    default:   /* a catalog change */
        put_queue(&b, job->res.queue);
        break;
    }
    answer_frame(o->f, o->link, &b);
    sl_buf_free(&b);
    free(o);
    part__job_free(job);
}

static bool is_catalog(enum part_op op)
{
    return op == PART_OP_Q_CREATE || op == PART_OP_Q_SET_ATTRS || op == PART_OP_Q_TAG ||
           op == PART_OP_Q_UNTAG || op == PART_OP_Q_DELETE || op == PART_OP_Q_PAUSE;
}

/* A message's indexed pairs as part_send_msg.filters holds them: n keys
 * and values, each NUL-terminated, nothing after. */
static bool filters_block_ok(struct sl_slice b, uint8_t n)
{
    size_t nuls = 0;
    for (size_t i = 0; i < b.n; i++) {
        nuls += b.p[i] == '\0';
    }
    return n <= PART_FILTER_KEYS_MAX && nuls == 2 * (size_t)n && (b.n == 0 || b.p[b.n - 1] == '\0');
}

/* A send's messages, in one block as part_send makes them. */
static bool get_send(struct rd *r, struct part_job *job)
{
    size_t n = (size_t)get_u(r, 4);
    if (r->bad || n == 0 || n > PART_MAX_BATCH) {
        return false;
    }
    /* the frame outlives nothing: copy into the job's block */
    struct sl_slice id[PART_MAX_BATCH], body[PART_MAX_BATCH], attrs[PART_MAX_BATCH],
        sys[PART_MAX_BATCH], dig[PART_MAX_BATCH], group[PART_MAX_BATCH], dedup[PART_MAX_BATCH];
    int32_t delay[PART_MAX_BATCH];
    bool has_prio[PART_MAX_BATCH];
    int64_t prio[PART_MAX_BATCH];
    uint8_t lane[PART_MAX_BATCH];
    struct sl_slice filt[PART_MAX_BATCH]; /* indexed pairs, as part_send_msg.filters */
    uint8_t nfilt[PART_MAX_BATCH];
    size_t bytes = 0;
    for (size_t i = 0; i < n; i++) {
        id[i] = get_bytes(r);
        body[i] = get_bytes(r);
        attrs[i] = get_bytes(r);
        sys[i] = get_bytes(r);
        dig[i] = get_bytes(r);
        group[i] = get_u(r, 1) ? get_bytes(r) : (struct sl_slice){NULL, 0};
        dedup[i] = get_u(r, 1) ? get_bytes(r) : (struct sl_slice){NULL, 0};
        delay[i] = (int32_t)(uint32_t)get_u(r, 4);
        has_prio[i] = get_u(r, 1) != 0;
        prio[i] = (int64_t)get_u(r, 8);
        lane[i] = (uint8_t)get_u(r, 1);
        nfilt[i] = (uint8_t)get_u(r, 1);
        filt[i] = get_bytes(r);
        if (id[i].n > PART_MSG_ID_LEN || dig[i].n > PART_DIGESTS_MAX ||
            group[i].n > PART_GROUP_ID_MAX || dedup[i].n > PART_DEDUP_ID_MAX ||
            !filters_block_ok(filt[i], nfilt[i])) {
            r->bad = true;
        }
        bytes += body[i].n + attrs[i].n + sys[i].n + group[i].n + 1 + dedup[i].n + 1 + filt[i].n;
    }
    if (r->bad) {
        return false;
    }
    job->msgs = sl_xmalloc(n * sizeof *job->msgs + bytes);
    job->nmsgs = n;
    char *p = (char *)(job->msgs + n);
    for (size_t i = 0; i < n; i++) {
        struct part_send_msg *m = &job->msgs[i];
        *m = (struct part_send_msg){0};
        memcpy(m->message_id, id[i].p, id[i].n);
        m->message_id[id[i].n] = '\0';
        struct sl_slice *to[] = {&m->body, &m->attrs, &m->sys_attrs};
        const struct sl_slice from[] = {body[i], attrs[i], sys[i]};
        for (size_t k = 0; k < 3; k++) {
            if (from[k].n > 0) {
                memcpy(p, from[k].p, from[k].n);
            }
            *to[k] = (struct sl_slice){p, from[k].n};
            p += from[k].n;
        }
        memcpy(m->digests, dig[i].p, dig[i].n);
        m->ndigests = (uint8_t)dig[i].n;
        if (group[i].p != NULL) {
            memcpy(p, group[i].p, group[i].n);
            p[group[i].n] = '\0';
            m->group_id = p;
            p += group[i].n + 1;
        }
        if (dedup[i].p != NULL) {
            memcpy(p, dedup[i].p, dedup[i].n);
            p[dedup[i].n] = '\0';
            m->dedup_id = p;
            p += dedup[i].n + 1;
        }
        m->delay_s = delay[i];
        m->has_priority = has_prio[i];
        m->priority = prio[i];
        m->lane = lane[i] == PART_LANE_OVERFLOW ? PART_LANE_OVERFLOW : PART_LANE_MAIN;
        m->index = (uint8_t)i; /* its place here; the origin maps it back */
        if (nfilt[i] > 0) {
            memcpy(p, filt[i].p, filt[i].n);
            m->filters = p;
            m->nfilters = nfilt[i];
            p += filt[i].n;
        }
    }
    return true;
}

static bool get_receive(struct rd *r, struct part_job *job)
{
    struct part_recv *rv = sl_xcalloc(1, sizeof *rv);
    job->recv = rv;
    rv->max = (uint32_t)get_u(r, 4);
    rv->visibility_s = (int32_t)(uint32_t)get_u(r, 4);
    rv->lanes[0] = get_u(r, 1) == PART_LANE_OVERFLOW ? PART_LANE_OVERFLOW : PART_LANE_MAIN;
    rv->fair_window = (uint32_t)get_u(r, 4);
    struct sl_slice attempt = get_bytes(r);
    rv->replaying = get_u(r, 1) != 0;
    rv->bound = (int64_t)get_u(r, 8);
    rv->bound_sent = (int64_t)get_u(r, 8);
    size_t nfilter = (size_t)get_u(r, 1);
    struct part_filter_pair pairs[PART_FILTER_MAX];
    for (size_t i = 0; i < nfilter && i < PART_FILTER_MAX; i++) {
        pairs[i].key = get_bytes(r);
        pairs[i].value = get_bytes(r);
    }
    if (r->bad || rv->max == 0 || rv->max > PART_MAX_BATCH || attempt.n > PART_ATTEMPT_MAX ||
        (nfilter > 0 && part__filter_copy(rv, pairs, nfilter) != SL_OK)) {
        return false;
    }
    memcpy(rv->attempt, attempt.p, attempt.n);
    rv->attempt_len = attempt.n;
    return true;
}

static bool get_receipts(struct rd *r, struct part_job *job)
{
    size_t n = (size_t)get_u(r, 4);
    if (r->bad || n == 0 || n > PART_MAX_BATCH) {
        return false;
    }
    job->rh = sl_xcalloc(n, sizeof *job->rh);
    job->nrh = n;
    job->entry_status = sl_xcalloc(n, sizeof *job->entry_status);
    for (size_t i = 0; i < n; i++) {
        struct part_rh_entry *en = &job->rh[i];
        en->index = i;
        en->rh.partition = (uint32_t)get_u(r, 4);
        en->rh.queue_id = get_u(r, 8);
        en->rh.sequence = get_u(r, 8);
        en->rh.receive_gen = (uint32_t)get_u(r, 4);
        en->visibility_s = (uint32_t)get_u(r, 4);
    }
    return !r->bad;
}

/* part_move_req.held for a move forwarded here: the origin's gateway
 * cannot be asked, but a cluster keeps the operators' pauses in the
 * replicated catalog, which this node reads as well as the origin would. */
static bool dest_paused(void *arg, uint64_t dest_queue_id)
{
    return (part_queue_pause(arg, dest_queue_id) & PART_PAUSE_ENQUEUE) != 0;
}

/* A move's inputs. A destination this node does not know (its catalog
 * behind the origin's) marks the job with move_after = UINT64_MAX, which
 * on_request fails with SL_EUNAVAIL, as an unknown queue. */
static bool get_move(struct part_engine *e, struct rd *r, struct part_job *job)
{
    uint64_t dest = get_u(r, 8);
    job->move_after = get_u(r, 8);
    job->move_max = (uint32_t)get_u(r, 4);
    job->only_row = get_u(r, 8);
    if (r->bad || job->move_max == 0 || job->move_max > PART_MAX_MOVE ||
        job->only_row > INT64_MAX || dest == job->queue_id) {
        return false;
    }
    if (dest != 0) {
        job->dest_q = part__queue_ref(e, dest);
        if (job->dest_q == NULL) {
            job->move_after = UINT64_MAX;
        }
    }
    job->move_held = dest_paused;
    job->move_held_arg = e;
    return true;
}

static bool get_catalog(struct rd *r, struct part_job *job)
{
    struct part_catalog_req *c = sl_xcalloc(1, sizeof *c);
    job->cat = c;
    c->tenant = get_str(r);
    c->name = get_str(r);
    c->cfg = get_cfg(r);
    c->kvs = get_kvs(r, &c->nkv);
    c->tags = get_kvs(r, &c->ntags);
    c->pause = (unsigned)get_u(r, 1) & (PART_PAUSE_ENQUEUE | PART_PAUSE_DEQUEUE);
    return !r->bad && (job->op != PART_OP_Q_CREATE || (c->tenant != NULL && c->name != NULL));
}

/* A request from node `from`: made a job of this node and handed to its
 * writer (or the catalog thread), answered when it finishes. */
static void on_request(struct part_fwd *f, uint64_t link, uint64_t id, struct rd *r)
{
    struct part_engine *e = f->e;
    struct part_job *job = sl_xcalloc(1, sizeof *job);
    job->engine = e;
    job->op = (enum part_op)get_u(r, 1);
    job->queue_id = get_u(r, 8);
    job->partition = (uint32_t)get_u(r, 4);
    struct part_fwd_origin *o = sl_xcalloc(1, sizeof *o);
    *o = (struct part_fwd_origin){f, id, link};
    job->origin = o;
    bool catalog = is_catalog(job->op);
    bool ok = !r->bad && (catalog || job->partition < e->nparts);
    if (ok) {
        switch (job->op) {
        case PART_OP_SEND:
            ok = get_send(r, job);
            break;
        case PART_OP_RECEIVE:
            ok = get_receive(r, job);
            break;
        case PART_OP_DELETE:
        case PART_OP_CHANGE_VIS:
        case PART_OP_RELEASE:
            ok = get_receipts(r, job);
            break;
        case PART_OP_PURGE:
        case PART_OP_BARRIER:
            break;
        case PART_OP_MOVE:
            ok = get_move(f->e, r, job);
            break;
        case PART_OP_REMOVE:
            job->only_row = get_u(r, 8);
            ok = job->only_row != 0 && job->only_row <= INT64_MAX;
            break;
        default:
            ok = catalog && get_catalog(r, job);
            break;
        }
    }
    if (!ok || r->bad) {
        sl_log_limited(&fwd_log_limit, SL_LOG_WARN, LOG_MOD,
                       "forwarding: a malformed request (operation %d) refused", (int)job->op);
        job->status = SL_EINVAL;
        answer(job);
        return;
    }
    if (job->op != PART_OP_Q_CREATE && job->op != PART_OP_BARRIER) {
        job->q = part__queue_ref(e, job->queue_id);
        if (job->q == NULL || (job->op == PART_OP_MOVE && job->move_after == UINT64_MAX)) {
            /* This node's catalog has not caught up with the origin's yet:
             * the origin retries. */
            job->status = SL_EUNAVAIL;
            answer(job);
            return;
        }
    }
    part__writer_submit(catalog ? &e->catw : &e->writers[job->partition], job);
}

/* ---- this node's side: a job sent on ---------------------------------------------- */

static struct waiting **bucket_of(struct part_fwd *f, uint64_t id)
{
    return &f->buckets[id & (WAIT_BUCKETS - 1)];
}

/* Takes the waiting entry of id out of the table (under f->mu). */
static struct waiting *unwait(struct part_fwd *f, uint64_t id)
{
    for (struct waiting **w = bucket_of(f, id); *w != NULL; w = &(*w)->next) {
        if ((*w)->id == id) {
            struct waiting *found = *w;
            *w = found->next;
            return found;
        }
    }
    return NULL;
}

/* Finishes a job of this node as its writer would have. */
static void finish(struct part_engine *e, struct part_job *job, int status)
{
    job->status = status;
    if (job->op == PART_OP_RECEIVE) {
        e->hooks.receive_continue(e, job);
    } else {
        part__complete(job);
    }
}

/* The bytes of m's indexed pairs (part_send_msg.filters). */
static size_t filters_len(const struct part_send_msg *m)
{
    const char *p = m->filters;
    for (uint8_t i = 0; i < 2 * m->nfilters; i++) {
        p += strlen(p) + 1;
    }
    return (size_t)(p - m->filters);
}

static void put_request(struct sl_buf *b, uint64_t id, const struct part_job *job)
{
    put_u(b, KIND_REQUEST, 1);
    put_u(b, id, 8);
    put_u(b, (uint64_t)job->op, 1);
    put_u(b, job->queue_id, 8);
    put_u(b, job->partition, 4);
    switch (job->op) {
    case PART_OP_SEND:
        put_u(b, job->nmsgs, 4);
        for (size_t i = 0; i < job->nmsgs; i++) {
            const struct part_send_msg *m = &job->msgs[i];
            put_bytes(b, m->message_id, strlen(m->message_id));
            put_bytes(b, m->body.p, m->body.n);
            put_bytes(b, m->attrs.p, m->attrs.n);
            put_bytes(b, m->sys_attrs.p, m->sys_attrs.n);
            put_bytes(b, m->digests, m->ndigests);
            put_u(b, m->group_id != NULL, 1);
            if (m->group_id != NULL) {
                put_bytes(b, m->group_id, strlen(m->group_id));
            }
            put_u(b, m->dedup_id != NULL, 1);
            if (m->dedup_id != NULL) {
                put_bytes(b, m->dedup_id, strlen(m->dedup_id));
            }
            put_u(b, (uint32_t)m->delay_s, 4);
            put_u(b, m->has_priority, 1);
            put_u(b, (uint64_t)m->priority, 8);
            put_u(b, m->lane, 1);
            put_u(b, m->nfilters, 1);
            put_bytes(b, m->filters, filters_len(m));
        }
        break;
    case PART_OP_RECEIVE: {
        const struct part_recv *r = job->recv;
        put_u(b, r->max - (uint32_t)r->nmsgs, 4);
        put_u(b, (uint32_t)r->visibility_s, 4);
        put_u(b, r->lanes[r->pass], 1);
        put_u(b, r->fair_window, 4);
        put_bytes(b, r->attempt, r->attempt_len);
        put_u(b, r->replaying, 1);
        /* a priority queue's bound for this visit (recv_submit) */
        put_u(b, (uint64_t)r->bound, 8);
        put_u(b, (uint64_t)r->bound_sent, 8);
        put_u(b, r->nfilter, 1);
        for (size_t i = 0; i < r->nfilter; i++) {
            put_bytes(b, r->filter[i].key, r->filter[i].klen);
            put_bytes(b, r->filter[i].value, r->filter[i].vlen);
        }
        break;
    }
    case PART_OP_DELETE:
    case PART_OP_CHANGE_VIS:
    case PART_OP_RELEASE:
        put_u(b, job->nrh, 4);
        for (size_t i = 0; i < job->nrh; i++) {
            const struct part_rh_entry *en = &job->rh[i];
            put_u(b, en->rh.partition, 4);
            put_u(b, en->rh.queue_id, 8);
            put_u(b, en->rh.sequence, 8);
            put_u(b, en->rh.receive_gen, 4);
            put_u(b, en->visibility_s, 4);
        }
        break;
    case PART_OP_PURGE:
    case PART_OP_BARRIER:
        break;
    case PART_OP_MOVE:
        put_u(b, job->dest_q != NULL ? job->dest_q->id : 0, 8);
        put_u(b, job->move_after, 8);
        put_u(b, job->move_max, 4);
        put_u(b, job->only_row, 8);
        break;
    case PART_OP_REMOVE:
        put_u(b, job->only_row, 8);
        break;
    default: {
        const struct part_catalog_req *c = job->cat;
        put_str(b, c != NULL ? c->tenant : NULL);
        put_str(b, c != NULL ? c->name : NULL);
        struct part_queue_config none = {0};
        put_cfg(b, c != NULL ? &c->cfg : &none);
        put_kvs(b, c != NULL ? c->kvs : NULL, c != NULL ? c->nkv : 0);
        put_kvs(b, c != NULL ? c->tags : NULL, c != NULL ? c->ntags : 0);
        put_u(b, c != NULL ? c->pause : 0, 1);
        break;
    }
    }
}

/* e->hooks.forward: to the leader of the job's group, or failed. */
static void forward(struct part_engine *e, struct part_job *job, bool catalog)
{
    struct part_fwd *f = e->fwd;
    bool known = catalog || job->partition < e->nparts;
    bool movable = job->op == PART_OP_SEND || job->op == PART_OP_RECEIVE ||
                   job->op == PART_OP_DELETE || job->op == PART_OP_CHANGE_VIS ||
                   job->op == PART_OP_RELEASE || job->op == PART_OP_PURGE ||
                   job->op == PART_OP_MOVE || job->op == PART_OP_REMOVE ||
                   job->op == PART_OP_BARRIER || is_catalog(job->op);
    struct part_repl_group *g = !known    ? NULL
                                : catalog ? e->catw.group
                                          : e->writers[job->partition].group;
    uint64_t leader = g != NULL ? part__repl_leader(g) : 0;
    if (!movable || leader == 0 || leader == f->self || leader > UINT16_MAX) {
        /* no leader known, or this node about to lead */
        finish(e, job, SL_EUNAVAIL);
        return;
    }
    /* In the table before it is sent: the answer may come at once. */
    struct waiting *w = sl_xcalloc(1, sizeof *w);
    pthread_mutex_lock(&f->mu);
    uint64_t id = ++f->next_id;
    *w = (struct waiting){id, (uint16_t)leader, job, *bucket_of(f, id)};
    *bucket_of(f, id) = w;
    pthread_mutex_unlock(&f->mu);
    struct sl_buf b;
    sl_buf_init(&b);
    put_request(&b, id, job);
    pthread_rwlock_rdlock(&f->port);
    int rc = f->closed ? SL_ECLOSED : part__peer_send(f->peer, (uint16_t)leader, b.p, b.n);
    pthread_rwlock_unlock(&f->port);
    sl_buf_free(&b);
    if (rc != SL_OK) {
        pthread_mutex_lock(&f->mu);
        struct waiting *mine = unwait(f, id); /* NULL: a link failure took it first */
        pthread_mutex_unlock(&f->mu);
        if (mine != NULL) {
            free(mine);
            finish(e, job, rc == SL_ECLOSED ? SL_ECLOSED : SL_EUNAVAIL);
        }
    }
}

/* A leased message into the receive's next slot: one block for its bytes,
 * as fill_message makes it (freed with the receive). */
static void get_message(struct rd *r, struct part_message *m, uint8_t *pos)
{
    struct sl_slice id = get_bytes(r);
    m->queue_id = get_u(r, 8);
    m->source_queue_id = get_u(r, 8);
    m->partition = (uint32_t)get_u(r, 4);
    struct sl_slice col[4];
    for (size_t c = 0; c < 4; c++) {
        col[c] = get_bytes(r);
    }
    struct sl_slice group = get_u(r, 1) ? get_bytes(r) : (struct sl_slice){NULL, 0};
    struct sl_slice dedup = get_u(r, 1) ? get_bytes(r) : (struct sl_slice){NULL, 0};
    m->priority = (int64_t)get_u(r, 8);
    m->receive_count = (uint32_t)get_u(r, 4);
    m->sent_ms = get_u(r, 8);
    m->first_receive_ms = get_u(r, 8);
    m->sequence = get_u(r, 8);
    *pos = (uint8_t)get_u(r, 1);
    if (r->bad || id.n > PART_MSG_ID_LEN) {
        r->bad = true;
        return;
    }
    memcpy(m->message_id, id.p, id.n);
    m->message_id[id.n] = '\0';
    size_t total = group.n + 1 + dedup.n + 1;
    for (size_t c = 0; c < 4; c++) {
        total += col[c].n + 1;
    }
    char *p = sl_xmalloc(total);
    struct sl_slice *out[] = {&m->body, &m->attrs, &m->sys_attrs, &m->digests};
    for (size_t c = 0; c < 4; c++) {
        if (col[c].n > 0) {
            memcpy(p, col[c].p, col[c].n);
        }
        p[col[c].n] = '\0';
        *out[c] = (struct sl_slice){p, col[c].n};
        p += col[c].n + 1;
    }
    m->group_id = NULL;
    if (group.p != NULL) {
        memcpy(p, group.p, group.n);
        p[group.n] = '\0';
        m->group_id = p;
        p += group.n + 1;
    }
    m->dedup_id = NULL;
    if (dedup.p != NULL) {
        memcpy(p, dedup.p, dedup.n);
        p[dedup.n] = '\0';
        m->dedup_id = p;
    }
}

static struct part_queue_info *get_queue(struct rd *r)
{
    if (get_u(r, 1) == 0) {
        return NULL;
    }
    struct part_queue_info *qi = sl_xcalloc(1, sizeof *qi);
    qi->id = get_u(r, 8);
    qi->tenant = get_str(r);
    qi->name = get_str(r);
    qi->created_ms = get_u(r, 8);
    qi->modified_ms = get_u(r, 8);
    qi->cfg = get_cfg(r);
    qi->attrs = get_kvs(r, &qi->attr_count);
    qi->tags = get_kvs(r, &qi->tag_count);
    if (qi->attrs == NULL) {
        qi->attrs = sl_xcalloc(1, sizeof *qi->attrs);
    }
    if (qi->tags == NULL) {
        qi->tags = sl_xcalloc(1, sizeof *qi->tags);
    }
    if (qi->tenant == NULL) {
        qi->tenant = sl_xstrdup("");
    }
    if (qi->name == NULL) {
        qi->name = sl_xstrdup("");
    }
    return qi;
}

/* What the leader wrote into the job, written into this node's job. False
 * when the answer is malformed. */
static bool get_outcome(struct rd *r, struct part_job *job)
{
    switch (job->op) {
    case PART_OP_SEND: {
        size_t n = (size_t)get_u(r, 4);
        if (r->bad || n > job->nmsgs) {
            return false;
        }
        struct part_sent *sent = job->parent != NULL ? job->parent->res.sent : job->res.sent;
        if (sent == NULL && n > 0) {
            sent = job->res.sent = sl_xcalloc(job->nmsgs, sizeof *job->res.sent);
            job->res.sent_count = job->nmsgs;
        }
        for (size_t i = 0; i < n; i++) {
            struct part_sent *s = &sent[job->msgs[i].index];
            struct sl_slice id = get_bytes(r);
            s->partition = (uint32_t)get_u(r, 4);
            s->sequence = get_u(r, 8);
            s->duplicate = get_u(r, 1) != 0;
            if (r->bad || id.n > PART_MSG_ID_LEN) {
                return false;
            }
            memcpy(s->message_id, id.p, id.n);
            s->message_id[id.n] = '\0';
        }
        return true;
    }
    case PART_OP_RECEIVE: {
        struct part_recv *rv = job->recv;
        size_t n = (size_t)get_u(r, 4);
        if (r->bad || n > rv->max - rv->nmsgs) {
            return false;
        }
        rv->txn_first = rv->nmsgs;
        for (size_t i = 0; i < n && !r->bad; i++) {
            get_message(r, &rv->msgs[rv->nmsgs], &rv->pos[rv->nmsgs]);
            if (!r->bad) {
                rv->nmsgs++;
            }
        }
        return !r->bad;
    }
    case PART_OP_DELETE:
    case PART_OP_CHANGE_VIS:
    case PART_OP_RELEASE: {
        size_t n = (size_t)get_u(r, 4);
        if (r->bad || n > job->nrh) {
            return false;
        }
        int *status = (job->parent != NULL ? job->parent : job)->entry_status;
        for (size_t i = 0; i < n; i++) {
            int st = (int)(int32_t)(uint32_t)get_u(r, 4);
            if (status != NULL) {
                status[job->rh[i].index] = st;
            }
        }
        return !r->bad;
    }
    case PART_OP_PURGE:
        atomic_fetch_add(&(job->parent != NULL ? job->parent : job)->purged, get_u(r, 8));
        return !r->bad;
    case PART_OP_MOVE:
        job->res.moved = get_u(r, 8);
        job->res.move_skipped = get_u(r, 8);
        job->res.move_cursor = get_u(r, 8);
        job->res.move_exhausted = get_u(r, 1) != 0;
        job->res.move_held = get_u(r, 1) != 0;
        return !r->bad;
    case PART_OP_REMOVE:
    case PART_OP_BARRIER:
        return true;
    default:
        job->res.queue = get_queue(r);
        return !r->bad;
    }
}

static void on_answer(struct part_fwd *f, uint64_t id, struct rd *r)
{
    pthread_mutex_lock(&f->mu);
    struct waiting *w = unwait(f, id);
    pthread_mutex_unlock(&f->mu);
    if (w == NULL) {
        return; /* failed already: its link went down */
    }
    struct part_job *job = w->job;
    free(w);
    int status = (int)(int32_t)(uint32_t)get_u(r, 4);
    if (r->bad || !get_outcome(r, job)) {
        sl_log_limited(&fwd_log_limit, SL_LOG_WARN, LOG_MOD,
                       "forwarding: a malformed answer; the job fails");
        status = SL_EIO;
    }
    finish(f->e, job, status);
}

/* Peer port thread. */
static void on_frame(void *arg, uint16_t from, uint64_t link, const uint8_t *bytes, size_t len)
{
    (void)from;
    struct part_fwd *f = arg;
    struct rd r = {bytes, len, false};
    unsigned kind = (unsigned)get_u(&r, 1);
    uint64_t id = get_u(&r, 8);
    if (r.bad) {
        return;
    }
    if (kind == KIND_REQUEST) {
        on_request(f, link, id, &r);
    } else if (kind == KIND_ANSWER) {
        on_answer(f, id, &r);
    }
}

/* Every job waiting for node (0: any) fails with status. */
static void fail_waiting(struct part_fwd *f, uint16_t node, int status)
{
    struct waiting *failed = NULL;
    pthread_mutex_lock(&f->mu);
    for (size_t i = 0; i < WAIT_BUCKETS; i++) {
        for (struct waiting **w = &f->buckets[i]; *w != NULL;) {
            if (node == 0 || (*w)->node == node) {
                struct waiting *x = *w;
                *w = x->next;
                x->next = failed;
                failed = x;
            } else {
                w = &(*w)->next;
            }
        }
    }
    pthread_mutex_unlock(&f->mu);
    while (failed != NULL) {
        struct waiting *x = failed;
        failed = x->next;
        finish(f->e, x->job, status);
        free(x);
    }
}

/* Peer port thread: the link this node's requests to node_id went on is
 * gone, and their answers with it. */
static void on_link_down(void *arg, uint16_t node_id, uint64_t link, bool outgoing)
{
    (void)link;
    if (outgoing) {
        fail_waiting(arg, node_id, SL_EUNAVAIL);
    }
}

void part__fwd_stats(struct part_fwd *f, struct part_cluster_stats *out)
{
    pthread_rwlock_rdlock(&f->port);
    if (!f->closed) {
        struct part__peer_stats st;
        part__peer_node_stats(f->peer, &st);
        memcpy(out->peer_rejected, st.rejected, sizeof out->peer_rejected);
        out->peer_frames_in = st.frames_in;
        out->peer_frames_out = st.frames_out;
    }
    pthread_rwlock_unlock(&f->port);
}

uint64_t part__fwd_up_since(struct part_fwd *f, uint16_t node_id)
{
    pthread_rwlock_rdlock(&f->port);
    uint64_t since = f->closed ? 0 : part__peer_node_up_since(f->peer, node_id);
    pthread_rwlock_unlock(&f->port);
    return since;
}

/* ---- life ------------------------------------------------------------------------- */

int part__fwd_new(struct part_engine *e, const struct part_cluster_options *c,
                  const uint8_t cluster_id[16], char *err, size_t errlen)
{
    const struct part_cluster_node *self = NULL;
    struct part__peer_member *members = sl_xcalloc(c->node_count, sizeof *members);
    for (size_t i = 0; i < c->node_count; i++) {
        members[i] = (struct part__peer_member){c->nodes[i].id, c->nodes[i].peer_host,
                                                c->nodes[i].peer_port};
        if (c->nodes[i].id == c->node_id) {
            self = &c->nodes[i];
        }
    }
    struct part_fwd *f = sl_xcalloc(1, sizeof *f);
    f->e = e;
    f->self = c->node_id;
    pthread_mutex_init(&f->mu, NULL);
    pthread_rwlock_init(&f->port, NULL);
    struct part__peer_node_options o = {.id = c->node_id,
                                        .host = self != NULL ? self->peer_host : NULL,
                                        .port = self != NULL ? self->peer_port : 0,
                                        .members = members,
                                        .member_count = c->node_count,
                                        .secret = c->secret,
                                        .secret_len = c->secret_len,
                                        .on_frame = on_frame,
                                        .on_link_down = on_link_down,
                                        .keep_links_up = true, /* for part__fwd_up_since */
                                        .arg = f};
    memcpy(o.cluster_id, cluster_id, sizeof o.cluster_id);
    int rc =
        self == NULL || self->peer_host == NULL ? SL_EINVAL : part__peer_node_new(&o, &f->peer);
    free(members);
    if (rc != SL_OK) {
        snprintf(err, errlen, "the peer port of node %u (%s:%u): %s", c->node_id,
                 self != NULL && self->peer_host != NULL ? self->peer_host : "?",
                 self != NULL ? self->peer_port : 0, sl_strerror(rc));
        pthread_rwlock_destroy(&f->port);
        pthread_mutex_destroy(&f->mu);
        free(f);
        return rc;
    }
    e->fwd = f;
    e->hooks.forward = forward;
    e->hooks.answer = answer;
    return SL_OK;
}

void part__fwd_stop(struct part_fwd *f)
{
    if (f == NULL) {
        return;
    }
    pthread_rwlock_wrlock(&f->port); /* waits out the sends under way */
    bool was = f->closed;
    f->closed = true;
    pthread_rwlock_unlock(&f->port);
    if (!was) {
        part__peer_node_close(f->peer, NULL, NULL); /* joins its thread */
        f->peer = NULL;
    }
    fail_waiting(f, 0, SL_ECLOSED);
}

void part__fwd_free(struct part_fwd *f)
{
    if (f == NULL) {
        return;
    }
    part__fwd_stop(f);
    pthread_rwlock_destroy(&f->port);
    pthread_mutex_destroy(&f->mu);
    free(f);
}
