/*
 * test_http1.c -- the real sluiced over HTTP/1.1: libcurl (its own SigV4
 * signer, JSON 1.0 bodies) for keep-alive, Expect and a long poll; raw
 * sockets with requests signed by sigv4_sign_sqs_request for what curl
 * will not send (pipelining, a hand-chunked body, a client that goes away
 * mid-poll, an unauthenticated body, smuggling shapes, a client that never
 * reads); /metrics on the admin listener over HTTP/1.1 with the bearer
 * token; SIGTERM with an idle keep-alive connection and a long poll open.
 * Prints "N passed, N failed".
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "it_harness.h"
#include "sigv4.h"
#include "sl.h"

#define SQS_JSON "application/x-amz-json-1.0"
#define TOKEN "h1-metrics-token"

static struct it_server srv;

static long metric(const char *prefix);

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* ---- libcurl over HTTP/1.1 -------------------------------------------------- */

static size_t on_bytes(char *p, size_t size, size_t n, void *user)
{
    sl_buf_append(user, p, size * n);
    return size * n;
}

/* One signed call on the easy handle h (reused: its connection stays
 * open). Returns the status; the body goes to body (reset first). */
static long h1_call(CURL *h, const char *action, const char *json, const char *extra_header,
                    struct sl_buf *body)
{
    char url[128], target[128], userpwd[128];
    snprintf(url, sizeof(url), "%s/", srv.base_url);
    snprintf(target, sizeof(target), "x-amz-target: AmazonSQS.%s", action);
    snprintf(userpwd, sizeof(userpwd), "%s:%s", IT_KEY, IT_SECRET);
    struct curl_slist *hdrs = curl_slist_append(NULL, target);
    hdrs = curl_slist_append(hdrs, "content-type: " SQS_JSON);
    if (extra_header != NULL)
        hdrs = curl_slist_append(hdrs, extra_header);
    sl_buf_reset(body);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, json);
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)strlen(json));
    curl_easy_setopt(h, CURLOPT_AWS_SIGV4, "aws:amz:" IT_REGION ":sqs");
    curl_easy_setopt(h, CURLOPT_USERPWD, userpwd);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_bytes);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, body);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 30000L);
    long status = 0;
    if (curl_easy_perform(h) == CURLE_OK)
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(hdrs);
    return status;
}

static long h1_call_once(const char *action, const char *json, struct sl_buf *body)
{
    CURL *h = curl_easy_init();
    long status = h1_call(h, action, json, NULL, body);
    curl_easy_cleanup(h);
    return status;
}

static char queue_url[256];

static void keep_alive_one_connection(void)
{
    CURL *h = curl_easy_init();
    struct sl_buf body;
    sl_buf_init(&body);
    long connects = 0, n;
    IT_CHECK(h1_call(h, "CreateQueue", "{\"QueueName\":\"h1-q\"}", NULL, &body) == 200);
    const char *u = strstr(body.p, "\"QueueUrl\":\"");
    IT_REQUIRE(u != NULL);
    snprintf(queue_url, sizeof(queue_url), "%.*s", (int)strcspn(u + 12, "\""), u + 12);
    curl_easy_getinfo(h, CURLINFO_NUM_CONNECTS, &n);
    connects += n;
    long version = 0;
    curl_easy_getinfo(h, CURLINFO_HTTP_VERSION, &version);
    IT_CHECK(version == CURL_HTTP_VERSION_1_1);
    for (int i = 0; i < 3; i++) {
        IT_CHECK(h1_call(h, "ListQueues", "{}", NULL, &body) == 200);
        IT_CHECK(strstr(body.p, "h1-q") != NULL);
        curl_easy_getinfo(h, CURLINFO_NUM_CONNECTS, &n);
        connects += n;
    }
    IT_CHECK(connects == 1); /* four requests, one connection */
    sl_buf_free(&body);
    curl_easy_cleanup(h);
}

static void expect_continue_with_curl(void)
{
    CURL *h = curl_easy_init();
    struct sl_buf body;
    sl_buf_init(&body);
    char json[512];
    snprintf(json, sizeof(json), "{\"QueueUrl\":\"%s\",\"MessageBody\":\"expected\"}", queue_url);
    IT_CHECK(h1_call(h, "SendMessage", json, "Expect: 100-continue", &body) == 200);
    IT_CHECK(strstr(body.p, "MD5OfMessageBody") != NULL);
    sl_buf_free(&body);
    curl_easy_cleanup(h);
}

