/*
 * part_handshake.c -- an authenticated port (part_handshake.h): one
 * listening socket, and the cluster's handshake on every connection it
 * accepts or dials, before the stream is handed to the port's owner (the
 * Raft port, the peer port).
 *
 * Threading: everything runs on the port's uv loop, except the refusal
 * counters, which part__hs_port_rejected reads from any thread.
 *
 * The handshake, every field fixed-size so that each read asks for exactly
 * the bytes the step needs and no byte of the owner's after them is ever
 * consumed:
 *
 *   dialer   -> listener  hello: magic, version, cluster id, dialer id,
 *                         name (length and zero-padded), nonce_d
 *   listener -> dialer    nonce_l, HMAC(secret, listener label, ...)
 *   dialer   -> listener  HMAC(secret, dialer label, ...)
 *   listener -> dialer    one OK byte
 *
 * where both MACs cover the cluster id, both node ids, the name and both
 * nonces. The listener proves the secret first, over a nonce the dialer
 * chose, and the dialer's answer covers a nonce the listener chose, so
 * neither answer can be replayed from another connection; the labels keep
 * a listener's MAC from being reflected back as a dialer's, and each port
 * has labels and a magic of its own, so nothing recorded on one port
 * passes on another. The dialer sends nothing after its MAC until it has
 * read the OK byte, and the listener's last read is that MAC, so neither
 * side's reads can take a byte the owner's protocol sends after the
 * handshake.
 */
#include <netdb.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <uv.h>

#include "part_handshake.h"

#include "part_bytes.h"

#define LOG_MOD "partitions"
#define NONCE_LEN ((size_t)16)
#define MAC_LEN ((size_t)32)
#define LABEL_MAX ((size_t)64) /* with its NUL */
#define SECRET_MAX 4096
#define OK_BYTE 0x01
#define CHALLENGE_LEN (NONCE_LEN + MAC_LEN)
#define ADDR_MAX (INET6_ADDRSTRLEN + 8) /* "[addr]:port" */
#define LISTEN_BACKLOG 128

static const char *const reject_names[PART__HS_REJECT_COUNT] = {
    [PART__HS_REJECT_BAD_MAGIC] = "bad_magic",
    [PART__HS_REJECT_BAD_VERSION] = "bad_version",
    [PART__HS_REJECT_OTHER_CLUSTER] = "other_cluster",
    [PART__HS_REJECT_UNKNOWN_NODE] = "unknown_node",
    [PART__HS_REJECT_SELF_ID] = "self_id",
    [PART__HS_REJECT_UNKNOWN_GROUP] = "unknown_group",
    [PART__HS_REJECT_BAD_MAC] = "bad_mac",
    [PART__HS_REJECT_DEADLINE] = "deadline",
    [PART__HS_REJECT_CLOSED] = "closed",
    [PART__HS_REJECT_OVERLOAD] = "overload",
};

struct peer {
    uint16_t id;
    char addr[ADDR_MAX]; /* "host:port", as configured */
    struct sockaddr_storage sa;
};

struct part__hs {
    struct part__hs_port *port;
    struct part__hs *prev, *next;
    void *owner; /* the dialer's, or what find returned */
    void *data;
    bool dialer;
    bool connected;   /* a dialer's TCP connect succeeded */
    bool dying;       /* its handles are closing */
    bool handed_over; /* the stream is the owner's now */
    bool silent;      /* a dial that failed to start: no done call */
    bool final_step;  /* the last message is read (dialer) or written (listener) */
    int handles;      /* open handles: tcp and timer */
    int writes;       /* writes under way */
    uv_tcp_t *tcp;    /* from tcp_alloc: the owner frees it after a handover */
    uv_timer_t timer;
    uv_connect_t connect;
    uv_write_t wr[2];
    const struct peer *peer;
    uint16_t dialer_id, listener_id;
    uint8_t name[PART__HS_NAME_MAX];
    size_t name_len;
    uint8_t nonce_d[NONCE_LEN], nonce_l[NONCE_LEN];
    uint8_t in[PART__HS_HELLO_LEN];
    size_t want, got;
    void (*on_read)(struct part__hs *c);
    uint8_t out_a[PART__HS_HELLO_LEN]; /* hello or challenge */
    uint8_t out_b[MAC_LEN];            /* dialer's MAC or OK */
};

