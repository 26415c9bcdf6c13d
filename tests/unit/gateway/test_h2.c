/*
 * test_h2.c -- the HTTP/2 protocol layer (gw_h2.c) driven from memory: an
 * nghttp2 CLIENT session in the test talks to a server struct gw_h2c, and
 * pump() moves bytes both ways until neither side has anything to say.
 * Time is injected (fx->now), so the timeouts are tested without sleeping.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <nghttp2/nghttp2.h>
#include <uv.h>

#include "gw_budget.h"
#include "gw_h2.h"

#define MAX_STREAMS 256
#define SEC 1000000000ull

/* What the client saw on one stream. */
struct client_stream {
    int status;
    char headers[4096];      /* "name: value\n"... */
    char never_indexed[256]; /* "name,"... of the fields sent never-indexed */
    struct sl_buf body;
    bool closed;
    uint32_t error_code;
};

enum handler_mode { RESPOND_NOW, HOLD };

struct fixture {
    struct gw_h2c *srv;
    struct gw_handler handler;
    size_t inflight;
    uint64_t now;
    int wakes;

    nghttp2_session *client;
    struct client_stream streams[MAX_STREAMS];
    bool got_goaway;

    enum handler_mode mode;
    size_t resp_body_len; /* RESPOND_NOW: body of this many 'x' bytes; 0 = small JSON */
    int requests;
    struct gw_exchange *held[MAX_STREAMS];
    int held_count;
    /* setup_runq: a real loop whose run queue takes the requests */
    uv_loop_t *loop;
    struct gw_runq runq;
    struct gw_runq_flow flow;
    int cancels;
    int header_calls;
    struct gw_budget *budget; /* NULL unless the setup made one */
    /* copy of the last request */
    char method[16], path[64], authority[64], body[64], request_id[37];
    char header_names[512];
    size_t header_count;
    bool tls;
};

/* ---- the test handler --------------------------------------------------- */

static void on_cancel(struct gw_exchange *ex, void *data)
{
    struct fixture *fx = data;
    fx->cancels++;
    assert_true(gw_exchange_cancelled(ex));
}

static void copy_slice(char *dst, size_t cap, struct sl_slice s)
{
    size_t n = SL_MIN(s.n, cap - 1);
    memcpy(dst, s.p, n);
    dst[n] = '\0';
}

static void on_request(void *loop_ctx, struct gw_exchange *ex, const struct gw_request *req)
{
    struct fixture *fx = loop_ctx;
    fx->requests++;
    assert_ptr_equal(gw_exchange_request(ex), req);
    copy_slice(fx->method, sizeof(fx->method), req->method);
    copy_slice(fx->path, sizeof(fx->path), req->path);
    copy_slice(fx->authority, sizeof(fx->authority), req->authority);
    copy_slice(fx->body, sizeof(fx->body), req->body);
    snprintf(fx->request_id, sizeof(fx->request_id), "%s", req->request_id);
    fx->header_names[0] = '\0';
    for (size_t i = 0; i < req->header_count; i++) {
        char name[64];
        copy_slice(name, sizeof(name), req->headers[i].name);
        size_t used = strlen(fx->header_names);
        snprintf(fx->header_names + used, sizeof(fx->header_names) - used, "%s,", name);
    }
    fx->header_count = req->header_count;
    fx->tls = req->tls;
    if (fx->mode == HOLD) {
        gw_exchange_on_cancel(ex, on_cancel, fx);
        fx->held[fx->held_count++] = ex;
        return;
    }
    const struct gw_header ct = {SL_SLICE_LIT("content-type"),
                                 SL_SLICE_LIT("application/x-amz-json-1.0")};
    if (fx->resp_body_len == 0) {
        gw_exchange_respond(ex, 200, &ct, 1, "{\"a\":1}", 7);
        return;
    }
    char *big = malloc(fx->resp_body_len);
    for (size_t i = 0; i < fx->resp_body_len; i++) /* a pattern: a byte out of place shows */
        big[i] = (char)('a' + i % 23);
    gw_exchange_respond(ex, 200, &ct, 1, big, fx->resp_body_len);
    free(big);
}

/* Refuses a request without an authorization header before its body. */
static enum gw_headers_verdict on_headers(void *loop_ctx, struct gw_exchange *ex,
                                          const struct gw_request *partial)
{
    struct fixture *fx = loop_ctx;
    fx->header_calls++;
    assert_int_equal(partial->body.n, 0);
    if (gw_request_header(partial, "authorization") != NULL)
        return GW_HEADERS_CONTINUE;
    gw_exchange_respond(ex, 403, NULL, 0, "no", 2);
    return GW_HEADERS_ANSWERED;
}

static void on_wake(void *owner)
{
    struct fixture *fx = owner;
    fx->wakes++;
}

/* ---- the in-memory client ----------------------------------------------- */

static struct client_stream *cs(struct fixture *fx, int32_t id)
{
    assert_true(id > 0 && id < MAX_STREAMS);
    return &fx->streams[id];
}

static int cl_on_header(nghttp2_session *s, const nghttp2_frame *frame, const uint8_t *name,
                        size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags,
                        void *user)
{
    struct client_stream *st = cs(user, frame->hd.stream_id);
    if (namelen == 7 && memcmp(name, ":status", 7) == 0) {
        st->status = atoi((const char *)value);
        return 0;
    }
    if (flags & NGHTTP2_NV_FLAG_NO_INDEX) {
        size_t n = strlen(st->never_indexed);
        snprintf(st->never_indexed + n, sizeof(st->never_indexed) - n, "%.*s,", (int)namelen,
                 (const char *)name);
    }
    size_t used = strlen(st->headers);
    snprintf(st->headers + used, sizeof(st->headers) - used, "%.*s: %.*s\n", (int)namelen,
             (const char *)name, (int)valuelen, (const char *)value);
    return 0;
}

