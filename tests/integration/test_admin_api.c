/*
 * test_admin_api.c -- the admin API routes of docs/admin.md against the
 * real sluiced:
 *  - authorisation: no credentials 401, a tenant's SigV4 keys 403, on
 *    reads and writes; the admin's SigV4 and bearer token pass;
 *  - reads: /api/queues (counts, dlq_of, redrive_target), one queue with
 *    its attributes, /api/partitions;
 *  - peek: twice, then a real receive reports ApproximateReceiveCount 2
 *    for a message received once before: the peeks counted nothing;
 *  - one message: delete and move by ref, each once (a second time 404);
 *  - pause and resume: a paused send gets QueuePaused (400) in the JSON
 *    and the query protocol, GetQueueAttributes All shows SluicePaused, a
 *    paused receive answers empty, and the pause survives a restart;
 *  - a long poll already waiting when dequeue is paused takes nothing
 *    sent after the pause and answers empty at its deadline;
 *  - pause enqueue and pause dequeue raced from two connections: both
 *    stick, in memory and after a restart;
 *  - a queue deleted while paused leaves no pause behind, in ops.db or
 *    after a restart: its name, created again, takes sends;
 *  - purge; redrive to a destination until COMPLETED, whose history
 *    survives a restart; cancel of a finished task 404;
 *  - reload: a valid file ok, an invalid one its diagnostics;
 *  - bad input: malformed JSON, unknown fields, bad refs, wrong methods,
 *    unknown routes; the write rate (429 past the burst);
 *  - every write leaves an audit line naming the principal, one line per
 *    write even when a value holds a newline or a quote.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sqlite3.h>

#include "it_sqs.h"

#define TOKEN "ops-token_1"

static const char tenants_yaml[] = IT_TENANTS_YAML_WITH_TOKEN(TOKEN) /* acme, and: */
    "  other:\n"
    "    access_key_id: AKIDOTHER\n"
    "    secret_access_key: other-secret\n";

static struct it_server srv;

static bool expect(const char *method, const char *path, const char *body, long status,
                   const char *code)
{
    struct it_reply a = it_admin(&srv, method, path, body, TOKEN);
    const char *error = it_str(&a, "error");
    bool ok = a.status == status && (code == NULL || (error != NULL && strcmp(error, code) == 0));
    if (!ok) {
        char *text = a.json != NULL ? json_dumps(a.json, JSON_COMPACT) : NULL;
        fprintf(stderr, "%s %s: want %ld %s, got %ld %s\n", method, path, status, code ? code : "",
                a.status, text ? text : "(no JSON)");
        free(text);
    }
    it_reply_free(&a);
    return ok;
}

/* The queue object of acme/name in GET /api/queues?tenant=acme (owned), or
 * NULL. */
static json_t *queue_entry(const char *name)
{
    struct it_reply a = it_admin(&srv, "GET", "/api/queues?tenant=" IT_TENANT, NULL, TOKEN);
    json_t *found = NULL;
    size_t i;
    json_t *q;
    json_array_foreach(json_object_get(a.json, "queues"), i, q)
    {
        if (strcmp(it_jstr(q, "name"), name) == 0) {
            found = json_incref(q);
        }
    }
    it_reply_free(&a);
    return found;
}

