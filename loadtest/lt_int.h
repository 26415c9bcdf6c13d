/*
 * lt_int.h -- internals of the load generator (build/sluice-load), shared by
 * its files and its unit tests. The load generator is a tool, not a module:
 * nothing outside loadtest/ and tests/unit/loadtest/ includes this header.
 *
 * Layers, bottom up:
 *   lt_hist.c    log-bucketed latency histogram (pure)
 *   lt_sched.c   open-loop schedule: intended send times (pure, clock given)
 *   lt_sign.c    the SigV4 headers of one SQS request, via sigv4_sign_sqs_request()
 *   lt_xml.c     a scanner for the few elements of SQS XML replies (pure)
 *   lt_errors.c  SQS error codes out of a reply, and their tally (pure)
 *   lt_proto.c   request bodies and reply fields in JSON 1.0 or query (pure)
 *   lt_report.c  the run's result as a table, a JSON record and a picture
 *   lt_opts.c    command line -> struct lt_opts
 *   lt_h1.c      HTTP/1.1 client protocol step: requests written to memory,
 *                responses parsed with http-parser from memory (pure)
 *   lt_conn.c    one client connection: libuv TCP, optional TLS via memory
 *                BIOs, and either an nghttp2 client session or lt_h1.c,
 *                both fed from memory
 *   lt_run.c     scenarios: groups of connections x streams driving flows
 *
 * Threading: everything runs on one libuv loop thread; nothing is shared.
 * Ownership: a struct lt_req belongs to its caller until lt_conn_submit()
 * returns SL_OK, then to the connection until its done callback has run;
 * the callback gets it back (and frees or reuses it).
 */
#ifndef SLUICE_LT_INT_H
#define SLUICE_LT_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "sigv4.h"
#include "sl.h"

/* ===== histogram ======================================================== */

/* HDR-style: values below 2^LT_HIST_SUB_BITS are counted exactly; above,
 * each power of two is split into 2^(LT_HIST_SUB_BITS-1) equal buckets, so
 * a reported value is never more than 1/512 (0.2 %) above the true one.
 * Values are microseconds; anything above LT_HIST_MAX_VALUE (19 hours) is
 * counted as LT_HIST_MAX_VALUE. */
#define LT_HIST_SUB_BITS 10
#define LT_HIST_MAX_VALUE ((UINT64_C(1) << 36) - 1)

struct lt_hist {
    uint64_t *counts;
    size_t nbuckets;
    uint64_t total;
    uint64_t min;
    uint64_t max;
    double sum;
};

void lt_hist_init(struct lt_hist *h);
void lt_hist_fini(struct lt_hist *h);
void lt_hist_reset(struct lt_hist *h);
void lt_hist_record(struct lt_hist *h, uint64_t value);
void lt_hist_merge(struct lt_hist *dst, const struct lt_hist *src);
/* The nearest-rank percentile (p in [0, 100]): the smallest recorded value
 * v such that at least p % of the values are <= v, reported as the highest
 * value of v's bucket, never above the exact maximum. 0 when empty. */
uint64_t lt_hist_percentile(const struct lt_hist *h, double p);
double lt_hist_mean(const struct lt_hist *h);
/* Bucket index of a value and the highest value that bucket holds. */
size_t lt_hist_bucket(uint64_t value);
uint64_t lt_hist_bucket_high(size_t bucket);

/* ===== open-loop schedule =============================================== */

/* Operation i of a run at rate R is intended to start at start + i / R,
 * whether or not the previous ones have finished. Latency is measured from
 * that intended time, so a stalled server shows up as latency instead of
 * silently slowing the generator down (no coordinated omission). */
struct lt_sched {
    uint64_t start_ns;
    double rate; /* operations per second, > 0 */
    uint64_t taken;
};

void lt_sched_init(struct lt_sched *s, uint64_t start_ns, double rate_per_s);
uint64_t lt_sched_intended(const struct lt_sched *s, uint64_t i);
/* How many operations are due at now_ns and not taken yet. */
uint64_t lt_sched_due(const struct lt_sched *s, uint64_t now_ns);
/* Takes the next operation; returns its intended start time. */
uint64_t lt_sched_take(struct lt_sched *s);
/* Where the k-th of n open-loop groups starts its schedule, in ns after the
 * run's start: k/n of its own period, so that n groups at the same rate
 * take turns instead of all firing at once. 0 when k >= n or rate <= 0. */
