/*
 * part_test_vfs.h -- a fault-injecting SQLite VFS for the partitions
 * tests, registered as the default in front of the real one, so that the
 * engine's own connections go through it unchanged.
 *
 * It can
 *  - count every xSync (test_part_sync.c: which commits wait for the disk);
 *  - fail writes as a full disk does: every write that would grow a file
 *    (TV_FULL_GROW: a file system out of blocks; rewriting blocks a file
 *    already has still works), or the n-th write from now with a chosen
 *    code (tv_fail_write_at); and the shared-memory file of a database
 *    whose name contains a chosen string cannot be grown
 *    (tv_fail_shm_of: as the unix VFS reports ENOSPC there);
 *  - fail reads of one database file from its n-th read on
 *    (tv_fail_reads_of), once or for good, with a chosen code: an open
 *    that dies partway through its rebuild;
 *  - cut the power at the n-th write or sync from now (tv_cut_at): every
 *    write not yet covered by an xSync of its file is undone on the real
 *    files, some of them only in part (torn at a 512-byte boundary) or
 *    kept, as a disk cache may have written any of them; from then on
 *    nothing reaches the files (writes, syncs, truncates and deletes fail
 *    with SQLITE_IOERR), so the engine can be closed and the directory
 *    reopened as a restarted machine would find it.
 *
 * Undo log: before each write the shim reads what the region held; an
 * xSync of a file forgets that file's log (its writes are durable). Only
 * files opened after tv_track(true) are logged. Creating and deleting a
 * file count as durable at once (SQLite syncs the directory where that
 * matters, and the tests do not model directory entries).
 *
 * A sync is not passed to the real file while tracking: durability is the
 * shim's account, and skipping fsync keeps thousands of cuts fast.
 *
 * Everything is static: each test_*.c is its own executable.
 */
#ifndef PART_TEST_VFS_H
#define PART_TEST_VFS_H

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

enum tv_full { TV_FULL_OFF, TV_FULL_GROW };

struct tv_undo {
    sqlite3_int64 off;
    int n;     /* bytes of old that were in the file */
    int wrote; /* bytes the write covered (beyond n it extended the file) */
    char *old;
};

struct tv_path {
    char *name;
    sqlite3_int64 synced_size;
    struct tv_undo *undo;
    size_t nundo, capundo;
};

static struct {
    sqlite3_vfs *real;
    sqlite3_vfs vfs;
    _Atomic uint64_t syncs;
    _Atomic int full;        /* enum tv_full */
    _Atomic int64_t fail_in; /* writes until the injected failure; <0: off */
    _Atomic int fail_rc;
    _Atomic int64_t cut_in; /* writes+syncs until the power cut; <0: off */
    _Atomic bool dead;      /* after the cut */
    _Atomic uint64_t fails; /* writes failed by injection */
    char shm_fail[64];      /* tv_fail_shm_of; "" none (under mu) */
    char read_fail[64];     /* tv_fail_reads_of; "" none (under mu) */
    int64_t read_fail_in;   /* reads of it until the first failure (under mu) */
    bool read_fail_once;
    int read_fail_rc;
    bool tracking;
    unsigned seed;          /* tear/keep choices at the cut */
    pthread_mutex_t mu;     /* paths */
    struct tv_path **paths; /* each allocated alone: files point at them */
    size_t npaths;
} tv = {.mu = PTHREAD_MUTEX_INITIALIZER};

struct tv_file {
    sqlite3_file base;
    struct tv_path *path; /* NULL: not tracked */
    const char *name;     /* SQLite keeps it for the file's life; may be NULL */
    sqlite3_file *real;   /* lives right after this struct */
};

static sqlite3_file *tv_real(sqlite3_file *f)
{
    return ((struct tv_file *)f)->real;
}

static struct tv_path *tv_path_get(const char *name)
{
    for (size_t i = 0; i < tv.npaths; i++) {
        if (strcmp(tv.paths[i]->name, name) == 0) {
            return tv.paths[i];
        }
    }
    return NULL;
}

static void tv_undo_clear(struct tv_path *p)
{
    for (size_t i = 0; i < p->nundo; i++) {
        free(p->undo[i].old);
    }
    p->nundo = 0;
}

