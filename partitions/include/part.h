/*
 * part.h -- sluice's durable storage engine: P SQLite partitions, one
 * writer thread each, a durable queue catalog, group commit, timers, long
 * polling and MAC'd receipt handles. See docs/partitions.md.
 *
 * Layering: depends on common (sl.h), SQLite, libuv and OpenSSL only. The
 * gateway decides placement (which partitions a tenant uses, where a send
 * goes) and passes plain partition indexes.
 *
 * Threading:
 *  - part_engine_open/close run on one control thread.
 *  - A struct part_client belongs to one uv_loop_t: every part_* call that
 *    takes a client must be made on that loop's thread, and every
 *    completion (part_done_fn) runs on that loop's thread, exactly once
 *    per accepted job, after the job's effects are committed.
 *  - Catalog reads (part_queue_find/get/list/counts, part_tenant_counts,
 *    part_receipt_decode) are safe from any thread and never touch SQLite.
 *
 * Ownership: request inputs are borrowed for the duration of the call only
 * (the engine copies what it keeps). A struct part_result handed to a
 * completion is owned by the engine and valid only during that callback.
 * Functions returning an owned object say so and name its _free.
 *
 * Status codes (sl.h): every function returning int returns SL_OK or one
 * of the negative codes listed at that function.
 */
#ifndef SLUICE_PART_H
#define SLUICE_PART_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sl.h"

struct uv_loop_s;
struct part_engine;
struct part_client;

/* ---- limits ------------------------------------------------------------ */

#define PART_KEY_LEN 32   /* placement / MAC key bytes */
#define PART_MAX_BATCH 10 /* entries per send/delete/change batch */
#define PART_MAX_PARTITIONS 4096
#define PART_MSG_ID_LEN 36    /* UUID text, without NUL */
#define PART_RECEIPT_MAX 96   /* receipt handle text incl. NUL */
#define PART_GROUP_ID_MAX 128 /* message group id bytes (SQS's limit) */
#define PART_DIGESTS_MAX 64   /* bytes of digests kept with a message */
#define PART_DEDUP_ID_MAX 128 /* FIFO deduplication id bytes (SQS's limit) */
/* FIFO: how long a deduplication id is remembered (SQS's interval). */
#define PART_DEDUP_INTERVAL_MS UINT64_C(300000)
/* FIFO ReceiveRequestAttemptId: at most this many bytes, each printable
 * ASCII other than space (0x21..0x7e), and a retry is one for this long
 * after the receive it repeats (SQS's five minutes). */
#define PART_ATTEMPT_MAX 128
#define PART_ATTEMPT_INTERVAL_MS UINT64_C(300000)
/* Filtered receives (docs/api.md, "Filtered receives"): a message carries
 * at most PART_FILTER_KEYS_MAX indexed (key, value) pairs, a receive or a
 * depth asks for at most PART_FILTER_MAX of them (all must match), and a
 * key or value has 1..PART_FILTER_TEXT_MAX bytes. */
#define PART_FILTER_KEYS_MAX 8
#define PART_FILTER_MAX 4
#define PART_FILTER_TEXT_MAX 256

/* One attribute key and its value, borrowed (not NUL-terminated). */
struct part_filter_pair {
    struct sl_slice key;
    struct sl_slice value;
};

/* ---- engine ------------------------------------------------------------ */

enum part_durability {
    PART_DURABILITY_FSYNC, /* synchronous=FULL: survives power loss */
    PART_DURABILITY_OS,    /* synchronous=NORMAL: survives a process crash */
};

/* Returns "now" in milliseconds since the epoch. Message timestamps and
 * every message timer (delay, lease, retention) use this clock. */
typedef uint64_t part_clock_fn(void *clock_ctx);

/* One member of a cluster, as the engine needs it: where its Raft port is
 * (every group it holds travels there). */
struct part_cluster_node {
    uint16_t id;
    const char *raft_host; /* an IP literal */
    uint16_t raft_port;
    const char *peer_host; /* its peer port, where jobs are forwarded */
    uint16_t peer_port;
};

/* Replication (docs/design.md "Cluster"): the catalog and every partition
 * are a Raft group with every node as a voter. A job for a group another
 * node leads is forwarded to it over the peer ports. */
struct part_cluster_options {
    uint16_t node_id;                      /* one of nodes */
    const struct part_cluster_node *nodes; /* every node, this one included */
    size_t node_count;
    const unsigned char *secret; /* the cluster secret (32+ bytes) */
    size_t secret_len;
    unsigned election_timeout_ms; /* 0: 1000 */
    unsigned snapshot_entries;    /* 0: 4096 */
    /* Bytes this node lends the replicated images (dqlite keeps them in
     * memory); 0: half of physical memory. While the images it holds
     * pass it, part_send fails with SL_EBUDGET. */
    uint64_t memory_budget;
    /* How long a node holds a lead before handing it to the group's
     * preferred node (leads spread round the nodes by id); 0: 10000 ms. */
    unsigned handover_settle_ms;
};

struct part_options {
    const char *data_dir; /* created if missing */
    uint32_t partitions;  /* P, 1..PART_MAX_PARTITIONS */
    enum part_durability durability;
    part_clock_fn *now_ms; /* NULL: sl_wall_ms */
    void *clock_ctx;
    uint32_t checkpoint_pages; /* WAL pages before a checkpoint; 0: 2048 */
    uint32_t max_batch_jobs;   /* jobs per group commit; 0: 1024 */
    /* NULL: one node, its files on disk. Else the catalog and partitions
     * are replicated images (data_dir keeps their logs and snapshots); a
     * job for a group another node leads runs there, and one for a group
     * with no reachable leader fails with SL_EUNAVAIL. Borrowed for the
     * call. */
    const struct part_cluster_options *cluster;
};

/* Opens or creates data_dir: manifest, catalog.db and part-NNNN.db files.
 * Growing P over an existing directory adds empty partitions; shrinking is
 * refused. A partition file that cannot be opened is marked failed (logged;
 * its jobs fail with SL_EIO) and the engine still opens.
 * The engine holds an exclusive lock on data_dir/lock for its life, so a
 * second process cannot open the same directory.
 * Returns SL_OK and sets *out, or:
 *   SL_EINVAL  bad options, or P smaller than the directory's (err says so)
 *   SL_EBUSY   another process has data_dir open (err names its pid)
 *   SL_EIO     data_dir, manifest or catalog unusable (err says why)
 * err (may be NULL) receives a sentence on failure. */
