/*
 * gw_sqs_tables.c -- the error and action tables (gw_errors.def,
 * gw_actions.def) as arrays, and their lookups.
 *
 * Threading: read-only data; any thread.
 */
#include <stdio.h>
#include <string.h>

#include "gw_sqs.h"

static const struct gw_sqs_error_info error_table[GW_SQS_E__COUNT] = {
    [GW_SQS_OK] = {"", "", 200, true, ""},
#define SENDER true
#define RECEIVER false
#define GW_SQS_ERROR(name, type, query, status, fault, message)                                    \
    [GW_SQS_E_##name] = {type, query, status, fault, message},
#include "gw_errors.def"
#undef GW_SQS_ERROR
#undef SENDER
#undef RECEIVER
};

static const char *const action_names[GW_SQS_ACT__COUNT] = {
#define GW_SQS_ACTION(name, camel, snake, handler) [GW_SQS_ACT_##name] = #camel,
#include "gw_actions.def"
#undef GW_SQS_ACTION
};

#define TARGET_PREFIX "AmazonSQS."

const struct gw_sqs_error_info *gw_sqs_error_info(enum gw_sqs_error e)
{
    SL_ASSERT((unsigned)e < GW_SQS_E__COUNT);
    return &error_table[e];
}

int gw_sqs_err_set(struct gw_sqs_err *err, enum gw_sqs_error code, const char *fmt, ...)
{
    SL_ASSERT(code > GW_SQS_OK && code < GW_SQS_E__COUNT);
    err->code = code;
    if (fmt == NULL) {
        snprintf(err->message, sizeof(err->message), "%s", error_table[code].message);
    } else {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->message, sizeof(err->message), fmt, ap);
        va_end(ap);
    }
    return SL_EINVAL;
}

const char *gw_sqs_action_name(enum gw_sqs_action a)
{
    SL_ASSERT((unsigned)a < GW_SQS_ACT__COUNT);
    return action_names[a];
}

size_t gw_sqs_action_max_body(enum gw_sqs_action a)
{
    switch (a) {
    case GW_SQS_ACT_SEND_MESSAGE:
    case GW_SQS_ACT_SEND_MESSAGE_BATCH:
        return SIZE_MAX;
    case GW_SQS_ACT_CREATE_QUEUE:
    case GW_SQS_ACT_SET_QUEUE_ATTRIBUTES:
    case GW_SQS_ACT_TAG_QUEUE:
        return GW_SQS_MAX_CONFIG_BODY;
    case GW_SQS_ACT_DELETE_MESSAGE_BATCH:
    case GW_SQS_ACT_CHANGE_MESSAGE_VISIBILITY_BATCH:
        return GW_SQS_MAX_HANDLES_BODY;
    default:
        return GW_SQS_MAX_SMALL_BODY;
    }
}

bool gw_sqs_action_from_target(struct sl_slice target, enum gw_sqs_action *out)
{
    size_t plen = sizeof(TARGET_PREFIX) - 1;
    if (target.n <= plen || memcmp(target.p, TARGET_PREFIX, plen) != 0) {
        return false;
    }
    return gw_sqs_action_from_name((struct sl_slice){target.p + plen, target.n - plen}, out);
}

bool gw_sqs_action_from_name(struct sl_slice name, enum gw_sqs_action *out)
{
    for (size_t i = 0; i < GW_SQS_ACT__COUNT; i++) {
        if (sl_slice_eq_cstr(name, action_names[i])) {
            *out = (enum gw_sqs_action)i;
            return true;
        }
    }
    return false;
}
