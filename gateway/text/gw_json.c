/*
 * gw_json.c -- the JSON writer of gw_text.h: compact JSON appended to an
 * sl_buf, escaped as jansson escapes it.
 *
 * Strings are copied in runs: the bytes that pass as they are (printable
 * ASCII but '"' and '\\') are skipped 8 at a time, and a byte table tells
 * them from those that need an escape or a UTF-8 check, so an ASCII
 * message body costs one fast scan and one memcpy.
 *
 * Threading: pure; any thread.
 */
#include "gw_text.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

enum byte_kind {
    PLAIN = 0,  /* copied as is */
    ESCAPE = 1, /* control character, '"' or '\\' */
    MULTI = 2,  /* starts (or is part of) a multi-byte UTF-8 sequence */
};

#define P PLAIN
#define E ESCAPE
#define M MULTI

/* clang-format off */
static const uint8_t byte_kind[256] = {
    E, E, E, E, E, E, E, E, E, E, E, E, E, E, E, E, /* 0x00 */
    E, E, E, E, E, E, E, E, E, E, E, E, E, E, E, E, /* 0x10 */
    P, P, E, P, P, P, P, P, P, P, P, P, P, P, P, P, /* 0x20 */
    P, P, P, P, P, P, P, P, P, P, P, P, P, P, P, P, /* 0x30 */
    P, P, P, P, P, P, P, P, P, P, P, P, P, P, P, P, /* 0x40 */
    P, P, P, P, P, P, P, P, P, P, P, P, E, P, P, P, /* 0x50 */
    P, P, P, P, P, P, P, P, P, P, P, P, P, P, P, P, /* 0x60 */
    P, P, P, P, P, P, P, P, P, P, P, P, P, P, P, P, /* 0x70 */
    M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, /* 0x80 */
    M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, /* 0x90 */
    M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, /* 0xa0 */
    M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, /* 0xb0 */
    M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, /* 0xc0 */
    M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, /* 0xd0 */
    M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, /* 0xe0 */
    M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, /* 0xf0 */
};
/* clang-format on */

#undef P
#undef E
#undef M

/* The length of the well-formed UTF-8 sequence at p (n > 0 bytes left), or
 * 0 if there is none: the rules of RFC 3629 section 4, which are also
 * jansson's. */
size_t gw_utf8_sequence(const uint8_t *p, size_t n)
{
    uint8_t lead = p[0];
    size_t len;
    uint32_t cp;
    if (lead < 0x80) {
        return 1;
    } else if (lead >= 0xc2 && lead <= 0xdf) {
        len = 2;
        cp = lead & 0x1fu;
    } else if (lead >= 0xe0 && lead <= 0xef) {
        len = 3;
        cp = lead & 0x0fu;
    } else if (lead >= 0xf0 && lead <= 0xf4) {
        len = 4;
        cp = lead & 0x07u;
    } else {
        return 0; /* a continuation byte, an overlong lead (c0, c1), or f5..ff */
    }
    if (len > n) {
        return 0;
    }
    for (size_t k = 1; k < len; k++) {
        if ((p[k] & 0xc0) != 0x80) {
            return 0;
        }
        cp = cp << 6 | (p[k] & 0x3fu);
    }
    if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
        (len == 4 && (cp < 0x10000 || cp > 0x10ffff))) {
        return 0;
    }
    return len;
}

bool gw_json_utf8_valid(struct sl_slice s)
{
    const uint8_t *p = (const uint8_t *)s.p;
    size_t i = 0;
    while (i < s.n) {
        size_t len = gw_utf8_sequence(p + i, s.n - i);
        if (len == 0) {
            return false;
        }
        i += len;
    }
    return true;
}

static void append_escape(struct sl_buf *out, uint8_t c)
{
    static const char hex[] = "0123456789ABCDEF";
    char seq[6] = {'\\', 0, 0, 0, 0, 0};
    size_t n = 2;
    switch (c) {
    case '"':
        seq[1] = '"';
        break;
    case '\\':
        seq[1] = '\\';
        break;
    case '\b':
        seq[1] = 'b';
        break;
    case '\f':
        seq[1] = 'f';
        break;
    case '\n':
        seq[1] = 'n';
        break;
    case '\r':
        seq[1] = 'r';
        break;
    case '\t':
        seq[1] = 't';
        break;
    default: /* the other control characters */
        seq[1] = 'u';
        seq[2] = '0';
        seq[3] = '0';
        seq[4] = hex[c >> 4];
        seq[5] = hex[c & 15];
        n = 6;
        break;
    }
    sl_buf_append(out, seq, n);
}

/* True if each of the 8 bytes at p is copied as it is: printable ASCII
 * (no high bit in x, nor after taking 0x20 from every byte: the lowest byte
 * below 0x20 wraps, and no borrow reaches it from below) and neither '"'
 * nor '\\' (no zero byte in x ^ that byte, by the usual (v - 1) & ~v test,
 * which is exact about whether there is one). */
static bool plain8(const uint8_t *p)
{
    const uint64_t ones = 0x0101010101010101ull;
    uint64_t x;
    memcpy(&x, p, sizeof x);
    uint64_t quote = x ^ (ones * '"');
    uint64_t backslash = x ^ (ones * '\\');
    uint64_t odd =
        (x | (x - ones * 0x20)) | ((quote - ones) & ~quote) | ((backslash - ones) & ~backslash);
    return (odd & (ones * 0x80)) == 0;
}

