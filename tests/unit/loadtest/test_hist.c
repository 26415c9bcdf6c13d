/*
 * test_hist.c -- the load generator's latency histogram: exact percentiles
 * where values are exact, bounded error above, and the bucket layout.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "lt_int.h"

static void percentiles_exact_on_1_to_1000(void **state)
{
    struct lt_hist h;
    lt_hist_init(&h);
    for (uint64_t v = 1000; v >= 1; v--) {
        lt_hist_record(&h, v);
    }
    assert_int_equal(h.total, 1000);
    assert_int_equal(lt_hist_percentile(&h, 0), 1);
    assert_int_equal(lt_hist_percentile(&h, 50), 500);
    assert_int_equal(lt_hist_percentile(&h, 90), 900);
    assert_int_equal(lt_hist_percentile(&h, 99), 990);
    assert_int_equal(lt_hist_percentile(&h, 99.9), 999);
    assert_int_equal(lt_hist_percentile(&h, 100), 1000);
    assert_int_equal(h.min, 1);
    assert_int_equal(h.max, 1000);
    assert_true(lt_hist_mean(&h) > 500.49 && lt_hist_mean(&h) < 500.51);
    lt_hist_fini(&h);
}

static void nearest_rank_small_sets(void **state)
{
    struct lt_hist h;
    lt_hist_init(&h);
    assert_int_equal(lt_hist_percentile(&h, 50), 0); /* empty */
    lt_hist_record(&h, 7);
    assert_int_equal(lt_hist_percentile(&h, 50), 7);
    assert_int_equal(lt_hist_percentile(&h, 99.9), 7);
    lt_hist_record(&h, 3);
    lt_hist_record(&h, 9);
    lt_hist_record(&h, 5);
    /* sorted 3 5 7 9: rank ceil(0.5 * 4) = 2 -> 5; ceil(0.51 * 4) = 3 -> 7 */
    assert_int_equal(lt_hist_percentile(&h, 50), 5);
    assert_int_equal(lt_hist_percentile(&h, 51), 7);
    assert_int_equal(lt_hist_percentile(&h, 75), 7);
    assert_int_equal(lt_hist_percentile(&h, 76), 9);
    lt_hist_reset(&h);
    assert_int_equal(h.total, 0);
    assert_int_equal(lt_hist_percentile(&h, 99), 0);
    lt_hist_fini(&h);
}

static void buckets_are_contiguous_and_bounded(void **state)
{
    /* Every value lands in a bucket whose high end is >= it and within
     * 1/512 of it, and bucket indexes never decrease with the value. */
    size_t prev = 0;
    uint64_t vals[] = {0,
                       1,
                       1023,
                       1024,
                       1025,
                       2047,
                       2048,
                       2049,
                       4095,
                       4096,
                       123456,
                       999999,
                       UINT64_C(1) << 30,
                       LT_HIST_MAX_VALUE};
    for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
        size_t b = lt_hist_bucket(vals[i]);
        uint64_t high = lt_hist_bucket_high(b);
        assert_true(b >= prev);
        assert_true(high >= vals[i]);
        assert_true((double)(high - vals[i]) <= (double)vals[i] / 512.0);
        prev = b;
    }
    for (size_t b = 1; b < lt_hist_bucket(LT_HIST_MAX_VALUE); b++) {
        /* the next bucket starts right after this one ends */
        assert_int_equal(lt_hist_bucket(lt_hist_bucket_high(b - 1) + 1), b);
    }
    assert_int_equal(lt_hist_bucket(1023), 1023);
    assert_int_equal(lt_hist_bucket_high(lt_hist_bucket(1024)), 1025);
}

static void large_values_within_error_and_clamped(void **state)
{
    struct lt_hist h;
    lt_hist_init(&h);
    for (int i = 0; i < 99; i++) {
        lt_hist_record(&h, 100000); /* 100 ms */
    }
    lt_hist_record(&h, 5000000); /* 5 s */
    uint64_t p50 = lt_hist_percentile(&h, 50);
    assert_true(p50 >= 100000 && p50 <= 100000 + 100000 / 512);
    assert_int_equal(lt_hist_percentile(&h, 100), 5000000);
    assert_int_equal(lt_hist_percentile(&h, 99.9), 5000000); /* never above max */
    lt_hist_record(&h, UINT64_MAX);
    assert_int_equal(h.max, LT_HIST_MAX_VALUE);
    lt_hist_fini(&h);
}

static void merge_adds_up(void **state)
{
    struct lt_hist a;
    struct lt_hist b;
    lt_hist_init(&a);
    lt_hist_init(&b);
    for (uint64_t v = 1; v <= 500; v++) {
        lt_hist_record(&a, v);
    }
    for (uint64_t v = 501; v <= 1000; v++) {
        lt_hist_record(&b, v);
    }
    lt_hist_merge(&a, &b);
    assert_int_equal(a.total, 1000);
    assert_int_equal(lt_hist_percentile(&a, 99), 990);
    assert_int_equal(a.min, 1);
    assert_int_equal(a.max, 1000);
    lt_hist_fini(&a);
    lt_hist_fini(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(percentiles_exact_on_1_to_1000),
        cmocka_unit_test(nearest_rank_small_sets),
        cmocka_unit_test(buckets_are_contiguous_and_bounded),
        cmocka_unit_test(large_values_within_error_and_clamped),
        cmocka_unit_test(merge_adds_up),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
