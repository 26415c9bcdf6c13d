/*
 * test_sqs_autocreate.c -- queues created by their first send (the
 * tenant key auto_create_queues; docs/api.md, "Beyond SQS") against the
 * real sluiced over HTTP/2: SendMessage and SendMessageBatch to a missing
 * queue create it with SQS's defaults (FIFO for a .fifo name) and store
 * the message; a send the new queue would refuse creates nothing; off by
 * default and for the admin, never for another tenant's URL nor a queue
 * deleted less than 60 s ago; the tenant's queue_defaults are the new
 * queue's attributes; the tenant's limits.max_queues holds
 * (OverLimit); SIGHUP turns it on and off without a restart.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "it_sqs.h"

static struct it_server srv;

#define BETA_KEY "AKIDBETA"
#define BETA_SECRET "beta-secret"
#define GAMMA_KEY "AKIDGAMMA"
#define GAMMA_SECRET "gamma-secret"

/* acme: on; beta: off (the default); gamma: on, with queue_defaults, at
 * most two queues. */
#define TENANTS(acme_on, beta_on)                                                                  \
    "tenants:\n"                                                                                   \
    "  acme:\n"                                                                                    \
    "    access_key_id: " IT_KEY "\n"                                                              \
    "    secret_access_key: " IT_SECRET "\n" acme_on "  beta:\n"                                   \
    "    access_key_id: " BETA_KEY "\n"                                                            \
    "    secret_access_key: " BETA_SECRET "\n" beta_on "  gamma:\n"                                \
    "    access_key_id: " GAMMA_KEY "\n"                                                           \
    "    secret_access_key: " GAMMA_SECRET "\n"                                                    \
    "    auto_create_queues: true\n"                                                               \
    "    queue_defaults:\n"                                                                        \
    "      VisibilityTimeout: 45\n"                                                                \
    "      MaximumMessageSize: 1024\n"                                                             \
    "    limits:\n"                                                                                \
    "      max_queues: 2\n"
#define ON "    auto_create_queues: true\n"

static char *url_of(const char *tenant, const char *name)
{
    char *u = malloc(256);
    snprintf(u, 256, "%s/%s/%s", srv.base_url, tenant, name);
    return u;
}

static struct it_reply send_as(const char *key, const char *secret, const char *url,
                               const char *body)
{
    return it_call_as(&srv, key, secret, "SendMessage",
                      json_pack("{s:s,s:s}", "QueueUrl", url, "MessageBody", body));
}

/* GetQueueUrl as key/secret: 200 or an error reply. */
static struct it_reply get_url_as(const char *key, const char *secret, const char *name)
{
    return it_call_as(&srv, key, secret, "GetQueueUrl", json_pack("{s:s}", "QueueName", name));
}

static void expect_missing(const char *key, const char *secret, const char *name)
{
    struct it_reply r = get_url_as(key, secret, name);
    IT_ERR(&r, 400, "AWS.SimpleQueueService.NonExistentQueue", "QueueDoesNotExist", NULL);
    it_reply_free(&r);
}

