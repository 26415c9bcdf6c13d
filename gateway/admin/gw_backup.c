/*
 * gw_backup.c -- online backups and offline restore (gw_backup.h).
 *
 * A backup directory holds the engine's files as part_engine_backup
 * wrote them (manifest, catalog.db, part-NNNN.db), ops.db (move-task
 * history, paused queues), and manifest.json, written last: a directory
 * without it is an unfinished backup and restore refuses it.
 *
 * manifest.json: {"format": 1, "created_ms": ..., "partitions": P,
 * "files": [{"name": ..., "bytes": ..., "sha256": ...}, ...]}.
 *
 * One backup runs at a time per process, so its state (what the admin
 * API's GET /api/backup shows: running with its bytes so far, or how the
 * last one ended) is the module's own, behind a mutex: begun on the admin
 * loop, copied on a pool thread, stopped from main at SIGTERM. A backup
 * that fails or is stopped removes what it wrote (and the directory, if
 * it made it): nothing that is not a whole backup is left to look like
 * one.
 *
 * Stack: above gw_opstore.c and the engine's backup; below the admin
 * route (gw_admin_ops.c) and main's --restore.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "gw_backup.h"
#include "gw_act.h"

#define LOG_MOD "backup"
#define BACKUP_FORMAT 1
#define BACKUP_MAX_FILES (PART_MAX_PARTITIONS + 4)
#define BACKUP_NICE 10 /* the copying thread's niceness while it copies */

static atomic_bool backup_running;

/* The steps of a backup GET /api/backup reports: the copies, then
 * manifest.json's sync and SHA-256 of every file (a few seconds a GB,
 * which the copies' percent cannot show), then done. */
enum backup_step { STEP_COPYING, STEP_HASHING, STEP_DONE };

static const char *const step_names[] = {"copying", "hashing", "done"};

/* The step of the backup under way or the last one, and the hashing's
 * bytes: written by the backup's thread, read by GET /api/backup. */
static struct {
    _Atomic int step; /* enum backup_step */
    _Atomic uint64_t bytes_done;
    _Atomic uint64_t bytes_total;
} hashing;

/* SHA-256 (hex) and size of path; each block read is added to *progress
 * when that is not NULL. */
static bool file_digest(const char *path, char hex[65], uint64_t *bytes, _Atomic uint64_t *progress)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        return false;
    }
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    EVP_DigestInit_ex(md, EVP_sha256(), NULL);
    unsigned char buf[65536];
    size_t n;
    *bytes = 0;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) {
        EVP_DigestUpdate(md, buf, n);
        *bytes += n;
        if (progress != NULL) {
            atomic_fetch_add_explicit(progress, n, memory_order_relaxed);
        }
    }
    bool ok = !ferror(f);
    fclose(f);
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    EVP_DigestFinal_ex(md, digest, &len);
    EVP_MD_CTX_free(md);
    sl_hex_encode(digest, len, hex);
    return ok;
}

/* dir is made now (0700), or exists already as a directory of ours that
 * nobody else may write into, and is empty. The files go in with O_EXCL |
 * O_NOFOLLOW, but a directory someone else can write to could still be
 * raced: a name planted between a check and SQLite's VACUUM INTO. */
static int prepare_dir(const char *dir, char *err, size_t errlen)
{
    if (dir[0] != '/') {
        snprintf(err, errlen, "the backup directory must be an absolute path, not %s", dir);
        return SL_EINVAL;
    }
    if (mkdir(dir, 0700) == 0) {
        return SL_OK;
    }
    if (errno != EEXIST) {
        snprintf(err, errlen, "cannot make %s: %s", dir, strerror(errno));
        return SL_EINVAL;
    }
    struct stat st;
    if (lstat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "%s is not a directory", dir);
        return SL_EINVAL;
    }
    if (st.st_uid != geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
        snprintf(err, errlen,
                 "%s must be owned by sluiced's user and writable by it alone (or not exist: "
                 "it is then made with mode 0700)",
                 dir);
        return SL_EINVAL;
    }
    DIR *d = opendir(dir);
    if (d == NULL) {
        snprintf(err, errlen, "%s: %s", dir, strerror(errno));
        return SL_EINVAL;
    }
    bool empty = true;
    struct dirent *ent;
    while (empty && (ent = readdir(d)) != NULL) {
        empty = strcmp(ent->d_name, ".") == 0 || strcmp(ent->d_name, "..") == 0;
    }
    closedir(d);
    if (!empty) {
        snprintf(err, errlen, "%s is not empty: a backup goes into a new directory", dir);
        return SL_EINVAL;
    }
    return SL_OK;
}

