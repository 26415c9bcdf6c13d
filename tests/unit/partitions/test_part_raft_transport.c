/*
 * test_part_raft_transport.c -- the Raft port (part_raft_transport.c):
 * real libraft instances of two groups on three nodes sharing one port
 * each elect leaders and commit through it; a node without the secret, raw
 * garbage, a silent socket, an unknown group or node are refused and
 * counted; a pending connect is cancelled by close.
 *
 * Everything runs on one uv loop on the test thread, on 127.0.0.1. Waits
 * are bounded by a generous deadline that only fails the test.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <raft.h>
#include <raft/uv.h>

#include "part_raft_transport.h"
#include "part_test_util.h"

#define NODES 3
#define GROUPS 2
#define WAIT_MS 15000
#define ENTRY_BASE UINT64_C(0x5eed0000)

static const char *const group_names[GROUPS] = {"part-0003", "catalog"};
static const uint8_t cluster_id[PART__RAFT_CLUSTER_ID_LEN] = {0x51, 0x75, 1, 2,  3,  4,  5,  6,
                                                              7,    8,    9, 10, 11, 12, 13, 14};
static const char secret_good[] = "the cluster secret, 32 bytes or more of it";
static const char secret_bad[] = "another secret, also 32 bytes or more long";

/* ---- the loop ------------------------------------------------------------- */

static bool run_until(uv_loop_t *loop, bool (*pred)(void *arg), void *arg)
{
    return t_run_until(loop, pred, arg, WAIT_MS);
}

static struct part__raft_node *node_make(uv_loop_t *loop, uint16_t id, uint16_t port,
                                         const struct part__raft_peer *peers, size_t npeers,
                                         const char *secret, const uint8_t *cid,
                                         uint32_t handshake_ms)
{
    struct part__raft_node_options o = {.loop = loop,
                                        .id = id,
                                        .host = "127.0.0.1",
                                        .port = port,
                                        .peers = peers,
                                        .peer_count = npeers,
                                        .secret = (const unsigned char *)secret,
                                        .secret_len = strlen(secret),
                                        .handshake_ms = handshake_ms};
    memcpy(o.cluster_id, cid, PART__RAFT_CLUSTER_ID_LEN);
    struct part__raft_node *n = NULL;
    assert_int_equal(part__raft_node_new(&o, &n), SL_OK);
    return n;
}

static void on_node_closed(void *arg)
{
    *(bool *)arg = true;
}

static bool flag_set(void *arg)
{
    return *(bool *)arg;
}

static void node_close_wait(uv_loop_t *loop, struct part__raft_node *n)
{
    bool closed = false;
    part__raft_node_close(n, on_node_closed, &closed);
    assert_true(run_until(loop, flag_set, &closed));
}

static uint64_t rejected(struct part__raft_node *n, enum part__hs_reject r)
{
    struct part__raft_stats st;
    part__raft_node_stats(n, &st);
    return st.rejected[r];
}

/* ---- a cluster of libraft instances ------------------------------------- */

struct inst {
    struct raft raft;
    struct raft_io io;
    struct raft_uv_transport tr;
    struct raft_fsm fsm;
    uint64_t last; /* the last entry applied */
    unsigned applied;
    bool closed;
};

struct tnode {
    uint16_t id;
    uint16_t port;
    struct part__raft_node *net;
    struct inst inst[GROUPS];
};

struct cluster {
    uv_loop_t loop;
    char dir[64];
    struct part__raft_peer peers[NODES];
    struct tnode nodes[NODES];
    bool good[NODES]; /* holds the cluster's secret */
};

static int fsm_apply(struct raft_fsm *fsm, const struct raft_buffer *buf, void **result)
{
    struct inst *in = fsm->data;
    assert_int_equal(buf->len, 8);
    memcpy(&in->last, buf->base, 8);
    in->applied++;
    *result = NULL;
    return 0;
}

static int fsm_snapshot(struct raft_fsm *fsm, struct raft_buffer *bufs[], unsigned *n)
{
    struct inst *in = fsm->data;
    *bufs = raft_malloc(sizeof **bufs);
    (*bufs)[0].base = raft_malloc(8);
    (*bufs)[0].len = 8;
    memcpy((*bufs)[0].base, &in->last, 8);
    *n = 1;
    return 0;
}

