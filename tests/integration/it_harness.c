/*
 * it_harness.c -- see it_harness.h. Runs the real sluiced as a child process
 * and talks to it with libcurl (HTTP/2) and raw sockets / OpenSSL.
 *
 * Threading: single-threaded use, except it_request(), which may be called
 * from several threads at once (one easy handle per call).
 */
#include "it_harness.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

int it_passed, it_failed;

void it_sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

int it_summary(void)
{
    printf("%d passed, %d failed\n", it_passed, it_failed);
    fflush(stdout);
    return it_failed == 0 && it_passed > 0 ? 0 : 1;
}

const char *it_sluiced_path(void)
{
    static char path[512];
    const char *dir = getenv("SLUICE_BUILD_DIR");
    snprintf(path, sizeof(path), "%s/sluiced", dir != NULL ? dir : IT_BUILD_DIR);
    return path;
}

uint16_t it_free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &len) != 0) {
        if (fd >= 0)
            close(fd);
        return 0;
    }
    close(fd);
    return ntohs(a.sin_port);
}

static int write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (f == NULL)
        return -1;
    size_t n = strlen(text);
    int rv = fwrite(text, 1, n, f) == n ? 0 : -1;
    return fclose(f) == 0 ? rv : -1;
}

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return NULL;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    size_t got;
    while ((got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
        n += got;
        if (cap - n < 2048) {
            cap *= 2;
            buf = realloc(buf, cap);
        }
    }
    fclose(f);
    buf[n] = '\0';
    return buf;
}

void it_config_yaml(const struct it_server *s, const struct it_options *opt, char *buf, size_t cap)
{
    int n = snprintf(buf, cap,
                     "listen: 127.0.0.1:%u\n"
                     "region: " IT_REGION "\n"
                     "data_dir: %s\n"
                     "partitions: %u\n"
                     "shard_size: %u\n"
                     "durability: os\n"
                     "io_threads: %u\n",
                     s->port, s->data_dir, opt->partitions != 0 ? opt->partitions : 2,
                     opt->shard_size != 0 ? opt->shard_size : 1,
                     opt->io_threads != 0 ? opt->io_threads : 2);
    if (opt->tls)
        n += snprintf(buf + n, cap - (size_t)n, "tls:\n  cert_file: %s\n  key_file: %s\n",
                      s->cert_path, s->key_path);
    if (opt->admin)
        n += snprintf(buf + n, cap - (size_t)n,
                      "admin:\n  listen: 127.0.0.1:%u\n  access_key_id: " IT_ADMIN_KEY
                      "\n  secret_access_key: " IT_ADMIN_SECRET "\n",
                      s->admin_port);
    if (opt->tenants_yaml != NULL)
        n += snprintf(buf + n, cap - (size_t)n, "%s", opt->tenants_yaml);
    else
        n += snprintf(buf + n, cap - (size_t)n,
                      "tenants:\n  " IT_TENANT ":\n    access_key_id: " IT_KEY
                      "\n    secret_access_key: " IT_SECRET "\n");
    if (opt->extra_yaml != NULL)
        snprintf(buf + n, cap - (size_t)n, "%s", opt->extra_yaml);
}

int it_server_write_config(const struct it_server *s, const char *yaml)
{
    return write_file(s->config_path, yaml);
}

static int make_cert(struct it_server *s)
{
    snprintf(s->cert_path, sizeof(s->cert_path), "%s/server.crt", s->dir);
    snprintf(s->key_path, sizeof(s->key_path), "%s/server.key", s->dir);
    char cmd[1200];
    snprintf(cmd, sizeof(cmd),
             "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes "
             "-keyout '%s' -out '%s' -days 2 -subj /CN=127.0.0.1 "
             "-addext subjectAltName=IP:127.0.0.1 >/dev/null 2>&1",
             s->key_path, s->cert_path);
    return system(cmd) == 0 ? 0 : -1;
}

static void print_log(const struct it_server *s)
{
    char *log = read_file(s->log_path);
    fprintf(stderr, "---- sluiced log (%s) ----\n%s---- end of log ----\n", s->log_path,
            log != NULL ? log : "(none)\n");
    free(log);
}

static bool answers_healthz(const struct it_server *s);

