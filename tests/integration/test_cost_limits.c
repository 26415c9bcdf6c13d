/*
 * test_cost_limits.c -- expensive requests are refused before they cost
 * the gateway, and every authenticated request costs its tenant a token,
 * against the real sluiced over HTTP/2:
 *  - SQS's tag limits (50 per queue after a merge, keys of 1..128
 *    characters without "aws:", values of at most 256) and the 8,192-byte
 *    Policy, with nothing stored when refused;
 *  - a body larger than its action can need (a DeleteMessageBatch of
 *    600,000 entries) answers 413 before it is parsed;
 *  - malformed and oversized requests each cost a token (throttled ones
 *    cost none, docs/policy.md): a tenant with a burst of 5 that spends
 *    it on refused requests is throttled on its next good one;
 *  - a tenant that owes a whole burst is refused before its body is
 *    parsed: a malformed body then answers RequestThrottled, not a
 *    serialization error;
 *  - limits.max_queues bounds a tenant's queues (OverLimit).
 * Rates are 0.001/s, so nothing depends on timing. Prints "N passed, N
 * failed".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "it_harness.h"
#include "it_sqs.h"

#define CHEAP_KEY "AKIDCHEAP"
#define CHEAP_SECRET "cheap-secret"
#define DEBT_KEY "AKIDDEBT"
#define DEBT_SECRET "debt-secret"
#define FEW_KEY "AKIDFEW"
#define FEW_SECRET "few-secret"

static const char tenants_yaml[] = "tenants:\n"
                                   "  " IT_TENANT ":\n"
                                   "    access_key_id: " IT_KEY "\n"
                                   "    secret_access_key: " IT_SECRET "\n"
                                   "  cheap:\n"
                                   "    access_key_id: " CHEAP_KEY "\n"
                                   "    secret_access_key: " CHEAP_SECRET "\n"
                                   "    limits:\n"
                                   "      requests_per_second: 0.001\n"
                                   "      burst: 5\n"
                                   "  debt:\n"
                                   "    access_key_id: " DEBT_KEY "\n"
                                   "    secret_access_key: " DEBT_SECRET "\n"
                                   "    limits:\n"
                                   "      requests_per_second: 0.001\n"
                                   "      burst: 2\n"
                                   "  few:\n"
                                   "    access_key_id: " FEW_KEY "\n"
                                   "    secret_access_key: " FEW_SECRET "\n"
                                   "    limits:\n"
                                   "      max_queues: 2\n";

static struct it_server srv;

/* A raw JSON body as another tenant; returns the HTTP status and copies
 * the x-amzn-query-error code (before ';') into code. */
static long raw_call(const char *key, const char *secret, const char *action, const char *json,
                     char *code, size_t cap)
{
    struct it_response r;
    IT_CHECK(it_sqs(&srv, action, json, key, secret, &r) == 0);
    code[0] = '\0';
    char qe[256];
    if (it_response_header(&r, "x-amzn-query-error", qe, sizeof(qe))) {
        size_t n = strcspn(qe, ";");
        snprintf(code, cap, "%.*s", (int)n, qe);
    }
    long status = r.status;
    it_response_free(&r);
    return status;
}

static json_t *tags_object(int first, int n)
{
    json_t *t = json_object();
    for (int i = first; i < first + n; i++) {
        char k[32];
        snprintf(k, sizeof(k), "key%d", i);
        json_object_set_new(t, k, json_string("v"));
    }
    return t;
}

static size_t tag_count(const char *url)
{
    struct it_reply r = it_call(&srv, "ListQueueTags", json_pack("{s:s}", "QueueUrl", url));
    IT_OK(&r);
    json_t *tags = r.json != NULL ? json_object_get(r.json, "Tags") : NULL;
    size_t n = tags != NULL ? json_object_size(tags) : 0;
    it_reply_free(&r);
    return n;
}

