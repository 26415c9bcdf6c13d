/*
 * test_sqs_queues.c -- the SQS queue actions against the real sluiced over
 * HTTP/2 (libcurl, SigV4 by libcurl): CreateQueue, GetQueueUrl,
 * ListQueues, DeleteQueue, GetQueueAttributes, SetQueueAttributes,
 * PurgeQueue, TagQueue / UntagQueue / ListQueueTags.
 *
 * Every expectation is Amazon SQS's behaviour (Amazon SQS API Reference:
 * CreateQueue, GetQueueAttributes, SetQueueAttributes, DeleteQueue;
 * observed details in docs/api.md), not sluice's code.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "it_sqs.h"

static struct it_server srv;

static json_t *attributes_of(const struct it_server *s, const char *url, json_t *names)
{
    json_t *req = json_pack("{s:s}", "QueueUrl", url);
    if (names != NULL) {
        json_object_set_new(req, "AttributeNames", names);
    }
    struct it_reply r = it_call(s, "GetQueueAttributes", req);
    IT_OK(&r);
    json_t *attrs = json_object_get(r.json, "Attributes");
    json_t *out = attrs != NULL ? json_incref(attrs) : json_object();
    it_reply_free(&r);
    return out;
}

static void expected_url(const char *name, char *out, size_t cap)
{
    snprintf(out, cap, "%s/" IT_TENANT "/%s", srv.base_url, name);
}

/* A fresh standard queue shows exactly these, as Amazon SQS's do. */
static void create_and_default_attributes(void)
{
    long long t0 = it_now_ms() / 1000;
    char *url = it_create_queue(&srv, "q-defaults", NULL);
    char want[256];
    expected_url("q-defaults", want, sizeof want);
    IT_STREQ(url, want);
    if (url == NULL) {
        return;
    }
    json_t *all = attributes_of(&srv, url, json_pack("[s]", "All"));
    static const struct {
        const char *key;
        const char *value; /* NULL: checked below */
    } expect[] = {
        {"ApproximateNumberOfMessages", "0"},
        {"ApproximateNumberOfMessagesDelayed", "0"},
        {"ApproximateNumberOfMessagesNotVisible", "0"},
        {"CreatedTimestamp", NULL},
        {"DelaySeconds", "0"},
        {"LastModifiedTimestamp", NULL},
        {"MaximumMessageSize", "1048576"},
        {"MessageRetentionPeriod", "345600"},
        {"QueueArn", "arn:aws:sqs:" IT_REGION ":" IT_TENANT ":q-defaults"},
        {"ReceiveMessageWaitTimeSeconds", "0"},
        {"SqsManagedSseEnabled", "true"},
        {"VisibilityTimeout", "30"},
    };
    IT_CHECK(json_object_size(all) == sizeof expect / sizeof expect[0]);
    long long t1 = it_now_ms() / 1000;
    for (size_t i = 0; i < sizeof expect / sizeof expect[0]; i++) {
        const char *v = it_jstr(all, expect[i].key);
        if (expect[i].value != NULL) {
            IT_STREQ(v, expect[i].value);
        } else {
            long long ts = v != NULL ? strtoll(v, NULL, 10) : -1;
            IT_CHECK(ts >= t0 - 1 && ts <= t1 + 1); /* epoch seconds */
        }
    }
    IT_CHECK(json_object_get(all, "Policy") == NULL);
    IT_CHECK(json_object_get(all, "RedrivePolicy") == NULL);
    json_decref(all);

    /* Named attributes: only those come back. */
    json_t *two =
        attributes_of(&srv, url, json_pack("[s,s]", "VisibilityTimeout", "MaximumMessageSize"));
    IT_CHECK(json_object_size(two) == 2);
    IT_STREQ(it_jstr(two, "VisibilityTimeout"), "30");
    IT_STREQ(it_jstr(two, "MaximumMessageSize"), "1048576");
    json_decref(two);
    /* No names: an empty map (LS test_get_specific_queue_attribute_response). */
    json_t *none = attributes_of(&srv, url, NULL);
    IT_CHECK(json_object_size(none) == 0);
    json_decref(none);

    struct it_reply r = it_call(&srv, "GetQueueAttributes",
                                json_pack("{s:s,s:[s]}", "QueueUrl", url, "AttributeNames", "Foo"));
    IT_ERR(&r, 400, "InvalidAttributeName", "InvalidAttributeName", NULL);
    it_reply_free(&r);
    free(url);
}

