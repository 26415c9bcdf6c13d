/*
 * gw_act_msg.c -- the SQS message actions: SendMessage(Batch),
 * ReceiveMessage, DeleteMessage(Batch), ChangeMessageVisibility(Batch).
 *
 * Each handler resolves the queue, asks policy (admission; placement for
 * sends), submits one partition job, and answers from its completion. A
 * send is acknowledged only by that completion, which runs after the
 * commit, so nothing acknowledged can be lost.
 *
 * Batch requests keep a small per-request record (struct msg_batch) that
 * maps the entries the job carries back to the request's entries, so the
 * reply lists every entry as Successful or Failed in the client's terms.
 *
 * Threading: loop threads.
 */
#include "gw_act.h"

#include "gw_act_beyond.h"
#include "gw_act_fifo.h"

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define QUEUE_INFLIGHT_LIMIT 120000 /* SQS: in-flight messages per queue */

struct msg_batch {
    struct gw_act_ctx *ctx;
    size_t count;                                  /* entries in the request */
    size_t job_count;                              /* entries handed to the job */
    uint32_t job_entry[PART_MAX_BATCH];            /* job entry -> request entry */
    const struct gw_sqs_err *fail[PART_MAX_BATCH]; /* request entry -> failure, or NULL */
    /* receive only */
    uint64_t ticket;
    struct pol_tenant_state *long_poll; /* a long-poll slot to release, or NULL */
    uint64_t queue_id;
    bool spilled; /* send: accepted into the overflow lane */
    bool fifo;    /* send: to a FIFO queue (answers carry SequenceNumber) */
    /* send fanned out over several partitions (FIFO groups): the sub-jobs
     * still running, and what each job entry got */
    uint32_t pending;
    struct part_sent sent[PART_MAX_BATCH];
    /* Written before they are read, so batch_new leaves them as they are
     * (zeroing them cost more than the rest of a send's bookkeeping). */
    struct gw_sqs_err errs[PART_MAX_BATCH]; /* storage for failures found here */
    /* send only: each job entry's MD5s, stored with it and answered */
    struct gw_sqs_digests digests[PART_MAX_BATCH];
};

static struct msg_batch *batch_new(struct gw_act_ctx *ctx, size_t count)
{
    struct msg_batch *b = sl_xmalloc(sizeof *b);
    memset(b, 0, offsetof(struct msg_batch, errs));
    b->ctx = ctx;
    b->count = count;
    return b;
}

static struct part_cookie cookie_of(struct msg_batch *b)
{
    return (struct part_cookie){.ptr = b};
}

/* ---- SendMessage, SendMessageBatch ---------------------------------------- */

/* The partition a tenant's send goes to: of its shard, the least loaded
 * counting every tenant's messages and queued jobs there, so that a
 * neighbour's backlog steers this send to the tenant's other partitions
 * (docs/policy.md, "Send"). A queue's messages stay receivable wherever
 * they land: receives read the whole shard. */
static uint32_t send_partition(struct gw_act_ctx *ctx, const struct gw_queue *q)
{
    const uint32_t *shard;
    uint32_t k = gw__act_shard(ctx, q->tenant, &shard);
    uint64_t load[GW_MAX_SHARD];
    for (uint32_t i = 0; i < k; i++) {
        load[i] = (uint64_t)part_engine_partition_load(ctx->api->engine, shard[i]);
    }
    return pol_pick_send_partition(shard, k, load);
}

/* SQS takes the X-Amzn-Trace-Id request header as the AWSTraceHeader of
 * messages that do not carry one themselves (research 4.31). */
static struct sl_slice trace_id_header(const struct gw_request *http)
{
    for (size_t i = 0; i < http->header_count; i++) {
        if (sl_slice_eq_cstr(http->headers[i].name, "x-amzn-trace-id")) {
            return http->headers[i].value;
        }
    }
    return (struct sl_slice){NULL, 0};
}

static void encode_sys_attrs(const struct gw_act_ctx *ctx, const struct gw_sqs_send_entry *m,
                             struct sl_buf *out)
{
    /* Sorted by name, in the stored-attribute layout. */
    struct gw_sqs_msg_attr sys[2];
    size_t n = 0;
    struct sl_slice trace = m->has_trace_header ? m->trace_header : trace_id_header(ctx->http);
    if (trace.n > 0) {
        sys[n++] = (struct gw_sqs_msg_attr){SL_SLICE_LIT("AWSTraceHeader"), SL_SLICE_LIT("String"),
                                            GW_SQS_ATTR_STRING, trace};
    }
    const char *sender =
        ctx->principal.kind == CFG_PRINCIPAL_ADMIN ? "admin" : ctx->principal.tenant->name;
    sys[n++] = (struct gw_sqs_msg_attr){SL_SLICE_LIT("SenderId"), SL_SLICE_LIT("String"),
                                        GW_SQS_ATTR_STRING, sl_slice_cstr(sender)};
    gw__attrs_encode(sys, n, out);
}

/* Job entry j of a send failed with status (SL_EIO if that says SL_OK):
 * its request entry answers the error, the others are unaffected. */
static void fail_job_entry(struct msg_batch *b, size_t j, int status)
{
    uint32_t i = b->job_entry[j];
    gw__act_storage_err(status != SL_OK ? status : SL_EIO, &b->errs[i]);
    b->fail[i] = &b->errs[i];
}

