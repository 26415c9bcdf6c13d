/*
 * gw_sqs_query.c -- the SQS query protocol's requests: a form
 * (application/x-www-form-urlencoded body, or a GET's query string) into
 * the typed requests of gw_sqs.h, with exactly the JSON protocol's
 * validation, limits and errors.
 *
 * How: the form's parameters are translated into the document the JSON
 * protocol would have sent for the same call, driven by one table of each
 * action's members (below), and that document goes through the JSON
 * decoder (gw_sqs_decode_doc). Member names and the flattening rules are
 * the query serializer's of the SQS API model (botocore's SQS
 * service-2.json, "serviceType: query"), as the Amazon SQS API Reference's
 * query examples show them:
 *  - scalars by name ("QueueUrl=..."); numbers arrive as text and become
 *    JSON numbers here ("DelaySeconds=5");
 *  - flattened lists "X.N" ("AttributeName.1=All"), N counting from 1;
 *  - flattened maps "X.N.Name/Value" (Attribute) or "X.N.Key/Value" (Tag);
 *  - message attributes "X.N.Name" and "X.N.Value.DataType /
 *    StringValue / BinaryValue" (BinaryValue in base64, as in JSON);
 *  - entry lists "XRequestEntry.N.<member>" of the batch actions;
 *  - an empty list is sent as "X=" alone.
 * The items of a list are taken in index order; gaps are allowed (AWS's
 * query parsers sort by index too). An index that is not a decimal number
 * from 1 (0, "01", "x") and a parameter given twice are
 * InvalidQueryParameter; bad percent-encoding is MalformedQueryString; a
 * number that is not one is InvalidParameterValue ("Value x for parameter
 * MaxNumberOfMessages is invalid."); a Version other than 2012-11-05 is
 * InvalidParameterValue. A missing Version is taken as 2012-11-05: kombu's
 * SQS transport (Celery) builds its ReceiveMessage long poll by hand
 * without one, and SQS serves it. Parameters the action does
 * not have (the presigned URL's X-Amz-*, AUTHPARAMS) are ignored, as the
 * JSON decoder ignores unknown members.
 *
 * Threading: pure; any thread. Ownership: the decoded request owns its
 * document (gw_sqs.h); the form may be freed after decoding.
 */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "gw_text.h"
#include "gw_sqs.h"

/* ---- the members of each action ------------------------------------------------ */

enum qkind {
    Q_END,
    Q_STR,     /* scalar string */
    Q_INT,     /* scalar integer */
    Q_LIST,    /* X.N = string */
    Q_NAMEMAP, /* X.N.Name / X.N.Value */
    Q_KEYMAP,  /* X.N.Key / X.N.Value */
    Q_ATTRS,   /* X.N.Name / X.N.Value.{DataType,StringValue,BinaryValue} */
    Q_ENTRIES, /* X.N.<member of sub> */
};

struct qmember {
    const char *form; /* the query protocol's name */
    const char *json; /* the JSON protocol's member */
    enum qkind kind;
    const struct qmember *sub; /* Q_ENTRIES: the entry's members */
};

#define STR(n)                                                                                     \
    {                                                                                              \
        n, n, Q_STR, NULL                                                                          \
    }
#define INT(n)                                                                                     \
    {                                                                                              \
        n, n, Q_INT, NULL                                                                          \
    }
#define END                                                                                        \
    {                                                                                              \
        NULL, NULL, Q_END, NULL                                                                    \
    }

static const struct qmember send_entry[] = {
    STR("Id"),
    STR("MessageBody"),
    INT("DelaySeconds"),
    {"MessageAttribute", "MessageAttributes", Q_ATTRS, NULL},
    {"MessageSystemAttribute", "MessageSystemAttributes", Q_ATTRS, NULL},
    STR("MessageDeduplicationId"),
    STR("MessageGroupId"),
    END,
};
static const struct qmember delete_entry[] = {STR("Id"), STR("ReceiptHandle"), END};
static const struct qmember visibility_entry[] = {
    STR("Id"),
    STR("ReceiptHandle"),
    INT("VisibilityTimeout"),
    END,
};

