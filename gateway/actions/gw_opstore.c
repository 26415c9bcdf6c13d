/*
 * gw_opstore.c -- data_dir/ops.db: move-task history and paused queues
 * (gw_act.h).
 *
 * One connection under a mutex. With durability fsync each commit is
 * synced (synchronous=FULL): these writes are rare, and an operator who
 * paused a queue must find it paused after a power cut; with durability
 * os a commit is a WAL append (synchronous=NORMAL), which survives a
 * crash of the process, as the engine's files do. WAL lets a backup
 * (VACUUM INTO on a connection of its own) read the file while a write
 * goes on.
 *
 * Stack: a leaf of the gateway (SQLite only).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <sqlite3.h>

#include "gw_act.h"

#define LOG_MOD "opstore"
#define OPSTORE_BUSY_MS 5000

struct gw_opstore {
    pthread_mutex_t mu;
    sqlite3 *db;
    char *path;
};

static const char SCHEMA[] =
    "PRAGMA journal_mode=WAL;"
    "CREATE TABLE IF NOT EXISTS move_tasks(id TEXT PRIMARY KEY, tenant TEXT NOT NULL,"
    " source TEXT NOT NULL, source_arn TEXT NOT NULL, destination TEXT, dest_arn TEXT,"
    " source_id INTEGER NOT NULL, rate INTEGER NOT NULL, to_move INTEGER NOT NULL,"
    " moved INTEGER NOT NULL, status TEXT NOT NULL, error TEXT, started_ms INTEGER NOT NULL,"
    " finished_ms INTEGER NOT NULL);"
    "CREATE INDEX IF NOT EXISTS move_tasks_source ON move_tasks(source_id, started_ms);"
    "CREATE TABLE IF NOT EXISTS paused(queue_id INTEGER PRIMARY KEY, flags INTEGER NOT NULL);";

int gw_opstore_open(const char *data_dir, bool fsync, struct gw_opstore **out, char *err,
                    size_t errlen)
{
    struct sl_buf path;
    sl_buf_init(&path);
    sl_buf_printf(&path, "%s/%s", data_dir, GW_OPSTORE_FILE);
    struct gw_opstore *s = sl_xcalloc(1, sizeof *s);
    s->path = sl_buf_take(&path, NULL);
    int rc = sqlite3_open_v2(s->path, &s->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_busy_timeout(s->db, OPSTORE_BUSY_MS);
        rc = sqlite3_exec(s->db, SCHEMA, NULL, NULL, NULL);
    }
    if (rc == SQLITE_OK) {
        rc = sqlite3_exec(s->db, fsync ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL",
                          NULL, NULL, NULL);
    }
    if (rc != SQLITE_OK) {
        snprintf(err, errlen, "%s: %s", s->path,
                 s->db != NULL ? sqlite3_errmsg(s->db) : sqlite3_errstr(rc));
        sqlite3_close(s->db);
        free(s->path);
        free(s);
        return SL_EIO;
    }
    pthread_mutex_init(&s->mu, NULL);
    *out = s;
    return SL_OK;
}

void gw_opstore_close(struct gw_opstore *s)
{
    if (s == NULL) {
        return;
    }
    sqlite3_close(s->db);
    pthread_mutex_destroy(&s->mu);
    free(s->path);
    free(s);
}

const char *gw_opstore_path(const struct gw_opstore *s)
{
    return s->path;
}

static void bind_text(sqlite3_stmt *st, int i, const char *v)
{
    if (v != NULL) {
        sqlite3_bind_text(st, i, v, -1, SQLITE_STATIC);
    } else {
        sqlite3_bind_null(st, i);
    }
}

/* Runs one prepared statement to completion. Mutex held. */
static int step_done(struct gw_opstore *s, sqlite3_stmt *st)
{
    int rc = sqlite3_step(st);
    if (rc != SQLITE_DONE) {
        sl_log(SL_LOG_ERROR, LOG_MOD, "%s: %s", s->path, sqlite3_errmsg(s->db));
        return SL_EIO;
    }
    return SL_OK;
}

