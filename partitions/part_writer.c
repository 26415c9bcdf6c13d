/*
 * part_writer.c -- one writer thread per partition: group commit, the
 * message state machine, and the partition's timers.
 *
 * Message states (a row of the msg table; "gone" = the row is deleted):
 *
 *            send (delay > 0)               send (delay 0)
 *                  |                              |
 *                  v        delay elapsed         v
 *             +---------+  (timer VISIBLE)   +---------+
 *             | DELAYED | -----------------> |  READY  | <-----------------+
 *             +---------+                    +---------+                   |
 *                  |                          |       |  receive, count    |
 *                  |                 receive  |       |  past maxReceive:   |
 *                  |        (lease = vis.     |       |  moved to the DLQ  |
 *                  |         timeout,         |       |  queue (same row,  |
 *                  |         count + 1)       v       |  same partition),  |
 *                  |                    +----------+  |  READY there       |
 *                  |                    | INFLIGHT |--+                    |
 *                  |                    +----------+  lease expiry (timer  |
 *                  |                       |     |    VISIBLE), change     |
 *                  |                       |     |    visibility to 0,     |
 *                  |                       |     +--- cancelled receive ---+
 *                  |                       | delete (receipt handle)
 *                  v                       v
 *             retention expiry (timer EXPIRE), purge, delete queue: GONE
 *             (from any state; delete by handle also from READY/DELAYED)
 *
 *   transition                  function
 *   send -> DELAYED/READY       exec_send
 *   DELAYED/INFLIGHT -> READY   fire_timers (VISIBLE), exec_change_vis (0),
 *                               exec_release
 *   READY -> INFLIGHT           exec_receive; exec_change_vis (> 0) with a
 *                               lapsed handle of a standard queue
 *   READY -> READY (DLQ queue)  exec_receive (move_to_dlq)
 *   READY -> READY (redrive)    exec_move (DLQ back to a source / destination)
 *   any -> GONE                 exec_delete, fire_timers (EXPIRE), exec_purge
 *   READY main -> READY overflow fire_timers (AGE: age_queue)
 *
 * Lanes: DELAYED and READY rows are in the main or the overflow lane
 * (spilled sends, aged rows). A row keeps its lane while in flight; a DLQ
 * move or a redrive puts it in the main lane of its new queue. Receives
 * read one lane per pass (see part__recv_plan).
 *
 * Group commit: the thread takes every queued job (up to max_batch_jobs)
 * and runs due timers and those jobs in at most two transactions (BEGIN
 * IMMEDIATE ... COMMIT): first the receives, which with durability fsync
 * do not wait for the disk (split_leases says why), then everything else,
 * synchronous FULL with fsync, NORMAL with os. Only after a commit does it
 * apply counter deltas, wake long polls and complete that transaction's
 * jobs. If any statement fails the whole transaction is rolled back and
 * every job in it fails with SL_EIO; corruption or an I/O error also
 * marks the partition failed (sticky), so later jobs fail fast instead of
 * touching the file.
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
 * Selection: the ready rows of a queue are read through a partial index
 * msg_ready(queue_id, priority, id) WHERE state = 1, so delayed and in
 * flight rows are never scanned, and nothing has to be rebuilt in memory.
 *
 * Threading: everything here runs on the writer's own thread except
 * part__writer_submit (any thread, takes w->mu).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sqlite3.h>

#include "part_int.h"

#define LOG_MOD "partitions"

enum {
    ST_INSERT,
    ST_SELECT_READY,
    ST_LEASE,
    ST_ROW,
    ST_DELETE,
    ST_SET_VISIBLE,
    ST_MOVE_DLQ,
    ST_HEAD,
    ST_RELEASE,
    ST_PURGE_ROWS,
    ST_PURGE,
    ST_MAKE_READY,
    ST_MOVE_SCAN,
    ST_MOVE_ROW,
    ST_AGE,
    ST_FAIR_SCAN,
    ST_ROW_FULL,
    ST_BEGIN,
    ST_COMMIT,
    ST_ROLLBACK,
    ST_COUNT_
};

_Static_assert(ST_COUNT_ <=
                   sizeof(((struct part_writer *)0)->st) / sizeof(((struct part_writer *)0)->st[0]),
               "part_writer.st too small");

/* The columns fill_message reads, in its order. */
#define MSG_COLUMNS                                                                                \
    "id, message_id, body, attrs, sys_attrs, group_id, priority, receive_count, sent_at,"          \
    " first_receive_at, source_queue_id, digests"

static const char *const SQL[ST_COUNT_] = {
    [ST_INSERT] = "INSERT INTO msg(queue_id, state, priority, visible_at, expires_at, sent_at,"
                  " message_id, group_id, body, attrs, sys_attrs, lane, digests)"
                  " VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?)",
    [ST_SELECT_READY] = "SELECT " MSG_COLUMNS " FROM msg WHERE queue_id=?1 AND lane=?3 AND state=1"
                        " ORDER BY priority, id LIMIT ?2",
    [ST_LEASE] = "UPDATE msg SET state=2, visible_at=?2, receive_count=receive_count+1,"
                 " first_receive_at=CASE WHEN first_receive_at=0 THEN ?3 ELSE first_receive_at"
                 " END WHERE id=?1",
    [ST_ROW] = "SELECT queue_id, state, receive_count, visible_at, expires_at, lane, group_id"
               " FROM msg WHERE id=?",
    [ST_DELETE] = "DELETE FROM msg WHERE id=?",
    [ST_SET_VISIBLE] = "UPDATE msg SET state=?2, visible_at=?3 WHERE id=?1",
    [ST_MOVE_DLQ] = "UPDATE msg SET queue_id=?2, source_queue_id=?3, state=1, visible_at=?4,"
                    " lane=0, expires_at=?5 WHERE id=?1",
    [ST_HEAD] = "SELECT priority FROM msg WHERE queue_id=?1 AND lane=?2 AND state=1"
                " ORDER BY priority, id LIMIT 1",
    [ST_RELEASE] = "UPDATE msg SET state=1, visible_at=?3, receive_count=receive_count-1,"
                   " first_receive_at=CASE WHEN receive_count=1 THEN 0 ELSE first_receive_at END"
                   " WHERE id=?1 AND state=2 AND receive_count=?2",
    [ST_PURGE_ROWS] = "SELECT id, state, lane FROM msg WHERE queue_id=?",
    [ST_PURGE] = "DELETE FROM msg WHERE queue_id=?",
    [ST_MAKE_READY] = "UPDATE msg SET state=1 WHERE id=?",
    /* Oldest rows first by row id: msg_queue(queue_id, state) ends in the
     * rowid, so this is an index range, not a sort of the whole queue. */
    [ST_MOVE_SCAN] = "SELECT id, source_queue_id, lane, expires_at FROM msg WHERE queue_id=?1"
                     " AND state=1 AND id>?2 ORDER BY id LIMIT ?3",
    [ST_MOVE_ROW] = "UPDATE msg SET queue_id=?2, source_queue_id=0, priority=?3, visible_at=?3,"
                    " sent_at=?3, expires_at=?4, message_id=?5, receive_count=0,"
                    " first_receive_at=0, lane=0 WHERE id=?1",
    /* A main-lane row's priority is its send time, so the aged rows are a
     * prefix of msg_ready: an index range, never a scan of the queue. */
    [ST_AGE] = "UPDATE msg SET lane=1 WHERE id IN (SELECT id FROM msg WHERE queue_id=?1 AND lane=0"
               " AND state=1 AND priority<=?2 ORDER BY priority, id LIMIT ?3)",
    /* Covered by msg_ready (it carries group_id): no table lookups. */
    [ST_FAIR_SCAN] = "SELECT id, group_id FROM msg WHERE queue_id=?1 AND lane=?2 AND state=1"
                     " ORDER BY priority, id LIMIT ?3",
    [ST_ROW_FULL] = "SELECT " MSG_COLUMNS " FROM msg WHERE id=?1 AND state=1",
    [ST_BEGIN] = "BEGIN IMMEDIATE",
    [ST_COMMIT] = "COMMIT",
    [ST_ROLLBACK] = "ROLLBACK",
};

/* user_version 1 added the lane column (and lane in msg_ready), 2 the
 * digests column. */
#define PART_SCHEMA_VERSION 2