static int cl_on_data(nghttp2_session *s, uint8_t flags, int32_t stream_id, const uint8_t *data,
                      size_t len, void *user)
{
    sl_buf_append(&cs(user, stream_id)->body, data, len);
    return 0;
}

static int cl_on_close(nghttp2_session *s, int32_t stream_id, uint32_t error_code, void *user)
{
    struct client_stream *st = cs(user, stream_id);
    st->closed = true;
    st->error_code = error_code;
    return 0;
}

static int cl_on_frame(nghttp2_session *s, const nghttp2_frame *frame, void *user)
{
    struct fixture *fx = user;
    if (frame->hd.type == NGHTTP2_GOAWAY)
        fx->got_goaway = true;
    return 0;
}

static void client_new(struct fixture *fx, uint32_t initial_window, bool auto_window)
{
    nghttp2_session_callbacks *cbs;
    assert_int_equal(nghttp2_session_callbacks_new(&cbs), 0);
    nghttp2_session_callbacks_set_on_header_callback(cbs, cl_on_header);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, cl_on_data);
    nghttp2_session_callbacks_set_on_stream_close_callback(cbs, cl_on_close);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, cl_on_frame);
    nghttp2_option *opt;
    assert_int_equal(nghttp2_option_new(&opt), 0);
    if (!auto_window)
        nghttp2_option_set_no_auto_window_update(opt, 1);
    /* Let the client send what a hostile peer would. */
    nghttp2_option_set_max_send_header_block_length(opt, 1 << 20);
    assert_int_equal(nghttp2_session_client_new2(&fx->client, cbs, fx, opt), 0);
    nghttp2_option_del(opt);
    nghttp2_session_callbacks_del(cbs);
    nghttp2_settings_entry iv[] = {{NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, initial_window}};
    assert_int_equal(nghttp2_submit_settings(fx->client, NGHTTP2_FLAG_NONE, iv, 1), 0);
}

static int setup_full(void **state, uint32_t window, bool auto_window, struct gw_budget *budget,
                      bool runq)
{
    struct fixture *fx = calloc(1, sizeof(*fx));
    fx->now = 1000 * SEC;
    fx->handler.on_request = on_request;
    fx->budget = budget;
    struct gw_proto_env env = {
        .handler = &fx->handler,
        .loop_ctx = fx,
        .loop_inflight = &fx->inflight,
        .wake = on_wake,
        .owner = fx,
        .budget = budget,
    };
    if (runq) {
        fx->loop = malloc(sizeof *fx->loop);
        assert_int_equal(uv_loop_init(fx->loop), 0);
        assert_int_equal(gw__runq_init(&fx->runq, fx->loop), SL_OK);
        gw__runq_flow_init(&fx->flow, &fx->runq);
        env.flow = &fx->flow;
    }
    fx->srv = gw__h2c_new(&env, fx->now);
    client_new(fx, window, auto_window);
    *state = fx;
    return 0;
}

static int setup_budget_with(void **state, uint32_t window, bool auto_window,
                             struct gw_budget *budget)
{
    return setup_full(state, window, auto_window, budget, false);
}

static int setup_with(void **state, uint32_t window, bool auto_window)
{
    return setup_budget_with(state, window, auto_window, NULL);
}

static int setup_runq(void **state)
{
    return setup_full(state, 65535, true, NULL, true);
}

/* Budgets small enough to reach: 150,000 bytes of bodies, 100,000 of
 * responses. */
#define BODY_BUDGET 150000u
#define RESPONSE_BUDGET 100000u

static int setup_budget(void **state)
{
    return setup_budget_with(state, 65535, true, gw__budget_new(BODY_BUDGET, RESPONSE_BUDGET));
}

static int setup_budget_closed_window(void **state)
{
    return setup_budget_with(state, 1024, false, gw__budget_new(BODY_BUDGET, RESPONSE_BUDGET));
}

static int setup(void **state)
{
    return setup_with(state, 65535, true);
}

/* Stream windows of 16 MiB: a large answer is bound by the output
 * buffer, not by flow control. */
static int setup_wide(void **state)
{
    return setup_with(state, 1u << 24, true);
}

static int setup_closed_window(void **state)
{
    return setup_with(state, 1024, false);
}

static void close_walk(uv_handle_t *h, void *arg)
{
    (void)arg;
    if (!uv_is_closing(h))
        uv_close(h, NULL);
}

static int teardown(void **state)
{
    struct fixture *fx = *state;
    gw__h2c_free(fx->srv);
    if (fx->loop != NULL) {
        /* The connection's exchanges took themselves out of the queue. */
        assert_true(gw__runq_flow_empty(&fx->flow));
        uv_walk(fx->loop, close_walk, NULL);
        uv_run(fx->loop, UV_RUN_DEFAULT);
        assert_int_equal(uv_loop_close(fx->loop), 0);
        free(fx->loop);
    }
    if (fx->budget != NULL) {
        /* Every byte charged came back once the connection is gone. */
        struct gw_budget_stats st;
        gw__budget_stats(fx->budget, &st);
        assert_int_equal(st.used[GW_BUDGET_BODY], 0);
        assert_int_equal(st.used[GW_BUDGET_RESPONSE], 0);
        gw__budget_free(fx->budget);
    }
    if (fx->client != NULL)
        nghttp2_session_del(fx->client);
    for (int i = 0; i < MAX_STREAMS; i++)
        sl_buf_free(&fx->streams[i].body);
    free(fx);
    return 0;
}

