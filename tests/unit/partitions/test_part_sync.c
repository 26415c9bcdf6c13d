/*
 * test_part_sync.c -- which commits wait for the disk. A VFS registered as
 * the default in front of the real one counts every xSync the partitions
 * make, so the tests see the fsyncs themselves rather than the engine's
 * account of them: with durability fsync a send, a delete and a
 * visibility change sync, a receive (a lease) does not, and a receive
 * submitted together with a send is answered from its own commit. With
 * durability os nothing a client does syncs.
 */
#include "part_test_util.h"

/* ---- a counting VFS ---------------------------------------------------- */

static sqlite3_vfs *real_vfs;
static sqlite3_vfs counting_vfs;
static _Atomic uint64_t syncs;

struct counting_file {
    sqlite3_file base;
    sqlite3_file *real; /* lives right after this struct */
};

static sqlite3_file *real_of(sqlite3_file *f)
{
    return ((struct counting_file *)f)->real;
}

static int c_close(sqlite3_file *f)
{
    return real_of(f)->pMethods->xClose(real_of(f));
}
static int c_read(sqlite3_file *f, void *p, int n, sqlite3_int64 off)
{
    return real_of(f)->pMethods->xRead(real_of(f), p, n, off);
}
static int c_write(sqlite3_file *f, const void *p, int n, sqlite3_int64 off)
{
    return real_of(f)->pMethods->xWrite(real_of(f), p, n, off);
}
static int c_truncate(sqlite3_file *f, sqlite3_int64 size)
{
    return real_of(f)->pMethods->xTruncate(real_of(f), size);
}
static int c_sync(sqlite3_file *f, int flags)
{
    atomic_fetch_add(&syncs, 1);
    return real_of(f)->pMethods->xSync(real_of(f), flags);
}
static int c_file_size(sqlite3_file *f, sqlite3_int64 *size)
{
    return real_of(f)->pMethods->xFileSize(real_of(f), size);
}
static int c_lock(sqlite3_file *f, int level)
{
    return real_of(f)->pMethods->xLock(real_of(f), level);
}
static int c_unlock(sqlite3_file *f, int level)
{
    return real_of(f)->pMethods->xUnlock(real_of(f), level);
}
static int c_check_reserved(sqlite3_file *f, int *out)
{
    return real_of(f)->pMethods->xCheckReservedLock(real_of(f), out);
}
static int c_file_control(sqlite3_file *f, int op, void *arg)
{
    return real_of(f)->pMethods->xFileControl(real_of(f), op, arg);
}
static int c_sector_size(sqlite3_file *f)
{
    return real_of(f)->pMethods->xSectorSize(real_of(f));
}
static int c_device(sqlite3_file *f)
{
    return real_of(f)->pMethods->xDeviceCharacteristics(real_of(f));
}
static int c_shm_map(sqlite3_file *f, int region, int size, int extend, void volatile **out)
{
    return real_of(f)->pMethods->xShmMap(real_of(f), region, size, extend, out);
}
static int c_shm_lock(sqlite3_file *f, int offset, int n, int flags)
{
    return real_of(f)->pMethods->xShmLock(real_of(f), offset, n, flags);
}
static void c_shm_barrier(sqlite3_file *f)
{
    real_of(f)->pMethods->xShmBarrier(real_of(f));
}
static int c_shm_unmap(sqlite3_file *f, int del)
{
    return real_of(f)->pMethods->xShmUnmap(real_of(f), del);
}

/* Version 2: no xFetch/xUnfetch, so SQLite does not memory-map through us. */
static const sqlite3_io_methods counting_methods = {
    .iVersion = 2,
    .xClose = c_close,
    .xRead = c_read,
    .xWrite = c_write,
    .xTruncate = c_truncate,
    .xSync = c_sync,
    .xFileSize = c_file_size,
    .xLock = c_lock,
    .xUnlock = c_unlock,
    .xCheckReservedLock = c_check_reserved,
    .xFileControl = c_file_control,
    .xSectorSize = c_sector_size,
    .xDeviceCharacteristics = c_device,
    .xShmMap = c_shm_map,
    .xShmLock = c_shm_lock,
    .xShmBarrier = c_shm_barrier,
    .xShmUnmap = c_shm_unmap,
};

static int c_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *f, int flags, int *out_flags)
{
    (void)vfs;
    struct counting_file *cf = (struct counting_file *)f;
    cf->real = (sqlite3_file *)(cf + 1);
    int rc = real_vfs->xOpen(real_vfs, name, cf->real, flags, out_flags);
    /* SQLite calls xClose only when pMethods is set, so set it only when
     * the real file is open. */
    cf->base.pMethods = cf->real->pMethods != NULL ? &counting_methods : NULL;
    return rc;
}
static int c_delete(sqlite3_vfs *vfs, const char *name, int sync_dir)
{
    (void)vfs;
    return real_vfs->xDelete(real_vfs, name, sync_dir);
}
static int c_access(sqlite3_vfs *vfs, const char *name, int flags, int *out)
{
    (void)vfs;
    return real_vfs->xAccess(real_vfs, name, flags, out);
}
static int c_full_pathname(sqlite3_vfs *vfs, const char *name, int n, char *out)
{
    (void)vfs;
    return real_vfs->xFullPathname(real_vfs, name, n, out);
}
static int c_randomness(sqlite3_vfs *vfs, int n, char *out)
{
    (void)vfs;
    return real_vfs->xRandomness(real_vfs, n, out);
}
static int c_sleep(sqlite3_vfs *vfs, int us)
{
    (void)vfs;
    return real_vfs->xSleep(real_vfs, us);
}
static int c_current_time(sqlite3_vfs *vfs, double *out)
{
    (void)vfs;
    return real_vfs->xCurrentTime(real_vfs, out);
}
static int c_last_error(sqlite3_vfs *vfs, int n, char *out)
{
    (void)vfs;
    return real_vfs->xGetLastError(real_vfs, n, out);
}