struct part__hs_port {
    const struct part__hs_proto *proto;
    uv_loop_t *loop;
    uint16_t id;
    uint32_t handshake_ms;
    uint8_t cluster_id[PART__HS_CLUSTER_ID_LEN];
    unsigned char *secret;
    size_t secret_len;
    struct peer *peers;
    size_t peer_count;
    void *(*tcp_alloc)(size_t size);
    void (*tcp_free)(void *p);
    void *(*find)(void *arg, const uint8_t *name, size_t len);
    void (*done)(void *arg, struct part__hs *hs, uv_tcp_t *tcp);
    void *arg;
    uv_tcp_t listener;
    uint16_t port;
    bool closing;
    bool listener_closed;
    void (*close_cb)(void *arg);
    void *close_arg;
    struct part__hs *conns;
    size_t incoming; /* listener-side handshakes alive */
    _Atomic uint64_t rejected[PART__HS_REJECT_COUNT];
};

const char *part__hs_reject_name(enum part__hs_reject r)
{
    return (unsigned)r < PART__HS_REJECT_COUNT ? reject_names[r] : "unknown";
}

/* ---- peers and addresses ----------------------------------------------- */

static const struct peer *peer_find(const struct part__hs_port *n, uint64_t id)
{
    for (size_t i = 0; i < n->peer_count; i++) {
        if (n->peers[i].id == id) {
            return &n->peers[i];
        }
    }
    return NULL;
}

/* Resolves host:port once, at start-up: the configuration names each node
 * by a fixed address. Returns SL_OK or SL_EINVAL. */
static int resolve(const char *host, uint16_t port, struct sockaddr_storage *sa)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    struct addrinfo *res = NULL;
    if (host == NULL || getaddrinfo(host, NULL, &hints, &res) != 0 || res == NULL) {
        return SL_EINVAL;
    }
    memset(sa, 0, sizeof *sa);
    memcpy(sa, res->ai_addr, SL_MIN(res->ai_addrlen, (socklen_t)sizeof *sa));
    freeaddrinfo(res);
    if (sa->ss_family == AF_INET) {
        ((struct sockaddr_in *)sa)->sin_port = htons(port);
    } else if (sa->ss_family == AF_INET6) {
        ((struct sockaddr_in6 *)sa)->sin6_port = htons(port);
    } else {
        return SL_EINVAL;
    }
    return SL_OK;
}

static void format_addr(const char *host, uint16_t port, char *out, size_t cap)
{
    bool v6 = strchr(host, ':') != NULL;
    snprintf(out, cap, v6 ? "[%s]:%u" : "%s:%u", host, (unsigned)port);
}

/* The remote end of a connection, for a log line. */
static void peer_name(const struct part__hs *c, char *out, size_t cap)
{
    struct sockaddr_storage sa;
    int len = (int)sizeof sa;
    char host[INET6_ADDRSTRLEN] = "?";
    uint16_t port = 0;
    if (c->tcp != NULL && uv_tcp_getpeername(c->tcp, (struct sockaddr *)&sa, &len) == 0) {
        if (sa.ss_family == AF_INET) {
            const struct sockaddr_in *in = (const struct sockaddr_in *)&sa;
            uv_ip4_name(in, host, sizeof host);
            port = ntohs(in->sin_port);
        } else if (sa.ss_family == AF_INET6) {
            const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)&sa;
            uv_ip6_name(in6, host, sizeof host);
            port = ntohs(in6->sin6_port);
        }
    }
    format_addr(host, port, out, cap);
}

/* ---- the MACs ---------------------------------------------------------- */

/* HMAC-SHA256 under the cluster secret of label, the cluster id, both ids,
 * the name and both nonces, each field fixed-size or length-prefixed so
 * that no two inputs share an encoding. */
