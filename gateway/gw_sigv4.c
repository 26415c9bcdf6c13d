/*
 * gw_sigv4.c -- AWS Signature Version 4 (header form, AWS4-HMAC-SHA256):
 * the one implementation of the canonical request, used both to verify
 * requests (the gateway) and to sign them (sluicectl, the load generator,
 * tests). Canonicalisation follows AWS's "Create a canonical request"
 * reference and, where the prose leaves room, what the AWS SDK for
 * JavaScript v3 signer (@smithy/signature-v4) actually does, since that
 * and the other SDKs are the clients we must agree with byte for byte:
 *  - the path is taken as on the wire, dot segments and empty segments are
 *    removed (non-S3 services), and every byte outside AWS's unreserved set
 *    A-Z a-z 0-9 - _ . ~ is percent-encoded; as the wire form is already
 *    encoded once, this is AWS's "encode each segment twice";
 *  - query parameters are percent-decoded, re-encoded with the same set,
 *    and sorted by encoded name, then value;
 *  - the canonical headers are exactly the SignedHeaders list, in the
 *    order the client gave it, each value with CR, LF, tab and space runs
 *    collapsed to one space and trimmed, repeated headers joined with ',';
 *    a signed "host" or ":authority" absent from the header list is taken
 *    from the request's authority (HTTP/2 carries it as :authority).
 * Not supported, by decision: presigned URLs (query-string auth),
 * temporary credentials (X-Amz-Security-Token), UNSIGNED-PAYLOAD and
 * streaming payloads (SQS never uses them, and accepting them would leave
 * the body unauthenticated), SigV4a.
 *
 * Threading: pure functions; a struct gw_sigv4_key_cache belongs to one
 * thread. Memory: verify and sign work in bounded stack buffers (see the
 * GW_SIGV4_MAX_* limits in gw.h) and allocate nothing themselves (only a
 * secret longer than 252 bytes takes one short-lived heap copy). With a
 * key cache, verify also reuses the cache's OpenSSL contexts instead of
 * the one-shot SHA256()/HMAC(), which fetch and allocate per call: about
 * 2 us instead of 12 us per verify of a small SQS request, and ~8 small
 * allocations left inside OpenSSL's EVP init instead of ~80.
 */
#include "gw_sigv4_int.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/params.h>
#include <openssl/sha.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DEFAULT_CACHE_SLOTS 64
#define MAX_CACHE_SLOTS 65536
#define CACHE_FIELD_MAX 64 /* longer access key ids, regions, services bypass the cache */
#define STRING_TO_SIGN_MAX 512
#define SIGNED_LIST_MAX 4096

/* ---- small byte helpers ------------------------------------------------ */

