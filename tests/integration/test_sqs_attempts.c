/*
 * test_sqs_attempts.c -- FIFO ReceiveRequestAttemptId against the real
 * sluiced, over HTTP/2 (JSON) and the query protocol, on a shard of two
 * partitions: a retry within the lease returns the same messages, receipt
 * handles and order and its visibility timeout replaces the first one's;
 * after a delete or a visibility change it returns what the attempt still
 * holds, and with nothing left it is an ordinary receive; it survives
 * kill -9 and a restart; after the lease ran out the retry receives anew;
 * a standard queue ignores the id.
 *
 * Expectations are Amazon SQS's (API Reference, ReceiveMessage,
 * ReceiveRequestAttemptId); the behaviour after a change, where SQS is
 * silent, is docs/api.md's. The five minutes are tested with a faked
 * clock in test_sqs_fifo_clock.c.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "it_sqs.h"

static struct it_server srv;

static void fsend(const char *url, const char *body, const char *group, const char *dedup)
{
    struct it_reply r =
        it_call(&srv, "SendMessage",
                json_pack("{s:s,s:s,s:s,s:s}", "QueueUrl", url, "MessageBody", body,
                          "MessageGroupId", group, "MessageDeduplicationId", dedup));
    IT_OK(&r);
    it_reply_free(&r);
}

/* ReceiveMessage of up to max with visibility vis and, unless NULL, the
 * attempt id. */
static struct it_reply recv_attempt(const char *url, int max, int vis, const char *attempt)
{
    json_t *extra = json_pack("{s:i,s:i,s:[s]}", "MaxNumberOfMessages", max, "VisibilityTimeout",
                              vis, "MessageSystemAttributeNames", "All");
    if (attempt != NULL) {
        json_object_set_new(extra, "ReceiveRequestAttemptId", json_string(attempt));
    }
    struct it_reply r = it_receive(&srv, url, extra);
    IT_OK(&r);
    return r;
}

static const char *member(const struct it_reply *r, size_t i, const char *name)
{
    return it_jstr(json_array_get(it_messages(r), i), name);
}

/* Whether b holds a's messages, handles and order. */
static bool same_messages(const struct it_reply *a, const struct it_reply *b)
{
    size_t n = it_message_count(a);
    bool same = n > 0 && n == it_message_count(b);
    for (size_t i = 0; same && i < n; i++) {
        same = strcmp(member(a, i, "MessageId"), member(b, i, "MessageId")) == 0 &&
               strcmp(member(a, i, "ReceiptHandle"), member(b, i, "ReceiptHandle")) == 0;
    }
    return same;
}

static void delete_handle(const char *url, const char *handle)
{
    struct it_reply d = it_call(&srv, "DeleteMessage",
                                json_pack("{s:s,s:s}", "QueueUrl", url, "ReceiptHandle", handle));
    IT_OK(&d);
    it_reply_free(&d);
}

/* Polls (bounded) until the queue's attribute name reads want. */
static bool wait_attr(const char *url, const char *name, long long want)
{
    for (int i = 0; i < 200; i++) {
        if (it_queue_attr_int(&srv, url, name) == want) {
            return true;
        }
        it_sleep_ms(50);
    }
    return false;
}

static char *fifo_queue(const char *name)
{
    char *url = it_create_queue(&srv, name, json_pack("{s:s}", "FifoQueue", "true"));
    IT_REQUIRE(url != NULL);
    return url;
}

static void replay_within_lease(void)
{
    char *url = fifo_queue("replay.fifo");
    /* three groups: with two partitions in the shard, the receive visits
     * both (a group lives on one) */
    static const char *const groups[] = {"g0", "g1", "g2", "g3"};
    char body[16], dedup[16];
    for (int i = 0; i < 8; i++) {
        snprintf(body, sizeof body, "m%d", i);
        snprintf(dedup, sizeof dedup, "d%d", i);
        fsend(url, body, groups[i % 4], dedup);
    }
    struct it_reply first = recv_attempt(url, 10, 600, "json-1");
    IT_CHECK(it_message_count(&first) == 8);
    struct it_reply again = recv_attempt(url, 1, 1, "json-1");
    IT_CHECK(same_messages(&first, &again));
    IT_STREQ(it_jstr(json_object_get(json_array_get(it_messages(&again), 0), "Attributes"),
                     "ApproximateReceiveCount"),
             "1");
    IT_CHECK(it_queue_attr_int(&srv, url, "ApproximateNumberOfMessagesNotVisible") == 8);
    /* the retry's one second replaced the first receive's 600 */
    IT_CHECK(wait_attr(url, "ApproximateNumberOfMessages", 8));
    struct it_reply later = recv_attempt(url, 10, 30, NULL);
    IT_CHECK(it_message_count(&later) == 8);
    IT_STREQ(it_jstr(json_object_get(json_array_get(it_messages(&later), 0), "Attributes"),
                     "ApproximateReceiveCount"),
             "2");
    it_reply_free(&later);
    it_reply_free(&again);
    it_reply_free(&first);
    free(url);
}

