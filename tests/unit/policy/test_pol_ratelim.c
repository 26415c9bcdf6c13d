/*
 * test_pol_ratelim.c -- the GCRA meter and the slot counter.
 *
 * Time is injected: every take gets now_ns from the test. The two-thread
 * test runs real threads against a frozen clock, so the admitted count is
 * exact whatever the scheduling.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>

#include "pol.h"

#define MS 1000000ull
#define SEC 1000000000ull
#define T0 (1000 * SEC) /* an arbitrary start, far from 0 */

static uint32_t take_many(struct pol_gcra *g, uint32_t attempts, uint32_t cost, uint64_t now)
{
    uint32_t admitted = 0;
    for (uint32_t i = 0; i < attempts; i++) {
        admitted += pol_gcra_take(g, cost, POL_PPM, now, NULL);
    }
    return admitted;
}

static void test_burst_bound_exact(void **state)
{
    struct pol_gcra g;

    pol_gcra_init(&g, 100, 50);
    assert_int_equal(pol_gcra_available(&g, T0), 50);
    assert_int_equal(take_many(&g, 200, 1, T0), 50);
    assert_int_equal(pol_gcra_available(&g, T0), 0);
}

static void test_refill_over_time(void **state)
{
    struct pol_gcra g;
    uint64_t retry = 0;

    pol_gcra_init(&g, 100, 50); /* one token per 10 ms */
    assert_int_equal(take_many(&g, 50, 1, T0), 50);
    assert_false(pol_gcra_take(&g, 1, POL_PPM, T0, &retry));
    assert_int_equal(retry, 10 * MS);
    /* Just before the token is back it is refused; at retry it passes. */
    assert_false(pol_gcra_take(&g, 1, POL_PPM, T0 + 10 * MS - 1, NULL));
    assert_true(pol_gcra_take(&g, 1, POL_PPM, T0 + 10 * MS, NULL));
    assert_false(pol_gcra_take(&g, 1, POL_PPM, T0 + 10 * MS, NULL));
    /* 100 ms brings 10 tokens. */
    assert_int_equal(take_many(&g, 100, 1, T0 + 110 * MS), 10);
    /* A long idle time refills to burst, no more. */
    assert_int_equal(take_many(&g, 500, 1, T0 + 3600 * SEC), 50);
    /* Sustained: one attempt per ms over one second admits the rate. */
    uint32_t admitted = 0;
    uint64_t now = T0 + 7200 * SEC;
    take_many(&g, 50, 1, now);
    for (uint64_t i = 1; i <= 1000; i++) {
        admitted += pol_gcra_take(&g, 1, POL_PPM, now + i * MS, NULL);
    }
    assert_int_equal(admitted, 100);
}

static void test_cost_above_one(void **state)
{
    struct pol_gcra g;
    uint64_t retry = 0;

    pol_gcra_init(&g, 1000, 10); /* one token per ms */
    assert_true(pol_gcra_take(&g, 4, POL_PPM, T0, NULL));
    assert_true(pol_gcra_take(&g, 4, POL_PPM, T0, NULL));
    /* 2 left: a batch of 4 is refused whole and spends nothing. */
    assert_false(pol_gcra_take(&g, 4, POL_PPM, T0, &retry));
    assert_int_equal(retry, 2 * MS);
    assert_int_equal(pol_gcra_available(&g, T0), 2);
    assert_true(pol_gcra_take(&g, 2, POL_PPM, T0, NULL));
    assert_int_equal(pol_gcra_available(&g, T0), 0);
    /* More than the bucket can ever hold. */
    assert_false(pol_gcra_take(&g, 11, POL_PPM, T0 + 3600 * SEC, &retry));
    assert_int_equal(retry, UINT64_MAX);
    /* Cost 0 is free. */
    assert_true(pol_gcra_take(&g, 0, POL_PPM, T0, NULL));
}

static void test_unlimited_and_empty(void **state)
{
    struct pol_gcra g;

    pol_gcra_init(&g, 0, 5);
    assert_int_equal(take_many(&g, 1000, 3, T0), 1000);
    pol_gcra_init(&g, 10, 0);
    assert_int_equal(take_many(&g, 10, 1, T0 + 3600 * SEC), 0);
}