static void handshake_mac(const struct part__hs *c, const char *label, uint8_t out[MAC_LEN])
{
    const struct part__hs_port *n = c->port;
    uint8_t msg[LABEL_MAX + PART__HS_CLUSTER_ID_LEN + 4 + 1 + PART__HS_NAME_MAX + 2 * NONCE_LEN];
    size_t len = strlen(label) + 1;
    SL_ASSERT(len <= LABEL_MAX);
    memcpy(msg, label, len);
    memcpy(msg + len, n->cluster_id, PART__HS_CLUSTER_ID_LEN);
    len += PART__HS_CLUSTER_ID_LEN;
    part__put_be(msg + len, c->dialer_id, 2);
    part__put_be(msg + len + 2, c->listener_id, 2);
    len += 4;
    msg[len++] = (uint8_t)c->name_len;
    memcpy(msg + len, c->name, c->name_len);
    len += c->name_len;
    memcpy(msg + len, c->nonce_d, NONCE_LEN);
    memcpy(msg + len + NONCE_LEN, c->nonce_l, NONCE_LEN);
    len += 2 * NONCE_LEN;
    unsigned int out_len = 0;
    SL_ASSERT(HMAC(EVP_sha256(), n->secret, (int)n->secret_len, msg, len, out, &out_len) != NULL);
    SL_ASSERT(out_len == MAC_LEN);
}

/* ---- handshakes: life and death --------------------------------------- */

static void port_maybe_closed(struct part__hs_port *n);

static void conn_link(struct part__hs_port *n, struct part__hs *c)
{
    c->next = n->conns;
    if (n->conns != NULL) {
        n->conns->prev = c;
    }
    n->conns = c;
}

static void conn_unlink(struct part__hs_port *n, struct part__hs *c)
{
    if (c->prev != NULL) {
        c->prev->next = c->next;
    } else {
        n->conns = c->next;
    }
    if (c->next != NULL) {
        c->next->prev = c->prev;
    }
}

/* The last handle closed: tells the owner of a handshake that failed, then
 * a closing port. */
static void conn_free(struct part__hs *c)
{
    struct part__hs_port *n = c->port;
    conn_unlink(n, c);
    if (!c->dialer) {
        n->incoming--;
    }
    if (!c->handed_over) {
        n->tcp_free(c->tcp);
        if (!c->silent) {
            n->done(n->arg, c, NULL);
        }
    }
    free(c);
    port_maybe_closed(n);
}

static void on_handle_closed(uv_handle_t *h)
{
    struct part__hs *c = h->data;
    if (--c->handles == 0) {
        conn_free(c);
    }
}

/* Closes the connection (once): no callback of its reads or writes runs
 * after this beyond the ones libuv cancels, which see dying. */
static void conn_kill(struct part__hs *c)
{
    if (c->dying) {
        return;
    }
    c->dying = true;
    uv_close((uv_handle_t *)c->tcp, on_handle_closed);
    uv_close((uv_handle_t *)&c->timer, on_handle_closed);
}

static void conn_reject(struct part__hs *c, enum part__hs_reject why)
{
    /* A dead peer is dialled again every second for each of its groups:
     * a few lines a minute say so, /metrics counts every refusal. */
    static struct sl_log_limit lim = SL_LOG_LIMIT(10, 60000);
    struct part__hs_port *n = c->port;
    char from[ADDR_MAX];
    char name[4 * PART__HS_NAME_MAX + 1] = "";
    atomic_fetch_add_explicit(&n->rejected[why], 1, memory_order_relaxed);
    peer_name(c, from, sizeof from);
    sl_log_escape((const char *)c->name, c->name_len, name, sizeof name);
    sl_log_limited(
        &lim, SL_LOG_WARN, LOG_MOD, "%s handshake %s %s refused (%s): node %u, %s \"%s\"",
        n->proto->what, c->dialer ? "to" : "from", from, part__hs_reject_name(why),
        (unsigned)(c->dialer ? c->listener_id : c->dialer_id), n->proto->name_what, name);
    conn_kill(c);
}

static void on_deadline(uv_timer_t *t)
{
    struct part__hs *c = t->data;
    if (c->dialer && !c->connected) {
        /* A peer that is down or cut off: not a refusal, as below. */
        conn_kill(c);
        return;
    }
    conn_reject(c, PART__HS_REJECT_DEADLINE);
}

/* A handshake with its handles open and its deadline running. Returns
 * NULL (nothing to undo) when the socket handle cannot be made. */
