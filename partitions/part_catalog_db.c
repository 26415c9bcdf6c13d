/*
 * part_catalog_db.c -- catalog.db, the durable queue catalog, and the
 * catalog thread that alone writes it.
 *
 * Stack: below the client layer (which queues catalog jobs on e->catw and
 * frees their requests) and the engine (open, close, start, stop); calls
 * part_catalog.c (the maps it loads and changes) and part_schema.c
 * (part__sql_exec). Finished jobs, and the purges a queue delete fans out,
 * go up through e->hooks, never to the client layer by name.
 *
 * The catalog lives in data_dir/catalog.db, written only by its own writer
 * thread (struct part_engine.catw), one transaction per operation. Why a
 * file of its own: queues are shared by all partitions of a tenant, so
 * putting them in one partition would make that partition's load and
 * health every tenant's problem; a separate file also keeps growing P a
 * matter of adding empty files. Queue operations are rare next to message
 * traffic, so group commit is not needed here.
 *
 * Queue ids come from an AUTOINCREMENT key and are never reused: a queue
 * deleted and created again under the same name is a different queue, and
 * messages or receipt handles of the old one can never reach the new one.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sqlite3.h>

#include "part_catalog.h"
#include "part_catalog_db.h"
#include "part_repl.h"
#include "part_schema.h"
#include "part_writer.h"

#define LOG_MOD "partitions"

static const char CATALOG_SCHEMA[] =
    "CREATE TABLE IF NOT EXISTS queues("
    " id INTEGER PRIMARY KEY AUTOINCREMENT, tenant TEXT NOT NULL, name TEXT NOT NULL,"
    " created_ms INTEGER NOT NULL, modified_ms INTEGER NOT NULL,"
    " visibility_s INTEGER NOT NULL, delay_s INTEGER NOT NULL, retention_s INTEGER NOT NULL,"
    " fifo INTEGER NOT NULL, dlq_id INTEGER NOT NULL, max_receive INTEGER NOT NULL,"
    " max_message_size INTEGER NOT NULL, receive_wait_s INTEGER NOT NULL,"
    " UNIQUE(tenant, name));"
    "CREATE TABLE IF NOT EXISTS queue_attrs(queue_id INTEGER NOT NULL, key TEXT NOT NULL,"
    " value TEXT NOT NULL, PRIMARY KEY(queue_id, key)) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS queue_tags(queue_id INTEGER NOT NULL, key TEXT NOT NULL,"
    " value TEXT NOT NULL, PRIMARY KEY(queue_id, key)) WITHOUT ROWID;";

/* The column fifo holds the queue type and the FIFO settings the engine
 * and the gateway's hot path read, as bits: a catalog written before they
 * existed stores 0 or 1, which reads the same. */
enum {
    FIFO_BIT = 1,
    FIFO_CONTENT_DEDUP = 2,
    FIFO_DEDUP_PER_GROUP = 4,
    FIFO_THROUGHPUT_PER_GROUP = 8,
    /* sluice's own settings share the column (no schema change): a
     * catalog written before them holds none of these bits */
    PRIORITY_ORDER = 16,
    EXCLUSIVE = 32,
    FILTERED = 64,
    IDEMPOTENCY_WINDOW_SHIFT = 8, /* bits 8..19: the window in seconds */
    /* bits 20..21: a cluster's pause flags (PART_PAUSE_*), which no
     * change of the settings touches */
    PAUSE_SHIFT = 20,
    PAUSE_BITS = 3 << PAUSE_SHIFT,
};

static int fifo_bits(const struct part_queue_config *cfg)
{
    int own = (cfg->priority_order ? PRIORITY_ORDER : 0) | (cfg->exclusive ? EXCLUSIVE : 0) |
              (cfg->filtered ? FILTERED : 0) |
              (int)(SL_MIN(cfg->idempotency_window_s, PART_IDEMPOTENCY_WINDOW_MAX_S)
                    << IDEMPOTENCY_WINDOW_SHIFT);
    if (!cfg->fifo) {
        return own;
    }
    return own | FIFO_BIT | (cfg->content_based_dedup ? FIFO_CONTENT_DEDUP : 0) |
           (cfg->dedup_per_group ? FIFO_DEDUP_PER_GROUP : 0) |
           (cfg->throughput_per_group ? FIFO_THROUGHPUT_PER_GROUP : 0);
}

