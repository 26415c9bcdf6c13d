/*
 * gw_server.c -- the I/O threads: io_threads event loops, each its own
 * thread with its own uv_loop_t, each accepting on its own listening socket
 * per endpoint, all bound to the same port with SO_REUSEPORT so the kernel
 * spreads connections over the threads and no accept lock is shared.
 *
 * Accepting: each listener is a non-blocking socket watched by a uv_poll_t;
 * the loop accepts itself (at most ACCEPT_BATCH per wake-up, so one busy
 * listener cannot starve the loop's connections) and admits each socket
 * through the process-wide caps (gw_connlimit.h) before a connection
 * exists. When accept(2) fails for want of descriptors (EMFILE, ENFILE),
 * the listener stops polling for ACCEPT_PAUSE_MS and resumes from a timer:
 * retrying at once would spin the loop, which is what libuv's own accept
 * path does with several loops. Every line a client can cause here is
 * rate-limited (sl_log_limited).
 *
 * Threading: gw_server_start/stop/free run on the main thread. Each loop,
 * its listeners, its connections and its handler contexts belong to its
 * thread; the main thread reaches a loop only through its uv_async_t.
 *
 * Shutdown of one loop (on its own thread, after the main thread's async):
 *   RUNNING --stop async--> DRAINING: listeners closed, GOAWAY everywhere,
 *       each handler's loop_drain (long polls answer empty now)
 *   DRAINING --no connection and no exchange left, or grace over-->
 *       connections closed (held exchanges cancelled)
 *   --> STOPPING: once handlers responded to every exchange (or a hard
 *       deadline passed): loop_stop per handler, every handle closed, the
 *       loop runs out and the thread ends.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <uv.h>

#include "gw_conn.h"
#include "gw_transport.h"

#define MAX_LISTENERS 4
#define ACCEPT_BATCH 64
#define ACCEPT_PAUSE_MS 250
#define DRAIN_POLL_MS 20
#define HARD_EXTRA_MS 10000 /* after the grace: wait this long for handlers */

struct io_thread;

struct listener {
    uv_poll_t poll;   /* readable: connections wait to be accepted */
    uv_timer_t pause; /* resumes polling after descriptors ran out */
    int fd;
    struct io_thread *t;
    const struct gw_handler *handler;
    struct gw_connlimit *limits; /* the spec's */
    struct gw_budget *budget;    /* the spec's */
    void *loop_ctx;
    bool open;
};

enum loop_phase { PHASE_RUNNING, PHASE_DRAINING, PHASE_CLOSED_CONNS, PHASE_STOPPED };

struct io_thread {
    struct gw_server *srv;
    unsigned index;
    uv_thread_t tid;
    bool started;
    uv_loop_t loop;
    uv_async_t stop_async;
    uv_timer_t drain_timer;
    uv_prepare_t log_flush; /* writes the loop's buffered log lines before it blocks */
    struct gw_loop_state ls;
    struct listener listeners[MAX_LISTENERS];
    size_t listener_count;
    enum loop_phase phase;
    uint64_t grace_deadline_ms, hard_deadline_ms;
};

struct gw_server {
    struct gw_listener_spec specs[MAX_LISTENERS];
    size_t spec_count;
    struct io_thread *threads;
    unsigned thread_count;
    uint64_t grace_ms;
};

static struct sl_log_limit refused_log = SL_LOG_LIMIT(5, 10000);
static struct sl_log_limit accept_log = SL_LOG_LIMIT(5, 10000);

/* ---- sockets ------------------------------------------------------------ */

/* A listening socket for host:port with SO_REUSEPORT, bound and listening.
 * Returns the fd or -1 with a sentence in err. */
static int listen_socket(const char *host, uint16_t port, char *err, size_t errlen)
{
    char port_s[8];
    snprintf(port_s, sizeof(port_s), "%u", port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
    struct addrinfo *res;
    int rv = getaddrinfo(host, port_s, &hints, &res);
    if (rv != 0) {
        snprintf(err, errlen, "cannot resolve %s: %s", host, gai_strerror(rv));
        return -1;
    }
    int fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        snprintf(err, errlen, "socket: %s", strerror(errno));
        freeaddrinfo(res);
        return -1;
    }
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) != 0 ||
        bind(fd, res->ai_addr, res->ai_addrlen) != 0 || listen(fd, 1024) != 0) {
        snprintf(err, errlen, "cannot listen on %s:%u: %s", host, port, strerror(errno));
        close(fd);
        freeaddrinfo(res);
        return -1;
    }
    freeaddrinfo(res);
    return fd;
}

