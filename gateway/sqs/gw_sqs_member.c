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

static enum gw_sqs_jtype jtype_of(const json_t *v)
{
    if (v == NULL) {
        return GW_SQS_J_ABSENT;
    }
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return GW_SQS_J_OBJECT;
    case JSON_ARRAY:
        return GW_SQS_J_ARRAY;
    case JSON_STRING:
        return GW_SQS_J_STRING;
    case JSON_INTEGER:
        return GW_SQS_J_INTEGER;
    case JSON_REAL:
        return GW_SQS_J_REAL;
    case JSON_TRUE:
        return GW_SQS_J_TRUE;
    case JSON_FALSE:
        return GW_SQS_J_FALSE;
    case JSON_NULL:
        break;
    }
    return GW_SQS_J_NULL;
}

void gw__sqs_val_of(const json_t *v, struct gw_sqs_val *out)
{
    *out = (struct gw_sqs_val){.type = jtype_of(v)};
    if (out->type == GW_SQS_J_STRING) {
        out->s = (struct sl_slice){json_string_value(v), json_string_length(v)};
    } else if (out->type == GW_SQS_J_INTEGER) {
        out->i = (int64_t)json_integer_value(v);
    }
}

int gw__sqs_jtype_error(enum gw_sqs_jtype type, const char *expected, struct gw_sqs_err *err)
{
    switch (type) {
    case GW_SQS_J_OBJECT:
        return gw_sqs_err_set(err, GW_SQS_E_SERIALIZATION,
                              "Start of structure or map found where not expected.");
    case GW_SQS_J_ARRAY:
        return gw_sqs_err_set(err, GW_SQS_E_SERIALIZATION,
                              "Start of list found where not expected.");
    case GW_SQS_J_STRING:
        return gw_sqs_err_set(err, GW_SQS_E_SERIALIZATION,
                              "STRING_VALUE can not be converted to %s", expected);
    case GW_SQS_J_INTEGER:
    case GW_SQS_J_REAL:
        return gw_sqs_err_set(err, GW_SQS_E_SERIALIZATION,
                              "NUMBER_VALUE can not be converted to %s", expected);
    case GW_SQS_J_TRUE:
    case GW_SQS_J_FALSE:
        return gw_sqs_err_set(err, GW_SQS_E_SERIALIZATION,
                              "BOOLEAN_VALUE can not be converted to %s", expected);
    case GW_SQS_J_ABSENT:
    case GW_SQS_J_NULL:
        break;
    }
    return gw_sqs_err_set(err, GW_SQS_E_SERIALIZATION, NULL);
}

int gw__sqs_type_error(const json_t *value, const char *expected, struct gw_sqs_err *err)
{
    return gw__sqs_jtype_error(jtype_of(value), expected, err);
}

int gw__sqs_missing(struct gw_sqs_err *err, const char *name)
{
    return gw_sqs_err_set(err, GW_SQS_E_MISSING_PARAMETER,
                          "The request must contain the parameter %s.", name);
}

/* A member's value; null counts as absent, as in AWS. */
static void member(const json_t *obj, const char *name, struct gw_sqs_val *out)
{
    gw__sqs_val_of(obj != NULL ? json_object_get(obj, name) : NULL, out);
}

static bool val_absent(const struct gw_sqs_val *v)
{
    return v->type == GW_SQS_J_ABSENT || v->type == GW_SQS_J_NULL;
}

int gw__sqs_val_string(const struct gw_sqs_val *v, const char *name, bool required,
                       struct sl_slice *out, bool *has, struct gw_sqs_err *err)
{
    *out = (struct sl_slice){NULL, 0};
    if (has != NULL) {
        *has = false;
    }
    if (val_absent(v)) {
        return required ? gw__sqs_missing(err, name) : SL_OK;
    }
    if (v->type != GW_SQS_J_STRING) {
        return gw__sqs_jtype_error(v->type, "a String", err);
    }
    *out = v->s;
    if (required && out->n == 0) {
        return gw__sqs_missing(err, name);
    }
    if (has != NULL) {
        *has = true;
    }
    return SL_OK;
}

int gw__sqs_member_string(const json_t *obj, const char *name, bool required, struct sl_slice *out,
                          bool *has, struct gw_sqs_err *err)
{
    struct gw_sqs_val v;
    member(obj, name, &v);
    return gw__sqs_val_string(&v, name, required, out, has, err);
}

