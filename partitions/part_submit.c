/*
 * part_submit.c -- the public submission calls (part_send, part_receive,
 * part_delete, ..., part_queue_create, ...): each checks its arguments,
 * copies every input into a job (the caller's buffers are free again on
 * return) and hands it to a writer, fanned out per partition where it
 * spans several.
 *
 * Stack: the top of the client side, beside the engine; calls
 * part_poll.c (a receive's plan and wait), part_client.c (jobs, routing,
 * completion), part_catalog.c (queue references) and part_receipt.c
 * (part_receipt_decode). Loop thread of the client only.
 */
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include "part_catalog.h"
#include "part_catalog_db.h"
#include "part_client.h"
#include "part_disk.h"
#include "part_filter.h"
#include "part_gdir.h"
#include "part_poll.h"
#include "part_repl.h"

/* ---- submission -------------------------------------------------------- */

static int open_queue(struct part_client *c, uint64_t queue_id, struct part_queue **q)
{
    if (atomic_load(&c->engine->closing)) {
        return SL_ECLOSED;
    }
    *q = part__queue_ref(c->engine, queue_id);
    return *q != NULL ? SL_OK : SL_ENOTFOUND;
}

/* A job on queue_id holding a reference to the queue, or the reason there
 * is none (open_queue's). */
static int queue_job_new(struct part_client *c, enum part_op op, uint64_t queue_id,
                         struct part_cookie cookie, part_done_fn *done, struct part_job **out)
{
    struct part_queue *q = NULL;
    int rc = open_queue(c, queue_id, &q);
    if (rc != SL_OK) {
        return rc;
    }
    *out = part__job_new(c, op, queue_id, cookie, done);
    (*out)->q = q;
    return SL_OK;
}

/* Copies s to *p (advanced past it); the copy. */
static struct sl_slice copy_into(char **p, struct sl_slice s)
{
    struct sl_slice out = {*p, s.n};
    if (s.n > 0) {
        memcpy(*p, s.p, s.n);
    }
    *p += s.n;
    return out;
}

/* A FIFO send: each message goes where its group's live messages are
 * (home: where a group without any starts), decided under the queue's
 * directory lock so that two loops racing cannot place one group twice.
 * Messages that land on several partitions fan out into one sub-job per
 * partition, each in request order; a share that fails fails its entries
 * (res.entry_status), not the others. Every job holds a directory count
 * per message until it completes (part__complete gives back those not
 * stored). */
static void send_fifo(struct part_engine *e, struct part_job *job, uint32_t home)
{
    size_t n = job->nmsgs;
    const char *groups[PART_MAX_BATCH];
    uint32_t homes[PART_MAX_BATCH];
    uint32_t parts[PART_MAX_BATCH];
    bool one = true;
    for (size_t i = 0; i < n; i++) {
        groups[i] = job->msgs[i].group_id;
        homes[i] = home;
    }
    part__gdir_place(job->q->gdir, groups, homes, n, parts);
    for (size_t i = 1; i < n; i++) {
        one = one && parts[i] == parts[0];
    }
    if (one) {
        job->gdir_held = true;
        part__submit_partition(e, parts[0], job);
        return;
    }
    job->res.sent = sl_xcalloc(n, sizeof *job->res.sent);
    job->res.sent_count = n;
    job->entry_status = sl_xcalloc(n, sizeof *job->entry_status);
    job->status = SL_OK;
    struct part_job *subs[PART_MAX_BATCH];
    size_t nsubs = 0;
    for (size_t i = 0; i < n; i++) {
        struct part_job *sub = NULL;
        for (size_t s = 0; s < nsubs && sub == NULL; s++) {
            sub = subs[s]->partition == parts[i] ? subs[s] : NULL;
        }
        if (sub == NULL) {
            sub = sl_xcalloc(1, sizeof *sub);
            sub->op = PART_OP_SEND;
            sub->engine = e;
            sub->parent = job;
            sub->queue_id = job->queue_id;
            sub->q = job->q;
            atomic_fetch_add(&job->q->refs, 1);
            sub->partition = parts[i];
            /* the messages' bytes stay in the parent's block */
            sub->msgs = sl_xcalloc(n, sizeof *sub->msgs);
            sub->gdir_held = true;
            subs[nsubs++] = sub;
        }
        sub->msgs[sub->nmsgs++] = job->msgs[i];
    }
    atomic_store(&job->pending, (int)nsubs);
    for (size_t s = 0; s < nsubs; s++) {
        part__submit_partition(e, subs[s]->partition, subs[s]);
    }
}

