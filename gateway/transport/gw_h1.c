/*
 * gw_h1.c -- the HTTP/1.1 protocol layer: libhttp-parser (2.9, Node's
 * parser before llhttp) fed from memory, requests assembled into a struct
 * gw_exchange (gw_exchange.c) within the same limits as HTTP/2, answers
 * written into an output buffer. No sockets here, so unit tests and the
 * fuzzer drive it from byte arrays.
 *
 * Threading: everything runs on the loop thread that owns the connection.
 *
 * One request at a time (RFC 9112 §9.3.2: answers go in request order).
 * The parser pauses at the end of each request; bytes after it wait in
 * `in` until the answer is fully queued, then parsing resumes. A request's
 * life on the connection:
 *
 *   IDLE --first byte--> HEADERS --headers end--> BODY --end--> HANDLER
 *                                                                  |
 *   IDLE <--answer queued, keep-alive-- SENDING <--respond---------+
 *
 * EOF from the client (gw__h1c_peer_eof) is taken as a half-close: it may
 * have shut down only its sending side, which RFC 9112 §9.6 allows, and
 * looks the same as a close. The requests it sent whole are answered,
 * waits among them end now (gw_exchange_client_done), a request it did
 * not finish is dropped, and the connection closes after the last answer.
 *
 * Refusals (400, 408, 413, 431, 503, 505) are answered with
 * Connection: close and end the connection: the bytes after a bad request
 * cannot be trusted to start a new one.
 *
 * Spec: RFC 9112 (HTTP/1.1 message syntax), RFC 9110 (semantics).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <http_parser.h>

#include "gw_budget.h"
#include "gw_connlimit.h"
#include "gw_h1.h"

enum h1_phase { H1_IDLE, H1_HEADERS, H1_BODY, H1_HANDLER, H1_SENDING };

/* A request target, header name or header value as the parser hands it
 * over. Nearly always it comes in one piece that stays in the connection's
 * input buffer until the parser returns, and is used from there; only a
 * piece split across reads, or still wanted when the parser returns, is
 * copied into buf (profiles showed the two copies per header of copying
 * always). At most one of ref and buf holds bytes. */
struct h1_piece {
    char *ref; /* into gw_h1c.in, valid until http_parser_execute returns */
    size_t ref_n;
    struct sl_buf buf;
};

struct gw_h1c {
    struct gw_proto_env env;
    http_parser parser;
    struct sl_buf in; /* bytes not parsed yet: [in_off, in.n) */
    size_t in_off;
    struct sl_buf out;
    struct gw_exchange *ex; /* the current request, attached */
    enum h1_phase phase;
    uint64_t now_ns, last_active_ns, progress_ns;
    bool in_feed;
    bool message_done;   /* the parser paused at the end of a request */
    bool failed;         /* nothing more is parsed */
    bool close_after;    /* close once the current answer is queued */
    bool close_on_flush; /* done once out is empty */
    bool goaway;
    bool peer_eof;   /* the client sends nothing more */
    bool keep_alive; /* of the current request, as RFC 9112 §9.3 decides */
    bool head;       /* the current request is HEAD: no body in the answer */

    /* header assembly: see struct h1_piece */
    struct h1_piece field, value, url;
    bool in_value;
    unsigned content_lengths, transfer_encodings, hosts;
    bool te_not_chunked;
    bool expect_continue;

    /* Our own look at the raw header section, ahead of the parser.
     * Debian builds libhttp-parser non-strict: it accepts obs-fold
     * continuation lines (RFC 9112 §5.2 lets a server reject them, and we
     * do), takes a CR followed by any byte as a line end, and a space as
     * part of a field name, so "Content-Length : 5" still frames the body
     * while a proxy in front may read it as an unknown field. */
    size_t scan_off; /* next byte of in to look at */
    bool scan_done;  /* the header section ended: the rest is body */
    bool scan_line_start;
    unsigned scan_lines; /* non-empty lines seen */
    bool scan_bad;       /* obs-fold, NUL, or a CR not followed by LF */
    bool bad_name;       /* a field name with a byte RFC 9110's token excludes */
};

static const struct gw_exchange_ops h1_ops;

static void count(struct gw_h1c *c, enum gw_http_refusal why)
{
    gw__connlimit_count_http(c->env.counters, why);
}

static size_t piece_len(const struct h1_piece *pc)
{
    return pc->ref != NULL ? pc->ref_n : pc->buf.n;
}

