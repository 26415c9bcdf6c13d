/*
 * part_raft_transport.c -- a node's Raft port: one listening socket for
 * every Raft group of the node, and per group a struct raft_uv_transport
 * whose connections open with the cluster's handshake (docs/design.md
 * "Cluster") before libraft reads or writes a byte of its own.
 *
 * Threading: everything runs on the node's uv loop, except the counters,
 * which part__raft_node_stats reads from any thread.
 *
 * The handshake, every field fixed-size so that each read asks for exactly
 * the bytes the step needs and no Raft byte after them is ever consumed:
 *
 *   dialer   -> listener  hello: magic, version, cluster id, dialer id,
 *                         group (length and zero-padded name), nonce_d
 *   listener -> dialer    nonce_l, HMAC(secret, "listener" label, ...)
 *   dialer   -> listener  HMAC(secret, "dialer" label, ...)
 *   listener -> dialer    one OK byte
 *
 * where both MACs cover the cluster id, both node ids, the group and both
 * nonces. The listener proves the secret first, over a nonce the dialer
 * chose, and the dialer's answer covers a nonce the listener chose, so
 * neither answer can be replayed from another connection; the labels keep
 * a listener's MAC from being reflected back as a dialer's. The dialer
 * sends nothing after its MAC until the OK byte, so the listener's last
 * read cannot take a Raft byte; the listener writes nothing after OK, and
 * libraft never reads the streams it dialed, so neither can the dialer's.
 * libraft starts reading an accepted stream itself (uv_read_start in its
 * accept callback) and frees both kinds of stream with raft_free after
 * closing them, so they are allocated with raft_malloc.
 */
#include <netdb.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <raft.h>
#include <raft/uv.h>
#include <uv.h>

#include "part_raft_transport.h"

#include "part_bytes.h"

#define LOG_MOD "partitions"
#define NONCE_LEN ((size_t)16)
#define MAC_LEN ((size_t)32)
#define SECRET_MAX 4096
#define OK_BYTE 0x01
#define CHALLENGE_LEN (NONCE_LEN + MAC_LEN)
#define ADDR_MAX (INET6_ADDRSTRLEN + 8) /* "[addr]:port" */
#define LISTEN_BACKLOG 128

static const char LABEL_LISTENER[] = "sluice raft listener v1";
static const char LABEL_DIALER[] = "sluice raft dialer v1";

static const char *const reject_names[PART__RAFT_REJECT_COUNT] = {
    [PART__RAFT_REJECT_BAD_MAGIC] = "bad_magic",
    [PART__RAFT_REJECT_BAD_VERSION] = "bad_version",
    [PART__RAFT_REJECT_OTHER_CLUSTER] = "other_cluster",
    [PART__RAFT_REJECT_UNKNOWN_NODE] = "unknown_node",
    [PART__RAFT_REJECT_SELF_ID] = "self_id",
    [PART__RAFT_REJECT_UNKNOWN_GROUP] = "unknown_group",
    [PART__RAFT_REJECT_BAD_MAC] = "bad_mac",
    [PART__RAFT_REJECT_DEADLINE] = "deadline",
    [PART__RAFT_REJECT_CLOSED] = "closed",
    [PART__RAFT_REJECT_OVERLOAD] = "overload",
};

struct peer {
    uint16_t id;
    char addr[ADDR_MAX]; /* "host:port", as libraft is told it */
    struct sockaddr_storage sa;
};

struct group {
    struct part__raft_node *node;
    struct raft_uv_transport *t;
    struct group *next;
    char name[PART__RAFT_GROUP_MAX + 1];
    size_t name_len;
    raft_uv_accept_cb accept_cb; /* set by listen, cleared by close */
    raft_uv_transport_close_cb close_cb;
    bool closing;
    bool closer_closed;
    size_t conns; /* connections of this group not yet handed over or freed */
    /* Closed as soon as the transport closes, so that its close callback
     * always comes from the loop, never from inside close itself. */
    uv_idle_t closer;
};

