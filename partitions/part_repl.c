/*
 * part_repl.c -- replicated SQLite images (part_repl.h): libraft drives one
 * Raft group per database on this node's Raft thread, and dqlite's
 * replication VFS turns a committed transaction into WAL frames to
 * replicate and applies them on every replica.
 *
 * One entry of a group's log is one transaction: a header (this node, a
 * sequence number), the caller's note, then the page numbers and pages
 * dqlite_vfs_poll returned. The writer's thread polls the frames and
 * waits; the Raft thread proposes them, and the group's FSM applies each
 * committed entry with dqlite_vfs_apply -- on the leader that ends the
 * writer's transaction, on a follower it adds the frames to its copy.
 *
 * Threading: libraft, the timers and every FSM callback run on the Raft
 * thread. A group's lock (mu) is held by the writer from
 * part__repl_write_begin to the poll in part__repl_write_end, and by the
 * Raft thread around every VFS call of the group, so the image is never
 * touched by two threads at once. The Raft thread blocks on a group's
 * lock only while that group's writer is inside a transaction that lost
 * its leadership, which takes a transaction's time: the same stall dqlite
 * accepts by running SQL on its Raft loop.
 */
#include "part_repl.h"

#include "part_bytes.h"
#include "part_raft_transport.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <dqlite.h>
#include <raft.h>
#include <raft/uv.h>
#include <uv.h>

#define LOG_MOD "repl"
#define DB_FILE "db"
#define ENTRY_MAGIC 0x534c5231u /* "SLR1" */
#define ENTRY_HEADER 32u        /* magic, count, node, seq, note length */
#define STATE_POLL_MS 20u
/* libraft stores an entry padded to 8 bytes and may give it back so:
 * every part of ours is a multiple of 8, so the length is exact. */
#define PAD8(n) (((n) + 7u) & ~(size_t)7u)
#define GROUP_NAME_MAX 32u

/* ---- a node and its Raft thread ------------------------------------------- */

/* A closure run on the Raft thread for another thread, which waits. */
struct repl_call {
    void (*fn)(void *arg);
    void *arg;
    bool done;
    struct repl_call *next;
};

struct part_repl {
    struct part_repl_options opt;
    char *dir;
    uv_loop_t loop;
    uv_async_t wake;
    uv_timer_t state_timer;
    pthread_t thread;
    pthread_mutex_t mu; /* the calls queue */
    pthread_cond_t cv;
    struct repl_call *calls, *calls_tail;
    bool closing;                    /* Raft thread only */
    bool muted;                      /* Raft thread only: no more hooks */
    struct part_repl_group **groups; /* Raft thread only, until joined */
    size_t group_count;
    size_t groups_closing; /* Raft thread only */
    struct part__raft_node *port;
    _Atomic uint64_t image_bytes; /* the sum of its groups' */
    size_t node_count;            /* the port's configured nodes */
};

/* A write proposed and not yet answered. */
struct repl_proposal {
    struct raft_apply req;
    struct part_repl_group *g;
    uint64_t seq;
    int status;   /* SL_OK or SL_E*, once done */
    bool applied; /* the FSM applied it: the VFS's write lock is gone */
    bool done;
};

struct part_repl_group {
    struct part_repl *node;
    char name[GROUP_NAME_MAX + 1];
    char vfs_name[64];
    sqlite3_vfs vfs;
    bool vfs_registered;
    struct raft raft;
    struct raft_io io;
    struct raft_uv_transport transport;
    struct raft_fsm fsm;
    struct raft_barrier barrier;
    bool raft_open; /* raft_init succeeded: raft_close must run */
    bool barrier_pending;
    sqlite3 *reader; /* the Raft thread's connection: it makes the image exist */
    struct part_repl_hooks hooks;
    bool was_leading;    /* Raft thread: what the hooks last heard */
    uint64_t was_leader; /* Raft thread */
    uint64_t wal_frames; /* under mu: frames applied since the last checkpoint */
    sqlite3_stmt *page_count, *freelist_count; /* on reader, under mu */

    pthread_mutex_t mu; /* the image; the fields below */
    pthread_cond_t cv;
    struct repl_proposal *pending; /* this node's write in flight */
    uint64_t next_seq;
    atomic_bool leading; /* leader, and every earlier entry applied */
    /* has heard from a leader (or is one) and applied every entry known
     * committed: its image is as recent as this node can know */
    atomic_bool caught_up;
    _Atomic uint64_t leader_id;
    _Atomic uint64_t applied;
    /* the image's pages in use x page size, as of the last entry applied */
    _Atomic uint64_t image_bytes;
    /* leader placement (part__repl_group_prefer); Raft thread below */
    _Atomic uint64_t preferred;
    struct raft_transfer transfer;
    bool transfer_busy;
    uint64_t lead_since_ms, handover_tried_ms; /* uv_now of the Raft loop */
    /* For the operators (part__repl_group_stats): libraft's fields are the
     * Raft thread's, so watch_group publishes copies. */
    _Atomic uint64_t term, commit_index, last_applied, snapshot_bytes, leaderless_ms;
    _Atomic uint32_t voters;
    uint64_t leaderless_since; /* Raft thread: uv_now when it last lost its leader; 0: has one */
};

