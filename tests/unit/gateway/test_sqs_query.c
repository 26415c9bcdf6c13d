/*
 * test_sqs_query.c -- the query protocol's forms into typed requests
 * (gw_sqs_query.c): every action with its list, map and entry forms, as
 * botocore's query serializer writes them, and every decode error.
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

#define V "Version=2012-11-05"
#define QU "QueueUrl=http%3A%2F%2Flocalhost%3A9324%2Facme%2Forders"

static int decode(const char *form, const char *queue_url, struct gw_sqs_request *r,
                  struct gw_sqs_err *err)
{
    memset(err, 0, sizeof(*err));
    return gw_sqs_query_decode(sl_slice_cstr(form), sl_slice_cstr(queue_url), r, err);
}

static void expect_ok(const char *form, enum gw_sqs_action a, struct gw_sqs_request *r)
{
    struct gw_sqs_err err;
    int rc = decode(form, "", r, &err);
    if (rc != SL_OK) {
        print_error("unexpected error for %s: %s\n", form, err.message);
    }
    assert_int_equal(rc, SL_OK);
    assert_int_equal(r->action, a);
}

static void expect_err(const char *form, enum gw_sqs_error code, const char *message)
{
    struct gw_sqs_request r;
    struct gw_sqs_err err;
    int rc = decode(form, "", &r, &err);
    if (rc != SL_EINVAL || err.code != code) {
        print_error("form %s: rc %d code %s (%s), wanted %s\n", form, rc,
                    err.code ? gw_sqs_error_info(err.code)->query_code : "OK", err.message,
                    gw_sqs_error_info(code)->query_code);
    }
    assert_int_equal(rc, SL_EINVAL);
    assert_int_equal(err.code, code);
    if (message != NULL) {
        assert_string_equal(err.message, message);
    }
    gw_sqs_request_fini(&r);
}

static void assert_slice(struct sl_slice s, const char *want)
{
    assert_int_equal(s.n, strlen(want));
    assert_memory_equal(s.p, want, s.n);
}

/* ---- the envelope -------------------------------------------------------------- */

static void test_action_lookup(void **state)
{
    (void)state;
    enum gw_sqs_action a;
    struct gw_sqs_err err;
    assert_int_equal(gw_sqs_query_action(SL_SLICE_LIT("Version=1&Action=SendMessage"), &a, &err),
                     SL_OK);
    assert_int_equal(a, GW_SQS_ACT_SEND_MESSAGE);
    assert_int_equal(gw_sqs_query_action(SL_SLICE_LIT("Action=Send%4Dessage"), &a, &err), SL_OK);
    assert_int_equal(a, GW_SQS_ACT_SEND_MESSAGE);
    assert_int_equal(gw_sqs_query_action(SL_SLICE_LIT("Action=Nope"), &a, &err), SL_EINVAL);
    assert_int_equal(err.code, GW_SQS_E_UNKNOWN_OPERATION);
    assert_string_equal(gw_sqs_error_info(err.code)->query_code, "InvalidAction");
    assert_int_equal(gw_sqs_query_action(SL_SLICE_LIT("Version=1"), &a, &err), SL_EINVAL);
    assert_int_equal(err.code, GW_SQS_E_MISSING_ACTION);
    assert_int_equal(gw_sqs_query_action(SL_SLICE_LIT(""), &a, &err), SL_EINVAL);
    assert_int_equal(err.code, GW_SQS_E_MISSING_ACTION);
    assert_int_equal(gw_sqs_query_action(SL_SLICE_LIT("Action=Send%4"), &a, &err), SL_EINVAL);
    assert_int_equal(err.code, GW_SQS_E_MALFORMED_QUERY_STRING);
    assert_int_equal(gw_sqs_query_action(
                         SL_SLICE_LIT("Action=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
                                      "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"),
                         &a, &err),
                     SL_EINVAL);
    assert_int_equal(err.code, GW_SQS_E_UNKNOWN_OPERATION);
}