static uint16_t bound_port(int fd)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    if (getsockname(fd, (struct sockaddr *)&ss, &len) != 0)
        return 0;
    if (ss.ss_family == AF_INET6)
        return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    return ntohs(((struct sockaddr_in *)&ss)->sin_port);
}

/* ---- one loop ----------------------------------------------------------- */

static void on_listener_readable(uv_poll_t *h, int status, int events);

static void on_pause_over(uv_timer_t *timer)
{
    struct listener *l = timer->data;
    if (l->open)
        uv_poll_start(&l->poll, UV_READABLE, on_listener_readable);
}

static void peer_text(const struct sockaddr_storage *ss, char *out, size_t cap)
{
    const void *a = ss->ss_family == AF_INET6
                        ? (const void *)&((const struct sockaddr_in6 *)ss)->sin6_addr
                        : (const void *)&((const struct sockaddr_in *)ss)->sin_addr;
    if (inet_ntop(ss->ss_family, a, out, (socklen_t)cap) == NULL)
        snprintf(out, cap, "?");
}

/* accept(2) failed: count it, and when descriptors ran out, stop polling
 * for a moment. Returns true when the accept loop should stop. */
static bool accept_failed(struct listener *l, int err)
{
    struct gw_connlimit *limits = l->limits;
    if (err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM) {
        gw__connlimit_count(limits, GW_CONN_ACCEPT_FDS_EXHAUSTED);
        sl_log_limited(&accept_log, SL_LOG_WARN, "gw",
                       "accept: %s; listener of loop %u paused for %d ms", strerror(err),
                       l->t->index, ACCEPT_PAUSE_MS);
        uv_poll_stop(&l->poll);
        uv_timer_start(&l->pause, on_pause_over, ACCEPT_PAUSE_MS, 0);
        return true;
    }
    gw__connlimit_count(limits, GW_CONN_ACCEPT_FAILED);
    sl_log_limited(&accept_log, SL_LOG_WARN, "gw", "accept: %s", strerror(err));
    return true;
}

static void on_listener_readable(uv_poll_t *h, int status, int events)
{
    struct listener *l = h->data;
    struct io_thread *t = l->t;
    if (status < 0) {
        accept_failed(l, -status);
        return;
    }
    for (int i = 0; i < ACCEPT_BATCH; i++) {
        struct sockaddr_storage ss = {0};
        socklen_t len = sizeof(ss);
        /* Plain accept(2): uv_tcp_open makes the socket non-blocking, and
         * sluiced never executes another program. */
        int fd = accept(l->fd, (struct sockaddr *)&ss, &len);
        if (fd < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                return;
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            if (accept_failed(l, errno))
                return;
            continue;
        }
        struct gw_peer peer = gw__peer_from_sockaddr(&ss);
        enum gw_conn_refusal why = GW_CONN_REFUSED_SHUTTING_DOWN;
        int rv = SL_EBUSY;
        if (t->ls.shutting_down)
            gw__connlimit_count(l->limits, why);
        else
            rv = gw__connlimit_acquire(l->limits, &peer, &why);
        if (rv != SL_OK) {
            char who[INET6_ADDRSTRLEN];
            peer_text(&ss, who, sizeof(who));
            sl_log_limited(&refused_log, SL_LOG_WARN, "gw", "connection from %s refused: %s", who,
                           gw__conn_refusal_name(why));
            close(fd);
            continue;
        }
        gw__conn_accept(&t->ls, fd, l->limits, l->budget, &peer, l->handler, l->loop_ctx);
    }
}

static void on_listener_closed(uv_handle_t *h)
{
    struct listener *l = h->data;
    if (l->fd >= 0)
        close(l->fd);
    l->fd = -1;
}

/* Stops accepting on l for good: the poll handle, its timer, the socket. */
static void listener_close(struct listener *l)
{
    if (!l->open)
        return;
    l->open = false;
    uv_close((uv_handle_t *)&l->pause, NULL);
    uv_close((uv_handle_t *)&l->poll, on_listener_closed);
}

static void close_walk(uv_handle_t *h, void *arg)
{
    if (!uv_is_closing(h))
        uv_close(h, NULL);
}

static void loop_finish(struct io_thread *t)
{
    t->phase = PHASE_STOPPED;
    if (t->ls.inflight > 0)
        sl_log(SL_LOG_ERROR, "gw", "loop %u: %zu exchanges never answered; stopping anyway",
               t->index, t->ls.inflight);
    for (size_t i = 0; i < t->listener_count; i++) {
        const struct gw_handler *h = t->listeners[i].handler;
        if (h->loop_stop != NULL)
            h->loop_stop(t->listeners[i].loop_ctx);
    }
    /* Whatever handles the handlers left (their own timers) go too. */
    uv_walk(&t->loop, close_walk, NULL);
}

