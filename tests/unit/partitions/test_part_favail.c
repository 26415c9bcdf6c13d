/*
 * test_part_favail.c -- FIFO receives choose among available groups
 * (part_gheap.c) without reading locked groups' backlogs: the heap alone
 * against a sorted model; a receive's SQLite steps with a locked group of
 * 50,000 ready rows ahead of the others; and every event that frees or
 * fills a group followed by a receive that gets it, once with the
 * announcement and once with it skipped (part__test_skip_announce), when
 * only the change generation's rebuild can find the group; a hand-over or
 * a rollback found at once while other groups keep the heap busy; and a
 * receive's second pass not taking again what its first put back.
 */
#include "part_test_util.h"

#include "part_batch.h"
#include "part_gheap.h"

/* ---- the heap alone ---------------------------------------------------- */

struct model {
    int64_t priority, id;
    char group[16];
};

static int model_cmp(const void *a, const void *b)
{
    const struct model *x = a, *y = b;
    if (x->priority != y->priority) {
        return x->priority < y->priority ? -1 : 1;
    }
    return x->id < y->id ? -1 : x->id > y->id;
}

static void test_heap_orders_and_dedups(void **state)
{
    (void)state;
    struct part_gheap *h = part__gheap_new();
    enum { N = 2000 };
    static struct model m[N];
    size_t n = 0;
    uint64_t x = 88172645463325252ull; /* xorshift: the same run every time */
    for (size_t i = 0; i < N; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        struct model e = {(int64_t)(x % 50), (int64_t)i, ""};
        snprintf(e.group, sizeof e.group, "g%zu", i);
        assert_true(part__gheap_push(h, e.priority, e.id, e.group));
        /* a second announcement of a group with an entry adds nothing */
        assert_false(part__gheap_push(h, PART_GHEAD_UNKNOWN, 0, e.group));
        m[n++] = e;
    }
    assert_int_equal(part__gheap_size(h), N);
    qsort(m, n, sizeof m[0], model_cmp);
    struct part_gheap_entry en;
    for (size_t i = 0; i < n; i++) {
        assert_true(part__gheap_pop(h, &en));
        assert_int_equal(en.priority, m[i].priority);
        assert_int_equal(en.id, m[i].id);
        assert_string_equal(en.group, m[i].group);
        /* popped, a group may be pushed again (under its new head) */
        if (i == 0) {
            assert_true(part__gheap_push(h, INT64_MAX, 0, en.group));
        }
        free(en.group);
    }
    assert_true(part__gheap_pop(h, &en));
    assert_int_equal(en.priority, INT64_MAX);
    assert_string_equal(en.group, m[0].group);
    free(en.group);
    assert_false(part__gheap_pop(h, &en));
    /* an unknown head surfaces before every known one */
    assert_true(part__gheap_push(h, 1, 1, "known"));
    assert_true(part__gheap_push(h, PART_GHEAD_UNKNOWN, 0, "unknown"));
    assert_true(part__gheap_pop(h, &en));
    assert_string_equal(en.group, "unknown");
    free(en.group);
    part__gheap_free(h); /* frees "known" with it */
}

/* ---- through a writer -------------------------------------------------- */

static int setup_one(void **state)
{
    return t_setup_n(state, 1);
}

static int teardown_announce(void **state)
{
    atomic_store(&part__test_skip_announce, false);
    return t_teardown(state);
}

static uint64_t select_steps(struct t_env *t)
{
    struct part_partition_stats s;
    assert_int_equal(part_engine_stats(t->e, 0, &s), SL_OK);
    return s.fifo_select_steps;
}

/* Sends n messages of group (bodies prefix0..) to partition 0, ten a job. */
static void send_group(struct t_env *t, uint64_t q, const char *group, const char *prefix, size_t n)
{
    static char bodies[PART_MAX_BATCH][48];
    struct part_send_entry en[PART_MAX_BATCH];
    for (size_t i = 0; i < n;) {
        size_t k = 0;
        for (; k < PART_MAX_BATCH && i < n; k++, i++) {
            snprintf(bodies[k], sizeof bodies[k], "%s%zu", prefix, i);
            en[k] = (struct part_send_entry){.body = sl_slice_cstr(bodies[k]),
                                             .group_id = sl_slice_cstr(group),
                                             .dedup_id = sl_slice_cstr(bodies[k]),
                                             .delay_s = -1};
        }
        struct t_done d;
        assert_int_equal(part_send(t->c, q, 0, en, k, t_ck(&d), t_on_done), SL_OK);
        t_wait(t, &d);
        assert_int_equal(d.status, SL_OK);
        assert_int_equal(d.count, k);
    }
}

