/*
 * lt_proto.c -- the SQS requests sluice-load sends and the parts of the
 * replies it reads, in either wire protocol: AWS JSON 1.0 (a JSON body,
 * the action in x-amz-target) or the query protocol (a form body that
 * names Action and Version, replies in XML), so that the scenarios in
 * lt_run.c never know which one carries them.
 *
 * Query bodies are what botocore's query serializer sends (boto3 before
 * 1.34): Action, Version, then the parameters with lists flattened as
 * Prefix.N.Member, N from 1; QueueUrl stays a parameter and the request
 * goes to "/". Values are percent-encoded as RFC 3986 asks (everything but
 * the unreserved characters).
 *
 * Pure; threading: none.
 */
#include "lt_int.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ===== form encoding ==================================================== */

static bool unreserved(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '.' || c == '_' || c == '~';
}

static void percent_encode(struct sl_buf *b, const char *p, size_t n)
{
    static const char hex[] = "0123456789ABCDEF";
    sl_buf_reserve(b, 3 * n);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)p[i];
        if (unreserved(c)) {
            b->p[b->n++] = (char)c;
        } else {
            b->p[b->n++] = '%';
            b->p[b->n++] = hex[c >> 4];
            b->p[b->n++] = hex[c & 15];
        }
    }
    b->p[b->n] = '\0';
}

void lt_form_add(struct sl_buf *b, struct sl_slice value, const char *key_fmt, ...)
{
    char key[128];
    va_list ap;
    va_start(ap, key_fmt);
    int kn = vsnprintf(key, sizeof(key), key_fmt, ap);
    va_end(ap);
    SL_ASSERT(kn > 0 && (size_t)kn < sizeof(key)); /* keys are ours, never the user's */
    if (b->n > 0) {
        sl_buf_append_byte(b, '&');
    }
    percent_encode(b, key, (size_t)kn);
    sl_buf_append_byte(b, '=');
    percent_encode(b, value.p, value.n);
}

static void form_begin(struct sl_buf *b, const char *action)
{
    lt_form_add(b, sl_slice_cstr(action), "Action");
    lt_form_add(b, SL_SLICE_LIT(LT_QUERY_VERSION), "Version");
}

static void form_add_uint(struct sl_buf *b, const char *key, uint64_t v)
{
    char num[24];
    snprintf(num, sizeof(num), "%" PRIu64, v);
    lt_form_add(b, sl_slice_cstr(num), "%s", key);
}

/* ===== requests ========================================================= */

/* A body of `size` bytes that starts with the send timestamp (see
 * lt_body_timestamp) and is padded with 'x'. */
static void message_body(struct sl_buf *out, size_t size, uint64_t wall_us)
{
    char ts[32];
    int tn = snprintf(ts, sizeof(ts), "ts=%020" PRIu64 ";", wall_us);
    size_t pad = size > (size_t)tn ? size - (size_t)tn : 0;
    sl_buf_append(out, ts, (size_t)tn);
    sl_buf_reserve(out, pad);
    memset(out->p + out->n, 'x', pad);
    out->n += pad;
    out->p[out->n] = '\0';
}

void lt_body_send(struct sl_buf *b, const char *queue_url, size_t size, unsigned batch,
                  uint64_t wall_us)
{
    lt_body_send_with(b, queue_url, size, batch, wall_us, NULL, NULL);
}

void lt_body_send_with(struct sl_buf *b, const char *queue_url, size_t size, unsigned batch,
                       uint64_t wall_us, lt_entry_fields_fn *fields, void *arg)
{
    sl_buf_printf(b, "{\"QueueUrl\":\"%s\",", queue_url);
    if (batch > 1) {
        sl_buf_append_cstr(b, "\"Entries\":[");
    }
    for (unsigned i = 0; i < batch; i++) {
        if (batch > 1) {
            sl_buf_printf(b, "%s{\"Id\":\"m%u\",", i ? "," : "", i);
        }
        if (fields != NULL) {
            fields(b, arg);
        }
        sl_buf_append_cstr(b, "\"MessageBody\":\"");
        message_body(b, size, wall_us); /* nothing in it needs escaping */
        sl_buf_append_byte(b, '"');
        if (batch > 1) {
            sl_buf_append_byte(b, '}');
        }
    }
    sl_buf_append_cstr(b, batch > 1 ? "]}" : "}");
}

uint64_t lt_body_timestamp(const char *body, size_t n)
{
    if (n < 24 || memcmp(body, "ts=", 3) != 0 || body[23] != ';') {
        return 0;
    }
    uint64_t v = 0;
    for (size_t i = 3; i < 23; i++) {
        if (body[i] < '0' || body[i] > '9') {
            return 0;
        }
        v = v * 10 + (uint64_t)(body[i] - '0');
    }
    return v;
}

