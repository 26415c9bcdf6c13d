/*
 * gw_move.c -- message move tasks (gw_act.h): the registry of every
 * task, the runner that moves a DLQ's ready messages in part_move
 * batches, and the durable history in ops.db.
 *
 * A task moves the ready messages of a dead-letter queue back to the
 * queue each came from (no destination) or to one destination, one
 * partition per job, one transaction per job, so every batch is committed
 * whole or not at all and a moved message is never lost or doubled, even
 * across a crash.
 *
 * Task state machine (status as ListMessageMoveTasks and /api/redrives
 * show it):
 *
 *   RUNNING --all ready messages seen, or ToMove reached--> COMPLETED
 *   RUNNING --cancel--> CANCELLING --next tick--> CANCELLED
 *   RUNNING --queue deleted / storage failure--> FAILED (failure reason)
 *   RUNNING or CANCELLING at a stop --restart--> FAILED ("Interrupted")
 *
 * A destination paused for enqueue (gw_act.h) takes no message from a
 * redrive either: the task stays RUNNING and waits ("held"), moving what
 * goes elsewhere, and carries on where it stopped once the pause is
 * lifted. It does not fail: a pause is the operator's brake, usually
 * lifted minutes later, and a failed task would leave them to start the
 * redrive again by hand; cancel stops a held task as any other. Each
 * batch is checked in the partition's transaction (part_move_req.held),
 * so a row is either moved whole before the pause or stays in the DLQ.
 *
 * Pacing: a uv_timer on the loop that started the task. With a rate a
 * token bucket (refilled every tick, at most one second of tokens) sizes
 * each batch; without it each batch is PART_MAX_MOVE rows and the next
 * one starts as soon as the last commits ("as fast as the system
 * allows", while other jobs interleave at the writer). One job in flight
 * per task.
 *
 * Durability: every change of a record's status is written to ops.db
 * before the registry lets go of it, and its progress at most once a
 * second, so after a crash the history says at most a second less than
 * was moved (the messages themselves are exact: they are in the
 * partitions).
 *
 * Threading: runners on loop threads. A record's mutable fields are
 * guarded by the registry mutex (visit and cancel may come on another
 * loop than the runner's, or from the admin listener); a runner (timer,
 * cursors) belongs to its loop alone. ops.db writes happen under the
 * registry mutex: they are rare, and so a record is never pruned while
 * being written.
 *
 * Ownership: the registry owns records; a runner is owned by its loop
 * and freed in its timer's close callback; it stops touching its record
 * once it wrote a final status.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include "gw_act.h"

#define LOG_MOD "move"
#define MOVE_TICK_MS 100           /* pacing granularity with a rate, and cancel latency */
#define MOVE_PERSIST_EVERY_MS 1000 /* progress written to ops.db at most this often */
#define MOVE_HELD_RETRY_MS 1000    /* a partition held by a paused destination is retried */

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
    char *source;
    char *destination; /* NULL: each message back to its source */
    char *handle;
    char *source_arn;
    char *dest_arn;
    uint64_t source_id;
    int32_t rate; /* 0: as fast as the system allows */
    int64_t to_move;
    uint64_t started_ms;
    /* registry mutex */
    enum move_status status;
    int64_t moved;
    char *failure;              /* owned; NULL: none */
    uint64_t finished_ms;       /* 0: not finished */
    uint64_t persisted_ms;      /* when progress was last written */
    bool held;                  /* waiting for a destination paused for enqueue */
    struct move_runner *runner; /* while RUNNING / CANCELLING */
};

struct gw_move_registry {
    pthread_mutex_t mu;
    struct move_record *records;
    struct move_runner *runners; /* every live runner, for shutdown */
    struct gw_opstore *ops;      /* borrowed from the api */
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
    uint64_t *held_ms; /* per partition: uv_now when a paused destination held it; 0: not */
    bool job_inflight; /* a part_move is out */
    bool stopping;     /* shutdown: take no more batches */
    bool finished;     /* final status written; timer closing */
};

/* ---- records ------------------------------------------------------------- */

