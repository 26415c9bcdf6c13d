/*
 * sb_int.h -- (storage-bench internal) what the files of
 * build/sluice-storage-bench share: options, per-phase results, the
 * engine driver and memory probe (sb_engine.c), the raw SQLite ceiling
 * (sb_raw.c), helpers (sb_util.c) and the reports (sb_report.c). See docs/benchmarks.md, "Storage".
 *
 * Threading: main() runs the cells one after another. During a cell the
 * engine driver runs one libuv loop per client thread, the ceiling one
 * thread per partition file; results are written by those threads into
 * their own slots and read by main() only after joining them.
 *
 * Ownership: struct sb_run owns its cells; everything is freed by
 * sb_run_free().
 */
#ifndef SLUICE_SB_INT_H
#define SLUICE_SB_INT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "part.h"
#include "sl.h"

/* The digest bytes every benchmark message carries, engine and ceiling
 * alike: as many as the gateway stores for a message without attributes
 * (its body's MD5). */
#define SB_DIGESTS "0123456789abcdef"
#define SB_DIGESTS_LEN 16

/* The phases, in the order a cell runs them: receive needs what send
 * stored, delete needs what receive leased. */
enum sb_phase {
    SB_SEND,
    SB_RECEIVE,
    SB_DELETE,
    SB_CYCLE,
    SB_PHASES_,
};

const char *sb_phase_name(enum sb_phase ph);

struct sb_opts {
    uint32_t partitions[8]; /* the P values of the matrix */
    size_t npartitions;
    enum part_durability durability[2];
    size_t ndurability;
    bool want[SB_PHASES_]; /* reported phases; earlier ones still run as preload */
    uint32_t batch;        /* messages per send job, 1..10 */
    uint64_t count;        /* messages per phase, at most */
    double seconds;        /* wall time per phase, at most */
    uint32_t body_size;    /* bytes per message body */
    uint32_t inflight;     /* jobs outstanding over all client loops */
    uint32_t loops;        /* client loops (threads), 1..2 */
    bool ceiling;          /* run the raw SQLite ceiling too */
    /* --ceiling-only: no engine; the ceiling's transactions hold
     * jobs_per_commit jobs, measured elsewhere (the gateway's group
     * commits: loadtest/cost-bench), instead of the engine's */
    bool ceiling_only;
    double jobs_per_commit; /* > 0 with ceiling_only */
    /* the ceiling's cycle: messages per send job, and the mean messages
     * per receive job (and per delete job, one delete per receive, as a
     * consumer deletes what it received); 10 and 10 unless ceiling_only */
    uint32_t cycle_send_batch;
    double cycle_take;
    /* --page-size, with ceiling_only: the ceiling's files made with this
     * page size instead of SQLite's default (0) */
    uint32_t page_size;
    uint64_t memory; /* >0: the memory probe with this many messages instead */
    uint32_t memory_partitions;
    uint32_t memory_body;
    const char *tmpdir; /* parent of the fresh data dirs */
    const char *json_path;
    const char *markdown_path;
    const char *command; /* the command line, for the record */
};

/* Parses argv into *o (defaults first). Returns SL_OK, or SL_EINVAL after
 * printing the problem (or the usage) to stderr. */
int sb_opts_parse(int argc, char **argv, struct sb_opts *o);

/* One measured phase of one side (engine or ceiling). */
struct sb_measure {
    bool ran;
    uint64_t messages; /* messages sent / received / deleted / cycled */
    uint64_t jobs;     /* engine: jobs completed; ceiling: jobs executed */
    uint64_t commits;  /* transactions committed on the partition files */
    uint64_t errors;   /* failed jobs (engine) or statements (ceiling) */
    double seconds;
    double per_commit;  /* jobs per commit (engine measured; ceiling used) */
    uint64_t commit_us; /* engine: time inside COMMIT, summed over partitions */
    uint64_t batch_us;  /* engine: BEGIN to end of COMMIT, summed */
    /* the whole process over the phase (getrusage: user + system, every
     * thread; the engine's figure includes the client loop) and what it
     * dirtied for the disk (/proc/self/io write_bytes; -1 unknown) */
    double cpu_s;
    int64_t write_bytes;
};

double sb_rate(const struct sb_measure *m);

struct sb_cell {
    uint32_t partitions;
    enum part_durability durability;
    struct sb_measure engine[SB_PHASES_];
    struct sb_measure ceiling[SB_PHASES_];
    /* the cycle's single-transaction bound (sb_raw.c): not a ceiling a
     * queue can reach, reported beside it */
    struct sb_measure ceiling_single_txn;
};

struct sb_memory {
    uint64_t messages;
    uint32_t partitions;
    uint32_t body_size;
    double load_seconds;
    int64_t rss_base;    /* bytes, engine open with an empty queue */
    int64_t rss_half;    /* after messages / 2 */
    int64_t rss_full;    /* after messages */
    int64_t sqlite_base; /* sqlite3_memory_used() at the same points */
    int64_t sqlite_half;
    int64_t sqlite_full;
};

struct sb_run {
    struct sb_opts opt;
    uint64_t started_ms;
    struct sb_cell *cells;
    size_t ncells;
    bool has_memory;
    struct sb_memory memory;
};

/* ---- engine driver (sb_engine.c) ---- */
/* Runs the wanted phases against a fresh engine in a fresh dir under
 * opt->tmpdir and fills cell->engine. Returns SL_OK or SL_EIO (reason on
 * stderr). */
int sb_engine_cell(const struct sb_opts *opt, struct sb_cell *cell);

/* ---- raw SQLite ceiling (sb_raw.c) ---- */
/* Runs the same phases with plain SQLite calls on P fresh files with P
 * threads, each transaction as large as the engine's measured
 * cell->engine[ph].per_commit. Fills cell->ceiling (the cycle pipelined
 * over three transactions, as a queue must) and, for the cycle,
 * cell->ceiling_single_txn. SL_OK or SL_EIO. */
int sb_raw_cell(const struct sb_opts *opt, struct sb_cell *cell);

/* ---- memory probe (sb_engine.c, sb_util.c) ---- */
/* VmRSS of this process in bytes, or -1. */
int64_t sb_rss_bytes(void);
/* write_bytes of /proc/self/io (every thread, living or gone: the bytes
 * this process caused to be sent to the storage layer, counted when a
 * page is dirtied), or -1. */
int64_t sb_write_bytes(void);
/* User + system CPU seconds of the whole process so far. */
double sb_cpu_s(void);
int sb_memory_probe(const struct sb_opts *opt, struct sb_memory *out);

/* ---- temp dirs ---- */
/* A fresh directory under parent (mkdtemp); caller frees the string. */
char *sb_tempdir(const char *parent, const char *tag);
/* Removes dir and the files directly in it. */
void sb_rmdir(const char *dir);

/* ---- reports (sb_report.c) ---- */
int sb_report_json(const struct sb_run *run, const char *path);
int sb_report_markdown(const struct sb_run *run, const char *path);
void sb_report_text(const struct sb_run *run);

#endif