static void first_send_creates(void)
{
    char *url = url_of(IT_TENANT, "made-by-send");
    struct it_reply r = send_as(IT_KEY, IT_SECRET, url, "hello");
    IT_OK(&r);
    it_reply_free(&r);
    IT_CHECK(it_queue_attr_int(&srv, url, "ApproximateNumberOfMessages") == 1);
    IT_CHECK(it_queue_attr_int(&srv, url, "VisibilityTimeout") == 30); /* SQS's default */
    r = it_receive(&srv, url, NULL);
    IT_CHECK(it_message_count(&r) == 1);
    IT_STREQ(it_jstr(json_array_get(it_messages(&r), 0), "Body"), "hello");
    it_reply_free(&r);
    /* the second send finds it: still one queue of that name */
    r = send_as(IT_KEY, IT_SECRET, url, "again");
    IT_OK(&r);
    it_reply_free(&r);
    r = it_call(&srv, "ListQueues", json_pack("{s:s}", "QueueNamePrefix", "made-by"));
    IT_CHECK(json_array_size(json_object_get(r.json, "QueueUrls")) == 1);
    it_reply_free(&r);
    free(url);

    /* a batch, and a FIFO name */
    url = url_of(IT_TENANT, "batch-made");
    r = it_call(&srv, "SendMessageBatch",
                json_pack("{s:s,s:[{s:s,s:s},{s:s,s:s}]}", "QueueUrl", url, "Entries", "Id", "a",
                          "MessageBody", "a", "Id", "b", "MessageBody", "b"));
    IT_OK(&r);
    IT_CHECK(json_array_size(json_object_get(r.json, "Successful")) == 2);
    it_reply_free(&r);
    IT_CHECK(it_queue_attr_int(&srv, url, "ApproximateNumberOfMessages") == 2);
    free(url);
    url = url_of(IT_TENANT, "made.fifo");
    r = it_call(&srv, "SendMessage",
                json_pack("{s:s,s:s,s:s,s:s}", "QueueUrl", url, "MessageBody", "f",
                          "MessageGroupId", "g", "MessageDeduplicationId", "d1"));
    IT_OK(&r);
    IT_CHECK(it_str(&r, "SequenceNumber") != NULL);
    it_reply_free(&r);
    r = it_call(&srv, "GetQueueAttributes",
                json_pack("{s:s,s:[s]}", "QueueUrl", url, "AttributeNames", "FifoQueue"));
    IT_STREQ(it_jstr(json_object_get(r.json, "Attributes"), "FifoQueue"), "true");
    it_reply_free(&r);
    free(url);
}

static void refused_sends_create_nothing(void)
{
    /* the new FIFO queue would refuse a send without a group */
    char *url = url_of(IT_TENANT, "never.fifo");
    struct it_reply r = send_as(IT_KEY, IT_SECRET, url, "x");
    IT_ERR(&r, 400, "MissingParameter", "MissingRequiredParameterException",
           "The request must contain the parameter MessageGroupId.");
    it_reply_free(&r);
    expect_missing(IT_KEY, IT_SECRET, "never.fifo");
    free(url);
    /* nor would it take a priority */
    url = url_of(IT_TENANT, "never");
    r = it_call(&srv, "SendMessage",
                json_pack("{s:s,s:s,s:{s:{s:s,s:s}}}", "QueueUrl", url, "MessageBody", "x",
                          "MessageAttributes", "sluice.Priority", "DataType", "Number",
                          "StringValue", "1"));
    IT_ERR(&r, 400, "InvalidParameterValue", "InvalidParameterValueException", NULL);
    it_reply_free(&r);
    expect_missing(IT_KEY, IT_SECRET, "never");
    free(url);
}

static void where_it_does_not_apply(void)
{
    /* beta has it off (the default) */
    char *url = url_of("beta", "nope");
    struct it_reply r = send_as(BETA_KEY, BETA_SECRET, url, "x");
    IT_ERR(&r, 400, "AWS.SimpleQueueService.NonExistentQueue", "QueueDoesNotExist", NULL);
    it_reply_free(&r);
    /* acme's credentials on beta's URL: another tenant's queue, never made */
    r = send_as(IT_KEY, IT_SECRET, url, "x");
    IT_ERR(&r, 400, "AWS.SimpleQueueService.NonExistentQueue", "QueueDoesNotExist", NULL);
    it_reply_free(&r);
    expect_missing(BETA_KEY, BETA_SECRET, "nope");
    free(url);
    /* the admin creates no queue */
    url = url_of(IT_TENANT, "by-admin");
    r = send_as(IT_ADMIN_KEY, IT_ADMIN_SECRET, url, "x");
    IT_ERR(&r, 400, "AWS.SimpleQueueService.NonExistentQueue", "QueueDoesNotExist", NULL);
    it_reply_free(&r);
    expect_missing(IT_KEY, IT_SECRET, "by-admin");
    free(url);
    /* a queue deleted a moment ago does not come back by itself */
    url = url_of(IT_TENANT, "made-by-send");
    r = it_call(&srv, "DeleteQueue", json_pack("{s:s}", "QueueUrl", url));
    IT_OK(&r);
    it_reply_free(&r);
    r = send_as(IT_KEY, IT_SECRET, url, "x");
    IT_ERR(&r, 400, "AWS.SimpleQueueService.NonExistentQueue", "QueueDoesNotExist", NULL);
    it_reply_free(&r);
    expect_missing(IT_KEY, IT_SECRET, "made-by-send");
    free(url);
}

