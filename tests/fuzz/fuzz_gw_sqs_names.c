/*
 * fuzz_gw_sqs_names.c -- the names a client hands the gateway: QueueUrl
 * values, SQS ARNs (RedrivePolicy, message move tasks), queue and tenant
 * names, and queue attribute names.
 *
 * The first byte picks the parser, the rest is its input (in a buffer of
 * exactly its size, so any read past the end is a sanitizer report).
 * Whatever a parser accepts must hold up: a queue URL's tenant and name lie
 * inside the URL, are valid names, and the fifo flag matches the suffix; an
 * ARN's three parts put back together give the ARN; a refused URL leaves
 * an error code and a message. Every parser is also cross-checked against
 * the name predicates it is built on.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gw_sqs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool inside(struct sl_slice part, struct sl_slice whole)
{
    return part.p >= whole.p && part.p + part.n <= whole.p + whole.n;
}

static bool ends_fifo(struct sl_slice s)
{
    return s.n > 5 && memcmp(s.p + s.n - 5, ".fifo", 5) == 0;
}

static void fuzz_queue_url(struct sl_slice url)
{
    struct gw_sqs_queue_ref q;
    struct gw_sqs_err err;
    memset(&err, 0, sizeof err);
    int rc = gw_sqs_parse_queue_url(url, &q, &err);
    if (rc != SL_OK) {
        SL_ASSERT(rc == SL_EINVAL);
        SL_ASSERT(err.code == GW_SQS_E_INVALID_ADDRESS ||
                  err.code == GW_SQS_E_QUEUE_DOES_NOT_EXIST);
        SL_ASSERT(memchr(err.message, '\0', sizeof err.message) != NULL);
        return;
    }
    SL_ASSERT(inside(q.tenant, url) && inside(q.name, url));
    SL_ASSERT(gw_sqs_tenant_name_valid(q.tenant));
    bool fifo;
    SL_ASSERT(gw_sqs_queue_name_valid(q.name, &fifo) && fifo == q.fifo);
    SL_ASSERT(q.fifo == ends_fifo(q.name));
    /* The same queue under another authority is the same queue. */
    size_t n = 16 + q.tenant.n + q.name.n;
    char *again = sl_xmalloc(n);
    int len = snprintf(again, n, "http://h:1/%.*s/%.*s", (int)q.tenant.n, q.tenant.p, (int)q.name.n,
                       q.name.p);
    struct gw_sqs_queue_ref q2;
    SL_ASSERT(gw_sqs_parse_queue_url((struct sl_slice){again, (size_t)len}, &q2, &err) == SL_OK);
    SL_ASSERT(sl_slice_eq(q.tenant, q2.tenant) && sl_slice_eq(q.name, q2.name));
    free(again);
}

static void fuzz_arn(struct sl_slice arn)
{
    struct gw_sqs_arn a;
    if (!gw_sqs_parse_arn(arn, &a)) {
        return;
    }
    SL_ASSERT(inside(a.region, arn) && inside(a.account, arn) && inside(a.name, arn));
    SL_ASSERT(a.region.n > 0 && memchr(a.region.p, ':', a.region.n) == NULL);
    SL_ASSERT(gw_sqs_tenant_name_valid(a.account));
    bool fifo;
    SL_ASSERT(gw_sqs_queue_name_valid(a.name, &fifo));
    /* "arn:aws:sqs:" REGION ":" ACCOUNT ":" NAME is the whole input */
    SL_ASSERT(12 + a.region.n + 1 + a.account.n + 1 + a.name.n == arn.n);
    SL_ASSERT(a.region.p == arn.p + 12 && a.account.p == a.region.p + a.region.n + 1 &&
              a.name.p == a.account.p + a.account.n + 1);
}

static void fuzz_names(struct sl_slice s)
{
    bool fifo;
    if (gw_sqs_queue_name_valid(s, &fifo)) {
        SL_ASSERT(s.n >= 1 && s.n <= GW_SQS_MAX_QUEUE_NAME_LEN);
        SL_ASSERT(fifo == ends_fifo(s));
    }
    if (gw_sqs_tenant_name_valid(s)) {
        SL_ASSERT(s.n >= 1 && s.n <= 64 && memchr(s.p, '.', s.n) == NULL);
        SL_ASSERT(gw_sqs_queue_name_valid(s, &fifo) && !fifo); /* every tenant name is one */
    }
    enum gw_sqs_qattr a;
    if (gw_sqs_qattr_lookup(s, &a)) {
        SL_ASSERT(sl_slice_eq_cstr(s, gw_sqs_qattr_name(a)));
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) {
        return 0;
    }
    struct sl_slice s = {(const char *)data + 1, size - 1};
    switch (data[0] % 3) {
    case 0:
        fuzz_queue_url(s);
        break;
    case 1:
        fuzz_arn(s);
        break;
    default:
        fuzz_names(s);
        break;
    }
    return 0;
}
