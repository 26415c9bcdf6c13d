/*
 * test_sqs_encode.c -- replies as SQS shapes them: the error table's wire
 * strings, error bodies and headers, empty 200 bodies, success bodies.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "gw_sqs.h"

static void test_error_table(void **state)
{
    (void)state;
    static const struct {
        enum gw_sqs_error e;
        const char *type, *query;
        int status;
    } rows[] = {
        {GW_SQS_E_QUEUE_DOES_NOT_EXIST, "com.amazonaws.sqs#QueueDoesNotExist",
         "AWS.SimpleQueueService.NonExistentQueue", 400},
        {GW_SQS_E_QUEUE_NAME_EXISTS, "com.amazonaws.sqs#QueueNameExists", "QueueAlreadyExists",
         400},
        {GW_SQS_E_PURGE_QUEUE_IN_PROGRESS, "com.amazonaws.sqs#PurgeQueueInProgress",
         "AWS.SimpleQueueService.PurgeQueueInProgress", 403},
        {GW_SQS_E_RECEIPT_HANDLE_IS_INVALID, "com.amazonaws.sqs#ReceiptHandleIsInvalid",
         "ReceiptHandleIsInvalid", 404},
        {GW_SQS_E_OVER_LIMIT, "com.amazonaws.sqs#OverLimit", "OverLimit", 403},
        {GW_SQS_E_REQUEST_THROTTLED, "com.amazonaws.sqs#RequestThrottled", "RequestThrottled", 403},
        {GW_SQS_E_RESOURCE_NOT_FOUND, "com.amazonaws.sqs#ResourceNotFoundException",
         "ResourceNotFoundException", 404},
        {GW_SQS_E_BATCH_REQUEST_TOO_LONG, "com.amazonaws.sqs#BatchRequestTooLong",
         "AWS.SimpleQueueService.BatchRequestTooLong", 400},
        {GW_SQS_E_KMS_OPT_IN_REQUIRED, "com.amazonaws.sqs#KmsOptInRequired", "KMS.OptInRequired",
         403},
        {GW_SQS_E_INVALID_PARAMETER_VALUE,
         "com.amazon.coral.service#InvalidParameterValueException", "InvalidParameterValue", 400},
        {GW_SQS_E_MISSING_PARAMETER, "com.amazon.coral.service#MissingRequiredParameterException",
         "MissingParameter", 400},
        {GW_SQS_E_INVALID_CLIENT_TOKEN_ID, "com.amazon.coral.service#InvalidClientTokenId",
         "InvalidClientTokenId", 403},
        {GW_SQS_E_SIGNATURE_DOES_NOT_MATCH, "com.amazon.coral.service#SignatureDoesNotMatch",
         "SignatureDoesNotMatch", 403},
        {GW_SQS_E_INTERNAL_ERROR, "com.amazon.coral.service#InternalFailure", "InternalError", 500},
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(rows); i++) {
        const struct gw_sqs_error_info *info = gw_sqs_error_info(rows[i].e);
        assert_string_equal(info->type, rows[i].type);
        assert_string_equal(info->query_code, rows[i].query);
        assert_int_equal(info->status, rows[i].status);
    }
    /* every row is complete, and __type names are unique */
    for (int e = 1; e < GW_SQS_E__COUNT; e++) {
        const struct gw_sqs_error_info *a = gw_sqs_error_info((enum gw_sqs_error)e);
        assert_true(strchr(a->type, '#') != NULL);
        assert_true(a->query_code[0] != '\0' && a->message[0] != '\0');
        assert_true(a->status >= 400 && a->status < 600);
        assert_true(a->sender == (a->status < 500));
        for (int f = 1; f < e; f++) {
            assert_string_not_equal(a->type, gw_sqs_error_info((enum gw_sqs_error)f)->type);
        }
    }
}

