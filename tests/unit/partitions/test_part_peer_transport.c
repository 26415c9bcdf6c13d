/*
 * test_part_peer_transport.c -- the peer port (part_peer_transport.c):
 * three nodes in one process, each on a thread of its own, exchange
 * frames both ways (a large one included) sent from threads that are not
 * theirs and answered on the link they came on; a node with another secret
 * is refused and counted; garbage, a Raft hello, a peer hello on the Raft
 * port and an oversize frame are refused and counted; a peer closed
 * mid-stream brings its links down and its sends fail until it is back on
 * the same port, when it is reconnected to; a peer whose loop stops is
 * noticed by the keepalive.
 *
 * Everything is on 127.0.0.1. Waits are bounded by a generous deadline
 * that only fails the test.
 */
#include <errno.h>
#include <pthread.h>
#include <time.h>

#include "part_peer_transport.h"
#include "part_raft_transport.h"
#include "part_test_util.h"

#include <raft.h>
#include <raft/uv.h>

#define NODES 3
#define WAIT_MS 20000
#define REC_MAX 65536
#define DOWN_MAX 64
#define BIG_LEN ((size_t)8 << 20)
/* The keepalive test's timing: margins wide enough for a loaded machine
 * under ThreadSanitizer. */
#define KEEPALIVE_MS 100
#define IDLE_MS 1000
#define SLEEP_MS 2500

static const uint8_t cluster_id[PART__HS_CLUSTER_ID_LEN] = {0x51, 0x75, 1, 2,  3,  4,  5,  6,
                                                            7,    8,    9, 10, 11, 12, 13, 14};
static const char secret_good[] = "the cluster secret, 32 bytes or more of it";
static const char secret_bad[] = "another secret, also 32 bytes or more long";

/* ---- a node and what it heard ------------------------------------------- */

struct rec {
    uint16_t from;
    uint64_t link;
    size_t len;
    uint64_t fnv;
    char head[40]; /* the frame's first bytes, NUL-terminated */
};

struct down {
    uint16_t id;
    uint64_t link;
    bool outgoing;
};

struct tnode {
    uint16_t id;
    uint16_t port;
    struct part__peer_node *n;
    pthread_mutex_t mu; /* what the node's thread records for the test's */
    struct rec rec[REC_MAX];
    size_t nrec;
    struct down down[DOWN_MAX];
    size_t ndown;
    size_t reply_errors; /* answers that could not be queued */
};

/* Copies s without its NUL: the frames are not strings. */
static void put_text(void *dst, const char *s)
{
    uint8_t *d = dst;
    for (size_t i = 0; s[i] != '\0'; i++) {
        d[i] = (uint8_t)s[i];
    }
}

