/*
 * part_schema.c -- the SQL of a partition file: its schema and migrations,
 * the connection's pragmas, the statements every writer prepares, and the
 * same text exported for the storage benchmark (part_sql_text).
 *
 * Stack: a leaf under the writer and the message operations (and the
 * catalog, which borrows part__sql_exec); it calls nothing else in the
 * module.
 */
#include <stdio.h>

#include <sqlite3.h>

#include "part_schema.h"

#define LOG_MOD "partitions"

_Static_assert(ST_COUNT_ <=
                   sizeof(((struct part_writer *)0)->st) / sizeof(((struct part_writer *)0)->st[0]),
               "part_writer.st too small");

/* The columns fill_message reads, in its order: the row (m) and its body
 * (b). CROSS JOIN keeps msg the outer loop, so the ready rows still come
 * from msg_ready in order and each body is one rowid lookup. */
#define MSG_COLUMNS                                                                                \
    "m.id, m.message_id, b.body, b.attrs, b.sys_attrs, m.group_id, m.priority, m.receive_count,"   \
    " m.sent_at, m.first_receive_at, m.source_queue_id, m.digests, m.dedup_id"
#define MSG_JOIN " FROM msg m CROSS JOIN msg_body b ON b.id=m.id"

static const char *const SQL[ST_COUNT_] = {
    /* ?9..?11 (body, attrs, sys_attrs) are ST_INSERT_BODY's since schema
     * 3; the numbers of the others are those of the one-table insert. */
    [ST_INSERT] = "INSERT INTO msg(queue_id, state, priority, visible_at, expires_at, sent_at,"
                  " message_id, group_id, lane, digests, dedup_id, filtered)"
                  " VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?12,?13,?14,?15)",
    [ST_INSERT_BODY] = "INSERT INTO msg_body(id, body, attrs, sys_attrs) VALUES(?1,?2,?3,?4)",
    [ST_SELECT_READY] = "SELECT " MSG_COLUMNS MSG_JOIN " WHERE m.queue_id=?1 AND m.lane=?3"
                        " AND m.state=1 ORDER BY m.priority, m.id LIMIT ?2",
    [ST_LEASE] = "UPDATE msg SET state=2, visible_at=?2, receive_count=receive_count+1,"
                 " first_receive_at=CASE WHEN first_receive_at=0 THEN ?3 ELSE first_receive_at"
                 " END, last_receive_at=?3 WHERE id=?1",
    /* ST_LEASE stamping the receive's attempt (schema 6): ?4 is the
     * attempt id, the message's place in the reply and its receive count
     * (part_ops.c, "ReceiveRequestAttemptId"). */
    [ST_LEASE_ATTEMPT] = "UPDATE msg SET state=2, visible_at=?2, receive_count=receive_count+1,"
                         " first_receive_at=CASE WHEN first_receive_at=0 THEN ?3 ELSE"
                         " first_receive_at END, last_receive_at=?3, attempt=?4 WHERE id=?1",
    /* Every row ever stamped with the attempt id ?2..?3 (a range of
     * msg_attempt); the caller keeps those still leased under it. */
    [ST_ATTEMPT_ROWS] =
        "SELECT " MSG_COLUMNS ", m.attempt, m.state, m.visible_at,"
        " m.last_receive_at" MSG_JOIN " WHERE m.queue_id=?1 AND m.attempt>=?2 AND m.attempt<?3",
    [ST_EXTEND] = "UPDATE msg SET visible_at=?2 WHERE id=?1",
    [ST_ROW] = "SELECT queue_id, state, receive_count, visible_at, expires_at, lane, group_id,"
               " filtered FROM msg WHERE id=?",
    [ST_DELETE] = "DELETE FROM msg WHERE id=?",
    /* A changed visibility spends the row's attempt (SQS: a retry returns
     * only unmodified messages), as does a released lease. */
    [ST_SET_VISIBLE] = "UPDATE msg SET state=?2, visible_at=?3, attempt=NULL WHERE id=?1",
    [ST_MOVE_DLQ] = "UPDATE msg SET queue_id=?2, source_queue_id=?3, state=1, visible_at=?4,"
                    " lane=0, expires_at=?5 WHERE id=?1",
    [ST_HEAD] = "SELECT priority, sent_at FROM msg WHERE queue_id=?1 AND lane=?2 AND state=1"
                " ORDER BY priority, id LIMIT 1",
    [ST_RELEASE] = "UPDATE msg SET state=1, visible_at=?3, receive_count=receive_count-1,"
                   " attempt=NULL,"
                   " first_receive_at=CASE WHEN receive_count=1 THEN 0 ELSE first_receive_at END,"
                   " last_receive_at=CASE WHEN receive_count=1 THEN 0 ELSE last_receive_at END"
                   " WHERE id=?1 AND state=2 AND receive_count=?2",
    [ST_PURGE_ROWS] = "SELECT id, state, lane, group_id FROM msg WHERE queue_id=?",
    [ST_PURGE] = "DELETE FROM msg WHERE queue_id=?",
    [ST_MAKE_READY] = "UPDATE msg SET state=1 WHERE id=?",
    /* Oldest rows first by row id: msg_queue(queue_id, state) ends in the
     * rowid, so this is an index range, not a sort of the whole queue. */
    [ST_MOVE_SCAN] = "SELECT id, source_queue_id, lane, expires_at, group_id, priority, sent_at"
                     " FROM msg"
                     " WHERE queue_id=?1"
                     " AND state=1 AND id>?2 ORDER BY id LIMIT ?3",
    [ST_MOVE_ROW] = "UPDATE msg SET queue_id=?2, source_queue_id=0, priority=?6, visible_at=?3,"
                    " sent_at=?3, expires_at=?4, message_id=?5, receive_count=0,"
                    " first_receive_at=0, last_receive_at=0, lane=0, attempt=NULL WHERE id=?1",
    /* A main-lane row's priority is its send time, so the aged rows are a
     * prefix of msg_ready: an index range, never a scan of the queue. */
    [ST_AGE] = "UPDATE msg SET lane=1 WHERE id IN (SELECT id FROM msg WHERE queue_id=?1 AND lane=0"
               " AND state=1 AND priority<=?2 ORDER BY priority, id LIMIT ?3)",
    /* Covered by msg_ready (it carries group_id): no table lookups. */
    [ST_FAIR_SCAN] = "SELECT id, group_id FROM msg WHERE queue_id=?1 AND lane=?2 AND state=1"
                     " ORDER BY priority, id LIMIT ?3",
    /* with the lane: a FIFO group's rows may be in both */
    [ST_ROW_FULL] = "SELECT " MSG_COLUMNS ", m.lane" MSG_JOIN " WHERE m.id=?1 AND m.state=1",
    /* FIFO deduplication (schema 4; 7: no unique index): one row per id
     * sent within the interval, found through part_dedup.h's index by its
     * rowid; an expired row no longer counts and is swept. */
    [ST_DEDUP_FIND] = "SELECT dkey, message_id, seq FROM dedup WHERE rowid=?1 AND queue_id=?2"
                      " AND expires_at>?3",
    [ST_DEDUP_PUT] = "INSERT INTO dedup(queue_id, dkey, expires_at, message_id, seq)"
                     " VALUES(?1,?2,?3,?4,?5)",
    [ST_DEDUP_SWEEP] = "DELETE FROM dedup WHERE rowid IN (SELECT rowid FROM dedup"
                       " WHERE expires_at<=?1 ORDER BY expires_at LIMIT ?2)"
                       " RETURNING rowid, queue_id, dkey",
    [ST_DEDUP_PURGE] = "DELETE FROM dedup WHERE queue_id=?1",
    /* A FIFO group's ready rows in order, through msg_group. */
    [ST_GROUP_ROWS] = "SELECT id, priority FROM msg WHERE queue_id=?1 AND group_id=?2 AND state=1"
                      " AND dedup_id IS NOT NULL ORDER BY priority, id LIMIT ?3",
    /* The next FIFO group with ready rows after ?2: one seek in msg_group
     * per group, however long a group's backlog. */
    [ST_GROUP_NEXT] = "SELECT group_id FROM msg WHERE queue_id=?1 AND group_id>?2 AND state=1"
                      " AND dedup_id IS NOT NULL ORDER BY group_id LIMIT 1",
    /* One indexed pair of a message just inserted (schema 8), with the
     * row's fields the filtered walk orders by; the triggers and
     * ST_FILTER_STATE keep them the row's from then on. */
    [ST_FILTER_PUT] = "INSERT INTO msg_filter(mid, fkey, fval, queue_id, state, lane, priority)"
                      " VALUES(?1,?2,?3,?4,?5,?6,?7)",
    /* A filtered row's new state (part_schema.c's comment on msg_filter
     * says why not a trigger). */
    [ST_FILTER_STATE] = "UPDATE msg_filter SET state=?2 WHERE mid=?1",
    /* A filtered row's entries, deleted with it (by the writer, as their
     * states: a trigger would run for every delete of every queue), and a
     * purged queue's. */
    [ST_FILTER_DELETE] = "DELETE FROM msg_filter WHERE mid=?1",
    [ST_FILTER_PURGE] = "DELETE FROM msg_filter WHERE queue_id=?1",
    /* A filtered receive's walk: the ready entries of its first pair in
     * the lane, in (priority, id) order straight from msg_filter_walk,
     * each other pair checked by one primary-key probe of that message's
     * own entries (NULL: no such pair), and the rows as ST_SELECT_READY
     * reads them. Only messages carrying the first pair are read. */
    [ST_FILTER_SCAN] =
        "SELECT " MSG_COLUMNS " FROM msg_filter f CROSS JOIN msg m ON m.id=f.mid"
        " CROSS JOIN msg_body b ON b.id=m.id"
        " WHERE f.queue_id=?1 AND f.fkey=?2 AND f.fval=?3 AND f.state=1 AND f.lane=?4"
        " AND (?5 IS NULL OR EXISTS(SELECT 1 FROM msg_filter g WHERE g.mid=f.mid AND g.fkey=?5"
        " AND g.fval=?6))"
        " AND (?7 IS NULL OR EXISTS(SELECT 1 FROM msg_filter g WHERE g.mid=f.mid AND g.fkey=?7"
        " AND g.fval=?8))"
        " AND (?9 IS NULL OR EXISTS(SELECT 1 FROM msg_filter g WHERE g.mid=f.mid AND g.fkey=?9"
        " AND g.fval=?10))"
        " ORDER BY f.priority, f.mid LIMIT ?11",
    [ST_BEGIN] = "BEGIN IMMEDIATE",
    [ST_COMMIT] = "COMMIT",
    [ST_ROLLBACK] = "ROLLBACK",
};

