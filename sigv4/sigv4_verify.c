/*
 * sigv4_verify.c -- the server's side of SigV4: sigv4_verify checks a
 * parsed signature against a request and a secret, and sigv4_authenticate
 * is a server's whole check of one request (the Authorization header, the
 * principal's secret, then verify), so every listener verifies alike.
 * Query-string authentication (presigned URLs, "Authenticating Requests:
 * Using Query Parameters" in the AWS SigV4 reference) is accepted too:
 * X-Amz-Algorithm, X-Amz-Credential, X-Amz-Date, X-Amz-Expires,
 * X-Amz-SignedHeaders and X-Amz-Signature in the query, the canonical
 * query without X-Amz-Signature, the payload hash the body's SHA-256 as
 * botocore's SigV4QueryAuth signs it (it moves a query-protocol form into
 * the query and sends no body) or X-Amz-Content-Sha256 from the query,
 * and the request is good from X-Amz-Date (less the 15 minutes of skew)
 * to X-Amz-Date + X-Amz-Expires.
 * Not supported, by decision: temporary credentials
 * (X-Amz-Security-Token), UNSIGNED-PAYLOAD with a body and streaming
 * payloads (SQS never uses them, and accepting them would leave the body
 * unauthenticated), SigV4a.
 *
 * Threading: pure functions; the key cache passed in belongs to the
 * calling thread. Memory: bounded stack buffers only.
 */
#include <openssl/crypto.h>
#include <stdio.h>
#include <string.h>

#include "sigv4.h"
#include "sigv4_canon.h"
#include "sigv4_date.h"
#include "sigv4_key.h"
#include "sigv4_text.h"

#define STRING_TO_SIGN_MAX 512

static bool hex_decode32(struct sl_slice s, uint8_t out[32])
{
    if (s.n != 64) {
        return false;
    }
    for (size_t i = 0; i < 32; i++) {
        int hi = sl_hex_digit(s.p[2 * i]);
        int lo = sl_hex_digit(s.p[2 * i + 1]);
        if (hi < 0 || lo < 0) {
            return false;
        }
        out[i] = (uint8_t)(hi << 4 | lo);
    }
    return true;
}

static bool list_has_slice(struct sl_slice list, struct sl_slice n)
{
    size_t start = 0;
    for (size_t j = 0; j <= list.n; j++) {
        if (j < list.n && list.p[j] != ';') {
            continue;
        }
        if (tx_eq_ci((struct sl_slice){list.p + start, j - start}, n)) {
            return true;
        }
        start = j + 1;
    }
    return false;
}

static bool list_has(struct sl_slice list, const char *name)
{
    return list_has_slice(list, sl_slice_cstr(name));
}

/* AWS refuses a request whose signature leaves out a header that says
 * what the request does: the action (X-Amz-Target) and every other
 * x-amz-* header. Otherwise a captured signature over host and date could
 * carry another action (a ListQueueTags signature replayed as PurgeQueue).
 * Content-Type is not required: the AWS SDK for JavaScript v2 never signs
 * it, and the action of a form-encoded request is in the signed body.
 * Returns the first such header left unsigned, or NULL. */
static const struct sigv4_header *unsigned_amz_header(const struct sigv4_request *req,
                                                      struct sl_slice signed_headers)
{
    const struct sl_slice prefix = SL_SLICE_LIT("x-amz-");
    for (size_t i = 0; i < req->header_count; i++) {
        struct sl_slice name = req->headers[i].name;
        if (name.n >= prefix.n && tx_eq_ci((struct sl_slice){name.p, prefix.n}, prefix) &&
            !list_has_slice(signed_headers, name)) {
            return &req->headers[i];
        }
    }
    return NULL;
}

/* Maps a canonicalisation failure to what the client is told. */
static enum sigv4_failure canon_failure(int rc)
{
    return rc == SL_ENOTFOUND ? SIGV4_FAIL_MISMATCH : SIGV4_FAIL_INCOMPLETE;
}

/* Resets the outputs, and refuses temporary credentials (every check
 * starts here). */
