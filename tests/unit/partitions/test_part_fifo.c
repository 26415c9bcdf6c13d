/*
 * test_part_fifo.c -- FIFO queues in the engine: sends need a group and a
 * deduplication id, sequence numbers increase (batches in order, across a
 * restart), a duplicate within the interval stores nothing and answers the
 * first send (per queue or per group, forgotten after the interval, by a
 * purge, kept over a restart), receives keep each group's order, one group
 * in flight at a time, several consecutive messages of a group per
 * receive, a released message first again, a waiting receive woken when
 * its group frees, DLQ moves and redrives keeping the order.
 */
#include "part_test_util.h"

struct fmsg {
    const char *body;
    const char *group;
    const char *dedup;
};

/* Sends n messages in one job to partition p; d gets the answer. */
static void fsend(struct t_env *t, uint64_t q, uint32_t p, const struct fmsg *m, size_t n,
                  struct t_done *d)
{
    struct part_send_entry en[PART_MAX_BATCH];
    for (size_t i = 0; i < n; i++) {
        en[i] = (struct part_send_entry){.body = sl_slice_cstr(m[i].body),
                                         .group_id = sl_slice_cstr(m[i].group),
                                         .dedup_id = sl_slice_cstr(m[i].dedup),
                                         .delay_s = -1};
    }
    assert_int_equal(part_send(t->c, q, p, en, n, t_ck(d), t_on_done), SL_OK);
    t_wait(t, d);
    assert_int_equal(d->status, SL_OK);
    assert_int_equal(d->count, n);
}

static void test_send_rules(void **state)
{
    struct t_env *t = *state;
    uint64_t q = t_create_fifo(t, "rules.fifo", false);
    struct t_done d;
    struct part_send_entry en = {.body = SL_SLICE_LIT("x"), .delay_s = -1};
    assert_int_equal(part_send(t->c, q, 0, &en, 1, t_ck(&d), t_on_done), SL_EINVAL);
    en.group_id = SL_SLICE_LIT("g");
    assert_int_equal(part_send(t->c, q, 0, &en, 1, t_ck(&d), t_on_done), SL_EINVAL);
    en.group_id = (struct sl_slice){NULL, 0};
    en.dedup_id = SL_SLICE_LIT("d");
    assert_int_equal(part_send(t->c, q, 0, &en, 1, t_ck(&d), t_on_done), SL_EINVAL);
    assert_int_equal(t_counts(t, q).ready, 0);
    /* A standard queue ignores a deduplication id: both are stored. */
    uint64_t s = t_create(t, "acme", "plain", NULL);
    en.group_id = SL_SLICE_LIT("g");
    for (int i = 0; i < 2; i++) {
        assert_int_equal(part_send(t->c, s, 0, &en, 1, t_ck(&d), t_on_done), SL_OK);
        t_wait(t, &d);
        assert_false(d.sent_dup[0]);
    }
    assert_int_equal(t_counts(t, s).ready, 2);
}

static void test_sequence_numbers(void **state)
{
    struct t_env *t = *state;
    uint64_t q = t_create_fifo(t, "seq.fifo", false);
    struct fmsg batch[4] = {{"a1", "a", "1"}, {"b1", "b", "2"}, {"a2", "a", "3"}, {"a3", "a", "4"}};
    struct t_done d;
    fsend(t, q, 0, batch, 4, &d);
    uint64_t last = 0;
    for (size_t i = 0; i < 4; i++) {
        assert_true(d.sent_seq[i] > last);
        last = d.sent_seq[i];
    }
    /* the clock does not move, the sequence does; on the other partition too */
    t_send_fifo(t, q, 0, "a4", "a", "5", &d);
    assert_true(d.sent_seq[0] > last);
    last = d.sent_seq[0];
    struct fmsg other = {"c1", "c", "6"};
    fsend(t, q, 1, &other, 1, &d);
    assert_true(d.sent_seq[0] > last);
    last = d.sent_seq[0];
    /* a restart resumes above the stored ones, even with the clock set back */
    t_close(t);
    atomic_store(&t->now, T_START_MS - 3600ull * 1000);
    t_open(t);
    t_send_fifo(t, q, 0, "a5", "a", "7", &d);
    assert_true(d.sent_seq[0] > last);
    /* receives report the same numbers, in send order within a group */
    struct t_done r;
    t_recv(t, q, 10, 30, &r);
    uint64_t prev_a = 0;
    for (size_t i = 0; i < r.count; i++) {
        if (strcmp(r.msgs[i].group, "a") == 0) {
            assert_true((uint64_t)r.msgs[i].priority > prev_a);
            prev_a = (uint64_t)r.msgs[i].priority;
        }
    }
}

