/*
 * test_isolation.c -- every multi-tenant isolation rule driven through a
 * real sluiced over HTTP/2 (docs/policy.md):
 *  - limits.max_concurrent_requests: a tenant's requests in progress over
 *    all its connections are capped; past the cap RequestThrottled, and a
 *    SIGHUP raising the cap takes effect on the next request;
 *  - least-loaded send: a quiet tenant sharing one partition with a
 *    flooding tenant sends everything to its other partition (seen in the
 *    per-partition backlog of /metrics);
 *  - back-pressure slows a tenant whose backlog grows and refuses it past
 *    limits.max_backlog, storing nothing of the refused sends;
 *  - limits.max_inflight: a receive past it answers OverLimit;
 *  - limits.max_long_polls: the excess long polls run as short polls;
 *  - spill.aged_after_seconds: aged ready messages move to the overflow
 *    lane;
 *  - the metrics of the Builders' Library's article: empty receives per
 *    queue, AgeOfFirstAttempt through a real receive, and the oldest
 *    message's age within a second of the truth, measured by the client.
 *
 * Each block starts its own server with the configuration it needs, the
 * admin listener on for /metrics and /tenants. Rates that must not refill
 * during a block are 0.001 a second, so counts do not depend on timing.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "it_sqs.h"

#define ACME_KEYS                                                                                  \
    "  " IT_TENANT ":\n"                                                                           \
    "    access_key_id: " IT_KEY "\n"                                                              \
    "    secret_access_key: " IT_SECRET "\n"

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Polls a /metrics series until it reads want (bounded by 10 s); the last
 * value read. */
static double wait_metric(const struct it_server *s, const char *series, double want)
{
    double v = -1;
    for (int i = 0; i < 200; i++) {
        v = it_metric(s, series);
        if (v == want) {
            break;
        }
        it_sleep_ms(50);
    }
    return v;
}

static void start(struct it_server *s, const char *tenants_yaml, unsigned partitions, unsigned k)
{
    struct it_options opt = {
        .admin = true, .tenants_yaml = tenants_yaml, .partitions = partitions, .shard_size = k};
    IT_REQUIRE(it_server_start(s, &opt) == 0);
}

/* start() on P = 2, k = 1, then acme's queue with n messages in it; its
 * URL (malloc'd). */
static char *start_with_queue(struct it_server *s, const char *tenants_yaml, const char *queue,
                              int n)
{
    start(s, tenants_yaml, 2, 1);
    char *url = it_create_queue(s, queue, NULL);
    IT_REQUIRE(url != NULL);
    for (int i = 0; i < n; i++) {
        char *id = it_send(s, url, "work");
        IT_CHECK(id != NULL);
        free(id);
    }
    return url;
}

/* Frees url, stops the server (exit 0) and removes its directory. */
static void stop(struct it_server *s, char *url)
{
    free(url);
    IT_CHECK(it_server_stop(s) == 0);
    it_server_cleanup(s);
}

/* A long poll on its own connection. */
struct poll_call {
    const struct it_server *s;
    const char *url;
    int wait_s;
    struct it_reply r;
    double took_s;
};

static void *long_poll(void *arg)
{
    struct poll_call *c = arg;
    double t0 = now_s();
    c->r = it_receive(c->s, c->url, json_pack("{s:i}", "WaitTimeSeconds", c->wait_s));
    c->took_s = now_s() - t0;
    return NULL;
}

/* ---- limits.max_concurrent_requests ------------------------------------- */

static const char cap_before[] = "tenants:\n" ACME_KEYS "    limits:\n"
                                 "      max_concurrent_requests: 3\n";
static const char cap_after[] = "tenants:\n" ACME_KEYS "    limits:\n"
                                "      max_concurrent_requests: 10\n";

