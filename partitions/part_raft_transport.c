/*
 * part_raft_transport.c -- a node's Raft port: one listening socket for
 * every Raft group of the node, and per group a struct raft_uv_transport
 * whose connections open with the cluster's handshake (part_handshake.c,
 * docs/design.md "Cluster") before libraft reads or writes a byte of its
 * own.
 *
 * Threading: everything runs on the node's uv loop, except the counters,
 * which part__raft_node_stats reads from any thread.
 *
 * The handshake names the group the stream is for; the listener hands it
 * to that group's libraft instance only, and refuses a group that has not
 * called listen. libraft never reads the streams it dialed, and the
 * listener writes nothing after the handshake's OK byte, so no Raft byte
 * is lost to the handshake's reads. libraft starts reading an accepted
 * stream itself (uv_read_start in its accept callback) and frees both
 * kinds of stream with raft_free after closing them, so the port
 * allocates them with raft_malloc.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <raft.h>
#include <raft/uv.h>
#include <uv.h>

#include "part_raft_transport.h"

#include "part_handshake.h"

static const struct part__hs_proto raft_proto = {
    .what = "raft",
    .name_what = "group",
    .magic = PART__RAFT_MAGIC,
    .version = PART__RAFT_VERSION,
    .label_listener = "sluice raft listener v1",
    .label_dialer = "sluice raft dialer v1",
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
    size_t conns; /* handshakes of this group not yet handed over or failed */
    /* Closed as soon as the transport closes, so that its close callback
     * always comes from the loop, never from inside close itself. */
    uv_idle_t closer;
};

/* libraft's request for a connection, completed exactly once: by the
 * handover, or once the handshake failed. */
struct dial {
    struct raft_uv_connect *req;
    raft_uv_connect_cb cb;
};

struct part__raft_node {
    uv_loop_t *loop;
    struct part__hs_port *port;
    uint16_t id;
    bool closing;
    void (*close_cb)(void *arg);
    void *close_arg;
    struct group *groups;
    _Atomic uint64_t accepted, connected;
};

/* ---- the port's hooks ----------------------------------------------------- */

static struct group *group_find(const struct part__raft_node *n, const uint8_t *name, size_t len)
{
    for (struct group *g = n->groups; g != NULL; g = g->next) {
        if (g->name_len == len && memcmp(g->name, name, len) == 0) {
            return g;
        }
    }
    return NULL;
}

/* A hello names group name: only a group whose libraft listens takes it. */
static void *hs_find(void *arg, const uint8_t *name, size_t len)
{
    struct group *g = group_find(arg, name, len);
    if (g == NULL || g->accept_cb == NULL) {
        return NULL;
    }
    g->conns++;
    return g;
}

static void group_maybe_closed(struct group *g)
{
    if (g->closing && g->closer_closed && g->conns == 0 && g->close_cb != NULL) {
        raft_uv_transport_close_cb cb = g->close_cb;
        g->close_cb = NULL;
        cb(g->t);
    }
}

/* A handshake ended: the stream goes to libraft, or a dialer's request
 * learns it failed (cancelled when its group is closing). */
