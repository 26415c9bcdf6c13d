/*
 * test_tls.c -- the real sluiced with TLS (a self-signed certificate made at
 * test time): healthz over h2, a client offering h2 gets it, a client
 * offering only http/1.1 by ALPN, or no ALPN at all, is served HTTP/1.1, one
 * offering neither is refused in the handshake, and SIGTERM exits 0.
 */
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "it_harness.h"

/* Handshakes offering alpn (wire format; NULL = no ALPN), then sends a
 * plain HTTP/1.1 GET /healthz. Copies the selected protocol into selected
 * ("" for none) and the first bytes of the reply into reply; false when
 * the handshake failed. */
static bool tls_http1_healthz(const struct it_server *s, const unsigned char *alpn,
                              unsigned alpn_len, char *selected, size_t sel_cap, char *reply,
                              size_t cap)
{
    selected[0] = reply[0] = '\0';
    int fd = it_connect(s);
    if (fd < 0)
        return false;
    struct timeval tv = {10, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    SSL *ssl = SSL_new(ctx);
    SSL_set_fd(ssl, fd);
    if (alpn != NULL)
        SSL_set_alpn_protos(ssl, alpn, alpn_len);
    bool ok = SSL_connect(ssl) == 1;
    if (ok) {
        const unsigned char *p;
        unsigned len;
        SSL_get0_alpn_selected(ssl, &p, &len);
        snprintf(selected, sel_cap, "%.*s", (int)len, (const char *)p);
        static const char req[] = "GET /healthz HTTP/1.1\r\nHost: localhost\r\n"
                                  "Connection: close\r\n\r\n";
        if (SSL_write(ssl, req, (int)sizeof(req) - 1) > 0) {
            size_t got = 0;
            int n;
            while (got + 1 < cap && (n = SSL_read(ssl, reply + got, (int)(cap - 1 - got))) > 0)
                got += (size_t)n;
            reply[got] = '\0';
        }
    }
    ERR_clear_error();
    SSL_free(ssl);
    SSL_CTX_free(ctx);
    close(fd);
    return ok;
}

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
    /* h2 is preferred when both are offered. */
    IT_CHECK(it_tls_handshake(&s, (const unsigned char *)"\x08http/1.1\x02h2", 12));

    char sel[32], reply[2048];
    IT_CHECK(tls_http1_healthz(&s, (const unsigned char *)"\x08http/1.1", 9, sel, sizeof(sel),
                               reply, sizeof(reply)));
    IT_CHECK(strcmp(sel, "http/1.1") == 0);
    IT_CHECK(strncmp(reply, "HTTP/1.1 200 OK\r\n", 17) == 0 && strstr(reply, "\r\n\r\nok"));

    IT_CHECK(tls_http1_healthz(&s, NULL, 0, sel, sizeof(sel), reply, sizeof(reply)));
    IT_CHECK(strcmp(sel, "") == 0); /* no ALPN at all: HTTP/1.1 */
    IT_CHECK(strncmp(reply, "HTTP/1.1 200 OK\r\n", 17) == 0);

    /* A protocol we do not speak fails the handshake. */
    IT_CHECK(!tls_http1_healthz(&s, (const unsigned char *)"\x06spdy/3", 7, sel, sizeof(sel), reply,
                                sizeof(reply)));
    IT_CHECK(it_healthz(&s));

    /* curl over TLS told to use HTTP/1.1 gets it. */
    struct it_request h1 = {.method = "GET", .path = "/healthz", .http1 = true};
    IT_CHECK(it_request(&s, &h1, &r) == 0);
    IT_CHECK(r.status == 200);
    IT_CHECK(r.http_version == 2 /* CURL_HTTP_VERSION_1_1 */);
    it_response_free(&r);
    IT_CHECK(it_healthz(&s));

    IT_CHECK(it_server_stop(&s) == 0);
    it_server_cleanup(&s);
    return it_summary();
}
