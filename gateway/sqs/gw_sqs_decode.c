/*
 * gw_sqs_decode.c -- AWS JSON 1.0 request bodies into the typed requests of
 * gw_sqs.h, with SQS's validation of every member.
 *
 * Rules (the SQS Smithy model and the Amazon SQS API Reference):
 *  - The body is a JSON object; an empty body counts as {}. Anything else,
 *    and any member of the wrong JSON type, is SerializationException, as
 *    AWS's deserializer answers (the message names the JSON token, e.g.
 *    "STRING_VALUE can not be converted to an Integer").
 *  - Unknown members are ignored and null counts as absent, as in AWS.
 *  - A missing (or empty) required member is MissingParameter: "The request
 *    must contain the parameter X."
 *  - Ranges answer InvalidParameterValue with SQS's wording
 *    ("Value 11 for parameter MaxNumberOfMessages is invalid. Reason: ...").
 *  - Batch structure (count, Ids) fails the whole request; the content of
 *    one SendMessageBatch entry (body, attributes, delay, ids) fails only
 *    that entry, which the action reports in "Failed".
 *
 * Threading: pure; any thread. Ownership: see gw_sqs.h (slices borrow from
 * the request's document and blocks).
 */
#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "gw_sqs.h"
#include "gw_sqs_in.h"
#include "gw_sqs_member.h"
#include "gw_sqs_message.h"
#include "gw_sqs_qattr.h"

#define MAX_RESULTS_LIMIT 1000
#define MOVE_TASK_MAX_RATE 500
#define MOVE_TASKS_MAX_RESULTS 10

static int member_queue(struct gw_sqs_dec *d, const json_t *obj, struct gw_sqs_queue_ref *q)
{
    struct gw_sqs_val url;
    gw__sqs_val_of(json_object_get(obj, "QueueUrl"), &url);
    return gw__sqs_val_queue(d, &url, q);
}
static int max_results(struct gw_sqs_dec *d, const json_t *o, int32_t *out, bool *has)
{
    return gw__sqs_member_int(o, "MaxResults", false, 1, MAX_RESULTS_LIMIT,
                              "MaxResults must be an integer between 1 and 1000.", out, has,
                              d->err);
}

/* ---- per action ------------------------------------------------------------------- */

/* Unicode characters in a UTF-8 string (jansson has validated it). */
static size_t utf8_chars(struct sl_slice s)
{
    size_t n = 0;
    for (size_t i = 0; i < s.n; i++) {
        n += ((unsigned char)s.p[i] & 0xC0u) != 0x80u;
    }
    return n;
}

/* SQS's tag rules (Developer Guide, "Amazon SQS queue quotas"), checked on
 * the request so that a tag flood costs a decode, not a catalog write:
 * at most GW_SQS_MAX_TAGS per request, keys of 1..128 characters without
 * the reserved "aws:" prefix, values of at most 256 characters. The total
 * after merging with the queue's tags is checked by TagQueue itself. */
static int check_tags(struct gw_sqs_dec *d, const char *member, const struct gw_sqs_tag *tags,
                      size_t n)
{
    if (n > GW_SQS_MAX_TAGS) {
        return gw_sqs_err_set(d->err, GW_SQS_E_INVALID_PARAMETER_VALUE,
                              "Too many tags in %s: %zu given; a queue has at most %u tags.",
                              member, n, GW_SQS_MAX_TAGS);
    }
    for (size_t i = 0; i < n; i++) {
        size_t key_chars = utf8_chars(tags[i].key);
        if (key_chars == 0 || key_chars > GW_SQS_MAX_TAG_KEY_CHARS) {
            return gw_sqs_err_set(d->err, GW_SQS_E_INVALID_PARAMETER_VALUE,
                                  "Tag keys must be between 1 and %u characters in length.",
                                  GW_SQS_MAX_TAG_KEY_CHARS);
        }
        if (tags[i].key.n >= 4 && memcmp(tags[i].key.p, "aws:", 4) == 0) {
            return gw_sqs_err_set(d->err, GW_SQS_E_INVALID_PARAMETER_VALUE,
                                  "Tag keys may not begin with the reserved prefix aws:.");
        }
        if (utf8_chars(tags[i].value) > GW_SQS_MAX_TAG_VALUE_CHARS) {
            return gw_sqs_err_set(d->err, GW_SQS_E_INVALID_PARAMETER_VALUE,
                                  "Tag values must be at most %u characters in length.",
                                  GW_SQS_MAX_TAG_VALUE_CHARS);
        }
    }
    return SL_OK;
}