static struct part__hs *conn_new(struct part__hs_port *n, bool dialer)
{
    struct part__hs *c = sl_xcalloc(1, sizeof *c);
    c->tcp = n->tcp_alloc(sizeof *c->tcp);
    if (c->tcp == NULL || uv_tcp_init(n->loop, c->tcp) != 0) {
        n->tcp_free(c->tcp);
        free(c);
        return NULL;
    }
    c->port = n;
    c->dialer = dialer;
    c->tcp->data = c;
    c->timer.data = c;
    c->handles = 2;
    SL_ASSERT(uv_timer_init(n->loop, &c->timer) == 0);
    SL_ASSERT(uv_timer_start(&c->timer, on_deadline, n->handshake_ms, 0) == 0);
    conn_link(n, c);
    if (!dialer) {
        n->incoming++;
    }
    return c;
}

/* Gives the stream to the owner once the last handshake message is both
 * read and written: the handshake keeps only its timer, closing. */
static void conn_maybe_hand_over(struct part__hs *c)
{
    if (!c->final_step || c->writes > 0 || c->dying) {
        return;
    }
    struct part__hs_port *n = c->port;
    uv_tcp_t *tcp = c->tcp;
    /* Both owners write each message as it comes; with Nagle's algorithm
     * one written while the last is unacknowledged would wait for the
     * peer's delayed ACK, tens of milliseconds added to a round trip. */
    (void)uv_tcp_nodelay(tcp, 1);
    c->handed_over = true;
    c->dying = true;
    c->handles = 1;
    uv_close((uv_handle_t *)&c->timer, on_handle_closed);
    tcp->data = NULL;
    n->done(n->arg, c, tcp);
    c->tcp = NULL;
}

/* ---- reading and writing exactly ---------------------------------------- */

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    struct part__hs *c = h->data;
    (void)suggested;
    buf->base = (char *)c->in + c->got;
    buf->len = c->want - c->got;
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    struct part__hs *c = s->data;
    (void)buf;
    if (c->dying || nread == 0) {
        return;
    }
    if (nread < 0) {
        conn_reject(c, PART__HS_REJECT_CLOSED);
        return;
    }
    c->got += (size_t)nread;
    SL_ASSERT(c->got <= c->want);
    if (c->got == c->want) {
        uv_read_stop(s);
        c->on_read(c);
    }
}

/* Reads exactly want bytes into c->in, then calls done. */
static void conn_read(struct part__hs *c, size_t want, void (*done)(struct part__hs *c))
{
    SL_ASSERT(want <= sizeof c->in);
    c->want = want;
    c->got = 0;
    c->on_read = done;
    if (uv_read_start((uv_stream_t *)c->tcp, on_alloc, on_read) != 0) {
        conn_reject(c, PART__HS_REJECT_CLOSED);
    }
}

static void on_written(uv_write_t *w, int status)
{
    struct part__hs *c = w->data;
    c->writes--;
    if (c->dying) {
        return;
    }
    if (status != 0) {
        conn_reject(c, PART__HS_REJECT_CLOSED);
        return;
    }
    conn_maybe_hand_over(c);
}

static void conn_write(struct part__hs *c, int slot, const uint8_t *p, size_t len)
{
    uv_buf_t b = uv_buf_init((char *)p, (unsigned)len);
    c->wr[slot].data = c;
    if (uv_write(&c->wr[slot], (uv_stream_t *)c->tcp, &b, 1, on_written) != 0) {
        conn_reject(c, PART__HS_REJECT_CLOSED);
        return;
    }
    c->writes++;
}

/* ---- the listener's side ------------------------------------------------ */

static void listener_got_mac(struct part__hs *c)
{
    uint8_t want[MAC_LEN];
    handshake_mac(c, c->port->proto->label_dialer, want);
    if (CRYPTO_memcmp(want, c->in, MAC_LEN) != 0) {
        conn_reject(c, PART__HS_REJECT_BAD_MAC);
        return;
    }
    c->out_b[0] = OK_BYTE;
    c->final_step = true;
    conn_write(c, 1, c->out_b, 1);
}

/* Checks the hello field by field, cheapest refusals first, and on success
 * binds the handshake to the owner that serves its name. Returns whether
 * it passed; *why says why not. */
