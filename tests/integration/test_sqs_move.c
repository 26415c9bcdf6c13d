/*
 * test_sqs_move.c -- dead-letter redrive against the real sluiced over
 * HTTP/2: StartMessageMoveTask, ListMessageMoveTasks and
 * CancelMessageMoveTask. A DLQ is filled through maxReceiveCount, tasks
 * move it back to the messages' own source queue or to a destination,
 * a slow task is cancelled, and every error SQS documents is checked
 * (Amazon SQS API Reference, StartMessageMoveTask; messages as AWS words
 * them).
 *
 * Waiting for a task is a bounded poll of ListMessageMoveTasks; nothing
 * asserts on elapsed time.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/evp.h>

#include "it_sqs.h"

#define ZETA_KEY "AKIDZETA"
#define ZETA_SECRET "zeta-secret"
#define ARN(name) "arn:aws:sqs:" IT_REGION ":" IT_TENANT ":" name

static struct it_server srv;

static void pause_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static long long approx(const char *url)
{
    return it_queue_attr_int(&srv, url, "ApproximateNumberOfMessages");
}

/* A source queue whose messages go to dlq after one receive. */
static char *create_source(const char *name, const char *dlq_arn)
{
    char policy[256];
    snprintf(policy, sizeof policy, "{\"deadLetterTargetArn\":\"%s\",\"maxReceiveCount\":1}",
             dlq_arn);
    return it_create_queue(&srv, name, json_pack("{s:s}", "RedrivePolicy", policy));
}

/* Sends n messages with one attribute to src, then receives (lease 0)
 * until every one of them sits in dlq. */
static void fill_dlq(const char *src, const char *dlq, int n, long long expect_in_dlq)
{
    for (int i = 0; i < n; i++) {
        char body[32];
        snprintf(body, sizeof body, "poison-%d", i);
        json_t *req = json_pack("{s:s, s:s, s:{s:{s:s, s:s}}}", "QueueUrl", src, "MessageBody",
                                body, "MessageAttributes", "origin", "DataType", "String",
                                "StringValue", "billing");
        struct it_reply r = it_call(&srv, "SendMessage", req);
        IT_OK(&r);
        it_reply_free(&r);
    }
    for (int i = 0; i < 200 && approx(dlq) < expect_in_dlq; i++) {
        struct it_reply r = it_receive(
            &srv, src, json_pack("{s:i, s:i}", "MaxNumberOfMessages", 10, "VisibilityTimeout", 0));
        it_reply_free(&r);
    }
    IT_CHECK(approx(dlq) == expect_in_dlq);
}

static char *start_task(const char *source_arn, const char *dest_arn, int rate)
{
    json_t *req = json_pack("{s:s}", "SourceArn", source_arn);
    if (dest_arn != NULL) {
        json_object_set_new(req, "DestinationArn", json_string(dest_arn));
    }
    if (rate > 0) {
        json_object_set_new(req, "MaxNumberOfMessagesPerSecond", json_integer(rate));
    }
    struct it_reply r = it_call(&srv, "StartMessageMoveTask", req);
    IT_OK(&r);
    const char *h = it_str(&r, "TaskHandle");
    char *out = h != NULL ? strdup(h) : NULL;
    IT_CHECK(out != NULL);
    it_reply_free(&r);
    return out;
}

/* The newest task of source_arn (a new reference), or NULL. */
static json_t *newest_task(const char *source_arn)
{
    struct it_reply r =
        it_call(&srv, "ListMessageMoveTasks", json_pack("{s:s}", "SourceArn", source_arn));
    IT_OK(&r);
    json_t *first = json_array_get(json_object_get(r.json, "Results"), 0);
    json_t *out = first != NULL ? json_incref(first) : NULL;
    it_reply_free(&r);
    return out;
}

/* Polls until the newest task of source_arn has status, bounded. */
static json_t *wait_status(const char *source_arn, const char *status)
{
    for (int i = 0; i < 600; i++) {
        json_t *t = newest_task(source_arn);
        if (t != NULL && strcmp(it_jstr(t, "Status"), status) == 0) {
            return t;
        }
        json_decref(t);
        pause_ms(50);
    }
    fprintf(stderr, "task of %s never reached %s\n", source_arn, status);
    IT_CHECK(!"task reached status");
    return NULL;
}