static struct sl_slice piece_view(const struct h1_piece *pc)
{
    if (pc->ref != NULL)
        return (struct sl_slice){pc->ref, pc->ref_n};
    return (struct sl_slice){pc->buf.p != NULL ? pc->buf.p : "", pc->buf.n};
}

static void piece_reset(struct h1_piece *pc)
{
    pc->ref = NULL;
    pc->ref_n = 0;
    sl_buf_reset(&pc->buf);
}

/* Moves a piece out of the input buffer, which may move once the parser
 * returns. */
static void piece_spill(struct h1_piece *pc)
{
    if (pc->ref == NULL)
        return;
    sl_buf_append(&pc->buf, pc->ref, pc->ref_n);
    pc->ref = NULL;
    pc->ref_n = 0;
}

/* at points into c->in (the parser runs on it), so a reference may write:
 * commit_header lowercases a name where it lies. */
static void piece_add(struct gw_h1c *c, struct h1_piece *pc, const char *at, size_t len)
{
    if (pc->ref == NULL && pc->buf.n == 0) {
        pc->ref = c->in.p + (at - c->in.p);
        pc->ref_n = len;
        return;
    }
    piece_spill(pc);
    sl_buf_append(&pc->buf, at, len);
}

static void reset_message_state(struct gw_h1c *c)
{
    piece_reset(&c->field);
    piece_reset(&c->value);
    piece_reset(&c->url);
    c->in_value = false;
    c->content_lengths = c->transfer_encodings = c->hosts = 0;
    c->te_not_chunked = false;
    c->expect_continue = false;
    c->head = false;
    c->message_done = false;
    c->scan_off = c->in_off;
    c->scan_done = false;
    c->scan_line_start = true;
    c->scan_lines = 0;
    c->scan_bad = false;
    c->bad_name = false;
}

/* The connection's one request (no per-connection body sum: one body at a
 * time, bounded by GW_MAX_REQUEST_BODY). */
static void new_exchange(struct gw_h1c *c)
{
    struct gw_exchange_env xenv = {
        .ops = &h1_ops,
        .owner = c,
        .now_ns = &c->now_ns,
        .loop_inflight = c->env.loop_inflight,
        .budget = c->env.budget,
        .flow = c->env.flow,
    };
    c->ex = gw__exchange_new(&xenv);
    if (c->peer_eof)
        gw__exchange_client_done(c->ex); /* a pipelined request read before the EOF */
}

/* ---- refusals ----------------------------------------------------------- */

/* Makes http_parser_execute() return after the current callback (a parser
 * already in error has stopped by itself). */
static void stop_parser(struct gw_h1c *c)
{
    enum http_errno e = HTTP_PARSER_ERRNO(&c->parser);
    if (e == HPE_OK || e == HPE_PAUSED)
        http_parser_pause(&c->parser, 1);
}

/* Answers the current request (made now if the parser had not begun one)
 * with an error and closes the connection after it. */
static void refuse(struct gw_h1c *c, int status, enum gw_http_refusal why, const char *type,
                   const char *message)
{
    count(c, why);
    c->failed = true;
    c->close_after = true;
    stop_parser(c);
    if (c->ex == NULL)
        new_exchange(c);
    if (c->ex->state != GW_EX_RECEIVING) {
        c->close_on_flush = c->phase != H1_HANDLER && c->phase != H1_SENDING;
        return;
    }
    c->ex->state = GW_EX_REJECTED;
    const struct gw_header retry = {SL_SLICE_LIT("retry-after"), SL_SLICE_LIT("1")};
    gw__exchange_respond_error(c->ex, status, type, message, status == 503 ? &retry : NULL,
                               status == 503 ? 1 : 0);
}

static void refuse_bad(struct gw_h1c *c, const char *message)
{
    refuse(c, 400, GW_HTTP_BAD_REQUEST, "BadRequest", message);
}

static void refuse_budget(struct gw_h1c *c)
{
    refuse(c, 503, GW_HTTP_BUDGET, "ServiceUnavailable",
           "the server is busy; retry the request later");
}

static void refuse_too_large(struct gw_h1c *c)
{
    refuse(c, 413, GW_HTTP_BODY_TOO_LARGE, "RequestEntityTooLarge",
           "request body exceeds " GW_MAX_REQUEST_BODY_TEXT " bytes");
}

