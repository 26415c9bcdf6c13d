/*
 * test_pol_admit.c -- admission verdicts, the back-pressure curve and the
 * in-flight allowance of a receive. Time is injected; no sleeps.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "pol.h"

#define MS 1000000ull
#define SEC 1000000000ull
#define T0 (1000 * SEC)

static struct cfg_tenant tenant(enum cfg_on_excess mode, double rps, uint32_t burst,
                                uint64_t max_backlog, uint32_t max_inflight)
{
    struct cfg_tenant t = {0};
    t.name = "acme";
    t.limits.requests_per_second = rps;
    t.limits.burst = burst;
    t.limits.max_backlog = max_backlog;
    t.limits.max_inflight = max_inflight;
    t.on_excess = mode;
    return t;
}

static enum pol_verdict admit(struct pol_gcra *g, const struct cfg_tenant *t,
                              enum pol_action_class action, uint32_t cost, uint64_t backlog,
                              uint64_t inflight, uint64_t now, struct pol_admit_result *out)
{
    struct pol_admit_input in = {.tenant = t,
                                 .action = action,
                                 .cost = cost,
                                 .backlog = backlog,
                                 .inflight = inflight,
                                 .now_ns = now};
    enum pol_verdict v = pol_admit(g, &in, out);
    assert_int_equal(v, out->verdict);
    return v;
}

static void test_reject_mode(void **state)
{
    struct cfg_tenant t = tenant(CFG_EXCESS_REJECT, 100, 3, 0, 0);
    struct pol_gcra g;
    struct pol_admit_result r;

    pol_gcra_init(&g, t.limits.requests_per_second, t.limits.burst);
    assert_int_equal(admit(&g, &t, POL_ACTION_SEND, 2, 0, 0, T0, &r), POL_ADMIT);
    assert_int_equal(r.reason, POL_REASON_NONE);
    assert_int_equal(r.rate_ppm, POL_PPM);
    /* A batch of 2 with 1 token left is refused whole, nothing spent. */
    assert_int_equal(admit(&g, &t, POL_ACTION_SEND, 2, 0, 0, T0, &r), POL_THROTTLE);
    assert_int_equal(r.reason, POL_REASON_RATE);
    assert_int_equal(r.retry_after_ns, 10 * MS);
    assert_int_equal(pol_gcra_available(&g, T0), 1);
    assert_int_equal(admit(&g, &t, POL_ACTION_OTHER, 1, 0, 0, T0, &r), POL_ADMIT);
    assert_int_equal(admit(&g, &t, POL_ACTION_RECEIVE, 1, 0, 0, T0, &r), POL_THROTTLE);
    assert_int_equal(r.reason, POL_REASON_RATE);
}

static void test_spill_mode_spills_only_sends(void **state)
{
    struct cfg_tenant t = tenant(CFG_EXCESS_SPILL, 100, 1, 100, 0);
    struct pol_gcra g;
    struct pol_admit_result r;

    pol_gcra_init(&g, t.limits.requests_per_second, t.limits.burst);
    assert_int_equal(admit(&g, &t, POL_ACTION_SEND, 1, 0, 0, T0, &r), POL_ADMIT);
    assert_int_equal(admit(&g, &t, POL_ACTION_SEND, 1, 0, 0, T0, &r), POL_SPILL);
    assert_int_equal(r.reason, POL_REASON_RATE);
    assert_int_equal(r.retry_after_ns, 0);
    assert_int_equal(admit(&g, &t, POL_ACTION_SEND, 10, 10, 0, T0, &r), POL_SPILL);
    /* Other actions over the limit are throttled even in spill mode. */
    assert_int_equal(admit(&g, &t, POL_ACTION_RECEIVE, 1, 0, 0, T0, &r), POL_THROTTLE);
    assert_int_equal(admit(&g, &t, POL_ACTION_OTHER, 1, 0, 0, T0, &r), POL_THROTTLE);
    /* Spilling spent no tokens: after one refill interval a send is admitted. */
    assert_int_equal(admit(&g, &t, POL_ACTION_SEND, 1, 0, 0, T0 + 10 * MS, &r), POL_ADMIT);
}

/* Spill only while the backlog stays below max_backlog; at or past it,
 * and for a batch that would cross it, sends are throttled in both modes. */
