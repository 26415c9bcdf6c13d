/*
 * cfg_validate.c -- the raw YAML tree to an immutable struct cfg_snapshot,
 * applying defaults and checking every key, type and range.
 *
 * Validation never stops at the first problem: each one is reported into
 * the collector at the node it is about (the offending key or value), the
 * built-in default stays in place, and the walk goes on, so one run of
 * --check-config lists everything wrong with a file. Only when nothing was
 * reported is the snapshot returned.
 *
 * The schema (keys, types, ranges, defaults) is documented in
 * docs/config.md; keep both in step.
 *
 * Threading: runs on the loading thread only; reads the environment for
 * "env:NAME" secrets and the file system for the TLS files.
 * Ownership: the snapshot being built is freed on any problem.
 */
#include "cfg_int.h"

#include "sl.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- ranges (docs/config.md lists the same) ----------------------------- */

#define PARTITIONS_MAX 1024
#define IO_THREADS_MAX 256
#define CONNECTIONS_MAX 1000000
#define BUDGET_MIN ((uint64_t)4 << 20) /* server.*_budget_bytes */
#define BUDGET_MAX ((uint64_t)1 << 40)
#define RPS_MAX 1000000.0
#define BURST_MAX 100000000
#define MAX_INFLIGHT_MAX 120000000
#define MAX_BACKLOG_MAX 1000000000000ull
#define MAX_LONG_POLLS_MAX 1000000
#define SPILL_DELAY_MAX 900          /* SQS's DelaySeconds ceiling */
#define SPILL_AGED_AFTER_MAX 1209600 /* 14 days, SQS's longest retention */
#define ACCESS_KEY_ID_MAX 128
#define SECRET_MAX 1024
#define REGION_MAX 64

/* ---- sections and the keys they allow ------------------------------------ */

enum section {
    SEC_TOP,
    SEC_TLS,
    SEC_ADMIN,
    SEC_DEFAULTS,
    SEC_TENANT,
    SEC_LIMITS,
    SEC_SPILL,
    SEC_RATE, /* one entry of limits.queues or limits.actions */
    SEC_SERVER,
    SEC_N
};

static const char *const top_keys[] = {
    "listen",     "tls",          "region", "data_dir", "partitions", "shard_size", "durability",
    "io_threads", "log_requests", "server", "admin",    "defaults",   "tenants",    NULL};
static const char *const tls_keys[] = {"cert_file", "key_file", NULL};
static const char *const admin_keys[] = {"listen", "access_key_id", "secret_access_key",
                                         "bearer_token", NULL};
static const char *const defaults_keys[] = {"limits", "on_excess", "spill", NULL};
static const char *const tenant_keys[] = {
    "access_key_id", "secret_access_key", "limits", "on_excess", "spill", NULL};
static const char *const limits_keys[] = {
    "requests_per_second", "burst",  "max_inflight", "max_backlog",
    "max_long_polls",      "queues", "actions",      NULL};
static const char *const spill_keys[] = {"delay_seconds", "aged_after_seconds", NULL};
static const char *const rate_keys[] = {"requests_per_second", "burst", NULL};
static const char *const server_keys[] = {"max_connections", "max_connections_per_peer",
                                          "request_body_budget_bytes", "response_budget_bytes",
                                          NULL};

static const char *const *const section_keys[SEC_N] = {
    top_keys,    tls_keys,   admin_keys, defaults_keys, tenant_keys,
    limits_keys, spill_keys, rate_keys,  server_keys,
};

/* Where a key of each section may be written, as a reader would say it. */
static const char *const section_where[SEC_N] = {
    "at the top level", "in tls",    "in admin", "in defaults",
    "in a tenant",      "in limits", "in spill", "in a queue or action limit",
    "in server",
};

/* ---- the walk's state ------------------------------------------------------ */

struct key_use { /* one access key id, for the duplicate check */
    const char *id;
    const struct cfg__node *node;
    char *owner; /* "tenant \"acme\"" or "admin" */
};

struct vctx {
    struct cfg__diagbuf *db;
    const char *base_dir;
    struct cfg_snapshot *s;
    struct key_use *keys;
    size_t key_count;
};

/* The settings a tenant inherits from defaults: and may override. */
struct tenant_settings {
    struct cfg_limits limits;
    enum cfg_on_excess on_excess;
    struct cfg_spill spill;
};

#define REPORT(v, node, ...) cfg__diag_add((v)->db, (node)->line, (node)->column, __VA_ARGS__)

/* ---- quoting user text into messages ------------------------------------- */

/* User text goes into messages escaped and cut, so a hostile file cannot
 * forge log lines. A small per-thread ring lets one message quote a few. */
#define QUOTE_RING 4
#define QUOTE_MAX 64

static const char *quote(const char *p, size_t n)
{
    static _Thread_local char ring[QUOTE_RING][QUOTE_MAX * 4 + 8];
    static _Thread_local unsigned next;
    char *out = ring[next++ % QUOTE_RING];
    size_t o = 0;
    out[o++] = '"';
    for (size_t i = 0; i < n && i < QUOTE_MAX; i++) {
        unsigned char c = (unsigned char)p[i];
        if (c == '"' || c == '\\') {
            out[o++] = '\\';
            out[o++] = (char)c;
        } else if (c < 0x20 || c == 0x7f) {
            o += (size_t)snprintf(out + o, 5, "\\x%02x", c);
        } else {
            out[o++] = (char)c;
        }
    }
    if (n > QUOTE_MAX) {
        memcpy(out + o, "...", 3);
        o += 3;
    }
    out[o++] = '"';
    out[o] = '\0';
    return out;
}

