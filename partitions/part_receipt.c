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
 */
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "part_int.h"

#define RH_BODY 25
#define RH_MAC 16
#define RH_LEN (RH_BODY + RH_MAC)
#define RH_VERSION 1

static void put_be(uint8_t *p, uint64_t v, int bytes)
{
    for (int i = bytes - 1; i >= 0; i--) {
        p[i] = (uint8_t)(v & 0xff);
        v >>= 8;
    }
}

static uint64_t get_be(const uint8_t *p, int bytes)
{
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++) {
        v = (v << 8) | p[i];
    }
    return v;
}

static void mac(const struct part_engine *e, const uint8_t *body, uint8_t out[RH_MAC])
{
    uint8_t full[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    SL_ASSERT(HMAC(EVP_sha256(), e->key, PART_KEY_LEN, body, RH_BODY, full, &len) != NULL);
    memcpy(out, full, RH_MAC);
}

void part__receipt_encode(const struct part_engine *e, const struct part_receipt *r,
                          char out[PART_RECEIPT_MAX])
{
    uint8_t raw[RH_LEN];
    raw[0] = RH_VERSION;
    put_be(raw + 1, r->partition, 4);
    put_be(raw + 5, r->queue_id, 8);
    put_be(raw + 13, r->sequence, 8);
    put_be(raw + 21, r->receive_gen, 4);
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
    out->partition = (uint32_t)get_be(raw + 1, 4);
    out->queue_id = get_be(raw + 5, 8);
    out->sequence = get_be(raw + 13, 8);
    out->receive_gen = (uint32_t)get_be(raw + 21, 4);
    if (out->partition >= e->nparts) {
        return SL_EINVAL;
    }
    return SL_OK;
}