static void test_envelope_errors(void **state)
{
    (void)state;
    expect_err(V, GW_SQS_E_MISSING_ACTION, "The request must contain the parameter Action.");
    struct gw_sqs_request none;
    struct gw_sqs_err err;
    assert_int_equal(
        gw_sqs_query_decode((struct sl_slice){NULL, 0}, (struct sl_slice){NULL, 0}, &none, &err),
        SL_EINVAL);
    assert_int_equal(err.code, GW_SQS_E_MISSING_ACTION);
    gw_sqs_request_fini(&none);
    expect_err("Action=Frobnicate&" V, GW_SQS_E_UNKNOWN_OPERATION,
               "The action Frobnicate is not valid for this endpoint.");
    expect_err("Action=ListQueues&Version=2008-01-01", GW_SQS_E_INVALID_PARAMETER_VALUE, NULL);
    /* kombu's long poll carries no Version: it is 2012-11-05. */
    struct gw_sqs_request unversioned;
    expect_ok("Action=ListQueues", GW_SQS_ACT_LIST_QUEUES, &unversioned);
    gw_sqs_request_fini(&unversioned);
    expect_err("Action=ListQueues&" V "&QueueNamePrefix=%zz", GW_SQS_E_MALFORMED_QUERY_STRING,
               NULL);
    expect_err("Action=ListQueues&" V "&QueueNamePrefix=%4", GW_SQS_E_MALFORMED_QUERY_STRING, NULL);
    expect_err("Action=ListQueues&" V "&QueueNamePrefix=a&QueueNamePrefix=b",
               GW_SQS_E_INVALID_QUERY_PARAMETER,
               "The parameter QueueNamePrefix is given more than once.");
    expect_err("Action=ListQueues&" V "&MaxResults=ten", GW_SQS_E_INVALID_PARAMETER_VALUE,
               "Value ten for parameter MaxResults is invalid. Reason: it must be an integer.");
    expect_err("Action=ListQueues&" V "&MaxResults=", GW_SQS_E_INVALID_PARAMETER_VALUE, NULL);
    expect_err("Action=ListQueues&" V "&MaxResults=1234567890123456789",
               GW_SQS_E_INVALID_PARAMETER_VALUE, NULL);
    /* a bound on the parameters, counted before anything is allocated;
     * empty parts do not count */
    size_t cap = (size_t)64 * 1024;
    char *big = malloc(cap);
    assert_non_null(big);
    int at = snprintf(big, cap, "Action=ListQueues&" V);
    for (unsigned i = 0; i < GW_SQS_QUERY_MAX_PARAMS; i++) {
        at += snprintf(big + at, cap - (size_t)at, "&a%u=", i);
    }
    expect_err(big, GW_SQS_E_INVALID_QUERY_PARAMETER,
               "The request has 4098 parameters; at most 4096 are accepted.");
    at = snprintf(big, cap, "Action=ListQueues&" V);
    memset(big + at, '&', cap - (size_t)at - 1);
    big[cap - 1] = '\0';
    struct gw_sqs_request r;
    expect_ok(big, GW_SQS_ACT_LIST_QUEUES, &r);
    gw_sqs_request_fini(&r);
    free(big);
    /* the JSON protocol's range check, on the number the form carried */
    expect_err("Action=ListQueues&" V "&MaxResults=0", GW_SQS_E_INVALID_PARAMETER_VALUE, NULL);
    expect_err("Action=ListQueues&" V "&QueueNamePrefix=%FF", GW_SQS_E_INVALID_PARAMETER_VALUE,
               "Value for parameter QueueNamePrefix is invalid. Reason: it is not valid UTF-8.");
}

static void test_bad_indexes(void **state)
{
    (void)state;
    const char *bad[] = {
        "AttributeName.0=All",  "AttributeName.01=All", "AttributeName.x=All",
        "AttributeName.=All",   "AttributeName.1x=All", "AttributeName.1234567890=All",
        "AttributeName.-1=All",
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(bad); i++) {
        char form[256];
        snprintf(form, sizeof form, "%s&%s", "Action=GetQueueAttributes&" V "&" QU, bad[i]);
        expect_err(form, GW_SQS_E_INVALID_QUERY_PARAMETER, NULL);
    }
    expect_err("Action=SendMessageBatch&" V "&" QU "&SendMessageBatchRequestEntry.0.Id=a"
               "&SendMessageBatchRequestEntry.0.MessageBody=b",
               GW_SQS_E_INVALID_QUERY_PARAMETER, NULL);
    /* gaps are allowed; items come in index order */
    struct gw_sqs_request r;
    expect_ok("Action=UntagQueue&" V "&" QU "&TagKey.10=c&TagKey.2=b&TagKey.1=a",
              GW_SQS_ACT_UNTAG_QUEUE, &r);
    assert_int_equal(r.u.untag_queue.key_count, 3);
    assert_slice(r.u.untag_queue.keys[0], "a");
    assert_slice(r.u.untag_queue.keys[1], "b");
    assert_slice(r.u.untag_queue.keys[2], "c");
    gw_sqs_request_fini(&r);
}

