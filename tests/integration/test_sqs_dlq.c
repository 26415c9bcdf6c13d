/*
 * test_sqs_dlq.c -- dead-letter queues against the real sluiced over
 * HTTP/2: RedrivePolicy and RedriveAllowPolicy validation, the move of a
 * message past maxReceiveCount with its body, attributes (same MD5),
 * trace header and receive count intact plus DeadLetterQueueSourceArn,
 * and ListDeadLetterSourceQueues with paging.
 *
 * Expectations are Amazon SQS's (Amazon SQS Developer Guide, "Using
 * dead-letter queues"; API Reference, SetQueueAttributes). Receives use VisibilityTimeout 0 instead
 * of waiting.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "it_sqs.h"

static struct it_server srv;

#define IPV "InvalidParameterValue"
#define IPV_SHAPE "InvalidParameterValueException"
#define ARN_PREFIX "arn:aws:sqs:" IT_REGION ":" IT_TENANT ":"

static struct it_reply set_attr(const char *url, const char *name, const char *value)
{
    return it_call(&srv, "SetQueueAttributes",
                   json_pack("{s:s,s:{s:s}}", "QueueUrl", url, "Attributes", name, value));
}

/* The policy attribute name of url as GetQueueAttributes(All) shows it,
 * parsed (NULL when absent or not JSON); *present tells absent apart. */
static json_t *policy_shown(const char *url, const char *name, bool *present)
{
    struct it_reply r = it_call(&srv, "GetQueueAttributes",
                                json_pack("{s:s,s:[s]}", "QueueUrl", url, "AttributeNames", "All"));
    IT_OK(&r);
    const char *shown = it_jstr(json_object_get(r.json, "Attributes"), name);
    *present = shown != NULL;
    json_t *doc = shown != NULL ? json_loads(shown, 0, NULL) : NULL;
    it_reply_free(&r);
    return doc;
}

static char *policy(const char *dlq_name, const char *max_receive)
{
    char *text = malloc(512);
    snprintf(text, 512, "{\"deadLetterTargetArn\":\"" ARN_PREFIX "%s\",\"maxReceiveCount\":%s}",
             dlq_name, max_receive);
    return text;
}

