/*
 * gw_sqs_qattr.c -- validation of the queue attributes of CreateQueue and
 * SetQueueAttributes: names, value ranges, FIFO-only attributes, and the
 * RedrivePolicy / RedriveAllowPolicy JSON documents, with SQS's error
 * codes and wording (Amazon SQS API Reference: CreateQueue,
 * SetQueueAttributes).
 *
 * What needs the store (does the dead-letter queue exist, does the queue
 * type change) is the action's business; this file checks what the
 * request alone can show.
 *
 * Threading: pure; any thread.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "gw_sqs_member.h"
#include "gw_sqs_qattr.h"

enum kind {
    K_INT,        /* decimal integer in [min, max] */
    K_BOOL,       /* "true" / "false" */
    K_POLICY,     /* "" or a JSON object */
    K_REDRIVE,    /* "" or {deadLetterTargetArn, maxReceiveCount} */
    K_ALLOW,      /* "" or a RedriveAllowPolicy document */
    K_DEDUP,      /* messageGroup | queue */
    K_THROUGHPUT, /* perQueue | perMessageGroupId */
    K_TEXT,       /* any string (KmsMasterKeyId) */
    K_ATTR_NAME,  /* a message attribute's name, not a reserved sluice.* one */
    K_ATTR_LIST,  /* a comma-separated list of those (gw_sqs_filter_keys_split) */
    K_READONLY,   /* counters, timestamps, ARN: not settable */
};

static const struct {
    enum kind kind;
    int64_t min, max;
    bool fifo_only;
    bool create_only;
    bool standard_only; /* sluice's own features of standard queues */
} rules[GW_SQS_QATTR__COUNT] = {
    [GW_SQS_QATTR_DELAY_SECONDS] = {K_INT, 0, 900, false, false, false},
    [GW_SQS_QATTR_MAXIMUM_MESSAGE_SIZE] = {K_INT, 1024, 1048576, false, false, false},
    [GW_SQS_QATTR_MESSAGE_RETENTION_PERIOD] = {K_INT, 60, 1209600, false, false, false},
    [GW_SQS_QATTR_RECEIVE_MESSAGE_WAIT_TIME_SECONDS] = {K_INT, 0, 20, false, false, false},
    [GW_SQS_QATTR_VISIBILITY_TIMEOUT] = {K_INT, 0, 43200, false, false, false},
    [GW_SQS_QATTR_POLICY] = {K_POLICY, 0, 0, false, false, false},
    [GW_SQS_QATTR_REDRIVE_POLICY] = {K_REDRIVE, 0, 0, false, false, false},
    [GW_SQS_QATTR_REDRIVE_ALLOW_POLICY] = {K_ALLOW, 0, 0, false, false, false},
    [GW_SQS_QATTR_FIFO_QUEUE] = {K_BOOL, 0, 0, false, true, false},
    [GW_SQS_QATTR_CONTENT_BASED_DEDUPLICATION] = {K_BOOL, 0, 0, true, false, false},
    [GW_SQS_QATTR_DEDUPLICATION_SCOPE] = {K_DEDUP, 0, 0, true, false, false},
    [GW_SQS_QATTR_FIFO_THROUGHPUT_LIMIT] = {K_THROUGHPUT, 0, 0, true, false, false},
    [GW_SQS_QATTR_KMS_MASTER_KEY_ID] = {K_TEXT, 0, 0, false, false, false},
    [GW_SQS_QATTR_KMS_DATA_KEY_REUSE_PERIOD_SECONDS] = {K_INT, 60, 86400, false, false, false},
    [GW_SQS_QATTR_SQS_MANAGED_SSE_ENABLED] = {K_BOOL, 0, 0, false, false, false},
    [GW_SQS_QATTR_APPROXIMATE_NUMBER_OF_MESSAGES] = {K_READONLY, 0, 0, false, false, false},
    [GW_SQS_QATTR_APPROXIMATE_NUMBER_OF_MESSAGES_NOT_VISIBLE] = {K_READONLY, 0, 0, false, false,
                                                                 false},
    [GW_SQS_QATTR_APPROXIMATE_NUMBER_OF_MESSAGES_DELAYED] = {K_READONLY, 0, 0, false, false, false},
    [GW_SQS_QATTR_CREATED_TIMESTAMP] = {K_READONLY, 0, 0, false, false, false},
    [GW_SQS_QATTR_LAST_MODIFIED_TIMESTAMP] = {K_READONLY, 0, 0, false, false, false},
    [GW_SQS_QATTR_QUEUE_ARN] = {K_READONLY, 0, 0, false, false, false},
    [GW_SQS_QATTR_SLUICE_PRIORITY] = {K_BOOL, 0, 0, false, false, true},
    [GW_SQS_QATTR_SLUICE_IDEMPOTENT_SENDS] = {K_BOOL, 0, 0, false, false, true},
    [GW_SQS_QATTR_SLUICE_EXCLUSIVITY_KEY] = {K_ATTR_NAME, 0, 0, false, false, true},
    [GW_SQS_QATTR_SLUICE_FILTER_KEYS] = {K_ATTR_LIST, 0, 0, false, false, true},
    [GW_SQS_QATTR_SLUICE_IDEMPOTENCY_WINDOW_SECONDS] = {K_INT, 1, GW_SQS_IDEMPOTENCY_WINDOW_MAX_S,
                                                        false, false, true},
};

