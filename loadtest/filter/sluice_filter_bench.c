/*
 * sluice_filter_bench.c -- the filtered-receive benchmark (docs/benchmarks.md,
 * "Filtered receives"), on the partitions engine's public API (part.h), no
 * HTTP: one queue indexing the attribute color (the engine side of
 * SluiceFilterKeys), filled with MESSAGES ready messages spread over the
 * partitions, one in MATCH_EVERY carrying color=red and the rest
 * color=blue; then, in the same run, unfiltered and filtered receives of
 * 10 (RECEIVES each, INFLIGHT outstanding, long leases: nothing comes
 * back), alternated ROUNDS times, and their rates.
 *
 * Rows read: the writer's own statements (part_sql_text: the unfiltered
 * PART_SQL_SELECT_READY and PART_SQL_FILTER_SCAN) run once more on each
 * partition file, read-only, for 10 messages, with SQLite's counters (VM
 * steps, full-scan steps) per message returned.
 *
 * The unfiltered path's price of the schema: the lease UPDATE and the
 * DELETE of rows without indexed pairs, timed with the filter trigger and
 * without it (dropped) on the same in-memory schema, nine pairs of runs,
 * the median ratio.
 *
 *   sluice-filter-bench DIR [MESSAGES [MATCH_EVERY [RECEIVES [PARTITIONS [ROUNDS]]]]]
 *
 * Prints one JSON object. Bounded by MESSAGES and RECEIVES; DIR (made
 * fresh by the caller) is left for inspection.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sqlite3.h>
#include <uv.h>

#include "part.h"

#define MAX_PARTS 64
#define INFLIGHT 8
#define BODY "a message body of about sixty bytes, as a small job would have"

enum phase { FILL, RECEIVE, RECEIVE_FILTERED };

struct bench {
    uv_loop_t loop;
    struct part_engine *e;
    struct part_client *c;
    uint64_t q;
    uint32_t nparts;
    uint32_t parts[MAX_PARTS];
    uint64_t match_every;
    enum phase phase;
    uint64_t issued, target, got;
    uint32_t outstanding;
    int failures;
};

static const struct part_filter_pair RED = {{"color", 5}, {"red", 3}};
static const struct part_filter_pair BLUE = {{"color", 5}, {"blue", 4}};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void issue(struct bench *b);

static void on_done(struct part_cookie ck, int status, const struct part_result *res)
{
    struct bench *b = ck.ptr;
    b->outstanding--;
    if (status != SL_OK) {
        b->failures++;
    }
    b->got += res->message_count;
    issue(b);
}

/* One job: 10 messages sent to the next partition, or a receive of 10. */
static int submit(struct bench *b)
{
    struct part_cookie ck = {.ptr = b};
    if (b->phase == FILL) {
        struct part_send_entry en[10];
        for (int i = 0; i < 10; i++) {
            uint64_t n = b->issued * 10 + (uint64_t)i;
            en[i] = (struct part_send_entry){.body = SL_SLICE_LIT(BODY),
                                             .delay_s = 0,
                                             .filters = n % b->match_every == 0 ? &RED : &BLUE,
                                             .filter_count = 1};
        }
        return part_send(b->c, b->q, (uint32_t)(b->issued % b->nparts), en, 10, ck, on_done);
    }
    struct part_receive_req req = {.queue_id = b->q,
                                   .partitions = b->parts,
                                   .partition_count = b->nparts,
                                   .max_messages = 10,
                                   .visibility_s = 43200};
    if (b->phase == RECEIVE_FILTERED) {
        req.filter = &RED;
        req.filter_count = 1;
    }
    return part_receive(b->c, &req, ck, on_done, NULL);
}

/* Keeps INFLIGHT jobs outstanding until target are issued. */
static void issue(struct bench *b)
{
    while (b->outstanding < INFLIGHT && b->issued < b->target) {
        if (submit(b) != SL_OK) {
            b->failures++;
            b->target = b->issued;
            return;
        }
        b->outstanding++;
        b->issued++;
    }
}

static void on_created(struct part_cookie ck, int status, const struct part_result *res)
{
    struct bench *b = ck.ptr;
    b->outstanding = 0;
    if (status != SL_OK || res->queue == NULL) {
        fprintf(stderr, "create: %d\n", status);
        exit(1);
    }
    b->q = res->queue->id;
}

/* Runs jobs jobs of the phase; the seconds they took. */
static double run_phase(struct bench *b, enum phase phase, uint64_t jobs)
{
    b->phase = phase;
    b->issued = 0;
    b->got = 0;
    b->target = jobs;
    double t0 = now_s();
    issue(b);
    while (b->outstanding > 0) {
        uv_run(&b->loop, UV_RUN_ONCE);
    }
    return now_s() - t0;
}