struct written {
    char names[BACKUP_MAX_FILES][32];
    size_t n;
};

static void note_file(void *arg, const char *name)
{
    struct written *w = arg;
    if (w->n < BACKUP_MAX_FILES) {
        snprintf(w->names[w->n++], sizeof w->names[0], "%s", name);
    }
}

/* manifest.json for the files written, fsync'd, renamed into place. */
static int write_manifest(const char *dir, const struct written *w, uint32_t partitions,
                          json_t **out, char *err, size_t errlen)
{
    json_t *files = json_array();
    char path[4096];
    uint64_t total = 0;
    for (size_t i = 0; i < w->n; i++) {
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, w->names[i]);
        total += stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
    }
    atomic_store(&hashing.bytes_total, total);
    atomic_store(&hashing.step, STEP_HASHING);
    for (size_t i = 0; i < w->n; i++) {
        char hex[65];
        uint64_t bytes;
        snprintf(path, sizeof path, "%s/%s", dir, w->names[i]);
        if (sl_fsync_path(path) != SL_OK || !file_digest(path, hex, &bytes, &hashing.bytes_done)) {
            snprintf(err, errlen, "%s: %s", path, strerror(errno));
            json_decref(files);
            return SL_EIO;
        }
        json_array_append_new(files, json_pack("{s:s, s:I, s:s}", "name", w->names[i], "bytes",
                                               (json_int_t)bytes, "sha256", hex));
    }
    json_t *m =
        json_pack("{s:i, s:I, s:I, s:o}", "format", BACKUP_FORMAT, "created_ms",
                  (json_int_t)sl_wall_ms(), "partitions", (json_int_t)partitions, "files", files);
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s/" GW_BACKUP_MANIFEST ".tmp", dir);
    snprintf(path, sizeof path, "%s/" GW_BACKUP_MANIFEST, dir);
    int fd = -1;
    int rc = sl_file_create(tmp, &fd) == SL_OK
                 ? json_dumpfd(m, fd, JSON_INDENT(2) | JSON_PRESERVE_ORDER)
                 : -1;
    if (fd >= 0) {
        rc = fsync(fd) == 0 && rc == 0 ? 0 : -1;
        rc = close(fd) == 0 && rc == 0 ? 0 : -1;
    }
    if (rc != 0 || rename(tmp, path) != 0 || sl_fsync_path(dir) != SL_OK) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        json_decref(m);
        return SL_EIO;
    }
    *out = m;
    return SL_OK;
}

/* The one backup of the process: the one under way, or the last one. */
static struct {
    pthread_mutex_t mu; /* guards what follows but pg, running and stopping */
    struct part_backup_progress pg;
    atomic_bool stopping; /* gw_backup_stop() was called: no backup from now on */
    uint64_t id;          /* 0: none yet */
    char dir[4096];
    bool made_dir; /* begin made dir (remove it, not only its files, on failure) */
    uint64_t started_ms;
    uint64_t ended_ms; /* 0 while it runs */
    int status;        /* SL_OK when done; meaningful once ended */
    char err[512];
    json_t *manifest; /* when done (owned) */
} cur = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* Empties dir of what a failed or stopped copy left there, and removes
 * dir itself when the backup made it: a directory that is not a whole
 * backup must not look like one, and a full disk wants its space back.
 * Only this process's user can write into dir and it was empty when the
 * backup began (prepare_dir), so everything in it is the backup's. */
static void remove_partial(const char *dir, bool made)
{
    DIR *d = opendir(dir);
    if (d == NULL) {
        return;
    }
    char path[4096];
    struct dirent *ent;
    while ((ent = readdir(d)) != NULL) {
        if (strcmp(ent->d_name, ".") != 0 && strcmp(ent->d_name, "..") != 0) {
            snprintf(path, sizeof path, "%s/%s", dir, ent->d_name);
            (void)unlink(path);
        }
    }
    closedir(d);
    if (made) {
        (void)rmdir(dir);
    }
}

