/*
 * gw_sqs_md5.c -- the MD5 digests SQS returns and the SDKs verify
 * (MD5OfMessageBody, MD5OfMessageAttributes, MD5OfMessageSystemAttributes),
 * and the receive-side MessageAttributeNames filter that decides which
 * attributes the attribute digest covers.
 *
 * Algorithm: "Calculating the MD5 message digest for message attributes",
 * https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-message-metadata.html
 * (with the vectors tests/unit/gateway/test_sqs_md5.c checks).
 *
 * Threading: pure; any thread. Each thread keeps one EVP context, freed
 * when it exits, and all share one MD5 implementation fetched once: in
 * OpenSSL 3 a context made and initialised with EVP_md5() per digest looks
 * the algorithm up by name every time, which cost more than hashing a
 * 1 KiB body.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "gw_sqs.h"

#define MAX_DIGEST_ATTRS 64 /* SQS allows 10 message attributes; slack for tests */

static void digest_u32(EVP_MD_CTX *ctx, uint32_t v)
{
    uint8_t be[4] = {(uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v};
    EVP_DigestUpdate(ctx, be, sizeof(be));
}

static void digest_lv(EVP_MD_CTX *ctx, struct sl_slice s)
{
    digest_u32(ctx, (uint32_t)s.n);
    if (s.n > 0) {
        EVP_DigestUpdate(ctx, s.p, s.n);
    }
}

static void digest_final(EVP_MD_CTX *ctx, uint8_t out[GW_SQS_MD5_LEN])
{
    uint8_t md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    SL_ASSERT(EVP_DigestFinal_ex(ctx, md, &len) == 1 && len == GW_SQS_MD5_LEN);
    memcpy(out, md, GW_SQS_MD5_LEN);
}

static pthread_once_t md5_once = PTHREAD_ONCE_INIT;
static EVP_MD *md5_md;            /* fetched once; lives as long as the process */
static pthread_key_t md5_ctx_key; /* this thread's EVP_MD_CTX */

static void free_ctx(void *ctx)
{
    EVP_MD_CTX_free(ctx);
}

static void md5_setup(void)
{
    md5_md = EVP_MD_fetch(NULL, "MD5", NULL);
    SL_ASSERT(md5_md != NULL);
    SL_ASSERT(pthread_key_create(&md5_ctx_key, free_ctx) == 0);
}

/* This thread's context, initialised for a new MD5. */
static EVP_MD_CTX *md5_begin(void)
{
    pthread_once(&md5_once, md5_setup);
    EVP_MD_CTX *ctx = pthread_getspecific(md5_ctx_key);
    if (ctx == NULL) {
        ctx = EVP_MD_CTX_new();
        SL_ASSERT(ctx != NULL && pthread_setspecific(md5_ctx_key, ctx) == 0);
    }
    SL_ASSERT(EVP_DigestInit_ex2(ctx, md5_md, NULL) == 1);
    return ctx;
}

static int slice_cmp(struct sl_slice a, struct sl_slice b)
{
    int c = memcmp(a.p, b.p, SL_MIN(a.n, b.n));
    if (c != 0) {
        return c;
    }
    return a.n < b.n ? -1 : a.n > b.n ? 1 : 0;
}

static int attr_ptr_cmp(const void *a, const void *b)
{
    const struct gw_sqs_msg_attr *x = *(const struct gw_sqs_msg_attr *const *)a;
    const struct gw_sqs_msg_attr *y = *(const struct gw_sqs_msg_attr *const *)b;
    return slice_cmp(x->name, y->name);
}

static int attr_cmp(const void *a, const void *b)
{
    const struct gw_sqs_msg_attr *x = a;
    const struct gw_sqs_msg_attr *y = b;
    return slice_cmp(x->name, y->name);
}

void gw_sqs_md5(const void *data, size_t n, uint8_t out[GW_SQS_MD5_LEN])
{
    EVP_MD_CTX *ctx = md5_begin();
    if (n > 0) {
        EVP_DigestUpdate(ctx, data, n);
    }
    digest_final(ctx, out);
}

void gw_sqs_md5_hex(const void *data, size_t n, char out[33])
{
    uint8_t md[GW_SQS_MD5_LEN];
    gw_sqs_md5(data, n, md);
    sl_hex_encode(md, GW_SQS_MD5_LEN, out);
}

int gw_sqs_md5_of_attrs(const struct gw_sqs_msg_attr *attrs, size_t n, char out[33])
{
    uint8_t md[GW_SQS_MD5_LEN];
    int rc = gw_sqs_md5_of_attrs_raw(attrs, n, md);
    if (rc == SL_OK) {
        sl_hex_encode(md, GW_SQS_MD5_LEN, out);
    }
    return rc;
}

int gw_sqs_md5_of_attrs_raw(const struct gw_sqs_msg_attr *attrs, size_t n,
                            uint8_t out[GW_SQS_MD5_LEN])
{
    if (n == 0 || n > MAX_DIGEST_ATTRS) {
        return SL_EINVAL;
    }
    const struct gw_sqs_msg_attr *sorted[MAX_DIGEST_ATTRS];
    for (size_t i = 0; i < n; i++) {
        sorted[i] = &attrs[i];
    }
    qsort(sorted, n, sizeof(sorted[0]), attr_ptr_cmp);

    EVP_MD_CTX *ctx = md5_begin();
    for (size_t i = 0; i < n; i++) {
        const struct gw_sqs_msg_attr *a = sorted[i];
        digest_lv(ctx, a->name);
        digest_lv(ctx, a->data_type);
        /* transport type: 1 String/Number, 2 Binary (3, 4: the lists SQS reserves) */
        uint8_t transport = a->type == GW_SQS_ATTR_BINARY ? 2 : 1;
        EVP_DigestUpdate(ctx, &transport, 1);
        digest_lv(ctx, a->value);
    }
    digest_final(ctx, out);
    return SL_OK;
}

void gw_sqs_digests_of(const struct gw_sqs_send_entry *msg, struct gw_sqs_digests *out)
{
    if (msg->has_body_md5_) {
        memcpy(out->bytes, msg->body_md5_, GW_SQS_MD5_LEN);
    } else {
        gw_sqs_md5(msg->body.p, msg->body.n, out->bytes);
    }
    out->n = GW_SQS_MD5_LEN;
    if (msg->attr_count > 0) {
        SL_ASSERT(gw_sqs_md5_of_attrs_raw(msg->attrs, msg->attr_count,
                                          out->bytes + GW_SQS_MD5_LEN) == SL_OK);
        out->n += GW_SQS_MD5_LEN;
    }
}

bool gw_sqs_digests_read(struct sl_slice stored, struct gw_sqs_digests *out)
{
    if (stored.n != GW_SQS_MD5_LEN && stored.n != (size_t)2 * GW_SQS_MD5_LEN) {
        return false;
    }
    memcpy(out->bytes, stored.p, stored.n);
    out->n = stored.n;
    return true;
}

const uint8_t *gw_sqs_digests_attrs(const struct gw_sqs_digests *d)
{
    return d->n == (size_t)2 * GW_SQS_MD5_LEN ? d->bytes + GW_SQS_MD5_LEN : NULL;
}

void gw_sqs_md5_of_trace_header(struct sl_slice trace_header, char out[33])
{
    struct gw_sqs_msg_attr a = {
        .name = SL_SLICE_LIT("AWSTraceHeader"),
        .data_type = SL_SLICE_LIT("String"),
        .type = GW_SQS_ATTR_STRING,
        .value = trace_header,
    };
    SL_ASSERT(gw_sqs_md5_of_attrs(&a, 1, out) == SL_OK);
}

void gw_sqs_msg_attrs_sort(struct gw_sqs_msg_attr *attrs, size_t n)
{
    if (n > 1) {
        qsort(attrs, n, sizeof(attrs[0]), attr_cmp);
    }
}

bool gw_sqs_attr_filter_match(const struct sl_slice *filters, size_t n, struct sl_slice name)
{
    for (size_t i = 0; i < n; i++) {
        struct sl_slice f = filters[i];
        if (sl_slice_eq_cstr(f, "All") || sl_slice_eq_cstr(f, ".*") || sl_slice_eq_cstr(f, "*")) {
            return true;
        }
        if (sl_slice_eq(f, name)) {
            return true;
        }
        /* "Prefix.*": every name that starts with "Prefix" (SQS matches the
         * prefix as written, so "Hel.*" selects "Hello" and "Help.Me"). */
        if (f.n >= 2 && f.p[f.n - 2] == '.' && f.p[f.n - 1] == '*') {
            size_t plen = f.n - 2;
            if (name.n >= plen && memcmp(name.p, f.p, plen) == 0) {
                return true;
            }
        }
    }
    return false;
}
