/*
 * test_sqs_limits.c -- SQS's in-flight limit of a standard queue, at its
 * real size, against the real sluiced over HTTP/2: once 120,000 messages
 * of a queue are received and not deleted, ReceiveMessage answers
 * OverLimit (HTTP 403) until one of them is deleted; another queue of the
 * same tenant is not affected (Amazon SQS Developer Guide, "Amazon SQS
 * message quotas"; API Reference, ReceiveMessage errors).
 *
 * The tenant's own limits (rate, burst, max_inflight, max_backlog) are set
 * far above what the test uses, so only the queue's limit can answer.
 * Sends and receives run as concurrent streams of one h2 connection over
 * TLS (it_call_many; this libcurl cannot multiplex h2c). Durations are
 * printed, never asserted.
 */
#include "it_sqs.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define INFLIGHT_LIMIT 120000 /* SQS: in-flight messages per standard queue */
/* Sent beyond the limit, so the queue still holds visible messages when
 * the limit refuses to hand them out. */
#define EXTRA 10
#define BATCH 10
#define WINDOW 64        /* concurrent streams */
#define LEASE_S 43200    /* the longest visibility: nothing returns mid-test */
#define FAILURES_SHOWN 3 /* bodies printed of failed calls */

static struct it_server srv;

static double seconds_since(const struct timespec *t0)
{
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (double)(t1.tv_sec - t0->tv_sec) + (double)(t1.tv_nsec - t0->tv_nsec) / 1e9;
}

static void show_failure(int *shown, const char *what, const struct it_reply *r)
{
    if ((*shown)++ < FAILURES_SHOWN) {
        fprintf(stderr, "%s: status %ld, body %.400s\n", what, r->status,
                r->body != NULL ? r->body : "(none)");
    }
}

/* ---- sending: SendMessageBatch of BATCH small bodies ------------------ */

struct sender {
    const char *url;
    int batches; /* to send */
    int next;    /* the next batch's number */
    long long sent;
    int failed_calls;
    int shown;
};

static bool next_send(void *user, struct it_call_spec *call)
{
    struct sender *s = user;
    if (s->next == s->batches) {
        return false;
    }
    json_t *entries = json_array();
    for (int i = 0; i < BATCH; i++) {
        char id[8];
        char body[32];
        snprintf(id, sizeof id, "e%d", i);
        snprintf(body, sizeof body, "m%d-%d", s->next, i);
        json_array_append_new(entries, json_pack("{s:s,s:s}", "Id", id, "MessageBody", body));
    }
    call->action = "SendMessageBatch";
    call->req = json_pack("{s:s,s:o}", "QueueUrl", s->url, "Entries", entries);
    s->next++;
    return true;
}

static void send_done(void *user, void *tag, const struct it_reply *r)
{
    struct sender *s = user;
    (void)tag;
    json_t *ok = json_object_get(r->json, "Successful");
    json_t *failed = json_object_get(r->json, "Failed");
    if (r->status != 200 || json_array_size(failed) != 0) {
        s->failed_calls++;
        show_failure(&s->shown, "SendMessageBatch", r);
    }
    s->sent += (long long)json_array_size(ok);
}

/* ---- receiving: never asks for more than the limit leaves ------------- */

struct receiver {
    const char *url;
    long long received;
    long long asked; /* MaxNumberOfMessages summed over outstanding calls */
    int calls;
    int max_calls; /* a bound, in case receives come back short */
    int failed_calls;
    int shown;
    char *handle; /* one receipt handle, for the delete */
};

static bool next_receive(void *user, struct it_call_spec *call)
{
    struct receiver *rv = user;
    long long left = INFLIGHT_LIMIT - rv->received - rv->asked;
    if (left <= 0 || rv->calls == rv->max_calls) {
        return false;
    }
    int n = left < BATCH ? (int)left : BATCH;
    rv->asked += n;
    rv->calls++;
    call->action = "ReceiveMessage";
    call->req = json_pack("{s:s,s:i,s:i}", "QueueUrl", rv->url, "MaxNumberOfMessages", n,
                          "VisibilityTimeout", LEASE_S);
    call->tag = (void *)(intptr_t)n;
    return true;
}

static void receive_done(void *user, void *tag, const struct it_reply *r)
{
    struct receiver *rv = user;
    rv->asked -= (intptr_t)tag;
    if (r->status != 200) {
        rv->failed_calls++;
        show_failure(&rv->shown, "ReceiveMessage", r);
        return;
    }
    size_t n = it_message_count(r);
    rv->received += (long long)n;
    if (n > 0 && rv->handle == NULL) {
        rv->handle = strdup(it_jstr(json_array_get(it_messages(r), 0), "ReceiptHandle"));
    }
}

