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
 * Stack: above gw_opstore.c and the engine's backup; below the admin
 * route (gw_admin_ops.c) and main's --restore.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
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
#include "gw_opstore.h"

#define LOG_MOD "backup"
#define BACKUP_FORMAT 1
#define BACKUP_MAX_FILES (PART_MAX_PARTITIONS + 4)
#define BACKUP_NICE 10 /* the copying thread's niceness while it copies */

static atomic_bool backup_running;

/* SHA-256 (hex) and size of path. */
static bool file_digest(const char *path, char hex[65], uint64_t *bytes)
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

/* dir exists and is empty, or is made now. */
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
    for (size_t i = 0; i < w->n; i++) {
        char hex[65];
        uint64_t bytes;
        snprintf(path, sizeof path, "%s/%s", dir, w->names[i]);
        if (sl_fsync_path(path) != SL_OK || !file_digest(path, hex, &bytes)) {
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
    int rc = json_dump_file(m, tmp, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    if (rc != 0 || sl_fsync_path(tmp) != SL_OK || rename(tmp, path) != 0 ||
        sl_fsync_path(dir) != SL_OK) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        json_decref(m);
        return SL_EIO;
    }
    *out = m;
    return SL_OK;
}

int gw__backup_write(struct gw_api *api, const char *dir, json_t **manifest, char *err,
                     size_t errlen)
{
    bool idle = false;
    if (!atomic_compare_exchange_strong(&backup_running, &idle, true)) {
        snprintf(err, errlen, "another backup is running");
        return SL_EBUSY;
    }
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
    int rc = prepare_dir(dir, err, errlen);
    if (rc == SL_OK) {
        rc = part_engine_backup(api->engine, dir, note_file, w, err, errlen);
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
    /* dir is the operator's JSON string: any byte but NUL */
    char shown[4 * 512];
    sl_log_escape(dir, strlen(dir), shown, sizeof shown);
    if (rc == SL_OK) {
        sl_log(SL_LOG_INFO, LOG_MOD, "backup to \"%s\": %zu files in %.1f s", shown, w->n,
               (double)(sl_mono_ns() - t0) / 1e9);
    } else {
        char why[4 * 512];
        sl_log_escape(err, strlen(err), why, sizeof why);
        sl_log(SL_LOG_ERROR, LOG_MOD, "backup to \"%s\" failed: %s", shown, why);
    }
    free(w);
    if (reniced) {
        setpriority(PRIO_PROCESS, (id_t)tid, nice_before);
    }
    atomic_store(&backup_running, false);
    return rc;
}

/* ---- restore ------------------------------------------------------------------ */

/* A file name a manifest may list: no path, nothing hidden. */
static bool plain_name(const char *name)
{
    return name != NULL && name[0] != '\0' && name[0] != '.' && strchr(name, '/') == NULL &&
           strlen(name) < 64;
}

static int copy_file(const char *src, const char *dst_dir, const char *name, char *err,
                     size_t errlen)
{
    char tmp[4096], dst[4096];
    snprintf(tmp, sizeof tmp, "%s/%s.restore-tmp", dst_dir, name);
    snprintf(dst, sizeof dst, "%s/%s", dst_dir, name);
    FILE *in = fopen(src, "rb");
    FILE *out = in != NULL ? fopen(tmp, "wb") : NULL;
    bool ok = in != NULL && out != NULL;
    char buf[65536];
    size_t n;
    while (ok && (n = fread(buf, 1, sizeof buf, in)) > 0) {
        ok = fwrite(buf, 1, n, out) == n;
    }
    ok = ok && !ferror(in) && fflush(out) == 0 && fsync(fileno(out)) == 0;
    if (out != NULL) {
        ok = fclose(out) == 0 && ok;
    }
    if (in != NULL) {
        fclose(in);
    }
    if (!ok || rename(tmp, dst) != 0) {
        snprintf(err, errlen, "%s -> %s: %s", src, dst, strerror(errno));
        unlink(tmp);
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
        if (!file_digest(path, hex, &have)) {
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
    struct stat st;
    char probe[4096];
    snprintf(probe, sizeof probe, "%s/manifest", data_dir);
    bool occupied = stat(probe, &st) == 0;
    snprintf(probe, sizeof probe, "%s/catalog.db", data_dir);
    occupied = occupied || stat(probe, &st) == 0;
    if (rc == SL_OK && occupied) {
        snprintf(err, errlen,
                 "%s already holds a sluice data directory; move it away first (restore never "
                 "overwrites data)",
                 data_dir);
        rc = SL_EINVAL;
    }
    if (rc == SL_OK && mkdir(data_dir, 0700) != 0 && errno != EEXIST) {
        snprintf(err, errlen, "cannot make %s: %s", data_dir, strerror(errno));
        rc = SL_EIO;
    }
    size_t i;
    json_t *f;
    json_array_foreach(files, i, f)
    {
        if (rc != SL_OK) {
            break;
        }
        const char *name = json_string_value(json_object_get(f, "name"));
        snprintf(path, sizeof path, "%s/%s", dir, name);
        rc = copy_file(path, data_dir, name, err, errlen);
    }
    if (rc == SL_OK && sl_fsync_path(data_dir) != SL_OK) {
        snprintf(err, errlen, "%s: %s", data_dir, strerror(errno));
        rc = SL_EIO;
    }
    json_decref(m);
    return rc;
}