static void refuse_headers(struct gw_h1c *c)
{
    refuse(c, 431, GW_HTTP_HEADER_TOO_LARGE, "RequestHeaderFieldsTooLarge",
           "request header list exceeds 65536 bytes or 128 fields");
}

/* ---- the raw header section ----------------------------------------------- */

/* Looks at header bytes the parser has not seen yet, up to the empty line
 * that ends the section. */
static void scan_headers(struct gw_h1c *c)
{
    while (!c->scan_done && c->scan_off < c->in.n) {
        const char *p = c->in.p + c->scan_off;
        size_t left = c->in.n - c->scan_off;
        if (!c->scan_line_start) {
            /* Inside a line only its end, a NUL and a CR matter: memchr
             * finds them faster than a byte loop, which showed in
             * profiles. A CR is allowed only right before the LF; one at
             * the end of the bytes so far waits for the next byte. */
            const char *nl = memchr(p, '\n', left);
            size_t span = nl != NULL ? (size_t)(nl - p) : left;
            if (memchr(p, '\0', span) != NULL)
                c->scan_bad = true;
            const char *cr = memchr(p, '\r', span);
            if (cr != NULL && cr != p + span - 1)
                c->scan_bad = true;
            else if (cr != NULL && nl == NULL)
                span--; /* a CR last: judged with the byte after it */
            c->scan_off += span;
            if (nl == NULL)
                break;
            c->scan_off++;
            c->scan_line_start = true;
            continue;
        }
        char ch = *p;
        if (ch == '\r' && left < 2)
            break; /* judged with the byte after it */
        c->scan_off++;
        if ((ch == '\r' && p[1] != '\n') || ch == '\0') {
            c->scan_bad = true; /* a bare CR, or a NUL */
        } else if (ch == '\n') {
            if (c->scan_lines > 0)
                c->scan_done = true; /* the empty line */
        } else if (ch != '\r') {     /* a CR is part of the line end */
            if ((ch == ' ' || ch == '\t') && c->scan_lines > 0)
                c->scan_bad = true; /* obs-fold, or whitespace before a field name */
            c->scan_lines++;
            c->scan_line_start = false;
        }
    }
}

/* ---- parser callbacks ------------------------------------------------------- */

static int on_message_begin(http_parser *p)
{
    struct gw_h1c *c = p->data;
    SL_ASSERT(c->ex == NULL);
    new_exchange(c);
    c->phase = H1_HEADERS;
    return 0;
}

static int on_url(http_parser *p, const char *at, size_t len)
{
    struct gw_h1c *c = p->data;
    if (piece_len(&c->url) + len > GW_MAX_HEADER_LIST_BYTES) {
        refuse(c, 414, GW_HTTP_HEADER_TOO_LARGE, "RequestURITooLong",
               "request target exceeds 65536 bytes");
        return 0;
    }
    piece_add(c, &c->url, at, len);
    return 0;
}

static bool value_is(struct sl_slice v, struct sl_slice want)
{
    return v.n == want.n && strncasecmp(v.p, want.p, want.n) == 0;
}

/* RFC 9110 §5.6.2: the bytes a field name (a token) may hold. */
static bool is_tchar(char ch)
{
    if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9'))
        return true;
    return ch != '\0' && strchr("!#$%&'*+-.^_`|~", ch) != NULL;
}

/* name is lowercase already: plain bytes compare, length first. */
static bool name_is(struct sl_slice name, struct sl_slice want)
{
    return name.n == want.n && memcmp(name.p, want.p, want.n) == 0;
}

/* The field and value assembled so far become a header of the request. */
static int commit_header(struct gw_h1c *c)
{
    if (!c->in_value)
        return SL_OK;
    c->in_value = false;
    if (c->phase != H1_HEADERS) {
        /* Trailers of a chunked body: not stored, as on HTTP/2. */
        piece_reset(&c->field);
        piece_reset(&c->value);
        return SL_OK;
    }
    struct sl_slice name = piece_view(&c->field);
    struct sl_slice value = piece_view(&c->value);
    char *lower = (char *)name.p; /* ours: c->in or field.buf, never a literal */
    for (size_t i = 0; i < name.n; i++) {
        if (!is_tchar(lower[i]))
            c->bad_name = true; /* RFC 9112 §5.1: whitespace before the colon is a 400 */
        if (lower[i] >= 'A' && lower[i] <= 'Z')
            lower[i] = (char)(lower[i] + ('a' - 'A'));
    }
    while (value.n > 0 && (value.p[value.n - 1] == ' ' || value.p[value.n - 1] == '\t'))
        value.n--;
    if (name_is(name, SL_SLICE_LIT("content-length"))) {
        c->content_lengths++;
    } else if (name_is(name, SL_SLICE_LIT("transfer-encoding"))) {
        c->transfer_encodings++;
        if (!value_is(value, SL_SLICE_LIT("chunked")))
            c->te_not_chunked = true;
    } else if (name_is(name, SL_SLICE_LIT("host"))) {
        c->hosts++;
    } else if (name_is(name, SL_SLICE_LIT("expect"))) {
        c->expect_continue = value_is(value, SL_SLICE_LIT("100-continue"));
    }
    int rv = gw__exchange_add_header(c->ex, name.p, name.n, value.p, value.n);
    piece_reset(&c->field);
    piece_reset(&c->value);
    return rv;
}

