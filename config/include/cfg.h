/*
 * cfg.h -- sluice's configuration: YAML loading, strict validation, and the
 * immutable, reference-counted snapshot every other module reads.
 *
 * A snapshot never changes after cfg_load_*() returns it. Reload (SIGHUP)
 * builds a whole new snapshot off the hot path and the holder swaps it in
 * (see struct cfg_holder); requests in flight keep the snapshot they took a
 * reference on, so they finish with the configuration they started with.
 *
 * Threading: a snapshot may be read from any thread without locks. Reference
 * counting is atomic. cfg_holder_get() / cfg_holder_swap() are thread-safe.
 *
 * Ownership: cfg_load_*() return a snapshot with one reference, owned by the
 * caller; cfg_snapshot_unref() frees it when the last reference goes.
 * Every string in a snapshot is owned by the snapshot.
 */
#ifndef SLUICE_CFG_H
#define SLUICE_CFG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum cfg_durability {
    CFG_DURABILITY_FSYNC, /* synchronous=FULL: an acknowledged write survives power loss */
    CFG_DURABILITY_OS,    /* synchronous=NORMAL: survives a crash of the process */
};

enum cfg_on_excess {
    CFG_EXCESS_REJECT, /* RequestThrottled; the client retries */
    CFG_EXCESS_SPILL,  /* sends go to the queue's overflow lane, delayed */
};

/* A host:port pair as written in the file ("127.0.0.1:9324", "[::1]:9324"). */
struct cfg_endpoint {
    char *host; /* without brackets for IPv6 */
    uint16_t port;
};

/* The SQS actions a per-action limit (limits.actions) can name: the ones
 * admission counts. A batch action is limited by the key of its single
 * form (SendMessageBatch by SendMessage), one token per entry, so that
 * batching cannot get round a limit. */
enum cfg_action_key {
    CFG_ACTION_SEND_MESSAGE,
    CFG_ACTION_RECEIVE_MESSAGE,
    CFG_ACTION_DELETE_MESSAGE,
    CFG_ACTION_CHANGE_MESSAGE_VISIBILITY,
    CFG_ACTION_START_MESSAGE_MOVE_TASK,
    CFG_ACTION_LIST_MESSAGE_MOVE_TASKS,
    CFG_ACTION_CANCEL_MESSAGE_MOVE_TASK,
    CFG_ACTION_KEY_COUNT
};

/* The YAML key of an action key ("SendMessage"); NULL when out of range. */
const char *cfg_action_key_name(enum cfg_action_key k);

/* The key whose limit applies to the SQS action named name (not
 * NUL-terminated): "SendMessageBatch" -> CFG_ACTION_SEND_MESSAGE. Returns
 * false when admission does not count that action. */
bool cfg_action_key_of(const char *name, size_t len, enum cfg_action_key *out);

/* A token bucket: refill rate and size. requests_per_second 0 = not set
 * (no such limit); when set, both are. */
struct cfg_rate {
    double requests_per_second;
    uint32_t burst;
};

/* SQS's longest queue name (".fifo" included). */
#define CFG_QUEUE_NAME_MAX 80

/* A per-queue limit (limits.queues.NAME). */
struct cfg_queue_rate {
    char *queue; /* a queue name: 1..80 of [A-Za-z0-9_-], or ending in .fifo */
    struct cfg_rate rate;
};

struct cfg_limits {
    double requests_per_second;       /* token refill rate; a batch costs one per entry */
    uint32_t burst;                   /* bucket size, in tokens */
    uint32_t max_inflight;            /* received-but-not-deleted messages, all queues */
    uint64_t max_backlog;             /* stored messages (all lanes) before sends throttle */
    uint32_t max_long_polls;          /* concurrent waiting ReceiveMessage calls */
    uint32_t max_concurrent_requests; /* requests in progress, all its connections */
    uint32_t max_queues;              /* queues the tenant may have (the catalog's bound) */
    /* limits.actions, by key; requests_per_second 0 where none is set */
    struct cfg_rate actions[CFG_ACTION_KEY_COUNT];
    /* limits.queues, sorted by queue name (strcmp); owned by the snapshot.
     * A snapshot made by hand may leave both zero (no per-queue limits). */
    size_t queue_rate_count;
    struct cfg_queue_rate *queue_rates;
};

/* The per-queue limit of limits for queue (not NUL-terminated), or NULL
 * when none is set. Borrowed from limits. Binary search. */
const struct cfg_rate *cfg_find_queue_rate(const struct cfg_limits *limits, const char *queue,
                                           size_t len);

/* True when a and b hold the same limits, per-queue and per-action ones
 * included (for logging what a reload changes). */
bool cfg_limits_equal(const struct cfg_limits *a, const struct cfg_limits *b);

