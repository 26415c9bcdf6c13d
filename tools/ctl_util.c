/*
 * ctl_util.c -- the helpers sluicectl's commands share (ctl_cmd.h):
 * calling the two APIs and reporting their errors one way, reading
 * replies, and naming queues as ARN, URL or TENANT/QUEUE.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ctl_cmd.h"

int ctl_usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "sluicectl: ");
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n(sluicectl --help for usage)\n");
    return CTL_EXIT_USAGE;
}

double ctl_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void ctl_sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

bool ctl_poll_retryable(const struct ctl_reply *r)
{
    return r->status == 0 || r->status >= 500 || r->status == 429 ||
           strcmp(r->code, "RequestThrottled") == 0 || strcmp(r->code, "ThrottlingException") == 0;
}

#define POLL_BACKOFF_MIN_MS 1000
#define POLL_BACKOFF_MAX_MS 8000

long ctl_poll_backoff_ms(const struct ctl_reply *r, int misses)
{
    if (r->retry_after_ms > 0) {
        /* a date far off or a bogus value must not park the watch */
        return r->retry_after_ms < 4L * POLL_BACKOFF_MAX_MS ? r->retry_after_ms
                                                            : 4L * POLL_BACKOFF_MAX_MS;
    }
    long ms = POLL_BACKOFF_MIN_MS;
    for (int i = 1; i < misses && ms < POLL_BACKOFF_MAX_MS; i++) {
        ms *= 2;
    }
    return ms < POLL_BACKOFF_MAX_MS ? ms : POLL_BACKOFF_MAX_MS;
}

static bool report(struct ctl *c, bool ok, struct ctl_reply *r)
{
    if (!ok && c->json && r->body != NULL && r->body[0] != '\0') {
        printf("%s\n", r->body);
    }
    if (!ok) {
        fprintf(stderr, "error: %s: %s\n", r->code, r->message ? r->message : "");
    }
    return ok;
}

bool ctl_sqs(struct ctl *c, const char *action, json_t *req, struct ctl_reply *r)
{
    return report(c, ctl_call(&c->ep, action, req, r), r);
}

bool ctl_adm(struct ctl *c, const char *method, const char *path, json_t *body, struct ctl_reply *r)
{
    return report(c, ctl_admin(&c->ep, method, path, body, r), r);
}

void ctl_print_json(const json_t *doc)
{
    char *text = json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    printf("%s\n", text != NULL ? text : "null");
    free(text);
}

const char *ctl_jstr(const json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

long long ctl_jint(const json_t *o, const char *k)
{
    return (long long)json_integer_value(json_object_get(o, k));
}

void ctl_format_ms(long long ms, char *out, size_t cap)
{
    if (ms <= 0) {
        snprintf(out, cap, "-");
        return;
    }
    time_t s = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&s, &tm);
    strftime(out, cap, "%Y-%m-%d %H:%M:%SZ", &tm);
}

void ctl_excerpt(const char *body, size_t width, char *out, size_t cap)
{
    size_t n = 0, chars = 0;
    const char *p = body != NULL ? body : "";
    for (; *p != '\0' && n + 4 < cap; p++) {
        unsigned char ch = (unsigned char)*p;
        bool lead = (ch & 0xC0u) != 0x80u;
        if (lead && chars == width) {
            break;
        }
        chars += lead;
        out[n++] = *p;
        if (ch < 0x20 || ch == 0x7f) {
            out[n - 1] = ' '; /* a control character would move the cursor */
        }
    }
    if (*p != '\0' && n + 4 <= cap) {
        memcpy(out + n, "...", 3);
        n += 3;
    }
    out[n] = '\0';
}

bool ctl_queue_name(const char *q, char *tenant, size_t tcap, char *name, size_t ncap)
{
    const char *t = NULL, *n = NULL;
    size_t tn = 0;
    if (strncmp(q, "arn:", 4) == 0) {
        /* arn:aws:sqs:REGION:TENANT:NAME */
        const char *p = q;
        for (int colons = 0; colons < 4 && p != NULL; colons++) {
            p = strchr(p, ':');
            p = p != NULL ? p + 1 : NULL;
        }
        const char *end = p != NULL ? strchr(p, ':') : NULL;
        if (end == NULL) {
            return false;
        }
        t = p;
        tn = (size_t)(end - p);
        n = end + 1;
    } else {
        const char *p = strstr(q, "://");
        p = p != NULL ? strchr(p + 3, '/') : NULL;
        p = p != NULL ? p + 1 : q; /* URL path, or TENANT/QUEUE as given */
        const char *slash = strchr(p, '/');
        if (slash == NULL) {
            return false;
        }
        t = p;
        tn = (size_t)(slash - p);
        n = slash + 1;
    }
    if (tn == 0 || tn >= tcap || n[0] == '\0' || strchr(n, '/') != NULL || strchr(n, ':') != NULL ||
        strlen(n) >= ncap) {
        return false;
    }
    snprintf(tenant, tcap, "%.*s", (int)tn, t);
    snprintf(name, ncap, "%s", n);
    return true;
}

bool ctl_queue_arn(const struct ctl *c, const char *q, char *out, size_t cap)
{
    if (strncmp(q, "arn:", 4) == 0) {
        snprintf(out, cap, "%s", q);
        return true;
    }
    char tenant[128], name[128];
    if (!ctl_queue_name(q, tenant, sizeof tenant, name, sizeof name)) {
        return false;
    }
    snprintf(out, cap, "arn:aws:sqs:%s:%s:%s", c->ep.region, tenant, name);
    return true;
}
