/*
 * test_part_timer_bound.c -- the writer's timer heap holds entries of live
 * messages plus a bounded slack, however many messages went through it:
 * deletes, visibility changes and purges leave no entry behind for long,
 * and the entries that survive a compaction still fire on time. One
 * partition, injected clock, jobs pipelined ten at a time.
 */
#include "part_test_util.h"

#include "part_int.h" /* PART_TIMERS_COMPACT_MIN */

#define WAVE 10 /* jobs in flight at once */
#define WAVE_MSGS ((size_t)WAVE * PART_MAX_BATCH)

/* What the heap may hold with `live` live entries: they, plus up to two
 * dead entries (a deleted row's lease and retention) per forgotten row
 * not yet compacted away, plus one wave of jobs' worth of entries. */
static uint64_t bound(uint64_t live)
{
    uint64_t slack = 2 * (uint64_t)PART_TIMERS_COMPACT_MIN + 2 * WAVE_MSGS;
    return live + (live > slack ? live : slack);
}

static uint64_t timers(struct t_env *t)
{
    t_sync(t);
    struct part_partition_stats st;
    assert_int_equal(part_engine_stats(t->e, 0, &st), SL_OK);
    return st.timers;
}

static void wait_all(struct t_env *t, struct t_done *d, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        t_wait(t, &d[i]);
        assert_int_equal(d[i].status, SL_OK);
    }
}

/* Sends n (a multiple of PART_MAX_BATCH) messages to q, WAVE jobs at a time. */
static void send_many(struct t_env *t, uint64_t q, size_t n)
{
    struct t_done *d = calloc(WAVE, sizeof *d);
    struct part_send_entry en[PART_MAX_BATCH];
    for (size_t k = 0; k < PART_MAX_BATCH; k++) {
        en[k] = (struct part_send_entry){.body = SL_SLICE_LIT("m"), .delay_s = -1};
    }
    for (size_t sent = 0; sent < n;) {
        size_t jobs = 0;
        for (; jobs < WAVE && sent < n; jobs++, sent += PART_MAX_BATCH) {
            assert_int_equal(part_send(t->c, q, 0, en, PART_MAX_BATCH, t_ck(&d[jobs]), t_on_done),
                             SL_OK);
        }
        wait_all(t, d, jobs);
    }
    free(d);
}

/* Receives WAVE full batches of q, leased for vis_s; returns the messages'
 * count and leaves them in d[0..WAVE). */
static size_t receive_wave(struct t_env *t, uint64_t q, uint32_t vis_s, struct t_done *d)
{
    uint32_t part = 0;
    struct part_receive_req req = {.queue_id = q,
                                   .partitions = &part,
                                   .partition_count = 1,
                                   .max_messages = PART_MAX_BATCH,
                                   .visibility_s = (int32_t)vis_s};
    for (size_t j = 0; j < WAVE; j++) {
        assert_int_equal(part_receive(t->c, &req, t_ck(&d[j]), t_on_done, NULL), SL_OK);
    }
    wait_all(t, d, WAVE);
    size_t got = 0;
    for (size_t j = 0; j < WAVE; j++) {
        got += d[j].count;
    }
    return got;
}

/* Deletes (or, with vis_s > 0, extends the lease of) every message of the
 * receive wave rd. */
static void settle_wave(struct t_env *t, uint64_t q, const struct t_done *rd, uint32_t vis_s)
{
    struct t_done *d = calloc(WAVE, sizeof *d);
    for (size_t j = 0; j < WAVE; j++) {
        const char *h[PART_MAX_BATCH];
        struct part_visibility_entry ve[PART_MAX_BATCH];
        for (size_t k = 0; k < rd[j].count; k++) {
            h[k] = rd[j].msgs[k].receipt;
            ve[k] = (struct part_visibility_entry){rd[j].msgs[k].receipt, vis_s};
        }
        int rc = vis_s > 0
                     ? part_change_visibility(t->c, q, ve, rd[j].count, t_ck(&d[j]), t_on_done)
                     : part_delete(t->c, q, h, rd[j].count, t_ck(&d[j]), t_on_done);
        assert_int_equal(rc, SL_OK);
    }
    wait_all(t, d, WAVE);
    for (size_t j = 0; j < WAVE; j++) {
        for (size_t k = 0; k < d[j].count; k++) {
            assert_int_equal(d[j].entry[k], SL_OK);
        }
    }
    free(d);
}

/* Moves the clock ms forward, committing 1 ms before and at the end:
 * returns q's counts at the first stop, *after gets those at the second. */
static struct part_counts edge(struct t_env *t, uint64_t q, uint64_t ms, struct part_counts *after)
{
    t_advance(t, ms - 1);
    t_sync(t);
    struct part_counts before = t_counts(t, q);
    t_advance(t, 1);
    t_sync(t);
    *after = t_counts(t, q);
    return before;
}