static void send_done(struct part_cookie cookie, int status, const struct part_result *res)
{
    struct msg_batch *b = cookie.ptr;
    struct gw_act_ctx *ctx = b->ctx;
    if (status != SL_OK) {
        free(b);
        gw__act_fail_storage(ctx, status);
        return;
    }
    /* A FIFO send the engine fanned out over partitions (its groups live
     * on several): a share that failed fails its entries alone. */
    for (size_t j = 0; res->entry_status != NULL && j < b->job_count && j < res->entry_count; j++) {
        if (res->entry_status[j] != SL_OK) {
            fail_job_entry(b, j, res->entry_status[j]);
        }
    }
    if (ctx->action == GW_SQS_ACT_SEND_MESSAGE && b->fail[0] != NULL) {
        int rc = res->entry_status != NULL ? res->entry_status[0] : SL_EIO;
        free(b);
        gw__act_fail_storage(ctx, rc);
        return;
    }
    if (b->spilled) {
        gw_metrics_count_spill(ctx->api->metrics, ctx->principal.tenant->name, b->job_count);
    }
    uint64_t duplicates = 0;
    for (size_t j = 0; j < res->sent_count; j++) {
        duplicates += res->sent[j].duplicate;
    }
    if (duplicates > 0) {
        gw_metrics_count_deduplicated(ctx->api->metrics, ctx->queue_id, duplicates);
    }
    char seq[PART_MAX_BATCH][GW_FIFO_SEQ_LEN + 1];
    if (ctx->action == GW_SQS_ACT_SEND_MESSAGE) {
        /* a single message that failed validation was answered before */
        SL_ASSERT(res->sent != NULL && res->sent_count == 1);
        struct gw_sqs_send_result r = {0};
        snprintf(r.message_id, sizeof r.message_id, "%s", res->sent[0].message_id);
        gw_sqs_send_result_fill(&ctx->req.u.send_message.msg, &b->digests[0], &r);
        if (b->fifo) {
            gw__fifo_seq_text(res->sent[0].sequence, seq[0]);
            r.sequence_number = sl_slice_cstr(seq[0]);
        }
        free(b);
        struct gw_sqs_reply reply;
        gw__act_reply_init(ctx, &reply);
        gw_sqs_reply_send_result(&reply, &r);
        gw__act_finish(ctx, &reply);
        gw_sqs_reply_fini(&reply);
        return;
    }
    const struct gw_sqs_send_message_batch_req *req = &ctx->req.u.send_message_batch;
    struct gw_sqs_send_result ok[PART_MAX_BATCH] = {0};
    struct gw_sqs_batch_failure failed[PART_MAX_BATCH];
    size_t n_ok = 0;
    size_t n_failed = 0;
    for (size_t j = 0; j < b->job_count && j < res->sent_count; j++) {
        if (b->fail[b->job_entry[j]] != NULL) {
            continue; /* its partition's sub-job failed */
        }
        const struct gw_sqs_send_entry *m = &req->entries[b->job_entry[j]];
        ok[n_ok].id = m->id;
        snprintf(ok[n_ok].message_id, sizeof ok[n_ok].message_id, "%s", res->sent[j].message_id);
        gw_sqs_send_result_fill(m, &b->digests[j], &ok[n_ok]);
        if (b->fifo) {
            gw__fifo_seq_text(res->sent[j].sequence, seq[n_ok]);
            ok[n_ok].sequence_number = sl_slice_cstr(seq[n_ok]);
        }
        n_ok++;
    }
    for (size_t i = 0; i < b->count; i++) {
        if (b->fail[i] != NULL) {
            failed[n_failed++] = (struct gw_sqs_batch_failure){req->entries[i].id, b->fail[i]};
        }
    }
    struct gw_sqs_reply reply;
    gw__act_reply_init(ctx, &reply);
    gw_sqs_reply_send_batch(&reply, ok, n_ok, failed, n_failed);
    free(b);
    gw__act_finish(ctx, &reply);
    gw_sqs_reply_fini(&reply);
}

/* One partition's share of a send fanned out over several (a FIFO batch
 * whose groups have different homes): cookie.id has a bit per job entry
 * it carried, in order. Entries of a failed share fail alone (and so do
 * those of a failed share of the engine's own fan-out, by entry_status);
 * the answer goes out when the last share is in. */
static void send_part_done(struct part_cookie cookie, int status, const struct part_result *res)
{
    struct msg_batch *b = cookie.ptr;
    size_t k = 0;
    for (uint32_t j = 0; j < b->job_count; j++) {
        if ((cookie.id & (1u << j)) == 0) {
            continue;
        }
        int st = status == SL_OK && res != NULL && res->entry_status != NULL && k < res->entry_count
                     ? res->entry_status[k]
                     : status;
        if (st == SL_OK && res != NULL && k < res->sent_count) {
            b->sent[j] = res->sent[k++];
        } else {
            k++;
            fail_job_entry(b, j, st);
        }
    }
    if (--b->pending == 0) {
        send_done((struct part_cookie){.ptr = b}, SL_OK,
                  &(struct part_result){.sent = b->sent, .sent_count = b->job_count});
    }
}

/* Submits the job entries of a FIFO send, one job per partition their
 * groups live on, each in the request's order; the answer comes from
 * send_part_done (a share the engine refused fails its entries). */
static void send_fanned(struct gw_act_ctx *ctx, const struct gw_queue *q, struct msg_batch *b,
                        const struct part_send_entry *job, const uint32_t *partition)
{
    uint32_t left = (1u << b->job_count) - 1;
    b->pending = 1; /* held until every share is submitted */
    while (left != 0) {
        uint32_t p = partition[__builtin_ctz(left)];
        struct part_send_entry share[PART_MAX_BATCH];
        size_t n = 0;
        uint32_t mask = 0;
        for (uint32_t j = 0; j < b->job_count; j++) {
            if ((left & (1u << j)) != 0 && partition[j] == p) {
                share[n++] = job[j];
                mask |= 1u << j;
            }
        }
        left &= ~mask;
        b->pending++;
        int rc = part_send(ctx->loop->part, q->id, p, share, n,
                           (struct part_cookie){.ptr = b, .id = mask}, send_part_done);
        if (rc != SL_OK) {
            send_part_done((struct part_cookie){.ptr = b, .id = mask}, rc, NULL);
        }
    }
    send_part_done((struct part_cookie){.ptr = b, .id = 0}, SL_OK, NULL);
}

