/*
 * test_sluicectl.c -- the operators' tool against a real sluiced: every
 * command an on-call engineer runs during a DLQ incident, in table and
 * --json output (queues, attrs, dlq sources, dlq peek, redrive start
 * --wait / status / cancel, purge, tenants, watch, pause, resume,
 * reload, backup); the progress lines of redrive --wait when stdout is
 * not a terminal, and its bar on one (a pty from script(1)); where
 * endpoint and credentials come from (flags over the environment over the
 * config file, never demo defaults); a TLS gateway with a private CA
 * (--cacert, SSL_CERT_FILE); what errors look like ("error: <Code>:
 * <message>", exit 1; usage mistakes exit 2). sluicectl runs as a child
 * process with its output captured; waits are bounded polls.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include "it_sqs.h"

#define TOKEN "ctl-token_1"

static const char tenants_yaml[] = IT_TENANTS_YAML_WITH_TOKEN(TOKEN);

static struct it_server srv;

struct run {
    int status;
    char out[32768]; /* stdout and stderr */
};

/* Runs "env -i HOME=... <env> sluicectl <args>": nothing leaks in from
 * the test's own environment, and HOME has no config file unless a test
 * writes one. */
static struct run ctl_env(const char *env, const char *args)
{
    struct run r = {.status = -1};
    const char *dir = getenv("SLUICE_BUILD_DIR");
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "env -i HOME='%s' %s '%s/sluicectl' %s 2>&1", srv.dir, env,
             dir ? dir : ".", args);
    FILE *p = popen(cmd, "r");
    if (p == NULL) {
        return r;
    }
    size_t n = fread(r.out, 1, sizeof r.out - 1, p);
    r.out[n] = '\0';
    int st = pclose(p);
    r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    return r;
}

/* With the endpoints and acme's keys in the environment. */
static struct run ctl(const char *args)
{
    char env[1024];
    snprintf(env, sizeof env,
             "SLUICE_ENDPOINT='%s' SLUICE_ADMIN_ENDPOINT='%s' SLUICE_ACCESS_KEY_ID='" IT_KEY
             "' SLUICE_SECRET_ACCESS_KEY='" IT_SECRET "'",
             srv.base_url, srv.admin_url);
    return ctl_env(env, args);
}

/* With the admin's bearer token as well. */
static struct run ctl_admin(const char *args)
{
    char with[2048];
    snprintf(with, sizeof with, "--admin-token " TOKEN " %s", args);
    return ctl(with);
}

#define CHECK_HAS(run, text)                                                                       \
    do {                                                                                           \
        bool has_ = strstr((run).out, (text)) != NULL;                                             \
        IT_CHECK(has_ && (text));                                                                  \
        if (!has_) {                                                                               \
            fprintf(stderr, "  output was:\n%s\n", (run).out);                                     \
        }                                                                                          \
    } while (0)

/* The output parses as a JSON object; returned owned (NULL if not). */
static json_t *json_of(const struct run *r)
{
    json_t *doc = json_loads(r->out, 0, NULL);
    if (!json_is_object(doc)) {
        fprintf(stderr, "  not a JSON object:\n%s\n", r->out);
        json_decref(doc);
        return NULL;
    }
    return doc;
}

static int count_of(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p++) {
        n++;
    }
    return n;
}

static void check_help_and_usage(void)
{
    struct run v = ctl("version");
    IT_CHECK(v.status == 0);
    CHECK_HAS(v, "sluicectl ");
    v = ctl("--help");
    IT_CHECK(v.status == 0);
    static const char *const commands[] = {
        "sluicectl queues ",       "sluicectl attrs ",          "sluicectl dlq sources ",
        "sluicectl redrive start", "sluicectl redrive status ", "sluicectl redrive cancel ",
        "sluicectl purge ",        "sluicectl tenants",         "sluicectl watch ",
        "sluicectl dlq peek ",     "sluicectl pause ",          "sluicectl resume ",
        "sluicectl reload",        "sluicectl backup ",
    };
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        CHECK_HAS(v, commands[i]); /* an example for every command */
    }
    v = ctl("frobnicate");
    IT_CHECK(v.status == 2);
    v = ctl("watch acme --count 0");
    IT_CHECK(v.status == 2);
}