static bool hello_check(struct part__hs *c, enum part__hs_reject *why)
{
    struct part__hs_port *n = c->port;
    const uint8_t *p = c->in;
    *why = PART__HS_REJECT_BAD_MAGIC;
    if (part__get_be(p, 4) != n->proto->magic) {
        return false;
    }
    if (p[4] != n->proto->version) {
        *why = PART__HS_REJECT_BAD_VERSION;
        return false;
    }
    p += 5;
    if (memcmp(p, n->cluster_id, PART__HS_CLUSTER_ID_LEN) != 0) {
        *why = PART__HS_REJECT_OTHER_CLUSTER;
        return false;
    }
    p += PART__HS_CLUSTER_ID_LEN;
    c->dialer_id = (uint16_t)part__get_be(p, 2);
    p += 2;
    c->peer = peer_find(n, c->dialer_id);
    if (c->dialer_id == n->id || c->peer == NULL) {
        *why = c->dialer_id == n->id ? PART__HS_REJECT_SELF_ID : PART__HS_REJECT_UNKNOWN_NODE;
        return false;
    }
    size_t len = *p++;
    if (len == 0 || len > PART__HS_NAME_MAX) {
        return false;
    }
    for (size_t i = len; i < PART__HS_NAME_MAX; i++) {
        if (p[i] != 0) {
            return false;
        }
    }
    memcpy(c->name, p, len);
    c->name_len = len;
    c->owner = n->find(n->arg, p, len);
    if (c->owner == NULL) {
        *why = PART__HS_REJECT_UNKNOWN_GROUP;
        return false;
    }
    memcpy(c->nonce_d, p + PART__HS_NAME_MAX, NONCE_LEN);
    return true;
}

static void listener_got_hello(struct part__hs *c)
{
    enum part__hs_reject why;
    if (!hello_check(c, &why)) {
        conn_reject(c, why);
        return;
    }
    c->listener_id = c->port->id;
    sl_random_bytes(c->nonce_l, NONCE_LEN);
    memcpy(c->out_a, c->nonce_l, NONCE_LEN);
    handshake_mac(c, c->port->proto->label_listener, c->out_a + NONCE_LEN);
    conn_write(c, 0, c->out_a, CHALLENGE_LEN);
    if (!c->dying) {
        conn_read(c, MAC_LEN, listener_got_mac);
    }
}

static void on_connection(uv_stream_t *server, int status)
{
    struct part__hs_port *n = server->data;
    static struct sl_log_limit lim = SL_LOG_LIMIT(10, 1000);
    if (status != 0) {
        sl_log_limited(&lim, SL_LOG_WARN, LOG_MOD, "%s port: accept failed: %s", n->proto->what,
                       uv_strerror(status));
        return;
    }
    struct part__hs *c = conn_new(n, false);
    if (c == NULL) {
        return;
    }
    if (uv_accept(server, (uv_stream_t *)c->tcp) != 0) {
        conn_kill(c);
        return;
    }
    if (n->incoming > PART__HS_MAX_INCOMING) {
        conn_reject(c, PART__HS_REJECT_OVERLOAD);
        return;
    }
    conn_read(c, PART__HS_HELLO_LEN, listener_got_hello);
}

/* ---- the dialer's side -------------------------------------------------- */

static void dialer_got_ok(struct part__hs *c)
{
    if (c->in[0] != OK_BYTE) {
        conn_reject(c, PART__HS_REJECT_BAD_MAGIC);
        return;
    }
    SL_ASSERT(uv_timer_stop(&c->timer) == 0);
    c->final_step = true;
    conn_maybe_hand_over(c);
}

static void dialer_got_challenge(struct part__hs *c)
{
    uint8_t want[MAC_LEN];
    memcpy(c->nonce_l, c->in, NONCE_LEN);
    handshake_mac(c, c->port->proto->label_listener, want);
    if (CRYPTO_memcmp(want, c->in + NONCE_LEN, MAC_LEN) != 0) {
        conn_reject(c, PART__HS_REJECT_BAD_MAC);
        return;
    }
    handshake_mac(c, c->port->proto->label_dialer, c->out_b);
    conn_write(c, 1, c->out_b, MAC_LEN);
    if (!c->dying) {
        conn_read(c, 1, dialer_got_ok);
    }
}

