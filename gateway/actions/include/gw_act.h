/*
 * gw_act.h -- (gateway-internal) the services every SQS action handler
 * uses (gw_act.c), below the handlers (gw_act_queue.c, gw_act_msg.c,
 * gw_act_move.c) and above the SQS codec (gw_sqs.h): the request context,
 * the API's long-lived and per-loop state, ending a request, resolving
 * its queue under tenant isolation, queue URLs and ARNs, placement and
 * admission through policy.
 *
 * A handler gets a struct gw_act_ctx holding everything the request needs
 * (the exchange, the configuration snapshot it started with, the
 * authenticated principal, the decoded request) and must end it exactly
 * once with gw__act_finish() or gw__act_fail() (or a helper that calls
 * them) -- now, or later from a completion (partition commit, long-poll
 * wake) on the same loop thread. If the client goes away meanwhile,
 * gw_exchange_cancelled(ctx->ex) turns true; the handler still finishes
 * (which then only frees).
 *
 * Flow of every data action: the dispatcher (gw_api.c) authenticates and
 * decodes; a handler resolves the queue (tenant isolation), asks policy
 * (admission, placement), submits a job to the partitions, and finishes
 * the exchange from the job's completion on the same loop thread.
 *
 * Ownership rule: a function that takes ownership of an argument on some
 * path says so in one sentence on its declaration: "Always takes ownership
 * of X." or "On failure takes ownership of X.". Taking a request context
 * means ending the request: ctx is freed and must not be touched again.
 *
 * Threading: loop threads only (the thread that owns ctx->ex), except
 * where said.
 */
#ifndef SLUICE_GW_ACT_H
#define SLUICE_GW_ACT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "cfg.h"
#include "gw_http.h"
#include "gw_sqs.h"
#include "part.h"
#include "pol.h"

