/*
 * part_disk.c -- the low-disk watermark: statvfs of data_dir at most once
 * a second, whichever thread asks first after that second (a send on a
 * loop thread, a scrape of /metrics, a closing writer), so an idle
 * engine costs nothing and a busy one one syscall a second.
 *
 * Sends are refused below the watermark before they reach SQLite, so that
 * the last free blocks go to what frees space (deletes) and to the
 * checkpoints that move the WAL into the file; receives, deletes and
 * visibility changes still run.
 */
#include <sys/statvfs.h>

#include "part_disk.h"

#define LOG_MOD "partitions"
#define SAMPLE_MS 1000

static void sample(struct part_engine *e)
{
    uint64_t now = sl_mono_ns() / 1000000 + 1; /* never 0: 0 means "now" */
    uint64_t at = atomic_load(&e->disk_at_ms);
    if (at != 0 && now - at < SAMPLE_MS) {
        return;
    }
    if (!atomic_compare_exchange_strong(&e->disk_at_ms, &at, now)) {
        return; /* another thread samples */
    }
    struct statvfs sv;
    if (statvfs(e->data_dir, &sv) == 0) {
        atomic_store(&e->disk_free, (uint64_t)sv.f_bavail * (uint64_t)sv.f_frsize);
    } else {
        atomic_store(&e->disk_free, UINT64_MAX); /* unknown: do not refuse */
    }
    uint64_t min = atomic_load(&e->min_free);
    uint64_t free_b = atomic_load(&e->disk_free);
    bool low = min != 0 && free_b < min;
    if (atomic_exchange(&e->disk_low, low) != low) {
        if (low) {
            sl_log(SL_LOG_WARN, LOG_MOD,
                   "%s: %llu bytes free, below server.min_free_disk_bytes (%llu): sends are "
                   "refused until space returns",
                   e->data_dir, (unsigned long long)free_b, (unsigned long long)min);
        } else {
            sl_log(SL_LOG_INFO, LOG_MOD, "%s: %llu bytes free: sends are accepted again",
                   e->data_dir, (unsigned long long)free_b);
        }
    }
}

bool part__disk_low(struct part_engine *e)
{
    sample(e);
    return atomic_load(&e->disk_low);
}

void part_engine_set_min_free(struct part_engine *e, uint64_t bytes)
{
    atomic_store(&e->min_free, bytes);
    atomic_store(&e->disk_at_ms, 0); /* judge the next send by the new value */
}

void part_engine_disk(struct part_engine *e, uint64_t *free_bytes, bool *low)
{
    sample(e);
    uint64_t f = atomic_load(&e->disk_free);
    *free_bytes = f == UINT64_MAX ? 0 : f;
    *low = atomic_load(&e->disk_low);
}
