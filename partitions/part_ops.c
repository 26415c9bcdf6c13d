/*
 * part_ops.c -- the message operations: every state transition of a
 * message row, as SQL run inside a writer's open transaction.
 *
 * Stack: under part_writer.c, which opens and commits the transaction and
 * calls part__ops_exec for each job and part__ops_fire_timers for due
 * timers; calls part_batch.c (what the transaction changes outside
 * SQLite), part_schema.c (its statements), part_catalog.c (queues, their
 * config), part_timers.c and part_groups.c. Writer thread only.
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
 *   DELAYED/INFLIGHT -> READY   part__ops_fire_timers (VISIBLE), exec_change_vis (0),
 *                               exec_release
 *   READY -> INFLIGHT           exec_receive; exec_change_vis (> 0) with a
 *                               lapsed handle of a standard queue
 *   READY -> READY (DLQ queue)  exec_receive (move_to_dlq)
 *   READY -> READY (redrive)    exec_move (DLQ back to a source / destination)
 *   any -> GONE                 exec_delete, part__ops_fire_timers (EXPIRE), exec_purge
 *   READY main -> READY overflow part__ops_fire_timers (AGE: age_queue)
 *
 * Lanes: DELAYED and READY rows are in the main or the overflow lane
 * (spilled sends, aged rows). A row keeps its lane while in flight; a DLQ
 * move or a redrive puts it in the main lane of its new queue. Receives
 * read one lane per pass (see recv_plan in part_poll.c).
 *
 * Selection: the ready rows of a queue are read through a partial index
 * msg_ready(queue_id, priority, id) WHERE state = 1, so delayed and in
 * flight rows are never scanned, and nothing has to be rebuilt in memory.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "part_batch.h"
#include "part_catalog.h"
#include "part_dedup.h"
#include "part_filter.h"
#include "part_gdir.h"
#include "part_gheap.h"
#include "part_groups.h"
#include "part_ops.h"
#include "part_schema.h"
#include "part_timers.h"

#define LOG_MOD "partitions"

/* ---- statement helpers ------------------------------------------------- */

/* Resets st, whose last step returned rc; false (and the batch marked
 * failed) unless it ran to the end. */
static bool finished(struct part_writer *w, struct part_batch *b, sqlite3_stmt *st, int rc)
{
    sqlite3_reset(st);
    if (rc != SQLITE_DONE) {
        sl_log(SL_LOG_ERROR, LOG_MOD, "partition %u: %s", w->index, sqlite3_errmsg(w->db));
        b->sql_failed = true;
        return false;
    }
    return true;
}

/* Steps a statement that returns no rows; false (and the batch marked
 * failed) on error. */
static bool run(struct part_writer *w, struct part_batch *b, sqlite3_stmt *st)
{
    return finished(w, b, st, sqlite3_step(st));
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
    bool filtered; /* it has msg_filter entries */
};

static const char *row_group(const struct row *r)
{
    return r->has_group ? r->group : NULL;
}

/* 1: found, 0: no such row, -1: error. */
static int row_get(struct part_writer *w, struct part_batch *b, int64_t id, struct row *r)
{
    sqlite3_stmt *st = part__stmt(w, ST_ROW);
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
        r->filtered = sqlite3_column_type(st, 7) != SQLITE_NULL;
    }
    sqlite3_reset(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
        b->sql_failed = true;
        return -1;
    }
    return rc == SQLITE_ROW;
}

/* Row id's msg_filter entries follow its new state (part_schema.c says
 * why the writer does it, not a trigger); false when the write failed. */
static bool filter_state(struct part_writer *w, struct part_batch *b, int64_t id, int state)
{
    sqlite3_stmt *st = part__stmt(w, ST_FILTER_STATE);
    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_int(st, 2, state);
    return run(w, b, st);
}

/* Row id's msg_filter entries, gone with it; false when the write failed. */
static bool filter_delete(struct part_writer *w, struct part_batch *b, int64_t id)
{
    sqlite3_stmt *st = part__stmt(w, ST_FILTER_DELETE);
    sqlite3_bind_int64(st, 1, id);
    return run(w, b, st);
}

/* ---- timers ------------------------------------------------------------ */

#define TIMERS_PER_BATCH 4096
#define AGE_ROWS_PER_CHECK 1024 /* one check's share of a batch */

/* PART_TIMER_AGE: main-lane ready rows of q sent before now - aging move
 * to the overflow lane. publish_head schedules the next check. */
static void age_queue(struct part_writer *w, struct part_batch *b, struct part_queue *q,
                      uint64_t due, uint64_t now)
{
    struct part_qcount *qc = &q->per[w->index];
    uint64_t aging = part__tenant_aging(q);
    if (qc->age_due != due) {
        return; /* superseded by an earlier check */
    }
    qc->age_due = 0;
    struct part_delta *d = part__delta_of(b, q); /* publish_head reschedules */
    struct part_queue_config cfg;
    /* A FIFO queue's order is its sequence: no lane may reorder it. A
     * priority queue's rows carry the producer's priority, not their send
     * time, so "priority <= now - aging" would say nothing about age
     * (and sideline the most urgent ones first). */
    if (aging == 0 || aging >= now || !part__queue_cfg(w->engine, q, &cfg) || cfg.fifo ||
        cfg.priority_order) {
        return;
    }
    sqlite3_stmt *st = part__stmt(w, ST_AGE);
    sqlite3_bind_int64(st, 1, (sqlite3_int64)q->id);
    sqlite3_bind_int64(st, 2, (sqlite3_int64)(now - aging));
    sqlite3_bind_int(st, 3, AGE_ROWS_PER_CHECK);
    if (run(w, b, st)) {
        int64_t n = sqlite3_changes(w->db);
        d->c.overflow_ready += n; /* ready either way: only the lane changes */
        d->aged += (uint64_t)n;
    }
}

void part__ops_fire_timers(struct part_writer *w, struct part_batch *b, uint64_t now)
{
    struct part_engine *e = w->engine;
    struct part_heap_item it;
    for (int done = 0;
         done < TIMERS_PER_BATCH && !b->sql_failed && part__heap_pop_due(&w->timers, now, &it);
         done++) {
        part__item_list_add(&b->fired, it.due, it.rowid, it.kind);
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
            sqlite3_stmt *st = part__stmt(w, ST_MAKE_READY);
            sqlite3_bind_int64(st, 1, it.rowid);
            if (run(w, b, st) && (!r.filtered || filter_state(w, b, it.rowid, PART_STATE_READY))) {
                part__delta_move(b, q, r.state, r.lane, PART_STATE_READY, r.lane, row_group(&r));
            }
        } else if (it.kind == PART_TIMER_EXPIRE && r.expires_at <= now) {
            sqlite3_stmt *st = part__stmt(w, ST_DELETE);
            sqlite3_bind_int64(st, 1, it.rowid);
            if (run(w, b, st) && (!r.filtered || filter_delete(w, b, it.rowid))) {
                part__delta_gone(b, q, r.state, r.lane, row_group(&r));
                part__delta_of(b, q)->expired++;
                part__note_gone(b, it.rowid);
            }
        }
        part__queue_unref(q);
    }
}

