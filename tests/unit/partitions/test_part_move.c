/*
 * test_part_move.c -- part_move (DLQ redrive): messages go back to their
 * own source queues or to a given destination with body, attributes and
 * group intact and a new identity (id, send time, receive count 0), only
 * ready rows move, the counters follow the commit, the cursor resumes
 * where the last job stopped, and a batch is all or nothing.
 *
 * Injected clock, a real loop on the test thread, temp dirs (see
 * part_test_util.h).
 */
#include "part_test_util.h"

struct move_done {
    bool done;
    int status;
    uint64_t moved;
    uint64_t skipped;
    uint64_t cursor;
    bool exhausted;
    bool held;
};

static void on_move(struct part_cookie ck, int status, const struct part_result *res)
{
    struct move_done *d = ck.ptr;
    assert_false(d->done);
    d->done = true;
    d->status = status;
    d->moved = res->moved;
    d->skipped = res->move_skipped;
    d->cursor = res->move_cursor;
    d->exhausted = res->move_exhausted;
    d->held = res->move_held;
}

static void move_wait(struct t_env *t, struct move_done *d)
{
    for (int i = 0; i < 100000 && !d->done; i++) {
        uv_run(&t->loop, UV_RUN_ONCE);
    }
    assert_true(d->done);
}

/* part_move_req.held: the one queue id *arg (0: none) is held. */
static bool held_queue(void *arg, uint64_t dest_queue_id)
{
    return dest_queue_id == *(const uint64_t *)arg;
}

/* One move job, run to completion; held (NULL: no predicate) names the
 * destination held_queue holds. */
static struct move_done t_move_held(struct t_env *t, uint64_t q, uint32_t p, uint64_t dest,
                                    uint64_t after, uint32_t max, uint64_t *held)
{
    struct move_done d = {0};
    struct part_move_req req = {.queue_id = q,
                                .partition = p,
                                .dest_queue_id = dest,
                                .after_sequence = after,
                                .max_messages = max,
                                .held = held != NULL ? held_queue : NULL,
                                .held_arg = held};
    assert_int_equal(part_move(t->c, &req, (struct part_cookie){&d, 0, 0}, on_move), SL_OK);
    move_wait(t, &d);
    return d;
}

static struct move_done t_move(struct t_env *t, uint64_t q, uint32_t p, uint64_t dest,
                               uint64_t after, uint32_t max)
{
    return t_move_held(t, q, p, dest, after, max, NULL);
}

/* A received message with its attribute blobs (t_on_done keeps bodies
 * only). */
struct full_msg {
    char id[PART_MSG_ID_LEN + 1];
    char body[64];
    char attrs[64];
    char sys[64];
    char group[32];
    uint32_t receive_count;
    uint64_t source;
    uint64_t sent_ms;
};

struct full_done {
    bool done;
    int status;
    size_t n;
    struct full_msg m[PART_MAX_BATCH];
};

static void on_full(struct part_cookie ck, int status, const struct part_result *res)
{
    struct full_done *d = ck.ptr;
    d->done = true;
    d->status = status;
    d->n = res->message_count;
    for (size_t i = 0; i < res->message_count; i++) {
        const struct part_message *m = &res->messages[i];
        struct full_msg *o = &d->m[i];
        snprintf(o->id, sizeof o->id, "%s", m->message_id);
        snprintf(o->body, sizeof o->body, "%.*s", (int)m->body.n, m->body.p);
        snprintf(o->attrs, sizeof o->attrs, "%.*s", (int)m->attrs.n, m->attrs.p);
        snprintf(o->sys, sizeof o->sys, "%.*s", (int)m->sys_attrs.n, m->sys_attrs.p);
        snprintf(o->group, sizeof o->group, "%s", m->group_id ? m->group_id : "");
        o->receive_count = m->receive_count;
        o->source = m->source_queue_id;
        o->sent_ms = m->sent_ms;
    }
}

static void recv_full(struct t_env *t, uint64_t q, int32_t vis, struct full_done *d)
{
    uint32_t parts[2] = {0, 1};
    struct part_receive_req req = {.queue_id = q,
                                   .partitions = parts,
                                   .partition_count = t->nparts,
                                   .max_messages = PART_MAX_BATCH,
                                   .visibility_s = vis};
    memset(d, 0, sizeof *d);
    assert_int_equal(part_receive(t->c, &req, (struct part_cookie){d, 0, 0}, on_full, NULL), SL_OK);
    for (int i = 0; i < 100000 && !d->done; i++) {
        uv_run(&t->loop, UV_RUN_ONCE);
    }
    assert_true(d->done);
    assert_int_equal(d->status, SL_OK);
}