/* Puts one tracked file back as the disk might hold it after a power
 * cut: each unsynced write undone (half of them), kept, or torn. */
static void tv_restore(struct tv_path *p)
{
    int fd = open(p->name, O_WRONLY);
    if (fd < 0) {
        tv_undo_clear(p);
        return;
    }
    for (size_t i = p->nundo; i-- > 0;) {
        struct tv_undo *u = &p->undo[i];
        int pick = rand_r(&tv.seed) % 4;
        if (pick == 0) {
            continue; /* this write reached the disk */
        }
        int from = 0;
        if (pick == 1 && u->n > 512) { /* torn: a prefix of sectors landed */
            from = 512 * (rand_r(&tv.seed) % (u->n / 512));
        }
        if (u->n > from && pwrite(fd, u->old + from, (size_t)(u->n - from), u->off + from) < 0) {
            abort();
        }
    }
    /* What grew the file past its synced size may not have landed. */
    off_t end = lseek(fd, 0, SEEK_END);
    if (end > p->synced_size && rand_r(&tv.seed) % 2 == 0) {
        if (ftruncate(fd, p->synced_size) != 0) {
            abort();
        }
    }
    close(fd);
    tv_undo_clear(p);
}

static void tv_cut_now(void)
{
    pthread_mutex_lock(&tv.mu);
    if (!atomic_exchange(&tv.dead, true)) {
        for (size_t i = 0; i < tv.npaths; i++) {
            tv_restore(tv.paths[i]);
        }
    }
    pthread_mutex_unlock(&tv.mu);
}

/* Counts down one write or sync toward a pending cut; true at the cut. */
static bool tv_cut_tick(void)
{
    if (atomic_load(&tv.cut_in) < 0) {
        return false;
    }
    if (atomic_fetch_sub(&tv.cut_in, 1) == 0) {
        tv_cut_now();
        return true;
    }
    return false;
}

static int tv_close(sqlite3_file *f)
{
    return tv_real(f)->pMethods->xClose(tv_real(f));
}
/* The code this read of the file named name fails with
 * (tv_fail_reads_of), SQLITE_OK when it does not fail. */
