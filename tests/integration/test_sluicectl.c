/*
 * test_sluicectl.c -- the operators' tool against a real sluiced: the
 * commands an on-call engineer runs during a DLQ incident (queues, attrs,
 * dlq sources, dlq peek, redrive start / status, purge), --json, and
 * what errors look like ("error: <Code>: <message>", exit 1; usage
 * mistakes exit 2). sluicectl runs as a child process with its output
 * captured; waits are bounded polls.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include "it_sqs.h"

static struct it_server srv;

struct run {
    int status;
    char out[16384]; /* stdout and stderr */
};

/* Runs "sluicectl <args>" with the endpoint and acme's keys in the
 * environment (overridable by args). */
static struct run ctl(const char *args)
{
    struct run r = {.status = -1};
    const char *dir = getenv("SLUICE_BUILD_DIR");
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "SLUICE_ENDPOINT='%s' SLUICE_ACCESS_KEY_ID='" IT_KEY
             "' SLUICE_SECRET_ACCESS_KEY='" IT_SECRET "' '%s/sluicectl' %s 2>&1",
             srv.base_url, dir ? dir : ".", args);
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

#define CHECK_HAS(run, text)                                                                       \
    do {                                                                                           \
        bool has_ = strstr((run).out, (text)) != NULL;                                             \
        IT_CHECK(has_ && (text));                                                                  \
        if (!has_) {                                                                               \
            fprintf(stderr, "  output was:\n%s\n", (run).out);                                     \
        }                                                                                          \
    } while (0)

static void pause_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

int main(void)
{
    struct it_options opt = {.tls = false};
    IT_REQUIRE(it_server_start(&srv, &opt) == 0);

    struct run v = ctl("version");
    IT_CHECK(v.status == 0);
    CHECK_HAS(v, "sluicectl ");
    v = ctl("--help");
    IT_CHECK(v.status == 0);
    CHECK_HAS(v, "redrive start");
    v = ctl("frobnicate");
    IT_CHECK(v.status == 2);

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

    char args[1024];
    v = ctl("queues ctl-");
    IT_CHECK(v.status == 0);
    CHECK_HAS(v, dlq);
    CHECK_HAS(v, src);

    snprintf(args, sizeof args, "attrs '%s'", dlq);
    v = ctl(args);
    IT_CHECK(v.status == 0);
    CHECK_HAS(v, "arn:aws:sqs:" IT_REGION ":" IT_TENANT ":ctl-dlq");
    CHECK_HAS(v, "ApproximateNumberOfMessages");

    snprintf(args, sizeof args, "dlq sources '%s'", dlq);
    v = ctl(args);
    IT_CHECK(v.status == 0);
    CHECK_HAS(v, src);

    snprintf(args, sizeof args, "dlq peek '%s' 5", dlq);
    v = ctl(args);
    IT_CHECK(v.status == 0);
    CHECK_HAS(v, "source=arn:aws:sqs:" IT_REGION ":" IT_TENANT ":ctl-src");
    CHECK_HAS(v, "poison one");
    CHECK_HAS(v, "poison two");
    CHECK_HAS(v, "2 message(s) shown");
    /* nothing hidden by the peek */
    IT_CHECK(it_queue_attr_int(&srv, dlq, "ApproximateNumberOfMessagesNotVisible") == 0);

    /* the DLQ by URL works as well as by ARN */
    snprintf(args, sizeof args, "redrive start '%s' --rate 100", dlq);
    v = ctl(args);
    IT_CHECK(v.status == 0);
    CHECK_HAS(v, "task handle: ");
    bool completed = false;
    for (int i = 0; i < 400 && !completed; i++) {
        v = ctl("redrive status arn:aws:sqs:" IT_REGION ":" IT_TENANT ":ctl-dlq");
        completed = v.status == 0 && strstr(v.out, "COMPLETED") != NULL;
        if (!completed) {
            pause_ms(50);
        }
    }
    IT_CHECK(completed);
    CHECK_HAS(v, "moved 2 of 2");
    CHECK_HAS(v, "rate 100/s");
    IT_CHECK(it_queue_attr_int(&srv, src, "ApproximateNumberOfMessages") == 2);

    v = ctl("--json redrive status arn:aws:sqs:" IT_REGION ":" IT_TENANT ":ctl-dlq");
    IT_CHECK(v.status == 0);
    json_t *doc = json_loads(v.out, 0, NULL);
    IT_CHECK(json_array_size(json_object_get(doc, "Results")) == 1);
    json_decref(doc);

    v = ctl("redrive cancel foobared");
    IT_CHECK(v.status == 1);
    CHECK_HAS(v, "error: InvalidParameterValue: Value for parameter TaskHandle is invalid.");

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
    snprintf(args, sizeof args, "purge '%s' --yes", src);
    v = ctl(args);
    IT_CHECK(v.status == 0);
    IT_CHECK(it_queue_attr_int(&srv, src, "ApproximateNumberOfMessages") == 0);

    free(src);
    free(dlq);
    IT_CHECK(it_server_stop(&srv) == 0);
    it_server_cleanup(&srv);
    return it_summary();
}
