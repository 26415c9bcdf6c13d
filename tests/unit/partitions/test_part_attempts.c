/*
 * test_part_attempts.c -- FIFO ReceiveRequestAttemptId in the engine: a
 * retry gets the same messages, receipt handles and order (across
 * partitions) with a new lease; what a delete or a visibility change
 * leaves of an attempt; a lapsed lease, a later receive or the end of the
 * five minutes ends it; it survives a restart; a replay-only receive
 * leases nothing new; a cancelled retry keeps the leases; attempt ids that share a prefix stay
 * apart; standard queues and receives without an attempt id stamp nothing.
 */
#include "part_test_util.h"

#include "part_int.h" /* the client's completion list: see test_cancelled_replay */

/* Receives up to max from every partition with attempt id attempt (NULL:
 * none) and a visibility timeout of vis seconds. */
static void recv_attempt(struct t_env *t, uint64_t q, uint32_t max, int32_t vis,
                         const char *attempt, struct t_done *d)
{
    struct part_receive_req req = {.queue_id = q, .max_messages = max, .visibility_s = vis};
    if (attempt != NULL) {
        req.attempt = sl_slice_cstr(attempt);
    }
    t_recv_with(t, req, d);
    assert_int_equal(d->status, SL_OK);
}

/* The bodies of d's messages, space-separated. */
static const char *bodies(const struct t_done *d)
{
    static char out[256];
    out[0] = '\0';
    for (size_t i = 0; i < d->count; i++) {
        size_t len = strlen(out);
        snprintf(out + len, sizeof out - len, "%s%s", i ? " " : "", d->msgs[i].body);
    }
    return out;
}

/* Lets the clock run ms and the timers due by then fire. */
static void pass(struct t_env *t, uint64_t ms)
{
    t_advance(t, ms);
    part_engine_kick(t->e);
    t_sync(t);
}

static void test_replay_same_messages(void **state)
{
    struct t_env *t = *state;
    uint64_t q = t_create_fifo(t, "replay.fifo", false);
    struct t_done d, first, again;
    /* b1 first on partition 1, then a1 a2 on partition 0: the receive
     * takes partition 1 first (best head), the replay visits partition 0
     * first and must still answer in the first reply's order */
    t_send_fifo(t, q, 1, "b1", "b", "1", &d);
    t_send_fifo(t, q, 0, "a1", "a", "2", &d);
    t_send_fifo(t, q, 0, "a2", "a", "3", &d);
    recv_attempt(t, q, 10, 30, "try-1", &first);
    assert_string_equal(bodies(&first), "b1 a1 a2");
    pass(t, 10 * 1000ull);
    recv_attempt(t, q, 1, 60, "try-1", &again); /* max 1: the whole attempt all the same */
    assert_string_equal(bodies(&again), "b1 a1 a2");
    for (size_t i = 0; i < 3; i++) {
        assert_string_equal(again.msgs[i].receipt, first.msgs[i].receipt);
        assert_string_equal(again.msgs[i].id, first.msgs[i].id);
        assert_int_equal(again.msgs[i].receive_count, 1);
        assert_int_equal(again.msgs[i].first_receive_ms, first.msgs[i].first_receive_ms);
    }
    assert_int_equal(t_counts(t, q).inflight, 3);
    /* the lease is the retry's: past the first one's 30 s, still held */
    pass(t, 25 * 1000ull);
    assert_int_equal(t_counts(t, q).inflight, 3);
    recv_attempt(t, q, 10, 30, NULL, &d);
    assert_int_equal(d.count, 0);
    /* and over at 10 + 60 s */
    pass(t, 35 * 1000ull);
    assert_int_equal(t_counts(t, q).ready, 3);
    /* the handles the retry returned are the current ones */
    recv_attempt(t, q, 10, 30, "try-2", &first);
    assert_int_equal(first.count, 3);
    t_delete(t, q, first.msgs[0].receipt, &d);
    assert_int_equal(d.entry[0], SL_OK);
}