static char *dup_or_null(const char *s)
{
    return s != NULL ? sl_xstrdup(s) : NULL;
}

static void record_free(struct move_record *r)
{
    free(r->source);
    free(r->destination);
    free(r->handle);
    free(r->source_arn);
    free(r->dest_arn);
    free(r->failure);
    free(r);
}

static bool status_active(enum move_status s)
{
    return s == MOVE_RUNNING || s == MOVE_CANCELLING;
}

/* r's stored form (borrowing r's strings). Registry mutex held. */
static struct gw_op_task record_task(const struct move_record *r)
{
    return (struct gw_op_task){
        .id = r->id,
        .tenant = r->tenant,
        .source = r->source,
        .source_arn = r->source_arn,
        .destination = r->destination,
        .dest_arn = r->dest_arn,
        .source_id = r->source_id,
        .rate = r->rate,
        .to_move = r->to_move,
        .moved = r->moved,
        .status = STATUS_NAME[r->status],
        .error = r->status == MOVE_FAILED ? r->failure : NULL,
        .started_ms = r->started_ms,
        .finished_ms = r->finished_ms,
    };
}

/* Writes r to ops.db. Registry mutex held. */
static void record_persist(struct gw_move_registry *reg, struct move_record *r)
{
    if (reg->ops == NULL) {
        return;
    }
    const struct gw_op_task t = record_task(r);
    gw_opstore_put_task(reg->ops, &t, GW_MOVE_HISTORY);
    r->persisted_ms = sl_wall_ms();
}

/* Drops the oldest finished records of source_id beyond GW_MOVE_HISTORY.
 * Registry mutex held. */
static void registry_prune(struct gw_move_registry *reg, uint64_t source_id)
{
    size_t seen = 0;
    for (struct move_record **pp = &reg->records; *pp != NULL;) {
        struct move_record *r = *pp;
        if (r->source_id == source_id && ++seen > GW_MOVE_HISTORY && !status_active(r->status)) {
            *pp = r->next;
            record_free(r);
            continue;
        }
        pp = &r->next;
    }
}

/* ---- the runner -------------------------------------------------------------- */

static void runner_closed(uv_handle_t *h)
{
    struct move_runner *r = h->data;
    free(r->cursor);
    free(r->part_done);
    free(r->held_ms);
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
    r->rec->failure = dup_or_null(failure);
    r->rec->finished_ms = sl_wall_ms();
    r->rec->held = false;
    r->rec->runner = NULL;
    runner_unlist(r);
    /* A stop leaves a running task RUNNING in ops.db: the next start
     * calls it Interrupted, which is what it was. */
    if (!(status == MOVE_FAILED && (r->stopping || r->loop->draining))) {
        record_persist(r->reg, r->rec);
    }
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

/* A task's FailureReason for what stopped it: SQS's error code, as
 * ListMessageMoveTasks shows it. */
static const char *failure_reason(int rc)
{
    switch (rc) {
    case SL_ENOTFOUND: /* the DLQ, or the explicit destination, was deleted */
        return "AWS.SimpleQueueService.NonExistentQueue";
    case SL_ECLOSED:
        return "ServiceUnavailable";
    default:
        return "InternalError";
    }
}

/* part_move_req.held: on a writer thread (gw__pause_flags is safe there). */
static bool dest_held(void *api, uint64_t dest_queue_id)
{
    return (gw__pause_flags(api, dest_queue_id) & GW_PAUSE_ENQUEUE) != 0;
}

/* Records whether r waits for a paused destination, for the task's view
 * and one log line at each change. */
static void runner_set_held(struct move_runner *r, bool held)
{
    pthread_mutex_lock(&r->reg->mu);
    bool was = r->rec->held;
    r->rec->held = held;
    pthread_mutex_unlock(&r->reg->mu);
    if (held != was) {
        sl_log(SL_LOG_INFO, LOG_MOD,
               held ? "task %s on %s waits: what it has left goes to a queue paused for enqueue "
                      "(%lld moved)"
                    : "task %s on %s goes on: its destinations take messages again (%lld moved)",
               r->rec->id, r->rec->source_arn, (long long)r->moved);
    }
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
        r->held_ms[r->job_part] = res->move_held ? SL_MAX(uv_now(r->loop->loop), 1) : 0;
        r->next_part = (r->job_part + 1) % r->nparts;
        pthread_mutex_lock(&r->reg->mu);
        r->rec->moved = r->moved;
        if (sl_wall_ms() - r->rec->persisted_ms >= MOVE_PERSIST_EVERY_MS) {
            record_persist(r->reg, r->rec);
        }
        pthread_mutex_unlock(&r->reg->mu);
    } else if (status == SL_ECLOSED) {
        r->stopping = true;
    } else {
        runner_finish(r, MOVE_FAILED, failure_reason(status));
        return;
    }
    if (r->stopping) {
        runner_finish(r, MOVE_FAILED, "ServiceUnavailable");
        return;
    }
    runner_schedule(r);
}

