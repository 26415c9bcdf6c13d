/*
 * test_tls.c -- the real sluiced with TLS (a self-signed certificate made at
 * test time): healthz over h2, a client offering only http/1.1 by ALPN is
 * refused, a client offering h2 gets it, and SIGTERM exits 0.
 */
#include <stdio.h>
#include <string.h>

#include "it_harness.h"

int main(void)
{
    struct it_server s;
    struct it_options opt = {.tls = true};
    IT_REQUIRE(it_server_start(&s, &opt) == 0);

    struct it_request req = {.method = "GET", .path = "/healthz"};
    struct it_response r;
    IT_CHECK(it_request(&s, &req, &r) == 0);
    IT_CHECK(r.status == 200);
    IT_CHECK(strcmp(r.body, "ok") == 0);
    IT_CHECK(r.http_version == 3 /* CURL_HTTP_VERSION_2_0 */);
    it_response_free(&r);

    IT_CHECK(it_tls_handshake(&s, (const unsigned char *)"\x02h2", 3));
    IT_CHECK(!it_tls_handshake(&s, (const unsigned char *)"\x08http/1.1", 9));
    IT_CHECK(!it_tls_handshake(&s, NULL, 0)); /* no ALPN at all */
    IT_CHECK(it_healthz(&s));

    /* curl over TLS told to use HTTP/1.1 cannot get an answer. */
    struct it_request h1 = {.method = "GET", .path = "/healthz", .http1 = true};
    it_request(&s, &h1, &r);
    IT_CHECK(r.status != 200);
    it_response_free(&r);
    IT_CHECK(it_healthz(&s));

    IT_CHECK(it_server_stop(&s) == 0);
    it_server_cleanup(&s);
    return it_summary();
}
