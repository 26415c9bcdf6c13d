/*
 * gw_tls.h -- (gateway-internal) TLS over memory BIOs (gw_tls.c):
 * ciphertext in, plaintext out and back, ALPN "h2" and "http/1.1". Like
 * gw_h2.c it does no socket I/O.
 *
 * Threading: a context is thread-safe once built; a struct gw_tls_conn
 * belongs to the loop thread that accepted its socket.
 */
#ifndef SLUICE_GW_TLS_H
#define SLUICE_GW_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gw_transport.h"

/* ---- TLS over memory BIOs (gw_tls.c); the context is in gw_transport.h ---- */

struct gw_tls_conn;

struct gw_tls_conn *gw__tls_conn_new(struct gw_tls_ctx *ctx);
void gw__tls_conn_free(struct gw_tls_conn *t);

/* Ciphertext from the socket in; decrypted plaintext appended to plain.
 * Returns SL_OK, SL_ECLOSED (close_notify) or SL_EIO (handshake failed, no
 * common ALPN protocol, bad record): close after sending what gw__tls_take_cipher()
 * still holds (an alert). */
int gw__tls_recv(struct gw_tls_conn *t, const uint8_t *cipher, size_t n, struct sl_buf *plain);

/* Plaintext to send; returns how many bytes were accepted (0 while the
 * handshake is not done yet), or SL_EIO. */
int gw__tls_send(struct gw_tls_conn *t, const uint8_t *plain, size_t n, size_t *accepted);

/* Appends ciphertext ready for the socket to out. */
void gw__tls_take_cipher(struct gw_tls_conn *t, struct sl_buf *out);

bool gw__tls_handshake_done(const struct gw_tls_conn *t);

/* True when the handshake chose ALPN "h2"; false for "http/1.1" or no ALPN
 * (HTTP/1.1). */
bool gw__tls_alpn_h2(const struct gw_tls_conn *t);

#endif