static int on_header_field(http_parser *p, const char *at, size_t len)
{
    struct gw_h1c *c = p->data;
    if (c->in_value && commit_header(c) != SL_OK) {
        refuse_headers(c);
        return 0;
    }
    if (piece_len(&c->field) + len > GW_MAX_HEADER_LIST_BYTES) {
        refuse_headers(c);
        return 0;
    }
    piece_add(c, &c->field, at, len);
    return 0;
}

static int on_header_value(http_parser *p, const char *at, size_t len)
{
    struct gw_h1c *c = p->data;
    c->in_value = true;
    if (piece_len(&c->value) + len > GW_MAX_HEADER_LIST_BYTES) {
        refuse_headers(c);
        return 0;
    }
    piece_add(c, &c->value, at, len);
    return 0;
}

/* Request smuggling and framing checks of RFC 9112 §6.3, whatever the
 * parser already enforces: a message whose length two parties could read
 * differently is refused. Returns an error message or NULL. */
static const char *framing_error(const struct gw_h1c *c)
{
    if (c->transfer_encodings > 0 && c->content_lengths > 0)
        return "both Content-Length and Transfer-Encoding";
    if (c->content_lengths > 1)
        return "more than one Content-Length";
    if (c->transfer_encodings > 1 || c->te_not_chunked)
        return "Transfer-Encoding other than chunked";
    return NULL;
}

/* RFC 9112 §3.2.2: a server accepts the absolute-form
 * ("http://host:port/path?query") as well; its authority then replaces
 * Host. Splits the target into authority (empty for the origin-form) and
 * path. False when it is neither form. */
static bool split_target(struct sl_slice url, struct sl_slice *authority, struct sl_slice *path)
{
    *authority = (struct sl_slice){"", 0};
    *path = url;
    if (url.n > 0 && url.p[0] == '/')
        return true;
    size_t skip = 0;
    if (url.n > 7 && strncasecmp(url.p, "http://", 7) == 0)
        skip = 7;
    else if (url.n > 8 && strncasecmp(url.p, "https://", 8) == 0)
        skip = 8;
    if (skip == 0)
        return false;
    const char *a = url.p + skip;
    size_t rest = url.n - skip;
    size_t alen = 0;
    while (alen < rest && a[alen] != '/' && a[alen] != '?')
        alen++;
    if (alen == 0 || alen == rest || a[alen] != '/')
        return false; /* no authority, or no path: nothing SQS serves */
    *authority = (struct sl_slice){a, alen};
    *path = (struct sl_slice){a + alen, rest - alen};
    return true;
}

static const char *header_error(const struct gw_h1c *c)
{
    const http_parser *p = &c->parser;
    if (c->scan_bad)
        return "malformed header section (obs-fold, NUL or a bare CR)";
    if (c->bad_name)
        return "malformed header field name (RFC 9110 token; no space before the colon)";
    if (p->method == HTTP_CONNECT)
        return "CONNECT is not served";
    struct sl_slice authority, path;
    struct sl_slice url = piece_view(&c->url);
    if (url.n == 0 || !split_target(url, &authority, &path))
        return "request target must be an absolute path or an absolute URI";
    if (p->http_minor >= 1 && c->hosts == 0)
        return "HTTP/1.1 request without Host";
    if (c->hosts > 1)
        return "more than one Host";
    return framing_error(c);
}

