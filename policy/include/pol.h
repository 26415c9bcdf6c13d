/*
 * pol.h -- sluice's policy: the pure decisions behind multi-tenancy.
 *
 * What it decides (docs/policy.md has the rules, keys and arithmetic):
 *   1. placement: which k of the P partitions hold a tenant (keyed
 *      rendezvous hashing = shuffle sharding), which of them a send goes to
 *      (the least loaded counting every tenant, as AWS Lambda does) and which
 *      partitions a receive must read;
 *   2. per-tenant rate limits (GCRA, lock-free), with optional per-queue
 *      and per-action buckets inside a tenant, and the registry that keeps
 *      every budget across SIGHUP reloads;
 *   3. admission of a request: ADMIT, SPILL or THROTTLE, with back-pressure
 *      that shrinks the admitted send rate as the tenant's backlog grows, and
 *      how many messages a receive may take under max_inflight;
 *   4. fair dequeue inside a queue: noisy message groups go last (SQS fair
 *      queues);
 *   5. aged spill and retention predicates;
 *   6. the per-tenant cap on concurrent long polls;
 *   7. the per-tenant cap on requests in progress.
 *
 * Policy does no I/O, starts no thread and never reads a clock: time is
 * always a parameter (now_ns from sl_mono_ns() for rates, wall-clock
 * milliseconds for message ages). The gateway asks policy and then calls
 * the partitions itself; nothing here knows about either.
 *
 * Threading: pure functions are safe from any thread. struct pol_gcra and
 * struct pol_slots are lock-free and may be shared by any number of threads.
 * struct pol_limiter is thread-safe (lookups and apply may race).
 *
 * Ownership: nothing here keeps a pointer to a caller's argument after the
 * call returns, except where a function says otherwise. Output arrays are
 * caller-owned and must have the size each function states.
 */
#ifndef SLUICE_POL_H
#define SLUICE_POL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cfg.h"
#include "sl.h"

/* ==== 1. placement (shuffle sharding) =================================== */

/* Upper bound of P that placement accepts (cfg allows 1..1024). */
#define POL_MAX_PARTITIONS 1024u

/* Computes a tenant's shard: the k partitions of 0..partitions-1 whose
 * keyed score HMAC-SHA256(key, len32(tenant) | tenant | partition32) is
 * highest, written to out[0..k) best first (that order is "shard order"
 * below). The same inputs always give the same shard; growing P changes
 * at most one member; growing k keeps the old members as a prefix.
 *
 * key is the per-deployment secret (any length >= 1; 32 random bytes is
 * right); it must stay the same across restarts, or new sends go to other
 * partitions (pol_read_set still finds old messages). tenant need not be
 * NUL-terminated. out must hold k entries.
 *
 * Returns SL_OK; SL_EINVAL when key_len == 0, tenant_len == 0,
 * partitions == 0 or > POL_MAX_PARTITIONS, k == 0 or k > partitions;
 * SL_ENOMEM when OpenSSL cannot allocate. out is untouched on error.
 *
 * Cost: one HMAC per partition (about 9 us at P = 16 on the dev box): callers
 * cache the result per tenant and (P, k). */
int pol_shard_place(const uint8_t *key, size_t key_len, const char *tenant, size_t tenant_len,
                    uint32_t partitions, uint32_t k, uint32_t *out);

/* Loads within this many messages of each other, or within 1/8 of the
 * larger, are a tie for pol_pick_send_partition. */
#define POL_SEND_TIE_MESSAGES 16u

/* Picks the partition a send goes to among the shard's k partitions
 * (shard[0..k), in shard order). load[i] is shard[i]'s load counting every
 * tenant (part_engine_partition_load: messages stored there plus the
 * messages queued at its writer). The least loaded wins; loads that are
 * within POL_SEND_TIE_MESSAGES or 1/8 of each other are a tie, and a tie
 * goes to the earlier partition in shard order (docs/policy.md says why).
 * Returns the partition number (a member of shard). k must be >= 1. */
uint32_t pol_pick_send_partition(const uint32_t *shard, uint32_t k, const uint64_t *load);

