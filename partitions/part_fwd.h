/*
 * part_fwd.h -- (partitions-internal) a cluster's forwarding, implemented
 * by part_fwd.c: a job for a group this node does not lead goes over the
 * peer port to the node that leads it, runs there as that node's own, and
 * its outcome comes back into the job as if this node's writer had run it
 * (docs/design.md "Cluster", "How a request reaches the leaders").
 *
 * Stack: over the client layer (which finishes jobs) and the peer port;
 * the writers and the catalog thread reach it through e->hooks.forward
 * and .answer, which part__fwd_new installs.
 */
#ifndef SLUICE_PART_FWD_H
#define SLUICE_PART_FWD_H

#include "part_int.h"

/* Starts the node's peer port (every node's address in c) and installs
 * the hooks. cluster_id is the one the Raft port uses. SL_OK with e->fwd
 * set, SL_EINVAL or SL_EIO (err says why). */
int part__fwd_new(struct part_engine *e, const struct part_cluster_options *c,
                  const uint8_t cluster_id[16], char *err, size_t errlen);

/* The peer port's refusals and frames into *out (left as they are once
 * it closed). Any thread. */
void part__fwd_stats(struct part_fwd *f, struct part_cluster_stats *out);
/* Since when (ms of sl_mono_ns) this node's link to node_id has been up;
 * 0 while down or once closed. Any thread. */
uint64_t part__fwd_up_since(struct part_fwd *f, uint16_t node_id);

/* Closes the peer port: jobs waiting for another node fail with
 * SL_ECLOSED, and what is forwarded or answered from now on is dropped.
 * Before the writers stop. NULL: nothing. */
void part__fwd_stop(struct part_fwd *f);

/* Frees it, after the writers stopped. NULL: nothing. */
void part__fwd_free(struct part_fwd *f);

#endif
