/*
 * test_keyed_limits.c -- per-queue and per-action limits (limits.queues,
 * limits.actions) against the real sluiced over HTTP/2:
 *  - a queue hammered past its own limit answers RequestThrottled, stores
 *    nothing of the refused requests (a batch is refused whole), while
 *    another queue of the same tenant still takes every request;
 *  - an action past its limit is throttled while the tenant's other
 *    actions go on; a batch action shares its single form's key and costs
 *    one token per entry;
 *  - the admin's requests are not counted;
 *  - GET /tenants shows the per-queue and per-action limits and tokens;
 *  - SIGHUP changing them takes effect without a free burst: a larger
 *    burst on an empty bucket gives nothing, a smaller one clamps, a new
 *    key starts full, a removed key stops limiting.
 *
 * Every limited bucket refills at 0.001 tokens a second (one token per
 * 1000 s): what passes is exactly its burst, however slow the machine is,
 * and nothing depends on timing. The tenant's own bucket is wide.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "it_sqs.h"

#define SLOW "requests_per_second: 0.001"

/* acme with a wide bucket of its own; its queues: and actions: follow. */
#define ACME_HEAD                                                                                  \
    "tenants:\n"                                                                                   \
    "  " IT_TENANT ":\n"                                                                           \
    "    access_key_id: " IT_KEY "\n"                                                              \
    "    secret_access_key: " IT_SECRET "\n"                                                       \
    "    limits:\n"                                                                                \
    "      requests_per_second: 1000\n"                                                            \
    "      burst: 1000\n"

static const char tenants_before[] =
    ACME_HEAD "      queues:\n"
              "        hot: {" SLOW ", burst: 3}\n"
              "        cool: {" SLOW ", burst: 5}\n"
              "      actions:\n"
              "        ReceiveMessage: {" SLOW ", burst: 2}\n"
              "        ChangeMessageVisibility: {" SLOW ", burst: 3}\n";

/* hot: burst 3 -> 10 (it is empty: still nothing); cool: 5 -> 2 (4 left:
 * clamped to 2); fresh: new (full); ReceiveMessage: removed. */
static const char tenants_after[] =
    ACME_HEAD "      queues:\n"
              "        hot: {" SLOW ", burst: 10}\n"
              "        cool: {" SLOW ", burst: 2}\n"
              "        fresh: {" SLOW ", burst: 1}\n"
              "      actions:\n"
              "        ChangeMessageVisibility: {" SLOW ", burst: 3}\n";

static struct it_server srv;

static struct it_reply send_as(const char *key, const char *secret, const char *url,
                               const char *body)
{
    return it_call_as(&srv, key, secret, "SendMessage",
                      json_pack("{s:s, s:s}", "QueueUrl", url, "MessageBody", body));
}

/* Sends n messages as acme; returns how many were accepted. Every refusal
 * must be RequestThrottled with the message expected (NULL: any). */
static int send_n(const char *url, int n, const char *throttle_message)
{
    int ok = 0;
    for (int i = 0; i < n; i++) {
        struct it_reply r = send_as(IT_KEY, IT_SECRET, url, "m");
        if (r.status == 200) {
            ok++;
        } else {
            IT_ERR(&r, 403, "RequestThrottled", "RequestThrottled", throttle_message);
        }
        it_reply_free(&r);
    }
    return ok;
}

static struct it_reply send_batch(const char *url, int entries)
{
    json_t *list = json_array();
    for (int i = 0; i < entries; i++) {
        char id[16];
        snprintf(id, sizeof(id), "e%d", i);
        json_array_append_new(list, json_pack("{s:s, s:s}", "Id", id, "MessageBody", "b"));
    }
    return it_call(&srv, "SendMessageBatch",
                   json_pack("{s:s, s:o}", "QueueUrl", url, "Entries", list));
}

static long long ready(const char *url)
{
    return it_queue_attr_int(&srv, url, "ApproximateNumberOfMessages");
}

/* ReceiveMessage of one message; its receipt handle (malloc'd) into
 * *handle when one came. Returns the HTTP status. */