/* The home of a key (a FIFO message group, or a whole FIFO queue) among
 * the tenant's shard (shard[0..k), k >= 1): rendezvous hashing over the
 * shard, so all messages of one key go to one partition and keys spread
 * over the shard. One keyed hash per call, HMAC-SHA256(key, len32(tenant)
 * | tenant | len32(name) | name), whose first 8 bytes seed a 64-bit mix
 * per member; the best mix wins. Keyed by the deployment secret, so
 * nobody can aim keys at one partition; the queue is not an input, so a
 * group id has the same home in every queue of the tenant (a dead-letter
 * move in place keeps the group where its queue-mates are). Returns the
 * partition (a member of shard). */
uint32_t pol_key_home(const uint8_t *key, size_t key_len, const char *tenant, size_t tenant_len,
                      const char *name, size_t name_len, const uint32_t *shard, uint32_t k);

/* The partitions a receive must read: the tenant's shard (in shard order),
 * then every other partition p with messages[p] > 0 in ascending order
 * (messages left there by an earlier P, k or key). messages is indexed by
 * partition number and has `partitions` entries; out must hold `partitions`
 * entries. Shard members >= partitions are skipped. Returns the number of
 * entries written. */
uint32_t pol_read_set(const uint32_t *shard, uint32_t k, const uint64_t *messages,
                      uint32_t partitions, uint32_t *out);

/* ==== 2. rate limiting ================================================== */

/* The rate fraction written as parts per million: POL_PPM is "full rate". */
#define POL_PPM 1000000u

/* A GCRA meter (a token bucket kept as one "theoretical arrival time"):
 * `burst` tokens of capacity, refilled at `requests_per_second`. Caller
 * storage; initialise with pol_gcra_init(). Every field is atomic, so any
 * number of threads may take from one meter and they share it exactly. */
struct pol_gcra {
    /* private */
    _Atomic uint64_t tat_ns;      /* the time at which the bucket is full again */
    _Atomic uint64_t interval_ns; /* ns per token; 0 = unlimited */
    _Atomic uint64_t burst;       /* capacity in tokens */
};

/* Starts a meter full. requests_per_second <= 0 (or not finite) means
 * unlimited; burst 0 admits nothing. */
void pol_gcra_init(struct pol_gcra *g, double requests_per_second, uint32_t burst);

/* Changes the rate and burst, keeping how many tokens are missing at now_ns
 * (so a reload gives no free burst; a smaller burst clamps the level). */
void pol_gcra_set_rate(struct pol_gcra *g, double requests_per_second, uint32_t burst,
                       uint64_t now_ns);

/* Takes `cost` tokens at now_ns. rate_ppm (1..POL_PPM) slows refill for
 * this request: the request needs `cost` tokens present but uses up
 * cost * POL_PPM / rate_ppm tokens' worth of time, so the sustained rate is
 * requests_per_second * rate_ppm / POL_PPM (this is how back-pressure
 * shrinks a rate). The extra time one slowed take adds is capped so the
 * bucket is always full again within burst/rate + max(burst/rate, 1 s):
 * back-pressure never outlives the backlog by more than that, and the
 * slowest sustained rate is about one request per max(burst/rate, 1 s)
 * plus its own cost's refill time.
 * rate_ppm 0 refuses.
 *
 * Returns true when admitted (the tokens are spent). Otherwise spends
 * nothing, returns false and, when retry_after_ns is not NULL, stores how
 * long until the same request would pass at full rate, or UINT64_MAX when
 * it never can (cost > burst, or rate_ppm == 0). cost 0 always passes. */
bool pol_gcra_take(struct pol_gcra *g, uint32_t cost, uint32_t rate_ppm, uint64_t now_ns,
                   uint64_t *retry_after_ns);

/* Gives back `cost` tokens that pol_gcra_take() took at full rate
 * (rate_ppm POL_PPM) and that the request did not use after all: another
 * bucket refused it. The level never rises above burst (a full meter stays
 * full). Lock-free. Exact when called right after the take (before the
 * meter could refill to full); off by at most cost tokens otherwise, and
 * by the rate's change when a reload came in between. */