static void check_credentials(void)
{
    char env[512], args[1024];
    /* nothing anywhere: refused, never the demo keys */
    snprintf(env, sizeof env, "SLUICE_ENDPOINT='%s'", srv.base_url);
    struct run v = ctl_env(env, "queues");
    IT_CHECK(v.status == 2);
    CHECK_HAS(v, "no credentials");
    CHECK_HAS(v, "SLUICE_ACCESS_KEY_ID");

    /* the config file alone */
    char path[400];
    snprintf(path, sizeof path, "%s/ctl.conf", srv.dir);
    FILE *f = fopen(path, "w");
    IT_REQUIRE(f != NULL);
    fprintf(f,
            "# sluicectl settings\nendpoint = %s\naccess_key_id = " IT_KEY
            "\nsecret_access_key = wrong-secret\n",
            srv.base_url);
    fclose(f);
    snprintf(args, sizeof args, "--config '%s' --secret-access-key " IT_SECRET " queues", path);
    v = ctl_env("", args); /* the flag beats the file */
    IT_CHECK(v.status == 0);
    snprintf(env, sizeof env, "SLUICE_SECRET_ACCESS_KEY=" IT_SECRET " SLUICECTL_CONFIG='%s'", path);
    v = ctl_env(env, "queues"); /* the environment beats the file */
    IT_CHECK(v.status == 0);
    snprintf(env, sizeof env, "SLUICECTL_CONFIG='%s'", path);
    v = ctl_env(env, "queues"); /* the file's own (wrong) secret */
    IT_CHECK(v.status == 1);
    CHECK_HAS(v, "error: SignatureDoesNotMatch: ");
    /* the default place under HOME */
    char home_conf[400];
    snprintf(home_conf, sizeof home_conf,
             "mkdir -p '%s/.config/sluice' && printf '"
             "endpoint = %s\\naccess_key_id = " IT_KEY "\\nsecret_access_key = " IT_SECRET
             "\\n' > '%s/.config/sluice/sluicectl.conf'",
             srv.dir, srv.base_url, srv.dir);
    IT_CHECK(system(home_conf) == 0);
    v = ctl_env("", "queues");
    IT_CHECK(v.status == 0);
    snprintf(args, sizeof args, "--config '%s/missing.conf' queues", srv.dir);
    v = ctl_env("", args);
    IT_CHECK(v.status == 2);
    CHECK_HAS(v, "cannot read the config file");
    f = fopen(path, "w");
    IT_REQUIRE(f != NULL);
    fprintf(f, "endpoint %s\n", srv.base_url);
    fclose(f);
    snprintf(args, sizeof args, "--config '%s' queues", path);
    v = ctl_env("", args);
    IT_CHECK(v.status == 2);
    CHECK_HAS(v, "ctl.conf:1: expected \"key = value\"");
    /* admin commands need the admin's credentials: acme's keys get 403 */
    v = ctl("tenants");
    IT_CHECK(v.status == 1);
    CHECK_HAS(v, "error: AccessDenied: ");
}

static void check_sqs_commands(const char *dlq, const char *src)
{
    char args[1024];
    struct run v = ctl("queues ctl-");
    IT_CHECK(v.status == 0);
    CHECK_HAS(v, "TENANT  QUEUE    URL");
    CHECK_HAS(v, dlq);
    CHECK_HAS(v, src);
    v = ctl("--json queues ctl-");
    json_t *doc = json_of(&v);
    IT_CHECK(json_array_size(json_object_get(doc, "QueueUrls")) == 2);
    json_decref(doc);

    snprintf(args, sizeof args, "attrs '%s'", dlq);
    v = ctl(args);
    IT_CHECK(v.status == 0);
    CHECK_HAS(v, "ATTRIBUTE ");
    CHECK_HAS(v, "arn:aws:sqs:" IT_REGION ":" IT_TENANT ":ctl-dlq");
    CHECK_HAS(v, "ApproximateNumberOfMessages ");
    snprintf(args, sizeof args, "--json attrs '%s'", dlq);
    v = ctl(args);
    doc = json_of(&v);
    IT_CHECK(strcmp(it_jstr(json_object_get(doc, "Attributes"), "ApproximateNumberOfMessages"),
                    "2") == 0);
    json_decref(doc);

    snprintf(args, sizeof args, "dlq sources '%s'", dlq);
    v = ctl(args);
    IT_CHECK(v.status == 0);
    CHECK_HAS(v, "SOURCE QUEUE URL");
    CHECK_HAS(v, src);
    snprintf(args, sizeof args, "--json dlq sources '%s'", dlq);
    v = ctl(args);
    doc = json_of(&v);
    IT_CHECK(json_array_size(json_object_get(doc, "queueUrls")) == 1);
    json_decref(doc);
}