struct conn {
    struct part__raft_node *node;
    struct group *group; /* NULL until a listener has read the hello */
    struct conn *prev, *next;
    bool dialer;
    bool connected;   /* a dialer's TCP connect succeeded */
    bool dying;       /* its handles are closing */
    bool handed_over; /* the stream belongs to libraft now */
    bool final_step;  /* the last message is read (dialer) or written (listener) */
    int handles;      /* open handles: tcp and timer */
    int writes;       /* writes under way */
    uv_tcp_t *tcp;    /* raft_malloc'd: libraft frees it after a handover */
    uv_timer_t timer;
    uv_connect_t connect;
    uv_write_t wr[2];
    /* The dialer's libraft request: completed exactly once, after the
     * handover or once the handles closed. NULL when connect failed before
     * returning, which libraft learns from its return value instead. */
    struct raft_uv_connect *req;
    raft_uv_connect_cb cb;
    const struct peer *peer;
    uint16_t dialer_id, listener_id;
    uint8_t nonce_d[NONCE_LEN], nonce_l[NONCE_LEN];
    uint8_t in[PART__RAFT_HELLO_LEN];
    size_t want, got;
    void (*on_read)(struct conn *c);
    uint8_t out_a[PART__RAFT_HELLO_LEN]; /* hello or challenge */
    uint8_t out_b[MAC_LEN];              /* dialer's MAC or OK */
};

struct part__raft_node {
    uv_loop_t *loop;
    uint16_t id;
    uint32_t handshake_ms;
    uint8_t cluster_id[PART__RAFT_CLUSTER_ID_LEN];
    unsigned char *secret;
    size_t secret_len;
    struct peer *peers;
    size_t peer_count;
    uv_tcp_t listener;
    uint16_t port;
    bool closing;
    bool listener_closed;
    void (*close_cb)(void *arg);
    void *close_arg;
    struct group *groups;
    struct conn *conns;
    size_t incoming; /* listener-side connections alive */
    _Atomic uint64_t accepted, connected;
    _Atomic uint64_t rejected[PART__RAFT_REJECT_COUNT];
};

const char *part__raft_reject_name(enum part__raft_reject r)
{
    return (unsigned)r < PART__RAFT_REJECT_COUNT ? reject_names[r] : "unknown";
}

/* ---- peers and addresses ----------------------------------------------- */

static const struct peer *peer_find(const struct part__raft_node *n, uint64_t id)
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
static void peer_name(const struct conn *c, char *out, size_t cap)
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
 * the group and both nonces, each field fixed-size or length-prefixed so
 * that no two inputs share an encoding. */
static void handshake_mac(const struct conn *c, const char *label, uint8_t out[MAC_LEN])
{
    const struct part__raft_node *n = c->node;
    uint8_t msg[64 + PART__RAFT_CLUSTER_ID_LEN + 4 + 1 + PART__RAFT_GROUP_MAX + 2 * NONCE_LEN];
    size_t len = strlen(label) + 1;
    SL_ASSERT(len <= 64);
    memcpy(msg, label, len);
    memcpy(msg + len, n->cluster_id, PART__RAFT_CLUSTER_ID_LEN);
    len += PART__RAFT_CLUSTER_ID_LEN;
    part__put_be(msg + len, c->dialer_id, 2);
    part__put_be(msg + len + 2, c->listener_id, 2);
    len += 4;
    msg[len++] = (uint8_t)c->group->name_len;
    memcpy(msg + len, c->group->name, c->group->name_len);
    len += c->group->name_len;
    memcpy(msg + len, c->nonce_d, NONCE_LEN);
    memcpy(msg + len + NONCE_LEN, c->nonce_l, NONCE_LEN);
    len += 2 * NONCE_LEN;
    unsigned int out_len = 0;
    SL_ASSERT(HMAC(EVP_sha256(), n->secret, (int)n->secret_len, msg, len, out, &out_len) != NULL);
    SL_ASSERT(out_len == MAC_LEN);
}

/* ---- connections: life and death -------------------------------------- */

static void group_maybe_closed(struct group *g);
static void node_maybe_closed(struct part__raft_node *n);

static void conn_link(struct part__raft_node *n, struct conn *c)
{
    c->next = n->conns;
    if (n->conns != NULL) {
        n->conns->prev = c;
    }
    n->conns = c;
}

static void conn_unlink(struct part__raft_node *n, struct conn *c)
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

