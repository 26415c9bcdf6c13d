/*
 * test_part_gdir.c -- the FIFO group directory: the table itself against
 * its rules (place, move in, drop, the lock rule, start-up ordering), then
 * through the engine on two partitions: a group split by a move is leased
 * only by its oldest partition and moves on after the drain (the next
 * partition's long poll is woken), sends follow a live group, a batch
 * fans out over its groups' partitions, duplicates and failed shares or
 * moves give their counts back,
 * a dead-letter move into a DLQ registers, and a restart rebuilds the
 * order from the oldest sequence numbers, a partition holding a lease
 * first.
 */
#include "part_test_util.h"

#include "part_catalog.h"
#include "part_gdir.h"
#include "part_int.h"

/* The partitions of group in q's directory, first to last, as "p:count"
 * pairs ("" when it has no entry). */
static const char *parts_of(struct t_env *t, uint64_t queue_id, const char *group)
{
    static char out[128];
    struct part_queue *q = part__queue_ref(t->e, queue_id);
    assert_non_null(q);
    uint32_t p[8];
    int64_t c[8];
    size_t n = part__gdir_parts(q->gdir, group, p, c, 8);
    out[0] = '\0';
    for (size_t i = 0; i < n && i < 8; i++) {
        size_t len = strlen(out);
        snprintf(out + len, sizeof out - len, "%s%u:%lld", i ? " " : "", p[i], (long long)c[i]);
    }
    part__queue_unref(q);
    return out;
}

static const char *dir_parts(struct part_gdir *d, const char *group)
{
    static char out[128];
    uint32_t p[8];
    int64_t c[8];
    size_t n = part__gdir_parts(d, group, p, c, 8);
    out[0] = '\0';
    for (size_t i = 0; i < n && i < 8; i++) {
        size_t len = strlen(out);
        snprintf(out + len, sizeof out - len, "%s%u:%lld", i ? " " : "", p[i], (long long)c[i]);
    }
    return out;
}

/* ---- the table ------------------------------------------------------------- */

static void test_table_rules(void **state)
{
    (void)state;
    struct part_gdir *d = part__gdir_new();
    /* a new group starts at its home; a live one stays where it is */
    const char *g[3] = {"g", "h", "g"};
    uint32_t homes[3] = {1, 0, 0};
    uint32_t out[3];
    part__gdir_place(d, g, homes, 3, out);
    assert_int_equal(out[0], 1);
    assert_int_equal(out[1], 0);
    assert_int_equal(out[2], 1);
    assert_string_equal(dir_parts(d, "g"), "1:2");
    assert_int_equal(part__gdir_groups(d), 2);
    assert_int_equal(part__gdir_spanning(d), 0);
    assert_true(part__gdir_may_lease(d, "g", 0)); /* nothing split: no lookup */
    /* a move in on partition 0 appends it: only 1 leases now */
    part__gdir_add(d, "g", 0);
    part__gdir_add(d, "g", 1); /* already listed: counts there */
    assert_string_equal(dir_parts(d, "g"), "1:3 0:1");
    assert_int_equal(part__gdir_spanning(d), 1);
    assert_true(part__gdir_may_lease(d, "g", 1));
    assert_false(part__gdir_may_lease(d, "g", 0));
    assert_true(part__gdir_may_lease(d, "h", 0));
    assert_true(part__gdir_may_lease(d, "nobody", 0));
    /* a send goes to the newest partition */
    part__gdir_place(d, g, homes, 1, out);
    assert_int_equal(out[0], 0);
    assert_string_equal(dir_parts(d, "g"), "1:3 0:2");
    /* the first drains: the next is announced and leases */
    assert_int_equal(part__gdir_drop(d, "g", 1, 2), PART_GDIR_NONE);
    assert_int_equal(part__gdir_drop(d, "g", 1, 1), 0);
    assert_string_equal(dir_parts(d, "g"), "0:2");
    assert_int_equal(part__gdir_spanning(d), 0);
    assert_true(part__gdir_may_lease(d, "g", 0));
    /* the last one gone: no entry, the next send starts at its home */
    assert_int_equal(part__gdir_drop(d, "g", 0, 2), PART_GDIR_NONE);
    assert_string_equal(dir_parts(d, "g"), "");
    assert_int_equal(part__gdir_groups(d), 1);
    part__gdir_place(d, g, homes, 1, out);
    assert_int_equal(out[0], 1);
    /* a later partition that empties leaves without announcing anyone */
    part__gdir_add(d, "g", 0);
    assert_int_equal(part__gdir_drop(d, "g", 0, 1), PART_GDIR_NONE);
    assert_string_equal(dir_parts(d, "g"), "1:1");
    part__gdir_free(d);
}

