/*
 * test_part_sched.c -- what a partition's writer publishes about its load
 * (the send choice's signal) and how it shares its group commits among
 * tenants.
 */
#include "part_test_util.h"

/* The load counts every tenant's stored ready and delayed messages, in
 * both lanes, and forgets what is in flight or deleted; a restart
 * rebuilds it from the file. */
static void test_load_counts_everyone(void **state)
{
    struct t_env *t = *state;
    uint64_t a = t_create(t, "acme", "a", NULL);
    uint64_t b = t_create(t, "bolt", "b", NULL);
    assert_int_equal(part_engine_partition_load(t->e, 0), 0);
    for (int i = 0; i < 5; i++) {
        t_send(t, a, 0, "a");
    }
    t_send(t, b, 0, "b");
    struct t_done d;
    t_send_ex(t, b, 1, "later", 60, false, 0, &d); /* delayed counts too */
    assert_int_equal(d.status, SL_OK);
    assert_int_equal(part_engine_partition_load(t->e, 0), 6);
    assert_int_equal(part_engine_partition_load(t->e, 1), 1);
    assert_int_equal(part_engine_partition_load(t->e, 99), 0);

    struct t_done r;
    t_recv(t, a, 2, 30, &r); /* in flight: no longer waiting */
    assert_int_equal(r.count, 2);
    assert_int_equal(part_engine_partition_load(t->e, 0), 4);
    t_delete(t, a, r.msgs[0].receipt, &d);
    assert_int_equal(part_engine_partition_load(t->e, 0), 4);

    struct part_partition_stats st;
    assert_int_equal(part_engine_stats(t->e, 0, &st), SL_OK);
    assert_int_equal(st.backlog, 4);
    assert_int_equal(st.queued_cost, 0);

    t_close(t);
    t_open(t);
    /* the other received message is still in flight: 4 still */
    assert_int_equal(part_engine_partition_load(t->e, 0), 4);
    assert_int_equal(part_engine_partition_load(t->e, 1), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_load_counts_everyone, t_setup, t_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
