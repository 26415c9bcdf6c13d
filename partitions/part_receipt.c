/*
 * part_receipt.c -- receipt handles: what a receive hands out and what
 * delete / change-visibility take back.
 *
 * Format (41 bytes, then URL-safe base64 without padding, 55 characters):
 *   version(1) = 1 | partition(4) | queue id(8) | row(8) | receive gen(4)
 *   | HMAC-SHA256 of the first 25 bytes under the manifest key, truncated
 *   to 16 bytes
 * All integers big-endian. The generation is the message's receive count
 * at the receive that issued the handle, so a handle from an earlier
 * receive is recognisably stale. Rows are AUTOINCREMENT and never reused,
 * so a handle can never name a different message.
 *
 * Threading: pure functions over the engine's immutable key; any thread.
 * Each thread keeps one keyed HMAC context (a pthread key frees it when
 * the thread exits): re-initialising a keyed context reuses its inner and
 * outer pads, where the one-shot HMAC() fetched SHA-256 by name and keyed
 * a fresh context on every handle -- a tenth of the writer's time in the
 * storage benchmark's receive/delete cycle.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "part_receipt.h"

#include "part_bytes.h"

#define RH_BODY 25
#define RH_MAC 16
#define RH_LEN (RH_BODY + RH_MAC)
#define RH_VERSION 1

struct mac_cache {
    EVP_MAC_CTX *ctx;
    bool keyed;
    uint8_t key[PART_KEY_LEN]; /* what ctx is keyed with */
};

static pthread_once_t mac_once = PTHREAD_ONCE_INIT;
static pthread_key_t mac_tls;
static EVP_MAC *hmac_alg; /* fetched once, kept for the process */

static void mac_cache_free(void *p)
{
    struct mac_cache *c = p;
    EVP_MAC_CTX_free(c->ctx);
    free(c);
}

static void mac_init_once(void)
{
    SL_ASSERT(pthread_key_create(&mac_tls, mac_cache_free) == 0);
    hmac_alg = EVP_MAC_fetch(NULL, "HMAC", NULL);
    SL_ASSERT(hmac_alg != NULL);
}

/* This thread's HMAC-SHA256 context, keyed with e's key and reset. Tests
 * run several engines (several keys) in one process: a different key
 * re-keys the context. */
static EVP_MAC_CTX *mac_ctx(const struct part_engine *e)
{
    pthread_once(&mac_once, mac_init_once);
    struct mac_cache *c = pthread_getspecific(mac_tls);
    if (c == NULL) {
        c = sl_xcalloc(1, sizeof *c);
        c->ctx = EVP_MAC_CTX_new(hmac_alg);
        SL_ASSERT(c->ctx != NULL);
        SL_ASSERT(pthread_setspecific(mac_tls, c) == 0);
    }
    if (!c->keyed || CRYPTO_memcmp(c->key, e->key, PART_KEY_LEN) != 0) {
        char digest[] = "SHA256";
        OSSL_PARAM params[] = {
            OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
            OSSL_PARAM_construct_end(),
        };
        SL_ASSERT(EVP_MAC_init(c->ctx, e->key, PART_KEY_LEN, params) == 1);
        memcpy(c->key, e->key, PART_KEY_LEN);
        c->keyed = true;
    } else {
        SL_ASSERT(EVP_MAC_init(c->ctx, NULL, 0, NULL) == 1); /* same key, fresh state */
    }
    return c->ctx;
}

static void mac(const struct part_engine *e, const uint8_t *body, uint8_t out[RH_MAC])
{
    EVP_MAC_CTX *ctx = mac_ctx(e);
    uint8_t full[EVP_MAX_MD_SIZE];
    size_t len = 0;
    SL_ASSERT(EVP_MAC_update(ctx, body, RH_BODY) == 1);
    SL_ASSERT(EVP_MAC_final(ctx, full, &len, sizeof full) == 1 && len >= RH_MAC);
    memcpy(out, full, RH_MAC);
}

void part__receipt_encode(const struct part_engine *e, const struct part_receipt *r,
                          char out[PART_RECEIPT_MAX])
{
    uint8_t raw[RH_LEN];
    raw[0] = RH_VERSION;
    part__put_be(raw + 1, r->partition, 4);
    part__put_be(raw + 5, r->queue_id, 8);
    part__put_be(raw + 13, r->sequence, 8);
    part__put_be(raw + 21, r->receive_gen, 4);
    mac(e, raw, raw + RH_BODY);
    sl_base64url_encode(raw, RH_LEN, out);
}

int part_receipt_decode(const struct part_engine *e, const char *handle, size_t len,
                        struct part_receipt *out)
{
    /* 41 bytes encode to exactly 55 characters. */
    if (handle == NULL || len != 55) {
        return SL_EINVAL;
    }
    uint8_t raw[64];
    size_t n = 0;
    if (sl_base64url_decode(handle, len, raw, &n) != SL_OK || n != RH_LEN || raw[0] != RH_VERSION) {
        return SL_EINVAL;
    }
    uint8_t want[RH_MAC];
    mac(e, raw, want);
    if (CRYPTO_memcmp(want, raw + RH_BODY, RH_MAC) != 0) {
        return SL_EINVAL;
    }
    out->partition = (uint32_t)part__get_be(raw + 1, 4);
    out->queue_id = part__get_be(raw + 5, 8);
    out->sequence = part__get_be(raw + 13, 8);
    out->receive_gen = (uint32_t)part__get_be(raw + 21, 4);
    if (out->partition >= e->nparts) {
        return SL_EINVAL;
    }
    return SL_OK;
}
