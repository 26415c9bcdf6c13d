/*
 * test_sqs_filter.c -- filtered receives and the filtered depth
 * (docs/api.md, "Filtered receives") against the real sluiced over
 * HTTP/2: SluiceFilterKeys and its refusals, sluice.Filter entries in
 * MessageAttributeNames (only matches, AND of pairs, their attributes and
 * MD5 as an SDK checks them), every refusal in the JSON protocol's shape
 * and one in the query protocol's, SluiceFilteredMessages(NotVisible)
 * through leases, visibility changes and deletes, a filtered long poll
 * that never returns a non-match, the index kept through kill -9, and the
 * admin API's ?filter= on a queue.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "it_sqs.h"

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

static struct it_server srv;

#define IPV "InvalidParameterValue"
#define IPV_SHAPE "InvalidParameterValueException"
#define IAN "InvalidAttributeName"
#define IAV "InvalidAttributeValue"

/* color and size as String attributes (size NULL: none) */
static json_t *attrs(const char *color, const char *size)
{
    json_t *a = json_pack("{s:{s:s,s:s}}", "color", "DataType", "String", "StringValue", color);
    if (size != NULL) {
        json_object_set_new(a, "size",
                            json_pack("{s:s,s:s}", "DataType", "Number", "StringValue", size));
    }
    return a;
}

static void send_one(const char *url, const char *body, const char *color, const char *size)
{
    struct it_reply r = it_call(&srv, "SendMessage",
                                json_pack("{s:s,s:s,s:o}", "QueueUrl", url, "MessageBody", body,
                                          "MessageAttributes", attrs(color, size)));
    IT_OK(&r);
    it_reply_free(&r);
}

/* A receive of up to 10 with the given MessageAttributeNames (NULL-ended),
 * leases of vis seconds, waiting wait s; bodies space-separated in out. */
static struct it_reply receive_f(const char *url, const char *const *names, int vis, int wait,
                                 char *out, size_t cap)
{
    json_t *list = json_array();
    for (size_t i = 0; names[i] != NULL; i++) {
        json_array_append_new(list, json_string(names[i]));
    }
    struct it_reply r =
        it_receive(&srv, url,
                   json_pack("{s:i,s:i,s:i,s:o}", "MaxNumberOfMessages", 10, "VisibilityTimeout",
                             vis, "WaitTimeSeconds", wait, "MessageAttributeNames", list));
    out[0] = '\0';
    json_t *m;
    size_t i;
    json_array_foreach(it_messages(&r), i, m)
    {
        size_t len = strlen(out);
        snprintf(out + len, cap - len, "%s%s", i ? " " : "", it_jstr(m, "Body"));
    }
    return r;
}

/* SluiceFilteredMessages and ...NotVisible of color=value. */
static void depth(const char *url, const char *value, long long *ready, long long *inflight)
{
    char f[64];
    snprintf(f, sizeof f, "sluice.Filter.color=%s", value);
    struct it_reply r =
        it_call(&srv, "GetQueueAttributes",
                json_pack("{s:s,s:[s,s,s]}", "QueueUrl", url, "AttributeNames",
                          "SluiceFilteredMessages", "SluiceFilteredMessagesNotVisible", f));
    IT_OK(&r);
    json_t *a = json_object_get(r.json, "Attributes");
    const char *rv = it_jstr(a, "SluiceFilteredMessages");
    const char *iv = it_jstr(a, "SluiceFilteredMessagesNotVisible");
    *ready = rv != NULL ? atoll(rv) : -1;
    *inflight = iv != NULL ? atoll(iv) : -1;
    IT_CHECK(json_object_size(a) == 2);
    it_reply_free(&r);
}

/* ---- the queue attribute ------------------------------------------------------ */

