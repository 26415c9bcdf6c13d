/*
 * test_part_filter.c -- filtered receives and the filtered depth
 * (docs/api.md, "Filtered receives"): matching rows only, in the queue's
 * order, AND of the pairs, counts by state, leases, visibility, DLQ moves
 * and restarts keeping the index in step with the rows, long polls, and
 * the index doing the work (EXPLAIN QUERY PLAN and SQLite's step counts on
 * the very statement a writer prepares).
 */
#include "part_test_util.h"

struct pair {
    const char *key;
    const char *value;
};

/* Sends body to partition p with up to four indexed pairs (a NULL key
 * ends the list), priority prio when has_prio. */
static void send_f(struct t_env *t, uint64_t q, uint32_t p, const char *body,
                   const struct pair *pairs, bool has_prio, int64_t prio)
{
    struct part_filter_pair fp[4];
    size_t n = 0;
    for (; n < 4 && pairs != NULL && pairs[n].key != NULL; n++) {
        fp[n] =
            (struct part_filter_pair){sl_slice_cstr(pairs[n].key), sl_slice_cstr(pairs[n].value)};
    }
    struct part_send_entry en = {.body = sl_slice_cstr(body),
                                 .delay_s = -1,
                                 .has_priority = has_prio,
                                 .priority = prio,
                                 .filters = fp,
                                 .filter_count = n};
    struct t_done d;
    assert_int_equal(part_send(t->c, q, p, &en, 1, t_ck(&d), t_on_done), SL_OK);
    t_wait(t, &d);
    assert_int_equal(d.status, SL_OK);
}

static size_t to_pairs(const struct pair *f, struct part_filter_pair *out)
{
    size_t n = 0;
    for (; n < PART_FILTER_MAX && f[n].key != NULL; n++) {
        out[n] = (struct part_filter_pair){sl_slice_cstr(f[n].key), sl_slice_cstr(f[n].value)};
    }
    return n;
}

/* A filtered receive of up to max, leases of vis seconds; the bodies
 * joined by ',' into got. */
static void recv_f(struct t_env *t, uint64_t q, const struct pair *f, uint32_t max, int32_t vis,
                   struct t_done *r, char *got, size_t cap)
{
    struct part_filter_pair fp[PART_FILTER_MAX];
    size_t n = to_pairs(f, fp);
    t_recv_with(t,
                (struct part_receive_req){.queue_id = q,
                                          .max_messages = max,
                                          .visibility_s = vis,
                                          .filter = fp,
                                          .filter_count = n},
                r);
    assert_int_equal(r->status, SL_OK);
    got[0] = '\0';
    for (size_t i = 0; i < r->count; i++) {
        size_t len = strlen(got);
        snprintf(got + len, cap - len, "%s%s", i > 0 ? "," : "", r->msgs[i].body);
    }
}

static void depth(struct t_env *t, uint64_t q, const struct pair *f, int64_t *ready,
                  int64_t *inflight)
{
    struct part_filter_pair fp[PART_FILTER_MAX];
    size_t n = to_pairs(f, fp);
    assert_int_equal(part_filter_depth(t->e, q, fp, n, ready, inflight, NULL), SL_OK);
}

static const struct pair RED[] = {{"color", "red"}, {NULL, NULL}};
static const struct pair BLUE[] = {{"color", "blue"}, {NULL, NULL}};
static const struct pair RED_S[] = {{"color", "red"}, {"size", "S"}, {NULL, NULL}};
static const struct pair RED_L[] = {{"color", "red"}, {"size", "L"}, {NULL, NULL}};

/* Only matching messages, in (priority, send) order within a partition,
 * with AND across pairs; unfiltered receives still see everything. */
static void test_filter_receive_order_and_match(void **state)
{
    struct t_env *t = *state;
    struct part_queue_config cfg = part_queue_config_default();
    cfg.filtered = true;
    cfg.priority_order = true;
    uint64_t q = t_create(t, "acme", "f", &cfg);
    send_f(t, q, 0, "r30", RED_S, true, 30);
    send_f(t, q, 0, "b10", (const struct pair[]){{"color", "blue"}, {"size", "S"}, {NULL, NULL}},
           true, 10);
    send_f(t, q, 0, "r10", RED_L, true, 10);
    send_f(t, q, 0, "r20", RED_S, true, 20);
    send_f(t, q, 0, "none", NULL, true, 1);
    struct t_done r;
    char got[128];
    recv_f(t, q, RED_S, 10, 300, &r, got, sizeof got);
    assert_string_equal(got, "r20,r30");
    recv_f(t, q, RED, 10, 300, &r, got, sizeof got);
    assert_string_equal(got, "r10");
    recv_f(t, q, RED, 10, 300, &r, got, sizeof got);
    assert_string_equal(got, ""); /* all red are in flight */
    /* a pair no message has, and a key never indexed */
    recv_f(t, q, (const struct pair[]){{"color", "green"}, {NULL, NULL}}, 10, 300, &r, got,
           sizeof got);
    assert_string_equal(got, "");
    t_recv(t, q, 10, 300, &r);
    assert_int_equal(r.count, 2);
    assert_string_equal(r.msgs[0].body, "none");
    assert_string_equal(r.msgs[1].body, "b10");
}

