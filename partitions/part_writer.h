/*
 * part_writer.h -- (partitions-internal) a partition's writer thread,
 * implemented by part_writer.c.
 */
#ifndef SLUICE_PART_WRITER_H
#define SLUICE_PART_WRITER_H

#include "part_int.h"
#include "part_repl.h"

/* Opens partition index's file, migrates it and rebuilds its counters and
 * timers. SL_OK, or SL_EIO with the partition marked failed (logged; its
 * jobs then fail). */
int part__writer_open(struct part_engine *e, struct part_writer *w, uint32_t index);
/* The hooks of a cluster's partition group: they wake the writer to take
 * or drop the lead. */
struct part_repl_hooks part__writer_repl_hooks(struct part_writer *w);
/* The catalog learnt a queue: partitions that counted rows of a queue
 * they did not know count again (and their leaders rebuild). Any thread
 * that holds no partition group's lock. */
void part__writers_catalog_grew(struct part_engine *e);
/* Starts the thread (not for a failed partition): SL_OK or SL_EIO. */
int part__writer_start(struct part_writer *w);
/* Runs what is queued, stops the thread and closes the file. */
void part__writer_stop(struct part_writer *w);

/* Tests: SQL that the next writer to take the lead of its group runs as
 * a replicated write of its own before the schema, then forgets (so that
 * a test can make an image of an older schema for the migration to meet):
 * one transaction, BEGIN to COMMIT, as the replication VFS wants.
 * NULL: nothing, always in production. */
extern _Atomic(const char *) part__test_lead_sql;

#endif
