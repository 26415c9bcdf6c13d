/*
 * gw_h2.c -- the HTTP/2 protocol layer: one nghttp2 server session per
 * connection, fed from memory (nghttp2_session_mem_recv) and drained into
 * an output buffer (nghttp2_session_mem_send). No sockets here, so unit
 * tests and the fuzzer drive it from byte arrays.
 *
 * It assembles whole requests within the limits of gw_exchange.h, answers
 * GET /healthz itself, and hands every other request to the listener's
 * handler as a struct gw_exchange (gw_transport.h).
 *
 * Threading: everything runs on the loop thread that owns the connection.
 *
 * Ownership and the exchange life (one per stream):
 *
 *   RECEIVING --END_STREAM--> DISPATCHED --respond--> RESPONDED --close--> freed
 *       |                         |
 *       | limit hit: 4xx/RST      | stream closed first (RST_STREAM,
 *       v                         v connection freed)
 *   REJECTED --close--> freed   cancelled: on_cancel runs, detached;
 *                               respond() only frees
 *
 *  1. An exchange is in its connection's list exactly while attached
 *     (ex->owner != NULL), i.e. while nghttp2 still has its stream.
 *  2. A DISPATCHED exchange is counted in *loop_inflight until respond().
 *  3. nghttp2_session_del() runs no close callbacks, so gw__h2c_free()
 *     detaches every listed exchange itself.
 *
 * Spec: RFC 9113 (HTTP/2); https://nghttp2.org/documentation/
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <nghttp2/nghttp2.h>

#include "gw_budget.h"
#include "gw_connlimit.h"
#include "gw_exchange.h"
#include "gw_h2.h"

#define H2_PREFACE "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
#define H2_PREFACE_LEN (sizeof(H2_PREFACE) - 1)
#define STREAM_WINDOW (1 << 20) /* per stream, bytes */
#define CONN_WINDOW (16 << 20)  /* per connection, bytes */

struct gw_h2c {
    nghttp2_session *session;
    struct gw_proto_env env;
    struct sl_buf out;
    struct gw_exchange *exchanges; /* attached exchanges (invariant 1) */
    size_t exchange_count;
    size_t body_bytes; /* request bodies buffered by attached exchanges */
    size_t preface_seen;
    uint64_t created_ns, last_active_ns, now_ns;
    bool in_feed;
    bool failed;         /* nghttp2 unusable: send nothing more */
    bool close_on_flush; /* done once out is empty */
    bool goaway_sent;
};

static int on_begin_headers(nghttp2_session *s, const nghttp2_frame *frame, void *user);
static int on_header(nghttp2_session *s, const nghttp2_frame *frame, const uint8_t *name,
                     size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags,
                     void *user);
static int on_frame_recv(nghttp2_session *s, const nghttp2_frame *frame, void *user);
static int on_data_chunk_recv(nghttp2_session *s, uint8_t flags, int32_t stream_id,
                              const uint8_t *data, size_t len, void *user);
static int on_stream_close(nghttp2_session *s, int32_t stream_id, uint32_t error_code, void *user);
static int send_body(nghttp2_session *s, nghttp2_frame *frame, const uint8_t *framehd,
                     size_t length, nghttp2_data_source *source, void *user);
static void submit_head(struct gw_exchange *ex, int status, const struct gw_header *headers,
                        size_t header_count);
static void respond_error(struct gw_exchange *ex, int status, const char *type,
                          const char *message);

/* ---- the exchange's owner (gw_exchange.h) ------------------------------ */

static void exchange_unlink(struct gw_exchange *ex)
{
    struct gw_h2c *c = ex->owner;
    if (ex->prev != NULL)
        ex->prev->next = ex->next;
    else
        c->exchanges = ex->next;
    if (ex->next != NULL)
        ex->next->prev = ex->prev;
    ex->prev = ex->next = NULL;
    c->exchange_count--;
    if (c->exchange_count == 0)
        c->last_active_ns = c->now_ns;
}