struct steps {
    int64_t vm;
    int64_t fullscan;
    int64_t rows;
};

/* The writer's statement which, bound as a receive of 10 from the main
 * lane binds it, on every partition file; SQLite's counters summed. */
static void count_steps(const char *dir, uint32_t nparts, uint64_t q, enum part_sql which,
                        struct steps *out)
{
    *out = (struct steps){0};
    for (uint32_t p = 0; p < nparts; p++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/part-%04u.db", dir, p);
        sqlite3 *db = NULL;
        sqlite3_stmt *st = NULL;
        if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK ||
            sqlite3_prepare_v2(db, part_sql_text(which), -1, &st, NULL) != SQLITE_OK) {
            fprintf(stderr, "%s: %s\n", path, sqlite3_errmsg(db));
            exit(1);
        }
        sqlite3_bind_int64(st, 1, (sqlite3_int64)q);
        if (which == PART_SQL_FILTER_SCAN) {
            sqlite3_bind_text(st, 2, "color", -1, SQLITE_STATIC);
            sqlite3_bind_text(st, 3, "red", -1, SQLITE_STATIC);
            sqlite3_bind_int(st, 4, PART_LANE_MAIN);
            sqlite3_bind_int(st, 11, 10);
        } else {
            sqlite3_bind_int(st, 2, 10);
            sqlite3_bind_int(st, 3, PART_LANE_MAIN);
        }
        while (sqlite3_step(st) == SQLITE_ROW) {
            out->rows++;
        }
        out->vm += sqlite3_stmt_status(st, SQLITE_STMTSTATUS_VM_STEP, 0);
        out->fullscan += sqlite3_stmt_status(st, SQLITE_STMTSTATUS_FULLSCAN_STEP, 0);
        sqlite3_finalize(st);
        sqlite3_close(db);
    }
}

static void exec_or_die(sqlite3 *db, const char *sql)
{
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        fprintf(stderr, "%s: %s\n", sql, msg);
        exit(1);
    }
}

/* Seconds to lease, then delete, n rows without indexed pairs (one
 * transaction each, as a writer's batch), with or without the filter
 * trigger. */
static void trigger_cost(int n, bool triggers, double *lease_s, double *delete_s)
{
    sqlite3 *db = NULL;
    sqlite3_open(":memory:", &db);
    exec_or_die(db, part_sql_text(PART_SQL_SCHEMA));
    if (!triggers) {
        exec_or_die(db, "DROP TRIGGER msg_filter_sync;");
    }
    char fill[512];
    snprintf(fill, sizeof fill,
             "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM n WHERE i<%d)"
             " INSERT INTO msg(queue_id, state, priority, visible_at, expires_at, sent_at,"
             " message_id) SELECT 1, 1, i, 0, 0, i, 'm'||i FROM n;"
             "INSERT INTO msg_body(id, body) SELECT id, 'x' FROM msg;",
             n);
    exec_or_die(db, fill);
    sqlite3_stmt *lease = NULL, *del = NULL;
    sqlite3_prepare_v2(db, part_sql_text(PART_SQL_LEASE), -1, &lease, NULL);
    sqlite3_prepare_v2(db, part_sql_text(PART_SQL_DELETE), -1, &del, NULL);
    sqlite3_stmt *sts[2] = {lease, del};
    double *outs[2] = {lease_s, delete_s};
    for (int k = 0; k < 2; k++) {
        double t0 = now_s();
        exec_or_die(db, "BEGIN");
        for (int i = 1; i <= n; i++) {
            sqlite3_reset(sts[k]);
            sqlite3_bind_int64(sts[k], 1, i);
            if (k == 0) {
                sqlite3_bind_int64(sts[k], 2, 1000);
                sqlite3_bind_int64(sts[k], 3, 1000);
            }
            sqlite3_step(sts[k]);
        }
        exec_or_die(db, "COMMIT");
        *outs[k] = now_s() - t0;
    }
    sqlite3_finalize(lease);
    sqlite3_finalize(del);
    sqlite3_close(db);
}