/* send -> receive -> delete of 200,000 messages with the default four days
 * of retention: without compaction all their 400,000 entries would wait
 * for their due time. Three messages sent before stay live throughout and
 * their timers fire as due after the compactions. */
static void test_churn_stays_bounded(void **state)
{
    struct t_env *t = *state;
    uint64_t q = t_create(t, "acme", "churn", NULL);
    struct part_queue_config cfg = part_queue_config_default();
    t_send(t, q, 0, "kept");
    struct t_done d, r;
    t_recv(t, q, 1, 3600, &r);
    assert_int_equal(r.count, 1);
    t_send_ex(t, q, 0, "later", 900, false, 0, &d);
    assert_int_equal(d.status, SL_OK);
    /* last in priority order: the churn's receives never take it */
    t_send_ex(t, q, 0, "ready", -1, true, INT64_MAX / 4, &d);
    assert_int_equal(d.status, SL_OK);
    /* live: kept (retention, lease), later (retention, delay), ready */
    const uint64_t live = 5;
    assert_int_equal(timers(t), live);

    struct t_done *rd = calloc(WAVE, sizeof *rd);
    const size_t total = 200000;
    uint64_t peak = 0;
    for (size_t done = 0; done < total; done += WAVE_MSGS) {
        send_many(t, q, WAVE_MSGS);
        assert_int_equal(receive_wave(t, q, 600, rd), WAVE_MSGS);
        settle_wave(t, q, rd, 0);
        t_advance(t, 1);
        uint64_t n = timers(t);
        peak = n > peak ? n : peak;
        assert_true(n <= bound(live));
    }
    free(rd);
    fprintf(stderr, "timer heap: peak %llu entries over %zu messages (bound %llu)\n",
            (unsigned long long)peak, total, (unsigned long long)bound(live));
    struct part_counts c = t_counts(t, q);
    assert_int_equal(c.ready, 1);
    assert_int_equal(c.inflight, 1);
    assert_int_equal(c.delayed, 1);

    /* The survivors fire on time: the delay, the lease, then retention. */
    uint64_t elapsed = total / WAVE_MSGS; /* ms advanced */
    assert_int_equal(edge(t, q, 900000 - elapsed, &c).delayed, 1);
    assert_int_equal(c.delayed, 0);
    assert_int_equal(c.ready, 2);
    assert_int_equal(edge(t, q, 3600000 - 900000, &c).inflight, 1);
    assert_int_equal(c.inflight, 0);
    assert_int_equal(c.ready, 3);
    t_advance(t, (uint64_t)cfg.retention_s * 1000 - 3600000);
    t_sync(t);
    assert_int_equal(t_counts(t, q).ready, 0);
    struct part_tenant_stats ts;
    part_tenant_stats(t->e, "acme", &ts);
    assert_int_equal(ts.expired, 3);
}

/* A consumer that keeps extending its leases (a heartbeat) supersedes one
 * lease entry per extension: 30,000 of them are forgotten too. */
static void test_heartbeats_stay_bounded(void **state)
{
    struct t_env *t = *state;
    uint64_t q = t_create(t, "acme", "beat", NULL);
    send_many(t, q, WAVE_MSGS);
    struct t_done *rd = calloc(WAVE, sizeof *rd);
    assert_int_equal(receive_wave(t, q, 60, rd), WAVE_MSGS);
    const uint64_t live = 2 * WAVE_MSGS;
    const size_t beats = 300;
    for (size_t i = 0; i < beats; i++) {
        t_advance(t, 1);
        settle_wave(t, q, rd, 60);
        if (i % 10 == 9) {
            assert_true(timers(t) <= bound(live));
        }
    }
    /* The leases end 60 s after the last extension, not before. */
    struct part_counts c;
    assert_int_equal(edge(t, q, 60000, &c).inflight, WAVE_MSGS);
    assert_int_equal(c.ready, WAVE_MSGS);
    free(rd);
}

/* A purge forgets the purged queue's entries (also the aging check of the
 * other queue survives it) and the partition keeps working. */