static int decode_create_queue(struct gw_sqs_dec *d, const json_t *o)
{
    struct gw_sqs_create_queue_req *q = &d->r->u.create_queue;
    int rc = gw__sqs_member_string(o, "QueueName", true, &q->queue_name, NULL, d->err);
    if (rc != SL_OK) {
        return rc;
    }
    const json_t *attrs;
    rc = gw__sqs_member_object(o, "Attributes", false, &attrs, d->err);
    if (rc != SL_OK) {
        return rc;
    }
    /* The queue type comes from FifoQueue; the name must agree with it. */
    const json_t *fifo_attr = attrs != NULL ? json_object_get(attrs, "FifoQueue") : NULL;
    bool want_fifo = fifo_attr != NULL && json_is_string(fifo_attr) &&
                     strcasecmp(json_string_value(fifo_attr), "true") == 0;
    bool name_fifo;
    bool name_ok = gw_sqs_queue_name_valid(q->queue_name, &name_fifo);
    if (want_fifo && (!name_ok || !name_fifo)) {
        return gw_sqs_err_set(d->err, GW_SQS_E_INVALID_PARAMETER_VALUE,
                              "The name of a FIFO queue can only include alphanumeric "
                              "characters, hyphens, or underscores, must end with .fifo suffix "
                              "and be 1 to 80 in length.");
    }
    if (!want_fifo && (!name_ok || name_fifo)) {
        return gw_sqs_err_set(d->err, GW_SQS_E_INVALID_PARAMETER_VALUE,
                              "Can only include alphanumeric characters, hyphens, or "
                              "underscores. 1 to 80 in length");
    }
    q->fifo = want_fifo;
    if (attrs != NULL) {
        rc = gw_sqs_qattrs_decode(attrs, q->fifo, true, d->r, &q->attributes, d->err);
        if (rc != SL_OK) {
            return rc;
        }
    }
    rc = gw__sqs_member_string_map(d, o, "tags", false, &q->tags, &q->tag_count);
    return rc != SL_OK ? rc : check_tags(d, "tags", q->tags, q->tag_count);
}

static int decode_get_queue_url(struct gw_sqs_dec *d, const json_t *o)
{
    struct gw_sqs_get_queue_url_req *q = &d->r->u.get_queue_url;
    int rc = gw__sqs_member_string(o, "QueueName", true, &q->queue_name, NULL, d->err);
    if (rc != SL_OK) {
        return rc;
    }
    rc =
        gw__sqs_member_string(o, "QueueOwnerAWSAccountId", false, &q->owner, &q->has_owner, d->err);
    if (rc != SL_OK) {
        return rc;
    }
    bool fifo;
    if (!gw_sqs_queue_name_valid(q->queue_name, &fifo) ||
        (q->has_owner && !gw_sqs_tenant_name_valid(q->owner))) {
        return gw_sqs_err_set(d->err, GW_SQS_E_QUEUE_DOES_NOT_EXIST, NULL);
    }
    return SL_OK;
}

static int decode_list_queues(struct gw_sqs_dec *d, const json_t *o)
{
    struct gw_sqs_list_queues_req *q = &d->r->u.list_queues;
    int rc = gw__sqs_member_string(o, "QueueNamePrefix", false, &q->prefix, &q->has_prefix, d->err);
    if (rc == SL_OK) {
        rc = gw__sqs_member_string(o, "NextToken", false, &q->next_token, &q->has_next_token,
                                   d->err);
    }
    if (rc == SL_OK) {
        rc = max_results(d, o, &q->max_results, &q->has_max_results);
    }
    return rc;
}

