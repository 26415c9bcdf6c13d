/*
 * test_sigv4_presigned.c -- query-string authentication (presigned URLs):
 * two requests presigned by botocore's SigV4QueryAuth (botocore 1.43,
 * fixed clock 2026-11-25T12:00:00Z, expires 300 s, the example credentials
 * of the AWS SigV4 documentation), checked in as fixed data, and every
 * refusal. Time is injected (now_s).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "sigv4.h"

#define SECRET "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
#define SIGNED_AT 1795608000 /* 2026-11-25T12:00:00Z */

#define AUTH_QUERY(sig)                                                                            \
    "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20261125%2Fus-east-1%2Fsqs"   \
    "%2Faws4_request&X-Amz-Date=20261125T120000Z&X-Amz-Expires=300&X-Amz-SignedHeaders=host"       \
    "&X-Amz-Signature=" sig

/* GET http://localhost:9324/acme/orders?... */
#define GET_QUERY                                                                                  \
    "Action=GetQueueAttributes&Version=2012-11-05&AttributeName.1=All&" AUTH_QUERY(                \
        "44b7b17bba07a5fdae45205a8d04ba964d2313d31f77d1b7a115a44502f25a5b")
/* POST http://localhost:9324/?... with an empty body: botocore moves a
 * query-protocol form into the query string when it presigns. */
#define POST_QUERY                                                                                 \
    "Action=ListQueues&Version=2012-11-05&QueueNamePrefix=a%20b%2Fc&" AUTH_QUERY(                  \
        "c0098fee658fffd4e2c375fc14d42e77d107a32fb96fb0ad5628acbf5820144c")

static int verify(const char *method, const char *path, const char *query, const char *body,
                  int64_t now, enum sigv4_failure *failure)
{
    struct sigv4_request req = {
        .method = sl_slice_cstr(method),
        .path = sl_slice_cstr(path),
        .query = sl_slice_cstr(query),
        .authority = SL_SLICE_LIT("localhost:9324"),
        .payload = sl_slice_cstr(body),
    };
    const char *why = NULL;
    int rc = sigv4_verify_presigned(&req, SECRET, "us-east-1", "sqs", now, NULL, failure, &why);
    if (rc != SL_OK && why != NULL) {
        print_message("refused: %s\n", why);
    }
    return rc;
}

static void test_botocore_vectors(void **state)
{
    (void)state;
    enum sigv4_failure f;
    assert_int_equal(verify("GET", "/acme/orders", GET_QUERY, "", SIGNED_AT, &f), SL_OK);
    assert_int_equal(verify("POST", "/", POST_QUERY, "", SIGNED_AT + 299, &f), SL_OK);
    /* anything changed breaks the signature */
    assert_int_equal(verify("GET", "/acme/other", GET_QUERY, "", SIGNED_AT, &f), SL_EINVAL);
    assert_int_equal(f, SIGV4_FAIL_MISMATCH);
    assert_int_equal(verify("POST", "/", GET_QUERY, "", SIGNED_AT, &f), SL_EINVAL);
    assert_int_equal(f, SIGV4_FAIL_MISMATCH);
    assert_int_equal(verify("GET", "/acme/orders",
                            "Action=PurgeQueue&Version=2012-11-05&AttributeName.1=All&" AUTH_QUERY(
                                "44b7b17bba07a5fdae45205a8d04ba964d2313d31f77d1b7a115a44502f25a5b"),
                            "", SIGNED_AT, &f),
                     SL_EINVAL);
    assert_int_equal(f, SIGV4_FAIL_MISMATCH);
}

static void test_expiry(void **state)
{
    (void)state;
    enum sigv4_failure f;
    assert_int_equal(verify("GET", "/acme/orders", GET_QUERY, "", SIGNED_AT + 300, &f), SL_OK);
    assert_int_equal(verify("GET", "/acme/orders", GET_QUERY, "", SIGNED_AT + 301, &f), SL_EINVAL);
    assert_int_equal(f, SIGV4_FAIL_EXPIRED);
    /* signed more than the skew ahead of the server's clock */
    assert_int_equal(verify("GET", "/acme/orders", GET_QUERY, "", SIGNED_AT - 15 * 60, &f), SL_OK);
    assert_int_equal(verify("GET", "/acme/orders", GET_QUERY, "", SIGNED_AT - 15 * 60 - 1, &f),
                     SL_EINVAL);
    assert_int_equal(f, SIGV4_FAIL_EXPIRED);
}

