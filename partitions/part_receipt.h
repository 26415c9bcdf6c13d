/*
 * part_receipt.h -- (partitions-internal) receipt handles, implemented by
 * part_receipt.c (a leaf; part_receipt_decode is public, in part.h).
 */
#ifndef SLUICE_PART_RECEIPT_H
#define SLUICE_PART_RECEIPT_H

#include "part_int.h"

/* Writes r's handle (NUL-terminated) into out. Any thread. */
void part__receipt_encode(const struct part_engine *e, const struct part_receipt *r,
                          char out[PART_RECEIPT_MAX]);

#endif