static long long queue_count(const char *name, const char *field)
{
    json_t *q = queue_entry(name);
    long long v = q != NULL ? json_integer_value(json_object_get(q, field)) : -1;
    json_decref(q);
    return v;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* ---- the checks --------------------------------------------------------------- */

static void check_authorisation(void)
{
    struct it_reply a = it_admin_as(&srv, &(struct it_admin_call){.path = "/api/queues"});
    IT_CHECK(a.status == 401);
    it_reply_free(&a);
    a = it_admin_as(
        &srv, &(struct it_admin_call){.path = "/api/queues", .key = IT_KEY, .secret = IT_SECRET});
    IT_CHECK(a.status == 403 && strcmp(it_str(&a, "error"), "AccessDenied") == 0);
    it_reply_free(&a);
    a = it_admin_as(&srv, &(struct it_admin_call){.method = "POST",
                                                  .path = "/api/queues/acme/src/pause",
                                                  .body = "{}",
                                                  .key = IT_KEY,
                                                  .secret = IT_SECRET});
    IT_CHECK(a.status == 403);
    it_reply_free(&a);
    a = it_admin_as(&srv,
                    &(struct it_admin_call){.method = "POST", .path = "/api/reload", .body = "{}"});
    IT_CHECK(a.status == 401);
    it_reply_free(&a);
    a = it_admin_as(&srv, &(struct it_admin_call){.path = "/api/partitions",
                                                  .key = IT_ADMIN_KEY,
                                                  .secret = IT_ADMIN_SECRET});
    IT_CHECK(a.status == 200);
    it_reply_free(&a);
    /* nothing was paused by the refused write */
    json_t *q = queue_entry("src");
    IT_CHECK(q != NULL && json_is_false(json_object_get(json_object_get(q, "paused"), "enqueue")));
    json_decref(q);
}

static void check_reads(void)
{
    json_t *q = queue_entry("dlq");
    IT_REQUIRE(q != NULL);
    IT_CHECK(json_integer_value(json_object_get(q, "ready")) == 4);
    json_t *of = json_object_get(q, "dlq_of");
    IT_CHECK(json_array_size(of) == 1 &&
             strcmp(json_string_value(json_array_get(of, 0)), "src") == 0);
    IT_CHECK(strncmp(it_jstr(q, "arn"), "arn:aws:sqs:us-east-1:acme:dlq", 30) == 0);
    json_decref(q);
    /* src's messages were received (first attempt) before they moved */
    q = queue_entry("src");
    IT_CHECK(q != NULL && json_is_real(json_object_get(q, "age_of_first_attempt_s")) &&
             json_real_value(json_object_get(q, "age_of_first_attempt_s")) >= 0);
    json_decref(q);
    q = queue_entry("src");
    IT_CHECK(q != NULL && strcmp(it_jstr(q, "redrive_target"), "dlq") == 0);
    json_decref(q);

    struct it_reply a = it_admin(&srv, "GET", "/api/queues/acme/src", NULL, TOKEN);
    IT_CHECK(a.status == 200);
    json_t *attrs = json_object_get(a.json, "attributes");
    IT_CHECK(json_string_value(json_object_get(attrs, "RedrivePolicy")) != NULL);
    IT_CHECK(strcmp(json_string_value(json_object_get(attrs, "VisibilityTimeout")), "30") == 0);
    it_reply_free(&a);
    IT_CHECK(expect("GET", "/api/queues/acme/nope", NULL, 404, "NotFound"));
    IT_CHECK(expect("GET", "/api/queues/nobody/src", NULL, 404, "NotFound"));

    a = it_admin(&srv, "GET", "/api/partitions", NULL, TOKEN);
    IT_CHECK(a.status == 200 && json_array_size(json_object_get(a.json, "partitions")) == 2);
    json_t *p0 = json_array_get(json_object_get(a.json, "partitions"), 0);
    IT_CHECK(json_is_true(json_object_get(p0, "ok")));
    IT_CHECK(json_integer_value(json_object_get(p0, "commits")) > 0 ||
             json_integer_value(json_object_get(
                 json_array_get(json_object_get(a.json, "partitions"), 1), "commits")) > 0);
    it_reply_free(&a);
    a = it_admin(&srv, "GET", "/tenants", NULL, TOKEN);
    IT_CHECK(a.status == 200 && json_array_size(json_object_get(a.json, "tenants")) == 2);
    it_reply_free(&a);
}

/* The ref of the peeked message with this body, into ref. */
static bool peek_ref(const char *queue, const char *body, char *ref, size_t cap,
                     long long *receive_count)
{
    char path[128];
    snprintf(path, sizeof path, "/api/queues/acme/%s/messages?max=100", queue);
    struct it_reply a = it_admin(&srv, "GET", path, NULL, TOKEN);
    bool found = false;
    size_t i;
    json_t *m;
    json_array_foreach(json_object_get(a.json, "messages"), i, m)
    {
        if (strcmp(it_jstr(m, "body"), body) == 0) {
            snprintf(ref, cap, "%s", it_jstr(m, "ref"));
            if (receive_count != NULL) {
                *receive_count = json_integer_value(json_object_get(m, "receive_count"));
            }
            found = true;
        }
    }
    it_reply_free(&a);
    return found;
}

static void check_peek(const char *dlq_url)
{
    char ref[64];
    long long count = -1;
    /* every DLQ message was received once on src before it moved */
    IT_REQUIRE(peek_ref("dlq", "m0", ref, sizeof ref, &count));
    IT_CHECK(count == 1);
    IT_CHECK(peek_ref("dlq", "m0", ref, sizeof ref, &count) && count == 1);

    struct it_reply a = it_admin(&srv, "GET", "/api/queues/acme/dlq/messages?max=2", NULL, TOKEN);
    IT_CHECK(a.status == 200 && json_array_size(json_object_get(a.json, "messages")) == 2);
    json_t *m = json_array_get(json_object_get(a.json, "messages"), 0);
    json_t *attrs = json_object_get(m, "attributes");
    IT_CHECK(strcmp(json_string_value(json_object_get(attrs, "ApproximateReceiveCount")), "1") ==
             0);
    IT_CHECK(strstr(json_string_value(json_object_get(attrs, "DeadLetterQueueSourceArn")),
                    ":acme:src") != NULL);
    IT_CHECK(strcmp(it_jstr(m, "source_queue"), "src") == 0);
    json_t *ma = json_object_get(json_object_get(m, "message_attributes"), "colour");
    IT_CHECK(ma != NULL && strcmp(it_jstr(ma, "StringValue"), "blue") == 0);
    it_reply_free(&a);
    IT_CHECK(expect("GET", "/api/queues/acme/dlq/messages?max=0", NULL, 400, "BadRequest"));
    IT_CHECK(expect("GET", "/api/queues/acme/dlq/messages?max=x", NULL, 400, "BadRequest"));
    IT_CHECK(queue_count("dlq", "inflight") == 0);

    /* A real receive now: the count goes from 1 to 2, so the peeks did
     * not count. Visibility 0 leaves the messages ready. */
    struct it_reply r =
        it_receive(&srv, dlq_url,
                   json_pack("{s:i, s:i, s:[s]}", "MaxNumberOfMessages", 10, "VisibilityTimeout", 0,
                             "MessageSystemAttributeNames", "ApproximateReceiveCount"));
    json_t *msgs = it_messages(&r);
    IT_CHECK(json_array_size(msgs) > 0);
    size_t i;
    json_array_foreach(msgs, i, m)
    {
        IT_CHECK(
            strcmp(it_jstr(json_object_get(m, "Attributes"), "ApproximateReceiveCount"), "2") == 0);
    }
    it_reply_free(&r);
}

static void check_one_message(void)
{
    char ref[64], path[160];
    IT_REQUIRE(peek_ref("dlq", "m1", ref, sizeof ref, NULL));
    snprintf(path, sizeof path, "/api/queues/acme/dlq/messages/%s/delete", ref);
    IT_CHECK(expect("POST", path, NULL, 200, NULL));
    IT_CHECK(expect("POST", path, NULL, 404, "NotFound"));
    IT_CHECK(!peek_ref("dlq", "m1", ref, sizeof ref, NULL));
    IT_CHECK(queue_count("dlq", "ready") == 3);
    IT_CHECK(expect("POST", "/api/queues/acme/dlq/messages/zz/delete", NULL, 400, "BadRequest"));
    IT_CHECK(expect("POST", "/api/queues/acme/dlq/messages/0-0/delete", NULL, 400, "BadRequest"));
    IT_CHECK(expect("POST", "/api/queues/acme/dlq/messages/9-1/delete", NULL, 400, "BadRequest"));

    IT_REQUIRE(peek_ref("dlq", "m2", ref, sizeof ref, NULL));
    snprintf(path, sizeof path, "/api/queues/acme/dlq/messages/%s/move", ref);
    IT_CHECK(expect("POST", path, "{\"destination\":\"other/x\"}", 400, "BadRequest"));
    IT_CHECK(expect("POST", path, "{\"destination\":\"acme\"}", 400, "BadRequest"));
    IT_CHECK(expect("POST", path, "{\"destination\":\"acme/missing\"}", 404, "NotFound"));
    IT_CHECK(expect("POST", path, "{\"dest\":\"acme/parking\"}", 400, "BadRequest"));
    IT_CHECK(expect("POST", path, "{\"destination\":\"acme/parking\"}", 200, NULL));
    IT_CHECK(expect("POST", path, "{\"destination\":\"acme/parking\"}", 404, "NotFound"));
    IT_CHECK(queue_count("parking", "ready") == 1);
    IT_CHECK(queue_count("dlq", "ready") == 2);
    char moved_ref[64];
    long long count = -1;
    IT_CHECK(peek_ref("parking", "m2", moved_ref, sizeof moved_ref, &count) && count == 0);
}

static void check_pause(const char *src_url)
{
    IT_CHECK(
        expect("POST", "/api/queues/acme/src/pause", "{\"enqueue\":\"yes\"}", 400, "BadRequest"));
    IT_CHECK(expect("POST", "/api/queues/acme/src/pause", "[1]", 400, "BadRequest"));
    IT_CHECK(expect("POST", "/api/queues/acme/src/pause", "{\"enqueue\":true", 400, "BadRequest"));
    struct it_reply a = it_admin(&srv, "POST", "/api/queues/acme/src/pause",
                                 "{\"enqueue\":true,"
                                 "\"dequeue\":false}",
                                 TOKEN);
    IT_CHECK(a.status == 200);
    json_t *paused = json_object_get(a.json, "paused");
    IT_CHECK(json_is_true(json_object_get(paused, "enqueue")) &&
             json_is_false(json_object_get(paused, "dequeue")));
    it_reply_free(&a);

    struct it_reply r = it_call(&srv, "SendMessage",
                                json_pack("{s:s, s:s}", "QueueUrl", src_url, "MessageBody", "x"));
    IT_CHECK(r.status == 400 && strcmp(r.query_error, "QueuePaused;Sender") == 0);
    it_reply_free(&r);
    /* the query protocol too */
    char form[512];
    snprintf(form, sizeof form, "Action=SendMessage&QueueUrl=%s&MessageBody=x&Version=2012-11-05",
             src_url);
    const char *hdr[] = {"content-type: application/x-www-form-urlencoded", NULL};
    struct it_request q = {.method = "POST",
                           .path = "/",
                           .headers = hdr,
                           .body = form,
                           .body_len = strlen(form),
                           .access_key = IT_KEY,
                           .secret = IT_SECRET};
    struct it_response qr;
    IT_CHECK(it_request(&srv, &q, &qr) == 0);
    IT_CHECK(qr.status == 400 && strstr(qr.body, "<Code>QueuePaused</Code>") != NULL);
    it_response_free(&qr);

    r = it_call(&srv, "GetQueueAttributes",
                json_pack("{s:s, s:[s]}", "QueueUrl", src_url, "AttributeNames", "All"));
    IT_CHECK(strcmp(it_jstr(json_object_get(r.json, "Attributes"), "SluicePaused"), "enqueue") ==
             0);
    it_reply_free(&r);

    /* dequeue too: a receive takes nothing, though a message is ready */
    IT_CHECK(expect("POST", "/api/queues/acme/src/resume", "{\"enqueue\":true}", 200, NULL));
    char *id = it_send(&srv, src_url, "while-paused");
    IT_CHECK(id != NULL);
    free(id);
    IT_CHECK(expect("POST", "/api/queues/acme/src/pause", "{\"dequeue\":true,\"enqueue\":true}",
                    200, NULL));
    r = it_receive(&srv, src_url, json_pack("{s:i}", "WaitTimeSeconds", 1));
    IT_CHECK(r.status == 200 && it_message_count(&r) == 0);
    it_reply_free(&r);
    IT_CHECK(queue_count("src", "ready") == 1);

    /* durable: still paused after a restart */
    IT_CHECK(it_server_stop(&srv) == 0);
    IT_REQUIRE(it_server_restart(&srv) == 0);
    json_t *qe = queue_entry("src");
    paused = json_object_get(qe, "paused");
    IT_CHECK(json_is_true(json_object_get(paused, "enqueue")) &&
             json_is_true(json_object_get(paused, "dequeue")));
    json_decref(qe);
    IT_CHECK(expect("POST", "/api/queues/acme/src/resume", NULL, 200, NULL));
    r = it_receive(&srv, src_url, NULL);
    IT_CHECK(it_message_count(&r) == 1);
    it_reply_free(&r);
    id = it_send(&srv, src_url, "after-resume");
    IT_CHECK(id != NULL);
    free(id);
}

struct poll_arg {
    const char *url;
    struct it_reply reply;
};

static void *poll_thread(void *arg)
{
    struct poll_arg *a = arg;
    a->reply = it_receive(&srv, a->url, json_pack("{s:i}", "WaitTimeSeconds", 3));
    return NULL;
}

/* The gateway checks a pause when a receive starts; a receive already
 * waiting in the partitions is stopped there. */
static void check_pause_waiting(void)
{
    char *url = it_create_queue(&srv, "held", NULL);
    IT_REQUIRE(url != NULL);
    struct poll_arg a = {.url = url};
    pthread_t t;
    IT_REQUIRE(pthread_create(&t, NULL, poll_thread, &a) == 0);
    sleep_ms(500); /* let the poll start waiting; a late start only makes it easier */
    IT_CHECK(expect("POST", "/api/queues/acme/held/pause", "{\"dequeue\":true}", 200, NULL));
    free(it_send(&srv, url, "sent-while-paused"));
    pthread_join(t, NULL);
    IT_CHECK(a.reply.status == 200 && it_message_count(&a.reply) == 0);
    it_reply_free(&a.reply);
    IT_CHECK(queue_count("held", "ready") == 1);
    IT_CHECK(expect("POST", "/api/queues/acme/held/resume", NULL, 200, NULL));
    struct it_reply r = it_receive(&srv, url, json_pack("{s:i}", "WaitTimeSeconds", 1));
    IT_CHECK(it_message_count(&r) == 1);
    IT_STREQ(it_jstr(json_array_get(it_messages(&r), 0), "Body"), "sent-while-paused");
    it_reply_free(&r);
    free(url);
}

/* One admin write, again after a pause while the write rate refuses it. */
static long write_paced(const char *path, const char *body)
{
    for (int i = 0; i < 100; i++) {
        struct it_reply a = it_admin(&srv, "POST", path, body, TOKEN);
        long status = a.status;
        it_reply_free(&a);
        if (status != 429) {
            return status;
        }
        sleep_ms(100);
    }
    return 429;
}

struct pause_arg {
    const char *body;
    long status;
};

static void *pause_thread(void *arg)
{
    struct pause_arg *p = arg;
    p->status = write_paced("/api/queues/acme/race/pause", p->body);
    return NULL;
}

static bool paused_both(void)
{
    json_t *q = queue_entry("race");
    json_t *p = json_object_get(q, "paused");
    bool both =
        json_is_true(json_object_get(p, "enqueue")) && json_is_true(json_object_get(p, "dequeue"));
    json_decref(q);
    return both;
}

/* Two pauses of different directions at once: before the read-to-publish
 * step was one, the later write could drop the other's bit. A lost race
 * shows as a missing direction; a won race cannot hide one. */
static void check_pause_race(void)
{
    char *url = it_create_queue(&srv, "race", NULL);
    IT_REQUIRE(url != NULL);
    for (int round = 0; round < 5; round++) {
        IT_CHECK(write_paced("/api/queues/acme/race/resume", NULL) == 200);
        struct pause_arg enq = {.body = "{\"enqueue\":true}"};
        struct pause_arg deq = {.body = "{\"dequeue\":true}"};
        pthread_t te, td;
        IT_REQUIRE(pthread_create(&te, NULL, pause_thread, &enq) == 0);
        IT_REQUIRE(pthread_create(&td, NULL, pause_thread, &deq) == 0);
        pthread_join(te, NULL);
        pthread_join(td, NULL);
        IT_CHECK(enq.status == 200 && deq.status == 200);
        IT_CHECK(paused_both());
    }
    IT_CHECK(it_server_stop(&srv) == 0);
    IT_REQUIRE(it_server_restart(&srv) == 0);
    IT_CHECK(paused_both());
    IT_CHECK(write_paced("/api/queues/acme/race/resume", NULL) == 200);
    free(url);
}

/* Rows of ops.db's paused table (-1 when it cannot be read), after
 * running change on it when that is not NULL. */
static int paused_rows(const char *change)
{
    char path[400];
    snprintf(path, sizeof path, "%s/ops.db", srv.data_dir);
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    int rows = -1;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK &&
        (change == NULL || sqlite3_exec(db, change, NULL, NULL, NULL) == SQLITE_OK) &&
        sqlite3_prepare_v2(db, "SELECT count(*) FROM paused", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW) {
        rows = sqlite3_column_int(st, 0);
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    return rows;
}

/* A paused queue that is deleted takes its pause with it, in memory and
 * in ops.db, where it would otherwise stay for good. */
static void check_pause_deleted(void)
{
    int before = paused_rows(NULL);
    IT_REQUIRE(before >= 0);
    char *url = it_create_queue(&srv, "doomed", NULL);
    IT_REQUIRE(url != NULL);
    IT_CHECK(expect("POST", "/api/queues/acme/doomed/pause", NULL, 200, NULL));
    IT_CHECK(paused_rows(NULL) == before + 1);
    struct it_reply r = it_call(&srv, "DeleteQueue", json_pack("{s:s}", "QueueUrl", url));
    IT_CHECK(r.status == 200);
    it_reply_free(&r);
    IT_CHECK(paused_rows(NULL) == before);
    free(url);

    /* The name, free again after a restart, makes a queue nobody paused;
     * the start drops a pause whose queue is gone (a delete that crashed
     * before it removed the pause). */
    IT_CHECK(it_server_stop(&srv) == 0);
    IT_CHECK(paused_rows("INSERT INTO paused(queue_id, flags) VALUES(999999, 3)") == before + 1);
    IT_REQUIRE(it_server_restart(&srv) == 0);
    IT_CHECK(paused_rows(NULL) == before);
    url = it_create_queue(&srv, "doomed", NULL);
    IT_REQUIRE(url != NULL);
    char *id = it_send(&srv, url, "not paused");
    IT_CHECK(id != NULL);
    free(id);
    json_t *q = queue_entry("doomed");
    IT_CHECK(json_is_false(json_object_get(json_object_get(q, "paused"), "enqueue")));
    json_decref(q);
    free(url);
}

/* Polls GET /api/redrives/ID until the task leaves RUNNING (bounded). */
static json_t *wait_task(const char *id)
{
    char path[128];
    snprintf(path, sizeof path, "/api/redrives/%s", id);
    for (int i = 0; i < 200; i++) {
        struct it_reply a = it_admin(&srv, "GET", path, NULL, TOKEN);
        const char *st = json_string_value(json_object_get(a.json, "status"));
        if (a.status != 200 || st == NULL ||
            (strcmp(st, "RUNNING") != 0 && strcmp(st, "CANCELLING") != 0)) {
            json_t *task = json_incref(a.json);
            it_reply_free(&a);
            return task;
        }
        it_reply_free(&a);
        sleep_ms(50);
    }
    return NULL;
}

static void check_redrive(char *task_id, size_t cap)
{
    IT_CHECK(expect("POST", "/api/redrives", "{\"source\":\"acme/parking\"}", 409, "Conflict"));
    IT_CHECK(expect("POST", "/api/redrives", "{\"source\":\"acme/dlq\",\"rate\":9999}", 400,
                    "BadRequest"));
    IT_CHECK(expect("POST", "/api/redrives", "{\"source\":\"dlq\"}", 400, "BadRequest"));
    IT_CHECK(
        expect("POST", "/api/redrives", "{\"source\":\"acme/dlq\",\"x\":1}", 400, "BadRequest"));
    long long before = queue_count("parking", "ready");
    long long pending = queue_count("dlq", "ready");
    struct it_reply a =
        it_admin(&srv, "POST", "/api/redrives",
                 "{\"source\":\"acme/dlq\",\"destination\":\"acme/parking\",\"rate\":100}", TOKEN);
    IT_REQUIRE(a.status == 201);
    snprintf(task_id, cap, "%s", it_jstr(a.json, "id"));
    IT_CHECK(strcmp(it_jstr(a.json, "source"), "acme/dlq") == 0);
    IT_CHECK(strcmp(it_jstr(a.json, "destination"), "acme/parking") == 0);
    it_reply_free(&a);
    json_t *t = wait_task(task_id);
    IT_CHECK(t != NULL && strcmp(it_jstr(t, "status"), "COMPLETED") == 0);
    IT_CHECK(t != NULL && json_integer_value(json_object_get(t, "moved")) == pending &&
             json_integer_value(json_object_get(t, "total")) == pending);
    IT_CHECK(t != NULL && json_integer_value(json_object_get(t, "finished_ms")) > 0);
    json_decref(t);
    IT_CHECK(queue_count("parking", "ready") == before + pending);
    IT_CHECK(queue_count("dlq", "ready") == 0);
    char path[128];
    snprintf(path, sizeof path, "/api/redrives/%s/cancel", task_id);
    IT_CHECK(expect("POST", path, NULL, 404, "NotFound"));
    IT_CHECK(expect("GET", "/api/redrives/no-such-task", NULL, 404, "NotFound"));
    a = it_admin(&srv, "GET", "/api/redrives?tenant=acme", NULL, TOKEN);
    IT_CHECK(json_array_size(json_object_get(a.json, "tasks")) == 1);
    it_reply_free(&a);
    a = it_admin(&srv, "GET", "/api/redrives?tenant=other", NULL, TOKEN);
    IT_CHECK(json_array_size(json_object_get(a.json, "tasks")) == 0);
    it_reply_free(&a);
}

static void check_purge(void)
{
    struct it_reply a = it_admin(&srv, "POST", "/api/queues/acme/parking/purge", NULL, TOKEN);
    IT_CHECK(a.status == 200 && json_integer_value(json_object_get(a.json, "purged")) >= 1);
    it_reply_free(&a);
    IT_CHECK(queue_count("parking", "ready") == 0);
    IT_CHECK(expect("POST", "/api/queues/acme/missing/purge", NULL, 404, "NotFound"));
}

static void check_reload(void)
{
    struct it_reply a = it_admin(&srv, "POST", "/api/reload", NULL, TOKEN);
    IT_CHECK(a.status == 200 && json_is_true(json_object_get(a.json, "ok")) &&
             json_array_size(json_object_get(a.json, "diagnostics")) == 0);
    it_reply_free(&a);
    IT_CHECK(it_wait_log(&srv, "reload: configuration from", 5000));

    char yaml[4096];
    struct it_options opt = {.admin = true, .tenants_yaml = tenants_yaml};
    it_config_yaml(&srv, &opt, yaml, sizeof yaml);
    IT_REQUIRE(it_server_write_config(&srv, "listen: [unclosed\n") == 0);
    a = it_admin(&srv, "POST", "/api/reload", NULL, TOKEN);
    IT_CHECK(a.status == 200 && json_is_false(json_object_get(a.json, "ok")));
    json_t *d = json_array_get(json_object_get(a.json, "diagnostics"), 0);
    IT_CHECK(d != NULL && strstr(json_string_value(d), "sluice.yaml:") != NULL);
    it_reply_free(&a);
    IT_REQUIRE(it_server_write_config(&srv, yaml) == 0);
    /* the server still serves under the old configuration */
    json_t *still = queue_entry("src");
    IT_CHECK(still != NULL);
    json_decref(still);
}

static void check_routes_and_methods(void)
{
    IT_CHECK(expect("GET", "/api/reload", NULL, 405, "MethodNotAllowed"));
    IT_CHECK(expect("POST", "/api/queues", "{}", 405, "MethodNotAllowed"));
    IT_CHECK(expect("GET", "/api/nothing", NULL, 404, "NotFound"));
    IT_CHECK(expect("GET", "/api/queues/acme/src/messages/1-1/what", NULL, 404, "NotFound"));
    IT_CHECK(expect("DELETE", "/api/queues", NULL, 405, "MethodNotAllowed"));
    IT_CHECK(expect("GET", "/api/queues/acme/%zz", NULL, 404, "NotFound"));
}

static void check_audit(const char *task_id)
{
    IT_CHECK(it_log_contains(&srv, "[audit] principal=admin:bearer route=\"POST "
                                   "/api/queues/acme/src/pause\" status=200"));
    IT_CHECK(it_log_contains(&srv, "paused=none->enqueue"));
    IT_CHECK(it_log_contains(&srv, "route=\"POST /api/queues/acme/parking/purge\" status=200 "
                                   "detail=\"purged="));
    char line[160];
    snprintf(line, sizeof line, "route=\"POST /api/redrives\" status=201 detail=\"task=%s",
             task_id);
    IT_CHECK(it_log_contains(&srv, line));
    IT_CHECK(it_log_contains(&srv, "route=\"POST /api/redrives\" status=409"));
    IT_CHECK(it_log_contains(&srv, "route=\"POST /api/queues/acme/src/pause\" status=400"));
    /* a tenant's refused write is an authentication failure, not a write */
    IT_CHECK(!it_log_contains(&srv, "principal=admin:sigv4:" IT_KEY));
}

/* A value with a newline and quotes stays inside its one audit line. */
static void check_audit_escaped(void)
{
    IT_CHECK(write_paced("/api/backup",
                         "{\"dir\":\"/dev/null/x\\n[audit] principal=forged \\\"y\\\"\"}") == 400);
    IT_CHECK(it_wait_log(&srv,
                         "route=\"POST /api/backup\" status=400 detail=\"dir=/dev/null/x\\n"
                         "[audit] principal=forged \\\"y\\\"\"\n",
                         5000));
    IT_CHECK(it_log_count(&srv, "[audit] principal=admin:bearer route=\"POST /api/backup\"") == 1);
    /* nowhere in the log (the backup's own error line too) a line of its own */
    IT_CHECK(!it_log_contains(&srv, "\n[audit] principal=forged"));
}

static void check_write_rate(void)
{
    int limited = 0;
    for (int i = 0; i < 40 && limited == 0; i++) {
        struct it_reply a = it_admin(&srv, "POST", "/api/redrives/x/cancel", NULL, TOKEN);
        limited += a.status == 429;
        it_reply_free(&a);
    }
    IT_CHECK(limited == 1);
    IT_CHECK(it_wait_log(&srv, "status=429", 5000));
}

int main(void)
{
    struct it_options opt = {.admin = true, .tenants_yaml = tenants_yaml};
    IT_REQUIRE(it_server_start(&srv, &opt) == 0);

    char *dlq = it_create_queue(&srv, "dlq", NULL);
    char *parking = it_create_queue(&srv, "parking", NULL);
    IT_REQUIRE(dlq != NULL && parking != NULL);
    char policy[256];
    snprintf(policy, sizeof policy,
             "{\"deadLetterTargetArn\":\"arn:aws:sqs:us-east-1:acme:dlq\",\"maxReceiveCount\":1}");
    char *src = it_create_queue(&srv, "src", json_pack("{s:s}", "RedrivePolicy", policy));
    IT_REQUIRE(src != NULL);
    /* Four messages received once on src; the next receive moves them to
     * the DLQ (count 1 > maxReceiveCount 1 is not reached until then). */
    for (int i = 0; i < 4; i++) {
        char body[8];
        snprintf(body, sizeof body, "m%d", i);
        struct it_reply r = it_call(&srv, "SendMessage",
                                    json_pack("{s:s, s:s, s:{s:{s:s, s:s}}}", "QueueUrl", src,
                                              "MessageBody", body, "MessageAttributes", "colour",
                                              "DataType", "String", "StringValue", "blue"));
        IT_CHECK(r.status == 200);
        it_reply_free(&r);
    }
    for (int pass = 0; pass < 8 && queue_count("dlq", "ready") < 4; pass++) {
        struct it_reply r = it_receive(
            &srv, src, json_pack("{s:i, s:i}", "MaxNumberOfMessages", 10, "VisibilityTimeout", 0));
        it_reply_free(&r);
    }
    IT_REQUIRE(queue_count("dlq", "ready") == 4);

    check_authorisation();
    check_reads();
    check_peek(dlq);
    check_one_message();
    check_pause(src);
    check_pause_waiting();
    check_pause_race();
    check_pause_deleted();
    char task_id[64] = "";
    check_redrive(task_id, sizeof task_id);
    check_purge();

    /* the redrive's history survives a restart */
    IT_CHECK(it_server_stop(&srv) == 0);
    IT_REQUIRE(it_server_restart(&srv) == 0);
    char path[128];
    snprintf(path, sizeof path, "/api/redrives/%s", task_id);
    struct it_reply a = it_admin(&srv, "GET", path, NULL, TOKEN);
    IT_CHECK(a.status == 200 && strcmp(it_jstr(a.json, "status"), "COMPLETED") == 0);
    it_reply_free(&a);

    check_reload();
    check_routes_and_methods();
    check_audit(task_id);
    check_audit_escaped();
    check_write_rate();

    free(dlq);
    free(parking);
    free(src);
    IT_CHECK(it_server_stop(&srv) == 0);
    it_server_cleanup(&srv);
    return it_summary();
}
