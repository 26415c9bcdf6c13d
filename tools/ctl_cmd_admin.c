/*
 * ctl_cmd_admin.c -- sluicectl's commands over the admin API
 * (docs/admin.md), which need the admin's keys or bearer token: tenants,
 * watch (a live view of a tenant's queues), dlq peek (reads without
 * leasing), pause / resume, reload and backup.
 *
 * watch redraws the screen on a terminal and prints one table per
 * refresh, under a time stamp, otherwise; --count bounds it (scripts,
 * tests), Ctrl-C ends it. backup starts the copy and follows it to its
 * end with a progress line, the way redrive start --wait does.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "ctl_cmd.h"
#include "ctl_table.h"

#define PEEK_DEFAULT 10
#define PEEK_MAX 100
#define BODY_EXCERPT 48

/* The path segment of s, %XX-escaped (queue names are [A-Za-z0-9_-.],
 * but a typo should reach the server as typed). */
static void path_escape(const char *s, char *out, size_t cap)
{
    char *e = curl_easy_escape(NULL, s, 0);
    snprintf(out, cap, "%s", e != NULL ? e : "");
    curl_free(e);
}

/* "/api/queues/T/Q" plus suffix, for a queue named any way. */
static bool queue_path(const char *q, const char *suffix, char *out, size_t cap)
{
    char tenant[128], name[128], te[400], ne[400];
    if (!ctl_queue_name(q, tenant, sizeof tenant, name, sizeof name)) {
        return false;
    }
    path_escape(tenant, te, sizeof te);
    path_escape(name, ne, sizeof ne);
    snprintf(out, cap, "/api/queues/%s/%s%s", te, ne, suffix);
    return true;
}

int ctl_cmd_tenants(struct ctl *c)
{
    struct ctl_reply r;
    int rc = CTL_EXIT_ERROR;
    if (ctl_adm(c, "GET", "/tenants", NULL, &r)) {
        rc = CTL_EXIT_OK;
        if (c->json) {
            ctl_print_json(r.json);
        } else {
            struct ctl_table t;
            ctl_table_init(&t, (const char *[]){"TENANT", "RATE/S", "BURST", "ON_EXCESS", "BACKLOG",
                                                "INFLIGHT", "TOKENS", "PARTITIONS", NULL});
            size_t i;
            json_t *ten;
            json_array_foreach(json_object_get(r.json, "tenants"), i, ten)
            {
                json_t *lim = json_object_get(ten, "limits");
                json_t *use = json_object_get(ten, "usage");
                char parts[256] = "";
                size_t j;
                json_t *p;
                json_array_foreach(json_object_get(ten, "partitions"), j, p)
                {
                    size_t n = strlen(parts);
                    snprintf(parts + n, sizeof parts - n, "%s%lld", j > 0 ? "," : "",
                             (long long)json_integer_value(p));
                }
                ctl_table_rowf(&t, "%s\t%g\t%lld\t%s\t%lld\t%lld\t%lld\t%s", ctl_jstr(ten, "name"),
                               json_real_value(json_object_get(lim, "requests_per_second")),
                               ctl_jint(lim, "burst"), ctl_jstr(ten, "on_excess"),
                               ctl_jint(use, "backlog"), ctl_jint(use, "inflight"),
                               ctl_jint(use, "tokens_available"), parts);
            }
            ctl_table_print(&t, stdout);
            ctl_table_free(&t);
        }
    }
    ctl_reply_free(&r);
    return rc;
}

static const char *paused_text(const json_t *q)
{
    json_t *p = json_object_get(q, "paused");
    bool e = json_is_true(json_object_get(p, "enqueue"));
    bool d = json_is_true(json_object_get(p, "dequeue"));
    return e && d ? "both" : e ? "enqueue" : d ? "dequeue" : "-";
}

static void queues_table(const json_t *queues, FILE *out)
{
    struct ctl_table t;
    ctl_table_init(&t, (const char *[]){"QUEUE", "READY", "INFLIGHT", "DELAYED", "OVERFLOW",
                                        "OLDEST_S", "PAUSED", "DLQ_OF", NULL});
    size_t i;
    json_t *q;
    json_array_foreach(queues, i, q)
    {
        char of[256] = "";
        size_t j;
        json_t *s;
        json_array_foreach(json_object_get(q, "dlq_of"), j, s)
        {
            size_t n = strlen(of);
            snprintf(of + n, sizeof of - n, "%s%s", j > 0 ? "," : "", json_string_value(s));
        }
        ctl_table_rowf(&t, "%s\t%lld\t%lld\t%lld\t%lld\t%lld\t%s\t%s", ctl_jstr(q, "name"),
                       ctl_jint(q, "ready"), ctl_jint(q, "inflight"), ctl_jint(q, "delayed"),
                       ctl_jint(q, "overflow"), ctl_jint(q, "oldest_age_s"), paused_text(q),
                       of[0] != '\0' ? of : "-");
    }
    ctl_table_print(&t, out);
    ctl_table_free(&t);
}

