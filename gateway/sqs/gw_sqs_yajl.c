/*
 * gw_sqs_yajl.c -- the hot message actions' JSON 1.0 bodies, parsed by
 * yajl's event API straight into the gatherer (gw_sqs_in.h): no document,
 * and no string copied unless it holds an escape.
 *
 * The body must be refused exactly where jansson's
 * json_loadb(JSON_ALLOW_NUL) refuses it (SerializationException), and
 * yajl 2.1 is laxer in places, so each is closed here:
 *  - yajl checks only the shape of UTF-8 sequences; every string and key
 *    is checked as RFC 3629 says (no overlong forms, surrogates or code
 *    points past U+10FFFF), in the same pass that finds a character
 *    outside SQS's set;
 *  - yajl takes \v and \f as whitespace: a body holding either byte is
 *    refused (inside a string both parsers refuse it anyway);
 *  - yajl reads any top-level value, jansson only an object or array;
 *  - yajl has no depth limit, jansson refuses a value inside 2048
 *    containers;
 *  - yajl reads a key with \u0000, jansson refuses it;
 *  - yajl takes an unfinished token after the value (`{} "`) for input
 *    still to come, even at yajl_complete_parse: only whitespace may
 *    follow the value's last byte, which yajl_get_bytes_consumed tells
 *    when the value ends (yajl 2.1 keeps it current during callbacks);
 *  - numbers come as text and are read as jansson reads them (strtoll
 *    for integers, strtod for reals; both refuse what overflows);
 *  - yajl decodes an escaped lone surrogate wrongly (a '?', or half of a
 *    made-up pair). jansson refuses it, and the strict path then reads the
 *    body again with each one as U+FFFF, so that SQS's answer
 *    (InvalidMessageContents) can name it. The body is given to yajl in
 *    that form from the start, and the request remembers the first one.
 * tests/fuzz/fuzz_gw_sqs_hot.c checks all of this against the strict path.
 *
 * Threading: any thread; a yajl handle per call.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <yajl/yajl_parse.h>

#include "gw_sqs_in.h"
#include "gw_sqs_message.h"
#include "gw_text.h"

#define NUMBER_ON_STACK 64

struct yajl_ctx {
    struct gw__sqs_gather g;
    yajl_handle h;
    struct sl_slice text; /* what yajl reads: the body, or its copy with U+FFFF */
    size_t depth;         /* containers open */
    bool started;
    size_t value_end; /* where the top-level value ended; 0 before */
    int rc;           /* SL_EINVAL when jansson would refuse the body; SL_ENOMEM */
};

/* yajl's callbacks return 0 to stop the parse. */
static int stop(struct yajl_ctx *c, int rc)
{
    if (rc == SL_OK) {
        return 1;
    }
    c->rc = rc;
    return 0;
}

/* Whether a value may start here: jansson reads only an object or an
 * array at the top, and no value deeper than its limit. */
static bool value_allowed(struct yajl_ctx *c, bool container)
{
    if (!c->started) {
        if (!container) {
            return false;
        }
        c->started = true;
    }
    return c->depth < GW__SQS_MAX_DEPTH;
}

/* A string's bytes that live as long as the request: yajl hands over a
 * string without escapes from its input, and any other in a buffer it
 * reuses, so only those are copied (into the request's blocks). */
static int keep(struct yajl_ctx *c, const unsigned char *s, size_t n, struct sl_slice *out)
{
    uintptr_t p = (uintptr_t)s, lo = (uintptr_t)c->text.p;
    if (p >= lo && p - lo <= c->text.n && n <= c->text.n - (p - lo)) {
        *out = (struct sl_slice){(const char *)s, n};
        return SL_OK;
    }
    char *copy = gw__sqs_dec_alloc(c->g.d, n, 1);
    if (copy == NULL) {
        return SL_ENOMEM;
    }
    if (n > 0) {
        memcpy(copy, s, n);
    }
    *out = (struct sl_slice){copy, n};
    return SL_OK;
}

static int scalar(struct yajl_ctx *c, const struct gw_sqs_val *v)
{
    if (!value_allowed(c, false)) {
        return stop(c, SL_EINVAL);
    }
    return stop(c, gw__sqs_gather_value(&c->g, v));
}

static int on_null(void *ctx)
{
    return scalar(ctx, &(struct gw_sqs_val){.type = GW_SQS_J_NULL});
}

static int on_boolean(void *ctx, int b)
{
    return scalar(ctx, &(struct gw_sqs_val){.type = b ? GW_SQS_J_TRUE : GW_SQS_J_FALSE});
}

/* A number's text read as jansson reads it: an integer unless it has a
 * fraction or an exponent; either refused when it overflows. */
