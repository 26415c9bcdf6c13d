/*
 * pol_ratelim.c -- the GCRA rate meter and the non-blocking slot counter.
 *
 * GCRA (the generic cell rate algorithm, a token bucket kept as a single
 * time) stores TAT, the "theoretical arrival time" at which the bucket is
 * full again. With T = 1 s / requests_per_second and tau = burst * T, a
 * request of cost c at time now passes when
 *     max(TAT, now) - now + c * T <= tau
 * and then TAT becomes max(TAT, now) + c * T. One 64-bit word of state
 * means one compare-and-swap makes a take atomic, so every I/O thread can
 * share a tenant's budget exactly without a lock (docs/policy.md, section
 * 2; redis-cell and nghttp2's ratelim take the clock as a parameter the
 * same way).
 *
 * Invariants:
 *   1. tat_ns only moves forward in a take; refused takes never write it.
 *   2. interval_ns == 0 means unlimited; every take passes.
 *   3. Arithmetic saturates at UINT64_MAX instead of wrapping.
 *
 * Threading: lock-free; any thread. Ownership: caller storage.
 */
#include "pol.h"

#include <math.h>

/* One token per ~31.7 years is the slowest rate we represent. */
#define MAX_INTERVAL_NS 1000000000000000000ull
/* A slowed take (rate_ppm < POL_PPM) may push TAT at most this far past a
 * full bucket's refill time (or one bucket more, if that is longer), so a
 * tenant whose backlog has drained is never locked out for minutes by the
 * back-pressure it felt before. */
#define MAX_PENALTY_NS 1000000000ull

static uint64_t sat_add(uint64_t a, uint64_t b)
{
    uint64_t r;
    return __builtin_add_overflow(a, b, &r) ? UINT64_MAX : r;
}

static uint64_t sat_mul(uint64_t a, uint64_t b)
{
    uint64_t r;
    return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}

static uint64_t interval_for(double requests_per_second)
{
    double iv;

    if (!isfinite(requests_per_second) || requests_per_second <= 0.0) {
        return 0;
    }
    iv = 1e9 / requests_per_second;
    if (iv < 1.0) {
        return 1;
    }
    if (iv > (double)MAX_INTERVAL_NS) {
        return MAX_INTERVAL_NS;
    }
    return (uint64_t)llround(iv);
}

/* need * POL_PPM / rate_ppm without overflowing the intermediate. */
static uint64_t scale_spend(uint64_t need, uint32_t rate_ppm)
{
    if (rate_ppm >= POL_PPM) {
        return need;
    }
    return sat_add(sat_mul(need / rate_ppm, POL_PPM),
                   (need % rate_ppm) * (uint64_t)POL_PPM / rate_ppm);
}

void pol_gcra_init(struct pol_gcra *g, double requests_per_second, uint32_t burst)
{
    atomic_init(&g->tat_ns, 0);
    atomic_init(&g->interval_ns, interval_for(requests_per_second));
    atomic_init(&g->burst, burst);
}

void pol_gcra_set_rate(struct pol_gcra *g, double requests_per_second, uint32_t burst,
                       uint64_t now_ns)
{
    uint64_t new_iv = interval_for(requests_per_second);
    uint64_t old_iv = atomic_load(&g->interval_ns);
    uint64_t old_burst = atomic_load(&g->burst);
    uint64_t tat = atomic_load(&g->tat_ns);
    uint64_t new_tat;

    do {
        /* Keep the token level (what the tenant may still send now), not
         * the debt: a reload to a larger burst must not hand out the
         * difference for free, and a smaller burst clamps the level. */
        long double level = burst;
        if (old_iv != 0 && new_iv != 0) {
            uint64_t debt = tat > now_ns ? tat - now_ns : 0;
            long double old_tau = (long double)old_burst * old_iv;
            level = debt >= old_tau ? 0.0L : (old_tau - debt) / old_iv;
            if (level > burst) {
                level = burst;
            }
        }
        long double new_debt = ((long double)burst - level) * new_iv;
        new_tat = new_debt >= (long double)(UINT64_MAX - now_ns) ? UINT64_MAX
                                                                 : now_ns + (uint64_t)new_debt;
    } while (!atomic_compare_exchange_weak(&g->tat_ns, &tat, new_tat));
    /* A take racing with this store may mix old and new parameters once;
     * that is off by at most one request and only at the moment of reload. */
    atomic_store(&g->interval_ns, new_iv);
    atomic_store(&g->burst, burst);
}

