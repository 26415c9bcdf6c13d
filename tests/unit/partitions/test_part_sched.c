/*
 * test_part_sched.c -- what a partition's writer publishes about its load
 * (the send choice's signal) and how it shares its group commits among
 * tenants.
 */
#include "part_test_util.h"

#include "part_sched.h"

/* ---- the scheduler alone, on jobs that never reach a writer ---- */

struct fake_tenant {
    struct part_tenant t;
    struct part_queue q;
};

static struct part_job *fake_job(struct fake_tenant *ft, enum part_op op, uint32_t cost)
{
    struct part_job *j = calloc(1, sizeof *j);
    j->op = op;
    j->q = ft != NULL ? &ft->q : NULL;
    j->cost = cost;
    return j;
}

static void fake_tenant_init(struct fake_tenant *ft)
{
    memset(ft, 0, sizeof *ft);
    ft->q.tenant = &ft->t;
}

static size_t list_free(struct part_job *j)
{
    size_t n = 0;
    while (j != NULL) {
        struct part_job *next = j->next;
        free(j);
        j = next;
        n++;
    }
    return n;
}

/* Takes and frees whatever is left, then the flows; the jobs it took. */
static size_t drain(struct part_sched *s)
{
    size_t n = 0, left = 0;
    int64_t cost = 0;
    while (!part__sched_empty(s)) {
        left += list_free(part__sched_take(s, 1024, &n, &cost));
    }
    part__sched_free(s);
    return left;
}

/* A tenant with thousands of jobs waiting delays another's one job by
 * no more than the batch the writer takes next. */
static void test_flooder_waits_its_turn(void **state)
{
    struct fake_tenant a, b;
    fake_tenant_init(&a);
    fake_tenant_init(&b);
    struct part_sched s = {0};
    for (int i = 0; i < 5000; i++) {
        part__sched_push(&s, fake_job(&a, PART_OP_SEND, PART_MAX_BATCH));
    }
    struct part_job *quiet = fake_job(&b, PART_OP_SEND, 1);
    part__sched_push(&s, quiet);
    size_t n = 0;
    int64_t cost = 0;
    struct part_job *batch = part__sched_take(&s, 1024, &n, &cost);
    assert_int_equal(n, 1024);
    bool found = false;
    size_t from_a = 0;
    for (struct part_job *j = batch; j != NULL; j = j->next) {
        found = found || j == quiet;
        from_a += j->q == &a.q;
    }
    assert_true(found);
    assert_int_equal(from_a, 1023);
    assert_int_equal(cost, 1023 * PART_MAX_BATCH + 1);
    list_free(batch);
    /* the rest drains */
    assert_int_equal(drain(&s), 5000 - 1023);
}

/* Shares are by cost: a tenant of 10-message jobs gets one job per turn
 * where a tenant of single messages gets ten; each tenant's jobs keep
 * their order. */
static void test_shares_by_cost_in_order(void **state)
{
    struct fake_tenant a, b;
    fake_tenant_init(&a);
    fake_tenant_init(&b);
    struct part_sched s = {0};
    struct part_job *ja[100], *jb[100];
    for (int i = 0; i < 100; i++) {
        ja[i] = fake_job(&a, PART_OP_SEND, 10);
        part__sched_push(&s, ja[i]);
        jb[i] = fake_job(&b, PART_OP_DELETE, 1);
        part__sched_push(&s, jb[i]);
    }
    size_t n = 0;
    int64_t cost = 0;
    struct part_job *batch = part__sched_take(&s, 55, &n, &cost);
    assert_int_equal(n, 55);
    size_t ia = 0, ib = 0;
    for (struct part_job *j = batch; j != NULL; j = j->next) {
        if (j->q == &a.q) {
            assert_ptr_equal(j, ja[ia++]);
        } else {
            assert_ptr_equal(j, jb[ib++]);
        }
    }
    assert_int_equal(ia, 5);
    assert_int_equal(ib, 50);
    assert_int_equal(cost, 100);
    list_free(batch);
    /* The next batch goes on where this one stopped, in order. */
    batch = part__sched_take(&s, 11, &n, &cost);
    assert_int_equal(n, 11);
    ia = ib = 0;
    for (struct part_job *j = batch; j != NULL; j = j->next) {
        if (j->q == &a.q) {
            assert_ptr_equal(j, ja[5 + ia++]);
        } else {
            assert_ptr_equal(j, jb[50 + ib++]);
        }
    }
    assert_int_equal(ia, 1);
    assert_int_equal(ib, 10);
    list_free(batch);
    drain(&s);
}