/* Adds the request line as the pseudo-headers HTTP/2 would carry. */
static int add_request_line(struct gw_h1c *c)
{
    const char *method = http_method_str((enum http_method)c->parser.method);
    const char *scheme = c->env.tls ? "https" : "http";
    struct sl_slice authority, path;
    (void)split_target(piece_view(&c->url), &authority, &path);
    if (gw__exchange_add_header(c->ex, ":method", 7, method, strlen(method)) != SL_OK ||
        gw__exchange_add_header(c->ex, ":path", 5, path.p, path.n) != SL_OK ||
        gw__exchange_add_header(c->ex, ":scheme", 7, scheme, strlen(scheme)) != SL_OK)
        return SL_ETOOBIG;
    if (authority.n > 0 &&
        gw__exchange_add_header(c->ex, ":authority", 10, authority.p, authority.n) != SL_OK)
        return SL_ETOOBIG;
    return SL_OK;
}

static int on_headers_complete(http_parser *p)
{
    struct gw_h1c *c = p->data;
    if (commit_header(c) != SL_OK || c->ex->header_overflow) {
        refuse_headers(c);
        return 0;
    }
    if (p->http_major != 1) {
        refuse(c, 505, GW_HTTP_VERSION, "HTTPVersionNotSupported",
               "only HTTP/1.0, HTTP/1.1 and HTTP/2 are served");
        return 0;
    }
    const char *bad = header_error(c);
    if (bad != NULL) {
        refuse_bad(c, bad);
        return 0;
    }
    if (add_request_line(c) != SL_OK) {
        refuse_headers(c);
        return 0;
    }
    /* Upgrade: h2c is ignored (the request is served over HTTP/1.1); the
     * parser would otherwise stop at the end of this request. */
    p->upgrade = 0;
    c->keep_alive = http_should_keep_alive(p) != 0;
    c->head = p->method == HTTP_HEAD;
    enum gw_budget_refusal why;
    if (c->env.budget != NULL && gw__budget_admit(c->env.budget, &why) != SL_OK) {
        refuse_budget(c);
        return 0;
    }
    bool chunked = (p->flags & F_CHUNKED) != 0;
    bool has_length = (p->flags & F_CONTENTLENGTH) != 0;
    if (has_length && p->content_length > GW_MAX_REQUEST_BODY) {
        refuse_too_large(c);
        return 0;
    }
    bool has_body = chunked || (has_length && p->content_length > 0);
    if (!has_body)
        return 0;
    c->phase = H1_BODY;
    const struct gw_handler *h = c->env.handler;
    if (h != NULL && h->on_headers != NULL && !gw__exchange_is_healthz(c->ex) &&
        gw__exchange_offer_headers(c->ex, &c->env)) {
        /* Answered before the body, which is never read: the connection
         * closes after the answer (submit saw the request unfinished). */
        c->failed = true;
        stop_parser(c);
        return 0;
    }
    if (has_length && gw__exchange_body_reserve(c->ex, (size_t)p->content_length) != SL_OK) {
        refuse_budget(c);
        return 0;
    }
    /* RFC 9110 §10.1.1: the client waits for this before sending the body;
     * only now do we know we want it. */
    if (c->expect_continue && p->http_minor >= 1)
        sl_buf_append_cstr(&c->out, "HTTP/1.1 100 Continue\r\n\r\n");
    return 0;
}

static int on_body(http_parser *p, const char *at, size_t len)
{
    struct gw_h1c *c = p->data;
    if (c->ex == NULL || c->ex->state != GW_EX_RECEIVING)
        return 0;
    int rv = gw__exchange_body_append(c->ex, at, len);
    if (rv == SL_ETOOBIG)
        refuse_too_large(c);
    else if (rv != SL_OK)
        refuse_budget(c);
    return 0;
}

static int on_message_complete(http_parser *p)
{
    struct gw_h1c *c = p->data;
    c->message_done = true;
    http_parser_pause(p, 1); /* the next request waits for this one's answer */
    return 0;
}

static const http_parser_settings parser_settings = {
    .on_message_begin = on_message_begin,
    .on_url = on_url,
    .on_header_field = on_header_field,
    .on_header_value = on_header_value,
    .on_headers_complete = on_headers_complete,
    .on_body = on_body,
    .on_message_complete = on_message_complete,
};

/* ---- requests ------------------------------------------------------------------ */

