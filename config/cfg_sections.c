/*
 * cfg_sections.c -- the keys each section of the file allows, and the
 * message for a key that is not one of them (cfg_sections.h).
 *
 * The schema (keys, types, ranges, defaults) is documented in
 * docs/config.md; keep both in step.
 *
 * Threading: the loading thread only; the tables are constant.
 */
#include "cfg_sections.h"

#include "sl.h"

static const char *const top_keys[] = {"listen",       "tls",        "region",     "data_dir",
                                       "partitions",   "shard_size", "durability", "io_threads",
                                       "log_requests", "server",     "admin",      "defaults",
                                       "tenants",      "cluster",    NULL};
static const char *const tls_keys[] = {"cert_file", "key_file", NULL};
static const char *const admin_keys[] = {"listen", "access_key_id", "secret_access_key",
                                         "bearer_token", NULL};
static const char *const defaults_keys[] = {
    "limits", "on_excess", "spill", "auto_create_queues", "queue_defaults", NULL};
static const char *const tenant_keys[] = {
    "access_key_id", "secret_access_key",  "limits",         "on_excess",
    "spill",         "auto_create_queues", "queue_defaults", NULL};
static const char *const limits_keys[] = {
    "requests_per_second",     "burst",      "max_inflight", "max_backlog",
    "max_long_polls",          "max_queues", "queues",       "actions",
    "max_concurrent_requests", NULL};
static const char *const spill_keys[] = {"delay_seconds", "aged_after_seconds", NULL};
static const char *const rate_keys[] = {"requests_per_second", "burst", NULL};
static const char *const server_keys[] = {"max_connections",       "max_connections_per_peer",
                                          "min_free_disk_bytes",   "request_body_budget_bytes",
                                          "response_budget_bytes", NULL};
static const char *const cluster_keys[] = {
    "node_id",          "raft", "peer", "secret_file", "replication", "nodes", "memory_budget",
    "snapshot_entries", NULL};
static const char *const cluster_node_keys[] = {"id", "raft", "peer", "api", NULL};
static const char *const queue_defaults_keys[] = {"VisibilityTimeout",
                                                  "DelaySeconds",
                                                  "MessageRetentionPeriod",
                                                  "MaximumMessageSize",
                                                  "ReceiveMessageWaitTimeSeconds",
                                                  NULL};

const char *cfg_queue_default_name(enum cfg_queue_default d)
{
    return (unsigned)d < CFG_QD_N ? queue_defaults_keys[d] : "?";
}

static const char *const *const section_keys[CFG__SEC_N] = {
    top_keys,   tls_keys,  admin_keys,  defaults_keys, tenant_keys,       limits_keys,
    spill_keys, rate_keys, server_keys, cluster_keys,  cluster_node_keys, queue_defaults_keys,
};

/* Where a key of each section may be written, as a reader would say it. */
static const char *const section_where[CFG__SEC_N] = {
    "at the top level",
    "in tls",
    "in admin",
    "in defaults",
    "in a tenant",
    "in limits",
    "in spill",
    "in a queue or action limit",
    "in server",
    "in cluster",
    "in an entry of cluster.nodes",
    "in queue_defaults",
};

static bool section_has(enum cfg__section sec, const struct cfg__node *k)
{
    for (const char *const *p = section_keys[sec]; *p != NULL; p++) {
        if (cfg__key_is(k, *p)) {
            return true;
        }
    }
    return false;
}

void cfg__report_unknown(struct vctx *v, enum cfg__section sec, const char *where,
                         const struct cfg__node *k)
{
    struct sl_buf hint;
    sl_buf_init(&hint);
    int places = 0;
    for (int other = 0; other < CFG__SEC_N; other++) {
        /* A rate entry's keys are limits' keys too: "in limits" says it. */
        if (other != (int)sec && other != CFG__SEC_RATE &&
            section_has((enum cfg__section)other, k)) {
            sl_buf_printf(&hint, "%s%s", places++ ? " or " : "", section_where[other]);
        }
    }
    if (places > 0) {
        REPORT(v, k, "key %s is not allowed %s; it belongs %s", cfg__qnode(k), where, hint.p);
    } else {
        for (const char *const *p = section_keys[sec]; *p != NULL; p++) {
            sl_buf_printf(&hint, "%s%s", p == section_keys[sec] ? "" : ", ", *p);
        }
        REPORT(v, k, "unknown key %s %s (allowed: %s)", cfg__qnode(k), where, hint.p);
    }
    sl_buf_free(&hint);
}