/* ---- FIFO deduplication -------------------------------------------------- */

/* Expired ids a FIFO send removes before its own: twice its messages and a
 * few more, so the ids held never grow past those of the last interval by
 * more than a batch, however many sends one batch carries. */
#define DEDUP_SWEEP_PER_MSG 2
#define DEDUP_SWEEP_MIN 16
#define DEDUP_CANDIDATES 4 /* rows that share an id's hash, read at most */

/* The key a deduplication id is unique under: the id, or under
 * DeduplicationScope messageGroup the group, a NUL and the id. */
static size_t dedup_key(const struct part_queue_config *cfg, const struct part_send_msg *m,
                        char *key)
{
    size_t n = 0;
    if (cfg->dedup_per_group) {
        size_t g = strlen(m->group_id);
        memcpy(key, m->group_id, g + 1);
        n = g + 1;
    }
    size_t d = strlen(m->dedup_id);
    memcpy(key + n, m->dedup_id, d);
    return n + d;
}

/* Whether row rowid of the dedup table holds key (its hash matched);
 * when it does, sent is filled with the first send. -1: error. */
static int dedup_row_matches(struct part_writer *w, struct part_batch *b, struct part_job *job,
                             int64_t rowid, const char *key, size_t keylen, uint64_t now,
                             struct part_sent *sent)
{
    sqlite3_stmt *st = part__stmt(w, ST_DEDUP_FIND);
    sqlite3_bind_int64(st, 1, rowid);
    sqlite3_bind_int64(st, 2, (sqlite3_int64)job->queue_id);
    sqlite3_bind_int64(st, 3, (sqlite3_int64)now);
    int rc = sqlite3_step(st);
    bool match = false;
    if (rc == SQLITE_ROW && (size_t)sqlite3_column_bytes(st, 0) == keylen &&
        memcmp(sqlite3_column_blob(st, 0), key, keylen) == 0) {
        const char *mid = (const char *)sqlite3_column_text(st, 1);
        snprintf(sent->message_id, sizeof sent->message_id, "%s", mid ? mid : "");
        sent->sequence = (uint64_t)sqlite3_column_int64(st, 2);
        sent->partition = w->index;
        sent->duplicate = true;
        match = true;
    }
    sqlite3_reset(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
        b->sql_failed = true;
        return -1;
    }
    return match;
}

/* The hash and queue of the dedup row st is on, its queue id in column
 * qcol and its key in the next. */
static uint64_t row_dedup_hash(struct part_writer *w, sqlite3_stmt *st, int qcol, uint64_t *qid)
{
    *qid = (uint64_t)sqlite3_column_int64(st, qcol);
    const void *key = sqlite3_column_blob(st, qcol + 1);
    size_t len = (size_t)sqlite3_column_bytes(st, qcol + 1);
    return part__dedup_hash(w->dedup, *qid, key ? key : "", len);
}

bool part__ops_load_dedup(struct part_writer *w)
{
    part__dedup_free(w->dedup);
    w->dedup = part__dedup_new();
    sqlite3_stmt *st = NULL;
    /* through dedup_expiry: expired rows waiting for the sweep are not read */
    if (sqlite3_prepare_v2(
            w->db, "SELECT rowid, queue_id, dkey, expires_at FROM dedup WHERE expires_at>?1", -1,
            &st, NULL) != SQLITE_OK) {
        return false;
    }
    sqlite3_bind_int64(st, 1, (sqlite3_int64)part__now(w->engine));
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        uint64_t qid;
        uint64_t hash = row_dedup_hash(w, st, 1, &qid);
        part__dedup_add(w->dedup, hash, qid, sqlite3_column_int64(st, 0),
                        (uint64_t)sqlite3_column_int64(st, 3));
    }
    sqlite3_finalize(st);
    part__dedup_commit(w->dedup);
    atomic_store_explicit(&w->stat_dedup_ids, part__dedup_size(w->dedup), memory_order_relaxed);
    return rc == SQLITE_DONE;
}

/* Deletes up to max expired ids, oldest first, and drops each from the
 * in-memory index with its row, so that the two never disagree (were the
 * clock set back, a row the index had dropped on its own would count
 * again in the file but not in memory). */
static bool dedup_sweep(struct part_writer *w, struct part_batch *b, uint64_t now, size_t max)
{
    sqlite3_stmt *st = part__stmt(w, ST_DEDUP_SWEEP);
    sqlite3_bind_int64(st, 1, (sqlite3_int64)now);
    sqlite3_bind_int64(st, 2, (sqlite3_int64)max);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        uint64_t qid;
        uint64_t hash = row_dedup_hash(w, st, 1, &qid);
        part__dedup_remove(w->dedup, hash, qid, sqlite3_column_int64(st, 0));
    }
    return finished(w, b, st, rc);
}

/* 1: m is a duplicate (sent is filled with the first send), 0: not, -1:
 * error. The in-memory index names the rows that may hold the id; one
 * rowid lookup each confirms. */
static int dedup_check(struct part_writer *w, struct part_batch *b, struct part_job *job,
                       const char *key, size_t keylen, uint64_t hash, uint64_t now,
                       struct part_sent *sent)
{
    int64_t rows[DEDUP_CANDIDATES];
    size_t n = part__dedup_find(w->dedup, hash, job->queue_id, now, rows, DEDUP_CANDIDATES);
    for (size_t i = 0; i < n; i++) {
        int r = dedup_row_matches(w, b, job, rows[i], key, keylen, now, sent);
        if (r != 0) {
            return r;
        }
    }
    return 0;
}

static bool dedup_put(struct part_writer *w, struct part_batch *b, struct part_job *job,
                      const char *key, size_t keylen, uint64_t hash, uint64_t now,
                      uint64_t window_ms, const char *message_id, uint64_t seq)
{
    uint64_t expires = now + window_ms;
    sqlite3_stmt *st = part__stmt(w, ST_DEDUP_PUT);
    sqlite3_bind_int64(st, 1, (sqlite3_int64)job->queue_id);
    sqlite3_bind_blob(st, 2, key, (int)keylen, SQLITE_STATIC);
    sqlite3_bind_int64(st, 3, (sqlite3_int64)expires);
    sqlite3_bind_text(st, 4, message_id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 5, (sqlite3_int64)seq);
    if (!run(w, b, st)) {
        return false;
    }
    /* logged: a batch that rolls back takes it back (run_batch) */
    part__dedup_add(w->dedup, hash, job->queue_id, sqlite3_last_insert_rowid(w->db), expires);
    return true;
}

/* ---- jobs -------------------------------------------------------------- */