/* A cluster's images live in memory (dqlite's VFS): past the node's
 * budget, sends are refused, as a full disk refuses them on one node,
 * while receives and deletes go on and give it back. Every node holds
 * every group, so this node's images stand for the leaders' too. */
static bool budget_spent(struct part_engine *e)
{
    if (e->repl == NULL || part__repl_node_image_bytes(e->repl) < e->memory_budget) {
        return false;
    }
    atomic_fetch_add_explicit(&e->budget_refusals, 1, memory_order_relaxed);
    return true;
}

/* A send entry's indexed pairs: at most PART_FILTER_KEYS_MAX, distinct
 * keys, each key and value 1..PART_FILTER_TEXT_MAX bytes without a NUL
 * (they are stored NUL-terminated). */
static bool filters_valid(const struct part_send_entry *m)
{
    if (m->filter_count > PART_FILTER_KEYS_MAX) {
        return false;
    }
    for (size_t i = 0; i < m->filter_count; i++) {
        struct sl_slice k = m->filters[i].key, v = m->filters[i].value;
        if (k.n == 0 || k.n > PART_FILTER_TEXT_MAX || v.n == 0 || v.n > PART_FILTER_TEXT_MAX ||
            memchr(k.p, '\0', k.n) != NULL || memchr(v.p, '\0', v.n) != NULL) {
            return false;
        }
        for (size_t j = 0; j < i; j++) {
            if (sl_slice_eq(k, m->filters[j].key)) {
                return false;
            }
        }
    }
    return true;
}