/* The last handle closed: completes the dialer's request when it did not
 * get a stream, then tells a closing group and node. */
static void conn_free(struct conn *c)
{
    struct part__raft_node *n = c->node;
    struct group *g = c->handed_over ? NULL : c->group;
    struct raft_uv_connect *req = c->handed_over ? NULL : c->req;
    raft_uv_connect_cb cb = c->cb;
    int status = g != NULL && g->closing ? RAFT_CANCELED : RAFT_NOCONNECTION;
    conn_unlink(n, c);
    if (!c->dialer) {
        n->incoming--;
    }
    if (g != NULL) {
        g->conns--;
    }
    raft_free(c->tcp);
    free(c);
    if (req != NULL) {
        cb(req, NULL, status);
    }
    if (g != NULL) {
        group_maybe_closed(g);
    }
    node_maybe_closed(n);
}

static void on_handle_closed(uv_handle_t *h)
{
    struct conn *c = h->data;
    if (--c->handles == 0) {
        conn_free(c);
    }
}

/* Closes the connection (once): no callback of its reads or writes runs
 * after this beyond the ones libuv cancels, which see dying. */
static void conn_kill(struct conn *c)
{
    if (c->dying) {
        return;
    }
    c->dying = true;
    uv_close((uv_handle_t *)c->tcp, on_handle_closed);
    uv_close((uv_handle_t *)&c->timer, on_handle_closed);
}

static void conn_reject(struct conn *c, enum part__raft_reject why)
{
    static struct sl_log_limit lim = SL_LOG_LIMIT(10, 1000);
    struct part__raft_node *n = c->node;
    char from[ADDR_MAX];
    char group[4 * PART__RAFT_GROUP_MAX + 1] = "";
    atomic_fetch_add_explicit(&n->rejected[why], 1, memory_order_relaxed);
    peer_name(c, from, sizeof from);
    if (c->group != NULL) {
        sl_log_escape(c->group->name, c->group->name_len, group, sizeof group);
    }
    sl_log_limited(&lim, SL_LOG_WARN, LOG_MOD,
                   "raft handshake %s %s refused (%s): node %u, group \"%s\"",
                   c->dialer ? "to" : "from", from, part__raft_reject_name(why),
                   (unsigned)(c->dialer ? c->listener_id : c->dialer_id), group);
    conn_kill(c);
}

static void on_deadline(uv_timer_t *t)
{
    struct conn *c = t->data;
    if (c->dialer && !c->connected) {
        /* A peer that is down or cut off: not a refusal, as below. */
        conn_kill(c);
        return;
    }
    conn_reject(c, PART__RAFT_REJECT_DEADLINE);
}

/* A connection with its handles open and its deadline running. Returns
 * NULL (nothing to undo) when the socket handle cannot be made. */