/* The stream is gone (closed by nghttp2, or the connection freed). Do not
 * touch ex after this. */
static void exchange_detach(struct gw_exchange *ex)
{
    exchange_unlink(ex);
    gw__exchange_detach(ex);
}

static void h2_wake(void *owner)
{
    struct gw_h2c *c = owner;
    if (!c->in_feed && c->env.wake != NULL)
        c->env.wake(c->env.owner);
}

static const struct gw_exchange_ops h2_ops = {.submit = submit_head, .wake = h2_wake};

/* ---- session ------------------------------------------------------------ */

struct gw_h2c *gw__h2c_new(const struct gw_proto_env *env, uint64_t now_ns)
{
    struct gw_h2c *c = sl_xcalloc(1, sizeof(*c));
    c->env = *env;
    c->created_ns = c->last_active_ns = c->now_ns = now_ns;
    sl_buf_init(&c->out);

    nghttp2_session_callbacks *cbs;
    SL_ASSERT(nghttp2_session_callbacks_new(&cbs) == 0);
    nghttp2_session_callbacks_set_on_begin_headers_callback(cbs, on_begin_headers);
    nghttp2_session_callbacks_set_on_header_callback(cbs, on_header);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, on_frame_recv);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, on_data_chunk_recv);
    nghttp2_session_callbacks_set_on_stream_close_callback(cbs, on_stream_close);
    nghttp2_session_callbacks_set_send_data_callback(cbs, send_body);

    nghttp2_option *opt;
    SL_ASSERT(nghttp2_option_new(&opt) == 0);
    /* Enforced locally too, not only advertised (RFC 9113 §6.5.2). */
    nghttp2_option_set_max_deflate_dynamic_table_size(opt, 4096);
    nghttp2_option_set_max_outbound_ack(opt, 1000);
    nghttp2_option_set_max_settings(opt, 32);

    SL_ASSERT(nghttp2_session_server_new2(&c->session, cbs, c, opt) == 0);
    nghttp2_option_del(opt);
    nghttp2_session_callbacks_del(cbs);

    nghttp2_settings_entry iv[] = {
        {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, GW_MAX_CONCURRENT_STREAMS},
        {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, (uint32_t)GW_MAX_HEADER_LIST_BYTES},
        {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, STREAM_WINDOW},
    };
    SL_ASSERT(nghttp2_submit_settings(c->session, NGHTTP2_FLAG_NONE, iv, SL_ARRAY_LEN(iv)) == 0);
    SL_ASSERT(
        nghttp2_session_set_local_window_size(c->session, NGHTTP2_FLAG_NONE, 0, CONN_WINDOW) == 0);
    return c;
}

void gw__h2c_free(struct gw_h2c *c)
{
    if (c == NULL)
        return;
    /* Each detach unlinks its exchange first, so next is read before. */
    struct gw_exchange *next;
    for (struct gw_exchange *ex = c->exchanges; ex != NULL; ex = next) {
        next = ex->next;
        exchange_detach(ex);
    }
    nghttp2_session_del(c->session);
    sl_buf_free(&c->out);
    free(c);
}

/* True when the bytes look like the start of an HTTP/1.x request line:
 * an upper-case method token followed by a space. */
static bool looks_like_http1(const uint8_t *p, size_t n)
{
    size_t i = 0;
    while (i < n && p[i] >= 'A' && p[i] <= 'Z')
        i++;
    return i > 0 && (i == n || p[i] == ' ');
}

/* RFC 9113 §3.4: a client that does not start with the preface is not
 * speaking HTTP/2 with prior knowledge. HTTP/1.x gets a short answer so a
 * human with curl sees why; anything else is just closed. */