static void check_peek(const char *dlq)
{
    char args[1024];
    for (int round = 0; round < 2; round++) {
        snprintf(args, sizeof args, "dlq peek '%s' 5", dlq);
        struct run v = ctl_admin(args);
        IT_CHECK(v.status == 0);
        CHECK_HAS(v, "REF");
        CHECK_HAS(v, "RECEIVES");
        CHECK_HAS(v, "poison one");
        CHECK_HAS(v, "poison two");
        CHECK_HAS(v, "ctl-src");
        CHECK_HAS(v, "2 message(s) shown; a peek leases nothing");
    }
    /* still received once each, and nothing in flight */
    struct run v = ctl_admin("--json dlq peek acme/ctl-dlq");
    json_t *doc = json_of(&v);
    size_t i;
    json_t *m;
    json_array_foreach(json_object_get(doc, "messages"), i, m)
    {
        IT_CHECK(json_integer_value(json_object_get(m, "receive_count")) == 1);
    }
    IT_CHECK(json_array_size(json_object_get(doc, "messages")) == 2);
    json_decref(doc);
    IT_CHECK(it_queue_attr_int(&srv, dlq, "ApproximateNumberOfMessagesNotVisible") == 0);
    v = ctl_admin("dlq peek acme/ctl-dlq 500");
    IT_CHECK(v.status == 2);
    v = ctl_admin("dlq peek acme/no-such-queue");
    IT_CHECK(v.status == 1);
    CHECK_HAS(v, "error: NotFound: ");
}

static void check_admin_commands(const char *src)
{
    struct run v = ctl_admin("tenants");
    IT_CHECK(v.status == 0);
    CHECK_HAS(v, "TENANT  RATE/S  BURST");
    CHECK_HAS(v, IT_TENANT "  ");
    v = ctl_admin("--json tenants");
    json_t *doc = json_of(&v);
    IT_CHECK(json_array_size(json_object_get(doc, "tenants")) == 1);
    json_decref(doc);

    v = ctl_admin("pause acme/ctl-src --enqueue");
    IT_CHECK(v.status == 0);
    CHECK_HAS(v, "acme/ctl-src: paused enqueue");
    struct it_reply r =
        it_call(&srv, "SendMessage", json_pack("{s:s, s:s}", "QueueUrl", src, "MessageBody", "x"));
    IT_CHECK(r.status == 400 && strncmp(r.query_error, "QueuePaused", 11) == 0);
    it_reply_free(&r);
    v = ctl_admin("--json pause acme/ctl-src --dequeue");
    doc = json_of(&v);
    json_t *paused = json_object_get(doc, "paused");
    IT_CHECK(json_is_true(json_object_get(paused, "enqueue")) &&
             json_is_true(json_object_get(paused, "dequeue")));
    json_decref(doc);

    v = ctl_admin("watch acme --count 2 --interval 1");
    IT_CHECK(v.status == 0);
    IT_CHECK(count_of(v.out, "tenant acme  ") == 2);
    IT_CHECK(count_of(v.out, "QUEUE    READY  INFLIGHT") == 2);
    CHECK_HAS(v, "ctl-src      0         0        0         0         0  both    -");
    CHECK_HAS(v, "ctl-dlq      2");
    v = ctl_admin("--json watch acme --count 1");
    doc = json_of(&v);
    IT_CHECK(json_array_size(json_object_get(doc, "queues")) == 2);
    json_decref(doc);

    /* the admin's SigV4 keys instead of the token: a signed query string
     * (watch, peek) and a signed body (pause) */
    v = ctl("--access-key-id " IT_ADMIN_KEY " --secret-access-key " IT_ADMIN_SECRET
            " watch acme --count 1");
    IT_CHECK(v.status == 0);
    CHECK_HAS(v, "ctl-dlq      2");
    v = ctl("--access-key-id " IT_ADMIN_KEY " --secret-access-key " IT_ADMIN_SECRET
            " dlq peek acme/ctl-dlq 1");
    IT_CHECK(v.status == 0);
    CHECK_HAS(v, "1 message(s) shown");
    v = ctl("--access-key-id " IT_ADMIN_KEY " --secret-access-key " IT_ADMIN_SECRET
            " pause acme/ctl-src");
    IT_CHECK(v.status == 0);
    CHECK_HAS(v, "acme/ctl-src: paused both");
    v = ctl("--access-key-id " IT_ADMIN_KEY " --secret-access-key wrong tenants");
    IT_CHECK(v.status == 1);
    CHECK_HAS(v, "error: AccessDenied: ");

    v = ctl_admin("resume acme/ctl-src");
    IT_CHECK(v.status == 0);
    CHECK_HAS(v, "acme/ctl-src: paused nothing (serving)");

    char args[1024];
    snprintf(args, sizeof args, "backup '%s/bk-table'", srv.dir);
    v = ctl_admin(args);
    IT_CHECK(v.status == 0);
    CHECK_HAS(v, "FILE          BYTES  SHA256");
    CHECK_HAS(v, "catalog.db");
    CHECK_HAS(v, "part-0001.db");
    CHECK_HAS(v, "manifest.json lists and checks every file");
    snprintf(args, sizeof args, "--json backup '%s/bk-json'", srv.dir);
    v = ctl_admin(args);
    doc = json_of(&v);
    IT_CHECK(json_array_size(json_object_get(json_object_get(doc, "manifest"), "files")) == 5);
    json_decref(doc);
    snprintf(args, sizeof args, "backup '%s/bk-table'", srv.dir); /* not empty now */
    v = ctl_admin(args);
    IT_CHECK(v.status == 1);
    CHECK_HAS(v, "error: BadRequest: ");
    v = ctl_admin("backup relative/dir");
    IT_CHECK(v.status == 1);

    v = ctl_admin("reload");
    IT_CHECK(v.status == 0);
    CHECK_HAS(v, "sluice.yaml: valid");
    v = ctl_admin("--json reload");
    doc = json_of(&v);
    IT_CHECK(json_is_true(json_object_get(doc, "ok")));
    json_decref(doc);
}