static const char *qnode(const struct cfg__node *n)
{
    return quote(n->value, n->len);
}

/* What a value is, for "X must be Y, not Z". */
static const char *describe(const struct cfg__node *n)
{
    static _Thread_local char buf[QUOTE_MAX * 4 + 32];
    switch (n->kind) {
    case CFG__MAPPING:
        return "a mapping";
    case CFG__SEQUENCE:
        return "a list";
    case CFG__SCALAR:
        break;
    }
    if (cfg__node_is_null(n)) {
        return "empty";
    }
    if (!n->plain) {
        snprintf(buf, sizeof(buf), "the quoted string %s", qnode(n));
        return buf;
    }
    return qnode(n);
}

static bool key_is(const struct cfg__node *k, const char *name)
{
    return k->len == strlen(name) && memcmp(k->value, name, k->len) == 0;
}

/* ---- unknown keys ---------------------------------------------------------- */

static bool section_has(enum section sec, const struct cfg__node *k)
{
    for (const char *const *p = section_keys[sec]; *p != NULL; p++) {
        if (key_is(k, *p)) {
            return true;
        }
    }
    return false;
}

/* Says where the key would be allowed, or which keys are allowed here. */
static void report_unknown(struct vctx *v, enum section sec, const char *where,
                           const struct cfg__node *k)
{
    struct sl_buf hint;
    sl_buf_init(&hint);
    int places = 0;
    for (int other = 0; other < SEC_N; other++) {
        /* A rate entry's keys are limits' keys too: "in limits" says it. */
        if (other != (int)sec && other != SEC_RATE && section_has((enum section)other, k)) {
            sl_buf_printf(&hint, "%s%s", places++ ? " or " : "", section_where[other]);
        }
    }
    if (places > 0) {
        REPORT(v, k, "key %s is not allowed %s; it belongs %s", qnode(k), where, hint.p);
    } else {
        for (const char *const *p = section_keys[sec]; *p != NULL; p++) {
            sl_buf_printf(&hint, "%s%s", p == section_keys[sec] ? "" : ", ", *p);
        }
        REPORT(v, k, "unknown key %s %s (allowed: %s)", qnode(k), where, hint.p);
    }
    sl_buf_free(&hint);
}

/* ---- typed values ---------------------------------------------------------- */

/* SL_OK when val is a mapping, else SL_EINVAL (reported). */
static int want_mapping(struct vctx *v, const struct cfg__node *k, const struct cfg__node *val)
{
    if (val->kind == CFG__MAPPING) {
        return SL_OK;
    }
    REPORT(v, val, "%s must be a mapping, not %s", k->value, describe(val));
    return SL_EINVAL;
}

static bool plain_scalar(const struct cfg__node *n)
{
    return n->kind == CFG__SCALAR && n->plain && !cfg__node_is_null(n);
}

/* An integer in min..max: SL_OK, or SL_EINVAL (reported). */
static int get_uint(struct vctx *v, const struct cfg__node *k, const struct cfg__node *val,
                    uint64_t min, uint64_t max, uint64_t *out)
{
    bool digits = plain_scalar(val);
    size_t i = 0;
    bool negative = false;
    if (digits && (val->value[0] == '+' || val->value[0] == '-')) {
        negative = val->value[0] == '-';
        i = 1;
    }
    digits = digits && i < val->len;
    for (size_t j = i; digits && j < val->len; j++) {
        digits = val->value[j] >= '0' && val->value[j] <= '9';
    }
    if (!digits) {
        REPORT(v, val, "%s must be an integer, not %s", k->value, describe(val));
        return SL_EINVAL;
    }
    uint64_t x = 0;
    bool overflow = false;
    for (size_t j = i; j < val->len; j++) {
        unsigned d = (unsigned)(val->value[j] - '0');
        if (x > (UINT64_MAX - d) / 10) {
            overflow = true;
            break;
        }
        x = x * 10 + d;
    }
    if (overflow || (negative && x != 0) || x < min || x > max) {
        REPORT(v, val, "%s must be between %llu and %llu, not %s", k->value,
               (unsigned long long)min, (unsigned long long)max, qnode(val));
        return SL_EINVAL;
    }
    *out = x;
    return SL_OK;
}

static void set_u32(struct vctx *v, const struct cfg__node *k, const struct cfg__node *val,
                    uint32_t min, uint32_t max, uint32_t *out)
{
    uint64_t x;
    if (get_uint(v, k, val, min, max, &x) == SL_OK) {
        *out = (uint32_t)x;
    }
}

/* A decimal number: digits, sign, point, exponent; no hex, inf or nan.
 * SL_OK, or SL_EINVAL (reported). */
static int get_number(struct vctx *v, const struct cfg__node *k, const struct cfg__node *val,
                      double *out)
{
    bool ok = plain_scalar(val);
    for (size_t i = 0; ok && i < val->len; i++) {
        ok = strchr("0123456789+-.eE", val->value[i]) != NULL;
    }
    double x = 0;
    if (ok) {
        char *end = NULL;
        errno = 0;
        x = strtod(val->value, &end);
        ok = end == val->value + val->len && errno == 0 && isfinite(x);
    }
    if (!ok) {
        REPORT(v, val, "%s must be a number, not %s", k->value, describe(val));
        return SL_EINVAL;
    }
    *out = x;
    return SL_OK;
}

