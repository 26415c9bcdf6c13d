/*
 * test_part_poll.c -- long polling: woken by a send, a delay expiry or a
 * visibility change, in order, one waiter per message; cancellation,
 * an early end (the client half-closed), timeout, drain, and a deleted queue; a queue paused for
 * dequeue leases nothing, not even to a receive that was waiting before the pause.
 */
#include "part_test_util.h"

static void poll_start(struct t_env *t, uint64_t q, uint32_t wait_ms, struct t_done *d,
                       uint64_t *ticket)
{
    uint32_t parts[] = {0, 1};
    struct part_receive_req req = {.queue_id = q,
                                   .partitions = parts,
                                   .partition_count = 2,
                                   .max_messages = 10,
                                   .visibility_s = 30,
                                   .wait_ms = wait_ms};
    assert_int_equal(part_receive(t->c, &req, t_ck(d), t_on_done, ticket), SL_OK);
}

static void spin(struct t_env *t)
{
    for (int i = 0; i < 5; i++) {
        uv_run(&t->loop, UV_RUN_NOWAIT);
    }
}

static void test_wake_by_send(void **state)
{
    struct t_env *t = *state;
    uint64_t q = t_create(t, "acme", "lp", NULL);
    struct t_done w;
    poll_start(t, q, 15000, &w, NULL);
    t_sync(t);
    spin(t);
    assert_false(w.done);
    t_send(t, q, 1, "hello");
    t_wait(t, &w);
    assert_int_equal(w.status, SL_OK);
    assert_int_equal(w.count, 1);
    assert_string_equal(w.msgs[0].body, "hello");
}

static void test_waiters_in_order_one_per_message(void **state)
{
    struct t_env *t = *state;
    uint64_t q = t_create(t, "acme", "order", NULL);
    struct t_done w[3];
    uint64_t ticket[3];
    for (int i = 0; i < 3; i++) {
        poll_start(t, q, 15000, &w[i], &ticket[i]);
    }
    t_send(t, q, 0, "first");
    t_wait(t, &w[0]);
    assert_int_equal(w[0].count, 1);
    t_sync(t);
    spin(t);
    assert_false(w[1].done);
    assert_false(w[2].done);
    t_send(t, q, 1, "second");
    t_wait(t, &w[1]);
    assert_string_equal(w[1].msgs[0].body, "second");
    t_sync(t);
    spin(t);
    assert_false(w[2].done);

    /* a cancelled waiter takes nothing */
    part_receive_cancel(t->c, ticket[2]);
    t_wait(t, &w[2]);
    assert_int_equal(w[2].status, SL_ECLOSED);
    assert_int_equal(w[2].count, 0);
    t_send(t, q, 0, "third");
    t_sync(t);
    assert_int_equal(t_counts(t, q).ready, 1);
    part_receive_cancel(t->c, ticket[2]); /* finished: ignored */
}

/* A waiter ended early answers SL_OK with nothing, as its timeout would,
 * and the message sent after it stays for the next receive. */
static void test_expire_ends_the_wait(void **state)
{
    struct t_env *t = *state;
    uint64_t q = t_create(t, "acme", "expire", NULL);
    struct t_done w;
    uint64_t ticket;
    poll_start(t, q, 15000, &w, &ticket);
    t_sync(t);
    spin(t);
    assert_false(w.done);
    part_receive_expire(t->c, ticket);
    t_wait(t, &w);
    assert_int_equal(w.status, SL_OK);
    assert_int_equal(w.count, 0);
    t_send(t, q, 0, "after");
    t_sync(t);
    assert_int_equal(t_counts(t, q).ready, 1);
    part_receive_expire(t->c, ticket); /* finished: ignored */
}

static void test_wake_by_delay_and_visibility(void **state)
{
    struct t_env *t = *state;
    uint64_t q = t_create(t, "acme", "timers", NULL);
    struct t_done d, w;
    t_send_ex(t, q, 1, "delayed", 5, false, 0, &d);
    poll_start(t, q, 15000, &w, NULL);
    spin(t);
    assert_false(w.done);
    t_advance(t, 5000);
    part_engine_kick(t->e);
    t_wait(t, &w);
    assert_int_equal(w.count, 1);
    assert_string_equal(w.msgs[0].body, "delayed");

    struct t_done w2;
    poll_start(t, q, 15000, &w2, NULL);
    spin(t);
    assert_false(w2.done);
    t_chvis(t, q, w.msgs[0].receipt, 0, &d);
    t_wait(t, &w2);
    assert_int_equal(w2.count, 1);
    assert_int_equal(w2.msgs[0].receive_count, 2);

    struct t_done w3;
    poll_start(t, q, 15000, &w3, NULL);
    t_advance(t, 30000); /* the lease of w2 ends */
    part_engine_kick(t->e);
    t_wait(t, &w3);
    assert_int_equal(w3.count, 1);
    assert_int_equal(w3.msgs[0].receive_count, 3);
}

