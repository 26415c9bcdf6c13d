/*
 * test_part_cluster.c -- three engines of one cluster in one process, each
 * with its own data_dir, loop, Raft port and peer port on loopback: the
 * catalog and every partition are replicated groups, and a job for a group
 * another node leads is forwarded to it (docs/design.md "Cluster").
 *
 * A job is tried on the node the test picks until it is served: during an
 * election a node answers SL_EUNAVAIL, as the gateway answers a 503 that
 * a client retries. It proves that any node makes a queue that every node
 * then knows; that sends, receives and deletes through any node land on
 * the partition's leader, and every node counts them; that a receipt
 * handle from one node deletes through another; that a message
 * acknowledged by a leader survives its death and is served once, through
 * a survivor, after the dead node's lease runs out, while an acknowledged
 * delete stays deleted; that the dead node catches up on its data_dir and
 * serves; and that a long poll on a node that leads nothing of its queue
 * wakes when a message is sent through another node.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "part_test_util.h"

#define NODES 3
#define PARTS 2
#define TRY_MS 30000 /* elections on a loaded 2-core machine under sanitizers */

static const unsigned char SECRET[] = "test-part-cluster-secret-0123456789abcdef";

struct cluster {
    struct t_env n[NODES];
    bool up[NODES];
    struct part_cluster_node nodes[NODES];
    uint16_t ports[2 * NODES]; /* Raft, then peer */
};

static void node_open(struct cluster *c, int i)
{
    struct t_env *t = &c->n[i];
    struct part_cluster_options co = {.node_id = (uint16_t)(i + 1),
                                      .nodes = c->nodes,
                                      .node_count = NODES,
                                      .secret = SECRET,
                                      .secret_len = sizeof SECRET - 1,
                                      .election_timeout_ms = 300};
    struct part_options o = {.data_dir = t->dir,
                             .partitions = PARTS,
                             .durability = PART_DURABILITY_FSYNC,
                             .now_ms = t_clock,
                             .clock_ctx = (void *)&t->now,
                             .cluster = &co};
    char err[512] = "";
    int rc = part_engine_open(&o, &t->e, err, sizeof err);
    if (rc != SL_OK) {
        fail_msg("node %d: open: %s", i + 1, err);
    }
    assert_int_equal(part_client_new(t->e, &t->loop, &t->c), SL_OK);
    c->up[i] = true;
}

static void node_close(struct cluster *c, int i)
{
    t_close(&c->n[i]);
    c->up[i] = false;
}

static int setup(void **state)
{
    struct cluster *c = calloc(1, sizeof *c);
    t_reserve_ports(c->ports, (size_t)2 * NODES);
    for (int i = 0; i < NODES; i++) {
        struct t_env *t = &c->n[i];
        snprintf(t->dir, sizeof t->dir, "/tmp/sluice-cluster-test-XXXXXX");
        assert_non_null(mkdtemp(t->dir));
        atomic_init(&t->now, T_START_MS);
        uv_loop_init(&t->loop);
        c->nodes[i] = (struct part_cluster_node){(uint16_t)(i + 1), "127.0.0.1", c->ports[i],
                                                 "127.0.0.1", c->ports[NODES + i]};
    }
    for (int i = 0; i < NODES; i++) {
        node_open(c, i);
    }
    *state = c;
    return 0;
}

static int teardown(void **state)
{
    struct cluster *c = *state;
    for (int i = 0; i < NODES; i++) {
        if (c->up[i]) {
            node_close(c, i);
        }
        uv_run(&c->n[i].loop, UV_RUN_NOWAIT);
        assert_int_equal(uv_loop_close(&c->n[i].loop), 0);
        t_rmrf(c->n[i].dir);
    }
    free(c);
    return 0;
}

