/*
 * sigv4_date.h -- (sigv4-internal) the request date of SigV4, ISO 8601
 * basic form "YYYYMMDDTHHMMSSZ" (sigv4_date.c; formatting is public as
 * sigv4_amz_date).
 *
 * Threading: pure functions.
 */
#ifndef SLUICE_SIGV4_DATE_H
#define SLUICE_SIGV4_DATE_H

#include <stdbool.h>
#include <stdint.h>

#include "sl.h"

/* Parses "YYYYMMDDTHHMMSSZ" into seconds since the epoch. Returns false for
 * anything else, including impossible dates. */
bool sigv4__parse_amz_date(struct sl_slice s, int64_t *out);

#endif
