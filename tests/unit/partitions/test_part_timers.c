/*
 * test_part_timers.c -- delay expiry, lease expiry, retention, receive
 * counts and the dead-letter move, all on an injected clock (no sleeps).
 */
#include "part_test_util.h"

static void test_delay_expiry(void **state)
{
    struct t_env *t = *state;
    uint64_t q = t_create(t, "acme", "delay", NULL);
    struct t_done d;
    t_send_ex(t, q, 0, "later", 10, false, 0, &d);
    assert_int_equal(d.status, SL_OK);
    t_send(t, q, 1, "now");
    struct part_counts c = t_counts(t, q);
    assert_int_equal(c.delayed, 1);
    assert_int_equal(c.ready, 1);
    int64_t backlog, inflight;
    part_tenant_counts(t->e, "acme", &backlog, &inflight);
    assert_int_equal(backlog, 2);

    struct t_done r;
    t_recv(t, q, 10, 30, &r);
    assert_int_equal(r.count, 1);
    assert_string_equal(r.msgs[0].body, "now");
    t_advance(t, 9999);
    t_sync(t);
    assert_int_equal(t_counts(t, q).delayed, 1);
    t_advance(t, 1);
    t_sync(t); /* the writer runs due timers at the head of each batch */
    t_recv(t, q, 10, 30, &r);
    assert_int_equal(r.count, 1);
    assert_string_equal(r.msgs[0].body, "later");
    c = t_counts(t, q);
    assert_int_equal(c.delayed, 0);
    assert_int_equal(c.inflight, 2);
}

static void test_queue_default_delay(void **state)
{
    struct t_env *t = *state;
    struct part_queue_config cfg = part_queue_config_default();
    cfg.delay_s = 3;
    uint64_t q = t_create(t, "acme", "qdelay", &cfg);
    t_send(t, q, 0, "x");
    struct t_done d;
    t_send_ex(t, q, 0, "y", 0, false, 0, &d); /* explicit 0 overrides the default */
    struct part_counts c = t_counts(t, q);
    assert_int_equal(c.delayed, 1);
    assert_int_equal(c.ready, 1);
}

static void test_lease_expiry(void **state)
{
    struct t_env *t = *state;
    uint64_t q = t_create(t, "acme", "lease", NULL);
    t_send(t, q, 0, "work");
    struct t_done r1, r2;
    t_recv(t, q, 1, 5, &r1);
    assert_int_equal(r1.count, 1);
    t_advance(t, 4999);
    t_sync(t);
    assert_int_equal(t_counts(t, q).inflight, 1);
    t_advance(t, 1);
    t_sync(t);
    struct part_counts c = t_counts(t, q);
    assert_int_equal(c.inflight, 0);
    assert_int_equal(c.ready, 1);
    t_advance(t, 1000);
    t_recv(t, q, 1, -1, &r2); /* queue default: 30 s */
    assert_int_equal(r2.count, 1);
    assert_int_equal(r2.msgs[0].receive_count, 2);
    assert_int_equal(r2.msgs[0].first_receive_ms, r1.msgs[0].first_receive_ms);
    /* an extended lease does not expire at the old time */
    struct t_done d;
    t_chvis(t, q, r2.msgs[0].receipt, 100, &d);
    t_advance(t, 30000);
    t_sync(t);
    assert_int_equal(t_counts(t, q).inflight, 1);
    t_advance(t, 70000);
    t_sync(t);
    assert_int_equal(t_counts(t, q).ready, 1);
}

static void test_retention(void **state)
{
    struct t_env *t = *state;
    struct part_queue_config cfg = part_queue_config_default();
    cfg.retention_s = 60;
    uint64_t q = t_create(t, "acme", "ret", &cfg);
    t_send(t, q, 0, "ready");
    t_send(t, q, 1, "leased");
    struct t_done d;
    t_send_ex(t, q, 0, "delayed", 900, false, 0, &d);
    struct t_done r;
    t_recv(t, q, 1, 600, &r);
    t_advance(t, 30000);
    t_send(t, q, 1, "young");
    t_advance(t, 30000);
    t_sync(t);
    struct part_counts c = t_counts(t, q);
    assert_int_equal(c.ready, 1);
    assert_int_equal(c.inflight, 0);
    assert_int_equal(c.delayed, 0);
    int64_t backlog, inflight;
    part_tenant_counts(t->e, "acme", &backlog, &inflight);
    assert_int_equal(backlog, 1);
    assert_int_equal(inflight, 0);
    t_recv(t, q, 10, 30, &r);
    assert_int_equal(r.count, 1);
    assert_string_equal(r.msgs[0].body, "young");
}