static void set_bool(struct vctx *v, const struct cfg__node *k, const struct cfg__node *val,
                     bool *out)
{
    static const char *const yes[] = {"true", "True", "TRUE"};
    static const char *const no[] = {"false", "False", "FALSE"};
    if (plain_scalar(val)) {
        for (size_t i = 0; i < SL_ARRAY_LEN(yes); i++) {
            if (key_is(val, yes[i])) {
                *out = true;
                return;
            }
            if (key_is(val, no[i])) {
                *out = false;
                return;
            }
        }
    }
    REPORT(v, val, "%s must be true or false, not %s", k->value, describe(val));
}

/* Any non-empty scalar without NUL bytes; returns a borrowed pointer. */
static const char *get_string(struct vctx *v, const struct cfg__node *k,
                              const struct cfg__node *val)
{
    if (val->kind != CFG__SCALAR || cfg__node_is_null(val)) {
        REPORT(v, val, "%s must be a string, not %s", k->value, describe(val));
        return NULL;
    }
    if (val->len == 0) {
        REPORT(v, val, "%s must not be empty", k->value);
        return NULL;
    }
    if (memchr(val->value, '\0', val->len) != NULL) {
        REPORT(v, val, "%s must not contain a nul byte", k->value);
        return NULL;
    }
    return val->value;
}

static void replace_str(char **dst, const char *src)
{
    free(*dst);
    *dst = sl_xstrdup(src);
}

static bool chars_in(const char *s, const char *extra)
{
    for (; *s != '\0'; s++) {
        if (!isalnum((unsigned char)*s) && strchr(extra, *s) == NULL) {
            return false;
        }
    }
    return true;
}

/* One of two words: *second tells which. SL_OK, or SL_EINVAL (reported). */
static int get_enum(struct vctx *v, const struct cfg__node *k, const struct cfg__node *val,
                    const char *a, const char *b, bool *second)
{
    if (val->kind == CFG__SCALAR && (key_is(val, a) || key_is(val, b))) {
        *second = key_is(val, b);
        return SL_OK;
    }
    REPORT(v, val, "%s must be %s or %s, not %s", k->value, a, b, describe(val));
    return SL_EINVAL;
}

/* "host:port" or "[ipv6]:port"; a host name is letters, digits, '.', '-'. */
static void set_endpoint(struct vctx *v, const struct cfg__node *k, const struct cfg__node *val,
                         struct cfg_endpoint *out)
{
    const char *s = get_string(v, k, val);
    if (s == NULL) {
        return;
    }
    const char *colon;
    char host[256];
    size_t hlen;
    if (s[0] == '[') {
        const char *close = strchr(s, ']');
        if (close == NULL || close[1] != ':') {
            REPORT(v, val, "%s must be host:port or [ipv6]:port, not %s", k->value, qnode(val));
            return;
        }
        hlen = (size_t)(close - s - 1);
        colon = close + 1;
        struct in6_addr a6;
        if (hlen >= sizeof(host) ||
            (memcpy(host, s + 1, hlen), host[hlen] = '\0', inet_pton(AF_INET6, host, &a6) != 1)) {
            REPORT(v, val, "invalid ipv6 address in %s %s", k->value, qnode(val));
            return;
        }
    } else {
        colon = strrchr(s, ':');
        if (colon == NULL || colon == s) {
            REPORT(v, val, "%s must be host:port, not %s", k->value, qnode(val));
            return;
        }
        hlen = (size_t)(colon - s);
        if (memchr(s, ':', hlen) != NULL) {
            REPORT(v, val, "an ipv6 address in %s must be in brackets, as [::1]:9324", k->value);
            return;
        }
        if (hlen >= sizeof(host)) {
            REPORT(v, val, "host name in %s is too long", k->value);
            return;
        }
        memcpy(host, s, hlen);
        host[hlen] = '\0';
        if (!chars_in(host, ".-")) {
            REPORT(v, val, "invalid host in %s %s", k->value, qnode(val));
            return;
        }
    }
    const char *p = colon + 1;
    unsigned long port = 0;
    bool ok = *p != '\0' && strlen(p) <= 5;
    for (const char *q = p; ok && *q != '\0'; q++) {
        ok = *q >= '0' && *q <= '9';
        port = port * 10 + (unsigned long)(*q - '0');
    }
    if (!ok || port < 1 || port > 65535) {
        REPORT(v, val, "port in %s must be between 1 and 65535, not %s", k->value,
               quote(p, strlen(p)));
        return;
    }
    free(out->host);
    out->host = sl_xstrdup(host);
    out->port = (uint16_t)port;
}

/* A secret, read from the environment when written "env:NAME". */
static void set_secret(struct vctx *v, const struct cfg__node *k, const struct cfg__node *val,
                       char **out)
{
    const char *s = get_string(v, k, val);
    if (s == NULL) {
        return;
    }
    if (strncmp(s, "env:", 4) == 0) {
        const char *name = s + 4;
        if (name[0] == '\0' || isdigit((unsigned char)name[0]) || !chars_in(name, "_")) {
            REPORT(v, val, "invalid environment variable name in %s %s", k->value, qnode(val));
            return;
        }
        s = getenv(name);
        if (s == NULL || s[0] == '\0') {
            REPORT(v, val, "environment variable %s for %s is unset or empty", name, k->value);
            return;
        }
    }
    if (strlen(s) > SECRET_MAX) {
        REPORT(v, val, "%s is longer than %d bytes", k->value, SECRET_MAX);
        return;
    }
    replace_str(out, s);
}

