/*
 * gw_sqs_qattr.h -- (gateway-internal) validating queue attributes
 * (gw_sqs_qattr.c) as CreateQueue and SetQueueAttributes carry them.
 */
#ifndef SLUICE_GW_SQS_QATTR_H
#define SLUICE_GW_SQS_QATTR_H

#include <stdbool.h>

#include "gw_sqs.h"

/* Validates CreateQueue / SetQueueAttributes attributes (a JSON object of
 * strings) for a queue of that type; for_create allows FifoQueue. The
 * items are allocated in owner. Returns SL_OK, SL_EINVAL with err set to
 * the error SQS sends, or SL_ENOMEM. */
int gw_sqs_qattrs_decode(const struct json_t *obj, bool fifo, bool for_create,
                         struct gw_sqs_request *owner, struct gw_sqs_qattrs *out,
                         struct gw_sqs_err *err);

/* False for the FIFO-only queue attributes on a standard queue. */
bool gw__sqs_qattr_applies(enum gw_sqs_qattr a, bool fifo);

#endif
