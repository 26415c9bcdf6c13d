/*
 * part_test_util.h -- shared harness of the partitions tests: a temp
 * data_dir, an injected clock, a real uv_loop run on the test thread, and
 * synchronous wrappers that submit a job and run the loop until its
 * completion arrives (bounded by a guard timer).
 *
 * Everything is static: each test_*.c is its own executable.
 */
#ifndef PART_TEST_UTIL_H
#define PART_TEST_UTIL_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>
#include <unistd.h>

#include <cmocka.h>
#include <uv.h>

#include "part.h"

/* Each test file uses a subset of the helpers. */
#pragma GCC diagnostic ignored "-Wunused-function"

#define T_START_MS 1700000000000ull

/* The sanitizer the test runs under, if any: gcc defines __SANITIZE_*,
 * clang (14) answers only __has_feature. */
#if defined(__SANITIZE_THREAD__)
#    define T_TSAN 1
#elif defined(__has_feature)
#    if __has_feature(thread_sanitizer)
#        define T_TSAN 1
#    endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#    define T_ASAN 1
#elif defined(__has_feature)
#    if __has_feature(address_sanitizer)
#        define T_ASAN 1
#    endif
#endif
#ifndef T_TSAN
#    define T_TSAN 0
#endif
#ifndef T_ASAN
#    define T_ASAN 0
#endif

struct t_msg {
    char id[PART_MSG_ID_LEN + 1];
    char receipt[PART_RECEIPT_MAX];
    char body[256];
    size_t body_len;    /* the whole body's, body[] may be cut */
    uint64_t body_hash; /* t_fnv of the whole body */
    char attrs[64];
    char sys_attrs[64];
    char group[64];
    char dedup[PART_DEDUP_ID_MAX + 1]; /* "" when none */
    uint8_t digests[PART_DIGESTS_MAX];
    size_t ndigests;
    uint32_t receive_count;
    uint32_t partition;
    uint64_t source_queue_id;
    uint64_t queue_id;
    int64_t priority;
    uint64_t sent_ms;
    uint64_t first_receive_ms;
};

struct t_done {
    bool done;
    int status;
    size_t count; /* sent / messages / entries */
    char sent_ids[PART_MAX_BATCH][PART_MSG_ID_LEN + 1];
    uint64_t sent_seq[PART_MAX_BATCH];
    bool sent_dup[PART_MAX_BATCH];
    uint32_t sent_part[PART_MAX_BATCH];
    struct t_msg msgs[PART_MAX_BATCH];
    int entry[PART_MAX_BATCH];
    uint64_t queue_id;
    char queue_name[128];
    uint64_t purged;
    bool move_held; /* a move left a row for its held destination */
};

struct t_env {
    char dir[128];
    uv_loop_t loop;
    struct part_engine *e;
    struct part_client *c;
    _Atomic uint64_t now;
    uint32_t nparts;
    enum part_durability durability;
    uint32_t checkpoint_pages; /* 0: the engine's default */
    uint32_t max_batch_jobs;   /* 0: the engine's default */
};

static uint64_t t_clock(void *ctx)
{
    return atomic_load((_Atomic uint64_t *)ctx);
}

static void t_advance(struct t_env *t, uint64_t ms)
{
    atomic_fetch_add(&t->now, ms);
}

/* FNV-1a of n bytes, to compare bodies too long for struct t_msg. */
static inline uint64_t t_fnv(const void *p, size_t n)
{
    uint64_t h = 14695981039346656037ull;
    for (size_t i = 0; i < n; i++) {
        h = (h ^ ((const unsigned char *)p)[i]) * 1099511628211ull;
    }
    return h;
}

