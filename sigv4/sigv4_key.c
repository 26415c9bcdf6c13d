/*
 * sigv4_key.c -- the cryptography of SigV4: SHA-256 and HMAC-SHA256, the
 * string to sign, the signing-key derivation, and the per-thread cache of
 * derived keys with reusable OpenSSL contexts.
 *
 * Threading: pure functions; a struct sigv4_key_cache belongs to one
 * thread. Memory: nothing allocated per call (only a secret longer than
 * 252 bytes takes one short-lived heap copy). With a key cache, verify
 * reuses the cache's OpenSSL contexts instead of the one-shot SHA256()/
 * HMAC(), which fetch and allocate per call: about 2 us instead of 12 us
 * per verify of a small SQS request, and ~8 small allocations left inside
 * OpenSSL's EVP init instead of ~80.
 */
#include "sigv4_key.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/params.h>
#include <openssl/sha.h>
#include <stdlib.h>
#include <string.h>

#include "sigv4_text.h"

#define DEFAULT_CACHE_SLOTS 64
#define MAX_CACHE_SLOTS 65536
#define CACHE_FIELD_MAX 64 /* longer access key ids, regions, services bypass the cache */

/* ---- hashes ------------------------------------------------------------ */

/* Reusable OpenSSL contexts, kept in a thread's key cache. OpenSSL 3's
 * one-shot SHA256() and HMAC() fetch the algorithm and allocate a context
 * on every call (dozens of mallocs per verify); with these, the common
 * path allocates nothing. NULL means "use the one-shot functions". */
struct sigv4__crypto {
    EVP_MD *sha256;
    EVP_MD_CTX *md;
    EVP_MAC_CTX *mac;
    /* The signing key mac holds, if any: a request signed with the same
     * key as the one before (one tenant, one day) re-initialises the HMAC
     * from its kept inner and outer states instead of keying it again. */
    bool mac_keyed;
    uint8_t mac_key[SIGV4_KEY_BYTES];
};

static bool crypto_init(struct sigv4__crypto *cr)
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

static void crypto_fini(struct sigv4__crypto *cr)
{
    OPENSSL_cleanse(cr->mac_key, sizeof cr->mac_key);
    EVP_MAC_CTX_free(cr->mac);
    EVP_MD_CTX_free(cr->md);
    EVP_MD_free(cr->sha256);
}

