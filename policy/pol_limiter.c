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
 * Threading: a rwlock guards the array. find() takes it shared, apply()
 * exclusive (a reload is rare and short). Takes never touch the lock: they
 * work on a state pointer with the lock-free GCRA and slot operations, and
 * apply() changes rates through the same lock-free setters.
 * Ownership: the limiter owns the states; snapshots are only read.
 */
#include "pol.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

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

/* Index of name, or of where it would be inserted; *found says which. */
static size_t search(const struct pol_limiter *l, const char *name, size_t len, bool *found)
{
    size_t lo = 0, hi = l->count;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = name_cmp(l->states[mid]->name, name, len);
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

static void insert_at(struct pol_limiter *l, size_t at, const struct cfg_tenant *t)
{
    struct pol_tenant_state *s = sl_xcalloc(1, sizeof(*s));
    size_t len = strlen(t->name);

    /* cfg validates names to 1..64 characters; a longer one is a bug there. */
    SL_ASSERT(len > 0 && len < sizeof(s->name));
    memcpy(s->name, t->name, len + 1);
    pol_gcra_init(&s->rate, t->limits.requests_per_second, t->limits.burst);
    pol_slots_init(&s->long_polls, t->limits.max_long_polls);
    if (l->count == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 16;
        l->states = sl_xrealloc(l->states, l->cap * sizeof(*l->states));
    }
    memmove(&l->states[at + 1], &l->states[at], (l->count - at) * sizeof(*l->states));
    l->states[at] = s;
    l->count++;
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
        free(l->states[i]);
    }
    free(l->states);
    pthread_rwlock_destroy(&l->lock);
    free(l);
}

void pol_limiter_apply(struct pol_limiter *l, const struct cfg_snapshot *snap, uint64_t now_ns)
{
    lock_exclusive(l);
    for (size_t i = 0; i < snap->tenant_count; i++) {
        const struct cfg_tenant *t = &snap->tenants[i];
        bool found;
        size_t at = search(l, t->name, strlen(t->name), &found);

        if (!found) {
            insert_at(l, at, t);
            continue;
        }
        pol_gcra_set_rate(&l->states[at]->rate, t->limits.requests_per_second, t->limits.burst,
                          now_ns);
        pol_slots_set_max(&l->states[at]->long_polls, t->limits.max_long_polls);
    }
    pthread_rwlock_unlock(&l->lock);
}

struct pol_tenant_state *pol_limiter_find(struct pol_limiter *l, const char *name, size_t len)
{
    struct pol_tenant_state *s = NULL;
    bool found;
    size_t at;

    lock_shared(l);
    at = search(l, name, len, &found);
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

bool pol_long_poll_acquire(struct pol_tenant_state *t)
{
    return pol_slots_acquire(&t->long_polls);
}

void pol_long_poll_release(struct pol_tenant_state *t)
{
    pol_slots_release(&t->long_polls);
}
