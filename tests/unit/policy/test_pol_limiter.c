/*
 * test_pol_limiter.c -- the per-tenant registry: lookup, reload semantics,
 * long-poll caps, and lookups racing with reloads.
 *
 * Snapshots are built by hand (only the fields policy reads), so these
 * tests do not depend on the YAML loader.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pol.h"

#define MS 1000000ull
#define SEC 1000000000ull
#define T0 (1000 * SEC)

struct fixture {
    struct cfg_snapshot snap;
    struct cfg_tenant tenants[3];
};

static struct cfg_limits limits(double rps, uint32_t burst, uint32_t long_polls)
{
    return (struct cfg_limits){.requests_per_second = rps,
                               .burst = burst,
                               .max_inflight = 0,
                               .max_backlog = 0,
                               .max_long_polls = long_polls,
                               .max_concurrent_requests = long_polls};
}

/* names must be sorted, as cfg sorts them. */
static void make(struct fixture *f, size_t n, char **names, const struct cfg_limits *l)
{
    memset(f, 0, sizeof(*f));
    for (size_t i = 0; i < n; i++) {
        f->tenants[i].name = names[i];
        f->tenants[i].limits = l[i];
    }
    f->snap.tenant_count = n;
    f->snap.tenants = f->tenants;
}

static uint32_t take_many(struct pol_tenant_state *t, uint32_t attempts, uint64_t now)
{
    uint32_t admitted = 0;
    for (uint32_t i = 0; i < attempts; i++) {
        admitted += pol_gcra_take(&t->rate, 1, POL_PPM, now, NULL);
    }
    return admitted;
}

static void test_find(void **state)
{
    struct fixture f;
    make(&f, 3, (char *[]){"acme", "beta", "zeta"},
         (struct cfg_limits[]){limits(10, 5, 1), limits(10, 7, 1), limits(10, 9, 1)});
    struct pol_limiter *l = pol_limiter_new(&f.snap, T0);

    assert_int_equal(pol_limiter_count(l), 3);
    struct pol_tenant_state *acme = pol_limiter_find(l, "acme", 4);
    assert_non_null(acme);
    assert_string_equal(acme->name, "acme");
    /* Length, not NUL, ends the name. */
    assert_ptr_equal(pol_limiter_find(l, "acme-and-more", 4), acme);
    assert_null(pol_limiter_find(l, "acm", 3));
    assert_null(pol_limiter_find(l, "acmee", 5));
    assert_null(pol_limiter_find(l, "nobody", 6));
    assert_string_equal(pol_limiter_find(l, "zeta", 4)->name, "zeta");
    /* Each starts full with its own burst. */
    assert_int_equal(take_many(pol_limiter_find(l, "beta", 4), 100, T0), 7);
    assert_int_equal(take_many(acme, 100, T0), 5);
    pol_limiter_free(l);
    pol_limiter_free(NULL);
}

static void test_reload_keeps_state_and_takes_new_rates(void **state)
{
    struct fixture f;
    make(&f, 2, (char *[]){"acme", "beta"},
         (struct cfg_limits[]){limits(10, 5, 1), limits(10, 5, 1)});
    struct pol_limiter *l = pol_limiter_new(&f.snap, T0);
    struct pol_tenant_state *acme = pol_limiter_find(l, "acme", 4);

    assert_int_equal(take_many(acme, 100, T0), 5);
    /* SIGHUP with the same file: no free burst. */
    pol_limiter_apply(l, &f.snap, T0);
    assert_ptr_equal(pol_limiter_find(l, "acme", 4), acme);
    assert_int_equal(take_many(acme, 100, T0), 0);
    /* A new rate: 10/s -> 1000/s, burst 50. 5 ms refill 5 tokens. */
    make(&f, 2, (char *[]){"acme", "beta"},
         (struct cfg_limits[]){limits(1000, 50, 1), limits(10, 5, 1)});
    pol_limiter_apply(l, &f.snap, T0);
    assert_int_equal(take_many(acme, 100, T0 + 5 * MS), 5);
    assert_int_equal(take_many(acme, 100, T0 + 3600 * SEC), 50);
    pol_limiter_free(l);
}