static void filter_keys_attribute(void)
{
    static const char *const bad[] = {"", "a,,b", "a,a", "sluice.x", "a,b,c,d,e,f,g,h,i", "a b"};
    for (size_t i = 0; i < N_OF(bad); i++) {
        struct it_reply r = it_call(
            &srv, "CreateQueue",
            json_pack("{s:s,s:{s:s}}", "QueueName", "x", "Attributes", "SluiceFilterKeys", bad[i]));
        IT_ERR(&r, 400, IAV, "InvalidAttributeValue",
               "Invalid value for the parameter SluiceFilterKeys.");
        it_reply_free(&r);
    }
    struct it_reply r = it_call(&srv, "CreateQueue",
                                json_pack("{s:s,s:{s:s,s:s}}", "QueueName", "x.fifo", "Attributes",
                                          "FifoQueue", "true", "SluiceFilterKeys", "color"));
    IT_ERR(&r, 400, IAN, "InvalidAttributeName",
           "You can specify the SluiceFilterKeys only when FifoQueue is false.");
    it_reply_free(&r);
    char *url = it_create_queue(&srv, "keys", json_pack("{s:s}", "SluiceFilterKeys", "color,size"));
    IT_REQUIRE(url != NULL);
    r = it_call(
        &srv, "SetQueueAttributes",
        json_pack("{s:s,s:{s:s}}", "QueueUrl", url, "Attributes", "SluiceFilterKeys", "color"));
    IT_ERR(&r, 400, IAV, "InvalidAttributeValue",
           "Invalid value for the parameter SluiceFilterKeys. Reason: the filter keys are fixed "
           "when the queue is created.");
    it_reply_free(&r);
    r = it_call(&srv, "GetQueueAttributes",
                json_pack("{s:s,s:[s]}", "QueueUrl", url, "AttributeNames", "All"));
    IT_OK(&r);
    IT_STREQ(it_jstr(json_object_get(r.json, "Attributes"), "SluiceFilterKeys"), "color,size");
    IT_CHECK(it_jstr(json_object_get(r.json, "Attributes"), "SluiceFilteredMessages") == NULL);
    it_reply_free(&r);
    free(url);
}

/* ---- receives ------------------------------------------------------------------ */

static void filtered_receives(void)
{
    char *url = it_create_queue(&srv, "jobs", json_pack("{s:s}", "SluiceFilterKeys", "color,size"));
    IT_REQUIRE(url != NULL);
    /* a batch, so that the shard's partitions both get some */
    json_t *entries = json_array();
    const char *colors[] = {"red", "blue", "green"};
    for (int i = 0; i < 9; i++) {
        char id[8], body[16], size[8];
        snprintf(id, sizeof id, "e%d", i);
        snprintf(body, sizeof body, "%s%d", colors[i % 3], i);
        snprintf(size, sizeof size, "%d", i % 2);
        json_array_append_new(entries, json_pack("{s:s,s:s,s:o}", "Id", id, "MessageBody", body,
                                                 "MessageAttributes", attrs(colors[i % 3], size)));
    }
    struct it_reply r = it_call(&srv, "SendMessageBatch",
                                json_pack("{s:s,s:o}", "QueueUrl", url, "Entries", entries));
    IT_OK(&r);
    IT_CHECK(json_array_size(json_object_get(r.json, "Successful")) == 9);
    it_reply_free(&r);
    send_one(url, "plain", "none", NULL);
    long long ready, inflight;
    depth(url, "red", &ready, &inflight);
    IT_CHECK(ready == 3 && inflight == 0);

    /* AND of two pairs: red with size 0 (red0, red6) */
    char got[256];
    r = receive_f(url,
                  (const char *[]){"All", "sluice.Filter.color=red", "sluice.Filter.size=0", NULL},
                  60, 0, got, sizeof got);
    IT_OK(&r);
    IT_CHECK(it_message_count(&r) == 2);
    json_t *m;
    size_t i;
    json_array_foreach(it_messages(&r), i, m)
    {
        json_t *ma = json_object_get(m, "MessageAttributes");
        IT_STREQ(it_jstr(json_object_get(ma, "color"), "StringValue"), "red");
        IT_STREQ(it_jstr(json_object_get(ma, "size"), "StringValue"), "0");
        IT_CHECK(it_jstr(m, "MD5OfMessageAttributes") != NULL);
    }
    it_reply_free(&r);
    depth(url, "red", &ready, &inflight);
    IT_CHECK(ready == 1 && inflight == 2);
    /* one pair: the last red; the filter entries select no attribute */
    r = receive_f(url, (const char *[]){"sluice.Filter.color=red", NULL}, 60, 0, got, sizeof got);
    IT_OK(&r);
    IT_STREQ(got, "red3");
    IT_CHECK(json_object_get(json_array_get(it_messages(&r), 0), "MessageAttributes") == NULL);
    /* back to ready, then deleted */
    const char *handle = it_jstr(json_array_get(it_messages(&r), 0), "ReceiptHandle");
    struct it_reply c = it_call(&srv, "ChangeMessageVisibility",
                                json_pack("{s:s,s:s,s:i}", "QueueUrl", url, "ReceiptHandle", handle,
                                          "VisibilityTimeout", 0));
    IT_OK(&c);
    it_reply_free(&c);
    it_reply_free(&r);
    depth(url, "red", &ready, &inflight);
    IT_CHECK(ready == 1 && inflight == 2);
    r = receive_f(url, (const char *[]){"sluice.Filter.color=red", NULL}, 60, 0, got, sizeof got);
    IT_STREQ(got, "red3");
    IT_CHECK(it_delete_received(&srv, url, &r, 0));
    it_reply_free(&r);
    depth(url, "red", &ready, &inflight);
    IT_CHECK(ready == 0 && inflight == 2);
    /* nothing red is ready: a long poll waits and returns nothing else */
    long long t0 = it_now_ms();
    r = receive_f(url, (const char *[]){"sluice.Filter.color=red", NULL}, 60, 1, got, sizeof got);
    IT_OK(&r);
    IT_STREQ(got, "");
    IT_CHECK(it_now_ms() - t0 >= 900);
    it_reply_free(&r);
    /* the unfiltered receive still sees the rest */
    r = receive_f(url, (const char *[]){"All", NULL}, 60, 0, got, sizeof got);
    IT_CHECK(it_message_count(&r) == 7);
    it_reply_free(&r);
    free(url);
}