/* Runs every live node's loop a little: completions arrive on them. */
static void pause_ms(struct cluster *c, unsigned ms)
{
    for (int i = 0; i < NODES; i++) {
        if (c->up[i]) {
            uv_run(&c->n[i].loop, UV_RUN_NOWAIT);
        }
    }
    usleep(ms * 1000u);
}

/* A job submitted by fn on node i; SL_EUNAVAIL means "not the leader (yet)". */
typedef int submit_fn(struct t_env *t, void *arg, struct t_done *d);

/* Submits on node i until it does it (any status but SL_EUNAVAIL, which
 * an election in progress answers, as a client retries a 503). */
static void on_node(struct cluster *c, int i, submit_fn *fn, void *arg, struct t_done *d)
{
    uint64_t deadline = sl_mono_ns() / 1000000 + TRY_MS;
    while (sl_mono_ns() / 1000000 < deadline) {
        assert_int_equal(fn(&c->n[i], arg, d), SL_OK);
        t_wait(&c->n[i], d);
        if (d->status != SL_EUNAVAIL) {
            return;
        }
        pause_ms(c, 50);
    }
    fail_msg("node %d did not serve the job within %d ms", i + 1, TRY_MS);
}

static int do_create(struct t_env *t, void *arg, struct t_done *d)
{
    struct part_queue_config cfg = part_queue_config_default();
    return part_queue_create(t->c, "acme", arg, &cfg, NULL, 0, NULL, 0, t_ck(d), t_on_done);
}

struct send_arg {
    uint64_t q;
    uint32_t p;
    const char *body;
};

static int do_send(struct t_env *t, void *arg, struct t_done *d)
{
    struct send_arg *a = arg;
    struct part_send_entry en = {.body = sl_slice_cstr(a->body), .delay_s = -1};
    return part_send(t->c, a->q, a->p, &en, 1, t_ck(d), t_on_done);
}

struct recv_arg {
    uint64_t q;
    uint32_t p;
    uint32_t wait_ms; /* a long poll: a follower counts a message once its entry lands */
};

static int do_recv(struct t_env *t, void *arg, struct t_done *d)
{
    struct recv_arg *a = arg;
    struct part_receive_req req = {.queue_id = a->q,
                                   .partitions = &a->p,
                                   .partition_count = 1,
                                   .max_messages = PART_MAX_BATCH,
                                   .visibility_s = 30,
                                   .wait_ms = a->wait_ms};
    return part_receive(t->c, &req, t_ck(d), t_on_done, NULL);
}

struct delete_arg {
    uint64_t q;
    const char *receipt;
};

static int do_delete(struct t_env *t, void *arg, struct t_done *d)
{
    struct delete_arg *a = arg;
    return part_delete(t->c, a->q, &a->receipt, 1, t_ck(d), t_on_done);
}

/* Waits until node i's catalog holds acme/name; returns its id. */
static uint64_t known_on(struct cluster *c, int i, const char *name)
{
    uint64_t deadline = sl_mono_ns() / 1000000 + TRY_MS;
    uint64_t id = 0;
    while (part_queue_find(c->n[i].e, "acme", name, &id, NULL) != SL_OK) {
        if (sl_mono_ns() / 1000000 > deadline) {
            fail_msg("node %d never learnt queue %s", i + 1, name);
        }
        pause_ms(c, 20);
    }
    return id;
}

/* The ready count of q on partition p as node i counts it. */
static int64_t ready_on(struct cluster *c, int i, uint64_t q, uint32_t p)
{
    struct part_counts qc;
    assert_int_equal(part_queue_counts(c->n[i].e, q, p, &qc), SL_OK);
    return qc.ready;
}

/* Waits until node i counts `ready` ready and `inflight` in-flight
 * messages of q on p: a follower counts from the leader's entries. */
