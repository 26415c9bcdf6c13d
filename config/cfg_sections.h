/*
 * cfg_sections.h -- (config-internal) the sections of the file and the
 * keys each allows (cfg_sections.c), so that every walker refuses an
 * unknown key the same way: saying where the key belongs, or listing the
 * keys allowed where it was written.
 *
 * Threading: the loading thread only; the tables are constant.
 */
#ifndef SLUICE_CFG_SECTIONS_H
#define SLUICE_CFG_SECTIONS_H

#include "cfg_value.h"

enum cfg__section {
    CFG__SEC_TOP,
    CFG__SEC_TLS,
    CFG__SEC_ADMIN,
    CFG__SEC_DEFAULTS,
    CFG__SEC_TENANT,
    CFG__SEC_LIMITS,
    CFG__SEC_SPILL,
    CFG__SEC_RATE, /* one entry of limits.queues or limits.actions */
    CFG__SEC_SERVER,
    CFG__SEC_CLUSTER,
    CFG__SEC_CLUSTER_NODE, /* one entry of cluster.nodes */
    CFG__SEC_QUEUE_DEFAULTS,
    CFG__SEC_N
};

/* Reports key k, written in section sec ("where" says it as a reader
 * would: "in admin"), as not allowed there: naming the sections that do
 * allow it, or else listing the keys sec allows. */
void cfg__report_unknown(struct vctx *v, enum cfg__section sec, const char *where,
                         const struct cfg__node *k);

#endif