/* user_version 1 added the lane column (and lane in msg_ready), 2 the
 * digests column, 3 moved the body, attrs and sys_attrs to msg_body, 4
 * added FIFO's dedup_id column and dedup table, 5 last_receive_at (what
 * an operator's peek shows beside the first receive), 6 the attempt
 * column and msg_attempt (FIFO ReceiveRequestAttemptId), 7 dropped the
 * dedup table's unique index on (queue_id, dkey), 8 the filtered column
 * and the msg_filter table (filtered receives). */
#define PART_SCHEMA_VERSION 8

/*
 * A message's body and attributes never change, while its row changes with
 * every lease, visibility change and receive count. SQLite rewrites a
 * whole record on UPDATE, overflow pages included, so with the body in the
 * row a lease of a 32 KiB message wrote nine pages: on a full disk the
 * leases and deletes that should free space could not get WAL frames. In
 * msg_body, keyed by the row's id, the body is written once at send and
 * freed at delete; the trigger removes it with its row on every path (a
 * delete, expiry, purge, an orphaned queue). digests (32 bytes at most)
 * stays in the row: it never needs an overflow page.
 */
/*
 * FIFO deduplication ids sent within the interval, per queue (dkey is the
 * id, or the group and the id under DeduplicationScope messageGroup): the
 * insert of a send and its dedup row commit together, so a send retried
 * after a crash finds it. seq is the first send's SequenceNumber (a
 * duplicate answers with it, and start-up resumes the sequence clock
 * above the largest one). dedup_expiry serves the sweep, dedup_queue a
 * purge; both grow at their end, as rows are appended in send order.
 *
 * No index on dkey (schema 7): ids are random, and a unique index on them
 * dirtied one random page per FIFO message, written to the WAL and again
 * by the checkpoint, plus another when the sweep removed it. The writer
 * finds ids through an in-memory hash of them instead (part_dedup.h),
 * loaded from this table when the partition opens.
 */
