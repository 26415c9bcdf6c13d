/*
 * part_ops.h -- (partitions-internal) the message operations a writer runs
 * inside its transaction, implemented by part_ops.c. Writer thread only.
 */
#ifndef SLUICE_PART_OPS_H
#define SLUICE_PART_OPS_H

#include "part_batch.h"
#include "part_int.h"

/* Fires w's timers due by now (at most a batch's share) into b. */
void part__ops_fire_timers(struct part_writer *w, struct part_batch *b, uint64_t now);
/* The in-memory index of the FIFO deduplication ids still within their
 * interval (part_dedup.h), made afresh from the dedup table when the
 * partition opens. Returns false on a storage error. */
bool part__ops_load_dedup(struct part_writer *w);
/* Runs one partition job into b, setting job->status (b->sql_failed on a
 * failed statement: the caller rolls the whole batch back). */
void part__ops_exec(struct part_writer *w, struct part_batch *b, struct part_job *job,
                    uint64_t now);

#endif
