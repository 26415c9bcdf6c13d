/*
 * sb_engine.c -- drives the partitions engine through its public API
 * (part.h), no HTTP: one queue per partition (queue p lives on partition
 * p, as a tenant with shard_size 1 would), a fixed number of job "slots"
 * per client loop, each slot re-submitting as soon as its job completes,
 * so that opt->inflight jobs stay outstanding and every writer has a
 * queue to group-commit.
 *
 * Phases (a cell runs them in order on one fresh engine):
 *   send     part_send of opt->batch messages, round robin over partitions
 *   receive  part_receive of 10 from one partition (the messages send
 *            stored), receipts kept per partition for the next phase
 *   delete   part_delete of 10 receipts of one partition
 *   cycle    each slot: send 10 -> receive 10 -> delete what it got; the
 *            slots start in three staggered groups (cycle_start_group)
 * A phase stops issuing at opt->count messages or opt->seconds, then
 * waits for its outstanding jobs; its time runs from the start to the
 * last completion.
 *
 * Threading: every client loop is a thread of its own (opt->loops of
 * them); a loop's state (struct sb_loop) is touched only by its thread
 * while a phase runs and by main() between phases.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>
#include <uv.h>

#include "sb_int.h"

#define RECEIVE_VISIBILITY_S 3600 /* no lease expires while the bench runs */

struct sb_loop;

struct receipts { /* one partition's leased messages, for the delete phase */
    char (*h)[PART_RECEIPT_MAX];
    size_t n;
    size_t cap;
    size_t next;
};

struct slot {
    struct sb_loop *L;
    uint32_t p;
    char handles[PART_MAX_BATCH][PART_RECEIPT_MAX]; /* cycle: what it received */
    size_t nhandles;
};

struct sb_loop {
    const struct sb_opts *opt;
    struct part_engine *e;
    const uint64_t *qids; /* per partition */
    const uint32_t *pidx; /* pidx[p] == p: receive's partition lists */
    uint32_t nparts;
    const struct part_send_entry *entries; /* PART_MAX_BATCH, shared body */
    pthread_t thread;
    uv_loop_t loop;
    struct part_client *client;
    struct slot *slots;
    uint32_t nslots;
    /* the running phase */
    enum sb_phase phase;
    uint64_t quota;
    uint64_t deadline_ns;
    uint64_t issued; /* messages asked for */
    uint64_t messages;
    uint64_t jobs; /* jobs that reached a writer */
    uint64_t errors;
    uint64_t last_ns;
    uint32_t outstanding;
    uint32_t rr;
    uint32_t cycle_groups; /* cycle: thirds of the slots started so far */
    bool *drained;         /* receive: partitions found empty */
    uint32_t ndrained;
    struct receipts *rcpt; /* per partition, across phases */
};

static void slot_next(struct slot *s);

/* The cycle starts its slots in three groups, one group's first step
 * apart (group 1 when group 0's first send completes, group 2 at its first
 * receive), so that group commits hold sends, receives and deletes alike,
 * as the ceiling's transactions do. Started together, the slots move in
 * lock step: a group commit of only sends, then one of only receives,
 * then one of only deletes (measured at P = 1) -- a convoy of this
 * closed-loop driver, not what independent producers and consumers do. */
static void cycle_start_group(struct sb_loop *L, uint32_t group)
{
    if (L->cycle_groups != group) {
        return;
    }
    L->cycle_groups = group + 1;
    for (uint32_t i = group; i < L->nslots; i += 3) {
        slot_next(&L->slots[i]);
    }
}

static bool phase_over(struct sb_loop *L)
{
    return L->issued >= L->quota || sl_mono_ns() >= L->deadline_ns;
}

static void job_finished(struct sb_loop *L, int status)
{
    L->outstanding--;
    L->last_ns = sl_mono_ns();
    if (status != SL_OK) {
        L->errors++;
    }
}

static void maybe_stop(struct sb_loop *L)
{
    if (L->outstanding == 0) {
        uv_stop(&L->loop);
    }
}

static void on_delete(struct part_cookie ck, int status, const struct part_result *res)
{
    struct slot *s = ck.ptr;
    struct sb_loop *L = s->L;
    job_finished(L, status);
    if (status == SL_OK) {
        L->jobs++;
        for (size_t i = 0; i < res->entry_count; i++) {
            if (res->entry_status[i] == SL_OK) {
                L->messages++;
            } else {
                L->errors++;
            }
        }
    }
    slot_next(s);
    maybe_stop(L);
}

