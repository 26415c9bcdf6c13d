/*
 * test_sqs_receive.c -- ReceiveMessage, DeleteMessage(Batch) and
 * ChangeMessageVisibility(Batch) against the real sluiced over HTTP/2:
 * parameter ranges with SQS's exact messages, visibility overrides, long
 * polls that return when a message arrives (request and queue default),
 * delays per message and per queue, receipt-handle rules and the batch
 * variants' partial failures.
 *
 * Expectations are Amazon SQS's (Amazon SQS API Reference, ReceiveMessage
 * and ChangeMessageVisibility; Developer Guide, "Visibility timeout").
 * Timing: visibility is ended with VisibilityTimeout 0 instead of sleeps;
 * the few waits (a 1 s delay, a long poll) are bounded by the poll itself
 * and checked by outcome, never by elapsed time.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "it_sqs.h"

static struct it_server srv;

#define IPV "InvalidParameterValue"
#define IPV_SHAPE "InvalidParameterValueException"

static json_t *first(const struct it_reply *r)
{
    return json_array_get(it_messages(r), 0);
}

static char *handle_of(const struct it_reply *r)
{
    const char *h = it_jstr(first(r), "ReceiptHandle");
    return strdup(h != NULL ? h : "");
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static struct it_reply call_q(const char *action, const char *url, json_t *members)
{
    json_t *req = json_pack("{s:s}", "QueueUrl", url);
    json_object_update(req, members);
    json_decref(members);
    return it_call(&srv, action, req);
}

static void receive_ranges(void)
{
    char *url = it_create_queue(&srv, "r-ranges", NULL);
    static const struct {
        const char *member;
        int value;
        const char *message;
    } cases[] = {
        {"MaxNumberOfMessages", 11,
         "Value 11 for parameter MaxNumberOfMessages is invalid. Reason: Must be between 1 and "
         "10, if provided."},
        {"MaxNumberOfMessages", 0,
         "Value 0 for parameter MaxNumberOfMessages is invalid. Reason: Must be between 1 and 10, "
         "if provided."},
        {"WaitTimeSeconds", 21,
         "Value 21 for parameter WaitTimeSeconds is invalid. Reason: Must be >= 0 and <= 20, if "
         "provided."},
        {"WaitTimeSeconds", -1,
         "Value -1 for parameter WaitTimeSeconds is invalid. Reason: Must be >= 0 and <= 20, if "
         "provided."},
        {"VisibilityTimeout", 43201, NULL},
        {"VisibilityTimeout", -1, NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct it_reply r =
            it_receive(&srv, url, json_pack("{s:i}", cases[i].member, cases[i].value));
        IT_ERR(&r, 400, IPV, IPV_SHAPE, cases[i].message);
        it_reply_free(&r);
    }
    /* An empty queue: 200 without a Messages member. */
    struct it_reply r = it_receive(&srv, url, json_pack("{s:i}", "MaxNumberOfMessages", 10));
    IT_OK(&r);
    IT_CHECK(json_object_get(r.json, "Messages") == NULL);
    it_reply_free(&r);
    /* Up to N of a backlog, each once. */
    for (int i = 0; i < 12; i++) {
        char body[16];
        snprintf(body, sizeof body, "m%d", i);
        free(it_send(&srv, url, body));
    }
    r = it_receive(&srv, url, json_pack("{s:i}", "MaxNumberOfMessages", 10));
    IT_CHECK(it_message_count(&r) == 10);
    it_reply_free(&r);
    r = it_receive(&srv, url, json_pack("{s:i}", "MaxNumberOfMessages", 10));
    IT_CHECK(it_message_count(&r) == 2);
    it_reply_free(&r);
    r = it_receive(&srv, url, NULL); /* default 1, nothing left visible */
    IT_CHECK(it_message_count(&r) == 0);
    it_reply_free(&r);
    free(url);
}

