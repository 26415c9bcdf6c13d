/*
 * lt_sign.c -- the SigV4 headers of one request, computed by the gateway's
 * own signer (gw_sigv4_sign), so the load generator and the verifier share
 * one implementation of the canonical request.
 *
 * The authority is signed as "host", as curl signs its HTTP/2 requests
 * (and as every SigV4 client signs HTTP/1.1); on the wire it travels only
 * as :authority.
 *
 * Threading: none; pure apart from the caller's buffers.
 */
#include "lt_int.h"

#include <string.h>

#define MAX_SIGNED_HEADERS 16

int lt_sign(const struct lt_credentials *cred, const char *method, const char *path,
            const char *authority, const struct gw_header *extra, size_t extra_count,
            struct sl_slice body, int64_t now_s, char amz_date[17], struct sl_buf *authorization)
{
    if (extra_count + 2 > MAX_SIGNED_HEADERS) {
        return SL_EINVAL;
    }
    gw_sigv4_amz_date(now_s, amz_date);
    struct gw_header headers[MAX_SIGNED_HEADERS];
    size_t n = 0;
    headers[n++] = (struct gw_header){SL_SLICE_LIT("host"), sl_slice_cstr(authority)};
    for (size_t i = 0; i < extra_count; i++) {
        headers[n++] = extra[i];
    }
    headers[n++] = (struct gw_header){SL_SLICE_LIT("x-amz-date"), {amz_date, 16}};
    struct gw_sigv4_request req = {
        .method = sl_slice_cstr(method),
        .path = sl_slice_cstr(path),
        .query = {"", 0},
        .headers = headers,
        .header_count = n,
        .payload = body,
        .authority = sl_slice_cstr(authority),
    };
    sl_buf_reset(authorization);
    return gw_sigv4_sign(&req, cred->access_key_id, cred->secret, cred->region, cred->service,
                         amz_date, authorization);
}
