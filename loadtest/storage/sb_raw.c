/*
 * sb_raw.c -- the raw SQLite ceiling of the storage bench: the engine's
 * work done with plain SQLite calls and nothing else. P files, P threads
 * (one connection each, as the engine's writers), the SAME open flags,
 * pragmas, schema and statements as partitions/part_schema.c (taken from
 * part_sql_open_flags and part_sql_text, so they cannot drift), and
 * transactions as large as the engine's group commits were in
 * the same cell (its measured jobs per commit), so that the ratio
 * engine / ceiling is the cost of everything around SQLite: job queues,
 * copies, completions, counters, timers, receipt MACs, the client loop.
 *
 * Per transaction (BEGIN IMMEDIATE ... COMMIT), k jobs of the phase:
 *   send     opt->batch x (ST_INSERT + ST_INSERT_BODY)
 *   receive  ST_SELECT_READY LIMIT 10 (reading every column, copying the
 *            blobs as the engine does) + ST_LEASE per row
 *   delete   10 x (ST_ROW + ST_DELETE)
 *   cycle    groups of M messages, in two transactions as the engine's
 *            writer runs a group: the receive jobs of M messages, then
 *            the send jobs of M and the delete jobs of M, where the
 *            receive takes only rows that an
 *            EARLIER group committed and the delete only leases that an
 *            earlier group committed: what a queue must do, since a
 *            message is received only after its send was acknowledged
 *            (committed) and deleted only by a receipt that a committed
 *            receive handed out. Each message is thus written in three
 *            transactions, as in the engine. Sends are jobs of
 *            opt->cycle_send_batch messages, receives and deletes jobs of
 *            opt->cycle_take on average (10 and 10, as the engine's cycle,
 *            unless --ceiling-only sets them to what the gateway's round
 *            trip did), and M is what makes the jobs per commit k.
 * Under durability fsync a transaction of receives only (the receive phase,
 * the cycle's first) commits without the sync, as the engine's leases do.
 *   cycle, single-transaction bound (SB_CEIL_SINGLE_TXN, reported beside
 *            it): k/3 rounds whose receive and delete act on the rows sent
 *            in the same transaction, so each message is inserted, leased
 *            and deleted before one commit -- work no queue can do, kept
 *            as an upper bound.
 * After each commit, as the engine does: ST_HEAD for the queue, and a
 * RESTART checkpoint (the WAL is then rewritten from its start, not
 * truncated) once the WAL passed 2048 pages.
 *
 * Each phase also records the process's CPU (getrusage: the P threads,
 * while main() waits in pthread_join) and its write_bytes from
 * /proc/self/io, so that a message's cost below the gateway reads in
 * microseconds and disk bytes beside the gateway's own (loadtest/cost-bench).
 *
 * Threading: each thread owns its connection during a phase; main() opens
 * and closes them between phases.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "sb_int.h"

/* ---- the engine's own SQL (part_sql_text), so the ceiling cannot drift --- */

enum {
    ST_INSERT,
    ST_INSERT_BODY,
    ST_SELECT_READY,
    ST_LEASE,
    ST_ROW,
    ST_DELETE,
    ST_HEAD,
    ST_BEGIN,
    ST_COMMIT,
    ST_COUNT_
};

static const enum part_sql SQL_OF[ST_COUNT_] = {
    [ST_INSERT] = PART_SQL_INSERT,
    [ST_INSERT_BODY] = PART_SQL_INSERT_BODY,
    [ST_SELECT_READY] = PART_SQL_SELECT_READY,
    [ST_LEASE] = PART_SQL_LEASE,
    [ST_ROW] = PART_SQL_ROW,
    [ST_DELETE] = PART_SQL_DELETE,
    [ST_HEAD] = PART_SQL_HEAD,
    [ST_BEGIN] = PART_SQL_BEGIN,
    [ST_COMMIT] = PART_SQL_COMMIT,
};

