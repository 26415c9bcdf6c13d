/*
 * gw_sqs_encode.c -- replies in the AWS JSON 1.0 protocol as SQS shapes
 * them: success bodies per action, errors as {"__type", "message"} with
 * x-amzn-query-error, and empty 200 bodies for actions without output.
 *
 * Wire: the AWS JSON 1.0 protocol of the SQS Smithy model. No
 * x-amzn-errortype header is sent: the AWS SDK for JavaScript v3 would
 * take the error name from it.
 *
 * Every reply is typed: each gw_sqs_reply_<shape>() writes its body
 * straight into the reply with the JSON writer (gw_text.h), or, when the reply's protocol is
 * the query protocol, hands it to the XML encoder of the same shape
 * (gw_sqs_xml.c). tests/unit/gateway/test_sqs_encode.c and
 * test_sqs_query_xml.c pin the exact bytes of each shape.
 *
 * Threading: pure; any thread.
 */
#include <stdio.h>
#include <string.h>

#include "gw_text.h"
#include "gw_sqs.h"
#include "gw_sqs_xml.h"

#define CONTENT_TYPE "application/x-amz-json-1.0"
#define XML_CONTENT_TYPE "text/xml"

/* Makes r a 200 reply with an empty body, ready for a writer. */
static void reply_ok_begin(struct gw_sqs_reply *r, struct gw_json *w)
{
    r->status = 200;
    r->error = GW_SQS_OK;
    r->query_error[0] = '\0';
    sl_buf_reset(&r->body);
    gw_json_init(w, &r->body);
}

/* An error's message as JSON: cut at a byte limit, a message that quotes
 * client bytes may end inside a UTF-8 sequence; then the table's default
 * message stands in for it, as when the replies were jansson trees. */
static void write_message(struct gw_json *w, const struct gw_sqs_err *err,
                          const struct gw_sqs_error_info *info)
{
    struct sl_slice msg = sl_slice_cstr(err->message);
    gw_json_string(w, gw_json_utf8_valid(msg) ? msg : sl_slice_cstr(info->message));
}

void gw_sqs_reply_init(struct gw_sqs_reply *r)
{
    gw_sqs_reply_init_for(r, GW_SQS_PROTO_JSON, GW_SQS_ACT__COUNT, NULL);
}

void gw_sqs_reply_init_for(struct gw_sqs_reply *r, enum gw_sqs_protocol protocol,
                           enum gw_sqs_action action, const char *request_id)
{
    memset(r, 0, sizeof(*r));
    sl_buf_init(&r->body);
    r->status = 200;
    r->protocol = protocol;
    r->action = action;
    r->request_id = request_id;
}

static bool is_xml(const struct gw_sqs_reply *r)
{
    return r->protocol == GW_SQS_PROTO_QUERY;
}

void gw_sqs_reply_fini(struct gw_sqs_reply *r)
{
    sl_buf_free(&r->body);
}

void gw_sqs_reply_error(struct gw_sqs_reply *r, const struct gw_sqs_err *err)
{
    const struct gw_sqs_error_info *info = gw_sqs_error_info(err->code);
    r->status = info->status;
    r->error = err->code;
    snprintf(r->query_error, sizeof(r->query_error), "%s;%s", info->query_code,
             info->sender ? "Sender" : "Receiver");
    if (is_xml(r)) {
        gw__sqs_xml_error(r, err);
        return;
    }
    sl_buf_reset(&r->body);
    struct gw_json w;
    gw_json_init(&w, &r->body);
    gw_json_object_begin(&w);
    gw_json_key_lit(&w, "__type");
    gw_json_cstr(&w, info->type);
    gw_json_key_lit(&w, "message");
    write_message(&w, err, info);
    gw_json_object_end(&w);
}

void gw_sqs_reply_empty(struct gw_sqs_reply *r)
{
    if (is_xml(r)) {
        gw__sqs_xml_empty(r);
        return;
    }
    r->status = 200;
    r->error = GW_SQS_OK;
    r->query_error[0] = '\0';
    sl_buf_reset(&r->body);
}

void gw_sqs_reply_retry_after(struct gw_sqs_reply *r, uint64_t retry_after_ns)
{
    r->retry_after[0] = '\0';
    if (retry_after_ns == 0 || retry_after_ns == UINT64_MAX) {
        return;
    }
    uint64_t s = retry_after_ns / 1000000000u + (retry_after_ns % 1000000000u != 0);
    snprintf(r->retry_after, sizeof r->retry_after, "%llu", (unsigned long long)SL_MIN(s, 86400u));
}