struct poll_call {
    char json[512];
    struct sl_buf body;
    long status;
};

static void *long_poll(void *arg)
{
    struct poll_call *c = arg;
    c->status = h1_call_once("ReceiveMessage", c->json, &c->body);
    return NULL;
}

static void long_poll_woken_by_send(void)
{
    struct sl_buf body;
    sl_buf_init(&body);
    /* Empty the queue of what earlier checks sent. */
    char purge[512];
    snprintf(purge, sizeof(purge), "{\"QueueUrl\":\"%s\"}", queue_url);
    IT_CHECK(h1_call_once("PurgeQueue", purge, &body) == 200);

    struct poll_call call;
    sl_buf_init(&call.body);
    snprintf(call.json, sizeof(call.json), "{\"QueueUrl\":\"%s\",\"WaitTimeSeconds\":15}",
             queue_url);
    uint64_t t0 = now_ms();
    pthread_t th;
    IT_REQUIRE(pthread_create(&th, NULL, long_poll, &call) == 0);
    sleep_ms(500);
    char json[512];
    snprintf(json, sizeof(json), "{\"QueueUrl\":\"%s\",\"MessageBody\":\"wake-up\"}", queue_url);
    IT_CHECK(h1_call_once("SendMessage", json, &body) == 200);
    pthread_join(th, NULL);
    IT_CHECK(call.status == 200);
    IT_CHECK(call.body.p != NULL && strstr(call.body.p, "wake-up") != NULL);
    IT_CHECK(now_ms() - t0 < 10000);
    sl_buf_free(&call.body);
    sl_buf_free(&body);
}

/* ---- raw sockets with requests we sign ----------------------------------------- */

/* Appends a signed POST of action with body to out; chunked sends the
 * body in two chunks instead of with a Content-Length; expect adds
 * Expect: 100-continue and leaves the body out (the caller sends it). */
static void signed_request(struct sl_buf *out, const char *action, const char *body, bool chunked,
                           bool expect)
{
    char host[64], amz_date[17], target[96];
    snprintf(host, sizeof(host), "127.0.0.1:%u", (unsigned)srv.port);
    snprintf(target, sizeof(target), "AmazonSQS.%s", action);
    const struct sigv4_header extra[] = {
        {SL_SLICE_LIT("content-type"), SL_SLICE_LIT(SQS_JSON)},
        {SL_SLICE_LIT("x-amz-target"), sl_slice_cstr(target)},
    };
    const struct sigv4_credentials cred = {IT_KEY, IT_SECRET, IT_REGION, "sqs"};
    struct sl_buf auth;
    sl_buf_init(&auth);
    IT_REQUIRE(sigv4_sign_sqs_request(&cred, host, "/", extra, 2, sl_slice_cstr(body),
                                      (int64_t)time(NULL), amz_date, &auth) == SL_OK);
    sl_buf_printf(out,
                  "POST / HTTP/1.1\r\nHost: %s\r\nContent-Type: " SQS_JSON "\r\n"
                  "X-Amz-Target: %s\r\nX-Amz-Date: %s\r\nAuthorization: %s\r\n",
                  host, target, amz_date, auth.p);
    size_t n = strlen(body);
    if (chunked) {
        size_t half = n / 2;
        sl_buf_printf(out,
                      "Transfer-Encoding: chunked\r\n\r\n%zx\r\n%.*s\r\n%zx\r\n%s\r\n0\r\n\r\n",
                      half, (int)half, body, n - half, body + half);
    } else if (expect) {
        sl_buf_printf(out, "Content-Length: %zu\r\nExpect: 100-continue\r\n\r\n", n);
    } else {
        sl_buf_printf(out, "Content-Length: %zu\r\n\r\n%s", n, body);
    }
    sl_buf_free(&auth);
}

static bool send_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w <= 0)
            return false;
        p += w;
        n -= (size_t)w;
    }
    return true;
}

