/*
 * it_sqs.c -- see it_sqs.h. Builds requests and parses replies with
 * jansson, sends them through it_sqs() (libcurl, SigV4 by libcurl).
 *
 * Threading: any thread, as it_request().
 */
#include "it_sqs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>
#include <openssl/evp.h>

/* The reply of a response; takes r->body. */
static struct it_reply reply_of(struct it_response *r)
{
    struct it_reply out;
    memset(&out, 0, sizeof out);
    out.status = r->status;
    it_response_header(r, "x-amzn-query-error", out.query_error, sizeof out.query_error);
    if (r->body_len > 0) {
        out.json = json_loadb(r->body, r->body_len, 0, NULL);
    }
    out.body = r->body;
    r->body = NULL;
    return out;
}

static struct it_reply call_text(const struct it_server *s, const char *key, const char *secret,
                                 const char *action, const char *text)
{
    struct it_response r;
    it_sqs(s, action, text, key, secret, &r);
    struct it_reply out = reply_of(&r);
    it_response_free(&r);
    return out;
}

/* One request of it_call_many: what libcurl needs kept until it is done. */
struct pending_call {
    char *text;
    char target[128];
    const char *headers[3];
    void *tag;
};

struct call_many {
    it_next_call_fn next;
    it_call_done_fn done;
    void *user;
};

static bool next_call(void *user, struct it_request *req, void **tag)
{
    struct call_many *cm = user;
    struct it_call_spec spec = {0};
    if (!cm->next(cm->user, &spec)) {
        return false;
    }
    struct pending_call *p = calloc(1, sizeof *p);
    p->text = json_dumps(spec.req != NULL ? spec.req : json_object(), JSON_COMPACT);
    json_decref(spec.req);
    snprintf(p->target, sizeof p->target, "x-amz-target: AmazonSQS.%s", spec.action);
    p->headers[0] = p->target;
    p->headers[1] = "content-type: application/x-amz-json-1.0";
    p->tag = spec.tag;
    *req = (struct it_request){
        .method = "POST",
        .path = "/",
        .headers = p->headers,
        .body = p->text,
        .body_len = strlen(p->text),
        .access_key = spec.key != NULL ? spec.key : IT_KEY,
        .secret = spec.secret != NULL ? spec.secret : IT_SECRET,
    };
    *tag = p;
    return true;
}

static void call_done(void *user, void *tag, struct it_response *resp, int rc)
{
    struct call_many *cm = user;
    struct pending_call *p = tag;
    if (rc != 0) { /* no response: status 0, which every check refuses */
        fprintf(stderr, "it: %s: %s\n", p->target, curl_easy_strerror((CURLcode)rc));
    }
    struct it_reply r = reply_of(resp);
    cm->done(cm->user, p->tag, &r);
    it_reply_free(&r);
    free(p->text);
    free(p);
}

int it_call_many(const struct it_server *s, unsigned window, it_next_call_fn next,
                 it_call_done_fn done, void *user)
{
    struct call_many cm = {next, done, user};
    return it_request_many(s, window, next_call, call_done, &cm);
}

struct it_reply it_admin_as(const struct it_server *s, const struct it_admin_call *call)
{
    struct it_response r;
    it_admin_request(s, call, &r);
    struct it_reply out = reply_of(&r);
    it_response_free(&r);
    return out;
}

struct it_reply it_admin(const struct it_server *s, const char *method, const char *path,
                         const char *body, const char *token)
{
    struct it_admin_call call = {.method = method, .path = path, .body = body, .token = token};
    return it_admin_as(s, &call);
}

struct it_reply it_call_raw(const struct it_server *s, const char *action, const char *json)
{
    return call_text(s, IT_KEY, IT_SECRET, action, json);
}

struct it_reply it_call_as(const struct it_server *s, const char *key, const char *secret,
                           const char *action, json_t *req)
{
    if (req == NULL) {
        req = json_object();
    }
    char *text = json_dumps(req, JSON_COMPACT);
    json_decref(req);
    struct it_reply out = call_text(s, key, secret, action, text);
    free(text);
    return out;
}

struct it_reply it_call(const struct it_server *s, const char *action, json_t *req)
{
    return it_call_as(s, IT_KEY, IT_SECRET, action, req);
}

void it_reply_free(struct it_reply *r)
{
    json_decref(r->json);
    free(r->body);
    memset(r, 0, sizeof *r);
}

const char *it_jstr(const json_t *obj, const char *member)
{
    return json_string_value(json_object_get(obj, member));
}

const char *it_str(const struct it_reply *r, const char *member)
{
    return it_jstr(r->json, member);
}

static void fail_at(const char *file, int line, const char *what, const char *body)
{
    it_failed++;
    fprintf(stderr, "FAIL %s:%d: %s\n", file, line, what);
    if (body != NULL) {
        fprintf(stderr, "  body: %.600s\n", body);
    }
}

bool it_check_ok(const char *file, int line, const struct it_reply *r)
{
    if (r->status == 200) {
        it_passed++;
        return true;
    }
    char what[64];
    snprintf(what, sizeof what, "status %ld, want 200", r->status);
    fail_at(file, line, what, r->body);
    return false;
}

