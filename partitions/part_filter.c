/*
 * part_filter.c -- the filter index of filtered receives: a message's
 * indexed (key, value) pairs written beside it at send, the bound walk a
 * filtered receive steps (part_ops.c), and the filtered depth an operator
 * asks for (part_filter_depth), counted on read-only connections as
 * part_peek reads.
 *
 * Why an index of its own and not a scan of msg_ready: a receive that
 * wants 1 % of a million ready messages would read the other 99 % first.
 * msg_filter (part_schema.c) lists each key=value's messages in the
 * receive's order, so a filtered receive reads only messages carrying
 * its first pair, and a queue whose messages carry none pays nothing.
 *
 * Stack: a leaf under the message operations; calls part_schema.c and the
 * catalog's reads (part_catalog.c).
 */
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "part_catalog.h"
#include "part_filter.h"
#include "part_schema.h"

#define LOG_MOD "partitions"
#define DEPTH_BUSY_MS 2000 /* a checkpoint or recovery in progress */

sqlite3_stmt *part__filter_put(struct part_writer *w, const char **pairs, int64_t rowid,
                               uint64_t queue_id, int state, int lane, int64_t priority)
{
    const char *key = *pairs;
    const char *value = key + strlen(key) + 1;
    *pairs = value + strlen(value) + 1;
    sqlite3_stmt *st = part__stmt(w, ST_FILTER_PUT);
    sqlite3_bind_int64(st, 1, rowid);
    sqlite3_bind_text(st, 2, key, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, value, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 4, (sqlite3_int64)queue_id);
    sqlite3_bind_int(st, 5, state);
    sqlite3_bind_int(st, 6, lane);
    sqlite3_bind_int64(st, 7, priority);
    return st;
}

/* Binds the pairs of r to ?2,?3 (the first) and ?5..?10 (the others;
 * unbound, they are NULL and match everything). */
static void bind_pairs(sqlite3_stmt *st, const struct part_filter_term *t, uint8_t n)
{
    sqlite3_bind_text(st, 2, t[0].key, t[0].klen, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, t[0].value, t[0].vlen, SQLITE_STATIC);
    for (uint8_t i = 1; i < n; i++) {
        sqlite3_bind_text(st, 3 + 2 * i, t[i].key, t[i].klen, SQLITE_STATIC);
        sqlite3_bind_text(st, 4 + 2 * i, t[i].value, t[i].vlen, SQLITE_STATIC);
    }
}

sqlite3_stmt *part__filter_scan(struct part_writer *w, const struct part_recv *r, uint64_t queue_id,
                                int lane, uint32_t limit)
{
    sqlite3_stmt *st = part__stmt(w, ST_FILTER_SCAN);
    sqlite3_bind_int64(st, 1, (sqlite3_int64)queue_id);
    sqlite3_bind_int(st, 4, lane);
    bind_pairs(st, r->filter, r->nfilter);
    sqlite3_bind_int64(st, 11, limit);
    return st;
}

int part__filter_copy(struct part_recv *r, const struct part_filter_pair *pairs, size_t n)
{
    if (n == 0 || n > PART_FILTER_MAX) {
        return SL_EINVAL;
    }
    for (size_t i = 0; i < n; i++) {
        struct sl_slice k = pairs[i].key, v = pairs[i].value;
        if (k.n == 0 || k.n > PART_FILTER_TEXT_MAX || v.n == 0 || v.n > PART_FILTER_TEXT_MAX ||
            memchr(k.p, '\0', k.n) != NULL || memchr(v.p, '\0', v.n) != NULL) {
            return SL_EINVAL;
        }
        for (size_t j = 0; j < i; j++) {
            if (sl_slice_eq(k, pairs[j].key)) {
                return SL_EINVAL;
            }
        }
    }
    free(r->filter);
    r->filter = sl_xcalloc(n, sizeof *r->filter);
    for (size_t i = 0; i < n; i++) {
        struct sl_slice k = pairs[i].key, v = pairs[i].value;
        struct part_filter_term *t = &r->filter[i];
        memcpy(t->key, k.p, k.n);
        memcpy(t->value, v.p, v.n);
        t->klen = (uint16_t)k.n;
        t->vlen = (uint16_t)v.n;
    }
    r->nfilter = (uint8_t)n;
    return SL_OK;
}