static void t_on_done(struct part_cookie ck, int status, const struct part_result *res)
{
    struct t_done *d = ck.ptr;
    assert_false(d->done); /* exactly once */
    d->done = true;
    d->status = status;
    d->count = 0;
    if (res->sent_count) {
        d->count = res->sent_count;
        for (size_t i = 0; i < res->sent_count; i++) {
            snprintf(d->sent_ids[i], sizeof d->sent_ids[i], "%s", res->sent[i].message_id);
            d->sent_seq[i] = res->sent[i].sequence;
            d->sent_dup[i] = res->sent[i].duplicate;
            d->sent_part[i] = res->sent[i].partition;
        }
    }
    if (res->message_count) {
        d->count = res->message_count;
        for (size_t i = 0; i < res->message_count; i++) {
            const struct part_message *m = &res->messages[i];
            struct t_msg *o = &d->msgs[i];
            snprintf(o->id, sizeof o->id, "%s", m->message_id);
            snprintf(o->receipt, sizeof o->receipt, "%s", m->receipt);
            snprintf(o->body, sizeof o->body, "%.*s", (int)m->body.n, m->body.p);
            o->body_len = m->body.n;
            o->body_hash = t_fnv(m->body.p, m->body.n);
            snprintf(o->attrs, sizeof o->attrs, "%.*s", (int)m->attrs.n, m->attrs.p);
            snprintf(o->sys_attrs, sizeof o->sys_attrs, "%.*s", (int)m->sys_attrs.n,
                     m->sys_attrs.p);
            snprintf(o->group, sizeof o->group, "%s", m->group_id ? m->group_id : "");
            snprintf(o->dedup, sizeof o->dedup, "%s", m->dedup_id ? m->dedup_id : "");
            assert_true(m->digests.n <= sizeof o->digests);
            o->ndigests = m->digests.n;
            if (m->digests.n > 0) {
                memcpy(o->digests, m->digests.p, m->digests.n);
            }
            o->receive_count = m->receive_count;
            o->partition = m->partition;
            o->source_queue_id = m->source_queue_id;
            o->queue_id = m->queue_id;
            o->priority = m->priority;
            o->sent_ms = m->sent_ms;
            o->first_receive_ms = m->first_receive_ms;
        }
    }
    if (res->entry_count) {
        d->count = res->entry_count;
        memcpy(d->entry, res->entry_status, res->entry_count * sizeof(int));
    }
    if (res->queue) {
        d->queue_id = res->queue->id;
        snprintf(d->queue_name, sizeof d->queue_name, "%s", res->queue->name);
    }
    d->purged = res->purged;
}

/* A part_move completion: d->count gets the messages moved. */
static void t_on_moved(struct part_cookie ck, int status, const struct part_result *res)
{
    struct t_done *d = ck.ptr;
    d->done = true;
    d->status = status;
    d->count = res != NULL ? res->moved : 0;
    d->move_held = res != NULL && res->move_held;
}

static void t_guard_cb(uv_timer_t *t)
{
    *(bool *)t->data = true;
}

/* Runs the loop until d completes; fails the test after 20 s. */
static void t_wait(struct t_env *t, struct t_done *d)
{
    bool expired = false;
    uv_timer_t guard;
    uv_timer_init(&t->loop, &guard);
    guard.data = &expired;
    uv_timer_start(&guard, t_guard_cb, 20000, 0);
    while (!d->done && !expired) {
        uv_run(&t->loop, UV_RUN_ONCE);
    }
    uv_close((uv_handle_t *)&guard, NULL);
    uv_run(&t->loop, UV_RUN_NOWAIT);
    assert_true(d->done);
}

static struct part_cookie t_ck(struct t_done *d)
{
    memset(d, 0, sizeof *d);
    return (struct part_cookie){d, 0, 0};
}

static void t_open(struct t_env *t)
{
    struct part_options o = {.data_dir = t->dir,
                             .partitions = t->nparts,
                             .durability = t->durability,
                             .checkpoint_pages = t->checkpoint_pages,
                             .max_batch_jobs = t->max_batch_jobs,
                             .now_ms = t_clock,
                             .clock_ctx = (void *)&t->now};
    char err[512] = "";
    int rc = part_engine_open(&o, &t->e, err, sizeof err);
    if (rc != SL_OK) {
        fprintf(stderr, "open: %s\n", err);
    }
    assert_int_equal(rc, SL_OK);
    assert_int_equal(part_client_new(t->e, &t->loop, &t->c), SL_OK);
}

static void t_close(struct t_env *t)
{
    part_client_close(t->c);
    uv_run(&t->loop, UV_RUN_NOWAIT);
    part_engine_close(t->e);
    t->e = NULL;
    t->c = NULL;
}

static void t_rmrf(const char *dir)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

static int t_setup_n(void **state, uint32_t nparts)
{
    struct t_env *t = calloc(1, sizeof *t);
    snprintf(t->dir, sizeof t->dir, "/tmp/sluice-part-test-XXXXXX");
    if (mkdtemp(t->dir) == NULL) {
        return -1;
    }
    atomic_init(&t->now, T_START_MS);
    t->nparts = nparts;
    t->durability = PART_DURABILITY_OS;
    uv_loop_init(&t->loop);
    t_open(t);
    *state = t;
    return 0;
}

static int t_setup(void **state)
{
    return t_setup_n(state, 2);
}

static int t_teardown(void **state)
{
    struct t_env *t = *state;
    if (t->e != NULL) {
        t_close(t);
    }
    uv_run(&t->loop, UV_RUN_NOWAIT);
    assert_int_equal(uv_loop_close(&t->loop), 0);
    t_rmrf(t->dir);
    free(t);
    return 0;
}