static void replay_after_changes(void)
{
    char *url = fifo_queue("changed.fifo");
    fsend(url, "a1", "a", "1");
    fsend(url, "a2", "a", "2");
    fsend(url, "a3", "a", "3");
    struct it_reply first = recv_attempt(url, 10, 60, "change-1");
    IT_REQUIRE(it_message_count(&first) == 3);
    /* a1 deleted, a3's visibility changed: a2 is what the attempt holds */
    delete_handle(url, member(&first, 0, "ReceiptHandle"));
    struct it_reply c =
        it_call(&srv, "ChangeMessageVisibility",
                json_pack("{s:s,s:s,s:i}", "QueueUrl", url, "ReceiptHandle",
                          member(&first, 2, "ReceiptHandle"), "VisibilityTimeout", 120));
    IT_OK(&c);
    it_reply_free(&c);
    struct it_reply again = recv_attempt(url, 10, 60, "change-1");
    IT_CHECK(it_message_count(&again) == 1);
    IT_STREQ(member(&again, 0, "Body"), "a2");
    IT_STREQ(member(&again, 0, "ReceiptHandle"), member(&first, 1, "ReceiptHandle"));
    it_reply_free(&again);
    /* nothing of it left: an ordinary receive, and group a is locked by a3 */
    delete_handle(url, member(&first, 1, "ReceiptHandle"));
    again = recv_attempt(url, 10, 60, "change-1");
    IT_CHECK(it_message_count(&again) == 0);
    it_reply_free(&again);
    it_reply_free(&first);
    free(url);
}

/* The <ReceiptHandle>s of an XML reply, in order, joined by spaces. */
static void xml_handles(const char *xml, char *out, size_t cap)
{
    out[0] = '\0';
    const char *open = "<ReceiptHandle>";
    for (const char *p = xml != NULL ? strstr(xml, open) : NULL; p != NULL; p = strstr(p, open)) {
        p += strlen(open);
        const char *end = strstr(p, "</ReceiptHandle>");
        if (end == NULL) {
            break;
        }
        size_t len = strlen(out);
        snprintf(out + len, cap - len, "%s%.*s", len ? " " : "", (int)(end - p), p);
    }
}

static struct it_response form_receive(const char *attempt)
{
    char form[256];
    snprintf(form, sizeof form,
             "Action=ReceiveMessage&Version=2012-11-05&MaxNumberOfMessages=10"
             "&VisibilityTimeout=60&ReceiveRequestAttemptId=%s",
             attempt);
    const char *headers[] = {"content-type: application/x-www-form-urlencoded; charset=utf-8",
                             NULL};
    struct it_request req = {.method = "POST",
                             .path = "/" IT_TENANT "/query.fifo",
                             .headers = headers,
                             .body = form,
                             .body_len = strlen(form),
                             .access_key = IT_KEY,
                             .secret = IT_SECRET};
    struct it_response r;
    IT_CHECK(it_request(&srv, &req, &r) == 0);
    IT_CHECK(r.status == 200);
    return r;
}

