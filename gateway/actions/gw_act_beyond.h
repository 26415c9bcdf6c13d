/*
 * gw_act_beyond.h -- (gateway-internal) the send side of sluice's features
 * beyond SQS (gw_act_beyond.c; docs/api.md, "Beyond SQS"): the reserved
 * sluice.* message attributes and where an idempotent send goes.
 */
#ifndef SLUICE_GW_ACT_BEYOND_H
#define SLUICE_GW_ACT_BEYOND_H

#include "gw_act.h"

/* The message attribute that carries a message's priority. */
#define GW_BEYOND_PRIORITY_ATTR "sluice.Priority"

/* Checks one send entry's sluice.* message attributes against its queue
 * and takes its priority: *has_priority and *priority are set from
 * sluice.Priority (an integer of at most 18 digits, optionally negative,
 * of DataType Number or Number.<label>, on a queue with SluicePriority).
 * Any other attribute name starting "sluice." (any case) is reserved.
 * Returns SL_OK, or SL_EINVAL with err set to an InvalidParameterValue. */
int gw__beyond_check(const struct part_queue_config *cfg, const struct gw_sqs_send_entry *m,
                     bool *has_priority, int64_t *priority, struct gw_sqs_err *err);

/* The name of the message attribute an exclusive queue is keyed by
 * (SluiceExclusivityKey), malloc'd; NULL when the queue is gone or has
 * none. */
char *gw__beyond_exclusivity_key(struct gw_act_ctx *ctx, uint64_t queue_id);
/* The stored value of one of a queue's attributes, malloc'd; NULL when
 * the queue is gone or the attribute was never set. */
char *gw__beyond_queue_attr(struct gw_act_ctx *ctx, uint64_t queue_id, enum gw_sqs_qattr attr);

/* A send entry's indexed pairs on a queue with SluiceFilterKeys keys (the
 * queue attribute's value): each key's attribute the entry carries, a
 * String or Number of 1..PART_FILTER_TEXT_MAX bytes, into out (borrowed
 * from m; *n of them). Returns SL_OK, or SL_EINVAL with err set (an
 * InvalidParameterValue) for a Binary or oversized one. */
int gw__beyond_filter_pairs(const struct gw_sqs_send_entry *m, const char *keys,
                            struct part_filter_pair out[PART_FILTER_KEYS_MAX], size_t *n,
                            struct gw_sqs_err *err);

/* A receive's or depth's filter against queue queue_id (filtered: its
 * part_queue_config.filtered, so that other queues' attributes are not
 * read): every key among its SluiceFilterKeys. Fills out with the pairs.
 * Returns SL_OK, or SL_EINVAL with err set (an InvalidParameterValue
 * naming param). */
int gw__beyond_filter_check(struct gw_act_ctx *ctx, uint64_t queue_id, bool filtered,
                            const struct gw_sqs_filter *f, const char *param,
                            struct part_filter_pair out[PART_FILTER_MAX], struct gw_sqs_err *err);

/* A send entry's exclusivity value: the String or Number attribute named
 * key, of 1..PART_GROUP_ID_MAX bytes, into *value (borrowed from m). An
 * entry without it, with a Binary one, or with a MessageGroupId (the
 * value is the message's group on an exclusive queue) is refused: returns
 * SL_EINVAL with err set. */
int gw__beyond_exclusive_value(const struct gw_sqs_send_entry *m, const char *key,
                               struct sl_slice *value, struct gw_sqs_err *err);

/* The partition every message of an exclusivity value goes to: the
 * value's home in the tenant's shard, as a FIFO group's (so the lock is
 * one writer's decision). */
uint32_t gw__beyond_value_partition(struct gw_act_ctx *ctx, const struct gw_queue *q,
                                    struct sl_slice value);

/* The partition an idempotent send with this deduplication id goes to:
 * the id's home in the tenant's shard, so that a retry reaches the
 * partition whose writer holds the id (each partition keeps its own). */
uint32_t gw__beyond_key_partition(struct gw_act_ctx *ctx, const struct gw_queue *q,
                                  struct sl_slice dedup_id);

#endif
