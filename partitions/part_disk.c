/*
 * part_disk.c -- free space of data_dir's file system: the low-disk
 * watermark and the space reserve. statvfs runs at most once a second,
 * in whichever thread asks first after that second (a send on a loop
 * thread, a writer after a commit, a scrape of /metrics, a closing
 * writer), so an idle engine costs nothing and a busy one one syscall a
 * second while the disk has room.
 *
 * Near a full disk (below twice the free space where the checkpoint
 * sizes start to shrink) it samples every 10 ms instead.
 *
 * Sends are refused below the watermark before they reach SQLite, so that
 * the last free blocks go to what frees space (deletes) and to the
 * checkpoints that move the WAL into the file; receives, deletes and
 * visibility changes still run.
 *
 * The space reserve is a file of blocks (data_dir/space-reserve) set aside
 * while there is room and given back the moment a write finds the disk
 * full: the last commit before that may have left WAL frames whose
 * checkpoint must grow the database file, and until that checkpoint runs
 * the WAL cannot start over, so no lease or delete could get a frame and
 * nothing could ever free space. From then on sends wait (as below the
 * watermark) until the reserve can be set aside again with room to spare.
 */
#include <fcntl.h>
#include <stdio.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "part_disk.h"

#define LOG_MOD "partitions"
#define SAMPLE_MS 1000
#define SAMPLE_FAST_MS 10
#define RESERVE_MIN ((uint64_t)256 * 1024)
#define RESERVE_MAX ((uint64_t)16 * 1024 * 1024)
#define RESERVE_ROOM 4       /* set aside only with this many reserves' worth free */
#define PART_PAGE_BYTES 4096 /* SQLite's default page size, which the partitions keep */

/* A sixteenth of the file system, within 256 KiB..16 MiB: room for the
 * checkpoint of the WAL a writer keeps near a full disk (part_writer.c
 * checkpoints after every commit there) and for what follows it. */
static uint64_t reserve_size(const struct statvfs *sv)
{
    uint64_t total = (uint64_t)sv->f_blocks * (uint64_t)sv->f_frsize;
    uint64_t r = total / 16;
    return r < RESERVE_MIN ? RESERVE_MIN : r > RESERVE_MAX ? RESERVE_MAX : r;
}

static void reserve_path(const struct part_engine *e, char *out, size_t cap)
{
    snprintf(out, cap, "%s/space-reserve", e->data_dir);
}

/* Sets the reserve aside when it is not and the file system has room for
 * it several times over (so that the reserve is never what fills the
 * disk); clears reserve_spent once it is back. Under reserve_mu. */
static void reserve_keep(struct part_engine *e, const struct statvfs *sv)
{
    uint64_t size = reserve_size(sv);
    uint64_t free_b = (uint64_t)sv->f_bavail * (uint64_t)sv->f_frsize;
    if (atomic_load(&e->reserve_held) || free_b < RESERVE_ROOM * size) {
        return;
    }
    char path[4200];
    reserve_path(e, path, sizeof path);
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0 || posix_fallocate(fd, 0, (off_t)size) != 0) {
        if (fd >= 0) {
            close(fd);
        }
        unlink(path);
        return;
    }
    close(fd);
    atomic_store(&e->reserve_held, true);
    if (atomic_exchange(&e->reserve_spent, false)) {
        sl_log(SL_LOG_INFO, LOG_MOD,
               "%s: %llu bytes free: the space reserve is set aside again and sends are accepted",
               e->data_dir, (unsigned long long)free_b);
    }
}

static void sample(struct part_engine *e)
{
    uint64_t now = sl_mono_ns() / 1000000 + 1; /* never 0: 0 means "now" */
    uint64_t at = atomic_load(&e->disk_at_ms);
    /* Near a full disk, where the writers' checkpoint sizes follow the free
     * space, a second is long enough to fill what is left. */
    uint64_t every = atomic_load(&e->disk_free) < e->disk_fast_below ? SAMPLE_FAST_MS : SAMPLE_MS;
    if (at != 0 && now - at < every) {
        return;
    }
    if (!atomic_compare_exchange_strong(&e->disk_at_ms, &at, now)) {
        return; /* another thread samples */
    }
    struct statvfs sv;
    bool known = statvfs(e->data_dir, &sv) == 0;
    if (known) {
        atomic_store(&e->disk_free, (uint64_t)sv.f_bavail * (uint64_t)sv.f_frsize);
        if (!atomic_load(&e->reserve_held) && pthread_mutex_trylock(&e->reserve_mu) == 0) {
            reserve_keep(e, &sv);
            pthread_mutex_unlock(&e->reserve_mu);
        }
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
    return atomic_load(&e->disk_low) || atomic_load(&e->reserve_spent);
}

uint64_t part__disk_free(struct part_engine *e)
{
    sample(e);
    return atomic_load(&e->disk_free);
}

void part__disk_full(struct part_engine *e)
{
    pthread_mutex_lock(&e->reserve_mu);
    bool had = atomic_exchange(&e->reserve_held, false);
    bool first = !atomic_exchange(&e->reserve_spent, true);
    if (had) {
        char path[4200];
        reserve_path(e, path, sizeof path);
        unlink(path);
    }
    pthread_mutex_unlock(&e->reserve_mu);
    if (first) {
        sl_log(SL_LOG_WARN, LOG_MOD,
               "%s: the disk is full: %s; sends are refused until space returns, receives and "
               "deletes go on",
               e->data_dir,
               had ? "released the space reserve for checkpoints and deletes"
                   : "no space reserve was set aside");
    }
    atomic_store(&e->disk_at_ms, 0); /* sample again at the next ask */
}

static uint64_t checkpoint_pages(const struct part_engine *e)
{
    return e->opt.checkpoint_pages ? e->opt.checkpoint_pages : 2048;
}

uint32_t part__wal_limit(uint64_t free_b, uint32_t pages, uint32_t nparts)
{
    if (free_b == UINT64_MAX || nparts == 0) {
        return pages;
    }
    return (uint32_t)SL_MIN((uint64_t)pages, free_b / (2ull * PART_PAGE_BYTES * nparts));
}

uint32_t part__disk_checkpoint_pages(struct part_engine *e)
{
    return part__wal_limit(part__disk_free(e), (uint32_t)checkpoint_pages(e), e->nparts);
}

void part__disk_open(struct part_engine *e)
{
    /* Twice where the checkpoint sizes start to shrink. */
    e->disk_fast_below = 4ull * checkpoint_pages(e) * PART_PAGE_BYTES * e->nparts;
    pthread_mutex_init(&e->reserve_mu, NULL);
    /* A reserve left by the last run is given back first: opening the
     * partitions on a full disk may need its blocks (a WAL and its
     * shared-memory file to create); sample sets it aside again. */
    char path[4200];
    reserve_path(e, path, sizeof path);
    unlink(path);
    atomic_store(&e->disk_at_ms, 0);
}

void part__disk_close(struct part_engine *e)
{
    pthread_mutex_destroy(&e->reserve_mu);
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
    *low = atomic_load(&e->disk_low) || atomic_load(&e->reserve_spent);
}
