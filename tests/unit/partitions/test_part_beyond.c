/*
 * test_part_beyond.c -- the engine's part of sluice's features beyond SQS
 * (docs/api.md, "Beyond SQS"): priority queues (order across partitions,
 * no aging, priority through dead-letter moves and redrives) and
 * idempotent sends on standard queues (one row per id within the queue's
 * window, batches, restarts, purges), and the queue settings surviving a
 * restart of the catalog.
 */
#include <time.h>

#include "part_test_util.h"

/* A standard queue of tenant acme with sluice's own settings. */
static uint64_t create_own(struct t_env *t, const char *name, bool priority, uint32_t window_s)
{
    struct part_queue_config cfg = part_queue_config_default();
    cfg.priority_order = priority;
    cfg.idempotency_window_s = window_s;
    return t_create(t, "acme", name, &cfg);
}

static void send_prio(struct t_env *t, uint64_t q, uint32_t p, const char *body, int64_t prio)
{
    struct t_done d;
    t_send_ex(t, q, p, body, -1, true, prio, &d);
    assert_int_equal(d.status, SL_OK);
}

/* One message with a deduplication id (NULL: none); d gets the answer. */
static void send_keyed(struct t_env *t, uint64_t q, uint32_t p, const char *body, const char *key,
                       struct t_done *d)
{
    struct part_send_entry en = {.body = sl_slice_cstr(body), .delay_s = -1};
    if (key != NULL) {
        en.dedup_id = sl_slice_cstr(key);
    }
    assert_int_equal(part_send(t->c, q, p, &en, 1, t_ck(d), t_on_done), SL_OK);
    t_wait(t, d);
    assert_int_equal(d->status, SL_OK);
    assert_int_equal(d->count, 1);
}

/* Receives one message at a time (long leases) and writes their bodies'
 * first letters, in order, to out. */
static void drain_letters(struct t_env *t, uint64_t q, char *out, size_t cap)
{
    size_t n = 0;
    for (;;) {
        struct t_done r;
        t_recv(t, q, 1, 300, &r);
        assert_int_equal(r.status, SL_OK);
        if (r.count == 0 || n + 1 >= cap) {
            break;
        }
        out[n++] = r.msgs[0].body[0];
    }
    out[n] = '\0';
}

static void test_priority_order_across_partitions(void **state)
{
    struct t_env *t = *state;
    uint64_t q = create_own(t, "prio", true, 0);
    send_prio(t, q, 0, "c", 30);
    send_prio(t, q, 0, "a", 10);
    send_prio(t, q, 1, "d", 40);
    send_prio(t, q, 1, "b", 20);
    /* Without a priority a message's deadline is its send time (ms), far
     * behind these small numbers. */
    t_send(t, q, 1, "z");
    /* Equal priorities on one partition: send order. */
    send_prio(t, q, 0, "e", 50);
    send_prio(t, q, 0, "f", 50);
    char got[16];
    drain_letters(t, q, got, sizeof got);
    assert_string_equal(got, "abcdefz");
}

/* Interleaved priorities on two partitions, one receive of ten: a
 * priority queue merges them exactly; a plain queue takes the best
 * partition's rows first (its order is only best-effort). */