static void test_dedup_queue_scope(void **state)
{
    struct t_env *t = *state;
    uint64_t q = t_create_fifo(t, "dq.fifo", false);
    struct t_done first, d;
    t_send_fifo(t, q, 0, "one", "g", "same", &first);
    assert_false(first.sent_dup[0]);
    /* within the interval, in any group: the first send's id and number */
    t_advance(t, PART_DEDUP_INTERVAL_MS - 1);
    t_send_fifo(t, q, 0, "two", "h", "same", &d);
    assert_true(d.sent_dup[0]);
    assert_string_equal(d.sent_ids[0], first.sent_ids[0]);
    assert_int_equal(d.sent_seq[0], first.sent_seq[0]);
    assert_int_equal(t_counts(t, q).ready, 1);
    /* also after the message was received and deleted */
    struct t_done r;
    t_recv(t, q, 10, 30, &r);
    assert_int_equal(r.count, 1);
    assert_string_equal(r.msgs[0].dedup, "same");
    t_delete(t, q, r.msgs[0].receipt, &d);
    t_send_fifo(t, q, 0, "three", "g", "same", &d);
    assert_true(d.sent_dup[0]);
    /* a batch deduplicates against its own earlier entries */
    struct fmsg batch[3] = {{"x", "g", "b1"}, {"y", "g", "b1"}, {"z", "g", "b2"}};
    fsend(t, q, 0, batch, 3, &d);
    assert_false(d.sent_dup[0]);
    assert_true(d.sent_dup[1]);
    assert_string_equal(d.sent_ids[1], d.sent_ids[0]);
    assert_false(d.sent_dup[2]);
    assert_int_equal(t_counts(t, q).ready, 2);
    /* kept over a restart */
    t_close(t);
    t_open(t);
    t_send_fifo(t, q, 0, "again", "g", "b2", &d);
    assert_true(d.sent_dup[0]);
    /* past the interval the id is new again */
    t_advance(t, 1);
    t_send_fifo(t, q, 0, "four", "g", "same", &d);
    assert_false(d.sent_dup[0]);
    assert_int_equal(t_counts(t, q).ready, 3);
}

static void test_dedup_group_scope_and_purge(void **state)
{
    struct t_env *t = *state;
    uint64_t q = t_create_fifo(t, "dg.fifo", true);
    struct t_done d;
    t_send_fifo(t, q, 0, "one", "g", "same", &d);
    t_send_fifo(t, q, 0, "two", "h", "same", &d);
    assert_false(d.sent_dup[0]);
    t_send_fifo(t, q, 0, "three", "h", "same", &d);
    assert_true(d.sent_dup[0]);
    assert_int_equal(t_counts(t, q).ready, 2);
    /* a purge forgets the queue's ids (as SQS's does) */
    assert_int_equal(part_purge(t->c, q, t_ck(&d), t_on_done), SL_OK);
    t_wait(t, &d);
    t_send_fifo(t, q, 0, "four", "h", "same", &d);
    assert_false(d.sent_dup[0]);
    assert_int_equal(t_counts(t, q).ready, 1);
}

/* The groups of r's messages as one string, e.g. "a1 a2 b1". */
static void bodies(const struct t_done *r, char *out, size_t n)
{
    out[0] = '\0';
    for (size_t i = 0; i < r->count; i++) {
        size_t len = strlen(out);
        snprintf(out + len, n - len, "%s%s", i ? " " : "", r->msgs[i].body);
    }
}

static void test_group_order_and_lock(void **state)
{
    struct t_env *t = *state;
    uint64_t q = t_create_fifo(t, "lock.fifo", false);
    struct fmsg batch[6] = {{"a1", "a", "1"}, {"b1", "b", "2"}, {"a2", "a", "3"},
                            {"a3", "a", "4"}, {"b2", "b", "5"}, {"c1", "c", "6"}};
    struct t_done d, r1, r2, r3;
    fsend(t, q, 0, batch, 6, &d);
    char got[128];
    /* as many of one group as there are, in order, before the next group */
    t_recv(t, q, 3, 30, &r1);
    bodies(&r1, got, sizeof got);
    assert_string_equal(got, "a1 a2 a3");
    t_recv(t, q, 1, 30, &r2);
    bodies(&r2, got, sizeof got);
    assert_string_equal(got, "b1");
    /* a and b are in flight: only c flows */
    t_recv(t, q, 10, 30, &r3);
    bodies(&r3, got, sizeof got);
    assert_string_equal(got, "c1");
    t_recv(t, q, 10, 30, &r3);
    assert_int_equal(r3.count, 0);
    /* deleting a1 leaves a2 and a3 in flight: a stays locked; b freed by
     * b1's visibility set to 0 comes back with b1 first */
    t_delete(t, q, r1.msgs[0].receipt, &d);
    t_chvis(t, q, r2.msgs[0].receipt, 0, &d);
    t_recv(t, q, 10, 30, &r3);
    bodies(&r3, got, sizeof got);
    assert_string_equal(got, "b1 b2");
    /* every lease runs out: each group comes back from its first message
     * not deleted, the group with the best head first */
    t_advance(t, 30 * 1000ull);
    part_engine_kick(t->e);
    t_sync(t);
    t_recv(t, q, 10, 30, &r2);
    bodies(&r2, got, sizeof got);
    assert_string_equal(got, "b1 b2 a2 a3 c1");
}

