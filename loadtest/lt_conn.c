/*
 * lt_conn.c -- one client connection of the load generator: a libuv TCP
 * socket, optionally TLS through OpenSSL memory BIOs (ALPN h2, or http/1.1
 * with --http1), and a protocol engine that never touches the socket:
 * an nghttp2 client session fed with nghttp2_session_mem_recv/mem_send, or
 * with --http1 the HTTP/1.1 step of lt_h1.c (keep-alive; requests pipelined
 * in order, at most one per flow of the scenario, so --streams 1 means no
 * pipelining).
 *
 * Writes are coalesced: submitting a request only marks the session as
 * having output; a uv_prepare handle, run just before the loop would block,
 * drains every session into one uv_write per connection. At most one write
 * is in flight per connection and at most OUT_HIGH_WATER bytes wait behind
 * it, so a slow server bounds the generator's memory.
 *
 * States: CONNECTING -> (HANDSHAKE) -> OPEN -> DEAD. A dead connection
 * fails its in-flight requests once (their callbacks run with status 0) and
 * is freed in the libuv close callback.
 *
 * Threading: the loop thread only. Callbacks of nghttp2 never close a
 * connection: lt_conn_close() during mem_recv is deferred until it returns.
 */
#include "lt_int.h"

#include <stdlib.h>
#include <string.h>

#include <nghttp2/nghttp2.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <uv.h>

#define OUT_HIGH_WATER (1u << 20)
#define MAX_RESPONSE_BYTES (32u << 20)
#define WINDOW_BYTES (16 << 20)
#define READ_BYTES 65536

enum conn_state { CONNECTING, HANDSHAKE, OPEN, DEAD };

struct lt_client {
    uv_loop_t *loop;
    const struct lt_opts *o;
    SSL_CTX *tls;
    uv_prepare_t flusher;
    struct lt_conn **conns;
    size_t conn_count;
    size_t conn_cap;
    nghttp2_session_callbacks *callbacks;
    struct sl_buf authorization; /* scratch for signing */
    struct sl_buf h1_request;    /* scratch: one HTTP/1.1 request, before TLS */
    char target[128];            /* scratch for x-amz-target */
};

struct lt_conn {
    struct lt_client *client;
    uv_tcp_t tcp;
    uv_connect_t connect;
    enum conn_state state;
    nghttp2_session *ng;
    struct lt_h1 *h1;
    SSL *ssl;
    BIO *net_in;  /* ciphertext read from the socket, for SSL */
    BIO *net_out; /* ciphertext SSL produced, to be written */
    lt_conn_ready_cb *ready;
    void *ready_data;
    struct lt_req *inflight; /* oldest first: HTTP/1.1 answers in this order */
    struct lt_req *inflight_tail;
    unsigned inflight_count;
    struct sl_buf out_pending;
    struct sl_buf out_writing;
    uv_write_t write_req;
    bool writing;
    bool in_recv;
    bool close_requested;
    bool closed;
    char readbuf[READ_BYTES];
};

static void conn_fail(struct lt_conn *c, const char *why);
static void conn_flush(struct lt_conn *c);

/* ===== requests ========================================================= */

void lt_req_init(struct lt_req *r)
{
    memset(r, 0, sizeof(*r));
    sl_buf_init(&r->body);
    sl_buf_init(&r->resp);
}

void lt_req_fini(struct lt_req *r)
{
    sl_buf_free(&r->body);
    sl_buf_free(&r->resp);
}

void lt_req_reset(struct lt_req *r)
{
    sl_buf_reset(&r->body);
    sl_buf_reset(&r->resp);
    r->body_off = 0;
    r->status = 0;
    r->query_error[0] = '\0';
    r->transport_error[0] = '\0';
    r->stream_id = 0;
    r->conn = NULL;
}

static void unlink_req(struct lt_conn *c, struct lt_req *r)
{
    if (r->prev) {
        r->prev->next = r->next;
    } else {
        c->inflight = r->next;
    }
    if (r->next) {
        r->next->prev = r->prev;
    } else {
        c->inflight_tail = r->prev;
    }
    r->next = r->prev = NULL;
    c->inflight_count--;
}