/* Reads one whole response (headers and Content-Length body) from fd,
 * keeping what follows in acc. Returns its status, or 0 on EOF/timeout;
 * the response's text goes to resp. */
static int read_response(int fd, struct sl_buf *acc, struct sl_buf *resp)
{
    sl_buf_reset(resp);
    for (;;) {
        const char *end = acc->n > 0 ? strstr(acc->p, "\r\n\r\n") : NULL;
        if (end != NULL) {
            size_t head = (size_t)(end + 4 - acc->p);
            const char *cl = strstr(acc->p, "content-length: ");
            size_t len = cl != NULL && cl < end ? strtoul(cl + 16, NULL, 10) : 0;
            if (acc->n >= head + len) {
                sl_buf_append(resp, acc->p, head + len);
                memmove(acc->p, acc->p + head + len, acc->n - head - len);
                acc->n -= head + len;
                acc->p[acc->n] = '\0';
                return resp->n > 12 ? atoi(resp->p + 9) : 0;
            }
        }
        char buf[4096];
        ssize_t r = recv(fd, buf, sizeof(buf), 0);
        if (r <= 0)
            return 0;
        sl_buf_append(acc, buf, (size_t)r);
    }
}

static int connect_with_timeout(int seconds)
{
    int fd = it_connect(&srv);
    if (fd >= 0) {
        struct timeval tv = {seconds, 0};
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    }
    return fd;
}

static void pipelined_answers_in_order(void)
{
    char json[512];
    snprintf(json, sizeof(json), "{\"QueueUrl\":\"%s\",\"MessageBody\":\"piped\"}", queue_url);
    struct sl_buf req, acc, resp;
    sl_buf_init(&req);
    sl_buf_init(&acc);
    sl_buf_init(&resp);
    signed_request(&req, "SendMessage", json, false, false);
    signed_request(&req, "ListQueues", "{}", false, false);
    signed_request(&req, "GetQueueUrl", "{\"QueueName\":\"h1-q\"}", false, false);
    int fd = connect_with_timeout(10);
    IT_REQUIRE(fd >= 0);
    IT_CHECK(send_all(fd, req.p, req.n)); /* all three in one write */
    IT_CHECK(read_response(fd, &acc, &resp) == 200);
    IT_CHECK(strstr(resp.p, "MD5OfMessageBody") != NULL);
    IT_CHECK(read_response(fd, &acc, &resp) == 200);
    IT_CHECK(strstr(resp.p, "QueueUrls") != NULL);
    IT_CHECK(read_response(fd, &acc, &resp) == 200);
    IT_CHECK(strstr(resp.p, "\"QueueUrl\"") != NULL && strstr(resp.p, "QueueUrls") == NULL);
    close(fd);
    sl_buf_free(&req);
    sl_buf_free(&acc);
    sl_buf_free(&resp);
}

static void chunked_body(void)
{
    char json[512];
    snprintf(json, sizeof(json), "{\"QueueUrl\":\"%s\",\"MessageBody\":\"in two chunks\"}",
             queue_url);
    struct sl_buf req, acc, resp;
    sl_buf_init(&req);
    sl_buf_init(&acc);
    sl_buf_init(&resp);
    signed_request(&req, "SendMessage", json, true, false);
    int fd = connect_with_timeout(10);
    IT_REQUIRE(fd >= 0);
    IT_CHECK(send_all(fd, req.p, req.n));
    IT_CHECK(read_response(fd, &acc, &resp) == 200);
    IT_CHECK(strstr(resp.p, "MD5OfMessageBody") != NULL);
    close(fd);
    sl_buf_free(&req);
    sl_buf_free(&acc);
    sl_buf_free(&resp);
}

static void expect_continue_raw(void)
{
    char json[512];
    snprintf(json, sizeof(json), "{\"QueueUrl\":\"%s\",\"MessageBody\":\"after 100\"}", queue_url);
    struct sl_buf req, acc, resp;
    sl_buf_init(&req);
    sl_buf_init(&acc);
    sl_buf_init(&resp);
    signed_request(&req, "SendMessage", json, false, true);
    int fd = connect_with_timeout(10);
    IT_REQUIRE(fd >= 0);
    IT_CHECK(send_all(fd, req.p, req.n));
    IT_CHECK(read_response(fd, &acc, &resp) == 100); /* before the body */
    IT_CHECK(send_all(fd, json, strlen(json)));
    IT_CHECK(read_response(fd, &acc, &resp) == 200);
    IT_CHECK(strstr(resp.p, "MD5OfMessageBody") != NULL);
    close(fd);
    sl_buf_free(&req);
    sl_buf_free(&acc);
    sl_buf_free(&resp);
}