static void check_redrive(const char *src)
{
    char args[1024];
    struct run v = ctl("redrive start acme/ctl-dlq --rate 100 --wait");
    IT_CHECK(v.status == 0);
    CHECK_HAS(v, "task handle: ");
    /* not a terminal: plain progress lines, no bar, no carriage returns */
    CHECK_HAS(v, "progress: moved 2 of 2 (100%), ");
    CHECK_HAS(v, "msg/s, ETA 0s");
    CHECK_HAS(v, "COMPLETED: moved 2 of 2 in ");
    IT_CHECK(strchr(v.out, '\r') == NULL && strchr(v.out, '[') == NULL);
    IT_CHECK(it_queue_attr_int(&srv, src, "ApproximateNumberOfMessages") == 2);

    v = ctl("redrive status arn:aws:sqs:" IT_REGION ":" IT_TENANT ":ctl-dlq");
    IT_CHECK(v.status == 0);
    CHECK_HAS(v, "STATUS     MOVED  TOTAL  RATE");
    CHECK_HAS(v, "COMPLETED      2      2  100/s");
    v = ctl("--json redrive status acme/ctl-dlq");
    IT_CHECK(v.status == 0);
    json_t *doc = json_of(&v);
    IT_CHECK(json_array_size(json_object_get(doc, "Results")) == 1);
    json_decref(doc);

    v = ctl("redrive cancel foobared");
    IT_CHECK(v.status == 1);
    CHECK_HAS(v, "error: InvalidParameterValue: Value for parameter TaskHandle is invalid.");
    v = ctl("redrive start acme/ctl-src --wait");
    IT_CHECK(v.status == 1);
    CHECK_HAS(v, "error: InvalidParameterValue: Source queue must be configured as a Dead "
                 "Letter Queue.");

    snprintf(args, sizeof args, "attrs '%s/" IT_TENANT "/no-such-queue'", srv.base_url);
    v = ctl(args);
    IT_CHECK(v.status == 1);
    CHECK_HAS(v, "error: AWS.SimpleQueueService.NonExistentQueue: The specified queue does not "
                 "exist.");
    v = ctl("--secret-access-key wrong queues");
    IT_CHECK(v.status == 1);
    CHECK_HAS(v, "error: SignatureDoesNotMatch: ");

    snprintf(args, sizeof args, "purge '%s'", src);
    v = ctl(args);
    IT_CHECK(v.status == 2);
    CHECK_HAS(v, "--yes");
    IT_CHECK(it_queue_attr_int(&srv, src, "ApproximateNumberOfMessages") == 2);
    snprintf(args, sizeof args, "--json purge '%s' --yes", src);
    v = ctl(args);
    IT_CHECK(v.status == 0);
    IT_CHECK(it_queue_attr_int(&srv, src, "ApproximateNumberOfMessages") == 0);
}

/* redrive start --wait on a terminal: script(1) gives sluicectl a pty, on
 * which it redraws one bar line with carriage returns. */
