/*
 * gw_metrics.h -- (gateway-internal) the counters behind the admin
 * listener's GET /metrics, and their rendering in the Prometheus text
 * exposition format (version 0.0.4).
 *
 * Two kinds of numbers:
 *  - counters and histograms the request path bumps (gw_metrics_count_*,
 *    gw_metrics_observe_*): per tenant, kept in a table of per-tenant
 *    blocks of relaxed atomic counters; a tenant's block is made on its
 *    first request and lives until gw_metrics_free, so the hot path costs
 *    one lock-free lookup and one atomic add per number;
 *  - gauges read at scrape time from their owners (the partitions'
 *    catalog counts and writer statistics, the limiter's buckets).
 *
 * Threading: gw_metrics_new/free on one thread with no user left; every
 * other function from any thread.
 * Ownership: the metrics object belongs to struct gw_api; tenant names are
 * copied.
 */
#ifndef SLUICE_GW_METRICS_H
#define SLUICE_GW_METRICS_H

#include <stdint.h>

#include "gw_sqs.h"
#include "sl.h"

struct cfg_snapshot;
struct part_engine;
struct pol_limiter;
struct gw_metrics;

/* Tenant label of requests made with the admin credentials, and of
 * requests that never authenticated. */
#define GW_METRICS_ADMIN_TENANT "(admin)"
#define GW_METRICS_NO_TENANT "-"

struct gw_metrics *gw_metrics_new(void);
void gw_metrics_free(struct gw_metrics *m);

/* One finished SQS request: sluice_requests_total{tenant,action,outcome}
 * (outcome "ok" or the error's query code) and
 * sluice_request_duration_seconds{action}. tenant NULL = GW_METRICS_NO_TENANT;
 * action GW_SQS_ACT__COUNT = a request that was never routed. */
void gw_metrics_count_request(struct gw_metrics *m, const char *tenant, enum gw_sqs_action action,
                              enum gw_sqs_error outcome, uint64_t duration_ns);

/* The same request once more by the queue it named (resolved and owned
 * by the caller): sluice_queue_requests_total{tenant,queue,action,outcome},
 * outcome reduced to ok / throttled / client_error / server_error. */
void gw_metrics_count_queue_request(struct gw_metrics *m, uint64_t queue_id,
                                    enum gw_sqs_action action, enum gw_sqs_error outcome);

/* A ReceiveMessage of the queue answered with no message, after any
 * long-poll wait (the Builders' Library's "polls that come back empty"):
 * sluice_queue_empty_receives_total{tenant,queue}. For the receive path. */
void gw_metrics_count_empty_receive(struct gw_metrics *m, uint64_t queue_id);

/* n messages of tenant accepted into the overflow lane (spill mode):
 * sluice_spilled_messages_total{tenant}. For the send path. */
/* Counts an admin request that failed authentication, or (throttled) was
 * refused unchecked because failures came too fast. */
void gw_metrics_count_admin_auth(struct gw_metrics *m, bool throttled);

void gw_metrics_count_spill(struct gw_metrics *m, const char *tenant, uint64_t n);
/* n sends to FIFO queue queue_id were duplicates within the
 * deduplication interval (accepted, not stored again). */
void gw_metrics_count_deduplicated(struct gw_metrics *m, uint64_t queue_id, uint64_t n);

/* A message's age at its first receive (SQS's AgeOfFirstAttempt):
 * sluice_first_receive_age_seconds{tenant}. For the receive path. */
void gw_metrics_observe_first_receive_age(struct gw_metrics *m, const char *tenant,
                                          uint64_t age_ms);

/* The latest AgeOfFirstAttempt seen on queue_id (note), and reading it
 * back (0: none seen since start): the admin API's per-queue figure, which
 * a histogram per tenant cannot give. Any thread. */
void gw_metrics_note_queue_first_attempt(struct gw_metrics *m, uint64_t queue_id, uint64_t age_ms);
uint64_t gw_metrics_queue_first_attempt(struct gw_metrics *m, uint64_t queue_id);

/* How long a ReceiveMessage took from request to answer, long-poll wait
 * included: sluice_receive_latency_seconds{tenant}. For the receive path. */
void gw_metrics_observe_receive_latency(struct gw_metrics *m, const char *tenant,
                                        uint64_t duration_ns);

/* Where the scrape-time gauges come from; any member may be NULL (that
 * part is left out). All borrowed for the call. */
struct gw_connlimit;
struct gw_budget;

struct gw_metrics_sources {
    const struct cfg_snapshot *snap;  /* tenants: backlog, in flight, tokens */
    struct part_engine *engine;       /* queues and partitions */
    struct pol_limiter *limiter;      /* rate-limit tokens, long polls */
    uint64_t now_ns;                  /* the limiter's clock (sl_mono_ns) */
    struct gw_connlimit *conns;       /* the SQS listener's caps and refusals */
    struct gw_connlimit *admin_conns; /* the admin listener's */
    struct gw_budget *budget;         /* the SQS listener's memory budgets */
};

/* Appends the whole exposition to out. */
void gw_metrics_render(struct gw_metrics *m, const struct gw_metrics_sources *src,
                       struct sl_buf *out);

/* Appends v as a Prometheus label value (without the quotes): backslash,
 * double quote and newline escaped. */
void gw_metrics_append_label_value(struct sl_buf *out, const char *v);

#endif
