/*
 * gw_exchange.h -- (gateway-internal) one request and its answer, whatever
 * HTTP version carried it (gw_exchange.c): the request's stored headers and
 * body, its request id, its charges against the memory budgets, the
 * handler's hold (loop_inflight, cancel hook) and the response body it owns
 * until sent. It implements the API side of gw_transport.h.
 *
 * The protocol layers (gw_h2.c, gw_h1.c) sit above it: they create
 * exchanges, feed them headers and body, and are told through a small ops
 * table when a response is submitted, so this file never names them.
 *
 * Also the limits every protocol layer applies alike.
 *
 * Threading: an exchange belongs to the loop thread of its connection.
 */
#ifndef SLUICE_GW_EXCHANGE_H
#define SLUICE_GW_EXCHANGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gw_transport.h"
#include "gw_runq.h"
#include "sl.h"

/* ---- limits of the protocol layers ---------------------------------------- */

/* SQS's 1 MiB message (body and attributes) as a client may encode it,
 * plus room for the envelope and batch framing. Encoding triples a byte
 * at worst for characters SQS allows: the query protocol's %XX for every
 * byte outside the unreserved set, JSON's \u00e9 for a two-byte character
 * (botocore escapes every non-ASCII character) and a surrogate pair of 12
 * bytes for a four-byte one. The decoders hold the decoded message to
 * 1 MiB. Larger bodies are answered 413. */
#define GW_MAX_REQUEST_BODY ((size_t)3 * 1024 * 1024 + (size_t)64 * 1024)
#define GW_MAX_REQUEST_BODY_TEXT "3211264"
#define GW_MAX_HEADER_LIST_BYTES ((size_t)64 * 1024) /* RFC 9113 §6.5.2 accounting */
/* The first allocation of a request's header bytes (gw_exchange.c). */
#define GW_HDR_STORE_FIRST ((size_t)2048)
/* Output backlog (bytes produced but not yet written to the socket) above
 * which the connection stops reading and the protocol layer stops
 * producing; reading resumes below the low mark. */
#define GW_OUT_HIGH_WATER ((size_t)256 * 1024)
#define GW_OUT_LOW_WATER ((size_t)64 * 1024)
#define GW_IDLE_TIMEOUT_NS (60ull * 1000000000ull)         /* no open request */
#define GW_REQUEST_READ_TIMEOUT_NS (30ull * 1000000000ull) /* preface, or one request */
/* An answer whose bytes make no progress this long (the client's window
 * stays 0, or it does not read the socket) is cut and its bytes released. */
#define GW_STALL_TIMEOUT_NS (30ull * 1000000000ull)

/* ---- a protocol connection's surroundings --------------------------------- */

struct gw_budget;
struct gw_connlimit;

/* What a protocol connection (gw_h2.h, gw_h1.h) needs from its surroundings. */
struct gw_proto_env {
    const struct gw_handler *handler; /* borrowed; on_request may be NULL (404) */
    void *loop_ctx;                   /* handler->loop_start()'s result */
    bool tls;                         /* reported in struct gw_request */
    uint8_t peer[16];                 /* the client's address, as in struct gw_request */
    /* Exchanges held by the handler (dispatched, not yet responded), summed
     * over every connection of the loop; outlives each connection because a
     * handler may respond after the connection is gone. May be NULL. */
    size_t *loop_inflight;
    /* Called when output became pending outside feed (a handler
     * responded later); the owner should schedule a flush. */
    void (*wake)(void *owner);
    void *owner;
    /* Process-wide memory budgets (gw_budget.h): request bodies are charged
     * as they arrive, responses until sent; new streams are refused with
     * REFUSED_STREAM (HTTP/2) or 503 (HTTP/1.1) while either is spent. Borrowed; must outlive every
     * exchange. May be NULL (no process-wide accounting). */
    struct gw_budget *budget;
    /* The listener's counters of refusals and versions (gw_connlimit.h).
     * Borrowed; may be NULL (refusals are only logged). */
    struct gw_connlimit *counters;
    /* The connection's place in its loop's run queue (gw_runq.h): whole
     * requests wait there for their turn. Borrowed; the connection is
     * freed only after its exchanges left it. NULL: requests go to the
     * handler at once (tests, fuzzers). */
    struct gw_runq_flow *flow;
};

/* ---- the exchange ---------------------------------------------------------- */

/* QUEUED: whole, waiting in the run queue for the handler; counted in
 * loop_inflight like DISPATCHED, but no handler holds it yet. */