#define CHECKPOINT_PAGES 2048                  /* the engine's default */
#define RETENTION_MS (4ull * 24 * 3600 * 1000) /* SQS default retention */
#define LEASE_MS (3600ull * 1000)              /* the bench's receive visibility */

/* ---- one partition file and its thread --------------------------------- */

struct raw_part {
    const struct sb_opts *opt;
    uint32_t index;
    sqlite3 *db;
    sqlite3_stmt *st[ST_COUNT_];
    int wal_pages;
    const char *body;
    char *scratch; /* receive copies the blobs here, as the engine copies them */
    int64_t *leased;
    size_t nleased;
    size_t leased_cap;
    size_t leased_next;
    /* the pipelined cycle: what earlier transactions committed */
    size_t leased_committed;  /* leased[0..this) were leased by a committed txn */
    uint64_t ready_committed; /* rows a committed txn sent, not yet received */
    uint64_t sent;            /* cycle: messages sent (the quota counts these) */
    int64_t committed_row;    /* the last row a committed txn inserted */
    bool fsync;               /* durability fsync */
    bool syncing;             /* the connection's synchronous is FULL */
    /* the running phase */
    pthread_t thread;
    enum sb_phase phase;
    bool single_txn; /* cycle: the single-transaction bound */
    uint32_t txn_jobs;
    double group_msgs;    /* the pipelined cycle: messages per group (mean) */
    double group_acc;     /* fractions of send jobs carried to the next group */
    double take_jobs_acc; /* of receive (and delete) jobs */
    double take_acc;      /* of messages per receive or delete job */
    uint64_t quota;
    uint64_t deadline_ns;
    uint64_t messages;
    uint64_t jobs;
    uint64_t commits;
    uint64_t errors;
    uint64_t end_ns;
};

static int wal_hook(void *arg, sqlite3 *db, const char *name, int pages)
{
    struct raw_part *rp = arg;
    rp->wal_pages = pages;
    return SQLITE_OK;
}

static bool step_done(struct raw_part *rp, sqlite3_stmt *st)
{
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE) {
        if (rp->errors++ == 0) {
            fprintf(stderr, "sluice-storage-bench: ceiling %u: %s\n", rp->index,
                    sqlite3_errmsg(rp->db));
        }
        return false;
    }
    return true;
}

static sqlite3_stmt *stmt(struct raw_part *rp, int which)
{
    sqlite3_stmt *st = rp->st[which];
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    return st;
}

static uint64_t queue_of(const struct raw_part *rp)
{
    /* The single-transaction bound has a queue of its own, so that rows
     * the pipelined cycle left ready are not what its receives take. */
    return (rp->single_txn ? 1000000 : 0) + rp->index + 1;
}

static uint64_t job_send(struct raw_part *rp, uint32_t n)
{
    uint64_t now = sl_wall_ms();
    uint8_t rnd[PART_MAX_BATCH][16]; /* one RAND_bytes call per job, as part_send */
    SL_ASSERT(n <= PART_MAX_BATCH);
    sl_random_bytes(rnd, n * sizeof rnd[0]);
    for (uint32_t i = 0; i < n; i++) {
        char mid[PART_MSG_ID_LEN + 1];
        sl_uuid4_from(rnd[i], mid);
        sqlite3_stmt *st = stmt(rp, ST_INSERT);
        sqlite3_bind_int64(st, 1, (sqlite3_int64)queue_of(rp));
        sqlite3_bind_int(st, 2, 1);
        sqlite3_bind_int64(st, 3, (sqlite3_int64)now);
        sqlite3_bind_int64(st, 4, (sqlite3_int64)now);
        sqlite3_bind_int64(st, 5, (sqlite3_int64)(now + RETENTION_MS));
        sqlite3_bind_int64(st, 6, (sqlite3_int64)now);
        sqlite3_bind_text(st, 7, mid, -1, SQLITE_STATIC);
        sqlite3_bind_int(st, 12, 0); /* main lane */
        sqlite3_bind_blob(st, 13, SB_DIGESTS, SB_DIGESTS_LEN, SQLITE_STATIC);
        if (!step_done(rp, st)) {
            return i;
        }
        st = stmt(rp, ST_INSERT_BODY);
        sqlite3_bind_int64(st, 1, sqlite3_last_insert_rowid(rp->db));
        sqlite3_bind_blob(st, 2, rp->body, (int)rp->opt->body_size, SQLITE_STATIC);
        sqlite3_bind_blob(st, 3, "", 0, SQLITE_STATIC);
        sqlite3_bind_blob(st, 4, "", 0, SQLITE_STATIC);
        if (!step_done(rp, st)) {
            return i;
        }
    }
    return n;
}

