/*
 * gw_act_move.c -- SQS message move tasks (DLQ redrive):
 * StartMessageMoveTask, ListMessageMoveTasks, CancelMessageMoveTask.
 *
 * A task moves the ready messages of a dead-letter queue back to the
 * queue each came from (no DestinationArn) or to one destination, in
 * batches of part_move jobs: one partition per job, one transaction per
 * job, so every batch is committed whole or not at all and a moved
 * message is never lost or doubled, even across a crash.
 *
 * Task state machine (status as ListMessageMoveTasks shows it):
 *
 *   RUNNING --all ready messages seen, or ToMove reached--> COMPLETED
 *   RUNNING --CancelMessageMoveTask--> CANCELLING --next tick--> CANCELLED
 *   RUNNING --queue deleted / storage failure--> FAILED (FailureReason)
 *
 * Pacing: a uv_timer on the loop that started the task. With
 * MaxNumberOfMessagesPerSecond a token bucket (refilled every tick, at
 * most one second of tokens) sizes each batch; without it each batch is
 * PART_MAX_MOVE rows and the next one starts as soon as the last commits
 * ("as fast as the system allows", while other jobs interleave at the
 * writer). One job in flight per task.
 *
 * The registry (struct gw_move_registry, api->moves) keeps every task's
 * record, newest first, bounded to MOVE_HISTORY per source queue. It is
 * memory only: after a restart ListMessageMoveTasks forgets old tasks and
 * running ones are gone (the messages they moved stay moved; start a new
 * task to move the rest).
 *
 * Tenant isolation: a task's source and destination are ARNs whose
 * account is the tenant; a tenant reaches only its own (others answer as
 * nonexistent), the admin any configured tenant's. Source and destination
 * are always of one tenant, which is also what lets the engine move a row
 * in place (a tenant's queues share its partitions).
 *
 * Threading: handlers and runners on loop threads. A record's mutable
 * fields are guarded by the registry mutex (List and Cancel may come on
 * another loop than the runner's); a runner (timer, cursors) belongs to
 * its loop alone.
 *
 * Ownership: the registry owns records; a runner is owned by its loop
 * and freed in its timer's close callback; it stops touching its record
 * once it wrote a final status.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <uv.h>

#include "gw_act_move.h"
#include "gw_sqs_move.h"

#define LOG_MOD "move"
#define MOVE_TICK_MS 100 /* pacing granularity with a rate, and cancel latency */
#define MOVE_HISTORY 10  /* records kept per source queue (ListMessageMoveTasks' max) */

enum move_status {
    MOVE_RUNNING,
    MOVE_COMPLETED,
    MOVE_CANCELLING,
    MOVE_CANCELLED,
    MOVE_FAILED,
};

static const char *const STATUS_NAME[] = {
    [MOVE_RUNNING] = "RUNNING",       [MOVE_COMPLETED] = "COMPLETED",
    [MOVE_CANCELLING] = "CANCELLING", [MOVE_CANCELLED] = "CANCELLED",
    [MOVE_FAILED] = "FAILED",
};

struct move_runner;

struct move_record {
    struct move_record *next; /* registry list, newest first */
    /* fixed at start */
    char id[GW_SQS_TASK_ID_LEN + 1];
    char tenant[65];
    char *handle;
    char *source_arn;
    char *dest_arn; /* NULL: each message back to its source */
    uint64_t source_id;
    int32_t rate; /* 0: as fast as the system allows */
    int64_t to_move;
    uint64_t started_ms;
    /* registry mutex */
    enum move_status status;
    int64_t moved;
    const char *failure;        /* static string */
    struct move_runner *runner; /* while RUNNING / CANCELLING */
};

struct gw_move_registry {
    pthread_mutex_t mu;
    struct move_record *records;
    struct move_runner *runners; /* every live runner, for shutdown */
};