/* Moves bytes both ways until both sides are quiet. Returns the server's
 * last feed status. Bounded: a protocol layer that keeps talking fails. */
static int pump(struct fixture *fx)
{
    int status = SL_OK;
    for (int round = 0; round < 10000; round++) {
        bool progress = false;
        const uint8_t *p;
        ssize_t n;
        while ((n = nghttp2_session_mem_send(fx->client, &p)) > 0) {
            progress = true;
            int rv = gw__h2c_feed(fx->srv, p, (size_t)n, fx->now);
            if (rv != SL_OK)
                status = rv;
        }
        assert_true(n >= 0);
        gw__h2c_flush(fx->srv);
        struct sl_slice out = gw__h2c_output(fx->srv);
        if (out.n > 0) {
            progress = true;
            ssize_t got = nghttp2_session_mem_recv(fx->client, (const uint8_t *)out.p, out.n);
            assert_int_equal(got, (ssize_t)out.n);
            gw__h2c_output_consume(fx->srv, out.n);
        }
        if (!progress)
            return status;
    }
    fail_msg("pump did not settle");
    return status;
}

static int32_t submit(struct fixture *fx, const char *method, const char *path,
                      const nghttp2_nv *extra, size_t extra_n, nghttp2_data_provider *body)
{
    nghttp2_nv nva[300];
#define NV(n, v)                                                                                   \
    (nghttp2_nv){(uint8_t *)(n), (uint8_t *)(v), strlen(n), strlen(v), NGHTTP2_NV_FLAG_NONE}
    size_t k = 0;
    nva[k++] = NV(":method", method);
    if (path != NULL)
        nva[k++] = NV(":path", path);
    nva[k++] = NV(":scheme", "http");
    nva[k++] = NV(":authority", "127.0.0.1:9324");
    assert_true(extra_n <= 290);
    for (size_t i = 0; i < extra_n; i++)
        nva[k++] = extra[i];
    int32_t id = nghttp2_submit_request(fx->client, NULL, nva, k, body, NULL);
    assert_true(id > 0);
    return id;
}

/* Request body from a string or a run of 'b' bytes. */
struct body_src {
    const char *text;
    size_t len, off;
};

static ssize_t body_read(nghttp2_session *s, int32_t stream_id, uint8_t *buf, size_t length,
                         uint32_t *data_flags, nghttp2_data_source *source, void *user)
{
    struct body_src *b = source->ptr;
    size_t n = SL_MIN(length, b->len - b->off);
    if (b->text != NULL)
        memcpy(buf, b->text + b->off, n);
    else
        memset(buf, 'b', n);
    b->off += n;
    if (b->off == b->len)
        *data_flags |= NGHTTP2_DATA_FLAG_EOF;
    return (ssize_t)n;
}

/* ---- tests -------------------------------------------------------------- */

static void request_reaches_handler_and_response_arrives(void **state)
{
    struct fixture *fx = *state;
    struct body_src b = {.text = "{\"QueueName\":\"q\"}", .len = 17};
    nghttp2_data_provider prd = {.source.ptr = &b, .read_callback = body_read};
    nghttp2_nv extra[] = {NV("x-amz-target", "AmazonSQS.CreateQueue"),
                          NV("content-type", "application/x-amz-json-1.0"),
                          NV("x-amz-date", "20250101T000000Z")};
    int32_t id = submit(fx, "POST", "/", extra, 3, &prd);
    assert_int_equal(pump(fx), SL_OK);

    assert_int_equal(fx->requests, 1);
    assert_string_equal(fx->method, "POST");
    assert_string_equal(fx->path, "/");
    assert_string_equal(fx->authority, "127.0.0.1:9324");
    assert_string_equal(fx->body, "{\"QueueName\":\"q\"}");
    assert_string_equal(fx->header_names, "x-amz-target,content-type,x-amz-date,");
    assert_int_equal(strlen(fx->request_id), 36);
    assert_false(fx->tls);
    assert_int_equal(fx->inflight, 0);

    struct client_stream *st = cs(fx, id);
    assert_true(st->closed);
    assert_int_equal(st->error_code, 0);
    assert_int_equal(st->status, 200);
    assert_int_equal(st->body.n, 7);
    assert_memory_equal(st->body.p, "{\"a\":1}", 7);
    char want[80];
    snprintf(want, sizeof(want), "x-amzn-requestid: %s\n", fx->request_id);
    assert_non_null(strstr(st->headers, want));
    assert_non_null(strstr(st->headers, "content-length: 7\n"));
    assert_non_null(strstr(st->headers, "content-type: application/x-amz-json-1.0\n"));
    assert_non_null(strstr(st->headers, "date: "));
    assert_non_null(strstr(st->headers, " GMT\n"));
    /* A value that never repeats stays out of the HPACK table. */
    assert_string_equal(st->never_indexed, "x-amzn-requestid,");
    assert_int_equal(gw__h2c_open_streams(fx->srv), 0);
}

static void healthz_is_answered_by_the_protocol_layer(void **state)
{
    struct fixture *fx = *state;
    int32_t id = submit(fx, "GET", "/healthz", NULL, 0, NULL);
    pump(fx);
    assert_int_equal(fx->requests, 0);
    struct client_stream *st = cs(fx, id);
    assert_int_equal(st->status, 200);
    assert_int_equal(st->body.n, 2);
    assert_memory_equal(st->body.p, "ok", 2);
    assert_non_null(strstr(st->headers, "x-amzn-requestid: "));
}

