/*
 * gw_admin_int.h -- (gateway-internal) what the admin listener's files
 * share: the per-loop state, one authenticated request, and the helpers
 * every route uses to answer (gw_admin_util.c). The routes themselves are
 * in gw_admin_read.c (reads), gw_admin_msgs.c (peek, purge, one message),
 * gw_admin_ops.c (pause, reload, backup) and gw_admin_redrive.c; the
 * dispatch and authentication in gw_admin.c. docs/admin.md is the
 * contract.
 *
 * Stack: gw_admin_util.c under the route files, which are under
 * gw_admin.c. Threading: loop threads; an admin_req lives on its loop.
 */
#ifndef SLUICE_GW_ADMIN_INT_H
#define SLUICE_GW_ADMIN_INT_H

#include <stdbool.h>

#include <jansson.h>

#include "gw_act.h"

/* The admin listener's state on one I/O loop. base is a loop context
 * the way the SQS actions see one (api, loop, partitions client), so the
 * move-task runners run here exactly as they run for StartMessageMoveTask. */
struct gw_admin_loop {
    struct gw_api_loop base;
    struct sigv4_key_cache *keys;
};

#define GW_ADMIN_MAX_SEGS 8
#define GW_ADMIN_PRINCIPAL_MAX 96

/* One authenticated /api request. Owned by its route until
 * gw__admin_done() (which frees it); a route that waits for the engine
 * keeps it and answers from the completion, on the same loop. */
struct gw_admin_req {
    struct gw_admin_loop *l;
    struct gw_api *api;
    struct gw_exchange *ex;
    const struct gw_request *http;
    struct cfg_snapshot *snap; /* one reference, dropped by done */
    bool post;
    struct sl_slice query;
    /* path segments after "/api", %XX-decoded, NUL-terminated */
    char *seg[GW_ADMIN_MAX_SEGS];
    size_t nseg;
    char principal[GW_ADMIN_PRINCIPAL_MAX]; /* for the audit line */
    json_t *body;                           /* the parsed body of a POST, or NULL */
    char detail[256];                       /* what the write did, for the audit line */
};

/* ---- answering (each ends and frees the request) ------------------------ */

/* Answers status with o (stolen) as JSON. */
void gw__admin_json(struct gw_admin_req *r, int status, json_t *o);
/* Answers {"error": code, "message": ...} with status. */
void gw__admin_fail(struct gw_admin_req *r, int status, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Answers an engine status: 404 NotFound, 503 ServiceUnavailable,
 * 500 InternalError. */
void gw__admin_fail_storage(struct gw_admin_req *r, int status, const char *what);

/* ---- answering outside a route (no gw_admin_req yet) ------------------- */

void gw__admin_respond_error(struct gw_exchange *ex, int status, const char *code,
                             const char *message);
void gw__admin_respond_text(struct gw_exchange *ex, int status, const char *ctype, const void *body,
                            size_t n);

/* ---- reading a request -------------------------------------------------- */

/* Splits path (after "/api/") into r->seg. Returns SL_OK or SL_EINVAL
 * (too many segments, a bad %XX, an empty or NUL segment). */
int gw__admin_split_path(struct gw_admin_req *r, struct sl_slice rest);

/* Parses the POST body into r->body: an empty body is {}, anything but a
 * JSON object is refused. Only the keys in allowed (NULL-terminated) may
 * appear. Returns SL_OK, or SL_EINVAL after answering 400. */
int gw__admin_parse_body(struct gw_admin_req *r, const char *const *allowed);

/* The optional boolean body field key: def when absent. SL_OK, or
 * SL_EINVAL after answering 400. */
int gw__admin_body_bool(struct gw_admin_req *r, const char *key, bool def, bool *out);

/* The value of query parameter name (decoded into buf), or NULL. */
const char *gw__admin_query(const struct gw_admin_req *r, const char *name, char *buf, size_t cap);

/* Finds tenant/name (a configured tenant's live queue). SL_OK and *q, or
 * SL_ENOTFOUND after answering 404. */
int gw__admin_queue(struct gw_admin_req *r, const char *tenant, const char *name,
                    struct gw_queue *q);

/* "T/Q" into tenant and name (each a valid name). SL_OK or SL_EINVAL. */
int gw__admin_split_queue(const char *text, char *tenant, size_t tcap, char *name, size_t ncap);

/* ---- writes ------------------------------------------------------------- */

/* Takes a token of the listener's write rate. SL_OK, or SL_EBUSY after
 * answering 429. */
int gw__admin_write_admit(struct gw_admin_req *r);

/* The queue JSON object of docs/admin.md (counts, DLQ links, pause). */
json_t *gw__admin_queue_json(struct gw_admin_req *r, uint64_t id, bool full);

#endif