int ctl_cmd_watch(struct ctl *c)
{
    if (c->nargs != 1) {
        return ctl_usage_error("watch needs one TENANT");
    }
    char te[400], path[512];
    path_escape(c->args[0], te, sizeof te);
    snprintf(path, sizeof path, "/api/queues?tenant=%s", te);
    bool tty = isatty(STDOUT_FILENO) == 1;
    long interval = c->interval_ms > 0 ? c->interval_ms : 2000;
    for (long n = 0; c->count == 0 || n < c->count; n++) {
        if (n > 0) {
            struct timespec ts = {interval / 1000, (interval % 1000) * 1000000L};
            nanosleep(&ts, NULL);
        }
        struct ctl_reply r;
        if (!ctl_adm(c, "GET", path, NULL, &r)) {
            ctl_reply_free(&r);
            return CTL_EXIT_ERROR;
        }
        char when[32];
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        ctl_format_ms((long long)now.tv_sec * 1000, when, sizeof when);
        if (c->json) {
            printf("%s\n", r.body);
        } else {
            if (tty) {
                fputs("\033[H\033[2J", stdout); /* home, clear: a top-like view */
            }
            printf("tenant %s  %s  (every %.1fs%s)\n", c->args[0], when, (double)interval / 1e3,
                   tty ? "; Ctrl-C to stop" : "");
            json_t *queues = json_object_get(r.json, "queues");
            if (json_array_size(queues) == 0) {
                printf("(no queues)\n");
            } else {
                queues_table(queues, stdout);
            }
            if (!tty) {
                putchar('\n');
            }
        }
        fflush(stdout);
        ctl_reply_free(&r);
    }
    return CTL_EXIT_OK;
}

int ctl_cmd_dlq_peek(struct ctl *c)
{
    if (c->nargs < 1 || c->nargs > 2) {
        return ctl_usage_error("dlq peek needs QUEUE [N]");
    }
    long want = PEEK_DEFAULT;
    if (c->nargs == 2) {
        char *end = NULL;
        want = strtol(c->args[1], &end, 10);
        if (end == c->args[1] || *end != '\0' || want < 1 || want > PEEK_MAX) {
            return ctl_usage_error("N must be 1..%d, not %s", PEEK_MAX, c->args[1]);
        }
    }
    char suffix[64], path[1024];
    snprintf(suffix, sizeof suffix, "/messages?max=%ld", want);
    if (!queue_path(c->args[0], suffix, path, sizeof path)) {
        return ctl_usage_error("not a queue ARN, URL or TENANT/QUEUE: %s", c->args[0]);
    }
    struct ctl_reply r;
    if (!ctl_adm(c, "GET", path, NULL, &r)) {
        ctl_reply_free(&r);
        return CTL_EXIT_ERROR;
    }
    json_t *msgs = json_object_get(r.json, "messages");
    if (c->json) {
        ctl_print_json(r.json);
    } else if (json_array_size(msgs) == 0) {
        printf("(no ready messages)\n");
    } else {
        struct ctl_table t;
        ctl_table_init(
            &t, (const char *[]){"REF", "MESSAGE ID", "RECEIVES", "SENT", "SOURCE", "BODY", NULL});
        size_t i;
        json_t *m;
        json_array_foreach(msgs, i, m)
        {
            char sent[32], body[BODY_EXCERPT * 4 + 8];
            ctl_format_ms(ctl_jint(m, "sent_ms"), sent, sizeof sent);
            const char *b = ctl_jstr(m, "body");
            ctl_excerpt(b != NULL ? b : "(binary)", BODY_EXCERPT, body, sizeof body);
            ctl_table_rowf(&t, "%s\t%s\t%lld\t%s\t%s\t%s", ctl_jstr(m, "ref"), ctl_jstr(m, "id"),
                           ctl_jint(m, "receive_count"), sent,
                           ctl_jstr(m, "source_queue") ? ctl_jstr(m, "source_queue") : "-", body);
        }
        ctl_table_print(&t, stdout);
        ctl_table_free(&t);
        printf("%zu message(s) shown; a peek leases nothing and counts no receive\n",
               json_array_size(msgs));
    }
    ctl_reply_free(&r);
    return CTL_EXIT_OK;
}

