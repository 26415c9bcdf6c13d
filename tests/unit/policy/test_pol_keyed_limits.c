/*
 * test_pol_keyed_limits.c -- per-queue and per-action buckets inside a
 * tenant (limits.queues, limits.actions): each refuses on its own while
 * the tenant's bucket has room, tokens taken from one bucket come back
 * when another refuses (also under two threads), spill mode spills over
 * any of them, and reloads keep every surviving bucket's level, start new
 * keys full and retire removed ones without freeing them.
 *
 * Snapshots are built by hand (only the fields policy reads); the clock is
 * a parameter, frozen unless a test moves it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <string.h>

#include "pol.h"

#define MS 1000000ull
#define SEC 1000000000ull
#define T0 (1000 * SEC)

/* One tenant "acme" with the tenant bucket tenant_rate and up to four
 * per-queue limits (names sorted, as cfg sorts them). */
struct fixture {
    struct cfg_snapshot snap;
    struct cfg_tenant tenant;
    struct cfg_queue_rate queues[4];
    struct pol_limiter *limiter;
    struct pol_tenant_state *state;
};

static void configure(struct fixture *f, enum cfg_on_excess mode, struct cfg_rate tenant_rate,
                      size_t queue_count, const char *const *queue_names,
                      const struct cfg_rate *queue_rates)
{
    memset(&f->tenant, 0, sizeof(f->tenant));
    f->tenant.name = "acme";
    f->tenant.on_excess = mode;
    f->tenant.limits.requests_per_second = tenant_rate.requests_per_second;
    f->tenant.limits.burst = tenant_rate.burst;
    for (size_t i = 0; i < queue_count; i++) {
        f->queues[i] = (struct cfg_queue_rate){(char *)queue_names[i], queue_rates[i]};
    }
    f->tenant.limits.queue_rate_count = queue_count;
    f->tenant.limits.queue_rates = f->queues;
    memset(&f->snap, 0, sizeof(f->snap));
    f->snap.tenant_count = 1;
    f->snap.tenants = &f->tenant;
}

static void start(struct fixture *f)
{
    f->limiter = pol_limiter_new(&f->snap, T0);
    f->state = pol_limiter_find(f->limiter, "acme", 4);
    assert_non_null(f->state);
}

static struct pol_gcra *queue_rate(struct fixture *f, const char *queue)
{
    return pol_limiter_queue_rate(f->limiter, f->state, queue, strlen(queue));
}

/* One request of `cost` on queue with action key (CFG_ACTION_KEY_COUNT:
 * an action no key limits), as the gateway asks. */
static enum pol_verdict admit(struct fixture *f, const char *queue, enum cfg_action_key key,
                              enum pol_action_class cls, uint32_t cost, uint64_t now,
                              struct pol_admit_result *out)
{
    struct pol_admit_input in = {
        .tenant = &f->tenant,
        .action = cls,
        .cost = cost,
        .now_ns = now,
        .queue_rate = queue_rate(f, queue),
        .action_rate = key < CFG_ACTION_KEY_COUNT ? pol_tenant_action_rate(f->state, key) : NULL,
    };
    return pol_admit(&f->state->rate, &in, out);
}

static uint32_t send_many(struct fixture *f, const char *queue, uint32_t attempts, uint64_t now)
{
    struct pol_admit_result r;
    uint32_t admitted = 0;
    for (uint32_t i = 0; i < attempts; i++) {
        admitted +=
            admit(f, queue, CFG_ACTION_SEND_MESSAGE, POL_ACTION_SEND, 1, now, &r) == POL_ADMIT;
    }
    return admitted;
}

static void test_queue_bucket_refuses_while_tenant_has_room(void **state)
{
    struct fixture f;
    struct pol_admit_result r;
    configure(&f, CFG_EXCESS_REJECT, (struct cfg_rate){100, 50}, 1, (const char *[]){"orders"},
              (struct cfg_rate[]){{10, 3}});
    start(&f);

    assert_non_null(queue_rate(&f, "orders"));
    assert_null(queue_rate(&f, "other"));
    assert_null(queue_rate(&f, "order"));
    assert_int_equal(send_many(&f, "orders", 3, T0), 3);
    assert_int_equal(admit(&f, "orders", CFG_ACTION_SEND_MESSAGE, POL_ACTION_SEND, 1, T0, &r),
                     POL_THROTTLE);
    assert_int_equal(r.reason, POL_REASON_QUEUE_RATE);
    assert_int_equal(r.retry_after_ns, 100 * MS); /* one token of 10/s */
    /* The refusal cost the tenant's bucket nothing; another queue of the
     * same tenant goes on. */
    assert_int_equal(pol_gcra_available(&f.state->rate, T0), 47);
    assert_int_equal(send_many(&f, "other", 5, T0), 5);
    /* A batch costs one token per entry in the queue's bucket too. */
    assert_int_equal(
        admit(&f, "orders", CFG_ACTION_SEND_MESSAGE, POL_ACTION_SEND, 2, T0 + 100 * MS, &r),
        POL_THROTTLE);
    assert_int_equal(
        admit(&f, "orders", CFG_ACTION_SEND_MESSAGE, POL_ACTION_SEND, 2, T0 + 200 * MS, &r),
        POL_ADMIT);
    pol_limiter_free(f.limiter);
}

