/*
 * cfg_cluster.c -- the cluster: section (docs/config.md "cluster",
 * docs/design.md "Cluster"): this node's id and addresses, the secret the
 * nodes authenticate each other with, the replication factor and every
 * node of the cluster. The keys are checked against each other, so that
 * nodes that disagree about who is where are refused by --check-config
 * and at start, not found out at the first election.
 *
 * Threading: the loading thread only (the secret file is read then).
 * Ownership: struct cfg_cluster owns its strings, its nodes and its
 * secret; cfg__cluster_fini wipes the secret before it frees it, so that
 * a freed snapshot leaves no copy of it in the heap.
 */
#include "cfg_cluster.h"
#include "cfg_sections.h"

#include "sl.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- ranges (docs/config.md lists the same) ----------------------------- */

#define NODE_ID_MAX 65535
/* The handshake's HMAC-SHA256 is keyed with the secret: fewer bytes than
 * the hash's own 32 would make the key, not the hash, the weak part. */
#define SECRET_MIN 32
#define SECRET_MAX 4096
#define REPLICATION_DEFAULT 3
#define SNAPSHOT_ENTRIES_DEFAULT 4096
/* libraft keeps 1024 entries behind a snapshot; snapshotting more often
 * than every 64 would spend the leader's time copying images. */
#define SNAPSHOT_ENTRIES_MIN 64
#define SNAPSHOT_ENTRIES_MAX 16777216
/* Below it the P + 2 groups of even a small cluster would get a share too
 * small to hold a partition's empty image. */
#define MEMORY_BUDGET_MIN ((uint64_t)64 << 20)
#define MEMORY_BUDGET_MAX ((uint64_t)1 << 50)

/* A node's three addresses, by index, so that the checks can walk them. */
#define NODE_ADDRS 3
static const char *const node_addr_keys[NODE_ADDRS] = {"raft", "peer", "api"};

static struct cfg_endpoint *node_addr(struct cfg_cluster_node *n, int i)
{
    return i == 0 ? &n->raft : i == 1 ? &n->peer : &n->api;
}

/* Where each value of one entry of nodes was written. NULL where the value
 * is missing or was refused (already reported): it then takes no part in
 * the cross-checks, which would only repeat the problem. */
struct node_marks {
    const struct cfg__node *entry;
    const struct cfg__node *id;
    const struct cfg__node *addr[NODE_ADDRS];
};

/* Where the section's own values were written (NULL: absent or refused). */
struct cluster_marks {
    const struct cfg__node *node_id;
    const struct cfg__node *raft;
    const struct cfg__node *peer;
    const struct cfg__node *replication;
    const struct cfg__node *nodes_key;
    const struct cfg__node *nodes; /* the list, when it is one */
    struct node_marks *node;       /* one per entry of the list */
};

/* ---- values ---------------------------------------------------------------- */

static bool is_wildcard(const char *host)
{
    struct in_addr a4;
    struct in6_addr a6;
    static const struct in6_addr any6 = IN6ADDR_ANY_INIT;
    if (inet_pton(AF_INET, host, &a4) == 1) {
        return a4.s_addr == htonl(INADDR_ANY);
    }
    return inet_pton(AF_INET6, host, &a6) == 1 && memcmp(&a6, &any6, sizeof(a6)) == 0;
}

/* An address other machines connect to, so one host and not a wildcard
 * (which is only good for listening). Sets *mark to val when it is taken. */
static void set_address(struct vctx *v, const struct cfg__node *k, const struct cfg__node *val,
                        struct cfg_endpoint *out, const struct cfg__node **mark)
{
    struct cfg_endpoint e = {0};
    cfg__set_endpoint(v, k, val, &e);
    if (e.host == NULL) {
        return;
    }
    if (is_wildcard(e.host)) {
        REPORT(v, val, "%s must be an address other machines can reach, not the wildcard %s",
               k->value, cfg__qnode(val));
        free(e.host);
        return;
    }
    free(out->host);
    *out = e;
    *mark = val;
}

static void wipe_free(unsigned char *p, size_t n)
{
    if (p != NULL) {
        explicit_bzero(p, n);
        free(p);
    }
}

/* Reads the secret: the file's bytes exactly as they are, so that every
 * node holding a copy of the same file holds the same key. */