static void create_is_idempotent(void)
{
    char *url = it_create_queue(&srv, "q-idem", json_pack("{s:s}", "VisibilityTimeout", "45"));
    char *again = it_create_queue(&srv, "q-idem", json_pack("{s:s}", "VisibilityTimeout", "45"));
    IT_STREQ(again, url);
    free(again);
    /* Omitting attributes matches too. */
    again = it_create_queue(&srv, "q-idem", NULL);
    IT_STREQ(again, url);
    free(again);
    /* Explicit defaults match a queue created without them. */
    again = it_create_queue(
        &srv, "q-idem",
        json_pack("{s:s,s:s}", "DelaySeconds", "0", "MessageRetentionPeriod", "345600"));
    IT_STREQ(again, url);
    free(again);

    struct it_reply r = it_call(
        &srv, "CreateQueue",
        json_pack("{s:s,s:{s:s}}", "QueueName", "q-idem", "Attributes", "VisibilityTimeout", "46"));
    IT_ERR(&r, 400, "QueueAlreadyExists", "QueueNameExists",
           "A queue already exists with the same name and a different value for attribute "
           "VisibilityTimeout");
    it_reply_free(&r);

    /* After SetQueueAttributes, the new value matches (LS
     * test_create_queue_with_default_arguments_works_with_modified_attributes). */
    r = it_call(
        &srv, "SetQueueAttributes",
        json_pack("{s:s,s:{s:s}}", "QueueUrl", url, "Attributes", "VisibilityTimeout", "60"));
    IT_OK(&r);
    it_reply_free(&r);
    again = it_create_queue(&srv, "q-idem", json_pack("{s:s}", "VisibilityTimeout", "60"));
    IT_STREQ(again, url);
    free(again);
    /* Sends change internal counters only; create stays idempotent. */
    free(it_send(&srv, url, "counted"));
    again = it_create_queue(&srv, "q-idem", NULL);
    IT_STREQ(again, url);
    free(again);
    free(url);
}

static void create_name_rules(void)
{
    static const char *bad[] = {"bad/name", "has space", "std.fifo", "ümlaut", ""};
    char long81[82];
    memset(long81, 'a', 81);
    long81[81] = '\0';
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct it_reply r = it_call(&srv, "CreateQueue", json_pack("{s:s}", "QueueName", bad[i]));
        IT_CHECK(r.status == 400);
        if (bad[i][0] != '\0') {
            IT_ERR(&r, 400, "InvalidParameterValue", "InvalidParameterValueException",
                   "Can only include alphanumeric characters, hyphens, or underscores. 1 to 80 in "
                   "length");
        }
        it_reply_free(&r);
    }
    struct it_reply r = it_call(&srv, "CreateQueue", json_pack("{s:s}", "QueueName", long81));
    IT_ERR(&r, 400, "InvalidParameterValue", "InvalidParameterValueException", NULL);
    it_reply_free(&r);
    long81[80] = '\0'; /* exactly 80 is fine */
    char *url = it_create_queue(&srv, long81, NULL);
    IT_CHECK(url != NULL);
    free(url);
    url = it_create_queue(&srv, "Mixed_Case-09", NULL);
    char want[256];
    expected_url("Mixed_Case-09", want, sizeof want);
    IT_STREQ(url, want);
    free(url);
}

