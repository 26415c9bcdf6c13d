/*
 * test_part_lanes.c -- the overflow lane (spilled sends, the starvation
 * guard, aging), the tenant statistics the timers keep, fair dequeue by
 * message group, and that all of it survives a restart. Injected clock.
 */
#include "part_test_util.h"

static void send_lane(struct t_env *t, uint64_t q, uint32_t p, const char *body, int32_t delay_s,
                      enum part_lane lane, const char *group)
{
    struct part_send_entry en = {.body = sl_slice_cstr(body),
                                 .delay_s = delay_s,
                                 .lane = lane,
                                 .group_id = group ? sl_slice_cstr(group) : (struct sl_slice){0}};
    struct t_done d;
    assert_int_equal(part_send(t->c, q, p, &en, 1, t_ck(&d), t_on_done), SL_OK);
    t_wait(t, &d);
    assert_int_equal(d.status, SL_OK);
}

static void recv_ex(struct t_env *t, uint64_t q, uint32_t max, uint32_t overflow_every,
                    part_noisy_fn *noisy, struct t_done *d)
{
    t_recv_with(t,
                (struct part_receive_req){.queue_id = q,
                                          .max_messages = max,
                                          .visibility_s = 600,
                                          .overflow_every = overflow_every,
                                          .noisy = noisy},
                d);
    assert_int_equal(d->status, SL_OK);
}

static void test_spilled_send_waits_in_overflow_lane(void **state)
{
    struct t_env *t = *state;
    uint64_t q = t_create(t, "acme", "spill", NULL);
    send_lane(t, q, 0, "spilled", 30, PART_LANE_OVERFLOW, NULL);
    send_lane(t, q, 1, "main", -1, PART_LANE_MAIN, NULL);
    struct part_counts c = t_counts(t, q);
    assert_int_equal(c.delayed, 1); /* SQS counts: one delayed, one ready */
    assert_int_equal(c.ready, 1);
    assert_int_equal(c.overflow_delayed, 1);
    assert_int_equal(c.overflow_ready, 0);

    t_advance(t, 30000);
    t_sync(t);
    c = t_counts(t, q);
    assert_int_equal(c.ready, 2);
    assert_int_equal(c.overflow_ready, 1);
    assert_int_equal(c.overflow_delayed, 0);
    /* The spilled message is older, but the main lane goes first. */
    struct t_done r;
    recv_ex(t, q, 1, 0, NULL, &r);
    assert_int_equal(r.count, 1);
    assert_string_equal(r.msgs[0].body, "main");
    recv_ex(t, q, 10, 0, NULL, &r);
    assert_int_equal(r.count, 1);
    assert_string_equal(r.msgs[0].body, "spilled");
    c = t_counts(t, q);
    assert_int_equal(c.overflow_ready, 0);
    assert_int_equal(c.inflight, 2);
}

static void test_one_receive_takes_main_then_overflow(void **state)
{
    struct t_env *t = *state;
    uint64_t q = t_create(t, "acme", "both", NULL);
    send_lane(t, q, 0, "o1", 0, PART_LANE_OVERFLOW, NULL);
    send_lane(t, q, 1, "m1", 0, PART_LANE_MAIN, NULL);
    send_lane(t, q, 0, "m2", 0, PART_LANE_MAIN, NULL);
    struct t_done r;
    recv_ex(t, q, 10, 0, NULL, &r);
    assert_int_equal(r.count, 3);
    assert_string_equal(r.msgs[2].body, "o1"); /* both partitions' main lane first */
}

static void test_starvation_guard(void **state)
{
    struct t_env *t = *state;
    uint64_t q = t_create(t, "acme", "guard", NULL);
    for (int i = 0; i < 6; i++) {
        char body[16];
        snprintf(body, sizeof body, "o%d", i);
        send_lane(t, q, (uint32_t)i % 2, body, 0, PART_LANE_OVERFLOW, NULL);
        snprintf(body, sizeof body, "m%d", i);
        send_lane(t, q, (uint32_t)i % 2, body, 0, PART_LANE_MAIN, NULL);
    }
    /* With main always ready, every third receive serves overflow. */
    int overflow_served = 0;
    for (int i = 0; i < 6; i++) {
        struct t_done r;
        recv_ex(t, q, 1, 3, NULL, &r);
        assert_int_equal(r.count, 1);
        overflow_served += r.msgs[0].body[0] == 'o';
    }
    assert_int_equal(overflow_served, 2);
    /* Without the guard the main lane would always win. */
    struct t_done r;
    recv_ex(t, q, 1, 0, NULL, &r);
    assert_int_equal(r.msgs[0].body[0], 'm');
}

