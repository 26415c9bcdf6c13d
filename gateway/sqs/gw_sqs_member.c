/*
 * gw_sqs_member.c -- the primitives the request decoders (gw_sqs_decode.c,
 * gw_sqs_message.c, gw_sqs_qattr.c) share: memory owned by a decoded
 * request, and reading one typed member out of a JSON object with the
 * errors SQS answers (SerializationException for a wrong JSON type,
 * MissingParameter, InvalidParameterValue for a range).
 *
 * Threading: pure; any thread. Ownership: blocks belong to the request
 * and are freed by gw_sqs_request_fini.
 */
#include "gw_sqs_member.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

struct gw_sqs_block {
    struct gw_sqs_block *next;
    max_align_t data[];
};

/* ---- allocation ------------------------------------------------------------ */

void *gw__sqs_alloc(struct gw_sqs_request *r, size_t count, size_t size)
{
    if (size != 0 && count > (SIZE_MAX - sizeof(struct gw_sqs_block)) / size) {
        return NULL;
    }
    size_t n = count * size;
    struct gw_sqs_block *b = sl_trymalloc(sizeof(*b) + n);
    if (b == NULL) {
        return NULL;
    }
    memset(b->data, 0, n);
    b->next = r->blocks_;
    r->blocks_ = b;
    return b->data;
}

void *gw__sqs_dec_alloc(struct gw_sqs_dec *d, size_t count, size_t size)
{
    void *p = gw__sqs_alloc(d->r, count == 0 ? 1 : count, size);
    if (p == NULL) {
        gw_sqs_err_set(d->err, GW_SQS_E_INTERNAL_ERROR, NULL);
    }
    return p;
}

/* ---- member access ------------------------------------------------------------ */

int gw__sqs_type_error(const json_t *value, const char *expected, struct gw_sqs_err *err)
{
    switch (json_typeof(value)) {
    case JSON_OBJECT:
        return gw_sqs_err_set(err, GW_SQS_E_SERIALIZATION,
                              "Start of structure or map found where not expected.");
    case JSON_ARRAY:
        return gw_sqs_err_set(err, GW_SQS_E_SERIALIZATION,
                              "Start of list found where not expected.");
    case JSON_STRING:
        return gw_sqs_err_set(err, GW_SQS_E_SERIALIZATION,
                              "STRING_VALUE can not be converted to %s", expected);
    case JSON_INTEGER:
    case JSON_REAL:
        return gw_sqs_err_set(err, GW_SQS_E_SERIALIZATION,
                              "NUMBER_VALUE can not be converted to %s", expected);
    case JSON_TRUE:
    case JSON_FALSE:
        return gw_sqs_err_set(err, GW_SQS_E_SERIALIZATION,
                              "BOOLEAN_VALUE can not be converted to %s", expected);
    case JSON_NULL:
        break;
    }
    return gw_sqs_err_set(err, GW_SQS_E_SERIALIZATION, NULL);
}

int gw__sqs_missing(struct gw_sqs_err *err, const char *name)
{
    return gw_sqs_err_set(err, GW_SQS_E_MISSING_PARAMETER,
                          "The request must contain the parameter %s.", name);
}

static const json_t *member(const json_t *obj, const char *name)
{
    const json_t *v = obj != NULL ? json_object_get(obj, name) : NULL;
    return v != NULL && !json_is_null(v) ? v : NULL;
}

int gw__sqs_member_string(const json_t *obj, const char *name, bool required, struct sl_slice *out,
                          bool *has, struct gw_sqs_err *err)
{
    const json_t *v = member(obj, name);
    *out = (struct sl_slice){NULL, 0};
    if (has != NULL) {
        *has = false;
    }
    if (v == NULL) {
        return required ? gw__sqs_missing(err, name) : SL_OK;
    }
    if (!json_is_string(v)) {
        return gw__sqs_type_error(v, "a String", err);
    }
    *out = (struct sl_slice){json_string_value(v), json_string_length(v)};
    if (required && out->n == 0) {
        return gw__sqs_missing(err, name);
    }
    if (has != NULL) {
        *has = true;
    }
    return SL_OK;
}

/* An Integer member in [min, max]; reason completes SQS's sentence. */
int gw__sqs_member_int(const json_t *obj, const char *name, bool required, int64_t min, int64_t max,
                       const char *reason, int32_t *out, bool *has, struct gw_sqs_err *err)
{
    const json_t *v = member(obj, name);
    if (has != NULL) {
        *has = false;
    }
    if (v == NULL) {
        return required ? gw__sqs_missing(err, name) : SL_OK;
    }
    if (!json_is_integer(v)) {
        return gw__sqs_type_error(v, "an Integer", err);
    }
    json_int_t x = json_integer_value(v);
    if (x < INT32_MIN || x > INT32_MAX) {
        return gw_sqs_err_set(err, GW_SQS_E_SERIALIZATION,
                              "NUMBER_VALUE can not be converted to an Integer");
    }
    if (x < min || x > max) {
        return gw_sqs_err_set(err, GW_SQS_E_INVALID_PARAMETER_VALUE,
                              "Value %" PRId64 " for parameter %s is invalid. Reason: %s",
                              (int64_t)x, name, reason);
    }
    *out = (int32_t)x;
    if (has != NULL) {
        *has = true;
    }
    return SL_OK;
}