static void create_invalid_attributes(void)
{
    static const struct {
        const char *name;
        const char *value;
        const char *code;
        const char *message;
    } cases[] = {
        {"Foo", "1", "InvalidAttributeName", "Unknown Attribute Foo."},
        {"ContentBasedDeduplication", "true", "InvalidAttributeName",
         "Unknown Attribute ContentBasedDeduplication."},
        {"VisibilityTimeout", "43201", "InvalidAttributeValue", NULL},
        {"VisibilityTimeout", "-1", "InvalidAttributeValue", NULL},
        {"DelaySeconds", "901", "InvalidAttributeValue", NULL},
        {"DelaySeconds", "abc", "InvalidAttributeValue", NULL},
        {"MaximumMessageSize", "1023", "InvalidAttributeValue", NULL},
        {"MaximumMessageSize", "1048577", "InvalidAttributeValue", NULL},
        {"MessageRetentionPeriod", "59", "InvalidAttributeValue", NULL},
        {"MessageRetentionPeriod", "1209601", "InvalidAttributeValue", NULL},
        {"ReceiveMessageWaitTimeSeconds", "21", "InvalidAttributeValue", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct it_reply r = it_call(&srv, "CreateQueue",
                                    json_pack("{s:s,s:{s:s}}", "QueueName", "q-badattr",
                                              "Attributes", cases[i].name, cases[i].value));
        IT_ERR(&r, 400, cases[i].code, cases[i].code, cases[i].message);
        it_reply_free(&r);
    }
    /* None of them created the queue. */
    struct it_reply r = it_call(&srv, "GetQueueUrl", json_pack("{s:s}", "QueueName", "q-badattr"));
    IT_ERR(&r, 400, "AWS.SimpleQueueService.NonExistentQueue", "QueueDoesNotExist",
           "The specified queue does not exist.");
    it_reply_free(&r);
    /* The edges of the ranges are accepted. */
    char *url = it_create_queue(&srv, "q-edges",
                                json_pack("{s:s,s:s,s:s,s:s,s:s}", "VisibilityTimeout", "43200",
                                          "DelaySeconds", "900", "MaximumMessageSize", "1024",
                                          "MessageRetentionPeriod", "1209600",
                                          "ReceiveMessageWaitTimeSeconds", "20"));
    IT_CHECK(url != NULL);
    free(url);
}

static void tags(void)
{
    struct it_reply r = it_call(
        &srv, "CreateQueue",
        json_pack("{s:s,s:{s:s,s:s}}", "QueueName", "q-tags", "tags", "team", "a", "Env", "x"));
    IT_OK(&r);
    char *url = strdup(it_str(&r, "QueueUrl") != NULL ? it_str(&r, "QueueUrl") : "");
    it_reply_free(&r);

    r = it_call(&srv, "ListQueueTags", json_pack("{s:s}", "QueueUrl", url));
    IT_OK(&r);
    json_t *t = json_object_get(r.json, "Tags");
    IT_CHECK(json_object_size(t) == 2);
    IT_STREQ(it_jstr(t, "team"), "a");
    IT_STREQ(it_jstr(t, "Env"), "x");
    it_reply_free(&r);

    /* A new value overwrites; keys are case-sensitive. */
    r = it_call(&srv, "TagQueue",
                json_pack("{s:s,s:{s:s,s:s}}", "QueueUrl", url, "Tags", "team", "b", "env", "y"));
    IT_OK(&r);
    IT_CHECK(r.body[0] == '\0'); /* no output: empty body */
    it_reply_free(&r);
    /* Untagging a key that does not exist is a no-op. */
    r = it_call(&srv, "UntagQueue",
                json_pack("{s:s,s:[s,s]}", "QueueUrl", url, "TagKeys", "Env", "missing"));
    IT_OK(&r);
    it_reply_free(&r);
    r = it_call(&srv, "ListQueueTags", json_pack("{s:s}", "QueueUrl", url));
    t = json_object_get(r.json, "Tags");
    IT_CHECK(json_object_size(t) == 2);
    IT_STREQ(it_jstr(t, "team"), "b");
    IT_STREQ(it_jstr(t, "env"), "y");
    it_reply_free(&r);
    free(url);

    /* A queue without tags lists none. */
    url = it_create_queue(&srv, "q-notags", NULL);
    r = it_call(&srv, "ListQueueTags", json_pack("{s:s}", "QueueUrl", url));
    IT_OK(&r);
    IT_CHECK(json_object_size(json_object_get(r.json, "Tags")) == 0);
    it_reply_free(&r);
    free(url);
}

static void get_queue_url(void)
{
    char *url = it_create_queue(&srv, "q-url", NULL);
    struct it_reply r = it_call(&srv, "GetQueueUrl", json_pack("{s:s}", "QueueName", "q-url"));
    IT_OK(&r);
    IT_STREQ(it_str(&r, "QueueUrl"), url);
    it_reply_free(&r);
    r = it_call(&srv, "GetQueueUrl",
                json_pack("{s:s,s:s}", "QueueName", "q-url", "QueueOwnerAWSAccountId", IT_TENANT));
    IT_OK(&r);
    IT_STREQ(it_str(&r, "QueueUrl"), url);
    it_reply_free(&r);
    r = it_call(&srv, "GetQueueUrl", json_pack("{s:s}", "QueueName", "q-missing"));
    IT_ERR(&r, 400, "AWS.SimpleQueueService.NonExistentQueue", "QueueDoesNotExist",
           "The specified queue does not exist.");
    it_reply_free(&r);
    /* Names are case-sensitive. */
    r = it_call(&srv, "GetQueueUrl", json_pack("{s:s}", "QueueName", "Q-URL"));
    IT_ERR(&r, 400, "AWS.SimpleQueueService.NonExistentQueue", "QueueDoesNotExist", NULL);
    it_reply_free(&r);
    free(url);
}

static bool contains(json_t *arr, const char *s)
{
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v)
    {
        if (strcmp(json_string_value(v), s) == 0) {
            return true;
        }
    }
    return false;
}