static int tv_read_fails(const char *name)
{
    int fail = SQLITE_OK;
    pthread_mutex_lock(&tv.mu);
    size_t len = name != NULL ? strlen(name) : 0, flen = strlen(tv.read_fail);
    if (flen > 0 && len >= flen && strcmp(name + len - flen, tv.read_fail) == 0 &&
        tv.read_fail_in-- <= 0) {
        fail = tv.read_fail_rc;
        if (tv.read_fail_once) {
            tv.read_fail[0] = '\0';
        }
    }
    pthread_mutex_unlock(&tv.mu);
    return fail;
}
static int tv_read(sqlite3_file *f, void *p, int n, sqlite3_int64 off)
{
    int rc = tv_read_fails(((struct tv_file *)f)->name);
    if (rc != SQLITE_OK) {
        atomic_fetch_add(&tv.fails, 1);
        return rc;
    }
    return tv_real(f)->pMethods->xRead(tv_real(f), p, n, off);
}
static int tv_write(sqlite3_file *f, const void *p, int n, sqlite3_int64 off)
{
    struct tv_file *tf = (struct tv_file *)f;
    if (atomic_load(&tv.dead) || tv_cut_tick()) {
        return SQLITE_IOERR_WRITE;
    }
    if (atomic_load(&tv.fail_in) >= 0 && atomic_fetch_sub(&tv.fail_in, 1) == 0) {
        atomic_fetch_add(&tv.fails, 1);
        return atomic_load(&tv.fail_rc);
    }
    sqlite3_int64 size = 0;
    if (tv_real(f)->pMethods->xFileSize(tv_real(f), &size) != SQLITE_OK) {
        return SQLITE_IOERR_WRITE;
    }
    if (atomic_load(&tv.full) == TV_FULL_GROW && off + n > size) {
        atomic_fetch_add(&tv.fails, 1);
        return SQLITE_FULL;
    }
    if (tf->path != NULL) {
        struct tv_undo u = {.off = off, .wrote = n};
        u.n = off >= size ? 0 : (int)SL_MIN((sqlite3_int64)n, size - off);
        u.old = malloc(u.n > 0 ? (size_t)u.n : 1);
        if (u.n > 0 && tv_real(f)->pMethods->xRead(tv_real(f), u.old, u.n, off) != SQLITE_OK) {
            free(u.old);
            return SQLITE_IOERR_WRITE;
        }
        pthread_mutex_lock(&tv.mu);
        struct tv_path *tp = tf->path;
        if (tp->nundo == tp->capundo) {
            tp->capundo = tp->capundo ? 2 * tp->capundo : 64;
            tp->undo = realloc(tp->undo, tp->capundo * sizeof *tp->undo);
        }
        tp->undo[tp->nundo++] = u;
        pthread_mutex_unlock(&tv.mu);
    }
    return tv_real(f)->pMethods->xWrite(tv_real(f), p, n, off);
}
static int tv_truncate(sqlite3_file *f, sqlite3_int64 size)
{
    struct tv_file *tf = (struct tv_file *)f;
    if (atomic_load(&tv.dead)) {
        return SQLITE_IOERR_TRUNCATE;
    }
    if (tf->path != NULL) {
        /* durable at once: logged writes past the end are gone with it */
        pthread_mutex_lock(&tv.mu);
        struct tv_path *p = tf->path;
        for (size_t i = 0; i < p->nundo; i++) {
            struct tv_undo *u = &p->undo[i];
            if (u->off >= size) {
                u->n = 0;
            } else if (u->off + u->n > size) {
                u->n = (int)(size - u->off);
            }
        }
        if (p->synced_size > size) {
            p->synced_size = size;
        }
        pthread_mutex_unlock(&tv.mu);
    }
    return tv_real(f)->pMethods->xTruncate(tv_real(f), size);
}
static int tv_sync(sqlite3_file *f, int flags)
{
    struct tv_file *tf = (struct tv_file *)f;
    atomic_fetch_add(&tv.syncs, 1);
    if (atomic_load(&tv.dead) || tv_cut_tick()) {
        return SQLITE_IOERR_FSYNC;
    }
    if (tf->path != NULL) {
        pthread_mutex_lock(&tv.mu);
        tv_undo_clear(tf->path);
        sqlite3_int64 size = 0;
        tv_real(f)->pMethods->xFileSize(tv_real(f), &size);
        tf->path->synced_size = size;
        pthread_mutex_unlock(&tv.mu);
        return SQLITE_OK;
    }
    return tv_real(f)->pMethods->xSync(tv_real(f), flags);
}
static int tv_file_size(sqlite3_file *f, sqlite3_int64 *size)
{
    return tv_real(f)->pMethods->xFileSize(tv_real(f), size);
}
static int tv_lock(sqlite3_file *f, int level)
{
    return tv_real(f)->pMethods->xLock(tv_real(f), level);
}
static int tv_unlock(sqlite3_file *f, int level)
{
    return tv_real(f)->pMethods->xUnlock(tv_real(f), level);
}
static int tv_check_reserved(sqlite3_file *f, int *out)
{
    return tv_real(f)->pMethods->xCheckReservedLock(tv_real(f), out);
}
static int tv_file_control(sqlite3_file *f, int op, void *arg)
{
    /* The unix VFS's size hint and chunk growth write around xWrite; a
     * full disk must see every growth. */
    if (op == SQLITE_FCNTL_SIZE_HINT || op == SQLITE_FCNTL_CHUNK_SIZE) {
        return SQLITE_NOTFOUND;
    }
    return tv_real(f)->pMethods->xFileControl(tv_real(f), op, arg);
}
static int tv_sector_size(sqlite3_file *f)
{
    return tv_real(f)->pMethods->xSectorSize(tv_real(f));
}
static int tv_device(sqlite3_file *f)
{
    return tv_real(f)->pMethods->xDeviceCharacteristics(tv_real(f));
}
static int tv_shm_map(sqlite3_file *f, int region, int size, int extend, void volatile **out)
{
    const char *name = ((struct tv_file *)f)->name;
    pthread_mutex_lock(&tv.mu);
    bool fail = extend && name != NULL && tv.shm_fail[0] != '\0' && strstr(name, tv.shm_fail);
    pthread_mutex_unlock(&tv.mu);
    if (fail) {
        atomic_fetch_add(&tv.fails, 1);
        errno = ENOSPC; /* what xGetLastError, hence sqlite3_system_errno, reports */
        return SQLITE_IOERR_SHMSIZE;
    }
    return tv_real(f)->pMethods->xShmMap(tv_real(f), region, size, extend, out);
}
static int tv_shm_lock(sqlite3_file *f, int offset, int n, int flags)
{
    return tv_real(f)->pMethods->xShmLock(tv_real(f), offset, n, flags);
}
static void tv_shm_barrier(sqlite3_file *f)
{
    tv_real(f)->pMethods->xShmBarrier(tv_real(f));
}
static int tv_shm_unmap(sqlite3_file *f, int del)
{
    return tv_real(f)->pMethods->xShmUnmap(tv_real(f), del);
}