static int decode_queue_only(struct gw_sqs_dec *d, const json_t *o, struct gw_sqs_queue_only_req *q)
{
    return member_queue(d, o, &q->queue);
}

static int decode_delete_queue(struct gw_sqs_dec *d, const json_t *o)
{
    return decode_queue_only(d, o, &d->r->u.delete_queue);
}

static int decode_purge_queue(struct gw_sqs_dec *d, const json_t *o)
{
    return decode_queue_only(d, o, &d->r->u.purge_queue);
}

static int decode_list_queue_tags(struct gw_sqs_dec *d, const json_t *o)
{
    return decode_queue_only(d, o, &d->r->u.list_queue_tags);
}

static int decode_get_queue_attributes(struct gw_sqs_dec *d, const json_t *o)
{
    struct gw_sqs_get_queue_attributes_req *q = &d->r->u.get_queue_attributes;
    int rc = member_queue(d, o, &q->queue);
    if (rc != SL_OK) {
        return rc;
    }
    struct sl_slice *names;
    size_t n;
    rc = gw__sqs_member_string_list(d, o, "AttributeNames", false, &names, &n);
    if (rc != SL_OK) {
        return rc;
    }
    /* sluice's filtered depth (docs/api.md, "Filtered receives") */
    rc = gw_sqs_filter_parse(names, n, "AttributeNames", &q->filter, d->err);
    if (rc != SL_OK) {
        return rc;
    }
    for (size_t i = 0; i < n; i++) {
        enum gw_sqs_qattr a;
        if (sl_slice_eq_cstr(names[i], "All")) {
            q->wanted = (1u << GW_SQS_QATTR__COUNT) - 1;
        } else if (sl_slice_eq_cstr(names[i], "SluiceFilteredMessages") && !q->queue.fifo) {
            q->want_filtered_ready = true;
        } else if (sl_slice_eq_cstr(names[i], "SluiceFilteredMessagesNotVisible") &&
                   !q->queue.fifo) {
            q->want_filtered_inflight = true;
        } else if (names[i].n >= sizeof GW_SQS_FILTER_PREFIX - 1 &&
                   strncasecmp(names[i].p, GW_SQS_FILTER_PREFIX, sizeof GW_SQS_FILTER_PREFIX - 1) ==
                       0) {
            continue; /* parsed above */
        } else if (gw_sqs_qattr_lookup(names[i], &a) && gw__sqs_qattr_applies(a, q->queue.fifo)) {
            q->wanted |= 1u << a;
        } else {
            return gw_sqs_err_set(d->err, GW_SQS_E_INVALID_ATTRIBUTE_NAME,
                                  "Unknown Attribute %.*s.", (int)SL_MIN(names[i].n, 256),
                                  names[i].p);
        }
    }
    bool depth = q->want_filtered_ready || q->want_filtered_inflight;
    if (depth != (q->filter.count > 0)) {
        return gw_sqs_err_set(d->err, GW_SQS_E_INVALID_ATTRIBUTE_NAME, "%s",
                              depth ? "SluiceFilteredMessages and "
                                      "SluiceFilteredMessagesNotVisible need at least one "
                                      "sluice.Filter.<name>=<value> among AttributeNames."
                                    : "A sluice.Filter entry among AttributeNames needs "
                                      "SluiceFilteredMessages or "
                                      "SluiceFilteredMessagesNotVisible beside it.");
    }
    return SL_OK;
}