static const struct qmember create_queue[] = {
    STR("QueueName"),
    {"Attribute", "Attributes", Q_NAMEMAP, NULL},
    {"Tag", "tags", Q_KEYMAP, NULL},
    END,
};
static const struct qmember get_queue_url[] = {
    STR("QueueName"),
    STR("QueueOwnerAWSAccountId"),
    END,
};
static const struct qmember list_queues[] = {
    STR("QueueNamePrefix"),
    STR("NextToken"),
    INT("MaxResults"),
    END,
};
static const struct qmember queue_only[] = {STR("QueueUrl"), END};
static const struct qmember get_queue_attributes[] = {
    STR("QueueUrl"),
    {"AttributeName", "AttributeNames", Q_LIST, NULL},
    END,
};
static const struct qmember set_queue_attributes[] = {
    STR("QueueUrl"),
    {"Attribute", "Attributes", Q_NAMEMAP, NULL},
    END,
};
static const struct qmember send_message[] = {
    STR("QueueUrl"),
    STR("MessageBody"),
    INT("DelaySeconds"),
    {"MessageAttribute", "MessageAttributes", Q_ATTRS, NULL},
    {"MessageSystemAttribute", "MessageSystemAttributes", Q_ATTRS, NULL},
    STR("MessageDeduplicationId"),
    STR("MessageGroupId"),
    END,
};
static const struct qmember send_message_batch[] = {
    STR("QueueUrl"),
    {"SendMessageBatchRequestEntry", "Entries", Q_ENTRIES, send_entry},
    END,
};
static const struct qmember receive_message[] = {
    STR("QueueUrl"),
    {"AttributeName", "AttributeNames", Q_LIST, NULL},
    {"MessageSystemAttributeName", "MessageSystemAttributeNames", Q_LIST, NULL},
    {"MessageAttributeName", "MessageAttributeNames", Q_LIST, NULL},
    INT("MaxNumberOfMessages"),
    INT("VisibilityTimeout"),
    INT("WaitTimeSeconds"),
    STR("ReceiveRequestAttemptId"),
    END,
};
static const struct qmember delete_message[] = {STR("QueueUrl"), STR("ReceiptHandle"), END};
static const struct qmember delete_message_batch[] = {
    STR("QueueUrl"),
    {"DeleteMessageBatchRequestEntry", "Entries", Q_ENTRIES, delete_entry},
    END,
};
static const struct qmember change_message_visibility[] = {
    STR("QueueUrl"),
    STR("ReceiptHandle"),
    INT("VisibilityTimeout"),
    END,
};
static const struct qmember change_message_visibility_batch[] = {
    STR("QueueUrl"),
    {"ChangeMessageVisibilityBatchRequestEntry", "Entries", Q_ENTRIES, visibility_entry},
    END,
};
static const struct qmember list_dead_letter_source_queues[] = {
    STR("QueueUrl"),
    STR("NextToken"),
    INT("MaxResults"),
    END,
};
static const struct qmember start_message_move_task[] = {
    STR("SourceArn"),
    STR("DestinationArn"),
    INT("MaxNumberOfMessagesPerSecond"),
    END,
};
static const struct qmember list_message_move_tasks[] = {
    STR("SourceArn"),
    INT("MaxResults"),
    END,
};
static const struct qmember cancel_message_move_task[] = {STR("TaskHandle"), END};
static const struct qmember tag_queue[] = {
    STR("QueueUrl"),
    {"Tag", "Tags", Q_KEYMAP, NULL},
    END,
};
static const struct qmember untag_queue[] = {
    STR("QueueUrl"),
    {"TagKey", "TagKeys", Q_LIST, NULL},
    END,
};
static const struct qmember add_permission[] = {
    STR("QueueUrl"),
    STR("Label"),
    {"AWSAccountId", "AWSAccountIds", Q_LIST, NULL},
    {"ActionName", "Actions", Q_LIST, NULL},
    END,
};
static const struct qmember remove_permission[] = {STR("QueueUrl"), STR("Label"), END};