size_t gw_sqs_reply_headers(const struct gw_sqs_reply *r,
                            struct gw_header out[GW_SQS_REPLY_MAX_HEADERS])
{
    size_t n = 0;
    if (is_xml(r)) {
        out[n++] = (struct gw_header){SL_SLICE_LIT("content-type"), SL_SLICE_LIT(XML_CONTENT_TYPE)};
    } else {
        out[n++] = (struct gw_header){SL_SLICE_LIT("content-type"), SL_SLICE_LIT(CONTENT_TYPE)};
        if (r->error != GW_SQS_OK) {
            out[n++] = (struct gw_header){SL_SLICE_LIT("x-amzn-query-error"),
                                          sl_slice_cstr(r->query_error)};
        }
    }
    if (r->retry_after[0] != '\0') {
        out[n++] = (struct gw_header){SL_SLICE_LIT("retry-after"), sl_slice_cstr(r->retry_after)};
    }
    return n;
}

void gw_sqs_send_result_fill(const struct gw_sqs_send_entry *msg, const struct gw_sqs_digests *d,
                             struct gw_sqs_send_result *res)
{
    sl_hex_encode(d->bytes, GW_SQS_MD5_LEN, res->md5_of_body);
    res->md5_of_attrs[0] = '\0';
    const uint8_t *attrs = gw_sqs_digests_attrs(d);
    if (attrs != NULL) {
        sl_hex_encode(attrs, GW_SQS_MD5_LEN, res->md5_of_attrs);
    }
    res->md5_of_sys_attrs[0] = '\0';
    if (msg->has_trace_header) {
        gw_sqs_md5_of_trace_header(msg->trace_header, res->md5_of_sys_attrs);
    }
}

void gw_sqs_send_result_digest(const struct gw_sqs_send_entry *msg, struct gw_sqs_send_result *res)
{
    struct gw_sqs_digests d;
    gw_sqs_digests_of(msg, &d);
    gw_sqs_send_result_fill(msg, &d, res);
}

/* ---- replies written directly (the hot message actions) ------------------- */

static void write_member(struct gw_json *w, const char *key, struct sl_slice value)
{
    gw_json_key(w, sl_slice_cstr(key));
    gw_json_string(w, value);
}

/* ---- the queue actions' replies -------------------------------------------- */

void gw_sqs_reply_queue_url(struct gw_sqs_reply *r, struct sl_slice queue_url)
{
    if (is_xml(r)) {
        gw__sqs_xml_queue_url(r, queue_url);
        return;
    }
    struct gw_json w;
    reply_ok_begin(r, &w);
    gw_json_object_begin(&w);
    write_member(&w, "QueueUrl", queue_url);
    gw_json_object_end(&w);
}

void gw_sqs_reply_queue_urls(struct gw_sqs_reply *r, const struct sl_slice *urls, size_t n,
                             struct sl_slice next_token)
{
    if (is_xml(r)) {
        gw__sqs_xml_queue_urls(r, urls, n, next_token);
        return;
    }
    /* ListQueues omits an empty QueueUrls; ListDeadLetterSourceQueues'
     * queueUrls is required by the model, so it is always present. */
    bool dlq_sources = r->action == GW_SQS_ACT_LIST_DEAD_LETTER_SOURCE_QUEUES;
    struct gw_json w;
    reply_ok_begin(r, &w);
    gw_json_object_begin(&w);
    if (n > 0 || dlq_sources) {
        gw_json_key(&w, dlq_sources ? SL_SLICE_LIT("queueUrls") : SL_SLICE_LIT("QueueUrls"));
        gw_json_array_begin(&w);
        for (size_t i = 0; i < n; i++) {
            gw_json_string(&w, urls[i]);
        }
        gw_json_array_end(&w);
    }
    if (next_token.n > 0) {
        write_member(&w, "NextToken", next_token);
    }
    gw_json_object_end(&w);
}

void gw_sqs_reply_string_map(struct gw_sqs_reply *r, const struct gw_sqs_tag *kv, size_t n)
{
    if (is_xml(r)) {
        gw__sqs_xml_string_map(r, kv, n);
        return;
    }
    struct gw_json w;
    reply_ok_begin(r, &w);
    gw_json_object_begin(&w);
    if (n > 0) {
        gw_json_key(&w, r->action == GW_SQS_ACT_LIST_QUEUE_TAGS ? SL_SLICE_LIT("Tags")
                                                                : SL_SLICE_LIT("Attributes"));
        gw_json_object_begin(&w);
        for (size_t i = 0; i < n; i++) {
            gw_json_key(&w, kv[i].key);
            gw_json_string(&w, kv[i].value);
        }
        gw_json_object_end(&w);
    }
    gw_json_object_end(&w);
}

void gw_sqs_reply_task_handle(struct gw_sqs_reply *r, const char *handle)
{
    if (is_xml(r)) {
        gw__sqs_xml_task_handle(r, handle);
        return;
    }
    struct gw_json w;
    reply_ok_begin(r, &w);
    gw_json_object_begin(&w);
    write_member(&w, "TaskHandle", sl_slice_cstr(handle));
    gw_json_object_end(&w);
}