static void row_cfg(sqlite3_stmt *st, int col, struct part_queue_config *cfg)
{
    cfg->visibility_timeout_s = (uint32_t)sqlite3_column_int64(st, col);
    cfg->delay_s = (uint32_t)sqlite3_column_int64(st, col + 1);
    cfg->retention_s = (uint32_t)sqlite3_column_int64(st, col + 2);
    int fifo = sqlite3_column_int(st, col + 3);
    cfg->fifo = (fifo & FIFO_BIT) != 0;
    cfg->content_based_dedup = (fifo & FIFO_CONTENT_DEDUP) != 0;
    cfg->dedup_per_group = (fifo & FIFO_DEDUP_PER_GROUP) != 0;
    cfg->throughput_per_group = (fifo & FIFO_THROUGHPUT_PER_GROUP) != 0;
    cfg->priority_order = (fifo & PRIORITY_ORDER) != 0;
    cfg->exclusive = (fifo & EXCLUSIVE) != 0;
    cfg->filtered = (fifo & FILTERED) != 0;
    cfg->idempotency_window_s = (uint32_t)(fifo >> IDEMPOTENCY_WINDOW_SHIFT) & 0xfffu;
    cfg->dlq_target_id = (uint64_t)sqlite3_column_int64(st, col + 4);
    cfg->max_receive_count = (uint32_t)sqlite3_column_int64(st, col + 5);
    cfg->max_message_size = (uint32_t)sqlite3_column_int64(st, col + 6);
    cfg->receive_wait_s = (uint32_t)sqlite3_column_int64(st, col + 7);
}

/* ---- loading the catalog ----------------------------------------------- */

/* The queues of a catalog image, as new queue objects (not in any map),
 * sorted by id. */
struct loaded {
    struct part_queue **v;
    size_t n;
};

static void loaded_free(struct loaded *l)
{
    for (size_t i = 0; i < l->n; i++) {
        if (l->v[i] != NULL) {
            part__queue_unref(l->v[i]);
        }
    }
    free(l->v);
    *l = (struct loaded){0};
}

static struct part_queue *loaded_find(const struct loaded *l, uint64_t id)
{
    size_t lo = 0, hi = l->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (l->v[mid]->id < id) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo < l->n && l->v[lo]->id == id ? l->v[lo] : NULL;
}

static int load_kvs(sqlite3 *db, struct loaded *l, const char *table)
{
    char sql[128];
    snprintf(sql, sizeof sql, "SELECT queue_id, key, value FROM %s ORDER BY queue_id, key", table);
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        return SL_EIO;
    }
    bool tags = strcmp(table, "queue_tags") == 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct part_queue *q = loaded_find(l, (uint64_t)sqlite3_column_int64(st, 0));
        if (q == NULL) {
            continue;
        }
        struct part_kv kv = {(const char *)sqlite3_column_text(st, 1),
                             (const char *)sqlite3_column_text(st, 2)};
        part__kv_apply(tags ? &q->tags : &q->attrs, tags ? &q->tag_count : &q->attr_count, &kv, 1);
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? SL_OK : SL_EIO;
}

/* Reads every queue of the catalog in db. SL_OK or SL_EIO (db's error
 * says why; *out is empty). */
static int load_catalog(sqlite3 *db, struct part_engine *e, struct loaded *out)
{
    struct loaded l = {0};
    size_t cap = 0;
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db,
                           "SELECT id, tenant, name, created_ms, modified_ms, visibility_s,"
                           " delay_s, retention_s, fifo, dlq_id, max_receive, max_message_size,"
                           " receive_wait_s FROM queues ORDER BY id",
                           -1, &st, NULL) != SQLITE_OK) {
        return SL_EIO;
    }
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct part_queue_config cfg;
        row_cfg(st, 5, &cfg);
        struct part_queue *q = part__queue_new(
            e, (uint64_t)sqlite3_column_int64(st, 0), (const char *)sqlite3_column_text(st, 1),
            (const char *)sqlite3_column_text(st, 2), cfg.fifo, cfg.exclusive);
        q->created_ms = (uint64_t)sqlite3_column_int64(st, 3);
        q->modified_ms = (uint64_t)sqlite3_column_int64(st, 4);
        q->cfg = cfg;
        unsigned pause = (unsigned)(sqlite3_column_int(st, 8) & PAUSE_BITS) >> PAUSE_SHIFT;
        atomic_store(&q->pause, pause);
        atomic_store(&q->dequeue_paused, (pause & PART_PAUSE_DEQUEUE) != 0);
        if (l.n == cap) {
            cap = cap ? 2 * cap : 64;
            l.v = sl_xrealloc(l.v, cap * sizeof *l.v);
        }
        l.v[l.n++] = q;
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE || load_kvs(db, &l, "queue_attrs") != SL_OK ||
        load_kvs(db, &l, "queue_tags") != SL_OK) {
        loaded_free(&l);
        return SL_EIO;
    }
    *out = l;
    return SL_OK;
}

