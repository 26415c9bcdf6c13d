/*
 * gw_act.h -- (gateway-internal) the actions room's one header for the
 * layers above it (the dispatcher gw_api.c, the admin listener): the SQS
 * action handlers, grouped by concern, and the services they share --
 * the request context, the API's long-lived and per-loop state, ending a
 * request, resolving its queue under tenant isolation, queue URLs and
 * ARNs, placement and admission through policy (gw_act.c); paused queues,
 * message move tasks and their durable state in ops.db; stored message
 * attributes; the request counters behind /metrics; SigV4 over a request.
 * The room sits above the SQS codec (gw_sqs.h) and the transport
 * (gw_transport.h).
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
#include <stddef.h>
#include <stdint.h>

#include "cfg.h"
#include "gw_sqs.h"
#include "gw_transport.h"
#include "part.h"
#include "pol.h"
#include "sigv4.h"
#include "sl.h"

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
    struct gw_metrics *metrics;       /* owned; request counters (gw_metrics.c) */
    struct gw_connlimit *conns;       /* SQS listener's caps, borrowed; NULL in tests */
    struct gw_connlimit *admin_conns; /* admin listener's, borrowed; may be NULL */
    struct gw_budget *budget;         /* SQS listener's memory budgets, borrowed; may be NULL */
    /* Failed admin authentications per client address, all loops: past
     * its rate, that address's admin requests are refused before their
     * credentials are checked (gw_peer_ration.h); owned. */
    struct gw_peer_ration *admin_auth_failures;
    struct pol_gcra admin_writes; /* the admin listener's write rate, all loops */
    struct gw_opstore *ops;       /* durable operations state (gw_opstore.c) */
    struct gw_pause_set *paused;  /* paused queues (gw_pause.c) */
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
    bool auto_created;               /* a send that created its queue (gw__act_auto_create) */
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

/* SL_OK when this node can say a queue does not exist: one node always,
 * a cluster's node once it has caught up (part_engine_ready). Otherwise
 * fails the request with ServiceUnavailable, taking ownership of ctx,
 * and returns SL_EUNAVAIL: a lookup that missed proves nothing then. */
int gw__act_not_ready(struct gw_act_ctx *ctx);

/* gw__act_find_queue for the queue ref names, remembered in ctx for the
 * per-queue counters. Returns SL_OK and fills *q, or SL_ENOTFOUND after
 * failing the request with QueueDoesNotExist (SL_EUNAVAIL and
 * ServiceUnavailable on a cluster's node still catching up). On failure takes ownership
 * of ctx. */
int gw__act_resolve(struct gw_act_ctx *ctx, const struct gw_sqs_queue_ref *ref, struct gw_queue *q);

/* Whether tenant may create the queue name now (gw_act_queue.c): not
 * within 60 s of its deletion (QueueDeletedRecently), nor past the
 * tenant's limits.max_queues (OverLimit) unless it exists. Returns SL_OK,
 * or SL_EINVAL with err set. */
int gw__act_queue_may_create(struct gw_act_ctx *ctx, const char *tenant, const char *name,
                             struct gw_sqs_err *err);

/* A send to a queue that does not exist, from a tenant whose
 * auto_create_queues is on (docs/api.md, "Beyond SQS"): creates the
 * queue the ref names, with SQS's default attributes (FIFO when the name
 * ends in .fifo), then runs resume(ctx), which sends as if it had
 * existed. Returns true when it took the request over (the creation is
 * under way, or an OverLimit was answered), false when auto-creation does
 * not apply (the caller answers QueueDoesNotExist): off for the tenant,
 * the admin, another tenant's URL, a name SQS would refuse, a queue
 * deleted less than 60 s ago, or a request that created its queue
 * already. */
bool gw__act_auto_create(struct gw_act_ctx *ctx, const struct gw_sqs_queue_ref *ref,
                         gw_act_fn *resume);

/* Whether gw__act_auto_create would try to create the queue ref names (it
 * may still answer OverLimit): for refusing a send that the new queue
 * would refuse before the queue is made. */
bool gw__act_auto_create_applies(const struct gw_act_ctx *ctx, const struct gw_sqs_queue_ref *ref);

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

/* ---- operations state in ops.db (gw_opstore.c) ---------------------------- */

