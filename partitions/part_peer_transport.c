/*
 * part_peer_transport.c -- the peer port (part_peer_transport.h): links
 * between the nodes, opened by the shared handshake (part_handshake.c),
 * carrying length-prefixed frames both ways, with sends and replies from
 * any thread.
 *
 * Threading: the loop's thread owns the sockets, the timers and every
 * link's read and write state. Other threads reach a node through its
 * lock (mu), which guards only what a send or reply touches: the queues
 * of frames not yet taken by the loop, each member's down flag, the list
 * of live links (so that a reply finds its link or learns it is gone) and
 * the closing flag; then they wake the loop with uv_async_send, called
 * under the lock so that it never races the handle's close. No callback
 * of the caller's runs under the lock.
 *
 * A member's frames wait in its queue until the link this node dialed to
 * it is up, then go out on it; a reply waits in its link's queue. The
 * loop takes a queue whole and writes it with one uv_write, one write in
 * flight per link, so a burst of small frames costs one system call.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include "part_peer_transport.h"

#include "part_bytes.h"
#include "part_handshake.h"

#define LOG_MOD "partitions"
#define HEADER_LEN ((size_t)4)
/* A link's read buffer, grown for a larger frame while it arrives and
 * shrunk back after it: a burst of small frames is read in one call. */
#define RBUF_LEN ((size_t)64 << 10)

static const struct part__hs_proto peer_proto = {
    .what = "peer",
    .name_what = "name",
    .magic = PART__PEER_MAGIC,
    .version = PART__PEER_VERSION,
    .label_listener = "sluice peer listener v1",
    .label_dialer = "sluice peer dialer v1",
};

static const uint8_t keepalive_frame[HEADER_LEN] = {0, 0, 0, 0};

struct frame {
    struct frame *next;
    size_t len;      /* payload bytes */
    uint8_t bytes[]; /* the length, big-endian, then the payload */
};

struct fqueue {
    struct frame *head, *tail;
};

struct member;

struct link {
    struct part__peer_node *node;
    struct member *m;         /* the other end */
    struct link *prev, *next; /* node->links, under mu */
    uint64_t id;
    bool outgoing;      /* this node dialed it */
    struct fqueue pend; /* under mu: replies not yet taken by the loop */
    /* Loop only below. */
    bool dying;
    int handles; /* tcp and timer, open */
    uv_tcp_t *tcp;
    uv_timer_t tick; /* keepalive and idle check */
    uint64_t last_read_ms, last_tick_ms;
    bool wrote_since_tick;
    bool write_busy, ka_busy;
    struct fqueue writing; /* the frames of the write in flight */
    uv_write_t wr, ka_wr;
    uint8_t *rbuf;
    size_t rcap, rlen;
};

struct member {
    struct part__peer_node *node;
    uint16_t id;
    bool self;
    _Atomic size_t queued; /* bytes queued to or for it, not yet written or dropped */
    /* when the link this node dialed came up (sl_mono_ns() / 1e6); 0 while
     * it is down. Any thread reads it (part__peer_node_up_since). */
    _Atomic uint64_t up_since_ms;
    /* Under mu. */
    bool down;          /* its link died or its dial failed: sends refused */
    struct fqueue pend; /* sends not yet taken by the loop */
    /* Loop only below. */
    struct link *out;  /* the link this node dialed, while up */
    struct link *in;   /* the last link it dialed to this node */
    bool dialing;      /* a handshake under way */
    bool redial_armed; /* the redial timer runs */
    uint32_t backoff_ms;
    uv_timer_t redial;
};

struct part__peer_node {
    uv_loop_t *loop;
    uv_loop_t own_loop; /* when the node runs its own thread */
    bool own_thread;
    pthread_t thread;
    struct part__hs_port *port;
    uint16_t id;
    size_t max_frame, max_queued;
    uint32_t keepalive_ms, idle_ms;
    void (*on_frame)(void *arg, uint16_t from, uint64_t link, const uint8_t *bytes, size_t len);
    void (*on_link_down)(void *arg, uint16_t node_id, uint64_t link, bool outgoing);
    void *arg;
    struct member *members;
    size_t member_count;
    uv_async_t wake;
    uint64_t next_link_id;

    pthread_mutex_t mu;
    bool closing;       /* under mu: sends and replies refused */
    bool close_loop;    /* the loop's part of close has begun (loop only) */
    struct link *links; /* under mu: every live link */
    uint64_t rejected_final[PART__HS_REJECT_COUNT]; /* under mu, once port is NULL */

