/*
 * test_part_heap.c -- the timer heap and its tombstones (part_timers.c)
 * against a plain model: random pushes, pops, forgotten rows and
 * superseded entries (equal entries included), through many compactions.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "part_int.h"
#include "part_timers.h"

/* Every entry ever pushed, by push order; each row's (and each queue's
 * AGE) entries are chained, so that lookups stay short. */
struct entry {
    struct part_heap_item it;
    bool dead;    /* forgotten */
    bool removed; /* popped, or compacted away */
    size_t next;  /* the next entry of the same chain, SIZE_MAX: none */
};

#define ROWS_MAX 400000
#define QUEUES 8

struct model {
    struct entry *e;
    size_t n;
    size_t cap;
    size_t present;   /* neither removed: what the heap must hold */
    size_t dead;      /* of them, forgotten */
    size_t *row_head; /* [ROWS_MAX], then [QUEUES + 1] for AGE entries */
    size_t *age_head;
    bool *gone; /* row forgotten for good */
};

static uint64_t rng = 0x2545f4914f6cdd1dull;

static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static size_t *chain_of(struct model *m, int64_t rowid, uint8_t kind)
{
    return kind == PART_TIMER_AGE ? &m->age_head[rowid] : &m->row_head[rowid];
}

static void push(struct part_heap *h, struct model *m, uint64_t due, int64_t rowid, uint8_t kind)
{
    part__heap_push(h, due, rowid, kind);
    if (m->n == m->cap) {
        m->cap = m->cap ? m->cap * 2 : 1024;
        m->e = realloc(m->e, m->cap * sizeof *m->e);
    }
    size_t *head = chain_of(m, rowid, kind);
    m->e[m->n] = (struct entry){{due, rowid, kind}, false, false, *head};
    *head = m->n++;
    m->present++;
}

static void mark_dead(struct model *m, struct entry *x)
{
    x->dead = true;
    m->dead++;
}

static void remove_entry(struct model *m, struct entry *x)
{
    x->removed = true;
    m->present--;
    m->dead -= x->dead;
}

/* After a compaction the heap holds exactly the live entries. */
static void compacted(struct model *m)
{
    for (size_t i = 0; i < m->n; i++) {
        if (!m->e[i].removed && m->e[i].dead) {
            remove_entry(m, &m->e[i]);
        }
    }
    assert_int_equal(m->dead, 0);
}

/* Pops one entry: forgotten exactly when the model has such an entry
 * dead. Returns it. */
static struct part_heap_item pop_one(struct part_heap *h, struct model *m)
{
    struct part_heap_item it = part__heap_pop(h);
    bool forgotten = part__heap_forgotten(h, &it);
    for (size_t i = *chain_of(m, it.rowid, it.kind); m->e != NULL && i != SIZE_MAX;
         i = m->e[i].next) {
        struct entry *x = &m->e[i];
        if (!x->removed && x->it.due == it.due && x->it.kind == it.kind && x->dead == forgotten) {
            remove_entry(m, x);
            return it;
        }
    }
    fail_msg("popped (%llu, %lld, %d), forgotten %d: not in the model", (unsigned long long)it.due,
             (long long)it.rowid, it.kind, forgotten);
    return it;
}

