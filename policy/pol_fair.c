/*
 * pol_fair.c -- the rules of fair dequeue inside a queue and of the
 * overflow lane; the partitions apply them (part_receive_req.noisy,
 * part_tenant_set_aging, part_send_entry.lane).
 *
 * Fair queues follow Amazon SQS: a message group is "noisy" when it holds
 * more than 10 % of the queue's in-flight messages and at least 30 of them;
 * noisy groups are served after quiet ones (deprioritised, never dropped),
 * so one hot MessageGroupId cannot keep every consumer busy while others
 * wait (docs/policy.md, section 4).
 *
 * The overflow lane follows the Builders' Library: spilled sends wait
 * there, and ready messages that waited too long are sidelined to it, so
 * fresh traffic is served first and the old backlog is worked off when
 * there is room.
 *
 * Threading: pure.
 */
#include "pol.h"

bool pol_group_is_noisy(uint64_t group_inflight, uint64_t queue_inflight)
{
    /* "more than 10 %" as g * 100 > q * 10 without dividing; long double
     * holds these products exactly for any count sluice can reach. */
    return group_inflight >= POL_NOISY_MIN_INFLIGHT &&
           (long double)group_inflight * 100 >
               (long double)queue_inflight * POL_NOISY_SHARE_PERCENT;
}

int32_t pol_spill_delay_s(const struct cfg_spill *spill, int32_t delay_s)
{
    return delay_s > (int32_t)spill->delay_seconds ? delay_s : (int32_t)spill->delay_seconds;
}

uint64_t pol_aging_ms(const struct cfg_spill *spill)
{
    return (uint64_t)spill->aged_after_seconds * 1000;
}