static void test_replay_after_changes(void **state)
{
    struct t_env *t = *state;
    uint64_t q = t_create_fifo(t, "changed.fifo", false);
    struct t_done d, first, again;
    t_send_fifo(t, q, 0, "a1", "a", "1", &d);
    t_send_fifo(t, q, 0, "a2", "a", "2", &d);
    t_send_fifo(t, q, 0, "a3", "a", "3", &d);
    t_send_fifo(t, q, 0, "a4", "a", "4", &d);
    recv_attempt(t, q, 4, 30, "x", &first);
    assert_string_equal(bodies(&first), "a1 a2 a3 a4");
    /* a1 deleted, a3's visibility changed (still in flight), a4's set to
     * 0: the retry returns what the attempt still holds unchanged */
    t_delete(t, q, first.msgs[0].receipt, &d);
    t_chvis(t, q, first.msgs[2].receipt, 60, &d);
    assert_int_equal(d.entry[0], SL_OK);
    t_chvis(t, q, first.msgs[3].receipt, 0, &d);
    assert_int_equal(d.entry[0], SL_OK);
    recv_attempt(t, q, 10, 30, "x", &again);
    assert_string_equal(bodies(&again), "a2");
    assert_string_equal(again.msgs[0].receipt, first.msgs[1].receipt);
    /* with nothing of it left, a retry is an ordinary receive: group a is
     * locked by a3, group c flows, and c1 now belongs to the attempt */
    t_delete(t, q, first.msgs[1].receipt, &d);
    t_send_fifo(t, q, 0, "c1", "c", "5", &d);
    recv_attempt(t, q, 10, 30, "x", &again);
    assert_string_equal(bodies(&again), "c1");
    recv_attempt(t, q, 10, 30, "x", &d);
    assert_string_equal(bodies(&d), "c1");
    assert_string_equal(d.msgs[0].receipt, again.msgs[0].receipt);
}

static void test_replay_ends(void **state)
{
    struct t_env *t = *state;
    uint64_t q = t_create_fifo(t, "ends.fifo", false);
    struct t_done d, first, again;
    t_send_fifo(t, q, 0, "a1", "a", "1", &d);
    t_send_fifo(t, q, 1, "b1", "b", "2", &d);
    /* the lease ran out: the retry is a new receive (its commit fires the
     * lapsed lease's timer first), which gets a1 again, a new handle */
    recv_attempt(t, q, 1, 30, "lapse", &first);
    assert_string_equal(bodies(&first), "a1");
    t_advance(t, 30 * 1000ull);
    recv_attempt(t, q, 1, 30, "lapse", &again);
    assert_string_equal(bodies(&again), "a1");
    assert_int_equal(again.msgs[0].receive_count, 2);
    assert_string_not_equal(again.msgs[0].receipt, first.msgs[0].receipt);
    /* re-received without an attempt id after the attempt's lease ran
     * out: the row still carries the old stamp, but not under this lease */
    pass(t, 30 * 1000ull);
    recv_attempt(t, q, 10, 600, "stale", &first);
    assert_string_equal(bodies(&first), "a1 b1");
    pass(t, 600 * 1000ull);
    recv_attempt(t, q, 10, 600, NULL, &again);
    assert_int_equal(again.count, 2);
    recv_attempt(t, q, 10, 600, "stale", &d);
    assert_int_equal(d.count, 0); /* both groups locked by the plain receive */
    /* five minutes after the receive, however long its lease */
    pass(t, 600 * 1000ull);
    recv_attempt(t, q, 10, 3600, "five", &first);
    assert_int_equal(first.count, 2);
    pass(t, PART_ATTEMPT_INTERVAL_MS - 1);
    recv_attempt(t, q, 10, 3600, "five", &again);
    assert_int_equal(again.count, 2);
    pass(t, 1);
    recv_attempt(t, q, 10, 3600, "five", &again);
    assert_int_equal(again.count, 0);
    assert_int_equal(t_counts(t, q).inflight, 2);
}

