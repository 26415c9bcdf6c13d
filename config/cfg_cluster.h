/*
 * cfg_cluster.h -- (config-internal) the cluster: section (cfg_cluster.c):
 * its walk into struct cfg_cluster, and the copy, comparison and freeing
 * the snapshot's life needs.
 *
 * Threading: the loading thread only, or the thread that owns the
 * snapshot being built or freed.
 */
#ifndef SLUICE_CFG_CLUSTER_H
#define SLUICE_CFG_CLUSTER_H

#include "cfg_value.h"

/* Reads cluster: (k its key, m its value) into v->s->cluster, reporting
 * every problem at its node; reads the secret file. */
void cfg__load_cluster(struct vctx *v, const struct cfg__node *k, const struct cfg__node *m);

/* Frees what c owns, wiping the secret first, and leaves c disabled. */
void cfg__cluster_fini(struct cfg_cluster *c);

/* Makes dst a deep copy of src (dst's own contents are freed first). */
void cfg__cluster_copy(struct cfg_cluster *dst, const struct cfg_cluster *src);

/* Writes the names of the keys that differ between a and b (both
 * enabled) into buf, joined by ", " (NUL-terminated, truncated to cap;
 * the secret's bytes count as secret_file, and are never written), and
 * returns how many differ. */
int cfg__cluster_changed_keys(const struct cfg_cluster *a, const struct cfg_cluster *b, char *buf,
                              size_t cap);

#endif