static void exec_send(struct part_writer *w, struct part_batch *b, struct part_job *job,
                      uint64_t now)
{
    struct part_queue_config cfg;
    if (!part__queue_cfg(w->engine, job->q, &cfg)) {
        job->status = SL_ENOTFOUND;
        return;
    }
    /* A share of a send fanned out over partitions answers in its
     * parent's array, at each message's place in the request. */
    struct part_sent *sent = job->parent != NULL ? job->parent->res.sent : NULL;
    if (sent == NULL) {
        job->res.sent = sent = sl_xcalloc(job->nmsgs, sizeof *job->res.sent);
        job->res.sent_count = job->nmsgs;
    }
    /* A standard queue with idempotent sends keeps ids as a FIFO queue
     * does, for its own window, and sweeps them the same way. */
    bool idempotent = !cfg.fifo && cfg.idempotency_window_s > 0;
    uint64_t window_ms =
        cfg.fifo ? PART_DEDUP_INTERVAL_MS : (uint64_t)cfg.idempotency_window_s * 1000;
    if ((cfg.fifo || idempotent) &&
        !dedup_sweep(w, b, now, DEDUP_SWEEP_MIN + DEDUP_SWEEP_PER_MSG * (size_t)job->nmsgs)) {
        return;
    }
    for (size_t i = 0; i < job->nmsgs && !b->sql_failed; i++) {
        struct part_send_msg *m = &job->msgs[i];
        struct part_sent *out = &sent[m->index];
        bool fifo = cfg.fifo && m->dedup_id != NULL && m->group_id != NULL;
        bool keyed = fifo || (idempotent && m->dedup_id != NULL);
        char key[PART_GROUP_ID_MAX + 1 + PART_DEDUP_ID_MAX];
        size_t keylen = keyed ? dedup_key(&cfg, m, key) : 0;
        uint64_t hash = keyed ? part__dedup_hash(w->dedup, job->queue_id, key, keylen) : 0;
        if (keyed) {
            int dup = dedup_check(w, b, job, key, keylen, hash, now, out);
            if (dup != 0) {
                if (dup < 0) {
                    return;
                }
                continue;
            }
        }
        /* FIFO: the sequence number is the priority, so the ready rows of
         * a group are read in send order (batch order included). */
        int64_t priority = fifo              ? (int64_t)part__seq_next(w->engine, now)
                           : m->has_priority ? m->priority
                                             : (int64_t)now;
        uint64_t delay_ms = (uint64_t)(m->delay_s < 0 ? cfg.delay_s : (uint32_t)m->delay_s) * 1000;
        int state = delay_ms > 0 ? PART_STATE_DELAYED : PART_STATE_READY;
        uint64_t expires = now + (uint64_t)cfg.retention_s * 1000;
        sqlite3_stmt *st = part__stmt(w, ST_INSERT);
        sqlite3_bind_int64(st, 1, (sqlite3_int64)job->queue_id);
        sqlite3_bind_int(st, 2, state);
        sqlite3_bind_int64(st, 3, priority);
        uint64_t visible_at = now + delay_ms;
        sqlite3_bind_int64(st, 4, (sqlite3_int64)visible_at);
        sqlite3_bind_int64(st, 5, (sqlite3_int64)expires);
        sqlite3_bind_int64(st, 6, (sqlite3_int64)now);
        sqlite3_bind_text(st, 7, m->message_id, -1, SQLITE_STATIC);
        if (m->group_id) {
            sqlite3_bind_text(st, 8, m->group_id, -1, SQLITE_STATIC);
        }
        sqlite3_bind_int(st, 12, m->lane);
        if (m->ndigests > 0) {
            sqlite3_bind_blob(st, 13, m->digests, m->ndigests, SQLITE_STATIC);
        }
        if (fifo) {
            sqlite3_bind_text(st, 14, m->dedup_id, -1, SQLITE_STATIC);
        }
        if (m->nfilters > 0) { /* its msg_filter entries follow the row */
            sqlite3_bind_int(st, 15, 1);
        }
        if (!run(w, b, st)) {
            return;
        }
        int64_t rowid = sqlite3_last_insert_rowid(w->db);
        const char *pairs = m->filters;
        for (uint8_t k = 0; k < m->nfilters; k++) {
            if (!run(w, b,
                     part__filter_put(w, &pairs, rowid, job->queue_id, state, m->lane, priority))) {
                return;
            }
        }
        /* The body apart from the row (part_schema.c says why). */
        st = part__stmt(w, ST_INSERT_BODY);
        sqlite3_bind_int64(st, 1, rowid);
        sqlite3_bind_blob(st, 2, m->body.p ? m->body.p : "", (int)m->body.n, SQLITE_STATIC);
        sqlite3_bind_blob(st, 3, m->attrs.p ? m->attrs.p : "", (int)m->attrs.n, SQLITE_STATIC);
        sqlite3_bind_blob(st, 4, m->sys_attrs.p ? m->sys_attrs.p : "", (int)m->sys_attrs.n,
                          SQLITE_STATIC);
        if (!run(w, b, st)) {
            return;
        }
        /* A standard queue's message has no sequence number: a duplicate
         * answers the first send's row, as part_sent.sequence does. */
        if (keyed && !dedup_put(w, b, job, key, keylen, hash, now, window_ms, m->message_id,
                                fifo ? (uint64_t)priority : (uint64_t)rowid)) {
            return;
        }
        memcpy(out->message_id, m->message_id, sizeof m->message_id);
        out->partition = w->index;
        out->sequence = fifo ? (uint64_t)priority : (uint64_t)rowid;
        part__delta_state(b, job->q, state, m->lane, 1);
        if (state == PART_STATE_READY) {
            part__note_available(b, job->q, m->group_id);
        }
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
    const char *did = (const char *)sqlite3_column_text(st, 12);
    size_t did_len = did ? (size_t)sqlite3_column_bytes(st, 12) : 0;
    char *block = sl_xmalloc(total + gid_len + 1 + did_len + 1);
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
        p += gid_len + 1;
    }
    m->dedup_id = NULL;
    if (did != NULL) {
        memcpy(p, did, did_len + 1);
        m->dedup_id = p;
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
    int lane;
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

static bool group_free(const struct part_writer *w, const struct part_batch *b,
                       const struct part_job *job, const struct part_qcount *qc, const char *group);
static int64_t picked_in_group(const struct candidate *cand, size_t n, const char *group);

/* Takes the rows st yields (ST_SELECT_READY's columns, in order) into cand
 * up to want, stopping at the first past the receive's bound; on an
 * exclusive queue (by_value) it passes over rows of values held here or
 * taken by this pick. */
static bool take_ready(struct part_writer *w, struct part_batch *b, struct part_job *job,
                       sqlite3_stmt *st, int lane, uint32_t want, bool by_value,
                       const struct part_queue_config *cfg, bool dlq, uint64_t now,
                       struct candidate *cand, size_t *ncand)
{
    struct part_recv *r = job->recv;
    struct part_qcount *qc = &job->q->per[w->index];
    int rc = SQLITE_DONE;
    while (*ncand < want && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t prio = sqlite3_column_int64(st, 6);
        if (prio > r->bound || (prio == r->bound && sqlite3_column_int64(st, 8) > r->bound_sent)) {
            break; /* another partition's head comes first (recv_submit) */
        }
        const char *group = by_value ? (const char *)sqlite3_column_text(st, 5) : NULL;
        if (group != NULL &&
            (picked_in_group(cand, *ncand, group) > 0 || !group_free(w, b, job, qc, group))) {
            continue;
        }
        take_row(w, st, job, cfg, dlq, now, &cand[*ncand], &r->msgs[r->nmsgs + *ncand]);
        cand[(*ncand)++].lane = lane;
    }
    sqlite3_reset(st);
    if (rc != SQLITE_DONE && rc != SQLITE_ROW) {
        b->sql_failed = true;
        return false;
    }
    return true;
}

/* The best `want` ready rows of the lane, by (priority, id). */
static bool pick_head(struct part_writer *w, struct part_batch *b, struct part_job *job, int lane,
                      uint32_t want, const struct part_queue_config *cfg, bool dlq, uint64_t now,
                      struct candidate *cand, size_t *ncand)
{
    sqlite3_stmt *st = part__stmt(w, ST_SELECT_READY);
    sqlite3_bind_int64(st, 1, (sqlite3_int64)job->queue_id);
    sqlite3_bind_int(st, 2, (int)want);
    sqlite3_bind_int(st, 3, lane);
    return take_ready(w, b, job, st, lane, want, false, cfg, dlq, now, cand, ncand);
}

/* Reads the chosen ready rows whole, in order, into cand (and r->msgs). */
static bool take_rows(struct part_writer *w, struct part_batch *b, struct part_job *job,
                      const struct part_queue_config *cfg, bool dlq, uint64_t now,
                      const int64_t *chosen, size_t nchosen, struct candidate *cand, size_t *ncand)
{
    struct part_recv *r = job->recv;
    for (size_t i = 0; i < nchosen; i++) {
        sqlite3_stmt *st = part__stmt(w, ST_ROW_FULL);
        sqlite3_bind_int64(st, 1, chosen[i]);
        int rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
            take_row(w, st, job, cfg, dlq, now, &cand[*ncand], &r->msgs[r->nmsgs + *ncand]);
            cand[(*ncand)++].lane = sqlite3_column_int(st, 13);
        }
        sqlite3_reset(st);
        if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
            b->sql_failed = true;
            return false;
        }
    }
    return true;
}

