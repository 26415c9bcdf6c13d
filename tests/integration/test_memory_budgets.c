/*
 * test_memory_budgets.c -- the protocol layer's memory bounds against the
 * real sluiced, with nghttp2 client sessions over raw sockets (libcurl
 * cannot hold a window at 0 or keep uploading after an answer):
 *
 *  1. Twenty connections each upload eight 2 MiB bodies without an
 *     Authorization header. Each gets 403 MissingAuthenticationToken before
 *     its body was sent, the bodies are discarded, the server's RSS stays
 *     within a bound far below what buffering them would take, and a
 *     signed tenant keeps being served meanwhile.
 *  2. A client that advertises SETTINGS_INITIAL_WINDOW_SIZE 0 and never
 *     opens it: its answer is reset with CANCEL after the stall timeout
 *     (30 s), and the response budget shown by /metrics is back to 0.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <nghttp2/nghttp2.h>

#include "it_harness.h"

#define CONNS 20
#define STREAMS 8
#define BODY_LEN ((size_t)2 << 20)
#define STALL_WAIT_MS 45000

static struct it_server srv;

struct stream {
    int32_t id;
    size_t sent;         /* body bytes handed to nghttp2 */
    size_t sent_at_head; /* ... when the response headers arrived */
    int status;
    bool closed;
    uint32_t error_code;
};

struct client {
    int fd;
    nghttp2_session *session;
    struct stream streams[STREAMS];
    size_t count;
    bool dead;
};

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static long rss_kb(pid_t pid)
{
    char path[64], line[256];
    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    long kb = -1;
    while (f != NULL && fgets(line, sizeof(line), f) != NULL) {
        if (strncmp(line, "VmRSS:", 6) == 0) {
            kb = strtol(line + 6, NULL, 10);
        }
    }
    if (f != NULL) {
        fclose(f);
    }
    return kb;
}

static struct stream *find_stream(struct client *c, int32_t id)
{
    for (size_t i = 0; i < c->count; i++) {
        if (c->streams[i].id == id) {
            return &c->streams[i];
        }
    }
    return NULL;
}

static ssize_t on_send(nghttp2_session *s, const uint8_t *data, size_t len, int flags, void *user)
{
    struct client *c = user;
    ssize_t n = send(c->fd, data, len, MSG_NOSIGNAL);
    if (n < 0) {
        return errno == EAGAIN ? NGHTTP2_ERR_WOULDBLOCK : NGHTTP2_ERR_CALLBACK_FAILURE;
    }
    return n;
}

static ssize_t on_recv(nghttp2_session *s, uint8_t *buf, size_t len, int flags, void *user)
{
    struct client *c = user;
    ssize_t n = recv(c->fd, buf, len, 0);
    if (n < 0) {
        return errno == EAGAIN ? NGHTTP2_ERR_WOULDBLOCK : NGHTTP2_ERR_CALLBACK_FAILURE;
    }
    return n == 0 ? NGHTTP2_ERR_EOF : n;
}

static int on_header(nghttp2_session *s, const nghttp2_frame *frame, const uint8_t *name,
                     size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags,
                     void *user)
{
    struct stream *st = find_stream(user, frame->hd.stream_id);
    if (st != NULL && namelen == 7 && memcmp(name, ":status", 7) == 0) {
        st->status = atoi((const char *)value);
        st->sent_at_head = st->sent;
    }
    return 0;
}

static int on_close(nghttp2_session *s, int32_t id, uint32_t error_code, void *user)
{
    struct stream *st = find_stream(user, id);
    if (st != NULL) {
        st->closed = true;
        st->error_code = error_code;
    }
    return 0;
}

static ssize_t read_body(nghttp2_session *s, int32_t id, uint8_t *buf, size_t length,
                         uint32_t *data_flags, nghttp2_data_source *source, void *user)
{
    struct stream *st = source->ptr;
    size_t n = length < BODY_LEN - st->sent ? length : BODY_LEN - st->sent;
    memset(buf, '"', n);
    st->sent += n;
    if (st->sent == BODY_LEN) {
        *data_flags |= NGHTTP2_DATA_FLAG_EOF;
    }
    return (ssize_t)n;
}