static void short_sleep(long ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Records every frame; answers "req:X" with "rep:X" on the frame's link,
 * and "sleep" by stopping its loop for SLEEP_MS. */
static void on_frame(void *arg, uint16_t from, uint64_t link, const uint8_t *bytes, size_t len)
{
    struct tnode *t = arg;
    struct rec r = {.from = from, .link = link, .len = len, .fnv = t_fnv(bytes, len)};
    memcpy(r.head, bytes, SL_MIN(len, sizeof r.head - 1));
    /* No cmocka assertion here: this may be a node's thread. */
    pthread_mutex_lock(&t->mu);
    if (t->nrec < REC_MAX) {
        t->rec[t->nrec++] = r;
    }
    pthread_mutex_unlock(&t->mu);
    if (len >= 4 && memcmp(bytes, "req:", 4) == 0) {
        uint8_t *rep = malloc(len);
        int rc = SL_ENOMEM;
        if (rep != NULL) {
            put_text(rep, "rep:");
            memcpy(rep + 4, bytes + 4, len - 4);
            rc = part__peer_reply(t->n, link, rep, len);
            free(rep);
        }
        if (rc != SL_OK) {
            pthread_mutex_lock(&t->mu);
            t->reply_errors++;
            pthread_mutex_unlock(&t->mu);
        }
    } else if (len == 5 && memcmp(bytes, "sleep", 5) == 0) {
        short_sleep(SLEEP_MS);
    }
}

static void on_link_down(void *arg, uint16_t node_id, uint64_t link, bool outgoing)
{
    struct tnode *t = arg;
    pthread_mutex_lock(&t->mu);
    if (t->ndown < DOWN_MAX) {
        t->down[t->ndown++] = (struct down){node_id, link, outgoing};
    }
    pthread_mutex_unlock(&t->mu);
}

struct opts {
    uv_loop_t *loop; /* NULL: a thread of the node's own */
    const char *secret;
    size_t max_frame;
    uint32_t keepalive_ms, idle_ms;
};

static void node_start(struct tnode *t, const struct part__peer_member *members, size_t count,
                       const struct opts *o)
{
    struct part__peer_node_options po = {.loop = o->loop,
                                         .id = t->id,
                                         .host = "127.0.0.1",
                                         .port = t->port,
                                         .members = members,
                                         .member_count = count,
                                         .secret = (const unsigned char *)o->secret,
                                         .secret_len = strlen(o->secret),
                                         .max_frame = o->max_frame,
                                         .keepalive_ms = o->keepalive_ms,
                                         .idle_ms = o->idle_ms,
                                         .on_frame = on_frame,
                                         .on_link_down = on_link_down,
                                         .arg = t};
    memcpy(po.cluster_id, cluster_id, sizeof po.cluster_id);
    assert_int_equal(part__peer_node_new(&po, &t->n), SL_OK);
    assert_int_equal(part__peer_node_port(t->n), t->port);
}

struct cluster {
    struct part__peer_member members[NODES];
    struct tnode node[NODES];
};

/* NODES nodes on threads of their own; node i holds secrets[i]. */
static struct cluster *cluster_start(const char *const secrets[NODES], uint32_t keepalive_ms,
                                     uint32_t idle_ms)
{
    uint16_t ports[NODES];
    struct cluster *c = calloc(1, sizeof *c);
    assert_non_null(c);
    t_reserve_ports(ports, NODES);
    for (size_t i = 0; i < NODES; i++) {
        c->members[i] = (struct part__peer_member){(uint16_t)(i + 1), "127.0.0.1", ports[i]};
    }
    for (size_t i = 0; i < NODES; i++) {
        struct tnode *t = &c->node[i];
        t->id = (uint16_t)(i + 1);
        t->port = ports[i];
        pthread_mutex_init(&t->mu, NULL);
        struct opts o = {.secret = secrets[i], .keepalive_ms = keepalive_ms, .idle_ms = idle_ms};
        node_start(t, c->members, NODES, &o);
    }
    return c;
}

static void cluster_stop(struct cluster *c)
{
    for (size_t i = 0; i < NODES; i++) {
        if (c->node[i].n != NULL) {
            part__peer_node_close(c->node[i].n, NULL, NULL);
        }
        pthread_mutex_destroy(&c->node[i].mu);
    }
    free(c);
}

static void send_ok(struct tnode *t, uint16_t to, const char *s)
{
    assert_int_equal(part__peer_send(t->n, to, s, strlen(s)), SL_OK);
}

/* Waits (polling) until pred(arg) holds; false when WAIT_MS passed. */
static bool wait_until(bool (*pred)(void *arg), void *arg)
{
    uint64_t deadline = sl_mono_ns() + (uint64_t)WAIT_MS * 1000000u;
    while (!pred(arg)) {
        if (sl_mono_ns() > deadline) {
            return false;
        }
        short_sleep(5);
    }
    return true;
}

struct want {
    struct tnode *t;
    const char *prefix;
    uint16_t from;
    size_t n;
};

/* How many frames t got from `from` that start with prefix. */
static size_t count_got(struct tnode *t, uint16_t from, const char *prefix)
{
    size_t k = 0;
    pthread_mutex_lock(&t->mu);
    for (size_t i = 0; i < t->nrec; i++) {
        if (t->rec[i].from == from && strncmp(t->rec[i].head, prefix, strlen(prefix)) == 0) {
            k++;
        }
    }
    pthread_mutex_unlock(&t->mu);
    return k;
}

static bool got_enough(void *arg)
{
    struct want *w = arg;
    return count_got(w->t, w->from, w->prefix) >= w->n;
}

static void wait_got(struct tnode *t, uint16_t from, const char *prefix, size_t n)
{
    struct want w = {t, prefix, from, n};
    assert_true(wait_until(got_enough, &w));
}

struct want_down {
    struct tnode *t;
    uint16_t id;
    bool outgoing;
};

static bool down_seen(void *arg)
{
    struct want_down *w = arg;
    bool seen = false;
    pthread_mutex_lock(&w->t->mu);
    for (size_t i = 0; i < w->t->ndown; i++) {
        seen |= w->t->down[i].id == w->id && w->t->down[i].outgoing == w->outgoing;
    }
    pthread_mutex_unlock(&w->t->mu);
    return seen;
}

static void wait_down(struct tnode *t, uint16_t id, bool outgoing)
{
    struct want_down w = {t, id, outgoing};
    assert_true(wait_until(down_seen, &w));
}

/* t's count of links down and of failed answers, read under its lock:
 * its node's thread may be adding to them. */
static size_t downs_of(struct tnode *t)
{
    pthread_mutex_lock(&t->mu);
    size_t k = t->ndown;
    pthread_mutex_unlock(&t->mu);
    return k;
}

static size_t reply_errors_of(struct tnode *t)
{
    pthread_mutex_lock(&t->mu);
    size_t k = t->reply_errors;
    pthread_mutex_unlock(&t->mu);
    return k;
}

static struct part__peer_stats stats_of(struct tnode *t)
{
    struct part__peer_stats st;
    part__peer_node_stats(t->n, &st);
    return st;
}

/* ---- (1) frames both ways ------------------------------------------------- */

#define PER_PAIR 20
#define FROM_THREAD 200

static void *send_from_thread(void *arg)
{
    struct tnode *t = arg;
    for (int k = 0; k < FROM_THREAD; k++) {
        char s[32];
        snprintf(s, sizeof s, "req:thread #%03d", k);
        send_ok(t, 3, s);
    }
    return NULL;
}

/* The frames t got from `from` starting with prefix came on one link, in
 * the order sent ("... #NNN"); returns that link. */
static uint64_t check_one_link_in_order(struct tnode *t, uint16_t from, const char *prefix)
{
    uint64_t link = 0;
    int last = -1;
    pthread_mutex_lock(&t->mu);
    for (size_t i = 0; i < t->nrec; i++) {
        const struct rec *r = &t->rec[i];
        if (r->from != from || strncmp(r->head, prefix, strlen(prefix)) != 0) {
            continue;
        }
        assert_true(link == 0 || r->link == link);
        link = r->link;
        const char *hash = strchr(r->head, '#');
        if (hash != NULL) {
            int k = atoi(hash + 1);
            assert_true(k > last);
            last = k;
        }
    }
    pthread_mutex_unlock(&t->mu);
    assert_true(link != 0);
    return link;
}

static void test_exchange(void **state)
{
    (void)state;
    static const char *const secrets[NODES] = {secret_good, secret_good, secret_good};
    struct cluster *c = cluster_start(secrets, 0, 0);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, send_from_thread, &c->node[1]), 0);
    for (int k = 0; k < PER_PAIR; k++) {
        for (size_t i = 0; i < NODES; i++) {
            for (uint16_t to = 1; to <= NODES; to++) {
                if (to != c->node[i].id) {
                    char s[32];
                    snprintf(s, sizeof s, "req:%u>%u #%03d", (unsigned)c->node[i].id, (unsigned)to,
                             k);
                    send_ok(&c->node[i], to, s);
                }
            }
        }
    }
    /* A large frame each way between 1 and 2: node 2 echoes it whole. */
    uint8_t *big = malloc(BIG_LEN);
    assert_non_null(big);
    for (size_t i = 0; i < BIG_LEN; i++) {
        big[i] = (uint8_t)(i * 2654435761u >> 13);
    }
    put_text(big, "req:big");
    assert_int_equal(part__peer_send(c->node[0].n, 2, big, BIG_LEN), SL_OK);
    assert_int_equal(pthread_join(th, NULL), 0);

    for (size_t i = 0; i < NODES; i++) {
        for (uint16_t from = 1; from <= NODES; from++) {
            if (from != c->node[i].id) {
                wait_got(&c->node[i], from, "req:", PER_PAIR);
                wait_got(&c->node[i], from, "rep:", PER_PAIR);
            }
        }
    }
    wait_got(&c->node[2], 2, "req:thread", FROM_THREAD);
    wait_got(&c->node[1], 3, "rep:thread", FROM_THREAD);
    wait_got(&c->node[0], 2, "rep:big", 1);

    /* Requests come on the link the other node dialed, answers on this
     * node's own, each in order. */
    for (size_t i = 0; i < NODES; i++) {
        for (uint16_t from = 1; from <= NODES; from++) {
            if (from != c->node[i].id) {
                char req[16], rep[16];
                snprintf(req, sizeof req, "req:%u>%u", (unsigned)from, (unsigned)c->node[i].id);
                snprintf(rep, sizeof rep, "rep:%u>%u", (unsigned)c->node[i].id, (unsigned)from);
                uint64_t in = check_one_link_in_order(&c->node[i], from, req);
                uint64_t out = check_one_link_in_order(&c->node[i], from, rep);
                assert_true(in != out);
            }
        }
    }
    check_one_link_in_order(&c->node[2], 2, "req:thread");

    /* The echo of the large frame is the frame, but for its first bytes. */
    put_text(big, "rep:big");
    uint64_t want = t_fnv(big, BIG_LEN);
    bool found = false;
    pthread_mutex_lock(&c->node[0].mu);
    for (size_t i = 0; i < c->node[0].nrec; i++) {
        const struct rec *r = &c->node[0].rec[i];
        if (strncmp(r->head, "rep:big", 7) == 0) {
            found = r->len == BIG_LEN && r->fnv == want;
        }
    }
    pthread_mutex_unlock(&c->node[0].mu);
    assert_true(found);
    free(big);

    for (size_t i = 0; i < NODES; i++) {
        struct part__peer_stats st = stats_of(&c->node[i]);
        assert_int_equal(st.links_up, 2 * (NODES - 1));
        assert_int_equal(st.links_down, 0);
        assert_int_equal(st.frames_dropped, 0);
        assert_int_equal(st.oversize, 0);
        assert_true(st.frames_in >= (uint64_t)4 * PER_PAIR);
        assert_true(st.frames_out >= (uint64_t)4 * PER_PAIR);
        for (size_t r = 0; r < PART__HS_REJECT_COUNT; r++) {
            assert_int_equal(st.rejected[r], 0);
        }
    }
    assert_true(stats_of(&c->node[0]).bytes_out > BIG_LEN);
    assert_true(stats_of(&c->node[0]).bytes_in > BIG_LEN);
    for (size_t i = 0; i < NODES; i++) {
        assert_int_equal(downs_of(&c->node[i]), 0);
        assert_int_equal(reply_errors_of(&c->node[i]), 0);
    }
    cluster_stop(c);
}