static int begin_check(const struct sigv4_request *req, enum sigv4_failure *failure,
                       const char **why)
{
    tx_set_why(why, "");
    if (failure) {
        *failure = SIGV4_FAIL_NONE;
    }
    if (sigv4__find_header(req, "x-amz-security-token")) {
        return tx_refuse(failure, why, SIGV4_FAIL_TOKEN,
                         "temporary credentials (X-Amz-Security-Token) are not supported");
    }
    return SL_OK;
}

/* The credential scope against the server and the request's date (both
 * forms). */
static int check_scope(const struct sigv4_auth *auth, struct sl_slice amz_date, const char *region,
                       const char *service, enum sigv4_failure *failure, const char **why)
{
    if (!sl_slice_eq_cstr(auth->region, region)) {
        return tx_refuse(failure, why, SIGV4_FAIL_SCOPE,
                         "the credential scope names another region");
    }
    if (!sl_slice_eq_cstr(auth->service, service)) {
        return tx_refuse(failure, why, SIGV4_FAIL_SCOPE,
                         "the credential scope names another service");
    }
    if (auth->date.n != 8 || amz_date.n < 8 || memcmp(auth->date.p, amz_date.p, 8) != 0) {
        return tx_refuse(failure, why, SIGV4_FAIL_SCOPE,
                         "the credential scope date is not the day of the request date");
    }
    return SL_OK;
}

/* What must be signed (host or :authority, date_header unless NULL, every
 * x-amz-* header), and the signature decoded into given (both forms). */
static int check_signed(const struct sigv4_request *req, const struct sigv4_auth *auth,
                        const char *date_header, uint8_t given[SIGV4_KEY_BYTES],
                        enum sigv4_failure *failure, const char **why)
{
    if (!list_has(auth->signed_headers, "host") && !list_has(auth->signed_headers, ":authority")) {
        return tx_refuse(failure, why, SIGV4_FAIL_INCOMPLETE,
                         "SignedHeaders must include host (or :authority)");
    }
    if (date_header != NULL && !list_has(auth->signed_headers, date_header)) {
        return tx_refuse(failure, why, SIGV4_FAIL_INCOMPLETE,
                         "SignedHeaders must include the date header");
    }
    if (unsigned_amz_header(req, auth->signed_headers) != NULL) {
        return tx_refuse(failure, why, SIGV4_FAIL_INCOMPLETE,
                         "SignedHeaders must include every x-amz-* header of the request, "
                         "X-Amz-Target among them");
    }
    if (!hex_decode32(auth->signature, given)) {
        return tx_refuse(failure, why, SIGV4_FAIL_INCOMPLETE, "Signature must be 64 hex digits");
    }
    return SL_OK;
}

/* The canonical request, the string to sign and the MAC of a request
 * whose every other check passed; given is the decoded signature. */
static int check_signature(const struct sigv4_request *req, const struct sigv4_auth *auth,
                           const char *secret, struct sl_slice amz_date,
                           struct sl_slice payload_hash, const uint8_t given[SIGV4_KEY_BYTES],
                           struct sigv4_key_cache *cache, enum sigv4_failure *failure,
                           const char **why)
{
    struct sigv4__crypto *cr = sigv4__key_cache_crypto(cache);
    char canonical[SIGV4_MAX_CANONICAL];
    size_t canonical_len;
    int rc = sigv4__canonical_request(req, auth->signed_headers, payload_hash, canonical,
                                      sizeof canonical, &canonical_len, why);
    if (rc != SL_OK) {
        if (failure) {
            *failure = canon_failure(rc);
        }
        return SL_EINVAL; /* *why was set by the canonicalisation */
    }
    char sts[STRING_TO_SIGN_MAX];
    size_t sts_len = sigv4__string_to_sign(cr, amz_date, auth->region, auth->service, canonical,
                                           canonical_len, sts, sizeof sts);
    if (sts_len == 0) {
        return tx_refuse(failure, why, SIGV4_FAIL_INCOMPLETE,
                         "the credential scope is longer than the verifier allows");
    }
    uint8_t key[SIGV4_KEY_BYTES];
    uint8_t mac[SIGV4_KEY_BYTES];
    sigv4__signing_key(cache, auth->access_key_id, sl_slice_cstr(secret), auth->date, auth->region,
                       auth->service, key, NULL);
    sigv4__hmac_sha256(cr, key, sizeof key, (struct sl_slice){sts, sts_len}, mac);
    OPENSSL_cleanse(key, sizeof key);
    if (CRYPTO_memcmp(mac, given, sizeof mac) != 0) {
        return tx_refuse(failure, why, SIGV4_FAIL_MISMATCH, "the signature does not match");
    }
    tx_set_why(why, "");
    return SL_OK;
}

