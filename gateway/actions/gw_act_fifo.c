/*
 * gw_act_fifo.c -- the FIFO side of a send: SQS's refusals (Amazon SQS API
 * Reference, SendMessage and SendMessageBatch: MessageGroupId,
 * MessageDeduplicationId, DelaySeconds), content-based deduplication ids,
 * the home of a group (docs/partitions.md, "Message groups") and the
 * SequenceNumber's text. The engine enforces order, locks and the
 * deduplication interval; this file decides only what reaches it.
 *
 * Threading: loop threads; pure but for the shard cache of gw__act_shard.
 */
#include "gw_act_fifo.h"

#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>

/* SQS's text for a member a queue of this type does not take (sic). */
#define NOT_FOR_THIS_TYPE "The request include parameter that is not valid for this queue type."

int gw__fifo_check(const struct part_queue_config *cfg, const struct gw_sqs_send_entry *entries,
                   size_t count, struct gw_sqs_err *err)
{
    for (size_t i = 0; i < count; i++) {
        const struct gw_sqs_send_entry *m = &entries[i];
        if (m->fail != NULL) {
            continue;
        }
        if (!cfg->fifo) {
            /* sluice's idempotent sends take the id on a standard queue */
            if (m->has_dedup_id && cfg->idempotency_window_s == 0) {
                gw_sqs_err_set(err, GW_SQS_E_INVALID_PARAMETER_VALUE,
                               "Value %.*s for parameter MessageDeduplicationId is invalid. "
                               "Reason: " NOT_FOR_THIS_TYPE,
                               (int)m->dedup_id.n, m->dedup_id.p);
                return SL_EINVAL;
            }
            continue;
        }
        if (!m->has_group_id) {
            gw_sqs_err_set(err, GW_SQS_E_MISSING_PARAMETER,
                           "The request must contain the parameter MessageGroupId.");
            return SL_EINVAL;
        }
        if (!m->has_dedup_id && !cfg->content_based_dedup) {
            gw_sqs_err_set(err, GW_SQS_E_INVALID_PARAMETER_VALUE,
                           "The queue should either have ContentBasedDeduplication enabled or "
                           "MessageDeduplicationId provided explicitly");
            return SL_EINVAL;
        }
        if (m->has_delay_seconds && m->delay_seconds != 0) {
            gw_sqs_err_set(err, GW_SQS_E_INVALID_PARAMETER_VALUE,
                           "Value %d for parameter DelaySeconds is invalid. "
                           "Reason: " NOT_FOR_THIS_TYPE,
                           m->delay_seconds);
            return SL_EINVAL;
        }
    }
    return SL_OK;
}

struct sl_slice gw__fifo_dedup_id(const struct gw_sqs_send_entry *m, char hex[65])
{
    if (m->has_dedup_id) {
        return m->dedup_id;
    }
    uint8_t digest[32];
    unsigned int len = 0;
    if (EVP_Digest(m->body.p != NULL ? m->body.p : "", m->body.n, digest, &len, EVP_sha256(),
                   NULL) != 1 ||
        len != sizeof digest) {
        memset(digest, 0, sizeof digest); /* OpenSSL cannot fail a SHA-256 of memory */
    }
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < sizeof digest; i++) {
        hex[2 * i] = digits[digest[i] >> 4];
        hex[2 * i + 1] = digits[digest[i] & 15];
    }
    hex[64] = '\0';
    return (struct sl_slice){hex, 64};
}

uint32_t gw__fifo_partition(struct gw_act_ctx *ctx, const struct gw_queue *q,
                            const struct gw_sqs_send_entry *m)
{
    const uint32_t *shard;
    uint32_t k = gw__act_shard(ctx, q->tenant, &shard);
    struct sl_slice key = q->cfg.dedup_per_group ? m->group_id : sl_slice_cstr(q->name);
    return pol_key_home(part_engine_key(ctx->api->engine), PART_KEY_LEN, q->tenant,
                        strlen(q->tenant), key.p, key.n, shard, k);
}

void gw__fifo_seq_text(uint64_t seq, char out[GW_FIFO_SEQ_LEN + 1])
{
    snprintf(out, GW_FIFO_SEQ_LEN + 1, "%020llu", (unsigned long long)seq);
}
