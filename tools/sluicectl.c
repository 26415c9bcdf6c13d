/*
 * sluicectl -- the operators' command-line tool. It talks to a running
 * sluiced over the SQS API like any SQS client (HTTP/2, SigV4 with the
 * gateway's own signer; see ctl_client.c), so it needs nothing but an
 * endpoint and a tenant's (or the admin's) keys.
 *
 * Written for the on-call engineer at 3 a.m.: every command prints a few
 * plain lines, --json prints the raw reply instead, errors read
 * "error: <Code>: <message>" with exit status 1, usage mistakes exit 2,
 * and nothing destructive happens without --yes.
 *
 * Threading: one thread. Everything allocated is freed before exit.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>
#include <jansson.h>

#include "ctl_client.h"

#define SLUICECTL_VERSION "0.2.0"
#define DEFAULT_ENDPOINT "http://127.0.0.1:9324"
#define PEEK_DEFAULT 10
#define PEEK_MAX 100
#define BODY_EXCERPT 60

enum { EXIT_OK = 0, EXIT_ERROR = 1, EXIT_USAGE = 2 };

struct ctl {
    struct ctl_endpoint ep;
    bool json;
    bool yes;
    const char *to;      /* redrive start --to */
    long rate;           /* redrive start --rate; 0 = unset */
    const char *args[8]; /* positional arguments after the command words */
    int nargs;
};

static void usage(FILE *out)
{
    fprintf(out,
            "usage: sluicectl [options] <command> [arguments]\n"
            "\n"
            "commands:\n"
            "  queues [PREFIX]                    list queues (the admin sees every tenant's)\n"
            "  attrs QUEUE_URL                    show a queue's attributes\n"
            "  dlq sources QUEUE_URL              queues whose dead-letter queue this is\n"
            "  dlq peek QUEUE_URL [N]             show up to N (default %d, max %d) messages\n"
            "                                     (a receive with VisibilityTimeout 0: nothing\n"
            "                                     is hidden, but each receive counts)\n"
            "  redrive start DLQ [--to ARN] [--rate N]\n"
            "                                     move a DLQ's messages back to their source\n"
            "                                     queues (or to ARN), N messages/s (1..500)\n"
            "  redrive status DLQ                 the DLQ's recent move tasks, newest first\n"
            "  redrive cancel TASK_HANDLE         stop a running move task\n"
            "  purge QUEUE_URL --yes              delete every message of a queue\n"
            "  version                            print the version\n"
            "\n"
            "DLQ is the queue's ARN (arn:aws:sqs:REGION:TENANT:NAME) or its URL.\n"
            "\n"
            "options:\n"
            "  --endpoint URL           (env SLUICE_ENDPOINT, default " DEFAULT_ENDPOINT ")\n"
            "  --access-key-id KEY      (env SLUICE_ACCESS_KEY_ID, default \"default\")\n"
            "  --secret-access-key KEY  (env SLUICE_SECRET_ACCESS_KEY, default \"default\")\n"
            "  --region REGION          (env SLUICE_REGION, default us-east-1)\n"
            "  --json                   print the raw JSON reply\n"
            "  --yes                    confirm a destructive command\n"
            "  -h, --help               this text\n"
            "\n"
            "exit status: 0 done, 1 the call failed (error: <Code>: <message>), 2 usage\n",
            PEEK_DEFAULT, PEEK_MAX);
}

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "sluicectl: ");
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n(sluicectl --help for usage)\n");
    return EXIT_USAGE;
}

static const char *env_or(const char *name, const char *fallback)
{
    const char *v = getenv(name);
    return v != NULL && v[0] != '\0' ? v : fallback;
}

/* Calls action; on failure prints the error (and the raw body with
 * --json) and returns false. */
static bool call(struct ctl *c, const char *action, json_t *req, struct ctl_reply *r)
{
    bool ok = ctl_call(&c->ep, action, req, r);
    if (c->json && r->body != NULL && r->body[0] != '\0') {
        printf("%s\n", r->body);
    }
    if (!ok) {
        fprintf(stderr, "error: %s: %s\n", r->code, r->message ? r->message : "");
    }
    return ok;
}