struct move_runner {
    struct move_runner *next; /* registry->runners (registry mutex) */
    struct move_runner *prev;
    struct gw_move_registry *reg;
    struct move_record *rec;
    struct gw_api_loop *loop;
    uv_timer_t timer;
    uint64_t source_id;
    uint64_t dest_id; /* 0: each message to its source */
    int32_t rate;
    int64_t to_move;
    int64_t moved;        /* loop-side copy, for the budget */
    int64_t tokens_milli; /* token bucket, in thousandths of a message */
    uint64_t last_ms;     /* uv_now of the last refill */
    uint32_t nparts;
    uint32_t next_part;
    uint32_t job_part;
    uint64_t *cursor;  /* per partition: last row looked at */
    bool *part_done;   /* per partition: nothing more to look at */
    bool job_inflight; /* a part_move is out */
    bool stopping;     /* shutdown: take no more batches */
    bool finished;     /* final status written; timer closing */
};

/* ---- registry ------------------------------------------------------------ */

static struct gw_move_registry *registry_of(struct gw_api *api)
{
    struct gw_move_registry *reg = __atomic_load_n(&api->moves, __ATOMIC_ACQUIRE);
    if (reg != NULL) {
        return reg;
    }
    struct gw_move_registry *fresh = sl_xcalloc(1, sizeof *fresh);
    pthread_mutex_init(&fresh->mu, NULL);
    if (__atomic_compare_exchange_n(&api->moves, &reg, fresh, false, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE)) {
        return fresh;
    }
    pthread_mutex_destroy(&fresh->mu); /* another loop made it first */
    free(fresh);
    return reg;
}

/* The registry if any task was ever started, else NULL (List and Cancel
 * then have nothing to find and make nothing). */
static struct gw_move_registry *registry_if_any(struct gw_api *api)
{
    return __atomic_load_n(&api->moves, __ATOMIC_ACQUIRE);
}

static void record_free(struct move_record *r)
{
    free(r->handle);
    free(r->source_arn);
    free(r->dest_arn);
    free(r);
}

static bool status_active(enum move_status s)
{
    return s == MOVE_RUNNING || s == MOVE_CANCELLING;
}

/* Drops the oldest finished records of source_id beyond MOVE_HISTORY.
 * Registry mutex held. */
static void registry_prune(struct gw_move_registry *reg, uint64_t source_id)
{
    size_t seen = 0;
    for (struct move_record **pp = &reg->records; *pp != NULL;) {
        struct move_record *r = *pp;
        if (r->source_id == source_id && ++seen > MOVE_HISTORY && !status_active(r->status)) {
            *pp = r->next;
            record_free(r);
            continue;
        }
        pp = &r->next;
    }
}

/* ---- resolving ARNs -------------------------------------------------------- */

/* An ARN the principal may use, naming a live queue of this region.
 * Another tenant's queue resolves exactly like a missing one. Returns
 * SL_OK or SL_ENOTFOUND; does not end the request. */
static int resolve_arn(struct gw_act_ctx *ctx, struct sl_slice text, struct gw_queue *q)
{
    struct gw_sqs_arn arn;
    if (!gw_sqs_parse_arn(text, &arn) || !sl_slice_eq_cstr(arn.region, ctx->snap->region)) {
        return SL_ENOTFOUND;
    }
    return gw__act_find_queue(ctx, arn.account, arn.name, q);
}

static void fail(struct gw_act_ctx *ctx, enum gw_sqs_error code, const char *msg)
{
    struct gw_sqs_err err;
    gw_sqs_err_set(&err, code, "%s", msg);
    gw__act_fail(ctx, &err);
}

static void fail_missing(struct gw_act_ctx *ctx, const char *param)
{
    struct gw_sqs_err err;
    gw_sqs_err_set(&err, GW_SQS_E_RESOURCE_NOT_FOUND,
                   "The resource that you specified for the %s parameter doesn't exist.", param);
    gw__act_fail(ctx, &err);
}

/* gw__act_admit for a task's source queue. On failure takes ownership
 * of ctx. */
static int admit(struct gw_act_ctx *ctx, const struct gw_queue *src)
{
    bool spill = false;
    return gw__act_admit(ctx, src->tenant, src->name, POL_ACTION_OTHER, 1, &spill);
}

/* ---- the runner -------------------------------------------------------------- */

static void runner_closed(uv_handle_t *h)
{
    struct move_runner *r = h->data;
    free(r->cursor);
    free(r->part_done);
    free(r);
}

static void runner_unlist(struct move_runner *r)
{
    if (r->prev != NULL) {
        r->prev->next = r->next;
    } else {
        r->reg->runners = r->next;
    }
    if (r->next != NULL) {
        r->next->prev = r->prev;
    }
    r->next = r->prev = NULL;
}