    /* Closing (loop only). */
    int handles; /* wake, the members' timers and the links, open */
    bool port_closed;
    void (*close_cb)(void *arg);
    void *close_arg;

    _Atomic uint64_t frames_in, bytes_in, frames_out, bytes_out, frames_dropped;
    _Atomic uint64_t links_up, links_down, dial_failures, oversize, idle;
};

static void count(_Atomic uint64_t *c, uint64_t v)
{
    atomic_fetch_add_explicit(c, v, memory_order_relaxed);
}

static void fq_push(struct fqueue *q, struct frame *f)
{
    f->next = NULL;
    if (q->tail != NULL) {
        q->tail->next = f;
    } else {
        q->head = f;
    }
    q->tail = f;
}

/* Appends src to dst and empties src. */
static void fq_move(struct fqueue *dst, struct fqueue *src)
{
    if (src->head == NULL) {
        return;
    }
    if (dst->tail != NULL) {
        dst->tail->next = src->head;
    } else {
        dst->head = src->head;
    }
    dst->tail = src->tail;
    src->head = src->tail = NULL;
}

/* Frees the frames of q, lost, and returns how many there were. */
static size_t fq_drop(struct part__peer_node *n, struct member *m, struct fqueue *q)
{
    size_t k = 0;
    struct frame *f = q->head;
    while (f != NULL) {
        struct frame *next = f->next;
        atomic_fetch_sub_explicit(&m->queued, f->len, memory_order_relaxed);
        free(f);
        k++;
        f = next;
    }
    q->head = q->tail = NULL;
    count(&n->frames_dropped, k);
    return k;
}

static struct member *member_find(struct part__peer_node *n, uint16_t id)
{
    for (size_t i = 0; i < n->member_count; i++) {
        if (n->members[i].id == id) {
            return &n->members[i];
        }
    }
    return NULL;
}

static void node_maybe_finished(struct part__peer_node *n);
static void link_flush(struct link *l);
static void member_dial(struct part__peer_node *n, struct member *m);

/* ---- redialing ------------------------------------------------------------ */

static void on_redial(uv_timer_t *t)
{
    struct member *m = t->data;
    struct part__peer_node *n = m->node;
    m->redial_armed = false;
    member_dial(n, m);
}

/* Redials m after delay_ms, randomised by a quarter either way so that
 * nodes that lost each other at once do not redial in step. */
static void member_redial(struct part__peer_node *n, struct member *m, uint32_t delay_ms)
{
    if (n->close_loop || m->dialing || m->out != NULL) {
        return;
    }
    if (delay_ms > 0) {
        uint32_t r;
        sl_random_bytes(&r, sizeof r);
        delay_ms = delay_ms * 3 / 4 + r % (delay_ms / 2 + 1);
    }
    m->redial_armed = true;
    SL_ASSERT(uv_timer_start(&m->redial, on_redial, delay_ms, 0) == 0);
}

/* A dial made no link: m is down, what waited for it is lost, and it is
 * redialed later, each failure doubling the pause. */
static void member_dial_failed(struct part__peer_node *n, struct member *m)
{
    struct fqueue lost = {0};
    count(&n->dial_failures, 1);
    pthread_mutex_lock(&n->mu);
    m->down = true;
    fq_move(&lost, &m->pend);
    pthread_mutex_unlock(&n->mu);
    if (fq_drop(n, m, &lost) > 0) {
        n->on_link_down(n->arg, m->id, 0, true);
    }
    uint32_t delay = m->backoff_ms != 0 ? m->backoff_ms : PART__PEER_BACKOFF_MIN_MS;
    m->backoff_ms = SL_MIN(2 * delay, PART__PEER_BACKOFF_MAX_MS);
    member_redial(n, m, delay);
}

static void member_dial(struct part__peer_node *n, struct member *m)
{
    if (n->close_loop || m->dialing || m->out != NULL) {
        return;
    }
    if (m->redial_armed) {
        SL_ASSERT(uv_timer_stop(&m->redial) == 0);
        m->redial_armed = false;
    }
    const char *why = NULL;
    int rc = part__hs_dial(n->port, m->id, PART__PEER_NAME, n, m, NULL, &why);
    if (rc != SL_OK) {
        static struct sl_log_limit lim = SL_LOG_LIMIT(5, 10000);
        sl_log_limited(&lim, SL_LOG_WARN, LOG_MOD, "peer port: cannot dial node %u: %s",
                       (unsigned)m->id, why != NULL ? why : sl_strerror(rc));
        member_dial_failed(n, m);
        return;
    }
    m->dialing = true;
}