#define PART_DEDUP_COLUMNS                                                                         \
    "(queue_id INTEGER NOT NULL, dkey BLOB NOT NULL, expires_at INTEGER NOT NULL,"                 \
    " message_id TEXT NOT NULL, seq INTEGER NOT NULL)"
#define PART_DEDUP_INDEXES                                                                         \
    "CREATE INDEX IF NOT EXISTS dedup_expiry ON dedup(expires_at);"                                \
    "CREATE INDEX IF NOT EXISTS dedup_queue ON dedup(queue_id);"
#define PART_DEDUP_TABLE                                                                           \
    "CREATE TABLE IF NOT EXISTS dedup" PART_DEDUP_COLUMNS ";" PART_DEDUP_INDEXES

/* The ready rows of each FIFO group (rows with a dedup_id), in order: a
 * receive fills up from one group before it takes another, as SQS does,
 * without walking the queue's other groups. Standard rows never enter it. */
#define PART_GROUP_INDEX                                                                           \
    "CREATE INDEX IF NOT EXISTS msg_group ON msg(queue_id, group_id, priority, id)"                \
    " WHERE state=1 AND dedup_id IS NOT NULL;"

/*
 * The FIFO receive attempt that leased a row: the ReceiveRequestAttemptId,
 * one byte for the row's place in that receive's reply and four for its
 * receive count then (big-endian), so a retry finds exactly the rows
 * still under that lease, in order. Attempt ids are bytes 0x21..0x7e and
 * the place byte is below 0x20, so one id's rows are the range [id 0x00,
 * id 0x20) of msg_attempt whatever other ids start with it. A row never
 * leased under an attempt holds NULL: one byte of its record header, and
 * it is not in the partial index, so those receives pay nothing more.
 */
