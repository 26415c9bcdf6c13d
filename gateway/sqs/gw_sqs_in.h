/*
 * gw_sqs_in.h -- (gateway-internal) the hot message actions' requests as
 * their JSON says them, before SQS's rules (gw_sqs_hot.c): what each
 * member of SendMessage(Batch), ReceiveMessage, DeleteMessage(Batch) and
 * ChangeMessageVisibility(Batch) holds, gathered from a stream of parse
 * events, then validated into the typed request.
 *
 * Why events: the hot bodies are parsed by yajl's event API
 * (gw_sqs_yajl.c), with no tree, and the strict path (a jansson document,
 * also the query protocol's) is walked into the same events. Both then
 * meet one gatherer and one validator, so the two paths can differ only
 * in what the parsers accept and read, which
 * tests/fuzz/fuzz_gw_sqs_hot.c compares on arbitrary input.
 *
 * Only what the validator reads is kept: the members of these actions,
 * the first GW_SQS_MAX_BATCH_ENTRIES entries of a batch and the first
 * GW_SQS_MAX_MESSAGE_ATTRIBUTES attributes of a map (later ones are only
 * counted). A key given twice keeps its first place and its last value,
 * as in jansson's objects. Memory comes from the request's blocks.
 */
#ifndef SLUICE_GW_SQS_IN_H
#define SLUICE_GW_SQS_IN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gw_sqs.h"
#include "gw_sqs_member.h"

/* The most containers a value may sit in, plus one: jansson's
 * JSON_PARSER_MAX_DEPTH, past which it refuses a document. */
#define GW__SQS_MAX_DEPTH 2048

/* The JSON members the hot actions read, request and entry alike. */
#define GW__SQS_IN_MEMBERS(X)                                                                      \
    X(QUEUE_URL, "QueueUrl")                                                                       \
    X(MAX_NUMBER, "MaxNumberOfMessages")                                                           \
    X(VISIBILITY, "VisibilityTimeout")                                                             \
    X(WAIT, "WaitTimeSeconds")                                                                     \
    X(ATTR_NAMES, "AttributeNames")                                                                \
    X(SYS_NAMES, "MessageSystemAttributeNames")                                                    \
    X(FILTERS, "MessageAttributeNames")                                                            \
    X(ATTEMPT_ID, "ReceiveRequestAttemptId")                                                       \
    X(RECEIPT, "ReceiptHandle")                                                                    \
    X(ENTRIES, "Entries")                                                                          \
    X(ID, "Id")                                                                                    \
    X(BODY, "MessageBody")                                                                         \
    X(DELAY, "DelaySeconds")                                                                       \
    X(ATTRS, "MessageAttributes")                                                                  \
    X(SYS_ATTRS, "MessageSystemAttributes")                                                        \
    X(GROUP, "MessageGroupId")                                                                     \
    X(DEDUP, "MessageDeduplicationId")

enum gw__sqs_in_member {
#define GW__SQS_IN_ENUM(e, n) GW__SQS_IN_##e,
    GW__SQS_IN_MEMBERS(GW__SQS_IN_ENUM)
#undef GW__SQS_IN_ENUM
        GW__SQS_IN__COUNT
};

/* The members of a MessageAttributeValue. */
enum gw__sqs_in_attr_member {
    GW__SQS_IN_DATA_TYPE,
    GW__SQS_IN_STRING_VALUE,
    GW__SQS_IN_BINARY_VALUE,
    GW__SQS_IN_STRING_LIST,
    GW__SQS_IN_BINARY_LIST,
    GW__SQS_IN_ATTR__COUNT
};

/* A list of strings (AttributeNames, ...): the strings in order, and the
 * JSON type of the first element that is not one (ABSENT if none). */
struct gw__sqs_names_in {
    struct sl_slice *items;
    size_t n, cap;
    enum gw_sqs_jtype first_other;
};

/* One attribute of a map: its name, its value's type, and the members of
 * the value when that is an object. */
struct gw__sqs_attr_in {
    struct sl_slice name;
    struct gw_sqs_val self;
    struct gw_sqs_val m[GW__SQS_IN_ATTR__COUNT];
};

/* MessageAttributes or MessageSystemAttributes: the first distinct keys
 * with their values, in first-seen order; further keys only for the
 * count (extra may repeat a key; size counts distinct ones, set when
 * the map ends). */
struct gw__sqs_map_in {
    struct gw__sqs_attr_in kept[GW_SQS_MAX_MESSAGE_ATTRIBUTES];
    size_t n_kept;
    struct sl_slice *extra;
    size_t n_extra, cap_extra;
    size_t size;
};