void lt_proto_send(struct sl_buf *b, enum lt_protocol p, const char *queue_url, size_t size,
                   unsigned batch, uint64_t wall_us)
{
    if (p == LT_PROTO_JSON) {
        lt_body_send(b, queue_url, size, batch, wall_us);
        return;
    }
    struct sl_buf msg;
    sl_buf_init(&msg);
    message_body(&msg, size, wall_us);
    form_begin(b, batch > 1 ? "SendMessageBatch" : "SendMessage");
    lt_form_add(b, sl_slice_cstr(queue_url), "QueueUrl");
    if (batch <= 1) {
        lt_form_add(b, (struct sl_slice){msg.p, msg.n}, "MessageBody");
    }
    for (unsigned i = 1; batch > 1 && i <= batch; i++) {
        char id[16];
        snprintf(id, sizeof(id), "m%u", i - 1);
        lt_form_add(b, sl_slice_cstr(id), "SendMessageBatchRequestEntry.%u.Id", i);
        lt_form_add(b, (struct sl_slice){msg.p, msg.n},
                    "SendMessageBatchRequestEntry.%u.MessageBody", i);
    }
    sl_buf_free(&msg);
}

void lt_proto_receive(struct sl_buf *b, enum lt_protocol p, const char *queue_url, unsigned max,
                      int wait_s)
{
    if (p == LT_PROTO_JSON) {
        sl_buf_printf(b,
                      "{\"QueueUrl\":\"%s\",\"MaxNumberOfMessages\":%u,\"WaitTimeSeconds\":%d,"
                      "\"VisibilityTimeout\":30}",
                      queue_url, max, wait_s);
        return;
    }
    form_begin(b, "ReceiveMessage");
    lt_form_add(b, sl_slice_cstr(queue_url), "QueueUrl");
    form_add_uint(b, "MaxNumberOfMessages", max);
    form_add_uint(b, "WaitTimeSeconds", (uint64_t)(wait_s < 0 ? 0 : wait_s));
    form_add_uint(b, "VisibilityTimeout", 30);
}

static void json_string_append(struct sl_buf *b, struct sl_slice s)
{
    json_t *j = json_stringn(s.p, s.n);
    char *text = j ? json_dumps(j, JSON_ENCODE_ANY) : NULL;
    sl_buf_append_cstr(b, text ? text : "null");
    free(text);
    json_decref(j);
}

void lt_proto_create_queue(struct sl_buf *b, enum lt_protocol p, const char *name)
{
    if (p == LT_PROTO_JSON) {
        sl_buf_append_cstr(b, "{\"QueueName\":");
        json_string_append(b, sl_slice_cstr(name));
        sl_buf_append_byte(b, '}');
        return;
    }
    form_begin(b, "CreateQueue");
    lt_form_add(b, sl_slice_cstr(name), "QueueName");
}

void lt_proto_raw(struct sl_buf *b, enum lt_protocol p, const char *action, const char *params)
{
    if (p == LT_PROTO_JSON) {
        sl_buf_append_cstr(b, params);
        return;
    }
    form_begin(b, action);
    if (params[0] != '\0') {
        sl_buf_append_byte(b, '&');
        sl_buf_append_cstr(b, params); /* already form-encoded by the operator */
    }
}

void lt_proto_delete_begin(struct lt_delete_batch *d, struct sl_buf *b, enum lt_protocol p,
                           const char *queue_url)
{
    d->b = b;
    d->proto = p;
    d->n = 0;
    if (p == LT_PROTO_JSON) {
        sl_buf_append_cstr(b, "{\"QueueUrl\":");
        json_string_append(b, sl_slice_cstr(queue_url));
        sl_buf_append_cstr(b, ",\"Entries\":[");
        return;
    }
    form_begin(b, "DeleteMessageBatch");
    lt_form_add(b, sl_slice_cstr(queue_url), "QueueUrl");
}

void lt_proto_delete_add(struct lt_delete_batch *d, struct sl_slice receipt_handle)
{
    char id[16];
    snprintf(id, sizeof(id), "d%u", d->n);
    d->n++;
    if (d->proto == LT_PROTO_JSON) {
        sl_buf_printf(d->b, "%s{\"Id\":\"%s\",\"ReceiptHandle\":", d->n > 1 ? "," : "", id);
        json_string_append(d->b, receipt_handle);
        sl_buf_append_byte(d->b, '}');
        return;
    }
    lt_form_add(d->b, sl_slice_cstr(id), "DeleteMessageBatchRequestEntry.%u.Id", d->n);
    lt_form_add(d->b, receipt_handle, "DeleteMessageBatchRequestEntry.%u.ReceiptHandle", d->n);
}

void lt_proto_delete_end(struct lt_delete_batch *d)
{
    if (d->proto == LT_PROTO_JSON) {
        sl_buf_append_cstr(d->b, "]}");
    }
}

