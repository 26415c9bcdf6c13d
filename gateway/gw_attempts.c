/*
 * gw_attempts.c -- ReceiveRequestAttemptId replays: a map from (queue,
 * attempt id) to deep copies of the messages that receive returned, under
 * one mutex (receives with an attempt id are FIFO retries' business, not
 * the hot path). Entries live in insertion order; each expires when its
 * leases do (at most the five-minute TTL), so expired ones drop off the
 * head as it expires and any other is dropped when looked up. The oldest
 * go first past the byte cap. The hash table is chained and doubles past
 * a load of one.
 *
 * Threading: any thread. Ownership: results handed out are copies.
 */
#include "gw_attempts.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct entry {
    struct entry *chain; /* in its bucket */
    struct entry *prev;  /* in insertion (= expiry) order */
    struct entry *next;
    uint64_t hash;
    uint64_t queue_id;
    uint64_t expires_ms;
    char *attempt;
    struct part_result res; /* owned copies */
    size_t bytes;
};

struct gw_attempts {
    pthread_mutex_t mu;
    struct entry **buckets;
    size_t cap; /* a power of two */
    size_t count;
    size_t bytes;
    struct entry *head; /* oldest */
    struct entry *tail;
};

static uint64_t key_hash(uint64_t queue_id, struct sl_slice attempt)
{
    uint64_t h = 14695981039346656037ull ^ queue_id; /* FNV-1a */
    for (size_t i = 0; i < attempt.n; i++) {
        h = (h ^ (unsigned char)attempt.p[i]) * 1099511628211ull;
    }
    return h;
}

struct gw_attempts *gw_attempts_new(void)
{
    struct gw_attempts *a = sl_xcalloc(1, sizeof *a);
    pthread_mutex_init(&a->mu, NULL);
    a->cap = 64;
    a->buckets = sl_xcalloc(a->cap, sizeof *a->buckets);
    return a;
}

/* A copy of s in the block at *p (advanced past it, NUL-terminated). */
static struct sl_slice copy_into(char **p, struct sl_slice s)
{
    struct sl_slice out = {*p, s.n};
    if (s.n > 0) {
        memcpy(*p, s.p, s.n);
    }
    (*p)[s.n] = '\0';
    *p += s.n + 1;
    return out;
}

static size_t cstr_len(const char *s)
{
    return s != NULL ? strlen(s) + 1 : 0;
}

static const char *copy_cstr(char **p, const char *s)
{
    if (s == NULL) {
        return NULL;
    }
    return copy_into(p, sl_slice_cstr(s)).p;
}

/* Deep copy of res's messages: the array and every message's bytes in one
 * allocation. Returns the bytes it took. */
static size_t copy_result(const struct part_result *res, struct part_result *out)
{
    size_t n = res->message_count;
    size_t bytes = n * sizeof *res->messages;
    for (size_t i = 0; i < n; i++) {
        const struct part_message *m = &res->messages[i];
        bytes += m->body.n + m->attrs.n + m->sys_attrs.n + m->digests.n + 4 +
                 cstr_len(m->group_id) + cstr_len(m->dedup_id);
    }
    *out = (struct part_result){0};
    if (n == 0) {
        return 0;
    }
    out->messages = sl_xmalloc(bytes);
    out->message_count = n;
    char *p = (char *)(out->messages + n);
    for (size_t i = 0; i < n; i++) {
        const struct part_message *m = &res->messages[i];
        struct part_message *c = &out->messages[i];
        *c = *m;
        c->body = copy_into(&p, m->body);
        c->attrs = copy_into(&p, m->attrs);
        c->sys_attrs = copy_into(&p, m->sys_attrs);
        c->digests = copy_into(&p, m->digests);
        c->group_id = copy_cstr(&p, m->group_id);
        c->dedup_id = copy_cstr(&p, m->dedup_id);
    }
    return bytes;
}

void gw_attempts_result_free(struct part_result *r)
{
    free(r->messages);
    *r = (struct part_result){0};
}

