/*
 * gw_exchange.c -- one request and its answer, independent of the HTTP
 * version that carried it: header and body storage within the limits,
 * budget charges, the handler's hold, cancellation, and the response body
 * it owns until the protocol layer has sent it. Implements gw_transport.h.
 *
 * Threading: everything runs on the loop thread that owns the connection.
 *
 * The exchange's life:
 *
 *   RECEIVING --complete--> DISPATCHED --respond--> RESPONDED --sent--> freed
 *       |                       |
 *       | limit hit: 4xx/refuse | connection or stream gone first
 *       v                       v
 *   REJECTED --gone--> freed  cancelled: on_cancel runs, detached;
 *                             respond() only frees
 *
 *  1. owner != NULL exactly while the protocol layer still has it.
 *  2. A DISPATCHED exchange is counted in *loop_inflight until respond().
 *  3. The protocol layer is reached only through ex->ops (it sits above).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "gw_budget.h"
#include "gw_exchange.h"
#include "gw_text.h"

#define JSON_CT "application/x-amz-json-1.0"
#define XML_CT "text/xml"
#define FORM_CT "application/x-www-form-urlencoded"
#define QUERY_XMLNS "http://queue.amazonaws.com/doc/2012-11-05/"

static void budget_give(struct gw_exchange *ex, enum gw_budget_kind k, size_t *charged, size_t n)
{
    SL_ASSERT(n <= *charged);
    if (ex->budget != NULL && n > 0)
        gw__budget_give(ex->budget, k, n);
    *charged -= n;
}

struct gw_exchange *gw__exchange_new(const struct gw_exchange_env *env)
{
    struct gw_exchange *ex = sl_xcalloc(1, sizeof(*ex));
    ex->ops = env->ops;
    ex->owner = env->owner;
    ex->now_ns = env->now_ns;
    ex->loop_inflight = env->loop_inflight;
    ex->conn_body_bytes = env->conn_body_bytes;
    ex->budget = env->budget;
    ex->flow = env->flow;
    ex->state = GW_EX_RECEIVING;
    ex->begin_ns = *env->now_ns;
    for (int i = 0; i < GW_PSEUDO_COUNT; i++)
        ex->pseudo[i] = -1;
    sl_buf_init(&ex->hdr_store);
    sl_buf_init(&ex->body);
    return ex;
}

void gw__exchange_release_response(struct gw_exchange *ex)
{
    budget_give(ex, GW_BUDGET_RESPONSE, &ex->resp_charged, ex->resp_charged);
    free(ex->resp_body);
    ex->resp_body = NULL;
}

void gw__exchange_response_sent(struct gw_exchange *ex, size_t n)
{
    budget_give(ex, GW_BUDGET_RESPONSE, &ex->resp_charged, SL_MIN(n, ex->resp_charged));
}

void gw__exchange_release_body(struct gw_exchange *ex)
{
    if (ex->owner != NULL && ex->conn_body_bytes != NULL)
        *ex->conn_body_bytes -= ex->body.n;
    budget_give(ex, GW_BUDGET_BODY, &ex->body_charged, ex->body_charged);
    sl_buf_free(&ex->body);
}

void gw__exchange_free(struct gw_exchange *ex)
{
    sl_buf_free(&ex->hdr_store);
    gw__exchange_release_body(ex);
    free(ex->refs);
    free(ex->headers);
    gw__exchange_release_response(ex);
    free(ex);
}

void gw__exchange_detach(struct gw_exchange *ex)
{
    if (ex->conn_body_bytes != NULL)
        *ex->conn_body_bytes -= ex->body.n;
    ex->owner = NULL;
    if (ex->state == GW_EX_QUEUED) {
        gw__runq_remove(&ex->run_item);
        if (ex->loop_inflight != NULL)
            (*ex->loop_inflight)--;
        gw__exchange_free(ex);
        return;
    }
    if (ex->state != GW_EX_DISPATCHED) {
        gw__exchange_free(ex);
        return;
    }
    ex->cancelled = true;
    ex->on_client_done = NULL;
    gw_cancel_fn *fn = ex->on_cancel;
    ex->on_cancel = NULL;
    if (fn != NULL)
        fn(ex, ex->cancel_data); /* may call respond(), which frees ex */
}