static int check_preface(struct gw_h2c *c, const uint8_t *data, size_t n)
{
    size_t take = SL_MIN(n, H2_PREFACE_LEN - c->preface_seen);
    if (memcmp(data, &H2_PREFACE[c->preface_seen], take) == 0) {
        c->preface_seen += take;
        return SL_OK;
    }
    /* The mismatch is in these bytes; what came before matched the preface,
     * whose first three bytes "PRI" also look like a method. */
    bool http1 = c->preface_seen == 0 ? looks_like_http1(data, n) : c->preface_seen <= 3;
    if (http1) {
        static const char reply[] = "HTTP/1.1 505 HTTP Version Not Supported\r\n"
                                    "Connection: close\r\n"
                                    "Content-Type: text/plain\r\n"
                                    "Content-Length: 50\r\n\r\n"
                                    "sluice speaks HTTP/2 only (h2c prior knowledge).\r\n";
        sl_buf_append(&c->out, reply, sizeof(reply) - 1);
    }
    gw__connlimit_count_http(c->env.counters, http1 ? GW_HTTP_VERSION : GW_HTTP_H2_PROTOCOL);
    c->failed = true;
    c->close_on_flush = true;
    return SL_ECLOSED;
}

int gw__h2c_feed(struct gw_h2c *c, const uint8_t *data, size_t n, uint64_t now_ns)
{
    if (c->failed)
        return SL_ECLOSED;
    c->now_ns = c->last_active_ns = now_ns;
    if (n == 0)
        return SL_OK;
    if (c->preface_seen < H2_PREFACE_LEN && check_preface(c, data, n) != SL_OK)
        return SL_ECLOSED;
    c->in_feed = true;
    ssize_t rv = nghttp2_session_mem_recv(c->session, data, n);
    c->in_feed = false;
    if (rv < 0) {
        sl_log(SL_LOG_DEBUG, "gw", "h2: closing connection: %s", nghttp2_strerror((int)rv));
        gw__connlimit_count_http(c->env.counters, GW_HTTP_H2_PROTOCOL);
        /* BAD_CLIENT_MAGIC and FLOODED leave the session usable enough to
         * send the GOAWAY nghttp2 queued; callback failures do not. */
        if (rv != NGHTTP2_ERR_BAD_CLIENT_MAGIC && rv != NGHTTP2_ERR_FLOODED)
            c->failed = true;
        c->close_on_flush = true;
        return SL_ECLOSED;
    }
    return SL_OK;
}

int gw__h2c_flush(struct gw_h2c *c)
{
    /* Our SETTINGS wait for the client's preface, so that an HTTP/1.x
     * client reads a plain HTTP/1.1 answer and not binary frames. */
    bool preface_ok = c->preface_seen == H2_PREFACE_LEN;
    while (!c->failed && preface_ok && c->out.n < GW_OUT_HIGH_WATER) {
        const uint8_t *p;
        ssize_t len = nghttp2_session_mem_send(c->session, &p);
        if (len < 0) {
            sl_log(SL_LOG_DEBUG, "gw", "h2: send failed: %s", nghttp2_strerror((int)len));
            c->failed = true;
            c->close_on_flush = true;
            return SL_ECLOSED;
        }
        if (len == 0)
            break;
        sl_buf_append(&c->out, p, (size_t)len);
    }
    return c->close_on_flush ? SL_ECLOSED : SL_OK;
}

struct sl_slice gw__h2c_output(const struct gw_h2c *c)
{
    return (struct sl_slice){c->out.p, c->out.n};
}

void gw__h2c_output_consume(struct gw_h2c *c, size_t n)
{
    gw__output_consume(&c->out, n);
}

bool gw__h2c_want_write(const struct gw_h2c *c)
{
    return !c->failed && c->preface_seen == H2_PREFACE_LEN && c->out.n < GW_OUT_HIGH_WATER &&
           nghttp2_session_want_write(c->session);
}

bool gw__h2c_done(const struct gw_h2c *c)
{
    if (c->out.n > 0)
        return false;
    if (c->close_on_flush)
        return true;
    if (c->goaway_sent && c->preface_seen < H2_PREFACE_LEN)
        return true; /* shutting down: a client that has not spoken gets nothing */
    if (c->goaway_sent && c->exchange_count == 0 && !nghttp2_session_want_write(c->session))
        return true;
    return !nghttp2_session_want_read(c->session) && !nghttp2_session_want_write(c->session);
}

