/*
 * part_dedup.c -- the in-memory index of FIFO deduplication ids (see
 * part_dedup.h): open addressing with linear probing over 32-byte slots,
 * deletion by backward shift (no tombstones, so a probe stops at the first
 * empty slot however many ids came and went).
 *
 * The hash is keyed SipHash-2-4 (OpenSSL's): deduplication ids are chosen
 * by tenants, and an unkeyed hash would let one of them aim ids at one
 * probe run and make every send of the partition walk it.
 *
 * Stack: a leaf (sl.h and OpenSSL only).
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include "part_dedup.h"
#include "sl.h"

#define MIN_SLOTS 1024u
#define KEY_BYTES 16
#define LOG_KEEP 4096u /* undo entries kept allocated between batches */

struct slot {
    uint64_t hash;
    uint64_t queue_id;
    int64_t rowid; /* 0: empty */
    uint64_t expires_at;
};

struct undo {
    struct slot s;
    bool added; /* else dropped */
};

struct part_dedup {
    struct slot *slot;
    size_t cap; /* a power of two */
    size_t n;
    EVP_MAC_CTX *mac;
    struct undo *log;
    size_t nlog;
    size_t log_cap;
};

static EVP_MAC *siphash_alg; /* fetched once, kept for the process */
static pthread_once_t alg_once = PTHREAD_ONCE_INIT;

static void fetch_alg(void)
{
    siphash_alg = EVP_MAC_fetch(NULL, "SIPHASH", NULL);
}

struct part_dedup *part__dedup_new(void)
{
    struct part_dedup *d = sl_xcalloc(1, sizeof *d);
    d->cap = MIN_SLOTS;
    d->slot = sl_xcalloc(d->cap, sizeof *d->slot);
    SL_ASSERT(pthread_once(&alg_once, fetch_alg) == 0 && siphash_alg != NULL);
    d->mac = EVP_MAC_CTX_new(siphash_alg);
    SL_ASSERT(d->mac != NULL);
    uint8_t key[KEY_BYTES];
    sl_random_bytes(key, sizeof key);
    size_t out = 8;
    OSSL_PARAM params[] = {OSSL_PARAM_construct_size_t(OSSL_MAC_PARAM_SIZE, &out),
                           OSSL_PARAM_construct_end()};
    SL_ASSERT(EVP_MAC_init(d->mac, key, sizeof key, params) == 1);
    return d;
}

void part__dedup_free(struct part_dedup *d)
{
    if (d != NULL) {
        EVP_MAC_CTX_free(d->mac);
        free(d->slot);
        free(d->log);
        free(d);
    }
}

uint64_t part__dedup_hash(struct part_dedup *d, uint64_t queue_id, const void *key, size_t len)
{
    uint8_t q[8];
    for (int i = 0; i < 8; i++) {
        q[i] = (uint8_t)(queue_id >> (8 * i));
    }
    uint8_t out[8];
    size_t n = 0;
    /* a NULL key keeps the key and the output size, and starts afresh */
    SL_ASSERT(EVP_MAC_init(d->mac, NULL, 0, NULL) == 1);
    SL_ASSERT(EVP_MAC_update(d->mac, q, sizeof q) == 1);
    SL_ASSERT(EVP_MAC_update(d->mac, key, len) == 1);
    SL_ASSERT(EVP_MAC_final(d->mac, out, &n, sizeof out) == 1 && n == sizeof out);
    uint64_t h = 0;
    for (int i = 7; i >= 0; i--) {
        h = (h << 8) | out[i];
    }
    return h;
}

static size_t home(const struct part_dedup *d, uint64_t hash)
{
    return (size_t)hash & (d->cap - 1);
}

static void log_change(struct part_dedup *d, const struct slot *s, bool added)
{
    if (d->nlog == d->log_cap) {
        d->log_cap = d->log_cap ? 2 * d->log_cap : 64;
        d->log = sl_xrealloc(d->log, d->log_cap * sizeof *d->log);
    }
    d->log[d->nlog++] = (struct undo){.s = *s, .added = added};
}

static void place(struct part_dedup *d, const struct slot *s)
{
    size_t i = home(d, s->hash);
    while (d->slot[i].rowid != 0) {
        i = (i + 1) & (d->cap - 1);
    }
    d->slot[i] = *s;
    d->n++;
}

static void resize(struct part_dedup *d, size_t cap);

/* place, growing the table first when it would pass three quarters full */
static void insert(struct part_dedup *d, const struct slot *s)
{
    if ((d->n + 1) * 4 > d->cap * 3) {
        resize(d, d->cap * 2);
    }
    place(d, s);
}

