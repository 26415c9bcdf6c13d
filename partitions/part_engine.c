/*
 * part_engine.c -- the engine: manifest, writer start/stop, per-loop
 * clients (completions over uv_async), job submission and long polling.
 *
 * Job flow: a loop thread builds a struct part_job (copying every input),
 * appends it to a writer's locked queue and signals the writer. The writer
 * runs it inside its next group commit and, after the commit, hands it to
 * part__complete(), which appends it to the submitting client's locked
 * completion list and calls uv_async_send(). Because uv_async_send
 * coalesces, the async callback drains the whole list each time. A job
 * that fans out (a delete batch over several partitions, purge, delete
 * queue) has sub-jobs that finish into their parent; the parent completes
 * when the last one does.
 *
 * Long polling: each queue has a FIFO of waiting receives (queue->wait_mu)
 * and a wake sequence. A receive records the sequence before it looks at
 * the counters; it parks only if the sequence is unchanged when it takes
 * the lock to park, so a commit between "nothing here" and "park" is never
 * missed. A writer that made n messages ready wakes at most n waiters and
 * sends each straight to its own partition. A waiter's deadline is a
 * uv_timer on its client's loop; the timer, a cancel or a drain takes the
 * waiter out under the same lock, or flags it if a writer holds it now.
 *
 * Ownership: a job is owned by exactly one place at a time: a writer
 * queue, a waiter list, or a completion list; it is freed on its loop
 * after its callback (receives after their uv_timer has closed).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>
#include <uv.h>

#include "part_int.h"

#define LOG_MOD "partitions"
#define MANIFEST_MAGIC "sluice-partitions"
#define MANIFEST_VERSION 1

uint64_t part__now(struct part_engine *e)
{
    return e->opt.now_ms ? e->opt.now_ms(e->opt.clock_ctx) : sl_wall_ms();
}

/* ---- manifest ---------------------------------------------------------- */

static int fsync_path(const char *path, int flags)
{
    int fd = open(path, flags);
    if (fd < 0) {
        return -1;
    }
    int rc = fsync(fd);
    close(fd);
    return rc;
}

static int manifest_write(struct part_engine *e, char *err, size_t errlen)
{
    char path[4096], tmp[4096], hex[2 * PART_KEY_LEN + 1];
    snprintf(path, sizeof path, "%s/manifest", e->data_dir);
    snprintf(tmp, sizeof tmp, "%s/manifest.tmp", e->data_dir);
    sl_hex_encode(e->key, PART_KEY_LEN, hex);
    FILE *f = fopen(tmp, "w");
    if (f == NULL) {
        snprintf(err, errlen, "%s: %s", tmp, strerror(errno));
        return SL_EIO;
    }
    fchmod(fileno(f), 0600);
    fprintf(f, "%s %d\npartitions %u\nkey %s\n", MANIFEST_MAGIC, MANIFEST_VERSION, e->nparts, hex);
    bool ok = fflush(f) == 0 && fsync(fileno(f)) == 0;
    ok = fclose(f) == 0 && ok;
    if (!ok || rename(tmp, path) != 0 || fsync_path(e->data_dir, O_RDONLY) != 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return SL_EIO;
    }
    return SL_OK;
}

static int hexval(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Returns SL_OK with *have set (0 when there is no manifest yet). */
static int manifest_read(struct part_engine *e, uint32_t *have, char *err, size_t errlen)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/manifest", e->data_dir);
    *have = 0;
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        if (errno == ENOENT) {
            return SL_OK;
        }
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return SL_EIO;
    }
    char magic[32] = "", hex[2 * PART_KEY_LEN + 16] = "";
    int version = 0;
    unsigned parts = 0;
    int n = fscanf(f, "%31s %d partitions %u key %72s", magic, &version, &parts, hex);
    fclose(f);
    if (n != 4 || strcmp(magic, MANIFEST_MAGIC) != 0 || strlen(hex) != 2 * PART_KEY_LEN ||
        parts == 0) {
        snprintf(err, errlen, "%s: not a sluice manifest", path);
        return SL_EIO;
    }
    if (version != MANIFEST_VERSION) {
        snprintf(err, errlen, "%s: format version %d, this build reads %d", path, version,
                 MANIFEST_VERSION);
        return SL_EIO;
    }
    for (int i = 0; i < PART_KEY_LEN; i++) {
        int hi = hexval(hex[2 * i]), lo = hexval(hex[2 * i + 1]);
        if (hi < 0 || lo < 0) {
            snprintf(err, errlen, "%s: bad key", path);
            return SL_EIO;
        }
        e->key[i] = (uint8_t)(hi << 4 | lo);
    }
    *have = parts;
    return SL_OK;
}

/* ---- engine ------------------------------------------------------------ */

static void set_err(char *err, size_t errlen, const char *msg)
{
    if (err != NULL && errlen > 0) {
        snprintf(err, errlen, "%s", msg);
    }
}

/* SQLite's memory statistics take a process-wide mutex around every one
 * of its allocations (about 25 per message) and nothing here reads them.
 * sqlite3_config must come before SQLite initialises; if something in the
 * process used SQLite first it refuses (SQLITE_MISUSE), which only keeps
 * the statistics on. */
static pthread_once_t sqlite_once = PTHREAD_ONCE_INIT;

static void sqlite_setup(void)
{
    (void)sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}

