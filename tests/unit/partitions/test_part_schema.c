/*
 * test_part_schema.c -- the digests a send hands over come back with every
 * receive (also after a restart and a redrive), and partition files of the
 * older schemas (user_version 0: no lane column; 1: no digests column; 2:
 * the body in the msg row; 3: no FIFO deduplication; 4: no last receive;
 * 5: no receive attempts; 6: a unique index on the deduplication ids;
 * 7: no filter index),
 * built with those schemas' own statements,
 * migrate on open: their messages stay receivable, whole, and those from
 * before schema 2 without digests.
 */
#include <sqlite3.h>

#include "part_test_util.h"

#include "part_test_vfs.h"

static const uint8_t DIGESTS[32] = {
    0x78, 0xe7, 0x31, 0x02, 0x7d, 0x8f, 0xd5, 0x0e, 0xd6, 0x42, 0x34, 0x0b, 0x7c, 0x9a, 0x63, 0xb3,
    0x3d, 0x6b, 0x82, 0x4f, 0xd8, 0xc1, 0x52, 0x0e, 0x9a, 0x04, 0x7d, 0x21, 0xfe, 0xe6, 0xfb, 0x1f,
};

static void send_digests(struct t_env *t, uint64_t q, const char *body, size_t ndigests)
{
    struct part_send_entry en = {
        .body = sl_slice_cstr(body), .delay_s = -1, .digests = {(const char *)DIGESTS, ndigests}};
    struct t_done d;
    assert_int_equal(part_send(t->c, q, 0, &en, 1, t_ck(&d), t_on_done), SL_OK);
    t_wait(t, &d);
    assert_int_equal(d.status, SL_OK);
}

static void assert_digests(const struct t_msg *m, size_t n)
{
    assert_int_equal(m->ndigests, n);
    assert_memory_equal(m->digests, DIGESTS, n);
}

/* The schema this build writes, and the statements that take a file of
 * it back to schema 7 (no filter index), which the older downgrades
 * below start from. */
#define SCHEMA_NOW 8
#define DOWN_TO_7                                                                                  \
    "DROP TRIGGER msg_filter_sync; DROP TABLE msg_filter; ALTER TABLE msg DROP COLUMN filtered;"

static int user_version(struct t_env *t)
{
    return t_part_int(t, 0, "PRAGMA user_version");
}

/* Runs sql on the (closed) partition 0 file. */
static void rewrite_part0(struct t_env *t, const char *sql)
{
    char path[256];
    snprintf(path, sizeof path, "%s/part-0000.db", t->dir);
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    char *err = NULL;
    int rc = sqlite3_exec(db, sql, NULL, NULL, &err);
    if (rc != SQLITE_OK) {
        fprintf(stderr, "%s\n", err ? err : "?");
    }
    assert_int_equal(rc, SQLITE_OK);
    sqlite3_close(db);
}

/* The rows of msg_body in the (closed) partition 0 file. */
static int body_rows(struct t_env *t)
{
    return t_part_int(t, 0, "SELECT count(*) FROM msg_body");
}

/* Deletes by receipt; the entry must succeed. */
static void delete_ok(struct t_env *t, uint64_t q, const char *receipt)
{
    struct t_done d;
    t_delete(t, q, receipt, &d);
    assert_int_equal(d.entry[0], SL_OK);
}

/* Partition 0 holds n bodies (the engine is closed to count, then opened). */
static void assert_bodies_left(struct t_env *t, int n)
{
    t_close(t);
    assert_int_equal(body_rows(t), n);
    t_open(t);
}

/* Every message of r ready again now. */
static void make_visible(struct t_env *t, uint64_t q, const struct t_done *r)
{
    for (size_t i = 0; i < r->count; i++) {
        struct t_done d;
        t_chvis(t, q, r->msgs[i].receipt, 0, &d);
        assert_int_equal(d.entry[0], SL_OK);
    }
}