/* ---- filtered depth ------------------------------------------------------ */

/* The messages of one state carrying every pair: the entries of the first
 * pair in that state (one range of msg_filter_walk), each other pair one
 * primary-key probe. */
static const char DEPTH_SQL[] =
    "SELECT count(*) FROM msg_filter f WHERE f.queue_id=?1 AND f.fkey=?2 AND f.fval=?3"
    " AND f.state=?4"
    " AND (?5 IS NULL OR EXISTS(SELECT 1 FROM msg_filter g WHERE g.mid=f.mid AND g.fkey=?5"
    " AND g.fval=?6))"
    " AND (?7 IS NULL OR EXISTS(SELECT 1 FROM msg_filter g WHERE g.mid=f.mid AND g.fkey=?7"
    " AND g.fval=?8))"
    " AND (?9 IS NULL OR EXISTS(SELECT 1 FROM msg_filter g WHERE g.mid=f.mid AND g.fkey=?9"
    " AND g.fval=?10))";

/* Adds partition p's counts; false when its file could not be read. */
static bool depth_partition(struct part_engine *e, uint32_t p, uint64_t queue_id,
                            const struct part_recv *r, int64_t *ready, int64_t *inflight)
{
    sqlite3 *db = NULL;
    int rc =
        sqlite3_open_v2(e->writers[p].path, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL);
    sqlite3_stmt *st = NULL;
    if (rc == SQLITE_OK) {
        sqlite3_busy_timeout(db, DEPTH_BUSY_MS);
        rc = sqlite3_prepare_v2(db, DEPTH_SQL, -1, &st, NULL);
    }
    /* one read transaction: both counts of the same snapshot */
    if (rc == SQLITE_OK) {
        rc = sqlite3_exec(db, "BEGIN", NULL, NULL, NULL);
    }
    static const int states[] = {PART_STATE_READY, PART_STATE_INFLIGHT};
    int64_t *out[] = {ready, inflight};
    for (size_t i = 0; i < 2 && rc == SQLITE_OK; i++) {
        sqlite3_reset(st);
        sqlite3_bind_int64(st, 1, (sqlite3_int64)queue_id);
        sqlite3_bind_int(st, 4, states[i]);
        bind_pairs(st, r->filter, r->nfilter);
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
            *out[i] += sqlite3_column_int64(st, 0);
            rc = SQLITE_OK;
        }
    }
    if (rc != SQLITE_OK) {
        sl_log(SL_LOG_WARN, LOG_MOD, "filtered depth: partition %u (%s) not read: %s", p,
               e->writers[p].path, db != NULL ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
    }
    sqlite3_finalize(st);
    sqlite3_close(db); /* ends the read transaction */
    return rc == SQLITE_OK;
}

int part_filter_depth(struct part_engine *e, uint64_t queue_id,
                      const struct part_filter_pair *filter, size_t n, int64_t *ready,
                      int64_t *inflight, uint32_t *skipped)
{
    *ready = 0;
    *inflight = 0;
    if (skipped != NULL) {
        *skipped = 0;
    }
    struct part_recv pairs = {0}; /* for its pairs only */
    if (part__filter_copy(&pairs, filter, n) != SL_OK) {
        return SL_EINVAL; /* the copy took nothing */
    }
    struct part_queue *q = part__queue_ref(e, queue_id);
    struct part_queue_config cfg;
    bool known = q != NULL && part__queue_cfg(e, q, &cfg);
    part__queue_unref(q);
    if (!known || !cfg.filtered) { /* only a queue that filters keeps its entries' states */
        free(pairs.filter);
        return known ? SL_EINVAL : SL_ENOTFOUND;
    }
    for (uint32_t p = 0; p < e->nparts; p++) {
        struct part_counts pc;
        if (part_queue_counts(e, queue_id, p, &pc) != SL_OK || pc.ready + pc.inflight <= 0) {
            continue; /* nothing there as of the last commit */
        }
        if (!part__partition_ok(e, p) ||
            !depth_partition(e, p, queue_id, &pairs, ready, inflight)) {
            if (skipped != NULL) {
                (*skipped)++;
            }
        }
    }
    free(pairs.filter);
    return SL_OK;
}