static void test_actions_table(void **state)
{
    (void)state;
    assert_int_equal(GW_SQS_ACT__COUNT, 23);
    enum gw_sqs_action a;
    assert_true(gw_sqs_action_from_target(SL_SLICE_LIT("AmazonSQS.SendMessage"), &a));
    assert_int_equal(a, GW_SQS_ACT_SEND_MESSAGE);
    assert_true(
        gw_sqs_action_from_target(SL_SLICE_LIT("AmazonSQS.ListDeadLetterSourceQueues"), &a));
    assert_int_equal(a, GW_SQS_ACT_LIST_DEAD_LETTER_SOURCE_QUEUES);
    assert_false(gw_sqs_action_from_target(SL_SLICE_LIT("AmazonSQS.sendmessage"), &a));
    assert_false(gw_sqs_action_from_target(SL_SLICE_LIT("AmazonSQS."), &a));
    assert_false(gw_sqs_action_from_target(SL_SLICE_LIT("AmazonSNS.Publish"), &a));
    assert_false(gw_sqs_action_from_target(SL_SLICE_LIT("AmazonSQS.SendMessageX"), &a));
    for (int i = 0; i < GW_SQS_ACT__COUNT; i++) {
        char target[64];
        snprintf(target, sizeof(target), "AmazonSQS.%s", gw_sqs_action_name((enum gw_sqs_action)i));
        assert_true(gw_sqs_action_from_target(sl_slice_cstr(target), &a));
        assert_int_equal(a, i);
    }
}

static void test_error_reply(void **state)
{
    (void)state;
    struct gw_sqs_err err;
    assert_int_equal(gw_sqs_err_set(&err, GW_SQS_E_QUEUE_DOES_NOT_EXIST, NULL), SL_EINVAL);
    struct gw_sqs_reply r;
    gw_sqs_reply_init(&r);
    gw_sqs_reply_error(&r, &err);
    assert_int_equal(r.status, 400);
    assert_string_equal(r.body.p, "{\"__type\":\"com.amazonaws.sqs#QueueDoesNotExist\","
                                  "\"message\":\"The specified queue does not exist.\"}");
    struct gw_header h[GW_SQS_REPLY_MAX_HEADERS];
    assert_int_equal(gw_sqs_reply_headers(&r, h), 2);
    assert_true(sl_slice_eq_cstr(h[0].name, "content-type"));
    assert_true(sl_slice_eq_cstr(h[0].value, "application/x-amz-json-1.0"));
    assert_true(sl_slice_eq_cstr(h[1].name, "x-amzn-query-error"));
    assert_true(sl_slice_eq_cstr(h[1].value, "AWS.SimpleQueueService.NonExistentQueue;Sender"));

    gw_sqs_err_set(&err, GW_SQS_E_SERVICE_UNAVAILABLE, "down \"now\"");
    gw_sqs_reply_error(&r, &err);
    assert_int_equal(r.status, 503);
    assert_string_equal(r.body.p,
                        "{\"__type\":\"com.amazon.coral.service#"
                        "ServiceUnavailableException\",\"message\":\"down \\\"now\\\"\"}");
    assert_int_equal(gw_sqs_reply_headers(&r, h), 2);
    assert_true(sl_slice_eq_cstr(h[1].value, "ServiceUnavailable;Receiver"));

    /* a message cut in the middle of a UTF-8 sequence still encodes */
    memset(err.message, 0, sizeof(err.message));
    err.code = GW_SQS_E_INVALID_PARAMETER_VALUE;
    memcpy(err.message, "bad \xc3", 5);
    gw_sqs_reply_error(&r, &err);
    assert_non_null(strstr(r.body.p, "One or more parameters are invalid."));
    gw_sqs_reply_fini(&r);
}

/* A throttled answer carries its wait as Retry-After, in whole seconds
 * rounded up; no hint and "never" carry none; XML replies carry it too. */