static char lower(char c)
{
    return (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
}

static bool eq_ci(struct sl_slice a, struct sl_slice b)
{
    if (a.n != b.n) {
        return false;
    }
    for (size_t i = 0; i < a.n; i++) {
        if (lower(a.p[i]) != lower(b.p[i])) {
            return false;
        }
    }
    return true;
}

static bool eq_ci_cstr(struct sl_slice a, const char *s)
{
    return eq_ci(a, sl_slice_cstr(s));
}

/* What the header-value normalisation treats as white space. */
static bool is_ws(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static struct sl_slice trim(struct sl_slice s)
{
    while (s.n > 0 && is_ws(s.p[0])) {
        s.p++;
        s.n--;
    }
    while (s.n > 0 && is_ws(s.p[s.n - 1])) {
        s.n--;
    }
    return s;
}

static bool is_unreserved(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_' || c == '.' || c == '~';
}

static int hex_value(char c)
{
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    if (c >= 'A' && c <= 'F') {
        return c - 'A' + 10;
    }
    return -1;
}

static bool is_hex(struct sl_slice s)
{
    for (size_t i = 0; i < s.n; i++) {
        if (hex_value(s.p[i]) < 0) {
            return false;
        }
    }
    return true;
}

static bool hex_decode32(struct sl_slice s, uint8_t out[32])
{
    if (s.n != 64) {
        return false;
    }
    for (size_t i = 0; i < 32; i++) {
        int hi = hex_value(s.p[2 * i]);
        int lo = hex_value(s.p[2 * i + 1]);
        if (hi < 0 || lo < 0) {
            return false;
        }
        out[i] = (uint8_t)(hi << 4 | lo);
    }
    return true;
}

static void set_why(const char **why, const char *text)
{
    if (why) {
        *why = text;
    }
}

/* ---- bounded output ---------------------------------------------------- */

/* A fixed buffer that refuses to overflow: once full it stays full, and the
 * caller checks once at the end instead of after every append. One byte is
 * kept for the NUL. */
struct out {
    char *p;
    size_t n;
    size_t cap;
    bool full;
};

static void out_put(struct out *o, const void *s, size_t n)
{
    if (n == 0) {
        return; /* s may be NULL: an empty slice */
    }
    if (o->full || n >= o->cap - o->n) {
        o->full = true;
        return;
    }
    memcpy(o->p + o->n, s, n);
    o->n += n;
}

static void out_byte(struct out *o, char c)
{
    out_put(o, &c, 1);
}

static void out_slice(struct out *o, struct sl_slice s)
{
    out_put(o, s.p, s.n);
}

static void out_lower(struct out *o, struct sl_slice s)
{
    for (size_t i = 0; i < s.n; i++) {
        out_byte(o, lower(s.p[i]));
    }
}

static void out_encoded_byte(struct out *o, unsigned char c)
{
    static const char digits[] = "0123456789ABCDEF";
    if (is_unreserved(c)) {
        out_byte(o, (char)c);
        return;
    }
    char esc[3] = {'%', digits[c >> 4], digits[c & 15]};
    out_put(o, esc, sizeof esc);
}

static void out_encoded(struct out *o, struct sl_slice s)
{
    for (size_t i = 0; i < s.n; i++) {
        out_encoded_byte(o, (unsigned char)s.p[i]);
    }
}

/* Percent-decodes s (valid %XX only; a stray '%' stays literal) and
 * re-encodes it with AWS's unreserved set, so "a%20b", "a%20B"-style and
 * over-encoded forms all canonicalise the same way. */
static void out_reencoded(struct out *o, struct sl_slice s)
{
    for (size_t i = 0; i < s.n; i++) {
        unsigned char c = (unsigned char)s.p[i];
        if (c == '%' && i + 2 < s.n && hex_value(s.p[i + 1]) >= 0 && hex_value(s.p[i + 2]) >= 0) {
            c = (unsigned char)(hex_value(s.p[i + 1]) << 4 | hex_value(s.p[i + 2]));
            i += 2;
        }
        out_encoded_byte(o, c);
    }
}

/* Collapses runs of white space to one space and trims both ends. */
static void out_header_value(struct out *o, struct sl_slice v)
{
    bool pending_space = false;
    bool wrote = false;
    for (size_t i = 0; i < v.n; i++) {
        if (is_ws(v.p[i])) {
            pending_space = true;
            continue;
        }
        if (pending_space && wrote) {
            out_byte(o, ' ');
        }
        out_byte(o, v.p[i]);
        pending_space = false;
        wrote = true;
    }
}

/* ---- canonical request ------------------------------------------------- */

static int canon_path(struct out *o, struct sl_slice path, const char **why)
{
    if (path.n == 0) {
        out_byte(o, '/');
        return SL_OK;
    }
    struct sl_slice seg[GW_SIGV4_MAX_PATH_SEGMENTS];
    size_t nseg = 0;
    size_t start = 0;
    for (size_t j = 0; j <= path.n; j++) {
        if (j < path.n && path.p[j] != '/') {
            continue;
        }
        struct sl_slice s = {path.p + start, j - start};
        start = j + 1;
        if (s.n == 0 || sl_slice_eq_cstr(s, ".")) {
            continue;
        }
        if (sl_slice_eq_cstr(s, "..")) {
            if (nseg > 0) {
                nseg--;
            }
            continue;
        }
        if (nseg == GW_SIGV4_MAX_PATH_SEGMENTS) {
            set_why(why, "the path has more segments than the verifier allows");
            return SL_ETOOBIG;
        }
        seg[nseg++] = s;
    }
    if (path.p[0] == '/') {
        out_byte(o, '/');
    }
    for (size_t i = 0; i < nseg; i++) {
        if (i > 0) {
            out_byte(o, '/');
        }
        out_encoded(o, seg[i]);
    }
    if (nseg > 0 && path.p[path.n - 1] == '/') {
        out_byte(o, '/');
    }
    return SL_OK;
}

/* One query parameter, re-encoded, as offsets into a scratch buffer. */
struct qparam {
    uint32_t name_off, name_len, value_off, value_len;
};

static int cmp_bytes(const char *a, size_t an, const char *b, size_t bn)
{
    int c = memcmp(a, b, SL_MIN(an, bn));
    if (c != 0) {
        return c;
    }
    return (an > bn) - (an < bn);
}

static int qparam_cmp(const char *base, const struct qparam *a, const struct qparam *b)
{
    int c = cmp_bytes(base + a->name_off, a->name_len, base + b->name_off, b->name_len);
    if (c != 0) {
        return c;
    }
    return cmp_bytes(base + a->value_off, a->value_len, base + b->value_off, b->value_len);
}

static int canon_query(struct out *o, struct sl_slice q, const char **why)
{
    if (q.n == 0) {
        return SL_OK;
    }
    struct qparam prm[GW_SIGV4_MAX_QUERY_PARAMS];
    char scratch[GW_SIGV4_MAX_CANONICAL];
    struct out sc = {scratch, 0, sizeof scratch, false};
    size_t np = 0;
    size_t start = 0;
    for (size_t j = 0; j <= q.n; j++) {
        if (j < q.n && q.p[j] != '&') {
            continue;
        }
        struct sl_slice piece = {q.p + start, j - start};
        start = j + 1;
        if (piece.n == 0) {
            continue;
        }
        if (np == GW_SIGV4_MAX_QUERY_PARAMS) {
            set_why(why, "the query has more parameters than the verifier allows");
            return SL_ETOOBIG;
        }
        const char *eq = memchr(piece.p, '=', piece.n);
        struct sl_slice name = {piece.p, eq ? (size_t)(eq - piece.p) : piece.n};
        struct sl_slice value = {eq ? eq + 1 : piece.p + piece.n, eq ? piece.n - name.n - 1 : 0};
        struct qparam *p = &prm[np++];
        p->name_off = (uint32_t)sc.n;
        out_reencoded(&sc, name);
        p->name_len = (uint32_t)(sc.n - p->name_off);
        p->value_off = (uint32_t)sc.n;
        out_reencoded(&sc, value);
        p->value_len = (uint32_t)(sc.n - p->value_off);
    }
    if (sc.full) {
        set_why(why, "the query is longer than the verifier allows");
        return SL_ETOOBIG;
    }
    /* Insertion sort: n is bounded and small, and it needs no context
     * pointer, which qsort's comparator cannot take. */
    for (size_t i = 1; i < np; i++) {
        struct qparam cur = prm[i];
        size_t k = i;
        while (k > 0 && qparam_cmp(scratch, &prm[k - 1], &cur) > 0) {
            prm[k] = prm[k - 1];
            k--;
        }
        prm[k] = cur;
    }
    for (size_t i = 0; i < np; i++) {
        if (i > 0) {
            out_byte(o, '&');
        }
        out_put(o, scratch + prm[i].name_off, prm[i].name_len);
        out_byte(o, '=');
        out_put(o, scratch + prm[i].value_off, prm[i].value_len);
    }
    return SL_OK;
}

static bool is_authority_name(struct sl_slice name)
{
    return eq_ci_cstr(name, "host") || eq_ci_cstr(name, ":authority");
}

/* Emits "name:value\n" for one signed header name. */
static int canon_header(struct out *o, const struct gw_sigv4_request *req, struct sl_slice name,
                        const char **why)
{
    out_lower(o, name);
    out_byte(o, ':');
    bool found = false;
    for (size_t i = 0; i < req->header_count; i++) {
        if (!eq_ci(req->headers[i].name, name)) {
            continue;
        }
        if (found) {
            out_byte(o, ',');
        }
        out_header_value(o, req->headers[i].value);
        found = true;
    }
    if (!found) {
        if (!is_authority_name(name) || req->authority.n == 0) {
            set_why(why, "a header named in SignedHeaders is absent from the request");
            return SL_ENOTFOUND;
        }
        out_header_value(o, req->authority);
    }
    out_byte(o, '\n');
    return SL_OK;
}

int gw__sigv4_canonical_request(const struct gw_sigv4_request *req, struct sl_slice signed_headers,
                                struct sl_slice payload_hash, char *out, size_t cap, size_t *len,
                                const char **why)
{
    SL_ASSERT(cap > 0);
    struct out o = {out, 0, cap, false};
    *len = 0;
    out[0] = '\0';
    if (signed_headers.n == 0) {
        set_why(why, "SignedHeaders is empty");
        return SL_EINVAL;
    }
    out_slice(&o, req->method);
    out_byte(&o, '\n');
    int rc = canon_path(&o, req->path, why);
    if (rc != SL_OK) {
        return rc;
    }
    out_byte(&o, '\n');
    rc = canon_query(&o, req->query, why);
    if (rc != SL_OK) {
        return rc;
    }
    out_byte(&o, '\n');
    size_t count = 0;
    size_t start = 0;
    for (size_t j = 0; j <= signed_headers.n; j++) {
        if (j < signed_headers.n && signed_headers.p[j] != ';') {
            continue;
        }
        struct sl_slice name = {signed_headers.p + start, j - start};
        start = j + 1;
        if (name.n == 0) {
            set_why(why, "SignedHeaders has an empty name");
            return SL_EINVAL;
        }
        if (++count > GW_SIGV4_MAX_SIGNED_HEADERS) {
            set_why(why, "SignedHeaders names more headers than the verifier allows");
            return SL_ETOOBIG;
        }
        rc = canon_header(&o, req, name, why);
        if (rc != SL_OK) {
            return rc;
        }
    }
    out_byte(&o, '\n');
    out_lower(&o, signed_headers);
    out_byte(&o, '\n');
    out_slice(&o, payload_hash);
    if (o.full) {
        set_why(why, "the canonical request is longer than the verifier allows");
        return SL_ETOOBIG;
    }
    out[o.n] = '\0';
    *len = o.n;
    return SL_OK;
}

/* ---- string to sign and keys ------------------------------------------- */

/* Reusable OpenSSL contexts, kept in a thread's key cache. OpenSSL 3's
 * one-shot SHA256() and HMAC() fetch the algorithm and allocate a context
 * on every call (dozens of mallocs per verify); with these, the common
 * path allocates nothing. NULL means "use the one-shot functions". */
struct crypto {
    EVP_MD *sha256;
    EVP_MD_CTX *md;
    EVP_MAC_CTX *mac;
    /* The signing key mac holds, if any: a request signed with the same
     * key as the one before (one tenant, one day) re-initialises the HMAC
     * from its kept inner and outer states instead of keying it again. */
    bool mac_keyed;
    uint8_t mac_key[GW_SIGV4_KEY_BYTES];
};

static bool crypto_init(struct crypto *cr)
{
    EVP_MAC *hmac = EVP_MAC_fetch(NULL, "HMAC", NULL);
    cr->sha256 = EVP_MD_fetch(NULL, "SHA256", NULL);
    cr->md = EVP_MD_CTX_new();
    cr->mac = hmac ? EVP_MAC_CTX_new(hmac) : NULL;
    EVP_MAC_free(hmac); /* the context holds its own reference */
    char digest[] = "SHA256";
    OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string("digest", digest, 0),
                           OSSL_PARAM_construct_end()};
    return cr->sha256 && cr->md && cr->mac && EVP_MAC_CTX_set_params(cr->mac, params) == 1;
}

static void crypto_fini(struct crypto *cr)
{
    OPENSSL_cleanse(cr->mac_key, sizeof cr->mac_key);
    EVP_MAC_CTX_free(cr->mac);
    EVP_MD_CTX_free(cr->md);
    EVP_MD_free(cr->sha256);
}

static void sha256(const struct crypto *cr, const void *data, size_t n,
                   uint8_t out[SHA256_DIGEST_LENGTH])
{
    if (!cr) {
        SL_ASSERT(SHA256(data, n, out) != NULL);
        return;
    }
    unsigned int len = 0;
    bool ok = EVP_DigestInit_ex2(cr->md, cr->sha256, NULL) == 1 &&
              EVP_DigestUpdate(cr->md, data, n) == 1 && EVP_DigestFinal_ex(cr->md, out, &len) == 1;
    SL_ASSERT(ok && len == SHA256_DIGEST_LENGTH);
}

static void sha256_hex(const struct crypto *cr, const void *data, size_t n,
                       char hex[GW_SIGV4_HASH_HEX + 1])
{
    uint8_t digest[SHA256_DIGEST_LENGTH];
    sha256(cr, data, n, digest);
    sl_hex_encode(digest, sizeof digest, hex);
}

static void hmac_sha256(struct crypto *cr, const void *key, size_t key_len, struct sl_slice data,
                        uint8_t out[GW_SIGV4_KEY_BYTES])
{
    if (!cr) {
        unsigned int out_len = GW_SIGV4_KEY_BYTES;
        unsigned char *done = HMAC(EVP_sha256(), key, (int)key_len, (const unsigned char *)data.p,
                                   data.n, out, &out_len);
        SL_ASSERT(done != NULL && out_len == GW_SIGV4_KEY_BYTES);
        return;
    }
    /* EVP_MAC_init with a NULL key re-initialises with the key it has */
    bool same_key = cr->mac_keyed && key_len == sizeof cr->mac_key &&
                    CRYPTO_memcmp(cr->mac_key, key, key_len) == 0;
    cr->mac_keyed = false;
    size_t out_len = 0;
    bool ok = EVP_MAC_init(cr->mac, same_key ? NULL : key, same_key ? 0 : key_len, NULL) == 1 &&
              EVP_MAC_update(cr->mac, (const unsigned char *)data.p, data.n) == 1 &&
              EVP_MAC_final(cr->mac, out, &out_len, GW_SIGV4_KEY_BYTES) == 1;
    SL_ASSERT(ok && out_len == GW_SIGV4_KEY_BYTES);
    if (key_len == sizeof cr->mac_key) {
        memcpy(cr->mac_key, key, key_len);
        cr->mac_keyed = true;
    }
}

static size_t string_to_sign(const struct crypto *cr, struct sl_slice amz_date,
                             struct sl_slice region, struct sl_slice service, const char *canonical,
                             size_t canonical_len, char *out, size_t cap)
{
    char hex[GW_SIGV4_HASH_HEX + 1];
    sha256_hex(cr, canonical, canonical_len, hex);
    struct out o = {out, 0, cap, cap == 0};
    out_put(&o, GW_SIGV4_ALGORITHM "\n", sizeof GW_SIGV4_ALGORITHM);
    out_slice(&o, amz_date);
    out_byte(&o, '\n');
    out_put(&o, amz_date.p, SL_MIN(amz_date.n, (size_t)8));
    out_byte(&o, '/');
    out_slice(&o, region);
    out_byte(&o, '/');
    out_slice(&o, service);
    out_put(&o, "/aws4_request\n", 14);
    out_put(&o, hex, GW_SIGV4_HASH_HEX);
    if (o.full) {
        return 0;
    }
    out[o.n] = '\0';
    return o.n;
}

size_t gw__sigv4_string_to_sign(struct sl_slice amz_date, struct sl_slice region,
                                struct sl_slice service, const char *canonical,
                                size_t canonical_len, char *out, size_t cap)
{
    return string_to_sign(NULL, amz_date, region, service, canonical, canonical_len, out, cap);
}

static void derive_key(struct crypto *cr, struct sl_slice secret, struct sl_slice date,
                       struct sl_slice region, struct sl_slice service,
                       uint8_t key[GW_SIGV4_KEY_BYTES])
{
    char stack_seed[256];
    char *seed = secret.n + 4 <= sizeof stack_seed ? stack_seed : sl_xmalloc(secret.n + 4);
    memcpy(seed, "AWS4", 4);
    if (secret.n > 0) {
        memcpy(seed + 4, secret.p, secret.n);
    }
    /* Two buffers in turn: HMAC's key and output never alias. */
    uint8_t k_date[GW_SIGV4_KEY_BYTES], k_region[GW_SIGV4_KEY_BYTES];
    hmac_sha256(cr, seed, secret.n + 4, date, k_date);
    OPENSSL_cleanse(seed, secret.n + 4);
    if (seed != stack_seed) {
        free(seed);
    }
    hmac_sha256(cr, k_date, sizeof k_date, region, k_region);
    hmac_sha256(cr, k_region, sizeof k_region, service, k_date); /* now kService */
    hmac_sha256(cr, k_date, sizeof k_date, SL_SLICE_LIT("aws4_request"), key);
    OPENSSL_cleanse(k_date, sizeof k_date);
    OPENSSL_cleanse(k_region, sizeof k_region);
    if (cr) { /* keep no copy of an intermediate key */
        OPENSSL_cleanse(cr->mac_key, sizeof cr->mac_key);
        cr->mac_keyed = false;
    }
}

void gw__sigv4_derive_key(struct sl_slice secret, struct sl_slice date, struct sl_slice region,
                          struct sl_slice service, uint8_t key[GW_SIGV4_KEY_BYTES])
{
    derive_key(NULL, secret, date, region, service, key);
}

/* ---- the key cache ----------------------------------------------------- */

struct key_slot {
    uint64_t tag;       /* hash of the tuple, to skip most slots quickly */
    uint64_t last_used; /* cache tick; 0 = empty */
    uint8_t secret_fp[SHA256_DIGEST_LENGTH];
    uint8_t key[GW_SIGV4_KEY_BYTES];
    uint8_t akid_len, region_len, service_len;
    char date[8];
    char akid[CACHE_FIELD_MAX];
    char region[CACHE_FIELD_MAX];
    char service[CACHE_FIELD_MAX];
};

struct gw_sigv4_key_cache {
    struct crypto crypto;
    size_t nslots;
    uint64_t tick;
    struct key_slot slots[];
};

struct gw_sigv4_key_cache *gw_sigv4_key_cache_new(size_t slots)
{
    if (slots == 0) {
        slots = DEFAULT_CACHE_SLOTS;
    }
    slots = SL_MIN(slots, (size_t)MAX_CACHE_SLOTS);
    struct gw_sigv4_key_cache *c = sl_xcalloc(1, sizeof *c + slots * sizeof(struct key_slot));
    c->nslots = slots;
    if (!crypto_init(&c->crypto)) {
        sl_log(SL_LOG_ERROR, "gw", "OpenSSL has no SHA-256/HMAC; cannot verify signatures");
        abort();
    }
    return c;
}

void gw_sigv4_key_cache_free(struct gw_sigv4_key_cache *c)
{
    if (!c) {
        return;
    }
    OPENSSL_cleanse(c->slots, c->nslots * sizeof(struct key_slot));
    crypto_fini(&c->crypto);
    free(c);
}

size_t gw__sigv4_key_cache_used(const struct gw_sigv4_key_cache *c)
{
    size_t used = 0;
    for (size_t i = 0; i < c->nslots; i++) {
        used += c->slots[i].last_used != 0;
    }
    return used;
}

static uint64_t fnv1a(uint64_t h, struct sl_slice s)
{
    for (size_t i = 0; i < s.n; i++) {
        h ^= (unsigned char)s.p[i];
        h *= 0x100000001b3ULL;
    }
    h ^= 0xff; /* field separator: ("ab","c") and ("a","bc") differ */
    h *= 0x100000001b3ULL;
    return h;
}

static bool slot_matches(const struct key_slot *s, uint64_t tag, struct sl_slice akid,
                         struct sl_slice date, struct sl_slice region, struct sl_slice service)
{
    return s->last_used != 0 && s->tag == tag && s->akid_len == akid.n &&
           memcmp(s->akid, akid.p, akid.n) == 0 && memcmp(s->date, date.p, 8) == 0 &&
           s->region_len == region.n && memcmp(s->region, region.p, region.n) == 0 &&
           s->service_len == service.n && memcmp(s->service, service.p, service.n) == 0;
}

void gw__sigv4_signing_key(struct gw_sigv4_key_cache *cache, struct sl_slice access_key_id,
                           struct sl_slice secret, struct sl_slice date, struct sl_slice region,
                           struct sl_slice service, uint8_t key[GW_SIGV4_KEY_BYTES], bool *hit)
{
    if (hit) {
        *hit = false;
    }
    if (!cache || date.n != 8 || access_key_id.n == 0 || region.n == 0 || service.n == 0 ||
        access_key_id.n > CACHE_FIELD_MAX || region.n > CACHE_FIELD_MAX ||
        service.n > CACHE_FIELD_MAX) {
        derive_key(cache ? &cache->crypto : NULL, secret, date, region, service, key);
        return;
    }
    uint8_t fp[SHA256_DIGEST_LENGTH];
    sha256(&cache->crypto, secret.p, secret.n, fp);
    uint64_t tag = 0xcbf29ce484222325ULL;
    tag = fnv1a(tag, access_key_id);
    tag = fnv1a(tag, date);
    tag = fnv1a(tag, region);
    tag = fnv1a(tag, service);

    struct key_slot *victim = &cache->slots[0];
    for (size_t i = 0; i < cache->nslots; i++) {
        struct key_slot *s = &cache->slots[i];
        if (slot_matches(s, tag, access_key_id, date, region, service)) {
            if (CRYPTO_memcmp(s->secret_fp, fp, sizeof fp) == 0) {
                s->last_used = ++cache->tick;
                memcpy(key, s->key, GW_SIGV4_KEY_BYTES);
                if (hit) {
                    *hit = true;
                }
                return;
            }
            victim = s; /* same tuple, rotated secret: replace in place */
            break;
        }
        if (s->last_used < victim->last_used) {
            victim = s; /* empty slots have last_used 0 and win */
        }
    }
    derive_key(&cache->crypto, secret, date, region, service, key);
    victim->tag = tag;
    victim->last_used = ++cache->tick;
    memcpy(victim->secret_fp, fp, sizeof fp);
    memcpy(victim->key, key, GW_SIGV4_KEY_BYTES);
    victim->akid_len = (uint8_t)access_key_id.n;
    memcpy(victim->akid, access_key_id.p, access_key_id.n);
    memcpy(victim->date, date.p, 8);
    victim->region_len = (uint8_t)region.n;
    memcpy(victim->region, region.p, region.n);
    victim->service_len = (uint8_t)service.n;
    memcpy(victim->service, service.p, service.n);
}

/* ---- dates ------------------------------------------------------------- */

static bool parse_digits(const char *p, size_t n, int *out)
{
    int v = 0;
    for (size_t i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9') {
            return false;
        }
        v = v * 10 + (p[i] - '0');
    }
    *out = v;
    return true;
}

