/*
 * test_sigv4.c -- AWS Signature Version 4: the verifier and the signer
 * against AWS's published examples and against vectors produced by two
 * independent signers (tests/data/sigv4: the AWS SDK for JavaScript v3's
 * @smithy/signature-v4 and curl's --aws-sigv4), then every refusal the
 * verifier makes, and the signing-key cache.
 *
 * Time is injected (now_s); nothing reads the wall clock.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sigv4.h"
#include "sigv4_canon.h"
#include "sigv4_date.h"
#include "sigv4_key.h"
#include "sl.h"

#define MAX_TEST_HEADERS 32

/* A request built in a test: owns nothing, points at literals or JSON. */
struct treq {
    struct sigv4_header headers[MAX_TEST_HEADERS];
    struct sigv4_request req;
};

static void treq_init(struct treq *t, const char *method, const char *path, const char *query,
                      const char *body)
{
    memset(t, 0, sizeof *t);
    t->req.method = sl_slice_cstr(method);
    t->req.path = sl_slice_cstr(path);
    t->req.query = sl_slice_cstr(query);
    t->req.payload = sl_slice_cstr(body);
    t->req.headers = t->headers;
}

static void treq_add(struct treq *t, const char *name, const char *value)
{
    assert_true(t->req.header_count < MAX_TEST_HEADERS);
    t->headers[t->req.header_count++] =
        (struct sigv4_header){sl_slice_cstr(name), sl_slice_cstr(value)};
}

static void treq_remove(struct treq *t, const char *name)
{
    size_t w = 0;
    for (size_t i = 0; i < t->req.header_count; i++) {
        if (!sl_slice_eq_cstr(t->headers[i].name, name)) {
            t->headers[w++] = t->headers[i];
        }
    }
    t->req.header_count = w;
}

static void treq_set(struct treq *t, const char *name, const char *value)
{
    for (size_t i = 0; i < t->req.header_count; i++) {
        if (sl_slice_eq_cstr(t->headers[i].name, name)) {
            t->headers[i].value = sl_slice_cstr(value);
            return;
        }
    }
    fail_msg("no header %s", name);
}

static void hex_of(const uint8_t *p, size_t n, char *out)
{
    sl_hex_encode(p, n, out);
}

static void sha256_hex_of(const char *s, size_t n, char out[65])
{
    uint8_t d[32];
    SHA256((const unsigned char *)s, n, d);
    hex_of(d, 32, out);
}

/* sigv4_verify's verdict as one value, after checking that it returns
 * SL_OK exactly when it reports no failure, and SL_EINVAL otherwise. */
static enum sigv4_failure check_verify(const struct sigv4_request *req,
                                       const struct sigv4_auth *auth, const char *secret,
                                       const char *region, const char *service, int64_t now,
                                       struct sigv4_key_cache *c, const char **why)
{
    enum sigv4_failure f = SIGV4_FAIL_TOKEN; /* must be overwritten */
    int rc = sigv4_verify(req, auth, secret, region, service, now, c, &f, why);
    assert_int_equal(rc == SL_OK, f == SIGV4_FAIL_NONE);
    assert_true(rc == SL_OK || rc == SL_EINVAL);
    return f;
}

/* The same for sigv4_parse_authorization. */
static enum sigv4_failure check_parse(struct sl_slice value, struct sigv4_auth *auth,
                                      const char **why)
{
    enum sigv4_failure f = SIGV4_FAIL_TOKEN; /* must be overwritten */
    int rc = sigv4_parse_authorization(value, auth, &f, why);
    assert_int_equal(rc == SL_OK, f == SIGV4_FAIL_NONE);
    assert_true(rc == SL_OK || rc == SL_EINVAL);
    return f;
}

static int64_t parse_date(const char *s)
{
    int64_t t;
    assert_true(sigv4__parse_amz_date(sl_slice_cstr(s), &t));
    return t;
}

static enum sigv4_failure verify_with(const struct sigv4_request *req, const char *authz,
                                      const char *secret, const char *region, const char *service,
                                      int64_t now, const char **why)
{
    struct sigv4_auth auth;
    enum sigv4_failure st = check_parse(sl_slice_cstr(authz), &auth, why);
    if (st != SIGV4_FAIL_NONE) {
        return st;
    }
    return check_verify(req, &auth, secret, region, service, now, NULL, why);
}

/* ---- AWS's documented worked example (IAM ListUsers) ------------------- */

static const char IAM_SECRET[] = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";

static void iam_request(struct treq *t)
{
    treq_init(t, "GET", "/", "Action=ListUsers&Version=2010-05-08", "");
    treq_add(t, "host", "iam.amazonaws.com");
    treq_add(t, "content-type", "application/x-www-form-urlencoded; charset=utf-8");
    treq_add(t, "x-amz-date", "20150830T123600Z");
}