/* A job dearer than a quantum saves up over turns and is not starved. */
static void test_dear_job_saves_up(void **state)
{
    struct fake_tenant a, b;
    fake_tenant_init(&a);
    fake_tenant_init(&b);
    struct part_sched s = {0};
    struct part_job *move = fake_job(&a, PART_OP_MOVE, 35);
    part__sched_push(&s, move);
    for (int i = 0; i < 100; i++) {
        part__sched_push(&s, fake_job(&b, PART_OP_SEND, 10));
    }
    size_t n = 0;
    int64_t cost = 0;
    /* a needs four turns of 10; b takes one job in each of them */
    struct part_job *batch = part__sched_take(&s, 5, &n, &cost);
    assert_int_equal(n, 5);
    size_t pos = 0, at = 0;
    for (struct part_job *j = batch; j != NULL; j = j->next, pos++) {
        at = j == move ? pos : at;
    }
    assert_int_equal(at, 3);
    list_free(batch);
    drain(&s);
}

/* A barrier waits for every job pushed before it, whatever its tenant,
 * and is taken beyond the batch's limit. */
static void test_fence(void **state)
{
    struct fake_tenant a, b;
    fake_tenant_init(&a);
    fake_tenant_init(&b);
    struct part_sched s = {0};
    for (int i = 0; i < 3; i++) {
        part__sched_push(&s, fake_job(&a, PART_OP_SEND, 10));
    }
    part__sched_push(&s, fake_job(&b, PART_OP_SEND, 10));
    struct part_job *fence = fake_job(NULL, PART_OP_BARRIER, 1);
    part__sched_push(&s, fence);
    part__sched_push(&s, fake_job(&b, PART_OP_SEND, 10)); /* after the fence */
    size_t n = 0;
    int64_t cost = 0;
    struct part_job *batch = part__sched_take(&s, 3, &n, &cost);
    for (struct part_job *j = batch; j != NULL; j = j->next) {
        assert_ptr_not_equal(j, fence);
    }
    assert_int_equal(list_free(batch), 3); /* a, b, a: a's third still waits */
    assert_false(part__sched_empty(&s));
    batch = part__sched_take(&s, 2, &n, &cost);
    assert_int_equal(n, 3); /* b, a, and the fence beyond the limit */
    struct part_job *last = batch;
    while (last->next != NULL) {
        last = last->next;
    }
    assert_ptr_equal(last, fence);
    list_free(batch);
    assert_true(part__sched_empty(&s));
    part__sched_free(&s);
}

/* A tenant at its writer_job_cap has its own requests' jobs refused,
 * queuing nothing; the engine's jobs for it (a lease release) still go,
 * and another tenant is untouched. */
static void test_job_cap(void **state)
{
    (void)state;
    struct fake_tenant a, b;
    fake_tenant_init(&a);
    fake_tenant_init(&b);
    atomic_store(&a.t.writer_job_cap, 2);
    struct part_sched s = {0};
    assert_true(part__sched_push(&s, fake_job(&a, PART_OP_SEND, 1)));
    assert_true(part__sched_push(&s, fake_job(&a, PART_OP_RECEIVE, 1)));
    static const enum part_op refused_ops[] = {PART_OP_SEND, PART_OP_RECEIVE, PART_OP_DELETE,
                                               PART_OP_CHANGE_VIS};
    for (size_t i = 0; i < sizeof refused_ops / sizeof refused_ops[0]; i++) {
        struct part_job *j = fake_job(&a, refused_ops[i], 1);
        assert_false(part__sched_push(&s, j));
        free(j);
    }
    assert_true(part__sched_push(&s, fake_job(&a, PART_OP_RELEASE, 1)));
    assert_true(part__sched_push(&s, fake_job(&b, PART_OP_SEND, 1)));
    /* Once the writer takes a's jobs, a may queue again. */
    size_t n = 0;
    int64_t cost = 0;
    assert_int_equal(list_free(part__sched_take(&s, 1024, &n, &cost)), 4);
    assert_true(part__sched_push(&s, fake_job(&a, PART_OP_SEND, 1)));
    assert_int_equal(drain(&s), 1);
}