enum gw_ex_state {
    GW_EX_RECEIVING,
    GW_EX_REJECTED,
    GW_EX_QUEUED,
    GW_EX_DISPATCHED,
    GW_EX_RESPONDED
};

/* Where one header's bytes sit in hdr_store; offsets survive reallocs. */
struct gw_hdr_ref {
    uint32_t name_off, name_len, value_off, value_len;
};

enum { GW_PSEUDO_METHOD, GW_PSEUDO_PATH, GW_PSEUDO_AUTHORITY, GW_PSEUDO_SCHEME, GW_PSEUDO_COUNT };

struct gw_exchange_ops {
    /* The response is stored in the exchange (resp_body, resp_len): write
     * its head with these fields plus date, content-length and
     * x-amzn-requestid, and send the body from resp_body. */
    void (*submit)(struct gw_exchange *ex, int status, const struct gw_header *headers,
                   size_t header_count);
    /* A handler responded outside the owner's feed: schedule a flush. */
    void (*wake)(void *owner);
};

struct gw_exchange {
    const struct gw_exchange_ops *ops;
    void *owner;                     /* the protocol connection; NULL once detached (stream gone) */
    const uint64_t *now_ns;          /* the owner's clock; read only while attached */
    struct gw_exchange *prev, *next; /* the owner's list */
    int32_t stream_id;               /* HTTP/2 only */
    size_t *loop_inflight;
    size_t *conn_body_bytes;   /* the owner's sum of buffered bodies, or NULL */
    struct gw_runq_flow *flow; /* the owner's, or NULL */
    struct gw_runq_item run_item;
    const struct gw_handler *handler; /* while QUEUED: who gets it */
    void *loop_ctx;
    enum gw_ex_state state;
    bool cancelled;
    gw_cancel_fn *on_cancel;
    void *cancel_data;
    bool client_done; /* gw_exchange_client_done */
    gw_cancel_fn *on_client_done;
    void *client_done_data;
    uint64_t begin_ns;

    /* request, bounded by GW_MAX_HEADER_* and GW_MAX_REQUEST_BODY */
    size_t header_list_bytes;
    struct sl_buf hdr_store;
    struct gw_hdr_ref *refs;
    size_t ref_count;
    int pseudo[GW_PSEUDO_COUNT]; /* index into refs, -1 when absent */
    bool header_overflow;
    struct gw_header *headers;
    struct sl_buf body;
    struct gw_request req;
    char request_id[37];

    /* Process-wide accounting (gw_budget.h), NULL when the owner has none.
     * Borrowed: the budget outlives every connection. */
    struct gw_budget *budget;
    size_t body_charged; /* body bytes charged: reserved or received */

    /* response body, owned until sent, then freed */
    char *resp_body;
    size_t resp_len, resp_off;
    size_t resp_charged;  /* of resp_len, still charged to the budget */
    uint64_t progress_ns; /* response submitted, or last bytes taken */
    bool stalled;         /* cut by a stall timer; nothing more to send */
};

/* What a protocol connection gives each of its exchanges. */
struct gw_exchange_env {
    const struct gw_exchange_ops *ops;
    void *owner;
    const uint64_t *now_ns;
    size_t *loop_inflight;     /* may be NULL */
    size_t *conn_body_bytes;   /* may be NULL */
    struct gw_budget *budget;  /* may be NULL */
    struct gw_runq_flow *flow; /* may be NULL: dispatch at once */
};

/* A new exchange in GW_EX_RECEIVING, attached to env->owner. */
struct gw_exchange *gw__exchange_new(const struct gw_exchange_env *env);

/* Frees ex and everything it holds. Only for an exchange no handler holds. */
void gw__exchange_free(struct gw_exchange *ex);

/* The owner lets go of ex (stream closed, connection freed): frees it
 * unless the handler holds it, in which case it is cancelled (on_cancel
 * runs now) and lives until respond. A request still in the run queue is
 * taken out and freed: no handler ever sees it. Do not touch ex after
 * this. The caller has already taken it off its own list. */
void gw__exchange_detach(struct gw_exchange *ex);

/* The client will send nothing more (HTTP/1.1 EOF): marks ex, and runs
 * its on_client_done hook if the handler holds it. ex may be freed by the
 * hook (it may respond). */
void gw__exchange_client_done(struct gw_exchange *ex);