int gw_opstore_put_task(struct gw_opstore *s, const struct gw_op_task *t, size_t keep)
{
    static const char UPSERT[] =
        "INSERT OR REPLACE INTO move_tasks(id, tenant, source, source_arn, destination, dest_arn,"
        " source_id, rate, to_move, moved, status, error, started_ms, finished_ms)"
        " VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14)";
    static const char PRUNE[] =
        "DELETE FROM move_tasks WHERE source_id=?1 AND id NOT IN (SELECT id FROM move_tasks"
        " WHERE source_id=?1 ORDER BY started_ms DESC LIMIT ?2)";
    pthread_mutex_lock(&s->mu);
    sqlite3_stmt *st = NULL, *pr = NULL;
    int rc = SL_EIO;
    if (sqlite3_prepare_v2(s->db, UPSERT, -1, &st, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(s->db, PRUNE, -1, &pr, NULL) == SQLITE_OK) {
        bind_text(st, 1, t->id);
        bind_text(st, 2, t->tenant);
        bind_text(st, 3, t->source);
        bind_text(st, 4, t->source_arn);
        bind_text(st, 5, t->destination);
        bind_text(st, 6, t->dest_arn);
        sqlite3_bind_int64(st, 7, (sqlite3_int64)t->source_id);
        sqlite3_bind_int64(st, 8, t->rate);
        sqlite3_bind_int64(st, 9, t->to_move);
        sqlite3_bind_int64(st, 10, t->moved);
        bind_text(st, 11, t->status);
        bind_text(st, 12, t->error);
        sqlite3_bind_int64(st, 13, (sqlite3_int64)t->started_ms);
        sqlite3_bind_int64(st, 14, (sqlite3_int64)t->finished_ms);
        sqlite3_bind_int64(pr, 1, (sqlite3_int64)t->source_id);
        sqlite3_bind_int64(pr, 2, (sqlite3_int64)keep);
        rc = step_done(s, st);
        if (rc == SL_OK) {
            rc = step_done(s, pr);
        }
    } else {
        sl_log(SL_LOG_ERROR, LOG_MOD, "%s: %s", s->path, sqlite3_errmsg(s->db));
    }
    sqlite3_finalize(st);
    sqlite3_finalize(pr);
    pthread_mutex_unlock(&s->mu);
    return rc;
}

static const char *col_text(sqlite3_stmt *st, int i)
{
    return (const char *)sqlite3_column_text(st, i);
}

int gw_opstore_load_tasks(struct gw_opstore *s, gw_op_task_fn *fn, void *arg)
{
    static const char SELECT[] =
        "SELECT id, tenant, source, source_arn, destination, dest_arn, source_id, rate, to_move,"
        " moved, status, error, started_ms, finished_ms FROM move_tasks ORDER BY started_ms, id";
    pthread_mutex_lock(&s->mu);
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(s->db, SELECT, -1, &st, NULL);
    while (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct gw_op_task t = {
            .id = col_text(st, 0),
            .tenant = col_text(st, 1),
            .source = col_text(st, 2),
            .source_arn = col_text(st, 3),
            .destination = col_text(st, 4),
            .dest_arn = col_text(st, 5),
            .source_id = (uint64_t)sqlite3_column_int64(st, 6),
            .rate = (int32_t)sqlite3_column_int64(st, 7),
            .to_move = sqlite3_column_int64(st, 8),
            .moved = sqlite3_column_int64(st, 9),
            .status = col_text(st, 10),
            .error = col_text(st, 11),
            .started_ms = (uint64_t)sqlite3_column_int64(st, 12),
            .finished_ms = (uint64_t)sqlite3_column_int64(st, 13),
        };
        fn(arg, &t);
        rc = SQLITE_OK;
    }
    int status = rc == SQLITE_DONE ? SL_OK : SL_EIO;
    if (status != SL_OK) {
        sl_log(SL_LOG_ERROR, LOG_MOD, "%s: %s", s->path, sqlite3_errmsg(s->db));
    }
    sqlite3_finalize(st);
    pthread_mutex_unlock(&s->mu);
    return status;
}

int gw_opstore_put_pause(struct gw_opstore *s, uint64_t queue_id, unsigned flags)
{
    pthread_mutex_lock(&s->mu);
    sqlite3_stmt *st = NULL;
    int rc = SL_EIO;
    const char *sql = flags != 0 ? "INSERT OR REPLACE INTO paused(queue_id, flags) VALUES(?1,?2)"
                                 : "DELETE FROM paused WHERE queue_id=?1";
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, (sqlite3_int64)queue_id);
        if (flags != 0) {
            sqlite3_bind_int64(st, 2, flags);
        }
        rc = step_done(s, st);
    } else {
        sl_log(SL_LOG_ERROR, LOG_MOD, "%s: %s", s->path, sqlite3_errmsg(s->db));
    }
    sqlite3_finalize(st);
    pthread_mutex_unlock(&s->mu);
    return rc;
}

int gw_opstore_load_pauses(struct gw_opstore *s, gw_op_pause_fn *fn, void *arg)
{
    pthread_mutex_lock(&s->mu);
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(s->db, "SELECT queue_id, flags FROM paused", -1, &st, NULL);
    while (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        fn(arg, (uint64_t)sqlite3_column_int64(st, 0), (unsigned)sqlite3_column_int64(st, 1));
        rc = SQLITE_OK;
    }
    sqlite3_finalize(st);
    pthread_mutex_unlock(&s->mu);
    return rc == SQLITE_DONE ? SL_OK : SL_EIO;
}

int gw_opstore_backup(struct gw_opstore *s, const char *path, char *err, size_t errlen)
{
    /* VACUUM INTO would write through a symlink or into an empty file
     * already there: path must not exist (its directory is the backup's,
     * writable by this user alone, gw_backup.c) */
    struct stat lst;
    bool there = lstat(path, &lst) == 0;
    if (there || errno != ENOENT) {
        snprintf(err, errlen, "%s: %s", path, there ? "already exists" : strerror(errno));
        return SL_EIO;
    }
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_open_v2(s->path, &db, SQLITE_OPEN_READONLY, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_busy_timeout(db, OPSTORE_BUSY_MS);
        rc =
            sqlite3_exec(db, "PRAGMA synchronous=OFF", NULL, NULL, NULL); /* synced by the caller */
    }
    if (rc == SQLITE_OK) {
        rc = sqlite3_prepare_v2(db, "VACUUM INTO ?1", -1, &st, NULL);
    }
    if (rc == SQLITE_OK) {
        sqlite3_bind_text(st, 1, path, -1, SQLITE_STATIC);
        rc = sqlite3_step(st);
        rc = rc == SQLITE_DONE ? SQLITE_OK : rc;
    }
    if (rc != SQLITE_OK) {
        snprintf(err, errlen, "%s -> %s: %s", s->path, path,
                 db != NULL ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    return rc == SQLITE_OK ? SL_OK : SL_EIO;
}