uint64_t lt_sched_phase_ns(double rate_per_s, size_t k, size_t n);
/* Latency in microseconds from when an operation was meant to start (open
 * loop) or did start (closed loop) to when it finished. */
uint64_t lt_latency_us(uint64_t start_ns, uint64_t done_ns);
/* The wall-clock time (µs) of an intended start, from one reading of both
 * clocks: an open-loop producer stamps this into its bodies, so that the
 * end-to-end latency of a round trip also runs from the intended send time
 * (a producer that fell behind its schedule is charged for it). An
 * intended time not yet reached is stamped as now. */
uint64_t lt_intended_wall_us(uint64_t wall_now_us, uint64_t mono_now_ns, uint64_t intended_ns);
/* The seconds a group's rates are over: from its start to its last reply
 * that moved a message, so that receives answered empty after the last
 * message (a round trip's consumers still waiting in long polls once the
 * producers are done) do not dilute its rate; a group that moved none ends
 * at its last reply, or at now. 0 is "never". */
double lt_group_elapsed_s(uint64_t start_ns, uint64_t last_message_ns, uint64_t last_reply_ns,
                          uint64_t now_ns);

/* ===== signing ========================================================== */

/* The SigV4 headers of one SQS call (a POST): x-amz-date and
 * authorization for the given path, authority (signed as "host", the way
 * curl signs its HTTP/2 requests) and extra headers (lower-case names; all
 * signed). Returns SL_OK or sigv4_sign_sqs_request's error. */
struct lt_credentials {
    const char *access_key_id;
    const char *secret;
    const char *region;
    const char *service;
};

int lt_sign(const struct lt_credentials *cred, const char *path, const char *authority,
            const struct sigv4_header *extra, size_t extra_count, struct sl_slice body,
            int64_t now_s, char amz_date[17], struct sl_buf *authorization);

/* ===== SQS XML ========================================================== */

/* Finds the next element `name` in [*cur, end) (its start tag or an empty
 * <name/>), nested elements of the same name matched by depth; *inner is
 * its raw content and *cur moves past its end tag. Returns SL_OK,
 * SL_ENOTFOUND when there is none, or SL_EINVAL when markup is cut off or
 * the end tag is missing. */
int lt_xml_next(const char **cur, const char *end, const char *name, struct sl_slice *inner);
/* Appends the character data of raw to out with the predefined entities
 * (&amp; &lt; &gt; &quot; &apos;), numeric references (&#13; &#xD;) and
 * CDATA sections decoded; out is a C string afterwards. Returns SL_OK, or
 * SL_EINVAL (out unchanged) for an unknown or malformed reference or a tag
 * inside the text. */
int lt_xml_text(struct sl_slice raw, struct sl_buf *out);
/* lt_xml_text of the first element `name` in scope: SL_OK, SL_ENOTFOUND,
 * or SL_EINVAL. */
int lt_xml_child_text(struct sl_slice scope, const char *name, struct sl_buf *out);

/* ===== SQS errors ======================================================= */

#define LT_MAX_ERROR_CODES 32
#define LT_ERROR_CODE_MAX 96

struct lt_error_count {
    char code[LT_ERROR_CODE_MAX];
    uint64_t n;
};

struct lt_errors {
    struct lt_error_count e[LT_MAX_ERROR_CODES];
    size_t n;
    uint64_t other; /* codes beyond the table */
};

/* The SQS error code of a failed reply: the `__type` of a JSON body
 * without its namespace, or the Code of an XML <ErrorResponse><Error>,
 * else the code of x-amzn-query-error (before ';'), else "HTTP_<status>".
 * status 0 is a transport failure described by body. */
void lt_error_code(int status, const char *query_error, struct sl_slice body, char *out,
                   size_t cap);
void lt_errors_add(struct lt_errors *e, const char *code);
uint64_t lt_errors_total(const struct lt_errors *e);

/* ===== wire protocols =================================================== */

