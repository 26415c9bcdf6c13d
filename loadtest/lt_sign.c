/*
 * lt_sign.c -- the SigV4 headers of one request, computed by
 * sigv4_sign_sqs_request, the signer that shares its canonical request
 * with the gateway's verifier.
 *
 * The authority is signed as "host", as curl signs its HTTP/2 requests
 * (and as every SigV4 client signs HTTP/1.1); on the wire it travels only
 * as :authority.
 *
 * Threading: none; pure apart from the caller's buffers.
 */
#include "lt_int.h"

int lt_sign(const struct lt_credentials *cred, const char *path, const char *authority,
            const struct sigv4_header *extra, size_t extra_count, struct sl_slice body,
            int64_t now_s, char amz_date[17], struct sl_buf *authorization)
{
    const struct sigv4_credentials c = {cred->access_key_id, cred->secret, cred->region,
                                        cred->service};
    return sigv4_sign_sqs_request(&c, authority, path, extra, extra_count, body, now_s, amz_date,
                                  authorization);
}