int part__catalog_db_open(struct part_engine *e, char *err, size_t errlen)
{
    struct part_catalog *c = &e->catalog;
    part__catalog_init(e);
    struct part_writer *w = &e->catw;
    w->index = UINT32_MAX;
    part__thread_init(w, e);
    if (e->repl != NULL) {
        /* Loaded from the replicated image once it has one (catalog_sync). */
        snprintf(w->path, sizeof w->path, "group catalog");
        return SL_OK;
    }
    snprintf(w->path, sizeof w->path, "%s/catalog.db", e->data_dir);

    const char *path = w->path;
    if (sqlite3_open_v2(path, &c->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) !=
        SQLITE_OK) {
        snprintf(err, errlen, "%s: %s", path, c->db ? sqlite3_errmsg(c->db) : "cannot open");
        return SL_EIO;
    }
    const char *sync = e->opt.durability == PART_DURABILITY_FSYNC ? "FULL" : "NORMAL";
    char pragmas[256];
    snprintf(pragmas, sizeof pragmas,
             "PRAGMA journal_mode=WAL; PRAGMA synchronous=%s; PRAGMA foreign_keys=OFF;", sync);
    if (part__sql_exec(c->db, pragmas) != SL_OK || part__sql_exec(c->db, CATALOG_SCHEMA) != SL_OK) {
        snprintf(err, errlen, "%s: unusable catalog: %s", path, sqlite3_errmsg(c->db));
        return SL_EIO;
    }
    struct loaded l;
    if (load_catalog(c->db, e, &l) != SL_OK) {
        snprintf(err, errlen, "%s: %s", path, sqlite3_errmsg(c->db));
        return SL_EIO;
    }
    for (size_t i = 0; i < l.n; i++) {
        struct part_queue *q = l.v[i];
        q->tenant = part__tenant_get(c, q->tenant_name);
        part__catalog_insert(c, q);
        l.v[i] = NULL;
    }
    loaded_free(&l);
    sl_log(SL_LOG_INFO, LOG_MOD, "catalog: %zu queues", c->count);
    return SL_OK;
}

void part__catalog_db_close(struct part_engine *e)
{
    struct part_catalog *c = &e->catalog;
    if (c->db != NULL) {
        sqlite3_close(c->db);
        c->db = NULL;
    }
    part__catalog_free(e);
}

/* ---- catalog jobs (catalog writer thread) ------------------------------- */

void part__catalog_req_free(struct part_catalog_req *r)
{
    if (r == NULL) {
        return;
    }
    free(r->tenant);
    free(r->name);
    part__kv_free(r->kvs, r->nkv);
    part__kv_free(r->tags, r->ntags);
    for (size_t i = 0; i < r->nkeys; i++) {
        free(r->keys[i]);
    }
    free(r->keys);
    free(r);
}

static int step_done(sqlite3_stmt *st)
{
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? SL_OK : SL_EIO;
}

static int kv_write(sqlite3 *db, const char *table, uint64_t qid, const struct part_kv *kv,
                    size_t n)
{
    char ins[128], del[128];
    snprintf(ins, sizeof ins, "INSERT OR REPLACE INTO %s(queue_id, key, value) VALUES(?,?,?)",
             table);
    snprintf(del, sizeof del, "DELETE FROM %s WHERE queue_id=? AND key=?", table);
    for (size_t i = 0; i < n; i++) {
        sqlite3_stmt *st = NULL;
        if (sqlite3_prepare_v2(db, kv[i].value ? ins : del, -1, &st, NULL) != SQLITE_OK) {
            return SL_EIO;
        }
        sqlite3_bind_int64(st, 1, (sqlite3_int64)qid);
        sqlite3_bind_text(st, 2, kv[i].key, -1, SQLITE_STATIC);
        if (kv[i].value) {
            sqlite3_bind_text(st, 3, kv[i].value, -1, SQLITE_STATIC);
        }
        if (step_done(st) != SL_OK) {
            return SL_EIO;
        }
    }
    return SL_OK;
}