static int decode_set_queue_attributes(struct gw_sqs_dec *d, const json_t *o)
{
    struct gw_sqs_set_queue_attributes_req *q = &d->r->u.set_queue_attributes;
    int rc = member_queue(d, o, &q->queue);
    if (rc != SL_OK) {
        return rc;
    }
    const json_t *attrs;
    rc = gw__sqs_member_object(o, "Attributes", true, &attrs, d->err);
    if (rc != SL_OK) {
        return rc;
    }
    return gw_sqs_qattrs_decode(attrs, q->queue.fifo, false, d->r, &q->attributes, d->err);
}

static int decode_list_dead_letter_source_queues(struct gw_sqs_dec *d, const json_t *o)
{
    struct gw_sqs_list_dead_letter_source_queues_req *q = &d->r->u.list_dead_letter_source_queues;
    int rc = member_queue(d, o, &q->queue);
    if (rc == SL_OK) {
        rc = gw__sqs_member_string(o, "NextToken", false, &q->next_token, &q->has_next_token,
                                   d->err);
    }
    if (rc == SL_OK) {
        rc = max_results(d, o, &q->max_results, &q->has_max_results);
    }
    return rc;
}

static int decode_start_message_move_task(struct gw_sqs_dec *d, const json_t *o)
{
    struct gw_sqs_start_message_move_task_req *q = &d->r->u.start_message_move_task;
    int rc = gw__sqs_member_string(o, "SourceArn", true, &q->source_arn, NULL, d->err);
    if (rc == SL_OK) {
        rc = gw__sqs_member_string(o, "DestinationArn", false, &q->destination_arn,
                                   &q->has_destination_arn, d->err);
    }
    if (rc == SL_OK) {
        rc = gw__sqs_member_int(o, "MaxNumberOfMessagesPerSecond", false, 1, MOVE_TASK_MAX_RATE,
                                "Must be between 1 and 500, if provided.", &q->max_per_second,
                                &q->has_max_per_second, d->err);
    }
    return rc;
}

static int decode_list_message_move_tasks(struct gw_sqs_dec *d, const json_t *o)
{
    struct gw_sqs_list_message_move_tasks_req *q = &d->r->u.list_message_move_tasks;
    int rc = gw__sqs_member_string(o, "SourceArn", true, &q->source_arn, NULL, d->err);
    bool has = false;
    if (rc == SL_OK) {
        rc = gw__sqs_member_int(o, "MaxResults", false, 1, MOVE_TASKS_MAX_RESULTS,
                                "Must be between 1 and 10, if provided.", &q->max_results, &has,
                                d->err);
    }
    if (rc == SL_OK && !has) {
        q->max_results = 1;
    }
    return rc;
}

static int decode_cancel_message_move_task(struct gw_sqs_dec *d, const json_t *o)
{
    struct gw_sqs_cancel_message_move_task_req *q = &d->r->u.cancel_message_move_task;
    return gw__sqs_member_string(o, "TaskHandle", true, &q->task_handle, NULL, d->err);
}

static int decode_tag_queue(struct gw_sqs_dec *d, const json_t *o)
{
    struct gw_sqs_tag_queue_req *q = &d->r->u.tag_queue;
    int rc = member_queue(d, o, &q->queue);
    if (rc != SL_OK) {
        return rc;
    }
    rc = gw__sqs_member_string_map(d, o, "Tags", true, &q->tags, &q->tag_count);
    return rc != SL_OK ? rc : check_tags(d, "Tags", q->tags, q->tag_count);
}

static int decode_untag_queue(struct gw_sqs_dec *d, const json_t *o)
{
    struct gw_sqs_untag_queue_req *q = &d->r->u.untag_queue;
    int rc = member_queue(d, o, &q->queue);
    if (rc != SL_OK) {
        return rc;
    }
    rc = gw__sqs_member_string_list(d, o, "TagKeys", true, &q->keys, &q->key_count);
    if (rc == SL_OK && q->key_count > GW_SQS_MAX_TAGS) {
        rc = gw_sqs_err_set(d->err, GW_SQS_E_INVALID_PARAMETER_VALUE,
                            "Too many tag keys in TagKeys: %zu given; a queue has at most %u "
                            "tags.",
                            q->key_count, GW_SQS_MAX_TAGS);
    }
    return rc;
}