/* ---- synchronous wrappers ---- */

static uint64_t t_create(struct t_env *t, const char *tenant, const char *name,
                         const struct part_queue_config *cfg)
{
    struct t_done d;
    assert_int_equal(
        part_queue_create(t->c, tenant, name, cfg, NULL, 0, NULL, 0, t_ck(&d), t_on_done), SL_OK);
    t_wait(t, &d);
    assert_int_equal(d.status, SL_OK);
    return d.queue_id;
}

static void t_send_ex(struct t_env *t, uint64_t q, uint32_t p, const char *body, int32_t delay_s,
                      bool has_prio, int64_t prio, struct t_done *d)
{
    struct part_send_entry en = {.body = sl_slice_cstr(body),
                                 .attrs = SL_SLICE_LIT("a"),
                                 .delay_s = delay_s,
                                 .has_priority = has_prio,
                                 .priority = prio};
    assert_int_equal(part_send(t->c, q, p, &en, 1, t_ck(d), t_on_done), SL_OK);
    t_wait(t, d);
}

static void t_send(struct t_env *t, uint64_t q, uint32_t p, const char *body)
{
    struct t_done d;
    t_send_ex(t, q, p, body, -1, false, 0, &d);
    assert_int_equal(d.status, SL_OK);
    assert_int_equal(d.count, 1);
}

/* A FIFO queue of tenant acme (dedup_per_group: DeduplicationScope
 * messageGroup). */
static uint64_t t_create_fifo(struct t_env *t, const char *name, bool dedup_per_group)
{
    struct part_queue_config fc = part_queue_config_default();
    fc.fifo = true;
    fc.dedup_per_group = dedup_per_group;
    return t_create(t, "acme", name, &fc);
}

/* A FIFO queue of tenant acme whose messages move to the FIFO queue dlq
 * past max_receive receives. */
static uint64_t t_create_fifo_dlq(struct t_env *t, const char *name, uint64_t dlq,
                                  uint32_t max_receive)
{
    struct part_queue_config fc = part_queue_config_default();
    fc.fifo = true;
    fc.dlq_target_id = dlq;
    fc.max_receive_count = max_receive;
    return t_create(t, "acme", name, &fc);
}

/* One FIFO message to partition p; d gets the answer (sent_dup, sent_seq). */
static void t_send_fifo(struct t_env *t, uint64_t q, uint32_t p, const char *body,
                        const char *group, const char *dedup, struct t_done *d)
{
    struct part_send_entry en = {.body = sl_slice_cstr(body),
                                 .group_id = sl_slice_cstr(group),
                                 .dedup_id = sl_slice_cstr(dedup),
                                 .delay_s = -1};
    assert_int_equal(part_send(t->c, q, p, &en, 1, t_ck(d), t_on_done), SL_OK);
    t_wait(t, d);
    assert_int_equal(d->status, SL_OK);
    assert_int_equal(d->count, 1);
}

/* Submits req over partitions [0, nparts) and waits for its completion. */
static void t_recv_with(struct t_env *t, struct part_receive_req req, struct t_done *d)
{
    uint32_t parts[64];
    for (uint32_t i = 0; i < t->nparts; i++) {
        parts[i] = i;
    }
    req.partitions = parts;
    req.partition_count = t->nparts;
    assert_int_equal(part_receive(t->c, &req, t_ck(d), t_on_done, NULL), SL_OK);
    t_wait(t, d);
}

/* Receive from partitions [0, nparts) without waiting. */
static void t_recv(struct t_env *t, uint64_t q, uint32_t max, int32_t vis, struct t_done *d)
{
    t_recv_with(
        t, (struct part_receive_req){.queue_id = q, .max_messages = max, .visibility_s = vis}, d);
}

/* A long poll (up to 10 messages, 30 s leases, 15 s wait) over every
 * partition that finds nothing and parks: w completes when a commit
 * wakes it (t_wait). */
static void t_recv_parked(struct t_env *t, uint64_t q, struct t_done *w)
{
    uint32_t parts[64];
    for (uint32_t i = 0; i < t->nparts; i++) {
        parts[i] = i;
    }
    struct part_receive_req req = {.queue_id = q,
                                   .partitions = parts,
                                   .partition_count = t->nparts,
                                   .max_messages = 10,
                                   .visibility_s = 30,
                                   .wait_ms = 15000};
    assert_int_equal(part_receive(t->c, &req, t_ck(w), t_on_done, NULL), SL_OK);
    for (int i = 0; i < 20; i++) {
        uv_run(&t->loop, UV_RUN_NOWAIT);
    }
    assert_false(w->done);
}

