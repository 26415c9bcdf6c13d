/*
 * test_auth.c -- authentication and routing of the SQS API against the real
 * sluiced, with libcurl's own SigV4 signer (CURLOPT_AWS_SIGV4) as the
 * independent client: a correctly signed call passes authentication (and
 * gets a real answer),
 * and every bad request gets the SQS error AWS would send, after which the
 * server is still healthy.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>

#include "it_harness.h"
#include "sigv4.h"

#define SQS_JSON "application/x-amz-json-1.0"

/* A signed POST / with the given target and content type, signed by the
 * harness with libcurl's own SigV4 signer (CURLOPT_AWS_SIGV4), an
 * implementation independent of ours. */
static int curl_sqs(const struct it_server *s, const char *target, const char *content_type,
                    const char *body, const char *key, const char *secret, struct it_response *out)
{
    char target_hdr[160];
    char ct_hdr[160];
    snprintf(target_hdr, sizeof(target_hdr), "x-amz-target: %s", target);
    snprintf(ct_hdr, sizeof(ct_hdr), "content-type: %s", content_type);
    const char *headers[] = {target_hdr, ct_hdr, NULL};
    struct it_request req = {
        .method = "POST",
        .path = "/",
        .headers = headers,
        .body = body,
        .body_len = strlen(body),
        .access_key = key,
        .secret = secret,
    };
    return it_request(s, &req, out);
}

static int signed_sqs(const struct it_server *s, const char *action, const char *body,
                      const char *key, const char *secret, struct it_response *out)
{
    char target[128];
    snprintf(target, sizeof(target), "AmazonSQS.%s", action);
    return curl_sqs(s, target, SQS_JSON, body, key, secret, out);
}

/* Checks status, the x-amzn-query-error code and the __type of a reply. */
static void expect_error(const struct it_response *r, long status, const char *query_code,
                         const char *type)
{
    char qe[256] = "", ct[128] = "";
    IT_CHECK(r->status == status);
    IT_CHECK(it_response_header(r, "x-amzn-query-error", qe, sizeof(qe)));
    char want[256];
    snprintf(want, sizeof(want), "%s;Sender", query_code);
    IT_CHECK(strcmp(qe, want) == 0);
    IT_CHECK(it_response_header(r, "content-type", ct, sizeof(ct)) && strcmp(ct, SQS_JSON) == 0);
    char want_type[256];
    snprintf(want_type, sizeof(want_type), "\"__type\":\"%s\"", type);
    IT_CHECK(strstr(r->body, want_type) != NULL);
    IT_CHECK(it_response_header(r, "x-amzn-requestid", qe, sizeof(qe)) && strlen(qe) == 36);
    if (r->status != status || strstr(r->body, want_type) == NULL) {
        fprintf(stderr, "  got %ld %s\n", r->status, r->body);
    }
}

static void signed_call_passes_auth(const struct it_server *s)
{
    struct it_response r;
    IT_CHECK(signed_sqs(s, "ListQueues", "{}", IT_KEY, IT_SECRET, &r) == 0);
    /* Past authentication, a tenant with no queues gets an empty list. */
    IT_CHECK(r.status == 200);
    IT_CHECK(r.body != NULL && strstr(r.body, "__type") == NULL);
    it_response_free(&r);
    /* decoding runs after authentication: its errors are real */
    IT_CHECK(signed_sqs(s, "ReceiveMessage",
                        "{\"QueueUrl\":\"http://127.0.0.1/acme/q\",\"MaxNumberOfMessages\":11}",
                        IT_KEY, IT_SECRET, &r) == 0);
    expect_error(&r, 400, "InvalidParameterValue",
                 "com.amazon.coral.service#InvalidParameterValueException");
    IT_CHECK(strstr(r.body, "Value 11 for parameter MaxNumberOfMessages is invalid.") != NULL);
    it_response_free(&r);
}

