/*
 * gw_conn.c -- one accepted TCP connection on a loop thread: moves bytes
 * between the socket, TLS (gw_tls.c, optional) and the protocol layer
 * (gw_h2.c or gw_h1.c), applies backpressure, and runs the connection's
 * timer.
 *
 * The protocol: with TLS, ALPN decides ("h2" is HTTP/2; "http/1.1" or no
 * ALPN is HTTP/1.1). In cleartext the first bytes do: the HTTP/2 client
 * preface (RFC 9113 §3.4) means h2c, anything else HTTP/1.x. While the
 * bytes so far are a prefix of the preface, they are held and the choice
 * waits (GW_REQUEST_READ_TIMEOUT_NS at most).
 *
 * Threading: everything runs on the loop thread that accepted the socket.
 *
 * Ownership: struct gw_conn is heap memory owned by its loop's list from
 * accept until conn_close(); then by libuv until the last of its handles'
 * close callbacks, which frees it (libuv calls pending write callbacks, with
 * UV_ECANCELED, before the close callback, so no write outlives it).
 *
 * Backpressure (a slow reader must not pin memory):
 *  1. The backlog is what the protocol layer holds in its output buffer plus
 *     what sits in uv_write requests not yet completed.
 *  2. Above GW_OUT_HIGH_WATER the connection stops reading from the socket
 *     and stops pulling output from the protocol layer; below
 *     GW_OUT_LOW_WATER, in the write callback, it resumes both.
 *  3. Written bytes that make no progress for GW_STALL_TIMEOUT_NS (the
 *     client does not read its socket) close the connection, so they are
 *     not held until the client goes.
 *
 * EOF ends an HTTP/2 connection at once. On HTTP/1.1 it may be a
 * half-close (the client shut down its sending side and waits for the
 * answers): reading stops, gw_h1.c answers what was asked, and the
 * connection closes once that is written. A client that was really gone
 * makes the write fail, which closes it too.
 *
 * An HTTP/1.1 connection that ends while the client may still be sending
 * (a 413 or a refusal before the body) is not closed at once: closing a
 * socket with unread input makes the kernel send RST, which can destroy
 * the answer before the client reads it. Its write side is shut down and
 * input is read and dropped until the client closes, at most
 * LINGER_NS (RFC 9112 §9.6).
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <uv.h>

#include "gw_budget.h"
#include "gw_conn.h"
#include "gw_h1.h"
#include "gw_h2.h"
#include "gw_tls.h"

#define H2_PREFACE "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
#define H2_PREFACE_LEN (sizeof(H2_PREFACE) - 1)
#define LINGER_NS (2ull * 1000000000ull)

struct gw_conn {
    uv_tcp_t tcp;
    uv_timer_t timer; /* timeouts, once a second */
    uv_idle_t wake;   /* deferred flush after an asynchronous respond */
    struct gw_loop_state *ls;
    struct gw_connlimit *limits; /* holds this connection's slot until it closes */
    struct gw_peer peer;
    struct gw_conn *prev, *next;
    struct gw_budget *budget;
    const struct gw_handler *handler;
    void *loop_ctx;
    /* The protocol, once known: exactly one of these, or neither yet. */
    struct gw_h2c *h2c;
    struct gw_h1c *h1c;
    struct gw_runq_flow flow; /* its requests' turns on the loop (gw_runq.h) */
    struct sl_buf sniff;      /* cleartext: first bytes, while a prefix of the preface */
    uint64_t created_ns;
    uint64_t write_progress_ns; /* last time write_pending shrank or became non-zero */
    struct gw_tls_conn *tls;    /* NULL in cleartext */
    struct sl_buf plain;        /* TLS: decrypted bytes for the protocol layer */
    struct sl_buf cipher;       /* TLS: encrypted bytes for the socket */
    size_t write_pending;       /* bytes in uv_write requests */
    int open_handles;
    bool reading;
    bool closing;      /* conn_close() ran */
    bool finish_after; /* finish once pending writes complete */
    bool lingering;    /* HTTP/1.1: write side shut, discarding input until EOF */
    bool peer_eof;     /* HTTP/1.1: the client half-closed; answer, then close */
    uint64_t linger_ns;
};