static void test_aging_moves_old_ready_messages(void **state)
{
    struct t_env *t = *state;
    part_tenant_set_aging(t->e, "acme", 60000);
    uint64_t q = t_create(t, "acme", "aging", NULL);
    send_lane(t, q, 0, "old", -1, PART_LANE_MAIN, NULL);
    send_lane(t, q, 1, "old2", -1, PART_LANE_MAIN, NULL);
    t_advance(t, 59999);
    t_sync(t);
    assert_int_equal(t_counts(t, q).overflow_ready, 0);
    t_advance(t, 1);
    t_sync(t);
    struct part_counts c = t_counts(t, q);
    assert_int_equal(c.ready, 2); /* still ready, as SQS counts it */
    assert_int_equal(c.overflow_ready, 2);
    struct part_tenant_stats st;
    part_tenant_stats(t->e, "acme", &st);
    assert_int_equal(st.aged, 2);
    assert_int_equal(c.oldest_ready_ms, T_START_MS);

    /* Fresh work now goes before the sidelined backlog. */
    send_lane(t, q, 0, "fresh", -1, PART_LANE_MAIN, NULL);
    struct t_done r;
    recv_ex(t, q, 1, 0, NULL, &r);
    assert_string_equal(r.msgs[0].body, "fresh");
    recv_ex(t, q, 10, 0, NULL, &r);
    assert_int_equal(r.count, 2);

    /* Another tenant without aging keeps its old messages in main. */
    uint64_t other = t_create(t, "globex", "steady", NULL);
    send_lane(t, other, 0, "x", -1, PART_LANE_MAIN, NULL);
    t_advance(t, 3600000);
    t_sync(t);
    assert_int_equal(t_counts(t, other).overflow_ready, 0);
    part_tenant_stats(t->e, "globex", &st);
    assert_int_equal(st.aged, 0);
}

static void test_aging_set_later_applies_on_next_commit(void **state)
{
    struct t_env *t = *state;
    uint64_t q = t_create(t, "acme", "late", NULL);
    send_lane(t, q, 0, "a", -1, PART_LANE_MAIN, NULL);
    t_advance(t, 120000);
    part_tenant_set_aging(t->e, "acme", 60000);
    send_lane(t, q, 0, "b", -1, PART_LANE_MAIN, NULL); /* a commit touching the queue */
    t_sync(t);
    t_sync(t);
    struct part_counts c = t_counts(t, q);
    assert_int_equal(c.overflow_ready, 1);
    assert_int_equal(c.ready, 2);
}

static void test_tenant_stats_expired_and_dead_lettered(void **state)
{
    struct t_env *t = *state;
    uint64_t dlq = t_create(t, "acme", "dead", NULL);
    struct part_queue_config cfg = part_queue_config_default();
    cfg.retention_s = 60;
    cfg.dlq_target_id = dlq;
    cfg.max_receive_count = 1;
    uint64_t q = t_create(t, "acme", "src", &cfg);
    t_send(t, q, 0, "poison");
    struct t_done r;
    t_recv(t, q, 1, 0, &r); /* visibility 0: ready again at once */
    assert_int_equal(r.count, 1);
    t_sync(t);
    t_recv(t, q, 1, 30, &r); /* second receive: over maxReceiveCount */
    assert_int_equal(r.count, 0);
    assert_int_equal(t_counts(t, dlq).ready, 1);
    t_send(t, q, 1, "stale");
    t_advance(t, 60000);
    t_sync(t);
    struct part_tenant_stats st;
    part_tenant_stats(t->e, "acme", &st);
    assert_int_equal(st.dead_lettered, 1);
    /* only "stale": a dead-lettered message expires at its send time plus
     * the DLQ's retention (4 days here), as in SQS */
    assert_int_equal(st.expired, 1);
    assert_int_equal(t_counts(t, dlq).ready, 1);
    part_tenant_stats(t->e, "nobody", &st);
    assert_int_equal(st.expired + st.aged + st.dead_lettered, 0);
}

/* The policy's rule (SQS fair queues): over 10 % and at least 30. */
static bool noisy_rule(uint64_t group_inflight, uint64_t queue_inflight)
{
    return group_inflight >= 30 && group_inflight * 10 > queue_inflight;
}

static int count_group(const struct t_done *r, const char *group)
{
    int n = 0;
    for (size_t i = 0; i < r->count; i++) {
        n += strcmp(r->msgs[i].group, group) == 0;
    }
    return n;
}