static void wait_counts(struct cluster *c, int i, uint64_t q, uint32_t p, int64_t ready,
                        int64_t inflight)
{
    uint64_t deadline = sl_mono_ns() / 1000000 + TRY_MS;
    for (;;) {
        struct part_counts qc = {0};
        int rc = part_queue_counts(c->n[i].e, q, p, &qc); /* SL_ENOTFOUND: not learnt yet */
        if (rc == SL_OK && qc.ready == ready && qc.inflight == inflight) {
            return;
        }
        if (sl_mono_ns() / 1000000 > deadline) {
            fail_msg("node %d (%s) counts %lld ready, %lld in flight on partition %u; want %lld, "
                     "%lld",
                     i + 1, sl_strerror(rc), (long long)qc.ready, (long long)qc.inflight, p,
                     (long long)ready, (long long)inflight);
        }
        pause_ms(c, 20);
    }
}

/* The node that leads partition p, as node i learnt it (waits for one). */
static int leader_of(struct cluster *c, int i, uint32_t p)
{
    uint64_t deadline = sl_mono_ns() / 1000000 + TRY_MS;
    uint64_t id;
    while ((id = part_engine_leader(c->n[i].e, p)) == 0 || !c->up[id - 1]) {
        if (sl_mono_ns() / 1000000 > deadline) {
            fail_msg("node %d knows no live leader of %u", i + 1, p);
        }
        pause_ms(c, 20);
    }
    return (int)id - 1;
}

static void test_replicated_failover(void **state)
{
    struct cluster *c = *state;
    struct t_done d = {0};

    /* Any node makes the queue (the catalog's leader does it); every node
     * learns it. */
    on_node(c, 0, do_create, "orders", &d);
    assert_int_equal(d.status, SL_OK);
    uint64_t q = d.queue_id;
    for (int i = 0; i < NODES; i++) {
        assert_int_equal(known_on(c, i, "orders"), q);
    }

    /* Sends through every node: each lands on its partition's leader. */
    struct send_arg s0 = {q, 0, "zero"}, s0b = {q, 0, "zero-b"}, s1 = {q, 1, "one"};
    on_node(c, 0, do_send, &s0, &d);
    assert_int_equal(d.status, SL_OK);
    char id0[PART_MSG_ID_LEN + 1];
    memcpy(id0, d.sent_ids[0], sizeof id0);
    on_node(c, 1, do_send, &s0b, &d);
    assert_int_equal(d.status, SL_OK);
    on_node(c, 2, do_send, &s1, &d);
    assert_int_equal(d.status, SL_OK);
    for (int i = 0; i < NODES; i++) {
        wait_counts(c, i, q, 0, 2, 0);
        wait_counts(c, i, q, 1, 1, 0);
    }

    /* Received through one node, deleted through another: a receipt handle
     * is good on every node. */
    struct recv_arg r0 = {q, 0, 0};
    on_node(c, 1, do_recv, &r0, &d);
    assert_int_equal(d.status, SL_OK);
    assert_int_equal(d.count, 2);
    int b = strcmp(d.msgs[0].body, "zero-b") == 0 ? 0 : 1;
    assert_string_equal(d.msgs[b].body, "zero-b");
    char receipt_b[PART_RECEIPT_MAX];
    snprintf(receipt_b, sizeof receipt_b, "%s", d.msgs[b].receipt);
    struct delete_arg del_b = {q, receipt_b};
    on_node(c, 2, do_delete, &del_b, &d);
    assert_int_equal(d.status, SL_OK);
    assert_int_equal(d.entry[0], SL_OK);
    for (int i = 0; i < NODES; i++) {
        wait_counts(c, i, q, 0, 0, 1);
    }

    /* The leader of partition 0 dies. */
    int lead0 = leader_of(c, 0, 0);
    node_close(c, lead0);

    /* A survivor takes the lead; once the lease the dead node gave runs
     * out there, the message is ready again and any survivor serves it,
     * once; the deleted one stays deleted. */
    int other = (lead0 + 1) % NODES;
    int lead0b;
    uint64_t deadline = sl_mono_ns() / 1000000 + TRY_MS;
    while ((lead0b = leader_of(c, other, 0)) == lead0) {
        if (sl_mono_ns() / 1000000 > deadline) {
            fail_msg("partition 0 has no new leader");
        }
        pause_ms(c, 20);
    }
    int via = 3 - lead0 - lead0b; /* the survivor that does not lead it */
    for (int i = 0; i < NODES; i++) {
        if (c->up[i]) {
            t_advance(&c->n[i], 31000);
        }
    }
    deadline = sl_mono_ns() / 1000000 + TRY_MS;
    while (ready_on(c, via, q, 0) != 1) {
        if (sl_mono_ns() / 1000000 > deadline) {
            fail_msg("the message the dead leader leased never became ready again");
        }
        part_engine_kick(c->n[lead0b].e);
        pause_ms(c, 20);
    }
    on_node(c, via, do_recv, &r0, &d);
    assert_int_equal(d.status, SL_OK);
    assert_int_equal(d.count, 1);
    assert_string_equal(d.msgs[0].body, "zero");
    assert_string_equal(d.msgs[0].id, id0);
    char receipt0[PART_RECEIPT_MAX];
    snprintf(receipt0, sizeof receipt0, "%s", d.msgs[0].receipt);
    struct delete_arg del0 = {q, receipt0};
    on_node(c, lead0b, do_delete, &del0, &d);
    assert_int_equal(d.status, SL_OK);
    assert_int_equal(d.entry[0], SL_OK);

    /* The dead node comes back on its data_dir, catches up, and serves:
     * partition 1's message through it, partition 0 empty. */
    node_open(c, lead0);
    t_advance(&c->n[lead0], 31000);
    assert_int_equal(known_on(c, lead0, "orders"), q);
    wait_counts(c, lead0, q, 0, 0, 0);
    wait_counts(c, lead0, q, 1, 1, 0);
    struct recv_arg r1 = {q, 1, 0};
    on_node(c, lead0, do_recv, &r1, &d);
    assert_int_equal(d.status, SL_OK);
    assert_int_equal(d.count, 1);
    assert_string_equal(d.msgs[0].body, "one");
    on_node(c, lead0, do_recv, &r0, &d);
    assert_int_equal(d.status, SL_OK);
    assert_int_equal(d.count, 0);
}