bool pol_gcra_take(struct pol_gcra *g, uint32_t cost, uint32_t rate_ppm, uint64_t now_ns,
                   uint64_t *retry_after_ns)
{
    uint64_t iv, burst, need, tau, spend, max_debt, tat;

    if (retry_after_ns != NULL) {
        *retry_after_ns = 0;
    }
    if (cost == 0) {
        return true;
    }
    iv = atomic_load(&g->interval_ns);
    if (iv == 0) {
        return true;
    }
    burst = atomic_load(&g->burst);
    if (cost > burst || rate_ppm == 0) {
        if (retry_after_ns != NULL) {
            *retry_after_ns = UINT64_MAX;
        }
        return false;
    }
    need = sat_mul(cost, iv);
    tau = sat_mul(burst, iv);
    spend = scale_spend(need, rate_ppm);
    max_debt = sat_add(tau, SL_MAX(tau, MAX_PENALTY_NS));
    tat = atomic_load(&g->tat_ns);
    for (;;) {
        uint64_t base = tat > now_ns ? tat : now_ns;
        uint64_t debt = base - now_ns;
        if (sat_add(debt, need) > tau) {
            if (retry_after_ns != NULL) {
                *retry_after_ns = sat_add(debt, need) - tau;
            }
            return false;
        }
        /* debt + need <= tau < max_debt here, so the cap never refunds
         * the tokens this request actually needs. */
        uint64_t new_debt = SL_MIN(sat_add(debt, spend), max_debt);
        /* On failure tat is reloaded and the decision is made again on the
         * fresh value: no admission is ever counted twice. */
        if (atomic_compare_exchange_weak(&g->tat_ns, &tat, sat_add(now_ns, new_debt))) {
            return true;
        }
    }
}

void pol_gcra_refund(struct pol_gcra *g, uint32_t cost)
{
    uint64_t give = sat_mul(cost, atomic_load(&g->interval_ns));
    uint64_t tat = atomic_load(&g->tat_ns);

    /* A full-rate take moved TAT from max(TAT, now) by exactly cost * T
     * (the cap on slowed takes never applies to it), and takes add to TAT:
     * moving it back is as if the take never happened, whatever other
     * takes did meanwhile, as long as TAT has not passed the present in
     * between (the bucket refilled to full). Only then can the refund give
     * up to cost tokens too many, to a bucket that was full a moment ago.
     * A TAT that lands in the past just means full. */
    while (give != 0 &&
           !atomic_compare_exchange_weak(&g->tat_ns, &tat, tat > give ? tat - give : 0)) {
    }
}

void pol_gcra_charge(struct pol_gcra *g, uint32_t cost, uint64_t now_ns)
{
    uint64_t iv = atomic_load(&g->interval_ns);
    if (cost == 0 || iv == 0) {
        return;
    }
    uint64_t need = sat_mul(cost, iv);
    uint64_t max_debt = sat_mul(sat_mul(2, atomic_load(&g->burst)), iv);
    uint64_t tat = atomic_load(&g->tat_ns);
    for (;;) {
        uint64_t base = tat > now_ns ? tat : now_ns;
        uint64_t debt = SL_MIN(sat_add(base - now_ns, need), SL_MAX(max_debt, base - now_ns));
        if (atomic_compare_exchange_weak(&g->tat_ns, &tat, sat_add(now_ns, debt))) {
            return;
        }
    }
}

uint64_t pol_gcra_available(struct pol_gcra *g, uint64_t now_ns)
{
    uint64_t iv = atomic_load(&g->interval_ns);
    uint64_t burst = atomic_load(&g->burst);
    uint64_t tat = atomic_load(&g->tat_ns);
    uint64_t tau, debt;

    if (iv == 0) {
        return burst;
    }
    tau = sat_mul(burst, iv);
    debt = tat > now_ns ? tat - now_ns : 0;
    return debt >= tau ? 0 : (tau - debt) / iv;
}

uint64_t pol_gcra_owed(struct pol_gcra *g, uint64_t now_ns)
{
    uint64_t iv = atomic_load(&g->interval_ns);
    uint64_t tau = sat_mul(atomic_load(&g->burst), iv);
    uint64_t tat = atomic_load(&g->tat_ns);
    if (iv == 0 || tat <= now_ns || tat - now_ns <= tau) {
        return 0;
    }
    uint64_t owed_ns = tat - now_ns - tau;
    return owed_ns / iv + (owed_ns % iv != 0); /* a token partly owed is owed */
}

void pol_slots_init(struct pol_slots *s, uint32_t max)
{
    atomic_init(&s->used, 0);
    atomic_init(&s->max, max);
}

void pol_slots_set_max(struct pol_slots *s, uint32_t max)
{
    atomic_store(&s->max, max);
}

bool pol_slots_acquire(struct pol_slots *s)
{
    uint32_t used = atomic_load(&s->used);

    for (;;) {
        uint32_t max = atomic_load(&s->max);
        if ((max != 0 && used >= max) || used == UINT32_MAX) {
            return false;
        }
        if (atomic_compare_exchange_weak(&s->used, &used, used + 1)) {
            return true;
        }
    }
}

void pol_slots_release(struct pol_slots *s)
{
    uint32_t before = atomic_fetch_sub(&s->used, 1);
    SL_ASSERT(before > 0);
}

uint32_t pol_slots_used(const struct pol_slots *s)
{
    return atomic_load(&s->used);
}
