/*
 * lt_sched.c -- the open-loop schedule. Operation i is intended to start at
 * start + i / rate; the generator issues every due operation as soon as it
 * has a free stream, and each is timed from its intended start, so time
 * spent waiting for a stream (because the server is slow) counts as
 * latency. This is what keeps the numbers free of coordinated omission.
 *
 * Pure: the caller passes the clock. Threading: none.
 */
#include "lt_int.h"

void lt_sched_init(struct lt_sched *s, uint64_t start_ns, double rate_per_s)
{
    SL_ASSERT(rate_per_s > 0);
    s->start_ns = start_ns;
    s->rate = rate_per_s;
    s->taken = 0;
}

uint64_t lt_sched_intended(const struct lt_sched *s, uint64_t i)
{
    return s->start_ns + (uint64_t)((double)i * 1e9 / s->rate);
}

uint64_t lt_sched_due(const struct lt_sched *s, uint64_t now_ns)
{
    if (now_ns < s->start_ns) {
        return 0;
    }
    /* Operations 0..k are due when intended(k) <= now; k is found from the
     * rate and then corrected for floating-point rounding either way. */
    uint64_t k = (uint64_t)((double)(now_ns - s->start_ns) * s->rate / 1e9);
    while (lt_sched_intended(s, k) > now_ns && k > 0) {
        k--;
    }
    while (lt_sched_intended(s, k + 1) <= now_ns) {
        k++;
    }
    uint64_t due = k + 1;
    return due > s->taken ? due - s->taken : 0;
}

uint64_t lt_sched_take(struct lt_sched *s)
{
    return lt_sched_intended(s, s->taken++);
}

uint64_t lt_sched_phase_ns(double rate_per_s, size_t k, size_t n)
{
    if (rate_per_s <= 0 || k >= n) {
        return 0;
    }
    return (uint64_t)(1e9 / rate_per_s * (double)k / (double)n);
}

uint64_t lt_latency_us(uint64_t start_ns, uint64_t done_ns)
{
    if (done_ns <= start_ns) {
        return 0;
    }
    return (done_ns - start_ns + 500) / 1000;
}

uint64_t lt_intended_wall_us(uint64_t wall_now_us, uint64_t mono_now_ns, uint64_t intended_ns)
{
    if (intended_ns >= mono_now_ns) {
        return wall_now_us;
    }
    uint64_t behind_us = (mono_now_ns - intended_ns) / 1000;
    return behind_us < wall_now_us ? wall_now_us - behind_us : 0;
}

double lt_group_elapsed_s(uint64_t start_ns, uint64_t last_message_ns, uint64_t last_reply_ns,
                          uint64_t now_ns)
{
    uint64_t end = now_ns;
    if (last_message_ns > start_ns) {
        end = last_message_ns;
    } else if (last_reply_ns > start_ns) {
        end = last_reply_ns;
    }
    return end > start_ns ? (double)(end - start_ns) / 1e9 : 0.0;
}