void gw_json_quote(struct sl_buf *out, struct sl_slice s)
{
    sl_buf_reserve(out, s.n + 2);
    sl_buf_append_byte(out, '"');
    if (s.n == 0) {
        sl_buf_append_byte(out, '"');
        return;
    }
    const uint8_t *p = (const uint8_t *)s.p;
    size_t run = 0; /* start of the bytes not written yet */
    size_t i = 0;
    while (i < s.n) {
        if (s.n - i >= 8 && plain8(p + i)) {
            i += 8;
            continue;
        }
        uint8_t kind = byte_kind[p[i]];
        if (kind == PLAIN) {
            i++;
            continue;
        }
        if (kind == MULTI) {
            size_t len = gw_utf8_sequence(p + i, s.n - i);
            if (len > 0) {
                i += len;
                continue;
            }
        }
        sl_buf_append(out, p + run, i - run);
        if (kind == MULTI) {
            sl_buf_append(out, "\xef\xbf\xbd", 3); /* U+FFFD for one bad byte */
        } else {
            append_escape(out, p[i]);
        }
        i++;
        run = i;
    }
    sl_buf_append(out, p + run, s.n - run);
    sl_buf_append_byte(out, '"');
}

/* ---- structure ------------------------------------------------------------ */

void gw_json_init(struct gw_json *w, struct sl_buf *out)
{
    w->out = out;
    w->comma = false;
}

/* Before a value that is not an object member's (array element, top). */
static void element(struct gw_json *w)
{
    if (w->comma) {
        sl_buf_append_byte(w->out, ',');
    }
    w->comma = true;
}

void gw_json_object_begin(struct gw_json *w)
{
    element(w);
    sl_buf_append_byte(w->out, '{');
    w->comma = false;
}

void gw_json_object_end(struct gw_json *w)
{
    sl_buf_append_byte(w->out, '}');
    w->comma = true;
}

void gw_json_array_begin(struct gw_json *w)
{
    element(w);
    sl_buf_append_byte(w->out, '[');
    w->comma = false;
}

void gw_json_array_end(struct gw_json *w)
{
    sl_buf_append_byte(w->out, ']');
    w->comma = true;
}

void gw_json_key(struct gw_json *w, struct sl_slice key)
{
    element(w);
    gw_json_quote(w->out, key);
    sl_buf_append_byte(w->out, ':');
    w->comma = false; /* the value follows without one */
}

void gw_json_string(struct gw_json *w, struct sl_slice s)
{
    element(w);
    gw_json_quote(w->out, s);
}

void gw_json_cstr(struct gw_json *w, const char *s)
{
    gw_json_string(w, sl_slice_cstr(s));
}

void gw_json_bool(struct gw_json *w, bool v)
{
    element(w);
    sl_buf_append_cstr(w->out, v ? "true" : "false");
}

void gw_json_int(struct gw_json *w, int64_t v)
{
    element(w);
    char text[24];
    int n = snprintf(text, sizeof text, "%" PRId64, v);
    sl_buf_append(w->out, text, (size_t)n);
}

void gw_json_base64(struct gw_json *w, struct sl_slice bytes)
{
    element(w);
    size_t len = sl_base64_encoded_len(bytes.n);
    sl_buf_reserve(w->out, len + 2);
    sl_buf_append_byte(w->out, '"');
    /* base64 needs no escaping: encode in place (it writes a NUL after) */
    sl_base64_encode((const uint8_t *)bytes.p, bytes.n, w->out->p + w->out->n);
    w->out->n += len;
    sl_buf_append_byte(w->out, '"');
}

/* ---- jansson values --------------------------------------------------------- */

static bool write_value(struct gw_json *w, const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        gw_json_object_begin(w);
        const char *key;
        size_t key_len;
        json_t *member;
        json_object_keylen_foreach((json_t *)v, key, key_len, member)
        {
            gw_json_key(w, (struct sl_slice){key, key_len});
            if (!write_value(w, member)) {
                return false;
            }
        }
        gw_json_object_end(w);
        return true;
    }
    case JSON_ARRAY:
        gw_json_array_begin(w);
        for (size_t i = 0; i < json_array_size(v); i++) {
            if (!write_value(w, json_array_get(v, i))) {
                return false;
            }
        }
        gw_json_array_end(w);
        return true;
    case JSON_STRING:
        gw_json_string(w, (struct sl_slice){json_string_value(v), json_string_length(v)});
        return true;
    case JSON_INTEGER:
        gw_json_int(w, (int64_t)json_integer_value(v));
        return true;
    case JSON_TRUE:
    case JSON_FALSE:
        gw_json_bool(w, json_is_true(v));
        return true;
    case JSON_NULL:
        element(w);
        sl_buf_append_cstr(w->out, "null");
        return true;
    case JSON_REAL:
        break;
    }
    return false;
}

bool gw_json_value(struct gw_json *w, const json_t *v)
{
    size_t mark = w->out->n;
    bool comma = w->comma;
    if (write_value(w, v)) {
        return true;
    }
    w->out->n = mark; /* nothing written after all */
    if (w->out->p != NULL) {
        w->out->p[mark] = '\0';
    }
    w->comma = comma;
    return false;
}