void gw__exchange_client_done(struct gw_exchange *ex)
{
    if (ex->client_done)
        return;
    ex->client_done = true;
    gw_cancel_fn *fn = ex->on_client_done;
    ex->on_client_done = NULL;
    if (fn != NULL && ex->state == GW_EX_DISPATCHED)
        fn(ex, ex->client_done_data); /* may call respond() */
}

/* ---- request assembly ------------------------------------------------------ */

int gw__exchange_add_header(struct gw_exchange *ex, const void *name, size_t namelen,
                            const void *value, size_t valuelen)
{
    static const char *const pseudo_names[GW_PSEUDO_COUNT] = {":method", ":path", ":authority",
                                                              ":scheme"};
    if (ex->header_overflow)
        return SL_ETOOBIG;
    /* RFC 9113 §6.5.2: each field costs its name, its value and 32 octets. */
    ex->header_list_bytes += namelen + valuelen + 32;
    if (ex->header_list_bytes > GW_MAX_HEADER_LIST_BYTES || ex->ref_count >= GW_MAX_HEADER_COUNT) {
        ex->header_overflow = true;
        return SL_ETOOBIG;
    }
    if (ex->ref_count % 16 == 0)
        ex->refs = sl_xrealloc(ex->refs, (ex->ref_count + 16) * sizeof(*ex->refs));
    /* One allocation for a signed SDK request's fields (about 1 KiB with
     * SigV4's): grown from sl_buf's 64 bytes, they cost five reallocs and
     * their copies per request, 0.7 % of the gateway's CPU in a batch
     * round trip's profile. */
    if (ex->hdr_store.cap == 0)
        sl_buf_reserve(&ex->hdr_store, GW_HDR_STORE_FIRST - 1);
    struct gw_hdr_ref *r = &ex->refs[ex->ref_count];
    r->name_off = (uint32_t)ex->hdr_store.n;
    r->name_len = (uint32_t)namelen;
    sl_buf_append(&ex->hdr_store, name, namelen);
    r->value_off = (uint32_t)ex->hdr_store.n;
    r->value_len = (uint32_t)valuelen;
    sl_buf_append(&ex->hdr_store, value, valuelen);
    if (namelen > 0 && ((const char *)name)[0] == ':') {
        for (int i = 0; i < GW_PSEUDO_COUNT; i++)
            if (strlen(pseudo_names[i]) == namelen && memcmp(pseudo_names[i], name, namelen) == 0)
                ex->pseudo[i] = (int)ex->ref_count;
    }
    ex->ref_count++;
    return SL_OK;
}

static struct sl_slice ref_name(const struct gw_exchange *ex, size_t i)
{
    return (struct sl_slice){ex->hdr_store.p + ex->refs[i].name_off, ex->refs[i].name_len};
}

static struct sl_slice ref_value(const struct gw_exchange *ex, size_t i)
{
    return (struct sl_slice){ex->hdr_store.p + ex->refs[i].value_off, ex->refs[i].value_len};
}

struct sl_slice gw__exchange_pseudo(const struct gw_exchange *ex, int which)
{
    int i = ex->pseudo[which];
    return i < 0 ? (struct sl_slice){"", 0} : ref_value(ex, (size_t)i);
}

bool gw__exchange_find_header(const struct gw_exchange *ex, const char *name,
                              struct sl_slice *value)
{
    for (size_t i = 0; i < ex->ref_count; i++) {
        if (sl_slice_eq_cstr(ref_name(ex, i), name)) {
            *value = ref_value(ex, i);
            return true;
        }
    }
    return false;
}

/* Built from the stored header bytes once they stop moving: at the end of
 * the headers for on_headers, and again at the end of the request, which
 * only adds the body (trailers are not stored). */
