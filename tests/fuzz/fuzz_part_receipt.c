/*
 * fuzz_part_receipt.c -- receipt handles, which every DeleteMessage and
 * ChangeMessageVisibility carries back from the client unchanged.
 *
 * The first byte picks the mode. Even: the rest is a handle as a client
 * sends it; part_receipt_decode must refuse it or return fields that
 * encode back to a handle decoding to the same fields, on a partition
 * that exists. Odd: the rest fills the fields of a receipt; it is encoded,
 * must decode to the same fields (or be refused for a partition the engine
 * does not have), and then one character of it is changed, after which
 * the decode must fail or (for the base64 bits that carry no data) give
 * the same fields: the MAC lets nothing else through.
 *
 * The engine is a zeroed struct with only the key and the partition count
 * set, which is all the receipt code reads: no SQLite, no threads.
 */
#include <stdint.h>
#include <string.h>

#include "part_int.h"
#include "part_receipt.h"

#define NPARTS 8

static struct part_engine engine;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool same(const struct part_receipt *a, const struct part_receipt *b)
{
    return a->partition == b->partition && a->queue_id == b->queue_id &&
           a->sequence == b->sequence && a->receive_gen == b->receive_gen;
}

static uint64_t take_be(const uint8_t **p, const uint8_t *end, int bytes)
{
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++) {
        v = (v << 8) | (*p < end ? *(*p)++ : 0);
    }
    return v;
}

/* A decoded handle must survive a round trip. */
static void check_round_trip(const struct part_receipt *r)
{
    SL_ASSERT(r->partition < engine.nparts);
    char again[PART_RECEIPT_MAX];
    part__receipt_encode(&engine, r, again);
    struct part_receipt back;
    SL_ASSERT(part_receipt_decode(&engine, again, strlen(again), &back) == SL_OK);
    SL_ASSERT(same(r, &back));
}

static void fuzz_fields(const uint8_t *p, const uint8_t *end)
{
    struct part_receipt r;
    r.partition = (uint32_t)take_be(&p, end, 4);
    r.queue_id = take_be(&p, end, 8);
    r.sequence = take_be(&p, end, 8);
    r.receive_gen = (uint32_t)take_be(&p, end, 4);
    uint8_t pos = (uint8_t)take_be(&p, end, 1);
    uint8_t with = (uint8_t)take_be(&p, end, 1);
    if (r.partition >= 2 * NPARTS) {
        r.partition %= NPARTS; /* mostly partitions that exist */
    }

    char h[PART_RECEIPT_MAX];
    part__receipt_encode(&engine, &r, h);
    size_t len = strlen(h);
    struct part_receipt back;
    int rc = part_receipt_decode(&engine, h, len, &back);
    if (r.partition < NPARTS) {
        SL_ASSERT(rc == SL_OK && same(&r, &back));
    } else {
        SL_ASSERT(rc == SL_EINVAL);
    }

    size_t i = pos % len;
    if ((char)with == h[i]) {
        return;
    }
    h[i] = (char)with;
    if (part_receipt_decode(&engine, h, len, &back) == SL_OK) {
        SL_ASSERT(same(&r, &back));
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (engine.nparts == 0) {
        for (size_t i = 0; i < PART_KEY_LEN; i++) {
            engine.key[i] = (uint8_t)(0x5a ^ i);
        }
        engine.nparts = NPARTS;
    }
    if (size < 1) {
        return 0;
    }
    if (data[0] % 2 == 1) {
        fuzz_fields(data + 1, data + size);
        return 0;
    }
    struct part_receipt r;
    if (part_receipt_decode(&engine, (const char *)data + 1, size - 1, &r) == SL_OK) {
        check_round_trip(&r);
    }
    return 0;
}
