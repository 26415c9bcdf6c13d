/*
 * test_part_crash.c -- kill -9 durability: a child process sends batches
 * and reports each acknowledged batch over a pipe; the parent SIGKILLs it
 * at a random point, reopens the data directory and checks that every
 * acknowledged message is present exactly once (and nothing is doubled).
 * The same for a FIFO queue: every acknowledged deduplication id is
 * still a duplicate of its first send (the same sequence number), no
 * message appears twice, every group comes back in increasing sequence,
 * and the sequence goes on above every acknowledged number.
 */
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include "part_test_util.h"

#define BATCH 5
#define MAX_SEQ 200000

static void child_done(struct part_cookie ck, int status, const struct part_result *res)
{
    *(int *)ck.ptr = status == SL_OK ? 1 : -1;
}

/* The child's engine on dir, a client on loop and queue tenant/name's id
 * (it exits 2 if any is missing). */
static struct part_client *child_open(const char *dir, uint32_t nparts, bool fsync_mode,
                                      const char *tenant, const char *name, uv_loop_t *loop,
                                      uint64_t *q)
{
    uv_loop_init(loop);
    struct part_options o = {.data_dir = dir,
                             .partitions = nparts,
                             .durability = fsync_mode ? PART_DURABILITY_FSYNC : PART_DURABILITY_OS};
    struct part_engine *e = NULL;
    struct part_client *c = NULL;
    if (part_engine_open(&o, &e, NULL, 0) != SL_OK || part_client_new(e, loop, &c) != SL_OK ||
        part_queue_find(e, tenant, name, q, NULL) != SL_OK) {
        _exit(2);
    }
    return c;
}

/* Sends one batch, waits for its completion (which sets *done to 1, or
 * -1 on failure) and reports ack over fd; exits 3 or 4 if it cannot. */
static void child_send(struct part_client *c, uv_loop_t *loop, uint64_t q, uint32_t p,
                       const struct part_send_entry *en, struct part_cookie ck, part_done_fn *fn,
                       const int *done, int fd, const void *ack, size_t len)
{
    if (part_send(c, q, p, en, BATCH, ck, fn) != SL_OK) {
        _exit(3);
    }
    while (*done == 0) {
        uv_run(loop, UV_RUN_ONCE);
    }
    if (*done < 0 || write(fd, ack, len) != (ssize_t)len) {
        _exit(4);
    }
}

/* In a child just forked from parent: a test killed meanwhile takes the
 * child with it, rather than leave an engine writing into its directory
 * (a parent gone before the prctl is caught by the check after it). */
static void die_with_parent(pid_t parent)
{
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent) {
        _exit(124);
    }
}

