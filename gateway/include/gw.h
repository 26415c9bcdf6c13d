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

/* What a SigV4 verifier or signer needs of a request. */
struct gw_sigv4_request {
    struct sl_slice method; /* "POST" */
    struct sl_slice path;   /* raw path, without the query: "/" */
    struct sl_slice query;  /* raw query string after '?', may be empty */
    const struct gw_header *headers;
    size_t header_count;
    struct sl_slice payload; /* hashed unless x-amz-content-sha256 says otherwise */
};

/* The parts of an "Authorization: AWS4-HMAC-SHA256 ..." header. Slices
 * borrow from the header value. */
struct gw_sigv4_auth {
    struct sl_slice access_key_id;
    struct sl_slice date;    /* yyyymmdd of the credential scope */
    struct sl_slice region;
    struct sl_slice service;
    struct sl_slice signed_headers; /* "content-type;host;x-amz-date" */
    struct sl_slice signature;      /* 64 lower-case hex digits */
};

/* Outcomes, each mapped by the gateway to the SQS error AWS sends. */
enum gw_sigv4_status {
    GW_SIGV4_OK = 0,
    GW_SIGV4_MISSING,        /* no Authorization: MissingAuthenticationToken */
    GW_SIGV4_INCOMPLETE,     /* malformed Authorization / missing date: IncompleteSignature */
    GW_SIGV4_UNKNOWN_KEY,    /* InvalidClientTokenId (decided by the caller) */
    GW_SIGV4_MISMATCH,       /* SignatureDoesNotMatch */
    GW_SIGV4_EXPIRED,        /* more than 15 minutes of skew: RequestExpired */
    GW_SIGV4_SCOPE,          /* wrong region/service/date in scope: SignatureDoesNotMatch */
    GW_SIGV4_TOKEN,          /* X-Amz-Security-Token present: not supported */
};

/* Caches derived signing keys per (access key, date, region, service), so a
 * steady client costs one HMAC chain per day, not four HMACs per request. */
struct gw_sigv4_key_cache;
struct gw_sigv4_key_cache *gw_sigv4_key_cache_new(size_t slots);
void gw_sigv4_key_cache_free(struct gw_sigv4_key_cache *c);

/* Splits an Authorization header value. Returns GW_SIGV4_OK or
 * GW_SIGV4_INCOMPLETE with *why set to a static explanation. */
enum gw_sigv4_status gw_sigv4_parse_authorization(struct sl_slice value,
                                                  struct gw_sigv4_auth *out, const char **why);

/* Verifies a parsed signature with the principal's secret. now_s is the
 * server's wall clock; region and service are what the gateway answers as.
 * cache may be NULL. *why gets a static explanation on failure. */
enum gw_sigv4_status gw_sigv4_verify(const struct gw_sigv4_request *req,
                                     const struct gw_sigv4_auth *auth, const char *secret,
                                     const char *region, const char *service, int64_t now_s,
                                     struct gw_sigv4_key_cache *cache, const char **why);

/* Signs a request as a client: computes x-amz-date from now_s and the
 * Authorization value for the headers given (every header in req is
 * signed; names must be lower-case and must include "x-amz-date" with the
 * value written into amz_date, i.e. the caller fills it from amz_date
 * first). amz_date receives "YYYYMMDDTHHMMSSZ"; authorization receives the
 * whole header value. Returns SL_OK or SL_EINVAL. */
void gw_sigv4_amz_date(int64_t now_s, char amz_date[17]);
int gw_sigv4_sign(const struct gw_sigv4_request *req, const char *access_key_id,
                  const char *secret, const char *region, const char *service,
                  const char amz_date[17], struct sl_buf *authorization);

#endif
