/*
 * gw_connlimit.h -- (gateway-internal) admission of TCP connections
 * (gw_connlimit.c): a process-wide cap and a cap per peer address, so that
 * one client cannot take every file descriptor, and the counters /metrics
 * reports about them.
 *
 * One struct gw_connlimit serves every I/O thread: the total is an atomic,
 * the per-peer counts a small hash table under a mutex (taken once per
 * accept and once per close, never per request).
 */
#ifndef SLUICE_GW_CONNLIMIT_H
#define SLUICE_GW_CONNLIMIT_H

#include <stdint.h>

#include <sys/socket.h>

#include "gw_transport.h"

/* What the connection and protocol layers do with the caps; gw_transport.h
 * has what the process and /metrics see. */

/* A peer address as the per-peer table keys it (IPv4 as v4-mapped IPv6). */
struct gw_peer {
    uint8_t addr[16];
};

/* The peer of an accepted socket's address. */
struct gw_peer gw__peer_from_sockaddr(const struct sockaddr_storage *ss);

/* Takes a slot for a new connection from peer. Returns SL_OK, or SL_EBUSY
 * with *why set (GW_CONN_REFUSED_MAX_CONNECTIONS or _MAX_PER_PEER) when a
 * cap is reached; the refusal is counted. Thread-safe. */
int gw__connlimit_acquire(struct gw_connlimit *cl, const struct gw_peer *peer,
                          enum gw_conn_refusal *why);

/* Gives back a slot that gw__connlimit_acquire granted, once the socket is
 * closed. Thread-safe. */
void gw__connlimit_release(struct gw_connlimit *cl, const struct gw_peer *peer);

/* Counts a refusal that happened outside acquire (EMFILE, shutdown). */
void gw__connlimit_count(struct gw_connlimit *cl, enum gw_conn_refusal why);

/* Counts (and logs, rate-limited) a refusal of the protocol layer. cl may
 * be NULL: only logged. Thread-safe. */
void gw__connlimit_count_http(struct gw_connlimit *cl, enum gw_http_refusal why);

/* Counts a connection whose HTTP version is now known. cl may be NULL. */
void gw__connlimit_count_version(struct gw_connlimit *cl, enum gw_http_version v);

#endif