/* VisibilityTimeout on a receive is a per-call lease; 0 makes the message
 * receivable again at once, with a new handle (LS
 * test_receive_terminate_visibility_timeout). */
static void visibility_override(void)
{
    char *url = it_create_queue(&srv, "r-vis", NULL);
    free(it_send(&srv, url, "lease"));
    struct it_reply r = it_receive(&srv, url, json_pack("{s:i}", "VisibilityTimeout", 0));
    IT_CHECK(it_message_count(&r) == 1);
    char *h1 = handle_of(&r);
    it_reply_free(&r);
    r = it_receive(&srv, url, NULL); /* queue default 30 s */
    IT_CHECK(it_message_count(&r) == 1);
    char *h2 = handle_of(&r);
    IT_CHECK(strcmp(h1, h2) != 0);
    it_reply_free(&r);
    r = it_receive(&srv, url, NULL);
    IT_CHECK(it_message_count(&r) == 0); /* leased for 30 s now */
    it_reply_free(&r);
    free(h1);
    free(h2);
    free(url);
}

struct poll_arg {
    const char *url;
    json_t *extra;
    struct it_reply reply;
};

static void *poll_thread(void *p)
{
    struct poll_arg *a = p;
    a->reply = it_receive(&srv, a->url, a->extra);
    return NULL;
}

/* A long poll started on an empty queue returns the message sent while it
 * waits. Without the wait it would answer empty before the send. */
static void long_poll_gets(const char *url, json_t *extra, const char *body)
{
    struct poll_arg a = {.url = url, .extra = extra};
    pthread_t t;
    IT_REQUIRE(pthread_create(&t, NULL, poll_thread, &a) == 0);
    sleep_ms(400); /* let the poll start waiting; a late start only makes it easier */
    free(it_send(&srv, url, body));
    pthread_join(t, NULL);
    IT_OK(&a.reply);
    IT_CHECK(it_message_count(&a.reply) == 1);
    IT_STREQ(it_jstr(first(&a.reply), "Body"), body);
    it_reply_free(&a.reply);
}

static void long_polling(void)
{
    char *url = it_create_queue(&srv, "r-poll", NULL);
    long_poll_gets(url, json_pack("{s:i,s:i}", "WaitTimeSeconds", 10, "MaxNumberOfMessages", 5),
                   "woken");
    /* The queue's ReceiveMessageWaitTimeSeconds applies when the request
     * has no WaitTimeSeconds. */
    char *dflt = it_create_queue(&srv, "r-poll-default",
                                 json_pack("{s:s}", "ReceiveMessageWaitTimeSeconds", "10"));
    long_poll_gets(dflt, NULL, "default-wait");
    /* ... and an explicit WaitTimeSeconds 0 overrides it: a short poll. */
    struct it_reply r = it_receive(&srv, dflt, json_pack("{s:i}", "WaitTimeSeconds", 0));
    IT_OK(&r);
    IT_CHECK(it_message_count(&r) == 0);
    it_reply_free(&r);
    /* A long poll wakes when a delay ends (EMQ "should receive delayed
     * messages when waiting for messages"). */
    r = call_q("SendMessage", url,
               json_pack("{s:s,s:i}", "MessageBody", "delayed", "DelaySeconds", 1));
    IT_OK(&r);
    it_reply_free(&r);
    r = it_receive(&srv, url, json_pack("{s:i}", "WaitTimeSeconds", 10));
    IT_CHECK(it_message_count(&r) == 1);
    IT_STREQ(it_jstr(first(&r), "Body"), "delayed");
    it_reply_free(&r);
    free(dflt);
    free(url);
}

