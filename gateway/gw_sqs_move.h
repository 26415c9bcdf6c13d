/*
 * gw_sqs_move.h -- (gateway-internal) the wire side of SQS message move
 * tasks (DLQ redrive): reply bodies of StartMessageMoveTask,
 * ListMessageMoveTasks and CancelMessageMoveTask, and the TaskHandle.
 *
 * Pure like gw_sqs.h: no I/O, no clock. Any thread.
 *
 * TaskHandle: standard base64 of {"taskId":"<uuid>","sourceArn":"<arn>"},
 * the shape SQS uses (LocalStack and moto decode it the same way), so a
 * handle names its source queue and Cancel can answer "no such source"
 * apart from "no such task".
 */
#ifndef SLUICE_GW_SQS_MOVE_H
#define SLUICE_GW_SQS_MOVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sl.h"

struct json_t;

/* One task as ListMessageMoveTasks shows it. NULL strings and zero
 * numbers marked "absent" are left out of the reply. */
struct gw_sqs_move_task {
    const char *task_handle; /* only while RUNNING; NULL otherwise */
    const char *status;      /* RUNNING, COMPLETED, CANCELLING, CANCELLED, FAILED */
    const char *source_arn;
    const char *destination_arn; /* NULL: each message back to its source */
    int32_t max_per_second;      /* 0: absent */
    int64_t moved;
    int64_t to_move;
    const char *failure_reason; /* FAILED only */
    uint64_t started_ms;        /* epoch ms, a JSON number */
};

/* {"TaskHandle": handle} */
struct json_t *gw_sqs_encode_task_handle(const char *handle);
/* {"Results": [...]} in the order given (newest first). */
struct json_t *gw_sqs_encode_move_tasks(const struct gw_sqs_move_task *tasks, size_t n);
/* {"ApproximateNumberOfMessagesMoved": moved} */
struct json_t *gw_sqs_encode_moved(int64_t moved);

#define GW_SQS_TASK_ID_LEN 36

/* Appends the handle of (task_id, source_arn) to out. */
void gw_sqs_move_handle_encode(const char *task_id, const char *source_arn, struct sl_buf *out);
/* Splits a handle. False for anything that is not base64 of a JSON object
 * with a UUID-length taskId and a non-empty sourceArn (SQS then answers
 * InvalidParameterValue). On success task_id holds the id and source_arn
 * (reset first) the ARN. */
bool gw_sqs_move_handle_decode(struct sl_slice handle, char task_id[GW_SQS_TASK_ID_LEN + 1],
                               struct sl_buf *source_arn);

#endif