/* Whether a FIFO message group is free for this receive on w's partition:
 * nothing of it in flight there, counting what this transaction leased or
 * released so far, except what this very receive took there in this
 * transaction (one receive may take several consecutive messages of a
 * group, as SQS does). A group this receive took from in an earlier
 * transaction (its other pass) is not free to it: that lease may have
 * ended since (visibility 0, a timer in this batch), and taking the group
 * again would hand out the same messages twice in one reply. */
static bool group_free(const struct part_writer *w, const struct part_batch *b,
                       const struct part_job *job, const struct part_qcount *qc, const char *group)
{
    const struct part_recv *r = job->recv;
    int64_t held = qc->groups != NULL ? part__groups_get(qc->groups, group) : 0;
    held += part__batch_group_delta(b, job->q, group);
    for (size_t i = 0; i < r->nmsgs; i++) {
        if (r->msgs[i].partition == w->index && r->msgs[i].group_id != NULL &&
            strcmp(r->msgs[i].group_id, group) == 0) {
            if (i < r->txn_first) {
                return false;
            }
            held--;
        }
    }
    /* A group on several partitions is leased only by its oldest one
     * (docs/partitions.md, "The group directory"); an exclusive queue has
     * no directory. */
    return held <= 0 &&
           (job->q->gdir == NULL || part__gdir_may_lease(job->q->gdir, group, w->index));
}

/* What a FIFO receive chose so far: rows in order, the groups they are of. */
struct fifo_pick {
    int64_t chosen[PART_MAX_BATCH];
    size_t nchosen;
    char taken[PART_MAX_BATCH][PART_GROUP_ID_MAX + 1];
    size_t ntaken;
    uint64_t steps; /* SQLite VM steps spent choosing (part_engine_stats) */
};

static bool was_taken(const struct fifo_pick *p, const char *group)
{
    for (size_t k = 0; k < p->ntaken; k++) {
        if (strcmp(group, p->taken[k]) == 0) {
            return true;
        }
    }
    return false;
}

/* Steps st once; the rest as sqlite3_step. Counts its VM steps in p. */
static int counted_step(sqlite3_stmt *st, struct fifo_pick *p)
{
    int rc = sqlite3_step(st);
    p->steps += (uint64_t)sqlite3_stmt_status(st, SQLITE_STMTSTATUS_VM_STEP, 1);
    return rc;
}

/* A group's ready rows in order (1 <= max), appended to p->chosen; head
 * gets the first one's (priority, id). */
static bool group_rows(struct part_writer *w, const struct part_job *job, const char *group,
                       size_t max, struct fifo_pick *p, int64_t head[2])
{
    sqlite3_stmt *st = part__stmt(w, ST_GROUP_ROWS);
    sqlite3_bind_int64(st, 1, (sqlite3_int64)job->queue_id);
    sqlite3_bind_text(st, 2, group, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 3, (sqlite3_int64)max);
    size_t first = p->nchosen;
    int rc;
    while ((rc = counted_step(st, p)) == SQLITE_ROW) {
        if (p->nchosen == first) {
            head[0] = sqlite3_column_int64(st, 1);
            head[1] = sqlite3_column_int64(st, 0);
        }
        p->chosen[p->nchosen++] = sqlite3_column_int64(st, 0);
    }
    sqlite3_reset(st);
    return rc == SQLITE_DONE;
}

/* Fills p from the available groups, best head first. An entry is only a
 * hint, checked as it surfaces: a group locked (or not this partition's
 * to lease) or without ready rows is dropped -- what frees or fills it
 * announces it again, and the rebuild finds what was not announced -- and
 * one whose head moved goes back under its real head. */
static bool pick_available(struct part_writer *w, struct part_batch *b, struct part_job *job,
                           struct part_qcount *qc, uint32_t want, struct fifo_pick *p)
{
    struct part_gheap_entry en;
    bool ok = true;
    while (ok && p->nchosen < want && part__gheap_pop(qc->avail, &en)) {
        if (!was_taken(p, en.group) && group_free(w, b, job, qc, en.group)) {
            size_t before = p->nchosen;
            /* an unknown head costs one row to learn */
            size_t max = en.priority == PART_GHEAD_UNKNOWN ? 1 : want - before;
            int64_t head[2] = {0, 0};
            ok = group_rows(w, job, en.group, max, p, head);
            if (ok && p->nchosen > before) {
                if (head[0] != en.priority || head[1] != en.id) {
                    p->nchosen = before;
                    part__gheap_push(qc->avail, head[0], head[1], en.group);
                } else {
                    snprintf(p->taken[p->ntaken++], sizeof p->taken[0], "%s", en.group);
                }
            }
        }
        free(en.group);
    }
    return ok;
}

/* Every free group with ready rows, under its head, into qc->avail: one
 * seek in msg_group per group, so a locked group's backlog is never read.
 * p has room for one more row (it is not full). */