/* Stores one header (pseudo-headers start with ':'). Returns SL_OK, or
 * SL_ETOOBIG once the list passes GW_MAX_HEADER_LIST_BYTES (counted as
 * RFC 9113 §6.5.2 does) or GW_MAX_HEADER_COUNT; header_overflow is then
 * set and nothing more is stored. */
int gw__exchange_add_header(struct gw_exchange *ex, const void *name, size_t namelen,
                            const void *value, size_t valuelen);

/* A stored pseudo-header's value, or empty. */
struct sl_slice gw__exchange_pseudo(const struct gw_exchange *ex, int which);

/* The first stored header named name (lower case): true and *value set,
 * or false. */
bool gw__exchange_find_header(const struct gw_exchange *ex, const char *name,
                              struct sl_slice *value);

/* Builds ex->req from the stored headers and the body so far. */
void gw__exchange_build_request(struct gw_exchange *ex, const struct gw_proto_env *env);

/* GET or HEAD /healthz, answered by the protocol layer itself. */
bool gw__exchange_is_healthz(const struct gw_exchange *ex);

/* Answers /healthz: 200 "ok", or what the handler's health hook says. */
void gw__exchange_answer_healthz(struct gw_exchange *ex, const struct gw_handler *h);

/* Charges a body of known length against the budget before it arrives.
 * Returns SL_OK or SL_EBUSY (counted as a body refusal). */
int gw__exchange_body_reserve(struct gw_exchange *ex, size_t len);

/* Appends body bytes. Returns SL_OK, SL_ETOOBIG (past
 * GW_MAX_REQUEST_BODY) or SL_EBUSY (the body budget is spent; counted). */
int gw__exchange_body_append(struct gw_exchange *ex, const void *data, size_t len);

/* Gives back the request body (and its charge). */
void gw__exchange_release_body(struct gw_exchange *ex);

/* Gives back the response body (and its charge). */
void gw__exchange_release_response(struct gw_exchange *ex);

/* n more response bytes were taken by the owner: stop charging them. */
void gw__exchange_response_sent(struct gw_exchange *ex, size_t n);

/* Hands a request the protocol layer finished to the handler, through the
 * owner's run queue when it has one (QUEUED, then DISPATCHED in a later
 * turn), else at once. Counted in loop_inflight from now until the
 * handler responds, which may happen before this returns only without a
 * run queue. */
void gw__exchange_dispatch(struct gw_exchange *ex, const struct gw_handler *h, void *loop_ctx);

/* The handler's on_headers look at a request before its body. Returns true
 * when it answered (ex is GW_EX_RESPONDED), false when the body is wanted
 * (ex back in GW_EX_RECEIVING). */
bool gw__exchange_offer_headers(struct gw_exchange *ex, const struct gw_proto_env *env);

/* Responses made by the protocol layer itself (not the handler's). The
 * first copies body; the second owns it (malloc'd, NULL when empty). */
void gw__exchange_submit(struct gw_exchange *ex, int status, const struct gw_header *headers,
                         size_t header_count, const void *body, size_t body_len);
void gw__exchange_submit_owned(struct gw_exchange *ex, int status, const struct gw_header *headers,
                               size_t header_count, char *body, size_t body_len);

/* A refusal of the protocol layer (413, 431, 503 ...) shaped as an SQS
 * error of the client's protocol, so SDKs surface the message: the query
 * protocol's XML ErrorResponse when the headers so far show a query
 * request (gw_request_is_query), else the JSON 1.0 error. type is the
 * error code, message plain text; 4xx are the sender's fault, 5xx the
 * receiver's. extra headers (may be NULL) are added. */
void gw__exchange_respond_error(struct gw_exchange *ex, int status, const char *type,
                                const char *message, const struct gw_header *extra,
                                size_t extra_count);

/* ---- response header values, shared by both versions ----------------------- */

#define GW_HTTP_DATE_CAP 32 /* "Sun, 06 Nov 1994 08:49:37 GMT" and a NUL */

/* The Date header's value for now (RFC 9110 §5.6.7) into out, NUL-ended.
 * Formatted once a second per thread: strftime for every response showed
 * in profiles of the cheapest request. Returns its length. */
size_t gw__http_date_now(char out[GW_HTTP_DATE_CAP]);

/* The decimal digits of v into out, NUL-ended; returns their count. */
size_t gw__format_u64(uint64_t v, char out[24]);

/* ---- the output buffer of a protocol connection ------------------------------ */

/* Drops the first n bytes of out (written to the socket); a large buffer
 * emptied gives its memory back (slow reader bursts). */
void gw__output_consume(struct sl_buf *out, size_t n);

#endif
