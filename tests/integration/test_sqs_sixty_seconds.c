/*
 * test_sqs_retention.c -- MessageRetentionPeriod end to end against the
 * real sluiced over HTTP/2: on a queue that keeps messages 60 s (SQS's
 * minimum), a visible and an in-flight message are there well before
 * 60 s and gone after it; a later DeleteMessage with the expired message's
 * receipt handle still answers 200 (research/sqs-peers.md 1.6, 1.8, 4.48;
 * LocalStack test_message_retention_with_inflight).
 *
 * Timing: the test runs about a minute, in its own file so that ctest runs
 * it beside the others. "Present" is checked right after the sends (the
 * check must end within 30 s of them to mean anything), "gone" by a
 * bounded poll that gives up 90 s after the sends; and no poll may find
 * the messages gone before 59 s (1 s below the period, for the server's
 * millisecond timestamps), which a loaded machine can only make later.
 */
#include "it_sqs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RETENTION_S 60
#define PRESENT_BY_S 30.0 /* the presence checks end before this */
#define GONE_BY_S 90.0    /* the poll's deadline */
#define EARLIEST_GONE_S 59.0
#define POLL_MS 1000

static struct it_server srv;

static double seconds_since(const struct timespec *t0)
{
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (double)(t1.tv_sec - t0->tv_sec) + (double)(t1.tv_nsec - t0->tv_nsec) / 1e9;
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

static void retention_expiry(void)
{
    char *url =
        it_create_queue(&srv, "short-lived", json_pack("{s:s}", "MessageRetentionPeriod", "60"));
    IT_REQUIRE(url != NULL);

    struct timespec sent;
    clock_gettime(CLOCK_MONOTONIC, &sent); /* before either send reaches the server */
    free(it_send(&srv, url, "held"));
    struct it_reply r = it_receive(&srv, url, json_pack("{s:i}", "VisibilityTimeout", 43200));
    IT_OK(&r);
    IT_REQUIRE(it_message_count(&r) == 1);
    char *held_handle = strdup(it_jstr(json_array_get(it_messages(&r), 0), "ReceiptHandle"));
    it_reply_free(&r);
    free(it_send(&srv, url, "waiting"));

    /* Well before the period: counted, and the visible one is received
     * (with a 0 s lease, so it stays visible). */
    IT_CHECK(counters_are(url, 1, 1));
    r = it_receive(&srv, url, json_pack("{s:i}", "VisibilityTimeout", 0));
    IT_OK(&r);
    IT_CHECK(it_message_count(&r) == 1);
    IT_STREQ(it_jstr(json_array_get(it_messages(&r), 0), "Body"), "waiting");
    it_reply_free(&r);
    double checked = seconds_since(&sent);
    IT_CHECK(checked < PRESENT_BY_S);
    printf("present %.1f s after the sends\n", checked);

    /* Both stay until the period ends (a poll that has finished before
     * 59 s ran before it), and are gone, visible and in flight, after it. */
    bool gone = false;
    bool lost_early = false;
    double polled = 0;
    while (!gone && seconds_since(&sent) < GONE_BY_S) {
        sleep_ms(POLL_MS);
        bool both = counters_are(url, 1, 1);
        gone = counters_are(url, 0, 0);
        polled = seconds_since(&sent);
        if (!both && polled < EARLIEST_GONE_S) {
            lost_early = true;
            fprintf(stderr, "messages missing %.1f s after the sends\n", polled);
        }
    }
    IT_CHECK(!lost_early);
    IT_CHECK(gone);
    printf("gone by %.1f s after the sends\n", polled);
    r = it_receive(&srv, url, NULL);
    IT_OK(&r);
    IT_CHECK(json_object_get(r.json, "Messages") == NULL);
    it_reply_free(&r);
    /* SQS: deleting the expired in-flight message's handle is no error. */
    r = it_call(&srv, "DeleteMessage",
                json_pack("{s:s,s:s}", "QueueUrl", url, "ReceiptHandle", held_handle));
    IT_OK(&r);
    it_reply_free(&r);
    IT_CHECK(counters_are(url, 0, 0));

    free(held_handle);
    free(url);
}

int main(void)
{
    struct it_options opt = {0};
    IT_REQUIRE(it_server_start(&srv, &opt) == 0);
    retention_expiry();
    IT_CHECK(it_healthz(&srv));
    IT_CHECK(it_server_stop(&srv) == 0);
    it_server_cleanup(&srv);
    return it_summary();
}
