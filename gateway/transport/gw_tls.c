/*
 * gw_tls.c -- TLS 1.2/1.3 for the gateway with OpenSSL over memory BIOs:
 * ciphertext from the socket goes into the read BIO, plaintext comes out of
 * SSL_read for nghttp2, and what SSL_write produces is taken from the write
 * BIO for the socket. No socket code, like gw_h2.c.
 *
 * ALPN offers "h2" (RFC 9113 §3.2) and "http/1.1", preferring h2: a client
 * that lists neither is refused during the handshake, and a client that
 * sends no ALPN at all speaks HTTP/1.1 (gw_conn.c decides).
 *
 * Threading: a struct gw_tls_ctx is built on the main thread and then only
 * read (SSL_CTX is thread-safe for SSL_new); a struct gw_tls_conn belongs to
 * its connection's loop thread.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "gw_tls.h"

struct gw_tls_ctx {
    SSL_CTX *ssl_ctx;
};

struct gw_tls_conn {
    SSL *ssl;
    BIO *rbio; /* ciphertext from the peer; owned by ssl */
    BIO *wbio; /* ciphertext for the peer; owned by ssl */
    bool handshake_done;
};

/* The protocol named want in the client's ALPN list, or NULL. */
static const unsigned char *find_alpn(const unsigned char *in, unsigned int inlen, const char *want)
{
    size_t want_len = strlen(want);
    for (unsigned int i = 0; i < inlen;) {
        unsigned int len = in[i];
        if (i + 1 + len > inlen)
            break;
        if (len == want_len && memcmp(in + i + 1, want, len) == 0)
            return in + i + 1;
        i += 1 + len;
    }
    return NULL;
}

/* Picks "h2", else "http/1.1", from the client's ALPN list, or fails the
 * handshake with no_application_protocol. */
static int select_alpn(SSL *ssl, const unsigned char **out, unsigned char *outlen,
                       const unsigned char *in, unsigned int inlen, void *arg)
{
    static const char *const ours[] = {"h2", "http/1.1"};
    for (size_t k = 0; k < SL_ARRAY_LEN(ours); k++) {
        const unsigned char *p = find_alpn(in, inlen, ours[k]);
        if (p != NULL) {
            *out = p;
            *outlen = (unsigned char)strlen(ours[k]);
            return SSL_TLSEXT_ERR_OK;
        }
    }
    return SSL_TLSEXT_ERR_ALERT_FATAL;
}

static void openssl_error(char *err, size_t errlen, const char *what, const char *path)
{
    char detail[256] = "";
    unsigned long e = ERR_get_error();
    if (e != 0)
        ERR_error_string_n(e, detail, sizeof(detail));
    snprintf(err, errlen, "%s %s: %s", what, path, detail);
    ERR_clear_error();
}

struct gw_tls_ctx *gw__tls_ctx_new(const char *cert_file, const char *key_file, char *err,
                                   size_t errlen)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    if (ctx == NULL) {
        openssl_error(err, errlen, "cannot create a TLS context", "");
        return NULL;
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION |
                                 SSL_OP_CIPHER_SERVER_PREFERENCE);
    /* RFC 9113 §9.2.2: TLS 1.2 with ephemeral key exchange and AEAD only. */
    if (SSL_CTX_set_cipher_list(ctx, "ECDHE+AESGCM:ECDHE+CHACHA20") != 1) {
        openssl_error(err, errlen, "cannot set TLS 1.2 ciphers", "");
        goto fail;
    }
    if (SSL_CTX_use_certificate_chain_file(ctx, cert_file) != 1) {
        openssl_error(err, errlen, "cannot load certificate", cert_file);
        goto fail;
    }
    if (SSL_CTX_use_PrivateKey_file(ctx, key_file, SSL_FILETYPE_PEM) != 1) {
        openssl_error(err, errlen, "cannot load private key", key_file);
        goto fail;
    }
    if (SSL_CTX_check_private_key(ctx) != 1) {
        openssl_error(err, errlen, "private key does not match certificate", cert_file);
        goto fail;
    }
    SSL_CTX_set_alpn_select_cb(ctx, select_alpn, NULL);
    struct gw_tls_ctx *t = sl_xcalloc(1, sizeof(*t));
    t->ssl_ctx = ctx;
    return t;
