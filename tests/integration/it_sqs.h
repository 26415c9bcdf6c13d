/*
 * it_sqs.h -- SQS-level helpers for the integration tests over it_harness:
 * one signed JSON 1.0 call with the request built by jansson and the reply
 * parsed by jansson, checks of SQS's error shape (status, query code,
 * __type, exact message), and the few calls every test repeats (create a
 * queue, send, receive). An admin-API request comes back in the same
 * struct it_reply.
 *
 * Expected values in the tests come from Amazon SQS's documented and
 * observed behaviour (docs/api.md), never from sluice's code.
 *
 * Ownership: it_call() steals the request object; a struct it_reply owns
 * its parsed JSON and raw body until it_reply_free(). Strings returned by
 * the it_*_url helpers are malloc'd and freed by the caller.
 * Threading: as it_request() (each call its own easy handle).
 */
#ifndef SLUICE_IT_SQS_H
#define SLUICE_IT_SQS_H

#include <stdbool.h>

#include <jansson.h>

#include "it_harness.h"

struct it_reply {
    long status;           /* 0 when no response */
    json_t *json;          /* the parsed body; NULL for an empty body */
    char query_error[256]; /* x-amzn-query-error ("" when absent) */
    char *body;            /* raw body, NUL-terminated */
};

/* Signed with key/secret, POSTs AmazonSQS.<action> with req (stolen; NULL
 * = "{}"). */
struct it_reply it_call_as(const struct it_server *s, const char *key, const char *secret,
                           const char *action, json_t *req);
/* it_call_as with the tenant acme's credentials. */
struct it_reply it_call(const struct it_server *s, const char *action, json_t *req);
/* Same with a raw JSON text body (for inputs jansson would not build). */
struct it_reply it_call_raw(const struct it_server *s, const char *action, const char *json);
void it_reply_free(struct it_reply *r);

/* An admin-API request (it_admin_request) as a reply: status 0 when no
 * answer came, json the parsed body (NULL when empty or not JSON), body
 * the raw text; query_error is "". The caller frees it with
 * it_reply_free. */
struct it_reply it_admin_as(const struct it_server *s, const struct it_admin_call *call);
/* The same with the bearer token: method path, body NULL for none. */
struct it_reply it_admin(const struct it_server *s, const char *method, const char *path,
                         const char *body, const char *token);

/* Many calls at once, as streams of one HTTP/2 connection
 * (it_request_many), at most window outstanding. next(user, call) fills in
 * the next call and returns true, or returns false when it has none right
 * now (it is asked again after every reply); done(user, tag, reply) gets
 * each call's reply once (status 0 when none came), freed after it returns.
 * Returns 0 when next() declines with nothing outstanding, -1 on a libcurl
 * failure. Start the server with TLS (see it_request_many). */
struct it_call_spec {
    const char *action; /* "SendMessageBatch"; copied */
    json_t *req;        /* stolen; NULL = {} */
    const char *key;    /* NULL: the tenant acme's credentials */
    const char *secret;
    void *tag; /* handed back to done */
};
typedef bool (*it_next_call_fn)(void *user, struct it_call_spec *call);
typedef void (*it_call_done_fn)(void *user, void *tag, const struct it_reply *r);
int it_call_many(const struct it_server *s, unsigned window, it_next_call_fn next,
                 it_call_done_fn done, void *user);

/* A member of the reply's top-level object as a string, or NULL. */
const char *it_str(const struct it_reply *r, const char *member);
/* A string member of any object, or NULL. */
const char *it_jstr(const json_t *obj, const char *member);

/* Checks a 200 reply; on failure prints the body. */
#define IT_OK(r) it_check_ok(__FILE__, __LINE__, (r))
bool it_check_ok(const char *file, int line, const struct it_reply *r);

/* Checks an SQS error reply: HTTP status, "x-amzn-query-error: CODE;Sender",
 * "__type" ending in "#shape", and (when message is not NULL) the exact
 * "message". */
#define IT_ERR(r, status, code, shape, message)                                                    \
    it_check_err(__FILE__, __LINE__, (r), (status), (code), (shape), (message))
bool it_check_err(const char *file, int line, const struct it_reply *r, long status,
                  const char *code, const char *shape, const char *message);

/* Checks that a string equals what is expected; prints both otherwise. */
#define IT_STREQ(got, want) it_check_streq(__FILE__, __LINE__, #got, (got), (want))
bool it_check_streq(const char *file, int line, const char *what, const char *got,
                    const char *want);

/* CreateQueue name with attrs (stolen; may be NULL) as acme; returns the
 * QueueUrl (malloc'd) or NULL after counting a failure. */
char *it_create_queue(const struct it_server *s, const char *name, json_t *attrs);
/* SendMessage of body as acme; returns the MessageId (malloc'd) or NULL. */
char *it_send(const struct it_server *s, const char *url, const char *body);
/* ReceiveMessage (short poll unless extra says otherwise) as acme: extra
 * (stolen; may be NULL) is merged into {"QueueUrl": url}. Returns the reply;
 * its "Messages" array (or NULL) via it_messages(). */
struct it_reply it_receive(const struct it_server *s, const char *url, json_t *extra);
json_t *it_messages(const struct it_reply *r);
size_t it_message_count(const struct it_reply *r);
/* DeleteMessage of the i-th message of a receive's reply; true on 200. */
bool it_delete_received(const struct it_server *s, const char *url, const struct it_reply *r,
                        size_t i);

/* GetQueueAttributes of one attribute as an integer (-1 when missing). */
long long it_queue_attr_int(const struct it_server *s, const char *url, const char *name);

/* Lower-case hex MD5 of bytes (OpenSSL, independent of sluice's). */
void it_md5_hex(const void *data, size_t n, char out[33]);
/* MD5 of one String attribute as SQS hashes attributes (Amazon SQS
 * Developer Guide, "Calculating the MD5 message digest for message
 * attributes"): the vector for AWSTraceHeader and similar. */
void it_md5_one_string_attr(const char *name, const char *value, char out[33]);
/* The same for one attribute of a String or Number type (type "Number",
 * "Number.int", ...). */
void it_md5_one_text_attr(const char *name, const char *type, const char *value, char out[33]);

/* Milliseconds since the epoch (to bound the timestamps SQS returns). */
long long it_now_ms(void);

#endif