static void refusals(void)
{
    char *url = it_create_queue(&srv, "refuse", json_pack("{s:s}", "SluiceFilterKeys", "color"));
    char *plain = it_create_queue(&srv, "plain", NULL);
    IT_REQUIRE(url != NULL && plain != NULL);
    static const struct {
        const char *name;
        const char *message;
    } bad[] = {
        {"sluice.Filter.color",
         "Value sluice.Filter.color for parameter MessageAttributeNames is "
         "invalid. Reason: a filter is sluice.Filter.<attribute name>=<value>."},
        {"sluice.Filter.color=", "Value sluice.Filter.color= for parameter MessageAttributeNames "
                                 "is invalid. Reason: a filter's value has 1 to 256 bytes."},
        {"sluice.Filter.size=1", "Value sluice.Filter.size=... for parameter "
                                 "MessageAttributeNames is invalid. Reason: the queue does not "
                                 "index the message attribute 'size' (SluiceFilterKeys: color)."},
    };
    char got[64];
    for (size_t i = 0; i < N_OF(bad); i++) {
        struct it_reply r =
            receive_f(url, (const char *[]){bad[i].name, NULL}, 30, 0, got, sizeof got);
        IT_ERR(&r, 400, IPV, IPV_SHAPE, bad[i].message);
        it_reply_free(&r);
    }
    struct it_reply r =
        receive_f(plain, (const char *[]){"sluice.Filter.color=red", NULL}, 30, 0, got, sizeof got);
    IT_ERR(&r, 400, IPV, IPV_SHAPE,
           "Value sluice.Filter.color=... for parameter MessageAttributeNames is invalid. Reason: "
           "the queue does not index the message attribute 'color' (SluiceFilterKeys: none).");
    it_reply_free(&r);
    /* a Binary value under a filter key stores nothing */
    r = it_call(&srv, "SendMessage",
                json_pack("{s:s,s:s,s:{s:{s:s,s:s}}}", "QueueUrl", url, "MessageBody", "x",
                          "MessageAttributes", "color", "DataType", "Binary", "BinaryValue",
                          "AAE="));
    IT_ERR(&r, 400, IPV, IPV_SHAPE,
           "Message (user) attribute 'color' is one of this queue's SluiceFilterKeys: it must be "
           "a String or Number of 1 to 256 bytes.");
    it_reply_free(&r);
    IT_CHECK(it_queue_attr_int(&srv, url, "ApproximateNumberOfMessages") == 0);
    /* the depth names without a filter, and the reverse */
    r = it_call(
        &srv, "GetQueueAttributes",
        json_pack("{s:s,s:[s]}", "QueueUrl", url, "AttributeNames", "SluiceFilteredMessages"));
    IT_ERR(&r, 400, IAN, "InvalidAttributeName", NULL);
    it_reply_free(&r);
    r = it_call(
        &srv, "GetQueueAttributes",
        json_pack("{s:s,s:[s]}", "QueueUrl", url, "AttributeNames", "sluice.Filter.color=red"));
    IT_ERR(&r, 400, IAN, "InvalidAttributeName", NULL);
    it_reply_free(&r);
    free(url);
    free(plain);
}

/* The query protocol: the entry percent-encoded as SDKs send it, and a
 * refusal as an XML ErrorResponse. */