static bool rebuild_available(struct part_writer *w, struct part_batch *b, struct part_job *job,
                              struct part_qcount *qc, struct fifo_pick *p)
{
    char group[PART_GROUP_ID_MAX + 1] = "";
    for (;;) {
        sqlite3_stmt *st = part__stmt(w, ST_GROUP_NEXT);
        sqlite3_bind_int64(st, 1, (sqlite3_int64)job->queue_id);
        sqlite3_bind_text(st, 2, group, -1, SQLITE_TRANSIENT);
        int rc = counted_step(st, p);
        if (rc == SQLITE_ROW) {
            snprintf(group, sizeof group, "%s", (const char *)sqlite3_column_text(st, 0));
        }
        sqlite3_reset(st);
        if (rc != SQLITE_ROW) {
            return rc == SQLITE_DONE;
        }
        if (was_taken(p, group) || !group_free(w, b, job, qc, group)) {
            continue;
        }
        size_t before = p->nchosen;
        int64_t head[2] = {0, 0};
        if (!group_rows(w, job, group, 1, p, head)) {
            return false;
        }
        if (p->nchosen > before) {
            p->nchosen = before;
            part__gheap_push(qc->avail, head[0], head[1], group);
        }
    }
}

/* FIFO: as SQS does, as many messages of one group as there are, then of
 * the next: the free group whose head is best first, its rows in order
 * through msg_group, then the next free group. Filling from few groups
 * leaves the others to other consumers. A group's rows are taken from its
 * head on, so no group's order is broken. Groups come from the available
 * groups' heap; when it runs dry, it is rebuilt -- at most once per change
 * generation of the queue here, since without a change it cannot have
 * missed one (docs/partitions.md, "Selection without scanning locked
 * groups"). Groups are ordered by their head across both lanes: a FIFO
 * queue's order is its sequence. */
