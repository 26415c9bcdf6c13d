/*
 * gw_sqs_message.c -- decoding one message to send: body, MessageAttributes,
 * MessageSystemAttributes, DelaySeconds, MessageGroupId and
 * MessageDeduplicationId, with SQS's rules (Amazon SQS API Reference,
 * SendMessage) and its size count (body + each attribute's name, DataType and
 * value).
 *
 * Threading: pure; any thread. Ownership: slices borrow from what the
 * gatherer kept (gw_sqs_in.h); the attribute array and decoded Binary
 * values are blocks of the request.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "gw_sqs_message.h"
#include "gw_text.h"

#define CHARSET_TEXT "#x9 | #xA | #xD | #x20 to #xD7FF | #xE000 to #xFFFD | #x10000 to #x10FFFF"

static bool allowed_code_point(uint32_t c)
{
    return c == 0x9 || c == 0xA || c == 0xD || (c >= 0x20 && c <= 0xD7FF) ||
           (c >= 0xE000 && c <= 0xFFFD) || (c >= 0x10000 && c <= 0x10FFFF);
}

/* True if the 8 bytes at p are all printable ASCII (0x20..0x7f): no high
 * bit in x, and none after 0x20 is taken from every byte (the lowest byte
 * below 0x20 wraps to 0xe0 or more; no borrow reaches it from below). */
static bool printable_ascii8(const uint8_t *p)
{
    uint64_t x;
    memcpy(&x, p, sizeof x);
    return ((x | (x - 0x2020202020202020ull)) & 0x8080808080808080ull) == 0;
}

/* The offset of the first character of s outside SQS's set (or of
 * malformed UTF-8), with it in *bad; s.n if none. */
static size_t chars_prefix(struct sl_slice s, uint32_t *bad)
{
    const uint8_t *p = (const uint8_t *)s.p;
    size_t i = 0;
    while (i < s.n) {
        if (s.n - i >= 8 && printable_ascii8(p + i)) {
            i += 8; /* the common case, 8 bytes at a time */
            continue;
        }
        uint32_t c = p[i];
        size_t len;
        if (c < 0x80) {
            len = 1;
        } else if ((c & 0xE0) == 0xC0) {
            len = 2;
            c &= 0x1F;
        } else if ((c & 0xF0) == 0xE0) {
            len = 3;
            c &= 0x0F;
        } else if ((c & 0xF8) == 0xF0) {
            len = 4;
            c &= 0x07;
        } else {
            *bad = c;
            return i;
        }
        if (i + len > s.n) {
            *bad = p[i];
            return i;
        }
        for (size_t k = 1; k < len; k++) {
            if ((p[i + k] & 0xC0) != 0x80) {
                *bad = p[i];
                return i;
            }
            c = (c << 6) | (p[i + k] & 0x3F);
        }
        /* overlong forms decode to a smaller value than their length allows */
        static const uint32_t min_for_len[5] = {0, 0, 0x80, 0x800, 0x10000};
        if (c < min_for_len[len] || !allowed_code_point(c)) {
            *bad = c;
            return i;
        }
        i += len;
    }
    return s.n;
}

bool gw__sqs_chars_valid(struct sl_slice s, uint32_t *bad)
{
    return chars_prefix(s, bad) == s.n;
}

bool gw__sqs_text_scan(struct sl_slice s, bool *has_bad, uint32_t *bad)
{
    size_t at = chars_prefix(s, bad);
    *has_bad = at < s.n;
    if (at == s.n) {
        return true;
    }
    /* a character outside the set, or the first malformed byte */
    size_t len = gw_utf8_sequence((const uint8_t *)s.p + at, s.n - at);
    return len > 0 && gw_json_utf8_valid((struct sl_slice){s.p + at + len, s.n - at - len});
}

bool gw__sqs_token_valid(struct sl_slice s)
{
    if (s.n < 1 || s.n > GW_SQS_MAX_GROUP_ID_LEN) {
        return false;
    }
    for (size_t i = 0; i < s.n; i++) {
        if ((unsigned char)s.p[i] < 0x21 || (unsigned char)s.p[i] > 0x7e) {
            return false;
        }
    }
    return true;
}

