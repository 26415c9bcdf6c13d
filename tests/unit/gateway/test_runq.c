/*
 * test_runq.c -- the loop's run queue (gw_runq.h) on a real libuv loop:
 *  - items run in the loop's turn, never inside push, and round robin
 *    across flows (one item per flow per round) in arrival order within
 *    each flow;
 *  - a turn that passed GW_RUNQ_TURN_NS stops, the loop polls without
 *    blocking, and the rest runs in the next turns;
 *  - an item taken out before its turn never runs, and a flow whose last
 *    item is taken out leaves the round;
 *  - an item may push or remove others while it runs;
 *  - with nothing queued the queue keeps no loop alive.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <uv.h>

#include "gw_runq.h"

#define MAX_LOG 64

struct rec_item {
    struct gw_runq_item item; /* first: the callback casts back */
    char name[8];
    uint64_t spin_ns; /* how long it keeps the thread when it runs */
    struct rec_item *push_on_run;
    struct gw_runq_flow *push_to;
    struct rec_item *remove_on_run;
};

static char run_log[MAX_LOG][8];
static int run_count;

static void rec_run(struct gw_runq_item *item)
{
    struct rec_item *r = (struct rec_item *)item;
    assert_true(run_count < MAX_LOG);
    memcpy(run_log[run_count++], r->name, sizeof r->name);
    uint64_t start = uv_hrtime();
    while (uv_hrtime() - start < r->spin_ns) {
    }
    if (r->remove_on_run != NULL)
        gw__runq_remove(&r->remove_on_run->item);
    if (r->push_on_run != NULL)
        gw__runq_push(r->push_to, &r->push_on_run->item, rec_run);
}

static void rec_init(struct rec_item *r, const char *name)
{
    memset(r, 0, sizeof *r);
    snprintf(r->name, sizeof r->name, "%s", name);
}

/* The names run so far, comma-separated, into out. */
static const char *log_text(char *out, size_t cap)
{
    out[0] = '\0';
    for (int i = 0; i < run_count; i++) {
        if (i > 0)
            strncat(out, ",", cap - strlen(out) - 1);
        strncat(out, run_log[i], cap - strlen(out) - 1);
    }
    return out;
}

struct fixture {
    uv_loop_t loop;
    struct gw_runq q;
};

static int setup(void **state)
{
    static struct fixture fx;
    memset(&fx, 0, sizeof fx);
    assert_int_equal(uv_loop_init(&fx.loop), 0);
    assert_int_equal(gw__runq_init(&fx.q, &fx.loop), SL_OK);
    run_count = 0;
    *state = &fx;
    return 0;
}

static void close_walk(uv_handle_t *h, void *arg)
{
    (void)arg;
    if (!uv_is_closing(h))
        uv_close(h, NULL);
}

static int teardown(void **state)
{
    struct fixture *fx = *state;
    uv_walk(&fx->loop, close_walk, NULL);
    uv_run(&fx->loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&fx->loop), 0);
    return 0;
}

static void test_round_robin_across_flows(void **state)
{
    struct fixture *fx = *state;
    struct gw_runq_flow a, b, c;
    gw__runq_flow_init(&a, &fx->q);
    gw__runq_flow_init(&b, &fx->q);
    gw__runq_flow_init(&c, &fx->q);
    struct rec_item a1, a2, a3, b1, c1, c2;
    rec_init(&a1, "a1");
    rec_init(&a2, "a2");
    rec_init(&a3, "a3");
    rec_init(&b1, "b1");
    rec_init(&c1, "c1");
    rec_init(&c2, "c2");
    /* a busy connection's three requests arrive before the others' */
    gw__runq_push(&a, &a1.item, rec_run);
    gw__runq_push(&a, &a2.item, rec_run);
    gw__runq_push(&a, &a3.item, rec_run);
    gw__runq_push(&b, &b1.item, rec_run);
    gw__runq_push(&c, &c1.item, rec_run);
    gw__runq_push(&c, &c2.item, rec_run);
    assert_int_equal(run_count, 0); /* never inside push */
    assert_false(gw__runq_flow_empty(&a));
    uv_run(&fx->loop, UV_RUN_NOWAIT);
    char text[256];
    assert_string_equal(log_text(text, sizeof text), "a1,b1,c1,a2,c2,a3");
    assert_true(gw__runq_flow_empty(&a));
    assert_true(gw__runq_flow_empty(&b));
    assert_true(gw__runq_flow_empty(&c));
    assert_int_equal(fx->q.items_run, 6);
    assert_int_equal(fx->q.turns_cut, 0);
    /* Nothing queued: the loop has nothing alive to wait for. */
    assert_int_equal(uv_run(&fx->loop, UV_RUN_NOWAIT), 0);
}