static struct sl_log_limit apply_log_limit = SL_LOG_LIMIT(5, 60000);

static void *repl_thread_main(void *arg)
{
    struct part_repl *r = arg;
    uv_run(&r->loop, UV_RUN_DEFAULT);
    return NULL;
}

static void run_calls(uv_async_t *h)
{
    struct part_repl *r = h->data;
    pthread_mutex_lock(&r->mu);
    struct repl_call *c = r->calls;
    r->calls = r->calls_tail = NULL;
    pthread_mutex_unlock(&r->mu);
    while (c != NULL) {
        struct repl_call *next = c->next;
        c->fn(c->arg);
        pthread_mutex_lock(&r->mu);
        c->done = true;
        pthread_cond_broadcast(&r->cv);
        pthread_mutex_unlock(&r->mu);
        c = next;
    }
}

/* Runs fn(arg) on the Raft thread and returns once it has run. */
static void run_on_raft_thread(struct part_repl *r, void (*fn)(void *), void *arg)
{
    struct repl_call c = {.fn = fn, .arg = arg};
    pthread_mutex_lock(&r->mu);
    if (r->calls_tail != NULL) {
        r->calls_tail->next = &c;
    } else {
        r->calls = &c;
    }
    r->calls_tail = &c;
    pthread_mutex_unlock(&r->mu);
    uv_async_send(&r->wake);
    pthread_mutex_lock(&r->mu);
    while (!c.done) {
        pthread_cond_wait(&r->cv, &r->mu);
    }
    pthread_mutex_unlock(&r->mu);
}

/* ---- entries ---------------------------------------------------------------- */

/* An entry as the FSM reads it; borrows from the log's buffer. */
struct repl_entry {
    uint64_t node_id, seq;
    struct sl_slice note;
    uint32_t count;
    const uint8_t *page_numbers; /* count little-endian u64 */
    const uint8_t *pages;        /* count * PART_REPL_PAGE_SIZE */
};

static int entry_decode(const struct raft_buffer *buf, struct repl_entry *e)
{
    const uint8_t *p = buf->base;
    if (buf->len < ENTRY_HEADER || (uint32_t)part__get_be(p, 4) != ENTRY_MAGIC) {
        return SL_EINVAL;
    }
    e->count = (uint32_t)part__get_be(p + 4, 4);
    e->node_id = part__get_be(p + 8, 8);
    e->seq = part__get_be(p + 16, 8);
    uint64_t note_len = part__get_be(p + 24, 8);
    if (note_len > buf->len) {
        return SL_EINVAL;
    }
    uint64_t need = (uint64_t)ENTRY_HEADER + PAD8((size_t)note_len) +
                    (uint64_t)e->count * (8u + (uint64_t)PART_REPL_PAGE_SIZE);
    if (need != buf->len) {
        return SL_EINVAL;
    }
    e->note = (struct sl_slice){(const char *)p + ENTRY_HEADER, (size_t)note_len};
    e->page_numbers = p + ENTRY_HEADER + PAD8((size_t)note_len);
    e->pages = e->page_numbers + (size_t)e->count * 8u;
    return SL_OK;
}

/* The entry of frames (freed here), allocated with raft_malloc as
 * raft_apply wants. */
static int entry_encode(uint64_t node_id, uint64_t seq, struct sl_slice note,
                        dqlite_vfs_frame *frames, unsigned n, struct raft_buffer *out)
{
    size_t len = ENTRY_HEADER + PAD8(note.n) + (size_t)n * (8u + PART_REPL_PAGE_SIZE);
    uint8_t *p = raft_calloc(1, len);
    if (p == NULL) {
        return SL_ENOMEM;
    }
    part__put_be(p, ENTRY_MAGIC, 4);
    part__put_be(p + 4, n, 4);
    part__put_be(p + 8, node_id, 8);
    part__put_be(p + 16, seq, 8);
    part__put_be(p + 24, note.n, 8);
    if (note.n > 0) {
        memcpy(p + ENTRY_HEADER, note.p, note.n);
    }
    uint8_t *numbers = p + ENTRY_HEADER + PAD8(note.n);
    uint8_t *pages = numbers + (size_t)n * 8u;
    for (unsigned i = 0; i < n; i++) {
        part__put_be(numbers + (size_t)i * 8u, frames[i].page_number, 8);
        memcpy(pages + (size_t)i * PART_REPL_PAGE_SIZE, frames[i].data, PART_REPL_PAGE_SIZE);
    }
    *out = (struct raft_buffer){.base = p, .len = len};
    return SL_OK;
}

static void frames_free(dqlite_vfs_frame *frames, unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        sqlite3_free(frames[i].data);
    }
    sqlite3_free(frames);
}

/* ---- the FSM (Raft thread) -------------------------------------------------- */

/* Nothing checkpoints an image behind the VFS's back (open_db_locked), so
 * its in-memory WAL would grow with every entry: every replica moves it
 * into the image at the same point of the log, as dqlite does, once it
 * holds this many frames. A connection inside a read (a writer between
 * statements) makes the checkpoint busy; the next apply tries again. */
#define CHECKPOINT_FRAMES 1000u