static void finish_req(struct lt_conn *c, struct lt_req *r)
{
    unlink_req(c, r);
    r->done_ns = sl_mono_ns();
    r->conn = NULL;
    r->cb(r);
}

/* ===== nghttp2 callbacks ================================================ */

static int on_header(nghttp2_session *s, const nghttp2_frame *frame, const uint8_t *name,
                     size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags, void *ud)
{
    if (frame->hd.type != NGHTTP2_HEADERS) {
        return 0;
    }
    struct lt_req *r = nghttp2_session_get_stream_user_data(s, frame->hd.stream_id);
    if (r == NULL) {
        return 0;
    }
    if (namelen == 7 && memcmp(name, ":status", 7) == 0) {
        int st = 0;
        for (size_t i = 0; i < valuelen && i < 3; i++) {
            st = st * 10 + (value[i] - '0');
        }
        r->status = st;
    } else if (namelen == 18 && memcmp(name, "x-amzn-query-error", 18) == 0) {
        size_t n = SL_MIN(valuelen, sizeof(r->query_error) - 1);
        memcpy(r->query_error, value, n);
        r->query_error[n] = '\0';
    }
    return 0;
}

static int on_data_chunk(nghttp2_session *s, uint8_t flags, int32_t stream_id, const uint8_t *data,
                         size_t len, void *ud)
{
    struct lt_req *r = nghttp2_session_get_stream_user_data(s, stream_id);
    if (r != NULL && r->resp.n + len <= MAX_RESPONSE_BYTES) {
        sl_buf_append(&r->resp, data, len);
    }
    return 0;
}

static int on_stream_close(nghttp2_session *s, int32_t stream_id, uint32_t error_code, void *ud)
{
    struct lt_conn *c = ud;
    struct lt_req *r = nghttp2_session_get_stream_user_data(s, stream_id);
    if (r == NULL) {
        return 0;
    }
    if (error_code != NGHTTP2_NO_ERROR && r->status == 0) {
        snprintf(r->transport_error, sizeof(r->transport_error), "StreamReset_%s",
                 nghttp2_http2_strerror(error_code));
    } else if (r->status == 0) {
        snprintf(r->transport_error, sizeof(r->transport_error), "NoStatus");
    }
    nghttp2_session_set_stream_user_data(s, stream_id, NULL);
    finish_req(c, r);
    return 0;
}

static ssize_t read_body(nghttp2_session *s, int32_t stream_id, uint8_t *buf, size_t len,
                         uint32_t *flags, nghttp2_data_source *src, void *ud)
{
    struct lt_req *r = src->ptr;
    size_t n = SL_MIN(len, r->body.n - r->body_off);
    if (n > 0) {
        memcpy(buf, r->body.p + r->body_off, n);
    }
    r->body_off += n;
    if (r->body_off == r->body.n) {
        *flags |= NGHTTP2_DATA_FLAG_EOF;
    }
    return (ssize_t)n;
}

/* ===== client =========================================================== */

static void on_prepare(uv_prepare_t *h)
{
    struct lt_client *c = h->data;
    for (size_t i = 0; i < c->conn_count; i++) {
        conn_flush(c->conns[i]);
    }
}

struct lt_client *lt_client_new(uv_loop_t *loop, const struct lt_opts *o, void *tls_ctx)
{
    struct lt_client *c = sl_xcalloc(1, sizeof(*c));
    c->loop = loop;
    c->o = o;
    c->tls = tls_ctx;
    sl_buf_init(&c->authorization);
    sl_buf_init(&c->h1_request);
    SL_ASSERT(nghttp2_session_callbacks_new(&c->callbacks) == 0);
    nghttp2_session_callbacks_set_on_header_callback(c->callbacks, on_header);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(c->callbacks, on_data_chunk);
    nghttp2_session_callbacks_set_on_stream_close_callback(c->callbacks, on_stream_close);
    uv_prepare_init(loop, &c->flusher);
    c->flusher.data = c;
    uv_prepare_start(&c->flusher, on_prepare);
    return c;
}

static void on_client_closed(uv_handle_t *h)
{
    struct lt_client *c = h->data;
    nghttp2_session_callbacks_del(c->callbacks);
    sl_buf_free(&c->authorization);
    sl_buf_free(&c->h1_request);
    free(c->conns);
    free(c);
}

