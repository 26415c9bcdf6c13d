/*
 * test_pol_shard.c -- shuffle-sharding placement, send choice and read set.
 *
 * Placement is deterministic given the key, so the statistical checks run
 * over fixed tenant names and a fixed key: they cannot flake, and their
 * bounds are loose enough that only a broken hash fails them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "pol.h"

static const uint8_t key_a[32] = "sluice-test-key-a-0123456789abcd";
static const uint8_t key_b[32] = "sluice-test-key-b-0123456789abcd";

static void place(const uint8_t *key, const char *tenant, uint32_t p, uint32_t k, uint32_t *out)
{
    assert_int_equal(pol_shard_place(key, 32, tenant, strlen(tenant), p, k, out), SL_OK);
}

static bool contains(const uint32_t *set, uint32_t n, uint32_t v)
{
    for (uint32_t i = 0; i < n; i++) {
        if (set[i] == v) {
            return true;
        }
    }
    return false;
}

static void test_deterministic_distinct_in_range(void **state)
{
    static const uint32_t sizes[][2] = {{1, 1}, {2, 2}, {8, 2}, {16, 2}, {16, 16}, {64, 3}};
    char name[32];

    for (size_t s = 0; s < SL_ARRAY_LEN(sizes); s++) {
        uint32_t p = sizes[s][0], k = sizes[s][1];
        for (int t = 0; t < 50; t++) {
            uint32_t a[64], b[64];
            snprintf(name, sizeof(name), "tenant-%d", t);
            place(key_a, name, p, k, a);
            place(key_a, name, p, k, b);
            assert_memory_equal(a, b, k * sizeof(uint32_t));
            for (uint32_t i = 0; i < k; i++) {
                assert_true(a[i] < p);
                assert_false(contains(a, i, a[i]));
            }
        }
    }
}

static void test_rejects_bad_arguments(void **state)
{
    uint32_t out[4] = {77, 77, 77, 77};

    assert_int_equal(pol_shard_place(key_a, 0, "t", 1, 16, 2, out), SL_EINVAL);
    assert_int_equal(pol_shard_place(key_a, 32, "t", 0, 16, 2, out), SL_EINVAL);
    assert_int_equal(pol_shard_place(key_a, 32, "t", 1, 0, 1, out), SL_EINVAL);
    assert_int_equal(pol_shard_place(key_a, 32, "t", 1, 16, 0, out), SL_EINVAL);
    assert_int_equal(pol_shard_place(key_a, 32, "t", 1, 2, 3, out), SL_EINVAL);
    assert_int_equal(pol_shard_place(key_a, 32, "t", 1, POL_MAX_PARTITIONS + 1, 2, out), SL_EINVAL);
    assert_int_equal(out[0], 77); /* untouched on error */
}

/* Adding a partition changes a shard by at most one member, and a changed
 * shard always gains the new partition (rendezvous: old scores are fixed). */
static void test_growing_p_moves_at_most_one(void **state)
{
    char name[32];
    int moved = 0;
    const int tenants = 2000;

    for (uint32_t k = 1; k <= 3; k++) {
        for (uint32_t p = k; p < 40; p++) {
            for (int t = 0; t < 40; t++) {
                uint32_t before[3], after[3], kept = 0;
                snprintf(name, sizeof(name), "grow-%d", t);
                place(key_a, name, p, k, before);
                place(key_a, name, p + 1, k, after);
                for (uint32_t i = 0; i < k; i++) {
                    kept += contains(after, k, before[i]);
                }
                assert_true(kept >= k - 1);
                if (kept == k - 1) {
                    assert_true(contains(after, k, p));
                }
            }
        }
    }
    /* How many move at P=32 -> 33, k=2: expected k/(P+1) = 6.1 %. */
    for (int t = 0; t < tenants; t++) {
        uint32_t before[2], after[2];
        snprintf(name, sizeof(name), "move-%d", t);
        place(key_a, name, 32, 2, before);
        place(key_a, name, 33, 2, after);
        moved += !(contains(after, 2, before[0]) && contains(after, 2, before[1]));
    }
    assert_in_range(moved, tenants * 3 / 100, tenants * 10 / 100);
}