static void load_secret(struct vctx *v, const struct cfg__node *k, const struct cfg__node *val,
                        struct cfg_cluster *c)
{
    char *path = NULL;
    int fd = cfg__open_file(v, k, val, &path);
    if (fd < 0) {
        return;
    }
    /* One byte past the bound tells "too long" from "exactly at it". */
    unsigned char *buf = sl_xmalloc(SECRET_MAX + 1);
    size_t n = 0;
    int err = 0;
    while (n < SECRET_MAX + 1) {
        ssize_t r = read(fd, buf + n, SECRET_MAX + 1 - n);
        if (r < 0 && errno == EINTR) {
            continue;
        }
        if (r <= 0) {
            err = r < 0 ? errno : 0;
            break;
        }
        n += (size_t)r;
    }
    close(fd);
    const char *q = cfg__quote(path, strlen(path));
    if (err != 0) {
        REPORT(v, val, "cannot read secret_file %s (%s)", q, strerror(err));
    } else if (n > SECRET_MAX) {
        REPORT(v, val, "secret_file %s is longer than %d bytes", q, SECRET_MAX);
    } else if (n < SECRET_MIN) {
        REPORT(v, val, "secret_file %s holds %zu bytes; the cluster secret needs at least %d", q, n,
               SECRET_MIN);
    } else {
        wipe_free(c->secret, c->secret_len);
        free(c->secret_file);
        c->secret = buf;
        c->secret_len = n;
        c->secret_file = path;
        return;
    }
    wipe_free(buf, SECRET_MAX + 1);
    free(path);
}

/* ---- nodes ------------------------------------------------------------------- */

static void load_node(struct vctx *v, const struct cfg__node *item, struct cfg_cluster_node *n,
                      struct node_marks *mk)
{
    mk->entry = item;
    if (item->kind != CFG__MAPPING) {
        REPORT(v, item, "an entry of cluster.nodes must be a mapping {id, raft, peer, api}, not %s",
               cfg__describe(item));
        return;
    }
    bool have_id = false;
    bool have_addr[NODE_ADDRS] = {false, false, false};
    for (size_t i = 0; i < item->count; i++) {
        const struct cfg__node *key = item->pairs[i].key;
        const struct cfg__node *val = item->pairs[i].value;
        bool known = false;
        if (cfg__key_is(key, "id")) {
            uint64_t x;
            if (cfg__get_uint(v, key, val, 1, NODE_ID_MAX, &x) == SL_OK) {
                n->id = (uint16_t)x;
                mk->id = val;
            }
            have_id = known = true;
        }
        for (int a = 0; a < NODE_ADDRS; a++) {
            if (cfg__key_is(key, node_addr_keys[a])) {
                set_address(v, key, val, node_addr(n, a), &mk->addr[a]);
                have_addr[a] = known = true;
            }
        }
        if (!known) {
            cfg__report_unknown(v, CFG__SEC_CLUSTER_NODE, "in an entry of cluster.nodes", key);
        }
    }
    if (!have_id) {
        REPORT(v, item, "missing id in this entry of cluster.nodes");
    }
    for (int a = 0; a < NODE_ADDRS; a++) {
        if (!have_addr[a]) {
            REPORT(v, item, "missing %s in this entry of cluster.nodes", node_addr_keys[a]);
        }
    }
}

static int cmp_pos(const struct cfg__node *x, const struct cfg__node *y)
{
    if (x->line != y->line) {
        return x->line < y->line ? -1 : 1;
    }
    return x->column < y->column ? -1 : (x->column > y->column);
}

struct id_use {
    uint16_t id;
    const struct cfg__node *mark;
};

static int cmp_id_use(const void *a, const void *b)
{
    const struct id_use *x = a;
    const struct id_use *y = b;
    if (x->id != y->id) {
        return x->id < y->id ? -1 : 1;
    }
    return cmp_pos(x->mark, y->mark);
}

/* Each id once: every later use is reported, naming the first. Sorted,
 * so that a long list costs n log n and not n squared. */
static void check_ids(struct vctx *v, const struct cfg_cluster *c, const struct node_marks *mk)
{
    struct id_use *use = sl_xcalloc(c->node_count ? c->node_count : 1, sizeof(*use));
    size_t n = 0;
    for (size_t i = 0; i < c->node_count; i++) {
        if (mk[i].id != NULL) {
            use[n++] = (struct id_use){c->nodes[i].id, mk[i].id};
        }
    }
    qsort(use, n, sizeof(*use), cmp_id_use);
    for (size_t i = 1, first = 0; i < n; i++) {
        if (use[i].id != use[first].id) {
            first = i;
            continue;
        }
        REPORT(v, use[i].mark, "node id %u is already used by the entry on line %u",
               (unsigned)use[i].id, use[first].mark->line);
    }
    free(use);
}