static void held_exchange_answers_later_and_wakes_owner(void **state)
{
    struct fixture *fx = *state;
    fx->mode = HOLD;
    int32_t id = submit(fx, "POST", "/", NULL, 0, NULL);
    pump(fx);
    assert_int_equal(fx->held_count, 1);
    assert_int_equal(fx->inflight, 1);
    assert_false(cs(fx, id)->closed);
    assert_int_equal(fx->wakes, 0);

    gw_exchange_respond(fx->held[0], 204, NULL, 0, NULL, 0);
    assert_int_equal(fx->wakes, 1); /* outside feed: the owner must flush */
    assert_int_equal(fx->inflight, 0);
    pump(fx);
    assert_int_equal(cs(fx, id)->status, 204);
    assert_true(cs(fx, id)->closed);
    assert_int_equal(fx->cancels, 0);
}

static void rst_stream_before_respond_cancels_once(void **state)
{
    struct fixture *fx = *state;
    fx->mode = HOLD;
    int32_t id = submit(fx, "POST", "/", NULL, 0, NULL);
    pump(fx);
    assert_int_equal(fx->held_count, 1);
    struct gw_exchange *ex = fx->held[0];
    assert_false(gw_exchange_cancelled(ex));

    assert_int_equal(nghttp2_submit_rst_stream(fx->client, NGHTTP2_FLAG_NONE, id, NGHTTP2_CANCEL),
                     0);
    pump(fx);
    assert_true(gw_exchange_cancelled(ex));
    assert_int_equal(fx->cancels, 1);
    assert_int_equal(gw__h2c_open_streams(fx->srv), 0);
    assert_int_equal(fx->inflight, 1); /* still the handler's until respond */
    assert_string_equal(gw_exchange_request(ex)->request_id, fx->request_id);

    gw_exchange_respond(ex, 200, NULL, 0, "late", 4); /* only frees */
    assert_int_equal(fx->inflight, 0);
    assert_int_equal(fx->cancels, 1);
    pump(fx);
    assert_int_equal(cs(fx, id)->status, 0);
}

static void connection_free_cancels_held_exchanges(void **state)
{
    struct fixture *fx = *state;
    fx->mode = HOLD;
    submit(fx, "POST", "/", NULL, 0, NULL);
    submit(fx, "POST", "/", NULL, 0, NULL);
    pump(fx);
    assert_int_equal(fx->held_count, 2);
    gw__h2c_free(fx->srv);
    fx->srv = NULL;
    assert_int_equal(fx->cancels, 2);
    assert_true(gw_exchange_cancelled(fx->held[0]));
    gw_exchange_respond(fx->held[0], 200, NULL, 0, NULL, 0);
    gw_exchange_respond(fx->held[1], 200, NULL, 0, "x", 1);
    assert_int_equal(fx->inflight, 0);
}

static void oversize_declared_body_gets_413(void **state)
{
    struct fixture *fx = *state;
    struct body_src b = {.len = GW_MAX_REQUEST_BODY + 1};
    char len_s[24];
    snprintf(len_s, sizeof(len_s), "%zu", b.len);
    nghttp2_data_provider prd = {.source.ptr = &b, .read_callback = body_read};
    nghttp2_nv extra[] = {NV("content-length", len_s)};
    int32_t id = submit(fx, "POST", "/", extra, 1, &prd);
    pump(fx);
    struct client_stream *st = cs(fx, id);
    assert_int_equal(st->status, 413);
    assert_true(st->closed);
    assert_int_equal(fx->requests, 0);
    sl_buf_append_byte(&st->body, '\0');
    assert_non_null(
        strstr(st->body.p, "\"__type\":\"com.amazon.coral.service#RequestEntityTooLarge\""));
}

static void oversize_streamed_body_gets_413(void **state)
{
    struct fixture *fx = *state;
    struct body_src b = {.len = GW_MAX_REQUEST_BODY + 100000};
    nghttp2_data_provider prd = {.source.ptr = &b, .read_callback = body_read};
    int32_t id = submit(fx, "POST", "/", NULL, 0, &prd);
    pump(fx);
    assert_int_equal(cs(fx, id)->status, 413);
    assert_true(cs(fx, id)->closed);
    assert_int_equal(fx->requests, 0);
    /* the connection is still good */
    int32_t id2 = submit(fx, "GET", "/healthz", NULL, 0, NULL);
    pump(fx);
    assert_int_equal(cs(fx, id2)->status, 200);
}

static void body_at_the_limit_is_accepted(void **state)
{
    struct fixture *fx = *state;
    /* the 413's text names the same limit */
    assert_int_equal(strtoull(GW_MAX_REQUEST_BODY_TEXT, NULL, 10), GW_MAX_REQUEST_BODY);
    struct body_src b = {.len = GW_MAX_REQUEST_BODY};
    nghttp2_data_provider prd = {.source.ptr = &b, .read_callback = body_read};
    int32_t id = submit(fx, "POST", "/", NULL, 0, &prd);
    pump(fx);
    assert_int_equal(fx->requests, 1);
    assert_int_equal(cs(fx, id)->status, 200);
}

static void too_many_headers_get_431(void **state)
{
    struct fixture *fx = *state;
    nghttp2_nv extra[GW_MAX_HEADER_COUNT + 10];
    char names[GW_MAX_HEADER_COUNT + 10][16];
    for (size_t i = 0; i < SL_ARRAY_LEN(extra); i++) {
        snprintf(names[i], sizeof(names[i]), "x-h%zu", i);
        extra[i] = NV(names[i], "v");
    }
    int32_t id = submit(fx, "POST", "/", extra, SL_ARRAY_LEN(extra), NULL);
    pump(fx);
    assert_int_equal(cs(fx, id)->status, 431);
    assert_int_equal(fx->requests, 0);
}

