/*
 * part_int.h -- (partitions-internal) the structures the module's files
 * share, the run-time hooks (struct part_hooks) through which the writers
 * and the catalog thread reach the client and long-poll layers, and a few
 * inline helpers over them. Types only: each file's functions are
 * declared in the header named after it (part_writer.h, part_client.h,
 * ...); docs/partitions.md ("Files and layers") maps the stack.
 *
 * Threading, in one place:
 *  - struct part_catalog: its maps and each queue's cfg/attrs/tags are
 *    guarded by catalog.lock (rwlock); only the catalog writer thread
 *    mutates them.
 *  - queue counters are atomics written by the partition's writer after a
 *    commit and read by anyone.
 *  - a queue's long-poll waiter list is guarded by queue->wait_mu.
 *  - a writer's job queue (head/tail, or sched for a partition writer)
 *    is guarded by writer->mu; everything else in a writer (db,
 *    statements, timer heap) belongs to its thread alone.
 *  - a client's completion list is guarded by client->mu; the rest of the
 *    client belongs to its loop thread.
 */
#ifndef SLUICE_PART_INT_H
#define SLUICE_PART_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <uv.h>

#include "part.h"

struct sqlite3;
struct sqlite3_stmt;

enum part_state {
    PART_STATE_DELAYED = 0,
    PART_STATE_READY = 1,
    PART_STATE_INFLIGHT = 2,
};

struct part_groups;
struct part_gdir;
struct part_repl;
struct part_repl_group;
struct part_fwd;
struct part_fwd_origin;

struct part_qcount {
    _Atomic int64_t ready;
    _Atomic int64_t inflight;
    _Atomic int64_t delayed;
    _Atomic int64_t overflow_ready;   /* of ready, in the overflow lane */
    _Atomic int64_t overflow_delayed; /* of delayed, in the overflow lane */
    /* best ready priority per lane, INT64_MAX if none (per partition only) */
    _Atomic int64_t head_priority[2];
    /* the send time of each lane's head: ties of head_priority between
     * partitions go to the earlier send (a priority queue's order) */
    _Atomic int64_t head_sent[2];
    /* message groups with something in flight (FIFO's locked groups),
     * mirrored from groups after each commit for readers on any thread */
    _Atomic int64_t groups_inflight;
    /* exclusive queues (per partition only): the ready rows of held values
     * the last receive here passed over (pick_exclusive) */
    _Atomic int64_t excl_blocked;
    /* FIFO: group directory hand-overs to this partition (bumped by the
     * thread that dropped a group's first partition): part of gen below */
    _Atomic uint64_t handovers;
    /* partition p's writer only (per[p]; unused in total): */
    uint64_t age_due;           /* the pending PART_TIMER_AGE check, 0: none */
    struct part_groups *groups; /* in-flight count per message group */
    /* FIFO: the available groups by head (part_gheap.c), the change
     * generation (every batch change of the queue here bumps it) and the
     * generation (plus handovers) the last rebuild of avail saw; and the
     * hand-overs plus rollbacks it saw, which nothing announces in the
     * heap, so they force a rebuild even while the heap has entries */
    struct part_gheap *avail;
    uint64_t gen;
    uint64_t walked_gen;
    uint64_t walked_unannounced;
};

struct part_tenant {
    struct part_tenant *next; /* hash chain */
    char *name;
    _Atomic int64_t backlog;
    _Atomic int64_t inflight;
    _Atomic uint64_t aged_after_ms; /* 0: no aging */
    /* jobs it may have waiting at any one partition writer (0: no cap) */
    _Atomic uint32_t writer_job_cap;
    _Atomic uint64_t expired;
    _Atomic uint64_t aged;
    _Atomic uint64_t dead_lettered;
    /* time its jobs waited at partition writers (part_sched.c) */
    _Atomic uint64_t wait_bucket[PART_WAIT_BUCKETS];
    _Atomic uint64_t wait_sum_us;
};

/* The per-batch change of one queue's counters on one partition. */
struct part_qdelta {
    int64_t ready;
    int64_t inflight;
    int64_t delayed;
    int64_t overflow_ready;
    int64_t overflow_delayed;
};

struct part_job;