static int exec_create(struct part_engine *e, struct part_job *job, struct part_queue **created)
{
    struct part_catalog *c = &e->catalog;
    struct part_catalog_req *r = job->cat;
    pthread_rwlock_rdlock(&c->lock);
    struct part_queue *old = part__queue_by_name(c, r->tenant, r->name);
    if (old != NULL) {
        job->res.queue = part__queue_info(old);
    }
    pthread_rwlock_unlock(&c->lock);
    if (old != NULL) {
        return SL_EEXIST;
    }
    uint64_t now = part__now(e);
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(c->db,
                           "INSERT INTO queues(tenant, name, created_ms, modified_ms,"
                           " visibility_s, delay_s, retention_s, fifo, dlq_id, max_receive,"
                           " max_message_size, receive_wait_s)"
                           " VALUES(?,?,?,?,?,?,?,?,?,?,?,?)",
                           -1, &st, NULL) != SQLITE_OK) {
        return SL_EIO;
    }
    sqlite3_bind_text(st, 1, r->tenant, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, r->name, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 3, (sqlite3_int64)now);
    sqlite3_bind_int64(st, 4, (sqlite3_int64)now);
    sqlite3_bind_int64(st, 5, r->cfg.visibility_timeout_s);
    sqlite3_bind_int64(st, 6, r->cfg.delay_s);
    sqlite3_bind_int64(st, 7, r->cfg.retention_s);
    sqlite3_bind_int(st, 8, fifo_bits(&r->cfg));
    sqlite3_bind_int64(st, 9, (sqlite3_int64)r->cfg.dlq_target_id);
    sqlite3_bind_int64(st, 10, r->cfg.max_receive_count);
    sqlite3_bind_int64(st, 11, r->cfg.max_message_size);
    sqlite3_bind_int64(st, 12, r->cfg.receive_wait_s);
    if (step_done(st) != SL_OK) {
        return SL_EIO;
    }
    uint64_t id = (uint64_t)sqlite3_last_insert_rowid(c->db);
    if (kv_write(c->db, "queue_attrs", id, r->kvs, r->nkv) != SL_OK ||
        kv_write(c->db, "queue_tags", id, r->tags, r->ntags) != SL_OK) {
        return SL_EIO;
    }
    struct part_queue *q =
        part__queue_new(e, id, r->tenant, r->name, r->cfg.fifo, r->cfg.exclusive);
    q->created_ms = q->modified_ms = now;
    q->cfg = r->cfg;
    part__kv_apply(&q->attrs, &q->attr_count, r->kvs, r->nkv);
    part__kv_apply(&q->tags, &q->tag_count, r->tags, r->ntags);
    *created = q;
    return SL_OK;
}

static int touch(struct part_engine *e, uint64_t id, const struct part_queue_config *cfg,
                 uint64_t now)
{
    sqlite3_stmt *st = NULL;
    const char *sql = cfg ? "UPDATE queues SET modified_ms=?, visibility_s=?, delay_s=?,"
                            " retention_s=?, fifo=(? | (fifo & 3145728)), dlq_id=?, max_receive=?,"
                            " max_message_size=?,"
                            " receive_wait_s=? WHERE id=?"
                          : "UPDATE queues SET modified_ms=? WHERE id=?";
    if (sqlite3_prepare_v2(e->catalog.db, sql, -1, &st, NULL) != SQLITE_OK) {
        return SL_EIO;
    }
    sqlite3_bind_int64(st, 1, (sqlite3_int64)now);
    if (cfg) {
        sqlite3_bind_int64(st, 2, cfg->visibility_timeout_s);
        sqlite3_bind_int64(st, 3, cfg->delay_s);
        sqlite3_bind_int64(st, 4, cfg->retention_s);
        sqlite3_bind_int(st, 5, fifo_bits(cfg));
        sqlite3_bind_int64(st, 6, (sqlite3_int64)cfg->dlq_target_id);
        sqlite3_bind_int64(st, 7, cfg->max_receive_count);
        sqlite3_bind_int64(st, 8, cfg->max_message_size);
        sqlite3_bind_int64(st, 9, cfg->receive_wait_s);
        sqlite3_bind_int64(st, 10, (sqlite3_int64)id);
    } else {
        sqlite3_bind_int64(st, 2, (sqlite3_int64)id);
    }
    return step_done(st);
}