static void set_access_key_id(struct vctx *v, const struct cfg__node *k,
                              const struct cfg__node *val, char **out)
{
    const char *s = get_string(v, k, val);
    if (s == NULL) {
        return;
    }
    /* SigV4's Credential=AKID/date/region/... splits on '/' and ','. */
    if (strlen(s) > ACCESS_KEY_ID_MAX || !chars_in(s, "_.+@-")) {
        REPORT(v, val, "%s must be 1 to %d of A-Z a-z 0-9 _ . + @ -, not %s", k->value,
               ACCESS_KEY_ID_MAX, qnode(val));
        return;
    }
    replace_str(out, s);
}

static void note_key_use(struct vctx *v, const char *id, const struct cfg__node *node, char *owner)
{
    v->keys = sl_xrealloc(v->keys, (v->key_count + 1) * sizeof(v->keys[0]));
    v->keys[v->key_count++] = (struct key_use){id, node, owner};
}

static int cmp_key_use(const void *a, const void *b)
{
    const struct key_use *x = a;
    const struct key_use *y = b;
    int c = strcmp(x->id, y->id);
    if (c != 0) {
        return c;
    }
    if (x->node->line != y->node->line) {
        return x->node->line < y->node->line ? -1 : 1;
    }
    return x->node->column < y->node->column ? -1 : (x->node->column > y->node->column);
}

/* Every access key id names one principal: report each reuse at the later
 * place in the file, naming the first owner. */
static void check_key_reuse(struct vctx *v)
{
    if (v->key_count == 0) {
        return;
    }
    qsort(v->keys, v->key_count, sizeof(v->keys[0]), cmp_key_use);
    size_t first = 0;
    for (size_t i = 1; i < v->key_count; i++) {
        if (strcmp(v->keys[i].id, v->keys[first].id) != 0) {
            first = i;
            continue;
        }
        REPORT(v, v->keys[i].node, "access key id %s is already used by %s (line %u)",
               quote(v->keys[i].id, strlen(v->keys[i].id)), v->keys[first].owner,
               v->keys[first].node->line);
    }
    for (size_t i = 0; i < v->key_count; i++) {
        free(v->keys[i].owner);
    }
    free(v->keys);
    v->keys = NULL;
    v->key_count = 0;
}

/* ---- sections ---------------------------------------------------------------- */

static void set_rps(struct vctx *v, const struct cfg__node *k, const struct cfg__node *val,
                    double *out)
{
    double x;
    if (get_number(v, k, val, &x) != SL_OK) {
        return;
    }
    if (!(x > 0 && x <= RPS_MAX)) {
        REPORT(v, val, "requests_per_second must be above 0 and at most %.0f, not %s", RPS_MAX,
               qnode(val));
        return;
    }
    *out = x;
}

/* One bucket, limits.queues.NAME or limits.actions.NAME, named path in
 * messages. r starts as the entry inherited from defaults (zero when
 * none), so a tenant may override one of its two keys; whatever neither
 * sets is missing. */
static void load_rate(struct vctx *v, const char *path, const struct cfg__node *name,
                      const struct cfg__node *m, struct cfg_rate *r)
{
    if (m->kind != CFG__MAPPING) {
        REPORT(v, m, "%s must be a mapping, not %s", path, describe(m));
        return;
    }
    char where[sizeof("in ") + 512];
    snprintf(where, sizeof(where), "in %s", path);
    bool have_rps = r->requests_per_second > 0;
    bool have_burst = r->burst > 0;
    for (size_t i = 0; i < m->count; i++) {
        const struct cfg__node *key = m->pairs[i].key;
        const struct cfg__node *val = m->pairs[i].value;
        if (key_is(key, "requests_per_second")) {
            set_rps(v, key, val, &r->requests_per_second);
            have_rps = true;
        } else if (key_is(key, "burst")) {
            set_u32(v, key, val, 1, BURST_MAX, &r->burst);
            have_burst = true;
        } else {
            report_unknown(v, SEC_RATE, where, key);
        }
    }
    if (!have_rps) {
        REPORT(v, name, "missing requests_per_second in %s", path);
    }
    if (!have_burst) {
        REPORT(v, name, "missing burst in %s", path);
    }
}

static int cmp_queue_rate(const void *a, const void *b)
{
    return strcmp(((const struct cfg_queue_rate *)a)->queue,
                  ((const struct cfg_queue_rate *)b)->queue);
}

/* limits.queues: queue name -> bucket, merged per queue into the entries
 * l already holds (from defaults; l owns them, sorted). section is
 * "tenants.acme.limits" or "defaults.limits". */
static void load_queue_rates(struct vctx *v, const char *section, const struct cfg__node *k,
                             const struct cfg__node *m, struct cfg_limits *l)
{
    if (want_mapping(v, k, m) != SL_OK) {
        return;
    }
    size_t inherited = l->queue_rate_count;
    if (m->count == 0) {
        return;
    }
    l->queue_rates = sl_xrealloc(l->queue_rates, (inherited + m->count) * sizeof(*l->queue_rates));
    for (size_t i = 0; i < m->count; i++) {
        const struct cfg__node *name = m->pairs[i].key;
        char path[512];
        struct cfg_rate scratch = {0};
        struct cfg_rate *r = &scratch;
        if (!cfg__queue_name_valid(name->value, name->len)) {
            REPORT(v, name,
                   "invalid queue name %s in %s.queues: use 1 to %d of A-Z a-z 0-9 _ -, "
                   "optionally ending in .fifo",
                   qnode(name), section, CFG_QUEUE_NAME_MAX);
            snprintf(path, sizeof(path), "%s.queues.%s", section, qnode(name));
        } else {
            snprintf(path, sizeof(path), "%s.queues.%s", section, name->value);
            struct cfg_queue_rate key = {.queue = name->value};
            struct cfg_queue_rate *old =
                bsearch(&key, l->queue_rates, inherited, sizeof(key), cmp_queue_rate);
            if (old == NULL) {
                old = &l->queue_rates[l->queue_rate_count++];
                *old = (struct cfg_queue_rate){.queue = sl_xstrndup(name->value, name->len)};
            }
            r = &old->rate;
        }
        load_rate(v, path, name, m->pairs[i].value, r);
    }
    qsort(l->queue_rates, l->queue_rate_count, sizeof(*l->queue_rates), cmp_queue_rate);
}

