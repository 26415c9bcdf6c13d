/*
 * gw_connlimit.c -- the connection caps: a process-wide total and a count
 * per peer address, shared by every I/O thread.
 *
 * Without them one client could open connections until accept(2) fails
 * with EMFILE, and from then on nobody else gets in. The total is checked
 * first (an atomic, no lock); the per-peer count needs the table, under a
 * mutex held for a hash lookup. Both are taken at accept and given back
 * when the socket is closed, so they count file descriptors, not HTTP
 * sessions.
 */
#include "gw_connlimit.h"

#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define PEER_BUCKETS 1024u /* a power of two */

struct peer_node {
    struct gw_peer peer;
    uint32_t count;
    struct peer_node *next;
};

struct gw_connlimit {
    _Atomic uint32_t max_connections;
    _Atomic uint32_t max_per_peer;
    _Atomic uint64_t open;
    _Atomic uint64_t refused[GW_CONN_REFUSAL_COUNT];
    _Atomic uint64_t http_refused[GW_HTTP_REFUSAL_COUNT];
    _Atomic uint64_t connections[GW_HTTP_VERSION_COUNT];
    pthread_mutex_t lock; /* guards buckets and peers */
    uint64_t peers;
    struct peer_node *buckets[PEER_BUCKETS];
};

static const char *const refusal_names[GW_CONN_REFUSAL_COUNT] = {
    [GW_CONN_REFUSED_MAX_CONNECTIONS] = "max_connections",
    [GW_CONN_REFUSED_MAX_PER_PEER] = "max_connections_per_peer",
    [GW_CONN_REFUSED_SHUTTING_DOWN] = "shutting_down",
    [GW_CONN_ACCEPT_FDS_EXHAUSTED] = "fds_exhausted",
    [GW_CONN_ACCEPT_FAILED] = "accept_failed",
};

const char *gw__conn_refusal_name(enum gw_conn_refusal r)
{
    return (unsigned)r < GW_CONN_REFUSAL_COUNT ? refusal_names[r] : "unknown";
}

static const char *const http_refusal_names[GW_HTTP_REFUSAL_COUNT] = {
    [GW_HTTP_BAD_REQUEST] = "bad_request",
    [GW_HTTP_HEADER_TOO_LARGE] = "header_too_large",
    [GW_HTTP_BODY_TOO_LARGE] = "body_too_large",
    [GW_HTTP_REQUEST_TIMEOUT] = "request_timeout",
    [GW_HTTP_BUDGET] = "budget",
    [GW_HTTP_H2_PROTOCOL] = "h2_protocol",
    [GW_HTTP_TLS_HANDSHAKE] = "tls_handshake",
    [GW_HTTP_VERSION] = "version",
    [GW_HTTP_STALLED] = "stalled",
};

const char *gw__http_refusal_name(enum gw_http_refusal r)
{
    return (unsigned)r < GW_HTTP_REFUSAL_COUNT ? http_refusal_names[r] : "unknown";
}

const char *gw__http_version_name(enum gw_http_version v)
{
    return v == GW_HTTP_VERSION_1 ? "1.1" : v == GW_HTTP_VERSION_2 ? "2" : "unknown";
}

void gw__connlimit_count_http(struct gw_connlimit *cl, enum gw_http_refusal why)
{
    /* A client can trigger this at will: the log is rate-limited, the
     * counter is not. */
    static struct sl_log_limit http_log = SL_LOG_LIMIT(10, 10000);
    sl_log_limited(&http_log, SL_LOG_INFO, "gw", "http: request or connection refused: %s",
                   gw__http_refusal_name(why));
    if (cl != NULL && (unsigned)why < GW_HTTP_REFUSAL_COUNT)
        atomic_fetch_add_explicit(&cl->http_refused[why], 1, memory_order_relaxed);
}

void gw__connlimit_count_version(struct gw_connlimit *cl, enum gw_http_version v)
{
    if (cl != NULL && (unsigned)v < GW_HTTP_VERSION_COUNT)
        atomic_fetch_add_explicit(&cl->connections[v], 1, memory_order_relaxed);
}

struct gw_peer gw__peer_from_sockaddr(const struct sockaddr_storage *ss)
{
    struct gw_peer p;
    memset(&p, 0, sizeof(p));
    if (ss->ss_family == AF_INET6) {
        memcpy(p.addr, &((const struct sockaddr_in6 *)ss)->sin6_addr, 16);
    } else if (ss->ss_family == AF_INET) {
        p.addr[10] = 0xff;
        p.addr[11] = 0xff;
        memcpy(p.addr + 12, &((const struct sockaddr_in *)ss)->sin_addr, 4);
    }
    return p;
}

/* FNV-1a: the table is small and the keys are not chosen by an attacker
 * who can see the hash (a peer cannot pick its own address freely). */
