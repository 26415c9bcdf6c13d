/*
 * gw_conn.h -- (gateway-internal) one accepted socket (gw_conn.c): reads,
 * writes, backpressure and timers, TLS (gw_tls.h), and HTTP/2 (gw_h2.h) or
 * HTTP/1.1 (gw_h1.h) over it.
 *
 * Threading: everything here runs on the loop thread that owns ls.
 */
#ifndef SLUICE_GW_CONN_H
#define SLUICE_GW_CONN_H

#include <stdbool.h>
#include <stddef.h>

#include "gw_connlimit.h"
#include "gw_transport.h"
#include "gw_runq.h"

struct gw_tls_ctx;
struct gw_budget;

/* ---- connections, on a loop thread -------------------------------------------- */

struct gw_conn;

/* Per-loop state shared by its connections (owned by gw_server.c). */
struct gw_loop_state {
    struct uv_loop_s *loop;
    char *read_buf; /* shared by the loop's reads, which run one at a time */
    size_t read_buf_size;
    struct gw_tls_ctx *tls; /* NULL = cleartext */
    size_t inflight;        /* exchanges held by handlers on this loop */
    size_t conn_count;
    struct gw_conn *conns; /* intrusive list of live connections */
    struct gw_runq runq;   /* whole requests waiting for the handler (gw_runq.h) */
    bool shutting_down;
};

/* Runs an accepted socket fd from peer on the loop. Always takes ownership
 * of fd, and of the slot of limits that gw__connlimit_acquire granted for
 * peer: both are given back when the connection closes. Its streams charge
 * budget (borrowed, may be NULL; see struct gw_proto_env). */
void gw__conn_accept(struct gw_loop_state *ls, int fd, struct gw_connlimit *limits,
                     struct gw_budget *budget, const struct gw_peer *peer,
                     const struct gw_handler *handler, void *loop_ctx);

/* GOAWAY on every connection of the loop (graceful). */
void gw__conn_goaway_all(struct gw_loop_state *ls);

/* Closes every connection of the loop now (cancels exchanges). */
void gw__conn_close_all(struct gw_loop_state *ls);

#endif
