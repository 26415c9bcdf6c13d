/*
 * gw_sqs_move.h -- (gateway-internal) the TaskHandle of SQS message move
 * tasks (DLQ redrive). Their replies are typed like every other
 * (gw_sqs_reply_task_handle and the others in gw_sqs.h).
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
