/*
 * gw_act_beyond.c -- the send side of sluice's features beyond SQS
 * (docs/api.md, "Beyond SQS"). A priority travels as the reserved message
 * attribute sluice.Priority, which stays an ordinary attribute of the
 * message (stored, returned, and covered by MD5OfMessageAttributes as the
 * SDK computed it); this file validates it and hands its value to the
 * engine. An idempotent send's key is SQS's own MessageDeduplicationId;
 * this file places it where its earlier sends went.
 *
 * Threading: loop threads; pure but for the shard cache of gw__act_shard.
 */
#include "gw_act_beyond.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define PRIORITY_DIGITS_MAX 18 /* so that every accepted value fits int64_t */
#define RESERVED_PREFIX "sluice."

/* An integer: an optional '-' and 1..18 decimal digits (no '+', no
 * fraction, no exponent: a priority is compared exactly). */
static bool parse_priority(struct sl_slice v, int64_t *out)
{
    size_t i = 0;
    bool negative = v.n > 0 && v.p[0] == '-';
    i += negative;
    if (v.n - i == 0 || v.n - i > PRIORITY_DIGITS_MAX) {
        return false;
    }
    int64_t x = 0;
    for (; i < v.n; i++) {
        if (v.p[i] < '0' || v.p[i] > '9') {
            return false;
        }
        x = x * 10 + (v.p[i] - '0');
    }
    *out = negative ? -x : x;
    return true;
}

static bool is_number_type(struct sl_slice t)
{
    return sl_slice_eq_cstr(t, "Number") || (t.n > 7 && memcmp(t.p, "Number.", 7) == 0);
}

int gw__beyond_check(const struct part_queue_config *cfg, const struct gw_sqs_send_entry *m,
                     bool *has_priority, int64_t *priority, struct gw_sqs_err *err)
{
    *has_priority = false;
    *priority = 0;
    for (size_t i = 0; i < m->attr_count; i++) {
        const struct gw_sqs_msg_attr *a = &m->attrs[i];
        size_t plen = sizeof RESERVED_PREFIX - 1;
        if (a->name.n < plen || strncasecmp(a->name.p, RESERVED_PREFIX, plen) != 0) {
            continue;
        }
        int nl = (int)SL_MIN(a->name.n, 256);
        if (!sl_slice_eq_cstr(a->name, GW_BEYOND_PRIORITY_ATTR)) {
            return gw_sqs_err_set(err, GW_SQS_E_INVALID_PARAMETER_VALUE,
                                  "Message (user) attribute name '%.*s' is reserved: names "
                                  "starting with 'sluice.' belong to sluice, whose only one is "
                                  "'" GW_BEYOND_PRIORITY_ATTR "'.",
                                  nl, a->name.p);
        }
        if (!cfg->priority_order) {
            return gw_sqs_err_set(err, GW_SQS_E_INVALID_PARAMETER_VALUE,
                                  "Message (user) attribute '" GW_BEYOND_PRIORITY_ATTR
                                  "' needs a queue created or set with the attribute "
                                  "SluicePriority=true; this queue has none.");
        }
        if (a->type != GW_SQS_ATTR_NUMBER || !is_number_type(a->data_type) ||
            !parse_priority(a->value, priority)) {
            return gw_sqs_err_set(err, GW_SQS_E_INVALID_PARAMETER_VALUE,
                                  "Message (user) attribute '" GW_BEYOND_PRIORITY_ATTR
                                  "' must be of type 'Number' and an integer of at most 18 "
                                  "digits, optionally negative; got '%.*s' of type '%.*s'.",
                                  (int)SL_MIN(a->value.n, 64), a->value.p,
                                  (int)SL_MIN(a->data_type.n, 64), a->data_type.p);
        }
        *has_priority = true;
    }
    return SL_OK;
}

char *gw__beyond_exclusivity_key(struct gw_act_ctx *ctx, uint64_t queue_id)
{
    return gw__beyond_queue_attr(ctx, queue_id, GW_SQS_QATTR_SLUICE_EXCLUSIVITY_KEY);
}

char *gw__beyond_queue_attr(struct gw_act_ctx *ctx, uint64_t queue_id, enum gw_sqs_qattr attr)
{
    struct part_queue_info *qi = NULL;
    if (part_queue_get(ctx->api->engine, queue_id, &qi) != SL_OK) {
        return NULL;
    }
    const char *want = gw_sqs_qattr_name(attr);
    char *key = NULL;
    for (size_t i = 0; i < qi->attr_count && key == NULL; i++) {
        if (strcmp(qi->attrs[i].key, want) == 0) {
            key = sl_xstrdup(qi->attrs[i].value);
        }
    }
    part_queue_info_free(qi);
    return key;
}

int gw__beyond_exclusive_value(const struct gw_sqs_send_entry *m, const char *key,
                               struct sl_slice *value, struct gw_sqs_err *err)
{
    if (m->has_group_id) {
        return gw_sqs_err_set(err, GW_SQS_E_INVALID_PARAMETER_VALUE,
                              "Value %.*s for parameter MessageGroupId is invalid. Reason: an "
                              "exclusive queue groups its messages by their '%s' attribute.",
                              (int)SL_MIN(m->group_id.n, 128), m->group_id.p, key);
    }
    for (size_t i = 0; i < m->attr_count; i++) {
        const struct gw_sqs_msg_attr *a = &m->attrs[i];
        if (!sl_slice_eq_cstr(a->name, key)) {
            continue;
        }
        if (a->type == GW_SQS_ATTR_BINARY || a->value.n == 0 || a->value.n > PART_GROUP_ID_MAX) {
            return gw_sqs_err_set(err, GW_SQS_E_INVALID_PARAMETER_VALUE,
                                  "Message (user) attribute '%s' is this exclusive queue's key: "
                                  "it must be a String or Number of 1 to %u bytes.",
                                  key, (unsigned)PART_GROUP_ID_MAX);
        }
        *value = a->value;
        return SL_OK;
    }
    return gw_sqs_err_set(err, GW_SQS_E_MISSING_PARAMETER,
                          "The queue is exclusive by the message attribute '%s' "
                          "(SluiceExclusivityKey): every message must carry it.",
                          key);
}