static void test_digests_round_trip(void **state)
{
    struct t_env *t = *state;
    uint64_t q = t_create(t, "acme", "dig", NULL);
    send_digests(t, q, "full", 32);
    send_digests(t, q, "half", 16);
    send_digests(t, q, "none", 0);
    struct part_send_entry big = {.body = SL_SLICE_LIT("x"),
                                  .digests = {(const char *)DIGESTS, PART_DIGESTS_MAX + 1}};
    struct t_done d;
    assert_int_equal(part_send(t->c, q, 0, &big, 1, t_ck(&d), t_on_done), SL_EINVAL);

    /* after a restart, leased, made visible again and received again */
    t_close(t);
    t_open(t);
    t_recv(t, q, 10, 30, &d);
    assert_int_equal(d.count, 3);
    assert_string_equal(d.msgs[0].body, "full");
    assert_digests(&d.msgs[0], 32);
    assert_digests(&d.msgs[1], 16);
    assert_digests(&d.msgs[2], 0);
    make_visible(t, q, &d);
    t_recv(t, q, 10, 30, &d);
    assert_int_equal(d.count, 3);
    assert_int_equal(d.msgs[0].receive_count, 2);
    assert_digests(&d.msgs[0], 32);

    /* a redrive moves the row: the digests go with it */
    uint64_t dest = t_create(t, "acme", "dig-dest", NULL);
    make_visible(t, q, &d);
    struct part_move_req mv = {
        .queue_id = q, .partition = 0, .dest_queue_id = dest, .max_messages = 10};
    struct t_done md;
    assert_int_equal(part_move(t->c, &mv, t_ck(&md), t_on_done), SL_OK);
    t_wait(t, &md);
    assert_int_equal(md.status, SL_OK);
    t_recv(t, dest, 10, 30, &d);
    assert_int_equal(d.count, 3);
    assert_digests(&d.msgs[0], 32);
    assert_digests(&d.msgs[1], 16);
}

/* The schema, pragmas and insert of user_version 2, as they were. */
static const char SCHEMA_2[] =
    "PRAGMA auto_vacuum=INCREMENTAL; PRAGMA journal_mode=WAL;"
    "CREATE TABLE IF NOT EXISTS msg("
    " id INTEGER PRIMARY KEY AUTOINCREMENT,"
    " queue_id INTEGER NOT NULL, state INTEGER NOT NULL, priority INTEGER NOT NULL,"
    " visible_at INTEGER NOT NULL, expires_at INTEGER NOT NULL, sent_at INTEGER NOT NULL,"
    " first_receive_at INTEGER NOT NULL DEFAULT 0, receive_count INTEGER NOT NULL DEFAULT 0,"
    " source_queue_id INTEGER NOT NULL DEFAULT 0, message_id TEXT NOT NULL, group_id TEXT,"
    " body BLOB NOT NULL, attrs BLOB, sys_attrs BLOB, lane INTEGER NOT NULL DEFAULT 0,"
    " digests BLOB);"
    "CREATE INDEX IF NOT EXISTS msg_ready ON msg(queue_id, lane, priority, id, group_id)"
    " WHERE state=1;"
    "CREATE INDEX IF NOT EXISTS msg_queue ON msg(queue_id, state);"
    "PRAGMA user_version=2;";
static const char INSERT_2[] =
    "INSERT INTO msg(queue_id, state, priority, visible_at, expires_at, sent_at,"
    " message_id, group_id, body, attrs, sys_attrs, lane, digests)"
    " VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?)";

#define BIG_LEN (40 * 1024) /* over a page: the body has overflow pages */

/* Replaces the (closed) partition 0 file by one of schema 2 holding queue
 * q's message "old" (no digests, attributes "a1", system attributes "s1")
 * and, when big, a BIG_LEN body of 'b' with 32 digests after it. */
