/*
 * gw_xml.c -- the XML writer of gw_text.h. Text is copied in runs: bytes
 * that pass as they are (printable ASCII but '&', '<', '>') are found
 * with a table, so an ASCII message body costs one scan and one memcpy;
 * multi-byte sequences are checked with the JSON writer's UTF-8 rules.
 *
 * Threading: pure; any thread.
 */
#include "gw_text.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#define REPLACEMENT "\xEF\xBF\xBD" /* U+FFFD */

/* 1: copied as is (printable ASCII but the three escaped, tab, line
 * feed); 0: needs a look. */
/* clang-format off */
static const uint8_t plain[256] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, /* 0x00 */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* 0x10 */
    1, 1, 1, 1, 1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 0x20 */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 0, 1, /* 0x30 */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 0x40 */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 0x50 */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 0x60 */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, /* 0x70 */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* 0x80 */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* 0x90 */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* 0xa0 */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* 0xb0 */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* 0xc0 */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* 0xd0 */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* 0xe0 */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* 0xf0 */
};
/* clang-format on */

void gw_xml_open(struct sl_buf *out, const char *name)
{
    sl_buf_append_byte(out, '<');
    sl_buf_append_cstr(out, name);
    sl_buf_append_byte(out, '>');
}

void gw_xml_close(struct sl_buf *out, const char *name)
{
    sl_buf_append(out, "</", 2);
    sl_buf_append_cstr(out, name);
    sl_buf_append_byte(out, '>');
}

/* The escape of one byte that is not plain ASCII text, or NULL. */
static const char *escape_of(uint8_t c)
{
    switch (c) {
    case '&':
        return "&amp;";
    case '<':
        return "&lt;";
    case '>':
        return "&gt;";
    case '\r':
        return "&#xD;";
    default:
        return NULL;
    }
}

void gw_xml_text(struct sl_buf *out, struct sl_slice s)
{
    const uint8_t *p = (const uint8_t *)s.p;
    size_t i = 0;
    sl_buf_reserve(out, s.n + 8);
    while (i < s.n) {
        size_t run = i;
        while (run < s.n && plain[p[run]]) {
            run++;
        }
        if (run > i) {
            sl_buf_append(out, p + i, run - i);
            i = run;
            if (i == s.n) {
                break;
            }
        }
        uint8_t c = p[i];
        const char *esc = escape_of(c);
        if (esc != NULL) {
            sl_buf_append_cstr(out, esc);
            i++;
            continue;
        }
        if (c < 0x80) { /* a C0 control XML 1.0 cannot carry, or DEL */
            if (c == 0x7F) {
                sl_buf_append_byte(out, (char)c);
            } else {
                sl_buf_append_cstr(out, REPLACEMENT);
            }
            i++;
            continue;
        }
        size_t len = gw_utf8_sequence(p + i, s.n - i);
        if (len == 0 || (len == 3 && p[i] == 0xEF && p[i + 1] == 0xBF && p[i + 2] >= 0xBE)) {
            sl_buf_append_cstr(out, REPLACEMENT); /* not UTF-8, or U+FFFE / U+FFFF */
            i += len == 0 ? 1 : len;
            continue;
        }
        sl_buf_append(out, p + i, len);
        i += len;
    }
}

void gw_xml_elem(struct sl_buf *out, const char *name, struct sl_slice text)
{
    gw_xml_open(out, name);
    gw_xml_text(out, text);
    gw_xml_close(out, name);
}

void gw_xml_elem_cstr(struct sl_buf *out, const char *name, const char *text)
{
    gw_xml_elem(out, name, sl_slice_cstr(text));
}

void gw_xml_elem_int(struct sl_buf *out, const char *name, int64_t v)
{
    char num[24];
    int n = snprintf(num, sizeof num, "%" PRId64, v);
    gw_xml_elem(out, name, (struct sl_slice){num, (size_t)n});
}

void gw_xml_elem_bool(struct sl_buf *out, const char *name, bool v)
{
    gw_xml_elem(out, name, v ? SL_SLICE_LIT("true") : SL_SLICE_LIT("false"));
}

void gw_xml_elem_base64(struct sl_buf *out, const char *name, struct sl_slice bytes)
{
    gw_xml_open(out, name);
    size_t n = sl_base64_encoded_len(bytes.n);
    sl_buf_reserve(out, n + 1);
    sl_base64_encode((const uint8_t *)bytes.p, bytes.n, out->p + out->n);
    out->n += n;
    out->p[out->n] = '\0';
    gw_xml_close(out, name);
}