static int fsm_restore(struct raft_fsm *fsm, struct raft_buffer *buf)
{
    struct inst *in = fsm->data;
    memcpy(&in->last, buf->base, 8);
    raft_free(buf->base);
    return 0;
}

/* Starts every group on every node; good[i]: node i holds the cluster's
 * secret (the others another one). The caller stops it with cluster_stop. */
static struct cluster *cluster_start(const bool good[NODES])
{
    uint16_t ports[NODES];
    struct cluster *c = calloc(1, sizeof *c);
    assert_non_null(c);
    snprintf(c->dir, sizeof c->dir, "/tmp/sluice-raftnet-XXXXXX");
    assert_non_null(mkdtemp(c->dir));
    assert_int_equal(uv_loop_init(&c->loop), 0);
    t_reserve_ports(ports, NODES);
    for (size_t i = 0; i < NODES; i++) {
        c->peers[i] = (struct part__raft_peer){(uint16_t)(i + 1), "127.0.0.1", ports[i]};
        c->good[i] = good[i];
    }
    struct raft_configuration conf;
    raft_configuration_init(&conf);
    char addr[NODES][32];
    for (size_t i = 0; i < NODES; i++) {
        snprintf(addr[i], sizeof addr[i], "127.0.0.1:%u", (unsigned)ports[i]);
        assert_int_equal(raft_configuration_add(&conf, i + 1, addr[i], RAFT_VOTER), 0);
    }
    for (size_t i = 0; i < NODES; i++) {
        struct tnode *tn = &c->nodes[i];
        tn->id = (uint16_t)(i + 1);
        tn->port = ports[i];
        tn->net = node_make(&c->loop, tn->id, ports[i], c->peers, NODES,
                            good[i] ? secret_good : secret_bad, cluster_id, 0);
        assert_int_equal(part__raft_node_port(tn->net), ports[i]);
        for (size_t g = 0; g < GROUPS; g++) {
            struct inst *in = &tn->inst[g];
            char dir[128];
            snprintf(dir, sizeof dir, "%s/n%zu-%s", c->dir, i + 1, group_names[g]);
            assert_int_equal(mkdir(dir, 0700), 0);
            assert_int_equal(part__raft_transport_init(tn->net, group_names[g], &in->tr), SL_OK);
            assert_int_equal(raft_uv_init(&in->io, &c->loop, dir, &in->tr), 0);
            raft_uv_set_connect_retry_delay(&in->io, 100);
            raft_uv_set_segment_size(&in->io, (size_t)256 * 1024);
            in->fsm = (struct raft_fsm){.version = 1,
                                        .data = in,
                                        .apply = fsm_apply,
                                        .snapshot = fsm_snapshot,
                                        .restore = fsm_restore};
            assert_int_equal(raft_init(&in->raft, &in->io, &in->fsm, tn->id, addr[i]), 0);
            raft_set_election_timeout(&in->raft, 500);
            raft_set_heartbeat_timeout(&in->raft, 50);
            assert_int_equal(raft_bootstrap(&in->raft, &conf), 0);
            assert_int_equal(raft_start(&in->raft), 0);
        }
    }
    raft_configuration_close(&conf);
    return c;
}

static void on_raft_closed(struct raft *r)
{
    struct inst *in = (struct inst *)((char *)r - offsetof(struct inst, raft));
    in->closed = true;
}

static bool all_closed(void *arg)
{
    struct cluster *c = arg;
    for (size_t i = 0; i < NODES; i++) {
        for (size_t g = 0; g < GROUPS; g++) {
            if (!c->nodes[i].inst[g].closed) {
                return false;
            }
        }
    }
    return true;
}

static void cluster_stop(struct cluster *c)
{
    for (size_t i = 0; i < NODES; i++) {
        for (size_t g = 0; g < GROUPS; g++) {
            raft_close(&c->nodes[i].inst[g].raft, on_raft_closed);
        }
    }
    assert_true(run_until(&c->loop, all_closed, c));
    for (size_t i = 0; i < NODES; i++) {
        for (size_t g = 0; g < GROUPS; g++) {
            raft_uv_close(&c->nodes[i].inst[g].io);
            part__raft_transport_fini(&c->nodes[i].inst[g].tr);
        }
        node_close_wait(&c->loop, c->nodes[i].net);
    }
    uv_run(&c->loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&c->loop), 0);
    t_rmrf(c->dir);
    free(c);
}