/*
 * the gateway's durable operations
 * state (gw_opstore.c): message move-task history and paused queues, in
 * data_dir/ops.db beside the engine's files. They are operators' state,
 * not messages: the engine's catalog stays the queues' alone.
 *
 * Threading: any thread; calls are serialised by the store's mutex and
 * each is one short SQLite transaction (rare: a task's start, progress at
 * most once a second, its end; a pause).
 */

struct gw_opstore;

#define GW_OPSTORE_FILE "ops.db"

/* Opens or creates data_dir/ops.db. fsync: every commit reaches the disk
 * (durability: fsync), else it survives a crash of the process (os), as
 * the engine's own files do. Returns SL_OK and *out, or SL_EIO with a
 * sentence in err. */
int gw_opstore_open(const char *data_dir, bool fsync, struct gw_opstore **out, char *err,
                    size_t errlen);
void gw_opstore_close(struct gw_opstore *s);
/* The file's path (borrowed; for backups). */
const char *gw_opstore_path(const struct gw_opstore *s);

/* Writes a consistent copy of ops.db to path (VACUUM INTO on a read-only
 * connection of its own). SL_OK, or SL_EIO with a sentence in err. */
int gw_opstore_backup(struct gw_opstore *s, const char *path, char *err, size_t errlen);

/* One move task as stored. Strings are borrowed (NULL: none). */
struct gw_op_task {
    const char *id;
    const char *tenant;
    const char *source; /* queue name */
    const char *source_arn;
    const char *destination; /* queue name, NULL: each message's source */
    const char *dest_arn;
    uint64_t source_id;
    int32_t rate;
    int64_t to_move;
    int64_t moved;
    const char *status; /* RUNNING, COMPLETED, ... */
    const char *error;  /* NULL: none */
    uint64_t started_ms;
    uint64_t finished_ms; /* 0: not finished */
};

/* Upserts t by id, keeping at most keep tasks of its source (the newest).
 * Returns SL_OK or SL_EIO (logged). */
int gw_opstore_put_task(struct gw_opstore *s, const struct gw_op_task *t, size_t keep);

typedef void gw_op_task_fn(void *arg, const struct gw_op_task *t);
/* Calls fn for every stored task, oldest first. SL_OK or SL_EIO. */
int gw_opstore_load_tasks(struct gw_opstore *s, gw_op_task_fn *fn, void *arg);

/* Sets queue_id's pause flags (0 clears them). SL_OK or SL_EIO. */
int gw_opstore_put_pause(struct gw_opstore *s, uint64_t queue_id, unsigned flags);

typedef void gw_op_pause_fn(void *arg, uint64_t queue_id, unsigned flags);
/* Calls fn for every paused queue. SL_OK or SL_EIO. */
int gw_opstore_load_pauses(struct gw_opstore *s, gw_op_pause_fn *fn, void *arg);

/* ---- paused queues (gw_pause.c) ------------------------------------------- */

/*
 * paused queues (gw_pause.c): an
 * operator stops a queue's sends, its receives, or both, durably
 * (gw_opstore), without touching its messages.
 *
 * A send to a queue paused for enqueue fails with QueuePaused (a
 * non-retryable sender fault, in both SQS protocols). A receive on a
 * queue paused for dequeue takes nothing and answers empty after its wait
 * time, so long-polling consumers idle instead of spinning; at shutdown
 * the held receives answer at once. Receives that were already waiting
 * in the partitions when the pause came are stopped there
 * (part_queue_set_dequeue_paused): they lease nothing and answer empty
 * at their deadline.
 *
 * Threading: gw__pause_flags from any thread (lock-free while no queue
 * is paused, the common case); gw__pause_set from any thread; a hold on
 * its request's loop thread.
 */

/* The partitions' bits: a cluster keeps the flags in its catalog. */
#define GW_PAUSE_ENQUEUE PART_PAUSE_ENQUEUE
#define GW_PAUSE_DEQUEUE PART_PAUSE_DEQUEUE

/* queue_id's pause flags (0: not paused). A cluster's node reads them
 * from the replicated catalog (part_queue_pause), so a pause made through
 * any node holds on every node. */
unsigned gw__pause_flags(struct gw_api *api, uint64_t queue_id);

/* Whether the pauses live in a cluster's replicated catalog (set through
 * part_queue_set_pause, asynchronously) rather than here. */
bool gw__pause_replicated(const struct gw_api *api);

