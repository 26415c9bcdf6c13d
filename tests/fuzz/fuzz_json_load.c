/*
 * fuzz_json_load.c -- gw__json_load (gateway/sqs/gw_json_load.c) against
 * jansson's own json_loadb(JSON_ALLOW_NUL) on the same bytes: both NULL,
 * or two equal documents. json-c's tokenizer takes the bodies it can
 * read exactly and jansson the rest, so any difference here -- a
 * document jansson refuses, a value read differently, a key lost -- is a
 * request the SQS decoder would have judged differently.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <jansson.h>

#include "gw_json_load.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_error_t e1, e2;
    json_t *fast = gw__json_load((const char *)data, size, &e1);
    json_t *ref = json_loadb((const char *)data, size, JSON_ALLOW_NUL, &e2);
    if ((fast == NULL) != (ref == NULL) || (fast != NULL && !json_equal(fast, ref)))
        abort();
    json_decref(fast);
    json_decref(ref);
    return 0;
}
