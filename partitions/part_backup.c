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
 * A backup of many GB takes minutes, so the caller can follow it (bytes
 * written against the databases' sizes) and stop it (SIGTERM must not
 * wait for it): SQLite's progress handler, called every few dozen VM
 * steps of the copy, reads the stop flag and, every 100 ms, the copy's
 * size.
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
#include "part_repl.h"

#define LOG_MOD "partitions"
#define BACKUP_BUSY_MS 10000

/* How often SQLite calls back during a copy (VM steps), and how often
 * the callback looks at the copy's size. A step of VACUUM INTO moves at
 * most a row (a blob of up to a few MB), so a stop lands within
 * milliseconds; the size costs a stat(), so it is read more rarely. */
#define PROGRESS_STEPS 64
#define PROGRESS_STAT_NS 100000000ull

struct copy_watch {
    struct part_backup_progress *pg;
    const char *dst;
    uint64_t done_before; /* bytes of the files already copied */
    uint64_t last_stat_ns;
};

/* SQLite's progress handler: non-zero interrupts the statement. */
static int watch_copy(void *arg)
{
    struct copy_watch *w = arg;
    if (atomic_load(&w->pg->stop)) {
        return 1;
    }
    uint64_t now = sl_mono_ns();
    struct stat st;
    if (now - w->last_stat_ns >= PROGRESS_STAT_NS && stat(w->dst, &st) == 0) {
        w->last_stat_ns = now;
        atomic_store(&w->pg->bytes_done, w->done_before + (uint64_t)st.st_size);
    }
    return 0;
}

/* The size of the copy dst once written, added to pg's count. */
static void count_file(struct part_backup_progress *pg, uint64_t done_before, const char *dst)
{
    struct stat st;
    uint64_t size = stat(dst, &st) == 0 ? (uint64_t)st.st_size : 0;
    atomic_store(&pg->bytes_done, done_before + size);
}

/* VACUUM INTO dst from src, on a read-only connection. SQLite makes dst
 * itself and would write through a symlink or into an existing empty
 * file, so dst must not exist at all: checked here, and the caller's
 * directory is one only this process's user may write to, so nothing
 * can appear between the check and SQLite's open. */
