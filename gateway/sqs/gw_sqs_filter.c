/*
 * gw_sqs_filter.c -- the syntax of filtered receives (docs/api.md,
 * "Filtered receives"): the "sluice.Filter.KEY=VALUE" entries a stock SDK
 * carries in ReceiveMessage's MessageAttributeNames (or GetQueueAttributes'
 * AttributeNames), and a queue's SluiceFilterKeys list. Both protocols
 * reach it through the JSON decoder, so each error has the protocol's own
 * shape.
 *
 * Why attribute name lists: every SDK sends them as plain strings without
 * checking them against a list, on both protocols, and SQS itself treats
 * an entry that names no attribute as selecting nothing.
 *
 * Threading: pure; any thread.
 */
#include <string.h>
#include <strings.h>

#include "gw_sqs.h"

#define PREFIX_LEN (sizeof GW_SQS_FILTER_PREFIX - 1)
#define RESERVED "sluice."
#define QUOTE_MAX 300 /* bytes of a client value quoted in a message */

static bool reserved(struct sl_slice name)
{
    return name.n >= sizeof RESERVED - 1 && strncasecmp(name.p, RESERVED, sizeof RESERVED - 1) == 0;
}

static int bad(struct gw_sqs_err *err, const char *param, struct sl_slice entry, const char *why)
{
    return gw_sqs_err_set(err, GW_SQS_E_INVALID_PARAMETER_VALUE,
                          "Value %.*s for parameter %s is invalid. Reason: %s",
                          (int)SL_MIN(entry.n, QUOTE_MAX), entry.p, param, why);
}

int gw_sqs_filter_parse(const struct sl_slice *names, size_t n, const char *param,
                        struct gw_sqs_filter *out, struct gw_sqs_err *err)
{
    out->count = 0;
    for (size_t i = 0; i < n; i++) {
        struct sl_slice e = names[i];
        /* the reserved prefix in any case, as sluice.* attribute names */
        if (e.n < PREFIX_LEN || strncasecmp(e.p, GW_SQS_FILTER_PREFIX, PREFIX_LEN) != 0) {
            continue;
        }
        const char *eq = memchr(e.p + PREFIX_LEN, '=', e.n - PREFIX_LEN);
        if (eq == NULL) {
            return bad(err, param, e, "a filter is sluice.Filter.<attribute name>=<value>.");
        }
        struct sl_slice key = {e.p + PREFIX_LEN, (size_t)(eq - e.p) - PREFIX_LEN};
        struct sl_slice value = {eq + 1, e.n - (size_t)(eq + 1 - e.p)};
        if (!gw_sqs_attr_name_valid(key) || reserved(key)) {
            return bad(err, param, e, "the filter's key is not a valid message attribute name.");
        }
        if (value.n == 0 || value.n > GW_SQS_FILTER_VALUE_MAX ||
            memchr(value.p, '\0', value.n) != NULL) {
            return bad(err, param, e, "a filter's value has 1 to 256 bytes.");
        }
        for (size_t k = 0; k < out->count; k++) {
            if (sl_slice_eq(out->pairs[k].key, key)) {
                return bad(err, param, e, "a filter names each attribute at most once.");
            }
        }
        if (out->count == GW_SQS_FILTER_MAX) {
            return bad(err, param, e, "a filter has at most 4 sluice.Filter entries.");
        }
        out->pairs[out->count].key = key;
        out->pairs[out->count].value = value;
        out->count++;
    }
    return SL_OK;
}

int gw_sqs_filter_keys_split(struct sl_slice v, struct sl_slice keys[GW_SQS_FILTER_KEYS_MAX],
                             size_t *n)
{
    *n = 0;
    size_t start = 0;
    for (size_t i = 0; i <= v.n; i++) {
        if (i < v.n && v.p[i] != ',') {
            continue;
        }
        struct sl_slice k = {v.p + start, i - start};
        if (*n == GW_SQS_FILTER_KEYS_MAX || !gw_sqs_attr_name_valid(k) || reserved(k)) {
            return SL_EINVAL;
        }
        for (size_t j = 0; j < *n; j++) {
            if (sl_slice_eq(keys[j], k)) {
                return SL_EINVAL;
            }
        }
        keys[(*n)++] = k;
        start = i + 1;
    }
    return SL_OK;
}
