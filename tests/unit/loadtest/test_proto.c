/*
 * test_proto.c -- the wire side of sluice-load: the XML scanner and its
 * entity decoding, the form encoder, request bodies and reply fields in
 * both SQS protocols, query-protocol error codes, and the HTTP/1.1 client
 * step fed from memory (pipelined replies, split reads, the server's last
 * reply, a reply nobody asked for).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lt_int.h"

/* ===== XML ============================================================== */

static const char receive_xml[] =
    "<?xml version=\"1.0\"?>\n"
    "<ReceiveMessageResponse xmlns=\"http://queue.amazonaws.com/doc/2012-11-05/\">"
    "<ReceiveMessageResult>"
    "<Message><MessageId>m-1</MessageId><ReceiptHandle>h&amp;1+/=</ReceiptHandle>"
    "<MD5OfBody>x</MD5OfBody><Body>a &lt;b&gt; &quot;c&quot; &apos;d&apos;&#xD;&#10;</Body>"
    "<Attribute><Name>SentTimestamp</Name><Value>1</Value></Attribute></Message>"
    "<!-- <Message><Body>not one</Body></Message> -->"
    "<Message><MessageId>m-2</MessageId><ReceiptHandle>h2</ReceiptHandle><Body/>"
    "<MessageAttribute><Name>k</Name></MessageAttribute></Message>"
    "</ReceiveMessageResult>"
    "<ResponseMetadata><RequestId>r</RequestId></ResponseMetadata>"
    "</ReceiveMessageResponse>";

static void xml_next_walks_elements(void **state)
{
    const char *cur = receive_xml;
    const char *end = receive_xml + strlen(receive_xml);
    struct sl_slice m;
    assert_int_equal(lt_xml_next(&cur, end, "Message", &m), SL_OK);
    /* MessageId and MessageAttribute are other names, not prefixes of it. */
    assert_true(m.n > 0 && memcmp(m.p, "<MessageId>m-1", 14) == 0);
    assert_int_equal(lt_xml_next(&cur, end, "Message", &m), SL_OK);
    assert_true(memcmp(m.p, "<MessageId>m-2", 14) == 0);
    assert_int_equal(lt_xml_next(&cur, end, "Message", &m), SL_ENOTFOUND);
}

static void xml_empty_and_nested(void **state)
{
    const char *doc = "<a x=\"1\"><b/><b>1<b>2</b>3</b><c /></a>";
    const char *cur = doc;
    const char *end = doc + strlen(doc);
    struct sl_slice in;
    assert_int_equal(lt_xml_next(&cur, end, "b", &in), SL_OK);
    assert_int_equal(in.n, 0);
    assert_int_equal(lt_xml_next(&cur, end, "b", &in), SL_OK);
    assert_int_equal(in.n, strlen("1<b>2</b>3"));
    assert_memory_equal(in.p, "1<b>2</b>3", in.n);
    assert_int_equal(lt_xml_next(&cur, end, "c", &in), SL_OK);
    assert_int_equal(in.n, 0);
    cur = doc;
    assert_int_equal(lt_xml_next(&cur, end, "a", &in), SL_OK); /* attributes skipped */
    assert_true(cur == end);
}

static void xml_malformed(void **state)
{
    const char *docs[] = {"<a>text", "<a><b>x</a", "<a", "<>x</>"};
    for (size_t i = 0; i < SL_ARRAY_LEN(docs); i++) {
        const char *cur = docs[i];
        struct sl_slice in;
        assert_int_equal(lt_xml_next(&cur, docs[i] + strlen(docs[i]), "a", &in), SL_EINVAL);
    }
}

