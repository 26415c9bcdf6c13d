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

#include <stdbool.h>
#include <stdint.h>

#include <sys/socket.h>

#include "sl.h"

/* Why a connection was closed at accept, or accept itself failed. */
enum gw_conn_refusal {
    GW_CONN_REFUSED_MAX_CONNECTIONS, /* the process-wide cap */
    GW_CONN_REFUSED_MAX_PER_PEER,    /* the cap for one peer address */
    GW_CONN_REFUSED_SHUTTING_DOWN,   /* accepted while the loop drains */
    GW_CONN_ACCEPT_FDS_EXHAUSTED,    /* accept(2): EMFILE / ENFILE; listener paused */
    GW_CONN_ACCEPT_FAILED,           /* accept(2): any other error */
    GW_CONN_REFUSAL_COUNT
};

/* Label of a refusal in logs and /metrics ("max_connections", ...). */
const char *gw__conn_refusal_name(enum gw_conn_refusal r);

/* Why the protocol layer refused a request or cut a connection (either
 * HTTP version). Normal closes (idle keep-alive, client gone) are not
 * refusals. */
enum gw_http_refusal {
    GW_HTTP_BAD_REQUEST,      /* malformed HTTP/1.x, smuggling attempt: 400 */
    GW_HTTP_HEADER_TOO_LARGE, /* 431 */
    GW_HTTP_BODY_TOO_LARGE,   /* 413 */
    GW_HTTP_REQUEST_TIMEOUT,  /* a request not complete in time: 408 or RST_STREAM */
    GW_HTTP_BUDGET,           /* a memory budget spent: 503 (HTTP/1.1) */
    GW_HTTP_H2_PROTOCOL,      /* an HTTP/2 protocol error or bad preface */
    GW_HTTP_TLS_HANDSHAKE,    /* the TLS handshake failed */
    GW_HTTP_VERSION,          /* an HTTP version not served: 505 */
    GW_HTTP_STALLED,          /* output made no progress for GW_STALL_TIMEOUT_NS */
    GW_HTTP_REFUSAL_COUNT
};

/* The HTTP version a connection speaks, for sluice_http_connections_total. */
enum gw_http_version { GW_HTTP_VERSION_1, GW_HTTP_VERSION_2, GW_HTTP_VERSION_COUNT };

/* Labels in logs and /metrics ("bad_request", ...; "1.1", "2"). */
const char *gw__http_refusal_name(enum gw_http_refusal r);
const char *gw__http_version_name(enum gw_http_version v);

/* A peer address as the per-peer table keys it (IPv4 as v4-mapped IPv6). */
struct gw_peer {
    uint8_t addr[16];
};

/* The peer of an accepted socket's address. */
struct gw_peer gw__peer_from_sockaddr(const struct sockaddr_storage *ss);

struct gw_connlimit;

/* A limiter with both caps (each at least 1). Never fails (control-plane
 * memory); free with gw__connlimit_free. */
struct gw_connlimit *gw__connlimit_new(uint32_t max_connections, uint32_t max_per_peer);
void gw__connlimit_free(struct gw_connlimit *cl);

/* New caps, effective for the next accept (SIGHUP). Connections above a
 * lowered cap stay open; they only make room slower. */
void gw__connlimit_set(struct gw_connlimit *cl, uint32_t max_connections, uint32_t max_per_peer);

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

/* A consistent-enough snapshot for /metrics (relaxed atomics). */
struct gw_connlimit_stats {
    uint64_t open;
    uint64_t peers; /* distinct peer addresses with an open connection */
    uint32_t max_connections, max_per_peer;
    uint64_t refused[GW_CONN_REFUSAL_COUNT];
    uint64_t http_refused[GW_HTTP_REFUSAL_COUNT];
    uint64_t connections[GW_HTTP_VERSION_COUNT]; /* by version, since start */
};
void gw__connlimit_stats(struct gw_connlimit *cl, struct gw_connlimit_stats *out);

#endif
