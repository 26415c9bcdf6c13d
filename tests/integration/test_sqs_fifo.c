/*
 * test_sqs_fifo.c -- FIFO queues against the real sluiced over HTTP/2
 * (JSON) and the query protocol: naming and the FIFO attributes, the send
 * rules (MessageGroupId, MessageDeduplicationId or content-based
 * deduplication, no per-message delay, no deduplication id on a standard
 * queue; nothing stored when refused), SequenceNumber, duplicates within
 * the interval, batch order, receives in group order with one group in
 * flight at a time, the FIFO system attributes, a FIFO dead-letter queue,
 * groups spread over a shard of two partitions, and kill -9: acknowledged
 * sends survive, a retried send is stored once, sequence numbers go on
 * increasing.
 *
 * Expectations are Amazon SQS's (API Reference: CreateQueue, SendMessage,
 * SendMessageBatch, ReceiveMessage; Developer Guide, "Amazon SQS FIFO
 * queues"). The five-minute interval itself is tested over HTTP with a
 * faked clock in test_sqs_fifo_clock.c (and with the engine's injected
 * clock in tests/unit/partitions/test_part_fifo.c); receive attempt
 * retries in depth in test_sqs_attempts.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "it_sqs.h"

static struct it_server srv;

#define IPV "InvalidParameterValue"
#define IPV_SHAPE "InvalidParameterValueException"

static json_t *fifo_attrs(const char *extra_key, const char *extra_value)
{
    json_t *a = json_pack("{s:s}", "FifoQueue", "true");
    if (extra_key != NULL) {
        json_object_set_new(a, extra_key, json_string(extra_value));
    }
    return a;
}

static json_t *fsend_req(const char *url, const char *body, const char *group, const char *dedup)
{
    json_t *req = json_pack("{s:s,s:s}", "QueueUrl", url, "MessageBody", body);
    if (group != NULL) {
        json_object_set_new(req, "MessageGroupId", json_string(group));
    }
    if (dedup != NULL) {
        json_object_set_new(req, "MessageDeduplicationId", json_string(dedup));
    }
    return req;
}

/* SendMessage; the reply (caller frees). */
static struct it_reply fsend(const char *url, const char *body, const char *group,
                             const char *dedup)
{
    return it_call(&srv, "SendMessage", fsend_req(url, body, group, dedup));
}

static json_t *all_sys(int max, int vis)
{
    return json_pack("{s:[s],s:i,s:i}", "MessageSystemAttributeNames", "All", "MaxNumberOfMessages",
                     max, "VisibilityTimeout", vis);
}

/* The bodies of a receive's messages, space-separated, into out. */
static void bodies(const struct it_reply *r, char *out, size_t cap)
{
    out[0] = '\0';
    json_t *msgs = it_messages(r);
    for (size_t i = 0; i < json_array_size(msgs); i++) {
        size_t len = strlen(out);
        snprintf(out + len, cap - len, "%s%s", i ? " " : "",
                 it_jstr(json_array_get(msgs, i), "Body"));
    }
}

static const char *msg_sys(const struct it_reply *r, size_t i, const char *name)
{
    json_t *m = json_array_get(it_messages(r), i);
    return it_jstr(json_object_get(m, "Attributes"), name);
}

/* ---- queues ------------------------------------------------------------ */