void pol_gcra_refund(struct pol_gcra *g, uint32_t cost);

/* Spends `cost` tokens at now_ns whether or not the bucket has them: what
 * a request costs that was authenticated but refused before admission
 * (malformed, too large, naming no queue of the tenant), so that bad
 * requests draw on the same budget as good ones. The bucket may go into
 * debt, by at most two bursts' worth, which later takes wait out. */
void pol_gcra_charge(struct pol_gcra *g, uint32_t cost, uint64_t now_ns);

/* Tokens owed at now_ns: how far pol_gcra_charge has taken the bucket
 * below empty, in tokens rounded up (0 when not in debt; racy by nature). */
uint64_t pol_gcra_owed(struct pol_gcra *g, uint64_t now_ns);

/* Tokens available at now_ns (for metrics and tests; racy by nature). */
uint64_t pol_gcra_available(struct pol_gcra *g, uint64_t now_ns);

/* A counting semaphore that never blocks: up to `max` holders. Caller
 * storage; lock-free. */
struct pol_slots {
    /* private */
    _Atomic uint32_t used;
    _Atomic uint32_t max; /* 0 = unlimited */
};

void pol_slots_init(struct pol_slots *s, uint32_t max);
/* A new max applies to later acquires; holders above it keep their slot. */
void pol_slots_set_max(struct pol_slots *s, uint32_t max);
/* Returns true and takes a slot, or false (nothing taken) when all are in
 * use. Every true must be paired with one pol_slots_release(). */
bool pol_slots_acquire(struct pol_slots *s);
void pol_slots_release(struct pol_slots *s);
uint32_t pol_slots_used(const struct pol_slots *s);

/* A per-queue or per-action bucket of a tenant (limits.queues.NAME,
 * limits.actions.NAME). When a reload removes its key the rule turns
 * inactive: it limits nothing but keeps its level, so that putting the key
 * back resumes where it was, as a tenant that leaves and comes back does. */
struct pol_rate_rule {
    struct pol_gcra rate;
    _Atomic bool active; /* configured in the snapshot applied last */
};

struct pol__queue_rule; /* private: a named struct pol_rate_rule */

/* What sluice keeps per tenant across reloads. */
struct pol_tenant_state {
    char name[65];               /* NUL-terminated; read-only */
    struct pol_gcra rate;        /* limits.requests_per_second / burst */
    struct pol_slots long_polls; /* limits.max_long_polls (0 = unlimited) */
    struct pol_slots requests;   /* limits.max_concurrent_requests (0 = unlimited) */
    /* limits.actions, by key; use pol_tenant_action_rate() */
    struct pol_rate_rule actions[CFG_ACTION_KEY_COUNT];
    /* private: limits.queues, sorted by queue name, each rule allocated
     * once and never moved; guarded by the limiter's lock. Use
     * pol_limiter_queue_rate(). */
    struct pol__queue_rule **_queues;
    size_t _queue_count;
    size_t _queue_cap;
};

/* One struct pol_tenant_state per tenant name ever configured. */
struct pol_limiter;

/* Creates a limiter holding one full budget per tenant of snap (borrowed;
 * not kept). Never returns NULL (aborts on exhaustion). */
struct pol_limiter *pol_limiter_new(const struct cfg_snapshot *snap, uint64_t now_ns);

/* Frees the limiter and every state it handed out. NULL is a no-op. No
 * other thread may use the limiter or its states any more. */
void pol_limiter_free(struct pol_limiter *l);

/* Applies a reloaded snapshot (borrowed): existing tenants keep their
 * bucket level and long-poll holders and take the new limits; new tenants
 * start full; tenants that disappeared keep their state (memory) until the
 * limiter is freed, so a tenant that comes back resumes where it was.
 * The same holds for each per-queue and per-action bucket of a tenant: a
 * key that stays keeps its level under its new rate and burst, a new key
 * starts full, a removed key turns inactive (limits nothing) and keeps its
 * level and its memory until the limiter is freed.
 * Safe to call while other threads look up and take. */
void pol_limiter_apply(struct pol_limiter *l, const struct cfg_snapshot *snap, uint64_t now_ns);