int part_send(struct part_client *c, uint64_t queue_id, uint32_t partition,
              const struct part_send_entry *entries, size_t n, struct part_cookie cookie,
              part_done_fn *done)
{
    if (n == 0 || n > PART_MAX_BATCH || partition >= c->engine->nparts || done == NULL) {
        return SL_EINVAL;
    }
    for (size_t i = 0; i < n; i++) {
        if (entries[i].group_id.n > PART_GROUP_ID_MAX || entries[i].digests.n > PART_DIGESTS_MAX ||
            entries[i].dedup_id.n > PART_DEDUP_ID_MAX || !filters_valid(&entries[i])) {
            return SL_EINVAL;
        }
    }
    if (part__disk_low(c->engine)) {
        return SL_EBUSY; /* the last free blocks are for deletes and checkpoints */
    }
    if (budget_spent(c->engine)) {
        return SL_EBUDGET;
    }
    struct part_job *job = NULL;
    int rc = queue_job_new(c, PART_OP_SEND, queue_id, cookie, done, &job);
    if (rc != SL_OK) {
        return rc;
    }
    struct part_queue_config cfg;
    bool known = part__queue_cfg(c->engine, job->q, &cfg);
    bool fifo = known && cfg.fifo;
    /* a standard queue's idempotent sends keep their ids (optional there) */
    bool keep_ids = fifo || (known && cfg.idempotency_window_s > 0);
    bool exclusive = known && cfg.exclusive;
    for (size_t i = 0; exclusive && i < n; i++) {
        if (entries[i].group_id.n == 0) {
            part__job_discard(job);
            return SL_EINVAL; /* an exclusive queue's message without its value */
        }
    }
    for (size_t i = 0; fifo && i < n; i++) {
        if (entries[i].group_id.n == 0 || entries[i].dedup_id.n == 0 ||
            entries[i].filter_count > 0) {
            part__job_discard(job);
            return SL_EINVAL; /* a FIFO message without its group or id, or filtered */
        }
    }
    /* One allocation for the array and every message's bytes. */
    size_t bytes = 0;
    for (size_t i = 0; i < n; i++) {
        bytes += entries[i].body.n + entries[i].attrs.n + entries[i].sys_attrs.n +
                 entries[i].group_id.n + 1 + (keep_ids ? entries[i].dedup_id.n + 1 : 0);
        for (size_t k = 0; k < entries[i].filter_count; k++) {
            bytes += entries[i].filters[k].key.n + entries[i].filters[k].value.n + 2;
        }
    }
    job->msgs = sl_xmalloc(n * sizeof *job->msgs + bytes);
    job->nmsgs = n;
    uint8_t rnd[PART_MAX_BATCH][16];
    sl_random_bytes(rnd, n * sizeof rnd[0]);
    char *p = (char *)(job->msgs + n);
    for (size_t i = 0; i < n; i++) {
        struct part_send_msg *m = &job->msgs[i];
        *m = (struct part_send_msg){0};
        sl_uuid4_from(rnd[i], m->message_id);
        m->body = copy_into(&p, entries[i].body);
        m->attrs = copy_into(&p, entries[i].attrs);
        m->sys_attrs = copy_into(&p, entries[i].sys_attrs);
        if (entries[i].digests.n > 0) {
            memcpy(m->digests, entries[i].digests.p, entries[i].digests.n);
            m->ndigests = (uint8_t)entries[i].digests.n;
        }
        if (entries[i].group_id.n > 0) {
            m->group_id = copy_into(&p, entries[i].group_id).p;
            *p++ = '\0';
        }
        if (fifo || (keep_ids && entries[i].dedup_id.n > 0)) {
            m->dedup_id = copy_into(&p, entries[i].dedup_id).p;
            *p++ = '\0';
        }
        m->lane = entries[i].lane == PART_LANE_OVERFLOW ? PART_LANE_OVERFLOW : PART_LANE_MAIN;
        m->delay_s = entries[i].delay_s;
        m->has_priority = entries[i].has_priority;
        m->priority = entries[i].priority;
        m->index = (uint8_t)i;
        m->filters = entries[i].filter_count > 0 ? p : NULL;
        m->nfilters = (uint8_t)entries[i].filter_count;
        for (size_t k = 0; k < entries[i].filter_count; k++) {
            copy_into(&p, entries[i].filters[k].key);
            *p++ = '\0';
            copy_into(&p, entries[i].filters[k].value);
            *p++ = '\0';
        }
    }
    /* FIFO and exclusive queues: a group (value) with live messages goes
     * where they are (the group directory) */
    if ((job->q->fifo && fifo) || (job->q->gdir != NULL && exclusive)) {
        send_fifo(c->engine, job, partition);
    } else {
        part__submit_partition(c->engine, partition, job);
    }
    return SL_OK;
}