static void keep_leased(struct raw_part *rp, int64_t id)
{
    if (rp->nleased == rp->leased_cap) {
        rp->leased_cap = rp->leased_cap ? rp->leased_cap * 2 : 1024;
        rp->leased = sl_xrealloc(rp->leased, rp->leased_cap * sizeof *rp->leased);
    }
    rp->leased[rp->nleased++] = id;
}

/* Returns the messages leased (0: the partition has none ready). */
static uint64_t job_receive(struct raw_part *rp, uint32_t max)
{
    uint64_t now = sl_wall_ms();
    int64_t ids[PART_MAX_BATCH];
    size_t n = 0;
    sqlite3_stmt *st = stmt(rp, ST_SELECT_READY);
    sqlite3_bind_int64(st, 1, (sqlite3_int64)queue_of(rp));
    sqlite3_bind_int(st, 2, (int)max);
    sqlite3_bind_int(st, 3, 0); /* main lane */
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW && n < PART_MAX_BATCH) {
        ids[n] = sqlite3_column_int64(st, 0);
        if (rp->phase == SB_CYCLE && !rp->single_txn && ids[n] > rp->committed_row) {
            /* the pipelined cycle would be the single-transaction one */
            if (rp->errors++ == 0) {
                fprintf(stderr, "sluice-storage-bench: ceiling %u: received an uncommitted row\n",
                        rp->index);
            }
        }
        n++;
        size_t off = 0;
        const unsigned char *mid = sqlite3_column_text(st, 1);
        memcpy(rp->scratch, mid ? (const char *)mid : "", mid ? strlen((const char *)mid) : 0);
        for (int c = 2; c <= 4; c++) {
            size_t len = (size_t)sqlite3_column_bytes(st, c);
            const void *p = sqlite3_column_blob(st, c);
            if (p != NULL && off + len <= (size_t)rp->opt->body_size + 64) {
                memcpy(rp->scratch + off, p, len);
                off += len;
            }
        }
        (void)sqlite3_column_text(st, 5);
        for (int c = 6; c <= 10; c++) {
            (void)sqlite3_column_int64(st, c);
        }
    }
    sqlite3_reset(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
        rp->errors++;
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        sqlite3_stmt *ls = stmt(rp, ST_LEASE);
        sqlite3_bind_int64(ls, 1, ids[i]);
        sqlite3_bind_int64(ls, 2, (sqlite3_int64)(now + LEASE_MS));
        sqlite3_bind_int64(ls, 3, (sqlite3_int64)now);
        if (!step_done(rp, ls)) {
            return i;
        }
        keep_leased(rp, ids[i]);
    }
    return n;
}

/* Deletes up to max leased rows, oldest lease first, of leased[0..upto). */
static uint64_t job_delete(struct raw_part *rp, size_t upto, uint32_t max)
{
    uint64_t done = 0;
    while (done < max && rp->leased_next < upto) {
        int64_t id = rp->leased[rp->leased_next++];
        sqlite3_stmt *st = stmt(rp, ST_ROW);
        sqlite3_bind_int64(st, 1, id);
        int rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
            for (int c = 0; c < 5; c++) {
                (void)sqlite3_column_int64(st, c);
            }
        }
        sqlite3_reset(st);
        if (rc != SQLITE_ROW) {
            rp->errors++;
            return done;
        }
        st = stmt(rp, ST_DELETE);
        sqlite3_bind_int64(st, 1, id);
        if (!step_done(rp, st)) {
            return done;
        }
        done++;
    }
    return done;
}

