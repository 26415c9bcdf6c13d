/*
 * test_sqs_send.c -- SendMessage, SendMessageBatch and what ReceiveMessage
 * returns of a message, against the real sluiced over HTTP/2: the MD5s
 * (Amazon SQS Developer Guide, "Calculating the MD5 message digest for
 * message attributes"), message attributes and their
 * receive-side filters, system attributes, the character set, the
 * queue's MaximumMessageSize, batch partial failures and batch errors,
 * attribute limits and MessageGroupId on a standard queue; and the MD5s
 * of a message stored before its digests were kept (partition schema 1).
 *
 * Expectations are Amazon SQS's (Amazon SQS API Reference, SendMessage,
 * SendMessageBatch and ReceiveMessage; Developer Guide, quotas).
 */
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "it_sqs.h"

static struct it_server srv;

#define NON_EXISTENT "AWS.SimpleQueueService.NonExistentQueue"
#define IPV "InvalidParameterValue"
#define IPV_SHAPE "InvalidParameterValueException"

static json_t *str_attr(const char *value)
{
    return json_pack("{s:s,s:s}", "DataType", "String", "StringValue", value);
}

static json_t *send_req(const char *url, const char *body, json_t *attrs)
{
    json_t *req = json_pack("{s:s,s:s}", "QueueUrl", url, "MessageBody", body);
    if (attrs != NULL) {
        json_object_set_new(req, "MessageAttributes", attrs);
    }
    return req;
}

/* Receives one message with VisibilityTimeout 0 (so it stays receivable)
 * and the given extra members; returns the reply. */
static struct it_reply peek(const char *url, json_t *extra)
{
    if (extra == NULL) {
        extra = json_object();
    }
    json_object_set_new(extra, "VisibilityTimeout", json_integer(0));
    return it_receive(&srv, url, extra);
}

static json_t *first(const struct it_reply *r)
{
    return json_array_get(it_messages(r), 0);
}

static void drain(const char *url)
{
    struct it_reply r = it_call(&srv, "PurgeQueue", json_pack("{s:s}", "QueueUrl", url));
    it_reply_free(&r);
}

static void body_md5(void)
{
    char *url = it_create_queue(&srv, "s-body", NULL);
    struct it_reply r = it_call(&srv, "SendMessage", send_req(url, "message", NULL));
    IT_OK(&r);
    IT_STREQ(it_str(&r, "MD5OfMessageBody"), "78e731027d8fd50ed642340b7c9a63b3");
    const char *id = it_str(&r, "MessageId");
    IT_CHECK(id != NULL && strlen(id) == 36);
    IT_CHECK(json_object_get(r.json, "MD5OfMessageAttributes") == NULL);
    IT_CHECK(json_object_get(r.json, "MD5OfMessageSystemAttributes") == NULL);
    IT_CHECK(json_object_get(r.json, "SequenceNumber") == NULL); /* standard queue */
    char *sent_id = strdup(id != NULL ? id : "");
    it_reply_free(&r);

    r = it_receive(&srv, url, NULL);
    IT_CHECK(it_message_count(&r) == 1);
    json_t *m = first(&r);
    IT_STREQ(it_jstr(m, "MessageId"), sent_id);
    IT_STREQ(it_jstr(m, "Body"), "message");
    IT_STREQ(it_jstr(m, "MD5OfBody"), "78e731027d8fd50ed642340b7c9a63b3");
    IT_CHECK(it_jstr(m, "ReceiptHandle") != NULL && strlen(it_jstr(m, "ReceiptHandle")) > 0);
    IT_CHECK(json_object_get(m, "MD5OfMessageAttributes") == NULL);
    IT_CHECK(json_object_get(m, "MessageAttributes") == NULL);
    IT_CHECK(json_object_get(m, "Attributes") == NULL); /* none asked for */
    it_reply_free(&r);
    free(sent_id);

    r = it_call(&srv, "SendMessage", send_req(url, "message-1", NULL));
    IT_STREQ(it_str(&r, "MD5OfMessageBody"), "3d6b824fd8c1520e9a047d21fee6fb1f");
    it_reply_free(&r);

    /* Multi-byte text and \r round-trip with the MD5 of their UTF-8 bytes. */
    drain(url);
    static const char *texts[] = {"h\xc3\xa9\xe2\x9c\x93 \xf0\x9d\x84\x9e", "line\r\nnext\ttab"};
    for (size_t i = 0; i < 2; i++) {
        char md5[33];
        it_md5_hex(texts[i], strlen(texts[i]), md5);
        r = it_call(&srv, "SendMessage", send_req(url, texts[i], NULL));
        IT_STREQ(it_str(&r, "MD5OfMessageBody"), md5);
        it_reply_free(&r);
        r = it_receive(&srv, url, NULL);
        IT_STREQ(it_jstr(first(&r), "Body"), texts[i]);
        IT_STREQ(it_jstr(first(&r), "MD5OfBody"), md5);
        it_reply_free(&r);
    }
    free(url);
}