/* ---- through the engine ---- */

/* The load counts every tenant's stored ready and delayed messages, in
 * both lanes, and forgets what is in flight or deleted; a restart
 * rebuilds it from the file. */
static void test_load_counts_everyone(void **state)
{
    struct t_env *t = *state;
    uint64_t a = t_create(t, "acme", "a", NULL);
    uint64_t b = t_create(t, "bolt", "b", NULL);
    assert_int_equal(part_engine_partition_load(t->e, 0), 0);
    for (int i = 0; i < 5; i++) {
        t_send(t, a, 0, "a");
    }
    t_send(t, b, 0, "b");
    struct t_done d;
    t_send_ex(t, b, 1, "later", 60, false, 0, &d); /* delayed counts too */
    assert_int_equal(d.status, SL_OK);
    assert_int_equal(part_engine_partition_load(t->e, 0), 6);
    assert_int_equal(part_engine_partition_load(t->e, 1), 1);
    assert_int_equal(part_engine_partition_load(t->e, 99), 0);

    struct t_done r;
    t_recv(t, a, 2, 30, &r); /* in flight: no longer waiting */
    assert_int_equal(r.count, 2);
    assert_int_equal(part_engine_partition_load(t->e, 0), 4);
    t_delete(t, a, r.msgs[0].receipt, &d);
    assert_int_equal(part_engine_partition_load(t->e, 0), 4);

    struct part_partition_stats st;
    assert_int_equal(part_engine_stats(t->e, 0, &st), SL_OK);
    assert_int_equal(st.backlog, 4);
    assert_int_equal(st.queued_cost, 0);

    t_close(t);
    t_open(t);
    /* the other received message is still in flight: 4 still */
    assert_int_equal(part_engine_partition_load(t->e, 0), 4);
    assert_int_equal(part_engine_partition_load(t->e, 1), 1);
}

/* Through a real writer: one tenant's 60 single-message sends and then
 * another tenant's one reach the writer in one hand-over (submitted from
 * a completion, so corked together: fewer than the 64 a cork holds). In
 * arrival order the quiet send would be the 61st to commit; shared by
 * deficit round robin with batches of 8 jobs it commits in the second
 * batch, after the flooder's first quantum (10 sends). */
#define FLOOD_SENDS 60

struct ordered {
    struct t_done d;
    int at; /* completion order */
};

struct fair_seed {
    struct t_env *t;
    uint64_t flood_q;
    uint64_t quiet_q;
    struct t_done seed;
    int completed;
    struct ordered flood[FLOOD_SENDS];
    struct ordered quiet;
};

static struct fair_seed *fair;

static void on_ordered(struct part_cookie ck, int status, const struct part_result *res)
{
    struct ordered *o = ck.ptr;
    t_on_done((struct part_cookie){&o->d, 0, 0}, status, res);
    o->at = fair->completed++;
}

static void on_fair_seed(struct part_cookie ck, int status, const struct part_result *res)
{
    t_on_done((struct part_cookie){&fair->seed, 0, 0}, status, res);
    struct part_send_entry en = {.body = SL_SLICE_LIT("m"), .delay_s = -1};
    for (int i = 0; i < FLOOD_SENDS; i++) {
        assert_int_equal(part_send(fair->t->c, fair->flood_q, 0, &en, 1,
                                   (struct part_cookie){&fair->flood[i], 0, 0}, on_ordered),
                         SL_OK);
    }
    assert_int_equal(part_send(fair->t->c, fair->quiet_q, 0, &en, 1,
                               (struct part_cookie){&fair->quiet, 0, 0}, on_ordered),
                     SL_OK);
}