void gw_sqs_reply_move_tasks(struct gw_sqs_reply *r, const struct gw_sqs_move_task *tasks, size_t n)
{
    if (is_xml(r)) {
        gw__sqs_xml_move_tasks(r, tasks, n);
        return;
    }
    struct gw_json w;
    reply_ok_begin(r, &w);
    gw_json_object_begin(&w);
    gw_json_key_lit(&w, "Results");
    gw_json_array_begin(&w);
    for (size_t i = 0; i < n; i++) {
        const struct gw_sqs_move_task *t = &tasks[i];
        gw_json_object_begin(&w);
        if (t->task_handle != NULL) {
            write_member(&w, "TaskHandle", sl_slice_cstr(t->task_handle));
        }
        write_member(&w, "Status", sl_slice_cstr(t->status));
        write_member(&w, "SourceArn", sl_slice_cstr(t->source_arn));
        if (t->destination_arn != NULL) {
            write_member(&w, "DestinationArn", sl_slice_cstr(t->destination_arn));
        }
        if (t->max_per_second > 0) {
            gw_json_key_lit(&w, "MaxNumberOfMessagesPerSecond");
            gw_json_int(&w, t->max_per_second);
        }
        gw_json_key_lit(&w, "ApproximateNumberOfMessagesMoved");
        gw_json_int(&w, t->moved);
        gw_json_key_lit(&w, "ApproximateNumberOfMessagesToMove");
        gw_json_int(&w, t->to_move);
        if (t->failure_reason != NULL) {
            write_member(&w, "FailureReason", sl_slice_cstr(t->failure_reason));
        }
        gw_json_key_lit(&w, "StartedTimestamp");
        gw_json_int(&w, (int64_t)t->started_ms);
        gw_json_object_end(&w);
    }
    gw_json_array_end(&w);
    gw_json_object_end(&w);
}

void gw_sqs_reply_moved(struct gw_sqs_reply *r, int64_t moved)
{
    if (is_xml(r)) {
        gw__sqs_xml_moved(r, moved);
        return;
    }
    struct gw_json w;
    reply_ok_begin(r, &w);
    gw_json_object_begin(&w);
    gw_json_key_lit(&w, "ApproximateNumberOfMessagesMoved");
    gw_json_int(&w, moved);
    gw_json_object_end(&w);
}

/* ---- the message actions' replies ------------------------------------------ */

/* One send result, in SQS's member order (SendMessageResult, and an entry
 * of SendMessageBatchResult with its Id first). */
static void write_send_result(struct gw_json *w, const struct gw_sqs_send_result *res, bool with_id)
{
    gw_json_object_begin(w);
    if (with_id) {
        write_member(w, "Id", res->id);
    }
    write_member(w, "MessageId", sl_slice_cstr(res->message_id));
    write_member(w, "MD5OfMessageBody", sl_slice_cstr(res->md5_of_body));
    if (res->md5_of_attrs[0] != '\0') {
        write_member(w, "MD5OfMessageAttributes", sl_slice_cstr(res->md5_of_attrs));
    }
    if (res->md5_of_sys_attrs[0] != '\0') {
        write_member(w, "MD5OfMessageSystemAttributes", sl_slice_cstr(res->md5_of_sys_attrs));
    }
    if (res->sequence_number.n > 0) {
        write_member(w, "SequenceNumber", res->sequence_number);
    }
    gw_json_object_end(w);
}

/* "Failed": [...]: the BatchResultErrorEntry of each failed entry. */
static void write_failed(struct gw_json *w, const struct gw_sqs_batch_failure *failed, size_t n)
{
    gw_json_key_lit(w, "Failed");
    gw_json_array_begin(w);
    for (size_t i = 0; i < n; i++) {
        const struct gw_sqs_error_info *info = gw_sqs_error_info(failed[i].err->code);
        gw_json_object_begin(w);
        write_member(w, "Id", failed[i].id);
        gw_json_key_lit(w, "SenderFault");
        gw_json_bool(w, info->sender);
        write_member(w, "Code", sl_slice_cstr(info->query_code));
        gw_json_key_lit(w, "Message");
        write_message(w, failed[i].err, info);
        gw_json_object_end(w);
    }
    gw_json_array_end(w);
}

void gw_sqs_reply_send_result(struct gw_sqs_reply *r, const struct gw_sqs_send_result *res)
{
    if (is_xml(r)) {
        gw__sqs_xml_send_result(r, res);
        return;
    }
    struct gw_json w;
    reply_ok_begin(r, &w);
    write_send_result(&w, res, false);
}