static void delays(void)
{
    /* Per message. */
    char *url = it_create_queue(&srv, "r-delay", NULL);
    struct it_reply r =
        call_q("SendMessage", url, json_pack("{s:s,s:i}", "MessageBody", "d", "DelaySeconds", 600));
    IT_OK(&r);
    it_reply_free(&r);
    r = it_receive(&srv, url, NULL);
    IT_CHECK(it_message_count(&r) == 0);
    it_reply_free(&r);
    IT_CHECK(it_queue_attr_int(&srv, url, "ApproximateNumberOfMessagesDelayed") == 1);
    IT_CHECK(it_queue_attr_int(&srv, url, "ApproximateNumberOfMessages") == 0);
    r = call_q("SendMessage", url, json_pack("{s:s,s:i}", "MessageBody", "d", "DelaySeconds", 901));
    IT_ERR(&r, 400, IPV, IPV_SHAPE, NULL);
    it_reply_free(&r);

    /* Per queue; a per-message DelaySeconds overrides it on a standard
     * queue, 0 included. */
    char *slow = it_create_queue(&srv, "r-delay-q", json_pack("{s:s}", "DelaySeconds", "600"));
    free(it_send(&srv, slow, "queue-delayed"));
    r = call_q("SendMessage", slow,
               json_pack("{s:s,s:i}", "MessageBody", "now", "DelaySeconds", 0));
    IT_OK(&r);
    it_reply_free(&r);
    IT_CHECK(it_queue_attr_int(&srv, slow, "ApproximateNumberOfMessagesDelayed") == 1);
    r = it_receive(&srv, slow, json_pack("{s:i}", "MaxNumberOfMessages", 10));
    IT_CHECK(it_message_count(&r) == 1);
    IT_STREQ(it_jstr(first(&r), "Body"), "now");
    it_reply_free(&r);
    /* A queue delay of 1 s ends and the message is delivered. */
    char *short_q = it_create_queue(&srv, "r-delay-1", json_pack("{s:s}", "DelaySeconds", "1"));
    free(it_send(&srv, short_q, "soon"));
    r = it_receive(&srv, short_q, NULL);
    IT_CHECK(it_message_count(&r) == 0);
    it_reply_free(&r);
    r = it_receive(&srv, short_q, json_pack("{s:i}", "WaitTimeSeconds", 10));
    IT_CHECK(it_message_count(&r) == 1);
    it_reply_free(&r);
    free(short_q);
    free(slow);
    free(url);
}

#define INVALID_HANDLE "ReceiptHandleIsInvalid"