int it_server_start(struct it_server *s, const struct it_options *opt)
{
    static bool curl_ready;
    if (!curl_ready) {
        curl_global_init(CURL_GLOBAL_ALL);
        curl_ready = true;
    }
    memset(s, 0, sizeof(*s));
    snprintf(s->dir, sizeof(s->dir), "/tmp/sluice-it-XXXXXX");
    if (mkdtemp(s->dir) == NULL) {
        perror("mkdtemp");
        return -1;
    }
    snprintf(s->config_path, sizeof(s->config_path), "%s/sluice.yaml", s->dir);
    snprintf(s->data_dir, sizeof(s->data_dir), "%s/data", s->dir);
    snprintf(s->log_path, sizeof(s->log_path), "%s/sluiced.log", s->dir);
    s->tls = opt->tls;
    s->nofile_limit = opt->nofile_limit;
    s->start_unhealthy = opt->start_unhealthy;
    s->env = opt->env;
    s->port = it_free_port();
    s->admin_port = opt->admin ? it_free_port() : 0;
    const char *scheme = opt->tls ? "https" : "http";
    snprintf(s->base_url, sizeof(s->base_url), "%s://127.0.0.1:%u", scheme, s->port);
    snprintf(s->admin_url, sizeof(s->admin_url), "%s://127.0.0.1:%u", scheme, s->admin_port);
    if (s->port == 0 || (opt->admin && s->admin_port == 0)) {
        fprintf(stderr, "it: no free port\n");
        return -1;
    }
    if (opt->tls && make_cert(s) != 0) {
        fprintf(stderr, "it: openssl could not make a certificate\n");
        return -1;
    }
    char yaml[8192];
    it_config_yaml(s, opt, yaml, sizeof(yaml));
    if (it_server_write_config(s, yaml) != 0) {
        perror("it: write config");
        return -1;
    }
    return it_server_restart(s);
}

int it_server_restart(struct it_server *s)
{
    if (s->pid > 0) {
        fprintf(stderr, "it: sluiced is still running\n");
        return -1;
    }
    /* The environment, made before the fork (the child only execs):
     * it_options.env first, so that it wins over an inherited name. */
    extern char **environ;
    size_t n_extra = 0, n_inherited = 0;
    while (s->env != NULL && s->env[n_extra] != NULL)
        n_extra++;
    while (environ[n_inherited] != NULL)
        n_inherited++;
    char **envp = calloc(n_extra + n_inherited + 1, sizeof *envp);
    if (envp == NULL)
        return -1;
    for (size_t i = 0; i < n_extra; i++)
        envp[i] = (char *)s->env[i];
    memcpy(envp + n_extra, environ, n_inherited * sizeof *envp);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid != 0)
        free(envp);
    if (pid < 0)
        return -1;
    if (pid == 0) {
        /* A test killed (a timeout, ^C, SIGKILL) must not leave its
         * server running: the kernel kills sluiced when the thread that
         * forked it ends (it survives execve), so the harness must
         * start servers from a thread that outlives them. A parent that
         * died before the prctl is caught by the check after it. */
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
            _exit(124);
        int fd = open(s->log_path, O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
            close(fd);
        }
        if (chdir(s->dir) != 0)
            _exit(126);
        if (s->nofile_limit > 0) {
            struct rlimit rl = {s->nofile_limit, s->nofile_limit};
            if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
                _exit(125);
        }
        char *const argv[] = {"sluiced", "--config", s->config_path, NULL};
        execve(it_sluiced_path(), argv, envp);
        _exit(127);
    }
    s->pid = pid;
    /* Up to ~20 s: sanitizer builds on a busy 2-core machine start slowly. */
    for (int i = 0; i < 400; i++) {
        int st;
        if (waitpid(pid, &st, WNOHANG) == pid) {
            s->pid = 0;
            fprintf(stderr, "it: sluiced exited during start-up (status %d)\n",
                    WIFEXITED(st) ? WEXITSTATUS(st) : -1);
            print_log(s);
            return -1;
        }
        if (it_healthz(s) || (s->start_unhealthy && answers_healthz(s)))
            return 0;
        it_sleep_ms(50);
    }
    fprintf(stderr, "it: sluiced did not become healthy\n");
    print_log(s);
    return -1;
}

void it_server_signal(const struct it_server *s, int signum)
{
    if (s->pid > 0)
        kill(s->pid, signum);
}