/* The node of group g that leads it, among the ones holding the secret. */
static struct inst *leader_of(struct cluster *c, size_t g)
{
    for (size_t i = 0; i < NODES; i++) {
        if (c->good[i] && raft_state(&c->nodes[i].inst[g].raft) == RAFT_LEADER) {
            return &c->nodes[i].inst[g];
        }
    }
    return NULL;
}

static bool have_leaders(void *arg)
{
    struct cluster *c = arg;
    for (size_t g = 0; g < GROUPS; g++) {
        if (leader_of(c, g) == NULL) {
            return false;
        }
    }
    return true;
}

struct applying {
    struct raft_apply req;
    bool done;
    int status;
};

static void on_applied(struct raft_apply *req, int status, void *result)
{
    struct applying *a = req->data;
    (void)result;
    a->done = true;
    a->status = status;
}

static bool applied_or_failed(void *arg)
{
    return ((struct applying *)arg)->done;
}

/* Commits value in group g through its leader, again under a new leader if
 * leadership moved meanwhile (a loaded machine can miss a heartbeat). */
static void commit(struct cluster *c, size_t g, uint64_t value)
{
    for (int attempt = 0; attempt < 5; attempt++) {
        assert_true(run_until(&c->loop, have_leaders, c));
        struct applying a = {.req.data = NULL};
        a.req.data = &a;
        struct raft_buffer buf = {.base = raft_malloc(8), .len = 8};
        memcpy(buf.base, &value, 8);
        if (raft_apply(&leader_of(c, g)->raft, &a.req, &buf, 1, on_applied) != 0) {
            raft_free(buf.base);
            continue;
        }
        assert_true(run_until(&c->loop, applied_or_failed, &a));
        if (a.status == 0) {
            return;
        }
    }
    fail_msg("group %zu never committed", g);
}

struct everyone {
    struct cluster *c;
    uint64_t value[GROUPS];
};

/* Every node holding the secret applied each group's value. */
static bool everyone_applied(void *arg)
{
    struct everyone *e = arg;
    for (size_t i = 0; i < NODES; i++) {
        for (size_t g = 0; g < GROUPS; g++) {
            if (e->c->good[i] && e->c->nodes[i].inst[g].last != e->value[g]) {
                return false;
            }
        }
    }
    return true;
}

static void commit_in_every_group(struct cluster *c)
{
    struct everyone e = {.c = c};
    assert_true(run_until(&c->loop, have_leaders, c));
    for (size_t g = 0; g < GROUPS; g++) {
        e.value[g] = ENTRY_BASE + g;
        commit(c, g, e.value[g]);
    }
    assert_true(run_until(&c->loop, everyone_applied, &e));
}

/* (1) Three nodes, two groups on each node's one port: leaders, commits. */
static void test_groups_commit(void **state)
{
    (void)state;
    static const bool good[NODES] = {true, true, true};
    struct cluster *c = cluster_start(good);
    commit_in_every_group(c);
    for (size_t i = 0; i < NODES; i++) {
        struct part__raft_stats st;
        part__raft_node_stats(c->nodes[i].net, &st);
        assert_true(st.accepted > 0);
        assert_true(st.connected > 0);
        for (size_t r = 0; r < PART__HS_REJECT_COUNT; r++) {
            assert_int_equal(st.rejected[r], 0);
        }
    }
    cluster_stop(c);
}

static bool bad_macs_seen(void *arg)
{
    struct cluster *c = arg;
    return rejected(c->nodes[2].net, PART__HS_REJECT_BAD_MAC) > 0 &&
           rejected(c->nodes[0].net, PART__HS_REJECT_BAD_MAC) +
                   rejected(c->nodes[1].net, PART__HS_REJECT_BAD_MAC) >
               0;
}

/* (2) Node 3 has another secret: nothing it dials or is dialed by gets
 * past the MAC, and nodes 1 and 2 still commit without it. */
