/*
 * part_gdir.h -- (partitions-internal) the group directory of one FIFO
 * queue, implemented by part_gdir.c (a leaf): for every message group with
 * live messages (ready, delayed or in flight), the partitions holding
 * them, oldest first, with a count each. Shared by the loops (sends place
 * groups at submit) and the writers (moves register, commits drop): every
 * call takes the directory's own mutex. docs/partitions.md, "The group
 * directory", says why it exists.
 *
 * Counts never fall below the rows that exist: a count is taken before its
 * row can appear (at submit, or inside the transaction that moves the row
 * in) and given back only after the row is gone (a commit deleted it, or
 * the job that would have written it failed).
 */
#ifndef SLUICE_PART_GDIR_H
#define SLUICE_PART_GDIR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PART_GDIR_NONE UINT32_MAX /* no partition */

struct part_gdir;

struct part_gdir *part__gdir_new(void);
void part__gdir_free(struct part_gdir *d);

/* A send of n messages (group ids NUL-terminated): message i goes to its
 * group's current (newest) partition when the group has live messages,
 * else to homes[i], where the group's entry is made. Counts one message
 * there for each and writes the partition to out[i]. One lock for all. */
void part__gdir_place(struct part_gdir *d, const char *const *groups, const uint32_t *homes,
                      size_t n, uint32_t *out);

/* A message of group is moved in on partition p (in the transaction that
 * moves it): p is appended to the group's partitions if it is not among
 * them, and counts one more. */
void part__gdir_add(struct part_gdir *d, const char *group, uint32_t p);

/* n messages of group left partition p (gone, moved away, or never
 * stored). A partition whose count reaches 0 leaves the list. Returns the
 * partition that became the group's first (it may lease the group now)
 * when the first one left and another remains, else PART_GDIR_NONE. */
uint32_t part__gdir_drop(struct part_gdir *d, const char *group, uint32_t p, int64_t n);

/* Whether partition p may lease group: the group has no entry or p is its
 * first partition. Without any group on several partitions (the usual
 * case) this is one atomic load and takes no lock. */
bool part__gdir_may_lease(struct part_gdir *d, const char *group, uint32_t p);

/* Start-up: partition p holds count live messages of group. sorted: the
 * partition takes its place among the group's others by rank, lowest
 * first (all partitions load before any writer runs); else it is appended
 * (a partition opened late must not take the lead from one that may be
 * leasing the group). */
void part__gdir_load(struct part_gdir *d, const char *group, uint32_t p, int64_t count,
                     int64_t rank, bool sorted);

/* Groups with an entry, and of them those on more than one partition
 * (relaxed reads, for metrics). */
int64_t part__gdir_groups(const struct part_gdir *d);
int64_t part__gdir_spanning(const struct part_gdir *d);

/* The partitions of group, first to last, up to max, into out; returns
 * how many it has (tests). */
size_t part__gdir_parts(struct part_gdir *d, const char *group, uint32_t *out, int64_t *counts,
                        size_t max);

#endif
