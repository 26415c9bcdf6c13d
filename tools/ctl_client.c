/*
 * ctl_client.c -- sluicectl's signed SQS calls (see ctl_client.h). The
 * request is signed by sigv4_sign_sqs_request, the signer that shares its
 * canonicalisation with the gateway's verifier, over exactly the headers
 * sent: content-type, host (the endpoint's authority, which HTTP/2 sends
 * as :authority), x-amz-date and x-amz-target.
 */
#include "ctl_client.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <curl/curl.h>

#include "sigv4.h"

#define SQS_JSON "application/x-amz-json-1.0"

struct sink {
    struct sl_buf body;
    char query_error[128];
    long retry_after_ms;
};

/* The delay-seconds form of Retry-After (RFC 9110, 10.2.3) in ms; the
 * HTTP-date form, which the gateway never sends, reads as none. */
static long retry_after_ms_of(const char *v, size_t n)
{
    long s = 0;
    size_t i = 0;
    for (; i < n && v[i] >= '0' && v[i] <= '9' && s < 86400; i++) {
        s = s * 10 + (v[i] - '0');
    }
    return i > 0 ? SL_MIN(s, 86400L) * 1000 : 0;
}

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
    struct sink *s = arg;
    sl_buf_append(&s->body, p, size * n);
    return size * n;
}

static size_t on_header(char *p, size_t size, size_t n, void *arg)
{
    struct sink *s = arg;
    size_t len = size * n;
    static const char name[] = "x-amzn-query-error:";
    if (len > sizeof name - 1 && strncasecmp(p, name, sizeof name - 1) == 0) {
        const char *v = p + sizeof name - 1;
        while (*v == ' ') {
            v++;
        }
        size_t vn = strcspn(v, ";\r\n");
        snprintf(s->query_error, sizeof s->query_error, "%.*s", (int)vn, v);
    }
    static const char retry[] = "retry-after:";
    if (len > sizeof retry - 1 && strncasecmp(p, retry, sizeof retry - 1) == 0) {
        const char *v = p + sizeof retry - 1;
        while (*v == ' ') {
            v++;
        }
        s->retry_after_ms = retry_after_ms_of(v, strcspn(v, "\r\n"));
    }
    return len;
}

/* "HOST[:PORT]" as the URL names it: what curl sends as :authority. */
static bool authority_of(const char *url, char *out, size_t cap)
{
    CURLU *u = curl_url();
    char *host = NULL, *port = NULL;
    bool ok = curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
              curl_url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK;
    if (ok) {
        bool has_port = curl_url_get(u, CURLUPART_PORT, &port, 0) == CURLUE_OK;
        snprintf(out, cap, "%s%s%s", host, has_port ? ":" : "", has_port ? port : "");
    }
    curl_free(host);
    curl_free(port);
    curl_url_cleanup(u);
    return ok;
}

static void fail_transport(struct ctl_reply *out, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void fail_transport(struct ctl_reply *out, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out->transport, sizeof out->transport, fmt, ap);
    va_end(ap);
    snprintf(out->code, sizeof out->code, "ConnectionError");
    out->message = out->transport;
}

/* One HTTP exchange: url, the headers (the caller signed what it had to),
 * the payload (may be empty). Fills out->status and the sink. */
static bool perform(const struct ctl_endpoint *ep, const char *method, const char *url,
                    struct curl_slist *hl, const char *payload, struct sink *sink,
                    struct ctl_reply *out)
{
    CURL *c = curl_easy_init();
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTP_VERSION,
                     strncmp(url, "https://", 8) == 0 ? (long)CURL_HTTP_VERSION_2TLS
                                                      : (long)CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE);
    if (strcmp(method, "POST") == 0) {
        curl_easy_setopt(c, CURLOPT_POST, 1L);
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, payload);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(payload));
    }
    if (ep->cacert != NULL) {
        curl_easy_setopt(c, CURLOPT_CAINFO, ep->cacert);
    }
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hl);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, sink);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, sink);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, ep->timeout_ms > 0 ? ep->timeout_ms : 30000L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    CURLcode rc = curl_easy_perform(c);
    if (rc == CURLE_OK) {
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &out->status);
    }
    curl_easy_cleanup(c);
    if (rc != CURLE_OK) {
        fail_transport(out, "cannot reach %s: %s%s", url, curl_easy_strerror(rc),
                       rc == CURLE_PEER_FAILED_VERIFICATION || rc == CURLE_SSL_CACERT_BADFILE
                           ? " (a private CA? pass --cacert FILE or set SSL_CERT_FILE)"
                           : "");
        return false;
    }
    return true;
}