static void test_replay_after_restart(void **state)
{
    struct t_env *t = *state;
    uint64_t q = t_create_fifo(t, "restart.fifo", false);
    struct t_done d, first, again;
    t_send_fifo(t, q, 0, "a1", "a", "1", &d);
    t_send_fifo(t, q, 1, "b1", "b", "2", &d);
    recv_attempt(t, q, 10, 30, "crash", &first);
    assert_string_equal(bodies(&first), "a1 b1");
    t_close(t);
    t_open(t);
    recv_attempt(t, q, 10, 30, "crash", &again);
    assert_string_equal(bodies(&again), "a1 b1");
    assert_string_equal(again.msgs[0].receipt, first.msgs[0].receipt);
    assert_string_equal(again.msgs[1].receipt, first.msgs[1].receipt);
    t_delete(t, q, again.msgs[1].receipt, &d);
    assert_int_equal(d.entry[0], SL_OK);
}

/* Replay only (a queue at its in-flight quota): the attempt's messages,
 * or none, never a new lease. */
static void test_replay_only(void **state)
{
    struct t_env *t = *state;
    uint64_t q = t_create_fifo(t, "only.fifo", false);
    struct t_done d, first, again;
    t_send_fifo(t, q, 0, "a1", "a", "1", &d);
    t_send_fifo(t, q, 1, "b1", "b", "2", &d);
    recv_attempt(t, q, 1, 30, "kept", &first);
    assert_string_equal(bodies(&first), "a1");
    struct part_receive_req req = {.queue_id = q,
                                   .max_messages = 10,
                                   .visibility_s = 30,
                                   .attempt = SL_SLICE_LIT("kept"),
                                   .replay_only = true};
    t_recv_with(t, req, &again);
    assert_int_equal(again.status, SL_OK);
    assert_string_equal(bodies(&again), "a1");
    assert_string_equal(again.msgs[0].receipt, first.msgs[0].receipt);
    req.attempt = SL_SLICE_LIT("new");
    t_recv_with(t, req, &again);
    assert_int_equal(again.status, SL_OK);
    assert_int_equal(again.count, 0);
    assert_int_equal(t_counts(t, q).ready, 1); /* b1 was not leased */
}

/* A retry whose stream goes away gives nothing back: the leases are the
 * first receive's, and the next retry still finds them. */
static void test_cancelled_replay(void **state)
{
    struct t_env *t = *state;
    uint64_t q = t_create_fifo(t, "cancel.fifo", false);
    struct t_done d, first, again;
    t_send_fifo(t, q, 0, "a1", "a", "1", &d);
    recv_attempt(t, q, 1, 30, "gone", &first);
    uint32_t parts[2] = {0, 1};
    struct part_receive_req req = {.queue_id = q,
                                   .partitions = parts,
                                   .partition_count = t->nparts,
                                   .max_messages = 1,
                                   .visibility_s = 30,
                                   .attempt = SL_SLICE_LIT("gone")};
    uint64_t ticket = 0;
    assert_int_equal(part_receive(t->c, &req, t_ck(&again), t_on_done, &ticket), SL_OK);
    /* the writer has replayed and answered; the loop has not run it yet */
    for (bool answered = false; !answered;) {
        pthread_mutex_lock(&t->c->mu);
        answered = t->c->done_head != NULL;
        pthread_mutex_unlock(&t->c->mu);
        if (!answered) {
            usleep(1000);
        }
    }
    part_receive_cancel(t->c, ticket);
    t_wait(t, &again);
    assert_int_equal(again.status, SL_ECLOSED);
    t_sync(t);
    assert_int_equal(t_counts(t, q).inflight, 1);
    recv_attempt(t, q, 1, 30, "gone", &again);
    assert_string_equal(bodies(&again), "a1");
    assert_string_equal(again.msgs[0].receipt, first.msgs[0].receipt);
}

