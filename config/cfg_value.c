/*
 * cfg_value.c -- typed values out of the YAML tree (cfg_value.h): each
 * getter checks kind, type and range and reports a problem at the node it
 * is about, leaving the caller's default in place, so that validation goes
 * on and lists every problem of a file at once.
 */
#include "cfg_value.h"

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

/* Lengths docs/config.md states for credentials. */
#define ACCESS_KEY_ID_MAX 128
#define SECRET_MAX 1024

/* ---- quoting user text into messages ------------------------------------- */

/* User text goes into messages escaped and cut, so a hostile file cannot
 * forge log lines. A small per-thread ring lets one message quote a few. */
#define QUOTE_RING 4

const char *cfg__quote(const char *p, size_t n)
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

const char *cfg__qnode(const struct cfg__node *n)
{
    return cfg__quote(n->value, n->len);
}

const char *cfg__describe(const struct cfg__node *n)
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
        snprintf(buf, sizeof(buf), "the quoted string %s", cfg__qnode(n));
        return buf;
    }
    return cfg__qnode(n);
}

bool cfg__key_is(const struct cfg__node *k, const char *name)
{
    return k->len == strlen(name) && memcmp(k->value, name, k->len) == 0;
}

/* ---- typed values ---------------------------------------------------------- */

int cfg__want_mapping(struct vctx *v, const struct cfg__node *k, const struct cfg__node *val)
{
    if (val->kind == CFG__MAPPING) {
        return SL_OK;
    }
    REPORT(v, val, "%s must be a mapping, not %s", k->value, cfg__describe(val));
    return SL_EINVAL;
}

bool cfg__plain_scalar(const struct cfg__node *n)
{
    return n->kind == CFG__SCALAR && n->plain && !cfg__node_is_null(n);
}

int cfg__get_uint(struct vctx *v, const struct cfg__node *k, const struct cfg__node *val,
                  uint64_t min, uint64_t max, uint64_t *out)
{
    bool digits = cfg__plain_scalar(val);
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
        REPORT(v, val, "%s must be an integer, not %s", k->value, cfg__describe(val));
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
               (unsigned long long)min, (unsigned long long)max, cfg__qnode(val));
        return SL_EINVAL;
    }
    *out = x;
    return SL_OK;
}

void cfg__set_u32(struct vctx *v, const struct cfg__node *k, const struct cfg__node *val,
                  uint32_t min, uint32_t max, uint32_t *out)
{
    uint64_t x;
    if (cfg__get_uint(v, k, val, min, max, &x) == SL_OK) {
        *out = (uint32_t)x;
    }
}

int cfg__get_number(struct vctx *v, const struct cfg__node *k, const struct cfg__node *val,
                    double *out)
{
    bool ok = cfg__plain_scalar(val);
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
        REPORT(v, val, "%s must be a number, not %s", k->value, cfg__describe(val));
        return SL_EINVAL;
    }
    *out = x;
    return SL_OK;
}

void cfg__set_bool(struct vctx *v, const struct cfg__node *k, const struct cfg__node *val,
                   bool *out)
{
    static const char *const yes[] = {"true", "True", "TRUE"};
    static const char *const no[] = {"false", "False", "FALSE"};
    if (cfg__plain_scalar(val)) {
        for (size_t i = 0; i < SL_ARRAY_LEN(yes); i++) {
            if (cfg__key_is(val, yes[i])) {
                *out = true;
                return;
            }
            if (cfg__key_is(val, no[i])) {
                *out = false;
                return;
            }
        }
    }
    REPORT(v, val, "%s must be true or false, not %s", k->value, cfg__describe(val));
}