static void maybe_checkpoint(struct part_repl_group *g)
{
    if (g->wal_frames < CHECKPOINT_FRAMES) {
        return;
    }
    int log = 0, done = 0;
    if (sqlite3_wal_checkpoint_v2(g->reader, "main", SQLITE_CHECKPOINT_TRUNCATE, &log, &done) ==
        SQLITE_OK) {
        g->wal_frames = 0;
    }
}

static int64_t step_int(sqlite3_stmt *st)
{
    int64_t v = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
    sqlite3_reset(st);
    return v;
}

/* Under mu, after the image changed: the pages in use. Pages on SQLite's
 * freelist do not count: the VFS keeps them, but the next inserts reuse
 * them before the image grows, so a drained backlog frees its budget
 * without a VACUUM. Nor does the in-memory WAL, bounded by
 * CHECKPOINT_FRAMES pages a group: counting it would hold sends refused
 * until a checkpoint that only more writes bring. Two reads of the header
 * page, on the Raft thread that applies anyway. */
static void measure_image(struct part_repl_group *g)
{
    if (g->freelist_count == NULL) {
        sqlite3_finalize(g->page_count);
        g->page_count = NULL;
        if (sqlite3_prepare_v2(g->reader, "PRAGMA page_count", -1, &g->page_count, NULL) !=
                SQLITE_OK ||
            sqlite3_prepare_v2(g->reader, "PRAGMA freelist_count", -1, &g->freelist_count, NULL) !=
                SQLITE_OK) {
            return; /* the next apply tries again */
        }
    }
    int64_t live = step_int(g->page_count) - step_int(g->freelist_count);
    uint64_t pages = live > 0 ? (uint64_t)live : 0;
    uint64_t was = atomic_exchange(&g->image_bytes, pages * PART_REPL_PAGE_SIZE);
    /* Modulo 2^64, the node's sum moves by the difference either way. */
    atomic_fetch_add(&g->node->image_bytes, pages * PART_REPL_PAGE_SIZE - was);
}

static int fsm_apply(struct raft_fsm *fsm, const struct raft_buffer *buf, void **result)
{
    struct part_repl_group *g = fsm->data;
    *result = NULL;
    struct repl_entry e;
    if (entry_decode(buf, &e) != SL_OK) {
        sl_log_limited(&apply_log_limit, SL_LOG_ERROR, LOG_MOD, "%s: a malformed entry", g->name);
        return RAFT_MALFORMED;
    }
    pthread_mutex_lock(&g->mu);
    struct repl_proposal *mine = g->pending;
    bool own = mine != NULL && e.node_id == g->node->opt.node_id && e.seq == mine->seq;
    if (mine != NULL && !own && !mine->applied) {
        /* Another leader's entry while ours waits: ours lost its term.
         * The VFS holds our frames under its write lock; drop them first,
         * as dqlite does when a leader steps down. */
        dqlite_vfs_abort(&g->vfs, DB_FILE);
        mine->applied = true;
    }
    /* dqlite_vfs_apply takes the page numbers as unsigned long. */
    unsigned long *numbers = NULL;
    if (e.count > 0) {
        numbers = sl_xcalloc(e.count, sizeof(*numbers));
        for (uint32_t i = 0; i < e.count; i++) {
            numbers[i] = (unsigned long)part__get_be(e.page_numbers + (size_t)i * 8u, 8);
        }
    }
    int rv = dqlite_vfs_apply(&g->vfs, DB_FILE, e.count, numbers, (void *)e.pages);
    free(numbers);
    if (own) {
        mine->applied = true;
    }
    if (rv == 0) {
        g->wal_frames += e.count;
        maybe_checkpoint(g);
        measure_image(g);
        if (!own && g->hooks.applied != NULL && !g->node->muted) {
            g->hooks.applied(g->hooks.arg, e.note, g->reader);
        }
    }
    pthread_mutex_unlock(&g->mu);
    if (rv != 0) {
        sl_log_limited(&apply_log_limit, SL_LOG_ERROR, LOG_MOD,
                       "%s: applying %u frames failed (%d)", g->name, e.count, rv);
        return RAFT_IOERR;
    }
    atomic_fetch_add(&g->applied, 1);
    return 0;
}

static int fsm_snapshot(struct raft_fsm *fsm, struct raft_buffer *bufs[], unsigned *n)
{
    struct part_repl_group *g = fsm->data;
    void *data = NULL;
    size_t len = 0;
    pthread_mutex_lock(&g->mu);
    int rv = dqlite_vfs_snapshot(&g->vfs, DB_FILE, &data, &len);
    pthread_mutex_unlock(&g->mu);
    if (rv != 0) {
        return RAFT_IOERR;
    }
    atomic_store(&g->snapshot_bytes, (uint64_t)len);
    struct raft_buffer *b = raft_malloc(sizeof(*b));
    if (b == NULL) {
        raft_free(data);
        return RAFT_NOMEM;
    }
    *b = (struct raft_buffer){.base = data, .len = len};
    *bufs = b;
    *n = 1;
    return 0;
}

/* Version 2 of the FSM: the snapshot's memory is ours to free
 * (dqlite_vfs_snapshot allocates it with raft_malloc). */
static int fsm_snapshot_finalize(struct raft_fsm *fsm, struct raft_buffer *bufs[], unsigned *n)
{
    (void)fsm;
    for (unsigned i = 0; i < *n; i++) {
        raft_free((*bufs)[i].base);
    }
    raft_free(*bufs);
    *bufs = NULL;
    *n = 0;
    return 0;
}