static void test_long_turn_is_cut_and_resumed(void **state)
{
    struct fixture *fx = *state;
    struct gw_runq_flow hog, quiet;
    gw__runq_flow_init(&hog, &fx->q);
    gw__runq_flow_init(&quiet, &fx->q);
    struct rec_item h[4], q1;
    for (int i = 0; i < 4; i++) {
        char name[8] = {'h', (char)('1' + i), 0};
        rec_init(&h[i], name);
        /* each item alone outlasts a turn */
        h[i].spin_ns = GW_RUNQ_TURN_NS + 50000;
        gw__runq_push(&hog, &h[i].item, rec_run);
    }
    uv_run(&fx->loop, UV_RUN_NOWAIT);
    assert_int_equal(run_count, 1);
    assert_int_equal(fx->q.turns_cut, 1);
    /* What arrives during the cut turn waits behind at most one item of
     * the busy flow. The loop must not block on a poll while items wait:
     * UV_RUN_ONCE returns after one iteration even with no I/O. */
    rec_init(&q1, "q1");
    gw__runq_push(&quiet, &q1.item, rec_run);
    uv_run(&fx->loop, UV_RUN_ONCE);
    char text[256];
    assert_string_equal(log_text(text, sizeof text), "h1,h2");
    uv_run(&fx->loop, UV_RUN_ONCE);
    assert_string_equal(log_text(text, sizeof text), "h1,h2,q1,h3");
    uv_run(&fx->loop, UV_RUN_ONCE);
    assert_string_equal(log_text(text, sizeof text), "h1,h2,q1,h3,h4");
    assert_true(gw__runq_flow_empty(&hog));
    assert_int_equal(uv_run(&fx->loop, UV_RUN_NOWAIT), 0);
}

static void test_removed_items_never_run(void **state)
{
    struct fixture *fx = *state;
    struct gw_runq_flow a, b;
    gw__runq_flow_init(&a, &fx->q);
    gw__runq_flow_init(&b, &fx->q);
    struct rec_item a1, a2, a3, b1;
    rec_init(&a1, "a1");
    rec_init(&a2, "a2");
    rec_init(&a3, "a3");
    rec_init(&b1, "b1");
    gw__runq_push(&a, &a1.item, rec_run);
    gw__runq_push(&a, &a2.item, rec_run);
    gw__runq_push(&a, &a3.item, rec_run);
    gw__runq_push(&b, &b1.item, rec_run);
    assert_true(gw__runq_remove(&a2.item));  /* middle */
    assert_true(gw__runq_remove(&a3.item));  /* tail */
    assert_false(gw__runq_remove(&a3.item)); /* not queued any more */
    assert_true(gw__runq_remove(&b1.item));  /* b's only item: b leaves the round */
    assert_true(gw__runq_flow_empty(&b));
    /* a queued item may be queued again once taken out */
    gw__runq_push(&a, &a3.item, rec_run);
    uv_run(&fx->loop, UV_RUN_NOWAIT);
    char text[256];
    assert_string_equal(log_text(text, sizeof text), "a1,a3");
    /* The last item taken out stops the idle handle: nothing keeps the
     * loop alive. */
    struct rec_item a4;
    rec_init(&a4, "a4");
    gw__runq_push(&a, &a4.item, rec_run);
    assert_true(gw__runq_remove(&a4.item));
    assert_int_equal(uv_run(&fx->loop, UV_RUN_NOWAIT), 0);
    assert_int_equal(run_count, 2);
}

static void test_item_pushes_and_removes_while_running(void **state)
{
    struct fixture *fx = *state;
    struct gw_runq_flow a, b;
    gw__runq_flow_init(&a, &fx->q);
    gw__runq_flow_init(&b, &fx->q);
    struct rec_item a1, a2, b1, b2;
    rec_init(&a1, "a1");
    rec_init(&a2, "a2");
    rec_init(&b1, "b1");
    rec_init(&b2, "b2");
    /* a1 takes b's queued b1 out (its stream was reset), which takes b out
     * of the round, and then queues a new item on b (b's next request),
     * which puts b back at the end of the round */
    a1.remove_on_run = &b1;
    a1.push_on_run = &b2;
    a1.push_to = &b;
    gw__runq_push(&a, &a1.item, rec_run);
    gw__runq_push(&a, &a2.item, rec_run);
    gw__runq_push(&b, &b1.item, rec_run);
    uv_run(&fx->loop, UV_RUN_NOWAIT);
    char text[256];
    assert_string_equal(log_text(text, sizeof text), "a1,a2,b2");
    assert_int_equal(uv_run(&fx->loop, UV_RUN_NOWAIT), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_round_robin_across_flows, setup, teardown),
        cmocka_unit_test_setup_teardown(test_long_turn_is_cut_and_resumed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_removed_items_never_run, setup, teardown),
        cmocka_unit_test_setup_teardown(test_item_pushes_and_removes_while_running, setup,
                                        teardown),
    };
    return cmocka_run_group_tests_name("gw_runq", tests, NULL, NULL);
}