/* ---- links: life and death ---------------------------------------------- */

static void on_link_handle_closed(uv_handle_t *h)
{
    struct link *l = h->data;
    if (--l->handles > 0) {
        return;
    }
    struct part__peer_node *n = l->node;
    free(l->rbuf);
    free(l->tcp);
    free(l);
    n->handles--;
    node_maybe_finished(n);
}

/* Closes l (once): its queued frames are lost, the caller learns it from
 * on_link_down, and a link this node dialed is redialed at once -- a peer
 * that restarted is usually back -- then with back-off. */
static void link_kill(struct link *l)
{
    if (l->dying) {
        return;
    }
    struct part__peer_node *n = l->node;
    struct member *m = l->m;
    struct fqueue lost = {0};
    l->dying = true;
    pthread_mutex_lock(&n->mu);
    if (l->prev != NULL) {
        l->prev->next = l->next;
    } else {
        n->links = l->next;
    }
    if (l->next != NULL) {
        l->next->prev = l->prev;
    }
    fq_move(&lost, &l->pend);
    if (l->outgoing) {
        m->down = true;
        fq_move(&lost, &m->pend);
    }
    pthread_mutex_unlock(&n->mu);
    size_t lost_frames = fq_drop(n, m, &lost);
    if (l->outgoing) {
        m->out = NULL;
        m->backoff_ms = PART__PEER_BACKOFF_MIN_MS;
        atomic_store(&m->up_since_ms, 0);
    } else if (m->in == l) {
        m->in = NULL;
    }
    count(&n->links_down, 1);
    if (!n->close_loop) {
        static struct sl_log_limit lim = SL_LOG_LIMIT(10, 1000);
        sl_log_limited(&lim, SL_LOG_INFO, LOG_MOD,
                       "peer link %s node %u down (%zu queued frames dropped)",
                       l->outgoing ? "to" : "from", (unsigned)m->id, lost_frames);
    }
    uv_read_stop((uv_stream_t *)l->tcp);
    uv_close((uv_handle_t *)l->tcp, on_link_handle_closed);
    uv_close((uv_handle_t *)&l->tick, on_link_handle_closed);
    n->on_link_down(n->arg, m->id, l->id, l->outgoing);
    if (l->outgoing) {
        member_redial(n, m, 0);
    }
}

/* Closes l for a fault of its peer's, counted in counter (may be NULL). */
static void link_refuse(struct link *l, _Atomic uint64_t *counter, const char *why)
{
    static struct sl_log_limit lim = SL_LOG_LIMIT(10, 1000);
    if (counter != NULL) {
        count(counter, 1);
    }
    sl_log_limited(&lim, SL_LOG_WARN, LOG_MOD, "peer link %s node %u closed: %s",
                   l->outgoing ? "to" : "from", (unsigned)l->m->id, why);
    link_kill(l);
}

static void on_written(uv_write_t *w, int status)
{
    struct link *l = w->data;
    struct part__peer_node *n = l->node;
    struct fqueue done = l->writing;
    l->writing = (struct fqueue){0};
    l->write_busy = false;
    if (status != 0) {
        fq_drop(n, l->m, &done);
        link_kill(l);
        return;
    }
    uint64_t frames = 0, bytes = 0;
    for (struct frame *f = done.head, *next; f != NULL; f = next) {
        next = f->next;
        frames++;
        bytes += f->len;
        atomic_fetch_sub_explicit(&l->m->queued, f->len, memory_order_relaxed);
        free(f);
    }
    count(&n->frames_out, frames);
    count(&n->bytes_out, bytes);
    l->wrote_since_tick = true;
    if (!l->dying) {
        link_flush(l);
    }
}

