/*
 * gw_sqs_member.h -- (gateway-internal) what the request decoders share
 * (gw_sqs_member.c): memory owned by the request being decoded, and
 * typed JSON members read with SQS's errors.
 *
 * Each member reader treats an absent member and JSON null alike, and
 * returns SL_OK, SL_EINVAL with err set to the error SQS sends, or
 * SL_ENOMEM with err set to InternalError.
 */
#ifndef SLUICE_GW_SQS_MEMBER_H
#define SLUICE_GW_SQS_MEMBER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gw_sqs.h"

/* The decoding state shared by the decoder files. */
struct gw_sqs_dec {
    struct gw_sqs_request *r;
    struct gw_sqs_err *err; /* the request's error */
};

/* Allocates count * size zeroed bytes owned by r (freed by
 * gw_sqs_request_fini). Returns NULL on overflow or exhaustion. */
void *gw__sqs_alloc(struct gw_sqs_request *r, size_t count, size_t size);

/* gw__sqs_alloc that sets InternalError on failure (count 0 allocates
 * one element). Returns NULL then. */
void *gw__sqs_dec_alloc(struct gw_sqs_dec *d, size_t count, size_t size);

/* A JSON value's type; ABSENT for a member that is not there. */
enum gw_sqs_jtype {
    GW_SQS_J_ABSENT,
    GW_SQS_J_NULL,
    GW_SQS_J_STRING,
    GW_SQS_J_INTEGER,
    GW_SQS_J_REAL,
    GW_SQS_J_TRUE,
    GW_SQS_J_FALSE,
    GW_SQS_J_OBJECT,
    GW_SQS_J_ARRAY,
};

/* One JSON value as the member readers see it, whichever parser read it:
 * the hot path's events (gw_sqs_in.h) or a jansson document. */
struct gw_sqs_val {
    enum gw_sqs_jtype type;
    bool has_bad;      /* a string holding a character outside SQS's set */
    uint32_t bad;      /* the first such character (gw__sqs_text_scan) */
    struct sl_slice s; /* a string's UTF-8 */
    int64_t i;         /* an integer */
    size_t n;          /* an array's elements (gathered values only) */
};

/* The value v (NULL: absent) as a gw_sqs_val, without n or has_bad. */
void gw__sqs_val_of(const struct json_t *v, struct gw_sqs_val *out);

/* The message of SerializationException for a JSON value of the wrong
 * type, as AWS's Java deserializer words it. Returns SL_EINVAL. */
int gw__sqs_type_error(const struct json_t *value, const char *expected, struct gw_sqs_err *err);
int gw__sqs_jtype_error(enum gw_sqs_jtype type, const char *expected, struct gw_sqs_err *err);

/* The member readers below, on a value already found: v is the member
 * name's value (ABSENT if none). Return as those do. */
int gw__sqs_val_string(const struct gw_sqs_val *v, const char *name, bool required,
                       struct sl_slice *out, bool *has, struct gw_sqs_err *err);
int gw__sqs_val_int(const struct gw_sqs_val *v, const char *name, bool required, int64_t min,
                    int64_t max, const char *reason, int32_t *out, bool *has,
                    struct gw_sqs_err *err);
/* A QueueUrl member, split (gw_sqs_parse_queue_url). */
int gw__sqs_val_queue(struct gw_sqs_dec *d, const struct gw_sqs_val *v,
                      struct gw_sqs_queue_ref *out);
/* An OBJECT ("a Map") or ARRAY ("a List") member; *has tells whether it
 * is there. */
int gw__sqs_val_container(const struct gw_sqs_val *v, enum gw_sqs_jtype want, const char *name,
                          bool required, bool *has, struct gw_sqs_err *err);

/* "The request must contain the parameter <name>." Returns SL_EINVAL. */
int gw__sqs_missing(struct gw_sqs_err *err, const char *name);

/* A String member; required also refuses "". *has (may be NULL) tells
 * whether it was there. */
int gw__sqs_member_string(const struct json_t *obj, const char *name, bool required,
                          struct sl_slice *out, bool *has, struct gw_sqs_err *err);

/* An Integer member in [min, max]; reason completes SQS's sentence
 * "Value V for parameter N is invalid. Reason: ...". */
int gw__sqs_member_int(const struct json_t *obj, const char *name, bool required, int64_t min,
                       int64_t max, const char *reason, int32_t *out, bool *has,
                       struct gw_sqs_err *err);

/* A Map (JSON object) member; *out is NULL when absent. */
int gw__sqs_member_object(const struct json_t *obj, const char *name, bool required,
                          const struct json_t **out, struct gw_sqs_err *err);

/* A List (JSON array) member; *out is NULL when absent. */
int gw__sqs_member_array(const struct json_t *obj, const char *name, bool required,
                         const struct json_t **out, struct gw_sqs_err *err);

/* A list of strings into slices owned by the request; required also
 * refuses an empty list. */
int gw__sqs_member_string_list(struct gw_sqs_dec *d, const struct json_t *obj, const char *name,
                               bool required, struct sl_slice **out, size_t *n);

/* A map of strings (tags) into key/value slices owned by the request;
 * required also refuses an empty map. */
int gw__sqs_member_string_map(struct gw_sqs_dec *d, const struct json_t *obj, const char *name,
                              bool required, struct gw_sqs_tag **out, size_t *n);

/* A JSON body jansson refused (why: its error text) for an escaped lone
 * UTF-16 surrogate ("\uD800"), parsed again with each such escape read as
 * U+FFFF, a character outside SQS's allowed set: a message body holding
 * one then answers InvalidMessageContents as SQS does, not
 * SerializationException. *first gets the first surrogate replaced.
 * Returns the document, or NULL when the body fails for another reason. */
struct json_t *gw__sqs_load_surrogates(struct sl_slice body, const char *why, uint32_t *first);

/* Writes "FFFF" into dst (a copy of body, or NULL to only look) over the
 * hex digits of each escaped lone surrogate of body. Returns the first
 * such surrogate, 0 if none. */
uint32_t gw__sqs_unpair_surrogates(struct sl_slice body, char *dst);

/* The character to name in an InvalidMessageContents message for the
 * invalid character bad of r: a lone surrogate the body escaped rather
 * than the U+FFFF it was read as. */
uint32_t gw__sqs_reported_char(const struct gw_sqs_request *r, uint32_t bad);

#endif
