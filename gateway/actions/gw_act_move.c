/*
 * gw_act_move.c -- SQS message move tasks (DLQ redrive):
 * StartMessageMoveTask, ListMessageMoveTasks, CancelMessageMoveTask, as
 * SQS shapes them, over the task machinery of gw_move.c (which the admin
 * API's /api/redrives shares, so both list the same tasks).
 *
 * Tenant isolation: a task's source and destination are ARNs whose
 * account is the tenant; a tenant reaches only its own (others answer as
 * nonexistent), the admin any configured tenant's. Source and destination
 * are always of one tenant, which is also what lets the engine move a row
 * in place (a tenant's queues share its partitions).
 *
 * Threading: loop threads.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gw_act.h"

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
    if (gw__act_not_ready(ctx) != SL_OK) {
        return; /* a node catching up cannot tell */
    }
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
    struct sl_buf source_arn, dest_arn;
    sl_buf_init(&source_arn);
    sl_buf_init(&dest_arn);
    gw__act_queue_arn(ctx, src.tenant, src.name, &source_arn);
    if (q->has_destination_arn) {
        gw__act_queue_arn(ctx, dst.tenant, dst.name, &dest_arn);
    }
    const struct gw_move_spec spec = {
        .tenant = src.tenant,
        .source = src.name,
        .source_id = src.id,
        .source_arn = source_arn.p,
        .destination = q->has_destination_arn ? dst.name : NULL,
        .dest_id = q->has_destination_arn ? dst.id : 0,
        .dest_arn = q->has_destination_arn ? dest_arn.p : NULL,
        .rate = q->has_max_per_second ? q->max_per_second : 0,
        .to_move = counts.ready,
    };
    char id[GW_SQS_TASK_ID_LEN + 1];
    int rc = gw__move_start(ctx->loop, &spec, id);
    struct sl_buf handle;
    sl_buf_init(&handle);
    if (rc == SL_OK) {
        gw_sqs_move_handle_encode(id, source_arn.p, &handle);
    }
    sl_buf_free(&source_arn);
    sl_buf_free(&dest_arn);
    if (rc != SL_OK) {
        fail(ctx, GW_SQS_E_INVALID_PARAMETER_VALUE,
             "There is already a task running. Only one active task is allowed for a source "
             "queue arn at a given time.");
        return;
    }
    struct gw_sqs_reply reply;
    gw__act_reply_init(ctx, &reply);
    gw_sqs_reply_task_handle(&reply, handle.p);
    gw__act_finish(ctx, &reply);
    gw_sqs_reply_fini(&reply);
    sl_buf_free(&handle);
}

/* ---- ListMessageMoveTasks ---------------------------------------------------- */

struct list_acc {
    struct gw_sqs_move_task out[GW_MOVE_HISTORY];
    size_t n;
};

static char *dup_or_null(const char *s)
{
    return s != NULL ? sl_xstrdup(s) : NULL;
}

/* Copies a task: its strings are valid during the visit only (status is
 * a static name). */
static void list_one(void *arg, const struct gw_move_view *v)
{
    struct list_acc *acc = arg;
    const struct gw_op_task *t = &v->task;
    acc->out[acc->n++] = (struct gw_sqs_move_task){
        .task_handle = v->running ? sl_xstrdup(v->handle) : NULL,
        .status = t->status,
        .source_arn = sl_xstrdup(t->source_arn),
        .destination_arn = dup_or_null(t->dest_arn),
        .max_per_second = t->rate,
        .moved = t->moved,
        .to_move = t->to_move,
        .failure_reason = dup_or_null(t->error),
        .started_ms = t->started_ms,
    };
}

static void list_free(struct list_acc *acc)
{
    for (size_t i = 0; i < acc->n; i++) {
        free((char *)acc->out[i].task_handle);
        free((char *)acc->out[i].source_arn);
        free((char *)acc->out[i].destination_arn);
        free((char *)acc->out[i].failure_reason);
    }
}

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
    size_t max = (size_t)SL_MIN(SL_MAX(q->max_results, 1), GW_MOVE_HISTORY);
    struct gw_sqs_reply reply;
    gw__act_reply_init(ctx, &reply);
    struct list_acc acc = {.n = 0};
    gw__move_visit(ctx->api, src.id, NULL, NULL, max, list_one, &acc);
    gw_sqs_reply_move_tasks(&reply, acc.out, acc.n);
    list_free(&acc);
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
    int64_t moved = 0;
    if (gw__move_cancel(ctx->api, src.id, task_id, &moved) != SL_OK) {
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