static void test_retry_after(void **state)
{
    (void)state;
    struct gw_sqs_err err;
    gw_sqs_err_set(&err, GW_SQS_E_REQUEST_THROTTLED, "Rate exceeded.");
    struct gw_sqs_reply r;
    gw_sqs_reply_init(&r);
    gw_sqs_reply_error(&r, &err);
    struct gw_header h[GW_SQS_REPLY_MAX_HEADERS];
    assert_int_equal(gw_sqs_reply_headers(&r, h), 2);
    gw_sqs_reply_retry_after(&r, 1);
    assert_int_equal(gw_sqs_reply_headers(&r, h), 3);
    assert_true(sl_slice_eq_cstr(h[2].name, "retry-after"));
    assert_true(sl_slice_eq_cstr(h[2].value, "1"));
    gw_sqs_reply_retry_after(&r, 2000000000u);
    gw_sqs_reply_headers(&r, h);
    assert_true(sl_slice_eq_cstr(h[2].value, "2"));
    gw_sqs_reply_retry_after(&r, 2000000001u);
    gw_sqs_reply_headers(&r, h);
    assert_true(sl_slice_eq_cstr(h[2].value, "3"));
    gw_sqs_reply_retry_after(&r, UINT64_MAX);
    assert_int_equal(gw_sqs_reply_headers(&r, h), 2);
    gw_sqs_reply_retry_after(&r, 0);
    assert_int_equal(gw_sqs_reply_headers(&r, h), 2);
    gw_sqs_reply_fini(&r);

    gw_sqs_reply_init_for(&r, GW_SQS_PROTO_QUERY, GW_SQS_ACT_SEND_MESSAGE, "req-1");
    gw_sqs_reply_error(&r, &err);
    gw_sqs_reply_retry_after(&r, 500000000u);
    assert_int_equal(gw_sqs_reply_headers(&r, h), 2);
    assert_true(sl_slice_eq_cstr(h[1].name, "retry-after"));
    assert_true(sl_slice_eq_cstr(h[1].value, "1"));
    gw_sqs_reply_fini(&r);
}

static void test_empty_ok_reply(void **state)
{
    (void)state;
    struct gw_sqs_reply r;
    gw_sqs_reply_init(&r);
    gw_sqs_reply_empty(&r);
    assert_int_equal(r.status, 200);
    assert_int_equal(r.body.n, 0);
    struct gw_header h[GW_SQS_REPLY_MAX_HEADERS];
    assert_int_equal(gw_sqs_reply_headers(&r, h), 1);
    gw_sqs_reply_queue_url(&r, SL_SLICE_LIT("http://h:1/acme/q"));
    assert_string_equal(r.body.p, "{\"QueueUrl\":\"http://h:1/acme/q\"}");
    gw_sqs_reply_fini(&r);
}

/* The JSON body of a cold reply written for action. */
static void expect_cold(struct gw_sqs_reply *r, enum gw_sqs_action action, const char *want)
{
    assert_int_equal(r->status, 200);
    assert_int_equal(r->action, action);
    assert_string_equal(r->body.p, want);
    gw_sqs_reply_fini(r);
}