static _Noreturn void child_main(const char *dir, uint32_t nparts, bool fsync_mode, int fd)
{
    uv_loop_t loop;
    uint64_t q = 0;
    struct part_client *c = child_open(dir, nparts, fsync_mode, "crash", "q", &loop, &q);
    for (uint32_t seq = 0; seq < MAX_SEQ; seq++) {
        char bodies[BATCH][32];
        struct part_send_entry en[BATCH];
        for (int k = 0; k < BATCH; k++) {
            snprintf(bodies[k], sizeof bodies[k], "%u-%d", seq, k);
            en[k] = (struct part_send_entry){.body = sl_slice_cstr(bodies[k]), .delay_s = 0};
        }
        int done = 0;
        child_send(c, &loop, q, seq % nparts, en, (struct part_cookie){&done, 0, 0}, child_done,
                   &done, fd, &seq, sizeof seq);
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
        pid_t parent = getpid();
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            die_with_parent(parent);
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
        if (!WIFSIGNALED(wst)) { /* the child stopped by itself: say why */
            fprintf(stderr, "crash child exited with %d before the kill\n",
                    WIFEXITED(wst) ? WEXITSTATUS(wst) : -1);
        }
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
                assert_int_equal(n, seen[(size_t)s * BATCH]);
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

#define FIFO_GROUPS 4
#define FIFO_MAX 20000

struct fifo_ack {
    uint32_t batch;
    uint64_t seq[BATCH];
};

/* Round r's batch: its bodies are its deduplication ids (new every
 * round, as the ids of the round before are still within the interval). */
static void fifo_entries(int round, uint32_t batch, char (*body)[32], char (*group)[8],
                         struct part_send_entry *en)
{
    for (int k = 0; k < BATCH; k++) {
        snprintf(body[k], 32, "%d:%u-%d", round, batch, k);
        snprintf(group[k], 8, "g%u", (batch * BATCH + (unsigned)k) % FIFO_GROUPS);
        en[k] = (struct part_send_entry){.body = sl_slice_cstr(body[k]),
                                         .group_id = sl_slice_cstr(group[k]),
                                         .dedup_id = sl_slice_cstr(body[k]),
                                         .delay_s = -1};
    }
}

static void child_fifo_done(struct part_cookie ck, int status, const struct part_result *res)
{
    struct fifo_ack *a = ck.ptr;
    for (size_t i = 0; status == SL_OK && i < res->sent_count && i < BATCH; i++) {
        a->seq[i] = res->sent[i].sequence;
    }
    *(int *)(uintptr_t)ck.id = status == SL_OK ? 1 : -1;
}

static _Noreturn void child_fifo(const char *dir, int round, int fd)
{
    uv_loop_t loop;
    uint64_t q = 0;
    struct part_client *c = child_open(dir, 1, round == 1, "acme", "f.fifo", &loop, &q);
    for (uint32_t b = 0; b < FIFO_MAX; b++) {
        char body[BATCH][32], group[BATCH][8];
        struct part_send_entry en[BATCH];
        fifo_entries(round, b, body, group, en);
        int done = 0;
        struct fifo_ack ack = {.batch = b};
        child_send(c, &loop, q, 0, en, (struct part_cookie){&ack, (uintptr_t)&done, 0},
                   child_fifo_done, &done, fd, &ack, sizeof ack);
    }
    _exit(0);
}

static int setup_one_partition(void **state)
{
    return t_setup_n(state, 1);
}

static void test_kill9_fifo(void **state)
{
    struct t_env *t = *state;
    t_create_fifo(t, "f.fifo", false);
    t_close(t);
    srand(20261127);
    struct fifo_ack *acked = calloc(FIFO_MAX, sizeof *acked);
    for (int round = 0; round < 2; round++) {
        int fds[2];
        assert_int_equal(pipe(fds), 0);
        pid_t parent = getpid();
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            die_with_parent(parent);
            close(fds[0]);
            child_fifo(t->dir, round, fds[1]);
        }
        close(fds[1]);
        uint32_t want = 20 + (uint32_t)(rand() % 100), got = 0;
        struct fifo_ack a;
        memset(acked, 0, FIFO_MAX * sizeof *acked);
        while (got < want && read(fds[0], &a, sizeof a) == sizeof a) {
            acked[a.batch] = a;
            got++;
        }
        usleep((useconds_t)(rand() % 3000));
        kill(pid, SIGKILL);
        int wst = 0;
        waitpid(pid, &wst, 0);
        while (read(fds[0], &a, sizeof a) == sizeof a) {
            acked[a.batch] = a;
        }
        close(fds[0]);
        if (!WIFSIGNALED(wst)) { /* the child stopped by itself: say why */
            fprintf(stderr, "crash child exited with %d before the kill\n",
                    WIFEXITED(wst) ? WEXITSTATUS(wst) : -1);
        }
        assert_true(WIFSIGNALED(wst));

        t_open(t);
        uint64_t q = 0;
        assert_int_equal(part_queue_find(t->e, "acme", "f.fifo", &q, NULL), SL_OK);
        /* every acknowledged id is still a duplicate of its first send */
        uint64_t max_seq = 0;
        for (uint32_t b = 0; b < FIFO_MAX; b++) {
            if (acked[b].seq[0] == 0) {
                continue;
            }
            char body[BATCH][32], group[BATCH][8];
            struct part_send_entry en[BATCH];
            fifo_entries(round, b, body, group, en);
            struct t_done d;
            assert_int_equal(part_send(t->c, q, 0, en, BATCH, t_ck(&d), t_on_done), SL_OK);
            t_wait(t, &d);
            for (int k = 0; k < BATCH; k++) {
                assert_true(d.sent_dup[k]);
                assert_int_equal(d.sent_seq[k], acked[b].seq[k]);
                max_seq = SL_MAX(max_seq, acked[b].seq[k]);
            }
        }
        /* the sequence goes on above every acknowledged number */
        struct t_done d;
        char fresh[32];
        snprintf(fresh, sizeof fresh, "fresh-%d", round);
        t_send_fifo(t, q, 0, fresh, "g0", fresh, &d);
        assert_true(d.sent_seq[0] > max_seq);
        /* drain: each message once, each group in increasing sequence */
        uint64_t last[FIFO_GROUPS] = {0};
        uint8_t *seen = calloc((size_t)FIFO_MAX * BATCH, 1);
        for (;;) {
            struct t_done r;
            t_recv(t, q, 10, 600, &r);
            if (r.count == 0) {
                break;
            }
            const char *h[PART_MAX_BATCH];
            for (size_t i = 0; i < r.count; i++) {
                h[i] = r.msgs[i].receipt;
                unsigned g = 0;
                assert_int_equal(sscanf(r.msgs[i].group, "g%u", &g), 1);
                assert_true(g < FIFO_GROUPS);
                assert_true((uint64_t)r.msgs[i].priority > last[g]);
                last[g] = (uint64_t)r.msgs[i].priority;
                unsigned s = 0;
                int k = 0, rd = -1;
                if (sscanf(r.msgs[i].body, "%d:%u-%d", &rd, &s, &k) == 3) {
                    assert_int_equal(rd, round);
                    assert_true(s < FIFO_MAX && k >= 0 && k < BATCH);
                    assert_int_equal(seen[s * BATCH + (unsigned)k]++, 0);
                }
            }
            assert_int_equal(part_delete(t->c, q, h, r.count, t_ck(&d), t_on_done), SL_OK);
            t_wait(t, &d);
        }
        for (uint32_t b = 0; b < FIFO_MAX; b++) {
            if (acked[b].seq[0] != 0) {
                for (int k = 0; k < BATCH; k++) {
                    assert_int_equal(seen[b * BATCH + (unsigned)k], 1);
                }
            }
        }
        free(seen);
        t_close(t);
    }
    free(acked);
    t_open(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_kill9_keeps_acknowledged, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_kill9_fifo, setup_one_partition, t_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