/* Writes what waits for l, as one write, unless one is in flight. */
static void link_flush(struct link *l)
{
    struct part__peer_node *n = l->node;
    if (l->dying || l->write_busy) {
        return;
    }
    struct fqueue q = {0};
    pthread_mutex_lock(&n->mu);
    if (l->outgoing) {
        fq_move(&q, &l->m->pend);
    }
    fq_move(&q, &l->pend);
    pthread_mutex_unlock(&n->mu);
    if (q.head == NULL) {
        return;
    }
    size_t k = 0;
    for (struct frame *f = q.head; f != NULL; f = f->next) {
        k++;
    }
    uv_buf_t one, *bufs = k == 1 ? &one : sl_xcalloc(k, sizeof *bufs);
    k = 0;
    for (struct frame *f = q.head; f != NULL; f = f->next) {
        bufs[k++] = uv_buf_init((char *)f->bytes, (unsigned)(HEADER_LEN + f->len));
    }
    l->writing = q;
    l->write_busy = true;
    l->wr.data = l;
    /* uv_write copies the array of buffers, not the bytes. */
    int rc = uv_write(&l->wr, (uv_stream_t *)l->tcp, bufs, (unsigned)k, on_written);
    if (bufs != &one) {
        free(bufs);
    }
    if (rc != 0) {
        on_written(&l->wr, rc);
    }
}

static void on_keepalive_written(uv_write_t *w, int status)
{
    struct link *l = w->data;
    l->ka_busy = false;
    if (status != 0) {
        link_kill(l);
    }
}

/* Every keepalive_ms: a link that heard nothing for idle_ms is dead; one
 * that wrote nothing since the last tick says it is alive. A tick that
 * comes late is this loop's own stall (a long callback, a stopped
 * process): the peer's bytes may be waiting unread in the socket, since
 * libuv runs timers before it polls, so the peer gets a fresh window. */
static void on_tick(uv_timer_t *t)
{
    struct link *l = t->data;
    struct part__peer_node *n = l->node;
    uint64_t now = uv_now(t->loop);
    if (now - l->last_tick_ms > n->idle_ms / 2) {
        l->last_read_ms = now;
    }
    l->last_tick_ms = now;
    if (now - l->last_read_ms > n->idle_ms) {
        link_refuse(l, &n->idle, "silent for too long");
        return;
    }
    if (!l->wrote_since_tick && !l->write_busy && !l->ka_busy) {
        uv_buf_t b = uv_buf_init((char *)keepalive_frame, (unsigned)HEADER_LEN);
        l->ka_wr.data = l;
        if (uv_write(&l->ka_wr, (uv_stream_t *)l->tcp, &b, 1, on_keepalive_written) != 0) {
            link_kill(l);
            return;
        }
        l->ka_busy = true;
    }
    l->wrote_since_tick = false;
}

static void on_link_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    struct link *l = h->data;
    (void)suggested;
    if (l->rbuf == NULL) {
        l->rcap = RBUF_LEN;
        l->rbuf = sl_xmalloc(l->rcap);
    }
    buf->base = (char *)l->rbuf + l->rlen;
    buf->len = l->rcap - l->rlen;
}

/* Makes room for the frame whose header starts the buffer, or shrinks the
 * buffer back once a large frame is done. Returns false when the frame is
 * over max_frame or no memory is left for it. */
static bool link_room(struct link *l, bool *oversize)
{
    struct part__peer_node *n = l->node;
    *oversize = false;
    if (l->rlen < HEADER_LEN) {
        if (l->rcap > RBUF_LEN) {
            uint8_t *b = sl_xmalloc(RBUF_LEN);
            memcpy(b, l->rbuf, l->rlen);
            free(l->rbuf);
            l->rbuf = b;
            l->rcap = RBUF_LEN;
        }
        return true;
    }
    size_t len = (size_t)part__get_be(l->rbuf, HEADER_LEN);
    if (len > n->max_frame) {
        *oversize = true;
        return false;
    }
    if (HEADER_LEN + len > l->rcap) {
        uint8_t *b = realloc(l->rbuf, HEADER_LEN + len);
        if (b == NULL) {
            return false;
        }
        l->rbuf = b;
        l->rcap = HEADER_LEN + len;
    }
    return true;
}

static void on_link_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    struct link *l = s->data;
    struct part__peer_node *n = l->node;
    (void)buf;
    if (l->dying || nread == 0) {
        return;
    }
    if (nread < 0) {
        link_kill(l); /* the peer closed, reset or vanished */
        return;
    }
    l->rlen += (size_t)nread;
    l->last_read_ms = uv_now(n->loop);
    size_t off = 0;
    while (l->rlen - off >= HEADER_LEN) {
        size_t len = (size_t)part__get_be(l->rbuf + off, HEADER_LEN);
        if (len > n->max_frame || l->rlen - off - HEADER_LEN < len) {
            break;
        }
        off += HEADER_LEN + len;
        if (len == 0) {
            continue; /* a keepalive */
        }
        count(&n->frames_in, 1);
        count(&n->bytes_in, len);
        n->on_frame(n->arg, l->m->id, l->id, l->rbuf + off - len, len);
        if (l->dying) {
            return;
        }
    }
    l->rlen -= off;
    memmove(l->rbuf, l->rbuf + off, l->rlen);
    bool oversize;
    if (!link_room(l, &oversize)) {
        if (oversize) {
            link_refuse(l, &n->oversize, "a frame over the size limit");
        } else {
            link_refuse(l, NULL, "no memory for a frame");
        }
    }
}

