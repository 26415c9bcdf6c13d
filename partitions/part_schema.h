/*
 * part_schema.h -- (partitions-internal) the statements of a partition
 * file and the SQLite helpers, implemented by part_schema.c.
 */
#ifndef SLUICE_PART_SCHEMA_H
#define SLUICE_PART_SCHEMA_H

#include "part_int.h"

/* The prepared statements of a writer (struct part_writer.st), by index. */
enum {
    ST_INSERT,
    ST_INSERT_BODY,
    ST_SELECT_READY,
    ST_LEASE,
    ST_ROW,
    ST_DELETE,
    ST_SET_VISIBLE,
    ST_MOVE_DLQ,
    ST_HEAD,
    ST_RELEASE,
    ST_PURGE_ROWS,
    ST_PURGE,
    ST_MAKE_READY,
    ST_MOVE_SCAN,
    ST_MOVE_ROW,
    ST_AGE,
    ST_FAIR_SCAN,
    ST_ROW_FULL,
    ST_DEDUP_FIND,
    ST_DEDUP_PUT,
    ST_DEDUP_SWEEP,
    ST_DEDUP_PURGE,
    ST_GROUP_ROWS,
    ST_GROUP_NEXT,
    ST_LEASE_ATTEMPT,
    ST_ATTEMPT_ROWS,
    ST_EXTEND,
    ST_FILTER_PUT,
    ST_FILTER_SCAN,
    ST_FILTER_STATE,
    ST_FILTER_DELETE,
    ST_FILTER_PURGE,
    ST_BEGIN,
    ST_COMMIT,
    ST_ROLLBACK,
    ST_COUNT_
};

/* Sets the connection's pragmas, migrates an older file, creates the
 * schema and prepares w->st; false with why and *rc (SQLite's extended
 * code of the failure, e.g. SQLITE_FULL) filled on failure (the caller
 * then closes with part__schema_close). */
bool part__schema_open(struct part_writer *w, char *why, size_t whylen, int *rc);
/* Finalizes w->st. */
void part__schema_close(struct part_writer *w);
/* Statement which, reset and with its bindings cleared. */
struct sqlite3_stmt *part__stmt(struct part_writer *w, int which);
/* The SQL text of statement which (for logs). */
const char *part__schema_sql(int which);
/* The first column of sql's first row (a PRAGMA's value), or fallback
 * when it fails or has no row. */
int64_t part__sql_int(struct sqlite3 *db, const char *sql, int64_t fallback);
/* sqlite3_exec, logging a failure: SL_OK or SL_EIO. */
int part__sql_exec(struct sqlite3 *db, const char *sql);

#endif