struct part_queue {
    _Atomic int refs; /* the catalog map holds one while not deleted */
    uint64_t id;
    char *tenant_name;
    char *name;
    struct part_tenant *tenant;
    /* guarded by catalog.lock */
    uint64_t created_ms;
    uint64_t modified_ms;
    struct part_queue_config cfg;
    struct part_kv *attrs;
    size_t attr_count;
    struct part_kv *tags;
    size_t tag_count;
    bool deleted;
    struct part_queue *next_by_name;
    struct part_queue *next_by_id;
    /* counters: per[nparts] and the sum */
    struct part_qcount *per;
    uint32_t nparts;
    struct part_qcount total;
    /* long polling */
    pthread_mutex_t wait_mu;
    struct part_job *wait_head;
    struct part_job *wait_tail;
    _Atomic uint64_t wake_seq; /* bumped (under wait_mu) by every wake */
    _Atomic uint64_t recv_seq; /* receives so far: the overflow guard's turn */
    /* an operator paused its receives (part_queue_set_dequeue_paused):
     * writers lease nothing, so parked receives stay parked */
    _Atomic bool dequeue_paused;
    /* a cluster's: the operator's pause flags (PART_PAUSE_*) as the
     * replicated catalog holds them (on one node the gateway keeps them) */
    _Atomic unsigned pause;
    /* FIFO (fixed at creation, as SQS's FifoQueue): where its groups'
     * live messages are (part_gdir.c); NULL for a standard queue */
    bool fifo;
    struct part_gdir *gdir;
};

struct part_catalog {
    pthread_rwlock_t lock;
    struct part_queue **by_name;
    struct part_queue **by_id;
    size_t cap; /* buckets of both maps */
    size_t count;
    struct part_tenant **tenants;
    size_t tenant_cap;
    struct sqlite3 *db; /* catalog writer thread only (and open/close) */
};

enum part_op {
    PART_OP_SEND,
    PART_OP_RECEIVE,
    PART_OP_DELETE,
    PART_OP_CHANGE_VIS,
    PART_OP_PURGE,
    PART_OP_BARRIER,
    PART_OP_RELEASE, /* internal: undo the lease of a cancelled receive */
    PART_OP_MOVE,    /* DLQ redrive: rows change queue in place */
    PART_OP_REMOVE,  /* an operator deletes one ready row */
    PART_OP_Q_CREATE,
    PART_OP_Q_SET_ATTRS,
    PART_OP_Q_TAG,
    PART_OP_Q_UNTAG,
    PART_OP_Q_DELETE,
    PART_OP_Q_PAUSE, /* a cluster's: an operator's pause flags (part_queue_set_pause) */
};

/* A message to send. Its bytes (body, attrs, sys_attrs, group id) live
 * in the allocation of the job's msgs array, right after it. */
struct part_send_msg {
    char message_id[PART_MSG_ID_LEN + 1];
    struct sl_slice body;
    struct sl_slice attrs;
    struct sl_slice sys_attrs;
    uint8_t digests[PART_DIGESTS_MAX];
    uint8_t ndigests;
    const char *group_id; /* NUL-terminated; NULL: none */
    const char *dedup_id; /* NUL-terminated; NULL: none (standard queues) */
    int32_t delay_s;
    bool has_priority;
    int64_t priority;
    uint8_t lane;
    uint8_t index; /* its entry in the request (a fanned-out send's parent) */
    /* its indexed pairs (part_send_entry.filters): nfilters times a key
     * and its value, each NUL-terminated, in the job's block */
    uint8_t nfilters;
    const char *filters;
};

/* One receipt-addressed entry of a delete / change-visibility / release. */
struct part_rh_entry {
    size_t index; /* into the parent's entry_status */
    struct part_receipt rh;
    uint32_t visibility_s;
};

#define PART_RECV_CANCELLED 1
#define PART_RECV_EXPIRED 2