struct write_req {
    uv_write_t req;
    struct gw_conn *c;
    size_t len;
    char data[];
};

static void conn_flush(struct gw_conn *c);
static void conn_close(struct gw_conn *c);
static void conn_finish(struct gw_conn *c);
static void conn_wake(void *owner);
static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf);

static uint64_t now_ns(struct gw_conn *c)
{
    return uv_hrtime();
}

/* ---- the protocol layer, whichever it is --------------------------------- */

static bool proto_known(const struct gw_conn *c)
{
    return c->h2c != NULL || c->h1c != NULL;
}

static void proto_feed(struct gw_conn *c, const uint8_t *p, size_t n)
{
    if (c->h2c != NULL)
        gw__h2c_feed(c->h2c, p, n, now_ns(c));
    else
        gw__h1c_feed(c->h1c, p, n, now_ns(c));
}

static void proto_flush(struct gw_conn *c)
{
    if (c->h2c != NULL)
        gw__h2c_flush(c->h2c);
    else
        gw__h1c_flush(c->h1c);
}

static struct sl_slice proto_output(const struct gw_conn *c)
{
    if (c->h2c != NULL)
        return gw__h2c_output(c->h2c);
    if (c->h1c != NULL)
        return gw__h1c_output(c->h1c);
    return (struct sl_slice){"", 0};
}

static void proto_consume(struct gw_conn *c, size_t n)
{
    if (c->h2c != NULL)
        gw__h2c_output_consume(c->h2c, n);
    else
        gw__h1c_output_consume(c->h1c, n);
}

static bool proto_want_write(const struct gw_conn *c)
{
    return c->h2c != NULL ? gw__h2c_want_write(c->h2c) : gw__h1c_want_write(c->h1c);
}

static bool proto_done(const struct gw_conn *c)
{
    return c->h2c != NULL ? gw__h2c_done(c->h2c) : gw__h1c_done(c->h1c);
}

/* HTTP/2 bounds its input with flow control; HTTP/1.1 stops reading while
 * pipelined requests wait. */
static bool proto_want_read(const struct gw_conn *c)
{
    return c->h1c == NULL || gw__h1c_want_read(c->h1c);
}

static void proto_start(struct gw_conn *c, bool h2)
{
    struct gw_proto_env env = {
        .handler = c->handler,
        .loop_ctx = c->loop_ctx,
        .tls = c->tls != NULL,
        .loop_inflight = &c->ls->inflight,
        .wake = conn_wake,
        .owner = c,
        .budget = c->budget,
        .counters = c->limits,
        .flow = &c->flow,
    };
    memcpy(env.peer, c->peer.addr, sizeof env.peer);
    if (h2)
        c->h2c = gw__h2c_new(&env, now_ns(c));
    else
        c->h1c = gw__h1c_new(&env, now_ns(c));
    gw__connlimit_count_version(c->limits, h2 ? GW_HTTP_VERSION_2 : GW_HTTP_VERSION_1);
}

/* Cleartext: holds the first bytes while they may still be the HTTP/2
 * preface, then starts the protocol they show and feeds it them. */
static void sniff_and_feed(struct gw_conn *c, const uint8_t *p, size_t n)
{
    if (proto_known(c)) {
        proto_feed(c, p, n);
        return;
    }
    sl_buf_append(&c->sniff, p, n);
    size_t cmp = SL_MIN(c->sniff.n, H2_PREFACE_LEN);
    bool prefix = memcmp(c->sniff.p, H2_PREFACE, cmp) == 0;
    if (prefix && c->sniff.n < H2_PREFACE_LEN)
        return; /* not enough bytes to tell */
    proto_start(c, prefix);
    proto_feed(c, (const uint8_t *)c->sniff.p, c->sniff.n);
    sl_buf_free(&c->sniff);
}

/* ---- the socket ---------------------------------------------------------- */