#define PART_ATTEMPT_INDEX                                                                         \
    "CREATE INDEX IF NOT EXISTS msg_attempt ON msg(queue_id, attempt) WHERE attempt IS NOT NULL;"

/*
 * Filtered receives (schema 8): one entry per indexed attribute of a
 * message (the queue's SluiceFilterKeys, chosen by the gateway), keyed by
 * the message's row and the key, carrying a copy of the row's queue,
 * state, lane and priority, so that msg_filter_walk lists a key=value's
 * ready messages in the receive's own (priority, id) order and a receive
 * reads nothing else. A message with indexed pairs has filtered=1.
 *
 * Who keeps the copy: the rare changes of queue, lane and priority (a DLQ
 * move, a redrive, aging) by trigger, whose WHEN reads the old row's
 * filtered column only; the frequent changes of state (a lease, a
 * release, a visibility change, a lease running out) and the deletes (a
 * delete, expiry, an operator's removal, a purge, an orphaned queue's
 * rows at start-up) by the writer itself (ST_FILTER_STATE,
 * ST_FILTER_DELETE, ST_FILTER_PURGE; part_ops.c, part_writer.c), for rows
 * that have entries or queues that filter. An UPDATE that sets none of a
 * trigger's columns does not even compile the trigger in, so a lease, a
 * release or a delete of any other queue's message costs exactly what it
 * did before schema 8: a trigger on state, or on delete, would have run
 * its program for every lease or delete of every queue.
 */
#define PART_FILTER_TABLE                                                                          \
    "CREATE TABLE IF NOT EXISTS msg_filter(mid INTEGER NOT NULL, fkey TEXT NOT NULL,"              \
    " fval TEXT NOT NULL, queue_id INTEGER NOT NULL, state INTEGER NOT NULL,"                      \
    " lane INTEGER NOT NULL, priority INTEGER NOT NULL, PRIMARY KEY(mid, fkey)) WITHOUT ROWID;"    \
    "CREATE INDEX IF NOT EXISTS msg_filter_walk ON msg_filter(queue_id, fkey, fval, state, lane,"  \
    " priority, mid);"                                                                             \
    "CREATE TRIGGER IF NOT EXISTS msg_filter_sync AFTER UPDATE OF queue_id, lane, priority"        \
    " ON msg WHEN old.filtered IS NOT NULL BEGIN UPDATE msg_filter SET queue_id=new.queue_id,"     \
    " state=new.state, lane=new.lane, priority=new.priority WHERE mid=new.id; END;"                \
    ""

