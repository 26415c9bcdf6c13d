/*
 * gw_sqs_xml.c -- the typed SQS replies in the query protocol's XML, as
 * the Amazon SQS API Reference shows them for each action:
 *
 *   <ActionResponse xmlns="http://queue.amazonaws.com/doc/2012-11-05/">
 *     <ActionResult>...</ActionResult>
 *     <ResponseMetadata><RequestId>ID</RequestId></ResponseMetadata>
 *   </ActionResponse>
 *
 * with the query protocol's flattened lists (QueueUrl repeated, Attribute
 * Name/Value, Tag Key/Value, Message, MessageAttribute Name/Value,
 * <Entry>ResultEntry, BatchResultErrorEntry); an action without output has
 * no ActionResult. Errors are
 *
 *   <ErrorResponse xmlns=...><Error><Type>Sender|Receiver</Type>
 *   <Code>QUERY CODE</Code><Message>...</Message><Detail/></Error>
 *   <RequestId>ID</RequestId></ErrorResponse>
 *
 * with the query code and HTTP status of gw_errors.def. Everything is
 * written straight into r->body (gw_text.h); no document tree.
 *
 * Threading: pure; any thread.
 */
#include "gw_sqs_xml.h"

#include <string.h>

#include "gw_text.h"

#define XMLNS "http://queue.amazonaws.com/doc/2012-11-05/"
#define PROLOG "<?xml version=\"1.0\"?>"

static void begin_doc(struct gw_sqs_reply *r, int status)
{
    r->status = status;
    sl_buf_reset(&r->body);
}

/* "<ActionResponse xmlns=...>" and, when with_result, "<ActionResult>". */
static void begin_ok(struct gw_sqs_reply *r, bool with_result)
{
    begin_doc(r, 200);
    r->error = GW_SQS_OK;
    r->query_error[0] = '\0';
    const char *action = gw_sqs_action_name(r->action);
    struct sl_buf *b = &r->body;
    sl_buf_append_cstr(b, PROLOG "<");
    sl_buf_append_cstr(b, action);
    sl_buf_append_cstr(b, "Response xmlns=\"" XMLNS "\">");
    if (with_result) {
        sl_buf_append_byte(b, '<');
        sl_buf_append_cstr(b, action);
        sl_buf_append_cstr(b, "Result>");
    }
}

static void request_id(struct gw_sqs_reply *r)
{
    gw_xml_elem_cstr(&r->body, "RequestId", r->request_id != NULL ? r->request_id : "");
}

static void end_ok(struct gw_sqs_reply *r, bool with_result)
{
    const char *action = gw_sqs_action_name(r->action);
    struct sl_buf *b = &r->body;
    if (with_result) {
        sl_buf_append(b, "</", 2);
        sl_buf_append_cstr(b, action);
        sl_buf_append_cstr(b, "Result>");
    }
    gw_xml_open(b, "ResponseMetadata");
    request_id(r);
    gw_xml_close(b, "ResponseMetadata");
    sl_buf_append(b, "</", 2);
    sl_buf_append_cstr(b, action);
    sl_buf_append_cstr(b, "Response>");
}

void gw__sqs_xml_error(struct gw_sqs_reply *r, const struct gw_sqs_err *err)
{
    const struct gw_sqs_error_info *info = gw_sqs_error_info(err->code);
    begin_doc(r, info->status);
    struct sl_buf *b = &r->body;
    sl_buf_append_cstr(b, PROLOG "<ErrorResponse xmlns=\"" XMLNS "\"><Error>");
    gw_xml_elem_cstr(b, "Type", info->sender ? "Sender" : "Receiver");
    gw_xml_elem_cstr(b, "Code", info->query_code);
    gw_xml_elem_cstr(b, "Message", err->message[0] != '\0' ? err->message : info->message);
    sl_buf_append_cstr(b, "<Detail/></Error>");
    request_id(r);
    gw_xml_close(b, "ErrorResponse");
}

void gw__sqs_xml_empty(struct gw_sqs_reply *r)
{
    begin_ok(r, false);
    end_ok(r, false);
}

void gw__sqs_xml_queue_url(struct gw_sqs_reply *r, struct sl_slice queue_url)
{
    begin_ok(r, true);
    gw_xml_elem(&r->body, "QueueUrl", queue_url);
    end_ok(r, true);
}