static void on_connected(uv_connect_t *req, int status)
{
    struct part__hs *c = req->data;
    if (c->dying) {
        return;
    }
    if (status != 0) {
        /* Not a refusal: the peer is down or unreachable, and the owner
         * retries, so this is not logged. */
        conn_kill(c);
        return;
    }
    c->connected = true;
    struct part__hs_port *n = c->port;
    uint8_t *p = c->out_a;
    part__put_be(p, n->proto->magic, 4);
    p[4] = n->proto->version;
    p += 5;
    memcpy(p, n->cluster_id, PART__HS_CLUSTER_ID_LEN);
    p += PART__HS_CLUSTER_ID_LEN;
    part__put_be(p, n->id, 2);
    p += 2;
    *p++ = (uint8_t)c->name_len;
    memset(p, 0, PART__HS_NAME_MAX);
    memcpy(p, c->name, c->name_len);
    p += PART__HS_NAME_MAX;
    memcpy(p, c->nonce_d, NONCE_LEN);
    conn_write(c, 0, c->out_a, PART__HS_HELLO_LEN);
    if (!c->dying) {
        conn_read(c, CHALLENGE_LEN, dialer_got_challenge);
    }
}

int part__hs_dial(struct part__hs_port *n, uint16_t to, const char *name, void *owner, void *data,
                  struct part__hs **out, const char **errmsg)
{
    size_t len = name != NULL ? strlen(name) : 0;
    *errmsg = NULL;
    if (len == 0 || len > PART__HS_NAME_MAX) {
        return SL_EINVAL;
    }
    const struct peer *p = peer_find(n, to);
    if (p == NULL || to == n->id) {
        return SL_ENOTFOUND;
    }
    struct part__hs *c = conn_new(n, true);
    if (c == NULL) {
        return SL_ENOMEM;
    }
    c->owner = owner;
    c->data = data;
    c->peer = p;
    c->dialer_id = n->id;
    c->listener_id = p->id;
    memcpy(c->name, name, len);
    c->name_len = len;
    sl_random_bytes(c->nonce_d, NONCE_LEN);
    c->connect.data = c;
    int rv = uv_tcp_connect(&c->connect, c->tcp, (const struct sockaddr *)&p->sa, on_connected);
    if (rv != 0) {
        *errmsg = uv_strerror(rv);
        c->silent = true;
        conn_kill(c);
        return SL_EIO;
    }
    if (out != NULL) {
        *out = c;
    }
    return SL_OK;
}

void part__hs_cancel_owner(struct part__hs_port *n, const void *owner)
{
    for (struct part__hs *c = n->conns; c != NULL; c = c->next) {
        if (c->owner == owner && !c->handed_over) {
            conn_kill(c);
        }
    }
}

bool part__hs_dialer(const struct part__hs *hs)
{
    return hs->dialer;
}

uint16_t part__hs_peer_id(const struct part__hs *hs)
{
    return hs->dialer ? hs->listener_id : hs->dialer_id;
}

const char *part__hs_peer_addr(const struct part__hs *hs)
{
    return hs->peer != NULL ? hs->peer->addr : "";
}

void *part__hs_owner(const struct part__hs *hs)
{
    return hs->owner;
}

void *part__hs_data(const struct part__hs *hs)
{
    return hs->data;
}

/* ---- the port ----------------------------------------------------------- */

static void port_free(struct part__hs_port *n)
{
    if (n->secret != NULL) {
        OPENSSL_cleanse(n->secret, n->secret_len);
    }
    free(n->secret);
    free(n->peers);
    free(n);
}

static void port_maybe_closed(struct part__hs_port *n)
{
    if (!n->closing || !n->listener_closed || n->conns != NULL) {
        return;
    }
    void (*cb)(void *) = n->close_cb;
    void *arg = n->close_arg;
    port_free(n);
    if (cb != NULL) {
        cb(arg);
    }
}

static void on_listener_closed(uv_handle_t *h)
{
    struct part__hs_port *n = h->data;
    n->listener_closed = true;
    port_maybe_closed(n);
}

