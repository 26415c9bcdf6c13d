/*
 * test_sqs_query_xml.c -- the query protocol's XML replies (gw_sqs_xml.c,
 * gw_xml.c): the exact bytes of every reply shape and of errors, the
 * escaping of text (CR as &#xD;, what XML 1.0 cannot hold as U+FFFD), and
 * that tags balance.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gw_sqs.h"
#include "gw_text.h"

#define PROLOG "<?xml version=\"1.0\"?>"
#define NS " xmlns=\"http://queue.amazonaws.com/doc/2012-11-05/\""
#define META "<ResponseMetadata><RequestId>rid</RequestId></ResponseMetadata>"
#define OK(action, inner)                                                                          \
    PROLOG "<" action "Response" NS "><" action "Result>" inner "</" action "Result>" META         \
           "</" action "Response>"

/* Every element opened is closed, in order (no attributes but xmlns, no
 * self-closing tags but <Detail/>). */
static void assert_balanced(const char *xml)
{
    const char *stack[64] = {0};
    size_t lens[64] = {0};
    size_t depth = 0;
    const char *p = strstr(xml, "?>");
    assert_non_null(p);
    for (p += 2; (p = strchr(p, '<')) != NULL;) {
        const char *end = strchr(p, '>');
        assert_non_null(end);
        if (end[-1] == '/') {
            p = end;
            continue;
        }
        if (p[1] == '/') {
            assert_true(depth > 0);
            depth--;
            assert_int_equal((size_t)(end - p - 2), lens[depth]);
            assert_memory_equal(p + 2, stack[depth], lens[depth]);
        } else {
            const char *name_end = p + 1 + strcspn(p + 1, " >");
            assert_true(depth < 64);
            stack[depth] = p + 1;
            lens[depth] = (size_t)(name_end - p - 1);
            depth++;
        }
        p = end;
    }
    assert_int_equal(depth, 0);
}

static struct gw_sqs_reply reply_for(enum gw_sqs_action a)
{
    struct gw_sqs_reply r;
    gw_sqs_reply_init_for(&r, GW_SQS_PROTO_QUERY, a, "rid");
    return r;
}

static void expect(struct gw_sqs_reply *r, int status, const char *want)
{
    assert_int_equal(r->status, status);
    assert_string_equal(r->body.p, want);
    assert_balanced(r->body.p);
    struct gw_header h[GW_SQS_REPLY_MAX_HEADERS];
    assert_int_equal(gw_sqs_reply_headers(r, h), 1);
    assert_true(sl_slice_eq_cstr(h[0].value, "text/xml"));
    gw_sqs_reply_fini(r);
}