static void test_ids_apart(void **state)
{
    struct t_env *t = *state;
    uint64_t q = t_create_fifo(t, "apart.fifo", false);
    uint64_t other = t_create_fifo(t, "other.fifo", false);
    struct t_done d, ab, abc, got;
    t_send_fifo(t, q, 0, "a1", "a", "1", &d);
    t_send_fifo(t, q, 0, "b1", "b", "2", &d);
    t_send_fifo(t, other, 0, "o1", "o", "3", &d);
    recv_attempt(t, q, 1, 30, "ab", &ab);
    recv_attempt(t, q, 1, 30, "abc", &abc);
    assert_string_equal(bodies(&ab), "a1");
    assert_string_equal(bodies(&abc), "b1");
    recv_attempt(t, q, 10, 30, "abc", &got);
    assert_string_equal(bodies(&got), "b1");
    recv_attempt(t, q, 10, 30, "ab", &got);
    assert_string_equal(bodies(&got), "a1");
    /* the same id on another queue is another attempt */
    recv_attempt(t, other, 10, 30, "ab", &got);
    assert_string_equal(bodies(&got), "o1");
    /* ids the engine cannot keep apart are refused */
    struct part_receive_req req = {
        .queue_id = q, .max_messages = 1, .attempt = SL_SLICE_LIT("with space")};
    uint32_t parts[1] = {0};
    req.partitions = parts;
    req.partition_count = 1;
    assert_int_equal(part_receive(t->c, &req, t_ck(&d), t_on_done, NULL), SL_EINVAL);
    char long_id[PART_ATTEMPT_MAX + 2];
    memset(long_id, 'x', sizeof long_id - 1);
    long_id[sizeof long_id - 1] = '\0';
    req.attempt = sl_slice_cstr(long_id);
    assert_int_equal(part_receive(t->c, &req, t_ck(&d), t_on_done, NULL), SL_EINVAL);
    long_id[PART_ATTEMPT_MAX] = '\0';
    req.attempt = sl_slice_cstr(long_id);
    assert_int_equal(part_receive(t->c, &req, t_ck(&d), t_on_done, NULL), SL_OK);
    t_wait(t, &d);
}

/* Receives without an attempt id, and any receive of a standard queue,
 * stamp nothing: no byte of an attempt, no entry in msg_attempt. */
static void test_nothing_stamped(void **state)
{
    struct t_env *t = *state;
    uint64_t f = t_create_fifo(t, "plain.fifo", false);
    uint64_t s = t_create(t, "acme", "standard", NULL);
    struct t_done d, first, again;
    t_send_fifo(t, f, 0, "f1", "f", "1", &d);
    t_send(t, s, 0, "s1");
    t_send(t, s, 0, "s2");
    recv_attempt(t, f, 10, 30, NULL, &d);
    assert_int_equal(d.count, 1);
    /* standard queues ignore the attempt id: a retry is a new receive */
    recv_attempt(t, s, 1, 30, "std", &first);
    recv_attempt(t, s, 1, 30, "std", &again);
    assert_string_equal(first.msgs[0].body, "s1");
    assert_string_equal(again.msgs[0].body, "s2");
    t_close(t);
    assert_int_equal(t_part_int(t, 0, "SELECT count(*) FROM msg WHERE attempt IS NOT NULL"), 0);
    assert_int_equal(t_part_int(t, 0,
                                "SELECT count(*) FROM msg INDEXED BY msg_attempt"
                                " WHERE attempt IS NOT NULL"),
                     0);
    assert_int_equal(t_part_int(t, 0, "SELECT count(*) FROM msg WHERE state=2"), 3);
    t_open(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_replay_same_messages, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_replay_after_changes, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_replay_ends, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_replay_after_restart, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_replay_only, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_cancelled_replay, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_ids_apart, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_nothing_stamped, t_setup, t_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