static void test_wrong_secret(void **state)
{
    (void)state;
    static const bool good[NODES] = {true, true, false};
    struct cluster *c = cluster_start(good);
    commit_in_every_group(c);
    assert_true(run_until(&c->loop, bad_macs_seen, c));
    struct part__raft_stats st;
    part__raft_node_stats(c->nodes[2].net, &st);
    assert_int_equal(st.accepted, 0);
    assert_int_equal(st.connected, 0);
    for (size_t g = 0; g < GROUPS; g++) {
        assert_int_equal(c->nodes[2].inst[g].applied, 0);
    }
    cluster_stop(c);
}

/* ---- raw sockets and direct use of the transport ------------------------ */

/* The listener closed fd: a read ends (EOF or reset) rather than timing
 * out. */
static void assert_closed_by_peer(int fd)
{
    char b[64];
    ssize_t n = recv(fd, b, sizeof b, 0);
    assert_true(n == 0 || (n < 0 && errno == ECONNRESET));
    close(fd);
}

struct count_wait {
    struct part__raft_node *n;
    enum part__hs_reject r;
    uint64_t want;
};

static bool count_reached(void *arg)
{
    struct count_wait *w = arg;
    return rejected(w->n, w->r) >= w->want;
}

static void wait_rejected(uv_loop_t *loop, struct part__raft_node *n, enum part__hs_reject r,
                          uint64_t want)
{
    struct count_wait w = {n, r, want};
    assert_true(run_until(loop, count_reached, &w));
}

/* What an accepted stream received, for the direct tests. */
struct sink {
    uv_stream_t *stream;
    raft_id id;
    char address[64];
    char got[64];
    size_t n;
};

static struct sink sink;

static void sink_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    (void)h;
    (void)suggested;
    buf->base = sink.got + sink.n;
    buf->len = sizeof sink.got - sink.n;
}

static void sink_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    (void)s;
    (void)buf;
    if (nread > 0) {
        sink.n += (size_t)nread;
    }
}

static void on_accept(struct raft_uv_transport *t, raft_id id, const char *address,
                      struct uv_stream_s *stream)
{
    (void)t;
    sink.stream = stream;
    sink.id = id;
    snprintf(sink.address, sizeof sink.address, "%s", address);
    assert_int_equal(uv_read_start(stream, sink_alloc, sink_read), 0);
}

/* A node listening for group "catalog", as libraft would set it up. */
static void listen_group(struct part__raft_node *n, uint16_t id, struct raft_uv_transport *t)
{
    assert_int_equal(part__raft_transport_init(n, "catalog", t), SL_OK);
    assert_int_equal(t->init(t, id, "unused"), 0);
    assert_int_equal(t->listen(t, on_accept), 0);
}

static void on_tr_closed(struct raft_uv_transport *t)
{
    *(int *)t->data += 1;
}

static bool count_set(void *arg)
{
    return *(int *)arg > 0;
}

/* Closes t as libraft does and releases it. */
static void transport_close(uv_loop_t *loop, struct raft_uv_transport *t)
{
    int closed = 0;
    t->data = &closed;
    t->close(t, on_tr_closed);
    assert_int_equal(closed, 0); /* never from inside close */
    assert_true(run_until(loop, count_set, &closed));
    assert_int_equal(closed, 1);
    part__raft_transport_fini(t);
}

static void put_magic(uint8_t *p)
{
    for (int i = 0; i < 4; i++) {
        p[i] = (uint8_t)(PART__RAFT_MAGIC >> (24 - 8 * i));
    }
}

/* Closes node n and its transport t. */
static void node_stop(uv_loop_t *loop, struct part__raft_node *n, struct raft_uv_transport *t)
{
    transport_close(loop, t);
    node_close_wait(loop, n);
}

/* Closes t and n, then the loop, which nothing may still hold. */
static void node_finish(uv_loop_t *loop, struct part__raft_node *n, struct raft_uv_transport *t)
{
    node_stop(loop, n, t);
    uv_run(loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(loop), 0);
}

/* (3) Garbage, an old or new version, a hang-up and silence are refused and
 * counted; a flood past the handshake limit is cut short. */
