/*
 * test_part_powercut.c -- power loss under durability fsync, proven at
 * random points. Each round arms the test VFS (part_test_vfs.h) to cut
 * the power at a random write or sync while sends, receives and deletes
 * run: every write not yet synced is undone, kept or torn on the real
 * files, and nothing reaches them afterwards. The engine is then closed,
 * the directory reopened as after a restart, and compared with a log the
 * test keeps itself: every acknowledged send is there exactly once,
 * nothing acknowledged as deleted came back, and nothing is there that
 * was never sent.
 *
 * SLUICE_POWERCUT_ROUNDS sets the number of rounds (default 1500, 150
 * under a sanitizer); the rounds also stop after 40 s.
 */
#include "part_test_util.h"

#include "part_test_vfs.h"

#define MAX_BODIES 4096

enum fate { NONE, ACKED, MAYBE, DELETED, MAYBE_DELETED };

struct round {
    enum fate fate[MAX_BODIES];
    char receipt[MAX_BODIES][PART_RECEIPT_MAX];
    unsigned nbodies;
};

static unsigned body_index(const char *body)
{
    return (unsigned)strtoul(body + 1, NULL, 10);
}

static void do_send(struct t_env *t, uint64_t q, struct round *rd, unsigned n)
{
    char bodies[3][16];
    struct part_send_entry en[3];
    unsigned first = rd->nbodies;
    for (unsigned k = 0; k < n; k++) {
        snprintf(bodies[k], sizeof bodies[k], "m%u", first + k);
        en[k] = (struct part_send_entry){.body = sl_slice_cstr(bodies[k]), .delay_s = -1};
        rd->fate[first + k] = MAYBE;
    }
    rd->nbodies += n;
    struct t_done d;
    assert_int_equal(part_send(t->c, q, 0, en, n, t_ck(&d), t_on_done), SL_OK);
    t_wait(t, &d);
    if (d.status == SL_OK) {
        for (unsigned k = 0; k < n; k++) {
            rd->fate[first + k] = ACKED;
        }
    }
}

static void do_receive_delete(struct t_env *t, uint64_t q, struct round *rd, bool del)
{
    struct t_done r;
    t_recv(t, q, 3, 300, &r);
    if (r.status != SL_OK || !del) {
        return;
    }
    for (size_t i = 0; i < r.count; i++) {
        unsigned b = body_index(r.msgs[i].body);
        const char *h[1] = {r.msgs[i].receipt};
        struct t_done d;
        rd->fate[b] = MAYBE_DELETED;
        assert_int_equal(part_delete(t->c, q, h, 1, t_ck(&d), t_on_done), SL_OK);
        t_wait(t, &d);
        if (d.status == SL_OK && d.entry[0] == SL_OK) {
            rd->fate[b] = DELETED;
        }
    }
}

/* After the restart: what is there against what was acknowledged; then
 * deletes all of it, so the next round starts empty. */
static void verify_and_clear(struct t_env *t, uint64_t q, struct round *rd, unsigned round)
{
    static uint8_t seen[MAX_BODIES];
    memset(seen, 0, sizeof seen);
    for (;;) {
        struct t_done r;
        t_recv(t, q, 10, 300, &r);
        assert_int_equal(r.status, SL_OK);
        if (r.count == 0) {
            break;
        }
        for (size_t i = 0; i < r.count; i++) {
            unsigned b = body_index(r.msgs[i].body);
            assert_true(b < rd->nbodies);
            if (seen[b] || rd->fate[b] == DELETED || rd->fate[b] == NONE) {
                fprintf(stderr, "round %u: m%u came back (fate %d, seen %d)\n", round, b,
                        rd->fate[b], seen[b]);
                fail();
            }
            seen[b] = 1;
            struct t_done d;
            t_delete(t, q, r.msgs[i].receipt, &d);
        }
    }
    for (unsigned b = 0; b < rd->nbodies; b++) {
        if (rd->fate[b] == ACKED && !seen[b]) {
            fprintf(stderr, "round %u: acknowledged m%u is lost\n", round, b);
            fail();
        }
    }
}

static unsigned rounds_wanted(void)
{
    const char *env = getenv("SLUICE_POWERCUT_ROUNDS");
    if (env != NULL && *env != '\0') {
        return (unsigned)strtoul(env, NULL, 10);
    }
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    return 150;
#else
    return 1500;
#endif
}

static void test_fsync_survives_power_cuts(void **state)
{
    struct t_env *t = *state;
    t_close(t);
    t->durability = PART_DURABILITY_FSYNC;
    t->checkpoint_pages = 16; /* checkpoints and WAL restarts within a round */
    tv_track(true);
    t_open(t);
    uint64_t q = t_create(t, "power", "q", NULL);
    {
        struct t_done r, d;
        t_send(t, q, 0, "warm-up");
        t_recv(t, q, 1, 30, &r);
        assert_int_equal(r.count, 1);
        t_delete(t, q, r.msgs[0].receipt, &d);
    }
    t_sync(t);

    unsigned want = rounds_wanted(), seed = 20261125, done = 0, cut = 0;
    uint64_t start = sl_mono_ns();
    static struct round rd;
    for (unsigned round = 0; round < want; round++) {
        if (sl_mono_ns() - start > 40ull * 1000000000ull) {
            break;
        }
        memset(&rd, 0, sizeof rd);
        srand(seed + round);
        tv_cut_at(rand() % 80, seed + round);
        for (int op = 0; op < 30 && !tv_was_cut(); op++) {
            int pick = rand() % 10;
            if (pick < 6) {
                do_send(t, q, &rd, 1 + (unsigned)(rand() % 3));
            } else {
                do_receive_delete(t, q, &rd, pick < 9);
            }
        }
        if (!tv_was_cut()) {
            tv_cut_now(); /* the power goes while idle */
        } else {
            cut++;
        }
        t_close(t);
        tv_revive();
        tv_track(true);
        t_open(t);
        /* leases of the round end; what they held is ready again */
        t_advance(t, 301 * 1000);
        part_engine_kick(t->e);
        t_sync(t);
        verify_and_clear(t, q, &rd, round);
        done++;
    }
    fprintf(stderr, "power cuts: %u rounds, %u cut mid-operation\n", done, cut);
    assert_true(done >= SL_MIN(want, 50u));
    t_close(t); /* the files point at the logs tv_track frees */
    tv_track(false);
}

int main(void)
{
    tv_install();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_fsync_survives_power_cuts, t_setup, t_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
