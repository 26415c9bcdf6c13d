/*
 * gw.h -- the gateway: the HTTP/2 front door that runs sluiced, and the
 * AWS Signature Version 4 code that both verifies requests (the gateway)
 * and signs them (sluicectl, the load generator, tests), so that there is
 * exactly one implementation of the canonical request.
 *
 * Threading: gw_main() owns the process's signal handling and threads.
 * The SigV4 functions are pure and thread-safe; a struct gw_sigv4_key_cache
 * belongs to one thread.
 */
#ifndef SLUICE_GW_H
#define SLUICE_GW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sl.h"

/* ---- the server process ------------------------------------------------ */

/* Runs sluiced with its command line (see `sluiced --help`): --config FILE,
 * --check-config FILE, or no argument for the embedded default. Returns the
 * process exit status. */
int gw_main(int argc, char **argv);

/* ---- AWS Signature Version 4 ------------------------------------------- */

/* A header as the request carries it. HTTP/2 names are lower-case; a signed
 * pseudo-header such as ":authority" appears here under its own name. */
struct gw_header {
    struct sl_slice name;
    struct sl_slice value;
};

/* What a SigV4 verifier or signer needs of a request. Everything borrows. */
struct gw_sigv4_request {
    struct sl_slice method;          /* "POST" */
    struct sl_slice path;            /* raw path as on the wire, without the query: "/" */
    struct sl_slice query;           /* raw query string after '?', may be empty */
    const struct gw_header *headers; /* names matched case-insensitively */
    size_t header_count;
    struct sl_slice payload; /* the exact body bytes */
    /* The request's :authority (or Host). The verifier uses it for a signed
     * "host" or ":authority" that is not among headers: HTTP/2 clients send
     * :authority instead of Host, and some of them sign "host" (curl, most
     * SDKs) while the AWS SDK for JavaScript v3 signs ":authority". */
    struct sl_slice authority;
};

/* The parts of an "Authorization: AWS4-HMAC-SHA256 ..." header. Slices
 * borrow from the header value. */
struct gw_sigv4_auth {
    struct sl_slice access_key_id;
    struct sl_slice date; /* yyyymmdd of the credential scope */
    struct sl_slice region;
    struct sl_slice service;
    struct sl_slice signed_headers; /* "content-type;host;x-amz-date" */
    struct sl_slice signature;      /* 64 hex digits */
};

/* Outcomes, each mapped by the gateway to the SQS error AWS sends. */
enum gw_sigv4_status {
    GW_SIGV4_OK = 0,
    GW_SIGV4_MISSING,     /* no Authorization: MissingAuthenticationToken */
    GW_SIGV4_INCOMPLETE,  /* malformed Authorization / missing date: IncompleteSignature */
    GW_SIGV4_UNKNOWN_KEY, /* InvalidClientTokenId (decided by the caller) */
    GW_SIGV4_MISMATCH,    /* SignatureDoesNotMatch */
    GW_SIGV4_EXPIRED,     /* more than 15 minutes of skew: RequestExpired */
    GW_SIGV4_SCOPE,       /* wrong region/service/date in scope: SignatureDoesNotMatch */
    GW_SIGV4_TOKEN,       /* X-Amz-Security-Token present: not supported */
};

/* Limits of the verifier, which works in bounded stack buffers so that the
 * common path allocates nothing. A request over a limit is refused as
 * GW_SIGV4_INCOMPLETE with a *why naming the limit. */
#define GW_SIGV4_MAX_CANONICAL 16384   /* bytes of canonical request */
#define GW_SIGV4_MAX_SIGNED_HEADERS 64 /* names in SignedHeaders */
#define GW_SIGV4_MAX_QUERY_PARAMS 128  /* parameters in the query string */
#define GW_SIGV4_MAX_PATH_SEGMENTS 128 /* '/'-separated segments of the path */
#define GW_SIGV4_MAX_SKEW_S (15 * 60)  /* allowed |x-amz-date - now| */

/* Caches derived signing keys per (access key, date, region, service), so a
 * steady client costs one HMAC chain per day, not four HMACs per request.
 * A slot also remembers a fingerprint (SHA-256) of the secret it was
 * derived from, so a rotated secret is never answered with a stale key.
 * Least recently used slots are evicted. The cache also holds reusable
 * OpenSSL digest and MAC contexts, so verify with a cache is several times
 * cheaper than without. One cache belongs to one thread. */
struct gw_sigv4_key_cache;
/* slots == 0 picks a default (64). */
struct gw_sigv4_key_cache *gw_sigv4_key_cache_new(size_t slots);
/* Wipes the keys and frees the cache; NULL is a no-op. */
void gw_sigv4_key_cache_free(struct gw_sigv4_key_cache *c);

/* Splits an Authorization header value. Returns GW_SIGV4_OK, or
 * GW_SIGV4_MISSING for an empty value, or GW_SIGV4_INCOMPLETE with *why
 * set to a static explanation (why may be NULL). */
enum gw_sigv4_status gw_sigv4_parse_authorization(struct sl_slice value, struct gw_sigv4_auth *out,
                                                  const char **why);

/* Verifies a parsed signature with the principal's secret. now_s is the
 * server's wall clock; region and service are what the gateway answers as.
 * cache may be NULL. *why gets a static explanation on failure (why may be
 * NULL). Checks, in order: X-Amz-Security-Token (TOKEN); x-amz-date, or
 * else a Date header in the same ISO 8601 basic form (INCOMPLETE); the
 * credential scope (SCOPE); the clock skew (EXPIRED); SignedHeaders must
 * name host or :authority and the date header used (INCOMPLETE); an
 * x-amz-content-sha256 header must equal the SHA-256 of the payload
 * (MISMATCH: UNSIGNED-PAYLOAD and streaming payloads are refused, so the
 * body is always authenticated); then the signature (MISMATCH). */
enum gw_sigv4_status gw_sigv4_verify(const struct gw_sigv4_request *req,
                                     const struct gw_sigv4_auth *auth, const char *secret,
                                     const char *region, const char *service, int64_t now_s,
                                     struct gw_sigv4_key_cache *cache, const char **why);

/* Formats now_s as x-amz-date wants it: "YYYYMMDDTHHMMSSZ" plus a NUL. */
void gw_sigv4_amz_date(int64_t now_s, char amz_date[17]);

/* Signs a request as a client, with the same canonicalisation code the
 * verifier uses. Every header in req is signed (names are lower-cased and
 * sorted; repeated names are joined), so the caller passes only what it
 * means to sign, and must include "x-amz-date" with the value amz_date
 * (from gw_sigv4_amz_date) and "host" or ":authority". When the headers
 * carry x-amz-content-sha256 its value is the payload hash, otherwise the
 * SHA-256 of req->payload. Appends the whole Authorization header value to
 * *authorization. Returns SL_OK, SL_EINVAL (a required header missing, bad
 * amz_date, a header name that cannot be listed in SignedHeaders) or
 * SL_ETOOBIG (over a GW_SIGV4_MAX_* limit). */
int gw_sigv4_sign(const struct gw_sigv4_request *req, const char *access_key_id, const char *secret,
                  const char *region, const char *service, const char amz_date[17],
                  struct sl_buf *authorization);

#endif