/* Copies o's peers, resolved. Returns SL_OK or SL_EINVAL. */
static int port_peers(struct part__hs_port *n, const struct part__hs_port_options *o)
{
    n->peers = sl_xcalloc(o->peer_count, sizeof *n->peers);
    for (size_t i = 0; i < o->peer_count; i++) {
        const struct part__hs_peer *p = &o->peers[i];
        if (p->id == 0 || peer_find(n, p->id) != NULL) {
            return SL_EINVAL;
        }
        if (resolve(p->host, p->port, &n->peers[i].sa) != SL_OK) {
            return SL_EINVAL;
        }
        format_addr(p->host, p->port, n->peers[i].addr, sizeof n->peers[i].addr);
        n->peers[i].id = p->id;
        n->peer_count = i + 1;
    }
    return peer_find(n, o->id) != NULL ? SL_OK : SL_EINVAL;
}

int part__hs_port_new(const struct part__hs_port_options *o, struct part__hs_port **out)
{
    if (o->loop == NULL || o->proto == NULL || o->id == 0 || o->secret == NULL ||
        o->secret_len == 0 || o->secret_len > SECRET_MAX || o->peer_count == 0 ||
        o->peer_count > UINT16_MAX || o->tcp_alloc == NULL || o->tcp_free == NULL ||
        o->find == NULL || o->done == NULL) {
        return SL_EINVAL;
    }
    SL_ASSERT(strlen(o->proto->label_listener) < LABEL_MAX &&
              strlen(o->proto->label_dialer) < LABEL_MAX);
    struct part__hs_port *n = sl_xcalloc(1, sizeof *n);
    n->proto = o->proto;
    n->loop = o->loop;
    n->id = o->id;
    n->handshake_ms = o->handshake_ms != 0 ? o->handshake_ms : PART__HS_HANDSHAKE_MS;
    memcpy(n->cluster_id, o->cluster_id, sizeof n->cluster_id);
    n->secret = sl_xmalloc(o->secret_len);
    memcpy(n->secret, o->secret, o->secret_len);
    n->secret_len = o->secret_len;
    n->tcp_alloc = o->tcp_alloc;
    n->tcp_free = o->tcp_free;
    n->find = o->find;
    n->done = o->done;
    n->arg = o->arg;
    struct sockaddr_storage bind_sa;
    int rc = port_peers(n, o);
    if (rc == SL_OK) {
        rc = resolve(o->host, o->port, &bind_sa);
    }
    if (rc != SL_OK) {
        port_free(n);
        return rc;
    }
    SL_ASSERT(uv_tcp_init(n->loop, &n->listener) == 0);
    n->listener.data = n;
    int uvrc = uv_tcp_bind(&n->listener, (const struct sockaddr *)&bind_sa, 0);
    if (uvrc == 0) {
        uvrc = uv_listen((uv_stream_t *)&n->listener, LISTEN_BACKLOG, on_connection);
    }
    if (uvrc != 0) {
        sl_log(SL_LOG_ERROR, LOG_MOD, "%s port %s:%u: %s", n->proto->what, o->host,
               (unsigned)o->port, uv_strerror(uvrc));
        /* The handle is on the loop: the port goes when it has closed. */
        n->closing = true;
        uv_close((uv_handle_t *)&n->listener, on_listener_closed);
        return SL_EIO;
    }
    struct sockaddr_storage sa;
    int len = (int)sizeof sa;
    SL_ASSERT(uv_tcp_getsockname(&n->listener, (struct sockaddr *)&sa, &len) == 0);
    n->port = ntohs(sa.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&sa)->sin6_port
                                             : ((struct sockaddr_in *)&sa)->sin_port);
    *out = n;
    return SL_OK;
}

uint16_t part__hs_port_port(const struct part__hs_port *n)
{
    return n->port;
}

void part__hs_port_close(struct part__hs_port *n, void (*cb)(void *arg), void *arg)
{
    SL_ASSERT(!n->closing);
    n->closing = true;
    n->close_cb = cb;
    n->close_arg = arg;
    for (struct part__hs *c = n->conns; c != NULL; c = c->next) {
        conn_kill(c);
    }
    uv_close((uv_handle_t *)&n->listener, on_listener_closed);
}

void part__hs_port_rejected(const struct part__hs_port *n, uint64_t out[PART__HS_REJECT_COUNT])
{
    for (size_t i = 0; i < PART__HS_REJECT_COUNT; i++) {
        out[i] = atomic_load_explicit(&n->rejected[i], memory_order_relaxed);
    }
}