#define MAX_RECEIVE_COUNT 1000
#define MAX_SOURCE_QUEUE_ARNS 10
#define QUOTE_MAX 300 /* bytes of a client value quoted in a message */

bool gw__sqs_qattr_applies(enum gw_sqs_qattr a, bool fifo)
{
    return fifo ? !rules[a].standard_only : !rules[a].fifo_only;
}

const struct gw_sqs_qattr_value *gw_sqs_qattrs_find(const struct gw_sqs_qattrs *a,
                                                    enum gw_sqs_qattr attr)
{
    for (size_t i = 0; i < a->count; i++) {
        if (a->items[i].attr == attr) {
            return &a->items[i];
        }
    }
    return NULL;
}

static int invalid_value(struct gw_sqs_err *err, enum gw_sqs_qattr a)
{
    return gw_sqs_err_set(err, GW_SQS_E_INVALID_ATTRIBUTE_VALUE,
                          "Invalid value for the parameter %s.", gw_sqs_qattr_name(a));
}

static bool parse_int(struct sl_slice v, int64_t *out)
{
    if (v.n == 0 || v.n > 18) {
        return false;
    }
    int64_t x = 0;
    for (size_t i = 0; i < v.n; i++) {
        if (v.p[i] < '0' || v.p[i] > '9') {
            return false;
        }
        x = x * 10 + (v.p[i] - '0');
    }
    *out = x;
    return true;
}

static int policy_error(struct gw_sqs_err *err, const char *param, struct sl_slice v,
                        const char *reason)
{
    return gw_sqs_err_set(err, GW_SQS_E_INVALID_PARAMETER_VALUE,
                          "Value %.*s for parameter %s is invalid. Reason: %s",
                          (int)SL_MIN(v.n, QUOTE_MAX), v.p, param, reason);
}

/* RedrivePolicy: {"deadLetterTargetArn": ARN, "maxReceiveCount": 1..1000}
 * (maxReceiveCount as a number or a numeric string, as SQS accepts both). */