#define delete_queue queue_only
#define purge_queue queue_only
#define list_queue_tags queue_only

static const struct qmember *const action_members[GW_SQS_ACT__COUNT] = {
#define GW_SQS_ACTION(name, camel, snake, handler) [GW_SQS_ACT_##name] = (snake),
#include "gw_actions.def"
#undef GW_SQS_ACTION
};

#undef delete_queue
#undef purge_queue
#undef list_queue_tags
#undef STR
#undef INT
#undef END

/* ---- the form ------------------------------------------------------------------ */

struct qparam {
    struct sl_slice key;   /* full decoded name, for messages */
    struct sl_slice rest;  /* the part of key the current level matches */
    struct sl_slice value; /* decoded */
};

struct qform {
    struct qparam *params;
    size_t n;
    char *text; /* decoded names and values */
};

/* Percent-decodes in into out ('+' is a space, as in every form).
 * Returns the decoded length, or -1 for a '%' without two hex digits. */
long gw_sqs_url_decode(struct sl_slice in, char *out)
{
    size_t o = 0;
    for (size_t i = 0; i < in.n; i++) {
        char c = in.p[i];
        if (c == '+') {
            c = ' ';
        } else if (c == '%') {
            if (i + 2 >= in.n) {
                return -1;
            }
            int hi = sl_hex_digit(in.p[i + 1]);
            int lo = sl_hex_digit(in.p[i + 2]);
            if (hi < 0 || lo < 0) {
                return -1;
            }
            c = (char)(hi * 16 + lo);
            i += 2;
        }
        out[o++] = c;
    }
    return (long)o;
}

static int malformed(struct gw_sqs_err *err, struct sl_slice part)
{
    return gw_sqs_err_set(err, GW_SQS_E_MALFORMED_QUERY_STRING,
                          "The query string contains a syntax error: bad percent-encoding in "
                          "'%.*s'.",
                          (int)SL_MIN(part.n, 128), part.p);
}

/* Splits "k=v" (v may be absent) and decodes both into out. */
static int decode_pair(struct sl_slice part, char *out, struct qparam *p, struct gw_sqs_err *err)
{
    const char *eq = memchr(part.p, '=', part.n);
    struct sl_slice k = {part.p, eq != NULL ? (size_t)(eq - part.p) : part.n};
    struct sl_slice v = eq != NULL ? (struct sl_slice){eq + 1, part.n - k.n - 1}
                                   : (struct sl_slice){part.p + part.n, 0};
    long kn = gw_sqs_url_decode(k, out);
    long vn = kn < 0 ? -1 : gw_sqs_url_decode(v, out + kn);
    if (vn < 0) {
        return malformed(err, part);
    }
    p->key = (struct sl_slice){out, (size_t)kn};
    p->rest = p->key;
    p->value = (struct sl_slice){out + kn, (size_t)vn};
    return SL_OK;
}

static int compare_keys(const void *a, const void *b)
{
    const struct qparam *x = a;
    const struct qparam *y = b;
    int c = memcmp(x->key.p, y->key.p, SL_MIN(x->key.n, y->key.n));
    if (c != 0) {
        return c;
    }
    return (x->key.n > y->key.n) - (x->key.n < y->key.n);
}

static void form_free(struct qform *f)
{
    free(f->params);
    free(f->text);
    memset(f, 0, sizeof(*f));
}

/* Parses every parameter of form into f (sorted by name, each name once).
 * Returns SL_OK, SL_EINVAL with err, or SL_ENOMEM. */