/* SQS's refusal of a message over the queue's MaximumMessageSize. */
static void too_large(struct gw_sqs_err *err, uint32_t max_size)
{
    gw_sqs_err_set(err, GW_SQS_E_INVALID_PARAMETER_VALUE,
                   "One or more parameters are invalid. Reason: Message must be shorter than %u "
                   "bytes.",
                   max_size);
}

/* Whether a queue auto-created for this send, with SQS's default
 * attributes and the tenant's queue_defaults, would refuse the whole
 * request (then *err says why): the FIFO rules, and for SendMessage its
 * one entry's own failure, its size or its sluice.* attributes. (A
 * batch's failing entries fail alone, as on any queue.) */
static bool refused_by_new_queue(const struct gw_act_ctx *ctx, const struct gw_sqs_queue_ref *ref,
                                 const struct gw_sqs_send_entry *entries, size_t count, bool single,
                                 struct gw_sqs_err *err)
{
    struct part_queue_config would = part_queue_config_default();
    would.fifo = ref->fifo;
    const struct cfg_queue_defaults *qd = &ctx->principal.tenant->queue_defaults;
    if (qd->set[CFG_QD_MAXIMUM_MESSAGE_SIZE]) {
        would.max_message_size = qd->value[CFG_QD_MAXIMUM_MESSAGE_SIZE];
    }
    if (gw__fifo_check(&would, entries, count, err) != SL_OK) {
        return true;
    }
    if (!single) {
        return false;
    }
    if (entries[0].fail != NULL) {
        *err = *entries[0].fail;
        return true;
    }
    if (entries[0].size > would.max_message_size) {
        too_large(err, would.max_message_size);
        return true;
    }
    bool has_priority;
    int64_t priority;
    return gw__beyond_check(&would, &entries[0], &has_priority, &priority, err) != SL_OK;
}

/* Sends the request's entries that passed validation. entries/count are
 * the request's; single tells SendMessage from SendMessageBatch. */