int part_engine_open(const struct part_options *opt, struct part_engine **out, char *err,
                     size_t errlen)
{
    pthread_once(&sqlite_once, sqlite_setup);
    char buf[512] = "";
    if (opt == NULL || opt->data_dir == NULL || opt->partitions == 0 ||
        opt->partitions > PART_MAX_PARTITIONS) {
        set_err(err, errlen, "partitions: need a data_dir and 1..4096 partitions");
        return SL_EINVAL;
    }
    if (mkdir(opt->data_dir, 0700) != 0 && errno != EEXIST) {
        snprintf(buf, sizeof buf, "%s: %s", opt->data_dir, strerror(errno));
        set_err(err, errlen, buf);
        return SL_EIO;
    }
    struct part_engine *e = sl_xcalloc(1, sizeof *e);
    e->opt = *opt;
    e->data_dir = sl_xstrdup(opt->data_dir);
    e->opt.data_dir = e->data_dir;
    pthread_mutex_init(&e->clients_mu, NULL);
    uint32_t have = 0;
    int rc = manifest_read(e, &have, buf, sizeof buf);
    if (rc == SL_OK && have > opt->partitions) {
        snprintf(buf, sizeof buf,
                 "%s holds %u partitions; refusing to open it with %u (shrinking would strand "
                 "messages; set partitions: %u or more)",
                 opt->data_dir, have, opt->partitions, have);
        rc = SL_EINVAL;
    }
    e->nparts = opt->partitions;
    if (rc == SL_OK && have == 0) {
        sl_random_bytes(e->key, PART_KEY_LEN);
    }
    if (rc == SL_OK && have != opt->partitions) {
        if (have != 0) {
            sl_log(SL_LOG_INFO, LOG_MOD, "growing from %u to %u partitions", have, opt->partitions);
        }
        rc = manifest_write(e, buf, sizeof buf);
    }
    if (rc == SL_OK) {
        rc = part__catalog_open(e, buf, sizeof buf);
    }
    if (rc != SL_OK) {
        set_err(err, errlen, buf);
        if (e->catalog.by_id != NULL) {
            part__catalog_close(e);
        }
        pthread_mutex_destroy(&e->clients_mu);
        free(e->data_dir);
        free(e);
        return rc;
    }
    e->writers = sl_xcalloc(e->nparts, sizeof *e->writers);
    for (uint32_t p = 0; p < e->nparts; p++) {
        part__writer_open(e, &e->writers[p], p); /* failure: partition marked failed */
    }
    part__writer_open(e, &e->catw, UINT32_MAX);
    for (uint32_t p = 0; p < e->nparts; p++) {
        SL_ASSERT(part__writer_start(&e->writers[p]) == SL_OK);
    }
    SL_ASSERT(part__writer_start(&e->catw) == SL_OK);
    sl_log(SL_LOG_INFO, LOG_MOD, "opened %s: %u partitions, durability %s", e->data_dir, e->nparts,
           opt->durability == PART_DURABILITY_FSYNC ? "fsync" : "os");
    *out = e;
    return SL_OK;
}

void part_engine_close(struct part_engine *e)
{
    if (e == NULL) {
        return;
    }
    part_engine_drain_polls(e);
    atomic_store(&e->closing, true);
    /* The catalog first: a queue delete it finishes submits purges. */
    part__writer_stop(&e->catw);
    for (uint32_t p = 0; p < e->nparts; p++) {
        part__writer_stop(&e->writers[p]);
    }
    free(e->writers);
    part__catalog_close(e);
    pthread_mutex_destroy(&e->clients_mu);
    sl_log(SL_LOG_INFO, LOG_MOD, "closed %s", e->data_dir);
    free(e->data_dir);
    free(e);
}

const uint8_t *part_engine_key(const struct part_engine *e)
{
    return e->key;
}

uint32_t part_engine_partitions(const struct part_engine *e)
{
    return e->nparts;
}

bool part_engine_partition_ok(const struct part_engine *e, uint32_t p)
{
    return p < e->nparts && !atomic_load(&e->writers[p].failed);
}

int64_t part_engine_partition_queued(const struct part_engine *e, uint32_t p)
{
    return p < e->nparts ? atomic_load(&e->writers[p].queued) : 0;
}

void part_engine_kick(struct part_engine *e)
{
    for (uint32_t p = 0; p < e->nparts; p++) {
        struct part_writer *w = &e->writers[p];
        pthread_mutex_lock(&w->mu);
        w->kicked = true;
        pthread_cond_signal(&w->cv);
        pthread_mutex_unlock(&w->mu);
    }
}

static void flush_one(struct part_queue *q, void *arg)
{
    part__flush_waiters(q, SL_OK);
}

void part_engine_drain_polls(struct part_engine *e)
{
    atomic_store(&e->draining, true);
    part__queue_foreach(e, flush_one, NULL);
}

/* ---- job plumbing ------------------------------------------------------ */

/* Appends the list head..tail (n jobs) to w's queue with one lock and one
 * wake-up; a writer that is gone fails them instead. */
static void writer_submit_list(struct part_writer *w, struct part_job *head, struct part_job *tail,
                               size_t n)
{
    pthread_mutex_lock(&w->mu);
    bool dead = !w->started || w->exited;
    if (!dead) {
        tail->next = NULL;
        if (w->tail) {
            w->tail->next = head;
        } else {
            w->head = head;
        }
        w->tail = tail;
        atomic_fetch_add(&w->queued, (int64_t)n);
        pthread_cond_signal(&w->cv);
    }
    pthread_mutex_unlock(&w->mu);
    if (dead) {
        int status = atomic_load(&w->failed) ? SL_EIO : SL_ECLOSED;
        while (head != NULL) {
            struct part_job *job = head;
            head = job == tail ? NULL : job->next;
            job->next = NULL;
            job->status = status;
            part__complete(job);
        }
    }
}

void part__writer_submit(struct part_writer *w, struct part_job *job)
{
    writer_submit_list(w, job, job, 1);
}

/* The client whose completions this thread is calling back (on_async), or
 * NULL: what those callbacks submit is corked on that client. */
static _Thread_local struct part_client *corking;

void part__submit_partition(struct part_engine *e, uint32_t p, struct part_job *job)
{
    job->partition = p;
    struct part_client *c = corking;
    if (c == NULL || c->engine != e) {
        part__writer_submit(&e->writers[p], job);
        return;
    }
    job->next = NULL;
    if (c->cork_tail[p] != NULL) {
        c->cork_tail[p]->next = job;
    } else {
        c->cork_head[p] = job;
    }
    c->cork_tail[p] = job;
    c->ncorked++;
}