static void concurrency_cap(void)
{
    struct it_server srv;
    char *url = start_with_queue(&srv, cap_before, "held", 0);
    const char *gauge = "sluice_tenant_requests_in_progress{tenant=\"" IT_TENANT "\"}";
    IT_CHECK(it_metric(&srv, gauge) == 0);

    /* Three long polls on three connections hold every slot. */
    struct poll_call calls[3];
    pthread_t th[3];
    for (int i = 0; i < 3; i++) {
        calls[i] = (struct poll_call){.s = &srv, .url = url, .wait_s = 6};
        IT_REQUIRE(pthread_create(&th[i], NULL, long_poll, &calls[i]) == 0);
    }
    IT_CHECK(wait_metric(&srv, gauge, 3) == 3);
    struct it_reply r = it_call(&srv, "SendMessage",
                                json_pack("{s:s,s:s}", "QueueUrl", url, "MessageBody", "no room"));
    IT_ERR(&r, 403, "RequestThrottled", "RequestThrottled",
           "Tenant acme has 3 requests in progress, its limit "
           "(limits.max_concurrent_requests).");
    it_reply_free(&r);
    /* Refused: nothing stored, and the slots are still the polls'. */
    IT_CHECK(it_metric(&srv, gauge) == 3);
    IT_CHECK(it_metric(&srv, "sluice_queue_ready_messages{tenant=\"" IT_TENANT
                             "\",queue=\"held\"}") == 0);

    /* SIGHUP to 10: the next request passes while the polls still wait. */
    char yaml[4096];
    struct it_options changed = {
        .admin = true, .tenants_yaml = cap_after, .partitions = 2, .shard_size = 1};
    it_config_yaml(&srv, &changed, yaml, sizeof yaml);
    IT_REQUIRE(it_server_write_config(&srv, yaml) == 0);
    it_server_signal(&srv, SIGHUP);
    IT_REQUIRE(it_wait_log(&srv, "tenant acme: limits changed", 20000));
    IT_REQUIRE(it_wait_log(&srv, "is live", 20000));
    char *id = it_send(&srv, url, "room now");
    IT_CHECK(id != NULL);
    free(id);
    size_t got = 0;
    for (int i = 0; i < 3; i++) {
        pthread_join(th[i], NULL);
        IT_OK(&calls[i].r);
        got += it_message_count(&calls[i].r);
        it_reply_free(&calls[i].r);
    }
    IT_CHECK(got == 1); /* the send woke one of the polls */
    IT_CHECK(wait_metric(&srv, gauge, 0) == 0);
    stop(&srv, url);
}

/* ---- least-loaded send ---------------------------------------------------- */

#define QUIET 10

/* acme floods; q0..q9 are quiet. P = 4, k = 2: a quiet tenant shares
 * exactly one partition with acme with probability 4/6, so among ten
 * some do (all ten miss with probability 2e-5). */
static char routing_yaml[4096];

static void make_routing_yaml(void)
{
    int n = snprintf(routing_yaml, sizeof routing_yaml,
                     "tenants:\n" ACME_KEYS "    limits:\n"
                     "      requests_per_second: 100000\n"
                     "      burst: 100000\n");
    for (int i = 0; i < QUIET; i++) {
        n += snprintf(routing_yaml + n, sizeof routing_yaml - (size_t)n,
                      "  q%d:\n    access_key_id: AKIDQ%d\n    secret_access_key: q%d-secret\n", i,
                      i, i);
    }
}

/* The shard of tenant from GET /tenants, into out[2]; false if absent. */
static bool shard_of(const json_t *root, const char *tenant, long out[2])
{
    const json_t *list = json_object_get(root, "tenants");
    size_t i;
    const json_t *t;
    json_array_foreach(list, i, t)
    {
        const char *name = json_string_value(json_object_get(t, "name"));
        const json_t *parts = json_object_get(t, "partitions");
        if (name != NULL && strcmp(name, tenant) == 0 && json_array_size(parts) == 2) {
            out[0] = (long)json_integer_value(json_array_get(parts, 0));
            out[1] = (long)json_integer_value(json_array_get(parts, 1));
            return true;
        }
    }
    return false;
}