const char *cfg__get_string(struct vctx *v, const struct cfg__node *k, const struct cfg__node *val)
{
    if (val->kind != CFG__SCALAR || cfg__node_is_null(val)) {
        REPORT(v, val, "%s must be a string, not %s", k->value, cfg__describe(val));
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

void cfg__replace_str(char **dst, const char *src)
{
    free(*dst);
    *dst = sl_xstrdup(src);
}

bool cfg__chars_in(const char *s, const char *extra)
{
    for (; *s != '\0'; s++) {
        if (!isalnum((unsigned char)*s) && strchr(extra, *s) == NULL) {
            return false;
        }
    }
    return true;
}

int cfg__get_enum(struct vctx *v, const struct cfg__node *k, const struct cfg__node *val,
                  const char *a, const char *b, bool *second)
{
    if (val->kind == CFG__SCALAR && (cfg__key_is(val, a) || cfg__key_is(val, b))) {
        *second = cfg__key_is(val, b);
        return SL_OK;
    }
    REPORT(v, val, "%s must be %s or %s, not %s", k->value, a, b, cfg__describe(val));
    return SL_EINVAL;
}

void cfg__set_endpoint(struct vctx *v, const struct cfg__node *k, const struct cfg__node *val,
                       struct cfg_endpoint *out)
{
    const char *s = cfg__get_string(v, k, val);
    if (s == NULL) {
        return;
    }
    const char *colon;
    char host[256];
    size_t hlen;
    if (s[0] == '[') {
        const char *close = strchr(s, ']');
        if (close == NULL || close[1] != ':') {
            REPORT(v, val, "%s must be host:port or [ipv6]:port, not %s", k->value,
                   cfg__qnode(val));
            return;
        }
        hlen = (size_t)(close - s - 1);
        colon = close + 1;
        struct in6_addr a6;
        if (hlen >= sizeof(host) ||
            (memcpy(host, s + 1, hlen), host[hlen] = '\0', inet_pton(AF_INET6, host, &a6) != 1)) {
            REPORT(v, val, "invalid ipv6 address in %s %s", k->value, cfg__qnode(val));
            return;
        }
    } else {
        colon = strrchr(s, ':');
        if (colon == NULL || colon == s) {
            REPORT(v, val, "%s must be host:port, not %s", k->value, cfg__qnode(val));
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
        if (!cfg__chars_in(host, ".-")) {
            REPORT(v, val, "invalid host in %s %s", k->value, cfg__qnode(val));
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
               cfg__quote(p, strlen(p)));
        return;
    }
    free(out->host);
    out->host = sl_xstrdup(host);
    out->port = (uint16_t)port;
}

void cfg__set_budget(struct vctx *v, const struct cfg__node *k, const struct cfg__node *val,
                     uint64_t min, uint64_t max, uint64_t *out)
{
    uint64_t x;
    if (cfg__get_uint(v, k, val, 0, max, &x) != SL_OK) {
        return;
    }
    if (x != 0 && x < min) {
        REPORT(v, val, "%s must be 0 (derived) or at least %llu, not %s", k->value,
               (unsigned long long)min, cfg__qnode(val));
        return;
    }
    *out = x;
}

const char *cfg__endpoint_str(const struct cfg_endpoint *e, char *out, size_t cap)
{
    bool v6 = e->host != NULL && strchr(e->host, ':') != NULL;
    snprintf(out, cap, v6 ? "[%s]:%u" : "%s:%u", e->host ? e->host : "", (unsigned)e->port);
    return out;
}

int cfg__open_file(struct vctx *v, const struct cfg__node *k, const struct cfg__node *val,
                   char **path_out)
{
    const char *s = cfg__get_string(v, k, val);
    if (s == NULL) {
        return -1;
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
        REPORT(v, val, "cannot read %s %s (%s)", k->value, cfg__quote(path.p, path.n), reason);
        sl_buf_free(&path);
        return -1;
    }
    *path_out = sl_buf_take(&path, NULL);
    return fd;
}

void cfg__set_secret(struct vctx *v, const struct cfg__node *k, const struct cfg__node *val,
                     char **out)
{
    const char *s = cfg__get_string(v, k, val);
    if (s == NULL) {
        return;
    }
    if (strncmp(s, "env:", 4) == 0) {
        const char *name = s + 4;
        if (name[0] == '\0' || isdigit((unsigned char)name[0]) || !cfg__chars_in(name, "_")) {
            REPORT(v, val, "invalid environment variable name in %s %s", k->value, cfg__qnode(val));
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
    cfg__replace_str(out, s);
}

void cfg__set_access_key_id(struct vctx *v, const struct cfg__node *k, const struct cfg__node *val,
                            char **out)
{
    const char *s = cfg__get_string(v, k, val);
    if (s == NULL) {
        return;
    }
    /* SigV4's Credential=AKID/date/region/... splits on '/' and ','. */
    if (strlen(s) > ACCESS_KEY_ID_MAX || !cfg__chars_in(s, "_.+@-")) {
        REPORT(v, val, "%s must be 1 to %d of A-Z a-z 0-9 _ . + @ -, not %s", k->value,
               ACCESS_KEY_ID_MAX, cfg__qnode(val));
        return;
    }
    cfg__replace_str(out, s);
}

void cfg__note_key_use(struct vctx *v, const char *id, const struct cfg__node *node, char *owner)
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

void cfg__check_key_reuse(struct vctx *v)
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
               cfg__quote(v->keys[i].id, strlen(v->keys[i].id)), v->keys[first].owner,
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