/* A long poll on a node that leads nothing of the queue wakes when a
 * message is sent through another node: the leader's entry reaches it. */
static void test_long_poll_wakes_anywhere(void **state)
{
    struct cluster *c = *state;
    struct t_done d = {0};
    on_node(c, 0, do_create, "waits", &d);
    assert_int_equal(d.status, SL_OK);
    uint64_t q = d.queue_id;
    int lead = leader_of(c, 0, 1);
    int poller = (lead + 1) % NODES, sender = (lead + 2) % NODES;
    known_on(c, poller, "waits");
    known_on(c, sender, "waits");
    uint32_t p = 1;
    struct part_receive_req req = {.queue_id = q,
                                   .partitions = &p,
                                   .partition_count = 1,
                                   .max_messages = 1,
                                   .visibility_s = 30,
                                   .wait_ms = 15000};
    struct t_done w;
    uint64_t ticket = 0;
    assert_int_equal(part_receive(c->n[poller].c, &req, t_ck(&w), t_on_done, &ticket), SL_OK);
    pause_ms(c, 200); /* parked */
    assert_false(w.done);
    struct send_arg s = {q, 1, "wake"};
    on_node(c, sender, do_send, &s, &d);
    assert_int_equal(d.status, SL_OK);
    t_wait(&c->n[poller], &w);
    assert_int_equal(w.status, SL_OK);
    assert_int_equal(w.count, 1);
    assert_string_equal(w.msgs[0].body, "wake"); /* a timed-out poll answers none */
    (void)ticket;
}

/* After a failover, the new leader's own writes stay visible to it: a
 * message leased and deleted is never leased again. */