static void bad_credentials(const struct it_server *s)
{
    struct it_response r;
    IT_CHECK(signed_sqs(s, "ListQueues", "{}", IT_KEY, "wrong-secret", &r) == 0);
    expect_error(&r, 403, "SignatureDoesNotMatch",
                 "com.amazon.coral.service#SignatureDoesNotMatch");
    it_response_free(&r);
    IT_CHECK(it_healthz(s));

    IT_CHECK(signed_sqs(s, "ListQueues", "{}", "AKIDNOBODY", IT_SECRET, &r) == 0);
    expect_error(&r, 403, "InvalidClientTokenId", "com.amazon.coral.service#InvalidClientTokenId");
    it_response_free(&r);
    IT_CHECK(it_healthz(s));

    IT_CHECK(it_sqs(s, "ListQueues", "{}", NULL, NULL, &r) == 0);
    expect_error(&r, 403, "MissingAuthenticationToken",
                 "com.amazon.coral.service#MissingAuthenticationToken");
    it_response_free(&r);
    IT_CHECK(it_healthz(s));

    const char *garbled[] = {"x-amz-target: AmazonSQS.ListQueues", "content-type: " SQS_JSON,
                             "authorization: AWS4-HMAC-SHA256 nonsense", NULL};
    struct it_request req = {
        .method = "POST", .path = "/", .headers = garbled, .body = "{}", .body_len = 2};
    IT_CHECK(it_request(s, &req, &r) == 0);
    expect_error(&r, 400, "IncompleteSignature", "com.amazon.coral.service#IncompleteSignature");
    it_response_free(&r);
    IT_CHECK(it_healthz(s));
}

/* Sends ListQueues ("{}") signed by sigv4_sign_sqs_request at signed_at
 * over content-type, host, the date and, when sign_target, X-Amz-Target;
 * the X-Amz-Target header is sent either way. Returns the response (free
 * it); *authz_out gets the Authorization value. */
static struct it_response send_signed_list_queues(const struct it_server *s, int64_t signed_at,
                                                  bool sign_target, char *authz_out, size_t cap)
{
    char host[64], amz_date[17];
    snprintf(host, sizeof(host), "127.0.0.1:%u", (unsigned)s->port);
    const char *body = "{}";
    const struct sigv4_header extra[] = {
        {SL_SLICE_LIT("content-type"), SL_SLICE_LIT(SQS_JSON)},
        {SL_SLICE_LIT("x-amz-target"), SL_SLICE_LIT("AmazonSQS.ListQueues")},
    };
    const struct sigv4_credentials cred = {IT_KEY, IT_SECRET, IT_REGION, "sqs"};
    struct sl_buf auth;
    sl_buf_init(&auth);
    IT_REQUIRE(sigv4_sign_sqs_request(&cred, host, "/", extra, sign_target ? 2 : 1,
                                      sl_slice_cstr(body), signed_at, amz_date, &auth) == SL_OK);
    snprintf(authz_out, cap, "%s", auth.p);
    char authz[512], date_hdr[64];
    snprintf(authz, sizeof(authz), "authorization: %s", auth.p);
    snprintf(date_hdr, sizeof(date_hdr), "x-amz-date: %s", amz_date);
    const char *ctype = "content-type: " SQS_JSON;
    const char *headers[] = {ctype, "x-amz-target: AmazonSQS.ListQueues", date_hdr, authz, NULL};
    struct it_request req = {
        .method = "POST", .path = "/", .headers = headers, .body = body, .body_len = 2};
    struct it_response r;
    IT_CHECK(it_request(s, &req, &r) == 0);
    sl_buf_free(&auth);
    return r;
}

/* A request signed by sigv4_sign_sqs_request as of 20 minutes ago. */
static void expired_request(const struct it_server *s)
{
    char authz[512];
    struct it_response r = send_signed_list_queues(s, (int64_t)time(NULL) - (int64_t)20 * 60, true,
                                                   authz, sizeof(authz));
    expect_error(&r, 400, "RequestExpired", "com.amazon.coral.service#RequestExpired");
    it_response_free(&r);
    IT_CHECK(it_healthz(s));
}

/* A signature over host, date and content type only, sent with an
 * X-Amz-Target the client chose afterwards: the action must be signed, or
 * one captured signature would run whatever action its sender names. */