static const char PART_SCHEMA[] =
    "CREATE TABLE IF NOT EXISTS msg("
    " id INTEGER PRIMARY KEY AUTOINCREMENT,"
    " queue_id INTEGER NOT NULL, state INTEGER NOT NULL, priority INTEGER NOT NULL,"
    " visible_at INTEGER NOT NULL, expires_at INTEGER NOT NULL, sent_at INTEGER NOT NULL,"
    " first_receive_at INTEGER NOT NULL DEFAULT 0, receive_count INTEGER NOT NULL DEFAULT 0,"
    " source_queue_id INTEGER NOT NULL DEFAULT 0, message_id TEXT NOT NULL, group_id TEXT,"
    " body BLOB NOT NULL, attrs BLOB, sys_attrs BLOB, lane INTEGER NOT NULL DEFAULT 0,"
    " digests BLOB);"
    "CREATE INDEX IF NOT EXISTS msg_ready ON msg(queue_id, lane, priority, id, group_id)"
    " WHERE state=1;"
    "CREATE INDEX IF NOT EXISTS msg_queue ON msg(queue_id, state);";

/* From user_version 0 (before lanes): the column, and msg_ready rebuilt
 * with lane in it by PART_SCHEMA right after. */
static const char PART_MIGRATE_0_1[] = "ALTER TABLE msg ADD COLUMN lane INTEGER NOT NULL DEFAULT 0;"
                                       "DROP INDEX IF EXISTS msg_ready;";
/* From user_version 1: rows stored before it have no digests (NULL), which
 * part_message reports as none. */
static const char PART_MIGRATE_1_2[] = "ALTER TABLE msg ADD COLUMN digests BLOB;";

#define PART_PRAGMAS(sync)                                                                         \
    "PRAGMA auto_vacuum=INCREMENTAL; PRAGMA journal_mode=WAL; PRAGMA synchronous=" sync ";"        \
    " PRAGMA wal_autocheckpoint=0; PRAGMA journal_size_limit=67108864;"                            \
    " PRAGMA cache_size=-16384; PRAGMA temp_store=MEMORY;"

static const char PART_PRAGMAS_FSYNC[] = PART_PRAGMAS("FULL");
/* For sqlite3_exec only: SQLite applies this pragma when it compiles the
 * statement, so a prepared copy stepped again would change nothing. */
static const char PART_SYNC_FULL[] = "PRAGMA synchronous=FULL";
static const char PART_SYNC_NORMAL[] = "PRAGMA synchronous=NORMAL";
static const char PART_PRAGMAS_OS[] = PART_PRAGMAS("NORMAL");

/* NOMUTEX: a partition's connection is used by one thread at a time (its
 * writer; open and close happen before start and after join), so the
 * serialized mode's mutex around every SQLite call buys nothing. */
int part_sql_open_flags(void)
{
    return SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
}

const char *part_sql_text(enum part_sql which)
{
    switch (which) {
    case PART_SQL_SCHEMA:
        return PART_SCHEMA;
    case PART_SQL_PRAGMAS_FSYNC:
        return PART_PRAGMAS_FSYNC;
    case PART_SQL_PRAGMAS_OS:
        return PART_PRAGMAS_OS;
    case PART_SQL_INSERT:
        return SQL[ST_INSERT];
    case PART_SQL_SELECT_READY:
        return SQL[ST_SELECT_READY];
    case PART_SQL_LEASE:
        return SQL[ST_LEASE];
    case PART_SQL_ROW:
        return SQL[ST_ROW];
    case PART_SQL_DELETE:
        return SQL[ST_DELETE];
    case PART_SQL_HEAD:
        return SQL[ST_HEAD];
    case PART_SQL_BEGIN:
        return SQL[ST_BEGIN];
    case PART_SQL_COMMIT:
        return SQL[ST_COMMIT];
    case PART_SQL_SYNC_FULL:
        return PART_SYNC_FULL;
    case PART_SQL_SYNC_NORMAL:
        return PART_SYNC_NORMAL;
    }
    return "";
}

/* ---- per-batch counter deltas ------------------------------------------ */

/* Everything a batch changes outside SQLite is collected here and applied
 * only after its COMMIT: counters, tenants' statistics, groups' in-flight
 * counts, timer entries it made dead. A rolled-back batch leaves them as
 * they were. */
struct delta {
    struct part_queue *q; /* referenced */
    struct part_qdelta c;
    int64_t woke; /* messages that became ready: long polls to wake */
    uint64_t expired;
    uint64_t aged;
    uint64_t dead_lettered;
    bool groups_cleared; /* purged: the queue's group counts start over */
};

struct group_delta {
    struct part_queue *q; /* referenced by the queue's struct delta */
    char *group;          /* owned */
    int64_t inflight;
};

/* A growable list of timer entries. */
struct item_list {
    struct part_heap_item *v;
    size_t n;
    size_t cap;
};

static void item_list_add(struct item_list *l, uint64_t due, int64_t rowid, uint8_t kind)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 64;
        l->v = sl_xrealloc(l->v, l->cap * sizeof *l->v);
    }
    l->v[l->n++] = (struct part_heap_item){due, rowid, kind};
}

struct batch {
    struct delta *d;
    size_t n;
    size_t cap;
    struct group_delta *g;
    size_t ng;
    size_t gcap;
    int64_t *gone; /* rows deleted: all their timer entries are dead */
    size_t ngone;
    size_t gone_cap;
    struct item_list stale; /* single entries superseded */
    struct item_list fired; /* popped by fire_timers: pushed back if the batch rolls back */
    bool sql_failed;
};

static struct delta *delta_of(struct batch *b, struct part_queue *q)
{
    for (size_t i = 0; i < b->n; i++) {
        if (b->d[i].q == q) {
            return &b->d[i];
        }
    }
    if (b->n == b->cap) {
        b->cap = b->cap ? b->cap * 2 : 16;
        b->d = sl_xrealloc(b->d, b->cap * sizeof *b->d);
    }
    atomic_fetch_add(&q->refs, 1);
    b->d[b->n] = (struct delta){.q = q};
    return &b->d[b->n++];
}

/* v messages of q entered (v > 0) or left (v < 0) state in lane. */
static void delta_state(struct batch *b, struct part_queue *q, int state, int lane, int64_t v)
{
    struct delta *d = delta_of(b, q);
    if (state == PART_STATE_READY) {
        d->c.ready += v;
        d->c.overflow_ready += lane == PART_LANE_OVERFLOW ? v : 0;
        if (v > 0) {
            d->woke += v;
        }
    } else if (state == PART_STATE_INFLIGHT) {
        d->c.inflight += v;
    } else {
        d->c.delayed += v;
        d->c.overflow_delayed += lane == PART_LANE_OVERFLOW ? v : 0;
    }
}

static void note_group(struct batch *b, struct part_queue *q, const char *group, int64_t inflight)
{
    if (group == NULL) {
        return;
    }
    if (b->ng == b->gcap) {
        b->gcap = b->gcap ? b->gcap * 2 : 16;
        b->g = sl_xrealloc(b->g, b->gcap * sizeof *b->g);
    }
    delta_of(b, q); /* keeps q referenced until the batch is applied */
    b->g[b->ng++] = (struct group_delta){q, sl_xstrdup(group), inflight};
}

static void note_gone(struct batch *b, int64_t rowid)
{
    if (b->ngone == b->gone_cap) {
        b->gone_cap = b->gone_cap ? b->gone_cap * 2 : 64;
        b->gone = sl_xrealloc(b->gone, b->gone_cap * sizeof *b->gone);
    }
    b->gone[b->ngone++] = rowid;
}

static void note_stale(struct batch *b, uint64_t due, int64_t rowid, uint8_t kind)
{
    item_list_add(&b->stale, due, rowid, kind);
}

/* A row of q goes from (state, lane) to (to_state, to_lane); group (may be
 * NULL) is its message group. */
static void delta_move(struct batch *b, struct part_queue *q, int state, int lane, int to_state,
                       int to_lane, const char *group)
{
    delta_state(b, q, state, lane, -1);
    delta_state(b, q, to_state, to_lane, 1);
    if (state == PART_STATE_INFLIGHT && to_state != PART_STATE_INFLIGHT) {
        note_group(b, q, group, -1);
    } else if (state != PART_STATE_INFLIGHT && to_state == PART_STATE_INFLIGHT) {
        note_group(b, q, group, 1);
    }
}

/* A row of q leaves the partition (deleted, expired, moved away). */
static void delta_gone(struct batch *b, struct part_queue *q, int state, int lane,
                       const char *group)
{
    delta_state(b, q, state, lane, -1);
    if (state == PART_STATE_INFLIGHT) {
        note_group(b, q, group, -1);
    }
}