void lt_client_free(struct lt_client *c)
{
    if (c == NULL) {
        return;
    }
    /* A connection inside its own mem_recv only marks itself; it closes
     * (and leaves the array) when that returns, before the close callback
     * below can run. */
    size_t i = c->conn_count;
    while (i > 0) {
        lt_conn_close(c->conns[--i]);
    }
    uv_close((uv_handle_t *)&c->flusher, on_client_closed);
}

void *lt_tls_ctx_new(const struct lt_opts *o, char *err, size_t errlen)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (ctx == NULL) {
        snprintf(err, errlen, "SSL_CTX_new failed");
        return NULL;
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    static const unsigned char alpn_h2[] = "\x02h2";
    static const unsigned char alpn_h1[] = "\x08http/1.1";
    if (o->http1) {
        SSL_CTX_set_alpn_protos(ctx, alpn_h1, sizeof(alpn_h1) - 1);
    } else {
        SSL_CTX_set_alpn_protos(ctx, alpn_h2, sizeof(alpn_h2) - 1);
    }
    if (o->cacert != NULL) {
        if (SSL_CTX_load_verify_locations(ctx, o->cacert, NULL) != 1) {
            snprintf(err, errlen, "cannot load CA certificate %s", o->cacert);
            SSL_CTX_free(ctx);
            return NULL;
        }
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    } else {
        /* Benchmarks run against throw-away self-signed certificates. */
        SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
    }
    return ctx;
}

void lt_tls_ctx_free(void *ctx)
{
    SSL_CTX_free(ctx);
}

/* ===== connection: output =============================================== */

static void drain_tls_output(struct lt_conn *c)
{
    char buf[16384];
    int n;
    while ((n = BIO_read(c->net_out, buf, sizeof(buf))) > 0) {
        sl_buf_append(&c->out_pending, buf, (size_t)n);
    }
}

/* Queues protocol bytes for the socket, through TLS when there is TLS. */
static void conn_output(struct lt_conn *c, const char *data, size_t n)
{
    if (c->ssl != NULL) {
        SSL_write(c->ssl, data, (int)n); /* a memory BIO takes it all */
        drain_tls_output(c);
    } else {
        sl_buf_append(&c->out_pending, data, n);
    }
}

static void on_write(uv_write_t *w, int status);

static void start_write(struct lt_conn *c)
{
    if (c->writing || c->out_pending.n == 0 || c->state == DEAD) {
        return;
    }
    struct sl_buf t = c->out_writing;
    c->out_writing = c->out_pending;
    c->out_pending = t;
    sl_buf_reset(&c->out_pending);
    uv_buf_t b = uv_buf_init(c->out_writing.p, (unsigned)c->out_writing.n);
    c->write_req.data = c;
    int rc = uv_write(&c->write_req, (uv_stream_t *)&c->tcp, &b, 1, on_write);
    if (rc < 0) {
        conn_fail(c, uv_err_name(rc));
        return;
    }
    c->writing = true;
}

static void on_write(uv_write_t *w, int status)
{
    struct lt_conn *c = w->data;
    c->writing = false;
    sl_buf_reset(&c->out_writing);
    if (c->state == DEAD) {
        return;
    }
    if (status < 0) {
        conn_fail(c, uv_err_name(status));
        return;
    }
    conn_flush(c);
}

static void conn_flush(struct lt_conn *c)
{
    if (c->state == OPEN && !c->in_recv && c->ng != NULL) {
        while (c->out_pending.n < OUT_HIGH_WATER && nghttp2_session_want_write(c->ng)) {
            const uint8_t *data;
            ssize_t n = nghttp2_session_mem_send(c->ng, &data);
            if (n < 0) {
                conn_fail(c, nghttp2_strerror((int)n));
                return;
            }
            if (n == 0) {
                break;
            }
            conn_output(c, (const char *)data, (size_t)n);
        }
        if (!nghttp2_session_want_read(c->ng) && !nghttp2_session_want_write(c->ng)) {
            conn_fail(c, "SessionEnded");
            return;
        }
    }
    start_write(c);
}

/* ===== connection: input ================================================ */

static struct lt_req *h1_front(void *data)
{
    struct lt_conn *c = data;
    return c->inflight;
}

static void h1_done(void *data, struct lt_req *r)
{
    finish_req(data, r);
}