int gw__sqs_member_object(const json_t *obj, const char *name, bool required, const json_t **out,
                          struct gw_sqs_err *err)
{
    const json_t *v = member(obj, name);
    *out = NULL;
    if (v == NULL) {
        return required ? gw__sqs_missing(err, name) : SL_OK;
    }
    if (!json_is_object(v)) {
        return gw__sqs_type_error(v, "a Map", err);
    }
    *out = v;
    return SL_OK;
}

int gw__sqs_member_array(const json_t *obj, const char *name, bool required, const json_t **out,
                         struct gw_sqs_err *err)
{
    const json_t *v = member(obj, name);
    *out = NULL;
    if (v == NULL) {
        return required ? gw__sqs_missing(err, name) : SL_OK;
    }
    if (!json_is_array(v)) {
        return gw__sqs_type_error(v, "a List", err);
    }
    *out = v;
    return SL_OK;
}

/* A list of strings into slices owned by the request. */
int gw__sqs_member_string_list(struct gw_sqs_dec *d, const json_t *obj, const char *name,
                               bool required, struct sl_slice **out, size_t *n)
{
    const json_t *arr;
    *out = NULL;
    *n = 0;
    int rc = gw__sqs_member_array(obj, name, required, &arr, d->err);
    if (rc != SL_OK || arr == NULL) {
        return rc;
    }
    size_t count = json_array_size(arr);
    if (required && count == 0) {
        return gw__sqs_missing(d->err, name);
    }
    struct sl_slice *s = gw__sqs_dec_alloc(d, count, sizeof(*s));
    if (s == NULL) {
        return SL_ENOMEM;
    }
    for (size_t i = 0; i < count; i++) {
        const json_t *v = json_array_get(arr, i);
        if (!json_is_string(v)) {
            return gw__sqs_type_error(v, "a String", d->err);
        }
        s[i] = (struct sl_slice){json_string_value(v), json_string_length(v)};
    }
    *out = s;
    *n = count;
    return SL_OK;
}

/* A map of strings (tags) into key/value slices owned by the request. */
int gw__sqs_member_string_map(struct gw_sqs_dec *d, const json_t *obj, const char *name,
                              bool required, struct gw_sqs_tag **out, size_t *n)
{
    const json_t *map;
    *out = NULL;
    *n = 0;
    int rc = gw__sqs_member_object(obj, name, required, &map, d->err);
    if (rc != SL_OK || map == NULL) {
        return rc;
    }
    size_t count = json_object_size(map);
    if (required && count == 0) {
        return gw__sqs_missing(d->err, name);
    }
    struct gw_sqs_tag *t = gw__sqs_dec_alloc(d, count, sizeof(*t));
    if (t == NULL) {
        return SL_ENOMEM;
    }
    const char *key;
    size_t key_len;
    json_t *v;
    size_t i = 0;
    json_object_keylen_foreach((json_t *)map, key, key_len, v)
    {
        if (!json_is_string(v)) {
            return gw__sqs_type_error(v, "a String", d->err);
        }
        t[i].key = (struct sl_slice){key, key_len};
        t[i].value = (struct sl_slice){json_string_value(v), json_string_length(v)};
        i++;
    }
    *out = t;
    *n = i;
    return SL_OK;
}

/* ---- request lifetime ---------------------------------------------------- */

void gw_sqs_request_fini(struct gw_sqs_request *r)
{
    while (r->blocks_ != NULL) {
        struct gw_sqs_block *b = r->blocks_;
        r->blocks_ = b->next;
        free(b);
    }
    json_decref(r->doc_);
    r->doc_ = NULL;
}

/* ---- escaped surrogates ---------------------------------------------------- */

static int hex4(const char *p)
{
    int v = 0;
    for (int i = 0; i < 4; i++) {
        int d = sl_hex_digit(p[i]);
        if (d < 0) {
            return -1;
        }
        v = v * 16 + d;
    }
    return v;
}

uint32_t gw__sqs_reported_char(const struct gw_sqs_request *r, uint32_t bad)
{
    return bad == 0xFFFF && r->surrogate_ != 0 ? r->surrogate_ : bad;
}

struct json_t *gw__sqs_load_surrogates(struct sl_slice body, const char *why, uint32_t *first)
{
    *first = 0;
    if (why == NULL || strstr(why, "invalid Unicode") == NULL) {
        return NULL;
    }
    char *copy = sl_trymalloc(body.n + 1);
    if (copy == NULL) {
        return NULL;
    }
    memcpy(copy, body.p, body.n);
    copy[body.n] = '\0';
    for (size_t i = 0; i + 1 < body.n; i++) {
        if (copy[i] != '\\') {
            continue;
        }
        if (copy[i + 1] != 'u' || i + 6 > body.n) {
            i++; /* "\\", "\"" ...: the escaped character is not an escape */
            continue;
        }
        int v = hex4(copy + i + 2);
        bool high = v >= 0xD800 && v <= 0xDBFF;
        bool low = v >= 0xDC00 && v <= 0xDFFF;
        if (high && i + 12 <= body.n && copy[i + 6] == '\\' && copy[i + 7] == 'u') {
            int next = hex4(copy + i + 8);
            if (next >= 0xDC00 && next <= 0xDFFF) {
                i += 11; /* a proper pair */
                continue;
            }
        }
        if (high || low) {
            if (*first == 0) {
                *first = (uint32_t)v;
            }
            memcpy(copy + i + 2, "FFFF", 4);
        }
        i += 5;
    }
    json_error_t jerr;
    json_t *doc = json_loadb(copy, body.n, JSON_ALLOW_NUL, &jerr);
    free(copy);
    return doc;
}
