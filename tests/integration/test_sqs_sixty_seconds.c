/*
 * test_sqs_sixty_seconds.c -- the SQS rules that take a minute to see,
 * against the real sluiced over HTTP/2, all in one wait:
 *  - MessageRetentionPeriod 60 (SQS's minimum): a visible and an in-flight
 *    message are there well before 60 s and gone after it; a later
 *    DeleteMessage with the expired message's receipt handle still answers
 *    200, as Amazon SQS answers it (LocalStack's test suite checks the
 *    same: test_message_retention_with_inflight);
 *  - a deleted queue's name is refused for 60 s (QueueDeletedRecently),
 *    then creates a new, empty queue (research 1.6, 1.9, 4.5);
 *  - a second PurgeQueue within 60 s is PurgeQueueInProgress, after 60 s
 *    it is allowed again (research 1.9, 4.49);
 *  - SetQueueAttributes moves LastModifiedTimestamp (epoch seconds) and
 *    leaves CreatedTimestamp (research 1.6).
 *
 * It runs about a minute, in its own file so that ctest runs it beside the
 * others. No threshold can fail on a loaded machine: "present" is checked
 * right after the sends (the check must end within 30 s of them to mean
 * anything); "gone" and "allowed again" are bounded polls that give up 90 s
 * after the start; a poll that finished before 59 s ran before the period
 * ended (1 s below it for the server's millisecond timestamps), so the
 * messages must still be there -- load can only make polls later.
 */
#include "it_sqs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PRESENT_BY_S 30.0 /* the presence checks end before this */
#define DEADLINE_S 90.0   /* every poll gives up this long after the start */
#define EARLIEST_GONE_S 59.0
#define POLL_MS 1000

static struct it_server srv;
static struct timespec start; /* taken before the first timed request */

static double elapsed_s(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - start.tv_sec) + (double)(now.tv_nsec - start.tv_nsec) / 1e9;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static bool counters_are(const char *url, long long visible, long long inflight)
{
    long long v = it_queue_attr_int(&srv, url, "ApproximateNumberOfMessages");
    long long i = it_queue_attr_int(&srv, url, "ApproximateNumberOfMessagesNotVisible");
    return v == visible && i == inflight;
}

/* Calls action with req (a template, copied per attempt) once a second
 * until it answers 200 or the deadline passes; returns the last reply. */
static struct it_reply call_until_ok(const char *action, const json_t *req)
{
    struct it_reply r = it_call(&srv, action, json_deep_copy(req));
    while (r.status != 200 && elapsed_s() < DEADLINE_S) {
        it_reply_free(&r);
        sleep_ms(POLL_MS);
        r = it_call(&srv, action, json_deep_copy(req));
    }
    return r;
}

struct timed {
    char *short_lived; /* retention 60 s */
    char *held_handle; /* its in-flight message's receipt handle */
    char *reborn;      /* deleted at the start */
    char *purged;      /* purged at the start */
    char *modified;    /* its attributes are set after the wait */
    long long created_ts;
    long long modified_ts;
};

static void before_the_wait(struct timed *t)
{
    t->short_lived =
        it_create_queue(&srv, "short-lived", json_pack("{s:s}", "MessageRetentionPeriod", "60"));
    t->reborn = it_create_queue(&srv, "reborn", NULL);
    t->purged = it_create_queue(&srv, "purged", NULL);
    t->modified = it_create_queue(&srv, "modified", NULL);
    IT_REQUIRE(t->short_lived != NULL && t->reborn != NULL && t->purged != NULL &&
               t->modified != NULL);
    t->created_ts = it_queue_attr_int(&srv, t->modified, "CreatedTimestamp");
    t->modified_ts = it_queue_attr_int(&srv, t->modified, "LastModifiedTimestamp");
    IT_CHECK(t->created_ts > 0 && t->modified_ts >= t->created_ts);

    clock_gettime(CLOCK_MONOTONIC, &start); /* before anything reaches the server */
    free(it_send(&srv, t->short_lived, "held"));
    struct it_reply r =
        it_receive(&srv, t->short_lived, json_pack("{s:i}", "VisibilityTimeout", 43200));
    IT_OK(&r);
    IT_REQUIRE(it_message_count(&r) == 1);
    t->held_handle = strdup(it_jstr(json_array_get(it_messages(&r), 0), "ReceiptHandle"));
    it_reply_free(&r);
    free(it_send(&srv, t->short_lived, "waiting"));

    free(it_send(&srv, t->reborn, "old-1"));
    free(it_send(&srv, t->reborn, "old-2"));
    r = it_call(&srv, "DeleteQueue", json_pack("{s:s}", "QueueUrl", t->reborn));
    IT_OK(&r);
    it_reply_free(&r);
    r = it_call(&srv, "CreateQueue", json_pack("{s:s}", "QueueName", "reborn"));
    IT_ERR(&r, 400, "AWS.SimpleQueueService.QueueDeletedRecently", "QueueDeletedRecently", NULL);
    it_reply_free(&r);

    free(it_send(&srv, t->purged, "purged"));
    r = it_call(&srv, "PurgeQueue", json_pack("{s:s}", "QueueUrl", t->purged));
    IT_OK(&r);
    it_reply_free(&r);
    r = it_call(&srv, "PurgeQueue", json_pack("{s:s}", "QueueUrl", t->purged));
    IT_ERR(&r, 403, "AWS.SimpleQueueService.PurgeQueueInProgress", "PurgeQueueInProgress", NULL);
    it_reply_free(&r);

    /* Well before the period: counted, and the visible one is received
     * (with a 0 s lease, so it stays visible). */
    IT_CHECK(counters_are(t->short_lived, 1, 1));
    r = it_receive(&srv, t->short_lived, json_pack("{s:i}", "VisibilityTimeout", 0));
    IT_OK(&r);
    IT_CHECK(it_message_count(&r) == 1);
    IT_STREQ(it_jstr(json_array_get(it_messages(&r), 0), "Body"), "waiting");
    it_reply_free(&r);
    double checked = elapsed_s();
    IT_CHECK(checked < PRESENT_BY_S);
    printf("present %.1f s after the sends\n", checked);
}