static int submit_delete(struct slot *s, uint32_t p, const char *const *handles, size_t n)
{
    struct sb_loop *L = s->L;
    int rc =
        part_delete(L->client, L->qids[p], handles, n, (struct part_cookie){.ptr = s}, on_delete);
    if (rc == SL_OK) {
        L->outstanding++;
    } else {
        L->errors++;
    }
    return rc;
}

static void cycle_delete(struct slot *s)
{
    const char *ptrs[PART_MAX_BATCH];
    for (size_t i = 0; i < s->nhandles; i++) {
        ptrs[i] = s->handles[i];
    }
    if (submit_delete(s, s->p, ptrs, s->nhandles) != SL_OK) {
        slot_next(s);
    }
}

static void keep_receipt(struct receipts *r, const char *h)
{
    if (r->n == r->cap) {
        r->cap = r->cap ? r->cap * 2 : 1024;
        r->h = sl_xrealloc(r->h, r->cap * sizeof *r->h);
    }
    snprintf(r->h[r->n++], PART_RECEIPT_MAX, "%s", h);
}

static int submit_receive(struct slot *s, uint32_t p, uint32_t max);

static void on_receive(struct part_cookie ck, int status, const struct part_result *res)
{
    struct slot *s = ck.ptr;
    struct sb_loop *L = s->L;
    job_finished(L, status);
    size_t got = status == SL_OK ? res->message_count : 0;
    if (got > 0) {
        L->jobs++;
    }
    if (L->phase == SB_CYCLE) {
        cycle_start_group(L, 2);
        s->nhandles = 0;
        for (size_t i = 0; i < got; i++) {
            snprintf(s->handles[s->nhandles++], PART_RECEIPT_MAX, "%s", res->messages[i].receipt);
        }
        if (got > 0) {
            cycle_delete(s);
        } else {
            slot_next(s); /* others took this partition's messages: send again */
        }
        maybe_stop(L);
        return;
    }
    uint32_t asked = (uint32_t)ck.id;
    L->issued -= asked - got; /* only what arrived counts against the quota */
    L->messages += got;
    for (size_t i = 0; i < got; i++) {
        keep_receipt(&L->rcpt[res->messages[i].partition], res->messages[i].receipt);
    }
    if (status == SL_OK && got == 0 && !L->drained[s->p]) {
        L->drained[s->p] = true;
        L->ndrained++;
    }
    slot_next(s);
    maybe_stop(L);
}

static int submit_receive(struct slot *s, uint32_t p, uint32_t max)
{
    struct sb_loop *L = s->L;
    struct part_receive_req req = {
        .queue_id = L->qids[p],
        .partitions = &L->pidx[p],
        .partition_count = 1,
        .max_messages = max,
        .visibility_s = RECEIVE_VISIBILITY_S,
        .wait_ms = 0,
    };
    s->p = p;
    int rc =
        part_receive(L->client, &req, (struct part_cookie){.ptr = s, .id = max}, on_receive, NULL);
    if (rc == SL_OK) {
        L->outstanding++;
    } else {
        L->errors++;
    }
    return rc;
}

static void on_send(struct part_cookie ck, int status, const struct part_result *res)
{
    struct slot *s = ck.ptr;
    struct sb_loop *L = s->L;
    job_finished(L, status);
    if (status == SL_OK) {
        L->jobs++;
        if (L->phase == SB_SEND) {
            L->messages += res->sent_count;
        }
    }
    if (L->phase == SB_CYCLE && status == SL_OK) {
        cycle_start_group(L, 1);
        if (submit_receive(s, s->p, PART_MAX_BATCH) != SL_OK) {
            slot_next(s);
        }
    } else {
        slot_next(s);
    }
    maybe_stop(L);
}

static int submit_send(struct slot *s, uint32_t p, size_t n)
{
    struct sb_loop *L = s->L;
    s->p = p;
    int rc =
        part_send(L->client, L->qids[p], p, L->entries, n, (struct part_cookie){.ptr = s}, on_send);
    if (rc == SL_OK) {
        L->outstanding++;
        L->issued += n;
    } else {
        L->errors++;
    }
    return rc;
}