/* One node: adds (pause) or removes (!pause) the bits of which on
 * queue_id, durably first, as one step against concurrent calls; *before
 * and *after get the flags around it (equal when nothing changed). SL_OK,
 * or SL_EIO when ops.db could not record it (nothing changed, *after ==
 * *before). A cluster's node: SL_EINVAL (gw__pause_replicated), nothing
 * changed. */
int gw__pause_set(struct gw_api *api, uint64_t queue_id, unsigned which, bool pause,
                  unsigned *before, unsigned *after);

/* "none", "enqueue", "dequeue" or "both": the SluicePaused attribute. */
const char *gw__pause_name(unsigned flags);

/* Answers ctx's ReceiveMessage with no messages after wait_ms (at once
 * when 0, when the loop drains, or when the client goes away). Always
 * takes ownership of ctx. */
void gw__pause_hold_receive(struct gw_act_ctx *ctx, uint32_t wait_ms);

/* api_init loads the paused queues from ops.db (opened by then);
 * loop_drain answers the loop's held receives; api_free frees the set. */
extern const struct gw_act_hooks gw__pause_hooks;

/* ---- message move tasks (gw_move.c) --------------------------------------- */

/*
 * message move tasks (DLQ redrive), the
 * machinery both doors use: SQS's StartMessageMoveTask family
 * (gw_act_move.c) and the admin API's /api/redrives (gw_admin_redrive.c).
 * One registry, one runner, one history, whichever door started a task.
 *
 * History is durable (gw_opstore, ops.db): at most GW_MOVE_HISTORY tasks
 * per source queue, newest first. A task that was running when the
 * process stopped shows FAILED with reason "Interrupted" after the
 * restart; the messages it moved stay moved (each batch is a commit), and
 * a new task moves the rest.
 *
 * Threading: start on a loop thread (the runner lives on that loop);
 * visit and cancel from any thread (the registry mutex).
 */

#define GW_MOVE_HISTORY 10 /* tasks kept per source queue (ListMessageMoveTasks' max) */

/* What a new task moves. Strings are copied. */
struct gw_move_spec {
    const char *tenant;
    const char *source; /* queue name */
    uint64_t source_id;
    const char *source_arn;
    const char *destination; /* NULL: each message back to its source */
    uint64_t dest_id;        /* 0 with destination NULL */
    const char *dest_arn;
    int32_t rate;    /* messages a second; 0: as fast as the system allows */
    int64_t to_move; /* the source's ready messages now */
};

/* Starts a task on loop l; id receives its id. Returns SL_OK, or SL_EEXIST
 * when a task already runs on that source (nothing started). */
int gw__move_start(struct gw_api_loop *l, const struct gw_move_spec *spec,
                   char id[GW_SQS_TASK_ID_LEN + 1]);

/* A task as visit shows it: its stored form (above; status is one
 * of RUNNING, CANCELLING, COMPLETED, CANCELLED, FAILED, and error is set
 * for FAILED only) and what only a live registry knows. Every pointer is
 * valid during the call only. */
struct gw_move_view {
    struct gw_op_task task;
    const char *handle; /* the SQS TaskHandle */
    bool running;       /* RUNNING (Cancel applies) */
    bool held;          /* RUNNING, waiting for a destination paused for enqueue */
};

typedef void gw_move_visit_fn(void *arg, const struct gw_move_view *v);

/* Calls fn for up to max tasks, newest first, that match every filter
 * given: source_id (0: any), tenant and id (NULL: any). Returns how many. */
size_t gw__move_visit(struct gw_api *api, uint64_t source_id, const char *tenant, const char *id,
                      size_t max, gw_move_visit_fn *fn, void *arg);

/* Asks the RUNNING task id (of source_id; 0: any source) to stop: it is
 * CANCELLING until its runner's next tick, then CANCELLED. SL_OK with
 * *moved so far, or SL_ENOTFOUND (no such task, or not running). */
int gw__move_cancel(struct gw_api *api, uint64_t source_id, const char *id, int64_t *moved);

/* api_init: loads the history; loop_drain: the loop's tasks stop taking
 * batches (one in flight still commits); api_free: frees the registry. */
extern const struct gw_act_hooks gw__move_hooks;

/* ---- stored message attributes (gw_attrs.c) ------------------------------- */