static void test_purge_forgets(void **state)
{
    struct t_env *t = *state;
    part_tenant_set_aging(t->e, "acme", 7200000);
    uint64_t big = t_create(t, "acme", "big", NULL);
    uint64_t other = t_create(t, "acme", "other", NULL);
    t_send(t, other, 0, "leased");
    t_send(t, other, 0, "ready");
    struct t_done d, r;
    t_recv(t, other, 1, 3600, &r); /* the oldest */
    assert_int_equal(r.count, 1);
    assert_string_equal(r.msgs[0].body, "leased");
    t_send_ex(t, other, 0, "later", 900, false, 0, &d);
    /* other: three retention entries, a lease, a delay, an aging check */
    const uint64_t live = 6;
    assert_int_equal(timers(t), live);

    size_t n = PART_TIMERS_COMPACT_MIN + 1000;
    n -= n % PART_MAX_BATCH;
    send_many(t, big, n);
    assert_true(timers(t) > n);
    assert_int_equal(part_purge(t->c, big, t_ck(&d), t_on_done), SL_OK);
    t_wait(t, &d);
    assert_int_equal(d.status, SL_OK);
    assert_int_equal(d.purged, n);
    /* what is left: other's entries and big's pending aging check */
    assert_int_equal(timers(t), live + 1);

    /* The purged queue works on; the other's timers fire as due. */
    t_send_ex(t, big, 0, "delayed", 60, false, 0, &d);
    assert_int_equal(d.status, SL_OK);
    t_advance(t, 60000);
    t_sync(t);
    assert_int_equal(t_counts(t, big).ready, 1);
    t_advance(t, 900000 - 60000);
    t_sync(t);
    assert_int_equal(t_counts(t, other).delayed, 0);
    t_advance(t, 3600000 - 900000);
    t_sync(t);
    struct part_counts c = t_counts(t, other);
    assert_int_equal(c.inflight, 0);
    assert_int_equal(c.ready, 3);
    t_advance(t, 7200000 - 3600000);
    t_sync(t);
    struct part_tenant_stats ts;
    part_tenant_stats(t->e, "acme", &ts);
    assert_int_equal(ts.aged, 4); /* other's three and big's one */
    assert_int_equal(t_counts(t, other).overflow_ready, 3);
}

/* A DLQ move and a redrive give a message a new retention entry: the old
 * one is forgotten, the new one fires. */
static void test_moves_expire_on_new_retention(void **state)
{
    struct t_env *t = *state;
    const uint64_t day = 86400000;
    struct part_queue_config cfg = part_queue_config_default();
    cfg.retention_s = 2 * 86400;
    uint64_t dlq = t_create(t, "acme", "dead", &cfg);
    cfg.retention_s = 86400;
    cfg.dlq_target_id = dlq;
    cfg.max_receive_count = 1;
    uint64_t src = t_create(t, "acme", "src", &cfg);
    t_send(t, src, 0, "redriven");
    t_send(t, src, 0, "dead");
    struct t_done r, d;
    t_recv(t, src, 10, 30, &r);
    assert_int_equal(r.count, 2);
    t_advance(t, 30000);
    t_sync(t);
    t_recv(t, src, 10, 30, &r); /* both to the DLQ: sent + 2 days */
    assert_int_equal(r.count, 0);
    assert_int_equal(t_counts(t, dlq).ready, 2);
    t_advance(t, 3600000);
    const uint64_t redrive_at = 30000 + 3600000;
    struct part_move_req mv = {.queue_id = dlq, .partition = 0, .max_messages = 1};
    assert_int_equal(part_move(t->c, &mv, t_ck(&d), t_on_done), SL_OK);
    t_wait(t, &d); /* the oldest back to src: now + 1 day */
    assert_int_equal(d.status, SL_OK);
    assert_int_equal(t_counts(t, src).ready, 1);

    struct part_counts c;
    assert_int_equal(edge(t, dlq, day - redrive_at, &c).ready, 1);
    assert_int_equal(c.ready, 1);
    assert_int_equal(t_counts(t, src).ready, 1);
    assert_int_equal(edge(t, src, redrive_at, &c).ready, 1);
    assert_int_equal(c.ready, 0);
    assert_int_equal(edge(t, dlq, day - redrive_at, &c).ready, 1);
    assert_int_equal(c.ready, 0);
    struct part_tenant_stats ts;
    part_tenant_stats(t->e, "acme", &ts);
    assert_int_equal(ts.expired, 2);
}

/* A message that puts the head of the main lane earlier makes the pending
 * aging check superseded (forgotten) and an earlier one run; the later one
 * scheduled again for the same time runs as well. */
static void test_earlier_aging_check_runs(void **state)
{
    struct t_env *t = *state;
    part_tenant_set_aging(t->e, "acme", 60000);
    uint64_t q = t_create(t, "acme", "aging", NULL);
    t_send(t, q, 0, "late"); /* check due at 60 s */
    t_advance(t, 1000);
    struct t_done d;
    t_send_ex(t, q, 0, "early", -1, true, (int64_t)T_START_MS - 30000, &d);
    assert_int_equal(d.status, SL_OK); /* check due at 30 s */
    struct part_counts c;
    assert_int_equal(edge(t, q, 29000, &c).overflow_ready, 0);
    assert_int_equal(c.overflow_ready, 1);
    assert_int_equal(edge(t, q, 30000, &c).overflow_ready, 1);
    assert_int_equal(c.overflow_ready, 2);
}

static int setup_one(void **state)
{
    return t_setup_n(state, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_churn_stays_bounded, setup_one, t_teardown),
        cmocka_unit_test_setup_teardown(test_heartbeats_stay_bounded, setup_one, t_teardown),
        cmocka_unit_test_setup_teardown(test_purge_forgets, setup_one, t_teardown),
        cmocka_unit_test_setup_teardown(test_moves_expire_on_new_retention, setup_one, t_teardown),
        cmocka_unit_test_setup_teardown(test_earlier_aging_check_runs, setup_one, t_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