struct part_recv {
    uint64_t ticket;
    uint32_t *parts;
    size_t nparts;
    uint32_t *order; /* this pass's partitions, best head first */
    size_t norder;
    size_t next;          /* index into order of the next partition to try */
    uint8_t lanes[2];     /* the lane of each pass, in order */
    uint8_t pass;         /* 0 or 1 */
    part_noisy_fn *noisy; /* NULL: no fair dequeue */
    uint32_t fair_window;
    uint32_t max;
    int32_t visibility_s;
    uint64_t deadline_ns; /* sl_mono_ns; 0: no waiting */
    _Atomic int flags;
    uint64_t seen_seq;
    bool waiting; /* in the queue's waiter list (queue->wait_mu) */
    bool woken;   /* was woken once: re-parks at the head, keeping its turn */
    struct part_job *wprev;
    struct part_job *wnext;
    struct part_job *cprev; /* client's pending receives (loop thread) */
    struct part_job *cnext;
    uv_timer_t timer;
    bool timer_init;
    struct part_message msgs[PART_MAX_BATCH];
    size_t nmsgs;
    size_t txn_first; /* msgs[txn_first..] were leased in the current transaction */
    /* FIFO ReceiveRequestAttemptId (attempt_len 0: none) */
    char attempt[PART_ATTEMPT_MAX];
    size_t attempt_len;
    bool replaying;              /* still visiting partitions for the attempt's leases */
    bool replay_only;            /* nothing of the attempt left: answer empty, lease nothing */
    bool replayed;               /* msgs are a replay: a cancel releases nothing */
    uint8_t pos[PART_MAX_BATCH]; /* replay: each message's place in the first reply */
    /* A priority queue's receive merges its partitions exactly: each
     * visit takes rows no worse than bound (the best head elsewhere,
     * INT64_MAX: any), then the plan is made again (part_poll.c). */
    bool strict;
    int64_t bound;
    int64_t bound_sent; /* ties of bound: rows sent after it come later */
    uint32_t hops;      /* strict visits so far; past PART_STRICT_HOPS_MAX, plain */
    /* A filtered receive's pairs (part_receive_req.filter), nfilter of
     * them, owned (part__filter_copy); NULL and 0: none, so that other
     * receives carry none of their 2 KiB. part_filter.c binds them. */
    uint8_t nfilter;
    struct part_filter_term {
        uint16_t klen, vlen;
        char key[PART_FILTER_TEXT_MAX];
        char value[PART_FILTER_TEXT_MAX];
    } * filter;
};

#define PART_STRICT_HOPS_MAX (4 * PART_MAX_BATCH)

struct part_catalog_req {
    char *tenant;
    char *name;
    struct part_queue_config cfg;
    struct part_kv *kvs; /* attrs or tags, owned */
    size_t nkv;
    struct part_kv *tags;
    size_t ntags;
    char **keys; /* untag */
    size_t nkeys;
    unsigned pause; /* PART_OP_Q_PAUSE: the flags to hold (PART_PAUSE_*) */
};

struct part_job {
    struct part_job *next; /* writer queue or completion list */
    enum part_op op;
    struct part_engine *engine;
    struct part_client *client; /* NULL for sub-jobs */
    struct part_cookie cookie;
    part_done_fn *done;
    int status;
    struct part_result res;
    uint64_t queue_id;
    struct part_queue *q; /* referenced at submit; NULL for catalog creates */
    uint32_t partition;
    /* fan-out: sub-jobs point at their parent, which completes when the
     * last one finishes */
    struct part_job *parent;
    atomic_int pending;
    _Atomic uint64_t purged;
    int *entry_status; /* parent-owned when fanned out */
    /* per op */
    struct part_send_msg *msgs;
    size_t nmsgs;
    struct part_rh_entry *rh;
    size_t nrh;
    struct part_recv *recv;
    struct part_catalog_req *cat;
    /* move: the explicit destination (referenced; NULL = each row's
     * source), the cursor and the row budget */
    struct part_queue *dest_q;
    uint64_t move_after;
    uint32_t move_max;
    uint64_t only_row; /* move of one row, and remove: that row; 0 = none */
    bool (*move_held)(void *arg, uint64_t dest_queue_id); /* part_move_req's held */
    void *move_held_arg;
    /* a FIFO send holding a directory count for each of its messages on
     * its partition (part__gdir_place), given back for those not stored */
    bool gdir_held;
    /* set when the job reaches a writer's queue (under its mu) */
    /* a job another node forwarded here (part_fwd.c): finishing it means
     * answering that node; NULL for this node's own */
    struct part_fwd_origin *origin;
    uint32_t cost;   /* part__job_cost */
    uint64_t enq_ns; /* sl_mono_ns */
    uint64_t seq;    /* the writer's push order (part_sched.c) */
};

struct part_heap_item {
    uint64_t due;
    int64_t rowid;
    uint8_t kind; /* PART_TIMER_* */
};

#define PART_TIMER_VISIBLE 1 /* delayed/in flight -> ready */
#define PART_TIMER_EXPIRE 2  /* retention -> gone */
#define PART_TIMER_AGE 3     /* main-lane aging check; rowid = queue id */

