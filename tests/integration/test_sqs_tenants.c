/*
 * test_sqs_tenants.c -- tenant isolation and the admin principal against
 * the real sluiced over HTTP/2, with two tenants (acme, beta) and the
 * admin credentials in the configuration:
 *  - another tenant's queue answers every action exactly as a queue that
 *    does not exist (no data, no existence leaks), including through
 *    GetQueueUrl's QueueOwnerAWSAccountId and a RedrivePolicy ARN;
 *  - the same queue name in two tenants are two independent queues;
 *  - the admin acts on a tenant's queue through its URL (every
 *    queue-scoped action, redrive included), and its ListQueues lists
 *    every tenant's queues;
 *  - ListQueues returns at most 1000 URLs (SQS's cap).
 *
 * Expectations: tenant isolation as docs/api.md states it (a tenant plays
 * an AWS account) and SQS's behaviour across accounts.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "it_sqs.h"

static struct it_server srv;

#define BETA "beta"
#define BETA_KEY "AKIDBETA"
#define BETA_SECRET "beta-secret"
#define NON_EXISTENT "AWS.SimpleQueueService.NonExistentQueue"
#define MISSING_MESSAGE "The specified queue does not exist."

static struct it_reply as_beta(const char *action, json_t *req)
{
    return it_call_as(&srv, BETA_KEY, BETA_SECRET, action, req);
}

static struct it_reply as_admin(const char *action, json_t *req)
{
    return it_call_as(&srv, IT_ADMIN_KEY, IT_ADMIN_SECRET, action, req);
}

static char *beta_queue(const char *name)
{
    struct it_reply r = as_beta("CreateQueue", json_pack("{s:s}", "QueueName", name));
    IT_OK(&r);
    char *url = strdup(it_str(&r, "QueueUrl") != NULL ? it_str(&r, "QueueUrl") : "");
    it_reply_free(&r);
    return url;
}

static bool url_listed(const struct it_reply *r, const char *url)
{
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(r->json, "QueueUrls"), i, v)
    {
        if (strcmp(json_string_value(v), url) == 0) {
            return true;
        }
    }
    return false;
}

static void same_name_two_queues(void)
{
    char *acme = it_create_queue(&srv, "shared", NULL);
    char *beta = beta_queue("shared");
    char want[256];
    snprintf(want, sizeof want, "%s/" BETA "/shared", srv.base_url);
    IT_STREQ(beta, want);
    IT_CHECK(strcmp(acme, beta) != 0);
    struct it_reply r =
        as_beta("SendMessage", json_pack("{s:s,s:s}", "QueueUrl", beta, "MessageBody", "for-beta"));
    IT_OK(&r);
    it_reply_free(&r);
    free(it_send(&srv, acme, "for-acme"));
    free(it_send(&srv, acme, "for-acme-2"));
    IT_CHECK(it_queue_attr_int(&srv, acme, "ApproximateNumberOfMessages") == 2);
    r = as_beta("GetQueueAttributes", json_pack("{s:s,s:[s,s]}", "QueueUrl", beta, "AttributeNames",
                                                "ApproximateNumberOfMessages", "QueueArn"));
    json_t *a = json_object_get(r.json, "Attributes");
    IT_STREQ(it_jstr(a, "ApproximateNumberOfMessages"), "1");
    IT_STREQ(it_jstr(a, "QueueArn"), "arn:aws:sqs:" IT_REGION ":" BETA ":shared");
    it_reply_free(&r);
    r = as_beta("ReceiveMessage",
                json_pack("{s:s,s:i}", "QueueUrl", beta, "MaxNumberOfMessages", 10));
    IT_CHECK(it_message_count(&r) == 1);
    IT_STREQ(it_jstr(json_array_get(it_messages(&r), 0), "Body"), "for-beta");
    it_reply_free(&r);
    /* Deleting beta's does not touch acme's. */
    r = as_beta("DeleteQueue", json_pack("{s:s}", "QueueUrl", beta));
    IT_OK(&r);
    it_reply_free(&r);
    IT_CHECK(it_queue_attr_int(&srv, acme, "ApproximateNumberOfMessages") == 2);
    free(acme);
    free(beta);
}