static void header_list_over_64k_gets_431(void **state)
{
    struct fixture *fx = *state;
    static char big[8000];
    memset(big, 'a', sizeof(big) - 1); /* 5-bit Huffman code: the block stays under 64 KiB */
    nghttp2_nv extra[10];
    char names[10][8];
    for (size_t i = 0; i < 10; i++) {
        snprintf(names[i], sizeof(names[i]), "x-b%zu", i);
        extra[i] = NV(names[i], big);
    }
    int32_t id = submit(fx, "POST", "/", extra, 10, NULL);
    pump(fx);
    assert_int_equal(cs(fx, id)->status, 431);
    assert_int_equal(fx->requests, 0);
}

static void unauthenticated_body_is_refused_at_headers(void **state)
{
    struct fixture *fx = *state;
    fx->handler.on_headers = on_headers;
    struct body_src b1 = {.len = 1000000};
    nghttp2_data_provider p1 = {.source.ptr = &b1, .read_callback = body_read};
    int32_t refused = submit(fx, "POST", "/", NULL, 0, &p1);
    struct body_src b2 = {.text = "signed", .len = 6};
    nghttp2_data_provider p2 = {.source.ptr = &b2, .read_callback = body_read};
    nghttp2_nv authz[] = {NV("authorization", "AWS4-HMAC-SHA256 Credential=k/...")};
    int32_t accepted = submit(fx, "POST", "/", authz, 1, &p2);
    int32_t health = submit(fx, "GET", "/healthz", NULL, 0, NULL);
    pump(fx);
    assert_int_equal(cs(fx, refused)->status, 403);
    assert_int_equal(cs(fx, accepted)->status, 200);
    assert_int_equal(cs(fx, health)->status, 200);
    /* Asked once per request with a body; healthz and bodiless never. */
    assert_int_equal(fx->header_calls, 2);
    assert_int_equal(fx->requests, 1);
    assert_string_equal(fx->body, "signed");
    assert_int_equal(fx->inflight, 0);
}

static struct gw_budget_stats budget_now(struct fixture *fx)
{
    struct gw_budget_stats st;
    gw__budget_stats(fx->budget, &st);
    return st;
}

static void bodies_are_charged_and_refused_past_the_budget(void **state)
{
    struct fixture *fx = *state;
    fx->mode = HOLD;
    struct body_src b1 = {.len = 100000}, b2 = {.len = 100000}, b3 = {.len = 10};
    nghttp2_data_provider p1 = {.source.ptr = &b1, .read_callback = body_read};
    nghttp2_data_provider p2 = {.source.ptr = &b2, .read_callback = body_read};
    int32_t held = submit(fx, "POST", "/", NULL, 0, &p1);
    pump(fx);
    assert_int_equal(fx->requests, 1);
    assert_int_equal(budget_now(fx).used[GW_BUDGET_BODY], 100000);

    /* Would take the process to 200,000 bytes of bodies: refused, and
     * nothing of it stays charged. */
    int32_t refused = submit(fx, "POST", "/", NULL, 0, &p2);
    pump(fx);
    assert_true(cs(fx, refused)->closed);
    assert_int_equal(cs(fx, refused)->error_code, NGHTTP2_REFUSED_STREAM);
    assert_int_equal(fx->requests, 1);
    struct gw_budget_stats st = budget_now(fx);
    assert_int_equal(st.used[GW_BUDGET_BODY], 100000);
    assert_int_equal(st.refused[GW_BUDGET_REFUSED_BODY], 1);

    /* The handler answers: the body is released with the answer. */
    fx->mode = RESPOND_NOW;
    gw_exchange_respond(fx->held[0], 200, NULL, 0, "ok", 2);
    pump(fx);
    assert_int_equal(cs(fx, held)->status, 200);
    assert_int_equal(budget_now(fx).used[GW_BUDGET_BODY], 0);

    nghttp2_data_provider p3 = {.source.ptr = &b3, .read_callback = body_read};
    int32_t again = submit(fx, "POST", "/", NULL, 0, &p3);
    pump(fx);
    assert_int_equal(cs(fx, again)->status, 200);
    assert_int_equal(budget_now(fx).used[GW_BUDGET_BODY], 0);
}

static void declared_body_is_charged_when_headers_arrive(void **state)
{
    struct fixture *fx = *state;
    fx->mode = HOLD;
    fx->handler.on_headers = on_headers;
    nghttp2_nv extra[] = {NV("authorization", "x"), NV("content-length", "200000")};
    struct body_src b = {.len = 200000};
    nghttp2_data_provider prd = {.source.ptr = &b, .read_callback = body_read};
    int32_t id = submit(fx, "POST", "/", extra, 2, &prd);
    pump(fx);
    /* 200,000 declared bytes do not fit in 150,000: refused before any is
     * reserved. */
    assert_int_equal(cs(fx, id)->error_code, NGHTTP2_REFUSED_STREAM);
    assert_int_equal(fx->requests, 0);
    assert_int_equal(budget_now(fx).refused[GW_BUDGET_REFUSED_BODY], 1);
}

