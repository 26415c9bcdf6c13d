/*
 * test_pol_fair.c -- the noisy-group rule and the overflow lane's numbers.
 * All pure.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "pol.h"

static void test_noisy_rule(void **state)
{
    /* Needs at least 30 in flight... */
    assert_false(pol_group_is_noisy(29, 29));
    assert_true(pol_group_is_noisy(30, 30));
    /* ...and strictly more than 10 % of the queue's. */
    assert_false(pol_group_is_noisy(30, 300));
    assert_true(pol_group_is_noisy(31, 300));
    assert_true(pol_group_is_noisy(30, 299));
    assert_false(pol_group_is_noisy(1000, 100000));
    assert_true(pol_group_is_noisy(10001, 100000));
    assert_false(pol_group_is_noisy(0, 0));
    assert_false(pol_group_is_noisy(UINT64_MAX / 20, UINT64_MAX));
    assert_true(pol_group_is_noisy(UINT64_MAX / 5, UINT64_MAX));
}

static void test_spill_delay(void **state)
{
    struct cfg_spill s = {.delay_seconds = 30, .aged_after_seconds = 300};
    assert_int_equal(pol_spill_delay_s(&s, 0), 30);
    assert_int_equal(pol_spill_delay_s(&s, 29), 30);
    assert_int_equal(pol_spill_delay_s(&s, 31), 31); /* never shorter than asked */
    assert_int_equal(pol_spill_delay_s(&s, 900), 900);
    s.delay_seconds = 0;
    assert_int_equal(pol_spill_delay_s(&s, 0), 0);
}

static void test_aging(void **state)
{
    struct cfg_spill s = {.delay_seconds = 30, .aged_after_seconds = 300};
    assert_int_equal(pol_aging_ms(&s), 300000);
    s.aged_after_seconds = 1209600; /* the largest allowed: 14 days */
    assert_int_equal(pol_aging_ms(&s), 1209600000ull);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_noisy_rule),
        cmocka_unit_test(test_spill_delay),
        cmocka_unit_test(test_aging),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
