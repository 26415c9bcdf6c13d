/*
 * pol_limiter.c -- one rate budget and long-poll counter per tenant name,
 * kept across configuration reloads.
 *
 * The table is a sorted array of pointers to individually allocated
 * struct pol_tenant_state, so a state never moves: a pointer handed out by
 * pol_limiter_find() stays valid (and keeps counting) while apply grows the
 * array. States are never removed before pol_limiter_free(); a tenant that
 * leaves the configuration and comes back resumes with the budget it had,
 * which is what stops a reload from being a free burst.
 *
 * Inside a state, the per-action rules are a fixed array and the per-queue
 * rules a sorted array of pointers to rules allocated one by one, kept
 * the same way: a rule whose key a reload removes turns inactive and stays
 * (a pointer another thread looked up just before remains valid, and the
 * key resumes its level if it comes back); the memory this keeps is one
 * small rule per (tenant, queue) name ever configured.
 *
 * Threading: a rwlock guards the array and every state's queue rules.
 * find() and queue_rate() take it shared, apply() exclusive (a reload is
 * rare and short). Takes never touch the lock: they work on a state or
 * rule pointer with the lock-free GCRA and slot operations, and apply()
 * changes rates and the active flags through the same lock-free setters.
 * Ownership: the limiter owns the states; snapshots are only read.
 */
#include "pol.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct pol__queue_rule {
    char queue[CFG_QUEUE_NAME_MAX + 1]; /* NUL-terminated; read-only */
    struct pol_rate_rule rule;
};

struct pol_limiter {
    pthread_rwlock_t lock;
    struct pol_tenant_state **states; /* sorted by name */
    size_t count;
    size_t cap;
};

/* These only fail on misuse (deadlock, uninitialised lock): a bug. */
static void lock_shared(struct pol_limiter *l)
{
    int rc = pthread_rwlock_rdlock(&l->lock);
    SL_ASSERT(rc == 0);
}

static void lock_exclusive(struct pol_limiter *l)
{
    int rc = pthread_rwlock_wrlock(&l->lock);
    SL_ASSERT(rc == 0);
}

/* Orders names as strcmp() would, for names that are not NUL-terminated. */
static int name_cmp(const char *a, const char *b, size_t b_len)
{
    size_t a_len = strlen(a);
    int c = memcmp(a, b, SL_MIN(a_len, b_len));
    if (c != 0) {
        return c;
    }
    return a_len < b_len ? -1 : (a_len > b_len);
}

/* The name of element i of a sorted array of pointers (states or rules). */
typedef const char *name_at_fn(const void *array, size_t i);

static const char *state_name(const void *array, size_t i)
{
    return ((struct pol_tenant_state *const *)array)[i]->name;
}

static const char *queue_rule_name(const void *array, size_t i)
{
    return ((struct pol__queue_rule *const *)array)[i]->queue;
}

/* Index of name in array[0..count), or of where it would be inserted;
 * *found says which. */
static size_t search(const void *array, size_t count, name_at_fn *name_at, const char *name,
                     size_t len, bool *found)
{
    size_t lo = 0, hi = count;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = name_cmp(name_at(array, mid), name, len);
        if (c == 0) {
            *found = true;
            return mid;
        }
        if (c < 0) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    *found = false;
    return lo;
}

static size_t search_state(const struct pol_limiter *l, const char *name, size_t len, bool *found)
{
    return search(l->states, l->count, state_name, name, len, found);
}

static size_t search_queue(const struct pol_tenant_state *s, const char *queue, size_t len,
                           bool *found)
{
    return search(s->_queues, s->_queue_count, queue_rule_name, queue, len, found);
}

/* Opens a slot at `at` in an array of *count elements of `size` bytes,
 * growing it when full; returns the (maybe moved) array. */
static void *open_slot(void *array, size_t *count, size_t *cap, size_t at, size_t size)
{
    if (*count == *cap) {
        *cap = *cap ? *cap * 2 : 16;
        array = sl_xrealloc(array, *cap * size);
    }
    memmove((char *)array + (at + 1) * size, (char *)array + at * size, (*count - at) * size);
    (*count)++;
    return array;
}

