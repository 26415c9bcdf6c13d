/*
 * fuzz_gw_sqs_hot.c -- the hot message actions' decoder (yajl's events,
 * gateway/sqs/gw_sqs_yajl.c) against the strict path (jansson's document,
 * gw__sqs_decode_strict) on the same bytes: the first byte picks one of
 * the hot actions, the rest is the body. Both must give the same verdict,
 * the same error (code and message), and the same typed request, field by
 * field, including the body's MD5 the hot path takes while decoding. Any
 * difference is a request the gateway would now judge differently.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gw_sqs.h"
#include "gw_sqs_in.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const enum gw_sqs_action hot[] = {
    GW_SQS_ACT_SEND_MESSAGE,
    GW_SQS_ACT_SEND_MESSAGE_BATCH,
    GW_SQS_ACT_RECEIVE_MESSAGE,
    GW_SQS_ACT_DELETE_MESSAGE,
    GW_SQS_ACT_DELETE_MESSAGE_BATCH,
    GW_SQS_ACT_CHANGE_MESSAGE_VISIBILITY,
    GW_SQS_ACT_CHANGE_MESSAGE_VISIBILITY_BATCH,
};

static void put_slice(struct sl_buf *b, const char *name, struct sl_slice s)
{
    char head[64];
    int n = snprintf(head, sizeof(head), "%s[%zu]=", name, s.n);
    sl_buf_append(b, head, (size_t)n);
    if (s.n > 0) {
        sl_buf_append(b, s.p, s.n);
    }
    sl_buf_append(b, "\n", 1);
}

static void put_int(struct sl_buf *b, const char *name, int64_t v)
{
    char line[64];
    int n = snprintf(line, sizeof(line), "%s=%lld\n", name, (long long)v);
    sl_buf_append(b, line, (size_t)n);
}

static void put_queue(struct sl_buf *b, const struct gw_sqs_queue_ref *q)
{
    put_slice(b, "url", q->url);
    put_slice(b, "tenant", q->tenant);
    put_slice(b, "name", q->name);
    put_int(b, "fifo", q->fifo);
}

static void put_send_entry(struct sl_buf *b, const struct gw_sqs_send_entry *e)
{
    put_slice(b, "id", e->id);
    if (e->fail != NULL) {
        put_int(b, "fail", e->fail->code);
        sl_buf_append_cstr(b, e->fail->message);
        return; /* a failed entry's other fields are never read */
    }
    put_slice(b, "body", e->body);
    put_int(b, "delay", e->has_delay_seconds ? e->delay_seconds : -1);
    put_int(b, "size", (int64_t)e->size);
    for (size_t i = 0; i < e->attr_count; i++) {
        put_slice(b, "attr", e->attrs[i].name);
        put_slice(b, "type", e->attrs[i].data_type);
        put_int(b, "kind", e->attrs[i].type);
        put_slice(b, "value", e->attrs[i].value);
    }
    put_slice(b, "trace", e->has_trace_header ? e->trace_header : SL_SLICE_LIT("-"));
    put_slice(b, "group", e->has_group_id ? e->group_id : SL_SLICE_LIT("-"));
    put_slice(b, "dedup", e->has_dedup_id ? e->dedup_id : SL_SLICE_LIT("-"));
    /* the digest the decoder took must be the body's */
    struct gw_sqs_digests d;
    gw_sqs_digests_of(e, &d);
    uint8_t md5[GW_SQS_MD5_LEN];
    gw_sqs_md5(e->body.p, e->body.n, md5);
    if (memcmp(d.bytes, md5, sizeof(md5)) != 0) {
        abort();
    }
}

static void put_receipts(struct sl_buf *b, const struct gw_sqs_receipt_batch_req *q)
{
    put_queue(b, &q->queue);
    for (size_t i = 0; i < q->entry_count; i++) {
        put_slice(b, "id", q->entries[i].id);
        put_slice(b, "handle", q->entries[i].receipt_handle);
        put_int(b, "vis",
                q->entries[i].has_visibility_timeout ? q->entries[i].visibility_timeout : -1);
    }
}

