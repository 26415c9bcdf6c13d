/*
 * part_bytes.h -- (partitions-internal) big-endian integers in byte
 * strings: the one encoding of every binary format the engine writes
 * (receipt handles, the Raft port's handshake, replicated log entries),
 * so that a field reads the same whatever the host.
 */
#ifndef SLUICE_PART_BYTES_H
#define SLUICE_PART_BYTES_H

#include <stddef.h>
#include <stdint.h>

/* The low `bytes` bytes of v at p, most significant first. */
static inline void part__put_be(uint8_t *p, uint64_t v, size_t bytes)
{
    for (size_t i = bytes; i > 0; i--) {
        p[i - 1] = (uint8_t)(v & 0xffu);
        v >>= 8;
    }
}

/* The `bytes` bytes at p, most significant first. */
static inline uint64_t part__get_be(const uint8_t *p, size_t bytes)
{
    uint64_t v = 0;
    for (size_t i = 0; i < bytes; i++) {
        v = (v << 8) | p[i];
    }
    return v;
}

#endif
