/*
 * part_peek.c -- the operators' peek (part_peek): a queue's ready messages
 * read as they are stored, without a lease.
 *
 * A receive is a write (lease, receive count, first-receive time, a timer
 * and possibly a dead-letter move), so looking at a dead-letter queue
 * through it disturbs exactly what the operator wants to inspect. A peek
 * instead opens each partition file read-only on the caller's thread and
 * reads in one WAL snapshot; the writer never sees it, and WAL lets it
 * run beside the writer's commits without blocking either side. The
 * connections live for one call: peeks are rare and an open costs far
 * less than the reads that follow, while a cached connection would pin an
 * old WAL snapshot and hold back checkpoints.
 *
 * Stack: a leaf beside the writer; reads engine fields that are fixed
 * after open (paths, partition count) and the catalog's public lookups.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "part_int.h"

#define LOG_MOD "partitions"
#define PEEK_BUSY_MS 2000 /* a checkpoint or recovery in progress */

/* Main lane first, then overflow, each as a receive orders it: the
 * msg_ready index answers it without a sort. */
static const char PEEK_SQL[] =
    "SELECT m.id, m.message_id, b.body, b.attrs, b.sys_attrs, m.group_id, m.priority,"
    " m.receive_count, m.sent_at, m.first_receive_at, m.source_queue_id, m.digests, m.lane,"
    " m.last_receive_at"
    " FROM msg m CROSS JOIN msg_body b ON b.id=m.id WHERE m.queue_id=?1 AND m.state=1"
    " ORDER BY m.lane, m.priority, m.id LIMIT ?2";

struct peeked {
    struct part_message m;
    int lane;
};

/* Copies one row into p->m: the blobs and the group id into one block
 * that p->m.body.p starts. */
static void take(sqlite3_stmt *st, uint64_t queue_id, uint32_t partition, struct peeked *p)
{
    static const int blob_cols[] = {2, 3, 4, 11};
    struct sl_slice *dst[] = {&p->m.body, &p->m.attrs, &p->m.sys_attrs, &p->m.digests};
    size_t len[4];
    size_t total = 0;
    for (size_t c = 0; c < 4; c++) {
        len[c] = (size_t)sqlite3_column_bytes(st, blob_cols[c]);
        total += len[c] + 1;
    }
    const char *gid = (const char *)sqlite3_column_text(st, 5);
    size_t gid_len = gid != NULL ? (size_t)sqlite3_column_bytes(st, 5) : 0;
    char *block = sl_xmalloc(total + gid_len + 1);
    char *at = block;
    for (size_t c = 0; c < 4; c++) {
        const void *src = sqlite3_column_blob(st, blob_cols[c]);
        if (len[c] > 0) {
            memcpy(at, src, len[c]);
        }
        at[len[c]] = '\0';
        *dst[c] = (struct sl_slice){at, len[c]};
        at += len[c] + 1;
    }
    p->m.group_id = NULL;
    if (gid != NULL) {
        memcpy(at, gid, gid_len + 1);
        p->m.group_id = at;
    }
    const char *mid = (const char *)sqlite3_column_text(st, 1);
    snprintf(p->m.message_id, sizeof p->m.message_id, "%s", mid != NULL ? mid : "");
    p->m.receipt[0] = '\0';
    p->m.sequence = (uint64_t)sqlite3_column_int64(st, 0);
    p->m.priority = sqlite3_column_int64(st, 6);
    p->m.receive_count = (uint32_t)sqlite3_column_int64(st, 7);
    p->m.sent_ms = (uint64_t)sqlite3_column_int64(st, 8);
    p->m.first_receive_ms = (uint64_t)sqlite3_column_int64(st, 9);
    p->m.source_queue_id = (uint64_t)sqlite3_column_int64(st, 10);
    p->m.queue_id = queue_id;
    p->m.partition = partition;
    p->lane = sqlite3_column_int(st, 12);
    p->m.last_receive_ms = (uint64_t)sqlite3_column_int64(st, 13);
}

/* Appends up to max rows of partition p to *rows. False when the file
 * could not be read (the caller counts it skipped). */
static bool peek_partition(struct part_engine *e, uint32_t p, uint64_t queue_id, uint32_t max,
                           struct peeked *rows, size_t *n)
{
    sqlite3 *db = NULL;
    int rc =
        sqlite3_open_v2(e->writers[p].path, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL);
    sqlite3_stmt *st = NULL;
    if (rc == SQLITE_OK) {
        sqlite3_busy_timeout(db, PEEK_BUSY_MS);
        rc = sqlite3_prepare_v2(db, PEEK_SQL, -1, &st, NULL);
    }
    if (rc == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, (sqlite3_int64)queue_id);
        sqlite3_bind_int64(st, 2, max);
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
            take(st, queue_id, p, &rows[(*n)++]);
        }
        rc = rc == SQLITE_DONE ? SQLITE_OK : rc;
    }
    if (rc != SQLITE_OK) {
        sl_log(SL_LOG_WARN, LOG_MOD, "peek: partition %u (%s) not read: %s", p, e->writers[p].path,
               db != NULL ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    return rc == SQLITE_OK;
}

static int peeked_cmp(const void *a, const void *b)
{
    const struct peeked *x = a, *y = b;
    if (x->lane != y->lane) {
        return x->lane < y->lane ? -1 : 1;
    }
    if (x->m.priority != y->m.priority) {
        return x->m.priority < y->m.priority ? -1 : 1;
    }
    if (x->m.sent_ms != y->m.sent_ms) {
        return x->m.sent_ms < y->m.sent_ms ? -1 : 1;
    }
    return x->m.partition < y->m.partition ? -1 : x->m.partition > y->m.partition;
}

int part_peek(struct part_engine *e, uint64_t queue_id, uint32_t max, struct part_peek_list *out,
              uint32_t *skipped)
{
    *out = (struct part_peek_list){0};
    if (skipped != NULL) {
        *skipped = 0;
    }
    if (max == 0 || max > PART_PEEK_MAX) {
        return SL_EINVAL;
    }
    struct part_counts counts;
    if (part_queue_counts(e, queue_id, PART_ALL_PARTITIONS, &counts) != SL_OK) {
        return SL_ENOTFOUND;
    }
    /* Each partition gives its best max; the best max of those are the
     * queue's. */
    struct peeked *rows = sl_xcalloc((size_t)max * e->nparts, sizeof *rows);
    size_t n = 0;
    for (uint32_t p = 0; p < e->nparts; p++) {
        struct part_counts pc;
        if (part_queue_counts(e, queue_id, p, &pc) != SL_OK || pc.ready <= 0) {
            continue; /* nothing ready there as of the last commit */
        }
        if (!part__partition_ok(e, p) || !peek_partition(e, p, queue_id, max, rows, &n)) {
            if (skipped != NULL) {
                (*skipped)++;
            }
        }
    }
    qsort(rows, n, sizeof *rows, peeked_cmp);
    size_t keep = SL_MIN(n, (size_t)max);
    for (size_t i = keep; i < n; i++) {
        free((void *)rows[i].m.body.p);
    }
    out->items = sl_xcalloc(keep > 0 ? keep : 1, sizeof *out->items);
    for (size_t i = 0; i < keep; i++) {
        out->items[i] = rows[i].m;
    }
    out->count = keep;
    free(rows);
    return SL_OK;
}

void part_peek_list_free(struct part_peek_list *l)
{
    for (size_t i = 0; i < l->count; i++) {
        free((void *)l->items[i].body.p);
    }
    free(l->items);
    *l = (struct part_peek_list){0};
}