static void on_handle_closed(uv_handle_t *h)
{
    struct gw_conn *c = h->data;
    if (--c->open_handles > 0)
        return;
    /* The socket is closed now: its descriptor is free for the next one. */
    gw__connlimit_release(c->limits, &c->peer);
    sl_buf_free(&c->plain);
    sl_buf_free(&c->cipher);
    free(c);
}

/* Removes the connection from its loop and closes its handles. Held
 * exchanges are cancelled now (gw__h2c_free, gw__h1c_free). */
static void conn_close(struct gw_conn *c)
{
    if (c->closing)
        return;
    c->closing = true;
    struct gw_loop_state *ls = c->ls;
    if (c->prev != NULL)
        c->prev->next = c->next;
    else
        ls->conns = c->next;
    if (c->next != NULL)
        c->next->prev = c->prev;
    ls->conn_count--;
    gw__h2c_free(c->h2c);
    c->h2c = NULL;
    gw__h1c_free(c->h1c);
    c->h1c = NULL;
    SL_ASSERT(gw__runq_flow_empty(&c->flow)); /* its exchanges took themselves out */
    sl_buf_free(&c->sniff);
    gw__tls_conn_free(c->tls);
    c->tls = NULL;
    c->open_handles = 3;
    uv_close((uv_handle_t *)&c->timer, on_handle_closed);
    uv_close((uv_handle_t *)&c->wake, on_handle_closed);
    uv_close((uv_handle_t *)&c->tcp, on_handle_closed);
}

static size_t backlog(const struct gw_conn *c)
{
    return proto_output(c).n + c->write_pending + c->cipher.n;
}

static void on_write(uv_write_t *req, int status)
{
    struct write_req *w = (struct write_req *)req;
    struct gw_conn *c = w->c;
    c->write_pending -= w->len;
    free(w);
    if (c->closing)
        return;
    if (status < 0) {
        conn_close(c);
        return;
    }
    c->write_progress_ns = now_ns(c);
    if (c->finish_after && c->write_pending == 0) {
        conn_finish(c);
        return;
    }
    if (backlog(c) < GW_OUT_LOW_WATER)
        conn_flush(c); /* resumes reading and pulls more output */
}

/* Sends bytes: directly when the socket takes them, the rest in a copied
 * uv_write request. Returns false when the connection was closed. */
static bool conn_write(struct gw_conn *c, const char *p, size_t n)
{
    if (n == 0)
        return true;
    if (c->write_pending == 0) {
        uv_buf_t b = uv_buf_init((char *)p, (unsigned)n);
        int rv = uv_try_write((uv_stream_t *)&c->tcp, &b, 1);
        if (rv > 0) {
            p += rv;
            n -= (size_t)rv;
        } else if (rv != UV_EAGAIN && rv != UV_ENOSYS) {
            conn_close(c);
            return false;
        }
        if (n == 0)
            return true;
        c->write_progress_ns = now_ns(c); /* the stall clock starts now */
    }
    struct write_req *w = sl_xmalloc(sizeof(*w) + n);
    w->c = c;
    w->len = n;
    memcpy(w->data, p, n);
    uv_buf_t b = uv_buf_init(w->data, (unsigned)n);
    if (uv_write(&w->req, (uv_stream_t *)&c->tcp, &b, 1, on_write) != 0) {
        free(w);
        conn_close(c);
        return false;
    }
    c->write_pending += n;
    return true;
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    struct gw_conn *c = h->data;
    *buf = uv_buf_init(c->ls->read_buf, (unsigned)c->ls->read_buf_size);
}

static void set_reading(struct gw_conn *c, bool want_read)
{
    if (want_read && !c->reading) {
        c->reading = uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) == 0;
    } else if (!want_read && c->reading) {
        uv_read_stop((uv_stream_t *)&c->tcp);
        c->reading = false;
    }
}

/* Sends what TLS produced on its own (handshake records). */
static bool flush_cipher(struct gw_conn *c)
{
    gw__tls_take_cipher(c->tls, &c->cipher);
    if (!conn_write(c, c->cipher.p, c->cipher.n))
        return false;
    sl_buf_reset(&c->cipher);
    return true;
}