static void new_streams_are_refused_while_responses_fill_the_budget(void **state)
{
    struct fixture *fx = *state;
    fx->resp_body_len = 200000; /* the client's 1,024-byte window holds it */
    int32_t big = submit(fx, "GET", "/big", NULL, 0, NULL);
    pump(fx);
    assert_int_equal(cs(fx, big)->status, 200);
    assert_false(cs(fx, big)->closed);
    assert_true(budget_now(fx).used[GW_BUDGET_RESPONSE] >= RESPONSE_BUDGET);

    int32_t refused = submit(fx, "GET", "/small", NULL, 0, NULL);
    pump(fx);
    assert_int_equal(cs(fx, refused)->error_code, NGHTTP2_REFUSED_STREAM);
    assert_int_equal(fx->requests, 1);
    assert_int_equal(budget_now(fx).refused[GW_BUDGET_REFUSED_STREAM_RESPONSE], 1);

    /* The client reads: sent bytes leave the budget, and streams are
     * admitted again. */
    nghttp2_submit_window_update(fx->client, NGHTTP2_FLAG_NONE, big, 1 << 20);
    nghttp2_submit_window_update(fx->client, NGHTTP2_FLAG_NONE, 0, 1 << 20);
    pump(fx);
    assert_true(cs(fx, big)->closed);
    assert_int_equal(cs(fx, big)->body.n, 200000);
    assert_int_equal(budget_now(fx).used[GW_BUDGET_RESPONSE], 0);
    fx->resp_body_len = 0;
    int32_t ok = submit(fx, "GET", "/small", NULL, 0, NULL);
    pump(fx);
    assert_int_equal(cs(fx, ok)->status, 200);
}

static void stalled_answer_is_reset_and_released(void **state)
{
    struct fixture *fx = *state;
    fx->resp_body_len = 50000; /* within the budget: only the timer frees it */
    int32_t id = submit(fx, "GET", "/big", NULL, 0, NULL);
    pump(fx);
    assert_int_equal(cs(fx, id)->status, 200);
    assert_true(budget_now(fx).used[GW_BUDGET_RESPONSE] > 0);

    /* Progress restarts the clock: 20 s, a window update, 20 s more. */
    assert_false(gw__h2c_tick(fx->srv, fx->now + 20 * SEC));
    pump(fx);
    assert_false(cs(fx, id)->closed);
    fx->now += 20 * SEC;
    nghttp2_submit_window_update(fx->client, NGHTTP2_FLAG_NONE, id, 1024);
    nghttp2_submit_window_update(fx->client, NGHTTP2_FLAG_NONE, 0, 1024);
    pump(fx);
    size_t got = cs(fx, id)->body.n;
    assert_int_equal(got, 2048);
    assert_false(gw__h2c_tick(fx->srv, fx->now + 20 * SEC));
    pump(fx);
    assert_false(cs(fx, id)->closed);

    /* Then nothing for longer than the stall timeout: reset and released. */
    assert_false(gw__h2c_tick(fx->srv, fx->now + GW_STALL_TIMEOUT_NS + SEC));
    assert_int_equal(budget_now(fx).used[GW_BUDGET_RESPONSE], 0);
    pump(fx);
    assert_true(cs(fx, id)->closed);
    assert_int_equal(cs(fx, id)->error_code, NGHTTP2_CANCEL);
    assert_int_equal(cs(fx, id)->body.n, got);
    assert_int_equal(budget_now(fx).refused[GW_BUDGET_STALLED], 1);
    assert_int_equal(gw__h2c_open_streams(fx->srv), 0);
}

static void request_without_path_is_rejected(void **state)
{
    struct fixture *fx = *state;
    int32_t id = submit(fx, "GET", NULL, NULL, 0, NULL);
    pump(fx);
    assert_int_equal(fx->requests, 0);
    assert_true(cs(fx, id)->closed);
    assert_true(cs(fx, id)->status == 400 || cs(fx, id)->error_code != 0);
}

static void garbage_preface_closes(void **state)
{
    struct fixture *fx = *state;
    static const uint8_t junk[] = {0x16, 0x03, 0x01, 0x00, 0xa5, 0x01, 0x00};
    assert_int_equal(gw__h2c_feed(fx->srv, junk, sizeof(junk), fx->now), SL_ECLOSED);
    gw__h2c_flush(fx->srv);
    assert_int_equal(gw__h2c_output(fx->srv).n, 0);
    assert_true(gw__h2c_done(fx->srv));
    assert_int_equal(gw__h2c_feed(fx->srv, junk, sizeof(junk), fx->now), SL_ECLOSED);
}

static void http1_request_gets_505_and_close(void **state)
{
    struct fixture *fx = *state;
    static const char req[] = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
    assert_int_equal(gw__h2c_feed(fx->srv, (const uint8_t *)req, 4, fx->now), SL_ECLOSED);
    gw__h2c_flush(fx->srv);
    struct sl_slice out = gw__h2c_output(fx->srv);
    assert_true(out.n > 12);
    assert_memory_equal(out.p, "HTTP/1.1 505", 12);
    assert_false(gw__h2c_done(fx->srv));
    gw__h2c_output_consume(fx->srv, out.n);
    assert_true(gw__h2c_done(fx->srv));
}

static void split_preface_is_accepted(void **state)
{
    struct fixture *fx = *state;
    const uint8_t *p;
    ssize_t n;
    struct sl_buf all;
    sl_buf_init(&all);
    while ((n = nghttp2_session_mem_send(fx->client, &p)) > 0)
        sl_buf_append(&all, p, (size_t)n);
    assert_true(all.n > 24);
    for (size_t i = 0; i < all.n; i++)
        assert_int_equal(gw__h2c_feed(fx->srv, (const uint8_t *)all.p + i, 1, fx->now), SL_OK);
    sl_buf_free(&all);
    int32_t id = submit(fx, "GET", "/healthz", NULL, 0, NULL);
    pump(fx);
    assert_int_equal(cs(fx, id)->status, 200);
}

/* A reply far past the output buffer's high-water mark, to a client whose
 * windows let it all through: nghttp2 hands the body's DATA frames to the
 * server without copying them (send_body), which keeps the buffer under
 * its cap at every flush and delivers every byte in order. */
