/*
 * part_int.h -- (partitions-internal) the structures shared by the engine
 * (part_engine.c), the catalog (part_catalog.c), the writers
 * (part_writer.c) and receipt handles (part_receipt.c).
 *
 * Threading, in one place:
 *  - struct part_catalog: its maps and each queue's cfg/attrs/tags are
 *    guarded by catalog.lock (rwlock); only the catalog writer thread
 *    mutates them.
 *  - queue counters are atomics written by the partition's writer after a
 *    commit and read by anyone.
 *  - a queue's long-poll waiter list is guarded by queue->wait_mu.
 *  - a writer's job list is guarded by writer->mu; everything else in a
 *    writer (db, statements, timer heap) belongs to its thread alone.
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

struct part_qcount {
    _Atomic int64_t ready;
    _Atomic int64_t inflight;
    _Atomic int64_t delayed;
    _Atomic int64_t overflow_ready;   /* of ready, in the overflow lane */
    _Atomic int64_t overflow_delayed; /* of delayed, in the overflow lane */
    /* best ready priority per lane, INT64_MAX if none (per partition only) */
    _Atomic int64_t head_priority[2];
    /* partition p's writer only (per[p]; unused in total): */
    uint64_t age_due;           /* the pending PART_TIMER_AGE check, 0: none */
    struct part_groups *groups; /* in-flight count per message group */
};

struct part_tenant {
    struct part_tenant *next; /* hash chain */
    char *name;
    _Atomic int64_t backlog;
    _Atomic int64_t inflight;
    _Atomic uint64_t aged_after_ms; /* 0: no aging */
    _Atomic uint64_t expired;
    _Atomic uint64_t aged;
    _Atomic uint64_t dead_lettered;
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
    PART_OP_Q_CREATE,
    PART_OP_Q_SET_ATTRS,
    PART_OP_Q_TAG,
    PART_OP_Q_UNTAG,
    PART_OP_Q_DELETE,
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
    int32_t delay_s;
    bool has_priority;
    int64_t priority;
    uint8_t lane;
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
};

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