static int fsm_restore(struct raft_fsm *fsm, struct raft_buffer *buf)
{
    struct part_repl_group *g = fsm->data;
    pthread_mutex_lock(&g->mu);
    int rv = dqlite_vfs_restore(&g->vfs, DB_FILE, buf->base, buf->len);
    if (rv == 0) {
        g->wal_frames = 0;
        measure_image(g);
        atomic_store(&g->snapshot_bytes, (uint64_t)buf->len);
        if (g->hooks.applied != NULL && !g->node->muted) {
            g->hooks.applied(g->hooks.arg, (struct sl_slice){0}, g->reader); /* a new image */
        }
    }
    pthread_mutex_unlock(&g->mu);
    if (rv != 0) {
        sl_log(SL_LOG_ERROR, LOG_MOD, "%s: restoring a snapshot of %zu bytes failed (%d)", g->name,
               buf->len, rv);
        return RAFT_IOERR;
    }
    /* On success the buffer is the FSM's (libraft's contract). */
    raft_free(buf->base);
    return 0;
}

/* ---- leadership (Raft thread) ---------------------------------------------- */

static void tell_changes(struct part_repl_group *g)
{
    bool leading = atomic_load(&g->leading);
    uint64_t leader = atomic_load(&g->leader_id);
    if (leading != g->was_leading || leader != g->was_leader) {
        g->was_leading = leading;
        g->was_leader = leader;
        if (g->hooks.changed != NULL && !g->node->muted) {
            g->hooks.changed(g->hooks.arg);
        }
    }
}

static void barrier_done(struct raft_barrier *req, int status)
{
    struct part_repl_group *g = req->data;
    g->barrier_pending = false;
    /* Every entry of earlier terms is applied once our barrier is: only
     * then is the image whole enough to write on. */
    if (status == 0 && raft_state(&g->raft) == RAFT_LEADER) {
        g->lead_since_ms = uv_now(&g->node->loop);
        atomic_store(&g->leading, true);
        tell_changes(g);
    }
}

#define HANDOVER_RETRY_MS 30000u

static void transfer_done(struct raft_transfer *req)
{
    struct part_repl_group *g = req->data;
    g->transfer_busy = false;
}

/* Hands the lead to the group's preferred node once this node has held
 * it long enough and that node is steady (part__repl_group_prefer). */
static void maybe_hand_over(struct part_repl_group *g)
{
    struct part_repl *r = g->node;
    uint64_t want = atomic_load(&g->preferred);
    uint64_t now = uv_now(&r->loop);
    if (want == 0 || want == r->opt.node_id || g->transfer_busy || r->closing || r->muted ||
        !atomic_load(&g->leading) || r->opt.steady == NULL ||
        now - g->lead_since_ms < r->opt.handover_settle_ms ||
        (g->handover_tried_ms != 0 && now - g->handover_tried_ms < HANDOVER_RETRY_MS) ||
        !r->opt.steady(r->opt.steady_arg, want)) {
        return;
    }
    g->handover_tried_ms = now;
    g->transfer.data = g;
    if (raft_transfer(&g->raft, &g->transfer, (raft_id)want, transfer_done) == 0) {
        g->transfer_busy = true;
        sl_log(SL_LOG_INFO, LOG_MOD, "%s: handing the lead to node %llu, its preferred leader",
               g->name, (unsigned long long)want);
    }
}

/* Copies what the operators see of the group (part__repl_group_stats). */
static void publish_stats(struct part_repl_group *g, raft_id leader)
{
    atomic_store(&g->term, (uint64_t)g->raft.current_term);
    atomic_store(&g->commit_index, (uint64_t)g->raft.commit_index);
    atomic_store(&g->last_applied, (uint64_t)raft_last_applied(&g->raft));
    uint32_t voters = 0;
    for (unsigned i = 0; i < g->raft.configuration.n; i++) {
        voters += g->raft.configuration.servers[i].role == RAFT_VOTER;
    }
    atomic_store(&g->voters, voters);
    uint64_t now = uv_now(&g->node->loop);
    if (leader != 0) {
        g->leaderless_since = 0;
    } else if (g->leaderless_since == 0) {
        g->leaderless_since = now != 0 ? now : 1;
    }
    atomic_store(&g->leaderless_ms, leader != 0 ? 0 : now - g->leaderless_since);
}

static void watch_group(struct part_repl_group *g)
{
    raft_id id = 0;
    const char *address = NULL;
    raft_leader(&g->raft, &id, &address);
    atomic_store(&g->leader_id, (uint64_t)id);
    publish_stats(g, id);
    /* A follower knows the commit index from its leader's appends. */
    atomic_store(&g->caught_up, id != 0 && g->raft.commit_index > 0 &&
                                    raft_last_applied(&g->raft) >= g->raft.commit_index);
    if (raft_state(&g->raft) != RAFT_LEADER) {
        atomic_store(&g->leading, false);
    } else if (!atomic_load(&g->leading) && !g->barrier_pending) {
        g->barrier.data = g;
        if (raft_barrier(&g->raft, &g->barrier, barrier_done) == 0) {
            g->barrier_pending = true;
        }
    } else {
        maybe_hand_over(g);
    }
    tell_changes(g);
}