static void test_action_bucket(void **state)
{
    struct fixture f;
    struct pol_admit_result r;
    configure(&f, CFG_EXCESS_REJECT, (struct cfg_rate){100, 50}, 0, NULL, NULL);
    f.tenant.limits.actions[CFG_ACTION_RECEIVE_MESSAGE] = (struct cfg_rate){1, 2};
    start(&f);

    assert_null(pol_tenant_action_rate(f.state, CFG_ACTION_SEND_MESSAGE));
    for (int i = 0; i < 2; i++) {
        assert_int_equal(admit(&f, "q", CFG_ACTION_RECEIVE_MESSAGE, POL_ACTION_RECEIVE, 1, T0, &r),
                         POL_ADMIT);
    }
    assert_int_equal(admit(&f, "q", CFG_ACTION_RECEIVE_MESSAGE, POL_ACTION_RECEIVE, 1, T0, &r),
                     POL_THROTTLE);
    assert_int_equal(r.reason, POL_REASON_ACTION_RATE);
    assert_int_equal(r.retry_after_ns, 1 * SEC);
    /* Sends, on the same queue, are not limited by it. */
    assert_int_equal(send_many(&f, "q", 10, T0), 10);
    assert_int_equal(pol_gcra_available(&f.state->rate, T0), 38);
    /* It refills at its own rate. */
    assert_int_equal(
        admit(&f, "q", CFG_ACTION_RECEIVE_MESSAGE, POL_ACTION_RECEIVE, 1, T0 + SEC, &r), POL_ADMIT);
    pol_limiter_free(f.limiter);
}

/* Tokens taken from the buckets checked first come back when a later one
 * refuses: nothing is lost. */
static void test_refusal_refunds_the_other_buckets(void **state)
{
    struct fixture f;
    struct pol_admit_result r;
    configure(&f, CFG_EXCESS_REJECT, (struct cfg_rate){10, 4}, 1, (const char *[]){"orders"},
              (struct cfg_rate[]){{10, 3}});
    f.tenant.limits.actions[CFG_ACTION_SEND_MESSAGE] = (struct cfg_rate){10, 20};
    start(&f);
    struct pol_gcra *action = pol_tenant_action_rate(f.state, CFG_ACTION_SEND_MESSAGE);
    struct pol_gcra *queue = queue_rate(&f, "orders");

    /* The queue refuses: the action's token comes back. */
    assert_int_equal(send_many(&f, "orders", 3, T0), 3);
    assert_int_equal(admit(&f, "orders", CFG_ACTION_SEND_MESSAGE, POL_ACTION_SEND, 1, T0, &r),
                     POL_THROTTLE);
    assert_int_equal(r.reason, POL_REASON_QUEUE_RATE);
    assert_int_equal(pol_gcra_available(action, T0), 17);
    assert_int_equal(pol_gcra_available(queue, T0), 0);
    assert_int_equal(pol_gcra_available(&f.state->rate, T0), 1);
    /* 200 ms later (+2 tokens in each 10/s bucket): the queue refuses a
     * batch of 4 and the action's tokens come back; a batch of 2 passes. */
    uint64_t later = T0 + 200 * MS;
    assert_int_equal(admit(&f, "orders", CFG_ACTION_SEND_MESSAGE, POL_ACTION_SEND, 4, later, &r),
                     POL_THROTTLE);
    assert_int_equal(r.reason, POL_REASON_QUEUE_RATE);
    assert_int_equal(pol_gcra_available(action, later), 19);
    assert_int_equal(admit(&f, "orders", CFG_ACTION_SEND_MESSAGE, POL_ACTION_SEND, 2, later, &r),
                     POL_ADMIT);
    assert_int_equal(pol_gcra_available(action, later), 17);
    assert_int_equal(pol_gcra_available(queue, later), 0);
    assert_int_equal(pol_gcra_available(&f.state->rate, later), 1);
    /* 200 ms more: action 19, queue 2, tenant 3. A request on another
     * queue with an action no key limits takes 2 of the tenant's; then the
     * tenant refuses a batch of 2 that the action and the queue let
     * through, and both get their tokens back. */
    uint64_t then = later + 200 * MS;
    assert_int_equal(admit(&f, "x", CFG_ACTION_KEY_COUNT, POL_ACTION_OTHER, 2, then, &r),
                     POL_ADMIT);
    assert_int_equal(admit(&f, "orders", CFG_ACTION_SEND_MESSAGE, POL_ACTION_SEND, 2, then, &r),
                     POL_THROTTLE);
    assert_int_equal(r.reason, POL_REASON_RATE);
    assert_int_equal(r.retry_after_ns, 100 * MS);
    assert_int_equal(pol_gcra_available(action, then), 19);
    assert_int_equal(pol_gcra_available(queue, then), 2);
    assert_int_equal(pol_gcra_available(&f.state->rate, then), 1);
    pol_limiter_free(f.limiter);
}