static void test_priority_receive_merges_partitions(void **state)
{
    struct t_env *t = *state;
    uint64_t prio = create_own(t, "prio", true, 0);
    uint64_t plain = create_own(t, "plain", false, 0);
    char body[8];
    for (int i = 1; i <= 10; i++) {
        snprintf(body, sizeof body, "%c", 'a' + i - 1);
        send_prio(t, prio, (uint32_t)(i % 2), body, i);
        send_prio(t, plain, (uint32_t)(i % 2), body, i);
    }
    struct t_done r;
    t_recv(t, prio, 10, 300, &r);
    assert_int_equal(r.count, 10);
    char got[16] = "";
    for (size_t i = 0; i < r.count; i++) {
        got[i] = r.msgs[i].body[0];
    }
    assert_string_equal(got, "abcdefghij");
    t_recv(t, plain, 10, 300, &r);
    assert_int_equal(r.count, 10);
    for (size_t i = 0; i < r.count; i++) {
        got[i] = r.msgs[i].body[0];
    }
    assert_string_equal(got, "acegibdfhj");
    /* a partial merge: three, then the rest in order */
    for (int i = 1; i <= 6; i++) {
        snprintf(body, sizeof body, "%c", 'k' + i - 1);
        send_prio(t, prio, (uint32_t)(i % 2), body, 100 + i);
    }
    t_recv(t, prio, 3, 300, &r);
    assert_int_equal(r.count, 3);
    assert_string_equal(r.msgs[2].body, "m");
    t_recv(t, prio, 10, 300, &r);
    assert_int_equal(r.count, 3);
    assert_string_equal(r.msgs[0].body, "n");
    assert_string_equal(r.msgs[2].body, "p");
}

/* Equal priorities on two partitions: the earlier send first, across
 * partitions too (the partition order alone would put partition 0's
 * first). */
static void test_priority_ties_by_send_time(void **state)
{
    struct t_env *t = *state;
    uint64_t q = create_own(t, "ties", true, 0);
    send_prio(t, q, 1, "old", 5);
    t_advance(t, 10);
    send_prio(t, q, 0, "new", 5);
    t_advance(t, 10);
    send_prio(t, q, 1, "newest", 5);
    struct t_done r;
    t_recv(t, q, 10, 300, &r);
    assert_int_equal(r.count, 3);
    assert_string_equal(r.msgs[0].body, "old");
    assert_string_equal(r.msgs[1].body, "new");
    assert_string_equal(r.msgs[2].body, "newest");
    /* and one at a time, straight from the right partition: planned by
     * (priority, send time), the receive does not visit partition 0 */
    send_prio(t, q, 1, "b", 6);
    t_advance(t, 10);
    send_prio(t, q, 0, "c", 6);
    t_sync(t);
    struct part_partition_stats before;
    struct part_partition_stats after;
    assert_int_equal(part_engine_stats(t->e, 0, &before), SL_OK);
    t_recv(t, q, 1, 300, &r);
    assert_string_equal(r.msgs[0].body, "b");
    assert_int_equal(part_engine_stats(t->e, 0, &after), SL_OK);
    assert_int_equal(after.commits, before.commits);
}

static void test_priority_queue_is_not_aged(void **state)
{
    struct t_env *t = *state;
    part_tenant_set_aging(t->e, "acme", 60000);
    uint64_t prio = create_own(t, "prio", true, 0);
    uint64_t plain = create_own(t, "plain", false, 0);
    send_prio(t, prio, 0, "urgent", 1);
    t_send(t, prio, 1, "later");
    /* The same on a queue without priority order: aging takes priority 1
     * for a send time in 1970 and sidelines it at once. */
    send_prio(t, plain, 0, "urgent", 1);
    t_advance(t, 120000);
    t_sync(t);
    t_sync(t);
    assert_int_equal(t_counts(t, plain).overflow_ready, 1);
    struct part_counts c = t_counts(t, prio);
    assert_int_equal(c.ready, 2);
    assert_int_equal(c.overflow_ready, 0);
    struct t_done r;
    t_recv(t, prio, 1, 300, &r);
    assert_string_equal(r.msgs[0].body, "urgent");
    /* No aging check is even scheduled: one due at once (priority 1 is
     * "sent" in 1970) would fire after every commit, and the writer
     * would spin. */
    struct part_partition_stats before;
    struct part_partition_stats after;
    assert_int_equal(part_engine_stats(t->e, 1, &before), SL_OK);
    struct timespec pause = {0, 200L * 1000 * 1000};
    nanosleep(&pause, NULL);
    assert_int_equal(part_engine_stats(t->e, 1, &after), SL_OK);
    assert_true(after.commits - before.commits <= 2);
}