static bool endpoint_eq(const struct cfg_endpoint *a, const struct cfg_endpoint *b)
{
    if (a->host == NULL || b->host == NULL) {
        return a->host == b->host && a->port == b->port;
    }
    return a->port == b->port && strcmp(a->host, b->host) == 0;
}

struct addr_use {
    const struct cfg_endpoint *e;
    const struct cfg__node *mark;
    const char *key; /* raft, peer or api */
};

static int cmp_addr_use(const void *a, const void *b)
{
    const struct addr_use *x = a;
    const struct addr_use *y = b;
    int c = strcmp(x->e->host, y->e->host);
    if (c != 0) {
        return c;
    }
    if (x->e->port != y->e->port) {
        return x->e->port < y->e->port ? -1 : 1;
    }
    return cmp_pos(x->mark, y->mark);
}

/* Each address once over every node's raft, peer and api: two sockets
 * cannot listen on one, and a node would dial the wrong service. Compared
 * as written (no name is resolved at load). */
static void check_addresses(struct vctx *v, const struct cfg_cluster *c,
                            const struct node_marks *mk)
{
    struct addr_use *use = sl_xcalloc(c->node_count * NODE_ADDRS + 1, sizeof(*use));
    size_t n = 0;
    for (size_t i = 0; i < c->node_count; i++) {
        for (int a = 0; a < NODE_ADDRS; a++) {
            if (mk[i].addr[a] != NULL) {
                use[n++] =
                    (struct addr_use){node_addr(&c->nodes[i], a), mk[i].addr[a], node_addr_keys[a]};
            }
        }
    }
    qsort(use, n, sizeof(*use), cmp_addr_use);
    for (size_t i = 1, first = 0; i < n; i++) {
        if (!endpoint_eq(use[i].e, use[first].e)) {
            first = i;
            continue;
        }
        REPORT(v, use[i].mark, "%s address %s is already used by the %s of the entry on line %u",
               use[i].key, cfg__qnode(use[i].mark), use[first].key, use[first].mark->line);
    }
    free(use);
}

/* This node must be in nodes, at the addresses it says are its own: the
 * list is what every other node dials, and the same list is given to
 * every node, so a disagreement means a node no one can reach. */
static void check_self(struct vctx *v, const struct cfg_cluster *c, const struct cluster_marks *m)
{
    size_t self = c->node_count;
    for (size_t i = 0; i < c->node_count && self == c->node_count; i++) {
        if (m->node[i].id != NULL && c->nodes[i].id == c->node_id) {
            self = i;
        }
    }
    if (self == c->node_count) {
        REPORT(v, m->node_id,
               "node_id %u is not in cluster.nodes, which must list every node, this one included",
               (unsigned)c->node_id);
        return;
    }
    const struct cfg__node *own[2] = {m->raft, m->peer};
    const struct cfg_endpoint *own_e[2] = {&c->raft, &c->peer};
    for (int a = 0; a < 2; a++) {
        const struct cfg__node *theirs = m->node[self].addr[a];
        if (own[a] == NULL || theirs == NULL ||
            endpoint_eq(own_e[a], node_addr(&c->nodes[self], a))) {
            continue;
        }
        REPORT(v, theirs,
               "node %u is this node (node_id), but its %s %s differs from cluster.%s %s "
               "(line %u)",
               (unsigned)c->node_id, node_addr_keys[a], cfg__qnode(theirs), node_addr_keys[a],
               cfg__qnode(own[a]), own[a]->line);
    }
}

static void check_replication(struct vctx *v, const struct cfg_cluster *c,
                              const struct cluster_marks *m)
{
    if (m->replication != NULL && c->replication % 2 == 0) {
        /* A majority of 2k voters is k + 1: no more failures survived than
         * with 2k - 1 voters, and one more node to wait for. */
        REPORT(v, m->replication, "replication must be odd, not %u", c->replication);
    }
    if (m->nodes != NULL && c->replication > c->node_count) {
        const struct cfg__node *at = m->replication != NULL ? m->replication : m->nodes_key;
        REPORT(v, at,
               "replication (%u%s) must not exceed the number of nodes in cluster.nodes (%zu)",
               c->replication, m->replication != NULL ? "" : " by default", c->node_count);
    }
}

