/*
 * sigv4_canon.h -- (sigv4-internal) the canonical request of SigV4
 * (sigv4_canon.c), the text both the verifier and the signer hash, exposed
 * so tests can check it against AWS's published examples and independent
 * signers, and the fuzzer can drive it alone.
 *
 * Threading: pure functions. Ownership: callers own every buffer; nothing
 * here allocates.
 */
#ifndef SLUICE_SIGV4_CANON_H
#define SLUICE_SIGV4_CANON_H

#include <stddef.h>

#include "sigv4.h"
#include "sl.h"

/* Writes the canonical request of req for the given SignedHeaders list
 * ("host;x-amz-date", in the order given) and payload hash (the text that
 * ends the canonical request) into out[cap], NUL-terminated, and its length
 * into *len. Returns SL_OK; SL_ETOOBIG when out, or a SIGV4_MAX_* bound,
 * is exceeded; SL_ENOTFOUND when a signed header is absent from req;
 * SL_EINVAL for an empty or malformed SignedHeaders list. *why (may be
 * NULL) gets a static explanation on failure. */
int sigv4__canonical_request(const struct sigv4_request *req, struct sl_slice signed_headers,
                             struct sl_slice payload_hash, char *out, size_t cap, size_t *len,
                             const char **why);

/* The first header of req named name (any case), or NULL. */
const struct sigv4_header *sigv4__find_header(const struct sigv4_request *req, const char *name);

#endif