static void resize(struct part_dedup *d, size_t cap)
{
    struct slot *old = d->slot;
    size_t old_cap = d->cap;
    d->slot = sl_xcalloc(cap, sizeof *d->slot);
    d->cap = cap;
    d->n = 0;
    for (size_t i = 0; i < old_cap; i++) {
        if (old[i].rowid != 0) {
            place(d, &old[i]);
        }
    }
    free(old);
}

/* Empties slot i and moves later entries of its probe run back into the
 * gap when their home allows (Knuth's algorithm R). */
static void remove_at(struct part_dedup *d, size_t i)
{
    size_t mask = d->cap - 1;
    size_t j = i;
    for (;;) {
        j = (j + 1) & mask;
        if (d->slot[j].rowid == 0) {
            break;
        }
        size_t h = home(d, d->slot[j].hash);
        /* j stays if its home lies cyclically in (i, j] */
        bool stays = i <= j ? (i < h && h <= j) : (i < h || h <= j);
        if (!stays) {
            d->slot[i] = d->slot[j];
            i = j;
        }
    }
    d->slot[i].rowid = 0;
    d->n--;
}

/* The slot of row rowid under (hash, queue_id), or SIZE_MAX. */
static size_t find_exact(const struct part_dedup *d, uint64_t hash, uint64_t queue_id,
                         int64_t rowid)
{
    for (size_t i = home(d, hash); d->slot[i].rowid != 0; i = (i + 1) & (d->cap - 1)) {
        if (d->slot[i].rowid == rowid && d->slot[i].hash == hash &&
            d->slot[i].queue_id == queue_id) {
            return i;
        }
    }
    return SIZE_MAX;
}

/* Under a quarter full: halve (to half full, so that a table hovering
 * at the line does not resize back and forth). Slots stay between a
 * quarter and three quarters full. */
static void shrink_if_sparse(struct part_dedup *d)
{
    if (d->cap > MIN_SLOTS && d->n * 4 < d->cap) {
        resize(d, d->cap / 2);
    }
}

size_t part__dedup_find(const struct part_dedup *d, uint64_t hash, uint64_t queue_id, uint64_t now,
                        int64_t *rowids, size_t max)
{
    size_t k = 0;
    for (size_t i = home(d, hash); d->slot[i].rowid != 0 && k < max; i = (i + 1) & (d->cap - 1)) {
        const struct slot *s = &d->slot[i];
        if (s->hash == hash && s->queue_id == queue_id && s->expires_at > now) {
            rowids[k++] = s->rowid;
        }
    }
    return k;
}

void part__dedup_add(struct part_dedup *d, uint64_t hash, uint64_t queue_id, int64_t rowid,
                     uint64_t expires_at)
{
    SL_ASSERT(rowid > 0);
    struct slot s = {.hash = hash, .queue_id = queue_id, .rowid = rowid, .expires_at = expires_at};
    insert(d, &s);
    log_change(d, &s, true);
}

bool part__dedup_remove(struct part_dedup *d, uint64_t hash, uint64_t queue_id, int64_t rowid)
{
    size_t i = find_exact(d, hash, queue_id, rowid);
    if (i == SIZE_MAX) {
        return false;
    }
    log_change(d, &d->slot[i], false);
    remove_at(d, i);
    shrink_if_sparse(d);
    return true;
}

size_t part__dedup_forget_queue(struct part_dedup *d, uint64_t queue_id)
{
    size_t dropped = 0;
    for (size_t i = 0; i < d->cap; i++) {
        /* a removal may move a later entry into i: look at i again */
        while (d->slot[i].rowid != 0 && d->slot[i].queue_id == queue_id) {
            log_change(d, &d->slot[i], false);
            remove_at(d, i);
            dropped++;
        }
    }
    shrink_if_sparse(d);
    return dropped;
}

void part__dedup_commit(struct part_dedup *d)
{
    d->nlog = 0;
    if (d->log_cap > LOG_KEEP) {
        /* a load at open or a big purge logged a lot: give it back */
        free(d->log);
        d->log = NULL;
        d->log_cap = 0;
    }
}

void part__dedup_rollback(struct part_dedup *d)
{
    while (d->nlog > 0) {
        const struct undo *u = &d->log[--d->nlog];
        if (u->added) {
            size_t i = find_exact(d, u->s.hash, u->s.queue_id, u->s.rowid);
            if (i != SIZE_MAX) {
                remove_at(d, i);
            }
        } else {
            insert(d, &u->s);
        }
    }
    shrink_if_sparse(d);
}

size_t part__dedup_size(const struct part_dedup *d)
{
    return d->n;
}

size_t part__dedup_bytes(const struct part_dedup *d)
{
    return sizeof *d + d->cap * sizeof *d->slot + d->log_cap * sizeof *d->log;
}