/* A cluster's node admits 1/N of every rate and burst of the snapshot,
 * N its configured nodes: a load balancer spreads a tenant's requests
 * over the nodes, and no request waits on another node to be admitted
 * (docs/policy.md, "Limits across a cluster's nodes"). A burst rounds up,
 * so that a burst of 1 still admits one request per node. */
static uint32_t share_of(const struct cfg_snapshot *snap)
{
    return snap->cluster.enabled && snap->cluster.node_count > 1
               ? (uint32_t)snap->cluster.node_count
               : 1;
}

static struct cfg_rate shared(double requests_per_second, uint32_t burst, uint32_t share)
{
    struct cfg_rate r = {.requests_per_second = requests_per_second, .burst = burst};
    if (share > 1) {
        r.requests_per_second = requests_per_second / share;
        r.burst = burst == 0 ? 0 : (burst + share - 1) / share;
    }
    return r;
}

/* A rule starts unlimited and inactive, so that its first activation
 * (pol_gcra_set_rate from "unlimited") starts it full. */
static void rule_init(struct pol_rate_rule *r)
{
    pol_gcra_init(&r->rate, 0, 0);
    atomic_init(&r->active, false);
}

/* Follows the snapshot: an unset rate turns the rule inactive and leaves
 * its level alone; a set one keeps the level under the new rate (no free
 * burst) and turns it active after the rate is in place. */
static void rule_apply(struct pol_rate_rule *r, const struct cfg_rate *want, uint32_t share,
                       uint64_t now_ns)
{
    if (want == NULL || want->requests_per_second <= 0) {
        atomic_store(&r->active, false);
        return;
    }
    struct cfg_rate mine = shared(want->requests_per_second, want->burst, share);
    pol_gcra_set_rate(&r->rate, mine.requests_per_second, mine.burst, now_ns);
    atomic_store(&r->active, true);
}

static struct pol_gcra *rule_rate(struct pol_rate_rule *r)
{
    return atomic_load(&r->active) ? &r->rate : NULL;
}

/* The tenant's per-action and per-queue rules follow t's limits. */
static void apply_rules(struct pol_tenant_state *s, const struct cfg_limits *limits, uint32_t share,
                        uint64_t now_ns)
{
    for (int a = 0; a < CFG_ACTION_KEY_COUNT; a++) {
        rule_apply(&s->actions[a], &limits->actions[a], share, now_ns);
    }
    /* Queues the snapshot no longer names turn inactive... */
    for (size_t i = 0; i < s->_queue_count; i++) {
        const char *q = s->_queues[i]->queue;
        rule_apply(&s->_queues[i]->rule, cfg_find_queue_rate(limits, q, strlen(q)), share, now_ns);
    }
    /* ...and those it names are added (full) or were just updated. */
    for (size_t i = 0; i < limits->queue_rate_count; i++) {
        const struct cfg_queue_rate *want = &limits->queue_rates[i];
        size_t len = strlen(want->queue);
        bool found;
        size_t at = search_queue(s, want->queue, len, &found);
        if (found) {
            continue;
        }
        struct pol__queue_rule *r = sl_xcalloc(1, sizeof(*r));
        /* cfg validates queue names to 1..80 characters. */
        SL_ASSERT(len > 0 && len < sizeof(r->queue));
        memcpy(r->queue, want->queue, len + 1);
        rule_init(&r->rule);
        rule_apply(&r->rule, &want->rate, share, now_ns);
        s->_queues = open_slot(s->_queues, &s->_queue_count, &s->_queue_cap, at, sizeof(r));
        s->_queues[at] = r;
    }
}

static void insert_at(struct pol_limiter *l, size_t at, const struct cfg_tenant *t, uint32_t share,
                      uint64_t now_ns)
{
    struct pol_tenant_state *s = sl_xcalloc(1, sizeof(*s));
    size_t len = strlen(t->name);

    /* cfg validates names to 1..64 characters; a longer one is a bug there. */
    SL_ASSERT(len > 0 && len < sizeof(s->name));
    memcpy(s->name, t->name, len + 1);
    struct cfg_rate rate = shared(t->limits.requests_per_second, t->limits.burst, share);
    pol_gcra_init(&s->rate, rate.requests_per_second, rate.burst);
    pol_slots_init(&s->long_polls, t->limits.max_long_polls);
    pol_slots_init(&s->requests, t->limits.max_concurrent_requests);
    for (int a = 0; a < CFG_ACTION_KEY_COUNT; a++) {
        rule_init(&s->actions[a]);
    }
    apply_rules(s, &t->limits, share, now_ns);
    l->states = open_slot(l->states, &l->count, &l->cap, at, sizeof(s));
    l->states[at] = s;
}

