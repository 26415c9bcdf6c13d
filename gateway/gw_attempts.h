/*
 * gw_attempts.h -- (gateway-internal) FIFO ReceiveRequestAttemptId
 * replays (gw_attempts.c): what a receive with an attempt id handed out,
 * kept for SQS's five minutes, so that a retry of it (a lost reply, a
 * network error) gets the same messages and receipt handles instead of
 * a group's later messages or nothing.
 */
#ifndef SLUICE_GW_ATTEMPTS_H
#define SLUICE_GW_ATTEMPTS_H

#include "part.h"
#include "sl.h"

#define GW_ATTEMPT_TTL_MS UINT64_C(300000) /* five minutes */
/* Bytes of kept messages (bodies and attributes) at most: past it the
 * oldest attempts are forgotten first, so a flood of attempt ids costs
 * bounded memory (a retry of a forgotten one is an ordinary receive). */
#define GW_ATTEMPTS_MAX_BYTES (64u << 20)

struct gw_attempts;

struct gw_attempts *gw_attempts_new(void);
void gw_attempts_free(struct gw_attempts *a);

/* Looks up (queue_id, attempt) as of now_ms. On a hit fills *out with an
 * owned copy of the messages (free with gw_attempts_result_free) and
 * returns true. Any thread. */
bool gw_attempts_get(struct gw_attempts *a, uint64_t queue_id, struct sl_slice attempt,
                     uint64_t now_ms, struct part_result *out);
/* Keeps res's messages under (queue_id, attempt) for as long as their
 * leases (lease_ms, the receive's visibility timeout) and at most
 * GW_ATTEMPT_TTL_MS from now_ms, replacing an entry of that key: once a
 * lease has expired another consumer may hold the message, and a replay
 * must not hand it out again. Any thread. */
void gw_attempts_put(struct gw_attempts *a, uint64_t queue_id, struct sl_slice attempt,
                     uint64_t now_ms, uint64_t lease_ms, const struct part_result *res);
void gw_attempts_result_free(struct part_result *r);

#endif