static void xml_text_decodes_entities(void **state)
{
    struct sl_buf out;
    sl_buf_init(&out);
    assert_int_equal(lt_xml_child_text(sl_slice_cstr(receive_xml), "Body", &out), SL_OK);
    assert_string_equal(out.p, "a <b> \"c\" 'd'\r\n");
    sl_buf_reset(&out);
    assert_int_equal(lt_xml_text(sl_slice_cstr("&#65;&#x42;&#xe9;&#x20AC;&#x1F600;"), &out), SL_OK);
    assert_string_equal(out.p, "AB\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");
    sl_buf_reset(&out);
    assert_int_equal(lt_xml_text(sl_slice_cstr("x<![CDATA[<&>]]>y"), &out), SL_OK);
    assert_string_equal(out.p, "x<&>y");
    sl_buf_reset(&out);
    assert_int_equal(lt_xml_text(sl_slice_cstr(""), &out), SL_OK);
    assert_non_null(out.p);
    assert_string_equal(out.p, "");
    const char *bad[] = {"&bogus;",    "&amp",  "&#;",    "&#xD800;", "&#0;",
                         "&#x110000;", "a<b>c", "&#12a;", "&#x;"};
    for (size_t i = 0; i < SL_ARRAY_LEN(bad); i++) {
        sl_buf_reset(&out);
        sl_buf_append_cstr(&out, "keep");
        assert_int_equal(lt_xml_text(sl_slice_cstr(bad[i]), &out), SL_EINVAL);
        assert_string_equal(out.p, "keep");
    }
    sl_buf_reset(&out);
    assert_int_equal(lt_xml_child_text(sl_slice_cstr(receive_xml), "Nope", &out), SL_ENOTFOUND);
    sl_buf_free(&out);
}

/* ===== form encoding and request bodies ================================= */

static void form_encodes_rfc3986(void **state)
{
    struct sl_buf b;
    sl_buf_init(&b);
    lt_form_add(&b, sl_slice_cstr("http://h:1/t/q a+b&c=d~._-\xc3\xa9"), "QueueUrl");
    lt_form_add(&b, SL_SLICE_LIT(""), "Entry.%u.Id", 3u);
    assert_string_equal(b.p, "QueueUrl=http%3A%2F%2Fh%3A1%2Ft%2Fq%20a%2Bb%26c%3Dd~._-%C3%A9"
                             "&Entry.3.Id=");
    sl_buf_free(&b);
}

static void query_send_batch_body(void **state)
{
    struct sl_buf b;
    sl_buf_init(&b);
    lt_proto_send(&b, LT_PROTO_QUERY, "http://h/t/q", 32, 10, 7);
    const char *want_start = "Action=SendMessageBatch&Version=2012-11-05&QueueUrl=http%3A%2F%2Fh"
                             "%2Ft%2Fq&SendMessageBatchRequestEntry.1.Id=m0"
                             "&SendMessageBatchRequestEntry.1.MessageBody=ts%3D00000000000000000007"
                             "%3Bxxxxxxxx&SendMessageBatchRequestEntry.2.Id=m1";
    assert_memory_equal(b.p, want_start, strlen(want_start));
    assert_non_null(strstr(b.p, "&SendMessageBatchRequestEntry.10.Id=m9&"));
    assert_null(strstr(b.p, "Entry.11."));
    sl_buf_reset(&b);
    lt_proto_send(&b, LT_PROTO_QUERY, "u", 32, 1, 7);
    assert_string_equal(b.p, "Action=SendMessage&Version=2012-11-05&QueueUrl=u"
                             "&MessageBody=ts%3D00000000000000000007%3Bxxxxxxxx");
    sl_buf_reset(&b);
    lt_proto_send(&b, LT_PROTO_JSON, "u", 32, 1, 7);
    assert_string_equal(b.p, "{\"QueueUrl\":\"u\",\"MessageBody\":\"ts=00000000000000000007;"
                             "xxxxxxxx\"}");
    sl_buf_free(&b);
}