int part_engine_open(const struct part_options *opt, struct part_engine **out, char *err,
                     size_t errlen);

/* A cluster's: this node's id; 0 on one node. Any thread. */
uint16_t part_engine_node_id(const struct part_engine *e);

/* A cluster's: whether this node can serve: it knows the catalog's leader
 * and has applied every catalog entry it knows committed (a node that just
 * started, or is cut off from the majority, cannot: its queues may be
 * stale). Always true on one node. Any thread. */
bool part_engine_ready(const struct part_engine *e);

/* A cluster's node-to-node ports, counted since the node started. */
#define PART_CLUSTER_REJECT_REASONS 10
struct part_cluster_stats {
    /* connections refused at the handshake, on the Raft port and on the
     * peer port, by reason (part_cluster_reject_reason) */
    uint64_t raft_rejected[PART_CLUSTER_REJECT_REASONS];
    uint64_t peer_rejected[PART_CLUSTER_REJECT_REASONS];
    uint64_t peer_frames_in; /* forwarded jobs and their answers */
    uint64_t peer_frames_out;
    uint64_t image_bytes;      /* held by the replicated images on this node */
    uint64_t memory_budget;    /* in force (part_cluster_options.memory_budget) */
    uint64_t budget_refusals;  /* sends refused with SL_EBUDGET */
    uint32_t nodes_configured; /* the nodes of this node's cluster.nodes */
};
/* Fills *out: SL_OK, or SL_EINVAL on one node. Any thread. */
int part_engine_cluster_stats(const struct part_engine *e, struct part_cluster_stats *out);
/* The label of reason i ("bad_mac", "unknown_node", ...), NULL past the
 * last. */
const char *part_cluster_reject_reason(size_t i);

/* A cluster's: whether this node's peer link to node id is up (the
 * keepalive takes a silent node's down within 5 s); true for this node
 * itself, false for an unknown id and on one node. Any thread. */
bool part_engine_node_reachable(const struct part_engine *e, uint16_t id);

/* part_engine_leader's name for the catalog's group. */
#define PART_CATALOG UINT32_MAX

/* A cluster's: the id of the node that leads partition p's group (or the
 * catalog's, p = PART_CATALOG) as this node last learnt it; 0 when none is
 * known, for a p out of range, and on one node. Any thread. */
uint64_t part_engine_leader(const struct part_engine *e, uint32_t p);

/* A cluster's: one Raft group as this node sees it (docs/operations.md,
 * "Watching a cluster"). A follower's commit index is what its leader
 * told it; its lag is the leader's commit index minus its applied one. */
struct part_group_stats {
    uint64_t leader;         /* node id, as part_engine_leader; 0: none known */
    uint64_t term;           /* the latest term this node has seen */
    uint64_t commit_index;   /* the highest entry it knows committed */
    uint64_t applied_index;  /* the highest entry applied to its image */
    uint64_t snapshot_bytes; /* the last snapshot taken or installed since start; 0: none */
    uint64_t leaderless_ms;  /* how long it has known no leader; 0 while it knows one */
    uint32_t voters;         /* voters in the group's configuration */
    /* no leader known for longer than two election timeouts (libraft
     * draws each timeout between one and two): no majority is reachable,
     * so the group takes no writes through this node */
    bool no_quorum;
};

/* A cluster's: fills *out for partition p's group, or the catalog's with
 * p = PART_CATALOG. Returns SL_OK, or SL_EINVAL (zeroed) on one node and
 * for a p out of range. Any thread; each field is read atomically, the set
 * of them not at one instant. */
int part_engine_group_stats(const struct part_engine *e, uint32_t p, struct part_group_stats *out);

/* Answers every waiting receive empty, drains and commits every queued job,
 * joins the writer threads and frees the engine. All clients must be
 * closed first (their jobs completed). */
void part_engine_close(struct part_engine *e);

/* The deployment's 32-byte secret (created on first start, kept in the
 * manifest): for placement hashing; the engine MACs receipt handles with it. */
const uint8_t *part_engine_key(const struct part_engine *e);
uint32_t part_engine_partitions(const struct part_engine *e);
/* False when partition p failed to open or hit a storage error. */
bool part_engine_partition_ok(const struct part_engine *e, uint32_t p);
/* The low-disk watermark: while the free space of data_dir's file system
 * is below bytes (0: off, the default), part_send fails with SL_EBUSY
 * before anything reaches SQLite; receives, deletes and visibility
 * changes still run. Free space is sampled at most once a second. Any
 * thread. */
void part_engine_set_min_free(struct part_engine *e, uint64_t bytes);
/* Free bytes of data_dir's file system as last sampled (sampled now if
 * that was over a second ago; 0 if unknown) and whether sends are refused
 * for lack of space: below the watermark, or since a write found the disk
 * full until the space reserve can be set aside again
 * (docs/partitions.md). Any thread. */
void part_engine_disk(struct part_engine *e, uint64_t *free_bytes, bool *low);

/* Jobs waiting at partition p's writer right now; 0 for a bad p. Any
 * thread. */
int64_t part_engine_partition_queued(const struct part_engine *e, uint32_t p);
/* Partition p's load as the send choice weighs it, in messages, counting
 * every tenant: the ready and delayed messages (both lanes) of every queue
 * stored there as of its last commit, plus the messages of the jobs
 * waiting at its writer (sends to store, receives' leases, receipts,
 * move rows; 1 for any other job). 0 for a bad p. Two relaxed atomic
 * loads, no lock: any thread, on every send (docs/policy.md, "Send"). */
int64_t part_engine_partition_load(const struct part_engine *e, uint32_t p);
/* Makes every writer re-read the clock and run due timers now (for an
 * injected clock that jumped; real time needs no kicks). Any thread. */
