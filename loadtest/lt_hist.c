/*
 * lt_hist.c -- the load generator's latency histogram, in the manner of
 * Gil Tene's HdrHistogram: exact below 2^LT_HIST_SUB_BITS, then every
 * power of two cut into 2^(LT_HIST_SUB_BITS-1) equal buckets, so memory is
 * fixed (about 115 KiB) and relative error bounded (0.2 %) at any scale.
 *
 * Bucket layout, with S = LT_HIST_SUB_BITS and H = 2^(S-1):
 *   v < 2^S:  bucket v (width 1)
 *   else:     e = msb(v) - S + 1 >= 1, bucket (e + 1) * H + (v >> e) - H,
 *             holding [ (v >> e) << e, ((v >> e) << e) + 2^e - 1 ]
 * so buckets are contiguous and ordered by value.
 *
 * Threading: none; one histogram belongs to one thread.
 */
#include "lt_int.h"

#include <stdlib.h>
#include <string.h>

#define SUB_COUNT (UINT64_C(1) << LT_HIST_SUB_BITS)
#define HALF_COUNT (SUB_COUNT >> 1)

static unsigned msb(uint64_t v)
{
    return 63u - (unsigned)__builtin_clzll(v);
}

size_t lt_hist_bucket(uint64_t value)
{
    if (value > LT_HIST_MAX_VALUE) {
        value = LT_HIST_MAX_VALUE;
    }
    if (value < SUB_COUNT) {
        return (size_t)value;
    }
    unsigned e = msb(value) - LT_HIST_SUB_BITS + 1;
    return (size_t)((e + 1) * HALF_COUNT + (value >> e) - HALF_COUNT);
}

uint64_t lt_hist_bucket_high(size_t bucket)
{
    if (bucket < SUB_COUNT) {
        return bucket;
    }
    uint64_t e = bucket / HALF_COUNT - 1;
    uint64_t sub = bucket % HALF_COUNT + HALF_COUNT;
    return (sub << e) + (UINT64_C(1) << e) - 1;
}

void lt_hist_init(struct lt_hist *h)
{
    memset(h, 0, sizeof(*h));
    h->nbuckets = lt_hist_bucket(LT_HIST_MAX_VALUE) + 1;
    h->counts = sl_xcalloc(h->nbuckets, sizeof(h->counts[0]));
    h->min = UINT64_MAX;
}

void lt_hist_fini(struct lt_hist *h)
{
    free(h->counts);
    h->counts = NULL;
}

void lt_hist_reset(struct lt_hist *h)
{
    memset(h->counts, 0, h->nbuckets * sizeof(h->counts[0]));
    h->total = 0;
    h->min = UINT64_MAX;
    h->max = 0;
    h->sum = 0;
}

void lt_hist_record(struct lt_hist *h, uint64_t value)
{
    if (value > LT_HIST_MAX_VALUE) {
        value = LT_HIST_MAX_VALUE;
    }
    h->counts[lt_hist_bucket(value)]++;
    h->total++;
    h->sum += (double)value;
    h->min = SL_MIN(h->min, value);
    h->max = SL_MAX(h->max, value);
}

void lt_hist_merge(struct lt_hist *dst, const struct lt_hist *src)
{
    for (size_t i = 0; i < dst->nbuckets; i++) {
        dst->counts[i] += src->counts[i];
    }
    dst->total += src->total;
    dst->sum += src->sum;
    dst->min = SL_MIN(dst->min, src->min);
    dst->max = SL_MAX(dst->max, src->max);
}

uint64_t lt_hist_percentile(const struct lt_hist *h, double p)
{
    if (h->total == 0) {
        return 0;
    }
    if (p >= 100.0) {
        return h->max;
    }
    if (p < 0) {
        p = 0;
    }
    /* Nearest rank: the value at position ceil(p/100 * n), at least 1. A
     * tiny tolerance keeps 99.9 % of 1000 at rank 999 despite rounding. */
    double exact = p / 100.0 * (double)h->total;
    uint64_t rank = (uint64_t)exact;
    if (exact - (double)rank > 1e-9 * (exact + 1.0)) {
        rank++;
    }
    if (rank == 0) {
        rank = 1;
    }
    uint64_t seen = 0;
    for (size_t i = 0; i < h->nbuckets; i++) {
        seen += h->counts[i];
        if (seen >= rank) {
            uint64_t v = lt_hist_bucket_high(i);
            return SL_MAX(SL_MIN(v, h->max), h->min);
        }
    }
    return h->max;
}

double lt_hist_mean(const struct lt_hist *h)
{
    return h->total ? h->sum / (double)h->total : 0.0;
}
