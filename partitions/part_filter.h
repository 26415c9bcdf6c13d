/*
 * part_filter.h -- (partitions-internal) the filter index of filtered
 * receives (msg_filter, part_schema.c), implemented by part_filter.c.
 */
#ifndef SLUICE_PART_FILTER_H
#define SLUICE_PART_FILTER_H

#include "part_int.h"

/* The writer's ST_FILTER_PUT bound to the next pair at *pairs (a message's
 * part_send_msg.filters, advanced past it) of the row just inserted as
 * rowid with queue_id, state, lane and priority; the caller steps it. */
struct sqlite3_stmt *part__filter_put(struct part_writer *w, const char **pairs, int64_t rowid,
                                      uint64_t queue_id, int state, int lane, int64_t priority);

/* The writer's ST_FILTER_SCAN bound to r's pairs, queue_id, lane and a
 * LIMIT of limit: it yields the matching ready rows in receive order,
 * with ST_SELECT_READY's columns. The caller steps and resets it. */
struct sqlite3_stmt *part__filter_scan(struct part_writer *w, const struct part_recv *r,
                                       uint64_t queue_id, int lane, uint32_t limit);

/* Copies a request's pairs into r->filter (allocated; the receive's
 * owner frees it): SL_OK, or SL_EINVAL, taking nothing, for a count out
 * of 1..PART_FILTER_MAX, an empty or oversized key or value, or a key
 * given twice. */
int part__filter_copy(struct part_recv *r, const struct part_filter_pair *pairs, size_t n);

#endif