static void check_progress_bar(const char *dlq, const char *src)
{
    for (int i = 0; i < 3; i++) {
        free(it_send(&srv, dlq, "parked"));
    }
    const char *dir = getenv("SLUICE_BUILD_DIR");
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "script -qec \"env -i HOME='%s' TERM=dumb SLUICE_ENDPOINT='%s' "
             "SLUICE_ACCESS_KEY_ID='" IT_KEY "' SLUICE_SECRET_ACCESS_KEY='" IT_SECRET
             "' '%s/sluicectl' redrive start acme/ctl-dlq --to acme/ctl-src --rate 2 --wait\" "
             "/dev/null 2>&1",
             srv.dir, srv.base_url, dir ? dir : ".");
    struct run r = {.status = -1};
    FILE *p = popen(cmd, "r");
    IT_REQUIRE(p != NULL);
    size_t n = fread(r.out, 1, sizeof r.out - 1, p);
    r.out[n] = '\0';
    int st = pclose(p);
    r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    IT_CHECK(r.status == 0);
    CHECK_HAS(r, "\r[");
    CHECK_HAS(r, "[##############################] 100%  3/3  ");
    CHECK_HAS(r, "msg/s  ETA 0s");
    CHECK_HAS(r, "COMPLETED: moved 3 of 3 in ");
    IT_CHECK(strstr(r.out, "progress: ") == NULL); /* the plain lines are for pipes */
    IT_CHECK(it_queue_attr_int(&srv, src, "ApproximateNumberOfMessages") == 3);
}

/* A TLS gateway whose certificate no system CA signed. */
static void check_private_ca(void)
{
    struct it_options opt = {.tls = true, .admin = true, .tenants_yaml = tenants_yaml};
    IT_REQUIRE(it_server_start(&srv, &opt) == 0);
    struct run v = ctl("queues");
    IT_CHECK(v.status == 1);
    CHECK_HAS(v, "--cacert");
    char args[1024], env[2048];
    snprintf(args, sizeof args, "--cacert '%s' queues", srv.cert_path);
    v = ctl(args);
    IT_CHECK(v.status == 0);
    snprintf(args, sizeof args, "--cacert '%s' --admin-token " TOKEN " tenants", srv.cert_path);
    v = ctl(args);
    IT_CHECK(v.status == 0);
    CHECK_HAS(v, "TENANT");
    snprintf(env, sizeof env,
             "SSL_CERT_FILE='%s' SLUICE_ENDPOINT='%s' SLUICE_ACCESS_KEY_ID='" IT_KEY
             "' SLUICE_SECRET_ACCESS_KEY='" IT_SECRET "'",
             srv.cert_path, srv.base_url);
    v = ctl_env(env, "queues");
    IT_CHECK(v.status == 0);
    IT_CHECK(it_server_stop(&srv) == 0);
    it_server_cleanup(&srv);
}

int main(void)
{
    struct it_options opt = {.admin = true, .tenants_yaml = tenants_yaml};
    IT_REQUIRE(it_server_start(&srv, &opt) == 0);

    check_help_and_usage();
    char *dlq = it_create_queue(&srv, "ctl-dlq", NULL);
    char *src = it_create_queue(&srv, "ctl-src",
                                json_pack("{s:s}", "RedrivePolicy",
                                          "{\"deadLetterTargetArn\":\"arn:aws:sqs:" IT_REGION
                                          ":" IT_TENANT ":ctl-dlq\",\"maxReceiveCount\":1}"));
    IT_REQUIRE(dlq != NULL && src != NULL);
    free(it_send(&srv, src, "poison one"));
    free(it_send(&srv, src, "poison two"));
    for (int i = 0; i < 100 && it_queue_attr_int(&srv, dlq, "ApproximateNumberOfMessages") < 2;
         i++) {
        struct it_reply r = it_receive(
            &srv, src, json_pack("{s:i, s:i}", "MaxNumberOfMessages", 10, "VisibilityTimeout", 0));
        it_reply_free(&r);
    }
    IT_CHECK(it_queue_attr_int(&srv, dlq, "ApproximateNumberOfMessages") == 2);

    check_credentials();
    check_sqs_commands(dlq, src);
    check_peek(dlq);
    check_admin_commands(src);
    check_redrive(src);
    check_progress_bar(dlq, src);

    free(src);
    free(dlq);
    IT_CHECK(it_server_stop(&srv) == 0);
    it_server_cleanup(&srv);
    check_private_ca();
    return it_summary();
}