int it_server_stop(struct it_server *s)
{
    if (s->pid <= 0)
        return -1;
    kill(s->pid, SIGTERM);
    for (int i = 0; i < 1200; i++) {
        int st;
        pid_t r = waitpid(s->pid, &st, WNOHANG);
        if (r == s->pid) {
            s->pid = 0;
            if (WIFEXITED(st))
                return WEXITSTATUS(st);
            fprintf(stderr, "it: sluiced died of signal %d\n", WTERMSIG(st));
            print_log(s);
            return -1;
        }
        it_sleep_ms(50);
    }
    fprintf(stderr, "it: sluiced did not exit after SIGTERM; killing it\n");
    print_log(s);
    kill(s->pid, SIGKILL);
    waitpid(s->pid, NULL, 0);
    s->pid = 0;
    return -1;
}

void it_server_cleanup(struct it_server *s)
{
    if (s->pid > 0) {
        kill(s->pid, SIGKILL);
        waitpid(s->pid, NULL, 0);
        s->pid = 0;
    }
    if (s->dir[0] != '\0' && getenv("SLUICE_IT_KEEP") == NULL) {
        char cmd[400];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", s->dir);
        if (system(cmd) != 0)
            fprintf(stderr, "it: could not remove %s\n", s->dir);
    }
}

bool it_log_contains(const struct it_server *s, const char *text)
{
    char *log = read_file(s->log_path);
    bool found = log != NULL && strstr(log, text) != NULL;
    free(log);
    return found;
}

int it_log_count(const struct it_server *s, const char *text)
{
    char *log = read_file(s->log_path);
    int n = 0;
    for (const char *p = log; p != NULL && (p = strstr(p, text)) != NULL; p += strlen(text))
        n++;
    free(log);
    return n;
}

bool it_wait_log(const struct it_server *s, const char *text, int timeout_ms)
{
    for (int waited = 0; waited <= timeout_ms; waited += 50) {
        if (it_log_contains(s, text))
            return true;
        it_sleep_ms(50);
    }
    return false;
}

/* ---- requests ----------------------------------------------------------- */

struct grow {
    char *p;
    size_t n;
};

static size_t on_bytes(char *data, size_t size, size_t nmemb, void *user)
{
    struct grow *g = user;
    size_t n = size * nmemb;
    g->p = realloc(g->p, g->n + n + 1);
    memcpy(g->p + g->n, data, n);
    g->n += n;
    g->p[g->n] = '\0';
    return n;
}

/* One request's libcurl state: what the easy handle writes into and the
 * header list it holds, owned until transfer_finish. */
struct transfer {
    CURL *easy;
    struct curl_slist *hdrs;
    struct grow body, headers;
    void *tag; /* it_request_many's caller's tag */
};

/* Sets up t->easy for req. libcurl copies the URL, headers and
 * credentials; req->body must outlive the transfer. */
static int transfer_init(const struct it_server *s, const struct it_request *req,
                         struct transfer *t)
{
    memset(t, 0, sizeof(*t));
    CURL *h = curl_easy_init();
    if (h == NULL)
        return CURLE_FAILED_INIT;
    t->easy = h;
    char url[512];
    snprintf(url, sizeof(url), "%s%s", req->admin ? s->admin_url : s->base_url,
             req->path != NULL ? req->path : "/");
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, req->timeout_ms > 0 ? req->timeout_ms : 30000L);
    char source[64];
    if (req->source_address != NULL) {
        snprintf(source, sizeof(source), "host!%s", req->source_address);
        curl_easy_setopt(h, CURLOPT_INTERFACE, source);
    }
    long version = req->http1 ? CURL_HTTP_VERSION_1_1
                   : s->tls   ? CURL_HTTP_VERSION_2TLS
                              : CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE;
    curl_easy_setopt(h, CURLOPT_HTTP_VERSION, version);
    if (s->tls) {
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
    }
    const char *method = req->method != NULL ? req->method : "GET";
    if (req->body != NULL) {
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, req->body);
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)req->body_len);
    }
    if (strcmp(method, "GET") != 0 && !(strcmp(method, "POST") == 0 && req->body != NULL))
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
    for (size_t i = 0; req->headers != NULL && req->headers[i] != NULL; i++)
        t->hdrs = curl_slist_append(t->hdrs, req->headers[i]);
    /* libcurl adds "Expect: 100-continue" to large HTTP/1.1 bodies; the
     * empty "Expect:" that removes it must not go on HTTP/2 requests:
     * libcurl 7.88 signs it (SigV4) without sending it there, which breaks
     * every signature. */
    if (req->http1) {
        t->hdrs = curl_slist_append(t->hdrs, "Expect:");
    }
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, t->hdrs);
    char userpwd[256];
    if (req->access_key != NULL && req->secret != NULL) {
        curl_easy_setopt(h, CURLOPT_AWS_SIGV4, "aws:amz:" IT_REGION ":sqs");
        snprintf(userpwd, sizeof(userpwd), "%s:%s", req->access_key, req->secret);
        curl_easy_setopt(h, CURLOPT_USERPWD, userpwd);
    }
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_bytes);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &t->body);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_bytes);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, &t->headers);
    return CURLE_OK;
}

