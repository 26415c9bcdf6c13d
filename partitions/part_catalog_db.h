/*
 * part_catalog_db.h -- (partitions-internal) catalog.db and the catalog
 * thread that alone writes it, implemented by part_catalog_db.c.
 */
#ifndef SLUICE_PART_CATALOG_DB_H
#define SLUICE_PART_CATALOG_DB_H

#include "part_int.h"
#include "part_repl.h"

/* Loads catalog.db into the in-memory catalog (which it sets up first, so
 * part__catalog_db_close is due even on failure), and readies the catalog
 * thread's lock. A cluster's catalog is loaded later, from its group's
 * image, by the thread. SL_OK or SL_EIO (err says why). */
int part__catalog_db_open(struct part_engine *e, char *err, size_t errlen);
/* Closes catalog.db and frees the in-memory catalog. */
void part__catalog_db_close(struct part_engine *e);
/* The hooks of a cluster's catalog group: they wake the catalog thread
 * (to take the lead, to reload what another leader wrote). */
struct part_repl_hooks part__catalog_repl_hooks(struct part_engine *e);
/* Starts the catalog thread on e->catw: SL_OK or SL_EIO. */
int part__catalog_db_start(struct part_engine *e);
/* Finishes what is queued, then stops the thread (if it started). */
void part__catalog_db_stop(struct part_engine *e);
/* Purges queue q on every partition on behalf of parent (a PurgeQueue, or
 * a DeleteQueue once the name is free): one sub-job per partition, each
 * holding a reference to q; parent completes when the last one does. */
void part__purge_fan_out(struct part_engine *e, struct part_job *parent, struct part_queue *q);
/* Frees a catalog job's request (NULL: nothing). */
void part__catalog_req_free(struct part_catalog_req *r);

#endif