static void test_settings_survive_restart(void **state)
{
    struct t_env *t = *state;
    create_own(t, "both", true, PART_IDEMPOTENCY_WINDOW_MAX_S);
    create_own(t, "neither", false, 0);
    struct part_queue_config fc = part_queue_config_default();
    fc.fifo = true;
    fc.content_based_dedup = true;
    t_create(t, "acme", "q.fifo", &fc);
    t_close(t);
    t_open(t);
    uint64_t id;
    struct part_queue_config cfg;
    assert_int_equal(part_queue_find(t->e, "acme", "both", &id, &cfg), SL_OK);
    assert_true(cfg.priority_order);
    assert_int_equal(cfg.idempotency_window_s, PART_IDEMPOTENCY_WINDOW_MAX_S);
    assert_false(cfg.fifo);
    assert_int_equal(part_queue_find(t->e, "acme", "neither", &id, &cfg), SL_OK);
    assert_false(cfg.priority_order);
    assert_int_equal(cfg.idempotency_window_s, 0);
    assert_int_equal(part_queue_find(t->e, "acme", "q.fifo", &id, &cfg), SL_OK);
    assert_true(cfg.fifo);
    assert_true(cfg.content_based_dedup);
    assert_false(cfg.priority_order);
    assert_int_equal(cfg.idempotency_window_s, 0);
}

static void test_priority_through_dlq_and_redrive(void **state)
{
    struct t_env *t = *state;
    uint64_t dlq = create_own(t, "dlq", true, 0);
    struct part_queue_config cfg = part_queue_config_default();
    cfg.priority_order = true;
    cfg.dlq_target_id = dlq;
    cfg.max_receive_count = 1;
    uint64_t q = t_create(t, "acme", "work", &cfg);
    send_prio(t, q, 0, "p7", 7);
    t_send(t, q, 0, "none");
    /* Both received once (vis 0: ready again at once), then moved to the
     * DLQ on the next receive, keeping their row and priority. */
    struct t_done r;
    t_recv(t, q, 10, 0, &r);
    assert_int_equal(r.count, 2);
    t_sync(t); /* the writer's timers make them ready again */
    t_recv(t, q, 10, 0, &r);
    assert_int_equal(r.count, 0);
    assert_int_equal(t_counts(t, dlq).ready, 2);
    t_recv(t, dlq, 10, 0, &r);
    assert_int_equal(r.count, 2);
    assert_string_equal(r.msgs[0].body, "p7");
    assert_int_equal(r.msgs[0].priority, 7);
    int64_t sent_none = (int64_t)T_START_MS;
    assert_int_equal(r.msgs[1].priority, sent_none);

    /* Redrive back: the given priority stays, the other is sent anew. */
    t_advance(t, 5000);
    struct part_move_req req = {.queue_id = dlq, .partition = 0, .max_messages = 10};
    struct t_done m;
    assert_int_equal(part_move(t->c, &req, t_ck(&m), t_on_done), SL_OK);
    t_wait(t, &m);
    assert_int_equal(m.status, SL_OK);
    t_recv(t, q, 10, 300, &r);
    assert_int_equal(r.count, 2);
    assert_string_equal(r.msgs[0].body, "p7");
    assert_int_equal(r.msgs[0].priority, 7);
    assert_string_equal(r.msgs[1].body, "none");
    assert_int_equal(r.msgs[1].priority, (int64_t)T_START_MS + 5000);
}