struct part_writer {
    struct part_engine *engine;
    uint32_t index; /* partition, or UINT32_MAX for the catalog writer */
    pthread_t thread;
    bool started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct part_job *head;
    struct part_job *tail;
    bool stop;
    bool exited; /* the thread has left its loop: submits fail */
    bool kicked;
    _Atomic bool failed;
    _Atomic int64_t queued; /* jobs waiting: "least busy writer" hint */
    /* part_engine_stats: written by the writer thread after each COMMIT,
     * read from any thread; relaxed (monotonic counters, no ordering). */
    _Atomic uint64_t stat_commits;
    _Atomic uint64_t stat_jobs;
    _Atomic uint64_t stat_commit_us;
    _Atomic uint64_t stat_batch_us;
    _Atomic uint64_t stat_timers; /* timers.n after the last batch */
    /* writer thread only */
    struct sqlite3 *db;
    struct sqlite3_stmt *st[24]; /* prepared statements, by part_writer.c's ST_* */
    struct part_heap timers;
    bool syncing; /* the connection's synchronous is FULL (durability fsync) */
    int wal_pages;
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

struct part_engine {
    struct part_options opt;
    char *data_dir;
    uint8_t key[PART_KEY_LEN];
    uint32_t nparts;
    struct part_catalog catalog;
    struct part_writer *writers; /* nparts */
    struct part_writer catw;
    _Atomic bool draining;
    _Atomic bool closing;
    pthread_mutex_t clients_mu;
    struct part_client *clients;
};

/* ---- engine (part_engine.c) ---- */
uint64_t part__now(struct part_engine *e);
void part__writer_submit(struct part_writer *w, struct part_job *job);
/* Routes a job to partition p (fails it with SL_EIO if p failed). */
void part__submit_partition(struct part_engine *e, uint32_t p, struct part_job *job);
/* Finishes a job: to its client's loop, or into its parent. Any thread. */
void part__complete(struct part_job *job);
void part__job_free(struct part_job *job);
/* Long polling: called by writers when a receive found nothing, and after
 * commits that made n messages of q ready on partition p. */
void part__recv_no_message(struct part_engine *e, struct part_job *job);
void part__wake(struct part_engine *e, struct part_queue *q, uint32_t p, int64_t n);
/* Plans the receive's partition order and submits it, or parks it. */
void part__recv_dispatch(struct part_engine *e, struct part_job *job, uint32_t first);
/* Orders the partitions with messages ready in the lane of the receive's
 * current pass, best head first (first, if not UINT32_MAX, goes first
 * regardless). False when there is none. */
bool part__recv_plan(struct part_engine *e, struct part_job *job, uint32_t first);
/* Ready messages of q's lane on partition p, as of the last commit. */
int64_t part__lane_ready(struct part_queue *q, uint32_t p, int lane);
void part__flush_waiters(struct part_queue *q, int status);

/* ---- catalog (part_catalog.c) ---- */
int part__catalog_open(struct part_engine *e, char *err, size_t errlen);
void part__catalog_close(struct part_engine *e);
/* Returns a referenced queue (part__queue_unref it) or NULL. */
struct part_queue *part__queue_ref(struct part_engine *e, uint64_t id);
void part__queue_unref(struct part_queue *q);
/* Copies q's typed config under the catalog lock; false if deleted. */
bool part__queue_cfg(struct part_engine *e, struct part_queue *q, struct part_queue_config *out);
bool part__queue_known(struct part_engine *e, uint64_t id);
/* Runs one catalog job on the catalog writer thread (own transaction). */
void part__catalog_exec(struct part_engine *e, struct part_job *job);
void part__catalog_req_free(struct part_catalog_req *r);
void part__counts_add(struct part_queue *q, uint32_t p, const struct part_qdelta *d);
/* The tenant's aging threshold (0: off). Any thread. */
uint64_t part__tenant_aging(const struct part_queue *q);
/* Calls fn for every live queue (under the read lock). */
void part__queue_foreach(struct part_engine *e, void (*fn)(struct part_queue *q, void *arg),
                         void *arg);

/* ---- writers (part_writer.c) ---- */
int part__writer_open(struct part_engine *e, struct part_writer *w, uint32_t index);
int part__writer_start(struct part_writer *w);
void part__writer_stop(struct part_writer *w);

/* ---- timer heap (part_timers.c) ----
 * Writer thread only. An entry is forgotten only once the change that
 * killed it is committed: a rolled-back batch forgets nothing. */
void part__heap_push(struct part_heap *h, uint64_t due, int64_t rowid, uint8_t kind);
struct part_heap_item part__heap_pop(struct part_heap *h); /* h->n > 0 */
/* Every VISIBLE and EXPIRE entry of row rowid is dead (the row is gone). */
void part__heap_forget_row(struct part_heap *h, int64_t rowid);
/* One entry (due, rowid, kind) is dead: a newer one superseded it. */
void part__heap_forget(struct part_heap *h, uint64_t due, int64_t rowid, uint8_t kind);
/* Whether it (just popped) was forgotten: then it needs no look at its
 * row. Uses up the tombstone of a superseded entry. */
bool part__heap_forgotten(struct part_heap *h, const struct part_heap_item *it);
/* Pops the earliest entry due by now that is not forgotten, dropping the
 * forgotten ones before it; false when there is none. */
bool part__heap_pop_due(struct part_heap *h, uint64_t now, struct part_heap_item *out);
/* Filters the forgotten entries out once there are enough of them (after
 * each batch). */
void part__heap_tidy(struct part_heap *h);
void part__heap_free(struct part_heap *h);

/* ---- message groups' in-flight counts (part_groups.c) ----
 * One table per (queue, partition), owned by that partition's writer: no
 * locks. Counts are exact after each commit (the writer applies a batch's
 * changes only once it committed). */
struct part_groups *part__groups_new(void);
void part__groups_free(struct part_groups *g);
void part__groups_clear(struct part_groups *g);
int64_t part__groups_get(const struct part_groups *g, const char *group);
/* Groups with something in flight (0 for a NULL table). */
size_t part__groups_count(const struct part_groups *g);
void part__groups_add(struct part_groups *g, const char *group, int64_t delta);

/* ---- receipts (part_receipt.c) ---- */
void part__receipt_encode(const struct part_engine *e, const struct part_receipt *r,
                          char out[PART_RECEIPT_MAX]);

/* ---- sqlite helpers ---- */
int part__sql_exec(struct sqlite3 *db, const char *sql);

#endif