/* ---- (2) another secret ----------------------------------------------------- */

static uint64_t rejected(struct tnode *t, enum part__hs_reject r)
{
    return stats_of(t).rejected[r];
}

static bool bad_node_refused(void *arg)
{
    struct cluster *c = arg;
    return rejected(&c->node[0], PART__HS_REJECT_BAD_MAC) > 0 &&
           rejected(&c->node[2], PART__HS_REJECT_CLOSED) > 0;
}

static bool bad_node_refused_back(void *arg)
{
    struct cluster *c = arg;
    return rejected(&c->node[2], PART__HS_REJECT_BAD_MAC) > 0 &&
           rejected(&c->node[0], PART__HS_REJECT_CLOSED) > 0;
}

/* Node 3 has another secret: a frame for it is lost and said so, sends to
 * it then fail at once, and each side counts the refusal it found; nodes 1
 * and 2 talk on. */
static void test_wrong_secret(void **state)
{
    (void)state;
    static const char *const secrets[NODES] = {secret_good, secret_good, secret_bad};
    struct cluster *c = cluster_start(secrets, 0, 0);
    send_ok(&c->node[0], 3, "req:to the stranger");
    wait_down(&c->node[0], 3, true);
    pthread_mutex_lock(&c->node[0].mu);
    uint64_t first_down = c->node[0].down[0].link;
    pthread_mutex_unlock(&c->node[0].mu);
    assert_int_equal(first_down, 0); /* a dial, no link */
    assert_true(wait_until(bad_node_refused, c));
    assert_int_equal(part__peer_send(c->node[0].n, 3, "x", 1), SL_EUNAVAIL);

    send_ok(&c->node[2], 1, "req:from the stranger");
    wait_down(&c->node[2], 1, true);
    assert_true(wait_until(bad_node_refused_back, c));

    send_ok(&c->node[0], 2, "req:friend");
    wait_got(&c->node[0], 2, "rep:friend", 1);
    assert_int_equal(count_got(&c->node[0], 3, ""), 0);
    assert_int_equal(count_got(&c->node[2], 1, ""), 0);
    assert_int_equal(stats_of(&c->node[2]).links_up, 0);
    assert_true(stats_of(&c->node[0]).dial_failures > 0);
    cluster_stop(c);
}