static void test_new_leader_sees_its_writes(void **state)
{
    struct cluster *c = *state;
    struct t_done d = {0};
    on_node(c, 0, do_create, "churn", &d);
    assert_int_equal(d.status, SL_OK);
    uint64_t q = d.queue_id;
    int lead = leader_of(c, 0, 0);
    node_close(c, lead);
    int via = (lead + 1) % NODES;
    known_on(c, via, "churn");
    struct recv_arg r0 = {q, 0, 5000};
    for (int round = 0; round < 200; round++) {
        char body[32];
        snprintf(body, sizeof body, "m%d", round);
        struct send_arg s0 = {q, 0, body};
        on_node(c, via, do_send, &s0, &d);
        assert_int_equal(d.status, SL_OK);
        on_node(c, via, do_recv, &r0, &d);
        assert_int_equal(d.status, SL_OK);
        if (d.count != 1 || strcmp(d.msgs[0].body, body) != 0 || d.msgs[0].receive_count != 1) {
            fail_msg("round %d: got %zu messages, first %s (count %u)", round, d.count,
                     d.count ? d.msgs[0].body : "-", d.count ? d.msgs[0].receive_count : 0);
        }
        char receipt[PART_RECEIPT_MAX];
        snprintf(receipt, sizeof receipt, "%s", d.msgs[0].receipt);
        struct delete_arg del = {q, receipt};
        on_node(c, (via + round) % NODES == lead ? via : (via + round) % NODES, do_delete, &del,
                &d);
        assert_int_equal(d.status, SL_OK);
        assert_int_equal(d.entry[0], SL_OK);
    }
}

/* sluice's own queue settings (priority order, idempotency window,
 * exclusivity) travel with a forwarded CreateQueue: every node reads them
 * back from the replicated catalog. */
static int do_create_own(struct t_env *t, void *arg, struct t_done *d)
{
    struct part_queue_config cfg = part_queue_config_default();
    cfg.priority_order = true;
    cfg.idempotency_window_s = 600;
    cfg.exclusive = true;
    return part_queue_create(t->c, "acme", arg, &cfg, NULL, 0, NULL, 0, t_ck(d), t_on_done);
}

static void test_own_settings_replicated(void **state)
{
    struct cluster *c = *state;
    struct t_done d = {0};
    for (int from = 0; from < NODES; from++) {
        char name[16];
        snprintf(name, sizeof name, "own-%d", from);
        on_node(c, from, do_create_own, name, &d);
        assert_int_equal(d.status, SL_OK);
        for (int i = 0; i < NODES; i++) {
            known_on(c, i, name);
            uint64_t id;
            struct part_queue_config cfg;
            assert_int_equal(part_queue_find(c->n[i].e, "acme", name, &id, &cfg), SL_OK);
            assert_true(cfg.priority_order);
            assert_int_equal(cfg.idempotency_window_s, 600);
            assert_true(cfg.exclusive);
        }
    }
}

/* Polls node i's view of group p until want(st) holds (the Raft thread
 * publishes it every 20 ms); the stats that held. */
static struct part_group_stats
stats_until(struct cluster *c, int i, uint32_t p,
            bool (*want)(const struct part_group_stats *st, const void *arg), const void *arg)
{
    uint64_t deadline = sl_mono_ns() / 1000000 + TRY_MS;
    struct part_group_stats st;
    for (;;) {
        assert_int_equal(part_engine_group_stats(c->n[i].e, p, &st), SL_OK);
        if (want(&st, arg)) {
            return st;
        }
        if (sl_mono_ns() / 1000000 > deadline) {
            fail_msg("node %d, group %u: term %llu, commit %llu, applied %llu, leader %llu", i + 1,
                     p, (unsigned long long)st.term, (unsigned long long)st.commit_index,
                     (unsigned long long)st.applied_index, (unsigned long long)st.leader);
        }
        pause_ms(c, 20);
    }
}