int part_receive(struct part_client *c, const struct part_receive_req *req,
                 struct part_cookie cookie, part_done_fn *done, uint64_t *ticket)
{
    struct part_engine *e = c->engine;
    if (req == NULL || done == NULL || req->max_messages == 0 ||
        req->max_messages > PART_MAX_BATCH || req->partition_count == 0 ||
        req->partition_count > e->nparts) {
        return SL_EINVAL;
    }
    for (size_t i = 0; i < req->partition_count; i++) {
        if (req->partitions[i] >= e->nparts) {
            return SL_EINVAL;
        }
    }
    if (req->attempt.n > PART_ATTEMPT_MAX) {
        return SL_EINVAL;
    }
    for (size_t i = 0; i < req->attempt.n; i++) {
        /* the bytes that keep one id's rows a range of msg_attempt */
        if ((unsigned char)req->attempt.p[i] < 0x21 || (unsigned char)req->attempt.p[i] > 0x7e) {
            return SL_EINVAL;
        }
    }
    struct part_job *job = NULL;
    int rc = queue_job_new(c, PART_OP_RECEIVE, req->queue_id, cookie, done, &job);
    if (rc != SL_OK) {
        return rc;
    }
    struct part_queue_config cfg;
    bool known = part__queue_cfg(e, job->q, &cfg);
    bool fifo = req->attempt.n > 0 && known && cfg.fifo;
    struct part_recv *r = sl_xcalloc(1, sizeof *r);
    /* only a queue that filters keeps its entries' states (part_ops.c) */
    if (req->filter_count > 0 && (!known || !cfg.filtered || cfg.fifo ||
                                  part__filter_copy(r, req->filter, req->filter_count) != SL_OK)) {
        free(r);
        part__job_discard(job);
        return SL_EINVAL;
    }
    /* not on an exclusive queue: held values would leave a bounded
     * visit empty-handed while its partition's head stays the best; not
     * filtered: the heads it compares are of every message */
    r->strict = known && cfg.priority_order && !cfg.exclusive && r->nfilter == 0;
    r->bound = INT64_MAX;
    r->bound_sent = INT64_MAX;
    job->recv = r;
    r->ticket = ++c->next_ticket;
    r->parts = sl_xcalloc(req->partition_count, sizeof *r->parts);
    memcpy(r->parts, req->partitions, req->partition_count * sizeof *r->parts);
    r->nparts = req->partition_count;
    r->order = sl_xcalloc(req->partition_count + 1, sizeof *r->order);
    r->max = req->max_messages;
    r->visibility_s = req->visibility_s;
    r->noisy = req->noisy;
    r->fair_window = req->fair_window ? req->fair_window : PART_FAIR_WINDOW;
    r->lanes[0] = PART_LANE_MAIN;
    r->lanes[1] = PART_LANE_OVERFLOW;
    uint64_t turn = atomic_fetch_add_explicit(&job->q->recv_seq, 1, memory_order_relaxed) + 1;
    if (req->overflow_every > 0 && turn % req->overflow_every == 0) {
        r->lanes[0] = PART_LANE_OVERFLOW; /* the starvation guard's turn */
        r->lanes[1] = PART_LANE_MAIN;
    }
    if (fifo) { /* standard queues ignore attempt ids, as SQS does */
        memcpy(r->attempt, req->attempt.p, req->attempt.n);
        r->attempt_len = req->attempt.n;
        r->replaying = true;
        r->replay_only = req->replay_only;
    }
    atomic_init(&r->flags, 0);
    if (req->wait_ms > 0 && !c->draining && !atomic_load(&e->draining)) {
        r->deadline_ns = sl_mono_ns() + (uint64_t)req->wait_ms * 1000000ull;
        uv_timer_init(c->loop, &r->timer);
        r->timer.data = job;
        r->timer_init = true;
        uv_timer_start(&r->timer, part__recv_timeout, req->wait_ms, 0);
    }
    r->cnext = c->recv_head;
    if (c->recv_head) {
        c->recv_head->recv->cprev = job;
    }
    c->recv_head = job;
    if (ticket != NULL) {
        *ticket = r->ticket;
    }
    part__recv_dispatch(e, job, UINT32_MAX);
    return SL_OK;
}

/* Delete, change visibility: the handles decoded (valid[i] false for a
 * bad one, answered SL_EINVAL), fanned out per partition. */
static int submit_by_receipt(struct part_client *c, enum part_op op, uint64_t queue_id,
                             const struct part_receipt *rh, const bool *valid, const uint32_t *vis,
                             size_t n, struct part_cookie cookie, part_done_fn *done)
{
    struct part_engine *e = c->engine;
    if (n == 0 || n > PART_MAX_BATCH || done == NULL) {
        return SL_EINVAL;
    }
    struct part_job *job = NULL;
    int rc = queue_job_new(c, op, queue_id, cookie, done, &job);
    if (rc != SL_OK) {
        return rc;
    }
    job->entry_status = sl_xcalloc(n, sizeof *job->entry_status);
    job->nrh = n;
    for (size_t i = 0; i < n; i++) {
        job->entry_status[i] = valid[i] ? SL_OK : SL_EINVAL;
    }
    struct part_job *subs[PART_MAX_BATCH];
    size_t nsubs = 0;
    for (size_t i = 0; i < n; i++) {
        if (!valid[i]) {
            continue;
        }
        struct part_job *sub = NULL;
        for (size_t s = 0; s < nsubs; s++) {
            if (subs[s]->partition == rh[i].partition) {
                sub = subs[s];
            }
        }
        if (sub == NULL) {
            sub = sl_xcalloc(1, sizeof *sub);
            sub->op = op;
            sub->engine = e;
            sub->parent = job;
            sub->queue_id = queue_id;
            sub->q = job->q;
            atomic_fetch_add(&job->q->refs, 1);
            sub->partition = rh[i].partition;
            sub->rh = sl_xcalloc(n, sizeof *sub->rh);
            subs[nsubs++] = sub;
        }
        sub->rh[sub->nrh++] = (struct part_rh_entry){i, rh[i], vis ? vis[i] : 0};
    }
    job->status = SL_OK;
    if (nsubs == 0) {
        part__complete(job);
        return SL_OK;
    }
    atomic_store(&job->pending, (int)nsubs);
    for (size_t s = 0; s < nsubs; s++) {
        part__submit_partition(e, subs[s]->partition, subs[s]);
    }
    return SL_OK;
}