/* libraft 0.15 has no state callback: the Raft thread looks at every
 * group's state often enough that a new leader starts serving within a
 * few heartbeats. */
static void watch_states(uv_timer_t *t)
{
    struct part_repl *r = t->data;
    for (size_t i = 0; i < r->group_count; i++) {
        if (r->groups[i]->raft_open) {
            watch_group(r->groups[i]);
        }
    }
}

/* ---- writes ------------------------------------------------------------------ */

int part__repl_write_begin(struct part_repl_group *g)
{
    pthread_mutex_lock(&g->mu);
    if (!atomic_load(&g->leading) || g->pending != NULL) {
        pthread_mutex_unlock(&g->mu);
        return SL_EUNAVAIL;
    }
    return SL_OK;
}

static void proposal_finish(struct repl_proposal *p, int status)
{
    struct part_repl_group *g = p->g;
    pthread_mutex_lock(&g->mu);
    if (!p->applied) {
        /* Neither applied nor overtaken: the frames are still held. */
        dqlite_vfs_abort(&g->vfs, DB_FILE);
        p->applied = true;
    }
    p->status = status;
    p->done = true;
    g->pending = NULL;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

static void apply_done(struct raft_apply *req, int status, void *result)
{
    (void)result;
    struct repl_proposal *p = req->data;
    proposal_finish(p, status == 0 ? SL_OK : status == RAFT_SHUTDOWN ? SL_ECLOSED : SL_EUNAVAIL);
}

struct propose_call {
    struct repl_proposal *p;
    struct raft_buffer buf;
};

static void propose_on_raft_thread(void *arg)
{
    struct propose_call *c = arg;
    struct part_repl_group *g = c->p->g;
    c->p->req.data = c->p;
    int rv =
        g->node->closing ? RAFT_SHUTDOWN : raft_apply(&g->raft, &c->p->req, &c->buf, 1, apply_done);
    if (rv != 0) {
        raft_free(c->buf.base);
        proposal_finish(c->p, rv == RAFT_SHUTDOWN ? SL_ECLOSED : SL_EUNAVAIL);
    }
}

int part__repl_write_end(struct part_repl_group *g, struct sl_slice note, bool confirm)
{
    /* Held since part__repl_write_begin. */
    dqlite_vfs_frame *frames = NULL;
    unsigned n = 0;
    if (dqlite_vfs_poll(&g->vfs, DB_FILE, &frames, &n) != 0) {
        pthread_mutex_unlock(&g->mu);
        return SL_EIO;
    }
    if (n == 0) {
        /* A read, or a transaction that rolled back: nothing to hold. */
        pthread_mutex_unlock(&g->mu);
        return confirm ? part__repl_sync(g) : SL_OK;
    }
    struct repl_proposal p = {.g = g, .seq = ++g->next_seq};
    struct propose_call c = {.p = &p};
    int rv = entry_encode(g->node->opt.node_id, p.seq, note, frames, n, &c.buf);
    frames_free(frames, n);
    if (rv != SL_OK) {
        dqlite_vfs_abort(&g->vfs, DB_FILE);
        pthread_mutex_unlock(&g->mu);
        return rv;
    }
    g->pending = &p;
    pthread_mutex_unlock(&g->mu);

    run_on_raft_thread(g->node, propose_on_raft_thread, &c);
    pthread_mutex_lock(&g->mu);
    while (!p.done) {
        pthread_cond_wait(&g->cv, &g->mu);
    }
    pthread_mutex_unlock(&g->mu);
    return p.status;
}

/* A barrier this node proposes, and its waiter. */
struct sync_call {
    struct raft_barrier req;
    struct part_repl_group *g;
    int status;
    bool done;
};

static void sync_done(struct raft_barrier *req, int status)
{
    struct sync_call *c = req->data;
    pthread_mutex_lock(&c->g->mu);
    c->status = status == 0 ? SL_OK : status == RAFT_SHUTDOWN ? SL_ECLOSED : SL_EUNAVAIL;
    c->done = true;
    pthread_cond_broadcast(&c->g->cv);
    pthread_mutex_unlock(&c->g->mu);
}

static void sync_on_raft_thread(void *arg)
{
    struct sync_call *c = arg;
    c->req.data = c;
    int rv = c->g->node->closing ? RAFT_SHUTDOWN : raft_barrier(&c->g->raft, &c->req, sync_done);
    if (rv != 0) {
        sync_done(&c->req, rv);
    }
}

int part__repl_sync(struct part_repl_group *g)
{
    struct sync_call c = {.g = g};
    run_on_raft_thread(g->node, sync_on_raft_thread, &c);
    pthread_mutex_lock(&g->mu);
    while (!c.done) {
        pthread_cond_wait(&g->cv, &g->mu);
    }
    pthread_mutex_unlock(&g->mu);
    return c.status;
}

/* ---- reads --------------------------------------------------------------------- */

static int open_db_locked(struct part_repl_group *g, sqlite3 **out);

int part__repl_read(struct part_repl_group *g, int (*fn)(sqlite3 *db, void *arg), void *arg)
{
    /* Opening reads the image too (the pragmas): all of it under the lock. */
    pthread_mutex_lock(&g->mu);
    sqlite3 *db = NULL;
    int rv = open_db_locked(g, &db);
    if (rv == SL_OK) {
        rv = fn(db, arg);
        sqlite3_close(db);
    }
    pthread_mutex_unlock(&g->mu);
    return rv;
}

int part__repl_read_on(struct part_repl_group *g, sqlite3 *db, int (*fn)(sqlite3 *db, void *arg),
                       void *arg)
{
    pthread_mutex_lock(&g->mu);
    int rv = fn(db, arg);
    pthread_mutex_unlock(&g->mu);
    return rv;
}

void part__repl_group_prefer(struct part_repl_group *g, uint64_t node_id)
{
    atomic_store(&g->preferred, node_id);
}

const char *part__repl_group_name(const struct part_repl_group *g)
{
    return g->name;
}

bool part__repl_leading(const struct part_repl_group *g)
{
    return atomic_load(&g->leading);
}

bool part__repl_caught_up(const struct part_repl_group *g)
{
    return atomic_load(&g->caught_up);
}

uint64_t part__repl_leader(struct part_repl_group *g)
{
    return atomic_load(&g->leader_id);
}

void part__repl_port_rejected(const struct part_repl *r, uint64_t out[PART__HS_REJECT_COUNT])
{
    struct part__raft_stats st;
    part__raft_node_stats(r->port, &st);
    memcpy(out, st.rejected, sizeof st.rejected);
}

uint64_t part__repl_image_bytes(const struct part_repl_group *g)
{
    return atomic_load(&g->image_bytes);
}

uint64_t part__repl_node_image_bytes(const struct part_repl *r)
{
    return atomic_load(&r->image_bytes);
}

void part__repl_group_stats(const struct part_repl_group *g, struct part_group_stats *out)
{
    uint64_t leaderless = atomic_load(&g->leaderless_ms);
    *out = (struct part_group_stats){
        .leader = atomic_load(&g->leader_id),
        .term = atomic_load(&g->term),
        .commit_index = atomic_load(&g->commit_index),
        .applied_index = atomic_load(&g->last_applied),
        .snapshot_bytes = atomic_load(&g->snapshot_bytes),
        .leaderless_ms = leaderless,
        .voters = atomic_load(&g->voters),
        .no_quorum = leaderless > 2u * (uint64_t)g->node->opt.election_timeout_ms,
    };
}

size_t part__repl_node_count(const struct part_repl *r)
{
    return r->node_count;
}

uint64_t part__repl_applied(struct part_repl_group *g)
{
    return atomic_load(&g->applied);
}

int part__repl_group_open_db(struct part_repl_group *g, sqlite3 **out)
{
    pthread_mutex_lock(&g->mu);
    int rv = open_db_locked(g, out);
    pthread_mutex_unlock(&g->mu);
    return rv;
}

static int open_db_locked(struct part_repl_group *g, sqlite3 **out)
{
    sqlite3 *db = NULL;
    int rc = sqlite3_open_v2(DB_FILE, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, g->vfs_name);
    /* The replication VFS wants its pragmas in this order, durability
     * being the log's, and no checkpoint behind its back. */
    static const char *const setup[] = {"PRAGMA page_size=4096", "PRAGMA synchronous=OFF",
                                        "PRAGMA journal_mode=WAL"};
    for (size_t i = 0; rc == SQLITE_OK && i < sizeof(setup) / sizeof(setup[0]); i++) {
        rc = sqlite3_exec(db, setup[i], NULL, NULL, NULL);
    }
    if (rc == SQLITE_OK) {
        rc = sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, NULL);
    }
    if (rc == SQLITE_OK) {
        rc = sqlite3_wal_autocheckpoint(db, 0);
    }
    if (rc != SQLITE_OK) {
        sl_log(SL_LOG_ERROR, LOG_MOD, "%s: opening the image: %s", g->name,
               db != NULL ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
        sqlite3_close(db);
        return SL_EIO;
    }
    *out = db;
    return SL_OK;
}

/* ---- groups ---------------------------------------------------------------------- */

static bool group_name_valid(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n > GROUP_NAME_MAX) {
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) {
            return false;
        }
    }
    return true;
}

