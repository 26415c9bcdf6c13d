/*
 * part_writer.c -- one writer thread per partition: its connection, group
 * commit, its timers, and what a commit makes visible.
 *
 * Stack: under the engine (open, start, stop) and the client layer (which
 * queues jobs in w->sched under w->mu); calls part_sched.c (taking a
 * batch), part_ops.c for the message operations, part_batch.c,
 * part_schema.c, part_catalog.c, part_timers.c and part_groups.c. A finished job, a receive to
 * continue and the long polls a commit wakes go up through e->hooks (part_client.c and part_poll.c
 * install them), never by name.
 *
 * Group commit: the thread takes queued jobs (up to max_batch_jobs,
 * shared among tenants by part_sched.c) and runs due timers and those jobs in at most two
 * transactions (BEGIN IMMEDIATE ... COMMIT): first the receives, which with durability fsync do not
 * wait for the disk (split_leases says why), then everything else, synchronous FULL with fsync,
 * NORMAL with os. Only after a commit does it apply counter deltas, wake long polls and complete
 * that transaction's jobs. If any statement fails the whole transaction is rolled back and every
 * job in it fails: with SL_EBUSY when the file system is out of space (transient: the partition
 * keeps running, and takes writes again as soon as space returns), else with SL_EIO; corruption or
 * another I/O error also marks the partition failed (sticky), so later jobs fail fast instead of
 * touching the file.
 *
 * Near a full disk the WAL is checkpointed sooner (part_disk.c sets the
 * size), also after a group that failed for lack of space, whose
 * checkpoint may now find the blocks of the space reserve; a partition
 * whose open found the disk full is opened again from its own thread, at
 * most once a second, failing its jobs with SL_EBUSY until then.
 *
 * Timers: a binary min-heap of (due ms, row, kind) per writer, rebuilt
 * from the table at start-up. Entries are validated when they fire (the
 * row's state and visible_at must still match), so a changed visibility
 * just pushes a new entry. The batch notes which entries it killed (rows
 * gone, entries superseded) and the heap forgets them after the COMMIT
 * (part_timers.c), so that it stays the size of the live messages. No
 * scans on a tick: the thread sleeps until the earliest due time or the
 * next job.
 *
 * Threading: everything here runs on the writer's own thread except open
 * and stop (before it starts, after it joined).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sqlite3.h>

#include "part_batch.h"
#include "part_catalog.h"
#include "part_dedup.h"
#include "part_disk.h"
#include "part_gdir.h"
#include "part_groups.h"
#include "part_ops.h"
#include "part_repl.h"
#include "part_sched.h"
#include "part_schema.h"
#include "part_timers.h"
#include "part_writer.h"

#define LOG_MOD "partitions"
#define TIMER_RETRY_MS 1000 /* a rolled-back batch's timers are due again after this */

/* ---- after the commit -------------------------------------------------- */

static int64_t lane_head(struct part_writer *w, struct part_queue *q, int lane)
{
    sqlite3_stmt *st = part__stmt(w, ST_HEAD);
    sqlite3_bind_int64(st, 1, (sqlite3_int64)q->id);
    sqlite3_bind_int(st, 2, lane);
    int64_t head = INT64_MAX;
    if (sqlite3_step(st) == SQLITE_ROW) {
        head = sqlite3_column_int64(st, 0);
        /* before the priority it breaks ties of: readers load them apart */
        atomic_store(&q->per[w->index].head_sent[lane], sqlite3_column_int64(st, 1));
    }
    sqlite3_reset(st);
    return head;
}

/* Schedules the aging check of q's main lane on this partition for when
 * its head (the oldest ready row) reaches the tenant's age. */
static void schedule_aging(struct part_writer *w, struct part_queue *q, int64_t main_head)
{
    struct part_qcount *qc = &q->per[w->index];
    uint64_t aging = part__tenant_aging(q);
    if (aging == 0 || main_head == INT64_MAX || main_head < 0) {
        return;
    }
    uint64_t due = (uint64_t)main_head + aging;
    if (qc->age_due == 0 || due < qc->age_due) {
        /* A priority queue is never aged (age_queue): its head is no send
         * time, and a check due at once would fire after every commit.
         * Asked only when a check would be scheduled: a read lock. */
        struct part_queue_config cfg;
        if (!part__queue_cfg(w->engine, q, &cfg) || cfg.priority_order) {
            return;
        }
        if (qc->age_due != 0) { /* the later check is superseded */
            part__heap_forget(&w->timers, qc->age_due, (int64_t)q->id, PART_TIMER_AGE);
        }
        qc->age_due = due;
        part__heap_push(&w->timers, due, (int64_t)q->id, PART_TIMER_AGE);
    }
}

/* Publishes q's lane heads on this partition (a lane with nothing ready
 * costs no query) and schedules its aging. */
static void publish_head(struct part_writer *w, struct part_queue *q)
{
    struct part_qcount *qc = &q->per[w->index];
    int64_t overflow = atomic_load(&qc->overflow_ready);
    int64_t main = atomic_load(&qc->ready) - overflow;
    int64_t main_head = main > 0 ? lane_head(w, q, PART_LANE_MAIN) : INT64_MAX;
    int64_t overflow_head = overflow > 0 ? lane_head(w, q, PART_LANE_OVERFLOW) : INT64_MAX;
    atomic_store(&qc->head_priority[PART_LANE_MAIN], main_head);
    atomic_store(&qc->head_priority[PART_LANE_OVERFLOW], overflow_head);
    schedule_aging(w, q, main_head);
}

/* After a COMMIT: the batch's counters, statistics and group counts. */
static void batch_apply(struct part_writer *w, struct part_batch *b)
{
    int64_t backlog = 0;
    for (size_t i = 0; i < b->n; i++) {
        struct part_delta *d = &b->d[i];
        struct part_tenant *t = d->q->tenant;
        part__counts_add(d->q, w->index, &d->c);
        backlog += d->c.ready + d->c.delayed;
        atomic_fetch_add_explicit(&t->expired, d->expired, memory_order_relaxed);
        atomic_fetch_add_explicit(&t->aged, d->aged, memory_order_relaxed);
        atomic_fetch_add_explicit(&t->dead_lettered, d->dead_lettered, memory_order_relaxed);
        publish_head(w, d->q);
    }
    atomic_fetch_add_explicit(&w->backlog, backlog, memory_order_relaxed);
    part__batch_groups_apply(w, b);
    for (size_t i = 0; i < b->ngone; i++) {
        part__heap_forget_row(&w->timers, b->gone[i]);
    }
    for (size_t i = 0; i < b->stale.n; i++) {
        const struct part_heap_item *it = &b->stale.v[i];
        part__heap_forget(&w->timers, it->due, it->rowid, it->kind);
    }
    part__heap_tidy(&w->timers);
}

