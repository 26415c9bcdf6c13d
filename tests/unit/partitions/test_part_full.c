/*
 * test_part_full.c -- a full disk is transient, a stopped partition is
 * never "empty". The test VFS (part_test_vfs.h) fails writes as a full
 * file system does: a send fails with SL_EBUSY, the partition keeps
 * running (receives and deletes work while the disk is full), and sends
 * succeed again once space returns, without a restart. Leases of large
 * messages need no new pages (their bodies are in a table of their own),
 * a partition whose shared-memory file cannot be created on the full disk
 * still comes up, answers SL_EBUSY and opens once space returns, and the
 * WAL is checkpointed sooner as free space shrinks. A partition stopped
 * by a real I/O error makes a receive that should read it fail rather
 * than answer "no message". An open that dies partway through its
 * rebuild gives back everything it counted, the counts it loaded into a
 * FIFO queue's group directory too, so that the retry once space returns
 * counts every message once.
 */
#include <sys/resource.h>

#include "part_test_util.h"

#include "part_catalog.h"
#include "part_disk.h"
#include "part_gdir.h"
#include "part_int.h"
#include "part_test_vfs.h"

static int setup_small_wal(void **state)
{
    if (t_setup_n(state, 1) != 0) {
        return -1;
    }
    struct t_env *t = *state;
    t_close(t);
    t->durability = PART_DURABILITY_FSYNC;
    t->checkpoint_pages = 1; /* the WAL restarts after every commit */
    t_open(t);
    return 0;
}

static void big_body(char *out, size_t n, char c)
{
    memset(out, c, n - 1);
    out[n - 1] = '\0';
}

static void test_one_failed_write_is_transient(void **state)
{
    struct t_env *t = *state;
    uint64_t q = t_create(t, "acme", "jobs", NULL);
    t_send(t, q, 0, "before");
    t_sync(t); /* the writer has finished that commit's checkpoint */

    tv_fail_write_at(0, SQLITE_FULL);
    struct t_done d;
    t_send_ex(t, q, 0, "lost", -1, false, 0, &d);
    assert_int_equal(d.status, SL_EBUSY);
    assert_int_equal(atomic_load(&tv.fails), 1);
    assert_true(part_engine_partition_ok(t->e, 0));

    t_send(t, q, 0, "after"); /* no restart */
    struct t_done r;
    t_recv(t, q, 10, 30, &r);
    assert_int_equal(r.status, SL_OK);
    assert_int_equal(r.count, 2);
}

/* One FIFO send, not asserted: d gets the answer. */
static void send_fifo_raw(struct t_env *t, uint64_t q, const char *body, const char *dedup,
                          struct t_done *d)
{
    struct part_send_entry en = {.body = sl_slice_cstr(body),
                                 .group_id = SL_SLICE_LIT("g"),
                                 .dedup_id = sl_slice_cstr(dedup),
                                 .delay_s = -1};
    assert_int_equal(part_send(t->c, q, 0, &en, 1, t_ck(d), t_on_done), SL_OK);
    t_wait(t, d);
}

/* The in-memory index of deduplication ids follows the file through a
 * rolled-back batch: a failed send leaves no id behind (its retry is
 * stored), and a failed purge forgets none (a send of a purged id is
 * still a duplicate until a purge commits). */
static void test_failed_batches_keep_dedup_ids_exact(void **state)
{
    struct t_env *t = *state;
    uint64_t f = t_create_fifo(t, "ids.fifo", false);
    struct t_done d;
    t_send_fifo(t, f, 0, "first", "g", "d0", &d);
    t_sync(t);

    tv_fail_write_at(0, SQLITE_FULL);
    send_fifo_raw(t, f, "lost", "d1", &d);
    assert_int_equal(d.status, SL_EBUSY);
    send_fifo_raw(t, f, "retried", "d1", &d);
    assert_int_equal(d.status, SL_OK);
    assert_false(d.sent_dup[0]);
    t_sync(t);

    tv_fail_write_at(0, SQLITE_FULL);
    assert_int_equal(part_purge(t->c, f, t_ck(&d), t_on_done), SL_OK);
    t_wait(t, &d);
    assert_int_equal(d.status, SL_EBUSY);
    send_fifo_raw(t, f, "again", "d0", &d);
    assert_int_equal(d.status, SL_OK);
    assert_true(d.sent_dup[0]);
    assert_int_equal(t_counts(t, f).ready, 2); /* first, retried */

    /* and a restart reads back exactly the ids the file holds */
    t_close(t);
    t_open(t);
    send_fifo_raw(t, f, "after", "d1", &d);
    assert_int_equal(d.status, SL_OK);
    assert_true(d.sent_dup[0]);
    send_fifo_raw(t, f, "new", "d2", &d);
    assert_false(d.sent_dup[0]);
    assert_int_equal(t_counts(t, f).ready, 3);
}

