/*
 * test_sqs_dlq_retention.c -- the retention of a message moved to a
 * dead-letter queue, against the real sluiced over HTTP/2. SQS: "The
 * expiration of a message is always based on its original enqueue
 * timestamp. When a message is moved to a dead-letter queue, the enqueue
 * timestamp is unchanged" -- so in the dead-letter queue a standard
 * queue's message expires at its send time plus the DEAD-LETTER QUEUE's
 * MessageRetentionPeriod (Amazon SQS Developer Guide, "Configuring a
 * dead-letter queue", on retention). Two cases, in one wait:
 *  - source 60 s, DLQ 4 days (the default): the moved message is still in
 *    the DLQ after 60 s;
 *  - source 4 days, DLQ 60 s: the moved message is gone from the DLQ
 *    after 60 s.
 *
 * It runs about a minute, in its own file so that ctest runs it beside the
 * others. Bounded polls (90 s), no threshold a loaded machine can break:
 * "still there" is checked at polls that end after 61 s, when a 60 s
 * retention would have removed it whatever the load.
 */
#include "it_sqs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DEADLINE_S 90.0
#define KEPT_PAST_S 61.0
#define POLL_MS 1000
#define ARN_PREFIX "arn:aws:sqs:" IT_REGION ":" IT_TENANT ":"

static struct it_server srv;
static struct timespec start;

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

static char *source_queue(const char *name, const char *retention, const char *dlq_name)
{
    char policy[256];
    snprintf(policy, sizeof policy,
             "{\"deadLetterTargetArn\":\"" ARN_PREFIX "%s\",\"maxReceiveCount\":1}", dlq_name);
    json_t *attrs = json_pack("{s:s}", "RedrivePolicy", policy);
    if (retention != NULL) {
        json_object_set_new(attrs, "MessageRetentionPeriod", json_string(retention));
    }
    return it_create_queue(&srv, name, attrs);
}

/* Sends one message to src and receives it twice (lease 0): the second
 * receive passes maxReceiveCount 1 and moves it to its DLQ. */
static void send_and_dead_letter(const char *src)
{
    free(it_send(&srv, src, "doomed"));
    for (int i = 0; i < 2; i++) {
        struct it_reply r = it_receive(&srv, src, json_pack("{s:i}", "VisibilityTimeout", 0));
        IT_OK(&r);
        IT_CHECK(it_message_count(&r) == (i == 0 ? 1u : 0u));
        it_reply_free(&r);
    }
}

static void dlq_retention(void)
{
    char *dlq_keeps = it_create_queue(&srv, "dlq-keeps", NULL);
    char *dlq_short =
        it_create_queue(&srv, "dlq-short", json_pack("{s:s}", "MessageRetentionPeriod", "60"));
    char *src_short = source_queue("src-short", "60", "dlq-keeps");
    char *src_long = source_queue("src-long", NULL, "dlq-short");
    IT_REQUIRE(dlq_keeps != NULL && dlq_short != NULL && src_short != NULL && src_long != NULL);

    clock_gettime(CLOCK_MONOTONIC, &start);
    send_and_dead_letter(src_short);
    send_and_dead_letter(src_long);
    IT_CHECK(it_queue_attr_int(&srv, dlq_keeps, "ApproximateNumberOfMessages") == 1);
    IT_CHECK(it_queue_attr_int(&srv, dlq_short, "ApproximateNumberOfMessages") == 1);

    bool short_gone = false;
    bool kept = true;
    double polled = 0;
    while ((!short_gone || polled < KEPT_PAST_S) && elapsed_s() < DEADLINE_S) {
        sleep_ms(POLL_MS);
        short_gone = it_queue_attr_int(&srv, dlq_short, "ApproximateNumberOfMessages") == 0;
        kept = kept && it_queue_attr_int(&srv, dlq_keeps, "ApproximateNumberOfMessages") == 1;
        polled = elapsed_s();
    }
    printf("polled until %.1f s: dlq-short %s, dlq-keeps %s\n", polled,
           short_gone ? "empty" : "still holds its message", kept ? "kept its message" : "lost it");
    IT_CHECK(polled >= KEPT_PAST_S);
    /* The source's 60 s does not follow the message into a 4-day DLQ. */
    IT_CHECK(kept);
    /* The DLQ's 60 s counts from the original send. */
    IT_CHECK(short_gone);
    free(src_long);
    free(src_short);
    free(dlq_short);
    free(dlq_keeps);
}

int main(void)
{
    struct it_options opt = {0};
    IT_REQUIRE(it_server_start(&srv, &opt) == 0);
    dlq_retention();
    IT_CHECK(it_healthz(&srv));
    IT_CHECK(it_server_stop(&srv) == 0);
    it_server_cleanup(&srv);
    return it_summary();
}