#define PART_BODY_TABLE                                                                            \
    "CREATE TABLE IF NOT EXISTS msg_body(id INTEGER PRIMARY KEY, body BLOB NOT NULL, attrs BLOB,"  \
    " sys_attrs BLOB);"

static const char PART_SCHEMA[] =
    "CREATE TABLE IF NOT EXISTS msg("
    " id INTEGER PRIMARY KEY AUTOINCREMENT,"
    " queue_id INTEGER NOT NULL, state INTEGER NOT NULL, priority INTEGER NOT NULL,"
    " visible_at INTEGER NOT NULL, expires_at INTEGER NOT NULL, sent_at INTEGER NOT NULL,"
    " first_receive_at INTEGER NOT NULL DEFAULT 0, receive_count INTEGER NOT NULL DEFAULT 0,"
    " source_queue_id INTEGER NOT NULL DEFAULT 0, message_id TEXT NOT NULL, group_id TEXT,"
    " lane INTEGER NOT NULL DEFAULT 0, digests BLOB, dedup_id TEXT,"
    " last_receive_at INTEGER NOT NULL DEFAULT 0, attempt BLOB, filtered INTEGER);" PART_BODY_TABLE
        PART_DEDUP_TABLE "CREATE TRIGGER IF NOT EXISTS msg_gone AFTER DELETE ON msg BEGIN"
    " DELETE FROM msg_body WHERE id=old.id; END;"
    "CREATE INDEX IF NOT EXISTS msg_ready ON msg(queue_id, lane, priority, id, group_id)"
    " WHERE state=1;"
    "CREATE INDEX IF NOT EXISTS msg_queue ON msg(queue_id, state);" PART_GROUP_INDEX
        PART_ATTEMPT_INDEX PART_FILTER_TABLE;

/* From user_version 0 (before lanes): the column, and msg_ready rebuilt
 * with lane in it by PART_SCHEMA right after. */
static const char PART_MIGRATE_0_1[] = "ALTER TABLE msg ADD COLUMN lane INTEGER NOT NULL DEFAULT 0;"
                                       "DROP INDEX IF EXISTS msg_ready;";
/* From user_version 1: rows stored before it have no digests (NULL), which
 * part_message reports as none. */
static const char PART_MIGRATE_1_2[] = "ALTER TABLE msg ADD COLUMN digests BLOB;";
/* From user_version 2: every body moves to msg_body under its row's id
 * (DROP COLUMN rewrites msg once; the file needs about twice its bodies'
 * size free while it runs, and a failure rolls it all back). */
static const char PART_MIGRATE_2_3[] =
    PART_BODY_TABLE "INSERT INTO msg_body(id, body, attrs, sys_attrs)"
                    " SELECT id, body, attrs, sys_attrs FROM msg;"
                    "ALTER TABLE msg DROP COLUMN body; ALTER TABLE msg DROP COLUMN attrs;"
                    " ALTER TABLE msg DROP COLUMN sys_attrs;";

/* From user_version 3: FIFO rows carry their deduplication id (NULL on
 * standard queues; adding a nullable column rewrites nothing), msg_group
 * (empty: no row has a dedup_id yet) and the dedup table. */
static const char PART_MIGRATE_3_4[] =
    "ALTER TABLE msg ADD COLUMN dedup_id TEXT;" PART_GROUP_INDEX PART_DEDUP_TABLE;
/* From user_version 4: rows leased before it show no last receive (0)
 * until their next one; a column with a constant default rewrites
 * nothing. */
static const char PART_MIGRATE_4_5[] =
    "ALTER TABLE msg ADD COLUMN last_receive_at INTEGER NOT NULL DEFAULT 0;";
/* From user_version 5: no row was leased under an attempt (a retry of a
 * receive from before the upgrade is an ordinary receive); a nullable
 * column and an index of none of the rows rewrite nothing. */
static const char PART_MIGRATE_5_6[] =
    "ALTER TABLE msg ADD COLUMN attempt BLOB;" PART_ATTEMPT_INDEX;
