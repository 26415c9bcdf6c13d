/*
 * gw_act.h -- (gateway-internal) the seam between gw_api.c, which
 * authenticates, decodes and dispatches a request, and the SQS action
 * handlers (gateway/gw_act_<group>.c), each named in gw_actions.def.
 *
 * A handler gets a struct gw_act_ctx holding everything the request needs
 * (the exchange, the configuration snapshot it started with, the
 * authenticated principal, the decoded request) and must end it exactly
 * once with gw__act_finish() or gw__act_fail() -- now, or later from a
 * completion (partition commit, long-poll wake) on the same loop thread.
 * If the client goes away meanwhile, gw_exchange_cancelled(ctx->ex) turns
 * true; the handler still finishes (which then only frees).
 *
 * Threading: everything here runs on the loop thread that owns ctx->ex.
 * Ownership: gw_api.c allocates the ctx; finish/fail free it (and drop the
 * snapshot reference), so the ctx must not be touched afterwards.
 */
#ifndef SLUICE_GW_ACT_H
#define SLUICE_GW_ACT_H

#include <stdint.h>

#include "cfg.h"
#include "gw_http.h"
#include "gw_sqs.h"

struct gw_api;
struct gw_api_loop;

struct gw_act_ctx {
    struct gw_api *api;
    struct gw_api_loop *loop; /* the per-loop context of this I/O thread */
    struct gw_exchange *ex;
    const struct gw_request *http;
    struct cfg_snapshot *snap;      /* one reference, held until finish */
    struct cfg_principal principal; /* borrows from snap */
    enum gw_sqs_action action;
    struct gw_sqs_request req; /* decoded; fini'd by finish */
    uint64_t queue_id;         /* the queue it named, once resolved; 0 before */
};

typedef void gw_act_fn(struct gw_act_ctx *ctx);

/* Sends reply (status, SQS headers, body), logs the request line, and
 * frees ctx. */
void gw__act_finish(struct gw_act_ctx *ctx, struct gw_sqs_reply *reply);

/* Sends the SQS error err and frees ctx. */
void gw__act_fail(struct gw_act_ctx *ctx, const struct gw_sqs_err *err);

/* The handler of every action not implemented yet: UnsupportedOperation,
 * "<Action> is not implemented yet". */
gw_act_fn gw__act_not_implemented;

/* AddPermission / RemovePermission: sluice has no IAM. */
gw_act_fn gw__act_no_iam;

/* Every handler the action table names (gw_act_queue.c, gw_act_msg.c). */
#define GW_SQS_ACTION(name, camel, snake, fn) gw_act_fn fn;
#include "gw_actions.def"
#undef GW_SQS_ACTION

#endif