static int exec_pause(struct part_engine *e, uint64_t id, unsigned flags, uint64_t now)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(e->catalog.db,
                           "UPDATE queues SET modified_ms=?, fifo=(fifo & ~3145728) | ? WHERE id=?",
                           -1, &st, NULL) != SQLITE_OK) {
        return SL_EIO;
    }
    sqlite3_bind_int64(st, 1, (sqlite3_int64)now);
    sqlite3_bind_int(st, 2, (int)(flags << PAUSE_SHIFT));
    sqlite3_bind_int64(st, 3, (sqlite3_int64)id);
    return step_done(st);
}

/* A queue's pause flags changed in the catalog: its receives here follow
 * (part_queue_set_dequeue_paused wakes what a resume lets through). Not
 * under the catalog's lock. */
static void pause_changed(struct part_engine *e, uint64_t id, unsigned flags)
{
    (void)part_queue_set_dequeue_paused(e, id, (flags & PART_PAUSE_DEQUEUE) != 0);
}

static int exec_delete(struct part_engine *e, uint64_t id)
{
    static const char *const sqls[] = {"DELETE FROM queues WHERE id=?",
                                       "DELETE FROM queue_attrs WHERE queue_id=?",
                                       "DELETE FROM queue_tags WHERE queue_id=?"};
    for (size_t i = 0; i < SL_ARRAY_LEN(sqls); i++) {
        sqlite3_stmt *st = NULL;
        if (sqlite3_prepare_v2(e->catalog.db, sqls[i], -1, &st, NULL) != SQLITE_OK) {
            return SL_EIO;
        }
        sqlite3_bind_int64(st, 1, (sqlite3_int64)id);
        if (step_done(st) != SL_OK) {
            return SL_EIO;
        }
    }
    return SL_OK;
}

/* Runs one catalog job (own transaction). */
static void catalog_exec(struct part_engine *e, struct part_job *job)
{
    struct part_catalog *c = &e->catalog;
    struct part_catalog_req *r = job->cat;
    struct part_queue *created = NULL;
    uint64_t now = part__now(e);
    if (job->op != PART_OP_Q_CREATE && !part__queue_known(e, job->queue_id)) {
        job->status = SL_ENOTFOUND;
        e->hooks.complete(job);
        return;
    }
    if (e->catw.group != NULL && part__repl_write_begin(e->catw.group) != SL_OK) {
        job->status = SL_EUNAVAIL; /* the lead moved on */
        e->hooks.complete(job);
        return;
    }
    if (part__sql_exec(c->db, "BEGIN IMMEDIATE") != SL_OK) {
        if (e->catw.group != NULL) {
            part__repl_write_end(e->catw.group, (struct sl_slice){0}, false);
        }
        job->status = SL_EIO;
        e->hooks.complete(job);
        return;
    }
    int rc = SL_OK;
    switch (job->op) {
    case PART_OP_Q_CREATE:
        rc = exec_create(e, job, &created);
        break;
    case PART_OP_Q_SET_ATTRS:
        rc = touch(e, job->queue_id, &r->cfg, now);
        if (rc == SL_OK) {
            rc = kv_write(c->db, "queue_attrs", job->queue_id, r->kvs, r->nkv);
        }
        break;
    case PART_OP_Q_TAG:
    case PART_OP_Q_UNTAG:
        rc = touch(e, job->queue_id, NULL, now);
        if (rc == SL_OK) {
            rc = kv_write(c->db, "queue_tags", job->queue_id, r->kvs, r->nkv);
        }
        break;
    case PART_OP_Q_DELETE:
        rc = exec_delete(e, job->queue_id);
        break;
    case PART_OP_Q_PAUSE:
        rc = exec_pause(e, job->queue_id, r->pause, now);
        break;
    default:
        SL_ASSERT(!"not a catalog op");
    }
    bool ok = rc == SL_OK && part__sql_exec(c->db, "COMMIT") == SL_OK;
    if (!ok) {
        part__sql_exec(c->db, "ROLLBACK");
        rc = rc == SL_EEXIST ? SL_EEXIST : SL_EIO;
    }
    if (e->catw.group != NULL) {
        /* Answered once a majority holds it; a lead lost first leaves it
         * to the next leader, and the client's retry finds out. */
        int end = part__repl_write_end(e->catw.group, (struct sl_slice){0}, false);
        if (ok && end != SL_OK) {
            ok = false;
            rc = end == SL_ECLOSED ? SL_ECLOSED : SL_EUNAVAIL;
        }
        if (ok) {
            /* Followers learn the commit with the barrier's append, not at
             * the next heartbeat: a queue made through one node is known
             * on the others by the time its maker hears of it. Committed
             * already, so a failure here changes no answer. */
            (void)part__repl_sync(e->catw.group);
        }
    }
    if (!ok) {
        if (created != NULL) {
            part__queue_unref(created);
        }
        job->status = rc;
        e->hooks.complete(job);
        return;
    }

    /* Committed: make it visible in memory. */
    struct part_queue *q = NULL;
    pthread_rwlock_wrlock(&c->lock);
    if (created != NULL) {
        created->tenant = part__tenant_get(c, created->tenant_name);
        part__catalog_insert(c, created);
        q = created;
    } else {
        q = part__queue_by_id(c, job->queue_id);
        SL_ASSERT(q != NULL); /* only this thread removes queues */
        q->modified_ms = now;
        if (job->op == PART_OP_Q_SET_ATTRS) {
            q->cfg = r->cfg;
            part__kv_apply(&q->attrs, &q->attr_count, r->kvs, r->nkv);
        } else if (job->op == PART_OP_Q_TAG || job->op == PART_OP_Q_UNTAG) {
            part__kv_apply(&q->tags, &q->tag_count, r->kvs, r->nkv);
        } else if (job->op == PART_OP_Q_DELETE) {
            part__catalog_remove(c, q);
            q->deleted = true;
        } else if (job->op == PART_OP_Q_PAUSE) {
            atomic_store(&q->pause, r->pause);
        }
    }
    job->res.queue = part__queue_info(q);
    pthread_rwlock_unlock(&c->lock);
    if (job->op == PART_OP_Q_PAUSE) {
        pause_changed(e, job->queue_id, r->pause);
    }

    if (job->op != PART_OP_Q_DELETE) {
        job->status = SL_OK;
        e->hooks.complete(job);
        return;
    }
    /* The name is free now; remove the messages from every partition. The
     * job completes when the last purge does (restart does the same for a
     * purge that a crash interrupted, see part_writer.c). */
    e->hooks.flush_waiters(q, SL_ENOTFOUND);
    part__purge_fan_out(e, job, q);
    part__queue_unref(q); /* the map's reference */
}