static void test_success_bodies(void **state)
{
    (void)state;
    struct gw_sqs_reply r;
    struct sl_slice urls[] = {SL_SLICE_LIT("u1"), SL_SLICE_LIT("u2")};
    gw_sqs_reply_init_for(&r, GW_SQS_PROTO_JSON, GW_SQS_ACT_LIST_QUEUES, NULL);
    gw_sqs_reply_queue_urls(&r, urls, 2, SL_SLICE_LIT(""));
    expect_cold(&r, GW_SQS_ACT_LIST_QUEUES, "{\"QueueUrls\":[\"u1\",\"u2\"]}");
    gw_sqs_reply_init_for(&r, GW_SQS_PROTO_JSON, GW_SQS_ACT_LIST_QUEUES, NULL);
    gw_sqs_reply_queue_urls(&r, NULL, 0, SL_SLICE_LIT(""));
    expect_cold(&r, GW_SQS_ACT_LIST_QUEUES, "{}");
    gw_sqs_reply_init_for(&r, GW_SQS_PROTO_JSON, GW_SQS_ACT_LIST_DEAD_LETTER_SOURCE_QUEUES, NULL);
    gw_sqs_reply_queue_urls(&r, NULL, 0, SL_SLICE_LIT("t"));
    expect_cold(&r, GW_SQS_ACT_LIST_DEAD_LETTER_SOURCE_QUEUES,
                "{\"queueUrls\":[],\"NextToken\":\"t\"}");
    struct gw_sqs_tag tags[] = {{SL_SLICE_LIT("k"), SL_SLICE_LIT("v")},
                                {SL_SLICE_LIT("a"), SL_SLICE_LIT("\"")}};
    gw_sqs_reply_init_for(&r, GW_SQS_PROTO_JSON, GW_SQS_ACT_LIST_QUEUE_TAGS, NULL);
    gw_sqs_reply_string_map(&r, tags, 2);
    expect_cold(&r, GW_SQS_ACT_LIST_QUEUE_TAGS, "{\"Tags\":{\"k\":\"v\",\"a\":\"\\\"\"}}");
    gw_sqs_reply_init_for(&r, GW_SQS_PROTO_JSON, GW_SQS_ACT_LIST_QUEUE_TAGS, NULL);
    gw_sqs_reply_string_map(&r, NULL, 0);
    expect_cold(&r, GW_SQS_ACT_LIST_QUEUE_TAGS, "{}");
    gw_sqs_reply_init_for(&r, GW_SQS_PROTO_JSON, GW_SQS_ACT_GET_QUEUE_ATTRIBUTES, NULL);
    gw_sqs_reply_string_map(&r, tags, 1);
    expect_cold(&r, GW_SQS_ACT_GET_QUEUE_ATTRIBUTES, "{\"Attributes\":{\"k\":\"v\"}}");
    gw_sqs_reply_init_for(&r, GW_SQS_PROTO_JSON, GW_SQS_ACT_START_MESSAGE_MOVE_TASK, NULL);
    gw_sqs_reply_task_handle(&r, "h");
    expect_cold(&r, GW_SQS_ACT_START_MESSAGE_MOVE_TASK, "{\"TaskHandle\":\"h\"}");
    gw_sqs_reply_init_for(&r, GW_SQS_PROTO_JSON, GW_SQS_ACT_CANCEL_MESSAGE_MOVE_TASK, NULL);
    gw_sqs_reply_moved(&r, 7);
    expect_cold(&r, GW_SQS_ACT_CANCEL_MESSAGE_MOVE_TASK,
                "{\"ApproximateNumberOfMessagesMoved\":7}");
    struct gw_sqs_move_task tasks[] = {
        {.task_handle = "h",
         .status = "RUNNING",
         .source_arn = "s",
         .destination_arn = "d",
         .max_per_second = 5,
         .moved = 1,
         .to_move = 2,
         .started_ms = 1700000000000},
        {.status = "FAILED", .source_arn = "s", .failure_reason = "gone", .started_ms = 1},
    };
    gw_sqs_reply_init_for(&r, GW_SQS_PROTO_JSON, GW_SQS_ACT_LIST_MESSAGE_MOVE_TASKS, NULL);
    gw_sqs_reply_move_tasks(&r, tasks, 2);
    expect_cold(&r, GW_SQS_ACT_LIST_MESSAGE_MOVE_TASKS,
                "{\"Results\":[{\"TaskHandle\":\"h\",\"Status\":\"RUNNING\",\"SourceArn\":\"s\","
                "\"DestinationArn\":\"d\",\"MaxNumberOfMessagesPerSecond\":5,"
                "\"ApproximateNumberOfMessagesMoved\":1,\"ApproximateNumberOfMessagesToMove\":2,"
                "\"StartedTimestamp\":1700000000000},{\"Status\":\"FAILED\",\"SourceArn\":\"s\","
                "\"ApproximateNumberOfMessagesMoved\":0,\"ApproximateNumberOfMessagesToMove\":0,"
                "\"FailureReason\":\"gone\",\"StartedTimestamp\":1}]}");
    gw_sqs_reply_init_for(&r, GW_SQS_PROTO_JSON, GW_SQS_ACT_LIST_MESSAGE_MOVE_TASKS, NULL);
    gw_sqs_reply_move_tasks(&r, NULL, 0);
    expect_cold(&r, GW_SQS_ACT_LIST_MESSAGE_MOVE_TASKS, "{\"Results\":[]}");
}

/* A directly written reply is a 200 with the content-type header only and
 * exactly the body want (written out by hand in SQS's member order; the
 * MD5s in it were computed outside sluice). */
static void expect_reply(const struct gw_sqs_reply *r, const char *want)
{
    assert_int_equal(r->status, 200);
    assert_int_equal(r->error, GW_SQS_OK);
    struct gw_header h[GW_SQS_REPLY_MAX_HEADERS];
    assert_int_equal(gw_sqs_reply_headers(r, h), 1);
    assert_string_equal(r->body.p, want);
    assert_int_equal(r->body.n, strlen(want));
    json_error_t jerr;
    json_t *back = json_loadb(r->body.p, r->body.n, 0, &jerr);
    assert_non_null(back);
    json_decref(back);
}