void gw__exchange_build_request(struct gw_exchange *ex, const struct gw_proto_env *env)
{
    ex->req.body = (struct sl_slice){ex->body.p != NULL ? ex->body.p : "", ex->body.n};
    ex->req.start_mono_ns = *ex->now_ns;
    if (ex->headers != NULL)
        return;
    size_t regular = 0;
    ex->headers = sl_xcalloc(ex->ref_count + 1, sizeof(*ex->headers));
    struct sl_slice host = {"", 0};
    for (size_t i = 0; i < ex->ref_count; i++) {
        struct sl_slice name = ref_name(ex, i);
        if (name.n > 0 && name.p[0] == ':')
            continue;
        ex->headers[regular].name = name;
        ex->headers[regular].value = ref_value(ex, i);
        if (sl_slice_eq_cstr(name, "host"))
            host = ex->headers[regular].value;
        regular++;
    }
    sl_uuid4(ex->request_id);
    ex->req.method = gw__exchange_pseudo(ex, GW_PSEUDO_METHOD);
    ex->req.path = gw__exchange_pseudo(ex, GW_PSEUDO_PATH);
    ex->req.authority =
        ex->pseudo[GW_PSEUDO_AUTHORITY] >= 0 ? gw__exchange_pseudo(ex, GW_PSEUDO_AUTHORITY) : host;
    ex->req.scheme = gw__exchange_pseudo(ex, GW_PSEUDO_SCHEME);
    ex->req.headers = ex->headers;
    ex->req.header_count = regular;
    ex->req.request_id = ex->request_id;
    ex->req.tls = env->tls;
    memcpy(ex->req.peer, env->peer, sizeof ex->req.peer);
}

bool gw__exchange_is_healthz(const struct gw_exchange *ex)
{
    struct sl_slice m = gw__exchange_pseudo(ex, GW_PSEUDO_METHOD);
    struct sl_slice p = gw__exchange_pseudo(ex, GW_PSEUDO_PATH);
    if (!sl_slice_eq_cstr(m, "GET") && !sl_slice_eq_cstr(m, "HEAD"))
        return false;
    return sl_slice_eq_cstr(p, "/healthz") || (p.n > 8 && memcmp(p.p, "/healthz?", 9) == 0);
}

void gw__exchange_answer_healthz(struct gw_exchange *ex, const struct gw_handler *h)
{
    const struct gw_header ct = {SL_SLICE_LIT("content-type"),
                                 SL_SLICE_LIT("text/plain; charset=utf-8")};
    char why[256] = "ok";
    int status = 200;
    if (h != NULL && h->health != NULL) {
        status = h->health(h->app, why, sizeof why);
    }
    gw__exchange_submit(ex, status, &ct, 1, why, strlen(why));
}

int gw__exchange_body_reserve(struct gw_exchange *ex, size_t len)
{
    /* One allocation, bounded, and charged now since it is memory now. */
    if (ex->budget != NULL && gw__budget_take(ex->budget, GW_BUDGET_BODY, len) != SL_OK) {
        gw__budget_count(ex->budget, GW_BUDGET_REFUSED_BODY);
        return SL_EBUSY;
    }
    ex->body_charged = len;
    sl_buf_reserve(&ex->body, len);
    return SL_OK;
}

int gw__exchange_body_append(struct gw_exchange *ex, const void *data, size_t len)
{
    if (ex->body.n + len > GW_MAX_REQUEST_BODY)
        return SL_ETOOBIG;
    size_t more = ex->body.n + len > ex->body_charged ? ex->body.n + len - ex->body_charged : 0;
    if (more > 0 && ex->budget != NULL) {
        if (gw__budget_take(ex->budget, GW_BUDGET_BODY, more) != SL_OK) {
            /* The process holds all the bodies it may: this one waits. */
            gw__budget_count(ex->budget, GW_BUDGET_REFUSED_BODY);
            return SL_EBUSY;
        }
    }
    ex->body_charged += more;
    sl_buf_append(&ex->body, data, len);
    if (ex->conn_body_bytes != NULL)
        *ex->conn_body_bytes += len;
    return SL_OK;
}

