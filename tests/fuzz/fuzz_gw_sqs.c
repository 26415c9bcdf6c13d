/*
 * fuzz_gw_sqs.c -- the SQS JSON 1.0 protocol layer: the first byte picks an
 * action of gw_actions.def, the rest is the JSON body. Decode; on error,
 * encode the error reply and check it is JSON with a __type; on success,
 * encode what the action's reply would carry (send results and their MD5s,
 * received messages with every attribute), then free. Leaks and sanitizer
 * reports fail the run.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "gw_sqs.h"

static void check_error_reply(const struct gw_sqs_err *err)
{
    struct gw_sqs_reply r;
    gw_sqs_reply_init(&r);
    gw_sqs_reply_error(&r, err);
    json_error_t jerr;
    json_t *back = json_loadb(r.body.p, r.body.n, 0, &jerr);
    SL_ASSERT(back != NULL);
    SL_ASSERT(json_is_string(json_object_get(back, "__type")));
    json_decref(back);
    struct gw_header h[2];
    SL_ASSERT(gw_sqs_reply_headers(&r, h) == 2);
    gw_sqs_reply_fini(&r);
}

static void encode_send(const struct gw_sqs_send_entry *e)
{
    struct gw_sqs_send_result res = {.id = e->id};
    memset(res.message_id, 'a', 36);
    res.message_id[36] = '\0';
    gw_sqs_send_result_digest(e, &res);
    /* what a receive would return: every attribute, through the filter */
    struct sl_slice all = SL_SLICE_LIT("All");
    for (size_t i = 0; i < e->attr_count; i++) {
        SL_ASSERT(gw_sqs_attr_filter_match(&all, 1, e->attrs[i].name));
    }
    struct gw_sqs_received m = {
        .message_id = SL_SLICE_LIT("id"),
        .receipt_handle = SL_SLICE_LIT("rh"),
        .body = e->body,
        .attrs = e->attrs,
        .attr_count = e->attr_count,
    };
    struct gw_sqs_reply r;
    gw_sqs_reply_init(&r);
    gw_sqs_reply_ok(&r, gw_sqs_encode_messages(&m, 1));
    gw_sqs_reply_ok(&r, gw_sqs_encode_send_result(&res));
    gw_sqs_reply_fini(&r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) {
        return 0;
    }
    enum gw_sqs_action action = (enum gw_sqs_action)(data[0] % GW_SQS_ACT__COUNT);
    struct sl_slice body = {(const char *)data + 1, size - 1};
    struct gw_sqs_request req;
    struct gw_sqs_err err;
    int rc = gw_sqs_decode(action, body, &req, &err);
    if (rc != SL_OK) {
        check_error_reply(&err);
    } else if (action == GW_SQS_ACT_SEND_MESSAGE) {
        encode_send(&req.u.send_message.msg);
    } else if (action == GW_SQS_ACT_SEND_MESSAGE_BATCH) {
        const struct gw_sqs_send_message_batch_req *b = &req.u.send_message_batch;
        for (size_t i = 0; i < b->entry_count; i++) {
            if (b->entries[i].fail == NULL) {
                encode_send(&b->entries[i]);
            } else {
                check_error_reply(b->entries[i].fail);
            }
        }
    }
    gw_sqs_request_fini(&req);
    return 0;
}