bool gw__sigv4_parse_amz_date(struct sl_slice s, int64_t *out)
{
    int y, mo, d, h, mi, sec;
    if (s.n != 16 || s.p[8] != 'T' || s.p[15] != 'Z' || !parse_digits(s.p, 4, &y) ||
        !parse_digits(s.p + 4, 2, &mo) || !parse_digits(s.p + 6, 2, &d) ||
        !parse_digits(s.p + 9, 2, &h) || !parse_digits(s.p + 11, 2, &mi) ||
        !parse_digits(s.p + 13, 2, &sec)) {
        return false;
    }
    if (y < 1970 || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 59) {
        return false;
    }
    struct tm tm = {.tm_year = y - 1900,
                    .tm_mon = mo - 1,
                    .tm_mday = d,
                    .tm_hour = h,
                    .tm_min = mi,
                    .tm_sec = sec};
    time_t t = timegm(&tm);
    struct tm back;
    /* timegm normalises 31 April to 1 May: a round trip catches it. */
    if (t == (time_t)-1 || !gmtime_r(&t, &back) || back.tm_mday != d || back.tm_mon != mo - 1) {
        return false;
    }
    *out = (int64_t)t;
    return true;
}

void gw_sigv4_amz_date(int64_t now_s, char amz_date[17])
{
    /* Clamp to years 1970..9999 so the text always has 16 characters. */
    now_s = SL_MAX(now_s, (int64_t)0);
    now_s = SL_MIN(now_s, (int64_t)253402300799);
    time_t t = (time_t)now_s;
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(amz_date, 17, "%Y%m%dT%H%M%SZ", &tm);
}

