/*
 * test_disk_watermark.c -- the low-disk watermark (server.min_free_disk_bytes)
 * against the real sluiced:
 *  - raised above the disk's size by SIGHUP, sends answer a retryable 503
 *    ServiceUnavailable while receives, visibility changes and deletes
 *    still work; /metrics shows the free bytes and sluice_disk_low 1;
 *  - set back to 0 (off) by SIGHUP, sends work again and sluice_disk_low
 *    is 0.
 */
#include <signal.h>
#include <string.h>

#include <jansson.h>

#include "it_harness.h"
#include "it_sqs.h"

static struct it_server srv;
static struct it_options opt = {.admin = true};

static double metric(const char *name)
{
    return it_metric(&srv, name);
}

static void set_watermark(const char *bytes)
{
    char extra[128], yaml[4096];
    snprintf(extra, sizeof extra, "server:\n  min_free_disk_bytes: %s\n", bytes);
    struct it_options o = opt;
    o.extra_yaml = extra;
    it_config_yaml(&srv, &o, yaml, sizeof yaml);
    IT_REQUIRE(it_server_write_config(&srv, yaml) == 0);
    it_server_signal(&srv, SIGHUP);
    char line[128];
    snprintf(line, sizeof line, "sends refused below %s free disk bytes", bytes);
    IT_REQUIRE(it_wait_log(&srv, line, 20000));
}

static struct it_reply send_one(const char *url, const char *body)
{
    return it_call(&srv, "SendMessage",
                   json_pack("{s:s, s:s}", "QueueUrl", url, "MessageBody", body));
}

int main(void)
{
    opt.extra_yaml = "server:\n  min_free_disk_bytes: 0\n";
    IT_REQUIRE(it_server_start(&srv, &opt) == 0);
    char *url = it_create_queue(&srv, "wm", NULL);
    IT_REQUIRE(url != NULL);
    for (int i = 0; i < 3; i++) {
        struct it_reply r = send_one(url, "before");
        IT_OK(&r);
        it_reply_free(&r);
    }
    IT_CHECK(metric("sluice_disk_free_bytes") > 0);
    IT_CHECK(metric("sluice_disk_low") == 0);

    /* Above any disk's size: everything is "nearly full". */
    set_watermark("18446744073709551615");
    struct it_reply r = send_one(url, "refused");
    IT_CHECK(r.status == 503);
    IT_STREQ(r.query_error, "ServiceUnavailable;Receiver");
    IT_STREQ(it_str(&r, "message"), "The disk is full or nearly full; retry later.");
    it_reply_free(&r);
    r = it_call(&srv, "SendMessageBatch",
                json_pack("{s:s, s:[{s:s, s:s}]}", "QueueUrl", url, "Entries", "Id", "a",
                          "MessageBody", "refused"));
    IT_CHECK(r.status == 503);
    it_reply_free(&r);
    IT_CHECK(metric("sluice_disk_low") == 1);
    IT_CHECK(metric("sluice_disk_free_bytes") > 0);

    /* Receives, visibility changes and deletes still run. */
    r = it_receive(&srv, url, json_pack("{s:i}", "MaxNumberOfMessages", 2));
    IT_OK(&r);
    IT_CHECK(it_message_count(&r) == 2);
    json_t *msgs = it_messages(&r);
    if (it_message_count(&r) == 2) {
        const char *h0 = it_jstr(json_array_get(msgs, 0), "ReceiptHandle");
        const char *h1 = it_jstr(json_array_get(msgs, 1), "ReceiptHandle");
        struct it_reply d = it_call(&srv, "DeleteMessage",
                                    json_pack("{s:s, s:s}", "QueueUrl", url, "ReceiptHandle", h0));
        IT_OK(&d);
        it_reply_free(&d);
        d = it_call(&srv, "ChangeMessageVisibility",
                    json_pack("{s:s, s:s, s:i}", "QueueUrl", url, "ReceiptHandle", h1,
                              "VisibilityTimeout", 0));
        IT_OK(&d);
        it_reply_free(&d);
    }
    it_reply_free(&r);
    IT_CHECK(it_queue_attr_int(&srv, url, "ApproximateNumberOfMessages") == 2);

    /* Off again: sends work at once. */
    set_watermark("0");
    r = send_one(url, "after");
    IT_OK(&r);
    it_reply_free(&r);
    IT_CHECK(metric("sluice_disk_low") == 0);
    IT_CHECK(it_queue_attr_int(&srv, url, "ApproximateNumberOfMessages") == 3);

    free(url);
    it_server_stop(&srv);
    it_server_cleanup(&srv);
    return it_summary();
}
