/*
 * gw_conn.c -- one accepted TCP connection on a loop thread: moves bytes
 * between the socket, TLS (gw_tls.c, optional) and the protocol layer
 * (gw_h2.c), applies backpressure, and runs the connection's timer.
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
 *     and stops pulling frames out of nghttp2; below GW_OUT_LOW_WATER, in
 *     the write callback, it resumes both.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <uv.h>

#include "gw_conn.h"
#include "gw_h2.h"
#include "gw_tls.h"

struct gw_conn {
    uv_tcp_t tcp;
    uv_timer_t timer; /* timeouts, once a second */
    uv_idle_t wake;   /* deferred flush after an asynchronous respond */
    struct gw_loop_state *ls;
    struct gw_connlimit *limits; /* holds this connection's slot until it closes */
    struct gw_peer peer;
    struct gw_conn *prev, *next;
    struct gw_h2c *h2c;
    struct gw_tls_conn *tls; /* NULL for h2c */
    struct sl_buf plain;     /* TLS: decrypted bytes for the protocol layer */
    struct sl_buf cipher;    /* TLS: encrypted bytes for the socket */
    size_t write_pending;    /* bytes in uv_write requests */
    int open_handles;
    bool reading;
    bool closing;      /* conn_close() ran */
    bool finish_after; /* close once pending writes complete */
};

struct write_req {
    uv_write_t req;
    struct gw_conn *c;
    size_t len;
    char data[];
};

static void conn_flush(struct gw_conn *c);
static void conn_close(struct gw_conn *c);
static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf);

static uint64_t now_ns(struct gw_conn *c)
{
    return uv_hrtime();
}

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
 * exchanges are cancelled now (gw__h2c_free). */
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
    gw__tls_conn_free(c->tls);
    c->tls = NULL;
    c->open_handles = 3;
    uv_close((uv_handle_t *)&c->timer, on_handle_closed);
    uv_close((uv_handle_t *)&c->wake, on_handle_closed);
    uv_close((uv_handle_t *)&c->tcp, on_handle_closed);
}

static size_t backlog(const struct gw_conn *c)
{
    size_t held = c->h2c != NULL ? gw__h2c_output(c->h2c).n : 0;
    return held + c->write_pending + c->cipher.n;
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
    if (c->finish_after && c->write_pending == 0) {
        conn_close(c);
        return;
    }
    if (backlog(c) < GW_OUT_LOW_WATER)
        conn_flush(c); /* resumes reading and pulls more frames */
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

/* Moves output from nghttp2 (through TLS) to the socket while the backlog
 * allows, then decides about reading and closing. */
static void conn_flush(struct gw_conn *c)
{
    if (c->closing)
        return;
    for (int round = 0; round < 64; round++) {
        gw__h2c_flush(c->h2c);
        struct sl_slice out = gw__h2c_output(c->h2c);
        if (c->tls != NULL) {
            size_t accepted = 0;
            if (gw__tls_send(c->tls, (const uint8_t *)out.p, out.n, &accepted) != SL_OK) {
                conn_close(c);
                return;
            }
            gw__h2c_output_consume(c->h2c, accepted);
            gw__tls_take_cipher(c->tls, &c->cipher);
            if (!conn_write(c, c->cipher.p, c->cipher.n))
                return;
            sl_buf_reset(&c->cipher);
        } else {
            if (!conn_write(c, out.p, out.n))
                return;
            gw__h2c_output_consume(c->h2c, out.n);
        }
        if (!gw__h2c_want_write(c->h2c) || backlog(c) >= GW_OUT_HIGH_WATER)
            break;
    }
    if (gw__h2c_done(c->h2c)) {
        if (c->write_pending == 0) {
            conn_close(c);
            return;
        }
        c->finish_after = true;
        if (c->reading)
            uv_read_stop((uv_stream_t *)&c->tcp);
        c->reading = false;
        return;
    }
    bool want_read = backlog(c) < GW_OUT_HIGH_WATER;
    if (want_read && !c->reading) {
        c->reading = uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) == 0;
    } else if (!want_read && c->reading) {
        uv_read_stop((uv_stream_t *)&c->tcp);
        c->reading = false;
    }
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    struct gw_conn *c = s->data;
    if (nread == 0)
        return;
    if (nread < 0) { /* EOF or reset: the peer is gone */
        conn_close(c);
        return;
    }
    const uint8_t *p = (const uint8_t *)buf->base;
    size_t n = (size_t)nread;
    if (c->tls != NULL) {
        sl_buf_reset(&c->plain);
        int rv = gw__tls_recv(c->tls, p, n, &c->plain);
        if (rv != SL_OK) {
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
        p = (const uint8_t *)c->plain.p;
        n = c->plain.n;
    }
    if (n > 0)
        gw__h2c_feed(c->h2c, p, n, now_ns(c));
    conn_flush(c); /* with TLS, also sends the handshake records */
}

static void on_timer(uv_timer_t *t)
{
    struct gw_conn *c = t->data;
    if (gw__h2c_tick(c->h2c, now_ns(c))) {
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

static void wake(void *owner)
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
    c->limits = limits;
    c->peer = *peer;
    sl_buf_init(&c->plain);
    sl_buf_init(&c->cipher);
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

    struct gw_h2c_env env = {
        .handler = handler,
        .loop_ctx = loop_ctx,
        .tls = ls->tls != NULL,
        .loop_inflight = &ls->inflight,
        .wake = wake,
        .owner = c,
        .budget = budget,
    };
    c->h2c = gw__h2c_new(&env, now_ns(c));
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
    conn_flush(c); /* h2c: the server SETTINGS go out at once */
}

void gw__conn_goaway_all(struct gw_loop_state *ls)
{
    struct gw_conn *next;
    for (struct gw_conn *c = ls->conns; c != NULL; c = next) {
        next = c->next;
        gw__h2c_goaway(c->h2c);
        conn_flush(c);
    }
}

void gw__conn_close_all(struct gw_loop_state *ls)
{
    while (ls->conns != NULL)
        conn_close(ls->conns);
}