static void groups_apply(struct part_writer *w, struct batch *b)
{
    for (size_t i = 0; i < b->n; i++) {
        struct part_groups *g = b->d[i].q->per[w->index].groups;
        if (b->d[i].groups_cleared && g != NULL) {
            part__groups_clear(g);
        }
    }
    for (size_t i = 0; i < b->ng; i++) {
        struct part_qcount *qc = &b->g[i].q->per[w->index];
        if (qc->groups == NULL) {
            qc->groups = part__groups_new();
        }
        part__groups_add(qc->groups, b->g[i].group, b->g[i].inflight);
    }
}

static void batch_clear(struct batch *b)
{
    for (size_t i = 0; i < b->ng; i++) {
        free(b->g[i].group);
    }
    b->ng = 0;
    for (size_t i = 0; i < b->n; i++) {
        part__queue_unref(b->d[i].q);
    }
    b->n = 0;
    b->ngone = 0;
    b->stale.n = 0;
    b->fired.n = 0;
    if (b->gone_cap > 65536) { /* a big purge's: not kept for good */
        free(b->gone);
        b->gone = NULL;
        b->gone_cap = 0;
    }
    b->sql_failed = false;
}

/* ---- statement helpers ------------------------------------------------- */

static sqlite3_stmt *stmt(struct part_writer *w, int which)
{
    sqlite3_stmt *st = w->st[which];
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    return st;
}

/* Steps a statement that returns no rows; false (and the batch marked
 * failed) on error. */
static bool run(struct part_writer *w, struct batch *b, sqlite3_stmt *st)
{
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE) {
        sl_log(SL_LOG_ERROR, LOG_MOD, "partition %u: %s", w->index, sqlite3_errmsg(w->db));
        b->sql_failed = true;
        return false;
    }
    return true;
}

struct row {
    uint64_t queue_id;
    int state;
    int lane;
    uint32_t receive_count;
    uint64_t visible_at;
    uint64_t expires_at;
    bool has_group;
    char group[PART_GROUP_ID_MAX + 1];
};

static const char *row_group(const struct row *r)
{
    return r->has_group ? r->group : NULL;
}

/* 1: found, 0: no such row, -1: error. */
static int row_get(struct part_writer *w, struct batch *b, int64_t id, struct row *r)
{
    sqlite3_stmt *st = stmt(w, ST_ROW);
    sqlite3_bind_int64(st, 1, id);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        r->queue_id = (uint64_t)sqlite3_column_int64(st, 0);
        r->state = sqlite3_column_int(st, 1);
        r->receive_count = (uint32_t)sqlite3_column_int64(st, 2);
        r->visible_at = (uint64_t)sqlite3_column_int64(st, 3);
        r->expires_at = (uint64_t)sqlite3_column_int64(st, 4);
        r->lane = sqlite3_column_int(st, 5);
        const char *group = (const char *)sqlite3_column_text(st, 6);
        r->has_group = group != NULL;
        if (group != NULL) {
            snprintf(r->group, sizeof r->group, "%s", group);
        }
    }
    sqlite3_reset(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
        b->sql_failed = true;
        return -1;
    }
    return rc == SQLITE_ROW;
}

/* ---- timers ------------------------------------------------------------ */

#define TIMERS_PER_BATCH 4096
#define AGE_ROWS_PER_CHECK 1024 /* one check's share of a batch */
#define TIMER_RETRY_MS 1000     /* a rolled-back batch's timers are due again after this */

/* PART_TIMER_AGE: main-lane ready rows of q sent before now - aging move
 * to the overflow lane. publish_head schedules the next check. */
static void age_queue(struct part_writer *w, struct batch *b, struct part_queue *q, uint64_t due,
                      uint64_t now)
{
    struct part_qcount *qc = &q->per[w->index];
    uint64_t aging = part__tenant_aging(q);
    if (qc->age_due != due) {
        return; /* superseded by an earlier check */
    }
    qc->age_due = 0;
    struct delta *d = delta_of(b, q); /* publish_head reschedules */
    if (aging == 0 || aging >= now) {
        return;
    }
    sqlite3_stmt *st = stmt(w, ST_AGE);
    sqlite3_bind_int64(st, 1, (sqlite3_int64)q->id);
    sqlite3_bind_int64(st, 2, (sqlite3_int64)(now - aging));
    sqlite3_bind_int(st, 3, AGE_ROWS_PER_CHECK);
    if (run(w, b, st)) {
        int64_t n = sqlite3_changes(w->db);
        d->c.overflow_ready += n; /* ready either way: only the lane changes */
        d->aged += (uint64_t)n;
    }
}

static void fire_timers(struct part_writer *w, struct batch *b, uint64_t now)
{
    struct part_engine *e = w->engine;
    struct part_heap_item it;
    for (int done = 0;
         done < TIMERS_PER_BATCH && !b->sql_failed && part__heap_pop_due(&w->timers, now, &it);
         done++) {
        item_list_add(&b->fired, it.due, it.rowid, it.kind);
        if (it.kind == PART_TIMER_AGE) {
            struct part_queue *q = part__queue_ref(e, (uint64_t)it.rowid);
            if (q != NULL) {
                age_queue(w, b, q, it.due, now);
                part__queue_unref(q);
            }
            continue;
        }
        struct row r;
        if (row_get(w, b, it.rowid, &r) != 1) {
            continue;
        }
        struct part_queue *q = part__queue_ref(e, r.queue_id);
        if (q == NULL) {
            continue; /* its queue is being deleted; the purge takes the row */
        }
        if (it.kind == PART_TIMER_VISIBLE && r.state != PART_STATE_READY && r.visible_at <= now) {
            sqlite3_stmt *st = stmt(w, ST_MAKE_READY);
            sqlite3_bind_int64(st, 1, it.rowid);
            if (run(w, b, st)) {
                delta_move(b, q, r.state, r.lane, PART_STATE_READY, r.lane, row_group(&r));
            }
        } else if (it.kind == PART_TIMER_EXPIRE && r.expires_at <= now) {
            sqlite3_stmt *st = stmt(w, ST_DELETE);
            sqlite3_bind_int64(st, 1, it.rowid);
            if (run(w, b, st)) {
                delta_gone(b, q, r.state, r.lane, row_group(&r));
                delta_of(b, q)->expired++;
                note_gone(b, it.rowid);
            }
        }
        part__queue_unref(q);
    }
}

/* ---- jobs -------------------------------------------------------------- */

static void exec_send(struct part_writer *w, struct batch *b, struct part_job *job, uint64_t now)
{
    struct part_queue_config cfg;
    if (!part__queue_cfg(w->engine, job->q, &cfg)) {
        job->status = SL_ENOTFOUND;
        return;
    }
    job->res.sent = sl_xcalloc(job->nmsgs, sizeof *job->res.sent);
    job->res.sent_count = job->nmsgs;
    for (size_t i = 0; i < job->nmsgs && !b->sql_failed; i++) {
        struct part_send_msg *m = &job->msgs[i];
        uint64_t delay_ms = (uint64_t)(m->delay_s < 0 ? cfg.delay_s : (uint32_t)m->delay_s) * 1000;
        int state = delay_ms > 0 ? PART_STATE_DELAYED : PART_STATE_READY;
        uint64_t expires = now + (uint64_t)cfg.retention_s * 1000;
        sqlite3_stmt *st = stmt(w, ST_INSERT);
        sqlite3_bind_int64(st, 1, (sqlite3_int64)job->queue_id);
        sqlite3_bind_int(st, 2, state);
        sqlite3_bind_int64(st, 3, m->has_priority ? m->priority : (int64_t)now);
        sqlite3_bind_int64(st, 4, (sqlite3_int64)(now + delay_ms));
        sqlite3_bind_int64(st, 5, (sqlite3_int64)expires);
        sqlite3_bind_int64(st, 6, (sqlite3_int64)now);
        sqlite3_bind_text(st, 7, m->message_id, -1, SQLITE_STATIC);
        if (m->group_id) {
            sqlite3_bind_text(st, 8, m->group_id, -1, SQLITE_STATIC);
        }
        sqlite3_bind_blob(st, 9, m->body.p ? m->body.p : "", (int)m->body.n, SQLITE_STATIC);
        sqlite3_bind_blob(st, 10, m->attrs.p ? m->attrs.p : "", (int)m->attrs.n, SQLITE_STATIC);
        sqlite3_bind_blob(st, 11, m->sys_attrs.p ? m->sys_attrs.p : "", (int)m->sys_attrs.n,
                          SQLITE_STATIC);
        sqlite3_bind_int(st, 12, m->lane);
        if (m->ndigests > 0) {
            sqlite3_bind_blob(st, 13, m->digests, m->ndigests, SQLITE_STATIC);
        }
        if (!run(w, b, st)) {
            return;
        }
        int64_t rowid = sqlite3_last_insert_rowid(w->db);
        memcpy(job->res.sent[i].message_id, m->message_id, sizeof m->message_id);
        job->res.sent[i].partition = w->index;
        job->res.sent[i].sequence = (uint64_t)rowid;
        delta_state(b, job->q, state, m->lane, 1);
        if (state == PART_STATE_DELAYED) {
            part__heap_push(&w->timers, now + delay_ms, rowid, PART_TIMER_VISIBLE);
        }
        part__heap_push(&w->timers, expires, rowid, PART_TIMER_EXPIRE);
    }
    job->status = SL_OK;
}