void part__purge_fan_out(struct part_engine *e, struct part_job *parent, struct part_queue *q)
{
    parent->status = SL_OK;
    atomic_store(&parent->pending, (int)e->nparts);
    for (uint32_t p = 0; p < e->nparts; p++) {
        struct part_job *sub = sl_xcalloc(1, sizeof *sub);
        sub->op = PART_OP_PURGE;
        sub->engine = e;
        sub->parent = parent;
        sub->queue_id = parent->queue_id;
        sub->q = q;
        atomic_fetch_add(&q->refs, 1);
        sub->partition = p;
        e->hooks.submit(e, p, sub);
    }
}

/* ---- a cluster's catalog --------------------------------------------------- */

static void drop_queue(struct part_engine *e, struct part_queue *q)
{
    e->hooks.flush_waiters(q, SL_ENOTFOUND);
    part__queue_unref(q); /* the map's reference */
}

struct ids {
    uint64_t *v;
    size_t n, cap;
};

static void collect_id(struct part_queue *q, void *arg)
{
    struct ids *ids = arg;
    if (ids->n == ids->cap) {
        ids->cap = ids->cap ? 2 * ids->cap : 64;
        ids->v = sl_xrealloc(ids->v, ids->cap * sizeof *ids->v);
    }
    ids->v[ids->n++] = q->id;
}

static bool id_in(const uint64_t *v, size_t n, uint64_t id)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v[mid] < id) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo < n && v[lo] == id;
}

/* Brings the in-memory catalog to what the image holds: queues made,
 * changed or deleted under another node's lead appear here too. A queue
 * keeps its object (its counters, waiters and references) across
 * changes. Catalog thread, under the group's lock (part__repl_read).
 * SL_OK, SL_EUNAVAIL (no leader has made the schema yet) or SL_EIO. */