/* Ready and in-flight counts follow leases, visibility changes and
 * deletes; other queues' and other values' messages do not count. */
static void test_filter_depth_counts(void **state)
{
    struct t_env *t = *state;
    struct part_queue_config cfg = part_queue_config_default();
    cfg.filtered = true;
    uint64_t q = t_create(t, "acme", "f", &cfg);
    uint64_t other = t_create(t, "acme", "g", &cfg);
    for (uint32_t i = 0; i < 6; i++) {
        send_f(t, q, i % 2, "red", RED, false, 0);
        send_f(t, q, i % 2, "blue", BLUE, false, 0);
    }
    send_f(t, other, 0, "red", RED, false, 0);
    int64_t ready, inflight;
    depth(t, q, RED, &ready, &inflight);
    assert_int_equal(ready, 6);
    assert_int_equal(inflight, 0);
    struct t_done r;
    char got[128];
    recv_f(t, q, RED, 4, 300, &r, got, sizeof got);
    assert_int_equal(r.count, 4);
    depth(t, q, RED, &ready, &inflight);
    assert_int_equal(ready, 2);
    assert_int_equal(inflight, 4);
    struct t_done d;
    t_delete(t, q, r.msgs[0].receipt, &d);
    t_chvis(t, q, r.msgs[1].receipt, 0, &d);
    t_sync(t);
    depth(t, q, RED, &ready, &inflight);
    assert_int_equal(ready, 3);
    assert_int_equal(inflight, 2);
    /* leases that run out come back */
    t_advance(t, 301000);
    t_sync(t);
    depth(t, q, RED, &ready, &inflight);
    assert_int_equal(ready, 5);
    assert_int_equal(inflight, 0);
    depth(t, q, BLUE, &ready, &inflight);
    assert_int_equal(ready, 6);
    /* a bad filter: nothing counted */
    struct part_filter_pair dup[2] = {{SL_SLICE_LIT("color"), SL_SLICE_LIT("red")},
                                      {SL_SLICE_LIT("color"), SL_SLICE_LIT("blue")}};
    assert_int_equal(part_filter_depth(t->e, q, dup, 2, &ready, &inflight, NULL), SL_EINVAL);
    assert_int_equal(part_filter_depth(t->e, q, dup, 0, &ready, &inflight, NULL), SL_EINVAL);
}

/* Over maxReceiveCount a filtered receive moves the message to the DLQ,
 * where the same filter counts it, and a redrive back to its source,
 * where the filter finds it again; a purge leaves no index entry. */
static void test_filter_dlq_and_purge(void **state)
{
    struct t_env *t = *state;
    struct part_queue_config dcfg = part_queue_config_default();
    dcfg.filtered = true;
    uint64_t dlq = t_create(t, "acme", "dlq", &dcfg);
    struct part_queue_config cfg = part_queue_config_default();
    cfg.filtered = true;
    cfg.dlq_target_id = dlq;
    cfg.max_receive_count = 1;
    uint64_t q = t_create(t, "acme", "f", &cfg);
    send_f(t, q, 0, "r1", RED, false, 0);
    struct t_done r;
    char got[64];
    recv_f(t, q, RED, 1, 0, &r, got, sizeof got); /* lease of 0 s: ready again */
    assert_string_equal(got, "r1");
    t_sync(t);
    recv_f(t, q, RED, 1, 300, &r, got, sizeof got);
    assert_string_equal(got, ""); /* moved, not delivered */
    int64_t ready, inflight;
    depth(t, dlq, RED, &ready, &inflight);
    assert_int_equal(ready, 1);
    /* a redrive back to its source: found there by the same filter */
    struct part_move_req req = {.queue_id = dlq, .partition = 0, .max_messages = 10};
    struct t_done m;
    assert_int_equal(part_move(t->c, &req, t_ck(&m), t_on_done), SL_OK);
    t_wait(t, &m);
    assert_int_equal(m.status, SL_OK);
    depth(t, dlq, RED, &ready, &inflight);
    assert_int_equal(ready + inflight, 0);
    recv_f(t, q, RED, 1, 300, &r, got, sizeof got);
    assert_string_equal(got, "r1");
    depth(t, q, RED, &ready, &inflight);
    assert_int_equal(inflight, 1);
    send_f(t, dlq, 1, "r2", RED, false, 0);
    struct t_done d;
    assert_int_equal(part_purge(t->c, dlq, t_ck(&d), t_on_done), SL_OK);
    t_wait(t, &d);
    /* only r1's, in flight in its source, is left */
    assert_int_equal(t_part_int(t, 0, "SELECT count(*) FROM msg_filter") +
                         t_part_int(t, 1, "SELECT count(*) FROM msg_filter"),
                     1);
}