static void query_other_bodies(void **state)
{
    struct sl_buf b;
    sl_buf_init(&b);
    lt_proto_receive(&b, LT_PROTO_QUERY, "u", 10, 1);
    assert_string_equal(b.p, "Action=ReceiveMessage&Version=2012-11-05&QueueUrl=u"
                             "&MaxNumberOfMessages=10&WaitTimeSeconds=1&VisibilityTimeout=30");
    sl_buf_reset(&b);
    lt_proto_create_queue(&b, LT_PROTO_QUERY, "sluice-load-0");
    assert_string_equal(b.p, "Action=CreateQueue&Version=2012-11-05&QueueName=sluice-load-0");
    sl_buf_reset(&b);
    lt_proto_create_queue(&b, LT_PROTO_JSON, "a\"b");
    assert_string_equal(b.p, "{\"QueueName\":\"a\\\"b\"}");
    sl_buf_reset(&b);
    lt_proto_raw(&b, LT_PROTO_QUERY, "GetQueueUrl", "QueueName=q");
    assert_string_equal(b.p, "Action=GetQueueUrl&Version=2012-11-05&QueueName=q");
    sl_buf_reset(&b);
    lt_proto_raw(&b, LT_PROTO_QUERY, "ListQueues", "");
    assert_string_equal(b.p, "Action=ListQueues&Version=2012-11-05");
    sl_buf_reset(&b);

    struct lt_delete_batch d;
    lt_proto_delete_begin(&d, &b, LT_PROTO_QUERY, "u");
    lt_proto_delete_add(&d, sl_slice_cstr("h+1"));
    lt_proto_delete_add(&d, sl_slice_cstr("h/2"));
    lt_proto_delete_end(&d);
    assert_string_equal(b.p, "Action=DeleteMessageBatch&Version=2012-11-05&QueueUrl=u"
                             "&DeleteMessageBatchRequestEntry.1.Id=d0"
                             "&DeleteMessageBatchRequestEntry.1.ReceiptHandle=h%2B1"
                             "&DeleteMessageBatchRequestEntry.2.Id=d1"
                             "&DeleteMessageBatchRequestEntry.2.ReceiptHandle=h%2F2");
    sl_buf_reset(&b);
    lt_proto_delete_begin(&d, &b, LT_PROTO_JSON, "u");
    lt_proto_delete_add(&d, sl_slice_cstr("h\"1"));
    lt_proto_delete_add(&d, sl_slice_cstr("h2"));
    lt_proto_delete_end(&d);
    assert_string_equal(b.p, "{\"QueueUrl\":\"u\",\"Entries\":[{\"Id\":\"d0\",\"ReceiptHandle\":"
                             "\"h\\\"1\"},{\"Id\":\"d1\",\"ReceiptHandle\":\"h2\"}]}");
    sl_buf_free(&b);
}

/* ===== replies ========================================================== */

struct seen {
    char text[8][64];
    size_t n;
};

static void on_msg(void *data, struct sl_slice body, struct sl_slice handle)
{
    struct seen *s = data;
    assert_true(s->n < 8);
    snprintf(s->text[s->n++], sizeof(s->text[0]), "%.*s|%.*s", (int)body.n, body.p, (int)handle.n,
             handle.p);
}

static void on_code(void *data, const char *code)
{
    struct seen *s = data;
    assert_true(s->n < 8);
    snprintf(s->text[s->n++], sizeof(s->text[0]), "%s", code);
}