static double partition_backlog(const struct it_server *s, long p)
{
    char series[96];
    snprintf(series, sizeof series, "sluice_partition_backlog_messages{partition=\"%ld\"}", p);
    return it_metric(s, series);
}

static void least_loaded_send(void)
{
    make_routing_yaml();
    struct it_server srv;
    start(&srv, routing_yaml, 4, 2);
    struct it_request req = {.method = "GET",
                             .path = "/tenants",
                             .access_key = IT_ADMIN_KEY,
                             .secret = IT_ADMIN_SECRET,
                             .admin = true};
    struct it_response resp;
    IT_REQUIRE(it_request(&srv, &req, &resp) == 0 && resp.status == 200);
    json_t *root = json_loads(resp.body, 0, NULL);
    it_response_free(&resp);
    IT_REQUIRE(root != NULL);
    long flood[2], quiet[2] = {-1, -1};
    IT_REQUIRE(shard_of(root, IT_TENANT, flood));
    int who = -1;
    for (int i = 0; i < QUIET && who < 0; i++) {
        char name[8];
        snprintf(name, sizeof name, "q%d", i);
        long sh[2];
        IT_REQUIRE(shard_of(root, name, sh));
        int shared =
            (sh[0] == flood[0] || sh[0] == flood[1]) + (sh[1] == flood[0] || sh[1] == flood[1]);
        if (shared == 1) {
            who = i;
            quiet[0] = sh[0];
            quiet[1] = sh[1];
        }
    }
    json_decref(root);
    IT_REQUIRE(who >= 0);
    long shared_p = quiet[0] == flood[0] || quiet[0] == flood[1] ? quiet[0] : quiet[1];
    long own_p = shared_p == quiet[0] ? quiet[1] : quiet[0];
    printf("flood on %ld,%ld; q%d on %ld,%ld: shares %ld\n", flood[0], flood[1], who, quiet[0],
           quiet[1], shared_p);

    /* acme stores a backlog of 2,000 messages over its two partitions. */
    char *furl = it_create_queue(&srv, "flood", NULL);
    IT_REQUIRE(furl != NULL);
    int sent = 0;
    for (int b = 0; b < 200; b++) {
        json_t *entries = json_array();
        for (int e = 0; e < 10; e++) {
            char id[8];
            snprintf(id, sizeof id, "e%d", e);
            json_array_append_new(entries,
                                  json_pack("{s:s,s:s}", "Id", id, "MessageBody", "flood"));
        }
        struct it_reply r = it_call(&srv, "SendMessageBatch",
                                    json_pack("{s:s,s:o}", "QueueUrl", furl, "Entries", entries));
        sent += r.status == 200 ? 10 : 0;
        it_reply_free(&r);
    }
    IT_CHECK(sent == 2000);
    double shared_before = partition_backlog(&srv, shared_p);
    double own_before = partition_backlog(&srv, own_p);
    printf("backlog before: shared partition %.0f, the other %.0f\n", shared_before, own_before);
    IT_CHECK(shared_before >= 500); /* both of acme's partitions took a share */

    /* The quiet tenant's sends all go to its other partition. */
    char key[16], secret[16];
    snprintf(key, sizeof key, "AKIDQ%d", who);
    snprintf(secret, sizeof secret, "q%d-secret", who);
    struct it_reply r =
        it_call_as(&srv, key, secret, "CreateQueue", json_pack("{s:s}", "QueueName", "calm"));
    IT_OK(&r);
    char *qurl = it_str(&r, "QueueUrl") != NULL ? strdup(it_str(&r, "QueueUrl")) : NULL;
    it_reply_free(&r);
    IT_REQUIRE(qurl != NULL);
    int ok = 0;
    for (int i = 0; i < 50; i++) {
        r = it_call_as(&srv, key, secret, "SendMessage",
                       json_pack("{s:s,s:s}", "QueueUrl", qurl, "MessageBody", "calm"));
        ok += r.status == 200;
        it_reply_free(&r);
    }
    IT_CHECK(ok == 50);
    double shared_after = partition_backlog(&srv, shared_p);
    double own_after = partition_backlog(&srv, own_p);
    printf("backlog after: shared partition %.0f, the other %.0f\n", shared_after, own_after);
    IT_CHECK(shared_after == shared_before);
    IT_CHECK(own_after == own_before + 50);

    /* They are all receivable (receives read the whole shard). */
    size_t got = 0;
    for (int i = 0; i < 10 && got < 50; i++) {
        r = it_call_as(&srv, key, secret, "ReceiveMessage",
                       json_pack("{s:s,s:i}", "QueueUrl", qurl, "MaxNumberOfMessages", 10));
        got += it_message_count(&r);
        it_reply_free(&r);
    }
    IT_CHECK(got == 50);
    free(qurl);
    stop(&srv, furl);
}