static const char *jstr(const json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

/* "arn:aws:sqs:REGION:TENANT:NAME" for an ARN or a queue URL
 * ("http[s]://HOST/TENANT/NAME"), into out. */
static bool queue_arn(const struct ctl *c, const char *q, char *out, size_t cap)
{
    if (strncmp(q, "arn:", 4) == 0) {
        snprintf(out, cap, "%s", q);
        return true;
    }
    const char *p = strstr(q, "://");
    p = p != NULL ? strchr(p + 3, '/') : NULL;
    const char *slash = p != NULL ? strchr(p + 1, '/') : NULL;
    if (p == NULL || slash == NULL || slash[1] == '\0' || strchr(slash + 1, '/') != NULL) {
        return false;
    }
    snprintf(out, cap, "arn:aws:sqs:%s:%.*s:%s", c->ep.region, (int)(slash - p - 1), p + 1,
             slash + 1);
    return true;
}

static void format_ms(long long ms, char *out, size_t cap)
{
    time_t s = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&s, &tm);
    strftime(out, cap, "%Y-%m-%d %H:%M:%SZ", &tm);
}

/* ---- commands ------------------------------------------------------------ */

static int cmd_queues(struct ctl *c)
{
    json_t *req = json_object();
    if (c->nargs > 0) {
        json_object_set_new(req, "QueueNamePrefix", json_string(c->args[0]));
    }
    struct ctl_reply r;
    int rc = EXIT_ERROR;
    if (call(c, "ListQueues", req, &r)) {
        rc = EXIT_OK;
        if (!c->json) {
            json_t *urls = json_object_get(r.json, "QueueUrls");
            size_t i;
            json_t *u;
            json_array_foreach(urls, i, u)
            {
                printf("%s\n", json_string_value(u));
            }
            if (json_array_size(urls) == 0) {
                printf("(no queues)\n");
            }
        }
    }
    ctl_reply_free(&r);
    return rc;
}

static int cmd_attrs(struct ctl *c)
{
    if (c->nargs != 1) {
        return usage_error("attrs needs one QUEUE_URL");
    }
    json_t *req = json_pack("{s:s, s:[s]}", "QueueUrl", c->args[0], "AttributeNames", "All");
    struct ctl_reply r;
    int rc = EXIT_ERROR;
    if (call(c, "GetQueueAttributes", req, &r)) {
        rc = EXIT_OK;
        if (!c->json) {
            json_t *attrs = json_object_get(r.json, "Attributes");
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
            for (size_t i = 1; i < n; i++) {
                for (size_t j = i; j > 0 && strcmp(keys[j - 1], keys[j]) > 0; j--) {
                    const char *t = keys[j];
                    keys[j] = keys[j - 1];
                    keys[j - 1] = t;
                }
            }
            for (size_t i = 0; i < n; i++) {
                printf("%-40s %s\n", keys[i], jstr(attrs, keys[i]));
            }
        }
    }
    ctl_reply_free(&r);
    return rc;
}

static int cmd_dlq_sources(struct ctl *c)
{
    if (c->nargs != 1) {
        return usage_error("dlq sources needs one QUEUE_URL");
    }
    struct ctl_reply r;
    int rc = EXIT_ERROR;
    if (call(c, "ListDeadLetterSourceQueues", json_pack("{s:s}", "QueueUrl", c->args[0]), &r)) {
        rc = EXIT_OK;
        if (!c->json) {
            json_t *urls = json_object_get(r.json, "queueUrls");
            size_t i;
            json_t *u;
            json_array_foreach(urls, i, u)
            {
                printf("%s\n", json_string_value(u));
            }
            if (json_array_size(urls) == 0) {
                printf("(no queue sends its dead letters here)\n");
            }
        }
    }
    ctl_reply_free(&r);
    return rc;
}

static void print_excerpt(const char *body)
{
    size_t n = strlen(body);
    for (size_t i = 0; i < n && i < BODY_EXCERPT; i++) {
        unsigned char ch = (unsigned char)body[i];
        putchar(ch == '\n' || ch == '\r' || ch == '\t' ? ' ' : (char)ch);
    }
    if (n > BODY_EXCERPT) {
        printf("... (%zu bytes)", n);
    }
}

