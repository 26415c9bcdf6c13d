/*
 * gw_pause.h -- (gateway-internal) paused queues (gw_pause.c): an
 * operator stops a queue's sends, its receives, or both, durably
 * (gw_opstore), without touching its messages.
 *
 * A send to a queue paused for enqueue fails with QueuePaused (a
 * non-retryable sender fault, in both SQS protocols). A receive on a
 * queue paused for dequeue takes nothing and answers empty after its wait
 * time, so long-polling consumers idle instead of spinning; at shutdown
 * the held receives answer at once. Receives that were already waiting
 * in the partitions when the pause came are stopped there
 * (part_queue_set_dequeue_paused): they lease nothing and answer empty
 * at their deadline.
 *
 * Threading: gw__pause_flags from any thread (lock-free while no queue
 * is paused, the common case); gw__pause_set from any thread; a hold on
 * its request's loop thread.
 */
#ifndef SLUICE_GW_PAUSE_H
#define SLUICE_GW_PAUSE_H

#include "gw_act.h"

#define GW_PAUSE_ENQUEUE 1u
#define GW_PAUSE_DEQUEUE 2u

/* queue_id's pause flags (0: not paused). */
unsigned gw__pause_flags(struct gw_api *api, uint64_t queue_id);

/* Adds (pause) or removes (!pause) the bits of which on queue_id, durably
 * first, as one step against concurrent calls; *before and *after get
 * the flags around it (equal when nothing changed). SL_OK, or SL_EIO
 * when ops.db could not record it (nothing changed, *after == *before). */
int gw__pause_set(struct gw_api *api, uint64_t queue_id, unsigned which, bool pause,
                  unsigned *before, unsigned *after);

/* "none", "enqueue", "dequeue" or "both": the SluicePaused attribute. */
const char *gw__pause_name(unsigned flags);

/* Answers ctx's ReceiveMessage with no messages after wait_ms (at once
 * when 0, when the loop drains, or when the client goes away). Always
 * takes ownership of ctx. */
void gw__pause_hold_receive(struct gw_act_ctx *ctx, uint32_t wait_ms);

/* api_init loads the paused queues from ops.db (opened by then);
 * loop_drain answers the loop's held receives; api_free frees the set. */
extern const struct gw_act_hooks gw__pause_hooks;

#endif
