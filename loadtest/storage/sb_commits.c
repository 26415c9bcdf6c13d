/*
 * sb_commits.c -- counts the transactions the engine commits on its
 * partition files, without touching partitions/: the bench is linked with
 * -Wl,--wrap=sqlite3_open_v2, so every sqlite3_open_v2() of the program
 * (the engine's included) lands here first; for files named part-NNNN.db
 * we install SQLite's commit hook, which runs on the committing (writer)
 * thread once per committed transaction. The engine does not use the
 * commit hook itself (it uses the WAL hook), so nothing is displaced.
 *
 * Threading: the counter is an atomic bumped by writer threads and read
 * by main() between phases.
 */
#include <stdatomic.h>
#include <string.h>

#include <sqlite3.h>

#include "sb_int.h"

/* The linker's names for the wrapped and the real function. */
int __real_sqlite3_open_v2(const char *filename, sqlite3 **db, int flags, const char *vfs);
int __wrap_sqlite3_open_v2(const char *filename, sqlite3 **db, int flags, const char *vfs);

static _Atomic uint64_t commits;

static int on_commit(void *arg)
{
    atomic_fetch_add_explicit(&commits, 1, memory_order_relaxed);
    return 0; /* 0: let the commit proceed */
}

static bool is_partition_file(const char *filename)
{
    const char *base = strrchr(filename, '/');
    base = base ? base + 1 : filename;
    return strncmp(base, "part-", 5) == 0;
}

int __wrap_sqlite3_open_v2(const char *filename, sqlite3 **db, int flags, const char *vfs)
{
    int rc = __real_sqlite3_open_v2(filename, db, flags, vfs);
    if (rc == SQLITE_OK && *db != NULL && filename != NULL && is_partition_file(filename)) {
        sqlite3_commit_hook(*db, on_commit, NULL);
    }
    return rc;
}

uint64_t sb_commits_total(void)
{
    return atomic_load(&commits);
}