/* One group of 50,000 ready rows with one in flight, ahead of 100 groups
 * of 3: draining the 100 groups never reads the locked backlog. A walk of
 * the ready rows would step at least once per row it passes over. */
static void test_locked_backlog_not_walked(void **state)
{
    struct t_env *t = *state;
    enum { BACKLOG = 50000, GROUPS = 100, EACH = 3 };
    uint64_t q = t_create_fifo(t, "hot.fifo", false);
    send_group(t, q, "hot", "h", BACKLOG);
    struct t_done r, d;
    t_recv(t, q, 1, 300, &r);
    assert_int_equal(r.count, 1);
    assert_string_equal(r.msgs[0].body, "h0");
    for (int g = 0; g < GROUPS; g++) {
        char group[16], prefix[16];
        snprintf(group, sizeof group, "g%03d", g);
        snprintf(prefix, sizeof prefix, "g%03d-", g);
        send_group(t, q, group, prefix, EACH);
    }
    uint64_t total = 0, worst = 0;
    size_t got = 0, receives = 0;
    size_t next[GROUPS] = {0};
    for (;;) {
        uint64_t before = select_steps(t);
        t_recv(t, q, 10, 300, &r);
        uint64_t steps = select_steps(t) - before;
        total += steps;
        worst = steps > worst ? steps : worst;
        receives++;
        if (r.count == 0) {
            break;
        }
        /* each group in order from its head */
        for (size_t i = 0; i < r.count; i++) {
            unsigned g = 0, k = 0;
            assert_int_equal(sscanf(r.msgs[i].body, "g%3u-%u", &g, &k), 2);
            assert_true(g < GROUPS);
            assert_int_equal(k, next[g]++);
            t_delete(t, q, r.msgs[i].receipt, &d);
        }
        got += r.count;
        assert_true(receives <= (size_t)GROUPS * EACH);
    }
    assert_int_equal(got, GROUPS * EACH);
    print_message("fifo select: %zu receives, %llu VM steps in all, %llu at most in one"
                  " (locked backlog %d rows)\n",
                  receives, (unsigned long long)total, (unsigned long long)worst, BACKLOG);
    assert_true(worst < BACKLOG / 10);
    assert_true(total < BACKLOG);
}

/* Each group's messages come in order, group-major, the best head first. */
static void test_order_across_groups(void **state)
{
    struct t_env *t = *state;
    uint64_t q = t_create_fifo(t, "order.fifo", false);
    send_group(t, q, "b", "b", 2);
    send_group(t, q, "a", "a", 2);
    send_group(t, q, "b", "c", 1); /* c0 joins b behind b1: b's head stays b0 */
    struct t_done r;
    t_recv(t, q, 4, 30, &r);
    assert_int_equal(r.count, 4);
    assert_string_equal(r.msgs[0].body, "b0");
    assert_string_equal(r.msgs[1].body, "b1");
    assert_string_equal(r.msgs[2].body, "c0");
    assert_string_equal(r.msgs[3].body, "a0");
}

/* ---- events that make a group available -------------------------------- */

/* A FIFO queue name unique to the run (announce or not). */
static uint64_t fifo_named(struct t_env *t, const char *base, bool skip,
                           const struct part_queue_config *cfg)
{
    char name[64];
    snprintf(name, sizeof name, "%s-%d.fifo", base, skip);
    if (cfg != NULL) {
        return t_create(t, "acme", name, cfg);
    }
    return t_create_fifo(t, name, false);
}