static void queue_attributes(void)
{
    /* FifoQueue on a name without .fifo, and .fifo on a standard queue */
    struct it_reply r =
        it_call(&srv, "CreateQueue",
                json_pack("{s:s,s:o}", "QueueName", "plain", "Attributes", fifo_attrs(NULL, NULL)));
    IT_ERR(&r, 400, IPV, IPV_SHAPE, NULL);
    it_reply_free(&r);
    r = it_call(&srv, "CreateQueue", json_pack("{s:s}", "QueueName", "std.fifo"));
    IT_ERR(&r, 400, IPV, IPV_SHAPE, NULL);
    it_reply_free(&r);
    /* FIFO-only attributes on a standard queue */
    r = it_call(&srv, "CreateQueue",
                json_pack("{s:s,s:{s:s}}", "QueueName", "plain", "Attributes",
                          "ContentBasedDeduplication", "true"));
    IT_ERR(&r, 400, "InvalidAttributeName", "InvalidAttributeName",
           "Unknown Attribute ContentBasedDeduplication.");
    it_reply_free(&r);
    /* high throughput needs per-group deduplication */
    r = it_call(&srv, "CreateQueue",
                json_pack("{s:s,s:o}", "QueueName", "ht.fifo", "Attributes",
                          fifo_attrs("FifoThroughputLimit", "perMessageGroupId")));
    IT_ERR(&r, 400, "InvalidAttributeValue", "InvalidAttributeValue", NULL);
    it_reply_free(&r);

    char *url = it_create_queue(&srv, "attrs.fifo", fifo_attrs(NULL, NULL));
    IT_REQUIRE(url != NULL);
    r = it_call(&srv, "GetQueueAttributes",
                json_pack("{s:s,s:[s]}", "QueueUrl", url, "AttributeNames", "All"));
    IT_OK(&r);
    json_t *a = json_object_get(r.json, "Attributes");
    IT_STREQ(it_jstr(a, "FifoQueue"), "true");
    IT_STREQ(it_jstr(a, "ContentBasedDeduplication"), "false");
    IT_STREQ(it_jstr(a, "DeduplicationScope"), "queue");
    IT_STREQ(it_jstr(a, "FifoThroughputLimit"), "perQueue");
    it_reply_free(&r);
    /* the queue type cannot change */
    r = it_call(&srv, "SetQueueAttributes",
                json_pack("{s:s,s:{s:s}}", "QueueUrl", url, "Attributes", "FifoQueue", "false"));
    IT_ERR(&r, 400, "InvalidAttributeValue", "InvalidAttributeValue",
           "Invalid value for the parameter FifoQueue. Reason: Modifying queue type is not "
           "supported.");
    it_reply_free(&r);
    /* creating it again with the same attributes is idempotent */
    char *again = it_create_queue(&srv, "attrs.fifo", fifo_attrs(NULL, NULL));
    IT_STREQ(again, url);
    free(again);
    free(url);
}

/* ---- sends --------------------------------------------------------------- */

static void send_rules(void)
{
    char *url = it_create_queue(&srv, "rules.fifo", fifo_attrs(NULL, NULL));
    IT_REQUIRE(url != NULL);
    struct it_reply r = fsend(url, "x", NULL, "d");
    IT_ERR(&r, 400, "MissingParameter", "MissingRequiredParameterException",
           "The request must contain the parameter MessageGroupId.");
    it_reply_free(&r);
    r = fsend(url, "x", "g", NULL);
    IT_ERR(&r, 400, IPV, IPV_SHAPE,
           "The queue should either have ContentBasedDeduplication enabled or "
           "MessageDeduplicationId provided explicitly");
    it_reply_free(&r);
    json_t *req = fsend_req(url, "x", "g", "d");
    json_object_set_new(req, "DelaySeconds", json_integer(2));
    r = it_call(&srv, "SendMessage", req);
    IT_ERR(&r, 400, IPV, IPV_SHAPE,
           "Value 2 for parameter DelaySeconds is invalid. Reason: The request include "
           "parameter that is not valid for this queue type.");
    it_reply_free(&r);
    /* a batch with one bad entry is refused whole */
    req = json_pack("{s:s,s:[{s:s,s:s,s:s,s:s},{s:s,s:s,s:s}]}", "QueueUrl", url, "Entries", "Id",
                    "a", "MessageBody", "a", "MessageGroupId", "g", "MessageDeduplicationId", "1",
                    "Id", "b", "MessageBody", "b", "MessageDeduplicationId", "2");
    r = it_call(&srv, "SendMessageBatch", req);
    IT_ERR(&r, 400, "MissingParameter", "MissingRequiredParameterException", NULL);
    it_reply_free(&r);
    IT_CHECK(it_queue_attr_int(&srv, url, "ApproximateNumberOfMessages") == 0);
    /* DelaySeconds 0 is the queue's delay: accepted */
    req = fsend_req(url, "x", "g", "d0");
    json_object_set_new(req, "DelaySeconds", json_integer(0));
    r = it_call(&srv, "SendMessage", req);
    IT_OK(&r);
    it_reply_free(&r);

    /* a standard queue refuses a deduplication id */
    char *std = it_create_queue(&srv, "std-dedup", NULL);
    r = fsend(std, "x", NULL, "abc");
    IT_ERR(&r, 400, IPV, IPV_SHAPE,
           "Value abc for parameter MessageDeduplicationId is invalid. Reason: The request "
           "include parameter that is not valid for this queue type.");
    it_reply_free(&r);
    IT_CHECK(it_queue_attr_int(&srv, std, "ApproximateNumberOfMessages") == 0);
    free(std);
    free(url);
}