/* ---- every action ---------------------------------------------------------------- */

static void test_queue_actions(void **state)
{
    (void)state;
    struct gw_sqs_request r;
    expect_ok("Action=CreateQueue&" V "&QueueName=orders&Attribute.1.Name=DelaySeconds"
              "&Attribute.1.Value=5&Attribute.2.Name=VisibilityTimeout&Attribute.2.Value=40"
              "&Tag.1.Key=team&Tag.1.Value=a+b&Tag.2.Key=env&Tag.2.Value=prod",
              GW_SQS_ACT_CREATE_QUEUE, &r);
    assert_slice(r.u.create_queue.queue_name, "orders");
    assert_int_equal(r.u.create_queue.attributes.count, 2);
    const struct gw_sqs_qattr_value *d =
        gw_sqs_qattrs_find(&r.u.create_queue.attributes, GW_SQS_QATTR_DELAY_SECONDS);
    assert_non_null(d);
    assert_int_equal(d->number, 5);
    assert_int_equal(r.u.create_queue.tag_count, 2);
    assert_slice(r.u.create_queue.tags[0].key, "team");
    assert_slice(r.u.create_queue.tags[0].value, "a b");
    gw_sqs_request_fini(&r);

    expect_ok("Action=CreateQueue&" V "&QueueName=o.fifo&Attribute.1.Name=FifoQueue"
              "&Attribute.1.Value=true",
              GW_SQS_ACT_CREATE_QUEUE, &r);
    assert_true(r.u.create_queue.fifo);
    gw_sqs_request_fini(&r);

    expect_ok("Action=GetQueueUrl&" V "&QueueName=orders&QueueOwnerAWSAccountId=acme",
              GW_SQS_ACT_GET_QUEUE_URL, &r);
    assert_true(r.u.get_queue_url.has_owner);
    assert_slice(r.u.get_queue_url.owner, "acme");
    gw_sqs_request_fini(&r);

    expect_ok("Action=ListQueues&" V "&QueueNamePrefix=ord&NextToken=t&MaxResults=5",
              GW_SQS_ACT_LIST_QUEUES, &r);
    assert_slice(r.u.list_queues.prefix, "ord");
    assert_slice(r.u.list_queues.next_token, "t");
    assert_int_equal(r.u.list_queues.max_results, 5);
    gw_sqs_request_fini(&r);

    expect_ok("Action=DeleteQueue&" V "&" QU, GW_SQS_ACT_DELETE_QUEUE, &r);
    assert_slice(r.u.delete_queue.queue.name, "orders");
    assert_slice(r.u.delete_queue.queue.tenant, "acme");
    gw_sqs_request_fini(&r);
    expect_ok("Action=PurgeQueue&" V "&" QU, GW_SQS_ACT_PURGE_QUEUE, &r);
    gw_sqs_request_fini(&r);
    expect_ok("Action=ListQueueTags&" V "&" QU, GW_SQS_ACT_LIST_QUEUE_TAGS, &r);
    gw_sqs_request_fini(&r);

    expect_ok("Action=GetQueueAttributes&" V "&" QU "&AttributeName.1=QueueArn"
              "&AttributeName.2=DelaySeconds",
              GW_SQS_ACT_GET_QUEUE_ATTRIBUTES, &r);
    assert_int_equal(r.u.get_queue_attributes.wanted,
                     (1u << GW_SQS_QATTR_QUEUE_ARN) | (1u << GW_SQS_QATTR_DELAY_SECONDS));
    gw_sqs_request_fini(&r);
    expect_err("Action=GetQueueAttributes&" V "&" QU "&AttributeName.1=Nope",
               GW_SQS_E_INVALID_ATTRIBUTE_NAME, NULL);

    expect_ok("Action=SetQueueAttributes&" V "&" QU "&Attribute.1.Name=MaximumMessageSize"
              "&Attribute.1.Value=2048",
              GW_SQS_ACT_SET_QUEUE_ATTRIBUTES, &r);
    assert_int_equal(r.u.set_queue_attributes.attributes.count, 1);
    gw_sqs_request_fini(&r);
    expect_err("Action=SetQueueAttributes&" V "&" QU, GW_SQS_E_MISSING_PARAMETER, NULL);
    expect_err("Action=SetQueueAttributes&" V "&" QU "&Attribute.1.Value=1",
               GW_SQS_E_MISSING_PARAMETER,
               "The request must contain the parameter Attribute.1.Name.");
    expect_err("Action=SetQueueAttributes&" V "&" QU "&Attribute.1.Name=DelaySeconds",
               GW_SQS_E_MISSING_PARAMETER,
               "The request must contain the parameter Attribute.1.Value.");

    expect_ok("Action=TagQueue&" V "&" QU "&Tag.1.Key=k&Tag.1.Value=v", GW_SQS_ACT_TAG_QUEUE, &r);
    assert_int_equal(r.u.tag_queue.tag_count, 1);
    gw_sqs_request_fini(&r);
    expect_err("Action=TagQueue&" V "&" QU "&Tag.1.Value=v", GW_SQS_E_MISSING_PARAMETER,
               "The request must contain the parameter Tag.1.Key.");
    expect_err("Action=UntagQueue&" V "&" QU, GW_SQS_E_MISSING_PARAMETER, NULL);

    expect_ok("Action=ListDeadLetterSourceQueues&" V "&" QU "&MaxResults=3",
              GW_SQS_ACT_LIST_DEAD_LETTER_SOURCE_QUEUES, &r);
    assert_int_equal(r.u.list_dead_letter_source_queues.max_results, 3);
    gw_sqs_request_fini(&r);

    expect_ok("Action=AddPermission&" V "&" QU "&Label=l&AWSAccountId.1=1&ActionName.1=Send",
              GW_SQS_ACT_ADD_PERMISSION, &r);
    assert_slice(r.u.add_permission.label, "l");
    gw_sqs_request_fini(&r);
    expect_err("Action=AddPermission&" V "&" QU "&Label=l&AWSAccountId.1=1",
               GW_SQS_E_MISSING_PARAMETER, NULL);
    expect_ok("Action=RemovePermission&" V "&" QU "&Label=l", GW_SQS_ACT_REMOVE_PERMISSION, &r);
    gw_sqs_request_fini(&r);

    expect_ok("Action=StartMessageMoveTask&" V "&SourceArn=arn%3Aaws%3Asqs%3Ar%3Aacme%3Adlq"
              "&DestinationArn=arn%3Aaws%3Asqs%3Ar%3Aacme%3Aq&MaxNumberOfMessagesPerSecond=9",
              GW_SQS_ACT_START_MESSAGE_MOVE_TASK, &r);
    assert_slice(r.u.start_message_move_task.source_arn, "arn:aws:sqs:r:acme:dlq");
    assert_int_equal(r.u.start_message_move_task.max_per_second, 9);
    gw_sqs_request_fini(&r);
    expect_ok("Action=ListMessageMoveTasks&" V "&SourceArn=a&MaxResults=2",
              GW_SQS_ACT_LIST_MESSAGE_MOVE_TASKS, &r);
    assert_int_equal(r.u.list_message_move_tasks.max_results, 2);
    gw_sqs_request_fini(&r);
    expect_ok("Action=CancelMessageMoveTask&" V "&TaskHandle=h",
              GW_SQS_ACT_CANCEL_MESSAGE_MOVE_TASK, &r);
    assert_slice(r.u.cancel_message_move_task.task_handle, "h");
    gw_sqs_request_fini(&r);
}