/* hot holds a message in flight (a locked group the receives pass). */
static void lock_hot(struct t_env *t, uint64_t q)
{
    struct t_done r;
    send_group(t, q, "hot", "h", 5);
    t_recv(t, q, 1, 3600, &r);
    assert_int_equal(r.count, 1);
}

static void expect(struct t_env *t, uint64_t q, const char *body)
{
    struct t_done r;
    t_recv(t, q, 10, 30, &r);
    if (body == NULL) {
        assert_int_equal(r.count, 0);
    } else {
        assert_int_equal(r.count, 1);
        assert_string_equal(r.msgs[0].body, body);
    }
}

static void run_events(struct t_env *t, bool skip)
{
    atomic_store(&part__test_skip_announce, skip);
    struct t_done d, r;

    /* a send to an idle group */
    uint64_t q = fifo_named(t, "send", skip, NULL);
    lock_hot(t, q);
    expect(t, q, NULL);
    send_group(t, q, "g", "g", 1);
    expect(t, q, "g0");

    /* a delete frees the group's next message; visibility 0 brings one back */
    q = fifo_named(t, "del", skip, NULL);
    lock_hot(t, q);
    send_group(t, q, "g", "g", 2);
    t_recv(t, q, 1, 30, &r);
    assert_string_equal(r.msgs[0].body, "g0");
    expect(t, q, NULL);
    t_delete(t, q, r.msgs[0].receipt, &d);
    t_recv(t, q, 10, 30, &r);
    assert_int_equal(r.count, 1);
    assert_string_equal(r.msgs[0].body, "g1");
    expect(t, q, NULL);
    t_chvis(t, q, r.msgs[0].receipt, 0, &d);
    expect(t, q, "g1");

    /* a lease runs out */
    q = fifo_named(t, "lease", skip, NULL);
    lock_hot(t, q);
    send_group(t, q, "g", "g", 1);
    expect(t, q, "g0"); /* 30 s */
    expect(t, q, NULL);
    t_advance(t, 30 * 1000ull);
    part_engine_kick(t->e);
    t_sync(t);
    expect(t, q, "g0");

    /* a delayed message's timer */
    struct part_queue_config dc = part_queue_config_default();
    dc.fifo = true;
    dc.delay_s = 5;
    q = fifo_named(t, "delay", skip, &dc);
    send_group(t, q, "g", "g", 1);
    expect(t, q, NULL);
    t_advance(t, 5 * 1000ull);
    part_engine_kick(t->e);
    t_sync(t);
    expect(t, q, "g0");

    /* a dead-letter move in, then a redrive back in */
    uint64_t dlq = fifo_named(t, "dead", skip, NULL);
    struct part_queue_config sc = part_queue_config_default();
    sc.fifo = true;
    sc.dlq_target_id = dlq;
    sc.max_receive_count = 1;
    q = fifo_named(t, "src", skip, &sc);
    send_group(t, q, "g", "g", 1);
    t_recv(t, q, 10, 0, &r); /* received once, visible again at once */
    assert_int_equal(r.count, 1);
    t_sync(t);
    expect(t, dlq, NULL);
    expect(t, q, NULL); /* over the count: it moves */
    t_recv(t, dlq, 10, 0, &r);
    assert_int_equal(r.count, 1);
    assert_string_equal(r.msgs[0].body, "g0");
    t_sync(t);
    expect(t, q, NULL);
    struct part_move_req req = {.queue_id = dlq, .partition = 0, .max_messages = 10};
    t_ck(&d);
    assert_int_equal(part_move(t->c, &req, (struct part_cookie){&d, 0, 0}, t_on_moved), SL_OK);
    t_wait(t, &d);
    assert_int_equal(d.status, SL_OK);
    expect(t, q, "g0");

    /* a restart: the first receive rebuilds */
    q = fifo_named(t, "restart", skip, NULL);
    lock_hot(t, q);
    send_group(t, q, "g", "g", 1);
    t_close(t);
    t_open(t);
    atomic_store(&part__test_skip_announce, skip);
    t_recv(t, q, 10, 30, &r); /* hot's lease survived: its rows stay locked */
    assert_int_equal(r.count, 1);
    assert_string_equal(r.msgs[0].body, "g0");
}