static int on_number(void *ctx, const char *s, size_t n)
{
    struct yajl_ctx *c = ctx;
    char small[NUMBER_ON_STACK];
    char *text = n < sizeof(small) ? small : sl_trymalloc(n + 1);
    if (text == NULL) {
        gw_sqs_err_set(c->g.d->err, GW_SQS_E_INTERNAL_ERROR, NULL);
        return stop(c, SL_ENOMEM);
    }
    memcpy(text, s, n);
    text[n] = '\0';
    struct gw_sqs_val v = {.type = GW_SQS_J_INTEGER};
    bool overflow;
    errno = 0;
    if (strpbrk(text, ".eE") != NULL) {
        v.type = GW_SQS_J_REAL; /* its value is never read */
        overflow = isinf(strtod(text, NULL)) && errno == ERANGE;
    } else {
        v.i = strtoll(text, NULL, 10);
        overflow = errno == ERANGE;
    }
    if (text != small) {
        free(text);
    }
    return overflow ? stop(c, SL_EINVAL) : scalar(c, &v);
}

static int on_string(void *ctx, const unsigned char *s, size_t n)
{
    struct yajl_ctx *c = ctx;
    struct gw_sqs_val v = {.type = GW_SQS_J_STRING};
    if (!gw__sqs_text_scan((struct sl_slice){(const char *)s, n}, &v.has_bad, &v.bad)) {
        return stop(c, SL_EINVAL);
    }
    int rc = keep(c, s, n, &v.s);
    return rc != SL_OK ? stop(c, rc) : scalar(c, &v);
}

static int on_key(void *ctx, const unsigned char *s, size_t n)
{
    struct yajl_ctx *c = ctx;
    struct sl_slice key = {(const char *)s, n};
    if (!gw_json_utf8_valid(key) || memchr(s, '\0', n) != NULL) {
        return stop(c, SL_EINVAL);
    }
    int rc = keep(c, s, n, &key);
    return stop(c, rc != SL_OK ? rc : gw__sqs_gather_key(&c->g, key));
}

static int begin(struct yajl_ctx *c, bool array)
{
    if (!value_allowed(c, true)) {
        return stop(c, SL_EINVAL);
    }
    c->depth++;
    return stop(c, gw__sqs_gather_begin(&c->g, array));
}

static int end(struct yajl_ctx *c)
{
    if (--c->depth == 0) {
        c->value_end = yajl_get_bytes_consumed(c->h);
    }
    gw__sqs_gather_end(&c->g);
    return 1;
}

static int on_start_map(void *ctx)
{
    return begin(ctx, false);
}

static int on_start_array(void *ctx)
{
    return begin(ctx, true);
}

static int on_end(void *ctx)
{
    return end(ctx);
}

static const yajl_callbacks callbacks = {
    .yajl_null = on_null,
    .yajl_boolean = on_boolean,
    .yajl_number = on_number,
    .yajl_string = on_string,
    .yajl_start_map = on_start_map,
    .yajl_map_key = on_key,
    .yajl_end_map = on_end,
    .yajl_start_array = on_start_array,
    .yajl_end_array = on_end,
};

/* True when nothing but JSON's whitespace follows the value. */
static bool only_space_after(const struct yajl_ctx *c)
{
    if (c->value_end == 0 || c->value_end > c->text.n) {
        return false;
    }
    for (size_t i = c->value_end; i < c->text.n; i++) {
        char ch = c->text.p[i];
        if (ch != ' ' && ch != '\t' && ch != '\n' && ch != '\r') {
            return false;
        }
    }
    return true;
}

int gw__sqs_hot_decode_body(struct gw_sqs_dec *d, struct sl_slice body)
{
    struct gw__sqs_obj_in req;
    struct yajl_ctx c = {.text = body};
    gw__sqs_gather_init(&c.g, d, &req);
    if (body.n == 0) {
        c.g.root.type = GW_SQS_J_OBJECT; /* an empty body counts as {} */
        return gw__sqs_hot_validate(&c.g);
    }
    if (memchr(body.p, '\v', body.n) != NULL || memchr(body.p, '\f', body.n) != NULL) {
        return gw_sqs_err_set(d->err, GW_SQS_E_SERIALIZATION, NULL);
    }
    uint32_t surrogate = gw__sqs_unpair_surrogates(body, NULL);
    if (surrogate != 0) {
        char *copy = gw__sqs_dec_alloc(d, body.n, 1);
        if (copy == NULL) {
            return SL_ENOMEM;
        }
        memcpy(copy, body.p, body.n);
        (void)gw__sqs_unpair_surrogates(body, copy);
        c.text = (struct sl_slice){copy, body.n};
        d->r->surrogate_ = surrogate;
    }
    yajl_handle h = yajl_alloc(&callbacks, NULL, &c);
    c.h = h;
    if (h == NULL) {
        gw_sqs_err_set(d->err, GW_SQS_E_INTERNAL_ERROR, NULL);
        return SL_ENOMEM;
    }
    yajl_status st = yajl_parse(h, (const unsigned char *)c.text.p, c.text.n);
    if (st == yajl_status_ok) {
        st = yajl_complete_parse(h);
    }
    yajl_free(h);
    if (c.rc == SL_ENOMEM) {
        return SL_ENOMEM;
    }
    if (st != yajl_status_ok || c.rc != SL_OK || !c.started || !only_space_after(&c)) {
        return gw_sqs_err_set(d->err, GW_SQS_E_SERIALIZATION, NULL);
    }
    return gw__sqs_hot_validate(&c.g);
}