/* The handshake gave tcp: a link to m, reading at once. */
static void link_new(struct part__peer_node *n, struct member *m, uv_tcp_t *tcp, bool outgoing)
{
    struct link *l = sl_xcalloc(1, sizeof *l);
    l->node = n;
    l->m = m;
    l->id = ++n->next_link_id;
    l->outgoing = outgoing;
    l->tcp = tcp;
    l->handles = 2;
    l->last_read_ms = l->last_tick_ms = uv_now(n->loop);
    tcp->data = l;
    l->tick.data = l;
    SL_ASSERT(uv_timer_init(n->loop, &l->tick) == 0);
    SL_ASSERT(uv_timer_start(&l->tick, on_tick, n->keepalive_ms, n->keepalive_ms) == 0);
    n->handles++;
    count(&n->links_up, 1);
    sl_log(SL_LOG_INFO, LOG_MOD, "peer link %s node %u up", outgoing ? "to" : "from",
           (unsigned)m->id);
    pthread_mutex_lock(&n->mu);
    l->next = n->links;
    if (n->links != NULL) {
        n->links->prev = l;
    }
    n->links = l;
    if (outgoing) {
        m->down = false;
        atomic_store(&m->up_since_ms, sl_mono_ns() / 1000000u);
    }
    pthread_mutex_unlock(&n->mu);
    if (uv_read_start((uv_stream_t *)tcp, on_link_alloc, on_link_read) != 0) {
        link_kill(l);
        return;
    }
    if (outgoing) {
        m->out = l;
        m->backoff_ms = 0;
        link_flush(l);
        return;
    }
    /* m dials one link at a time: an older one is dead, even if this side
     * has not heard it yet, and what m asked on it will not be answered. */
    struct link *old = m->in;
    m->in = l;
    if (old != NULL) {
        link_kill(old);
    }
    /* m is back: no need to wait out the back-off to reach it. */
    if (m->redial_armed) {
        member_dial(n, m);
    }
}

/* ---- the port's hooks ----------------------------------------------------- */

static void *tcp_alloc(size_t size)
{
    return sl_xmalloc(size);
}

static void tcp_free(void *p)
{
    free(p);
}

static void *hs_find(void *arg, const uint8_t *name, size_t len)
{
    bool ok = len == strlen(PART__PEER_NAME) && memcmp(name, PART__PEER_NAME, len) == 0;
    return ok ? arg : NULL;
}

static void on_stray_closed(uv_handle_t *h)
{
    free(h);
}

static void hs_done(void *arg, struct part__hs *hs, uv_tcp_t *tcp)
{
    struct part__peer_node *n = arg;
    struct member *m =
        part__hs_dialer(hs) ? part__hs_data(hs) : member_find(n, part__hs_peer_id(hs));
    if (part__hs_dialer(hs)) {
        m->dialing = false;
    }
    if (tcp != NULL && n->close_loop) {
        uv_close((uv_handle_t *)tcp, on_stray_closed);
        tcp = NULL;
    }
    if (tcp != NULL) {
        link_new(n, m, tcp, part__hs_dialer(hs));
    } else if (part__hs_dialer(hs)) {
        member_dial_failed(n, m);
    }
}

/* ---- the wake-up: work queued by other threads --------------------------- */

static void node_close_loop(struct part__peer_node *n);

static void on_wake(uv_async_t *h)
{
    struct part__peer_node *n = h->data;
    pthread_mutex_lock(&n->mu);
    bool closing = n->closing;
    pthread_mutex_unlock(&n->mu);
    if (closing) {
        node_close_loop(n);
        return;
    }
    for (size_t i = 0; i < n->member_count; i++) {
        struct member *m = &n->members[i];
        if (m->self || m->out != NULL || m->dialing || m->redial_armed) {
            continue;
        }
        pthread_mutex_lock(&n->mu);
        bool waiting = m->pend.head != NULL;
        pthread_mutex_unlock(&n->mu);
        if (waiting) {
            member_dial(n, m);
        }
    }
    /* Only this thread links and unlinks links, and a dead one is freed
     * on a later turn of the loop, so the walk holds no lock. */
    for (struct link *l = n->links, *next; l != NULL; l = next) {
        next = l->next;
        link_flush(l);
    }
}