static void after_commit(struct raw_part *rp)
{
    sqlite3_stmt *st = stmt(rp, ST_HEAD);
    sqlite3_bind_int64(st, 1, (sqlite3_int64)queue_of(rp));
    sqlite3_bind_int(st, 2, 0); /* main lane */
    (void)sqlite3_step(st);
    sqlite3_reset(st);
    if (rp->wal_pages >= CHECKPOINT_PAGES) {
        sqlite3_wal_checkpoint_v2(rp->db, NULL, SQLITE_CHECKPOINT_RESTART, NULL, NULL);
        rp->wal_pages = 0;
        sqlite3_stmt *fl = NULL;
        if (sqlite3_prepare_v2(rp->db, "PRAGMA freelist_count", -1, &fl, NULL) == SQLITE_OK &&
            sqlite3_step(fl) == SQLITE_ROW && sqlite3_column_int64(fl, 0) > 1024) {
            sqlite3_exec(rp->db, "PRAGMA incremental_vacuum(512)", NULL, NULL, NULL);
        }
        sqlite3_finalize(fl);
    }
}

/* As the engine's writer (part_writer.c, split_leases): under durability
 * fsync a commit of leases only does not sync, every other commit does. */
static bool set_sync(struct raw_part *rp, bool sync)
{
    if (!rp->fsync || rp->syncing == sync) {
        return true;
    }
    const char *sql = part_sql_text(sync ? PART_SQL_SYNC_FULL : PART_SQL_SYNC_NORMAL);
    if (sqlite3_exec(rp->db, sql, NULL, NULL, NULL) != SQLITE_OK) {
        rp->errors++;
        return false;
    }
    rp->syncing = sync;
    return true;
}

static bool commit(struct raw_part *rp)
{
    if (!step_done(rp, stmt(rp, ST_COMMIT))) {
        return false;
    }
    rp->commits++;
    after_commit(rp);
    return true;
}

/* Messages the next receive (or delete) job of the cycle takes: cycle_take
 * on average, whole messages each. */
static uint32_t take_next(struct raw_part *rp)
{
    rp->take_acc += rp->opt->cycle_take;
    uint32_t n = (uint32_t)rp->take_acc;
    rp->take_acc -= n;
    return SL_MAX(1u, SL_MIN(n, (uint32_t)PART_MAX_BATCH));
}

/* Whole jobs out of a mean: adds mean to *acc, returns its whole part and
 * keeps the fraction for the next group. */
static uint64_t whole(double *acc, double mean)
{
    *acc += mean;
    uint64_t n = (uint64_t)*acc;
    *acc -= (double)n;
    return n;
}

/* One group of the pipelined cycle, two transactions as the engine runs a
 * group: first the receive jobs of the group's messages (rows that earlier
 * groups committed), without the sync; then the send jobs of as many new
 * messages and as many delete jobs (of leases that earlier groups
 * committed), with it. A group's jobs are whole: group_msgs / send_batch
 * sends and group_msgs / take receives and deletes, fractions carried to
 * the next group, so that over the phase the jobs per commit are what
 * run_phase was asked for. Returns false when the phase has nothing left
 * to do here. */
