/*
 * gw_transport.h -- (gateway-internal) the transport room's one header for
 * the layers above it: sockets, TLS, HTTP/1.1 and HTTP/2, exchanges, and
 * the process-wide caps on connections and buffered bytes. What is below
 * it (gw_conn.c, gw_tls.c, gw_h2.c, gw_h1.c, gw_exchange.c, gw_runq.c) is
 * the room's own business.
 *
 * The seam with the API layer: the protocol layer assembles a whole
 * request (headers and body, within its limits), then calls the
 * listener's handler on the loop thread that owns the connection. The
 * handler answers now or later -- after a partition commit, or when a long
 * poll is woken -- by calling gw_exchange_respond() exactly once, on that
 * same loop thread.
 *
 * Lifetime: struct gw_exchange is owned by the protocol layer. If the
 * client resets the stream or the connection closes first, the exchange is
 * marked cancelled and its on_cancel hook runs; it stays valid until the
 * handler responds, and that respond only frees it. So a completion that
 * arrives after a reset is harmless: nothing is written and nothing leaks.
 *
 * Threading: the server is started and stopped from the main thread; an
 * exchange belongs to its connection's loop thread; the caps are
 * thread-safe.
 */
#ifndef SLUICE_GW_TRANSPORT_H
#define SLUICE_GW_TRANSPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sl.h"

/* ---- requests and their answers ------------------------------------------- */

/* A header as the request carries it. HTTP/2 names are lower-case. */
struct gw_header {
    struct sl_slice name;
    struct sl_slice value;
};

/* The most headers a request may carry; more are refused (431). */
#define GW_MAX_HEADER_COUNT 128u

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

/* Whether the listener's application can serve, for GET /healthz, which
 * the protocol layer answers without authentication: returns 200, or 503
 * with a short reason written into why (cap bytes, NUL-terminated). Any
 * I/O thread, so it reads only what is safe to read from any thread. */
typedef int gw_health_fn(void *app, char *why, size_t cap);

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
    gw_health_fn *health;      /* may be NULL: /healthz is 200 "ok" once listening */
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

/* ---- memory budgets: request bodies and queued replies (gw_budget.c) ---- */

enum gw_budget_kind {
    GW_BUDGET_BODY,     /* request bodies being received or held by a handler */
    GW_BUDGET_RESPONSE, /* response bodies submitted and not yet sent */
    GW_BUDGET_KIND_COUNT
};

/* Why a stream was refused or cut. */
enum gw_budget_refusal {
    GW_BUDGET_REFUSED_STREAM_BODY,     /* new stream while the body budget is spent */
    GW_BUDGET_REFUSED_STREAM_RESPONSE, /* new stream while the response budget is spent */
    GW_BUDGET_REFUSED_BODY,            /* a body that would take the body budget past it */
    GW_BUDGET_STALLED,                 /* an answer that made no progress (gw_h2.h) */
    GW_BUDGET_REFUSAL_COUNT
};

/* Labels for logs and /metrics ("request_body", "stream_body", ...). */
const char *gw__budget_kind_name(enum gw_budget_kind k);
const char *gw__budget_refusal_name(enum gw_budget_refusal r);

/* The limit used when the configuration says 0: a fraction of physical
 * memory (sysconf(_SC_PHYS_PAGES)), clamped to [GW_BUDGET_MIN_DEFAULT,
 * GW_BUDGET_MAX_DEFAULT]. */
#define GW_BUDGET_MIN_DEFAULT ((uint64_t)64 << 20)
#define GW_BUDGET_MAX_DEFAULT ((uint64_t)1 << 30)
uint64_t gw__budget_default(enum gw_budget_kind k);

struct gw_budget;

/* A budget with both limits (0 = gw__budget_default). Never fails
 * (control-plane memory); free with gw__budget_free once no connection
 * can charge it. */
struct gw_budget *gw__budget_new(uint64_t body_limit, uint64_t response_limit);
void gw__budget_free(struct gw_budget *b);

/* New limits (0 = default), effective at the next charge (SIGHUP). Bytes
 * already held above a lowered limit stay; new streams wait for them. */
void gw__budget_set(struct gw_budget *b, uint64_t body_limit, uint64_t response_limit);

/* A snapshot for /metrics and tests (relaxed atomics). */
struct gw_budget_stats {
    uint64_t used[GW_BUDGET_KIND_COUNT];
    uint64_t limit[GW_BUDGET_KIND_COUNT];
    uint64_t refused[GW_BUDGET_REFUSAL_COUNT];
};
void gw__budget_stats(struct gw_budget *b, struct gw_budget_stats *out);

/* ---- connection caps and refusal counters (gw_connlimit.c) ---------------- */

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

struct gw_connlimit;

/* A limiter with both caps (each at least 1). Never fails (control-plane
 * memory); free with gw__connlimit_free. */
struct gw_connlimit *gw__connlimit_new(uint32_t max_connections, uint32_t max_per_peer);
void gw__connlimit_free(struct gw_connlimit *cl);

/* New caps, effective for the next accept (SIGHUP). Connections above a
 * lowered cap stay open; they only make room slower. */
void gw__connlimit_set(struct gw_connlimit *cl, uint32_t max_connections, uint32_t max_per_peer);

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

/* ---- TLS (gw_tls.c) -------------------------------------------------------- */

struct gw_tls_ctx;

/* TLS 1.2+ server context with cert and key files and ALPN "h2" and
 * "http/1.1".
 * Returns NULL with a sentence in err on failure. Thread-safe once built. */
struct gw_tls_ctx *gw__tls_ctx_new(const char *cert_file, const char *key_file, char *err,
                                   size_t errlen);
void gw__tls_ctx_free(struct gw_tls_ctx *ctx);

/* ---- the server: I/O threads and listeners (gw_server.c) ------------------ */

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
