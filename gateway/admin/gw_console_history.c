/*
 * gw_console_history.c -- the console's queue history
 * (gw_console_history.h): one sampler thread, rings of counts per queue.
 *
 * Every queue is sampled at the same instants, so one ring of times
 * serves all; a queue's ring holds only its values, and `born` says from
 * which pass on it has any (a queue created a minute ago has a minute).
 * Each pass builds the next table beside the current one, carrying each
 * surviving queue's ring over by id, and swaps it in under the lock;
 * readers hold the lock only to copy numbers into JSON. Only the sampler
 * writes the tables, so it reads the current one without the lock.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gw_console_history.h"
#include "part.h"
#include "sl.h"

#define KEY_CAP 160 /* "TENANT/QUEUE": 64 + 1 + 80, and a NUL */

struct series {
    uint64_t id;
    uint64_t born; /* the first pass that sampled this queue */
    char key[KEY_CAP];
    int32_t ready[GW_CONSOLE_HISTORY_SAMPLES];
    int32_t inflight[GW_CONSOLE_HISTORY_SAMPLES];
    int32_t delayed[GW_CONSOLE_HISTORY_SAMPLES];
};

struct gw_console_history {
    struct part_engine *engine;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    bool stopping;
    /* guarded by lock; written by the sampler only */
    uint64_t passes; /* passes done; the next writes slot passes % SAMPLES */
    uint64_t t_ms[GW_CONSOLE_HISTORY_SAMPLES];
    struct series *series; /* sorted by id */
    size_t count;
};

static int by_id(const void *a, const void *b)
{
    uint64_t x = ((const struct series *)a)->id, y = ((const struct series *)b)->id;
    return x < y ? -1 : x > y;
}

static int32_t clamp(int64_t v)
{
    return (int32_t)SL_MAX(0, SL_MIN(v, (int64_t)INT32_MAX));
}

/* One pass: every queue's counts into slot passes % SAMPLES. */
static void sample(struct gw_console_history *h)
{
    struct part_queue_list all;
    part_queue_list(h->engine, NULL, NULL, &all);
    size_t n = SL_MIN(all.count, (size_t)GW_CONSOLE_HISTORY_MAX_QUEUES);
    struct series *next = n > 0 ? sl_xcalloc(n, sizeof(*next)) : NULL;
    uint64_t pass = h->passes; /* only this thread changes it */
    size_t slot = (size_t)(pass % GW_CONSOLE_HISTORY_SAMPLES);
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
        struct part_counts c;
        if (part_queue_counts(h->engine, all.items[i].id, PART_ALL_PARTITIONS, &c) != SL_OK) {
            continue; /* deleted since the list was made */
        }
        struct series key = {.id = all.items[i].id};
        const struct series *old =
            h->count > 0 ? bsearch(&key, h->series, h->count, sizeof(*h->series), by_id) : NULL;
        struct series *s = &next[kept++];
        if (old != NULL) {
            *s = *old;
        } else {
            s->id = key.id;
            s->born = pass;
            snprintf(s->key, sizeof(s->key), "%s/%s", all.items[i].tenant, all.items[i].name);
        }
        s->ready[slot] = clamp(c.ready);
        s->inflight[slot] = clamp(c.inflight);
        s->delayed[slot] = clamp(c.delayed);
    }
    part_queue_list_free(&all);
    if (kept > 1) {
        qsort(next, kept, sizeof(*next), by_id);
    }
    pthread_mutex_lock(&h->lock);
    struct series *old = h->series;
    h->series = next;
    h->count = kept;
    h->t_ms[slot] = sl_wall_ms();
    h->passes = pass + 1;
    pthread_mutex_unlock(&h->lock);
    free(old);
}

static void *run(void *arg)
{
    struct gw_console_history *h = arg;
    pthread_mutex_lock(&h->lock);
    while (!h->stopping) {
        pthread_mutex_unlock(&h->lock);
        sample(h);
        pthread_mutex_lock(&h->lock);
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += GW_CONSOLE_HISTORY_STEP_S;
        while (!h->stopping && pthread_cond_timedwait(&h->wake, &h->lock, &until) != ETIMEDOUT) {
        }
    }
    pthread_mutex_unlock(&h->lock);
    return NULL;
}

struct gw_console_history *gw__console_history_start(struct part_engine *engine)
{
    struct gw_console_history *h = sl_xcalloc(1, sizeof(*h));
    h->engine = engine;
    pthread_mutex_init(&h->lock, NULL);
    pthread_cond_init(&h->wake, NULL);
    int rc = pthread_create(&h->thread, NULL, run, h);
    SL_ASSERT(rc == 0);
    return h;
}

void gw__console_history_stop(struct gw_console_history *h)
{
    if (h == NULL) {
        return;
    }
    pthread_mutex_lock(&h->lock);
    h->stopping = true;
    pthread_cond_signal(&h->wake);
    pthread_mutex_unlock(&h->lock);
    pthread_join(h->thread, NULL);
    pthread_cond_destroy(&h->wake);
    pthread_mutex_destroy(&h->lock);
    free(h->series);
    free(h);
}

json_t *gw__console_history_json(struct gw_console_history *h)
{
    json_t *queues = json_object();
    pthread_mutex_lock(&h->lock);
    uint64_t first_pass =
        h->passes > GW_CONSOLE_HISTORY_SAMPLES ? h->passes - GW_CONSOLE_HISTORY_SAMPLES : 0;
    for (size_t i = 0; i < h->count; i++) {
        const struct series *s = &h->series[i];
        json_t *t = json_array(), *ready = json_array(), *inflight = json_array(),
               *delayed = json_array();
        for (uint64_t p = SL_MAX(first_pass, s->born); p < h->passes; p++) {
            size_t slot = (size_t)(p % GW_CONSOLE_HISTORY_SAMPLES);
            json_array_append_new(t, json_integer((json_int_t)h->t_ms[slot]));
            json_array_append_new(ready, json_integer(s->ready[slot]));
            json_array_append_new(inflight, json_integer(s->inflight[slot]));
            json_array_append_new(delayed, json_integer(s->delayed[slot]));
        }
        json_object_set_new(queues, s->key,
                            json_pack("{s:o, s:o, s:o, s:o}", "t_ms", t, "ready", ready, "inflight",
                                      inflight, "delayed", delayed));
    }
    pthread_mutex_unlock(&h->lock);
    return json_pack("{s:I, s:o}", "step_s", (json_int_t)GW_CONSOLE_HISTORY_STEP_S, "queues",
                     queues);
}