static bool cycle_group(struct raw_part *rp)
{
    uint64_t before = rp->jobs;
    uint64_t nsend = whole(&rp->group_acc, rp->group_msgs / rp->opt->cycle_send_batch);
    uint64_t ntake = whole(&rp->take_jobs_acc, rp->group_msgs / rp->opt->cycle_take);
    if (rp->ready_committed > 0 && ntake > 0) {
        if (!set_sync(rp, false) || !step_done(rp, stmt(rp, ST_BEGIN))) {
            return false;
        }
        for (uint64_t j = 0; j < ntake && rp->ready_committed > 0; j++) {
            uint32_t max = (uint32_t)SL_MIN(take_next(rp), rp->ready_committed);
            uint64_t got = job_receive(rp, max);
            rp->jobs++;
            rp->ready_committed -= SL_MIN(got, rp->ready_committed);
        }
        if (!commit(rp)) {
            return false;
        }
    }
    if (!set_sync(rp, true) || !step_done(rp, stmt(rp, ST_BEGIN))) {
        return false;
    }
    uint64_t txn_sent = 0;
    for (uint64_t j = 0; j < nsend && rp->sent + txn_sent < rp->quota; j++) {
        uint64_t n = SL_MIN((uint64_t)rp->opt->cycle_send_batch, rp->quota - rp->sent - txn_sent);
        txn_sent += job_send(rp, (uint32_t)n);
        rp->jobs++;
    }
    for (uint64_t j = 0;
         j < ntake && rp->leased_next < rp->leased_committed && rp->messages < rp->quota; j++) {
        rp->messages += job_delete(rp, rp->leased_committed, take_next(rp));
        rp->jobs++;
    }
    if (!commit(rp)) {
        return false;
    }
    /* now acknowledged: receivable and deletable by later groups */
    rp->sent += txn_sent;
    rp->ready_committed += txn_sent;
    rp->leased_committed = rp->nleased;
    rp->committed_row = sqlite3_last_insert_rowid(rp->db);
    /* A group whose fractions came to no job is not the end of the phase;
     * the phase's deadline bounds one that could never progress. */
    bool left = rp->sent < rp->quota || rp->ready_committed > 0 || rp->leased_next < rp->nleased;
    return (rp->jobs > before || left) && rp->errors == 0;
}

/* One transaction of the phase. Returns false when the phase has nothing
 * left to do here. */
static bool one_txn(struct raw_part *rp)
{
    if (rp->phase == SB_CYCLE && !rp->single_txn) {
        return cycle_group(rp);
    }
    if (!set_sync(rp, rp->phase != SB_RECEIVE) || !step_done(rp, stmt(rp, ST_BEGIN))) {
        return false;
    }
    bool more = true;
    /* the single-transaction cycle's txn_jobs counts rounds of three jobs */
    for (uint32_t j = 0; j < rp->txn_jobs && more && rp->messages < rp->quota; j++) {
        uint64_t left = rp->quota - rp->messages;
        uint64_t got = 0;
        switch (rp->phase) {
        case SB_SEND:
            got = job_send(rp, (uint32_t)SL_MIN(rp->opt->batch, left));
            rp->jobs++;
            break;
        case SB_RECEIVE:
            got = job_receive(rp, (uint32_t)SL_MIN(PART_MAX_BATCH, left));
            more = got > 0;
            rp->jobs += got > 0;
            break;
        case SB_DELETE:
            got = job_delete(rp, rp->nleased, PART_MAX_BATCH);
            more = got > 0;
            rp->jobs += got > 0;
            break;
        case SB_CYCLE: /* all three steps on the same rows, one commit */
            job_send(rp, (uint32_t)SL_MIN(PART_MAX_BATCH, left));
            job_receive(rp, PART_MAX_BATCH);
            got = job_delete(rp, rp->nleased, PART_MAX_BATCH);
            rp->jobs += 3;
            break;
        default:
            break;
        }
        rp->messages += got;
    }
    return commit(rp) && more && rp->errors == 0;
}

static void *raw_main(void *arg)
{
    struct raw_part *rp = arg;
    while (rp->messages < rp->quota && sl_mono_ns() < rp->deadline_ns && one_txn(rp)) {
    }
    rp->end_ns = sl_mono_ns();
    return NULL;
}