static const struct full_msg *find_body(const struct full_done *d, const char *body)
{
    for (size_t i = 0; i < d->n; i++) {
        if (strcmp(d->m[i].body, body) == 0) {
            return &d->m[i];
        }
    }
    return NULL;
}

static void send_full(struct t_env *t, uint64_t q, uint32_t p, const char *body, const char *group)
{
    struct part_send_entry en = {.body = sl_slice_cstr(body),
                                 .attrs = sl_slice_cstr("attr-of-"),
                                 .sys_attrs = sl_slice_cstr("sys"),
                                 .group_id = group ? sl_slice_cstr(group) : (struct sl_slice){0},
                                 .delay_s = -1};
    struct t_done d;
    assert_int_equal(part_send(t->c, q, p, &en, 1, t_ck(&d), t_on_done), SL_OK);
    t_wait(t, &d);
    assert_int_equal(d.status, SL_OK);
}

/* A source queue with maxReceiveCount 1 into dlq. */
static uint64_t make_source(struct t_env *t, const char *name, uint64_t dlq)
{
    struct part_queue_config cfg = part_queue_config_default();
    cfg.dlq_target_id = dlq;
    cfg.max_receive_count = 1;
    return t_create(t, "acme", name, &cfg);
}

/* The DLQ "dead" and two sources, "a" and "b", that dead-letter into it. */
static void make_two_sources(struct t_env *t, uint64_t *dlq, uint64_t *a, uint64_t *b)
{
    *dlq = t_create(t, "acme", "dead", NULL);
    *a = make_source(t, "a", *dlq);
    *b = make_source(t, "b", *dlq);
}

/* Receives src's messages twice (lease 0 in between), which moves every
 * one of them to its DLQ. */
static void dead_letter_all(struct t_env *t, uint64_t src)
{
    struct t_done r;
    t_recv(t, src, 10, 0, &r);
    t_sync(t);
    t_recv(t, src, 10, 0, &r);
    assert_int_equal(r.count, 0);
    struct part_counts c = t_counts(t, src);
    assert_int_equal(c.ready + c.inflight + c.delayed, 0);
}

static void test_back_to_each_source(void **state)
{
    struct t_env *t = *state;
    uint64_t dlq, a, b;
    make_two_sources(t, &dlq, &a, &b);
    send_full(t, a, 0, "a0", NULL);
    send_full(t, a, 1, "a1", "g1");
    send_full(t, b, 0, "b0", NULL);
    dead_letter_all(t, a);
    dead_letter_all(t, b);
    assert_int_equal(t_counts(t, dlq).ready, 3);

    /* What the DLQ holds: the old ids, and where each came from. */
    struct full_done before;
    recv_full(t, dlq, 0, &before);
    assert_int_equal(before.n, 3);
    assert_int_equal(find_body(&before, "a0")->source, a);
    assert_int_equal(find_body(&before, "b0")->source, b);
    t_sync(t);
    t_advance(t, 5000);

    struct move_done m0 = t_move(t, dlq, 0, 0, 0, PART_MAX_MOVE);
    assert_int_equal(m0.status, SL_OK);
    assert_int_equal(m0.moved, 2);
    assert_int_equal(m0.skipped, 0);
    assert_true(m0.exhausted);
    struct move_done m1 = t_move(t, dlq, 1, 0, 0, PART_MAX_MOVE);
    assert_int_equal(m1.moved, 1);
    assert_true(m1.exhausted);

    struct part_counts c = t_counts(t, dlq);
    assert_int_equal(c.ready + c.inflight + c.delayed, 0);
    assert_int_equal(t_counts(t, a).ready, 2);
    assert_int_equal(t_counts(t, b).ready, 1);
    int64_t backlog, inflight;
    part_tenant_counts(t->e, "acme", &backlog, &inflight);
    assert_int_equal(backlog, 3);
    assert_int_equal(inflight, 0);

    struct full_done got;
    recv_full(t, a, 30, &got);
    assert_int_equal(got.n, 2);
    const struct full_msg *a1 = find_body(&got, "a1");
    assert_non_null(a1);
    assert_string_equal(a1->attrs, "attr-of-");
    assert_string_equal(a1->sys, "sys");
    assert_string_equal(a1->group, "g1");
    /* a new message of its queue, as SQS redrive makes it */
    assert_string_not_equal(a1->id, find_body(&before, "a1")->id);
    assert_int_equal(a1->receive_count, 1);
    assert_int_equal(a1->source, 0);
    assert_int_equal(a1->sent_ms, T_START_MS + 5000);
    recv_full(t, b, 30, &got);
    assert_int_equal(got.n, 1);
    assert_string_equal(got.m[0].body, "b0");
}

