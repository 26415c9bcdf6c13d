/*
 * gw_act_store.h -- (gateway-internal) what the SQS action handlers share:
 * the API's long-lived state (storage engine, limiter), the per-loop state
 * (partition client, placement cache), and helpers that resolve a request's
 * queue, build URLs and ARNs, admit a request through policy, and encode
 * message attributes for storage.
 *
 * Flow of every data action: gw_api.c authenticates and decodes; a handler
 * here resolves the queue (tenant isolation), asks policy (admission,
 * placement), submits a job to the partitions, and finishes the exchange
 * from the job's completion on the same loop thread.
 *
 * Threading: loop threads only, except where said.
 */
#ifndef SLUICE_GW_ACT_STORE_H
#define SLUICE_GW_ACT_STORE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "cfg.h"
#include "gw_act.h"
#include "gw_sqs.h"
#include "part.h"
#include "pol.h"

/* Long-lived state of the API layer (one per process). */
struct gw_api {
    struct cfg_holder *holder;    /* borrowed; outlives the api */
    struct part_engine *engine;   /* owned */
    struct pol_limiter *limiter;  /* owned; survives reloads */
    pthread_mutex_t purge_lock;   /* guards purges (SQS's 60 s rules) */
    struct gw_purge_mark *purges; /* last minute's purges and deletes (gw_act_queue.c) */
    size_t purge_count;
    size_t purge_cap;
    struct gw_move_registry *moves; /* message move tasks (gw_act_move.c); lazily made */
    struct gw_metrics *metrics;     /* owned; request counters (gw_metrics.h) */
};

/* One tenant's shard, cached per loop: placement costs a keyed hash per
 * partition, and a tenant's shard only changes with P or k. */
struct gw_shard_cache_entry {
    char tenant[65];
    uint32_t partitions;
    uint32_t k;
    uint32_t shard[POL_MAX_PARTITIONS > 64 ? 64 : POL_MAX_PARTITIONS];
};

#define GW_SHARD_CACHE_SLOTS 256

/* Per I/O loop state of the API layer. */
struct gw_api_loop {
    struct gw_api *api;
    struct uv_loop_s *loop;
    struct sigv4_key_cache *keys;
    struct part_client *part;
    bool draining;
    struct gw_shard_cache_entry *shards; /* GW_SHARD_CACHE_SLOTS entries */
};

/* The maximum shard size sluice supports (k). */
#define GW_MAX_SHARD 64u

/* A queue as the request resolved it: tenant and name as C strings and
 * the engine's id and typed config. */
struct gw_queue {
    char tenant[65];
    char name[GW_SQS_MAX_QUEUE_NAME_LEN + 1];
    uint64_t id;
    struct part_queue_config cfg;
};

/* Resolves ref for the request's principal: a tenant reaches only queues
 * carrying its own name (others answer as nonexistent), the admin any.
 * Returns true and fills *q, or false after failing ctx with
 * QueueDoesNotExist (ctx is then gone). */
bool gw__act_resolve(struct gw_act_ctx *ctx, const struct gw_sqs_queue_ref *ref,
                     struct gw_queue *q);

/* "http[s]://AUTHORITY/TENANT/NAME" of the request's own authority. */
void gw__act_queue_url(const struct gw_act_ctx *ctx, const char *tenant, const char *name,
                       struct sl_buf *out);
/* "arn:aws:sqs:REGION:TENANT:NAME". */
void gw__act_queue_arn(const struct gw_act_ctx *ctx, const char *tenant, const char *name,
                       struct sl_buf *out);

/* The tenant's shard (k partitions, best first), from the loop's cache.
 * Returns k. */
uint32_t gw__act_shard(struct gw_act_ctx *ctx, const char *tenant, const uint32_t **shard);

/* Asks policy whether the request may go on: the tenant's bucket, the
 * per-queue bucket of the tenant's queue named queue and the per-action
 * bucket of ctx->action, where the configuration sets them. Admin
 * requests are never limited. On THROTTLE it fails ctx (RequestThrottled,
 * or OverLimit for the in-flight bound) and returns false; otherwise
 * returns true with *spill telling a send to use the overflow lane. */
bool gw__act_admit(struct gw_act_ctx *ctx, const char *tenant, const char *queue,
                   enum pol_action_class action, uint32_t cost, bool *spill);

/* Finishes ctx with a 200 and body (stolen; NULL = empty body). */
void gw__act_reply(struct gw_act_ctx *ctx, struct json_t *body);

/* Fails ctx with InternalError / ServiceUnavailable for an engine status. */
void gw__act_fail_storage(struct gw_act_ctx *ctx, int status);

/* ---- stored message attributes --------------------------------------- */

/* Attributes are stored in the very byte layout SQS hashes for
 * MD5OfMessageAttributes (name, type, transport byte, value, with 4-byte
 * big-endian lengths), sorted by name, so a receive can filter and hash
 * them without another format. */
void gw__attrs_encode(const struct gw_sqs_msg_attr *attrs, size_t n, struct sl_buf *out);
/* Decodes a stored blob into at most cap attributes borrowing from blob.
 * Returns the count, or -1 for a corrupt blob. */
int gw__attrs_decode(struct sl_slice blob, struct gw_sqs_msg_attr *out, size_t cap);

/* System attributes kept with a message (AWSTraceHeader, SenderId) use the
 * same layout with String values. */
#define GW_SYSATTR_MAX 4

/* ---- message move tasks (gw_act_move.c) --------------------------------- */

/* Shutdown of loop l (call from its loop_drain): its move tasks stop
 * taking batches. A batch in flight still commits. Loop thread. */
void gw__move_loop_drain(struct gw_api_loop *l);
/* Frees the task registry after every loop stopped (from gw_api_free,
 * before the engine closes). Task history lives in memory only and does
 * not survive a restart; moved messages do (each batch is a commit). */
void gw__move_api_free(struct gw_api *api);

#endif