void gw__sqs_xml_queue_urls(struct gw_sqs_reply *r, const struct sl_slice *urls, size_t n,
                            struct sl_slice next_token)
{
    begin_ok(r, true);
    for (size_t i = 0; i < n; i++) {
        gw_xml_elem(&r->body, "QueueUrl", urls[i]);
    }
    if (next_token.n > 0) {
        gw_xml_elem(&r->body, "NextToken", next_token);
    }
    end_ok(r, true);
}

void gw__sqs_xml_string_map(struct gw_sqs_reply *r, const struct gw_sqs_tag *kv, size_t n)
{
    /* GetQueueAttributes: Attribute Name/Value; ListQueueTags: Tag Key/Value */
    bool tags = r->action == GW_SQS_ACT_LIST_QUEUE_TAGS;
    const char *entry = tags ? "Tag" : "Attribute";
    begin_ok(r, true);
    for (size_t i = 0; i < n; i++) {
        gw_xml_open(&r->body, entry);
        gw_xml_elem(&r->body, tags ? "Key" : "Name", kv[i].key);
        gw_xml_elem(&r->body, "Value", kv[i].value);
        gw_xml_close(&r->body, entry);
    }
    end_ok(r, true);
}

/* The members of a send result, in the API Reference's order. */
static void send_result_members(struct sl_buf *b, const struct gw_sqs_send_result *res)
{
    gw_xml_elem_cstr(b, "MessageId", res->message_id);
    gw_xml_elem_cstr(b, "MD5OfMessageBody", res->md5_of_body);
    if (res->md5_of_attrs[0] != '\0') {
        gw_xml_elem_cstr(b, "MD5OfMessageAttributes", res->md5_of_attrs);
    }
    if (res->md5_of_sys_attrs[0] != '\0') {
        gw_xml_elem_cstr(b, "MD5OfMessageSystemAttributes", res->md5_of_sys_attrs);
    }
    if (res->sequence_number.n > 0) {
        gw_xml_elem(b, "SequenceNumber", res->sequence_number);
    }
}

void gw__sqs_xml_send_result(struct gw_sqs_reply *r, const struct gw_sqs_send_result *res)
{
    begin_ok(r, true);
    send_result_members(&r->body, res);
    end_ok(r, true);
}

static void failed_entries(struct sl_buf *b, const struct gw_sqs_batch_failure *failed, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const struct gw_sqs_error_info *info = gw_sqs_error_info(failed[i].err->code);
        gw_xml_open(b, "BatchResultErrorEntry");
        gw_xml_elem(b, "Id", failed[i].id);
        gw_xml_elem_bool(b, "SenderFault", info->sender);
        gw_xml_elem_cstr(b, "Code", info->query_code);
        const char *msg = failed[i].err->message;
        gw_xml_elem_cstr(b, "Message", msg[0] != '\0' ? msg : info->message);
        gw_xml_close(b, "BatchResultErrorEntry");
    }
}

void gw__sqs_xml_send_batch(struct gw_sqs_reply *r, const struct gw_sqs_send_result *ok,
                            size_t n_ok, const struct gw_sqs_batch_failure *failed, size_t n_failed)
{
    begin_ok(r, true);
    struct sl_buf *b = &r->body;
    sl_buf_reserve(b, 300 * (n_ok + n_failed) + 128);
    for (size_t i = 0; i < n_ok; i++) {
        gw_xml_open(b, "SendMessageBatchResultEntry");
        gw_xml_elem(b, "Id", ok[i].id);
        send_result_members(b, &ok[i]);
        gw_xml_close(b, "SendMessageBatchResultEntry");
    }
    failed_entries(b, failed, n_failed);
    end_ok(r, true);
}

void gw__sqs_xml_id_batch(struct gw_sqs_reply *r, const struct sl_slice *ok_ids, size_t n_ok,
                          const struct gw_sqs_batch_failure *failed, size_t n_failed)
{
    const char *entry = r->action == GW_SQS_ACT_CHANGE_MESSAGE_VISIBILITY_BATCH
                            ? "ChangeMessageVisibilityBatchResultEntry"
                            : "DeleteMessageBatchResultEntry";
    begin_ok(r, true);
    for (size_t i = 0; i < n_ok; i++) {
        gw_xml_open(&r->body, entry);
        gw_xml_elem(&r->body, "Id", ok_ids[i]);
        gw_xml_close(&r->body, entry);
    }
    failed_entries(&r->body, failed, n_failed);
    end_ok(r, true);
}

