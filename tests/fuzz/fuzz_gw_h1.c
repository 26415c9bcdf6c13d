/*
 * fuzz_gw_h1.c -- raw client bytes into a server HTTP/1.1 connection
 * (gw_h1.c): feed in pieces, flush, drain the output, answer held
 * requests, tick the timers, free. Must not crash, hang or leak, and every
 * request the handler was given must be released.
 *
 * The handler answers every other request at once and holds the rest (long
 * polls); held ones are answered while the connection lives, or after it
 * is freed (the cancelled path of gw_transport.h). Every third request is
 * refused at headers time, as an unauthenticated one would be.
 *
 * Corpus: corpora/gw_h1/ holds hand-written requests (keep-alive,
 * pipelining, chunked bodies, Expect, smuggling shapes).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gw_budget.h"
#include "gw_h1.h"

#define MAX_HELD 64

struct fuzz_ctx {
    struct gw_exchange *held[MAX_HELD];
    size_t held_count;
    unsigned seen, headers_seen;
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
    gw_exchange_respond(ex, 200, &ct, 1, req->body.p, req->body.n);
}

static enum gw_headers_verdict on_headers(void *loop_ctx, struct gw_exchange *ex,
                                          const struct gw_request *partial)
{
    struct fuzz_ctx *f = loop_ctx;
    if (++f->headers_seen % 3 != 0)
        return GW_HEADERS_CONTINUE;
    gw_exchange_respond(ex, 403, NULL, 0, "no", 2);
    return GW_HEADERS_ANSWERED;
}

static void drain(struct gw_h1c *c)
{
    for (int i = 0; i < 256; i++) {
        gw__h1c_flush(c);
        struct sl_slice out = gw__h1c_output(c);
        if (out.n == 0)
            break;
        gw__h1c_output_consume(c, out.n);
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
    struct gw_handler handler = {.on_request = on_request, .on_headers = on_headers};
    struct gw_budget *budget = gw__budget_new(1 << 20, 1 << 20);
    struct gw_proto_env env = {
        .handler = &handler, .loop_ctx = &f, .loop_inflight = &inflight, .budget = budget};
    uint64_t now = 1000000000ull;
    struct gw_h1c *c = gw__h1c_new(&env, now);

    /* Feed in three pieces so that split request lines, headers and chunk
     * sizes are covered too. */
    size_t cut1 = size > 0 ? data[0] % (size + 1) : 0;
    size_t cut2 = size > 1 ? cut1 + data[1] % (size - cut1 + 1) : cut1;
    gw__h1c_feed(c, data, cut1, now);
    drain(c);
    gw__h1c_feed(c, data + cut1, cut2 - cut1, now);
    drain(c);
    /* Half of the held requests answered while connected; each answer lets
     * the next pipelined request through, which may be held again. */
    for (size_t i = 0; i < f.held_count / 2 + 1 && i < f.held_count; i++) {
        gw_exchange_respond(f.held[i], 204, NULL, 0, NULL, 0);
        f.held[i] = NULL;
        drain(c);
    }
    gw__h1c_feed(c, data + cut2, size - cut2, now);
    drain(c);
    if (size % 3 == 0) { /* the client half-closes: whole requests still answered */
        gw__h1c_peer_eof(c);
        drain(c);
        for (size_t i = 0; i < f.held_count; i++) {
            if (f.held[i] != NULL && i % 2 == 0) {
                gw_exchange_respond(f.held[i], 204, NULL, 0, NULL, 0);
                f.held[i] = NULL;
                drain(c);
            }
        }
    }
    gw__h1c_tick(c, now + GW_REQUEST_READ_TIMEOUT_NS + 1);
    drain(c);
    gw__h1c_goaway(c);
    drain(c);
    gw__h1c_free(c);
    for (size_t i = 0; i < f.held_count; i++)
        if (f.held[i] != NULL)
            gw_exchange_respond(f.held[i], 200, NULL, 0, "late", 4);
    struct gw_budget_stats st;
    gw__budget_stats(budget, &st);
    if (inflight != 0 || st.used[GW_BUDGET_BODY] != 0 || st.used[GW_BUDGET_RESPONSE] != 0)
        abort();
    gw__budget_free(budget);
    return 0;
}