void part_engine_kick(struct part_engine *e);
/* Answers every waiting receive of every client empty and makes later
 * receives not wait (shutdown). Any thread. */
void part_engine_drain_polls(struct part_engine *e);

/* ---- per-loop client --------------------------------------------------- */

/* Binds a client to loop (call on the loop's thread). Returns SL_OK. */
int part_client_new(struct part_engine *e, struct uv_loop_s *loop, struct part_client **out);
/* Answers this client's waiting receives empty now (loop_drain). */
void part_client_drain(struct part_client *c);
/* Closes the client's uv handles. No receive may be pending. Other jobs
 * still running (a background move, say) finish and commit as usual, but
 * their completions are no longer called; the memory is freed once the
 * loop ran the close callbacks and the last such job finished. */
void part_client_close(struct part_client *c);

/* ---- queue catalog ----------------------------------------------------- */

/* The typed queue fields the engine itself uses. */
struct part_queue_config {
    uint32_t visibility_timeout_s; /* default lease of a receive */
    uint32_t delay_s;              /* default delay of a send */
    uint32_t retention_s;          /* a message is gone this long after its send */
    bool fifo;
    /* FIFO only: DeduplicationScope messageGroup (a deduplication id is
     * unique within its message group, not within the queue). */
    bool dedup_per_group;
    uint64_t dlq_target_id;     /* dead-letter queue id, 0 = none */
    uint32_t max_receive_count; /* receives before the move, 0 = none */
    /* Kept for the gateway, which checks them on the hot path (the engine
     * itself does not act on them). */
    uint32_t max_message_size; /* MaximumMessageSize, bytes */
    uint32_t receive_wait_s;   /* ReceiveMessageWaitTimeSeconds */
    bool content_based_dedup;  /* FIFO ContentBasedDeduplication */
    bool throughput_per_group; /* FIFO FifoThroughputLimit perMessageGroupId */
    /* sluice's own (docs/api.md, "Beyond SQS"), standard queues only. A
     * priority queue's ready messages are ordered by the priority each
     * send gives (part_send_entry.has_priority) and are never aged into
     * the overflow lane: aging takes a main-lane row's priority for its
     * send time, which a producer's priority is not. */
    bool priority_order;
    /* > 0: a send carrying a deduplication id (part_send_entry.dedup_id)
     * is stored once per id within this many seconds, as a FIFO queue's
     * are within PART_DEDUP_INTERVAL_MS; 0: ids are ignored. At most
     * PART_IDEMPOTENCY_WINDOW_MAX_S. */
    uint32_t idempotency_window_s;
    /* An exclusive queue: each message's group id is its exclusivity
     * value, and while a message of a value is in flight on a partition no
     * other message of that value is leased there, while other values
     * flow (docs/api.md, "Exclusive queues"). Standard queues only; the
     * caller sends a value's messages to the value's home, and part_send
     * places one whose value has live messages where they are, as a FIFO
     * group. */
    bool exclusive;
    /* The queue indexes some message attributes for filtered receives (the
     * gateway's SluiceFilterKeys, a queue attribute: a send looks for
     * them). Only such a queue takes filtered receives and depths, and
     * only its leases and releases keep the index's states; a queue
     * without pays nothing for the feature. */
    bool filtered;
};

#define PART_IDEMPOTENCY_WINDOW_MAX_S 3600u

/* SQS defaults: 30 s visibility, no delay, 4 days retention, no DLQ,
 * 1 MiB messages, no long-poll wait. */
struct part_queue_config part_queue_config_default(void);

struct part_kv {
    const char *key;
    const char *value;
};

/* An owned snapshot of one queue (free with part_queue_info_free). attrs
 * and tags are sorted by key. */
struct part_queue_info {
    uint64_t id; /* unique, never reused */
    char *tenant;
    char *name;
    uint64_t created_ms;
    uint64_t modified_ms;
    struct part_queue_config cfg;
    struct part_kv *attrs; /* strings owned by the info */
    size_t attr_count;
    struct part_kv *tags;
    size_t tag_count;
};
void part_queue_info_free(struct part_queue_info *qi);

/* Cheap lookup from any thread (in-memory index). Sets *id and, when cfg
 * is not NULL, *cfg. Returns SL_OK or SL_ENOTFOUND. */
int part_queue_find(struct part_engine *e, const char *tenant, const char *name, uint64_t *id,
                    struct part_queue_config *cfg);
/* Full snapshot by id. Returns SL_OK with *out owned by the caller, or
 * SL_ENOTFOUND. */
int part_queue_get(struct part_engine *e, uint64_t id, struct part_queue_info **out);

struct part_queue_ref {
    uint64_t id;
    char *tenant;
    char *name;
};
struct part_queue_list {
    struct part_queue_ref *items; /* sorted by (tenant, name) */
    size_t count;
};
/* Queues of tenant (NULL: every tenant) whose name starts with prefix
 * (NULL or "": all). Fills *out (free with part_queue_list_free). SL_OK. */
int part_queue_list(struct part_engine *e, const char *tenant, const char *prefix,
                    struct part_queue_list *out);
/* Queues whose dead-letter target is target_id, sorted. SL_OK. */
int part_queue_dlq_sources(struct part_engine *e, uint64_t target_id, struct part_queue_list *out);
void part_queue_list_free(struct part_queue_list *l);

/* Message counts, exact as of the last commit. The overflow lane's
 * messages are counted in ready / delayed as well (SQS's attributes know
 * no lanes); overflow_* say how many of them are in that lane. */
struct part_counts {
    int64_t ready;
    int64_t inflight;
    int64_t delayed;
    int64_t overflow_ready;
    int64_t overflow_delayed;
    /* send time of the oldest ready message; 0: none, or unknown on a
     * priority queue (its heads are producers' priorities, not times) */
    uint64_t oldest_ready_ms;
    /* the lowest priority ready (either lane), as of the last commits;
     * INT64_MAX: none. On a priority queue, the producers' numbers. */
    int64_t best_priority;
    int64_t groups_inflight; /* message groups with a message in flight (FIFO: locked) */
    /* Exclusive queues: ready messages of held values, as the last receive
     * on each partition found them while choosing (exact when it looked
     * at every ready message, a lower bound when it filled up first; at
     * most 4096 a partition). */
    int64_t exclusive_blocked;
    /* FIFO, summed over partitions only (0 per partition): groups with a
     * live message, and of them those on more than one partition (see
     * docs/partitions.md, "The group directory"). */
    int64_t groups_live;
    int64_t groups_split;
};
/* partition == PART_ALL_PARTITIONS: summed over partitions. Returns SL_OK,
 * SL_ENOTFOUND (no such queue) or SL_EINVAL (bad partition). */