/* ---- back-pressure and limits.max_backlog -------------------------------- */

static const char backlog_yaml[] = "tenants:\n" ACME_KEYS "    limits:\n"
                                   "      requests_per_second: 0.001\n"
                                   "      burst: 100\n"
                                   "      max_backlog: 200\n";

/* Sends single messages as acme until the first refusal; how many passed
 * and the refusal (left in *r). */
static int send_until_refused(const struct it_server *s, const char *url, struct it_reply *r)
{
    for (int n = 0; n < 1000; n++) {
        *r = it_call(s, "SendMessage", json_pack("{s:s,s:s}", "QueueUrl", url, "MessageBody", "b"));
        if (r->status != 200) {
            return n;
        }
        it_reply_free(r);
    }
    return -1;
}

/* Fills acme's queue to total stored messages as the admin, who is not
 * counted against acme's rate. */
static void admin_fill(const struct it_server *s, const char *url, long long total)
{
    const char *q = "sluice_queue_ready_messages{tenant=\"" IT_TENANT "\",queue=\"deep\"}";
    long long have = (long long)it_metric(s, q);
    for (; have < total; have++) {
        struct it_reply r =
            it_call_as(s, IT_ADMIN_KEY, IT_ADMIN_SECRET, "SendMessage",
                       json_pack("{s:s,s:s}", "QueueUrl", url, "MessageBody", "admin"));
        IT_OK(&r);
        it_reply_free(&r);
    }
    IT_CHECK(it_metric(s, q) == (double)total);
}

static void backpressure(void)
{
    /* Under the soft bound (half of max_backlog) a send costs one token:
     * 11 with the CreateQueue. */
    struct it_server srv;
    char *url = start_with_queue(&srv, backlog_yaml, "deep", 10);
    const char *tokens = "sluice_tenant_rate_tokens_available{tenant=\"" IT_TENANT "\"}";
    IT_CHECK(it_metric(&srv, tokens) == 89);
    /* At 150 of 200 each send takes at least twice its token's time:
     * the 89 tokens left pass fewer than half as many sends. */
    admin_fill(&srv, url, 150);
    struct it_reply r;
    int slowed = send_until_refused(&srv, url, &r);
    printf("back-pressure: %d sends passed on 89 tokens from a backlog of 150\n", slowed);
    IT_CHECK(slowed >= 10 && slowed <= 44);
    IT_ERR(&r, 403, "RequestThrottled", "RequestThrottled", "Rate exceeded for tenant acme.");
    it_reply_free(&r);
    /* At max_backlog: refused for the backlog, nothing stored. */
    admin_fill(&srv, url, 200);
    r = it_call(&srv, "SendMessage", json_pack("{s:s,s:s}", "QueueUrl", url, "MessageBody", "x"));
    IT_ERR(&r, 403, "RequestThrottled", "RequestThrottled",
           "Tenant acme has reached its backlog limit of 200 stored messages.");
    it_reply_free(&r);
    IT_CHECK(it_metric(&srv, "sluice_queue_ready_messages{tenant=\"" IT_TENANT
                             "\",queue=\"deep\"}") == 200);
    stop(&srv, url);
}