#define RESULT_PLAIN                                                                               \
    "\"MessageId\":\"5fea7756-0ea4-451a-a703-a558b933e274\","                                      \
    "\"MD5OfMessageBody\":\"7dbecf2e96231dbc184248222c8955b6\""
#define RESULT_RICH                                                                                \
    "\"MessageId\":\"00000000-0000-4000-8000-000000000000\","                                      \
    "\"MD5OfMessageBody\":\"9dd4e461268c8034f5c8564e155c67a6\","                                   \
    "\"MD5OfMessageAttributes\":\"d3ebb034ad9c6c6605d664df2b8f79ef\","                             \
    "\"MD5OfMessageSystemAttributes\":\"62a56dd927315f2b2e12832b84617ea5\","                       \
    "\"SequenceNumber\":\"18849496460467696128\""
#define FAILED_BAD_BODY                                                                            \
    "{\"Id\":\"f1\",\"SenderFault\":true,\"Code\":\"InvalidMessageContents\","                     \
    "\"Message\":\"Invalid binary character '#x1' in \\\"b\\u0001\\u001F\\b\\f/\\\"\\n\"}"
#define FAILED_CUT                                                                                 \
    "{\"Id\":\"f2\",\"SenderFault\":true,\"Code\":\"InvalidParameterValue\","                      \
    "\"Message\":\"One or more parameters are invalid.\"}"
#define FAILED_INTERNAL                                                                            \
    "{\"Id\":\"f3\",\"SenderFault\":false,\"Code\":\"InternalError\","                             \
    "\"Message\":\"The request processing has failed because of an unknown error, exception or "   \
    "failure.\"}"

static void test_send_replies(void **state)
{
    (void)state;
    struct gw_sqs_reply r;
    gw_sqs_reply_init(&r);
    /* a reply reused after an error turns into a 200 */
    struct gw_sqs_err internal;
    gw_sqs_err_set(&internal, GW_SQS_E_INTERNAL_ERROR, NULL);
    gw_sqs_reply_error(&r, &internal);

    struct gw_sqs_send_result simple = {0};
    snprintf(simple.message_id, sizeof(simple.message_id), "%s",
             "00000000-0000-4000-8000-000000000000");
    struct gw_sqs_send_entry message = {.body = SL_SLICE_LIT("message")};
    gw_sqs_send_result_digest(&message, &simple);
    gw_sqs_reply_send_result(&r, &simple);
    expect_reply(&r, "{\"MessageId\":\"00000000-0000-4000-8000-000000000000\","
                     "\"MD5OfMessageBody\":\"78e731027d8fd50ed642340b7c9a63b3\"}");

    struct gw_sqs_msg_attr attrs[] = {
        {SL_SLICE_LIT("n"), SL_SLICE_LIT("Number"), GW_SQS_ATTR_NUMBER, SL_SLICE_LIT("1.5")},
    };
    struct gw_sqs_send_entry plain = {.body = SL_SLICE_LIT("tab\there \"q\" \xc3\xa9\n")};
    struct gw_sqs_send_entry rich = {
        .body = SL_SLICE_LIT("x"),
        .attrs = attrs,
        .attr_count = 1,
        .has_trace_header = true,
        .trace_header = SL_SLICE_LIT("Root=1-5759e988-bd862e3fe1be46a994272793"),
    };
    struct gw_sqs_send_result res[2] = {
        {.id = SL_SLICE_LIT("first")},
        {.id = SL_SLICE_LIT("second-2"), .sequence_number = SL_SLICE_LIT("18849496460467696128")},
    };
    snprintf(res[0].message_id, sizeof(res[0].message_id), "%s",
             "5fea7756-0ea4-451a-a703-a558b933e274");
    snprintf(res[1].message_id, sizeof(res[1].message_id), "%s",
             "00000000-0000-4000-8000-000000000000");
    gw_sqs_send_result_digest(&plain, &res[0]);
    gw_sqs_send_result_digest(&rich, &res[1]);
    gw_sqs_reply_send_result(&r, &res[0]);
    expect_reply(&r, "{" RESULT_PLAIN "}");
    gw_sqs_reply_send_result(&r, &res[1]);
    expect_reply(&r, "{" RESULT_RICH "}");

    /* the failures' messages: one quoting control characters, one cut
     * inside a UTF-8 sequence (the table's message stands in), one of a
     * Receiver fault */
    struct gw_sqs_err bad_body, cut;
    gw_sqs_err_set(&bad_body, GW_SQS_E_INVALID_MESSAGE_CONTENTS,
                   "Invalid binary character '#x1' in \"b\x01\x1f\b\f/\"\n");
    gw_sqs_err_set(&cut, GW_SQS_E_INVALID_PARAMETER_VALUE, "bad \xc3");
    struct gw_sqs_batch_failure failed[] = {{SL_SLICE_LIT("f1"), &bad_body},
                                            {SL_SLICE_LIT("f2"), &cut},
                                            {SL_SLICE_LIT("f3"), &internal}};
    gw_sqs_reply_send_batch(&r, res, 2, failed, 3);
    expect_reply(&r, "{\"Successful\":[{\"Id\":\"first\"," RESULT_PLAIN
                     "},{\"Id\":\"second-2\"," RESULT_RICH "}],\"Failed\":[" FAILED_BAD_BODY
                     "," FAILED_CUT "," FAILED_INTERNAL "]}");
    gw_sqs_reply_send_batch(&r, res, 2, NULL, 0);
    expect_reply(&r, "{\"Successful\":[{\"Id\":\"first\"," RESULT_PLAIN
                     "},{\"Id\":\"second-2\"," RESULT_RICH "}],\"Failed\":[]}");
    gw_sqs_reply_send_batch(&r, NULL, 0, failed, 1);
    expect_reply(&r, "{\"Successful\":[],\"Failed\":[" FAILED_BAD_BODY "]}");
    gw_sqs_reply_send_batch(&r, NULL, 0, NULL, 0);
    expect_reply(&r, "{\"Successful\":[],\"Failed\":[]}");
    gw_sqs_reply_fini(&r);
}

