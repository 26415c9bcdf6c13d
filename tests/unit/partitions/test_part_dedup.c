/*
 * test_part_dedup.c -- the in-memory index of FIFO deduplication ids on its
 * own: the keyed hash is stable for one table and tells ids and queues
 * apart; ids that share a hash are all found; expired entries stop
 * counting at once and go with their rows, exactly those; a purge drops
 * one queue's entries wherever their probe runs wrap; a rollback undoes
 * exactly the logged changes; the table grows and shrinks and keeps every
 * live entry.
 * Hashes are given by hand where a test needs them to collide.
 */
#include "part_test_util.h"

#include "part_dedup.h"

static void test_hash_is_keyed_and_stable(void **state)
{
    (void)state;
    struct part_dedup *a = part__dedup_new();
    struct part_dedup *b = part__dedup_new();
    uint64_t h = part__dedup_hash(a, 7, "id-1", 4);
    assert_int_equal(part__dedup_hash(a, 7, "id-1", 4), h);
    assert_int_not_equal(part__dedup_hash(a, 7, "id-2", 4), h);
    assert_int_not_equal(part__dedup_hash(a, 8, "id-1", 4), h);
    /* another table draws another key (equal by chance once in 2^64) */
    assert_int_not_equal(part__dedup_hash(b, 7, "id-1", 4), h);
    part__dedup_free(a);
    part__dedup_free(b);
}

static void test_collisions_and_expiry(void **state)
{
    (void)state;
    struct part_dedup *d = part__dedup_new();
    part__dedup_add(d, 42, 1, 10, 1000);
    part__dedup_add(d, 42, 1, 11, 2000); /* another id with the same hash */
    part__dedup_add(d, 42, 2, 12, 2000); /* another queue */
    part__dedup_add(d, 43, 1, 13, 2000);
    part__dedup_commit(d);
    int64_t rows[4];
    assert_int_equal(part__dedup_find(d, 42, 1, 999, rows, 4), 2);
    assert_true((rows[0] == 10 && rows[1] == 11) || (rows[0] == 11 && rows[1] == 10));
    assert_int_equal(part__dedup_find(d, 42, 1, 999, rows, 1), 1); /* at most max */
    /* expired at 1000: no longer a candidate, before any sweep */
    assert_int_equal(part__dedup_find(d, 42, 1, 1000, rows, 4), 1);
    assert_int_equal(rows[0], 11);
    assert_int_equal(part__dedup_find(d, 42, 2, 1000, rows, 4), 1);
    assert_int_equal(part__dedup_find(d, 44, 1, 0, rows, 4), 0);
    /* the sweep of its row drops it, and only it */
    assert_int_equal(part__dedup_size(d), 4);
    assert_false(part__dedup_remove(d, 42, 1, 12)); /* not under this queue */
    assert_true(part__dedup_remove(d, 42, 1, 10));
    assert_false(part__dedup_remove(d, 42, 1, 10));
    assert_int_equal(part__dedup_size(d), 3);
    assert_int_equal(part__dedup_find(d, 42, 1, 0, rows, 4), 1);
    assert_int_equal(part__dedup_find(d, 43, 1, 0, rows, 4), 1);
    part__dedup_free(d);
}

/* Every entry i of n (hash i * 7919, queue 1 + i % 3, rowid i + 1) is
 * found, or, when gone[i], not. */
static void assert_entries(const struct part_dedup *d, size_t n, const bool *gone)
{
    for (size_t i = 0; i < n; i++) {
        int64_t rows[2];
        size_t k = part__dedup_find(d, (uint64_t)i * 7919, 1 + i % 3, 0, rows, 2);
        assert_int_equal(k, gone[i] ? 0 : 1);
        if (k == 1) {
            assert_int_equal(rows[0], (int64_t)i + 1);
        }
    }
}