static long long jint(const json_t *o, const char *member)
{
    json_t *v = json_object_get(o, member);
    return json_is_integer(v) ? (long long)json_integer_value(v) : -1;
}

/* Receives everything in url (lease 60 s, all attributes). */
static json_t *drain(const char *url, size_t expect)
{
    json_t *all = json_array();
    for (int i = 0; i < 50 && json_array_size(all) < expect; i++) {
        struct it_reply r = it_receive(
            &srv, url,
            json_pack("{s:i, s:i, s:[s], s:[s]}", "MaxNumberOfMessages", 10, "VisibilityTimeout",
                      60, "MessageSystemAttributeNames", "All", "MessageAttributeNames", "All"));
        json_t *got = it_messages(&r);
        if (got != NULL) {
            json_array_extend(all, got);
        }
        it_reply_free(&r);
    }
    return all;
}

static void back_to_source(void)
{
    char *dlq = it_create_queue(&srv, "m-dlq", NULL);
    char *src = create_source("m-src", ARN("m-dlq"));
    IT_REQUIRE(dlq != NULL && src != NULL);

    /* no task yet */
    struct it_reply r =
        it_call(&srv, "ListMessageMoveTasks", json_pack("{s:s}", "SourceArn", ARN("m-dlq")));
    IT_OK(&r);
    IT_CHECK(json_array_size(json_object_get(r.json, "Results")) == 0);
    it_reply_free(&r);

    fill_dlq(src, dlq, 3, 3);
    json_t *in_dlq = drain(dlq, 3);
    IT_CHECK(json_array_size(in_dlq) == 3);
    /* put them back: lease 0 */
    size_t i;
    json_t *m;
    json_array_foreach(in_dlq, i, m)
    {
        struct it_reply c = it_call(&srv, "ChangeMessageVisibility",
                                    json_pack("{s:s, s:s, s:i}", "QueueUrl", dlq, "ReceiptHandle",
                                              it_jstr(m, "ReceiptHandle"), "VisibilityTimeout", 0));
        IT_OK(&c);
        it_reply_free(&c);
    }

    long long t0 = it_now_ms();
    char *handle = start_task(ARN("m-dlq"), NULL, 0);
    json_t *t = wait_status(ARN("m-dlq"), "COMPLETED");
    long long t1 = it_now_ms();
    if (t != NULL) {
        IT_CHECK(jint(t, "ApproximateNumberOfMessagesMoved") == 3);
        IT_CHECK(jint(t, "ApproximateNumberOfMessagesToMove") == 3);
        IT_STREQ(it_jstr(t, "SourceArn"), ARN("m-dlq"));
        IT_CHECK(json_object_get(t, "DestinationArn") == NULL);
        IT_CHECK(json_object_get(t, "TaskHandle") == NULL); /* only while RUNNING */
        IT_CHECK(json_object_get(t, "MaxNumberOfMessagesPerSecond") == NULL);
        long long started = jint(t, "StartedTimestamp"); /* epoch ms, a number */
        IT_CHECK(started >= t0 - 1000 && started <= t1 + 1000);
        json_decref(t);
    }
    IT_CHECK(approx(dlq) == 0);
    json_t *back = drain(src, 3);
    IT_CHECK(json_array_size(back) == 3);
    json_array_foreach(back, i, m)
    {
        const char *body = it_jstr(m, "Body");
        IT_CHECK(body != NULL && strncmp(body, "poison-", 7) == 0);
        json_t *attr = json_object_get(json_object_get(m, "MessageAttributes"), "origin");
        IT_STREQ(it_jstr(attr, "StringValue"), "billing");
        /* a redriven message is a new message (AWS: new id, count anew) */
        IT_STREQ(it_jstr(json_object_get(m, "Attributes"), "ApproximateReceiveCount"), "1");
        size_t k;
        json_t *old;
        json_array_foreach(in_dlq, k, old)
        {
            IT_CHECK(strcmp(it_jstr(old, "MessageId"), it_jstr(m, "MessageId")) != 0);
        }
    }
    /* a finished task cannot be cancelled */
    r = it_call(&srv, "CancelMessageMoveTask", json_pack("{s:s}", "TaskHandle", handle));
    IT_ERR(&r, 404, "ResourceNotFoundException", "ResourceNotFoundException",
           "Task does not exist.");
    it_reply_free(&r);
    json_decref(back);
    json_decref(in_dlq);
    free(handle);
    free(src);
    free(dlq);
}

