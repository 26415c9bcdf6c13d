/*
 * sluice_fifo_hot_bench.c -- FIFO receives behind a locked hot group
 * (issue 14; docs/benchmarks.md, "FIFO receives behind a locked group").
 * Drives the partitions engine through part.h, no HTTP, one partition,
 * durability os: ROUNDS times, GROUPS groups of EACH messages are sent
 * and drained by receives of 10 and deletes, on two queues of one file,
 * alternating: one without a hot group (the baseline) and one with a hot
 * group of BACKLOG ready messages, one of them in flight, sent first (so
 * its rows are ahead of every other group's). Prints, per case, the
 * wall time per receive and the SQLite VM steps FIFO selection spent per
 * receive (part_engine_stats), and the hot case as a ratio of the
 * baseline. Bounded by its counts: every loop ends when the groups are
 * drained, or after twice the receives that takes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include "part.h"
#include "sl.h"

struct done {
    bool done;
    int status;
    size_t count;
    char receipts[PART_MAX_BATCH][PART_RECEIPT_MAX];
    uint64_t queue_id;
};

static void on_done(struct part_cookie ck, int status, const struct part_result *res)
{
    struct done *d = ck.ptr;
    d->done = true;
    d->status = status;
    d->count = res->sent_count;
    for (size_t i = 0; i < res->message_count; i++) {
        snprintf(d->receipts[i], sizeof d->receipts[i], "%s", res->messages[i].receipt);
    }
    d->count = res->message_count ? res->message_count : d->count;
    if (res->queue != NULL) {
        d->queue_id = res->queue->id;
    }
}

struct bench {
    uv_loop_t loop;
    struct part_engine *e;
    struct part_client *c;
};

static struct part_cookie ck(struct done *d)
{
    memset(d, 0, sizeof *d);
    return (struct part_cookie){d, 0, 0};
}

static void wait_done(struct bench *b, struct done *d, int rc, const char *what)
{
    if (rc != SL_OK) {
        fprintf(stderr, "%s: submit failed (%d)\n", what, rc);
        exit(1);
    }
    while (!d->done) {
        uv_run(&b->loop, UV_RUN_ONCE);
    }
    if (d->status != SL_OK) {
        fprintf(stderr, "%s: failed (%d)\n", what, d->status);
        exit(1);
    }
}

static uint64_t create_fifo(struct bench *b, const char *name)
{
    struct part_queue_config cfg = part_queue_config_default();
    cfg.fifo = true;
    struct done d;
    wait_done(b, &d,
              part_queue_create(b->c, "bench", name, &cfg, NULL, 0, NULL, 0, ck(&d), on_done),
              "create");
    return d.queue_id;
}

/* n messages of group, ten a job; dedup ids unique in the run. */
static void send_group(struct bench *b, uint64_t q, const char *group, size_t n)
{
    static uint64_t serial;
    char ids[PART_MAX_BATCH][32];
    struct part_send_entry en[PART_MAX_BATCH];
    for (size_t i = 0; i < n;) {
        size_t k = 0;
        for (; k < PART_MAX_BATCH && i < n; k++, i++) {
            snprintf(ids[k], sizeof ids[k], "m%llu", (unsigned long long)serial++);
            en[k] = (struct part_send_entry){.body = sl_slice_cstr(ids[k]),
                                             .group_id = sl_slice_cstr(group),
                                             .dedup_id = sl_slice_cstr(ids[k]),
                                             .delay_s = -1};
        }
        struct done d;
        wait_done(b, &d, part_send(b->c, q, 0, en, k, ck(&d), on_done), "send");
    }
}

static size_t receive(struct bench *b, uint64_t q, uint32_t max, struct done *d)
{
    uint32_t parts[1] = {0};
    struct part_receive_req req = {.queue_id = q,
                                   .max_messages = max,
                                   .visibility_s = 3600,
                                   .partitions = parts,
                                   .partition_count = 1};
    wait_done(b, d, part_receive(b->c, &req, ck(d), on_done, NULL), "receive");
    return d->count;
}

static uint64_t steps(struct bench *b)
{
    struct part_partition_stats s;
    part_engine_stats(b->e, 0, &s);
    return s.fifo_select_steps;
}

struct figures {
    uint64_t receives;
    uint64_t receive_ns; /* inside the receives only */
    uint64_t steps;
};