/* Whether rc (an extended code of w->db's last error) means the file
 * system ran out of space. SQLite's unix VFS turns ENOSPC on a write into
 * SQLITE_FULL; growing the -shm file or truncating reports an I/O error
 * with the errno kept, hence the second test. */
static bool out_of_space(struct part_writer *w, int rc)
{
    if ((rc & 0xff) == SQLITE_FULL) {
        return true;
    }
    int err = sqlite3_system_errno(w->db);
    return (rc & 0xff) == SQLITE_IOERR && (err == ENOSPC || err == EDQUOT);
}

/* Classifies a failed statement's rc: a full disk is transient (SL_EBUSY,
 * noted in w->full_seen for the close path), corruption and other I/O
 * errors stop the partition for good (SL_EIO), anything else fails just
 * this transaction (SL_EIO). Returns the status for the batch's jobs. */
static int storage_error(struct part_writer *w, int rc)
{
    if (out_of_space(w, rc)) {
        part__disk_full(w->engine);
        if (!atomic_exchange(&w->full_seen, true)) {
            sl_log(SL_LOG_WARN, LOG_MOD,
                   "partition %u (%s): the disk is full: %s; writes fail until space returns",
                   w->index, w->path, sqlite3_errstr(rc));
        }
        return SL_EBUSY;
    }
    int primary = rc & 0xff;
    if (primary == SQLITE_CORRUPT || primary == SQLITE_NOTADB || primary == SQLITE_IOERR ||
        primary == SQLITE_CANTOPEN) {
        if (!atomic_exchange(&w->failed, true)) {
            sl_log(SL_LOG_ERROR, LOG_MOD,
                   "partition %u (%s) stopped after a storage error: %s; its jobs now fail",
                   w->index, w->path, sqlite3_errstr(rc));
        }
    }
    return SL_EIO;
}

#define LOW_VACUUM_PAGES 64 /* a step of giving pages back while sends wait for space */

/* One RESTART checkpoint; false when it could not finish (logged once per
 * full disk, and the space reserve given back when it was space). */
static bool checkpoint_once(struct part_writer *w)
{
    int log = 0, ckpt = 0;
    int rc = sqlite3_wal_checkpoint_v2(w->db, NULL, SQLITE_CHECKPOINT_RESTART, &log, &ckpt);
    if (rc == SQLITE_OK) {
        w->wal_pages = 0;
        return true;
    }
    int ext = sqlite3_extended_errcode(w->db);
    bool full = out_of_space(w, ext);
    if (!full || !atomic_exchange(&w->full_seen, true)) {
        sl_log(SL_LOG_WARN, LOG_MOD, "partition %u: checkpoint: %s", w->index,
               sqlite3_errmsg(w->db));
    }
    if (full) {
        part__disk_full(w->engine);
    }
    return false;
}

static void checkpoint(struct part_writer *w)
{
    if (w->group != NULL) {
        return; /* every replica checkpoints at the same entry (part_repl.c) */
    }
    if (w->wal_pages <= 0 || (uint32_t)w->wal_pages < part__disk_checkpoint_pages(w->engine)) {
        return;
    }
    /* RESTART, not TRUNCATE: the next commits rewrite the WAL from its
     * start in blocks the file already has, where a truncated WAL has to
     * grow again, and each append that grows it makes the fdatasync write
     * the file's metadata too (measured: +8 % batch, +15 % single round
     * trip). The WAL stays at about checkpoint_pages pages; close truncates.
     * A checkpoint that found the disk full gave the space reserve back:
     * once more, with its blocks. */
    if (!checkpoint_once(w) && !checkpoint_once(w)) {
        return;
    }
    atomic_store(&w->full_seen, false); /* the checkpoint found room */
    /* Give deleted pages back to the file system a little at a time; while
     * sends wait for space, every free page, in small steps (each moves
     * pages through the WAL) checkpointed at once, so that the file
     * shrinks now. Failing here (no room for the WAL) is retried at the
     * next commit. */
    int64_t free_pages = part__sql_int(w->db, "PRAGMA freelist_count", 0);
    if (free_pages > 1024) {
        part__sql_exec(w->db, "PRAGMA incremental_vacuum(512)");
    } else if (free_pages > 0 && part__disk_low(w->engine)) {
        char sql[48];
        snprintf(sql, sizeof sql, "PRAGMA incremental_vacuum(%d)",
                 (int)SL_MIN(free_pages, LOW_VACUUM_PAGES));
        if (sqlite3_exec(w->db, sql, NULL, NULL, NULL) == SQLITE_OK) {
            checkpoint_once(w);
        }
    }
}

/* Steps one of the BEGIN/COMMIT/ROLLBACK statements; on failure *status
 * gets storage_error's verdict. */
static bool step_simple(struct part_writer *w, int which, int *status)
{
    sqlite3_stmt *st = w->st[which];
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE) {
        int ext = sqlite3_extended_errcode(w->db);
        sl_log(SL_LOG_ERROR, LOG_MOD, "partition %u: %s: %s", w->index, part__schema_sql(which),
               sqlite3_errmsg(w->db));
        *status = storage_error(w, ext);
        return false;
    }
    return true;
}

/* Statistics of one successful COMMIT (part_engine_stats). */
static void count_commit(struct part_writer *w, const struct part_job *jobs, uint64_t begin_ns,
                         uint64_t commit_ns)
{
    uint64_t end_ns = sl_mono_ns();
    uint64_t n = 0;
    for (const struct part_job *j = jobs; j != NULL; j = j->next) {
        n++;
    }
    atomic_fetch_add_explicit(&w->stat_commits, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&w->stat_jobs, n, memory_order_relaxed);
    atomic_fetch_add_explicit(&w->stat_commit_us, (end_ns - commit_ns) / 1000,
                              memory_order_relaxed);
    atomic_fetch_add_explicit(&w->stat_batch_us, (end_ns - begin_ns) / 1000, memory_order_relaxed);
}