/* Sends g0 to q and makes a receive of it fail (an injected fault on the
 * lease), so that its batch rolls back after popping g. */
static void receive_g0_and_roll_back(struct t_env *t, uint64_t q)
{
    send_group(t, q, "g", "g", 1);
    sqlite3 *db = t_fault(t, 0,
                          "CREATE TRIGGER t_fault BEFORE UPDATE OF state ON msg"
                          " BEGIN SELECT RAISE(ABORT, 'injected fault'); END;");
    struct t_done r;
    t_recv(t, q, 10, 30, &r);
    assert_int_not_equal(r.status, SL_OK);
    t_fault_clear(db);
}

/* A receive that popped a group and rolled back (an injected fault on
 * the lease) leaves it free: the next receive finds it, announced or not. */
static void test_rolled_back_receive(void **state)
{
    struct t_env *t = *state;
    atomic_store(&part__test_skip_announce, true);
    uint64_t q = t_create_fifo(t, "undo.fifo", false);
    receive_g0_and_roll_back(t, q);
    expect(t, q, "g0");
}

static void test_events_announced(void **state)
{
    run_events(*state, false);
}

static void test_events_found_by_rebuild(void **state)
{
    run_events(*state, true);
}

/* A group's first partition drains: the next one may lease it. Two
 * partitions; g holds b0 on 0 and a (moved in) on 1. */
static void run_handover(struct t_env *t, bool skip)
{
    atomic_store(&part__test_skip_announce, skip);
    char dname[32], xname[32];
    snprintf(dname, sizeof dname, "hand-%d.fifo", skip);
    snprintf(xname, sizeof xname, "handx-%d.fifo", skip);
    uint64_t dest = t_create_fifo(t, dname, false);
    uint64_t x = t_create_fifo(t, xname, false);
    struct t_done d, r;
    t_send_fifo(t, dest, 0, "b0", "g", "b0", &d);
    t_send_fifo(t, x, 1, "a", "g", "a", &d);
    assert_int_equal(d.sent_part[0], 1);
    struct part_move_req req = {
        .queue_id = x, .partition = 1, .dest_queue_id = dest, .max_messages = 10};
    t_ck(&d);
    assert_int_equal(part_move(t->c, &req, (struct part_cookie){&d, 0, 0}, t_on_moved), SL_OK);
    t_wait(t, &d);
    t_recv(t, dest, 10, 30, &r);
    assert_int_equal(r.count, 1);
    assert_string_equal(r.msgs[0].body, "b0");
    expect(t, dest, NULL); /* partition 1 may not lease g yet */
    t_delete(t, dest, r.msgs[0].receipt, &d);
    t_sync(t);
    t_recv(t, dest, 10, 30, &r);
    assert_int_equal(r.count, 1);
    assert_string_equal(r.msgs[0].body, "a");
    assert_int_equal(r.msgs[0].partition, 1);
}

static void test_handover_announced(void **state)
{
    run_handover(*state, false);
}

static void test_handover_found_by_rebuild(void **state)
{
    run_handover(*state, true);
}

/* Up to 50 rounds of: one message of a new group to partition p, then a
 * receive of one, deleted unless it is `wanted`. Returns the round whose
 * receive got `wanted`, or -1: a stream that keeps the heap from ever
 * running dry. */
static int stream_until(struct t_env *t, uint64_t q, uint32_t p, const char *wanted)
{
    struct t_done d, r;
    for (int k = 0; k < 50; k++) {
        char g[16];
        snprintf(g, sizeof g, "o%d", k);
        t_send_fifo(t, q, p, g, g, g, &d);
        assert_int_equal(d.sent_part[0], p);
        t_recv(t, q, 1, 30, &r);
        assert_int_equal(r.count, 1);
        if (strcmp(r.msgs[0].body, wanted) == 0) {
            return k;
        }
        t_delete(t, q, r.msgs[0].receipt, &d);
    }
    return -1;
}

/* After a hand-over, partition 1 finds g at once (its head "a" is the
 * queue's oldest message) although a stream of other groups keeps its
 * heap from running dry: a hand-over announces nothing, so it forces a
 * rebuild by itself. */