/* An unauthenticated request announcing a 2 MB body is answered from its
 * headers: the answer arrives although no body byte was sent. */
static void unauthenticated_body_refused_before_reading(void)
{
    for (int i = 0; i < 5; i++) {
        static const char req[] = "POST / HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                  "Content-Type: " SQS_JSON "\r\n"
                                  "X-Amz-Target: AmazonSQS.SendMessage\r\n"
                                  "Content-Length: 2000000\r\n\r\n";
        struct sl_buf acc, resp;
        sl_buf_init(&acc);
        sl_buf_init(&resp);
        int fd = connect_with_timeout(5);
        IT_REQUIRE(fd >= 0);
        IT_CHECK(send_all(fd, req, sizeof(req) - 1));
        int status = read_response(fd, &acc, &resp);
        IT_CHECK(status >= 400 && status < 500);
        IT_CHECK(strstr(resp.p, "connection: close\r\n") != NULL);
        close(fd);
        sl_buf_free(&acc);
        sl_buf_free(&resp);
    }
    IT_CHECK(it_healthz(&srv));
}

/* A body over the cap is answered 413 from its Content-Length while the
 * client is still sending it, and the client reads that answer. (The
 * lingering close that protects the answer over a real network cannot be
 * told apart on loopback, where the answer is delivered before any reset.) */
static void too_large_body_answered_while_sending(void)
{
    static const char head[] = "POST / HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                               "Content-Type: " SQS_JSON "\r\n"
                               "Content-Length: 3300000\r\n\r\n"; /* past GW_MAX_REQUEST_BODY */
    struct sl_buf acc, resp;
    sl_buf_init(&acc);
    sl_buf_init(&resp);
    int fd = connect_with_timeout(10);
    IT_REQUIRE(fd >= 0);
    IT_CHECK(send_all(fd, head, sizeof(head) - 1));
    static char chunk[256 * 1024];
    memset(chunk, 'x', sizeof(chunk));
    for (int i = 0; i < 4; i++)
        (void)send_all(fd, chunk, sizeof(chunk)); /* may fail once the server is done */
    IT_CHECK(read_response(fd, &acc, &resp) == 413);
    IT_CHECK(strstr(resp.p, "connection: close\r\n") != NULL);
    close(fd);
    sl_buf_free(&acc);
    sl_buf_free(&resp);
    IT_CHECK(metric("sluice_http_refused_total{listener=\"sqs\",reason=\"body_too_large\"} ") >= 1);
}

static void smuggling_is_refused(void)
{
    static const char cl_te[] = "POST / HTTP/1.1\r\nHost: q\r\nContent-Length: 5\r\n"
                                "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n";
    static const char *const shapes[] = {
        cl_te,
        "POST / HTTP/1.1\r\nHost: q\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!",
        "POST / HTTP/1.1\r\nHost: q\r\nTransfer-Encoding: gzip\r\n\r\nxxxx",
        "GET / HTTP/1.1\r\nHost: q\r\nX-A: b\r\n folded\r\n\r\n",
        "GET / HTTP/1.1\r\n\r\n",
    };
    for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
        char reply[2048];
        long n = it_raw_exchange(&srv, shapes[i], strlen(shapes[i]), reply, sizeof(reply), 10000);
        IT_CHECK(n > 0 && strncmp(reply, "HTTP/1.1 400 ", 13) == 0);
    }
    IT_CHECK(it_healthz(&srv));
}

/* The first bytes decide the version even when they come in pieces: "P"
 * could start the HTTP/2 preface or "POST", and a preface split in two is
 * still HTTP/2. */
