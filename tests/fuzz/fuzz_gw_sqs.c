/*
 * fuzz_gw_sqs.c -- the SQS JSON 1.0 protocol layer: the first byte picks an
 * action of gw_actions.def, the rest is the JSON body. Decode; on error,
 * write the error reply and check it is JSON with a __type; on success,
 * write with the direct writers what the action's reply would carry (send
 * results and their MD5s, a send batch with its failed entries, id
 * batches, received messages with every attribute) and check each is a
 * JSON object, then free. Leaks and sanitizer reports fail the run.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "gw_sqs.h"

/* A reply body must parse back as a JSON object (with a __type when it is
 * an error). */
static void check_body(const struct gw_sqs_reply *r, bool error)
{
    json_error_t jerr;
    json_t *back = json_loadb(r->body.p, r->body.n, JSON_ALLOW_NUL, &jerr);
    SL_ASSERT(json_is_object(back));
    SL_ASSERT(!error || json_is_string(json_object_get(back, "__type")));
    json_decref(back);
    struct gw_header h[GW_SQS_REPLY_MAX_HEADERS];
    SL_ASSERT(gw_sqs_reply_headers(r, h) == (error ? 2u : 1u));
}

static void check_error_reply(const struct gw_sqs_err *err)
{
    struct gw_sqs_reply r;
    gw_sqs_reply_init(&r);
    gw_sqs_reply_error(&r, err);
    check_body(&r, true);
    gw_sqs_reply_fini(&r);
}

/* The result of sending e, and the replies of SendMessage and of a
 * ReceiveMessage that returns it with every attribute. */
static void encode_send(const struct gw_sqs_send_entry *e, struct gw_sqs_send_result *res)
{
    *res = (struct gw_sqs_send_result){.id = e->id};
    memset(res->message_id, 'a', 36);
    res->message_id[36] = '\0';
    gw_sqs_send_result_digest(e, res);
    /* what a receive would return: every attribute, through the filter */
    struct sl_slice all = SL_SLICE_LIT("All");
    for (size_t i = 0; i < e->attr_count; i++) {
        SL_ASSERT(gw_sqs_attr_filter_match(&all, 1, e->attrs[i].name));
    }
    struct gw_sqs_tag sys[] = {{SL_SLICE_LIT("AWSTraceHeader"), e->trace_header}};
    struct gw_sqs_received m = {
        .message_id = SL_SLICE_LIT("id"),
        .receipt_handle = SL_SLICE_LIT("rh"),
        .body = e->body,
        .system_attributes = sys,
        .system_attribute_count = e->has_trace_header ? 1 : 0,
        .attrs = e->attrs,
        .attr_count = e->attr_count,
    };
    struct gw_sqs_reply r;
    gw_sqs_reply_init(&r);
    gw_sqs_reply_messages(&r, &m, 1);
    check_body(&r, false);
    gw_sqs_reply_send_result(&r, res);
    check_body(&r, false);
    gw_sqs_reply_fini(&r);
}

static void encode_send_batch(const struct gw_sqs_send_message_batch_req *b)
{
    struct gw_sqs_send_result ok[GW_SQS_MAX_BATCH_ENTRIES];
    struct gw_sqs_batch_failure failed[GW_SQS_MAX_BATCH_ENTRIES];
    size_t n_ok = 0;
    size_t n_failed = 0;
    for (size_t i = 0; i < b->entry_count && i < GW_SQS_MAX_BATCH_ENTRIES; i++) {
        if (b->entries[i].fail == NULL) {
            encode_send(&b->entries[i], &ok[n_ok++]);
        } else {
            check_error_reply(b->entries[i].fail);
            failed[n_failed++] =
                (struct gw_sqs_batch_failure){b->entries[i].id, b->entries[i].fail};
        }
    }
    struct gw_sqs_reply r;
    gw_sqs_reply_init(&r);
    gw_sqs_reply_send_batch(&r, ok, n_ok, failed, n_failed);
    check_body(&r, false);
    gw_sqs_reply_fini(&r);
}

/* DeleteMessageBatch / ChangeMessageVisibilityBatch: the even entries
 * succeed, the odd ones fail. */
static void encode_id_batch(const struct gw_sqs_receipt_batch_req *b)
{
    struct sl_slice ok[GW_SQS_MAX_BATCH_ENTRIES];
    struct gw_sqs_batch_failure failed[GW_SQS_MAX_BATCH_ENTRIES];
    struct gw_sqs_err invalid;
    gw_sqs_err_set(&invalid, GW_SQS_E_RECEIPT_HANDLE_IS_INVALID, NULL);
    size_t n_ok = 0;
    size_t n_failed = 0;
    for (size_t i = 0; i < b->entry_count && i < GW_SQS_MAX_BATCH_ENTRIES; i++) {
        if (i % 2 == 0) {
            ok[n_ok++] = b->entries[i].id;
        } else {
            failed[n_failed++] = (struct gw_sqs_batch_failure){b->entries[i].id, &invalid};
        }
    }
    struct gw_sqs_reply r;
    gw_sqs_reply_init(&r);
    gw_sqs_reply_id_batch(&r, ok, n_ok, failed, n_failed);
    check_body(&r, false);
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
        struct gw_sqs_send_result res;
        encode_send(&req.u.send_message.msg, &res);
    } else if (action == GW_SQS_ACT_SEND_MESSAGE_BATCH) {
        encode_send_batch(&req.u.send_message_batch);
    } else if (action == GW_SQS_ACT_DELETE_MESSAGE_BATCH) {
        encode_id_batch(&req.u.delete_message_batch);
    } else if (action == GW_SQS_ACT_CHANGE_MESSAGE_VISIBILITY_BATCH) {
        encode_id_batch(&req.u.change_message_visibility_batch);
    }
    gw_sqs_request_fini(&req);
    return 0;
}