int gw__sqs_message_too_long(struct gw_sqs_err *err)
{
    return gw_sqs_err_set(err, GW_SQS_E_INVALID_PARAMETER_VALUE,
                          "One or more parameters are invalid. Reason: Message must be shorter "
                          "than %u bytes.",
                          GW_SQS_MAX_MESSAGE_BYTES);
}

static int entry_fail(struct gw_sqs_err *fail, enum gw_sqs_error code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int entry_fail(struct gw_sqs_err *fail, enum gw_sqs_error code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fail->code = code;
    vsnprintf(fail->message, sizeof(fail->message), fmt, ap);
    va_end(ap);
    return GW__SQS_ENTRY_FAILED;
}

/* ---- message attributes --------------------------------------------------- */

/* SQS also takes accented Latin letters (U+00C0..U+017F, UTF-8 lead bytes
 * C3..C5) in attribute names, though its documentation lists only ASCII
 * (research 4.28; LocalStack's AWS-validated rule). */
static bool latin_letter_at(struct sl_slice n, size_t i)
{
    uint8_t lead = (uint8_t)n.p[i];
    return lead >= 0xc3 && lead <= 0xc5 && i + 1 < n.n && ((uint8_t)n.p[i + 1] & 0xc0) == 0x80;
}

/* SQS's attribute name rule (research 1.8). */
bool gw_sqs_attr_name_valid(struct sl_slice n)
{
    if (n.n == 0 || n.n > GW_SQS_MAX_ATTRIBUTE_NAME_LEN) {
        return false;
    }
    if (n.p[0] == '.' || n.p[n.n - 1] == '.') {
        return false;
    }
    if ((n.n >= 4 && strncasecmp(n.p, "aws.", 4) == 0) ||
        (n.n >= 7 && strncasecmp(n.p, "amazon.", 7) == 0)) {
        return false;
    }
    for (size_t i = 0; i < n.n; i++) {
        char c = n.p[i];
        if (latin_letter_at(n, i)) {
            i++; /* a two-byte letter */
            continue;
        }
        bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                  c == '_' || c == '-' || c == '.';
        if (!ok || (c == '.' && i + 1 < n.n && n.p[i + 1] == '.')) {
            return false;
        }
    }
    return true;
}

/* "String", "Number", "Binary", each optionally followed by ".label". */
static bool parse_data_type(struct sl_slice t, enum gw_sqs_attr_type *type)
{
    static const struct {
        const char *prefix;
        enum gw_sqs_attr_type type;
    } kinds[] = {
        {"String", GW_SQS_ATTR_STRING},
        {"Number", GW_SQS_ATTR_NUMBER},
        {"Binary", GW_SQS_ATTR_BINARY},
    };
    if (t.n > GW_SQS_MAX_ATTRIBUTE_TYPE_LEN) {
        return false;
    }
    for (size_t i = 0; i < SL_ARRAY_LEN(kinds); i++) {
        size_t n = strlen(kinds[i].prefix);
        if (t.n >= n && memcmp(t.p, kinds[i].prefix, n) == 0 &&
            (t.n == n || (t.p[n] == '.' && t.n > n + 1))) {
            *type = kinds[i].type;
            return true;
        }
    }
    return false;
}

/* A decimal number as SQS accepts for Number attributes: sign, digits,
 * fraction, exponent. */
static bool number_valid(struct sl_slice v)
{
    size_t i = 0;
    size_t digits = 0;
    if (i < v.n && (v.p[i] == '-' || v.p[i] == '+')) {
        i++;
    }
    while (i < v.n && v.p[i] >= '0' && v.p[i] <= '9') {
        i++;
        digits++;
    }
    if (i < v.n && v.p[i] == '.') {
        i++;
        while (i < v.n && v.p[i] >= '0' && v.p[i] <= '9') {
            i++;
            digits++;
        }
    }
    if (digits == 0) {
        return false;
    }
    if (i < v.n && (v.p[i] == 'e' || v.p[i] == 'E')) {
        i++;
        if (i < v.n && (v.p[i] == '-' || v.p[i] == '+')) {
            i++;
        }
        size_t exp_digits = 0;
        while (i < v.n && v.p[i] >= '0' && v.p[i] <= '9') {
            i++;
            exp_digits++;
        }
        if (exp_digits == 0) {
            return false;
        }
    }
    return i == v.n;
}

/* Decodes one MessageAttributeValue structure. */
static int decode_attr_value(struct gw_sqs_dec *d, const struct gw__sqs_attr_in *in,
                             struct gw_sqs_msg_attr *a, struct gw_sqs_err *fail)
{
    if (in->self.type != GW_SQS_J_OBJECT) {
        return gw__sqs_jtype_error(in->self.type, "a Structure", d->err);
    }
    const struct gw_sqs_val *m = in->m;
    struct sl_slice sv, bv;
    bool has_s, has_b;
    int rc = gw__sqs_val_string(&m[GW__SQS_IN_DATA_TYPE], "DataType", false, &a->data_type, NULL,
                                d->err);
    if (rc == SL_OK) {
        rc = gw__sqs_val_string(&m[GW__SQS_IN_STRING_VALUE], "StringValue", false, &sv, &has_s,
                                d->err);
    }
    if (rc == SL_OK) {
        rc = gw__sqs_val_string(&m[GW__SQS_IN_BINARY_VALUE], "BinaryValue", false, &bv, &has_b,
                                d->err);
    }
    static const struct {
        enum gw__sqs_in_attr_member member;
        const char *name;
    } lists[] = {{GW__SQS_IN_STRING_LIST, "StringListValues"},
                 {GW__SQS_IN_BINARY_LIST, "BinaryListValues"}};
    for (size_t i = 0; i < SL_ARRAY_LEN(lists) && rc == SL_OK; i++) {
        const struct gw_sqs_val *list = &m[lists[i].member];
        bool has_list;
        rc = gw__sqs_val_container(list, GW_SQS_J_ARRAY, lists[i].name, false, &has_list, d->err);
        if (rc == SL_OK && has_list && list->n > 0) {
            return entry_fail(fail, GW_SQS_E_INVALID_PARAMETER_VALUE,
                              "Message attribute list values in SendMessage operation are not "
                              "supported.");
        }
    }
    if (rc != SL_OK) {
        return rc;
    }
    int nl = (int)a->name.n;
    if (a->data_type.n == 0) {
        return entry_fail(fail, GW_SQS_E_INVALID_PARAMETER_VALUE,
                          "The message attribute '%.*s' must contain a non-empty message "
                          "attribute type.",
                          nl, a->name.p);
    }
    if (!parse_data_type(a->data_type, &a->type)) {
        return entry_fail(fail, GW_SQS_E_INVALID_PARAMETER_VALUE,
                          "The message attribute '%.*s' has an invalid message attribute type, "
                          "the set of supported type prefixes is Binary, Number, and String.",
                          nl, a->name.p);
    }
    /* The custom label is echoed in every reply and is part of the
     * attribute digest: a character the query protocol's XML cannot carry
     * would reach a client as U+FFFD, and its MD5 check would fail. */
    if (m[GW__SQS_IN_DATA_TYPE].has_bad) {
        return entry_fail(fail, GW_SQS_E_INVALID_MESSAGE_CONTENTS,
                          "Invalid binary character '#x%X' was found in the type of message "
                          "attribute '%.*s', the set of allowed characters is " CHARSET_TEXT,
                          gw__sqs_reported_char(d->r, m[GW__SQS_IN_DATA_TYPE].bad), nl, a->name.p);
    }
    if (a->type == GW_SQS_ATTR_BINARY) {
        if (!has_b || bv.n == 0) {
            return entry_fail(fail, GW_SQS_E_INVALID_PARAMETER_VALUE,
                              "Message (user) attribute '%.*s' must contain a non-empty value of "
                              "type 'Binary'.",
                              nl, a->name.p);
        }
        /* blobs travel as base64 in the JSON protocol; bad base64 is a
         * deserialization failure of the whole request */
        uint8_t *bytes = gw__sqs_dec_alloc(d, 3 * (bv.n / 4) + 3, 1);
        size_t len = 0;
        if (bytes == NULL) {
            return SL_ENOMEM;
        }
        if (sl_base64_decode(bv.p, bv.n, bytes, &len) != SL_OK) {
            return gw_sqs_err_set(d->err, GW_SQS_E_SERIALIZATION,
                                  "Base64 encoded value of BinaryValue is invalid.");
        }
        if (len == 0) {
            return entry_fail(fail, GW_SQS_E_INVALID_PARAMETER_VALUE,
                              "Message (user) attribute '%.*s' must contain a non-empty value of "
                              "type 'Binary'.",
                              nl, a->name.p);
        }
        a->value = (struct sl_slice){(const char *)bytes, len};
        return SL_OK;
    }
    const char *kind = a->type == GW_SQS_ATTR_NUMBER ? "Number" : "String";
    if (!has_s || sv.n == 0) {
        return entry_fail(fail, GW_SQS_E_INVALID_PARAMETER_VALUE,
                          "Message (user) attribute '%.*s' must contain a non-empty value of type "
                          "'%s'.",
                          nl, a->name.p, kind);
    }
    if (a->type == GW_SQS_ATTR_NUMBER && !number_valid(sv)) {
        return entry_fail(fail, GW_SQS_E_INVALID_PARAMETER_VALUE,
                          "Can't cast the value of message (user) attribute '%.*s' to a number.",
                          nl, a->name.p);
    }
    if (m[GW__SQS_IN_STRING_VALUE].has_bad) {
        return entry_fail(fail, GW_SQS_E_INVALID_MESSAGE_CONTENTS,
                          "Invalid binary character '#x%X' was found in the message attribute "
                          "'%.*s', the set of allowed characters is " CHARSET_TEXT,
                          gw__sqs_reported_char(d->r, m[GW__SQS_IN_STRING_VALUE].bad), nl,
                          a->name.p);
    }
    a->value = sv;
    return SL_OK;
}

static int decode_attrs(struct gw_sqs_dec *d, const struct gw__sqs_map_in *map,
                        struct gw_sqs_send_entry *e, struct gw_sqs_err *fail)
{
    size_t n = map->size;
    if (n == 0) {
        return SL_OK;
    }
    if (n > GW_SQS_MAX_MESSAGE_ATTRIBUTES) {
        return entry_fail(fail, GW_SQS_E_INVALID_PARAMETER_VALUE,
                          "Number of message attributes [%zu] exceeds the allowed maximum [%u].", n,
                          GW_SQS_MAX_MESSAGE_ATTRIBUTES);
    }
    struct gw_sqs_msg_attr *attrs = gw__sqs_dec_alloc(d, n, sizeof(*attrs));
    if (attrs == NULL) {
        return SL_ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        struct gw_sqs_msg_attr *a = &attrs[i];
        a->name = map->kept[i].name;
        if (!gw_sqs_attr_name_valid(a->name)) {
            return entry_fail(fail, GW_SQS_E_INVALID_PARAMETER_VALUE,
                              "Message (user) attribute name '%.*s' is invalid. Names can contain "
                              "alphanumeric characters, hyphens, underscores and periods, up to "
                              "256 characters; they must not start or end with a period, contain "
                              "two periods in a row, or start with AWS. or Amazon.",
                              (int)SL_MIN(a->name.n, 256), a->name.p);
        }
        int rc = decode_attr_value(d, &map->kept[i], a, fail);
        if (rc != SL_OK) {
            return rc;
        }
        e->size += a->name.n + a->data_type.n + a->value.n;
    }
    gw_sqs_msg_attrs_sort(attrs, n);
    e->attrs = attrs;
    e->attr_count = n;
    return SL_OK;
}

/* MessageSystemAttributes: only AWSTraceHeader, of DataType String. The
 * kept keys suffice: a map with more has a second key, which fails. */
static int decode_system_attrs(struct gw_sqs_dec *d, const struct gw__sqs_map_in *map,
                               struct gw_sqs_send_entry *e, struct gw_sqs_err *fail)
{
    for (size_t i = 0; i < map->n_kept; i++) {
        struct gw_sqs_msg_attr a = {.name = map->kept[i].name};
        if (!sl_slice_eq_cstr(a.name, "AWSTraceHeader")) {
            return entry_fail(fail, GW_SQS_E_INVALID_PARAMETER_VALUE,
                              "Message system attribute name '%.*s' is invalid.",
                              (int)SL_MIN(a.name.n, 256), a.name.p);
        }
        int rc = decode_attr_value(d, &map->kept[i], &a, fail);
        if (rc != SL_OK) {
            return rc;
        }
        if (!sl_slice_eq_cstr(a.data_type, "String")) {
            return entry_fail(fail, GW_SQS_E_INVALID_PARAMETER_VALUE,
                              "Message system attribute 'AWSTraceHeader' must be of type "
                              "'String'.");
        }
        e->has_trace_header = true;
        e->trace_header = a.value;
    }
    return SL_OK;
}

static int token_member(struct gw_sqs_dec *d, const struct gw_sqs_val *v, const char *name,
                        struct sl_slice *out, bool *has, struct gw_sqs_err *fail)
{
    int rc = gw__sqs_val_string(v, name, false, out, has, d->err);
    if (rc != SL_OK) {
        return rc;
    }
    if (*has && !gw__sqs_token_valid(*out)) {
        return entry_fail(fail, GW_SQS_E_INVALID_PARAMETER_VALUE,
                          "Value %.*s for parameter %s is invalid. Reason: %s can only include "
                          "alphanumeric and punctuation characters. 1 to 128 in length.",
                          (int)SL_MIN(out->n, 256), out->p, name, name);
    }
    return SL_OK;
}

int gw__sqs_decode_send_entry(struct gw_sqs_dec *d, const struct gw__sqs_obj_in *in,
                              struct gw_sqs_send_entry *e, struct gw_sqs_err *fail)
{
    const struct gw_sqs_val *m = in->m;
    bool has_body, has_attrs, has_sys_attrs;
    /* types first: a wrong JSON type fails the whole request */
    int rc =
        gw__sqs_val_string(&m[GW__SQS_IN_BODY], "MessageBody", false, &e->body, &has_body, d->err);
    if (rc == SL_OK) {
        rc = gw__sqs_val_container(&m[GW__SQS_IN_ATTRS], GW_SQS_J_OBJECT, "MessageAttributes",
                                   false, &has_attrs, d->err);
    }
    if (rc == SL_OK) {
        rc = gw__sqs_val_container(&m[GW__SQS_IN_SYS_ATTRS], GW_SQS_J_OBJECT,
                                   "MessageSystemAttributes", false, &has_sys_attrs, d->err);
    }
    if (rc != SL_OK) {
        return rc;
    }
    int32_t delay = 0;
    rc = gw__sqs_val_int(&m[GW__SQS_IN_DELAY], "DelaySeconds", false, 0, GW_SQS_MAX_DELAY_SECONDS,
                         "DelaySeconds must be >= 0 and <= 900.", &delay, &e->has_delay_seconds,
                         fail);
    if (rc != SL_OK) {
        /* a range error is the entry's; a type error the request's */
        if (fail->code == GW_SQS_E_SERIALIZATION && fail != d->err) {
            *d->err = *fail;
            return SL_EINVAL;
        }
        return fail == d->err ? rc : GW__SQS_ENTRY_FAILED;
    }
    e->delay_seconds = delay;

    if (!has_body || e->body.n == 0) {
        return entry_fail(fail, GW_SQS_E_MISSING_PARAMETER,
                          "The request must contain the parameter MessageBody.");
    }
    if (m[GW__SQS_IN_BODY].has_bad) {
        return entry_fail(fail, GW_SQS_E_INVALID_MESSAGE_CONTENTS,
                          "Invalid binary character '#x%X' was found in the message body, the set "
                          "of allowed characters is " CHARSET_TEXT,
                          gw__sqs_reported_char(d->r, m[GW__SQS_IN_BODY].bad));
    }
    e->size = e->body.n;
    if (in->has_body_md5) {
        e->has_body_md5_ = true;
        memcpy(e->body_md5_, in->body_md5, sizeof(e->body_md5_));
    }
    if (has_attrs && in->maps[0] != NULL) {
        rc = decode_attrs(d, in->maps[0], e, fail);
        if (rc != SL_OK) {
            return rc;
        }
    }
    if (has_sys_attrs && in->maps[1] != NULL) {
        rc = decode_system_attrs(d, in->maps[1], e, fail);
        if (rc != SL_OK) {
            return rc;
        }
    }
    rc = token_member(d, &m[GW__SQS_IN_GROUP], "MessageGroupId", &e->group_id, &e->has_group_id,
                      fail);
    if (rc != SL_OK) {
        return rc;
    }
    return token_member(d, &m[GW__SQS_IN_DEDUP], "MessageDeduplicationId", &e->dedup_id,
                        &e->has_dedup_id, fail);
}