static void list_queues(void)
{
    static const char *names[] = {"lq-a1", "lq-a2", "lq-a3", "lq-b1", "lq-b2"};
    char urls[5][256];
    for (size_t i = 0; i < 5; i++) {
        free(it_create_queue(&srv, names[i], NULL));
        expected_url(names[i], urls[i], sizeof urls[i]);
    }
    struct it_reply r = it_call(&srv, "ListQueues", json_pack("{s:s}", "QueueNamePrefix", "lq-a"));
    IT_OK(&r);
    json_t *got = json_object_get(r.json, "QueueUrls");
    IT_CHECK(json_array_size(got) == 3);
    IT_CHECK(contains(got, urls[0]) && contains(got, urls[1]) && contains(got, urls[2]));
    IT_CHECK(json_object_get(r.json, "NextToken") == NULL);
    it_reply_free(&r);

    r = it_call(&srv, "ListQueues", json_pack("{s:s}", "QueueNamePrefix", "zzz"));
    IT_OK(&r);
    IT_CHECK(json_array_size(json_object_get(r.json, "QueueUrls")) == 0);
    it_reply_free(&r);

    /* Paging: MaxResults 2 over 5 queues is 2 + 2 + 1, every queue once. */
    json_t *seen = json_array();
    char *token = NULL;
    int pages = 0;
    do {
        json_t *req = json_pack("{s:s,s:i}", "QueueNamePrefix", "lq-", "MaxResults", 2);
        if (token != NULL) {
            json_object_set_new(req, "NextToken", json_string(token));
            free(token);
            token = NULL;
        }
        r = it_call(&srv, "ListQueues", req);
        IT_OK(&r);
        json_t *page = json_object_get(r.json, "QueueUrls");
        IT_CHECK(json_array_size(page) == (pages < 2 ? 2u : 1u));
        size_t i;
        json_t *v;
        json_array_foreach(page, i, v)
        {
            IT_CHECK(!contains(seen, json_string_value(v)));
            json_array_append(seen, v);
        }
        if (it_str(&r, "NextToken") != NULL) {
            token = strdup(it_str(&r, "NextToken"));
        }
        it_reply_free(&r);
        pages++;
    } while (token != NULL && pages < 10);
    IT_CHECK(pages == 3);
    IT_CHECK(json_array_size(seen) == 5);
    json_decref(seen);

    /* No NextToken without MaxResults (research 1.8). */
    r = it_call(&srv, "ListQueues", json_pack("{s:s}", "QueueNamePrefix", "lq-"));
    IT_CHECK(json_array_size(json_object_get(r.json, "QueueUrls")) == 5);
    IT_CHECK(json_object_get(r.json, "NextToken") == NULL);
    it_reply_free(&r);

    static const int bad_max[] = {0, 1001, -1};
    for (size_t i = 0; i < 3; i++) {
        r = it_call(&srv, "ListQueues", json_pack("{s:i}", "MaxResults", bad_max[i]));
        IT_ERR(&r, 400, "InvalidParameterValue", "InvalidParameterValueException", NULL);
        it_reply_free(&r);
    }
}