static void replies_in_both_protocols(void **state)
{
    struct seen s = {0};
    size_t n = 99;
    assert_int_equal(lt_proto_messages(LT_PROTO_QUERY, sl_slice_cstr(receive_xml), on_msg, &s, &n),
                     SL_OK);
    assert_int_equal(n, 2);
    assert_string_equal(s.text[0], "a <b> \"c\" 'd'\r\n|h&1+/=");
    assert_string_equal(s.text[1], "|h2");

    memset(&s, 0, sizeof(s));
    const char *json = "{\"Messages\":[{\"Body\":\"b1\",\"ReceiptHandle\":\"r1\"}]}";
    assert_int_equal(lt_proto_messages(LT_PROTO_JSON, sl_slice_cstr(json), on_msg, &s, &n), SL_OK);
    assert_int_equal(n, 1);
    assert_string_equal(s.text[0], "b1|r1");
    assert_int_equal(lt_proto_messages(LT_PROTO_JSON, sl_slice_cstr("{}"), on_msg, &s, &n), SL_OK);
    assert_int_equal(n, 0);
    assert_int_equal(
        lt_proto_messages(LT_PROTO_QUERY,
                          sl_slice_cstr("<R><Message><Body>&x;</Body>"
                                        "<ReceiptHandle>h</ReceiptHandle></Message></R>"),
                          on_msg, &s, &n),
        SL_EINVAL);
    /* A message without a receipt handle cannot be deleted: unreadable. */
    assert_int_equal(lt_proto_messages(LT_PROTO_QUERY,
                                       sl_slice_cstr("<R><Message><Body>b</Body></Message></R>"),
                                       on_msg, &s, &n),
                     SL_EINVAL);

    struct sl_buf url;
    sl_buf_init(&url);
    assert_int_equal(lt_proto_queue_url(LT_PROTO_QUERY,
                                        sl_slice_cstr("<CreateQueueResponse><CreateQueueResult>"
                                                      "<QueueUrl>http://h/t/q?a=1&amp;b</QueueUrl>"
                                                      "</CreateQueueResult></CreateQueueResponse>"),
                                        &url),
                     SL_OK);
    assert_string_equal(url.p, "http://h/t/q?a=1&b");
    sl_buf_reset(&url);
    assert_int_equal(lt_proto_queue_url(LT_PROTO_JSON, sl_slice_cstr("{\"QueueUrl\":\"u\"}"), &url),
                     SL_OK);
    assert_string_equal(url.p, "u");
    sl_buf_reset(&url);
    assert_int_equal(lt_proto_queue_url(LT_PROTO_JSON, sl_slice_cstr("{}"), &url), SL_ENOTFOUND);
    assert_int_equal(lt_proto_queue_url(LT_PROTO_JSON, sl_slice_cstr("<x/>"), &url), SL_EINVAL);
    sl_buf_free(&url);
}

static void batch_replies(void **state)
{
    const char *xml = "<SendMessageBatchResponse><SendMessageBatchResult>"
                      "<SendMessageBatchResultEntry><Id>m0</Id><MessageId>1</MessageId></"
                      "SendMessageBatchResultEntry>"
                      "<BatchResultErrorEntry><Id>m1</Id><Code>InvalidParameterValue</Code>"
                      "<SenderFault>true</SenderFault></BatchResultErrorEntry>"
                      "<SendMessageBatchResultEntry><Id>m2</Id></SendMessageBatchResultEntry>"
                      "<BatchResultErrorEntry><Id>m3</Id></BatchResultErrorEntry>"
                      "</SendMessageBatchResult></SendMessageBatchResponse>";
    struct seen s = {0};
    uint64_t ok = 99;
    assert_int_equal(lt_proto_batch(LT_PROTO_QUERY, sl_slice_cstr(xml), &ok, on_code, &s), SL_OK);
    assert_int_equal(ok, 2);
    assert_int_equal(s.n, 2);
    assert_string_equal(s.text[0], "InvalidParameterValue");
    assert_string_equal(s.text[1], "BatchEntryFailed");

    memset(&s, 0, sizeof(s));
    const char *del = "<DeleteMessageBatchResponse><DeleteMessageBatchResult>"
                      "<DeleteMessageBatchResultEntry><Id>d0</Id></DeleteMessageBatchResultEntry>"
                      "</DeleteMessageBatchResult></DeleteMessageBatchResponse>";
    assert_int_equal(lt_proto_batch(LT_PROTO_QUERY, sl_slice_cstr(del), &ok, on_code, &s), SL_OK);
    assert_int_equal(ok, 1);
    assert_int_equal(s.n, 0);

    const char *json = "{\"Successful\":[{},{},{}],\"Failed\":[{\"Code\":\"X\"}]}";
    assert_int_equal(lt_proto_batch(LT_PROTO_JSON, sl_slice_cstr(json), &ok, on_code, &s), SL_OK);
    assert_int_equal(ok, 3);
    assert_string_equal(s.text[0], "X");
    assert_int_equal(lt_proto_batch(LT_PROTO_JSON, sl_slice_cstr("nope"), &ok, on_code, &s),
                     SL_EINVAL);
}