/* ---- (3) raw bytes on the port, on the test's own loop ------------------- */

static bool run_until(uv_loop_t *loop, bool (*pred)(void *arg), void *arg)
{
    return t_run_until(loop, pred, arg, WAIT_MS);
}

/* A well-formed hello of the given magic from node 2 asking for name. */
static void make_hello(uint8_t hello[PART__HS_HELLO_LEN], uint32_t magic, const char *name)
{
    memset(hello, 0, PART__HS_HELLO_LEN);
    for (int i = 0; i < 4; i++) {
        hello[i] = (uint8_t)(magic >> (24 - 8 * i));
    }
    hello[4] = 1;
    memcpy(hello + 5, cluster_id, PART__HS_CLUSTER_ID_LEN);
    uint8_t *p = hello + 5 + PART__HS_CLUSTER_ID_LEN;
    p[1] = 2; /* node 2, big-endian */
    p[2] = (uint8_t)strlen(name);
    put_text(p + 3, name);
}

struct raw_wait {
    uv_loop_t *loop;
    int fd;
    bool closed;
};

/* Runs the loop until the node closed fd (a read ends rather than waits). */
static bool raw_closed(void *arg)
{
    struct raw_wait *w = arg;
    char b[64];
    ssize_t n = recv(w->fd, b, sizeof b, MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
}

static void send_raw_expect_closed(uv_loop_t *loop, uint16_t port, const void *bytes, size_t len)
{
    int fd = t_raw_connect(port);
    assert_int_equal(send(fd, bytes, len, 0), (ssize_t)len);
    struct raw_wait w = {loop, fd, false};
    assert_true(run_until(loop, raw_closed, &w));
    close(fd);
}

struct loop_want {
    struct tnode *t;
    enum part__hs_reject r;
    uint64_t n;
};

static bool rejected_reached(void *arg)
{
    struct loop_want *w = arg;
    return rejected(w->t, w->r) >= w->n;
}

static bool oversize_seen(void *arg)
{
    struct loop_want *w = arg;
    return stats_of(w->t).oversize >= w->n;
}

struct raft_side {
    struct part__raft_node *n;
    struct raft_uv_transport t;
    bool closed;
};

static void on_raft_accept(struct raft_uv_transport *t, raft_id id, const char *address,
                           struct uv_stream_s *stream)
{
    (void)t;
    (void)id;
    (void)address;
    (void)stream;
    fail_msg("a peer hello reached a Raft group");
}

static void on_raft_tr_closed(struct raft_uv_transport *t)
{
    ((struct raft_side *)t->data)->closed = true;
}

static bool raft_tr_closed(void *arg)
{
    return ((struct raft_side *)arg)->closed;
}

static void on_closed(void *arg)
{
    *(bool *)arg = true;
}

static bool flag_set(void *arg)
{
    return *(bool *)arg;
}

static uint64_t raft_rejected(struct part__raft_node *n, enum part__hs_reject r)
{
    struct part__raft_stats st;
    part__raft_node_stats(n, &st);
    return st.rejected[r];
}

static void test_garbage_raft_hello_oversize(void **state)
{
    (void)state;
    uv_loop_t loop;
    uint16_t ports[3];
    assert_int_equal(uv_loop_init(&loop), 0);
    t_reserve_ports(ports, 3);
    struct part__peer_member members[] = {{1, "127.0.0.1", ports[0]}, {2, "127.0.0.1", ports[1]}};
    struct tnode *a = calloc(1, sizeof *a), *b = calloc(1, sizeof *b);
    if (a == NULL || b == NULL) {
        abort();
    }
    a->id = 1; /* the rest calloc's zeros: a tnode is too big for the stack */
    a->port = ports[0];
    b->id = 2;
    b->port = ports[1];
    pthread_mutex_init(&a->mu, NULL);
    pthread_mutex_init(&b->mu, NULL);
    node_start(a, members, 2,
               &(struct opts){.loop = &loop, .secret = secret_good, .max_frame = 1024});
    node_start(b, members, 2, &(struct opts){.loop = &loop, .secret = secret_good});

    /* What a caller may not send. */
    assert_int_equal(part__peer_send(a->n, 1, "x", 1), SL_EINVAL);
    assert_int_equal(part__peer_send(a->n, 9, "x", 1), SL_EINVAL);
    assert_int_equal(part__peer_send(a->n, 2, "x", 0), SL_EINVAL);
    static uint8_t kib2[2048];
    assert_int_equal(part__peer_send(a->n, 2, kib2, sizeof kib2), SL_ETOOBIG);
    assert_int_equal(part__peer_reply(a->n, 12345, "x", 1), SL_EUNAVAIL);

    /* An HTTP request, then a Raft hello, on the peer port. */
    char http[PART__HS_HELLO_LEN + 16];
    memset(http, 'x', sizeof http);
    put_text(http, "GET / HTTP/1.1\r\n");
    send_raw_expect_closed(&loop, ports[0], http, sizeof http);
    uint8_t hello[PART__HS_HELLO_LEN];
    make_hello(hello, PART__RAFT_MAGIC, "catalog");
    send_raw_expect_closed(&loop, ports[0], hello, sizeof hello);
    struct loop_want w = {a, PART__HS_REJECT_BAD_MAGIC, 2};
    assert_true(run_until(&loop, rejected_reached, &w));

    /* A peer hello on a Raft port, even one with a group named "peer". */
    struct raft_side rs = {0};
    struct part__raft_peer rpeers[] = {{1, "127.0.0.1", ports[2]}, {2, "127.0.0.1", 1}};
    struct part__raft_node_options ro = {.loop = &loop,
                                         .id = 1,
                                         .host = "127.0.0.1",
                                         .port = ports[2],
                                         .peers = rpeers,
                                         .peer_count = 2,
                                         .secret = (const unsigned char *)secret_good,
                                         .secret_len = strlen(secret_good)};
    memcpy(ro.cluster_id, cluster_id, sizeof ro.cluster_id);
    assert_int_equal(part__raft_node_new(&ro, &rs.n), SL_OK);
    assert_int_equal(part__raft_transport_init(rs.n, PART__PEER_NAME, &rs.t), SL_OK);
    assert_int_equal(rs.t.init(&rs.t, 1, "unused"), 0);
    assert_int_equal(rs.t.listen(&rs.t, on_raft_accept), 0);
    make_hello(hello, PART__PEER_MAGIC, PART__PEER_NAME);
    send_raw_expect_closed(&loop, ports[2], hello, sizeof hello);
    assert_int_equal(raft_rejected(rs.n, PART__HS_REJECT_BAD_MAGIC), 1);
    rs.t.data = &rs;
    rs.t.close(&rs.t, on_raft_tr_closed);
    assert_true(run_until(&loop, raft_tr_closed, &rs));
    part__raft_transport_fini(&rs.t);
    bool raft_closed = false;
    part__raft_node_close(rs.n, on_closed, &raft_closed);
    assert_true(run_until(&loop, flag_set, &raft_closed));

    /* b may send 2 KiB; a takes 1 KiB at most: the link closes, a counts
     * it, and b learns its request is lost. */
    assert_int_equal(part__peer_send(b->n, 1, "req:small", 9), SL_OK);
    struct want rep = {b, "rep:small", 1, 1};
    assert_true(run_until(&loop, got_enough, &rep));
    put_text(kib2, "req:");
    assert_int_equal(part__peer_send(b->n, 1, kib2, sizeof kib2), SL_OK);
    struct loop_want ow = {a, PART__HS_REJECT_COUNT, 1};
    assert_true(run_until(&loop, oversize_seen, &ow));
    struct want_down bw = {b, 1, true};
    assert_true(run_until(&loop, down_seen, &bw));
    assert_int_equal(stats_of(a).oversize, 1);
    assert_int_equal(count_got(a, 2, "req:"), 1);

    bool ca = false, cb = false;
    part__peer_node_close(a->n, on_closed, &ca);
    part__peer_node_close(b->n, on_closed, &cb);
    assert_true(run_until(&loop, flag_set, &ca));
    assert_true(run_until(&loop, flag_set, &cb));
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
    pthread_mutex_destroy(&a->mu);
    pthread_mutex_destroy(&b->mu);
    free(a);
    free(b);
}

/* ---- (4) a peer closed mid-stream, then back ------------------------------ */

struct streamer {
    struct tnode *t;
    _Atomic int sent;
    int last_rc;
};

/* Sends to node 3 until a send fails. */
static void *stream_to_3(void *arg)
{
    struct streamer *s = arg;
    for (int k = 0;; k++) {
        char buf[64];
        snprintf(buf, sizeof buf, "req:stream #%06d", k);
        int rc = part__peer_send(s->t->n, 3, buf, strlen(buf));
        if (rc == SL_EBUSY) {
            short_sleep(1);
            continue;
        }
        if (rc != SL_OK) {
            s->last_rc = rc;
            return NULL;
        }
        atomic_store(&s->sent, k + 1);
        if (k % 64 == 0) {
            short_sleep(1);
        }
    }
}

static bool send_again_ok(void *arg)
{
    struct tnode *t = arg;
    int rc = part__peer_send(t->n, 3, "req:again", 9);
    assert_true(rc == SL_OK || rc == SL_EUNAVAIL);
    return rc == SL_OK;
}

static void test_peer_closed_and_back(void **state)
{
    (void)state;
    static const char *const secrets[NODES] = {secret_good, secret_good, secret_good};
    struct cluster *c = cluster_start(secrets, 0, 0);
    struct streamer s = {.t = &c->node[0]};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, stream_to_3, &s), 0);
    wait_got(&c->node[2], 1, "req:stream", 200);
    part__peer_node_close(c->node[2].n, NULL, NULL);
    c->node[2].n = NULL;
    wait_down(&c->node[0], 3, true);
    assert_int_equal(pthread_join(th, NULL), 0);
    assert_int_equal(s.last_rc, SL_EUNAVAIL);
    assert_int_equal(part__peer_send(c->node[0].n, 3, "x", 1), SL_EUNAVAIL);
    assert_true(stats_of(&c->node[0]).links_down >= 1);

    /* Node 3 again, on its port: node 1 reconnects by itself. */
    struct tnode *t3 = &c->node[2];
    pthread_mutex_lock(&c->node[0].mu);
    c->node[0].nrec = 0;
    pthread_mutex_unlock(&c->node[0].mu);
    pthread_mutex_lock(&t3->mu);
    t3->nrec = 0;
    t3->ndown = 0;
    pthread_mutex_unlock(&t3->mu);
    node_start(t3, c->members, NODES, &(struct opts){.secret = secret_good});
    assert_true(wait_until(send_again_ok, &c->node[0]));
    wait_got(t3, 1, "req:again", 1);
    wait_got(&c->node[0], 3, "rep:again", 1);
    send_ok(t3, 2, "req:hello 2");
    wait_got(t3, 2, "rep:hello 2", 1);
    cluster_stop(c);
}