/* Writes the final status (unless a shutdown leaves it as it was) and
 * lets the runner go. */
static void runner_finish(struct move_runner *r, enum move_status status, const char *failure)
{
    SL_ASSERT(!r->job_inflight && !r->finished);
    r->finished = true;
    pthread_mutex_lock(&r->reg->mu);
    r->rec->status = status;
    r->rec->failure = failure;
    r->rec->runner = NULL;
    runner_unlist(r);
    pthread_mutex_unlock(&r->reg->mu);
    if (status == MOVE_FAILED) {
        sl_log(SL_LOG_WARN, LOG_MOD, "task %s on %s failed after %lld messages: %s", r->rec->id,
               r->rec->source_arn, (long long)r->moved, failure);
    } else {
        sl_log(SL_LOG_INFO, LOG_MOD, "task %s on %s %s: %lld messages moved", r->rec->id,
               r->rec->source_arn, STATUS_NAME[status], (long long)r->moved);
    }
    uv_timer_stop(&r->timer);
    uv_close((uv_handle_t *)&r->timer, runner_closed);
}

static void runner_tick(uv_timer_t *t);

static void runner_schedule(struct move_runner *r)
{
    /* Unpaced tasks chain batch after batch through the loop, so requests
     * on this loop still run between them. */
    uv_timer_start(&r->timer, runner_tick, r->rate > 0 ? MOVE_TICK_MS : 0, 0);
}

static void on_moved(struct part_cookie cookie, int status, const struct part_result *res)
{
    struct move_runner *r = cookie.ptr;
    r->job_inflight = false;
    if (status == SL_OK) {
        r->moved += (int64_t)res->moved;
        r->tokens_milli -= (int64_t)res->moved * 1000;
        r->cursor[r->job_part] = res->move_cursor;
        r->part_done[r->job_part] = res->move_exhausted;
        r->next_part = (r->job_part + 1) % r->nparts;
        pthread_mutex_lock(&r->reg->mu);
        r->rec->moved = r->moved;
        pthread_mutex_unlock(&r->reg->mu);
    } else if (status == SL_ENOTFOUND) {
        runner_finish(r, MOVE_FAILED, "AWS.SimpleQueueService.NonExistentQueue");
        return;
    } else if (status == SL_ECLOSED) {
        r->stopping = true;
    } else {
        runner_finish(r, MOVE_FAILED, "InternalError");
        return;
    }
    if (r->stopping) {
        runner_finish(r, MOVE_FAILED, "ServiceUnavailable");
        return;
    }
    runner_schedule(r);
}

/* The next partition with ready messages of the source left to look at,
 * or UINT32_MAX when none is. */
static uint32_t next_partition(struct move_runner *r, struct part_engine *e)
{
    for (uint32_t i = 0; i < r->nparts; i++) {
        uint32_t p = (r->next_part + i) % r->nparts;
        if (r->part_done[p]) {
            continue;
        }
        struct part_counts c;
        if (part_queue_counts(e, r->source_id, p, &c) != SL_OK) {
            return UINT32_MAX;
        }
        if (c.ready <= 0) {
            r->part_done[p] = true;
            continue;
        }
        return p;
    }
    return UINT32_MAX;
}