/* A cluster's node admits 1/N of each rate and burst (rounded up), so
 * that N nodes behind a balancer admit the configured rate together. */
static void test_cluster_node_takes_its_share(void **state)
{
    struct fixture f;
    make(&f, 2, (char *[]){"acme", "beta"},
         (struct cfg_limits[]){limits(300, 30, 1), limits(300, 1, 1)});
    f.snap.cluster.enabled = true;
    f.snap.cluster.node_count = 3;
    struct pol_limiter *l = pol_limiter_new(&f.snap, T0);
    struct pol_tenant_state *acme = pol_limiter_find(l, "acme", 4);
    assert_int_equal(take_many(acme, 100, T0), 10);
    /* 100/s here: 10 ms refill one token */
    assert_int_equal(take_many(acme, 100, T0 + 10 * MS), 1);
    assert_int_equal(take_many(pol_limiter_find(l, "beta", 4), 100, T0), 1);
    /* One node (no cluster) takes the whole rate again on reload. */
    f.snap.cluster.enabled = false;
    pol_limiter_apply(l, &f.snap, T0 + 3600 * SEC);
    assert_int_equal(take_many(acme, 100, T0 + 7200 * SEC), 30);
    pol_limiter_free(l);
}

static void test_tenants_that_leave_keep_their_state(void **state)
{
    struct fixture f;
    make(&f, 2, (char *[]){"acme", "beta"},
         (struct cfg_limits[]){limits(10, 5, 1), limits(10, 5, 1)});
    struct pol_limiter *l = pol_limiter_new(&f.snap, T0);
    struct pol_tenant_state *beta = pol_limiter_find(l, "beta", 4);

    assert_int_equal(take_many(beta, 3, T0), 3);
    /* beta leaves; gamma arrives, full. */
    make(&f, 2, (char *[]){"acme", "gamma"},
         (struct cfg_limits[]){limits(10, 5, 1), limits(10, 5, 1)});
    pol_limiter_apply(l, &f.snap, T0);
    assert_int_equal(pol_limiter_count(l), 3);
    assert_ptr_equal(pol_limiter_find(l, "beta", 4), beta);
    assert_int_equal(take_many(pol_limiter_find(l, "gamma", 5), 100, T0), 5);
    /* beta comes back where it was: 2 tokens left. */
    make(&f, 3, (char *[]){"acme", "beta", "gamma"},
         (struct cfg_limits[]){limits(10, 5, 1), limits(10, 5, 1), limits(10, 5, 1)});
    pol_limiter_apply(l, &f.snap, T0);
    assert_ptr_equal(pol_limiter_find(l, "beta", 4), beta);
    assert_int_equal(take_many(beta, 100, T0), 2);
    pol_limiter_free(l);
}

static void test_long_polls(void **state)
{
    struct fixture f;
    make(&f, 1, (char *[]){"acme"}, (struct cfg_limits[]){limits(10, 5, 1)});
    struct pol_limiter *l = pol_limiter_new(&f.snap, T0);
    struct pol_tenant_state *acme = pol_limiter_find(l, "acme", 4);

    assert_true(pol_long_poll_acquire(acme));
    assert_false(pol_long_poll_acquire(acme));
    /* Reload to 2: the holder keeps its slot, one more fits. */
    make(&f, 1, (char *[]){"acme"}, (struct cfg_limits[]){limits(10, 5, 2)});
    pol_limiter_apply(l, &f.snap, T0);
    assert_true(pol_long_poll_acquire(acme));
    assert_false(pol_long_poll_acquire(acme));
    pol_long_poll_release(acme);
    pol_long_poll_release(acme);
    assert_int_equal(pol_slots_used(&acme->long_polls), 0);
    pol_limiter_free(l);
}

