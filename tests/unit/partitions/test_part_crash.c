/*
 * test_part_crash.c -- kill -9 durability: a child process sends batches
 * and reports each acknowledged batch over a pipe; the parent SIGKILLs it
 * at a random point, reopens the data directory and checks that every
 * acknowledged message is present exactly once (and nothing is doubled).
 */
#include <signal.h>
#include <sys/wait.h>

#include "part_test_util.h"

#define BATCH 5
#define MAX_SEQ 200000

static void child_done(struct part_cookie ck, int status, const struct part_result *res)
{
    *(int *)ck.ptr = status == SL_OK ? 1 : -1;
}

static _Noreturn void child_main(const char *dir, uint32_t nparts, bool fsync_mode, int fd)
{
    uv_loop_t loop;
    uv_loop_init(&loop);
    struct part_options o = {.data_dir = dir,
                             .partitions = nparts,
                             .durability = fsync_mode ? PART_DURABILITY_FSYNC : PART_DURABILITY_OS};
    struct part_engine *e = NULL;
    struct part_client *c = NULL;
    uint64_t q = 0;
    if (part_engine_open(&o, &e, NULL, 0) != SL_OK || part_client_new(e, &loop, &c) != SL_OK ||
        part_queue_find(e, "crash", "q", &q, NULL) != SL_OK) {
        _exit(2);
    }
    for (uint32_t seq = 0; seq < MAX_SEQ; seq++) {
        char bodies[BATCH][32];
        struct part_send_entry en[BATCH];
        for (int k = 0; k < BATCH; k++) {
            snprintf(bodies[k], sizeof bodies[k], "%u-%d", seq, k);
            en[k] = (struct part_send_entry){.body = sl_slice_cstr(bodies[k]), .delay_s = 0};
        }
        int done = 0;
        if (part_send(c, q, seq % nparts, en, BATCH, (struct part_cookie){&done, 0, 0},
                      child_done) != SL_OK) {
            _exit(3);
        }
        while (done == 0) {
            uv_run(&loop, UV_RUN_ONCE);
        }
        if (done < 0 || write(fd, &seq, sizeof seq) != sizeof seq) {
            _exit(4);
        }
    }
    _exit(0);
}

static void test_kill9_keeps_acknowledged(void **state)
{
    struct t_env *t = *state;
    t_create(t, "crash", "q", NULL);
    t_close(t);
    srand(20261121);
    uint8_t *seen = calloc((size_t)MAX_SEQ * BATCH, 1);
    for (int round = 0; round < 4; round++) {
        int fds[2];
        assert_int_equal(pipe(fds), 0);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            close(fds[0]);
            child_main(t->dir, t->nparts, round == 1, fds[1]);
        }
        close(fds[1]);
        /* kill after a random number of acknowledgements, plus a random
         * sliver of time so the kill lands anywhere in a commit */
        uint32_t want = 20 + (uint32_t)(rand() % 150), got = 0, seq;
        uint8_t *acked = calloc(MAX_SEQ, 1);
        while (got < want && read(fds[0], &seq, sizeof seq) == sizeof seq) {
            acked[seq] = 1;
            got++;
        }
        usleep((useconds_t)(rand() % 3000));
        kill(pid, SIGKILL);
        int wst = 0;
        waitpid(pid, &wst, 0);
        while (read(fds[0], &seq, sizeof seq) == sizeof seq) {
            acked[seq] = 1; /* written before the kill: acknowledged too */
            got++;
        }
        close(fds[0]);
        assert_true(WIFSIGNALED(wst));
        assert_true(got >= want);

        t_open(t);
        uint64_t q = 0;
        assert_int_equal(part_queue_find(t->e, "crash", "q", &q, NULL), SL_OK);
        memset(seen, 0, (size_t)MAX_SEQ * BATCH);
        for (;;) {
            struct t_done r;
            t_recv(t, q, 10, 600, &r);
            if (r.count == 0) {
                break;
            }
            const char *h[PART_MAX_BATCH];
            for (size_t i = 0; i < r.count; i++) {
                unsigned s = 0;
                int k = 0;
                assert_int_equal(sscanf(r.msgs[i].body, "%u-%d", &s, &k), 2);
                assert_true(s < MAX_SEQ && k >= 0 && k < BATCH);
                seen[s * BATCH + (unsigned)k]++;
                h[i] = r.msgs[i].receipt;
            }
            struct t_done d;
            assert_int_equal(part_delete(t->c, q, h, r.count, t_ck(&d), t_on_done), SL_OK);
            t_wait(t, &d);
        }
        for (uint32_t s = 0; s < MAX_SEQ; s++) {
            for (int k = 0; k < BATCH; k++) {
                uint8_t n = seen[s * BATCH + (unsigned)k];
                assert_true(n <= 1); /* never twice */
                if (acked[s]) {
                    assert_int_equal(n, 1); /* acknowledged: present */
                }
                /* a batch is one transaction: all or nothing */
                assert_int_equal(n, seen[s * BATCH]);
            }
        }
        struct part_counts c = t_counts(t, q);
        assert_int_equal(c.ready + c.inflight + c.delayed, 0);
        free(acked);
        t_close(t);
    }
    free(seen);
    t_open(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_kill9_keeps_acknowledged, t_setup, t_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