/* A rolled-back batch undid what its timers did, so they are due again:
 * without this a lease that fired in a failed batch would keep its
 * message in flight until a restart rebuilt the heap. They come back a
 * little later, so that a timer whose own statement keeps failing cannot
 * spin the writer. */
static void rearm_fired(struct part_writer *w, const struct part_batch *b, uint64_t now)
{
    for (size_t i = 0; i < b->fired.n; i++) {
        const struct part_heap_item *it = &b->fired.v[i];
        part__heap_push(&w->timers, SL_MAX(it->due, now + TIMER_RETRY_MS), it->rowid, it->kind);
    }
}

/* With durability fsync a commit syncs the WAL (synchronous FULL) unless
 * the batch holds only leases (see split_leases); durability os never
 * does. The setting is the connection's, so it changes between batches. */
static bool set_sync(struct part_writer *w, bool sync, int *status)
{
    if (w->group != NULL || w->engine->opt.durability != PART_DURABILITY_FSYNC ||
        w->syncing == sync) {
        return true; /* a replicated image's durability is its log's */
    }
    if (part__sql_exec(w->db, part_sql_text(sync ? PART_SQL_SYNC_FULL : PART_SQL_SYNC_NORMAL)) !=
        SL_OK) {
        *status = storage_error(w, sqlite3_extended_errcode(w->db));
        return false;
    }
    w->syncing = sync;
    return true;
}

/* Completes jobs (a receive continues); status SL_OK keeps each job's own,
 * any other replaces it. */
static void finish_jobs(struct part_writer *w, struct part_job *jobs, int status)
{
    struct part_engine *e = w->engine;
    while (jobs != NULL) {
        struct part_job *j = jobs;
        jobs = j->next;
        j->next = NULL;
        if (status != SL_OK) {
            j->status = status;
        }
        if (j->op == PART_OP_RECEIVE && j->origin == NULL) {
            e->hooks.receive_continue(e, j);
        } else {
            e->hooks.complete(j);
        }
    }
}

/* A cluster's writer starts each transaction by taking its group's write
 * (part_repl.h); one that does not lead any more fails the batch with
 * SL_EUNAVAIL, which the clients retry on the new leader. */
static bool repl_begin(struct part_writer *w, int *status)
{
    if (w->group == NULL) {
        return true;
    }
    if (part__repl_write_begin(w->group) != SL_OK) {
        *status = SL_EUNAVAIL;
        return false;
    }
    return true;
}

/* True when a batch that wrote nothing must still prove this node leads
 * before answering: every answer but a receive's can say something from a
 * row's absence (a delete of a row not found is a success), and a leader
 * deposed without knowing it yet reads a stale image. An empty receive
 * answers nothing a client relies on, so it goes without the round trip. */
static bool answers_need_lead(const struct part_job *jobs)
{
    for (const struct part_job *j = jobs; j != NULL; j = j->next) {
        if (j->op != PART_OP_RECEIVE) {
            return true;
        }
    }
    return false;
}

/* Replicates what the transaction committed and waits for a majority.
 * ok: it committed here. Returns false (with *status) when it must be
 * undone: leadership lost (SL_EUNAVAIL; a later leader may still commit
 * it, which the retry of an SQS client tolerates) or the node closing. */
static bool repl_end(struct part_writer *w, const struct part_job *jobs, struct part_batch *b,
                     bool ok, int *status)
{
    if (w->group == NULL) {
        return ok;
    }
    /* The followers count what the batch changed from its note. */
    if (ok) {
        part__batch_note(b, &w->note);
    } else {
        sl_buf_reset(&w->note);
    }
    int rc = part__repl_write_end(w->group, (struct sl_slice){w->note.p, w->note.n},
                                  ok && answers_need_lead(jobs));
    if (ok && rc != SL_OK) {
        *status = rc == SL_ECLOSED ? SL_ECLOSED : SL_EUNAVAIL;
        return false;
    }
    return ok;
}

static void run_batch(struct part_writer *w, struct part_job *jobs, struct part_batch *b, bool sync)
{
    struct part_engine *e = w->engine;
    uint64_t now = part__now(e);
    uint64_t begin_ns = sl_mono_ns();
    int status = SL_EIO; /* of the jobs, if the batch fails */
    bool began = false;
    bool ok = !atomic_load(&w->failed) && set_sync(w, sync, &status) &&
              (began = repl_begin(w, &status)) && step_simple(w, ST_BEGIN, &status);
    if (began) {
        uint64_t commit_ns = 0;
        if (ok) {
            part__ops_fire_timers(w, b, now);
            for (struct part_job *j = jobs; j != NULL && !b->sql_failed; j = j->next) {
                part__ops_exec(w, b, j, now);
            }
            if (b->sql_failed) {
                status = storage_error(w, sqlite3_extended_errcode(w->db));
            }
            commit_ns = sl_mono_ns();
            ok = !b->sql_failed && step_simple(w, ST_COMMIT, &status);
            /* SQLite may have rolled back already (a full disk does) */
            int ignored;
            if (!ok && !sqlite3_get_autocommit(w->db)) {
                step_simple(w, ST_ROLLBACK, &ignored);
            }
        }
        ok = repl_end(w, jobs, b, ok, &status);
        if (!ok) {
            rearm_fired(w, b, now);
        } else {
            count_commit(w, jobs, begin_ns, commit_ns);
        }
    }
    if (w->dedup != NULL) {
        if (ok) {
            part__dedup_commit(w->dedup);
        } else {
            part__dedup_rollback(w->dedup);
        }
        atomic_store_explicit(&w->stat_dedup_ids, part__dedup_size(w->dedup), memory_order_relaxed);
    }
    if (ok) {
        batch_apply(w, b);
        for (size_t i = 0; i < b->n; i++) {
            if (b->d[i].woke > 0) {
                e->hooks.wake(e, b->d[i].q, w->index, b->d[i].woke);
            }
        }
        part__batch_gdir_apply(w, b);
    } else {
        part__batch_gdir_undo(w, b);
        w->rollbacks++;
    }
    part__batch_clear(b);
    finish_jobs(w, jobs, ok ? SL_OK : status);
    /* After a full disk too: the last commit's checkpoint may have failed
     * for want of the blocks that the space reserve just gave back, and
     * until it runs the WAL cannot start over. */
    if (ok || status == SL_EBUSY) {
        checkpoint(w);
    }
    atomic_store_explicit(&w->stat_timers, w->timers.n, memory_order_relaxed);
}