/* Moves the transfer's response into out and frees the transfer. */
static void transfer_finish(struct transfer *t, struct it_response *out)
{
    curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &out->status);
    curl_easy_getinfo(t->easy, CURLINFO_HTTP_VERSION, &out->http_version);
    out->body = t->body.p != NULL ? t->body.p : calloc(1, 1);
    out->body_len = t->body.n;
    out->headers = t->headers.p != NULL ? t->headers.p : calloc(1, 1);
    curl_slist_free_all(t->hdrs);
    curl_easy_cleanup(t->easy);
    memset(t, 0, sizeof(*t));
}

int it_request(const struct it_server *s, const struct it_request *req, struct it_response *out)
{
    memset(out, 0, sizeof(*out));
    struct transfer t;
    int rc = transfer_init(s, req, &t);
    if (rc != CURLE_OK)
        return rc;
    rc = (int)curl_easy_perform(t.easy);
    transfer_finish(&t, out);
    return rc;
}

/* Ends transfer t (removed from m, freed) and hands its response to done. */
static void answer(CURLM *m, struct transfer *t, int rc, it_request_done_fn done, void *user)
{
    curl_multi_remove_handle(m, t->easy);
    void *tag = t->tag;
    struct it_response resp;
    memset(&resp, 0, sizeof(resp));
    transfer_finish(t, &resp);
    free(t);
    done(user, tag, &resp, rc);
    it_response_free(&resp);
}

int it_request_many(const struct it_server *s, unsigned window, it_next_request_fn next,
                    it_request_done_fn done, void *user)
{
    /* libcurl before 8.0 breaks a reused h2c (prior knowledge) connection
     * with "Error in the HTTP2 framing layer" (curl PR #10643); over TLS
     * (ALPN h2) it multiplexes correctly. */
    if (!s->tls && curl_version_info(CURLVERSION_NOW)->version_num < 0x080000) {
        fprintf(stderr, "it: it_request_many needs a TLS server with libcurl %s\n",
                curl_version_info(CURLVERSION_NOW)->version);
        return -1;
    }
    CURLM *m = curl_multi_init();
    if (m == NULL)
        return -1;
    /* One connection, every request a stream of it. */
    curl_multi_setopt(m, CURLMOPT_PIPELINING, (long)CURLPIPE_MULTIPLEX);
    curl_multi_setopt(m, CURLMOPT_MAX_HOST_CONNECTIONS, 1L);
    /* The transfers outstanding, so a failure can still answer each. */
    struct transfer **live = calloc(window, sizeof(*live));
    unsigned active = 0;
    int result = live != NULL ? 0 : -1;
    while (result == 0) {
        while (active < window) {
            struct it_request req;
            memset(&req, 0, sizeof(req));
            void *tag = NULL;
            if (!next(user, &req, &tag))
                break;
            struct transfer *t = malloc(sizeof(*t));
            if (t == NULL || transfer_init(s, &req, t) != CURLE_OK) {
                free(t);
                struct it_response none = {.body = calloc(1, 1), .headers = calloc(1, 1)};
                done(user, tag, &none, CURLE_FAILED_INIT);
                it_response_free(&none);
                result = -1;
                break;
            }
            t->tag = tag;
            for (unsigned i = 0; i < window; i++) {
                if (live[i] == NULL) {
                    live[i] = t;
                    break;
                }
            }
            curl_easy_setopt(t->easy, CURLOPT_PIPEWAIT, 1L);
            curl_easy_setopt(t->easy, CURLOPT_PRIVATE, t);
            curl_multi_add_handle(m, t->easy);
            active++;
        }
        if (active == 0 || result != 0)
            break;
        int running = 0;
        if (curl_multi_perform(m, &running) != CURLM_OK) {
            result = -1;
            break;
        }
        bool finished = false;
        int queued;
        CURLMsg *msg;
        while ((msg = curl_multi_info_read(m, &queued)) != NULL) {
            if (msg->msg != CURLMSG_DONE)
                continue;
            char *priv = NULL;
            if (curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &priv) != CURLE_OK ||
                priv == NULL) {
                result = -1; /* every handle added carries its transfer */
                continue;
            }
            struct transfer *t = (struct transfer *)(void *)priv;
            for (unsigned i = 0; i < window; i++) {
                if (live[i] == t)
                    live[i] = NULL;
            }
            active--;
            finished = true;
            answer(m, t, (int)msg->data.result, done, user);
        }
        if (!finished && curl_multi_poll(m, NULL, 0, 1000, NULL) != CURLM_OK) {
            result = -1;
            break;
        }
    }
    /* Only after a failure: what is still outstanding is abandoned, and
     * answered as a transfer that got no response. */
    for (unsigned i = 0; live != NULL && i < window; i++) {
        if (live[i] != NULL)
            answer(m, live[i], CURLE_ABORTED_BY_CALLBACK, done, user);
    }
    free(live);
    curl_multi_cleanup(m);
    return result;
}