static void hs_done(void *arg, struct part__hs *hs, uv_tcp_t *tcp)
{
    struct part__raft_node *n = arg;
    struct group *g = part__hs_owner(hs);
    struct dial *d = part__hs_data(hs);
    if (g == NULL) {
        return; /* refused before its hello named a group */
    }
    g->conns--;
    if (tcp != NULL) {
        if (d != NULL) {
            atomic_fetch_add_explicit(&n->connected, 1, memory_order_relaxed);
            d->cb(d->req, (uv_stream_t *)tcp, 0);
        } else {
            atomic_fetch_add_explicit(&n->accepted, 1, memory_order_relaxed);
            g->accept_cb(g->t, part__hs_peer_id(hs), part__hs_peer_addr(hs), (uv_stream_t *)tcp);
        }
    } else if (d != NULL) {
        d->cb(d->req, NULL, g->closing ? RAFT_CANCELED : RAFT_NOCONNECTION);
    }
    free(d);
    group_maybe_closed(g);
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
    if (id > UINT16_MAX) {
        snprintf(t->errmsg, sizeof t->errmsg, "raft id %llu is not another configured node",
                 (unsigned long long)id);
        return RAFT_NOCONNECTION;
    }
    struct dial *d = sl_xcalloc(1, sizeof *d);
    d->req = req;
    d->cb = cb;
    const char *why = NULL;
    int rc = part__hs_dial(n->port, (uint16_t)id, g->name, g, d, NULL, &why);
    if (rc != SL_OK) {
        free(d);
        if (rc == SL_ENOMEM) {
            return RAFT_NOMEM;
        }
        if (rc == SL_EIO) {
            snprintf(t->errmsg, sizeof t->errmsg, "uv_tcp_connect: %s", why);
        } else {
            snprintf(t->errmsg, sizeof t->errmsg, "raft id %llu is not another configured node",
                     (unsigned long long)id);
        }
        return RAFT_NOCONNECTION;
    }
    g->conns++;
    return 0;
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
    part__hs_cancel_owner(g->node->port, g);
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

static void *tcp_alloc(size_t size)
{
    return raft_malloc(size);
}

static void tcp_free(void *p)
{
    raft_free(p);
}

int part__raft_node_new(const struct part__raft_node_options *o, struct part__raft_node **out)
{
    if (o->peer_count == 0 || o->peer_count > UINT16_MAX) {
        return SL_EINVAL;
    }
    struct part__raft_node *n = sl_xcalloc(1, sizeof *n);
    struct part__hs_peer *peers = sl_xcalloc(o->peer_count, sizeof *peers);
    for (size_t i = 0; i < o->peer_count; i++) {
        peers[i] = (struct part__hs_peer){o->peers[i].id, o->peers[i].host, o->peers[i].port};
    }
    struct part__hs_port_options po = {.proto = &raft_proto,
                                       .loop = o->loop,
                                       .id = o->id,
                                       .host = o->host,
                                       .port = o->port,
                                       .peers = peers,
                                       .peer_count = o->peer_count,
                                       .secret = o->secret,
                                       .secret_len = o->secret_len,
                                       .handshake_ms = o->handshake_ms,
                                       .tcp_alloc = tcp_alloc,
                                       .tcp_free = tcp_free,
                                       .find = hs_find,
                                       .done = hs_done,
                                       .arg = n};
    memcpy(po.cluster_id, o->cluster_id, sizeof po.cluster_id);
    int rc = part__hs_port_new(&po, &n->port);
    free(peers);
    if (rc != SL_OK) {
        free(n);
        return rc;
    }
    n->loop = o->loop;
    n->id = o->id;
    *out = n;
    return SL_OK;
}

uint16_t part__raft_node_port(const struct part__raft_node *n)
{
    return part__hs_port_port(n->port);
}

static void on_port_closed(void *arg)
{
    struct part__raft_node *n = arg;
    void (*cb)(void *) = n->close_cb;
    void *cb_arg = n->close_arg;
    free(n);
    if (cb != NULL) {
        cb(cb_arg);
    }
}

void part__raft_node_close(struct part__raft_node *n, void (*cb)(void *arg), void *arg)
{
    SL_ASSERT(n->groups == NULL && !n->closing);
    n->closing = true;
    n->close_cb = cb;
    n->close_arg = arg;
    part__hs_port_close(n->port, on_port_closed, n);
}

void part__raft_node_stats(const struct part__raft_node *n, struct part__raft_stats *out)
{
    out->accepted = atomic_load_explicit(&n->accepted, memory_order_relaxed);
    out->connected = atomic_load_explicit(&n->connected, memory_order_relaxed);
    part__hs_port_rejected(n->port, out->rejected);
}
