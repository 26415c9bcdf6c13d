/*
 * test_sign.c -- the load generator signs exactly as AWS documents
 * (post-vanilla of the AWS SigV4 test suite) and as curl signs an SQS call
 * over HTTP/2 (tests/data/sigv4/curl_vectors.json), and what it signs is
 * accepted by the gateway's verifier.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lt_int.h"

static void aws_post_vanilla(void **state)
{
    struct lt_credentials cred = {"AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
                                  "us-east-1", "service"};
    char amz_date[17];
    struct sl_buf auth;
    sl_buf_init(&auth);
    assert_int_equal(lt_sign(&cred, "/", "example.amazonaws.com", NULL, 0, (struct sl_slice){"", 0},
                             1440938160, amz_date, &auth),
                     SL_OK);
    assert_string_equal(amz_date, "20150830T123600Z");
    assert_string_equal(
        auth.p, "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/"
                "aws4_request, SignedHeaders=host;x-amz-date, "
                "Signature=5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b");
    sl_buf_free(&auth);
}

static json_t *load_vector(const char *name)
{
    const char *dir = getenv("SLUICE_TEST_DATA");
    char path[1024];
    snprintf(path, sizeof(path), "%s/sigv4/curl_vectors.json", dir ? dir : "tests/data");
    json_t *root = json_load_file(path, 0, NULL);
    assert_non_null(root);
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(root, "vectors"), i, v)
    {
        if (strcmp(json_string_value(json_object_get(v, "name")), name) == 0) {
            json_incref(v);
            json_decref(root);
            return v;
        }
    }
    json_decref(root);
    fail_msg("vector %s not found", name);
    return NULL;
}

static const char *header_of(json_t *v, const char *name)
{
    size_t i;
    json_t *h;
    json_array_foreach(json_object_get(v, "headers"), i, h)
    {
        if (strcasecmp(json_string_value(json_array_get(h, 0)), name) == 0) {
            return json_string_value(json_array_get(h, 1));
        }
    }
    return NULL;
}

static void curl_sqs_list_queues(void **state)
{
    /* curl signs content-type;host;x-amz-date;x-amz-target for an SQS JSON
     * call, which is exactly the set sluice-load sends. */
    json_t *v = load_vector("curl-sqs-list-queues");
    struct lt_credentials cred = {json_string_value(json_object_get(v, "access_key_id")),
                                  json_string_value(json_object_get(v, "secret")),
                                  json_string_value(json_object_get(v, "region")),
                                  json_string_value(json_object_get(v, "service"))};
    struct sigv4_header extra[] = {
        {SL_SLICE_LIT("content-type"), sl_slice_cstr(header_of(v, "Content-Type"))},
        {SL_SLICE_LIT("x-amz-target"), sl_slice_cstr(header_of(v, "X-Amz-Target"))},
    };
    char amz_date[17];
    struct sl_buf auth;
    sl_buf_init(&auth);
    assert_int_equal(lt_sign(&cred, "/", header_of(v, "Host"), extra, 2,
                             sl_slice_cstr(json_string_value(json_object_get(v, "body"))),
                             json_integer_value(json_object_get(v, "now")), amz_date, &auth),
                     SL_OK);
    assert_string_equal(amz_date, json_string_value(json_object_get(v, "amz_date")));
    assert_string_equal(auth.p, json_string_value(json_object_get(v, "authorization")));
    sl_buf_free(&auth);
    json_decref(v);
}

static void gateway_verifier_accepts_it(void **state)
{
    /* Signed as sluice-load sends it over h2: host signed, carried only as
     * :authority. The gateway's verifier must accept it, and reject it
     * once one byte of the body changes. */
    struct lt_credentials cred = {"default", "default", "us-east-1", "sqs"};
    struct sigv4_header extra[] = {
        {SL_SLICE_LIT("content-type"), SL_SLICE_LIT("application/x-amz-json-1.0")},
        {SL_SLICE_LIT("x-amz-target"), SL_SLICE_LIT("AmazonSQS.ListQueues")},
    };
    const char *body = "{\"QueueNamePrefix\":\"a\"}";
    int64_t now = 1795245401;
    char amz_date[17];
    struct sl_buf auth;
    sl_buf_init(&auth);
    assert_int_equal(
        lt_sign(&cred, "/", "127.0.0.1:9324", extra, 2, sl_slice_cstr(body), now, amz_date, &auth),
        SL_OK);
    struct sigv4_header wire[] = {
        extra[0],
        extra[1],
        {SL_SLICE_LIT("x-amz-date"), {amz_date, 16}},
        {SL_SLICE_LIT("authorization"), {auth.p, auth.n}},
    };
    struct sigv4_request req = {
        .method = SL_SLICE_LIT("POST"),
        .path = SL_SLICE_LIT("/"),
        .query = {"", 0},
        .headers = wire,
        .header_count = 4,
        .payload = sl_slice_cstr(body),
        .authority = SL_SLICE_LIT("127.0.0.1:9324"),
    };
    struct sigv4_auth parsed;
    const char *why = NULL;
    enum sigv4_failure failure;
    assert_int_equal(
        sigv4_parse_authorization((struct sl_slice){auth.p, auth.n}, &parsed, &failure, &why),
        SL_OK);
    assert_int_equal(
        sigv4_verify(&req, &parsed, "default", "us-east-1", "sqs", now + 60, NULL, &failure, &why),
        SL_OK);
    assert_int_equal(failure, SIGV4_FAIL_NONE);
    req.payload = sl_slice_cstr("{\"QueueNamePrefix\":\"b\"}");
    assert_int_equal(
        sigv4_verify(&req, &parsed, "default", "us-east-1", "sqs", now + 60, NULL, &failure, &why),
        SL_EINVAL);
    assert_int_equal(failure, SIGV4_FAIL_MISMATCH);
    sl_buf_free(&auth);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(aws_post_vanilla),
        cmocka_unit_test(curl_sqs_list_queues),
        cmocka_unit_test(gateway_verifier_accepts_it),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