static void cork_flush(struct part_client *c)
{
    for (uint32_t p = 0; p < c->engine->nparts && c->ncorked > 0; p++) {
        struct part_job *head = c->cork_head[p], *tail = c->cork_tail[p];
        if (head == NULL) {
            continue;
        }
        size_t n = 1;
        for (struct part_job *j = head; j != tail; j = j->next) {
            n++;
        }
        c->cork_head[p] = c->cork_tail[p] = NULL;
        c->ncorked -= n;
        writer_submit_list(&c->engine->writers[p], head, tail, n);
    }
}

static void recv_free(struct part_recv *r)
{
    for (size_t i = 0; i < PART_MAX_BATCH; i++) {
        free((void *)r->msgs[i].body.p); /* the block of every column (fill_message) */
    }
    free(r->parts);
    free(r->order);
    free(r);
}

static void job_free_now(struct part_job *job)
{
    free(job->msgs); /* and the messages' bytes after it */
    free(job->rh);
    if (job->parent == NULL) {
        free(job->entry_status);
    }
    free(job->res.sent);
    part_queue_info_free(job->res.queue);
    part__catalog_req_free(job->cat);
    if (job->recv != NULL) {
        recv_free(job->recv);
    }
    part__queue_unref(job->q);
    part__queue_unref(job->dest_q);
    free(job);
}

static void on_timer_closed(uv_handle_t *h)
{
    job_free_now(h->data);
}

void part__job_free(struct part_job *job)
{
    if (job->recv != NULL && job->recv->timer_init) {
        uv_close((uv_handle_t *)&job->recv->timer, on_timer_closed);
        return;
    }
    job_free_now(job);
}

static void client_free(struct part_client *c)
{
    pthread_mutex_destroy(&c->mu);
    free(c->cork_head);
    free(c->cork_tail);
    free(c);
}

void part__complete(struct part_job *job)
{
    struct part_job *parent = job->parent;
    if (parent != NULL) {
        /* Any failure wins; a deleted queue's purges do not: the queue is
         * gone either way and restart removes what a failed partition kept. */
        if (job->status != SL_OK && job->status != SL_ENOTFOUND && parent->op != PART_OP_Q_DELETE) {
            parent->status = job->status; /* benign race between writers */
        }
        job_free_now(job);
        if (atomic_fetch_sub(&parent->pending, 1) == 1) {
            part__complete(parent);
        }
        return;
    }
    struct part_client *c = job->client;
    if (c == NULL) { /* internal job nobody waits for */
        job_free_now(job);
        return;
    }
    pthread_mutex_lock(&c->mu);
    c->pending--;
    if (c->closed) {
        /* Its loop closed the client first: nobody is left to call back. */
        bool last = c->pending == 0 && c->handle_closed;
        pthread_mutex_unlock(&c->mu);
        job_free_now(job);
        if (last) {
            client_free(c);
        }
        return;
    }
    job->next = NULL;
    if (c->done_tail) {
        c->done_tail->next = job;
    } else {
        c->done_head = job;
    }
    c->done_tail = job;
    pthread_mutex_unlock(&c->mu);
    uv_async_send(&c->async);
}

/* ---- clients ----------------------------------------------------------- */

static struct part_job *job_new(struct part_client *c, enum part_op op, uint64_t queue_id,
                                struct part_cookie cookie, part_done_fn *done)
{
    struct part_job *job = sl_xcalloc(1, sizeof *job);
    job->op = op;
    job->engine = c->engine;
    job->client = c;
    job->cookie = cookie;
    job->done = done;
    job->queue_id = queue_id;
    pthread_mutex_lock(&c->mu);
    c->pending++;
    pthread_mutex_unlock(&c->mu);
    return job;
}

/* Frees a job that job_new made but that was never submitted. */
static void job_discard(struct part_job *job)
{
    struct part_client *c = job->client;
    pthread_mutex_lock(&c->mu);
    c->pending--;
    pthread_mutex_unlock(&c->mu);
    part__job_free(job);
}

static void recv_unlist(struct part_client *c, struct part_job *job)
{
    struct part_recv *r = job->recv;
    if (r->cprev) {
        r->cprev->recv->cnext = r->cnext;
    } else if (c->recv_head == job) {
        c->recv_head = r->cnext;
    }
    if (r->cnext) {
        r->cnext->recv->cprev = r->cprev;
    }
    r->cprev = r->cnext = NULL;
}

/* Puts back messages that a cancelled receive leased in the race. */
static void release_leases(struct part_engine *e, struct part_job *job)
{
    struct part_recv *r = job->recv;
    for (size_t i = 0; i < r->nmsgs; i++) {
        if (r->msgs[i].partition == UINT32_MAX) {
            continue;
        }
        uint32_t p = r->msgs[i].partition;
        struct part_job *rel = sl_xcalloc(1, sizeof *rel);
        rel->op = PART_OP_RELEASE;
        rel->engine = e;
        rel->queue_id = job->queue_id;
        rel->q = job->q;
        atomic_fetch_add(&job->q->refs, 1);
        rel->rh = sl_xcalloc(r->nmsgs, sizeof *rel->rh);
        rel->entry_status = sl_xcalloc(r->nmsgs, sizeof *rel->entry_status);
        for (size_t k = i; k < r->nmsgs; k++) {
            if (r->msgs[k].partition == p) {
                struct part_rh_entry *en = &rel->rh[rel->nrh];
                en->index = rel->nrh++;
                en->rh = (struct part_receipt){p, job->queue_id, r->msgs[k].sequence,
                                               r->msgs[k].receive_count};
                r->msgs[k].partition = UINT32_MAX;
            }
        }
        part__submit_partition(e, p, rel);
    }
}

/* Completions come in bursts (a group commit completes all its jobs at
 * once), and a caller often submits its next job from the callback. Those
 * submissions are corked and handed to each writer in lists, every
 * CORK_FLUSH jobs and when the burst is done: one lock and one wake-up per
 * writer instead of per job, and a writer that finished its group does
 * not start a new one with the first few resubmissions while the rest are
 * still being made (a trickle of tiny groups, each with its own commit). */
