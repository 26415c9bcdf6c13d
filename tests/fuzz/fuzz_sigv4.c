/*
 * fuzz_sigv4.c -- drives the SigV4 code from fuzzed bytes: the
 * Authorization parser, the canonical request, verify (with a key cache)
 * and sign, and checks that whatever sigv4_sign produces, verify
 * accepts.
 *
 * Input, split into lines by '\n':
 *   1 Authorization value   2 method   3 path   4 query   5 authority
 *   (these five may be empty), then headers "name:value" (split at the
 *   first ':' after the first byte, so ":authority:host" is a
 *   pseudo-header) up to an empty line; everything after it is the body.
 * The clock is the request's own x-amz-date and the gateway answers as
 * the scope's region and service, so inputs reach the signature compare
 * rather than stopping at the skew and scope checks.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sigv4.h"
#include "sigv4_canon.h"
#include "sigv4_date.h"
#include "sl.h"

#define MAX_FIELDS 5
#define MAX_HEADERS 64
#define SCOPE_MAX 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct sl_slice next_line(struct sl_slice *rest, bool *blank)
{
    const char *nl = memchr(rest->p, '\n', rest->n);
    size_t n = nl ? (size_t)(nl - rest->p) : rest->n;
    struct sl_slice line = {rest->p, n};
    rest->p += nl ? n + 1 : n;
    rest->n -= nl ? n + 1 : n;
    *blank = nl && n == 0;
    return line;
}

static void copy_cstr(char *dst, struct sl_slice s)
{
    size_t n = SL_MIN(s.n, (size_t)SCOPE_MAX);
    memcpy(dst, s.p, n);
    dst[n] = '\0';
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct sigv4_key_cache *cache;
    if (!cache) {
        cache = sigv4_key_cache_new(4);
    }
    struct sl_slice rest = {(const char *)data, size};
    struct sl_slice field[MAX_FIELDS] = {{0}};
    struct sigv4_header headers[MAX_HEADERS];
    size_t nh = 0;
    size_t nf = 0;
    bool blank = false;
    while (rest.n > 0) {
        struct sl_slice line = next_line(&rest, &blank);
        if (nf < MAX_FIELDS) {
            field[nf++] = line; /* the fixed fields may be empty */
            continue;
        }
        if (blank) {
            break;
        }
        const char *colon = line.n > 1 ? memchr(line.p + 1, ':', line.n - 1) : NULL;
        if (colon && nh < MAX_HEADERS) {
            size_t name_len = (size_t)(colon - line.p);
            headers[nh++] =
                (struct sigv4_header){{line.p, name_len}, {colon + 1, line.n - name_len - 1}};
        }
    }
    struct sigv4_request req = {
        .method = field[1],
        .path = field[2],
        .query = field[3],
        .headers = headers,
        .header_count = nh,
        .payload = rest,
        .authority = field[4],
    };

    /* x-amz-date (first of them) sets the clock. */
    struct sl_slice amz_date = {NULL, 0};
    int64_t now = 0;
    for (size_t i = 0; i < nh; i++) {
        if (headers[i].name.n == 10 && strncasecmp(headers[i].name.p, "x-amz-date", 10) == 0) {
            amz_date = headers[i].value;
            break;
        }
    }
    bool dated = amz_date.n > 0 && sigv4__parse_amz_date(amz_date, &now);

    struct sigv4_auth auth;
    const char *why = NULL;
    char region[SCOPE_MAX + 1] = "us-east-1", service[SCOPE_MAX + 1] = "sqs";
    enum sigv4_failure failure;
    if (sigv4_parse_authorization(field[0], &auth, &failure, &why) == SL_OK) {
        copy_cstr(region, auth.region);
        copy_cstr(service, auth.service);
        /* Both paths (cached contexts, one-shot OpenSSL) reach one verdict. */
        enum sigv4_failure cached, uncached;
        int rc1 =
            sigv4_verify(&req, &auth, "fuzz-secret", region, service, now, cache, &cached, &why);
        int rc2 =
            sigv4_verify(&req, &auth, "fuzz-secret", region, service, now, NULL, &uncached, &why);
        if (rc1 != rc2 || cached != uncached || (rc1 == SL_OK) != (cached == SIGV4_FAIL_NONE)) {
            abort();
        }
    }

    /* The canonical request alone, with the fuzzed list (or a fixed one). */
    static char canon[SIGV4_MAX_CANONICAL];
    size_t len;
    struct sl_slice list = field[0].n > 0 && field[0].n < 512 ? field[0] : SL_SLICE_LIT("host");
    if (sigv4__canonical_request(&req, list, SL_SLICE_LIT("UNSIGNED-PAYLOAD"), canon, sizeof canon,
                                 &len, &why) == SL_OK &&
        (len >= sizeof canon || canon[len] != '\0')) {
        abort();
    }

    /* Whatever the signer signs, the verifier accepts. */
    if (dated && amz_date.n == 16) {
        char date[17];
        memcpy(date, amz_date.p, 16);
        date[16] = '\0';
        struct sl_buf authz;
        sl_buf_init(&authz);
        bool token = false, content_sha = false;
        for (size_t i = 0; i < nh; i++) {
            token |= headers[i].name.n == 20 &&
                     strncasecmp(headers[i].name.p, "x-amz-security-token", 20) == 0;
            content_sha |= headers[i].name.n == 20 &&
                           strncasecmp(headers[i].name.p, "x-amz-content-sha256", 20) == 0;
        }
        if (sigv4_sign(&req, "AKIDFUZZ", "fuzz-secret", region, service, date, &authz) == SL_OK &&
            !token && !content_sha &&
            sigv4_parse_authorization((struct sl_slice){authz.p, authz.n}, &auth, &failure, &why) ==
                SL_OK) {
            if (sigv4_verify(&req, &auth, "fuzz-secret", region, service, now, cache, &failure,
                             &why) != SL_OK) {
                abort();
            }
        }
        sl_buf_free(&authz);
    }
    return 0;
}
