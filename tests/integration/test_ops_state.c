/*
 * test_ops_state.c -- what the gateway tells an operator about its own
 * state matches what it does:
 *
 *  - a redrive whose source DLQ is deleted while it runs ends FAILED
 *    (SQS's NonExistentQueue), as gw_move.c's state machine says, not
 *    COMPLETED with moved < total;
 *  - a reload that changes shard_size answers "needs a restart" (the
 *    route's restart_needed and the log), and the running gateway keeps
 *    the old shard until then (docs/config.md: a shard that changed
 *    under running queues would leave their messages on partitions the
 *    receives no longer visit); a second reload still says so;
 *  - a queue paused for enqueue takes no message from a redrive either:
 *    the task waits, RUNNING and "held", and once the queue is resumed
 *    moves every message, once (docs/operations.md).
 *
 * (Its fourth check, a second sluiced on a served data directory, lives
 * in tests/integration/test_data_dir_lock.c.)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "it_sqs.h"

#define TOKEN "ops-token_1"

static const char tenants_yaml[] = IT_TENANTS_YAML_WITH_TOKEN(TOKEN);

static struct it_server srv;

/* The task at path (/api/redrives/ID) once it is no longer RUNNING (the
 * last answer after five seconds), with its status in *status. The
 * caller frees it. */
static json_t *task_when_ended(const char *path, const char **status)
{
    json_t *task = NULL;
    *status = NULL;
    for (int i = 0; i < 50; i++) {
        json_decref(task);
        struct it_reply r = it_admin(&srv, "GET", path, NULL, TOKEN);
        task = json_incref(r.json);
        it_reply_free(&r);
        *status = it_jstr(task, "status");
        if (*status != NULL && strcmp(*status, "RUNNING") != 0) {
            break;
        }
        it_sleep_ms(100);
    }
    return task;
}

/* Starts a redrive (POST /api/redrives with body); its path into path. */
static void start_redrive(const char *body, char path[128])
{
    struct it_reply a = it_admin(&srv, "POST", "/api/redrives", body, TOKEN);
    IT_REQUIRE(a.status == 201);
    snprintf(path, 128, "/api/redrives/%s", it_jstr(a.json, "id"));
    it_reply_free(&a);
}

/* POST /api/queues/acme/NAME/OP (pause, resume) with body (NULL: none);
 * the status. */
static long queue_op(const char *name, const char *op, const char *body)
{
    char path[128];
    snprintf(path, sizeof path, "/api/queues/acme/%s/%s", name, op);
    struct it_reply r = it_admin(&srv, "POST", path, body, TOKEN);
    long status = r.status;
    it_reply_free(&r);
    return status;
}

/* acme's queue NAME whose dead-letter queue is acme's DLQ (after three
 * receives); its URL (malloc'd). */
static char *dlq_source(const char *dlq, const char *name)
{
    char policy[256];
    snprintf(policy, sizeof policy,
             "{\"deadLetterTargetArn\":\"arn:aws:sqs:" IT_REGION ":" IT_TENANT
             ":%s\",\"maxReceiveCount\":3}",
             dlq);
    char *url = it_create_queue(&srv, name, json_pack("{s:s}", "RedrivePolicy", policy));
    IT_REQUIRE(url != NULL);
    return url;
}

/* acme's queues PREFIX-dlq, holding n messages sent to it directly, and
 * PREFIX-src, whose DLQ it is; their URLs (malloc'd) into dlq and src. */
static void dlq_pair(const char *prefix, int n, char **dlq, char **src)
{
    char name[64], src_name[64];
    snprintf(name, sizeof name, "%s-dlq", prefix);
    *dlq = it_create_queue(&srv, name, NULL);
    IT_REQUIRE(*dlq != NULL);
    snprintf(src_name, sizeof src_name, "%s-src", prefix);
    *src = dlq_source(name, src_name);
    for (int i = 0; i < n; i++) {
        free(it_send(&srv, *dlq, "parked"));
    }
}

