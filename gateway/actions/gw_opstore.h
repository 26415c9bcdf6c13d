/*
 * gw_opstore.h -- (gateway-internal) the gateway's durable operations
 * state (gw_opstore.c): message move-task history and paused queues, in
 * data_dir/ops.db beside the engine's files. They are operators' state,
 * not messages: the engine's catalog stays the queues' alone.
 *
 * Threading: any thread; calls are serialised by the store's mutex and
 * each is one short SQLite transaction (rare: a task's start, progress at
 * most once a second, its end; a pause).
 */
#ifndef SLUICE_GW_OPSTORE_H
#define SLUICE_GW_OPSTORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sl.h"

struct gw_opstore;

#define GW_OPSTORE_FILE "ops.db"

/* Opens or creates data_dir/ops.db. fsync: every commit reaches the disk
 * (durability: fsync), else it survives a crash of the process (os), as
 * the engine's own files do. Returns SL_OK and *out, or SL_EIO with a
 * sentence in err. */
int gw_opstore_open(const char *data_dir, bool fsync, struct gw_opstore **out, char *err,
                    size_t errlen);
void gw_opstore_close(struct gw_opstore *s);
/* The file's path (borrowed; for backups). */
const char *gw_opstore_path(const struct gw_opstore *s);

/* Writes a consistent copy of ops.db to path (VACUUM INTO on a read-only
 * connection of its own). SL_OK, or SL_EIO with a sentence in err. */
int gw_opstore_backup(struct gw_opstore *s, const char *path, char *err, size_t errlen);

/* One move task as stored. Strings are borrowed (NULL: none). */
struct gw_op_task {
    const char *id;
    const char *tenant;
    const char *source; /* queue name */
    const char *source_arn;
    const char *destination; /* queue name, NULL: each message's source */
    const char *dest_arn;
    uint64_t source_id;
    int32_t rate;
    int64_t to_move;
    int64_t moved;
    const char *status; /* RUNNING, COMPLETED, ... */
    const char *error;  /* NULL: none */
    uint64_t started_ms;
    uint64_t finished_ms; /* 0: not finished */
};

/* Upserts t by id, keeping at most keep tasks of its source (the newest).
 * Returns SL_OK or SL_EIO (logged). */
int gw_opstore_put_task(struct gw_opstore *s, const struct gw_op_task *t, size_t keep);

typedef void gw_op_task_fn(void *arg, const struct gw_op_task *t);
/* Calls fn for every stored task, oldest first. SL_OK or SL_EIO. */
int gw_opstore_load_tasks(struct gw_opstore *s, gw_op_task_fn *fn, void *arg);

/* Sets queue_id's pause flags (0 clears them). SL_OK or SL_EIO. */
int gw_opstore_put_pause(struct gw_opstore *s, uint64_t queue_id, unsigned flags);

typedef void gw_op_pause_fn(void *arg, uint64_t queue_id, unsigned flags);
/* Calls fn for every paused queue. SL_OK or SL_EIO. */
int gw_opstore_load_pauses(struct gw_opstore *s, gw_op_pause_fn *fn, void *arg);

#endif