enum lt_protocol {
    LT_PROTO_JSON,  /* AWS JSON 1.0: JSON bodies, x-amz-target */
    LT_PROTO_QUERY, /* form bodies with Action and Version, XML replies */
};

#define LT_QUERY_VERSION "2012-11-05"
#define LT_FORM_CONTENT_TYPE "application/x-www-form-urlencoded; charset=utf-8"

/* Appends key=value to a form body ('&' first unless b is empty), both
 * percent-encoded (all but A-Z a-z 0-9 - . _ ~); the key is printf-formatted
 * and at most 127 bytes (keys are sluice-load's own). */
void lt_form_add(struct sl_buf *b, struct sl_slice value, const char *key_fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Request bodies, appended to b. The send body of a message is `size`
 * bytes starting with the send timestamp (lt_body_timestamp). */
void lt_proto_send(struct sl_buf *b, enum lt_protocol p, const char *queue_url, size_t size,
                   unsigned batch, uint64_t wall_us);
void lt_proto_receive(struct sl_buf *b, enum lt_protocol p, const char *queue_url, unsigned max,
                      int wait_s);
void lt_proto_create_queue(struct sl_buf *b, enum lt_protocol p, const char *name);
/* raw-action: params is the JSON body, or for query the form parameters
 * after Action and Version, already encoded (may be empty). */
void lt_proto_raw(struct sl_buf *b, enum lt_protocol p, const char *action, const char *params);
/* The JSON 1.0 body of SendMessage(Batch) (lt_proto_send). */
void lt_body_send(struct sl_buf *b, const char *queue_url, size_t size, unsigned batch,
                  uint64_t wall_us);
/* Writes an entry's own fields ("Name":value, each followed by a comma)
 * ahead of its MessageBody. */
typedef void lt_entry_fields_fn(struct sl_buf *b, void *arg);
/* lt_body_send, fields (may be NULL) called once per entry, in order:
 * the FIFO and sluice queue kinds' sends, in one pass. */
void lt_body_send_with(struct sl_buf *b, const char *queue_url, size_t size, unsigned batch,
                       uint64_t wall_us, lt_entry_fields_fn *fields, void *arg);
/* The send timestamp (µs) a body starts with, or 0. */
uint64_t lt_body_timestamp(const char *body, size_t n);

/* A DeleteMessageBatch body, built entry by entry (ids d0, d1, ...). */
struct lt_delete_batch {
    struct sl_buf *b;
    enum lt_protocol proto;
    unsigned n;
};
void lt_proto_delete_begin(struct lt_delete_batch *d, struct sl_buf *b, enum lt_protocol p,
                           const char *queue_url);
void lt_proto_delete_add(struct lt_delete_batch *d, struct sl_slice receipt_handle);
void lt_proto_delete_end(struct lt_delete_batch *d);

/* Reply fields. Each returns SL_OK, SL_EINVAL for a reply it cannot read,
 * or (queue_url) SL_ENOTFOUND when the field is absent. */
int lt_proto_queue_url(enum lt_protocol p, struct sl_slice resp, struct sl_buf *url);
/* Calls cb once per received message with its decoded Body and
 * ReceiptHandle (valid during the call); *count is how many. */
typedef void lt_message_cb(void *data, struct sl_slice body, struct sl_slice receipt_handle);
int lt_proto_messages(enum lt_protocol p, struct sl_slice resp, lt_message_cb *cb, void *data,
                      size_t *count);
/* A batch reply: *ok successful entries; failed runs once per failed entry
 * with its Code. */
typedef void lt_code_cb(void *data, const char *code);
int lt_proto_batch(enum lt_protocol p, struct sl_slice resp, uint64_t *ok, lt_code_cb *failed,
                   void *data);

/* ===== FIFO queues (lt_fifo.c, --fifo-groups; JSON 1.0 only) ================= */

/* A run's FIFO state: which group the next entry goes to, the next
 * deduplication id, and per group the largest SequenceNumber received. */
struct lt_fifo {
    uint32_t groups;
    uint64_t nonce; /* makes deduplication ids unique across runs */
    uint64_t next_group;
    uint64_t next_dedup;
    uint64_t *last; /* per group g<k> */
};
void lt_fifo_init(struct lt_fifo *f, uint32_t groups, uint64_t nonce);
void lt_fifo_fini(struct lt_fifo *f);
/* CreateQueue of a high-throughput FIFO queue (name ends in .fifo). */
void lt_fifo_body_create(struct sl_buf *b, const char *name);
/* lt_body_send's bodies, each entry with MessageGroupId g<k> (round robin
 * over the groups) and a unique MessageDeduplicationId. */
void lt_fifo_body_send(struct sl_buf *b, struct lt_fifo *f, const char *queue_url, size_t size,
                       unsigned batch, uint64_t wall_us);
/* ReceiveMessage asking for MessageGroupId and SequenceNumber. */
void lt_fifo_body_receive(struct sl_buf *b, const char *queue_url, unsigned max, int wait_s);
/* Checks a receive's messages: each one's SequenceNumber must exceed the
 * largest received before in its group. Adds to *checked and
 * *violations; SL_EINVAL for a reply or message it cannot read. */
int lt_fifo_check(struct lt_fifo *f, struct sl_slice resp, uint64_t *checked, uint64_t *violations);

/* ===== sluice's own queue kinds (lt_beyond.c, --queue-kind; JSON 1.0) ===== */

enum lt_queue_kind { LT_KIND_STANDARD, LT_KIND_PRIORITY, LT_KIND_EXCLUSIVE };

struct lt_beyond {
    enum lt_queue_kind kind;
    uint64_t keys; /* exclusive: the key values taken round robin */
    uint64_t next; /* messages sent so far */
};
/* CreateQueue of a priority or exclusive queue. */
void lt_beyond_body_create(struct sl_buf *b, enum lt_queue_kind kind, const char *name);
/* lt_body_send's bodies, each entry with its priority (0..999, spread) or
 * its key value (one of s->keys, round robin). */
void lt_beyond_body_send(struct sl_buf *b, struct lt_beyond *s, const char *queue_url, size_t size,
                         unsigned batch, uint64_t wall_us);

/* ===== options ========================================================== */

enum lt_scenario {
    LT_SC_SEND,
    LT_SC_RECEIVE_DELETE,
    LT_SC_ROUNDTRIP,
    LT_SC_LONGPOLL,
    LT_SC_NOISY,
    LT_SC_RAW,
};

struct lt_tenant {
    char *access_key_id;
    char *secret;
};

/* noisy --only: which of the tenants this process drives. The first tenant
 * floods, the others are quiet; real tenants are separate clients, so the
 * benchmark runs the two roles in two processes, each given the same
 * --tenants so that the roles stay where they are. */
enum lt_noisy_part {
    LT_NOISY_BOTH, /* default: one process drives every tenant */
    LT_NOISY_FLOOD,
    LT_NOISY_QUIET,
};

struct lt_opts {
    enum lt_scenario scenario;
    const char *scenario_name;
    char *raw_action; /* raw-action ACTION JSON, and --print-signed-headers */
    char *raw_json;   /* JSON body, or with --protocol query the form parameters */
    char *host;       /* from --target HOST:PORT */
    int port;
    char *authority; /* "HOST:PORT" as sent in :authority */
    bool allow_remote;
    bool tls;
    bool http1;                /* HTTP/1.1 keep-alive instead of HTTP/2 */
    enum lt_protocol protocol; /* JSON 1.0 or query */
    char *cacert;
    char *region;
    unsigned connections;
    unsigned streams;
    unsigned consumer_streams; /* roundtrip consumers */
    double duration_s;         /* 0 = not bounded by time */
    uint64_t count;            /* 0 = not bounded by count */
    double rate;               /* 0 = closed loop */
    double flood_rate;         /* noisy: the first tenant's send rate */
    double receive_rate;       /* noisy: each tenant's receive rate */
    double flood_receive_rate; /* noisy: the first tenant's receive rate */
    bool lockstep;             /* open loop: every group's schedule starts at once */
    enum lt_noisy_part only;   /* noisy: the tenants this process drives */
    unsigned batch;            /* 1 or 10 */
    size_t message_size;
    struct lt_tenant *tenants;
    size_t tenant_count;
    unsigned queues;
    char *queue_prefix;
    int wait_s; /* ReceiveMessage WaitTimeSeconds; -1 = scenario default */
    uint64_t prefill;
    uint32_t fifo_groups;          /* > 0: FIFO queues, sends spread over this many groups */
    enum lt_queue_kind queue_kind; /* --queue-kind */
    uint64_t exclusive_keys;       /* --keys: exclusive queues' key values */
    unsigned gap_ms;               /* longpoll: receive waiting before the send */
    char *json_path;
    char *plot_path;
    int server_pid;
    bool quiet;
    bool print_signed_headers;
};

void lt_opts_init(struct lt_opts *o);
void lt_opts_fini(struct lt_opts *o);
/* Parses argv; on failure returns SL_EINVAL with a message in err. The
 * result is always bounded (duration or count) and targets loopback unless
 * --allow-remote. */
int lt_opts_parse(struct lt_opts *o, int argc, char **argv, char *err, size_t errlen);
void lt_opts_usage(FILE *out);
/* noisy: whether this process drives tenant i of --tenants (see --only). */
bool lt_opts_drives_tenant(const struct lt_opts *o, size_t i);
/* "both", "flood" or "quiet", as --only spells it. */
const char *lt_noisy_part_name(enum lt_noisy_part part);

/* ===== results ========================================================== */

enum lt_metric {
    LT_M_OP,      /* one whole flow, from its intended start */
    LT_M_SEND,    /* SendMessage / SendMessageBatch */
    LT_M_RECEIVE, /* ReceiveMessage */
    LT_M_DELETE,  /* DeleteMessageBatch */
    LT_M_E2E,     /* send timestamp in the body -> received */
    LT_M_WAKE,    /* longpoll: send issued -> waiting receive answered */
    LT_M_COUNT,
};

const char *lt_metric_name(enum lt_metric m);

struct lt_timeline_point {
    double t_s;
    uint64_t n;
    uint64_t p50_us;
    uint64_t p99_us;
    uint64_t max_us;
};

struct lt_metric_stats {
    bool used;
    struct lt_hist all;
    struct lt_hist interval;
    struct lt_timeline_point *timeline;
    size_t timeline_n;
    size_t timeline_cap;
};

struct lt_group_stats {
    char name[64];
    char tenant[128];
    char role[16]; /* "send", "receive-delete", "longpoll" or "raw" */
    struct lt_metric_stats m[LT_M_COUNT];
    uint64_t requests; /* HTTP requests answered, any status */
    uint64_t errors;   /* non-2xx replies and transport failures */
    uint64_t messages; /* messages sent (producers) or deleted (consumers) */
    uint64_t empty_receives;
    uint64_t fifo_checked;    /* --fifo-groups: messages whose order was checked */
    uint64_t fifo_violations; /* ... and received out of their group's order */
    uint64_t late_max;        /* open loop: most operations ever overdue at once */
    double target_rate;       /* 0 = closed loop */
    double elapsed_s;         /* see lt_group_elapsed_s() */
    uint64_t unstarted;       /* open loop: due at the end but never started */
    struct lt_errors error_codes;
    uint64_t interval_requests;
    uint64_t interval_messages;
};

void lt_group_stats_init(struct lt_group_stats *g, const char *name, const char *tenant);
void lt_group_stats_fini(struct lt_group_stats *g);
void lt_group_stats_record(struct lt_group_stats *g, enum lt_metric m, uint64_t us);
/* Closes a progress interval at t_s: appends a timeline point per metric. */
void lt_group_stats_tick(struct lt_group_stats *g, double t_s);

struct lt_result {
    const struct lt_opts *opts;
    double elapsed_s;
    struct lt_group_stats *groups;
    size_t group_count;
    char setup_error[256]; /* why the scenario could not run, or empty */
    bool have_cpu;
    int server_pid;
    double server_cpu_s;
};

/* The JSON record (new reference). */
json_t *lt_result_json(const struct lt_result *r);
int lt_result_write_json(const struct lt_result *r, const char *path);
void lt_result_print(const struct lt_result *r, FILE *out);
/* Draws latency over time and the latency distribution with gnuplot. */
int lt_result_plot(const struct lt_result *r, const char *png_path);

/* CPU seconds (user + system) a process has used, from /proc/PID/stat. */
int lt_proc_cpu_seconds(int pid, double *out);

/* ===== HTTP client ====================================================== */

struct lt_client;
struct lt_conn;
struct lt_req;

/* HTTP/1.1 (lt_h1.c). A response belongs to the oldest request without
 * one, which front names (NULL: none is waiting); done runs when its reply
 * is complete (r->status, r->query_error and r->resp filled). */
struct lt_h1;
typedef struct lt_req *lt_h1_front_cb(void *data);
typedef void lt_h1_done_cb(void *data, struct lt_req *r);
struct lt_h1 *lt_h1_new(lt_h1_front_cb *front, lt_h1_done_cb *done, void *data);
void lt_h1_free(struct lt_h1 *h);
/* Parses response bytes (n = 0: the server closed the connection).
 * Returns SL_OK; SL_ECLOSED once the server has said its last reply was the
 * last; SL_EINVAL for a malformed or unasked-for response. *why names the
 * failure (static text). */
int lt_h1_feed(struct lt_h1 *h, const char *p, size_t n, const char **why);
/* Appends a POST with host, the headers, content-length and the body. */
void lt_h1_request(struct sl_buf *out, const char *path, const char *host,
                   const struct sigv4_header *headers, size_t n, struct sl_slice body);

typedef void lt_req_done_cb(struct lt_req *req);

/* One request. Fill body, action and cred, then lt_conn_submit(). */
struct lt_req {
    struct lt_conn *conn;
    struct lt_req *next; /* in the connection's in-flight list, oldest first */
    struct lt_req *prev;
    int32_t stream_id;
    const char *action; /* "SendMessage": x-amz-target AmazonSQS.<action> (JSON) */
    const struct lt_credentials *cred;
    struct sl_buf body;
    size_t body_off;
    uint64_t issued_ns;
    uint64_t done_ns;
    int status; /* HTTP status, 0 = no reply (transport failure) */
    char query_error[128];
    char transport_error[64];
    struct sl_buf resp;
    lt_req_done_cb *cb;
    void *data;
};

void lt_req_init(struct lt_req *r);
void lt_req_fini(struct lt_req *r);
/* Clears the reply and the body for reuse. */
void lt_req_reset(struct lt_req *r);

struct uv_loop_s;
/* tls_ctx is an SSL_CTX * or NULL for cleartext (h2c, or HTTP/1.1 with
 * --http1). */
struct lt_client *lt_client_new(struct uv_loop_s *loop, const struct lt_opts *o, void *tls_ctx);
void lt_client_free(struct lt_client *c);
/* Builds the TLS context of --tls (ALPN h2, or http/1.1 with --http1), or
 * NULL with a message. */
void *lt_tls_ctx_new(const struct lt_opts *o, char *err, size_t errlen);
void lt_tls_ctx_free(void *ctx);

typedef void lt_conn_ready_cb(struct lt_conn *conn, int status, void *data);
/* Connects; ready runs once, with SL_OK when the HTTP/2 session (or the
 * HTTP/1.1 connection) is up. */
struct lt_conn *lt_conn_open(struct lt_client *c, lt_conn_ready_cb *ready, void *data);
/* Fails what is in flight (their callbacks run) and closes the socket; the
 * connection is freed once libuv is done with it. */
void lt_conn_close(struct lt_conn *conn);
bool lt_conn_usable(const struct lt_conn *conn);
unsigned lt_conn_inflight(const struct lt_conn *conn);
/* Signs and sends r (with --http1 pipelined behind what is in flight).
 * SL_OK: r belongs to the connection until r->cb runs.
 * SL_ECLOSED: the connection is dead; r is still the caller's. */
int lt_conn_submit(struct lt_conn *conn, struct lt_req *r);

/* ===== scenarios ======================================================== */

/* Runs the scenario of o; fills r (groups owned by r, freed with
 * lt_result_fini). Returns SL_OK, or SL_ECLOSED when the gateway cannot run
 * it (r->setup_error says why), or SL_EIO when no connection came up. */
int lt_run(const struct lt_opts *o, struct lt_result *r);
void lt_result_fini(struct lt_result *r);

#endif
