/*
 * fuzz_gw_sqs_query.c -- the SQS query protocol: the first byte says
 * whether the request was posted to a queue's URL path, the rest is the
 * form. Find its Action (as routing does), decode it; on error, write the
 * XML error reply; on success, write in XML what the action's reply would
 * carry (send results, received messages with every attribute). Every
 * reply must be well-formed: its tags balance. Leaks and sanitizer
 * reports fail the run.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gw_sqs.h"

/* The tags of an XML reply balance and its text holds no raw '<' or '&'
 * that is not a reference (gw_xml.c escapes them). */
static void check_xml(const struct gw_sqs_reply *r)
{
    const char *p = r->body.p;
    const char *end = p + r->body.n;
    SL_ASSERT(r->body.n > 22 && memcmp(p, "<?xml version=\"1.0\"?>", 21) == 0);
    const char *stack[32];
    size_t lens[32];
    size_t depth = 0;
    for (p += 21; p < end; p++) {
        if (*p == '&') {
            const char *semi = memchr(p, ';', (size_t)(end - p));
            SL_ASSERT(semi != NULL && semi - p <= 5);
            continue;
        }
        if (*p != '<') {
            continue;
        }
        const char *close = memchr(p, '>', (size_t)(end - p));
        SL_ASSERT(close != NULL);
        if (close[-1] == '/') {
            p = close;
            continue;
        }
        if (p[1] == '/') {
            SL_ASSERT(depth > 0);
            depth--;
            SL_ASSERT((size_t)(close - p - 2) == lens[depth] &&
                      memcmp(p + 2, stack[depth], lens[depth]) == 0);
        } else {
            SL_ASSERT(depth < 32);
            size_t n = strcspn(p + 1, " >");
            stack[depth] = p + 1;
            lens[depth++] = n;
        }
        p = close;
    }
    SL_ASSERT(depth == 0);
}

static void encode_send(enum gw_sqs_action a, const struct gw_sqs_send_entry *e)
{
    struct gw_sqs_send_result res = {.id = e->id};
    memset(res.message_id, 'a', 36);
    gw_sqs_send_result_digest(e, &res);
    struct gw_sqs_reply r;
    gw_sqs_reply_init_for(&r, GW_SQS_PROTO_QUERY, a, "id");
    if (e->fail != NULL) {
        struct gw_sqs_batch_failure f = {e->id, e->fail};
        gw_sqs_reply_send_batch(&r, NULL, 0, &f, 1);
    } else {
        gw_sqs_reply_send_result(&r, &res);
    }
    check_xml(&r);
    gw_sqs_reply_fini(&r);
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
    gw_sqs_reply_init_for(&r, GW_SQS_PROTO_QUERY, GW_SQS_ACT_RECEIVE_MESSAGE, "id");
    gw_sqs_reply_messages(&r, &m, 1);
    check_xml(&r);
    gw_sqs_reply_fini(&r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) {
        return 0;
    }
    struct sl_slice queue_url =
        (data[0] & 1) ? SL_SLICE_LIT("http://localhost:9324/acme/q") : SL_SLICE_LIT("");
    struct sl_slice form = {(const char *)data + 1, size - 1};
    enum gw_sqs_action routed;
    struct gw_sqs_err err;
    bool has_action = gw_sqs_query_action(form, &routed, &err) == SL_OK;
    struct gw_sqs_request req;
    int rc = gw_sqs_query_decode(form, queue_url, &req, &err);
    SL_ASSERT(rc == SL_OK || rc == SL_EINVAL || rc == SL_ENOMEM);
    struct gw_sqs_reply r;
    if (rc != SL_OK) {
        gw_sqs_reply_init_for(&r, GW_SQS_PROTO_QUERY, has_action ? routed : GW_SQS_ACT__COUNT,
                              "id");
        gw_sqs_reply_error(&r, &err);
        check_xml(&r);
        gw_sqs_reply_fini(&r);
    } else {
        SL_ASSERT(has_action);
        if (req.action == GW_SQS_ACT_SEND_MESSAGE) {
            encode_send(req.action, &req.u.send_message.msg);
        } else if (req.action == GW_SQS_ACT_SEND_MESSAGE_BATCH) {
            for (size_t i = 0; i < req.u.send_message_batch.entry_count; i++) {
                encode_send(req.action, &req.u.send_message_batch.entries[i]);
            }
        } else if (req.action == GW_SQS_ACT_CREATE_QUEUE) {
            gw_sqs_reply_init_for(&r, GW_SQS_PROTO_QUERY, GW_SQS_ACT_LIST_QUEUE_TAGS, "id");
            gw_sqs_reply_string_map(&r, req.u.create_queue.tags, req.u.create_queue.tag_count);
            check_xml(&r);
            gw_sqs_reply_fini(&r);
        }
    }
    gw_sqs_request_fini(&req);
    return 0;
}