static void test_refusals(void **state)
{
    (void)state;
    enum sigv4_failure f;
    /* the (empty) body is signed: another body breaks the signature */
    assert_int_equal(verify("POST", "/", POST_QUERY, "Action=PurgeQueue", SIGNED_AT, &f),
                     SL_EINVAL);
    assert_int_equal(f, SIGV4_FAIL_MISMATCH);
    /* UNSIGNED-PAYLOAD cannot cover a body */
    assert_int_equal(verify("POST", "/", POST_QUERY "&X-Amz-Content-Sha256=UNSIGNED-PAYLOAD",
                            "Action=PurgeQueue", SIGNED_AT, &f),
                     SL_EINVAL);
    assert_int_equal(f, SIGV4_FAIL_MISMATCH);
    /* a parameter missing, or malformed */
    assert_int_equal(verify("GET", "/", "X-Amz-Algorithm=AWS4-HMAC-SHA256", "", SIGNED_AT, &f),
                     SL_EINVAL);
    assert_int_equal(f, SIGV4_FAIL_INCOMPLETE);
    assert_int_equal(
        verify("GET", "/",
               "X-Amz-Algorithm=AWS4-HMAC-SHA1&X-Amz-Credential=AKIDEXAMPLE%2F20261125%2Fus-east-1"
               "%2Fsqs%2Faws4_request&X-Amz-Date=20261125T120000Z&X-Amz-Expires=300"
               "&X-Amz-SignedHeaders=host&X-Amz-Signature=00",
               "", SIGNED_AT, &f),
        SL_EINVAL);
    assert_int_equal(f, SIGV4_FAIL_MALFORMED);
    assert_int_equal(
        verify(
            "GET", "/",
            "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20261125%2Fus-east-1"
            "%2Fsqs%2Faws4_request&X-Amz-Date=20261125T120000Z&X-Amz-Expires=604801"
            "&X-Amz-SignedHeaders=host&X-Amz-Signature="
            "44b7b17bba07a5fdae45205a8d04ba964d2313d31f77d1b7a115a44502f25a5b",
            "", SIGNED_AT, &f),
        SL_EINVAL);
    assert_int_equal(f, SIGV4_FAIL_MALFORMED);
    /* host must be signed */
    assert_int_equal(
        verify(
            "GET", "/",
            "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20261125%2Fus-east-1"
            "%2Fsqs%2Faws4_request&X-Amz-Date=20261125T120000Z&X-Amz-Expires=300"
            "&X-Amz-SignedHeaders=x-amz-date&X-Amz-Signature="
            "44b7b17bba07a5fdae45205a8d04ba964d2313d31f77d1b7a115a44502f25a5b",
            "", SIGNED_AT, &f),
        SL_EINVAL);
    assert_int_equal(f, SIGV4_FAIL_INCOMPLETE);
    /* another region's scope */
    assert_int_equal(
        verify(
            "GET", "/",
            "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20261125%2Feu-west-1"
            "%2Fsqs%2Faws4_request&X-Amz-Date=20261125T120000Z&X-Amz-Expires=300"
            "&X-Amz-SignedHeaders=host&X-Amz-Signature="
            "44b7b17bba07a5fdae45205a8d04ba964d2313d31f77d1b7a115a44502f25a5b",
            "", SIGNED_AT, &f),
        SL_EINVAL);
    assert_int_equal(f, SIGV4_FAIL_SCOPE);
    assert_int_equal(verify("GET", "/", GET_QUERY "&X-Amz-Security-Token=t", "", SIGNED_AT, &f),
                     SL_EINVAL);
    assert_int_equal(f, SIGV4_FAIL_TOKEN);
}

static int find_key(void *arg, struct sl_slice access_key_id, const char **secret)
{
    (void)arg;
    if (!sl_slice_eq_cstr(access_key_id, "AKIDEXAMPLE")) {
        return SL_ENOTFOUND;
    }
    *secret = SECRET;
    return SL_OK;
}

static void test_authenticate_dispatch(void **state)
{
    (void)state;
    assert_true(sigv4_query_is_presigned(SL_SLICE_LIT(GET_QUERY)));
    assert_false(sigv4_query_is_presigned(SL_SLICE_LIT("Action=ListQueues&Version=2012-11-05")));
    assert_false(sigv4_query_is_presigned((struct sl_slice){NULL, 0}));
    char buf[64];
    struct sl_slice key;
    enum sigv4_failure f;
    assert_int_equal(
        sigv4_presigned_access_key(SL_SLICE_LIT(GET_QUERY), buf, sizeof buf, &key, &f, NULL),
        SL_OK);
    assert_true(sl_slice_eq_cstr(key, "AKIDEXAMPLE"));
    const struct sigv4_verifier v = {
        .region = "us-east-1",
        .service = "sqs",
        .now_s = SIGNED_AT + 10,
        .find_secret = find_key,
    };
    struct sigv4_request req = {
        .method = SL_SLICE_LIT("GET"),
        .path = SL_SLICE_LIT("/acme/orders"),
        .query = SL_SLICE_LIT(GET_QUERY),
        .authority = SL_SLICE_LIT("localhost:9324"),
    };
    /* no Authorization header: the presigned query authenticates */
    assert_int_equal(sigv4_authenticate(&req, &v, &f, NULL), SL_OK);
    req.query = SL_SLICE_LIT(
        "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=NOPE%2F20261125%2Fus-east-1%2Fsqs"
        "%2Faws4_request&X-Amz-Date=20261125T120000Z&X-Amz-Expires=300&X-Amz-SignedHeaders=host"
        "&X-Amz-Signature=44b7b17bba07a5fdae45205a8d04ba964d2313d31f77d1b7a115a44502f25a5b");
    assert_int_equal(sigv4_authenticate(&req, &v, &f, NULL), SL_ENOTFOUND);
    assert_int_equal(f, SIGV4_FAIL_UNKNOWN_KEY);
    req.query = SL_SLICE_LIT("Action=ListQueues");
    assert_int_equal(sigv4_authenticate(&req, &v, &f, NULL), SL_EINVAL);
    assert_int_equal(f, SIGV4_FAIL_MISSING);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_botocore_vectors),
        cmocka_unit_test(test_expiry),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_authenticate_dispatch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
