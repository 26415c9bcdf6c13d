/*
 * gw_attrs.h -- (gateway-internal) the stored form of message attributes
 * (gw_attrs.c).
 *
 * Attributes are stored in the very byte layout SQS hashes for
 * MD5OfMessageAttributes (name, type, transport byte, value, with 4-byte
 * big-endian lengths), sorted by name, so a receive can filter and hash
 * them without another format. System attributes kept with a message
 * (AWSTraceHeader, SenderId) use the same layout with String values.
 */
#ifndef SLUICE_GW_ATTRS_H
#define SLUICE_GW_ATTRS_H

#include <stddef.h>

#include "gw_sqs.h"
#include "sl.h"

/* The most system attributes a message keeps. */
#define GW_SYSATTR_MAX 4

/* Appends the n attributes to out. */
void gw__attrs_encode(const struct gw_sqs_msg_attr *attrs, size_t n, struct sl_buf *out);

/* Decodes a stored blob into at most cap attributes borrowing from blob.
 * Returns the count, or SL_EINVAL for a corrupt blob. */
int gw__attrs_decode(struct sl_slice blob, struct gw_sqs_msg_attr *out, size_t cap);

#endif