static long receive_one(const char *url, char **handle)
{
    struct it_reply r = it_receive(&srv, url, json_pack("{s:i}", "MaxNumberOfMessages", 1));
    long status = r.status;
    json_t *msgs = it_messages(&r);
    if (handle != NULL && msgs != NULL && json_array_size(msgs) == 1) {
        *handle = strdup(it_jstr(json_array_get(msgs, 0), "ReceiptHandle"));
    }
    if (status != 200) {
        IT_ERR(&r, 403, "RequestThrottled", "RequestThrottled",
               "Rate exceeded for ReceiveMessage of tenant acme.");
    }
    it_reply_free(&r);
    return status;
}

static struct it_reply change_visibility(const char *url, const char *handle, int entries)
{
    if (entries == 0) {
        return it_call(&srv, "ChangeMessageVisibility",
                       json_pack("{s:s, s:s, s:i}", "QueueUrl", url, "ReceiptHandle", handle,
                                 "VisibilityTimeout", 60));
    }
    json_t *list = json_array();
    for (int i = 0; i < entries; i++) {
        char id[16];
        snprintf(id, sizeof(id), "v%d", i);
        json_array_append_new(list, json_pack("{s:s, s:s, s:i}", "Id", id, "ReceiptHandle", handle,
                                              "VisibilityTimeout", 60));
    }
    return it_call(&srv, "ChangeMessageVisibilityBatch",
                   json_pack("{s:s, s:o}", "QueueUrl", url, "Entries", list));
}

/* The member path limits|usage . group . name of acme in GET /tenants,
 * as a number (-1 when missing). */
static double tenants_value(const char *section, const char *group, const char *name,
                            const char *field)
{
    struct it_request req = {.method = "GET",
                             .path = "/tenants",
                             .access_key = IT_ADMIN_KEY,
                             .secret = IT_ADMIN_SECRET,
                             .admin = true};
    struct it_response r;
    double value = -1;
    IT_CHECK(it_request(&srv, &req, &r) == 0 && r.status == 200);
    json_t *doc = json_loads(r.body != NULL ? r.body : "", 0, NULL);
    json_t *list = json_object_get(doc, "tenants");
    for (size_t i = 0; i < json_array_size(list); i++) {
        json_t *t = json_array_get(list, i);
        const char *tenant = it_jstr(t, "name");
        if (tenant == NULL || strcmp(tenant, IT_TENANT) != 0) {
            continue;
        }
        json_t *v = json_object_get(json_object_get(json_object_get(t, section), group), name);
        if (field != NULL) {
            v = json_object_get(v, field);
        }
        value = json_is_number(v) ? json_number_value(v) : -1;
    }
    json_decref(doc);
    it_response_free(&r);
    return value;
}

