/*
 * part_backup.c -- an online backup of the engine's files
 * (part_engine_backup): the manifest, catalog.db and every partition,
 * while the writers go on committing.
 *
 * Each database is copied with VACUUM INTO on a read-only connection of
 * its own: one read transaction, so the copy is that file exactly as of
 * one commit (a WAL snapshot), written page by page by SQLite into a
 * fresh, compact database -- never a byte copy of a file that is being
 * written. The writers are not paused: in WAL mode a reader and the
 * writer do not block each other; the reader only holds back checkpoints
 * while it runs.
 *
 * Across files the copies are of slightly different moments. The
 * catalog goes first: a queue created after its copy may have rows in a
 * partition copy, which the engine drops as orphans when it opens the
 * restored directory (part_writer.c, rebuild) -- they were not in the
 * backup's catalog, so they are not in the backup. Every message that
 * was acknowledged before the backup started is in it, and every
 * deletion acknowledged before then stays deleted.
 *
 * Stack: a leaf beside the writer; reads engine fields fixed after open.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "part_int.h"

#define LOG_MOD "partitions"
#define BACKUP_BUSY_MS 10000

/* VACUUM INTO dst from src, on a read-only connection. SQLite makes dst
 * itself and would write through a symlink or into an existing empty
 * file, so dst must not exist at all: checked here, and the caller's
 * directory is one only this process's user may write to, so nothing
 * can appear between the check and SQLite's open. */
static int vacuum_into(const char *src, const char *dst, char *err, size_t errlen)
{
    struct stat lst;
    bool there = lstat(dst, &lst) == 0;
    if (there || errno != ENOENT) {
        snprintf(err, errlen, "%s: %s", dst, there ? "already exists" : strerror(errno));
        return SL_EIO;
    }
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_open_v2(src, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_busy_timeout(db, BACKUP_BUSY_MS);
        /* No fsync per page of the copy: the caller syncs each finished
         * file once, and the writers' commits keep the disk's syncs. */
        rc = sqlite3_exec(db, "PRAGMA synchronous=OFF", NULL, NULL, NULL);
    }
    if (rc == SQLITE_OK) {
        rc = sqlite3_prepare_v2(db, "VACUUM INTO ?1", -1, &st, NULL);
    }
    if (rc == SQLITE_OK) {
        sqlite3_bind_text(st, 1, dst, -1, SQLITE_STATIC);
        rc = sqlite3_step(st);
        rc = rc == SQLITE_DONE ? SQLITE_OK : rc;
    }
    if (rc != SQLITE_OK) {
        snprintf(err, errlen, "%s -> %s: %s", src, dst,
                 db != NULL ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    return rc == SQLITE_OK ? SL_OK : SL_EIO;
}

/* The manifest is a few immutable lines (its key never changes): a plain
 * copy is exact. */
static int copy_manifest(const struct part_engine *e, const char *dir, char *err, size_t errlen)
{
    char src[4096], dst[4096], buf[4096];
    snprintf(src, sizeof src, "%s/manifest", e->data_dir);
    snprintf(dst, sizeof dst, "%s/manifest", dir);
    FILE *in = fopen(src, "rb");
    int out = -1;
    if (in != NULL) {
        (void)sl_file_create(dst, &out);
    }
    bool ok = in != NULL && out >= 0;
    if (ok) {
        size_t n = fread(buf, 1, sizeof buf, in);
        ok = n > 0 && n < sizeof buf && write(out, buf, n) == (ssize_t)n;
    }
    if (out >= 0) {
        ok = close(out) == 0 && ok;
    }
    if (in != NULL) {
        fclose(in);
    }
    if (!ok) {
        snprintf(err, errlen, "%s -> %s: %s", src, dst, strerror(errno));
        return SL_EIO;
    }
    return SL_OK;
}

int part_engine_backup(struct part_engine *e, const char *dir, part_backup_file_fn *done, void *arg,
                       char *err, size_t errlen)
{
    char src[4096], dst[4096];
    int rc = copy_manifest(e, dir, err, errlen);
    if (rc == SL_OK) {
        done(arg, "manifest");
        snprintf(src, sizeof src, "%s/catalog.db", e->data_dir);
        snprintf(dst, sizeof dst, "%s/catalog.db", dir);
        rc = vacuum_into(src, dst, err, errlen);
    }
    if (rc == SL_OK) {
        done(arg, "catalog.db");
    }
    for (uint32_t p = 0; p < e->nparts && rc == SL_OK; p++) {
        const char *slash = strrchr(e->writers[p].path, '/');
        const char *name = slash != NULL ? slash + 1 : e->writers[p].path;
        snprintf(dst, sizeof dst, "%s/%s", dir, name);
        rc = vacuum_into(e->writers[p].path, dst, err, errlen);
        if (rc == SL_OK) {
            done(arg, name);
        }
    }
    if (rc != SL_OK) {
        sl_log(SL_LOG_ERROR, LOG_MOD, "backup to %s failed: %s", dir, err);
    }
    return rc;
}