/* Decodes handles (NUL-terminated) and submits them. */
static int submit_handles(struct part_client *c, enum part_op op, uint64_t queue_id,
                          const char *const *handles, const uint32_t *vis, size_t n,
                          struct part_cookie cookie, part_done_fn *done)
{
    if (n == 0 || n > PART_MAX_BATCH) {
        return SL_EINVAL;
    }
    struct part_receipt rh[PART_MAX_BATCH];
    bool valid[PART_MAX_BATCH];
    for (size_t i = 0; i < n; i++) {
        valid[i] =
            handles[i] != NULL &&
            part_receipt_decode(c->engine, handles[i], strlen(handles[i]), &rh[i]) == SL_OK &&
            rh[i].queue_id == queue_id;
    }
    return submit_by_receipt(c, op, queue_id, rh, valid, vis, n, cookie, done);
}

/* Receipts decoded by the caller: only the queue and the partition range
 * are checked again (part_receipt_decode checked the MAC). */
static int submit_decoded(struct part_client *c, enum part_op op, uint64_t queue_id,
                          const struct part_receipt *rh, const uint32_t *vis, size_t n,
                          struct part_cookie cookie, part_done_fn *done)
{
    if (n == 0 || n > PART_MAX_BATCH || rh == NULL) {
        return SL_EINVAL;
    }
    bool valid[PART_MAX_BATCH];
    for (size_t i = 0; i < n; i++) {
        valid[i] = rh[i].queue_id == queue_id && rh[i].partition < c->engine->nparts;
    }
    return submit_by_receipt(c, op, queue_id, rh, valid, vis, n, cookie, done);
}

int part_delete(struct part_client *c, uint64_t queue_id, const char *const *handles, size_t n,
                struct part_cookie cookie, part_done_fn *done)
{
    return submit_handles(c, PART_OP_DELETE, queue_id, handles, NULL, n, cookie, done);
}

int part_change_visibility(struct part_client *c, uint64_t queue_id,
                           const struct part_visibility_entry *entries, size_t n,
                           struct part_cookie cookie, part_done_fn *done)
{
    if (n == 0 || n > PART_MAX_BATCH) {
        return SL_EINVAL;
    }
    const char *handles[PART_MAX_BATCH];
    uint32_t vis[PART_MAX_BATCH];
    for (size_t i = 0; i < n; i++) {
        handles[i] = entries[i].receipt;
        vis[i] = entries[i].visibility_s;
    }
    return submit_handles(c, PART_OP_CHANGE_VIS, queue_id, handles, vis, n, cookie, done);
}

int part_delete_decoded(struct part_client *c, uint64_t queue_id,
                        const struct part_receipt *receipts, size_t n, struct part_cookie cookie,
                        part_done_fn *done)
{
    return submit_decoded(c, PART_OP_DELETE, queue_id, receipts, NULL, n, cookie, done);
}

int part_change_visibility_decoded(struct part_client *c, uint64_t queue_id,
                                   const struct part_receipt *receipts,
                                   const uint32_t *visibility_s, size_t n,
                                   struct part_cookie cookie, part_done_fn *done)
{
    if (visibility_s == NULL) {
        return SL_EINVAL;
    }
    return submit_decoded(c, PART_OP_CHANGE_VIS, queue_id, receipts, visibility_s, n, cookie, done);
}

int part_purge(struct part_client *c, uint64_t queue_id, struct part_cookie cookie,
               part_done_fn *done)
{
    if (done == NULL) {
        return SL_EINVAL;
    }
    struct part_job *job = NULL;
    int rc = queue_job_new(c, PART_OP_PURGE, queue_id, cookie, done, &job);
    if (rc != SL_OK) {
        return rc;
    }
    part__purge_fan_out(c->engine, job, job->q);
    return SL_OK;
}