static void test_iam_example_steps(void **state)
{
    (void)state;
    struct treq t;
    iam_request(&t);
    char canon[SIGV4_MAX_CANONICAL];
    size_t len;
    char empty_hash[65];
    sha256_hex_of("", 0, empty_hash);
    assert_int_equal(sigv4__canonical_request(&t.req, SL_SLICE_LIT("content-type;host;x-amz-date"),
                                              sl_slice_cstr(empty_hash), canon, sizeof canon, &len,
                                              NULL),
                     SL_OK);
    assert_string_equal(canon, "GET\n/\nAction=ListUsers&Version=2010-05-08\n"
                               "content-type:application/x-www-form-urlencoded; charset=utf-8\n"
                               "host:iam.amazonaws.com\nx-amz-date:20150830T123600Z\n\n"
                               "content-type;host;x-amz-date\n"
                               "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    char hash[65];
    sha256_hex_of(canon, len, hash);
    assert_string_equal(hash, "f536975d06c0309214f805bb90ccff089219ecd68b2577efef23edd43b7e1a59");

    char sts[512];
    size_t sts_len =
        sigv4__string_to_sign(NULL, SL_SLICE_LIT("20150830T123600Z"), SL_SLICE_LIT("us-east-1"),
                              SL_SLICE_LIT("iam"), canon, len, sts, sizeof sts);
    assert_int_not_equal(sts_len, 0);
    assert_string_equal(sts, "AWS4-HMAC-SHA256\n20150830T123600Z\n20150830/us-east-1/iam/"
                             "aws4_request\n"
                             "f536975d06c0309214f805bb90ccff089219ecd68b2577efef23edd43b7e1a59");

    uint8_t key[32];
    char key_hex[65];
    sigv4__derive_key(sl_slice_cstr(IAM_SECRET), SL_SLICE_LIT("20150830"),
                      SL_SLICE_LIT("us-east-1"), SL_SLICE_LIT("iam"), key);
    hex_of(key, 32, key_hex);
    assert_string_equal(key_hex,
                        "c4afb1cc5771d871763a393e44b703571b55cc28424d1a5e86da6ed3c154a4b9");

    /* AWS's "Examples of how to derive a signing key" (20120215). */
    sigv4__derive_key(sl_slice_cstr(IAM_SECRET), SL_SLICE_LIT("20120215"),
                      SL_SLICE_LIT("us-east-1"), SL_SLICE_LIT("iam"), key);
    hex_of(key, 32, key_hex);
    assert_string_equal(key_hex,
                        "f4780e2d9f65fa895f9c67b32ce1baf0b0d8a43505a000a1a9e090d414db404d");
}

static const char IAM_AUTH[] =
    "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/iam/aws4_request, "
    "SignedHeaders=content-type;host;x-amz-date, "
    "Signature=5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7";

static void test_iam_example_verify_and_sign(void **state)
{
    (void)state;
    struct treq t;
    iam_request(&t);
    int64_t now = parse_date("20150830T123600Z");
    const char *why = NULL;
    assert_int_equal(verify_with(&t.req, IAM_AUTH, IAM_SECRET, "us-east-1", "iam", now, &why),
                     SIGV4_FAIL_NONE);

    struct sl_buf out;
    sl_buf_init(&out);
    assert_int_equal(
        sigv4_sign(&t.req, "AKIDEXAMPLE", IAM_SECRET, "us-east-1", "iam", "20150830T123600Z", &out),
        SL_OK);
    assert_string_equal(out.p, IAM_AUTH);
    sl_buf_free(&out);
}

/* AWS SigV4 test suite, get-header-key-duplicate: one header three times,
 * joined with ',' in arrival order (the JS signer cannot express this). */
static void test_suite_duplicate_header(void **state)
{
    (void)state;
    struct treq t;
    treq_init(&t, "GET", "/", "", "");
    treq_add(&t, "Host", "example.amazonaws.com");
    treq_add(&t, "My-Header1", "value2");
    treq_add(&t, "My-Header1", "value2");
    treq_add(&t, "My-Header1", "value1");
    treq_add(&t, "X-Amz-Date", "20150830T123600Z");
    const char *authz =
        "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, "
        "SignedHeaders=host;my-header1;x-amz-date, "
        "Signature=c9d5ea9f3f72853aea855b47ea873832890dbdd183b4468f858259531a5138ea";
    assert_int_equal(verify_with(&t.req, authz, IAM_SECRET, "us-east-1", "service",
                                 parse_date("20150830T123600Z"), NULL),
                     SIGV4_FAIL_NONE);
    char canon[SIGV4_MAX_CANONICAL];
    size_t len;
    assert_int_equal(sigv4__canonical_request(&t.req, SL_SLICE_LIT("host;my-header1;x-amz-date"),
                                              SL_SLICE_LIT("UNUSED"), canon, sizeof canon, &len,
                                              NULL),
                     SL_OK);
    assert_non_null(strstr(canon, "\nmy-header1:value2,value2,value1\n"));

    struct sl_buf out;
    sl_buf_init(&out);
    assert_int_equal(sigv4_sign(&t.req, "AKIDEXAMPLE", IAM_SECRET, "us-east-1", "service",
                                "20150830T123600Z", &out),
                     SL_OK);
    assert_string_equal(out.p, authz);
    sl_buf_free(&out);
}

/* ---- vectors from independent signers ---------------------------------- */

static json_t *load_vectors(const char *file)
{
    const char *dir = getenv("SLUICE_TEST_DATA");
    char path[1024];
    snprintf(path, sizeof path, "%s/sigv4/%s", dir ? dir : "tests/data", file);
    json_error_t err;
    json_t *root = json_load_file(path, 0, &err);
    if (!root) {
        fail_msg("%s:%d: %s", path, err.line, err.text);
    }
    json_t *v = json_object_get(root, "vectors");
    assert_true(json_is_array(v));
    assert_true(json_array_size(v) > 0);
    json_incref(v);
    json_decref(root);
    return v;
}

static const char *jstr(json_t *o, const char *key)
{
    json_t *s = json_object_get(o, key);
    if (!json_is_string(s)) {
        fail_msg("vector field %s missing", key);
    }
    return json_string_value(s);
}

static struct sl_slice jslice(json_t *o, const char *key)
{
    json_t *s = json_object_get(o, key);
    if (!json_is_string(s)) {
        fail_msg("vector field %s missing", key);
    }
    return (struct sl_slice){json_string_value(s), json_string_length(s)};
}

/* Builds the request the gateway would see: pseudo-headers (":authority")
 * are not among the regular headers but in req.authority, as the
 * gateway's HTTP/2 layer hands them over; the host header also gives the authority. */
static void vector_request(json_t *v, struct treq *t, bool keep_host)
{
    memset(t, 0, sizeof *t);
    t->req.method = jslice(v, "method");
    t->req.path = jslice(v, "path");
    t->req.query = jslice(v, "query");
    t->req.payload = jslice(v, "body");
    t->req.headers = t->headers;
    size_t i;
    json_t *h;
    json_array_foreach(json_object_get(v, "headers"), i, h)
    {
        json_t *n = json_array_get(h, 0), *val = json_array_get(h, 1);
        struct sl_slice name = {json_string_value(n), json_string_length(n)};
        struct sl_slice value = {json_string_value(val), json_string_length(val)};
        bool is_host = name.n == 4 && strncasecmp(name.p, "host", 4) == 0;
        if (name.n > 0 && name.p[0] == ':') {
            t->req.authority = value;
            continue;
        }
        if (is_host) {
            t->req.authority = value;
            if (!keep_host) {
                continue;
            }
        }
        assert_true(t->req.header_count < MAX_TEST_HEADERS);
        t->headers[t->req.header_count++] = (struct sigv4_header){name, value};
    }
}

/* The headers of v named in its SignedHeaders, pseudo-headers included,
 * which is what a client passes to sigv4_sign. */
static void vector_signed_subset(json_t *v, const struct sigv4_auth *auth, struct treq *t)
{
    memset(t, 0, sizeof *t);
    t->req.method = jslice(v, "method");
    t->req.path = jslice(v, "path");
    t->req.query = jslice(v, "query");
    t->req.payload = jslice(v, "body");
    t->req.headers = t->headers;
    size_t i;
    json_t *h;
    json_array_foreach(json_object_get(v, "headers"), i, h)
    {
        json_t *n = json_array_get(h, 0), *val = json_array_get(h, 1);
        struct sl_slice name = {json_string_value(n), json_string_length(n)};
        bool listed = false;
        size_t start = 0;
        for (size_t j = 0; j <= auth->signed_headers.n; j++) {
            if (j < auth->signed_headers.n && auth->signed_headers.p[j] != ';') {
                continue;
            }
            if (j - start == name.n &&
                strncasecmp(auth->signed_headers.p + start, name.p, name.n) == 0) {
                listed = true;
            }
            start = j + 1;
        }
        if (listed) {
            t->headers[t->req.header_count++] =
                (struct sigv4_header){name, {json_string_value(val), json_string_length(val)}};
        }
    }
}

static void check_vector(json_t *v, bool check_canonical)
{
    const char *name = jstr(v, "name");
    const char *authz = jstr(v, "authorization");
    int64_t now = json_integer_value(json_object_get(v, "now"));
    struct sigv4_auth auth;
    const char *why = "";
    if (check_parse(sl_slice_cstr(authz), &auth, &why) != SIGV4_FAIL_NONE) {
        fail_msg("%s: parse: %s", name, why);
    }
    struct treq t;
    vector_request(v, &t, true);

    json_t *expect = json_object_get(v, "expect");
    if (expect && strcmp(json_string_value(expect), "mismatch") == 0) {
        /* The generator broke AWS's rules (see the generator's note). */
        assert_int_equal(check_verify(&t.req, &auth, jstr(v, "secret"), jstr(v, "region"),
                                      jstr(v, "service"), now, NULL, NULL),
                         SIGV4_FAIL_MISMATCH);
        return;
    }
    if (check_canonical) {
        char canon[SIGV4_MAX_CANONICAL];
        size_t len;
        const char *expected = jstr(v, "canonical_request");
        const char *nl = strrchr(expected, '\n');
        assert_non_null(nl);
        struct sl_slice payload_hash = sl_slice_cstr(nl + 1);
        assert_int_equal(sigv4__canonical_request(&t.req, auth.signed_headers, payload_hash, canon,
                                                  sizeof canon, &len, &why),
                         SL_OK);
        if (strcmp(canon, expected) != 0) {
            fail_msg("%s: canonical request\n--- ours\n%s\n--- smithy\n%s", name, canon, expected);
        }
        char sts[512];
        assert_int_not_equal(sigv4__string_to_sign(NULL, jslice(v, "amz_date"), auth.region,
                                                   auth.service, canon, len, sts, sizeof sts),
                             0);
        assert_string_equal(sts, jstr(v, "string_to_sign"));
    }

    enum sigv4_failure st = check_verify(&t.req, &auth, jstr(v, "secret"), jstr(v, "region"),
                                         jstr(v, "service"), now, NULL, &why);
    if (st != SIGV4_FAIL_NONE) {
        fail_msg("%s: verify: %d %s", name, st, why);
    }
    /* HTTP/2: no host header, only the authority. */
    vector_request(v, &t, false);
    st = check_verify(&t.req, &auth, jstr(v, "secret"), jstr(v, "region"), jstr(v, "service"), now,
                      NULL, &why);
    if (st != SIGV4_FAIL_NONE) {
        fail_msg("%s: verify without host: %d %s", name, st, why);
    }
    /* The signer, given what the client signed, writes the same header. */
    vector_signed_subset(v, &auth, &t);
    struct sl_buf out;
    sl_buf_init(&out);
    assert_int_equal(sigv4_sign(&t.req, jstr(v, "access_key_id"), jstr(v, "secret"),
                                jstr(v, "region"), jstr(v, "service"), jstr(v, "amz_date"), &out),
                     SL_OK);
    if (strcmp(out.p, authz) != 0) {
        fail_msg("%s: sign\n ours: %s\n them: %s", name, out.p, authz);
    }
    sl_buf_free(&out);
    /* One bit off in the body must fail (an empty body gets one byte). */
    vector_request(v, &t, true);
    char tampered[4096];
    size_t n = SL_MIN(t.req.payload.n, sizeof tampered - 1);
    memcpy(tampered, t.req.payload.p, n);
    if (n == 0) {
        tampered[n++] = 'x';
    } else {
        tampered[0] ^= 1;
    }
    t.req.payload = (struct sl_slice){tampered, n};
    assert_int_equal(check_verify(&t.req, &auth, jstr(v, "secret"), jstr(v, "region"),
                                  jstr(v, "service"), now, NULL, NULL),
                     SIGV4_FAIL_MISMATCH);
}

static void test_smithy_vectors(void **state)
{
    (void)state;
    json_t *vs = load_vectors("smithy_vectors.json");
    size_t i;
    json_t *v;
    size_t with_authority = 0;
    json_array_foreach(vs, i, v)
    {
        check_vector(v, true);
        with_authority += strstr(jstr(v, "authorization"), "SignedHeaders=:authority;") != NULL;
    }
    assert_true(with_authority >= 2); /* the HTTP/2 shape is really covered */
    json_decref(vs);
}

static void test_curl_vectors(void **state)
{
    (void)state;
    json_t *vs = load_vectors("curl_vectors.json");
    size_t i;
    json_t *v;
    size_t refused = 0;
    json_array_foreach(vs, i, v)
    {
        check_vector(v, false);
        refused += json_object_get(v, "expect") &&
                   strcmp(json_string_value(json_object_get(v, "expect")), "ok") != 0;
    }
    assert_true(refused < json_array_size(vs));
    json_decref(vs);
}

/* ---- refusals ---------------------------------------------------------- */

static const char BODY[] = "{\"QueueName\":\"orders\"}";
static const char NOW_DATE[] = "20261121T070900Z";

/* A valid SQS request signed by our own signer; the positive cases above
 * prove the signer right, here it only provides something to break. */
struct signed_req {
    struct treq t;
    char body_hash[65];
    struct sl_buf authz;
    int64_t now;
};

static void make_signed(struct signed_req *s, bool content_sha)
{
    treq_init(&s->t, "POST", "/", "", BODY);
    treq_add(&s->t, ":authority", "localhost:9324");
    treq_add(&s->t, "content-type", "application/x-amz-json-1.0");
    treq_add(&s->t, "x-amz-date", NOW_DATE);
    treq_add(&s->t, "x-amz-target", "AmazonSQS.CreateQueue");
    if (content_sha) {
        sha256_hex_of(BODY, strlen(BODY), s->body_hash);
        treq_add(&s->t, "x-amz-content-sha256", s->body_hash);
    }
    sl_buf_init(&s->authz);
    assert_int_equal(
        sigv4_sign(&s->t.req, "AKIDACME", "acme-secret", "us-east-1", "sqs", NOW_DATE, &s->authz),
        SL_OK);
    /* as the gateway sees it: :authority is not a regular header */
    treq_remove(&s->t, ":authority");
    s->t.req.authority = SL_SLICE_LIT("localhost:9324");
    s->now = parse_date(NOW_DATE);
}

static enum sigv4_failure verify_signed(struct signed_req *s, const char *secret,
                                        const char *region, const char *service, int64_t now)
{
    return verify_with(&s->t.req, s->authz.p, secret, region, service, now, NULL);
}

static void test_baseline_and_wrong_secret(void **state)
{
    (void)state;
    for (int sha = 0; sha < 2; sha++) {
        struct signed_req s;
        make_signed(&s, sha);
        assert_int_equal(verify_signed(&s, "acme-secret", "us-east-1", "sqs", s.now),
                         SIGV4_FAIL_NONE);
        assert_int_equal(verify_signed(&s, "acme-secreT", "us-east-1", "sqs", s.now),
                         SIGV4_FAIL_MISMATCH);
        assert_int_equal(verify_signed(&s, "", "us-east-1", "sqs", s.now), SIGV4_FAIL_MISMATCH);
        sl_buf_free(&s.authz);
    }
}

static void test_tampering(void **state)
{
    (void)state;
    for (int sha = 0; sha < 2; sha++) {
        struct signed_req s;
        make_signed(&s, sha);
        treq_set(&s.t, "x-amz-target", "AmazonSQS.DeleteQueue");
        assert_int_equal(verify_signed(&s, "acme-secret", "us-east-1", "sqs", s.now),
                         SIGV4_FAIL_MISMATCH);
        treq_set(&s.t, "x-amz-target", "AmazonSQS.CreateQueue");
        s.t.req.payload = SL_SLICE_LIT("{\"QueueName\":\"orderz\"}");
        assert_int_equal(verify_signed(&s, "acme-secret", "us-east-1", "sqs", s.now),
                         SIGV4_FAIL_MISMATCH);
        s.t.req.payload = sl_slice_cstr(BODY);
        s.t.req.authority = SL_SLICE_LIT("evil:9324");
        assert_int_equal(verify_signed(&s, "acme-secret", "us-east-1", "sqs", s.now),
                         SIGV4_FAIL_MISMATCH);
        s.t.req.authority = SL_SLICE_LIT("localhost:9324");
        s.t.req.path = SL_SLICE_LIT("/other");
        assert_int_equal(verify_signed(&s, "acme-secret", "us-east-1", "sqs", s.now),
                         SIGV4_FAIL_MISMATCH);
        s.t.req.path = SL_SLICE_LIT("/");
        s.t.req.query = SL_SLICE_LIT("a=1");
        assert_int_equal(verify_signed(&s, "acme-secret", "us-east-1", "sqs", s.now),
                         SIGV4_FAIL_MISMATCH);
        s.t.req.query = SL_SLICE_LIT("");
        s.t.req.method = SL_SLICE_LIT("PUT");
        assert_int_equal(verify_signed(&s, "acme-secret", "us-east-1", "sqs", s.now),
                         SIGV4_FAIL_MISMATCH);
        s.t.req.method = SL_SLICE_LIT("POST");
        /* an extra, unsigned header does not matter */
        treq_add(&s.t, "user-agent", "anything");
        assert_int_equal(verify_signed(&s, "acme-secret", "us-east-1", "sqs", s.now),
                         SIGV4_FAIL_NONE);
        /* a second value for a signed header does */
        treq_add(&s.t, "x-amz-target", "AmazonSQS.DeleteQueue");
        assert_int_equal(verify_signed(&s, "acme-secret", "us-east-1", "sqs", s.now),
                         SIGV4_FAIL_MISMATCH);
        sl_buf_free(&s.authz);
    }
}

static void test_missing_signed_header(void **state)
{
    (void)state;
    struct signed_req s;
    make_signed(&s, true);
    treq_remove(&s.t, "x-amz-target");
    const char *why = NULL;
    assert_int_equal(
        verify_with(&s.t.req, s.authz.p, "acme-secret", "us-east-1", "sqs", s.now, &why),
        SIGV4_FAIL_MISMATCH);
    assert_non_null(strstr(why, "absent"));
    sl_buf_free(&s.authz);

    /* :authority signed, but the request has no authority at all */
    make_signed(&s, true);
    s.t.req.authority = SL_SLICE_LIT("");
    assert_int_equal(verify_signed(&s, "acme-secret", "us-east-1", "sqs", s.now),
                     SIGV4_FAIL_MISMATCH);
    sl_buf_free(&s.authz);
}

static void test_clock_skew(void **state)
{
    (void)state;
    struct signed_req s;
    make_signed(&s, true);
    const int64_t m = 60;
    assert_int_equal(verify_signed(&s, "acme-secret", "us-east-1", "sqs", s.now + 15 * m),
                     SIGV4_FAIL_NONE);
    assert_int_equal(verify_signed(&s, "acme-secret", "us-east-1", "sqs", s.now - 15 * m),
                     SIGV4_FAIL_NONE);
    assert_int_equal(verify_signed(&s, "acme-secret", "us-east-1", "sqs", s.now + 15 * m + 1),
                     SIGV4_FAIL_EXPIRED);
    assert_int_equal(verify_signed(&s, "acme-secret", "us-east-1", "sqs", s.now + 16 * m),
                     SIGV4_FAIL_EXPIRED);
    assert_int_equal(verify_signed(&s, "acme-secret", "us-east-1", "sqs", s.now - 16 * m),
                     SIGV4_FAIL_EXPIRED);
    sl_buf_free(&s.authz);
}

static void test_scope(void **state)
{
    (void)state;
    struct signed_req s;
    make_signed(&s, true);
    assert_int_equal(verify_signed(&s, "acme-secret", "eu-west-1", "sqs", s.now), SIGV4_FAIL_SCOPE);
    assert_int_equal(verify_signed(&s, "acme-secret", "us-east-1", "sns", s.now), SIGV4_FAIL_SCOPE);
    /* A scope date that is not the day of x-amz-date. */
    struct sl_buf bad;
    sl_buf_init(&bad);
    sl_buf_append_cstr(&bad, s.authz.p);
    char *d = strstr(bad.p, "/20261121/");
    assert_non_null(d);
    d[8] = '0'; /* the 20th */
    assert_int_equal(verify_with(&s.t.req, bad.p, "acme-secret", "us-east-1", "sqs", s.now, NULL),
                     SIGV4_FAIL_SCOPE);
    sl_buf_free(&bad);
    sl_buf_free(&s.authz);
}

static void test_security_token(void **state)
{
    (void)state;
    struct signed_req s;
    make_signed(&s, true);
    treq_add(&s.t, "X-Amz-Security-Token", "FQoGZXIvYXdzE...");
    const char *why = NULL;
    assert_int_equal(
        verify_with(&s.t.req, s.authz.p, "acme-secret", "us-east-1", "sqs", s.now, &why),
        SIGV4_FAIL_TOKEN);
    assert_non_null(strstr(why, "X-Amz-Security-Token"));
    sl_buf_free(&s.authz);
}

/* Every x-amz-* header must be among the signed ones (X-Amz-Target is, in
 * make_signed); its case on the wire does not matter. */
static void test_unsigned_amz_header(void **state)
{
    (void)state;
    struct signed_req s;
    make_signed(&s, true);
    treq_add(&s.t, "X-Amz-User-Agent", "added-after-signing");
    const char *why = NULL;
    assert_int_equal(
        verify_with(&s.t.req, s.authz.p, "acme-secret", "us-east-1", "sqs", s.now, &why),
        SIGV4_FAIL_INCOMPLETE);
    assert_non_null(strstr(why, "X-Amz-Target"));
    sl_buf_free(&s.authz);
}

static void test_payload_hash_header(void **state)
{
    (void)state;
    struct signed_req s;
    make_signed(&s, true);
    treq_set(&s.t, "x-amz-content-sha256", "UNSIGNED-PAYLOAD");
    const char *why = NULL;
    assert_int_equal(
        verify_with(&s.t.req, s.authz.p, "acme-secret", "us-east-1", "sqs", s.now, &why),
        SIGV4_FAIL_MISMATCH);
    assert_non_null(strstr(why, "UNSIGNED-PAYLOAD"));
    /* A client that signs UNSIGNED-PAYLOAD honestly is still refused. */
    sl_buf_free(&s.authz);
    treq_init(&s.t, "POST", "/", "", BODY);
    treq_add(&s.t, "host", "localhost:9324");
    treq_add(&s.t, "x-amz-date", NOW_DATE);
    treq_add(&s.t, "x-amz-content-sha256", "UNSIGNED-PAYLOAD");
    sl_buf_init(&s.authz);
    assert_int_equal(
        sigv4_sign(&s.t.req, "AKIDACME", "acme-secret", "us-east-1", "sqs", NOW_DATE, &s.authz),
        SL_OK);
    assert_int_equal(verify_signed(&s, "acme-secret", "us-east-1", "sqs", s.now),
                     SIGV4_FAIL_MISMATCH);
    sl_buf_free(&s.authz);
}

static void test_signed_headers_rules(void **state)
{
    (void)state;
    /* host (or :authority) must be signed, and so must the date header */
    struct treq t;
    treq_init(&t, "POST", "/", "", BODY);
    treq_add(&t, "x-amz-date", NOW_DATE);
    treq_add(&t, "x-amz-target", "AmazonSQS.ListQueues");
    t.req.authority = SL_SLICE_LIT("localhost:9324");
    struct sl_buf authz;
    sl_buf_init(&authz);
    /* the signer refuses to sign without host */
    assert_int_equal(
        sigv4_sign(&t.req, "AKIDACME", "acme-secret", "us-east-1", "sqs", NOW_DATE, &authz),
        SL_EINVAL);
    const char *why = NULL;
    const char *no_host = "AWS4-HMAC-SHA256 Credential=AKIDACME/20261121/us-east-1/sqs/"
                          "aws4_request, SignedHeaders=x-amz-date;x-amz-target, Signature="
                          "0000000000000000000000000000000000000000000000000000000000000000";
    assert_int_equal(
        verify_with(&t.req, no_host, "acme-secret", "us-east-1", "sqs", parse_date(NOW_DATE), &why),
        SIGV4_FAIL_INCOMPLETE);
    assert_non_null(strstr(why, "host"));
    const char *no_date = "AWS4-HMAC-SHA256 Credential=AKIDACME/20261121/us-east-1/sqs/"
                          "aws4_request, SignedHeaders=host;x-amz-target, Signature="
                          "0000000000000000000000000000000000000000000000000000000000000000";
    assert_int_equal(
        verify_with(&t.req, no_date, "acme-secret", "us-east-1", "sqs", parse_date(NOW_DATE), &why),
        SIGV4_FAIL_INCOMPLETE);
    /* the signer refuses names that cannot be listed in SignedHeaders */
    treq_add(&t, "host", "localhost:9324");
    treq_add(&t, "a;b", "1");
    assert_int_equal(
        sigv4_sign(&t.req, "AKIDACME", "acme-secret", "us-east-1", "sqs", NOW_DATE, &authz),
        SL_EINVAL);
    treq_remove(&t, "a;b");
    assert_int_equal(
        sigv4_sign(&t.req, "AKIDACME", "acme-secret", "us-east-1", "sqs", NOW_DATE, &authz), SL_OK);
    treq_remove(&t, "host");
    /* no date header at all */
    treq_remove(&t, "x-amz-date");
    assert_int_equal(
        verify_with(&t.req, no_host, "acme-secret", "us-east-1", "sqs", parse_date(NOW_DATE), &why),
        SIGV4_FAIL_INCOMPLETE);
    /* a date header that is not ISO 8601 basic */
    treq_add(&t, "x-amz-date", "Sat, 21 Nov 2026 07:09:00 GMT");
    assert_int_equal(
        verify_with(&t.req, no_host, "acme-secret", "us-east-1", "sqs", parse_date(NOW_DATE), &why),
        SIGV4_FAIL_INCOMPLETE);
    sl_buf_free(&authz);
}

/* Falls back to "date" when x-amz-date is absent; the expected signature
 * is computed here step by step (canonical request, string to sign, key,
 * HMAC) so the fallback is checked against the documented composition. */
static void test_date_header_fallback(void **state)
{
    (void)state;
    struct treq t;
    treq_init(&t, "POST", "/", "", BODY);
    treq_add(&t, "date", NOW_DATE);
    treq_add(&t, "host", "localhost:9324");
    char body_hash[65];
    sha256_hex_of(BODY, strlen(BODY), body_hash);
    char canon[SIGV4_MAX_CANONICAL];
    size_t len;
    assert_int_equal(sigv4__canonical_request(&t.req, SL_SLICE_LIT("date;host"),
                                              sl_slice_cstr(body_hash), canon, sizeof canon, &len,
                                              NULL),
                     SL_OK);
    char sts[512];
    size_t sts_len = sigv4__string_to_sign(NULL, sl_slice_cstr(NOW_DATE), SL_SLICE_LIT("us-east-1"),
                                           SL_SLICE_LIT("sqs"), canon, len, sts, sizeof sts);
    uint8_t key[32], mac[32];
    unsigned int mac_len = 32;
    sigv4__derive_key(SL_SLICE_LIT("acme-secret"), SL_SLICE_LIT("20261121"),
                      SL_SLICE_LIT("us-east-1"), SL_SLICE_LIT("sqs"), key);
    HMAC(EVP_sha256(), key, 32, (const unsigned char *)sts, sts_len, mac, &mac_len);
    char sig[65];
    hex_of(mac, 32, sig);
    char authz[512];
    snprintf(authz, sizeof authz,
             "AWS4-HMAC-SHA256 Credential=AKIDACME/20261121/us-east-1/sqs/aws4_request, "
             "SignedHeaders=date;host, Signature=%s",
             sig);
    int64_t now = parse_date(NOW_DATE);
    assert_int_equal(verify_with(&t.req, authz, "acme-secret", "us-east-1", "sqs", now, NULL),
                     SIGV4_FAIL_NONE);
    /* upper-case hex is the same signature */
    for (char *p = strstr(authz, "Signature=") + 10; *p; p++) {
        if (*p >= 'a' && *p <= 'f') {
            *p = (char)(*p - 'a' + 'A');
        }
    }
    assert_int_equal(verify_with(&t.req, authz, "acme-secret", "us-east-1", "sqs", now, NULL),
                     SIGV4_FAIL_NONE);
    /* x-amz-date wins over date when both are present */
    treq_add(&t, "x-amz-date", "20261121T071000Z");
    assert_int_equal(verify_with(&t.req, authz, "acme-secret", "us-east-1", "sqs", now, NULL),
                     SIGV4_FAIL_INCOMPLETE); /* x-amz-date is then not signed */
}

static void test_malformed_authorization(void **state)
{
    (void)state;
    static const char sig[] = "Signature=5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6"
                              "f2b5d7";
    static const char cred[] = "Credential=AKIDEXAMPLE/20150830/us-east-1/iam/aws4_request";
    static const char sh[] = "SignedHeaders=content-type;host;x-amz-date";
    struct {
        const char *value;
        enum sigv4_failure want;
        const char *why_has;
    } cases[] = {
        {"", SIGV4_FAIL_MISSING, "empty"},
        {"   ", SIGV4_FAIL_MISSING, "empty"},
        {"garbage", SIGV4_FAIL_MALFORMED, "algorithm"},
        {"AWS4-HMAC-SHA1 x=y", SIGV4_FAIL_MALFORMED, "algorithm"},
        {"AWS4-HMAC-SHA256", SIGV4_FAIL_MALFORMED, "key=value"},
        {"AWS AKIDEXAMPLE:c2lnbmF0dXJl", SIGV4_FAIL_MALFORMED, "algorithm"},
        {"AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/iam/aws4_request, "
         "SignedHeaders=host",
         SIGV4_FAIL_MALFORMED, "lacks Signature"},
        {"AWS4-HMAC-SHA256 SignedHeaders=host, Signature=00", SIGV4_FAIL_MALFORMED,
         "lacks Credential"},
        {"AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/iam/aws4_request, "
         "Signature=5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7",
         SIGV4_FAIL_MALFORMED, "lacks SignedHeaders"},
        {"AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/iam, "
         "SignedHeaders=host, Signature=00",
         SIGV4_FAIL_MALFORMED, "Credential"},
        {"AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/2015083/us-east-1/iam/aws4_request, "
         "SignedHeaders=host, Signature=00",
         SIGV4_FAIL_MALFORMED, "Credential"},
        {"AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/iam/aws5_request, "
         "SignedHeaders=host, Signature="
         "5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7",
         SIGV4_FAIL_MALFORMED, "aws4_request"},
        {"AWS4-HMAC-SHA256 Credential=/20150830/us-east-1/iam/aws4_request, "
         "SignedHeaders=host, Signature="
         "5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7",
         SIGV4_FAIL_MALFORMED, "Credential"},
        {"AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/iam/aws4_request, "
         "SignedHeaders=host, Signature=5d672d79",
         SIGV4_FAIL_MALFORMED, "64 hex"},
        {"AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/iam/aws4_request, "
         "SignedHeaders=host, Signature="
         "zd672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7",
         SIGV4_FAIL_MALFORMED, "64 hex"},
        {"AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/iam/aws4_request, "
         "SignedHeaders=Host;x-amz-date, Signature="
         "5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7",
         SIGV4_FAIL_MALFORMED, "SignedHeaders"},
        {"AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/iam/aws4_request, "
         "SignedHeaders=host;;x-amz-date, Signature="
         "5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7",
         SIGV4_FAIL_MALFORMED, "SignedHeaders"},
        {"AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/iam/aws4_request, "
         "Credential=AKIDEXAMPLE/20150830/us-east-1/iam/aws4_request, SignedHeaders=host, "
         "Signature=5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7",
         SIGV4_FAIL_MALFORMED, "repeats"},
        {"AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/iam/aws4_request, "
         "SignedHeaders=host, Signature="
         "5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7, Extra=1",
         SIGV4_FAIL_MALFORMED, "unknown"},
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(cases); i++) {
        struct sigv4_auth auth;
        const char *why = NULL;
        enum sigv4_failure st = check_parse(sl_slice_cstr(cases[i].value), &auth, &why);
        if (st != cases[i].want || !why || !strstr(why, cases[i].why_has)) {
            fail_msg("case %zu \"%s\": got %d (%s), want %d (%s)", i, cases[i].value, st,
                     why ? why : "-", cases[i].want, cases[i].why_has);
        }
    }
    /* Order of parts and spacing are free. */
    char ok[512];
    snprintf(ok, sizeof ok, "  AWS4-HMAC-SHA256   %s,%s ,\t%s ", sig, sh, cred);
    struct sigv4_auth auth;
    assert_int_equal(check_parse(sl_slice_cstr(ok), &auth, NULL), SIGV4_FAIL_NONE);
    assert_true(sl_slice_eq_cstr(auth.access_key_id, "AKIDEXAMPLE"));
    assert_true(sl_slice_eq_cstr(auth.date, "20150830"));
    assert_true(sl_slice_eq_cstr(auth.region, "us-east-1"));
    assert_true(sl_slice_eq_cstr(auth.service, "iam"));
    assert_true(sl_slice_eq_cstr(auth.signed_headers, "content-type;host;x-amz-date"));
    struct treq t;
    iam_request(&t);
    assert_int_equal(check_verify(&t.req, &auth, IAM_SECRET, "us-east-1", "iam",
                                  parse_date("20150830T123600Z"), NULL, NULL),
                     SIGV4_FAIL_NONE);
}

static void test_limits(void **state)
{
    (void)state;
    /* More query parameters than the verifier holds: a clear refusal. */
    static char query[SIGV4_MAX_QUERY_PARAMS * 8 + 64];
    size_t n = 0;
    for (int i = 0; i <= SIGV4_MAX_QUERY_PARAMS; i++) {
        n += (size_t)snprintf(query + n, sizeof query - n, "%sp%d=1", i ? "&" : "", i);
    }
    struct treq t;
    treq_init(&t, "GET", "/", query, "");
    treq_add(&t, "host", "h");
    treq_add(&t, "x-amz-date", NOW_DATE);
    char canon[SIGV4_MAX_CANONICAL];
    size_t len;
    const char *why = NULL;
    assert_int_equal(sigv4__canonical_request(&t.req, SL_SLICE_LIT("host;x-amz-date"),
                                              SL_SLICE_LIT("x"), canon, sizeof canon, &len, &why),
                     SL_ETOOBIG);
    assert_non_null(strstr(why, "parameters"));
    struct sl_buf authz;
    sl_buf_init(&authz);
    assert_int_equal(
        sigv4_sign(&t.req, "AKIDACME", "acme-secret", "us-east-1", "sqs", NOW_DATE, &authz),
        SL_ETOOBIG);
    /* A header value longer than the canonical buffer. */
    static char big[SIGV4_MAX_CANONICAL + 10];
    memset(big, 'a', sizeof big - 1);
    treq_init(&t, "GET", "/", "", "");
    treq_add(&t, "host", "h");
    treq_add(&t, "x-amz-date", NOW_DATE);
    treq_add(&t, "x-big", big);
    assert_int_equal(
        sigv4_sign(&t.req, "AKIDACME", "acme-secret", "us-east-1", "sqs", NOW_DATE, &authz),
        SL_ETOOBIG);
    const char *a = "AWS4-HMAC-SHA256 Credential=AKIDACME/20261121/us-east-1/sqs/aws4_request, "
                    "SignedHeaders=host;x-amz-date;x-big, Signature="
                    "0000000000000000000000000000000000000000000000000000000000000000";
    assert_int_equal(
        verify_with(&t.req, a, "acme-secret", "us-east-1", "sqs", parse_date(NOW_DATE), &why),
        SIGV4_FAIL_INCOMPLETE);
    assert_non_null(strstr(why, "longer"));
    /* A small output buffer is refused, never overrun. */
    treq_init(&t, "GET", "/", "", "");
    treq_add(&t, "host", "h");
    assert_int_equal(sigv4__canonical_request(&t.req, SL_SLICE_LIT("host"), SL_SLICE_LIT("x"),
                                              canon, 10, &len, NULL),
                     SL_ETOOBIG);
    sl_buf_free(&authz);
}

/* ---- canonical pieces beyond the vectors ------------------------------- */

static void canonical_of(const char *path, const char *query, char *out, size_t cap)
{
    struct treq t;
    treq_init(&t, "GET", path, query, "");
    treq_add(&t, "host", "h");
    size_t len;
    assert_int_equal(sigv4__canonical_request(&t.req, SL_SLICE_LIT("host"), SL_SLICE_LIT("x"), out,
                                              cap, &len, NULL),
                     SL_OK);
}

static void test_canonical_path_and_query(void **state)
{
    (void)state;
    char c[1024];
    canonical_of("/a/./b/../c//d/", "", c, sizeof c);
    assert_string_equal(c, "GET\n/a/c/d/\n\nhost:h\n\nhost\nx");
    canonical_of("/../..", "", c, sizeof c);
    assert_string_equal(c, "GET\n/\n\nhost:h\n\nhost\nx");
    canonical_of("", "", c, sizeof c);
    assert_string_equal(c, "GET\n/\n\nhost:h\n\nhost\nx");
    canonical_of("/a%2Fb/~x*'()!", "", c, sizeof c);
    assert_string_equal(c, "GET\n/a%252Fb/~x%2A%27%28%29%21\n\nhost:h\n\nhost\nx");
    /* query: decoded then re-encoded, sorted by name then value, bare keys;
     * a '+' on the wire is a space, as the query protocol's form decoder
     * reads it and as botocore signs it (AWSRequest params: urlencode puts
     * "+" on the wire, SigV4Auth signs "%20"); only "%2B" is a plus */
    canonical_of("/", "b=2&a=2&a=1&&c&d=%7e%41+", c, sizeof c);
    assert_string_equal(c, "GET\n/\na=1&a=2&b=2&c=&d=~A%20\nhost:h\n\nhost\nx");
    canonical_of("/", "m=1+1%2B1", c, sizeof c);
    assert_string_equal(c, "GET\n/\nm=1%201%2B1\nhost:h\n\nhost\nx");
    /* a stray '%' is literal */
    canonical_of("/", "x=100%&y=%zz", c, sizeof c);
    assert_string_equal(c, "GET\n/\nx=100%25&y=%25zz\nhost:h\n\nhost\nx");
}

/* ---- dates ------------------------------------------------------------- */

static void test_dates(void **state)
{
    (void)state;
    char d[17];
    sigv4_amz_date(1440938160, d);
    assert_string_equal(d, "20150830T123600Z");
    assert_int_equal(parse_date("20150830T123600Z"), 1440938160);
    sigv4_amz_date(0, d);
    assert_string_equal(d, "19700101T000000Z");
    sigv4_amz_date(-5, d);
    assert_string_equal(d, "19700101T000000Z");
    sigv4_amz_date(INT64_MAX, d);
    assert_string_equal(d, "99991231T235959Z");
    int64_t t;
    assert_true(sigv4__parse_amz_date(SL_SLICE_LIT("20240229T000000Z"), &t));
    const char *bad[] = {"20150230T000000Z", "20230229T000000Z",
                         "20150830T123600",  "20150830 123600Z",
                         "2015083OT123600Z", "20151330T000000Z",
                         "20150830T246000Z", "20150830T123600Z ",
                         "19691231T235959Z", "",
                         "20150431T000000Z"};
    for (size_t i = 0; i < SL_ARRAY_LEN(bad); i++) {
        if (sigv4__parse_amz_date(sl_slice_cstr(bad[i]), &t)) {
            fail_msg("accepted %s", bad[i]);
        }
    }
}

/* ---- the key cache ----------------------------------------------------- */

static void key_of(struct sigv4_key_cache *c, const char *akid, const char *secret,
                   const char *date, uint8_t key[32], bool *hit)
{
    sigv4__signing_key(c, sl_slice_cstr(akid), sl_slice_cstr(secret), sl_slice_cstr(date),
                       SL_SLICE_LIT("us-east-1"), SL_SLICE_LIT("sqs"), key, hit);
}

/* s verified with secret through cache c (us-east-1, sqs). */
static enum sigv4_failure verify_cached(const struct signed_req *s, const struct sigv4_auth *auth,
                                        const char *secret, struct sigv4_key_cache *c)
{
    return check_verify(&s->t.req, auth, secret, "us-east-1", "sqs", s->now, c, NULL);
}

static void test_key_cache(void **state)
{
    (void)state;
    struct sigv4_key_cache *c = sigv4_key_cache_new(2);
    uint8_t k1[32], k2[32], want[32];
    bool hit;
    key_of(c, "A", "secret-a", "20261121", k1, &hit);
    assert_false(hit);
    sigv4__derive_key(SL_SLICE_LIT("secret-a"), SL_SLICE_LIT("20261121"), SL_SLICE_LIT("us-east-1"),
                      SL_SLICE_LIT("sqs"), want);
    assert_memory_equal(k1, want, 32);
    key_of(c, "A", "secret-a", "20261121", k2, &hit);
    assert_true(hit);
    assert_memory_equal(k2, want, 32);
    assert_int_equal(sigv4__key_cache_used(c), 1);

    /* A rotated secret is never answered with the old key, and replaces it. */
    key_of(c, "A", "secret-a2", "20261121", k2, &hit);
    assert_false(hit);
    assert_memory_not_equal(k2, want, 32);
    assert_int_equal(sigv4__key_cache_used(c), 1);
    key_of(c, "A", "secret-a", "20261121", k1, &hit);
    assert_false(hit);
    assert_memory_equal(k1, want, 32);

    /* LRU: A, B in; touch A; C evicts B. */
    key_of(c, "B", "secret-b", "20261121", k1, &hit);
    assert_false(hit);
    assert_int_equal(sigv4__key_cache_used(c), 2);
    key_of(c, "A", "secret-a", "20261121", k1, &hit);
    assert_true(hit);
    key_of(c, "C", "secret-c", "20261121", k1, &hit);
    assert_false(hit);
    assert_int_equal(sigv4__key_cache_used(c), 2);
    key_of(c, "A", "secret-a", "20261121", k1, &hit);
    assert_true(hit);
    key_of(c, "C", "secret-c", "20261121", k1, &hit);
    assert_true(hit);
    key_of(c, "B", "secret-b", "20261121", k1, &hit);
    assert_false(hit);

    /* A new day is a new key. */
    key_of(c, "B", "secret-b", "20261122", k2, &hit);
    assert_false(hit);
    assert_memory_not_equal(k1, k2, 32);

    /* Over-long fields bypass the cache but still give the right key. */
    char long_akid[200];
    memset(long_akid, 'K', sizeof long_akid - 1);
    long_akid[sizeof long_akid - 1] = '\0';
    key_of(c, long_akid, "secret-a", "20261121", k1, &hit);
    assert_false(hit);
    key_of(c, long_akid, "secret-a", "20261121", k1, &hit);
    assert_false(hit);
    assert_memory_equal(k1, want, 32);
    sigv4_key_cache_free(c);
    sigv4_key_cache_free(NULL);

    /* verify through a cache answers like verify without one */
    c = sigv4_key_cache_new(0);
    struct signed_req s;
    make_signed(&s, true);
    struct sigv4_auth auth;
    assert_int_equal(check_parse(sl_slice_cstr(s.authz.p), &auth, NULL), SIGV4_FAIL_NONE);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(verify_cached(&s, &auth, "acme-secret", c), SIGV4_FAIL_NONE);
        assert_int_equal(verify_cached(&s, &auth, "wrong", c), SIGV4_FAIL_MISMATCH);
    }
    assert_int_equal(sigv4__key_cache_used(c), 1);

    /* the same signing key in a row re-initialises the kept HMAC state;
     * it still tells a right signature from a wrong one */
    for (int i = 0; i < 3; i++) {
        assert_int_equal(verify_cached(&s, &auth, "acme-secret", c), SIGV4_FAIL_NONE);
    }
    char forged[65];
    memcpy(forged, auth.signature.p, 64);
    forged[0] = forged[0] == '0' ? '1' : '0';
    forged[64] = '\0';
    struct sigv4_auth forged_auth = auth;
    forged_auth.signature = (struct sl_slice){forged, 64};
    assert_int_equal(verify_cached(&s, &forged_auth, "acme-secret", c), SIGV4_FAIL_MISMATCH);
    assert_int_equal(verify_cached(&s, &auth, "acme-secret", c), SIGV4_FAIL_NONE);
    sl_buf_free(&s.authz);
    sigv4_key_cache_free(c);
}