/* Issues the slot's next job of the phase, unless the phase is over. */
static void slot_next(struct slot *s)
{
    struct sb_loop *L = s->L;
    if (phase_over(L) || L->errors > 0) {
        return;
    }
    uint64_t left = L->quota - L->issued;
    switch (L->phase) {
    case SB_SEND:
        submit_send(s, L->rr++ % L->nparts, SL_MIN(L->opt->batch, left));
        break;
    case SB_CYCLE:
        submit_send(s, L->rr++ % L->nparts, SL_MIN(PART_MAX_BATCH, left));
        break;
    case SB_RECEIVE:
        for (uint32_t k = 0; k < L->nparts && L->ndrained < L->nparts; k++) {
            uint32_t p = L->rr++ % L->nparts;
            if (!L->drained[p]) {
                uint32_t max = (uint32_t)SL_MIN(PART_MAX_BATCH, left);
                if (submit_receive(s, p, max) == SL_OK) {
                    L->issued += max;
                }
                return;
            }
        }
        break;
    case SB_DELETE:
        for (uint32_t k = 0; k < L->nparts; k++) {
            uint32_t p = L->rr++ % L->nparts;
            struct receipts *r = &L->rcpt[p];
            if (r->next < r->n) {
                size_t n = SL_MIN(SL_MIN(PART_MAX_BATCH, r->n - r->next), left);
                const char *ptrs[PART_MAX_BATCH];
                for (size_t i = 0; i < n; i++) {
                    ptrs[i] = r->h[r->next + i];
                }
                r->next += n;
                if (submit_delete(s, p, ptrs, n) == SL_OK) {
                    L->issued += n;
                }
                return;
            }
        }
        break;
    default:
        break;
    }
}

static void *loop_main(void *arg)
{
    struct sb_loop *L = arg;
    uv_loop_init(&L->loop);
    if (part_client_new(L->e, &L->loop, &L->client) != SL_OK) {
        L->errors++;
        uv_loop_close(&L->loop);
        return NULL;
    }
    if (L->phase == SB_CYCLE) {
        cycle_start_group(L, 0);
    } else {
        for (uint32_t i = 0; i < L->nslots; i++) {
            slot_next(&L->slots[i]);
        }
    }
    if (L->outstanding > 0) {
        uv_run(&L->loop, UV_RUN_DEFAULT);
    }
    part_client_close(L->client);
    uv_run(&L->loop, UV_RUN_DEFAULT);
    uv_loop_close(&L->loop);
    return NULL;
}

/* The engine's own counters summed over its partitions. */
static struct part_partition_stats stats_sum(const struct part_engine *e, uint32_t nparts)
{
    struct part_partition_stats sum = {0}, s;
    for (uint32_t p = 0; p < nparts; p++) {
        if (part_engine_stats(e, p, &s) == SL_OK) {
            sum.commits += s.commits;
            sum.jobs += s.jobs;
            sum.commit_us += s.commit_us;
            sum.batch_us += s.batch_us;
        }
    }
    return sum;
}

/* Runs one phase on every loop and sums what they did; the group size
 * (jobs per commit) is what the engine itself reports. */
static void run_phase(struct sb_loop *loops, uint32_t nloops, enum sb_phase ph,
                      const struct sb_opts *opt, struct sb_measure *m)
{
    struct part_partition_stats s0 = stats_sum(loops[0].e, loops[0].nparts);
    double cpu0 = sb_cpu_s();
    int64_t wb0 = sb_write_bytes();
    uint64_t t0 = sl_mono_ns();
    uint64_t deadline = t0 + (uint64_t)(opt->seconds * 1e9);
    for (uint32_t l = 0; l < nloops; l++) {
        struct sb_loop *L = &loops[l];
        L->phase = ph;
        L->quota = opt->count / nloops + (l == 0 ? opt->count % nloops : 0);
        L->deadline_ns = deadline;
        L->issued = L->messages = L->jobs = L->errors = 0;
        L->last_ns = t0;
        L->outstanding = 0;
        memset(L->drained, 0, L->nparts * sizeof *L->drained);
        L->ndrained = 0;
        L->cycle_groups = 0;
        pthread_create(&L->thread, NULL, loop_main, L);
    }
    *m = (struct sb_measure){.ran = true};
    uint64_t last = t0;
    for (uint32_t l = 0; l < nloops; l++) {
        pthread_join(loops[l].thread, NULL);
        m->messages += loops[l].messages;
        m->jobs += loops[l].jobs;
        m->errors += loops[l].errors;
        last = SL_MAX(last, loops[l].last_ns);
    }
    m->seconds = (double)(last - t0) / 1e9;
    m->cpu_s = sb_cpu_s() - cpu0;
    int64_t wb1 = sb_write_bytes();
    m->write_bytes = wb0 >= 0 && wb1 >= 0 ? wb1 - wb0 : -1;
    struct part_partition_stats s1 = stats_sum(loops[0].e, loops[0].nparts);
    m->commits = s1.commits - s0.commits;
    m->commit_us = s1.commit_us - s0.commit_us;
    m->batch_us = s1.batch_us - s0.batch_us;
    m->per_commit = m->commits > 0 ? (double)(s1.jobs - s0.jobs) / (double)m->commits : 0.0;
}