static void test_full_disk_keeps_serving(void **state)
{
    struct t_env *t = *state;
    uint64_t q = t_create(t, "acme", "jobs", NULL);
    t_send(t, q, 0, "one");
    t_send(t, q, 0, "two");
    t_send(t, q, 0, "three");
    t_sync(t);

    static char body[96 * 1024];
    big_body(body, sizeof body, 'x');
    tv_set_full(TV_FULL_GROW);
    struct t_done d;
    t_send_ex(t, q, 0, body, -1, false, 0, &d);
    assert_int_equal(d.status, SL_EBUSY);
    assert_true(atomic_load(&tv.fails) > 0);
    assert_true(part_engine_partition_ok(t->e, 0));
    t_send_ex(t, q, 0, body, -1, false, 0, &d); /* still full: still refused, still up */
    assert_int_equal(d.status, SL_EBUSY);
    assert_true(part_engine_partition_ok(t->e, 0));

    /* Receives and deletes rewrite pages the files already have. */
    struct t_done r, del;
    t_recv(t, q, 1, 30, &r);
    assert_int_equal(r.status, SL_OK);
    assert_int_equal(r.count, 1);
    t_delete(t, q, r.msgs[0].receipt, &del);
    assert_int_equal(del.entry[0], SL_OK);

    tv_set_full(TV_FULL_OFF);
    t_send_ex(t, q, 0, body, -1, false, 0, &d);
    assert_int_equal(d.status, SL_OK);
    struct part_counts c = t_counts(t, q);
    assert_int_equal(c.ready, 3); /* two, three and the big one */

    /* and all of it is there after a restart */
    t_close(t);
    t_open(t);
    c = t_counts(t, q);
    assert_int_equal(c.ready, 3);
}

/* Each 64 KiB message is sent in a commit of its own, so the WAL (which
 * restarts after every commit here) never holds more than one body's
 * pages; a receive of all three at once then fits in it only because a
 * lease rewrites the small row, not the body's overflow pages. */
static void test_big_leases_need_no_new_pages(void **state)
{
    struct t_env *t = *state;
    uint64_t q = t_create(t, "acme", "big", NULL);
    static char body[64 * 1024];
    big_body(body, sizeof body, 'y');
    for (int i = 0; i < 3; i++) {
        t_send(t, q, 0, body);
    }
    t_sync(t);

    tv_set_full(TV_FULL_GROW);
    struct t_done r, del;
    t_recv(t, q, 3, 30, &r);
    assert_int_equal(r.status, SL_OK);
    assert_int_equal(r.count, 3);
    for (size_t i = 0; i < r.count; i++) {
        assert_int_equal(r.msgs[i].body_len, sizeof body - 1);
        assert_true(r.msgs[i].body_hash == t_fnv(body, sizeof body - 1));
    }
    for (size_t i = 0; i < r.count; i++) {
        t_delete(t, q, r.msgs[i].receipt, &del);
        assert_int_equal(del.entry[0], SL_OK);
    }
    assert_int_equal(atomic_load(&tv.fails), 0);
    struct part_counts c = t_counts(t, q);
    assert_int_equal(c.ready + c.inflight, 0);
}

/* Runs the loop for ms, so that a writer's once-a-second retry comes. */
static void pause_ms(struct t_env *t, uint64_t ms)
{
    uint64_t end = sl_mono_ns() + ms * 1000000ull;
    while (sl_mono_ns() < end) {
        uv_run(&t->loop, UV_RUN_NOWAIT);
        usleep(10 * 1000);
    }
}