uint32_t gw__beyond_value_partition(struct gw_act_ctx *ctx, const struct gw_queue *q,
                                    struct sl_slice value)
{
    const uint32_t *shard;
    uint32_t k = gw__act_shard(ctx, q->tenant, &shard);
    return pol_key_home(part_engine_key(ctx->api->engine), PART_KEY_LEN, q->tenant,
                        strlen(q->tenant), value.p, value.n, shard, k);
}

uint32_t gw__beyond_key_partition(struct gw_act_ctx *ctx, const struct gw_queue *q,
                                  struct sl_slice dedup_id)
{
    const uint32_t *shard;
    uint32_t k = gw__act_shard(ctx, q->tenant, &shard);
    /* The queue is part of the key: two queues' ids spread independently. */
    char key[GW_SQS_MAX_QUEUE_NAME_LEN + 1 + PART_DEDUP_ID_MAX];
    size_t name_len = strlen(q->name);
    size_t id_len = SL_MIN(dedup_id.n, (size_t)PART_DEDUP_ID_MAX);
    memcpy(key, q->name, name_len);
    key[name_len] = '\0';
    memcpy(key + name_len + 1, dedup_id.p, id_len);
    return pol_key_home(part_engine_key(ctx->api->engine), PART_KEY_LEN, q->tenant,
                        strlen(q->tenant), key, name_len + 1 + id_len, shard, k);
}

/* ---- filtered receives ------------------------------------------------------ */

/* Whether name is one of keys (a validated SluiceFilterKeys value). */
static bool among(const char *keys, struct sl_slice name)
{
    struct sl_slice k[GW_SQS_FILTER_KEYS_MAX];
    size_t n = 0;
    if (keys == NULL || gw_sqs_filter_keys_split(sl_slice_cstr(keys), k, &n) != SL_OK) {
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        if (sl_slice_eq(k[i], name)) {
            return true;
        }
    }
    return false;
}

int gw__beyond_filter_pairs(const struct gw_sqs_send_entry *m, const char *keys,
                            struct part_filter_pair out[PART_FILTER_KEYS_MAX], size_t *n,
                            struct gw_sqs_err *err)
{
    *n = 0;
    for (size_t i = 0; i < m->attr_count && *n < PART_FILTER_KEYS_MAX; i++) {
        const struct gw_sqs_msg_attr *a = &m->attrs[i];
        if (!among(keys, a->name)) {
            continue;
        }
        if (a->type == GW_SQS_ATTR_BINARY || a->value.n == 0 || a->value.n > PART_FILTER_TEXT_MAX ||
            memchr(a->value.p, '\0', a->value.n) != NULL) {
            return gw_sqs_err_set(err, GW_SQS_E_INVALID_PARAMETER_VALUE,
                                  "Message (user) attribute '%.*s' is one of this queue's "
                                  "SluiceFilterKeys: it must be a String or Number of 1 to %u "
                                  "bytes.",
                                  (int)SL_MIN(a->name.n, 256), a->name.p,
                                  (unsigned)PART_FILTER_TEXT_MAX);
        }
        out[*n].key = a->name;
        out[(*n)++].value = a->value;
    }
    return SL_OK;
}

int gw__beyond_filter_check(struct gw_act_ctx *ctx, uint64_t queue_id, bool filtered,
                            const struct gw_sqs_filter *f, const char *param,
                            struct part_filter_pair out[PART_FILTER_MAX], struct gw_sqs_err *err)
{
    _Static_assert(GW_SQS_FILTER_MAX == PART_FILTER_MAX, "filter sizes differ");
    _Static_assert(GW_SQS_FILTER_KEYS_MAX == PART_FILTER_KEYS_MAX, "filter key counts differ");
    _Static_assert(GW_SQS_FILTER_VALUE_MAX == PART_FILTER_TEXT_MAX, "filter value sizes differ");
    char *keys =
        filtered ? gw__beyond_queue_attr(ctx, queue_id, GW_SQS_QATTR_SLUICE_FILTER_KEYS) : NULL;
    int rc = SL_OK;
    for (size_t i = 0; i < f->count && rc == SL_OK; i++) {
        if (!among(keys, f->pairs[i].key)) {
            rc = gw_sqs_err_set(err, GW_SQS_E_INVALID_PARAMETER_VALUE,
                                "Value " GW_SQS_FILTER_PREFIX "%.*s=... for parameter %s is "
                                "invalid. Reason: the queue does not index the message "
                                "attribute '%.*s' (SluiceFilterKeys: %s).",
                                (int)SL_MIN(f->pairs[i].key.n, 256), f->pairs[i].key.p, param,
                                (int)SL_MIN(f->pairs[i].key.n, 256), f->pairs[i].key.p,
                                keys != NULL ? keys : "none");
        }
        out[i].key = f->pairs[i].key;
        out[i].value = f->pairs[i].value;
    }
    free(keys);
    return rc;
}
