/*
 * lt_xml.c -- just enough XML to read SQS query-protocol replies: find an
 * element by name and decode its character data. The replies sluice-load
 * reads are small, flat and machine-written (QueueUrl, MessageId,
 * ReceiptHandle, Body, the batch result entries, ErrorResponse/Error/Code),
 * so a scanner over the bytes does, with no XML library and no DOM: no
 * namespaces (a prefixed name is a different name), no DTD, attributes
 * skipped. Comments, processing instructions and CDATA sections are
 * stepped over, so a tag inside them never matches.
 *
 * Pure; threading: none.
 */
#include "lt_int.h"

#include <string.h>

static bool name_char(char c)
{
    return c != '>' && c != '/' && c != ' ' && c != '\t' && c != '\r' && c != '\n' && c != '=';
}

/* The end of a construct that starts at p with open and ends with close,
 * or NULL when it is not closed before end. */
static const char *skip_past(const char *p, const char *end, const char *close)
{
    size_t cn = strlen(close);
    for (; p + cn <= end; p++) {
        if (memcmp(p, close, cn) == 0) {
            return p + cn;
        }
    }
    return NULL;
}

static bool starts(const char *p, const char *end, const char *lit)
{
    size_t n = strlen(lit);
    return (size_t)(end - p) >= n && memcmp(p, lit, n) == 0;
}

enum tag_kind { TAG_START, TAG_EMPTY, TAG_END };

struct tag {
    enum tag_kind kind;
    struct sl_slice name;
    const char *begin; /* its '<' */
    const char *after; /* just past its '>' */
};

/* The next start, empty or end tag at or after p. SL_ENOTFOUND when there
 * is none, SL_EINVAL when markup is cut off. */
static int next_tag(const char *p, const char *end, struct tag *t)
{
    while (p < end) {
        const char *lt = memchr(p, '<', (size_t)(end - p));
        if (lt == NULL) {
            return SL_ENOTFOUND;
        }
        if (starts(lt, end, "<!--")) {
            p = skip_past(lt + 4, end, "-->");
        } else if (starts(lt, end, "<![CDATA[")) {
            p = skip_past(lt + 9, end, "]]>");
        } else if (starts(lt, end, "<?") || starts(lt, end, "<!")) {
            p = skip_past(lt + 2, end, ">");
        } else {
            const char *q = lt + 1;
            t->kind = TAG_START;
            if (q < end && *q == '/') {
                t->kind = TAG_END;
                q++;
            }
            const char *name = q;
            while (q < end && name_char(*q)) {
                q++;
            }
            const char *gt = q < end ? memchr(q, '>', (size_t)(end - q)) : NULL;
            if (gt == NULL || q == name) {
                return SL_EINVAL;
            }
            if (t->kind == TAG_START && gt[-1] == '/') {
                t->kind = TAG_EMPTY;
            }
            t->name = (struct sl_slice){name, (size_t)(q - name)};
            t->begin = lt;
            t->after = gt + 1;
            return SL_OK;
        }
        if (p == NULL) {
            return SL_EINVAL;
        }
    }
    return SL_ENOTFOUND;
}

int lt_xml_next(const char **cur, const char *end, const char *name, struct sl_slice *inner)
{
    struct tag t;
    const char *p = *cur;
    int rc;
    for (;;) {
        rc = next_tag(p, end, &t);
        if (rc != SL_OK) {
            return rc;
        }
        p = t.after;
        if (t.kind != TAG_END && sl_slice_eq_cstr(t.name, name)) {
            break;
        }
    }
    if (t.kind == TAG_EMPTY) {
        *inner = (struct sl_slice){t.after, 0};
        *cur = t.after;
        return SL_OK;
    }
    const char *content = t.after;
    unsigned depth = 1;
    while (next_tag(p, end, &t) == SL_OK) {
        p = t.after;
        if (!sl_slice_eq_cstr(t.name, name) || t.kind == TAG_EMPTY) {
            continue;
        }
        if (t.kind == TAG_START) {
            depth++;
        } else if (--depth == 0) {
            *inner = (struct sl_slice){content, (size_t)(t.begin - content)};
            *cur = t.after;
            return SL_OK;
        }
    }
    return SL_EINVAL; /* no end tag */
}

