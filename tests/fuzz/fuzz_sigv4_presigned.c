/*
 * fuzz_sigv4_presigned.c -- query-string authentication (presigned URLs)
 * from fuzzed bytes: the presigned parameters' parser, the access key
 * lookup a server does before the body, and the whole verification.
 *
 * Input, split into lines by '\n': 1 method, 2 path, 3 query, 4 authority,
 * then the body. The server's clock is the seed's signing time
 * (2026-11-25T12:00:00Z), so seeds reach the signature compare.
 */
#include <stdint.h>
#include <string.h>

#include "sigv4.h"
#include "sl.h"

#define SIGNED_AT 1795608000

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct sl_slice next_line(struct sl_slice *rest)
{
    const char *nl = memchr(rest->p, '\n', rest->n);
    size_t n = nl ? (size_t)(nl - rest->p) : rest->n;
    struct sl_slice line = {rest->p, n};
    rest->p += nl ? n + 1 : n;
    rest->n -= nl ? n + 1 : n;
    return line;
}

static int find(void *arg, struct sl_slice key, const char **secret)
{
    (void)arg;
    if (!sl_slice_eq_cstr(key, "AKIDEXAMPLE")) {
        return SL_ENOTFOUND;
    }
    *secret = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";
    return SL_OK;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct sl_slice rest = {(const char *)data, size};
    struct sigv4_request req = {0};
    req.method = next_line(&rest);
    req.path = next_line(&rest);
    req.query = next_line(&rest);
    req.authority = next_line(&rest);
    req.payload = rest;
    char buf[128];
    struct sl_slice key;
    enum sigv4_failure f;
    const char *why = NULL;
    bool presigned = sigv4_query_is_presigned(req.query);
    int rc = sigv4_presigned_access_key(req.query, buf, sizeof buf, &key, &f, &why);
    SL_ASSERT(rc == SL_OK || (rc == SL_EINVAL && f != SIGV4_FAIL_NONE && why != NULL));
    SL_ASSERT(rc != SL_OK || (presigned && key.n < sizeof buf));
    struct sigv4_key_cache *cache = sigv4_key_cache_new(4);
    for (int with_cache = 0; with_cache < 2; with_cache++) {
        rc = sigv4_verify_presigned(&req, "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "us-east-1",
                                    "sqs", SIGNED_AT, with_cache ? cache : NULL, &f, &why);
        SL_ASSERT(rc == SL_OK || (rc == SL_EINVAL && f != SIGV4_FAIL_NONE));
    }
    const struct sigv4_verifier v = {
        .region = "us-east-1",
        .service = "sqs",
        .now_s = SIGNED_AT,
        .cache = cache,
        .find_secret = find,
    };
    rc = sigv4_authenticate(&req, &v, &f, &why);
    SL_ASSERT(rc == SL_OK || rc == SL_EINVAL || rc == SL_ENOTFOUND);
    sigv4_key_cache_free(cache);
    return 0;
}