static void test_garbage_and_silence(void **state)
{
    (void)state;
    uv_loop_t loop;
    uint16_t port;
    struct raft_uv_transport t = {0};
    uv_loop_init(&loop);
    t_reserve_ports(&port, 1);
    struct part__raft_peer peers[] = {{1, "127.0.0.1", port}, {2, "127.0.0.1", 1}};
    struct part__raft_node *n = node_make(&loop, 1, port, peers, 2, secret_good, cluster_id, 300);
    listen_group(n, 1, &t);

    char http[PART__RAFT_HELLO_LEN + 16];
    memset(http, 'x', sizeof http);
    static const char get[] = "GET / HTTP/1.1\r\n";
    memcpy(http, get, sizeof get);
    int fd = t_raw_connect(port);
    assert_int_equal(send(fd, http, sizeof http, 0), (ssize_t)sizeof http);
    wait_rejected(&loop, n, PART__HS_REJECT_BAD_MAGIC, 1);
    assert_closed_by_peer(fd);

    uint8_t v9[PART__RAFT_HELLO_LEN] = {0};
    put_magic(v9);
    v9[4] = 9;
    fd = t_raw_connect(port);
    assert_int_equal(send(fd, v9, sizeof v9, 0), (ssize_t)sizeof v9);
    wait_rejected(&loop, n, PART__HS_REJECT_BAD_VERSION, 1);
    assert_closed_by_peer(fd);

    fd = t_raw_connect(port); /* silent */
    int fd2 = t_raw_connect(port);
    assert_int_equal(send(fd2, v9, 10, 0), 10); /* a hello that never ends */
    wait_rejected(&loop, n, PART__HS_REJECT_DEADLINE, 2);
    assert_closed_by_peer(fd);
    assert_closed_by_peer(fd2);

    close(t_raw_connect(port));
    wait_rejected(&loop, n, PART__HS_REJECT_CLOSED, 1);

    /* A dialer that cannot check the listener's MAC and answers with a
     * guess: the listener's own check refuses it. */
    uint8_t hello[PART__RAFT_HELLO_LEN] = {0};
    uint8_t *p = hello;
    put_magic(p);
    p[4] = PART__RAFT_VERSION;
    memcpy(p + 5, cluster_id, PART__RAFT_CLUSTER_ID_LEN);
    p += 5 + PART__RAFT_CLUSTER_ID_LEN;
    p[1] = 2; /* node 2, big-endian */
    p[2] = (uint8_t)strlen("catalog");
    memcpy(p + 3, "catalog", sizeof "catalog"); /* its NUL is padding */
    fd = t_raw_connect(port);
    assert_int_equal(send(fd, hello, sizeof hello, 0), (ssize_t)sizeof hello);
    uint8_t challenge[48], guess[32] = {0};
    size_t got = 0;
    while (got < sizeof challenge) {
        uv_run(&loop, UV_RUN_NOWAIT);
        ssize_t r = recv(fd, challenge + got, sizeof challenge - got, MSG_DONTWAIT);
        assert_true(r > 0 || (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)));
        got += r > 0 ? (size_t)r : 0;
    }
    assert_int_equal(send(fd, guess, sizeof guess, 0), (ssize_t)sizeof guess);
    wait_rejected(&loop, n, PART__HS_REJECT_BAD_MAC, 1);
    assert_closed_by_peer(fd);

    int flood[PART__RAFT_MAX_INCOMING + 4];
    for (size_t i = 0; i < SL_ARRAY_LEN(flood); i++) {
        flood[i] = t_raw_connect(port);
    }
    wait_rejected(&loop, n, PART__HS_REJECT_OVERLOAD, 1);
    wait_rejected(&loop, n, PART__HS_REJECT_DEADLINE, 2 + PART__RAFT_MAX_INCOMING);
    for (size_t i = 0; i < SL_ARRAY_LEN(flood); i++) {
        close(flood[i]);
    }
    assert_int_equal(rejected(n, PART__HS_REJECT_BAD_MAGIC), 1);
    node_finish(&loop, n, &t);
}

struct dial {
    struct raft_uv_connect req;
    bool done;
    int status;
    uv_stream_t *stream;
};

static void on_dialed(struct raft_uv_connect *req, struct uv_stream_s *stream, int status)
{
    struct dial *d = req->data;
    d->done = true;
    d->status = status;
    d->stream = stream;
}

static bool dial_done(void *arg)
{
    return ((struct dial *)arg)->done;
}