/* The state of a tenant (name need not be NUL-terminated), or NULL when no
 * snapshot applied to this limiter ever had that tenant. The pointer stays
 * valid until pol_limiter_free(); the limiter owns it. */
struct pol_tenant_state *pol_limiter_find(struct pol_limiter *l, const char *name, size_t len);

/* How many tenant states the limiter holds (current and retired). */
size_t pol_limiter_count(struct pol_limiter *l);

/* The bucket limits.queues sets for tenant t's queue named queue (not
 * NUL-terminated), or NULL when the snapshot applied last sets none. t
 * must come from pol_limiter_find(l, ...). The pointer stays valid until
 * pol_limiter_free(); takes on it are lock-free, the lookup takes the
 * limiter's lock shared, as pol_limiter_find() does. */
struct pol_gcra *pol_limiter_queue_rate(struct pol_limiter *l, struct pol_tenant_state *t,
                                        const char *queue, size_t len);

/* The bucket limits.actions sets for tenant t and action, or NULL when
 * the snapshot applied last sets none. Lock-free; valid as t is. */
struct pol_gcra *pol_tenant_action_rate(struct pol_tenant_state *t, enum cfg_action_key action);

/* ==== 3. admission and back-pressure ==================================== */

/* Back-pressure starts when a tenant's backlog passes this fraction of
 * limits.max_backlog (per mille): the soft limit. */
#define POL_SOFT_BACKLOG_PERMILLE 500u

enum pol_action_class {
    POL_ACTION_SEND,    /* SendMessage(Batch): cost = entries */
    POL_ACTION_RECEIVE, /* ReceiveMessage: cost 1 */
    POL_ACTION_OTHER,   /* everything else: cost = entries (1 when not a batch) */
};

enum pol_verdict {
    POL_ADMIT,    /* go ahead */
    POL_SPILL,    /* a send in spill mode over its rate: store in the overflow lane */
    POL_THROTTLE, /* answer RequestThrottled and store nothing */
};

enum pol_reason {
    POL_REASON_NONE,        /* admitted within the rate */
    POL_REASON_RATE,        /* over requests_per_second / burst (maybe shrunk) */
    POL_REASON_BACKLOG,     /* the send would take the backlog past max_backlog */
    POL_REASON_INFLIGHT,    /* a receive while in-flight is at max_inflight */
    POL_REASON_QUEUE_RATE,  /* over the queue's limits.queues bucket */
    POL_REASON_ACTION_RATE, /* over the action's limits.actions bucket */
};

struct pol_admit_input {
    const struct cfg_tenant *tenant; /* limits and on_excess (borrowed) */
    enum pol_action_class action;
    uint32_t cost;     /* tokens: one per batch entry */
    uint64_t backlog;  /* the tenant's stored messages, all queues and lanes */
    uint64_t inflight; /* the tenant's received-but-not-deleted messages */
    uint64_t now_ns;   /* monotonic */
    /* The request's other buckets (borrowed), NULL where none applies:
     * pol_limiter_queue_rate() and pol_tenant_action_rate(). */
    struct pol_gcra *queue_rate;
    struct pol_gcra *action_rate;
};

struct pol_admit_result {
    enum pol_verdict verdict;
    enum pol_reason reason;
    uint32_t rate_ppm;       /* the rate fraction applied (POL_PPM = full rate) */
    uint64_t retry_after_ns; /* THROTTLE for RATE: wait hint; else 0 */
};

/* Decides one request, whole (a batch is admitted or refused as a unit),
 * taking in->cost tokens from every bucket that applies when it is
 * admitted: in->action_rate, in->queue_rate (when not NULL) and the
 * tenant's `rate`. Rules, in order:
 *   - RECEIVE with max_inflight > 0 and inflight >= max_inflight: THROTTLE
 *     (INFLIGHT);
 *   - SEND with max_backlog > 0 and backlog + cost > max_backlog: THROTTLE
 *     (BACKLOG), in both on_excess modes;
 *   - take cost tokens from the action's bucket, then the queue's (both at
 *     full rate), then the tenant's at the rate fraction
 *     pol_backpressure_ppm() gives (sends) or at full rate (others): ADMIT
 *     when every bucket had them;
 *   - a bucket refused (reason ACTION_RATE, QUEUE_RATE or RATE): the tokens
 *     already taken from the buckets before it are given back
 *     (pol_gcra_refund), then a SEND of a spill-mode tenant SPILLs;
 *     anything else THROTTLEs with the refusing bucket's retry hint.
 * Refused and spilled requests spend no tokens in any bucket. Returns
 * out->verdict. */
