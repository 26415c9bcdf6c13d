/*
 * part_disk.h -- (partitions-internal) free space of data_dir's file
 * system, sampled at most once a second: the low-disk watermark (the
 * engine's min_free, part_engine_set_min_free) and the space reserve.
 *
 * Stack: a leaf over part_int.h; called by part_engine.c (open, close),
 * part_submit.c (sends refused) and part_writer.c (checkpoints near a
 * full disk, a full disk, the close path).
 */
#ifndef SLUICE_PART_DISK_H
#define SLUICE_PART_DISK_H

#include "part_int.h"

/* Whether sends must wait for space: free space is below the watermark,
 * or a write found the disk full and the space reserve is not set aside
 * again yet (false when the file system cannot be asked and no write
 * failed); samples again when the last sample is over a second old. Any
 * thread. */
bool part__disk_low(struct part_engine *e);
/* Free bytes as last sampled (sampled as part__disk_low; UINT64_MAX when
 * unknown). Any thread. */
uint64_t part__disk_free(struct part_engine *e);
/* A write found the disk full: gives the space reserve back to the file
 * system (logging the first time) and makes sends wait until it can be set
 * aside again. Any thread. */
void part__disk_full(struct part_engine *e);
/* The WAL size (pages) past which a writer checkpoints: the engine's
 * checkpoint_pages while the disk has room, less near a full disk. A
 * checkpoint may need as many new blocks in the database file as the WAL
 * holds, so each partition's WAL may hold at most its share of half the
 * free space; with almost nothing left, 0: every commit is checkpointed.
 * Costs a clock read while the disk has room. Any thread. */
uint32_t part__disk_checkpoint_pages(struct part_engine *e);
/* The rule of part__disk_checkpoint_pages for free_b free bytes
 * (UINT64_MAX: unknown), checkpoint_pages pages and nparts partitions. */
uint32_t part__wal_limit(uint64_t free_b, uint32_t pages, uint32_t nparts);
/* At engine open, before the partitions open: gives back the reserve a
 * last run left (the partitions' files may need its blocks) and chooses
 * when to sample faster; at close, frees what open set up. */
void part__disk_open(struct part_engine *e);
void part__disk_close(struct part_engine *e);

#endif