static void test_table_load_order(void **state)
{
    (void)state;
    struct part_gdir *d = part__gdir_new();
    /* at open: by the oldest message, whatever order partitions load in */
    part__gdir_load(d, "g", 0, 2, 500, true);
    part__gdir_load(d, "g", 1, 1, 100, true);
    part__gdir_load(d, "g", 2, 4, 300, true);
    part__gdir_load(d, "h", 3, 0, 1, true); /* nothing live: no entry */
    assert_string_equal(dir_parts(d, "g"), "1:1 2:4 0:2");
    assert_string_equal(dir_parts(d, "h"), "");
    assert_int_equal(part__gdir_spanning(d), 1);
    /* a partition opened late goes last: it must not take the lead */
    part__gdir_load(d, "g", 3, 1, 1, false);
    assert_string_equal(dir_parts(d, "g"), "1:1 2:4 0:2 3:1");
    part__gdir_free(d);
}

/* Many groups: the table grows and every entry is found again. */
static void test_table_many_groups(void **state)
{
    (void)state;
    struct part_gdir *d = part__gdir_new();
    char name[32];
    for (int i = 0; i < 5000; i++) {
        snprintf(name, sizeof name, "group-%d", i);
        const char *g = name;
        uint32_t home = (uint32_t)(i % 7), out;
        part__gdir_place(d, &g, &home, 1, &out);
        assert_int_equal(out, home);
    }
    assert_int_equal(part__gdir_groups(d), 5000);
    for (int i = 0; i < 5000; i += 2) {
        snprintf(name, sizeof name, "group-%d", i);
        assert_int_equal(part__gdir_drop(d, name, (uint32_t)(i % 7), 1), PART_GDIR_NONE);
    }
    assert_int_equal(part__gdir_groups(d), 2500);
    snprintf(name, sizeof name, "group-%d", 4999);
    assert_string_equal(dir_parts(d, name), "1:1");
    part__gdir_free(d);
}

/* ---- through the engine -------------------------------------------------------- */

/* A FIFO entry whose deduplication id is its body. */
static struct part_send_entry fentry(const char *body, const char *group)
{
    return (struct part_send_entry){.body = sl_slice_cstr(body),
                                    .group_id = sl_slice_cstr(group),
                                    .dedup_id = sl_slice_cstr(body),
                                    .delay_s = -1};
}

/* Moves every ready message of from on partition p into dest, in place. */
static void move_all(struct t_env *t, uint64_t from, uint32_t p, uint64_t dest)
{
    struct t_done d;
    struct part_move_req req = {
        .queue_id = from, .partition = p, .dest_queue_id = dest, .max_messages = 10};
    t_ck(&d);
    assert_int_equal(part_move(t->c, &req, (struct part_cookie){&d, 0, 0}, t_on_moved), SL_OK);
    t_wait(t, &d);
    assert_int_equal(d.status, SL_OK);
    assert_true(d.count > 0);
}

/* dest holds "b0" of g on partition 0, then "a" moved in on partition 1. */
static uint64_t split_group(struct t_env *t, const char *prefix)
{
    char dname[32], xname[32];
    snprintf(dname, sizeof dname, "%s-d.fifo", prefix);
    snprintf(xname, sizeof xname, "%s-x.fifo", prefix);
    uint64_t dest = t_create_fifo(t, dname, false);
    uint64_t x = t_create_fifo(t, xname, false);
    struct t_done d;
    t_send_fifo(t, dest, 0, "b0", "g", "b0", &d);
    t_send_fifo(t, x, 1, "a", "g", "a", &d);
    assert_int_equal(d.sent_part[0], 1);
    move_all(t, x, 1, dest);
    assert_string_equal(parts_of(t, dest, "g"), "0:1 1:1");
    assert_string_equal(parts_of(t, x, "g"), "");
    return dest;
}

static void test_only_the_oldest_partition_leases(void **state)
{
    struct t_env *t = *state;
    uint64_t q = split_group(t, "lock");
    struct t_done r1, r2, d;
    t_recv(t, q, 10, 30, &r1);
    assert_int_equal(r1.count, 1);
    assert_string_equal(r1.msgs[0].body, "b0");
    assert_int_equal(r1.msgs[0].partition, 0);
    t_recv(t, q, 10, 30, &r2); /* partition 1 holds g, locked */
    assert_int_equal(r2.count, 0);
    /* a long poll parks; the drain of partition 0 wakes partition 1 */
    struct t_done w;
    t_recv_parked(t, q, &w);
    t_delete(t, q, r1.msgs[0].receipt, &d);
    t_wait(t, &w);
    assert_int_equal(w.count, 1);
    assert_string_equal(w.msgs[0].body, "a");
    assert_int_equal(w.msgs[0].partition, 1);
    assert_string_equal(parts_of(t, q, "g"), "1:1");
    t_delete(t, q, w.msgs[0].receipt, &d);
    t_sync(t);
    assert_string_equal(parts_of(t, q, "g"), "");
}