void gw__h2c_goaway(struct gw_h2c *c)
{
    if (c->failed || c->goaway_sent)
        return;
    c->goaway_sent = true;
    nghttp2_submit_goaway(c->session, NGHTTP2_FLAG_NONE,
                          nghttp2_session_get_last_proc_stream_id(c->session), NGHTTP2_NO_ERROR,
                          NULL, 0);
}

bool gw__h2c_tick(struct gw_h2c *c, uint64_t now_ns)
{
    c->now_ns = now_ns;
    if (c->failed)
        return true;
    if (c->preface_seen < H2_PREFACE_LEN) {
        /* Slowloris on the preface: nothing worth a GOAWAY. */
        return now_ns - c->created_ns > GW_REQUEST_READ_TIMEOUT_NS;
    }
    for (struct gw_exchange *ex = c->exchanges; ex != NULL; ex = ex->next) {
        if (ex->state == GW_EX_RECEIVING && now_ns - ex->begin_ns > GW_REQUEST_READ_TIMEOUT_NS) {
            ex->state = GW_EX_REJECTED;
            gw__connlimit_count_http(c->env.counters, GW_HTTP_REQUEST_TIMEOUT);
            nghttp2_submit_rst_stream(c->session, NGHTTP2_FLAG_NONE, ex->stream_id, NGHTTP2_CANCEL);
        } else if (ex->state == GW_EX_RESPONDED && ex->resp_body != NULL && !ex->stalled &&
                   now_ns - ex->progress_ns > GW_STALL_TIMEOUT_NS) {
            /* A reader that never opens its window must not pin the reply:
             * released now, not when the RST finally gets out. */
            ex->stalled = true;
            gw__exchange_release_response(ex);
            if (ex->budget != NULL)
                gw__budget_count(ex->budget, GW_BUDGET_STALLED);
            gw__connlimit_count_http(c->env.counters, GW_HTTP_STALLED);
            nghttp2_submit_rst_stream(c->session, NGHTTP2_FLAG_NONE, ex->stream_id, NGHTTP2_CANCEL);
        }
    }
    if (c->exchange_count == 0 && now_ns - c->last_active_ns > GW_IDLE_TIMEOUT_NS &&
        !c->goaway_sent) {
        gw__h2c_goaway(c);
        c->close_on_flush = true;
    }
    return false;
}

size_t gw__h2c_open_streams(const struct gw_h2c *c)
{
    return c->exchange_count;
}

/* ---- nghttp2 callbacks: request assembly -------------------------------- */

static struct gw_exchange *stream_exchange(nghttp2_session *s, int32_t stream_id)
{
    return nghttp2_session_get_stream_user_data(s, stream_id);
}

/* RST_STREAM(REFUSED_STREAM): nothing of the request was processed, so
 * clients retry it (RFC 9113 §8.7). What the stream buffered is released
 * now; DATA still in flight is discarded. */
static void refuse_stream(struct gw_exchange *ex)
{
    struct gw_h2c *c = ex->owner;
    ex->state = GW_EX_REJECTED;
    gw__exchange_release_body(ex);
    nghttp2_submit_rst_stream(c->session, NGHTTP2_FLAG_NONE, ex->stream_id, NGHTTP2_REFUSED_STREAM);
}

static int on_begin_headers(nghttp2_session *s, const nghttp2_frame *frame, void *user)
{
    struct gw_h2c *c = user;
    if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST)
        return 0;
    struct gw_exchange_env xenv = {
        .ops = &h2_ops,
        .owner = c,
        .now_ns = &c->now_ns,
        .loop_inflight = c->env.loop_inflight,
        .conn_body_bytes = &c->body_bytes,
        .budget = c->env.budget,
        .flow = c->env.flow,
    };
    struct gw_exchange *ex = gw__exchange_new(&xenv);
    ex->stream_id = frame->hd.stream_id;
    ex->next = c->exchanges;
    if (c->exchanges != NULL)
        c->exchanges->prev = ex;
    c->exchanges = ex;
    c->exchange_count++;
    nghttp2_session_set_stream_user_data(s, ex->stream_id, ex);
    enum gw_budget_refusal why;
    if (ex->budget != NULL && gw__budget_admit(ex->budget, &why) != SL_OK)
        refuse_stream(ex); /* a budget is spent: the client retries later */
    return 0;
}