/* Two receives in one group commit do not both take a group. */
static void test_lock_within_one_commit(void **state)
{
    struct t_env *t = *state;
    uint64_t q = t_create_fifo(t, "race.fifo", false);
    struct fmsg batch[3] = {{"a1", "a", "1"}, {"a2", "a", "2"}, {"a3", "a", "3"}};
    struct t_done d;
    fsend(t, q, 0, batch, 3, &d);
    uint32_t parts[1] = {0};
    struct part_receive_req req = {.queue_id = q,
                                   .partitions = parts,
                                   .partition_count = 1,
                                   .max_messages = 1,
                                   .visibility_s = 30};
    struct t_done r[4];
    for (int i = 0; i < 4; i++) {
        assert_int_equal(part_receive(t->c, &req, t_ck(&r[i]), t_on_done, NULL), SL_OK);
    }
    size_t got = 0;
    for (int i = 0; i < 4; i++) {
        t_wait(t, &r[i]);
        got += r[i].count;
        if (r[i].count == 1) {
            assert_string_equal(r[i].msgs[0].body, "a1");
        }
    }
    assert_int_equal(got, 1);
}

/* A long poll that found only locked groups is woken when the group
 * frees by a delete. */
static void test_wake_on_group_free(void **state)
{
    struct t_env *t = *state;
    uint64_t q = t_create_fifo(t, "wake.fifo", false);
    struct fmsg batch[2] = {{"a1", "a", "1"}, {"a2", "a", "2"}};
    struct t_done d, r1, w;
    fsend(t, q, 0, batch, 2, &d);
    t_recv(t, q, 1, 30, &r1);
    t_recv_parked(t, q, &w);
    t_delete(t, q, r1.msgs[0].receipt, &d);
    t_wait(t, &w);
    assert_int_equal(w.count, 1);
    assert_string_equal(w.msgs[0].body, "a2");
}

/* Past maxReceiveCount a message goes to the FIFO DLQ with its group and
 * deduplication id; a redrive back sequences it anew, in order. */
static void test_dlq_and_redrive(void **state)
{
    struct t_env *t = *state;
    uint64_t dlq = t_create_fifo(t, "dead.fifo", false);
    uint64_t q = t_create_fifo_dlq(t, "src.fifo", dlq, 1);
    struct fmsg batch[2] = {{"a1", "a", "1"}, {"a2", "a", "2"}};
    struct t_done d, r;
    fsend(t, q, 0, batch, 2, &d);
    t_recv(t, q, 10, 0, &r); /* received once, visible again at once */
    assert_int_equal(r.count, 2);
    t_sync(t);                /* the zero leases end */
    t_recv(t, q, 10, 30, &r); /* over the count: both move */
    assert_int_equal(r.count, 0);
    assert_int_equal(t_counts(t, dlq).ready, 2);
    t_recv(t, dlq, 10, 0, &r);
    assert_int_equal(r.count, 2);
    assert_string_equal(r.msgs[0].body, "a1");
    assert_string_equal(r.msgs[0].group, "a");
    assert_string_equal(r.msgs[0].dedup, "1");
    assert_string_equal(r.msgs[1].body, "a2");
    t_sync(t); /* their zero leases have ended */
    /* redrive back: new numbers, still a1 before a2 */
    struct part_move_req req = {.queue_id = dlq, .partition = 0, .max_messages = 10};
    t_ck(&d);
    assert_int_equal(part_move(t->c, &req, (struct part_cookie){&d, 0, 0}, t_on_moved), SL_OK);
    t_wait(t, &d);
    assert_int_equal(d.count, 2);
    t_recv(t, q, 10, 30, &r);
    assert_int_equal(r.count, 2);
    assert_string_equal(r.msgs[0].body, "a1");
    assert_string_equal(r.msgs[1].body, "a2");
    assert_true(r.msgs[0].priority < r.msgs[1].priority);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_send_rules, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_sequence_numbers, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_dedup_queue_scope, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_dedup_group_scope_and_purge, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_group_order_and_lock, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_lock_within_one_commit, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_wake_on_group_free, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_dlq_and_redrive, t_setup, t_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