static uint32_t peer_hash(const struct gw_peer *p)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < sizeof(p->addr); i++) {
        h ^= p->addr[i];
        h *= 16777619u;
    }
    return h & (PEER_BUCKETS - 1u);
}

struct gw_connlimit *gw__connlimit_new(uint32_t max_connections, uint32_t max_per_peer)
{
    struct gw_connlimit *cl = sl_xcalloc(1, sizeof(*cl));
    pthread_mutex_init(&cl->lock, NULL);
    gw__connlimit_set(cl, max_connections, max_per_peer);
    return cl;
}

void gw__connlimit_free(struct gw_connlimit *cl)
{
    if (cl == NULL)
        return;
    for (size_t i = 0; i < PEER_BUCKETS; i++) {
        struct peer_node *n = cl->buckets[i];
        while (n != NULL) {
            struct peer_node *next = n->next;
            free(n);
            n = next;
        }
    }
    pthread_mutex_destroy(&cl->lock);
    free(cl);
}

void gw__connlimit_set(struct gw_connlimit *cl, uint32_t max_connections, uint32_t max_per_peer)
{
    atomic_store(&cl->max_connections, max_connections > 0 ? max_connections : 1u);
    atomic_store(&cl->max_per_peer, max_per_peer > 0 ? max_per_peer : 1u);
}

void gw__connlimit_count(struct gw_connlimit *cl, enum gw_conn_refusal why)
{
    atomic_fetch_add_explicit(&cl->refused[why], 1, memory_order_relaxed);
}

int gw__connlimit_acquire(struct gw_connlimit *cl, const struct gw_peer *peer,
                          enum gw_conn_refusal *why)
{
    uint64_t max_total = atomic_load_explicit(&cl->max_connections, memory_order_relaxed);
    if (atomic_fetch_add(&cl->open, 1) >= max_total) {
        atomic_fetch_sub(&cl->open, 1);
        *why = GW_CONN_REFUSED_MAX_CONNECTIONS;
        gw__connlimit_count(cl, *why);
        return SL_EBUSY;
    }
    uint32_t max_peer = atomic_load_explicit(&cl->max_per_peer, memory_order_relaxed);
    uint32_t b = peer_hash(peer);
    pthread_mutex_lock(&cl->lock);
    struct peer_node *n = cl->buckets[b];
    while (n != NULL && memcmp(&n->peer, peer, sizeof(*peer)) != 0)
        n = n->next;
    if (n != NULL && n->count >= max_peer) {
        pthread_mutex_unlock(&cl->lock);
        atomic_fetch_sub(&cl->open, 1);
        *why = GW_CONN_REFUSED_MAX_PER_PEER;
        gw__connlimit_count(cl, *why);
        return SL_EBUSY;
    }
    if (n == NULL) {
        n = sl_xcalloc(1, sizeof(*n));
        n->peer = *peer;
        n->next = cl->buckets[b];
        cl->buckets[b] = n;
        cl->peers++;
    }
    n->count++;
    pthread_mutex_unlock(&cl->lock);
    return SL_OK;
}

void gw__connlimit_release(struct gw_connlimit *cl, const struct gw_peer *peer)
{
    uint32_t b = peer_hash(peer);
    pthread_mutex_lock(&cl->lock);
    struct peer_node **link = &cl->buckets[b];
    while (*link != NULL && memcmp(&(*link)->peer, peer, sizeof(*peer)) != 0)
        link = &(*link)->next;
    struct peer_node *n = *link;
    SL_ASSERT(n != NULL && n->count > 0);
    if (--n->count == 0) {
        *link = n->next;
        cl->peers--;
        free(n);
    }
    pthread_mutex_unlock(&cl->lock);
    atomic_fetch_sub(&cl->open, 1);
}

void gw__connlimit_stats(struct gw_connlimit *cl, struct gw_connlimit_stats *out)
{
    memset(out, 0, sizeof(*out));
    out->open = atomic_load_explicit(&cl->open, memory_order_relaxed);
    out->max_connections = atomic_load_explicit(&cl->max_connections, memory_order_relaxed);
    out->max_per_peer = atomic_load_explicit(&cl->max_per_peer, memory_order_relaxed);
    for (size_t i = 0; i < GW_CONN_REFUSAL_COUNT; i++)
        out->refused[i] = atomic_load_explicit(&cl->refused[i], memory_order_relaxed);
    for (size_t i = 0; i < GW_HTTP_REFUSAL_COUNT; i++)
        out->http_refused[i] = atomic_load_explicit(&cl->http_refused[i], memory_order_relaxed);
    for (size_t i = 0; i < GW_HTTP_VERSION_COUNT; i++)
        out->connections[i] = atomic_load_explicit(&cl->connections[i], memory_order_relaxed);
    pthread_mutex_lock(&cl->lock);
    out->peers = cl->peers;
    pthread_mutex_unlock(&cl->lock);
}