/* At half rate a request needs its tokens but spends twice their time. */
static void test_scaled_rate(void **state)
{
    struct pol_gcra g;
    uint32_t admitted = 0;

    pol_gcra_init(&g, 1000, 10);
    for (int i = 0; i < 20; i++) {
        admitted += pol_gcra_take(&g, 1, POL_PPM / 2, T0, NULL);
    }
    assert_int_equal(admitted, 5);
    admitted = 0;
    for (uint64_t i = 1; i <= 1000; i++) {
        admitted += pol_gcra_take(&g, 1, POL_PPM / 2, T0 + i * MS, NULL);
    }
    assert_in_range(admitted, 495, 505);
    assert_false(pol_gcra_take(&g, 1, 0, T0 + 3600 * SEC, NULL));
}

/* A nearly stopped rate must not lock the tenant out after the pressure
 * goes: the bucket is full again within tau + max(tau, 1 s). */
static void test_slowed_take_penalty_is_capped(void **state)
{
    struct pol_gcra g;

    pol_gcra_init(&g, 1000, 10); /* tau = 10 ms */
    assert_true(pol_gcra_take(&g, 1, 1, T0, NULL));
    assert_false(pol_gcra_take(&g, 1, POL_PPM, T0 + 900 * MS, NULL));
    assert_int_equal(pol_gcra_available(&g, T0 + 1010 * MS), 10);
}

struct race {
    struct pol_gcra *g;
    pthread_barrier_t *start;
    uint32_t admitted;
};

static void *race_takes(void *arg)
{
    struct race *r = arg;

    pthread_barrier_wait(r->start);
    for (int i = 0; i < 100000; i++) {
        r->admitted += pol_gcra_take(r->g, 1, POL_PPM, T0, NULL);
    }
    return NULL;
}

/* Two threads, 200,000 attempts, a frozen clock: exactly burst pass. */
static void test_shared_budget_two_threads_exact(void **state)
{
    struct pol_gcra g;
    pthread_barrier_t start;
    pthread_t th[2];
    struct race r[2];

    pol_gcra_init(&g, 1, 60000);
    assert_int_equal(pthread_barrier_init(&start, NULL, 2), 0);
    for (int i = 0; i < 2; i++) {
        r[i] = (struct race){&g, &start, 0};
        assert_int_equal(pthread_create(&th[i], NULL, race_takes, &r[i]), 0);
    }
    for (int i = 0; i < 2; i++) {
        assert_int_equal(pthread_join(th[i], NULL), 0);
    }
    pthread_barrier_destroy(&start);
    assert_int_equal(r[0].admitted + r[1].admitted, 60000);
}

static void test_set_rate_keeps_level(void **state)
{
    struct pol_gcra g;

    pol_gcra_init(&g, 100, 50);
    assert_int_equal(take_many(&g, 50, 1, T0), 50);
    /* Same limits: still empty, no free burst. */
    pol_gcra_set_rate(&g, 100, 50, T0);
    assert_false(pol_gcra_take(&g, 1, POL_PPM, T0, NULL));
    /* A larger burst does not hand out the difference either. */
    pol_gcra_set_rate(&g, 100, 500, T0);
    assert_int_equal(pol_gcra_available(&g, T0), 0);
    /* Half full at 20 of 40, then a burst of 10: clamped to 10. */
    pol_gcra_init(&g, 100, 40);
    assert_int_equal(take_many(&g, 20, 1, T0), 20);
    pol_gcra_set_rate(&g, 100, 10, T0);
    assert_int_equal(pol_gcra_available(&g, T0), 10);
    /* Half full at 20 of 40, then a burst of 100: still 20. */
    pol_gcra_init(&g, 100, 40);
    assert_int_equal(take_many(&g, 20, 1, T0), 20);
    pol_gcra_set_rate(&g, 100, 100, T0);
    assert_int_equal(pol_gcra_available(&g, T0), 20);
    assert_int_equal(take_many(&g, 100, 1, T0), 20);
}