/* Sends and drains groups x each, rounds times, on queue q. */
static void drain_rounds(struct bench *b, uint64_t q, int rounds, int first, int groups, int each,
                         struct figures *f)
{
    for (int r = first; r < first + rounds; r++) {
        for (int g = 0; g < groups; g++) {
            char group[32];
            snprintf(group, sizeof group, "g%d-%d", r, g);
            send_group(b, q, group, (size_t)each);
        }
        size_t left = (size_t)groups * (size_t)each;
        for (size_t tries = 0; left > 0 && tries < 2 * left + 10; tries++) {
            struct done d;
            uint64_t s0 = steps(b);
            uint64_t t0 = sl_mono_ns();
            size_t n = receive(b, q, 10, &d);
            f->receive_ns += sl_mono_ns() - t0;
            f->receives++;
            f->steps += steps(b) - s0;
            const char *h[PART_MAX_BATCH];
            for (size_t i = 0; i < n; i++) {
                h[i] = d.receipts[i];
            }
            if (n > 0) {
                struct done dd;
                wait_done(b, &dd, part_delete(b->c, q, h, n, ck(&dd), on_done), "delete");
            }
            left -= n;
        }
        if (left > 0) {
            fprintf(stderr, "round %d: %zu messages not received\n", r, left);
            exit(1);
        }
    }
}

static int arg(int argc, char **argv, const char *name, int def)
{
    for (int i = 1; i + 1 < argc; i++) {
        if (strcmp(argv[i], name) == 0) {
            return atoi(argv[i + 1]);
        }
    }
    return def;
}

int main(int argc, char **argv)
{
    int backlog = arg(argc, argv, "--backlog", 50000);
    int groups = arg(argc, argv, "--groups", 100);
    int each = arg(argc, argv, "--each", 3);
    int rounds = arg(argc, argv, "--rounds", 5);
    if (backlog < 1 || groups < 1 || each < 1 || rounds < 1) {
        fprintf(stderr, "usage: sluice-fifo-hot-bench [--backlog N] [--groups N] [--each N]"
                        " [--rounds N] (all >= 1)\n");
        return 2;
    }
    char dir[] = "/tmp/sluice-fifo-hot-XXXXXX";
    if (mkdtemp(dir) == NULL) {
        perror("mkdtemp");
        return 1;
    }
    struct bench b;
    uv_loop_init(&b.loop);
    struct part_options o = {.data_dir = dir, .partitions = 1, .durability = PART_DURABILITY_OS};
    char err[512] = "";
    if (part_engine_open(&o, &b.e, err, sizeof err) != SL_OK ||
        part_client_new(b.e, &b.loop, &b.c) != SL_OK) {
        fprintf(stderr, "open: %s\n", err);
        return 1;
    }
    struct figures base = {0}, hot = {0};
    uint64_t bq = create_fifo(&b, "base.fifo");
    uint64_t hq = create_fifo(&b, "hot.fifo");
    send_group(&b, hq, "hot", (size_t)backlog);
    struct done d;
    if (receive(&b, hq, 1, &d) != 1) { /* hot is locked from now on */
        fprintf(stderr, "the hot group's first message was not received\n");
        return 1;
    }
    /* Both cases in one file of the same size, round by round, so that
     * the file's growth and the machine's drift fall on both alike. */
    for (int r = 0; r < rounds; r++) {
        drain_rounds(&b, r % 2 ? hq : bq, 1, r, groups, each, r % 2 ? &hot : &base);
        drain_rounds(&b, r % 2 ? bq : hq, 1, r, groups, each, r % 2 ? &base : &hot);
    }
    part_client_close(b.c);
    uv_run(&b.loop, UV_RUN_NOWAIT);
    part_engine_close(b.e);
    uv_loop_close(&b.loop);
    char cmd[64];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) {
        fprintf(stderr, "could not remove %s\n", dir);
    }
    double base_us = (double)base.receive_ns / 1e3 / (double)base.receives;
    double hot_us = (double)hot.receive_ns / 1e3 / (double)hot.receives;
    double base_steps = (double)base.steps / (double)base.receives;
    double hot_steps = (double)hot.steps / (double)hot.receives;
    printf("| case | receives | us per receive | VM steps per receive |\n");
    printf("|---|---:|---:|---:|\n");
    printf("| %d groups x %d, no hot group | %llu | %.1f | %.0f |\n", groups, each,
           (unsigned long long)base.receives, base_us, base_steps);
    printf("| the same behind a locked group of %d | %llu | %.1f | %.0f |\n", backlog,
           (unsigned long long)hot.receives, hot_us, hot_steps);
    printf("| ratio (locked group / none) | | %.2f | %.2f |\n", hot_us / base_us,
           hot_steps / base_steps);
    return 0;
}