/* Says why name is not an action key: the batch form of one, a key in the
 * wrong case, or unknown (listing the keys). */
static void report_bad_action(struct vctx *v, const char *section, const struct cfg__node *name)
{
    enum cfg_action_key key;
    if (cfg_action_key_of(name->value, name->len, &key)) {
        REPORT(v, name,
               "action %s is limited by the key %s in %s.actions (a batch costs one token per "
               "entry)",
               qnode(name), cfg_action_key_name(key), section);
        return;
    }
    for (int i = 0; i < CFG_ACTION_KEY_COUNT; i++) {
        const char *want = cfg_action_key_name((enum cfg_action_key)i);
        if (name->len == strlen(want) && strncasecmp(name->value, want, name->len) == 0) {
            REPORT(v, name, "unknown action %s in %s.actions; action names are case-sensitive: %s",
                   qnode(name), section, want);
            return;
        }
    }
    struct sl_buf list;
    sl_buf_init(&list);
    for (int i = 0; i < CFG_ACTION_KEY_COUNT; i++) {
        sl_buf_printf(&list, "%s%s", i ? ", " : "", cfg_action_key_name((enum cfg_action_key)i));
    }
    REPORT(v, name, "unknown action %s in %s.actions (allowed: %s)", qnode(name), section, list.p);
    sl_buf_free(&list);
}

/* limits.actions: action key -> bucket, merged per action. */
static void load_action_rates(struct vctx *v, const char *section, const struct cfg__node *k,
                              const struct cfg__node *m, struct cfg_limits *l)
{
    if (want_mapping(v, k, m) != SL_OK) {
        return;
    }
    for (size_t i = 0; i < m->count; i++) {
        const struct cfg__node *name = m->pairs[i].key;
        struct cfg_rate scratch = {0};
        struct cfg_rate *r = &scratch;
        for (int a = 0; a < CFG_ACTION_KEY_COUNT; a++) {
            if (key_is(name, cfg_action_key_name((enum cfg_action_key)a))) {
                r = &l->actions[a];
            }
        }
        char path[512];
        if (r == &scratch) {
            report_bad_action(v, section, name);
            snprintf(path, sizeof(path), "%s.actions.%s", section, qnode(name));
        } else {
            snprintf(path, sizeof(path), "%s.actions.%s", section, name->value);
        }
        load_rate(v, path, name, m->pairs[i].value, r);
    }
}

/* section: "defaults.limits" or "tenants.acme.limits". */
static void load_limits(struct vctx *v, const char *section, const struct cfg__node *k,
                        const struct cfg__node *m, struct cfg_limits *l)
{
    if (want_mapping(v, k, m) != SL_OK) {
        return;
    }
    char where[512];
    snprintf(where, sizeof(where), "in %s", section);
    for (size_t i = 0; i < m->count; i++) {
        const struct cfg__node *key = m->pairs[i].key;
        const struct cfg__node *val = m->pairs[i].value;
        if (key_is(key, "requests_per_second")) {
            set_rps(v, key, val, &l->requests_per_second);
        } else if (key_is(key, "burst")) {
            set_u32(v, key, val, 1, BURST_MAX, &l->burst);
        } else if (key_is(key, "max_inflight")) {
            set_u32(v, key, val, 1, MAX_INFLIGHT_MAX, &l->max_inflight);
        } else if (key_is(key, "max_backlog")) {
            uint64_t x;
            if (get_uint(v, key, val, 1, MAX_BACKLOG_MAX, &x) == SL_OK) {
                l->max_backlog = x;
            }
        } else if (key_is(key, "max_long_polls")) {
            set_u32(v, key, val, 1, MAX_LONG_POLLS_MAX, &l->max_long_polls);
        } else if (key_is(key, "queues")) {
            load_queue_rates(v, section, key, val, l);
        } else if (key_is(key, "actions")) {
            load_action_rates(v, section, key, val, l);
        } else {
            report_unknown(v, SEC_LIMITS, where, key);
        }
    }
}

static void load_spill(struct vctx *v, const char *where, const struct cfg__node *k,
                       const struct cfg__node *m, struct cfg_spill *sp)
{
    if (want_mapping(v, k, m) != SL_OK) {
        return;
    }
    for (size_t i = 0; i < m->count; i++) {
        const struct cfg__node *key = m->pairs[i].key;
        const struct cfg__node *val = m->pairs[i].value;
        if (key_is(key, "delay_seconds")) {
            set_u32(v, key, val, 0, SPILL_DELAY_MAX, &sp->delay_seconds);
        } else if (key_is(key, "aged_after_seconds")) {
            set_u32(v, key, val, 1, SPILL_AGED_AFTER_MAX, &sp->aged_after_seconds);
        } else {
            report_unknown(v, SEC_SPILL, where, key);
        }
    }
}

/* limits, on_excess, spill: shared by defaults: and each tenant. Returns
 * false when the key is none of them. prefix names the section in
 * messages ("defaults" or "tenants.acme"). */