/*
 * A lease (ReceiveMessage) is the one write no client asked to keep: if
 * the machine loses power before it reaches the disk, the message is
 * simply ready again after the restart and is delivered once more (with
 * one receive fewer counted), which at-least-once delivery allows. So a
 * group's receives commit first, without waiting for the disk, and the
 * rest (sends, deletes, visibility changes, purges, redrives: acknowledged
 * writes) commit after them with the sync. The sync of that second commit
 * or of any later one also makes the leases durable, since the WAL is
 * appended in order. The receives of one group were all submitted before
 * any of them was answered, so running them ahead of the others is an
 * order the clients could have seen anyway. Splits *jobs; returns the
 * receives, in their order.
 */
static struct part_job *split_leases(struct part_job **jobs)
{
    struct part_job *leases = NULL, **lt = &leases, **rt = jobs;
    for (struct part_job *j = *jobs, *next; j != NULL; j = next) {
        next = j->next;
        j->next = NULL;
        if (j->op == PART_OP_RECEIVE) {
            *lt = j;
            lt = &j->next;
        } else {
            *rt = j;
            rt = &j->next;
        }
    }
    *rt = NULL;
    return leases;
}

/* ---- open / start / stop ----------------------------------------------- */

static int wal_hook(void *arg, sqlite3 *db, const char *name, int pages)
{
    struct part_writer *w = arg;
    w->wal_pages = pages;
    return SQLITE_OK;
}

/* A partition holding an in-flight message of a group ranks before every
 * one that does not: it leased the group before the restart, and its
 * lease outlives it. Sequence numbers (microseconds since the epoch) stay
 * far below this. */
#define GDIR_LEASING_RANK (INT64_C(1) << 62)

/* The FIFO queues' group directories: what this partition holds of each
 * group. At engine open (no writer runs yet) a group found on several
 * partitions is ordered by its oldest message, sequence numbers being
 * engine-wide, after the partition that holds one in flight if any; a
 * partition opened later (its disk was full) goes last. */
/* What a rebuild loaded into the group directories, given back if the
 * open fails after it: the directories are shared, so a failed open must
 * drop exactly its own counts (sends place theirs there meanwhile). */
struct gdir_load {
    struct part_queue *q; /* a reference */
    char *group;
    int64_t count;
};

struct gdir_loads {
    struct gdir_load *v;
    size_t n, cap;
};

static void gdir_loads_free(struct gdir_loads *l)
{
    for (size_t i = 0; i < l->n; i++) {
        part__queue_unref(l->v[i].q);
        free(l->v[i].group);
    }
    free(l->v);
    *l = (struct gdir_loads){0};
}

static void gdir_loads_undo(struct part_writer *w, struct gdir_loads *l)
{
    struct part_engine *e = w->engine;
    for (size_t i = 0; i < l->n; i++) {
        struct part_queue *q = l->v[i].q;
        uint32_t first = part__gdir_drop(q->gdir, l->v[i].group, w->index, l->v[i].count);
        if (first != PART_GDIR_NONE) {
            part__gdir_handed_over(q, first);
            e->hooks.wake(e, q, first, 1);
        }
    }
    gdir_loads_free(l);
}

static bool rebuild_gdir(struct part_writer *w, bool at_open, struct gdir_loads *loads)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(w->db,
                           "SELECT queue_id, group_id, count(*), min(priority), max(state = 2)"
                           " FROM msg WHERE group_id IS NOT NULL GROUP BY queue_id, group_id",
                           -1, &st, NULL) != SQLITE_OK) {
        return false;
    }
    struct part_queue *q = NULL;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        uint64_t qid = (uint64_t)sqlite3_column_int64(st, 0);
        if (q == NULL || q->id != qid) {
            part__queue_unref(q);
            q = part__queue_ref(w->engine, qid);
        }
        if (q != NULL && q->gdir != NULL) { /* FIFO and exclusive queues */
            int64_t rank = sqlite3_column_int64(st, 3) -
                           (sqlite3_column_int(st, 4) != 0 ? GDIR_LEASING_RANK : 0);
            const char *group = (const char *)sqlite3_column_text(st, 1);
            int64_t count = sqlite3_column_int64(st, 2);
            if (loads->n == loads->cap) {
                loads->cap = loads->cap ? 2 * loads->cap : 64;
                loads->v = sl_xrealloc(loads->v, loads->cap * sizeof *loads->v);
            }
            loads->v[loads->n++] =
                (struct gdir_load){part__queue_ref(w->engine, qid), sl_xstrdup(group), count};
            part__gdir_load(q->gdir, group, w->index, count, rank, at_open);
        }
    }
    part__queue_unref(q);
    sqlite3_finalize(st);
    return rc == SQLITE_DONE;
}

/* A failed open gives back this partition's share of a queue's counters:
 * only its writer ever changes them, after a commit, and none committed
 * before the open, so the share is exactly what the rebuild added. */
static void unload_queue(struct part_queue *q, void *arg)
{
    struct part_writer *w = arg;
    struct part_qcount *qc = &q->per[w->index];
    struct part_qdelta d = {.ready = -atomic_load(&qc->ready),
                            .inflight = -atomic_load(&qc->inflight),
                            .delayed = -atomic_load(&qc->delayed),
                            .overflow_ready = -atomic_load(&qc->overflow_ready),
                            .overflow_delayed = -atomic_load(&qc->overflow_delayed)};
    part__counts_add(q, w->index, &d);
    atomic_store(&qc->head_priority[PART_LANE_MAIN], INT64_MAX);
    atomic_store(&qc->head_priority[PART_LANE_OVERFLOW], INT64_MAX);
    qc->age_due = 0;
    if (qc->groups != NULL) {
        part__groups_clear(qc->groups);
        part__groups_publish(q, w->index);
    }
}

