/*
 * test_part_full.c -- a full disk is transient, a stopped partition is
 * never "empty". The test VFS (part_test_vfs.h) fails writes as a full
 * file system does: a send fails with SL_EBUSY, the partition keeps
 * running (receives and deletes work while the disk is full), and sends
 * succeed again once space returns, without a restart. A partition
 * stopped by a real I/O error makes a receive that should read it fail
 * rather than answer "no message".
 */
#include "part_test_util.h"

#include "part_test_vfs.h"

static int setup_small_wal(void **state)
{
    if (t_setup_n(state, 1) != 0) {
        return -1;
    }
    struct t_env *t = *state;
    t_close(t);
    t->durability = PART_DURABILITY_FSYNC;
    t->checkpoint_pages = 1; /* the WAL restarts after every commit */
    t_open(t);
    return 0;
}

static void big_body(char *out, size_t n, char c)
{
    memset(out, c, n - 1);
    out[n - 1] = '\0';
}

static void test_one_failed_write_is_transient(void **state)
{
    struct t_env *t = *state;
    uint64_t q = t_create(t, "acme", "jobs", NULL);
    t_send(t, q, 0, "before");
    t_sync(t); /* the writer has finished that commit's checkpoint */

    tv_fail_write_at(0, SQLITE_FULL);
    struct t_done d;
    t_send_ex(t, q, 0, "lost", -1, false, 0, &d);
    assert_int_equal(d.status, SL_EBUSY);
    assert_int_equal(atomic_load(&tv.fails), 1);
    assert_true(part_engine_partition_ok(t->e, 0));

    t_send(t, q, 0, "after"); /* no restart */
    struct t_done r;
    t_recv(t, q, 10, 30, &r);
    assert_int_equal(r.status, SL_OK);
    assert_int_equal(r.count, 2);
}

static void test_full_disk_keeps_serving(void **state)
{
    struct t_env *t = *state;
    uint64_t q = t_create(t, "acme", "jobs", NULL);
    t_send(t, q, 0, "one");
    t_send(t, q, 0, "two");
    t_send(t, q, 0, "three");
    t_sync(t);

    static char body[96 * 1024];
    big_body(body, sizeof body, 'x');
    tv_set_full(TV_FULL_GROW);
    struct t_done d;
    t_send_ex(t, q, 0, body, -1, false, 0, &d);
    assert_int_equal(d.status, SL_EBUSY);
    assert_true(atomic_load(&tv.fails) > 0);
    assert_true(part_engine_partition_ok(t->e, 0));
    t_send_ex(t, q, 0, body, -1, false, 0, &d); /* still full: still refused, still up */
    assert_int_equal(d.status, SL_EBUSY);
    assert_true(part_engine_partition_ok(t->e, 0));

    /* Receives and deletes rewrite pages the files already have. */
    struct t_done r, del;
    t_recv(t, q, 1, 30, &r);
    assert_int_equal(r.status, SL_OK);
    assert_int_equal(r.count, 1);
    t_delete(t, q, r.msgs[0].receipt, &del);
    assert_int_equal(del.entry[0], SL_OK);

    tv_set_full(TV_FULL_OFF);
    t_send_ex(t, q, 0, body, -1, false, 0, &d);
    assert_int_equal(d.status, SL_OK);
    struct part_counts c = t_counts(t, q);
    assert_int_equal(c.ready, 3); /* two, three and the big one */

    /* and all of it is there after a restart */
    t_close(t);
    t_open(t);
    c = t_counts(t, q);
    assert_int_equal(c.ready, 3);
}

static void test_stopped_partition_is_not_empty(void **state)
{
    struct t_env *t = *state;
    uint64_t q = t_create(t, "acme", "jobs", NULL);
    t_send(t, q, 0, "kept");
    /* an I/O error that is not a full disk stops partition 0 */
    tv_fail_write_at(0, SQLITE_IOERR_WRITE);
    struct t_done d;
    t_send_ex(t, q, 0, "lost", -1, false, 0, &d);
    assert_int_equal(d.status, SL_EIO);
    assert_false(part_engine_partition_ok(t->e, 0));

    struct t_done r;
    t_recv(t, q, 10, 30, &r);
    assert_int_equal(r.status, SL_EIO); /* not "no message" */
    assert_int_equal(r.count, 0);
    /* also when the receive would wait */
    t_recv_with(t,
                (struct part_receive_req){
                    .queue_id = q, .max_messages = 1, .visibility_s = 30, .wait_ms = 50},
                &r);
    assert_int_equal(r.status, SL_EIO);

    /* a healthy partition still answers with what it has */
    t_send(t, q, 1, "elsewhere");
    t_recv(t, q, 10, 30, &r);
    assert_int_equal(r.status, SL_OK);
    assert_int_equal(r.count, 1);
    assert_string_equal(r.msgs[0].body, "elsewhere");
}

static int reset(void **state)
{
    (void)state;
    tv_set_full(TV_FULL_OFF);
    tv_fail_write_at(-1, SQLITE_OK);
    atomic_store(&tv.fails, 0);
    return 0;
}

static int teardown(void **state)
{
    reset(state);
    return t_teardown(state);
}

static int setup_two(void **state)
{
    reset(state);
    return t_setup_n(state, 2);
}

static int setup_one(void **state)
{
    reset(state);
    return setup_small_wal(state);
}

int main(void)
{
    tv_install();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_one_failed_write_is_transient, setup_one, teardown),
        cmocka_unit_test_setup_teardown(test_full_disk_keeps_serving, setup_one, teardown),
        cmocka_unit_test_setup_teardown(test_stopped_partition_is_not_empty, setup_two, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