enum pol_verdict pol_admit(struct pol_gcra *rate, const struct pol_admit_input *in,
                           struct pol_admit_result *out);

/* The back-pressure curve: the fraction (ppm) of requests_per_second a
 * tenant's sends get at this backlog. Full rate up to the soft limit
 * S = max_backlog * POL_SOFT_BACKLOG_PERMILLE / 1000, then falling linearly
 * to 0 at H = max_backlog:  ppm = POL_PPM * (H - backlog) / (H - S).
 * POL_PPM when max_backlog is 0 (no bound); 0 at or past H. Never returns
 * 0 below H (a minimum of 1 ppm) so the curve and the hard limit agree. */
uint32_t pol_backpressure_ppm(const struct cfg_limits *limits, uint64_t backlog);

/* How many messages a receive asking for `requested` may take when the
 * tenant has `inflight` messages in flight: min(requested, max_inflight -
 * inflight), 0 at or past the limit, `requested` when max_inflight is 0. */
uint32_t pol_receive_allowance(const struct cfg_limits *limits, uint64_t inflight,
                               uint32_t requested);

/* ==== 4. fair dequeue inside a queue (SQS fair queues) ================== */

/* SQS: a message group is noisy when it holds more than 10 % of the
 * queue's in-flight messages and at least 30 of them. */
#define POL_NOISY_MIN_INFLIGHT 30u
#define POL_NOISY_SHARE_PERCENT 10u

/* The rule as the partitions take it (part_noisy_fn): pure and monotone. */
bool pol_group_is_noisy(uint64_t group_inflight, uint64_t queue_inflight);

/* ==== 5. the overflow lane =============================================== */

/* Starvation guard: every POL_OVERFLOW_GUARD_EVERY-th receive of a queue
 * serves its overflow lane before its main lane
 * (part_receive_req.overflow_every), so a main lane that never runs dry
 * cannot starve the overflow lane. */
#define POL_OVERFLOW_GUARD_EVERY 4u

/* The delay a spilled send gets: its own (the message's DelaySeconds or
 * the queue's default, delay_s) or spill.delay_seconds, whichever is
 * longer. */
int32_t pol_spill_delay_s(const struct cfg_spill *spill, int32_t delay_s);

/* How long a ready message waits in the main lane before it is sidelined
 * to the overflow lane (part_tenant_set_aging), in ms. */
uint64_t pol_aging_ms(const struct cfg_spill *spill);

/* ==== 6. long polls ====================================================== */

/* A tenant's concurrent waiting ReceiveMessage calls are capped by
 * state->long_polls (limits.max_long_polls): pol_slots_acquire() before a
 * receive starts waiting (on false the receive does not wait: it runs as a
 * short poll), and
 * pol_slots_release() when it ends. These name that use. */
bool pol_long_poll_acquire(struct pol_tenant_state *t);
void pol_long_poll_release(struct pol_tenant_state *t);

/* ==== 7. concurrent requests ============================================ */

/* A tenant's requests in progress, over all its connections and I/O
 * threads, are capped by state->requests (limits.max_concurrent_requests):
 * pol_request_acquire() once the request is authenticated (on false it is
 * answered RequestThrottled and does no work), pol_request_release() when
 * it is answered. Since every job a request submits waits for its previous
 * one, the cap also bounds the tenant's jobs waiting at any one partition
 * writer (docs/policy.md, "Concurrency"). Lock-free, any thread. */
bool pol_request_acquire(struct pol_tenant_state *t);
void pol_request_release(struct pol_tenant_state *t);

#endif