static void test_grow_purge_shrink(void **state)
{
    (void)state;
    enum { N = 20000 };
    static bool gone[N];
    memset(gone, 0, sizeof gone);
    struct part_dedup *d = part__dedup_new();
    size_t small = part__dedup_bytes(d);
    for (size_t i = 0; i < N; i++) {
        part__dedup_add(d, (uint64_t)i * 7919, 1 + i % 3, (int64_t)i + 1, UINT64_MAX);
    }
    part__dedup_commit(d);
    assert_int_equal(part__dedup_size(d), N);
    assert_true(part__dedup_bytes(d) > small);
    assert_entries(d, N, gone);
    /* a purge of queue 2 drops a third, wherever it sits */
    size_t dropped = part__dedup_forget_queue(d, 2);
    part__dedup_commit(d);
    for (size_t i = 0; i < N; i++) {
        gone[i] = 1 + i % 3 == 2;
    }
    assert_int_equal(dropped, (N + 1) / 3);
    assert_entries(d, N, gone);
    /* as many more come and go with their rows */
    for (size_t i = 0; i < N; i++) {
        part__dedup_add(d, (uint64_t)(N + i) * 7919, 1, (int64_t)(N + i) + 1, 5);
    }
    part__dedup_commit(d);
    size_t big = part__dedup_bytes(d);
    for (size_t i = 0; i < N; i++) {
        assert_true(part__dedup_remove(d, (uint64_t)(N + i) * 7919, 1, (int64_t)(N + i) + 1));
    }
    part__dedup_commit(d);
    assert_int_equal(part__dedup_size(d), N - (N + 1) / 3);
    assert_entries(d, N, gone);
    part__dedup_forget_queue(d, 1);
    part__dedup_forget_queue(d, 3);
    part__dedup_commit(d);
    assert_int_equal(part__dedup_size(d), 0);
    assert_true(part__dedup_bytes(d) < big);
    part__dedup_free(d);
}

static void test_probe_runs_that_wrap(void **state)
{
    (void)state;
    /* hashes homed on the last slots run over the end of the table: a
     * purge from the middle of such a run and the finds after it */
    struct part_dedup *d = part__dedup_new();
    const uint64_t last = 1023; /* the initial table has 1024 slots */
    for (int64_t i = 0; i < 6; i++) {
        part__dedup_add(d, last - 1 + (uint64_t)(i % 2), i % 2 ? 5 : 6, i + 1, UINT64_MAX);
    }
    part__dedup_commit(d);
    assert_int_equal(part__dedup_forget_queue(d, 6), 3);
    int64_t rows[8];
    assert_int_equal(part__dedup_find(d, last, 5, 0, rows, 8), 3);
    assert_int_equal(part__dedup_find(d, last - 1, 6, 0, rows, 8), 0);
    part__dedup_free(d);
}

static void test_rollback_undoes_the_batch(void **state)
{
    (void)state;
    struct part_dedup *d = part__dedup_new();
    part__dedup_add(d, 1, 1, 1, UINT64_MAX);
    part__dedup_add(d, 2, 2, 2, UINT64_MAX);
    part__dedup_commit(d);
    /* a batch adds one, sweeps one, purges queue 2, adds to it again,
     * then fails */
    part__dedup_add(d, 3, 1, 3, UINT64_MAX);
    assert_true(part__dedup_remove(d, 1, 1, 1));
    assert_int_equal(part__dedup_forget_queue(d, 2), 1);
    part__dedup_add(d, 4, 2, 4, UINT64_MAX);
    part__dedup_rollback(d);
    int64_t rows[2];
    assert_int_equal(part__dedup_size(d), 2);
    assert_int_equal(part__dedup_find(d, 1, 1, 0, rows, 2), 1);
    assert_int_equal(part__dedup_find(d, 2, 2, 0, rows, 2), 1);
    assert_int_equal(part__dedup_find(d, 3, 1, 0, rows, 2), 0);
    assert_int_equal(part__dedup_find(d, 4, 2, 0, rows, 2), 0);
    /* a committed batch stays, and a later rollback has nothing to undo */
    part__dedup_add(d, 3, 1, 3, UINT64_MAX);
    part__dedup_commit(d);
    part__dedup_rollback(d);
    assert_int_equal(part__dedup_find(d, 3, 1, 0, rows, 2), 1);
    part__dedup_free(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hash_is_keyed_and_stable),
        cmocka_unit_test(test_collisions_and_expiry),
        cmocka_unit_test(test_grow_purge_shrink),
        cmocka_unit_test(test_probe_runs_that_wrap),
        cmocka_unit_test(test_rollback_undoes_the_batch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