/* Into *p the next partition with ready messages of the source left to
 * look at, or UINT32_MAX when none is; *held tells whether some were
 * passed over because a paused destination held them a moment ago.
 * SL_OK, or SL_ENOTFOUND when the source is gone: a task whose DLQ was
 * deleted under it failed, it did not complete (the messages it had not
 * moved went with the queue). */
static int next_partition(struct move_runner *r, struct part_engine *e, uint32_t *p, bool *held)
{
    uint64_t now = uv_now(r->loop->loop);
    *held = false;
    for (uint32_t i = 0; i < r->nparts; i++) {
        *p = (r->next_part + i) % r->nparts;
        if (r->part_done[*p]) {
            continue;
        }
        if (r->held_ms[*p] != 0 && now - r->held_ms[*p] < MOVE_HELD_RETRY_MS) {
            *held = true;
            continue;
        }
        struct part_counts c;
        int rc = part_queue_counts(e, r->source_id, *p, &c);
        if (rc != SL_OK) {
            return rc;
        }
        if (c.ready <= 0) {
            r->part_done[*p] = true;
            continue;
        }
        return SL_OK;
    }
    *p = UINT32_MAX;
    /* The scan may have marked the last partitions done because the
     * queue was deleted between two of them: ask once more. */
    struct part_counts c;
    return part_queue_counts(e, r->source_id, PART_ALL_PARTITIONS, &c);
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
    uint32_t p;
    bool held;
    int rc = next_partition(r, e, &p, &held);
    if (rc != SL_OK) {
        runner_finish(r, MOVE_FAILED, failure_reason(rc));
        return;
    }
    /* An explicit destination paused: no batch is worth a writer's time.
     * (One deleted while paused is not waited for: its batch fails.) */
    struct part_counts dc;
    if (p != UINT32_MAX && r->dest_id != 0 && dest_held(r->loop->api, r->dest_id) &&
        part_queue_counts(e, r->dest_id, PART_ALL_PARTITIONS, &dc) == SL_OK) {
        r->held_ms[p] = SL_MAX(uv_now(r->loop->loop), 1);
        p = UINT32_MAX;
        held = true;
    }
    runner_set_held(r, held && p == UINT32_MAX);
    if (held && p == UINT32_MAX) {
        uv_timer_start(&r->timer, runner_tick, MOVE_TICK_MS, 0);
        return;
    }
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
                                .max_messages = want,
                                .held = dest_held,
                                .held_arg = r->loop->api};
    rc = part_move(r->loop->part, &req, (struct part_cookie){.ptr = r}, on_moved);
    if (rc == SL_OK) {
        r->job_part = p;
        r->job_inflight = true;
    } else {
        runner_finish(r, MOVE_FAILED, failure_reason(rc));
    }
}

/* ---- starting, visiting, cancelling ------------------------------------------ */

