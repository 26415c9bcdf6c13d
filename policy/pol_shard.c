/*
 * pol_shard.c -- shuffle sharding: which partitions hold a tenant, where a
 * send goes, and which partitions a receive reads.
 *
 * Placement is rendezvous (highest random weight) hashing, top k: every
 * partition p gets the score HMAC-SHA256(key, len32(tenant) | tenant | p32)
 * and the tenant's shard is the k best. Because a partition's score depends
 * only on (key, tenant, p):
 *   1. adding partition P changes a shard only when P scores into the top
 *      k, and then only the k-th member is displaced (at most one move);
 *   2. the top k+1 contain the top k (growing k keeps the old members);
 *   3. without the secret key nobody can aim a tenant name at another
 *      tenant's shard (Route 53 Infima's advice on targeted collisions).
 * See docs/policy.md for the arithmetic.
 *
 * Threading: pure; no shared state. Ownership: none kept.
 */
#include "pol.h"

#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <stdlib.h>
#include <string.h>

struct scored {
    uint64_t score;
    uint32_t partition;
};

static void put_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

static uint64_t get_be64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) {
        v = (v << 8) | p[i];
    }
    return v;
}

/* Best first; equal scores (a 2^-64 event) go to the lower partition so
 * the order is total and placement stays deterministic. */
static int by_score_desc(const void *a, const void *b)
{
    const struct scored *x = a;
    const struct scored *y = b;
    if (x->score != y->score) {
        return x->score > y->score ? -1 : 1;
    }
    return x->partition < y->partition ? -1 : (x->partition > y->partition);
}

/* Scores every partition. The HMAC state after key and tenant is computed
 * once and duplicated per partition, so each score costs one final block. */
static int score_partitions(const uint8_t *key, size_t key_len, const char *tenant,
                            size_t tenant_len, uint32_t partitions, struct scored *scores)
{
    int rc = SL_ENOMEM;
    char digest_name[] = "SHA256";
    OSSL_PARAM params[] = {
        OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest_name, 0),
        OSSL_PARAM_construct_end(),
    };
    EVP_MAC *mac = EVP_MAC_fetch(NULL, "HMAC", NULL);
    EVP_MAC_CTX *prefix = mac ? EVP_MAC_CTX_new(mac) : NULL;
    uint8_t len_be[4];

    if (prefix == NULL || tenant_len > UINT32_MAX) {
        goto out;
    }
    put_be32(len_be, (uint32_t)tenant_len);
    if (!EVP_MAC_init(prefix, key, key_len, params) || !EVP_MAC_update(prefix, len_be, 4) ||
        !EVP_MAC_update(prefix, (const uint8_t *)tenant, tenant_len)) {
        goto out;
    }
    for (uint32_t p = 0; p < partitions; p++) {
        EVP_MAC_CTX *one = EVP_MAC_CTX_dup(prefix);
        uint8_t p_be[4];
        uint8_t out[EVP_MAX_MD_SIZE];
        size_t out_len = 0;
        int ok;

        if (one == NULL) {
            goto out;
        }
        put_be32(p_be, p);
        ok = EVP_MAC_update(one, p_be, 4) && EVP_MAC_final(one, out, &out_len, sizeof(out));
        EVP_MAC_CTX_free(one);
        if (!ok || out_len < 8) {
            goto out;
        }
        scores[p].score = get_be64(out);
        scores[p].partition = p;
    }
    rc = SL_OK;
out:
    EVP_MAC_CTX_free(prefix);
    EVP_MAC_free(mac);
    return rc;
}