/*
 * the stored form of message attributes
 * (gw_attrs.c).
 *
 * Attributes are stored in the very byte layout SQS hashes for
 * MD5OfMessageAttributes (name, type, transport byte, value, with 4-byte
 * big-endian lengths), sorted by name, so a receive can filter and hash
 * them without another format. System attributes kept with a message
 * (AWSTraceHeader, SenderId) use the same layout with String values.
 */

/* The most system attributes a message keeps. */
#define GW_SYSATTR_MAX 4

/* Appends the n attributes to out. */
void gw__attrs_encode(const struct gw_sqs_msg_attr *attrs, size_t n, struct sl_buf *out);

/* Decodes a stored blob into at most cap attributes borrowing from blob.
 * Returns the count, or SL_EINVAL for a corrupt blob. */
int gw__attrs_decode(struct sl_slice blob, struct gw_sqs_msg_attr *out, size_t cap);

/* ---- request counters and /metrics (gw_metrics.c) ------------------------- */

/*
 * the counters behind the admin
 * listener's GET /metrics, and their rendering in the Prometheus text
 * exposition format (version 0.0.4).
 *
 * Two kinds of numbers:
 *  - counters and histograms the request path bumps (gw_metrics_count_*,
 *    gw_metrics_observe_*): per tenant, kept in a table of per-tenant
 *    blocks of relaxed atomic counters; a tenant's block is made on its
 *    first request and lives until gw_metrics_free, so the hot path costs
 *    one lock-free lookup and one atomic add per number;
 *  - gauges read at scrape time from their owners (the partitions'
 *    catalog counts and writer statistics, the limiter's buckets).
 *
 * Threading: gw_metrics_new/free on one thread with no user left; every
 * other function from any thread.
 * Ownership: the metrics object belongs to struct gw_api; tenant names are
 * copied.
 */

struct cfg_snapshot;
struct part_engine;
struct pol_limiter;
struct gw_metrics;

/* Tenant label of requests made with the admin credentials, and of
 * requests that never authenticated. */
#define GW_METRICS_ADMIN_TENANT "(admin)"
#define GW_METRICS_NO_TENANT "-"

struct gw_metrics *gw_metrics_new(void);
void gw_metrics_free(struct gw_metrics *m);

/* One finished SQS request: sluice_requests_total{tenant,action,outcome}
 * (outcome "ok" or the error's query code) and
 * sluice_request_duration_seconds{action}. tenant NULL = GW_METRICS_NO_TENANT;
 * action GW_SQS_ACT__COUNT = a request that was never routed. */
void gw_metrics_count_request(struct gw_metrics *m, const char *tenant, enum gw_sqs_action action,
                              enum gw_sqs_error outcome, uint64_t duration_ns);

/* The same request once more by the queue it named (resolved and owned
 * by the caller): sluice_queue_requests_total{tenant,queue,action,outcome},
 * outcome reduced to ok / throttled / client_error / server_error. */
void gw_metrics_count_queue_request(struct gw_metrics *m, uint64_t queue_id,
                                    enum gw_sqs_action action, enum gw_sqs_error outcome);

/* A ReceiveMessage of the queue answered with no message, after any
 * long-poll wait (the Builders' Library's "polls that come back empty"):
 * sluice_queue_empty_receives_total{tenant,queue}. For the receive path. */
void gw_metrics_count_empty_receive(struct gw_metrics *m, uint64_t queue_id);

/* n messages of tenant accepted into the overflow lane (spill mode):
 * sluice_spilled_messages_total{tenant}. For the send path. */
/* Counts an admin request that failed authentication, or (throttled) was
 * refused unchecked because failures came too fast. */
void gw_metrics_count_admin_auth(struct gw_metrics *m, bool throttled);

void gw_metrics_count_spill(struct gw_metrics *m, const char *tenant, uint64_t n);
/* n sends to FIFO queue queue_id were duplicates within the
 * deduplication interval (accepted, not stored again). */
void gw_metrics_count_deduplicated(struct gw_metrics *m, uint64_t queue_id, uint64_t n);

/* A message's age at its first receive (SQS's AgeOfFirstAttempt):
 * sluice_first_receive_age_seconds{tenant}. For the receive path. */
void gw_metrics_observe_first_receive_age(struct gw_metrics *m, const char *tenant,
                                          uint64_t age_ms);

/* The latest AgeOfFirstAttempt seen on queue_id (note), and reading it
 * back (0: none seen since start): the admin API's per-queue figure, which
 * a histogram per tenant cannot give. Any thread. */