/* Sends follow a live group to its newest partition; a batch whose
 * groups live apart fans out, each share in order; duplicates give their
 * counts back. */
static void test_sends_follow_the_group(void **state)
{
    struct t_env *t = *state;
    uint64_t q = split_group(t, "send");
    struct t_done d;
    t_send_fifo(t, q, 0, "c", "g", "c", &d); /* home 0, but g's newest is 1 */
    assert_int_equal(d.sent_part[0], 1);
    assert_string_equal(parts_of(t, q, "g"), "0:1 1:2");
    struct part_send_entry en[3] = {fentry("h1", "h"), fentry("e", "g"), fentry("h2", "h")};
    assert_int_equal(part_send(t->c, q, 0, en, 3, t_ck(&d), t_on_done), SL_OK);
    t_wait(t, &d);
    assert_int_equal(d.status, SL_OK);
    assert_int_equal(d.count, 3);
    assert_int_equal(d.sent_part[0], 0);
    assert_int_equal(d.sent_part[1], 1);
    assert_int_equal(d.sent_part[2], 0);
    assert_true(d.sent_seq[2] > d.sent_seq[0]);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(d.entry[i], SL_OK);
    }
    assert_string_equal(parts_of(t, q, "h"), "0:2");
    /* a duplicate stores nothing and holds nothing */
    t_send_fifo(t, q, 0, "c", "g", "c", &d);
    assert_true(d.sent_dup[0]);
    assert_string_equal(parts_of(t, q, "g"), "0:1 1:3");
    /* and a purge empties the directory */
    t_ck(&d);
    assert_int_equal(part_purge(t->c, q, t_ck(&d), t_on_done), SL_OK);
    t_wait(t, &d);
    assert_string_equal(parts_of(t, q, "g"), "");
    assert_string_equal(parts_of(t, q, "h"), "");
}

/* A share of a send that fails fails its messages alone and gives their
 * counts back; so does a move that rolls back. */
static void test_failures_give_counts_back(void **state)
{
    struct t_env *t = *state;
    uint64_t q = split_group(t, "fail");
    sqlite3 *db = t_fault(t, 1,
                          "CREATE TRIGGER t_fault BEFORE INSERT ON msg"
                          " BEGIN SELECT RAISE(ABORT, 'injected fault'); END;");
    struct part_send_entry en[2] = {fentry("h1", "h"), fentry("e", "g")};
    struct t_done d;
    assert_int_equal(part_send(t->c, q, 0, en, 2, t_ck(&d), t_on_done), SL_OK);
    t_wait(t, &d);
    assert_int_equal(d.status, SL_OK);
    assert_int_equal(d.entry[0], SL_OK);
    assert_int_equal(d.entry[1], SL_EIO);
    t_fault_clear(db);
    assert_string_equal(parts_of(t, q, "g"), "0:1 1:1");
    assert_string_equal(parts_of(t, q, "h"), "0:1");
    /* a move in that rolls back leaves the destination's directory as it was */
    uint64_t x = t_create_fifo(t, "fail-y.fifo", false);
    t_send_fifo(t, x, 0, "m", "k", "m", &d);
    db = t_fault(t, 0,
                 "CREATE TRIGGER t_fault BEFORE UPDATE OF queue_id ON msg"
                 " BEGIN SELECT RAISE(ABORT, 'injected fault'); END;");
    struct part_move_req req = {
        .queue_id = x, .partition = 0, .dest_queue_id = q, .max_messages = 10};
    t_ck(&d);
    assert_int_equal(part_move(t->c, &req, (struct part_cookie){&d, 0, 0}, t_on_moved), SL_OK);
    t_wait(t, &d);
    assert_int_equal(d.status, SL_EIO);
    t_fault_clear(db);
    assert_string_equal(parts_of(t, q, "k"), "");
    assert_string_equal(parts_of(t, x, "k"), "0:1");
}

/* A FIFO source on partition 1 dead-letters into a DLQ that holds the
 * group on partition 0: the move registers, in the same transaction. */