/* The request's turn in the run queue. */
static void run_queued(struct gw_runq_item *item)
{
    struct gw_exchange *ex =
        (struct gw_exchange *)((char *)item - offsetof(struct gw_exchange, run_item));
    SL_ASSERT(ex->state == GW_EX_QUEUED);
    ex->state = GW_EX_DISPATCHED;
    ex->handler->on_request(ex->loop_ctx, ex, &ex->req);
}

void gw__exchange_dispatch(struct gw_exchange *ex, const struct gw_handler *h, void *loop_ctx)
{
    if (ex->loop_inflight != NULL)
        (*ex->loop_inflight)++;
    if (ex->flow == NULL) {
        ex->state = GW_EX_DISPATCHED;
        h->on_request(loop_ctx, ex, &ex->req);
        return;
    }
    ex->state = GW_EX_QUEUED;
    ex->handler = h;
    ex->loop_ctx = loop_ctx;
    gw__runq_push(ex->flow, &ex->run_item, run_queued);
}

/* The exchange is lent to on_headers as if dispatched, and taken back
 * unless answered. */
bool gw__exchange_offer_headers(struct gw_exchange *ex, const struct gw_proto_env *env)
{
    const struct gw_handler *h = env->handler;
    gw__exchange_build_request(ex, env);
    ex->state = GW_EX_DISPATCHED;
    if (ex->loop_inflight != NULL)
        (*ex->loop_inflight)++;
    if (h->on_headers(env->loop_ctx, ex, &ex->req) == GW_HEADERS_ANSWERED) {
        SL_ASSERT(ex->state == GW_EX_RESPONDED);
        return true;
    }
    SL_ASSERT(ex->state == GW_EX_DISPATCHED);
    ex->state = GW_EX_RECEIVING;
    if (ex->loop_inflight != NULL)
        (*ex->loop_inflight)--;
    return false;
}

/* ---- responses -------------------------------------------------------------- */

void gw__exchange_submit_owned(struct gw_exchange *ex, int status, const struct gw_header *headers,
                               size_t header_count, char *body, size_t body_len)
{
    ex->state = GW_EX_RESPONDED;
    ex->progress_ns = *ex->now_ns;
    if (body_len > 0) {
        ex->resp_body = body;
        /* Charged whatever the limit: it exists already. New requests wait
         * while the budget is spent. */
        if (ex->budget != NULL)
            gw__budget_force(ex->budget, GW_BUDGET_RESPONSE, body_len);
        ex->resp_charged = body_len;
    } else {
        free(body);
    }
    gw__exchange_release_body(ex); /* the copy, if any, is made: nothing borrows from it */
    ex->resp_len = body_len;
    if (ex->request_id[0] == '\0')
        sl_uuid4(ex->request_id);
    ex->ops->submit(ex, status, headers, header_count);
}

void gw__exchange_submit(struct gw_exchange *ex, int status, const struct gw_header *headers,
                         size_t header_count, const void *body, size_t body_len)
{
    char *copy = NULL;
    if (body_len > 0) {
        copy = sl_trymalloc(body_len);
        if (copy == NULL) {
            static struct sl_log_limit oom_log = SL_LOG_LIMIT(5, 10000);
            sl_log_limited(&oom_log, SL_LOG_ERROR, "gw", "out of memory for a %zu-byte response",
                           body_len);
            status = 500;
            body_len = 0;
        } else {
            memcpy(copy, body, body_len);
        }
    }
    gw__exchange_submit_owned(ex, status, headers, header_count, copy, body_len);
}

bool gw_media_type_is(struct sl_slice v, const char *type)
{
    size_t n = strlen(type);
    if (v.n < n || strncasecmp(v.p, type, n) != 0)
        return false;
    return v.n == n || v.p[n] == ';' || v.p[n] == ' ';
}

/* True if a raw query string has a parameter named Action. */
static bool query_has_action(struct sl_slice q)
{
    for (size_t i = 0; i + 7 <= q.n; i++)
        if ((i == 0 || q.p[i - 1] == '&') && memcmp(q.p + i, "Action=", 7) == 0)
            return true;
    return false;
}