/* A forgotten heap entry (part_timers.c); rowid 0: a free slot. */
struct part_tomb {
    int64_t rowid;
    uint64_t tag;
};

/* Tombstones before the heap is filtered (at least; see part_timers.c). */
#define PART_TIMERS_COMPACT_MIN 8192

struct part_heap {
    struct part_heap_item *items;
    size_t n;
    size_t cap;
    struct part_tomb *tombs; /* open addressing, tomb_cap a power of 2 */
    size_t tomb_cap;
    size_t ntombs; /* occupied slots */
};

/* One tenant's jobs waiting at one partition writer (part_sched.c). */
struct part_flow {
    struct part_tenant *tenant; /* NULL: jobs of no queue (none today but fences) */
    struct part_job *head;
    struct part_job *tail;
    struct part_flow *next_active; /* the writer's round-robin ring */
    int64_t deficit;               /* cost it may still take this turn */
    uint32_t jobs;                 /* waiting here */
    bool active;                   /* in the ring: has jobs */
};

/* A partition writer's waiting jobs: a flow per tenant, served deficit
 * round robin, and the barriers (fences) in their own list. Guarded by
 * the writer's mu. */
struct part_sched {
    struct part_flow **map; /* open addressing by tenant pointer; cap a power of 2 */
    size_t cap;
    size_t nflows;
    struct part_flow *ring_head; /* active flows, the one to serve first */
    struct part_flow *ring_tail;
    struct part_job *fence_head;
    struct part_job *fence_tail;
    uint64_t seq; /* jobs ever pushed: a fence waits for those before it */
    size_t njobs; /* waiting, fences included */
};

struct part_dedup;

struct part_writer {
    struct part_engine *engine;
    uint32_t index; /* partition, or UINT32_MAX for the catalog writer */
    pthread_t thread;
    bool started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct part_job *head; /* the catalog writer's queue, in order */
    struct part_job *tail;
    struct part_sched sched; /* a partition writer's queue, by tenant */
    bool stop;
    bool exited; /* the thread has left its loop: submits fail */
    bool kicked;
    _Atomic bool failed;
    _Atomic bool full_seen;  /* a write failed for lack of space since the open */
    _Atomic bool open_later; /* the open found the disk full: db is NULL, retried */
    _Atomic int64_t queued;  /* jobs waiting */
    /* The send choice's load signal (part_engine_partition_load), relaxed:
     * ready + delayed messages of every queue stored here as of the last
     * commit (written by the writer thread), and the cost (part__job_cost)
     * of the jobs waiting (changed under mu). */
    _Atomic int64_t backlog;
    _Atomic int64_t queued_cost;
    /* part_engine_stats: written by the writer thread after each COMMIT,
     * read from any thread; relaxed (monotonic counters, no ordering). */
    _Atomic uint64_t stat_commits;
    _Atomic uint64_t stat_jobs;
    _Atomic uint64_t stat_commit_us;
    _Atomic uint64_t stat_batch_us;
    _Atomic uint64_t stat_timers;     /* timers.n after the last batch */
    _Atomic uint64_t stat_fifo_steps; /* SQLite VM steps of FIFO selection */
    _Atomic uint64_t stat_dedup_ids;  /* dedup's size after the last batch */
    /* writer thread only */
    struct sqlite3 *db;
    struct sqlite3_stmt *st[40]; /* prepared statements, by part_schema.h's ST_* */
    struct part_heap timers;
    /* FIFO deduplication ids of this partition, by hash (part_dedup.h);
     * made by the open's rebuild */
    struct part_dedup *dedup;
    /* batches rolled back: their receives may have popped available FIFO
     * groups that are free again, so every FIFO queue's change generation
     * here counts them (pick_fifo in part_ops.c) */
    uint64_t rollbacks;
    bool syncing; /* the connection's synchronous is FULL (durability fsync) */
    int wal_pages;
    uint64_t open_at_ms; /* sl_mono_ns ms of the last try to open (open_later) */
    /* A cluster's: the Raft group whose image db is (NULL: one node, db
     * is a file). The thread serves jobs only while it leads the group,
     * with the memory it rebuilt when it took the lead (leading; writer
     * thread only). While it follows, the Raft thread keeps its counters
     * from what the leader's entries say (recount: they must be counted
     * from the image first; under the group's lock). */
    struct part_repl_group *group;
    bool leading;
    bool recount;
    /* The image held rows of a queue this node's catalog did not know yet
     * when it counted them (a partition's entries replayed before the
     * catalog's): counted again, and a leader's memory rebuilt (relead),
     * once the catalog learns a queue. */
    _Atomic bool unknown_rows;
    _Atomic bool relead;
    struct sl_buf note;   /* the entry's counter changes (writer thread) */
    uint64_t lead_try_ms; /* sl_mono_ns ms of the last failed take-over */
    char path[4096];
};