static bool client_open(struct client *c, uint32_t initial_window)
{
    memset(c, 0, sizeof(*c));
    c->fd = it_connect(&srv);
    if (c->fd < 0) {
        return false;
    }
    fcntl(c->fd, F_SETFL, fcntl(c->fd, F_GETFL) | O_NONBLOCK);
    nghttp2_session_callbacks *cbs;
    nghttp2_session_callbacks_new(&cbs);
    nghttp2_session_callbacks_set_send_callback(cbs, on_send);
    nghttp2_session_callbacks_set_recv_callback(cbs, on_recv);
    nghttp2_session_callbacks_set_on_header_callback(cbs, on_header);
    nghttp2_session_callbacks_set_on_stream_close_callback(cbs, on_close);
    nghttp2_session_client_new(&c->session, cbs, c);
    nghttp2_session_callbacks_del(cbs);
    nghttp2_settings_entry iv[] = {{NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, initial_window}};
    nghttp2_submit_settings(c->session, NGHTTP2_FLAG_NONE, iv, 1);
    return true;
}

static void client_close(struct client *c)
{
    nghttp2_session_del(c->session);
    close(c->fd);
}

#define NV(n, v)                                                                                   \
    (nghttp2_nv)                                                                                   \
    {                                                                                              \
        (uint8_t *)(n), (uint8_t *)(v), strlen(n), strlen(v), NGHTTP2_NV_FLAG_NONE                 \
    }

/* An unsigned SendMessage; with_body: a 2 MiB body follows its headers. */
static void submit_unsigned(struct client *c, bool with_body)
{
    struct stream *st = &c->streams[c->count++];
    char host[32], length[24];
    snprintf(host, sizeof(host), "127.0.0.1:%u", srv.port);
    snprintf(length, sizeof(length), "%zu", BODY_LEN);
    nghttp2_nv nva[] = {
        NV(":method", "POST"),
        NV(":path", "/"),
        NV(":scheme", "http"),
        NV(":authority", host),
        NV("x-amz-target", "AmazonSQS.SendMessage"),
        NV("content-type", "application/x-amz-json-1.0"),
        NV("content-length", length),
    };
    nghttp2_data_provider prd = {.source.ptr = st, .read_callback = read_body};
    st->id = nghttp2_submit_request(c->session, NULL, nva, with_body ? 7 : 6,
                                    with_body ? &prd : NULL, NULL);
}

/* One round of I/O on every client: send what flow control allows, read
 * what arrived (waiting at most wait_ms for anything). */
static void pump(struct client *cs, size_t n, int wait_ms)
{
    struct pollfd pfd[CONNS + 1];
    for (size_t i = 0; i < n; i++) {
        if (!cs[i].dead && nghttp2_session_send(cs[i].session) != 0) {
            cs[i].dead = true;
        }
        pfd[i] = (struct pollfd){.fd = cs[i].dead ? -1 : cs[i].fd, .events = POLLIN};
    }
    if (poll(pfd, n, wait_ms) <= 0) {
        return;
    }
    for (size_t i = 0; i < n; i++) {
        if (!cs[i].dead && (pfd[i].revents & (POLLIN | POLLHUP | POLLERR)) &&
            nghttp2_session_recv(cs[i].session) != 0) {
            cs[i].dead = true;
        }
    }
}

static bool all_closed(struct client *cs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; !cs[i].dead && j < cs[i].count; j++) {
            if (!cs[i].streams[j].closed) {
                return false;
            }
        }
    }
    return true;
}

static bool signed_list_queues(void)
{
    struct it_response r;
    bool ok = it_sqs(&srv, "ListQueues", "{}", IT_KEY, IT_SECRET, &r) == 0 && r.status == 200;
    it_response_free(&r);
    return ok;
}

