/*
 * gw_budget.h -- (gateway-internal) the process-wide memory budgets of the
 * protocol layer (gw_budget.c): bytes of request bodies buffered before
 * their handler runs, and bytes of responses queued but not yet sent, with
 * the counters /metrics reports about them.
 *
 * One struct gw_budget serves every I/O thread and every connection: its
 * counters are atomics, taken per DATA frame and per response, never under
 * a lock. The protocol layer (gw_h2.c; an HTTP/1.1 layer alike) charges and
 * releases; it refuses new streams while either budget is spent.
 */
#ifndef SLUICE_GW_BUDGET_H
#define SLUICE_GW_BUDGET_H

#include <stdbool.h>
#include <stdint.h>

#include "sl.h"

enum gw_budget_kind {
    GW_BUDGET_BODY,     /* request bodies being received or held by a handler */
    GW_BUDGET_RESPONSE, /* response bodies submitted and not yet sent */
    GW_BUDGET_KIND_COUNT
};

/* Why a stream was refused or cut. */
enum gw_budget_refusal {
    GW_BUDGET_REFUSED_STREAM_BODY,     /* new stream while the body budget is spent */
    GW_BUDGET_REFUSED_STREAM_RESPONSE, /* new stream while the response budget is spent */
    GW_BUDGET_REFUSED_BODY,            /* a body that would take the body budget past it */
    GW_BUDGET_STALLED,                 /* an answer that made no progress (gw_h2.h) */
    GW_BUDGET_REFUSAL_COUNT
};

/* Labels for logs and /metrics ("request_body", "stream_body", ...). */
const char *gw__budget_kind_name(enum gw_budget_kind k);
const char *gw__budget_refusal_name(enum gw_budget_refusal r);

/* The limit used when the configuration says 0: a fraction of physical
 * memory (sysconf(_SC_PHYS_PAGES)), clamped to [GW_BUDGET_MIN_DEFAULT,
 * GW_BUDGET_MAX_DEFAULT]. */
#define GW_BUDGET_MIN_DEFAULT ((uint64_t)64 << 20)
#define GW_BUDGET_MAX_DEFAULT ((uint64_t)1 << 30)
uint64_t gw__budget_default(enum gw_budget_kind k);

struct gw_budget;

/* A budget with both limits (0 = gw__budget_default). Never fails
 * (control-plane memory); free with gw__budget_free once no connection
 * can charge it. */
struct gw_budget *gw__budget_new(uint64_t body_limit, uint64_t response_limit);
void gw__budget_free(struct gw_budget *b);

/* New limits (0 = default), effective at the next charge (SIGHUP). Bytes
 * already held above a lowered limit stay; new streams wait for them. */
void gw__budget_set(struct gw_budget *b, uint64_t body_limit, uint64_t response_limit);

/* Charges n bytes of kind. Returns SL_OK, or SL_EBUSY (nothing charged)
 * when that would pass the limit. Thread-safe. */
int gw__budget_take(struct gw_budget *b, enum gw_budget_kind k, uint64_t n);

/* Charges n bytes of kind whatever the limit: memory that already exists
 * (a response the handler produced) and must be accounted. */
void gw__budget_force(struct gw_budget *b, enum gw_budget_kind k, uint64_t n);

/* Gives back n bytes that take or force charged. */
void gw__budget_give(struct gw_budget *b, enum gw_budget_kind k, uint64_t n);

/* May a new stream start? SL_OK, or SL_EBUSY with *why set when a budget
 * is spent; the refusal is counted. Thread-safe. */
int gw__budget_admit(struct gw_budget *b, enum gw_budget_refusal *why);

/* Counts a refusal decided by the caller (a body over the budget, a
 * stalled answer). */
void gw__budget_count(struct gw_budget *b, enum gw_budget_refusal why);

/* A snapshot for /metrics and tests (relaxed atomics). */
struct gw_budget_stats {
    uint64_t used[GW_BUDGET_KIND_COUNT];
    uint64_t limit[GW_BUDGET_KIND_COUNT];
    uint64_t refused[GW_BUDGET_REFUSAL_COUNT];
};
void gw__budget_stats(struct gw_budget *b, struct gw_budget_stats *out);

#endif
