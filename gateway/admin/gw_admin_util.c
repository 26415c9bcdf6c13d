/*
 * gw_admin_util.c -- the admin routes' common ground: answering in the
 * admin error shape, the audit line every write leaves, the write rate,
 * and reading paths, query strings and JSON bodies strictly (an unknown
 * field is a 400 naming it, not a silent no-op).
 *
 * Stack: the bottom of the admin files (gw_admin_int.h). Loop threads.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gw_admin_int.h"

#define LOG_AUDIT "audit"
#define ADMIN_BODY_MAX 65536 /* bytes: the largest body a route takes is a few hundred */

void gw__admin_respond_text(struct gw_exchange *ex, int status, const char *ctype, const void *body,
                            size_t n)
{
    const struct gw_header h[] = {
        {SL_SLICE_LIT("content-type"), {ctype, strlen(ctype)}},
    };
    gw_exchange_respond(ex, status, h, SL_ARRAY_LEN(h), body, n);
}

void gw__admin_respond_error(struct gw_exchange *ex, int status, const char *code,
                             const char *message)
{
    json_t *o = json_pack("{s:s, s:s}", "error", code, "message", message);
    char *text = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(o);
    struct gw_header h[2] = {{SL_SLICE_LIT("content-type"), SL_SLICE_LIT("application/json")}};
    size_t n = 1;
    if (status == 401) {
        h[n++] = (struct gw_header){SL_SLICE_LIT("www-authenticate"),
                                    SL_SLICE_LIT("Bearer realm=\"sluice-admin\"")};
    } else if (status == 429) {
        h[n++] = (struct gw_header){SL_SLICE_LIT("retry-after"), SL_SLICE_LIT("1")};
    }
    gw_exchange_respond(ex, status, h, n, text, strlen(text));
    free(text);
}

/* The audit line of a write, whatever its outcome: who, what, how it
 * ended. Reads are not audited (they change nothing). Every value that
 * comes from the request is escaped (sl_log_escape): one write, one line. */
static void audit(const struct gw_admin_req *r, int status)
{
    if (!r->post) {
        return;
    }
    char principal[4 * sizeof r->principal];
    char route[4 * 512];
    char detail[4 * sizeof r->detail];
    struct sl_slice path = r->http->path;
    sl_log_escape(r->principal, strlen(r->principal), principal, sizeof principal);
    sl_log_escape(path.p, path.n, route, sizeof route);
    sl_log_escape(r->detail, strlen(r->detail), detail, sizeof detail);
    sl_log(SL_LOG_INFO, LOG_AUDIT, "principal=%s route=\"POST %s\" status=%d detail=\"%s\"",
           principal, route, status, detail);
}

static void req_free(struct gw_admin_req *r)
{
    for (size_t i = 0; i < r->nseg; i++) {
        free(r->seg[i]);
    }
    json_decref(r->body);
    cfg_snapshot_unref(r->snap);
    free(r);
}

void gw__admin_json(struct gw_admin_req *r, int status, json_t *o)
{
    audit(r, status);
    char *text = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(o);
    gw__admin_respond_text(r->ex, status, "application/json", text, strlen(text));
    free(text);
    req_free(r);
}