/* ---- set-up: engine, queues ------------------------------------------- */

struct create_ctx {
    uint64_t *qids;
    uint32_t pending;
    int failed;
    uv_loop_t *loop;
};

static void on_created(struct part_cookie ck, int status, const struct part_result *res)
{
    struct create_ctx *cx = ck.ptr;
    if (status == SL_OK && res->queue != NULL) {
        cx->qids[ck.id] = res->queue->id;
    } else {
        cx->failed++;
    }
    if (--cx->pending == 0) {
        uv_stop(cx->loop);
    }
}

/* Creates queues bench/q<p> for every partition, on a short-lived loop. */
static int create_queues(struct part_engine *e, uint32_t nparts, uint64_t *qids)
{
    uv_loop_t loop;
    uv_loop_init(&loop);
    struct part_client *c = NULL;
    if (part_client_new(e, &loop, &c) != SL_OK) {
        uv_loop_close(&loop);
        return SL_EIO;
    }
    struct create_ctx cx = {.qids = qids, .loop = &loop};
    struct part_queue_config cfg = part_queue_config_default();
    for (uint32_t p = 0; p < nparts; p++) {
        char name[32];
        snprintf(name, sizeof name, "q%u", p);
        if (part_queue_create(c, "bench", name, &cfg, NULL, 0, NULL, 0,
                              (struct part_cookie){.ptr = &cx, .id = p}, on_created) == SL_OK) {
            cx.pending++;
        } else {
            cx.failed++;
        }
    }
    if (cx.pending > 0) {
        uv_run(&loop, UV_RUN_DEFAULT);
    }
    part_client_close(c);
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
    return cx.failed == 0 ? SL_OK : SL_EIO;
}

struct bench {
    struct part_engine *e;
    char *dir;
    uint32_t nparts;
    uint64_t *qids;
    uint32_t *pidx;
    char *body;
    struct part_send_entry entries[PART_MAX_BATCH];
    struct sb_loop *loops;
    uint32_t nloops;
};

static void bench_free(struct bench *b)
{
    if (b->e != NULL) {
        part_engine_close(b->e);
    }
    if (b->dir != NULL) {
        sb_rmdir(b->dir);
        free(b->dir);
    }
    for (uint32_t l = 0; b->loops != NULL && l < b->nloops; l++) {
        for (uint32_t p = 0; p < b->nparts; p++) {
            free(b->loops[l].rcpt[p].h);
        }
        free(b->loops[l].rcpt);
        free(b->loops[l].drained);
        free(b->loops[l].slots);
    }
    free(b->loops);
    free(b->qids);
    free(b->pidx);
    free(b->body);
}

static int bench_open(struct bench *b, const struct sb_opts *opt, uint32_t nparts,
                      enum part_durability dur, uint32_t body_size)
{
    *b = (struct bench){.nparts = nparts};
    b->dir = sb_tempdir(opt->tmpdir, "engine");
    if (b->dir == NULL) {
        fprintf(stderr, "sluice-storage-bench: cannot make a temp dir under %s\n", opt->tmpdir);
        return SL_EIO;
    }
    struct part_options po = {.data_dir = b->dir, .partitions = nparts, .durability = dur};
    char err[256] = "";
    if (part_engine_open(&po, &b->e, err, sizeof err) != SL_OK) {
        fprintf(stderr, "sluice-storage-bench: engine open: %s\n", err);
        return SL_EIO;
    }
    b->qids = sl_xcalloc(nparts, sizeof *b->qids);
    b->pidx = sl_xcalloc(nparts, sizeof *b->pidx);
    for (uint32_t p = 0; p < nparts; p++) {
        b->pidx[p] = p;
    }
    if (create_queues(b->e, nparts, b->qids) != SL_OK) {
        fprintf(stderr, "sluice-storage-bench: creating the bench queues failed\n");
        return SL_EIO;
    }
    b->body = sl_xmalloc(body_size + 1);
    for (uint32_t i = 0; i < body_size; i++) {
        b->body[i] = (char)('a' + i % 26);
    }
    for (size_t i = 0; i < PART_MAX_BATCH; i++) {
        /* 16 digest bytes: what the gateway stores with a message without
         * attributes (its body's MD5). */
        b->entries[i] = (struct part_send_entry){
            .body = {b->body, body_size}, .digests = {SB_DIGESTS, SB_DIGESTS_LEN}, .delay_s = -1};
    }
    b->nloops = SL_MAX(1, opt->loops);
    b->loops = sl_xcalloc(b->nloops, sizeof *b->loops);
    uint32_t per_loop = SL_MAX(1, opt->inflight / b->nloops);
    for (uint32_t l = 0; l < b->nloops; l++) {
        struct sb_loop *L = &b->loops[l];
        *L = (struct sb_loop){.opt = opt,
                              .e = b->e,
                              .qids = b->qids,
                              .pidx = b->pidx,
                              .nparts = nparts,
                              .entries = b->entries,
                              .nslots = per_loop,
                              .rr = l};
        L->slots = sl_xcalloc(per_loop, sizeof *L->slots);
        for (uint32_t i = 0; i < per_loop; i++) {
            L->slots[i].L = L;
        }
        L->drained = sl_xcalloc(nparts, sizeof *L->drained);
        L->rcpt = sl_xcalloc(nparts, sizeof *L->rcpt);
    }
    return SL_OK;
}