/* Both messages stay until the period ends and are gone, visible and in
 * flight, after it. */
static void retention_expiry(struct timed *t)
{
    bool gone = false;
    bool lost_early = false;
    double polled = 0;
    while (!gone && elapsed_s() < DEADLINE_S) {
        sleep_ms(POLL_MS);
        bool both = counters_are(t->short_lived, 1, 1);
        gone = counters_are(t->short_lived, 0, 0);
        polled = elapsed_s();
        if (!both && polled < EARLIEST_GONE_S) {
            lost_early = true;
            fprintf(stderr, "messages missing %.1f s after the sends\n", polled);
        }
    }
    IT_CHECK(!lost_early);
    IT_CHECK(gone);
    printf("gone by %.1f s after the sends\n", polled);
    struct it_reply r = it_receive(&srv, t->short_lived, NULL);
    IT_OK(&r);
    IT_CHECK(json_object_get(r.json, "Messages") == NULL);
    it_reply_free(&r);
    /* SQS: deleting the expired in-flight message's handle is no error. */
    r = it_call(
        &srv, "DeleteMessage",
        json_pack("{s:s,s:s}", "QueueUrl", t->short_lived, "ReceiptHandle", t->held_handle));
    IT_OK(&r);
    it_reply_free(&r);
    IT_CHECK(counters_are(t->short_lived, 0, 0));
}

/* The name is free again: a new queue, without the old one's messages. */
static void deleted_name_reusable(struct timed *t)
{
    json_t *create = json_pack("{s:s}", "QueueName", "reborn");
    struct it_reply r = call_until_ok("CreateQueue", create);
    json_decref(create);
    IT_OK(&r);
    IT_STREQ(it_str(&r, "QueueUrl"), t->reborn);
    it_reply_free(&r);
    IT_CHECK(counters_are(t->reborn, 0, 0));
    r = it_receive(&srv, t->reborn, json_pack("{s:i}", "MaxNumberOfMessages", 10));
    IT_OK(&r);
    IT_CHECK(it_message_count(&r) == 0);
    it_reply_free(&r);
}

static void purge_allowed_again(struct timed *t)
{
    free(it_send(&srv, t->purged, "purged-too"));
    json_t *purge = json_pack("{s:s}", "QueueUrl", t->purged);
    struct it_reply r = call_until_ok("PurgeQueue", purge);
    json_decref(purge);
    IT_OK(&r);
    it_reply_free(&r);
    IT_CHECK(counters_are(t->purged, 0, 0));
}

static void last_modified_moves(struct timed *t)
{
    struct it_reply r = it_call(&srv, "SetQueueAttributes",
                                json_pack("{s:s,s:{s:s}}", "QueueUrl", t->modified, "Attributes",
                                          "VisibilityTimeout", "45"));
    IT_OK(&r);
    it_reply_free(&r);
    IT_CHECK(it_queue_attr_int(&srv, t->modified, "CreatedTimestamp") == t->created_ts);
    IT_CHECK(it_queue_attr_int(&srv, t->modified, "LastModifiedTimestamp") > t->modified_ts);
}

int main(void)
{
    struct it_options opt = {0};
    IT_REQUIRE(it_server_start(&srv, &opt) == 0);
    struct timed t = {0};
    before_the_wait(&t);
    retention_expiry(&t);
    deleted_name_reusable(&t);
    purge_allowed_again(&t);
    last_modified_moves(&t);
    free(t.held_handle);
    free(t.short_lived);
    free(t.reborn);
    free(t.purged);
    free(t.modified);
    IT_CHECK(it_healthz(&srv));
    IT_CHECK(it_server_stop(&srv) == 0);
    it_server_cleanup(&srv);
    return it_summary();
}