struct pol_limiter *pol_limiter_new(const struct cfg_snapshot *snap, uint64_t now_ns)
{
    struct pol_limiter *l = sl_xcalloc(1, sizeof(*l));
    int rc = pthread_rwlock_init(&l->lock, NULL);

    SL_ASSERT(rc == 0);
    pol_limiter_apply(l, snap, now_ns);
    return l;
}

void pol_limiter_free(struct pol_limiter *l)
{
    if (l == NULL) {
        return;
    }
    for (size_t i = 0; i < l->count; i++) {
        for (size_t q = 0; q < l->states[i]->_queue_count; q++) {
            free(l->states[i]->_queues[q]);
        }
        free(l->states[i]->_queues);
        free(l->states[i]);
    }
    free(l->states);
    pthread_rwlock_destroy(&l->lock);
    free(l);
}

void pol_limiter_apply(struct pol_limiter *l, const struct cfg_snapshot *snap, uint64_t now_ns)
{
    uint32_t share = share_of(snap);
    lock_exclusive(l);
    for (size_t i = 0; i < snap->tenant_count; i++) {
        const struct cfg_tenant *t = &snap->tenants[i];
        bool found;
        size_t at = search_state(l, t->name, strlen(t->name), &found);

        if (!found) {
            insert_at(l, at, t, share, now_ns);
            continue;
        }
        struct cfg_rate rate = shared(t->limits.requests_per_second, t->limits.burst, share);
        pol_gcra_set_rate(&l->states[at]->rate, rate.requests_per_second, rate.burst, now_ns);
        pol_slots_set_max(&l->states[at]->long_polls, t->limits.max_long_polls);
        pol_slots_set_max(&l->states[at]->requests, t->limits.max_concurrent_requests);
        apply_rules(l->states[at], &t->limits, share, now_ns);
    }
    pthread_rwlock_unlock(&l->lock);
}

struct pol_tenant_state *pol_limiter_find(struct pol_limiter *l, const char *name, size_t len)
{
    struct pol_tenant_state *s = NULL;
    bool found;
    size_t at;

    lock_shared(l);
    at = search_state(l, name, len, &found);
    if (found) {
        s = l->states[at];
    }
    pthread_rwlock_unlock(&l->lock);
    return s;
}

size_t pol_limiter_count(struct pol_limiter *l)
{
    size_t n;

    lock_shared(l);
    n = l->count;
    pthread_rwlock_unlock(&l->lock);
    return n;
}

struct pol_gcra *pol_limiter_queue_rate(struct pol_limiter *l, struct pol_tenant_state *t,
                                        const char *queue, size_t len)
{
    struct pol_gcra *g = NULL;
    bool found;
    size_t at;

    lock_shared(l);
    at = search_queue(t, queue, len, &found);
    if (found) {
        g = rule_rate(&t->_queues[at]->rule);
    }
    pthread_rwlock_unlock(&l->lock);
    return g;
}

struct pol_gcra *pol_tenant_action_rate(struct pol_tenant_state *t, enum cfg_action_key action)
{
    SL_ASSERT((unsigned)action < CFG_ACTION_KEY_COUNT);
    return rule_rate(&t->actions[action]);
}

bool pol_long_poll_acquire(struct pol_tenant_state *t)
{
    return pol_slots_acquire(&t->long_polls);
}

void pol_long_poll_release(struct pol_tenant_state *t)
{
    pol_slots_release(&t->long_polls);
}

bool pol_request_acquire(struct pol_tenant_state *t)
{
    return pol_slots_acquire(&t->requests);
}

void pol_request_release(struct pol_tenant_state *t)
{
    pol_slots_release(&t->requests);
}