static int on_header(nghttp2_session *s, const nghttp2_frame *frame, const uint8_t *name,
                     size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags,
                     void *user)
{
    if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST)
        return 0;
    struct gw_exchange *ex = stream_exchange(s, frame->hd.stream_id);
    if (ex == NULL || ex->header_overflow || ex->state != GW_EX_RECEIVING)
        return 0;
    /* Past the limits: answered 431 once the block ends. */
    (void)gw__exchange_add_header(ex, name, namelen, value, valuelen);
    return 0;
}

/* END_STREAM: the request is whole. */
static void request_complete(struct gw_exchange *ex)
{
    struct gw_h2c *c = ex->owner;
    if (ex->state != GW_EX_RECEIVING)
        return;
    if (ex->pseudo[GW_PSEUDO_METHOD] < 0 || ex->pseudo[GW_PSEUDO_PATH] < 0) {
        respond_error(ex, 400, "MissingParameter", "request without :method or :path");
        return;
    }
    gw__exchange_build_request(ex, &c->env);
    const struct gw_handler *h = c->env.handler;
    if (gw__exchange_is_healthz(ex)) {
        gw__exchange_answer_healthz(ex, h);
        return;
    }
    if (h == NULL || h->on_request == NULL) {
        respond_error(ex, 404, "NotFound", "nothing is served on this listener yet");
        return;
    }
    gw__exchange_dispatch(ex, h, c->env.loop_ctx);
}

/* The handler's look at a request before its body (gw_headers_fn): the
 * exchange is lent as if dispatched, and taken back unless answered. */
static void offer_headers(struct gw_exchange *ex)
{
    struct gw_h2c *c = ex->owner;
    const struct gw_handler *h = c->env.handler;
    if (h == NULL || h->on_headers == NULL || ex->pseudo[GW_PSEUDO_METHOD] < 0 ||
        ex->pseudo[GW_PSEUDO_PATH] < 0 || gw__exchange_is_healthz(ex))
        return;
    (void)gw__exchange_offer_headers(ex, &c->env);
}

/* HEADERS ended without END_STREAM: refuse early what cannot succeed. */
static void headers_complete(struct gw_exchange *ex)
{
    if (ex->header_overflow) {
        respond_error(ex, 431, "RequestHeaderFieldsTooLarge",
                      "request header list exceeds 65536 bytes or 128 fields");
        return;
    }
    struct sl_slice v;
    if (gw__exchange_find_header(ex, "content-length", &v)) {
        char tmp[24];
        if (v.n >= sizeof(tmp))
            goto too_large;
        memcpy(tmp, v.p, v.n);
        tmp[v.n] = '\0';
        unsigned long long len = strtoull(tmp, NULL, 10);
        if (len > GW_MAX_REQUEST_BODY)
            goto too_large;
        offer_headers(ex);
        if (ex->state != GW_EX_RECEIVING)
            return;
        if (gw__exchange_body_reserve(ex, (size_t)len) != SL_OK)
            refuse_stream(ex);
        return;
    }
    offer_headers(ex);
    return;
too_large:
    respond_error(ex, 413, "RequestEntityTooLarge",
                  "request body exceeds " GW_MAX_REQUEST_BODY_TEXT " bytes");
}