static void delete_queue(void)
{
    char *url = it_create_queue(&srv, "q-del", NULL);
    free(it_send(&srv, url, "one"));
    free(it_send(&srv, url, "two"));
    struct it_reply r = it_call(&srv, "DeleteQueue", json_pack("{s:s}", "QueueUrl", url));
    IT_OK(&r);
    IT_CHECK(r.body[0] == '\0');
    it_reply_free(&r);
    r = it_call(&srv, "GetQueueUrl", json_pack("{s:s}", "QueueName", "q-del"));
    IT_ERR(&r, 400, "AWS.SimpleQueueService.NonExistentQueue", "QueueDoesNotExist", NULL);
    it_reply_free(&r);
    r = it_call(&srv, "SendMessage",
                json_pack("{s:s,s:s}", "QueueUrl", url, "MessageBody", "after"));
    IT_ERR(&r, 400, "AWS.SimpleQueueService.NonExistentQueue", "QueueDoesNotExist", NULL);
    it_reply_free(&r);
    r = it_receive(&srv, url, NULL);
    IT_ERR(&r, 400, "AWS.SimpleQueueService.NonExistentQueue", "QueueDoesNotExist", NULL);
    it_reply_free(&r);
    r = it_call(&srv, "ListQueues", json_pack("{s:s}", "QueueNamePrefix", "q-del"));
    IT_CHECK(json_array_size(json_object_get(r.json, "QueueUrls")) == 0);
    it_reply_free(&r);
    r = it_call(&srv, "DeleteQueue", json_pack("{s:s}", "QueueUrl", url));
    IT_ERR(&r, 400, "AWS.SimpleQueueService.NonExistentQueue", "QueueDoesNotExist", NULL);
    it_reply_free(&r);
    /* SQS blocks the name for 60 s after a delete (research 1.6, 1.9). */
    r = it_call(&srv, "CreateQueue", json_pack("{s:s}", "QueueName", "q-del"));
    IT_ERR(&r, 400, "AWS.SimpleQueueService.QueueDeletedRecently", "QueueDeletedRecently", NULL);
    it_reply_free(&r);
    free(url);
}

static void set_queue_attributes(void)
{
    char *url = it_create_queue(&srv, "q-set", NULL);
    struct it_reply r = it_call(
        &srv, "SetQueueAttributes",
        json_pack("{s:s,s:{s:s,s:s,s:s,s:s,s:s}}", "QueueUrl", url, "Attributes",
                  "VisibilityTimeout", "60", "DelaySeconds", "5", "MaximumMessageSize", "2048",
                  "MessageRetentionPeriod", "120", "ReceiveMessageWaitTimeSeconds", "3"));
    IT_OK(&r);
    IT_CHECK(r.body[0] == '\0');
    it_reply_free(&r);
    json_t *a = attributes_of(&srv, url, json_pack("[s]", "All"));
    IT_STREQ(it_jstr(a, "VisibilityTimeout"), "60");
    IT_STREQ(it_jstr(a, "DelaySeconds"), "5");
    IT_STREQ(it_jstr(a, "MaximumMessageSize"), "2048");
    IT_STREQ(it_jstr(a, "MessageRetentionPeriod"), "120");
    IT_STREQ(it_jstr(a, "ReceiveMessageWaitTimeSeconds"), "3");
    const char *c = it_jstr(a, "CreatedTimestamp");
    const char *m = it_jstr(a, "LastModifiedTimestamp");
    IT_CHECK(c != NULL && m != NULL && strtoll(m, NULL, 10) >= strtoll(c, NULL, 10));
    json_decref(a);

    static const struct {
        const char *name;
        const char *value;
        const char *code;
        const char *message;
    } cases[] = {
        {"Foo", "1", "InvalidAttributeName", "Unknown Attribute Foo."},
        {"VisibilityTimeout", "43201", "InvalidAttributeValue", NULL},
        {"DelaySeconds", "-1", "InvalidAttributeValue", NULL},
        {"MaximumMessageSize", "x", "InvalidAttributeValue", NULL},
        {"FifoQueue", "true", "InvalidAttributeValue",
         "Invalid value for the parameter FifoQueue. Reason: Modifying queue type is not "
         "supported."},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        r = it_call(&srv, "SetQueueAttributes",
                    json_pack("{s:s,s:{s:s}}", "QueueUrl", url, "Attributes", cases[i].name,
                              cases[i].value));
        IT_ERR(&r, 400, cases[i].code, cases[i].code, cases[i].message);
        it_reply_free(&r);
    }
    IT_CHECK(it_queue_attr_int(&srv, url, "VisibilityTimeout") == 60); /* unchanged */

    /* Policy: set, then "" removes it. */
    const char *policy = "{\"Version\":\"2012-10-17\",\"Statement\":[]}";
    r = it_call(&srv, "SetQueueAttributes",
                json_pack("{s:s,s:{s:s}}", "QueueUrl", url, "Attributes", "Policy", policy));
    IT_OK(&r);
    it_reply_free(&r);
    a = attributes_of(&srv, url, json_pack("[s]", "Policy"));
    IT_STREQ(it_jstr(a, "Policy"), policy);
    json_decref(a);
    r = it_call(&srv, "SetQueueAttributes",
                json_pack("{s:s,s:{s:s}}", "QueueUrl", url, "Attributes", "Policy", ""));
    IT_OK(&r);
    it_reply_free(&r);
    a = attributes_of(&srv, url, json_pack("[s]", "All"));
    IT_CHECK(json_object_get(a, "Policy") == NULL);
    json_decref(a);

    r = it_call(&srv, "SetQueueAttributes",
                json_pack("{s:s,s:{s:s}}", "QueueUrl", "http://x/acme/q-nope", "Attributes",
                          "DelaySeconds", "1"));
    IT_ERR(&r, 400, "AWS.SimpleQueueService.NonExistentQueue", "QueueDoesNotExist", NULL);
    it_reply_free(&r);
    free(url);
}

