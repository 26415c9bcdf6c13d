/*
 * test_part_repl.c -- replicated images (part_repl.c) on three nodes in
 * one process, each with its own Raft thread and its own authenticated
 * Raft port (part_raft_transport.c) on loopback: a write is answered once a majority holds it and
 * every replica then reads it; a follower refuses writes; the leader's
 * death elects another that has every acknowledged write; a node left
 * alone refuses writes rather than accept them; and a node restarted from
 * an empty directory catches up through a snapshot and the log.
 *
 * Waits are bounded (a test that waits too long fails); nothing is timed.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "part_raft_transport.h"
#include "part_repl.h"
#include "part_test_util.h"

#define NODES 3
#define WAIT_MS 20000u

struct node {
    struct part_repl *r;
    struct part_repl_group *g;
    sqlite3 *db; /* the writer's connection while this node leads */
    char dir[128];
};

struct cluster {
    char root[64];
    char addr[NODES][32];
    uint16_t port[NODES];
    struct part__raft_peer peers[NODES];
    struct part_repl_member members[NODES];
    struct node n[NODES];
    unsigned snapshot_entries, snapshot_trailing;
    unsigned election_timeout_ms;
};

static void sleep_ms(unsigned ms)
{
    usleep(ms * 1000u);
}

static void node_start(struct cluster *c, int i, bool bootstrap)
{
    struct node *n = &c->n[i];
    char dir[sizeof n->dir];
    snprintf(dir, sizeof dir, "%s/node%d", c->root, i + 1);
    memcpy(n->dir, dir, sizeof dir);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", n->dir);
    assert_int_equal(system(cmd), 0);
    struct part_repl_options opt = {.node_id = (uint64_t)i + 1,
                                    .dir = n->dir,
                                    .election_timeout_ms = c->election_timeout_ms,
                                    .heartbeat_timeout_ms = 60,
                                    .snapshot_entries = c->snapshot_entries,
                                    .snapshot_trailing = c->snapshot_trailing};
    static const unsigned char secret[] = "a cluster secret of thirty-two bytes or more";
    struct part__raft_node_options port = {.host = "127.0.0.1",
                                           .port = c->port[i],
                                           .peers = c->peers,
                                           .peer_count = NODES,
                                           .secret = secret,
                                           .secret_len = sizeof secret - 1,
                                           .cluster_id = "test-cluster-id"};
    opt.raft_port = &port;
    char err[256];
    int started = part__repl_new(&opt, &n->r, err, sizeof err);
    if (started != SL_OK) {
        fail_msg("part__repl_new: %s", err);
    }
    int rv = part__repl_group_open(n->r, "part-0000", c->members, NODES, bootstrap, NULL, &n->g,
                                   err, sizeof err);
    if (rv != SL_OK) {
        fail_msg("group_open: %s", err);
    }
}

static void node_stop(struct cluster *c, int i)
{
    struct node *n = &c->n[i];
    if (n->db != NULL) {
        sqlite3_close(n->db);
        n->db = NULL;
    }
    part__repl_free(n->r);
    n->r = NULL;
    n->g = NULL;
}

static int setup_with(void **state, unsigned snapshot_entries, unsigned snapshot_trailing,
                      unsigned election_timeout_ms)
{
    struct cluster *c = calloc(1, sizeof *c);
    snprintf(c->root, sizeof c->root, "/tmp/sluice-repl-test-XXXXXX");
    if (mkdtemp(c->root) == NULL) {
        return -1;
    }
    c->snapshot_entries = snapshot_entries;
    c->snapshot_trailing = snapshot_trailing;
    c->election_timeout_ms = election_timeout_ms;
    t_reserve_ports(c->port, NODES);
    for (int i = 0; i < NODES; i++) {
        snprintf(c->addr[i], sizeof c->addr[i], "127.0.0.1:%u", c->port[i]);
        c->members[i] = (struct part_repl_member){.id = (uint64_t)i + 1, .address = c->addr[i]};
        c->peers[i] = (struct part__raft_peer){
            .id = (uint16_t)(i + 1), .host = "127.0.0.1", .port = c->port[i]};
    }
    for (int i = 0; i < NODES; i++) {
        node_start(c, i, true);
    }
    *state = c;
    return 0;
}