/* ---- limits.max_inflight -------------------------------------------------- */

static const char inflight_yaml[] = "tenants:\n" ACME_KEYS "    limits:\n"
                                    "      max_inflight: 5\n";

static void inflight_cap(void)
{
    struct it_server srv;
    char *url = start_with_queue(&srv, inflight_yaml, "busy", 8);
    json_t *ten = json_pack("{s:i,s:i}", "MaxNumberOfMessages", 10, "VisibilityTimeout", 300);
    struct it_reply r = it_receive(&srv, url, ten);
    IT_CHECK(it_message_count(&r) == 5); /* cut to the room left */
    char handle[1024] = "";
    json_t *m = json_array_get(it_messages(&r), 0);
    if (m != NULL && it_jstr(m, "ReceiptHandle") != NULL) {
        snprintf(handle, sizeof handle, "%s", it_jstr(m, "ReceiptHandle"));
    }
    it_reply_free(&r);
    r = it_receive(&srv, url, NULL);
    IT_ERR(&r, 403, "OverLimit", "OverLimit",
           "Tenant acme is at its limit of 5 in-flight messages.");
    it_reply_free(&r);
    /* A delete makes room for one. */
    r = it_call(&srv, "DeleteMessage",
                json_pack("{s:s,s:s}", "QueueUrl", url, "ReceiptHandle", handle));
    IT_OK(&r);
    it_reply_free(&r);
    r = it_receive(&srv, url,
                   json_pack("{s:i,s:i}", "MaxNumberOfMessages", 10, "VisibilityTimeout", 300));
    IT_CHECK(it_message_count(&r) == 1);
    it_reply_free(&r);
    stop(&srv, url);
}

/* ---- limits.max_long_polls ------------------------------------------------ */

static const char long_polls_yaml[] = "tenants:\n" ACME_KEYS "    limits:\n"
                                      "      max_long_polls: 1\n";

static void long_poll_cap(void)
{
    struct it_server srv;
    char *url = start_with_queue(&srv, long_polls_yaml, "idle", 0);
    struct poll_call first = {.s = &srv, .url = url, .wait_s = 8};
    pthread_t th;
    IT_REQUIRE(pthread_create(&th, NULL, long_poll, &first) == 0);
    const char *gauge = "sluice_tenant_long_polls{tenant=\"" IT_TENANT "\"}";
    IT_CHECK(wait_metric(&srv, gauge, 1) == 1);
    /* The second asks to wait 8 s too, and is answered as a short poll. */
    struct poll_call second = {.s = &srv, .url = url, .wait_s = 8};
    long_poll(&second);
    IT_OK(&second.r);
    IT_CHECK(it_message_count(&second.r) == 0);
    printf("the excess long poll took %.2f s of its 8\n", second.took_s);
    IT_CHECK(second.took_s < 4.0);
    it_reply_free(&second.r);
    IT_CHECK(it_metric(&srv, gauge) == 1);
    /* The first still waits: a send wakes it. */
    free(it_send(&srv, url, "wake"));
    pthread_join(th, NULL);
    IT_OK(&first.r);
    IT_CHECK(it_message_count(&first.r) == 1);
    it_reply_free(&first.r);
    IT_CHECK(wait_metric(&srv, gauge, 0) == 0);
    stop(&srv, url);
}

/* ---- spill.aged_after_seconds --------------------------------------------- */

static const char aging_yaml[] = "tenants:\n" ACME_KEYS "    spill:\n"
                                 "      aged_after_seconds: 1\n";