static void t_delete(struct t_env *t, uint64_t q, const char *receipt, struct t_done *d)
{
    /* receipt may live in *d, which t_ck clears */
    char copy[PART_RECEIPT_MAX];
    snprintf(copy, sizeof copy, "%s", receipt);
    const char *h[1] = {copy};
    assert_int_equal(part_delete(t->c, q, h, 1, t_ck(d), t_on_done), SL_OK);
    t_wait(t, d);
    assert_int_equal(d->status, SL_OK);
}

static void t_chvis(struct t_env *t, uint64_t q, const char *receipt, uint32_t vis,
                    struct t_done *d)
{
    struct part_visibility_entry en = {receipt, vis};
    assert_int_equal(part_change_visibility(t->c, q, &en, 1, t_ck(d), t_on_done), SL_OK);
    t_wait(t, d);
    assert_int_equal(d->status, SL_OK);
}

/* Waits until every partition committed what was queued and ran its due
 * timers (the clock may have moved). */
/* Installs a fault on partition p's file: trigger_sql creates a trigger
 * named t_fault whose RAISE(ABORT) makes the writer's statement fail, as a
 * storage error would. Returns the connection for t_fault_clear. */
static sqlite3 *t_fault(struct t_env *t, uint32_t p, const char *trigger_sql)
{
    char path[256];
    snprintf(path, sizeof path, "%s/part-%04u.db", t->dir, p);
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    sqlite3_busy_timeout(db, 5000);
    assert_int_equal(sqlite3_exec(db, trigger_sql, NULL, NULL, NULL), SQLITE_OK);
    return db;
}

static void t_fault_clear(sqlite3 *db)
{
    assert_int_equal(sqlite3_exec(db, "DROP TRIGGER t_fault", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
}

static void t_sync(struct t_env *t)
{
    for (uint32_t p = 0; p < t->nparts; p++) {
        struct t_done d;
        assert_int_equal(part_barrier(t->c, p, t_ck(&d), t_on_done), SL_OK);
        t_wait(t, &d);
    }
}

/* The value of sql (one integer) in partition p's file (open or closed:
 * a connection of its own). */
static inline int t_part_int(struct t_env *t, uint32_t p, const char *sql)
{
    char path[256];
    snprintf(path, sizeof path, "%s/part-%04u.db", t->dir, p);
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    int v = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return v;
}

static struct part_counts t_counts(struct t_env *t, uint64_t q)
{
    struct part_counts c;
    assert_int_equal(part_queue_counts(t->e, q, PART_ALL_PARTITIONS, &c), SL_OK);
    return c;
}

/* ---- networks ---- */

/* Free loopback ports for nodes that others dial: bound with port 0, read
 * back, closed together (libuv binds with SO_REUSEADDR). */
static void t_reserve_ports(uint16_t *ports, size_t n)
{
    int fds[8];
    assert_true(n <= SL_ARRAY_LEN(fds));
    for (size_t i = 0; i < n; i++) {
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        socklen_t len = sizeof sa;
        int one = 1;
        fds[i] = socket(AF_INET, SOCK_STREAM, 0);
        assert_true(fds[i] >= 0);
        setsockopt(fds[i], SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        assert_int_equal(bind(fds[i], (struct sockaddr *)&sa, sizeof sa), 0);
        assert_int_equal(getsockname(fds[i], (struct sockaddr *)&sa, &len), 0);
        ports[i] = ntohs(sa.sin_port);
    }
    for (size_t i = 0; i < n; i++) {
        close(fds[i]);
    }
}

static void t_on_tick(uv_timer_t *t)
{
    (void)t;
}

/* Runs loop until pred(arg) holds; false when wait_ms passed first. A
 * ticking timer makes each UV_RUN_ONCE return even when nothing else
 * happens. */
static bool t_run_until(uv_loop_t *loop, bool (*pred)(void *arg), void *arg, unsigned wait_ms)
{
    uv_timer_t tick;
    uv_timer_init(loop, &tick);
    uv_timer_start(&tick, t_on_tick, 10, 10);
    uint64_t deadline = sl_mono_ns() + (uint64_t)wait_ms * 1000000u;
    bool ok = pred(arg);
    while (!ok && sl_mono_ns() < deadline) {
        uv_run(loop, UV_RUN_ONCE);
        ok = pred(arg);
    }
    uv_close((uv_handle_t *)&tick, NULL);
    uv_run(loop, UV_RUN_NOWAIT);
    return ok;
}

/* A blocking socket connected to 127.0.0.1:port, whose reads give up
 * after 5 s: a test's stand-in for a stranger on a node's port. */
static int t_raw_connect(uint16_t port)
{
    struct sockaddr_in sa = {
        .sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    struct timeval tv = {.tv_sec = 5};
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    return fd;
}

#endif