static void test_message_actions(void **state)
{
    (void)state;
    struct gw_sqs_request r;
    expect_ok("Action=SendMessage&" V "&" QU "&MessageBody=hello%0D%0Aworld&DelaySeconds=3"
              "&MessageAttribute.1.Name=s&MessageAttribute.1.Value.DataType=String"
              "&MessageAttribute.1.Value.StringValue=x"
              "&MessageAttribute.2.Name=b&MessageAttribute.2.Value.DataType=Binary"
              "&MessageAttribute.2.Value.BinaryValue=AAE%3D"
              "&MessageAttribute.3.Name=n&MessageAttribute.3.Value.DataType=Number"
              "&MessageAttribute.3.Value.StringValue=1.5"
              "&MessageSystemAttribute.1.Name=AWSTraceHeader"
              "&MessageSystemAttribute.1.Value.DataType=String"
              "&MessageSystemAttribute.1.Value.StringValue=Root%3D1"
              "&MessageGroupId=g&MessageDeduplicationId=d",
              GW_SQS_ACT_SEND_MESSAGE, &r);
    const struct gw_sqs_send_entry *m = &r.u.send_message.msg;
    assert_slice(m->body, "hello\r\nworld");
    assert_int_equal(m->delay_seconds, 3);
    assert_int_equal(m->attr_count, 3);
    assert_slice(m->attrs[0].name, "b"); /* sorted by name */
    assert_int_equal(m->attrs[0].type, GW_SQS_ATTR_BINARY);
    assert_int_equal(m->attrs[0].value.n, 2);
    assert_memory_equal(m->attrs[0].value.p, "\x00\x01", 2);
    assert_slice(m->attrs[1].name, "n");
    assert_int_equal(m->attrs[1].type, GW_SQS_ATTR_NUMBER);
    assert_true(m->has_trace_header);
    assert_slice(m->trace_header, "Root=1");
    assert_slice(m->group_id, "g");
    assert_slice(m->dedup_id, "d");
    /* the same MD5 as the JSON protocol's request of the same message */
    char md5[33];
    assert_int_equal(gw_sqs_md5_of_attrs(m->attrs, m->attr_count, md5), SL_OK);
    struct gw_sqs_request j;
    struct gw_sqs_err err;
    assert_int_equal(
        gw_sqs_decode(GW_SQS_ACT_SEND_MESSAGE,
                      SL_SLICE_LIT("{\"QueueUrl\":\"http://localhost:9324/acme/orders\","
                                   "\"MessageBody\":\"x\",\"MessageAttributes\":{"
                                   "\"s\":{\"DataType\":\"String\",\"StringValue\":\"x\"},"
                                   "\"b\":{\"DataType\":\"Binary\",\"BinaryValue\":\"AAE=\"},"
                                   "\"n\":{\"DataType\":\"Number\",\"StringValue\":\"1.5\"}}}"),
                      &j, &err),
        SL_OK);
    char md5j[33];
    assert_int_equal(
        gw_sqs_md5_of_attrs(j.u.send_message.msg.attrs, j.u.send_message.msg.attr_count, md5j),
        SL_OK);
    assert_string_equal(md5, md5j);
    gw_sqs_request_fini(&j);
    gw_sqs_request_fini(&r);

    expect_err("Action=SendMessage&" V "&" QU, GW_SQS_E_MISSING_PARAMETER,
               "The request must contain the parameter MessageBody.");
    expect_err("Action=SendMessage&" V "&" QU "&MessageBody=a%01b",
               GW_SQS_E_INVALID_MESSAGE_CONTENTS, NULL);
    expect_err("Action=SendMessage&" V "&" QU "&MessageBody=x&MessageAttribute.1.Value."
               "DataType=String&MessageAttribute.1.Value.StringValue=x",
               GW_SQS_E_MISSING_PARAMETER,
               "The request must contain the parameter MessageAttribute.1.Name.");
    expect_err("Action=SendMessage&" V "&" QU "&MessageBody=x&DelaySeconds=1.5",
               GW_SQS_E_INVALID_PARAMETER_VALUE, NULL);
    expect_err("Action=SendMessage&" V "&" QU "&MessageBody=x&DelaySeconds=901",
               GW_SQS_E_INVALID_PARAMETER_VALUE, NULL);

    expect_ok("Action=SendMessageBatch&" V "&" QU
              "&SendMessageBatchRequestEntry.1.Id=a&SendMessageBatchRequestEntry.1.MessageBody=one"
              "&SendMessageBatchRequestEntry.1.DelaySeconds=2"
              "&SendMessageBatchRequestEntry.1.MessageAttribute.1.Name=k"
              "&SendMessageBatchRequestEntry.1.MessageAttribute.1.Value.DataType=String"
              "&SendMessageBatchRequestEntry.1.MessageAttribute.1.Value.StringValue=v"
              "&SendMessageBatchRequestEntry.2.Id=b&SendMessageBatchRequestEntry.2.MessageBody=a%01"
              "&SendMessageBatchRequestEntry.10.Id=c"
              "&SendMessageBatchRequestEntry.10.MessageBody=three",
              GW_SQS_ACT_SEND_MESSAGE_BATCH, &r);
    const struct gw_sqs_send_message_batch_req *b = &r.u.send_message_batch;
    assert_int_equal(b->entry_count, 3);
    assert_slice(b->entries[0].id, "a");
    assert_int_equal(b->entries[0].delay_seconds, 2);
    assert_int_equal(b->entries[0].attr_count, 1);
    assert_null(b->entries[0].fail);
    assert_non_null(b->entries[1].fail); /* the bad body fails only its entry */
    assert_int_equal(b->entries[1].fail->code, GW_SQS_E_INVALID_MESSAGE_CONTENTS);
    assert_slice(b->entries[2].id, "c");
    gw_sqs_request_fini(&r);
    expect_err("Action=SendMessageBatch&" V "&" QU, GW_SQS_E_MISSING_PARAMETER, NULL);
    expect_err("Action=SendMessageBatch&" V "&" QU "&SendMessageBatchRequestEntry=",
               GW_SQS_E_EMPTY_BATCH_REQUEST, NULL);
    expect_err("Action=SendMessageBatch&" V "&" QU "&SendMessageBatchRequestEntry.1.Id=a"
               "&SendMessageBatchRequestEntry.1.MessageBody=x"
               "&SendMessageBatchRequestEntry.2.Id=a&SendMessageBatchRequestEntry.2.MessageBody=y",
               GW_SQS_E_BATCH_ENTRY_IDS_NOT_DISTINCT, NULL);
    char many[4096] = "Action=SendMessageBatch&" V "&" QU;
    size_t at = strlen(many);
    for (int i = 1; i <= 11; i++) {
        at += (size_t)snprintf(many + at, sizeof many - at,
                               "&SendMessageBatchRequestEntry.%d.Id=i%d"
                               "&SendMessageBatchRequestEntry.%d.MessageBody=x",
                               i, i, i);
    }
    expect_err(many, GW_SQS_E_TOO_MANY_ENTRIES_IN_BATCH_REQUEST, NULL);

    expect_ok("Action=ReceiveMessage&" V "&" QU "&AttributeName.1=SentTimestamp"
              "&MessageSystemAttributeName.1=SenderId&MessageAttributeName.1=color"
              "&MessageAttributeName.2=size.*&MaxNumberOfMessages=10&VisibilityTimeout=0"
              "&WaitTimeSeconds=20&ReceiveRequestAttemptId=r1",
              GW_SQS_ACT_RECEIVE_MESSAGE, &r);
    const struct gw_sqs_receive_message_req *rm = &r.u.receive_message;
    assert_int_equal(rm->max_number_of_messages, 10);
    assert_true(rm->has_visibility_timeout);
    assert_int_equal(rm->visibility_timeout, 0);
    assert_int_equal(rm->wait_time_seconds, 20);
    assert_int_equal(rm->system_attributes,
                     (1u << GW_SQS_SYSATTR_SENT_TIMESTAMP) | (1u << GW_SQS_SYSATTR_SENDER_ID));
    assert_int_equal(rm->attribute_filter_count, 2);
    assert_slice(rm->attribute_filters[1], "size.*");
    gw_sqs_request_fini(&r);
    expect_err("Action=ReceiveMessage&" V "&" QU "&MaxNumberOfMessages=11",
               GW_SQS_E_INVALID_PARAMETER_VALUE, NULL);
    /* sluice's filtered receive, its '=' percent-encoded as any value */
    expect_ok("Action=ReceiveMessage&" V "&" QU "&MessageAttributeName.1=All"
              "&MessageAttributeName.2=sluice.Filter.color%3Dred%26blue",
              GW_SQS_ACT_RECEIVE_MESSAGE, &r);
    assert_int_equal(r.u.receive_message.filter.count, 1);
    assert_slice(r.u.receive_message.filter.pairs[0].key, "color");
    assert_slice(r.u.receive_message.filter.pairs[0].value, "red&blue");
    gw_sqs_request_fini(&r);
    expect_err("Action=ReceiveMessage&" V "&" QU "&MessageAttributeName.1=sluice.Filter.color",
               GW_SQS_E_INVALID_PARAMETER_VALUE,
               "Value sluice.Filter.color for parameter MessageAttributeNames is invalid. "
               "Reason: a filter is sluice.Filter.<attribute name>=<value>.");
    expect_ok("Action=GetQueueAttributes&" V "&" QU "&AttributeName.1=SluiceFilteredMessages"
              "&AttributeName.2=sluice.Filter.color%3Dred",
              GW_SQS_ACT_GET_QUEUE_ATTRIBUTES, &r);
    assert_true(r.u.get_queue_attributes.want_filtered_ready);
    assert_int_equal(r.u.get_queue_attributes.filter.count, 1);
    gw_sqs_request_fini(&r);
    expect_err("Action=GetQueueAttributes&" V "&" QU "&AttributeName.1=sluice.Filter.c%3Dr",
               GW_SQS_E_INVALID_ATTRIBUTE_NAME, NULL);

    expect_ok("Action=DeleteMessage&" V "&" QU "&ReceiptHandle=h%2B1", GW_SQS_ACT_DELETE_MESSAGE,
              &r);
    assert_slice(r.u.delete_message.receipt_handle, "h+1");
    gw_sqs_request_fini(&r);
    expect_ok("Action=DeleteMessageBatch&" V "&" QU "&DeleteMessageBatchRequestEntry.1.Id=a"
              "&DeleteMessageBatchRequestEntry.1.ReceiptHandle=h",
              GW_SQS_ACT_DELETE_MESSAGE_BATCH, &r);
    assert_int_equal(r.u.delete_message_batch.entry_count, 1);
    gw_sqs_request_fini(&r);
    expect_ok("Action=ChangeMessageVisibility&" V "&" QU "&ReceiptHandle=h&VisibilityTimeout=60",
              GW_SQS_ACT_CHANGE_MESSAGE_VISIBILITY, &r);
    assert_int_equal(r.u.change_message_visibility.visibility_timeout, 60);
    gw_sqs_request_fini(&r);
    expect_err("Action=ChangeMessageVisibility&" V "&" QU "&ReceiptHandle=h",
               GW_SQS_E_MISSING_PARAMETER, NULL);
    expect_ok("Action=ChangeMessageVisibilityBatch&" V "&" QU
              "&ChangeMessageVisibilityBatchRequestEntry.1.Id=a"
              "&ChangeMessageVisibilityBatchRequestEntry.1.ReceiptHandle=h"
              "&ChangeMessageVisibilityBatchRequestEntry.1.VisibilityTimeout=7",
              GW_SQS_ACT_CHANGE_MESSAGE_VISIBILITY_BATCH, &r);
    assert_int_equal(r.u.change_message_visibility_batch.entries[0].visibility_timeout, 7);
    gw_sqs_request_fini(&r);
    expect_err("Action=ChangeMessageVisibilityBatch&" V "&" QU
               "&ChangeMessageVisibilityBatchRequestEntry.1.Id=a"
               "&ChangeMessageVisibilityBatchRequestEntry.1.ReceiptHandle=h"
               "&ChangeMessageVisibilityBatchRequestEntry.1.VisibilityTimeout=x",
               GW_SQS_E_INVALID_PARAMETER_VALUE,
               "Value x for parameter ChangeMessageVisibilityBatchRequestEntry.1."
               "VisibilityTimeout is invalid. Reason: it must be an integer.");
}