static void replay_query_protocol(void)
{
    char *url = fifo_queue("query.fifo");
    fsend(url, "x1", "x", "1");
    fsend(url, "y1", "y", "2");
    fsend(url, "x2", "x", "3");
    struct it_response r1 = form_receive("form-1");
    struct it_response r2 = form_receive("form-1");
    char h1[1024], h2[1024];
    xml_handles(r1.body, h1, sizeof h1);
    xml_handles(r2.body, h2, sizeof h2);
    IT_CHECK(strlen(h1) > (size_t)3 * 50); /* three handles */
    IT_STREQ(h2, h1);
    /* the attempt is the queue's, whatever protocol the retry speaks */
    struct it_reply j = recv_attempt(url, 10, 60, "form-1");
    char hj[1024] = "";
    for (size_t i = 0; i < it_message_count(&j); i++) {
        size_t len = strlen(hj);
        snprintf(hj + len, sizeof hj - len, "%s%s", i ? " " : "", member(&j, i, "ReceiptHandle"));
    }
    IT_STREQ(hj, h1);
    it_reply_free(&j);
    it_response_free(&r1);
    it_response_free(&r2);
    free(url);
}

static void replay_after_kill9(void)
{
    char *url = fifo_queue("crash.fifo");
    fsend(url, "c1", "c", "1");
    fsend(url, "d1", "d", "2");
    fsend(url, "c2", "c", "3");
    struct it_reply first = recv_attempt(url, 10, 600, "crash-1");
    IT_CHECK(it_message_count(&first) == 3);
    /* the reply is lost with the server: the client retries */
    it_server_signal(&srv, SIGKILL);
    waitpid(srv.pid, NULL, 0);
    srv.pid = 0;
    IT_REQUIRE(it_server_restart(&srv) == 0);
    struct it_reply again = recv_attempt(url, 10, 600, "crash-1");
    IT_CHECK(same_messages(&first, &again));
    for (size_t i = 0; i < it_message_count(&again); i++) {
        delete_handle(url, member(&again, i, "ReceiptHandle"));
    }
    IT_CHECK(it_queue_attr_int(&srv, url, "ApproximateNumberOfMessagesNotVisible") == 0);
    IT_CHECK(it_queue_attr_int(&srv, url, "ApproximateNumberOfMessages") == 0);
    it_reply_free(&again);
    it_reply_free(&first);
    free(url);
}

static void replay_after_lease_expired(void)
{
    char *url = fifo_queue("expired.fifo");
    fsend(url, "e1", "e", "1");
    struct it_reply first = recv_attempt(url, 1, 1, "exp-1");
    IT_REQUIRE(it_message_count(&first) == 1);
    IT_CHECK(wait_attr(url, "ApproximateNumberOfMessages", 1));
    /* the lease ran out: another consumer may hold e1 by now, so the
     * retry receives anew */
    struct it_reply again = recv_attempt(url, 1, 30, "exp-1");
    IT_CHECK(it_message_count(&again) == 1);
    IT_STREQ(member(&again, 0, "MessageId"), member(&first, 0, "MessageId"));
    IT_CHECK(strcmp(member(&again, 0, "ReceiptHandle"), member(&first, 0, "ReceiptHandle")) != 0);
    IT_STREQ(it_jstr(json_object_get(json_array_get(it_messages(&again), 0), "Attributes"),
                     "ApproximateReceiveCount"),
             "2");
    it_reply_free(&again);
    it_reply_free(&first);
    free(url);
}

static void standard_queue_ignores(void)
{
    char *url = it_create_queue(&srv, "plain", NULL);
    IT_REQUIRE(url != NULL);
    free(it_send(&srv, url, "s1"));
    free(it_send(&srv, url, "s2"));
    struct it_reply first = recv_attempt(url, 1, 30, "std-1");
    struct it_reply again = recv_attempt(url, 1, 30, "std-1");
    IT_CHECK(it_message_count(&first) == 1 && it_message_count(&again) == 1);
    IT_CHECK(strcmp(member(&first, 0, "MessageId"), member(&again, 0, "MessageId")) != 0);
    it_reply_free(&again);
    it_reply_free(&first);
    free(url);
}

int main(void)
{
    struct it_options opt = {.tls = false, .shard_size = 2};
    IT_REQUIRE(it_server_start(&srv, &opt) == 0);
    replay_within_lease();
    replay_after_changes();
    replay_query_protocol();
    replay_after_lease_expired();
    standard_queue_ignores();
    replay_after_kill9();
    IT_CHECK(it_healthz(&srv));
    IT_CHECK(it_server_stop(&srv) == 0);
    it_server_cleanup(&srv);
    return it_summary();
}
