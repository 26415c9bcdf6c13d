/*
 * sl_encode.c -- hex, base64 (standard and URL-safe) and randomness.
 *
 * Base64 is OpenSSL's EVP_EncodeBlock/EVP_DecodeBlock; the URL-safe form
 * maps the alphabet around them rather than carrying a second codec.
 */
#include "sl.h"

#include <openssl/evp.h>
#include <openssl/rand.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sl_hex_encode(const uint8_t *in, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[in[i] >> 4];
        out[2 * i + 1] = digits[in[i] & 15];
    }
    out[2 * n] = '\0';
}

size_t sl_base64_encoded_len(size_t n)
{
    return 4 * ((n + 2) / 3);
}

void sl_base64_encode(const uint8_t *in, size_t n, char *out)
{
    EVP_EncodeBlock((unsigned char *)out, in, (int)n);
}

static bool is_b64_char(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' ||
           c == '/';
}

int sl_base64_decode(const char *in, size_t n, uint8_t *out, size_t *out_len)
{
    /* EVP_DecodeBlock skips white space and does not report padding, so
     * validate the alphabet and length here and subtract the padding. */
    if (n % 4 != 0) {
        return SL_EINVAL;
    }
    size_t pad = 0;
    for (size_t i = 0; i < n; i++) {
        if (in[i] == '=') {
            if (i < n - 2) {
                return SL_EINVAL;
            }
            pad++;
        } else if (pad > 0 || !is_b64_char(in[i])) {
            return SL_EINVAL;
        }
    }
    if (n == 0) {
        *out_len = 0;
        return SL_OK;
    }
    int len = EVP_DecodeBlock(out, (const unsigned char *)in, (int)n);
    if (len < 0) {
        return SL_EINVAL;
    }
    *out_len = (size_t)len - pad;
    return SL_OK;
}

void sl_base64url_encode(const uint8_t *in, size_t n, char *out)
{
    sl_base64_encode(in, n, out);
    size_t len = strlen(out);
    while (len > 0 && out[len - 1] == '=') {
        out[--len] = '\0';
    }
    for (size_t i = 0; i < len; i++) {
        if (out[i] == '+') {
            out[i] = '-';
        } else if (out[i] == '/') {
            out[i] = '_';
        }
    }
}

int sl_base64url_decode(const char *in, size_t n, uint8_t *out, size_t *out_len)
{
    if (n % 4 == 1) {
        return SL_EINVAL;
    }
    if (n == 0) {
        *out_len = 0;
        return SL_OK;
    }
    size_t padded = (n + 3) / 4 * 4;
    char stackbuf[512];
    char *tmp = padded <= sizeof stackbuf ? stackbuf : sl_trymalloc(padded);
    if (tmp == NULL) {
        return SL_ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        char c = in[i];
        if (c == '+' || c == '/' || c == '=') {
            if (tmp != stackbuf) {
                free(tmp);
            }
            return SL_EINVAL;
        }
        tmp[i] = (char)(c == '-' ? '+' : c == '_' ? '/' : c);
    }
    for (size_t i = n; i < padded; i++) {
        tmp[i] = '=';
    }
    int rc = sl_base64_decode(tmp, padded, out, out_len);
    if (tmp != stackbuf) {
        free(tmp);
    }
    return rc;
}

void sl_random_bytes(void *out, size_t n)
{
    if (RAND_bytes(out, (int)n) != 1) {
        fprintf(stderr, "sluice: RAND_bytes failed\n");
        abort();
    }
}

/* UUIDs draw on a per-thread pool of RAND_bytes output: one RAND_bytes
 * call costs about as much as formatting forty UUIDs (OpenSSL 3 takes the
 * DRBG's locks and walks its provider on every call), and the pool's bytes
 * are the same CSPRNG output, so ids stay unpredictable. A forked child
 * drops the pool it inherited, or parent and child would hand out the
 * same ids. */
#define UUID_POOL_BYTES 512

static _Thread_local struct {
    uint8_t bytes[UUID_POOL_BYTES];
    size_t used; /* bytes handed out since the last refill */
    bool filled; /* false: refill first (a new thread, or after fork) */
} uuid_pool;

static pthread_once_t uuid_fork_once = PTHREAD_ONCE_INIT;

static void uuid_pool_drop(void)
{
    uuid_pool.filled = false;
}

static void uuid_fork_setup(void)
{
    SL_ASSERT(pthread_atfork(NULL, NULL, uuid_pool_drop) == 0);
}

static void uuid_random(uint8_t out[16])
{
    if (!uuid_pool.filled || uuid_pool.used + 16 > UUID_POOL_BYTES) {
        pthread_once(&uuid_fork_once, uuid_fork_setup);
        sl_random_bytes(uuid_pool.bytes, UUID_POOL_BYTES);
        uuid_pool.used = 0;
        uuid_pool.filled = true;
    }
    memcpy(out, uuid_pool.bytes + uuid_pool.used, 16);
    /* what was handed out does not stay readable in the pool */
    memset(uuid_pool.bytes + uuid_pool.used, 0, 16);
    uuid_pool.used += 16;
}

void sl_uuid4(char out[37])
{
    uint8_t b[16];
    uuid_random(b);
    sl_uuid4_from(b, out);
}

void sl_uuid4_from(const uint8_t random[16], char out[37])
{
    static const char digits[] = "0123456789abcdef";
    uint8_t b[16];
    memcpy(b, random, sizeof b);
    b[6] = (uint8_t)((b[6] & 0x0f) | 0x40);
    b[8] = (uint8_t)((b[8] & 0x3f) | 0x80);
    size_t o = 0;
    for (size_t i = 0; i < sizeof b; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10) {
            out[o++] = '-';
        }
        out[o++] = digits[b[i] >> 4];
        out[o++] = digits[b[i] & 15];
    }
    out[o] = '\0';
}