static void redrive_validation(void)
{
    char *dlq = it_create_queue(&srv, "d-target", NULL);
    char *src = it_create_queue(&srv, "d-source", NULL);
    static const char *bad[] = {
        "not json",
        "{\"maxReceiveCount\":2}",
        "{\"deadLetterTargetArn\":\"" ARN_PREFIX "d-target\"}",
        "{\"deadLetterTargetArn\":\"" ARN_PREFIX "d-target\",\"maxReceiveCount\":0}",
        "{\"deadLetterTargetArn\":\"" ARN_PREFIX "d-target\",\"maxReceiveCount\":1001}",
        "{\"deadLetterTargetArn\":\"arn:aws:sqs:" IT_REGION "\",\"maxReceiveCount\":2}",
        "{\"deadLetterTargetArn\":\"" ARN_PREFIX "d-missing\",\"maxReceiveCount\":2}",
        "{\"deadLetterTargetArn\":\"arn:aws:sqs:eu-west-1:" IT_TENANT
        ":d-target\",\"maxReceiveCount\":2}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct it_reply r = set_attr(src, "RedrivePolicy", bad[i]);
        IT_ERR(&r, 400, IPV, IPV_SHAPE, NULL);
        if (r.status != 400) {
            fprintf(stderr, "  policy: %s\n", bad[i]);
        }
        it_reply_free(&r);
        /* CreateQueue validates it the same way and creates nothing. */
        r = it_call(&srv, "CreateQueue",
                    json_pack("{s:s,s:{s:s}}", "QueueName", "d-never", "Attributes",
                              "RedrivePolicy", bad[i]));
        IT_ERR(&r, 400, IPV, IPV_SHAPE, NULL);
        it_reply_free(&r);
    }
    struct it_reply r = it_call(&srv, "GetQueueUrl", json_pack("{s:s}", "QueueName", "d-never"));
    IT_CHECK(r.status == 400);
    it_reply_free(&r);

    /* A valid policy (maxReceiveCount as a number or a string) is shown,
     * and "" removes it. */
    static const char *counts[] = {"3", "\"3\""};
    for (size_t i = 0; i < 2; i++) {
        char *p = policy("d-target", counts[i]);
        r = set_attr(src, "RedrivePolicy", p);
        IT_OK(&r);
        it_reply_free(&r);
        free(p);
        bool present;
        json_t *doc = policy_shown(src, "RedrivePolicy", &present);
        IT_STREQ(it_jstr(doc, "deadLetterTargetArn"), ARN_PREFIX "d-target");
        json_t *mrc = json_object_get(doc, "maxReceiveCount");
        IT_CHECK(json_integer_value(mrc) == 3 ||
                 (json_is_string(mrc) && strcmp(json_string_value(mrc), "3") == 0));
        json_decref(doc);
    }
    r = set_attr(src, "RedrivePolicy", "");
    IT_OK(&r);
    it_reply_free(&r);
    bool present;
    json_decref(policy_shown(src, "RedrivePolicy", &present));
    IT_CHECK(!present);
    r = it_call(&srv, "ListDeadLetterSourceQueues", json_pack("{s:s}", "QueueUrl", dlq));
    IT_OK(&r);
    IT_CHECK(json_array_size(json_object_get(r.json, "queueUrls")) == 0);
    it_reply_free(&r);

    /* A queue cannot be its own dead-letter queue. */
    char *self = policy("d-source", "2");
    r = set_attr(src, "RedrivePolicy", self);
    IT_ERR(&r, 400, IPV, IPV_SHAPE, NULL);
    it_reply_free(&r);
    free(self);

    /* RedriveAllowPolicy on the DLQ: denyAll refuses, byQueue listing the
     * source allows. */
    r = set_attr(dlq, "RedriveAllowPolicy", "{\"redrivePermission\":\"denyAll\"}");
    IT_OK(&r);
    it_reply_free(&r);
    char *p = policy("d-target", "2");
    r = set_attr(src, "RedrivePolicy", p);
    IT_ERR(&r, 400, IPV, IPV_SHAPE, NULL);
    it_reply_free(&r);
    r = set_attr(dlq, "RedriveAllowPolicy",
                 "{\"redrivePermission\":\"byQueue\",\"sourceQueueArns\":[\"" ARN_PREFIX
                 "d-source\"]}");
    IT_OK(&r);
    it_reply_free(&r);
    r = set_attr(src, "RedrivePolicy", p);
    IT_OK(&r);
    it_reply_free(&r);
    r = set_attr(dlq, "RedriveAllowPolicy", "{\"redrivePermission\":\"sometimes\"}");
    IT_CHECK(r.status == 400);
    it_reply_free(&r);
    /* byQueue takes at most 10 source queues (research 1.6). */
    char eleven[1024] = "{\"redrivePermission\":\"byQueue\",\"sourceQueueArns\":[";
    size_t used = strlen(eleven);
    for (int i = 0; i < 11; i++) {
        used += (size_t)snprintf(eleven + used, sizeof eleven - used, "%s\"" ARN_PREFIX "s%d\"",
                                 i > 0 ? "," : "", i);
    }
    snprintf(eleven + used, sizeof eleven - used, "]}");
    r = set_attr(dlq, "RedriveAllowPolicy", eleven);
    IT_CHECK(r.status == 400);
    it_reply_free(&r);
    free(p);

    /* The policy in force is shown as set; a byQueue list without the
     * source refuses it; "" removes the policy (allowAll again). */
    const char *other_only =
        "{\"redrivePermission\":\"byQueue\",\"sourceQueueArns\":[\"" ARN_PREFIX "d-other\"]}";
    r = set_attr(dlq, "RedriveAllowPolicy", other_only);
    IT_OK(&r);
    it_reply_free(&r);
    json_t *got = policy_shown(dlq, "RedriveAllowPolicy", &present);
    json_t *want = json_loads(other_only, 0, NULL);
    IT_CHECK(got != NULL && json_equal(got, want));
    json_decref(got);
    json_decref(want);
    r = set_attr(src, "RedrivePolicy", "");
    IT_OK(&r);
    it_reply_free(&r);
    p = policy("d-target", "2");
    r = set_attr(src, "RedrivePolicy", p);
    IT_ERR(&r, 400, IPV, IPV_SHAPE, NULL);
    it_reply_free(&r);
    r = set_attr(dlq, "RedriveAllowPolicy", "");
    IT_OK(&r);
    it_reply_free(&r);
    json_decref(policy_shown(dlq, "RedriveAllowPolicy", &present));
    IT_CHECK(!present);
    r = set_attr(src, "RedrivePolicy", p);
    IT_OK(&r);
    it_reply_free(&r);
    free(p);
    free(src);
    free(dlq);
}

