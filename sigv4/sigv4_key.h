/*
 * sigv4_key.h -- (sigv4-internal) the cryptographic steps of SigV4
 * (sigv4_key.c): hashes, the string to sign, the signing key and its
 * cache, exposed so tests can check each step against AWS's published
 * examples and the verifier and signer can compose them.
 *
 * A struct sigv4__crypto holds reusable OpenSSL contexts (one per key
 * cache); wherever one is taken, NULL means "use OpenSSL's one-shot
 * functions", which is slower but needs no cache.
 *
 * Threading: pure functions, except that a key cache (and its crypto)
 * belongs to one thread. Ownership: callers own every buffer.
 */
#ifndef SLUICE_SIGV4_KEY_H
#define SLUICE_SIGV4_KEY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sigv4.h"
#include "sl.h"

struct sigv4__crypto;

/* The contexts of cache, or NULL when cache is NULL. */
struct sigv4__crypto *sigv4__key_cache_crypto(struct sigv4_key_cache *cache);

/* Lower-case hex SHA-256 of data[n] into hex (64 digits and a NUL). */
void sigv4__sha256_hex(const struct sigv4__crypto *cr, const void *data, size_t n, char hex[65]);

/* HMAC-SHA256 of data under key into out. */
void sigv4__hmac_sha256(struct sigv4__crypto *cr, const void *key, size_t key_len,
                        struct sl_slice data, uint8_t out[32]);

/* Writes the string to sign for a canonical request into out[cap],
 * NUL-terminated: algorithm, amz_date, scope "date/region/service/
 * aws4_request", hex SHA-256 of the canonical request. Returns the length,
 * or 0 when cap is too small. cr may be NULL. */
size_t sigv4__string_to_sign(const struct sigv4__crypto *cr, struct sl_slice amz_date,
                             struct sl_slice region, struct sl_slice service, const char *canonical,
                             size_t canonical_len, char *out, size_t cap);

/* kSigning = HMAC(HMAC(HMAC(HMAC("AWS4" + secret, date), region), service),
 * "aws4_request"). date is the 8-digit scope date. */
void sigv4__derive_key(struct sl_slice secret, struct sl_slice date, struct sl_slice region,
                       struct sl_slice service, uint8_t key[32]);

/* The signing key for the tuple, from cache when it holds one derived from
 * the same secret, else derived and remembered. cache may be NULL. *hit
 * (may be NULL) tells whether the cache answered. */
void sigv4__signing_key(struct sigv4_key_cache *cache, struct sl_slice access_key_id,
                        struct sl_slice secret, struct sl_slice date, struct sl_slice region,
                        struct sl_slice service, uint8_t key[32], bool *hit);

/* How many slots hold a key. */
size_t sigv4__key_cache_used(const struct sigv4_key_cache *c);

#endif
