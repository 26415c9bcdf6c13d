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
#include "part_schema.h"

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

static void load_kvs(sqlite3 *db, struct part_engine *e, const char *table)
{
    char sql[128];
    snprintf(sql, sizeof sql, "SELECT queue_id, key, value FROM %s ORDER BY queue_id, key", table);
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        return;
    }
    bool tags = strcmp(table, "queue_tags") == 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        struct part_queue *q =
            part__queue_by_id(&e->catalog, (uint64_t)sqlite3_column_int64(st, 0));
        if (q == NULL) {
            continue;
        }
        struct part_kv kv = {(const char *)sqlite3_column_text(st, 1),
                             (const char *)sqlite3_column_text(st, 2)};
        part__kv_apply(tags ? &q->tags : &q->attrs, tags ? &q->tag_count : &q->attr_count, &kv, 1);
    }
    sqlite3_finalize(st);
}

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
    IDEMPOTENCY_WINDOW_SHIFT = 8, /* bits 8..19: the window in seconds */
};

static int fifo_bits(const struct part_queue_config *cfg)
{
    int own = (cfg->priority_order ? PRIORITY_ORDER : 0) | (cfg->exclusive ? EXCLUSIVE : 0) |
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
    cfg->idempotency_window_s = (uint32_t)(fifo >> IDEMPOTENCY_WINDOW_SHIFT) & 0xfffu;
    cfg->dlq_target_id = (uint64_t)sqlite3_column_int64(st, col + 4);
    cfg->max_receive_count = (uint32_t)sqlite3_column_int64(st, col + 5);
    cfg->max_message_size = (uint32_t)sqlite3_column_int64(st, col + 6);
    cfg->receive_wait_s = (uint32_t)sqlite3_column_int64(st, col + 7);
}

int part__catalog_db_open(struct part_engine *e, char *err, size_t errlen)
{
    struct part_catalog *c = &e->catalog;
    part__catalog_init(e);

    char path[4096];
    snprintf(path, sizeof path, "%s/catalog.db", e->data_dir);
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
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(c->db,
                           "SELECT id, tenant, name, created_ms, modified_ms, visibility_s,"
                           " delay_s, retention_s, fifo, dlq_id, max_receive, max_message_size,"
                           " receive_wait_s FROM queues",
                           -1, &st, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "%s: %s", path, sqlite3_errmsg(c->db));
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
        q->tenant = part__tenant_get(c, q->tenant_name);
        part__catalog_insert(c, q);
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        snprintf(err, errlen, "%s: %s", path, sqlite3_errmsg(c->db));
        return SL_EIO;
    }
    load_kvs(c->db, e, "queue_attrs");
    load_kvs(c->db, e, "queue_tags");
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
                            " retention_s=?, fifo=?, dlq_id=?, max_receive=?, max_message_size=?,"
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
    if (part__sql_exec(c->db, "BEGIN IMMEDIATE") != SL_OK) {
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
    default:
        SL_ASSERT(!"not a catalog op");
    }
    if (rc != SL_OK || part__sql_exec(c->db, "COMMIT") != SL_OK) {
        part__sql_exec(c->db, "ROLLBACK");
        if (created != NULL) {
            part__queue_unref(created);
        }
        job->status = rc == SL_EEXIST ? SL_EEXIST : SL_EIO;
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
        }
    }
    job->res.queue = part__queue_info(q);
    pthread_rwlock_unlock(&c->lock);

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

/* ---- the catalog thread ------------------------------------------------ */

/* One job at a time, in order, until stopped with nothing queued. */
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
        catalog_exec(w->engine, job);
    }
    return NULL;
}

int part__catalog_db_start(struct part_engine *e)
{
    struct part_writer *w = &e->catw;
    w->index = UINT32_MAX;
    part__thread_init(w, e);
    snprintf(w->path, sizeof w->path, "%s/catalog.db", e->data_dir);
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