/* A request object or one batch entry. */
struct gw__sqs_obj_in {
    enum gw_sqs_jtype self; /* a batch entry's own type */
    struct gw_sqs_val m[GW__SQS_IN__COUNT];
    struct gw__sqs_names_in *names[3]; /* ATTR_NAMES, SYS_NAMES, FILTERS */
    struct gw__sqs_map_in *maps[2];    /* ATTRS, SYS_ATTRS */
    struct gw__sqs_obj_in *entries;    /* the first GW_SQS_MAX_BATCH_ENTRIES */
    /* MessageBody's MD5, computed while its bytes were in cache from the
     * decode, when it is a string of SQS's characters */
    bool has_body_md5;
    uint8_t body_md5[GW_SQS_MD5_LEN];
};

/* What a member's value is read as. */
enum gw__sqs_in_kind {
    GW__SQS_K_SCALAR,  /* a string or number: a container there is only a type */
    GW__SQS_K_OBJ,     /* the request, or a batch entry */
    GW__SQS_K_ENTRIES, /* Entries */
    GW__SQS_K_MAP,     /* MessageAttributes, MessageSystemAttributes */
    GW__SQS_K_ATTR,    /* one MessageAttributeValue */
    GW__SQS_K_NAMES,   /* a list of strings */
    GW__SQS_K_LIST,    /* a list only counted (StringListValues, BinaryListValues) */
};

#define GW__SQS_MAX_FRAMES 8 /* request, entries, entry, map, attribute, list */

struct gw__sqs_frame {
    enum gw__sqs_in_kind kind;
    uint32_t members;        /* an object's members that are kept (bits) */
    void *rec;               /* the record the container's members go to */
    struct gw_sqs_val *self; /* the container's own value (arrays count into n) */
};

/* The gatherer: fed by gw__sqs_gather_* in document order. */
struct gw__sqs_gather {
    struct gw_sqs_dec *d;
    struct gw_sqs_val root;
    struct gw__sqs_obj_in *req; /* the request object's record */
    struct gw__sqs_frame frames[GW__SQS_MAX_FRAMES];
    size_t n_frames;
    size_t skip; /* > 0: inside a value nobody reads, this deep */
    /* set by a key: where its value goes (NULL: nowhere) */
    struct gw_sqs_val *pending;
    enum gw__sqs_in_kind pending_kind;
    void *pending_rec;
    int pending_member;
};

/* Starts gathering the request of d->r->action into req (zeroed here). */
void gw__sqs_gather_init(struct gw__sqs_gather *g, struct gw_sqs_dec *d,
                         struct gw__sqs_obj_in *req);

/* The events. Each returns SL_OK, or SL_ENOMEM with d->err set. A string's
 * bytes (v->s, a key) must live as long as the request. */
int gw__sqs_gather_value(struct gw__sqs_gather *g, const struct gw_sqs_val *v);
int gw__sqs_gather_begin(struct gw__sqs_gather *g, bool array);
int gw__sqs_gather_key(struct gw__sqs_gather *g, struct sl_slice key);
void gw__sqs_gather_end(struct gw__sqs_gather *g);

/* True for the actions decoded through the gatherer. */
bool gw__sqs_hot_action(enum gw_sqs_action a);

/* Applies SQS's rules to what g gathered, filling d->r. Returns SL_OK,
 * SL_EINVAL with d->err set, or SL_ENOMEM. */
int gw__sqs_hot_validate(struct gw__sqs_gather *g);

/* The decoder of a hot action's jansson document (the strict path and
 * the query protocol): its values walked into a gatherer, then validated.
 * Returns as gw__sqs_hot_validate. */
int gw__sqs_hot_decode_doc(struct gw_sqs_dec *d, const struct json_t *doc);

/* The JSON 1.0 body of a hot action through yajl (gw_sqs_yajl.c), n > 0.
 * Returns as gw__sqs_hot_validate; a body jansson would refuse is
 * SerializationException. */
int gw__sqs_hot_decode_body(struct gw_sqs_dec *d, struct sl_slice body);

/* The strict path of gw_sqs_decode: jansson's document (with escaped lone
 * surrogates read as U+FFFF), decoded by gw_sqs_decode_doc. For the
 * differential fuzzer; returns as gw_sqs_decode. */
int gw__sqs_decode_strict(enum gw_sqs_action action, struct sl_slice body,
                          struct gw_sqs_request *out, struct gw_sqs_err *err);

#endif