int gw__backup_begin(const char *dir, uint64_t *id, char *err, size_t errlen)
{
    if (atomic_load(&cur.stopping)) {
        snprintf(err, errlen, "the gateway is shutting down");
        return SL_ECLOSED;
    }
    bool idle = false;
    if (!atomic_compare_exchange_strong(&backup_running, &idle, true)) {
        snprintf(err, errlen, "another backup is running");
        return SL_EBUSY;
    }
    struct stat st;
    bool existed = lstat(dir, &st) == 0;
    int rc = prepare_dir(dir, err, errlen);
    if (rc != SL_OK) {
        atomic_store(&backup_running, false);
        return rc;
    }
    pthread_mutex_lock(&cur.mu);
    *id = ++cur.id;
    snprintf(cur.dir, sizeof cur.dir, "%s", dir);
    cur.made_dir = !existed;
    cur.started_ms = sl_wall_ms();
    cur.ended_ms = 0;
    cur.status = SL_OK;
    cur.err[0] = '\0';
    json_decref(cur.manifest);
    cur.manifest = NULL;
    atomic_store(&cur.pg.bytes_done, 0);
    atomic_store(&cur.pg.bytes_total, 0);
    atomic_store(&hashing.step, STEP_COPYING);
    atomic_store(&hashing.bytes_done, 0);
    atomic_store(&hashing.bytes_total, 0);
    pthread_mutex_unlock(&cur.mu);
    return SL_OK;
}

/* Records how the backup ended and lets the next one begin. */
static void finish(int status, const char *err, json_t *manifest)
{
    pthread_mutex_lock(&cur.mu);
    cur.ended_ms = sl_wall_ms();
    cur.status = status;
    if (status == SL_OK) {
        atomic_store(&hashing.step, STEP_DONE);
    }
    snprintf(cur.err, sizeof cur.err, "%s", status == SL_OK ? "" : err);
    /* a copy: the caller may hand its own to another thread's reply */
    cur.manifest = manifest != NULL ? json_deep_copy(manifest) : NULL;
    pthread_mutex_unlock(&cur.mu);
    atomic_store(&backup_running, false);
}

/* The copies into dir (begun), then manifest.json. */
static int copy_all(struct gw_api *api, const char *dir, struct written *w, json_t **manifest,
                    char *err, size_t errlen)
{
    /* stop is not cleared: a backup begun as shutdown starts ends at once */
    int rc = part_engine_backup(api->engine, dir, &cur.pg, note_file, w, err, errlen);
    if (rc == SL_OK && atomic_load(&cur.pg.stop)) {
        snprintf(err, errlen, "stopped before ops.db");
        rc = SL_ECLOSED;
    }
    if (rc == SL_OK) {
        char dst[4096];
        snprintf(dst, sizeof dst, "%s/" GW_OPSTORE_FILE, dir);
        rc = gw_opstore_backup(api->ops, dst, err, errlen);
        if (rc == SL_OK) {
            note_file(w, GW_OPSTORE_FILE);
        }
    }
    if (rc == SL_OK) {
        rc = write_manifest(dir, w, part_engine_partitions(api->engine), manifest, err, errlen);
    }
    return rc;
}