static void sequence_and_duplicates(void)
{
    char *url = it_create_queue(&srv, "seq.fifo", fifo_attrs(NULL, NULL));
    IT_REQUIRE(url != NULL);
    struct it_reply a = fsend(url, "one", "g", "d1");
    IT_OK(&a);
    const char *seq_a = it_str(&a, "SequenceNumber");
    IT_CHECK(seq_a != NULL && strlen(seq_a) == 20);
    struct it_reply b = fsend(url, "two", "g", "d2");
    IT_OK(&b);
    const char *seq_b = it_str(&b, "SequenceNumber");
    IT_CHECK(seq_a != NULL && seq_b != NULL && strcmp(seq_b, seq_a) > 0);
    /* the same id again, even in another group: accepted, not stored,
     * answered with the first send's id and number */
    struct it_reply dup = fsend(url, "three", "h", "d1");
    IT_OK(&dup);
    IT_STREQ(it_str(&dup, "MessageId"), it_str(&a, "MessageId"));
    IT_STREQ(it_str(&dup, "SequenceNumber"), seq_a);
    IT_STREQ(it_str(&dup, "MD5OfMessageBody"), "35d6d33467aae9a2e3dccb4b6b027878");
    it_reply_free(&dup);
    IT_CHECK(it_queue_attr_int(&srv, url, "ApproximateNumberOfMessages") == 2);

    /* received: in order, with the FIFO system attributes */
    struct it_reply r = it_receive(&srv, url, all_sys(10, 30));
    char got[128];
    bodies(&r, got, sizeof got);
    IT_STREQ(got, "one two");
    IT_STREQ(msg_sys(&r, 0, "MessageGroupId"), "g");
    IT_STREQ(msg_sys(&r, 0, "MessageDeduplicationId"), "d1");
    IT_STREQ(msg_sys(&r, 0, "SequenceNumber"), seq_a);
    IT_STREQ(msg_sys(&r, 1, "SequenceNumber"), seq_b);
    /* deleted, its id still deduplicates within the interval */
    IT_CHECK(it_delete_received(&srv, url, &r, 0));
    IT_CHECK(it_delete_received(&srv, url, &r, 1));
    it_reply_free(&r);
    dup = fsend(url, "again", "g", "d2");
    IT_OK(&dup);
    IT_STREQ(it_str(&dup, "MessageId"), it_str(&b, "MessageId"));
    it_reply_free(&dup);
    IT_CHECK(it_queue_attr_int(&srv, url, "ApproximateNumberOfMessages") == 0);
    it_reply_free(&a);
    it_reply_free(&b);

    /* content-based: the SHA-256 of the body is the id */
    char *cb = it_create_queue(&srv, "cb.fifo", fifo_attrs("ContentBasedDeduplication", "true"));
    IT_REQUIRE(cb != NULL);
    a = fsend(cb, "same body", "g", NULL);
    IT_OK(&a);
    b = fsend(cb, "same body", "g", NULL);
    IT_OK(&b);
    IT_STREQ(it_str(&b, "MessageId"), it_str(&a, "MessageId"));
    r = it_receive(&srv, cb, all_sys(10, 30));
    IT_CHECK(it_message_count(&r) == 1);
    /* sha256("same body") */
    IT_STREQ(msg_sys(&r, 0, "MessageDeduplicationId"),
             "8f6372a8b1509601faa57ff3a292cfcccb95aa2325c18b8e50b0c035ea1648fe");
    it_reply_free(&r);
    it_reply_free(&a);
    it_reply_free(&b);
    free(cb);
    free(url);
}