static void write_schema2_part0(struct t_env *t, uint64_t q, bool big)
{
    char path[256];
    static const char *const suffix[] = {"", "-wal", "-shm"};
    for (size_t i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/part-0000.db%s", t->dir, suffix[i]);
        unlink(path);
    }
    snprintf(path, sizeof path, "%s/part-0000.db", t->dir);
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, SCHEMA_2, NULL, NULL, NULL), SQLITE_OK);
    static char body[BIG_LEN];
    memset(body, 'b', sizeof body);
    uint64_t now = sl_wall_ms();
    for (int i = 0; i < (big ? 2 : 1); i++) {
        sqlite3_stmt *st = NULL;
        assert_int_equal(sqlite3_prepare_v2(db, INSERT_2, -1, &st, NULL), SQLITE_OK);
        sqlite3_bind_int64(st, 1, (sqlite3_int64)q);
        sqlite3_bind_int(st, 2, 1); /* ready */
        sqlite3_bind_int64(st, 3, (sqlite3_int64)now + i);
        sqlite3_bind_int64(st, 4, (sqlite3_int64)now);
        sqlite3_bind_int64(st, 5, (sqlite3_int64)now + 3600LL * 1000);
        sqlite3_bind_int64(st, 6, (sqlite3_int64)now);
        sqlite3_bind_text(st, 7,
                          i == 0 ? "00000000-0000-4000-8000-000000000001"
                                 : "00000000-0000-4000-8000-000000000002",
                          -1, SQLITE_STATIC);
        if (i == 0) {
            sqlite3_bind_blob(st, 9, "old", 3, SQLITE_STATIC);
        } else {
            sqlite3_bind_blob(st, 9, body, (int)sizeof body, SQLITE_STATIC);
            sqlite3_bind_blob(st, 13, DIGESTS, 32, SQLITE_STATIC);
        }
        sqlite3_bind_blob(st, 10, "a1", 2, SQLITE_STATIC);
        sqlite3_bind_blob(st, 11, "s1", 2, SQLITE_STATIC);
        sqlite3_bind_int(st, 12, 0); /* the main lane */
        assert_int_equal(sqlite3_step(st), SQLITE_DONE);
        sqlite3_finalize(st);
    }
    assert_int_equal(sqlite3_close(db), SQLITE_OK);
}

/* A migrated partition 0 holds n ready messages of q; receives them all
 * into d, the first "old" with its attributes and no digests. */
static void receive_migrated(struct t_env *t, uint64_t q, size_t n, struct t_done *d)
{
    assert_int_equal(user_version(t), SCHEMA_NOW);
    struct part_counts c = t_counts(t, q);
    assert_int_equal(c.ready, n);
    t_recv(t, q, 10, 30, d);
    assert_int_equal(d->count, n);
    assert_string_equal(d->msgs[0].body, "old");
    assert_string_equal(d->msgs[0].attrs, "a1");
    assert_int_equal(d->msgs[0].ndigests, 0);
}

/* The message "old" stored by an older schema, migrated: receivable with
 * its attributes, no digests; new sends on the migrated file keep theirs,
 * and a delete takes the body with the row. */
static void check_migrated(struct t_env *t, uint64_t q)
{
    struct t_done d;
    receive_migrated(t, q, 1, &d);
    delete_ok(t, q, d.msgs[0].receipt);
    send_digests(t, q, "new", 32);
    t_recv(t, q, 10, 30, &d);
    assert_int_equal(d.count, 1);
    assert_digests(&d.msgs[0], 32);
    delete_ok(t, q, d.msgs[0].receipt);
    assert_bodies_left(t, 0);
}