static int form_parse(struct sl_slice form, struct qform *f, struct gw_sqs_err *err)
{
    memset(f, 0, sizeof(*f));
    size_t parts = 1;
    for (size_t i = 0; i < form.n; i++) {
        parts += form.p[i] == '&';
    }
    if (parts > GW_SQS_QUERY_MAX_PARAMS) {
        /* counted before anything is allocated: "&&&&..." must not cost
         * memory in proportion to its length */
        size_t nonempty = 0;
        for (size_t i = 0; i < form.n; i++) {
            nonempty += form.p[i] != '&' && (i + 1 == form.n || form.p[i + 1] == '&');
        }
        if (nonempty > GW_SQS_QUERY_MAX_PARAMS) {
            return gw_sqs_err_set(err, GW_SQS_E_INVALID_QUERY_PARAMETER,
                                  "The request has %zu parameters; at most %u are accepted.",
                                  nonempty, GW_SQS_QUERY_MAX_PARAMS);
        }
        parts = SL_MAX(nonempty, (size_t)1);
    }
    f->params = sl_trymalloc(parts * sizeof(*f->params));
    f->text = sl_trymalloc(form.n + 1);
    if (f->params == NULL || f->text == NULL) {
        form_free(f);
        gw_sqs_err_set(err, GW_SQS_E_INTERNAL_ERROR, NULL);
        return SL_ENOMEM;
    }
    char *out = f->text;
    size_t at = 0;
    while (at <= form.n) {
        const char *amp = at < form.n ? memchr(form.p + at, '&', form.n - at) : NULL;
        size_t end = amp != NULL ? (size_t)(amp - form.p) : form.n;
        struct sl_slice part = {form.p + at, end - at};
        if (part.n > 0) {
            struct qparam *p = &f->params[f->n];
            if (decode_pair(part, out, p, err) != SL_OK) {
                form_free(f);
                return SL_EINVAL;
            }
            out += p->key.n + p->value.n;
            f->n++;
        }
        at = end + 1;
    }
    qsort(f->params, f->n, sizeof(*f->params), compare_keys);
    for (size_t i = 1; i < f->n; i++) {
        if (sl_slice_eq(f->params[i - 1].key, f->params[i].key)) {
            struct sl_slice k = f->params[i].key;
            form_free(f);
            return gw_sqs_err_set(err, GW_SQS_E_INVALID_QUERY_PARAMETER,
                                  "The parameter %.*s is given more than once.",
                                  (int)SL_MIN(k.n, 128), k.p);
        }
    }
    return SL_OK;
}

static const struct qparam *form_get(const struct qform *f, const char *name)
{
    for (size_t i = 0; i < f->n; i++) {
        if (sl_slice_eq_cstr(f->params[i].key, name)) {
            return &f->params[i];
        }
    }
    return NULL;
}

/* The Action of an already parsed form. */
static int form_action(const struct qform *f, enum gw_sqs_action *out, struct gw_sqs_err *err)
{
    const struct qparam *a = form_get(f, "Action");
    if (a == NULL || a->value.n == 0) {
        return gw_sqs_err_set(err, GW_SQS_E_MISSING_ACTION,
                              "The request must contain the parameter Action.");
    }
    if (!gw_sqs_action_from_name(a->value, out)) {
        return gw_sqs_err_set(err, GW_SQS_E_UNKNOWN_OPERATION,
                              "The action %.*s is not valid for this endpoint.",
                              (int)SL_MIN(a->value.n, 128), a->value.p);
    }
    return SL_OK;
}

int gw_sqs_query_action(struct sl_slice form, enum gw_sqs_action *out, struct gw_sqs_err *err)
{
    /* Only the Action parameter is decoded: the per-action cap applies
     * before the rest of the form is looked at. */
    size_t at = 0;
    while (at < form.n) {
        const char *amp = memchr(form.p + at, '&', form.n - at);
        size_t end = amp != NULL ? (size_t)(amp - form.p) : form.n;
        struct sl_slice part = {form.p + at, end - at};
        if (part.n > 7 && memcmp(part.p, "Action=", 7) == 0) {
            char name[64];
            struct sl_slice v = {part.p + 7, part.n - 7};
            if (v.n >= sizeof(name)) {
                return gw_sqs_err_set(err, GW_SQS_E_UNKNOWN_OPERATION,
                                      "The action %.*s... is not valid for this endpoint.", 32,
                                      v.p);
            }
            long n = gw_sqs_url_decode(v, name);
            if (n < 0) {
                return malformed(err, part);
            }
            if (!gw_sqs_action_from_name((struct sl_slice){name, (size_t)n}, out)) {
                return gw_sqs_err_set(err, GW_SQS_E_UNKNOWN_OPERATION,
                                      "The action %.*s is not valid for this endpoint.", (int)n,
                                      name);
            }
            return SL_OK;
        }
        at = end + 1;
    }
    return gw_sqs_err_set(err, GW_SQS_E_MISSING_ACTION,
                          "The request must contain the parameter Action.");
}