static void test_escaping(void **state)
{
    (void)state;
    struct sl_buf b;
    sl_buf_init(&b);
    gw_xml_text(&b, SL_SLICE_LIT("a&b<c>d\"e'\r\n\tf"));
    assert_string_equal(b.p, "a&amp;b&lt;c&gt;d\"e'&#xD;\n\tf");
    sl_buf_reset(&b);
    /* C0 controls, U+FFFE/U+FFFF and bytes that are not UTF-8 cannot be
     * XML 1.0 text: one U+FFFD each; other UTF-8 passes */
    gw_xml_text(
        &b, (struct sl_slice){"\x01x\x00\xef\xbf\xbe\xef\xbf\xbf\xff\xc3\xa9\xf0\x9f\x98\x80", 16});
    assert_string_equal(b.p, "\xef\xbf\xbdx\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xc3\xa9"
                             "\xf0\x9f\x98\x80");
    sl_buf_reset(&b);
    gw_xml_text(&b, SL_SLICE_LIT("\xed\xa0\x80")); /* an encoded surrogate */
    assert_string_equal(b.p, "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
    sl_buf_reset(&b);
    gw_xml_elem_base64(&b, "B", SL_SLICE_LIT("\x00\x01\x02"));
    assert_string_equal(b.p, "<B>AAEC</B>");
    sl_buf_reset(&b);
    gw_xml_elem_int(&b, "N", -42);
    gw_xml_elem_bool(&b, "T", true);
    assert_string_equal(b.p, "<N>-42</N><T>true</T>");
    sl_buf_free(&b);
}

static void test_errors(void **state)
{
    (void)state;
    struct gw_sqs_reply r = reply_for(GW_SQS_ACT_SEND_MESSAGE);
    struct gw_sqs_err err;
    gw_sqs_err_set(&err, GW_SQS_E_QUEUE_DOES_NOT_EXIST, NULL);
    gw_sqs_reply_error(&r, &err);
    expect(&r, 400,
           PROLOG "<ErrorResponse" NS "><Error><Type>Sender</Type>"
                  "<Code>AWS.SimpleQueueService.NonExistentQueue</Code>"
                  "<Message>The specified queue does not exist.</Message><Detail/></Error>"
                  "<RequestId>rid</RequestId></ErrorResponse>");
    r = reply_for(GW_SQS_ACT__COUNT);
    gw_sqs_err_set(&err, GW_SQS_E_INTERNAL_ERROR, "x < y & z");
    gw_sqs_reply_error(&r, &err);
    expect(&r, 500,
           PROLOG "<ErrorResponse" NS "><Error><Type>Receiver</Type><Code>InternalError</Code>"
                  "<Message>x &lt; y &amp; z</Message><Detail/></Error>"
                  "<RequestId>rid</RequestId></ErrorResponse>");
    r = reply_for(GW_SQS_ACT_LIST_QUEUES);
    gw_sqs_err_set(&err, GW_SQS_E_REQUEST_THROTTLED, NULL);
    gw_sqs_reply_error(&r, &err);
    assert_int_equal(r.status, 403);
    assert_non_null(strstr(r.body.p, "<Code>RequestThrottled</Code>"));
    gw_sqs_reply_fini(&r);
}

static void test_queue_replies(void **state)
{
    (void)state;
    struct gw_sqs_reply r = reply_for(GW_SQS_ACT_DELETE_QUEUE);
    gw_sqs_reply_empty(&r);
    expect(&r, 200, PROLOG "<DeleteQueueResponse" NS ">" META "</DeleteQueueResponse>");

    r = reply_for(GW_SQS_ACT_CREATE_QUEUE);
    gw_sqs_reply_queue_url(&r, SL_SLICE_LIT("http://h:1/acme/q"));
    expect(&r, 200, OK("CreateQueue", "<QueueUrl>http://h:1/acme/q</QueueUrl>"));

    struct sl_slice urls[] = {SL_SLICE_LIT("u1"), SL_SLICE_LIT("u2")};
    r = reply_for(GW_SQS_ACT_LIST_QUEUES);
    gw_sqs_reply_queue_urls(&r, urls, 2, SL_SLICE_LIT("t"));
    expect(&r, 200,
           OK("ListQueues", "<QueueUrl>u1</QueueUrl><QueueUrl>u2</QueueUrl>"
                            "<NextToken>t</NextToken>"));
    r = reply_for(GW_SQS_ACT_LIST_DEAD_LETTER_SOURCE_QUEUES);
    gw_sqs_reply_queue_urls(&r, NULL, 0, SL_SLICE_LIT(""));
    expect(&r, 200, OK("ListDeadLetterSourceQueues", ""));

    struct gw_sqs_tag kv[] = {{SL_SLICE_LIT("VisibilityTimeout"), SL_SLICE_LIT("30")},
                              {SL_SLICE_LIT("Policy"), SL_SLICE_LIT("{\"a\":\"<b>\"}")}};
    r = reply_for(GW_SQS_ACT_GET_QUEUE_ATTRIBUTES);
    gw_sqs_reply_string_map(&r, kv, 2);
    expect(&r, 200,
           OK("GetQueueAttributes",
              "<Attribute><Name>VisibilityTimeout</Name><Value>30</Value></Attribute>"
              "<Attribute><Name>Policy</Name><Value>{\"a\":\"&lt;b&gt;\"}</Value></Attribute>"));
    r = reply_for(GW_SQS_ACT_LIST_QUEUE_TAGS);
    gw_sqs_reply_string_map(&r, kv, 1);
    expect(&r, 200,
           OK("ListQueueTags", "<Tag><Key>VisibilityTimeout</Key><Value>30</Value></Tag>"));

    r = reply_for(GW_SQS_ACT_START_MESSAGE_MOVE_TASK);
    gw_sqs_reply_task_handle(&r, "h=");
    expect(&r, 200, OK("StartMessageMoveTask", "<TaskHandle>h=</TaskHandle>"));
    r = reply_for(GW_SQS_ACT_CANCEL_MESSAGE_MOVE_TASK);
    gw_sqs_reply_moved(&r, 12);
    expect(&r, 200,
           OK("CancelMessageMoveTask",
              "<ApproximateNumberOfMessagesMoved>12</ApproximateNumberOfMessagesMoved>"));
    struct gw_sqs_move_task t = {.task_handle = "h",
                                 .status = "RUNNING",
                                 .source_arn = "s",
                                 .destination_arn = "d",
                                 .max_per_second = 5,
                                 .moved = 1,
                                 .to_move = 2,
                                 .started_ms = 1700000000000};
    r = reply_for(GW_SQS_ACT_LIST_MESSAGE_MOVE_TASKS);
    gw_sqs_reply_move_tasks(&r, &t, 1);
    expect(&r, 200,
           OK("ListMessageMoveTasks",
              "<ListMessageMoveTasksResultEntry><TaskHandle>h</TaskHandle><Status>RUNNING</Status>"
              "<SourceArn>s</SourceArn><DestinationArn>d</DestinationArn>"
              "<MaxNumberOfMessagesPerSecond>5</MaxNumberOfMessagesPerSecond>"
              "<ApproximateNumberOfMessagesMoved>1</ApproximateNumberOfMessagesMoved>"
              "<ApproximateNumberOfMessagesToMove>2</ApproximateNumberOfMessagesToMove>"
              "<StartedTimestamp>1700000000000</StartedTimestamp>"
              "</ListMessageMoveTasksResultEntry>"));
}

static void test_message_replies(void **state)
{
    (void)state;
    struct gw_sqs_send_result res = {
        .id = SL_SLICE_LIT("e1"),
        .message_id = "mid",
        .md5_of_body = "b5",
        .md5_of_attrs = "a5",
        .md5_of_sys_attrs = "",
        .sequence_number = SL_SLICE_LIT("17"),
    };
    struct gw_sqs_reply r = reply_for(GW_SQS_ACT_SEND_MESSAGE);
    gw_sqs_reply_send_result(&r, &res);
    expect(&r, 200,
           OK("SendMessage", "<MessageId>mid</MessageId><MD5OfMessageBody>b5</MD5OfMessageBody>"
                             "<MD5OfMessageAttributes>a5</MD5OfMessageAttributes>"
                             "<SequenceNumber>17</SequenceNumber>"));

    struct gw_sqs_err ferr;
    gw_sqs_err_set(&ferr, GW_SQS_E_INVALID_MESSAGE_CONTENTS, "bad");
    struct gw_sqs_batch_failure failed = {SL_SLICE_LIT("e2"), &ferr};
    res.md5_of_attrs[0] = '\0';
    res.sequence_number = (struct sl_slice){NULL, 0};
    r = reply_for(GW_SQS_ACT_SEND_MESSAGE_BATCH);
    gw_sqs_reply_send_batch(&r, &res, 1, &failed, 1);
    expect(&r, 200,
           OK("SendMessageBatch",
              "<SendMessageBatchResultEntry><Id>e1</Id><MessageId>mid</MessageId>"
              "<MD5OfMessageBody>b5</MD5OfMessageBody></SendMessageBatchResultEntry>"
              "<BatchResultErrorEntry><Id>e2</Id><SenderFault>true</SenderFault>"
              "<Code>InvalidMessageContents</Code><Message>bad</Message>"
              "</BatchResultErrorEntry>"));

    struct sl_slice ids[] = {SL_SLICE_LIT("a")};
    r = reply_for(GW_SQS_ACT_DELETE_MESSAGE_BATCH);
    gw_sqs_reply_id_batch(&r, ids, 1, NULL, 0);
    expect(&r, 200,
           OK("DeleteMessageBatch",
              "<DeleteMessageBatchResultEntry><Id>a</Id></DeleteMessageBatchResultEntry>"));
    r = reply_for(GW_SQS_ACT_CHANGE_MESSAGE_VISIBILITY_BATCH);
    gw_sqs_reply_id_batch(&r, NULL, 0, &failed, 1);
    assert_non_null(
        strstr(r.body.p, "<ChangeMessageVisibilityBatchResult><BatchResultErrorEntry>"));
    gw_sqs_reply_fini(&r);

    r = reply_for(GW_SQS_ACT_RECEIVE_MESSAGE);
    gw_sqs_reply_messages(&r, NULL, 0);
    expect(&r, 200, OK("ReceiveMessage", ""));

    struct gw_sqs_tag sys[] = {{SL_SLICE_LIT("SentTimestamp"), SL_SLICE_LIT("1")}};
    struct gw_sqs_msg_attr attrs[] = {
        {SL_SLICE_LIT("b"), SL_SLICE_LIT("Binary"), GW_SQS_ATTR_BINARY, SL_SLICE_LIT("\x01\x02")},
        {SL_SLICE_LIT("s"), SL_SLICE_LIT("String"), GW_SQS_ATTR_STRING, SL_SLICE_LIT("v")},
    };
    struct gw_sqs_received m = {
        .message_id = SL_SLICE_LIT("mid"),
        .receipt_handle = SL_SLICE_LIT("rh+/="),
        .body = SL_SLICE_LIT("line\r\n"),
        .system_attributes = sys,
        .system_attribute_count = 1,
        .attrs = attrs,
        .attr_count = 2,
    };
    char body_md5[33], attrs_md5[33];
    gw_sqs_md5_hex("line\r\n", 6, body_md5);
    assert_int_equal(gw_sqs_md5_of_attrs(attrs, 2, attrs_md5), SL_OK);
    char want[2048];
    snprintf(want, sizeof want,
             OK("ReceiveMessage",
                "<Message><MessageId>mid</MessageId><ReceiptHandle>rh+/=</ReceiptHandle>"
                "<MD5OfBody>%s</MD5OfBody><Body>line&#xD;\n</Body>"
                "<Attribute><Name>SentTimestamp</Name><Value>1</Value></Attribute>"
                "<MD5OfMessageAttributes>%s</MD5OfMessageAttributes>"
                "<MessageAttribute><Name>b</Name><Value><BinaryValue>AQI=</BinaryValue>"
                "<DataType>Binary</DataType></Value></MessageAttribute>"
                "<MessageAttribute><Name>s</Name><Value><StringValue>v</StringValue>"
                "<DataType>String</DataType></Value></MessageAttribute></Message>"),
             body_md5, attrs_md5);
    r = reply_for(GW_SQS_ACT_RECEIVE_MESSAGE);
    gw_sqs_reply_messages(&r, &m, 1);
    expect(&r, 200, want);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_escaping),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_queue_replies),
        cmocka_unit_test(test_message_replies),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
