/*
 * gw_xml.h -- (gateway-internal) a small XML writer that appends straight
 * into an sl_buf, for the SQS query protocol's replies (gw_sqs_xml.c), the
 * way gw_json.h writes the JSON protocol's: one pass, no document tree.
 *
 * Text is escaped for XML 1.0 element content:
 *  - '&', '<' and '>' as &amp; &lt; &gt; ('>' too, so "]]>" never appears);
 *  - '\r' as &#xD;, so a message body's carriage returns survive the
 *    parser's line-end normalisation and round-trip;
 *  - tab and line feed as they are;
 *  - what XML 1.0 cannot hold at all, even as a character reference (the
 *    other C0 controls, U+FFFE, U+FFFF), and bytes that are not UTF-8, as
 *    one U+FFFD each, so the output is always well-formed.
 *
 * Threading: pure; any thread. Ownership: the writer borrows out.
 */
#ifndef SLUICE_GW_XML_H
#define SLUICE_GW_XML_H

#include <stdint.h>

#include "sl.h"

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
