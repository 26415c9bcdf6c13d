/*
 * ctl_cmd_sqs.c -- sluicectl's commands over the SQS API: queues, attrs,
 * dlq sources, redrive start (with --wait: progress until the task ends),
 * redrive status and cancel, purge. They work with a tenant's keys as
 * well as the admin's.
 *
 * Progress (redrive start --wait) polls ListMessageMoveTasks twice a
 * second, or at the pace the server allows once a poll is throttled. On a terminal it redraws one
 * bar line (moved/total, rate over the whole run, ETA); otherwise it prints a plain line whenever
 * the count changes, at most one a second, so a log or a CI job reads it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl_cmd.h"
#include "ctl_table.h"

#define PROGRESS_POLL_MS 500
#define PROGRESS_LINE_MS 1000
#define PROGRESS_BAR 30

/* ListQueues answers at most 1,000 URLs a page; SQS pages only when
 * MaxResults is given, and then hands out NextToken until the listing
 * ends. Every page is asked for, so a tenant with more queues (up to its
 * limits.max_queues, 10,000 by default) is listed whole. */
#define QUEUES_PAGE 1000

/* Every queue URL the prefix (NULL: all) matches, page by page, into
 * *urls (a new array). False after printing the error of a failed page. */
static bool list_all_queues(struct ctl *c, const char *prefix, json_t **urls)
{
    *urls = json_array();
    char *token = NULL;
    for (;;) {
        json_t *req = json_pack("{s:i}", "MaxResults", QUEUES_PAGE);
        if (prefix != NULL) {
            json_object_set_new(req, "QueueNamePrefix", json_string(prefix));
        }
        if (token != NULL) {
            json_object_set_new(req, "NextToken", json_string(token));
        }
        free(token);
        token = NULL;
        struct ctl_reply r;
        if (!ctl_sqs(c, "ListQueues", req, &r)) {
            ctl_reply_free(&r);
            json_decref(*urls);
            *urls = NULL;
            return false;
        }
        json_array_extend(*urls, json_object_get(r.json, "QueueUrls"));
        const char *next = ctl_jstr(r.json, "NextToken");
        if (next != NULL && next[0] != '\0') {
            token = strdup(next);
        }
        ctl_reply_free(&r);
        if (token == NULL) {
            return true;
        }
    }
}

int ctl_cmd_queues(struct ctl *c)
{
    json_t *urls = NULL;
    if (!list_all_queues(c, c->nargs > 0 ? c->args[0] : NULL, &urls)) {
        return CTL_EXIT_ERROR;
    }
    if (c->json) {
        /* ListQueues' own shape, all pages in one, without a NextToken */
        json_t *doc = json_pack("{s:O}", "QueueUrls", urls);
        ctl_print_json(doc);
        json_decref(doc);
    } else if (json_array_size(urls) == 0) {
        printf("(no queues)\n");
    } else {
        struct ctl_table t;
        ctl_table_init(&t, (const char *[]){"TENANT", "QUEUE", "URL", NULL});
        size_t i;
        json_t *u;
        json_array_foreach(urls, i, u)
        {
            char tenant[128], name[128];
            const char *url = json_string_value(u);
            bool ok = ctl_queue_name(url, tenant, sizeof tenant, name, sizeof name);
            ctl_table_row(&t, (const char *[]){ok ? tenant : "-", ok ? name : "-", url});
        }
        ctl_table_print(&t, stdout);
        ctl_table_free(&t);
    }
    json_decref(urls);
    return CTL_EXIT_OK;
}

