/*
 * test_part_peek.c -- the operators' paths into a queue: part_peek reads
 * ready messages without leasing them (no receive count, no lease, no
 * timer: a receive afterwards sees exactly what it would have seen),
 * best first across partitions and bounded by max; part_remove deletes
 * one ready row and nothing else; part_move with only_sequence moves that
 * one ready row or nothing, never the next one.
 *
 * Injected clock, a real loop on the test thread, temp dirs (see
 * part_test_util.h).
 */
#include "part_test_util.h"

struct one_done {
    bool done;
    int status;
    uint64_t moved;
};

static void on_one(struct part_cookie ck, int status, const struct part_result *res)
{
    struct one_done *d = ck.ptr;
    assert_false(d->done);
    d->done = true;
    d->status = status;
    d->moved = res != NULL ? res->moved : 0;
}

static void one_wait(struct t_env *t, struct one_done *d)
{
    for (int i = 0; i < 100000 && !d->done; i++) {
        uv_run(&t->loop, UV_RUN_ONCE);
    }
    assert_true(d->done);
}

static int remove_row(struct t_env *t, uint64_t q, uint32_t p, uint64_t seq)
{
    struct one_done d = {0};
    assert_int_equal(part_remove(t->c, q, p, seq, (struct part_cookie){&d, 0, 0}, on_one), SL_OK);
    one_wait(t, &d);
    return d.status;
}

static uint64_t move_row(struct t_env *t, uint64_t q, uint32_t p, uint64_t dest, uint64_t seq)
{
    struct one_done d = {0};
    struct part_move_req req = {
        .queue_id = q, .partition = p, .dest_queue_id = dest, .only_sequence = seq};
    assert_int_equal(part_move(t->c, &req, (struct part_cookie){&d, 0, 0}, on_one), SL_OK);
    one_wait(t, &d);
    assert_int_equal(d.status, SL_OK);
    return d.moved;
}

/* The peeked message with this body, or NULL. */
static const struct part_message *find(const struct part_peek_list *l, const char *body)
{
    for (size_t i = 0; i < l->count; i++) {
        if (l->items[i].body.n == strlen(body) &&
            memcmp(l->items[i].body.p, body, l->items[i].body.n) == 0) {
            return &l->items[i];
        }
    }
    return NULL;
}

static void test_peek_leases_nothing(void **state)
{
    struct t_env *t = *state;
    struct part_queue_config cfg = part_queue_config_default();
    uint64_t q = t_create(t, "acme", "dlq", &cfg);
    t_send(t, q, 0, "one");
    t_send(t, q, 1, "two");
    t_advance(t, 10);
    t_send(t, q, 0, "three");
    /* "one" received once, and ready again (visibility 0) */
    struct t_done d;
    t_recv(t, q, 1, 0, &d);
    assert_int_equal(d.count, 1);
    assert_string_equal(d.msgs[0].body, "one");
    /* and once more, later: the peek shows both receive times */
    t_advance(t, 7);
    t_recv(t, q, 1, 0, &d);
    assert_int_equal(d.count, 1);
    assert_string_equal(d.msgs[0].body, "one");
    t_sync(t);

    for (int round = 0; round < 3; round++) {
        struct part_peek_list l;
        uint32_t skipped = 9;
        assert_int_equal(part_peek(t->e, q, 10, &l, &skipped), SL_OK);
        assert_int_equal(skipped, 0);
        assert_int_equal(l.count, 3);
        const struct part_message *one = find(&l, "one");
        const struct part_message *two = find(&l, "two");
        assert_non_null(one);
        assert_non_null(two);
        assert_int_equal(one->receive_count, 2);
        assert_true(one->first_receive_ms > 0);
        assert_int_equal(one->last_receive_ms, one->first_receive_ms + 7);
        assert_int_equal(two->receive_count, 0);
        assert_int_equal(two->first_receive_ms, 0);
        assert_int_equal(two->last_receive_ms, 0);
        assert_int_equal(two->partition, 1);
        assert_true(two->sequence > 0);
        assert_string_equal(one->receipt, "");
        part_peek_list_free(&l);
    }
    struct part_counts c = t_counts(t, q);
    assert_int_equal(c.ready, 3);
    assert_int_equal(c.inflight, 0);

    /* a receive now counts from where the messages were: the peeks did
     * not count */
    t_recv(t, q, 10, 30, &d);
    assert_int_equal(d.count, 3);
    for (size_t i = 0; i < d.count; i++) {
        assert_int_equal(d.msgs[i].receive_count, strcmp(d.msgs[i].body, "one") == 0 ? 3 : 1);
    }
    /* in flight now: a peek shows only ready messages */
    struct part_peek_list l;
    assert_int_equal(part_peek(t->e, q, 10, &l, NULL), SL_OK);
    assert_int_equal(l.count, 0);
    part_peek_list_free(&l);
}

