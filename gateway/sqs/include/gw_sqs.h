/*
 * gw_sqs.h -- (gateway-internal) the SQS protocol layer, JSON 1.0 and the
 * query protocol: the error and action tables, typed request decoding
 * (jansson; a query form is translated into the JSON document first),
 * reply encoding in JSON or XML, the message MD5s, queue URLs and SQS's
 * name rules.
 *
 * Everything here is pure: no I/O, no libuv, no threads, no clock. It can
 * be driven from a byte array (tests/unit/gateway/test_sqs*.c,
 * tests/fuzz/fuzz_gw_sqs.c).
 *
 * Threading: any thread; nothing is shared.
 *
 * Ownership: a decoded struct gw_sqs_request owns the parsed JSON document
 * (cold actions and the query protocol) and a private list of blocks.
 * Every struct sl_slice in it borrows from one of those two, or, for the
 * hot message actions' JSON bodies (SendMessage(Batch), ReceiveMessage,
 * DeleteMessage(Batch), ChangeMessageVisibility(Batch)), from the body
 * itself wherever a string holds no escape: so the body given to
 * gw_sqs_decode() must stay as it is until gw_sqs_request_fini() (the
 * gateway's exchange keeps it until the answer, and the request is
 * finished after that). The slices stay valid until
 * gw_sqs_request_fini().
 *
 * Wire reference: the SQS Smithy model (sqs-2012-11-05.json) and the
 * Amazon SQS API Reference; docs/api.md lists where sluice differs.
 */
#ifndef SLUICE_GW_SQS_H
#define SLUICE_GW_SQS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gw_transport.h"
#include "sl.h"

struct json_t; /* jansson's json_t; no <jansson.h> here */

/* ---- limits of SQS (Amazon SQS Developer Guide, "Amazon SQS quotas") --- */

#define GW_SQS_MAX_MESSAGE_BYTES 1048576u /* body + attributes, and a whole batch */
#define GW_SQS_MAX_BATCH_ENTRIES 10u
#define GW_SQS_MAX_BATCH_ID_LEN 80u
#define GW_SQS_MAX_QUEUE_NAME_LEN 80u
#define GW_SQS_MAX_MESSAGE_ATTRIBUTES 10u
#define GW_SQS_MAX_ATTRIBUTE_NAME_LEN 256u
#define GW_SQS_MAX_ATTRIBUTE_TYPE_LEN 256u
#define GW_SQS_MAX_GROUP_ID_LEN 128u /* MessageGroupId, MessageDeduplicationId, attempt id */
#define GW_SQS_MAX_VISIBILITY_TIMEOUT 43200
#define GW_SQS_MAX_DELAY_SECONDS 900
#define GW_SQS_MAX_WAIT_TIME_SECONDS 20
#define GW_SQS_MAX_TAGS 50u             /* per queue, after a TagQueue merges */
#define GW_SQS_MAX_TAG_KEY_CHARS 128u   /* Unicode characters, UTF-8 */
#define GW_SQS_MAX_TAG_VALUE_CHARS 256u /* Unicode characters, UTF-8 */
#define GW_SQS_MAX_POLICY_BYTES 8192u   /* Developer Guide, "Amazon SQS policy quotas" */
/* Request bodies by kind of action (gw_sqs_action_max_body), generous for
 * any client (every character \u-escaped) and small enough that parsing
 * one costs little: 50 tags of 128 + 256 characters and an 8 KiB policy;
 * 10 entries of an 80-character id and a 1,024-character handle. */
#define GW_SQS_MAX_CONFIG_BODY ((size_t)256 * 1024)
#define GW_SQS_MAX_HANDLES_BODY ((size_t)128 * 1024)
#define GW_SQS_MAX_SMALL_BODY ((size_t)64 * 1024)

/* ---- errors (gw_errors.def) -------------------------------------------- */

enum gw_sqs_error {
    GW_SQS_OK = 0,
#define GW_SQS_ERROR(name, type, query, status, fault, message) GW_SQS_E_##name,
#include "gw_errors.def"
#undef GW_SQS_ERROR
    GW_SQS_E__COUNT
};

struct gw_sqs_error_info {
    const char *type;       /* JSON "__type" */
    const char *query_code; /* x-amzn-query-error, before ";Sender" */
    int status;             /* HTTP status */
    bool sender;            /* Sender (client) or Receiver (service) fault */
    const char *message;    /* default message */
};

/* The table row of an error; e must be a GW_SQS_E_* value. */
const struct gw_sqs_error_info *gw_sqs_error_info(enum gw_sqs_error e);

#define GW_SQS_ERR_MESSAGE_MAX 512

/* An error with its message, as the decoder and the actions report it.
 * The message may quote client input (truncated to fit). */
struct gw_sqs_err {
    enum gw_sqs_error code;
    char message[GW_SQS_ERR_MESSAGE_MAX];
};

/* Sets *err; fmt NULL uses the table's default message. Returns SL_EINVAL
 * so that a decoder can write `return gw_sqs_err_set(...)`. */