static void test_to_destination(void **state)
{
    struct t_env *t = *state;
    uint64_t dlq = t_create(t, "acme", "dead", NULL);
    uint64_t src = make_source(t, "src", dlq);
    uint64_t dest = t_create(t, "acme", "elsewhere", NULL);
    send_full(t, src, 1, "x", NULL);
    send_full(t, src, 1, "y", NULL);
    dead_letter_all(t, src);
    struct move_done m = t_move(t, dlq, 1, dest, 0, 10);
    assert_int_equal(m.status, SL_OK);
    assert_int_equal(m.moved, 2);
    assert_int_equal(t_counts(t, dest).ready, 2);
    assert_int_equal(t_counts(t, src).ready, 0);
    assert_int_equal(t_counts(t, dlq).ready, 0);
    struct full_done got;
    recv_full(t, dest, 30, &got);
    assert_int_equal(got.n, 2);
    assert_non_null(find_body(&got, "x"));
    assert_non_null(find_body(&got, "y"));
    assert_string_equal(got.m[0].attrs, "attr-of-");
}

static void test_only_ready_messages(void **state)
{
    struct t_env *t = *state;
    uint64_t dlq = t_create(t, "acme", "dead", NULL);
    uint64_t src = make_source(t, "src", dlq);
    uint64_t dest = t_create(t, "acme", "dest", NULL);
    send_full(t, src, 0, "held", NULL);
    dead_letter_all(t, src);
    /* now in flight in the DLQ */
    struct full_done held;
    recv_full(t, dlq, 60, &held);
    assert_int_equal(held.n, 1);
    /* delayed in the DLQ */
    struct t_done d;
    t_send_ex(t, dlq, 0, "later", 60, false, 0, &d);
    assert_int_equal(d.status, SL_OK);
    /* ready, but sent straight to the DLQ: it has no source to go back to */
    t_send(t, dlq, 0, "orphan");

    struct move_done m = t_move(t, dlq, 0, 0, 0, PART_MAX_MOVE);
    assert_int_equal(m.status, SL_OK);
    assert_int_equal(m.moved, 0);
    assert_int_equal(m.skipped, 1);
    assert_true(m.exhausted);
    struct part_counts c = t_counts(t, dlq);
    assert_int_equal(c.ready, 1);
    assert_int_equal(c.inflight, 1);
    assert_int_equal(c.delayed, 1);

    /* with a destination the orphan moves; in flight and delayed stay */
    m = t_move(t, dlq, 0, dest, 0, PART_MAX_MOVE);
    assert_int_equal(m.moved, 1);
    c = t_counts(t, dlq);
    assert_int_equal(c.ready, 0);
    assert_int_equal(c.inflight, 1);
    assert_int_equal(c.delayed, 1);
    assert_int_equal(t_counts(t, dest).ready, 1);
}

static void test_cursor_resumes(void **state)
{
    struct t_env *t = *state;
    uint64_t dlq = t_create(t, "acme", "dead", NULL);
    uint64_t dest = t_create(t, "acme", "dest", NULL);
    for (int i = 0; i < 5; i++) {
        char body[8];
        snprintf(body, sizeof body, "m%d", i);
        t_send(t, dlq, 0, body);
    }
    struct move_done m = t_move(t, dlq, 0, dest, 0, 2);
    assert_int_equal(m.moved, 2);
    assert_false(m.exhausted);
    uint64_t cursor = m.cursor;
    assert_true(cursor > 0);
    m = t_move(t, dlq, 0, dest, cursor, 2);
    assert_int_equal(m.moved, 2);
    assert_true(m.cursor > cursor);
    assert_false(m.exhausted);
    m = t_move(t, dlq, 0, dest, m.cursor, 2);
    assert_int_equal(m.moved, 1);
    assert_true(m.exhausted);
    assert_int_equal(t_counts(t, dlq).ready, 0);
    assert_int_equal(t_counts(t, dest).ready, 5);
    /* oldest first */
    struct t_done r;
    t_recv(t, dest, 10, 30, &r);
    assert_int_equal(r.count, 5);
    assert_string_equal(r.msgs[0].body, "m0");
    assert_string_equal(r.msgs[4].body, "m4");
}

