/*
 * sigv4_authz.c -- the Authorization header of SigV4, "AWS4-HMAC-SHA256
 * Credential=KEY/DATE/REGION/SERVICE/aws4_request, SignedHeaders=...,
 * Signature=...", split into its parts and checked for form only (what
 * the parts mean is sigv4_verify's business).
 *
 * Threading: pure functions; the parts borrow from the header value.
 */
#include <string.h>

#include "sigv4.h"
#include "sigv4_text.h"

static bool valid_scope_part(struct sl_slice s)
{
    if (s.n == 0) {
        return false;
    }
    for (size_t i = 0; i < s.n; i++) {
        char c = s.p[i];
        if (c <= ' ' || c == 0x7f || c == ',' || c == '/') {
            return false;
        }
    }
    return true;
}

static bool valid_signed_headers(struct sl_slice s)
{
    if (s.n == 0 || s.p[0] == ';' || s.p[s.n - 1] == ';') {
        return false;
    }
    for (size_t i = 0; i < s.n; i++) {
        char c = s.p[i];
        if (c <= ' ' || c == 0x7f || c == ',' || c == '=' || (c >= 'A' && c <= 'Z') ||
            (c == ';' && s.p[i + 1] == ';')) {
            return false;
        }
    }
    return true;
}

static int parse_credential(struct sl_slice v, struct sigv4_auth *out, enum sigv4_failure *failure,
                            const char **why)
{
    struct sl_slice part[5];
    size_t np = 0;
    size_t start = 0;
    for (size_t j = 0; j <= v.n; j++) {
        if (j < v.n && v.p[j] != '/') {
            continue;
        }
        if (np == 5) {
            return tx_refuse(failure, why, SIGV4_FAIL_MALFORMED,
                             "Credential has more than five '/'-separated parts");
        }
        part[np++] = (struct sl_slice){v.p + start, j - start};
        start = j + 1;
    }
    if (np != 5) {
        return tx_refuse(failure, why, SIGV4_FAIL_MALFORMED,
                         "Credential must be KEY/YYYYMMDD/REGION/SERVICE/aws4_request");
    }
    int ignored;
    if (!valid_scope_part(part[0]) || part[1].n != 8 || !tx_parse_digits(part[1].p, 8, &ignored) ||
        !valid_scope_part(part[2]) || !valid_scope_part(part[3])) {
        return tx_refuse(failure, why, SIGV4_FAIL_MALFORMED,
                         "Credential must be KEY/YYYYMMDD/REGION/SERVICE/aws4_request");
    }
    if (!sl_slice_eq_cstr(part[4], "aws4_request")) {
        return tx_refuse(failure, why, SIGV4_FAIL_MALFORMED,
                         "Credential scope must end in aws4_request");
    }
    out->access_key_id = part[0];
    out->date = part[1];
    out->region = part[2];
    out->service = part[3];
    return SL_OK;
}

int sigv4_parse_authorization(struct sl_slice value, struct sigv4_auth *out,
                              enum sigv4_failure *failure, const char **why)
{
    memset(out, 0, sizeof *out);
    if (failure) {
        *failure = SIGV4_FAIL_NONE;
    }
    value = tx_trim(value);
    if (value.n == 0) {
        return tx_refuse(failure, why, SIGV4_FAIL_MISSING, "the Authorization header is empty");
    }
    size_t alg_len = 0;
    while (alg_len < value.n && value.p[alg_len] != ' ' && value.p[alg_len] != '\t') {
        alg_len++;
    }
    if (!sl_slice_eq((struct sl_slice){value.p, alg_len}, SL_SLICE_LIT(SIGV4_ALGORITHM))) {
        return tx_refuse(failure, why, SIGV4_FAIL_MALFORMED,
                         "the algorithm must be AWS4-HMAC-SHA256");
    }
    struct sl_slice rest = {value.p + alg_len, value.n - alg_len};
    struct sl_slice credential = {NULL, 0};
    bool have_credential = false, have_signed = false, have_signature = false;
    size_t start = 0;
    for (bool last = false; !last;) {
        /* Part by part (memchr, not a byte loop: this runs twice per
         * request, at headers time and at authentication). */
        const char *comma = start < rest.n ? memchr(rest.p + start, ',', rest.n - start) : NULL;
        size_t j = comma != NULL ? (size_t)(comma - rest.p) : rest.n;
        last = comma == NULL;
        struct sl_slice item = tx_trim((struct sl_slice){rest.p + start, j - start});
        start = j + 1;
        const char *eq = item.n ? memchr(item.p, '=', item.n) : NULL;
        if (!eq) {
            return tx_refuse(failure, why, SIGV4_FAIL_MALFORMED,
                             "the Authorization header has a part that is not key=value");
        }
        struct sl_slice key = {item.p, (size_t)(eq - item.p)};
        struct sl_slice val = {eq + 1, item.n - key.n - 1};
        bool *seen;
        if (sl_slice_eq_cstr(key, "Credential")) {
            seen = &have_credential;
            credential = val;
        } else if (sl_slice_eq_cstr(key, "SignedHeaders")) {
            seen = &have_signed;
            out->signed_headers = val;
        } else if (sl_slice_eq_cstr(key, "Signature")) {
            seen = &have_signature;
            out->signature = val;
        } else {
            return tx_refuse(failure, why, SIGV4_FAIL_MALFORMED,
                             "the Authorization header has an unknown part");
        }
        if (*seen) {
            return tx_refuse(failure, why, SIGV4_FAIL_MALFORMED,
                             "the Authorization header repeats a part");
        }
        *seen = true;
    }
    if (!have_credential) {
        return tx_refuse(failure, why, SIGV4_FAIL_MALFORMED,
                         "the Authorization header lacks Credential");
    }
    if (!have_signed) {
        return tx_refuse(failure, why, SIGV4_FAIL_MALFORMED,
                         "the Authorization header lacks SignedHeaders");
    }
    if (!have_signature) {
        return tx_refuse(failure, why, SIGV4_FAIL_MALFORMED,
                         "the Authorization header lacks Signature");
    }
    int rc = parse_credential(credential, out, failure, why);
    if (rc != SL_OK) {
        return rc;
    }
    if (!valid_signed_headers(out->signed_headers)) {
        return tx_refuse(failure, why, SIGV4_FAIL_MALFORMED,
                         "SignedHeaders must be lower-case names separated by ';'");
    }
    if (out->signature.n != SIGV4_HASH_HEX || !tx_is_hex(out->signature)) {
        return tx_refuse(failure, why, SIGV4_FAIL_MALFORMED, "Signature must be 64 hex digits");
    }
    return SL_OK;
}
