/*
 * test_part_sync.c -- which commits wait for the disk. The test VFS
 * (part_test_vfs.h) counts every xSync the partitions make, so the tests
 * see the fsyncs themselves rather than the engine's account of them:
 * with durability fsync a send, a delete and a visibility change sync, a receive (a lease) does
 * not, and a receive submitted together with a send is answered from its own commit. With
 * durability os nothing a client does syncs.
 */
#include "part_test_util.h"

#include "part_test_vfs.h"

/* ---- tests -------------------------------------------------------------- */

static int setup_durability(void **state, enum part_durability d)
{
    if (t_setup_n(state, 1) != 0) {
        return -1;
    }
    struct t_env *t = *state;
    t_close(t);
    t->durability = d;
    t_open(t);
    return 0;
}

static int setup_fsync(void **state)
{
    return setup_durability(state, PART_DURABILITY_FSYNC);
}

static int setup_os(void **state)
{
    return setup_durability(state, PART_DURABILITY_OS);
}

static uint64_t syncs_during_send(struct t_env *t, uint64_t q, const char *body)
{
    uint64_t before = atomic_load(&tv.syncs);
    t_send(t, q, 0, body);
    return atomic_load(&tv.syncs) - before;
}

static void test_fsync_leases_do_not_wait_for_the_disk(void **state)
{
    struct t_env *t = *state;
    uint64_t q = t_create(t, "acme", "jobs", NULL);
    assert_true(syncs_during_send(t, q, "one") >= 1);
    assert_true(syncs_during_send(t, q, "two") >= 1);

    uint64_t before = atomic_load(&tv.syncs);
    struct t_done r;
    t_recv(t, q, 1, 30, &r);
    assert_int_equal(r.status, SL_OK);
    assert_int_equal(r.count, 1);
    assert_int_equal(atomic_load(&tv.syncs), before); /* the lease did not sync */

    struct t_done d;
    t_chvis(t, q, r.msgs[0].receipt, 60, &d);
    assert_true(atomic_load(&tv.syncs) > before);
    before = atomic_load(&tv.syncs);
    t_delete(t, q, r.msgs[0].receipt, &d);
    assert_true(atomic_load(&tv.syncs) > before);

    /* A receive and a send submitted together: the receive is answered
     * from a commit of its own, before the send's sync. */
    struct t_done rd, sd;
    uint32_t p0 = 0;
    struct part_receive_req req = {.queue_id = q,
                                   .partitions = &p0,
                                   .partition_count = 1,
                                   .max_messages = 10,
                                   .visibility_s = 30};
    struct part_send_entry en = {.body = SL_SLICE_LIT("three"), .delay_s = -1};
    assert_int_equal(part_receive(t->c, &req, t_ck(&rd), t_on_done, NULL), SL_OK);
    assert_int_equal(part_send(t->c, q, 0, &en, 1, t_ck(&sd), t_on_done), SL_OK);
    t_wait(t, &rd);
    t_wait(t, &sd);
    assert_int_equal(rd.status, SL_OK);
    assert_int_equal(sd.status, SL_OK);
    assert_int_equal(rd.count, 1);
    assert_string_equal(rd.msgs[0].body, "two");

    /* The leases survive a restart (the later synced commits carried them):
     * "two" stays in flight, "three" is the one ready message. */
    t_close(t);
    t_open(t);
    struct part_counts c = t_counts(t, q);
    assert_int_equal(c.inflight, 1);
    assert_int_equal(c.ready, 1);
    t_recv(t, q, 10, 30, &r);
    assert_int_equal(r.count, 1);
    assert_string_equal(r.msgs[0].body, "three");
}

static void test_os_nothing_syncs(void **state)
{
    struct t_env *t = *state;
    uint64_t q = t_create(t, "acme", "jobs", NULL);
    uint64_t before = atomic_load(&tv.syncs);
    t_send(t, q, 0, "one");
    struct t_done r, d;
    t_recv(t, q, 1, 30, &r);
    assert_int_equal(r.count, 1);
    t_delete(t, q, r.msgs[0].receipt, &d);
    assert_int_equal(atomic_load(&tv.syncs), before);
}

int main(void)
{
    tv_install();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_fsync_leases_do_not_wait_for_the_disk, setup_fsync,
                                        t_teardown),
        cmocka_unit_test_setup_teardown(test_os_nothing_syncs, setup_os, t_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