static void append_utf8(struct sl_buf *out, uint32_t cp)
{
    char u[4];
    size_t n;
    if (cp < 0x80) {
        u[0] = (char)cp;
        n = 1;
    } else if (cp < 0x800) {
        u[0] = (char)(0xC0 | (cp >> 6));
        u[1] = (char)(0x80 | (cp & 0x3F));
        n = 2;
    } else if (cp < 0x10000) {
        u[0] = (char)(0xE0 | (cp >> 12));
        u[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        u[2] = (char)(0x80 | (cp & 0x3F));
        n = 3;
    } else {
        u[0] = (char)(0xF0 | (cp >> 18));
        u[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        u[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
        u[3] = (char)(0x80 | (cp & 0x3F));
        n = 4;
    }
    sl_buf_append(out, u, n);
}

/* A numeric character reference between "&#" and ';' (x or digits). */
static int char_ref(const char *p, size_t n, uint32_t *cp)
{
    unsigned base = 10;
    if (n > 0 && (p[0] == 'x' || p[0] == 'X')) {
        base = 16;
        p++;
        n--;
    }
    if (n == 0 || n > 8) {
        return SL_EINVAL;
    }
    uint32_t v = 0;
    for (size_t i = 0; i < n; i++) {
        char c = p[i];
        unsigned d;
        if (c >= '0' && c <= '9') {
            d = (unsigned)(c - '0');
        } else if (base == 16 && c >= 'a' && c <= 'f') {
            d = (unsigned)(c - 'a' + 10);
        } else if (base == 16 && c >= 'A' && c <= 'F') {
            d = (unsigned)(c - 'A' + 10);
        } else {
            return SL_EINVAL;
        }
        v = v * base + d;
    }
    /* XML's Char production: no NUL, no surrogates, nothing past U+10FFFF. */
    if (v == 0 || (v >= 0xD800 && v <= 0xDFFF) || v > 0x10FFFF) {
        return SL_EINVAL;
    }
    *cp = v;
    return SL_OK;
}

static const struct {
    const char *name;
    char c;
} entities[] = {{"amp", '&'}, {"lt", '<'}, {"gt", '>'}, {"quot", '"'}, {"apos", '\''}};

int lt_xml_text(struct sl_slice raw, struct sl_buf *out)
{
    const char *p = raw.p;
    const char *end = raw.p + raw.n;
    size_t start = out->n;
    while (p < end) {
        if (*p == '<') {
            if (!starts(p, end, "<![CDATA[")) {
                goto bad; /* an element inside text the caller wanted flat */
            }
            const char *close = skip_past(p + 9, end, "]]>");
            if (close == NULL) {
                goto bad;
            }
            sl_buf_append(out, p + 9, (size_t)(close - 3 - (p + 9)));
            p = close;
            continue;
        }
        if (*p != '&') {
            const char *stop = p;
            while (stop < end && *stop != '&' && *stop != '<') {
                stop++;
            }
            sl_buf_append(out, p, (size_t)(stop - p));
            p = stop;
            continue;
        }
        const char *semi = memchr(p, ';', (size_t)(end - p));
        if (semi == NULL) {
            goto bad;
        }
        const char *ref = p + 1;
        size_t rn = (size_t)(semi - ref);
        if (rn > 0 && ref[0] == '#') {
            uint32_t cp;
            if (char_ref(ref + 1, rn - 1, &cp) != SL_OK) {
                goto bad;
            }
            append_utf8(out, cp);
        } else {
            size_t i;
            for (i = 0; i < SL_ARRAY_LEN(entities); i++) {
                if (strlen(entities[i].name) == rn && memcmp(ref, entities[i].name, rn) == 0) {
                    break;
                }
            }
            if (i == SL_ARRAY_LEN(entities)) {
                goto bad;
            }
            sl_buf_append_byte(out, entities[i].c);
        }
        p = semi + 1;
    }
    if (out->p == NULL) {
        sl_buf_append(out, "", 0); /* an empty element still gives a C string */
    }
    return SL_OK;
bad:
    if (out->p != NULL) {
        out->n = start;
        out->p[start] = '\0';
    }
    return SL_EINVAL;
}

int lt_xml_child_text(struct sl_slice scope, const char *name, struct sl_buf *out)
{
    const char *cur = scope.p;
    struct sl_slice inner;
    int rc = lt_xml_next(&cur, scope.p + scope.n, name, &inner);
    if (rc != SL_OK) {
        return rc;
    }
    return lt_xml_text(inner, out);
}