static void test_migrate_from_2(void **state)
{
    struct t_env *t = *state;
    uint64_t q = t_create(t, "acme", "mig2", NULL);
    t_close(t);
    write_schema2_part0(t, q, true);
    t_open(t);
    struct t_done d;
    receive_migrated(t, q, 2, &d);
    static char big[BIG_LEN];
    memset(big, 'b', sizeof big);
    assert_int_equal(d.msgs[1].body_len, BIG_LEN);
    assert_true(d.msgs[1].body_hash == t_fnv(big, sizeof big));
    assert_string_equal(d.msgs[1].attrs, "a1");
    assert_string_equal(d.msgs[1].sys_attrs, "s1");
    assert_digests(&d.msgs[1], 32);
    /* the rows kept their ids: the handles the receive made delete them */
    delete_ok(t, q, d.msgs[0].receipt);
    t_recv(t, q, 10, 0, &d); /* nothing: one deleted, one in flight */
    assert_int_equal(d.count, 0);
    assert_bodies_left(t, 1);
}

/* An open that finds the disk full, at its pragmas or inside the migration
 * (it copies every body; write 0 fails the former, 4 and 8 the latter with
 * SQLite 3.40), leaves the file at schema 2 and the partition waiting, not
 * stopped; once space returns the writer opens it, migrates it and serves
 * it, with no restart. */
static void test_migrate_on_full_disk(void **state)
{
    struct t_env *t = *state;
    uint64_t q = t_create(t, "acme", "migfull", NULL);
    static const int at[] = {0, 4, 8};
    for (size_t k = 0; k < sizeof at / sizeof at[0]; k++) {
        t_close(t);
        write_schema2_part0(t, q, true);
        atomic_store(&tv.fails, 0);
        tv_fail_write_at(at[k], SQLITE_FULL);
        t_open(t);
        assert_int_equal(atomic_load(&tv.fails), 1);
        assert_false(part_engine_partition_ok(t->e, 0));
        struct t_done d;
        t_recv(t, q, 10, 30, &d);
        assert_int_equal(d.status, SL_EBUSY); /* waiting, not stopped (SL_EIO) */

        bool opened = false;
        for (int i = 0; i < 40 && !opened; i++) {
            usleep(100 * 1000);
            opened = part_engine_partition_ok(t->e, 0);
        }
        assert_true(opened);
        receive_migrated(t, q, 2, &d);
        assert_int_equal(d.msgs[1].body_len, BIG_LEN);
    }
}

static int teardown_full(void **state)
{
    tv_fail_write_at(-1, SQLITE_OK);
    atomic_store(&tv.fails, 0);
    return t_teardown(state);
}

/* A file of schema 2 taken down to an older one by downgrade, migrated. */
static void migrate_from(struct t_env *t, const char *queue, const char *downgrade)
{
    uint64_t q = t_create(t, "acme", queue, NULL);
    t_close(t);
    write_schema2_part0(t, q, false);
    rewrite_part0(t, downgrade);
    t_open(t);
    check_migrated(t, q);
}

static void test_migrate_from_1(void **state)
{
    migrate_from(*state, "mig1", "ALTER TABLE msg DROP COLUMN digests; PRAGMA user_version=1;");
}

static void test_migrate_from_0(void **state)
{
    /* schema 0: no lane column, msg_ready without it */
    migrate_from(*state, "mig0",
                 "DROP INDEX msg_ready; ALTER TABLE msg DROP COLUMN digests;"
                 " ALTER TABLE msg DROP COLUMN lane;"
                 " CREATE INDEX msg_ready ON msg(queue_id, priority, id, group_id)"
                 " WHERE state=1; PRAGMA user_version=0;");
}

