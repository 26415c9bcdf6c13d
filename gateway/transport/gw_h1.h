/*
 * gw_h1.h -- (gateway-internal) the HTTP/1.1 protocol layer (gw_h1.c):
 * libhttp-parser fed from memory, request assembly and limits over struct
 * gw_exchange (gw_exchange.h), responses into an output buffer. Like
 * gw_h2.h it does no socket I/O, so unit tests and fuzzers drive it from
 * byte arrays.
 *
 * One request at a time: pipelined requests wait, unparsed, until the
 * answer before them is queued (RFC 9112 §9.3.2).
 *
 * Threading: a struct gw_h1c belongs to the loop thread that accepted its
 * socket.
 */
#ifndef SLUICE_GW_H1_H
#define SLUICE_GW_H1_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gw_exchange.h"
#include "sl.h"

/* Unparsed input held while a request is with its handler, above which the
 * connection stops reading (a pipelining client waits). */
#define GW_H1_IN_CAP ((size_t)128 * 1024)

struct gw_h1c;

/* A server connection (no bytes are produced until a request arrives).
 * now_ns is a monotonic clock reading. */
struct gw_h1c *gw__h1c_new(const struct gw_proto_env *env, uint64_t now_ns);

/* Frees the connection. A request still held by the handler is cancelled
 * (its on_cancel runs now) and freed when the handler responds. */
void gw__h1c_free(struct gw_h1c *c);

/* Feeds client bytes. Returns SL_OK, or SL_ECLOSED when no more input will
 * be read (bad request, Connection: close answered): flush what is
 * pending, then close once gw__h1c_done(). Requests completed by these
 * bytes reach the handler before this returns. */
int gw__h1c_feed(struct gw_h1c *c, const uint8_t *data, size_t n, uint64_t now_ns);

/* Moves the answer's body into the output buffer until it is all there or
 * the buffer reaches GW_OUT_HIGH_WATER; once an answer is fully queued,
 * parses the next pipelined request. Returns SL_OK, or SL_ECLOSED when
 * the connection will close after the output. */
int gw__h1c_flush(struct gw_h1c *c);

/* The bytes waiting to be written, and how many of them were written. */
struct sl_slice gw__h1c_output(const struct gw_h1c *c);
void gw__h1c_output_consume(struct gw_h1c *c, size_t n);

/* True when gw__h1c_flush() can produce more output right now. */
bool gw__h1c_want_write(const struct gw_h1c *c);

/* True while more input is welcome: false once the connection will close,
 * or while GW_H1_IN_CAP pipelined bytes wait. */
bool gw__h1c_want_read(const struct gw_h1c *c);

/* The socket reached EOF: the client sends nothing more (a half-close, or
 * gone). Whole requests already read are answered, the one in the handler
 * is told (gw_exchange_client_done), an unfinished one is dropped, and
 * gw__h1c_done() turns true once the last answer is taken. */
void gw__h1c_peer_eof(struct gw_h1c *c);

/* True when the connection is over and its output taken: close it. */
bool gw__h1c_done(const struct gw_h1c *c);

/* Graceful shutdown: an idle connection is done at once; the answer of a
 * request in progress carries Connection: close. */
void gw__h1c_goaway(struct gw_h1c *c);

/* Timers, called about once a second. A request not complete within
 * GW_REQUEST_READ_TIMEOUT_NS is answered 408 and the connection closes;
 * an idle one closes after GW_IDLE_TIMEOUT_NS. Returns true when the
 * connection should close now: its output made no progress for
 * GW_STALL_TIMEOUT_NS. Flush after calling. */
bool gw__h1c_tick(struct gw_h1c *c, uint64_t now_ns);

/* Requests open on this connection: 0 or 1. */
size_t gw__h1c_open_streams(const struct gw_h1c *c);

#endif
