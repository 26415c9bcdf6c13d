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
        const struct gw_sqs_error_info *a = gw_sqs_error_info(e);
        assert_true(strchr(a->type, '#') != NULL);
        assert_true(a->query_code[0] != '\0' && a->message[0] != '\0');
        assert_true(a->status >= 400 && a->status < 600);
        assert_true(a->sender == (a->status < 500));
        for (int f = 1; f < e; f++) {
            assert_string_not_equal(a->type, gw_sqs_error_info(f)->type);
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
        snprintf(target, sizeof(target), "AmazonSQS.%s", gw_sqs_action_name(i));
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
    struct gw_header h[2];
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

static void test_empty_ok_reply(void **state)
{
    (void)state;
    struct gw_sqs_reply r;
    gw_sqs_reply_init(&r);
    gw_sqs_reply_ok(&r, NULL);
    assert_int_equal(r.status, 200);
    assert_int_equal(r.body.n, 0);
    struct gw_header h[2];
    assert_int_equal(gw_sqs_reply_headers(&r, h), 1);
    gw_sqs_reply_ok(&r, gw_sqs_encode_queue_url(SL_SLICE_LIT("http://h:1/acme/q")));
    assert_string_equal(r.body.p, "{\"QueueUrl\":\"http://h:1/acme/q\"}");
    gw_sqs_reply_fini(&r);
}

static char *dump(json_t *j)
{
    char *s = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(j);
    return s;
}

static void expect_json(json_t *j, const char *want)
{
    char *s = dump(j);
    assert_string_equal(s, want);
    free(s);
}

static void test_success_bodies(void **state)
{
    (void)state;
    struct sl_slice urls[] = {SL_SLICE_LIT("u1"), SL_SLICE_LIT("u2")};
    expect_json(gw_sqs_encode_queue_urls(urls, 2, "QueueUrls", SL_SLICE_LIT("")),
                "{\"QueueUrls\":[\"u1\",\"u2\"]}");
    expect_json(gw_sqs_encode_queue_urls(NULL, 0, "QueueUrls", SL_SLICE_LIT("")), "{}");
    expect_json(gw_sqs_encode_queue_urls(NULL, 0, "queueUrls", SL_SLICE_LIT("t")),
                "{\"NextToken\":\"t\",\"queueUrls\":[]}");
    struct gw_sqs_tag tags[] = {{SL_SLICE_LIT("k"), SL_SLICE_LIT("v")}};
    expect_json(gw_sqs_encode_string_map("Tags", tags, 1), "{\"Tags\":{\"k\":\"v\"}}");
    expect_json(gw_sqs_encode_string_map("Tags", NULL, 0), "{}");

    struct gw_sqs_send_result res = {.id = SL_SLICE_LIT("a")};
    snprintf(res.message_id, sizeof(res.message_id), "%s", "00000000-0000-4000-8000-000000000000");
    struct gw_sqs_send_entry e = {.body = SL_SLICE_LIT("message")};
    gw_sqs_send_result_digest(&e, &res);
    expect_json(gw_sqs_encode_send_result(&res),
                "{\"MD5OfMessageBody\":\"78e731027d8fd50ed642340b7c9a63b3\",\"MessageId\":"
                "\"00000000-0000-4000-8000-000000000000\"}");
    struct gw_sqs_err err;
    gw_sqs_err_set(&err, GW_SQS_E_INVALID_MESSAGE_CONTENTS, "bad");
    struct gw_sqs_batch_failure f = {SL_SLICE_LIT("b"), &err};
    expect_json(gw_sqs_encode_send_batch(&res, 1, &f, 1),
                "{\"Failed\":[{\"Code\":\"InvalidMessageContents\",\"Id\":\"b\",\"Message\":"
                "\"bad\",\"SenderFault\":true}],\"Successful\":[{\"Id\":\"a\","
                "\"MD5OfMessageBody\":\"78e731027d8fd50ed642340b7c9a63b3\",\"MessageId\":"
                "\"00000000-0000-4000-8000-000000000000\"}]}");
    struct sl_slice ids[] = {SL_SLICE_LIT("x")};
    expect_json(gw_sqs_encode_id_batch(ids, 1, NULL, 0),
                "{\"Failed\":[],\"Successful\":[{\"Id\":\"x\"}]}");
}

static void test_messages_body(void **state)
{
    (void)state;
    expect_json(gw_sqs_encode_messages(NULL, 0), "{}");
    struct gw_sqs_tag sys[] = {{SL_SLICE_LIT("ApproximateReceiveCount"), SL_SLICE_LIT("1")}};
    struct gw_sqs_msg_attr attrs[] = {
        {SL_SLICE_LIT("MyAttribute"), SL_SLICE_LIT("String"), GW_SQS_ATTR_STRING,
         SL_SLICE_LIT("foobar")},
        {SL_SLICE_LIT("bin"), SL_SLICE_LIT("Binary"), GW_SQS_ATTR_BINARY, SL_SLICE_LIT("\x00\x01")},
    };
    struct gw_sqs_received m = {
        .message_id = SL_SLICE_LIT("id"),
        .receipt_handle = SL_SLICE_LIT("rh"),
        .body = SL_SLICE_LIT("message"),
        .system_attributes = sys,
        .system_attribute_count = 1,
        .attrs = attrs,
        .attr_count = 1,
    };
    expect_json(gw_sqs_encode_messages(&m, 1),
                "{\"Messages\":[{\"Attributes\":{\"ApproximateReceiveCount\":\"1\"},\"Body\":"
                "\"message\",\"MD5OfBody\":\"78e731027d8fd50ed642340b7c9a63b3\","
                "\"MD5OfMessageAttributes\":\"adb59cd4678ea5a855436b949cd07ab6\","
                "\"MessageAttributes\":{\"MyAttribute\":{\"DataType\":\"String\",\"StringValue\":"
                "\"foobar\"}},\"MessageId\":\"id\",\"ReceiptHandle\":\"rh\"}]}");
    m.attrs = &attrs[1];
    m.system_attribute_count = 0;
    char *s = dump(gw_sqs_encode_messages(&m, 1));
    assert_non_null(strstr(s, "\"BinaryValue\":\"AAE=\""));
    assert_null(strstr(s, "\"Attributes\""));
    free(s);
}

/* A directly written reply has exactly the bytes jansson dumps for the
 * tree of the same shape, and gw_sqs_reply_ok() writes that tree the same. */
static void expect_direct_equals_tree(struct gw_sqs_reply *direct, json_t *tree)
{
    size_t n = json_dumpb(tree, NULL, 0, JSON_COMPACT);
    char *want = malloc(n + 1);
    assert_non_null(want);
    assert_int_equal(json_dumpb(tree, want, n, JSON_COMPACT), n);
    want[n] = '\0';
    assert_int_equal(direct->status, 200);
    assert_int_equal(direct->error, GW_SQS_OK);
    struct gw_header h[2];
    assert_int_equal(gw_sqs_reply_headers(direct, h), 1);
    assert_string_equal(direct->body.p, want);
    assert_int_equal(direct->body.n, n);
    struct gw_sqs_reply via_tree;
    gw_sqs_reply_init(&via_tree);
    gw_sqs_reply_ok(&via_tree, tree);
    assert_string_equal(via_tree.body.p, want);
    assert_int_equal(via_tree.body.n, n);
    gw_sqs_reply_fini(&via_tree);
    free(want);
}

static void test_direct_send_replies(void **state)
{
    (void)state;
    struct gw_sqs_reply r;
    gw_sqs_reply_init(&r);
    /* a reply reused after an error turns into a 200 */
    struct gw_sqs_err internal;
    gw_sqs_err_set(&internal, GW_SQS_E_INTERNAL_ERROR, NULL);
    gw_sqs_reply_error(&r, &internal);

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
    assert_int_equal(strlen(res[1].md5_of_attrs), 32);
    assert_int_equal(strlen(res[1].md5_of_sys_attrs), 32);

    for (size_t i = 0; i < 2; i++) {
        gw_sqs_reply_send_result(&r, &res[i]);
        expect_direct_equals_tree(&r, gw_sqs_encode_send_result(&res[i]));
    }

    struct gw_sqs_err bad_body, cut;
    gw_sqs_err_set(&bad_body, GW_SQS_E_INVALID_MESSAGE_CONTENTS,
                   "Invalid binary character '#x1' in \"body\"\n");
    /* a message cut inside a UTF-8 sequence: the table's message stands in */
    gw_sqs_err_set(&cut, GW_SQS_E_INVALID_PARAMETER_VALUE, "bad \xc3");
    struct gw_sqs_batch_failure failed[] = {{SL_SLICE_LIT("f1"), &bad_body},
                                            {SL_SLICE_LIT("f2"), &cut},
                                            {SL_SLICE_LIT("f3"), &internal}};
    gw_sqs_reply_send_batch(&r, res, 2, failed, 3);
    assert_non_null(strstr(r.body.p, "One or more parameters are invalid."));
    assert_non_null(strstr(r.body.p, "\"SenderFault\":false"));
    expect_direct_equals_tree(&r, gw_sqs_encode_send_batch(res, 2, failed, 3));
    gw_sqs_reply_send_batch(&r, res, 2, NULL, 0);
    expect_direct_equals_tree(&r, gw_sqs_encode_send_batch(res, 2, NULL, 0));
    gw_sqs_reply_send_batch(&r, NULL, 0, failed, 1);
    expect_direct_equals_tree(&r, gw_sqs_encode_send_batch(NULL, 0, failed, 1));
    gw_sqs_reply_fini(&r);
}

static void test_direct_id_batch_replies(void **state)
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
    expect_direct_equals_tree(&r, gw_sqs_encode_id_batch(ids, 2, failed, 1));
    gw_sqs_reply_id_batch(&r, ids, 1, NULL, 0);
    assert_string_equal(r.body.p, "{\"Successful\":[{\"Id\":\"a\"}],\"Failed\":[]}");
    expect_direct_equals_tree(&r, gw_sqs_encode_id_batch(ids, 1, NULL, 0));
    gw_sqs_reply_id_batch(&r, NULL, 0, NULL, 0);
    expect_direct_equals_tree(&r, gw_sqs_encode_id_batch(NULL, 0, NULL, 0));
    gw_sqs_reply_fini(&r);
}