static void on_drain_timer(uv_timer_t *timer)
{
    struct io_thread *t = timer->data;
    uint64_t now = uv_now(&t->loop);
    if (t->phase == PHASE_DRAINING &&
        ((t->ls.conn_count == 0 && t->ls.inflight == 0) || now >= t->grace_deadline_ms)) {
        if (t->ls.conn_count > 0)
            sl_log(SL_LOG_WARN, "gw", "loop %u: grace period over, closing %zu connections",
                   t->index, t->ls.conn_count);
        gw__conn_close_all(&t->ls);
        t->phase = PHASE_CLOSED_CONNS;
    }
    if (t->phase == PHASE_CLOSED_CONNS && (t->ls.inflight == 0 || now >= t->hard_deadline_ms))
        loop_finish(t);
}

static void on_stop_async(uv_async_t *a)
{
    struct io_thread *t = a->data;
    if (t->phase != PHASE_RUNNING)
        return;
    t->phase = PHASE_DRAINING;
    t->ls.shutting_down = true;
    for (size_t i = 0; i < t->listener_count; i++)
        listener_close(&t->listeners[i]);
    gw__conn_goaway_all(&t->ls);
    for (size_t i = 0; i < t->listener_count; i++) {
        const struct gw_handler *h = t->listeners[i].handler;
        if (h->loop_drain != NULL)
            h->loop_drain(t->listeners[i].loop_ctx);
    }
    uv_update_time(&t->loop);
    t->grace_deadline_ms = uv_now(&t->loop) + t->srv->grace_ms;
    t->hard_deadline_ms = t->grace_deadline_ms + HARD_EXTRA_MS;
    uv_timer_start(&t->drain_timer, on_drain_timer, 0, DRAIN_POLL_MS);
}

/* Per-request log lines are buffered per loop (sl_log_buffer_start): one
 * write(2) per loop iteration instead of one per request. Prepare runs
 * just before the loop blocks, so no line waits longer than the iteration
 * that logged it. */
static void on_log_flush(uv_prepare_t *h)
{
    (void)h;
    sl_log_flush();
}

static void thread_main(void *arg)
{
    struct io_thread *t = arg;
    for (size_t i = 0; i < t->listener_count; i++) {
        struct listener *l = &t->listeners[i];
        l->loop_ctx = l->handler->loop_start != NULL
                          ? l->handler->loop_start(l->handler->app, &t->loop)
                          : NULL;
    }
    for (size_t i = 0; i < t->listener_count; i++) {
        int rv = uv_poll_start(&t->listeners[i].poll, UV_READABLE, on_listener_readable);
        if (rv != 0)
            sl_log(SL_LOG_ERROR, "gw", "loop %u: listen: %s", t->index, uv_strerror(rv));
    }
    sl_log_buffer_start();
    uv_run(&t->loop, UV_RUN_DEFAULT);
    sl_log_buffer_stop();
}

/* ---- the server --------------------------------------------------------- */

static void thread_fini(struct io_thread *t)
{
    /* After uv_run returned every handle is closed; close the loop. */
    for (size_t i = 0; i < t->listener_count; i++) {
        if (t->listeners[i].fd >= 0) /* never closed through listener_close */
            close(t->listeners[i].fd);
        t->listeners[i].fd = -1;
    }
    int rv = uv_loop_close(&t->loop);
    if (rv != 0)
        sl_log(SL_LOG_WARN, "gw", "loop %u: close: %s", t->index, uv_strerror(rv));
    free(t->ls.read_buf);
}

/* Before the thread runs: the loop, its async, and its listeners from fds
 * (main thread; the loop is not running yet, so nothing races). */
static int thread_init(struct gw_server *s, struct io_thread *t, unsigned index,
                       struct gw_tls_ctx *tls, const int *fds)
{
    t->srv = s;
    t->index = index;
    SL_ASSERT(uv_loop_init(&t->loop) == 0);
    t->ls.loop = &t->loop;
    t->ls.tls = tls;
    t->ls.read_buf_size = 65536;
    t->ls.read_buf = sl_xmalloc(t->ls.read_buf_size);
    uv_async_init(&t->loop, &t->stop_async, on_stop_async);
    t->stop_async.data = t;
    uv_timer_init(&t->loop, &t->drain_timer);
    t->drain_timer.data = t;
    uv_prepare_init(&t->loop, &t->log_flush);
    uv_prepare_start(&t->log_flush, on_log_flush);
    if (gw__runq_init(&t->ls.runq, &t->loop) != SL_OK)
        return SL_EIO;
    for (size_t i = 0; i < s->spec_count; i++) {
        struct listener *l = &t->listeners[i];
        l->t = t;
        l->handler = &s->specs[i].handler;
        l->limits = s->specs[i].limits;
        l->budget = s->specs[i].budget;
        l->fd = -1;
        if (uv_poll_init_socket(&t->loop, &l->poll, fds[i]) != 0)
            return SL_EIO;
        l->fd = fds[i];
        uv_timer_init(&t->loop, &l->pause);
        l->poll.data = l->pause.data = l;
        l->open = true;
        t->listener_count++;
    }
    return SL_OK;
}