struct open_call {
    struct part_repl_group *g;
    const struct part_repl_member *members;
    size_t member_count;
    const char *address;
    const char *dir;
    bool bootstrap;
    char *err;
    size_t errlen;
    int status;
};

static void open_on_raft_thread(void *arg)
{
    struct open_call *c = arg;
    struct part_repl_group *g = c->g;
    struct part_repl *r = g->node;
    /* The group list is the Raft thread's (its timer walks it), and a
     * group that fails to start is still closed and freed with the node. */
    r->groups = sl_xrealloc(r->groups, (r->group_count + 1) * sizeof(*r->groups));
    r->groups[r->group_count++] = g;
    int rv = part__raft_transport_init(r->port, g->name, &g->transport);
    if (rv != SL_OK) {
        snprintf(c->err, c->errlen, "%s: the Raft port: %s", g->name, sl_strerror(rv));
        c->status = rv;
        return;
    }
    rv = raft_uv_init(&g->io, &r->loop, c->dir, &g->transport);
    if (rv == 0) {
        rv = raft_init(&g->raft, &g->io, &g->fsm, (raft_id)r->opt.node_id, c->address);
        if (rv != 0) {
            raft_uv_close(&g->io);
        }
    }
    if (rv != 0) {
        snprintf(c->err, c->errlen, "%s: starting Raft: %s", g->name, raft_strerror(rv));
        part__raft_transport_fini(&g->transport);
        c->status = SL_EIO;
        return;
    }
    g->raft_open = true;
    raft_set_election_timeout(&g->raft, r->opt.election_timeout_ms);
    raft_set_heartbeat_timeout(&g->raft, r->opt.heartbeat_timeout_ms);
    raft_set_snapshot_threshold(&g->raft, r->opt.snapshot_entries);
    raft_set_snapshot_trailing(&g->raft, r->opt.snapshot_trailing);
    raft_set_pre_vote(&g->raft, true);
    if (c->bootstrap) {
        struct raft_configuration conf;
        raft_configuration_init(&conf);
        rv = 0;
        for (size_t i = 0; rv == 0 && i < c->member_count; i++) {
            rv = raft_configuration_add(&conf, (raft_id)c->members[i].id, c->members[i].address,
                                        RAFT_VOTER);
        }
        if (rv == 0) {
            rv = raft_bootstrap(&g->raft, &conf);
            if (rv == RAFT_CANTBOOTSTRAP) {
                rv = 0; /* the group has a log already: it knows its members */
            }
        }
        raft_configuration_close(&conf);
        if (rv != 0) {
            snprintf(c->err, c->errlen, "%s: bootstrapping: %s", g->name, raft_strerror(rv));
            c->status = SL_EIO;
            return;
        }
    }
    rv = raft_start(&g->raft);
    if (rv != 0) {
        snprintf(c->err, c->errlen, "%s: %s", g->name, raft_errmsg(&g->raft));
        c->status = SL_EIO;
        return;
    }
    c->status = SL_OK;
}

