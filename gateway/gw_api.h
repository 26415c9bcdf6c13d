/*
 * gw_api.h -- (gateway-internal) the API layer: authentication (SigV4),
 * the SQS JSON 1.0 and query protocols, and the actions, which ask policy
 * and then the partitions. gw_main builds one struct gw_api and hands its
 * handlers to the listeners (see gw_transport.h).
 *
 * Threading: gw_api_new/free/config_changed run on the main thread; the
 * handlers run on the I/O threads, one loop context each.
 */
#ifndef SLUICE_GW_API_H
#define SLUICE_GW_API_H

#include <stddef.h>

#include "gw_transport.h"

struct gw_connlimit;

struct cfg_holder;
struct cfg_snapshot;
struct gw_api;

/* Builds the API layer over the live configuration (the holder is borrowed
 * and must outlive the api): opens storage, creates the limiter. Returns
 * SL_OK and sets *out, or an SL_E* code with a sentence in err. */
int gw_api_new(struct cfg_holder *holder, struct gw_api **out, char *err, size_t errlen);

/* Frees the api after every I/O loop has stopped; commits and closes
 * storage. */
void gw_api_free(struct gw_api *api);

/* Called after a reload swapped a new snapshot into the holder, so that
 * state derived from the configuration (limits) follows it. */
void gw_api_config_changed(struct gw_api *api, struct cfg_snapshot *snap);

/* Lets /metrics report the connection caps of the SQS and the admin
 * listener (borrowed; they must outlive the api; admin may be NULL). */
void gw_api_set_connlimit(struct gw_api *api, struct gw_connlimit *sqs, struct gw_connlimit *admin);

/* Lets /metrics report the SQS listener's memory budgets (gw_budget.h;
 * borrowed, must outlive the api; may be NULL). */
struct gw_budget;
void gw_api_set_budget(struct gw_api *api, struct gw_budget *budget);

/* The configuration file POST /api/reload re-reads (borrowed; must
 * outlive the api; NULL: the embedded default, nothing to re-read). */
void gw_api_set_config_path(struct gw_api *api, const char *path);

/* The handler of the SQS listener (listen:). */
struct gw_handler gw_api_sqs_handler(struct gw_api *api);

/* The handler of the admin listener (admin.listen:): /healthz, /metrics,
 * /tenants (gw_admin.c). */
struct gw_handler gw_api_admin_handler(struct gw_api *api);

#endif