#define PART_ALL_PARTITIONS UINT32_MAX
int part_queue_counts(struct part_engine *e, uint64_t queue_id, uint32_t partition,
                      struct part_counts *out);
/* Pauses (or resumes) queue_id's receives: while paused, no receive
 * leases a message -- including long polls already waiting, which keep
 * waiting until their deadline and answer empty. Resuming wakes waiting
 * receives when messages are ready. In memory only (the caller keeps it
 * durably and sets it again after each open). Any thread. Returns SL_OK
 * or SL_ENOTFOUND. */
int part_queue_set_dequeue_paused(struct part_engine *e, uint64_t queue_id, bool paused);
/* An operator's pause, as a cluster replicates it (part_queue_set_pause):
 * sends refused, receives answered empty. */
#define PART_PAUSE_ENQUEUE 1u
#define PART_PAUSE_DEQUEUE 2u
/* A cluster's: queue_id's pause flags as this node's replicated catalog
 * holds them (0 when not paused, unknown, or on one node). Any thread. */
unsigned part_queue_pause(struct part_engine *e, uint64_t queue_id);

/* A tenant's totals over all its queues: backlog = ready + delayed. Unknown
 * tenants count zero. */
void part_tenant_counts(struct part_engine *e, const char *tenant, int64_t *backlog,
                        int64_t *inflight);

/* Buckets of the writer queueing-delay histogram: PART_WAIT_BUCKETS - 1
 * upper bounds (part_wait_bounds_us) and +Inf. */
#define PART_WAIT_BUCKETS 16
/* The PART_WAIT_BUCKETS - 1 finite upper bounds, in microseconds,
 * ascending (static storage). */
const uint64_t *part_wait_bounds_us(void);

/* What the timers and the receive path did to a tenant's messages since
 * the engine opened (counters only grow). */
struct part_tenant_stats {
    uint64_t expired;       /* dropped at the end of their queue's retention */
    uint64_t aged;          /* moved from the main to the overflow lane for age */
    uint64_t dead_lettered; /* moved to a dead-letter queue past maxReceiveCount */
    /* How long its jobs waited at partition writers, from reaching a
     * writer's queue to being taken into a group commit: per bucket (not
     * cumulative; the last is +Inf) and the sum. */
    uint64_t wait_bucket[PART_WAIT_BUCKETS];
    uint64_t wait_sum_us;
};
/* Unknown tenants count zero. Any thread. */
void part_tenant_stats(struct part_engine *e, const char *tenant, struct part_tenant_stats *out);

/* Ready messages of tenant's queues that have waited aged_after_ms since
 * their send move from the main lane to the overflow lane (the Builders'
 * Library's "sideline aged traffic": after an outage fresh work goes
 * first). 0 turns aging off, the default for a tenant never set. A longer
 * or shorter age takes effect at the next commit that touches a queue, or
 * at the latest when the previously scheduled check fires. Any thread. */
void part_tenant_set_aging(struct part_engine *e, const char *tenant, uint64_t aged_after_ms);

/* Caps the jobs tenant may have waiting at any one partition writer: a
 * send, receive, delete or visibility change past it completes at once
 * with SL_ELIMIT, nothing done, so that a tenant's flood cannot fill a
 * writer's queue however many connections it has (the gateway sets it to
 * the tenant's limits.max_concurrent_requests). 0, the default, is no cap;
 * a change applies to jobs submitted after it. Any thread. */
void part_tenant_set_job_cap(struct part_engine *e, const char *tenant, uint32_t cap);

/* ---- jobs and completions ---------------------------------------------- */

/* Whatever the caller needs to find its request again; the engine never
 * dereferences ptr. */
struct part_cookie {
    void *ptr;
    uint64_t id;
    uint64_t gen;
};

struct part_sent {
    char message_id[PART_MSG_ID_LEN + 1];
    uint32_t partition;
    /* Standard queues: the row, which increases with every send on that
     * partition. FIFO queues: the message's SequenceNumber, which
     * increases with every FIFO send of the engine (so within every
     * group) and never goes backwards across restarts. */
    uint64_t sequence;
    /* FIFO: a message with this deduplication id was sent within the
     * interval; nothing was stored, message_id and sequence are the
     * first one's. */
    bool duplicate;
};

struct part_message {
    char message_id[PART_MSG_ID_LEN + 1];
    char receipt[PART_RECEIPT_MAX];
    uint64_t queue_id;
    uint64_t source_queue_id; /* queue it was dead-lettered from, or 0 */
    uint32_t partition;
    struct sl_slice body;
    struct sl_slice attrs;     /* opaque, as sent */
    struct sl_slice sys_attrs; /* opaque, as sent */
    struct sl_slice digests;   /* opaque, as sent; empty for rows stored before
                                  partition schema 2 */
    const char *group_id;      /* NULL when none */
    const char *dedup_id;      /* FIFO: its deduplication id; NULL otherwise */
    int64_t priority;          /* FIFO: the SequenceNumber */
    uint32_t receive_count;    /* including this receive */
    uint64_t sent_ms;
    uint64_t first_receive_ms;
    uint64_t last_receive_ms; /* part_peek only (0 elsewhere): the latest
                                 lease, 0 if never received */
    uint64_t sequence;
};

/* The outcome of one job, valid only during its completion callback. Which
 * fields are set depends on the job; see each submit function. */