static void delete_message(void)
{
    char *url = it_create_queue(&srv, "r-del", NULL);
    char *other = it_create_queue(&srv, "r-del-other", NULL);
    struct it_reply r =
        call_q("DeleteMessage", url, json_pack("{s:s}", "ReceiptHandle", "garbage"));
    IT_ERR(&r, 404, INVALID_HANDLE, INVALID_HANDLE,
           "The input receipt handle \"garbage\" is not a valid receipt handle.");
    it_reply_free(&r);

    /* Another queue's handle is not a handle of this queue. */
    free(it_send(&srv, other, "theirs"));
    r = it_receive(&srv, other, NULL);
    char *theirs = handle_of(&r);
    it_reply_free(&r);
    r = call_q("DeleteMessage", url, json_pack("{s:s}", "ReceiptHandle", theirs));
    IT_ERR(&r, 404, INVALID_HANDLE, INVALID_HANDLE, NULL);
    it_reply_free(&r);
    IT_CHECK(it_queue_attr_int(&srv, other, "ApproximateNumberOfMessagesNotVisible") == 1);

    /* Deleting twice is fine. */
    free(it_send(&srv, url, "mine"));
    r = it_receive(&srv, url, NULL);
    char *h = handle_of(&r);
    it_reply_free(&r);
    for (int i = 0; i < 2; i++) {
        r = call_q("DeleteMessage", url, json_pack("{s:s}", "ReceiptHandle", h));
        IT_OK(&r);
        IT_CHECK(r.body[0] == '\0');
        it_reply_free(&r);
    }
    IT_CHECK(it_queue_attr_int(&srv, url, "ApproximateNumberOfMessagesNotVisible") == 0);
    free(h);

    /* A stale handle (its lease over, not received since) still deletes on
     * a standard queue (LS test_remove_message_with_old_receipt_handle). */
    free(it_send(&srv, url, "stale"));
    r = it_receive(&srv, url, json_pack("{s:i}", "VisibilityTimeout", 0));
    h = handle_of(&r);
    it_reply_free(&r);
    r = call_q("DeleteMessage", url, json_pack("{s:s}", "ReceiptHandle", h));
    IT_OK(&r);
    it_reply_free(&r);
    r = it_receive(&srv, url, NULL);
    IT_CHECK(it_message_count(&r) == 0);
    it_reply_free(&r);
    free(h);

    /* A stale handle of a message received again since: SQS answers 200
     * ("the request succeeds, but the message might not be deleted"), so
     * only the answer is checked. */
    free(it_send(&srv, url, "received-twice"));
    r = it_receive(&srv, url, json_pack("{s:i}", "VisibilityTimeout", 0));
    h = handle_of(&r);
    it_reply_free(&r);
    r = it_receive(&srv, url, json_pack("{s:i}", "VisibilityTimeout", 600));
    IT_CHECK(it_message_count(&r) == 1);
    char *current = handle_of(&r);
    it_reply_free(&r);
    r = call_q("DeleteMessage", url, json_pack("{s:s}", "ReceiptHandle", h));
    IT_OK(&r);
    it_reply_free(&r);
    r = call_q("DeleteMessage", url, json_pack("{s:s}", "ReceiptHandle", current));
    IT_OK(&r);
    it_reply_free(&r);
    IT_CHECK(it_queue_attr_int(&srv, url, "ApproximateNumberOfMessagesNotVisible") == 0);
    free(current);
    free(h);

    /* DeleteMessageBatch: two good handles and a bad one. */
    free(it_send(&srv, url, "b1"));
    free(it_send(&srv, url, "b2"));
    struct it_reply rx = it_receive(&srv, url, json_pack("{s:i}", "MaxNumberOfMessages", 10));
    IT_CHECK(it_message_count(&rx) == 2);
    json_t *msgs = it_messages(&rx);
    r = call_q("DeleteMessageBatch", url,
               json_pack("{s:[{s:s,s:O},{s:s,s:O},{s:s,s:s}]}", "Entries", "Id", "a",
                         "ReceiptHandle", json_object_get(json_array_get(msgs, 0), "ReceiptHandle"),
                         "Id", "b", "ReceiptHandle",
                         json_object_get(json_array_get(msgs, 1), "ReceiptHandle"), "Id", "c",
                         "ReceiptHandle", "garbage"));
    it_reply_free(&rx);
    IT_OK(&r);
    IT_CHECK(json_array_size(json_object_get(r.json, "Successful")) == 2);
    json_t *f = json_array_get(json_object_get(r.json, "Failed"), 0);
    IT_CHECK(json_array_size(json_object_get(r.json, "Failed")) == 1);
    IT_STREQ(it_jstr(f, "Id"), "c");
    IT_STREQ(it_jstr(f, "Code"), INVALID_HANDLE);
    IT_CHECK(json_is_true(json_object_get(f, "SenderFault")));
    it_reply_free(&r);
    IT_CHECK(it_queue_attr_int(&srv, url, "ApproximateNumberOfMessagesNotVisible") == 0);
    free(theirs);
    free(other);
    free(url);
}

