/*
 * gw_admin_redrive.c -- the admin API's redrives: start, list, watch and
 * cancel DLQ move tasks over gw_move.c, the machinery behind SQS's
 * StartMessageMoveTask, so a task started here is listed by
 * ListMessageMoveTasks and the other way round.
 *
 * Queues are named "TENANT/QUEUE" here rather than by ARN: the admin API
 * is not SQS and an operator types them. The rules are SQS's: the source
 * must be some queue's dead-letter queue, the destination (when given) a
 * different queue of the same tenant and type, one running task per
 * source.
 *
 * Stack: above gw_admin_util.c and gw_move.c. Loop threads; a task's
 * runner lives on the admin loop that started it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gw_admin_routes.h"
#include "gw_act.h"

#define REDRIVE_RATE_MAX 500 /* SQS's MaxNumberOfMessagesPerSecond bound */

static json_t *task_json(const struct gw_move_view *v)
{
    const struct gw_op_task *t = &v->task;
    char source[160], dest[160];
    snprintf(source, sizeof source, "%s/%s", t->tenant, t->source);
    if (t->destination != NULL) {
        snprintf(dest, sizeof dest, "%s/%s", t->tenant, t->destination);
    }
    return json_pack("{s:s, s:s, s:s, s:o, s:s, s:b, s:I, s:I, s:i, s:I, s:I, s:o}", "id", t->id,
                     "tenant", t->tenant, "source", source, "destination",
                     t->destination != NULL ? json_string(dest) : json_null(), "status", t->status,
                     "held", v->held, "moved", (json_int_t)t->moved, "total",
                     (json_int_t)t->to_move, "rate", (int)t->rate, "started_ms",
                     (json_int_t)t->started_ms, "finished_ms", (json_int_t)t->finished_ms, "error",
                     t->error != NULL ? json_string(t->error) : json_null());
}

static void append_task(void *arg, const struct gw_move_view *v)
{
    json_array_append_new(arg, task_json(v));
}

static void keep_task(void *arg, const struct gw_move_view *v)
{
    json_t **out = arg;
    *out = task_json(v);
}

void gw__admin_get_redrives(struct gw_admin_req *r)
{
    char tenant[80];
    const char *only = gw__admin_query(r, "tenant", tenant, sizeof tenant);
    json_t *list = json_array();
    gw__move_visit(r->api, 0, only, NULL, SIZE_MAX, append_task, list);
    gw__admin_json(r, 200, json_pack("{s:o}", "tasks", list));
}

void gw__admin_get_redrive(struct gw_admin_req *r)
{
    json_t *task = NULL;
    gw__move_visit(r->api, 0, NULL, r->seg[1], 1, keep_task, &task);
    if (task == NULL) {
        gw__admin_fail(r, 404, "NotFound", "There is no redrive %s.", r->seg[1]);
        return;
    }
    gw__admin_json(r, 200, task);
}

void gw__admin_cancel_redrive(struct gw_admin_req *r)
{
    int64_t moved = 0;
    if (gw__admin_parse_body(r, NULL) != SL_OK) {
        return;
    }
    snprintf(r->detail, sizeof r->detail, "task=%s", r->seg[1]);
    if (gw__move_cancel(r->api, 0, r->seg[1], &moved) != SL_OK) {
        gw__admin_fail(r, 404, "NotFound", "No redrive %s is running.", r->seg[1]);
        return;
    }
    json_t *task = NULL;
    gw__move_visit(r->api, 0, NULL, r->seg[1], 1, keep_task, &task);
    gw__admin_json(r, 200, task != NULL ? task : json_object());
}

/* The queue named by body field key ("T/Q"). SL_OK, or SL_EINVAL /
 * SL_ENOTFOUND after answering. */