static void test_backlog_hard_limit(void **state)
{
    for (int mode = 0; mode < 2; mode++) {
        struct cfg_tenant t =
            tenant(mode ? CFG_EXCESS_SPILL : CFG_EXCESS_REJECT, 100, 1000, 100, 0);
        struct pol_gcra g;
        struct pol_admit_result r;

        pol_gcra_init(&g, t.limits.requests_per_second, t.limits.burst);
        assert_int_equal(admit(&g, &t, POL_ACTION_SEND, 1, 100, 0, T0, &r), POL_THROTTLE);
        assert_int_equal(r.reason, POL_REASON_BACKLOG);
        assert_int_equal(admit(&g, &t, POL_ACTION_SEND, 1, 5000, 0, T0, &r), POL_THROTTLE);
        assert_int_equal(admit(&g, &t, POL_ACTION_SEND, 10, 91, 0, T0, &r), POL_THROTTLE);
        assert_int_equal(r.reason, POL_REASON_BACKLOG);
        assert_int_equal(pol_gcra_available(&g, T0), 1000); /* nothing spent */
        /* Exactly reaching the bound is allowed. */
        assert_int_equal(admit(&g, &t, POL_ACTION_SEND, 10, 90, 0, T0, &r), POL_ADMIT);
        /* Non-sends do not care about the backlog. */
        assert_int_equal(admit(&g, &t, POL_ACTION_OTHER, 1, 5000, 0, T0, &r), POL_ADMIT);
        assert_int_equal(admit(&g, &t, POL_ACTION_RECEIVE, 1, 5000, 0, T0, &r), POL_ADMIT);
    }
}

static void test_inflight_limit_on_receive(void **state)
{
    struct cfg_tenant t = tenant(CFG_EXCESS_REJECT, 100, 10, 0, 50);
    struct pol_gcra g;
    struct pol_admit_result r;

    pol_gcra_init(&g, t.limits.requests_per_second, t.limits.burst);
    assert_int_equal(admit(&g, &t, POL_ACTION_RECEIVE, 1, 0, 50, T0, &r), POL_THROTTLE);
    assert_int_equal(r.reason, POL_REASON_INFLIGHT);
    assert_int_equal(pol_gcra_available(&g, T0), 10);
    assert_int_equal(admit(&g, &t, POL_ACTION_RECEIVE, 1, 0, 49, T0, &r), POL_ADMIT);
    /* Sends are not limited by in-flight messages. */
    assert_int_equal(admit(&g, &t, POL_ACTION_SEND, 1, 0, 500, T0, &r), POL_ADMIT);

    struct cfg_limits l = t.limits;
    assert_int_equal(pol_receive_allowance(&l, 0, 10), 10);
    assert_int_equal(pol_receive_allowance(&l, 45, 10), 5);
    assert_int_equal(pol_receive_allowance(&l, 50, 10), 0);
    assert_int_equal(pol_receive_allowance(&l, 70, 10), 0);
    l.max_inflight = 0;
    assert_int_equal(pol_receive_allowance(&l, 1000000, 10), 10);
}

static void test_backpressure_curve(void **state)
{
    struct cfg_limits l = {.max_backlog = 1000}; /* S = 500, H = 1000 */

    assert_int_equal(pol_backpressure_ppm(&l, 0), POL_PPM);
    assert_int_equal(pol_backpressure_ppm(&l, 500), POL_PPM);
    assert_int_equal(pol_backpressure_ppm(&l, 501), POL_PPM * 499 / 500);
    assert_int_equal(pol_backpressure_ppm(&l, 750), POL_PPM / 2);
    assert_int_equal(pol_backpressure_ppm(&l, 900), POL_PPM / 5);
    assert_int_equal(pol_backpressure_ppm(&l, 999), POL_PPM / 500);
    assert_int_equal(pol_backpressure_ppm(&l, 1000), 0);
    assert_int_equal(pol_backpressure_ppm(&l, 2000), 0);
    /* Monotonic non-increasing across the whole range. */
    uint32_t prev = POL_PPM;
    for (uint64_t b = 0; b <= 1100; b++) {
        uint32_t p = pol_backpressure_ppm(&l, b);
        assert_true(p <= prev);
        assert_true(b >= 1000 || p >= 1);
        prev = p;
    }
    /* Huge bounds do not overflow. */
    l.max_backlog = UINT64_MAX;
    assert_int_equal(pol_backpressure_ppm(&l, UINT64_MAX / 4), POL_PPM);
    assert_in_range(pol_backpressure_ppm(&l, UINT64_MAX / 4 * 3), POL_PPM / 2 - 1, POL_PPM / 2 + 1);
    l.max_backlog = 0;
    assert_int_equal(pol_backpressure_ppm(&l, UINT64_MAX), POL_PPM);
}