static int cmd_dlq_peek(struct ctl *c)
{
    if (c->nargs < 1 || c->nargs > 2) {
        return usage_error("dlq peek needs QUEUE_URL [N]");
    }
    long want = PEEK_DEFAULT;
    if (c->nargs == 2) {
        char *end = NULL;
        want = strtol(c->args[1], &end, 10);
        if (end == c->args[1] || *end != '\0' || want < 1 || want > PEEK_MAX) {
            return usage_error("N must be 1..100, not %s", c->args[1]);
        }
    }
    json_t *seen = json_object(); /* MessageId -> true: a message comes back at once */
    json_t *all = json_array();
    int rc = EXIT_OK;
    for (int round = 0; round < PEEK_MAX && (long)json_array_size(all) < want; round++) {
        long batch = want - (long)json_array_size(all);
        json_t *req =
            json_pack("{s:s, s:i, s:i, s:[s], s:[s]}", "QueueUrl", c->args[0],
                      "MaxNumberOfMessages", (int)(batch > 10 ? 10 : batch), "VisibilityTimeout", 0,
                      "MessageSystemAttributeNames", "All", "MessageAttributeNames", "All");
        struct ctl_reply r;
        bool saved_json = c->json;
        c->json = false; /* print one combined document below */
        bool ok = call(c, "ReceiveMessage", req, &r);
        c->json = saved_json;
        if (!ok) {
            ctl_reply_free(&r);
            rc = EXIT_ERROR;
            break;
        }
        size_t fresh = 0;
        size_t i;
        json_t *m;
        json_array_foreach(json_object_get(r.json, "Messages"), i, m)
        {
            const char *id = jstr(m, "MessageId");
            if (id != NULL && json_object_get(seen, id) == NULL) {
                json_object_set_new(seen, id, json_true());
                json_array_append(all, m);
                fresh++;
            }
        }
        ctl_reply_free(&r);
        if (fresh == 0) {
            break; /* empty, or only messages already shown */
        }
    }
    if (rc == EXIT_OK && c->json) {
        json_t *doc = json_pack("{s:O}", "Messages", all);
        char *text = json_dumps(doc, JSON_INDENT(2));
        printf("%s\n", text);
        free(text);
        json_decref(doc);
    } else if (rc == EXIT_OK) {
        size_t i;
        json_t *m;
        json_array_foreach(all, i, m)
        {
            json_t *a = json_object_get(m, "Attributes");
            const char *count = jstr(a, "ApproximateReceiveCount");
            const char *source = jstr(a, "DeadLetterQueueSourceArn");
            printf("%s  receives=%s  source=%s\n  ", jstr(m, "MessageId"), count ? count : "?",
                   source ? source : "-");
            print_excerpt(jstr(m, "Body") ? jstr(m, "Body") : "");
            putchar('\n');
        }
        printf("%zu message(s) shown; each was received once more by this peek\n",
               json_array_size(all));
    }
    json_decref(all);
    json_decref(seen);
    return rc;
}

static int cmd_redrive_start(struct ctl *c)
{
    char arn[512], to[512];
    if (c->nargs != 1) {
        return usage_error("redrive start needs one DLQ");
    }
    if (!queue_arn(c, c->args[0], arn, sizeof arn)) {
        return usage_error("not a queue ARN or URL: %s", c->args[0]);
    }
    json_t *req = json_pack("{s:s}", "SourceArn", arn);
    if (c->to != NULL) {
        if (!queue_arn(c, c->to, to, sizeof to)) {
            json_decref(req);
            return usage_error("not a queue ARN or URL: %s", c->to);
        }
        json_object_set_new(req, "DestinationArn", json_string(to));
    }
    if (c->rate > 0) {
        json_object_set_new(req, "MaxNumberOfMessagesPerSecond", json_integer(c->rate));
    }
    struct ctl_reply r;
    int rc = EXIT_ERROR;
    if (call(c, "StartMessageMoveTask", req, &r)) {
        rc = EXIT_OK;
        if (!c->json) {
            printf("started: %s -> %s\n", arn, c->to != NULL ? to : "each message's source queue");
            printf("task handle: %s\n", jstr(r.json, "TaskHandle"));
            printf("follow with: sluicectl redrive status %s\n", arn);
        }
    }
    ctl_reply_free(&r);
    return rc;
}