/* Secrets longer than the stack seed buffer take the heap path. */
static void test_long_secret(void **state)
{
    (void)state;
    char secret[400];
    memset(secret, 's', sizeof secret - 1);
    secret[sizeof secret - 1] = '\0';
    struct treq t;
    treq_init(&t, "POST", "/", "", BODY);
    treq_add(&t, "host", "localhost");
    treq_add(&t, "x-amz-date", NOW_DATE);
    struct sl_buf authz;
    sl_buf_init(&authz);
    assert_int_equal(sigv4_sign(&t.req, "AKIDACME", secret, "us-east-1", "sqs", NOW_DATE, &authz),
                     SL_OK);
    assert_int_equal(
        verify_with(&t.req, authz.p, secret, "us-east-1", "sqs", parse_date(NOW_DATE), NULL),
        SIGV4_FAIL_NONE);
    secret[398] = 't';
    assert_int_equal(
        verify_with(&t.req, authz.p, secret, "us-east-1", "sqs", parse_date(NOW_DATE), NULL),
        SIGV4_FAIL_MISMATCH);
    sl_buf_free(&authz);
}

/* ---- the server's entry point and the SQS signer ------------------------ */

/* A secret store for sigv4_authenticate: knows AKIDACME only, and counts
 * how often it was asked. */
