/*
 * gw_act_fifo.h -- (gateway-internal) the FIFO rules of a send
 * (gw_act_fifo.c): what SQS refuses, the deduplication id, the partition
 * a message's group lives on, and the SequenceNumber's text.
 */
#ifndef SLUICE_GW_ACT_FIFO_H
#define SLUICE_GW_ACT_FIFO_H

#include "gw_act.h"

#define GW_FIFO_SEQ_LEN 20 /* digits of a SequenceNumber, as SQS writes it */

/* Checks a SendMessage / SendMessageBatch against its queue's type, as SQS
 * does, for the whole request (one bad entry refuses the request, nothing
 * is stored): on a FIFO queue a group id is required, a deduplication id
 * unless the queue has content-based deduplication, and a per-message
 * DelaySeconds other than 0 is refused; a standard queue refuses a
 * deduplication id unless it has idempotent sends (SluiceIdempotentSends,
 * docs/api.md "Beyond SQS"). Entries that failed decoding already are skipped.
 * Returns SL_OK, or SL_EINVAL with err set. */
int gw__fifo_check(const struct part_queue_config *cfg, const struct gw_sqs_send_entry *entries,
                   size_t count, struct gw_sqs_err *err);

/* The deduplication id a FIFO message is stored under: its own, or with
 * content-based deduplication and none given the hex SHA-256 of its body
 * (written to hex, which must outlive the returned slice). */
struct sl_slice gw__fifo_dedup_id(const struct gw_sqs_send_entry *m, char hex[65]);

/* The home of a FIFO message's group: the group's home in the tenant's
 * shard under DeduplicationScope messageGroup (groups spread over the
 * shard), else the queue's home (the whole queue on one partition, so
 * that queue-wide deduplication is decided by one writer, as SQS's
 * perQueue mode keeps a queue on one partition). part_send takes it as
 * where a group without live messages starts; one with live messages goes
 * where they are (docs/partitions.md, "The group directory"). */
uint32_t gw__fifo_partition(struct gw_act_ctx *ctx, const struct gw_queue *q,
                            const struct gw_sqs_send_entry *m);

/* A SequenceNumber as SQS writes it: GW_FIFO_SEQ_LEN digits, zero-padded,
 * so that its text orders as its value. */
void gw__fifo_seq_text(uint64_t seq, char out[GW_FIFO_SEQ_LEN + 1]);

#endif