/* The DLQ of q, referenced, if it is usable: live and of the same tenant
 * (so it lives on the same partitions); *retention_s gets its retention. */
static struct part_queue *dlq_of(struct part_engine *e, struct part_queue *q,
                                 const struct part_queue_config *cfg, uint32_t *retention_s)
{
    if (cfg->max_receive_count == 0 || cfg->dlq_target_id == 0 || cfg->dlq_target_id == q->id) {
        return NULL;
    }
    struct part_queue *d = part__queue_ref(e, cfg->dlq_target_id);
    struct part_queue_config dcfg;
    if (d != NULL &&
        (strcmp(d->tenant_name, q->tenant_name) != 0 || !part__queue_cfg(e, d, &dcfg))) {
        part__queue_unref(d);
        return NULL;
    }
    if (d != NULL) {
        *retention_s = dcfg.retention_s;
    }
    return d;
}

/* The message's bytes (body, attrs, sys_attrs, digests, group id) go into
 * ONE block, each NUL-terminated, that body.p points to and recv_free
 * frees: one allocation per received message instead of one per column. */
static void fill_message(const struct part_writer *w, sqlite3_stmt *st, struct part_message *m,
                         uint64_t queue_id, uint32_t gen, uint64_t now)
{
    static const int blob_cols[] = {2, 3, 4, 11};
    struct sl_slice *blob_out[] = {&m->body, &m->attrs, &m->sys_attrs, &m->digests};
    const void *src[4];
    size_t len[4];
    size_t total = 0;
    for (size_t c = 0; c < 4; c++) {
        src[c] = sqlite3_column_blob(st, blob_cols[c]);
        len[c] = (size_t)sqlite3_column_bytes(st, blob_cols[c]);
        total += len[c] + 1;
    }
    const char *gid = (const char *)sqlite3_column_text(st, 5);
    size_t gid_len = gid ? (size_t)sqlite3_column_bytes(st, 5) : 0;
    char *block = sl_xmalloc(total + gid_len + 1);
    char *p = block;
    for (size_t c = 0; c < 4; c++) {
        if (len[c] > 0) {
            memcpy(p, src[c], len[c]);
        }
        p[len[c]] = '\0';
        *blob_out[c] = (struct sl_slice){p, len[c]};
        p += len[c] + 1;
    }
    m->group_id = NULL;
    if (gid != NULL) {
        memcpy(p, gid, gid_len + 1);
        m->group_id = p;
    }
    const char *mid = (const char *)sqlite3_column_text(st, 1);
    snprintf(m->message_id, sizeof m->message_id, "%s", mid ? mid : "");
    m->priority = sqlite3_column_int64(st, 6);
    m->receive_count = gen;
    m->sent_ms = (uint64_t)sqlite3_column_int64(st, 8);
    uint64_t first = (uint64_t)sqlite3_column_int64(st, 9);
    m->first_receive_ms = first ? first : now;
    m->source_queue_id = (uint64_t)sqlite3_column_int64(st, 10);
    m->sequence = (uint64_t)sqlite3_column_int64(st, 0);
    m->queue_id = queue_id;
    m->partition = w->index;
    /* m->receipt is encoded on the client's loop (on_async): its MAC needs
     * no connection, and this thread is the partition's serial resource. */
}

/* One row chosen for a receive, before it is leased or dead-lettered. */
struct candidate {
    int64_t id;
    uint32_t count;   /* receives so far */
    uint64_t sent_ms; /* the original send: a DLQ move keeps it */
    bool has_group;
    char group[PART_GROUP_ID_MAX + 1];
};

/* Reads one row of MSG_COLUMNS into cand and, unless it is going to the
 * DLQ, into msg. */
static void take_row(struct part_writer *w, sqlite3_stmt *st, struct part_job *job,
                     const struct part_queue_config *cfg, bool to_dlq_possible, uint64_t now,
                     struct candidate *cand, struct part_message *msg)
{
    cand->id = sqlite3_column_int64(st, 0);
    cand->count = (uint32_t)sqlite3_column_int64(st, 7);
    cand->sent_ms = (uint64_t)sqlite3_column_int64(st, 8);
    const char *group = (const char *)sqlite3_column_text(st, 5);
    cand->has_group = group != NULL;
    if (group != NULL) {
        snprintf(cand->group, sizeof cand->group, "%s", group);
    }
    uint32_t gen = cand->count + 1;
    if (!to_dlq_possible || gen <= cfg->max_receive_count) {
        fill_message(w, st, msg, job->queue_id, gen, now);
    }
}

/* The best `want` ready rows of the lane, by (priority, id). */
static bool pick_head(struct part_writer *w, struct batch *b, struct part_job *job, int lane,
                      uint32_t want, const struct part_queue_config *cfg, bool dlq, uint64_t now,
                      struct candidate *cand, size_t *ncand)
{
    struct part_recv *r = job->recv;
    sqlite3_stmt *st = stmt(w, ST_SELECT_READY);
    sqlite3_bind_int64(st, 1, (sqlite3_int64)job->queue_id);
    sqlite3_bind_int(st, 2, (int)want);
    sqlite3_bind_int(st, 3, lane);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW && *ncand < want) {
        take_row(w, st, job, cfg, dlq, now, &cand[*ncand], &r->msgs[r->nmsgs + *ncand]);
        (*ncand)++;
    }
    sqlite3_reset(st);
    if (rc != SQLITE_DONE && rc != SQLITE_ROW) {
        b->sql_failed = true;
        return false;
    }
    return true;
}

/* How many of the rows picked so far in this receive belong to group. */
static int64_t picked_in_group(const struct candidate *cand, size_t n, const char *group)
{
    int64_t k = 0;
    for (size_t i = 0; i < n; i++) {
        k += cand[i].has_group && strcmp(cand[i].group, group) == 0;
    }
    return k;
}

/* Fair dequeue (SQS fair queues): among the fair_window best ready rows of
 * the lane, rows of quiet groups (and of no group) first, in order; rows of
 * noisy groups only to fill what is left. A group's in-flight count
 * includes what this receive already picked, so one receive cannot make a
 * group noisy unnoticed. Only ids are scanned (msg_ready covers them);
 * the chosen rows are read whole afterwards. */
static bool pick_fair(struct part_writer *w, struct batch *b, struct part_job *job, int lane,
                      uint32_t want, const struct part_queue_config *cfg, bool dlq, uint64_t now,
                      struct candidate *cand, size_t *ncand)
{
    struct part_recv *r = job->recv;
    struct part_qcount *qc = &job->q->per[w->index];
    int64_t queue_inflight = atomic_load(&qc->inflight);
    int64_t chosen[PART_MAX_BATCH];
    int64_t noisy[PART_MAX_BATCH];
    size_t nchosen = 0, nnoisy = 0;
    struct candidate picked[PART_MAX_BATCH]; /* groups only, for the counts */
    sqlite3_stmt *st = stmt(w, ST_FAIR_SCAN);
    sqlite3_bind_int64(st, 1, (sqlite3_int64)job->queue_id);
    sqlite3_bind_int(st, 2, lane);
    sqlite3_bind_int(st, 3, (int)r->fair_window);
    int rc = SQLITE_DONE;
    while (nchosen < want && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(st, 0);
        const char *group = (const char *)sqlite3_column_text(st, 1);
        if (group == NULL) {
            chosen[nchosen] = id;
            picked[nchosen++].has_group = false;
            continue;
        }
        int64_t in_group =
            part__groups_get(qc->groups, group) + picked_in_group(picked, nchosen, group);
        if (!r->noisy((uint64_t)in_group, (uint64_t)(queue_inflight + (int64_t)nchosen))) {
            chosen[nchosen] = id;
            picked[nchosen].has_group = true;
            snprintf(picked[nchosen].group, sizeof picked[nchosen].group, "%s", group);
            nchosen++;
        } else if (nnoisy < want) {
            noisy[nnoisy++] = id;
        }
    }
    sqlite3_reset(st);
    if (rc != SQLITE_DONE && rc != SQLITE_ROW) {
        b->sql_failed = true;
        return false;
    }
    for (size_t i = 0; nchosen < want && i < nnoisy; i++) {
        chosen[nchosen++] = noisy[i];
    }
    for (size_t i = 0; i < nchosen; i++) {
        st = stmt(w, ST_ROW_FULL);
        sqlite3_bind_int64(st, 1, chosen[i]);
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
            take_row(w, st, job, cfg, dlq, now, &cand[*ncand], &r->msgs[r->nmsgs + *ncand]);
            (*ncand)++;
        }
        sqlite3_reset(st);
        if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
            b->sql_failed = true;
            return false;
        }
    }
    return true;
}