/* Undoes a rebuild cut short, so that the next open (a full disk is
 * retried) counts every message once. The timers and the deduplication
 * index go with the connection (open_db); sequence numbers only rise. */
static void unload(struct part_writer *w, struct gdir_loads *loads)
{
    gdir_loads_undo(w, loads);
    part__queue_foreach(w->engine, unload_queue, w);
    atomic_store_explicit(&w->backlog, 0, memory_order_relaxed);
}

static bool rebuild(struct part_writer *w, bool at_open, char *why, size_t whylen)
{
    struct part_engine *e = w->engine;
    struct gdir_loads loads = {0};
    sqlite3_stmt *st = NULL;
    /* Messages of queues deleted before a crash finished their purge. */
    if (sqlite3_prepare_v2(w->db, "SELECT DISTINCT queue_id FROM msg", -1, &st, NULL) !=
        SQLITE_OK) {
        goto fail;
    }
    uint64_t *orphans = NULL;
    size_t norphans = 0;
    while (w->group == NULL && sqlite3_step(st) == SQLITE_ROW) {
        uint64_t id = (uint64_t)sqlite3_column_int64(st, 0);
        if (!part__queue_known(e, id)) {
            orphans = sl_xrealloc(orphans, (norphans + 1) * sizeof *orphans);
            orphans[norphans++] = id;
        }
    }
    sqlite3_finalize(st);
    for (size_t i = 0; i < norphans; i++) {
        char sql[96];
        snprintf(sql, sizeof sql, "DELETE FROM msg WHERE queue_id=%llu",
                 (unsigned long long)orphans[i]);
        part__sql_exec(w->db, sql);
        snprintf(sql, sizeof sql, "DELETE FROM dedup WHERE queue_id=%llu",
                 (unsigned long long)orphans[i]);
        part__sql_exec(w->db, sql);
        snprintf(sql, sizeof sql, "DELETE FROM msg_filter WHERE queue_id=%llu",
                 (unsigned long long)orphans[i]);
        part__sql_exec(w->db, sql);
    }
    free(orphans);
    if (!part__ops_load_dedup(w)) {
        goto fail;
    }
    /* FIFO sequence numbers resume above every one stored: in a message
     * (its priority) or in a deduplication id of the last interval. */
    part__seq_raise(e, (uint64_t)SL_MAX(part__sql_int(w->db,
                                                      "SELECT max(priority) FROM msg"
                                                      " WHERE dedup_id IS NOT NULL",
                                                      0),
                                        part__sql_int(w->db, "SELECT max(seq) FROM dedup", 0)));

    if (sqlite3_prepare_v2(w->db,
                           "SELECT id, queue_id, state, visible_at, expires_at, lane, group_id"
                           " FROM msg",
                           -1, &st, NULL) != SQLITE_OK) {
        goto fail;
    }
    struct part_queue *q = NULL;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(st, 0);
        uint64_t qid = (uint64_t)sqlite3_column_int64(st, 1);
        int state = sqlite3_column_int(st, 2);
        int lane = sqlite3_column_int(st, 5);
        if (q == NULL || q->id != qid) {
            part__queue_unref(q);
            q = part__queue_ref(e, qid);
        }
        if (q == NULL) {
            if (w->group != NULL) {
                atomic_store(&w->unknown_rows, true);
            }
            continue;
        }
        bool overflow = lane == PART_LANE_OVERFLOW;
        struct part_qdelta d = {
            .ready = state == PART_STATE_READY,
            .inflight = state == PART_STATE_INFLIGHT,
            .delayed = state == PART_STATE_DELAYED,
            .overflow_ready = overflow && state == PART_STATE_READY,
            .overflow_delayed = overflow && state == PART_STATE_DELAYED,
        };
        part__counts_add(q, w->index, &d);
        atomic_fetch_add_explicit(&w->backlog, d.ready + d.delayed, memory_order_relaxed);
        const char *group = (const char *)sqlite3_column_text(st, 6);
        if (state == PART_STATE_INFLIGHT && group != NULL) {
            struct part_qcount *qc = &q->per[w->index];
            if (qc->groups == NULL) {
                qc->groups = part__groups_new();
            }
            part__groups_add(qc->groups, group, 1);
            part__groups_publish(q, w->index);
        }
        if (state != PART_STATE_READY) {
            /* in flight after a crash: ready again when its lease would
             * have ended (visible_at is stored) */
            part__heap_push(&w->timers, (uint64_t)sqlite3_column_int64(st, 3), id,
                            PART_TIMER_VISIBLE);
        }
        part__heap_push(&w->timers, (uint64_t)sqlite3_column_int64(st, 4), id, PART_TIMER_EXPIRE);
    }
    part__queue_unref(q);
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        goto fail;
    }
    if (!rebuild_gdir(w, at_open, &loads)) {
        goto fail;
    }
    /* Every queue with rows here, so that aging is scheduled as well. */
    if (sqlite3_prepare_v2(w->db, "SELECT DISTINCT queue_id FROM msg", -1, &st, NULL) !=
        SQLITE_OK) {
        goto fail;
    }
    while (sqlite3_step(st) == SQLITE_ROW) {
        struct part_queue *hq = part__queue_ref(e, (uint64_t)sqlite3_column_int64(st, 0));
        if (hq != NULL) {
            publish_head(w, hq);
            part__queue_unref(hq);
        }
    }
    sqlite3_finalize(st);
    gdir_loads_free(&loads);
    return true;
fail:
    snprintf(why, whylen, "%s", sqlite3_errmsg(w->db));
    unload(w, &loads);
    return false;
}

/* Closes w->db with what was built from it: statements, timers and the
 * deduplication index. */
static void close_db(struct part_writer *w)
{
    part__schema_close(w);
    sqlite3_close(w->db);
    w->db = NULL;
    part__heap_free(&w->timers);
    part__dedup_free(w->dedup);
    w->dedup = NULL;
}

