/*
 * gw_backup.h -- (gateway-internal) online backups and their restore
 * (gw_backup.c): every partition, the catalog, the engine manifest and
 * ops.db, copied while the gateway serves (SQLite VACUUM INTO, one
 * snapshot per file), described by a manifest.json with each file's size
 * and SHA-256; and the offline restore that checks them and puts them in
 * place of a data directory. docs/operations.md has the procedure.
 *
 * Threading: gw__backup_run blocks for the copies: run it off the I/O
 * loops (the admin route uses libuv's thread pool). One backup at a time
 * per process (SL_EBUSY otherwise); its progress can be read and it can
 * be stopped from any thread.
 */
#ifndef SLUICE_GW_BACKUP_H
#define SLUICE_GW_BACKUP_H

#include <jansson.h>

#include "gw_act.h"
#include "gw_admin.h"

#define GW_BACKUP_MANIFEST "manifest.json"

/* Begins a backup into dir: an absolute path that does not exist yet
 * (made here, mode 0700) or is an empty directory of this user's alone.
 * On SL_OK the backup is under way as far as gw__backup_status() shows
 * (its number in *id), and exactly one gw__backup_run() or
 * gw__backup_abandon() must follow. Returns SL_OK, SL_EINVAL (dir not
 * absolute, not empty, cannot be made; err says), SL_EBUSY (another
 * backup runs) or SL_ECLOSED (the gateway is shutting down). Quick: any
 * thread. */
int gw__backup_begin(const char *dir, uint64_t *id, char *err, size_t errlen);

/* The copies of the begun backup: every partition, the catalog, the
 * engine manifest, ops.db, then manifest.json. Blocks as long as the
 * copies take (off the I/O loops). On SL_OK *manifest (owned) is what
 * manifest.json holds; otherwise *manifest is NULL, err says why, and
 * what was written is removed (the directory too, when begin made it).
 * Returns SL_OK, SL_EIO (a copy failed) or SL_ECLOSED (gw_backup_stop). */
int gw__backup_run(struct gw_api *api, json_t **manifest, char *err, size_t errlen);

/* Ends a begun backup that will not run (its job could not be queued):
 * removes the directory as gw__backup_run does on failure. */
void gw__backup_abandon(const char *why);

/* The running backup, or the last one: {"id", "state": "running" | "done"
 * | "failed" | "stopped", "dir", "started_ms", "ended_ms" (once ended),
 * "bytes_total", "bytes_done", "percent" (an estimate, at most 99 while
 * it runs), "error" (failed, stopped), "manifest" (done)}; {"state":
 * "none"} before the first. Owned by the caller. Any thread. */
json_t *gw__backup_status(void);
#endif