/* Dials node `to` for group over t and waits for the outcome. */
static struct dial dial_wait(uv_loop_t *loop, struct raft_uv_transport *t, raft_id to)
{
    struct dial d = {0};
    d.req.data = &d;
    assert_int_equal(t->connect(t, &d.req, to, "ignored", on_dialed), 0);
    assert_true(run_until(loop, dial_done, &d));
    d.req.data = NULL;
    return d;
}

/* A dialer node (port 0: nobody dials it) with a transport for group. */
static struct part__raft_node *dialer(uv_loop_t *loop, uint16_t id, uint16_t to, uint16_t port,
                                      const uint8_t *cid, const char *group,
                                      struct raft_uv_transport *t, const char *secret)
{
    struct part__raft_peer peers[] = {{id, "127.0.0.1", 0}, {to, "127.0.0.1", port}};
    struct part__raft_node *n = node_make(loop, id, 0, peers, 2, secret, cid, 0);
    assert_int_equal(part__raft_transport_init(n, group, t), SL_OK);
    assert_int_equal(t->init(t, id, "unused"), 0);
    return n;
}

/* Dials with the given identity and expects the listener to refuse it. */
static void expect_refused(uv_loop_t *loop, struct part__raft_node *listener, uint16_t id,
                           uint16_t to, uint16_t port, const uint8_t *cid, const char *group,
                           enum part__hs_reject why)
{
    struct raft_uv_transport t = {0};
    struct part__raft_node *n = dialer(loop, id, to, port, cid, group, &t, secret_good);
    uint64_t before = rejected(listener, why);
    struct dial d = dial_wait(loop, &t, to);
    assert_int_equal(d.status, RAFT_NOCONNECTION);
    assert_null(d.stream);
    assert_int_equal(rejected(listener, why), before + 1);
    node_stop(loop, n, &t);
}

static void on_stream_closed(uv_handle_t *h)
{
    raft_free(h);
}

static bool sink_has(void *arg)
{
    return sink.n >= strlen(arg);
}

/* (4) A good dialer gets a stream whose bytes all reach the group's accept
 * callback; an unknown group, an unknown node, this node's own id and
 * another cluster are refused and counted. */
