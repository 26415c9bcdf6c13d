/*
 * gw_server.h -- (gateway-internal) the pieces of the HTTP server runtime
 * and how they stack:
 *
 *   gw_main.c    process: command line, config, signals (main thread)
 *   gw_server.c  I/O threads: one uv_loop_t each, SO_REUSEPORT listeners
 *   gw_conn.c    one accepted socket: reads, writes, backpressure, timers
 *   gw_tls.c     OpenSSL over memory BIOs (ciphertext <-> plaintext), ALPN
 *   gw_h2.c      HTTP/2: nghttp2 server session fed from memory
 *   gw_h1.c      HTTP/1.1: libhttp-parser fed from memory
 *   gw_exchange.c one request and its answer whatever the version, limits,
 *                struct gw_exchange (gw_http.h)
 *
 * Each has its own header (gw_h1.h, gw_h2.h, gw_tls.h, gw_conn.h); this one
 * declares gw_server.c and, for its callers (gw_main.c, tests, fuzzers),
 * includes the layers below it.
 *
 * Threading: gw_server_start/stop/free are called from the main thread.
 */
#ifndef SLUICE_GW_SERVER_H
#define SLUICE_GW_SERVER_H

#include <stddef.h>
#include <stdint.h>

#include "gw_budget.h"
#include "gw_connlimit.h"
#include "gw_h1.h"
#include "gw_h2.h"
#include "gw_http.h"
#include "gw_tls.h"

/* ---- the server ------------------------------------------------------------ */

struct gw_server;

/* One endpoint and who answers it. */
struct gw_listener_spec {
    const char *name; /* "sqs", "admin": for logs */
    const char *host;
    uint16_t port;
    struct gw_handler handler;
    struct gw_connlimit *limits; /* every accepted connection takes a slot; borrowed, must
                                    outlive the server */
    struct gw_budget *budget;    /* memory budgets its streams charge (gw_budget.h); may be
                                    NULL; borrowed, must outlive the server */
};

/* Binds every listener on every I/O thread (SO_REUSEPORT) and starts the
 * threads. tls may be NULL (cleartext). Returns SL_OK and sets *out, or SL_EIO
 * with a sentence in err; on error nothing is left running. */
int gw_server_start(const struct gw_listener_spec *specs, size_t spec_count, unsigned io_threads,
                    struct gw_tls_ctx *tls, struct gw_server **out, char *err, size_t errlen);

/* Graceful stop, blocking the calling (main) thread: stop accepting, GOAWAY
 * on every connection, each handler's loop_drain, wait for in-flight
 * exchanges at most grace_ms, close connections, loop_stop, join threads. */
void gw_server_stop(struct gw_server *s, uint64_t grace_ms);
void gw_server_free(struct gw_server *s);

#endif