/* ---- (5) a peer that stops answering ---------------------------------------- */

static void test_keepalive(void **state)
{
    (void)state;
    static const char *const secrets[NODES] = {secret_good, secret_good, secret_good};
    struct cluster *c = cluster_start(secrets, KEEPALIVE_MS, IDLE_MS);
    send_ok(&c->node[0], 2, "req:first");
    wait_got(&c->node[0], 2, "rep:first", 1);
    /* Quiet, but each side's keepalives keep the links up. */
    short_sleep(2L * IDLE_MS);
    assert_int_equal(stats_of(&c->node[0]).idle, 0);
    assert_int_equal(stats_of(&c->node[1]).idle, 0);
    assert_int_equal(downs_of(&c->node[0]), 0);

    /* Node 2's loop stops for longer than IDLE_MS: node 1 gives its link
     * up, and node 2, back, finds it closed. */
    send_ok(&c->node[0], 2, "sleep");
    wait_down(&c->node[0], 2, true);
    assert_true(stats_of(&c->node[0]).idle >= 1);
    wait_down(&c->node[1], 1, false);
    send_ok(&c->node[1], 1, "req:awake");
    wait_got(&c->node[1], 1, "rep:awake", 1);
    cluster_stop(c);
}

/* ---- (6) a peer that accepts and never answers; close ------------------- */

