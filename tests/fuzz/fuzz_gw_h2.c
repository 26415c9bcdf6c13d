/*
 * fuzz_gw_h2.c -- raw client bytes into a server HTTP/2 session (gw_h2.c):
 * feed, flush, drain the output, answer held requests, free. Must not crash,
 * hang or leak.
 *
 * The handler answers every other request at once and holds the rest; some
 * held ones are answered while the connection lives, the others after it is
 * freed (the cancelled path of gw_transport.h). The SQS API layer has its own
 * fuzz target for what comes after the protocol layer.
 *
 * Corpus: corpora/gw_h2/ holds recorded nghttp2 client sessions.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gw_h2.h"

#define MAX_HELD 256

struct fuzz_ctx {
    struct gw_exchange *held[MAX_HELD];
    size_t held_count;
    unsigned seen;
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void on_request(void *loop_ctx, struct gw_exchange *ex, const struct gw_request *req)
{
    struct fuzz_ctx *f = loop_ctx;
    f->seen++;
    if (f->seen % 2 == 0 && f->held_count < MAX_HELD) {
        f->held[f->held_count++] = ex;
        return;
    }
    const struct gw_header ct = {SL_SLICE_LIT("content-type"),
                                 SL_SLICE_LIT("application/x-amz-json-1.0")};
    /* Echo the body back: exercises DATA output and flow control. */
    gw_exchange_respond(ex, 200, &ct, 1, req->body.p, req->body.n);
}

static void drain(struct gw_h2c *c)
{
    for (int i = 0; i < 64; i++) {
        gw__h2c_flush(c);
        struct sl_slice out = gw__h2c_output(c);
        if (out.n == 0)
            break;
        gw__h2c_output_consume(c, out.n);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static bool quiet;
    if (!quiet) {
        sl_log_set_level(SL_LOG_ERROR);
        quiet = true;
    }
    struct fuzz_ctx f = {0};
    size_t inflight = 0;
    struct gw_handler handler = {.on_request = on_request};
    struct gw_proto_env env = {.handler = &handler, .loop_ctx = &f, .loop_inflight = &inflight};
    uint64_t now = 1000000000ull;
    struct gw_h2c *c = gw__h2c_new(&env, now);

    /* Feed in two pieces so that split frames are covered too. */
    size_t cut = size > 0 ? data[0] % (size + 1) : 0;
    gw__h2c_feed(c, data, cut, now);
    drain(c);
    gw__h2c_feed(c, data + cut, size - cut, now);
    drain(c);

    /* Half of the held exchanges answered while connected. */
    size_t answered = f.held_count / 2;
    for (size_t i = 0; i < answered; i++)
        gw_exchange_respond(f.held[i], 204, NULL, 0, NULL, 0);
    drain(c);
    gw__h2c_tick(c, now + GW_REQUEST_READ_TIMEOUT_NS + 1);
    drain(c);
    gw__h2c_goaway(c);
    drain(c);
    gw__h2c_free(c);
    for (size_t i = answered; i < f.held_count; i++)
        gw_exchange_respond(f.held[i], 200, NULL, 0, "late", 4);
    if (inflight != 0)
        abort();
    return 0;
}