/* Opens w->db: the connection, its schema, the rebuild of the counters
 * and timers (at_open: while the engine opens, before any writer runs).
 * On failure the connection is closed, why says why and *full whether it
 * was for lack of space. */
static bool open_db(struct part_writer *w, bool at_open, char *why, size_t whylen, bool *full)
{
    *full = false;
    int rc = sqlite3_open_v2(w->path, &w->db, part_sql_open_flags(), NULL);
    if (rc != SQLITE_OK) {
        snprintf(why, whylen, "%s", w->db ? sqlite3_errmsg(w->db) : sqlite3_errstr(rc));
    } else if (part__schema_open(w, why, whylen, &rc)) {
        w->syncing = w->engine->opt.durability == PART_DURABILITY_FSYNC;
        sqlite3_wal_hook(w->db, wal_hook, w);
        if (rebuild(w, at_open, why, whylen)) {
            atomic_store_explicit(&w->stat_timers, w->timers.n, memory_order_relaxed);
            return true;
        }
    }
    /* A WAL or shared-memory file to create on a full disk fails its
     * first statement, a migration its transaction (SQLITE_FULL, or an
     * I/O error with ENOSPC). */
    if (rc == SQLITE_OK && w->db != NULL) {
        rc = sqlite3_extended_errcode(w->db); /* the rebuild's */
    }
    *full = w->db != NULL && out_of_space(w, rc);
    close_db(w);
    return false;
}

int part__writer_open(struct part_engine *e, struct part_writer *w, uint32_t index)
{
    w->index = index;
    part__thread_init(w, e);
    if (e->repl != NULL) {
        /* The image is opened when this node takes the group's lead. */
        snprintf(w->path, sizeof w->path, "group part-%04u", index);
        return SL_OK;
    }
    snprintf(w->path, sizeof w->path, "%s/part-%04u.db", e->data_dir, index);
    char why[512] = "";
    bool full = false;
    if (open_db(w, true, why, sizeof why, &full)) {
        return SL_OK;
    }
    if (full) {
        /* Transient: the writer opens it once space returns (open_later);
         * its jobs fail with SL_EBUSY until then. */
        sl_log(SL_LOG_WARN, LOG_MOD,
               "partition %u (%s): the disk is full: %s; it opens once space returns, its jobs "
               "fail with SL_EBUSY until then",
               index, w->path, why);
        atomic_store(&w->open_later, true);
        w->open_at_ms = sl_mono_ns() / 1000000;
        part__disk_full(e);
        return SL_EBUSY;
    }
    sl_log(SL_LOG_ERROR, LOG_MOD,
           "partition %u (%s) is unusable and stays stopped: %s; jobs to it fail with SL_EIO",
           index, w->path, why);
    atomic_store(&w->failed, true);
    return SL_EIO;
}

/* A partition whose open found the disk full tries again, at most once a
 * second, when a job or the one-second tick wakes its writer. Writer
 * thread. */
static void open_again(struct part_writer *w)
{
    uint64_t now = sl_mono_ns() / 1000000;
    if (now - w->open_at_ms < 1000) {
        return;
    }
    w->open_at_ms = now;
    char why[512] = "";
    bool full = false;
    if (open_db(w, false, why, sizeof why, &full)) {
        sl_log(SL_LOG_INFO, LOG_MOD, "partition %u (%s): opened now that space is back", w->index,
               w->path);
        atomic_store(&w->open_later, false);
        return;
    }
    if (!full) {
        sl_log(SL_LOG_ERROR, LOG_MOD,
               "partition %u (%s) is unusable and stays stopped: %s; jobs to it fail with SL_EIO",
               w->index, w->path, why);
        atomic_store(&w->failed, true);
        atomic_store(&w->open_later, false);
    }
}

/* ---- a cluster's partition: leading its group --------------------------- */

#define LEAD_RETRY_MS 500 /* between tries to take a lead whose take-over failed */

/* Forgets the memory built while leading: another node writes the image
 * now, so the timers and deduplication index would go stale. FIFO group
 * directories are left as they are (see docs/design.md, "Cluster",
 * Status). */
static void lead_drop(struct part_writer *w)
{
    if (!w->leading) {
        return;
    }
    w->leading = false;
    close_db(w);
    /* The counters stay: exact as of this node's last commit, they go on
     * from the new leader's notes (writer_applied). */
    atomic_store_explicit(&w->stat_timers, 0, memory_order_relaxed);
    sl_log(SL_LOG_INFO, LOG_MOD, "partition %u: no longer leads its group", w->index);
}

_Atomic(const char *) part__test_lead_sql;

/* This node leads the group: open the image, make its schema (one
 * replicated transaction) and rebuild the partition's memory from it,
 * all under the group's write, so that no apply lands between. */
static void lead_take(struct part_writer *w)
{
    struct part_engine *e = w->engine;
    uint64_t now = sl_mono_ns() / 1000000;
    if (!atomic_load(&e->catalog_synced) || now - w->lead_try_ms < LEAD_RETRY_MS) {
        return;
    }
    w->lead_try_ms = now;
    if (part__repl_group_open_db(w->group, &w->db) != SL_OK) {
        return;
    }
    const char *pre = atomic_exchange(&part__test_lead_sql, NULL);
    if (pre != NULL && part__repl_write_begin(w->group) == SL_OK) {
        (void)part__sql_exec(w->db, pre);
        (void)part__repl_write_end(w->group, (struct sl_slice){0}, false);
    }
    if (part__repl_write_begin(w->group) != SL_OK) {
        sqlite3_close(w->db);
        w->db = NULL;
        return;
    }
    char why[512] = "";
    int rc = SQLITE_OK;
    /* The schema's transaction is seen, on this connection too, only once
     * it is applied: the rebuild reads under a write of its own. */
    bool schema = part__schema_open(w, why, sizeof why, &rc);
    int end = part__repl_write_end(w->group, (struct sl_slice){0}, false);
    bool rebuilt = false;
    if (schema && end == SL_OK) {
        end = part__repl_write_begin(w->group);
        if (end == SL_OK) {
            struct gdir_loads none = {0};
            unload(w, &none); /* what it counted as a follower: recounted now */
            rebuilt = rebuild(w, false, why, sizeof why);
            w->recount = !rebuilt;
            end = part__repl_write_end(w->group, (struct sl_slice){0}, false);
        }
    }
    if (rebuilt && end == SL_OK) {
        w->leading = true;
        w->lead_try_ms = 0;
        atomic_store_explicit(&w->stat_timers, w->timers.n, memory_order_relaxed);
        sl_log(SL_LOG_INFO, LOG_MOD, "partition %u: leading its group", w->index);
        return;
    }
    sl_log(SL_LOG_WARN, LOG_MOD, "partition %u: taking the lead failed: %s", w->index,
           why[0] != '\0' ? why : sl_strerror(end));
    if (rebuilt) {
        struct gdir_loads none = {0};
        unload(w, &none);
    }
    close_db(w);
}