/* A phase runs when it is wanted or a later wanted phase needs it. */
static bool phase_needed(const struct sb_opts *opt, enum sb_phase ph)
{
    switch (ph) {
    case SB_SEND:
        return opt->want[SB_SEND] || opt->want[SB_RECEIVE] || opt->want[SB_DELETE];
    case SB_RECEIVE:
        return opt->want[SB_RECEIVE] || opt->want[SB_DELETE];
    default:
        return opt->want[ph];
    }
}

int sb_engine_cell(const struct sb_opts *opt, struct sb_cell *cell)
{
    struct bench b;
    int rc = bench_open(&b, opt, cell->partitions, cell->durability, opt->body_size);
    for (int ph = 0; rc == SL_OK && ph < SB_PHASES_; ph++) {
        if (phase_needed(opt, (enum sb_phase)ph)) {
            run_phase(b.loops, b.nloops, (enum sb_phase)ph, opt, &cell->engine[ph]);
            if (cell->engine[ph].errors > 0) {
                fprintf(stderr, "sluice-storage-bench: engine %s: %llu failed jobs\n",
                        sb_phase_name((enum sb_phase)ph),
                        (unsigned long long)cell->engine[ph].errors);
                rc = SL_EIO;
            }
        }
    }
    bench_free(&b);
    return rc;
}

/* ---- memory probe ------------------------------------------------------ */

static void load(struct bench *b, const struct sb_opts *opt, uint64_t n, struct sb_measure *m)
{
    struct sb_opts o = *opt;
    o.count = n;
    o.seconds = 1e9; /* count-bound only */
    o.batch = PART_MAX_BATCH;
    for (uint32_t l = 0; l < b->nloops; l++) {
        b->loops[l].opt = &o;
    }
    run_phase(b->loops, b->nloops, SB_SEND, &o, m);
    for (uint32_t l = 0; l < b->nloops; l++) {
        b->loops[l].opt = opt;
    }
}

int sb_memory_probe(const struct sb_opts *opt, struct sb_memory *out)
{
    struct bench b;
    *out = (struct sb_memory){.messages = opt->memory,
                              .partitions = opt->memory_partitions,
                              .body_size = opt->memory_body};
    int rc = bench_open(&b, opt, opt->memory_partitions, PART_DURABILITY_OS, opt->memory_body);
    if (rc == SL_OK) {
        out->rss_base = sb_rss_bytes();
        out->sqlite_base = sqlite3_memory_used();
        struct sb_measure m1, m2;
        load(&b, opt, opt->memory / 2, &m1);
        out->rss_half = sb_rss_bytes();
        out->sqlite_half = sqlite3_memory_used();
        load(&b, opt, opt->memory - opt->memory / 2, &m2);
        out->rss_full = sb_rss_bytes();
        out->sqlite_full = sqlite3_memory_used();
        out->load_seconds = m1.seconds + m2.seconds;
        if (m1.errors + m2.errors > 0 || m1.messages + m2.messages != opt->memory) {
            uint64_t stored = m1.messages + m2.messages;
            fprintf(stderr, "sluice-storage-bench: memory load stored %llu of %llu messages\n",
                    (unsigned long long)stored, (unsigned long long)opt->memory);
            rc = SL_EIO;
        } else {
            struct part_counts pc;
            int64_t ready = 0;
            for (uint32_t p = 0; p < b.nparts; p++) {
                if (part_queue_counts(b.e, b.qids[p], PART_ALL_PARTITIONS, &pc) == SL_OK) {
                    ready += pc.ready;
                }
            }
            if ((uint64_t)ready != opt->memory) {
                fprintf(stderr, "sluice-storage-bench: %lld ready, expected %llu\n",
                        (long long)ready, (unsigned long long)opt->memory);
                rc = SL_EIO;
            }
        }
    }
    bench_free(&b);
    return rc;
}