static int cmd_redrive_status(struct ctl *c)
{
    char arn[512];
    if (c->nargs != 1) {
        return usage_error("redrive status needs one DLQ");
    }
    if (!queue_arn(c, c->args[0], arn, sizeof arn)) {
        return usage_error("not a queue ARN or URL: %s", c->args[0]);
    }
    struct ctl_reply r;
    int rc = EXIT_ERROR;
    if (call(c, "ListMessageMoveTasks", json_pack("{s:s, s:i}", "SourceArn", arn, "MaxResults", 10),
             &r)) {
        rc = EXIT_OK;
        if (!c->json) {
            json_t *res = json_object_get(r.json, "Results");
            size_t i;
            json_t *t;
            json_array_foreach(res, i, t)
            {
                char started[32];
                format_ms((long long)json_integer_value(json_object_get(t, "StartedTimestamp")),
                          started, sizeof started);
                const char *dest = jstr(t, "DestinationArn");
                json_t *rate = json_object_get(t, "MaxNumberOfMessagesPerSecond");
                char rate_text[32] = "max";
                if (rate != NULL) {
                    snprintf(rate_text, sizeof rate_text, "%lld/s",
                             (long long)json_integer_value(rate));
                }
                printf("%-10s moved %lld of %lld  started %s  rate %s\n           to %s\n",
                       jstr(t, "Status"),
                       (long long)json_integer_value(
                           json_object_get(t, "ApproximateNumberOfMessagesMoved")),
                       (long long)json_integer_value(
                           json_object_get(t, "ApproximateNumberOfMessagesToMove")),
                       started, rate_text, dest ? dest : "(each message's source)");
                if (jstr(t, "FailureReason") != NULL) {
                    printf("           failure: %s\n", jstr(t, "FailureReason"));
                }
                if (jstr(t, "TaskHandle") != NULL) {
                    printf("           cancel with: sluicectl redrive cancel %s\n",
                           jstr(t, "TaskHandle"));
                }
            }
            if (json_array_size(res) == 0) {
                printf("(no move tasks for %s since sluiced started)\n", arn);
            }
        }
    }
    ctl_reply_free(&r);
    return rc;
}

static int cmd_redrive_cancel(struct ctl *c)
{
    if (c->nargs != 1) {
        return usage_error("redrive cancel needs one TASK_HANDLE");
    }
    struct ctl_reply r;
    int rc = EXIT_ERROR;
    if (call(c, "CancelMessageMoveTask", json_pack("{s:s}", "TaskHandle", c->args[0]), &r)) {
        rc = EXIT_OK;
        if (!c->json) {
            printf("cancelling; %lld message(s) moved so far stay moved\n",
                   (long long)json_integer_value(
                       json_object_get(r.json, "ApproximateNumberOfMessagesMoved")));
        }
    }
    ctl_reply_free(&r);
    return rc;
}

static int cmd_purge(struct ctl *c)
{
    if (c->nargs != 1) {
        return usage_error("purge needs one QUEUE_URL");
    }
    if (!c->yes) {
        fprintf(stderr,
                "sluicectl: purge deletes every message of %s and cannot be undone;\n"
                "run again with --yes to do it\n",
                c->args[0]);
        return EXIT_USAGE;
    }
    struct ctl_reply r;
    int rc = EXIT_ERROR;
    if (call(c, "PurgeQueue", json_pack("{s:s}", "QueueUrl", c->args[0]), &r)) {
        rc = EXIT_OK;
        if (!c->json) {
            printf("purged %s\n", c->args[0]);
        }
    }
    ctl_reply_free(&r);
    return rc;
}

/* ---- main ---------------------------------------------------------------- */

static const char *option_value(int argc, char **argv, int *i)
{
    const char *arg = argv[*i];
    const char *eq = strchr(arg, '=');
    if (eq != NULL) {
        return eq + 1;
    }
    if (*i + 1 >= argc) {
        return NULL;
    }
    return argv[++*i];
}