static void test_dead_letter_move_registers(void **state)
{
    struct t_env *t = *state;
    uint64_t dlq = t_create_fifo(t, "dl.fifo", false);
    uint64_t src = t_create_fifo_dlq(t, "dl-src.fifo", dlq, 1);
    struct t_done d, r;
    t_send_fifo(t, dlq, 0, "b0", "g", "b0", &d);
    t_send_fifo(t, src, 1, "a", "g", "a", &d);
    t_recv_with(
        t, (struct part_receive_req){.queue_id = src, .max_messages = 10, .visibility_s = 0}, &r);
    assert_int_equal(r.count, 1);
    t_sync(t);
    t_recv(t, src, 10, 30, &r); /* over the count: moved */
    assert_int_equal(r.count, 0);
    assert_string_equal(parts_of(t, dlq, "g"), "0:1 1:1");
    assert_string_equal(parts_of(t, src, "g"), "");
    t_recv(t, dlq, 10, 30, &r);
    assert_int_equal(r.count, 1);
    assert_string_equal(r.msgs[0].body, "b0");
    struct t_done r2;
    t_recv(t, dlq, 10, 30, &r2);
    assert_int_equal(r2.count, 0);
}

/* A restart rebuilds each group's partitions in the order of their oldest
 * messages, whichever partition opens first. */
static void test_restart_orders_by_oldest(void **state)
{
    struct t_env *t = *state;
    uint64_t dest = t_create_fifo(t, "rs-d.fifo", false);
    uint64_t x = t_create_fifo(t, "rs-x.fifo", false);
    struct t_done d;
    t_send_fifo(t, dest, 1, "old", "g", "old", &d); /* partition 1, oldest */
    t_send_fifo(t, x, 0, "new", "g", "new", &d);
    move_all(t, x, 0, dest); /* numbered anew: newer */
    assert_string_equal(parts_of(t, dest, "g"), "1:1 0:1");
    t_close(t);
    t_open(t); /* partition 0 loads first, with the newer message */
    assert_string_equal(parts_of(t, dest, "g"), "1:1 0:1");
    struct t_done r1, r2;
    t_recv(t, dest, 10, 30, &r1);
    assert_int_equal(r1.count, 1);
    assert_string_equal(r1.msgs[0].body, "old");
    t_recv(t, dest, 10, 30, &r2);
    assert_int_equal(r2.count, 0);
    t_delete(t, dest, r1.msgs[0].receipt, &d);
    t_recv(t, dest, 10, 30, &r2);
    assert_int_equal(r2.count, 1);
    assert_string_equal(r2.msgs[0].body, "new");
}

/* A dead-letter move keeps its (older) number and joins the group behind
 * the partition leasing it; across a restart the lease still holds the
 * lead, whatever the numbers say. */
static void test_restart_keeps_the_leasing_partition_first(void **state)
{
    struct t_env *t = *state;
    uint64_t dlq = t_create_fifo(t, "lead.fifo", false);
    uint64_t src = t_create_fifo_dlq(t, "lead-src.fifo", dlq, 1);
    struct t_done d, r;
    t_send_fifo(t, src, 1, "a", "g", "a", &d); /* the older number */
    t_send_fifo(t, dlq, 0, "b0", "g", "b0", &d);
    t_recv_with(
        t, (struct part_receive_req){.queue_id = src, .max_messages = 10, .visibility_s = 0}, &r);
    t_sync(t);
    t_recv(t, src, 10, 30, &r); /* "a" moves in on partition 1 */
    assert_string_equal(parts_of(t, dlq, "g"), "0:1 1:1");
    t_recv(t, dlq, 10, 30, &r);
    assert_int_equal(r.count, 1);
    assert_string_equal(r.msgs[0].body, "b0");
    t_close(t);
    t_open(t);
    assert_string_equal(parts_of(t, dlq, "g"), "0:1 1:1");
    t_recv(t, dlq, 10, 30, &r);
    assert_int_equal(r.count, 0); /* b0's lease holds the group */
    t_advance(t, 31 * 1000ull);
    t_sync(t);
    t_recv(t, dlq, 10, 30, &r);
    assert_int_equal(r.count, 1);
    assert_string_equal(r.msgs[0].body, "b0");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table_rules),
        cmocka_unit_test(test_table_load_order),
        cmocka_unit_test(test_table_many_groups),
        cmocka_unit_test_setup_teardown(test_only_the_oldest_partition_leases, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_sends_follow_the_group, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_failures_give_counts_back, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_dead_letter_move_registers, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_restart_orders_by_oldest, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_restart_keeps_the_leasing_partition_first, t_setup,
                                        t_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