/* ---- Authorization header ---------------------------------------------- */

static bool valid_scope_part(struct sl_slice s)
{
    if (s.n == 0) {
        return false;
    }
    for (size_t i = 0; i < s.n; i++) {
        char c = s.p[i];
        if (c <= ' ' || c == 0x7f || c == ',' || c == '/') {
            return false;
        }
    }
    return true;
}

static bool valid_signed_headers(struct sl_slice s)
{
    if (s.n == 0 || s.p[0] == ';' || s.p[s.n - 1] == ';') {
        return false;
    }
    for (size_t i = 0; i < s.n; i++) {
        char c = s.p[i];
        if (c <= ' ' || c == 0x7f || c == ',' || c == '=' || (c >= 'A' && c <= 'Z') ||
            (c == ';' && s.p[i + 1] == ';')) {
            return false;
        }
    }
    return true;
}

static enum gw_sigv4_status parse_credential(struct sl_slice v, struct gw_sigv4_auth *out,
                                             const char **why)
{
    struct sl_slice part[5];
    size_t np = 0;
    size_t start = 0;
    for (size_t j = 0; j <= v.n; j++) {
        if (j < v.n && v.p[j] != '/') {
            continue;
        }
        if (np == 5) {
            set_why(why, "Credential has more than five '/'-separated parts");
            return GW_SIGV4_INCOMPLETE;
        }
        part[np++] = (struct sl_slice){v.p + start, j - start};
        start = j + 1;
    }
    if (np != 5) {
        set_why(why, "Credential must be KEY/YYYYMMDD/REGION/SERVICE/aws4_request");
        return GW_SIGV4_INCOMPLETE;
    }
    int ignored;
    if (!valid_scope_part(part[0]) || part[1].n != 8 || !parse_digits(part[1].p, 8, &ignored) ||
        !valid_scope_part(part[2]) || !valid_scope_part(part[3])) {
        set_why(why, "Credential must be KEY/YYYYMMDD/REGION/SERVICE/aws4_request");
        return GW_SIGV4_INCOMPLETE;
    }
    if (!sl_slice_eq_cstr(part[4], "aws4_request")) {
        set_why(why, "Credential scope must end in aws4_request");
        return GW_SIGV4_INCOMPLETE;
    }
    out->access_key_id = part[0];
    out->date = part[1];
    out->region = part[2];
    out->service = part[3];
    return GW_SIGV4_OK;
}