/* A socket that listens and never accepts: the kernel completes the TCP
 * connect, and nothing ever answers the hello. */
static int silent_listener(uint16_t *port)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof sa;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    assert_int_equal(listen(fd, 4), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
    *port = ntohs(sa.sin_port);
    return fd;
}

struct closing {
    struct tnode *t;
    bool closed;
    size_t downs_at_close; /* on_link_down calls seen when cb ran */
};

static void on_node_closed(void *arg)
{
    struct closing *c = arg;
    c->downs_at_close = downs_of(c->t);
    c->closed = true;
}

static bool node_closed(void *arg)
{
    return ((struct closing *)arg)->closed;
}

/* Frames for a peer that never finishes the handshake are lost once the
 * deadline passes, said so, and sends then fail at once; what waits for a
 * peer is bounded; a dial under way at close is cancelled and its frames
 * said lost before close calls back. */
static void test_deadline_and_close(void **state)
{
    (void)state;
    uv_loop_t loop;
    uint16_t ports[3];
    assert_int_equal(uv_loop_init(&loop), 0);
    t_reserve_ports(ports, 1);
    int silent2 = silent_listener(&ports[1]);
    int silent3 = silent_listener(&ports[2]);
    struct part__peer_member members[] = {
        {1, "127.0.0.1", ports[0]}, {2, "127.0.0.1", ports[1]}, {3, "127.0.0.1", ports[2]}};
    struct tnode *a = calloc(1, sizeof *a);
    if (a == NULL) {
        abort();
    }
    a->id = 1;
    a->port = ports[0];
    pthread_mutex_init(&a->mu, NULL);
    struct part__peer_node_options po = {.loop = &loop,
                                         .id = 1,
                                         .host = "127.0.0.1",
                                         .port = ports[0],
                                         .members = members,
                                         .member_count = 3,
                                         .secret = (const unsigned char *)secret_good,
                                         .secret_len = strlen(secret_good),
                                         .handshake_ms = 300,
                                         .max_queued = 64,
                                         .on_frame = on_frame,
                                         .on_link_down = on_link_down,
                                         .arg = a};
    memcpy(po.cluster_id, cluster_id, sizeof po.cluster_id);
    assert_int_equal(part__peer_node_new(&po, &a->n), SL_OK);

    send_ok(a, 2, "req:anyone?");
    send_ok(a, 2, "req:anyone at all?");
    uint64_t t0 = sl_mono_ns();
    struct want_down d2 = {a, 2, true};
    assert_true(run_until(&loop, down_seen, &d2));
    assert_true(sl_mono_ns() - t0 >= 250 * 1000000ull);
    assert_int_equal(part__peer_send(a->n, 2, "x", 1), SL_EUNAVAIL);
    struct part__peer_stats st = stats_of(a);
    assert_int_equal(st.rejected[PART__HS_REJECT_DEADLINE], 1);
    assert_int_equal(st.frames_dropped, 2);
    assert_int_equal(st.dial_failures, 1);

    send_ok(a, 3, "req:and you?");
    static const uint8_t too_much[60] = {0};
    assert_int_equal(part__peer_send(a->n, 3, too_much, sizeof too_much), SL_EBUSY);
    uv_run(&loop, UV_RUN_NOWAIT); /* the dial starts */
    struct closing cl = {.t = a};
    size_t before = downs_of(a);
    part__peer_node_close(a->n, on_node_closed, &cl);
    assert_int_equal(part__peer_send(a->n, 3, "x", 1), SL_ECLOSED);
    assert_true(run_until(&loop, node_closed, &cl));
    assert_int_equal(cl.downs_at_close, before + 1);
    pthread_mutex_lock(&a->mu);
    struct down last = a->down[a->ndown - 1];
    pthread_mutex_unlock(&a->mu);
    assert_int_equal(last.id, 3);
    assert_int_equal(last.link, 0);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
    close(silent2);
    close(silent3);
    pthread_mutex_destroy(&a->mu);
    free(a);
}

int main(void)
{
    sl_log_set_level(SL_LOG_ERROR);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exchange),
        cmocka_unit_test(test_wrong_secret),
        cmocka_unit_test(test_garbage_raft_hello_oversize),
        cmocka_unit_test(test_peer_closed_and_back),
        cmocka_unit_test(test_keepalive),
        cmocka_unit_test(test_deadline_and_close),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