static void test_migrate_from_3(void **state)
{
    /* schema 3: no dedup_id column, no dedup table */
    struct t_env *t = *state;
    uint64_t q = t_create(t, "acme", "mig3", NULL);
    t_send(t, q, 0, "old");
    t_close(t);
    rewrite_part0(t, DOWN_TO_7
                  "DROP INDEX msg_attempt; ALTER TABLE msg DROP COLUMN attempt;"
                  " DROP TABLE dedup; DROP INDEX msg_group; ALTER TABLE msg DROP COLUMN dedup_id;"
                  " ALTER TABLE msg DROP COLUMN last_receive_at; PRAGMA user_version=3;");
    assert_int_equal(user_version(t), 3);
    t_open(t);
    struct t_done d;
    t_recv(t, q, 10, 30, &d);
    assert_int_equal(d.count, 1);
    assert_string_equal(d.msgs[0].body, "old");
    assert_string_equal(d.msgs[0].dedup, "");
    assert_int_equal(user_version(t), SCHEMA_NOW);
    assert_int_equal(t_part_int(t, 0, "SELECT count(*) FROM dedup"), 0);
    /* FIFO sends and receives work on the migrated file */
    uint64_t f = t_create_fifo(t, "mig3.fifo", false);
    t_send_fifo(t, f, 0, "x", "g", "d1", &d);
    t_recv(t, f, 1, 30, &d);
    assert_int_equal(d.count, 1);
    assert_string_equal(d.msgs[0].dedup, "d1");
}

static void test_migrate_from_4(void **state)
{
    /* schema 4: no last_receive_at column */
    struct t_env *t = *state;
    uint64_t q = t_create(t, "acme", "mig4", NULL);
    t_send(t, q, 0, "old");
    t_close(t);
    rewrite_part0(t,
                  DOWN_TO_7 "DROP INDEX msg_attempt; ALTER TABLE msg DROP COLUMN attempt;"
                            " ALTER TABLE msg DROP COLUMN last_receive_at; PRAGMA user_version=4;");
    assert_int_equal(user_version(t), 4);
    t_open(t);
    struct t_done d;
    t_recv(t, q, 10, 0, &d);
    assert_int_equal(d.count, 1);
    assert_string_equal(d.msgs[0].body, "old");
    assert_int_equal(user_version(t), SCHEMA_NOW);
    t_sync(t);
    assert_int_equal(
        t_part_int(t, 0,
                   "SELECT last_receive_at > 0 AND last_receive_at = first_receive_at FROM msg"),
        1);
}

static void test_migrate_from_5(void **state)
{
    /* schema 5: no attempt column, no msg_attempt; a FIFO message in
     * flight across the upgrade stays so, and attempts work afterwards */
    struct t_env *t = *state;
    uint64_t f = t_create_fifo(t, "mig5.fifo", false);
    struct t_done d, held;
    t_send_fifo(t, f, 0, "held", "g", "d1", &d);
    t_send_fifo(t, f, 0, "next", "h", "d2", &d);
    t_recv(t, f, 1, 600, &held);
    t_close(t);
    rewrite_part0(t, DOWN_TO_7 "DROP INDEX msg_attempt; ALTER TABLE msg DROP COLUMN attempt;"
                               " PRAGMA user_version=5;");
    assert_int_equal(user_version(t), 5);
    t_open(t);
    assert_int_equal(user_version(t), SCHEMA_NOW);
    assert_int_equal(t_counts(t, f).inflight, 1);
    struct part_receive_req req = {
        .queue_id = f, .max_messages = 10, .visibility_s = 30, .attempt = SL_SLICE_LIT("try")};
    t_recv_with(t, req, &d);
    assert_int_equal(d.count, 1);
    assert_string_equal(d.msgs[0].body, "next");
    struct t_done again;
    t_recv_with(t, req, &again);
    assert_int_equal(again.count, 1);
    assert_string_equal(again.msgs[0].receipt, d.msgs[0].receipt);
    delete_ok(t, f, held.msgs[0].receipt);
}