/* The batch-wide errors, the same for both receipt batches. */
static void receipt_batch_errors(const char *action)
{
    char *url = it_create_queue(&srv, "r-batch-err", NULL);
    struct it_reply r = call_q(action, url, json_pack("{s:[]}", "Entries"));
    IT_ERR(&r, 400, "AWS.SimpleQueueService.EmptyBatchRequest", "EmptyBatchRequest", NULL);
    it_reply_free(&r);
    json_t *many = json_array();
    for (int k = 0; k < 11; k++) {
        char id[8];
        snprintf(id, sizeof id, "e%d", k);
        json_array_append_new(many, json_pack("{s:s,s:s,s:i}", "Id", id, "ReceiptHandle", "h",
                                              "VisibilityTimeout", 0));
    }
    r = call_q(action, url, json_pack("{s:o}", "Entries", many));
    IT_ERR(&r, 400, "AWS.SimpleQueueService.TooManyEntriesInBatchRequest",
           "TooManyEntriesInBatchRequest",
           "Maximum number of entries per request are 10. You have sent 11.");
    it_reply_free(&r);
    r = call_q(action, url,
               json_pack("{s:[{s:s,s:s,s:i},{s:s,s:s,s:i}]}", "Entries", "Id", "x", "ReceiptHandle",
                         "h", "VisibilityTimeout", 0, "Id", "x", "ReceiptHandle", "h",
                         "VisibilityTimeout", 0));
    IT_ERR(&r, 400, "AWS.SimpleQueueService.BatchEntryIdsNotDistinct", "BatchEntryIdsNotDistinct",
           NULL);
    it_reply_free(&r);
    r = call_q(action, url,
               json_pack("{s:[{s:s,s:s,s:i}]}", "Entries", "Id", "bad:id", "ReceiptHandle", "h",
                         "VisibilityTimeout", 0));
    IT_ERR(&r, 400, "AWS.SimpleQueueService.InvalidBatchEntryId", "InvalidBatchEntryId",
           "A batch entry id can only contain alphanumeric characters, hyphens and underscores. "
           "It can be at most 80 letters long.");
    it_reply_free(&r);
    free(url);
}