/* Every field a hot action's handler reads, as text. */
static void put_request(struct sl_buf *b, const struct gw_sqs_request *r)
{
    switch (r->action) {
    case GW_SQS_ACT_SEND_MESSAGE:
        put_queue(b, &r->u.send_message.queue);
        put_send_entry(b, &r->u.send_message.msg);
        break;
    case GW_SQS_ACT_SEND_MESSAGE_BATCH:
        put_queue(b, &r->u.send_message_batch.queue);
        put_int(b, "total", (int64_t)r->u.send_message_batch.total_size);
        for (size_t i = 0; i < r->u.send_message_batch.entry_count; i++) {
            put_send_entry(b, &r->u.send_message_batch.entries[i]);
        }
        break;
    case GW_SQS_ACT_RECEIVE_MESSAGE: {
        const struct gw_sqs_receive_message_req *q = &r->u.receive_message;
        put_queue(b, &q->queue);
        put_int(b, "max", q->max_number_of_messages);
        put_int(b, "vis", q->has_visibility_timeout ? q->visibility_timeout : -1);
        put_int(b, "wait", q->has_wait_time_seconds ? q->wait_time_seconds : -1);
        put_int(b, "sys", q->system_attributes);
        for (size_t i = 0; i < q->attribute_filter_count; i++) {
            put_slice(b, "filter", q->attribute_filters[i]);
        }
        put_slice(b, "attempt",
                  q->has_receive_request_attempt_id ? q->receive_request_attempt_id
                                                    : SL_SLICE_LIT("-"));
        break;
    }
    case GW_SQS_ACT_DELETE_MESSAGE:
        put_queue(b, &r->u.delete_message.queue);
        put_slice(b, "handle", r->u.delete_message.receipt_handle);
        break;
    case GW_SQS_ACT_CHANGE_MESSAGE_VISIBILITY:
        put_queue(b, &r->u.change_message_visibility.queue);
        put_slice(b, "handle", r->u.change_message_visibility.receipt_handle);
        put_int(b, "vis", r->u.change_message_visibility.visibility_timeout);
        break;
    case GW_SQS_ACT_DELETE_MESSAGE_BATCH:
        put_receipts(b, &r->u.delete_message_batch);
        break;
    case GW_SQS_ACT_CHANGE_MESSAGE_VISIBILITY_BATCH:
        put_receipts(b, &r->u.change_message_visibility_batch);
        break;
    default:
        abort();
    }
}

/* The verdict and, on success, the request, as text. */
static void decode_to_text(int (*decode)(enum gw_sqs_action, struct sl_slice,
                                         struct gw_sqs_request *, struct gw_sqs_err *),
                           enum gw_sqs_action a, struct sl_slice body, struct sl_buf *out)
{
    struct gw_sqs_request r;
    struct gw_sqs_err err = {0};
    int rc = decode(a, body, &r, &err);
    put_int(out, "rc", rc);
    if (rc == SL_OK) {
        put_request(out, &r);
    } else {
        put_int(out, "code", err.code);
        sl_buf_append_cstr(out, err.message);
    }
    gw_sqs_request_fini(&r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0) {
        return 0;
    }
    enum gw_sqs_action a = hot[data[0] % SL_ARRAY_LEN(hot)];
    SL_ASSERT(gw__sqs_hot_action(a));
    /* a copy of exactly the body, so that a read past it is caught */
    size_t n = size - 1;
    char *body = malloc(n > 0 ? n : 1);
    SL_ASSERT(body != NULL);
    if (n > 0) {
        memcpy(body, data + 1, n);
    }
    struct sl_buf fast, strict;
    sl_buf_init(&fast);
    sl_buf_init(&strict);
    decode_to_text(gw_sqs_decode, a, (struct sl_slice){body, n}, &fast);
    decode_to_text(gw__sqs_decode_strict, a, (struct sl_slice){body, n}, &strict);
    if (fast.n != strict.n || memcmp(fast.p, strict.p, fast.n) != 0) {
        fprintf(stderr, "hot:\n%.*s\nstrict:\n%.*s\n", (int)fast.n, fast.p, (int)strict.n,
                strict.p);
        abort();
    }
    sl_buf_free(&fast);
    sl_buf_free(&strict);
    free(body);
    return 0;
}