int ctl_cmd_pause(struct ctl *c, bool pause)
{
    const char *verb = pause ? "pause" : "resume";
    if (c->nargs != 1) {
        return ctl_usage_error("%s needs one QUEUE", verb);
    }
    char path[1024];
    if (!queue_path(c->args[0], pause ? "/pause" : "/resume", path, sizeof path)) {
        return ctl_usage_error("not a queue ARN, URL or TENANT/QUEUE: %s", c->args[0]);
    }
    bool both = !c->enqueue_only && !c->dequeue_only;
    json_t *body = json_pack("{s:b, s:b}", "enqueue", both || c->enqueue_only, "dequeue",
                             both || c->dequeue_only);
    struct ctl_reply r;
    int rc = CTL_EXIT_ERROR;
    if (ctl_adm(c, "POST", path, body, &r)) {
        rc = CTL_EXIT_OK;
        if (c->json) {
            ctl_print_json(r.json);
        } else {
            printf("%s/%s: paused %s\n", ctl_jstr(r.json, "tenant"), ctl_jstr(r.json, "name"),
                   strcmp(paused_text(r.json), "-") == 0 ? "nothing (serving)"
                                                         : paused_text(r.json));
        }
    }
    ctl_reply_free(&r);
    return rc;
}

int ctl_cmd_reload(struct ctl *c)
{
    struct ctl_reply r;
    if (!ctl_adm(c, "POST", "/api/reload", NULL, &r)) {
        ctl_reply_free(&r);
        return CTL_EXIT_ERROR;
    }
    bool ok = json_is_true(json_object_get(r.json, "ok"));
    if (c->json) {
        ctl_print_json(r.json);
    } else {
        printf("%s: %s\n", ctl_jstr(r.json, "file"),
               ok ? "valid; the gateway applies it now"
                  : "invalid; the running configuration "
                    "stays");
        size_t i;
        json_t *d;
        json_array_foreach(json_object_get(r.json, "diagnostics"), i, d)
        {
            printf("  %s\n", json_string_value(d));
        }
        json_array_foreach(json_object_get(r.json, "restart_needed"), i, d)
        {
            printf("  needs a restart: %s\n", json_string_value(d));
        }
    }
    ctl_reply_free(&r);
    return ok ? CTL_EXIT_OK : CTL_EXIT_ERROR;
}

/* ---- backup ------------------------------------------------------------------- */

#define BACKUP_POLL_MS 1000
#define BACKUP_LINE_MS 5000

/* "812 MB" / "3.4 GB" into out. */
static void size_text(long long bytes, char *out, size_t cap)
{
    if (bytes >= 10LL * 1000 * 1000 * 1000) {
        snprintf(out, cap, "%.0f GB", (double)bytes / 1e9);
    } else if (bytes >= 1000LL * 1000 * 1000) {
        snprintf(out, cap, "%.1f GB", (double)bytes / 1e9);
    } else {
        snprintf(out, cap, "%.0f MB", (double)bytes / 1e6);
    }
}

/* One progress line of a running backup: redrawn in place on a terminal,
 * else printed every BACKUP_LINE_MS (a log or a CI job reads it). */
static void backup_progress(FILE *out, bool tty, const json_t *st, double started, double *last)
{
    double t = ctl_now_s();
    if ((!tty && t - *last < BACKUP_LINE_MS / 1e3) || ctl_jint(st, "bytes_total") == 0) {
        return; /* (no size yet: the copy is about to begin) */
    }
    *last = t;
    char done[32], total[32];
    const char *step = ctl_jstr(st, "step");
    if (step != NULL && strcmp(step, "hashing") == 0) {
        /* the copies are whole: the manifest's sync and SHA-256 of each
         * file, which the copies' percent (at 99) cannot show */
        long long hashed = ctl_jint(st, "hash_bytes_done");
        long long all = ctl_jint(st, "hash_bytes_total");
        size_text(hashed, done, sizeof done);
        size_text(all, total, sizeof total);
        fprintf(out,
                "%sbackup running: hashing the copies for manifest.json: %lld%% (%s of %s), "
                "%.0fs%s",
                tty ? "\r" : "", all > 0 ? hashed * 100 / all : 0, done, total, t - started,
                tty ? "   " : "\n");
    } else {
        size_text(ctl_jint(st, "bytes_done"), done, sizeof done);
        size_text(ctl_jint(st, "bytes_total"), total, sizeof total);
        fprintf(out, "%sbackup running: copying: %lld%% (%s of about %s), %.0fs%s", tty ? "\r" : "",
                ctl_jint(st, "percent"), done, total, t - started, tty ? "   " : "\n");
    }
    fflush(out);
}