static void test_direct_messages_reply(void **state)
{
    (void)state;
    struct gw_sqs_reply r;
    gw_sqs_reply_init(&r);
    gw_sqs_reply_messages(&r, NULL, 0);
    assert_string_equal(r.body.p, "{}");
    expect_direct_equals_tree(&r, gw_sqs_encode_messages(NULL, 0));

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
    char big[3000];
    memset(big, 'x', sizeof big);
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
            .body = {big, sizeof big},
        },
        {
            .message_id = SL_SLICE_LIT("id-3"),
            .receipt_handle = SL_SLICE_LIT("rh-3"),
            .body = SL_SLICE_LIT("only attributes"),
            .attrs = &attrs[1],
            .attr_count = 1,
        },
    };
    gw_sqs_reply_messages(&r, m, 3);
    assert_non_null(strstr(r.body.p, "\"BinaryValue\":\"iVBORwD/\""));
    expect_direct_equals_tree(&r, gw_sqs_encode_messages(m, 3));
    gw_sqs_reply_messages(&r, &m[1], 1);
    expect_direct_equals_tree(&r, gw_sqs_encode_messages(&m[1], 1));
    gw_sqs_reply_fini(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_error_table),
        cmocka_unit_test(test_actions_table),
        cmocka_unit_test(test_error_reply),
        cmocka_unit_test(test_empty_ok_reply),
        cmocka_unit_test(test_success_bodies),
        cmocka_unit_test(test_messages_body),
        cmocka_unit_test(test_direct_send_replies),
        cmocka_unit_test(test_direct_id_batch_replies),
        cmocka_unit_test(test_direct_messages_reply),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
