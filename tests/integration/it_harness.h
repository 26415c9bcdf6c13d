/*
 * it_harness.h -- integration-test harness: runs the real build/sluiced as a
 * child process on a free 127.0.0.1 port with a fresh temp directory, and
 * talks to it over HTTP/2 with libcurl (h2c prior knowledge, or h2 over TLS
 * with a self-signed certificate made at test time with the openssl CLI).
 * libcurl's CURLOPT_AWS_SIGV4 signs requests, an implementation independent
 * of ours.
 *
 * Typical test:
 *
 *     struct it_server srv;
 *     struct it_options opt = {.tls = false};
 *     IT_REQUIRE(it_server_start(&srv, &opt) == 0);
 *     struct it_response r;
 *     IT_CHECK(it_sqs(&srv, "ListQueues", "{}", IT_KEY, IT_SECRET, &r) == 0);
 *     IT_CHECK(r.status == 200);
 *     it_response_free(&r);
 *     IT_CHECK(it_server_stop(&srv) == 0);   // SIGTERM; exit status 0
 *     it_server_cleanup(&srv);
 *     return it_summary();                   // prints "N passed, N failed"
 *
 * Environment: SLUICE_BUILD_DIR (set by ctest) is where sluiced lives.
 * Every wait is bounded; failures are counted, never abort the program
 * (except IT_REQUIRE, which ends the test with a summary).
 */
#ifndef SLUICE_IT_HARNESS_H
#define SLUICE_IT_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>

/* The tenant every generated configuration has. */
#define IT_TENANT "acme"
#define IT_KEY "AKIDACME"
#define IT_SECRET "acme-secret"
/* The admin credentials when it_options.admin is set. */
#define IT_ADMIN_KEY "admin"
#define IT_ADMIN_SECRET "admin-secret"
#define IT_REGION "us-east-1"

/* An it_options.tenants_yaml that gives the admin a bearer token as well
 * (the harness writes no bearer_token itself): its first line is written
 * right after the harness's admin section, so it continues that mapping;
 * then the tenants section with acme (IT_KEY / IT_SECRET). A string
 * literal: a test's further tenants may follow it. */
#define IT_TENANTS_YAML_WITH_TOKEN(token)                                                          \
    "  bearer_token: " token "\n"                                                                  \
    "tenants:\n"                                                                                   \
    "  " IT_TENANT ":\n"                                                                           \
    "    access_key_id: " IT_KEY "\n"                                                              \
    "    secret_access_key: " IT_SECRET "\n"

struct it_options {
    bool tls;                 /* h2 over TLS with a fresh self-signed cert */
    bool admin;               /* also an admin listener on another free port */
    unsigned io_threads;      /* 0 = 2 */
    const char *tenants_yaml; /* replaces the default "tenants:" section (whole
                                 section, including the "tenants:" line); NULL =
                                 tenant acme with IT_KEY / IT_SECRET */
    const char *extra_yaml;   /* appended at top level (e.g. "durability: os\n") */
    unsigned nofile_limit;    /* > 0: sluiced runs with RLIMIT_NOFILE soft = hard = this */
    unsigned partitions;      /* P; 0 = 2 */
    unsigned shard_size;      /* k; 0 = 1 */
    /* "NAME=VALUE" strings added to sluiced's environment (LD_PRELOAD, a
     * library's settings), NULL-terminated; may be NULL. Borrowed: must
     * outlive the server, whose restarts use it again. */
    const char *const *env;
    /* Started once /healthz answers at all (a cluster's node that cannot
     * serve answers 503), not only once it answers 200. */
    bool start_unhealthy;
};

struct it_server {
    char dir[256];         /* fresh temp dir, removed by it_server_cleanup */
    char config_path[320]; /* dir/sluice.yaml */
    char data_dir[320];    /* dir/data */
    char log_path[320];    /* sluiced's stderr */
    char cert_path[320];   /* TLS only */
    char key_path[320];
    uint16_t port;       /* the SQS listener */
    uint16_t admin_port; /* 0 without admin */
    bool tls;
    char base_url[64]; /* "http://127.0.0.1:PORT" or "https://..." */
    char admin_url[64];
    pid_t pid;              /* 0 when not running */
    unsigned nofile_limit;  /* from it_options, kept for restarts */
    const char *const *env; /* from it_options, kept for restarts */
    bool start_unhealthy;   /* it_options.start_unhealthy */
};

