/*
 * byte_bench.c -- the per-byte ceiling of a message body (issue 31): what
 * one memcpy plus one MD5 of the same bytes cost on this machine, per
 * byte, over the message sizes the gateway is measured at. A body cannot
 * be accepted for less: it has to be moved out of the request at least
 * once and SQS's MD5OfMessageBody has to be computed over it. Also the
 * SHA-256 of the same bytes, which SigV4 adds for a signed payload (the
 * x-amz-content-sha256 the SDKs send), reported beside it.
 * loadtest/byte-bench/run sets the gateway's CPU per byte of a round
 * trip against it, in the same run.
 *
 * Usage: byte-bench [--json FILE] SIZE... (bytes, 1..16 MiB each)
 * For each size: the best of 5 passes, each copying and hashing bodies
 * taken in turn from a 64 MiB pool (so that, as in the gateway, a body
 * usually comes from memory rather than from the cache) until 256 MiB
 * went through, into a destination of its own; prints ns per byte for the
 * copy, the MD5 and both, and MB/s.
 *
 * Single-threaded. Exit 0, or 2 on bad usage, 1 when the JSON cannot be
 * written.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/evp.h>

#define POOL_BYTES (64u << 20)
#define PASS_BYTES (256u << 20)
#define PASSES 5
#define MAX_SIZE (16u << 20)
#define MAX_SIZES 16

struct result {
    size_t size;
    double copy_ns_per_byte;
    double md5_ns_per_byte;
    double both_ns_per_byte;
    double sha256_ns_per_byte;
};

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Keeps the compiler from dropping work whose result nothing reads. */
static volatile unsigned char sink;

/* One pass: copies (when copy) and hashes with md (when hash) bodies of
 * size bytes from the pool until PASS_BYTES went through; ns per byte. */
static double pass(const unsigned char *pool, unsigned char *dst, size_t size, EVP_MD_CTX *ctx,
                   const EVP_MD *md, int copy, int hash)
{
    size_t bodies = POOL_BYTES / size;
    size_t n = PASS_BYTES / size;
    unsigned char digest[EVP_MAX_MD_SIZE];
    uint64_t t0 = now_ns();
    for (size_t i = 0; i < n; i++) {
        const unsigned char *src = pool + (i % bodies) * size;
        if (copy) {
            memcpy(dst, src, size);
            src = dst;
        }
        if (hash) {
            unsigned int len = 0;
            EVP_DigestInit_ex2(ctx, md, NULL);
            EVP_DigestUpdate(ctx, src, size);
            EVP_DigestFinal_ex(ctx, digest, &len);
            sink ^= digest[0];
        } else {
            sink ^= dst[size - 1];
        }
    }
    return (double)(now_ns() - t0) / (double)(n * size);
}

static double best(const unsigned char *pool, unsigned char *dst, size_t size, EVP_MD_CTX *ctx,
                   const EVP_MD *md, int copy, int hash)
{
    double b = 1e30;
    for (int p = 0; p < PASSES; p++) {
        double v = pass(pool, dst, size, ctx, md, copy, hash);
        b = v < b ? v : b;
    }
    return b;
}

int main(int argc, char **argv)
{
    const char *json = NULL;
    size_t sizes[MAX_SIZES];
    size_t nsizes = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0 && i + 1 < argc) {
            json = argv[++i];
            continue;
        }
        char *end = NULL;
        unsigned long long v = strtoull(argv[i], &end, 10);
        if (end == argv[i] || *end != '\0' || v == 0 || v > MAX_SIZE || nsizes == MAX_SIZES) {
            fprintf(stderr, "usage: byte-bench [--json FILE] SIZE... (1..%u bytes)\n", MAX_SIZE);
            return 2;
        }
        sizes[nsizes++] = (size_t)v;
    }
    if (nsizes == 0) {
        fprintf(stderr, "usage: byte-bench [--json FILE] SIZE... (1..%u bytes)\n", MAX_SIZE);
        return 2;
    }
    unsigned char *pool = malloc(POOL_BYTES);
    unsigned char *dst = malloc(MAX_SIZE);
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    EVP_MD *md = EVP_MD_fetch(NULL, "MD5", NULL);
    EVP_MD *sha = EVP_MD_fetch(NULL, "SHA256", NULL);
    if (pool == NULL || dst == NULL || ctx == NULL || md == NULL || sha == NULL) {
        fprintf(stderr, "byte-bench: out of memory or no MD5\n");
        return 1;
    }
    for (size_t i = 0; i < POOL_BYTES; i++) { /* touched, and not all zero pages */
        pool[i] = (unsigned char)('a' + i % 26);
    }
    memset(dst, 0, MAX_SIZE);
    struct result r[MAX_SIZES];
    for (size_t s = 0; s < nsizes; s++) {
        r[s].size = sizes[s];
        r[s].copy_ns_per_byte = best(pool, dst, sizes[s], ctx, md, 1, 0);
        r[s].md5_ns_per_byte = best(pool, dst, sizes[s], ctx, md, 0, 1);
        r[s].both_ns_per_byte = best(pool, dst, sizes[s], ctx, md, 1, 1);
        r[s].sha256_ns_per_byte = best(pool, dst, sizes[s], ctx, sha, 0, 1);
        printf("%8zu bytes: memcpy %.3f ns/B, MD5 %.3f ns/B, memcpy + MD5 %.3f ns/B (%.0f MB/s); "
               "SHA-256 %.3f ns/B\n",
               r[s].size, r[s].copy_ns_per_byte, r[s].md5_ns_per_byte, r[s].both_ns_per_byte,
               1e3 / r[s].both_ns_per_byte, r[s].sha256_ns_per_byte);
    }
    int rc = 0;
    if (json != NULL) {
        FILE *f = fopen(json, "w");
        if (f == NULL) {
            fprintf(stderr, "byte-bench: cannot write %s\n", json);
            rc = 1;
        } else {
            fprintf(f, "{\"tool\": \"byte-bench\", \"sizes\": [");
            for (size_t s = 0; s < nsizes; s++) {
                fprintf(f,
                        "%s{\"size\": %zu, \"copy_ns_per_byte\": %.4f, \"md5_ns_per_byte\": %.4f, "
                        "\"copy_md5_ns_per_byte\": %.4f, \"sha256_ns_per_byte\": %.4f}",
                        s ? ", " : "", r[s].size, r[s].copy_ns_per_byte, r[s].md5_ns_per_byte,
                        r[s].both_ns_per_byte, r[s].sha256_ns_per_byte);
            }
            fprintf(f, "]}\n");
            rc = fclose(f) == 0 ? 0 : 1;
        }
    }
    EVP_MD_free(sha);
    EVP_MD_free(md);
    EVP_MD_CTX_free(ctx);
    free(dst);
    free(pool);
    return rc;
}