static int decode_add_permission(struct gw_sqs_dec *d, const json_t *o)
{
    struct gw_sqs_permission_req *q = &d->r->u.add_permission;
    int rc = member_queue(d, o, &q->queue);
    if (rc == SL_OK) {
        rc = gw__sqs_member_string(o, "Label", true, &q->label, NULL, d->err);
    }
    struct sl_slice *list;
    size_t n;
    if (rc == SL_OK) {
        rc = gw__sqs_member_string_list(d, o, "AWSAccountIds", true, &list, &n);
    }
    if (rc == SL_OK) {
        rc = gw__sqs_member_string_list(d, o, "Actions", true, &list, &n);
    }
    return rc;
}

static int decode_remove_permission(struct gw_sqs_dec *d, const json_t *o)
{
    struct gw_sqs_permission_req *q = &d->r->u.remove_permission;
    int rc = member_queue(d, o, &q->queue);
    if (rc == SL_OK) {
        rc = gw__sqs_member_string(o, "Label", true, &q->label, NULL, d->err);
    }
    return rc;
}

typedef int action_decoder(struct gw_sqs_dec *d, const json_t *o);

/* The hot message actions go through the gatherer (gw_sqs_hot.c), which
 * both their parsers feed. */
#define decode_send_message gw__sqs_hot_decode_doc
#define decode_send_message_batch gw__sqs_hot_decode_doc
#define decode_receive_message gw__sqs_hot_decode_doc
#define decode_delete_message gw__sqs_hot_decode_doc
#define decode_delete_message_batch gw__sqs_hot_decode_doc
#define decode_change_message_visibility gw__sqs_hot_decode_doc
#define decode_change_message_visibility_batch gw__sqs_hot_decode_doc

static action_decoder *const decoders[GW_SQS_ACT__COUNT] = {
#define GW_SQS_ACTION(name, camel, snake, handler) [GW_SQS_ACT_##name] = decode_##snake,
#include "gw_actions.def"
#undef GW_SQS_ACTION
};

/* ---- entry points -------------------------------------------------------------------- */

static int decode_doc(enum gw_sqs_action action, struct json_t *doc, uint32_t surrogate,
                      struct gw_sqs_request *out, struct gw_sqs_err *err)
{
    SL_ASSERT((unsigned)action < GW_SQS_ACT__COUNT);
    memset(out, 0, sizeof(*out));
    out->action = action;
    out->doc_ = doc;
    out->surrogate_ = surrogate;
    if (!json_is_object(doc)) {
        return gw__sqs_type_error(doc, "a Structure", err);
    }
    struct gw_sqs_dec d = {.r = out, .err = err};
    int rc = decoders[action](&d, doc);
    SL_ASSERT(rc == SL_OK || rc == SL_EINVAL || rc == SL_ENOMEM);
    return rc;
}

int gw_sqs_decode_doc(enum gw_sqs_action action, struct json_t *doc, struct gw_sqs_request *out,
                      struct gw_sqs_err *err)
{
    return decode_doc(action, doc, 0, out, err);
}

int gw__sqs_decode_strict(enum gw_sqs_action action, struct sl_slice body,
                          struct gw_sqs_request *out, struct gw_sqs_err *err)
{
    SL_ASSERT((unsigned)action < GW_SQS_ACT__COUNT);
    json_t *doc;
    uint32_t surrogate = 0;
    if (body.n == 0) {
        doc = json_object();
    } else {
        json_error_t jerr;
        /* JSON_ALLOW_NUL: a U+0000 in a body is InvalidMessageContents,
         * not a syntax error */
        doc = json_loadb(body.p, body.n, JSON_ALLOW_NUL, &jerr);
        if (doc == NULL) {
            doc = gw__sqs_load_surrogates(body, jerr.text, &surrogate);
        }
        if (doc == NULL) {
            memset(out, 0, sizeof(*out));
            out->action = action;
            return gw_sqs_err_set(err, GW_SQS_E_SERIALIZATION, NULL);
        }
    }
    return decode_doc(action, doc, surrogate, out, err);
}

