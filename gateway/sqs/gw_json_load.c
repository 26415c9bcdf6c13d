/*
 * gw_json_load.c -- request bodies into jansson documents through cJSON's
 * parser, falling back to jansson's own parse wherever the two could
 * differ (why: gw_json_load.h).
 *
 * cJSON is more lenient than jansson in places (it skips a byte-order
 * mark and any control byte as whitespace, and reads numbers with strtod,
 * so "01", "+1" and "1." pass), and it reads every number as a double. So
 * before cJSON sees a body, one pass over its bytes (tracking only whether
 * it is inside a string, and escapes) sends to jansson every body with:
 *  - a byte below 0x20 inside a string, or outside one other than JSON's
 *    whitespace; a NUL byte anywhere;
 *  - a byte of 0x80 or above outside a string (a byte-order mark);
 *  - a number that is not -?(0|[1-9][0-9]*) of at most 15 digits (reals,
 *    exponents, leading zeros and signs, and anything a double would not
 *    hold exactly);
 *  - a \u escape without four hex digits (cJSON reads it as U+0000),
 *    a \u0000 escape (cJSON's strings end at NUL) or a \uD800-\uDFFF
 *    escape (cJSON has its own rules for surrogate pairs; jansson refuses
 *    a lone one, and the SQS decoder then names it in
 *    InvalidMessageContents).
 * What cJSON then parses is converted value by value: strings and keys
 * through json_stringn and json_object_set_new, which check UTF-8 as
 * jansson's parser does; a key seen twice keeps its last value, as in
 * jansson. Anything cJSON refuses, or trailing bytes other than
 * whitespace, or a top-level value that is not an object or array, goes
 * to jansson, whose document or error is then the answer. This is a
 * filter, not a parser: both libraries still parse, and
 * tests/fuzz/fuzz_json_load.c checks that the answers are the same.
 */
#include "gw_json_load.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "sl.h"

#define MAX_INT_DIGITS 15 /* below 2^53: a double holds it exactly */

/* A \u escape at s (s[0] == '\\', s[1] == 'u') that cJSON must not read:
 * U+0000, a surrogate, or a malformed one (cJSON reads bad hex digits as
 * U+0000 where jansson refuses them). */
static bool escape_for_jansson(const char *s, const char *end)
{
    if (end - s < 6)
        return true;
    int v = 0;
    for (int i = 2; i < 6; i++) {
        int d = sl_hex_digit(s[i]);
        if (d < 0)
            return true;
        v = v * 16 + d;
    }
    return v == 0 || (v >= 0xD800 && v <= 0xDFFF);
}

/* The length of the number at s if it is a plain integer cJSON reads as
 * jansson does, else 0. */
static size_t plain_integer(const char *s, const char *end)
{
    const char *d = s;
    if (d < end && *d == '-')
        d++;
    const char *digits = d;
    while (d < end && *d >= '0' && *d <= '9')
        d++;
    size_t n = (size_t)(d - digits);
    if (n == 0 || n > MAX_INT_DIGITS || (n > 1 && digits[0] == '0'))
        return 0;
    if (d < end && (*d == '.' || *d == 'e' || *d == 'E' || *d == '+' || *d == '-'))
        return 0;
    return (size_t)(d - s);
}

bool gw__json_needs_jansson(const char *p, size_t n)
{
    const char *end = p + n;
    bool in_string = false;
    for (const char *s = p; s < end; s++) {
        unsigned char c = (unsigned char)*s;
        if (in_string) {
            if (c < 0x20)
                return true;
            if (c == '"') {
                in_string = false;
            } else if (c == '\\') {
                if (s + 1 < end && s[1] == 'u' && escape_for_jansson(s, end))
                    return true;
                s++; /* the escaped character; malformed escapes fail in both */
            }
            continue;
        }
        if (c == '"') {
            in_string = true;
        } else if (c == '-' || (c >= '0' && c <= '9')) {
            size_t len = plain_integer(s, end);
            if (len == 0)
                return true;
            s += len - 1;
        } else if (c >= 0x80 || c == '+' || c == '.' ||
                   (c < 0x20 && c != '\t' && c != '\n' && c != '\r')) {
            return true;
        }
    }
    return false;
}

/* jansson's value for item (a new reference), or NULL where the
 * conversion refuses. */
static json_t *convert(const cJSON *item)
{
    if (cJSON_IsNull(item))
        return json_null();
    if (cJSON_IsBool(item))
        return json_boolean(cJSON_IsTrue(item));
    if (cJSON_IsNumber(item))
        return json_integer((json_int_t)item->valuedouble); /* exact: at most 15 digits */
    if (cJSON_IsString(item))
        return json_stringn(item->valuestring, strlen(item->valuestring));
    bool array = cJSON_IsArray(item);
    if (!array && !cJSON_IsObject(item))
        return NULL;
    json_t *out = array ? json_array() : json_object();
    for (const cJSON *child = item->child; child != NULL; child = child->next) {
        json_t *v = convert(child);
        /* json_object_set_new checks the key's UTF-8; a key seen twice
         * keeps the last value. */
        int rv = v == NULL ? -1
                 : array   ? json_array_append_new(out, v)
                           : json_object_set_new(out, child->string, v);
        if (rv != 0) {
            json_decref(out);
            return NULL;
        }
    }
    return out;
}

/* cJSON's document of the whole body, converted, or NULL. */
static json_t *load_fast(const char *p, size_t n)
{
    if (n == 0 || gw__json_needs_jansson(p, n))
        return NULL;
    const char *parse_end = NULL;
    cJSON *doc = cJSON_ParseWithLengthOpts(p, n, &parse_end, false);
    if (doc == NULL)
        return NULL;
    /* One object or array, then nothing but whitespace: what jansson
     * accepts without JSON_DECODE_ANY or JSON_DISABLE_EOF_CHECK. */
    const char *end = p + n;
    while (parse_end < end &&
           (*parse_end == ' ' || *parse_end == '\t' || *parse_end == '\n' || *parse_end == '\r'))
        parse_end++;
    json_t *out = NULL;
    if (parse_end == end && (cJSON_IsObject(doc) || cJSON_IsArray(doc)))
        out = convert(doc);
    cJSON_Delete(doc);
    return out;
}

json_t *gw__json_load(const char *p, size_t n, json_error_t *err)
{
    json_t *doc = load_fast(p, n);
    if (doc != NULL)
        return doc;
    /* JSON_ALLOW_NUL: a U+0000 in a body is InvalidMessageContents, not a
     * syntax error */
    return json_loadb(p, n, JSON_ALLOW_NUL, err);
}