int main(void)
{
    struct it_options opt = {.admin = true, .tenants_yaml = tenants_before};
    IT_REQUIRE(it_server_start(&srv, &opt) == 0);
    char *hot = it_create_queue(&srv, "hot", NULL);
    char *cool = it_create_queue(&srv, "cool", NULL);
    char *fresh = it_create_queue(&srv, "fresh", NULL);
    char *other = it_create_queue(&srv, "other", NULL);
    IT_REQUIRE(hot != NULL && cool != NULL && fresh != NULL && other != NULL);

    /* hot takes its burst of 3, then refuses; a batch is refused whole. */
    const char *hot_throttled = "Rate exceeded for queue hot of tenant acme.";
    IT_CHECK(send_n(hot, 6, hot_throttled) == 3);
    struct it_reply r = send_batch(hot, 2);
    IT_ERR(&r, 403, "RequestThrottled", "RequestThrottled", hot_throttled);
    it_reply_free(&r);
    IT_CHECK(ready(hot) == 3);
    /* The same tenant's other queue takes everything. */
    IT_CHECK(send_n(other, 20, NULL) == 20);
    r = send_batch(other, 10);
    IT_OK(&r);
    it_reply_free(&r);
    IT_CHECK(ready(other) == 30);
    /* The admin is not counted: it still sends to hot. */
    r = send_as(IT_ADMIN_KEY, IT_ADMIN_SECRET, hot, "from the admin");
    IT_OK(&r);
    it_reply_free(&r);
    IT_CHECK(ready(hot) == 4);

    /* ReceiveMessage: 2, then throttled; sends go on meanwhile. */
    char *handle = NULL;
    IT_CHECK(receive_one(other, &handle) == 200);
    IT_CHECK(receive_one(other, NULL) == 200);
    IT_CHECK(receive_one(other, NULL) == 403);
    IT_CHECK(send_n(other, 3, NULL) == 3);
    IT_REQUIRE(handle != NULL);
    /* ChangeMessageVisibility(Batch) share one bucket of 3: a batch of 2
     * and one single pass, the next single is refused. */
    r = change_visibility(other, handle, 2);
    IT_OK(&r);
    it_reply_free(&r);
    r = change_visibility(other, handle, 0);
    IT_OK(&r);
    it_reply_free(&r);
    r = change_visibility(other, handle, 0);
    IT_ERR(&r, 403, "RequestThrottled", "RequestThrottled",
           "Rate exceeded for ChangeMessageVisibility of tenant acme.");
    it_reply_free(&r);
    /* Not DeleteMessage: it has no limit. */
    r = it_call(&srv, "DeleteMessage",
                json_pack("{s:s, s:s}", "QueueUrl", other, "ReceiptHandle", handle));
    IT_OK(&r);
    it_reply_free(&r);

    /* cool: one of its 5 used, 4 left before the reload. */
    IT_CHECK(send_n(cool, 1, NULL) == 1);

    /* The admin's view. */
    IT_CHECK(tenants_value("limits", "queues", "hot", "burst") == 3);
    IT_CHECK(tenants_value("limits", "queues", "hot", "requests_per_second") == 0.001);
    IT_CHECK(tenants_value("limits", "actions", "ReceiveMessage", "burst") == 2);
    IT_CHECK(tenants_value("usage", "queue_tokens_available", "hot", NULL) == 0);
    IT_CHECK(tenants_value("usage", "queue_tokens_available", "cool", NULL) == 4);
    IT_CHECK(tenants_value("limits", "queues", "fresh", "burst") == -1);

    /* SIGHUP. */
    char yaml[8192];
    struct it_options changed = opt;
    changed.tenants_yaml = tenants_after;
    it_config_yaml(&srv, &changed, yaml, sizeof(yaml));
    IT_REQUIRE(it_server_write_config(&srv, yaml) == 0);
    it_server_signal(&srv, SIGHUP);
    IT_REQUIRE(it_wait_log(&srv, "tenant acme: limits changed", 20000));
    IT_REQUIRE(it_wait_log(&srv, "is live", 20000));

    /* hot's larger burst is no free burst: it stays empty. */
    IT_CHECK(send_n(hot, 3, hot_throttled) == 0);
    IT_CHECK(tenants_value("limits", "queues", "hot", "burst") == 10);
    IT_CHECK(tenants_value("usage", "queue_tokens_available", "hot", NULL) == 0);
    /* cool's smaller burst clamps its 4 tokens to 2. */
    IT_CHECK(send_n(cool, 4, "Rate exceeded for queue cool of tenant acme.") == 2);
    /* fresh is new: full. */
    IT_CHECK(send_n(fresh, 3, "Rate exceeded for queue fresh of tenant acme.") == 1);
    /* ReceiveMessage's limit is gone. */
    for (int i = 0; i < 4; i++) {
        IT_CHECK(receive_one(other, NULL) == 200);
    }
    IT_CHECK(tenants_value("limits", "actions", "ReceiveMessage", "burst") == -1);
    /* ChangeMessageVisibility kept its (empty) bucket. */
    r = change_visibility(other, "AQEB-not-a-real-handle", 0);
    IT_ERR(&r, 403, "RequestThrottled", "RequestThrottled", NULL);
    it_reply_free(&r);
    /* Nothing was ever stored of a refused send. */
    IT_CHECK(ready(hot) == 4);
    IT_CHECK(ready(cool) == 3);
    IT_CHECK(ready(fresh) == 1);

    free(hot);
    free(cool);
    free(fresh);
    free(other);
    free(handle);
    IT_CHECK(it_server_stop(&srv) == 0);
    it_server_cleanup(&srv);
    return it_summary();
}