static void query_protocol(void)
{
    char *url = it_create_queue(&srv, "q", json_pack("{s:s}", "SluiceFilterKeys", "color"));
    IT_REQUIRE(url != NULL);
    send_one(url, "blue-q", "blue", NULL);
    send_one(url, "red-q", "red", NULL);
    const char *headers[] = {"content-type: application/x-www-form-urlencoded; charset=utf-8",
                             NULL};
    const char *forms[] = {"Action=ReceiveMessage&Version=2012-11-05&MaxNumberOfMessages=10"
                           "&MessageAttributeName.1=All"
                           "&MessageAttributeName.2=sluice.Filter.color%3Dred",
                           "Action=ReceiveMessage&Version=2012-11-05"
                           "&MessageAttributeName.1=sluice.Filter.color"};
    struct it_response r[2];
    for (size_t i = 0; i < 2; i++) {
        struct it_request req = {.method = "POST",
                                 .path = "/" IT_TENANT "/q",
                                 .headers = headers,
                                 .body = forms[i],
                                 .body_len = strlen(forms[i]),
                                 .access_key = IT_KEY,
                                 .secret = IT_SECRET};
        IT_CHECK(it_request(&srv, &req, &r[i]) == 0);
    }
    IT_CHECK(r[0].status == 200);
    IT_CHECK(strstr(r[0].body, "<Body>red-q</Body>") != NULL);
    IT_CHECK(strstr(r[0].body, "blue-q") == NULL);
    IT_CHECK(strstr(r[0].body, "<Name>color</Name>") != NULL);
    IT_CHECK(r[1].status == 400);
    IT_CHECK(strstr(r[1].body, "<Code>InvalidParameterValue</Code>") != NULL);
    IT_CHECK(strstr(r[1].body, "<ErrorResponse") != NULL);
    it_response_free(&r[0]);
    it_response_free(&r[1]);
    free(url);
}

/* What was committed survives kill -9: the entries and their states. */
static void kill9(void)
{
    char *url = it_create_queue(&srv, "durable", json_pack("{s:s}", "SluiceFilterKeys", "color"));
    IT_REQUIRE(url != NULL);
    for (int i = 0; i < 4; i++) {
        char body[8];
        snprintf(body, sizeof body, "k%d", i);
        send_one(url, body, i % 2 ? "blue" : "red", NULL);
    }
    char got[64];
    struct it_reply r =
        receive_f(url, (const char *[]){"sluice.Filter.color=red", NULL}, 600, 0, got, sizeof got);
    IT_CHECK(it_message_count(&r) == 2);
    it_reply_free(&r);
    send_one(url, "k4", "red", NULL);
    struct it_options opt = {.tls = false, .admin = true, .shard_size = 2};
    IT_REQUIRE(it_server_bounce(&srv, &opt, true) == 0);
    long long ready, inflight;
    depth(url, "red", &ready, &inflight);
    IT_CHECK(ready == 1 && inflight == 2);
    r = receive_f(url, (const char *[]){"sluice.Filter.color=red", NULL}, 600, 0, got, sizeof got);
    IT_STREQ(got, "k4");
    it_reply_free(&r);
    depth(url, "blue", &ready, &inflight);
    IT_CHECK(ready == 2 && inflight == 0);
    /* the admin API's queue, with the same counts */
    struct it_reply a =
        it_admin_as(&srv, &(struct it_admin_call){.path = "/api/queues/" IT_TENANT
                                                          "/durable?filter=color%3Dred",
                                                  .key = IT_ADMIN_KEY,
                                                  .secret = IT_ADMIN_SECRET});
    IT_OK(&a);
    json_t *f = json_object_get(a.json, "filtered");
    IT_STREQ(it_jstr(f, "filter"), "color=red");
    IT_CHECK(json_integer_value(json_object_get(f, "ready")) == 0);
    IT_CHECK(json_integer_value(json_object_get(f, "inflight")) == 3);
    it_reply_free(&a);
    a = it_admin_as(
        &srv, &(struct it_admin_call){.path = "/api/queues/" IT_TENANT "/durable?filter=color",
                                      .key = IT_ADMIN_KEY,
                                      .secret = IT_ADMIN_SECRET});
    IT_CHECK(a.status == 400);
    it_reply_free(&a);
    free(url);
}

int main(void)
{
    struct it_options opt = {.tls = false, .admin = true, .shard_size = 2};
    IT_REQUIRE(it_server_start(&srv, &opt) == 0);
    filter_keys_attribute();
    filtered_receives();
    refusals();
    query_protocol();
    kill9();
    IT_CHECK(it_healthz(&srv));
    IT_CHECK(it_server_stop(&srv) == 0);
    it_server_cleanup(&srv);
    return it_summary();
}