static int sync_from(sqlite3 *db, void *arg)
{
    struct part_engine *e = arg;
    struct part_catalog *c = &e->catalog;
    if (part__sql_int(db, "SELECT count(*) FROM sqlite_schema WHERE name='queues'", 0) == 0) {
        return SL_EUNAVAIL;
    }
    struct loaded l;
    if (load_catalog(db, e, &l) != SL_OK) {
        return SL_EIO;
    }
    uint64_t *image = sl_xcalloc(l.n + 1, sizeof *image); /* sorted, as l is */
    for (size_t i = 0; i < l.n; i++) {
        image[i] = l.v[i]->id;
    }
    struct ids mem = {0};
    part__queue_foreach(e, collect_id, &mem);
    struct part_queue **gone = sl_xcalloc(mem.n + 1, sizeof *gone);
    size_t ngone = 0, added = 0;
    struct {
        uint64_t id;
        unsigned flags;
    } *paused = sl_xcalloc(l.n + 1, sizeof *paused);
    size_t npaused = 0;
    pthread_rwlock_wrlock(&c->lock);
    for (size_t i = 0; i < l.n; i++) {
        struct part_queue *fresh = l.v[i];
        struct part_queue *q = part__queue_by_id(c, fresh->id);
        if (q == NULL) {
            fresh->tenant = part__tenant_get(c, fresh->tenant_name);
            part__catalog_insert(c, fresh);
            l.v[i] = NULL; /* the map's now */
            added++;
            continue;
        }
        q->modified_ms = fresh->modified_ms;
        q->cfg = fresh->cfg;
        unsigned pause = atomic_load(&fresh->pause);
        if (atomic_exchange(&q->pause, pause) != pause) {
            paused[npaused].id = q->id;
            paused[npaused++].flags = pause;
        }
        struct part_kv *kv = q->attrs;
        size_t n = q->attr_count;
        q->attrs = fresh->attrs;
        q->attr_count = fresh->attr_count;
        fresh->attrs = kv; /* freed with fresh */
        fresh->attr_count = n;
        kv = q->tags;
        n = q->tag_count;
        q->tags = fresh->tags;
        q->tag_count = fresh->tag_count;
        fresh->tags = kv;
        fresh->tag_count = n;
    }
    for (size_t i = 0; i < mem.n; i++) {
        struct part_queue *q = part__queue_by_id(c, mem.v[i]);
        if (q != NULL && !id_in(image, l.n, q->id)) {
            part__catalog_remove(c, q);
            q->deleted = true;
            gone[ngone++] = q;
        }
    }
    pthread_rwlock_unlock(&c->lock);
    for (size_t i = 0; i < npaused; i++) {
        pause_changed(e, paused[i].id, paused[i].flags);
    }
    free(paused);
    for (size_t i = 0; i < ngone; i++) {
        drop_queue(e, gone[i]);
    }
    free(gone);
    free(mem.v);
    free(image);
    loaded_free(&l);
    if (added > 0 || ngone > 0) {
        /* rare (queues made or deleted elsewhere), and what on-call asks
         * first when a node disagrees about a queue */
        sl_log(SL_LOG_INFO, LOG_MOD,
               "catalog: %zu queues learnt, %zu dropped, from the replicated catalog (%zu now)",
               added, ngone, c->count);
    }
    if (added > 0) {
        part__writers_catalog_grew(e);
    }
    return SL_OK;
}

/* After a sync: the first one lets the partitions take their leads. */
static void synced(struct part_engine *e, int rc)
{
    if (rc == SL_OK && !atomic_exchange(&e->catalog_synced, true)) {
        sl_log(SL_LOG_INFO, LOG_MOD, "catalog: %zu queues, loaded from the replicated catalog",
               e->catalog.count);
        part__kick_writers(e); /* the partitions may take their leads now */
    } else if (rc == SL_EIO) {
        sl_log(SL_LOG_ERROR, LOG_MOD, "catalog: reading the replicated catalog failed");
    }
}

static void catalog_sync(struct part_engine *e)
{
    struct part_catalog *c = &e->catalog;
    if (c->db == NULL && part__repl_group_open_db(e->catw.group, &c->db) != SL_OK) {
        return;
    }
    synced(e, part__repl_read_on(e->catw.group, c->db, sync_from, e));
}

/* This node leads the catalog group: make the schema (one replicated
 * transaction) and load what the image holds. */
