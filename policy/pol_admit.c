/*
 * pol_admit.c -- admission of a request: ADMIT, SPILL or THROTTLE, the
 * back-pressure curve, and the in-flight allowance of a receive.
 *
 * Why back-pressure: a tenant that sends faster than its consumers drain
 * builds a backlog that can take hours to work off. The Builders' Library
 * ("Avoiding insurmountable queue backlogs") has services lower a
 * producer's admitted rate in inverse proportion to its backlog, so the
 * producer feels the backlog while it is still small. Here the rate stays
 * whole up to a soft limit S (POL_SOFT_BACKLOG_PERMILLE of max_backlog),
 * falls linearly to 0 at the hard limit H = max_backlog, and sends that
 * would pass H are refused whatever the mode. docs/policy.md draws it.
 *
 * Threading: pure except for the GCRA the caller passes (lock-free).
 * Ownership: nothing kept.
 */
#include "pol.h"

enum pol_verdict pol_admit(struct pol_gcra *rate, const struct pol_admit_input *in,
                           struct pol_admit_result *out)
{
    const struct cfg_limits *limits = &in->tenant->limits;
    bool send = in->action == POL_ACTION_SEND;
    uint64_t retry = 0;

    *out = (struct pol_admit_result){POL_ADMIT, POL_REASON_NONE, POL_PPM, 0};

    /* SQS answers OverLimit past 120,000 in flight; a receive here cannot
     * make progress either, so it costs no token. */
    if (in->action == POL_ACTION_RECEIVE && limits->max_inflight != 0 &&
        in->inflight >= limits->max_inflight) {
        out->verdict = POL_THROTTLE;
        out->reason = POL_REASON_INFLIGHT;
        return out->verdict;
    }
    /* The hard bound holds in spill mode too: the overflow lane is stored
     * messages like any other. Checked as "would pass" so a batch that
     * straddles H is refused whole. */
    if (send && limits->max_backlog != 0 &&
        (in->backlog >= limits->max_backlog || in->cost > limits->max_backlog - in->backlog)) {
        out->verdict = POL_THROTTLE;
        out->reason = POL_REASON_BACKLOG;
        return out->verdict;
    }
    if (send) {
        out->rate_ppm = pol_backpressure_ppm(limits, in->backlog);
    }
    /* Every bucket must pass. They are taken one after the other, the
     * narrow ones first at full rate, and the ones taken are given back
     * when a later one refuses. Checking all before taking any would not
     * be exact: another thread can empty a bucket between the check and
     * the take. Taking and refunding never admits more than a bucket
     * holds; the cost is that a concurrent request may see, for a moment,
     * tokens missing that are about to come back. The tenant's bucket
     * comes last because its take may be slowed by back-pressure, which a
     * refund could not undo exactly. */
    struct pol_gcra *const narrow[2] = {in->action_rate, in->queue_rate};
    static const enum pol_reason narrow_reason[2] = {POL_REASON_ACTION_RATE, POL_REASON_QUEUE_RATE};
    enum pol_reason refused = POL_REASON_NONE;
    size_t passed = 0; /* narrow[0..passed) took their tokens (or are NULL) */
    for (; passed < 2; passed++) {
        if (narrow[passed] != NULL &&
            !pol_gcra_take(narrow[passed], in->cost, POL_PPM, in->now_ns, &retry)) {
            refused = narrow_reason[passed];
            break;
        }
    }
    if (refused == POL_REASON_NONE) {
        if (pol_gcra_take(rate, in->cost, out->rate_ppm, in->now_ns, &retry)) {
            return out->verdict;
        }
        refused = POL_REASON_RATE;
    }
    while (passed-- > 0) {
        if (narrow[passed] != NULL) {
            pol_gcra_refund(narrow[passed], in->cost);
        }
    }
    out->reason = refused;
    if (send && in->tenant->on_excess == CFG_EXCESS_SPILL) {
        out->verdict = POL_SPILL;
        return out->verdict;
    }
    out->verdict = POL_THROTTLE;
    out->retry_after_ns = retry;
    return out->verdict;
}

uint32_t pol_backpressure_ppm(const struct cfg_limits *limits, uint64_t backlog)
{
    uint64_t hard = limits->max_backlog;
    uint64_t soft =
        hard / 1000 * POL_SOFT_BACKLOG_PERMILLE + hard % 1000 * POL_SOFT_BACKLOG_PERMILLE / 1000;
    long double ppm;

    if (hard == 0 || backlog <= soft) {
        return POL_PPM;
    }
    if (backlog >= hard) {
        return 0;
    }
    ppm = (long double)POL_PPM * (long double)(hard - backlog) / (long double)(hard - soft);
    return ppm < 1.0L ? 1 : (uint32_t)ppm;
}

uint32_t pol_receive_allowance(const struct cfg_limits *limits, uint64_t inflight,
                               uint32_t requested)
{
    uint64_t room;

    if (limits->max_inflight == 0) {
        return requested;
    }
    if (inflight >= limits->max_inflight) {
        return 0;
    }
    room = limits->max_inflight - inflight;
    return room < requested ? (uint32_t)room : requested;
}