static void tag_limits(void)
{
    char *url = it_create_queue(&srv, "tagged", NULL);
    IT_REQUIRE(url != NULL);

    /* 51 in one call: refused whole, nothing stored. */
    struct it_reply r = it_call(
        &srv, "TagQueue", json_pack("{s:s, s:o}", "QueueUrl", url, "Tags", tags_object(0, 51)));
    IT_ERR(&r, 400, "InvalidParameterValue", "InvalidParameterValueException", NULL);
    it_reply_free(&r);
    IT_CHECK(tag_count(url) == 0);

    /* 30, then 25 more of which 5 overwrite: 50 in all, accepted. */
    r = it_call(&srv, "TagQueue",
                json_pack("{s:s, s:o}", "QueueUrl", url, "Tags", tags_object(0, 30)));
    IT_OK(&r);
    it_reply_free(&r);
    r = it_call(&srv, "TagQueue",
                json_pack("{s:s, s:o}", "QueueUrl", url, "Tags", tags_object(25, 25)));
    IT_OK(&r);
    it_reply_free(&r);
    IT_CHECK(tag_count(url) == 50);

    /* One more new key would make 51. */
    r = it_call(&srv, "TagQueue",
                json_pack("{s:s, s:{s:s}}", "QueueUrl", url, "Tags", "extra", "v"));
    IT_ERR(&r, 400, "InvalidParameterValue", "InvalidParameterValueException",
           "Too many tags: a queue has at most 50 tags.");
    it_reply_free(&r);
    IT_CHECK(tag_count(url) == 50);

    /* Key and value lengths count characters; "aws:" is reserved. */
    char key129[130], value257[258];
    memset(key129, 'k', 129);
    key129[129] = '\0';
    memset(value257, 'v', 257);
    value257[257] = '\0';
    const char *bad_keys[] = {key129, "aws:owner", ""};
    for (size_t i = 0; i < sizeof(bad_keys) / sizeof(bad_keys[0]); i++) {
        r = it_call(&srv, "CreateQueue",
                    json_pack("{s:s, s:{s:s}}", "QueueName", "tag-keys", "tags", bad_keys[i], "v"));
        IT_ERR(&r, 400, "InvalidParameterValue", "InvalidParameterValueException", NULL);
        it_reply_free(&r);
    }
    r = it_call(&srv, "TagQueue",
                json_pack("{s:s, s:{s:s}}", "QueueUrl", url, "Tags", "key0", value257));
    IT_ERR(&r, 400, "InvalidParameterValue", "InvalidParameterValueException",
           "Tag values must be at most 256 characters in length.");
    it_reply_free(&r);
    /* 128 characters of three bytes each are still 128 characters. */
    char key128[128 * 3 + 1] = "";
    for (size_t i = 0; i < 128; i++)
        snprintf(key128 + 3 * i, sizeof key128 - 3 * i, "%s", "\xe2\x82\xac"); /* U+20AC */
    r = it_call(&srv, "TagQueue",
                json_pack("{s:s, s:{s:s}}", "QueueUrl", url, "Tags", key128, "v"));
    IT_ERR(&r, 400, "InvalidParameterValue", "InvalidParameterValueException",
           "Too many tags: a queue has at most 50 tags.");
    it_reply_free(&r);
    r = it_call(&srv, "GetQueueUrl", json_pack("{s:s}", "QueueName", "tag-keys"));
    IT_ERR(&r, 400, "AWS.SimpleQueueService.NonExistentQueue", "QueueDoesNotExist", NULL);
    it_reply_free(&r);
    free(url);
}

static void policy_limit(void)
{
    char *url = it_create_queue(&srv, "policed", NULL);
    IT_REQUIRE(url != NULL);
    /* A valid JSON object of 8,193 bytes. */
    size_t n = 8193;
    char *policy = malloc(n + 1);
    memcpy(policy, "{\"Version\":\"", 12);
    memset(policy + 12, 'x', n - 14);
    memcpy(policy + n - 2, "\"}", 2);
    policy[n] = '\0';
    struct it_reply r =
        it_call(&srv, "SetQueueAttributes",
                json_pack("{s:s, s:{s:s}}", "QueueUrl", url, "Attributes", "Policy", policy));
    IT_ERR(&r, 400, "InvalidAttributeValue", "InvalidAttributeValue", NULL);
    it_reply_free(&r);
    r = it_call(&srv, "GetQueueAttributes",
                json_pack("{s:s, s:[s]}", "QueueUrl", url, "AttributeNames", "Policy"));
    IT_OK(&r);
    json_t *attrs = r.json != NULL ? json_object_get(r.json, "Attributes") : NULL;
    IT_CHECK(attrs == NULL || json_object_get(attrs, "Policy") == NULL);
    it_reply_free(&r);
    /* One byte less is a policy SQS takes. */
    policy[n - 3] = '"';
    policy[n - 2] = '}';
    policy[n - 1] = '\0';
    r = it_call(&srv, "SetQueueAttributes",
                json_pack("{s:s, s:{s:s}}", "QueueUrl", url, "Attributes", "Policy", policy));
    IT_OK(&r);
    it_reply_free(&r);
    free(policy);
    free(url);
}

/* A body of 600,000 batch entries (1.8 MB), within the protocol layer's
 * cap but far beyond what ten entries need. */
static char *huge_delete_batch(const char *url)
{
    size_t cap = (size_t)2 * 1024 * 1024;
    char *b = malloc(cap);
    int n = snprintf(b, cap, "{\"QueueUrl\":\"%s\",\"Entries\":[", url);
    size_t len = (size_t)n;
    for (int i = 0; i < 600000 && len + 8 < cap; i++) {
        memcpy(b + len, i == 0 ? "{}" : ",{}", i == 0 ? 2 : 3);
        len += i == 0 ? 2 : 3;
    }
    memcpy(b + len, "]}", 3);
    return b;
}