/* Takes the body into out and parses it. */
static void take_body(struct sink *sink, struct ctl_reply *out)
{
    out->body = sl_buf_take(&sink->body, NULL);
    if (out->body == NULL) {
        out->body = sl_xstrdup("");
    }
    out->json = json_loads(out->body, 0, NULL);
    out->retry_after_ms = sink->retry_after_ms;
}

/* Performs the request with headers hl (freed here) and, when a reply
 * came, takes its body into out. False when none came (out says why). */
static bool exchange(const struct ctl_endpoint *ep, const char *method, const char *url,
                     struct curl_slist *hl, const char *payload, struct sink *sink,
                     struct ctl_reply *out)
{
    sl_buf_init(&sink->body);
    bool reached = perform(ep, method, url, hl, payload, sink, out);
    curl_slist_free_all(hl);
    if (!reached) {
        sl_buf_free(&sink->body);
        return false;
    }
    take_body(sink, out);
    return true;
}

/* Sends a signed request: the headers every call carries (content type,
 * host, date when signed, the SQS target when given, authorization), then
 * exchange(). False when no reply came (out says why). */
static bool signed_exchange(const struct ctl_endpoint *ep, const char *method, const char *url,
                            const char *content_type, const char *authority, const char *amz_date,
                            const char *target, const struct sl_buf *auth, const char *payload,
                            struct sink *sink, struct ctl_reply *out)
{
    char ctype_h[96], host_h[300], date_h[64], target_h[160];
    size_t authz_cap = auth->n + 32;
    char *authz_h = sl_xmalloc(authz_cap);
    snprintf(ctype_h, sizeof ctype_h, "content-type: %s", content_type);
    snprintf(host_h, sizeof host_h, "host: %s", authority);
    snprintf(date_h, sizeof date_h, "x-amz-date: %s", amz_date);
    snprintf(authz_h, authz_cap, "authorization: %s", auth->p);
    struct curl_slist *hl = NULL;
    hl = curl_slist_append(hl, ctype_h);
    hl = curl_slist_append(hl, host_h);
    if (amz_date[0] != '\0') {
        hl = curl_slist_append(hl, date_h);
    }
    if (target != NULL) {
        snprintf(target_h, sizeof target_h, "x-amz-target: %s", target);
        hl = curl_slist_append(hl, target_h);
    }
    hl = curl_slist_append(hl, authz_h);
    hl = curl_slist_append(hl, "expect:");
    bool reached = exchange(ep, method, url, hl, payload, sink, out);
    free(authz_h);
    return reached;
}

bool ctl_call(const struct ctl_endpoint *ep, const char *action, json_t *req, struct ctl_reply *out)
{
    memset(out, 0, sizeof *out);
    if (req == NULL) {
        req = json_object();
    }
    char *payload = json_dumps(req, JSON_COMPACT);
    json_decref(req);
    char authority[256], amz_date[17], target[128];
    if (!authority_of(ep->url, authority, sizeof authority)) {
        free(payload);
        fail_transport(out, "bad endpoint URL %s", ep->url);
        return false;
    }
    snprintf(target, sizeof target, "AmazonSQS.%s", action);
    const struct sigv4_header extra[] = {
        {SL_SLICE_LIT("content-type"), SL_SLICE_LIT(SQS_JSON)},
        {SL_SLICE_LIT("x-amz-target"), sl_slice_cstr(target)},
    };
    const struct sigv4_credentials cred = {ep->access_key_id, ep->secret, ep->region, "sqs"};
    struct sl_buf auth;
    sl_buf_init(&auth);
    if (sigv4_sign_sqs_request(&cred, authority, "/", extra, SL_ARRAY_LEN(extra),
                               sl_slice_cstr(payload), (int64_t)time(NULL), amz_date,
                               &auth) != SL_OK) {
        sl_buf_free(&auth);
        free(payload);
        fail_transport(out, "cannot sign the request (%s)", "check the keys and region");
        return false;
    }
    char url[512];
    snprintf(url, sizeof url, "%s/", ep->url);
    size_t ul = strlen(ep->url);
    if (ul > 0 && ep->url[ul - 1] == '/') {
        snprintf(url, sizeof url, "%s", ep->url);
    }
    struct sink sink = {0};
    bool reached = signed_exchange(ep, "POST", url, SQS_JSON, authority, amz_date, target, &auth,
                                   payload, &sink, out);
    sl_buf_free(&auth);
    free(payload);
    if (!reached) {
        return false;
    }
    if (out->status >= 200 && out->status < 300) {
        return true;
    }
    const char *type = json_string_value(json_object_get(out->json, "__type"));
    const char *hash = type != NULL ? strrchr(type, '#') : NULL;
    if (sink.query_error[0] != '\0') {
        snprintf(out->code, sizeof out->code, "%s", sink.query_error);
    } else if (type != NULL) {
        snprintf(out->code, sizeof out->code, "%s", hash != NULL ? hash + 1 : type);
    } else {
        snprintf(out->code, sizeof out->code, "HTTP%ld", out->status);
    }
    out->message = json_string_value(json_object_get(out->json, "message"));
    if (out->message == NULL) {
        out->message = json_string_value(json_object_get(out->json, "Message"));
    }
    if (out->message == NULL) {
        out->message = out->body;
    }
    return false;
}