static void start_session(struct lt_conn *c)
{
    if (c->client->o->http1) {
        c->h1 = lt_h1_new(h1_front, h1_done, c);
    } else {
        nghttp2_session_client_new(&c->ng, c->client->callbacks, c);
        nghttp2_settings_entry settings[] = {
            {NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
            {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, WINDOW_BYTES},
        };
        nghttp2_submit_settings(c->ng, NGHTTP2_FLAG_NONE, settings, SL_ARRAY_LEN(settings));
        nghttp2_session_set_local_window_size(c->ng, NGHTTP2_FLAG_NONE, 0, WINDOW_BYTES);
    }
    c->state = OPEN;
    conn_flush(c);
    if (c->ready != NULL) {
        lt_conn_ready_cb *ready = c->ready;
        c->ready = NULL;
        ready(c, SL_OK, c->ready_data);
    }
}

/* Hands bytes the server sent to the protocol engine (n = 0: it closed). */
static void feed(struct lt_conn *c, const char *data, size_t n)
{
    const char *why = NULL;
    c->in_recv = true;
    if (c->h1 != NULL) {
        if (lt_h1_feed(c->h1, data, n, &why) == SL_OK) {
            why = NULL;
        }
    } else if (n > 0) {
        ssize_t rv = nghttp2_session_mem_recv(c->ng, (const uint8_t *)data, n);
        why = rv < 0 ? nghttp2_strerror((int)rv) : NULL;
    }
    c->in_recv = false;
    if (why != NULL) {
        conn_fail(c, why);
    }
    if (c->close_requested) {
        lt_conn_close(c);
        return;
    }
    conn_flush(c);
}

static void do_handshake(struct lt_conn *c)
{
    int rv = SSL_do_handshake(c->ssl);
    drain_tls_output(c);
    start_write(c);
    if (rv == 1) {
        const unsigned char *proto = NULL;
        unsigned len = 0;
        SSL_get0_alpn_selected(c->ssl, &proto, &len);
        /* A server that answers no ALPN speaks HTTP/1.1 (RFC 7301). */
        bool ok = c->client->o->http1 ? len == 0 || (len == 8 && memcmp(proto, "http/1.1", 8) == 0)
                                      : len == 2 && memcmp(proto, "h2", 2) == 0;
        if (!ok) {
            conn_fail(c, c->client->o->http1 ? "ALPN_not_http/1.1" : "ALPN_not_h2");
            return;
        }
        start_session(c);
        return;
    }
    int e = SSL_get_error(c->ssl, rv);
    if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE) {
        conn_fail(c, "TLSHandshakeFailed");
    }
}

static void read_tls(struct lt_conn *c)
{
    if (c->state == HANDSHAKE) {
        do_handshake(c);
    }
    char plain[16384];
    while (c->state == OPEN) {
        int n = SSL_read(c->ssl, plain, sizeof(plain));
        if (n > 0) {
            feed(c, plain, (size_t)n);
            continue;
        }
        int e = SSL_get_error(c->ssl, n);
        if (e != SSL_ERROR_WANT_READ) {
            conn_fail(c, e == SSL_ERROR_ZERO_RETURN ? "TLSClosed" : "TLSError");
        }
        break;
    }
}

static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
    struct lt_conn *c = h->data;
    *buf = uv_buf_init(c->readbuf, sizeof(c->readbuf));
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    struct lt_conn *c = s->data;
    if (nread == 0 || c->state == DEAD) {
        return;
    }
    if (nread < 0) {
        if (nread == UV_EOF && c->h1 != NULL && c->state == OPEN) {
            feed(c, NULL, 0); /* a reply delimited by the close completes now */
        }
        conn_fail(c, nread == UV_EOF ? "ConnectionClosed" : uv_err_name((int)nread));
        return;
    }
    if (c->ssl != NULL) {
        BIO_write(c->net_in, buf->base, (int)nread);
        read_tls(c);
    } else if (c->state == OPEN) {
        feed(c, buf->base, (size_t)nread);
    }
}

