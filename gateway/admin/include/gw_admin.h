/*
 * gw_admin.h -- (gateway-internal) the admin listener's handler
 * (admin.listen): GET /healthz (no authentication), GET /metrics
 * (Prometheus text) and GET /tenants (JSON: effective limits and current
 * usage of each tenant), behind the admin credentials: SigV4 with
 * admin.access_key_id (service "sqs", the configured region), or
 * "Authorization: Bearer <admin.bearer_token>" when that key is set.
 *
 * Threading: the handler runs on the I/O loop threads like the SQS one.
 */
#ifndef SLUICE_GW_ADMIN_H
#define SLUICE_GW_ADMIN_H

#include "gw_http.h"

struct gw_api;

/* The admin listener's handler over api (borrowed; outlives the loops). */
struct gw_handler gw_admin_handler(struct gw_api *api);

#endif