enum gw_sigv4_status gw_sigv4_parse_authorization(struct sl_slice value, struct gw_sigv4_auth *out,
                                                  const char **why)
{
    memset(out, 0, sizeof *out);
    value = trim(value);
    if (value.n == 0) {
        set_why(why, "the Authorization header is empty");
        return GW_SIGV4_MISSING;
    }
    size_t alg_len = 0;
    while (alg_len < value.n && value.p[alg_len] != ' ' && value.p[alg_len] != '\t') {
        alg_len++;
    }
    if (!sl_slice_eq((struct sl_slice){value.p, alg_len}, SL_SLICE_LIT(GW_SIGV4_ALGORITHM))) {
        set_why(why, "the algorithm must be AWS4-HMAC-SHA256");
        return GW_SIGV4_INCOMPLETE;
    }
    struct sl_slice rest = {value.p + alg_len, value.n - alg_len};
    struct sl_slice credential = {NULL, 0};
    bool have_credential = false, have_signed = false, have_signature = false;
    size_t start = 0;
    for (size_t j = 0; j <= rest.n; j++) {
        if (j < rest.n && rest.p[j] != ',') {
            continue;
        }
        struct sl_slice item = trim((struct sl_slice){rest.p + start, j - start});
        start = j + 1;
        const char *eq = item.n ? memchr(item.p, '=', item.n) : NULL;
        if (!eq) {
            set_why(why, "the Authorization header has a part that is not key=value");
            return GW_SIGV4_INCOMPLETE;
        }
        struct sl_slice key = {item.p, (size_t)(eq - item.p)};
        struct sl_slice val = {eq + 1, item.n - key.n - 1};
        bool *seen;
        if (sl_slice_eq_cstr(key, "Credential")) {
            seen = &have_credential;
            credential = val;
        } else if (sl_slice_eq_cstr(key, "SignedHeaders")) {
            seen = &have_signed;
            out->signed_headers = val;
        } else if (sl_slice_eq_cstr(key, "Signature")) {
            seen = &have_signature;
            out->signature = val;
        } else {
            set_why(why, "the Authorization header has an unknown part");
            return GW_SIGV4_INCOMPLETE;
        }
        if (*seen) {
            set_why(why, "the Authorization header repeats a part");
            return GW_SIGV4_INCOMPLETE;
        }
        *seen = true;
    }
    if (!have_credential) {
        set_why(why, "the Authorization header lacks Credential");
        return GW_SIGV4_INCOMPLETE;
    }
    if (!have_signed) {
        set_why(why, "the Authorization header lacks SignedHeaders");
        return GW_SIGV4_INCOMPLETE;
    }
    if (!have_signature) {
        set_why(why, "the Authorization header lacks Signature");
        return GW_SIGV4_INCOMPLETE;
    }
    enum gw_sigv4_status st = parse_credential(credential, out, why);
    if (st != GW_SIGV4_OK) {
        return st;
    }
    if (!valid_signed_headers(out->signed_headers)) {
        set_why(why, "SignedHeaders must be lower-case names separated by ';'");
        return GW_SIGV4_INCOMPLETE;
    }
    if (out->signature.n != GW_SIGV4_HASH_HEX || !is_hex(out->signature)) {
        set_why(why, "Signature must be 64 hex digits");
        return GW_SIGV4_INCOMPLETE;
    }
    return GW_SIGV4_OK;
}