/* The request is whole: answer /healthz, or hand it to the handler. */
static void request_complete(struct gw_h1c *c)
{
    struct gw_exchange *ex = c->ex;
    if (ex == NULL || ex->state != GW_EX_RECEIVING)
        return;
    c->phase = H1_HANDLER;
    gw__exchange_build_request(ex, &c->env);
    const struct gw_handler *h = c->env.handler;
    if (gw__exchange_is_healthz(ex)) {
        gw__exchange_answer_healthz(ex, h);
        return;
    }
    if (h == NULL || h->on_request == NULL) {
        gw__exchange_respond_error(ex, 404, "NotFound", "nothing is served on this listener yet",
                                   NULL, 0);
        return;
    }
    gw__exchange_dispatch(ex, h, c->env.loop_ctx);
}

static void parse_error(struct gw_h1c *c, enum http_errno e)
{
    sl_log(SL_LOG_DEBUG, "gw", "h1: bad request: %s", http_errno_name(e));
    if (e == HPE_HEADER_OVERFLOW)
        refuse_headers(c);
    else
        refuse_bad(c, http_errno_description(e));
}

/* Parses buffered input until a request is with its handler or being
 * answered, the input runs out, or the connection is failed. */
static void parse(struct gw_h1c *c)
{
    bool was_in_feed = c->in_feed;
    c->in_feed = true; /* a handler answering now needs no wake */
    while (!c->failed && (c->phase == H1_IDLE || c->phase == H1_HEADERS || c->phase == H1_BODY)) {
        size_t avail = c->in.n - c->in_off;
        if (avail == 0)
            break;
        scan_headers(c);
        size_t k = http_parser_execute(&c->parser, &parser_settings, c->in.p + c->in_off, avail);
        c->in_off += k;
        piece_spill(&c->url);
        piece_spill(&c->field);
        piece_spill(&c->value);
        enum http_errno e = HTTP_PARSER_ERRNO(&c->parser);
        if (c->failed)
            break; /* a callback refused the request */
        if (e == HPE_PAUSED) {
            http_parser_pause(&c->parser, 0);
            if (c->message_done)
                request_complete(c);
            continue;
        }
        if (e != HPE_OK) {
            parse_error(c, e);
            break;
        }
        if (k < avail)
            break; /* cannot happen without an error; never spin */
    }
    c->in_feed = was_in_feed;
    if (c->in_off == c->in.n) {
        c->scan_off -= SL_MIN(c->scan_off, c->in_off);
        c->in_off = 0;
        sl_buf_reset(&c->in);
    } else if (c->in_off > 0 && c->in_off >= c->in.n - c->in_off) {
        /* Keep the buffer from creeping; the scan position moves along.
         * Only once what was parsed outweighs what is left: pipelined
         * requests come here once each, and moving the rest after every
         * one of them was quadratic in the requests a read brought. */
        memmove(c->in.p, c->in.p + c->in_off, c->in.n - c->in_off);
        c->in.n -= c->in_off;
        c->scan_off -= SL_MIN(c->scan_off, c->in_off);
        c->in_off = 0;
    }
}

/* ---- responses ------------------------------------------------------------------ */

static const char *reason_phrase(int status)
{
    switch (status) {
    case 200:
        return "OK";
    case 204:
        return "No Content";
    case 303:
        return "See Other";
    case 304:
        return "Not Modified";
    case 400:
        return "Bad Request";
    case 401:
        return "Unauthorized";
    case 403:
        return "Forbidden";
    case 404:
        return "Not Found";
    case 405:
        return "Method Not Allowed";
    case 408:
        return "Request Timeout";
    case 413:
        return "Content Too Large";
    case 414:
        return "URI Too Long";
    case 429:
        return "Too Many Requests";
    case 431:
        return "Request Header Fields Too Large";
    case 500:
        return "Internal Server Error";
    case 503:
        return "Service Unavailable";
    case 505:
        return "HTTP Version Not Supported";
    default:
        return status < 300   ? "OK"
               : status < 400 ? "Redirection"
               : status < 500 ? "Client Error"
                              : "Server Error";
    }
}

static bool field_ok(struct sl_slice s)
{
    /* A CR or LF would split the response. */
    return memchr(s.p, '\r', s.n) == NULL && memchr(s.p, '\n', s.n) == NULL;
}

static void append_header(struct sl_buf *out, struct sl_slice name, struct sl_slice value)
{
    sl_buf_append(out, name.p, name.n);
    sl_buf_append(out, ": ", 2);
    sl_buf_append(out, value.p, value.n);
    sl_buf_append(out, "\r\n", 2);
}