int it_sqs(const struct it_server *s, const char *action, const char *json, const char *key,
           const char *secret, struct it_response *out)
{
    char target[128];
    snprintf(target, sizeof(target), "x-amz-target: AmazonSQS.%s", action);
    const char *headers[] = {target, "content-type: application/x-amz-json-1.0", NULL};
    struct it_request req = {
        .method = "POST",
        .path = "/",
        .headers = headers,
        .body = json,
        .body_len = strlen(json),
        .access_key = key,
        .secret = secret,
    };
    return it_request(s, &req, out);
}

bool it_response_header(const struct it_response *r, const char *name, char *buf, size_t cap)
{
    size_t nlen = strlen(name);
    for (const char *line = r->headers; line != NULL && *line != '\0';) {
        const char *eol = strstr(line, "\r\n");
        size_t len = eol != NULL ? (size_t)(eol - line) : strlen(line);
        if (len > nlen && strncasecmp(line, name, nlen) == 0 && line[nlen] == ':') {
            const char *v = line + nlen + 1;
            while (*v == ' ')
                v++;
            size_t vlen = (size_t)(line + len - v);
            if (vlen >= cap)
                vlen = cap - 1;
            memcpy(buf, v, vlen);
            buf[vlen] = '\0';
            return true;
        }
        line = eol != NULL ? eol + 2 : NULL;
    }
    return false;
}

void it_response_free(struct it_response *r)
{
    free(r->headers);
    free(r->body);
    memset(r, 0, sizeof(*r));
}

int it_admin_request(const struct it_server *s, const struct it_admin_call *call,
                     struct it_response *out)
{
    size_t extra = 0;
    while (call->headers != NULL && call->headers[extra] != NULL) {
        extra++;
    }
    /* authorization, content-type, the caller's, the terminating NULL */
    const char **headers = calloc(extra + 3, sizeof *headers);
    if (headers == NULL) {
        memset(out, 0, sizeof *out);
        return CURLE_OUT_OF_MEMORY;
    }
    char authz[256];
    size_t n = 0;
    if (call->authorization != NULL) {
        snprintf(authz, sizeof authz, "authorization: %s", call->authorization);
        headers[n++] = authz;
    } else if (call->token != NULL) {
        snprintf(authz, sizeof authz, "authorization: Bearer %s", call->token);
        headers[n++] = authz;
    }
    if (call->body != NULL) {
        headers[n++] = "content-type: application/json";
    }
    for (size_t i = 0; i < extra; i++) {
        headers[n++] = call->headers[i];
    }
    struct it_request req = {
        .method = call->method != NULL ? call->method : "GET",
        .path = call->path,
        .headers = headers,
        .body = call->body,
        .body_len = call->body != NULL ? strlen(call->body) : 0,
        .access_key = call->key,
        .secret = call->secret,
        .http1 = call->http1,
        .admin = true,
        .timeout_ms = call->timeout_ms,
        .source_address = call->source,
    };
    int rc = it_request(s, &req, out);
    free(headers);
    return rc;
}

double it_metric(const struct it_server *s, const char *series)
{
    struct it_admin_call call = {
        .path = "/metrics", .key = IT_ADMIN_KEY, .secret = IT_ADMIN_SECRET};
    struct it_response r;
    double v = -1;
    if (it_admin_request(s, &call, &r) == 0 && r.status == 200) {
        size_t n = strlen(series);
        for (const char *p = r.body; p != NULL && *p != '\0';
             p = strchr(p, '\n'), p = p ? p + 1 : p) {
            if (strncmp(p, series, n) == 0 && p[n] == ' ') {
                v = strtod(p + n + 1, NULL);
                break;
            }
        }
    }
    it_response_free(&r);
    return v;
}