/* ===== replies ========================================================== */

int lt_proto_queue_url(enum lt_protocol p, struct sl_slice resp, struct sl_buf *url)
{
    if (p == LT_PROTO_QUERY) {
        return lt_xml_child_text(resp, "QueueUrl", url);
    }
    json_t *root = json_loadb(resp.p, resp.n, 0, NULL);
    if (root == NULL) {
        return SL_EINVAL;
    }
    json_t *u = json_object_get(root, "QueueUrl");
    int rc = json_is_string(u) ? SL_OK : SL_ENOTFOUND;
    if (rc == SL_OK) {
        sl_buf_append(url, json_string_value(u), json_string_length(u));
    }
    json_decref(root);
    return rc;
}

static int json_messages(struct sl_slice resp, lt_message_cb *cb, void *data, size_t *count)
{
    json_t *root = json_loadb(resp.p, resp.n, 0, NULL);
    if (root == NULL) {
        return SL_EINVAL;
    }
    size_t i;
    json_t *m;
    json_array_foreach(json_object_get(root, "Messages"), i, m)
    {
        json_t *body = json_object_get(m, "Body");
        json_t *handle = json_object_get(m, "ReceiptHandle");
        cb(data, (struct sl_slice){json_string_value(body), json_string_length(body)},
           (struct sl_slice){json_string_value(handle), json_string_length(handle)});
        (*count)++;
    }
    json_decref(root);
    return SL_OK;
}

int lt_proto_messages(enum lt_protocol p, struct sl_slice resp, lt_message_cb *cb, void *data,
                      size_t *count)
{
    *count = 0;
    if (p == LT_PROTO_JSON) {
        return json_messages(resp, cb, data, count);
    }
    struct sl_buf body;
    struct sl_buf handle;
    sl_buf_init(&body);
    sl_buf_init(&handle);
    const char *cur = resp.p;
    const char *end = resp.p + resp.n;
    struct sl_slice m;
    int rc;
    while ((rc = lt_xml_next(&cur, end, "Message", &m)) == SL_OK) {
        sl_buf_reset(&body);
        sl_buf_reset(&handle);
        if (lt_xml_child_text(m, "Body", &body) != SL_OK ||
            lt_xml_child_text(m, "ReceiptHandle", &handle) != SL_OK) {
            rc = SL_EINVAL; /* a message without either cannot be read or deleted */
            break;
        }
        cb(data, (struct sl_slice){body.p, body.n}, (struct sl_slice){handle.p, handle.n});
        (*count)++;
    }
    sl_buf_free(&body);
    sl_buf_free(&handle);
    return rc == SL_ENOTFOUND ? SL_OK : SL_EINVAL;
}

static int json_batch(struct sl_slice resp, uint64_t *ok, lt_code_cb *failed, void *data)
{
    json_t *root = json_loadb(resp.p, resp.n, 0, NULL);
    if (root == NULL) {
        return SL_EINVAL;
    }
    *ok = json_array_size(json_object_get(root, "Successful"));
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(root, "Failed"), i, e)
    {
        const char *code = json_string_value(json_object_get(e, "Code"));
        failed(data, code ? code : "BatchEntryFailed");
    }
    json_decref(root);
    return SL_OK;
}

/* The result entries of SendMessageBatch and DeleteMessageBatch: the
 * successful ones are named after the action, the failed ones are
 * BatchResultErrorEntry in both. */
static const char *const ok_entries[] = {"SendMessageBatchResultEntry",
                                         "DeleteMessageBatchResultEntry",
                                         "ChangeMessageVisibilityBatchResultEntry"};

int lt_proto_batch(enum lt_protocol p, struct sl_slice resp, uint64_t *ok, lt_code_cb *failed,
                   void *data)
{
    *ok = 0;
    if (p == LT_PROTO_JSON) {
        return json_batch(resp, ok, failed, data);
    }
    const char *end = resp.p + resp.n;
    const char *cur;
    struct sl_slice e;
    int rc;
    for (size_t k = 0; k < SL_ARRAY_LEN(ok_entries); k++) {
        cur = resp.p;
        while ((rc = lt_xml_next(&cur, end, ok_entries[k], &e)) == SL_OK) {
            (*ok)++;
        }
        if (rc != SL_ENOTFOUND) {
            return SL_EINVAL;
        }
    }
    struct sl_buf code;
    sl_buf_init(&code);
    cur = resp.p;
    while ((rc = lt_xml_next(&cur, end, "BatchResultErrorEntry", &e)) == SL_OK) {
        sl_buf_reset(&code);
        bool have = lt_xml_child_text(e, "Code", &code) == SL_OK && code.n > 0;
        failed(data, have ? code.p : "BatchEntryFailed");
    }
    sl_buf_free(&code);
    return rc == SL_ENOTFOUND ? SL_OK : SL_EINVAL;
}