static void to_destination(void)
{
    char *dlq = it_create_queue(&srv, "d-dlq", NULL);
    char *src = create_source("d-src", ARN("d-dlq"));
    char *dest = it_create_queue(&srv, "d-dest", NULL);
    IT_REQUIRE(dlq != NULL && src != NULL && dest != NULL);
    fill_dlq(src, dlq, 4, 4);
    char *h1 = start_task(ARN("d-dlq"), ARN("d-dest"), 0);
    json_decref(wait_status(ARN("d-dlq"), "COMPLETED"));
    fill_dlq(src, dlq, 2, 2);
    char *h2 = start_task(ARN("d-dlq"), ARN("d-dest"), 500);
    json_t *t = wait_status(ARN("d-dlq"), "COMPLETED");
    json_decref(t);
    IT_CHECK(approx(dlq) == 0);
    IT_CHECK(approx(src) == 0);
    IT_CHECK(approx(dest) == 6);

    /* newest first, MaxResults bounds the list */
    struct it_reply r =
        it_call(&srv, "ListMessageMoveTasks",
                json_pack("{s:s, s:i}", "SourceArn", ARN("d-dlq"), "MaxResults", 10));
    IT_OK(&r);
    json_t *res = json_object_get(r.json, "Results");
    IT_CHECK(json_array_size(res) == 2);
    json_t *newest = json_array_get(res, 0);
    json_t *oldest = json_array_get(res, 1);
    IT_STREQ(it_jstr(newest, "DestinationArn"), ARN("d-dest"));
    IT_CHECK(jint(newest, "MaxNumberOfMessagesPerSecond") == 500);
    IT_CHECK(jint(newest, "ApproximateNumberOfMessagesMoved") == 2);
    IT_CHECK(jint(oldest, "ApproximateNumberOfMessagesMoved") == 4);
    IT_CHECK(json_object_get(oldest, "MaxNumberOfMessagesPerSecond") == NULL);
    IT_CHECK(jint(newest, "StartedTimestamp") >= jint(oldest, "StartedTimestamp"));
    it_reply_free(&r);
    r = it_call(&srv, "ListMessageMoveTasks", json_pack("{s:s}", "SourceArn", ARN("d-dlq")));
    IT_CHECK(json_array_size(json_object_get(r.json, "Results")) == 1); /* default 1 */
    it_reply_free(&r);
    free(h1);
    free(h2);
    free(dest);
    free(src);
    free(dlq);
}

static void cancel_and_one_active_task(void)
{
    char *dlq = it_create_queue(&srv, "c-dlq", NULL);
    char *src = create_source("c-src", ARN("c-dlq"));
    IT_REQUIRE(dlq != NULL && src != NULL);
    fill_dlq(src, dlq, 10, 10);
    char *handle = start_task(ARN("c-dlq"), NULL, 1); /* one a second: still running below */

    json_t *t = newest_task(ARN("c-dlq"));
    IT_CHECK(t != NULL && jint(t, "ApproximateNumberOfMessagesToMove") == 10);
    if (t != NULL && strcmp(it_jstr(t, "Status"), "RUNNING") == 0) {
        IT_STREQ(it_jstr(t, "TaskHandle"), handle);
    }
    json_decref(t);

    struct it_reply r =
        it_call(&srv, "StartMessageMoveTask", json_pack("{s:s}", "SourceArn", ARN("c-dlq")));
    IT_ERR(&r, 400, "InvalidParameterValue", "InvalidParameterValueException",
           "There is already a task running. Only one active task is allowed for a source queue "
           "arn at a given time.");
    it_reply_free(&r);

    r = it_call(&srv, "CancelMessageMoveTask", json_pack("{s:s}", "TaskHandle", handle));
    IT_OK(&r);
    long long moved_at_cancel = jint(r.json, "ApproximateNumberOfMessagesMoved");
    IT_CHECK(moved_at_cancel >= 0 && moved_at_cancel < 10);
    it_reply_free(&r);
    t = wait_status(ARN("c-dlq"), "CANCELLED");
    if (t != NULL) {
        long long moved = jint(t, "ApproximateNumberOfMessagesMoved");
        /* moved ones stay moved, nothing is lost or doubled */
        IT_CHECK(moved < 10);
        IT_CHECK(approx(src) == moved);
        IT_CHECK(approx(dlq) == 10 - moved);
        json_decref(t);
    }
    r = it_call(&srv, "CancelMessageMoveTask", json_pack("{s:s}", "TaskHandle", handle));
    IT_ERR(&r, 404, "ResourceNotFoundException", "ResourceNotFoundException",
           "Task does not exist.");
    it_reply_free(&r);
    /* no longer active: a new task may start */
    char *again = start_task(ARN("c-dlq"), NULL, 0);
    json_decref(wait_status(ARN("c-dlq"), "COMPLETED"));
    IT_CHECK(approx(src) == 10);
    free(again);
    free(handle);
    free(src);
    free(dlq);
}