static int setup(void **state)
{
    return setup_with(state, 0, 0, 600);
}

/* A leader cut off keeps believing it leads for an election timeout: long
 * enough here that a test acts inside that window on purpose. */
static int setup_slow_step_down(void **state)
{
    return setup_with(state, 0, 0, 3000);
}

static int setup_small_snapshots(void **state)
{
    return setup_with(state, 8, 2, 600);
}

static int teardown(void **state)
{
    struct cluster *c = *state;
    for (int i = 0; i < NODES; i++) {
        if (c->n[i].r != NULL) {
            node_stop(c, i);
        }
    }
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", c->root);
    assert_int_equal(system(cmd), 0);
    free(c);
    return 0;
}

/* The node among the running ones that leads and may write, waiting for
 * one; fails the test if none appears. */
static int wait_leader(struct cluster *c)
{
    for (unsigned waited = 0; waited < WAIT_MS; waited += 20) {
        for (int i = 0; i < NODES; i++) {
            if (c->n[i].r != NULL && part__repl_leading(c->n[i].g)) {
                return i;
            }
        }
        sleep_ms(20);
    }
    fail_msg("no leader within %u ms", WAIT_MS);
    return -1;
}

/* One write transaction of sql on node i. */
static int write_sql(struct cluster *c, int i, const char *sql)
{
    struct node *n = &c->n[i];
    if (n->db == NULL) {
        assert_int_equal(part__repl_group_open_db(n->g, &n->db), SL_OK);
    }
    int rv = part__repl_write_begin(n->g);
    if (rv != SL_OK) {
        return rv;
    }
    char *err = NULL;
    int rc = sqlite3_exec(n->db, sql, NULL, NULL, &err);
    if (rc != SQLITE_OK) {
        fail_msg("%s: %s", sql, err != NULL ? err : "?");
    }
    return part__repl_write_end(n->g, SL_SLICE_LIT("note"), false);
}