static void on_connect(uv_connect_t *req, int status)
{
    struct lt_conn *c = req->data;
    if (c->state == DEAD) {
        return;
    }
    if (status < 0) {
        conn_fail(c, uv_err_name(status));
        return;
    }
    uv_tcp_nodelay(&c->tcp, 1);
    uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
    if (c->client->tls == NULL) {
        start_session(c);
        return;
    }
    c->ssl = SSL_new(c->client->tls);
    c->net_in = BIO_new(BIO_s_mem());
    c->net_out = BIO_new(BIO_s_mem());
    SSL_set_bio(c->ssl, c->net_in, c->net_out); /* the SSL owns both BIOs now */
    SSL_set_connect_state(c->ssl);
    c->state = HANDSHAKE;
    do_handshake(c);
}

struct lt_conn *lt_conn_open(struct lt_client *cl, lt_conn_ready_cb *ready, void *data)
{
    struct lt_conn *c = sl_xcalloc(1, sizeof(*c));
    c->client = cl;
    c->ready = ready;
    c->ready_data = data;
    c->state = CONNECTING;
    sl_buf_init(&c->out_pending);
    sl_buf_init(&c->out_writing);
    uv_tcp_init(cl->loop, &c->tcp);
    c->tcp.data = c;
    c->connect.data = c;
    if (cl->conn_count == cl->conn_cap) {
        cl->conn_cap = cl->conn_cap ? 2 * cl->conn_cap : 8;
        cl->conns = sl_xrealloc(cl->conns, cl->conn_cap * sizeof(*cl->conns));
    }
    cl->conns[cl->conn_count++] = c;

    struct sockaddr_storage addr;
    int rc = uv_ip4_addr(cl->o->host, cl->o->port, (struct sockaddr_in *)&addr);
    if (rc < 0) {
        rc = uv_ip6_addr(cl->o->host, cl->o->port, (struct sockaddr_in6 *)&addr);
    }
    if (rc == 0) {
        rc = uv_tcp_connect(&c->connect, &c->tcp, (const struct sockaddr *)&addr, on_connect);
    }
    if (rc < 0) {
        /* Report asynchronously-looking but from here: the caller's ready
         * callback must cope with running before lt_conn_open returns. */
        conn_fail(c, uv_err_name(rc));
    }
    return c;
}

/* ===== connection: end ================================================== */

static void on_conn_closed(uv_handle_t *h)
{
    struct lt_conn *c = h->data;
    sl_buf_free(&c->out_pending);
    sl_buf_free(&c->out_writing);
    free(c);
}

static void conn_fail(struct lt_conn *c, const char *why)
{
    if (c->state == DEAD) {
        return;
    }
    c->state = DEAD;
    if (c->ready != NULL) {
        lt_conn_ready_cb *ready = c->ready;
        c->ready = NULL;
        ready(c, SL_EIO, c->ready_data);
    }
    /* Fail what is in flight; the callbacks may not submit here (DEAD). */
    while (c->inflight != NULL) {
        struct lt_req *r = c->inflight;
        if (c->ng != NULL) {
            nghttp2_session_set_stream_user_data(c->ng, r->stream_id, NULL);
        }
        snprintf(r->transport_error, sizeof(r->transport_error), "%s", why);
        r->status = 0;
        finish_req(c, r);
    }
}

void lt_conn_close(struct lt_conn *c)
{
    if (c->in_recv) {
        c->close_requested = true;
        return;
    }
    if (c->closed) {
        return;
    }
    c->closed = true;
    conn_fail(c, "ClosedByClient");
    struct lt_client *cl = c->client;
    for (size_t i = 0; i < cl->conn_count; i++) {
        if (cl->conns[i] == c) {
            cl->conns[i] = cl->conns[--cl->conn_count];
            break;
        }
    }
    if (c->ng != NULL) {
        nghttp2_session_del(c->ng);
        c->ng = NULL;
    }
    lt_h1_free(c->h1);
    c->h1 = NULL;
    if (c->ssl != NULL) {
        SSL_free(c->ssl);
        c->ssl = NULL;
    }
    uv_close((uv_handle_t *)&c->tcp, on_conn_closed);
}

bool lt_conn_usable(const struct lt_conn *c)
{
    return c->state == OPEN;
}

unsigned lt_conn_inflight(const struct lt_conn *c)
{
    return c->inflight_count;
}