static bool pick_fifo(struct part_writer *w, struct part_batch *b, struct part_job *job,
                      uint32_t want, const struct part_queue_config *cfg, bool dlq, uint64_t now,
                      struct candidate *cand, size_t *ncand)
{
    struct part_qcount *qc = &job->q->per[w->index];
    struct fifo_pick p;
    p.nchosen = 0;
    p.ntaken = 0;
    p.steps = 0;
    if (qc->avail == NULL) {
        qc->avail = part__gheap_new();
    }
    /* A hand-over or a rolled-back batch announces nothing (a group the
     * heap dropped as not ours, or popped in the rolled-back transaction,
     * would wait for the heap to run dry, which a busy queue never lets
     * happen): either forces one rebuild before the heap is read. */
    uint64_t unannounced =
        w->rollbacks + atomic_load_explicit(&qc->handovers, memory_order_acquire);
    uint64_t gen = qc->gen + unannounced;
    bool ok = true;
    if (unannounced != qc->walked_unannounced) {
        ok = rebuild_available(w, b, job, qc, &p);
        qc->walked_unannounced = unannounced;
        qc->walked_gen = gen;
    }
    ok = ok && pick_available(w, b, job, qc, want, &p);
    if (ok && p.nchosen < want && gen != qc->walked_gen) {
        ok = rebuild_available(w, b, job, qc, &p) && pick_available(w, b, job, qc, want, &p);
        qc->walked_gen = gen;
    }
    atomic_fetch_add_explicit(&w->stat_fifo_steps, p.steps, memory_order_relaxed);
    if (!ok) {
        b->sql_failed = true;
        return false;
    }
    return take_rows(w, b, job, cfg, dlq, now, p.chosen, p.nchosen, cand, ncand);
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
static bool pick_fair(struct part_writer *w, struct part_batch *b, struct part_job *job, int lane,
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
    sqlite3_stmt *st = part__stmt(w, ST_FAIR_SCAN);
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
    return take_rows(w, b, job, cfg, dlq, now, chosen, nchosen, cand, ncand);
}

/* An exclusive queue (part_queue_config.exclusive): the best ready rows
 * of the lane, in order, at most one per value, none of a value held in
 * flight here (the group counts FIFO's lock uses, with this batch's own
 * leases and releases). Rows of held values are passed over, through
 * msg_ready alone (it carries the group id: no table reads); the walk
 * stops after EXCLUSIVE_WINDOW of them, so a receive costs at most that
 * many index entries beyond what it returns, and values buried deeper
 * behind held ones wait until those are deleted. */
#define EXCLUSIVE_WINDOW 4096

/* An exclusive queue's choice of row id, of value group (NULL: none):
 * false when the value is held here or this pick took it already; else
 * the row joins chosen and its value picked. */
static bool choose_value(struct part_writer *w, struct part_batch *b, struct part_job *job,
                         int64_t id, const char *group, int64_t *chosen, struct candidate *picked,
                         size_t *nchosen)
{
    struct part_qcount *qc = &job->q->per[w->index];
    if (group != NULL &&
        (picked_in_group(picked, *nchosen, group) > 0 || !group_free(w, b, job, qc, group))) {
        return false;
    }
    chosen[*nchosen] = id;
    picked[*nchosen].has_group = group != NULL;
    if (group != NULL) {
        snprintf(picked[*nchosen].group, sizeof picked[*nchosen].group, "%s", group);
    }
    (*nchosen)++;
    return true;
}

static bool pick_exclusive(struct part_writer *w, struct part_batch *b, struct part_job *job,
                           int lane, uint32_t want, const struct part_queue_config *cfg, bool dlq,
                           uint64_t now, struct candidate *cand, size_t *ncand)
{
    struct part_qcount *qc = &job->q->per[w->index];
    int64_t chosen[PART_MAX_BATCH];
    struct candidate picked[PART_MAX_BATCH]; /* values only, for the lock */
    size_t nchosen = 0;
    sqlite3_stmt *st = part__stmt(w, ST_FAIR_SCAN);
    sqlite3_bind_int64(st, 1, (sqlite3_int64)job->queue_id);
    sqlite3_bind_int(st, 2, lane);
    sqlite3_bind_int(st, 3, EXCLUSIVE_WINDOW);
    int rc = SQLITE_DONE;
    int64_t blocked = 0;
    while (nchosen < want && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *group = (const char *)sqlite3_column_text(st, 1);
        if (!choose_value(w, b, job, sqlite3_column_int64(st, 0), group, chosen, picked,
                          &nchosen)) {
            blocked++;
        }
    }
    sqlite3_reset(st);
    if (rc != SQLITE_DONE && rc != SQLITE_ROW) {
        b->sql_failed = true;
        return false;
    }
    /* what an operator sees waiting behind held values (part_counts) */
    atomic_store_explicit(&qc->excl_blocked, blocked, memory_order_relaxed);
    return take_rows(w, b, job, cfg, dlq, now, chosen, nchosen, cand, ncand);
}

/* A filtered receive (part_recv.nfilter): the best ready rows of the
 * lane carrying every pair, walked through msg_filter (part_filter.c) and
 * read whole as pick_head reads them, so that no other row is read. A
 * priority queue's visit stops at the bound as pick_head's does (only
 * when the receive is strict, which a filtered one is not: the heads it
 * would compare are unfiltered); an exclusive queue's passes over held
 * values, and values this pick took, as pick_exclusive does (at most
 * EXCLUSIVE_WINDOW of them). */
static bool pick_filtered(struct part_writer *w, struct part_batch *b, struct part_job *job,
                          int lane, uint32_t want, const struct part_queue_config *cfg, bool dlq,
                          uint64_t now, struct candidate *cand, size_t *ncand)
{
    sqlite3_stmt *st = part__filter_scan(w, job->recv, job->queue_id, lane,
                                         cfg->exclusive ? EXCLUSIVE_WINDOW + want : want);
    return take_ready(w, b, job, st, lane, want, cfg->exclusive, cfg, dlq, now, cand, ncand);
}

/* ---- ReceiveRequestAttemptId ---------------------------------------------- */

/* A row's attempt value (part_schema.c, msg_attempt): the id, the place
 * in the reply, the receive count, big-endian. */
#define ATTEMPT_KEY_MAX (PART_ATTEMPT_MAX + 5)
#define ATTEMPT_PLACE_END 0x20 /* place bytes sort below every id byte */

static size_t attempt_key(const struct part_recv *r, uint8_t place, uint32_t gen,
                          uint8_t key[ATTEMPT_KEY_MAX])
{
    memcpy(key, r->attempt, r->attempt_len);
    uint8_t *p = key + r->attempt_len;
    p[0] = place;
    p[1] = (uint8_t)(gen >> 24);
    p[2] = (uint8_t)(gen >> 16);
    p[3] = (uint8_t)(gen >> 8);
    p[4] = (uint8_t)gen;
    return r->attempt_len + 5;
}

/* One row of the attempt still leased under it. */
struct replayed {
    int64_t id;
    uint64_t visible_at;
};

/* A retry of a FIFO receive (part_receive in part.h): the rows this
 * partition leased under the attempt that are still in flight under that
 * very lease -- the receive count it stamped (a later receive, a release
 * or a redrive would have changed or cleared it; a visibility change
 * clears it), the lease not run out, taken within the interval -- get a
 * new lease of the retry's visibility timeout and are filled in as they
 * were, with their place in the first reply. Their receive count and so
 * their receipt handles stay. */
static void exec_replay(struct part_writer *w, struct part_batch *b, struct part_job *job,
                        const struct part_queue_config *cfg, uint64_t now)
{
    struct part_recv *r = job->recv;
    uint64_t vis_ms =
        (uint64_t)(r->visibility_s < 0 ? cfg->visibility_timeout_s : (uint32_t)r->visibility_s) *
        1000;
    uint8_t lo[PART_ATTEMPT_MAX + 1];
    uint8_t hi[PART_ATTEMPT_MAX + 1];
    memcpy(lo, r->attempt, r->attempt_len);
    memcpy(hi, r->attempt, r->attempt_len);
    lo[r->attempt_len] = 0;
    hi[r->attempt_len] = ATTEMPT_PLACE_END;
    sqlite3_stmt *st = part__stmt(w, ST_ATTEMPT_ROWS);
    sqlite3_bind_int64(st, 1, (sqlite3_int64)job->queue_id);
    sqlite3_bind_blob(st, 2, lo, (int)r->attempt_len + 1, SQLITE_STATIC);
    sqlite3_bind_blob(st, 3, hi, (int)r->attempt_len + 1, SQLITE_STATIC);
    /* The columns after MSG_COLUMNS. */
    enum { COL_ATTEMPT = 13, COL_STATE, COL_VISIBLE_AT, COL_LAST_RECEIVE };
    struct replayed rows[PART_MAX_BATCH];
    size_t nrows = 0;
    int rc = SQLITE_DONE;
    /* Filled while stepping (fill_message copies), updated after the
     * reset: the rows must not change under the cursor. */
    while (r->nmsgs < PART_MAX_BATCH && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        const uint8_t *key = sqlite3_column_blob(st, COL_ATTEMPT);
        size_t len = (size_t)sqlite3_column_bytes(st, COL_ATTEMPT);
        if (key == NULL || len != r->attempt_len + 5) {
            continue; /* not this id's form: cannot be, ids are 0x21..0x7e */
        }
        const uint8_t *tail = key + r->attempt_len;
        uint32_t gen = (uint32_t)tail[1] << 24 | (uint32_t)tail[2] << 16 | (uint32_t)tail[3] << 8 |
                       (uint32_t)tail[4];
        uint64_t visible_at = (uint64_t)sqlite3_column_int64(st, COL_VISIBLE_AT);
        uint64_t leased_at = (uint64_t)sqlite3_column_int64(st, COL_LAST_RECEIVE);
        if (sqlite3_column_int(st, COL_STATE) != PART_STATE_INFLIGHT ||
            (uint32_t)sqlite3_column_int64(st, 7) != gen || visible_at <= now ||
            leased_at + PART_ATTEMPT_INTERVAL_MS <= now || tail[0] >= PART_MAX_BATCH) {
            continue;
        }
        fill_message(w, st, &r->msgs[r->nmsgs], job->queue_id, gen, now);
        r->pos[r->nmsgs] = tail[0];
        r->nmsgs++;
        rows[nrows++] = (struct replayed){sqlite3_column_int64(st, 0), visible_at};
    }
    sqlite3_reset(st);
    if (rc != SQLITE_DONE && rc != SQLITE_ROW) {
        b->sql_failed = true;
        return;
    }
    uint64_t until = now + vis_ms;
    for (size_t i = 0; i < nrows; i++) {
        st = part__stmt(w, ST_EXTEND);
        sqlite3_bind_int64(st, 1, rows[i].id);
        sqlite3_bind_int64(st, 2, (sqlite3_int64)until);
        if (!run(w, b, st)) {
            return;
        }
        part__note_stale(b, rows[i].visible_at, rows[i].id, PART_TIMER_VISIBLE);
        part__heap_push(&w->timers, until, rows[i].id, PART_TIMER_VISIBLE);
    }
    r->replayed = r->replayed || nrows > 0;
}

/* ---- receive ------------------------------------------------------------- */

static void exec_receive(struct part_writer *w, struct part_batch *b, struct part_job *job,
                         uint64_t now)
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
    if (r->replaying) { /* extends leases, takes none: a pause allows it */
        exec_replay(w, b, job, &cfg, now);
        return;
    }
    r->txn_first = r->nmsgs;
    /* Checked here, where leases are taken, not only when the receive
     * began: a long poll parked before the pause must not take the next
     * message sent. Empty, it goes back to waiting (receive_continue). */
    if (atomic_load_explicit(&job->q->dequeue_paused, memory_order_acquire)) {
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
        bool ok = r->nfilter > 0
                      ? pick_filtered(w, b, job, lane, want, &cfg, dlq != NULL, now, cand, &ncand)
                  : cfg.fifo ? pick_fifo(w, b, job, want, &cfg, dlq != NULL, now, cand, &ncand)
                  : cfg.exclusive
                      ? pick_exclusive(w, b, job, lane, want, &cfg, dlq != NULL, now, cand, &ncand)
                  : fair ? pick_fair(w, b, job, lane, want, &cfg, dlq != NULL, now, cand, &ncand)
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
                sqlite3_stmt *mv = part__stmt(w, ST_MOVE_DLQ);
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
                    part__note_stale(b, old.expires_at, cand[i].id, PART_TIMER_EXPIRE);
                }
                part__delta_gone(b, job->q, PART_STATE_READY, cand[i].lane, group);
                part__delta_state(b, dlq, PART_STATE_READY, PART_LANE_MAIN, 1);
                part__gdir_move_in(w, b, dlq, group);
                part__delta_of(b, job->q)->dead_lettered++;
                again = true;
                continue;
            }
            bool stamp = cfg.fifo && r->attempt_len > 0;
            sqlite3_stmt *ls = part__stmt(w, stamp ? ST_LEASE_ATTEMPT : ST_LEASE);
            sqlite3_bind_int64(ls, 1, cand[i].id);
            uint64_t lease_until = now + vis_ms;
            sqlite3_bind_int64(ls, 2, (sqlite3_int64)lease_until);
            sqlite3_bind_int64(ls, 3, (sqlite3_int64)now);
            uint8_t key[ATTEMPT_KEY_MAX];
            if (stamp) {
                size_t n = attempt_key(r, (uint8_t)kept, cand[i].count + 1, key);
                sqlite3_bind_blob(ls, 4, key, (int)n, SQLITE_TRANSIENT);
            }
            if (!run(w, b, ls) ||
                (cfg.filtered && !filter_state(w, b, cand[i].id, PART_STATE_INFLIGHT))) {
                break;
            }
            part__delta_move(b, job->q, PART_STATE_READY, cand[i].lane, PART_STATE_INFLIGHT,
                             cand[i].lane, group);
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