int part__repl_group_open(struct part_repl *r, const char *name,
                          const struct part_repl_member *members, size_t member_count,
                          bool bootstrap, const struct part_repl_hooks *hooks,
                          struct part_repl_group **out, char *err, size_t errlen)
{
    const char *address = NULL;
    for (size_t i = 0; i < member_count; i++) {
        if (members[i].id == r->opt.node_id) {
            address = members[i].address;
        }
    }
    if (!group_name_valid(name) || address == NULL) {
        snprintf(err, errlen, "group \"%s\": a bad name, or node %llu is not a member", name,
                 (unsigned long long)r->opt.node_id);
        return SL_EINVAL;
    }
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s/%s", r->dir, name);
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        snprintf(err, errlen, "%s: %s", dir, strerror(errno));
        return SL_EIO;
    }

    struct part_repl_group *g = sl_xcalloc(1, sizeof(*g));
    g->node = r;
    if (hooks != NULL) {
        g->hooks = *hooks;
    }
    snprintf(g->name, sizeof(g->name), "%s", name);
    /* A VFS per group: dqlite's VFS is not meant to be shared between
     * threads, and each group has its own writer. */
    snprintf(g->vfs_name, sizeof(g->vfs_name), "sluice-%llu-%s", (unsigned long long)r->opt.node_id,
             name);
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->cv, NULL);
    g->fsm = (struct raft_fsm){.version = 2,
                               .data = g,
                               .apply = fsm_apply,
                               .snapshot = fsm_snapshot,
                               .restore = fsm_restore,
                               .snapshot_finalize = fsm_snapshot_finalize};
    int rv = SL_EIO;
    if (dqlite_vfs_init(&g->vfs, g->vfs_name) != 0) {
        snprintf(err, errlen, "%s: dqlite_vfs_init failed", name);
        goto fail;
    }
    sqlite3_vfs_register(&g->vfs, 0);
    g->vfs_registered = true;
    /* The image must exist before the FSM restores or applies into it. */
    rv = part__repl_group_open_db(g, &g->reader);
    if (rv != SL_OK) {
        snprintf(err, errlen, "%s: cannot open its image", name);
        goto fail;
    }
    struct open_call c = {.g = g,
                          .members = members,
                          .member_count = member_count,
                          .address = address,
                          .dir = dir,
                          .bootstrap = bootstrap,
                          .err = err,
                          .errlen = errlen};
    run_on_raft_thread(r, open_on_raft_thread, &c);
    if (c.status != SL_OK) {
        /* Left in r->groups, closed with the node: raft_close is async. */
        return c.status;
    }
    *out = g;
    return SL_OK;

fail:
    if (g->vfs_registered) {
        sqlite3_vfs_unregister(&g->vfs);
        dqlite_vfs_close(&g->vfs);
    }
    pthread_cond_destroy(&g->cv);
    pthread_mutex_destroy(&g->mu);
    free(g);
    return rv;
}

/* ---- the node --------------------------------------------------------------------- */

static void close_port(struct part_repl *r);