static void test_redrive_to_plain_queue_resets_priority(void **state)
{
    struct t_env *t = *state;
    uint64_t dlq = create_own(t, "dlq", false, 0);
    uint64_t dest = create_own(t, "plain", false, 0);
    send_prio(t, dlq, 0, "p7", 7);
    t_advance(t, 1000);
    struct part_move_req req = {
        .queue_id = dlq, .partition = 0, .dest_queue_id = dest, .max_messages = 10};
    struct t_done m;
    assert_int_equal(part_move(t->c, &req, t_ck(&m), t_on_done), SL_OK);
    t_wait(t, &m);
    struct t_done r;
    t_recv(t, dest, 10, 300, &r);
    assert_int_equal(r.count, 1);
    assert_int_equal(r.msgs[0].priority, (int64_t)T_START_MS + 1000);
}

static void test_idempotent_send_stored_once(void **state)
{
    struct t_env *t = *state;
    uint64_t q = create_own(t, "idem", false, 60);
    struct t_done a;
    struct t_done b;
    send_keyed(t, q, 0, "first", "k1", &a);
    assert_false(a.sent_dup[0]);
    send_keyed(t, q, 0, "second", "k1", &b);
    assert_true(b.sent_dup[0]);
    assert_string_equal(b.sent_ids[0], a.sent_ids[0]);
    assert_int_equal(b.sent_seq[0], a.sent_seq[0]);
    /* Without an id a send is an ordinary one. */
    send_keyed(t, q, 0, "free", NULL, &b);
    send_keyed(t, q, 0, "free", NULL, &b);
    assert_false(b.sent_dup[0]);
    assert_int_equal(t_counts(t, q).ready, 3);

    /* After a delete the id still counts, across a restart too. */
    struct t_done r;
    t_recv(t, q, 10, 300, &r);
    assert_int_equal(r.count, 3);
    for (size_t i = 0; i < r.count; i++) {
        struct t_done d;
        t_delete(t, q, r.msgs[i].receipt, &d);
    }
    t_close(t);
    t_open(t);
    send_keyed(t, q, 0, "again", "k1", &b);
    assert_true(b.sent_dup[0]);
    assert_string_equal(b.sent_ids[0], a.sent_ids[0]);
    assert_int_equal(t_counts(t, q).ready, 0);

    /* One millisecond before the window ends it still counts; at its
     * end the id is new again. */
    t_advance(t, 59999);
    send_keyed(t, q, 0, "again", "k1", &b);
    assert_true(b.sent_dup[0]);
    t_advance(t, 1);
    send_keyed(t, q, 0, "again", "k1", &b);
    assert_false(b.sent_dup[0]);
    assert_int_equal(t_counts(t, q).ready, 1);
}

static void test_idempotent_batch_and_purge(void **state)
{
    struct t_env *t = *state;
    uint64_t q = create_own(t, "idem", false, 300);
    struct part_send_entry en[4] = {
        {.body = SL_SLICE_LIT("a"), .dedup_id = SL_SLICE_LIT("x"), .delay_s = -1},
        {.body = SL_SLICE_LIT("b"), .dedup_id = SL_SLICE_LIT("y"), .delay_s = -1},
        {.body = SL_SLICE_LIT("c"), .dedup_id = SL_SLICE_LIT("x"), .delay_s = -1},
        {.body = SL_SLICE_LIT("d"), .delay_s = -1},
    };
    struct t_done d;
    assert_int_equal(part_send(t->c, q, 1, en, 4, t_ck(&d), t_on_done), SL_OK);
    t_wait(t, &d);
    assert_int_equal(d.status, SL_OK);
    assert_int_equal(d.count, 4);
    assert_false(d.sent_dup[0]);
    assert_false(d.sent_dup[1]);
    assert_true(d.sent_dup[2]); /* entries are deduplicated one by one */
    assert_string_equal(d.sent_ids[2], d.sent_ids[0]);
    assert_false(d.sent_dup[3]);
    assert_int_equal(t_counts(t, q).ready, 3);
    assert_int_equal(t_part_int(t, 1, "SELECT count(*) FROM dedup"), 2);
    /* Ids are the queue's own: another idempotent queue stores "x". */
    uint64_t other = create_own(t, "other", false, 300);
    struct t_done o;
    send_keyed(t, other, 1, "a", "x", &o);
    assert_false(o.sent_dup[0]);
    /* A purge forgets the queue's ids, not the other's. */
    struct t_done p;
    assert_int_equal(part_purge(t->c, q, t_ck(&p), t_on_done), SL_OK);
    t_wait(t, &p);
    send_keyed(t, q, 1, "a", "x", &o);
    assert_false(o.sent_dup[0]);
    send_keyed(t, other, 1, "a", "x", &o);
    assert_true(o.sent_dup[0]);
}

