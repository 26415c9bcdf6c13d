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

#include <limits.h>
#include <signal.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "part_test_util.h"
#include "part_writer.h"

#define NODES 3
#define PARTS 2
#define TRY_MS 30000 /* elections on a loaded 2-core machine under sanitizers */

static const unsigned char SECRET[] = "test-part-cluster-secret-0123456789abcdef";

struct cluster {
    struct t_env n[NODES];
    bool up[NODES];
    struct part_cluster_node nodes[NODES];
    uint16_t ports[2 * NODES]; /* Raft, then peer */
    uint64_t memory_budget;    /* 0: the default */
    uint32_t parts[NODES];     /* 0: PARTS */
    /* leads handed to their preferred nodes after this long; the tests
     * but one keep their leaders where elections put them */
    unsigned handover_settle_ms;
};

static void node_open(struct cluster *c, int i)
{
    struct t_env *t = &c->n[i];
    struct part_cluster_options co = {.node_id = (uint16_t)(i + 1),
                                      .nodes = c->nodes,
                                      .node_count = NODES,
                                      .secret = SECRET,
                                      .secret_len = sizeof SECRET - 1,
                                      .election_timeout_ms = 300,
                                      .memory_budget = c->memory_budget,
                                      .handover_settle_ms = c->handover_settle_ms};
    struct part_options o = {.data_dir = t->dir,
                             .partitions = c->parts[i] != 0 ? c->parts[i] : PARTS,
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

static int setup_with(void **state, uint64_t memory_budget, unsigned handover_settle_ms)
{
    struct cluster *c = calloc(1, sizeof *c);
    c->memory_budget = memory_budget;
    c->handover_settle_ms = handover_settle_ms;
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

static int setup(void **state)
{
    return setup_with(state, 0, UINT_MAX);
}

static int setup_placing(void **state)
{
    return setup_with(state, 0, 300);
}

#define SMALL_BUDGET ((uint64_t)1 << 20)

static int setup_small_budget(void **state)
{
    return setup_with(state, SMALL_BUDGET, UINT_MAX);
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

static int64_t ready_on_engine(struct part_engine *e, uint64_t q)
{
    struct part_counts qc;
    assert_int_equal(part_queue_counts(e, q, PART_ALL_PARTITIONS, &qc), SL_OK);
    return qc.ready;
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

static int do_purge(struct t_env *t, void *arg, struct t_done *d)
{
    return part_purge(t->c, *(uint64_t *)arg, t_ck(d), t_on_done);
}

/* The images live in memory: past the node's budget a send is refused
 * with SL_EBUDGET, and a purge gives the budget back (freed pages are
 * reused before the image grows, so they do not count). */
/* do_send, but a refusal at submission (the budget's) is its outcome. */
static int do_send_or_refuse(struct t_env *t, void *arg, struct t_done *d)
{
    int rc = do_send(t, arg, d);
    if (rc != SL_OK) {
        *d = (struct t_done){.done = true, .status = rc};
    }
    return SL_OK;
}

static void test_memory_budget_refuses_sends(void **state)
{
    struct cluster *c = *state;
    struct t_done d = {0};
    on_node(c, 0, do_create, "big", &d);
    assert_int_equal(d.status, SL_OK);
    uint64_t q = d.queue_id;
    static char body[4097];
    memset(body, 'x', sizeof body - 1);
    struct send_arg s0 = {q, 0, body};
    int sent = 0;
    for (; sent < 2000; sent++) { /* 8 MB: far past the budget */
        on_node(c, 0, do_send_or_refuse, &s0, &d);
        if (d.status == SL_EBUDGET) {
            break;
        }
        assert_int_equal(d.status, SL_OK);
    }
    assert_int_not_equal(sent, 2000);
    assert_true(sent > 0); /* an empty cluster fits */
    struct part_cluster_stats st;
    assert_int_equal(part_engine_cluster_stats(c->n[0].e, &st), SL_OK);
    assert_true(st.image_bytes >= SMALL_BUDGET);
    assert_int_equal(st.memory_budget, SMALL_BUDGET);
    assert_true(st.budget_refusals >= 1);

    on_node(c, 1, do_purge, &q, &d);
    assert_int_equal(d.status, SL_OK);
    uint64_t deadline = sl_mono_ns() / 1000000 + TRY_MS;
    do {
        if (sl_mono_ns() / 1000000 > deadline) {
            fail_msg("sends still refused after the purge");
        }
        pause_ms(c, 20);
        on_node(c, 0, do_send_or_refuse, &s0, &d);
    } while (d.status == SL_EBUDGET);
    assert_int_equal(d.status, SL_OK);
}

/* Whether, as node i knows them, the catalog and every partition are led
 * by their preferred nodes: group k (0: the catalog, 1 + p) by node
 * k % NODES + 1. */
static bool leads_placed(struct cluster *c, int i)
{
    if (part_engine_leader(c->n[i].e, PART_CATALOG) != 1) {
        return false;
    }
    for (uint32_t p = 0; p < PARTS; p++) {
        if (part_engine_leader(c->n[i].e, p) != (p + 1) % NODES + 1) {
            return false;
        }
    }
    return true;
}

static void wait_placed(struct cluster *c, int i)
{
    uint64_t deadline = sl_mono_ns() / 1000000 + TRY_MS;
    while (!leads_placed(c, i)) {
        if (sl_mono_ns() / 1000000 > deadline) {
            fail_msg("node %d: the leads never reached their preferred nodes", i + 1);
        }
        pause_ms(c, 50);
    }
}

/* Leads spread over the nodes, wherever the elections put them, and come
 * back to a node that died and returned. */
static void test_leads_go_to_preferred_nodes(void **state)
{
    struct cluster *c = *state;
    wait_placed(c, 0);
    node_close(c, 1); /* it led partition 0 */
    assert_int_not_equal(leader_of(c, 0, 0), 1);
    assert_false(leads_placed(c, 0));
    node_open(c, 1);
    wait_placed(c, 0);
    wait_placed(c, 1);
    struct t_done d = {0};
    on_node(c, 2, do_create, "after", &d); /* and the cluster serves */
    assert_int_equal(d.status, SL_OK);
}

/* A node configured with another partition count is another cluster to
 * the others: its handshakes are refused and counted, and it serves
 * nothing of theirs. */
static void test_other_partition_count_refused(void **state)
{
    struct cluster *c = *state;
    struct t_done d = {0};
    on_node(c, 0, do_create, "kept", &d);
    assert_int_equal(d.status, SL_OK);
    node_close(c, 2);
    t_rmrf(c->n[2].dir);
    assert_int_equal(mkdir(c->n[2].dir, 0700), 0);
    c->parts[2] = PARTS + 1;
    node_open(c, 2);
    size_t other = 0;
    while (part_cluster_reject_reason(other) != NULL &&
           strcmp(part_cluster_reject_reason(other), "other_cluster") != 0) {
        other++;
    }
    assert_non_null(part_cluster_reject_reason(other));
    uint64_t deadline = sl_mono_ns() / 1000000 + TRY_MS;
    for (;;) {
        struct part_cluster_stats st;
        assert_int_equal(part_engine_cluster_stats(c->n[0].e, &st), SL_OK);
        if (st.raft_rejected[other] + st.peer_rejected[other] > 0) {
            break;
        }
        if (sl_mono_ns() / 1000000 > deadline) {
            fail_msg("node 1 never refused the node of another partition count");
        }
        pause_ms(c, 50);
    }
    assert_false(part_engine_ready(c->n[2].e));
    uint64_t id;
    assert_int_not_equal(part_queue_find(c->n[2].e, "acme", "kept", &id, NULL), SL_OK);
}

struct pause_arg {
    uint64_t q;
    unsigned flags;
};

static int do_pause(struct t_env *t, void *arg, struct t_done *d)
{
    struct pause_arg *a = arg;
    return part_queue_set_pause(t->c, a->q, a->flags, t_ck(d), t_on_done);
}

/* An operator's pause made through one node holds on every node: each
 * reads the flags, and a receive through another node leases nothing
 * until the resume, made through a third, lets it through. */
static void test_pause_replicated(void **state)
{
    struct cluster *c = *state;
    struct t_done d = {0};
    on_node(c, 0, do_create, "held", &d);
    assert_int_equal(d.status, SL_OK);
    uint64_t q = d.queue_id;
    struct send_arg s0 = {q, 0, "waits"};
    on_node(c, 0, do_send, &s0, &d);
    assert_int_equal(d.status, SL_OK);
    struct pause_arg pa = {q, PART_PAUSE_DEQUEUE};
    on_node(c, 1, do_pause, &pa, &d);
    assert_int_equal(d.status, SL_OK);
    uint64_t deadline = sl_mono_ns() / 1000000 + TRY_MS;
    for (int i = 0; i < NODES; i++) {
        while (part_queue_pause(c->n[i].e, q) != PART_PAUSE_DEQUEUE) {
            if (sl_mono_ns() / 1000000 > deadline) {
                fail_msg("node %d never learnt the pause", i + 1);
            }
            pause_ms(c, 20);
        }
    }
    wait_counts(c, 2, q, 0, 1, 0);
    struct recv_arg r0 = {q, 0, 0};
    on_node(c, 2, do_recv, &r0, &d);
    assert_int_equal(d.status, SL_OK);
    assert_int_equal(d.count, 0); /* paused */
    pa.flags = 0;
    on_node(c, 2, do_pause, &pa, &d);
    assert_int_equal(d.status, SL_OK);
    r0.wait_ms = 5000;
    on_node(c, 0, do_recv, &r0, &d);
    assert_int_equal(d.status, SL_OK);
    assert_int_equal(d.count, 1);
    assert_int_equal(part_queue_pause(c->n[0].e, q), 0);
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
    assert_int_equal(ls.leaderless_ms, 0);
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

struct move_arg {
    uint64_t q, dest;
};

static int do_move(struct t_env *t, void *arg, struct t_done *d)
{
    struct move_arg *a = arg;
    struct part_move_req req = {
        .queue_id = a->q, .partition = 0, .dest_queue_id = a->dest, .max_messages = 10};
    return part_move(t->c, &req, t_ck(d), t_on_moved);
}

static int do_barrier(struct t_env *t, void *arg, struct t_done *d)
{
    (void)arg;
    return part_barrier(t->c, 0, t_ck(d), t_on_done);
}

/* A redrive's moves and an operator's barrier made on a node that does
 * not lead the partition run on its leader; a destination paused for
 * enqueue (in the replicated catalog) holds them there too. */
static void test_moves_forwarded(void **state)
{
    struct cluster *c = *state;
    struct t_done d = {0};
    on_node(c, 0, do_create, "mv-src", &d);
    uint64_t src = d.queue_id;
    on_node(c, 0, do_create, "mv-dst", &d);
    uint64_t dst = d.queue_id;
    int lead = leader_of(c, 0, 0);
    int via = (lead + 1) % NODES;
    known_on(c, via, "mv-dst");
    for (int i = 0; i < 3; i++) {
        struct send_arg s0 = {src, 0, "to move"};
        on_node(c, lead, do_send, &s0, &d);
        assert_int_equal(d.status, SL_OK);
    }
    struct pause_arg pa = {dst, PART_PAUSE_ENQUEUE};
    on_node(c, via, do_pause, &pa, &d);
    assert_int_equal(d.status, SL_OK);
    wait_counts(c, via, src, 0, 3, 0);
    struct move_arg ma = {src, dst};
    on_node(c, via, do_move, &ma, &d);
    assert_int_equal(d.status, SL_OK);
    assert_int_equal(d.count, 0);
    assert_true(d.move_held);
    pa.flags = 0;
    on_node(c, via, do_pause, &pa, &d);
    assert_int_equal(d.status, SL_OK);
    on_node(c, via, do_move, &ma, &d);
    assert_int_equal(d.status, SL_OK);
    assert_int_equal(d.count, 3);
    wait_counts(c, via, dst, 0, 3, 0);
    wait_counts(c, via, src, 0, 0, 0);
    on_node(c, via, do_barrier, NULL, &d);
    assert_int_equal(d.status, SL_OK);
}

static void count_backup_file(void *arg, const char *name)
{
    (void)name;
    (*(int *)arg)++;
}

/* A backup asked of a follower copies the images it holds into the files
 * a single node opens: restored as one node, it holds the queue and the
 * message the cluster acknowledged. */
static void test_backup_from_follower(void **state)
{
    struct cluster *c = *state;
    struct t_done d = {0};
    on_node(c, 0, do_create, "saved", &d);
    assert_int_equal(d.status, SL_OK);
    uint64_t q = d.queue_id;
    struct send_arg s0 = {q, 0, "kept in the backup"};
    on_node(c, 0, do_send, &s0, &d);
    assert_int_equal(d.status, SL_OK);
    int follower = (leader_of(c, 0, 0) + 1) % NODES;
    known_on(c, follower, "saved");
    wait_counts(c, follower, q, 0, 1, 0);

    struct t_env *restored = calloc(1, sizeof *restored);
    snprintf(restored->dir, sizeof restored->dir, "/tmp/sluice-cluster-backup-XXXXXX");
    assert_non_null(mkdtemp(restored->dir));
    struct part_backup_progress pg = {0};
    int files = 0;
    char err[512] = "";
    int rc = part_engine_backup(c->n[follower].e, restored->dir, &pg, count_backup_file, &files,
                                err, sizeof err);
    if (rc != SL_OK) {
        fail_msg("backup: %s", err);
    }
    assert_int_equal(files, 2 + PARTS); /* manifest, catalog, partitions */
    assert_true(atomic_load(&pg.bytes_done) > 0);

    atomic_init(&restored->now, T_START_MS);
    restored->nparts = PARTS;
    restored->durability = PART_DURABILITY_OS;
    uv_loop_init(&restored->loop);
    t_open(restored);
    uint64_t id = 0;
    assert_int_equal(part_queue_find(restored->e, "acme", "saved", &id, NULL), SL_OK);
    assert_int_equal(id, q);
    assert_int_equal(ready_on_engine(restored->e, q), 1);
    t_close(restored);
    uv_run(&restored->loop, UV_RUN_NOWAIT);
    assert_int_equal(uv_loop_close(&restored->loop), 0);
    t_rmrf(restored->dir);
    free(restored);
}

static int do_create_filtered(struct t_env *t, void *arg, struct t_done *d)
{
    struct part_queue_config cfg = part_queue_config_default();
    cfg.filtered = true;
    return part_queue_create(t->c, "acme", arg, &cfg, NULL, 0, NULL, 0, t_ck(d), t_on_done);
}

/* A send with one indexed pair: it needs the schema-8 filter table. */
static int do_send_filtered(struct t_env *t, void *arg, struct t_done *d)
{
    struct send_arg *a = arg;
    struct part_filter_pair pair = {sl_slice_cstr("project"), sl_slice_cstr("p1")};
    struct part_send_entry en = {
        .body = sl_slice_cstr(a->body), .delay_s = -1, .filters = &pair, .filter_count = 1};
    return part_send(t->c, a->q, a->p, &en, 1, t_ck(d), t_on_done);
}

/* An image of an older schema (a cluster upgraded node by node) is
 * migrated by the next leader that runs this build, as one replicated
 * transaction: the partitions' messages survive it and the new schema's
 * filter table serves on every partition afterwards. The test hook makes
 * the next leader take its image back to schema 7 first. */
static void test_older_image_migrated(void **state)
{
    struct cluster *c = *state;
    struct t_done d = {0};
    on_node(c, 0, do_create_filtered, "upgraded", &d);
    assert_int_equal(d.status, SL_OK);
    uint64_t q = d.queue_id;
    for (uint32_t p = 0; p < PARTS; p++) {
        struct send_arg s0 = {q, p, "before the upgrade"};
        on_node(c, 0, do_send, &s0, &d);
        assert_int_equal(d.status, SL_OK);
    }
    /* one transaction: the replication VFS takes one per write */
    atomic_store(&part__test_lead_sql,
                 "BEGIN IMMEDIATE; DROP TRIGGER msg_filter_sync; DROP TABLE msg_filter;"
                 " ALTER TABLE msg DROP COLUMN filtered; PRAGMA user_version=7; COMMIT;");
    int lead = leader_of(c, 0, 0);
    node_close(c, lead); /* a partition it led gets a leader that downgrades, then migrates */
    int via = (lead + 1) % NODES;
    for (uint32_t p = 0; p < PARTS; p++) {
        struct send_arg s1 = {q, p, "after the upgrade"};
        on_node(c, via, do_send_filtered, &s1, &d);
        assert_int_equal(d.status, SL_OK);
        wait_counts(c, via, q, p, 2, 0);
    }
    assert_null(atomic_load(&part__test_lead_sql)); /* the downgrade did happen */
    node_open(c, lead);                             /* it catches up on the migrated images */
    for (uint32_t p = 0; p < PARTS; p++) {
        wait_counts(c, lead, q, p, 2, 0);
    }
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN); /* a dead node's sockets, as sluiced does */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_replicated_failover, setup, teardown),
        cmocka_unit_test_setup_teardown(test_long_poll_wakes_anywhere, setup, teardown),
        cmocka_unit_test_setup_teardown(test_new_leader_sees_its_writes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_own_settings_replicated, setup, teardown),
        cmocka_unit_test_setup_teardown(test_memory_budget_refuses_sends, setup_small_budget,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_leads_go_to_preferred_nodes, setup_placing, teardown),
        cmocka_unit_test_setup_teardown(test_other_partition_count_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pause_replicated, setup, teardown),
        cmocka_unit_test_setup_teardown(test_moves_forwarded, setup, teardown),
        cmocka_unit_test_setup_teardown(test_backup_from_follower, setup, teardown),
        cmocka_unit_test_setup_teardown(test_older_image_migrated, setup, teardown),
        cmocka_unit_test_setup_teardown(test_group_stats, setup, teardown),
        cmocka_unit_test_setup_teardown(test_group_stats_one_node, t_setup, t_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