static int check_redrive(struct sl_slice v, bool fifo, struct gw_sqs_err *err)
{
    static const char P[] = "RedrivePolicy";
    json_error_t jerr;
    json_t *doc = json_loadb(v.p, v.n, 0, &jerr);
    int rc = SL_OK;
    if (doc == NULL || !json_is_object(doc)) {
        rc = policy_error(err, P, v, "Invalid JSON.");
        goto out;
    }
    const char *key;
    json_t *val;
    json_object_foreach(doc, key, val)
    {
        if (strcmp(key, "deadLetterTargetArn") != 0 && strcmp(key, "maxReceiveCount") != 0) {
            rc = policy_error(err, P, v,
                              "Only following attributes are supported: [deadLetterTargetArn, "
                              "maxReceiveCount].");
            goto out;
        }
    }
    const json_t *arn = json_object_get(doc, "deadLetterTargetArn");
    const json_t *count = json_object_get(doc, "maxReceiveCount");
    if (arn == NULL) {
        rc = policy_error(err, P, v,
                          "Redrive policy does not contain mandatory attribute: "
                          "deadLetterTargetArn.");
        goto out;
    }
    if (count == NULL) {
        rc = policy_error(err, P, v,
                          "Redrive policy does not contain mandatory attribute: maxReceiveCount.");
        goto out;
    }
    struct gw_sqs_arn parsed;
    if (!json_is_string(arn) ||
        !gw_sqs_parse_arn((struct sl_slice){json_string_value(arn), json_string_length(arn)},
                          &parsed)) {
        rc = policy_error(err, P, v, "Invalid value for deadLetterTargetArn.");
        goto out;
    }
    bool dlq_fifo;
    (void)gw_sqs_queue_name_valid(parsed.name, &dlq_fifo);
    if (dlq_fifo != fifo) {
        rc = policy_error(err, P, v,
                          "Dead-letter target must be the same type of queue (standard or FIFO) "
                          "as the source.");
        goto out;
    }
    int64_t n = 0;
    bool ok = false;
    if (json_is_integer(count)) {
        n = json_integer_value(count);
        ok = true;
    } else if (json_is_string(count)) {
        ok = parse_int((struct sl_slice){json_string_value(count), json_string_length(count)}, &n);
    }
    if (!ok || n < 1 || n > MAX_RECEIVE_COUNT) {
        char shown[64] = "";
        if (json_is_integer(count)) {
            snprintf(shown, sizeof(shown), "%" PRId64, (int64_t)json_integer_value(count));
        } else if (json_is_string(count)) {
            snprintf(shown, sizeof(shown), "%.40s", json_string_value(count));
        }
        rc = gw_sqs_err_set(err, GW_SQS_E_INVALID_PARAMETER_VALUE,
                            "Value %.*s for parameter RedrivePolicy is invalid. Reason: Invalid "
                            "value for maxReceiveCount: %s, valid values are from 1 to 1000 both "
                            "inclusive.",
                            (int)SL_MIN(v.n, QUOTE_MAX), v.p, shown);
    }
out:
    json_decref(doc);
    return rc;
}

/* RedriveAllowPolicy: {"redrivePermission": allowAll|denyAll|byQueue,
 * "sourceQueueArns": [ARN, ...]} -- byQueue needs 1..10 ARNs, the others
 * none. */
static int check_redrive_allow(struct sl_slice v, struct gw_sqs_err *err)
{
    static const char P[] = "RedriveAllowPolicy";
    json_error_t jerr;
    json_t *doc = json_loadb(v.p, v.n, 0, &jerr);
    int rc = SL_OK;
    if (doc == NULL || !json_is_object(doc)) {
        rc = policy_error(err, P, v, "Invalid JSON.");
        goto out;
    }
    const json_t *perm = json_object_get(doc, "redrivePermission");
    const json_t *arns = json_object_get(doc, "sourceQueueArns");
    const char *p = json_is_string(perm) ? json_string_value(perm) : NULL;
    if (p == NULL ||
        (strcmp(p, "allowAll") != 0 && strcmp(p, "denyAll") != 0 && strcmp(p, "byQueue") != 0)) {
        rc = policy_error(err, P, v,
                          "Amazon SQS can't create the redrive allow policy, as it's in an "
                          "unsupported format: redrivePermission must be allowAll, denyAll or "
                          "byQueue.");
        goto out;
    }
    if (arns != NULL && !json_is_array(arns)) {
        rc = policy_error(err, P, v, "sourceQueueArns must be a list of queue ARNs.");
        goto out;
    }
    size_t n = arns != NULL ? json_array_size(arns) : 0;
    if (strcmp(p, "byQueue") == 0) {
        if (n == 0 || n > MAX_SOURCE_QUEUE_ARNS) {
            rc = policy_error(err, P, v,
                              "Amazon SQS can't create the redrive allow policy, as it's in an "
                              "unsupported format: byQueue needs 1 to 10 sourceQueueArns.");
            goto out;
        }
    } else if (n > 0) {
        rc = policy_error(err, P, v,
                          "Amazon SQS can't create the redrive allow policy, as it's in an "
                          "unsupported format: sourceQueueArns is only allowed with byQueue.");
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        const json_t *a = json_array_get(arns, i);
        struct gw_sqs_arn parsed;
        if (!json_is_string(a) ||
            !gw_sqs_parse_arn((struct sl_slice){json_string_value(a), json_string_length(a)},
                              &parsed)) {
            rc = policy_error(err, P, v, "sourceQueueArns must be a list of queue ARNs.");
            goto out;
        }
    }
    const char *key;
    json_t *val;
    json_object_foreach(doc, key, val)
    {
        if (strcmp(key, "redrivePermission") != 0 && strcmp(key, "sourceQueueArns") != 0) {
            rc = policy_error(err, P, v,
                              "Only following attributes are supported: [redrivePermission, "
                              "sourceQueueArns].");
            goto out;
        }
    }
out:
    json_decref(doc);
    return rc;
}