static void test_set_rate_applies_new_rate(void **state)
{
    struct pol_gcra g;

    pol_gcra_init(&g, 10, 5);
    assert_int_equal(take_many(&g, 5, 1, T0), 5);
    /* 10/s -> 1000/s: 10 ms now refills 10 tokens (capped at burst 20). */
    pol_gcra_set_rate(&g, 1000, 20, T0);
    assert_int_equal(take_many(&g, 100, 1, T0 + 10 * MS), 10);
    /* And down to 1/s: 1 s refills one. */
    pol_gcra_set_rate(&g, 1, 20, T0 + 10 * MS);
    assert_int_equal(take_many(&g, 100, 1, T0 + 1010 * MS), 1);
    /* To unlimited and back keeps working. */
    pol_gcra_set_rate(&g, 0, 20, T0 + 2 * SEC);
    assert_int_equal(take_many(&g, 100, 1, T0 + 2 * SEC), 100);
    pol_gcra_set_rate(&g, 1, 3, T0 + 2 * SEC);
    assert_int_equal(take_many(&g, 100, 1, T0 + 2 * SEC), 3);
}

/* A charge spends a token whether or not there is one: first from what is
 * available, then as debt (owed, rounded up) that later takes must wait
 * out, never more than two bursts of it. */
static void test_charge_goes_into_debt(void **state)
{
    struct pol_gcra g;

    pol_gcra_init(&g, 100, 5); /* one token per 10 ms */
    pol_gcra_charge(&g, 1, T0);
    assert_int_equal(pol_gcra_available(&g, T0), 4);
    assert_int_equal(pol_gcra_owed(&g, T0), 0);
    for (int i = 0; i < 6; i++) {
        pol_gcra_charge(&g, 1, T0);
    }
    assert_int_equal(pol_gcra_available(&g, T0), 0);
    assert_int_equal(pol_gcra_owed(&g, T0), 2);
    assert_int_equal(pol_gcra_owed(&g, T0 + 1), 2); /* partly repaid is still owed */
    /* The debt is waited out before the next take: 2 tokens owed plus the
     * one asked for, 30 ms. */
    assert_false(pol_gcra_take(&g, 1, POL_PPM, T0 + 30 * MS - 1, NULL));
    assert_true(pol_gcra_take(&g, 1, POL_PPM, T0 + 30 * MS, NULL));
    /* However many charges come, at most two bursts are owed. */
    for (int i = 0; i < 1000; i++) {
        pol_gcra_charge(&g, 1, T0 + 30 * MS);
    }
    assert_int_equal(pol_gcra_owed(&g, T0 + 30 * MS), 5);
    /* An unlimited meter has nothing to charge. */
    pol_gcra_init(&g, 0, 5);
    pol_gcra_charge(&g, 3, T0);
    assert_int_equal(pol_gcra_owed(&g, T0), 0);
    (void)state;
}

static void test_slots(void **state)
{
    struct pol_slots s;

    pol_slots_init(&s, 2);
    assert_true(pol_slots_acquire(&s));
    assert_true(pol_slots_acquire(&s));
    assert_false(pol_slots_acquire(&s));
    assert_int_equal(pol_slots_used(&s), 2);
    pol_slots_release(&s);
    assert_true(pol_slots_acquire(&s));
    /* Lowering max keeps holders; new acquires wait for room. */
    pol_slots_set_max(&s, 1);
    assert_false(pol_slots_acquire(&s));
    pol_slots_release(&s);
    assert_false(pol_slots_acquire(&s));
    pol_slots_release(&s);
    assert_true(pol_slots_acquire(&s));
    pol_slots_release(&s);
    /* 0 = unlimited. */
    pol_slots_set_max(&s, 0);
    for (int i = 0; i < 1000; i++) {
        assert_true(pol_slots_acquire(&s));
    }
    assert_int_equal(pol_slots_used(&s), 1000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_burst_bound_exact),
        cmocka_unit_test(test_refill_over_time),
        cmocka_unit_test(test_cost_above_one),
        cmocka_unit_test(test_unlimited_and_empty),
        cmocka_unit_test(test_scaled_rate),
        cmocka_unit_test(test_slowed_take_penalty_is_capped),
        cmocka_unit_test(test_shared_budget_two_threads_exact),
        cmocka_unit_test(test_set_rate_keeps_level),
        cmocka_unit_test(test_set_rate_applies_new_rate),
        cmocka_unit_test(test_charge_goes_into_debt),
        cmocka_unit_test(test_slots),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