/* The rule of gw_request_is_query, on whatever headers have arrived. */
static bool query_shaped(struct sl_slice method, struct sl_slice full_path, bool has_target,
                         const struct sl_slice *content_type)
{
    if (has_target)
        return false;
    bool post = sl_slice_eq_cstr(method, "POST");
    if (post && content_type != NULL && gw_media_type_is(*content_type, FORM_CT))
        return true;
    struct sl_slice path, query;
    gw_request_split_path(full_path, &path, &query);
    /* botocore presigns a POST by moving its form into the query string */
    return (post || sl_slice_eq_cstr(method, "GET")) && query_has_action(query);
}

bool gw_request_is_query(const struct gw_request *req)
{
    const struct gw_header *ct = gw_request_header(req, "content-type");
    return query_shaped(req->method, req->path, gw_request_header(req, "x-amz-target") != NULL,
                        ct != NULL ? &ct->value : NULL);
}

/* SQS's query error document (as gw_sqs_xml.c writes it for the API). */
static void query_error_body(struct sl_buf *out, const char *type, const char *message, bool sender,
                             const char *request_id)
{
    sl_buf_append_cstr(out,
                       "<?xml version=\"1.0\"?><ErrorResponse xmlns=\"" QUERY_XMLNS "\"><Error>");
    gw_xml_elem_cstr(out, "Type", sender ? "Sender" : "Receiver");
    gw_xml_elem_cstr(out, "Code", type);
    gw_xml_elem_cstr(out, "Message", message);
    sl_buf_append_cstr(out, "<Detail/></Error>");
    gw_xml_elem_cstr(out, "RequestId", request_id);
    gw_xml_close(out, "ErrorResponse");
}

void gw__exchange_respond_error(struct gw_exchange *ex, int status, const char *type,
                                const char *message, const struct gw_header *extra,
                                size_t extra_count)
{
    /* In the client's protocol, as far as the headers so far tell: a query
     * client (boto3 before 1.34, the aws CLI 2.9, the JavaScript SDK v2)
     * cannot parse a JSON error and reports a parse failure instead of the
     * refusal. */
    struct sl_slice ct, unused;
    bool query = query_shaped(gw__exchange_pseudo(ex, GW_PSEUDO_METHOD),
                              gw__exchange_pseudo(ex, GW_PSEUDO_PATH),
                              gw__exchange_find_header(ex, "x-amz-target", &unused),
                              gw__exchange_find_header(ex, "content-type", &ct) ? &ct : NULL);
    bool sender = status < 500;
    struct sl_buf body;
    sl_buf_init(&body);
    char query_error[96];
    struct gw_header headers[4];
    size_t n = 0;
    if (query) {
        query_error_body(&body, type, message, sender, ex->request_id);
        headers[n++] = (struct gw_header){SL_SLICE_LIT("content-type"), SL_SLICE_LIT(XML_CT)};
    } else {
        sl_buf_printf(&body, "{\"__type\":\"com.amazon.coral.service#%s\",\"message\":\"%s\"}",
                      type, message);
        snprintf(query_error, sizeof(query_error), "%s;%s", type, sender ? "Sender" : "Receiver");
        headers[n++] = (struct gw_header){SL_SLICE_LIT("content-type"), SL_SLICE_LIT(JSON_CT)};
        headers[n++] =
            (struct gw_header){SL_SLICE_LIT("x-amzn-query-error"), sl_slice_cstr(query_error)};
    }
    for (size_t i = 0; i < extra_count && n < SL_ARRAY_LEN(headers); i++)
        headers[n++] = extra[i];
    size_t len;
    char *owned = sl_buf_take(&body, &len); /* never empty: no second copy */
    gw__exchange_submit_owned(ex, status, headers, n, owned, len);
}

/* Both responds end the handler's hold on ex. Returns the owner to wake
 * after submitting, or NULL when the exchange was cancelled (freed now). */