static int check_value(enum gw_sqs_qattr a, struct sl_slice v, bool fifo,
                       struct gw_sqs_qattr_value *out, struct gw_sqs_err *err)
{
    out->attr = a;
    out->value = v;
    switch (rules[a].kind) {
    case K_INT:
        if (!parse_int(v, &out->number) || out->number < rules[a].min ||
            out->number > rules[a].max) {
            return invalid_value(err, a);
        }
        return SL_OK;
    case K_BOOL:
        if (v.n == 4 && strncasecmp(v.p, "true", 4) == 0) {
            out->number = 1;
        } else if (v.n == 5 && strncasecmp(v.p, "false", 5) == 0) {
            out->number = 0;
        } else {
            return invalid_value(err, a);
        }
        return SL_OK;
    case K_POLICY: {
        if (v.n == 0) {
            return SL_OK; /* "" removes the policy */
        }
        if (v.n > GW_SQS_MAX_POLICY_BYTES) { /* refused before it is parsed */
            return gw_sqs_err_set(err, GW_SQS_E_INVALID_ATTRIBUTE_VALUE,
                                  "Invalid value for the parameter Policy. Reason: the policy "
                                  "is %zu bytes; a queue policy is at most %u bytes.",
                                  v.n, GW_SQS_MAX_POLICY_BYTES);
        }
        json_error_t jerr;
        json_t *doc = json_loadb(v.p, v.n, 0, &jerr);
        bool ok = doc != NULL && json_is_object(doc);
        json_decref(doc);
        return ok ? SL_OK : invalid_value(err, a);
    }
    case K_REDRIVE:
        return v.n == 0 ? SL_OK : check_redrive(v, fifo, err);
    case K_ALLOW:
        return v.n == 0 ? SL_OK : check_redrive_allow(v, err); /* "" removes it */
    case K_DEDUP:
        return sl_slice_eq_cstr(v, "messageGroup") || sl_slice_eq_cstr(v, "queue")
                   ? SL_OK
                   : invalid_value(err, a);
    case K_THROUGHPUT:
        return sl_slice_eq_cstr(v, "perQueue") || sl_slice_eq_cstr(v, "perMessageGroupId")
                   ? SL_OK
                   : invalid_value(err, a);
    case K_TEXT:
        return SL_OK;
    case K_ATTR_NAME:
        return gw_sqs_attr_name_valid(v) && !(v.n >= 7 && strncasecmp(v.p, "sluice.", 7) == 0)
                   ? SL_OK
                   : invalid_value(err, a);
    case K_ATTR_LIST: {
        struct sl_slice keys[GW_SQS_FILTER_KEYS_MAX];
        size_t n;
        return gw_sqs_filter_keys_split(v, keys, &n) == SL_OK ? SL_OK : invalid_value(err, a);
    }
    case K_READONLY:
        break;
    }
    return gw_sqs_err_set(err, GW_SQS_E_INVALID_ATTRIBUTE_NAME, "Unknown Attribute %s.",
                          gw_sqs_qattr_name(a));
}

