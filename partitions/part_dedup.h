/*
 * part_dedup.h -- (partitions-internal) the in-memory index of a
 * partition's FIFO deduplication ids, implemented by part_dedup.c (a leaf).
 *
 * The ids themselves stay in the partition file (table dedup, appended in
 * send order, so an insert dirties the page at its end rather than a
 * random page of a unique index); this table maps a keyed hash of (queue,
 * id) to the row that holds it, so that a send finds a candidate without
 * touching the file, and reads the row only to confirm a match. Owned by
 * the partition's writer thread: no locks.
 *
 * The index mirrors the table: an entry is added with its row and dropped
 * with it (the sweep of expired rows, a purge), never on its own. Every
 * change since the last part__dedup_commit is logged, so that a batch
 * that rolls back takes its changes back with part__dedup_rollback.
 */
#ifndef SLUICE_PART_DEDUP_H
#define SLUICE_PART_DEDUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct part_dedup;

/* An empty table with a key of its own for its hash (drawn at random, so a
 * tenant cannot choose ids that collide). Never NULL. */
struct part_dedup *part__dedup_new(void);
void part__dedup_free(struct part_dedup *d);

/* The keyed hash (SipHash-2-4) of the id key[0..len) in queue queue_id. */
uint64_t part__dedup_hash(struct part_dedup *d, uint64_t queue_id, const void *key, size_t len);

/* Rows (at most max, into rowids) recorded under (hash, queue_id) that
 * expire after now. A row is a candidate only: two ids may share a hash.
 * Returns how many were written. */
size_t part__dedup_find(const struct part_dedup *d, uint64_t hash, uint64_t queue_id, uint64_t now,
                        int64_t *rowids, size_t max);

/* Records row rowid (> 0) under (hash, queue_id) until expires_at. */
void part__dedup_add(struct part_dedup *d, uint64_t hash, uint64_t queue_id, int64_t rowid,
                     uint64_t expires_at);

/* Drops the entry of row rowid under (hash, queue_id), if there is one
 * (the sweep deleted the row). Returns whether there was. */
bool part__dedup_remove(struct part_dedup *d, uint64_t hash, uint64_t queue_id, int64_t rowid);

/* Drops every entry of queue_id (a purge). Returns how many. */
size_t part__dedup_forget_queue(struct part_dedup *d, uint64_t queue_id);

/* The batch that made the logged changes committed: they stay. */
void part__dedup_commit(struct part_dedup *d);
/* It rolled back: its adds are dropped and its drops restored. */
void part__dedup_rollback(struct part_dedup *d);

/* Entries held (expired ones not yet swept included). */
size_t part__dedup_size(const struct part_dedup *d);
/* Bytes the table holds (its slots and its log), for the docs' figures
 * and the tests. */
size_t part__dedup_bytes(const struct part_dedup *d);

#endif
