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

#include <stdint.h>

#include "gw_transport.h"

/* What the protocol layers do with the budgets; gw_transport.h has what
 * the process and /metrics see. */

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

#endif