static void load_nodes(struct vctx *v, const struct cfg__node *k, const struct cfg__node *val,
                       struct cluster_marks *m)
{
    struct cfg_cluster *c = &v->s->cluster;
    m->nodes_key = k;
    if (val->kind != CFG__SEQUENCE) {
        REPORT(v, val, "nodes must be a list of {id, raft, peer, api}, not %s", cfg__describe(val));
        return;
    }
    m->nodes = val;
    c->nodes = sl_xcalloc(val->count ? val->count : 1, sizeof(*c->nodes));
    c->node_count = val->count;
    m->node = sl_xcalloc(val->count ? val->count : 1, sizeof(*m->node));
    for (size_t i = 0; i < val->count; i++) {
        load_node(v, val->items[i], &c->nodes[i], &m->node[i]);
    }
}

static int cmp_node(const void *a, const void *b)
{
    const struct cfg_cluster_node *x = a;
    const struct cfg_cluster_node *y = b;
    return x->id < y->id ? -1 : (x->id > y->id);
}

void cfg__load_cluster(struct vctx *v, const struct cfg__node *k, const struct cfg__node *m)
{
    struct cfg_cluster *c = &v->s->cluster;
    if (cfg__want_mapping(v, k, m) != SL_OK) {
        return;
    }
    c->enabled = true;
    c->replication = REPLICATION_DEFAULT;
    c->snapshot_entries = SNAPSHOT_ENTRIES_DEFAULT;
    struct cluster_marks mk = {0};
    bool have_node_id = false;
    bool have_raft = false;
    bool have_peer = false;
    bool have_secret = false;
    for (size_t i = 0; i < m->count; i++) {
        const struct cfg__node *key = m->pairs[i].key;
        const struct cfg__node *val = m->pairs[i].value;
        if (cfg__key_is(key, "node_id")) {
            uint64_t x;
            if (cfg__get_uint(v, key, val, 1, NODE_ID_MAX, &x) == SL_OK) {
                c->node_id = (uint16_t)x;
                mk.node_id = val;
            }
            have_node_id = true;
        } else if (cfg__key_is(key, "raft")) {
            set_address(v, key, val, &c->raft, &mk.raft);
            have_raft = true;
        } else if (cfg__key_is(key, "peer")) {
            set_address(v, key, val, &c->peer, &mk.peer);
            have_peer = true;
        } else if (cfg__key_is(key, "secret_file")) {
            load_secret(v, key, val, c);
            have_secret = true;
        } else if (cfg__key_is(key, "replication")) {
            uint64_t x;
            if (cfg__get_uint(v, key, val, 1, NODE_ID_MAX, &x) == SL_OK) {
                c->replication = (uint32_t)x;
                mk.replication = val;
            }
        } else if (cfg__key_is(key, "nodes")) {
            load_nodes(v, key, val, &mk);
        } else if (cfg__key_is(key, "memory_budget")) {
            cfg__set_budget(v, key, val, MEMORY_BUDGET_MIN, MEMORY_BUDGET_MAX, &c->memory_budget);
        } else if (cfg__key_is(key, "snapshot_entries")) {
            cfg__set_u32(v, key, val, SNAPSHOT_ENTRIES_MIN, SNAPSHOT_ENTRIES_MAX,
                         &c->snapshot_entries);
        } else {
            cfg__report_unknown(v, CFG__SEC_CLUSTER, "in cluster", key);
        }
    }
    const char *missing[5] = {have_node_id ? NULL : "node_id", have_raft ? NULL : "raft",
                              have_peer ? NULL : "peer", have_secret ? NULL : "secret_file",
                              mk.nodes_key != NULL ? NULL : "nodes"};
    for (size_t i = 0; i < SL_ARRAY_LEN(missing); i++) {
        if (missing[i] != NULL) {
            REPORT(v, k, "missing %s in cluster", missing[i]);
        }
    }
    check_replication(v, c, &mk);
    if (mk.nodes != NULL) {
        check_ids(v, c, mk.node);
        check_addresses(v, c, mk.node);
        if (mk.node_id != NULL) {
            check_self(v, c, &mk);
        }
        qsort(c->nodes, c->node_count, sizeof(*c->nodes), cmp_node);
    }
    free(mk.node);
}

