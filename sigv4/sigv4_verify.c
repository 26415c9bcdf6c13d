/*
 * sigv4_verify.c -- the server's side of SigV4: sigv4_verify checks a
 * parsed signature against a request and a secret, and sigv4_authenticate
 * is a server's whole check of one request (the Authorization header, the
 * principal's secret, then verify), so every listener verifies alike.
 * Not supported, by decision: presigned URLs (query-string auth),
 * temporary credentials (X-Amz-Security-Token), UNSIGNED-PAYLOAD and
 * streaming payloads (SQS never uses them, and accepting them would leave
 * the body unauthenticated), SigV4a.
 *
 * Threading: pure functions; the key cache passed in belongs to the
 * calling thread. Memory: bounded stack buffers only.
 */
#include <openssl/crypto.h>
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
        int hi = tx_hex_value(s.p[2 * i]);
        int lo = tx_hex_value(s.p[2 * i + 1]);
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

int sigv4_verify(const struct sigv4_request *req, const struct sigv4_auth *auth, const char *secret,
                 const char *region, const char *service, int64_t now_s,
                 struct sigv4_key_cache *cache, enum sigv4_failure *failure, const char **why)
{
    tx_set_why(why, "");
    if (failure) {
        *failure = SIGV4_FAIL_NONE;
    }
    if (sigv4__find_header(req, "x-amz-security-token")) {
        return tx_refuse(failure, why, SIGV4_FAIL_TOKEN,
                         "temporary credentials (X-Amz-Security-Token) are not supported");
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
    if (!sl_slice_eq_cstr(auth->region, region)) {
        return tx_refuse(failure, why, SIGV4_FAIL_SCOPE,
                         "the credential scope names another region");
    }
    if (!sl_slice_eq_cstr(auth->service, service)) {
        return tx_refuse(failure, why, SIGV4_FAIL_SCOPE,
                         "the credential scope names another service");
    }
    if (auth->date.n != 8 || memcmp(auth->date.p, amz_date.p, 8) != 0) {
        return tx_refuse(failure, why, SIGV4_FAIL_SCOPE,
                         "the credential scope date is not the day of the request date");
    }
    if (t > now_s + SIGV4_MAX_SKEW_S || t < now_s - SIGV4_MAX_SKEW_S) {
        return tx_refuse(failure, why, SIGV4_FAIL_EXPIRED,
                         "the request date is more than 15 minutes from the server's clock");
    }
    if (!list_has(auth->signed_headers, "host") && !list_has(auth->signed_headers, ":authority")) {
        return tx_refuse(failure, why, SIGV4_FAIL_INCOMPLETE,
                         "SignedHeaders must include host (or :authority)");
    }
    if (!list_has(auth->signed_headers, date_name)) {
        return tx_refuse(failure, why, SIGV4_FAIL_INCOMPLETE,
                         "SignedHeaders must include the date header");
    }
    if (unsigned_amz_header(req, auth->signed_headers) != NULL) {
        return tx_refuse(failure, why, SIGV4_FAIL_INCOMPLETE,
                         "SignedHeaders must include every x-amz-* header of the request, "
                         "X-Amz-Target among them");
    }
    uint8_t given[SIGV4_KEY_BYTES];
    if (!hex_decode32(auth->signature, given)) {
        return tx_refuse(failure, why, SIGV4_FAIL_INCOMPLETE, "Signature must be 64 hex digits");
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

int sigv4_authenticate(const struct sigv4_request *req, const struct sigv4_verifier *v,
                       enum sigv4_failure *failure, const char **why)
{
    tx_set_why(why, "");
    if (failure) {
        *failure = SIGV4_FAIL_NONE;
    }
    if (sigv4__find_header(req, "x-amz-security-token")) {
        return tx_refuse(failure, why, SIGV4_FAIL_TOKEN,
                         "temporary credentials (X-Amz-Security-Token) are not supported");
    }
    const struct sigv4_header *authz = sigv4__find_header(req, "authorization");
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
