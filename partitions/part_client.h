/*
 * part_client.h -- (partitions-internal) clients, jobs and completions,
 * implemented by part_client.c.
 */
#ifndef SLUICE_PART_CLIENT_H
#define SLUICE_PART_CLIENT_H

#include "part_int.h"

/* Installs e->hooks.complete and .submit (before any writer starts). */
void part__client_install(struct part_engine *e);
/* A job of client c, counted as pending on it until it completes. */
struct part_job *part__job_new(struct part_client *c, enum part_op op, uint64_t queue_id,
                               struct part_cookie cookie, part_done_fn *done);
/* Frees a job that part__job_new made but that was never submitted. */
void part__job_discard(struct part_job *job);
/* Appends job to w's queue; a writer that is gone fails it instead. */
void part__writer_submit(struct part_writer *w, struct part_job *job);
/* Routes a job to partition p (fails it with SL_EIO if p failed); corked
 * when called from a completion callback of one of e's clients. */
void part__submit_partition(struct part_engine *e, uint32_t p, struct part_job *job);
/* Finishes a job: to its client's loop, or into its parent, or (a job
 * another node forwarded) back to that node. Any thread. */
void part__complete(struct part_job *job);
/* Frees a job and what it owns, at once (no client is told). */
void part__job_free(struct part_job *job);

#endif