struct part_result {
    struct part_sent *sent; /* send: one per entry, in order */
    size_t sent_count;
    struct part_message *messages; /* receive */
    size_t message_count;
    /* delete / change visibility: one per entry; a FIFO send the engine
     * fanned out over partitions: one per message (NULL otherwise) */
    int *entry_status;
    size_t entry_count;
    struct part_queue_info *queue; /* catalog ops (also on SL_EEXIST) */
    uint64_t purged;               /* purge / delete queue: messages removed */
    /* move (part_move) */
    uint64_t moved;        /* messages moved */
    uint64_t move_skipped; /* ready messages left in place: no usable destination */
    uint64_t move_cursor;  /* the last row looked at: resume after it */
    bool move_exhausted;   /* no ready row of the queue after the cursor remains */
    bool move_held;        /* a row was left for its held destination */
};

typedef void part_done_fn(struct part_cookie cookie, int status, const struct part_result *res);

/* Submit functions share these returns (nothing is submitted, no
 * completion will run): SL_EINVAL bad arguments (count out of 1..10,
 * partition out of range, ...), SL_ENOTFOUND no such queue, SL_ECLOSED
 * engine closing. When they return SL_OK the completion runs exactly once.
 * Completion statuses: SL_OK; SL_EIO partition failed or the commit
 * failed (nothing of the job is stored); SL_ENOTFOUND the queue was
 * deleted meanwhile; others as listed. */

/* Each queue has two lanes of ready and delayed messages. Receives serve
 * the main lane first and the overflow lane when the main lane has nothing
 * ready, except on a guarded turn (part_receive_req.overflow_every). A
 * message's lane never changes its SQS-visible state or counts. */
enum part_lane {
    PART_LANE_MAIN = 0,
    PART_LANE_OVERFLOW = 1, /* spilled sends, and aged ready messages */
};

/* One message to send; every field is borrowed. */
struct part_send_entry {
    struct sl_slice body;
    struct sl_slice attrs;
    struct sl_slice sys_attrs;
    /* Opaque, at most PART_DIGESTS_MAX bytes: what the caller computed once
     * from the message (the gateway's MD5s) and wants back on receive. */
    struct sl_slice digests;
    struct sl_slice group_id; /* n == 0: none; at most PART_GROUP_ID_MAX */
    /* FIFO queues: the deduplication id (required there, at most
     * PART_DEDUP_ID_MAX; the caller makes it from the body for content-
     * based deduplication). A second send with the same id (within its
     * group under dedup_per_group) within PART_DEDUP_INTERVAL_MS stores
     * nothing and answers part_sent.duplicate. On a standard queue with
     * idempotency_window_s > 0 it is optional and deduplicates the same
     * way within that window (the id alone is the key); ignored on other
     * standard queues. */
    struct sl_slice dedup_id;
    int32_t delay_s;   /* < 0: the queue's default */
    bool has_priority; /* false: priority = send time in ms */
    int64_t priority;
    enum part_lane lane;
    /* The message's indexed attribute values (0..PART_FILTER_KEYS_MAX,
     * distinct keys): a filtered receive finds it through them alone.
     * Standard queues only (SL_EINVAL on a FIFO queue). */
    const struct part_filter_pair *filters;
    size_t filter_count;
};

/* Stores 1..PART_MAX_BATCH messages in queue_id on one partition, in one
 * transaction. res->sent has one entry per message. On a FIFO queue every
 * entry needs a group id and a deduplication id (else SL_EINVAL), its
 * priority is its sequence number (has_priority is ignored) and the
 * entries are sequenced in their order. On an exclusive queue every
 * entry needs a group id (its value; else SL_EINVAL) and is placed as a
 * FIFO group is. On a FIFO queue partition is the
 * home of the entries' groups: a group with live messages goes where they
 * are instead (docs/partitions.md, "The group directory"), so the
 * messages may land on several partitions, one transaction each; then
 * res->entry_status has one status per message (a failed partition fails
 * its messages alone, the job completes SL_OK) and res->sent[i].partition
 * says where each went. Returns SL_EBUSY at
 * once below the low-disk watermark (part_engine_set_min_free) and, after
 * a write found the disk full, until the space reserve is set aside again;
 * the job completes with SL_EBUSY when the disk is full or the partition
 * waits for space to open (transient: retry). A cluster's node returns
 * SL_EBUDGET at once while its replicated images hold more than its
 * memory_budget (part_cluster_options), and a job for a group with no
 * reachable leader completes with SL_EUNAVAIL (both transient). */
int part_send(struct part_client *c, uint64_t queue_id, uint32_t partition,
              const struct part_send_entry *entries, size_t n, struct part_cookie cookie,
              part_done_fn *done);

/* Whether a message group with group_inflight of its queue's
 * queue_inflight messages in flight (counted on one partition) is noisy.
 * Called on writer threads: it must be pure, and monotone (a group with
 * more in flight is no less noisy). The policy module supplies it. */
typedef bool part_noisy_fn(uint64_t group_inflight, uint64_t queue_inflight);

struct part_receive_req {
    uint64_t queue_id;
    const uint32_t *partitions; /* where the queue's messages may live */
    size_t partition_count;     /* 1..PART_MAX_PARTITIONS */
    uint32_t max_messages;      /* 1..PART_MAX_BATCH */
    int32_t visibility_s;       /* < 0: the queue's default */
    uint32_t wait_ms;           /* long poll; 0: answer at once */
    /* Starvation guard: every overflow_every-th receive of the queue
     * serves the overflow lane first. 0: the main lane always first. */
    uint32_t overflow_every;
    /* Fair dequeue by message group (SQS fair queues): a noisy group's
     * messages are taken only when no quiet group's (or group-less) are
     * ready among the fair_window best ready messages of a partition.
     * NULL: no fair dequeue, the best messages whatever their group. */
    part_noisy_fn *noisy;
    uint32_t fair_window; /* 0: PART_FAIR_WINDOW */
    /* FIFO queues: the ReceiveRequestAttemptId (n == 0: none; ignored on
     * standard queues). See part_receive. */
    struct sl_slice attempt;
    /* With an attempt id on a FIFO queue: only the retry's replay; when
     * nothing of the attempt is left, complete with no message instead of
     * leasing (a queue at its in-flight quota still answers its retries). */
    bool replay_only;
    /* A filtered receive (filter_count 1..PART_FILTER_MAX, distinct keys):
     * only messages sent with every one of these pairs among their
     * part_send_entry.filters, in the queue's order, found through the
     * index of the first pair (it reads no message that lacks it). Not on
     * FIFO queues (SL_EINVAL); it ignores noisy and the exact priority
     * merge across partitions (each partition gives its best matches).
     * Only on a queue with part_queue_config.filtered (SL_EINVAL). */
    const struct part_filter_pair *filter;
    size_t filter_count;
};

