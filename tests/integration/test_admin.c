/*
 * test_admin.c -- the admin listener against the real sluiced over HTTP/2:
 *  - GET /healthz answers without credentials;
 *  - /metrics and /tenants refuse no credentials (401), a tenant's SigV4
 *    key, a wrong bearer token (403), and accept the admin's SigV4
 *    signature and the configured bearer token;
 *  - after a few SQS calls by two tenants, /metrics counts them by
 *    tenant, action and outcome (including one RequestThrottled and one
 *    NonExistentQueue), shows the queue gauges and the partitions' commits,
 *    and every line has the exposition format's shape;
 *  - /tenants shows each tenant's effective limits and usage, and its
 *    shard: the partitions pol_shard_place gives under the deployment key
 *    the engine wrote into data_dir/manifest (P = 2, k = 1 here).
 *
 * The throttled tenant has requests_per_second 0.001 and burst 2: its
 * CreateQueue takes one token (every action costs one), its first send
 * the other, and the second send is refused however slow
 * the machine is (a refill takes 1000 s), so nothing depends on timing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <string.h>

#include "it_sqs.h"
#include "pol.h"

#define TOKEN "metrics-token_1"
#define TINY_KEY "AKIDTINY"
#define TINY_SECRET "tiny-secret"

static const char tenants_yaml[] = IT_TENANTS_YAML_WITH_TOKEN(TOKEN) /* acme, and: */
    "  tiny:\n"
    "    access_key_id: " TINY_KEY "\n"
    "    secret_access_key: " TINY_SECRET "\n"
    "    limits:\n"
    "      requests_per_second: 0.001\n"
    "      burst: 2\n"
    "      max_long_polls: 3\n"
    "      max_concurrent_requests: 7\n";

static struct it_server srv;

/* One GET on the admin listener as call says (its method is GET); an
 * answer must come. */
static struct it_response admin_get(const struct it_admin_call *call)
{
    struct it_response r;
    IT_CHECK(it_admin_request(&srv, call, &r) == 0);
    return r;
}

static bool has_line(const char *body, const char *line)
{
    size_t n = strlen(line);
    for (const char *p = body; (p = strstr(p, line)) != NULL; p++) {
        if ((p == body || p[-1] == '\n') && (p[n] == '\n' || p[n] == '\0')) {
            return true;
        }
    }
    fprintf(stderr, "missing metrics line: %s\n", line);
    return false;
}

/* The value of the first sample whose line starts with prefix, or -1. */
static double sample_value(const char *body, const char *prefix)
{
    size_t n = strlen(prefix);
    for (const char *p = body; p != NULL && *p != '\0'; p = strchr(p, '\n'), p = p ? p + 1 : p) {
        if (strncmp(p, prefix, n) == 0 && p[n] == ' ') {
            return strtod(p + n + 1, NULL);
        }
    }
    return -1;
}

/* Every line is a comment (# HELP / # TYPE) or "name[{labels}] value". */
static bool lines_well_formed(const char *body)
{
    const char *p = body;
    while (*p != '\0') {
        const char *end = strchr(p, '\n');
        if (end == NULL) {
            return false; /* the exposition ends with a newline */
        }
        if (*p == '#') {
            if (strncmp(p, "# HELP ", 7) != 0 && strncmp(p, "# TYPE ", 7) != 0) {
                return false;
            }
        } else {
            const char *sp = end;
            while (sp > p && sp[-1] != ' ') {
                sp--;
            }
            char *num_end = NULL;
            strtod(sp, &num_end);
            if (sp == p || num_end != end || strncmp(p, "sluice_", 7) != 0) {
                fprintf(stderr, "bad metrics line: %.*s\n", (int)(end - p), p);
                return false;
            }
        }
        p = end + 1;
    }
    return true;
}

static void check_refusals(void)
{
    struct it_response r = admin_get(&(struct it_admin_call){.path = "/healthz"});
    IT_CHECK(r.status == 200 && strcmp(r.body, "ok") == 0);
    it_response_free(&r);

    r = admin_get(&(struct it_admin_call){.path = "/metrics"});
    IT_CHECK(r.status == 401);
    IT_CHECK(strstr(r.body, "\"error\"") != NULL && strstr(r.body, "sluice_") == NULL);
    it_response_free(&r);

    /* a tenant's own valid signature */
    r = admin_get(&(struct it_admin_call){.path = "/tenants", .key = IT_KEY, .secret = IT_SECRET});
    IT_CHECK(r.status == 403);
    IT_CHECK(strstr(r.body, "AccessDenied") != NULL);
    it_response_free(&r);

    r = admin_get(&(struct it_admin_call){
        .path = "/metrics", .key = IT_ADMIN_KEY, .secret = "not-the-secret"});
    IT_CHECK(r.status == 403);
    it_response_free(&r);

    r = admin_get(&(struct it_admin_call){.path = "/metrics", .token = TOKEN "x"});
    IT_CHECK(r.status == 403);
    it_response_free(&r);

    r = admin_get(
        &(struct it_admin_call){.path = "/metrics", .authorization = "Basic YWRtaW46YWRtaW4="});
    IT_CHECK(r.status == 401);
    it_response_free(&r);

    r = admin_get(&(struct it_admin_call){.path = "/nothing", .token = TOKEN});
    IT_CHECK(r.status == 404);
    it_response_free(&r);
}

