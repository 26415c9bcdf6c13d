/*
 * cfg_holder.c -- the live configuration: one pointer to the current
 * snapshot, read by every request and replaced by a reload.
 *
 * Why a mutex and not a lock-free pointer: get() must load the pointer AND
 * take a reference before a concurrent swap() can drop the last one, and a
 * bare atomic load followed by an increment races with that free. A
 * mutex held for a pointer copy and one atomic increment is uncontended in
 * practice (reloads are rare) and costs tens of nanoseconds, which is far
 * below a request's SigV4 HMAC. The old snapshot is released outside the
 * lock so that a free never runs under it.
 *
 * Threading: every function is thread-safe except _free, which must run
 * when no other thread uses the holder any more.
 * Ownership: the holder owns one reference to its current snapshot.
 */
#include "cfg.h"

#include "sl.h"

#include <pthread.h>
#include <stdlib.h>

struct cfg_holder {
    pthread_mutex_t lock;
    struct cfg_snapshot *current; /* guarded by lock; holds one reference */
};

struct cfg_holder *cfg_holder_new(struct cfg_snapshot *initial)
{
    SL_ASSERT(initial != NULL);
    struct cfg_holder *h = sl_xcalloc(1, sizeof(*h));
    int rc = pthread_mutex_init(&h->lock, NULL);
    SL_ASSERT(rc == 0);
    h->current = initial;
    return h;
}

void cfg_holder_free(struct cfg_holder *h)
{
    if (h == NULL) {
        return;
    }
    cfg_snapshot_unref(h->current);
    pthread_mutex_destroy(&h->lock);
    free(h);
}

struct cfg_snapshot *cfg_holder_get(struct cfg_holder *h)
{
    pthread_mutex_lock(&h->lock);
    struct cfg_snapshot *s = cfg_snapshot_ref(h->current);
    pthread_mutex_unlock(&h->lock);
    return s;
}

void cfg_holder_swap(struct cfg_holder *h, struct cfg_snapshot *next)
{
    SL_ASSERT(next != NULL);
    pthread_mutex_lock(&h->lock);
    struct cfg_snapshot *old = h->current;
    h->current = next;
    pthread_mutex_unlock(&h->lock);
    cfg_snapshot_unref(old);
}
