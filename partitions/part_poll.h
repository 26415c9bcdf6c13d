/*
 * part_poll.h -- (partitions-internal) receive planning and long polling,
 * implemented by part_poll.c.
 */
#ifndef SLUICE_PART_POLL_H
#define SLUICE_PART_POLL_H

#include <uv.h>

#include "part_int.h"

/* Installs e->hooks.receive_continue, .wake and .flush_waiters (before any
 * writer starts). */
void part__poll_install(struct part_engine *e);
/* Plans the receive's partition order and submits it, or parks it. */
void part__recv_dispatch(struct part_engine *e, struct part_job *job, uint32_t first);
/* The uv_timer callback of a receive's wait deadline (t->data: the job). */
void part__recv_timeout(uv_timer_t *t);
/* Completes every parked receive of q with status. Any thread. */
void part__flush_waiters(struct part_queue *q, int status);

#endif