static void batch_order(void)
{
    char *url = it_create_queue(&srv, "batch.fifo", fifo_attrs(NULL, NULL));
    IT_REQUIRE(url != NULL);
    json_t *entries = json_array();
    for (int i = 0; i < 10; i++) {
        char id[8], body[8], dedup[8];
        snprintf(id, sizeof id, "e%d", i);
        snprintf(body, sizeof body, "m%d", i);
        snprintf(dedup, sizeof dedup, "b%d", i);
        json_array_append_new(entries, json_pack("{s:s,s:s,s:s,s:s}", "Id", id, "MessageBody", body,
                                                 "MessageGroupId", i % 2 ? "odd" : "even",
                                                 "MessageDeduplicationId", i == 9 ? "b0" : dedup));
    }
    struct it_reply r = it_call(&srv, "SendMessageBatch",
                                json_pack("{s:s,s:o}", "QueueUrl", url, "Entries", entries));
    IT_OK(&r);
    json_t *ok = json_object_get(r.json, "Successful");
    IT_CHECK(json_array_size(ok) == 10);
    const char *prev = "";
    for (size_t i = 0; i < 9; i++) {
        const char *seq = it_jstr(json_array_get(ok, i), "SequenceNumber");
        IT_CHECK(seq != NULL && strcmp(seq, prev) > 0);
        prev = seq != NULL ? seq : "";
    }
    /* entry 9 repeats entry 0's id: a duplicate of it */
    IT_STREQ(it_jstr(json_array_get(ok, 9), "MessageId"),
             it_jstr(json_array_get(ok, 0), "MessageId"));
    it_reply_free(&r);
    IT_CHECK(it_queue_attr_int(&srv, url, "ApproximateNumberOfMessages") == 9);
    free(url);
}

/* ---- receives -------------------------------------------------------------- */

static void group_order_and_lock(void)
{
    char *url = it_create_queue(&srv, "lock.fifo", fifo_attrs(NULL, NULL));
    IT_REQUIRE(url != NULL);
    static const char *const order[][2] = {{"a1", "a"}, {"b1", "b"}, {"a2", "a"},
                                           {"a3", "a"}, {"b2", "b"}, {"c1", "c"}};
    for (size_t i = 0; i < 6; i++) {
        struct it_reply s = fsend(url, order[i][0], order[i][1], order[i][0]);
        IT_OK(&s);
        it_reply_free(&s);
    }
    char got[128];
    /* as many of one group as there are (SQS fills from one group first,
     * leaving the others to other consumers), then the next group */
    struct it_reply r1 = it_receive(&srv, url, all_sys(3, 30));
    bodies(&r1, got, sizeof got);
    IT_STREQ(got, "a1 a2 a3");
    struct it_reply r2 = it_receive(&srv, url, all_sys(1, 30));
    bodies(&r2, got, sizeof got);
    IT_STREQ(got, "b1");
    struct it_reply r3 = it_receive(&srv, url, all_sys(10, 30));
    bodies(&r3, got, sizeof got);
    IT_STREQ(got, "c1"); /* a and b are in flight */
    it_reply_free(&r3);
    /* a1 deleted, a2 and a3 still in flight: a stays locked; b1 back
     * (visibility 0) comes first again */
    IT_CHECK(it_delete_received(&srv, url, &r1, 0));
    const char *h = it_jstr(json_array_get(it_messages(&r2), 0), "ReceiptHandle");
    struct it_reply v = it_call(
        &srv, "ChangeMessageVisibility",
        json_pack("{s:s,s:s,s:i}", "QueueUrl", url, "ReceiptHandle", h, "VisibilityTimeout", 0));
    IT_OK(&v);
    it_reply_free(&v);
    char *old_handle = strdup(h != NULL ? h : "");
    it_reply_free(&r2);
    r2 = it_receive(&srv, url, all_sys(10, 30));
    bodies(&r2, got, sizeof got);
    IT_STREQ(got, "b1 b2");
    IT_STREQ(msg_sys(&r2, 0, "ApproximateReceiveCount"), "2");
    /* b1's first handle has expired: SQS refuses it on a FIFO queue */
    v = it_call(&srv, "DeleteMessage",
                json_pack("{s:s,s:s}", "QueueUrl", url, "ReceiptHandle", old_handle));
    char want[256];
    snprintf(want, sizeof want,
             "Value %s for parameter ReceiptHandle is invalid. Reason: The receipt handle has "
             "expired.",
             old_handle);
    IT_ERR(&v, 400, IPV, IPV_SHAPE, want);
    it_reply_free(&v);
    free(old_handle);
    it_reply_free(&r2);
    it_reply_free(&r1);
    free(url);
}