static bool answers_healthz(const struct it_server *s)
{
    struct it_request req = {.method = "GET", .path = "/healthz", .timeout_ms = 5000};
    struct it_response r;
    bool answered = it_request(s, &req, &r) == 0 && r.status > 0;
    it_response_free(&r);
    return answered;
}

bool it_healthz(const struct it_server *s)
{
    struct it_request req = {.method = "GET", .path = "/healthz", .timeout_ms = 5000};
    struct it_response r;
    int rc = it_request(s, &req, &r);
    bool ok = rc == 0 && r.status == 200 && strcmp(r.body, "ok") == 0;
    it_response_free(&r);
    return ok;
}

static int connect_local(uint16_t port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {
        .sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    return fd;
}

int it_connect(const struct it_server *s)
{
    return connect_local(s->port);
}

long it_raw_exchange(const struct it_server *s, const void *bytes, size_t n, char *reply,
                     size_t cap, int timeout_ms)
{
    int fd = connect_local(s->port);
    if (fd < 0)
        return -1;
    if (n > 0 && send(fd, bytes, n, MSG_NOSIGNAL) < 0) {
        close(fd);
        return 0; /* already closed by the server */
    }
    size_t got = 0;
    long result = -1;
    for (int waited = 0; waited < timeout_ms;) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int rv = poll(&p, 1, 100);
        waited += 100;
        if (rv <= 0)
            continue;
        char tmp[4096];
        ssize_t r = recv(fd, tmp, sizeof(tmp), 0);
        if (r <= 0) { /* EOF or reset: the server closed */
            result = (long)got;
            break;
        }
        size_t take = (size_t)r < cap - 1 - got ? (size_t)r : cap - 1 - got;
        memcpy(reply + got, tmp, take);
        got += take;
    }
    reply[got] = '\0';
    close(fd);
    return result;
}

bool it_tls_handshake(const struct it_server *s, const unsigned char *alpn, unsigned alpn_len)
{
    int fd = connect_local(s->port);
    if (fd < 0)
        return false;
    struct timeval tv = {10, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    SSL *ssl = SSL_new(ctx);
    SSL_set_fd(ssl, fd);
    SSL_set_alpn_protos(ssl, alpn, alpn_len);
    bool ok = false;
    if (SSL_connect(ssl) == 1) {
        const unsigned char *p;
        unsigned len;
        SSL_get0_alpn_selected(ssl, &p, &len);
        ok = len == 2 && memcmp(p, "h2", 2) == 0;
        /* A server that let a non-h2 client through would now read from
         * it; make sure the connection really is closed on us. */
        if (!ok) {
            char b;
            ok = SSL_read(ssl, &b, 1) > 0;
        }
    }
    ERR_clear_error();
    SSL_free(ssl);
    SSL_CTX_free(ctx);
    close(fd);
    return ok;
}

int it_run_sluiced(const char *args, char **err_out)
{
    char tmpl[] = "/tmp/sluice-it-err-XXXXXX";
    int fd = mkstemp(tmpl);
    if (fd < 0)
        return -1;
    close(fd);
    char cmd[2048];
    snprintf(cmd, sizeof(cmd), "'%s' %s 2>'%s' >/dev/null", it_sluiced_path(), args, tmpl);
    int st = system(cmd);
    *err_out = read_file(tmpl);
    if (*err_out == NULL)
        *err_out = calloc(1, 1);
    unlink(tmpl);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int it_run_capture(const char *cmd, char *out, size_t cap)
{
    out[0] = '\0';
    FILE *p = popen(cmd, "r");
    if (p == NULL)
        return -1;
    size_t n = fread(out, 1, cap - 1, p);
    out[n] = '\0';
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int it_server_bounce(struct it_server *s, const struct it_options *opt, bool kill9)
{
    int rc = 0;
    if (kill9 && s->pid > 0) {
        kill(s->pid, SIGKILL);
        waitpid(s->pid, NULL, 0);
        s->pid = 0;
    } else if (!kill9) {
        rc = it_server_stop(s) == 0 ? 0 : -1;
    }
    if (opt != NULL) {
        char yaml[8192];
        it_config_yaml(s, opt, yaml, sizeof yaml);
        rc = it_server_write_config(s, yaml) == 0 ? rc : -1;
    }
    return it_server_restart(s) == 0 ? rc : -1;
}