int gw__sqs_val_int(const struct gw_sqs_val *v, const char *name, bool required, int64_t min,
                    int64_t max, const char *reason, int32_t *out, bool *has,
                    struct gw_sqs_err *err)
{
    if (has != NULL) {
        *has = false;
    }
    if (val_absent(v)) {
        return required ? gw__sqs_missing(err, name) : SL_OK;
    }
    if (v->type != GW_SQS_J_INTEGER) {
        return gw__sqs_jtype_error(v->type, "an Integer", err);
    }
    int64_t x = v->i;
    if (x < INT32_MIN || x > INT32_MAX) {
        return gw_sqs_err_set(err, GW_SQS_E_SERIALIZATION,
                              "NUMBER_VALUE can not be converted to an Integer");
    }
    if (x < min || x > max) {
        return gw_sqs_err_set(err, GW_SQS_E_INVALID_PARAMETER_VALUE,
                              "Value %" PRId64 " for parameter %s is invalid. Reason: %s", x, name,
                              reason);
    }
    *out = (int32_t)x;
    if (has != NULL) {
        *has = true;
    }
    return SL_OK;
}

int gw__sqs_val_queue(struct gw_sqs_dec *d, const struct gw_sqs_val *v,
                      struct gw_sqs_queue_ref *out)
{
    struct sl_slice url;
    int rc = gw__sqs_val_string(v, "QueueUrl", true, &url, NULL, d->err);
    return rc != SL_OK ? rc : gw_sqs_parse_queue_url(url, out, d->err);
}

/* An Integer member in [min, max]; reason completes SQS's sentence. */
int gw__sqs_member_int(const json_t *obj, const char *name, bool required, int64_t min, int64_t max,
                       const char *reason, int32_t *out, bool *has, struct gw_sqs_err *err)
{
    struct gw_sqs_val v;
    member(obj, name, &v);
    return gw__sqs_val_int(&v, name, required, min, max, reason, out, has, err);
}

int gw__sqs_val_container(const struct gw_sqs_val *v, enum gw_sqs_jtype want, const char *name,
                          bool required, bool *has, struct gw_sqs_err *err)
{
    *has = false;
    if (val_absent(v)) {
        return required ? gw__sqs_missing(err, name) : SL_OK;
    }
    if (v->type != want) {
        return gw__sqs_jtype_error(v->type, want == GW_SQS_J_OBJECT ? "a Map" : "a List", err);
    }
    *has = true;
    return SL_OK;
}

/* A Map or List member: the value, or NULL when absent. */
static int member_container(const json_t *obj, const char *name, enum gw_sqs_jtype want,
                            bool required, const json_t **out, struct gw_sqs_err *err)
{
    struct gw_sqs_val v;
    member(obj, name, &v);
    bool has;
    int rc = gw__sqs_val_container(&v, want, name, required, &has, err);
    *out = has ? json_object_get(obj, name) : NULL;
    return rc;
}

int gw__sqs_member_object(const json_t *obj, const char *name, bool required, const json_t **out,
                          struct gw_sqs_err *err)
{
    return member_container(obj, name, GW_SQS_J_OBJECT, required, out, err);
}

int gw__sqs_member_array(const json_t *obj, const char *name, bool required, const json_t **out,
                         struct gw_sqs_err *err)
{
    return member_container(obj, name, GW_SQS_J_ARRAY, required, out, err);
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

uint32_t gw__sqs_unpair_surrogates(struct sl_slice body, char *dst)
{
    uint32_t first = 0;
    const char *p = body.p;
    for (size_t i = 0; i + 1 < body.n; i++) {
        const char *bs = memchr(p + i, '\\', body.n - i - 1);
        if (bs == NULL) {
            break;
        }
        i = (size_t)(bs - p);
        if (p[i + 1] != 'u' || i + 6 > body.n) {
            i++; /* "\\", "\"" ...: the escaped character is not an escape */
            continue;
        }
        int v = hex4(p + i + 2);
        bool high = v >= 0xD800 && v <= 0xDBFF;
        bool low = v >= 0xDC00 && v <= 0xDFFF;
        if (high && i + 12 <= body.n && p[i + 6] == '\\' && p[i + 7] == 'u') {
            int next = hex4(p + i + 8);
            if (next >= 0xDC00 && next <= 0xDFFF) {
                i += 11; /* a proper pair */
                continue;
            }
        }
        if (high || low) {
            if (first == 0) {
                first = (uint32_t)v;
            }
            if (dst == NULL) {
                break;
            }
            memset(dst + i + 2, 'F', 4);
        }
        i += 5;
    }
    return first;
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
    *first = gw__sqs_unpair_surrogates(body, copy);
    json_error_t jerr;
    json_t *doc = json_loadb(copy, body.n, JSON_ALLOW_NUL, &jerr);
    free(copy);
    return doc;
}