int sigv4_verify(const struct sigv4_request *req, const struct sigv4_auth *auth, const char *secret,
                 const char *region, const char *service, int64_t now_s,
                 struct sigv4_key_cache *cache, enum sigv4_failure *failure, const char **why)
{
    if (begin_check(req, failure, why) != SL_OK) {
        return SL_EINVAL;
    }
    const char *date_name = "x-amz-date";
    const struct sigv4_header *date_hdr = sigv4__find_header(req, date_name);
    if (!date_hdr) {
        date_name = "date";
        date_hdr = sigv4__find_header(req, date_name);
    }
    if (!date_hdr) {
        return tx_refuse(failure, why, SIGV4_FAIL_INCOMPLETE,
                         "the request has neither an x-amz-date nor a date header");
    }
    struct sl_slice amz_date = tx_trim(date_hdr->value);
    int64_t t;
    if (!sigv4__parse_amz_date(amz_date, &t)) {
        return tx_refuse(failure, why, SIGV4_FAIL_INCOMPLETE,
                         "the request date must be in ISO 8601 basic format, YYYYMMDD'T'HHMMSS'Z'");
    }
    if (check_scope(auth, amz_date, region, service, failure, why) != SL_OK) {
        return SL_EINVAL;
    }
    if (t > now_s + SIGV4_MAX_SKEW_S || t < now_s - SIGV4_MAX_SKEW_S) {
        return tx_refuse(failure, why, SIGV4_FAIL_EXPIRED,
                         "the request date is more than 15 minutes from the server's clock");
    }
    uint8_t given[SIGV4_KEY_BYTES];
    if (check_signed(req, auth, date_name, given, failure, why) != SL_OK) {
        return SL_EINVAL;
    }

    struct sigv4__crypto *cr = sigv4__key_cache_crypto(cache);
    char body_hash[SIGV4_HASH_HEX + 1];
    sigv4__sha256_hex(cr, req->payload.p, req->payload.n, body_hash);
    struct sl_slice payload_hash = {body_hash, SIGV4_HASH_HEX};
    const struct sigv4_header *content_sha = sigv4__find_header(req, "x-amz-content-sha256");
    if (content_sha) {
        struct sl_slice claimed = tx_trim(content_sha->value);
        if (!tx_eq_ci(claimed, payload_hash)) {
            return tx_refuse(failure, why, SIGV4_FAIL_MISMATCH,
                             sl_slice_eq_cstr(claimed, "UNSIGNED-PAYLOAD")
                                 ? "UNSIGNED-PAYLOAD is not accepted: the body must be signed"
                                 : "x-amz-content-sha256 is not the SHA-256 of the body");
        }
        payload_hash = claimed; /* as the client wrote it into its canonical request */
    }

    return check_signature(req, auth, secret, amz_date, payload_hash, given, cache, failure, why);
}

/* ---- query-string authentication (presigned URLs) ---------------------- */

#define PRESIGNED_VALUE_MAX 512
#define PRESIGNED_MAX_EXPIRES ((int64_t)7 * 24 * 3600) /* a week, as AWS allows */

/* The next '&'-separated piece of a query from *at (which it advances);
 * false once the query is used up. Pieces may be empty. */