int gw_sqs_decode(enum gw_sqs_action action, struct sl_slice body, struct gw_sqs_request *out,
                  struct gw_sqs_err *err)
{
    SL_ASSERT((unsigned)action < GW_SQS_ACT__COUNT);
    /* A raw NUL byte: jansson drops one that ends a number or a literal
     * ("5\0," reads as "5,": its stream takes a NUL for "nothing
     * buffered" when it puts the byte back), which yajl does not. No
     * client sends one; such a body keeps jansson's reading. */
    if (!gw__sqs_hot_action(action) || (body.n > 0 && memchr(body.p, '\0', body.n) != NULL)) {
        return gw__sqs_decode_strict(action, body, out, err);
    }
    memset(out, 0, sizeof(*out));
    out->action = action;
    struct gw_sqs_dec d = {.r = out, .err = err};
    int rc = gw__sqs_hot_decode_body(&d, body);
    SL_ASSERT(rc == SL_OK || rc == SL_EINVAL || rc == SL_ENOMEM);
    return rc;
}
const struct gw_sqs_queue_ref *gw_sqs_request_queue(const struct gw_sqs_request *r)
{
    switch (r->action) {
    case GW_SQS_ACT_CREATE_QUEUE:
    case GW_SQS_ACT_GET_QUEUE_URL:
    case GW_SQS_ACT_LIST_QUEUES:
    case GW_SQS_ACT_START_MESSAGE_MOVE_TASK:
    case GW_SQS_ACT_LIST_MESSAGE_MOVE_TASKS:
    case GW_SQS_ACT_CANCEL_MESSAGE_MOVE_TASK:
    case GW_SQS_ACT__COUNT:
        return NULL;
    case GW_SQS_ACT_DELETE_QUEUE:
        return &r->u.delete_queue.queue;
    case GW_SQS_ACT_GET_QUEUE_ATTRIBUTES:
        return &r->u.get_queue_attributes.queue;
    case GW_SQS_ACT_SET_QUEUE_ATTRIBUTES:
        return &r->u.set_queue_attributes.queue;
    case GW_SQS_ACT_PURGE_QUEUE:
        return &r->u.purge_queue.queue;
    case GW_SQS_ACT_SEND_MESSAGE:
        return &r->u.send_message.queue;
    case GW_SQS_ACT_SEND_MESSAGE_BATCH:
        return &r->u.send_message_batch.queue;
    case GW_SQS_ACT_RECEIVE_MESSAGE:
        return &r->u.receive_message.queue;
    case GW_SQS_ACT_DELETE_MESSAGE:
        return &r->u.delete_message.queue;
    case GW_SQS_ACT_DELETE_MESSAGE_BATCH:
        return &r->u.delete_message_batch.queue;
    case GW_SQS_ACT_CHANGE_MESSAGE_VISIBILITY:
        return &r->u.change_message_visibility.queue;
    case GW_SQS_ACT_CHANGE_MESSAGE_VISIBILITY_BATCH:
        return &r->u.change_message_visibility_batch.queue;
    case GW_SQS_ACT_LIST_DEAD_LETTER_SOURCE_QUEUES:
        return &r->u.list_dead_letter_source_queues.queue;
    case GW_SQS_ACT_TAG_QUEUE:
        return &r->u.tag_queue.queue;
    case GW_SQS_ACT_UNTAG_QUEUE:
        return &r->u.untag_queue.queue;
    case GW_SQS_ACT_LIST_QUEUE_TAGS:
        return &r->u.list_queue_tags.queue;
    case GW_SQS_ACT_ADD_PERMISSION:
        return &r->u.add_permission.queue;
    case GW_SQS_ACT_REMOVE_PERMISSION:
        return &r->u.remove_permission.queue;
    }
    return NULL;
}