/* Writes the configuration, starts build/sluiced --config, and waits (bounded)
 * for /healthz to answer 200. Returns 0, or -1 with a reason on stderr (the
 * server's log is printed too). */
int it_server_start(struct it_server *s, const struct it_options *opt);

/* Starts sluiced again, after it_server_stop, on the same directory,
 * configuration and port (its data survives), and waits for /healthz.
 * Returns 0 or -1 as it_server_start. */
int it_server_restart(struct it_server *s);

/* The YAML it_server_start wrote for opt, into buf (NUL-terminated). Useful to
 * write a changed file for SIGHUP tests. */
void it_config_yaml(const struct it_server *s, const struct it_options *opt, char *buf, size_t cap);

/* Replaces the config file's contents (for SIGHUP). Returns 0 or -1. */
int it_server_write_config(const struct it_server *s, const char *yaml);

/* Stops the running server -- SIGTERM and a clean exit, or with kill9 a
 * SIGKILL (a crash: no shutdown runs) -- then, when opt is not NULL,
 * rewrites the config file as it_server_start would for opt (same ports
 * and directories), and starts it again (it_server_restart). Returns 0,
 * or -1 (a stop that was not clean, or a failed start). */
int it_server_bounce(struct it_server *s, const struct it_options *opt, bool kill9);

/* Sends a signal to the running server. */
void it_server_signal(const struct it_server *s, int signum);

/* SIGTERM, then waits (bounded, 60 s) for the exit. Returns the exit status
 * (0 = clean), or -1 if it had to be killed or died of a signal. */
int it_server_stop(struct it_server *s);

/* Kills a still-running server and removes the temp dir. */
void it_server_cleanup(struct it_server *s);

/* True when the server's log contains text. it_wait_log polls for it (bounded
 * by timeout_ms); use it after a signal. */
bool it_log_contains(const struct it_server *s, const char *text);
/* How many times text occurs in the server's log. */
int it_log_count(const struct it_server *s, const char *text);
bool it_wait_log(const struct it_server *s, const char *text, int timeout_ms);

/* ---- requests ----------------------------------------------------------- */

struct it_request {
    const char *method;         /* "GET", "POST" ... */
    const char *path;           /* "/", "/healthz" */
    const char *const *headers; /* "name: value" strings, NULL-terminated; may be NULL */
    const void *body;           /* may be NULL */
    size_t body_len;
    const char *access_key; /* with secret: sign with SigV4 (sqs, IT_REGION) */
    const char *secret;
    bool http1;      /* speak HTTP/1.1 instead of HTTP/2 */
    bool admin;      /* send to the admin listener */
    long timeout_ms; /* 0 = 30000 */
    /* The client's own address ("127.0.0.2": any 127/8 address reaches a
     * server on 127.0.0.1), or NULL for the system's choice. */
    const char *source_address;
};

struct it_response {
    long status;       /* 0 when no response (connection refused, reset...) */
    long http_version; /* CURL_HTTP_VERSION_2_0 etc. */
    char *headers;     /* raw header block, "name: value\r\n" lines */
    char *body;        /* NUL-terminated */
    size_t body_len;
};

/* Performs one request. Returns the CURLcode (0 = a response arrived). out is
 * always initialised; free it with it_response_free. */
int it_request(const struct it_server *s, const struct it_request *req, struct it_response *out);

/* Performs requests concurrently, as streams of one HTTP/2 connection
 * (libcurl multi), at most window at a time. next(user, req, tag) fills in
 * the next request (zeroed before) and an opaque tag and returns true, or
 * returns false when it has nothing to send right now; it is asked again
 * after every completion. done(user, tag, resp, rc) gets each request's
 * response (rc the CURLcode) exactly once; it may take resp->body or
 * resp->headers (set the member to NULL), the rest is freed after it
 * returns. req->body must stay valid until that request's done() call.
 * Returns 0 once next() declines with nothing outstanding, or -1 when
 * libcurl failed (everything still outstanding is then answered with rc
 * != 0 and status 0). Each request keeps its own timeout_ms (0 = 30 s).
 * Needs a TLS server (it_options.tls) with libcurl before 8.0, whose h2c
 * connection reuse is broken (curl PR #10643). */
typedef bool (*it_next_request_fn)(void *user, struct it_request *req, void **tag);
typedef void (*it_request_done_fn)(void *user, void *tag, struct it_response *resp, int rc);
int it_request_many(const struct it_server *s, unsigned window, it_next_request_fn next,
                    it_request_done_fn done, void *user);