static void test_handover_starved_by_busy_heap(void **state)
{
    struct t_env *t = *state;
    uint64_t dest = t_create_fifo(t, "stv.fifo", false);
    uint64_t x = t_create_fifo(t, "stvx.fifo", false);
    struct t_done d, r;
    t_send_fifo(t, dest, 0, "b0", "g", "b0", &d);
    t_send_fifo(t, x, 1, "a", "g", "a", &d);
    struct part_move_req req = {
        .queue_id = x, .partition = 1, .dest_queue_id = dest, .max_messages = 10};
    t_ck(&d);
    assert_int_equal(part_move(t->c, &req, (struct part_cookie){&d, 0, 0}, t_on_moved), SL_OK);
    t_wait(t, &d);
    t_recv(t, dest, 10, 30, &r);
    assert_int_equal(r.count, 1);
    assert_string_equal(r.msgs[0].body, "b0");
    t_recv(t, dest, 10, 30, &d); /* partition 1 pops g and drops it */
    assert_int_equal(d.count, 0);
    t_delete(t, dest, r.msgs[0].receipt, &d);
    t_sync(t);
    assert_int_equal(stream_until(t, dest, 1, "a"), 0);
}

/* A rolled-back receive popped g's heap entry; the rollback forces a
 * rebuild, so g is found at once although a stream of other groups keeps
 * the heap from running dry. */
static void test_rollback_starved_by_busy_heap(void **state)
{
    struct t_env *t = *state;
    uint64_t q = t_create_fifo(t, "undo2.fifo", false);
    receive_g0_and_roll_back(t, q);
    assert_int_equal(stream_until(t, q, 0, "g0"), 0);
}

/* A receive that comes back to a partition (its second lane's pass)
 * after a visibility of 0 put its first pass's leases back must not take
 * the same messages again: one reply, each message once. */
static void test_revisit_takes_again(void **state)
{
    struct t_env *t = *state;
    uint64_t q = t_create_fifo(t, "rv.fifo", false);
    struct t_done d, r;
    t_send_fifo(t, q, 0, "k0", "k", "k0", &d);
    t_recv(t, q, 1, 30, &r); /* k locked */
    assert_int_equal(r.count, 1);
    struct part_send_entry en = {.body = sl_slice_cstr("k1"),
                                 .group_id = sl_slice_cstr("k"),
                                 .dedup_id = sl_slice_cstr("k1"),
                                 .delay_s = -1,
                                 .lane = PART_LANE_OVERFLOW};
    assert_int_equal(part_send(t->c, q, 0, &en, 1, t_ck(&d), t_on_done), SL_OK);
    t_wait(t, &d);
    t_send_fifo(t, q, 0, "g0", "g", "g0", &d);
    t_send_fifo(t, q, 0, "g1", "g", "g1", &d);
    t_recv(t, q, 10, 0, &r);
    assert_int_equal(r.count, 2);
    assert_string_equal(r.msgs[0].body, "g0");
    assert_string_equal(r.msgs[1].body, "g1");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_heap_orders_and_dedups),
        cmocka_unit_test_setup_teardown(test_locked_backlog_not_walked, setup_one, t_teardown),
        cmocka_unit_test_setup_teardown(test_order_across_groups, setup_one, t_teardown),
        cmocka_unit_test_setup_teardown(test_rolled_back_receive, setup_one, teardown_announce),
        cmocka_unit_test_setup_teardown(test_events_announced, setup_one, teardown_announce),
        cmocka_unit_test_setup_teardown(test_events_found_by_rebuild, setup_one, teardown_announce),
        cmocka_unit_test_setup_teardown(test_handover_announced, t_setup, teardown_announce),
        cmocka_unit_test_setup_teardown(test_handover_found_by_rebuild, t_setup, teardown_announce),
        cmocka_unit_test_setup_teardown(test_handover_starved_by_busy_heap, t_setup,
                                        teardown_announce),
        cmocka_unit_test_setup_teardown(test_rollback_starved_by_busy_heap, setup_one,
                                        teardown_announce),
        cmocka_unit_test_setup_teardown(test_revisit_takes_again, setup_one, teardown_announce),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
