/*
 * gw_sqs_xml.h -- (gateway-internal) the query protocol's encoder of the
 * typed SQS replies (gw_sqs_xml.c). gw_sqs_encode.c's gw_sqs_reply_*()
 * functions hand a reply whose protocol is GW_SQS_PROTO_QUERY to the
 * function of the same shape here; each makes r a complete XML reply.
 *
 * Threading: pure; any thread.
 */
#ifndef SLUICE_GW_SQS_XML_H
#define SLUICE_GW_SQS_XML_H

#include "gw_sqs.h"

void gw__sqs_xml_error(struct gw_sqs_reply *r, const struct gw_sqs_err *err);
void gw__sqs_xml_empty(struct gw_sqs_reply *r);
void gw__sqs_xml_queue_url(struct gw_sqs_reply *r, struct sl_slice queue_url);
void gw__sqs_xml_queue_urls(struct gw_sqs_reply *r, const struct sl_slice *urls, size_t n,
                            struct sl_slice next_token);
void gw__sqs_xml_string_map(struct gw_sqs_reply *r, const struct gw_sqs_tag *kv, size_t n);
void gw__sqs_xml_send_result(struct gw_sqs_reply *r, const struct gw_sqs_send_result *res);
void gw__sqs_xml_send_batch(struct gw_sqs_reply *r, const struct gw_sqs_send_result *ok,
                            size_t n_ok, const struct gw_sqs_batch_failure *failed,
                            size_t n_failed);
void gw__sqs_xml_id_batch(struct gw_sqs_reply *r, const struct sl_slice *ok_ids, size_t n_ok,
                          const struct gw_sqs_batch_failure *failed, size_t n_failed);
void gw__sqs_xml_messages(struct gw_sqs_reply *r, const struct gw_sqs_received *msgs, size_t n);
void gw__sqs_xml_task_handle(struct gw_sqs_reply *r, const char *handle);
void gw__sqs_xml_move_tasks(struct gw_sqs_reply *r, const struct gw_sqs_move_task *tasks, size_t n);
void gw__sqs_xml_moved(struct gw_sqs_reply *r, int64_t moved);

#endif