static int key_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int ctl_cmd_attrs(struct ctl *c)
{
    if (c->nargs < 1 || c->nargs > 5) {
        return ctl_usage_error("attrs needs one QUEUE_URL and at most 4 KEY=VALUE filters");
    }
    json_t *req = json_pack("{s:s, s:[s]}", "QueueUrl", c->args[0], "AttributeNames", "All");
    /* KEY=VALUE pairs: the depth of the messages matching all of them
     * (docs/api.md, "Filtered receives") beside the attributes */
    json_t *names = json_object_get(req, "AttributeNames");
    for (int i = 1; i < c->nargs; i++) {
        char name[600];
        snprintf(name, sizeof name, "sluice.Filter.%s", c->args[i]);
        json_array_append_new(names, json_string(name));
    }
    if (c->nargs > 1) {
        json_array_append_new(names, json_string("SluiceFilteredMessages"));
        json_array_append_new(names, json_string("SluiceFilteredMessagesNotVisible"));
    }
    struct ctl_reply r;
    int rc = CTL_EXIT_ERROR;
    if (ctl_sqs(c, "GetQueueAttributes", req, &r)) {
        rc = CTL_EXIT_OK;
        json_t *attrs = json_object_get(r.json, "Attributes");
        if (c->json) {
            ctl_print_json(r.json);
        } else {
            const char *keys[64];
            size_t n = 0;
            const char *k;
            json_t *v;
            json_object_foreach(attrs, k, v)
            {
                if (n < 64) {
                    keys[n++] = k;
                }
            }
            /* sorted, so two runs compare line by line */
            qsort(keys, n, sizeof *keys, key_cmp);
            struct ctl_table t;
            ctl_table_init(&t, (const char *[]){"ATTRIBUTE", "VALUE", NULL});
            for (size_t i = 0; i < n; i++) {
                ctl_table_row(&t, (const char *[]){keys[i], ctl_jstr(attrs, keys[i])});
            }
            ctl_table_print(&t, stdout);
            ctl_table_free(&t);
        }
    }
    ctl_reply_free(&r);
    return rc;
}

int ctl_cmd_dlq_sources(struct ctl *c)
{
    if (c->nargs != 1) {
        return ctl_usage_error("dlq sources needs one QUEUE_URL");
    }
    struct ctl_reply r;
    int rc = CTL_EXIT_ERROR;
    if (ctl_sqs(c, "ListDeadLetterSourceQueues", json_pack("{s:s}", "QueueUrl", c->args[0]), &r)) {
        rc = CTL_EXIT_OK;
        json_t *urls = json_object_get(r.json, "queueUrls");
        if (c->json) {
            ctl_print_json(r.json);
        } else if (json_array_size(urls) == 0) {
            printf("(no queue sends its dead letters here)\n");
        } else {
            struct ctl_table t;
            ctl_table_init(&t, (const char *[]){"SOURCE QUEUE URL", NULL});
            size_t i;
            json_t *u;
            json_array_foreach(urls, i, u)
            {
                ctl_table_row(&t, (const char *[]){json_string_value(u)});
            }
            ctl_table_print(&t, stdout);
            ctl_table_free(&t);
        }
    }
    ctl_reply_free(&r);
    return rc;
}

/* ---- redrive --------------------------------------------------------------- */

/* "ETA 12s" / "ETA 3m04s" / "ETA ?" into out. */
static void eta_text(long long left, double rate, char *out, size_t cap)
{
    if (left <= 0) {
        snprintf(out, cap, "ETA 0s");
    } else if (rate <= 0) {
        snprintf(out, cap, "ETA ?");
    } else {
        long long s = (long long)((double)left / rate + 0.5);
        if (s < 60) {
            snprintf(out, cap, "ETA %llds", s);
        } else {
            snprintf(out, cap, "ETA %lldm%02llds", s / 60, s % 60);
        }
    }
}

struct progress {
    FILE *out; /* stdout, or stderr under --json (stdout holds the JSON) */
    bool tty;
    double start;
    double last_line;
    long long last_moved;
};

static void progress_show(struct progress *p, long long moved, long long total, bool final)
{
    double t = ctl_now_s();
    double elapsed = t - p->start;
    double rate = elapsed > 0 ? (double)moved / elapsed : 0;
    char eta[32];
    eta_text(total - moved, rate, eta, sizeof eta);
    int pct = total > 0 ? (int)(moved * 100 / total) : 100;
    if (p->tty) {
        int fill = total > 0 ? (int)(moved * PROGRESS_BAR / total) : PROGRESS_BAR;
        char bar[PROGRESS_BAR + 1];
        for (int i = 0; i < PROGRESS_BAR; i++) {
            bar[i] = i < fill ? '#' : '-';
        }
        bar[PROGRESS_BAR] = '\0';
        fprintf(p->out, "\r[%s] %3d%%  %lld/%lld  %.1f msg/s  %s   ", bar, pct, moved, total, rate,
                eta);
        if (final) {
            fputc('\n', p->out);
        }
        fflush(p->out);
    } else if (final || (moved != p->last_moved && t - p->last_line >= PROGRESS_LINE_MS / 1e3)) {
        fprintf(p->out, "progress: moved %lld of %lld (%d%%), %.1f msg/s, %s\n", moved, total, pct,
                rate, eta);
        fflush(p->out);
        p->last_line = t;
        p->last_moved = moved;
    }
}