struct store {
    int asked;
};

static int find_acme(void *arg, struct sl_slice access_key_id, const char **secret)
{
    struct store *st = arg;
    st->asked++;
    if (!sl_slice_eq_cstr(access_key_id, "AKIDACME")) {
        return SL_ENOTFOUND;
    }
    *secret = "acme-secret";
    return SL_OK;
}

/* s with its Authorization as a header, verified by sigv4_authenticate. */
static int authenticate_signed(struct signed_req *s, const char *authz, struct store *st,
                               enum sigv4_failure *failure, const char **why)
{
    if (authz != NULL) {
        treq_add(&s->t, "authorization", authz);
    }
    const struct sigv4_verifier v = {
        .region = "us-east-1",
        .service = "sqs",
        .now_s = s->now,
        .cache = NULL,
        .find_secret = find_acme,
        .arg = st,
    };
    *failure = SIGV4_FAIL_TOKEN; /* must be overwritten */
    int rc = sigv4_authenticate(&s->t.req, &v, failure, why);
    treq_remove(&s->t, "authorization");
    return rc;
}

static void test_authenticate(void **state)
{
    (void)state;
    struct signed_req s;
    make_signed(&s, false);
    struct store st = {0};
    enum sigv4_failure f;
    const char *why = NULL;

    assert_int_equal(authenticate_signed(&s, s.authz.p, &st, &f, &why), SL_OK);
    assert_int_equal(f, SIGV4_FAIL_NONE);
    assert_int_equal(st.asked, 1);

    /* each refusal, in the order the checks run */
    assert_int_equal(authenticate_signed(&s, NULL, &st, &f, &why), SL_EINVAL);
    assert_int_equal(f, SIGV4_FAIL_MISSING);
    assert_int_equal(authenticate_signed(&s, " ", &st, &f, &why), SL_EINVAL);
    assert_int_equal(f, SIGV4_FAIL_MISSING);
    assert_int_equal(authenticate_signed(&s, "AWS4-HMAC-SHA256 nonsense", &st, &f, &why),
                     SL_EINVAL);
    assert_int_equal(f, SIGV4_FAIL_MALFORMED);
    assert_non_null(strstr(why, "key=value"));
    assert_int_equal(st.asked, 1); /* a header that does not parse asks for no secret */

    char other[512];
    snprintf(other, sizeof other, "%s", s.authz.p);
    char *key = strstr(other, "AKIDACME");
    assert_non_null(key);
    memcpy(key, "AKIDELSE", 8);
    assert_int_equal(authenticate_signed(&s, other, &st, &f, &why), SL_ENOTFOUND);
    assert_int_equal(f, SIGV4_FAIL_UNKNOWN_KEY);

    s.now += SIGV4_MAX_SKEW_S + 1;
    assert_int_equal(authenticate_signed(&s, s.authz.p, &st, &f, &why), SL_EINVAL);
    assert_int_equal(f, SIGV4_FAIL_EXPIRED);
    s.now -= SIGV4_MAX_SKEW_S + 1;

    s.t.req.payload = SL_SLICE_LIT("{}");
    assert_int_equal(authenticate_signed(&s, s.authz.p, &st, &f, &why), SL_EINVAL);
    assert_int_equal(f, SIGV4_FAIL_MISMATCH);
    s.t.req.payload = sl_slice_cstr(BODY);

    treq_add(&s.t, "x-amz-security-token", "session");
    int asked = st.asked;
    assert_int_equal(authenticate_signed(&s, s.authz.p, &st, &f, &why), SL_EINVAL);
    assert_int_equal(f, SIGV4_FAIL_TOKEN);
    assert_int_equal(st.asked, asked); /* refused before the key is looked up */
    treq_remove(&s.t, "x-amz-security-token");

    assert_int_equal(authenticate_signed(&s, s.authz.p, &st, &f, &why), SL_OK);
    sl_buf_free(&s.authz);
}

