/*
 * gw_sqs_names.c -- SQS's naming rules: queue URLs as docs/api.md fixes
 * them (http[s]://HOST:PORT/TENANT/QUEUE), queue and tenant names, ARNs,
 * and the names of queue and message system attributes.
 *
 * Threading: pure; any thread.
 */
#include <string.h>

#include "gw_sqs.h"

static const char *const qattr_names[GW_SQS_QATTR__COUNT] = {
#define QATTR_NAME(e, n) [GW_SQS_QATTR_##e] = (n),
    GW_SQS_QATTR_LIST(QATTR_NAME)
#undef QATTR_NAME
};

static const char *const sysattr_names[GW_SQS_SYSATTR__COUNT] = {
#define SYSATTR_NAME(e, n) [GW_SQS_SYSATTR_##e] = (n),
    GW_SQS_SYSATTR_LIST(SYSATTR_NAME)
#undef SYSATTR_NAME
};

static bool is_name_char(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_';
}

static bool all_name_chars(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (!is_name_char(p[i])) {
            return false;
        }
    }
    return true;
}

static bool starts_with(struct sl_slice s, const char *prefix)
{
    size_t n = strlen(prefix);
    return s.n >= n && memcmp(s.p, prefix, n) == 0;
}

bool gw_sqs_queue_name_valid(struct sl_slice name, bool *fifo)
{
    static const char suffix[] = ".fifo";
    size_t slen = sizeof(suffix) - 1;
    *fifo = name.n > slen && memcmp(name.p + name.n - slen, suffix, slen) == 0;
    size_t base = *fifo ? name.n - slen : name.n;
    return name.n >= 1 && name.n <= GW_SQS_MAX_QUEUE_NAME_LEN && base >= 1 &&
           all_name_chars(name.p, base);
}

bool gw_sqs_tenant_name_valid(struct sl_slice name)
{
    return name.n >= 1 && name.n <= 64 && all_name_chars(name.p, name.n);
}

int gw_sqs_parse_queue_url(struct sl_slice url, struct gw_sqs_queue_ref *out,
                           struct gw_sqs_err *err)
{
    memset(out, 0, sizeof(*out));
    out->url = url;
    struct sl_slice rest;
    if (starts_with(url, "https://")) {
        rest = (struct sl_slice){url.p + 8, url.n - 8};
    } else if (starts_with(url, "http://")) {
        rest = (struct sl_slice){url.p + 7, url.n - 7};
    } else {
        goto bad_address;
    }
    /* authority: up to the first '/', non-empty, no whitespace or '@' */
    const char *slash = memchr(rest.p, '/', rest.n);
    if (slash == NULL || slash == rest.p) {
        goto bad_address;
    }
    for (const char *c = rest.p; c < slash; c++) {
        if (*c == '@' || (unsigned char)*c <= ' ' || *c == '?' || *c == '#') {
            goto bad_address;
        }
    }
    struct sl_slice path = {slash + 1, rest.n - (size_t)(slash + 1 - rest.p)};
    const char *slash2 = memchr(path.p, '/', path.n);
    if (slash2 == NULL) {
        goto bad_address;
    }
    out->tenant = (struct sl_slice){path.p, (size_t)(slash2 - path.p)};
    out->name = (struct sl_slice){slash2 + 1, path.n - (size_t)(slash2 + 1 - path.p)};
    if (out->tenant.n == 0 || out->name.n == 0 || memchr(out->name.p, '/', out->name.n) != NULL) {
        goto bad_address;
    }
    if (!gw_sqs_tenant_name_valid(out->tenant) || !gw_sqs_queue_name_valid(out->name, &out->fifo)) {
        return gw_sqs_err_set(err, GW_SQS_E_QUEUE_DOES_NOT_EXIST, NULL);
    }
    return SL_OK;

bad_address:
    return gw_sqs_err_set(err, GW_SQS_E_INVALID_ADDRESS,
                          "The address %.*s is not valid for this endpoint.",
                          (int)SL_MIN(url.n, 256), url.p != NULL ? url.p : "");
}

bool gw_sqs_parse_arn(struct sl_slice arn, struct gw_sqs_arn *out)
{
    static const char prefix[] = "arn:aws:sqs:";
    size_t plen = sizeof(prefix) - 1;
    if (arn.n <= plen || memcmp(arn.p, prefix, plen) != 0) {
        return false;
    }
    const char *p = arn.p + plen;
    const char *end = arn.p + arn.n;
    const char *c1 = memchr(p, ':', (size_t)(end - p));
    if (c1 == NULL) {
        return false;
    }
    const char *c2 = memchr(c1 + 1, ':', (size_t)(end - c1 - 1));
    if (c2 == NULL) {
        return false;
    }
    out->region = (struct sl_slice){p, (size_t)(c1 - p)};
    out->account = (struct sl_slice){c1 + 1, (size_t)(c2 - c1 - 1)};
    out->name = (struct sl_slice){c2 + 1, (size_t)(end - c2 - 1)};
    bool fifo;
    return out->region.n > 0 && gw_sqs_tenant_name_valid(out->account) &&
           gw_sqs_queue_name_valid(out->name, &fifo);
}

const char *gw_sqs_qattr_name(enum gw_sqs_qattr a)
{
    SL_ASSERT((unsigned)a < GW_SQS_QATTR__COUNT);
    return qattr_names[a];
}

bool gw_sqs_qattr_lookup(struct sl_slice name, enum gw_sqs_qattr *out)
{
    for (size_t i = 0; i < GW_SQS_QATTR__COUNT; i++) {
        if (sl_slice_eq_cstr(name, qattr_names[i])) {
            *out = (enum gw_sqs_qattr)i;
            return true;
        }
    }
    return false;
}

const char *gw_sqs_sysattr_name(enum gw_sqs_sysattr a)
{
    SL_ASSERT((unsigned)a < GW_SQS_SYSATTR__COUNT);
    return sysattr_names[a];
}