/* The manifest's files as a table, and where they are. */
static void backup_report(const json_t *st, double took)
{
    json_t *files = json_object_get(json_object_get(st, "manifest"), "files");
    struct ctl_table t;
    ctl_table_init(&t, (const char *[]){"FILE", "BYTES", "SHA256", NULL});
    size_t i;
    json_t *f;
    json_array_foreach(files, i, f)
    {
        ctl_table_rowf(&t, "%s\t%lld\t%s", ctl_jstr(f, "name"), ctl_jint(f, "bytes"),
                       ctl_jstr(f, "sha256"));
    }
    ctl_table_print(&t, stdout);
    ctl_table_free(&t);
    printf("backup written to %s in %.1fs (manifest.json lists and checks every file)\n",
           ctl_jstr(st, "dir"), took);
}

/* Follows backup id on GET /api/backup until it ends; the exit status. A
 * poll that fails for a moment (the gateway busy or restarting) is
 * repeated as redrive --wait repeats its polls: the backup goes on
 * regardless, and giving up would say it failed. */
static int backup_follow(struct ctl *c, long long id, const char *dir)
{
    bool tty = !c->json && isatty(STDOUT_FILENO) == 1;
    double started = ctl_now_s();
    double last = 0; /* the first line at once */
    int misses = 0;
    for (;;) {
        struct ctl_reply r;
        if (!ctl_admin(&c->ep, "GET", "/api/backup", NULL, &r)) {
            bool again = ctl_poll_retryable(&r) && ++misses <= CTL_POLL_RETRIES;
            long wait_ms = ctl_poll_backoff_ms(&r, misses);
            fprintf(stderr, "%s%s: %s: %s", tty ? "\n" : "", again ? "warning" : "error",
                    r.code[0] != '\0' ? r.code : "ConnectionError",
                    r.message != NULL ? r.message : r.transport);
            if (again) {
                fprintf(stderr, " (retrying in %.1fs)\n", (double)wait_ms / 1e3);
            } else {
                fprintf(stderr,
                        "\nerror: lost track of the backup to %s; see GET /api/backup, "
                        "or look for %s/manifest.json (a finished backup has one)\n",
                        dir, dir);
            }
            ctl_reply_free(&r);
            if (!again) {
                return CTL_EXIT_ERROR;
            }
            ctl_sleep_ms(wait_ms);
            continue;
        }
        misses = 0;
        const char *state = ctl_jstr(r.json, "state");
        if (ctl_jint(r.json, "id") != id || state == NULL) {
            /* "none": a new process, which stopped ours (SIGTERM removes
             * the partial copy); a greater id: a later backup of this one */
            fprintf(stderr, "error: %s; look for %s/manifest.json (a finished backup has one)\n",
                    state != NULL && strcmp(state, "none") == 0
                        ? "the gateway restarted while the backup ran"
                        : "a later backup replaced this one's status",
                    dir);
            ctl_reply_free(&r);
            return CTL_EXIT_ERROR;
        }
        if (strcmp(state, "running") == 0) {
            if (!c->json) { /* scripts get the final document alone */
                backup_progress(stdout, tty, r.json, started, &last);
            }
            ctl_reply_free(&r);
            ctl_sleep_ms(BACKUP_POLL_MS);
            continue;
        }
        if (tty) {
            fputc('\n', stdout);
        }
        int rc = strcmp(state, "done") == 0 ? CTL_EXIT_OK : CTL_EXIT_ERROR;
        if (c->json) {
            ctl_print_json(r.json);
        } else if (rc == CTL_EXIT_OK) {
            backup_report(r.json, ctl_now_s() - started);
        }
        if (rc != CTL_EXIT_OK) {
            fprintf(stderr, "error: backup %s: %s (nothing is left in %s)\n", state,
                    ctl_jstr(r.json, "error") != NULL ? ctl_jstr(r.json, "error") : "?", dir);
        }
        ctl_reply_free(&r);
        return rc;
    }
}

/* A backup can take longer than any request may (many GB): it is started
 * ("wait": false answers 202 at once) and then followed to its end. */
int ctl_cmd_backup(struct ctl *c)
{
    if (c->nargs != 1) {
        return ctl_usage_error("backup needs one DIR (a path on the gateway's host)");
    }
    struct ctl_reply r;
    if (!ctl_adm(c, "POST", "/api/backup", json_pack("{s:s, s:b}", "dir", c->args[0], "wait", 0),
                 &r)) {
        ctl_reply_free(&r);
        return CTL_EXIT_ERROR;
    }
    long long id = ctl_jint(r.json, "id");
    ctl_reply_free(&r);
    if (!c->json) {
        printf("backup started: %s\n", c->args[0]);
    }
    return backup_follow(c, id, c->args[0]);
}