static void version_from_split_first_bytes(void)
{
    struct sl_buf acc, resp;
    sl_buf_init(&acc);
    sl_buf_init(&resp);
    int fd = connect_with_timeout(10);
    IT_REQUIRE(fd >= 0);
    IT_CHECK(send_all(fd, "P", 1));
    sleep_ms(200);
    static const char rest[] = "OST /healthz HTTP/1.1\r\nHost: q\r\nContent-Length: 0\r\n\r\n";
    IT_CHECK(send_all(fd, rest, sizeof(rest) - 1));
    /* An HTTP/1.1 answer (the API's: POST /healthz is not the health check). */
    IT_CHECK(read_response(fd, &acc, &resp) >= 400);
    IT_CHECK(strncmp(resp.p, "HTTP/1.1 ", 9) == 0 && strstr(resp.p, "x-amzn-requestid: "));
    close(fd);

    fd = connect_with_timeout(10);
    IT_REQUIRE(fd >= 0);
    IT_CHECK(send_all(fd, "PRI * HTTP/2.0\r\n", 16));
    sleep_ms(200);
    /* The rest of the preface, then an empty SETTINGS frame. */
    static const char tail[] = "\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00";
    IT_CHECK(send_all(fd, tail, sizeof(tail) - 1));
    unsigned char frame[9];
    size_t got = 0;
    while (got < sizeof(frame)) {
        ssize_t r = recv(fd, frame + got, sizeof(frame) - got, 0);
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    IT_CHECK(got == sizeof(frame) && frame[3] == 0x04); /* the server's SETTINGS */
    close(fd);
    sl_buf_free(&acc);
    sl_buf_free(&resp);
}

/* ---- the admin listener ----------------------------------------------------------- */

static char *metrics(void)
{
    struct it_admin_call call = {.path = "/metrics", .token = TOKEN, .http1 = true};
    struct it_response r;
    if (it_admin_request(&srv, &call, &r) != 0 || r.status != 200) {
        it_response_free(&r);
        return NULL;
    }
    IT_CHECK(r.http_version == CURL_HTTP_VERSION_1_1);
    char *body = strdup(r.body);
    it_response_free(&r);
    return body;
}

/* The value of the sample whose line starts with prefix, or -1. */
static long metric(const char *prefix)
{
    char *m = metrics();
    if (m == NULL)
        return -1;
    long v = -1;
    for (const char *p = m; (p = strstr(p, prefix)) != NULL; p++) {
        if (p == m || p[-1] == '\n') {
            v = strtol(p + strlen(prefix), NULL, 10);
            break;
        }
    }
    free(m);
    return v;
}

static void metrics_over_http1(void)
{
    char *m = metrics();
    IT_REQUIRE(m != NULL);
    IT_CHECK(strstr(m, "sluice_http_connections_total{listener=\"sqs\",version=\"1.1\"} ") != NULL);
    IT_CHECK(strstr(m, "sluice_http_connections_total{listener=\"admin\",version=\"1.1\"} ") !=
             NULL);
    free(m);
    IT_CHECK(metric("sluice_http_refused_total{listener=\"sqs\",reason=\"bad_request\"} ") >= 5);
    IT_CHECK(metric("sluice_http_connections_total{listener=\"sqs\",version=\"1.1\"} ") >= 5);
}

static const char *const long_poll_gauge = "sluice_tenant_long_polls{tenant=\"" IT_TENANT "\"} ";
static char poll_json[512]; /* a ReceiveMessage of the empty queue h1-poll, 20 s */

/* A client that asks for a long poll and goes away: the poll is cancelled
 * (the tenant's long-poll gauge drops back) and the server keeps serving. */
static void disconnect_mid_poll(void)
{
    const char *gauge = long_poll_gauge;
    /* A queue of its own, so that nothing is there to answer the poll. */
    struct sl_buf body;
    sl_buf_init(&body);
    IT_CHECK(h1_call_once("CreateQueue", "{\"QueueName\":\"h1-poll\"}", &body) == 200);
    const char *u = body.p != NULL ? strstr(body.p, "\"QueueUrl\":\"") : NULL;
    IT_REQUIRE(u != NULL);
    snprintf(poll_json, sizeof(poll_json), "{\"QueueUrl\":\"%.*s\",\"WaitTimeSeconds\":20}",
             (int)strcspn(u + 12, "\""), u + 12);
    sl_buf_free(&body);

    struct sl_buf req;
    sl_buf_init(&req);
    signed_request(&req, "ReceiveMessage", poll_json, false, false);
    int fd = connect_with_timeout(10);
    IT_REQUIRE(fd >= 0);
    IT_CHECK(send_all(fd, req.p, req.n));
    long polls = -1;
    for (int i = 0; i < 50 && polls != 1; i++) {
        sleep_ms(100);
        polls = metric(gauge);
    }
    IT_CHECK(polls == 1);
    close(fd);
    for (int i = 0; i < 50 && polls != 0; i++) {
        sleep_ms(100);
        polls = metric(gauge);
    }
    IT_CHECK(polls == 0);
    IT_CHECK(it_healthz(&srv));
    sl_buf_free(&req);
}

/* shutdown(SHUT_WR) after the request means "nothing more to send", not
 * "gone" (RFC 9112 §9.6): a SendMessage is answered, and a 20-second long
 * poll ends its wait at once and answers (empty) rather than being
 * cancelled unanswered. The socket's 10-second receive timeout is the
 * bound: the poll's own wait would take 20. */
static void half_close_is_answered(void)
{
    struct sl_buf req, acc, resp;
    sl_buf_init(&req);
    sl_buf_init(&acc);
    sl_buf_init(&resp);
    char send_json[600];
    const char *url = strstr(poll_json, "\"QueueUrl\":\"");
    IT_REQUIRE(url != NULL);
    snprintf(send_json, sizeof(send_json), "{\"QueueUrl\":\"%.*s\",\"MessageBody\":\"half\"}",
             (int)strcspn(url + 12, "\""), url + 12);
    signed_request(&req, "SendMessage", send_json, false, false);
    int fd = connect_with_timeout(10);
    IT_REQUIRE(fd >= 0);
    IT_CHECK(send_all(fd, req.p, req.n));
    IT_CHECK(shutdown(fd, SHUT_WR) == 0);
    IT_CHECK(read_response(fd, &acc, &resp) == 200);
    IT_CHECK(strstr(resp.p, "\"MessageId\"") != NULL);
    IT_CHECK(strstr(resp.p, "connection: close\r\n") != NULL);
    char b;
    IT_CHECK(recv(fd, &b, 1, 0) == 0);
    close(fd);

    /* Took the message: the queue is empty again for the poll. */
    struct sl_buf body;
    sl_buf_init(&body);
    IT_CHECK(h1_call_once("ReceiveMessage", poll_json, &body) == 200);
    const char *handle = body.p != NULL ? strstr(body.p, "\"ReceiptHandle\":\"") : NULL;
    IT_REQUIRE(handle != NULL);
    char del_json[1200];
    snprintf(del_json, sizeof(del_json), "{\"QueueUrl\":\"%.*s\",\"ReceiptHandle\":\"%.*s\"}",
             (int)strcspn(url + 12, "\""), url + 12, (int)strcspn(handle + 17, "\""), handle + 17);
    IT_CHECK(h1_call_once("DeleteMessage", del_json, &body) == 200);
    sl_buf_free(&body);

    sl_buf_reset(&req);
    signed_request(&req, "ReceiveMessage", poll_json, false, false);
    fd = connect_with_timeout(10);
    IT_REQUIRE(fd >= 0);
    IT_CHECK(send_all(fd, req.p, req.n));
    IT_CHECK(shutdown(fd, SHUT_WR) == 0);
    sl_buf_reset(&acc);
    IT_CHECK(read_response(fd, &acc, &resp) == 200);
    IT_CHECK(resp.p != NULL && strstr(resp.p, "\"Messages\":[{") == NULL);
    IT_CHECK(recv(fd, &b, 1, 0) == 0);
    close(fd);
    IT_CHECK(metric(long_poll_gauge) == 0);
    IT_CHECK(it_healthz(&srv));
    sl_buf_free(&req);
    sl_buf_free(&acc);
    sl_buf_free(&resp);
}

/* A client that pipelines requests and never reads its socket: once the
 * answers stop moving for the stall timeout (30 s) the server closes the
 * connection rather than hold them. */
static void non_reader_is_cut(void)
{
    int fd = it_connect(&srv);
    IT_REQUIRE(fd >= 0);
    int small = 4096;
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
    struct timeval tv = {1, 0};
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    static const char one[] = "GET /healthz HTTP/1.1\r\nHost: q\r\n\r\n";
    char burst[sizeof(one) * 256];
    for (size_t i = 0; i < 256; i++)
        memcpy(burst + i * (sizeof(one) - 1), one, sizeof(one) - 1);
    uint64_t t0 = now_ms();
    bool closed = false;
    /* Keep writing (the server stops reading once its backlog is full);
     * a write that fails with a reset means the server closed on us. */
    while (!closed && now_ms() - t0 < 50000) {
        ssize_t w = send(fd, burst, 256 * (sizeof(one) - 1), MSG_NOSIGNAL);
        if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
            closed = true;
        else if (w < 0)
            sleep_ms(500);
    }
    IT_CHECK(closed);
    IT_CHECK(now_ms() - t0 >= 25000); /* not before the stall timeout */
    close(fd);
    IT_CHECK(metric("sluice_http_refused_total{listener=\"sqs\",reason=\"stalled\"} ") >= 1);
    IT_CHECK(it_healthz(&srv));
}

/* SIGTERM: an idle keep-alive connection is closed at once, a long poll in
 * flight is answered (empty) with Connection: close, and sluiced exits 0. */
static void shutdown_over_http1(void)
{
    static const char healthz[] = "GET /healthz HTTP/1.1\r\nHost: q\r\n\r\n";
    struct sl_buf req, acc, resp;
    sl_buf_init(&req);
    sl_buf_init(&acc);
    sl_buf_init(&resp);
    int idle = connect_with_timeout(10);
    IT_REQUIRE(idle >= 0);
    IT_CHECK(send_all(idle, healthz, sizeof(healthz) - 1));
    IT_CHECK(read_response(idle, &acc, &resp) == 200);
    IT_CHECK(strstr(resp.p, "connection: close") == NULL); /* kept alive */

    signed_request(&req, "ReceiveMessage", poll_json, false, false);
    int poll = connect_with_timeout(10);
    IT_REQUIRE(poll >= 0);
    IT_CHECK(send_all(poll, req.p, req.n));
    long polls = -1;
    for (int i = 0; i < 50 && polls != 1; i++) {
        sleep_ms(100);
        polls = metric(long_poll_gauge);
    }
    IT_CHECK(polls == 1);

    uint64_t t0 = now_ms();
    it_server_signal(&srv, SIGTERM);
    char b;
    IT_CHECK(recv(idle, &b, 1, 0) == 0); /* closed, not timed out */
    IT_CHECK(now_ms() - t0 < 5000);
    sl_buf_reset(&acc);
    IT_CHECK(read_response(poll, &acc, &resp) == 200);
    IT_CHECK(strstr(resp.p, "connection: close\r\n") != NULL);
    IT_CHECK(strstr(resp.p, "\"Messages\":[{") == NULL);
    IT_CHECK(recv(poll, &b, 1, 0) == 0);
    IT_CHECK(now_ms() - t0 < 10000);
    close(idle);
    close(poll);
    sl_buf_free(&req);
    sl_buf_free(&acc);
    sl_buf_free(&resp);
    IT_CHECK(it_server_stop(&srv) == 0);
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    struct it_options opt = {
        .admin = true,
        .tenants_yaml = IT_TENANTS_YAML_WITH_TOKEN(TOKEN),
    };
    IT_REQUIRE(it_server_start(&srv, &opt) == 0);
    keep_alive_one_connection();
    expect_continue_with_curl();
    pipelined_answers_in_order();
    chunked_body();
    expect_continue_raw();
    long_poll_woken_by_send();
    unauthenticated_body_refused_before_reading();
    smuggling_is_refused();
    version_from_split_first_bytes();
    too_large_body_answered_while_sending();
    metrics_over_http1();
    disconnect_mid_poll();
    half_close_is_answered();
    non_reader_is_cut();
    shutdown_over_http1();
    it_server_cleanup(&srv);
    curl_global_cleanup();
    return it_summary();
}