static void check_redrive_of_deleted_dlq(void)
{
    char *dlq, *src;
    dlq_pair("rd", 20, &dlq, &src);
    char path[128];
    start_redrive("{\"source\": \"acme/rd-dlq\", \"destination\": \"acme/rd-src\", \"rate\": 1}",
                  path);
    it_sleep_ms(1500);
    struct it_reply r = it_call(&srv, "DeleteQueue", json_pack("{s:s}", "QueueUrl", dlq));
    IT_CHECK(r.status == 200);
    it_reply_free(&r);
    const char *status;
    json_t *task = task_when_ended(path, &status);
    char *text = json_dumps(task, JSON_COMPACT);
    fprintf(stderr, "redrive after its DLQ was deleted: %s\n", text ? text : "(none)");
    free(text);
    IT_CHECK(status != NULL && strcmp(status, "FAILED") == 0);
    const char *error = it_jstr(task, "error");
    IT_CHECK(error != NULL && strcmp(error, "AWS.SimpleQueueService.NonExistentQueue") == 0);
    json_decref(task);
    free(dlq);
    free(src);
}

static void check_redrive_into_paused_queue(void)
{
    char *dlq, *src;
    dlq_pair("pz", 5, &dlq, &src);
    IT_CHECK(queue_op("pz-src", "pause", "{\"enqueue\": true}") == 200);
    char path[128];
    start_redrive("{\"source\": \"acme/pz-dlq\", \"destination\": \"acme/pz-src\"}", path);
    it_sleep_ms(1000);
    long long landed = it_queue_attr_int(&srv, src, "ApproximateNumberOfMessages");
    fprintf(stderr, "redrive into a queue paused for enqueue: %lld of 5 landed\n", landed);
    IT_CHECK(landed == 0);
    /* The task waits (docs/operations.md): RUNNING, held, nothing taken. */
    struct it_reply a = it_admin(&srv, "GET", path, NULL, TOKEN);
    const char *status = it_jstr(a.json, "status");
    IT_CHECK(status != NULL && strcmp(status, "RUNNING") == 0);
    IT_CHECK(json_is_true(json_object_get(a.json, "held")));
    it_reply_free(&a);
    IT_CHECK(it_queue_attr_int(&srv, dlq, "ApproximateNumberOfMessages") == 5);

    /* Resumed, it carries on: every message lands once, none is lost. */
    queue_op("pz-src", "resume", NULL);
    json_t *task = task_when_ended(path, &status);
    IT_CHECK(status != NULL && strcmp(status, "COMPLETED") == 0);
    IT_CHECK(json_integer_value(json_object_get(task, "moved")) == 5);
    IT_CHECK(!json_is_true(json_object_get(task, "held")));
    json_decref(task);
    IT_CHECK(it_queue_attr_int(&srv, src, "ApproximateNumberOfMessages") == 5);
    IT_CHECK(it_queue_attr_int(&srv, dlq, "ApproximateNumberOfMessages") == 0);
    free(dlq);
    free(src);
}

/* Sends n messages to src and receives them (lease 0) until they are
 * all in dlq, which then holds `expect`. */
static void dead_letter(const char *src, const char *dlq, int n, long long expect)
{
    for (int i = 0; i < n; i++) {
        free(it_send(&srv, src, "poison"));
    }
    for (int i = 0; i < 200 && it_queue_attr_int(&srv, dlq, "ApproximateNumberOfMessages") < expect;
         i++) {
        struct it_reply r = it_receive(
            &srv, src, json_pack("{s:i, s:i}", "MaxNumberOfMessages", 10, "VisibilityTimeout", 0));
        it_reply_free(&r);
    }
    IT_CHECK(it_queue_attr_int(&srv, dlq, "ApproximateNumberOfMessages") == expect);
}

/* A redrive back to each message's source, one of them paused: what goes
 * to the other moves, even from behind the held ones, what goes to the
 * paused one waits in the DLQ and follows once it is resumed. */