static void change_visibility(void)
{
    char *url = it_create_queue(&srv, "r-cmv", NULL);
    free(it_send(&srv, url, "cmv"));
    struct it_reply r = it_receive(&srv, url, json_pack("{s:i}", "VisibilityTimeout", 600));
    char *h = handle_of(&r);
    it_reply_free(&r);
    r = it_receive(&srv, url, NULL);
    IT_CHECK(it_message_count(&r) == 0);
    it_reply_free(&r);

    /* Range 0..43200. */
    static const int bad[] = {43201, -1};
    for (size_t i = 0; i < 2; i++) {
        r = call_q("ChangeMessageVisibility", url,
                   json_pack("{s:s,s:i}", "ReceiptHandle", h, "VisibilityTimeout", bad[i]));
        IT_ERR(&r, 400, IPV, IPV_SHAPE, NULL);
        it_reply_free(&r);
    }
    r = call_q("ChangeMessageVisibility", url,
               json_pack("{s:s,s:i}", "ReceiptHandle", h, "VisibilityTimeout", 43200));
    IT_OK(&r);
    IT_CHECK(r.body[0] == '\0');
    it_reply_free(&r);

    /* 0: receivable again at once; the change is not remembered (the next
     * receive leases for the queue default). */
    r = call_q("ChangeMessageVisibility", url,
               json_pack("{s:s,s:i}", "ReceiptHandle", h, "VisibilityTimeout", 0));
    IT_OK(&r);
    it_reply_free(&r);
    free(h);
    r = it_receive(&srv, url,
                   json_pack("{s:[s]}", "MessageSystemAttributeNames", "ApproximateReceiveCount"));
    IT_CHECK(it_message_count(&r) == 1);
    IT_STREQ(it_jstr(json_object_get(first(&r), "Attributes"), "ApproximateReceiveCount"), "2");
    h = handle_of(&r);
    it_reply_free(&r);
    r = it_receive(&srv, url, NULL);
    IT_CHECK(it_message_count(&r) == 0);
    it_reply_free(&r);

    r = call_q("ChangeMessageVisibility", url,
               json_pack("{s:s,s:i}", "ReceiptHandle", "garbage", "VisibilityTimeout", 10));
    IT_ERR(&r, 404, INVALID_HANDLE, INVALID_HANDLE,
           "The input receipt handle \"garbage\" is not a valid receipt handle.");
    it_reply_free(&r);

    /* On a deleted message: SQS's InvalidParameterValue. */
    r = call_q("DeleteMessage", url, json_pack("{s:s}", "ReceiptHandle", h));
    it_reply_free(&r);
    r = call_q("ChangeMessageVisibility", url,
               json_pack("{s:s,s:i}", "ReceiptHandle", h, "VisibilityTimeout", 10));
    char want[1024];
    snprintf(want, sizeof want,
             "Value %s for parameter ReceiptHandle is invalid. Reason: Message does not exist or "
             "is not available for visibility timeout change.",
             h);
    IT_ERR(&r, 400, IPV, IPV_SHAPE, want);
    it_reply_free(&r);
    free(h);

    /* After its lease ran out (not received since): 200 on a standard
     * queue (LS test_change_message_visibility_after_visibility_timeout_expiration). */
    free(it_send(&srv, url, "expired"));
    r = it_receive(&srv, url, json_pack("{s:i}", "VisibilityTimeout", 0));
    h = handle_of(&r);
    it_reply_free(&r);
    r = call_q("ChangeMessageVisibility", url,
               json_pack("{s:s,s:i}", "ReceiptHandle", h, "VisibilityTimeout", 600));
    IT_OK(&r);
    it_reply_free(&r);
    r = it_receive(&srv, url, NULL);
    IT_CHECK(it_message_count(&r) == 0); /* hidden again by the change */
    it_reply_free(&r);
    free(h);

    /* ChangeMessageVisibilityBatch: one good entry, one garbage. */
    r = call_q("PurgeQueue", url, json_object());
    it_reply_free(&r);
    free(it_send(&srv, url, "batch"));
    r = it_receive(&srv, url, json_pack("{s:i}", "VisibilityTimeout", 600));
    h = handle_of(&r);
    it_reply_free(&r);
    r = call_q("ChangeMessageVisibilityBatch", url,
               json_pack("{s:[{s:s,s:s,s:i},{s:s,s:s,s:i}]}", "Entries", "Id", "ok",
                         "ReceiptHandle", h, "VisibilityTimeout", 0, "Id", "bad", "ReceiptHandle",
                         "garbage", "VisibilityTimeout", 0));
    IT_OK(&r);
    json_t *ok = json_object_get(r.json, "Successful");
    json_t *failed = json_object_get(r.json, "Failed");
    IT_CHECK(json_array_size(ok) == 1 && json_array_size(failed) == 1);
    IT_STREQ(it_jstr(json_array_get(ok, 0), "Id"), "ok");
    IT_STREQ(it_jstr(json_array_get(failed, 0), "Id"), "bad");
    IT_STREQ(it_jstr(json_array_get(failed, 0), "Code"), INVALID_HANDLE);
    IT_CHECK(json_is_true(json_object_get(json_array_get(failed, 0), "SenderFault")));
    it_reply_free(&r);
    r = it_receive(&srv, url, NULL);
    IT_CHECK(it_message_count(&r) == 1); /* the batch's 0 made it visible */
    it_reply_free(&r);
    free(h);
    free(url);
}

int main(void)
{
    struct it_options opt = {.tls = false};
    IT_REQUIRE(it_server_start(&srv, &opt) == 0);
    receive_ranges();
    visibility_override();
    long_polling();
    delays();
    delete_message();
    receipt_batch_errors("DeleteMessageBatch");
    receipt_batch_errors("ChangeMessageVisibilityBatch");
    change_visibility();
    IT_CHECK(it_healthz(&srv));
    IT_CHECK(it_server_stop(&srv) == 0);
    it_server_cleanup(&srv);
    return it_summary();
}
