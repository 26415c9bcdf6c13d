/*
 * gw_budget.c -- the process-wide memory budgets for buffered request
 * bodies and queued responses, shared by every I/O thread.
 *
 * Per-stream and per-connection caps alone let many connections add up to
 * gigabytes; these bound the sum. Each budget is a pair of atomics (used,
 * limit): a charge is a compare-and-swap loop that never lets used pass
 * the limit, so two threads cannot both squeeze past it.
 */
#include "gw_budget.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

/* A sixteenth of physical memory each: both spent at once still leave the
 * rest of the machine to SQLite, the page cache and the queue itself. */
#define DEFAULT_SHARE 16u

struct gw_budget {
    _Atomic uint64_t used[GW_BUDGET_KIND_COUNT];
    _Atomic uint64_t limit[GW_BUDGET_KIND_COUNT];
    _Atomic uint64_t refused[GW_BUDGET_REFUSAL_COUNT];
};

static const char *const kind_names[GW_BUDGET_KIND_COUNT] = {
    [GW_BUDGET_BODY] = "request_body",
    [GW_BUDGET_RESPONSE] = "response",
};

static const char *const refusal_names[GW_BUDGET_REFUSAL_COUNT] = {
    [GW_BUDGET_REFUSED_STREAM_BODY] = "stream_request_body",
    [GW_BUDGET_REFUSED_STREAM_RESPONSE] = "stream_response",
    [GW_BUDGET_REFUSED_BODY] = "request_body",
    [GW_BUDGET_STALLED] = "stalled_response",
};

const char *gw__budget_kind_name(enum gw_budget_kind k)
{
    return (unsigned)k < GW_BUDGET_KIND_COUNT ? kind_names[k] : "unknown";
}

const char *gw__budget_refusal_name(enum gw_budget_refusal r)
{
    return (unsigned)r < GW_BUDGET_REFUSAL_COUNT ? refusal_names[r] : "unknown";
}

uint64_t gw__budget_default(enum gw_budget_kind k)
{
    (void)k; /* the same share for both today */
    long pages = sysconf(_SC_PHYS_PAGES);
    long page = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page <= 0)
        return GW_BUDGET_MIN_DEFAULT;
    uint64_t share = (uint64_t)pages * (uint64_t)page / DEFAULT_SHARE;
    return SL_MIN(SL_MAX(share, GW_BUDGET_MIN_DEFAULT), GW_BUDGET_MAX_DEFAULT);
}

struct gw_budget *gw__budget_new(uint64_t body_limit, uint64_t response_limit)
{
    struct gw_budget *b = sl_xcalloc(1, sizeof(*b));
    gw__budget_set(b, body_limit, response_limit);
    return b;
}

void gw__budget_free(struct gw_budget *b)
{
    free(b);
}

void gw__budget_set(struct gw_budget *b, uint64_t body_limit, uint64_t response_limit)
{
    atomic_store(&b->limit[GW_BUDGET_BODY],
                 body_limit != 0 ? body_limit : gw__budget_default(GW_BUDGET_BODY));
    atomic_store(&b->limit[GW_BUDGET_RESPONSE],
                 response_limit != 0 ? response_limit : gw__budget_default(GW_BUDGET_RESPONSE));
}

int gw__budget_take(struct gw_budget *b, enum gw_budget_kind k, uint64_t n)
{
    uint64_t limit = atomic_load_explicit(&b->limit[k], memory_order_relaxed);
    uint64_t used = atomic_load_explicit(&b->used[k], memory_order_relaxed);
    do {
        if (n > limit || used > limit - n)
            return SL_EBUSY;
    } while (!atomic_compare_exchange_weak(&b->used[k], &used, used + n));
    return SL_OK;
}

void gw__budget_force(struct gw_budget *b, enum gw_budget_kind k, uint64_t n)
{
    atomic_fetch_add(&b->used[k], n);
}

void gw__budget_give(struct gw_budget *b, enum gw_budget_kind k, uint64_t n)
{
    uint64_t before = atomic_fetch_sub(&b->used[k], n);
    SL_ASSERT(before >= n);
}

int gw__budget_admit(struct gw_budget *b, enum gw_budget_refusal *why)
{
    static const enum gw_budget_refusal reason[GW_BUDGET_KIND_COUNT] = {
        [GW_BUDGET_BODY] = GW_BUDGET_REFUSED_STREAM_BODY,
        [GW_BUDGET_RESPONSE] = GW_BUDGET_REFUSED_STREAM_RESPONSE,
    };
    for (int k = 0; k < GW_BUDGET_KIND_COUNT; k++) {
        if (atomic_load_explicit(&b->used[k], memory_order_relaxed) >=
            atomic_load_explicit(&b->limit[k], memory_order_relaxed)) {
            *why = reason[k];
            gw__budget_count(b, *why);
            return SL_EBUSY;
        }
    }
    return SL_OK;
}

void gw__budget_count(struct gw_budget *b, enum gw_budget_refusal why)
{
    atomic_fetch_add_explicit(&b->refused[why], 1, memory_order_relaxed);
}

void gw__budget_stats(struct gw_budget *b, struct gw_budget_stats *out)
{
    for (int k = 0; k < GW_BUDGET_KIND_COUNT; k++) {
        out->used[k] = atomic_load_explicit(&b->used[k], memory_order_relaxed);
        out->limit[k] = atomic_load_explicit(&b->limit[k], memory_order_relaxed);
    }
    for (int r = 0; r < GW_BUDGET_REFUSAL_COUNT; r++)
        out->refused[r] = atomic_load_explicit(&b->refused[r], memory_order_relaxed);
}