static void runner_tick(uv_timer_t *t)
{
    struct move_runner *r = t->data;
    struct part_engine *e = r->loop->api->engine;
    if (r->job_inflight || r->finished) {
        return;
    }
    if (r->stopping || r->loop->draining) {
        runner_finish(r, MOVE_FAILED, "ServiceUnavailable");
        return;
    }
    pthread_mutex_lock(&r->reg->mu);
    bool cancel = r->rec->status == MOVE_CANCELLING;
    pthread_mutex_unlock(&r->reg->mu);
    if (cancel) {
        runner_finish(r, MOVE_CANCELLED, NULL);
        return;
    }
    if (r->moved >= r->to_move) {
        runner_finish(r, MOVE_COMPLETED, NULL);
        return;
    }
    uint32_t want = PART_MAX_MOVE;
    if (r->rate > 0) {
        uint64_t now = uv_now(r->loop->loop);
        r->tokens_milli += (int64_t)r->rate * (int64_t)(now - r->last_ms);
        r->tokens_milli = SL_MIN(r->tokens_milli, (int64_t)r->rate * 1000);
        r->last_ms = now;
        if (r->tokens_milli < 1000) {
            runner_schedule(r);
            return;
        }
        want = (uint32_t)SL_MIN(r->tokens_milli / 1000, (int64_t)PART_MAX_MOVE);
    }
    want = (uint32_t)SL_MIN((int64_t)want, r->to_move - r->moved);
    uint32_t p = next_partition(r, e);
    if (p == UINT32_MAX) {
        /* Every ready message there was at the start has been looked at;
         * what remains has no live source to go back to. */
        runner_finish(r, MOVE_COMPLETED, NULL);
        return;
    }
    struct part_move_req req = {.queue_id = r->source_id,
                                .partition = p,
                                .dest_queue_id = r->dest_id,
                                .after_sequence = r->cursor[p],
                                .max_messages = want};
    int rc = part_move(r->loop->part, &req, (struct part_cookie){.ptr = r}, on_moved);
    if (rc == SL_OK) {
        r->job_part = p;
        r->job_inflight = true;
    } else if (rc == SL_ENOTFOUND) {
        runner_finish(r, MOVE_FAILED, "AWS.SimpleQueueService.NonExistentQueue");
    } else {
        runner_finish(r, MOVE_FAILED, rc == SL_ECLOSED ? "ServiceUnavailable" : "InternalError");
    }
}

/* ---- StartMessageMoveTask -------------------------------------------------- */

void gw__act_start_message_move_task(struct gw_act_ctx *ctx)
{
    const struct gw_sqs_start_message_move_task_req *q = &ctx->req.u.start_message_move_task;
    struct gw_queue src;
    struct gw_queue dst = {0};
    if (resolve_arn(ctx, q->source_arn, &src) != SL_OK) {
        fail_missing(ctx, "SourceArn");
        return;
    }
    if (admit(ctx, &src) != SL_OK) {
        return;
    }
    struct part_queue_list sources;
    part_queue_dlq_sources(ctx->api->engine, src.id, &sources);
    bool is_dlq = sources.count > 0;
    part_queue_list_free(&sources);
    if (!is_dlq) {
        fail(ctx, GW_SQS_E_INVALID_PARAMETER_VALUE,
             "Source queue must be configured as a Dead Letter Queue.");
        return;
    }
    if (q->has_destination_arn) {
        /* Only the source's own tenant: a redrive never crosses accounts
         * here, and the engine moves rows in place within a tenant. */
        if (resolve_arn(ctx, q->destination_arn, &dst) != SL_OK ||
            strcmp(dst.tenant, src.tenant) != 0) {
            fail_missing(ctx, "DestinationArn");
            return;
        }
        if (dst.id == src.id) {
            fail(ctx, GW_SQS_E_INVALID_PARAMETER_VALUE,
                 "The source and destination queues must be different.");
            return;
        }
        if (dst.cfg.fifo != src.cfg.fifo) {
            fail(ctx, GW_SQS_E_INVALID_PARAMETER_VALUE,
                 "The destination queue must be of the same type as the source queue.");
            return;
        }
    }
    struct part_counts counts = {0};
    part_queue_counts(ctx->api->engine, src.id, PART_ALL_PARTITIONS, &counts);

    struct gw_move_registry *reg = registry_of(ctx->api);
    struct move_record *rec = sl_xcalloc(1, sizeof *rec);
    sl_uuid4(rec->id);
    snprintf(rec->tenant, sizeof rec->tenant, "%s", src.tenant);
    struct sl_buf buf;
    sl_buf_init(&buf);
    gw__act_queue_arn(ctx, src.tenant, src.name, &buf);
    rec->source_arn = sl_buf_take(&buf, NULL);
    if (q->has_destination_arn) {
        gw__act_queue_arn(ctx, dst.tenant, dst.name, &buf);
        rec->dest_arn = sl_buf_take(&buf, NULL);
    }
    gw_sqs_move_handle_encode(rec->id, rec->source_arn, &buf);
    rec->handle = sl_buf_take(&buf, NULL);
    rec->source_id = src.id;
    rec->rate = q->has_max_per_second ? q->max_per_second : 0;
    rec->to_move = counts.ready > 0 ? counts.ready : 0;
    rec->started_ms = sl_wall_ms();
    rec->status = MOVE_RUNNING;

    struct move_runner *r = sl_xcalloc(1, sizeof *r);
    r->reg = reg;
    r->rec = rec;
    r->loop = ctx->loop;
    r->source_id = src.id;
    r->dest_id = q->has_destination_arn ? dst.id : 0;
    r->rate = rec->rate;
    r->to_move = rec->to_move;
    r->tokens_milli = 1000; /* the first message goes at once */
    r->last_ms = uv_now(ctx->loop->loop);
    r->nparts = part_engine_partitions(ctx->api->engine);
    r->cursor = sl_xcalloc(r->nparts, sizeof *r->cursor);
    r->part_done = sl_xcalloc(r->nparts, sizeof *r->part_done);
    rec->runner = r;

    pthread_mutex_lock(&reg->mu);
    bool busy = false;
    for (struct move_record *o = reg->records; o != NULL && !busy; o = o->next) {
        busy = o->source_id == src.id && status_active(o->status);
    }
    if (!busy) {
        rec->next = reg->records;
        reg->records = rec;
        r->next = reg->runners;
        if (reg->runners != NULL) {
            reg->runners->prev = r;
        }
        reg->runners = r;
        registry_prune(reg, src.id);
    }
    pthread_mutex_unlock(&reg->mu);
    if (busy) {
        free(r->cursor);
        free(r->part_done);
        free(r);
        record_free(rec);
        fail(ctx, GW_SQS_E_INVALID_PARAMETER_VALUE,
             "There is already a task running. Only one active task is allowed for a source "
             "queue arn at a given time.");
        return;
    }
    sl_log(SL_LOG_INFO, LOG_MOD, "task %s: %s -> %s, %lld messages, rate %d/s", rec->id,
           rec->source_arn, rec->dest_arn ? rec->dest_arn : "(each message's source)",
           (long long)rec->to_move, rec->rate);
    uv_timer_init(ctx->loop->loop, &r->timer);
    r->timer.data = r;
    uv_timer_start(&r->timer, runner_tick, 0, 0);
    struct gw_sqs_reply reply;
    gw__act_reply_init(ctx, &reply);
    gw_sqs_reply_task_handle(&reply, rec->handle);
    gw__act_finish(ctx, &reply);
    gw_sqs_reply_fini(&reply);
}