static void test_ids_ignored_without_window(void **state)
{
    struct t_env *t = *state;
    uint64_t q = create_own(t, "plain", false, 0);
    struct t_done d;
    send_keyed(t, q, 0, "a", "k", &d);
    send_keyed(t, q, 0, "a", "k", &d);
    assert_false(d.sent_dup[0]);
    assert_int_equal(t_counts(t, q).ready, 2);
    assert_int_equal(t_part_int(t, 0, "SELECT count(*) FROM dedup"), 0);
}

static void test_idempotent_ids_swept(void **state)
{
    struct t_env *t = *state;
    uint64_t q = create_own(t, "idem", false, 10);
    struct t_done d;
    char key[16];
    for (int i = 0; i < 20; i++) {
        snprintf(key, sizeof key, "k%d", i);
        send_keyed(t, q, 0, "a", key, &d);
    }
    assert_int_equal(t_part_int(t, 0, "SELECT count(*) FROM dedup"), 20);
    t_advance(t, 10000);
    send_keyed(t, q, 0, "a", "new", &d);
    /* the send removed the expired ids first (at least 16 + 2 of them) */
    assert_true(t_part_int(t, 0, "SELECT count(*) FROM dedup") <= 3);
}

/* One message of exclusivity value v (its group id) to partition 0. */
static void send_value(struct t_env *t, uint64_t q, const char *body, const char *v)
{
    struct part_send_entry en = {
        .body = sl_slice_cstr(body), .group_id = sl_slice_cstr(v), .delay_s = -1};
    struct t_done d;
    assert_int_equal(part_send(t->c, q, 0, &en, 1, t_ck(&d), t_on_done), SL_OK);
    t_wait(t, &d);
    assert_int_equal(d.status, SL_OK);
}

/* The bodies of one receive of up to ten, space-separated. */
static void recv_bodies(struct t_env *t, uint64_t q, uint32_t vis, struct t_done *r, char *out,
                        size_t cap)
{
    t_recv(t, q, 10, (int32_t)vis, r);
    assert_int_equal(r->status, SL_OK);
    out[0] = '\0';
    for (size_t i = 0; i < r->count; i++) {
        size_t n = strlen(out);
        snprintf(out + n, cap - n, "%s%s", i ? " " : "", r->msgs[i].body);
    }
}

static void test_exclusive_one_per_value(void **state)
{
    struct t_env *t = *state;
    struct part_queue_config cfg = part_queue_config_default();
    cfg.exclusive = true;
    uint64_t q = t_create(t, "acme", "excl", &cfg);
    send_value(t, q, "a1", "a");
    send_value(t, q, "a2", "a");
    send_value(t, q, "b1", "b");
    send_value(t, q, "a3", "a");
    send_value(t, q, "c1", "c");
    char got[128];
    struct t_done r1;
    recv_bodies(t, q, 300, &r1, got, sizeof got);
    assert_string_equal(got, "a1 b1 c1"); /* one per value, in order */
    struct t_done r;
    recv_bodies(t, q, 300, &r, got, sizeof got);
    assert_string_equal(got, ""); /* every value held */
    assert_int_equal(t_counts(t, q).groups_inflight, 3);
    assert_int_equal(t_counts(t, q).exclusive_blocked, 2); /* a2, a3 */

    /* A delete frees a: its next message, not a3 */
    struct t_done d;
    t_delete(t, q, r1.msgs[0].receipt, &d);
    recv_bodies(t, q, 300, &r, got, sizeof got);
    assert_string_equal(got, "a2");
    assert_int_equal(t_counts(t, q).exclusive_blocked, 1); /* a3 */
    /* Visibility 0 frees b: b1 again */
    t_chvis(t, q, r1.msgs[1].receipt, 0, &d);
    recv_bodies(t, q, 5, &r, got, sizeof got);
    assert_string_equal(got, "b1");
    /* A lapsed lease frees it as well */
    t_advance(t, 5000);
    t_sync(t);
    recv_bodies(t, q, 300, &r, got, sizeof got);
    assert_string_equal(got, "b1");

    /* A restart keeps the holds: a2, b1 and c1 are still in flight */
    t_close(t);
    t_open(t);
    send_value(t, q, "d1", "d");
    recv_bodies(t, q, 300, &r, got, sizeof got);
    assert_string_equal(got, "d1");
}