/* In spill mode a send over a queue's or an action's bucket spills like a
 * send over the tenant's, spending nothing; other actions are throttled. */
static void test_spill_mode(void **state)
{
    struct fixture f;
    struct pol_admit_result r;
    configure(&f, CFG_EXCESS_SPILL, (struct cfg_rate){10, 10}, 1, (const char *[]){"orders"},
              (struct cfg_rate[]){{10, 1}});
    f.tenant.limits.actions[CFG_ACTION_DELETE_MESSAGE] = (struct cfg_rate){10, 1};
    start(&f);

    assert_int_equal(send_many(&f, "orders", 1, T0), 1);
    assert_int_equal(admit(&f, "orders", CFG_ACTION_SEND_MESSAGE, POL_ACTION_SEND, 1, T0, &r),
                     POL_SPILL);
    assert_int_equal(r.reason, POL_REASON_QUEUE_RATE);
    assert_int_equal(admit(&f, "orders", CFG_ACTION_RECEIVE_MESSAGE, POL_ACTION_RECEIVE, 1, T0, &r),
                     POL_THROTTLE);
    assert_int_equal(r.reason, POL_REASON_QUEUE_RATE);
    assert_int_equal(pol_gcra_available(&f.state->rate, T0), 9);
    assert_int_equal(admit(&f, "q", CFG_ACTION_DELETE_MESSAGE, POL_ACTION_OTHER, 1, T0, &r),
                     POL_ADMIT);
    assert_int_equal(admit(&f, "q", CFG_ACTION_DELETE_MESSAGE, POL_ACTION_OTHER, 1, T0, &r),
                     POL_THROTTLE);
    assert_int_equal(r.reason, POL_REASON_ACTION_RATE);
    assert_int_equal(pol_gcra_available(&f.state->rate, T0), 8);
    pol_limiter_free(f.limiter);
}

/* SIGHUP: a key that survives keeps its level under its new limits (no
 * free burst), a new key starts full, a removed key stops limiting, and
 * one that comes back resumes where it was. */
static void test_reload(void **state)
{
    struct fixture f;
    const char *names[] = {"a", "b", "c"};
    configure(&f, CFG_EXCESS_REJECT, (struct cfg_rate){1000, 1000}, 2, names,
              (struct cfg_rate[]){{10, 5}, {10, 5}});
    f.tenant.limits.actions[CFG_ACTION_SEND_MESSAGE] = (struct cfg_rate){1, 100};
    start(&f);
    struct pol_gcra *a = queue_rate(&f, "a");
    struct pol_gcra *b = queue_rate(&f, "b");
    struct pol_gcra *send = pol_tenant_action_rate(f.state, CFG_ACTION_SEND_MESSAGE);

    assert_int_equal(send_many(&f, "a", 10, T0), 5);
    assert_int_equal(send_many(&f, "b", 2, T0), 2);
    /* Same file: nothing changes. */
    pol_limiter_apply(f.limiter, &f.snap, T0);
    assert_ptr_equal(queue_rate(&f, "a"), a);
    assert_int_equal(send_many(&f, "a", 10, T0), 0);
    /* a: larger burst and rate, still empty; b: burst 2 clamps its 3;
     * c: new, full; the send action: larger burst, level kept (93). */
    configure(&f, CFG_EXCESS_REJECT, (struct cfg_rate){1000, 1000}, 3, names,
              (struct cfg_rate[]){{1000, 50}, {10, 2}, {10, 4}});
    f.tenant.limits.actions[CFG_ACTION_SEND_MESSAGE] = (struct cfg_rate){1, 200};
    pol_limiter_apply(f.limiter, &f.snap, T0);
    assert_ptr_equal(queue_rate(&f, "a"), a);
    assert_ptr_equal(queue_rate(&f, "b"), b);
    assert_ptr_equal(pol_tenant_action_rate(f.state, CFG_ACTION_SEND_MESSAGE), send);
    assert_int_equal(pol_gcra_available(send, T0), 93);
    assert_int_equal(send_many(&f, "a", 10, T0), 0);
    assert_int_equal(send_many(&f, "a", 10, T0 + 5 * MS), 5); /* 1000/s */
    assert_int_equal(send_many(&f, "b", 10, T0 + 5 * MS), 2);
    assert_int_equal(send_many(&f, "c", 10, T0 + 5 * MS), 4);
    /* b and the send action removed: b no longer limits, and a pointer
     * taken before stays valid (it belongs to the limiter until freed). */
    configure(&f, CFG_EXCESS_REJECT, (struct cfg_rate){1000, 1000}, 2, (const char *[]){"a", "c"},
              (struct cfg_rate[]){{1000, 50}, {10, 4}});
    pol_limiter_apply(f.limiter, &f.snap, T0 + 5 * MS);
    assert_null(queue_rate(&f, "b"));
    assert_null(pol_tenant_action_rate(f.state, CFG_ACTION_SEND_MESSAGE));
    assert_int_equal(send_many(&f, "b", 20, T0 + 5 * MS), 20);
    assert_int_equal(pol_gcra_available(b, T0 + 5 * MS), 0);
    /* b comes back: it resumes empty (+1 token after 100 ms at 10/s), not
     * full. */
    configure(&f, CFG_EXCESS_REJECT, (struct cfg_rate){1000, 1000}, 3, names,
              (struct cfg_rate[]){{1000, 50}, {10, 2}, {10, 4}});
    pol_limiter_apply(f.limiter, &f.snap, T0 + 105 * MS);
    assert_ptr_equal(queue_rate(&f, "b"), b);
    assert_int_equal(send_many(&f, "b", 10, T0 + 105 * MS), 1);
    pol_limiter_free(f.limiter);
}