/* A held destination (a queue paused for enqueue) keeps its rows in the
 * DLQ while the others move, and the cursor stays before the first kept
 * row so a later job picks them up once it is let go. */
static void test_held_destination_waits(void **state)
{
    struct t_env *t = *state;
    uint64_t dlq, a, b;
    make_two_sources(t, &dlq, &a, &b);
    send_full(t, a, 0, "a0", NULL);
    dead_letter_all(t, a);
    send_full(t, b, 0, "b0", NULL);
    dead_letter_all(t, b);
    send_full(t, a, 0, "a1", NULL);
    dead_letter_all(t, a);
    assert_int_equal(t_counts(t, dlq).ready, 3);

    /* Each back to its source, b held: a0 and a1 move, b0 waits. */
    uint64_t held = b;
    struct move_done m = t_move_held(t, dlq, 0, 0, 0, PART_MAX_MOVE, &held);
    assert_int_equal(m.status, SL_OK);
    assert_int_equal(m.moved, 2);
    assert_true(m.held);
    assert_false(m.exhausted);
    assert_int_equal(t_counts(t, a).ready, 2);
    assert_int_equal(t_counts(t, b).ready, 0);
    assert_int_equal(t_counts(t, dlq).ready, 1);
    /* Still held: nothing moves, the cursor stays. */
    struct move_done again = t_move_held(t, dlq, 0, 0, m.cursor, PART_MAX_MOVE, &held);
    assert_int_equal(again.moved, 0);
    assert_true(again.held);
    assert_int_equal(again.cursor, m.cursor);
    /* Let go: the rest moves, each message once. */
    held = 0;
    again = t_move_held(t, dlq, 0, 0, m.cursor, PART_MAX_MOVE, &held);
    assert_int_equal(again.moved, 1);
    assert_false(again.held);
    assert_true(again.exhausted);
    assert_int_equal(t_counts(t, a).ready, 2);
    assert_int_equal(t_counts(t, b).ready, 1);
    assert_int_equal(t_counts(t, dlq).ready, 0);

    /* An explicit destination held: nothing of the batch moves. */
    uint64_t dest = t_create(t, "acme", "dest", NULL);
    t_send(t, dlq, 0, "d0");
    held = dest;
    m = t_move_held(t, dlq, 0, dest, 0, PART_MAX_MOVE, &held);
    assert_int_equal(m.moved, 0);
    assert_true(m.held);
    assert_int_equal(t_counts(t, dlq).ready, 1);
    assert_int_equal(t_counts(t, dest).ready, 0);
}

/* A failing row rolls the whole batch back: nothing moved, counters as
 * before, and the same batch succeeds once the fault is gone. */
static void test_batch_is_atomic(void **state)
{
    struct t_env *t = *state;
    uint64_t dlq = t_create(t, "acme", "dead", NULL);
    uint64_t dest = t_create(t, "acme", "dest", NULL);
    t_send(t, dlq, 0, "b1");
    t_send(t, dlq, 0, "b2");
    t_send(t, dlq, 0, "b3");
    t_sync(t);

    const char *trigger = "CREATE TRIGGER t_fault BEFORE UPDATE OF queue_id ON msg"
                          " WHEN OLD.body = CAST('b2' AS BLOB)"
                          " BEGIN SELECT RAISE(ABORT, 'injected fault'); END;";
    sqlite3 *db = t_fault(t, 0, trigger);

    struct move_done m = t_move(t, dlq, 0, dest, 0, 10);
    assert_int_equal(m.status, SL_EIO);
    assert_int_equal(t_counts(t, dlq).ready, 3);
    assert_int_equal(t_counts(t, dest).ready, 0);
    struct t_done r;
    t_recv(t, dest, 10, 30, &r);
    assert_int_equal(r.count, 0);

    t_fault_clear(db);
    assert_true(part_engine_partition_ok(t->e, 0));
    m = t_move(t, dlq, 0, dest, 0, 10);
    assert_int_equal(m.status, SL_OK);
    assert_int_equal(m.moved, 3);
    assert_int_equal(t_counts(t, dlq).ready, 0);
    assert_int_equal(t_counts(t, dest).ready, 3);
}