static char *handle_of(const char *task_id, const char *source_arn)
{
    char json[512];
    int n = snprintf(json, sizeof json, "{\"taskId\":\"%s\",\"sourceArn\":\"%s\"}", task_id,
                     source_arn);
    char *out = malloc(4 * ((size_t)n / 3 + 2));
    EVP_EncodeBlock((unsigned char *)out, (const unsigned char *)json, n);
    return out;
}

static void errors(void)
{
    char *plain = it_create_queue(&srv, "e-plain", NULL);
    char *dlq = it_create_queue(&srv, "e-dlq", NULL);
    char *src = create_source("e-src", ARN("e-dlq"));
    IT_REQUIRE(plain != NULL && dlq != NULL && src != NULL);

    struct it_reply r =
        it_call(&srv, "StartMessageMoveTask", json_pack("{s:s}", "SourceArn", ARN("e-plain")));
    IT_ERR(&r, 400, "InvalidParameterValue", "InvalidParameterValueException",
           "Source queue must be configured as a Dead Letter Queue.");
    it_reply_free(&r);

    r = it_call(&srv, "StartMessageMoveTask", json_pack("{s:s}", "SourceArn", ARN("e-nothing")));
    IT_ERR(&r, 404, "ResourceNotFoundException", "ResourceNotFoundException",
           "The resource that you specified for the SourceArn parameter doesn't exist.");
    it_reply_free(&r);

    r = it_call(&srv, "StartMessageMoveTask",
                json_pack("{s:s, s:s}", "SourceArn", ARN("e-dlq"), "DestinationArn",
                          ARN("e-dlqdoesntexist")));
    IT_ERR(&r, 404, "ResourceNotFoundException", "ResourceNotFoundException",
           "The resource that you specified for the DestinationArn parameter doesn't exist.");
    it_reply_free(&r);

    /* A FIFO destination of a standard DLQ is refused */
    char *fifo = it_create_queue(&srv, "e-dest.fifo", json_pack("{s:s}", "FifoQueue", "true"));
    r = it_call(
        &srv, "StartMessageMoveTask",
        json_pack("{s:s, s:s}", "SourceArn", ARN("e-dlq"), "DestinationArn", ARN("e-dest.fifo")));
    IT_ERR(&r, 400, "InvalidParameterValue", "InvalidParameterValueException",
           "The destination queue must be of the same type as the source queue.");
    it_reply_free(&r);
    free(fifo);

    r = it_call(&srv, "StartMessageMoveTask",
                json_pack("{s:s, s:s}", "SourceArn", ARN("e-dlq"), "DestinationArn", ARN("e-dlq")));
    IT_ERR(&r, 400, "InvalidParameterValue", "InvalidParameterValueException", NULL);
    it_reply_free(&r);

    r = it_call(
        &srv, "StartMessageMoveTask",
        json_pack("{s:s, s:i}", "SourceArn", ARN("e-dlq"), "MaxNumberOfMessagesPerSecond", 501));
    IT_ERR(&r, 400, "InvalidParameterValue", "InvalidParameterValueException", NULL);
    it_reply_free(&r);

    r = it_call(&srv, "ListMessageMoveTasks",
                json_pack("{s:s, s:i}", "SourceArn", ARN("e-dlq"), "MaxResults", 11));
    IT_ERR(&r, 400, "InvalidParameterValue", "InvalidParameterValueException", NULL);
    it_reply_free(&r);

    r = it_call(&srv, "ListMessageMoveTasks", json_pack("{s:s}", "SourceArn", ARN("e-nothing")));
    IT_ERR(&r, 404, "ResourceNotFoundException", "ResourceNotFoundException",
           "The resource that you specified for the SourceArn parameter doesn't exist.");
    it_reply_free(&r);

    r = it_call(&srv, "CancelMessageMoveTask", json_pack("{s:s}", "TaskHandle", "foobared"));
    IT_ERR(&r, 400, "InvalidParameterValue", "InvalidParameterValueException",
           "Value for parameter TaskHandle is invalid.");
    it_reply_free(&r);

    char *h = handle_of("10f57157-fc38-4da9-a113-4de7e12d05dd", ARN("e-nothing"));
    r = it_call(&srv, "CancelMessageMoveTask", json_pack("{s:s}", "TaskHandle", h));
    IT_ERR(&r, 404, "ResourceNotFoundException", "ResourceNotFoundException",
           "The resource that you specified for the SourceArn parameter doesn't exist.");
    it_reply_free(&r);
    free(h);

    h = handle_of("10f57157-fc38-4da9-a113-4de7e12d05aa", ARN("e-dlq"));
    r = it_call(&srv, "CancelMessageMoveTask", json_pack("{s:s}", "TaskHandle", h));
    IT_ERR(&r, 404, "ResourceNotFoundException", "ResourceNotFoundException",
           "Task does not exist.");
    it_reply_free(&r);
    free(h);
    free(src);
    free(dlq);
    free(plain);
}