/* Long-lived state of the API layer (one per process). */
struct gw_api {
    struct cfg_holder *holder;   /* borrowed; outlives the api */
    struct part_engine *engine;  /* owned */
    struct pol_limiter *limiter; /* owned; survives reloads */
    /* SQS's 60 s rules (gw_act_queue.c, set up and freed by its hooks) */
    pthread_mutex_t purge_lock;   /* guards purges */
    struct gw_purge_mark *purges; /* last minute's purges and deletes */
    size_t purge_count;
    size_t purge_cap;
    struct gw_move_registry *moves;   /* message move tasks (gw_move.c) */
    struct gw_metrics *metrics;       /* owned; request counters (gw_metrics.h) */
    struct gw_connlimit *conns;       /* SQS listener's caps, borrowed; NULL in tests */
    struct gw_connlimit *admin_conns; /* admin listener's, borrowed; may be NULL */
    struct gw_budget *budget;         /* SQS listener's memory budgets, borrowed; may be NULL */
    /* Failed admin authentications per client address, all loops: past
     * its rate, that address's admin requests are refused before their
     * credentials are checked (gw_peer_ration.h); owned. */
    struct gw_peer_ration *admin_auth_failures;
    struct pol_gcra admin_writes; /* the admin listener's write rate, all loops */
    struct gw_opstore *ops;       /* durable operations state (gw_opstore.h) */
    struct gw_pause_set *paused;  /* paused queues (gw_pause.h) */
    const char *config_path;      /* for POST /api/reload; NULL: embedded default */
    struct gw_console *console;   /* owned; the web console's sessions (gw_console.h) */
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

/* Failed admin authentications allowed per client address (docs/design.md,
 * "Limits"): a burst for a mistyped token, then ten a second; meters for
 * this many addresses at once. */
#define GW_ADMIN_AUTH_FAILURES_PER_S 10
#define GW_ADMIN_AUTH_FAILURES_BURST 50u
#define GW_ADMIN_AUTH_PEERS 1024u
/* Writes on the admin listener, all loops: enough for a person or a
 * script, few enough that a runaway script cannot purge its way through
 * the catalog (docs/admin.md). */
#define GW_ADMIN_WRITES_PER_S 10
#define GW_ADMIN_WRITES_BURST 20u

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

/* Lifetime hooks of an action group that keeps state beyond one request
 * (the 60 s marks, message move tasks). The dispatcher runs every group's
 * hooks without knowing what they do: api_init once the api is built
 * (main thread); loop_init on each loop's thread once its state is built;
 * loop_drain on that thread when shutdown begins (stop taking new work);
 * loop_free on that thread before its state is freed; api_free after
 * every loop stopped and before storage closes (main thread). Any hook
 * may be NULL. */
struct gw_act_hooks {
    void (*api_init)(struct gw_api *api);
    void (*loop_init)(struct gw_api_loop *l);
    void (*loop_drain)(struct gw_api_loop *l);
    void (*loop_free)(struct gw_api_loop *l);
    void (*api_free)(struct gw_api *api);
};

/* The state of one request. The dispatcher allocates it; ending the
 * request frees it and drops the snapshot reference. */
struct gw_act_ctx {
    struct gw_api *api;
    struct gw_api_loop *loop; /* the per-loop context of this I/O thread */
    struct gw_exchange *ex;
    const struct gw_request *http;
    struct cfg_snapshot *snap;      /* one reference, held until finish */
    struct cfg_principal principal; /* borrows from snap */
    enum gw_sqs_action action;
    enum gw_sqs_protocol protocol;   /* what the request spoke; the reply speaks it too */
    struct gw_sqs_request req;       /* decoded; fini'd by finish */
    uint64_t queue_id;               /* the queue it named, once resolved; 0 before */
    bool charged;                    /* its tokens are settled (admitted, refused or charged) */
    struct pol_tenant_state *limits; /* the tenant's limiter state, once looked up */
    bool entered;                    /* holds a slot of limits->requests (gw__act_enter) */
};

typedef void gw_act_fn(struct gw_act_ctx *ctx);

/* ---- ending a request --------------------------------------------------- */

/* Sends reply (status, SQS headers, body), logs the request line and
 * counts it. Always takes ownership of ctx. */
void gw__act_finish(struct gw_act_ctx *ctx, struct gw_sqs_reply *reply);

/* Sends the SQS error err. A tenant's request that no admission decision
 * has settled yet (malformed, too large, naming no queue of the tenant)
 * is charged one token of the tenant's rate, so that bad requests draw on
 * the same budget as good ones. Always takes ownership of ctx. */
void gw__act_fail(struct gw_act_ctx *ctx, const struct gw_sqs_err *err);

/* Starts a reply to ctx's request in its protocol (gw_sqs_reply_init_for);
 * the caller writes it with a gw_sqs_reply_*() function, finishes and
 * fini's it. */
void gw__act_reply_init(const struct gw_act_ctx *ctx, struct gw_sqs_reply *reply);

/* Sends the 200 of an action without output. Always takes ownership of
 * ctx. */
void gw__act_reply_empty(struct gw_act_ctx *ctx);

/* Sends InternalError / ServiceUnavailable / QueueDoesNotExist for an
 * engine status. Always takes ownership of ctx. */
void gw__act_fail_storage(struct gw_act_ctx *ctx, int status);
/* The error gw__act_fail_storage answers for status (a batch entry's). */
void gw__act_storage_err(int status, struct gw_sqs_err *err);

/* The handler of every action not implemented yet: UnsupportedOperation,
 * "<Action> is not implemented yet". Always takes ownership of ctx. */
gw_act_fn gw__act_not_implemented;

/* AddPermission / RemovePermission: sluice has no IAM. Always takes
 * ownership of ctx. */
gw_act_fn gw__act_no_iam;

/* ---- queues ------------------------------------------------------------- */

/* A queue as the request resolved it: tenant and name as C strings and
 * the engine's id and typed config. */
struct gw_queue {
    char tenant[65];
    char name[GW_SQS_MAX_QUEUE_NAME_LEN + 1];
    uint64_t id;
    struct part_queue_config cfg;
};

/* Finds the queue tenant/name for the request's principal: a tenant
 * reaches only queues carrying its own name (others answer as
 * nonexistent, so neither data nor existence leaks), the admin any
 * configured tenant's. Returns SL_OK and fills *q, or SL_ENOTFOUND.
 * Does not end the request. */
int gw__act_find_queue(const struct gw_act_ctx *ctx, struct sl_slice tenant, struct sl_slice name,
                       struct gw_queue *q);

/* gw__act_find_queue for the queue ref names, remembered in ctx for the
 * per-queue counters. Returns SL_OK and fills *q, or SL_ENOTFOUND after
 * failing the request with QueueDoesNotExist. On failure takes ownership
 * of ctx. */
int gw__act_resolve(struct gw_act_ctx *ctx, const struct gw_sqs_queue_ref *ref, struct gw_queue *q);

/* "http[s]://AUTHORITY/TENANT/NAME" of the request's own authority. */
void gw__act_queue_url(const struct gw_act_ctx *ctx, const char *tenant, const char *name,
                       struct sl_buf *out);
/* "arn:aws:sqs:REGION:TENANT:NAME". */
void gw__act_queue_arn(const struct gw_act_ctx *ctx, const char *tenant, const char *name,
                       struct sl_buf *out);

/* ---- policy ------------------------------------------------------------- */

/* Before the body is parsed: a tenant that owes a whole burst (malformed
 * requests are charged a token each, pol_gcra_charge) is answered
 * RequestThrottled at once, with Retry-After for its debt, so that a
 * flood costs an authentication, not a decode. Like every throttled
 * answer it is not charged. A spill-mode tenant's sends go on, to be
 * spilled at admission. Returns SL_OK, or SL_EBUSY when it ended the
 * request. */
int gw__act_precheck(struct gw_act_ctx *ctx);

/* Right after authentication: takes one of the tenant's concurrent
 * request slots (limits.max_concurrent_requests, over all its connections
 * and loops), held until the request ends; ending it gives the slot back.
 * Past the cap the request is answered RequestThrottled at once (not
 * charged, as no throttled request is) and does no work. The admin is
 * not counted. Returns SL_OK, or SL_EBUSY when it ended the request. */
int gw__act_enter(struct gw_act_ctx *ctx);

/* The shard size k under snap: its shard_size, at most the engine's
 * partition count P (set in *partitions) and GW_MAX_SHARD. Any thread. */
uint32_t gw__act_shard_k(const struct gw_api *api, const struct cfg_snapshot *snap,
                         uint32_t *partitions);

/* The tenant's shard (k partitions, best first), from the loop's cache.
 * Returns k. */
uint32_t gw__act_shard(struct gw_act_ctx *ctx, const char *tenant, const uint32_t **shard);

/* Asks policy whether the request may go on: the tenant's bucket, the
 * per-queue bucket of the tenant's queue named queue and the per-action
 * bucket of ctx->action, where the configuration sets them. Admin
 * requests are never limited. Returns SL_OK with *spill telling a send to
 * use the overflow lane, or SL_EBUSY after failing the request
 * (RequestThrottled, or OverLimit for the in-flight bound; a refusal
 * spends no token). Called once per request, by the dispatcher or by the
 * handlers gw_api.c's handler_admits() names, never both. On failure
 * takes ownership of ctx. */
int gw__act_admit(struct gw_act_ctx *ctx, const char *tenant, const char *queue,
                  enum pol_action_class action, uint32_t cost, bool *spill);

#endif