#define CORK_FLUSH 64

static void on_async(uv_async_t *h)
{
    struct part_client *c = h->data;
    pthread_mutex_lock(&c->mu);
    struct part_job *list = c->done_head;
    c->done_head = c->done_tail = NULL;
    pthread_mutex_unlock(&c->mu);
    struct part_client *outer = corking;
    corking = c;
    while (list != NULL) {
        struct part_job *job = list;
        list = job->next;
        job->next = NULL;
        if (job->recv != NULL) {
            struct part_recv *r = job->recv;
            recv_unlist(c, job);
            if (r->timer_init) {
                uv_timer_stop(&r->timer);
            }
            if (atomic_load(&r->flags) & PART_RECV_CANCELLED) {
                release_leases(c->engine, job);
                job->status = SL_ECLOSED;
            }
            if (job->status == SL_OK) {
                for (size_t i = 0; i < r->nmsgs; i++) {
                    const struct part_message *m = &r->msgs[i];
                    struct part_receipt rh = {m->partition, m->queue_id, m->sequence,
                                              m->receive_count};
                    part__receipt_encode(c->engine, &rh, r->msgs[i].receipt);
                }
                job->res.messages = r->msgs;
                job->res.message_count = r->nmsgs;
            }
        }
        if (job->entry_status != NULL) {
            job->res.entry_status = job->entry_status;
            job->res.entry_count = job->nrh;
        }
        job->res.purged = atomic_load(&job->purged);
        job->done(job->cookie, job->status, &job->res);
        part__job_free(job);
        if (c->ncorked >= CORK_FLUSH) {
            cork_flush(c);
        }
    }
    cork_flush(c);
    corking = outer;
}

int part_client_new(struct part_engine *e, uv_loop_t *loop, struct part_client **out)
{
    struct part_client *c = sl_xcalloc(1, sizeof *c);
    c->engine = e;
    c->loop = loop;
    c->cork_head = sl_xcalloc(e->nparts, sizeof *c->cork_head);
    c->cork_tail = sl_xcalloc(e->nparts, sizeof *c->cork_tail);
    pthread_mutex_init(&c->mu, NULL);
    if (uv_async_init(loop, &c->async, on_async) != 0) {
        client_free(c);
        return SL_EIO;
    }
    c->async.data = c;
    *out = c;
    return SL_OK;
}

static void on_client_closed(uv_handle_t *h)
{
    struct part_client *c = h->data;
    pthread_mutex_lock(&c->mu);
    c->handle_closed = true;
    bool last = c->pending == 0;
    pthread_mutex_unlock(&c->mu);
    if (last) {
        client_free(c);
    }
}

void part_client_close(struct part_client *c)
{
    if (c == NULL) {
        return;
    }
    SL_ASSERT(c->recv_head == NULL);
    /* Completions already queued for the loop will not be called back;
     * later ones are dropped by part__complete. */
    pthread_mutex_lock(&c->mu);
    c->closed = true;
    struct part_job *list = c->done_head;
    c->done_head = c->done_tail = NULL;
    pthread_mutex_unlock(&c->mu);
    while (list != NULL) {
        struct part_job *job = list;
        list = job->next;
        part__job_free(job);
    }
    uv_close((uv_handle_t *)&c->async, on_client_closed);
}

/* Takes job out of its waiter list if it is parked; otherwise flags it, so
 * the writer holding it finishes it. True when it was parked. */
static bool recv_unpark(struct part_job *job, int flag)
{
    struct part_queue *q = job->q;
    struct part_recv *r = job->recv;
    pthread_mutex_lock(&q->wait_mu);
    bool parked = r->waiting;
    if (parked) {
        if (r->wprev) {
            r->wprev->recv->wnext = r->wnext;
        } else {
            q->wait_head = r->wnext;
        }
        if (r->wnext) {
            r->wnext->recv->wprev = r->wprev;
        } else {
            q->wait_tail = r->wprev;
        }
        r->wprev = r->wnext = NULL;
        r->waiting = false;
    }
    atomic_fetch_or(&r->flags, flag);
    pthread_mutex_unlock(&q->wait_mu);
    return parked;
}

void part_client_drain(struct part_client *c)
{
    c->draining = true;
    for (struct part_job *job = c->recv_head; job != NULL; job = job->recv->cnext) {
        if (recv_unpark(job, PART_RECV_EXPIRED)) {
            job->status = SL_OK;
            part__complete(job);
        }
    }
}

static void on_recv_timeout(uv_timer_t *t)
{
    struct part_job *job = t->data;
    if (recv_unpark(job, PART_RECV_EXPIRED)) {
        job->status = SL_OK;
        part__complete(job);
    }
}

void part_receive_cancel(struct part_client *c, uint64_t ticket)
{
    for (struct part_job *job = c->recv_head; job != NULL; job = job->recv->cnext) {
        if (job->recv->ticket == ticket) {
            if (recv_unpark(job, PART_RECV_CANCELLED)) {
                job->status = SL_ECLOSED;
                part__complete(job);
            }
            return;
        }
    }
}

/* ---- long polling ------------------------------------------------------ */

int64_t part__lane_ready(struct part_queue *q, uint32_t p, int lane)
{
    int64_t overflow = atomic_load(&q->per[p].overflow_ready);
    return lane == PART_LANE_OVERFLOW ? overflow : atomic_load(&q->per[p].ready) - overflow;
}

static int64_t head_of(struct part_queue *q, uint32_t p, int lane)
{
    return atomic_load(&q->per[p].head_priority[lane]);
}