static void xml_error_code(void **state)
{
    char code[LT_ERROR_CODE_MAX];
    const char *xml = "<?xml version=\"1.0\"?><ErrorResponse><Error><Type>Sender</Type>"
                      "<Code>AWS.SimpleQueueService.NonExistentQueue</Code>"
                      "<Message>The specified queue does not exist.</Message></Error>"
                      "<RequestId>r</RequestId></ErrorResponse>";
    lt_error_code(400, "", sl_slice_cstr(xml), code, sizeof(code));
    assert_string_equal(code, "AWS.SimpleQueueService.NonExistentQueue");
    /* An XML body without a code falls back to the header, then the status. */
    lt_error_code(403, "SignatureDoesNotMatch;Sender", sl_slice_cstr("<ErrorResponse/>"), code,
                  sizeof(code));
    assert_string_equal(code, "SignatureDoesNotMatch");
    lt_error_code(500, "", sl_slice_cstr("<html>oops</html>"), code, sizeof(code));
    assert_string_equal(code, "HTTP_500");
}

/* ===== HTTP/1.1 client step ============================================= */

struct h1_fixture {
    struct lt_req req[3];
    size_t sent; /* requests "written" */
    size_t done; /* replies delivered */
    struct lt_h1 *h;
};

static struct lt_req *fx_front(void *data)
{
    struct h1_fixture *fx = data;
    return fx->done < fx->sent ? &fx->req[fx->done] : NULL;
}

static void fx_done(void *data, struct lt_req *r)
{
    struct h1_fixture *fx = data;
    assert_ptr_equal(r, &fx->req[fx->done]);
    fx->done++;
}

static void fx_init(struct h1_fixture *fx, size_t sent)
{
    memset(fx, 0, sizeof(*fx));
    for (size_t i = 0; i < SL_ARRAY_LEN(fx->req); i++) {
        lt_req_init(&fx->req[i]);
    }
    fx->sent = sent;
    fx->h = lt_h1_new(fx_front, fx_done, fx);
}

static void fx_fini(struct h1_fixture *fx)
{
    for (size_t i = 0; i < SL_ARRAY_LEN(fx->req); i++) {
        lt_req_fini(&fx->req[i]);
    }
    lt_h1_free(fx->h);
}

static const char pipelined[] =
    "HTTP/1.1 200 OK\r\nContent-Type: text/xml\r\nContent-Length: 5\r\n\r\n<a/>\n"
    "HTTP/1.1 400 Bad Request\r\nX-Amzn-Query-Error: AWS.SimpleQueueService.NonExistentQueue;"
    "Sender\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n"
    "HTTP/1.1 100 Continue\r\n\r\n"
    "HTTP/1.1 204 No Content\r\n\r\n";

static void check_pipelined(struct h1_fixture *fx)
{
    assert_int_equal(fx->done, 3);
    assert_int_equal(fx->req[0].status, 200);
    assert_string_equal(fx->req[0].resp.p, "<a/>\n");
    assert_int_equal(fx->req[1].status, 400);
    assert_string_equal(fx->req[1].query_error, "AWS.SimpleQueueService.NonExistentQueue;Sender");
    assert_string_equal(fx->req[1].resp.p, "abcde");
    assert_int_equal(fx->req[2].status, 204);
    assert_int_equal(fx->req[2].resp.n, 0);
}

