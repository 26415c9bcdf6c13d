/*
 * lt_h1.c -- the HTTP/1.1 side of a sluice-load connection, as a pure
 * protocol step: requests are written into a buffer, responses are parsed
 * from bytes handed in (Debian's http-parser, the same library the gateway
 * uses), and lt_conn.c moves the bytes. Requests are pipelined: replies come
 * back in the order the requests went out, so each response belongs to the
 * oldest request still waiting, which the connection names through the
 * front callback.
 *
 * A reply the server marks as the last (Connection: close, or HTTP/1.0
 * without keep-alive) pauses the parser: lt_h1_feed() then answers
 * SL_ECLOSED and the connection fails whatever else is waiting.
 *
 * Threading: the caller's; one struct lt_h1 per connection.
 */
#include "lt_int.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <http_parser.h>

#define MAX_RESPONSE_BYTES (32u << 20)
#define QUERY_ERROR_HEADER "x-amzn-query-error"

struct lt_h1 {
    http_parser parser;
    lt_h1_front_cb *front;
    lt_h1_done_cb *done;
    void *data;
    struct lt_req *cur;
    char name[32]; /* the header being read; longer names never match */
    size_t name_n;
    bool in_value;
    bool last; /* the server closes after the reply just delivered */
};

static struct lt_h1 *of(http_parser *p)
{
    return p->data;
}

static int on_message_begin(http_parser *p)
{
    struct lt_h1 *h = of(p);
    h->cur = h->front(h->data);
    if (h->cur == NULL) {
        return -1; /* a reply nobody asked for */
    }
    h->cur->status = 0;
    h->cur->query_error[0] = '\0';
    sl_buf_reset(&h->cur->resp);
    h->name_n = 0;
    h->in_value = false;
    return 0;
}

static int on_header_field(http_parser *p, const char *at, size_t n)
{
    struct lt_h1 *h = of(p);
    if (h->in_value) {
        h->in_value = false;
        h->name_n = 0;
    }
    if (h->name_n + n < sizeof(h->name)) {
        memcpy(h->name + h->name_n, at, n);
        h->name_n += n;
    } else {
        h->name_n = sizeof(h->name); /* too long to be one we read */
    }
    return 0;
}

static int on_header_value(http_parser *p, const char *at, size_t n)
{
    struct lt_h1 *h = of(p);
    if (!h->in_value) {
        h->in_value = true;
        bool match = h->name_n == strlen(QUERY_ERROR_HEADER) &&
                     strncasecmp(h->name, QUERY_ERROR_HEADER, h->name_n) == 0;
        h->name_n = match ? 1 : 0; /* from here: 1 = keep the value */
    }
    if (h->name_n == 1) {
        char *q = h->cur->query_error;
        size_t used = strlen(q);
        size_t room = sizeof(h->cur->query_error) - 1 - used;
        size_t k = SL_MIN(n, room);
        memcpy(q + used, at, k);
        q[used + k] = '\0';
    }
    return 0;
}

static int on_headers_complete(http_parser *p)
{
    of(p)->cur->status = p->status_code;
    return 0;
}

static int on_body(http_parser *p, const char *at, size_t n)
{
    struct lt_req *r = of(p)->cur;
    if (r->resp.n + n <= MAX_RESPONSE_BYTES) {
        sl_buf_append(&r->resp, at, n);
    }
    return 0;
}

static int on_message_complete(http_parser *p)
{
    struct lt_h1 *h = of(p);
    struct lt_req *r = h->cur;
    h->cur = NULL;
    if (p->status_code / 100 == 1) {
        return 0; /* an interim reply (100 Continue): the final one follows */
    }
    bool keep_alive = http_should_keep_alive(p) != 0;
    if (!keep_alive) {
        h->last = true;
        http_parser_pause(p, 1);
    }
    h->done(h->data, r);
    return 0;
}

static const http_parser_settings settings = {
    .on_message_begin = on_message_begin,
    .on_header_field = on_header_field,
    .on_header_value = on_header_value,
    .on_headers_complete = on_headers_complete,
    .on_body = on_body,
    .on_message_complete = on_message_complete,
};

struct lt_h1 *lt_h1_new(lt_h1_front_cb *front, lt_h1_done_cb *done, void *data)
{
    struct lt_h1 *h = sl_xcalloc(1, sizeof(*h));
    http_parser_init(&h->parser, HTTP_RESPONSE);
    h->parser.data = h;
    h->front = front;
    h->done = done;
    h->data = data;
    return h;
}

void lt_h1_free(struct lt_h1 *h)
{
    free(h);
}

int lt_h1_feed(struct lt_h1 *h, const char *p, size_t n, const char **why)
{
    *why = NULL;
    if (h->last) {
        *why = "ServerClosedConnection";
        return SL_ECLOSED;
    }
    http_parser_execute(&h->parser, &settings, p, n);
    enum http_errno e = HTTP_PARSER_ERRNO(&h->parser);
    if (h->last) {
        *why = "ServerClosedConnection";
        return SL_ECLOSED;
    }
    if (e != HPE_OK) {
        *why = e == HPE_CB_message_begin ? "UnexpectedResponse" : http_errno_name(e);
        return SL_EINVAL;
    }
    return SL_OK;
}

void lt_h1_request(struct sl_buf *out, const char *path, const char *host,
                   const struct sigv4_header *headers, size_t n, struct sl_slice body)
{
    sl_buf_printf(out, "POST %s HTTP/1.1\r\nhost: %s\r\n", path, host);
    for (size_t i = 0; i < n; i++) {
        sl_buf_append(out, headers[i].name.p, headers[i].name.n);
        sl_buf_append(out, ": ", 2);
        sl_buf_append(out, headers[i].value.p, headers[i].value.n);
        sl_buf_append(out, "\r\n", 2);
    }
    sl_buf_printf(out, "content-length: %zu\r\n\r\n", body.n);
    sl_buf_append(out, body.p, body.n);
}