bool part__recv_plan(struct part_engine *e, struct part_job *job, uint32_t first)
{
    struct part_recv *r = job->recv;
    struct part_queue *q = job->q;
    int lane = r->lanes[r->pass];
    r->norder = 0;
    for (size_t i = 0; i < r->nparts; i++) {
        uint32_t p = r->parts[i];
        if (p != first && part__lane_ready(q, p, lane) > 0 && part_engine_partition_ok(e, p)) {
            /* insertion sort by head priority: a handful of partitions */
            size_t k = r->norder++;
            while (k > 0 && head_of(q, r->order[k - 1], lane) > head_of(q, p, lane)) {
                r->order[k] = r->order[k - 1];
                k--;
            }
            r->order[k] = p;
        }
    }
    if (first != UINT32_MAX) {
        memmove(r->order + 1, r->order, r->norder * sizeof *r->order);
        r->order[0] = first;
        r->norder++;
    }
    return r->norder > 0;
}

void part__recv_dispatch(struct part_engine *e, struct part_job *job, uint32_t first)
{
    struct part_recv *r = job->recv;
    /* the sequence before the counters: see the file comment */
    r->seen_seq = atomic_load(&job->q->wake_seq);
    r->pass = 0;
    if (!part__recv_plan(e, job, first)) {
        r->pass = 1;
        if (!part__recv_plan(e, job, UINT32_MAX)) {
            part__recv_no_message(e, job);
            return;
        }
    }
    r->next = 1;
    part__submit_partition(e, r->order[0], job);
}

void part__recv_no_message(struct part_engine *e, struct part_job *job)
{
    struct part_recv *r = job->recv;
    struct part_queue *q = job->q;
    job->status = SL_OK;
    if (r->deadline_ns == 0 || sl_mono_ns() >= r->deadline_ns) {
        part__complete(job);
        return;
    }
    pthread_mutex_lock(&q->wait_mu);
    int flags = atomic_load(&r->flags);
    if ((flags & (PART_RECV_CANCELLED | PART_RECV_EXPIRED)) || atomic_load(&e->draining)) {
        pthread_mutex_unlock(&q->wait_mu);
        job->status = (flags & PART_RECV_CANCELLED) ? SL_ECLOSED : SL_OK;
        part__complete(job);
        return;
    }
    if (atomic_load(&q->wake_seq) != r->seen_seq) {
        /* something became ready since this receive looked: look again */
        pthread_mutex_unlock(&q->wait_mu);
        part__recv_dispatch(e, job, UINT32_MAX);
        return;
    }
    r->waiting = true;
    if (r->woken && q->wait_head != NULL) { /* keep its turn */
        r->wnext = q->wait_head;
        q->wait_head->recv->wprev = job;
        q->wait_head = job;
    } else {
        r->wprev = q->wait_tail;
        if (q->wait_tail) {
            q->wait_tail->recv->wnext = job;
        } else {
            q->wait_head = job;
        }
        q->wait_tail = job;
    }
    pthread_mutex_unlock(&q->wait_mu);
}

static struct part_job *pop_waiter(struct part_queue *q)
{
    struct part_job *job = q->wait_head;
    if (job != NULL) {
        q->wait_head = job->recv->wnext;
        if (q->wait_head) {
            q->wait_head->recv->wprev = NULL;
        } else {
            q->wait_tail = NULL;
        }
        job->recv->wnext = NULL;
        job->recv->waiting = false;
    }
    return job;
}

void part__wake(struct part_engine *e, struct part_queue *q, uint32_t p, int64_t n)
{
    struct part_job *woken[64];
    size_t nw = 0;
    pthread_mutex_lock(&q->wait_mu);
    atomic_fetch_add(&q->wake_seq, 1);
    while (n-- > 0 && nw < SL_ARRAY_LEN(woken)) {
        struct part_job *job = pop_waiter(q);
        if (job == NULL) {
            break;
        }
        job->recv->woken = true;
        woken[nw++] = job;
    }
    pthread_mutex_unlock(&q->wait_mu);
    for (size_t i = 0; i < nw; i++) {
        part__recv_dispatch(e, woken[i], p);
    }
}

void part__flush_waiters(struct part_queue *q, int status)
{
    pthread_mutex_lock(&q->wait_mu);
    atomic_fetch_add(&q->wake_seq, 1);
    struct part_job *list = q->wait_head;
    q->wait_head = q->wait_tail = NULL;
    for (struct part_job *j = list; j != NULL; j = j->recv->wnext) {
        j->recv->waiting = false;
    }
    pthread_mutex_unlock(&q->wait_mu);
    while (list != NULL) {
        struct part_job *job = list;
        list = job->recv->wnext;
        job->recv->wnext = job->recv->wprev = NULL;
        job->status = status;
        part__complete(job);
    }
}

/* ---- submission -------------------------------------------------------- */

static int open_queue(struct part_client *c, uint64_t queue_id, struct part_queue **q)
{
    if (atomic_load(&c->engine->closing)) {
        return SL_ECLOSED;
    }
    *q = part__queue_ref(c->engine, queue_id);
    return *q != NULL ? SL_OK : SL_ENOTFOUND;
}

/* A job on queue_id holding a reference to the queue, or the reason there
 * is none (open_queue's). */
static int queue_job_new(struct part_client *c, enum part_op op, uint64_t queue_id,
                         struct part_cookie cookie, part_done_fn *done, struct part_job **out)
{
    struct part_queue *q = NULL;
    int rc = open_queue(c, queue_id, &q);
    if (rc != SL_OK) {
        return rc;
    }
    *out = job_new(c, op, queue_id, cookie, done);
    (*out)->q = q;
    return SL_OK;
}

/* Copies s to *p (advanced past it); the copy. */
static struct sl_slice copy_into(char **p, struct sl_slice s)
{
    struct sl_slice out = {*p, s.n};
    if (s.n > 0) {
        memcpy(*p, s.p, s.n);
    }
    *p += s.n;
    return out;
}