static void send_entries(struct gw_act_ctx *ctx, const struct gw_sqs_queue_ref *ref,
                         const struct gw_sqs_send_entry *entries, size_t count, bool single)
{
    struct gw_queue q;
    if (gw__act_find_queue(ctx, ref->tenant, ref->name, &q) != SL_OK) {
        /* Not knowing the queue proves nothing on a node still catching
         * up: neither QueueDoesNotExist nor an auto-creation then. */
        if (gw__act_not_ready(ctx) != SL_OK) {
            return;
        }
        /* A tenant may have its queues made by their first send; a send
         * the new queue would refuse whole makes none. */
        struct gw_sqs_err err;
        if (gw__act_auto_create_applies(ctx, ref) &&
            refused_by_new_queue(ctx, ref, entries, count, single, &err)) {
            gw__act_fail(ctx, &err);
            return;
        }
        if (!gw__act_auto_create(ctx, ref,
                                 single ? gw__act_send_message : gw__act_send_message_batch)) {
            gw_sqs_err_set(&err, GW_SQS_E_QUEUE_DOES_NOT_EXIST, NULL);
            gw__act_fail(ctx, &err);
        }
        return;
    }
    ctx->queue_id = q.id; /* as gw__act_resolve, whose refusal is the branch above */
    if ((gw__pause_flags(ctx->api, q.id) & GW_PAUSE_ENQUEUE) != 0) {
        struct gw_sqs_err err;
        gw_sqs_err_set(&err, GW_SQS_E_QUEUE_PAUSED, NULL);
        gw__act_fail(ctx, &err);
        return;
    }
    struct gw_sqs_err fifo_err;
    if (gw__fifo_check(&q.cfg, entries, count, &fifo_err) != SL_OK) {
        gw__act_fail(ctx, &fifo_err); /* nothing of the request is stored */
        return;
    }
    struct msg_batch *b = batch_new(ctx, count);
    b->fifo = q.cfg.fifo;
    uint32_t max_size = q.cfg.max_message_size ? q.cfg.max_message_size : GW_SQS_MAX_MESSAGE_BYTES;
    bool has_prio[PART_MAX_BATCH];
    int64_t prio[PART_MAX_BATCH];
    struct sl_slice excl[PART_MAX_BATCH]; /* exclusive queues: each job entry's value */
    char *excl_key = q.cfg.exclusive ? gw__beyond_exclusivity_key(ctx, q.id) : NULL;
    /* queues with SluiceFilterKeys: each job entry's indexed pairs */
    struct part_filter_pair fpairs[PART_MAX_BATCH][PART_FILTER_KEYS_MAX];
    size_t nfpairs[PART_MAX_BATCH] = {0};
    char *filter_keys =
        q.cfg.filtered ? gw__beyond_queue_attr(ctx, q.id, GW_SQS_QATTR_SLUICE_FILTER_KEYS) : NULL;
    for (size_t i = 0; i < count; i++) {
        b->fail[i] = entries[i].fail;
        if (b->fail[i] == NULL && entries[i].size > max_size) {
            too_large(&b->errs[i], max_size);
            b->fail[i] = &b->errs[i];
        }
        /* sluice.* attributes (a priority): a bad one fails its entry */
        if (b->fail[i] == NULL && entries[i].attr_count > 0 &&
            gw__beyond_check(&q.cfg, &entries[i], &has_prio[b->job_count], &prio[b->job_count],
                             &b->errs[i]) != SL_OK) {
            b->fail[i] = &b->errs[i];
        }
        if (b->fail[i] == NULL && q.cfg.exclusive &&
            gw__beyond_exclusive_value(&entries[i], excl_key != NULL ? excl_key : "?",
                                       &excl[b->job_count], &b->errs[i]) != SL_OK) {
            b->fail[i] = &b->errs[i];
        }
        if (b->fail[i] == NULL && filter_keys != NULL &&
            gw__beyond_filter_pairs(&entries[i], filter_keys, fpairs[b->job_count],
                                    &nfpairs[b->job_count], &b->errs[i]) != SL_OK) {
            b->fail[i] = &b->errs[i];
        }
        if (b->fail[i] == NULL) {
            if (entries[i].attr_count == 0) {
                has_prio[b->job_count] = false;
            }
            b->job_entry[b->job_count++] = (uint32_t)i;
        }
    }
    free(excl_key); /* the values borrow from the request, not from it */
    free(filter_keys);
    if (single && b->fail[0] != NULL) {
        struct gw_sqs_err err = *b->fail[0];
        free(b);
        gw__act_fail(ctx, &err);
        return;
    }
    if (b->job_count == 0) {
        send_done(cookie_of(b), SL_OK, &(struct part_result){0});
        return;
    }
    bool spill = false;
    if (gw__act_admit(ctx, q.tenant, q.name, POL_ACTION_SEND, (uint32_t)b->job_count, &spill) !=
        SL_OK) {
        free(b);
        return;
    }
    if (spill && b->fifo) {
        /* The overflow lane would let a group's later messages overtake
         * it: a FIFO send over the limit is throttled instead. */
        free(b);
        struct gw_sqs_err err;
        gw_sqs_err_set(&err, GW_SQS_E_REQUEST_THROTTLED,
                       "Tenant %s is over its rate; sends to FIFO queues are throttled rather "
                       "than spilled, which would reorder their message groups.",
                       q.tenant);
        gw__act_fail(ctx, &err);
        return;
    }
    /* Every entry's stored attributes and system attributes in one
     * buffer; the slices into it are taken once it stops growing. */
    struct part_send_entry job[PART_MAX_BATCH];
    struct sl_buf enc;
    sl_buf_init(&enc);
    sl_buf_reserve(&enc, 128 * b->job_count);
    size_t attrs_at[PART_MAX_BATCH + 1];
    size_t sys_at[PART_MAX_BATCH];
    char content_ids[PART_MAX_BATCH][65];
    uint32_t fifo_part[PART_MAX_BATCH] = {0};
    bool fanned = false;
    /* Idempotent sends on a standard queue go to their id's home (those
     * without an id to the least loaded partition, as any send). */
    bool keyed = !b->fifo && q.cfg.idempotency_window_s > 0;
    uint32_t least_loaded = UINT32_MAX;
    for (size_t j = 0; j < b->job_count; j++) {
        const struct gw_sqs_send_entry *m = &entries[b->job_entry[j]];
        attrs_at[j] = enc.n;
        gw__attrs_encode(m->attrs, m->attr_count, &enc);
        sys_at[j] = enc.n;
        encode_sys_attrs(ctx, m, &enc);
        gw_sqs_digests_of(m, &b->digests[j]);
        int32_t delay = m->has_delay_seconds ? m->delay_seconds : -1;
        job[j] = (struct part_send_entry){
            .body = m->body,
            .digests = {(const char *)b->digests[j].bytes, b->digests[j].n},
            .group_id = m->has_group_id ? m->group_id : (struct sl_slice){NULL, 0},
            .delay_s = delay,
            .has_priority = has_prio[j],
            .priority = prio[j],
            .filters = fpairs[j],
            .filter_count = nfpairs[j],
        };
        if (q.cfg.exclusive) { /* every message of a value on its home */
            job[j].group_id = excl[j];
            fifo_part[j] = gw__beyond_value_partition(ctx, &q, excl[j]);
            fanned = fanned || fifo_part[j] != fifo_part[0];
        } else if (keyed) {
            if (m->has_dedup_id) {
                job[j].dedup_id = m->dedup_id;
                fifo_part[j] = gw__beyond_key_partition(ctx, &q, m->dedup_id);
            } else {
                least_loaded = least_loaded != UINT32_MAX ? least_loaded : send_partition(ctx, &q);
                fifo_part[j] = least_loaded;
            }
            fanned = fanned || fifo_part[j] != fifo_part[0];
        }
        if (b->fifo) {
            /* FIFO: the queue's delay always (a per-message 0 means it) */
            job[j].delay_s = -1;
            job[j].dedup_id = gw__fifo_dedup_id(m, content_ids[j]);
            fifo_part[j] = gw__fifo_partition(ctx, &q, m);
            fanned = fanned || fifo_part[j] != fifo_part[0];
        }
        if (spill) {
            /* The overflow lane, invisible for at least spill.delay_seconds;
             * receives serve it after the main lane. */
            b->spilled = true;
            int32_t own = delay >= 0 ? delay : (int32_t)q.cfg.delay_s;
            job[j].delay_s = pol_spill_delay_s(&ctx->principal.tenant->spill, own);
            job[j].lane = PART_LANE_OVERFLOW;
        }
    }
    attrs_at[b->job_count] = enc.n;
    for (size_t j = 0; j < b->job_count; j++) {
        job[j].attrs = (struct sl_slice){enc.p + attrs_at[j], sys_at[j] - attrs_at[j]};
        job[j].sys_attrs = (struct sl_slice){enc.p + sys_at[j], attrs_at[j + 1] - sys_at[j]};
    }
    int rc = SL_OK;
    if (fanned) {
        send_fanned(ctx, &q, b, job, fifo_part);
    } else {
        uint32_t partition =
            b->fifo || keyed || q.cfg.exclusive ? fifo_part[0] : send_partition(ctx, &q);
        rc =
            part_send(ctx->loop->part, q.id, partition, job, b->job_count, cookie_of(b), send_done);
    }
    sl_buf_free(&enc);
    if (rc != SL_OK) {
        free(b);
        gw__act_fail_storage(ctx, rc);
    }
}

void gw__act_send_message(struct gw_act_ctx *ctx)
{
    const struct gw_sqs_send_message_req *r = &ctx->req.u.send_message;
    send_entries(ctx, &r->queue, &r->msg, 1, true);
}