/* ---- verify ------------------------------------------------------------ */

static const struct gw_header *find_header(const struct gw_sigv4_request *req, const char *name)
{
    struct sl_slice n = sl_slice_cstr(name);
    for (size_t i = 0; i < req->header_count; i++) {
        if (eq_ci(req->headers[i].name, n)) {
            return &req->headers[i];
        }
    }
    return NULL;
}

static bool list_has(struct sl_slice list, const char *name)
{
    struct sl_slice n = sl_slice_cstr(name);
    size_t start = 0;
    for (size_t j = 0; j <= list.n; j++) {
        if (j < list.n && list.p[j] != ';') {
            continue;
        }
        if (eq_ci((struct sl_slice){list.p + start, j - start}, n)) {
            return true;
        }
        start = j + 1;
    }
    return false;
}

/* Maps a canonicalisation failure to what the client is told. */
static enum gw_sigv4_status canon_status(int rc)
{
    return rc == SL_ENOTFOUND ? GW_SIGV4_MISMATCH : GW_SIGV4_INCOMPLETE;
}

enum gw_sigv4_status gw_sigv4_verify(const struct gw_sigv4_request *req,
                                     const struct gw_sigv4_auth *auth, const char *secret,
                                     const char *region, const char *service, int64_t now_s,
                                     struct gw_sigv4_key_cache *cache, const char **why)
{
    set_why(why, "");
    if (find_header(req, "x-amz-security-token")) {
        set_why(why, "temporary credentials (X-Amz-Security-Token) are not supported");
        return GW_SIGV4_TOKEN;
    }
    const char *date_name = "x-amz-date";
    const struct gw_header *date_hdr = find_header(req, date_name);
    if (!date_hdr) {
        date_name = "date";
        date_hdr = find_header(req, date_name);
    }
    if (!date_hdr) {
        set_why(why, "the request has neither an x-amz-date nor a date header");
        return GW_SIGV4_INCOMPLETE;
    }
    struct sl_slice amz_date = trim(date_hdr->value);
    int64_t t;
    if (!gw__sigv4_parse_amz_date(amz_date, &t)) {
        set_why(why, "the request date must be in ISO 8601 basic format, YYYYMMDD'T'HHMMSS'Z'");
        return GW_SIGV4_INCOMPLETE;
    }
    if (!sl_slice_eq_cstr(auth->region, region)) {
        set_why(why, "the credential scope names another region");
        return GW_SIGV4_SCOPE;
    }
    if (!sl_slice_eq_cstr(auth->service, service)) {
        set_why(why, "the credential scope names another service");
        return GW_SIGV4_SCOPE;
    }
    if (auth->date.n != 8 || memcmp(auth->date.p, amz_date.p, 8) != 0) {
        set_why(why, "the credential scope date is not the day of the request date");
        return GW_SIGV4_SCOPE;
    }
    if (t > now_s + GW_SIGV4_MAX_SKEW_S || t < now_s - GW_SIGV4_MAX_SKEW_S) {
        set_why(why, "the request date is more than 15 minutes from the server's clock");
        return GW_SIGV4_EXPIRED;
    }
    if (!list_has(auth->signed_headers, "host") && !list_has(auth->signed_headers, ":authority")) {
        set_why(why, "SignedHeaders must include host (or :authority)");
        return GW_SIGV4_INCOMPLETE;
    }
    if (!list_has(auth->signed_headers, date_name)) {
        set_why(why, "SignedHeaders must include the date header");
        return GW_SIGV4_INCOMPLETE;
    }
    uint8_t given[GW_SIGV4_KEY_BYTES];
    if (!hex_decode32(auth->signature, given)) {
        set_why(why, "Signature must be 64 hex digits");
        return GW_SIGV4_INCOMPLETE;
    }