/* ---- sends and replies (any thread) --------------------------------------- */

/* A frame of len bytes copied from bytes, or NULL. */
static struct frame *frame_make(const void *bytes, size_t len)
{
    struct frame *f = sl_trymalloc(sizeof *f + HEADER_LEN + len);
    if (f != NULL) {
        f->len = len;
        part__put_be(f->bytes, len, HEADER_LEN);
        memcpy(f->bytes + HEADER_LEN, bytes, len);
    }
    return f;
}

/* Checks a frame's length and makes it. Returns SL_OK, SL_EINVAL,
 * SL_ETOOBIG or SL_ENOMEM. */
static int frame_check_make(const struct part__peer_node *n, const void *bytes, size_t len,
                            struct frame **out)
{
    if (len == 0 || bytes == NULL) {
        return SL_EINVAL;
    }
    if (len > n->max_frame) {
        return SL_ETOOBIG;
    }
    *out = frame_make(bytes, len);
    return *out != NULL ? SL_OK : SL_ENOMEM;
}

/* Under mu: queues f on q for m, within m's bound, and wakes the loop.
 * Returns SL_OK or SL_EBUSY (f is then the caller's still). */
static int enqueue_locked(struct part__peer_node *n, struct member *m, struct fqueue *q,
                          struct frame *f)
{
    size_t queued = atomic_load_explicit(&m->queued, memory_order_relaxed);
    if (queued + f->len > n->max_queued) {
        return SL_EBUSY;
    }
    atomic_fetch_add_explicit(&m->queued, f->len, memory_order_relaxed);
    fq_push(q, f);
    /* Under the lock: close cannot have closed the handle yet. */
    uv_async_send(&n->wake);
    return SL_OK;
}

int part__peer_send(struct part__peer_node *n, uint16_t to, const void *bytes, size_t len)
{
    struct member *m = member_find(n, to);
    if (m == NULL || m->self) {
        return SL_EINVAL;
    }
    struct frame *f = NULL;
    int rc = frame_check_make(n, bytes, len, &f);
    if (rc != SL_OK) {
        return rc;
    }
    pthread_mutex_lock(&n->mu);
    if (n->closing) {
        rc = SL_ECLOSED;
    } else if (m->down) {
        rc = SL_EUNAVAIL;
    } else {
        rc = enqueue_locked(n, m, &m->pend, f);
    }
    pthread_mutex_unlock(&n->mu);
    if (rc != SL_OK) {
        free(f);
    }
    return rc;
}

int part__peer_reply(struct part__peer_node *n, uint64_t link, const void *bytes, size_t len)
{
    struct frame *f = NULL;
    int rc = frame_check_make(n, bytes, len, &f);
    if (rc != SL_OK) {
        return rc;
    }
    pthread_mutex_lock(&n->mu);
    struct link *l = n->links;
    while (l != NULL && l->id != link) {
        l = l->next;
    }
    if (n->closing) {
        rc = SL_ECLOSED;
    } else if (l == NULL) {
        rc = SL_EUNAVAIL;
    } else {
        rc = enqueue_locked(n, l->m, &l->pend, f);
    }
    pthread_mutex_unlock(&n->mu);
    if (rc != SL_OK) {
        free(f);
    }
    return rc;
}

uint64_t part__peer_node_up_since(const struct part__peer_node *n, uint16_t id)
{
    for (size_t i = 0; i < n->member_count; i++) {
        if (n->members[i].id == id) {
            return atomic_load(&n->members[i].up_since_ms);
        }
    }
    return 0;
}