static void h1_pipelined_replies_in_order(void **state)
{
    struct h1_fixture fx;
    const char *why;
    fx_init(&fx, 3);
    assert_int_equal(lt_h1_feed(fx.h, pipelined, strlen(pipelined), &why), SL_OK);
    check_pipelined(&fx);
    fx_fini(&fx);

    /* The same bytes one at a time: every callback split. */
    fx_init(&fx, 3);
    for (size_t i = 0; i < strlen(pipelined); i++) {
        assert_int_equal(lt_h1_feed(fx.h, pipelined + i, 1, &why), SL_OK);
    }
    check_pipelined(&fx);
    fx_fini(&fx);
}

static void h1_last_reply_and_errors(void **state)
{
    struct h1_fixture fx;
    const char *why;
    fx_init(&fx, 2);
    const char *closing = "HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\n"
                          "Content-Length: 2\r\n\r\nnoHTTP/1.1 200 OK\r\n";
    assert_int_equal(lt_h1_feed(fx.h, closing, strlen(closing), &why), SL_ECLOSED);
    assert_string_equal(why, "ServerClosedConnection");
    assert_int_equal(fx.done, 1);
    assert_int_equal(fx.req[0].status, 503);
    assert_int_equal(lt_h1_feed(fx.h, "x", 1, &why), SL_ECLOSED);
    fx_fini(&fx);

    /* A body delimited by the close completes at end of stream. */
    fx_init(&fx, 1);
    const char *eof_body = "HTTP/1.1 200 OK\r\n\r\nuntil close";
    assert_int_equal(lt_h1_feed(fx.h, eof_body, strlen(eof_body), &why), SL_OK);
    assert_int_equal(fx.done, 0);
    assert_int_equal(lt_h1_feed(fx.h, NULL, 0, &why), SL_ECLOSED);
    assert_int_equal(fx.done, 1);
    assert_string_equal(fx.req[0].resp.p, "until close");
    fx_fini(&fx);

    fx_init(&fx, 0);
    const char *unasked = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
    assert_int_equal(lt_h1_feed(fx.h, unasked, strlen(unasked), &why), SL_EINVAL);
    assert_string_equal(why, "UnexpectedResponse");
    fx_fini(&fx);

    fx_init(&fx, 1);
    assert_int_equal(lt_h1_feed(fx.h, "HTTP/1.1 2x0 OK\r\n", 17, &why), SL_EINVAL);
    assert_non_null(why);
    fx_fini(&fx);
}

static void h1_request_bytes(void **state)
{
    struct sl_buf b;
    sl_buf_init(&b);
    struct sigv4_header h[] = {{SL_SLICE_LIT("content-type"), SL_SLICE_LIT(LT_FORM_CONTENT_TYPE)},
                               {SL_SLICE_LIT("x-amz-date"), SL_SLICE_LIT("20261125T000000Z")}};
    lt_h1_request(&b, "/", "127.0.0.1:9324", h, 2, sl_slice_cstr("Action=ListQueues"));
    assert_string_equal(b.p, "POST / HTTP/1.1\r\nhost: 127.0.0.1:9324\r\n"
                             "content-type: application/x-www-form-urlencoded; charset=utf-8\r\n"
                             "x-amz-date: 20261125T000000Z\r\ncontent-length: 17\r\n\r\n"
                             "Action=ListQueues");
    sl_buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(xml_next_walks_elements),
        cmocka_unit_test(xml_empty_and_nested),
        cmocka_unit_test(xml_malformed),
        cmocka_unit_test(xml_text_decodes_entities),
        cmocka_unit_test(form_encodes_rfc3986),
        cmocka_unit_test(query_send_batch_body),
        cmocka_unit_test(query_other_bodies),
        cmocka_unit_test(replies_in_both_protocols),
        cmocka_unit_test(batch_replies),
        cmocka_unit_test(xml_error_code),
        cmocka_unit_test(h1_pipelined_replies_in_order),
        cmocka_unit_test(h1_last_reply_and_errors),
        cmocka_unit_test(h1_request_bytes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