/* Follows the newest task of arn until it leaves RUNNING / CANCELLING.
 * Progress goes to stdout, or to stderr under --json, so that stdout is
 * the task's JSON alone. A throttled, refused-for-now or lost poll is
 * repeated (CTL_POLL_RETRIES in a row at most, backing off as the server
 * asks, ctl_poll_backoff_ms): the task goes on regardless, and giving up
 * would say it failed. Once throttled, polls keep to the pace that got
 * through. Returns the exit status:
 * 0 when it COMPLETED. */
static int redrive_wait(struct ctl *c, const char *arn)
{
    FILE *out = c->json ? stderr : stdout;
    struct progress p = {
        .out = out, .tty = isatty(fileno(out)) == 1, .start = ctl_now_s(), .last_moved = -1};
    int misses = 0;
    long poll_ms = PROGRESS_POLL_MS; /* slowed to the server's pace once throttled */
    for (;;) {
        struct ctl_reply r;
        if (!ctl_call(&c->ep, "ListMessageMoveTasks",
                      json_pack("{s:s, s:i}", "SourceArn", arn, "MaxResults", 1), &r)) {
            bool again = ctl_poll_retryable(&r) && ++misses <= CTL_POLL_RETRIES;
            long wait_ms = ctl_poll_backoff_ms(&r, misses);
            bool throttled = r.status >= 400 && r.status < 500; /* not a lost gateway */
            if (again) {
                fprintf(stderr, "warning: %s: %s (retrying in %.1fs)\n",
                        r.code[0] != '\0' ? r.code : "ConnectionError",
                        r.message != NULL ? r.message : r.transport, (double)wait_ms / 1e3);
            } else {
                fprintf(stderr, "error: %s: %s\n", r.code[0] != '\0' ? r.code : "ConnectionError",
                        r.message != NULL ? r.message : r.transport);
            }
            ctl_reply_free(&r);
            if (!again) {
                return CTL_EXIT_ERROR;
            }
            if (throttled && wait_ms > poll_ms) {
                poll_ms = wait_ms; /* the pace the server allows: no warning a poll */
            }
            ctl_sleep_ms(wait_ms);
            continue;
        }
        misses = 0;
        json_t *t = json_array_get(json_object_get(r.json, "Results"), 0);
        const char *status = ctl_jstr(t, "Status");
        long long moved = ctl_jint(t, "ApproximateNumberOfMessagesMoved");
        long long total = ctl_jint(t, "ApproximateNumberOfMessagesToMove");
        bool running =
            status != NULL && (strcmp(status, "RUNNING") == 0 || strcmp(status, "CANCELLING") == 0);
        progress_show(&p, moved, total, !running);
        if (!running) {
            int rc =
                status != NULL && strcmp(status, "COMPLETED") == 0 ? CTL_EXIT_OK : CTL_EXIT_ERROR;
            fprintf(out, "%s: moved %lld of %lld in %.1fs%s%s\n", status != NULL ? status : "GONE",
                    moved, total, ctl_now_s() - p.start, ctl_jstr(t, "FailureReason") ? ": " : "",
                    ctl_jstr(t, "FailureReason") ? ctl_jstr(t, "FailureReason") : "");
            ctl_reply_free(&r);
            return rc;
        }
        ctl_reply_free(&r);
        ctl_sleep_ms(poll_ms);
    }
}

int ctl_cmd_redrive_start(struct ctl *c)
{
    char arn[512], to[512];
    if (c->nargs != 1) {
        return ctl_usage_error("redrive start needs one DLQ");
    }
    if (!ctl_queue_arn(c, c->args[0], arn, sizeof arn)) {
        return ctl_usage_error("not a queue ARN, URL or TENANT/QUEUE: %s", c->args[0]);
    }
    json_t *req = json_pack("{s:s}", "SourceArn", arn);
    if (c->to != NULL) {
        if (!ctl_queue_arn(c, c->to, to, sizeof to)) {
            json_decref(req);
            return ctl_usage_error("not a queue ARN, URL or TENANT/QUEUE: %s", c->to);
        }
        json_object_set_new(req, "DestinationArn", json_string(to));
    }
    if (c->rate > 0) {
        json_object_set_new(req, "MaxNumberOfMessagesPerSecond", json_integer(c->rate));
    }
    struct ctl_reply r;
    int rc = CTL_EXIT_ERROR;
    if (ctl_sqs(c, "StartMessageMoveTask", req, &r)) {
        rc = CTL_EXIT_OK;
        if (c->json) {
            ctl_print_json(r.json);
        } else {
            printf("started: %s -> %s\n", arn, c->to != NULL ? to : "each message's source queue");
            printf("task handle: %s\n", ctl_jstr(r.json, "TaskHandle"));
            if (!c->wait) {
                printf("follow with: sluicectl redrive status %s\n", arn);
            }
        }
    }
    ctl_reply_free(&r);
    if (rc == CTL_EXIT_OK && c->wait) {
        rc = redrive_wait(c, arn);
    }
    return rc;
}