static void sha256(const struct sigv4__crypto *cr, const void *data, size_t n,
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

void sigv4__sha256_hex(const struct sigv4__crypto *cr, const void *data, size_t n,
                       char hex[SIGV4_HASH_HEX + 1])
{
    uint8_t digest[SHA256_DIGEST_LENGTH];
    sha256(cr, data, n, digest);
    sl_hex_encode(digest, sizeof digest, hex);
}

void sigv4__hmac_sha256(struct sigv4__crypto *cr, const void *key, size_t key_len,
                        struct sl_slice data, uint8_t out[SIGV4_KEY_BYTES])
{
    if (!cr) {
        unsigned int out_len = SIGV4_KEY_BYTES;
        unsigned char *done = HMAC(EVP_sha256(), key, (int)key_len, (const unsigned char *)data.p,
                                   data.n, out, &out_len);
        SL_ASSERT(done != NULL && out_len == SIGV4_KEY_BYTES);
        return;
    }
    /* EVP_MAC_init with a NULL key re-initialises with the key it has */
    bool same_key = cr->mac_keyed && key_len == sizeof cr->mac_key &&
                    CRYPTO_memcmp(cr->mac_key, key, key_len) == 0;
    cr->mac_keyed = false;
    size_t out_len = 0;
    bool ok = EVP_MAC_init(cr->mac, same_key ? NULL : key, same_key ? 0 : key_len, NULL) == 1 &&
              EVP_MAC_update(cr->mac, (const unsigned char *)data.p, data.n) == 1 &&
              EVP_MAC_final(cr->mac, out, &out_len, SIGV4_KEY_BYTES) == 1;
    SL_ASSERT(ok && out_len == SIGV4_KEY_BYTES);
    if (key_len == sizeof cr->mac_key) {
        memcpy(cr->mac_key, key, key_len);
        cr->mac_keyed = true;
    }
}

/* ---- string to sign and keys ------------------------------------------ */

size_t sigv4__string_to_sign(const struct sigv4__crypto *cr, struct sl_slice amz_date,
                             struct sl_slice region, struct sl_slice service, const char *canonical,
                             size_t canonical_len, char *out, size_t cap)
{
    char hex[SIGV4_HASH_HEX + 1];
    sigv4__sha256_hex(cr, canonical, canonical_len, hex);
    struct tx_out o = {out, 0, cap, cap == 0};
    tx_put(&o, SIGV4_ALGORITHM "\n", sizeof SIGV4_ALGORITHM);
    tx_slice(&o, amz_date);
    tx_byte(&o, '\n');
    tx_put(&o, amz_date.p, SL_MIN(amz_date.n, (size_t)8));
    tx_byte(&o, '/');
    tx_slice(&o, region);
    tx_byte(&o, '/');
    tx_slice(&o, service);
    tx_put(&o, "/aws4_request\n", 14);
    tx_put(&o, hex, SIGV4_HASH_HEX);
    if (o.full) {
        return 0;
    }
    out[o.n] = '\0';
    return o.n;
}

static void derive_key(struct sigv4__crypto *cr, struct sl_slice secret, struct sl_slice date,
                       struct sl_slice region, struct sl_slice service,
                       uint8_t key[SIGV4_KEY_BYTES])
{
    char stack_seed[256];
    char *seed = secret.n + 4 <= sizeof stack_seed ? stack_seed : sl_xmalloc(secret.n + 4);
    memcpy(seed, "AWS4", 4);
    if (secret.n > 0) {
        memcpy(seed + 4, secret.p, secret.n);
    }
    /* Two buffers in turn: HMAC's key and output never alias. */
    uint8_t k_date[SIGV4_KEY_BYTES], k_region[SIGV4_KEY_BYTES];
    sigv4__hmac_sha256(cr, seed, secret.n + 4, date, k_date);
    OPENSSL_cleanse(seed, secret.n + 4);
    if (seed != stack_seed) {
        free(seed);
    }
    sigv4__hmac_sha256(cr, k_date, sizeof k_date, region, k_region);
    sigv4__hmac_sha256(cr, k_region, sizeof k_region, service, k_date); /* now kService */
    sigv4__hmac_sha256(cr, k_date, sizeof k_date, SL_SLICE_LIT("aws4_request"), key);
    OPENSSL_cleanse(k_date, sizeof k_date);
    OPENSSL_cleanse(k_region, sizeof k_region);
    if (cr) { /* keep no copy of an intermediate key */
        OPENSSL_cleanse(cr->mac_key, sizeof cr->mac_key);
        cr->mac_keyed = false;
    }
}

void sigv4__derive_key(struct sl_slice secret, struct sl_slice date, struct sl_slice region,
                       struct sl_slice service, uint8_t key[SIGV4_KEY_BYTES])
{
    derive_key(NULL, secret, date, region, service, key);
}

/* ---- the key cache ----------------------------------------------------- */

struct key_slot {
    uint64_t tag;       /* hash of the tuple, to skip most slots quickly */
    uint64_t last_used; /* cache tick; 0 = empty */
    uint8_t secret_fp[SHA256_DIGEST_LENGTH];
    uint8_t key[SIGV4_KEY_BYTES];
    uint8_t akid_len, region_len, service_len;
    char date[8];
    char akid[CACHE_FIELD_MAX];
    char region[CACHE_FIELD_MAX];
    char service[CACHE_FIELD_MAX];
};

struct sigv4_key_cache {
    struct sigv4__crypto crypto;
    size_t nslots;
    uint64_t tick;
    struct key_slot slots[];
};

struct sigv4_key_cache *sigv4_key_cache_new(size_t slots)
{
    if (slots == 0) {
        slots = DEFAULT_CACHE_SLOTS;
    }
    slots = SL_MIN(slots, (size_t)MAX_CACHE_SLOTS);
    struct sigv4_key_cache *c = sl_xcalloc(1, sizeof *c + slots * sizeof(struct key_slot));
    c->nslots = slots;
    if (!crypto_init(&c->crypto)) {
        sl_log(SL_LOG_ERROR, "sigv4", "OpenSSL has no SHA-256/HMAC; cannot verify signatures");
        abort();
    }
    return c;
}

void sigv4_key_cache_free(struct sigv4_key_cache *c)
{
    if (!c) {
        return;
    }
    OPENSSL_cleanse(c->slots, c->nslots * sizeof(struct key_slot));
    crypto_fini(&c->crypto);
    free(c);
}

struct sigv4__crypto *sigv4__key_cache_crypto(struct sigv4_key_cache *c)
{
    return c ? &c->crypto : NULL;
}

size_t sigv4__key_cache_used(const struct sigv4_key_cache *c)
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

void sigv4__signing_key(struct sigv4_key_cache *cache, struct sl_slice access_key_id,
                        struct sl_slice secret, struct sl_slice date, struct sl_slice region,
                        struct sl_slice service, uint8_t key[SIGV4_KEY_BYTES], bool *hit)
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
                memcpy(key, s->key, SIGV4_KEY_BYTES);
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
    memcpy(victim->key, key, SIGV4_KEY_BYTES);
    victim->akid_len = (uint8_t)access_key_id.n;
    memcpy(victim->akid, access_key_id.p, access_key_id.n);
    memcpy(victim->date, date.p, 8);
    victim->region_len = (uint8_t)region.n;
    memcpy(victim->region, region.p, region.n);
    victim->service_len = (uint8_t)service.n;
    memcpy(victim->service, service.p, service.n);
}