/* A sample of /metrics: the value of the line starting with prefix, or -1. */
static long long metric(const char *prefix)
{
    struct it_request req = {
        .method = "GET",
        .path = "/metrics",
        .access_key = IT_ADMIN_KEY,
        .secret = IT_ADMIN_SECRET,
        .admin = true,
    };
    struct it_response r;
    long long v = -1;
    if (it_request(&srv, &req, &r) == 0 && r.status == 200) {
        for (const char *p = r.body; (p = strstr(p, prefix)) != NULL; p++) {
            if (p == r.body || p[-1] == '\n') {
                v = strtoll(p + strlen(prefix), NULL, 10);
                break;
            }
        }
    }
    it_response_free(&r);
    return v;
}

static void unsigned_uploads_are_refused_before_their_bodies(void)
{
    long base = rss_kb(srv.pid);
    IT_CHECK(base > 0);
    static struct client cs[CONNS];
    for (size_t i = 0; i < CONNS; i++) {
        IT_REQUIRE(client_open(&cs[i], 65535));
        for (size_t j = 0; j < STREAMS; j++) {
            submit_unsigned(&cs[i], true);
        }
    }
    long peak = base;
    int served = 0, rounds = 0;
    uint64_t deadline = now_ms() + 40000;
    while (!all_closed(cs, CONNS) && now_ms() < deadline) {
        pump(cs, CONNS, 100);
        long rss = rss_kb(srv.pid);
        peak = rss > peak ? rss : peak;
        if (++rounds % 50 == 0) {
            served += signed_list_queues();
            IT_CHECK(served == rounds / 50);
        }
    }
    IT_CHECK(all_closed(cs, CONNS));
    size_t refused_early = 0;
    for (size_t i = 0; i < CONNS; i++) {
        IT_CHECK(!cs[i].dead);
        for (size_t j = 0; j < cs[i].count; j++) {
            struct stream *st = &cs[i].streams[j];
            /* Answered while most of the body was still unsent: the server
             * did not wait for it. */
            refused_early += st->status == 403 && st->sent_at_head < BODY_LEN;
        }
        client_close(&cs[i]);
    }
    IT_CHECK(refused_early == (size_t)CONNS * STREAMS);
    /* 320 MiB were uploaded; buffering them would show. */
    fprintf(stderr, "rss: %ld kB before, %ld kB at most during the flood\n", base, peak);
    IT_CHECK(peak - base < 96L * 1024);
    IT_CHECK(signed_list_queues());
    IT_CHECK(metric("sluice_memory_budget_bytes{budget=\"request_body\"} ") == 0);
}

static void a_reader_that_never_opens_its_window_is_cut_off(void)
{
    struct client c;
    IT_REQUIRE(client_open(&c, 0));
    submit_unsigned(&c, false); /* answered 403 with a body that cannot move */
    uint64_t start = now_ms();
    while (c.streams[0].status == 0 && now_ms() - start < 5000) {
        pump(&c, 1, 100);
    }
    IT_CHECK(c.streams[0].status == 403);
    IT_CHECK(!c.streams[0].closed);
    IT_CHECK(metric("sluice_memory_budget_bytes{budget=\"response\"} ") > 0);
    while (!c.streams[0].closed && !c.dead && now_ms() - start < STALL_WAIT_MS) {
        pump(&c, 1, 200);
    }
    uint64_t took = now_ms() - start;
    IT_CHECK(c.streams[0].closed);
    IT_CHECK(c.streams[0].error_code == NGHTTP2_CANCEL);
    IT_CHECK(took >= 29000);
    IT_CHECK(metric("sluice_memory_budget_bytes{budget=\"response\"} ") == 0);
    IT_CHECK(metric("sluice_memory_budget_refusals_total{reason=\"stalled_response\"} ") == 1);
    client_close(&c);
}

int main(void)
{
    struct it_options opt = {.admin = true};
    IT_REQUIRE(it_server_start(&srv, &opt) == 0);
    unsigned_uploads_are_refused_before_their_bodies();
    a_reader_that_never_opens_its_window_is_cut_off();
    IT_CHECK(it_server_stop(&srv) == 0);
    it_server_cleanup(&srv);
    return it_summary();
}