static bool next_param(struct sl_slice query, size_t *at, struct sl_slice *piece)
{
    if (*at > query.n) {
        return false;
    }
    const char *amp = *at < query.n ? memchr(query.p + *at, '&', query.n - *at) : NULL;
    size_t end = amp != NULL ? (size_t)(amp - query.p) : query.n;
    *piece = (struct sl_slice){query.p + *at, end - *at};
    *at = end + 1;
    return true;
}

/* Percent-decodes the value of the first query parameter named name into
 * buf[cap] ('+' stays itself, as SigV4 reads it). Returns 1 when found
 * (*out set), 0 when absent, -1 when over cap or badly encoded. */
static int query_value(struct sl_slice query, const char *name, char *buf, size_t cap,
                       struct sl_slice *out)
{
    size_t nl = strlen(name);
    size_t at = 0;
    struct sl_slice piece;
    while (next_param(query, &at, &piece)) {
        if (piece.n <= nl || memcmp(piece.p, name, nl) != 0 || piece.p[nl] != '=') {
            continue;
        }
        size_t o = 0;
        for (size_t i = nl + 1; i < piece.n; i++) {
            char c = piece.p[i];
            if (c == '%') {
                int hi = i + 2 < piece.n ? sl_hex_digit(piece.p[i + 1]) : -1;
                int lo = i + 2 < piece.n ? sl_hex_digit(piece.p[i + 2]) : -1;
                if (hi < 0 || lo < 0) {
                    return -1;
                }
                c = (char)(hi << 4 | lo);
                i += 2;
            }
            if (o + 1 >= cap) {
                return -1;
            }
            buf[o++] = c;
        }
        buf[o] = '\0';
        *out = (struct sl_slice){buf, o};
        return 1;
    }
    return 0;
}

bool sigv4_query_is_presigned(struct sl_slice query)
{
    char buf[8];
    struct sl_slice v;
    return query_value(query, "X-Amz-Algorithm", buf, sizeof buf, &v) != 0 ||
           query_value(query, "X-Amz-Signature", buf, sizeof buf, &v) != 0 ||
           query_value(query, "X-Amz-Credential", buf, sizeof buf, &v) != 0;
}

/* The parts of a presigned query, decoded into the caller's buffers. */
struct presigned {
    struct sigv4_auth auth; /* borrows from authz */
    struct sl_slice amz_date;
    int64_t expires;
    char authz[4 * PRESIGNED_VALUE_MAX];
    char date[PRESIGNED_VALUE_MAX];
};

static int parse_presigned(struct sl_slice query, struct presigned *ps, enum sigv4_failure *failure,
                           const char **why)
{
    char alg[PRESIGNED_VALUE_MAX], cred[PRESIGNED_VALUE_MAX], signed_h[PRESIGNED_VALUE_MAX];
    char sig[PRESIGNED_VALUE_MAX], exp[PRESIGNED_VALUE_MAX], token[8];
    struct sl_slice a, c, sh, sg, e, t;
    if (query_value(query, "X-Amz-Security-Token", token, sizeof token, &t) != 0) {
        return tx_refuse(failure, why, SIGV4_FAIL_TOKEN,
                         "temporary credentials (X-Amz-Security-Token) are not supported");
    }
    if (query_value(query, "X-Amz-Algorithm", alg, sizeof alg, &a) != 1 ||
        query_value(query, "X-Amz-Credential", cred, sizeof cred, &c) != 1 ||
        query_value(query, "X-Amz-Date", ps->date, sizeof ps->date, &ps->amz_date) != 1 ||
        query_value(query, "X-Amz-Expires", exp, sizeof exp, &e) != 1 ||
        query_value(query, "X-Amz-SignedHeaders", signed_h, sizeof signed_h, &sh) != 1 ||
        query_value(query, "X-Amz-Signature", sig, sizeof sig, &sg) != 1) {
        return tx_refuse(failure, why, SIGV4_FAIL_INCOMPLETE,
                         "a presigned request needs X-Amz-Algorithm, X-Amz-Credential, "
                         "X-Amz-Date, X-Amz-Expires, X-Amz-SignedHeaders and X-Amz-Signature");
    }
    int expires = 0;
    if (e.n == 0 || e.n > 6 || !tx_parse_digits(e.p, e.n, &expires) || expires < 1 ||
        expires > PRESIGNED_MAX_EXPIRES) {
        return tx_refuse(failure, why, SIGV4_FAIL_MALFORMED,
                         "X-Amz-Expires must be a number of seconds from 1 to 604800");
    }
    ps->expires = expires;
    /* the same parts as the header form: one parser checks both */
    int n = snprintf(ps->authz, sizeof ps->authz,
                     "%.*s Credential=%.*s, SignedHeaders=%.*s, Signature=%.*s", (int)a.n, a.p,
                     (int)c.n, c.p, (int)sh.n, sh.p, (int)sg.n, sg.p);
    if (n < 0 || (size_t)n >= sizeof ps->authz) {
        return tx_refuse(failure, why, SIGV4_FAIL_MALFORMED, "the presigned query is too long");
    }
    return sigv4_parse_authorization((struct sl_slice){ps->authz, (size_t)n}, &ps->auth, failure,
                                     why);
}