void gw__act_send_message_batch(struct gw_act_ctx *ctx)
{
    const struct gw_sqs_send_message_batch_req *r = &ctx->req.u.send_message_batch;
    send_entries(ctx, &r->queue, r->entries, r->entry_count, false);
}

/* ---- ReceiveMessage --------------------------------------------------------- */

/* The system attributes SQS reports on a received message, as asked. */
static size_t received_sys_attrs(struct gw_act_ctx *ctx, const struct part_message *m,
                                 uint32_t wanted, struct gw_sqs_tag *out, char (*num)[32],
                                 struct sl_buf *arn)
{
    struct gw_sqs_msg_attr stored[GW_SYSATTR_MAX];
    int n_stored = gw__attrs_decode(m->sys_attrs, stored, GW_SYSATTR_MAX);
    size_t n = 0;
    for (int a = 0; a < GW_SQS_SYSATTR__COUNT; a++) {
        if ((wanted & (1u << a)) == 0) {
            continue;
        }
        const char *name = gw_sqs_sysattr_name((enum gw_sqs_sysattr)a);
        struct sl_slice value = {NULL, 0};
        switch ((enum gw_sqs_sysattr)a) {
        case GW_SQS_SYSATTR_SENT_TIMESTAMP:
            snprintf(num[n], 32, "%llu", (unsigned long long)m->sent_ms);
            value = sl_slice_cstr(num[n]);
            break;
        case GW_SQS_SYSATTR_APPROXIMATE_RECEIVE_COUNT:
            snprintf(num[n], 32, "%u", m->receive_count);
            value = sl_slice_cstr(num[n]);
            break;
        case GW_SQS_SYSATTR_APPROXIMATE_FIRST_RECEIVE_TIMESTAMP:
            snprintf(num[n], 32, "%llu", (unsigned long long)m->first_receive_ms);
            value = sl_slice_cstr(num[n]);
            break;
        case GW_SQS_SYSATTR_MESSAGE_GROUP_ID:
            value = sl_slice_cstr(m->group_id);
            break;
        case GW_SQS_SYSATTR_MESSAGE_DEDUPLICATION_ID: /* FIFO only */
            value = sl_slice_cstr(m->dedup_id);
            break;
        case GW_SQS_SYSATTR_SEQUENCE_NUMBER: /* FIFO only: its rows carry a dedup id */
            if (m->dedup_id != NULL) {
                gw__fifo_seq_text((uint64_t)m->priority, num[n]);
                value = sl_slice_cstr(num[n]);
            }
            break;
        case GW_SQS_SYSATTR__COUNT:
            break;
        case GW_SQS_SYSATTR_DEAD_LETTER_QUEUE_SOURCE_ARN:
            if (m->source_queue_id != 0) {
                struct part_queue_info *src = NULL;
                if (part_queue_get(ctx->api->engine, m->source_queue_id, &src) == SL_OK) {
                    sl_buf_reset(arn);
                    gw__act_queue_arn(ctx, src->tenant, src->name, arn);
                    value = (struct sl_slice){arn->p, arn->n};
                    part_queue_info_free(src);
                }
            }
            break;
        case GW_SQS_SYSATTR_SENDER_ID:
        case GW_SQS_SYSATTR_AWS_TRACE_HEADER:
            for (int i = 0; i < n_stored; i++) {
                if (sl_slice_eq_cstr(stored[i].name, name)) {
                    value = stored[i].value;
                }
            }
            break;
        }
        if (value.p != NULL) {
            out[n].key = sl_slice_cstr(name);
            out[n].value = value;
            n++;
        }
    }
    return n;
}

static void receive_finish(struct msg_batch *b)
{
    if (b->long_poll != NULL) {
        pol_long_poll_release(b->long_poll);
    }
    gw_exchange_on_cancel(b->ctx->ex, NULL, NULL);
    gw_exchange_on_client_done(b->ctx->ex, NULL, NULL);
    free(b);
}

/* AgeOfFirstAttempt (the article's signal of a backlog building up), how
 * long the receive took, long-poll wait included, and whether it came
 * back empty (a consumer polling more than the queue needs). */
static void observe_receive(struct gw_act_ctx *ctx, const struct part_result *res)
{
    if (res->message_count == 0) {
        gw_metrics_count_empty_receive(ctx->api->metrics, ctx->queue_id);
    }
    const char *tenant = ctx->principal.tenant != NULL ? ctx->principal.tenant->name : "(admin)";
    for (size_t i = 0; i < res->message_count; i++) {
        const struct part_message *m = &res->messages[i];
        if (m->receive_count == 1 && m->first_receive_ms >= m->sent_ms) {
            gw_metrics_observe_first_receive_age(ctx->api->metrics, tenant,
                                                 m->first_receive_ms - m->sent_ms);
            gw_metrics_note_queue_first_attempt(ctx->api->metrics, m->queue_id,
                                                m->first_receive_ms - m->sent_ms);
        }
    }
    uint64_t now = sl_mono_ns();
    uint64_t start = ctx->http->start_mono_ns;
    gw_metrics_observe_receive_latency(ctx->api->metrics, tenant, now > start ? now - start : 0);
}