/* Two threads through pol_admit with a frozen clock: every bucket loses
 * exactly one token per admitted request, refused requests none. */
struct hammer {
    struct fixture *f;
    uint32_t admitted;
};

static void *hammer_loop(void *arg)
{
    struct hammer *h = arg;
    h->admitted = send_many(h->f, "orders", 2000, T0);
    return NULL;
}

static void test_two_threads_lose_no_token(void **state)
{
    struct fixture f;
    configure(&f, CFG_EXCESS_REJECT, (struct cfg_rate){1, 1500}, 1, (const char *[]){"orders"},
              (struct cfg_rate[]){{1, 1000}});
    f.tenant.limits.actions[CFG_ACTION_SEND_MESSAGE] = (struct cfg_rate){1, 1200};
    start(&f);
    struct hammer h[2] = {{&f, 0}, {&f, 0}};
    pthread_t th[2];

    for (int i = 0; i < 2; i++) {
        assert_int_equal(pthread_create(&th[i], NULL, hammer_loop, &h[i]), 0);
    }
    for (int i = 0; i < 2; i++) {
        assert_int_equal(pthread_join(th[i], NULL), 0);
    }
    assert_int_equal(h[0].admitted + h[1].admitted, 1000);
    assert_int_equal(pol_gcra_available(queue_rate(&f, "orders"), T0), 0);
    assert_int_equal(
        pol_gcra_available(pol_tenant_action_rate(f.state, CFG_ACTION_SEND_MESSAGE), T0), 200);
    assert_int_equal(pol_gcra_available(&f.state->rate, T0), 500);
    pol_limiter_free(f.limiter);
}

static void test_refund(void **state)
{
    struct pol_gcra g;

    pol_gcra_init(&g, 10, 5);
    assert_true(pol_gcra_take(&g, 3, POL_PPM, T0, NULL));
    pol_gcra_refund(&g, 3);
    assert_int_equal(pol_gcra_available(&g, T0), 5);
    /* A full meter stays full; an unlimited one has nothing to give. */
    pol_gcra_refund(&g, 3);
    assert_int_equal(pol_gcra_available(&g, T0), 5);
    assert_true(pol_gcra_take(&g, 5, POL_PPM, T0, NULL));
    assert_false(pol_gcra_take(&g, 1, POL_PPM, T0, NULL));
    pol_gcra_init(&g, 0, 5);
    pol_gcra_refund(&g, 3);
    assert_int_equal(pol_gcra_available(&g, T0), 5);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_queue_bucket_refuses_while_tenant_has_room),
        cmocka_unit_test(test_action_bucket),
        cmocka_unit_test(test_refusal_refunds_the_other_buckets),
        cmocka_unit_test(test_spill_mode),
        cmocka_unit_test(test_reload),
        cmocka_unit_test(test_two_threads_lose_no_token),
        cmocka_unit_test(test_refund),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