#define PART_FAIR_WINDOW 256

/* Leases up to max_messages of the best (priority, sequence) ready
 * messages. With none ready it waits up to wait_ms for a commit making one
 * ready, then completes with res->message_count == 0. Messages over the
 * queue's maxReceiveCount move to its dead-letter queue instead.
 *
 * With an attempt id on a FIFO queue, every message leased is stamped
 * with it in its row. A later receive with the same attempt id (a retry)
 * first looks on each partition of its read set holding messages in
 * flight: the messages of that attempt still in flight under the lease
 * it took (not deleted, their visibility not changed, the lease not run
 * out nor re-received) and taken less than PART_ATTEMPT_INTERVAL_MS ago
 * get a new lease of this receive's visibility timeout and are returned
 * as the first receive returned them: same receipt handles and receive
 * counts, in its order, whatever max_messages says. Only when none is
 * left is the retry an ordinary receive. A cancelled retry gives nothing
 * back (its messages stay leased to the attempt).
 *
 * *ticket (may be NULL) identifies the receive for part_receive_cancel.
 * Submit returns SL_EINVAL also for an attempt id longer than
 * PART_ATTEMPT_MAX or with a byte outside 0x21..0x7e.
 * Completion: SL_OK, SL_EIO, SL_ENOTFOUND, or SL_ECLOSED after a cancel. */
int part_receive(struct part_client *c, const struct part_receive_req *req,
                 struct part_cookie cookie, part_done_fn *done, uint64_t *ticket);
/* Withdraws a receive (stream reset): it takes no message and completes
 * with SL_ECLOSED. A message leased in the race is put back as it was.
 * Unknown or finished tickets are ignored. Loop thread only. */
void part_receive_cancel(struct part_client *c, uint64_t ticket);
/* Ends a receive's wait now, as if its wait time ran out: it completes
 * with SL_OK and what it holds (nothing, if it was waiting). For a client
 * that may be gone (gw_exchange_client_done). Unknown or finished tickets
 * are ignored. Loop thread only. */
void part_receive_expire(struct part_client *c, uint64_t ticket);

/* Deletes by receipt handle (borrowed strings). res->entry_status per
 * handle: SL_OK deleted, or already gone (SQS answers success), or a
 * stale handle on a standard queue (deleted anyway, as SQS standard does);
 * SL_ENOTFOUND a stale handle on a FIFO queue (its lease ended or a newer
 * receive holds the message: nothing deleted). SL_EINVAL: garbled,
 * forged, or another queue's handle. */
int part_delete(struct part_client *c, uint64_t queue_id, const char *const *handles, size_t n,
                struct part_cookie cookie, part_done_fn *done);

struct part_visibility_entry {
    const char *receipt;
    uint32_t visibility_s; /* new lease from now; 0: ready again now */
};
/* res->entry_status per entry: SL_OK; SL_EINVAL receipt handle invalid;
 * SL_ENOTFOUND message not in flight under this handle (gone, or
 * re-received since; on FIFO queues also ready again). On a standard queue
 * a handle whose lease lapsed still changes the message while nobody has
 * received it since, as SQS does. */
int part_change_visibility(struct part_client *c, uint64_t queue_id,
                           const struct part_visibility_entry *entries, size_t n,
                           struct part_cookie cookie, part_done_fn *done);

/* part_delete and part_change_visibility for handles the caller has
 * decoded already with part_receipt_decode (which checks the MAC), so the
 * engine does not decode them a second time. A receipt of another queue,
 * or naming a partition out of range, gets SL_EINVAL. visibility_s has one
 * entry per receipt. Otherwise as the two above. */
struct part_receipt;
int part_delete_decoded(struct part_client *c, uint64_t queue_id,
                        const struct part_receipt *receipts, size_t n, struct part_cookie cookie,
                        part_done_fn *done);
int part_change_visibility_decoded(struct part_client *c, uint64_t queue_id,
                                   const struct part_receipt *receipts,
                                   const uint32_t *visibility_s, size_t n,
                                   struct part_cookie cookie, part_done_fn *done);

/* Removes every message of the queue on every partition; res->purged. */
int part_purge(struct part_client *c, uint64_t queue_id, struct part_cookie cookie,
               part_done_fn *done);

/* ---- moving messages between queues (DLQ redrive) ---------------------- */

#define PART_MAX_MOVE 500 /* rows per move job: one transaction stays short */

struct part_move_req {
    uint64_t queue_id;       /* the queue the messages leave (a DLQ) */
    uint32_t partition;      /* the one partition this job works on */
    uint64_t dest_queue_id;  /* 0: each message back to its source_queue_id */
    uint64_t after_sequence; /* resume after this row; 0: from the oldest */
    uint32_t max_messages;   /* rows to look at, 1..PART_MAX_MOVE */
    /* Nonzero: only this row (a peeked message's sequence), moved if it
     * is a ready message of queue_id; after_sequence and max_messages are
     * then ignored and res->moved (0 or 1) says whether it moved. */
    uint64_t only_sequence;
    /* Optional (NULL: none): true when a destination takes no message
     * now -- the gateway's pause for enqueue, which the engine does not
     * know. Called on the partition's writer thread, inside the batch's
     * transaction, with held_arg and each row's destination id; it must
     * not call into the engine. */
    bool (*held)(void *held_arg, uint64_t dest_queue_id);
    void *held_arg;
};

