/*
 * gw_runq.h -- (gateway-internal) a loop's run queue of whole requests,
 * taken round robin across connections in bounded turns (gw_runq.c).
 *
 * Why: a loop thread serves many connections. Handing each request to the
 * handler as soon as it is parsed made the loop serve whatever one read
 * brought, in order: a tenant whose connection carries sixteen batches of
 * ten 1 KiB messages held the thread for milliseconds (decoding, SigV4
 * over the body, checksums) while a quiet tenant's request, already in its
 * socket, waited for all of them. Queued here instead, each connection
 * gets one request per round, and a turn ends after GW_RUNQ_TURN_NS so
 * that the loop polls again and requests that arrived meanwhile join the
 * rounds: a request waits for at most one request of each other busy
 * connection, plus what was running when it arrived.
 *
 * Items and flows are embedded in their owners' structs (an exchange, a
 * connection) and never allocated here. The queue knows nothing of what
 * it runs: an item carries its function.
 *
 * Threading: everything on the loop's thread.
 */
#ifndef SLUICE_GW_RUNQ_H
#define SLUICE_GW_RUNQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "sl.h"

/* One turn's work before the loop polls again. A quarter of a
 * millisecond: long enough that the extra polls cost nothing measurable
 * (a cheap request takes about 20 µs), short next to the fsync a send
 * waits for. */
#define GW_RUNQ_TURN_NS (250ull * 1000ull)

struct gw_runq_item;
typedef void gw_runq_fn(struct gw_runq_item *item);

struct gw_runq_item {
    gw_runq_fn *run;
    struct gw_runq_item *next;
    struct gw_runq_flow *flow; /* NULL while not queued */
};

/* A connection's queue: its items in arrival order, and its place in the
 * loop's round, which it holds exactly while it has items. */
struct gw_runq_flow {
    struct gw_runq *q;
    struct gw_runq_item *head, *tail;
    struct gw_runq_flow *next; /* the round */
};

struct gw_runq {
    uv_check_t check; /* runs a turn after each poll */
    uv_idle_t idle;   /* keeps the poll from blocking while items wait */
    struct gw_runq_flow *first, *last;
    uint64_t items_run, turns_cut;
};

/* Initialises q on loop. Its handles do not keep the loop alive except
 * while items wait; they are closed with the loop's other handles (the
 * loop's owner walks and closes them). Returns SL_OK or SL_EIO. */
int gw__runq_init(struct gw_runq *q, uv_loop_t *loop);

/* A new, empty flow of q. */
void gw__runq_flow_init(struct gw_runq_flow *f, struct gw_runq *q);

/* True when f has no item queued (a flow's owner may be freed only then). */
bool gw__runq_flow_empty(const struct gw_runq_flow *f);

/* Queues item (not queued) at the end of f; run(item) is called in a
 * later turn of f's loop, never from inside this call. */
void gw__runq_push(struct gw_runq_flow *f, struct gw_runq_item *item, gw_runq_fn *run);

/* Takes a queued item off its flow without running it (its owner is going
 * away). Returns true if it was queued. */
bool gw__runq_remove(struct gw_runq_item *item);

#endif