struct cfg_spill {
    uint32_t delay_seconds;      /* spilled messages stay invisible this long */
    uint32_t aged_after_seconds; /* older ready messages move to the overflow lane */
};

/* The attributes of the queues a tenant's sends create
 * (auto_create_queues), by their SQS names; one not set keeps SQS's
 * default. */
enum cfg_queue_default {
    CFG_QD_VISIBILITY_TIMEOUT,
    CFG_QD_DELAY_SECONDS,
    CFG_QD_MESSAGE_RETENTION_PERIOD,
    CFG_QD_MAXIMUM_MESSAGE_SIZE,
    CFG_QD_RECEIVE_MESSAGE_WAIT_TIME_SECONDS,
    CFG_QD_N
};
struct cfg_queue_defaults {
    bool set[CFG_QD_N];
    uint32_t value[CFG_QD_N];
};
/* The SQS attribute name of each (the key in the file). */
const char *cfg_queue_default_name(enum cfg_queue_default d);

/* A tenant after defaults have been applied: every field is set. */
struct cfg_tenant {
    char *name;              /* [A-Za-z0-9_-]{1,64} */
    char *access_key_id;     /* unique across tenants and the admin */
    char *secret_access_key; /* resolved: "env:NAME" is already read */
    struct cfg_limits limits;
    enum cfg_on_excess on_excess;
    struct cfg_spill spill;
    /* A send to a queue of the tenant's that does not exist creates it
     * with SQS's default attributes (docs/api.md, "Beyond SQS"). */
    bool auto_create_queues;
    struct cfg_queue_defaults queue_defaults; /* of the queues it creates so */
};

struct cfg_admin {
    bool enabled; /* false when the admin section is absent */
    struct cfg_endpoint listen;
    char *access_key_id;
    char *secret_access_key;
    char *bearer_token; /* optional; NULL when not set */
};

struct cfg_tls {
    bool enabled; /* absent section = cleartext h2c */
    char *cert_file;
    char *key_file;
};

/* server: process-wide limits (docs/config.md). 0 means "derive it":
 * max_connections from the descriptor limit, max_connections_per_peer as
 * min(max_connections, 1024). Both change on SIGHUP. */
struct cfg_server {
    uint32_t max_connections;
    uint32_t max_connections_per_peer;
    uint64_t min_free_disk_bytes; /* sends refused below it; 0: off */
    /* Process-wide memory budgets of the protocol layer, in bytes: request
     * bodies buffered, responses queued and not yet sent. 0 = derived from
     * physical memory. Both change on SIGHUP. */
    uint64_t request_body_budget_bytes;
    uint64_t response_budget_bytes;
};

/* One member of the cluster (cluster.nodes). */
struct cfg_cluster_node {
    uint16_t id;              /* 1..65535, unique in the cluster */
    struct cfg_endpoint raft; /* its Raft port, shared by every group it holds */
    struct cfg_endpoint peer; /* its peer (job forwarding) port */
    struct cfg_endpoint api;  /* its SQS API, as clients reach it */
};

/* cluster: replication over Raft (docs/design.md "Cluster"). Every key is
 * restart-only. */
struct cfg_cluster {
    bool enabled; /* false when the section is absent: one node, as ever */
    uint16_t node_id;
    struct cfg_endpoint raft;
    struct cfg_endpoint peer;
    char *secret_file; /* as resolved against the file's directory */
    /* The secret_file's bytes, exactly (32..4096 of them): the key of the
     * nodes' handshake. Never log or print them. Wiped when freed. */
    unsigned char *secret;
    size_t secret_len;
    uint32_t replication; /* voters of each group: odd, 1..node_count */
    size_t node_count;
    struct cfg_cluster_node *nodes; /* sorted by id; this node is one of them */
    uint64_t memory_budget;         /* bytes; 0 = half of physical memory */
    uint32_t snapshot_entries;      /* log entries between a group's snapshots */
};

struct cfg__principal_entry; /* private, see _principals */

struct cfg_snapshot {
    char *source; /* file path, or "<embedded default>" */
    struct cfg_endpoint listen;
    struct cfg_tls tls;
    char *region;
    char *data_dir;
    uint32_t partitions; /* P, 1..1024 */
    uint32_t shard_size; /* k, 1..P */
    enum cfg_durability durability;
    uint32_t io_threads; /* event-loop threads; 0 in the file = CPU count */
    bool log_requests;   /* one structured log line per request */
    struct cfg_server server;
    struct cfg_admin admin;
    struct cfg_limits default_limits;
    enum cfg_on_excess default_on_excess;
    struct cfg_spill default_spill;
    bool default_auto_create_queues;
    size_t tenant_count;
    struct cfg_tenant *tenants; /* sorted by name */
    struct cfg_cluster cluster;
    /* private */
    int _refs; /* atomic; use cfg_snapshot_ref/unref */
    /* Access-key index for cfg_find_principal, sorted by key and built by
     * the loader. NULL in a snapshot assembled by hand (tests), where the
     * lookups fall back to a linear scan. */
    struct cfg__principal_entry *_principals;
    size_t _principal_count;
};

