/*
 * gw_sigv4_int.h -- (gateway-internal) the steps of AWS Signature Version 4
 * that gw_sigv4.c composes into gw_sigv4_verify() and gw_sigv4_sign(),
 * exposed so that tests can check each step against AWS's published
 * examples and against independent signers, and so the fuzzer can drive
 * them one by one.
 *
 * Threading: pure functions, except that a key cache belongs to one thread.
 * Ownership: callers own every buffer; nothing here allocates.
 */
#ifndef SLUICE_GW_SIGV4_INT_H
#define SLUICE_GW_SIGV4_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gw.h"
#include "sl.h"

#define GW_SIGV4_ALGORITHM "AWS4-HMAC-SHA256"
#define GW_SIGV4_KEY_BYTES 32
#define GW_SIGV4_HASH_HEX 64 /* hex digits of a SHA-256 */

/* Writes the canonical request of req for the given SignedHeaders list
 * ("host;x-amz-date", in the order given) and payload hash (the text that
 * ends the canonical request) into out[cap], NUL-terminated, and its length
 * into *len. Returns SL_OK; SL_ETOOBIG when out, or a GW_SIGV4_MAX_* bound,
 * is exceeded; SL_ENOTFOUND when a signed header is absent from req;
 * SL_EINVAL for an empty or malformed SignedHeaders list. *why (may be
 * NULL) gets a static explanation on failure. */
int gw__sigv4_canonical_request(const struct gw_sigv4_request *req, struct sl_slice signed_headers,
                                struct sl_slice payload_hash, char *out, size_t cap, size_t *len,
                                const char **why);

/* Writes the string to sign for a canonical request into out[cap],
 * NUL-terminated: algorithm, amz_date, scope "date/region/service/
 * aws4_request", hex SHA-256 of the canonical request. Returns the length,
 * or 0 when cap is too small. */
size_t gw__sigv4_string_to_sign(struct sl_slice amz_date, struct sl_slice region,
                                struct sl_slice service, const char *canonical,
                                size_t canonical_len, char *out, size_t cap);

/* kSigning = HMAC(HMAC(HMAC(HMAC("AWS4" + secret, date), region), service),
 * "aws4_request"). date is the 8-digit scope date. */
void gw__sigv4_derive_key(struct sl_slice secret, struct sl_slice date, struct sl_slice region,
                          struct sl_slice service, uint8_t key[GW_SIGV4_KEY_BYTES]);

/* The signing key for the tuple, from cache when it holds one derived from
 * the same secret, else derived and remembered. cache may be NULL. *hit
 * (may be NULL) tells whether the cache answered. */
void gw__sigv4_signing_key(struct gw_sigv4_key_cache *cache, struct sl_slice access_key_id,
                           struct sl_slice secret, struct sl_slice date, struct sl_slice region,
                           struct sl_slice service, uint8_t key[GW_SIGV4_KEY_BYTES], bool *hit);

/* How many slots hold a key. */
size_t gw__sigv4_key_cache_used(const struct gw_sigv4_key_cache *c);

/* Parses "YYYYMMDDTHHMMSSZ" into seconds since the epoch. Returns false for
 * anything else, including impossible dates. */
bool gw__sigv4_parse_amz_date(struct sl_slice s, int64_t *out);

#endif