fail:
    SSL_CTX_free(ctx);
    return NULL;
}

void gw__tls_ctx_free(struct gw_tls_ctx *ctx)
{
    if (ctx == NULL)
        return;
    SSL_CTX_free(ctx->ssl_ctx);
    free(ctx);
}

struct gw_tls_conn *gw__tls_conn_new(struct gw_tls_ctx *ctx)
{
    struct gw_tls_conn *t = sl_xcalloc(1, sizeof(*t));
    t->ssl = SSL_new(ctx->ssl_ctx);
    SL_ASSERT(t->ssl != NULL);
    t->rbio = BIO_new(BIO_s_mem());
    t->wbio = BIO_new(BIO_s_mem());
    SL_ASSERT(t->rbio != NULL && t->wbio != NULL);
    BIO_set_mem_eof_return(t->rbio, -1); /* empty = "retry", not EOF */
    SSL_set_bio(t->ssl, t->rbio, t->wbio);
    SSL_set_accept_state(t->ssl);
    return t;
}

void gw__tls_conn_free(struct gw_tls_conn *t)
{
    if (t == NULL)
        return;
    SSL_free(t->ssl); /* frees both BIOs */
    free(t);
}

bool gw__tls_alpn_h2(const struct gw_tls_conn *t)
{
    const unsigned char *p;
    unsigned int len;
    SSL_get0_alpn_selected(t->ssl, &p, &len);
    return len == 2 && memcmp(p, "h2", 2) == 0;
}

int gw__tls_recv(struct gw_tls_conn *t, const uint8_t *cipher, size_t n, struct sl_buf *plain)
{
    if (n > 0 && BIO_write(t->rbio, cipher, (int)n) != (int)n)
        return SL_EIO;
    if (!t->handshake_done) {
        int rv = SSL_do_handshake(t->ssl);
        if (rv != 1) {
            int e = SSL_get_error(t->ssl, rv);
            if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
                return SL_OK;
            sl_log(SL_LOG_DEBUG, "gw", "tls handshake failed: %s",
                   ERR_reason_error_string(ERR_peek_error()) != NULL
                       ? ERR_reason_error_string(ERR_peek_error())
                       : "peer closed");
            ERR_clear_error();
            return SL_EIO;
        }
        t->handshake_done = true;
    }
    for (;;) {
        uint8_t buf[16384];
        size_t got = 0;
        if (SSL_read_ex(t->ssl, buf, sizeof(buf), &got) == 1) {
            sl_buf_append(plain, buf, got);
            continue;
        }
        int e = SSL_get_error(t->ssl, 0);
        if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
            return SL_OK;
        ERR_clear_error();
        return e == SSL_ERROR_ZERO_RETURN ? SL_ECLOSED : SL_EIO;
    }
}

int gw__tls_send(struct gw_tls_conn *t, const uint8_t *plain, size_t n, size_t *accepted)
{
    *accepted = 0;
    if (!t->handshake_done || n == 0)
        return SL_OK;
    /* The write BIO is memory and grows, so SSL_write takes everything;
     * the connection bounds how much it asks to send (gw_exchange.h). */
    if (SSL_write_ex(t->ssl, plain, n, accepted) != 1) {
        ERR_clear_error();
        return SL_EIO;
    }
    return SL_OK;
}

void gw__tls_take_cipher(struct gw_tls_conn *t, struct sl_buf *out)
{
    size_t pending;
    while ((pending = BIO_ctrl_pending(t->wbio)) > 0) {
        sl_buf_reserve(out, pending);
        int got = BIO_read(t->wbio, out->p + out->n, (int)pending);
        if (got <= 0)
            break;
        out->n += (size_t)got;
        out->p[out->n] = '\0';
    }
}

bool gw__tls_handshake_done(const struct gw_tls_conn *t)
{
    return t->handshake_done;
}