int part_send(struct part_client *c, uint64_t queue_id, uint32_t partition,
              const struct part_send_entry *entries, size_t n, struct part_cookie cookie,
              part_done_fn *done)
{
    if (n == 0 || n > PART_MAX_BATCH || partition >= c->engine->nparts || done == NULL) {
        return SL_EINVAL;
    }
    for (size_t i = 0; i < n; i++) {
        if (entries[i].group_id.n > PART_GROUP_ID_MAX || entries[i].digests.n > PART_DIGESTS_MAX) {
            return SL_EINVAL;
        }
    }
    struct part_job *job = NULL;
    int rc = queue_job_new(c, PART_OP_SEND, queue_id, cookie, done, &job);
    if (rc != SL_OK) {
        return rc;
    }
    /* One allocation for the array and every message's bytes. */
    size_t bytes = 0;
    for (size_t i = 0; i < n; i++) {
        bytes += entries[i].body.n + entries[i].attrs.n + entries[i].sys_attrs.n +
                 entries[i].group_id.n + 1;
    }
    job->msgs = sl_xmalloc(n * sizeof *job->msgs + bytes);
    job->nmsgs = n;
    uint8_t rnd[PART_MAX_BATCH][16];
    sl_random_bytes(rnd, n * sizeof rnd[0]);
    char *p = (char *)(job->msgs + n);
    for (size_t i = 0; i < n; i++) {
        struct part_send_msg *m = &job->msgs[i];
        *m = (struct part_send_msg){0};
        sl_uuid4_from(rnd[i], m->message_id);
        m->body = copy_into(&p, entries[i].body);
        m->attrs = copy_into(&p, entries[i].attrs);
        m->sys_attrs = copy_into(&p, entries[i].sys_attrs);
        if (entries[i].digests.n > 0) {
            memcpy(m->digests, entries[i].digests.p, entries[i].digests.n);
            m->ndigests = (uint8_t)entries[i].digests.n;
        }
        if (entries[i].group_id.n > 0) {
            m->group_id = copy_into(&p, entries[i].group_id).p;
            *p++ = '\0';
        }
        m->lane = entries[i].lane == PART_LANE_OVERFLOW ? PART_LANE_OVERFLOW : PART_LANE_MAIN;
        m->delay_s = entries[i].delay_s;
        m->has_priority = entries[i].has_priority;
        m->priority = entries[i].priority;
    }
    part__submit_partition(c->engine, partition, job);
    return SL_OK;
}

int part_receive(struct part_client *c, const struct part_receive_req *req,
                 struct part_cookie cookie, part_done_fn *done, uint64_t *ticket)
{
    struct part_engine *e = c->engine;
    if (req == NULL || done == NULL || req->max_messages == 0 ||
        req->max_messages > PART_MAX_BATCH || req->partition_count == 0 ||
        req->partition_count > e->nparts) {
        return SL_EINVAL;
    }
    for (size_t i = 0; i < req->partition_count; i++) {
        if (req->partitions[i] >= e->nparts) {
            return SL_EINVAL;
        }
    }
    struct part_job *job = NULL;
    int rc = queue_job_new(c, PART_OP_RECEIVE, req->queue_id, cookie, done, &job);
    if (rc != SL_OK) {
        return rc;
    }
    struct part_recv *r = sl_xcalloc(1, sizeof *r);
    job->recv = r;
    r->ticket = ++c->next_ticket;
    r->parts = sl_xcalloc(req->partition_count, sizeof *r->parts);
    memcpy(r->parts, req->partitions, req->partition_count * sizeof *r->parts);
    r->nparts = req->partition_count;
    r->order = sl_xcalloc(req->partition_count + 1, sizeof *r->order);
    r->max = req->max_messages;
    r->visibility_s = req->visibility_s;
    r->noisy = req->noisy;
    r->fair_window = req->fair_window ? req->fair_window : PART_FAIR_WINDOW;
    r->lanes[0] = PART_LANE_MAIN;
    r->lanes[1] = PART_LANE_OVERFLOW;
    uint64_t turn = atomic_fetch_add_explicit(&job->q->recv_seq, 1, memory_order_relaxed) + 1;
    if (req->overflow_every > 0 && turn % req->overflow_every == 0) {
        r->lanes[0] = PART_LANE_OVERFLOW; /* the starvation guard's turn */
        r->lanes[1] = PART_LANE_MAIN;
    }
    atomic_init(&r->flags, 0);
    if (req->wait_ms > 0 && !c->draining && !atomic_load(&e->draining)) {
        r->deadline_ns = sl_mono_ns() + (uint64_t)req->wait_ms * 1000000ull;
        uv_timer_init(c->loop, &r->timer);
        r->timer.data = job;
        r->timer_init = true;
        uv_timer_start(&r->timer, on_recv_timeout, req->wait_ms, 0);
    }
    r->cnext = c->recv_head;
    if (c->recv_head) {
        c->recv_head->recv->cprev = job;
    }
    c->recv_head = job;
    if (ticket != NULL) {
        *ticket = r->ticket;
    }
    part__recv_dispatch(e, job, UINT32_MAX);
    return SL_OK;
}

/* Delete, change visibility: the handles decoded (valid[i] false for a
 * bad one, answered SL_EINVAL), fanned out per partition. */
