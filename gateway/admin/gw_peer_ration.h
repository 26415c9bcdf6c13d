/*
 * gw_peer_ration.h -- (gateway-internal) a rate meter per client address,
 * for what is rationed per client rather than per process: the console's
 * failed logins (gw_console.c) and the admin listener's failed
 * authentications (gw_admin.c), where one client's guessing must not lock
 * every other client out. An IPv6 client is metered by its /64 prefix,
 * an IPv4 one by its address.
 *
 * Threading: thread-safe (one mutex; meant for rare events, not for the
 * request path).
 */
#ifndef SLUICE_GW_PEER_RATION_H
#define SLUICE_GW_PEER_RATION_H

#include <stdbool.h>
#include <stdint.h>

#include "gw_admin.h"

/* True when peer (16 bytes, as struct gw_request's) has an event left at
 * now_ns. Spends nothing. */
bool gw__peer_ration_allowed(struct gw_peer_ration *r, const uint8_t peer[16], uint64_t now_ns);

/* Spends one of peer's events at now_ns. A peer with no meter gets one:
 * an empty slot, else the meter that is full again (its peer owes
 * nothing, so forgetting it changes nothing), else the one charged least
 * recently -- so the table is bounded and a client cycling through
 * addresses evicts meters, never fills another client's. */
void gw__peer_ration_charge(struct gw_peer_ration *r, const uint8_t peer[16], uint64_t now_ns);

#endif
