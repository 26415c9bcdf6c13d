/*
 * test_pol_fair.c -- noisy message groups, fair ordering, aged spill and
 * retention predicates. All pure; times are given as wall-clock ms.
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

static void test_fair_order(void **state)
{
    /* Queue has 1,000 in flight: > 100 and >= 30 is noisy. */
    const uint64_t inflight[] = {500, 3, 101, 0, 100, 250, 7};
    uint32_t order[7];
    size_t quiet = pol_fair_order(inflight, 7, 1000, order);

    assert_int_equal(quiet, 4);
    /* Quiet in input order, then noisy by fewest in flight. */
    const uint32_t want[] = {1, 3, 4, 6, 2, 5, 0};
    assert_memory_equal(order, want, sizeof(want));

    /* All quiet: identity. */
    const uint64_t calm[] = {1, 2, 3};
    assert_int_equal(pol_fair_order(calm, 3, 1000, order), 3);
    assert_int_equal(order[0], 0);
    assert_int_equal(order[2], 2);
    /* Noisy ties keep input order. */
    const uint64_t ties[] = {40, 40, 40};
    assert_int_equal(pol_fair_order(ties, 3, 120, order), 0);
    assert_int_equal(order[0], 0);
    assert_int_equal(order[1], 1);
    assert_int_equal(order[2], 2);
    assert_int_equal(pol_fair_order(NULL, 0, 0, order), 0);
}

static void test_aged_spill(void **state)
{
    struct cfg_spill s = {.delay_seconds = 30, .aged_after_seconds = 300};
    const uint64_t sent = 1700000000000ull;

    assert_false(pol_should_age_out(&s, sent, sent));
    assert_false(pol_should_age_out(&s, sent, sent + 299999));
    assert_true(pol_should_age_out(&s, sent, sent + 300000));
    assert_true(pol_should_age_out(&s, sent, sent + 86400000));
    /* Clock stepped back: not aged. */
    assert_false(pol_should_age_out(&s, sent, sent - 1000000));
    /* 0 turns aging off. */
    s.aged_after_seconds = 0;
    assert_false(pol_should_age_out(&s, sent, sent + 86400000));

    assert_int_equal(pol_spill_visible_at_ms(&s, sent), sent + 30000);
    assert_int_equal(pol_spill_visible_at_ms(&s, UINT64_MAX - 5), UINT64_MAX);
}

static void test_retention(void **state)
{
    const uint64_t sent = 1700000000000ull;

    assert_false(pol_past_retention(345600, sent, sent + 345599999));
    assert_true(pol_past_retention(345600, sent, sent + 345600000));
    assert_false(pol_past_retention(60, sent, sent - 1));
    assert_true(pol_past_retention(0, sent, sent));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_noisy_rule),
        cmocka_unit_test(test_fair_order),
        cmocka_unit_test(test_aged_spill),
        cmocka_unit_test(test_retention),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