static void test_direct(void **state)
{
    (void)state;
    uv_loop_t loop;
    uint16_t ports[2];
    struct raft_uv_transport t = {0};
    uv_loop_init(&loop);
    t_reserve_ports(ports, 2);
    struct part__raft_peer peers[] = {{1, "127.0.0.1", ports[0]}, {2, "127.0.0.1", ports[1]}};
    struct part__raft_node *n = node_make(&loop, 1, ports[0], peers, 2, secret_good, cluster_id, 0);
    listen_group(n, 1, &t);
    memset(&sink, 0, sizeof sink);

    /* Node 2 in the listener's configuration, at ports[1]. */
    struct raft_uv_transport dt = {0};
    struct part__raft_peer dpeers[] = {{2, "127.0.0.1", ports[1]}, {1, "127.0.0.1", ports[0]}};
    struct part__raft_node *dn =
        node_make(&loop, 2, ports[1], dpeers, 2, secret_good, cluster_id, 0);
    assert_int_equal(part__raft_transport_init(dn, "catalog", &dt), SL_OK);
    assert_int_equal(part__raft_transport_init(dn, "catalog", &dt), SL_EEXIST);
    assert_int_equal(dt.init(&dt, 2, "unused"), 0);
    assert_int_equal(dt.connect(&dt, &(struct raft_uv_connect){0}, 2, "self", on_dialed),
                     RAFT_NOCONNECTION);
    struct dial d = dial_wait(&loop, &dt, 1);
    assert_int_equal(d.status, 0);
    assert_non_null(d.stream);
    static const char raft_bytes[] = "first raft bytes";
    uv_buf_t b = uv_buf_init((char *)raft_bytes, sizeof raft_bytes - 1);
    assert_int_equal(uv_try_write(d.stream, &b, 1), (int)b.len);
    assert_true(run_until(&loop, sink_has, (void *)raft_bytes));
    assert_int_equal(sink.id, 2);
    char want_addr[32];
    snprintf(want_addr, sizeof want_addr, "127.0.0.1:%u", (unsigned)ports[1]);
    assert_string_equal(sink.address, want_addr);
    assert_int_equal(sink.n, strlen(raft_bytes));
    assert_memory_equal(sink.got, raft_bytes, sink.n);
    uv_close((uv_handle_t *)d.stream, on_stream_closed);
    uv_close((uv_handle_t *)sink.stream, on_stream_closed);
    node_stop(&loop, dn, &dt);

    static const uint8_t other_cid[PART__RAFT_CLUSTER_ID_LEN] = {0x51, 0x75, 1, 2,  3,  4,  5,  6,
                                                                 7,    8,    9, 10, 11, 12, 13, 15};
    expect_refused(&loop, n, 2, 1, ports[0], cluster_id, "part-0009",
                   PART__HS_REJECT_UNKNOWN_GROUP);
    expect_refused(&loop, n, 9, 1, ports[0], cluster_id, "catalog", PART__HS_REJECT_UNKNOWN_NODE);
    expect_refused(&loop, n, 1, 7, ports[0], cluster_id, "catalog", PART__HS_REJECT_SELF_ID);
    expect_refused(&loop, n, 2, 1, ports[0], other_cid, "catalog", PART__HS_REJECT_OTHER_CLUSTER);

    /* A dialer without the secret refuses the listener's MAC itself, so
     * the listener sees it hang up and never gets a MAC to refuse. */
    struct raft_uv_transport bt = {0};
    struct part__raft_node *bn =
        dialer(&loop, 2, 1, ports[0], cluster_id, "catalog", &bt, secret_bad);
    d = dial_wait(&loop, &bt, 1);
    assert_int_equal(d.status, RAFT_NOCONNECTION);
    assert_int_equal(rejected(bn, PART__HS_REJECT_BAD_MAC), 1);
    wait_rejected(&loop, n, PART__HS_REJECT_CLOSED, 1);
    node_stop(&loop, bn, &bt);

    struct part__raft_stats st;
    part__raft_node_stats(n, &st);
    assert_int_equal(st.accepted, 1);
    assert_int_equal(st.rejected[PART__HS_REJECT_BAD_MAC], 0);
    node_finish(&loop, n, &t);
}

struct order {
    struct dial d;
    int closed;
    bool dial_first;
};

static void on_order_closed(struct raft_uv_transport *t)
{
    struct order *o = t->data;
    o->closed++;
    o->dial_first = o->d.done;
}

static bool order_closed(void *arg)
{
    return ((struct order *)arg)->closed > 0;
}

/* (5) A connect pending at close (a peer that accepts and never answers)
 * completes with RAFT_CANCELED, before the close callback. */
static void test_close_cancels(void **state)
{
    (void)state;
    uv_loop_t loop;
    struct raft_uv_transport t = {0};
    uv_loop_init(&loop);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof sa;
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    assert_int_equal(bind(lfd, (struct sockaddr *)&sa, sizeof sa), 0);
    assert_int_equal(listen(lfd, 4), 0);
    assert_int_equal(getsockname(lfd, (struct sockaddr *)&sa, &len), 0);
    struct part__raft_node *n =
        dialer(&loop, 2, 1, ntohs(sa.sin_port), cluster_id, "catalog", &t, secret_good);

    struct order o = {0};
    o.d.req.data = &o.d;
    t.data = &o;
    assert_int_equal(t.connect(&t, &o.d.req, 1, "ignored", on_dialed), 0);
    uv_run(&loop, UV_RUN_NOWAIT);
    t.close(&t, on_order_closed);
    assert_int_equal(o.closed, 0);
    assert_true(run_until(&loop, order_closed, &o));
    assert_true(o.dial_first);
    assert_int_equal(o.d.status, RAFT_CANCELED);
    assert_null(o.d.stream);
    part__raft_transport_fini(&t);
    node_close_wait(&loop, n);
    close(lfd);
    assert_int_equal(uv_loop_close(&loop), 0);
}

int main(void)
{
    sl_log_set_level(SL_LOG_ERROR);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_groups_commit),       cmocka_unit_test(test_wrong_secret),
        cmocka_unit_test(test_garbage_and_silence), cmocka_unit_test(test_direct),
        cmocka_unit_test(test_close_cancels),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