int part_move(struct part_client *c, const struct part_move_req *req, struct part_cookie cookie,
              part_done_fn *done)
{
    struct part_engine *e = c->engine;
    if (req == NULL || done == NULL || req->partition >= e->nparts ||
        (req->only_sequence == 0 &&
         (req->max_messages == 0 || req->max_messages > PART_MAX_MOVE)) ||
        req->dest_queue_id == req->queue_id || req->only_sequence > INT64_MAX) {
        return SL_EINVAL;
    }
    struct part_queue *q = NULL;
    int rc = open_queue(c, req->queue_id, &q);
    if (rc != SL_OK) {
        return rc;
    }
    struct part_queue *dest = NULL;
    if (req->dest_queue_id != 0) {
        /* Moving in place needs the destination on the same partitions,
         * which only a queue of the same tenant guarantees. */
        dest = part__queue_ref(e, req->dest_queue_id);
        if (dest == NULL || strcmp(dest->tenant_name, q->tenant_name) != 0) {
            part__queue_unref(dest);
            part__queue_unref(q);
            return SL_ENOTFOUND;
        }
    }
    struct part_job *job = part__job_new(c, PART_OP_MOVE, req->queue_id, cookie, done);
    job->q = q;
    job->dest_q = dest;
    job->move_after = req->only_sequence != 0 ? req->only_sequence - 1 : req->after_sequence;
    job->move_max = req->only_sequence != 0 ? 1 : req->max_messages;
    job->only_row = req->only_sequence;
    job->move_held = req->held;
    job->move_held_arg = req->held_arg;
    part__submit_partition(e, req->partition, job);
    return SL_OK;
}

int part_remove(struct part_client *c, uint64_t queue_id, uint32_t partition, uint64_t sequence,
                struct part_cookie cookie, part_done_fn *done)
{
    if (done == NULL || partition >= c->engine->nparts || sequence == 0 || sequence > INT64_MAX) {
        return SL_EINVAL;
    }
    struct part_job *job = NULL;
    int rc = queue_job_new(c, PART_OP_REMOVE, queue_id, cookie, done, &job);
    if (rc != SL_OK) {
        return rc;
    }
    job->only_row = sequence;
    part__submit_partition(c->engine, partition, job);
    return SL_OK;
}

int part_barrier(struct part_client *c, uint32_t partition, struct part_cookie cookie,
                 part_done_fn *done)
{
    if (partition >= c->engine->nparts || done == NULL) {
        return SL_EINVAL;
    }
    if (atomic_load(&c->engine->closing)) {
        return SL_ECLOSED;
    }
    struct part_job *job = part__job_new(c, PART_OP_BARRIER, 0, cookie, done);
    part__submit_partition(c->engine, partition, job);
    return SL_OK;
}

/* ---- catalog submission ------------------------------------------------ */

static struct part_kv *kvs_copy(const struct part_kv *kv, size_t n, bool values)
{
    struct part_kv *out = sl_xcalloc(n ? n : 1, sizeof *out);
    for (size_t i = 0; i < n; i++) {
        out[i].key = sl_xstrdup(kv[i].key);
        out[i].value = values && kv[i].value ? sl_xstrdup(kv[i].value) : NULL;
    }
    return out;
}

static bool kvs_valid(const struct part_kv *kv, size_t n, bool need_values)
{
    if (n > 0 && kv == NULL) {
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        if (kv[i].key == NULL || (need_values && kv[i].value == NULL)) {
            return false;
        }
    }
    return true;
}

static int submit_catalog(struct part_client *c, struct part_job *job)
{
    if (atomic_load(&c->engine->closing)) {
        part__job_discard(job);
        return SL_ECLOSED;
    }
    part__writer_submit(&c->engine->catw, job);
    return SL_OK;
}