static void message(struct sl_buf *b, const struct gw_sqs_received *m)
{
    gw_xml_open(b, "Message");
    gw_xml_elem(b, "MessageId", m->message_id);
    gw_xml_elem(b, "ReceiptHandle", m->receipt_handle);
    char md5[33];
    if (m->md5_of_body != NULL) {
        sl_hex_encode(m->md5_of_body, GW_SQS_MD5_LEN, md5);
    } else {
        gw_sqs_md5_hex(m->body.p, m->body.n, md5);
    }
    gw_xml_elem_cstr(b, "MD5OfBody", md5);
    gw_xml_elem(b, "Body", m->body);
    for (size_t k = 0; k < m->system_attribute_count; k++) {
        gw_xml_open(b, "Attribute");
        gw_xml_elem(b, "Name", m->system_attributes[k].key);
        gw_xml_elem(b, "Value", m->system_attributes[k].value);
        gw_xml_close(b, "Attribute");
    }
    if (m->attr_count > 0) {
        /* the digest covers only the attributes returned */
        if (m->md5_of_attrs != NULL) {
            sl_hex_encode(m->md5_of_attrs, GW_SQS_MD5_LEN, md5);
        } else {
            SL_ASSERT(gw_sqs_md5_of_attrs(m->attrs, m->attr_count, md5) == SL_OK);
        }
        gw_xml_elem_cstr(b, "MD5OfMessageAttributes", md5);
    }
    for (size_t k = 0; k < m->attr_count; k++) {
        const struct gw_sqs_msg_attr *a = &m->attrs[k];
        gw_xml_open(b, "MessageAttribute");
        gw_xml_elem(b, "Name", a->name);
        gw_xml_open(b, "Value");
        if (a->type == GW_SQS_ATTR_BINARY) {
            gw_xml_elem_base64(b, "BinaryValue", a->value);
        } else {
            gw_xml_elem(b, "StringValue", a->value);
        }
        gw_xml_elem(b, "DataType", a->data_type);
        gw_xml_close(b, "Value");
        gw_xml_close(b, "MessageAttribute");
    }
    gw_xml_close(b, "Message");
}

void gw__sqs_xml_messages(struct gw_sqs_reply *r, const struct gw_sqs_received *msgs, size_t n)
{
    begin_ok(r, true);
    size_t guess = 256;
    for (size_t i = 0; i < n; i++) {
        guess += msgs[i].body.n + msgs[i].receipt_handle.n + 320;
    }
    sl_buf_reserve(&r->body, guess);
    for (size_t i = 0; i < n; i++) {
        message(&r->body, &msgs[i]);
    }
    end_ok(r, true);
}

void gw__sqs_xml_task_handle(struct gw_sqs_reply *r, const char *handle)
{
    begin_ok(r, true);
    gw_xml_elem_cstr(&r->body, "TaskHandle", handle);
    end_ok(r, true);
}

void gw__sqs_xml_move_tasks(struct gw_sqs_reply *r, const struct gw_sqs_move_task *tasks, size_t n)
{
    begin_ok(r, true);
    struct sl_buf *b = &r->body;
    for (size_t i = 0; i < n; i++) {
        const struct gw_sqs_move_task *t = &tasks[i];
        gw_xml_open(b, "ListMessageMoveTasksResultEntry");
        if (t->task_handle != NULL) {
            gw_xml_elem_cstr(b, "TaskHandle", t->task_handle);
        }
        gw_xml_elem_cstr(b, "Status", t->status);
        gw_xml_elem_cstr(b, "SourceArn", t->source_arn);
        if (t->destination_arn != NULL) {
            gw_xml_elem_cstr(b, "DestinationArn", t->destination_arn);
        }
        if (t->max_per_second > 0) {
            gw_xml_elem_int(b, "MaxNumberOfMessagesPerSecond", t->max_per_second);
        }
        gw_xml_elem_int(b, "ApproximateNumberOfMessagesMoved", t->moved);
        gw_xml_elem_int(b, "ApproximateNumberOfMessagesToMove", t->to_move);
        if (t->failure_reason != NULL) {
            gw_xml_elem_cstr(b, "FailureReason", t->failure_reason);
        }
        gw_xml_elem_int(b, "StartedTimestamp", (int64_t)t->started_ms);
        gw_xml_close(b, "ListMessageMoveTasksResultEntry");
    }
    end_ok(r, true);
}

void gw__sqs_xml_moved(struct gw_sqs_reply *r, int64_t moved)
{
    begin_ok(r, true);
    gw_xml_elem_int(&r->body, "ApproximateNumberOfMessagesMoved", moved);
    end_ok(r, true);
}