struct part_client {
    struct part_engine *engine;
    uv_loop_t *loop;
    uv_async_t async;
    pthread_mutex_t mu;
    struct part_job *done_head;
    struct part_job *done_tail;
    /* guarded by mu: jobs submitted and not yet handed to the loop, and
     * the two halves of a close (part_client_close may come before the
     * last completion; whichever finishes second frees the client) */
    int64_t pending;
    bool closed;
    bool handle_closed;
    /* loop thread only */
    struct part_job *recv_head; /* pending receives, for cancel/drain */
    /* jobs submitted while on_async runs wait here, one list per
     * partition, and reach each writer together (see on_async) */
    struct part_job **cork_head; /* nparts */
    struct part_job **cork_tail;
    size_t ncorked;
    uint64_t next_ticket;
    bool draining;
    struct part_client *next; /* engine's client list (engine->clients_mu) */
    struct part_client *prev;
};

/*
 * The calls a lower layer makes into an upper one at run time, installed
 * by the upper layers when the engine opens (part__client_install,
 * part__poll_install) before any writer starts; read-only afterwards. A
 * writer or the catalog thread finishing a job hands it up through these
 * and never names the client or long-poll code.
 */
struct part_hooks {
    /* Finishes a job: to its client's loop, or into its parent. Any thread. */
    void (*complete)(struct part_job *job);
    /* Routes a job to partition p (corked when called from a completion). */
    void (*submit)(struct part_engine *e, uint32_t p, struct part_job *job);
    /* A receive a writer ran: done, on to its next partition, or parked. */
    void (*receive_continue)(struct part_engine *e, struct part_job *job);
    /* A commit made n messages of q ready on partition p. */
    void (*wake)(struct part_engine *e, struct part_queue *q, uint32_t p, int64_t n);
    /* Completes every parked receive of q with status. */
    void (*flush_waiters)(struct part_queue *q, int status);
    /* A cluster's: a job for a group this node does not lead goes to the
     * leader (catalog: the catalog's group, else job->partition's), and
     * comes back as if the writer had run it; a job with an origin
     * answers it. Any thread. */
    void (*forward)(struct part_engine *e, struct part_job *job, bool catalog);
    void (*answer)(struct part_job *job);
};

struct part_engine {
    struct part_options opt;
    char *data_dir;
    int lock_fd; /* data_dir/lock, flock'ed for the engine's life */
    uint8_t key[PART_KEY_LEN];
    uint32_t nparts;
    struct part_catalog catalog;
    struct part_writer *writers; /* nparts */
    struct part_writer catw;
    _Atomic bool draining;
    _Atomic bool closing;
    pthread_mutex_t clients_mu;
    struct part_client *clients;
    struct part_hooks hooks;
    /* the low-disk watermark and the space reserve (part_disk.c) */
    _Atomic uint64_t min_free;   /* bytes; 0: off */
    _Atomic uint64_t disk_free;  /* last sample; UINT64_MAX: unknown */
    _Atomic uint64_t disk_at_ms; /* when (sl_mono_ns ms + 1); 0: sample now */
    _Atomic bool disk_low;
    uint64_t disk_fast_below;   /* sample every 10 ms below this (set at open) */
    pthread_mutex_t reserve_mu; /* setting the reserve aside, giving it back */
    _Atomic bool reserve_held;  /* data_dir/space-reserve is set aside */
    _Atomic bool reserve_spent; /* a write found the disk full: sends wait for the reserve */
    /* FIFO sequence numbers: the last one handed out (part__seq_next). */
    _Atomic uint64_t fifo_seq;
    /* A cluster's node (NULL: one node) and whether the in-memory catalog
     * has been loaded from the replicated one since the open: partitions
     * take their leads only then, or their rebuild would miss queues. */
    struct part_repl *repl;
    _Atomic bool catalog_synced;
    struct part_fwd *fwd;   /* a cluster's forwarding (part_fwd.c) */
    uint16_t node_id;       /* a cluster's; 0 on one node */
    uint64_t memory_budget; /* a cluster's, in force: bytes the images may hold */
    _Atomic uint64_t budget_refusals;
};

