/*
 * sigv4_text.h -- (sigv4-internal) the byte-level helpers every step of
 * SigV4 shares: case-insensitive comparison, white space, hex, and a
 * bounded output buffer. All static inline, because the canonical request
 * is built a byte at a time and a call per byte would cost more than the
 * work; header-only, so it adds no file to the module's call graph.
 *
 * Threading: pure functions.
 */
#ifndef SLUICE_SIGV4_TEXT_H
#define SLUICE_SIGV4_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "sigv4.h"
#include "sl.h"

#define SIGV4_ALGORITHM "AWS4-HMAC-SHA256"
#define SIGV4_KEY_BYTES 32
#define SIGV4_HASH_HEX 64 /* hex digits of a SHA-256 */

static inline char tx_lower(char c)
{
    if (c >= 'A' && c <= 'Z') {
        return (char)(c | 0x20);
    }
    return c;
}

static inline bool tx_eq_ci(struct sl_slice a, struct sl_slice b)
{
    if (a.n != b.n) {
        return false;
    }
    for (size_t i = 0; i < a.n; i++) {
        if (tx_lower(a.p[i]) != tx_lower(b.p[i])) {
            return false;
        }
    }
    return true;
}

/* What the header-value normalisation treats as white space. */
static inline bool tx_is_ws(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static inline struct sl_slice tx_trim(struct sl_slice s)
{
    while (s.n > 0 && tx_is_ws(s.p[0])) {
        s.p++;
        s.n--;
    }
    while (s.n > 0 && tx_is_ws(s.p[s.n - 1])) {
        s.n--;
    }
    return s;
}

static inline bool tx_is_hex(struct sl_slice s)
{
    for (size_t i = 0; i < s.n; i++) {
        if (sl_hex_digit(s.p[i]) < 0) {
            return false;
        }
    }
    return true;
}

static inline bool tx_parse_digits(const char *p, size_t n, int *out)
{
    int v = 0;
    for (size_t i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9') {
            return false;
        }
        v = v * 10 + (p[i] - '0');
    }
    *out = v;
    return true;
}

static inline void tx_set_why(const char **why, const char *text)
{
    if (why) {
        *why = text;
    }
}

/* Records a refusal: *failure (may be NULL) = f, *why (may be NULL) =
 * text. Returns SL_EINVAL, so a check reads "return tx_refuse(...)". */
static inline int tx_refuse(enum sigv4_failure *failure, const char **why, enum sigv4_failure f,
                            const char *text)
{
    if (failure) {
        *failure = f;
    }
    tx_set_why(why, text);
    return SL_EINVAL;
}

/* A fixed buffer that refuses to overflow: once full it stays full, and the
 * caller checks once at the end instead of after every append. One byte is
 * kept for the NUL. */
struct tx_out {
    char *p;
    size_t n;
    size_t cap;
    bool full;
};

static inline void tx_put(struct tx_out *o, const void *s, size_t n)
{
    if (n == 0) {
        return; /* s may be NULL: an empty slice */
    }
    if (o->full || n >= o->cap - o->n) {
        o->full = true;
        return;
    }
    memcpy(o->p + o->n, s, n);
    o->n += n;
}

static inline void tx_byte(struct tx_out *o, char c)
{
    tx_put(o, &c, 1);
}

static inline void tx_slice(struct tx_out *o, struct sl_slice s)
{
    tx_put(o, s.p, s.n);
}

static inline void tx_lower_slice(struct tx_out *o, struct sl_slice s)
{
    for (size_t i = 0; i < s.n; i++) {
        tx_byte(o, tx_lower(s.p[i]));
    }
}

#endif