static void unsigned_target_is_refused(const struct it_server *s)
{
    char authz[512];
    struct it_response r =
        send_signed_list_queues(s, (int64_t)time(NULL), false, authz, sizeof(authz));
    IT_CHECK(strstr(authz, "SignedHeaders=content-type;host;x-amz-date,") != NULL);
    expect_error(&r, 400, "IncompleteSignature", "com.amazon.coral.service#IncompleteSignature");
    IT_CHECK(strstr(r.body, "X-Amz-Target") != NULL);
    it_response_free(&r);
    IT_CHECK(it_healthz(s));
}

/* Nobody pays for an unauthenticated request, so a flood of them may not
 * write a log line each: at most 20 a second get through (and a count of
 * the rest). */
static void anonymous_lines_are_rationed(const struct it_server *s)
{
    int before = it_log_count(s, "tenant=- ");
    time_t t0 = time(NULL);
    for (int i = 0; i < 300; i++) {
        struct it_response r;
        IT_CHECK(it_sqs(s, "ListQueues", "{}", NULL, NULL, &r) == 0);
        IT_CHECK(r.status == 403);
        it_response_free(&r);
    }
    long seconds = (long)(time(NULL) - t0) + 2; /* the windows the flood could touch */
    int lines = it_log_count(s, "tenant=- ") - before;
    fprintf(stderr, "300 unauthenticated requests in about %ld s: %d log lines\n", seconds - 2,
            lines);
    IT_CHECK(lines > 0 && lines <= 20 * seconds);
    IT_CHECK(lines < 300);
    /* The first line of a later window says how many were left out. */
    struct timespec pause = {1, 100L * 1000 * 1000};
    nanosleep(&pause, NULL);
    struct it_response r;
    IT_CHECK(it_sqs(s, "ListQueues", "{}", NULL, NULL, &r) == 0);
    it_response_free(&r);
    IT_CHECK(
        it_wait_log(s, "similar lines suppressed", 5000)); /* lines are flushed per loop turn */
}

static void routing_and_body_errors(const struct it_server *s)
{
    struct it_response r;
    IT_CHECK(signed_sqs(s, "FlyToTheMoon", "{}", IT_KEY, IT_SECRET, &r) == 0);
    expect_error(&r, 400, "InvalidAction", "com.amazon.coral.service#UnknownOperationException");
    it_response_free(&r);
    IT_CHECK(it_healthz(s));

    IT_CHECK(signed_sqs(s, "SendMessage", "{\"QueueUrl\": ", IT_KEY, IT_SECRET, &r) == 0);
    expect_error(&r, 400, "SerializationException",
                 "com.amazon.coral.service#SerializationException");
    it_response_free(&r);
    IT_CHECK(it_healthz(s));

    IT_CHECK(signed_sqs(s, "DeleteQueue", "{}", IT_KEY, IT_SECRET, &r) == 0);
    expect_error(&r, 400, "MissingParameter",
                 "com.amazon.coral.service#MissingRequiredParameterException");
    it_response_free(&r);

    IT_CHECK(curl_sqs(s, "AmazonSQS.ListQueues", "application/x-www-form-urlencoded",
                      "Action=ListQueues", IT_KEY, IT_SECRET, &r) == 0);
    expect_error(&r, 400, "InvalidParameterValue",
                 "com.amazon.coral.service#InvalidParameterValueException");
    it_response_free(&r);

    /* authentication comes before routing: an unsigned GET / learns nothing */
    struct it_request get = {.method = "GET", .path = "/"};
    IT_CHECK(it_request(s, &get, &r) == 0);
    expect_error(&r, 403, "MissingAuthenticationToken",
                 "com.amazon.coral.service#MissingAuthenticationToken");
    it_response_free(&r);
    IT_CHECK(it_healthz(s));
}

int main(void)
{
    struct it_server srv;
    struct it_options opt = {.tls = false};
    IT_REQUIRE(it_server_start(&srv, &opt) == 0);
    signed_call_passes_auth(&srv);
    bad_credentials(&srv);
    expired_request(&srv);
    unsigned_target_is_refused(&srv);
    anonymous_lines_are_rationed(&srv);
    routing_and_body_errors(&srv);
    IT_CHECK(it_log_contains(&srv, "action=ListQueues status=400"));
    IT_CHECK(it_server_stop(&srv) == 0);
    it_server_cleanup(&srv);
    return it_summary();
}