/* The SQS calls the metrics must show. */
static void make_traffic(void)
{
    char *url = it_create_queue(&srv, "orders", NULL);
    IT_REQUIRE(url != NULL);
    free(it_send(&srv, url, "one"));
    free(it_send(&srv, url, "two"));
    struct it_reply r = it_receive(&srv, url, json_pack("{s:i}", "MaxNumberOfMessages", 1));
    IT_CHECK(it_message_count(&r) == 1);
    it_reply_free(&r);
    r = it_call(&srv, "GetQueueUrl", json_pack("{s:s}", "QueueName", "missing"));
    IT_CHECK(r.status == 400);
    it_reply_free(&r);
    free(url);

    r = it_call_as(&srv, TINY_KEY, TINY_SECRET, "CreateQueue",
                   json_pack("{s:s}", "QueueName", "small"));
    IT_OK(&r);
    char *tiny_url = strdup(it_str(&r, "QueueUrl") != NULL ? it_str(&r, "QueueUrl") : "");
    it_reply_free(&r);
    for (int i = 0; i < 2; i++) {
        r = it_call_as(&srv, TINY_KEY, TINY_SECRET, "SendMessage",
                       json_pack("{s:s, s:s}", "QueueUrl", tiny_url, "MessageBody", "x"));
        if (i == 0) {
            IT_OK(&r);
        } else {
            IT_ERR(&r, 403, "RequestThrottled", "RequestThrottled", NULL);
        }
        it_reply_free(&r);
    }
    free(tiny_url);
}

static void check_metrics(const struct it_response *r)
{
    IT_CHECK(r->status == 200);
    IT_CHECK(lines_well_formed(r->body));
    const char *b = r->body;
    IT_CHECK(has_line(b, "# TYPE sluice_requests_total counter"));
    IT_CHECK(has_line(b, "sluice_requests_total{tenant=\"acme\",action=\"CreateQueue\","
                         "outcome=\"ok\"} 1"));
    IT_CHECK(has_line(b, "sluice_requests_total{tenant=\"acme\",action=\"SendMessage\","
                         "outcome=\"ok\"} 2"));
    IT_CHECK(has_line(b, "sluice_requests_total{tenant=\"acme\",action=\"ReceiveMessage\","
                         "outcome=\"ok\"} 1"));
    IT_CHECK(has_line(b, "sluice_requests_total{tenant=\"acme\",action=\"GetQueueUrl\","
                         "outcome=\"AWS.SimpleQueueService.NonExistentQueue\"} 1"));
    IT_CHECK(has_line(b, "sluice_requests_total{tenant=\"tiny\",action=\"SendMessage\","
                         "outcome=\"ok\"} 1"));
    IT_CHECK(has_line(b, "sluice_requests_total{tenant=\"tiny\",action=\"SendMessage\","
                         "outcome=\"RequestThrottled\"} 1"));
    IT_CHECK(has_line(b, "sluice_queue_requests_total{tenant=\"acme\",queue=\"orders\","
                         "action=\"SendMessage\",outcome=\"ok\"} 2"));
    IT_CHECK(has_line(b, "sluice_queue_requests_total{tenant=\"acme\",queue=\"orders\","
                         "action=\"ReceiveMessage\",outcome=\"ok\"} 1"));
    IT_CHECK(has_line(b, "sluice_queue_requests_total{tenant=\"tiny\",queue=\"small\","
                         "action=\"SendMessage\",outcome=\"throttled\"} 1"));
    IT_CHECK(strstr(b, "queue=\"missing\"") == NULL); /* never a queue */
    IT_CHECK(has_line(b, "sluice_throttled_requests_total{tenant=\"tiny\"} 1"));
    IT_CHECK(has_line(b, "sluice_throttled_requests_total{tenant=\"acme\"} 0"));
    IT_CHECK(has_line(b, "sluice_request_duration_seconds_count{action=\"SendMessage\"} 4"));
    IT_CHECK(has_line(b, "sluice_queue_ready_messages{tenant=\"acme\",queue=\"orders\"} 1"));
    IT_CHECK(has_line(b, "sluice_queue_inflight_messages{tenant=\"acme\",queue=\"orders\"} 1"));
    IT_CHECK(has_line(b, "sluice_queue_ready_messages{tenant=\"tiny\",queue=\"small\"} 1"));
    IT_CHECK(has_line(b, "sluice_tenant_backlog_messages{tenant=\"acme\"} 1"));
    IT_CHECK(has_line(b, "sluice_tenant_inflight_messages{tenant=\"acme\"} 1"));
    IT_CHECK(has_line(b, "sluice_tenant_rate_tokens_available{tenant=\"tiny\"} 0"));
    double commits = sample_value(b, "sluice_partition_commits_total{partition=\"0\"}") +
                     sample_value(b, "sluice_partition_commits_total{partition=\"1\"}");
    IT_CHECK(commits >= 3); /* at least the three accepted sends and the receive */
    IT_CHECK(sample_value(b, "sluice_partition_failed{partition=\"0\"}") == 0);
    /* what policy did: nothing spilled, aged, expired or dead-lettered yet */
    IT_CHECK(has_line(b, "sluice_queue_overflow_messages{tenant=\"acme\",queue=\"orders\"} 0"));
    IT_CHECK(has_line(b, "sluice_expired_messages_total{tenant=\"acme\"} 0"));
    IT_CHECK(has_line(b, "sluice_aged_messages_total{tenant=\"acme\"} 0"));
    IT_CHECK(has_line(b, "sluice_dead_lettered_messages_total{tenant=\"acme\"} 0"));
    IT_CHECK(has_line(b, "# TYPE sluice_queue_oldest_message_age_seconds gauge"));
    double age =
        sample_value(b, "sluice_queue_oldest_message_age_seconds{tenant=\"tiny\",queue=\"small\"}");
    IT_CHECK(age >= 0 && age < 3600); /* one ready message, sent during this test */
}