static void *respond_begin(struct gw_exchange *ex)
{
    SL_ASSERT(ex->state == GW_EX_DISPATCHED);
    if (ex->loop_inflight != NULL)
        (*ex->loop_inflight)--;
    if (ex->owner == NULL) {
        gw__exchange_free(ex); /* cancelled: the client is gone */
        return NULL;
    }
    ex->on_cancel = NULL;
    ex->on_client_done = NULL;
    return ex->owner;
}

void gw_exchange_respond(struct gw_exchange *ex, int status, const struct gw_header *headers,
                         size_t header_count, const void *body, size_t body_len)
{
    const struct gw_exchange_ops *ops = ex->ops;
    void *owner = respond_begin(ex);
    if (owner != NULL) {
        gw__exchange_submit(ex, status, headers, header_count, body, body_len);
        ops->wake(owner);
    }
}

void gw_exchange_respond_take(struct gw_exchange *ex, int status, const struct gw_header *headers,
                              size_t header_count, char *body, size_t body_len)
{
    const struct gw_exchange_ops *ops = ex->ops;
    void *owner = respond_begin(ex);
    if (owner == NULL) {
        free(body);
        return;
    }
    gw__exchange_submit_owned(ex, status, headers, header_count, body, body_len);
    ops->wake(owner);
}

bool gw_exchange_cancelled(const struct gw_exchange *ex)
{
    return ex->cancelled;
}

void gw_exchange_on_cancel(struct gw_exchange *ex, gw_cancel_fn *fn, void *data)
{
    ex->on_cancel = fn;
    ex->cancel_data = data;
}

bool gw_exchange_client_done(const struct gw_exchange *ex)
{
    return ex->client_done;
}

void gw_exchange_on_client_done(struct gw_exchange *ex, gw_cancel_fn *fn, void *data)
{
    ex->on_client_done = fn;
    ex->client_done_data = data;
}

const struct gw_request *gw_exchange_request(const struct gw_exchange *ex)
{
    return &ex->req;
}

const struct gw_header *gw_request_header(const struct gw_request *req, const char *name)
{
    for (size_t i = 0; i < req->header_count; i++) {
        if (sl_slice_eq_cstr(req->headers[i].name, name)) {
            return &req->headers[i];
        }
    }
    return NULL;
}

void gw_request_split_path(struct sl_slice full, struct sl_slice *path, struct sl_slice *query)
{
    const char *q = full.n > 0 ? memchr(full.p, '?', full.n) : NULL;
    if (q == NULL) {
        *path = full;
        *query = (struct sl_slice){"", 0};
    } else {
        *path = (struct sl_slice){full.p, (size_t)(q - full.p)};
        *query = (struct sl_slice){q + 1, full.n - (size_t)(q + 1 - full.p)};
    }
}

size_t gw__http_date_now(char out[GW_HTTP_DATE_CAP])
{
    static _Thread_local time_t cached_at = (time_t)-1;
    static _Thread_local char cached[GW_HTTP_DATE_CAP];
    static _Thread_local size_t cached_len;
    time_t now = time(NULL);
    if (now != cached_at) {
        cached_len = sl_http_date((int64_t)now, cached, sizeof(cached));
        cached_at = now;
    }
    memcpy(out, cached, cached_len + 1);
    return cached_len;
}

size_t gw__format_u64(uint64_t v, char out[24])
{
    char rev[24];
    size_t n = 0;
    do {
        rev[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    for (size_t i = 0; i < n; i++)
        out[i] = rev[n - 1 - i];
    out[n] = '\0';
    return n;
}

void gw__output_consume(struct sl_buf *out, size_t n)
{
    SL_ASSERT(n <= out->n);
    if (n == 0)
        return;
    memmove(out->p, out->p + n, out->n - n);
    out->n -= n;
    if (out->p != NULL)
        out->p[out->n] = '\0';
    if (out->n == 0 && out->cap > 2 * GW_OUT_HIGH_WATER)
        sl_buf_free(out);
}