/* Moves up to max_messages READY messages of queue_id on one partition,
 * oldest row first, in one transaction (all of the batch or none of it:
 * a tenant's queues share its partitions, so the row changes queue in
 * place; a FIFO destination's group directory registers the partition,
 * so a group that now has messages on two partitions is still leased by
 * one at a time). Delayed and in-flight messages stay.
 *
 * A moved message is a new message of its destination, as SQS redrive
 * makes it: a new message id, sent (and prioritised) now, retention
 * restarted from the destination's, receive count 0, no source queue.
 * Body, attributes, system attributes and group id are kept; so is a
 * priority its producer gave (one other than its send time) when the
 * destination is a priority queue (priority_order).
 *
 * The destination is dest_queue_id, or, when 0, each message's own
 * source_queue_id. A row whose destination is gone, of another tenant,
 * the queue itself, or unknown (source 0) is skipped and stays ready.
 * A row whose destination req->held says is held stays ready and
 * res->move_held is set; the cursor then stays before the first such row
 * (a later job from it tries them again) while the rows after it that go
 * elsewhere still move. So a held destination delays its own messages,
 * in order, and never drops or doubles one.
 *
 * Completion: SL_OK with res->moved, res->move_skipped, res->move_cursor
 * (pass it back as after_sequence) and res->move_exhausted (no ready row
 * after the cursor: this partition is done); SL_ENOTFOUND when queue_id
 * or an explicit destination was deleted meanwhile (nothing moved);
 * SL_EIO. Submit returns SL_EINVAL (bad partition or max), SL_ENOTFOUND
 * (no such queue or destination, or a destination of another tenant),
 * SL_ECLOSED. */
int part_move(struct part_client *c, const struct part_move_req *req, struct part_cookie cookie,
              part_done_fn *done);

/* Deletes the one message stored as row sequence on partition (a peeked
 * message's partition and sequence) if it is a READY message of queue_id:
 * an operator removing a message no consumer holds. Completion: SL_OK;
 * SL_ENOTFOUND the row is gone, of another queue, delayed or in flight
 * (nothing deleted); SL_EIO. Submit returns SL_EINVAL (bad partition or
 * sequence 0), SL_ENOTFOUND, SL_ECLOSED. */
int part_remove(struct part_client *c, uint64_t queue_id, uint32_t partition, uint64_t sequence,
                struct part_cookie cookie, part_done_fn *done);

/* Completes after every job queued so far on partition p is committed and
 * its due timers have run (tests, shutdown barriers). */
int part_barrier(struct part_client *c, uint32_t partition, struct part_cookie cookie,
                 part_done_fn *done);

/* ---- catalog jobs (durable; completions carry res->queue) --------------- */

/* Creates tenant/name. Completion: SL_OK with res->queue, or SL_EEXIST with
 * the existing queue in res->queue (the gateway compares attributes). */
int part_queue_create(struct part_client *c, const char *tenant, const char *name,
                      const struct part_queue_config *cfg, const struct part_kv *attrs,
                      size_t attr_count, const struct part_kv *tags, size_t tag_count,
                      struct part_cookie cookie, part_done_fn *done);
/* Replaces the typed config and upserts attrs (value NULL removes a key). */
int part_queue_set_attributes(struct part_client *c, uint64_t queue_id,
                              const struct part_queue_config *cfg, const struct part_kv *attrs,
                              size_t attr_count, struct part_cookie cookie, part_done_fn *done);
/* Upserts tags. */
int part_queue_tag(struct part_client *c, uint64_t queue_id, const struct part_kv *tags, size_t n,
                   struct part_cookie cookie, part_done_fn *done);
/* Removes tag keys (missing keys are ignored). */
int part_queue_untag(struct part_client *c, uint64_t queue_id, const char *const *keys, size_t n,
                     struct part_cookie cookie, part_done_fn *done);
/* A cluster's: sets queue_id's pause flags (PART_PAUSE_*) in the
 * replicated catalog, so that every node holds the queue paused (and,
 * for PART_PAUSE_DEQUEUE, its partitions lease nothing of it, as
 * part_queue_set_dequeue_paused). Completion: SL_OK with res->queue;
 * SL_ENOTFOUND; SL_EUNAVAIL. Submit returns SL_EINVAL (flags beyond
 * PART_PAUSE_*, or one node: the gateway keeps a single node's pauses),
 * SL_ENOTFOUND, SL_ECLOSED. */
int part_queue_set_pause(struct part_client *c, uint64_t queue_id, unsigned flags,
                         struct part_cookie cookie, part_done_fn *done);
/* Deletes the queue: the name is reusable at once (a new queue gets a new
 * id), its messages are removed from every partition before completion,
 * waiting receives on it complete with SL_ENOTFOUND. res->purged. */
int part_queue_delete(struct part_client *c, uint64_t queue_id, struct part_cookie cookie,
                      part_done_fn *done);

/* ---- reading without leasing (operators' peek) -------------------------- */

/* A message as stored, read without touching it. receipt is empty and
 * receive_count is the stored count (receives so far); first_receive_ms
 * is 0 for a message never received. body, attrs, sys_attrs, digests and
 * group_id point into one block owned by the list. */
struct part_peek_list {
    struct part_message *items;
    size_t count;
};

#define PART_PEEK_MAX 100

/* Up to max (1..PART_PEEK_MAX) READY messages of queue_id, best first as a
 * receive would take them (priority, then row), read on short-lived
 * read-only connections of their own: no lease, no receive count, no
 * timer and no writer job, so a peek changes nothing a consumer can see.
 * Blocks the calling thread for the reads (a few ms per partition); any
 * thread. A partition that failed or cannot be read is skipped (*skipped
 * counts them; may be NULL). Fills *out (free with part_peek_list_free).
 * Returns SL_OK, SL_EINVAL (max out of range) or SL_ENOTFOUND. */
int part_peek(struct part_engine *e, uint64_t queue_id, uint32_t max, struct part_peek_list *out,
              uint32_t *skipped);
void part_peek_list_free(struct part_peek_list *l);

/* The messages of queue_id sent with every pair of filter (1..
 * PART_FILTER_MAX distinct keys, as part_receive_req.filter) that are
 * ready (*ready, both lanes) and in flight (*inflight), counted through
 * the filter index on read-only connections as part_peek reads: the
 * index entries of the first pair are read, no other message. Blocks the
 * calling thread for the reads; any thread. *skipped (may be NULL)
 * counts partitions that could not be read. Returns SL_OK, SL_EINVAL (a
 * bad filter, or a queue without part_queue_config.filtered) or
 * SL_ENOTFOUND. */