int gw__backup_run(struct gw_api *api, json_t **manifest, char *err, size_t errlen)
{
    char dir[4096];
    pthread_mutex_lock(&cur.mu);
    snprintf(dir, sizeof dir, "%s", cur.dir);
    bool made = cur.made_dir;
    pthread_mutex_unlock(&cur.mu);
    SL_ASSERT(atomic_load(&backup_running));
    *manifest = NULL;
    uint64_t t0 = sl_mono_ns();
    /* The copies compete with the partition writers for CPU: this thread
     * (a pool thread, Linux schedules threads one by one) yields to them
     * while it copies, and is put back after -- where the process may
     * raise its priority again (root, CAP_SYS_NICE); otherwise the pool
     * thread stays nice, which costs little: sluice runs only backups and
     * peeks on libuv's pool, and a peek may yield to the writers too. */
    pid_t tid = (pid_t)syscall(SYS_gettid);
    errno = 0;
    int nice_before = getpriority(PRIO_PROCESS, (id_t)tid);
    bool reniced = errno == 0 && setpriority(PRIO_PROCESS, (id_t)tid, BACKUP_NICE) == 0;
    struct written *w = sl_xcalloc(1, sizeof *w);
    int rc = copy_all(api, dir, w, manifest, err, errlen);
    if (rc != SL_OK) {
        remove_partial(dir, made);
    }
    /* dir is the operator's JSON string: any byte but NUL */
    char shown[4 * 512];
    sl_log_escape(dir, strlen(dir), shown, sizeof shown);
    if (rc == SL_OK) {
        sl_log(SL_LOG_INFO, LOG_MOD, "backup to \"%s\": %zu files in %.1f s", shown, w->n,
               (double)(sl_mono_ns() - t0) / 1e9);
    } else {
        char why[4 * 512];
        sl_log_escape(err, strlen(err), why, sizeof why);
        sl_log(rc == SL_ECLOSED ? SL_LOG_WARN : SL_LOG_ERROR, LOG_MOD,
               "backup to \"%s\" %s: %s; its partial copy is removed", shown,
               rc == SL_ECLOSED ? "stopped" : "failed", why);
    }
    free(w);
    if (reniced) {
        setpriority(PRIO_PROCESS, (id_t)tid, nice_before);
    }
    finish(rc, err, *manifest);
    return rc;
}

void gw__backup_abandon(const char *why)
{
    pthread_mutex_lock(&cur.mu);
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", cur.dir);
    bool made = cur.made_dir;
    pthread_mutex_unlock(&cur.mu);
    remove_partial(dir, made);
    finish(SL_ECLOSED, why, NULL);
}

void gw_backup_stop(void)
{
    atomic_store(&cur.stopping, true);
    atomic_store(&cur.pg.stop, true);
}

static const char *state_name(bool running, int status)
{
    return running                ? "running"
           : status == SL_OK      ? "done"
           : status == SL_ECLOSED ? "stopped"
                                  : "failed";
}

json_t *gw__backup_status(void)
{
    pthread_mutex_lock(&cur.mu);
    if (cur.id == 0) {
        pthread_mutex_unlock(&cur.mu);
        return json_pack("{s:s}", "state", "none");
    }
    bool running = cur.ended_ms == 0;
    uint64_t total = atomic_load(&cur.pg.bytes_total);
    uint64_t done = atomic_load(&cur.pg.bytes_done);
    /* the copies are compacted, so the sizes only estimate; a running
     * backup never says 100 */
    int percent = !running && cur.status == SL_OK ? 100
                  : total == 0                    ? 0
                                                  : (int)SL_MIN(done * 100 / total, 99);
    json_t *o = json_pack("{s:I, s:s, s:s, s:I, s:I, s:I, s:i, s:s, s:I, s:I}", "id",
                          (json_int_t)cur.id, "state", state_name(running, cur.status), "dir",
                          cur.dir, "started_ms", (json_int_t)cur.started_ms, "bytes_total",
                          (json_int_t)total, "bytes_done", (json_int_t)done, "percent", percent,
                          "step", step_names[atomic_load(&hashing.step)], "hash_bytes_total",
                          (json_int_t)atomic_load(&hashing.bytes_total), "hash_bytes_done",
                          (json_int_t)atomic_load(&hashing.bytes_done));
    if (!running) {
        json_object_set_new(o, "ended_ms", json_integer((json_int_t)cur.ended_ms));
    }
    if (!running && cur.status != SL_OK) {
        json_object_set_new(o, "error", json_string(cur.err));
    }
    if (cur.manifest != NULL) {
        json_object_set(o, "manifest", cur.manifest);
    }
    pthread_mutex_unlock(&cur.mu);
    return o;
}

/* ---- restore ------------------------------------------------------------------ */

/* A file name a manifest may list: no path, nothing hidden. */
static bool plain_name(const char *name)
{
    return name != NULL && name[0] != '\0' && name[0] != '.' && strchr(name, '/') == NULL &&
           strlen(name) < 64;
}

