/*
 * sigv4.h -- AWS Signature Version 4 (header form, AWS4-HMAC-SHA256): the
 * one implementation of the canonical request, used to verify requests
 * (the gateway) and to sign them (sluicectl, the load generator, tests).
 * Depends on common/ and OpenSSL only, so a client that signs does not
 * link the server.
 *
 * Return convention: every fallible function returns SL_OK or a negative
 * SL_E* code; a refused request also reports which SigV4 failure it was
 * through an enum sigv4_failure out-parameter, which a server maps to its
 * protocol's error codes.
 *
 * Threading: the functions are pure and thread-safe; a struct
 * sigv4_key_cache belongs to one thread.
 */
#ifndef SLUICE_SIGV4_H
#define SLUICE_SIGV4_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sl.h"

/* A header as the request carries it. HTTP/2 names are lower-case; a signed
 * pseudo-header such as ":authority" appears here under its own name. */
struct sigv4_header {
    struct sl_slice name;
    struct sl_slice value;
};

/* What a verifier or signer needs of a request. Everything borrows. */
struct sigv4_request {
    struct sl_slice method;             /* "POST" */
    struct sl_slice path;               /* raw path as on the wire, without the query: "/" */
    struct sl_slice query;              /* raw query string after '?', may be empty */
    const struct sigv4_header *headers; /* names matched case-insensitively */
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
struct sigv4_auth {
    struct sl_slice access_key_id;
    struct sl_slice date; /* yyyymmdd of the credential scope */
    struct sl_slice region;
    struct sl_slice service;
    struct sl_slice signed_headers; /* "content-type;host;x-amz-date" */
    struct sl_slice signature;      /* 64 hex digits */
};

/* Why a request was refused; each maps to the error AWS sends (for SQS:
 * the code in the comment). */
enum sigv4_failure {
    SIGV4_FAIL_NONE = 0,
    SIGV4_FAIL_MISSING,     /* no (or an empty) Authorization: MissingAuthenticationToken */
    SIGV4_FAIL_MALFORMED,   /* Authorization is not a SigV4 header: IncompleteSignature */
    SIGV4_FAIL_INCOMPLETE,  /* the request cannot be verified (no date, ...): IncompleteSignature */
    SIGV4_FAIL_UNKNOWN_KEY, /* no secret for the access key: InvalidClientTokenId */
    SIGV4_FAIL_MISMATCH,    /* SignatureDoesNotMatch */
    SIGV4_FAIL_EXPIRED,     /* more than 15 minutes of skew: RequestExpired */
    SIGV4_FAIL_SCOPE,       /* wrong region/service/date in scope: SignatureDoesNotMatch */
    SIGV4_FAIL_TOKEN,       /* X-Amz-Security-Token (unsupported): UnrecognizedClientException */
};

/* Limits of the verifier, which works in bounded stack buffers so that the
 * common path allocates nothing. A request over a limit is refused as
 * SIGV4_FAIL_INCOMPLETE with a *why naming the limit. */
#define SIGV4_MAX_CANONICAL 16384           /* bytes of canonical request */
#define SIGV4_MAX_SIGNED_HEADERS 64         /* names in SignedHeaders */
#define SIGV4_MAX_QUERY_PARAMS 128          /* parameters in the query string */
#define SIGV4_MAX_PATH_SEGMENTS 128         /* '/'-separated segments of the path */
#define SIGV4_MAX_SKEW_S ((int64_t)15 * 60) /* allowed |x-amz-date - now| */

/* ---- verifying ---------------------------------------------------------- */

/* Caches derived signing keys per (access key, date, region, service), so a
 * steady client costs one HMAC chain per day, not four HMACs per request.
 * A slot also remembers a fingerprint (SHA-256) of the secret it was
 * derived from, so a rotated secret is never answered with a stale key.
 * Least recently used slots are evicted. The cache also holds reusable
 * OpenSSL digest and MAC contexts, so verify with a cache is several times
 * cheaper than without. One cache belongs to one thread. */
struct sigv4_key_cache;
/* slots == 0 picks a default (64). Aborts if OpenSSL lacks SHA-256/HMAC. */
struct sigv4_key_cache *sigv4_key_cache_new(size_t slots);
/* Wipes the keys and frees the cache; NULL is a no-op. */
void sigv4_key_cache_free(struct sigv4_key_cache *c);

/* Splits an Authorization header value into *out. Returns SL_OK, or
 * SL_EINVAL with *failure SIGV4_FAIL_MISSING (an empty value) or
 * SIGV4_FAIL_MALFORMED, and *why a static explanation. failure and why
 * may be NULL. */
int sigv4_parse_authorization(struct sl_slice value, struct sigv4_auth *out,
                              enum sigv4_failure *failure, const char **why);

/* Verifies a parsed signature with the principal's secret. now_s is the
 * server's wall clock; region and service are what the server answers as.
 * cache may be NULL. Returns SL_OK, or SL_EINVAL with *failure saying why
 * and *why a static explanation (failure and why may be NULL). Checks, in
 * order: X-Amz-Security-Token (TOKEN); x-amz-date, or else a Date header in
 * the same ISO 8601 basic form (INCOMPLETE); the credential scope (SCOPE);
 * the clock skew (EXPIRED); SignedHeaders must name host or :authority and
 * the date header used (INCOMPLETE); an x-amz-content-sha256 header must
 * equal the SHA-256 of the payload (MISMATCH: UNSIGNED-PAYLOAD and
 * streaming payloads are refused, so the body is always authenticated);
 * then the signature (MISMATCH). */
int sigv4_verify(const struct sigv4_request *req, const struct sigv4_auth *auth, const char *secret,
                 const char *region, const char *service, int64_t now_s,
                 struct sigv4_key_cache *cache, enum sigv4_failure *failure, const char **why);

/* Finds the secret of an access key for sigv4_authenticate. Returns SL_OK
 * with *secret set (borrowed; valid until sigv4_authenticate returns), or
 * SL_ENOTFOUND when the key is unknown or not allowed here. */
typedef int sigv4_secret_fn(void *arg, struct sl_slice access_key_id, const char **secret);

/* What a server verifies against. */
struct sigv4_verifier {
    const char *region;            /* the region the server answers as */
    const char *service;           /* "sqs" */
    int64_t now_s;                 /* the server's wall clock */
    struct sigv4_key_cache *cache; /* may be NULL */
    sigv4_secret_fn *find_secret;
    void *arg; /* passed to find_secret */
};

/* True if a raw query string carries query-string authentication (any of
 * X-Amz-Algorithm, X-Amz-Credential, X-Amz-Signature): a presigned URL. */
bool sigv4_query_is_presigned(struct sl_slice query);

/* The access key id of a presigned query, copied into buf[cap] (so a
 * server can refuse an unknown key before reading the body). Returns SL_OK
 * with *access_key_id borrowing buf, or SL_EINVAL with *failure
 * (INCOMPLETE: a parameter missing; MALFORMED: one malformed; TOKEN:
 * X-Amz-Security-Token) and *why. */
int sigv4_presigned_access_key(struct sl_slice query, char *buf, size_t cap,
                               struct sl_slice *access_key_id, enum sigv4_failure *failure,
                               const char **why);

/* Verifies a presigned request (query-string authentication) with the
 * principal's secret: the X-Amz-* parameters parsed as the header form's
 * parts, the scope (SCOPE), X-Amz-Date no more than 15 minutes ahead and
 * now no later than X-Amz-Date + X-Amz-Expires (EXPIRED; at most a week),
 * host or :authority and every x-amz-* header signed (INCOMPLETE), the
 * payload hash the body's SHA-256 (as botocore signs it), or an
 * X-Amz-Content-Sha256 query parameter equal to it (UNSIGNED-PAYLOAD only
 * for an empty body: a body is never left unsigned; MISMATCH), then the
 * signature over the canonical request whose query leaves out
 * X-Amz-Signature (MISMATCH). Returns SL_OK or SL_EINVAL as
 * sigv4_verify. */
int sigv4_verify_presigned(const struct sigv4_request *req, const char *secret, const char *region,
                           const char *service, int64_t now_s, struct sigv4_key_cache *cache,
                           enum sigv4_failure *failure, const char **why);

/* A server's whole check of one request: refuses X-Amz-Security-Token
 * (TOKEN), takes the first "authorization" header (MISSING when absent;
 * a request without one whose query is presigned goes to
 * sigv4_verify_presigned instead),
 * parses it (MISSING, MALFORMED), asks v->find_secret for the access key's
 * secret (UNKNOWN_KEY), then verifies (see sigv4_verify). Returns SL_OK;
 * SL_ENOTFOUND for an unknown key; SL_EINVAL for any other refusal. On a
 * refusal *failure says which and *why (may be NULL) has a static
 * explanation. */
int sigv4_authenticate(const struct sigv4_request *req, const struct sigv4_verifier *v,
                       enum sigv4_failure *failure, const char **why);

/* ---- signing ------------------------------------------------------------ */

/* Formats now_s as x-amz-date wants it: "YYYYMMDDTHHMMSSZ" plus a NUL. */
void sigv4_amz_date(int64_t now_s, char amz_date[17]);

/* Signs a request as a client, with the same canonicalisation code the
 * verifier uses. Every header in req is signed (names are lower-cased and
 * sorted; repeated names are joined), so the caller passes only what it
 * means to sign, and must include "x-amz-date" with the value amz_date
 * (from sigv4_amz_date) and "host" or ":authority". When the headers
 * carry x-amz-content-sha256 its value is the payload hash, otherwise the
 * SHA-256 of req->payload. Appends the whole Authorization header value to
 * *authorization. Returns SL_OK, SL_EINVAL (a required header missing, bad
 * amz_date, a header name that cannot be listed in SignedHeaders) or
 * SL_ETOOBIG (over a SIGV4_MAX_* limit). */
int sigv4_sign(const struct sigv4_request *req, const char *access_key_id, const char *secret,
               const char *region, const char *service, const char amz_date[17],
               struct sl_buf *authorization);

/* A client's credentials and the scope it signs for. */
struct sigv4_credentials {
    const char *access_key_id;
    const char *secret;
    const char *region;
    const char *service; /* NULL means "sqs" */
};

/* Signs an SQS call: a POST of body to path (no query) at authority
 * ("HOST[:PORT]", signed as "host", the way curl and most SDKs sign their
 * HTTP/2 requests), with "x-amz-date" for now_s and the extra headers
 * (lower-case names, e.g. content-type and x-amz-target; all signed).
 * Writes the X-Amz-Date value to amz_date and replaces *authorization's
 * contents with the Authorization value; the caller sends exactly the
 * headers signed. Returns SL_OK, SL_EINVAL (too many extra headers, or as
 * sigv4_sign) or SL_ETOOBIG (as sigv4_sign). */
int sigv4_sign_sqs_request(const struct sigv4_credentials *cred, const char *authority,
                           const char *path, const struct sigv4_header *extra, size_t extra_count,
                           struct sl_slice body, int64_t now_s, char amz_date[17],
                           struct sl_buf *authorization);

#endif