static json_t *str_attr(const char *value)
{
    return json_pack("{s:s,s:s}", "DataType", "String", "StringValue", value);
}

/* research 1.3 / 4.51: after maxReceiveCount receives the next receive
 * moves the message; it keeps MessageId, body, attributes and trace
 * header, counts on, and gains DeadLetterQueueSourceArn. */
static void move_to_dlq(void)
{
    char *dlq = it_create_queue(&srv, "d-dlq", NULL);
    char *p = policy("d-dlq", "2");
    char *src = it_create_queue(&srv, "d-src", json_pack("{s:s}", "RedrivePolicy", p));
    free(p);
    const char *trace = "Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=1";
    json_t *req = json_pack("{s:s,s:s,s:{s:o}}", "QueueUrl", src, "MessageBody", "doomed",
                            "MessageAttributes", "MyAttribute", str_attr("foobar"));
    json_object_set_new(req, "MessageSystemAttributes",
                        json_pack("{s:o}", "AWSTraceHeader", str_attr(trace)));
    struct it_reply r = it_call(&srv, "SendMessage", req);
    IT_OK(&r);
    char *id = strdup(it_str(&r, "MessageId") != NULL ? it_str(&r, "MessageId") : "");
    it_reply_free(&r);

    json_t *all = json_pack("{s:[s],s:[s],s:i}", "MessageAttributeNames", "All",
                            "MessageSystemAttributeNames", "All", "VisibilityTimeout", 0);
    char sent_ts[32] = "";
    for (int i = 1; i <= 2; i++) {
        r = it_receive(&srv, src, json_deep_copy(all));
        IT_CHECK(it_message_count(&r) == 1);
        json_t *a = json_object_get(json_array_get(it_messages(&r), 0), "Attributes");
        char want[8];
        snprintf(want, sizeof want, "%d", i);
        IT_STREQ(it_jstr(a, "ApproximateReceiveCount"), want);
        if (i == 1 && it_jstr(a, "SentTimestamp") != NULL) {
            snprintf(sent_ts, sizeof sent_ts, "%s", it_jstr(a, "SentTimestamp"));
        }
        it_reply_free(&r);
    }
    /* The third receive would pass maxReceiveCount: the message moves. */
    r = it_receive(&srv, src, json_deep_copy(all));
    IT_OK(&r);
    IT_CHECK(it_message_count(&r) == 0);
    it_reply_free(&r);
    IT_CHECK(it_queue_attr_int(&srv, src, "ApproximateNumberOfMessages") == 0);
    IT_CHECK(it_queue_attr_int(&srv, src, "ApproximateNumberOfMessagesNotVisible") == 0);
    IT_CHECK(it_queue_attr_int(&srv, dlq, "ApproximateNumberOfMessages") == 1);

    r = it_receive(&srv, dlq, json_deep_copy(all));
    IT_CHECK(it_message_count(&r) == 1);
    json_t *m = json_array_get(it_messages(&r), 0);
    IT_STREQ(it_jstr(m, "MessageId"), id);
    IT_STREQ(it_jstr(m, "Body"), "doomed");
    char body_md5[33];
    it_md5_hex("doomed", 6, body_md5);
    IT_STREQ(it_jstr(m, "MD5OfBody"), body_md5);
    IT_STREQ(it_jstr(m, "MD5OfMessageAttributes"), "adb59cd4678ea5a855436b949cd07ab6");
    IT_STREQ(it_jstr(json_object_get(json_object_get(m, "MessageAttributes"), "MyAttribute"),
                     "StringValue"),
             "foobar");
    json_t *a = json_object_get(m, "Attributes");
    IT_STREQ(it_jstr(a, "AWSTraceHeader"), trace);
    IT_STREQ(it_jstr(a, "ApproximateReceiveCount"), "3");
    IT_STREQ(it_jstr(a, "DeadLetterQueueSourceArn"), ARN_PREFIX "d-src");
    IT_STREQ(it_jstr(a, "SentTimestamp"), sent_ts);
    it_reply_free(&r);
    /* A message never received too often stays in its queue. */
    free(it_send(&srv, src, "fine"));
    r = it_receive(&srv, src, json_deep_copy(all));
    IT_CHECK(it_message_count(&r) == 1);
    IT_CHECK(json_object_get(json_object_get(json_array_get(it_messages(&r), 0), "Attributes"),
                             "DeadLetterQueueSourceArn") == NULL);
    it_reply_free(&r);
    json_decref(all);
    free(id);
    free(src);
    free(dlq);
}

