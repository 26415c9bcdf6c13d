/*
 * gw_move.h -- (gateway-internal) message move tasks (DLQ redrive), the
 * machinery both doors use: SQS's StartMessageMoveTask family
 * (gw_act_move.c) and the admin API's /api/redrives (gw_admin_redrive.c).
 * One registry, one runner, one history, whichever door started a task.
 *
 * History is durable (gw_opstore, ops.db): at most GW_MOVE_HISTORY tasks
 * per source queue, newest first. A task that was running when the
 * process stopped shows FAILED with reason "Interrupted" after the
 * restart; the messages it moved stay moved (each batch is a commit), and
 * a new task moves the rest.
 *
 * Threading: start on a loop thread (the runner lives on that loop);
 * visit and cancel from any thread (the registry mutex).
 */
#ifndef SLUICE_GW_MOVE_H
#define SLUICE_GW_MOVE_H

#include "gw_act.h"
#include "gw_opstore.h"
#include "gw_sqs_move.h"

#define GW_MOVE_HISTORY 10 /* tasks kept per source queue (ListMessageMoveTasks' max) */

/* What a new task moves. Strings are copied. */
struct gw_move_spec {
    const char *tenant;
    const char *source; /* queue name */
    uint64_t source_id;
    const char *source_arn;
    const char *destination; /* NULL: each message back to its source */
    uint64_t dest_id;        /* 0 with destination NULL */
    const char *dest_arn;
    int32_t rate;    /* messages a second; 0: as fast as the system allows */
    int64_t to_move; /* the source's ready messages now */
};

/* Starts a task on loop l; id receives its id. Returns SL_OK, or SL_EEXIST
 * when a task already runs on that source (nothing started). */
int gw__move_start(struct gw_api_loop *l, const struct gw_move_spec *spec,
                   char id[GW_SQS_TASK_ID_LEN + 1]);

/* A task as visit shows it: its stored form (gw_opstore.h; status is one
 * of RUNNING, CANCELLING, COMPLETED, CANCELLED, FAILED, and error is set
 * for FAILED only) and what only a live registry knows. Every pointer is
 * valid during the call only. */
struct gw_move_view {
    struct gw_op_task task;
    const char *handle; /* the SQS TaskHandle */
    bool running;       /* RUNNING (Cancel applies) */
    bool held;          /* RUNNING, waiting for a destination paused for enqueue */
};

typedef void gw_move_visit_fn(void *arg, const struct gw_move_view *v);

/* Calls fn for up to max tasks, newest first, that match every filter
 * given: source_id (0: any), tenant and id (NULL: any). Returns how many. */
size_t gw__move_visit(struct gw_api *api, uint64_t source_id, const char *tenant, const char *id,
                      size_t max, gw_move_visit_fn *fn, void *arg);

/* Asks the RUNNING task id (of source_id; 0: any source) to stop: it is
 * CANCELLING until its runner's next tick, then CANCELLED. SL_OK with
 * *moved so far, or SL_ENOTFOUND (no such task, or not running). */
int gw__move_cancel(struct gw_api *api, uint64_t source_id, const char *id, int64_t *moved);

/* api_init: loads the history; loop_drain: the loop's tasks stop taking
 * batches (one in flight still commits); api_free: frees the registry. */
extern const struct gw_act_hooks gw__move_hooks;

#endif