/* A leader known, and applied (and so committed) at least to *arg. */
static bool applied_at_least(const struct part_group_stats *st, const void *arg)
{
    return st->leader != 0 && st->applied_index >= *(const uint64_t *)arg &&
           st->commit_index >= st->applied_index;
}

static bool quorum_lost(const struct part_group_stats *st, const void *arg)
{
    (void)arg;
    return st->no_quorum;
}

/* Each node's view of a group: the leader's term and indexes, reached by
 * every follower's applied index after a send; a node left alone finds
 * no quorum for any group once it has known no leader for two election
 * timeouts. */
static void test_group_stats(void **state)
{
    struct cluster *c = *state;
    struct t_done d = {0};
    on_node(c, 0, do_create, "stats", &d);
    assert_int_equal(d.status, SL_OK);
    struct send_arg s0 = {d.queue_id, 0, "counted"};
    known_on(c, 1, "stats");
    on_node(c, 1, do_send, &s0, &d);
    assert_int_equal(d.status, SL_OK);

    int lead = leader_of(c, 0, 0);
    uint64_t two = 2; /* the bootstrap configuration and the send, at least */
    struct part_group_stats ls = stats_until(c, lead, 0, applied_at_least, &two);
    assert_int_equal(ls.leader, (uint64_t)lead + 1);
    assert_true(ls.term >= 1);
    assert_int_equal(ls.voters, NODES);
    assert_false(ls.no_quorum);
    for (int i = 0; i < NODES; i++) {
        struct part_group_stats st = stats_until(c, i, 0, applied_at_least, &ls.commit_index);
        assert_int_equal(st.leader, ls.leader);
        assert_true(st.term >= ls.term);
    }
    /* Another send is an entry past every index seen so far: each node's
     * applied index moves past the commit index read above. */
    struct send_arg s1 = {s0.q, 0, "counted too"};
    known_on(c, 2, "stats");
    on_node(c, 2, do_send, &s1, &d);
    assert_int_equal(d.status, SL_OK);
    uint64_t next = ls.commit_index + 1;
    for (int i = 0; i < NODES; i++) {
        stats_until(c, i, 0, applied_at_least, &next);
    }
    uint64_t one = 1;
    struct part_group_stats cat = stats_until(c, 0, PART_CATALOG, applied_at_least, &one);
    assert_true(cat.commit_index >= 1);
    assert_int_equal(part_engine_group_stats(c->n[0].e, PARTS, &cat), SL_EINVAL);
    assert_int_equal(cat.term, 0);

    /* Node 1 alone: no leader, then no quorum, for every group. */
    node_close(c, 1);
    node_close(c, 2);
    for (uint32_t p = 0; p <= PARTS; p++) {
        uint32_t g = p < PARTS ? p : PART_CATALOG;
        struct part_group_stats st = stats_until(c, 0, g, quorum_lost, NULL);
        assert_int_equal(st.leader, 0);
        assert_true(st.leaderless_ms > 0);
    }
}

/* On one node there are no groups to show. */
static void test_group_stats_one_node(void **state)
{
    struct t_env *t = *state;
    struct part_group_stats st = {.term = 7};
    assert_int_equal(part_engine_group_stats(t->e, PART_CATALOG, &st), SL_EINVAL);
    assert_int_equal(st.term, 0);
    assert_int_equal(part_engine_group_stats(t->e, 0, &st), SL_EINVAL);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN); /* a dead node's sockets, as sluiced does */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_replicated_failover, setup, teardown),
        cmocka_unit_test_setup_teardown(test_long_poll_wakes_anywhere, setup, teardown),
        cmocka_unit_test_setup_teardown(test_new_leader_sees_its_writes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_own_settings_replicated, setup, teardown),
        cmocka_unit_test_setup_teardown(test_group_stats, setup, teardown),
        cmocka_unit_test_setup_teardown(test_group_stats_one_node, t_setup, t_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