/* The Authorization value of an admin request: the bearer token, or a
 * SigV4 signature over method, path, query, the host and the body. */
static bool admin_authorization(const struct ctl_endpoint *ep, const char *method,
                                const char *authority, const char *path, const char *payload,
                                char amz_date[17], struct sl_buf *out)
{
    if (ep->admin_token != NULL) {
        sl_buf_printf(out, "Bearer %s", ep->admin_token);
        return true;
    }
    sigv4_amz_date((int64_t)time(NULL), amz_date);
    const char *q = strchr(path, '?');
    size_t path_n = q != NULL ? (size_t)(q - path) : strlen(path);
    const struct sigv4_header h[] = {
        {SL_SLICE_LIT("host"), sl_slice_cstr(authority)},
        {SL_SLICE_LIT("x-amz-date"), {amz_date, 16}},
    };
    const struct sigv4_request req = {
        .method = sl_slice_cstr(method),
        .path = {path, path_n},
        .query = q != NULL ? sl_slice_cstr(q + 1) : (struct sl_slice){"", 0},
        .headers = h,
        .header_count = SL_ARRAY_LEN(h),
        .payload = sl_slice_cstr(payload),
        .authority = sl_slice_cstr(authority),
    };
    return sigv4_sign(&req, ep->access_key_id, ep->secret, ep->region, "sqs", amz_date, out) ==
           SL_OK;
}

bool ctl_admin(const struct ctl_endpoint *ep, const char *method, const char *path, json_t *body,
               struct ctl_reply *out)
{
    memset(out, 0, sizeof *out);
    char *payload = body != NULL ? json_dumps(body, JSON_COMPACT) : sl_xstrdup("");
    json_decref(body);
    char authority[256], amz_date[17] = "";
    struct sl_buf auth;
    sl_buf_init(&auth);
    if (!authority_of(ep->admin_url, authority, sizeof authority)) {
        free(payload);
        fail_transport(out, "bad admin endpoint URL %s", ep->admin_url);
        return false;
    }
    if (!admin_authorization(ep, method, authority, path, payload, amz_date, &auth)) {
        sl_buf_free(&auth);
        free(payload);
        fail_transport(out, "cannot sign the request (%s)", "check the keys and region");
        return false;
    }
    size_t ul = strlen(ep->admin_url);
    char *url = sl_xmalloc(ul + strlen(path) + 1);
    snprintf(url, ul + strlen(path) + 1, "%.*s%s",
             (int)(ul > 0 && ep->admin_url[ul - 1] == '/' ? ul - 1 : ul), ep->admin_url, path);
    struct sink sink = {0};
    bool reached = signed_exchange(ep, method, url, "application/json", authority, amz_date, NULL,
                                   &auth, payload, &sink, out);
    free(url);
    sl_buf_free(&auth);
    free(payload);
    if (!reached) {
        return false;
    }
    if (out->status >= 200 && out->status < 300) {
        return true;
    }
    const char *code = json_string_value(json_object_get(out->json, "error"));
    if (code != NULL) {
        snprintf(out->code, sizeof out->code, "%s", code);
    } else {
        snprintf(out->code, sizeof out->code, "HTTP%ld", out->status);
    }
    out->message = json_string_value(json_object_get(out->json, "message"));
    if (out->message == NULL) {
        out->message = out->body;
    }
    return false;
}

void ctl_reply_free(struct ctl_reply *r)
{
    json_decref(r->json);
    free(r->body);
    memset(r, 0, sizeof *r);
}