static void receive_done(struct part_cookie cookie, int status, const struct part_result *res)
{
    struct msg_batch *b = cookie.ptr;
    struct gw_act_ctx *ctx = b->ctx;
    receive_finish(b);
    if (status == SL_ECLOSED && gw_exchange_cancelled(ctx->ex)) {
        gw__act_reply_empty(ctx); /* the client is gone; this only frees */
        return;
    }
    if (status != SL_OK) {
        gw__act_fail_storage(ctx, status);
        return;
    }
    const struct gw_sqs_receive_message_req *r = &ctx->req.u.receive_message;
    size_t n = res->message_count;
    SL_ASSERT(n <= PART_MAX_BATCH);
    observe_receive(ctx, res);
    /* At most PART_MAX_BATCH messages: all of it on the stack (about
     * 12 KiB), none of it zeroed first. */
    struct gw_sqs_received out[PART_MAX_BATCH];
    struct gw_sqs_tag sys[PART_MAX_BATCH][GW_SQS_SYSATTR__COUNT];
    char nums[PART_MAX_BATCH][GW_SQS_SYSATTR__COUNT][32];
    struct gw_sqs_msg_attr attrs[PART_MAX_BATCH][GW_SQS_MAX_MESSAGE_ATTRIBUTES];
    struct gw_sqs_digests digests[PART_MAX_BATCH];
    struct sl_buf arns[PART_MAX_BATCH];
    for (size_t i = 0; i < n; i++) {
        const struct part_message *m = &res->messages[i];
        sl_buf_init(&arns[i]);
        out[i] = (struct gw_sqs_received){
            .message_id = sl_slice_cstr(m->message_id),
            .receipt_handle = sl_slice_cstr(m->receipt),
            .body = m->body,
            .system_attributes = sys[i],
        };
        out[i].system_attribute_count =
            received_sys_attrs(ctx, m, r->system_attributes, sys[i], nums[i], &arns[i]);
        struct gw_sqs_msg_attr all[GW_SQS_MAX_MESSAGE_ATTRIBUTES];
        int count = gw__attrs_decode(m->attrs, all, GW_SQS_MAX_MESSAGE_ATTRIBUTES);
        size_t kept = 0;
        for (int a = 0; a < count; a++) {
            if (gw_sqs_attr_filter_match(r->attribute_filters, r->attribute_filter_count,
                                         all[a].name)) {
                attrs[i][kept++] = all[a];
            }
        }
        out[i].attrs = attrs[i];
        out[i].attr_count = kept;
        /* Messages stored before digests were kept (or with a form this
         * build does not know) are hashed in the reply instead. */
        if (gw_sqs_digests_read(m->digests, &digests[i])) {
            out[i].md5_of_body = digests[i].bytes;
            if (count > 0 && kept == (size_t)count) {
                out[i].md5_of_attrs = gw_sqs_digests_attrs(&digests[i]);
            }
        }
    }
    struct gw_sqs_reply reply;
    gw__act_reply_init(ctx, &reply);
    gw_sqs_reply_messages(&reply, out, n);
    for (size_t i = 0; i < n; i++) {
        sl_buf_free(&arns[i]);
    }
    gw__act_finish(ctx, &reply);
    gw_sqs_reply_fini(&reply);
}

static void receive_cancelled(struct gw_exchange *ex, void *data)
{
    struct msg_batch *b = data;
    (void)ex;
    /* The stream is gone: withdraw the waiting receive so it takes no
     * message; its completion (SL_ECLOSED) then frees everything. */
    part_receive_cancel(b->ctx->loop->part, b->ticket);
}

static void receive_client_done(struct gw_exchange *ex, void *data)
{
    struct msg_batch *b = data;
    (void)ex;
    /* The client half-closed, or closed: its wait ends now, and it gets
     * what there is (the answer is lost if it is gone, which costs a
     * visibility timeout at most, as for any lost answer). */
    part_receive_expire(b->ctx->loop->part, b->ticket);
}

/* A ReceiveMessage answered with no message, without asking the engine. */
static void reply_no_messages(struct gw_act_ctx *ctx)
{
    struct gw_sqs_reply reply;
    gw__act_reply_init(ctx, &reply);
    gw_sqs_reply_messages(&reply, NULL, 0);
    gw__act_finish(ctx, &reply);
    gw_sqs_reply_fini(&reply);
}

/* A filtered receive's pairs, each a key the queue indexes (only such a
 * receive reads the queue's attributes); false when it was refused. */
static bool receive_filter(struct gw_act_ctx *ctx, const struct gw_queue *q,
                           const struct gw_sqs_filter *f, struct part_filter_pair *out)
{
    struct gw_sqs_err err;
    int rc =
        gw__beyond_filter_check(ctx, q->id, q->cfg.filtered, f, "MessageAttributeNames", out, &err);
    if (rc != SL_OK) {
        gw__act_fail(ctx, &err);
    }
    return rc == SL_OK;
}

