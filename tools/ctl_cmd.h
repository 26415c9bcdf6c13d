/*
 * ctl_cmd.h -- what sluicectl's command files share: the parsed command
 * line (struct ctl), the helpers that call and report, and the commands
 * themselves, grouped by the API they use: ctl_cmd_sqs.c (the SQS API,
 * with a tenant's or the admin's keys) and ctl_cmd_admin.c (the admin
 * API, docs/admin.md). sluicectl.c parses the command line and routes.
 *
 * Output: aligned tables by default (ctl_table.h); --json prints the
 * reply documents instead. Errors read "error: <Code>: <message>" on
 * stderr with exit status 1; usage mistakes (and missing credentials)
 * exit 2.
 */
#ifndef SLUICE_CTL_CMD_H
#define SLUICE_CTL_CMD_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "ctl_client.h"

enum { CTL_EXIT_OK = 0, CTL_EXIT_ERROR = 1, CTL_EXIT_USAGE = 2 };

struct ctl {
    struct ctl_endpoint ep;
    bool json;
    bool yes;
    bool wait;           /* redrive start --wait */
    bool enqueue_only;   /* pause/resume --enqueue */
    bool dequeue_only;   /* pause/resume --dequeue */
    const char *to;      /* redrive start --to */
    long rate;           /* redrive start --rate; 0 = unset */
    long interval_ms;    /* watch --interval */
    long count;          /* watch --count; 0 = until interrupted */
    const char *args[8]; /* positional arguments after the command words */
    int nargs;
    const char *missing; /* why credentials are missing, or NULL */
};

int ctl_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* SQS call; prints the error (and with --json the body) on failure. */
bool ctl_sqs(struct ctl *c, const char *action, json_t *req, struct ctl_reply *r);
/* Admin API request; prints the error on failure (--json: the body). */
bool ctl_adm(struct ctl *c, const char *method, const char *path, json_t *body,
             struct ctl_reply *r);
/* Following something that runs on (redrive --wait, backup): a poll
 * that failed for a moment -- throttled, 429, a 5xx, no answer -- is
 * worth repeating, CTL_POLL_RETRIES times in a row at most, after
 * ctl_poll_backoff_ms(): the server's Retry-After when it sent one (at
 * most 32 s), else 1, 2, 4, then 8 s for the misses-th miss in a row
 * (1-based), so that the wait soon covers the refill of a token of any
 * bucket likely to refuse it. A refused request spends no token, so one
 * refill is enough; the client just does not know the rate. */
#define CTL_POLL_RETRIES 10
/* Monotonic seconds; a sleep of ms milliseconds. */
double ctl_now_s(void);
void ctl_sleep_ms(long ms);
bool ctl_poll_retryable(const struct ctl_reply *r);
long ctl_poll_backoff_ms(const struct ctl_reply *r, int misses);

/* Prints a reply document as indented JSON. */
void ctl_print_json(const json_t *doc);

const char *ctl_jstr(const json_t *o, const char *k);
long long ctl_jint(const json_t *o, const char *k);
/* "YYYY-MM-DD HH:MM:SSZ" of epoch ms. */
void ctl_format_ms(long long ms, char *out, size_t cap);
/* A message body for a table cell: first width characters, control
 * characters as spaces, "..." when cut. */
void ctl_excerpt(const char *body, size_t width, char *out, size_t cap);

/* A queue given as ARN, URL or TENANT/QUEUE, into tenant and name. */
bool ctl_queue_name(const char *q, char *tenant, size_t tcap, char *name, size_t ncap);
/* "arn:aws:sqs:REGION:TENANT:NAME" for an ARN, a URL or TENANT/QUEUE. */
bool ctl_queue_arn(const struct ctl *c, const char *q, char *out, size_t cap);

/* ctl_cmd_sqs.c */
int ctl_cmd_queues(struct ctl *c);
int ctl_cmd_attrs(struct ctl *c);
int ctl_cmd_dlq_sources(struct ctl *c);
int ctl_cmd_redrive_start(struct ctl *c);
int ctl_cmd_redrive_status(struct ctl *c);
int ctl_cmd_redrive_cancel(struct ctl *c);
int ctl_cmd_purge(struct ctl *c);

/* ctl_cmd_admin.c */
int ctl_cmd_tenants(struct ctl *c);
int ctl_cmd_watch(struct ctl *c);
int ctl_cmd_dlq_peek(struct ctl *c);
int ctl_cmd_pause(struct ctl *c, bool pause);
int ctl_cmd_reload(struct ctl *c);
int ctl_cmd_backup(struct ctl *c);

/* ctl_cmd_cluster.c */
int ctl_cmd_cluster_status(struct ctl *c);

#endif