/* ---- open / close ------------------------------------------------------ */

static int raw_open(struct raw_part *rp, const char *dir, enum part_durability dur)
{
    char path[4096 + 32];
    snprintf(path, sizeof path, "%s/raw-%04u.db", dir, rp->index);
    if (sqlite3_open_v2(path, &rp->db, part_sql_open_flags(), NULL) != SQLITE_OK) {
        goto fail;
    }
    const char *pragmas =
        part_sql_text(dur == PART_DURABILITY_FSYNC ? PART_SQL_PRAGMAS_FSYNC : PART_SQL_PRAGMAS_OS);
    /* --page-size: what another page size would write (the file is new,
     * so the pragma takes before the WAL and the schema exist) */
    char page_size[48];
    snprintf(page_size, sizeof page_size, "PRAGMA page_size=%u", rp->opt->page_size);
    if ((rp->opt->page_size > 0 &&
         sqlite3_exec(rp->db, page_size, NULL, NULL, NULL) != SQLITE_OK) ||
        sqlite3_exec(rp->db, pragmas, NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_exec(rp->db, part_sql_text(PART_SQL_SCHEMA), NULL, NULL, NULL) != SQLITE_OK) {
        goto fail;
    }
    for (int i = 0; i < ST_COUNT_; i++) {
        if (sqlite3_prepare_v3(rp->db, part_sql_text(SQL_OF[i]), -1, SQLITE_PREPARE_PERSISTENT,
                               &rp->st[i], NULL) != SQLITE_OK) {
            goto fail;
        }
    }
    sqlite3_wal_hook(rp->db, wal_hook, rp);
    rp->fsync = rp->syncing = dur == PART_DURABILITY_FSYNC;
    rp->scratch = sl_xmalloc((size_t)rp->opt->body_size + 64 + PART_MSG_ID_LEN);
    return SL_OK;
fail:
    fprintf(stderr, "sluice-storage-bench: ceiling %s: %s\n", path,
            rp->db ? sqlite3_errmsg(rp->db) : "cannot open");
    return SL_EIO;
}

static void raw_close(struct raw_part *rp)
{
    for (int i = 0; i < ST_COUNT_; i++) {
        sqlite3_finalize(rp->st[i]);
    }
    sqlite3_close(rp->db);
    free(rp->leased);
    free(rp->scratch);
}

static bool phase_needed(const struct sb_opts *opt, enum sb_phase ph)
{
    if (ph == SB_SEND) {
        return opt->want[SB_SEND] || opt->want[SB_RECEIVE] || opt->want[SB_DELETE];
    }
    if (ph == SB_RECEIVE) {
        return opt->want[SB_RECEIVE] || opt->want[SB_DELETE];
    }
    return opt->want[ph];
}

/* Runs one phase on every partition's thread; per is the engine's
 * measured jobs per commit in that phase. */
static int run_phase(struct raw_part *parts, uint32_t np, enum sb_phase ph, bool single_txn,
                     double per, struct sb_measure *m)
{
    const struct sb_opts *opt = parts[0].opt;
    /* transaction size in jobs, as the engine's; the cycle's in rounds of
     * three jobs (send, receive, delete): one commit a round for the
     * single-transaction bound, two (leases, then the rest) otherwise */
    double unit = ph != SB_CYCLE ? 1.0 : single_txn ? 3.0 : 1.5;
    uint32_t txn = per >= unit ? (uint32_t)lround(per / unit) : 1;
    /* The pipelined cycle's group of M messages is 1 + 2 transactions'
     * worth of jobs: M / send_batch sends, M / take receives and as many
     * deletes, in two commits; so M = 2 per / (1 / send_batch + 2 / take),
     * at least one message, fractions carried from group to group. */
    double jobs_per_msg = 1.0 / opt->cycle_send_batch + 2.0 / opt->cycle_take;
    double group = SL_MAX(1.0, 2.0 * per / jobs_per_msg);
    double cpu0 = sb_cpu_s();
    int64_t wb0 = sb_write_bytes();
    uint64_t t0 = sl_mono_ns();
    uint64_t deadline = t0 + (uint64_t)(opt->seconds * 1e9);
    for (uint32_t p = 0; p < np; p++) {
        struct raw_part *rp = &parts[p];
        rp->phase = ph;
        rp->single_txn = single_txn;
        rp->txn_jobs = txn;
        rp->group_msgs = group;
        rp->group_acc = rp->take_jobs_acc = rp->take_acc = 0.0;
        rp->quota = opt->count / np + (p == 0 ? opt->count % np : 0);
        rp->deadline_ns = deadline;
        rp->messages = rp->jobs = rp->commits = rp->errors = 0;
        if (ph == SB_CYCLE) { /* leases of earlier phases stay in flight, out of the way */
            rp->leased_next = rp->nleased;
        }
        rp->leased_committed = rp->nleased;
        rp->ready_committed = rp->sent = 0;
        rp->committed_row = sqlite3_last_insert_rowid(rp->db);
        pthread_create(&rp->thread, NULL, raw_main, rp);
    }
    bool pipelined = ph == SB_CYCLE && !single_txn;
    *m = (struct sb_measure){.ran = true,
                             .per_commit = pipelined ? group * jobs_per_msg / 2.0 : txn * unit};
    uint64_t last = t0;
    for (uint32_t p = 0; p < np; p++) {
        pthread_join(parts[p].thread, NULL);
        m->messages += parts[p].messages;
        m->jobs += parts[p].jobs;
        m->commits += parts[p].commits;
        m->errors += parts[p].errors;
        last = SL_MAX(last, parts[p].end_ns);
    }
    m->seconds = (double)(last - t0) / 1e9;
    m->cpu_s = sb_cpu_s() - cpu0;
    int64_t wb1 = sb_write_bytes();
    m->write_bytes = wb0 >= 0 && wb1 >= 0 ? wb1 - wb0 : -1;
    if (pipelined && m->commits > 0) { /* what the groups did, whole jobs */
        m->per_commit = (double)m->jobs / (double)m->commits;
    }
    return m->errors > 0 ? SL_EIO : SL_OK;
}

int sb_raw_cell(const struct sb_opts *opt, struct sb_cell *cell)
{
    uint32_t np = cell->partitions;
    char *dir = sb_tempdir(opt->tmpdir, "ceiling");
    if (dir == NULL) {
        return SL_EIO;
    }
    char *body = sl_xmalloc(opt->body_size + 1);
    for (uint32_t i = 0; i < opt->body_size; i++) {
        body[i] = (char)('a' + i % 26);
    }
    struct raw_part *parts = sl_xcalloc(np, sizeof *parts);
    int rc = SL_OK;
    for (uint32_t p = 0; p < np && rc == SL_OK; p++) {
        parts[p].opt = opt;
        parts[p].index = p;
        parts[p].body = body;
        rc = raw_open(&parts[p], dir, cell->durability);
    }
    for (int ph = 0; rc == SL_OK && ph < SB_PHASES_; ph++) {
        if (!phase_needed(opt, (enum sb_phase)ph)) {
            continue;
        }
        double per = opt->jobs_per_commit > 0 ? opt->jobs_per_commit : cell->engine[ph].per_commit;
        rc = run_phase(parts, np, (enum sb_phase)ph, false, per, &cell->ceiling[ph]);
        if (rc == SL_OK && ph == SB_CYCLE && !opt->ceiling_only) {
            rc = run_phase(parts, np, SB_CYCLE, true, per, &cell->ceiling_single_txn);
        }
    }
    for (uint32_t p = 0; p < np; p++) {
        raw_close(&parts[p]);
    }
    free(parts);
    free(body);
    sb_rmdir(dir);
    free(dir);
    return rc;
}
