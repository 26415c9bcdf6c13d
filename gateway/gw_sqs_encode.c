/*
 * gw_sqs_encode.c -- replies in the AWS JSON 1.0 protocol as SQS shapes
 * them: success bodies per action, errors as {"__type", "message"} with
 * x-amzn-query-error, and empty 200 bodies for actions without output.
 *
 * Wire: the AWS JSON 1.0 protocol of the SQS Smithy model. No
 * x-amzn-errortype header is sent: the AWS SDK for JavaScript v3 would
 * take the error name from it.
 *
 * Two ways to a body: the gw_sqs_reply_<shape>() functions of the hot
 * message actions (send, send batch, receive, id batches) write it
 * straight into the reply with gw_json.h; the gw_sqs_encode_<shape>()
 * functions of the cold actions build a jansson tree, which
 * gw_sqs_reply_ok() writes with the same writer.
 * tests/unit/gateway/test_sqs_encode.c pins the exact bytes of each shape.
 *
 * Threading: pure; any thread. Ownership: the encoders return new jansson
 * objects (one reference each); gw_sqs_reply_ok() steals it.
 */
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "gw_json.h"
#include "gw_sqs.h"

#define CONTENT_TYPE "application/x-amz-json-1.0"

static json_t *slice_json(struct sl_slice s)
{
    json_t *j = json_stringn(s.p != NULL ? s.p : "", s.n);
    /* Only invalid UTF-8 can fail, and every slice we encode came from
     * decoded JSON or from sluice itself. Fall back rather than crash. */
    return j != NULL ? j : json_string("");
}

static void set_slice(json_t *obj, const char *key, struct sl_slice s)
{
    json_object_set_new(obj, key, slice_json(s));
}

/* Keys are slices (jansson 2.14 json_object_setn_new); value is stolen. */
static void set_slice_key(json_t *obj, struct sl_slice key, json_t *value)
{
    /* on failure (invalid UTF-8) jansson has already released value */
    (void)json_object_setn_new(obj, key.p != NULL ? key.p : "", key.n, value);
}

/* A tree as compact JSON: one pass with gw_json.h, or jansson's own
 * dump for a tree holding a real (no reply has one today). */
static void dump_into(struct sl_buf *b, const json_t *j)
{
    sl_buf_reset(b);
    struct gw_json w;
    gw_json_init(&w, b);
    if (gw_json_value(&w, j)) {
        return;
    }
    size_t n = json_dumpb(j, NULL, 0, JSON_COMPACT);
    sl_buf_reserve(b, n + 1);
    SL_ASSERT(json_dumpb(j, b->p, n, JSON_COMPACT) == n);
    b->n = n;
    b->p[n] = '\0';
}

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
    memset(r, 0, sizeof(*r));
    sl_buf_init(&r->body);
    r->status = 200;
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

void gw_sqs_reply_ok(struct gw_sqs_reply *r, json_t *body)
{
    r->status = 200;
    r->error = GW_SQS_OK;
    r->query_error[0] = '\0';
    sl_buf_reset(&r->body);
    if (body != NULL) {
        dump_into(&r->body, body);
        json_decref(body);
    }
}

size_t gw_sqs_reply_headers(const struct gw_sqs_reply *r, struct gw_header out[2])
{
    size_t n = 0;
    out[n++] = (struct gw_header){SL_SLICE_LIT("content-type"), SL_SLICE_LIT(CONTENT_TYPE)};
    if (r->error != GW_SQS_OK) {
        out[n++] =
            (struct gw_header){SL_SLICE_LIT("x-amzn-query-error"), sl_slice_cstr(r->query_error)};
    }
    return n;
}

json_t *gw_sqs_encode_queue_url(struct sl_slice queue_url)
{
    json_t *o = json_object();
    set_slice(o, "QueueUrl", queue_url);
    return o;
}

json_t *gw_sqs_encode_queue_urls(const struct sl_slice *urls, size_t n, const char *member,
                                 struct sl_slice next_token)
{
    json_t *o = json_object();
    /* ListQueues omits an empty QueueUrls; ListDeadLetterSourceQueues'
     * queueUrls is required by the model, so it is always present. */
    if (n > 0 || strcmp(member, "queueUrls") == 0) {
        json_t *a = json_array();
        for (size_t i = 0; i < n; i++) {
            json_array_append_new(a, slice_json(urls[i]));
        }
        json_object_set_new(o, member, a);
    }
    if (next_token.n > 0) {
        set_slice(o, "NextToken", next_token);
    }
    return o;
}

json_t *gw_sqs_encode_string_map(const char *member, const struct gw_sqs_tag *kv, size_t n)
{
    json_t *o = json_object();
    if (n > 0) {
        json_t *m = json_object();
        for (size_t i = 0; i < n; i++) {
            set_slice_key(m, kv[i].key, slice_json(kv[i].value));
        }
        json_object_set_new(o, member, m);
    }
    return o;
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
    struct gw_json w;
    reply_ok_begin(r, &w);
    write_send_result(&w, res, false);
}

void gw_sqs_reply_send_batch(struct gw_sqs_reply *r, const struct gw_sqs_send_result *ok,
                             size_t n_ok, const struct gw_sqs_batch_failure *failed,
                             size_t n_failed)
{
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