/* Approximate* counters after sends, delays, receives and deletes. */
static void approximate_counters(void)
{
    char *url = it_create_queue(&srv, "q-counts", NULL);
    free(it_send(&srv, url, "a"));
    free(it_send(&srv, url, "b"));
    struct it_reply r = it_call(
        &srv, "SendMessage",
        json_pack("{s:s,s:s,s:i}", "QueueUrl", url, "MessageBody", "later", "DelaySeconds", 600));
    IT_OK(&r);
    it_reply_free(&r);
    IT_CHECK(it_queue_attr_int(&srv, url, "ApproximateNumberOfMessages") == 2);
    IT_CHECK(it_queue_attr_int(&srv, url, "ApproximateNumberOfMessagesDelayed") == 1);
    IT_CHECK(it_queue_attr_int(&srv, url, "ApproximateNumberOfMessagesNotVisible") == 0);

    r = it_receive(&srv, url, json_pack("{s:i}", "VisibilityTimeout", 600));
    IT_CHECK(it_message_count(&r) == 1);
    const char *handle = it_jstr(json_array_get(it_messages(&r), 0), "ReceiptHandle");
    char *h = strdup(handle != NULL ? handle : "x");
    it_reply_free(&r);
    IT_CHECK(it_queue_attr_int(&srv, url, "ApproximateNumberOfMessages") == 1);
    IT_CHECK(it_queue_attr_int(&srv, url, "ApproximateNumberOfMessagesNotVisible") == 1);
    IT_CHECK(it_queue_attr_int(&srv, url, "ApproximateNumberOfMessagesDelayed") == 1);

    r = it_call(&srv, "DeleteMessage", json_pack("{s:s,s:s}", "QueueUrl", url, "ReceiptHandle", h));
    IT_OK(&r);
    it_reply_free(&r);
    free(h);
    IT_CHECK(it_queue_attr_int(&srv, url, "ApproximateNumberOfMessagesNotVisible") == 0);
    IT_CHECK(it_queue_attr_int(&srv, url, "ApproximateNumberOfMessages") == 1);
    free(url);
}

/* PurgeQueue removes visible, in-flight and delayed messages; a second
 * purge within 60 s is refused (research 1.4, 1.9). */