    struct crypto *cr = cache ? &cache->crypto : NULL;
    char body_hash[GW_SIGV4_HASH_HEX + 1];
    sha256_hex(cr, req->payload.p, req->payload.n, body_hash);
    struct sl_slice payload_hash = {body_hash, GW_SIGV4_HASH_HEX};
    const struct gw_header *content_sha = find_header(req, "x-amz-content-sha256");
    if (content_sha) {
        struct sl_slice claimed = trim(content_sha->value);
        if (!eq_ci(claimed, payload_hash)) {
            set_why(why, sl_slice_eq_cstr(claimed, "UNSIGNED-PAYLOAD")
                             ? "UNSIGNED-PAYLOAD is not accepted: the body must be signed"
                             : "x-amz-content-sha256 is not the SHA-256 of the body");
            return GW_SIGV4_MISMATCH;
        }
        payload_hash = claimed; /* as the client wrote it into its canonical request */
    }

    char canonical[GW_SIGV4_MAX_CANONICAL];
    size_t canonical_len;
    int rc = gw__sigv4_canonical_request(req, auth->signed_headers, payload_hash, canonical,
                                         sizeof canonical, &canonical_len, why);
    if (rc != SL_OK) {
        return canon_status(rc);
    }
    char sts[STRING_TO_SIGN_MAX];
    size_t sts_len = string_to_sign(cr, amz_date, auth->region, auth->service, canonical,
                                    canonical_len, sts, sizeof sts);
    if (sts_len == 0) {
        set_why(why, "the credential scope is longer than the verifier allows");
        return GW_SIGV4_INCOMPLETE;
    }
    uint8_t key[GW_SIGV4_KEY_BYTES];
    uint8_t mac[GW_SIGV4_KEY_BYTES];
    gw__sigv4_signing_key(cache, auth->access_key_id, sl_slice_cstr(secret), auth->date,
                          auth->region, auth->service, key, NULL);
    hmac_sha256(cr, key, sizeof key, (struct sl_slice){sts, sts_len}, mac);
    OPENSSL_cleanse(key, sizeof key);
    if (CRYPTO_memcmp(mac, given, sizeof mac) != 0) {
        set_why(why, "the signature does not match");
        return GW_SIGV4_MISMATCH;
    }
    set_why(why, "");
    return GW_SIGV4_OK;
}