static void check_redrive_to_sources_one_paused(void)
{
    char *dlq = it_create_queue(&srv, "ps-dlq", NULL);
    IT_REQUIRE(dlq != NULL);
    char *a = dlq_source("ps-dlq", "ps-a");
    char *b = dlq_source("ps-dlq", "ps-b");
    dead_letter(b, dlq, 3, 3); /* b's first: a's move past them */
    dead_letter(a, dlq, 3, 6);
    IT_CHECK(queue_op("ps-b", "pause", "{\"enqueue\": true}") == 200);
    char path[128];
    start_redrive("{\"source\": \"acme/ps-dlq\"}", path);
    for (int i = 0; i < 50 && it_queue_attr_int(&srv, a, "ApproximateNumberOfMessages") < 3; i++) {
        it_sleep_ms(100);
    }
    it_sleep_ms(500);
    long long in_a = it_queue_attr_int(&srv, a, "ApproximateNumberOfMessages");
    long long in_b = it_queue_attr_int(&srv, b, "ApproximateNumberOfMessages");
    fprintf(stderr, "redrive to sources, ps-b paused: %lld in ps-a, %lld in ps-b\n", in_a, in_b);
    IT_CHECK(in_a == 3 && in_b == 0);
    IT_CHECK(it_queue_attr_int(&srv, dlq, "ApproximateNumberOfMessages") == 3);
    struct it_reply ans = it_admin(&srv, "GET", path, NULL, TOKEN);
    IT_CHECK(json_is_true(json_object_get(ans.json, "held")));
    it_reply_free(&ans);

    queue_op("ps-b", "resume", NULL);
    const char *status;
    json_t *task = task_when_ended(path, &status);
    IT_CHECK(status != NULL && strcmp(status, "COMPLETED") == 0);
    IT_CHECK(json_integer_value(json_object_get(task, "moved")) == 6);
    json_decref(task);
    IT_CHECK(it_queue_attr_int(&srv, a, "ApproximateNumberOfMessages") == 3);
    IT_CHECK(it_queue_attr_int(&srv, b, "ApproximateNumberOfMessages") == 3);
    IT_CHECK(it_queue_attr_int(&srv, dlq, "ApproximateNumberOfMessages") == 0);
    free(a);
    free(b);
    free(dlq);
}

/* acme's shard as /tenants shows it: how many partitions. */
static size_t shard_width(void)
{
    struct it_reply a = it_admin(&srv, "GET", "/tenants", NULL, TOKEN);
    json_t *t = json_array_get(json_object_get(a.json, "tenants"), 0);
    size_t n = json_array_size(json_object_get(t, "partitions"));
    it_reply_free(&a);
    return n;
}

static void check_reload_of_restart_only_key(struct it_options *opt)
{
    IT_CHECK(shard_width() == 1);
    char yaml[4096];
    opt->shard_size = 2;
    it_config_yaml(&srv, opt, yaml, sizeof yaml);
    IT_REQUIRE(it_server_write_config(&srv, yaml) == 0);
    struct it_reply a = it_admin(&srv, "POST", "/api/reload", NULL, TOKEN);
    IT_CHECK(a.status == 200 && json_is_true(json_object_get(a.json, "ok")));
    char *text = json_dumps(json_object_get(a.json, "restart_needed"), JSON_COMPACT);
    bool says_restart = text != NULL && strstr(text, "shard_size") != NULL;
    fprintf(stderr, "reload of shard_size 1 -> 2: restart_needed %s\n", text ? text : "-");
    free(text);
    it_reply_free(&a);
    IT_CHECK(it_wait_log(&srv, "is live", 5000));
    size_t width = shard_width();
    fprintf(stderr, "acme's shard after the reload: %zu partition(s)\n", width);
    /* what the operator was told must be what happens */
    IT_CHECK(says_restart ? width == 1 : width == 2);
    IT_CHECK(says_restart);
    /* The running value is what a second reload compares with. */
    int reloads = it_log_count(&srv, "is live");
    a = it_admin(&srv, "POST", "/api/reload", NULL, TOKEN);
    text = json_dumps(json_object_get(a.json, "restart_needed"), JSON_COMPACT);
    IT_CHECK(text != NULL && strstr(text, "shard_size changed from 1 to 2") != NULL);
    free(text);
    it_reply_free(&a);
    for (int i = 0; i < 50 && it_log_count(&srv, "is live") == reloads; i++) {
        it_sleep_ms(100);
    }
    IT_CHECK(it_log_count(&srv, "is live") > reloads);
    IT_CHECK(shard_width() == 1);
}

int main(void)
{
    struct it_options opt = {.admin = true, .tenants_yaml = tenants_yaml, .partitions = 4};
    IT_REQUIRE(it_server_start(&srv, &opt) == 0);
    check_redrive_of_deleted_dlq();
    check_redrive_into_paused_queue();
    check_redrive_to_sources_one_paused();
    check_reload_of_restart_only_key(&opt);
    IT_CHECK(it_server_stop(&srv) == 0);
    it_server_cleanup(&srv);
    return it_summary();
}