/* The concurrent-request cap is its own count, and a reload keeps what
 * is held, as the long-poll cap does. */
static void test_concurrent_requests(void **state)
{
    struct fixture f;
    make(&f, 1, (char *[]){"acme"}, (struct cfg_limits[]){limits(10, 5, 2)});
    struct pol_limiter *l = pol_limiter_new(&f.snap, T0);
    struct pol_tenant_state *acme = pol_limiter_find(l, "acme", 4);

    assert_true(pol_request_acquire(acme));
    assert_true(pol_request_acquire(acme));
    assert_false(pol_request_acquire(acme));
    assert_true(pol_long_poll_acquire(acme)); /* a separate count */
    /* Reload to 1: both holders keep their slot, nobody else gets one
     * until they are down to below 1. */
    make(&f, 1, (char *[]){"acme"}, (struct cfg_limits[]){limits(10, 5, 1)});
    pol_limiter_apply(l, &f.snap, T0);
    pol_request_release(acme);
    assert_false(pol_request_acquire(acme));
    pol_request_release(acme);
    assert_true(pol_request_acquire(acme));
    assert_false(pol_request_acquire(acme));
    pol_request_release(acme);
    pol_long_poll_release(acme);
    assert_int_equal(pol_slots_used(&acme->requests), 0);
    pol_limiter_free(l);
}

/* Many tenants so apply grows (reallocates) the table while another
 * thread looks up: the state pointers must not move. */
struct reader {
    struct pol_limiter *l;
    struct pol_tenant_state *first;
    int mismatches;
};

static void *find_loop(void *arg)
{
    struct reader *r = arg;

    for (int i = 0; i < 20000; i++) {
        struct pol_tenant_state *t = pol_limiter_find(r->l, "aaa", 3);
        r->mismatches += t != r->first;
        pol_gcra_take(&t->rate, 1, POL_PPM, T0, NULL);
    }
    return NULL;
}

static void test_find_races_with_apply(void **state)
{
    enum { ROUNDS = 200 };
    static char names[ROUNDS][16];
    struct cfg_tenant *tenants = sl_xcalloc(ROUNDS + 1, sizeof(*tenants));
    struct cfg_snapshot snap = {0};
    pthread_t th;

    tenants[0].name = "aaa";
    tenants[0].limits = limits(10, 1000000, 1);
    snap.tenants = tenants;
    snap.tenant_count = 1;
    struct pol_limiter *l = pol_limiter_new(&snap, T0);
    struct reader r = {l, pol_limiter_find(l, "aaa", 3), 0};

    assert_int_equal(pthread_create(&th, NULL, find_loop, &r), 0);
    for (int i = 0; i < ROUNDS; i++) {
        snprintf(names[i], sizeof(names[i]), "t%05d", i);
        tenants[i + 1].name = names[i];
        tenants[i + 1].limits = limits(10, 5, 1);
        snap.tenant_count = (size_t)i + 2;
        pol_limiter_apply(l, &snap, T0);
    }
    assert_int_equal(pthread_join(th, NULL), 0);
    assert_int_equal(r.mismatches, 0);
    assert_int_equal(pol_limiter_count(l), ROUNDS + 1);
    assert_int_equal(pol_gcra_available(&r.first->rate, T0), 1000000 - 20000);
    pol_limiter_free(l);
    free(tenants);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_find),
        cmocka_unit_test(test_reload_keeps_state_and_takes_new_rates),
        cmocka_unit_test(test_cluster_node_takes_its_share),
        cmocka_unit_test(test_tenants_that_leave_keep_their_state),
        cmocka_unit_test(test_long_polls),
        cmocka_unit_test(test_concurrent_requests),
        cmocka_unit_test(test_find_races_with_apply),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