/* Another tenant's DLQ answers as nonexistent, whatever the call. */
static void tenant_isolation(void)
{
    char *dlq = it_create_queue(&srv, "i-dlq", NULL);
    char *src = create_source("i-src", ARN("i-dlq"));
    IT_REQUIRE(dlq != NULL && src != NULL);
    fill_dlq(src, dlq, 2, 2);
    char *handle = start_task(ARN("i-dlq"), NULL, 1);

    struct it_reply r = it_call_as(&srv, ZETA_KEY, ZETA_SECRET, "ListMessageMoveTasks",
                                   json_pack("{s:s}", "SourceArn", ARN("i-dlq")));
    IT_ERR(&r, 404, "ResourceNotFoundException", "ResourceNotFoundException",
           "The resource that you specified for the SourceArn parameter doesn't exist.");
    it_reply_free(&r);
    r = it_call_as(&srv, ZETA_KEY, ZETA_SECRET, "StartMessageMoveTask",
                   json_pack("{s:s}", "SourceArn", ARN("i-dlq")));
    IT_ERR(&r, 404, "ResourceNotFoundException", "ResourceNotFoundException", NULL);
    it_reply_free(&r);
    r = it_call_as(&srv, ZETA_KEY, ZETA_SECRET, "CancelMessageMoveTask",
                   json_pack("{s:s}", "TaskHandle", handle));
    IT_ERR(&r, 404, "ResourceNotFoundException", "ResourceNotFoundException", NULL);
    it_reply_free(&r);
    /* zeta's own queue as the destination of acme's DLQ: not reachable */
    struct it_reply c = it_call_as(&srv, ZETA_KEY, ZETA_SECRET, "CreateQueue",
                                   json_pack("{s:s}", "QueueName", "theirs"));
    IT_OK(&c);
    it_reply_free(&c);
    r = it_call(&srv, "StartMessageMoveTask",
                json_pack("{s:s, s:s}", "SourceArn", ARN("i-dlq"), "DestinationArn",
                          "arn:aws:sqs:" IT_REGION ":zeta:theirs"));
    IT_ERR(&r, 404, "ResourceNotFoundException", "ResourceNotFoundException", NULL);
    it_reply_free(&r);

    /* the owner's task is untouched: it still finishes */
    json_decref(wait_status(ARN("i-dlq"), "COMPLETED"));
    IT_CHECK(approx(src) == 2);
    free(handle);
    free(src);
    free(dlq);
}

int main(void)
{
    struct it_options opt = {
        .tls = false,
        .tenants_yaml = "tenants:\n  acme:\n    access_key_id: " IT_KEY "\n"
                        "    secret_access_key: " IT_SECRET "\n"
                        "  zeta:\n    access_key_id: " ZETA_KEY "\n"
                        "    secret_access_key: " ZETA_SECRET "\n",
    };
    IT_REQUIRE(it_server_start(&srv, &opt) == 0);
    back_to_source();
    to_destination();
    cancel_and_one_active_task();
    errors();
    tenant_isolation();
    IT_CHECK(it_healthz(&srv));
    IT_CHECK(it_server_stop(&srv) == 0);
    it_server_cleanup(&srv);
    return it_summary();
}