static void test_migrate_from_6(void **state)
{
    /* schema 6: the dedup table with its unique index on (queue_id, dkey);
     * its ids stay duplicates after the copy, and new ones are stored */
    struct t_env *t = *state;
    uint64_t f = t_create_fifo(t, "mig6.fifo", false);
    struct t_done first, d;
    t_send_fifo(t, f, 0, "one", "g", "d1", &first);
    t_close(t);
    rewrite_part0(t, DOWN_TO_7
                  "CREATE TABLE dedup_6(queue_id INTEGER NOT NULL, dkey BLOB NOT NULL,"
                  " expires_at INTEGER NOT NULL, message_id TEXT NOT NULL,"
                  " seq INTEGER NOT NULL, UNIQUE(queue_id, dkey));"
                  "INSERT INTO dedup_6 SELECT * FROM dedup; DROP TABLE dedup;"
                  "ALTER TABLE dedup_6 RENAME TO dedup;"
                  "CREATE INDEX dedup_expiry ON dedup(expires_at); PRAGMA user_version=6;");
    assert_int_equal(user_version(t), 6);
    assert_int_equal(t_part_int(t, 0,
                                "SELECT count(*) FROM sqlite_schema WHERE tbl_name='dedup'"
                                " AND name LIKE 'sqlite_autoindex%'"),
                     1);
    t_open(t);
    t_send_fifo(t, f, 0, "two", "h", "d1", &d);
    assert_true(d.sent_dup[0]);
    assert_string_equal(d.sent_ids[0], first.sent_ids[0]);
    assert_int_equal(d.sent_seq[0], first.sent_seq[0]);
    t_send_fifo(t, f, 0, "three", "h", "d2", &d);
    assert_false(d.sent_dup[0]);
    t_close(t);
    assert_int_equal(user_version(t), SCHEMA_NOW);
    assert_int_equal(t_part_int(t, 0,
                                "SELECT count(*) FROM sqlite_schema WHERE tbl_name='dedup'"
                                " AND name LIKE 'sqlite_autoindex%'"),
                     0);
    assert_int_equal(t_part_int(t, 0, "SELECT count(*) FROM dedup"), 2);
    t_open(t);
}

static void test_migrate_from_7(void **state)
{
    /* schema 7: no filter index; its messages are receivable, new ones are
     * indexed, filtered receives work */
    struct t_env *t = *state;
    struct part_queue_config cfg = part_queue_config_default();
    cfg.filtered = true;
    uint64_t q = t_create(t, "acme", "mig7", &cfg);
    t_send(t, q, 0, "old");
    t_close(t);
    rewrite_part0(t, DOWN_TO_7 " PRAGMA user_version=7;");
    assert_int_equal(user_version(t), 7);
    t_open(t);
    struct part_filter_pair fp = {SL_SLICE_LIT("k"), SL_SLICE_LIT("v")};
    struct part_send_entry en = {
        .body = SL_SLICE_LIT("new"), .delay_s = -1, .filters = &fp, .filter_count = 1};
    struct t_done d;
    assert_int_equal(part_send(t->c, q, 0, &en, 1, t_ck(&d), t_on_done), SL_OK);
    t_wait(t, &d);
    assert_int_equal(d.status, SL_OK);
    assert_int_equal(user_version(t), SCHEMA_NOW);
    t_recv_with(t,
                (struct part_receive_req){.queue_id = q,
                                          .max_messages = 10,
                                          .visibility_s = 30,
                                          .filter = &fp,
                                          .filter_count = 1},
                &d);
    assert_int_equal(d.count, 1);
    assert_string_equal(d.msgs[0].body, "new");
    t_recv(t, q, 10, 30, &d);
    assert_int_equal(d.count, 1);
    assert_string_equal(d.msgs[0].body, "old");
}

int main(void)
{
    tv_install(); /* passes everything through but in test_migrate_on_full_disk */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_digests_round_trip, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_migrate_from_2, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_migrate_on_full_disk, t_setup, teardown_full),
        cmocka_unit_test_setup_teardown(test_migrate_from_1, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_migrate_from_0, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_migrate_from_3, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_migrate_from_4, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_migrate_from_5, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_migrate_from_6, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_migrate_from_7, t_setup, t_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