static void large_answer_arrives_whole_under_the_cap(void **state)
{
    struct fixture *fx = *state;
    fx->resp_body_len = (1u << 20) + 7;
    int32_t id = submit(fx, "GET", "/big", NULL, 0, NULL);
    nghttp2_submit_window_update(fx->client, NGHTTP2_FLAG_NONE, 0, 1 << 24);
    for (int round = 0; round < 10000 && !cs(fx, id)->closed; round++) {
        const uint8_t *p;
        ssize_t n;
        while ((n = nghttp2_session_mem_send(fx->client, &p)) > 0)
            assert_int_equal(gw__h2c_feed(fx->srv, p, (size_t)n, fx->now), SL_OK);
        assert_int_equal(gw__h2c_flush(fx->srv), SL_OK);
        struct sl_slice out = gw__h2c_output(fx->srv);
        assert_true(out.n <= GW_H2C_OUT_CAP);
        assert_int_equal(nghttp2_session_mem_recv(fx->client, (const uint8_t *)out.p, out.n),
                         (ssize_t)out.n);
        gw__h2c_output_consume(fx->srv, out.n);
    }
    struct client_stream *st = cs(fx, id);
    assert_true(st->closed);
    assert_int_equal(st->status, 200);
    assert_int_equal(st->body.n, fx->resp_body_len);
    for (size_t i = 0; i < st->body.n; i++)
        assert_int_equal(st->body.p[i], (char)('a' + i % 23));
}

/* A client that never opens its receive window and never reads: the
 * server's output buffer stays under its cap however much is pending. */
static void slow_reader_does_not_grow_output(void **state)
{
    struct fixture *fx = *state;
    fx->resp_body_len = 200000;
    for (int i = 0; i < 40; i++)
        submit(fx, "GET", "/big", NULL, 0, NULL);
    /* Send everything the client has, but never feed the server's bytes
     * back to the client: a peer that does not read at all. */
    const uint8_t *p;
    ssize_t n;
    while ((n = nghttp2_session_mem_send(fx->client, &p)) > 0)
        gw__h2c_feed(fx->srv, p, (size_t)n, fx->now);
    for (int i = 0; i < 50; i++) {
        gw__h2c_flush(fx->srv);
        assert_true(gw__h2c_output(fx->srv).n <= GW_H2C_OUT_CAP);
    }
    assert_int_equal(fx->requests, 40);
    /* The peer's window (1024 bytes on stream and 65535 on the connection)
     * bounds what was produced at all. */
    assert_true(gw__h2c_output(fx->srv).n < 65535 + 40 * 200);
    assert_false(gw__h2c_want_write(fx->srv));

    /* Reading now, still never opening the window: everything settles with
     * the streams open and no more than the windows' worth delivered. */
    pump(fx);
    size_t delivered = 0;
    for (int id = 1; id < MAX_STREAMS; id++)
        delivered += fx->streams[id].body.n;
    assert_true(delivered <= 65535);
    assert_int_equal(gw__h2c_open_streams(fx->srv), 40);
    assert_int_equal(gw__h2c_output(fx->srv).n, 0);
}

static void idle_connection_gets_goaway(void **state)
{
    struct fixture *fx = *state;
    int32_t id = submit(fx, "GET", "/healthz", NULL, 0, NULL);
    pump(fx);
    assert_int_equal(cs(fx, id)->status, 200);
    assert_false(gw__h2c_tick(fx->srv, fx->now + 59 * SEC));
    pump(fx);
    assert_false(fx->got_goaway);
    assert_false(gw__h2c_tick(fx->srv, fx->now + 61 * SEC));
    pump(fx);
    assert_true(fx->got_goaway);
    assert_true(gw__h2c_done(fx->srv));
}

static void slow_request_is_reset(void **state)
{
    struct fixture *fx = *state;
    fx->mode = HOLD;
    /* Headers without END_STREAM, then nothing. */
    struct body_src b = {.len = 0};
    (void)b;
    int32_t id =
        nghttp2_submit_headers(fx->client, NGHTTP2_FLAG_NONE, -1, NULL,
                               (nghttp2_nv[]){NV(":method", "POST"), NV(":path", "/"),
                                              NV(":scheme", "http"), NV(":authority", "x")},
                               4, NULL);
    assert_true(id > 0);
    pump(fx);
    assert_int_equal(gw__h2c_open_streams(fx->srv), 1);
    assert_false(gw__h2c_tick(fx->srv, fx->now + 29 * SEC));
    pump(fx);
    assert_false(cs(fx, id)->closed);
    assert_false(gw__h2c_tick(fx->srv, fx->now + 31 * SEC));
    pump(fx);
    assert_true(cs(fx, id)->closed);
    assert_int_equal(cs(fx, id)->error_code, NGHTTP2_CANCEL);
    assert_int_equal(fx->requests, 0);
}

static void missing_preface_times_out(void **state)
{
    struct fixture *fx = *state;
    assert_int_equal(gw__h2c_feed(fx->srv, (const uint8_t *)"PRI * ", 6, fx->now), SL_OK);
    assert_false(gw__h2c_tick(fx->srv, fx->now + 29 * SEC));
    assert_true(gw__h2c_tick(fx->srv, fx->now + 31 * SEC));
}

static void goaway_lets_open_streams_finish(void **state)
{
    struct fixture *fx = *state;
    fx->mode = HOLD;
    int32_t id = submit(fx, "POST", "/", NULL, 0, NULL);
    pump(fx);
    gw__h2c_goaway(fx->srv);
    pump(fx);
    assert_true(fx->got_goaway);
    assert_false(gw__h2c_done(fx->srv));
    gw_exchange_respond(fx->held[0], 200, NULL, 0, "done", 4);
    pump(fx);
    assert_int_equal(cs(fx, id)->status, 200);
    assert_true(gw__h2c_done(fx->srv));
}

/* ---- with the loop's run queue (gw_runq.h) ------------------------------- */