void gw__admin_fail(struct gw_admin_req *r, int status, const char *code, const char *fmt, ...)
{
    char message[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    if (r->detail[0] == '\0') {
        snprintf(r->detail, sizeof r->detail, "%s", code);
    }
    audit(r, status);
    gw__admin_respond_error(r->ex, status, code, message);
    req_free(r);
}

void gw__admin_fail_storage(struct gw_admin_req *r, int status, const char *what)
{
    if (status == SL_ENOTFOUND) {
        gw__admin_fail(r, 404, "NotFound", "%s does not exist (any more).", what);
    } else if (status == SL_ECLOSED) {
        gw__admin_fail(r, 503, "ServiceUnavailable", "The gateway is shutting down.");
    } else {
        gw__admin_fail(r, 500, "InternalError",
                       "The storage failed while working on %s; the log says why.", what);
    }
}

/* ---- paths and queries ----------------------------------------------------- */

/* %XX-decodes s into a new string ('+' is a space, as in a form; no
 * name the admin API takes has either). NULL for a bad escape or an
 * encoded NUL. */
static char *unescape(struct sl_slice s)
{
    char *out = sl_xmalloc(s.n + 1);
    long n = gw_sqs_url_decode(s, out);
    if (n < 0 || memchr(out, '\0', (size_t)n) != NULL) {
        free(out);
        return NULL;
    }
    out[n] = '\0';
    return out;
}

int gw__admin_split_path(struct gw_admin_req *r, struct sl_slice rest)
{
    size_t i = 0;
    while (i < rest.n) {
        size_t j = i;
        while (j < rest.n && rest.p[j] != '/') {
            j++;
        }
        if (j == i || r->nseg == GW_ADMIN_MAX_SEGS) {
            return SL_EINVAL;
        }
        char *seg = unescape((struct sl_slice){rest.p + i, j - i});
        if (seg == NULL) {
            return SL_EINVAL;
        }
        r->seg[r->nseg++] = seg;
        i = j + 1;
        if (j + 1 == rest.n) {
            break; /* a trailing slash names the same resource */
        }
    }
    return SL_OK;
}

const char *gw__admin_query(const struct gw_admin_req *r, const char *name, char *buf, size_t cap)
{
    struct sl_slice q = r->query;
    size_t nl = strlen(name);
    size_t i = 0;
    while (i < q.n) {
        size_t j = i;
        while (j < q.n && q.p[j] != '&') {
            j++;
        }
        struct sl_slice pair = {q.p + i, j - i};
        if (pair.n > nl && memcmp(pair.p, name, nl) == 0 && pair.p[nl] == '=') {
            char *v = unescape((struct sl_slice){pair.p + nl + 1, pair.n - nl - 1});
            if (v == NULL || strlen(v) >= cap) {
                free(v);
                return NULL;
            }
            snprintf(buf, cap, "%s", v);
            free(v);
            return buf;
        }
        i = j + 1;
    }
    return NULL;
}

/* ---- bodies ---------------------------------------------------------------- */

int gw__admin_parse_body(struct gw_admin_req *r, const char *const *allowed)
{
    struct sl_slice b = r->http->body;
    if (b.n > ADMIN_BODY_MAX) {
        gw__admin_fail(r, 413, "PayloadTooLarge", "The request body is over %d bytes.",
                       ADMIN_BODY_MAX);
        return SL_EINVAL;
    }
    if (b.n == 0) {
        r->body = json_object();
        return SL_OK;
    }
    json_error_t jerr;
    r->body = json_loadb(b.p, b.n, JSON_REJECT_DUPLICATES, &jerr);
    if (r->body == NULL || !json_is_object(r->body)) {
        gw__admin_fail(
            r, 400, "BadRequest", "The body must be a JSON object%s%s (line %d, column %d).",
            r->body == NULL ? ": " : "", r->body == NULL ? jerr.text : "", jerr.line, jerr.column);
        return SL_EINVAL;
    }
    const char *key;
    json_t *value;
    json_object_foreach(r->body, key, value)
    {
        bool known = false;
        for (size_t i = 0; allowed != NULL && allowed[i] != NULL && !known; i++) {
            known = strcmp(allowed[i], key) == 0;
        }
        if (!known) {
            gw__admin_fail(r, 400, "BadRequest", "Unknown field \"%s\" in the body.", key);
            return SL_EINVAL;
        }
    }
    return SL_OK;
}

int gw__admin_body_bool(struct gw_admin_req *r, const char *key, bool def, bool *out)
{
    json_t *v = json_object_get(r->body, key);
    if (v == NULL) {
        *out = def;
        return SL_OK;
    }
    if (!json_is_boolean(v)) {
        gw__admin_fail(r, 400, "BadRequest", "Field \"%s\" must be true or false.", key);
        return SL_EINVAL;
    }
    *out = json_is_true(v);
    return SL_OK;
}

/* ---- queues ------------------------------------------------------------------ */

int gw__admin_queue(struct gw_admin_req *r, const char *tenant, const char *name,
                    struct gw_queue *q)
{
    if (strlen(tenant) >= sizeof q->tenant || strlen(name) >= sizeof q->name ||
        cfg_find_tenant(r->snap, tenant, strlen(tenant)) == NULL ||
        part_queue_find(r->api->engine, tenant, name, &q->id, &q->cfg) != SL_OK) {
        gw__admin_fail(r, 404, "NotFound", "There is no queue %s/%s.", tenant, name);
        return SL_ENOTFOUND;
    }
    snprintf(q->tenant, sizeof q->tenant, "%s", tenant);
    snprintf(q->name, sizeof q->name, "%s", name);
    return SL_OK;
}

int gw__admin_split_queue(const char *text, char *tenant, size_t tcap, char *name, size_t ncap)
{
    const char *slash = strchr(text, '/');
    if (slash == NULL || slash == text || slash[1] == '\0' || strchr(slash + 1, '/') != NULL ||
        (size_t)(slash - text) >= tcap || strlen(slash + 1) >= ncap) {
        return SL_EINVAL;
    }
    snprintf(tenant, tcap, "%.*s", (int)(slash - text), text);
    snprintf(name, ncap, "%s", slash + 1);
    return SL_OK;
}

/* ---- the write rate ------------------------------------------------------------- */

int gw__admin_write_admit(struct gw_admin_req *r)
{
    struct pol_gcra *g = &r->api->admin_writes;
    if (!pol_gcra_take(g, 1, POL_PPM, sl_mono_ns(), NULL)) {
        gw__admin_fail(r, 429, "TooManyRequests",
                       "More than %d admin writes a second (bursts of %u); retry in a second.",
                       GW_ADMIN_WRITES_PER_S, GW_ADMIN_WRITES_BURST);
        return SL_EBUSY;
    }
    return SL_OK;
}