void gw_metrics_note_queue_first_attempt(struct gw_metrics *m, uint64_t queue_id, uint64_t age_ms);
uint64_t gw_metrics_queue_first_attempt(struct gw_metrics *m, uint64_t queue_id);

/* How long a ReceiveMessage took from request to answer, long-poll wait
 * included: sluice_receive_latency_seconds{tenant}. For the receive path. */
void gw_metrics_observe_receive_latency(struct gw_metrics *m, const char *tenant,
                                        uint64_t duration_ns);

/* Where the scrape-time gauges come from; any member may be NULL (that
 * part is left out). All borrowed for the call. */
struct gw_connlimit;
struct gw_budget;

struct gw_metrics_sources {
    const struct cfg_snapshot *snap;  /* tenants: backlog, in flight, tokens */
    struct part_engine *engine;       /* queues and partitions */
    struct pol_limiter *limiter;      /* rate-limit tokens, long polls */
    uint64_t now_ns;                  /* the limiter's clock (sl_mono_ns) */
    struct gw_connlimit *conns;       /* the SQS listener's caps and refusals */
    struct gw_connlimit *admin_conns; /* the admin listener's */
    struct gw_budget *budget;         /* the SQS listener's memory budgets */
};

/* Appends the whole exposition to out. */
void gw_metrics_render(struct gw_metrics *m, const struct gw_metrics_sources *src,
                       struct sl_buf *out);

/* Appends v as a Prometheus label value (without the quotes): backslash,
 * double quote and newline escaped. */
void gw_metrics_append_label_value(struct sl_buf *out, const char *v);

/* ---- SigV4 over a request (gw_auth.c) ------------------------------------- */

/*
 * SigV4 over a request as the protocol
 * layer delivers it (gw_auth.c): the one place that turns a struct
 * gw_request into what the sigv4 module verifies. The SQS API (gw_api.c)
 * and the admin listener (gw_admin.c) both authenticate through it, each
 * with its own way of finding a secret.
 */

/* Verifies req's signature against v (region, clock, key cache, secret
 * lookup). Returns SL_OK, or what sigv4_authenticate returns, with
 * *failure and *why (may be NULL) set as it sets them. */
int gw__auth_sigv4(const struct gw_request *req, const struct sigv4_verifier *v,
                   enum sigv4_failure *failure, const char **why);

/* ---- the queue actions (gw_act_queue.c) ----------------------------------- */

/*
 * the SQS queue actions
 * (gw_act_queue.c), named in gw_actions.def, and the lifetime hooks of
 * the state they keep (SQS's 60-second rules). Each handler always takes
 * ownership of ctx (see gw_act.h).
 */

gw_act_fn gw__act_create_queue;
gw_act_fn gw__act_get_queue_url;
gw_act_fn gw__act_list_queues;
gw_act_fn gw__act_delete_queue;
gw_act_fn gw__act_get_queue_attributes;
gw_act_fn gw__act_set_queue_attributes;
gw_act_fn gw__act_purge_queue;
gw_act_fn gw__act_list_dead_letter_source_queues;
gw_act_fn gw__act_tag_queue;
gw_act_fn gw__act_untag_queue;
gw_act_fn gw__act_list_queue_tags;

/* Sets up and frees the table of the 60-second rules. */
extern const struct gw_act_hooks gw__act_queue_hooks;

/* ---- the message actions (gw_act_msg.c) ----------------------------------- */

/*
 * the SQS message actions
 * (gw_act_msg.c), named in gw_actions.def. Each handler always takes
 * ownership of ctx (see gw_act.h).
 */

gw_act_fn gw__act_send_message;
gw_act_fn gw__act_send_message_batch;
gw_act_fn gw__act_receive_message;
gw_act_fn gw__act_delete_message;
gw_act_fn gw__act_delete_message_batch;
gw_act_fn gw__act_change_message_visibility;
gw_act_fn gw__act_change_message_visibility_batch;

/* ---- the move-task actions (gw_act_move.c) -------------------------------- */

/*
 * the message move tasks
 * (gw_act_move.c): the SQS actions that start, list and cancel them,
 * named in gw_actions.def, and the lifetime hooks of the task scheduler.
 * Each handler always takes ownership of ctx (see gw_act.h).
 */

gw_act_fn gw__act_start_message_move_task;
gw_act_fn gw__act_list_message_move_tasks;
gw_act_fn gw__act_cancel_message_move_task;

#endif
