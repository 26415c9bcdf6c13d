/*
 * part_disk.h -- (partitions-internal) the low-disk watermark: the free
 * space of data_dir's file system, sampled at most once a second, against
 * the engine's min_free (part_engine_set_min_free).
 *
 * Stack: a leaf over part_int.h; called by part_submit.c (sends refused
 * below the watermark) and part_writer.c (the close path).
 */
#ifndef SLUICE_PART_DISK_H
#define SLUICE_PART_DISK_H

#include "part_int.h"

/* Whether free space is below the watermark (false when it is off or the
 * file system cannot be asked); samples again when the last sample is
 * over a second old. Any thread. */
bool part__disk_low(struct part_engine *e);

#endif