static struct conn *conn_new(struct part__raft_node *n, bool dialer)
{
    struct conn *c = sl_xcalloc(1, sizeof *c);
    c->tcp = raft_malloc(sizeof *c->tcp);
    if (c->tcp == NULL || uv_tcp_init(n->loop, c->tcp) != 0) {
        raft_free(c->tcp);
        free(c);
        return NULL;
    }
    c->node = n;
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

/* Gives the stream to libraft once the last handshake message is both
 * read and written: the conn keeps only its timer, closing. */
static void conn_maybe_hand_over(struct conn *c)
{
    if (!c->final_step || c->writes > 0 || c->dying) {
        return;
    }
    struct part__raft_node *n = c->node;
    struct group *g = c->group;
    uv_stream_t *stream = (uv_stream_t *)c->tcp;
    /* libraft writes each message as it comes; with Nagle's algorithm one
     * written while the last is unacknowledged would wait for the peer's
     * delayed ACK, tens of milliseconds added to a commit. */
    (void)uv_tcp_nodelay(c->tcp, 1);
    c->tcp = NULL;
    c->handed_over = true;
    c->dying = true;
    c->handles = 1;
    g->conns--;
    uv_close((uv_handle_t *)&c->timer, on_handle_closed);
    stream->data = NULL;
    if (c->dialer) {
        atomic_fetch_add_explicit(&n->connected, 1, memory_order_relaxed);
        c->cb(c->req, stream, 0);
    } else {
        atomic_fetch_add_explicit(&n->accepted, 1, memory_order_relaxed);
        g->accept_cb(g->t, c->dialer_id, c->peer->addr, stream);
    }
}

/* ---- reading and writing exactly ---------------------------------------- */

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    struct conn *c = h->data;
    (void)suggested;
    buf->base = (char *)c->in + c->got;
    buf->len = c->want - c->got;
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    struct conn *c = s->data;
    (void)buf;
    if (c->dying || nread == 0) {
        return;
    }
    if (nread < 0) {
        conn_reject(c, PART__RAFT_REJECT_CLOSED);
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
static void conn_read(struct conn *c, size_t want, void (*done)(struct conn *c))
{
    SL_ASSERT(want <= sizeof c->in);
    c->want = want;
    c->got = 0;
    c->on_read = done;
    if (uv_read_start((uv_stream_t *)c->tcp, on_alloc, on_read) != 0) {
        conn_reject(c, PART__RAFT_REJECT_CLOSED);
    }
}

static void on_written(uv_write_t *w, int status)
{
    struct conn *c = w->data;
    c->writes--;
    if (c->dying) {
        return;
    }
    if (status != 0) {
        conn_reject(c, PART__RAFT_REJECT_CLOSED);
        return;
    }
    conn_maybe_hand_over(c);
}

static void conn_write(struct conn *c, int slot, const uint8_t *p, size_t len)
{
    uv_buf_t b = uv_buf_init((char *)p, (unsigned)len);
    c->wr[slot].data = c;
    if (uv_write(&c->wr[slot], (uv_stream_t *)c->tcp, &b, 1, on_written) != 0) {
        conn_reject(c, PART__RAFT_REJECT_CLOSED);
        return;
    }
    c->writes++;
}

/* ---- the listener's side ------------------------------------------------ */

static struct group *group_find(const struct part__raft_node *n, const uint8_t *name, size_t len)
{
    for (struct group *g = n->groups; g != NULL; g = g->next) {
        if (g->name_len == len && memcmp(g->name, name, len) == 0) {
            return g;
        }
    }
    return NULL;
}

static void listener_got_mac(struct conn *c)
{
    uint8_t want[MAC_LEN];
    handshake_mac(c, LABEL_DIALER, want);
    if (CRYPTO_memcmp(want, c->in, MAC_LEN) != 0) {
        conn_reject(c, PART__RAFT_REJECT_BAD_MAC);
        return;
    }
    c->out_b[0] = OK_BYTE;
    c->final_step = true;
    conn_write(c, 1, c->out_b, 1);
}

/* Checks the hello field by field, cheapest refusals first, and on success
 * binds the connection to its group. Returns whether it passed; *why says
 * why not. */
static bool hello_check(struct conn *c, enum part__raft_reject *why)
{
    struct part__raft_node *n = c->node;
    const uint8_t *p = c->in;
    *why = PART__RAFT_REJECT_BAD_MAGIC;
    if (part__get_be(p, 4) != PART__RAFT_MAGIC) {
        return false;
    }
    if (p[4] != PART__RAFT_VERSION) {
        *why = PART__RAFT_REJECT_BAD_VERSION;
        return false;
    }
    p += 5;
    if (memcmp(p, n->cluster_id, PART__RAFT_CLUSTER_ID_LEN) != 0) {
        *why = PART__RAFT_REJECT_OTHER_CLUSTER;
        return false;
    }
    p += PART__RAFT_CLUSTER_ID_LEN;
    c->dialer_id = (uint16_t)part__get_be(p, 2);
    p += 2;
    c->peer = peer_find(n, c->dialer_id);
    if (c->dialer_id == n->id || c->peer == NULL) {
        *why = c->dialer_id == n->id ? PART__RAFT_REJECT_SELF_ID : PART__RAFT_REJECT_UNKNOWN_NODE;
        return false;
    }
    size_t len = *p++;
    if (len == 0 || len > PART__RAFT_GROUP_MAX) {
        return false;
    }
    for (size_t i = len; i < PART__RAFT_GROUP_MAX; i++) {
        if (p[i] != 0) {
            return false;
        }
    }
    struct group *g = group_find(n, p, len);
    if (g == NULL || g->accept_cb == NULL) {
        *why = PART__RAFT_REJECT_UNKNOWN_GROUP;
        return false;
    }
    c->group = g;
    g->conns++;
    memcpy(c->nonce_d, p + PART__RAFT_GROUP_MAX, NONCE_LEN);
    return true;
}

static void listener_got_hello(struct conn *c)
{
    enum part__raft_reject why;
    if (!hello_check(c, &why)) {
        conn_reject(c, why);
        return;
    }
    c->listener_id = c->node->id;
    sl_random_bytes(c->nonce_l, NONCE_LEN);
    memcpy(c->out_a, c->nonce_l, NONCE_LEN);
    handshake_mac(c, LABEL_LISTENER, c->out_a + NONCE_LEN);
    conn_write(c, 0, c->out_a, CHALLENGE_LEN);
    if (!c->dying) {
        conn_read(c, MAC_LEN, listener_got_mac);
    }
}

static void on_connection(uv_stream_t *server, int status)
{
    struct part__raft_node *n = server->data;
    static struct sl_log_limit lim = SL_LOG_LIMIT(10, 1000);
    if (status != 0) {
        sl_log_limited(&lim, SL_LOG_WARN, LOG_MOD, "raft port: accept failed: %s",
                       uv_strerror(status));
        return;
    }
    struct conn *c = conn_new(n, false);
    if (c == NULL) {
        return;
    }
    if (uv_accept(server, (uv_stream_t *)c->tcp) != 0) {
        conn_kill(c);
        return;
    }
    if (n->incoming > PART__RAFT_MAX_INCOMING) {
        conn_reject(c, PART__RAFT_REJECT_OVERLOAD);
        return;
    }
    conn_read(c, PART__RAFT_HELLO_LEN, listener_got_hello);
}

/* ---- the dialer's side -------------------------------------------------- */

static void dialer_got_ok(struct conn *c)
{
    if (c->in[0] != OK_BYTE) {
        conn_reject(c, PART__RAFT_REJECT_BAD_MAGIC);
        return;
    }
    SL_ASSERT(uv_timer_stop(&c->timer) == 0);
    c->final_step = true;
    conn_maybe_hand_over(c);
}

static void dialer_got_challenge(struct conn *c)
{
    uint8_t want[MAC_LEN];
    memcpy(c->nonce_l, c->in, NONCE_LEN);
    handshake_mac(c, LABEL_LISTENER, want);
    if (CRYPTO_memcmp(want, c->in + NONCE_LEN, MAC_LEN) != 0) {
        conn_reject(c, PART__RAFT_REJECT_BAD_MAC);
        return;
    }
    handshake_mac(c, LABEL_DIALER, c->out_b);
    conn_write(c, 1, c->out_b, MAC_LEN);
    if (!c->dying) {
        conn_read(c, 1, dialer_got_ok);
    }
}

static void on_connected(uv_connect_t *req, int status)
{
    struct conn *c = req->data;
    if (c->dying) {
        return;
    }
    if (status != 0) {
        /* Not a refusal: the peer is down or unreachable, and libraft
         * retries every second, so this is not logged. */
        conn_kill(c);
        return;
    }
    c->connected = true;
    struct part__raft_node *n = c->node;
    uint8_t *p = c->out_a;
    part__put_be(p, PART__RAFT_MAGIC, 4);
    p[4] = PART__RAFT_VERSION;
    p += 5;
    memcpy(p, n->cluster_id, PART__RAFT_CLUSTER_ID_LEN);
    p += PART__RAFT_CLUSTER_ID_LEN;
    part__put_be(p, n->id, 2);
    p += 2;
    *p++ = (uint8_t)c->group->name_len;
    memset(p, 0, PART__RAFT_GROUP_MAX);
    memcpy(p, c->group->name, c->group->name_len);
    p += PART__RAFT_GROUP_MAX;
    memcpy(p, c->nonce_d, NONCE_LEN);
    conn_write(c, 0, c->out_a, PART__RAFT_HELLO_LEN);
    if (!c->dying) {
        conn_read(c, CHALLENGE_LEN, dialer_got_challenge);
    }
}

/* ---- the struct raft_uv_transport of a group ---------------------------- */

static int t_init(struct raft_uv_transport *t, raft_id id, const char *address)
{
    struct group *g = t->impl;
    (void)address;
    if (id != g->node->id) {
        snprintf(t->errmsg, sizeof t->errmsg, "raft id %llu is not this node (%u)",
                 (unsigned long long)id, (unsigned)g->node->id);
        return RAFT_INVALID;
    }
    return 0;
}

static int t_listen(struct raft_uv_transport *t, raft_uv_accept_cb cb)
{
    struct group *g = t->impl;
    SL_ASSERT(!g->closing);
    g->accept_cb = cb;
    return 0;
}

/* Dials the configured address of node id: the configuration, not the
 * address in libraft's, is what the listener checks a dialer against. */
static int t_connect(struct raft_uv_transport *t, struct raft_uv_connect *req, raft_id id,
                     const char *address, raft_uv_connect_cb cb)
{
    struct group *g = t->impl;
    struct part__raft_node *n = g->node;
    (void)address;
    if (g->closing) {
        return RAFT_CANCELED;
    }
    const struct peer *p = peer_find(n, id);
    if (p == NULL || id == n->id) {
        snprintf(t->errmsg, sizeof t->errmsg, "raft id %llu is not another configured node",
                 (unsigned long long)id);
        return RAFT_NOCONNECTION;
    }
    struct conn *c = conn_new(n, true);
    if (c == NULL) {
        return RAFT_NOMEM;
    }
    c->group = g;
    g->conns++;
    c->peer = p;
    c->dialer_id = n->id;
    c->listener_id = p->id;
    sl_random_bytes(c->nonce_d, NONCE_LEN);
    c->connect.data = c;
    int rv = uv_tcp_connect(&c->connect, c->tcp, (const struct sockaddr *)&p->sa, on_connected);
    if (rv != 0) {
        snprintf(t->errmsg, sizeof t->errmsg, "uv_tcp_connect: %s", uv_strerror(rv));
        conn_kill(c);
        return RAFT_NOCONNECTION;
    }
    c->req = req;
    c->cb = cb;
    return 0;
}

static void group_maybe_closed(struct group *g)
{
    if (g->closing && g->closer_closed && g->conns == 0 && g->close_cb != NULL) {
        raft_uv_transport_close_cb cb = g->close_cb;
        g->close_cb = NULL;
        cb(g->t);
    }
}

static void on_closer_closed(uv_handle_t *h)
{
    struct group *g = h->data;
    g->closer_closed = true;
    group_maybe_closed(g);
}

static void t_close(struct raft_uv_transport *t, raft_uv_transport_close_cb cb)
{
    struct group *g = t->impl;
    SL_ASSERT(!g->closing);
    g->closing = true;
    g->accept_cb = NULL;
    g->close_cb = cb;
    for (struct conn *c = g->node->conns; c != NULL; c = c->next) {
        if (c->group == g && !c->handed_over) {
            conn_kill(c);
        }
    }
    SL_ASSERT(uv_idle_init(g->node->loop, &g->closer) == 0);
    g->closer.data = g;
    uv_close((uv_handle_t *)&g->closer, on_closer_closed);
}

int part__raft_transport_init(struct part__raft_node *n, const char *name,
                              struct raft_uv_transport *t)
{
    size_t len = name != NULL ? strlen(name) : 0;
    if (len == 0 || len > PART__RAFT_GROUP_MAX) {
        return SL_EINVAL;
    }
    if (group_find(n, (const uint8_t *)name, len) != NULL) {
        return SL_EEXIST;
    }
    struct group *g = sl_xcalloc(1, sizeof *g);
    g->node = n;
    g->t = t;
    memcpy(g->name, name, len);
    g->name_len = len;
    g->next = n->groups;
    n->groups = g;
    void *data = t->data;
    memset(t, 0, sizeof *t);
    t->data = data;
    t->impl = g;
    t->init = t_init;
    t->listen = t_listen;
    t->connect = t_connect;
    t->close = t_close;
    return SL_OK;
}

void part__raft_transport_fini(struct raft_uv_transport *t)
{
    struct group *g = t->impl;
    if (g == NULL) {
        return;
    }
    struct part__raft_node *n = g->node;
    SL_ASSERT(g->conns == 0 && (!g->closing || g->closer_closed));
    struct group **p = &n->groups;
    while (*p != g) {
        p = &(*p)->next;
    }
    *p = g->next;
    free(g);
    t->impl = NULL;
}

/* ---- the node ----------------------------------------------------------- */

static void node_free(struct part__raft_node *n)
{
    if (n->secret != NULL) {
        OPENSSL_cleanse(n->secret, n->secret_len);
    }
    free(n->secret);
    free(n->peers);
    free(n);
}

static void node_maybe_closed(struct part__raft_node *n)
{
    if (!n->closing || !n->listener_closed || n->conns != NULL) {
        return;
    }
    void (*cb)(void *) = n->close_cb;
    void *arg = n->close_arg;
    node_free(n);
    if (cb != NULL) {
        cb(arg);
    }
}

static void on_listener_closed(uv_handle_t *h)
{
    struct part__raft_node *n = h->data;
    n->listener_closed = true;
    node_maybe_closed(n);
}

/* Copies o's peers, resolved. Returns SL_OK or SL_EINVAL. */
static int node_peers(struct part__raft_node *n, const struct part__raft_node_options *o)
{
    n->peers = sl_xcalloc(o->peer_count, sizeof *n->peers);
    for (size_t i = 0; i < o->peer_count; i++) {
        const struct part__raft_peer *p = &o->peers[i];
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

int part__raft_node_new(const struct part__raft_node_options *o, struct part__raft_node **out)
{
    if (o->loop == NULL || o->id == 0 || o->secret == NULL || o->secret_len == 0 ||
        o->secret_len > SECRET_MAX || o->peer_count == 0 || o->peer_count > UINT16_MAX) {
        return SL_EINVAL;
    }
    struct part__raft_node *n = sl_xcalloc(1, sizeof *n);
    n->loop = o->loop;
    n->id = o->id;
    n->handshake_ms = o->handshake_ms != 0 ? o->handshake_ms : PART__RAFT_HANDSHAKE_MS;
    memcpy(n->cluster_id, o->cluster_id, sizeof n->cluster_id);
    n->secret = sl_xmalloc(o->secret_len);
    memcpy(n->secret, o->secret, o->secret_len);
    n->secret_len = o->secret_len;
    struct sockaddr_storage bind_sa;
    int rc = node_peers(n, o);
    if (rc == SL_OK) {
        rc = resolve(o->host, o->port, &bind_sa);
    }
    if (rc != SL_OK) {
        node_free(n);
        return rc;
    }
    SL_ASSERT(uv_tcp_init(n->loop, &n->listener) == 0);
    n->listener.data = n;
    int uvrc = uv_tcp_bind(&n->listener, (const struct sockaddr *)&bind_sa, 0);
    if (uvrc == 0) {
        uvrc = uv_listen((uv_stream_t *)&n->listener, LISTEN_BACKLOG, on_connection);
    }
    if (uvrc != 0) {
        sl_log(SL_LOG_ERROR, LOG_MOD, "raft port %s:%u: %s", o->host, (unsigned)o->port,
               uv_strerror(uvrc));
        /* The handle is on the loop: the node goes when it has closed. */
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

uint16_t part__raft_node_port(const struct part__raft_node *n)
{
    return n->port;
}

void part__raft_node_close(struct part__raft_node *n, void (*cb)(void *arg), void *arg)
{
    SL_ASSERT(n->groups == NULL && !n->closing);
    n->closing = true;
    n->close_cb = cb;
    n->close_arg = arg;
    for (struct conn *c = n->conns; c != NULL; c = c->next) {
        conn_kill(c);
    }
    uv_close((uv_handle_t *)&n->listener, on_listener_closed);
}

void part__raft_node_stats(const struct part__raft_node *n, struct part__raft_stats *out)
{
    out->accepted = atomic_load_explicit(&n->accepted, memory_order_relaxed);
    out->connected = atomic_load_explicit(&n->connected, memory_order_relaxed);
    for (size_t i = 0; i < PART__RAFT_REJECT_COUNT; i++) {
        out->rejected[i] = atomic_load_explicit(&n->rejected[i], memory_order_relaxed);
    }
}