void gw__act_receive_message(struct gw_act_ctx *ctx)
{
    const struct gw_sqs_receive_message_req *r = &ctx->req.u.receive_message;
    struct gw_queue q;
    if (gw__act_resolve(ctx, &r->queue, &q) != SL_OK) {
        return;
    }
    struct part_filter_pair filter[PART_FILTER_MAX];
    if (r->filter.count > 0 && !receive_filter(ctx, &q, &r->filter, filter)) {
        return;
    }
    struct part_counts total = {0};
    part_queue_counts(ctx->api->engine, q.id, PART_ALL_PARTITIONS, &total);
    /* A FIFO retry (an attempt id) may still get what its attempt holds
     * where a new receive would get nothing. */
    bool retry = q.cfg.fifo && r->has_receive_request_attempt_id;
    bool replay_only = false;
    if (total.inflight >= QUEUE_INFLIGHT_LIMIT && q.cfg.fifo) {
        /* SQS answers a FIFO queue at its in-flight quota with no message
         * rather than OverLimit: delivery stalls until some are deleted. */
        if (!retry) {
            reply_no_messages(ctx);
            return;
        }
        replay_only = true;
    }
    if (total.inflight >= QUEUE_INFLIGHT_LIMIT) {
        struct gw_sqs_err err;
        gw_sqs_err_set(&err, GW_SQS_E_OVER_LIMIT,
                       "The maximum number of in-flight messages (%d) for this queue has been "
                       "reached.",
                       QUEUE_INFLIGHT_LIMIT);
        gw__act_fail(ctx, &err);
        return;
    }
    bool spill_unused;
    if (gw__act_admit(ctx, q.tenant, q.name, POL_ACTION_RECEIVE, 1, &spill_unused) != SL_OK) {
        return;
    }
    uint32_t max = (uint32_t)r->max_number_of_messages;
    if (ctx->principal.tenant != NULL) {
        int64_t backlog = 0;
        int64_t inflight = 0;
        part_tenant_counts(ctx->api->engine, q.tenant, &backlog, &inflight);
        max = pol_receive_allowance(&ctx->principal.tenant->limits,
                                    inflight > 0 ? (uint64_t)inflight : 0, max);
        if (max == 0 && !retry) {
            reply_no_messages(ctx);
            return;
        }
        if (max == 0) {
            replay_only = true;
            max = 1; /* the replay answers the whole attempt whatever max says */
        }
    }
    uint32_t wait_s =
        r->has_wait_time_seconds ? (uint32_t)r->wait_time_seconds : q.cfg.receive_wait_s;
    if ((gw__pause_flags(ctx->api, q.id) & GW_PAUSE_DEQUEUE) != 0) {
        gw__pause_hold_receive(ctx, wait_s * 1000u);
        return;
    }
    struct msg_batch *b = batch_new(ctx, 0);
    b->queue_id = q.id;
    if (ctx->loop->draining || replay_only || gw_exchange_client_done(ctx->ex)) {
        wait_s = 0;
    }
    if (wait_s > 0 && ctx->principal.tenant != NULL) {
        /* A tenant may hold only so many streams in long polls; past its
         * cap a receive answers at once, as a short poll. */
        struct pol_tenant_state *st =
            pol_limiter_find(ctx->api->limiter, q.tenant, strlen(q.tenant));
        if (st != NULL && pol_long_poll_acquire(st)) {
            b->long_poll = st;
        } else if (st != NULL) {
            wait_s = 0;
        }
    }

    /* Read set: the tenant's shard plus any partition that still holds
     * messages of this queue (after P or k changed). */
    const uint32_t *shard;
    uint32_t k = gw__act_shard(ctx, q.tenant, &shard);
    uint32_t partitions = part_engine_partitions(ctx->api->engine);
    uint64_t *held = sl_xcalloc(partitions, sizeof *held);
    uint32_t *read_set = sl_xcalloc(partitions, sizeof *read_set);
    for (uint32_t p = 0; p < partitions; p++) {
        struct part_counts c = {0};
        part_queue_counts(ctx->api->engine, q.id, p, &c);
        held[p] = (uint64_t)SL_MAX(c.ready + c.inflight + c.delayed, 0);
    }
    uint32_t n_read = pol_read_set(shard, k, held, partitions, read_set);
    struct part_receive_req job = {
        .queue_id = q.id,
        .partitions = read_set,
        .partition_count = n_read,
        .max_messages = max,
        .visibility_s = r->has_visibility_timeout ? r->visibility_timeout : -1,
        .wait_ms = wait_s * 1000u,
        .overflow_every = POL_OVERFLOW_GUARD_EVERY,
        .noisy = pol_group_is_noisy, /* SQS fair queues: always on */
    };
    if (r->has_receive_request_attempt_id) {
        /* FIFO only (the engine ignores it on a standard queue, as SQS
         * does): a retry within five minutes gets the messages that
         * attempt still holds, durably, across restarts. */
        job.attempt = r->receive_request_attempt_id;
        job.replay_only = replay_only;
    }
    if (r->filter.count > 0) { /* checked at the start */
        job.filter = filter;
        job.filter_count = r->filter.count;
    }
    int rc = part_receive(ctx->loop->part, &job, cookie_of(b), receive_done, &b->ticket);
    free(held);
    free(read_set);
    if (rc != SL_OK) {
        if (b->long_poll != NULL) {
            pol_long_poll_release(b->long_poll);
        }
        free(b);
        gw__act_fail_storage(ctx, rc);
        return;
    }
    gw_exchange_on_cancel(ctx->ex, receive_cancelled, b);
    gw_exchange_on_client_done(ctx->ex, receive_client_done, b);
}

/* ---- DeleteMessage(Batch), ChangeMessageVisibility(Batch) --------------------- */

static void set_invalid_handle(struct gw_sqs_err *err, struct sl_slice handle)
{
    gw_sqs_err_set(err, GW_SQS_E_RECEIPT_HANDLE_IS_INVALID,
                   "The input receipt handle \"%.*s\" is not a valid receipt handle.",
                   (int)SL_MIN(handle.n, 200), handle.p);
}

static void set_not_inflight(struct gw_sqs_err *err, struct sl_slice handle)
{
    gw_sqs_err_set(err, GW_SQS_E_INVALID_PARAMETER_VALUE,
                   "Value %.*s for parameter ReceiptHandle is invalid. Reason: Message does not "
                   "exist or is not available for visibility timeout change.",
                   (int)SL_MIN(handle.n, 200), handle.p);
}

/* The request's entries as (id, handle, timeout) whatever the action. */
struct receipt_view {
    struct sl_slice id;
    struct sl_slice handle;
    int32_t visibility;
};

static size_t receipt_views(const struct gw_act_ctx *ctx, struct receipt_view *out,
                            const struct gw_sqs_queue_ref **queue)
{
    const struct gw_sqs_request *r = &ctx->req;
    switch (ctx->action) {
    case GW_SQS_ACT_DELETE_MESSAGE:
        *queue = &r->u.delete_message.queue;
        out[0] = (struct receipt_view){{NULL, 0}, r->u.delete_message.receipt_handle, 0};
        return 1;
    case GW_SQS_ACT_CHANGE_MESSAGE_VISIBILITY:
        *queue = &r->u.change_message_visibility.queue;
        out[0] = (struct receipt_view){{NULL, 0},
                                       r->u.change_message_visibility.receipt_handle,
                                       r->u.change_message_visibility.visibility_timeout};
        return 1;
    default: {
        const struct gw_sqs_receipt_batch_req *b = ctx->action == GW_SQS_ACT_DELETE_MESSAGE_BATCH
                                                       ? &r->u.delete_message_batch
                                                       : &r->u.change_message_visibility_batch;
        *queue = &b->queue;
        for (size_t i = 0; i < b->entry_count; i++) {
            out[i] = (struct receipt_view){b->entries[i].id, b->entries[i].receipt_handle,
                                           b->entries[i].visibility_timeout};
        }
        return b->entry_count;
    }
    }
}