/* ---- ListMessageMoveTasks ---------------------------------------------------- */

void gw__act_list_message_move_tasks(struct gw_act_ctx *ctx)
{
    const struct gw_sqs_list_message_move_tasks_req *q = &ctx->req.u.list_message_move_tasks;
    struct gw_queue src;
    if (resolve_arn(ctx, q->source_arn, &src) != SL_OK) {
        fail_missing(ctx, "SourceArn");
        return;
    }
    if (admit(ctx, &src) != SL_OK) {
        return;
    }
    struct gw_move_registry *reg = registry_if_any(ctx->api);
    struct gw_sqs_reply reply;
    gw__act_reply_init(ctx, &reply);
    if (reg == NULL) {
        gw_sqs_reply_move_tasks(&reply, NULL, 0);
        gw__act_finish(ctx, &reply);
        gw_sqs_reply_fini(&reply);
        return;
    }
    struct gw_sqs_move_task out[MOVE_HISTORY];
    size_t n = 0;
    size_t max = (size_t)SL_MIN(SL_MAX(q->max_results, 1), MOVE_HISTORY);
    pthread_mutex_lock(&reg->mu);
    for (struct move_record *r = reg->records; r != NULL && n < max; r = r->next) {
        if (r->source_id != src.id) {
            continue;
        }
        out[n++] = (struct gw_sqs_move_task){
            .task_handle = r->status == MOVE_RUNNING ? r->handle : NULL,
            .status = STATUS_NAME[r->status],
            .source_arn = r->source_arn,
            .destination_arn = r->dest_arn,
            .max_per_second = r->rate,
            .moved = r->moved,
            .to_move = r->to_move,
            .failure_reason = r->status == MOVE_FAILED ? r->failure : NULL,
            .started_ms = r->started_ms,
        };
    }
    /* Encoded under the lock: the strings belong to records a concurrent
     * start may prune. */
    gw_sqs_reply_move_tasks(&reply, out, n);
    pthread_mutex_unlock(&reg->mu);
    gw__act_finish(ctx, &reply);
    gw_sqs_reply_fini(&reply);
}