/* ---- form -> JSON document ------------------------------------------------------ */

/* One parameter of a list member: "X.<index><suffix>". */
struct qitem {
    uint32_t index;
    struct sl_slice suffix; /* "" or ".Name", ".Value.DataType", ".Id" ... */
    const struct qparam *param;
};

static int compare_items(const void *a, const void *b)
{
    const struct qitem *x = a;
    const struct qitem *y = b;
    if (x->index != y->index) {
        return x->index < y->index ? -1 : 1;
    }
    int c = memcmp(x->suffix.p, y->suffix.p, SL_MIN(x->suffix.n, y->suffix.n));
    return c != 0 ? c : (x->suffix.n > y->suffix.n) - (x->suffix.n < y->suffix.n);
}

static int bad_index(struct gw_sqs_err *err, struct sl_slice key)
{
    return gw_sqs_err_set(err, GW_SQS_E_INVALID_QUERY_PARAMETER,
                          "The parameter %.*s has an invalid list index; indexes are decimal "
                          "numbers counting from 1.",
                          (int)SL_MIN(key.n, 128), key.p);
}

static json_t *json_text(struct sl_slice s)
{
    return json_stringn(s.p, s.n);
}

static int not_utf8(struct gw_sqs_err *err, struct sl_slice key)
{
    return gw_sqs_err_set(err, GW_SQS_E_INVALID_PARAMETER_VALUE,
                          "Value for parameter %.*s is invalid. Reason: it is not valid UTF-8.",
                          (int)SL_MIN(key.n, 128), key.p);
}

/* "-?[0-9]{1,18}" as a JSON integer (the JSON decoder checks the range). */
static int scalar_int(const struct qparam *p, json_t **out, struct gw_sqs_err *err)
{
    struct sl_slice v = p->value;
    size_t i = v.n > 0 && v.p[0] == '-';
    bool ok = v.n > i && v.n - i <= 18;
    long long n = 0;
    for (; ok && i < v.n; i++) {
        ok = v.p[i] >= '0' && v.p[i] <= '9';
        n = n * 10 + (v.p[i] - '0');
    }
    if (!ok) {
        bool printable = gw_json_utf8_valid(v);
        return gw_sqs_err_set(err, GW_SQS_E_INVALID_PARAMETER_VALUE,
                              "Value %.*s for parameter %.*s is invalid. Reason: it must be an "
                              "integer.",
                              printable ? (int)SL_MIN(v.n, 64) : 0, v.p, (int)SL_MIN(p->key.n, 128),
                              p->key.p);
    }
    *out = json_integer(v.p[0] == '-' ? -n : n);
    return SL_OK;
}

static int build_struct(const struct qparam *params, size_t n, const struct qmember *members,
                        json_t *obj, struct gw_sqs_err *err);

static int set_new(json_t *obj, const char *key, json_t *value, struct gw_sqs_err *err)
{
    if (value == NULL || json_object_set_new(obj, key, value) != 0) {
        return gw_sqs_err_set(err, GW_SQS_E_INTERNAL_ERROR, NULL);
    }
    return SL_OK;
}

/* The items of list member m among params, sorted by index. *items is
 * malloc'd (NULL when there are none); *bare tells whether "X=" (an empty
 * list) was sent. */