/* /metrics on the admin listener: locked groups and deduplicated sends
 * per FIFO queue (after the tests above). */
static void fifo_metrics(void)
{
    struct it_request req = {
        .method = "GET",
        .path = "/metrics",
        .access_key = IT_ADMIN_KEY,
        .secret = IT_ADMIN_SECRET,
        .admin = true,
    };
    struct it_response r;
    IT_REQUIRE(it_request(&srv, &req, &r) == 0);
    IT_CHECK(r.status == 200);
    const char *b = r.body != NULL ? r.body : "";
    /* lock.fifo holds a2 a3, b1 b2 and c1 in flight: three groups locked */
    IT_CHECK(strstr(b, "sluice_fifo_groups_inflight{tenant=\"acme\",queue=\"lock.fifo\"} 3\n") !=
             NULL);
    IT_CHECK(strstr(b, "sluice_fifo_deduplicated_sends_total{tenant=\"acme\",queue=\"seq.fifo\"} "
                       "2\n") != NULL);
    IT_CHECK(strstr(b, "sluice_fifo_deduplicated_sends_total{tenant=\"acme\",queue=\"cb.fifo\"} "
                       "1\n") != NULL);
    /* every id sent above is in some partition's in-memory index */
    double ids = 0;
    for (const char *l = strstr(b, "\nsluice_partition_fifo_dedup_ids{"); l != NULL;
         l = strstr(l + 1, "\nsluice_partition_fifo_dedup_ids{")) {
        const char *sp = strchr(l + 1, ' ');
        ids += sp != NULL ? strtod(sp + 1, NULL) : 0;
    }
    IT_CHECK(ids >= 5);
    /* no FIFO series for a standard queue */
    IT_CHECK(strstr(b, "sluice_fifo_groups_inflight{tenant=\"acme\",queue=\"std-dedup\"}") == NULL);
    it_response_free(&r);
}

static void receive_attempts(void)
{
    char *url = it_create_queue(&srv, "attempt.fifo", fifo_attrs(NULL, NULL));
    IT_REQUIRE(url != NULL);
    struct it_reply s = fsend(url, "a1", "a", "1");
    it_reply_free(&s);
    s = fsend(url, "a2", "a", "2");
    it_reply_free(&s);
    json_t *extra = all_sys(1, 30);
    json_object_set_new(extra, "ReceiveRequestAttemptId", json_string("try-1"));
    struct it_reply r1 = it_receive(&srv, url, json_deep_copy(extra));
    IT_CHECK(it_message_count(&r1) == 1);
    /* the retry gets the same message and handle, leasing nothing more */
    struct it_reply r2 = it_receive(&srv, url, extra);
    IT_CHECK(it_message_count(&r2) == 1);
    json_t *m1 = json_array_get(it_messages(&r1), 0);
    json_t *m2 = json_array_get(it_messages(&r2), 0);
    IT_STREQ(it_jstr(m2, "Body"), "a1");
    IT_STREQ(it_jstr(m2, "ReceiptHandle"), it_jstr(m1, "ReceiptHandle"));
    IT_STREQ(msg_sys(&r2, 0, "ApproximateReceiveCount"), "1");
    IT_CHECK(it_queue_attr_int(&srv, url, "ApproximateNumberOfMessagesNotVisible") == 1);
    it_reply_free(&r2);
    /* another attempt is a new receive: the group is locked */
    extra = all_sys(1, 30);
    json_object_set_new(extra, "ReceiveRequestAttemptId", json_string("try-2"));
    r2 = it_receive(&srv, url, extra);
    IT_CHECK(it_message_count(&r2) == 0);
    it_reply_free(&r2);
    /* an invalid attempt id is refused */
    extra = json_pack("{s:s}", "ReceiveRequestAttemptId", "bad id with spaces\x01");
    r2 = it_receive(&srv, url, extra);
    IT_ERR(&r2, 400, IPV, IPV_SHAPE, NULL);
    it_reply_free(&r2);
    it_reply_free(&r1);
    free(url);
}