int gw__move_start(struct gw_api_loop *l, const struct gw_move_spec *spec,
                   char id[GW_SQS_TASK_ID_LEN + 1])
{
    struct gw_api *api = l->api;
    struct gw_move_registry *reg = api->moves;
    struct move_record *rec = sl_xcalloc(1, sizeof *rec);
    sl_uuid4(rec->id);
    snprintf(rec->tenant, sizeof rec->tenant, "%s", spec->tenant);
    rec->source = sl_xstrdup(spec->source);
    rec->destination = dup_or_null(spec->destination);
    rec->source_arn = sl_xstrdup(spec->source_arn);
    rec->dest_arn = dup_or_null(spec->dest_arn);
    struct sl_buf buf;
    sl_buf_init(&buf);
    gw_sqs_move_handle_encode(rec->id, rec->source_arn, &buf);
    rec->handle = sl_buf_take(&buf, NULL);
    rec->source_id = spec->source_id;
    rec->rate = spec->rate;
    rec->to_move = spec->to_move > 0 ? spec->to_move : 0;
    rec->started_ms = sl_wall_ms();
    rec->status = MOVE_RUNNING;

    struct move_runner *r = sl_xcalloc(1, sizeof *r);
    r->reg = reg;
    r->rec = rec;
    r->loop = l;
    r->source_id = spec->source_id;
    r->dest_id = spec->dest_id;
    r->rate = rec->rate;
    r->to_move = rec->to_move;
    r->tokens_milli = 1000; /* the first message goes at once */
    r->last_ms = uv_now(l->loop);
    r->nparts = part_engine_partitions(api->engine);
    r->cursor = sl_xcalloc(r->nparts, sizeof *r->cursor);
    r->part_done = sl_xcalloc(r->nparts, sizeof *r->part_done);
    r->held_ms = sl_xcalloc(r->nparts, sizeof *r->held_ms);
    rec->runner = r;

    pthread_mutex_lock(&reg->mu);
    bool busy = false;
    for (struct move_record *o = reg->records; o != NULL && !busy; o = o->next) {
        busy = o->source_id == spec->source_id && status_active(o->status);
    }
    if (!busy) {
        rec->next = reg->records;
        reg->records = rec;
        r->next = reg->runners;
        if (reg->runners != NULL) {
            reg->runners->prev = r;
        }
        reg->runners = r;
        registry_prune(reg, spec->source_id);
        record_persist(reg, rec);
    }
    pthread_mutex_unlock(&reg->mu);
    if (busy) {
        free(r->cursor);
        free(r->part_done);
        free(r->held_ms);
        free(r);
        record_free(rec);
        return SL_EEXIST;
    }
    sl_log(SL_LOG_INFO, LOG_MOD, "task %s: %s -> %s, %lld messages, rate %d/s", rec->id,
           rec->source_arn, rec->dest_arn ? rec->dest_arn : "(each message's source)",
           (long long)rec->to_move, rec->rate);
    memcpy(id, rec->id, sizeof rec->id);
    uv_timer_init(l->loop, &r->timer);
    r->timer.data = r;
    uv_timer_start(&r->timer, runner_tick, 0, 0);
    return SL_OK;
}

size_t gw__move_visit(struct gw_api *api, uint64_t source_id, const char *tenant, const char *id,
                      size_t max, gw_move_visit_fn *fn, void *arg)
{
    struct gw_move_registry *reg = api->moves;
    size_t n = 0;
    pthread_mutex_lock(&reg->mu);
    for (struct move_record *r = reg->records; r != NULL && n < max; r = r->next) {
        if ((source_id != 0 && r->source_id != source_id) ||
            (tenant != NULL && strcmp(r->tenant, tenant) != 0) ||
            (id != NULL && strcmp(r->id, id) != 0)) {
            continue;
        }
        const struct gw_move_view v = {
            .task = record_task(r),
            .handle = r->handle,
            .running = r->status == MOVE_RUNNING,
            .held = r->held,
        };
        fn(arg, &v);
        n++;
    }
    pthread_mutex_unlock(&reg->mu);
    return n;
}