static void test_timeout_and_drain(void **state)
{
    struct t_env *t = *state;
    uint64_t q = t_create(t, "acme", "quiet", NULL);
    struct t_done w;
    poll_start(t, q, 30, &w, NULL);
    t_wait(t, &w);
    assert_int_equal(w.status, SL_OK);
    assert_int_equal(w.count, 0);

    struct t_done a, b;
    poll_start(t, q, 15000, &a, NULL);
    poll_start(t, q, 15000, &b, NULL);
    spin(t);
    assert_false(a.done);
    part_client_drain(t->c);
    t_wait(t, &a);
    t_wait(t, &b);
    assert_int_equal(a.status, SL_OK);
    assert_int_equal(a.count, 0);
    assert_int_equal(b.count, 0);
    /* a draining client does not wait any more */
    struct t_done c;
    poll_start(t, q, 15000, &c, NULL);
    t_wait(t, &c);
    assert_int_equal(c.count, 0);
}

static void test_queue_deleted_while_waiting(void **state)
{
    struct t_env *t = *state;
    uint64_t q = t_create(t, "acme", "doomed", NULL);
    struct t_done w, d;
    poll_start(t, q, 15000, &w, NULL);
    assert_int_equal(part_queue_delete(t->c, q, t_ck(&d), t_on_done), SL_OK);
    t_wait(t, &d);
    t_wait(t, &w);
    assert_int_equal(w.status, SL_ENOTFOUND);
}

static void test_engine_drain(void **state)
{
    struct t_env *t = *state;
    uint64_t q = t_create(t, "acme", "shutdown", NULL);
    struct t_done w;
    poll_start(t, q, 15000, &w, NULL);
    spin(t);
    part_engine_drain_polls(t->e);
    t_wait(t, &w);
    assert_int_equal(w.status, SL_OK);
    assert_int_equal(w.count, 0);
}

static void test_cancel_before_or_after_lease(void **state)
{
    struct t_env *t = *state;
    uint64_t q = t_create(t, "acme", "race", NULL);
    t_send(t, q, 0, "x");
    /* The receive is queued at a writer when it is cancelled: either the
     * writer sees the flag and takes nothing, or it leased in the race and
     * the lease is undone. Both must leave the message ready, count intact. */
    for (int i = 0; i < 20; i++) {
        struct t_done w;
        uint64_t ticket = 0;
        poll_start(t, q, 0, &w, &ticket);
        part_receive_cancel(t->c, ticket);
        t_wait(t, &w);
        assert_int_equal(w.status, SL_ECLOSED);
        assert_int_equal(w.count, 0);
        t_sync(t);
        struct part_counts c = t_counts(t, q);
        assert_int_equal(c.ready, 1);
        assert_int_equal(c.inflight, 0);
    }
    struct t_done r;
    t_recv(t, q, 1, 30, &r);
    assert_int_equal(r.count, 1);
    assert_int_equal(r.msgs[0].receive_count, 1);
}

static void test_dequeue_paused(void **state)
{
    struct t_env *t = *state;
    uint64_t q = t_create(t, "acme", "paused", NULL);
    assert_int_equal(part_queue_set_dequeue_paused(t->e, q + 1000, true), SL_ENOTFOUND);

    /* parked before the pause: the send after it wakes it, but it takes
     * nothing and parks again */
    struct t_done w;
    poll_start(t, q, 15000, &w, NULL);
    t_sync(t);
    spin(t);
    assert_false(w.done);
    assert_int_equal(part_queue_set_dequeue_paused(t->e, q, true), SL_OK);
    t_send(t, q, 1, "held");
    t_sync(t);
    spin(t);
    assert_false(w.done);
    struct part_counts c = t_counts(t, q);
    assert_int_equal(c.ready, 1);
    assert_int_equal(c.inflight, 0);

    /* a receive begun during the pause: empty at its deadline */
    struct t_done r;
    poll_start(t, q, 0, &r, NULL);
    t_wait(t, &r);
    assert_int_equal(r.status, SL_OK);
    assert_int_equal(r.count, 0);
    struct t_done shortw;
    poll_start(t, q, 30, &shortw, NULL);
    t_wait(t, &shortw);
    assert_int_equal(shortw.status, SL_OK);
    assert_int_equal(shortw.count, 0);
    assert_false(w.done);

    /* resuming wakes the waiter for the ready message */
    assert_int_equal(part_queue_set_dequeue_paused(t->e, q, false), SL_OK);
    t_wait(t, &w);
    assert_int_equal(w.status, SL_OK);
    assert_int_equal(w.count, 1);
    assert_string_equal(w.msgs[0].body, "held");
    assert_int_equal(w.msgs[0].receive_count, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_wake_by_send, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_waiters_in_order_one_per_message, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_expire_ends_the_wait, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_wake_by_delay_and_visibility, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_timeout_and_drain, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_queue_deleted_while_waiting, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_engine_drain, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_cancel_before_or_after_lease, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_dequeue_paused, t_setup, t_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