static int submit_by_receipt(struct part_client *c, enum part_op op, uint64_t queue_id,
                             const struct part_receipt *rh, const bool *valid, const uint32_t *vis,
                             size_t n, struct part_cookie cookie, part_done_fn *done)
{
    struct part_engine *e = c->engine;
    if (n == 0 || n > PART_MAX_BATCH || done == NULL) {
        return SL_EINVAL;
    }
    struct part_job *job = NULL;
    int rc = queue_job_new(c, op, queue_id, cookie, done, &job);
    if (rc != SL_OK) {
        return rc;
    }
    job->entry_status = sl_xcalloc(n, sizeof *job->entry_status);
    job->nrh = n;
    for (size_t i = 0; i < n; i++) {
        job->entry_status[i] = valid[i] ? SL_OK : SL_EINVAL;
    }
    struct part_job *subs[PART_MAX_BATCH];
    size_t nsubs = 0;
    for (size_t i = 0; i < n; i++) {
        if (!valid[i]) {
            continue;
        }
        struct part_job *sub = NULL;
        for (size_t s = 0; s < nsubs; s++) {
            if (subs[s]->partition == rh[i].partition) {
                sub = subs[s];
            }
        }
        if (sub == NULL) {
            sub = sl_xcalloc(1, sizeof *sub);
            sub->op = op;
            sub->engine = e;
            sub->parent = job;
            sub->queue_id = queue_id;
            sub->q = job->q;
            atomic_fetch_add(&job->q->refs, 1);
            sub->partition = rh[i].partition;
            sub->rh = sl_xcalloc(n, sizeof *sub->rh);
            subs[nsubs++] = sub;
        }
        sub->rh[sub->nrh++] = (struct part_rh_entry){i, rh[i], vis ? vis[i] : 0};
    }
    job->status = SL_OK;
    if (nsubs == 0) {
        part__complete(job);
        return SL_OK;
    }
    atomic_store(&job->pending, (int)nsubs);
    for (size_t s = 0; s < nsubs; s++) {
        part__submit_partition(e, subs[s]->partition, subs[s]);
    }
    return SL_OK;
}

/* Decodes handles (NUL-terminated) and submits them. */
static int submit_handles(struct part_client *c, enum part_op op, uint64_t queue_id,
                          const char *const *handles, const uint32_t *vis, size_t n,
                          struct part_cookie cookie, part_done_fn *done)
{
    if (n == 0 || n > PART_MAX_BATCH) {
        return SL_EINVAL;
    }
    struct part_receipt rh[PART_MAX_BATCH];
    bool valid[PART_MAX_BATCH];
    for (size_t i = 0; i < n; i++) {
        valid[i] =
            handles[i] != NULL &&
            part_receipt_decode(c->engine, handles[i], strlen(handles[i]), &rh[i]) == SL_OK &&
            rh[i].queue_id == queue_id;
    }
    return submit_by_receipt(c, op, queue_id, rh, valid, vis, n, cookie, done);
}

/* Receipts decoded by the caller: only the queue and the partition range
 * are checked again (part_receipt_decode checked the MAC). */
static int submit_decoded(struct part_client *c, enum part_op op, uint64_t queue_id,
                          const struct part_receipt *rh, const uint32_t *vis, size_t n,
                          struct part_cookie cookie, part_done_fn *done)
{
    if (n == 0 || n > PART_MAX_BATCH || rh == NULL) {
        return SL_EINVAL;
    }
    bool valid[PART_MAX_BATCH];
    for (size_t i = 0; i < n; i++) {
        valid[i] = rh[i].queue_id == queue_id && rh[i].partition < c->engine->nparts;
    }
    return submit_by_receipt(c, op, queue_id, rh, valid, vis, n, cookie, done);
}

int part_delete(struct part_client *c, uint64_t queue_id, const char *const *handles, size_t n,
                struct part_cookie cookie, part_done_fn *done)
{
    return submit_handles(c, PART_OP_DELETE, queue_id, handles, NULL, n, cookie, done);
}

int part_change_visibility(struct part_client *c, uint64_t queue_id,
                           const struct part_visibility_entry *entries, size_t n,
                           struct part_cookie cookie, part_done_fn *done)
{
    if (n == 0 || n > PART_MAX_BATCH) {
        return SL_EINVAL;
    }
    const char *handles[PART_MAX_BATCH];
    uint32_t vis[PART_MAX_BATCH];
    for (size_t i = 0; i < n; i++) {
        handles[i] = entries[i].receipt;
        vis[i] = entries[i].visibility_s;
    }
    return submit_handles(c, PART_OP_CHANGE_VIS, queue_id, handles, vis, n, cookie, done);
}

int part_delete_decoded(struct part_client *c, uint64_t queue_id,
                        const struct part_receipt *receipts, size_t n, struct part_cookie cookie,
                        part_done_fn *done)
{
    return submit_decoded(c, PART_OP_DELETE, queue_id, receipts, NULL, n, cookie, done);
}

int part_change_visibility_decoded(struct part_client *c, uint64_t queue_id,
                                   const struct part_receipt *receipts,
                                   const uint32_t *visibility_s, size_t n,
                                   struct part_cookie cookie, part_done_fn *done)
{
    if (visibility_s == NULL) {
        return SL_EINVAL;
    }
    return submit_decoded(c, PART_OP_CHANGE_VIS, queue_id, receipts, visibility_s, n, cookie, done);
}

int part_purge(struct part_client *c, uint64_t queue_id, struct part_cookie cookie,
               part_done_fn *done)
{
    struct part_engine *e = c->engine;
    if (done == NULL) {
        return SL_EINVAL;
    }
    struct part_job *job = NULL;
    int rc = queue_job_new(c, PART_OP_PURGE, queue_id, cookie, done, &job);
    if (rc != SL_OK) {
        return rc;
    }
    job->status = SL_OK;
    atomic_store(&job->pending, (int)e->nparts);
    for (uint32_t p = 0; p < e->nparts; p++) {
        struct part_job *sub = sl_xcalloc(1, sizeof *sub);
        sub->op = PART_OP_PURGE;
        sub->engine = e;
        sub->parent = job;
        sub->queue_id = queue_id;
        sub->q = job->q;
        atomic_fetch_add(&job->q->refs, 1);
        part__submit_partition(e, p, sub);
    }
    return SL_OK;
}