static void unlink_entry(struct gw_attempts *a, struct entry *e)
{
    struct entry **slot = &a->buckets[e->hash & (a->cap - 1)];
    while (*slot != e) {
        slot = &(*slot)->chain;
    }
    *slot = e->chain;
    if (e == a->head) {
        a->head = e->next;
    } else {
        e->prev->next = e->next;
    }
    if (e == a->tail) {
        a->tail = e->prev;
    } else {
        e->next->prev = e->prev;
    }
    a->count--;
    a->bytes -= e->bytes;
    gw_attempts_result_free(&e->res);
    free(e->attempt);
    free(e);
}

/* Drops expired entries, and the oldest while over the byte cap. */
static void trim(struct gw_attempts *a, uint64_t now_ms)
{
    while (a->head != NULL && (a->head->expires_ms <= now_ms || a->bytes > GW_ATTEMPTS_MAX_BYTES)) {
        unlink_entry(a, a->head);
    }
}

static struct entry *find(const struct gw_attempts *a, uint64_t h, uint64_t queue_id,
                          struct sl_slice attempt)
{
    for (struct entry *e = a->buckets[h & (a->cap - 1)]; e != NULL; e = e->chain) {
        if (e->hash == h && e->queue_id == queue_id && strlen(e->attempt) == attempt.n &&
            memcmp(e->attempt, attempt.p, attempt.n) == 0) {
            return e;
        }
    }
    return NULL;
}

bool gw_attempts_get(struct gw_attempts *a, uint64_t queue_id, struct sl_slice attempt,
                     uint64_t now_ms, struct part_result *out)
{
    uint64_t h = key_hash(queue_id, attempt);
    pthread_mutex_lock(&a->mu);
    trim(a, now_ms);
    struct entry *e = find(a, h, queue_id, attempt);
    if (e != NULL && e->expires_ms <= now_ms) {
        unlink_entry(a, e); /* its leases ended before the head's: trim missed it */
        e = NULL;
    }
    if (e != NULL) {
        copy_result(&e->res, out);
    }
    pthread_mutex_unlock(&a->mu);
    return e != NULL;
}

static void grow(struct gw_attempts *a)
{
    size_t cap = a->cap * 2;
    struct entry **buckets = sl_xcalloc(cap, sizeof *buckets);
    for (size_t i = 0; i < a->cap; i++) {
        for (struct entry *e = a->buckets[i], *next; e != NULL; e = next) {
            next = e->chain;
            e->chain = buckets[e->hash & (cap - 1)];
            buckets[e->hash & (cap - 1)] = e;
        }
    }
    free(a->buckets);
    a->buckets = buckets;
    a->cap = cap;
}

void gw_attempts_put(struct gw_attempts *a, uint64_t queue_id, struct sl_slice attempt,
                     uint64_t now_ms, uint64_t lease_ms, const struct part_result *res)
{
    struct entry *e = sl_xcalloc(1, sizeof *e);
    e->hash = key_hash(queue_id, attempt);
    e->queue_id = queue_id;
    e->expires_ms = now_ms + SL_MIN(lease_ms, (uint64_t)GW_ATTEMPT_TTL_MS);
    e->attempt = sl_xstrndup(attempt.p, attempt.n);
    e->bytes = copy_result(res, &e->res) + sizeof *e + attempt.n;
    pthread_mutex_lock(&a->mu);
    struct entry *old = find(a, e->hash, queue_id, attempt);
    if (old != NULL) {
        unlink_entry(a, old);
    }
    if (a->count >= a->cap) {
        grow(a);
    }
    struct entry **slot = &a->buckets[e->hash & (a->cap - 1)];
    e->chain = *slot;
    *slot = e;
    e->prev = a->tail;
    if (a->tail != NULL) {
        a->tail->next = e;
    } else {
        a->head = e;
    }
    a->tail = e;
    a->count++;
    a->bytes += e->bytes;
    trim(a, now_ms);
    pthread_mutex_unlock(&a->mu);
}

void gw_attempts_free(struct gw_attempts *a)
{
    if (a == NULL) {
        return;
    }
    for (struct entry *e = a->head, *next; e != NULL; e = next) {
        next = e->next;
        gw_attempts_result_free(&e->res);
        free(e->attempt);
        free(e);
    }
    free(a->buckets);
    pthread_mutex_destroy(&a->mu);
    free(a);
}