int gw_sqs_qattrs_decode(const json_t *obj, bool fifo, bool for_create,
                         struct gw_sqs_request *owner, struct gw_sqs_qattrs *out,
                         struct gw_sqs_err *err)
{
    memset(out, 0, sizeof(*out));
    size_t n = json_object_size(obj);
    if (n == 0) {
        return SL_OK;
    }
    out->items = gw__sqs_alloc(owner, n, sizeof(*out->items));
    if (out->items == NULL) {
        gw_sqs_err_set(err, GW_SQS_E_INTERNAL_ERROR, NULL);
        return SL_ENOMEM;
    }
    const char *key;
    size_t key_len;
    json_t *v;
    json_object_keylen_foreach((json_t *)obj, key, key_len, v)
    {
        struct sl_slice name = {key, key_len};
        enum gw_sqs_qattr a;
        if (!gw_sqs_qattr_lookup(name, &a)) {
            return gw_sqs_err_set(err, GW_SQS_E_INVALID_ATTRIBUTE_NAME, "Unknown Attribute %.*s.",
                                  (int)SL_MIN(key_len, 256), key);
        }
        if (!json_is_string(v)) {
            return gw__sqs_type_error(v, "a String", err);
        }
        if (!gw__sqs_qattr_applies(a, fifo)) {
            if (rules[a].standard_only) {
                /* a FIFO queue's order and deduplication are SQS's */
                return gw_sqs_err_set(err, GW_SQS_E_INVALID_ATTRIBUTE_NAME,
                                      "You can specify the %s only when FifoQueue is false.",
                                      gw_sqs_qattr_name(a));
            }
            if (a == GW_SQS_QATTR_CONTENT_BASED_DEDUPLICATION) {
                return gw_sqs_err_set(err, GW_SQS_E_INVALID_ATTRIBUTE_NAME, "Unknown Attribute %s.",
                                      gw_sqs_qattr_name(a));
            }
            return gw_sqs_err_set(err, GW_SQS_E_INVALID_ATTRIBUTE_NAME,
                                  "You can specify the %s only when FifoQueue is set to true.",
                                  gw_sqs_qattr_name(a));
        }
        if (a == GW_SQS_QATTR_SLUICE_EXCLUSIVITY_KEY && !for_create) {
            /* stored messages are grouped by the key they were sent under */
            return gw_sqs_err_set(err, GW_SQS_E_INVALID_ATTRIBUTE_VALUE,
                                  "Invalid value for the parameter SluiceExclusivityKey. Reason: "
                                  "the exclusivity key is fixed when the queue is created.");
        }
        if (a == GW_SQS_QATTR_SLUICE_FILTER_KEYS && !for_create) {
            /* stored messages are indexed by the keys they were sent under */
            return gw_sqs_err_set(err, GW_SQS_E_INVALID_ATTRIBUTE_VALUE,
                                  "Invalid value for the parameter SluiceFilterKeys. Reason: "
                                  "the filter keys are fixed when the queue is created.");
        }
        if (rules[a].create_only && !for_create) {
            return gw_sqs_err_set(err, GW_SQS_E_INVALID_ATTRIBUTE_VALUE,
                                  "Invalid value for the parameter %s. Reason: Modifying queue "
                                  "type is not supported.",
                                  gw_sqs_qattr_name(a));
        }
        struct gw_sqs_qattr_value *item = &out->items[out->count];
        int rc = check_value(a, (struct sl_slice){json_string_value(v), json_string_length(v)},
                             fifo, item, err);
        if (rc != SL_OK) {
            return rc;
        }
        out->count++;
    }
    /* FIFO high throughput needs per-group deduplication (1.6) */
    const struct gw_sqs_qattr_value *ftl =
        gw_sqs_qattrs_find(out, GW_SQS_QATTR_FIFO_THROUGHPUT_LIMIT);
    const struct gw_sqs_qattr_value *ds = gw_sqs_qattrs_find(out, GW_SQS_QATTR_DEDUPLICATION_SCOPE);
    if (for_create && ftl != NULL && sl_slice_eq_cstr(ftl->value, "perMessageGroupId") &&
        (ds == NULL || !sl_slice_eq_cstr(ds->value, "messageGroup"))) {
        return gw_sqs_err_set(err, GW_SQS_E_INVALID_ATTRIBUTE_VALUE,
                              "Invalid value for the parameter FifoThroughputLimit. Reason: "
                              "perMessageGroupId requires DeduplicationScope messageGroup.");
    }
    return SL_OK;
}