/* Entries go with their rows on every path that deletes one: a delete,
 * expiry at the end of the retention period, and a restart that finds a
 * row's queue gone. */
static void test_filter_entries_go_with_rows(void **state)
{
    struct t_env *t = *state;
    struct part_queue_config cfg = part_queue_config_default();
    cfg.filtered = true;
    cfg.retention_s = 60;
    uint64_t q = t_create(t, "acme", "f", &cfg);
    send_f(t, q, 0, "a", RED_S, false, 0);
    send_f(t, q, 0, "b", RED, false, 0);
    assert_int_equal(t_part_int(t, 0, "SELECT count(*) FROM msg_filter"), 3);
    struct t_done r;
    char got[64];
    recv_f(t, q, RED_S, 1, 300, &r, got, sizeof got);
    assert_string_equal(got, "a");
    struct t_done d;
    t_delete(t, q, r.msgs[0].receipt, &d);
    assert_int_equal(t_part_int(t, 0, "SELECT count(*) FROM msg_filter"), 1);
    t_advance(t, 61000);
    t_sync(t);
    assert_int_equal(t_part_int(t, 0, "SELECT count(*) FROM msg"), 0);
    assert_int_equal(t_part_int(t, 0, "SELECT count(*) FROM msg_filter"), 0);
    /* a row whose queue is gone when the partition opens */
    send_f(t, q, 1, "c", RED, false, 0);
    t_close(t);
    char path[256];
    snprintf(path, sizeof path, "%s/part-0001.db", t->dir);
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db,
                                  "UPDATE msg SET queue_id=999999; UPDATE msg_filter SET"
                                  " queue_id=999999",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    sqlite3_close(db);
    t_open(t);
    assert_int_equal(t_part_int(t, 1, "SELECT count(*) FROM msg_filter"), 0);
}

/* A failed write stores neither the row nor its entries; a restart keeps
 * what was committed, in flight or ready. */
static void test_filter_atomic_and_restart(void **state)
{
    struct t_env *t = *state;
    struct part_queue_config cfg = part_queue_config_default();
    cfg.filtered = true;
    uint64_t q = t_create(t, "acme", "f", &cfg);
    sqlite3 *fault = t_fault(t, 0,
                             "CREATE TRIGGER t_fault BEFORE INSERT ON msg_filter BEGIN"
                             " SELECT RAISE(ABORT, 'injected'); END");
    struct part_filter_pair fp = {SL_SLICE_LIT("color"), SL_SLICE_LIT("red")};
    struct part_send_entry en = {
        .body = SL_SLICE_LIT("lost"), .delay_s = -1, .filters = &fp, .filter_count = 1};
    struct t_done d;
    assert_int_equal(part_send(t->c, q, 0, &en, 1, t_ck(&d), t_on_done), SL_OK);
    t_wait(t, &d);
    assert_int_equal(d.status, SL_EIO);
    t_fault_clear(fault);
    assert_int_equal(t_part_int(t, 0, "SELECT count(*) FROM msg"), 0);
    send_f(t, q, 0, "a", RED, false, 0);
    send_f(t, q, 0, "b", RED, false, 0);
    struct t_done r;
    char got[64];
    recv_f(t, q, RED, 1, 300, &r, got, sizeof got);
    assert_string_equal(got, "a");
    t_close(t);
    t_open(t);
    int64_t ready, inflight;
    depth(t, q, RED, &ready, &inflight);
    assert_int_equal(ready, 1);
    assert_int_equal(inflight, 1);
    recv_f(t, q, RED, 10, 300, &r, got, sizeof got);
    assert_string_equal(got, "b");
    t_advance(t, 301000);
    t_sync(t);
    recv_f(t, q, RED, 10, 300, &r, got, sizeof got);
    assert_string_equal(got, "a,b");
}