static bool load_setting(struct vctx *v, const char *prefix, const struct cfg__node *key,
                         const struct cfg__node *val, struct tenant_settings *ts)
{
    char where[sizeof("tenants..limits") + (size_t)QUOTE_MAX * 4 + 16];
    if (key_is(key, "limits")) {
        snprintf(where, sizeof(where), "%s.limits", prefix);
        load_limits(v, where, key, val, &ts->limits);
    } else if (key_is(key, "spill")) {
        snprintf(where, sizeof(where), "in %s.spill", prefix);
        load_spill(v, where, key, val, &ts->spill);
    } else if (key_is(key, "on_excess")) {
        bool spill;
        if (get_enum(v, key, val, "reject", "spill", &spill) == SL_OK) {
            ts->on_excess = spill ? CFG_EXCESS_SPILL : CFG_EXCESS_REJECT;
        }
    } else {
        return false;
    }
    return true;
}

static void load_defaults(struct vctx *v, const struct cfg__node *k, const struct cfg__node *m,
                          struct tenant_settings *ts)
{
    if (want_mapping(v, k, m) != SL_OK) {
        return;
    }
    for (size_t i = 0; i < m->count; i++) {
        if (!load_setting(v, "defaults", m->pairs[i].key, m->pairs[i].value, ts)) {
            report_unknown(v, SEC_DEFAULTS, "in defaults", m->pairs[i].key);
        }
    }
}

/* Adds the tenant to the snapshot, complete or not (a problem is reported
 * then, and the snapshot is dropped). */
static void load_tenant(struct vctx *v, const struct cfg__node *name, const struct cfg__node *m,
                        const struct tenant_settings *defaults)
{
    struct cfg_snapshot *s = v->s;
    bool name_ok = cfg_tenant_name_valid(name->value, name->len);
    if (!name_ok) {
        REPORT(v, name, "invalid tenant name %s: use 1 to 64 of A-Z a-z 0-9 _ -", qnode(name));
    }
    if (m->kind != CFG__MAPPING) {
        REPORT(v, m, "tenant %s must be a mapping, not %s", qnode(name), describe(m));
        return;
    }
    /* Messages name the section the way the file spells it. */
    char prefix[QUOTE_MAX * 4 + 16];
    char where[sizeof(prefix) + 16];
    snprintf(prefix, sizeof(prefix), "tenants.%s", name_ok ? name->value : qnode(name));
    snprintf(where, sizeof(where), "in tenant %s", qnode(name));

    struct cfg_tenant t = {0};
    struct tenant_settings ts = *defaults;
    cfg__limits_own(&ts.limits); /* the tenant's own copy of the per-queue limits */
    const struct cfg__node *akid_node = NULL;
    for (size_t i = 0; i < m->count; i++) {
        const struct cfg__node *key = m->pairs[i].key;
        const struct cfg__node *val = m->pairs[i].value;
        if (key_is(key, "access_key_id")) {
            set_access_key_id(v, key, val, &t.access_key_id);
            akid_node = val;
        } else if (key_is(key, "secret_access_key")) {
            set_secret(v, key, val, &t.secret_access_key);
            if (t.secret_access_key == NULL) {
                t.secret_access_key = sl_xstrdup(""); /* reported; not missing */
            }
        } else if (!load_setting(v, prefix, key, val, &ts)) {
            report_unknown(v, SEC_TENANT, where, key);
        }
    }
    if (akid_node == NULL) {
        REPORT(v, name, "missing access_key_id in tenant %s", qnode(name));
    }
    if (t.secret_access_key == NULL) {
        REPORT(v, name, "missing secret_access_key in tenant %s", qnode(name));
    }
    if (t.access_key_id != NULL) {
        struct sl_buf owner;
        sl_buf_init(&owner);
        sl_buf_printf(&owner, "tenant %s", qnode(name));
        note_key_use(v, t.access_key_id, akid_node, sl_buf_take(&owner, NULL));
    }
    t.name = sl_xstrndup(name->value, name->len);
    t.limits = ts.limits;
    t.on_excess = ts.on_excess;
    t.spill = ts.spill;
    s->tenants[s->tenant_count++] = t; /* owned by s from here, complete or not */
}

static int cmp_tenant(const void *a, const void *b)
{
    return strcmp(((const struct cfg_tenant *)a)->name, ((const struct cfg_tenant *)b)->name);
}

static void load_tenants(struct vctx *v, const struct cfg__node *k, const struct cfg__node *m,
                         const struct tenant_settings *defaults)
{
    if (want_mapping(v, k, m) != SL_OK) {
        return;
    }
    v->s->tenants = sl_xcalloc(m->count ? m->count : 1, sizeof(struct cfg_tenant));
    for (size_t i = 0; i < m->count; i++) {
        load_tenant(v, m->pairs[i].key, m->pairs[i].value, defaults);
    }
    qsort(v->s->tenants, v->s->tenant_count, sizeof(struct cfg_tenant), cmp_tenant);
}