static void test_writer_serves_quiet_tenant_next_batch(void **state)
{
    struct t_env *t = *state;
    t_close(t);
    t->max_batch_jobs = 8;
    t_open(t);
    fair = calloc(1, sizeof *fair);
    fair->t = t;
    fair->flood_q = t_create(t, "flood", "f", NULL);
    fair->quiet_q = t_create(t, "quiet", "q", NULL);
    struct part_send_entry en = {.body = SL_SLICE_LIT("seed"), .delay_s = -1};
    assert_int_equal(
        part_send(t->c, fair->flood_q, 1, &en, 1, (struct part_cookie){0}, on_fair_seed), SL_OK);
    t_wait(t, &fair->seed);
    t_wait(t, &fair->quiet.d);
    for (int i = 0; i < FLOOD_SENDS; i++) {
        t_wait(t, &fair->flood[i].d);
        assert_int_equal(fair->flood[i].d.status, SL_OK);
        if (i > 0) { /* the flooder's own sends keep their order */
            assert_true(fair->flood[i].at > fair->flood[i - 1].at);
        }
    }
    assert_int_equal(fair->quiet.d.status, SL_OK);
    assert_int_equal(fair->quiet.at, PART_SCHED_QUANTUM);
    free(fair);
    fair = NULL;
}

/* The cap through a real writer: the flooder's 60 sends reach the writer
 * in one hand-over, so with a cap of 20 the first 20 are queued and the
 * other 40 come back SL_ELIMIT with nothing stored; the quiet tenant's
 * send behind them is stored. */
#define FLOOD_CAP 20

static void test_writer_refuses_past_job_cap(void **state)
{
    struct t_env *t = *state;
    fair = calloc(1, sizeof *fair);
    fair->t = t;
    fair->flood_q = t_create(t, "flood", "f", NULL);
    fair->quiet_q = t_create(t, "quiet", "q", NULL);
    part_tenant_set_job_cap(t->e, "flood", FLOOD_CAP);
    struct part_send_entry en = {.body = SL_SLICE_LIT("seed"), .delay_s = -1};
    assert_int_equal(
        part_send(t->c, fair->flood_q, 1, &en, 1, (struct part_cookie){0}, on_fair_seed), SL_OK);
    t_wait(t, &fair->seed);
    t_wait(t, &fair->quiet.d);
    int stored = 0, limited = 0;
    for (int i = 0; i < FLOOD_SENDS; i++) {
        t_wait(t, &fair->flood[i].d);
        if (fair->flood[i].d.status == SL_OK) {
            assert_true(i < FLOOD_CAP); /* the first ones, in order */
            stored++;
        } else {
            assert_int_equal(fair->flood[i].d.status, SL_ELIMIT);
            limited++;
        }
    }
    assert_int_equal(stored, FLOOD_CAP);
    assert_int_equal(limited, FLOOD_SENDS - FLOOD_CAP);
    assert_int_equal(fair->quiet.d.status, SL_OK);
    struct part_counts c = {0};
    part_queue_counts(t->e, fair->flood_q, 0, &c);
    assert_int_equal(c.ready, FLOOD_CAP);
    free(fair);
    fair = NULL;
}

/* Every job of a tenant that reached a writer is in its wait histogram. */
static void test_wait_histogram(void **state)
{
    struct t_env *t = *state;
    uint64_t a = t_create(t, "acme", "a", NULL);
    struct part_tenant_stats st;
    part_tenant_stats(t->e, "acme", &st);
    uint64_t before = 0;
    for (size_t b = 0; b < PART_WAIT_BUCKETS; b++) {
        before += st.wait_bucket[b];
    }
    t_send(t, a, 0, "x");
    t_send(t, a, 1, "y");
    struct t_done r;
    t_recv(t, a, 10, 30, &r); /* a receive job per partition visited */
    assert_int_equal(r.count, 2);
    part_tenant_stats(t->e, "acme", &st);
    uint64_t after = 0;
    for (size_t b = 0; b < PART_WAIT_BUCKETS; b++) {
        after += st.wait_bucket[b];
    }
    assert_int_equal(after - before, 4);
    const uint64_t *bounds = part_wait_bounds_us();
    for (size_t b = 1; b < PART_WAIT_BUCKETS - 1; b++) {
        assert_true(bounds[b] > bounds[b - 1]);
    }
    part_tenant_stats(t->e, "nobody", &st);
    assert_int_equal(st.wait_sum_us, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_flooder_waits_its_turn),
        cmocka_unit_test(test_shares_by_cost_in_order),
        cmocka_unit_test(test_dear_job_saves_up),
        cmocka_unit_test(test_fence),
        cmocka_unit_test(test_job_cap),
        cmocka_unit_test_setup_teardown(test_load_counts_everyone, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_wait_histogram, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_writer_refuses_past_job_cap, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_writer_serves_quiet_tenant_next_batch, t_setup,
                                        t_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