static void test_id_batch_replies(void **state)
{
    (void)state;
    struct gw_sqs_reply r;
    gw_sqs_reply_init(&r);
    struct sl_slice ids[] = {SL_SLICE_LIT("a"), SL_SLICE_LIT("b-_9")};
    struct gw_sqs_err gone;
    gw_sqs_err_set(&gone, GW_SQS_E_RECEIPT_HANDLE_IS_INVALID,
                   "The input receipt handle \"x\\y\" is not a valid receipt handle.");
    struct gw_sqs_batch_failure failed[] = {{SL_SLICE_LIT("c"), &gone}};
    gw_sqs_reply_id_batch(&r, ids, 2, failed, 1);
    expect_reply(&r, "{\"Successful\":[{\"Id\":\"a\"},{\"Id\":\"b-_9\"}],\"Failed\":[{\"Id\":\"c\","
                     "\"SenderFault\":true,\"Code\":\"ReceiptHandleIsInvalid\",\"Message\":\"The "
                     "input receipt handle \\\"x\\\\y\\\" is not a valid receipt handle.\"}]}");
    gw_sqs_reply_id_batch(&r, ids, 1, NULL, 0);
    expect_reply(&r, "{\"Successful\":[{\"Id\":\"a\"}],\"Failed\":[]}");
    gw_sqs_reply_id_batch(&r, NULL, 0, NULL, 0);
    expect_reply(&r, "{\"Successful\":[],\"Failed\":[]}");
    gw_sqs_reply_fini(&r);
}