static void on_shutdown(uv_shutdown_t *req, int status)
{
    free(req); /* the connection lingers until EOF or its timer */
}

/* Everything is written: HTTP/2 closes now, HTTP/1.1 lingers (above). */
static void conn_finish(struct gw_conn *c)
{
    if (c->h1c == NULL || c->peer_eof) { /* nothing more comes in: no RST to fear */
        conn_close(c);
        return;
    }
    if (c->lingering)
        return;
    c->lingering = true;
    c->linger_ns = now_ns(c);
    uv_shutdown_t *req = sl_xmalloc(sizeof(*req));
    if (uv_shutdown(req, (uv_stream_t *)&c->tcp, on_shutdown) != 0) {
        free(req);
        conn_close(c);
        return;
    }
    set_reading(c, true);
}

/* Moves output from the protocol layer (through TLS) to the socket while
 * the backlog allows, then decides about reading and closing. */
static void conn_flush(struct gw_conn *c)
{
    if (c->closing || c->lingering)
        return;
    if (!proto_known(c)) {
        if (c->tls != NULL && !flush_cipher(c))
            return;
        set_reading(c, backlog(c) < GW_OUT_HIGH_WATER);
        return;
    }
    for (int round = 0; round < 64; round++) {
        proto_flush(c);
        struct sl_slice out = proto_output(c);
        if (c->tls != NULL) {
            size_t accepted = 0;
            if (gw__tls_send(c->tls, (const uint8_t *)out.p, out.n, &accepted) != SL_OK) {
                conn_close(c);
                return;
            }
            proto_consume(c, accepted);
            if (!flush_cipher(c))
                return;
        } else {
            if (!conn_write(c, out.p, out.n))
                return;
            proto_consume(c, out.n);
        }
        if (!proto_want_write(c) || backlog(c) >= GW_OUT_HIGH_WATER)
            break;
    }
    if (proto_done(c)) {
        if (c->write_pending == 0) {
            conn_finish(c);
            return;
        }
        c->finish_after = true;
        set_reading(c, false);
        return;
    }
    set_reading(c, backlog(c) < GW_OUT_HIGH_WATER && proto_want_read(c) && !c->peer_eof);
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    struct gw_conn *c = s->data;
    if (nread == 0)
        return;
    if (nread == UV_EOF && c->h1c != NULL && !c->lingering) {
        c->peer_eof = true; /* perhaps only its sending half: answer first */
        set_reading(c, false);
        gw__h1c_peer_eof(c->h1c);
        conn_flush(c);
        return;
    }
    if (nread < 0) { /* EOF or reset: the peer is gone */
        conn_close(c);
        return;
    }
    if (c->lingering)
        return; /* dropped: the answer is out, the client has yet to see it */
    const uint8_t *p = (const uint8_t *)buf->base;
    size_t n = (size_t)nread;
    if (c->tls != NULL) {
        sl_buf_reset(&c->plain);
        int rv = gw__tls_recv(c->tls, p, n, &c->plain);
        if (rv != SL_OK) {
            if (!gw__tls_handshake_done(c->tls))
                gw__connlimit_count_http(c->limits, GW_HTTP_TLS_HANDSHAKE);
            /* Send the alert OpenSSL queued, then close. */
            gw__tls_take_cipher(c->tls, &c->cipher);
            uv_read_stop(s);
            c->reading = false;
            if (conn_write(c, c->cipher.p, c->cipher.n)) {
                sl_buf_reset(&c->cipher);
                if (c->write_pending == 0)
                    conn_close(c);
                else
                    c->finish_after = true;
            }
            return;
        }
        if (!proto_known(c) && gw__tls_handshake_done(c->tls))
            proto_start(c, gw__tls_alpn_h2(c->tls));
        p = (const uint8_t *)c->plain.p;
        n = c->plain.n;
        if (n > 0 && proto_known(c))
            proto_feed(c, p, n);
    } else if (n > 0) {
        sniff_and_feed(c, p, n);
    }
    conn_flush(c); /* with TLS, also sends the handshake records */
}