/* src copied to dst, a new file, and synced. */
static int copy_file(const char *src, const char *dst, char *err, size_t errlen)
{
    int in = open(src, O_RDONLY | O_CLOEXEC);
    int out = -1;
    if (in >= 0) {
        (void)sl_file_create(dst, &out);
    }
    bool ok = in >= 0 && out >= 0;
    char buf[65536];
    ssize_t n = 0;
    while (ok && (n = read(in, buf, sizeof buf)) > 0) {
        for (ssize_t off = 0; ok && off < n;) {
            ssize_t w = write(out, buf + off, (size_t)(n - off));
            ok = w > 0;
            off += w > 0 ? w : 0;
        }
    }
    ok = ok && n == 0 && fsync(out) == 0;
    int saved = errno;
    if (out >= 0) {
        ok = close(out) == 0 && ok;
    }
    if (in >= 0) {
        close(in);
    }
    if (!ok) {
        snprintf(err, errlen, "%s -> %s: %s", src, dst, strerror(saved != 0 ? saved : EIO));
        return SL_EIO;
    }
    return SL_OK;
}

/* Checks every file the manifest lists against its size and digest. */
static int verify(const char *dir, const json_t *files, char *err, size_t errlen)
{
    size_t i;
    json_t *f;
    json_array_foreach(files, i, f)
    {
        const char *name = json_string_value(json_object_get(f, "name"));
        const char *want = json_string_value(json_object_get(f, "sha256"));
        json_int_t bytes = json_integer_value(json_object_get(f, "bytes"));
        char path[4096], hex[65];
        uint64_t have;
        if (!plain_name(name) || want == NULL) {
            snprintf(err, errlen, "%s/" GW_BACKUP_MANIFEST ": entry %zu is malformed", dir, i);
            return SL_EINVAL;
        }
        snprintf(path, sizeof path, "%s/%s", dir, name);
        if (!file_digest(path, hex, &have, NULL)) {
            snprintf(err, errlen, "%s: %s", path, strerror(errno));
            return SL_EIO;
        }
        if ((json_int_t)have != bytes || strcmp(hex, want) != 0) {
            snprintf(err, errlen,
                     "%s does not match the manifest (%llu bytes, sha256 %s; the manifest says "
                     "%lld bytes, %s): the backup is damaged",
                     path, (unsigned long long)have, hex, (long long)bytes, want);
            return SL_EINVAL;
        }
    }
    return SL_OK;
}

/* data_dir absent, or an empty directory. Anything in it -- even a
 * stray part-0003.db-wal, which SQLite would replay onto a restored
 * file -- is refused. */
static int restore_target_free(const char *data_dir, bool *exists, char *err, size_t errlen)
{
    struct stat st;
    *exists = lstat(data_dir, &st) == 0;
    if (!*exists) {
        if (errno == ENOENT) {
            return SL_OK;
        }
        snprintf(err, errlen, "%s: %s", data_dir, strerror(errno));
        return SL_EIO;
    }
    DIR *d = S_ISDIR(st.st_mode) ? opendir(data_dir) : NULL;
    if (d == NULL) {
        snprintf(err, errlen, "%s: %s", data_dir,
                 S_ISDIR(st.st_mode) ? strerror(errno)
                 : S_ISLNK(st.st_mode)
                     ? "is a symlink: restore renames a directory into place, so data_dir "
                       "must name the real directory"
                     : "exists and is not a directory");
        return SL_EINVAL;
    }
    const char *found = NULL;
    struct dirent *ent;
    while (found == NULL && (ent = readdir(d)) != NULL) {
        if (strcmp(ent->d_name, ".") != 0 && strcmp(ent->d_name, "..") != 0) {
            found = ent->d_name;
            snprintf(err, errlen,
                     "%s is not empty (it holds %s): restore never overwrites or mixes data; "
                     "move it away first",
                     data_dir, found);
        }
    }
    closedir(d);
    return found == NULL ? SL_OK : SL_EINVAL;
}

/* Removes the restore's scratch directory and whatever it holds: only
 * names the manifest listed were made in it. */
