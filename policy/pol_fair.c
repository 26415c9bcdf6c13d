/*
 * pol_fair.c -- fair dequeue inside a queue, aged spill and retention.
 *
 * Fair queues follow Amazon SQS: a message group is "noisy" when it holds
 * more than 10 % of the queue's in-flight messages and at least 30 of them;
 * noisy groups are served after quiet ones (deprioritised, never dropped),
 * so one hot MessageGroupId cannot keep every consumer busy while others
 * wait (fairness-and-engines.md §0, §7).
 *
 * Aged spill follows the Builders' Library: ready messages that waited too
 * long move to the overflow lane, so fresh traffic is served first and the
 * old backlog is worked off when there is room.
 *
 * Threading: pure. Ownership: order[] belongs to the caller.
 */
#include "pol.h"

#include <stdlib.h>

struct ranked {
    uint64_t inflight;
    uint32_t index;
};

static int by_inflight_then_index(const void *a, const void *b)
{
    const struct ranked *x = a;
    const struct ranked *y = b;
    if (x->inflight != y->inflight) {
        return x->inflight < y->inflight ? -1 : 1;
    }
    return x->index < y->index ? -1 : (x->index > y->index);
}

bool pol_group_is_noisy(uint64_t group_inflight, uint64_t queue_inflight)
{
    /* "more than 10 %" as g * 100 > q * 10 without dividing; long double
     * holds these products exactly for any count sluice can reach. */
    return group_inflight >= POL_NOISY_MIN_INFLIGHT &&
           (long double)group_inflight * 100 >
               (long double)queue_inflight * POL_NOISY_SHARE_PERCENT;
}

size_t pol_fair_order(const uint64_t *group_inflight, size_t n, uint64_t queue_inflight,
                      uint32_t *order)
{
    struct ranked *noisy;
    size_t quiet = 0, loud = 0;

    if (n == 0) {
        return 0;
    }
    noisy = sl_xcalloc(n, sizeof(*noisy));
    for (size_t i = 0; i < n; i++) {
        if (pol_group_is_noisy(group_inflight[i], queue_inflight)) {
            noisy[loud++] = (struct ranked){group_inflight[i], (uint32_t)i};
        } else {
            order[quiet++] = (uint32_t)i;
        }
    }
    qsort(noisy, loud, sizeof(*noisy), by_inflight_then_index);
    for (size_t i = 0; i < loud; i++) {
        order[quiet + i] = noisy[i].index;
    }
    free(noisy);
    return quiet;
}

bool pol_should_age_out(const struct cfg_spill *spill, uint64_t sent_ms, uint64_t now_ms)
{
    if (spill->aged_after_seconds == 0 || now_ms < sent_ms) {
        return false;
    }
    return now_ms - sent_ms >= (uint64_t)spill->aged_after_seconds * 1000;
}

uint64_t pol_spill_visible_at_ms(const struct cfg_spill *spill, uint64_t now_ms)
{
    uint64_t delay = (uint64_t)spill->delay_seconds * 1000;
    return now_ms > UINT64_MAX - delay ? UINT64_MAX : now_ms + delay;
}

bool pol_past_retention(uint32_t retention_seconds, uint64_t sent_ms, uint64_t now_ms)
{
    if (now_ms < sent_ms) {
        return false;
    }
    return now_ms - sent_ms >= (uint64_t)retention_seconds * 1000;
}