static void test_peek_best_first_and_bounded(void **state)
{
    struct t_env *t = *state;
    struct part_queue_config cfg = part_queue_config_default();
    uint64_t q = t_create(t, "acme", "q", &cfg);
    const char *bodies[] = {"m0", "m1", "m2", "m3", "m4"};
    for (int i = 0; i < 5; i++) {
        t_send(t, q, (uint32_t)(i % 2), bodies[i]);
        t_advance(t, 5);
    }
    struct part_peek_list l;
    assert_int_equal(part_peek(t->e, q, 2, &l, NULL), SL_OK);
    assert_int_equal(l.count, 2);
    assert_non_null(find(&l, "m0"));
    assert_non_null(find(&l, "m1"));
    assert_true(l.items[0].sent_ms <= l.items[1].sent_ms);
    part_peek_list_free(&l);
    assert_int_equal(part_peek(t->e, q, 0, &l, NULL), SL_EINVAL);
    assert_int_equal(part_peek(t->e, q, PART_PEEK_MAX + 1, &l, NULL), SL_EINVAL);
    assert_int_equal(part_peek(t->e, q + 100, 5, &l, NULL), SL_ENOTFOUND);
    assert_int_equal(l.count, 0);
}

static void test_remove_ready_only(void **state)
{
    struct t_env *t = *state;
    struct part_queue_config cfg = part_queue_config_default();
    uint64_t q = t_create(t, "acme", "q", &cfg);
    uint64_t other = t_create(t, "acme", "other", &cfg);
    t_send(t, q, 0, "held");
    t_advance(t, 5);
    t_send(t, q, 0, "free");
    struct t_done d;
    t_recv(t, q, 1, 30, &d); /* "held" in flight */
    assert_string_equal(d.msgs[0].body, "held");
    struct part_receipt rh;
    assert_int_equal(part_receipt_decode(t->e, d.msgs[0].receipt, strlen(d.msgs[0].receipt), &rh),
                     SL_OK);
    t_sync(t);

    struct part_peek_list l;
    assert_int_equal(part_peek(t->e, q, 10, &l, NULL), SL_OK);
    assert_int_equal(l.count, 1);
    uint64_t seq = l.items[0].sequence;
    uint32_t p = l.items[0].partition;
    part_peek_list_free(&l);

    assert_int_equal(remove_row(t, other, p, seq), SL_ENOTFOUND);     /* another queue's row */
    assert_int_equal(remove_row(t, q, p, rh.sequence), SL_ENOTFOUND); /* in flight */
    assert_int_equal(remove_row(t, q, p, seq), SL_OK);
    assert_int_equal(remove_row(t, q, p, seq), SL_ENOTFOUND); /* gone */
    struct part_counts c = t_counts(t, q);
    assert_int_equal(c.ready, 0);
    assert_int_equal(c.inflight, 1);

    struct one_done od = {0};
    assert_int_equal(part_remove(t->c, q, p, 0, (struct part_cookie){&od, 0, 0}, on_one),
                     SL_EINVAL);
    assert_int_equal(part_remove(t->c, q, t->nparts, 1, (struct part_cookie){&od, 0, 0}, on_one),
                     SL_EINVAL);
    assert_int_equal(part_remove(t->c, q + 100, p, 1, (struct part_cookie){&od, 0, 0}, on_one),
                     SL_ENOTFOUND);
    assert_false(od.done);
}

static void test_move_one_row(void **state)
{
    struct t_env *t = *state;
    struct part_queue_config cfg = part_queue_config_default();
    uint64_t q = t_create(t, "acme", "dlq", &cfg);
    uint64_t dest = t_create(t, "acme", "parking", &cfg);
    t_send(t, q, 0, "a");
    t_send(t, q, 0, "b");
    t_send(t, q, 0, "c");
    struct part_peek_list l;
    assert_int_equal(part_peek(t->e, q, 10, &l, NULL), SL_OK);
    assert_int_equal(l.count, 3);
    uint64_t seq_b = find(&l, "b")->sequence;
    uint64_t seq_a = find(&l, "a")->sequence;
    part_peek_list_free(&l);

    assert_int_equal(move_row(t, q, 0, dest, seq_b), 1);
    assert_int_equal(move_row(t, q, 0, dest, seq_b), 0); /* moved already: "c" stays */
    assert_int_equal(t_counts(t, q).ready, 2);
    assert_int_equal(t_counts(t, dest).ready, 1);
    assert_int_equal(part_peek(t->e, dest, 10, &l, NULL), SL_OK);
    assert_int_equal(l.count, 1);
    assert_non_null(find(&l, "b"));
    assert_int_equal(l.items[0].receive_count, 0);
    part_peek_list_free(&l);

    /* a row in flight is not moved, nor the one after it */
    struct t_done d;
    t_recv(t, q, 1, 30, &d);
    assert_string_equal(d.msgs[0].body, "a");
    assert_int_equal(move_row(t, q, 0, dest, seq_a), 0);
    assert_int_equal(t_counts(t, q).ready, 1);
    assert_int_equal(t_counts(t, dest).ready, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_peek_leases_nothing, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_peek_best_first_and_bounded, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_remove_ready_only, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_move_one_row, t_setup, t_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