bool it_check_err(const char *file, int line, const struct it_reply *r, long status,
                  const char *code, const char *shape, const char *message)
{
    char want_qe[256];
    snprintf(want_qe, sizeof want_qe, "%s;Sender", code);
    const char *type = it_str(r, "__type");
    const char *hash = type != NULL ? strrchr(type, '#') : NULL;
    const char *msg = it_str(r, "message");
    char what[1400];
    bool ok = true;
    if (r->status != status) {
        snprintf(what, sizeof what, "status %ld, want %ld", r->status, status);
        ok = false;
    } else if (strcmp(r->query_error, want_qe) != 0) {
        snprintf(what, sizeof what, "x-amzn-query-error \"%s\", want \"%s\"", r->query_error,
                 want_qe);
        ok = false;
    } else if (hash == NULL || strcmp(hash + 1, shape) != 0) {
        snprintf(what, sizeof what, "__type %s, want ...#%s", type != NULL ? type : "(none)",
                 shape);
        ok = false;
    } else if (message != NULL && (msg == NULL || strcmp(msg, message) != 0)) {
        snprintf(what, sizeof what, "message\n    got:  %s\n    want: %s",
                 msg != NULL ? msg : "(none)", message);
        ok = false;
    }
    if (ok) {
        it_passed++;
    } else {
        fail_at(file, line, what, r->body);
    }
    return ok;
}

bool it_check_streq(const char *file, int line, const char *what, const char *got, const char *want)
{
    if (got != NULL && want != NULL && strcmp(got, want) == 0) {
        it_passed++;
        return true;
    }
    char text[1200];
    snprintf(text, sizeof text, "%s = \"%s\", want \"%s\"", what, got != NULL ? got : "(null)",
             want != NULL ? want : "(null)");
    fail_at(file, line, text, NULL);
    return false;
}

char *it_create_queue(const struct it_server *s, const char *name, json_t *attrs)
{
    json_t *req = json_pack("{s:s}", "QueueName", name);
    if (attrs != NULL) {
        json_object_set_new(req, "Attributes", attrs);
    }
    struct it_reply r = it_call(s, "CreateQueue", req);
    const char *url = it_str(&r, "QueueUrl");
    char *out = NULL;
    if (r.status == 200 && url != NULL) {
        out = strdup(url);
    } else {
        fail_at(__FILE__, __LINE__, "CreateQueue failed", r.body);
    }
    it_reply_free(&r);
    return out;
}

char *it_send(const struct it_server *s, const char *url, const char *body)
{
    struct it_reply r =
        it_call(s, "SendMessage", json_pack("{s:s,s:s}", "QueueUrl", url, "MessageBody", body));
    const char *id = it_str(&r, "MessageId");
    char *out = NULL;
    if (r.status == 200 && id != NULL) {
        out = strdup(id);
    } else {
        fail_at(__FILE__, __LINE__, "SendMessage failed", r.body);
    }
    it_reply_free(&r);
    return out;
}

struct it_reply it_receive(const struct it_server *s, const char *url, json_t *extra)
{
    json_t *req = json_pack("{s:s}", "QueueUrl", url);
    if (extra != NULL) {
        json_object_update(req, extra);
        json_decref(extra);
    }
    return it_call(s, "ReceiveMessage", req);
}

bool it_delete_received(const struct it_server *s, const char *url, const struct it_reply *r,
                        size_t i)
{
    const char *h = it_jstr(json_array_get(it_messages(r), i), "ReceiptHandle");
    struct it_reply d =
        it_call(s, "DeleteMessage", json_pack("{s:s,s:s?}", "QueueUrl", url, "ReceiptHandle", h));
    bool ok = d.status == 200;
    it_reply_free(&d);
    return ok;
}

json_t *it_messages(const struct it_reply *r)
{
    json_t *m = json_object_get(r->json, "Messages");
    return json_is_array(m) ? m : NULL;
}

size_t it_message_count(const struct it_reply *r)
{
    json_t *m = it_messages(r);
    return m != NULL ? json_array_size(m) : 0;
}

long long it_queue_attr_int(const struct it_server *s, const char *url, const char *name)
{
    struct it_reply r = it_call(s, "GetQueueAttributes",
                                json_pack("{s:s,s:[s]}", "QueueUrl", url, "AttributeNames", name));
    const char *v = it_jstr(json_object_get(r.json, "Attributes"), name);
    long long out = v != NULL ? strtoll(v, NULL, 10) : -1;
    it_reply_free(&r);
    return out;
}

long long it_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void it_md5_hex(const void *data, size_t n, char out[33])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    EVP_Digest(data, n, md, &len, EVP_md5(), NULL);
    for (unsigned int i = 0; i < len && i < 16; i++) {
        snprintf(out + 2 * (size_t)i, 3, "%02x", md[i]);
    }
    out[32] = '\0';
}

/* s's n bytes after their 4-byte big-endian length. */
static size_t put_field(unsigned char *p, const char *s, size_t n)
{
    p[0] = (unsigned char)(n >> 24);
    p[1] = (unsigned char)(n >> 16);
    p[2] = (unsigned char)(n >> 8);
    p[3] = (unsigned char)n;
    memcpy(p + 4, s, n);
    return 4 + n;
}

void it_md5_one_string_attr(const char *name, const char *value, char out[33])
{
    it_md5_one_text_attr(name, "String", value, out);
}

void it_md5_one_text_attr(const char *name, const char *type, const char *value, char out[33])
{
    size_t cap = strlen(name) + strlen(type) + strlen(value) + 32;
    unsigned char *buf = malloc(cap);
    size_t n = put_field(buf, name, strlen(name));
    n += put_field(buf + n, type, strlen(type));
    buf[n++] = 1; /* transport: String/Number */
    n += put_field(buf + n, value, strlen(value));
    it_md5_hex(buf, n, out);
    free(buf);
}
