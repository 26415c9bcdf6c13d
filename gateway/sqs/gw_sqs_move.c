/*
 * gw_sqs_move.c -- the TaskHandle of SQS message move tasks (see
 * gw_sqs.h).
 *
 * Threading: any thread.
 */
#include "gw_sqs.h"

#include <stdlib.h>
#include <string.h>

#include <jansson.h>

void gw_sqs_move_handle_encode(const char *task_id, const char *source_arn, struct sl_buf *out)
{
    json_t *doc = json_object();
    json_object_set_new(doc, "taskId", json_string(task_id));
    json_object_set_new(doc, "sourceArn", json_string(source_arn));
    char *text = json_dumps(doc, JSON_COMPACT);
    json_decref(doc);
    size_t n = strlen(text);
    size_t at = out->n;
    sl_buf_reserve(out, sl_base64_encoded_len(n) + 1);
    sl_base64_encode((const uint8_t *)text, n, out->p + at);
    out->n = at + sl_base64_encoded_len(n);
    out->p[out->n] = '\0';
    free(text);
}

#define MAX_HANDLE_LEN 2048

bool gw_sqs_move_handle_decode(struct sl_slice handle, char task_id[GW_SQS_TASK_ID_LEN + 1],
                               struct sl_buf *source_arn)
{
    sl_buf_reset(source_arn);
    if (handle.n == 0 || handle.n > MAX_HANDLE_LEN) {
        return false;
    }
    uint8_t raw[MAX_HANDLE_LEN];
    size_t len = 0;
    if (sl_base64_decode(handle.p, handle.n, raw, &len) != SL_OK) {
        return false;
    }
    json_t *doc = json_loadb((const char *)raw, len, JSON_REJECT_DUPLICATES, NULL);
    const char *id = json_string_value(json_object_get(doc, "taskId"));
    const char *arn = json_string_value(json_object_get(doc, "sourceArn"));
    bool ok = id != NULL && arn != NULL && strlen(id) == GW_SQS_TASK_ID_LEN && arn[0] != '\0';
    if (ok) {
        memcpy(task_id, id, GW_SQS_TASK_ID_LEN + 1);
        sl_buf_append_cstr(source_arn, arn);
    }
    json_decref(doc);
    return ok;
}