static void submit_head(struct gw_exchange *ex, int status, const struct gw_header *headers,
                        size_t header_count)
{
    struct gw_h1c *c = ex->owner;
    /* A body not read to its end cannot be skipped safely, and a refusal
     * already decided to close. */
    if (c->phase == H1_HEADERS || c->phase == H1_BODY || c->phase == H1_IDLE || !c->keep_alive ||
        c->goaway || (c->peer_eof && c->in_off == c->in.n))
        c->close_after = true;
    c->phase = H1_SENDING;
    c->progress_ns = c->now_ns;

    /* Appended piece by piece: printf for every head showed in profiles. */
    char status_s[24], date_s[GW_HTTP_DATE_CAP], length_s[24];
    size_t status_n =
        gw__format_u64((uint64_t)(status >= 100 && status <= 999 ? status : 500), status_s);
    size_t date_n = gw__http_date_now(date_s);
    size_t length_n = gw__format_u64(ex->resp_len, length_s);
    sl_buf_append(&c->out, "HTTP/1.1 ", 9);
    sl_buf_append(&c->out, status_s, status_n);
    sl_buf_append(&c->out, " ", 1);
    sl_buf_append_cstr(&c->out, reason_phrase(status));
    sl_buf_append(&c->out, "\r\n", 2);
    for (size_t i = 0; i < header_count; i++)
        if (field_ok(headers[i].name) && field_ok(headers[i].value))
            append_header(&c->out, headers[i].name, headers[i].value);
    append_header(&c->out, SL_SLICE_LIT("x-amzn-requestid"), sl_slice_cstr(ex->request_id));
    append_header(&c->out, SL_SLICE_LIT("date"), (struct sl_slice){date_s, date_n});
    append_header(&c->out, SL_SLICE_LIT("content-length"), (struct sl_slice){length_s, length_n});
    if (c->close_after)
        sl_buf_append_cstr(&c->out, "connection: close\r\n");
    else if (c->parser.http_minor == 0)
        sl_buf_append_cstr(&c->out, "connection: keep-alive\r\n");
    sl_buf_append(&c->out, "\r\n", 2);
    if (c->head) {
        ex->resp_off = ex->resp_len; /* HEAD: the length, not the bytes */
        gw__exchange_release_response(ex);
    }
}

static void h1_wake(void *owner)
{
    struct gw_h1c *c = owner;
    if (!c->in_feed && c->env.wake != NULL)
        c->env.wake(c->env.owner);
}

static const struct gw_exchange_ops h1_ops = {.submit = submit_head, .wake = h1_wake};

/* The answer is all in `out`: the request is over. */
static void answer_queued(struct gw_h1c *c)
{
    struct gw_exchange *ex = c->ex;
    c->ex = NULL;
    gw__exchange_detach(ex); /* responded: freed */
    c->last_active_ns = c->now_ns;
    if (c->close_after) {
        c->failed = true;
        c->close_on_flush = true;
        return;
    }
    c->phase = H1_IDLE;
    reset_message_state(c);
}

/* After the client's EOF: once no whole request is left to answer, the
 * connection ends when its output is written. */
static void settle_after_eof(struct gw_h1c *c)
{
    if (c->peer_eof && !c->failed &&
        (c->phase == H1_IDLE || c->phase == H1_HEADERS || c->phase == H1_BODY)) {
        c->failed = true; /* an unfinished request can never finish */
        c->close_on_flush = true;
    }
}

/* ---- the connection ------------------------------------------------------------ */

struct gw_h1c *gw__h1c_new(const struct gw_proto_env *env, uint64_t now_ns)
{
    struct gw_h1c *c = sl_xcalloc(1, sizeof(*c));
    c->env = *env;
    c->now_ns = c->last_active_ns = c->progress_ns = now_ns;
    http_parser_init(&c->parser, HTTP_REQUEST);
    c->parser.data = c;
    sl_buf_init(&c->in);
    sl_buf_init(&c->out);
    sl_buf_init(&c->field.buf);
    sl_buf_init(&c->value.buf);
    sl_buf_init(&c->url.buf);
    reset_message_state(c);
    return c;
}

void gw__h1c_free(struct gw_h1c *c)
{
    if (c == NULL)
        return;
    if (c->ex != NULL) {
        struct gw_exchange *ex = c->ex;
        c->ex = NULL;
        gw__exchange_detach(ex); /* cancels it if the handler holds it */
    }
    sl_buf_free(&c->in);
    sl_buf_free(&c->out);
    sl_buf_free(&c->field.buf);
    sl_buf_free(&c->value.buf);
    sl_buf_free(&c->url.buf);
    free(c);
}

