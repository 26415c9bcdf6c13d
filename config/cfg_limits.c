/*
 * cfg_limits.c -- the per-queue and per-action parts of struct cfg_limits:
 * the names of the action keys, which SQS action each key limits, the
 * lookup of a queue's limit, and comparing two sets of limits; and the
 * byte order and name characters that this lookup and the snapshot's
 * indexes share. It sits below cfg_snapshot.c (which frees limits with
 * cfg__limits_fini) and calls nothing of it, so the module stays a
 * one-way stack.
 *
 * Which actions have a key is a fact about admission: they are the
 * actions the gateway passes through policy (sends, receives, the receipt
 * actions and the message-move tasks). Queue management (CreateQueue,
 * GetQueueAttributes, ...) is not counted, so a limit on it would do
 * nothing, and validation refuses it.
 *
 * Threading: pure; any thread. Ownership: nothing allocated.
 */
#include "cfg_int.h"

#include "sl.h"

#include <stdlib.h>
#include <string.h>

static const char *const action_key_names[CFG_ACTION_KEY_COUNT] = {
    [CFG_ACTION_SEND_MESSAGE] = "SendMessage",
    [CFG_ACTION_RECEIVE_MESSAGE] = "ReceiveMessage",
    [CFG_ACTION_DELETE_MESSAGE] = "DeleteMessage",
    [CFG_ACTION_CHANGE_MESSAGE_VISIBILITY] = "ChangeMessageVisibility",
    [CFG_ACTION_START_MESSAGE_MOVE_TASK] = "StartMessageMoveTask",
    [CFG_ACTION_LIST_MESSAGE_MOVE_TASKS] = "ListMessageMoveTasks",
    [CFG_ACTION_CANCEL_MESSAGE_MOVE_TASK] = "CancelMessageMoveTask",
};

const char *cfg_action_key_name(enum cfg_action_key k)
{
    return (unsigned)k < CFG_ACTION_KEY_COUNT ? action_key_names[k] : NULL;
}

static bool bytes_are(const char *p, size_t len, const char *word)
{
    return strlen(word) == len && memcmp(p, word, len) == 0;
}

bool cfg_action_key_of(const char *name, size_t len, enum cfg_action_key *out)
{
    static const char batch[] = "Batch";
    size_t blen = sizeof(batch) - 1;
    /* A batch action shares its single form's key: strip "Batch" once. */
    bool is_batch = len > blen && memcmp(name + len - blen, batch, blen) == 0;
    size_t base = is_batch ? len - blen : len;
    for (int k = 0; k < CFG_ACTION_KEY_COUNT; k++) {
        if (!bytes_are(name, base, action_key_names[k])) {
            continue;
        }
        /* Only the receipt and send actions have batch forms. */
        if (is_batch && k != CFG_ACTION_SEND_MESSAGE && k != CFG_ACTION_DELETE_MESSAGE &&
            k != CFG_ACTION_CHANGE_MESSAGE_VISIBILITY) {
            return false;
        }
        *out = (enum cfg_action_key)k;
        return true;
    }
    return false;
}

const struct cfg_rate *cfg_find_queue_rate(const struct cfg_limits *limits, const char *queue,
                                           size_t len)
{
    size_t lo = 0;
    size_t hi = limits->queue_rate_count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const char *have = limits->queue_rates[mid].queue;
        int c = cfg__cmp_bytes(have, strlen(have), queue, len);
        if (c == 0) {
            return &limits->queue_rates[mid].rate;
        }
        if (c < 0) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return NULL;
}

static bool rate_equal(const struct cfg_rate *a, const struct cfg_rate *b)
{
    return a->requests_per_second == b->requests_per_second && a->burst == b->burst;
}

bool cfg_limits_equal(const struct cfg_limits *a, const struct cfg_limits *b)
{
    if (a->requests_per_second != b->requests_per_second || a->burst != b->burst ||
        a->max_inflight != b->max_inflight || a->max_backlog != b->max_backlog ||
        a->max_long_polls != b->max_long_polls || a->max_queues != b->max_queues ||
        a->max_concurrent_requests != b->max_concurrent_requests ||
        a->queue_rate_count != b->queue_rate_count) {
        return false;
    }
    for (int k = 0; k < CFG_ACTION_KEY_COUNT; k++) {
        if (!rate_equal(&a->actions[k], &b->actions[k])) {
            return false;
        }
    }
    for (size_t i = 0; i < a->queue_rate_count; i++) {
        if (strcmp(a->queue_rates[i].queue, b->queue_rates[i].queue) != 0 ||
            !rate_equal(&a->queue_rates[i].rate, &b->queue_rates[i].rate)) {
            return false;
        }
    }
    return true;
}

int cfg__cmp_bytes(const char *a, size_t alen, const char *b, size_t blen)
{
    int c = memcmp(a, b, SL_MIN(alen, blen));
    if (c != 0) {
        return c;
    }
    return alen < blen ? -1 : (alen > blen);
}

bool cfg__name_chars_valid(const char *name, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        char c = name[i];
        bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                  c == '_' || c == '-';
        if (!ok) {
            return false;
        }
    }
    return true;
}

bool cfg__queue_name_valid(const char *name, size_t len)
{
    static const char suffix[] = ".fifo";
    size_t slen = sizeof(suffix) - 1;
    bool fifo = len > slen && memcmp(name + len - slen, suffix, slen) == 0;
    size_t base = fifo ? len - slen : len;
    return len >= 1 && len <= CFG_QUEUE_NAME_MAX && base >= 1 && cfg__name_chars_valid(name, base);
}

void cfg__limits_fini(struct cfg_limits *limits)
{
    for (size_t i = 0; i < limits->queue_rate_count; i++) {
        free(limits->queue_rates[i].queue);
    }
    free(limits->queue_rates);
    limits->queue_rates = NULL;
    limits->queue_rate_count = 0;
}

void cfg__limits_own(struct cfg_limits *limits)
{
    const struct cfg_queue_rate *shared = limits->queue_rates;
    size_t n = limits->queue_rate_count;
    limits->queue_rates = n > 0 ? sl_xcalloc(n, sizeof(*shared)) : NULL;
    for (size_t i = 0; i < n; i++) {
        limits->queue_rates[i].queue = sl_xstrdup(shared[i].queue);
        limits->queue_rates[i].rate = shared[i].rate;
    }
}
