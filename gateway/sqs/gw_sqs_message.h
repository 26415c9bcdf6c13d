/*
 * gw_sqs_message.h -- (gateway-internal) decoding one message to send
 * (gw_sqs_message.c): SendMessage's members or a SendMessageBatch entry,
 * with SQS's character set, attribute and id rules.
 */
#ifndef SLUICE_GW_SQS_MESSAGE_H
#define SLUICE_GW_SQS_MESSAGE_H

#include <stdbool.h>
#include <stdint.h>

#include "gw_sqs.h"
#include "gw_sqs_in.h"
#include "gw_sqs_member.h"

/* SQS's message character set: #x9 | #xA | #xD | #x20-#xD7FF |
 * #xE000-#xFFFD | #x10000-#x10FFFF over UTF-8. On false, *bad is the first
 * offending code point (or byte, for malformed UTF-8). */
bool gw__sqs_chars_valid(struct sl_slice s, uint32_t *bad);

/* gw__sqs_chars_valid that goes on past a character outside the set to
 * tell whether s is well-formed UTF-8 (RFC 3629, what jansson accepts),
 * the answer. *has_bad tells whether there is such a character (or
 * malformed UTF-8), *bad the first. */
bool gw__sqs_text_scan(struct sl_slice s, bool *has_bad, uint32_t *bad);

/* MessageGroupId / MessageDeduplicationId / ReceiveRequestAttemptId:
 * 1..128 characters, alphanumeric or punctuation (ASCII 0x21..0x7e). */
bool gw__sqs_token_valid(struct sl_slice s);

/* Returned by gw__sqs_decode_send_entry when the entry's content is
 * invalid: *fail says why, the request itself may go on. */
#define GW__SQS_ENTRY_FAILED 1

/* Decodes one message (SendMessage's members or a batch entry) from in.
 * Returns SL_OK; SL_EINVAL for structural errors (types), which go to
 * d->err; GW__SQS_ENTRY_FAILED for content errors, which go to fail (fail
 * may be d->err); SL_ENOMEM. Does not check the size limit (see
 * gw__sqs_message_too_long). */
int gw__sqs_decode_send_entry(struct gw_sqs_dec *d, const struct gw__sqs_obj_in *in,
                              struct gw_sqs_send_entry *e, struct gw_sqs_err *fail);

/* Sets err to SQS's "message too long" InvalidParameterValue. Returns
 * SL_EINVAL. */
int gw__sqs_message_too_long(struct gw_sqs_err *err);

#endif