static bool catalog_lead(struct part_engine *e)
{
    struct part_writer *w = &e->catw;
    struct part_catalog *c = &e->catalog;
    if (c->db == NULL && part__repl_group_open_db(w->group, &c->db) != SL_OK) {
        return false;
    }
    if (part__repl_write_begin(w->group) != SL_OK) {
        return false;
    }
    struct sl_buf sql;
    sl_buf_init(&sql);
    sl_buf_append_cstr(&sql, "BEGIN IMMEDIATE;");
    sl_buf_append_cstr(&sql, CATALOG_SCHEMA);
    sl_buf_append_cstr(&sql, "COMMIT;");
    bool ok = part__sql_exec(c->db, sql.p) == SL_OK;
    sl_buf_free(&sql);
    if (!ok && !sqlite3_get_autocommit(c->db)) {
        part__sql_exec(c->db, "ROLLBACK");
    }
    ok = part__repl_write_end(w->group, (struct sl_slice){0}, false) == SL_OK && ok;
    if (ok) {
        sl_log(SL_LOG_INFO, LOG_MOD, "catalog: leading its group");
        catalog_sync(e);
    }
    return ok;
}

/* Follows the catalog group before a job: takes the lead when this node
 * won it. True when this node may run catalog jobs. */
static bool catalog_follow(struct part_engine *e)
{
    struct part_writer *w = &e->catw;
    bool leads = part__repl_leading(w->group);
    if (w->leading && !leads) {
        w->leading = false;
        sl_log(SL_LOG_INFO, LOG_MOD, "catalog: no longer leads its group");
    } else if (!w->leading && leads) {
        w->leading = catalog_lead(e);
    }
    return w->leading;
}

/* The catalog group's leadership changed (Raft thread): wake the catalog
 * thread to follow it. */
static void catalog_changed(void *arg)
{
    struct part_engine *e = arg;
    struct part_writer *w = &e->catw;
    pthread_mutex_lock(&w->mu);
    w->kicked = true;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

/* Another leader's change (or a snapshot) landed: the memory follows at
 * once, on the Raft thread, so that a partition's entry applied after it
 * never names a queue this node does not know yet. */
static void catalog_applied(void *arg, struct sl_slice note, sqlite3 *image)
{
    (void)note;
    synced(arg, sync_from(image, arg));
}

struct part_repl_hooks part__catalog_repl_hooks(struct part_engine *e)
{
    return (struct part_repl_hooks){
        .changed = catalog_changed, .applied = catalog_applied, .arg = e};
}

/* ---- the catalog thread ------------------------------------------------ */

/* One job at a time, in order, until stopped with nothing queued. A
 * cluster's catalog thread also follows its group (catalog_follow). */
static void *catalog_main(void *arg)
{
    struct part_writer *w = arg;
    struct part_engine *e = w->engine;
    for (;;) {
        pthread_mutex_lock(&w->mu);
        while (!w->stop && w->head == NULL && !w->kicked) {
            if (w->group != NULL && !w->leading && part__repl_leading(w->group)) {
                /* a take-over to try again */
                struct timespec ts;
                clock_gettime(CLOCK_MONOTONIC, &ts);
                ts.tv_sec += 1;
                if (pthread_cond_timedwait(&w->cv, &w->mu, &ts) != 0) {
                    break;
                }
                continue;
            }
            pthread_cond_wait(&w->cv, &w->mu);
        }
        w->kicked = false;
        struct part_job *job = w->head;
        if (job != NULL) {
            w->head = job->next;
            if (w->head == NULL) {
                w->tail = NULL;
            }
            job->next = NULL;
        } else if (w->stop) {
            w->exited = true;
        }
        bool stop = w->exited;
        pthread_mutex_unlock(&w->mu);
        if (stop) {
            break;
        }
        bool may_run = w->group == NULL || catalog_follow(e);
        if (job == NULL) {
            continue;
        }
        if (!may_run) {
            if (job->origin != NULL || e->hooks.forward == NULL) {
                job->status = SL_EUNAVAIL; /* not the catalog's leader (yet) */
                e->hooks.complete(job);
            } else {
                e->hooks.forward(e, job, true);
            }
            continue;
        }
        catalog_exec(e, job);
    }
    return NULL;
}

int part__catalog_db_start(struct part_engine *e)
{
    struct part_writer *w = &e->catw;
    if (pthread_create(&w->thread, NULL, catalog_main, w) != 0) {
        return SL_EIO;
    }
    w->started = true;
    return SL_OK;
}

void part__catalog_db_stop(struct part_engine *e)
{
    struct part_writer *w = &e->catw;
    part__thread_stop(w);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
}