static void test_destination_deleted_meanwhile(void **state)
{
    struct t_env *t = *state;
    uint64_t dlq = t_create(t, "acme", "dead", NULL);
    uint64_t dest = t_create(t, "acme", "dest", NULL);
    t_send(t, dlq, 1, "m");
    struct move_done m = {0};
    struct part_move_req req = {
        .queue_id = dlq, .partition = 1, .dest_queue_id = dest, .max_messages = 10};
    assert_int_equal(part_move(t->c, &req, (struct part_cookie){&m, 0, 0}, on_move), SL_OK);
    struct t_done d;
    assert_int_equal(part_queue_delete(t->c, dest, t_ck(&d), t_on_done), SL_OK);
    t_wait(t, &d);
    move_wait(t, &m);
    /* Either order is fine; the message is never lost. */
    if (m.status == SL_OK) {
        assert_int_equal(m.moved, 1);
    } else {
        assert_int_equal(m.status, SL_ENOTFOUND);
        assert_int_equal(t_counts(t, dlq).ready, 1);
    }
    /* after the delete, a move to it is refused at submit */
    assert_int_equal(part_move(t->c, &req, (struct part_cookie){&m, 0, 0}, on_move), SL_ENOTFOUND);
}

/* A loop may close its client while a background move is in flight (a
 * shutdown): the move still commits, its callback is not called, and
 * nothing leaks (ASan). */
static void test_client_closed_while_moving(void **state)
{
    struct t_env *t = *state;
    uint64_t dlq = t_create(t, "acme", "dead", NULL);
    uint64_t dest = t_create(t, "acme", "dest", NULL);
    t_send(t, dlq, 0, "m1");
    t_send(t, dlq, 0, "m2");
    struct move_done m = {0};
    struct part_move_req req = {
        .queue_id = dlq, .partition = 0, .dest_queue_id = dest, .max_messages = 10};
    assert_int_equal(part_move(t->c, &req, (struct part_cookie){&m, 0, 0}, on_move), SL_OK);
    part_client_close(t->c);
    uv_run(&t->loop, UV_RUN_NOWAIT);
    assert_int_equal(part_client_new(t->e, &t->loop, &t->c), SL_OK);
    t_sync(t);
    assert_false(m.done);
    assert_int_equal(t_counts(t, dlq).ready, 0);
    assert_int_equal(t_counts(t, dest).ready, 2);
}

static void test_submit_errors(void **state)
{
    struct t_env *t = *state;
    uint64_t dlq = t_create(t, "acme", "dead", NULL);
    uint64_t other = t_create(t, "zeta", "theirs", NULL);
    struct move_done m = {0};
    struct part_cookie ck = {&m, 0, 0};
    struct part_move_req req = {.queue_id = dlq, .partition = 0, .max_messages = 1};
    req.partition = 2;
    assert_int_equal(part_move(t->c, &req, ck, on_move), SL_EINVAL);
    req.partition = 0;
    req.max_messages = 0;
    assert_int_equal(part_move(t->c, &req, ck, on_move), SL_EINVAL);
    req.max_messages = PART_MAX_MOVE + 1;
    assert_int_equal(part_move(t->c, &req, ck, on_move), SL_EINVAL);
    req.max_messages = 1;
    req.dest_queue_id = dlq;
    assert_int_equal(part_move(t->c, &req, ck, on_move), SL_EINVAL);
    req.dest_queue_id = other; /* another tenant's queue is not a destination */
    assert_int_equal(part_move(t->c, &req, ck, on_move), SL_ENOTFOUND);
    req.dest_queue_id = 0;
    req.queue_id = 999999;
    assert_int_equal(part_move(t->c, &req, ck, on_move), SL_ENOTFOUND);
    assert_int_equal(part_move(t->c, NULL, ck, on_move), SL_EINVAL);
    assert_false(m.done);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_back_to_each_source, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_to_destination, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_only_ready_messages, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_cursor_resumes, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_held_destination_waits, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_batch_is_atomic, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_destination_deleted_meanwhile, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_client_closed_while_moving, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_submit_errors, t_setup, t_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