static const json_t *find_tenant(const json_t *root, const char *name)
{
    size_t i;
    const json_t *t;
    json_array_foreach(json_object_get(root, "tenants"), i, t)
    {
        if (strcmp(it_jstr(t, "name") != NULL ? it_jstr(t, "name") : "", name) == 0) {
            return t;
        }
    }
    return NULL;
}

static json_int_t member_int(const json_t *t, const char *obj, const char *key)
{
    return json_integer_value(json_object_get(json_object_get(t, obj), key));
}

/* The deployment key from data_dir/manifest ("... key HEX" on its last
 * line); false when it cannot be read. */
static bool manifest_key(uint8_t key[32])
{
    char path[400];
    snprintf(path, sizeof path, "%s/manifest", srv.data_dir);
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        return false;
    }
    char hex[80] = "";
    char line[160];
    while (fgets(line, sizeof line, f) != NULL) {
        sscanf(line, "key %79s", hex);
    }
    fclose(f);
    if (strlen(hex) != 64) {
        return false;
    }
    for (int i = 0; i < 32; i++) {
        unsigned byte;
        if (sscanf(hex + 2 * (size_t)i, "%2x", &byte) != 1) {
            return false;
        }
        key[i] = (uint8_t)byte;
    }
    return true;
}

static void check_partitions(const json_t *tenant, const char *name, const uint8_t key[32])
{
    uint32_t want;
    IT_REQUIRE(pol_shard_place(key, 32, name, strlen(name), 2, 1, &want) == 0);
    const json_t *got = json_object_get(tenant, "partitions");
    IT_CHECK(json_array_size(got) == 1);
    IT_CHECK(json_integer_value(json_array_get(got, 0)) == (json_int_t)want);
}

