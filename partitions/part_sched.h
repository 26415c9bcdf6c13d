/*
 * part_sched.h -- (partitions-internal) a partition writer's job queue,
 * shared fairly among tenants, implemented by part_sched.c.
 */
#ifndef SLUICE_PART_SCHED_H
#define SLUICE_PART_SCHED_H

#include "part_int.h"

/* Cost a flow may take per turn: one full send batch. */
#define PART_SCHED_QUANTUM PART_MAX_BATCH

/* Queues job (job->cost, job->enq_ns set) behind its tenant's earlier
 * jobs; a barrier becomes a fence. Returns false, queuing nothing, for a
 * tenant's send, receive, delete or visibility change while that tenant
 * already has its writer_job_cap of jobs waiting here (the caller fails
 * it with SL_ELIMIT). Caller holds the writer's mu. */
bool part__sched_push(struct part_sched *s, struct part_job *job);
/* Whether nothing waits. Caller holds the writer's mu. */
bool part__sched_empty(const struct part_sched *s);
/* Takes up to max jobs into a list, deficit round robin over the
 * tenants, then every fence whose earlier jobs are all taken (beyond max:
 * a fence costs the batch nothing). Sets *n and *cost to the number and
 * summed cost of all it took. Caller holds the writer's mu. */
struct part_job *part__sched_take(struct part_sched *s, size_t max, size_t *n, int64_t *cost);
/* Notes in each job's tenant how long it waited (now_ns - enq_ns). Any
 * thread, no lock. */
void part__sched_note_waits(const struct part_job *jobs, uint64_t now_ns);
/* Frees the flows (nothing may wait). */
void part__sched_free(struct part_sched *s);

#endif