static void test_queue_url_from_path(void **state)
{
    (void)state;
    struct gw_sqs_request r;
    struct gw_sqs_err err;
    assert_int_equal(decode("Action=SendMessage&" V "&MessageBody=x",
                            "http://localhost:9324/acme/orders", &r, &err),
                     SL_OK);
    assert_slice(r.u.send_message.queue.name, "orders");
    gw_sqs_request_fini(&r);
    /* the form's QueueUrl wins over the path */
    assert_int_equal(decode("Action=SendMessage&" V "&MessageBody=x&" QU,
                            "http://localhost:9324/acme/other", &r, &err),
                     SL_OK);
    assert_slice(r.u.send_message.queue.name, "orders");
    gw_sqs_request_fini(&r);
    /* actions without a QueueUrl take nothing from the path */
    assert_int_equal(decode("Action=ListQueues&" V, "http://localhost:9324/acme/orders", &r, &err),
                     SL_OK);
    gw_sqs_request_fini(&r);
    /* unknown parameters, such as a presigned URL's, are ignored */
    assert_int_equal(
        decode("Action=ListQueues&" V "&X-Amz-Signature=abc&Foo.1.Bar=2", "", &r, &err), SL_OK);
    gw_sqs_request_fini(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_action_lookup),   cmocka_unit_test(test_envelope_errors),
        cmocka_unit_test(test_bad_indexes),     cmocka_unit_test(test_queue_actions),
        cmocka_unit_test(test_message_actions), cmocka_unit_test(test_queue_url_from_path),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
