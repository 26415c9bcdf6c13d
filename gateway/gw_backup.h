/*
 * gw_backup.h -- (gateway-internal) online backups and their restore
 * (gw_backup.c): every partition, the catalog, the engine manifest and
 * ops.db, copied while the gateway serves (SQLite VACUUM INTO, one
 * snapshot per file), described by a manifest.json with each file's size
 * and SHA-256; and the offline restore that checks them and puts them in
 * place of a data directory. docs/operations.md has the procedure.
 *
 * Threading: gw__backup_write blocks for the copies: run it off the I/O
 * loops (the admin route uses libuv's thread pool). One backup at a time
 * per process (SL_EBUSY otherwise).
 */
#ifndef SLUICE_GW_BACKUP_H
#define SLUICE_GW_BACKUP_H

#include <jansson.h>

#include "gw_act.h"

#define GW_BACKUP_MANIFEST "manifest.json"

/* Writes a backup of api's storage into dir: an absolute path that does
 * not exist yet (made here, mode 0700) or is an empty directory. On SL_OK
 * *manifest (owned) is what manifest.json holds. Returns SL_OK, SL_EINVAL
 * (dir not absolute, not empty, cannot be made; err says), SL_EBUSY
 * (another backup runs) or SL_EIO (a copy failed; err says; the
 * directory holds a partial copy and no manifest.json). */
int gw__backup_write(struct gw_api *api, const char *dir, json_t **manifest, char *err,
                     size_t errlen);

/* Checks dir's manifest.json and every file it lists (size, SHA-256),
 * then copies them into data_dir, which must not hold a sluice data
 * directory yet (no manifest, no catalog.db). Each file is written to a
 * temporary name, fsync'd and renamed. Returns SL_OK, or SL_EINVAL /
 * SL_EIO with a sentence in err. Main thread, gateway not running on
 * data_dir. */
int gw_backup_restore(const char *dir, const char *data_dir, char *err, size_t errlen);

#endif
