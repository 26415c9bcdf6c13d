/*
 * gw_sqs_decode.c -- AWS JSON 1.0 request bodies into typed requests.
 * (First slice: JSON well-formedness only; per-action decoding follows.)
 */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "gw_sqs.h"

struct gw_sqs_block {
    struct gw_sqs_block *next;
    max_align_t data[];
};

void *gw__sqs_alloc(struct gw_sqs_request *r, size_t count, size_t size)
{
    if (size != 0 && count > (SIZE_MAX - sizeof(struct gw_sqs_block)) / size) {
        return NULL;
    }
    size_t n = count * size;
    struct gw_sqs_block *b = sl_trymalloc(sizeof(*b) + n);
    if (b == NULL) {
        return NULL;
    }
    memset(b->data, 0, n);
    b->next = r->blocks_;
    r->blocks_ = b;
    return b->data;
}

int gw_sqs_decode(enum gw_sqs_action action, struct sl_slice body, struct gw_sqs_request *out,
                  struct gw_sqs_err *err)
{
    memset(out, 0, sizeof(*out));
    out->action = action;
    if (body.n == 0) {
        return SL_OK;
    }
    json_error_t jerr;
    json_t *doc = json_loadb(body.p, body.n, JSON_ALLOW_NUL, &jerr);
    if (doc == NULL || !json_is_object(doc)) {
        json_decref(doc);
        return gw_sqs_err_set(err, GW_SQS_E_SERIALIZATION, NULL);
    }
    out->doc_ = doc;
    return SL_OK;
}

void gw_sqs_request_fini(struct gw_sqs_request *r)
{
    while (r->blocks_ != NULL) {
        struct gw_sqs_block *b = r->blocks_;
        r->blocks_ = b->next;
        free(b);
    }
    json_decref(r->doc_);
    r->doc_ = NULL;
}