static int dbl_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static uint64_t arg(int argc, char **argv, int i, uint64_t fallback)
{
    return argc > i ? strtoull(argv[i], NULL, 10) : fallback;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s DIR [MESSAGES [MATCH_EVERY [RECEIVES [PARTITIONS [ROUNDS]]]]]\n",
                argv[0]);
        return 2;
    }
    struct bench b = {0};
    uint64_t messages = arg(argc, argv, 2, 1000000);
    b.match_every = arg(argc, argv, 3, 100);
    uint64_t receives = arg(argc, argv, 4, 200);
    b.nparts = (uint32_t)arg(argc, argv, 5, 4);
    uint64_t rounds = arg(argc, argv, 6, 3);
    if (b.nparts == 0 || b.nparts > MAX_PARTS || b.match_every == 0 || messages < 10 ||
        rounds == 0) {
        fprintf(stderr, "bad arguments\n");
        return 2;
    }
    for (uint32_t p = 0; p < b.nparts; p++) {
        b.parts[p] = p;
    }
    uv_loop_init(&b.loop);
    struct part_options po = {
        .data_dir = argv[1], .partitions = b.nparts, .durability = PART_DURABILITY_OS};
    char err[512];
    if (part_engine_open(&po, &b.e, err, sizeof err) != SL_OK ||
        part_client_new(b.e, &b.loop, &b.c) != SL_OK) {
        fprintf(stderr, "open: %s\n", err);
        return 1;
    }
    struct part_queue_config cfg = part_queue_config_default();
    cfg.filtered = true;
    cfg.retention_s = 14 * 86400;
    b.phase = FILL;
    b.outstanding = 1;
    if (part_queue_create(b.c, "bench", "filtered", &cfg, NULL, 0, NULL, 0,
                          (struct part_cookie){.ptr = &b}, on_created) != SL_OK) {
        return 1;
    }
    while (b.outstanding > 0) {
        uv_run(&b.loop, UV_RUN_ONCE);
    }
    double fill_s = run_phase(&b, FILL, messages / 10);
    uint64_t stored = b.issued * 10;
    /* alternated, so that drift over the run falls on both alike */
    double recv_s = 0, filt_s = 0;
    uint64_t recv_got = 0, filt_got = 0;
    for (uint64_t r = 0; r < rounds; r++) {
        for (int k = 0; k < 2; k++) {
            bool filtered = (k == 0) == (r % 2 == 1);
            double s = run_phase(&b, filtered ? RECEIVE_FILTERED : RECEIVE, receives);
            *(filtered ? &filt_s : &recv_s) += s;
            *(filtered ? &filt_got : &recv_got) += b.got;
        }
    }
    struct steps plain, filt;
    count_steps(argv[1], b.nparts, b.q, PART_SQL_SELECT_READY, &plain);
    count_steps(argv[1], b.nparts, b.q, PART_SQL_FILTER_SCAN, &filt);
    part_client_close(b.c);
    uv_run(&b.loop, UV_RUN_DEFAULT);
    part_engine_close(b.e);
    uv_loop_close(&b.loop);
    /* Each pair measured back to back, in alternating order, the median of
     * their ratios: the machine's swings fall on both sides alike. */
    enum { PAIRS = 9 };
    double lease_ratio[PAIRS], delete_ratio[PAIRS];
    for (int i = 0; i < PAIRS; i++) {
        double l[2], d[2];
        for (int k = 0; k < 2; k++) {
            bool with = (k == 0) == (i % 2 == 0);
            trigger_cost(100000, with, &l[with ? 0 : 1], &d[with ? 0 : 1]);
        }
        lease_ratio[i] = l[0] / l[1];
        delete_ratio[i] = d[0] / d[1];
    }
    qsort(lease_ratio, PAIRS, sizeof lease_ratio[0], dbl_cmp);
    qsort(delete_ratio, PAIRS, sizeof delete_ratio[0], dbl_cmp);
    printf("{\"messages\": %llu, \"match_every\": %llu, \"partitions\": %u, \"failures\": %d,\n"
           " \"fill_msgs_per_s\": %.0f,\n"
           " \"unfiltered\": {\"messages\": %llu, \"seconds\": %.3f, \"msgs_per_s\": %.0f,"
           " \"vm_steps_per_msg\": %.1f, \"fullscan_steps\": %lld},\n"
           " \"filtered\": {\"messages\": %llu, \"seconds\": %.3f, \"msgs_per_s\": %.0f,"
           " \"vm_steps_per_msg\": %.1f, \"fullscan_steps\": %lld},\n"
           " \"rate_ratio\": %.3f,\n"
           " \"no_pairs_lease_ratio\": %.3f, \"no_pairs_delete_ratio\": %.3f}\n",
           (unsigned long long)stored, (unsigned long long)b.match_every, b.nparts, b.failures,
           (double)stored / fill_s, (unsigned long long)recv_got, recv_s, (double)recv_got / recv_s,
           (double)plain.vm / (double)(plain.rows ? plain.rows : 1), (long long)plain.fullscan,
           (unsigned long long)filt_got, filt_s, (double)filt_got / filt_s,
           (double)filt.vm / (double)(filt.rows ? filt.rows : 1), (long long)filt.fullscan,
           ((double)filt_got / filt_s) / ((double)recv_got / recv_s), lease_ratio[PAIRS / 2],
           delete_ratio[PAIRS / 2]);
    return b.failures == 0 ? 0 : 1;
}