static void queued_requests_reach_the_handler_in_the_loops_turn(void **state)
{
    struct fixture *fx = *state;
    int32_t a = submit(fx, "POST", "/", NULL, 0, NULL);
    int32_t b = submit(fx, "POST", "/", NULL, 0, NULL);
    pump(fx);
    /* Parsed and counted, but no handler has them before the turn. */
    assert_int_equal(fx->requests, 0);
    assert_int_equal(fx->inflight, 2);
    assert_false(cs(fx, a)->closed);
    uv_run(fx->loop, UV_RUN_NOWAIT);
    assert_int_equal(fx->requests, 2);
    assert_int_equal(fx->inflight, 0);
    assert_int_equal(fx->wakes, 2); /* answered outside feed: the owner flushes */
    pump(fx);
    assert_int_equal(cs(fx, a)->status, 200);
    assert_int_equal(cs(fx, b)->status, 200);
    assert_int_equal(uv_run(fx->loop, UV_RUN_NOWAIT), 0);
}

static void reset_before_the_turn_takes_the_request_out(void **state)
{
    struct fixture *fx = *state;
    int32_t a = submit(fx, "POST", "/", NULL, 0, NULL);
    int32_t b = submit(fx, "POST", "/", NULL, 0, NULL);
    pump(fx);
    assert_int_equal(fx->inflight, 2);
    assert_int_equal(nghttp2_submit_rst_stream(fx->client, NGHTTP2_FLAG_NONE, a, NGHTTP2_CANCEL),
                     0);
    pump(fx);
    /* No handler saw it, so nothing is cancelled: it is simply gone. */
    assert_int_equal(fx->inflight, 1);
    assert_int_equal(fx->cancels, 0);
    uv_run(fx->loop, UV_RUN_NOWAIT);
    assert_int_equal(fx->requests, 1);
    assert_int_equal(fx->inflight, 0);
    pump(fx);
    assert_int_equal(cs(fx, a)->status, 0);
    assert_int_equal(cs(fx, b)->status, 200);
}

static void connection_free_takes_queued_requests_out(void **state)
{
    struct fixture *fx = *state;
    submit(fx, "POST", "/", NULL, 0, NULL);
    submit(fx, "POST", "/", NULL, 0, NULL);
    pump(fx);
    assert_int_equal(fx->inflight, 2);
    gw__h2c_free(fx->srv);
    fx->srv = NULL;
    assert_int_equal(fx->inflight, 0);
    assert_true(gw__runq_flow_empty(&fx->flow));
    /* The turn finds nothing to run and the loop nothing to wait for. */
    assert_int_equal(uv_run(fx->loop, UV_RUN_NOWAIT), 0);
    assert_int_equal(fx->requests, 0);
}

int main(void)
{
    sl_log_set_level(SL_LOG_ERROR);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(request_reaches_handler_and_response_arrives, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(healthz_is_answered_by_the_protocol_layer, setup, teardown),
        cmocka_unit_test_setup_teardown(held_exchange_answers_later_and_wakes_owner, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(rst_stream_before_respond_cancels_once, setup, teardown),
        cmocka_unit_test_setup_teardown(connection_free_cancels_held_exchanges, setup, teardown),
        cmocka_unit_test_setup_teardown(oversize_declared_body_gets_413, setup, teardown),
        cmocka_unit_test_setup_teardown(oversize_streamed_body_gets_413, setup, teardown),
        cmocka_unit_test_setup_teardown(body_at_the_limit_is_accepted, setup, teardown),
        cmocka_unit_test_setup_teardown(too_many_headers_get_431, setup, teardown),
        cmocka_unit_test_setup_teardown(header_list_over_64k_gets_431, setup, teardown),
        cmocka_unit_test_setup_teardown(unauthenticated_body_is_refused_at_headers, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(bodies_are_charged_and_refused_past_the_budget,
                                        setup_budget, teardown),
        cmocka_unit_test_setup_teardown(declared_body_is_charged_when_headers_arrive, setup_budget,
                                        teardown),
        cmocka_unit_test_setup_teardown(new_streams_are_refused_while_responses_fill_the_budget,
                                        setup_budget_closed_window, teardown),
        cmocka_unit_test_setup_teardown(stalled_answer_is_reset_and_released,
                                        setup_budget_closed_window, teardown),
        cmocka_unit_test_setup_teardown(request_without_path_is_rejected, setup, teardown),
        cmocka_unit_test_setup_teardown(garbage_preface_closes, setup, teardown),
        cmocka_unit_test_setup_teardown(http1_request_gets_505_and_close, setup, teardown),
        cmocka_unit_test_setup_teardown(split_preface_is_accepted, setup, teardown),
        cmocka_unit_test_setup_teardown(large_answer_arrives_whole_under_the_cap, setup_wide,
                                        teardown),
        cmocka_unit_test_setup_teardown(slow_reader_does_not_grow_output, setup_closed_window,
                                        teardown),
        cmocka_unit_test_setup_teardown(idle_connection_gets_goaway, setup, teardown),
        cmocka_unit_test_setup_teardown(slow_request_is_reset, setup, teardown),
        cmocka_unit_test_setup_teardown(missing_preface_times_out, setup, teardown),
        cmocka_unit_test_setup_teardown(goaway_lets_open_streams_finish, setup, teardown),
        cmocka_unit_test_setup_teardown(queued_requests_reach_the_handler_in_the_loops_turn,
                                        setup_runq, teardown),
        cmocka_unit_test_setup_teardown(reset_before_the_turn_takes_the_request_out, setup_runq,
                                        teardown),
        cmocka_unit_test_setup_teardown(connection_free_takes_queued_requests_out, setup_runq,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