static int count_rows(sqlite3 *db, void *arg)
{
    int64_t *out = arg;
    sqlite3_stmt *st = NULL;
    *out = -1;
    if (sqlite3_prepare_v2(db, "SELECT count(*) FROM t", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW) {
        *out = sqlite3_column_int64(st, 0);
    }
    sqlite3_finalize(st);
    return SL_OK;
}

static int64_t rows_on(struct cluster *c, int i)
{
    int64_t n = -1;
    assert_int_equal(part__repl_read(c->n[i].g, count_rows, &n), SL_OK);
    return n;
}

/* Waits until node i's replica holds want rows. */
static void wait_rows(struct cluster *c, int i, int64_t want)
{
    int64_t have = -1;
    for (unsigned waited = 0; waited < WAIT_MS; waited += 20) {
        have = rows_on(c, i);
        if (have == want) {
            return;
        }
        sleep_ms(20);
    }
    fail_msg("node %d holds %lld rows, not %lld", i + 1, (long long)have, (long long)want);
}

static void insert_rows(struct cluster *c, int leader, int count)
{
    for (int k = 0; k < count; k++) {
        assert_int_equal(write_sql(c, leader, "INSERT INTO t(v) VALUES (randomblob(1500))"), SL_OK);
    }
}

static void test_majority_write_reaches_every_replica(void **state)
{
    struct cluster *c = *state;
    int leader = wait_leader(c);
    assert_int_equal(write_sql(c, leader, "CREATE TABLE t(id INTEGER PRIMARY KEY, v BLOB)"), SL_OK);
    insert_rows(c, leader, 5);
    /* Acknowledged means applied on the leader itself, at once. */
    assert_int_equal(rows_on(c, leader), 5);
    for (int i = 0; i < NODES; i++) {
        wait_rows(c, i, 5);
        assert_true(part__repl_applied(c->n[i].g) >= 6);
    }
    /* A follower neither writes nor takes the write lock. */
    int follower = (leader + 1) % NODES;
    assert_int_equal(part__repl_write_begin(c->n[follower].g), SL_EUNAVAIL);
    assert_int_equal(part__repl_leader(c->n[follower].g), (uint64_t)leader + 1);
}

static void test_failover_keeps_acknowledged_writes(void **state)
{
    struct cluster *c = *state;
    int leader = wait_leader(c);
    assert_int_equal(write_sql(c, leader, "CREATE TABLE t(id INTEGER PRIMARY KEY, v BLOB)"), SL_OK);
    insert_rows(c, leader, 3);
    node_stop(c, leader); /* as good as a SIGKILL for the others: no goodbye */

    int next = wait_leader(c);
    assert_int_not_equal(next, leader);
    /* Every write the old leader acknowledged is on the new one. */
    assert_int_equal(rows_on(c, next), 3);
    insert_rows(c, next, 2);
    for (int i = 0; i < NODES; i++) {
        if (c->n[i].r != NULL) {
            wait_rows(c, i, 5);
        }
    }

    /* Alone, the last node must refuse: either it knows it does not lead,
     * or its write finds no majority and fails once it steps down. */
    node_stop(c, next);
    int last = 3 - leader - next;
    int rv = SL_OK;
    for (unsigned waited = 0; waited < WAIT_MS && rv == SL_OK; waited += 20) {
        rv = write_sql(c, last, "INSERT INTO t(v) VALUES (1)");
        if (rv == SL_OK) {
            fail_msg("a node without a majority acknowledged a write");
        }
    }
    assert_int_equal(rv, SL_EUNAVAIL);
}

/* A transaction that writes nothing, on a leader that lost its followers
 * but has not noticed yet: asked to confirm, it is refused rather than
 * answered from what may be a stale image. */
static void test_deposed_leader_cannot_confirm_a_read(void **state)
{
    struct cluster *c = *state;
    int leader = wait_leader(c);
    assert_int_equal(write_sql(c, leader, "CREATE TABLE t(id INTEGER PRIMARY KEY, v BLOB)"), SL_OK);
    for (int i = 0; i < NODES; i++) {
        if (i != leader) {
            node_stop(c, i);
        }
    }
    struct node *n = &c->n[leader];
    assert_true(part__repl_leading(n->g)); /* inside the election timeout */
    assert_int_equal(part__repl_write_begin(n->g), SL_OK);
    assert_int_equal(sqlite3_exec(n->db, "SELECT count(*) FROM t", NULL, NULL, NULL), SQLITE_OK);
    assert_int_equal(part__repl_write_end(n->g, (struct sl_slice){0}, true), SL_EUNAVAIL);
}

static void test_empty_node_catches_up(void **state)
{
    struct cluster *c = *state;
    int leader = wait_leader(c);
    assert_int_equal(write_sql(c, leader, "CREATE TABLE t(id INTEGER PRIMARY KEY, v BLOB)"), SL_OK);
    int lost = (leader + 1) % NODES;
    node_stop(c, lost);
    /* More than the snapshot threshold and its trailing entries: the
     * returning node cannot be served from the log alone. */
    insert_rows(c, leader, 20);

    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", c->n[lost].dir);
    assert_int_equal(system(cmd), 0);
    node_start(c, lost, false);
    wait_rows(c, lost, 20);
    /* And it follows the log from there. */
    insert_rows(c, leader, 3);
    wait_rows(c, lost, 23);
    assert_int_equal(part__repl_write_begin(c->n[lost].g), SL_EUNAVAIL);
}

int main(void)
{
    /* As sluiced does: a peer that died mid-write is an error to handle,
     * not a signal (libuv writes to sockets with write(2)). */
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_majority_write_reaches_every_replica, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failover_keeps_acknowledged_writes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_deposed_leader_cannot_confirm_a_read,
                                        setup_slow_step_down, teardown),
        cmocka_unit_test_setup_teardown(test_empty_node_catches_up, setup_small_snapshots,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