/* A value whose home moved (a grown shard) while it has live messages:
 * its next message follows them (the group directory FIFO queues use),
 * so the partition that holds it keeps the hold. */
static void test_exclusive_value_follows_its_messages(void **state)
{
    struct t_env *t = *state;
    struct part_queue_config cfg = part_queue_config_default();
    cfg.exclusive = true;
    uint64_t q = t_create(t, "acme", "excl", &cfg);
    send_value(t, q, "v1", "v"); /* home: partition 0 */
    struct t_done r1;
    char got[64];
    recv_bodies(t, q, 300, &r1, got, sizeof got);
    assert_string_equal(got, "v1");
    /* the new home says partition 1 */
    struct part_send_entry en = {
        .body = SL_SLICE_LIT("v2"), .group_id = SL_SLICE_LIT("v"), .delay_s = -1};
    struct t_done d;
    assert_int_equal(part_send(t->c, q, 1, &en, 1, t_ck(&d), t_on_done), SL_OK);
    t_wait(t, &d);
    assert_int_equal(d.status, SL_OK);
    assert_int_equal(d.sent_part[0], 0); /* where v lives */
    struct t_done r;
    recv_bodies(t, q, 300, &r, got, sizeof got);
    assert_string_equal(got, ""); /* still held */
    t_delete(t, q, r1.msgs[0].receipt, &d);
    recv_bodies(t, q, 300, &r, got, sizeof got);
    assert_string_equal(got, "v2");
    /* a restart rebuilds the directory from the rows */
    t_close(t);
    t_open(t);
    en.body = SL_SLICE_LIT("v3");
    assert_int_equal(part_send(t->c, q, 1, &en, 1, t_ck(&d), t_on_done), SL_OK);
    t_wait(t, &d);
    assert_int_equal(d.sent_part[0], 0);
    recv_bodies(t, q, 300, &r, got, sizeof got);
    assert_string_equal(got, ""); /* v2 is in flight */
    /* a message without a value is refused by the engine */
    struct part_send_entry none = {.body = SL_SLICE_LIT("x"), .delay_s = -1};
    assert_int_equal(part_send(t->c, q, 0, &none, 1, t_ck(&d), t_on_done), SL_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_priority_order_across_partitions, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_priority_receive_merges_partitions, t_setup,
                                        t_teardown),
        cmocka_unit_test_setup_teardown(test_priority_ties_by_send_time, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_priority_queue_is_not_aged, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_settings_survive_restart, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_priority_through_dlq_and_redrive, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_redrive_to_plain_queue_resets_priority, t_setup,
                                        t_teardown),
        cmocka_unit_test_setup_teardown(test_idempotent_send_stored_once, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_idempotent_batch_and_purge, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_ids_ignored_without_window, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_idempotent_ids_swept, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_exclusive_one_per_value, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_exclusive_value_follows_its_messages, t_setup,
                                        t_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