int gw__move_cancel(struct gw_api *api, uint64_t source_id, const char *id, int64_t *moved)
{
    struct gw_move_registry *reg = api->moves;
    int rc = SL_ENOTFOUND;
    pthread_mutex_lock(&reg->mu);
    for (struct move_record *r = reg->records; r != NULL; r = r->next) {
        if ((source_id == 0 || r->source_id == source_id) && strcmp(r->id, id) == 0 &&
            r->status == MOVE_RUNNING) {
            /* The runner sees it at its next tick (or when its batch in
             * flight commits): CANCELLING until then. */
            r->status = MOVE_CANCELLING;
            *moved = r->moved;
            record_persist(reg, r);
            rc = SL_OK;
            break;
        }
    }
    pthread_mutex_unlock(&reg->mu);
    return rc;
}

/* ---- lifetime ---------------------------------------------------------------- */

/* One stored task into the registry (oldest first, so each goes to the
 * head). A task that was running when the process stopped did not
 * finish: it is FAILED, Interrupted, and written back so. */
static void load_task(void *arg, const struct gw_op_task *t)
{
    struct gw_move_registry *reg = arg;
    if (t->id == NULL || strlen(t->id) != GW_SQS_TASK_ID_LEN || t->tenant == NULL ||
        t->source == NULL || t->source_arn == NULL || t->status == NULL) {
        return;
    }
    struct move_record *r = sl_xcalloc(1, sizeof *r);
    memcpy(r->id, t->id, GW_SQS_TASK_ID_LEN + 1);
    snprintf(r->tenant, sizeof r->tenant, "%s", t->tenant);
    r->source = sl_xstrdup(t->source);
    r->destination = dup_or_null(t->destination);
    r->source_arn = sl_xstrdup(t->source_arn);
    r->dest_arn = dup_or_null(t->dest_arn);
    struct sl_buf buf;
    sl_buf_init(&buf);
    gw_sqs_move_handle_encode(r->id, r->source_arn, &buf);
    r->handle = sl_buf_take(&buf, NULL);
    r->source_id = t->source_id;
    r->rate = t->rate;
    r->to_move = t->to_move;
    r->moved = t->moved;
    r->started_ms = t->started_ms;
    r->finished_ms = t->finished_ms;
    r->failure = dup_or_null(t->error);
    r->status = MOVE_FAILED;
    for (int s = 0; s < (int)SL_ARRAY_LEN(STATUS_NAME); s++) {
        if (strcmp(STATUS_NAME[s], t->status) == 0) {
            r->status = (enum move_status)s;
        }
    }
    bool interrupted = status_active(r->status);
    if (interrupted) {
        r->status = MOVE_FAILED;
        free(r->failure);
        r->failure = sl_xstrdup("Interrupted");
        r->finished_ms = sl_wall_ms();
    }
    r->next = reg->records;
    reg->records = r;
    if (interrupted) {
        sl_log(SL_LOG_WARN, LOG_MOD,
               "task %s on %s was running at the last stop: %lld of %lld messages moved; it is "
               "FAILED (Interrupted), start a new one to move the rest",
               r->id, r->source_arn, (long long)r->moved, (long long)r->to_move);
    }
}

static void move_api_init(struct gw_api *api)
{
    struct gw_move_registry *reg = sl_xcalloc(1, sizeof *reg);
    pthread_mutex_init(&reg->mu, NULL);
    reg->ops = api->ops;
    api->moves = reg;
    if (reg->ops != NULL) {
        gw_opstore_load_tasks(reg->ops, load_task, reg);
        /* Write back the interrupted ones, outside the load's statement. */
        pthread_mutex_lock(&reg->mu);
        for (struct move_record *r = reg->records; r != NULL; r = r->next) {
            if (r->failure != NULL && strcmp(r->failure, "Interrupted") == 0 &&
                r->persisted_ms == 0) {
                record_persist(reg, r);
            }
        }
        pthread_mutex_unlock(&reg->mu);
    }
}

static void move_loop_drain(struct gw_api_loop *l)
{
    struct gw_move_registry *reg = l->api->moves;
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
        free(r->held_ms);
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

const struct gw_act_hooks gw__move_hooks = {
    .api_init = move_api_init,
    .loop_drain = move_loop_drain,
    .api_free = move_api_free,
};
