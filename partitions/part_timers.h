/*
 * part_timers.h -- (partitions-internal) a writer's timer heap, implemented
 * by part_timers.c (a leaf). Writer thread only. An entry is forgotten
 * only once the change that killed it is committed: a rolled-back batch
 * forgets nothing.
 */
#ifndef SLUICE_PART_TIMERS_H
#define SLUICE_PART_TIMERS_H

#include "part_int.h"

void part__heap_push(struct part_heap *h, uint64_t due, int64_t rowid, uint8_t kind);
struct part_heap_item part__heap_pop(struct part_heap *h); /* h->n > 0 */
/* Every VISIBLE and EXPIRE entry of row rowid is dead (the row is gone). */
void part__heap_forget_row(struct part_heap *h, int64_t rowid);
/* One entry (due, rowid, kind) is dead: a newer one superseded it. */
void part__heap_forget(struct part_heap *h, uint64_t due, int64_t rowid, uint8_t kind);
/* Whether it (just popped) was forgotten: then it needs no look at its
 * row. Uses up the tombstone of a superseded entry. */
bool part__heap_forgotten(struct part_heap *h, const struct part_heap_item *it);
/* Pops the earliest entry due by now that is not forgotten, dropping the
 * forgotten ones before it; false when there is none. */
bool part__heap_pop_due(struct part_heap *h, uint64_t now, struct part_heap_item *out);
/* Filters the forgotten entries out once there are enough of them (after
 * each batch). */
void part__heap_tidy(struct part_heap *h);
void part__heap_free(struct part_heap *h);

#endif