static struct it_reply receive_one_batch(const char *url)
{
    return it_receive(
        &srv, url,
        json_pack("{s:i,s:i}", "MaxNumberOfMessages", BATCH, "VisibilityTimeout", LEASE_S));
}

static void check_over_limit(const struct it_reply *r)
{
    IT_ERR(r, 403, "OverLimit", "OverLimit", NULL);
    IT_STREQ(it_str(r, "__type"), "com.amazonaws.sqs#OverLimit");
}

static void inflight_limit(void)
{
    char *url = it_create_queue(&srv, "at-the-limit", NULL);
    IT_REQUIRE(url != NULL);
    struct timespec t0;

    clock_gettime(CLOCK_MONOTONIC, &t0);
    struct sender s = {.url = url, .batches = (INFLIGHT_LIMIT + EXTRA) / BATCH};
    IT_CHECK(it_call_many(&srv, WINDOW, next_send, send_done, &s) == 0);
    IT_CHECK(s.failed_calls == 0);
    IT_REQUIRE(s.sent == INFLIGHT_LIMIT + EXTRA);
    printf("sent %lld messages in %.1f s\n", s.sent, seconds_since(&t0));

    clock_gettime(CLOCK_MONOTONIC, &t0);
    struct receiver rv = {.url = url, .max_calls = 2 * INFLIGHT_LIMIT / BATCH};
    IT_CHECK(it_call_many(&srv, WINDOW, next_receive, receive_done, &rv) == 0);
    IT_CHECK(rv.failed_calls == 0);
    IT_REQUIRE(rv.received == INFLIGHT_LIMIT);
    IT_REQUIRE(rv.handle != NULL);
    printf("received %lld messages in %d calls in %.1f s\n", rv.received, rv.calls,
           seconds_since(&t0));
    IT_CHECK(it_queue_attr_int(&srv, url, "ApproximateNumberOfMessagesNotVisible") ==
             INFLIGHT_LIMIT);
    IT_CHECK(it_queue_attr_int(&srv, url, "ApproximateNumberOfMessages") == EXTRA);

    /* At the limit: refused although messages are visible, and nothing
     * is taken. */
    struct it_reply r = receive_one_batch(url);
    check_over_limit(&r);
    IT_CHECK(it_message_count(&r) == 0);
    it_reply_free(&r);
    r = it_receive(&srv, url, json_pack("{s:i}", "WaitTimeSeconds", 1));
    check_over_limit(&r);
    it_reply_free(&r);
    IT_CHECK(it_queue_attr_int(&srv, url, "ApproximateNumberOfMessagesNotVisible") ==
             INFLIGHT_LIMIT);
    IT_CHECK(it_queue_attr_int(&srv, url, "ApproximateNumberOfMessages") == EXTRA);

    /* The limit is the queue's: another queue of the tenant still works. */
    char *other = it_create_queue(&srv, "beside-the-limit", NULL);
    free(it_send(&srv, other, "elsewhere"));
    r = it_receive(&srv, other, NULL);
    IT_OK(&r);
    IT_CHECK(it_message_count(&r) == 1);
    it_reply_free(&r);

    /* One deleted: a receive works again, and takes the queue back to the
     * limit (at least one message leaves the visible ones). */
    r = it_call(&srv, "DeleteMessage",
                json_pack("{s:s,s:s}", "QueueUrl", url, "ReceiptHandle", rv.handle));
    IT_OK(&r);
    it_reply_free(&r);
    IT_CHECK(it_queue_attr_int(&srv, url, "ApproximateNumberOfMessagesNotVisible") ==
             INFLIGHT_LIMIT - 1);
    r = receive_one_batch(url);
    IT_OK(&r);
    size_t got = it_message_count(&r);
    IT_CHECK(got >= 1);
    it_reply_free(&r);
    IT_CHECK(it_queue_attr_int(&srv, url, "ApproximateNumberOfMessages") == EXTRA - (long long)got);
    r = receive_one_batch(url);
    check_over_limit(&r);
    it_reply_free(&r);

    free(rv.handle);
    free(other);
    free(url);
}

int main(void)
{
    struct it_options opt = {
        .tls = true,
        /* The default tenant acme, with every tenant's limits far above
         * the test's load (docs/config.md). */
        .extra_yaml = "defaults:\n"
                      "  limits:\n"
                      "    requests_per_second: 1000000\n"
                      "    burst: 100000000\n"
                      "    max_inflight: 10000000\n"
                      "    max_backlog: 100000000\n",
    };
    IT_REQUIRE(it_server_start(&srv, &opt) == 0);
    inflight_limit();
    IT_CHECK(it_healthz(&srv));
    IT_CHECK(it_server_stop(&srv) == 0);
    it_server_cleanup(&srv);
    return it_summary();
}