/* One validation problem, already formatted "FILE:LINE:COLUMN: message". */
struct cfg_diag {
    char *text;
    uint32_t line;   /* 1-based; 0 when not tied to a position */
    uint32_t column; /* 1-based */
};

/* Every problem found by one load, in file order. */
struct cfg_diags {
    size_t count;
    struct cfg_diag *items;
};

void cfg_diags_free(struct cfg_diags *d);

/* Loads and validates a YAML file (see docs/config.md). Relative TLS file
 * paths resolve against the file's directory. Returns SL_OK and sets *out
 * (one reference) when the file is valid; otherwise leaves *out untouched,
 * fills *diags with every problem found (the caller frees it with
 * cfg_diags_free; it is also filled with nothing on success) and returns
 * SL_ENOTFOUND (no such file), SL_EIO (it cannot be opened or read) or
 * SL_EINVAL (its content is refused: too large, not YAML, not valid). */
int cfg_load_file(const char *path, struct cfg_snapshot **out, struct cfg_diags *diags);

/* The same for YAML text held in memory; name is used in messages and
 * relative TLS file paths resolve against the current directory. Returns
 * SL_OK or SL_EINVAL. */
int cfg_load_string(const char *name, const char *text, size_t len, struct cfg_snapshot **out,
                    struct cfg_diags *diags);

/* The embedded default (docs/config.md: listen 127.0.0.1:9324, data in
 * ./sluice-data, tenant "default" with key and secret "default"). */
const char *cfg_default_yaml(void);

/* cfg_load_string() of cfg_default_yaml(), named "<embedded default>".
 * Returns SL_OK (or SL_EINVAL, which would be a bug in the default). */
int cfg_load_default(struct cfg_snapshot **out, struct cfg_diags *diags);

struct cfg_snapshot *cfg_snapshot_ref(struct cfg_snapshot *s);
void cfg_snapshot_unref(struct cfg_snapshot *s);

/* Who an access key id belongs to. */
enum cfg_principal_kind { CFG_PRINCIPAL_TENANT, CFG_PRINCIPAL_ADMIN };

struct cfg_principal {
    enum cfg_principal_kind kind;
    const char *secret_access_key;
    const struct cfg_tenant *tenant; /* NULL for the admin */
};

/* Looks up an access key id (not NUL-terminated). Returns false when no
 * tenant and no admin has that key. The result borrows from s. */
bool cfg_find_principal(const struct cfg_snapshot *s, const char *access_key_id, size_t len,
                        struct cfg_principal *out);

/* The tenant with that name, or NULL. Borrowed from s. */
const struct cfg_tenant *cfg_find_tenant(const struct cfg_snapshot *s, const char *name,
                                         size_t len);

/* True when a tenant name matches [A-Za-z0-9_-]{1,64}. */
bool cfg_tenant_name_valid(const char *name, size_t len);

/* Keys that SIGHUP cannot change: listen, data_dir, partitions,
 * shard_size, io_threads, tls (on/off and file paths), admin on/off,
 * admin.listen, and every key of cluster (a change of the secret file's
 * bytes too, which are never written out). Writes one short sentence per
 * difference into buf, joined by "; " (NUL-terminated, empty when none,
 * truncated to cap) and returns how many differences there were. */
int cfg_restart_only_changes(const struct cfg_snapshot *old_s, const struct cfg_snapshot *new_s,
                             char *buf, size_t cap);

/* Gives next the running values of those keys (from running), so that a
 * reloaded snapshot still describes the process that runs: a request that
 * reads snap->shard_size, or builds a queue URL from snap->listen, sees
 * what is in force until the restart, not what the file will say after
 * it. Not admin on/off: that also says whether the admin's credentials
 * are valid, which changes live. Call before next is published (it is
 * not thread-safe on next). */
void cfg_snapshot_keep_restart_only(struct cfg_snapshot *next, const struct cfg_snapshot *running);

/* ---- the live configuration -------------------------------------------- */

/* Holds the current snapshot. get() returns a new reference, so a request
 * can keep using what it took while a reload swaps in the next one. */
struct cfg_holder;

struct cfg_holder *cfg_holder_new(struct cfg_snapshot *initial); /* takes the reference */
void cfg_holder_free(struct cfg_holder *h);
struct cfg_snapshot *cfg_holder_get(struct cfg_holder *h);
/* Takes the reference to next; drops the holder's reference to the old. */
void cfg_holder_swap(struct cfg_holder *h, struct cfg_snapshot *next);

#endif