static bool is_delete(enum gw_sqs_action a)
{
    return a == GW_SQS_ACT_DELETE_MESSAGE || a == GW_SQS_ACT_DELETE_MESSAGE_BATCH;
}

static bool is_batch(enum gw_sqs_action a)
{
    return a == GW_SQS_ACT_DELETE_MESSAGE_BATCH || a == GW_SQS_ACT_CHANGE_MESSAGE_VISIBILITY_BATCH;
}

static void receipts_done(struct part_cookie cookie, int status, const struct part_result *res)
{
    struct msg_batch *b = cookie.ptr;
    struct gw_act_ctx *ctx = b->ctx;
    if (status != SL_OK) {
        free(b);
        gw__act_fail_storage(ctx, status);
        return;
    }
    struct receipt_view views[PART_MAX_BATCH];
    const struct gw_sqs_queue_ref *queue;
    receipt_views(ctx, views, &queue);
    for (size_t j = 0; j < b->job_count && res != NULL && j < res->entry_count; j++) {
        uint32_t i = b->job_entry[j];
        int st = res->entry_status[j];
        if (st == SL_EINVAL) {
            set_invalid_handle(&b->errs[i], views[i].handle);
            b->fail[i] = &b->errs[i];
        } else if (st == SL_ENOTFOUND && is_delete(ctx->action)) {
            /* FIFO only: the lease of this handle ended */
            gw_sqs_err_set(&b->errs[i], GW_SQS_E_INVALID_PARAMETER_VALUE,
                           "Value %.*s for parameter ReceiptHandle is invalid. Reason: The "
                           "receipt handle has expired.",
                           (int)SL_MIN(views[i].handle.n, 200), views[i].handle.p);
            b->fail[i] = &b->errs[i];
        } else if (st != SL_OK) {
            set_not_inflight(&b->errs[i], views[i].handle);
            b->fail[i] = &b->errs[i];
        }
    }
    if (!is_batch(ctx->action)) {
        if (b->fail[0] != NULL) {
            struct gw_sqs_err err = *b->fail[0];
            free(b);
            gw__act_fail(ctx, &err);
            return;
        }
        free(b);
        gw__act_reply_empty(ctx);
        return;
    }
    struct sl_slice ok[PART_MAX_BATCH];
    struct gw_sqs_batch_failure failed[PART_MAX_BATCH];
    size_t n_ok = 0;
    size_t n_failed = 0;
    for (size_t i = 0; i < b->count; i++) {
        if (b->fail[i] != NULL) {
            failed[n_failed++] = (struct gw_sqs_batch_failure){views[i].id, b->fail[i]};
        } else {
            ok[n_ok++] = views[i].id;
        }
    }
    struct gw_sqs_reply reply;
    gw__act_reply_init(ctx, &reply);
    gw_sqs_reply_id_batch(&reply, ok, n_ok, failed, n_failed);
    free(b);
    gw__act_finish(ctx, &reply);
    gw_sqs_reply_fini(&reply);
}

/* Every receipt action: decode each handle once here (MAC, queue), submit
 * the good ones already decoded in one job, answer per entry. */
static void receipts_act(struct gw_act_ctx *ctx)
{
    struct receipt_view views[PART_MAX_BATCH];
    const struct gw_sqs_queue_ref *queue;
    size_t count = receipt_views(ctx, views, &queue);
    struct gw_queue q;
    if (gw__act_resolve(ctx, queue, &q) != SL_OK) {
        return;
    }
    bool spill_unused;
    if (gw__act_admit(ctx, q.tenant, q.name, POL_ACTION_OTHER, (uint32_t)count, &spill_unused) !=
        SL_OK) {
        return;
    }
    struct msg_batch *b = batch_new(ctx, count);
    struct part_receipt rh[PART_MAX_BATCH];
    uint32_t vis[PART_MAX_BATCH];
    for (size_t i = 0; i < count; i++) {
        size_t j = b->job_count;
        if (part_receipt_decode(ctx->api->engine, views[i].handle.p, views[i].handle.n, &rh[j]) !=
                SL_OK ||
            rh[j].queue_id != q.id) {
            set_invalid_handle(&b->errs[i], views[i].handle);
            b->fail[i] = &b->errs[i];
            continue;
        }
        b->job_entry[b->job_count++] = (uint32_t)i;
        vis[j] = (uint32_t)SL_MAX(views[i].visibility, 0);
    }
    if (b->job_count == 0) {
        receipts_done(cookie_of(b), SL_OK, &(struct part_result){0});
        return;
    }
    int rc = is_delete(ctx->action)
                 ? part_delete_decoded(ctx->loop->part, q.id, rh, b->job_count, cookie_of(b),
                                       receipts_done)
                 : part_change_visibility_decoded(ctx->loop->part, q.id, rh, vis, b->job_count,
                                                  cookie_of(b), receipts_done);
    if (rc != SL_OK) {
        free(b);
        gw__act_fail_storage(ctx, rc);
    }
}

void gw__act_delete_message(struct gw_act_ctx *ctx)
{
    receipts_act(ctx);
}

void gw__act_delete_message_batch(struct gw_act_ctx *ctx)
{
    receipts_act(ctx);
}

void gw__act_change_message_visibility(struct gw_act_ctx *ctx)
{
    receipts_act(ctx);
}

void gw__act_change_message_visibility_batch(struct gw_act_ctx *ctx)
{
    receipts_act(ctx);
}