int part__repl_new(const struct part_repl_options *opt, struct part_repl **out, char *err,
                   size_t errlen)
{
    if (opt->node_id == 0 || opt->node_id > UINT16_MAX || opt->raft_port == NULL) {
        snprintf(err, errlen, "node id %llu: not 1..65535, or no Raft port",
                 (unsigned long long)opt->node_id);
        return SL_EINVAL;
    }
    int rv = SL_EIO;
    struct part_repl *r = sl_xcalloc(1, sizeof(*r));
    r->opt = *opt;
    r->opt.raft_port = NULL; /* the caller's; the port keeps its own copy */
    r->opt.election_timeout_ms = opt->election_timeout_ms ? opt->election_timeout_ms : 1000;
    r->opt.handover_settle_ms = opt->handover_settle_ms ? opt->handover_settle_ms : 10000;
    r->opt.heartbeat_timeout_ms = opt->heartbeat_timeout_ms ? opt->heartbeat_timeout_ms : 100;
    r->opt.snapshot_entries = opt->snapshot_entries ? opt->snapshot_entries : 4096;
    r->opt.snapshot_trailing = opt->snapshot_trailing ? opt->snapshot_trailing : 1024;
    r->dir = sl_xstrdup(opt->dir);
    r->opt.dir = r->dir;
    r->node_count = opt->raft_port->peer_count;
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, NULL);
    if (uv_loop_init(&r->loop) != 0) {
        snprintf(err, errlen, "cannot make the Raft thread's loop");
        goto fail_loop;
    }
    uv_async_init(&r->loop, &r->wake, run_calls);
    r->wake.data = r;
    uv_timer_init(&r->loop, &r->state_timer);
    r->state_timer.data = r;
    /* Made before the thread runs the loop: nothing else touches it yet. */
    struct part__raft_node_options port = *opt->raft_port;
    port.loop = &r->loop;
    port.id = (uint16_t)opt->node_id;
    rv = part__raft_node_new(&port, &r->port);
    if (rv != SL_OK) {
        snprintf(err, errlen, "the Raft port %s:%u: %s", port.host, port.port, sl_strerror(rv));
        uv_close((uv_handle_t *)&r->wake, NULL);
        uv_close((uv_handle_t *)&r->state_timer, NULL);
        uv_run(&r->loop, UV_RUN_DEFAULT);
        uv_loop_close(&r->loop);
        goto fail_loop;
    }
    uv_timer_start(&r->state_timer, watch_states, STATE_POLL_MS, STATE_POLL_MS);
    if (pthread_create(&r->thread, NULL, repl_thread_main, r) != 0) {
        snprintf(err, errlen, "cannot start the Raft thread");
        close_port(r);
        uv_run(&r->loop, UV_RUN_DEFAULT);
        uv_loop_close(&r->loop);
        rv = SL_EIO;
        goto fail_loop;
    }
    *out = r;
    return SL_OK;

fail_loop:
    pthread_cond_destroy(&r->cv);
    pthread_mutex_destroy(&r->mu);
    free(r->dir);
    free(r);
    return rv;
}

/* The last step of closing, once no group uses the port any more. */
static void close_port(struct part_repl *r)
{
    part__raft_node_close(r->port, NULL, NULL);
    uv_close((uv_handle_t *)&r->state_timer, NULL);
    uv_close((uv_handle_t *)&r->wake, NULL);
}

static void group_closed(struct raft *raft)
{
    struct part_repl_group *g = raft->data;
    struct part_repl *r = g->node;
    raft_uv_close(&g->io);
    part__raft_transport_fini(&g->transport);
    if (--r->groups_closing == 0) {
        close_port(r);
    }
}

static void close_on_raft_thread(void *arg)
{
    struct part_repl *r = arg;
    r->closing = true;
    uv_timer_stop(&r->state_timer);
    for (size_t i = 0; i < r->group_count; i++) {
        struct part_repl_group *g = r->groups[i];
        atomic_store(&g->leading, false);
        if (g->raft_open) {
            r->groups_closing++;
        }
    }
    if (r->groups_closing == 0) {
        close_port(r);
        return;
    }
    for (size_t i = 0; i < r->group_count; i++) {
        struct part_repl_group *g = r->groups[i];
        if (g->raft_open) {
            g->raft.data = g;
            raft_close(&g->raft, group_closed);
        }
    }
}

static void mute_on_raft_thread(void *arg)
{
    struct part_repl *r = arg;
    r->muted = true;
}

void part__repl_mute(struct part_repl *r)
{
    if (r != NULL) {
        run_on_raft_thread(r, mute_on_raft_thread, r);
    }
}

void part__repl_free(struct part_repl *r)
{
    if (r == NULL) {
        return;
    }
    /* The wake handle closes inside the call, which still completes: the
     * waiter is signalled before the loop runs out. */
    run_on_raft_thread(r, close_on_raft_thread, r);
    pthread_join(r->thread, NULL);
    uv_loop_close(&r->loop);
    for (size_t i = 0; i < r->group_count; i++) {
        struct part_repl_group *g = r->groups[i];
        sqlite3_finalize(g->page_count);
        sqlite3_finalize(g->freelist_count);
        sqlite3_close(g->reader);
        sqlite3_vfs_unregister(&g->vfs);
        dqlite_vfs_close(&g->vfs);
        pthread_cond_destroy(&g->cv);
        pthread_mutex_destroy(&g->mu);
        free(g);
    }
    free(r->groups);
    pthread_cond_destroy(&r->cv);
    pthread_mutex_destroy(&r->mu);
    free(r->dir);
    free(r);
}