static void writer_changed(void *arg)
{
    struct part_writer *w = arg;
    pthread_mutex_lock(&w->mu);
    w->kicked = true;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

/* ---- a cluster's partition: following its group ------------------------- */

/* The best ready priority of q's lane in the image, INT64_MAX if none. */
static int64_t image_head(sqlite3 *image, struct part_queue *q, int lane)
{
    sqlite3_stmt *st = NULL;
    int64_t head = INT64_MAX;
    if (sqlite3_prepare_v2(image, part_sql_text(PART_SQL_HEAD), -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, (sqlite3_int64)q->id);
        sqlite3_bind_int(st, 2, lane);
        if (sqlite3_step(st) == SQLITE_ROW) {
            head = sqlite3_column_int64(st, 0);
        }
    }
    sqlite3_finalize(st);
    return head;
}

static void follow_heads(struct part_writer *w, struct part_queue *q, sqlite3 *image)
{
    struct part_qcount *qc = &q->per[w->index];
    int64_t overflow = atomic_load(&qc->overflow_ready);
    int64_t main = atomic_load(&qc->ready) - overflow;
    atomic_store(&qc->head_priority[PART_LANE_MAIN],
                 main > 0 ? image_head(image, q, PART_LANE_MAIN) : INT64_MAX);
    atomic_store(&qc->head_priority[PART_LANE_OVERFLOW],
                 overflow > 0 ? image_head(image, q, PART_LANE_OVERFLOW) : INT64_MAX);
}

/* Counts the partition from the image: at a follower's first entry, after
 * a snapshot, and when a note named a queue this node did not know. */
static void follow_recount(struct part_writer *w, sqlite3 *image)
{
    struct part_engine *e = w->engine;
    struct gdir_loads none = {0};
    unload(w, &none);
    w->recount = false;
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(image,
                           "SELECT queue_id, state, lane, count(*) FROM msg"
                           " GROUP BY queue_id, state, lane",
                           -1, &st, NULL) != SQLITE_OK) {
        return; /* no schema yet: nothing to count */
    }
    struct part_queue *q = NULL;
    while (sqlite3_step(st) == SQLITE_ROW) {
        uint64_t qid = (uint64_t)sqlite3_column_int64(st, 0);
        if (q == NULL || q->id != qid) {
            if (q != NULL) {
                follow_heads(w, q, image);
            }
            part__queue_unref(q);
            q = part__queue_ref(e, qid);
        }
        if (q == NULL) {
            /* a deleted queue's rows, still being purged, or a queue whose
             * catalog entry has not reached this node yet */
            atomic_store(&w->unknown_rows, true);
            continue;
        }
        int state = sqlite3_column_int(st, 1);
        bool overflow = sqlite3_column_int(st, 2) == PART_LANE_OVERFLOW;
        int64_t n = sqlite3_column_int64(st, 3);
        struct part_qdelta d = {
            .ready = state == PART_STATE_READY ? n : 0,
            .inflight = state == PART_STATE_INFLIGHT ? n : 0,
            .delayed = state == PART_STATE_DELAYED ? n : 0,
            .overflow_ready = overflow && state == PART_STATE_READY ? n : 0,
            .overflow_delayed = overflow && state == PART_STATE_DELAYED ? n : 0,
        };
        part__counts_add(q, w->index, &d);
        atomic_fetch_add_explicit(&w->backlog, d.ready + d.delayed, memory_order_relaxed);
    }
    if (q != NULL) {
        follow_heads(w, q, image);
    }
    part__queue_unref(q);
    sqlite3_finalize(st);
}

/* Another node's entry for this partition was applied here (Raft thread,
 * under the group's lock): its note's counter changes, and the long polls
 * of this node that a message made ready wakes, wherever it was sent. */
static void writer_applied(void *arg, struct sl_slice note, sqlite3 *image)
{
    struct part_writer *w = arg;
    struct part_engine *e = w->engine;
    if (w->recount || note.n == 0) {
        follow_recount(w, image);
        return;
    }
    struct part_note_delta d;
    for (size_t i = 0; part__note_delta(note, i, &d); i++) {
        struct part_queue *q = part__queue_ref(e, d.queue_id);
        if (q == NULL) {
            atomic_store(&w->unknown_rows, true); /* counted once the catalog has it */
            continue;
        }
        part__counts_add(q, w->index, &d.c);
        atomic_fetch_add_explicit(&w->backlog, d.c.ready + d.c.delayed, memory_order_relaxed);
        follow_heads(w, q, image);
        if (d.woke > 0) {
            e->hooks.wake(e, q, w->index, d.woke);
        }
        part__queue_unref(q);
    }
}

static int recount_on(sqlite3 *image, void *arg)
{
    follow_recount(arg, image);
    return SL_OK;
}

void part__writers_catalog_grew(struct part_engine *e)
{
    for (uint32_t p = 0; p < e->nparts; p++) {
        struct part_writer *w = &e->writers[p];
        if (w->group == NULL || !atomic_exchange(&w->unknown_rows, false)) {
            continue;
        }
        /* Counters from the image, under the group's lock; a leader also
         * rebuilds its timers, on its own thread. */
        part__repl_read(w->group, recount_on, w);
        atomic_store(&w->relead, true);
        pthread_mutex_lock(&w->mu);
        w->kicked = true;
        pthread_cond_signal(&w->cv);
        pthread_mutex_unlock(&w->mu);
    }
}