/* From user_version 6: the dedup table without its unique index (a table
 * constraint, so the table is copied; its rows keep their rowids and
 * order), and its indexes in the same transaction, so that a file at
 * schema 7 never lacks them (opening one writes nothing). */
static const char PART_MIGRATE_6_7[] =
    "CREATE TABLE dedup_7" PART_DEDUP_COLUMNS ";"
    "INSERT INTO dedup_7(rowid, queue_id, dkey, expires_at, message_id, seq)"
    " SELECT rowid, queue_id, dkey, expires_at, message_id, seq FROM dedup;"
    "DROP TABLE dedup; ALTER TABLE dedup_7 RENAME TO dedup;" PART_DEDUP_INDEXES;
/* From user_version 7: no row has indexed pairs (a nullable column and an
 * empty table rewrite nothing). */
static const char PART_MIGRATE_7_8[] =
    "ALTER TABLE msg ADD COLUMN filtered INTEGER;" PART_FILTER_TABLE;

/* secure_delete=FAST: Debian's SQLite zeroes every freed page by default
 * (SQLITE_SECURE_DELETE), which doubled the WAL bytes of a large
 * message's delete; FAST zeroes only inside pages written anyway
 * (docs/partitions.md says why that loses no guarantee). */
#define PART_PRAGMAS(sync)                                                                         \
    "PRAGMA auto_vacuum=INCREMENTAL; PRAGMA journal_mode=WAL; PRAGMA synchronous=" sync ";"        \
    " PRAGMA wal_autocheckpoint=0; PRAGMA journal_size_limit=67108864;"                            \
    " PRAGMA cache_size=-16384; PRAGMA temp_store=MEMORY; PRAGMA secure_delete=FAST;"

static const char PART_PRAGMAS_FSYNC[] = PART_PRAGMAS("FULL");
/* For sqlite3_exec only: SQLite applies this pragma when it compiles the
 * statement, so a prepared copy stepped again would change nothing. */
static const char PART_SYNC_FULL[] = "PRAGMA synchronous=FULL";
static const char PART_SYNC_NORMAL[] = "PRAGMA synchronous=NORMAL";
static const char PART_PRAGMAS_OS[] = PART_PRAGMAS("NORMAL");

/* NOMUTEX: a partition's connection is used by one thread at a time (its
 * writer; open and close happen before start and after join), so the
 * serialized mode's mutex around every SQLite call buys nothing. */
int part_sql_open_flags(void)
{
    return SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
}

const char *part_sql_text(enum part_sql which)
{
    switch (which) {
    case PART_SQL_SCHEMA:
        return PART_SCHEMA;
    case PART_SQL_PRAGMAS_FSYNC:
        return PART_PRAGMAS_FSYNC;
    case PART_SQL_PRAGMAS_OS:
        return PART_PRAGMAS_OS;
    case PART_SQL_INSERT:
        return SQL[ST_INSERT];
    case PART_SQL_INSERT_BODY:
        return SQL[ST_INSERT_BODY];
    case PART_SQL_SELECT_READY:
        return SQL[ST_SELECT_READY];
    case PART_SQL_LEASE:
        return SQL[ST_LEASE];
    case PART_SQL_ROW:
        return SQL[ST_ROW];
    case PART_SQL_DELETE:
        return SQL[ST_DELETE];
    case PART_SQL_HEAD:
        return SQL[ST_HEAD];
    case PART_SQL_BEGIN:
        return SQL[ST_BEGIN];
    case PART_SQL_COMMIT:
        return SQL[ST_COMMIT];
    case PART_SQL_SYNC_FULL:
        return PART_SYNC_FULL;
    case PART_SQL_SYNC_NORMAL:
        return PART_SYNC_NORMAL;
    case PART_SQL_FILTER_PUT:
        return SQL[ST_FILTER_PUT];
    case PART_SQL_FILTER_SCAN:
        return SQL[ST_FILTER_SCAN];
    }
    return "";
}

/* ---- statements -------------------------------------------------------- */

sqlite3_stmt *part__stmt(struct part_writer *w, int which)
{
    sqlite3_stmt *st = w->st[which];
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    return st;
}