static int on_frame_recv(nghttp2_session *s, const nghttp2_frame *frame, void *user)
{
    if (frame->hd.type != NGHTTP2_HEADERS && frame->hd.type != NGHTTP2_DATA)
        return 0;
    struct gw_exchange *ex = stream_exchange(s, frame->hd.stream_id);
    if (ex == NULL || ex->owner == NULL || ex->state != GW_EX_RECEIVING)
        return 0;
    if (frame->hd.type == NGHTTP2_HEADERS && ex->header_overflow) {
        headers_complete(ex);
        return 0;
    }
    if (frame->hd.flags & NGHTTP2_FLAG_END_STREAM)
        request_complete(ex);
    else if (frame->hd.type == NGHTTP2_HEADERS && frame->headers.cat == NGHTTP2_HCAT_REQUEST)
        headers_complete(ex);
    return 0;
}

static int on_data_chunk_recv(nghttp2_session *s, uint8_t flags, int32_t stream_id,
                              const uint8_t *data, size_t len, void *user)
{
    struct gw_h2c *c = user;
    struct gw_exchange *ex = stream_exchange(s, stream_id);
    if (ex == NULL || ex->owner == NULL || ex->state != GW_EX_RECEIVING)
        return 0; /* rejected or answered early: discard (windows still open) */
    if (ex->body.n + len > GW_MAX_REQUEST_BODY) {
        respond_error(ex, 413, "RequestEntityTooLarge",
                      "request body exceeds " GW_MAX_REQUEST_BODY_TEXT " bytes");
        return 0;
    }
    if (c->body_bytes + len > GW_MAX_CONN_BODY_BYTES) {
        /* Too much buffered on this connection: the client may retry. */
        refuse_stream(ex);
        return 0;
    }
    if (gw__exchange_body_append(ex, data, len) != SL_OK)
        refuse_stream(ex); /* the process holds all the bodies it may: this one waits */
    return 0;
}

static int on_stream_close(nghttp2_session *s, int32_t stream_id, uint32_t error_code, void *user)
{
    struct gw_exchange *ex = stream_exchange(s, stream_id);
    if (ex == NULL || ex->owner == NULL)
        return 0;
    nghttp2_session_set_stream_user_data(s, stream_id, NULL);
    exchange_detach(ex);
    return 0;
}

/* ---- responses ---------------------------------------------------------- */

/* The body goes out without a copy into nghttp2's frame buffer: read_body
 * only sizes the next DATA frame (NGHTTP2_DATA_FLAG_NO_COPY), and
 * send_body, which nghttp2 calls from the same nghttp2_session_mem_send
 * before it prepares another frame, appends the frame header and the
 * body's bytes to the connection's output itself. For a 1 MiB reply that
 * is one copy of the body fewer (it used to be copied into each frame and
 * then the frame into the output). */
static ssize_t read_body(nghttp2_session *s, int32_t stream_id, uint8_t *buf, size_t length,
                         uint32_t *data_flags, nghttp2_data_source *source, void *user)
{
    struct gw_exchange *ex = source->ptr;
    if (ex->stalled || ex->resp_body == NULL)
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE; /* already reset, memory released */
    size_t n = SL_MIN(length, ex->resp_len - ex->resp_off);
    *data_flags |= NGHTTP2_DATA_FLAG_NO_COPY;
    if (ex->resp_off + n == ex->resp_len)
        *data_flags |= NGHTTP2_DATA_FLAG_EOF;
    return (ssize_t)n;
}

static int send_body(nghttp2_session *s, nghttp2_frame *frame, const uint8_t *framehd,
                     size_t length, nghttp2_data_source *source, void *user)
{
    struct gw_h2c *c = user;
    struct gw_exchange *ex = source->ptr;
    /* nghttp2 goes on to the next frame within the same mem_send: past the
     * high-water mark it is asked to call again once the output drained,
     * so the buffer keeps to GW_H2C_OUT_CAP as when it copied */
    if (c->out.n >= GW_OUT_HIGH_WATER)
        return NGHTTP2_ERR_WOULDBLOCK;
    /* sluice never pads (no select_padding callback), so a DATA frame is
     * its 9-byte header and the body's bytes */
    if (ex->stalled || ex->resp_body == NULL || frame->data.padlen != 0 ||
        length > ex->resp_len - ex->resp_off)
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE; /* the stream is reset */
    sl_buf_append(&c->out, framehd, 9);
    sl_buf_append(&c->out, ex->resp_body + ex->resp_off, length);
    ex->resp_off += length;
    if (length > 0 && ex->owner != NULL)
        ex->progress_ns = *ex->now_ns;
    /* What went to the output is the connection's now: stop counting it here. */
    gw__exchange_response_sent(ex, length);
    if (ex->resp_off == ex->resp_len)
        gw__exchange_release_response(ex);
    return 0;
}

