/*
 * gw_auth.c -- SigV4 over a struct gw_request: copies its header list into
 * the verifier's form and splits its path from the query string. HTTP/2
 * carries Host as :authority; the verifier takes a signed "host" (curl,
 * botocore) or ":authority" (AWS SDK for JavaScript v3) that is not among
 * the headers from sreq.authority.
 */
#include "gw_act.h"

int gw__auth_sigv4(const struct gw_request *req, const struct sigv4_verifier *v,
                   enum sigv4_failure *failure, const char **why)
{
    struct sigv4_header headers[GW_MAX_HEADER_COUNT];
    SL_ASSERT(req->header_count <= GW_MAX_HEADER_COUNT); /* gw_h2.c refuses more */
    for (size_t i = 0; i < req->header_count; i++) {
        headers[i] = (struct sigv4_header){req->headers[i].name, req->headers[i].value};
    }
    struct sigv4_request sreq = {
        .method = req->method,
        .headers = headers,
        .header_count = req->header_count,
        .authority = req->authority,
        .payload = req->body,
    };
    gw_request_split_path(req->path, &sreq.path, &sreq.query);
    return sigv4_authenticate(&sreq, v, failure, why);
}