static void test_growing_k_keeps_old_partitions(void **state)
{
    char name[32];

    for (int t = 0; t < 100; t++) {
        uint32_t prev[16], next[16];
        snprintf(name, sizeof(name), "k-%d", t);
        place(key_a, name, 16, 1, prev);
        for (uint32_t k = 2; k <= 16; k++) {
            place(key_a, name, 16, k, next);
            assert_memory_equal(prev, next, (k - 1) * sizeof(uint32_t));
            memcpy(prev, next, k * sizeof(uint32_t));
        }
    }
}

/* Chi-square of partition loads over 4,000 tenants x 2 slots at P = 16
 * (15 degrees of freedom: mean 15, P(X > 60) is about 1e-7). */
static void test_distribution_roughly_uniform(void **state)
{
    enum { P = 16, K = 2, TENANTS = 4000 };
    uint32_t load[P] = {0};
    double expected = (double)TENANTS * K / P, chi2 = 0;
    char name[32];

    for (int t = 0; t < TENANTS; t++) {
        uint32_t out[K];
        snprintf(name, sizeof(name), "uniform-%d", t);
        place(key_a, name, P, K, out);
        for (int i = 0; i < K; i++) {
            load[out[i]]++;
        }
    }
    for (int p = 0; p < P; p++) {
        chi2 += (load[p] - expected) * (load[p] - expected) / expected;
    }
    assert_true(chi2 < 60.0);
}

/* Two random 2-of-16 shards are equal with probability 1/120, so nearly
 * every tenant must land elsewhere under another key. */
static void test_different_keys_differ(void **state)
{
    char name[32];
    int same = 0;

    for (int t = 0; t < 200; t++) {
        uint32_t a[2], b[2];
        snprintf(name, sizeof(name), "key-%d", t);
        place(key_a, name, 16, 2, a);
        place(key_b, name, 16, 2, b);
        same += contains(b, 2, a[0]) && contains(b, 2, a[1]);
    }
    assert_true(same < 20);
}

static void test_tenant_name_is_bytes_not_cstring(void **state)
{
    uint32_t a[2], b[2];

    /* Only the first len bytes count. */
    assert_int_equal(pol_shard_place(key_a, 32, "acme-extra", 4, 16, 2, a), SL_OK);
    place(key_a, "acme", 16, 2, b);
    assert_memory_equal(a, b, sizeof(a));
}

static void test_pick_send_partition(void **state)
{
    static const uint32_t shard[3] = {9, 4, 13};

    /* The least loaded wins when clearly lighter. */
    assert_int_equal(pol_pick_send_partition(shard, 3, (uint64_t[]){500, 20, 700}), 4);
    assert_int_equal(pol_pick_send_partition(shard, 3, (uint64_t[]){20000, 3000, 0}), 13);
    /* A flooded first partition is avoided even by an idle tenant. */
    assert_int_equal(pol_pick_send_partition(shard, 2, (uint64_t[]){20000, 0}), 4);
    /* Full tie: the first in shard order. */
    assert_int_equal(pol_pick_send_partition(shard, 3, (uint64_t[]){0, 0, 0}), 9);
    assert_int_equal(pol_pick_send_partition(shard, 3, (uint64_t[]){7, 7, 7}), 9);
    /* Near ties stay in shard order: within POL_SEND_TIE_MESSAGES ... */
    assert_int_equal(pol_pick_send_partition(shard, 2, (uint64_t[]){POL_SEND_TIE_MESSAGES, 0}), 9);
    assert_int_equal(pol_pick_send_partition(shard, 2, (uint64_t[]){POL_SEND_TIE_MESSAGES + 1, 0}),
                     4);
    /* ... or within an eighth of the heavier. */
    assert_int_equal(pol_pick_send_partition(shard, 2, (uint64_t[]){800, 700}), 9);
    assert_int_equal(pol_pick_send_partition(shard, 2, (uint64_t[]){800, 699}), 4);
    /* The later partition keeps a tie it won against the first. */
    assert_int_equal(pol_pick_send_partition(shard, 3, (uint64_t[]){1000, 100, 95}), 4);
    /* A later one displaces it when clearly lighter than it. */
    assert_int_equal(pol_pick_send_partition(shard, 3, (uint64_t[]){1000, 100, 50}), 13);
    assert_int_equal(pol_pick_send_partition(shard, 1, (uint64_t[]){100}), 9);
}

