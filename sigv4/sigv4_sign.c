/*
 * sigv4_sign.c -- the client's side of SigV4: sigv4_sign signs any
 * request with the canonicalisation the verifier uses, and
 * sigv4_sign_sqs_request is the one way sluice's own clients (sluicectl,
 * the load generator, the tests) sign an SQS call.
 *
 * Threading: pure functions. Memory: bounded stack buffers; the
 * Authorization value goes to the caller's sl_buf.
 */
#include <openssl/crypto.h>
#include <string.h>

#include "sigv4.h"
#include "sigv4_canon.h"
#include "sigv4_date.h"
#include "sigv4_key.h"
#include "sigv4_text.h"

#define STRING_TO_SIGN_MAX 512
#define SIGNED_LIST_MAX 4096
#define SQS_MAX_SIGNED_HEADERS 16 /* host, x-amz-date and the caller's extras */

/* ---- any request ------------------------------------------------------- */

static int cmp_name_ci(struct sl_slice a, struct sl_slice b)
{
    for (size_t i = 0; i < a.n && i < b.n; i++) {
        unsigned char x = (unsigned char)tx_lower(a.p[i]), y = (unsigned char)tx_lower(b.p[i]);
        if (x != y) {
            return x < y ? -1 : 1;
        }
    }
    return (a.n > b.n) - (a.n < b.n);
}

/* A name that can stand in a SignedHeaders list (any case: it is
 * lower-cased there). */
static bool valid_header_name(struct sl_slice name)
{
    if (name.n == 0) {
        return false;
    }
    for (size_t i = 0; i < name.n; i++) {
        char c = name.p[i];
        if (c <= ' ' || c == 0x7f || c == ',' || c == ';' || c == '=') {
            return false;
        }
    }
    return true;
}

/* Writes the sorted, de-duplicated, lower-cased names of req's headers,
 * joined with ';', into o. */
static int signed_list_of(const struct sigv4_request *req, struct tx_out *o)
{
    struct sl_slice names[SIGV4_MAX_SIGNED_HEADERS];
    size_t n = 0;
    for (size_t i = 0; i < req->header_count; i++) {
        struct sl_slice cur = req->headers[i].name;
        if (!valid_header_name(cur)) {
            return SL_EINVAL;
        }
        size_t k = 0;
        while (k < n && cmp_name_ci(names[k], cur) < 0) {
            k++;
        }
        if (k < n && cmp_name_ci(names[k], cur) == 0) {
            continue;
        }
        if (n == SIGV4_MAX_SIGNED_HEADERS) {
            return SL_ETOOBIG;
        }
        memmove(&names[k + 1], &names[k], (n - k) * sizeof names[0]);
        names[k] = cur;
        n++;
    }
    for (size_t i = 0; i < n; i++) {
        if (i > 0) {
            tx_byte(o, ';');
        }
        tx_lower_slice(o, names[i]);
    }
    return o->full ? SL_ETOOBIG : SL_OK;
}

int sigv4_sign(const struct sigv4_request *req, const char *access_key_id, const char *secret,
               const char *region, const char *service, const char amz_date[17],
               struct sl_buf *authorization)
{
    struct sl_slice date = {amz_date, strnlen(amz_date, 17)};
    int64_t ignored;
    const struct sigv4_header *date_hdr = sigv4__find_header(req, "x-amz-date");
    if (!sigv4__parse_amz_date(date, &ignored) || !date_hdr ||
        !sl_slice_eq(tx_trim(date_hdr->value), date)) {
        return SL_EINVAL;
    }
    if (!sigv4__find_header(req, "host") && !sigv4__find_header(req, ":authority")) {
        return SL_EINVAL;
    }
    char list[SIGNED_LIST_MAX];
    struct tx_out lo = {list, 0, sizeof list, false};
    int rc = signed_list_of(req, &lo);
    if (rc != SL_OK) {
        return rc;
    }
    struct sl_slice signed_headers = {list, lo.n};

    char body_hash[SIGV4_HASH_HEX + 1];
    struct sl_slice payload_hash;
    const struct sigv4_header *content_sha = sigv4__find_header(req, "x-amz-content-sha256");
    if (content_sha) {
        payload_hash = tx_trim(content_sha->value);
    } else {
        sigv4__sha256_hex(NULL, req->payload.p, req->payload.n, body_hash);
        payload_hash = (struct sl_slice){body_hash, SIGV4_HASH_HEX};
    }

    char canonical[SIGV4_MAX_CANONICAL];
    size_t canonical_len;
    rc = sigv4__canonical_request(req, signed_headers, payload_hash, canonical, sizeof canonical,
                                  &canonical_len, NULL);
    if (rc != SL_OK) {
        return rc == SL_ETOOBIG ? SL_ETOOBIG : SL_EINVAL;
    }
    struct sl_slice reg = sl_slice_cstr(region), svc = sl_slice_cstr(service);
    char sts[STRING_TO_SIGN_MAX];
    size_t sts_len =
        sigv4__string_to_sign(NULL, date, reg, svc, canonical, canonical_len, sts, sizeof sts);
    if (sts_len == 0) {
        return SL_ETOOBIG;
    }
    uint8_t key[SIGV4_KEY_BYTES];
    uint8_t mac[SIGV4_KEY_BYTES];
    sigv4__derive_key(sl_slice_cstr(secret), (struct sl_slice){amz_date, 8}, reg, svc, key);
    sigv4__hmac_sha256(NULL, key, sizeof key, (struct sl_slice){sts, sts_len}, mac);
    OPENSSL_cleanse(key, sizeof key);
    char sig[2 * SIGV4_KEY_BYTES + 1];
    sl_hex_encode(mac, sizeof mac, sig);

    sl_buf_printf(authorization,
                  SIGV4_ALGORITHM " Credential=%s/%.8s/%s/%s/aws4_request, SignedHeaders=%.*s, "
                                  "Signature=%s",
                  access_key_id, amz_date, region, service, (int)signed_headers.n, signed_headers.p,
                  sig);
    return SL_OK;
}

/* ---- an SQS call ------------------------------------------------------- */

int sigv4_sign_sqs_request(const struct sigv4_credentials *cred, const char *authority,
                           const char *path, const struct sigv4_header *extra, size_t extra_count,
                           struct sl_slice body, int64_t now_s, char amz_date[17],
                           struct sl_buf *authorization)
{
    if (extra_count + 2 > SQS_MAX_SIGNED_HEADERS) {
        return SL_EINVAL;
    }
    sigv4_amz_date(now_s, amz_date);
    struct sigv4_header headers[SQS_MAX_SIGNED_HEADERS];
    size_t n = 0;
    headers[n++] = (struct sigv4_header){SL_SLICE_LIT("host"), sl_slice_cstr(authority)};
    for (size_t i = 0; i < extra_count; i++) {
        headers[n++] = extra[i];
    }
    headers[n++] = (struct sigv4_header){SL_SLICE_LIT("x-amz-date"), {amz_date, 16}};
    struct sigv4_request req = {
        .method = SL_SLICE_LIT("POST"),
        .path = sl_slice_cstr(path),
        .query = SL_SLICE_LIT(""),
        .headers = headers,
        .header_count = n,
        .payload = body,
        .authority = sl_slice_cstr(authority),
    };
    sl_buf_reset(authorization);
    return sigv4_sign(&req, cred->access_key_id, cred->secret, cred->region,
                      cred->service ? cred->service : "sqs", amz_date, authorization);
}
