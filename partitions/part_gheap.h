/*
 * part_gheap.h -- (partitions-internal) the available groups of one FIFO
 * queue on one partition, implemented by part_gheap.c (a leaf over
 * part_groups.c): a min-heap by each group's head (priority, id), at most
 * one entry per group. Owned by that partition's writer: no locks.
 *
 * An accelerator, never the truth: an entry may be stale (its group
 * locked, emptied, or its head moved since), so a receive checks each one
 * when it surfaces; docs/partitions.md, "Selection without scanning locked
 * groups", says why a group missing from it is still found.
 */
#ifndef SLUICE_PART_GHEAP_H
#define SLUICE_PART_GHEAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A head not read yet: sorts first, so the entry is checked (and given
 * its real head) by the next receive. */
#define PART_GHEAD_UNKNOWN INT64_MIN

struct part_gheap;

struct part_gheap_entry {
    int64_t priority;
    int64_t id;
    char *group; /* owned */
};

struct part_gheap *part__gheap_new(void);
void part__gheap_free(struct part_gheap *h);
/* Pushes group with head (priority, id) unless it has an entry already;
 * returns whether it pushed. */
bool part__gheap_push(struct part_gheap *h, int64_t priority, int64_t id, const char *group);
/* Pops the best entry into *out (the caller frees out->group); false when
 * empty. */
bool part__gheap_pop(struct part_gheap *h, struct part_gheap_entry *out);
size_t part__gheap_size(const struct part_gheap *h);

#endif