static nghttp2_nv make_nv(struct sl_slice name, struct sl_slice value)
{
    return (nghttp2_nv){(uint8_t *)name.p, (uint8_t *)value.p, name.n, value.n,
                        NGHTTP2_NV_FLAG_NONE};
}

/* A field whose value never repeats (the request id) is sent as a literal
 * never indexed (RFC 7541 §6.2.3): indexed, every answer would add
 * one more dead entry to the connection's HPACK table, evicting the
 * fields that do repeat, and every later lookup in the encoder walks the
 * bucket those dead entries share. */
static nghttp2_nv make_nv_unique(struct sl_slice name, struct sl_slice value)
{
    nghttp2_nv nv = make_nv(name, value);
    nv.flags = NGHTTP2_NV_FLAG_NO_INDEX;
    return nv;
}

/* The exchange owns the body (gw_exchange.c); nghttp2 reads it through
 * read_body as the window allows. */
static void submit_head(struct gw_exchange *ex, int status, const struct gw_header *headers,
                        size_t header_count)
{
    struct gw_h2c *c = ex->owner;
    size_t body_len = ex->resp_len;
    char status_s[24], length_s[24], date_s[GW_HTTP_DATE_CAP];
    gw__format_u64((uint64_t)status, status_s);
    gw__format_u64(body_len, length_s);
    gw__http_date_now(date_s);

    nghttp2_nv *nva = sl_xcalloc(header_count + 4, sizeof(*nva));
    size_t n = 0;
    nva[n++] = make_nv(SL_SLICE_LIT(":status"), sl_slice_cstr(status_s));
    for (size_t i = 0; i < header_count; i++)
        nva[n++] = make_nv(headers[i].name, headers[i].value);
    nva[n++] = make_nv_unique(SL_SLICE_LIT("x-amzn-requestid"), sl_slice_cstr(ex->request_id));
    nva[n++] = make_nv(SL_SLICE_LIT("date"), sl_slice_cstr(date_s));
    nva[n++] = make_nv(SL_SLICE_LIT("content-length"), sl_slice_cstr(length_s));

    nghttp2_data_provider prd = {.source.ptr = ex, .read_callback = read_body};
    int rv = nghttp2_submit_response(c->session, ex->stream_id, nva, n, body_len > 0 ? &prd : NULL);
    free(nva); /* nghttp2 copied the fields */
    if (rv != 0) {
        static struct sl_log_limit submit_log = SL_LOG_LIMIT(5, 10000);
        sl_log_limited(&submit_log, SL_LOG_WARN, "gw",
                       "h2: cannot submit response on stream %" PRId32 ": %s", ex->stream_id,
                       nghttp2_strerror(rv));
        nghttp2_submit_rst_stream(c->session, NGHTTP2_FLAG_NONE, ex->stream_id,
                                  NGHTTP2_INTERNAL_ERROR);
    }
}

static void respond_error(struct gw_exchange *ex, int status, const char *type, const char *message)
{
    struct gw_h2c *c = ex->owner;
    if (status == 431 || status == 413)
        gw__connlimit_count_http(c->env.counters,
                                 status == 431 ? GW_HTTP_HEADER_TOO_LARGE : GW_HTTP_BODY_TOO_LARGE);
    gw__exchange_respond_error(ex, status, type, message, NULL, 0);
}