static void aging(void)
{
    struct it_server srv;
    char *url = start_with_queue(&srv, aging_yaml, "old", 3);
    IT_CHECK(wait_metric(&srv, "sluice_aged_messages_total{tenant=\"" IT_TENANT "\"}", 3) == 3);
    IT_CHECK(it_metric(&srv, "sluice_queue_overflow_messages{tenant=\"" IT_TENANT
                             "\",queue=\"old\"}") == 3);
    /* Sidelined, not lost: still ready and receivable. */
    IT_CHECK(it_queue_attr_int(&srv, url, "ApproximateNumberOfMessages") == 3);
    struct it_reply r = it_receive(&srv, url, json_pack("{s:i}", "MaxNumberOfMessages", 10));
    IT_CHECK(it_message_count(&r) == 3);
    it_reply_free(&r);
    stop(&srv, url);
}

/* ---- the Builders' Library's metrics -------------------------------------- */

static void metrics_from_outside(void)
{
    struct it_server srv;
    char *url = start_with_queue(&srv, NULL, "watched", 0);
    const char *empty =
        "sluice_queue_empty_receives_total{tenant=\"" IT_TENANT "\",queue=\"watched\"}";
    IT_CHECK(it_metric(&srv, empty) == 0);
    struct it_reply r = it_receive(&srv, url, NULL);
    IT_CHECK(r.status == 200 && it_message_count(&r) == 0);
    it_reply_free(&r);
    r = it_receive(&srv, url, json_pack("{s:i}", "WaitTimeSeconds", 1));
    IT_CHECK(r.status == 200 && it_message_count(&r) == 0);
    it_reply_free(&r);
    IT_CHECK(it_metric(&srv, empty) == 2);

    /* The oldest message's age, against the client's clock: the message
     * was sent between before and after, the gauge read after that. */
    long long before = it_now_ms();
    char *id = it_send(&srv, url, "aging");
    long long after = it_now_ms();
    IT_CHECK(id != NULL);
    free(id);
    it_sleep_ms(2500);
    long long read_at = it_now_ms();
    double age = it_metric(&srv, "sluice_queue_oldest_message_age_seconds{tenant=\"" IT_TENANT
                                 "\",queue=\"watched\"}");
    double lo = (double)(read_at - after) / 1000.0, hi = (double)(it_now_ms() - before) / 1000.0;
    printf("oldest message age %.3f s; the truth is between %.3f and %.3f s\n", age, lo, hi);
    IT_CHECK(age >= lo - 1.0 && age <= hi + 1.0 && age >= 2.0);

    /* AgeOfFirstAttempt through a real receive. */
    const char *count = "sluice_first_receive_age_seconds_count{tenant=\"" IT_TENANT "\"}";
    const char *sum = "sluice_first_receive_age_seconds_sum{tenant=\"" IT_TENANT "\"}";
    IT_CHECK(it_metric(&srv, count) == -1); /* no series before the first */
    long long recv_before = it_now_ms();
    r = it_receive(&srv, url, NULL);
    long long recv_after = it_now_ms();
    IT_CHECK(it_message_count(&r) == 1);
    it_reply_free(&r);
    IT_CHECK(it_metric(&srv, count) == 1);
    double first = it_metric(&srv, sum);
    lo = (double)(recv_before - after) / 1000.0;
    hi = (double)(recv_after - before) / 1000.0;
    printf("AgeOfFirstAttempt %.3f s; the truth is between %.3f and %.3f s\n", first, lo, hi);
    IT_CHECK(first >= lo - 1.0 && first <= hi + 1.0);
    IT_CHECK(it_metric(&srv, empty) == 2); /* that receive was not empty */

    /* Every job of acme that reached a writer was counted: the send and
     * the receive that leased it. The empty receives found nothing ready
     * in the counters and never went to a writer. */
    IT_CHECK(it_metric(&srv, "sluice_writer_queue_wait_seconds_count{tenant=\"" IT_TENANT "\"}") ==
             2);
    stop(&srv, url);
}

int main(void)
{
    concurrency_cap();
    least_loaded_send();
    backpressure();
    inflight_cap();
    long_poll_cap();
    aging();
    metrics_from_outside();
    return it_summary();
}