static void on_timer(uv_timer_t *t)
{
    struct gw_conn *c = t->data;
    uint64_t now = now_ns(c);
    if (c->lingering) {
        if (now - c->linger_ns > LINGER_NS)
            conn_close(c);
        return;
    }
    if (c->write_pending > 0 && now - c->write_progress_ns > GW_STALL_TIMEOUT_NS) {
        /* The client does not read: its unsent bytes are not kept. */
        gw__connlimit_count_http(c->limits, GW_HTTP_STALLED);
        if (c->budget != NULL)
            gw__budget_count(c->budget, GW_BUDGET_STALLED);
        conn_close(c);
        return;
    }
    if (!proto_known(c)) {
        /* Slowloris before the first request or the preface. */
        if (now - c->created_ns > GW_REQUEST_READ_TIMEOUT_NS) {
            gw__connlimit_count_http(c->limits, GW_HTTP_REQUEST_TIMEOUT);
            conn_close(c);
        }
        return;
    }
    bool close_now = c->h2c != NULL ? gw__h2c_tick(c->h2c, now) : gw__h1c_tick(c->h1c, now);
    if (close_now) {
        conn_close(c);
        return;
    }
    conn_flush(c);
}

static void on_wake(uv_idle_t *idle)
{
    struct gw_conn *c = idle->data;
    uv_idle_stop(idle);
    conn_flush(c);
}

static void conn_wake(void *owner)
{
    struct gw_conn *c = owner;
    if (!c->closing)
        uv_idle_start(&c->wake, on_wake);
}

void gw__conn_accept(struct gw_loop_state *ls, int fd, struct gw_connlimit *limits,
                     struct gw_budget *budget, const struct gw_peer *peer,
                     const struct gw_handler *handler, void *loop_ctx)
{
    struct gw_conn *c = sl_xcalloc(1, sizeof(*c));
    c->ls = ls;
    gw__runq_flow_init(&c->flow, &ls->runq);
    c->limits = limits;
    c->budget = budget;
    c->handler = handler;
    c->loop_ctx = loop_ctx;
    c->peer = *peer;
    c->created_ns = now_ns(c);
    sl_buf_init(&c->plain);
    sl_buf_init(&c->cipher);
    sl_buf_init(&c->sniff);
    uv_tcp_init(ls->loop, &c->tcp);
    uv_timer_init(ls->loop, &c->timer);
    uv_idle_init(ls->loop, &c->wake);
    c->tcp.data = c->timer.data = c->wake.data = c;

    /* Linked first so that conn_close() has one way out. */
    c->next = ls->conns;
    if (ls->conns != NULL)
        ls->conns->prev = c;
    ls->conns = c;
    ls->conn_count++;

    if (ls->tls != NULL)
        c->tls = gw__tls_conn_new(ls->tls);

    if (uv_tcp_open(&c->tcp, fd) != 0) {
        close(fd); /* not the handle's: uv_tcp_open refused it */
        conn_close(c);
        return;
    }
    if (ls->shutting_down) {
        conn_close(c);
        return;
    }
    uv_tcp_nodelay(&c->tcp, 1);
    uv_timer_start(&c->timer, on_timer, 1000, 1000);
    conn_flush(c); /* starts reading */
}

void gw__conn_goaway_all(struct gw_loop_state *ls)
{
    struct gw_conn *next;
    for (struct gw_conn *c = ls->conns; c != NULL; c = next) {
        next = c->next;
        if (!proto_known(c) || c->lingering) {
            conn_close(c); /* nothing to finish: it has not spoken, or was answered */
            continue;
        }
        if (c->h2c != NULL)
            gw__h2c_goaway(c->h2c);
        else
            gw__h1c_goaway(c->h1c);
        conn_flush(c);
    }
}

void gw__conn_close_all(struct gw_loop_state *ls)
{
    while (ls->conns != NULL)
        conn_close(ls->conns);
}