static void exec_receive(struct part_writer *w, struct batch *b, struct part_job *job, uint64_t now)
{
    struct part_recv *r = job->recv;
    struct part_queue_config cfg;
    job->status = SL_OK;
    if (atomic_load(&r->flags) & PART_RECV_CANCELLED) {
        return;
    }
    if (!part__queue_cfg(w->engine, job->q, &cfg)) {
        job->status = SL_ENOTFOUND;
        return;
    }
    uint64_t vis_ms =
        (uint64_t)(r->visibility_s < 0 ? cfg.visibility_timeout_s : (uint32_t)r->visibility_s) *
        1000;
    int lane = r->lanes[r->pass];
    struct part_qcount *qc = &job->q->per[w->index];
    /* A group holding every message in flight would not be noisy: then
     * none is, and the plain head is the fair choice. */
    uint64_t inflight = (uint64_t)SL_MAX(atomic_load(&qc->inflight), 0);
    bool fair =
        r->noisy != NULL && part__groups_count(qc->groups) > 0 && r->noisy(inflight, inflight);
    uint32_t dlq_retention_s = 0;
    struct part_queue *dlq = dlq_of(w->engine, job->q, &cfg, &dlq_retention_s);
    bool again = true;
    while (again && r->nmsgs < r->max && !b->sql_failed) {
        again = false;
        uint32_t want = r->max - (uint32_t)r->nmsgs;
        /* Collect candidates first: the rows change under the cursor. */
        struct candidate cand[PART_MAX_BATCH];
        size_t ncand = 0;
        bool ok = fair ? pick_fair(w, b, job, lane, want, &cfg, dlq != NULL, now, cand, &ncand)
                       : pick_head(w, b, job, lane, want, &cfg, dlq != NULL, now, cand, &ncand);
        if (!ok) {
            break;
        }
        size_t kept = r->nmsgs;
        for (size_t i = 0; i < ncand; i++) {
            const char *group = cand[i].has_group ? cand[i].group : NULL;
            if (dlq != NULL && cand[i].count + 1 > cfg.max_receive_count) {
                /* Over maxReceiveCount: the row moves to the DLQ queue as
                 * is (body, attributes, id, count) in this transaction. As
                 * in SQS it expires at its original send time plus the
                 * DLQ's retention (the entry pushed at send is forgotten). */
                uint64_t expires = cand[i].sent_ms + (uint64_t)dlq_retention_s * 1000;
                struct row old; /* for the retention entry it had */
                int found = row_get(w, b, cand[i].id, &old);
                if (found < 0) {
                    break;
                }
                sqlite3_stmt *mv = stmt(w, ST_MOVE_DLQ);
                sqlite3_bind_int64(mv, 1, cand[i].id);
                sqlite3_bind_int64(mv, 2, (sqlite3_int64)dlq->id);
                sqlite3_bind_int64(mv, 3, (sqlite3_int64)job->queue_id);
                sqlite3_bind_int64(mv, 4, (sqlite3_int64)now);
                sqlite3_bind_int64(mv, 5, (sqlite3_int64)expires);
                if (!run(w, b, mv)) {
                    break;
                }
                part__heap_push(&w->timers, expires, cand[i].id, PART_TIMER_EXPIRE);
                if (found == 1) {
                    note_stale(b, old.expires_at, cand[i].id, PART_TIMER_EXPIRE);
                }
                delta_gone(b, job->q, PART_STATE_READY, lane, group);
                delta_state(b, dlq, PART_STATE_READY, PART_LANE_MAIN, 1);
                delta_of(b, job->q)->dead_lettered++;
                again = true;
                continue;
            }
            sqlite3_stmt *ls = stmt(w, ST_LEASE);
            sqlite3_bind_int64(ls, 1, cand[i].id);
            sqlite3_bind_int64(ls, 2, (sqlite3_int64)(now + vis_ms));
            sqlite3_bind_int64(ls, 3, (sqlite3_int64)now);
            if (!run(w, b, ls)) {
                break;
            }
            delta_move(b, job->q, PART_STATE_READY, lane, PART_STATE_INFLIGHT, lane, group);
            part__heap_push(&w->timers, now + vis_ms, cand[i].id, PART_TIMER_VISIBLE);
            /* keep the filled messages contiguous */
            if (kept != r->nmsgs + i) {
                r->msgs[kept] = r->msgs[r->nmsgs + i];
                memset(&r->msgs[r->nmsgs + i], 0, sizeof r->msgs[0]);
            }
            kept++;
        }
        r->nmsgs = kept;
    }
    part__queue_unref(dlq);
}

static void exec_by_receipt(struct part_writer *w, struct batch *b, struct part_job *job,
                            uint64_t now)
{
    struct part_job *owner = job->parent ? job->parent : job;
    struct part_queue_config cfg;
    if (!part__queue_cfg(w->engine, job->q, &cfg)) {
        for (size_t i = 0; i < job->nrh; i++) {
            owner->entry_status[job->rh[i].index] = SL_ENOTFOUND;
        }
        job->status = SL_ENOTFOUND;
        return;
    }
    job->status = SL_OK;
    for (size_t i = 0; i < job->nrh && !b->sql_failed; i++) {
        struct part_rh_entry *en = &job->rh[i];
        struct row r;
        int found = row_get(w, b, (int64_t)en->rh.sequence, &r);
        if (found < 0) {
            return;
        }
        /* Current: this handle's receive is the latest one and the lease
         * still holds. */
        bool present = found == 1 && r.queue_id == job->queue_id;
        bool current =
            present && r.state == PART_STATE_INFLIGHT && r.receive_count == en->rh.receive_gen;
        int *status = &owner->entry_status[en->index];
        if (job->op == PART_OP_DELETE) {
            *status = SL_OK;
            /* Gone already: success, as SQS answers. Stale on a standard
             * queue: deleted anyway (SQS standard does); on FIFO a stale
             * handle must not delete a message another consumer holds. */
            if (!present || (!current && cfg.fifo)) {
                continue;
            }
            sqlite3_stmt *st = stmt(w, ST_DELETE);
            sqlite3_bind_int64(st, 1, (sqlite3_int64)en->rh.sequence);
            if (run(w, b, st)) {
                delta_gone(b, job->q, r.state, r.lane, row_group(&r));
                note_gone(b, (int64_t)en->rh.sequence);
            }
        } else if (job->op == PART_OP_CHANGE_VIS) {
            /* SQS standard: a handle whose lease has run out still changes
             * the message as long as nobody has received it since. */
            bool expired = present && !cfg.fifo && r.state == PART_STATE_READY &&
                           r.receive_count == en->rh.receive_gen;
            if (!current && !expired) {
                *status = SL_ENOTFOUND;
                continue;
            }
            int state = en->visibility_s == 0 ? PART_STATE_READY : PART_STATE_INFLIGHT;
            uint64_t at = now + (uint64_t)en->visibility_s * 1000;
            sqlite3_stmt *st = stmt(w, ST_SET_VISIBLE);
            sqlite3_bind_int64(st, 1, (sqlite3_int64)en->rh.sequence);
            sqlite3_bind_int(st, 2, state);
            sqlite3_bind_int64(st, 3, (sqlite3_int64)at);
            if (!run(w, b, st)) {
                return;
            }
            *status = SL_OK;
            if (current) { /* its lease's entry is superseded (an expired one fired) */
                note_stale(b, r.visible_at, (int64_t)en->rh.sequence, PART_TIMER_VISIBLE);
            }
            if (state != r.state) {
                delta_move(b, job->q, r.state, r.lane, state, r.lane, row_group(&r));
            }
            if (state == PART_STATE_INFLIGHT) {
                part__heap_push(&w->timers, at, (int64_t)en->rh.sequence, PART_TIMER_VISIBLE);
            }
        } else { /* PART_OP_RELEASE: undo a lease nobody will see */
            if (!current) {
                continue;
            }
            sqlite3_stmt *st = stmt(w, ST_RELEASE);
            sqlite3_bind_int64(st, 1, (sqlite3_int64)en->rh.sequence);
            sqlite3_bind_int64(st, 2, en->rh.receive_gen);
            sqlite3_bind_int64(st, 3, (sqlite3_int64)now);
            if (run(w, b, st)) {
                delta_move(b, job->q, PART_STATE_INFLIGHT, r.lane, PART_STATE_READY, r.lane,
                           row_group(&r));
                note_stale(b, r.visible_at, (int64_t)en->rh.sequence, PART_TIMER_VISIBLE);
            }
        }
    }
}