int sigv4_presigned_access_key(struct sl_slice query, char *buf, size_t cap,
                               struct sl_slice *access_key_id, enum sigv4_failure *failure,
                               const char **why)
{
    struct presigned ps;
    int rc = parse_presigned(query, &ps, failure, why);
    if (rc != SL_OK) {
        return rc;
    }
    if (ps.auth.access_key_id.n >= cap) {
        return tx_refuse(failure, why, SIGV4_FAIL_MALFORMED, "the access key id is too long");
    }
    memcpy(buf, ps.auth.access_key_id.p, ps.auth.access_key_id.n);
    buf[ps.auth.access_key_id.n] = '\0';
    *access_key_id = (struct sl_slice){buf, ps.auth.access_key_id.n};
    return SL_OK;
}

/* req's query without its X-Amz-Signature parameter, into buf[cap]. */
static bool query_without_signature(struct sl_slice query, char *buf, size_t cap,
                                    struct sl_slice *out)
{
    static const char name[] = "X-Amz-Signature=";
    size_t o = 0;
    size_t at = 0;
    struct sl_slice piece;
    while (next_param(query, &at, &piece)) {
        if (piece.n == 0 ||
            (piece.n >= sizeof name - 1 && memcmp(piece.p, name, sizeof name - 1) == 0)) {
            continue;
        }
        if (o + piece.n + 1 > cap) {
            return false;
        }
        if (o > 0) {
            buf[o++] = '&';
        }
        memcpy(buf + o, piece.p, piece.n);
        o += piece.n;
    }
    *out = (struct sl_slice){buf, o};
    return true;
}

