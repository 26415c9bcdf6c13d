/*
 * test_part_powercut.c -- power loss under durability fsync, proven at
 * random points. Each round arms the test VFS (part_test_vfs.h) to cut
 * the power at a random write or sync while sends, receives and deletes
 * run: every write not yet synced is undone, kept or torn on the real
 * files, and nothing reaches them afterwards. The engine is then closed,
 * the directory reopened as after a restart, and compared with a log the
 * test keeps itself: every acknowledged send is there exactly once,
 * nothing acknowledged as deleted came back, and nothing is there that
 * was never sent. A quarter of the bodies span several pages, so that cuts
 * land inside the two-table send (row, then body) and delete (row, body
 * by trigger) too; each body comes back whole, and once a round's
 * messages are all deleted no body is left behind.
 *
 * SLUICE_POWERCUT_ROUNDS sets the number of rounds (default 1500, 150
 * under a sanitizer); the rounds also stop after 40 s.
 */
#include "part_test_util.h"

#include "part_test_vfs.h"

#include <sqlite3.h>

#define MAX_BODIES 4096
#define BIG_BODY 9000 /* three overflow pages and more */

enum fate { NONE, ACKED, MAYBE, DELETED, MAYBE_DELETED };

struct round {
    enum fate fate[MAX_BODIES];
    char receipt[MAX_BODIES][PART_RECEIPT_MAX];
    uint16_t len[MAX_BODIES]; /* of each body */
    unsigned nbodies;
};

static unsigned body_index(const char *body)
{
    return (unsigned)strtoul(body + 1, NULL, 10);
}

/* Body number b, len bytes: "m<b>:" and a filler that depends on b. */
static size_t make_body(char *out, unsigned b, size_t len)
{
    int n = snprintf(out, len + 1, "m%u:", b);
    for (size_t i = (size_t)n; i < len; i++) {
        out[i] = (char)('a' + (b + i) % 26);
    }
    out[len] = '\0';
    return len;
}

/* The received message is body b, whole. */
static bool body_ok(const struct round *rd, unsigned b, const struct t_msg *m)
{
    static char want[BIG_BODY + 1];
    size_t n = make_body(want, b, rd->len[b]);
    return m->body_len == n && m->body_hash == t_fnv(want, n);
}

/* Rows of table in partition 0, read through a connection of its own. */
static int rows_of(struct t_env *t, const char *table)
{
    char path[256], sql[64];
    snprintf(path, sizeof path, "%s/part-0000.db", t->dir);
    snprintf(sql, sizeof sql, "SELECT count(*) FROM %s", table);
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    int n = -1;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW) {
        n = sqlite3_column_int(st, 0);
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    return n;
}

static void do_send(struct t_env *t, uint64_t q, struct round *rd, unsigned n)
{
    static char bodies[3][BIG_BODY + 1];
    struct part_send_entry en[3];
    unsigned first = rd->nbodies;
    for (unsigned k = 0; k < n; k++) {
        unsigned b = first + k;
        rd->len[b] = (uint16_t)(rand() % 4 == 0 ? BIG_BODY - rand() % 3000 : 8 + rand() % 40);
        size_t len = make_body(bodies[k], b, rd->len[b]);
        en[k] = (struct part_send_entry){.body = {bodies[k], len}, .delay_s = -1};
        rd->fate[b] = MAYBE;
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
            if (!body_ok(rd, b, &r.msgs[i])) {
                fprintf(stderr, "round %u: m%u came back with another body (%zu bytes)\n", round, b,
                        r.msgs[i].body_len);
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
    /* Every row is deleted: no body outlived its row (nor a row its body:
     * a receive joins them, so such a row would have been lost above). */
    t_sync(t);
    int rows = rows_of(t, "msg"), bodies = rows_of(t, "msg_body");
    if (rows != 0 || bodies != 0) {
        fprintf(stderr, "round %u: %d rows and %d bodies left\n", round, rows, bodies);
        fail();
    }
}

static unsigned rounds_wanted(void)
{
    const char *env = getenv("SLUICE_POWERCUT_ROUNDS");
    if (env != NULL && *env != '\0') {
        return (unsigned)strtoul(env, NULL, 10);
    }
    return T_ASAN || T_TSAN ? 150 : 1500;
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
        t_advance(t, 301ull * 1000);
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