static void counting_vfs_install(void)
{
    real_vfs = sqlite3_vfs_find(NULL);
    assert_non_null(real_vfs);
    counting_vfs = (sqlite3_vfs){
        .iVersion = 1,
        .szOsFile = (int)sizeof(struct counting_file) + real_vfs->szOsFile,
        .mxPathname = real_vfs->mxPathname,
        .zName = "sluice-test-counting",
        .xOpen = c_open,
        .xDelete = c_delete,
        .xAccess = c_access,
        .xFullPathname = c_full_pathname,
        .xDlOpen = NULL,
        .xRandomness = c_randomness,
        .xSleep = c_sleep,
        .xCurrentTime = c_current_time,
        .xGetLastError = c_last_error,
    };
    assert_int_equal(sqlite3_vfs_register(&counting_vfs, 1), SQLITE_OK);
}

/* ---- tests -------------------------------------------------------------- */

static int setup_durability(void **state, enum part_durability d)
{
    if (t_setup_n(state, 1) != 0) {
        return -1;
    }
    struct t_env *t = *state;
    t_close(t);
    t->durability = d;
    t_open(t);
    return 0;
}

static int setup_fsync(void **state)
{
    return setup_durability(state, PART_DURABILITY_FSYNC);
}

static int setup_os(void **state)
{
    return setup_durability(state, PART_DURABILITY_OS);
}

static uint64_t syncs_during_send(struct t_env *t, uint64_t q, const char *body)
{
    uint64_t before = atomic_load(&syncs);
    t_send(t, q, 0, body);
    return atomic_load(&syncs) - before;
}

static void test_fsync_leases_do_not_wait_for_the_disk(void **state)
{
    struct t_env *t = *state;
    uint64_t q = t_create(t, "acme", "jobs", NULL);
    assert_true(syncs_during_send(t, q, "one") >= 1);
    assert_true(syncs_during_send(t, q, "two") >= 1);

    uint64_t before = atomic_load(&syncs);
    struct t_done r;
    t_recv(t, q, 1, 30, &r);
    assert_int_equal(r.status, SL_OK);
    assert_int_equal(r.count, 1);
    assert_int_equal(atomic_load(&syncs), before); /* the lease did not sync */

    struct t_done d;
    t_chvis(t, q, r.msgs[0].receipt, 60, &d);
    assert_true(atomic_load(&syncs) > before);
    before = atomic_load(&syncs);
    t_delete(t, q, r.msgs[0].receipt, &d);
    assert_true(atomic_load(&syncs) > before);

    /* A receive and a send submitted together: the receive is answered
     * from a commit of its own, before the send's sync. */
    struct t_done rd, sd;
    uint32_t p0 = 0;
    struct part_receive_req req = {.queue_id = q,
                                   .partitions = &p0,
                                   .partition_count = 1,
                                   .max_messages = 10,
                                   .visibility_s = 30};
    struct part_send_entry en = {.body = SL_SLICE_LIT("three"), .delay_s = -1};
    assert_int_equal(part_receive(t->c, &req, t_ck(&rd), t_on_done, NULL), SL_OK);
    assert_int_equal(part_send(t->c, q, 0, &en, 1, t_ck(&sd), t_on_done), SL_OK);
    t_wait(t, &rd);
    t_wait(t, &sd);
    assert_int_equal(rd.status, SL_OK);
    assert_int_equal(sd.status, SL_OK);
    assert_int_equal(rd.count, 1);
    assert_string_equal(rd.msgs[0].body, "two");

    /* The leases survive a restart (the later synced commits carried them):
     * "two" stays in flight, "three" is the one ready message. */
    t_close(t);
    t_open(t);
    struct part_counts c = t_counts(t, q);
    assert_int_equal(c.inflight, 1);
    assert_int_equal(c.ready, 1);
    t_recv(t, q, 10, 30, &r);
    assert_int_equal(r.count, 1);
    assert_string_equal(r.msgs[0].body, "three");
}

static void test_os_nothing_syncs(void **state)
{
    struct t_env *t = *state;
    uint64_t q = t_create(t, "acme", "jobs", NULL);
    uint64_t before = atomic_load(&syncs);
    t_send(t, q, 0, "one");
    struct t_done r, d;
    t_recv(t, q, 1, 30, &r);
    assert_int_equal(r.count, 1);
    t_delete(t, q, r.msgs[0].receipt, &d);
    assert_int_equal(atomic_load(&syncs), before);
}

int main(void)
{
    counting_vfs_install();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_fsync_leases_do_not_wait_for_the_disk, setup_fsync,
                                        t_teardown),
        cmocka_unit_test_setup_teardown(test_os_nothing_syncs, setup_os, t_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
