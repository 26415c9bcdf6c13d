/*
 * test_part_dedup_sweep.c -- expired FIFO deduplication ids leave the
 * partition file and the writer's in-memory index with every FIFO send,
 * not only in the writer's first batch: the clock moves past the interval
 * between sends, so each send's sweep finds the earlier ids expired. With
 * one id a send, and with ten: a send removes up to two expired ids per
 * message and some more, so the ids held stay about those of one send.
 * One partition, injected clock.
 */
#include "part_test_util.h"

#define SENDS 40

/* The ids partition 0's index holds, as its writer published them. */
static size_t ids_in_memory(struct t_env *t)
{
    struct part_partition_stats st;
    assert_int_equal(part_engine_stats(t->e, 0, &st), SL_OK);
    return (size_t)st.fifo_dedup_ids;
}

static void test_every_batch_sweeps(void **state)
{
    struct t_env *t = *state;
    uint64_t q = t_create_fifo(t, "sweep.fifo", false);
    for (int i = 0; i < SENDS; i++) {
        char id[16];
        snprintf(id, sizeof id, "id-%d", i);
        struct t_done d;
        t_send_fifo(t, q, 0, "b", "g", id, &d);
        assert_false(d.sent_dup[0]);
        t_advance(t, PART_DEDUP_INTERVAL_MS + 1000);
    }
    t_sync(t);
    size_t in_memory = ids_in_memory(t);
    int in_file = t_part_int(t, 0, "SELECT count(*) FROM dedup");
    fprintf(stderr,
            "after %d sends, each past the last one's interval: %zu ids in memory,"
            " %d rows in the file\n",
            SENDS, in_memory, in_file);
    /* every id but the last had expired when the last batch swept */
    assert_true(in_file <= 2);
    assert_true(in_memory <= 2);
}

static void test_sweep_keeps_up_with_big_sends(void **state)
{
    struct t_env *t = *state;
    uint64_t q = t_create_fifo(t, "big.fifo", false);
    char ids[10][24];
    struct part_send_entry en[10];
    for (int round = 0; round < SENDS; round++) {
        for (int k = 0; k < 10; k++) {
            snprintf(ids[k], sizeof ids[k], "r%d-%d", round, k);
            en[k] = (struct part_send_entry){.body = SL_SLICE_LIT("b"),
                                             .group_id = SL_SLICE_LIT("g"),
                                             .dedup_id = sl_slice_cstr(ids[k]),
                                             .delay_s = -1};
        }
        struct t_done d;
        assert_int_equal(part_send(t->c, q, 0, en, 10, t_ck(&d), t_on_done), SL_OK);
        t_wait(t, &d);
        assert_int_equal(d.status, SL_OK);
        t_advance(t, PART_DEDUP_INTERVAL_MS + 1000);
    }
    t_sync(t);
    size_t in_memory = ids_in_memory(t);
    int in_file = t_part_int(t, 0, "SELECT count(*) FROM dedup");
    assert_true(in_file <= 10);
    assert_true(in_memory <= 10);
}

static int setup1(void **state)
{
    return t_setup_n(state, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_every_batch_sweeps, setup1, t_teardown),
        cmocka_unit_test_setup_teardown(test_sweep_keeps_up_with_big_sends, setup1, t_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
