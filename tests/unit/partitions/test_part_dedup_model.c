/*
 * test_part_dedup_model.c -- the in-memory index of FIFO deduplication ids
 * (part_dedup.c) against a naive model: a plain array of the same entries
 * and the same undo log. Random adds (hashes crowded onto few homes and onto
 * the last slots, so that probe runs are long and wrap round the end; the
 * same (hash, queue, row) more than once, as a reused rowid gives), purges
 * of one queue, sweeps of expired entries (as the file's sweep drops them,
 * one by one with their rows), commits and rollbacks,
 * and a clock that moves on, in phases that grow the table to several times
 * its first size and empty it again (so it shrinks, also inside a
 * rollback).
 *
 * After every step each key's candidates must be exactly the model's
 * unexpired rows under that key, and the size the model's. Which expired
 * entries a sweep drops is the table's choice: the model learns it from the
 * table, and checks that only expired entries went. The table's bytes must
 * stay within a fixed multiple of its largest size.
 *
 * Seeds are fixed: 3 (1 under ASan, none under TSan); SLUICE_DEDUP_SEEDS=n
 * runs n.
 */
#include "part_test_util.h"

#include "part_dedup.h"

struct m_ent {
    uint64_t hash;
    uint64_t queue_id;
    int64_t rowid;
    uint64_t expires_at;
};

struct m_undo {
    struct m_ent e;
    bool added;
};

struct model {
    struct m_ent *v;
    size_t n, cap;
    struct m_undo *log;
    size_t nlog, log_cap;
};

static uint64_t rng_state;