static void exec_purge(struct part_writer *w, struct batch *b, struct part_job *job)
{
    /* Row by row rather than count(*): the heap forgets each row's timers. */
    sqlite3_stmt *st = stmt(w, ST_PURGE_ROWS);
    sqlite3_bind_int64(st, 1, (sqlite3_int64)job->queue_id);
    int rc;
    uint64_t n = 0;
    int64_t by[3][2] = {{0}}; /* [state][lane] */
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int state = sqlite3_column_int(st, 1);
        state =
            state == PART_STATE_READY || state == PART_STATE_INFLIGHT ? state : PART_STATE_DELAYED;
        by[state][sqlite3_column_int(st, 2) == PART_LANE_OVERFLOW]++;
        note_gone(b, sqlite3_column_int64(st, 0));
        n++;
    }
    sqlite3_reset(st);
    if (rc != SQLITE_DONE) {
        b->sql_failed = true;
        return;
    }
    for (int state = 0; state < 3; state++) {
        for (int lane = 0; lane < 2; lane++) {
            if (by[state][lane] != 0) {
                delta_state(b, job->q, state, lane ? PART_LANE_OVERFLOW : PART_LANE_MAIN,
                            -by[state][lane]);
            }
        }
    }
    st = stmt(w, ST_PURGE);
    sqlite3_bind_int64(st, 1, (sqlite3_int64)job->queue_id);
    /* Nothing of the queue is in flight here any more: its group counts
     * start over, and changes noted earlier in this batch are moot. */
    delta_of(b, job->q)->groups_cleared = true;
    size_t kept = 0;
    for (size_t i = 0; i < b->ng; i++) {
        if (b->g[i].q == job->q) {
            free(b->g[i].group);
        } else {
            b->g[kept++] = b->g[i];
        }
    }
    b->ng = kept;
    if (run(w, b, st)) {
        atomic_fetch_add(&(job->parent ? job->parent : job)->purged, n);
        job->status = SL_OK;
    }
}

/* A destination of a move, resolved once per job. */
struct move_dest {
    uint64_t id;
    struct part_queue *q; /* referenced; NULL = unusable */
    uint32_t retention_s;
};

#define MOVE_DEST_CACHE 16

static struct move_dest *move_dest_of(struct part_engine *e, struct part_queue *src, uint64_t id,
                                      struct move_dest *cache, size_t *n)
{
    for (size_t i = 0; i < *n; i++) {
        if (cache[i].id == id) {
            return &cache[i];
        }
    }
    if (*n == MOVE_DEST_CACHE) { /* many distinct sources: forget the oldest */
        part__queue_unref(cache[0].q);
        memmove(&cache[0], &cache[1], (MOVE_DEST_CACHE - 1) * sizeof *cache);
        (*n)--;
    }
    struct move_dest *d = &cache[(*n)++];
    *d = (struct move_dest){.id = id};
    struct part_queue_config cfg;
    struct part_queue *q = id != 0 && id != src->id ? part__queue_ref(e, id) : NULL;
    if (q != NULL && strcmp(q->tenant_name, src->tenant_name) == 0 && part__queue_cfg(e, q, &cfg)) {
        d->q = q;
        d->retention_s = cfg.retention_s;
    } else {
        part__queue_unref(q);
    }
    return d;
}

/* READY (queue A) -> READY (queue B), the same row: see part_move in
 * part.h for what a moved message keeps and what it gets anew. */
static void exec_move(struct part_writer *w, struct batch *b, struct part_job *job, uint64_t now)
{
    struct part_engine *e = w->engine;
    struct part_queue_config cfg;
    if (!part__queue_cfg(e, job->q, &cfg) ||
        (job->dest_q != NULL && !part__queue_cfg(e, job->dest_q, &cfg))) {
        job->status = SL_ENOTFOUND;
        return;
    }
    struct {
        int64_t id;
        uint64_t source;
        int lane;
        uint64_t expires_at;
    } *rows = sl_xcalloc(job->move_max, sizeof *rows);
    size_t nrows = 0;
    sqlite3_stmt *st = stmt(w, ST_MOVE_SCAN);
    sqlite3_bind_int64(st, 1, (sqlite3_int64)job->queue_id);
    sqlite3_bind_int64(st, 2, (sqlite3_int64)job->move_after);
    sqlite3_bind_int64(st, 3, job->move_max);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW && nrows < job->move_max) {
        rows[nrows].id = sqlite3_column_int64(st, 0);
        rows[nrows].source = (uint64_t)sqlite3_column_int64(st, 1);
        rows[nrows].lane = sqlite3_column_int(st, 2);
        rows[nrows].expires_at = (uint64_t)sqlite3_column_int64(st, 3);
        nrows++;
    }
    sqlite3_reset(st);
    if (rc != SQLITE_DONE && rc != SQLITE_ROW) {
        b->sql_failed = true;
        free(rows);
        return;
    }
    struct move_dest cache[MOVE_DEST_CACHE];
    size_t ncache = 0;
    struct move_dest fixed = {0};
    if (job->dest_q != NULL) {
        fixed = (struct move_dest){job->dest_q->id, job->dest_q, cfg.retention_s};
    }
    job->res.move_cursor = job->move_after;
    for (size_t i = 0; i < nrows && !b->sql_failed; i++) {
        const struct move_dest *d =
            job->dest_q != NULL ? &fixed : move_dest_of(e, job->q, rows[i].source, cache, &ncache);
        job->res.move_cursor = (uint64_t)rows[i].id;
        if (d->q == NULL) {
            job->res.move_skipped++;
            continue;
        }
        char mid[PART_MSG_ID_LEN + 1];
        sl_uuid4(mid);
        uint64_t expires = now + (uint64_t)d->retention_s * 1000;
        st = stmt(w, ST_MOVE_ROW);
        sqlite3_bind_int64(st, 1, rows[i].id);
        sqlite3_bind_int64(st, 2, (sqlite3_int64)d->id);
        sqlite3_bind_int64(st, 3, (sqlite3_int64)now);
        sqlite3_bind_int64(st, 4, (sqlite3_int64)expires);
        sqlite3_bind_text(st, 5, mid, -1, SQLITE_STATIC);
        if (!run(w, b, st)) {
            break;
        }
        delta_state(b, job->q, PART_STATE_READY, rows[i].lane, -1);
        delta_state(b, d->q, PART_STATE_READY, PART_LANE_MAIN, 1);
        part__heap_push(&w->timers, expires, rows[i].id, PART_TIMER_EXPIRE);
        note_stale(b, rows[i].expires_at, rows[i].id, PART_TIMER_EXPIRE);
        job->res.moved++;
    }
    for (size_t i = 0; i < ncache; i++) {
        part__queue_unref(cache[i].q);
    }
    job->res.move_exhausted = nrows < job->move_max;
    free(rows);
    job->status = SL_OK;
}

static void exec_job(struct part_writer *w, struct batch *b, struct part_job *job, uint64_t now)
{
    switch (job->op) {
    case PART_OP_SEND:
        exec_send(w, b, job, now);
        break;
    case PART_OP_RECEIVE:
        exec_receive(w, b, job, now);
        break;
    case PART_OP_DELETE:
    case PART_OP_CHANGE_VIS:
    case PART_OP_RELEASE:
        exec_by_receipt(w, b, job, now);
        break;
    case PART_OP_PURGE:
        exec_purge(w, b, job);
        break;
    case PART_OP_MOVE:
        exec_move(w, b, job, now);
        break;
    case PART_OP_BARRIER:
        job->status = SL_OK;
        break;
    default:
        SL_ASSERT(!"catalog op on a partition writer");
    }
}

/* ---- after the commit -------------------------------------------------- */