static void test_opens_on_full_disk(void **state)
{
    struct t_env *t = *state;
    uint64_t q = t_create(t, "acme", "jobs", NULL);
    t_send(t, q, 0, "kept");
    t_close(t); /* a clean close removes the WAL and shared-memory files */

    /* The WAL index of partition 0 cannot be created: before, this
     * stopped the partition for good. */
    tv_fail_shm_of("part-0000.db");
    t_open(t);
    assert_true(atomic_load(&tv.fails) > 0);
    assert_false(part_engine_partition_ok(t->e, 0));
    struct t_done r, d;
    t_recv(t, q, 10, 30, &r);
    assert_int_equal(r.status, SL_EBUSY); /* not "no message" */
    assert_int_equal(r.count, 0);
    t_send_ex(t, q, 0, "refused", -1, false, 0, &d);
    assert_int_equal(d.status, SL_EBUSY);

    /* Space returns: the writer opens it within a second or so, with no
     * restart, and sends are taken once the space reserve is back. */
    tv_fail_shm_of("");
    bool opened = false;
    for (int i = 0; i < 40 && !opened; i++) {
        pause_ms(t, 100);
        t_recv(t, q, 10, 30, &r);
        opened = r.status == SL_OK && r.count == 1;
    }
    assert_true(opened);
    assert_string_equal(r.msgs[0].body, "kept");
    assert_true(part_engine_partition_ok(t->e, 0));
    bool sent = false;
    for (int i = 0; i < 40 && !sent; i++) {
        t_send_ex(t, q, 0, "after", -1, false, 0, &d);
        sent = d.status == SL_OK;
        if (!sent) {
            assert_int_equal(d.status, SL_EBUSY);
            pause_ms(t, 100);
        }
    }
    assert_true(sent);
}

/* The WAL size past which a writer checkpoints, by free space. */
static void test_checkpoint_size_follows_free_space(void **state)
{
    (void)state;
    const uint64_t MiB = 1024ull * 1024;
    assert_int_equal(part__wal_limit(UINT64_MAX, 2048, 16), 2048); /* unknown */
    assert_int_equal(part__wal_limit(100000 * MiB, 2048, 16), 2048);
    /* from 256 MiB free at P = 16 (2 x 8 MiB per partition) it shrinks */
    assert_int_equal(part__wal_limit(256 * MiB, 2048, 16), 2048);
    assert_int_equal(part__wal_limit(64 * MiB, 2048, 16), 512);
    assert_int_equal(part__wal_limit(8 * MiB, 2048, 2), 512);
    assert_int_equal(part__wal_limit(100ull * 1024, 2048, 2), 6);
    assert_int_equal(part__wal_limit(8191, 2048, 1), 0); /* every commit */
    assert_int_equal(part__wal_limit(0, 2048, 1), 0);
    assert_int_equal(part__wal_limit(8 * MiB, 16, 1), 16); /* never above the setting */
}

static void test_stopped_partition_is_not_empty(void **state)
{
    struct t_env *t = *state;
    uint64_t q = t_create(t, "acme", "jobs", NULL);
    t_send(t, q, 0, "kept");
    /* an I/O error that is not a full disk stops partition 0 */
    tv_fail_write_at(0, SQLITE_IOERR_WRITE);
    struct t_done d;
    t_send_ex(t, q, 0, "lost", -1, false, 0, &d);
    assert_int_equal(d.status, SL_EIO);
    assert_false(part_engine_partition_ok(t->e, 0));

    struct t_done r;
    t_recv(t, q, 10, 30, &r);
    assert_int_equal(r.status, SL_EIO); /* not "no message" */
    assert_int_equal(r.count, 0);
    /* also when the receive would wait */
    t_recv_with(t,
                (struct part_receive_req){
                    .queue_id = q, .max_messages = 1, .visibility_s = 30, .wait_ms = 50},
                &r);
    assert_int_equal(r.status, SL_EIO);

    /* a healthy partition still answers with what it has */
    t_send(t, q, 1, "elsewhere");
    t_recv(t, q, 10, 30, &r);
    assert_int_equal(r.status, SL_OK);
    assert_int_equal(r.count, 1);
    assert_string_equal(r.msgs[0].body, "elsewhere");
}