/* Inline helpers over the types above; any thread. */

/* What a job weighs at its writer, in messages: those a send stores, a
 * receive may lease, a move may look at, or the receipts a delete or
 * visibility change names; 1 for anything else. The load signal of the
 * send choice and the writer's fair share (part_sched.c) count in it. */
static inline uint32_t part__job_cost(const struct part_job *j)
{
    size_t cost = 1;
    switch (j->op) {
    case PART_OP_SEND:
        cost = j->nmsgs;
        break;
    case PART_OP_RECEIVE:
        cost = j->recv != NULL ? j->recv->max : 1;
        break;
    case PART_OP_DELETE:
    case PART_OP_CHANGE_VIS:
    case PART_OP_RELEASE:
        cost = j->nrh;
        break;
    case PART_OP_MOVE:
        cost = j->move_max;
        break;
    default:
        break;
    }
    return cost > 0 ? (uint32_t)cost : 1;
}

static inline uint64_t part__now(const struct part_engine *e)
{
    return e->opt.now_ms ? e->opt.now_ms(e->opt.clock_ctx) : sl_wall_ms();
}

/* The next FIFO sequence number: max(last + 1, now in microseconds), a
 * hybrid clock shared by the writers. It increases with every call, so
 * within every message group whatever the wall clock does, and reads
 * like a time; start-up raises it above every stored one
 * (part__seq_raise), so it never goes backwards across restarts. */
static inline uint64_t part__seq_next(struct part_engine *e, uint64_t now_ms)
{
    uint64_t last = atomic_load(&e->fifo_seq);
    uint64_t next;
    do {
        next = SL_MAX(last + 1, now_ms * 1000u);
    } while (!atomic_compare_exchange_weak(&e->fifo_seq, &last, next));
    return next;
}

static inline void part__seq_raise(struct part_engine *e, uint64_t stored)
{
    uint64_t last = atomic_load(&e->fifo_seq);
    while (last < stored && !atomic_compare_exchange_weak(&e->fifo_seq, &last, stored)) {
    }
}

/* Whether partition p (< nparts) still takes jobs. */
static inline bool part__partition_ok(const struct part_engine *e, uint32_t p)
{
    return !atomic_load(&e->writers[p].failed) && !atomic_load(&e->writers[p].open_later);
}

/* Why partition p cannot answer for its messages: SL_EIO (stopped by a
 * storage error), SL_EBUSY (waiting for space to open), else SL_OK. */
static inline int part__partition_status(const struct part_engine *e, uint32_t p)
{
    return atomic_load(&e->writers[p].failed)       ? SL_EIO
           : atomic_load(&e->writers[p].open_later) ? SL_EBUSY
                                                    : SL_OK;
}

/* The state every storage thread (a partition writer, the catalog thread)
 * starts with: its engine, and the lock and condition variable its
 * submitters wait on, timed against the monotonic clock. */
static inline void part__thread_init(struct part_writer *w, struct part_engine *e)
{
    w->engine = e;
    pthread_mutex_init(&w->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&w->cv, &ca);
    pthread_condattr_destroy(&ca);
}

/* Wakes every partition writer, as if a job had come (the public kick;
 * the catalog thread once partitions may take their leads). */
static inline void part__kick_writers(struct part_engine *e)
{
    for (uint32_t p = 0; p < e->nparts; p++) {
        struct part_writer *w = &e->writers[p];
        pthread_mutex_lock(&w->mu);
        w->kicked = true;
        pthread_cond_signal(&w->cv);
        pthread_mutex_unlock(&w->mu);
    }
}

/* Asks a started storage thread to finish what is queued and stop, and
 * joins it; nothing when it never started. */
static inline void part__thread_stop(struct part_writer *w)
{
    if (w->started) {
        pthread_mutex_lock(&w->mu);
        w->stop = true;
        pthread_cond_signal(&w->cv);
        pthread_mutex_unlock(&w->mu);
        pthread_join(w->thread, NULL);
        w->started = false;
    }
}

/* Writes dir/manifest (the partition count and the engine key), synced
 * and renamed into place: a data_dir's, or a cluster's backup's, which a
 * single node then opens. SL_OK or SL_EIO (err says why). part_engine.c. */
int part__manifest_write(const struct part_engine *e, const char *dir, char *err, size_t errlen);

#endif