/* Every queue action of beta on acme's queue answers as a missing queue. */
static void cross_tenant_is_nonexistent(void)
{
    char *url = it_create_queue(&srv, "private", NULL);
    free(it_send(&srv, url, "secret"));
    free(it_send(&srv, url, "secret-2"));
    struct it_reply rx = it_receive(&srv, url, json_pack("{s:i}", "VisibilityTimeout", 600));
    const char *h = it_jstr(json_array_get(it_messages(&rx), 0), "ReceiptHandle");
    char *handle = strdup(h != NULL ? h : "x");
    it_reply_free(&rx);

    struct {
        const char *action;
        json_t *req;
    } calls[] = {
        {"SendMessage", json_pack("{s:s,s:s}", "QueueUrl", url, "MessageBody", "intruder")},
        {"SendMessageBatch", json_pack("{s:s,s:[{s:s,s:s}]}", "QueueUrl", url, "Entries", "Id", "a",
                                       "MessageBody", "x")},
        {"ReceiveMessage", json_pack("{s:s}", "QueueUrl", url)},
        {"ReceiveMessage", json_pack("{s:s,s:i}", "QueueUrl", url, "WaitTimeSeconds", 1)},
        {"DeleteMessage", json_pack("{s:s,s:s}", "QueueUrl", url, "ReceiptHandle", handle)},
        {"DeleteMessageBatch", json_pack("{s:s,s:[{s:s,s:s}]}", "QueueUrl", url, "Entries", "Id",
                                         "a", "ReceiptHandle", handle)},
        {"ChangeMessageVisibility", json_pack("{s:s,s:s,s:i}", "QueueUrl", url, "ReceiptHandle",
                                              handle, "VisibilityTimeout", 0)},
        {"ChangeMessageVisibilityBatch",
         json_pack("{s:s,s:[{s:s,s:s,s:i}]}", "QueueUrl", url, "Entries", "Id", "a",
                   "ReceiptHandle", handle, "VisibilityTimeout", 0)},
        {"GetQueueAttributes", json_pack("{s:s,s:[s]}", "QueueUrl", url, "AttributeNames", "All")},
        {"SetQueueAttributes",
         json_pack("{s:s,s:{s:s}}", "QueueUrl", url, "Attributes", "VisibilityTimeout", "1")},
        {"PurgeQueue", json_pack("{s:s}", "QueueUrl", url)},
        {"DeleteQueue", json_pack("{s:s}", "QueueUrl", url)},
        {"TagQueue", json_pack("{s:s,s:{s:s}}", "QueueUrl", url, "Tags", "k", "v")},
        {"UntagQueue", json_pack("{s:s,s:[s]}", "QueueUrl", url, "TagKeys", "k")},
        {"ListQueueTags", json_pack("{s:s}", "QueueUrl", url)},
        {"ListDeadLetterSourceQueues", json_pack("{s:s}", "QueueUrl", url)},
        {"GetQueueUrl", json_pack("{s:s}", "QueueName", "private")},
        {"GetQueueUrl",
         json_pack("{s:s,s:s}", "QueueName", "private", "QueueOwnerAWSAccountId", IT_TENANT)},
    };
    for (size_t i = 0; i < sizeof calls / sizeof calls[0]; i++) {
        struct it_reply r = as_beta(calls[i].action, calls[i].req);
        if (!IT_ERR(&r, 400, NON_EXISTENT, "QueueDoesNotExist", MISSING_MESSAGE)) {
            fprintf(stderr, "  action %s\n", calls[i].action);
        }
        it_reply_free(&r);
    }
    /* A RedrivePolicy naming acme's queue finds nothing either. */
    char *src = beta_queue("beta-src");
    struct it_reply r =
        as_beta("SetQueueAttributes",
                json_pack("{s:s,s:{s:s}}", "QueueUrl", src, "Attributes", "RedrivePolicy",
                          "{\"deadLetterTargetArn\":\"arn:aws:sqs:" IT_REGION ":" IT_TENANT
                          ":private\",\"maxReceiveCount\":2}"));
    IT_CHECK(r.status == 400);
    it_reply_free(&r);
    /* beta's ListQueues shows none of acme's. */
    r = as_beta("ListQueues", NULL);
    IT_OK(&r);
    IT_CHECK(!url_listed(&r, url));
    IT_CHECK(json_array_size(json_object_get(r.json, "QueueUrls")) == 1); /* beta-src */
    it_reply_free(&r);

    /* Nothing of acme's changed. */
    IT_CHECK(it_queue_attr_int(&srv, url, "ApproximateNumberOfMessages") == 1);
    IT_CHECK(it_queue_attr_int(&srv, url, "ApproximateNumberOfMessagesNotVisible") == 1);
    IT_CHECK(it_queue_attr_int(&srv, url, "VisibilityTimeout") == 30);
    r = it_call(&srv, "ListQueueTags", json_pack("{s:s}", "QueueUrl", url));
    IT_CHECK(json_object_size(json_object_get(r.json, "Tags")) == 0);
    it_reply_free(&r);
    r = it_call(&srv, "DeleteMessage",
                json_pack("{s:s,s:s}", "QueueUrl", url, "ReceiptHandle", handle));
    IT_OK(&r); /* the handle is still acme's to use */
    it_reply_free(&r);
    free(handle);
    free(src);
    free(url);
}