/* Puts r at the tail of the in-flight list. */
static void link_req(struct lt_conn *c, struct lt_req *r)
{
    r->conn = c;
    r->next = NULL;
    r->prev = c->inflight_tail;
    if (c->inflight_tail) {
        c->inflight_tail->next = r;
    } else {
        c->inflight = r;
    }
    c->inflight_tail = r;
    c->inflight_count++;
    r->issued_ns = sl_mono_ns();
}

static int submit_h2(struct lt_conn *c, struct lt_req *r, const struct sigv4_header *hdr, size_t n)
{
    struct lt_client *cl = c->client;
    char clen[24];
    int cn = snprintf(clen, sizeof(clen), "%zu", r->body.n);
    const char *scheme = cl->tls ? "https" : "http";
#define NV(n, v, vl) {(uint8_t *)(n), (uint8_t *)(v), sizeof(n) - 1, (vl), NGHTTP2_NV_FLAG_NONE}
    nghttp2_nv nv[5 + 4] = {
        NV(":method", "POST", 4),
        NV(":scheme", scheme, strlen(scheme)),
        NV(":authority", cl->o->authority, strlen(cl->o->authority)),
        NV(":path", "/", 1),
        NV("content-length", clen, (size_t)cn),
    };
#undef NV
    size_t nvn = 5;
    SL_ASSERT(nvn + n <= SL_ARRAY_LEN(nv));
    for (size_t i = 0; i < n; i++, nvn++) {
        nv[nvn] = (nghttp2_nv){(uint8_t *)hdr[i].name.p, (uint8_t *)hdr[i].value.p, hdr[i].name.n,
                               hdr[i].value.n, NGHTTP2_NV_FLAG_NONE};
    }
    nghttp2_data_provider prd = {.source.ptr = r, .read_callback = read_body};
    r->body_off = 0;
    int32_t sid = nghttp2_submit_request(c->ng, NULL, nv, nvn, &prd, r);
    if (sid < 0) {
        return SL_ECLOSED;
    }
    r->stream_id = sid;
    return SL_OK;
}

int lt_conn_submit(struct lt_conn *c, struct lt_req *r)
{
    if (c->state != OPEN) {
        return SL_ECLOSED;
    }
    struct lt_client *cl = c->client;
    bool json = cl->o->protocol == LT_PROTO_JSON;
    int tn = snprintf(cl->target, sizeof(cl->target), "AmazonSQS.%s", r->action);
    if (tn < 0 || (size_t)tn >= sizeof(cl->target)) {
        return SL_EINVAL;
    }
    /* Signed, in this order; then x-amz-date and authorization. */
    struct sigv4_header hdr[4] = {
        {SL_SLICE_LIT("content-type"),
         json ? SL_SLICE_LIT("application/x-amz-json-1.0") : SL_SLICE_LIT(LT_FORM_CONTENT_TYPE)},
        {SL_SLICE_LIT("x-amz-target"), {cl->target, (size_t)tn}},
    };
    size_t signed_n = json ? 2 : 1;
    char amz_date[17];
    struct sl_slice body = {r->body.p ? r->body.p : "", r->body.n};
    int rc = lt_sign(r->cred, "/", cl->o->authority, hdr, signed_n, body,
                     (int64_t)(sl_wall_ms() / 1000), amz_date, &cl->authorization);
    if (rc != SL_OK) {
        return rc;
    }
    hdr[signed_n] = (struct sigv4_header){SL_SLICE_LIT("x-amz-date"), {amz_date, 16}};
    hdr[signed_n + 1] = (struct sigv4_header){SL_SLICE_LIT("authorization"),
                                              {cl->authorization.p, cl->authorization.n}};
    if (c->h1 != NULL) {
        if (c->ssl == NULL) { /* straight into the output, no copy */
            lt_h1_request(&c->out_pending, "/", cl->o->authority, hdr, signed_n + 2, body);
        } else {
            sl_buf_reset(&cl->h1_request);
            lt_h1_request(&cl->h1_request, "/", cl->o->authority, hdr, signed_n + 2, body);
            conn_output(c, cl->h1_request.p, cl->h1_request.n);
        }
    } else if ((rc = submit_h2(c, r, hdr, signed_n + 2)) != SL_OK) {
        return rc;
    }
    link_req(c, r);
    return SL_OK;
}
