/*
 * test_sched.c -- open-loop accounting: operations are due at their
 * intended times whatever happened before, and latency runs from the
 * intended time, so a stall shows up in every operation it delayed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "lt_int.h"

#define MS 1000000ull

static void due_follows_the_rate(void **state)
{
    struct lt_sched s;
    lt_sched_init(&s, 5 * MS, 1000.0); /* one every ms from t = 5 ms */
    assert_int_equal(lt_sched_due(&s, 0), 0);
    assert_int_equal(lt_sched_due(&s, 5 * MS - 1), 0);
    assert_int_equal(lt_sched_due(&s, 5 * MS), 1);
    assert_int_equal(lt_sched_due(&s, 5 * MS + MS - 1), 1);
    assert_int_equal(lt_sched_due(&s, 10 * MS + MS / 2), 6); /* 5,6,7,8,9,10 ms */
    for (uint64_t i = 0; i < 6; i++) {
        assert_int_equal(lt_sched_take(&s), 5 * MS + i * MS);
    }
    assert_int_equal(lt_sched_due(&s, 10 * MS + MS / 2), 0);
    assert_int_equal(lt_sched_due(&s, 11 * MS), 1);
}

static void phases_spread_groups_over_their_period(void **state)
{
    (void)state;
    /* 4 groups at 5/s (a 200 ms period) start 0, 50, 100 and 150 ms in. */
    for (size_t k = 0; k < 4; k++) {
        assert_int_equal(lt_sched_phase_ns(5.0, k, 4), k * 50 * MS);
    }
    /* A fast group's phase is a fraction of its own short period. */
    assert_int_equal(lt_sched_phase_ns(1000.0, 1, 2), MS / 2);
    /* Nothing to spread: one group, an index out of range, no rate. */
    assert_int_equal(lt_sched_phase_ns(5.0, 0, 1), 0);
    assert_int_equal(lt_sched_phase_ns(5.0, 4, 4), 0);
    assert_int_equal(lt_sched_phase_ns(0.0, 1, 4), 0);
}

static void stall_is_charged_to_every_delayed_operation(void **state)
{
    /* 100/s; the only slot is busy from 0 to 50 ms (the server stalled).
     * A closed-loop tool would report one slow request; open loop charges
     * each of the operations that should have started meanwhile. */
    struct lt_sched s;
    lt_sched_init(&s, 0, 100.0);
    uint64_t first = lt_sched_take(&s);
    uint64_t now = 50 * MS; /* the first operation completes here */
    assert_int_equal(lt_latency_us(first, now), 50000);
    assert_int_equal(lt_sched_due(&s, now), 5); /* 10,20,30,40,50 ms */
    uint64_t lat_sum = 0;
    while (lt_sched_due(&s, now) > 0) {
        uint64_t intended = lt_sched_take(&s);
        now += MS; /* each then takes 1 ms */
        lat_sum += lt_latency_us(intended, now);
    }
    /* completions at 51..55 ms for intended 10..50 ms: 41+32+23+14+5 ms */
    assert_int_equal(lat_sum, (41 + 32 + 23 + 14 + 5) * 1000);
    assert_int_equal(s.taken, 6);
}

static void fractional_rates_and_rounding(void **state)
{
    struct lt_sched s;
    lt_sched_init(&s, 0, 3.0); /* 0, 333.33 ms, 666.67 ms, 1 s */
    assert_int_equal(lt_sched_intended(&s, 1), 333333333);
    assert_int_equal(lt_sched_intended(&s, 3), 1000000000);
    assert_int_equal(lt_sched_due(&s, 999999999), 3);
    assert_int_equal(lt_sched_due(&s, 1000000000), 4);
    lt_sched_init(&s, 0, 7919.0);
    for (uint64_t t = 0; t < 2000000000ull; t += 123456789ull) {
        uint64_t due = lt_sched_due(&s, t);
        /* exactly the operations intended at or before t */
        assert_true(lt_sched_intended(&s, due - 1) <= t);
        assert_true(lt_sched_intended(&s, due) > t);
    }
}

static void latency_rounds_and_never_goes_negative(void **state)
{
    assert_int_equal(lt_latency_us(1000, 1000), 0);
    assert_int_equal(lt_latency_us(2000, 1000), 0);
    assert_int_equal(lt_latency_us(0, 1499), 1);
    assert_int_equal(lt_latency_us(0, 1500), 2);
}

/* A producer that is behind its schedule stamps the intended time, so the
 * end-to-end latency includes the delay; one on time stamps now. */
static void body_stamp_is_the_intended_wall_time(void **state)
{
    (void)state;
    uint64_t wall = 1700000000000000ull; /* µs */
    uint64_t mono = 50 * MS * 1000;      /* ns */
    assert_int_equal(lt_intended_wall_us(wall, mono, mono), wall);
    assert_int_equal(lt_intended_wall_us(wall, mono, mono - 30 * MS), wall - 30000);
    assert_int_equal(lt_intended_wall_us(wall, mono, mono - 1999), wall - 1);
    assert_int_equal(lt_intended_wall_us(wall, mono, mono + 5 * MS), wall);
    assert_int_equal(lt_intended_wall_us(10, mono, 0), 0);

    /* Through the schedule: at 100/s with the producer stalled 50 ms, the
     * six due sends carry stamps 10 ms apart, ending at now. */
    struct lt_sched s;
    lt_sched_init(&s, mono - 50 * MS, 100.0);
    uint64_t prev = 0;
    for (int i = 0; lt_sched_due(&s, mono) > 0; i++) {
        uint64_t stamp = lt_intended_wall_us(wall, mono, lt_sched_take(&s));
        assert_int_equal(stamp, wall - 50000 + (uint64_t)i * 10000);
        assert_true(stamp > prev);
        prev = stamp;
    }
    assert_int_equal(prev, wall);

    /* The receiver's e2e from that stamp is the stall plus the trip. */
    struct sl_buf b;
    sl_buf_init(&b);
    lt_body_send(&b, "q", 64, 1, lt_intended_wall_us(wall, mono, mono - 50 * MS));
    const char *m = strstr(b.p, "ts=");
    assert_non_null(m);
    assert_int_equal(wall + 2000 - lt_body_timestamp(m, strlen(m)), 52000);
    sl_buf_free(&b);
}

/* A round trip's consumers wait in long polls after the last message; the
 * empty answers that end those waits must not stretch the group's time. */
static void group_time_ends_at_the_last_message(void **state)
{
    (void)state;
    uint64_t s = 7000 * MS;
    /* 2 s of messages, then empty long polls answered 1 s later. */
    assert_true(lt_group_elapsed_s(s, s + 2000 * MS, s + 3000 * MS, s + 3100 * MS) == 2.0);
    /* Nothing moved (every request throttled): up to the last reply. */
    assert_true(lt_group_elapsed_s(s, 0, s + 1500 * MS, s + 3100 * MS) == 1.5);
    /* No reply at all: up to now. */
    assert_true(lt_group_elapsed_s(s, 0, 0, s + 250 * MS) == 0.25);
    assert_true(lt_group_elapsed_s(s, 0, 0, s) == 0.0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(due_follows_the_rate),
        cmocka_unit_test(phases_spread_groups_over_their_period),
        cmocka_unit_test(stall_is_charged_to_every_delayed_operation),
        cmocka_unit_test(fractional_rates_and_rounding),
        cmocka_unit_test(latency_rounds_and_never_goes_negative),
        cmocka_unit_test(body_stamp_is_the_intended_wall_time),
        cmocka_unit_test(group_time_ends_at_the_last_message),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