static int body_queue(struct gw_admin_req *r, const char *key, struct gw_queue *q)
{
    const char *text = json_string_value(json_object_get(r->body, key));
    char tenant[65], name[GW_SQS_MAX_QUEUE_NAME_LEN + 1];
    if (text == NULL ||
        gw__admin_split_queue(text, tenant, sizeof tenant, name, sizeof name) != SL_OK) {
        gw__admin_fail(r, 400, "BadRequest", "Field \"%s\" must be a queue as \"TENANT/QUEUE\".",
                       key);
        return SL_EINVAL;
    }
    return gw__admin_queue(r, tenant, name, q);
}

void gw__admin_start_redrive(struct gw_admin_req *r)
{
    static const char *const fields[] = {"source", "destination", "rate", NULL};
    struct gw_queue src, dst = {0};
    if (gw__admin_parse_body(r, fields) != SL_OK || body_queue(r, "source", &src) != SL_OK) {
        return;
    }
    json_t *dv = json_object_get(r->body, "destination");
    bool has_dest = dv != NULL && !json_is_null(dv);
    if (has_dest && body_queue(r, "destination", &dst) != SL_OK) {
        return;
    }
    json_t *rv = json_object_get(r->body, "rate");
    json_int_t rate = 0;
    if (rv != NULL && !json_is_null(rv)) {
        rate = json_is_integer(rv) ? json_integer_value(rv) : -1;
        if (rate < 0 || rate > REDRIVE_RATE_MAX) {
            gw__admin_fail(r, 400, "BadRequest",
                           "Field \"rate\" must be a whole number of messages a second from 1 to "
                           "%d (0 or absent: as fast as the gateway allows).",
                           REDRIVE_RATE_MAX);
            return;
        }
    }
    struct part_queue_list sources;
    part_queue_dlq_sources(r->api->engine, src.id, &sources);
    bool is_dlq = sources.count > 0;
    part_queue_list_free(&sources);
    if (!is_dlq) {
        gw__admin_fail(r, 409, "Conflict",
                       "%s/%s is no queue's dead-letter queue (no RedrivePolicy names it).",
                       src.tenant, src.name);
        return;
    }
    if (has_dest &&
        (strcmp(dst.tenant, src.tenant) != 0 || dst.id == src.id || dst.cfg.fifo != src.cfg.fifo)) {
        gw__admin_fail(r, 400, "BadRequest",
                       "The destination must be another queue of the source's tenant and type.");
        return;
    }
    struct part_counts counts = {0};
    part_queue_counts(r->api->engine, src.id, PART_ALL_PARTITIONS, &counts);
    char source_arn[256], dest_arn[256];
    snprintf(source_arn, sizeof source_arn, "arn:aws:sqs:%s:%s:%s", r->snap->region, src.tenant,
             src.name);
    snprintf(dest_arn, sizeof dest_arn, "arn:aws:sqs:%s:%s:%s", r->snap->region, dst.tenant,
             dst.name);
    const struct gw_move_spec spec = {
        .tenant = src.tenant,
        .source = src.name,
        .source_id = src.id,
        .source_arn = source_arn,
        .destination = has_dest ? dst.name : NULL,
        .dest_id = has_dest ? dst.id : 0,
        .dest_arn = has_dest ? dest_arn : NULL,
        .rate = (int32_t)rate,
        .to_move = counts.ready,
    };
    char id[GW_SQS_TASK_ID_LEN + 1];
    if (gw__move_start(&r->l->base, &spec, id) != SL_OK) {
        gw__admin_fail(r, 409, "Conflict", "A redrive of %s/%s is already running.", src.tenant,
                       src.name);
        return;
    }
    snprintf(r->detail, sizeof r->detail, "task=%s source=%s/%s destination=%s%s%s rate=%d", id,
             src.tenant, src.name, has_dest ? dst.tenant : "(sources)", has_dest ? "/" : "",
             has_dest ? dst.name : "", (int)rate);
    json_t *task = NULL;
    gw__move_visit(r->api, 0, NULL, id, 1, keep_task, &task);
    gw__admin_json(r, 201, task != NULL ? task : json_pack("{s:s}", "id", id));
}