static void test_fair_dequeue_favours_quiet_groups(void **state)
{
    struct t_env *t = *state;
    uint64_t q = t_create(t, "acme", "fair", NULL);
    /* One group floods a single partition ahead of two quiet ones. */
    for (int i = 0; i < 80; i++) {
        send_lane(t, q, 0, "flood", -1, PART_LANE_MAIN, "big");
        t_advance(t, 1);
    }
    for (int i = 0; i < 3; i++) {
        send_lane(t, q, 0, "quiet", -1, PART_LANE_MAIN, "small");
        send_lane(t, q, 0, "none", -1, PART_LANE_MAIN, NULL);
    }
    struct t_done r;
    for (int i = 0; i < 3; i++) { /* 30 in flight, all "big": not yet noisy */
        recv_ex(t, q, 10, 0, noisy_rule, &r);
        assert_int_equal(count_group(&r, "big"), 10);
    }
    /* Now "big" holds 30 of 30 in flight: the quiet messages go first. */
    recv_ex(t, q, 10, 0, noisy_rule, &r);
    assert_int_equal(r.count, 10);
    assert_int_equal(count_group(&r, "small"), 3);
    assert_int_equal(count_group(&r, ""), 3);
    assert_int_equal(count_group(&r, "big"), 4); /* noisy, but never refused */

    /* Without the rule, a receive takes the head whatever the group. */
    uint64_t plain = t_create(t, "acme", "plain", NULL);
    for (int i = 0; i < 40; i++) {
        send_lane(t, plain, 0, "flood", -1, PART_LANE_MAIN, "big");
    }
    t_advance(t, 1);
    send_lane(t, plain, 0, "quiet", -1, PART_LANE_MAIN, "small");
    for (int i = 0; i < 4; i++) {
        recv_ex(t, plain, 10, 0, NULL, &r);
        assert_int_equal(count_group(&r, "big"), 10);
    }
}

static void test_group_counts_follow_deletes(void **state)
{
    struct t_env *t = *state;
    uint64_t q = t_create(t, "acme", "groups", NULL);
    for (int i = 0; i < 30; i++) {
        send_lane(t, q, 0, "f", -1, PART_LANE_MAIN, "fill");
    }
    t_advance(t, 1);
    for (int i = 0; i < 70; i++) {
        send_lane(t, q, 0, "g", -1, PART_LANE_MAIN, "big");
    }
    t_advance(t, 1);
    send_lane(t, q, 0, "s", -1, PART_LANE_MAIN, "small");
    struct t_done r;
    for (int i = 0; i < 3; i++) { /* "fill": 30 of 30 in flight, noisy */
        recv_ex(t, q, 10, 0, noisy_rule, &r);
        assert_int_equal(count_group(&r, "fill"), 10);
    }
    struct t_done big[3];
    for (int i = 0; i < 3; i++) { /* "big" is quiet until it holds 30 */
        recv_ex(t, q, 10, 0, noisy_rule, &big[i]);
        assert_int_equal(count_group(&big[i], "big"), 10);
    }
    /* Deleting what "big" holds makes it quiet again: the head (its
     * messages) is served in order, the small group waits its turn. */
    for (int i = 0; i < 3; i++) {
        for (size_t k = 0; k < big[i].count; k++) {
            struct t_done d;
            t_delete(t, q, big[i].msgs[k].receipt, &d);
        }
    }
    recv_ex(t, q, 10, 0, noisy_rule, &r);
    assert_int_equal(count_group(&r, "big"), 10);
    /* ... and at 30 of 60 in flight it is noisy once more. */
    for (int i = 0; i < 2; i++) {
        recv_ex(t, q, 10, 0, noisy_rule, &r);
    }
    recv_ex(t, q, 10, 0, noisy_rule, &r);
    assert_int_equal(count_group(&r, "small"), 1);
}

static void test_lanes_and_groups_survive_restart(void **state)
{
    struct t_env *t = *state;
    uint64_t q = t_create(t, "acme", "restart", NULL);
    send_lane(t, q, 0, "o", 0, PART_LANE_OVERFLOW, NULL);
    send_lane(t, q, 1, "d", 60, PART_LANE_OVERFLOW, NULL);
    for (int i = 0; i < 40; i++) {
        send_lane(t, q, 0, "g", -1, PART_LANE_MAIN, "big");
    }
    t_advance(t, 1);
    send_lane(t, q, 0, "s", -1, PART_LANE_MAIN, "small");
    struct t_done r;
    for (int i = 0; i < 3; i++) {
        recv_ex(t, q, 10, 0, NULL, &r);
    }
    t_close(t);
    t_open(t);
    struct part_counts c = t_counts(t, q);
    assert_int_equal(c.overflow_ready, 1);
    assert_int_equal(c.overflow_delayed, 1);
    assert_int_equal(c.inflight, 30);
    /* The group counts were rebuilt: "big" is noisy after the restart. */
    recv_ex(t, q, 2, 0, noisy_rule, &r);
    assert_int_equal(count_group(&r, "small"), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_spilled_send_waits_in_overflow_lane, t_setup,
                                        t_teardown),
        cmocka_unit_test_setup_teardown(test_one_receive_takes_main_then_overflow, t_setup,
                                        t_teardown),
        cmocka_unit_test_setup_teardown(test_starvation_guard, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_aging_moves_old_ready_messages, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_aging_set_later_applies_on_next_commit, t_setup,
                                        t_teardown),
        cmocka_unit_test_setup_teardown(test_tenant_stats_expired_and_dead_lettered, t_setup,
                                        t_teardown),
        cmocka_unit_test_setup_teardown(test_fair_dequeue_favours_quiet_groups, t_setup,
                                        t_teardown),
        cmocka_unit_test_setup_teardown(test_group_counts_follow_deletes, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_lanes_and_groups_survive_restart, t_setup, t_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