static int collect(const struct qparam *params, size_t n, const struct qmember *m,
                   struct qitem **items, size_t *count, bool *bare, struct gw_sqs_err *err)
{
    size_t flen = strlen(m->form);
    *items = NULL;
    *count = 0;
    *bare = false;
    for (size_t i = 0; i < n; i++) {
        struct sl_slice r = params[i].rest;
        if (r.n < flen || memcmp(r.p, m->form, flen) != 0) {
            continue;
        }
        if (r.n == flen) {
            *bare = true;
            continue;
        }
        if (r.p[flen] != '.') {
            continue; /* another member sharing the prefix ("TagKey" vs "Tag") */
        }
        size_t at = flen + 1;
        uint64_t index = 0;
        size_t digits = 0;
        while (at < r.n && r.p[at] >= '0' && r.p[at] <= '9' && digits < 10) {
            index = index * 10 + (uint64_t)(r.p[at] - '0');
            at++;
            digits++;
        }
        if (digits == 0 || digits > 9 || r.p[flen + 1] == '0' || (at < r.n && r.p[at] != '.')) {
            free(*items);
            *items = NULL;
            return bad_index(err, params[i].key);
        }
        if (*items == NULL) {
            *items = sl_trymalloc(n * sizeof(**items));
            if (*items == NULL) {
                return gw_sqs_err_set(err, GW_SQS_E_INTERNAL_ERROR, NULL);
            }
        }
        (*items)[(*count)++] = (struct qitem){(uint32_t)index, {r.p + at, r.n - at}, &params[i]};
    }
    if (*count > 1) {
        qsort(*items, *count, sizeof(**items), compare_items);
    }
    return SL_OK;
}

static int missing_member(struct gw_sqs_err *err, const struct qmember *m, uint32_t index,
                          const char *what)
{
    return gw_sqs_err_set(err, GW_SQS_E_MISSING_PARAMETER,
                          "The request must contain the parameter %s.%u.%s.", m->form, index, what);
}

/* One message attribute: Name, and Value.{DataType,StringValue,BinaryValue}
 * ({Binary,String}ListValue are reserved by SQS and ignored). */
static int build_attr(const struct qitem *it, size_t k, const struct qmember *m, json_t *map,
                      struct gw_sqs_err *err)
{
    struct sl_slice name = {NULL, 0};
    bool has_name = false;
    json_t *value = json_object();
    if (value == NULL) {
        return gw_sqs_err_set(err, GW_SQS_E_INTERNAL_ERROR, NULL);
    }
    static const char *const fields[] = {"DataType", "StringValue", "BinaryValue"};
    for (size_t i = 0; i < k; i++) {
        struct sl_slice s = it[i].suffix;
        const struct qparam *p = it[i].param;
        if (sl_slice_eq_cstr(s, ".Name")) {
            name = p->value;
            has_name = true;
            continue;
        }
        for (size_t f = 0; f < SL_ARRAY_LEN(fields); f++) {
            if (s.n == 7 + strlen(fields[f]) && memcmp(s.p, ".Value.", 7) == 0 &&
                memcmp(s.p + 7, fields[f], s.n - 7) == 0) {
                json_t *text = json_text(p->value);
                if (text == NULL) {
                    json_decref(value);
                    return not_utf8(err, p->key);
                }
                json_object_set_new(value, fields[f], text);
            }
        }
    }
    if (!has_name) {
        json_decref(value);
        return missing_member(err, m, it[0].index, "Name");
    }
    if (!gw_json_utf8_valid(name)) {
        json_decref(value);
        return not_utf8(err, it[0].param->key);
    }
    if (json_object_setn_new(map, name.p, name.n, value) != 0) {
        return gw_sqs_err_set(err, GW_SQS_E_INTERNAL_ERROR, NULL);
    }
    return SL_OK;
}