int gw__h1c_feed(struct gw_h1c *c, const uint8_t *data, size_t n, uint64_t now_ns)
{
    c->now_ns = c->last_active_ns = now_ns;
    if (c->failed || c->close_after)
        return c->close_on_flush ? SL_ECLOSED : SL_OK; /* what follows is not read */
    if (n == 0)
        return SL_OK;
    sl_buf_append(&c->in, data, n);
    parse(c);
    return c->close_on_flush ? SL_ECLOSED : SL_OK;
}

int gw__h1c_flush(struct gw_h1c *c)
{
    while (c->phase == H1_SENDING && c->ex != NULL && c->out.n < GW_OUT_HIGH_WATER) {
        struct gw_exchange *ex = c->ex;
        size_t left = ex->resp_len - ex->resp_off;
        if (left > 0 && ex->resp_body != NULL) {
            size_t take = SL_MIN(left, GW_OUT_HIGH_WATER - c->out.n);
            sl_buf_append(&c->out, ex->resp_body + ex->resp_off, take);
            ex->resp_off += take;
            gw__exchange_response_sent(ex, take);
            if (ex->resp_off < ex->resp_len)
                break;
        }
        answer_queued(c);
        if (!c->failed && c->in.n > c->in_off)
            parse(c); /* the next pipelined request */
        settle_after_eof(c);
    }
    return c->close_on_flush ? SL_ECLOSED : SL_OK;
}

struct sl_slice gw__h1c_output(const struct gw_h1c *c)
{
    return (struct sl_slice){c->out.p, c->out.n};
}

void gw__h1c_output_consume(struct gw_h1c *c, size_t n)
{
    SL_ASSERT(n <= c->out.n);
    if (n == 0)
        return;
    c->progress_ns = c->now_ns;
    gw__output_consume(&c->out, n);
}

bool gw__h1c_want_write(const struct gw_h1c *c)
{
    return c->phase == H1_SENDING && c->out.n < GW_OUT_HIGH_WATER;
}

bool gw__h1c_want_read(const struct gw_h1c *c)
{
    return !c->failed && !c->close_after && !c->peer_eof && c->in.n - c->in_off < GW_H1_IN_CAP;
}

void gw__h1c_peer_eof(struct gw_h1c *c)
{
    if (c->peer_eof)
        return;
    c->peer_eof = true;
    if (c->phase == H1_HANDLER && c->ex != NULL)
        gw__exchange_client_done(c->ex); /* may answer now */
    settle_after_eof(c);
}

bool gw__h1c_done(const struct gw_h1c *c)
{
    return c->out.n == 0 && c->close_on_flush;
}

void gw__h1c_goaway(struct gw_h1c *c)
{
    c->goaway = true;
    if (c->phase == H1_IDLE) {
        c->failed = true; /* idle keep-alive: closed at once */
        c->close_on_flush = true;
    } else if (c->phase == H1_SENDING) {
        c->close_after = true; /* its head went out: just close after it */
    }
    /* Otherwise the answer to come carries Connection: close. */
}

bool gw__h1c_tick(struct gw_h1c *c, uint64_t now_ns)
{
    c->now_ns = now_ns;
    bool sending = c->out.n > 0 || c->phase == H1_SENDING;
    if (sending && now_ns - c->progress_ns > GW_STALL_TIMEOUT_NS) {
        /* A reader that does not read must not pin the answer. */
        count(c, GW_HTTP_STALLED);
        if (c->env.budget != NULL)
            gw__budget_count(c->env.budget, GW_BUDGET_STALLED);
        return true;
    }
    if ((c->phase == H1_HEADERS || c->phase == H1_BODY) && c->ex != NULL &&
        now_ns - c->ex->begin_ns > GW_REQUEST_READ_TIMEOUT_NS) {
        refuse(c, 408, GW_HTTP_REQUEST_TIMEOUT, "RequestTimeout",
               "the request did not arrive within 30 seconds");
        return false;
    }
    if (c->phase == H1_IDLE && c->in.n == c->in_off &&
        now_ns - c->last_active_ns > GW_IDLE_TIMEOUT_NS) {
        c->failed = true; /* a normal end of keep-alive, not a refusal */
        c->close_on_flush = true;
    }
    return false;
}

size_t gw__h1c_open_streams(const struct gw_h1c *c)
{
    return c->ex != NULL ? 1 : 0;
}