int part_filter_depth(struct part_engine *e, uint64_t queue_id,
                      const struct part_filter_pair *filter, size_t n, int64_t *ready,
                      int64_t *inflight, uint32_t *skipped);

/* ---- online backup ------------------------------------------------------ */

/* Called with each file's name (relative to the backup directory) once it
 * is written in full. */
typedef void part_backup_file_fn(void *arg, const char *name);

/* What another thread may follow and stop of a backup under way. The
 * caller zeroes it (or sets stop first, to refuse at once). */
struct part_backup_progress {
    atomic_bool stop;             /* set by anyone: the copy stops within milliseconds */
    _Atomic uint64_t bytes_total; /* set at the start: the databases' sizes */
    _Atomic uint64_t bytes_done;  /* bytes written so far (fresh every ~100 ms) */
};

/* Writes a consistent copy of the engine into dir (an existing, empty
 * directory): "manifest" (the partition count and the deployment key),
 * "catalog.db" and every "part-NNNN.db", each database copied with SQLite's
 * VACUUM INTO on a read-only connection of its own while the writers go on
 * (one WAL snapshot per file; docs/operations.md says what that
 * guarantees across files). The copies are not fsync'd: the caller syncs
 * each file it keeps. Blocks for as long as the copies take: call it off
 * the I/O loops. Any thread. pg (caller storage) reports progress and can
 * stop the copy: SQLite's progress handler checks pg->stop every few
 * dozen VM steps, so even a file of many GB is left within milliseconds.
 * Returns SL_OK, SL_ECLOSED (pg->stop was set) or SL_EIO, with a sentence
 * in err (the directory then holds a partial copy: the caller removes
 * it). */
int part_engine_backup(struct part_engine *e, const char *dir, struct part_backup_progress *pg,
                       part_backup_file_fn *done, void *arg, char *err, size_t errlen);

/* ---- receipt handles --------------------------------------------------- */

struct part_receipt {
    uint32_t partition;
    uint64_t queue_id;
    uint64_t sequence; /* the message's row on that partition */
    uint32_t receive_gen;
};
/* Checks a handle's format and MAC; the gateway uses queue_id to refuse a
 * handle of another queue. Returns SL_OK or SL_EINVAL. Any thread. */
int part_receipt_decode(const struct part_engine *e, const char *handle, size_t len,
                        struct part_receipt *out);

/* ---- statistics -------------------------------------------------------- */

/* One partition writer's group commits since the engine opened (for
 * metrics). Counters only grow; jobs / commits is the average batch size.
 * A batch that only ran timers counts as a commit of 0 jobs. */
struct part_partition_stats {
    uint64_t commits;   /* successful COMMITs */
    uint64_t jobs;      /* jobs in them (the sum of batch sizes) */
    uint64_t commit_us; /* time inside COMMIT (the fsync with durability fsync) */
    uint64_t batch_us;  /* time from BEGIN to the end of COMMIT */
    bool failed;        /* the partition hit a storage error (sticky) */
    /* Entries in the writer's timer heap after its last batch (a gauge):
     * those of live messages, and at most about as many again (or
     * 16,384) dead ones not compacted away yet (docs/partitions.md,
     * "Timers"). */
    uint64_t timers;
    /* SQLite virtual-machine steps FIFO receives spent choosing groups and
     * rows (a counter): what a locked group's backlog would inflate if
     * receives walked it (docs/partitions.md, "Selection without scanning
     * locked groups"). */
    uint64_t fifo_select_steps;
    /* FIFO deduplication ids the writer's in-memory index holds after its
     * last batch (a gauge): those of the last five minutes, and expired
     * ones until a send sweeps them (docs/partitions.md, "Deduplication"). */
    uint64_t fifo_dedup_ids;
    /* Ready and delayed messages of every queue here (a gauge; both lanes). */
    int64_t backlog;
    /* The cost of the jobs waiting at the writer (part_engine_partition_load). */
    int64_t queued_cost;
};
/* Fills *out for partition p. Returns SL_OK or SL_EINVAL (bad p). Any
 * thread; each counter is read on its own (no snapshot across them). */
int part_engine_stats(const struct part_engine *e, uint32_t p, struct part_partition_stats *out);

/* ---- the SQL of a partition file ------------------------------------- */

/* The exact schema, connection pragmas and statements a partition writer
 * runs, published so that the storage benchmark's raw-SQLite ceiling runs
 * the very same SQL instead of a copy that could drift. */
enum part_sql {
    PART_SQL_SCHEMA,        /* CREATE TABLE / INDEX, for sqlite3_exec */
    PART_SQL_PRAGMAS_FSYNC, /* connection pragmas for durability fsync */
    PART_SQL_PRAGMAS_OS,    /* ... and for durability os */
    PART_SQL_INSERT,        /* send: one row (bind ?9..?11 to nothing since schema 3) */
    PART_SQL_INSERT_BODY,   /* send: its body, attrs, sys_attrs under the row's id */
    PART_SQL_SELECT_READY,  /* receive: best ready rows of a queue */
    PART_SQL_LEASE,         /* receive: lease one row */
    PART_SQL_ROW,           /* delete: look a row up */
    PART_SQL_DELETE,        /* delete: remove a row (a trigger removes its body) */
    PART_SQL_HEAD,          /* the best ready priority of a queue */
    PART_SQL_BEGIN,
    PART_SQL_COMMIT,
    PART_SQL_SYNC_FULL,   /* before a commit that must reach the disk (fsync) */
    PART_SQL_SYNC_NORMAL, /* before a commit of leases only (see part_writer.c) */
    PART_SQL_FILTER_PUT,  /* send: one indexed pair of a message (schema 8) */
    PART_SQL_FILTER_SCAN, /* filtered receive: matching ready rows, in order */
};

/* The text of one of them (static, never NULL for a valid value). */
const char *part_sql_text(enum part_sql which);

/* The sqlite3_open_v2 flags of a partition file. */
int part_sql_open_flags(void);

#endif