static void fifo_dlq(void)
{
    char *dlq = it_create_queue(&srv, "dead.fifo", fifo_attrs(NULL, NULL));
    char *std_dlq = it_create_queue(&srv, "dead-std", NULL);
    IT_REQUIRE(dlq != NULL && std_dlq != NULL);
    /* a FIFO queue's dead-letter queue must be FIFO */
    char policy[256];
    snprintf(policy, sizeof policy,
             "{\"deadLetterTargetArn\":\"arn:aws:sqs:" IT_REGION ":" IT_TENANT
             ":dead-std\",\"maxReceiveCount\":\"1\"}");
    struct it_reply r =
        it_call(&srv, "CreateQueue",
                json_pack("{s:s,s:{s:s,s:s}}", "QueueName", "src.fifo", "Attributes", "FifoQueue",
                          "true", "RedrivePolicy", policy));
    IT_ERR(&r, 400, IPV, IPV_SHAPE, NULL);
    it_reply_free(&r);
    snprintf(policy, sizeof policy,
             "{\"deadLetterTargetArn\":\"arn:aws:sqs:" IT_REGION ":" IT_TENANT
             ":dead.fifo\",\"maxReceiveCount\":\"1\"}");
    char *src = it_create_queue(&srv, "src.fifo", fifo_attrs("RedrivePolicy", policy));
    IT_REQUIRE(src != NULL);
    r = fsend(src, "m1", "g", "x1");
    it_reply_free(&r);
    r = fsend(src, "m2", "g", "x2");
    it_reply_free(&r);
    r = it_receive(&srv, src, all_sys(10, 0)); /* once; visible again at once */
    IT_CHECK(it_message_count(&r) == 2);
    it_reply_free(&r);
    for (int i = 0; i < 50 && it_queue_attr_int(&srv, dlq, "ApproximateNumberOfMessages") < 2;
         i++) {
        r = it_receive(&srv, src, all_sys(10, 30)); /* over the count: they move */
        IT_CHECK(it_message_count(&r) == 0);
        it_reply_free(&r);
    }
    r = it_receive(&srv, dlq, all_sys(10, 0));
    char got[64];
    bodies(&r, got, sizeof got);
    IT_STREQ(got, "m1 m2");
    IT_STREQ(msg_sys(&r, 0, "MessageGroupId"), "g");
    IT_STREQ(msg_sys(&r, 0, "MessageDeduplicationId"), "x1");
    it_reply_free(&r);
    /* redrive back to the source: in order, sequenced anew */
    r = it_call(
        &srv, "StartMessageMoveTask",
        json_pack("{s:s}", "SourceArn", "arn:aws:sqs:" IT_REGION ":" IT_TENANT ":dead.fifo"));
    IT_OK(&r);
    it_reply_free(&r);
    for (int i = 0; i < 200 && it_queue_attr_int(&srv, src, "ApproximateNumberOfMessages") < 2;
         i++) {
        struct timespec ts = {0, 10L * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    r = it_receive(&srv, src, all_sys(10, 30));
    bodies(&r, got, sizeof got);
    IT_STREQ(got, "m1 m2");
    const char *s0 = msg_sys(&r, 0, "SequenceNumber");
    const char *s1 = msg_sys(&r, 1, "SequenceNumber");
    IT_CHECK(s0 != NULL && s1 != NULL && strcmp(s1, s0) > 0);
    it_reply_free(&r);
    free(src);
    free(dlq);
    free(std_dlq);
}

/* ---- the query protocol -------------------------------------------------------- */

static struct it_response query(const char *form)
{
    const char *headers[] = {"content-type: application/x-www-form-urlencoded; charset=utf-8",
                             NULL};
    struct it_request req = {
        .method = "POST",
        .path = "/",
        .headers = headers,
        .body = form,
        .body_len = strlen(form),
        .access_key = IT_KEY,
        .secret = IT_SECRET,
    };
    struct it_response r;
    IT_CHECK(it_request(&srv, &req, &r) == 0);
    return r;
}

static void query_protocol(void)
{
    /* CreateQueue in the query protocol: FifoQueue as Attribute.N */
    struct it_response c = query("Action=CreateQueue&Version=2012-11-05&QueueName=query.fifo"
                                 "&Attribute.1.Name=FifoQueue&Attribute.1.Value=true");
    IT_CHECK(c.status == 200);
    it_response_free(&c);
    c = query("Action=CreateQueue&Version=2012-11-05&QueueName=query-std.fifo");
    IT_CHECK(c.status == 400);
    IT_CHECK(c.body != NULL && strstr(c.body, "<Code>InvalidParameterValue</Code>") != NULL);
    it_response_free(&c);
    char *url = it_create_queue(&srv, "query.fifo", fifo_attrs(NULL, NULL));
    IT_REQUIRE(url != NULL);
    char form[512];
    snprintf(form, sizeof form,
             "Action=SendMessage&Version=2012-11-05&QueueUrl=%s&MessageBody=hello"
             "&MessageGroupId=g&MessageDeduplicationId=q1",
             url);
    struct it_response r = query(form);
    IT_CHECK(r.status == 200);
    IT_CHECK(r.body != NULL && strstr(r.body, "<SequenceNumber>") != NULL);
    it_response_free(&r);
    snprintf(form, sizeof form,
             "Action=SendMessage&Version=2012-11-05&QueueUrl=%s&MessageBody=hello"
             "&MessageDeduplicationId=q2",
             url);
    r = query(form);
    IT_CHECK(r.status == 400);
    IT_CHECK(r.body != NULL && strstr(r.body, "<Code>MissingParameter</Code>") != NULL);
    it_response_free(&r);
    IT_CHECK(it_queue_attr_int(&srv, url, "ApproximateNumberOfMessages") == 1);
    /* a batch entry's group and id, and the FIFO system attributes in XML */
    snprintf(form, sizeof form,
             "Action=SendMessageBatch&Version=2012-11-05&QueueUrl=%s"
             "&SendMessageBatchRequestEntry.1.Id=e1&SendMessageBatchRequestEntry.1.MessageBody=b1"
             "&SendMessageBatchRequestEntry.1.MessageGroupId=g"
             "&SendMessageBatchRequestEntry.1.MessageDeduplicationId=q3",
             url);
    r = query(form);
    IT_CHECK(r.status == 200);
    IT_CHECK(r.body != NULL && strstr(r.body, "<SequenceNumber>") != NULL);
    it_response_free(&r);
    snprintf(form, sizeof form,
             "Action=ReceiveMessage&Version=2012-11-05&QueueUrl=%s&MaxNumberOfMessages=10"
             "&MessageSystemAttributeName.1=All",
             url);
    r = query(form);
    IT_CHECK(r.status == 200);
    IT_CHECK(r.body != NULL && strstr(r.body, "<Body>hello</Body>") != NULL &&
             strstr(r.body, "<Body>b1</Body>") != NULL);
    IT_CHECK(r.body != NULL && strstr(r.body, "<Name>SequenceNumber</Name>") != NULL &&
             strstr(r.body, "<Name>MessageDeduplicationId</Name><Value>q1</Value>") != NULL &&
             strstr(r.body, "<Name>MessageGroupId</Name><Value>g</Value>") != NULL);
    it_response_free(&r);
    free(url);
}

/* ---- groups over two partitions, and kill -9 ------------------------------- */

/* Restarts sluiced, after a SIGKILL when kill9 is set; wide: with
 * shard_size 2 (the harness's default is 1). */
static void restart(bool kill9, bool wide)
{
    struct it_options opt = {.tls = false, .admin = true, .shard_size = 2};
    IT_REQUIRE(it_server_bounce(&srv, wide ? &opt : NULL, kill9) == 0);
}

static void groups_over_partitions_and_kill9(void)
{
    restart(false, true);
    char *url =
        it_create_queue(&srv, "wide.fifo",
                        json_pack("{s:s,s:s,s:s}", "FifoQueue", "true", "DeduplicationScope",
                                  "messageGroup", "FifoThroughputLimit", "perMessageGroupId"));
    IT_REQUIRE(url != NULL);
    /* 8 groups in batches: they spread over both partitions */
    char last_seq[8][24] = {{0}};
    int sent = 0;
    for (int b = 0; b < 4; b++) {
        json_t *entries = json_array();
        for (int i = 0; i < 8; i++) {
            char id[8], body[16], group[8];
            snprintf(id, sizeof id, "e%d", i);
            snprintf(body, sizeof body, "g%d-%d", i, b);
            snprintf(group, sizeof group, "g%d", i);
            json_array_append_new(entries, json_pack("{s:s,s:s,s:s,s:s}", "Id", id, "MessageBody",
                                                     body, "MessageGroupId", group,
                                                     "MessageDeduplicationId", body));
        }
        struct it_reply r = it_call(&srv, "SendMessageBatch",
                                    json_pack("{s:s,s:o}", "QueueUrl", url, "Entries", entries));
        IT_OK(&r);
        json_t *ok = json_object_get(r.json, "Successful");
        IT_CHECK(json_array_size(ok) == 8);
        for (size_t i = 0; i < json_array_size(ok); i++) {
            const char *seq = it_jstr(json_array_get(ok, i), "SequenceNumber");
            IT_CHECK(seq != NULL && strcmp(seq, last_seq[i]) > 0);
            snprintf(last_seq[i], sizeof last_seq[i], "%s", seq != NULL ? seq : "");
            sent++;
        }
        it_reply_free(&r);
    }
    /* acknowledged, then kill -9 */
    restart(true, false);
    IT_CHECK(it_queue_attr_int(&srv, url, "ApproximateNumberOfMessages") == sent);
    /* the SDK's retry of the last batch's first entry: stored once */
    struct it_reply r = fsend(url, "g0-3", "g0", "g0-3");
    IT_OK(&r);
    IT_STREQ(it_str(&r, "SequenceNumber"), last_seq[0]);
    it_reply_free(&r);
    /* a new send continues above */
    r = fsend(url, "g0-4", "g0", "g0-4");
    IT_OK(&r);
    const char *seq = it_str(&r, "SequenceNumber");
    IT_CHECK(seq != NULL && strcmp(seq, last_seq[0]) > 0);
    it_reply_free(&r);
    /* every group in order, across both partitions */
    int next[8] = {0};
    int got = 0;
    for (int round = 0; round < 40 && got < sent + 1; round++) {
        r = it_receive(&srv, url, all_sys(10, 30));
        json_t *msgs = it_messages(&r);
        for (size_t i = 0; i < json_array_size(msgs); i++) {
            int g = -1, n = -1;
            IT_CHECK(sscanf(it_jstr(json_array_get(msgs, i), "Body"), "g%d-%d", &g, &n) == 2);
            if (g >= 0 && g < 8) {
                IT_CHECK(n == next[g]);
                next[g] = n + 1;
            }
            IT_CHECK(it_delete_received(&srv, url, &r, i));
            got++;
        }
        it_reply_free(&r);
    }
    IT_CHECK(got == sent + 1);
    free(url);
}

int main(void)
{
    struct it_options opt = {.tls = false, .admin = true};
    IT_REQUIRE(it_server_start(&srv, &opt) == 0);
    queue_attributes();
    send_rules();
    sequence_and_duplicates();
    batch_order();
    group_order_and_lock();
    fifo_metrics();
    receive_attempts();
    fifo_dlq();
    query_protocol();
    groups_over_partitions_and_kill9();
    IT_CHECK(it_healthz(&srv));
    IT_CHECK(it_server_stop(&srv) == 0);
    it_server_cleanup(&srv);
    return it_summary();
}