static int vacuum_into(const char *src, const char *dst, struct part_backup_progress *pg, char *err,
                       size_t errlen)
{
    if (atomic_load(&pg->stop)) {
        snprintf(err, errlen, "stopped before %s", src);
        return SL_ECLOSED;
    }
    struct copy_watch watch = {pg, dst, atomic_load(&pg->bytes_done), sl_mono_ns()};
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
        sqlite3_progress_handler(db, PROGRESS_STEPS, watch_copy, &watch);
        rc = sqlite3_step(st);
        rc = rc == SQLITE_DONE ? SQLITE_OK : rc;
    }
    bool stopped = rc == SQLITE_INTERRUPT;
    if (stopped) {
        snprintf(err, errlen, "stopped while copying %s", src);
    } else if (rc != SQLITE_OK) {
        snprintf(err, errlen, "%s -> %s: %s", src, dst,
                 db != NULL ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    if (rc == SQLITE_OK) {
        count_file(pg, watch.done_before, dst);
    }
    return rc == SQLITE_OK ? SL_OK : stopped ? SL_ECLOSED : SL_EIO;
}

/* The sizes of the databases a backup copies (the WAL's pages not yet
 * checkpointed are left out: an estimate, as the copies are compacted). */
static uint64_t source_bytes(const struct part_engine *e)
{
    char path[4096];
    struct stat st;
    snprintf(path, sizeof path, "%s/catalog.db", e->data_dir);
    uint64_t total = stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
    for (uint32_t p = 0; p < e->nparts; p++) {
        total += stat(e->writers[p].path, &st) == 0 ? (uint64_t)st.st_size : 0;
    }
    return total;
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

/* ---- a cluster's node: its replicated images ------------------------------ */

/* Pages copied under one hold of the group's lock: about 4 MB, a few
 * milliseconds during which the Raft thread waits to apply that group's
 * entries (and every other group's behind it). */
#define IMAGE_CHUNK_PAGES 1024
/* Chunks tried between applies before the rest is copied in one hold: an
 * entry applied between two chunks restarts SQLite's backup, so a busy
 * group would never finish otherwise. */
#define IMAGE_CHUNK_TRIES 16

struct image_copy {
    sqlite3_backup *b;
    int chunk; /* pages, or -1: the rest */
    int rc;
};

static int image_step(sqlite3 *db, void *arg)
{
    (void)db;
    struct image_copy *c = arg;
    c->rc = sqlite3_backup_step(c->b, c->chunk);
    return SL_OK;
}

/* Copies group g's image as this node holds it (leader or follower: every
 * node holds every image) into a new SQLite file dst, with SQLite's
 * backup API from a connection on the image to one on the file, in
 * chunks under the group's lock. */
static int image_into(struct part_repl_group *g, const char *dst, struct part_backup_progress *pg,
                      char *err, size_t errlen)
{
    struct copy_watch watch = {.pg = pg, .dst = dst, .done_before = atomic_load(&pg->bytes_done)};
    struct stat lst;
    if (lstat(dst, &lst) == 0 || errno != ENOENT) {
        snprintf(err, errlen, "%s: already exists", dst);
        return SL_EIO;
    }
    sqlite3 *src = NULL, *out = NULL;
    int rc = part__repl_group_open_db(g, &src);
    if (rc == SL_OK &&
        (sqlite3_open_v2(dst, &out, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) !=
             SQLITE_OK ||
         sqlite3_exec(out, "PRAGMA synchronous=OFF", NULL, NULL, NULL) != SQLITE_OK)) {
        rc = SL_EIO;
    }
    struct image_copy c = {.chunk = IMAGE_CHUNK_PAGES, .rc = SQLITE_OK};
    if (rc == SL_OK) {
        c.b = sqlite3_backup_init(out, "main", src, "main");
        rc = c.b != NULL ? SL_OK : SL_EIO;
    }
    for (int tries = 0;
         rc == SL_OK && (c.rc == SQLITE_OK || c.rc == SQLITE_BUSY || c.rc == SQLITE_LOCKED);
         tries++) {
        if (atomic_load(&pg->stop)) {
            rc = SL_ECLOSED;
            break;
        }
        c.chunk = tries < IMAGE_CHUNK_TRIES ? IMAGE_CHUNK_PAGES : -1;
        (void)part__repl_read_on(g, src, image_step, &c);
        if (c.rc == SQLITE_OK) {
            watch_copy(&watch); /* progress, by the file's size */
        }
    }
    if (rc == SL_OK && c.rc != SQLITE_DONE) {
        rc = SL_EIO;
    }
    if (c.b != NULL) {
        sqlite3_backup_finish(c.b);
    }
    if (rc == SL_EIO) {
        snprintf(err, errlen, "copying the image of %s to %s: %s", part__repl_group_name(g), dst,
                 out != NULL ? sqlite3_errmsg(out) : "cannot open");
    } else if (rc == SL_ECLOSED) {
        snprintf(err, errlen, "stopped while copying %s", part__repl_group_name(g));
    }
    sqlite3_close(out);
    sqlite3_close(src);
    if (rc == SL_OK) {
        count_file(pg, watch.done_before, dst);
    }
    return rc;
}

/* A cluster's backup: the images this node holds, into the files a single
 * node opens (catalog.db, part-NNNN.db) and a manifest with the engine
 * key every node derives, so that the copy restores as one node. Read on
 * this node only: asked of a follower, it costs the leaders nothing. */
static int cluster_backup(struct part_engine *e, const char *dir, struct part_backup_progress *pg,
                          part_backup_file_fn *done, void *arg, char *err, size_t errlen)
{
    uint64_t total = part__repl_image_bytes(e->catw.group);
    for (uint32_t p = 0; p < e->nparts; p++) {
        total += part__repl_image_bytes(e->writers[p].group);
    }
    atomic_store(&pg->bytes_total, total);
    int rc = part__manifest_write(e, dir, err, errlen);
    if (rc == SL_OK) {
        done(arg, "manifest");
        char dst[4096];
        snprintf(dst, sizeof dst, "%s/catalog.db", dir);
        rc = image_into(e->catw.group, dst, pg, err, errlen);
    }
    if (rc == SL_OK) {
        done(arg, "catalog.db");
    }
    for (uint32_t p = 0; p < e->nparts && rc == SL_OK; p++) {
        char name[32], dst[4096];
        snprintf(name, sizeof name, "part-%04u.db", p);
        snprintf(dst, sizeof dst, "%s/%s", dir, name);
        rc = image_into(e->writers[p].group, dst, pg, err, errlen);
        if (rc == SL_OK) {
            done(arg, name);
        }
    }
    if (rc != SL_OK && rc != SL_ECLOSED) {
        sl_log(SL_LOG_ERROR, LOG_MOD, "backup to %s failed: %s", dir, err);
    }
    return rc;
}

int part_engine_backup(struct part_engine *e, const char *dir, struct part_backup_progress *pg,
                       part_backup_file_fn *done, void *arg, char *err, size_t errlen)
{
    if (e->repl != NULL) {
        atomic_store(&pg->bytes_done, 0);
        return cluster_backup(e, dir, pg, done, arg, err, errlen);
    }
    char src[4096], dst[4096];
    atomic_store(&pg->bytes_done, 0);
    atomic_store(&pg->bytes_total, source_bytes(e));
    int rc = copy_manifest(e, dir, err, errlen);
    if (rc == SL_OK) {
        done(arg, "manifest");
        snprintf(src, sizeof src, "%s/catalog.db", e->data_dir);
        snprintf(dst, sizeof dst, "%s/catalog.db", dir);
        rc = vacuum_into(src, dst, pg, err, errlen);
    }
    if (rc == SL_OK) {
        done(arg, "catalog.db");
    }
    for (uint32_t p = 0; p < e->nparts && rc == SL_OK; p++) {
        const char *slash = strrchr(e->writers[p].path, '/');
        const char *name = slash != NULL ? slash + 1 : e->writers[p].path;
        snprintf(dst, sizeof dst, "%s/%s", dir, name);
        rc = vacuum_into(e->writers[p].path, dst, pg, err, errlen);
        if (rc == SL_OK) {
            done(arg, name);
        }
    }
    if (rc != SL_OK && rc != SL_ECLOSED) { /* a stop is the caller's to tell */
        sl_log(SL_LOG_ERROR, LOG_MOD, "backup to %s failed: %s", dir, err);
    }
    return rc;
}
