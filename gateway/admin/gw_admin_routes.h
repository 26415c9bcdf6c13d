/*
 * gw_admin_routes.h -- (gateway-internal) the admin API's route handlers,
 * one group per file: gw_admin_read.c (tenants, queues, partitions),
 * gw_admin_cluster.c (a cluster's nodes and Raft groups),
 * gw_admin_msgs.c (peek, purge, one message), gw_admin_ops.c (pause,
 * resume, reload, backup), gw_admin_redrive.c (redrives). gw_admin.c
 * routes to them by method and path (docs/admin.md).
 *
 * Each handler always takes ownership of r (it answers, now or from a
 * completion on r's loop). Path parameters are r->seg[...] as the route
 * table in gw_admin.c names them.
 */
#ifndef SLUICE_GW_ADMIN_ROUTES_H
#define SLUICE_GW_ADMIN_ROUTES_H

#include "gw_admin_int.h"

typedef void gw_admin_route_fn(struct gw_admin_req *r);

/* gw_admin_read.c */
gw_admin_route_fn gw__admin_get_tenants;    /* GET /tenants */
gw_admin_route_fn gw__admin_get_queues;     /* GET /api/queues[?tenant=T] */
gw_admin_route_fn gw__admin_get_queue;      /* GET /api/queues/T/Q */
gw_admin_route_fn gw__admin_get_partitions; /* GET /api/partitions */

/* gw_admin_cluster.c */
gw_admin_route_fn gw__admin_get_cluster; /* GET /api/cluster */

/* gw_admin_msgs.c */
gw_admin_route_fn gw__admin_peek;       /* GET /api/queues/T/Q/messages */
gw_admin_route_fn gw__admin_purge;      /* POST /api/queues/T/Q/purge */
gw_admin_route_fn gw__admin_msg_delete; /* POST /api/queues/T/Q/messages/REF/delete */
gw_admin_route_fn gw__admin_msg_move;   /* POST /api/queues/T/Q/messages/REF/move */

/* gw_admin_ops.c */
gw_admin_route_fn gw__admin_pause;         /* POST /api/queues/T/Q/pause */
gw_admin_route_fn gw__admin_resume;        /* POST /api/queues/T/Q/resume */
gw_admin_route_fn gw__admin_reload;        /* POST /api/reload */
gw_admin_route_fn gw__admin_backup;        /* POST /api/backup */
gw_admin_route_fn gw__admin_backup_status; /* GET /api/backup */

/* gw_admin_redrive.c */
gw_admin_route_fn gw__admin_get_redrives;   /* GET /api/redrives[?tenant=T] */
gw_admin_route_fn gw__admin_get_redrive;    /* GET /api/redrives/ID */
gw_admin_route_fn gw__admin_start_redrive;  /* POST /api/redrives */
gw_admin_route_fn gw__admin_cancel_redrive; /* POST /api/redrives/ID/cancel */

#endif