static void refused_requests_cost_tokens(void)
{
    char code[128];
    /* 1 token: the queue. */
    IT_CHECK(raw_call(CHEAP_KEY, CHEAP_SECRET, "CreateQueue", "{\"QueueName\":\"c\"}", code,
                      sizeof(code)) == 200);
    char url[128];
    snprintf(url, sizeof(url), "%s/cheap/c", srv.base_url);
    /* 2: malformed JSON. */
    IT_CHECK(raw_call(CHEAP_KEY, CHEAP_SECRET, "ListQueues", "{not json", code, sizeof(code)) ==
             400);
    /* 3: too large for its action, refused before it is parsed. */
    char *huge = huge_delete_batch(url);
    IT_CHECK(raw_call(CHEAP_KEY, CHEAP_SECRET, "DeleteMessageBatch", huge, code, sizeof(code)) ==
             413);
    IT_STREQ(code, "RequestEntityTooLarge");
    free(huge);
    /* 4: a queue the tenant does not have. */
    IT_CHECK(raw_call(CHEAP_KEY, CHEAP_SECRET, "GetQueueAttributes",
                      "{\"QueueUrl\":\"http://x/cheap/none\"}", code, sizeof(code)) == 400);
    /* 5: the last token, on a good request. */
    IT_CHECK(raw_call(CHEAP_KEY, CHEAP_SECRET, "ListQueues", "{}", code, sizeof(code)) == 200);
    /* The burst is spent: the next good request is throttled. */
    IT_CHECK(raw_call(CHEAP_KEY, CHEAP_SECRET, "ListQueues", "{}", code, sizeof(code)) == 403);
    IT_STREQ(code, "RequestThrottled");
    /* Another tenant is not affected. */
    struct it_reply r = it_call(&srv, "ListQueues", NULL);
    IT_OK(&r);
    it_reply_free(&r);
}

static void debt_is_refused_before_parsing(void)
{
    char code[128];
    /* burst 2: two malformed requests spend it, two throttled ones owe a
     * burst... */
    for (int i = 0; i < 4; i++) {
        long status =
            raw_call(DEBT_KEY, DEBT_SECRET, "ListQueues", "{not json", code, sizeof(code));
        IT_CHECK(status == 400 || status == 403);
    }
    /* ...from then on the body is not even parsed, and the answer says
     * how long the debt takes to fall under a burst: one token at 0.001
     * a second. */
    struct it_response r;
    IT_CHECK(it_sqs(&srv, "ListQueues", "{not json", DEBT_KEY, DEBT_SECRET, &r) == 0);
    IT_CHECK(r.status == 403);
    char v[64] = "";
    IT_CHECK(it_response_header(&r, "x-amzn-query-error", v, sizeof(v)) &&
             strncmp(v, "RequestThrottled;", 17) == 0);
    IT_CHECK(it_response_header(&r, "retry-after", v, sizeof(v)));
    long wait_s = strtol(v, NULL, 10);
    IT_CHECK(wait_s > 900 && wait_s <= 1000);
    it_response_free(&r);
    IT_CHECK(it_healthz(&srv));
}

/* limits.max_queues bounds a tenant's catalogue; an existing queue can
 * still be "created" again (CreateQueue is idempotent), and deleting one
 * makes room. */
static void queue_cap(void)
{
    char code[128];
    IT_CHECK(raw_call(FEW_KEY, FEW_SECRET, "CreateQueue", "{\"QueueName\":\"a\"}", code,
                      sizeof(code)) == 200);
    IT_CHECK(raw_call(FEW_KEY, FEW_SECRET, "CreateQueue", "{\"QueueName\":\"b\"}", code,
                      sizeof(code)) == 200);
    IT_CHECK(raw_call(FEW_KEY, FEW_SECRET, "CreateQueue", "{\"QueueName\":\"c\"}", code,
                      sizeof(code)) == 403);
    IT_STREQ(code, "OverLimit");
    IT_CHECK(raw_call(FEW_KEY, FEW_SECRET, "CreateQueue", "{\"QueueName\":\"a\"}", code,
                      sizeof(code)) == 200);
    char body[160];
    snprintf(body, sizeof(body), "{\"QueueUrl\":\"%s/few/b\"}", srv.base_url);
    IT_CHECK(raw_call(FEW_KEY, FEW_SECRET, "DeleteQueue", body, code, sizeof(code)) == 200);
    IT_CHECK(raw_call(FEW_KEY, FEW_SECRET, "CreateQueue", "{\"QueueName\":\"c\"}", code,
                      sizeof(code)) == 200);
}

int main(void)
{
    struct it_options opt = {.tenants_yaml = tenants_yaml};
    IT_REQUIRE(it_server_start(&srv, &opt) == 0);
    tag_limits();
    policy_limit();
    refused_requests_cost_tokens();
    debt_is_refused_before_parsing();
    queue_cap();
    IT_CHECK(it_server_stop(&srv) == 0);
    it_server_cleanup(&srv);
    return it_summary();
}