/* Brings a partition file of an older schema up to PART_SCHEMA_VERSION
 * (before PART_SCHEMA's CREATE ... IF NOT EXISTS, which would keep an old
 * index), each step and the new user_version in one transaction, so a
 * crash halfway leaves the old version to migrate again. A new file has no
 * msg table and needs nothing. */
static int user_version(struct part_writer *w)
{
    return (int)part__sql_int(w->db, "PRAGMA user_version", -1);
}

/* Fills why and *rc from w->db's last error. */
static bool failed(struct part_writer *w, char *why, size_t whylen, int *rc)
{
    snprintf(why, whylen, "%s", sqlite3_errmsg(w->db));
    *rc = sqlite3_extended_errcode(w->db);
    return false;
}

/* The steps from user_version `version` to PART_SCHEMA_VERSION, in order:
 * the one path of a single node's file and of a cluster's image. */
static void append_migrations(struct sl_buf *sql, int version)
{
    static const char *const steps[] = {PART_MIGRATE_0_1, PART_MIGRATE_1_2, PART_MIGRATE_2_3,
                                        PART_MIGRATE_3_4, PART_MIGRATE_4_5, PART_MIGRATE_5_6,
                                        PART_MIGRATE_6_7, PART_MIGRATE_7_8};
    _Static_assert(sizeof steps / sizeof steps[0] == PART_SCHEMA_VERSION, "a step per version");
    for (int v = version < 0 ? 0 : version; v < PART_SCHEMA_VERSION; v++) {
        sl_buf_append_cstr(sql, steps[v]);
    }
}

static bool migrate(struct part_writer *w, char *why, size_t whylen, int *rc)
{
    sqlite3_stmt *st = NULL;
    int version = user_version(w);
    bool has_msg = false;
    if (sqlite3_prepare_v2(w->db, "SELECT 1 FROM sqlite_schema WHERE type='table' AND name='msg'",
                           -1, &st, NULL) == SQLITE_OK) {
        has_msg = sqlite3_step(st) == SQLITE_ROW;
    }
    sqlite3_finalize(st);
    if (version < 0) {
        return failed(w, why, whylen, rc);
    }
    if (!has_msg || version >= PART_SCHEMA_VERSION) {
        return true;
    }
    sl_log(SL_LOG_INFO, LOG_MOD, "partition %u: migrating %s from schema %d to %d", w->index,
           w->path, version, PART_SCHEMA_VERSION);
    char set_version[48];
    snprintf(set_version, sizeof set_version, "PRAGMA user_version=%d;", PART_SCHEMA_VERSION);
    struct sl_buf sql;
    sl_buf_init(&sql);
    sl_buf_append_cstr(&sql, "BEGIN IMMEDIATE;");
    append_migrations(&sql, version);
    sl_buf_append_cstr(&sql, set_version);
    sl_buf_append_cstr(&sql, "COMMIT;");
    bool ok = part__sql_exec(w->db, sql.p) == SL_OK;
    sl_buf_free(&sql);
    if (!ok) {
        failed(w, why, whylen, rc); /* before the ROLLBACK clears it */
        if (!sqlite3_get_autocommit(w->db)) {
            part__sql_exec(w->db, "ROLLBACK");
        }
    }
    return ok;
}

int64_t part__sql_int(sqlite3 *db, const char *sql, int64_t fallback)
{
    sqlite3_stmt *st = NULL;
    int64_t v = fallback;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW) {
        v = sqlite3_column_int64(st, 0);
    }
    sqlite3_finalize(st);
    return v;
}

int part__sql_exec(sqlite3 *db, const char *sql)
{
    char *msg = NULL;
    int rc = sqlite3_exec(db, sql, NULL, NULL, &msg);
    if (rc != SQLITE_OK) {
        sl_log(SL_LOG_ERROR, LOG_MOD, "sqlite: %s: %s", msg ? msg : sqlite3_errstr(rc), sql);
        sqlite3_free(msg);
        return SL_EIO;
    }
    return SL_OK;
}

/* ---- a partition's connection ------------------------------------------ */