/* ---- sign -------------------------------------------------------------- */

static int cmp_name_ci(struct sl_slice a, struct sl_slice b)
{
    for (size_t i = 0; i < a.n && i < b.n; i++) {
        unsigned char x = (unsigned char)lower(a.p[i]), y = (unsigned char)lower(b.p[i]);
        if (x != y) {
            return x < y ? -1 : 1;
        }
    }
    return (a.n > b.n) - (a.n < b.n);
}

/* A name that can stand in a SignedHeaders list (any case: it is
 * lower-cased there). */
static bool valid_header_name(struct sl_slice name)
{
    if (name.n == 0) {
        return false;
    }
    for (size_t i = 0; i < name.n; i++) {
        char c = name.p[i];
        if (c <= ' ' || c == 0x7f || c == ',' || c == ';' || c == '=') {
            return false;
        }
    }
    return true;
}

/* Writes the sorted, de-duplicated, lower-cased names of req's headers,
 * joined with ';', into o. */
static int signed_list_of(const struct gw_sigv4_request *req, struct out *o)
{
    struct sl_slice names[GW_SIGV4_MAX_SIGNED_HEADERS];
    size_t n = 0;
    for (size_t i = 0; i < req->header_count; i++) {
        struct sl_slice cur = req->headers[i].name;
        if (!valid_header_name(cur)) {
            return SL_EINVAL;
        }
        size_t k = 0;
        while (k < n && cmp_name_ci(names[k], cur) < 0) {
            k++;
        }
        if (k < n && cmp_name_ci(names[k], cur) == 0) {
            continue;
        }
        if (n == GW_SIGV4_MAX_SIGNED_HEADERS) {
            return SL_ETOOBIG;
        }
        memmove(&names[k + 1], &names[k], (n - k) * sizeof names[0]);
        names[k] = cur;
        n++;
    }
    for (size_t i = 0; i < n; i++) {
        if (i > 0) {
            out_byte(o, ';');
        }
        out_lower(o, names[i]);
    }
    return o->full ? SL_ETOOBIG : SL_OK;
}

int gw_sigv4_sign(const struct gw_sigv4_request *req, const char *access_key_id, const char *secret,
                  const char *region, const char *service, const char amz_date[17],
                  struct sl_buf *authorization)
{
    struct sl_slice date = {amz_date, strnlen(amz_date, 17)};
    int64_t ignored;
    const struct gw_header *date_hdr = find_header(req, "x-amz-date");
    if (!gw__sigv4_parse_amz_date(date, &ignored) || !date_hdr ||
        !sl_slice_eq(trim(date_hdr->value), date)) {
        return SL_EINVAL;
    }
    if (!find_header(req, "host") && !find_header(req, ":authority")) {
        return SL_EINVAL;
    }
    char list[SIGNED_LIST_MAX];
    struct out lo = {list, 0, sizeof list, false};
    int rc = signed_list_of(req, &lo);
    if (rc != SL_OK) {
        return rc;
    }
    struct sl_slice signed_headers = {list, lo.n};

    char body_hash[GW_SIGV4_HASH_HEX + 1];
    struct sl_slice payload_hash;
    const struct gw_header *content_sha = find_header(req, "x-amz-content-sha256");
    if (content_sha) {
        payload_hash = trim(content_sha->value);
    } else {
        sha256_hex(NULL, req->payload.p, req->payload.n, body_hash);
        payload_hash = (struct sl_slice){body_hash, GW_SIGV4_HASH_HEX};
    }

    char canonical[GW_SIGV4_MAX_CANONICAL];
    size_t canonical_len;
    rc = gw__sigv4_canonical_request(req, signed_headers, payload_hash, canonical, sizeof canonical,
                                     &canonical_len, NULL);
    if (rc != SL_OK) {
        return rc == SL_ETOOBIG ? SL_ETOOBIG : SL_EINVAL;
    }
    struct sl_slice reg = sl_slice_cstr(region), svc = sl_slice_cstr(service);
    char sts[STRING_TO_SIGN_MAX];
    size_t sts_len =
        gw__sigv4_string_to_sign(date, reg, svc, canonical, canonical_len, sts, sizeof sts);
    if (sts_len == 0) {
        return SL_ETOOBIG;
    }
    uint8_t key[GW_SIGV4_KEY_BYTES];
    uint8_t mac[GW_SIGV4_KEY_BYTES];
    gw__sigv4_derive_key(sl_slice_cstr(secret), (struct sl_slice){amz_date, 8}, reg, svc, key);
    hmac_sha256(NULL, key, sizeof key, (struct sl_slice){sts, sts_len}, mac);
    OPENSSL_cleanse(key, sizeof key);
    char sig[2 * GW_SIGV4_KEY_BYTES + 1];
    sl_hex_encode(mac, sizeof mac, sig);

    sl_buf_printf(authorization,
                  GW_SIGV4_ALGORITHM " Credential=%s/%.8s/%s/%s/aws4_request, SignedHeaders=%.*s, "
                                     "Signature=%s",
                  access_key_id, amz_date, region, service, (int)signed_headers.n, signed_headers.p,
                  sig);
    return SL_OK;
}