static void test_read_set(void **state)
{
    uint64_t messages[8] = {0, 4, 0, 0, 0, 0, 1, 0};
    uint32_t shard[2] = {5, 1};
    uint32_t out[8];
    uint32_t n = pol_read_set(shard, 2, messages, 8, out);

    /* The shard first in shard order (5 is read even though empty), then 6
     * which still holds messages; 1 is not repeated. */
    assert_int_equal(n, 3);
    assert_int_equal(out[0], 5);
    assert_int_equal(out[1], 1);
    assert_int_equal(out[2], 6);

    memset(messages, 0, sizeof(messages));
    assert_int_equal(pol_read_set(shard, 2, messages, 8, out), 2);

    /* A shard member past P (P shrank) is skipped. */
    shard[0] = 9;
    messages[3] = 2;
    n = pol_read_set(shard, 2, messages, 8, out);
    assert_int_equal(n, 2);
    assert_int_equal(out[0], 1);
    assert_int_equal(out[1], 3);
}

/* A key's home is a member of the shard, the same every time, spread over
 * the shard, and growing the shard moves only keys to the new member. */
static void test_key_home(void **state)
{
    (void)state;
    const uint32_t shard[5] = {7, 2, 11, 4, 9};
    uint32_t count[16] = {0};
    uint32_t home4[1000];
    char name[32];
    for (uint32_t i = 0; i < 1000; i++) {
        snprintf(name, sizeof name, "group-%u", i);
        uint32_t h = pol_key_home(key_a, 32, "acme", 4, name, strlen(name), shard, 4);
        assert_true(contains(shard, 4, h));
        assert_int_equal(pol_key_home(key_a, 32, "acme", 4, name, strlen(name), shard, 4), h);
        home4[i] = h;
        count[h]++;
    }
    for (uint32_t i = 0; i < 4; i++) {
        assert_true(count[shard[i]] > 150); /* 250 expected */
    }
    uint32_t moved = 0;
    for (uint32_t i = 0; i < 1000; i++) {
        snprintf(name, sizeof name, "group-%u", i);
        uint32_t h = pol_key_home(key_a, 32, "acme", 4, name, strlen(name), shard, 5);
        if (h != home4[i]) {
            assert_int_equal(h, shard[4]);
            moved++;
        }
    }
    assert_true(moved > 100 && moved < 300); /* 200 expected */
    /* one member: no hashing needed; another tenant or key: other homes */
    assert_int_equal(pol_key_home(key_a, 32, "acme", 4, "g", 1, shard, 1), 7);
    uint32_t differ = 0;
    for (uint32_t i = 0; i < 100; i++) {
        snprintf(name, sizeof name, "group-%u", i);
        differ += pol_key_home(key_b, 32, "acme", 4, name, strlen(name), shard, 4) != home4[i];
    }
    assert_true(differ > 40);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_deterministic_distinct_in_range),
        cmocka_unit_test(test_rejects_bad_arguments),
        cmocka_unit_test(test_growing_p_moves_at_most_one),
        cmocka_unit_test(test_growing_k_keeps_old_partitions),
        cmocka_unit_test(test_distribution_roughly_uniform),
        cmocka_unit_test(test_different_keys_differ),
        cmocka_unit_test(test_tenant_name_is_bytes_not_cstring),
        cmocka_unit_test(test_pick_send_partition),
        cmocka_unit_test(test_read_set),
        cmocka_unit_test(test_key_home),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