/* ---- CancelMessageMoveTask --------------------------------------------------- */

void gw__act_cancel_message_move_task(struct gw_act_ctx *ctx)
{
    const struct gw_sqs_cancel_message_move_task_req *q = &ctx->req.u.cancel_message_move_task;
    char task_id[GW_SQS_TASK_ID_LEN + 1];
    struct sl_buf arn;
    sl_buf_init(&arn);
    if (!gw_sqs_move_handle_decode(q->task_handle, task_id, &arn)) {
        sl_buf_free(&arn);
        fail(ctx, GW_SQS_E_INVALID_PARAMETER_VALUE, "Value for parameter TaskHandle is invalid.");
        return;
    }
    struct gw_queue src;
    bool found = resolve_arn(ctx, (struct sl_slice){arn.p, arn.n}, &src) == SL_OK;
    sl_buf_free(&arn);
    if (!found) {
        fail_missing(ctx, "SourceArn");
        return;
    }
    if (admit(ctx, &src) != SL_OK) {
        return;
    }
    struct gw_move_registry *reg = registry_if_any(ctx->api);
    bool cancelled = false;
    int64_t moved = 0;
    if (reg != NULL) {
        pthread_mutex_lock(&reg->mu);
    }
    for (struct move_record *r = reg != NULL ? reg->records : NULL; r != NULL; r = r->next) {
        if (r->source_id == src.id && strcmp(r->id, task_id) == 0 && r->status == MOVE_RUNNING) {
            /* The runner sees it at its next tick (or when its batch in
             * flight commits): CANCELLING until then. */
            r->status = MOVE_CANCELLING;
            moved = r->moved;
            cancelled = true;
            break;
        }
    }
    if (reg != NULL) {
        pthread_mutex_unlock(&reg->mu);
    }
    if (!cancelled) {
        /* Only a RUNNING task can be cancelled, as SQS answers. */
        fail(ctx, GW_SQS_E_RESOURCE_NOT_FOUND, "Task does not exist.");
        return;
    }
    struct gw_sqs_reply reply;
    gw__act_reply_init(ctx, &reply);
    gw_sqs_reply_moved(&reply, moved);
    gw__act_finish(ctx, &reply);
    gw_sqs_reply_fini(&reply);
}

/* ---- shutdown ---------------------------------------------------------------- */

static void move_loop_drain(struct gw_api_loop *l)
{
    struct gw_move_registry *reg = registry_if_any(l->api);
    if (reg == NULL) {
        return;
    }
    /* Collect first: runner_finish takes the mutex. */
    struct move_runner *mine[64];
    size_t n;
    do {
        n = 0;
        pthread_mutex_lock(&reg->mu);
        for (struct move_runner *r = reg->runners; r != NULL && n < 64; r = r->next) {
            if (r->loop == l && !r->stopping) {
                r->stopping = true;
                mine[n++] = r;
            }
        }
        pthread_mutex_unlock(&reg->mu);
        for (size_t i = 0; i < n; i++) {
            /* One in flight finishes from its completion -- or, if the
             * client closes first, stays listed for move_api_free. */
            if (!mine[i]->job_inflight) {
                runner_finish(mine[i], MOVE_FAILED, "ServiceUnavailable");
            }
        }
    } while (n == 64);
}

static void move_api_free(struct gw_api *api)
{
    struct gw_move_registry *reg = api->moves;
    if (reg == NULL) {
        return;
    }
    /* Every loop has stopped: runners still listed had a batch in flight
     * when their loop closed (its completion was dropped) or were never
     * drained; their timers were closed with the loop. */
    while (reg->runners != NULL) {
        struct move_runner *r = reg->runners;
        reg->runners = r->next;
        free(r->cursor);
        free(r->part_done);
        free(r);
    }
    while (reg->records != NULL) {
        struct move_record *r = reg->records;
        reg->records = r->next;
        record_free(r);
    }
    pthread_mutex_destroy(&reg->mu);
    free(reg);
    api->moves = NULL;
}

const struct gw_act_hooks gw__act_move_hooks = {
    .loop_drain = move_loop_drain,
    .api_free = move_api_free,
};