/* One map entry: key (".Name" or ".Key") and ".Value". */
static int build_pair(const struct qitem *it, size_t k, const struct qmember *m, json_t *map,
                      struct gw_sqs_err *err)
{
    const char *key_field = m->kind == Q_KEYMAP ? ".Key" : ".Name";
    const struct qparam *key = NULL;
    const struct qparam *val = NULL;
    for (size_t i = 0; i < k; i++) {
        if (sl_slice_eq_cstr(it[i].suffix, key_field)) {
            key = it[i].param;
        } else if (sl_slice_eq_cstr(it[i].suffix, ".Value")) {
            val = it[i].param;
        }
    }
    if (key == NULL) {
        return missing_member(err, m, it[0].index, key_field + 1);
    }
    if (val == NULL) {
        return missing_member(err, m, it[0].index, "Value");
    }
    json_t *text = json_text(val->value);
    if (text == NULL) {
        return not_utf8(err, val->key);
    }
    if (!gw_json_utf8_valid(key->value)) {
        json_decref(text);
        return not_utf8(err, key->key);
    }
    if (json_object_setn_new(map, key->value.p, key->value.n, text) != 0) {
        return gw_sqs_err_set(err, GW_SQS_E_INTERNAL_ERROR, NULL);
    }
    return SL_OK;
}

/* One entry of a batch: its parameters with the "X.N." prefix cut. */
static int build_entry(const struct qitem *it, size_t k, const struct qmember *m, json_t *arr,
                       struct gw_sqs_err *err)
{
    struct qparam *sub = sl_trymalloc(k * sizeof(*sub));
    json_t *entry = json_object();
    if (sub == NULL || entry == NULL) {
        free(sub);
        json_decref(entry);
        return gw_sqs_err_set(err, GW_SQS_E_INTERNAL_ERROR, NULL);
    }
    size_t n = 0;
    for (size_t i = 0; i < k; i++) {
        if (it[i].suffix.n > 1) { /* ".Id" -> "Id" */
            sub[n] = *it[i].param;
            sub[n].rest = (struct sl_slice){it[i].suffix.p + 1, it[i].suffix.n - 1};
            n++;
        }
    }
    int rc = build_struct(sub, n, m->sub, entry, err);
    free(sub);
    if (rc != SL_OK) {
        json_decref(entry);
        return rc;
    }
    if (json_array_append_new(arr, entry) != 0) { /* which released entry */
        return gw_sqs_err_set(err, GW_SQS_E_INTERNAL_ERROR, NULL);
    }
    return SL_OK;
}

static int build_list(const struct qparam *params, size_t n, const struct qmember *m, json_t *obj,
                      struct gw_sqs_err *err)
{
    struct qitem *items;
    size_t count;
    bool bare;
    int rc = collect(params, n, m, &items, &count, &bare, err);
    if (rc != SL_OK) {
        return rc;
    }
    if (count == 0 && !bare) {
        return SL_OK;
    }
    bool is_array = m->kind == Q_LIST || m->kind == Q_ENTRIES;
    json_t *c = is_array ? json_array() : json_object();
    if (c == NULL) {
        free(items);
        return gw_sqs_err_set(err, GW_SQS_E_INTERNAL_ERROR, NULL);
    }
    for (size_t i = 0; i < count && rc == SL_OK;) {
        size_t k = 1; /* the items of one index */
        while (i + k < count && items[i + k].index == items[i].index) {
            k++;
        }
        switch (m->kind) {
        case Q_LIST:
            for (size_t j = i; j < i + k && rc == SL_OK; j++) {
                if (items[j].suffix.n != 0) {
                    continue; /* "X.1.y": nothing of this list */
                }
                json_t *text = json_text(items[j].param->value);
                rc = text == NULL ? not_utf8(err, items[j].param->key)
                     : json_array_append_new(c, text) != 0
                         ? gw_sqs_err_set(err, GW_SQS_E_INTERNAL_ERROR, NULL)
                         : SL_OK;
            }
            break;
        case Q_NAMEMAP:
        case Q_KEYMAP:
            rc = build_pair(&items[i], k, m, c, err);
            break;
        case Q_ATTRS:
            rc = build_attr(&items[i], k, m, c, err);
            break;
        case Q_ENTRIES:
            rc = build_entry(&items[i], k, m, c, err);
            break;
        default:
            SL_ASSERT(false);
        }
        i += k;
    }
    free(items);
    if (rc != SL_OK) {
        json_decref(c);
        return rc;
    }
    return set_new(obj, m->json, c, err);
}