/* Version 2: no xFetch/xUnfetch, so SQLite does not memory-map around us. */
static const sqlite3_io_methods tv_methods = {
    .iVersion = 2,
    .xClose = tv_close,
    .xRead = tv_read,
    .xWrite = tv_write,
    .xTruncate = tv_truncate,
    .xSync = tv_sync,
    .xFileSize = tv_file_size,
    .xLock = tv_lock,
    .xUnlock = tv_unlock,
    .xCheckReservedLock = tv_check_reserved,
    .xFileControl = tv_file_control,
    .xSectorSize = tv_sector_size,
    .xDeviceCharacteristics = tv_device,
    .xShmMap = tv_shm_map,
    .xShmLock = tv_shm_lock,
    .xShmBarrier = tv_shm_barrier,
    .xShmUnmap = tv_shm_unmap,
};

static int tv_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *f, int flags, int *out_flags)
{
    (void)vfs;
    struct tv_file *tf = (struct tv_file *)f;
    tf->real = (sqlite3_file *)(tf + 1);
    tf->path = NULL;
    tf->name = name;
    int rc = tv.real->xOpen(tv.real, name, tf->real, flags, out_flags);
    /* SQLite calls xClose only when pMethods is set, so set it only when
     * the real file is open. */
    tf->base.pMethods = tf->real->pMethods != NULL ? &tv_methods : NULL;
    if (rc == SQLITE_OK && tv.tracking && name != NULL) {
        pthread_mutex_lock(&tv.mu);
        struct tv_path *p = tv_path_get(name);
        if (p == NULL) {
            tv.paths = realloc(tv.paths, (tv.npaths + 1) * sizeof *tv.paths);
            p = calloc(1, sizeof *p);
            p->name = strdup(name);
            tv.paths[tv.npaths++] = p;
            sqlite3_int64 size = 0;
            tf->real->pMethods->xFileSize(tf->real, &size);
            p->synced_size = size;
        }
        tf->path = p;
        pthread_mutex_unlock(&tv.mu);
    }
    return rc;
}
static int tv_delete(sqlite3_vfs *vfs, const char *name, int sync_dir)
{
    (void)vfs;
    if (atomic_load(&tv.dead)) {
        return SQLITE_IOERR_DELETE;
    }
    pthread_mutex_lock(&tv.mu);
    struct tv_path *p = tv_path_get(name);
    if (p != NULL) {
        tv_undo_clear(p);
        p->synced_size = 0;
    }
    pthread_mutex_unlock(&tv.mu);
    return tv.real->xDelete(tv.real, name, sync_dir);
}
static int tv_access(sqlite3_vfs *vfs, const char *name, int flags, int *out)
{
    (void)vfs;
    return tv.real->xAccess(tv.real, name, flags, out);
}
static int tv_full_pathname(sqlite3_vfs *vfs, const char *name, int n, char *out)
{
    (void)vfs;
    return tv.real->xFullPathname(tv.real, name, n, out);
}
static int tv_randomness(sqlite3_vfs *vfs, int n, char *out)
{
    (void)vfs;
    return tv.real->xRandomness(tv.real, n, out);
}
static int tv_sleep(sqlite3_vfs *vfs, int us)
{
    (void)vfs;
    return tv.real->xSleep(tv.real, us);
}
static int tv_current_time(sqlite3_vfs *vfs, double *out)
{
    (void)vfs;
    return tv.real->xCurrentTime(tv.real, out);
}
static int tv_last_error(sqlite3_vfs *vfs, int n, char *out)
{
    (void)vfs;
    return tv.real->xGetLastError(tv.real, n, out);
}

