/*
 * gw_http.h -- (gateway-internal) the seam between the HTTP/2 protocol
 * layer (gw_server.c, gw_conn.c, gw_h2.c, gw_tls.c) and the API layer that
 * answers requests (gw_api.c and the SQS action files).
 *
 * The protocol layer assembles a whole request (headers and body, within
 * its limits), then calls the listener's handler on the loop thread that
 * owns the connection. The handler answers now or later -- after a
 * partition commit, or when a long poll is woken -- by calling
 * gw_exchange_respond() exactly once, on that same loop thread.
 *
 * Lifetime: struct gw_exchange is owned by the protocol layer. If the
 * client resets the stream or the connection closes first, the exchange is
 * marked cancelled and its on_cancel hook runs; it stays valid until the
 * handler responds, and that respond only frees it. So a completion that
 * arrives after a reset is harmless: nothing is written and nothing leaks.
 */
#ifndef SLUICE_GW_HTTP_H
#define SLUICE_GW_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gw.h"
#include "sl.h"

struct uv_loop_s;
struct gw_exchange;

/* A complete request. Everything borrows from the exchange and stays valid
 * until gw_exchange_respond(). */
struct gw_request {
    struct sl_slice method;          /* :method */
    struct sl_slice path;            /* :path, including any query */
    struct sl_slice authority;       /* :authority, or the host header */
    struct sl_slice scheme;          /* :scheme */
    const struct gw_header *headers; /* regular headers, lower-case names, arrival order */
    size_t header_count;
    struct sl_slice body;
    const char *request_id; /* UUID, also sent as x-amzn-RequestId */
    uint64_t start_mono_ns; /* when the request was complete */
    bool tls;
    /* The client's address: IPv6, or IPv4 mapped into it (::ffff:a.b.c.d);
     * all zero for a connection that has none (a test's socketpair). */
    uint8_t peer[16];
};

typedef void gw_request_fn(void *loop_ctx, struct gw_exchange *ex, const struct gw_request *req);
typedef void gw_cancel_fn(struct gw_exchange *ex, void *data);

/* What a handler says about a request whose headers have arrived and whose
 * body has not. */
enum gw_headers_verdict {
    GW_HEADERS_CONTINUE, /* read the body, then on_request as usual */
    GW_HEADERS_ANSWERED, /* the handler called gw_exchange_respond(): the body is discarded */
};

/* Called when the headers of a request that has a body are complete, before
 * any of its body is buffered, so that a request that will be refused
 * anyway (no credentials, an unknown key) costs no memory for its body.
 * partial has every field of struct gw_request except body (empty) and
 * start_mono_ns (the headers' arrival). Answering is optional: return
 * GW_HEADERS_ANSWERED only after gw_exchange_respond(ex, ...) ran, before
 * returning. GET /healthz and bodiless requests never come here. */
typedef enum gw_headers_verdict gw_headers_fn(void *loop_ctx, struct gw_exchange *ex,
                                              const struct gw_request *partial);

/* What a listener does with its requests. Each I/O thread calls
 * loop_start once on its own thread and passes the result as loop_ctx to
 * every request of that thread; loop_drain when shutdown begins (answer long
 * polls now); loop_stop after its last exchange is done. */
struct gw_handler {
    void *app;
    void *(*loop_start)(void *app, struct uv_loop_s *loop);
    void (*loop_drain)(void *loop_ctx);
    void (*loop_stop)(void *loop_ctx);
    gw_request_fn *on_request;
    gw_headers_fn *on_headers; /* may be NULL: every body is read */
};

/* Sends the response and releases the exchange. Header names must be
 * lower-case; content-length, date and x-amzn-requestid are added by the
 * protocol layer. body is copied. A cancelled exchange is only freed. */
void gw_exchange_respond(struct gw_exchange *ex, int status, const struct gw_header *headers,
                         size_t header_count, const void *body, size_t body_len);

/* The same without the copy, for a body the handler built in memory of
 * its own: the exchange sends from it and frees it once sent (or the
 * stream is gone). Always takes ownership of body (malloc'd; NULL when
 * body_len is 0). */
void gw_exchange_respond_take(struct gw_exchange *ex, int status, const struct gw_header *headers,
                              size_t header_count, char *body, size_t body_len);

/* True once the stream is gone; the handler should stop work and respond
 * (which then only frees). */
bool gw_exchange_cancelled(const struct gw_exchange *ex);

/* Installs a hook run at most once, on the loop thread, when the stream goes
 * away before the response (client RST_STREAM, connection closed). Replaces
 * any earlier hook; NULL removes it. */
void gw_exchange_on_cancel(struct gw_exchange *ex, gw_cancel_fn *fn, void *data);

/* True once the client has said it will send nothing more: on HTTP/1.1,
 * EOF on the connection after the whole request. It may have closed its
 * socket or only its sending half (shutdown(SHUT_WR), RFC 9112 §9.6); the
 * two look the same, so the answer is still sent, but a handler that
 * would wait for something to answer (a long poll) should answer now
 * with what it has rather than hold the exchange for a client that may be
 * gone. */
bool gw_exchange_client_done(const struct gw_exchange *ex);

/* Installs a hook run at most once, on the loop thread, when the client
 * becomes done (above) while the handler holds the exchange; the handler
 * should then answer soon. Replaces any earlier hook; NULL removes it.
 * Responding removes it. */
void gw_exchange_on_client_done(struct gw_exchange *ex, gw_cancel_fn *fn, void *data);

/* The request of this exchange (same pointer the handler received). */
const struct gw_request *gw_exchange_request(const struct gw_exchange *ex);

/* The first header of req named name (lower case, as headers arrive), or
 * NULL. Borrows from req. */
const struct gw_header *gw_request_header(const struct gw_request *req, const char *name);

/* Splits a :path at its first '?' into the path and the query (empty when
 * there is none). Both borrow from full. */
void gw_request_split_path(struct sl_slice full, struct sl_slice *path, struct sl_slice *query);

/* True when the request is in the SQS query protocol, false for JSON 1.0,
 * from its headers alone (so that a refusal before the body, or an
 * authentication failure, answers in the client's own shape): no
 * X-Amz-Target, and either a POST with Content-Type
 * application/x-www-form-urlencoded (parameters allowed) or a GET or POST
 * whose query string has an Action parameter (botocore presigns a POST
 * by moving its form there). */
bool gw_request_is_query(const struct gw_request *req);

/* True when a Content-Type value is type (compared without case),
 * parameters allowed: "application/x-amz-json-1.0; charset=utf-8". */
bool gw_media_type_is(struct sl_slice content_type, const char *type);

#endif