static int64_t lane_head(struct part_writer *w, struct part_queue *q, int lane)
{
    sqlite3_stmt *st = stmt(w, ST_HEAD);
    sqlite3_bind_int64(st, 1, (sqlite3_int64)q->id);
    sqlite3_bind_int(st, 2, lane);
    int64_t head = INT64_MAX;
    if (sqlite3_step(st) == SQLITE_ROW) {
        head = sqlite3_column_int64(st, 0);
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
static void batch_apply(struct part_writer *w, struct batch *b)
{
    for (size_t i = 0; i < b->n; i++) {
        struct delta *d = &b->d[i];
        struct part_tenant *t = d->q->tenant;
        part__counts_add(d->q, w->index, &d->c);
        atomic_fetch_add_explicit(&t->expired, d->expired, memory_order_relaxed);
        atomic_fetch_add_explicit(&t->aged, d->aged, memory_order_relaxed);
        atomic_fetch_add_explicit(&t->dead_lettered, d->dead_lettered, memory_order_relaxed);
        publish_head(w, d->q);
    }
    groups_apply(w, b);
    for (size_t i = 0; i < b->ngone; i++) {
        part__heap_forget_row(&w->timers, b->gone[i]);
    }
    for (size_t i = 0; i < b->stale.n; i++) {
        const struct part_heap_item *it = &b->stale.v[i];
        part__heap_forget(&w->timers, it->due, it->rowid, it->kind);
    }
    part__heap_tidy(&w->timers);
}

/* A receive that leased what it could here: done, or on to the next
 * partition of its plan, or (nothing found anywhere) to long polling. */
static void receive_continue(struct part_engine *e, struct part_job *job)
{
    struct part_recv *r = job->recv;
    if (job->status != SL_OK || r->nmsgs == r->max ||
        (atomic_load(&r->flags) & PART_RECV_CANCELLED)) {
        part__complete(job);
        return;
    }
    while (r->next < r->norder) {
        uint32_t p = r->order[r->next++];
        if (part__lane_ready(job->q, p, r->lanes[r->pass]) > 0) {
            part__submit_partition(e, p, job);
            return;
        }
    }
    if (r->pass == 0) { /* on to the other lane */
        r->pass = 1;
        if (part__recv_plan(e, job, UINT32_MAX)) {
            r->next = 1;
            part__submit_partition(e, r->order[0], job);
            return;
        }
    }
    if (r->nmsgs > 0) {
        part__complete(job);
    } else {
        part__recv_no_message(e, job);
    }
}

static void checkpoint(struct part_writer *w)
{
    uint32_t limit = w->engine->opt.checkpoint_pages ? w->engine->opt.checkpoint_pages : 2048;
    if (w->wal_pages < (int)limit) {
        return;
    }
    int log = 0, ckpt = 0;
    /* RESTART, not TRUNCATE: the next commits rewrite the WAL from its
     * start in blocks the file already has, where a truncated WAL has to
     * grow again, and each append that grows it makes the fdatasync write
     * the file's metadata too (measured: +8 % batch, +15 % single round
     * trip). The WAL stays at about checkpoint_pages pages; close truncates. */
    int rc = sqlite3_wal_checkpoint_v2(w->db, NULL, SQLITE_CHECKPOINT_RESTART, &log, &ckpt);
    if (rc != SQLITE_OK) {
        sl_log(SL_LOG_WARN, LOG_MOD, "partition %u: checkpoint: %s", w->index,
               sqlite3_errmsg(w->db));
        return;
    }
    w->wal_pages = 0;
    /* Give deleted pages back to the file system a little at a time. */
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(w->db, "PRAGMA freelist_count", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int64(st, 0) > 1024) {
        part__sql_exec(w->db, "PRAGMA incremental_vacuum(512)");
    }
    sqlite3_finalize(st);
}

static void mark_failed(struct part_writer *w, int rc)
{
    int primary = rc & 0xff;
    if (primary == SQLITE_CORRUPT || primary == SQLITE_NOTADB || primary == SQLITE_IOERR ||
        primary == SQLITE_FULL || primary == SQLITE_CANTOPEN) {
        if (!atomic_exchange(&w->failed, true)) {
            sl_log(SL_LOG_ERROR, LOG_MOD,
                   "partition %u (%s) stopped after a storage error: %s; its jobs now fail",
                   w->index, w->path, sqlite3_errstr(rc));
        }
    }
}

static bool step_simple(struct part_writer *w, int which)
{
    sqlite3_stmt *st = w->st[which];
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE) {
        sl_log(SL_LOG_ERROR, LOG_MOD, "partition %u: %s: %s", w->index, SQL[which],
               sqlite3_errmsg(w->db));
        mark_failed(w, sqlite3_extended_errcode(w->db));
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

int part_engine_stats(const struct part_engine *e, uint32_t p, struct part_partition_stats *out)
{
    if (p >= e->nparts) {
        return SL_EINVAL;
    }
    struct part_writer *w = &e->writers[p];
    out->commits = atomic_load_explicit(&w->stat_commits, memory_order_relaxed);
    out->jobs = atomic_load_explicit(&w->stat_jobs, memory_order_relaxed);
    out->commit_us = atomic_load_explicit(&w->stat_commit_us, memory_order_relaxed);
    out->batch_us = atomic_load_explicit(&w->stat_batch_us, memory_order_relaxed);
    out->failed = atomic_load(&w->failed);
    out->timers = atomic_load_explicit(&w->stat_timers, memory_order_relaxed);
    return SL_OK;
}

/* A rolled-back batch undid what its timers did, so they are due again:
 * without this a lease that fired in a failed batch would keep its
 * message in flight until a restart rebuilt the heap. They come back a
 * little later, so that a timer whose own statement keeps failing cannot
 * spin the writer. */
static void rearm_fired(struct part_writer *w, const struct batch *b, uint64_t now)
{
    for (size_t i = 0; i < b->fired.n; i++) {
        const struct part_heap_item *it = &b->fired.v[i];
        part__heap_push(&w->timers, SL_MAX(it->due, now + TIMER_RETRY_MS), it->rowid, it->kind);
    }
}

/* With durability fsync a commit syncs the WAL (synchronous FULL) unless
 * the batch holds only leases (see split_leases); durability os never
 * does. The setting is the connection's, so it changes between batches. */
static bool set_sync(struct part_writer *w, bool sync)
{
    if (w->engine->opt.durability != PART_DURABILITY_FSYNC || w->syncing == sync) {
        return true;
    }
    if (part__sql_exec(w->db, sync ? PART_SYNC_FULL : PART_SYNC_NORMAL) != SL_OK) {
        mark_failed(w, sqlite3_extended_errcode(w->db));
        return false;
    }
    w->syncing = sync;
    return true;
}

static void run_batch(struct part_writer *w, struct part_job *jobs, struct batch *b, bool sync)
{
    struct part_engine *e = w->engine;
    uint64_t now = part__now(e);
    uint64_t begin_ns = sl_mono_ns();
    bool ok = !atomic_load(&w->failed) && set_sync(w, sync) && step_simple(w, ST_BEGIN);
    if (ok) {
        fire_timers(w, b, now);
        for (struct part_job *j = jobs; j != NULL && !b->sql_failed; j = j->next) {
            exec_job(w, b, j, now);
        }
        if (b->sql_failed) {
            mark_failed(w, sqlite3_extended_errcode(w->db));
        }
        uint64_t commit_ns = sl_mono_ns();
        ok = !b->sql_failed && step_simple(w, ST_COMMIT);
        if (!ok) {
            step_simple(w, ST_ROLLBACK);
            rearm_fired(w, b, now);
        } else {
            count_commit(w, jobs, begin_ns, commit_ns);
        }
    }
    if (ok) {
        batch_apply(w, b);
        for (size_t i = 0; i < b->n; i++) {
            if (b->d[i].woke > 0) {
                part__wake(e, b->d[i].q, w->index, b->d[i].woke);
            }
        }
    }
    batch_clear(b);
    while (jobs != NULL) {
        struct part_job *j = jobs;
        jobs = j->next;
        j->next = NULL;
        if (!ok) {
            j->status = SL_EIO;
        }
        if (j->op == PART_OP_RECEIVE) {
            receive_continue(e, j);
        } else {
            part__complete(j);
        }
    }
    if (ok) {
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
    struct batch b = {0};
    size_t max = e->opt.max_batch_jobs ? e->opt.max_batch_jobs : 1024;
    for (;;) {
        pthread_mutex_lock(&w->mu);
        while (!w->stop && w->head == NULL && !w->kicked) {
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
        struct part_job *jobs = w->head, *last = NULL;
        size_t n = 0;
        for (struct part_job *j = w->head; j != NULL && n < max; j = j->next) {
            last = j;
            n++;
        }
        if (last != NULL) {
            w->head = last->next;
            if (w->head == NULL) {
                w->tail = NULL;
            }
            last->next = NULL;
            atomic_fetch_sub(&w->queued, (int64_t)n);
        } else {
            jobs = NULL;
        }
        bool stop = w->stop && w->head == NULL && jobs == NULL;
        if (stop) {
            w->exited = true;
        }
        pthread_mutex_unlock(&w->mu);
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
    free(b.d);
    free(b.g);
    free(b.gone);
    free(b.stale.v);
    free(b.fired.v);
    return NULL;
}

/* ---- open / start / stop ----------------------------------------------- */

static int wal_hook(void *arg, sqlite3 *db, const char *name, int pages)
{
    struct part_writer *w = arg;
    w->wal_pages = pages;
    return SQLITE_OK;
}

/* Brings a partition file of an older schema up to PART_SCHEMA_VERSION
 * (before PART_SCHEMA's CREATE ... IF NOT EXISTS, which would keep an old
 * index), each step and the new user_version in one transaction, so a
 * crash halfway leaves the old version to migrate again. A new file has no
 * msg table and needs nothing. */
static bool migrate(struct part_writer *w)
{
    sqlite3_stmt *st = NULL;
    int version = -1;
    bool has_msg = false;
    if (sqlite3_prepare_v2(w->db, "PRAGMA user_version", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW) {
        version = sqlite3_column_int(st, 0);
    }
    sqlite3_finalize(st);
    if (sqlite3_prepare_v2(w->db, "SELECT 1 FROM sqlite_schema WHERE type='table' AND name='msg'",
                           -1, &st, NULL) == SQLITE_OK) {
        has_msg = sqlite3_step(st) == SQLITE_ROW;
    }
    sqlite3_finalize(st);
    if (version < 0) {
        return false;
    }
    if (!has_msg || version >= PART_SCHEMA_VERSION) {
        return true;
    }
    sl_log(SL_LOG_INFO, LOG_MOD, "partition %u: migrating %s from schema %d to %d", w->index,
           w->path, version, PART_SCHEMA_VERSION);
    char set_version[48];
    snprintf(set_version, sizeof set_version, "PRAGMA user_version=%d;", PART_SCHEMA_VERSION);
    struct sl_buf sql;
    sl_buf_init(&sql);
    sl_buf_append_cstr(&sql, "BEGIN IMMEDIATE;");
    if (version < 1) {
        sl_buf_append_cstr(&sql, PART_MIGRATE_0_1);
    }
    if (version < 2) {
        sl_buf_append_cstr(&sql, PART_MIGRATE_1_2);
    }
    sl_buf_append_cstr(&sql, set_version);
    sl_buf_append_cstr(&sql, "COMMIT;");
    bool ok = part__sql_exec(w->db, sql.p) == SL_OK;
    sl_buf_free(&sql);
    if (!ok && !sqlite3_get_autocommit(w->db)) {
        part__sql_exec(w->db, "ROLLBACK");
    }
    return ok;
}

static bool rebuild(struct part_writer *w, char *why, size_t whylen)
{
    struct part_engine *e = w->engine;
    sqlite3_stmt *st = NULL;
    /* Messages of queues deleted before a crash finished their purge. */
    if (sqlite3_prepare_v2(w->db, "SELECT DISTINCT queue_id FROM msg", -1, &st, NULL) !=
        SQLITE_OK) {
        goto fail;
    }
    uint64_t *orphans = NULL;
    size_t norphans = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
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
    }
    free(orphans);

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
        const char *group = (const char *)sqlite3_column_text(st, 6);
        if (state == PART_STATE_INFLIGHT && group != NULL) {
            struct part_qcount *qc = &q->per[w->index];
            if (qc->groups == NULL) {
                qc->groups = part__groups_new();
            }
            part__groups_add(qc->groups, group, 1);
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
    return true;
fail:
    snprintf(why, whylen, "%s", sqlite3_errmsg(w->db));
    return false;
}

int part__writer_open(struct part_engine *e, struct part_writer *w, uint32_t index)
{
    w->engine = e;
    w->index = index;
    pthread_mutex_init(&w->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&w->cv, &ca);
    pthread_condattr_destroy(&ca);
    if (index == UINT32_MAX) {
        snprintf(w->path, sizeof w->path, "%s/catalog.db", e->data_dir);
        return SL_OK; /* the catalog's connection lives in part_catalog.c */
    }
    snprintf(w->path, sizeof w->path, "%s/part-%04u.db", e->data_dir, index);
    char why[512] = "";
    int rc = sqlite3_open_v2(w->path, &w->db, part_sql_open_flags(), NULL);
    if (rc != SQLITE_OK) {
        snprintf(why, sizeof why, "%s", w->db ? sqlite3_errmsg(w->db) : sqlite3_errstr(rc));
        goto fail;
    }
    const char *pragmas =
        e->opt.durability == PART_DURABILITY_FSYNC ? PART_PRAGMAS_FSYNC : PART_PRAGMAS_OS;
    char set_version[48];
    snprintf(set_version, sizeof set_version, "PRAGMA user_version=%d", PART_SCHEMA_VERSION);
    if (part__sql_exec(w->db, pragmas) != SL_OK || !migrate(w) ||
        part__sql_exec(w->db, PART_SCHEMA) != SL_OK ||
        part__sql_exec(w->db, set_version) != SL_OK) {
        snprintf(why, sizeof why, "%s", sqlite3_errmsg(w->db));
        goto fail;
    }
    w->syncing = e->opt.durability == PART_DURABILITY_FSYNC;
    for (int i = 0; i < ST_COUNT_; i++) {
        if (sqlite3_prepare_v3(w->db, SQL[i], -1, SQLITE_PREPARE_PERSISTENT, &w->st[i], NULL) !=
            SQLITE_OK) {
            snprintf(why, sizeof why, "%s", sqlite3_errmsg(w->db));
            goto fail;
        }
    }
    sqlite3_wal_hook(w->db, wal_hook, w);
    if (!rebuild(w, why, sizeof why)) {
        goto fail;
    }
    atomic_store_explicit(&w->stat_timers, w->timers.n, memory_order_relaxed);
    return SL_OK;
fail:
    sl_log(SL_LOG_ERROR, LOG_MOD,
           "partition %u (%s) is unusable and stays stopped: %s; jobs to it fail with SL_EIO",
           index, w->path, why);
    for (int i = 0; i < ST_COUNT_; i++) {
        sqlite3_finalize(w->st[i]);
        w->st[i] = NULL;
    }
    sqlite3_close(w->db);
    w->db = NULL;
    atomic_store(&w->failed, true);
    return SL_EIO;
}

static void *catalog_main(void *arg)
{
    struct part_writer *w = arg;
    for (;;) {
        pthread_mutex_lock(&w->mu);
        while (!w->stop && w->head == NULL) {
            pthread_cond_wait(&w->cv, &w->mu);
        }
        struct part_job *job = w->head;
        if (job != NULL) {
            w->head = job->next;
            if (w->head == NULL) {
                w->tail = NULL;
            }
            job->next = NULL;
        } else {
            w->exited = true;
        }
        pthread_mutex_unlock(&w->mu);
        if (job == NULL) {
            break;
        }
        part__catalog_exec(w->engine, job);
    }
    return NULL;
}

int part__writer_start(struct part_writer *w)
{
    if (atomic_load(&w->failed)) {
        return SL_OK;
    }
    if (pthread_create(&w->thread, NULL, w->index == UINT32_MAX ? catalog_main : writer_main, w) !=
        0) {
        return SL_EIO;
    }
    w->started = true;
    return SL_OK;
}

void part__writer_stop(struct part_writer *w)
{
    if (w->started) {
        pthread_mutex_lock(&w->mu);
        w->stop = true;
        pthread_cond_signal(&w->cv);
        pthread_mutex_unlock(&w->mu);
        pthread_join(w->thread, NULL);
        w->started = false;
    }
    for (int i = 0; i < ST_COUNT_; i++) {
        sqlite3_finalize(w->st[i]);
        w->st[i] = NULL;
    }
    if (w->db != NULL) {
        sqlite3_wal_checkpoint_v2(w->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
        sqlite3_close(w->db);
        w->db = NULL;
    }
    part__heap_free(&w->timers);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
}