static void test_heap_against_model(void **state)
{
    struct part_heap h = {0};
    struct model m = {0};
    m.row_head = malloc(ROWS_MAX * sizeof *m.row_head);
    m.age_head = malloc((QUEUES + 1) * sizeof *m.age_head);
    m.gone = calloc(ROWS_MAX, sizeof *m.gone);
    memset(m.row_head, 0xff, ROWS_MAX * sizeof *m.row_head);
    memset(m.age_head, 0xff, (QUEUES + 1) * sizeof *m.age_head);
    int64_t rows = 0; /* ids 1..rows used; never reused once gone */
    size_t compactions = 0;
    uint64_t now = 1000;
    for (int op = 0; op < 400000; op++) {
        uint64_t r = next() % 100;
        size_t tombs = h.ntombs;
        if (r < 40) { /* a new row, or another entry of a recent one */
            int64_t row = rows - (int64_t)(next() % 50);
            if (row < 1 || m.gone[row] || next() % 4 == 0) {
                row = ++rows;
            }
            /* dues collide: equal entries happen */
            push(&h, &m, now + next() % 64, row, (uint8_t)(1 + next() % 2));
        } else if (r < 45) { /* queue ids collide with row ids */
            push(&h, &m, now + next() % 64, 1 + (int64_t)(next() % QUEUES), PART_TIMER_AGE);
        } else if (r < 65 && rows > 0) { /* a row gone: each of its entries */
            int64_t row = rows - (int64_t)(next() % (uint64_t)SL_MIN(rows, 100));
            if (m.gone[row]) {
                continue;
            }
            m.gone[row] = true;
            for (size_t i = m.row_head[row]; i != SIZE_MAX; i = m.e[i].next) {
                if (!m.e[i].removed && !m.e[i].dead) {
                    mark_dead(&m, &m.e[i]);
                }
            }
            part__heap_forget_row(&h, row);
        } else if (r < 85 && m.n > 0) { /* one entry superseded */
            struct entry *x = &m.e[m.n - 1 - next() % SL_MIN(m.n, 5000)];
            if (x->removed || x->dead) {
                continue;
            }
            mark_dead(&m, x);
            part__heap_forget(&h, x->it.due, x->it.rowid, x->it.kind);
        } else if (h.n > 0) {
            pop_one(&h, &m);
            now++;
        }
        if (op % 64 == 0) {
            part__heap_tidy(&h);
        }
        if (tombs > 0 && h.ntombs == 0) {
            compactions++;
            compacted(&m);
        }
        assert_int_equal(h.n, m.present);
    }
    assert_true(rows < ROWS_MAX);
    assert_true(compactions >= 5);
    uint64_t last_due = 0;
    while (h.n > 0) { /* in order, and all accounted for */
        struct part_heap_item it = pop_one(&h, &m);
        assert_true(it.due >= last_due);
        last_due = it.due;
    }
    assert_int_equal(m.present, 0);
    part__heap_free(&h);
    free(m.e);
    free(m.row_head);
    free(m.age_head);
    free(m.gone);
}

/* Many rows gone at once (a purge) do not grow the tombstones past twice
 * the compaction threshold, and what survives still pops in order. */
static void test_mass_forget_compacts(void **state)
{
    struct part_heap h = {0};
    const int64_t rows = (int64_t)5 * PART_TIMERS_COMPACT_MIN;
    for (int64_t r = 1; r <= rows; r++) {
        part__heap_push(&h, 1000 + (uint64_t)(r % 977), r, PART_TIMER_EXPIRE);
    }
    part__heap_push(&h, 5, 3, PART_TIMER_AGE); /* a queue id equal to a row's */
    for (int64_t r = 1; r <= rows; r++) {
        if (r % 1000 != 0) {
            part__heap_forget_row(&h, r);
            /* at most twice the threshold */
            assert_true(h.ntombs < SL_MAX(2 * (size_t)PART_TIMERS_COMPACT_MIN, h.n / 2));
        }
    }
    part__heap_tidy(&h);
    assert_true(h.n < (size_t)PART_TIMERS_COMPACT_MIN);
    assert_true(h.cap < 4 * (size_t)PART_TIMERS_COMPACT_MIN); /* memory given back */
    struct part_heap_item it = part__heap_pop(&h);
    assert_int_equal(it.kind, PART_TIMER_AGE);
    assert_false(part__heap_forgotten(&h, &it));
    size_t live = 0;
    uint64_t last = 0;
    while (h.n > 0) {
        it = part__heap_pop(&h);
        assert_true(it.due >= last);
        last = it.due;
        if (!part__heap_forgotten(&h, &it)) {
            assert_int_equal(it.rowid % 1000, 0);
            live++;
        }
    }
    assert_int_equal(live, rows / 1000);
    part__heap_free(&h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_heap_against_model),
        cmocka_unit_test(test_mass_forget_compacts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