int part_move(struct part_client *c, const struct part_move_req *req, struct part_cookie cookie,
              part_done_fn *done)
{
    struct part_engine *e = c->engine;
    if (req == NULL || done == NULL || req->partition >= e->nparts || req->max_messages == 0 ||
        req->max_messages > PART_MAX_MOVE || req->dest_queue_id == req->queue_id) {
        return SL_EINVAL;
    }
    struct part_queue *q = NULL;
    int rc = open_queue(c, req->queue_id, &q);
    if (rc != SL_OK) {
        return rc;
    }
    struct part_queue *dest = NULL;
    if (req->dest_queue_id != 0) {
        /* Moving in place needs the destination on the same partitions,
         * which only a queue of the same tenant guarantees. */
        dest = part__queue_ref(e, req->dest_queue_id);
        if (dest == NULL || strcmp(dest->tenant_name, q->tenant_name) != 0) {
            part__queue_unref(dest);
            part__queue_unref(q);
            return SL_ENOTFOUND;
        }
    }
    struct part_job *job = job_new(c, PART_OP_MOVE, req->queue_id, cookie, done);
    job->q = q;
    job->dest_q = dest;
    job->move_after = req->after_sequence;
    job->move_max = req->max_messages;
    part__submit_partition(e, req->partition, job);
    return SL_OK;
}

int part_barrier(struct part_client *c, uint32_t partition, struct part_cookie cookie,
                 part_done_fn *done)
{
    if (partition >= c->engine->nparts || done == NULL) {
        return SL_EINVAL;
    }
    if (atomic_load(&c->engine->closing)) {
        return SL_ECLOSED;
    }
    struct part_job *job = job_new(c, PART_OP_BARRIER, 0, cookie, done);
    part__submit_partition(c->engine, partition, job);
    return SL_OK;
}

/* ---- catalog submission ------------------------------------------------ */

static struct part_kv *kvs_copy(const struct part_kv *kv, size_t n, bool values)
{
    struct part_kv *out = sl_xcalloc(n ? n : 1, sizeof *out);
    for (size_t i = 0; i < n; i++) {
        out[i].key = sl_xstrdup(kv[i].key);
        out[i].value = values && kv[i].value ? sl_xstrdup(kv[i].value) : NULL;
    }
    return out;
}

static bool kvs_valid(const struct part_kv *kv, size_t n, bool need_values)
{
    if (n > 0 && kv == NULL) {
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        if (kv[i].key == NULL || (need_values && kv[i].value == NULL)) {
            return false;
        }
    }
    return true;
}

static int submit_catalog(struct part_client *c, struct part_job *job)
{
    if (atomic_load(&c->engine->closing)) {
        job_discard(job);
        return SL_ECLOSED;
    }
    part__writer_submit(&c->engine->catw, job);
    return SL_OK;
}

int part_queue_create(struct part_client *c, const char *tenant, const char *name,
                      const struct part_queue_config *cfg, const struct part_kv *attrs,
                      size_t attr_count, const struct part_kv *tags, size_t tag_count,
                      struct part_cookie cookie, part_done_fn *done)
{
    if (tenant == NULL || name == NULL || *tenant == '\0' || *name == '\0' || done == NULL ||
        !kvs_valid(attrs, attr_count, true) || !kvs_valid(tags, tag_count, true)) {
        return SL_EINVAL;
    }
    struct part_job *job = job_new(c, PART_OP_Q_CREATE, 0, cookie, done);
    struct part_catalog_req *r = sl_xcalloc(1, sizeof *r);
    job->cat = r;
    r->tenant = sl_xstrdup(tenant);
    r->name = sl_xstrdup(name);
    r->cfg = cfg ? *cfg : part_queue_config_default();
    r->kvs = kvs_copy(attrs, attr_count, true);
    r->nkv = attr_count;
    r->tags = kvs_copy(tags, tag_count, true);
    r->ntags = tag_count;
    return submit_catalog(c, job);
}

static int submit_queue_change(struct part_client *c, enum part_op op, uint64_t queue_id,
                               const struct part_queue_config *cfg, const struct part_kv *kv,
                               size_t n, bool values, struct part_cookie cookie, part_done_fn *done)
{
    if (done == NULL || !kvs_valid(kv, n, false)) {
        return SL_EINVAL;
    }
    if (!part__queue_known(c->engine, queue_id)) {
        return SL_ENOTFOUND;
    }
    struct part_job *job = job_new(c, op, queue_id, cookie, done);
    struct part_catalog_req *r = sl_xcalloc(1, sizeof *r);
    job->cat = r;
    if (cfg) {
        r->cfg = *cfg;
    }
    r->kvs = kvs_copy(kv, n, values);
    r->nkv = n;
    r->tags = sl_xcalloc(1, sizeof *r->tags);
    return submit_catalog(c, job);
}

int part_queue_set_attributes(struct part_client *c, uint64_t queue_id,
                              const struct part_queue_config *cfg, const struct part_kv *attrs,
                              size_t attr_count, struct part_cookie cookie, part_done_fn *done)
{
    if (cfg == NULL) {
        return SL_EINVAL;
    }
    return submit_queue_change(c, PART_OP_Q_SET_ATTRS, queue_id, cfg, attrs, attr_count, true,
                               cookie, done);
}

int part_queue_tag(struct part_client *c, uint64_t queue_id, const struct part_kv *tags, size_t n,
                   struct part_cookie cookie, part_done_fn *done)
{
    if (!kvs_valid(tags, n, true)) {
        return SL_EINVAL;
    }
    return submit_queue_change(c, PART_OP_Q_TAG, queue_id, NULL, tags, n, true, cookie, done);
}

int part_queue_untag(struct part_client *c, uint64_t queue_id, const char *const *keys, size_t n,
                     struct part_cookie cookie, part_done_fn *done)
{
    if (n > 0 && keys == NULL) {
        return SL_EINVAL;
    }
    struct part_kv kv[64];
    if (n > SL_ARRAY_LEN(kv)) {
        return SL_EINVAL;
    }
    for (size_t i = 0; i < n; i++) {
        kv[i] = (struct part_kv){keys[i], NULL};
    }
    return submit_queue_change(c, PART_OP_Q_UNTAG, queue_id, NULL, kv, n, false, cookie, done);
}

int part_queue_delete(struct part_client *c, uint64_t queue_id, struct part_cookie cookie,
                      part_done_fn *done)
{
    return submit_queue_change(c, PART_OP_Q_DELETE, queue_id, NULL, NULL, 0, false, cookie, done);
}