static void tv_install(void)
{
    sqlite3_vfs *real = sqlite3_vfs_find(NULL);
    if (real == NULL) {
        fail_msg("no default SQLite VFS");
        return;
    }
    tv.real = real;
    atomic_store(&tv.fail_in, -1);
    atomic_store(&tv.cut_in, -1);
    tv.vfs = (sqlite3_vfs){
        .iVersion = 1,
        .szOsFile = (int)sizeof(struct tv_file) + real->szOsFile,
        .mxPathname = real->mxPathname,
        .zName = "sluice-test-faults",
        .xOpen = tv_open,
        .xDelete = tv_delete,
        .xAccess = tv_access,
        .xFullPathname = tv_full_pathname,
        .xDlOpen = NULL,
        .xRandomness = tv_randomness,
        .xSleep = tv_sleep,
        .xCurrentTime = tv_current_time,
        .xGetLastError = tv_last_error,
    };
    assert_int_equal(sqlite3_vfs_register(&tv.vfs, 1), SQLITE_OK);
}

/* Disk full from now on (TV_FULL_GROW) or not (TV_FULL_OFF). */
static void tv_set_full(enum tv_full mode)
{
    atomic_store(&tv.full, (int)mode);
}

/* From now on the shared-memory file of every database whose name
 * contains substr cannot grow (ENOSPC); "" ends it. */
static void tv_fail_shm_of(const char *substr)
{
    pthread_mutex_lock(&tv.mu);
    snprintf(tv.shm_fail, sizeof tv.shm_fail, "%s", substr);
    pthread_mutex_unlock(&tv.mu);
}

/* Reads of the file whose name ends with suffix fail with rc from the
 * n-th one from now (0: the next) on: only that one (once) or every one
 * after it. "" ends it. */
static void tv_fail_reads_of(const char *suffix, int64_t n, bool once, int rc)
{
    pthread_mutex_lock(&tv.mu);
    snprintf(tv.read_fail, sizeof tv.read_fail, "%s", suffix);
    tv.read_fail_in = n;
    tv.read_fail_once = once;
    tv.read_fail_rc = rc;
    pthread_mutex_unlock(&tv.mu);
}

/* The n-th write from now (0: the next) fails with rc, once. */
static void tv_fail_write_at(int64_t n, int rc)
{
    atomic_store(&tv.fail_rc, rc);
    atomic_store(&tv.fail_in, n);
}

/* Logs unsynced writes of the files opened from now on (true), or stops
 * and forgets every log (false; files stay as they are). */
static void tv_track(bool on)
{
    pthread_mutex_lock(&tv.mu);
    for (size_t i = 0; i < tv.npaths; i++) {
        tv_undo_clear(tv.paths[i]);
        free(tv.paths[i]->undo);
        free(tv.paths[i]->name);
        free(tv.paths[i]);
    }
    free(tv.paths);
    tv.paths = NULL;
    tv.npaths = 0;
    tv.tracking = on;
    pthread_mutex_unlock(&tv.mu);
}

/* The power goes at the n-th write or sync from now (0: the next); seed
 * picks which unsynced writes land. tv_revive ends the outage. */
static void tv_cut_at(int64_t n, unsigned seed)
{
    tv.seed = seed;
    atomic_store(&tv.dead, false);
    atomic_store(&tv.cut_in, n);
}

static bool tv_was_cut(void)
{
    return atomic_load(&tv.dead);
}

static void tv_revive(void)
{
    atomic_store(&tv.cut_in, -1);
    atomic_store(&tv.dead, false);
}

#endif