/* A parked filtered long poll takes no message that does not match: a
 * commit of one wakes it, it finds nothing and waits on; a match
 * answers it. */
static void test_filter_long_poll(void **state)
{
    struct t_env *t = *state;
    struct part_queue_config cfg = part_queue_config_default();
    cfg.filtered = true;
    uint64_t q = t_create(t, "acme", "f", &cfg);
    struct part_filter_pair fp = {SL_SLICE_LIT("color"), SL_SLICE_LIT("red")};
    uint32_t parts[2] = {0, 1};
    struct part_receive_req req = {.queue_id = q,
                                   .partitions = parts,
                                   .partition_count = t->nparts,
                                   .max_messages = 10,
                                   .visibility_s = 30,
                                   .wait_ms = 15000,
                                   .filter = &fp,
                                   .filter_count = 1};
    struct t_done w;
    assert_int_equal(part_receive(t->c, &req, t_ck(&w), t_on_done, NULL), SL_OK);
    send_f(t, q, 0, "blue", BLUE, false, 0);
    for (int i = 0; i < 50; i++) {
        uv_run(&t->loop, UV_RUN_NOWAIT);
    }
    assert_false(w.done);
    send_f(t, q, 1, "red", RED, false, 0);
    t_wait(t, &w);
    assert_int_equal(w.count, 1);
    assert_string_equal(w.msgs[0].body, "red");
    struct t_done r;
    t_recv(t, q, 10, 30, &r);
    assert_int_equal(r.count, 1);
    assert_string_equal(r.msgs[0].body, "blue");
}

/* part_receive's answer to a filtered receive of one on queue q. */
static int submit_filtered(struct t_env *t, uint64_t q, const struct part_filter_pair *fp)
{
    struct t_done d;
    return part_receive(t->c,
                        &(struct part_receive_req){.queue_id = q,
                                                   .partitions = (uint32_t[]){0},
                                                   .partition_count = 1,
                                                   .max_messages = 1,
                                                   .filter = fp,
                                                   .filter_count = 1},
                        t_ck(&d), t_on_done, NULL);
}

/* An exclusive queue's hold applies to filtered receives too; a FIFO
 * queue, or one that indexes nothing, takes no filter. */
static void test_filter_exclusive_and_fifo(void **state)
{
    struct t_env *t = *state;
    struct part_queue_config cfg = part_queue_config_default();
    cfg.filtered = true;
    cfg.exclusive = true;
    uint64_t q = t_create(t, "acme", "excl", &cfg);
    struct part_filter_pair fp = {SL_SLICE_LIT("color"), SL_SLICE_LIT("red")};
    const char *bodies[] = {"v1", "v2", "w1"};
    const char *values[] = {"v", "v", "w"};
    for (size_t i = 0; i < 3; i++) {
        struct part_send_entry en = {.body = sl_slice_cstr(bodies[i]),
                                     .group_id = sl_slice_cstr(values[i]),
                                     .delay_s = -1,
                                     .filters = &fp,
                                     .filter_count = 1};
        struct t_done d;
        assert_int_equal(part_send(t->c, q, 0, &en, 1, t_ck(&d), t_on_done), SL_OK);
        t_wait(t, &d);
        assert_int_equal(d.status, SL_OK);
    }
    struct t_done r;
    char got[64];
    recv_f(t, q, RED, 10, 300, &r, got, sizeof got);
    assert_string_equal(got, "v1,w1");
    recv_f(t, q, RED, 10, 300, &r, got, sizeof got);
    assert_string_equal(got, ""); /* v2 waits for v1 */
    uint64_t fifo = t_create_fifo(t, "f.fifo", false);
    assert_int_equal(submit_filtered(t, fifo, &fp), SL_EINVAL);
    /* nor does a queue that indexes nothing (its leases keep no entry) */
    struct part_queue_config plain_cfg = part_queue_config_default();
    uint64_t plain = t_create(t, "acme", "plain", &plain_cfg);
    assert_int_equal(submit_filtered(t, plain, &fp), SL_EINVAL);
    int64_t ready, inflight;
    assert_int_equal(part_filter_depth(t->e, plain, &fp, 1, &ready, &inflight, NULL), SL_EINVAL);
}

/* ---- the index at work ---------------------------------------------------- */

static void exec_ok(sqlite3 *db, const char *sql)
{
    char *msg = NULL;
    int rc = sqlite3_exec(db, sql, NULL, NULL, &msg);
    if (rc != SQLITE_OK) {
        fprintf(stderr, "%s: %s\n", sql, msg);
    }
    sqlite3_free(msg);
    assert_int_equal(rc, SQLITE_OK);
}