static uint64_t rnd(void)
{
    /* splitmix64: reproducible from the seed alone */
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t below(uint64_t n)
{
    return rnd() % n;
}

static void m_push(struct model *m, struct m_ent e)
{
    if (m->n == m->cap) {
        m->cap = m->cap ? 2 * m->cap : 256;
        m->v = realloc(m->v, m->cap * sizeof *m->v);
        assert_non_null(m->v);
    }
    m->v[m->n++] = e;
}

static void m_log(struct model *m, struct m_ent e, bool added)
{
    if (m->nlog == m->log_cap) {
        m->log_cap = m->log_cap ? 2 * m->log_cap : 256;
        m->log = realloc(m->log, m->log_cap * sizeof *m->log);
        assert_non_null(m->log);
    }
    m->log[m->nlog++] = (struct m_undo){e, added};
}

static bool same(const struct m_ent *a, const struct m_ent *b)
{
    return a->hash == b->hash && a->queue_id == b->queue_id && a->rowid == b->rowid;
}

/* Removes one entry equal to e (as the table's rollback matches: hash,
 * queue and row; any such one, since the table may keep either). Returns
 * whether there was one. */
static bool m_remove_one(struct model *m, const struct m_ent *e)
{
    for (size_t i = 0; i < m->n; i++) {
        if (same(&m->v[i], e)) {
            m->v[i] = m->v[--m->n];
            return true;
        }
    }
    return false;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Candidate rows of (hash, queue) unexpired at now, in the model, sorted
 * (a linear scan: for keys the model may not hold). */
static size_t m_find(const struct model *m, uint64_t hash, uint64_t queue_id, uint64_t now,
                     int64_t *rows, size_t max)
{
    size_t k = 0;
    for (size_t i = 0; i < m->n && k < max; i++) {
        const struct m_ent *e = &m->v[i];
        if (e->hash == hash && e->queue_id == queue_id && e->expires_at > now) {
            rows[k++] = e->rowid;
        }
    }
    qsort(rows, k, sizeof *rows, cmp_i64);
    return k;
}

static int cmp_ent(const void *a, const void *b)
{
    const struct m_ent *x = a, *y = b;
    if (x->hash != y->hash) {
        return x->hash < y->hash ? -1 : 1;
    }
    if (x->queue_id != y->queue_id) {
        return x->queue_id < y->queue_id ? -1 : 1;
    }
    return cmp_i64(&x->rowid, &y->rowid);
}

/* The model's entries sorted by (hash, queue, row): each key's entries
 * are one run. */
static void m_sort(struct model *m)
{
    if (m->n > 1) {
        qsort(m->v, m->n, sizeof *m->v, cmp_ent);
    }
}

static size_t run_end(const struct model *m, size_t i)
{
    size_t j = i + 1;
    while (j < m->n && m->v[j].hash == m->v[i].hash && m->v[j].queue_id == m->v[i].queue_id) {
        j++;
    }
    return j;
}

#define MAXC 4096

/* Every key the model holds (and a few it does not) finds exactly the
 * model's unexpired rows. Sorts m. */
static void check(struct part_dedup *d, struct model *m, uint64_t now)
{
    static int64_t a[MAXC], b[MAXC];
    m_sort(m);
    for (size_t i = 0, j; i < m->n; i = j) {
        j = run_end(m, i);
        const struct m_ent *e = &m->v[i];
        size_t kb = 0;
        for (size_t x = i; x < j; x++) {
            if (m->v[x].expires_at > now) {
                b[kb++] = m->v[x].rowid; /* sorted: the run is */
            }
        }
        assert_true(kb < MAXC);
        size_t ka = part__dedup_find(d, e->hash, e->queue_id, now, a, MAXC);
        qsort(a, ka, sizeof *a, cmp_i64);
        if (ka != kb || memcmp(a, b, ka * sizeof *a) != 0) {
            fail_msg("hash %llx queue %llu: table has %zu candidates, model %zu",
                     (unsigned long long)e->hash, (unsigned long long)e->queue_id, ka, kb);
        }
    }
    for (int k = 0; k < 8; k++) {
        uint64_t h = rnd();
        assert_int_equal(part__dedup_find(d, h, 1, now, a, MAXC), m_find(m, h, 1, now, b, MAXC));
    }
}

/* A sweep of the file: up to max expired entries, picked at random, leave
 * the table one by one with their rows (part__dedup_remove), and the
 * model drops and logs the same ones. */
static void sweep(struct part_dedup *d, struct model *m, uint64_t now, size_t max)
{
    for (size_t k = 0; k < max && m->n > 0; k++) {
        size_t i = below(m->n);
        if (m->v[i].expires_at > now) {
            continue;
        }
        struct m_ent e = m->v[i];
        assert_true(part__dedup_remove(d, e.hash, e.queue_id, e.rowid));
        m->v[i] = m->v[--m->n];
        m_log(m, e, false);
    }
    /* a row the table does not hold is no entry to drop */
    assert_false(part__dedup_remove(d, rnd(), 1, -1));
}

/* Shares of the steps, per mille; the rest moves the clock on. */
struct phase {
    size_t steps;
    unsigned add, purge, sweep, commit, rollback;
    unsigned home_bits; /* hashes spread over 2^home_bits homes */
    unsigned queues;    /* new entries go to queues 1..queues */
};

static void run_seed(uint64_t seed)
{
    rng_state = seed;
    struct part_dedup *d = part__dedup_new();
    struct model m = {0};
    uint64_t now = 1000;
    int64_t next_row = 1;
    size_t biggest = 0, max_bytes = 0;
    const struct phase phases[] = {
        {4000, 600, 20, 100, 80, 60, 4, 4},    /* few homes: long runs, collisions */
        {40000, 839, 1, 40, 80, 40, 20, 4},    /* grow past several doublings */
        {40000, 150, 2, 300, 100, 100, 12, 4}, /* shrink back: sweeps, purges */
        {10000, 950, 0, 0, 0, 1, 12, 4},       /* rollbacks that shrink what a batch grew */
        {30000, 550, 5, 100, 100, 100, 10, 4},
        {20000, 700, 0, 0, 5, 5, 20, 4},  /* long batches: big logs, big rollbacks */
        {20000, 800, 3, 0, 5, 10, 16, 1}, /* one queue: a purge empties and shrinks, a
                                           * rollback grows it back */
    };
    for (size_t p = 0; p < SL_ARRAY_LEN(phases); p++) {
        for (size_t s = 0; s < phases[p].steps; s++) {
            const struct phase *ph = &phases[p];
            unsigned op = (unsigned)below(1000);
            if (op < ph->add) {
                struct m_ent e;
                if (m.n > 0 && below(10) == 0) {
                    /* the same key again: another row, or the very same
                     * entry (the table's rollback removes one of equal
                     * (hash, queue, row) without looking at the expiry,
                     * so equal ones are made whole-equal here) */
                    e = m.v[below(m.n)];
                    if (below(2) == 0) {
                        e.rowid = next_row++;
                        e.expires_at = now + 1 + below(3000);
                    }
                } else {
                    uint64_t homes = 1ull << ph->home_bits;
                    uint64_t home = below(4) == 0 ? UINT64_MAX - below(8) : below(homes);
                    e.hash = (rnd() << 32) | (home & 0xffffffffu);
                    if (below(8) == 0) {
                        e.hash = home; /* high bits too: exact collisions */
                    }
                    e.queue_id = 1 + below(ph->queues);
                    e.rowid = next_row++;
                    e.expires_at = now + 1 + below(3000);
                }
                part__dedup_add(d, e.hash, e.queue_id, e.rowid, e.expires_at);
                m_push(&m, e);
                m_log(&m, e, true);
            } else if (op < ph->add + ph->purge) {
                uint64_t q = 1 + below(4);
                size_t dropped = part__dedup_forget_queue(d, q);
                size_t mine = 0;
                for (size_t i = 0; i < m.n;) {
                    if (m.v[i].queue_id == q) {
                        m_log(&m, m.v[i], false);
                        m.v[i] = m.v[--m.n];
                        mine++;
                    } else {
                        i++;
                    }
                }
                assert_int_equal(dropped, mine);
            } else if (op < ph->add + ph->purge + ph->sweep) {
                sweep(d, &m, now, 1 + below(64));
            } else if (op < ph->add + ph->purge + ph->sweep + ph->commit) {
                part__dedup_commit(d);
                m.nlog = 0;
            } else if (op < ph->add + ph->purge + ph->sweep + ph->commit + ph->rollback) {
                part__dedup_rollback(d);
                while (m.nlog > 0) {
                    struct m_undo *u = &m.log[--m.nlog];
                    if (u->added) {
                        m_remove_one(&m, &u->e); /* may have been swept */
                    } else {
                        m_push(&m, u->e);
                    }
                }
            } else {
                now += below(40);
            }
            assert_int_equal(part__dedup_size(d), m.n);
            biggest = SL_MAX(biggest, m.n);
            max_bytes = SL_MAX(max_bytes, part__dedup_bytes(d));
            /* full checks are quadratic: often while small, else now and then */
            if (m.n < 200 || s % 61 == 0) {
                check(d, &m, now);
            }
        }
        check(d, &m, now);
        if (getenv("SLUICE_DEDUP_VERBOSE")) {
            fprintf(stderr, "seed %llx phase %zu: %zu entries, %zu bytes (most %zu, %zu)\n",
                    (unsigned long long)seed, p, m.n, part__dedup_bytes(d), biggest, max_bytes);
        }
    }
    /* the slots stay within a small multiple of the most entries held: 32
     * bytes a slot, at least a quarter full, plus the log (40 bytes an
     * entry of the biggest batch, at most all entries) */
    assert_true(max_bytes <= (size_t)1024 * 32 + (size_t)4 * 32 * biggest +
                                 (size_t)2 * 40 * (biggest + 64) + 4096);
    /* everything expires: sweeps empty the table and shrink it */
    part__dedup_commit(d);
    m.nlog = 0;
    size_t big = part__dedup_bytes(d);
    while (m.n > 0) {
        struct m_ent e = m.v[--m.n];
        assert_true(part__dedup_remove(d, e.hash, e.queue_id, e.rowid));
    }
    part__dedup_commit(d);
    assert_int_equal(part__dedup_size(d), 0);
    assert_true(part__dedup_bytes(d) <= big);
    free(m.v);
    free(m.log);
    part__dedup_free(d);
}

static void test_against_model(void **state)
{
    (void)state;
    const char *env = getenv("SLUICE_DEDUP_SEEDS");
    if (T_TSAN && (env == NULL || *env == '\0')) {
        /* one thread and no atomics: ThreadSanitizer has nothing to find,
         * and it makes the quadratic checks take minutes */
        skip();
    }
    uint64_t seeds = T_ASAN ? 1 : 3; /* about 30 s under ASan+UBSan */
    if (env != NULL && *env != '\0') {
        seeds = strtoull(env, NULL, 10);
    }
    for (uint64_t s = 1; s <= seeds; s++) {
        run_seed(s * 0x2545f4914f6cdd1dull);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_against_model),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
