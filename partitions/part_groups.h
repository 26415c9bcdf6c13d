/*
 * part_groups.h -- (partitions-internal) message groups' in-flight counts,
 * implemented by part_groups.c (a leaf). One table per (queue, partition),
 * owned by that partition's writer: no locks. Counts are exact after each
 * commit (the writer applies a batch's changes only once it committed).
 */
#ifndef SLUICE_PART_GROUPS_H
#define SLUICE_PART_GROUPS_H

#include "part_int.h"

/* FNV-1a of a group id: the hash of every per-group table here. */
uint64_t part__group_hash(const char *group);

struct part_groups *part__groups_new(void);
void part__groups_free(struct part_groups *g);
void part__groups_clear(struct part_groups *g);
int64_t part__groups_get(const struct part_groups *g, const char *group);
/* Groups with something in flight (0 for a NULL table). */
size_t part__groups_count(const struct part_groups *g);
void part__groups_add(struct part_groups *g, const char *group, int64_t delta);

#endif