static void test_dead_letter_move(void **state)
{
    struct t_env *t = *state;
    uint64_t dlq = t_create(t, "acme", "dead", NULL);
    struct part_queue_config cfg = part_queue_config_default();
    cfg.dlq_target_id = dlq;
    cfg.max_receive_count = 2;
    uint64_t q = t_create(t, "acme", "src", &cfg);
    t_send(t, q, 1, "poison");
    t_send(t, q, 0, "ok");
    struct t_done r, d;
    char id[PART_MSG_ID_LEN + 1] = "";
    for (uint32_t i = 1; i <= 2; i++) {
        t_recv(t, q, 10, 30, &r);
        assert_int_equal(r.count, 2);
        for (size_t k = 0; k < 2; k++) {
            assert_int_equal(r.msgs[k].receive_count, i);
            if (strcmp(r.msgs[k].body, "poison") == 0) {
                snprintf(id, sizeof id, "%s", r.msgs[k].id);
                t_chvis(t, q, r.msgs[k].receipt, 0, &d);
            } else if (i == 2) {
                t_delete(t, q, r.msgs[k].receipt, &d);
            } else {
                t_chvis(t, q, r.msgs[k].receipt, 0, &d);
            }
        }
    }
    /* third receive: over maxReceiveCount, moved instead of delivered */
    t_recv(t, q, 10, 30, &r);
    assert_int_equal(r.count, 0);
    struct part_counts c = t_counts(t, q);
    assert_int_equal(c.ready + c.inflight + c.delayed, 0);
    c = t_counts(t, dlq);
    assert_int_equal(c.ready, 1);
    int64_t backlog, inflight;
    part_tenant_counts(t->e, "acme", &backlog, &inflight);
    assert_int_equal(backlog, 1);

    t_recv(t, dlq, 10, 30, &r);
    assert_int_equal(r.count, 1);
    assert_string_equal(r.msgs[0].id, id);
    assert_string_equal(r.msgs[0].body, "poison");
    assert_int_equal(r.msgs[0].source_queue_id, q);
    assert_int_equal(r.msgs[0].queue_id, dlq);
    assert_int_equal(r.msgs[0].partition, 1); /* same partition */
    assert_int_equal(r.msgs[0].receive_count, 3);
    /* the moved message's old-queue handle no longer applies */
    t_delete(t, dlq, r.msgs[0].receipt, &d);
    assert_int_equal(t_counts(t, dlq).inflight, 0);
}

static void test_many_timers(void **state)
{
    struct t_env *t = *state;
    uint64_t q = t_create(t, "acme", "many", NULL);
    for (int i = 0; i < 40; i++) {
        struct part_send_entry en[5];
        for (int k = 0; k < 5; k++) {
            en[k] =
                (struct part_send_entry){.body = SL_SLICE_LIT("m"), .delay_s = (i * 5 + k) % 20};
        }
        struct t_done d;
        assert_int_equal(part_send(t->c, q, (uint32_t)i % 2, en, 5, t_ck(&d), t_on_done), SL_OK);
        t_wait(t, &d);
    }
    /* delays 0..19 s, 10 messages each */
    for (int s = 0; s < 20; s++) {
        struct part_counts c = t_counts(t, q);
        assert_int_equal(c.ready, 10 * (s + 1));
        assert_int_equal(c.delayed, 200 - 10 * (s + 1));
        t_advance(t, 1000);
        t_sync(t);
    }
}

/* A batch that rolls back undoes what its timers did, so they must fire
 * again: here the lease's own statement fails once (an injected trigger),
 * and the message still becomes receivable once the fault is gone, after
 * the retry delay, instead of staying in flight until a restart. */
static void test_timer_survives_rollback(void **state)
{
    struct t_env *t = *state;
    uint64_t q = t_create(t, "acme", "rollback", NULL);
    t_send(t, q, 0, "m");
    struct t_done r;
    t_recv(t, q, 1, 5, &r);
    assert_int_equal(r.count, 1);

    const char *trigger = "CREATE TRIGGER t_fault BEFORE UPDATE OF state ON msg"
                          " WHEN OLD.body = CAST('m' AS BLOB)"
                          " BEGIN SELECT RAISE(ABORT, 'injected fault'); END;";
    sqlite3 *db = t_fault(t, 0, trigger);

    t_advance(t, 5000);
    struct t_done d;
    assert_int_equal(part_barrier(t->c, 0, t_ck(&d), t_on_done), SL_OK);
    t_wait(t, &d);
    assert_int_equal(d.status, SL_EIO); /* the lease fired, failed, and took the batch */
    assert_int_equal(t_counts(t, q).inflight, 1);
    assert_true(part_engine_partition_ok(t->e, 0));

    t_fault_clear(db);
    t_sync(t); /* not yet: the retry waits a second */
    assert_int_equal(t_counts(t, q).inflight, 1);
    t_advance(t, 1000);
    t_sync(t);
    struct part_counts c = t_counts(t, q);
    assert_int_equal(c.inflight, 0);
    assert_int_equal(c.ready, 1);
    t_recv(t, q, 1, 5, &r);
    assert_int_equal(r.count, 1);
    assert_int_equal(r.msgs[0].receive_count, 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_delay_expiry, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_queue_default_delay, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_lease_expiry, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_retention, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_dead_letter_move, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_many_timers, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_timer_survives_rollback, t_setup, t_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