int ctl_cmd_redrive_status(struct ctl *c)
{
    char arn[512];
    if (c->nargs != 1) {
        return ctl_usage_error("redrive status needs one DLQ");
    }
    if (!ctl_queue_arn(c, c->args[0], arn, sizeof arn)) {
        return ctl_usage_error("not a queue ARN, URL or TENANT/QUEUE: %s", c->args[0]);
    }
    struct ctl_reply r;
    int rc = CTL_EXIT_ERROR;
    if (ctl_sqs(c, "ListMessageMoveTasks",
                json_pack("{s:s, s:i}", "SourceArn", arn, "MaxResults", 10), &r)) {
        rc = CTL_EXIT_OK;
        json_t *res = json_object_get(r.json, "Results");
        if (c->json) {
            ctl_print_json(r.json);
        } else if (json_array_size(res) == 0) {
            printf("(no move tasks for %s)\n", arn);
        } else {
            struct ctl_table t;
            ctl_table_init(&t, (const char *[]){"STATUS", "MOVED", "TOTAL", "RATE", "STARTED",
                                                "DESTINATION", "FAILURE", NULL});
            size_t i;
            json_t *task;
            const char *handle = NULL;
            json_array_foreach(res, i, task)
            {
                char started[32], rate[32] = "max";
                ctl_format_ms(ctl_jint(task, "StartedTimestamp"), started, sizeof started);
                if (json_object_get(task, "MaxNumberOfMessagesPerSecond") != NULL) {
                    snprintf(rate, sizeof rate, "%lld/s",
                             ctl_jint(task, "MaxNumberOfMessagesPerSecond"));
                }
                const char *dest = ctl_jstr(task, "DestinationArn");
                ctl_table_rowf(&t, "%s\t%lld\t%lld\t%s\t%s\t%s\t%s", ctl_jstr(task, "Status"),
                               ctl_jint(task, "ApproximateNumberOfMessagesMoved"),
                               ctl_jint(task, "ApproximateNumberOfMessagesToMove"), rate, started,
                               dest ? dest : "(each message's source)",
                               ctl_jstr(task, "FailureReason") ? ctl_jstr(task, "FailureReason")
                                                               : "-");
                if (handle == NULL) {
                    handle = ctl_jstr(task, "TaskHandle");
                }
            }
            ctl_table_print(&t, stdout);
            ctl_table_free(&t);
            if (handle != NULL) {
                printf("cancel the running task with: sluicectl redrive cancel %s\n", handle);
            }
        }
    }
    ctl_reply_free(&r);
    return rc;
}

int ctl_cmd_redrive_cancel(struct ctl *c)
{
    if (c->nargs != 1) {
        return ctl_usage_error("redrive cancel needs one TASK_HANDLE");
    }
    struct ctl_reply r;
    int rc = CTL_EXIT_ERROR;
    if (ctl_sqs(c, "CancelMessageMoveTask", json_pack("{s:s}", "TaskHandle", c->args[0]), &r)) {
        rc = CTL_EXIT_OK;
        if (c->json) {
            ctl_print_json(r.json);
        } else {
            printf("cancelling; %lld message(s) moved so far stay moved\n",
                   ctl_jint(r.json, "ApproximateNumberOfMessagesMoved"));
        }
    }
    ctl_reply_free(&r);
    return rc;
}

int ctl_cmd_purge(struct ctl *c)
{
    if (c->nargs != 1) {
        return ctl_usage_error("purge needs one QUEUE_URL");
    }
    if (!c->yes) {
        fprintf(stderr,
                "sluicectl: purge deletes every message of %s and cannot be undone;\n"
                "run again with --yes to do it\n",
                c->args[0]);
        return CTL_EXIT_USAGE;
    }
    struct ctl_reply r;
    int rc = CTL_EXIT_ERROR;
    if (ctl_sqs(c, "PurgeQueue", json_pack("{s:s}", "QueueUrl", c->args[0]), &r)) {
        rc = CTL_EXIT_OK;
        if (c->json) {
            printf("%s\n", r.body != NULL && r.body[0] != '\0' ? r.body : "{}");
        } else {
            printf("purged %s\n", c->args[0]);
        }
    }
    ctl_reply_free(&r);
    return rc;
}