void part__peer_node_stats(const struct part__peer_node *n, struct part__peer_stats *out)
{
    struct part__peer_node *mn = (struct part__peer_node *)n; /* the lock */
    memset(out, 0, sizeof *out);
    out->frames_in = atomic_load_explicit(&n->frames_in, memory_order_relaxed);
    out->bytes_in = atomic_load_explicit(&n->bytes_in, memory_order_relaxed);
    out->frames_out = atomic_load_explicit(&n->frames_out, memory_order_relaxed);
    out->bytes_out = atomic_load_explicit(&n->bytes_out, memory_order_relaxed);
    out->frames_dropped = atomic_load_explicit(&n->frames_dropped, memory_order_relaxed);
    out->links_up = atomic_load_explicit(&n->links_up, memory_order_relaxed);
    out->links_down = atomic_load_explicit(&n->links_down, memory_order_relaxed);
    out->dial_failures = atomic_load_explicit(&n->dial_failures, memory_order_relaxed);
    out->oversize = atomic_load_explicit(&n->oversize, memory_order_relaxed);
    out->idle = atomic_load_explicit(&n->idle, memory_order_relaxed);
    pthread_mutex_lock(&mn->mu);
    if (n->port != NULL) {
        part__hs_port_rejected(n->port, out->rejected);
    } else {
        memcpy(out->rejected, n->rejected_final, sizeof out->rejected);
    }
    pthread_mutex_unlock(&mn->mu);
}

/* ---- the node --------------------------------------------------------------- */

static void node_free(struct part__peer_node *n)
{
    pthread_mutex_destroy(&n->mu);
    free(n->members);
    free(n);
}

/* Everything the loop holds is closed: a node on the caller's loop goes
 * now; one with its own thread goes once close has joined it. */
static void node_maybe_finished(struct part__peer_node *n)
{
    if (!n->close_loop || !n->port_closed || n->handles > 0 || n->own_thread) {
        return;
    }
    void (*cb)(void *) = n->close_cb;
    void *arg = n->close_arg;
    node_free(n);
    if (cb != NULL) {
        cb(arg);
    }
}

/* The wake handle's data is the node, a redial timer's its member. */
static void on_node_handle_closed(uv_handle_t *h)
{
    struct part__peer_node *n = h->type == UV_ASYNC ? h->data : ((struct member *)h->data)->node;
    n->handles--;
    node_maybe_finished(n);
}

static void on_port_closed(void *arg)
{
    struct part__peer_node *n = arg;
    n->port_closed = true;
    node_maybe_finished(n);
}

/* The loop's part of close: everything under way is cancelled, and the
 * caller hears of every link and every queue of frames lost. */
static void node_close_loop(struct part__peer_node *n)
{
    if (n->close_loop) {
        return;
    }
    n->close_loop = true;
    pthread_mutex_lock(&n->mu);
    part__hs_port_rejected(n->port, n->rejected_final);
    struct part__hs_port *port = n->port;
    n->port = NULL;
    pthread_mutex_unlock(&n->mu);
    /* Cancelled dials report through member_dial_failed, which sees
     * close_loop and does not redial. */
    part__hs_port_close(port, on_port_closed, n);
    while (n->links != NULL) {
        link_kill(n->links);
    }
    for (size_t i = 0; i < n->member_count; i++) {
        struct member *m = &n->members[i];
        if (m->self) {
            continue;
        }
        m->redial_armed = false;
        uv_close((uv_handle_t *)&m->redial, on_node_handle_closed);
        if (!m->dialing) {
            struct fqueue lost = {0};
            pthread_mutex_lock(&n->mu);
            fq_move(&lost, &m->pend);
            pthread_mutex_unlock(&n->mu);
            if (fq_drop(n, m, &lost) > 0) {
                n->on_link_down(n->arg, m->id, 0, true);
            }
        }
    }
    uv_close((uv_handle_t *)&n->wake, on_node_handle_closed);
}

static void *node_thread(void *arg)
{
    struct part__peer_node *n = arg;
    uv_run(n->loop, UV_RUN_DEFAULT);
    return NULL;
}

/* Copies o's members and starts the port. Returns SL_OK, SL_EINVAL or
 * SL_EIO. */
static int node_start(struct part__peer_node *n, const struct part__peer_node_options *o)
{
    n->members = sl_xcalloc(o->member_count, sizeof *n->members);
    struct part__hs_peer *peers = sl_xcalloc(o->member_count, sizeof *peers);
    for (size_t i = 0; i < o->member_count; i++) {
        const struct part__peer_member *p = &o->members[i];
        peers[i] = (struct part__hs_peer){p->id, p->host, p->port};
        n->members[i].node = n;
        n->members[i].id = p->id;
        n->members[i].self = p->id == o->id;
    }
    n->member_count = o->member_count;
    struct part__hs_port_options po = {.proto = &peer_proto,
                                       .loop = n->loop,
                                       .id = o->id,
                                       .host = o->host,
                                       .port = o->port,
                                       .peers = peers,
                                       .peer_count = o->member_count,
                                       .secret = o->secret,
                                       .secret_len = o->secret_len,
                                       .handshake_ms = o->handshake_ms,
                                       .tcp_alloc = tcp_alloc,
                                       .tcp_free = tcp_free,
                                       .find = hs_find,
                                       .done = hs_done,
                                       .arg = n};
    memcpy(po.cluster_id, o->cluster_id, sizeof po.cluster_id);
    int rc = part__hs_port_new(&po, &n->port);
    free(peers);
    return rc;
}