/* Halfway between soft and hard limit, a tenant's sends get half its rate:
 * half the burst at once, and half the sustained rate. */
static void test_backpressure_halves_admitted_sends(void **state)
{
    struct cfg_tenant t = tenant(CFG_EXCESS_REJECT, 1000, 10, 1000, 0);
    struct pol_gcra g;
    struct pol_admit_result r;
    int burst = 0, sustained = 0;

    pol_gcra_init(&g, t.limits.requests_per_second, t.limits.burst);
    for (int i = 0; i < 20; i++) {
        burst += admit(&g, &t, POL_ACTION_SEND, 1, 750, 0, T0, &r) == POL_ADMIT;
    }
    assert_int_equal(r.rate_ppm, POL_PPM / 2);
    assert_int_equal(burst, 5);
    for (uint64_t i = 1; i <= 1000; i++) {
        sustained += admit(&g, &t, POL_ACTION_SEND, 1, 750, 0, T0 + i * MS, &r) == POL_ADMIT;
    }
    assert_in_range(sustained, 495, 505);
    /* Other actions keep the full rate at the same backlog. */
    pol_gcra_init(&g, t.limits.requests_per_second, t.limits.burst);
    burst = 0;
    for (int i = 0; i < 20; i++) {
        burst += admit(&g, &t, POL_ACTION_OTHER, 1, 750, 0, T0, &r) == POL_ADMIT;
    }
    assert_int_equal(burst, 10);
}

/* A refusal spends nothing in any bucket, so a client that polls twice
 * per refill period against an action bucket of 1/s, burst 1 (sluicectl's
 * redrive --wait against limits.actions.ListMessageMoveTasks) is refused
 * every other time and admitted every second, and one that waits out
 * retry_after_ns is admitted at once. */
static void test_refusals_cost_nothing_retry_at_refill_rate(void **state)
{
    /* the tenant's bucket refills too slowly to hide a token spent */
    struct cfg_tenant t = tenant(CFG_EXCESS_REJECT, 0.001, 2000, 0, 0);
    struct pol_gcra tenant_rate, action;
    struct pol_admit_result r;
    struct pol_admit_input in = {.tenant = &t, .action = POL_ACTION_OTHER, .cost = 1};

    pol_gcra_init(&tenant_rate, t.limits.requests_per_second, t.limits.burst);
    pol_gcra_init(&action, 1, 1);
    in.action_rate = &action;
    int admitted = 0;
    for (uint64_t i = 0; i < 20; i++) {
        in.now_ns = T0 + i * 500 * MS;
        admitted += pol_admit(&tenant_rate, &in, &r) == POL_ADMIT;
        if (r.verdict == POL_THROTTLE) {
            assert_int_equal(r.reason, POL_REASON_ACTION_RATE);
            assert_int_equal(r.retry_after_ns, 500 * MS);
        }
    }
    assert_int_equal(admitted, 10);
    /* Only the admitted took from the tenant's bucket. */
    assert_int_equal(pol_gcra_available(&tenant_rate, in.now_ns), 2000 - 10);
    /* Refused at once, then admitted after exactly retry_after_ns, even
     * after a run of refusals in between. */
    in.now_ns = T0 + 20 * SEC;
    assert_int_equal(pol_admit(&tenant_rate, &in, &r), POL_ADMIT);
    for (int i = 0; i < 5; i++) {
        assert_int_equal(pol_admit(&tenant_rate, &in, &r), POL_THROTTLE);
        assert_int_equal(r.retry_after_ns, SEC);
    }
    in.now_ns += r.retry_after_ns;
    assert_int_equal(pol_admit(&tenant_rate, &in, &r), POL_ADMIT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reject_mode),
        cmocka_unit_test(test_spill_mode_spills_only_sends),
        cmocka_unit_test(test_backlog_hard_limit),
        cmocka_unit_test(test_inflight_limit_on_receive),
        cmocka_unit_test(test_backpressure_curve),
        cmocka_unit_test(test_backpressure_halves_admitted_sends),
        cmocka_unit_test(test_refusals_cost_nothing_retry_at_refill_rate),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