static void remove_scratch(const char *tmpdir, const json_t *files)
{
    char path[4096];
    size_t i;
    json_t *f;
    json_array_foreach(files, i, f)
    {
        const char *name = json_string_value(json_object_get(f, "name"));
        if (plain_name(name)) {
            snprintf(path, sizeof path, "%s/%s", tmpdir, name);
            unlink(path);
        }
    }
    if (rmdir(tmpdir) != 0) {
        sl_log(SL_LOG_WARN, LOG_MOD, "cannot remove %s: %s", tmpdir, strerror(errno));
    }
}

/* The backup into a scratch directory beside data_dir (same file system),
 * each copy checked against the manifest and synced, then renamed onto
 * data_dir in one step: a restore cut short (a full disk, a file size
 * limit, a damaged copy) leaves data_dir as it was, never a data
 * directory missing a partition. */
int gw_backup_restore(const char *dir, const char *data_dir, char *err, size_t errlen)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/" GW_BACKUP_MANIFEST, dir);
    json_error_t jerr;
    json_t *m = json_load_file(path, 0, &jerr);
    json_t *files = json_object_get(m, "files");
    if (m == NULL || !json_is_array(files) ||
        json_integer_value(json_object_get(m, "format")) != BACKUP_FORMAT) {
        snprintf(err, errlen, "%s: %s", path,
                 m == NULL ? jerr.text : "not a sluice backup manifest (format 1)");
        json_decref(m);
        return SL_EINVAL;
    }
    int rc = verify(dir, files, err, errlen);
    bool exists = false;
    if (rc == SL_OK) {
        rc = restore_target_free(data_dir, &exists, err, errlen);
    }
    /* data_dir without trailing slashes: the scratch directory is its
     * sibling, and the parent is synced after the rename */
    char target[4096], tmpdir[4096], parent[4096];
    snprintf(target, sizeof target, "%s", data_dir);
    for (size_t len = strlen(target); len > 1 && target[len - 1] == '/'; len--) {
        target[len - 1] = '\0';
    }
    snprintf(tmpdir, sizeof tmpdir, "%s.restore-XXXXXX", target);
    bool made = false;
    if (rc == SL_OK) {
        made = mkdtemp(tmpdir) != NULL;
        if (!made) {
            snprintf(err, errlen, "cannot make %s: %s", tmpdir, strerror(errno));
            rc = SL_EIO;
        }
    }
    size_t i;
    json_t *f;
    json_array_foreach(files, i, f)
    {
        if (rc != SL_OK) {
            break;
        }
        const char *name = json_string_value(json_object_get(f, "name"));
        char dst[4096];
        snprintf(path, sizeof path, "%s/%s", dir, name);
        snprintf(dst, sizeof dst, "%s/%s", tmpdir, name);
        rc = copy_file(path, dst, err, errlen);
    }
    if (rc == SL_OK) {
        rc = verify(tmpdir, files, err, errlen); /* what landed, not what was read */
    }
    if (rc == SL_OK && sl_fsync_path(tmpdir) != SL_OK) {
        snprintf(err, errlen, "%s: %s", tmpdir, strerror(errno));
        rc = SL_EIO;
    }
    /* rmdir fails on a directory that filled up meanwhile: nothing is
     * ever renamed over data */
    if (rc == SL_OK && ((exists && rmdir(target) != 0) || rename(tmpdir, target) != 0)) {
        snprintf(err, errlen, "%s -> %s: %s", tmpdir, target, strerror(errno));
        rc = SL_EIO;
    }
    if (rc == SL_OK) {
        const char *slash = strrchr(target, '/');
        size_t plen = slash == NULL ? 0 : slash == target ? 1 : (size_t)(slash - target);
        snprintf(parent, sizeof parent, "%s", plen == 0 ? "." : target);
        parent[plen == 0 ? 1 : plen] = '\0';
        if (sl_fsync_path(parent) != SL_OK) {
            snprintf(err, errlen, "%s: %s", parent, strerror(errno));
            rc = SL_EIO;
        }
    } else if (made) {
        remove_scratch(tmpdir, files);
    }
    json_decref(m);
    return rc;
}
