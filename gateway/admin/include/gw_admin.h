/*
 * gw_admin.h -- (gateway-internal) the operators' room's one header for
 * the dispatcher and main: the admin listener's handler, the web
 * console, the per-address rations of failed logins, and backups.
 *
 * The admin listener (admin.listen) serves GET /healthz (no
 * authentication), GET /metrics (Prometheus text) and GET /tenants (JSON:
 * effective limits and current usage of each tenant), behind the admin
 * credentials: SigV4 with admin.access_key_id (service "sqs", the
 * configured region), or "Authorization: Bearer <admin.bearer_token>"
 * when that key is set.
 *
 * Threading: the handler runs on the I/O loop threads like the SQS one.
 */
#ifndef SLUICE_GW_ADMIN_H
#define SLUICE_GW_ADMIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gw_transport.h"

struct gw_api;
struct gw_metrics;
struct part_engine;

/* The admin listener's handler over api (borrowed; outlives the loops). */
struct gw_handler gw_admin_handler(struct gw_api *api);

/* ---- the web console (gw_console.c) ------------------------------------- */

struct gw_console;

/* The console over engine (borrowed; it must outlive the console), whose
 * queues it starts sampling for the charts (gw_console_history.h), and
 * metrics (borrowed, likewise), where refused logins are counted as the
 * admin listener's failed authentications. Either may be NULL: no history,
 * no counting. */
struct gw_console *gw__console_new(struct part_engine *engine, struct gw_metrics *metrics);
void gw__console_free(struct gw_console *c);

/* ---- rationing per client address (gw_peer_ration.c) ---------------------- */

struct gw_peer_ration;

/* A table of `slots` meters of `burst` events refilled at `per_second`.
 * Never fails (control-plane memory); free with gw__peer_ration_free. */
struct gw_peer_ration *gw__peer_ration_new(double per_second, uint32_t burst, uint32_t slots);
void gw__peer_ration_free(struct gw_peer_ration *r);

/* ---- backups (gw_backup.c) ------------------------------------------------- */

/* Stops the backup under way within milliseconds (its partial copy is
 * removed) and refuses new ones: for shutdown, which must not wait for a
 * copy of many GB. Any thread; async-signal-unsafe (call it from the
 * loop, not a handler). */
void gw_backup_stop(void);

/* Checks dir's manifest.json and every file it lists (size, SHA-256),
 * then copies them into data_dir, which must not hold a sluice data
 * directory yet (no manifest, no catalog.db). Each file is written to a
 * temporary name, fsync'd and renamed. Returns SL_OK, or SL_EINVAL /
 * SL_EIO with a sentence in err. Main thread, gateway not running on
 * data_dir. */
int gw_backup_restore(const char *dir, const char *data_dir, char *err, size_t errlen);

#endif