int part__peer_node_new(const struct part__peer_node_options *o, struct part__peer_node **out)
{
    uint32_t keepalive = o->keepalive_ms != 0 ? o->keepalive_ms : PART__PEER_KEEPALIVE_MS;
    uint32_t idle = o->idle_ms != 0 ? o->idle_ms : PART__PEER_IDLE_MS;
    if (o->on_frame == NULL || o->on_link_down == NULL || o->member_count == 0 ||
        o->member_count > UINT16_MAX || idle <= keepalive ||
        o->max_frame > UINT32_MAX - HEADER_LEN) {
        return SL_EINVAL;
    }
    struct part__peer_node *n = sl_xcalloc(1, sizeof *n);
    n->own_thread = o->loop == NULL;
    if (n->own_thread) {
        SL_ASSERT(uv_loop_init(&n->own_loop) == 0);
        n->loop = &n->own_loop;
    } else {
        n->loop = o->loop;
    }
    n->id = o->id;
    n->max_frame = o->max_frame != 0 ? o->max_frame : PART__PEER_FRAME_MAX;
    n->max_queued = o->max_queued != 0 ? o->max_queued : PART__PEER_QUEUE_MAX;
    n->keepalive_ms = keepalive;
    n->idle_ms = idle;
    n->on_frame = o->on_frame;
    n->on_link_down = o->on_link_down;
    n->arg = o->arg;
    SL_ASSERT(pthread_mutex_init(&n->mu, NULL) == 0);
    int rc = node_start(n, o);
    if (rc != SL_OK) {
        if (n->own_thread) {
            /* A port that failed to listen closes on the loop. */
            uv_run(n->loop, UV_RUN_DEFAULT);
            SL_ASSERT(uv_loop_close(n->loop) == 0);
        }
        node_free(n);
        return rc;
    }
    SL_ASSERT(uv_async_init(n->loop, &n->wake, on_wake) == 0);
    n->wake.data = n;
    n->handles = 1;
    for (size_t i = 0; i < n->member_count; i++) {
        struct member *m = &n->members[i];
        if (!m->self) {
            SL_ASSERT(uv_timer_init(n->loop, &m->redial) == 0);
            m->redial.data = m;
            n->handles++;
            if (o->keep_links_up) {
                member_redial(n, m, 0);
            }
        }
    }
    if (n->own_thread && pthread_create(&n->thread, NULL, node_thread, n) != 0) {
        n->closing = true;
        node_close_loop(n);
        uv_run(n->loop, UV_RUN_DEFAULT);
        SL_ASSERT(uv_loop_close(n->loop) == 0);
        node_free(n);
        return SL_EIO;
    }
    *out = n;
    return SL_OK;
}

uint16_t part__peer_node_port(const struct part__peer_node *n)
{
    struct part__peer_node *mn = (struct part__peer_node *)n; /* the lock */
    pthread_mutex_lock(&mn->mu);
    uint16_t port = n->port != NULL ? part__hs_port_port(n->port) : 0;
    pthread_mutex_unlock(&mn->mu);
    return port;
}

void part__peer_node_close(struct part__peer_node *n, void (*cb)(void *arg), void *arg)
{
    n->close_cb = cb;
    n->close_arg = arg;
    pthread_mutex_lock(&n->mu);
    SL_ASSERT(!n->closing);
    n->closing = true;
    if (n->own_thread) {
        uv_async_send(&n->wake);
    }
    pthread_mutex_unlock(&n->mu);
    if (!n->own_thread) {
        node_close_loop(n);
        return;
    }
    SL_ASSERT(pthread_join(n->thread, NULL) == 0);
    SL_ASSERT(uv_loop_close(n->loop) == 0);
    node_free(n);
    if (cb != NULL) {
        cb(arg);
    }
}