static void check_tenants(void)
{
    struct it_response r = admin_get(&(struct it_admin_call){.path = "/tenants", .token = TOKEN});
    IT_CHECK(r.status == 200);
    json_t *root = json_loads(r.body != NULL ? r.body : "", 0, NULL);
    IT_REQUIRE(root != NULL);
    const json_t *tiny = find_tenant(root, "tiny");
    const json_t *acme = find_tenant(root, IT_TENANT);
    IT_REQUIRE(tiny != NULL && acme != NULL);
    IT_CHECK(json_real_value(
                 json_object_get(json_object_get(tiny, "limits"), "requests_per_second")) == 0.001);
    IT_CHECK(member_int(tiny, "limits", "burst") == 2);
    IT_CHECK(member_int(tiny, "limits", "max_long_polls") == 3);
    IT_CHECK(member_int(tiny, "limits", "max_concurrent_requests") == 7);
    IT_CHECK(member_int(acme, "limits", "max_concurrent_requests") == 2000);
    /* the admin's own request is not the tenant's */
    IT_CHECK(
        json_is_integer(json_object_get(json_object_get(acme, "usage"), "requests_in_progress")));
    IT_CHECK(member_int(acme, "usage", "requests_in_progress") == 0);
    IT_CHECK(member_int(tiny, "usage", "tokens_available") == 0);
    IT_CHECK(member_int(tiny, "usage", "backlog") == 1);
    IT_STREQ(it_jstr(tiny, "on_excess"), "reject");
    IT_CHECK(member_int(acme, "usage", "backlog") == 1);
    IT_CHECK(member_int(acme, "usage", "inflight") == 1);
    IT_CHECK(member_int(acme, "usage", "long_polls") == 0);
    IT_CHECK(json_object_get(acme, "spill") != NULL);
    uint8_t key[32];
    IT_REQUIRE(manifest_key(key));
    check_partitions(tiny, "tiny", key);
    check_partitions(acme, IT_TENANT, key);
    json_decref(root);
    it_response_free(&r);
}

/* Guessing the bearer token is rationed: after a burst of failures every
 * admin request is refused unchecked (429, Retry-After) until the budget
 * refills, /healthz stays open, and /metrics counts both. */
static void guessing_is_throttled(void)
{
    int refused = 0, throttled = 0;
    for (int i = 0; i < 80; i++) {
        struct it_response r =
            admin_get(&(struct it_admin_call){.path = "/metrics", .token = "wrong"});
        refused += r.status == 403;
        throttled += r.status == 429;
        it_response_free(&r);
    }
    /* the burst (50) less the earlier checks' failures, plus what refilled
     * meanwhile: more on a slow machine */
    IT_CHECK(refused >= 40);
    IT_CHECK(throttled > 0 && refused + throttled == 80);
    /* While rationed, even the right token is refused unchecked. A failure
     * comes back every 100 ms, so on a slow machine (a sanitizer build)
     * one may come back between the last refusal and this request, and
     * the token is then rightly checked: such a round proves nothing and
     * another is made. A server that checked the token first would never
     * answer it 429. */
    struct it_response r;
    bool shown = false;
    for (int round = 0; round < 20 && !shown; round++) {
        for (int i = 0; i < 100; i++) {
            r = admin_get(&(struct it_admin_call){.path = "/metrics", .token = "wrong"});
            bool is_429 = r.status == 429;
            it_response_free(&r);
            if (is_429) {
                break;
            }
        }
        r = admin_get(&(struct it_admin_call){.path = "/metrics", .token = TOKEN});
        if (r.status == 429) {
            char v[16];
            IT_CHECK(it_response_header(&r, "retry-after", v, sizeof(v)) && strcmp(v, "1") == 0);
            shown = true;
        } else {
            IT_CHECK(r.status == 200);
        }
        it_response_free(&r);
    }
    IT_CHECK(shown);
    IT_CHECK(it_healthz(&srv));

    struct timespec ts = {1, 500L * 1000 * 1000}; /* ten failures a second come back */
    nanosleep(&ts, NULL);
    r = admin_get(&(struct it_admin_call){.path = "/metrics", .token = TOKEN});
    IT_CHECK(r.status == 200);
    IT_CHECK(sample_value(r.body, "sluice_admin_auth_failures_total{outcome=\"throttled\"}") >=
             (double)throttled);
    IT_CHECK(sample_value(r.body, "sluice_admin_auth_failures_total{outcome=\"failed\"}") >=
             (double)refused);
    it_response_free(&r);
}

int main(void)
{
    struct it_options opt = {.admin = true, .tenants_yaml = tenants_yaml};
    IT_REQUIRE(it_server_start(&srv, &opt) == 0);

    check_refusals();
    make_traffic();

    struct it_response r = admin_get(&(struct it_admin_call){
        .path = "/metrics", .key = IT_ADMIN_KEY, .secret = IT_ADMIN_SECRET});
    check_metrics(&r);
    it_response_free(&r);
    r = admin_get(&(struct it_admin_call){.path = "/metrics", .token = TOKEN});
    check_metrics(&r);
    it_response_free(&r);
    check_tenants();
    guessing_is_throttled();

    IT_CHECK(it_server_stop(&srv) == 0);
    it_server_cleanup(&srv);
    return it_summary();
}