struct part_repl_hooks part__writer_repl_hooks(struct part_writer *w)
{
    w->recount = true; /* nothing counted yet */
    return (struct part_repl_hooks){.changed = writer_changed, .applied = writer_applied, .arg = w};
}

/* Follows the group's leadership before a batch: true when this writer
 * may run jobs now. */
static bool lead_follow(struct part_writer *w)
{
    if (w->group == NULL) {
        return true;
    }
    bool leads = part__repl_leading(w->group);
    if (w->leading && atomic_exchange(&w->relead, false)) {
        lead_drop(w); /* rows of a queue it did not know: rebuilt now */
        w->lead_try_ms = 0;
    }
    if (w->leading && !leads) {
        lead_drop(w);
    } else if (!w->leading && leads) {
        lead_take(w);
    }
    return w->leading;
}

/* Jobs for a group this node does not lead go to its leader; one another
 * node forwarded here already is not sent on (its origin retries). */
static void forward_jobs(struct part_writer *w, struct part_job *jobs)
{
    struct part_engine *e = w->engine;
    while (jobs != NULL) {
        struct part_job *j = jobs;
        jobs = j->next;
        j->next = NULL;
        if (j->origin != NULL || e->hooks.forward == NULL) {
            j->status = SL_EUNAVAIL;
            e->hooks.complete(j);
        } else {
            e->hooks.forward(e, j, false);
        }
    }
}

/* ---- thread ------------------------------------------------------------ */

static void deadline_in(struct timespec *ts, uint64_t ms)
{
    clock_gettime(CLOCK_MONOTONIC, ts);
    ts->tv_sec += (time_t)(ms / 1000);
    ts->tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

static void *writer_main(void *arg)
{
    struct part_writer *w = arg;
    struct part_engine *e = w->engine;
    struct part_batch b = {.part = w->index};
    size_t max = e->opt.max_batch_jobs ? e->opt.max_batch_jobs : 1024;
    for (;;) {
        pthread_mutex_lock(&w->mu);
        while (!w->stop && part__sched_empty(&w->sched) && !w->kicked) {
            if (atomic_load(&w->open_later)) { /* try again in a second */
                struct timespec ts;
                deadline_in(&ts, 1000);
                if (pthread_cond_timedwait(&w->cv, &w->mu, &ts) == ETIMEDOUT) {
                    break;
                }
                continue;
            }
            if (w->group != NULL && !w->leading && part__repl_leading(w->group)) {
                /* a take-over to try (again): the catalog may be loaded now */
                struct timespec ts;
                deadline_in(&ts, LEAD_RETRY_MS);
                if (pthread_cond_timedwait(&w->cv, &w->mu, &ts) == ETIMEDOUT) {
                    break;
                }
                continue;
            }
            if (w->timers.n == 0) {
                pthread_cond_wait(&w->cv, &w->mu);
                continue;
            }
            uint64_t now = part__now(e), due = w->timers.items[0].due;
            if (due <= now) {
                break;
            }
            struct timespec ts;
            deadline_in(&ts, SL_MIN(due - now, 1000));
            if (pthread_cond_timedwait(&w->cv, &w->mu, &ts) == ETIMEDOUT && part__now(e) >= due) {
                break;
            }
        }
        w->kicked = false;
        size_t n = 0;
        int64_t cost = 0;
        struct part_job *jobs = part__sched_take(&w->sched, max, &n, &cost);
        if (jobs != NULL) {
            atomic_fetch_sub(&w->queued, (int64_t)n);
            atomic_fetch_sub_explicit(&w->queued_cost, cost, memory_order_relaxed);
        }
        bool stop = w->stop && part__sched_empty(&w->sched) && jobs == NULL;
        if (stop) {
            w->exited = true;
        }
        pthread_mutex_unlock(&w->mu);
        part__sched_note_waits(jobs, sl_mono_ns());
        if (atomic_load(&w->open_later)) {
            open_again(w);
        }
        if (atomic_load(&w->open_later) || atomic_load(&w->failed)) {
            if (atomic_load(&w->failed)) {
                /* Nothing fires on a stopped partition: without this a due
                 * timer would wake the thread over and over. */
                part__heap_free(&w->timers);
                atomic_store_explicit(&w->stat_timers, 0, memory_order_relaxed);
            }
            finish_jobs(w, jobs, atomic_load(&w->failed) ? SL_EIO : SL_EBUSY);
            if (stop) {
                break;
            }
            continue;
        }
        if (!lead_follow(w)) {
            forward_jobs(w, jobs);
            if (stop) {
                break;
            }
            continue;
        }
        struct part_job *leases = split_leases(&jobs);
        if (leases != NULL || (jobs == NULL && w->timers.n > 0)) {
            run_batch(w, leases, &b, false); /* due timers fire here */
        }
        if (jobs != NULL) {
            run_batch(w, jobs, &b, true);
        }
        if (stop) {
            break;
        }
    }
    lead_drop(w);
    part__batch_free(&b);
    return NULL;
}

int part__writer_start(struct part_writer *w)
{
    if (atomic_load(&w->failed)) {
        return SL_OK;
    }
    if (pthread_create(&w->thread, NULL, writer_main, w) != 0) {
        return SL_EIO;
    }
    w->started = true;
    return SL_OK;
}

void part__writer_stop(struct part_writer *w)
{
    part__thread_stop(w);
    part__schema_close(w);
    if (w->db != NULL) {
        if (atomic_load(&w->full_seen) || part__disk_low(w->engine)) {
            /* The disk is (nearly) full: copying the WAL into the file could grow it
             * into the last free blocks, and a half-done checkpoint frees
             * nothing. The WAL stays as it is; the next open reads it. */
            sl_log(SL_LOG_WARN, LOG_MOD,
                   "partition %u: the disk is nearly full: no checkpoint at close, the WAL is "
                   "kept",
                   w->index);
            sqlite3_db_config(w->db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, NULL);
        } else {
            sqlite3_wal_checkpoint_v2(w->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
        }
        sqlite3_close(w->db);
        w->db = NULL;
    }
    part__heap_free(&w->timers);
    part__dedup_free(w->dedup);
    w->dedup = NULL;
    part__sched_free(&w->sched);
    sl_buf_free(&w->note);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
}