static void attribute_md5_vectors(void)
{
    char *url = it_create_queue(&srv, "s-attrs", NULL);
    static const char *bin64 = "SGVsbG8gYmluYXJ5IHdvcmxkIQ=="; /* "Hello binary world!" */
    struct {
        json_t *attrs;
        const char *md5;
    } cases[] = {
        {json_pack("{s:o}", "attribName1", str_attr("attribValue 1")),
         "19e27d4e946b072f3f58da80d94fd778"},
        {json_pack("{s:{s:s,s:s}}", "customNumberTypeAttrib", "DataType", "Number.float",
                   "StringValue", "4563442423554324324264524243.32543234"),
         "9fe1b90bbd9965bdf77bac517c7d2495"},
        {json_pack("{s:{s:s,s:s}}", "binaryAttribute", "DataType", "Binary", "BinaryValue", bin64),
         "31a92b15d92f8db860eda32aceb656c3"},
        {json_pack("{s:o,s:{s:s,s:s},s:{s:s,s:s}}", "attribName1", str_attr("attribValue 1"),
                   "customNumberTypeAttrib", "DataType", "Number.float", "StringValue",
                   "4563442423554324324264524243.32543234", "binaryAttribute", "DataType", "Binary",
                   "BinaryValue", bin64),
         "c932db14a896c663f83c260297d594ff"},
        {json_pack("{s:o}", "MyAttribute", str_attr("foobar")), "adb59cd4678ea5a855436b949cd07ab6"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *sent = json_deep_copy(cases[i].attrs);
        struct it_reply r = it_call(&srv, "SendMessage", send_req(url, "attrs", cases[i].attrs));
        IT_OK(&r);
        IT_STREQ(it_str(&r, "MD5OfMessageAttributes"), cases[i].md5);
        char body_md5_hex[33];
        it_md5_hex("attrs", 5, body_md5_hex);
        IT_STREQ(it_str(&r, "MD5OfMessageBody"), body_md5_hex);
        it_reply_free(&r);
        /* Received with All: the same attributes and the same MD5. */
        r = it_receive(&srv, url, json_pack("{s:[s]}", "MessageAttributeNames", "All"));
        json_t *m = first(&r);
        IT_STREQ(it_jstr(m, "MD5OfMessageAttributes"), cases[i].md5);
        IT_CHECK(json_equal(json_object_get(m, "MessageAttributes"), sent));
        if (!json_equal(json_object_get(m, "MessageAttributes"), sent)) {
            fprintf(stderr, "  got %s\n", r.body);
        }
        it_reply_free(&r);
        json_decref(sent);
    }
    free(url);
}

/* MessageAttributeNames filters; the MD5 covers what is returned. */
static void attribute_filters(void)
{
    char *url = it_create_queue(&srv, "s-filter", NULL);
    struct it_reply r =
        it_call(&srv, "SendMessage",
                send_req(url, "filtered",
                         json_pack("{s:o,s:o,s:o}", "Help.Me", str_attr("Me"), "Hello",
                                   str_attr("There"), "General", str_attr("Kenobi"))));
    IT_STREQ(it_str(&r, "MD5OfMessageAttributes"), "4c360f3fdafd970e05fae2f149d997f5");
    it_reply_free(&r);
    static const struct {
        const char *filters[3];
        size_t returned;
        const char *md5; /* NULL: no attributes, no MD5 */
    } cases[] = {
        {{"All"}, 3, "4c360f3fdafd970e05fae2f149d997f5"},
        {{".*"}, 3, "4c360f3fdafd970e05fae2f149d997f5"},
        {{"*"}, 3, "4c360f3fdafd970e05fae2f149d997f5"},
        {{"General", "Hello"}, 2, "fca026605781cb4126a1e9044df24232"},
        {{"Hello"}, 1, "a311262e065454b75da111d535b8dacd"},
        {{"Hel.*"}, 2, "83fee93c1bcd8b9a5a923ffacdc636c7"},
        {{"Missing"}, 0, NULL},
        {{NULL}, 0, NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *names = json_array();
        for (size_t f = 0; f < 3 && cases[i].filters[f] != NULL; f++) {
            json_array_append_new(names, json_string(cases[i].filters[f]));
        }
        json_t *extra = json_object();
        if (json_array_size(names) > 0) {
            json_object_set_new(extra, "MessageAttributeNames", names);
        } else {
            json_decref(names);
        }
        r = peek(url, extra);
        json_t *m = first(&r);
        IT_CHECK(m != NULL);
        IT_CHECK(json_object_size(json_object_get(m, "MessageAttributes")) == cases[i].returned);
        if (cases[i].md5 != NULL) {
            IT_STREQ(it_jstr(m, "MD5OfMessageAttributes"), cases[i].md5);
        } else {
            IT_CHECK(json_object_get(m, "MD5OfMessageAttributes") == NULL);
            IT_CHECK(json_object_get(m, "MessageAttributes") == NULL);
        }
        it_reply_free(&r);
    }
    free(url);
}

static void system_attributes(void)
{
    char *url = it_create_queue(&srv, "s-sys", NULL);
    const char *trace = "Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=1";
    char want_sys_md5[33];
    it_md5_one_string_attr("AWSTraceHeader", trace, want_sys_md5);
    long long t0 = it_now_ms();
    json_t *req = send_req(url, "traced", json_pack("{s:o}", "MyAttribute", str_attr("foobar")));
    json_object_set_new(req, "MessageSystemAttributes",
                        json_pack("{s:o}", "AWSTraceHeader", str_attr(trace)));
    struct it_reply r = it_call(&srv, "SendMessage", req);
    IT_OK(&r);
    IT_STREQ(it_str(&r, "MD5OfMessageSystemAttributes"), want_sys_md5);
    /* System attributes do not change the attribute MD5. */
    IT_STREQ(it_str(&r, "MD5OfMessageAttributes"), "adb59cd4678ea5a855436b949cd07ab6");
    it_reply_free(&r);

    r = peek(url, json_pack("{s:[s]}", "MessageSystemAttributeNames", "All"));
    long long t1 = it_now_ms();
    json_t *a = json_object_get(first(&r), "Attributes");
    IT_STREQ(it_jstr(a, "AWSTraceHeader"), trace);
    IT_STREQ(it_jstr(a, "ApproximateReceiveCount"), "1");
    IT_STREQ(it_jstr(a, "SenderId"), IT_TENANT); /* the tenant plays the account */
    char sent[32], first_rx[32];
    snprintf(sent, sizeof sent, "%s",
             it_jstr(a, "SentTimestamp") ? it_jstr(a, "SentTimestamp") : "");
    snprintf(first_rx, sizeof first_rx, "%s",
             it_jstr(a, "ApproximateFirstReceiveTimestamp")
                 ? it_jstr(a, "ApproximateFirstReceiveTimestamp")
                 : "");
    long long sent_ms = sent[0] != '\0' ? strtoll(sent, NULL, 10) : -1;
    long long first_ms = first_rx[0] != '\0' ? strtoll(first_rx, NULL, 10) : -1;
    IT_CHECK(sent_ms >= t0 - 1000 && sent_ms <= t1 + 1000); /* epoch ms, not s */
    IT_CHECK(first_ms >= sent_ms && first_ms <= t1 + 1000);
    IT_CHECK(json_object_get(a, "SequenceNumber") == NULL); /* FIFO only */
    IT_CHECK(json_object_get(a, "MessageDeduplicationId") == NULL);
    IT_CHECK(json_object_get(a, "DeadLetterQueueSourceArn") == NULL);
    it_reply_free(&r);

    /* The deprecated AttributeNames and MessageSystemAttributeNames: union. */
    r = peek(url, json_pack("{s:[s],s:[s]}", "AttributeNames", "ApproximateReceiveCount",
                            "MessageSystemAttributeNames", "ApproximateFirstReceiveTimestamp"));
    a = json_object_get(first(&r), "Attributes");
    IT_CHECK(json_object_size(a) == 2);
    IT_STREQ(it_jstr(a, "ApproximateReceiveCount"), "2");               /* every receive counts */
    IT_STREQ(it_jstr(a, "ApproximateFirstReceiveTimestamp"), first_rx); /* the first one's */
    it_reply_free(&r);
    r = peek(url, json_pack("{s:[s]}", "AttributeNames", "SentTimestamp"));
    a = json_object_get(first(&r), "Attributes");
    IT_CHECK(json_object_size(a) == 1);
    IT_STREQ(it_jstr(a, "SentTimestamp"), sent);
    it_reply_free(&r);
    /* An unknown system attribute name is ignored, as by Amazon SQS. */
    r = peek(url, json_pack("{s:[s]}", "MessageSystemAttributeNames", "not-a-real-name"));
    IT_OK(&r);
    IT_CHECK(it_message_count(&r) == 1);
    IT_CHECK(json_object_size(json_object_get(first(&r), "Attributes")) == 0);
    it_reply_free(&r);
    free(url);
}

/* SendMessage with an X-Amzn-Trace-Id header (raw request, signed by
 * libcurl); returns the reply. */
static struct it_reply send_with_trace_id(json_t *req, const char *trace_id)
{
    char *text = json_dumps(req, JSON_COMPACT);
    json_decref(req);
    char trace_hdr[256];
    snprintf(trace_hdr, sizeof trace_hdr, "x-amzn-trace-id: %s", trace_id);
    const char *headers[] = {"x-amz-target: AmazonSQS.SendMessage",
                             "content-type: application/x-amz-json-1.0", trace_hdr, NULL};
    struct it_request rq = {.method = "POST",
                            .path = "/",
                            .headers = headers,
                            .body = text,
                            .body_len = strlen(text),
                            .access_key = IT_KEY,
                            .secret = IT_SECRET};
    struct it_response resp;
    it_request(&srv, &rq, &resp);
    free(text);
    struct it_reply out = {.status = resp.status};
    out.json = json_loadb(resp.body, resp.body_len, 0, NULL);
    out.body = resp.body;
    resp.body = NULL;
    it_response_free(&resp);
    return out;
}

/* The X-Amzn-Trace-Id header becomes AWSTraceHeader; a body attribute
 * wins over it (research 1.7, 4.31). */
static void trace_id_header(void)
{
    char *url = it_create_queue(&srv, "s-trace", NULL);
    const char *hdr = "Root=1-00000000-000000000000000000000001;Sampled=1";
    struct it_reply r = send_with_trace_id(send_req(url, "via-header", NULL), hdr);
    IT_OK(&r);
    IT_CHECK(json_object_get(r.json, "MD5OfMessageSystemAttributes") == NULL); /* none sent */
    it_reply_free(&r);
    r = it_receive(&srv, url,
                   json_pack("{s:[s]}", "MessageSystemAttributeNames", "AWSTraceHeader"));
    IT_STREQ(it_jstr(json_object_get(first(&r), "Attributes"), "AWSTraceHeader"), hdr);
    it_reply_free(&r);
    json_t *req = send_req(url, "both", NULL);
    json_object_set_new(req, "MessageSystemAttributes",
                        json_pack("{s:o}", "AWSTraceHeader", str_attr("Root=body")));
    r = send_with_trace_id(req, hdr);
    IT_OK(&r);
    it_reply_free(&r);
    r = it_receive(&srv, url,
                   json_pack("{s:[s]}", "MessageSystemAttributeNames", "AWSTraceHeader"));
    IT_STREQ(it_jstr(json_object_get(first(&r), "Attributes"), "AWSTraceHeader"), "Root=body");
    it_reply_free(&r);
    free(url);
}

static void body_rules(void)
{
    char *url = it_create_queue(&srv, "s-rules", NULL);
    struct it_reply r = it_call(&srv, "SendMessage", send_req(url, "", NULL));
    IT_ERR(&r, 400, "MissingParameter", "MissingRequiredParameterException",
           "The request must contain the parameter MessageBody.");
    it_reply_free(&r);
    static const char *bad[] = {"nul\x01here", "\x1f", "bom\xef\xbf\xbe"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        r = it_call(&srv, "SendMessage", send_req(url, bad[i], NULL));
        IT_ERR(&r, 400, "InvalidMessageContents", "InvalidMessageContents", NULL);
        it_reply_free(&r);
    }
    /* Raw JSON: an escaped NUL is an invalid character too. */
    char raw[512];
    snprintf(raw, sizeof raw, "{\"QueueUrl\":\"%s\",\"MessageBody\":\"a\\u0000b\"}", url);
    r = it_call_raw(&srv, "SendMessage", raw);
    IT_ERR(&r, 400, "InvalidMessageContents", "InvalidMessageContents", NULL);
    it_reply_free(&r);
    IT_CHECK(it_queue_attr_int(&srv, url, "ApproximateNumberOfMessages") == 0);

    r = it_call(&srv, "SendMessage",
                json_pack("{s:s,s:s}", "QueueUrl", srv.base_url, "MessageBody", "x"));
    IT_CHECK(r.status == 400 || r.status == 404); /* not a queue URL */
    it_reply_free(&r);
    char missing[256];
    snprintf(missing, sizeof missing, "%s/" IT_TENANT "/s-missing", srv.base_url);
    r = it_call(&srv, "SendMessage", send_req(missing, "x", NULL));
    IT_ERR(&r, 400, NON_EXISTENT, "QueueDoesNotExist", "The specified queue does not exist.");
    it_reply_free(&r);
    free(url);
}

/* SendMessage of body with attrs (stolen; may be NULL) to url: fits, or is
 * refused as longer than max bytes. The caller's line is reported. */
#define SEND_FITS(url, body, attrs) send_sized(__LINE__, (url), (body), (attrs), 0)
#define SEND_TOO_LONG(url, body, attrs, max) send_sized(__LINE__, (url), (body), (attrs), (max))
static void send_sized(int line, const char *url, const char *body, json_t *attrs, unsigned max)
{
    struct it_reply r = it_call(&srv, "SendMessage", send_req(url, body, attrs));
    if (max == 0) {
        it_check_ok(__FILE__, line, &r);
    } else {
        char want[128];
        snprintf(want, sizeof want,
                 "One or more parameters are invalid. Reason: Message must be shorter than %u "
                 "bytes.",
                 max);
        it_check_err(__FILE__, line, &r, 400, IPV, IPV_SHAPE, want);
    }
    it_reply_free(&r);
}

static void set_max_size(const char *url, const char *bytes)
{
    struct it_reply r = it_call(
        &srv, "SetQueueAttributes",
        json_pack("{s:s,s:{s:s}}", "QueueUrl", url, "Attributes", "MaximumMessageSize", bytes));
    IT_OK(&r);
    it_reply_free(&r);
}

static json_t *typed_attr(const char *name, const char *type, const char *member, const char *value)
{
    return json_pack("{s:{s:s,s:s}}", name, "DataType", type, member, value);
}

/* MaximumMessageSize counts the body plus each attribute's name, type and
 * value; exactly the maximum is fine, one byte more is refused. */
static void message_size(void)
{
    char *small =
        it_create_queue(&srv, "s-small", json_pack("{s:s}", "MaximumMessageSize", "1024"));
    char *body = malloc(1048578);
    memset(body, 'x', 1048577);
    body[1024] = '\0';
    SEND_FITS(small, body, NULL);
    body[1024] = 'x';
    body[1025] = '\0';
    SEND_TOO_LONG(small, body, NULL, 1024);
    /* 1000 + "abcd" + "String" + 15 = 1025. */
    body[1000] = '\0';
    SEND_TOO_LONG(small, body, typed_attr("abcd", "String", "StringValue", "123456789012345"),
                  1024);
    SEND_FITS(small, body, typed_attr("abcd", "String", "StringValue", "12345678901234"));
    /* A custom type counts with its label: 1000 + "abcd" + "Number.x" + 13
     * = 1025. */
    SEND_TOO_LONG(small, body, typed_attr("abcd", "Number.x", "StringValue", "1234567890123"),
                  1024);
    /* A Binary value counts its bytes, not its base64 text: 1000 + "abcd" +
     * "Binary" + 14 bytes (20 base64 characters) = 1024. */
    SEND_FITS(small, body, typed_attr("abcd", "Binary", "BinaryValue", "MDEyMzQ1Njc4OTAxMjM="));
    /* The body counts its UTF-8 bytes: 512 two-byte characters are 1024
     * bytes, one more ASCII byte is too many. */
    char *wide = malloc(1026);
    for (int k = 0; k < 512; k++) {
        memcpy(wide + 2 * (size_t)k, "\xc3\xa9", 2);
    }
    wide[1024] = '\0';
    SEND_FITS(small, wide, NULL);
    wide[1024] = 'x';
    wide[1025] = '\0';
    SEND_TOO_LONG(small, wide, NULL, 1024);
    free(wide);
    /* A changed maximum applies at once, raised (LS
     * test_send_message_with_updated_maximum_message_size) and lowered. */
    body[1000] = 'x';
    body[1025] = '\0';
    set_max_size(small, "2048");
    SEND_FITS(small, body, NULL);
    set_max_size(small, "1024");
    SEND_TOO_LONG(small, body, NULL, 1024);

    /* The default: 1 MiB. */
    char *big = it_create_queue(&srv, "s-big", NULL);
    memset(body, 'x', 1048577);
    body[1048576] = '\0';
    SEND_FITS(big, body, NULL);
    struct it_reply r = it_receive(&srv, big, NULL);
    IT_CHECK(it_message_count(&r) == 1);
    const char *got = it_jstr(first(&r), "Body");
    IT_CHECK(got != NULL && strlen(got) == 1048576);
    it_reply_free(&r);
    body[1048576] = 'x';
    body[1048577] = '\0';
    SEND_TOO_LONG(big, body, NULL, 1048576);
    free(body);
    free(big);
    free(small);
}

static void attribute_limits(void)
{
    char *url = it_create_queue(&srv, "s-alimits", NULL);
    json_t *eleven = json_object();
    for (int i = 0; i < 11; i++) {
        char name[16];
        snprintf(name, sizeof name, "a%d", i);
        json_object_set_new(eleven, name, str_attr("v"));
    }
    json_t *ten = json_deep_copy(eleven);
    json_object_del(ten, "a10");
    struct it_reply r = it_call(&srv, "SendMessage", send_req(url, "x", eleven));
    IT_ERR(&r, 400, IPV, IPV_SHAPE, NULL);
    it_reply_free(&r);
    r = it_call(&srv, "SendMessage", send_req(url, "x", ten));
    IT_OK(&r);
    it_reply_free(&r);

    char long_name[258];
    memset(long_name, 'n', 257);
    long_name[257] = '\0';
    const char *bad_names[] = {"AWS.x", "amazon.x", ".lead",  "trail.",
                               "a..b",  "bad!name", long_name};
    for (size_t i = 0; i < sizeof bad_names / sizeof bad_names[0]; i++) {
        r = it_call(&srv, "SendMessage",
                    send_req(url, "x", json_pack("{s:o}", bad_names[i], str_attr("v"))));
        IT_ERR(&r, 400, IPV, IPV_SHAPE, NULL);
        it_reply_free(&r);
    }
    long_name[256] = '\0'; /* 256 is the maximum */
    r = it_call(&srv, "SendMessage",
                send_req(url, "x", json_pack("{s:o}", long_name, str_attr("v"))));
    IT_OK(&r);
    it_reply_free(&r);
    /* Umlauts in names are allowed (LS test_send_message_with_attributes). */
    r = it_call(&srv, "SendMessage",
                send_req(url, "x", json_pack("{s:o}", "\xc3\x9cmlaut", str_attr("v"))));
    IT_OK(&r);
    it_reply_free(&r);
    r = it_call(&srv, "SendMessage",
                send_req(url, "x", json_pack("{s:o}", "ErrorDetails", str_attr(""))));
    IT_ERR(&r, 400, IPV, IPV_SHAPE,
           "Message (user) attribute 'ErrorDetails' must contain a non-empty value of type "
           "'String'.");
    it_reply_free(&r);
    /* Custom types and a bad type. */
    r = it_call(
        &srv, "SendMessage",
        send_req(url, "x",
                 json_pack("{s:{s:s,s:s}}", "n", "DataType", "Number", "StringValue", "12.5")));
    IT_OK(&r);
    it_reply_free(&r);
    r = it_call(&srv, "SendMessage",
                send_req(url, "x",
                         json_pack("{s:{s:s,s:s}}", "t", "DataType", "Text", "StringValue", "v")));
    IT_ERR(&r, 400, IPV, IPV_SHAPE, NULL);
    it_reply_free(&r);
    free(url);
}

/* MessageGroupId on a standard queue: fair queues (research 0.2, 4.35). */
static void group_id_on_standard(void)
{
    char *url = it_create_queue(&srv, "s-fair", NULL);
    json_t *req = send_req(url, "fair", NULL);
    json_object_set_new(req, "MessageGroupId", json_string("tenant-7"));
    struct it_reply r = it_call(&srv, "SendMessage", req);
    IT_OK(&r);
    IT_CHECK(json_object_get(r.json, "SequenceNumber") == NULL);
    it_reply_free(&r);
    r = peek(url, json_pack("{s:[s]}", "MessageSystemAttributeNames", "All"));
    IT_STREQ(it_jstr(json_object_get(first(&r), "Attributes"), "MessageGroupId"), "tenant-7");
    it_reply_free(&r);
    char long_id[130];
    memset(long_id, 'g', 129);
    long_id[129] = '\0';
    const char *bad[] = {"", "has space", long_id};
    for (size_t i = 0; i < 3; i++) {
        req = send_req(url, "fair", NULL);
        json_object_set_new(req, "MessageGroupId", json_string(bad[i]));
        r = it_call(&srv, "SendMessage", req);
        char want[512];
        snprintf(want, sizeof want,
                 "Value %s for parameter MessageGroupId is invalid. Reason: MessageGroupId can "
                 "only include alphanumeric and punctuation characters. 1 to 128 in length.",
                 bad[i]);
        IT_ERR(&r, 400, IPV, IPV_SHAPE, i > 0 ? want : NULL);
        it_reply_free(&r);
    }
    free(url);
}

static json_t *entry(const char *id, const char *body)
{
    return json_pack("{s:s,s:s}", "Id", id, "MessageBody", body);
}

static void send_batch(void)
{
    char *url = it_create_queue(&srv, "s-batch", NULL);
    json_t *e2 = entry("two", "message-1");
    json_object_set_new(e2, "MessageAttributes",
                        json_pack("{s:o}", "MyAttribute", str_attr("foobar")));
    json_object_set_new(e2, "DelaySeconds", json_integer(0));
    struct it_reply r = it_call(&srv, "SendMessageBatch",
                                json_pack("{s:s,s:[o,o,o]}", "QueueUrl", url, "Entries",
                                          entry("one", "message"), e2, entry("bad", "nul\x01")));
    IT_OK(&r);
    json_t *ok = json_object_get(r.json, "Successful");
    json_t *failed = json_object_get(r.json, "Failed");
    IT_CHECK(json_array_size(ok) == 2);
    IT_CHECK(json_array_size(failed) == 1);
    size_t i;
    json_t *v;
    json_array_foreach(ok, i, v)
    {
        const char *id = it_jstr(v, "Id");
        IT_CHECK(it_jstr(v, "MessageId") != NULL && strlen(it_jstr(v, "MessageId")) == 36);
        if (id != NULL && strcmp(id, "one") == 0) {
            IT_STREQ(it_jstr(v, "MD5OfMessageBody"), "78e731027d8fd50ed642340b7c9a63b3");
            IT_CHECK(json_object_get(v, "MD5OfMessageAttributes") == NULL);
        } else {
            IT_STREQ(id, "two");
            IT_STREQ(it_jstr(v, "MD5OfMessageBody"), "3d6b824fd8c1520e9a047d21fee6fb1f");
            IT_STREQ(it_jstr(v, "MD5OfMessageAttributes"), "adb59cd4678ea5a855436b949cd07ab6");
        }
    }
    json_t *f = json_array_get(failed, 0);
    IT_STREQ(it_jstr(f, "Id"), "bad");
    IT_STREQ(it_jstr(f, "Code"), "InvalidMessageContents");
    IT_CHECK(json_is_true(json_object_get(f, "SenderFault")));
    IT_CHECK(it_jstr(f, "Message") != NULL);
    it_reply_free(&r);
    IT_CHECK(it_queue_attr_int(&srv, url, "ApproximateNumberOfMessages") == 2);

    /* Batch-wide errors: nothing is stored. */
    r = it_call(&srv, "SendMessageBatch", json_pack("{s:s,s:[]}", "QueueUrl", url, "Entries"));
    IT_ERR(&r, 400, "AWS.SimpleQueueService.EmptyBatchRequest", "EmptyBatchRequest", NULL);
    it_reply_free(&r);
    json_t *many = json_array();
    for (int k = 0; k < 11; k++) {
        char id[8];
        snprintf(id, sizeof id, "e%d", k);
        json_array_append_new(many, entry(id, "x"));
    }
    r = it_call(&srv, "SendMessageBatch", json_pack("{s:s,s:o}", "QueueUrl", url, "Entries", many));
    IT_ERR(&r, 400, "AWS.SimpleQueueService.TooManyEntriesInBatchRequest",
           "TooManyEntriesInBatchRequest",
           "Maximum number of entries per request are 10. You have sent 11.");
    it_reply_free(&r);
    r = it_call(&srv, "SendMessageBatch",
                json_pack("{s:s,s:[o,o]}", "QueueUrl", url, "Entries", entry("same", "a"),
                          entry("same", "b")));
    IT_ERR(&r, 400, "AWS.SimpleQueueService.BatchEntryIdsNotDistinct", "BatchEntryIdsNotDistinct",
           NULL);
    it_reply_free(&r);
    char id81[82];
    memset(id81, 'i', 81);
    id81[81] = '\0';
    const char *bad_ids[] = {"invalid:id", "", id81};
    for (size_t k = 0; k < 3; k++) {
        r = it_call(&srv, "SendMessageBatch",
                    json_pack("{s:s,s:[o]}", "QueueUrl", url, "Entries", entry(bad_ids[k], "a")));
        IT_ERR(&r, 400, "AWS.SimpleQueueService.InvalidBatchEntryId", "InvalidBatchEntryId",
               "A batch entry id can only contain alphanumeric characters, hyphens and "
               "underscores. It can be at most 80 letters long.");
        it_reply_free(&r);
    }
    /* Two 600,000-byte bodies: 1,200,000 bytes in all. */
    char *body = malloc(600001);
    memset(body, 'b', 600000);
    body[600000] = '\0';
    r = it_call(&srv, "SendMessageBatch",
                json_pack("{s:s,s:[o,o]}", "QueueUrl", url, "Entries", entry("b1", body),
                          entry("b2", body)));
    IT_ERR(&r, 400, "AWS.SimpleQueueService.BatchRequestTooLong", "BatchRequestTooLong",
           "Batch requests cannot be longer than 1048576 bytes. You have sent 1200000 bytes.");
    it_reply_free(&r);
    free(body);
    IT_CHECK(it_queue_attr_int(&srv, url, "ApproximateNumberOfMessages") == 2);

    /* Per-entry DelaySeconds. */
    json_t *late = entry("late", "later");
    json_object_set_new(late, "DelaySeconds", json_integer(600));
    r = it_call(&srv, "SendMessageBatch",
                json_pack("{s:s,s:[o]}", "QueueUrl", url, "Entries", late));
    IT_OK(&r);
    it_reply_free(&r);
    IT_CHECK(it_queue_attr_int(&srv, url, "ApproximateNumberOfMessagesDelayed") == 1);
    free(url);
}

/* Forgets the stored digests of every message in every partition file, as
 * a file of partition schema 1 has none. sluiced must be stopped. */
static int forget_digests(void)
{
    char pattern[400];
    snprintf(pattern, sizeof pattern, "%s/part-*.db", srv.data_dir);
    glob_t g;
    if (glob(pattern, 0, NULL, &g) != 0) {
        return -1;
    }
    int rows = 0;
    for (size_t i = 0; i < g.gl_pathc; i++) {
        sqlite3 *db = NULL;
        if (sqlite3_open(g.gl_pathv[i], &db) == SQLITE_OK &&
            sqlite3_exec(db, "UPDATE msg SET digests = NULL WHERE digests IS NOT NULL", NULL, NULL,
                         NULL) == SQLITE_OK) {
            rows += sqlite3_changes(db);
        } else {
            rows = -1000;
        }
        sqlite3_close(db);
    }
    globfree(&g);
    return rows;
}

/* A message without stored digests gets its MD5s hashed at receive, the
 * same as the ones its send answered. Runs last: it restarts sluiced. */
static void digests_from_before_schema_2(void)
{
    char *url = it_create_queue(&srv, "s-old-digests", NULL);
    json_t *attrs = json_pack("{s:o}", "MyAttribute", str_attr("foobar"));
    struct it_reply r = it_call(&srv, "SendMessage", send_req(url, "message", attrs));
    IT_OK(&r);
    it_reply_free(&r);
    IT_CHECK(it_server_stop(&srv) == 0);
    IT_CHECK(forget_digests() >= 1); /* also what earlier checks left */
    IT_REQUIRE(it_server_restart(&srv) == 0);
    r = it_receive(&srv, url, json_pack("{s:[s]}", "MessageAttributeNames", "All"));
    IT_CHECK(it_message_count(&r) == 1);
    json_t *m = first(&r);
    IT_STREQ(it_jstr(m, "MD5OfBody"), "78e731027d8fd50ed642340b7c9a63b3");
    IT_STREQ(it_jstr(m, "MD5OfMessageAttributes"), "adb59cd4678ea5a855436b949cd07ab6");
    it_reply_free(&r);
    free(url);
}

int main(void)
{
    struct it_options opt = {.tls = false};
    IT_REQUIRE(it_server_start(&srv, &opt) == 0);
    body_md5();
    attribute_md5_vectors();
    attribute_filters();
    system_attributes();
    trace_id_header();
    body_rules();
    message_size();
    attribute_limits();
    group_id_on_standard();
    send_batch();
    digests_from_before_schema_2();
    IT_CHECK(it_healthz(&srv));
    IT_CHECK(it_server_stop(&srv) == 0);
    it_server_cleanup(&srv);
    return it_summary();
}