static void list_sources(void)
{
    char *dlq = it_create_queue(&srv, "d-many", NULL);
    char *p = policy("d-many", "5");
    char *a = it_create_queue(&srv, "d-src-a", json_pack("{s:s}", "RedrivePolicy", p));
    char *b = it_create_queue(&srv, "d-src-b", json_pack("{s:s}", "RedrivePolicy", p));
    free(it_create_queue(&srv, "d-unrelated", NULL));
    free(p);
    struct it_reply r =
        it_call(&srv, "ListDeadLetterSourceQueues", json_pack("{s:s}", "QueueUrl", dlq));
    IT_OK(&r);
    json_t *urls = json_object_get(r.json, "queueUrls");
    IT_CHECK(json_array_size(urls) == 2);
    const char *u0 = json_string_value(json_array_get(urls, 0));
    const char *u1 = json_string_value(json_array_get(urls, 1));
    IT_CHECK(
        u0 != NULL && u1 != NULL &&
        ((strcmp(u0, a) == 0 && strcmp(u1, b) == 0) || (strcmp(u0, b) == 0 && strcmp(u1, a) == 0)));
    IT_CHECK(json_object_get(r.json, "NextToken") == NULL);
    it_reply_free(&r);

    r = it_call(&srv, "ListDeadLetterSourceQueues",
                json_pack("{s:s,s:i}", "QueueUrl", dlq, "MaxResults", 1));
    IT_CHECK(json_array_size(json_object_get(r.json, "queueUrls")) == 1);
    const char *token = it_str(&r, "NextToken");
    IT_CHECK(token != NULL);
    const char *first_text =
        json_string_value(json_array_get(json_object_get(r.json, "queueUrls"), 0));
    char *first_url = strdup(first_text != NULL ? first_text : "");
    json_t *next = json_pack("{s:s,s:i,s:s}", "QueueUrl", dlq, "MaxResults", 1, "NextToken",
                             token != NULL ? token : "");
    it_reply_free(&r);
    r = it_call(&srv, "ListDeadLetterSourceQueues", next);
    IT_CHECK(json_array_size(json_object_get(r.json, "queueUrls")) == 1);
    const char *second = json_string_value(json_array_get(json_object_get(r.json, "queueUrls"), 0));
    IT_CHECK(second != NULL && strcmp(second, first_url) != 0);
    IT_CHECK(json_object_get(r.json, "NextToken") == NULL);
    it_reply_free(&r);
    free(first_url);

    /* MaxResults is 1..1000, as for ListQueues (research 1.2, 1.8). */
    static const int bad_max[] = {0, 1001};
    for (size_t i = 0; i < 2; i++) {
        r = it_call(&srv, "ListDeadLetterSourceQueues",
                    json_pack("{s:s,s:i}", "QueueUrl", dlq, "MaxResults", bad_max[i]));
        IT_ERR(&r, 400, IPV, IPV_SHAPE, NULL);
        it_reply_free(&r);
    }

    char missing[256];
    snprintf(missing, sizeof missing, "%s/" IT_TENANT "/d-nowhere", srv.base_url);
    r = it_call(&srv, "ListDeadLetterSourceQueues", json_pack("{s:s}", "QueueUrl", missing));
    IT_ERR(&r, 400, "AWS.SimpleQueueService.NonExistentQueue", "QueueDoesNotExist",
           "The specified queue does not exist.");
    it_reply_free(&r);
    free(a);
    free(b);
    free(dlq);
}

int main(void)
{
    struct it_options opt = {.tls = false};
    IT_REQUIRE(it_server_start(&srv, &opt) == 0);
    redrive_validation();
    move_to_dlq();
    list_sources();
    IT_CHECK(it_healthz(&srv));
    IT_CHECK(it_server_stop(&srv) == 0);
    it_server_cleanup(&srv);
    return it_summary();
}