int sigv4_verify_presigned(const struct sigv4_request *req, const char *secret, const char *region,
                           const char *service, int64_t now_s, struct sigv4_key_cache *cache,
                           enum sigv4_failure *failure, const char **why)
{
    if (begin_check(req, failure, why) != SL_OK) {
        return SL_EINVAL;
    }
    struct presigned ps;
    int rc = parse_presigned(req->query, &ps, failure, why);
    if (rc != SL_OK) {
        return rc;
    }
    const struct sigv4_auth *auth = &ps.auth;
    int64_t t;
    if (!sigv4__parse_amz_date(ps.amz_date, &t)) {
        return tx_refuse(failure, why, SIGV4_FAIL_INCOMPLETE,
                         "X-Amz-Date must be in ISO 8601 basic format, YYYYMMDD'T'HHMMSS'Z'");
    }
    if (check_scope(auth, ps.amz_date, region, service, failure, why) != SL_OK) {
        return SL_EINVAL;
    }
    if (now_s > t + ps.expires) {
        return tx_refuse(failure, why, SIGV4_FAIL_EXPIRED,
                         "the presigned request has expired (X-Amz-Date + X-Amz-Expires)");
    }
    if (t > now_s + SIGV4_MAX_SKEW_S) {
        return tx_refuse(failure, why, SIGV4_FAIL_EXPIRED,
                         "X-Amz-Date is more than 15 minutes ahead of the server's clock");
    }
    uint8_t given[SIGV4_KEY_BYTES];
    if (check_signed(req, auth, NULL, given, failure, why) != SL_OK) {
        return SL_EINVAL;
    }
    /* The payload hash is the body's SHA-256, as botocore's SigV4QueryAuth
     * signs it (of the empty body, after it moved a form into the query),
     * or what X-Amz-Content-Sha256 says: UNSIGNED-PAYLOAD only for an
     * empty body, so a body is never left unsigned. */
    char body_hash[SIGV4_HASH_HEX + 1];
    sigv4__sha256_hex(sigv4__key_cache_crypto(cache), req->payload.p, req->payload.n, body_hash);
    struct sl_slice payload_hash = {body_hash, SIGV4_HASH_HEX};
    char claimed_buf[PRESIGNED_VALUE_MAX];
    struct sl_slice claimed;
    int has_claim =
        query_value(req->query, "X-Amz-Content-Sha256", claimed_buf, sizeof claimed_buf, &claimed);
    if (has_claim < 0) {
        return tx_refuse(failure, why, SIGV4_FAIL_MALFORMED, "X-Amz-Content-Sha256 is malformed");
    }
    if (has_claim == 1) {
        bool unsigned_ok = req->payload.n == 0 && sl_slice_eq_cstr(claimed, "UNSIGNED-PAYLOAD");
        if (!unsigned_ok && !tx_eq_ci(claimed, payload_hash)) {
            return tx_refuse(failure, why, SIGV4_FAIL_MISMATCH,
                             "X-Amz-Content-Sha256 is not the SHA-256 of the body");
        }
        payload_hash = claimed;
    }
    char query_buf[SIGV4_MAX_CANONICAL];
    struct sigv4_request unsigned_req = *req;
    if (!query_without_signature(req->query, query_buf, sizeof query_buf, &unsigned_req.query)) {
        return tx_refuse(failure, why, SIGV4_FAIL_INCOMPLETE,
                         "the query is longer than the verifier allows");
    }
    return check_signature(&unsigned_req, auth, secret, ps.amz_date, payload_hash, given, cache,
                           failure, why);
}

int sigv4_authenticate(const struct sigv4_request *req, const struct sigv4_verifier *v,
                       enum sigv4_failure *failure, const char **why)
{
    if (begin_check(req, failure, why) != SL_OK) {
        return SL_EINVAL;
    }
    const struct sigv4_header *authz = sigv4__find_header(req, "authorization");
    if (!authz && sigv4_query_is_presigned(req->query)) {
        char key_buf[PRESIGNED_VALUE_MAX];
        struct sl_slice key;
        int rc =
            sigv4_presigned_access_key(req->query, key_buf, sizeof key_buf, &key, failure, why);
        if (rc != SL_OK) {
            return rc;
        }
        const char *secret = NULL;
        if (v->find_secret(v->arg, key, &secret) != SL_OK || secret == NULL) {
            tx_refuse(failure, why, SIGV4_FAIL_UNKNOWN_KEY, "the access key is not known here");
            return SL_ENOTFOUND;
        }
        return sigv4_verify_presigned(req, secret, v->region, v->service, v->now_s, v->cache,
                                      failure, why);
    }
    if (!authz) {
        return tx_refuse(failure, why, SIGV4_FAIL_MISSING,
                         "the request has no Authorization header");
    }
    struct sigv4_auth auth;
    int rc = sigv4_parse_authorization(authz->value, &auth, failure, why);
    if (rc != SL_OK) {
        return rc;
    }
    const char *secret = NULL;
    if (v->find_secret(v->arg, auth.access_key_id, &secret) != SL_OK || secret == NULL) {
        tx_refuse(failure, why, SIGV4_FAIL_UNKNOWN_KEY, "the access key is not known here");
        return SL_ENOTFOUND;
    }
    return sigv4_verify(req, &auth, secret, v->region, v->service, v->now_s, v->cache, failure,
                        why);
}