static void admin_principal(void)
{
    char *url = it_create_queue(&srv, "adminable", NULL);
    char *beta = beta_queue("beta-adminable");
    struct it_reply r =
        as_admin("SendMessage", json_pack("{s:s,s:s}", "QueueUrl", url, "MessageBody", "by-admin"));
    IT_OK(&r);
    it_reply_free(&r);
    r = as_admin("GetQueueAttributes",
                 json_pack("{s:s,s:[s]}", "QueueUrl", url, "AttributeNames", "All"));
    IT_OK(&r);
    IT_STREQ(it_jstr(json_object_get(r.json, "Attributes"), "ApproximateNumberOfMessages"), "1");
    it_reply_free(&r);
    r = as_admin("ReceiveMessage", json_pack("{s:s}", "QueueUrl", url));
    IT_CHECK(it_message_count(&r) == 1);
    const char *h = it_jstr(json_array_get(it_messages(&r), 0), "ReceiptHandle");
    json_t *del = json_pack("{s:s,s:s}", "QueueUrl", url, "ReceiptHandle", h != NULL ? h : "");
    it_reply_free(&r);
    r = as_admin("DeleteMessage", del);
    IT_OK(&r);
    it_reply_free(&r);
    IT_CHECK(it_queue_attr_int(&srv, url, "ApproximateNumberOfMessagesNotVisible") == 0);
    r = as_admin("SetQueueAttributes",
                 json_pack("{s:s,s:{s:s}}", "QueueUrl", beta, "Attributes", "DelaySeconds", "7"));
    IT_OK(&r);
    it_reply_free(&r);
    r = as_beta("GetQueueAttributes",
                json_pack("{s:s,s:[s]}", "QueueUrl", beta, "AttributeNames", "DelaySeconds"));
    IT_STREQ(it_jstr(json_object_get(r.json, "Attributes"), "DelaySeconds"), "7");
    it_reply_free(&r);

    /* The admin's ListQueues lists every tenant's queues. */
    r = as_admin("ListQueues", NULL);
    IT_OK(&r);
    IT_CHECK(url_listed(&r, url));
    IT_CHECK(url_listed(&r, beta));
    it_reply_free(&r);
    /* A tenant that does not exist has no queues. */
    char nowhere[256];
    snprintf(nowhere, sizeof nowhere, "%s/nobody/adminable", srv.base_url);
    r = as_admin("GetQueueAttributes", json_pack("{s:s}", "QueueUrl", nowhere));
    IT_ERR(&r, 400, NON_EXISTENT, "QueueDoesNotExist", MISSING_MESSAGE);
    it_reply_free(&r);
    free(beta);
    free(url);
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* The admin's call; checks a 200 and names the action when it is not. */
static struct it_reply admin_ok(const char *action, json_t *req)
{
    struct it_reply r = as_admin(action, req);
    if (!IT_OK(&r)) {
        fprintf(stderr, "  admin action %s\n", action);
    }
    return r;
}

static long long beta_count(const char *url, const char *attribute)
{
    struct it_reply r = as_beta("GetQueueAttributes", json_pack("{s:s,s:[s]}", "QueueUrl", url,
                                                                "AttributeNames", attribute));
    const char *v = it_jstr(json_object_get(r.json, "Attributes"), attribute);
    long long n = v != NULL ? strtoll(v, NULL, 10) : -1;
    it_reply_free(&r);
    return n;
}

/* The admin may act on any tenant's queue (docs/api.md): every
 * queue-scoped action of the API on beta's queues, each seen by beta. */
static void admin_every_action(void)
{
    char *url = beta_queue("beta-all");
    char *dlq = beta_queue("beta-all-dlq");
    const char *dlq_arn = "arn:aws:sqs:" IT_REGION ":" BETA ":beta-all-dlq";

    struct it_reply r = admin_ok(
        "SendMessageBatch", json_pack("{s:s,s:[{s:s,s:s},{s:s,s:s},{s:s,s:s}]}", "QueueUrl", url,
                                      "Entries", "Id", "a", "MessageBody", "one", "Id", "b",
                                      "MessageBody", "two", "Id", "c", "MessageBody", "three"));
    IT_CHECK(json_array_size(json_object_get(r.json, "Successful")) == 3);
    it_reply_free(&r);
    r = admin_ok("SetQueueAttributes",
                 json_pack("{s:s,s:{s:s}}", "QueueUrl", url, "Attributes", "RedrivePolicy",
                           "{\"deadLetterTargetArn\":\"arn:aws:sqs:" IT_REGION ":" BETA
                           ":beta-all-dlq\",\"maxReceiveCount\":1}"));
    it_reply_free(&r);
    r = admin_ok("ReceiveMessage", json_pack("{s:s,s:i,s:i}", "QueueUrl", url,
                                             "MaxNumberOfMessages", 10, "VisibilityTimeout", 600));
    IT_REQUIRE(it_message_count(&r) == 3);
    char *h[3];
    for (size_t i = 0; i < 3; i++) {
        h[i] = strdup(it_jstr(json_array_get(it_messages(&r), i), "ReceiptHandle"));
    }
    it_reply_free(&r);
    IT_CHECK(beta_count(url, "ApproximateNumberOfMessagesNotVisible") == 3);
    r = admin_ok(
        "ChangeMessageVisibility",
        json_pack("{s:s,s:s,s:i}", "QueueUrl", url, "ReceiptHandle", h[0], "VisibilityTimeout", 0));
    it_reply_free(&r);
    r = admin_ok("ChangeMessageVisibilityBatch",
                 json_pack("{s:s,s:[{s:s,s:s,s:i}]}", "QueueUrl", url, "Entries", "Id", "b",
                           "ReceiptHandle", h[1], "VisibilityTimeout", 0));
    IT_CHECK(json_array_size(json_object_get(r.json, "Successful")) == 1);
    it_reply_free(&r);
    r = admin_ok("DeleteMessageBatch", json_pack("{s:s,s:[{s:s,s:s}]}", "QueueUrl", url, "Entries",
                                                 "Id", "c", "ReceiptHandle", h[2]));
    IT_CHECK(json_array_size(json_object_get(r.json, "Successful")) == 1);
    it_reply_free(&r);
    for (size_t i = 0; i < 3; i++) {
        free(h[i]);
    }
    IT_CHECK(beta_count(url, "ApproximateNumberOfMessages") == 2);
    IT_CHECK(beta_count(url, "ApproximateNumberOfMessagesNotVisible") == 0);

    /* A second receive passes maxReceiveCount 1: both go to beta's DLQ. */
    r = admin_ok("ReceiveMessage",
                 json_pack("{s:s,s:i}", "QueueUrl", url, "MaxNumberOfMessages", 10));
    IT_CHECK(it_message_count(&r) == 0);
    it_reply_free(&r);
    IT_CHECK(beta_count(dlq, "ApproximateNumberOfMessages") == 2);
    r = admin_ok("ListDeadLetterSourceQueues", json_pack("{s:s}", "QueueUrl", dlq));
    json_t *sources = json_object_get(r.json, "queueUrls");
    IT_CHECK(json_array_size(sources) == 1);
    IT_STREQ(json_string_value(json_array_get(sources, 0)), url);
    it_reply_free(&r);
    /* Redrive back to the source, by the admin. */
    r = admin_ok("StartMessageMoveTask", json_pack("{s:s}", "SourceArn", dlq_arn));
    IT_CHECK(it_str(&r, "TaskHandle") != NULL);
    it_reply_free(&r);
    bool completed = false;
    for (int i = 0; i < 600 && !completed; i++) {
        r = admin_ok("ListMessageMoveTasks", json_pack("{s:s}", "SourceArn", dlq_arn));
        const char *status =
            it_jstr(json_array_get(json_object_get(r.json, "Results"), 0), "Status");
        completed = status != NULL && strcmp(status, "COMPLETED") == 0;
        it_reply_free(&r);
        if (!completed) {
            sleep_ms(50);
        }
    }
    IT_CHECK(completed);
    IT_CHECK(beta_count(url, "ApproximateNumberOfMessages") == 2);
    IT_CHECK(beta_count(dlq, "ApproximateNumberOfMessages") == 0);

    r = admin_ok("TagQueue", json_pack("{s:s,s:{s:s,s:s}}", "QueueUrl", url, "Tags", "by", "admin",
                                       "gone", "soon"));
    it_reply_free(&r);
    r = admin_ok("UntagQueue", json_pack("{s:s,s:[s]}", "QueueUrl", url, "TagKeys", "gone"));
    it_reply_free(&r);
    r = admin_ok("ListQueueTags", json_pack("{s:s}", "QueueUrl", url));
    IT_CHECK(json_object_size(json_object_get(r.json, "Tags")) == 1);
    it_reply_free(&r);
    r = as_beta("ListQueueTags", json_pack("{s:s}", "QueueUrl", url));
    IT_STREQ(it_jstr(json_object_get(r.json, "Tags"), "by"), "admin");
    it_reply_free(&r);

    r = admin_ok("GetQueueUrl",
                 json_pack("{s:s,s:s}", "QueueName", "beta-all", "QueueOwnerAWSAccountId", BETA));
    IT_STREQ(it_str(&r, "QueueUrl"), url);
    it_reply_free(&r);
    r = admin_ok("PurgeQueue", json_pack("{s:s}", "QueueUrl", url));
    it_reply_free(&r);
    IT_CHECK(beta_count(url, "ApproximateNumberOfMessages") == 0);
    r = admin_ok("DeleteQueue", json_pack("{s:s}", "QueueUrl", url));
    it_reply_free(&r);
    r = as_beta("GetQueueUrl", json_pack("{s:s}", "QueueName", "beta-all"));
    IT_ERR(&r, 400, NON_EXISTENT, "QueueDoesNotExist", MISSING_MESSAGE);
    it_reply_free(&r);
    free(dlq);
    free(url);
}

struct creator {
    int from, to;
};

static void *create_range(void *p)
{
    const struct creator *c = p;
    for (int i = c->from; i < c->to; i++) {
        char name[32];
        snprintf(name, sizeof name, "cap-%04d", i);
        struct it_reply r = as_beta("CreateQueue", json_pack("{s:s}", "QueueName", name));
        it_reply_free(&r);
    }
    return NULL;
}

/* ListQueues answers at most 1000 URLs (research 1.8). */
static void list_queues_cap(void)
{
    struct creator parts[4];
    pthread_t t[4];
    for (int i = 0; i < 4; i++) {
        parts[i] = (struct creator){i * 251, i == 3 ? 1001 : (i + 1) * 251};
        IT_REQUIRE(pthread_create(&t[i], NULL, create_range, &parts[i]) == 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
    }
    struct it_reply r = as_beta("ListQueues", json_pack("{s:s}", "QueueNamePrefix", "cap-"));
    IT_OK(&r);
    IT_CHECK(json_array_size(json_object_get(r.json, "QueueUrls")) == 1000);
    it_reply_free(&r);
    /* With paging every queue is reachable. */
    r = as_beta("ListQueues",
                json_pack("{s:s,s:i}", "QueueNamePrefix", "cap-", "MaxResults", 1000));
    IT_CHECK(json_array_size(json_object_get(r.json, "QueueUrls")) == 1000);
    const char *token = it_str(&r, "NextToken");
    json_t *next = json_pack("{s:s,s:i,s:s}", "QueueNamePrefix", "cap-", "MaxResults", 1000,
                             "NextToken", token != NULL ? token : "");
    it_reply_free(&r);
    r = as_beta("ListQueues", next);
    IT_CHECK(json_array_size(json_object_get(r.json, "QueueUrls")) == 1);
    IT_CHECK(json_object_get(r.json, "NextToken") == NULL);
    it_reply_free(&r);
}

int main(void)
{
    struct it_options opt = {
        .admin = true,
        .tenants_yaml = "tenants:\n"
                        "  " IT_TENANT ":\n"
                        "    access_key_id: " IT_KEY "\n"
                        "    secret_access_key: " IT_SECRET "\n"
                        "  " BETA ":\n"
                        "    access_key_id: " BETA_KEY "\n"
                        "    secret_access_key: " BETA_SECRET "\n",
    };
    IT_REQUIRE(it_server_start(&srv, &opt) == 0);
    same_name_two_queues();
    cross_tenant_is_nonexistent();
    admin_principal();
    admin_every_action();
    list_queues_cap();
    IT_CHECK(it_healthz(&srv));
    IT_CHECK(it_server_stop(&srv) == 0);
    it_server_cleanup(&srv);
    return it_summary();
}