/* POST / with x-amz-target: AmazonSQS.<action> and the JSON 1.0 content
 * type, signed with key/secret (unsigned when key is NULL). */
int it_sqs(const struct it_server *s, const char *action, const char *json, const char *key,
           const char *secret, struct it_response *out);

/* The value of a response header (case-insensitive name) into buf; false when
 * absent. */
bool it_response_header(const struct it_response *r, const char *name, char *buf, size_t cap);

void it_response_free(struct it_response *r);

/* Sleeps ms milliseconds. */
void it_sleep_ms(int ms);

/* One request to the admin listener (start the server with
 * it_options.admin). The credentials are what the call names: a bearer
 * token, another authorization header, a SigV4 signature, or nothing. */
struct it_admin_call {
    const char *method; /* NULL = "GET" */
    const char *path;   /* "/api/queues", "/metrics" */
    const char *body;   /* JSON text, sent as application/json; NULL = none */
    const char *token;  /* "authorization: Bearer <token>"; NULL = none */
    /* The whole authorization header value instead of token (another
     * scheme: "Basic ..."); NULL = as token says. */
    const char *authorization;
    const char *key; /* with secret: signed with SigV4 as this key; NULL = not */
    const char *secret;
    /* More "name: value" headers (a cookie, Origin...), NULL-terminated;
     * may be NULL. */
    const char *const *headers;
    bool http1;         /* HTTP/1.1 instead of HTTP/2 */
    const char *source; /* the client's address, as it_request.source_address */
    long timeout_ms;    /* 0 = 30000 */
};

/* Performs call. Returns the CURLcode as it_request does (0 = a response
 * arrived); out is always initialised, free it with it_response_free. */
int it_admin_request(const struct it_server *s, const struct it_admin_call *call,
                     struct it_response *out);

/* The value of one /metrics sample, asked as the admin (start the server
 * with it_options.admin): series is the whole name with its labels, e.g.
 * "sluice_partition_backlog_messages{partition=\"1\"}". -1 when absent. */
double it_metric(const struct it_server *s, const char *series);

/* GET /healthz over HTTP/2: true on 200 "ok". */
bool it_healthz(const struct it_server *s);

/* Opens a raw TCP connection, sends bytes, and reads until the server closes
 * (bounded by timeout_ms). Returns the number of bytes read into reply (at
 * most cap - 1, NUL-terminated), or -1 when the server did not close in
 * time. */
long it_raw_exchange(const struct it_server *s, const void *bytes, size_t n, char *reply,
                     size_t cap, int timeout_ms);

/* A raw TCP connection to the SQS listener (blocking). Returns the fd, or -1
 * when it could not connect. */
int it_connect(const struct it_server *s);

/* A TLS handshake offering the given ALPN protocols (wire format, e.g.
 * "\x08http/1.1"). True when it completed with "h2" selected. */
bool it_tls_handshake(const struct it_server *s, const unsigned char *alpn, unsigned alpn_len);

/* Runs build/sluiced with args (e.g. "--check-config FILE"), stderr into
 * *err_out (malloc'd, NUL-terminated). Returns the exit status, -1 on error. */
int it_run_sluiced(const char *args, char **err_out);

/* Runs cmd with sh (popen) and its stdout, cut at cap - 1 bytes, into out
 * (NUL-terminated). Returns the exit status, -1 when it could not run or
 * did not exit. */
int it_run_capture(const char *cmd, char *out, size_t cap);

/* A loopback port the kernel says is free right now (bound to port 0,
 * read, closed): for a listener of a test's own configuration. */
uint16_t it_free_port(void);

/* The path of build/sluiced. */
const char *it_sluiced_path(void);

/* ---- checks ------------------------------------------------------------- */

extern int it_passed, it_failed;

#define IT_CHECK(cond)                                                                             \
    do {                                                                                           \
        if (cond) {                                                                                \
            it_passed++;                                                                           \
        } else {                                                                                   \
            it_failed++;                                                                           \
            fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);                        \
        }                                                                                          \
    } while (0)

/* Like IT_CHECK, but ends the program (with the summary) on failure.
 * cond is evaluated once. */
#define IT_REQUIRE(cond)                                                                           \
    do {                                                                                           \
        bool it_ok_ = (cond);                                                                      \
        IT_CHECK(it_ok_ &&#cond);                                                                  \
        if (!it_ok_)                                                                               \
            exit(it_summary());                                                                    \
    } while (0)

/* Prints "N passed, N failed" and returns the exit status for main. */
int it_summary(void);

#endif