static void load_admin(struct vctx *v, const struct cfg__node *k, const struct cfg__node *m,
                       const struct cfg__node **listen_node)
{
    struct cfg_admin *a = &v->s->admin;
    if (want_mapping(v, k, m) != SL_OK) {
        return;
    }
    a->enabled = true;
    a->listen.host = sl_xstrdup("127.0.0.1");
    a->listen.port = 9325;
    *listen_node = k;
    const struct cfg__node *akid_node = NULL;
    bool have_secret = false;
    for (size_t i = 0; i < m->count; i++) {
        const struct cfg__node *key = m->pairs[i].key;
        const struct cfg__node *val = m->pairs[i].value;
        if (key_is(key, "listen")) {
            set_endpoint(v, key, val, &a->listen);
            *listen_node = val;
        } else if (key_is(key, "access_key_id")) {
            set_access_key_id(v, key, val, &a->access_key_id);
            akid_node = val;
        } else if (key_is(key, "secret_access_key")) {
            set_secret(v, key, val, &a->secret_access_key);
            have_secret = true;
        } else if (key_is(key, "bearer_token")) {
            set_secret(v, key, val, &a->bearer_token);
            if (a->bearer_token != NULL && !chars_in(a->bearer_token, "-._~+/=")) {
                /* It travels in an Authorization header (RFC 6750 b64token). */
                REPORT(v, val, "bearer_token may only hold A-Z a-z 0-9 - . _ ~ + / =");
            }
        } else {
            report_unknown(v, SEC_ADMIN, "in admin", key);
        }
    }
    if (akid_node == NULL) {
        REPORT(v, k, "missing access_key_id in admin");
    }
    if (!have_secret) {
        REPORT(v, k, "missing secret_access_key in admin");
    }
    if (a->access_key_id != NULL) {
        note_key_use(v, a->access_key_id, akid_node, sl_xstrdup("admin"));
    }
}

/* A memory budget: 0 (derived), or BUDGET_MIN..BUDGET_MAX bytes. Below the
 * floor one largest request body (2 MiB and change) could not be taken. */
static void set_budget(struct vctx *v, const struct cfg__node *k, const struct cfg__node *val,
                       uint64_t *out)
{
    uint64_t x;
    if (get_uint(v, k, val, 0, BUDGET_MAX, &x) != SL_OK) {
        return;
    }
    if (x != 0 && x < BUDGET_MIN) {
        REPORT(v, val, "%s must be 0 (derived) or at least %llu, not %s", k->value,
               (unsigned long long)BUDGET_MIN, qnode(val));
        return;
    }
    *out = x;
}

/* server: process-wide limits that protect the gateway from its clients. */
static void load_server(struct vctx *v, const struct cfg__node *k, const struct cfg__node *m)
{
    struct cfg_server *srv = &v->s->server;
    if (want_mapping(v, k, m) != SL_OK) {
        return;
    }
    for (size_t i = 0; i < m->count; i++) {
        const struct cfg__node *key = m->pairs[i].key;
        const struct cfg__node *val = m->pairs[i].value;
        if (key_is(key, "max_connections")) {
            set_u32(v, key, val, 0, CONNECTIONS_MAX, &srv->max_connections);
        } else if (key_is(key, "max_connections_per_peer")) {
            set_u32(v, key, val, 0, CONNECTIONS_MAX, &srv->max_connections_per_peer);
        } else if (key_is(key, "request_body_budget_bytes")) {
            set_budget(v, key, val, &srv->request_body_budget_bytes);
        } else if (key_is(key, "response_budget_bytes")) {
            set_budget(v, key, val, &srv->response_budget_bytes);
        } else {
            report_unknown(v, SEC_SERVER, "in server", key);
        }
    }
}

/* Resolves a TLS file against base_dir and checks it can be read now, so
 * that a bad path is found by --check-config and not at the first
 * handshake. */
static void set_tls_file(struct vctx *v, const struct cfg__node *k, const struct cfg__node *val,
                         char **out)
{
    const char *s = get_string(v, k, val);
    if (s == NULL) {
        return;
    }
    struct sl_buf path;
    sl_buf_init(&path);
    if (s[0] != '/' && v->base_dir != NULL) {
        sl_buf_printf(&path, "%s/", v->base_dir);
    }
    sl_buf_append_cstr(&path, s);
    int fd = open(path.p, O_RDONLY | O_CLOEXEC);
    int err = errno;
    struct stat st;
    if (fd >= 0 && fstat(fd, &st) == 0 && !S_ISREG(st.st_mode)) {
        err = EISDIR;
        close(fd);
        fd = -1;
    }
    if (fd < 0) {
        char reason[128];
        snprintf(reason, sizeof(reason), "%s", strerror(err));
        reason[0] = (char)tolower((unsigned char)reason[0]);
        if (err == EISDIR) {
            snprintf(reason, sizeof(reason), "not a regular file");
        }
        REPORT(v, val, "cannot read %s %s (%s)", k->value, quote(path.p, path.n), reason);
    } else {
        close(fd);
        free(*out);
        *out = sl_buf_take(&path, NULL);
    }
    sl_buf_free(&path);
}

static void load_tls(struct vctx *v, const struct cfg__node *k, const struct cfg__node *m)
{
    struct cfg_tls *t = &v->s->tls;
    if (want_mapping(v, k, m) != SL_OK) {
        return;
    }
    t->enabled = true;
    bool have_cert = false;
    bool have_key = false;
    for (size_t i = 0; i < m->count; i++) {
        const struct cfg__node *key = m->pairs[i].key;
        const struct cfg__node *val = m->pairs[i].value;
        if (key_is(key, "cert_file")) {
            set_tls_file(v, key, val, &t->cert_file);
            have_cert = true;
        } else if (key_is(key, "key_file")) {
            set_tls_file(v, key, val, &t->key_file);
            have_key = true;
        } else {
            report_unknown(v, SEC_TLS, "in tls", key);
        }
    }
    if (!have_cert) {
        REPORT(v, k, "missing cert_file in tls");
    }
    if (!have_key) {
        REPORT(v, k, "missing key_file in tls");
    }
}

static uint32_t cpu_count(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : (uint32_t)SL_MIN(n, IO_THREADS_MAX);
}