int part_queue_create(struct part_client *c, const char *tenant, const char *name,
                      const struct part_queue_config *cfg, const struct part_kv *attrs,
                      size_t attr_count, const struct part_kv *tags, size_t tag_count,
                      struct part_cookie cookie, part_done_fn *done)
{
    if (tenant == NULL || name == NULL || *tenant == '\0' || *name == '\0' || done == NULL ||
        !kvs_valid(attrs, attr_count, true) || !kvs_valid(tags, tag_count, true)) {
        return SL_EINVAL;
    }
    struct part_job *job = part__job_new(c, PART_OP_Q_CREATE, 0, cookie, done);
    struct part_catalog_req *r = sl_xcalloc(1, sizeof *r);
    job->cat = r;
    r->tenant = sl_xstrdup(tenant);
    r->name = sl_xstrdup(name);
    r->cfg = cfg ? *cfg : part_queue_config_default();
    r->kvs = kvs_copy(attrs, attr_count, true);
    r->nkv = attr_count;
    r->tags = kvs_copy(tags, tag_count, true);
    r->ntags = tag_count;
    return submit_catalog(c, job);
}

static int submit_queue_change_job(struct part_client *c, enum part_op op, uint64_t queue_id,
                                   const struct part_queue_config *cfg, const struct part_kv *kv,
                                   size_t n, bool values, struct part_cookie cookie,
                                   part_done_fn *done, unsigned pause)
{
    if (done == NULL || !kvs_valid(kv, n, false)) {
        return SL_EINVAL;
    }
    if (!part__queue_known(c->engine, queue_id)) {
        return SL_ENOTFOUND;
    }
    struct part_job *job = part__job_new(c, op, queue_id, cookie, done);
    struct part_catalog_req *r = sl_xcalloc(1, sizeof *r);
    job->cat = r;
    if (cfg) {
        r->cfg = *cfg;
    }
    r->kvs = kvs_copy(kv, n, values);
    r->nkv = n;
    r->tags = sl_xcalloc(1, sizeof *r->tags);
    r->pause = pause;
    return submit_catalog(c, job);
}

static int submit_queue_change(struct part_client *c, enum part_op op, uint64_t queue_id,
                               const struct part_queue_config *cfg, const struct part_kv *kv,
                               size_t n, bool values, struct part_cookie cookie, part_done_fn *done)
{
    return submit_queue_change_job(c, op, queue_id, cfg, kv, n, values, cookie, done, 0);
}

int part_queue_set_attributes(struct part_client *c, uint64_t queue_id,
                              const struct part_queue_config *cfg, const struct part_kv *attrs,
                              size_t attr_count, struct part_cookie cookie, part_done_fn *done)
{
    if (cfg == NULL) {
        return SL_EINVAL;
    }
    return submit_queue_change(c, PART_OP_Q_SET_ATTRS, queue_id, cfg, attrs, attr_count, true,
                               cookie, done);
}

int part_queue_tag(struct part_client *c, uint64_t queue_id, const struct part_kv *tags, size_t n,
                   struct part_cookie cookie, part_done_fn *done)
{
    if (!kvs_valid(tags, n, true)) {
        return SL_EINVAL;
    }
    return submit_queue_change(c, PART_OP_Q_TAG, queue_id, NULL, tags, n, true, cookie, done);
}

int part_queue_untag(struct part_client *c, uint64_t queue_id, const char *const *keys, size_t n,
                     struct part_cookie cookie, part_done_fn *done)
{
    if (n > 0 && keys == NULL) {
        return SL_EINVAL;
    }
    struct part_kv kv[64];
    if (n > SL_ARRAY_LEN(kv)) {
        return SL_EINVAL;
    }
    for (size_t i = 0; i < n; i++) {
        kv[i] = (struct part_kv){keys[i], NULL};
    }
    return submit_queue_change(c, PART_OP_Q_UNTAG, queue_id, NULL, kv, n, false, cookie, done);
}

int part_queue_set_pause(struct part_client *c, uint64_t queue_id, unsigned flags,
                         struct part_cookie cookie, part_done_fn *done)
{
    if (c->engine->repl == NULL || (flags & ~(PART_PAUSE_ENQUEUE | PART_PAUSE_DEQUEUE)) != 0) {
        return SL_EINVAL;
    }
    int rc = submit_queue_change_job(c, PART_OP_Q_PAUSE, queue_id, NULL, NULL, 0, false, cookie,
                                     done, flags);
    return rc;
}

int part_queue_delete(struct part_client *c, uint64_t queue_id, struct part_cookie cookie,
                      part_done_fn *done)
{
    return submit_queue_change(c, PART_OP_Q_DELETE, queue_id, NULL, NULL, 0, false, cookie, done);
}