static void purge_queue(void)
{
    char *url = it_create_queue(&srv, "q-purge", NULL);
    free(it_send(&srv, url, "visible"));
    free(it_send(&srv, url, "inflight"));
    struct it_reply r = it_call(
        &srv, "SendMessage",
        json_pack("{s:s,s:s,s:i}", "QueueUrl", url, "MessageBody", "delayed", "DelaySeconds", 600));
    it_reply_free(&r);
    r = it_receive(&srv, url, json_pack("{s:i}", "VisibilityTimeout", 600));
    IT_CHECK(it_message_count(&r) == 1);
    it_reply_free(&r);

    r = it_call(&srv, "PurgeQueue", json_pack("{s:s}", "QueueUrl", url));
    IT_OK(&r);
    IT_CHECK(r.body[0] == '\0');
    it_reply_free(&r);
    IT_CHECK(it_queue_attr_int(&srv, url, "ApproximateNumberOfMessages") == 0);
    IT_CHECK(it_queue_attr_int(&srv, url, "ApproximateNumberOfMessagesNotVisible") == 0);
    IT_CHECK(it_queue_attr_int(&srv, url, "ApproximateNumberOfMessagesDelayed") == 0);
    r = it_receive(&srv, url, json_pack("{s:i}", "MaxNumberOfMessages", 10));
    IT_OK(&r);
    IT_CHECK(it_messages(&r) == NULL); /* no "Messages" member when empty */
    it_reply_free(&r);

    r = it_call(&srv, "PurgeQueue", json_pack("{s:s}", "QueueUrl", url));
    IT_ERR(&r, 403, "AWS.SimpleQueueService.PurgeQueueInProgress", "PurgeQueueInProgress",
           "Only one PurgeQueue operation on q-purge is allowed every 60 seconds.");
    it_reply_free(&r);
    /* The queue still works after the purge. */
    free(it_send(&srv, url, "after"));
    IT_CHECK(it_queue_attr_int(&srv, url, "ApproximateNumberOfMessages") == 1);
    /* Another queue's purge is not limited by this one's. */
    char *other = it_create_queue(&srv, "q-purge2", NULL);
    r = it_call(&srv, "PurgeQueue", json_pack("{s:s}", "QueueUrl", other));
    IT_OK(&r);
    it_reply_free(&r);
    free(other);
    free(url);
}

/* A URL that is not a queue URL, and unknown queues, on queue actions. */
static void unknown_queues(void)
{
    static const char *actions[] = {"DeleteQueue", "PurgeQueue", "ListQueueTags",
                                    "GetQueueAttributes"};
    char url[256];
    expected_url("never-created", url, sizeof url);
    for (size_t i = 0; i < sizeof actions / sizeof actions[0]; i++) {
        struct it_reply r = it_call(&srv, actions[i], json_pack("{s:s}", "QueueUrl", url));
        IT_ERR(&r, 400, "AWS.SimpleQueueService.NonExistentQueue", "QueueDoesNotExist",
               "The specified queue does not exist.");
        it_reply_free(&r);
    }
}

/* Raw requests an SDK would not send. */
static void raw_inputs(void)
{
    struct it_reply r = it_call_raw(&srv, "DeleteQueue", "{}");
    IT_ERR(&r, 400, "MissingParameter", "MissingRequiredParameterException",
           "The request must contain the parameter QueueUrl.");
    it_reply_free(&r);
    r = it_call_raw(&srv, "GetQueueUrl", "{}");
    IT_ERR(&r, 400, "MissingParameter", "MissingRequiredParameterException",
           "The request must contain the parameter QueueName.");
    it_reply_free(&r);
    r = it_call_raw(&srv, "PurgeQueue", "{\"QueueUrl\":\"not a url\"}");
    IT_ERR(&r, 404, "InvalidAddress", "InvalidAddress", NULL);
    it_reply_free(&r);
}

int main(void)
{
    struct it_options opt = {.tls = false};
    IT_REQUIRE(it_server_start(&srv, &opt) == 0);
    create_and_default_attributes();
    create_is_idempotent();
    create_name_rules();
    create_invalid_attributes();
    tags();
    get_queue_url();
    list_queues();
    delete_queue();
    set_queue_attributes();
    approximate_counters();
    purge_queue();
    unknown_queues();
    raw_inputs();
    IT_CHECK(it_healthz(&srv));
    IT_CHECK(it_server_stop(&srv) == 0);
    it_server_cleanup(&srv);
    return it_summary();
}