static void exec_by_receipt(struct part_writer *w, struct part_batch *b, struct part_job *job,
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
             * handle must not delete a message another consumer may hold:
             * SQS answers that the receipt handle has expired. */
            if (!present) {
                continue;
            }
            if (!current && cfg.fifo) {
                *status = SL_ENOTFOUND;
                continue;
            }
            sqlite3_stmt *st = part__stmt(w, ST_DELETE);
            sqlite3_bind_int64(st, 1, (sqlite3_int64)en->rh.sequence);
            if (run(w, b, st) && (!r.filtered || filter_delete(w, b, (int64_t)en->rh.sequence))) {
                part__delta_gone(b, job->q, r.state, r.lane, row_group(&r));
                part__note_gone(b, (int64_t)en->rh.sequence);
                if ((cfg.fifo || cfg.exclusive) && r.state == PART_STATE_INFLIGHT) {
                    /* its group (value) may be free now: its next message
                     * is ready for a waiting receive */
                    part__delta_of(b, job->q)->woke++;
                }
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
            sqlite3_stmt *st = part__stmt(w, ST_SET_VISIBLE);
            sqlite3_bind_int64(st, 1, (sqlite3_int64)en->rh.sequence);
            sqlite3_bind_int(st, 2, state);
            sqlite3_bind_int64(st, 3, (sqlite3_int64)at);
            if (!run(w, b, st) ||
                (r.filtered && !filter_state(w, b, (int64_t)en->rh.sequence, state))) {
                return;
            }
            *status = SL_OK;
            if (current) { /* its lease's entry is superseded (an expired one fired) */
                part__note_stale(b, r.visible_at, (int64_t)en->rh.sequence, PART_TIMER_VISIBLE);
            }
            if (state != r.state) {
                part__delta_move(b, job->q, r.state, r.lane, state, r.lane, row_group(&r));
            }
            if (state == PART_STATE_INFLIGHT) {
                part__heap_push(&w->timers, at, (int64_t)en->rh.sequence, PART_TIMER_VISIBLE);
            }
        } else { /* PART_OP_RELEASE: undo a lease nobody will see */
            if (!current) {
                continue;
            }
            sqlite3_stmt *st = part__stmt(w, ST_RELEASE);
            sqlite3_bind_int64(st, 1, (sqlite3_int64)en->rh.sequence);
            sqlite3_bind_int64(st, 2, en->rh.receive_gen);
            sqlite3_bind_int64(st, 3, (sqlite3_int64)now);
            if (run(w, b, st) &&
                (!r.filtered || filter_state(w, b, (int64_t)en->rh.sequence, PART_STATE_READY))) {
                part__delta_move(b, job->q, PART_STATE_INFLIGHT, r.lane, PART_STATE_READY, r.lane,
                                 row_group(&r));
                part__note_stale(b, r.visible_at, (int64_t)en->rh.sequence, PART_TIMER_VISIBLE);
            }
        }
    }
}

static void exec_purge(struct part_writer *w, struct part_batch *b, struct part_job *job)
{
    /* Row by row rather than count(*): the heap forgets each row's timers. */
    sqlite3_stmt *st = part__stmt(w, ST_PURGE_ROWS);
    sqlite3_bind_int64(st, 1, (sqlite3_int64)job->queue_id);
    int rc;
    uint64_t n = 0;
    int64_t by[3][2] = {{0}}; /* [state][lane] */
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int state = sqlite3_column_int(st, 1);
        state =
            state == PART_STATE_READY || state == PART_STATE_INFLIGHT ? state : PART_STATE_DELAYED;
        by[state][sqlite3_column_int(st, 2) == PART_LANE_OVERFLOW]++;
        part__note_gone(b, sqlite3_column_int64(st, 0));
        part__note_gdir_gone(b, job->q, (const char *)sqlite3_column_text(st, 3));
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
                part__delta_state(b, job->q, state, lane ? PART_LANE_OVERFLOW : PART_LANE_MAIN,
                                  -by[state][lane]);
            }
        }
    }
    st = part__stmt(w, ST_PURGE);
    sqlite3_bind_int64(st, 1, (sqlite3_int64)job->queue_id);
    /* Nothing of the queue is in flight here any more: its group counts
     * start over, and changes noted earlier in this batch are moot. */
    part__delta_of(b, job->q)->groups_cleared = true;
    size_t kept = 0;
    for (size_t i = 0; i < b->ng; i++) {
        if (b->g[i].q == job->q) {
            free(b->g[i].group);
        } else {
            b->g[kept++] = b->g[i];
        }
    }
    b->ng = kept;
    if (!run(w, b, st)) {
        return;
    }
    /* the rows' filter entries (one empty range of msg_filter_walk for a
     * queue that never had any) */
    st = part__stmt(w, ST_FILTER_PURGE);
    sqlite3_bind_int64(st, 1, (sqlite3_int64)job->queue_id);
    if (!run(w, b, st)) {
        return;
    }
    /* SQS: a purge also forgets the queue's deduplication ids. */
    st = part__stmt(w, ST_DEDUP_PURGE);
    sqlite3_bind_int64(st, 1, (sqlite3_int64)job->queue_id);
    if (run(w, b, st)) {
        /* a queue that kept no ids needs no walk of the table */
        if (sqlite3_changes(w->db) > 0) {
            part__dedup_forget_queue(w->dedup, job->queue_id); /* logged, as an add is */
        }
        atomic_fetch_add(&(job->parent ? job->parent : job)->purged, n);
        job->status = SL_OK;
    }
}