/* The members of one structure (the request, or a batch entry) from the
 * parameters whose rest names them. */
static int build_struct(const struct qparam *params, size_t n, const struct qmember *members,
                        json_t *obj, struct gw_sqs_err *err)
{
    for (const struct qmember *m = members; m->kind != Q_END; m++) {
        int rc = SL_OK;
        if (m->kind == Q_STR || m->kind == Q_INT) {
            const struct qparam *p = NULL;
            for (size_t i = 0; i < n && p == NULL; i++) {
                p = sl_slice_eq_cstr(params[i].rest, m->form) ? &params[i] : NULL;
            }
            if (p == NULL) {
                continue;
            }
            json_t *v = NULL;
            if (m->kind == Q_INT) {
                rc = scalar_int(p, &v, err);
            } else if ((v = json_text(p->value)) == NULL) {
                rc = not_utf8(err, p->key);
            }
            if (rc == SL_OK) {
                rc = set_new(obj, m->json, v, err);
            }
        } else {
            rc = build_list(params, n, m, obj, err);
        }
        if (rc != SL_OK) {
            return rc;
        }
    }
    return SL_OK;
}

static bool has_member(const struct qmember *members, const char *name)
{
    for (const struct qmember *m = members; m->kind != Q_END; m++) {
        if (strcmp(m->form, name) == 0) {
            return true;
        }
    }
    return false;
}

int gw_sqs_query_decode(struct sl_slice form, struct sl_slice queue_url, struct gw_sqs_request *out,
                        struct gw_sqs_err *err)
{
    memset(out, 0, sizeof(*out));
    out->action = GW_SQS_ACT__COUNT;
    struct qform f;
    int rc = form_parse(form, &f, err);
    if (rc != SL_OK) {
        return rc;
    }
    enum gw_sqs_action action = GW_SQS_ACT__COUNT;
    rc = form_action(&f, &action, err);
    out->action = action;
    const struct qparam *version = rc == SL_OK ? form_get(&f, "Version") : NULL;
    if (rc == SL_OK && version != NULL && !sl_slice_eq_cstr(version->value, GW_SQS_QUERY_VERSION)) {
        rc = gw_sqs_err_set(err, GW_SQS_E_INVALID_PARAMETER_VALUE,
                            "Value %.*s for parameter Version is invalid. Reason: the version "
                            "of this API is " GW_SQS_QUERY_VERSION ".",
                            gw_json_utf8_valid(version->value) ? (int)SL_MIN(version->value.n, 64)
                                                               : 0,
                            version->value.p);
    }
    json_t *doc = rc == SL_OK ? json_object() : NULL;
    if (rc == SL_OK && doc == NULL) {
        rc = gw_sqs_err_set(err, GW_SQS_E_INTERNAL_ERROR, NULL);
    }
    if (rc == SL_OK) {
        SL_ASSERT((unsigned)action < GW_SQS_ACT__COUNT); /* form_action found one */
        rc = build_struct(f.params, f.n, action_members[action], doc, err);
    }
    /* A request posted to a queue's URL names its queue by the path when
     * the form names none; a QueueUrl in the form wins. */
    if (rc == SL_OK && queue_url.n > 0 && has_member(action_members[action], "QueueUrl") &&
        json_object_get(doc, "QueueUrl") == NULL) {
        json_t *url = json_text(queue_url);
        rc = url == NULL ? not_utf8(err, SL_SLICE_LIT("QueueUrl"))
                         : set_new(doc, "QueueUrl", url, err);
    }
    form_free(&f);
    if (rc != SL_OK) {
        json_decref(doc);
        return err->code == GW_SQS_E_INTERNAL_ERROR ? SL_ENOMEM : SL_EINVAL;
    }
    return gw_sqs_decode_doc(action, doc, out, err);
}