/* A cluster's image: made at the current schema in one transaction, the
 * one entry that replicates it. An image of an older schema (a cluster
 * upgraded node by node) is migrated the same way by its first leader
 * that runs this build: the steps of a single node's file, the schema's
 * CREATE ... IF NOT EXISTS and the new version in one transaction, so the
 * followers apply the result as frames and run nothing themselves. A
 * node of an older build then cannot lead the group any more (it refuses
 * a newer image below), so the lead stays with the upgraded nodes. */
static bool schema_replicated(struct part_writer *w, char *why, size_t whylen, int *rc)
{
    /* secure_delete=FAST as on one node (PART_PRAGMAS): every page a
     * delete zeroes would be a frame of the entry, on every replica. */
    if (part__sql_exec(w->db, "PRAGMA cache_size=-16384; PRAGMA temp_store=MEMORY;"
                              " PRAGMA secure_delete=FAST;") != SL_OK) {
        return failed(w, why, whylen, rc);
    }
    int version = user_version(w);
    if (version < 0) {
        return failed(w, why, whylen, rc);
    }
    if (version == PART_SCHEMA_VERSION) {
        return true;
    }
    if (version > PART_SCHEMA_VERSION) {
        snprintf(why, whylen,
                 "the image has schema %d, newer than this build's %d: upgrade this "
                 "node",
                 version, PART_SCHEMA_VERSION);
        *rc = SQLITE_ERROR;
        return false;
    }
    struct sl_buf sql;
    sl_buf_init(&sql);
    sl_buf_append_cstr(&sql, "BEGIN IMMEDIATE;");
    if (version > 0) {
        sl_log(SL_LOG_INFO, LOG_MOD,
               "partition %u: migrating its replicated image from schema %d "
               "to %d",
               w->index, version, PART_SCHEMA_VERSION);
        append_migrations(&sql, version);
    }
    sl_buf_append_cstr(&sql, PART_SCHEMA);
    char set_version[48];
    snprintf(set_version, sizeof set_version, "PRAGMA user_version=%d;COMMIT;",
             PART_SCHEMA_VERSION);
    sl_buf_append_cstr(&sql, set_version);
    bool ok = part__sql_exec(w->db, sql.p) == SL_OK;
    sl_buf_free(&sql);
    if (!ok) {
        failed(w, why, whylen, rc);
        if (!sqlite3_get_autocommit(w->db)) {
            part__sql_exec(w->db, "ROLLBACK");
        }
    }
    return ok;
}

static bool prepare_all(struct part_writer *w, char *why, size_t whylen, int *rc)
{
    for (int i = 0; i < ST_COUNT_; i++) {
        if (sqlite3_prepare_v3(w->db, SQL[i], -1, SQLITE_PREPARE_PERSISTENT, &w->st[i], NULL) !=
            SQLITE_OK) {
            return failed(w, why, whylen, rc);
        }
    }
    *rc = SQLITE_OK;
    return true;
}

bool part__schema_open(struct part_writer *w, char *why, size_t whylen, int *rc)
{
    if (w->group != NULL) {
        return schema_replicated(w, why, whylen, rc) && prepare_all(w, why, whylen, rc);
    }
    const char *pragmas =
        w->engine->opt.durability == PART_DURABILITY_FSYNC ? PART_PRAGMAS_FSYNC : PART_PRAGMAS_OS;
    char set_version[48];
    snprintf(set_version, sizeof set_version, "PRAGMA user_version=%d", PART_SCHEMA_VERSION);
    /* Nothing here writes to a file already at the current schema, so
     * that a partition opens on a full disk. */
    if (part__sql_exec(w->db, pragmas) != SL_OK) {
        return failed(w, why, whylen, rc);
    }
    if (!migrate(w, why, whylen, rc)) {
        return false;
    }
    if (part__sql_exec(w->db, PART_SCHEMA) != SL_OK ||
        (user_version(w) != PART_SCHEMA_VERSION && part__sql_exec(w->db, set_version) != SL_OK)) {
        return failed(w, why, whylen, rc);
    }
    return prepare_all(w, why, whylen, rc);
}

void part__schema_close(struct part_writer *w)
{
    for (int i = 0; i < ST_COUNT_; i++) {
        sqlite3_finalize(w->st[i]);
        w->st[i] = NULL;
    }
}

const char *part__schema_sql(int which)
{
    return SQL[which];
}