static void test_messages_reply(void **state)
{
    (void)state;
    struct gw_sqs_reply r;
    gw_sqs_reply_init(&r);
    gw_sqs_reply_messages(&r, NULL, 0);
    expect_reply(&r, "{}");

    struct gw_sqs_tag one_sys[] = {{SL_SLICE_LIT("ApproximateReceiveCount"), SL_SLICE_LIT("1")}};
    struct gw_sqs_msg_attr two[] = {
        {SL_SLICE_LIT("MyAttribute"), SL_SLICE_LIT("String"), GW_SQS_ATTR_STRING,
         SL_SLICE_LIT("foobar")},
        {SL_SLICE_LIT("bin"), SL_SLICE_LIT("Binary"), GW_SQS_ATTR_BINARY, SL_SLICE_LIT("\x00\x01")},
    };
    struct gw_sqs_received simple = {
        .message_id = SL_SLICE_LIT("id"),
        .receipt_handle = SL_SLICE_LIT("rh"),
        .body = SL_SLICE_LIT("message"),
        .system_attributes = one_sys,
        .system_attribute_count = 1,
        .attrs = two,
        .attr_count = 1,
    };
    gw_sqs_reply_messages(&r, &simple, 1);
    expect_reply(&r, "{\"Messages\":[{\"MessageId\":\"id\",\"ReceiptHandle\":\"rh\","
                     "\"MD5OfBody\":\"78e731027d8fd50ed642340b7c9a63b3\",\"Body\":\"message\","
                     "\"Attributes\":{\"ApproximateReceiveCount\":\"1\"},"
                     "\"MD5OfMessageAttributes\":\"adb59cd4678ea5a855436b949cd07ab6\","
                     "\"MessageAttributes\":{\"MyAttribute\":{\"DataType\":\"String\","
                     "\"StringValue\":\"foobar\"}}}]}");
    /* a Binary attribute and no system attributes */
    simple.attrs = &two[1];
    simple.system_attribute_count = 0;
    gw_sqs_reply_messages(&r, &simple, 1);
    expect_reply(&r, "{\"Messages\":[{\"MessageId\":\"id\",\"ReceiptHandle\":\"rh\","
                     "\"MD5OfBody\":\"78e731027d8fd50ed642340b7c9a63b3\",\"Body\":\"message\","
                     "\"MD5OfMessageAttributes\":\"341180f4c7e9ec2e643c77978d60ae6e\","
                     "\"MessageAttributes\":{\"bin\":{\"DataType\":\"Binary\","
                     "\"BinaryValue\":\"AAE=\"}}}]}");

    /* system attributes keep the caller's order; the message attributes
     * and bodies carry escapes, multi-byte UTF-8 and U+2028 (not escaped) */
    struct gw_sqs_tag sys[] = {
        {SL_SLICE_LIT("SenderId"), SL_SLICE_LIT("acme")},
        {SL_SLICE_LIT("ApproximateReceiveCount"), SL_SLICE_LIT("3")},
        {SL_SLICE_LIT("AWSTraceHeader"), SL_SLICE_LIT("Root=1-a;Parent=\"b\"")},
    };
    struct gw_sqs_msg_attr attrs[] = {
        {SL_SLICE_LIT("bin"),
         SL_SLICE_LIT("Binary.png"),
         GW_SQS_ATTR_BINARY,
         {"\x89PNG\x00\xff", 6}},
        {SL_SLICE_LIT("n"), SL_SLICE_LIT("Number"), GW_SQS_ATTR_NUMBER, SL_SLICE_LIT("-1e3")},
        {SL_SLICE_LIT("s\xc3\xa9"), SL_SLICE_LIT("String.x"), GW_SQS_ATTR_STRING,
         SL_SLICE_LIT("line1\nline2\t\"\\\" \xe2\x82\xac \xf0\x9f\x98\x80")},
    };
    char big[3001];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    struct gw_sqs_received m[] = {
        {
            .message_id = SL_SLICE_LIT("5fea7756-0ea4-451a-a703-a558b933e274"),
            .receipt_handle = SL_SLICE_LIT("AQEB_handle-1"),
            .body = SL_SLICE_LIT("{\"json\": \"in a body\"}\r\n\t\xc3\xa9\xe2\x80\xa8"),
            .system_attributes = sys,
            .system_attribute_count = 3,
            .attrs = attrs,
            .attr_count = 3,
        },
        {
            .message_id = SL_SLICE_LIT("id-2"),
            .receipt_handle = SL_SLICE_LIT("rh-2"),
            .body = {big, sizeof big - 1},
        },
        {
            .message_id = SL_SLICE_LIT("id-3"),
            .receipt_handle = SL_SLICE_LIT("rh-3"),
            .body = SL_SLICE_LIT("only attributes"),
            .attrs = &attrs[1],
            .attr_count = 1,
        },
    };
#define MSG_RICH                                                                                   \
    "{\"MessageId\":\"5fea7756-0ea4-451a-a703-a558b933e274\",\"ReceiptHandle\":\"AQEB_handle-1\"," \
    "\"MD5OfBody\":\"d8569add0576a5a5af40f56dbafe7eef\","                                          \
    "\"Body\":\"{\\\"json\\\": \\\"in a body\\\"}\\r\\n\\t\xc3\xa9\xe2\x80\xa8\","                 \
    "\"Attributes\":{\"SenderId\":\"acme\",\"ApproximateReceiveCount\":\"3\","                     \
    "\"AWSTraceHeader\":\"Root=1-a;Parent=\\\"b\\\"\"},"                                           \
    "\"MD5OfMessageAttributes\":\"cb05273349f5fe41bb87fb7874982cae\",\"MessageAttributes\":{"      \
    "\"bin\":{\"DataType\":\"Binary.png\",\"BinaryValue\":\"iVBORwD/\"},"                          \
    "\"n\":{\"DataType\":\"Number\",\"StringValue\":\"-1e3\"},"                                    \
    "\"s\xc3\xa9\":{\"DataType\":\"String.x\","                                                    \
    "\"StringValue\":\"line1\\nline2\\t\\\"\\\\\\\" \xe2\x82\xac \xf0\x9f\x98\x80\"}}}"
#define MSG_BIG                                                                                    \
    "{\"MessageId\":\"id-2\",\"ReceiptHandle\":\"rh-2\","                                          \
    "\"MD5OfBody\":\"33d7ac42e3aa0f3146843833c23e4365\",\"Body\":\"%s\"}"
#define MSG_ATTRS_ONLY                                                                             \
    "{\"MessageId\":\"id-3\",\"ReceiptHandle\":\"rh-3\","                                          \
    "\"MD5OfBody\":\"462549a28546224a4fe0223ede722a80\",\"Body\":\"only attributes\","             \
    "\"MD5OfMessageAttributes\":\"a4a0628e2ff94f20c5fcd37712fe65a5\","                             \
    "\"MessageAttributes\":{\"n\":{\"DataType\":\"Number\",\"StringValue\":\"-1e3\"}}}"
    char want[8192];
    gw_sqs_reply_messages(&r, m, 3);
    snprintf(want, sizeof want, "{\"Messages\":[" MSG_RICH "," MSG_BIG "," MSG_ATTRS_ONLY "]}",
             big);
    expect_reply(&r, want);
    gw_sqs_reply_messages(&r, &m[1], 1);
    snprintf(want, sizeof want, "{\"Messages\":[" MSG_BIG "]}", big);
    expect_reply(&r, want);

    /* the digests a send stored give the very same reply */
    struct gw_sqs_digests d[3];
    struct gw_sqs_msg_attr *sent_attrs[3] = {attrs, NULL, &attrs[1]}; /* as m[] has them */
    for (size_t i = 0; i < 3; i++) {
        struct gw_sqs_send_entry e = {
            .body = m[i].body, .attrs = sent_attrs[i], .attr_count = m[i].attr_count};
        gw_sqs_digests_of(&e, &d[i]);
        m[i].md5_of_body = d[i].bytes;
        m[i].md5_of_attrs = gw_sqs_digests_attrs(&d[i]);
    }
    gw_sqs_reply_messages(&r, m, 3);
    snprintf(want, sizeof want, "{\"Messages\":[" MSG_RICH "," MSG_BIG "," MSG_ATTRS_ONLY "]}",
             big);
    expect_reply(&r, want);
    /* and they are what the reply carries: nothing is hashed again */
    static const uint8_t zeros[GW_SQS_MD5_LEN] = {0};
    m[2].md5_of_body = zeros;
    m[2].md5_of_attrs = zeros;
    gw_sqs_reply_messages(&r, &m[2], 1);
    expect_reply(&r, "{\"Messages\":[{\"MessageId\":\"id-3\",\"ReceiptHandle\":\"rh-3\","
                     "\"MD5OfBody\":\"00000000000000000000000000000000\","
                     "\"Body\":\"only attributes\","
                     "\"MD5OfMessageAttributes\":\"00000000000000000000000000000000\","
                     "\"MessageAttributes\":{\"n\":{\"DataType\":\"Number\","
                     "\"StringValue\":\"-1e3\"}}}]}");
    gw_sqs_reply_fini(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_error_table),    cmocka_unit_test(test_actions_table),
        cmocka_unit_test(test_error_reply),    cmocka_unit_test(test_empty_ok_reply),
        cmocka_unit_test(test_retry_after),    cmocka_unit_test(test_success_bodies),
        cmocka_unit_test(test_send_replies),   cmocka_unit_test(test_id_batch_replies),
        cmocka_unit_test(test_messages_reply),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