int gw_server_start(const struct gw_listener_spec *specs, size_t spec_count, unsigned io_threads,
                    struct gw_tls_ctx *tls, struct gw_server **out, char *err, size_t errlen)
{
    SL_ASSERT(spec_count > 0 && spec_count <= MAX_LISTENERS);
    if (io_threads == 0)
        io_threads = 1;
    struct gw_server *s = sl_xcalloc(1, sizeof(*s));
    memcpy(s->specs, specs, spec_count * sizeof(*specs));
    s->spec_count = spec_count;
    s->thread_count = io_threads;
    s->threads = sl_xcalloc(io_threads, sizeof(*s->threads));
    s->grace_ms = 10000;

    /* fds[thread][listener]; port 0 is resolved by the first bind so that
     * every thread's socket shares the same port. */
    int *fds = sl_xmalloc(io_threads * spec_count * sizeof(int));
    for (size_t i = 0; i < io_threads * spec_count; i++)
        fds[i] = -1;
    int rv = SL_OK;
    unsigned initialised = 0;
    for (size_t j = 0; j < spec_count; j++) {
        uint16_t port = specs[j].port;
        for (unsigned t = 0; t < io_threads; t++) {
            int fd = listen_socket(specs[j].host, port, err, errlen);
            if (fd < 0) {
                rv = SL_EIO;
                goto fail;
            }
            fds[t * spec_count + j] = fd;
            port = bound_port(fd);
        }
        sl_log(SL_LOG_INFO, "gw", "listening on %s:%u (%s, %s, %u I/O threads)", specs[j].host,
               port, specs[j].name, tls != NULL ? "TLS: h2, http/1.1" : "cleartext: h2c, HTTP/1.1",
               io_threads);
    }
    for (unsigned t = 0; t < io_threads; t++) {
        initialised = t + 1;
        if (thread_init(s, &s->threads[t], t, tls, fds + t * spec_count) != SL_OK) {
            snprintf(err, errlen, "cannot attach listening socket to loop %u", t);
            rv = SL_EIO;
            goto fail;
        }
        for (size_t j = 0; j < spec_count; j++)
            fds[t * spec_count + j] = -1; /* now owned by the loop's handle */
    }
    for (unsigned t = 0; t < io_threads; t++) {
        if (uv_thread_create(&s->threads[t].tid, thread_main, &s->threads[t]) != 0) {
            snprintf(err, errlen, "cannot start I/O thread %u", t);
            /* Threads already running are stopped the normal way. */
            for (unsigned k = t; k < io_threads; k++)
                s->threads[k].phase = PHASE_STOPPED;
            free(fds);
            gw_server_stop(s, 0);
            gw_server_free(s);
            return SL_EIO;
        }
        s->threads[t].started = true;
    }
    free(fds);
    *out = s;
    return SL_OK;

fail:
    for (size_t i = 0; i < io_threads * spec_count; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    free(fds);
    for (unsigned t = 0; t < initialised; t++) {
        uv_walk(&s->threads[t].loop, close_walk, NULL);
        uv_run(&s->threads[t].loop, UV_RUN_DEFAULT);
        thread_fini(&s->threads[t]);
    }
    free(s->threads);
    free(s);
    return rv;
}

void gw_server_stop(struct gw_server *s, uint64_t grace_ms)
{
    s->grace_ms = grace_ms;
    for (unsigned t = 0; t < s->thread_count; t++)
        if (s->threads[t].started)
            uv_async_send(&s->threads[t].stop_async);
    for (unsigned t = 0; t < s->thread_count; t++) {
        if (!s->threads[t].started)
            continue;
        uv_thread_join(&s->threads[t].tid);
        s->threads[t].started = false;
    }
}

void gw_server_free(struct gw_server *s)
{
    if (s == NULL)
        return;
    for (unsigned t = 0; t < s->thread_count; t++) {
        struct io_thread *th = &s->threads[t];
        if (th->ls.read_buf == NULL)
            continue; /* never initialised */
        uv_walk(&th->loop, close_walk, NULL);
        uv_run(&th->loop, UV_RUN_DEFAULT);
        thread_fini(th);
    }
    free(s->threads);
    free(s);
}