static void test_sign_sqs_request(void **state)
{
    (void)state;
    /* post-vanilla of AWS's SigV4 test suite: host and x-amz-date only */
    const struct sigv4_credentials aws = {"AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
                                          "us-east-1", "service"};
    char amz_date[17];
    struct sl_buf authz;
    sl_buf_init(&authz);
    sl_buf_append_cstr(&authz, "replaced");
    assert_int_equal(sigv4_sign_sqs_request(&aws, "example.amazonaws.com", "/", NULL, 0,
                                            SL_SLICE_LIT(""), 1440938160, amz_date, &authz),
                     SL_OK);
    assert_string_equal(amz_date, "20150830T123600Z");
    assert_string_equal(
        authz.p, "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/"
                 "aws4_request, SignedHeaders=host;x-amz-date, "
                 "Signature=5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b");

    /* an SQS call (service defaults to sqs), accepted by the verifier as
     * the gateway sees it: the authority only as :authority */
    const struct sigv4_credentials acme = {"AKIDACME", "acme-secret", "us-east-1", NULL};
    const struct sigv4_header extra[] = {
        {SL_SLICE_LIT("content-type"), SL_SLICE_LIT("application/x-amz-json-1.0")},
        {SL_SLICE_LIT("x-amz-target"), SL_SLICE_LIT("AmazonSQS.CreateQueue")},
    };
    int64_t now = parse_date(NOW_DATE);
    assert_int_equal(sigv4_sign_sqs_request(&acme, "localhost:9324", "/", extra, 2,
                                            sl_slice_cstr(BODY), now, amz_date, &authz),
                     SL_OK);
    assert_string_equal(amz_date, NOW_DATE);
    assert_non_null(strstr(authz.p, "/us-east-1/sqs/aws4_request, "
                                    "SignedHeaders=content-type;host;x-amz-date;x-amz-target,"));
    struct treq t;
    treq_init(&t, "POST", "/", "", BODY);
    t.req.authority = SL_SLICE_LIT("localhost:9324");
    treq_add(&t, "content-type", "application/x-amz-json-1.0");
    treq_add(&t, "x-amz-date", amz_date);
    treq_add(&t, "x-amz-target", "AmazonSQS.CreateQueue");
    assert_int_equal(verify_with(&t.req, authz.p, "acme-secret", "us-east-1", "sqs", now, NULL),
                     SIGV4_FAIL_NONE);

    /* more extra headers than it signs */
    struct sigv4_header many[16];
    for (size_t i = 0; i < SL_ARRAY_LEN(many); i++) {
        many[i] = extra[0];
    }
    assert_int_equal(sigv4_sign_sqs_request(&acme, "localhost:9324", "/", many, SL_ARRAY_LEN(many),
                                            sl_slice_cstr(BODY), now, amz_date, &authz),
                     SL_EINVAL);
    sl_buf_free(&authz);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_iam_example_steps),
        cmocka_unit_test(test_iam_example_verify_and_sign),
        cmocka_unit_test(test_suite_duplicate_header),
        cmocka_unit_test(test_smithy_vectors),
        cmocka_unit_test(test_curl_vectors),
        cmocka_unit_test(test_baseline_and_wrong_secret),
        cmocka_unit_test(test_tampering),
        cmocka_unit_test(test_missing_signed_header),
        cmocka_unit_test(test_clock_skew),
        cmocka_unit_test(test_scope),
        cmocka_unit_test(test_security_token),
        cmocka_unit_test(test_unsigned_amz_header),
        cmocka_unit_test(test_payload_hash_header),
        cmocka_unit_test(test_signed_headers_rules),
        cmocka_unit_test(test_date_header_fallback),
        cmocka_unit_test(test_malformed_authorization),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_canonical_path_and_query),
        cmocka_unit_test(test_dates),
        cmocka_unit_test(test_key_cache),
        cmocka_unit_test(test_long_secret),
        cmocka_unit_test(test_authenticate),
        cmocka_unit_test(test_sign_sqs_request),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