/* ---- the snapshot's life ------------------------------------------------------ */

void cfg__cluster_fini(struct cfg_cluster *c)
{
    free(c->raft.host);
    free(c->peer.host);
    free(c->secret_file);
    wipe_free(c->secret, c->secret_len);
    for (size_t i = 0; i < c->node_count; i++) {
        for (int a = 0; a < NODE_ADDRS; a++) {
            free(node_addr(&c->nodes[i], a)->host);
        }
    }
    free(c->nodes);
    *c = (struct cfg_cluster){0};
}

static void copy_endpoint(struct cfg_endpoint *dst, const struct cfg_endpoint *src)
{
    dst->host = src->host != NULL ? sl_xstrdup(src->host) : NULL;
    dst->port = src->port;
}

void cfg__cluster_copy(struct cfg_cluster *dst, const struct cfg_cluster *src)
{
    cfg__cluster_fini(dst);
    *dst = *src; /* the scalars; every pointer is replaced below */
    copy_endpoint(&dst->raft, &src->raft);
    copy_endpoint(&dst->peer, &src->peer);
    dst->secret_file = src->secret_file != NULL ? sl_xstrdup(src->secret_file) : NULL;
    dst->secret = NULL;
    if (src->secret != NULL) {
        dst->secret = sl_xmalloc(src->secret_len);
        memcpy(dst->secret, src->secret, src->secret_len);
    }
    dst->nodes = NULL;
    if (src->node_count > 0) {
        dst->nodes = sl_xcalloc(src->node_count, sizeof(*dst->nodes));
        for (size_t i = 0; i < src->node_count; i++) {
            dst->nodes[i].id = src->nodes[i].id;
            for (int a = 0; a < NODE_ADDRS; a++) {
                copy_endpoint(node_addr(&dst->nodes[i], a), node_addr(&src->nodes[i], a));
            }
        }
    }
}

static bool nodes_eq(const struct cfg_cluster *a, const struct cfg_cluster *b)
{
    if (a->node_count != b->node_count) {
        return false;
    }
    for (size_t i = 0; i < a->node_count; i++) {
        if (a->nodes[i].id != b->nodes[i].id) {
            return false;
        }
        for (int k = 0; k < NODE_ADDRS; k++) {
            if (!endpoint_eq(node_addr(&a->nodes[i], k), node_addr(&b->nodes[i], k))) {
                return false;
            }
        }
    }
    return true;
}

static bool secret_eq(const struct cfg_cluster *a, const struct cfg_cluster *b)
{
    bool same_path = a->secret_file == NULL || b->secret_file == NULL
                         ? a->secret_file == b->secret_file
                         : strcmp(a->secret_file, b->secret_file) == 0;
    return same_path && a->secret_len == b->secret_len &&
           (a->secret_len == 0 || memcmp(a->secret, b->secret, a->secret_len) == 0);
}

int cfg__cluster_changed_keys(const struct cfg_cluster *a, const struct cfg_cluster *b, char *buf,
                              size_t cap)
{
    const char *changed[8];
    int n = 0;
    if (a->node_id != b->node_id) {
        changed[n++] = "node_id";
    }
    if (!endpoint_eq(&a->raft, &b->raft)) {
        changed[n++] = "raft";
    }
    if (!endpoint_eq(&a->peer, &b->peer)) {
        changed[n++] = "peer";
    }
    if (!secret_eq(a, b)) {
        changed[n++] = "secret_file";
    }
    if (a->replication != b->replication) {
        changed[n++] = "replication";
    }
    if (!nodes_eq(a, b)) {
        changed[n++] = "nodes";
    }
    if (a->memory_budget != b->memory_budget) {
        changed[n++] = "memory_budget";
    }
    if (a->snapshot_entries != b->snapshot_entries) {
        changed[n++] = "snapshot_entries";
    }
    size_t used = 0;
    if (cap > 0) {
        buf[0] = '\0';
    }
    for (int i = 0; i < n && used < cap; i++) {
        int w = snprintf(buf + used, cap - used, "%s%s", i > 0 ? ", " : "", changed[i]);
        used += w > 0 ? (size_t)w : 0;
    }
    return n;
}
