/*
 * gw_text.h -- (gateway-internal) the text room: writers that append JSON
 * and XML straight into an sl_buf, one pass over the bytes, no document
 * tree. They know neither HTTP nor SQS: the transport writes its refusals
 * with them and the SQS protocol its replies (docs/design.md, "Why each
 * dependency": replies are written, requests are parsed).
 *
 * JSON (gw_json.c) is RFC 8259, byte for byte what jansson's
 * json_dumpb(JSON_COMPACT) writes for the same values in the same order:
 *  - in strings, '"', '\\' and U+0000..U+001F are escaped (\b \f \n \r \t,
 *    the others as \u00XX with upper-case hex digits); everything else,
 *    valid multi-byte UTF-8 included, is copied as is ('/' is not escaped);
 *  - invalid UTF-8 (which jansson refuses to hold at all) is written as one
 *    U+FFFD per offending byte, so the output is always valid JSON.
 * The writer inserts the commas; the caller opens and closes containers in
 * order and writes a key before each member of an object. Nesting is not
 * checked.
 *
 * XML (gw_xml.c), for the SQS query protocol's replies, escapes text for
 * XML 1.0 element content:
 *  - '&', '<' and '>' as &amp; &lt; &gt; ('>' too, so "]]>" never appears);
 *  - '\r' as &#xD;, so a message body's carriage returns survive the
 *    parser's line-end normalisation and round-trip;
 *  - tab and line feed as they are;
 *  - what XML 1.0 cannot hold at all, even as a character reference (the
 *    other C0 controls, U+FFFE, U+FFFF), and bytes that are not UTF-8, as
 *    one U+FFFD each, so the output is always well-formed.
 *
 * Threading: pure; any thread. Ownership: the writers borrow out.
 */
#ifndef SLUICE_GW_TEXT_H
#define SLUICE_GW_TEXT_H

#include <stdbool.h>
#include <stdint.h>

#include "sl.h"

/* ---- JSON ------------------------------------------------------------------ */

struct json_t; /* jansson's json_t; no <jansson.h> here */

struct gw_json {
    struct sl_buf *out;
    bool comma; /* the next key or array element needs a ',' first */
};

/* Starts writing at the end of out (out keeps what it holds). */
void gw_json_init(struct gw_json *w, struct sl_buf *out);

void gw_json_object_begin(struct gw_json *w);
void gw_json_object_end(struct gw_json *w);
void gw_json_array_begin(struct gw_json *w);
void gw_json_array_end(struct gw_json *w);

/* An object member's key; the member's value comes next. */
void gw_json_key(struct gw_json *w, struct sl_slice key);
/* The same for a key known at compile time. */
#define gw_json_key_lit(w, lit) gw_json_key((w), SL_SLICE_LIT(lit))

void gw_json_string(struct gw_json *w, struct sl_slice s);
void gw_json_cstr(struct gw_json *w, const char *s);
void gw_json_bool(struct gw_json *w, bool v);
void gw_json_int(struct gw_json *w, int64_t v);

/* Standard base64 of bytes, as a JSON string (blobs in the JSON protocol). */
void gw_json_base64(struct gw_json *w, struct sl_slice bytes);

/* A jansson value (and everything under it, objects in their iteration
 * order). Returns false, having written nothing, if it holds a real number,
 * whose text this writer does not reproduce. */
bool gw_json_value(struct gw_json *w, const struct json_t *v);

/* Appends s to out as a quoted, escaped JSON string. */
void gw_json_quote(struct sl_buf *out, struct sl_slice s);

/* The length of the well-formed UTF-8 sequence at p (n > 0 bytes left),
 * or 0 if none starts there (RFC 3629: no overlong forms, no surrogates,
 * nothing above U+10FFFF). */
size_t gw_utf8_sequence(const uint8_t *p, size_t n);

/* True if s is well-formed UTF-8 (RFC 3629: no overlong forms, no
 * surrogates, nothing above U+10FFFF). */
bool gw_json_utf8_valid(struct sl_slice s);

/* ---- XML ------------------------------------------------------------------- */

/* "<name>" and "</name>"; name is a literal tag name, never escaped. */
void gw_xml_open(struct sl_buf *out, const char *name);
void gw_xml_close(struct sl_buf *out, const char *name);

/* s as escaped element content. */
void gw_xml_text(struct sl_buf *out, struct sl_slice s);

/* "<name>text</name>", and the same for a C string, an integer, a
 * boolean ("true"/"false") and standard base64 of bytes. */
void gw_xml_elem(struct sl_buf *out, const char *name, struct sl_slice text);
void gw_xml_elem_cstr(struct sl_buf *out, const char *name, const char *text);
void gw_xml_elem_int(struct sl_buf *out, const char *name, int64_t v);
void gw_xml_elem_bool(struct sl_buf *out, const char *name, bool v);
void gw_xml_elem_base64(struct sl_buf *out, const char *name, struct sl_slice bytes);

#endif