static bool option_is(const char *arg, const char *name)
{
    size_t n = strlen(name);
    return strncmp(arg, name, n) == 0 && (arg[n] == '\0' || arg[n] == '=');
}

int main(int argc, char **argv)
{
    struct ctl c = {
        .ep = {.url = env_or("SLUICE_ENDPOINT", DEFAULT_ENDPOINT),
               .access_key_id = env_or("SLUICE_ACCESS_KEY_ID", "default"),
               .secret = env_or("SLUICE_SECRET_ACCESS_KEY", "default"),
               .region = env_or("SLUICE_REGION", "us-east-1")},
    };
    const char *words[3];
    int nwords = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char **slot = NULL;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            return EXIT_OK;
        } else if (strcmp(a, "--json") == 0) {
            c.json = true;
            continue;
        } else if (strcmp(a, "--yes") == 0) {
            c.yes = true;
            continue;
        } else if (option_is(a, "--endpoint")) {
            slot = &c.ep.url;
        } else if (option_is(a, "--access-key-id")) {
            slot = &c.ep.access_key_id;
        } else if (option_is(a, "--secret-access-key")) {
            slot = &c.ep.secret;
        } else if (option_is(a, "--region")) {
            slot = &c.ep.region;
        } else if (option_is(a, "--to")) {
            slot = &c.to;
        } else if (option_is(a, "--rate")) {
            const char *v = option_value(argc, argv, &i);
            char *end = NULL;
            c.rate = v != NULL ? strtol(v, &end, 10) : 0;
            if (v == NULL || end == v || *end != '\0' || c.rate < 1 || c.rate > 500) {
                return usage_error("--rate must be 1..500 messages per second, not %s",
                                   v ? v : "nothing");
            }
            continue;
        } else if (a[0] == '-' && a[1] == '-') {
            return usage_error("unknown option %s", a);
        } else if (nwords < 1 || (nwords < 2 && (strcmp(words[0], "dlq") == 0 ||
                                                 strcmp(words[0], "redrive") == 0))) {
            words[nwords++] = a;
            continue;
        } else if (c.nargs < (int)(sizeof c.args / sizeof c.args[0])) {
            c.args[c.nargs++] = a;
            continue;
        } else {
            return usage_error("too many arguments at %s", a);
        }
        const char *v = option_value(argc, argv, &i);
        if (v == NULL) {
            return usage_error("%s needs a value", a);
        }
        *slot = v;
    }
    if (nwords == 0) {
        usage(stderr);
        return EXIT_USAGE;
    }
    const char *cmd = words[0];
    const char *sub = nwords > 1 ? words[1] : "";
    if (strcmp(cmd, "version") == 0) {
        printf("sluicectl %s\n", SLUICECTL_VERSION);
        return EXIT_OK;
    }
    curl_global_init(CURL_GLOBAL_DEFAULT);
    int rc;
    if (strcmp(cmd, "queues") == 0) {
        rc = cmd_queues(&c);
    } else if (strcmp(cmd, "attrs") == 0) {
        rc = cmd_attrs(&c);
    } else if (strcmp(cmd, "dlq") == 0 && strcmp(sub, "sources") == 0) {
        rc = cmd_dlq_sources(&c);
    } else if (strcmp(cmd, "dlq") == 0 && strcmp(sub, "peek") == 0) {
        rc = cmd_dlq_peek(&c);
    } else if (strcmp(cmd, "redrive") == 0 && strcmp(sub, "start") == 0) {
        rc = cmd_redrive_start(&c);
    } else if (strcmp(cmd, "redrive") == 0 && strcmp(sub, "status") == 0) {
        rc = cmd_redrive_status(&c);
    } else if (strcmp(cmd, "redrive") == 0 && strcmp(sub, "cancel") == 0) {
        rc = cmd_redrive_cancel(&c);
    } else if (strcmp(cmd, "purge") == 0) {
        rc = cmd_purge(&c);
    } else {
        rc = usage_error("unknown command %s", nwords > 1 ? sub : cmd);
        if (nwords > 1) {
            fprintf(stderr, "(in %s)\n", cmd);
        }
    }
    curl_global_cleanup();
    return rc;
}