static uint64_t cpu_us(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000u +
           (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

/* A stopped partition's due timers never fire, and must not wake its
 * writer over and over either. */
static void test_stopped_partition_sleeps(void **state)
{
    struct t_env *t = *state;
    uint64_t q = t_create(t, "acme", "jobs", NULL);
    t_send(t, q, 0, "leased");
    struct t_done r, d;
    t_recv(t, q, 1, 30, &r);
    assert_int_equal(r.count, 1);
    tv_fail_write_at(0, SQLITE_IOERR_WRITE);
    t_send_ex(t, q, 0, "lost", -1, false, 0, &d);
    assert_int_equal(d.status, SL_EIO);
    assert_false(part_engine_partition_ok(t->e, 0));

    t_advance(t, 31ull * 1000); /* the lease's timer is due */
    part_engine_kick(t->e);
    usleep(50 * 1000);
    uint64_t before = cpu_us();
    usleep(500 * 1000);
    uint64_t spent = cpu_us() - before;
    fprintf(stderr, "cpu while idle: %llu us\n", (unsigned long long)spent);
    assert_true(spent < 100ull * 1000);
}

/* ---- an open cut short by its rebuild ----------------------------------- */

#define REOPEN_GROUPS 120 /* the msg table spans several pages */
#define REOPEN_PLAIN 40

struct reopen_queues {
    uint64_t fifo, plain;
};

static void reopen_group(char *out, size_t n, int i)
{
    /* long ids: fewer rows per page, more reads in the rebuild's scan */
    snprintf(out, n, "%.96s-%03d",
             "group-group-group-group-group-group-group-group-group-group-group-group-group-group"
             "-group-group-group",
             i);
}

/* A FIFO queue with a message in each of REOPEN_GROUPS groups, the first
 * in flight, and a standard queue, all on partition 0; then closed. */
static struct reopen_queues reopen_fill(struct t_env *t)
{
    struct reopen_queues rq = {t_create_fifo(t, "jobs.fifo", false),
                               t_create(t, "acme", "plain", NULL)};
    struct t_done d;
    for (int i = 0; i < REOPEN_GROUPS; i++) {
        char group[128], dedup[16];
        reopen_group(group, sizeof group, i);
        snprintf(dedup, sizeof dedup, "d%d", i);
        t_send_fifo(t, rq.fifo, 0, "fifo body", group, dedup, &d);
    }
    for (int i = 0; i < REOPEN_PLAIN; i++) {
        t_send(t, rq.plain, 0, "plain body");
    }
    t_recv(t, rq.fifo, 1, 300, &d);
    assert_int_equal(d.count, 1);
    t_close(t);
    return rq;
}

/* Group i's entry in the directory: on partition 0 alone, one message
 * (opened), or none. */
static void reopen_dir_check(struct t_env *t, uint64_t queue_id, int i, bool opened)
{
    char group[128];
    reopen_group(group, sizeof group, i);
    struct part_queue *q = part__queue_ref(t->e, queue_id);
    assert_non_null(q);
    uint32_t p[4] = {PART_GDIR_NONE};
    int64_t c[4] = {0};
    assert_int_equal(part__gdir_parts(q->gdir, group, p, c, 4), opened ? 1 : 0);
    assert_int_equal(c[0], opened ? 1 : 0);
    assert_int_equal(p[0], opened ? 0 : PART_GDIR_NONE);
    part__queue_unref(q);
}

/* Whether everything counted matches the rows (opened) or is zero. */
static void reopen_check(struct t_env *t, const struct reopen_queues *rq, bool opened)
{
    int64_t k = opened ? 1 : 0;
    struct part_counts f = t_counts(t, rq->fifo), p = t_counts(t, rq->plain);
    assert_int_equal(f.ready, k * (REOPEN_GROUPS - 1));
    assert_int_equal(f.inflight, k);
    assert_int_equal(f.delayed, 0);
    assert_int_equal(f.groups_inflight, k);
    assert_int_equal(f.groups_live, k * REOPEN_GROUPS);
    assert_int_equal(p.ready, k * REOPEN_PLAIN);
    int64_t backlog = -1, inflight = -1;
    part_tenant_counts(t->e, "acme", &backlog, &inflight);
    assert_int_equal(backlog, k * (REOPEN_GROUPS - 1 + REOPEN_PLAIN));
    assert_int_equal(inflight, k);
    struct part_partition_stats st;
    assert_int_equal(part_engine_stats(t->e, 0, &st), SL_OK);
    assert_int_equal(st.backlog, k * (REOPEN_GROUPS - 1 + REOPEN_PLAIN));
    for (int i = 0; i < REOPEN_GROUPS; i += REOPEN_GROUPS / 4) {
        reopen_dir_check(t, rq->fifo, i, opened);
    }
}

/* Every read of partition 0's file during its open, made to fail (as a
 * full disk: the partition waits and tries again) and failing on: an
 * open that fails leaves nothing counted, whichever step it reached, and
 * one that goes on (the last reads are of lane heads, which a commit
 * publishes again) counts every message. Returns the last read that
 * failed the open. */
static int64_t reopen_fail_everywhere(struct t_env *t, const struct reopen_queues *rq)
{
    int64_t last = -1;
    for (int64_t n = 0;; n++) {
        atomic_store(&tv.fails, 0);
        tv_fail_reads_of("part-0000.db", n, false, SQLITE_FULL);
        t_open(t);
        if (atomic_load(&tv.fails) == 0) { /* the open has fewer reads */
            tv_fail_reads_of("", -1, false, SQLITE_OK);
            break;
        }
        bool opened = part_engine_partition_ok(t->e, 0);
        reopen_check(t, rq, opened);
        t_close(t);
        tv_fail_reads_of("", -1, false, SQLITE_OK);
        if (!opened) {
            last = n;
        }
    }
    assert_true(last > 0);
    assert_true(part_engine_partition_ok(t->e, 0));
    reopen_check(t, rq, true);
    return last;
}

static void test_failed_rebuild_gives_counts_back(void **state)
{
    struct t_env *t = *state;
    struct reopen_queues rq = reopen_fill(t);
    int64_t last = reopen_fail_everywhere(t, &rq);
    t_close(t);

    /* Reads fail from the last one that failed the open on (in its scan
     * of the messages: those before it were counted). Once space is back
     * the writer opens the partition again and counts every message once. */
    tv_fail_reads_of("part-0000.db", last, false, SQLITE_FULL);
    t_open(t);
    assert_false(part_engine_partition_ok(t->e, 0));
    reopen_check(t, &rq, false);
    tv_fail_reads_of("", -1, false, SQLITE_OK);
    bool opened = false;
    for (int i = 0; i < 50 && !opened; i++) {
        pause_ms(t, 100);
        opened = part_engine_partition_ok(t->e, 0);
    }
    assert_true(opened);
    reopen_check(t, &rq, true);
    struct t_done r;
    t_recv(t, rq.plain, 10, 30, &r);
    assert_int_equal(r.count, 10);
}

/* ---- a group-directory load cut short ---------------------------------- */

/*
 * No failed read (tv_fail_reads_of) can stop rebuild_gdir after it loaded
 * a group, however many groups there are: its GROUP BY has no index to
 * follow (msg_group is partial), so SQLite reads every row it needs into
 * a sorter, kept in memory (temp_store=MEMORY), within the first
 * sqlite3_step, and hands out the groups from there without touching the
 * file again. What can still fail between two groups is the aggregate
 * work itself (an allocation of SQLite's, for one). So the test makes
 * that fail: through SQLite's own auto-extension mechanism every
 * connection to partition 0's file gets a count(*) of its own (an
 * application-defined function overrides the built-in one), which counts
 * as the built-in does and, armed, fails its n-th result and every one
 * after with SQLITE_FULL, so that the writer waits and tries again: the
 * retry that would count the loaded groups twice. The writer is not
 * touched; rebuild_gdir is the only count(*) the partitions run, and the
 * test checks that the results served before the failure are its rows.
 */
static struct {
    _Atomic int64_t fail_in; /* results until the first that fails */
    _Atomic bool armed;
    _Atomic int64_t served, failed; /* while armed */
} cf;

static void cf_arm(int64_t n)
{
    atomic_store(&cf.fail_in, n);
    atomic_store(&cf.served, 0);
    atomic_store(&cf.failed, 0);
    atomic_store(&cf.armed, n >= 0);
}

static void cf_step(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    (void)argc;
    (void)argv;
    int64_t *rows = sqlite3_aggregate_context(ctx, (int)sizeof *rows);
    if (rows == NULL) {
        sqlite3_result_error_nomem(ctx);
        return;
    }
    (*rows)++;
}

static void cf_final(sqlite3_context *ctx)
{
    const int64_t *rows = sqlite3_aggregate_context(ctx, 0); /* NULL: no row */
    if (atomic_load(&cf.armed)) {
        if (atomic_fetch_sub(&cf.fail_in, 1) <= 0) {
            atomic_fetch_add(&cf.failed, 1);
            sqlite3_result_error_code(ctx, SQLITE_FULL);
            return;
        }
        atomic_fetch_add(&cf.served, 1);
    }
    sqlite3_result_int64(ctx, rows != NULL ? *rows : 0);
}

static int cf_register(sqlite3 *db, const char **err, const sqlite3_api_routines *api)
{
    (void)err;
    (void)api;
    static const char suffix[] = "/part-0000.db";
    const char *path = sqlite3_db_filename(db, "main");
    size_t len = path != NULL ? strlen(path) : 0;
    if (len < sizeof suffix - 1 || strcmp(path + len - (sizeof suffix - 1), suffix) != 0) {
        return SQLITE_OK;
    }
    return sqlite3_create_function(db, "count", 0, SQLITE_UTF8, NULL, NULL, cf_step, cf_final);
}

#define GLOAD_GROUPS 24

static void gload_group(char *out, size_t n, int i)
{
    snprintf(out, n, "g%02d", i);
}

/* Group i's messages: 1 to 3, so that an undo which dropped one message
 * per group, or the wrong group's count, would show. */
static int gload_msgs(int i)
{
    return 1 + i % 3;
}

/* What the directory counts of group i on partition 0, its only one; 0
 * when the group has no entry. */
static int64_t gload_dir(struct t_env *t, uint64_t queue_id, int i)
{
    char group[16];
    gload_group(group, sizeof group, i);
    struct part_queue *q = part__queue_ref(t->e, queue_id);
    assert_non_null(q);
    uint32_t p[2] = {PART_GDIR_NONE, PART_GDIR_NONE};
    int64_t c[2] = {0, 0};
    size_t n = part__gdir_parts(q->gdir, group, p, c, 2);
    part__queue_unref(q);
    assert_true(n <= 1);
    if (n == 0) {
        return 0;
    }
    assert_int_equal(p[0], 0);
    return c[0];
}

static void test_failed_gdir_load_gives_groups_back(void **state)
{
    struct t_env *t = *state;
    uint64_t q = t_create_fifo(t, "jobs.fifo", false);
    int total = 0;
    for (int j = 0; j < 3; j++) { /* the groups' messages interleaved */
        for (int i = 0; i < GLOAD_GROUPS; i++) {
            if (j < gload_msgs(i)) {
                char group[16], body[32];
                gload_group(group, sizeof group, i);
                snprintf(body, sizeof body, "%s-%d", group, j);
                struct t_done d;
                t_send_fifo(t, q, 0, body, group, body, &d);
                total++;
            }
        }
    }
    t_close(t);

    /* The rebuild loads half the groups (one count(*) result each, in
     * group order), then its query fails as a full disk: the partition
     * waits for space. Results from there on fail too, so that a retry
     * the writer makes before the checks below loads nothing either. */
    assert_int_equal(sqlite3_auto_extension((void (*)(void))cf_register), SQLITE_OK);
    cf_arm(GLOAD_GROUPS / 2);
    t_open(t);
    assert_false(part_engine_partition_ok(t->e, 0));
    assert_int_equal(atomic_load(&cf.served), GLOAD_GROUPS / 2); /* loaded, then failed */
    assert_true(atomic_load(&cf.failed) >= 1);
    struct part_counts c = t_counts(t, q);
    assert_int_equal(c.ready, 0);
    assert_int_equal(c.groups_live, 0);
    for (int i = 0; i < GLOAD_GROUPS; i++) {
        assert_int_equal(gload_dir(t, q, i), 0);
    }

    /* Once space is back the writer opens the partition again (after the
     * engine's open: appended, at_open false) and loads each group once. */
    cf_arm(-1);
    bool opened = false;
    for (int i = 0; i < 50 && !opened; i++) {
        pause_ms(t, 100);
        opened = part_engine_partition_ok(t->e, 0);
    }
    assert_true(opened);
    c = t_counts(t, q);
    assert_int_equal(c.ready, total);
    assert_int_equal(c.groups_live, GLOAD_GROUPS);
    for (int i = 0; i < GLOAD_GROUPS; i++) {
        assert_int_equal(gload_dir(t, q, i), gload_msgs(i));
    }

    /* Every group is delivered in order, each message once, and the
     * directory forgets each group once its last message is deleted (a
     * count loaded twice would keep the entry, and the group with it). */
    int next[GLOAD_GROUPS] = {0};
    for (int got = 0, rounds = 0; got < total; rounds++) {
        assert_true(rounds < 2 * total);
        struct t_done r;
        t_recv(t, q, 10, 30, &r);
        assert_int_equal(r.status, SL_OK);
        for (size_t m = 0; m < r.count; m++) {
            int i = -1, j = -1;
            assert_int_equal(sscanf(r.msgs[m].body, "g%d-%d", &i, &j), 2);
            assert_true(i >= 0 && i < GLOAD_GROUPS);
            assert_int_equal(j, next[i]);
            next[i]++;
            got++;
        }
        for (size_t m = 0; m < r.count; m++) {
            struct t_done d;
            t_delete(t, q, r.msgs[m].receipt, &d);
        }
    }
    for (int i = 0; i < GLOAD_GROUPS; i++) {
        assert_int_equal(next[i], gload_msgs(i));
    }
    t_sync(t);
    c = t_counts(t, q);
    assert_int_equal(c.ready + c.inflight, 0);
    assert_int_equal(c.groups_live, 0);
    for (int i = 0; i < GLOAD_GROUPS; i++) {
        assert_int_equal(gload_dir(t, q, i), 0);
    }
}

static int reset(void **state)
{
    (void)state;
    tv_set_full(TV_FULL_OFF);
    tv_fail_write_at(-1, SQLITE_OK);
    tv_fail_shm_of("");
    tv_fail_reads_of("", -1, false, SQLITE_OK);
    atomic_store(&tv.fails, 0);
    cf_arm(-1);
    sqlite3_cancel_auto_extension((void (*)(void))cf_register);
    return 0;
}

static int teardown(void **state)
{
    reset(state);
    return t_teardown(state);
}

static int setup_two(void **state)
{
    reset(state);
    return t_setup_n(state, 2);
}

static int setup_single(void **state)
{
    reset(state);
    return t_setup_n(state, 1);
}

static int setup_one(void **state)
{
    reset(state);
    return setup_small_wal(state);
}

int main(void)
{
    tv_install();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_one_failed_write_is_transient, setup_one, teardown),
        cmocka_unit_test_setup_teardown(test_full_disk_keeps_serving, setup_one, teardown),
        cmocka_unit_test_setup_teardown(test_failed_batches_keep_dedup_ids_exact, setup_one,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_big_leases_need_no_new_pages, setup_one, teardown),
        cmocka_unit_test_setup_teardown(test_opens_on_full_disk, setup_one, teardown),
        cmocka_unit_test(test_checkpoint_size_follows_free_space),
        cmocka_unit_test_setup_teardown(test_stopped_partition_is_not_empty, setup_two, teardown),
        cmocka_unit_test_setup_teardown(test_stopped_partition_sleeps, setup_two, teardown),
        cmocka_unit_test_setup_teardown(test_failed_rebuild_gives_counts_back, setup_single,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_failed_gdir_load_gives_groups_back, setup_single,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