/* The writer's filtered walk, as SQLite plans it on the real schema: one
 * range of msg_filter_walk in ORDER BY order (no sort, no scan), each
 * further pair a primary-key probe. */
static void test_filter_query_plan(void **state)
{
    (void)state;
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(":memory:", &db), SQLITE_OK);
    exec_ok(db, part_sql_text(PART_SQL_SCHEMA));
    sqlite3_stmt *st = NULL;
    char sql[4096];
    snprintf(sql, sizeof sql, "EXPLAIN QUERY PLAN %s", part_sql_text(PART_SQL_FILTER_SCAN));
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    bool walk = false, probe = false;
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *detail = (const char *)sqlite3_column_text(st, 3);
        assert_null(strstr(detail, "TEMP B-TREE"));
        assert_false(strncmp(detail, "SCAN", 4) == 0);
        walk = walk || strstr(detail, "COVERING INDEX msg_filter_walk (queue_id=? AND fkey=? AND "
                                      "fval=? AND state=? AND lane=?)") != NULL;
        probe = probe || strstr(detail, "PRIMARY KEY (mid=? AND fkey=?)") != NULL;
    }
    sqlite3_finalize(st);
    assert_true(walk);
    assert_true(probe);
    sqlite3_close(db);
}

/* Rows read, counted by SQLite: a filtered receive of 10 on 20,000 ready
 * messages of which 1 % match reads no row of the other 99 % (no full
 * scan step, and VM steps proportional to what it returns), while the
 * unfiltered receive of the same 10 is as cheap. */
static void test_filter_reads_only_matches(void **state)
{
    (void)state;
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(":memory:", &db), SQLITE_OK);
    exec_ok(db, part_sql_text(PART_SQL_SCHEMA));
    exec_ok(db, "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM n WHERE i<20000)"
                " INSERT INTO msg(queue_id, state, priority, visible_at, expires_at, sent_at,"
                " message_id, filtered) SELECT 1, 1, i, 0, 0, i, 'm'||i, 1 FROM n;"
                "INSERT INTO msg_body(id, body) SELECT id, 'x' FROM msg;"
                "INSERT INTO msg_filter(mid, fkey, fval, queue_id, state, lane, priority)"
                " SELECT id, 'color', CASE WHEN id%100=0 THEN 'red' ELSE 'blue' END, 1, 1, 0,"
                " priority FROM msg;");
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_prepare_v2(db, part_sql_text(PART_SQL_FILTER_SCAN), -1, &st, NULL),
                     SQLITE_OK);
    sqlite3_bind_int(st, 1, 1);
    sqlite3_bind_text(st, 2, "color", -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, "red", -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 4, 0);
    sqlite3_bind_int(st, 11, 10);
    int rows = 0;
    int64_t last = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(st, 0);
        assert_int_equal(id % 100, 0);
        assert_true(id > last);
        last = id;
        rows++;
    }
    assert_int_equal(rows, 10);
    int filtered_steps = sqlite3_stmt_status(st, SQLITE_STMTSTATUS_VM_STEP, 0);
    assert_int_equal(sqlite3_stmt_status(st, SQLITE_STMTSTATUS_FULLSCAN_STEP, 0), 0);
    assert_int_equal(sqlite3_stmt_status(st, SQLITE_STMTSTATUS_SORT, 0), 0);
    sqlite3_finalize(st);
    /* the unfiltered receive of ten, for scale */
    assert_int_equal(sqlite3_prepare_v2(db, part_sql_text(PART_SQL_SELECT_READY), -1, &st, NULL),
                     SQLITE_OK);
    sqlite3_bind_int(st, 1, 1);
    sqlite3_bind_int(st, 2, 10);
    sqlite3_bind_int(st, 3, 0);
    while (sqlite3_step(st) == SQLITE_ROW) {
    }
    int plain_steps = sqlite3_stmt_status(st, SQLITE_STMTSTATUS_VM_STEP, 0);
    sqlite3_finalize(st);
    /* A scan past the 990 blue rows before the tenth red one would step
     * the VM thousands of times; the walk steps about as often as the
     * plain receive (a few dozen per row returned). */
    assert_true(filtered_steps < 4 * plain_steps);
    assert_true(filtered_steps < 990);
    sqlite3_close(db);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_filter_receive_order_and_match, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_filter_depth_counts, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_filter_dlq_and_purge, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_filter_atomic_and_restart, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_filter_entries_go_with_rows, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_filter_long_poll, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_filter_exclusive_and_fifo, t_setup, t_teardown),
        cmocka_unit_test(test_filter_query_plan),
        cmocka_unit_test(test_filter_reads_only_matches),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