/* A destination of a move, resolved once per job. */
struct move_dest {
    uint64_t id;
    struct part_queue *q; /* referenced; NULL = unusable */
    uint32_t retention_s;
    bool fifo;
    bool priority_order;
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
        d->fifo = cfg.fifo;
        d->priority_order = cfg.priority_order;
    } else {
        part__queue_unref(q);
    }
    return d;
}

/* READY (queue A) -> READY (queue B), the same row: see part_move in
 * part.h for what a moved message keeps and what it gets anew. */
static void exec_move(struct part_writer *w, struct part_batch *b, struct part_job *job,
                      uint64_t now)
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
        bool has_group;
        char group[PART_GROUP_ID_MAX + 1];
        int64_t priority;
        int64_t sent_at;
    } *rows = sl_xcalloc(job->move_max, sizeof *rows);
    size_t nrows = 0;
    sqlite3_stmt *st = part__stmt(w, ST_MOVE_SCAN);
    sqlite3_bind_int64(st, 1, (sqlite3_int64)job->queue_id);
    sqlite3_bind_int64(st, 2, (sqlite3_int64)job->move_after);
    sqlite3_bind_int64(st, 3, job->move_max);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW && nrows < job->move_max) {
        rows[nrows].id = sqlite3_column_int64(st, 0);
        rows[nrows].source = (uint64_t)sqlite3_column_int64(st, 1);
        rows[nrows].lane = sqlite3_column_int(st, 2);
        rows[nrows].expires_at = (uint64_t)sqlite3_column_int64(st, 3);
        const char *group = (const char *)sqlite3_column_text(st, 4);
        rows[nrows].has_group = group != NULL;
        if (group != NULL) {
            snprintf(rows[nrows].group, sizeof rows[nrows].group, "%s", group);
        }
        rows[nrows].priority = sqlite3_column_int64(st, 5);
        rows[nrows].sent_at = sqlite3_column_int64(st, 6);
        nrows++;
    }
    sqlite3_reset(st);
    if (rc != SQLITE_DONE && rc != SQLITE_ROW) {
        b->sql_failed = true;
        free(rows);
        return;
    }
    if (job->only_row != 0 && nrows == 1 && (uint64_t)rows[0].id != job->only_row) {
        nrows = 0; /* that row is gone or not ready: the next one is not asked for */
    }
    struct move_dest cache[MOVE_DEST_CACHE];
    size_t ncache = 0;
    struct move_dest fixed = {0};
    if (job->dest_q != NULL) {
        fixed = (struct move_dest){job->dest_q->id, job->dest_q, cfg.retention_s, cfg.fifo,
                                   cfg.priority_order};
    }
    job->res.move_cursor = job->move_after;
    for (size_t i = 0; i < nrows && !b->sql_failed; i++) {
        const struct move_dest *d =
            job->dest_q != NULL ? &fixed : move_dest_of(e, job->q, rows[i].source, cache, &ncache);
        if (d->q != NULL && job->move_held != NULL && job->move_held(job->move_held_arg, d->id)) {
            /* It stays, and the cursor stays before it; the rows after it
             * that go elsewhere still move (they leave the queue, so the
             * next scan from the cursor does not see them again). */
            job->res.move_held = true;
            continue;
        }
        if (!job->res.move_held) {
            job->res.move_cursor = (uint64_t)rows[i].id;
        }
        if (d->q == NULL) {
            job->res.move_skipped++;
            continue;
        }
        char mid[PART_MSG_ID_LEN + 1];
        sl_uuid4(mid);
        uint64_t expires = now + (uint64_t)d->retention_s * 1000;
        st = part__stmt(w, ST_MOVE_ROW);
        sqlite3_bind_int64(st, 1, rows[i].id);
        sqlite3_bind_int64(st, 2, (sqlite3_int64)d->id);
        sqlite3_bind_int64(st, 3, (sqlite3_int64)now);
        sqlite3_bind_int64(st, 4, (sqlite3_int64)expires);
        sqlite3_bind_text(st, 5, mid, -1, SQLITE_STATIC);
        /* A FIFO destination sequences the message anew: rows are moved
         * oldest first, so each group keeps its order there. A priority
         * queue keeps the priority its producer gave (a row whose
         * priority is its send time was given none: it becomes the new
         * send time, as on any standard queue). */
        int64_t priority = d->fifo ? (int64_t)part__seq_next(e, now)
                           : d->priority_order && rows[i].priority != rows[i].sent_at
                               ? rows[i].priority
                               : (int64_t)now;
        sqlite3_bind_int64(st, 6, (sqlite3_int64)priority);
        if (!run(w, b, st)) {
            break;
        }
        const char *group = rows[i].has_group ? rows[i].group : NULL;
        part__delta_gone(b, job->q, PART_STATE_READY, rows[i].lane, group);
        part__delta_state(b, d->q, PART_STATE_READY, PART_LANE_MAIN, 1);
        /* In place, the row may join its group on a second partition of
         * the destination: the directory makes that safe (only the oldest
         * partition leases the group). */
        part__gdir_move_in(w, b, d->q, group);
        part__heap_push(&w->timers, expires, rows[i].id, PART_TIMER_EXPIRE);
        part__note_stale(b, rows[i].expires_at, rows[i].id, PART_TIMER_EXPIRE);
        job->res.moved++;
    }
    for (size_t i = 0; i < ncache; i++) {
        part__queue_unref(cache[i].q);
    }
    job->res.move_exhausted = nrows < job->move_max && !job->res.move_held;
    free(rows);
    job->status = SL_OK;
}

/* READY -> gone, for one row an operator picked from a peek. A message in
 * flight or delayed stays: a consumer may hold it, or it is not due. */
static void exec_remove(struct part_writer *w, struct part_batch *b, struct part_job *job)
{
    struct row r;
    int found = row_get(w, b, (int64_t)job->only_row, &r);
    if (found < 0) {
        return;
    }
    if (found == 0 || r.queue_id != job->queue_id || r.state != PART_STATE_READY) {
        job->status = SL_ENOTFOUND;
        return;
    }
    sqlite3_stmt *st = part__stmt(w, ST_DELETE);
    sqlite3_bind_int64(st, 1, (sqlite3_int64)job->only_row);
    if (run(w, b, st) && (!r.filtered || filter_delete(w, b, (int64_t)job->only_row))) {
        part__delta_gone(b, job->q, r.state, r.lane, row_group(&r));
        part__note_gone(b, (int64_t)job->only_row);
        job->status = SL_OK;
    }
}

void part__ops_exec(struct part_writer *w, struct part_batch *b, struct part_job *job, uint64_t now)
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
    case PART_OP_REMOVE:
        exec_remove(w, b, job);
        break;
    case PART_OP_BARRIER:
        job->status = SL_OK;
        break;
    default:
        SL_ASSERT(!"catalog op on a partition writer");
    }
}