int gw_sqs_err_set(struct gw_sqs_err *err, enum gw_sqs_error code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---- actions (gw_actions.def) ------------------------------------------ */

enum gw_sqs_action {
#define GW_SQS_ACTION(name, camel, snake, handler) GW_SQS_ACT_##name,
#include "gw_actions.def"
#undef GW_SQS_ACTION
    GW_SQS_ACT__COUNT
};

/* "SendMessage" for GW_SQS_ACT_SEND_MESSAGE. */
const char *gw_sqs_action_name(enum gw_sqs_action a);

/* The largest request body an action can need, checked before the body is
 * parsed so that a decode's cost is bounded by what the action is for:
 * SendMessage and SendMessageBatch carry up to 1 MiB of messages (the
 * protocol layer's cap applies), queue configuration (CreateQueue,
 * SetQueueAttributes, TagQueue) up to GW_SQS_MAX_CONFIG_BODY, the batches
 * of receipt handles GW_SQS_MAX_HANDLES_BODY, every other action
 * GW_SQS_MAX_SMALL_BODY. SIZE_MAX where the protocol layer's cap is the
 * only one. */
size_t gw_sqs_action_max_body(enum gw_sqs_action a);

/* Finds the action of an X-Amz-Target value ("AmazonSQS.SendMessage").
 * Returns false for anything else. */
bool gw_sqs_action_from_target(struct sl_slice target, enum gw_sqs_action *out);

/* Finds the action of a bare name ("SendMessage", the query protocol's
 * Action parameter). Returns false for anything else. */
bool gw_sqs_action_from_name(struct sl_slice name, enum gw_sqs_action *out);

/* ---- names, URLs, ARNs -------------------------------------------------- */

/* A queue as a QueueUrl names it: http[s]://HOST:PORT/TENANT/QUEUE. */
struct gw_sqs_queue_ref {
    struct sl_slice url;
    struct sl_slice tenant; /* plays the AWS account id */
    struct sl_slice name;
    bool fifo; /* name ends in ".fifo" */
};

/* Splits a QueueUrl. A URL that is not of that shape gives InvalidAddress;
 * a well-formed URL whose tenant or queue name cannot exist gives
 * QueueDoesNotExist (SQS never says more about a queue it cannot find).
 * The HOST:PORT part is not compared with the request's authority:
 * clients reach the gateway under several names (localhost, 127.0.0.1,
 * a load balancer) and SQS itself accepts its legacy host names. */
int gw_sqs_parse_queue_url(struct sl_slice url, struct gw_sqs_queue_ref *out,
                           struct gw_sqs_err *err);

/* SQS's queue name rule: 1..80 of [A-Za-z0-9_-], where a FIFO queue's name
 * ends in ".fifo" (counted in the 80). *fifo tells whether it does. */
bool gw_sqs_queue_name_valid(struct sl_slice name, bool *fifo);

/* Tenant names, as docs/config.md fixes them: [A-Za-z0-9_-]{1,64}. (The same
 * rule as cfg_tenant_name_valid; kept here so this layer stays pure.) */
bool gw_sqs_tenant_name_valid(struct sl_slice name);

/* An SQS ARN "arn:aws:sqs:REGION:ACCOUNT:QUEUE" split into its parts. */
struct gw_sqs_arn {
    struct sl_slice region;
    struct sl_slice account; /* the tenant */
    struct sl_slice name;
};
bool gw_sqs_parse_arn(struct sl_slice arn, struct gw_sqs_arn *out);

/* ---- message attributes and MD5s --------------------------------------- */

enum gw_sqs_attr_type {
    GW_SQS_ATTR_STRING, /* transport byte 1 */
    GW_SQS_ATTR_NUMBER, /* transport byte 1 */
    GW_SQS_ATTR_BINARY, /* transport byte 2 */
};

struct gw_sqs_msg_attr {
    struct sl_slice name;
    struct sl_slice data_type; /* "String", "Number.float", "Binary.png" ... */
    enum gw_sqs_attr_type type;
    struct sl_slice value; /* the text of a String/Number, the decoded bytes of a Binary */
};

#define GW_SQS_MD5_LEN 16

/* Lower-case hex MD5 of bytes (MD5OfMessageBody), and the raw digest. */
void gw_sqs_md5_hex(const void *data, size_t n, char out[33]);
void gw_sqs_md5(const void *data, size_t n, uint8_t out[GW_SQS_MD5_LEN]);

/* MD5OfMessageAttributes (and MD5OfMessageSystemAttributes) as SQS computes
 * it: over the attributes sorted by name in byte order, each as
 * len(name) name len(type) type transport-byte len(value) value with
 * 4-byte big-endian lengths. attrs need not be sorted. n must be > 0 (SQS
 * omits the field when there are no attributes). Returns SL_OK, or
 * SL_EINVAL if n is 0 or more than 64. */
int gw_sqs_md5_of_attrs(const struct gw_sqs_msg_attr *attrs, size_t n, char out[33]);
/* The same, raw. */
int gw_sqs_md5_of_attrs_raw(const struct gw_sqs_msg_attr *attrs, size_t n,
                            uint8_t out[GW_SQS_MD5_LEN]);

/* MD5OfMessageSystemAttributes for an AWSTraceHeader value. */
void gw_sqs_md5_of_trace_header(struct sl_slice trace_header, char out[33]);

/* The receive-side MessageAttributeNames filter: true when name is
 * selected by one of the filters ("All", ".*", "*", an exact name, or
 * "Prefix.*"). */
bool gw_sqs_attr_filter_match(const struct sl_slice *filters, size_t n, struct sl_slice name);

/* SQS's rule for a message attribute's name: 1..256 of letters, digits,
 * '_', '-', '.', no leading, trailing or doubled '.', not starting with
 * AWS. or Amazon. (any case). */
bool gw_sqs_attr_name_valid(struct sl_slice name);

/* Sorts attributes by name in byte order (the MD5 and storage order). */
void gw_sqs_msg_attrs_sort(struct gw_sqs_msg_attr *attrs, size_t n);

/* ---- queue attributes (Amazon SQS API Reference, SetQueueAttributes) --- */

/* SluiceIdempotencyWindowSeconds: 1..this (the engine's
 * PART_IDEMPOTENCY_WINDOW_MAX_S; gw_act_queue.c asserts they agree) and
 * 300 when SluiceIdempotentSends is on without it. */
#define GW_SQS_IDEMPOTENCY_WINDOW_MAX_S 3600

/* Filtered receives (docs/api.md, "Filtered receives"): a queue indexes
 * up to GW_SQS_FILTER_KEYS_MAX message attributes (SluiceFilterKeys); a
 * ReceiveMessage or GetQueueAttributes names up to GW_SQS_FILTER_MAX
 * key=value pairs as entries "sluice.Filter.KEY=VALUE" of its attribute
 * name list, every one of which a message must carry; a value has
 * 1..GW_SQS_FILTER_VALUE_MAX bytes. */
#define GW_SQS_FILTER_KEYS_MAX 8
#define GW_SQS_FILTER_MAX 4
#define GW_SQS_FILTER_VALUE_MAX 256
#define GW_SQS_FILTER_PREFIX "sluice.Filter."

struct gw_sqs_filter {
    struct {
        struct sl_slice key;   /* a message attribute name */
        struct sl_slice value; /* its String or Number value, compared exactly */
    } pairs[GW_SQS_FILTER_MAX];
    size_t count; /* 0: no filter */
};

/* Collects the "sluice.Filter.KEY=VALUE" entries of names (a receive's
 * MessageAttributeNames or a GetQueueAttributes' AttributeNames; other
 * entries are left alone) into *out, whose slices borrow from names.
 * Returns SL_OK, or SL_EINVAL with err set (InvalidParameterValue naming
 * param) for an entry without '=', a key that is no valid attribute name
 * or is reserved, an empty, oversized or NUL-carrying value, a key given
 * twice, or more than GW_SQS_FILTER_MAX entries. */
int gw_sqs_filter_parse(const struct sl_slice *names, size_t n, const char *param,
                        struct gw_sqs_filter *out, struct gw_sqs_err *err);

/* Splits a SluiceFilterKeys value ("color,size": 1..GW_SQS_FILTER_KEYS_MAX
 * distinct valid attribute names, none reserved, separated by single
 * commas) into keys (borrowing from v). Returns SL_OK or SL_EINVAL. */
int gw_sqs_filter_keys_split(struct sl_slice v, struct sl_slice keys[GW_SQS_FILTER_KEYS_MAX],
                             size_t *n);
#define GW_SQS_IDEMPOTENCY_WINDOW_DEFAULT_S 300

/* X(ENUM, "Name"); the Sluice* ones are sluice's own (docs/api.md,
 * "Beyond SQS") */
#define GW_SQS_QATTR_LIST(X)                                                                       \
    X(DELAY_SECONDS, "DelaySeconds")                                                               \
    X(MAXIMUM_MESSAGE_SIZE, "MaximumMessageSize")                                                  \
    X(MESSAGE_RETENTION_PERIOD, "MessageRetentionPeriod")                                          \
    X(RECEIVE_MESSAGE_WAIT_TIME_SECONDS, "ReceiveMessageWaitTimeSeconds")                          \
    X(VISIBILITY_TIMEOUT, "VisibilityTimeout")                                                     \
    X(POLICY, "Policy")                                                                            \
    X(REDRIVE_POLICY, "RedrivePolicy")                                                             \
    X(REDRIVE_ALLOW_POLICY, "RedriveAllowPolicy")                                                  \
    X(FIFO_QUEUE, "FifoQueue")                                                                     \
    X(CONTENT_BASED_DEDUPLICATION, "ContentBasedDeduplication")                                    \
    X(DEDUPLICATION_SCOPE, "DeduplicationScope")                                                   \
    X(FIFO_THROUGHPUT_LIMIT, "FifoThroughputLimit")                                                \
    X(KMS_MASTER_KEY_ID, "KmsMasterKeyId")                                                         \
    X(KMS_DATA_KEY_REUSE_PERIOD_SECONDS, "KmsDataKeyReusePeriodSeconds")                           \
    X(SQS_MANAGED_SSE_ENABLED, "SqsManagedSseEnabled")                                             \
    X(APPROXIMATE_NUMBER_OF_MESSAGES, "ApproximateNumberOfMessages")                               \
    X(APPROXIMATE_NUMBER_OF_MESSAGES_NOT_VISIBLE, "ApproximateNumberOfMessagesNotVisible")         \
    X(APPROXIMATE_NUMBER_OF_MESSAGES_DELAYED, "ApproximateNumberOfMessagesDelayed")                \
    X(CREATED_TIMESTAMP, "CreatedTimestamp")                                                       \
    X(LAST_MODIFIED_TIMESTAMP, "LastModifiedTimestamp")                                            \
    X(QUEUE_ARN, "QueueArn")                                                                       \
    X(SLUICE_PRIORITY, "SluicePriority")                                                           \
    X(SLUICE_IDEMPOTENT_SENDS, "SluiceIdempotentSends")                                            \
    X(SLUICE_IDEMPOTENCY_WINDOW_SECONDS, "SluiceIdempotencyWindowSeconds")                         \
    X(SLUICE_EXCLUSIVITY_KEY, "SluiceExclusivityKey")                                              \
    X(SLUICE_FILTER_KEYS, "SluiceFilterKeys")

enum gw_sqs_qattr {
#define GW_SQS_QATTR_ENUM(e, n) GW_SQS_QATTR_##e,
    GW_SQS_QATTR_LIST(GW_SQS_QATTR_ENUM)
#undef GW_SQS_QATTR_ENUM
        GW_SQS_QATTR__COUNT
};

const char *gw_sqs_qattr_name(enum gw_sqs_qattr a);
bool gw_sqs_qattr_lookup(struct sl_slice name, enum gw_sqs_qattr *out);

/* One validated queue attribute of CreateQueue / SetQueueAttributes. */
struct gw_sqs_qattr_value {
    enum gw_sqs_qattr attr;
    struct sl_slice value; /* as sent ("" removes Policy / RedrivePolicy) */
    int64_t number;        /* integers; 0/1 for booleans */
};

struct gw_sqs_qattrs {
    struct gw_sqs_qattr_value *items; /* at most one per attribute */
    size_t count;
};

/* The value of attr in a, or NULL. */
const struct gw_sqs_qattr_value *gw_sqs_qattrs_find(const struct gw_sqs_qattrs *a,
                                                    enum gw_sqs_qattr attr);

/* ---- message system attributes (API Reference, SendMessage) ------------ */

#define GW_SQS_SYSATTR_LIST(X)                                                                     \
    X(SENDER_ID, "SenderId")                                                                       \
    X(SENT_TIMESTAMP, "SentTimestamp")                                                             \
    X(APPROXIMATE_RECEIVE_COUNT, "ApproximateReceiveCount")                                        \
    X(APPROXIMATE_FIRST_RECEIVE_TIMESTAMP, "ApproximateFirstReceiveTimestamp")                     \
    X(SEQUENCE_NUMBER, "SequenceNumber")                                                           \
    X(MESSAGE_DEDUPLICATION_ID, "MessageDeduplicationId")                                          \
    X(MESSAGE_GROUP_ID, "MessageGroupId")                                                          \
    X(AWS_TRACE_HEADER, "AWSTraceHeader")                                                          \
    X(DEAD_LETTER_QUEUE_SOURCE_ARN, "DeadLetterQueueSourceArn")

enum gw_sqs_sysattr {
#define GW_SQS_SYSATTR_ENUM(e, n) GW_SQS_SYSATTR_##e,
    GW_SQS_SYSATTR_LIST(GW_SQS_SYSATTR_ENUM)
#undef GW_SQS_SYSATTR_ENUM
        GW_SQS_SYSATTR__COUNT
};

const char *gw_sqs_sysattr_name(enum gw_sqs_sysattr a);

/* ---- typed requests ----------------------------------------------------- */

/* Optional members carry has_<member>; absent slices are {NULL, 0}. */

struct gw_sqs_tag {
    struct sl_slice key;
    struct sl_slice value;
};

/* One message to send (SendMessage, or one entry of SendMessageBatch). */
struct gw_sqs_send_entry {
    struct sl_slice id; /* batch entry Id; empty for SendMessage */
    struct sl_slice body;
    bool has_delay_seconds;
    int32_t delay_seconds;         /* 0..900 */
    struct gw_sqs_msg_attr *attrs; /* sorted by name */
    size_t attr_count;
    bool has_trace_header;
    struct sl_slice trace_header; /* MessageSystemAttributes.AWSTraceHeader */
    bool has_group_id;
    struct sl_slice group_id;
    bool has_dedup_id;
    struct sl_slice dedup_id;
    size_t size; /* as SQS counts it: body + each attribute's name, type and value */
    /* SendMessageBatch only: this entry failed validation and goes to
     * "Failed" (the others may still succeed); NULL when valid. */
    const struct gw_sqs_err *fail;
    /* private: the body's MD5, taken by the decoder while the body was in
     * cache, which gw_sqs_digests_of and gw_sqs_send_result_digest use */
    bool has_body_md5_;
    uint8_t body_md5_[GW_SQS_MD5_LEN];
};

struct gw_sqs_receipt_entry { /* DeleteMessageBatch / ChangeMessageVisibilityBatch */
    struct sl_slice id;
    struct sl_slice receipt_handle;
    bool has_visibility_timeout;
    int32_t visibility_timeout;
};

struct gw_sqs_create_queue_req {
    struct sl_slice queue_name;
    bool fifo;
    struct gw_sqs_qattrs attributes;
    struct gw_sqs_tag *tags;
    size_t tag_count;
};

struct gw_sqs_get_queue_url_req {
    struct sl_slice queue_name;
    bool has_owner;
    struct sl_slice owner; /* QueueOwnerAWSAccountId: a tenant name */
};

struct gw_sqs_list_queues_req {
    bool has_prefix;
    struct sl_slice prefix;
    bool has_next_token;
    struct sl_slice next_token;
    bool has_max_results;
    int32_t max_results; /* 1..1000 */
};

struct gw_sqs_queue_only_req { /* DeleteQueue, PurgeQueue, ListQueueTags */
    struct gw_sqs_queue_ref queue;
};

struct gw_sqs_get_queue_attributes_req {
    struct gw_sqs_queue_ref queue;
    uint32_t wanted; /* bit (1u << enum gw_sqs_qattr); "All" sets every bit */
    /* SluiceFilteredMessages / ...NotVisible with their filter (docs/api.md,
     * "Filtered receives"); never part of "All" */
    bool want_filtered_ready;
    bool want_filtered_inflight;
    struct gw_sqs_filter filter;
};

struct gw_sqs_set_queue_attributes_req {
    struct gw_sqs_queue_ref queue;
    struct gw_sqs_qattrs attributes;
};

struct gw_sqs_send_message_req {
    struct gw_sqs_queue_ref queue;
    struct gw_sqs_send_entry msg;
};

struct gw_sqs_send_message_batch_req {
    struct gw_sqs_queue_ref queue;
    struct gw_sqs_send_entry *entries;
    size_t entry_count;
    size_t total_size; /* sum of the entries' sizes */
};

struct gw_sqs_receive_message_req {
    struct gw_sqs_queue_ref queue;
    int32_t max_number_of_messages; /* 1..10, default 1 */
    bool has_visibility_timeout;
    int32_t visibility_timeout;
    bool has_wait_time_seconds;
    int32_t wait_time_seconds;
    uint32_t system_attributes; /* bit (1u << enum gw_sqs_sysattr); union of the two lists */
    struct sl_slice *attribute_filters; /* MessageAttributeNames */
    size_t attribute_filter_count;
    bool has_receive_request_attempt_id;
    struct sl_slice receive_request_attempt_id;
    struct gw_sqs_filter filter; /* its sluice.Filter.* entries */
};

struct gw_sqs_delete_message_req {
    struct gw_sqs_queue_ref queue;
    struct sl_slice receipt_handle;
};

struct gw_sqs_receipt_batch_req { /* DeleteMessageBatch, ChangeMessageVisibilityBatch */
    struct gw_sqs_queue_ref queue;
    struct gw_sqs_receipt_entry *entries;
    size_t entry_count;
};

struct gw_sqs_change_message_visibility_req {
    struct gw_sqs_queue_ref queue;
    struct sl_slice receipt_handle;
    int32_t visibility_timeout;
};

struct gw_sqs_list_dead_letter_source_queues_req {
    struct gw_sqs_queue_ref queue;
    bool has_next_token;
    struct sl_slice next_token;
    bool has_max_results;
    int32_t max_results;
};

struct gw_sqs_start_message_move_task_req {
    struct sl_slice source_arn;
    bool has_destination_arn;
    struct sl_slice destination_arn;
    bool has_max_per_second;
    int32_t max_per_second; /* 1..500 */
};

struct gw_sqs_list_message_move_tasks_req {
    struct sl_slice source_arn;
    int32_t max_results; /* 1..10, default 1 */
};

struct gw_sqs_cancel_message_move_task_req {
    struct sl_slice task_handle;
};

struct gw_sqs_tag_queue_req {
    struct gw_sqs_queue_ref queue;
    struct gw_sqs_tag *tags;
    size_t tag_count;
};

struct gw_sqs_untag_queue_req {
    struct gw_sqs_queue_ref queue;
    struct sl_slice *keys;
    size_t key_count;
};

struct gw_sqs_permission_req { /* AddPermission, RemovePermission */
    struct gw_sqs_queue_ref queue;
    struct sl_slice label;
};

struct gw_sqs_block;

struct gw_sqs_request {
    enum gw_sqs_action action;
    union {
        struct gw_sqs_create_queue_req create_queue;
        struct gw_sqs_get_queue_url_req get_queue_url;
        struct gw_sqs_list_queues_req list_queues;
        struct gw_sqs_queue_only_req delete_queue;
        struct gw_sqs_get_queue_attributes_req get_queue_attributes;
        struct gw_sqs_set_queue_attributes_req set_queue_attributes;
        struct gw_sqs_queue_only_req purge_queue;
        struct gw_sqs_send_message_req send_message;
        struct gw_sqs_send_message_batch_req send_message_batch;
        struct gw_sqs_receive_message_req receive_message;
        struct gw_sqs_delete_message_req delete_message;
        struct gw_sqs_receipt_batch_req delete_message_batch;
        struct gw_sqs_change_message_visibility_req change_message_visibility;
        struct gw_sqs_receipt_batch_req change_message_visibility_batch;
        struct gw_sqs_list_dead_letter_source_queues_req list_dead_letter_source_queues;
        struct gw_sqs_start_message_move_task_req start_message_move_task;
        struct gw_sqs_list_message_move_tasks_req list_message_move_tasks;
        struct gw_sqs_cancel_message_move_task_req cancel_message_move_task;
        struct gw_sqs_tag_queue_req tag_queue;
        struct gw_sqs_untag_queue_req untag_queue;
        struct gw_sqs_queue_only_req list_queue_tags;
        struct gw_sqs_permission_req add_permission;
        struct gw_sqs_permission_req remove_permission;
    } u;
    /* private: what the slices borrow from */
    struct json_t *doc_;
    struct gw_sqs_block *blocks_;
    /* private: the first escaped lone surrogate of a JSON body, which the
     * document holds as U+FFFF (gw_sqs_decode), for the error; 0 if none */
    uint32_t surrogate_;
};

/* The queue a request names, or NULL for actions without a QueueUrl. */
const struct gw_sqs_queue_ref *gw_sqs_request_queue(const struct gw_sqs_request *r);

/* Decodes and validates the JSON body of an action into *out. An empty
 * body counts as "{}". Returns SL_OK, or SL_EINVAL with *err set to the
 * error SQS would send (SerializationException for malformed JSON or a
 * wrong member type, MissingParameter, InvalidParameterValue, ...), or
 * SL_ENOMEM with *err = InternalError. In every case call
 * gw_sqs_request_fini(out) afterwards. */
int gw_sqs_decode(enum gw_sqs_action action, struct sl_slice body, struct gw_sqs_request *out,
                  struct gw_sqs_err *err);

/* The same for a parsed JSON document (the JSON protocol's, or the one the
 * query protocol's form was translated into, gw_sqs_query_decode). Always
 * takes ownership of doc (one reference); a doc that is not an object is
 * SerializationException. Returns as gw_sqs_decode. */
int gw_sqs_decode_doc(enum gw_sqs_action action, struct json_t *doc, struct gw_sqs_request *out,
                      struct gw_sqs_err *err);

void gw_sqs_request_fini(struct gw_sqs_request *r);

/* ---- the query protocol (gw_sqs_query.c) ---------------------------------- */

/* The API version the query protocol's Version parameter must name. */
#define GW_SQS_QUERY_VERSION "2012-11-05"
/* The most parameters a form may have: a full SendMessageBatch (10
 * entries, each with 10 message attributes of 4 parameters and every
 * other member) has about 500, so this is generous, and it bounds the
 * decoder's memory to a small multiple of the body. */
#define GW_SQS_QUERY_MAX_PARAMS 4096u

/* Finds the Action of a form (application/x-www-form-urlencoded body or
 * query string) without decoding the rest, so that the per-action body
 * cap applies before the form is decoded. Returns SL_OK and sets *out, or
 * SL_EINVAL with *err: MissingAction (no Action), InvalidAction (not one
 * of gw_actions.def), MalformedQueryString (bad percent-encoding). */
int gw_sqs_query_action(struct sl_slice form, enum gw_sqs_action *out, struct gw_sqs_err *err);

/* Percent-decodes in into out (at least in.n bytes; '+' is a space, as in
 * every form). Returns the decoded length, or -1 for a '%' without two hex
 * digits. Also the admin API's path and query decoder. */
long gw_sqs_url_decode(struct sl_slice in, char *out);

/* Decodes a whole query-protocol form into *out with the JSON protocol's
 * validation: the form's parameters are translated into the JSON
 * protocol's document (the flattened lists "X.N", maps "X.N.Name/Value",
 * entry lists "XRequestEntry.N.*" of the SQS query API) and decoded by
 * gw_sqs_decode_doc. queue_url, when not empty, is the QueueUrl of a form
 * that names none (a request posted to the queue's URL). Returns SL_OK, or
 * SL_EINVAL with *err (everything gw_sqs_decode answers, and
 * MissingParameter for a missing Version, InvalidParameterValue for
 * another Version or a number that is not one, InvalidQueryParameter for
 * a bad list index, a repeated parameter or more than
 * GW_SQS_QUERY_MAX_PARAMS parameters, MalformedQueryString), or
 * SL_ENOMEM. In every case call gw_sqs_request_fini(out) afterwards. */
int gw_sqs_query_decode(struct sl_slice form, struct sl_slice queue_url, struct gw_sqs_request *out,
                        struct gw_sqs_err *err);

/* ---- replies ------------------------------------------------------------ */

/* The wire protocol of a request, which its reply speaks too. */
enum gw_sqs_protocol {
    GW_SQS_PROTO_JSON,  /* AWS JSON 1.0 (X-Amz-Target) */
    GW_SQS_PROTO_QUERY, /* the SQS query API: a form in, XML out */
};

/* A whole answer: status, the SQS headers and the body. */
struct gw_sqs_reply {
    int status;
    enum gw_sqs_error error; /* GW_SQS_OK on success */
    struct sl_buf body;      /* empty for JSON actions without output */
    char query_error[96];    /* "<code>;Sender" when error != GW_SQS_OK */
    char retry_after[12];    /* Retry-After seconds of a throttled answer; "" = none */
    /* What the body is written in and for (gw_sqs_reply_init_for): XML
     * names the action ("<ActionResponse>") and carries the request id. */
    enum gw_sqs_protocol protocol;
    enum gw_sqs_action action;
    const char *request_id; /* borrowed; may be NULL */
};

/* A JSON reply. */
void gw_sqs_reply_init(struct gw_sqs_reply *r);
/* A reply in protocol to action (GW_SQS_ACT__COUNT before the action is
 * known), whose XML carries request_id (borrowed, must outlive r). */
void gw_sqs_reply_init_for(struct gw_sqs_reply *r, enum gw_sqs_protocol protocol,
                           enum gw_sqs_action action, const char *request_id);
void gw_sqs_reply_fini(struct gw_sqs_reply *r);

/* An error reply, status from the table: {"__type": ..., "message": ...}
 * in JSON, <ErrorResponse><Error><Type/><Code/><Message/>... in XML. */
void gw_sqs_reply_error(struct gw_sqs_reply *r, const struct gw_sqs_err *err);

/* A 200 reply for an action without output (Unit in the SQS Smithy
 * model): an empty body in JSON, <ActionResponse> with only its
 * ResponseMetadata in XML. */
void gw_sqs_reply_empty(struct gw_sqs_reply *r);

/* A throttled reply's wait hint: Retry-After in whole seconds, rounded
 * up (at least 1), when retry_after_ns is the wait until the request
 * would pass. 0 (no hint) and UINT64_MAX (it never can) add none. SQS
 * sends no Retry-After and the AWS SDKs back off without it; clients that
 * read it (sluicectl) wait exactly as long as the bucket needs. */
void gw_sqs_reply_retry_after(struct gw_sqs_reply *r, uint64_t retry_after_ns);

#define GW_SQS_REPLY_MAX_HEADERS 3

/* The headers of a reply (content-type, x-amzn-query-error for JSON
 * errors, Retry-After when set), borrowing from r. Returns how many were
 * written to out. */
size_t gw_sqs_reply_headers(const struct gw_sqs_reply *r,
                            struct gw_header out[GW_SQS_REPLY_MAX_HEADERS]);

/* ---- success replies of the queue actions -------------------------------- */

/* CreateQueue, GetQueueUrl: QueueUrl. */
void gw_sqs_reply_queue_url(struct gw_sqs_reply *r, struct sl_slice queue_url);
/* ListQueues (QueueUrls, left out when empty) and ListDeadLetterSourceQueues
 * (queueUrls, always there), by r->action; NextToken when not empty. */
void gw_sqs_reply_queue_urls(struct gw_sqs_reply *r, const struct sl_slice *urls, size_t n,
                             struct sl_slice next_token);
/* GetQueueAttributes (Attributes) and ListQueueTags (Tags), by r->action;
 * the member is left out when n is 0. */
void gw_sqs_reply_string_map(struct gw_sqs_reply *r, const struct gw_sqs_tag *kv, size_t n);

/* What a send did with one message. */
struct gw_sqs_send_result {
    struct sl_slice id; /* batch entry Id */
    char message_id[37];
    char md5_of_body[33];
    char md5_of_attrs[33];           /* "" when the message has no attributes */
    char md5_of_sys_attrs[33];       /* "" when it has no system attributes */
    struct sl_slice sequence_number; /* FIFO; empty otherwise */
};

/* The MD5s a message is stored with (part_send_entry.digests), computed
 * once at send, so that a receive does not hash the message again. The
 * stored form is bytes[0..n): the MD5 of the body, then, when the message
 * has attributes, MD5OfMessageAttributes over all of them (raw). */
struct gw_sqs_digests {
    uint8_t bytes[2 * GW_SQS_MD5_LEN];
    size_t n; /* GW_SQS_MD5_LEN, or twice that with attributes */
};
void gw_sqs_digests_of(const struct gw_sqs_send_entry *msg, struct gw_sqs_digests *out);
/* Reads a stored form back; false if stored is not one (a message stored
 * before digests were kept has none): then hash the message. */
bool gw_sqs_digests_read(struct sl_slice stored, struct gw_sqs_digests *out);
/* The attribute digest of d, or NULL when the message had no attributes. */
const uint8_t *gw_sqs_digests_attrs(const struct gw_sqs_digests *d);

/* Fills the MD5s of a result from the message sent and its digests. */
void gw_sqs_send_result_fill(const struct gw_sqs_send_entry *msg, const struct gw_sqs_digests *d,
                             struct gw_sqs_send_result *res);
/* The same, hashing the message here. */
void gw_sqs_send_result_digest(const struct gw_sqs_send_entry *msg, struct gw_sqs_send_result *res);

/* A failed batch entry. */
struct gw_sqs_batch_failure {
    struct sl_slice id;
    const struct gw_sqs_err *err; /* Code is the error's query code */
};

/* One received message as ReceiveMessage returns it. attrs are the
 * message's attributes after the request's filter, sorted by name. */
struct gw_sqs_received {
    struct sl_slice message_id;
    struct sl_slice receipt_handle;
    struct sl_slice body;
    const struct gw_sqs_tag *system_attributes; /* name -> string value */
    size_t system_attribute_count;
    const struct gw_sqs_msg_attr *attrs;
    size_t attr_count;
    /* The message's digests as stored (gw_sqs_digests), or NULL to hash
     * here: md5_of_attrs may be given only when attrs are all of the
     * message's attributes (the digest covers what is returned). */
    const uint8_t *md5_of_body;
    const uint8_t *md5_of_attrs;
};

/* One message move task as ListMessageMoveTasks shows it. NULL strings
 * and zero numbers marked "absent" are left out of the reply. */
struct gw_sqs_move_task {
    const char *task_handle; /* only while RUNNING; NULL otherwise */
    const char *status;      /* RUNNING, COMPLETED, CANCELLING, CANCELLED, FAILED */
    const char *source_arn;
    const char *destination_arn; /* NULL: each message back to its source */
    int32_t max_per_second;      /* 0: absent */
    int64_t moved;
    int64_t to_move;
    const char *failure_reason; /* FAILED only */
    uint64_t started_ms;        /* epoch ms, a number (the SQS Smithy model) */
};

/* StartMessageMoveTask: TaskHandle. */
void gw_sqs_reply_task_handle(struct gw_sqs_reply *r, const char *handle);
/* ListMessageMoveTasks: Results, in the order given (newest first). */
void gw_sqs_reply_move_tasks(struct gw_sqs_reply *r, const struct gw_sqs_move_task *tasks,
                             size_t n);
/* CancelMessageMoveTask: ApproximateNumberOfMessagesMoved. */
void gw_sqs_reply_moved(struct gw_sqs_reply *r, int64_t moved);

/* ---- success replies written directly (the hot message actions) ---------- */

/* Each makes r a 200 reply whose body is written straight into r->body
 * (gw_text.h: JSON, or XML for the query protocol), with no tree in
 * between. Members are in SQS's order and optional ones are left out when
 * empty. (A string that is not valid UTF-8, which nothing decoded can
 * hold, is written with U+FFFD per bad byte.) */

/* SendMessage: {MessageId, MD5OfMessageBody, MD5OfMessageAttributes?,
 * MD5OfMessageSystemAttributes?, SequenceNumber?}. */
void gw_sqs_reply_send_result(struct gw_sqs_reply *r, const struct gw_sqs_send_result *res);
/* SendMessageBatch: {"Successful": [send results, each with its Id first],
 * "Failed": [{Id, SenderFault, Code, Message}]}; both always present. */
void gw_sqs_reply_send_batch(struct gw_sqs_reply *r, const struct gw_sqs_send_result *ok,
                             size_t n_ok, const struct gw_sqs_batch_failure *failed,
                             size_t n_failed);
/* DeleteMessageBatch / ChangeMessageVisibilityBatch: Successful is [{Id}]. */
void gw_sqs_reply_id_batch(struct gw_sqs_reply *r, const struct sl_slice *ok_ids, size_t n_ok,
                           const struct gw_sqs_batch_failure *failed, size_t n_failed);
/* ReceiveMessage: {"Messages": [...]}, or {} when n is 0 (SQS omits the
 * member). */
void gw_sqs_reply_messages(struct gw_sqs_reply *r, const struct gw_sqs_received *msgs, size_t n);

/* ---- message move tasks' TaskHandle (gw_sqs_move.c) -------------------- */

/*
 * TaskHandle: standard base64 of {"taskId":"<uuid>","sourceArn":"<arn>"},
 * the shape SQS uses (LocalStack and moto decode it the same way), so a
 * handle names its source queue and Cancel can answer "no such source"
 * apart from "no such task".
 */
#define GW_SQS_TASK_ID_LEN 36

/* Appends the handle of (task_id, source_arn) to out. */
void gw_sqs_move_handle_encode(const char *task_id, const char *source_arn, struct sl_buf *out);
/* Splits a handle. False for anything that is not base64 of a JSON object
 * with a UUID-length taskId and a non-empty sourceArn (SQS then answers
 * InvalidParameterValue). On success task_id holds the id and source_arn
 * (reset first) the ARN. */
bool gw_sqs_move_handle_decode(struct sl_slice handle, char task_id[GW_SQS_TASK_ID_LEN + 1],
                               struct sl_buf *source_arn);

#endif