/* gamma's queues are made with its queue_defaults; a message they would
 * refuse makes none. */
static void tenant_queue_defaults(void)
{
    char big[2001];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    char *url = url_of("gamma", "big");
    struct it_reply r = send_as(GAMMA_KEY, GAMMA_SECRET, url, big);
    IT_ERR(&r, 400, "InvalidParameterValue", "InvalidParameterValueException",
           "One or more parameters are invalid. Reason: Message must be shorter than 1024 bytes.");
    it_reply_free(&r);
    expect_missing(GAMMA_KEY, GAMMA_SECRET, "big");
    free(url);
}

static void queue_limit_holds(void)
{
    for (int i = 0; i < 3; i++) {
        char name[16];
        snprintf(name, sizeof name, "g%d", i);
        char *url = url_of("gamma", name);
        struct it_reply r = send_as(GAMMA_KEY, GAMMA_SECRET, url, "x");
        if (i < 2) {
            IT_OK(&r);
            struct it_reply a =
                it_call_as(&srv, GAMMA_KEY, GAMMA_SECRET, "GetQueueAttributes",
                           json_pack("{s:s,s:[s]}", "QueueUrl", url, "AttributeNames", "All"));
            json_t *attrs = json_object_get(a.json, "Attributes");
            IT_STREQ(it_jstr(attrs, "VisibilityTimeout"), "45");
            IT_STREQ(it_jstr(attrs, "MaximumMessageSize"), "1024");
            IT_STREQ(it_jstr(attrs, "DelaySeconds"), "0"); /* SQS's default */
            it_reply_free(&a);
        } else {
            IT_ERR(&r, 403, "OverLimit", "OverLimit",
                   "Tenant gamma has reached its limit of 2 queues (limits.max_queues).");
        }
        it_reply_free(&r);
        free(url);
    }
    expect_missing(GAMMA_KEY, GAMMA_SECRET, "g2");
}

static void sighup_switches_it(void)
{
    char yaml[8192];
    struct it_options opt = {.tls = false, .admin = true, .tenants_yaml = TENANTS("", ON)};
    it_config_yaml(&srv, &opt, yaml, sizeof yaml);
    IT_CHECK(it_server_write_config(&srv, yaml) == 0);
    it_server_signal(&srv, SIGHUP);
    IT_CHECK(it_wait_log(&srv, "reload: tenant acme: auto_create_queues off", 20000));
    IT_CHECK(it_wait_log(&srv, "reload: tenant beta: auto_create_queues on", 20000));
    char *url = url_of(IT_TENANT, "after-reload");
    struct it_reply r = send_as(IT_KEY, IT_SECRET, url, "x");
    IT_ERR(&r, 400, "AWS.SimpleQueueService.NonExistentQueue", "QueueDoesNotExist", NULL);
    it_reply_free(&r);
    free(url);
    url = url_of("beta", "after-reload");
    r = send_as(BETA_KEY, BETA_SECRET, url, "x");
    IT_OK(&r);
    it_reply_free(&r);
    free(url);
}

int main(void)
{
    struct it_options opt = {.tls = false, .admin = true, .tenants_yaml = TENANTS(ON, "")};
    IT_REQUIRE(it_server_start(&srv, &opt) == 0);
    first_send_creates();
    refused_sends_create_nothing();
    where_it_does_not_apply();
    tenant_queue_defaults();
    queue_limit_holds();
    sighup_switches_it();
    IT_CHECK(it_log_contains(&srv, "queue acme/made-by-send created by its first send"));
    IT_CHECK(it_healthz(&srv));
    IT_CHECK(it_server_stop(&srv) == 0);
    it_server_cleanup(&srv);
    return it_summary();
}
