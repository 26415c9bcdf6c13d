/*
 * part_catalog.h -- (partitions-internal) the in-memory queue catalog,
 * implemented by part_catalog.c: queue objects and their references, the
 * maps, counters. The calls marked "catalog thread" are for
 * part_catalog_db.c, which owns catalog.db and alone changes the maps.
 */
#ifndef SLUICE_PART_CATALOG_H
#define SLUICE_PART_CATALOG_H

#include "part_int.h"

/* Sets up the empty maps and the lock. */
void part__catalog_init(struct part_engine *e);
/* Drops the maps' queues and every tenant (after all threads stopped). */
void part__catalog_free(struct part_engine *e);
/* Returns a referenced queue (part__queue_unref it) or NULL. */
struct part_queue *part__queue_ref(struct part_engine *e, uint64_t id);
void part__queue_unref(struct part_queue *q);
/* Copies q's typed config under the catalog lock; false if deleted. */
bool part__queue_cfg(struct part_engine *e, struct part_queue *q, struct part_queue_config *out);
bool part__queue_known(struct part_engine *e, uint64_t id);
void part__counts_add(struct part_queue *q, uint32_t p, const struct part_qdelta *d);
/* Publishes how many groups of q have something in flight on partition p
 * (writer of p, after it changed q->per[p].groups). */
void part__groups_publish(struct part_queue *q, uint32_t p);
/* The tenant's aging threshold (0: off). Any thread. */
uint64_t part__tenant_aging(const struct part_queue *q);
/* Calls fn for every live queue (under the read lock). */
void part__queue_foreach(struct part_engine *e, void (*fn)(struct part_queue *q, void *arg),
                         void *arg);

/* ---- catalog thread (and open); the caller holds the lock it names ---- */
/* A new queue object with one reference, not yet in the maps; a FIFO
 * queue and an exclusive one (grouped) get a group directory. */
struct part_queue *part__queue_new(struct part_engine *e, uint64_t id, const char *tenant,
                                   const char *name, bool fifo, bool grouped);
/* The tenant, made if new (write lock). */
struct part_tenant *part__tenant_get(struct part_catalog *c, const char *name);
/* Lookups (any lock). */
struct part_queue *part__queue_by_name(struct part_catalog *c, const char *tenant,
                                       const char *name);
struct part_queue *part__queue_by_id(struct part_catalog *c, uint64_t id);
/* Links q into / unlinks q from both maps (write lock). */
void part__catalog_insert(struct part_catalog *c, struct part_queue *q);
void part__catalog_remove(struct part_catalog *c, struct part_queue *q);
/* A public copy of q (any lock). */
struct part_queue_info *part__queue_info(const struct part_queue *q);
/* Key/value sets: frees n pairs and the array; upserts (value != NULL) or
 * removes (value == NULL) the keys of chg in a sorted set. */
void part__kv_free(struct part_kv *kv, size_t n);
void part__kv_apply(struct part_kv **set, size_t *n, const struct part_kv *chg, size_t nchg);

#endif