int pol_shard_place(const uint8_t *key, size_t key_len, const char *tenant, size_t tenant_len,
                    uint32_t partitions, uint32_t k, uint32_t *out)
{
    struct scored *scores;
    int rc;

    if (key == NULL || key_len == 0 || tenant == NULL || tenant_len == 0 || partitions == 0 ||
        partitions > POL_MAX_PARTITIONS || k == 0 || k > partitions) {
        return SL_EINVAL;
    }
    scores = sl_xcalloc(partitions, sizeof(*scores));
    rc = score_partitions(key, key_len, tenant, tenant_len, partitions, scores);
    if (rc == SL_OK) {
        qsort(scores, partitions, sizeof(*scores), by_score_desc);
        for (uint32_t i = 0; i < k; i++) {
            out[i] = scores[i].partition;
        }
    }
    free(scores);
    return rc;
}

/* splitmix64's finaliser: a bijective 64-bit mix. */
static uint64_t mix64(uint64_t x)
{
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

uint32_t pol_key_home(const uint8_t *key, size_t key_len, const char *tenant, size_t tenant_len,
                      const char *name, size_t name_len, const uint32_t *shard, uint32_t k)
{
    SL_ASSERT(k >= 1);
    if (k == 1) {
        return shard[0];
    }
    uint8_t msg[4 + 64 + 4 + 256];
    size_t n = 0;
    tenant_len = SL_MIN(tenant_len, 64);
    name_len = SL_MIN(name_len, 256);
    put_be32(msg, (uint32_t)tenant_len);
    memcpy(msg + 4, tenant, tenant_len);
    n = 4 + tenant_len;
    put_be32(msg + n, (uint32_t)name_len);
    memcpy(msg + n + 4, name, name_len);
    n += 4 + name_len;
    uint8_t out[EVP_MAX_MD_SIZE];
    size_t out_len = 0;
    uint64_t seed = 0;
    if (EVP_Q_mac(NULL, "HMAC", NULL, "SHA256", NULL, key, key_len, msg, n, out, sizeof out,
                  &out_len) != NULL &&
        out_len >= 8) {
        seed = get_be64(out);
    }
    uint32_t best = shard[0];
    uint64_t best_score = 0;
    for (uint32_t i = 0; i < k; i++) {
        uint64_t score = mix64(seed ^ mix64(shard[i] + 1u));
        if (i == 0 || score > best_score) {
            best = shard[i];
            best_score = score;
        }
    }
    return best;
}

/* Whether a is lighter than b by more than the noise of the signal. */
static bool clearly_lighter(uint64_t a, uint64_t b)
{
    uint64_t slack = SL_MAX((uint64_t)POL_SEND_TIE_MESSAGES, b / 8);
    return a < b && b - a > slack;
}

uint32_t pol_pick_send_partition(const uint32_t *shard, uint32_t k, const uint64_t *load)
{
    uint32_t best = 0;

    SL_ASSERT(k >= 1);
    /* A partition displaces the best so far only when clearly lighter:
     * on ties and near-ties the earlier in shard order keeps the send, so
     * an idle or evenly loaded tenant's messages gather in its first
     * partition, where receives look first (docs/policy.md, section 1). */
    for (uint32_t i = 1; i < k; i++) {
        if (clearly_lighter(load[i], load[best])) {
            best = i;
        }
    }
    return shard[best];
}

uint32_t pol_read_set(const uint32_t *shard, uint32_t k, const uint64_t *messages,
                      uint32_t partitions, uint32_t *out)
{
    uint32_t n = 0;

    for (uint32_t i = 0; i < k; i++) {
        bool seen = false;
        if (shard[i] >= partitions) {
            continue;
        }
        for (uint32_t j = 0; j < n; j++) {
            seen = seen || out[j] == shard[i];
        }
        if (!seen) {
            out[n++] = shard[i];
        }
    }
    /* Messages stored under an earlier placement stay where they are; the
     * receive keeps reading those partitions until they drain (§1.5). */
    for (uint32_t p = 0; p < partitions; p++) {
        bool in_shard = false;
        if (messages[p] == 0) {
            continue;
        }
        for (uint32_t i = 0; i < k; i++) {
            in_shard = in_shard || shard[i] == p;
        }
        if (!in_shard) {
            out[n++] = p;
        }
    }
    return n;
}