static void set_defaults(struct cfg_snapshot *s, struct tenant_settings *ts)
{
    s->listen.host = sl_xstrdup("127.0.0.1");
    s->listen.port = 9324;
    s->region = sl_xstrdup("us-east-1");
    s->data_dir = sl_xstrdup("./sluice-data");
    s->partitions = 16;
    s->shard_size = 2;
    s->durability = CFG_DURABILITY_FSYNC;
    s->io_threads = 0;
    s->log_requests = true;
    *ts = (struct tenant_settings){
        .limits = {.requests_per_second = 1000,
                   .burst = 2000,
                   .max_inflight = 120000,
                   .max_backlog = 1000000,
                   .max_long_polls = 1000},
        .on_excess = CFG_EXCESS_REJECT,
        .spill = {.delay_seconds = 30, .aged_after_seconds = 300},
    };
}

static void load_top(struct vctx *v, const struct cfg__node *root)
{
    struct cfg_snapshot *s = v->s;
    struct tenant_settings ts;
    set_defaults(s, &ts);
    const struct cfg__node *shard_val = NULL;
    const struct cfg__node *listen_node = NULL;
    const struct cfg__node *admin_listen = NULL;
    const struct cfg__node *defaults[2] = {NULL, NULL};
    const struct cfg__node *tenants[2] = {NULL, NULL};

    for (size_t i = 0; i < root->count; i++) {
        const struct cfg__node *key = root->pairs[i].key;
        const struct cfg__node *val = root->pairs[i].value;
        if (key_is(key, "listen")) {
            set_endpoint(v, key, val, &s->listen);
            listen_node = val;
        } else if (key_is(key, "tls")) {
            load_tls(v, key, val);
        } else if (key_is(key, "region")) {
            const char *r = get_string(v, key, val);
            if (r != NULL && (strlen(r) > REGION_MAX || !chars_in(r, "-"))) {
                REPORT(v, val, "region must be 1 to %d of A-Z a-z 0-9 -, not %s", REGION_MAX,
                       qnode(val));
            } else if (r != NULL) {
                replace_str(&s->region, r);
            }
        } else if (key_is(key, "data_dir")) {
            const char *d = get_string(v, key, val);
            if (d != NULL) {
                replace_str(&s->data_dir, d);
            }
        } else if (key_is(key, "partitions")) {
            set_u32(v, key, val, 1, PARTITIONS_MAX, &s->partitions);
        } else if (key_is(key, "shard_size")) {
            uint64_t x;
            if (get_uint(v, key, val, 1, PARTITIONS_MAX, &x) == SL_OK) {
                s->shard_size = (uint32_t)x;
                shard_val = val;
            }
        } else if (key_is(key, "durability")) {
            bool os;
            if (get_enum(v, key, val, "fsync", "os", &os) == SL_OK) {
                s->durability = os ? CFG_DURABILITY_OS : CFG_DURABILITY_FSYNC;
            }
        } else if (key_is(key, "io_threads")) {
            set_u32(v, key, val, 0, IO_THREADS_MAX, &s->io_threads);
        } else if (key_is(key, "log_requests")) {
            set_bool(v, key, val, &s->log_requests);
        } else if (key_is(key, "server")) {
            load_server(v, key, val);
        } else if (key_is(key, "admin")) {
            load_admin(v, key, val, &admin_listen);
        } else if (key_is(key, "defaults")) {
            defaults[0] = key;
            defaults[1] = val;
        } else if (key_is(key, "tenants")) {
            tenants[0] = key;
            tenants[1] = val;
        } else {
            report_unknown(v, SEC_TOP, "at the top level", key);
        }
    }

    if (s->io_threads == 0) {
        s->io_threads = cpu_count();
    }
    if (shard_val == NULL) {
        s->shard_size = SL_MIN(s->shard_size, s->partitions);
    } else if (s->shard_size > s->partitions) {
        REPORT(v, shard_val, "shard_size must not exceed partitions (%u), not %u", s->partitions,
               s->shard_size);
    }
    /* load_admin sets admin_listen whenever it enables admin */
    if (s->admin.enabled && admin_listen != NULL && s->admin.listen.port == s->listen.port &&
        strcmp(s->admin.listen.host, s->listen.host) == 0) {
        REPORT(v, admin_listen, "admin.listen must differ from listen%s",
               listen_node != NULL ? "" : " (127.0.0.1:9324 by default)");
    }
    /* defaults: first, so each tenant starts from them wherever they are. */
    if (defaults[0] != NULL) {
        load_defaults(v, defaults[0], defaults[1], &ts);
    }
    s->default_limits = ts.limits;
    s->default_on_excess = ts.on_excess;
    s->default_spill = ts.spill;
    if (tenants[0] != NULL) {
        load_tenants(v, tenants[0], tenants[1], &ts);
    }
    check_key_reuse(v);
}

struct cfg_snapshot *cfg__validate(const struct cfg__node *root, const char *source,
                                   const char *base_dir, struct cfg__diagbuf *db)
{
    size_t before = db->count;
    if (root == NULL || cfg__node_is_null(root)) {
        cfg__diag_add(db, 1, 1, "the configuration is empty");
        return NULL;
    }
    if (root->kind != CFG__MAPPING) {
        cfg__diag_add(db, root->line, root->column, "the configuration must be a mapping, not %s",
                      describe(root));
        return NULL;
    }
    struct vctx v = {.db = db, .base_dir = base_dir};
    v.s = sl_xcalloc(1, sizeof(*v.s));
    v.s->source = sl_xstrdup(source);
    load_top(&v, root);
    if (db->count != before) {
        cfg__snapshot_free(v.s);
        return NULL;
    }
    v.s->_refs = 1;
    cfg__snapshot_index(v.s);
    return v.s;
}
