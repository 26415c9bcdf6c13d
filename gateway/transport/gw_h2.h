/*
 * gw_h2.h -- (gateway-internal) the HTTP/2 protocol layer (gw_h2.c): an
 * nghttp2 server session fed from memory, request assembly and limits,
 * over struct gw_exchange (gw_exchange.h). It does no socket I/O: bytes go in
 * through a function call and come out of a buffer, so unit tests and
 * fuzzers drive it from byte arrays.
 *
 * Threading: a struct gw_h2c belongs to the loop thread that accepted
 * its socket.
 */
#ifndef SLUICE_GW_H2_H
#define SLUICE_GW_H2_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gw_exchange.h"
#include "gw_transport.h"
#include "sl.h"

/* ---- limits of HTTP/2 (the others are gw_exchange.h's) -------------------- */

#define GW_MAX_CONCURRENT_STREAMS 128u
/* Request bodies buffered per connection (all streams) before new streams
 * are refused with REFUSED_STREAM, which clients retry. */
#define GW_MAX_CONN_BODY_BYTES ((size_t)32 * 1024 * 1024)
/* gw__h2c_flush() stops pulling once the buffer reaches the high-water
 * mark, so it never holds more than that plus one frame. */
#define GW_H2C_OUT_CAP (GW_OUT_HIGH_WATER + 16384 + 9 + 4096)

/* ---- the protocol layer (gw_h2.c) ---------------------------------------- */

struct gw_h2c;
struct gw_budget;

/* A server session. Submits the server's SETTINGS at once (call
 * gw__h2c_flush to get the bytes). now_ns is a monotonic clock reading. */
struct gw_h2c *gw__h2c_new(const struct gw_proto_env *env, uint64_t now_ns);

/* Frees the session. Exchanges still held by the handler are cancelled
 * (their on_cancel runs now) and freed when the handler responds. */
void gw__h2c_free(struct gw_h2c *c);

/* Feeds client bytes. Returns SL_OK, or SL_ECLOSED when the connection is
 * finished with (bad preface, HTTP/1.x, protocol error): flush what is
 * pending, then close. Requests completed by these bytes reach the handler
 * before this returns. */
int gw__h2c_feed(struct gw_h2c *c, const uint8_t *data, size_t n, uint64_t now_ns);

/* Moves frames from nghttp2 into the output buffer until nothing is pending
 * or the buffer reaches GW_OUT_HIGH_WATER. Returns SL_OK or SL_ECLOSED. */
int gw__h2c_flush(struct gw_h2c *c);

/* The bytes waiting to be written, and how many of them were written. */
struct sl_slice gw__h2c_output(const struct gw_h2c *c);
void gw__h2c_output_consume(struct gw_h2c *c, size_t n);

/* True when more output may be produced by gw__h2c_flush() right now. */
bool gw__h2c_want_write(const struct gw_h2c *c);

/* True when the connection is over: nothing more to read, and everything
 * produced has been taken by gw__h2c_output(). The owner closes it. */
bool gw__h2c_done(const struct gw_h2c *c);

/* Graceful shutdown: GOAWAY with the last stream seen; streams already
 * open finish, new ones are refused. */
void gw__h2c_goaway(struct gw_h2c *c);

/* Timers, called about once a second: returns true when the connection
 * should close now (the preface took too long). A request that takes too
 * long to arrive, and an answer stalled for GW_STALL_TIMEOUT_NS, get
 * RST_STREAM(CANCEL); an idle connection gets GOAWAY and is done once that
 * is flushed. Flush after calling. */
bool gw__h2c_tick(struct gw_h2c *c, uint64_t now_ns);

/* Streams open on this connection (received, in the handler, or sending). */
size_t gw__h2c_open_streams(const struct gw_h2c *c);

#endif