void gw_sqs_reply_send_batch(struct gw_sqs_reply *r, const struct gw_sqs_send_result *ok,
                             size_t n_ok, const struct gw_sqs_batch_failure *failed,
                             size_t n_failed)
{
    if (is_xml(r)) {
        gw__sqs_xml_send_batch(r, ok, n_ok, failed, n_failed);
        return;
    }
    struct gw_json w;
    reply_ok_begin(r, &w);
    sl_buf_reserve(&r->body, 32 + 160 * (n_ok + n_failed));
    gw_json_object_begin(&w);
    gw_json_key_lit(&w, "Successful");
    gw_json_array_begin(&w);
    for (size_t i = 0; i < n_ok; i++) {
        write_send_result(&w, &ok[i], true);
    }
    gw_json_array_end(&w);
    write_failed(&w, failed, n_failed);
    gw_json_object_end(&w);
}

void gw_sqs_reply_id_batch(struct gw_sqs_reply *r, const struct sl_slice *ok_ids, size_t n_ok,
                           const struct gw_sqs_batch_failure *failed, size_t n_failed)
{
    if (is_xml(r)) {
        gw__sqs_xml_id_batch(r, ok_ids, n_ok, failed, n_failed);
        return;
    }
    struct gw_json w;
    reply_ok_begin(r, &w);
    gw_json_object_begin(&w);
    gw_json_key_lit(&w, "Successful");
    gw_json_array_begin(&w);
    for (size_t i = 0; i < n_ok; i++) {
        gw_json_object_begin(&w);
        write_member(&w, "Id", ok_ids[i]);
        gw_json_object_end(&w);
    }
    gw_json_array_end(&w);
    write_failed(&w, failed, n_failed);
    gw_json_object_end(&w);
}

/* One received message, in SQS's member order. */
static void write_received(struct gw_json *w, const struct gw_sqs_received *m)
{
    gw_json_object_begin(w);
    write_member(w, "MessageId", m->message_id);
    write_member(w, "ReceiptHandle", m->receipt_handle);
    char md5[33];
    if (m->md5_of_body != NULL) {
        sl_hex_encode(m->md5_of_body, GW_SQS_MD5_LEN, md5);
    } else {
        gw_sqs_md5_hex(m->body.p, m->body.n, md5);
    }
    write_member(w, "MD5OfBody", sl_slice_cstr(md5));
    write_member(w, "Body", m->body);
    if (m->system_attribute_count > 0) {
        gw_json_key_lit(w, "Attributes");
        gw_json_object_begin(w);
        for (size_t k = 0; k < m->system_attribute_count; k++) {
            gw_json_key(w, m->system_attributes[k].key);
            gw_json_string(w, m->system_attributes[k].value);
        }
        gw_json_object_end(w);
    }
    /* The attribute digest covers only what is returned (1.5). */
    if (m->attr_count > 0) {
        if (m->md5_of_attrs != NULL) {
            sl_hex_encode(m->md5_of_attrs, GW_SQS_MD5_LEN, md5);
        } else {
            SL_ASSERT(gw_sqs_md5_of_attrs(m->attrs, m->attr_count, md5) == SL_OK);
        }
        write_member(w, "MD5OfMessageAttributes", sl_slice_cstr(md5));
        gw_json_key_lit(w, "MessageAttributes");
        gw_json_object_begin(w);
        for (size_t k = 0; k < m->attr_count; k++) {
            const struct gw_sqs_msg_attr *a = &m->attrs[k];
            gw_json_key(w, a->name);
            gw_json_object_begin(w);
            write_member(w, "DataType", a->data_type);
            if (a->type == GW_SQS_ATTR_BINARY) {
                gw_json_key_lit(w, "BinaryValue");
                gw_json_base64(w, a->value);
            } else {
                write_member(w, "StringValue", a->value);
            }
            gw_json_object_end(w);
        }
        gw_json_object_end(w);
    }
    gw_json_object_end(w);
}

void gw_sqs_reply_messages(struct gw_sqs_reply *r, const struct gw_sqs_received *msgs, size_t n)
{
    if (is_xml(r)) {
        gw__sqs_xml_messages(r, msgs, n);
        return;
    }
    struct gw_json w;
    reply_ok_begin(r, &w);
    /* one allocation for the usual reply: the bodies and handles plus the
     * members around them */
    size_t guess = 16;
    for (size_t i = 0; i < n; i++) {
        guess += msgs[i].body.n + msgs[i].receipt_handle.n + msgs[i].message_id.n + 160;
    }
    sl_buf_reserve(&r->body, guess);
    gw_json_object_begin(&w);
    if (n > 0) {
        gw_json_key_lit(&w, "Messages");
        gw_json_array_begin(&w);
        for (size_t i = 0; i < n; i++) {
            write_received(&w, &msgs[i]);
        }
        gw_json_array_end(&w);
    }
    gw_json_object_end(&w);
}
