/*
 * gw_pause.c -- paused queues (gw_act.h): the set the send and receive
 * paths consult, its durable copy in ops.db, and the receives held on a
 * queue paused for dequeue.
 *
 * The set is small (queues an operator paused by hand), so it is a flat
 * array under a rwlock; an atomic count lets every send skip the lock
 * while nothing is paused.
 *
 * Stack: above gw_act.c and gw_opstore.c; below the action handlers and
 * the admin routes that use it.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include <uv.h>

#include "gw_act.h"

#define LOG_MOD "pause"

struct pause_entry {
    uint64_t queue_id;
    unsigned flags;
};

/* A receive held on a queue paused for dequeue, listed on its loop. */
struct pause_hold {
    struct pause_hold *next;
    struct pause_hold *prev;
    struct gw_act_ctx *ctx;
    uv_timer_t timer;
    bool answered;
};

struct gw_pause_set {
    pthread_rwlock_t lock;
    pthread_mutex_t set_mu; /* serializes gw__pause_set end to end */
    struct pause_entry *items;
    size_t count;
    size_t cap;
    _Atomic size_t live; /* count, readable without the lock */
    /* held receives of every loop; each loop touches only its own
     * entries, under holds_mu */
    pthread_mutex_t holds_mu;
    struct pause_hold *holds;
};

static struct gw_pause_set *set_new(void)
{
    struct gw_pause_set *s = sl_xcalloc(1, sizeof *s);
    pthread_rwlock_init(&s->lock, NULL);
    pthread_mutex_init(&s->set_mu, NULL);
    pthread_mutex_init(&s->holds_mu, NULL);
    return s;
}

/* Writer lock held. */
static void set_put(struct gw_pause_set *s, uint64_t queue_id, unsigned flags)
{
    for (size_t i = 0; i < s->count; i++) {
        if (s->items[i].queue_id == queue_id) {
            if (flags != 0) {
                s->items[i].flags = flags;
            } else {
                s->items[i] = s->items[--s->count];
            }
            atomic_store(&s->live, s->count);
            return;
        }
    }
    if (flags == 0) {
        return;
    }
    if (s->count == s->cap) {
        s->cap = s->cap != 0 ? s->cap * 2 : 8;
        s->items = sl_xrealloc(s->items, s->cap * sizeof *s->items);
    }
    s->items[s->count++] = (struct pause_entry){queue_id, flags};
    atomic_store(&s->live, s->count);
}

bool gw__pause_replicated(const struct gw_api *api)
{
    return part_engine_node_id(api->engine) != 0;
}

unsigned gw__pause_flags(struct gw_api *api, uint64_t queue_id)
{
    if (gw__pause_replicated(api)) {
        return part_queue_pause(api->engine, queue_id);
    }
    struct gw_pause_set *s = api->paused;
    if (s == NULL || atomic_load_explicit(&s->live, memory_order_acquire) == 0) {
        return 0;
    }
    unsigned flags = 0;
    pthread_rwlock_rdlock(&s->lock);
    for (size_t i = 0; i < s->count; i++) {
        if (s->items[i].queue_id == queue_id) {
            flags = s->items[i].flags;
            break;
        }
    }
    pthread_rwlock_unlock(&s->lock);
    return flags;
}

int gw__pause_set(struct gw_api *api, uint64_t queue_id, unsigned which, bool pause,
                  unsigned *before, unsigned *after)
{
    struct gw_pause_set *s = api->paused;
    if (gw__pause_replicated(api)) {
        *before = *after = gw__pause_flags(api, queue_id);
        return SL_EINVAL;
    }
    /* One mutex across read, compute, persist and publish: two admin
     * writes on different loops (pause enqueue, pause dequeue) would
     * otherwise both read "none" and the second would drop the first's
     * bit, in memory and in ops.db alike. Readers keep the rwlock only,
     * so a slow ops.db write never stalls a send. */
    pthread_mutex_lock(&s->set_mu);
    unsigned was = gw__pause_flags(api, queue_id);
    unsigned now = pause ? was | which : was & ~which;
    int rc = SL_OK;
    if (now != was) {
        /* Durable first: a pause the operator was told about survives a
         * crash right after the answer. */
        rc = gw_opstore_put_pause(api->ops, queue_id, now);
        if (rc == SL_OK) {
            pthread_rwlock_wrlock(&s->lock);
            set_put(s, queue_id, now);
            pthread_rwlock_unlock(&s->lock);
            /* The partitions stop leases for receives already waiting
             * there, which the check at a receive's start cannot reach. A
             * queue deleted meanwhile has nothing to pause. */
            if ((now ^ was) & GW_PAUSE_DEQUEUE) {
                (void)part_queue_set_dequeue_paused(api->engine, queue_id,
                                                    (now & GW_PAUSE_DEQUEUE) != 0);
            }
        } else {
            now = was;
        }
    }
    pthread_mutex_unlock(&s->set_mu);
    *before = was;
    *after = now;
    return rc;
}

const char *gw__pause_name(unsigned flags)
{
    static const char *const names[] = {"none", "enqueue", "dequeue", "both"};
    return names[flags & 3u];
}

/* ---- held receives ----------------------------------------------------------- */

/* ReceiveMessage's answer with no messages. Takes ownership of ctx. */
static void answer_empty(struct gw_act_ctx *ctx)
{
    struct gw_sqs_reply reply;
    gw__act_reply_init(ctx, &reply);
    gw_sqs_reply_messages(&reply, NULL, 0);
    gw__act_finish(ctx, &reply);
    gw_sqs_reply_fini(&reply);
}

static void hold_closed(uv_handle_t *h)
{
    free(h->data);
}

/* Answers the held receive (no messages) and lets the hold go. Loop
 * thread of the hold. */
static void hold_answer(struct pause_hold *h)
{
    if (h->answered) {
        return;
    }
    h->answered = true;
    struct gw_pause_set *s = h->ctx->api->paused;
    pthread_mutex_lock(&s->holds_mu);
    if (h->prev != NULL) {
        h->prev->next = h->next;
    } else {
        s->holds = h->next;
    }
    if (h->next != NULL) {
        h->next->prev = h->prev;
    }
    pthread_mutex_unlock(&s->holds_mu);
    struct gw_act_ctx *ctx = h->ctx;
    gw_exchange_on_cancel(ctx->ex, NULL, NULL);
    answer_empty(ctx);
    uv_timer_stop(&h->timer);
    uv_close((uv_handle_t *)&h->timer, hold_closed);
}

static void hold_fired(uv_timer_t *t)
{
    hold_answer(t->data);
}

/* The stream is gone, or its client will send nothing more. */
static void hold_ended(struct gw_exchange *ex, void *data)
{
    (void)ex;
    hold_answer(data);
}

void gw__pause_hold_receive(struct gw_act_ctx *ctx, uint32_t wait_ms)
{
    if (wait_ms == 0 || ctx->loop->draining || gw_exchange_client_done(ctx->ex)) {
        answer_empty(ctx);
        return;
    }
    struct gw_pause_set *s = ctx->api->paused;
    struct pause_hold *h = sl_xcalloc(1, sizeof *h);
    h->ctx = ctx;
    uv_timer_init(ctx->loop->loop, &h->timer);
    h->timer.data = h;
    pthread_mutex_lock(&s->holds_mu);
    h->next = s->holds;
    if (s->holds != NULL) {
        s->holds->prev = h;
    }
    s->holds = h;
    pthread_mutex_unlock(&s->holds_mu);
    gw_exchange_on_cancel(ctx->ex, hold_ended, h);
    gw_exchange_on_client_done(ctx->ex, hold_ended, h);
    uv_timer_start(&h->timer, hold_fired, wait_ms, 0);
}

/* ---- hooks ---------------------------------------------------------------------- */

static void load_one(void *arg, uint64_t queue_id, unsigned flags)
{
    set_put(arg, queue_id, flags);
}

/* Drops the pauses of queues the catalog no longer has: a DeleteQueue
 * that crashed (or could not write ops.db) between the catalog's commit
 * and its pause's removal. */
static void forget_deleted(struct gw_api *api, struct gw_pause_set *s)
{
    for (size_t i = 0; i < s->count;) {
        uint64_t id = s->items[i].queue_id;
        struct part_queue_info *qi = NULL;
        if (part_queue_get(api->engine, id, &qi) == SL_OK) {
            part_queue_info_free(qi);
            i++;
        } else if (gw_opstore_put_pause(api->ops, id, 0) == SL_OK) {
            sl_log(SL_LOG_INFO, LOG_MOD, "dropped the pause of deleted queue %llu",
                   (unsigned long long)id);
            set_put(s, id, 0); /* the last entry takes slot i */
        } else {
            i++;
        }
    }
}

static void pause_api_init(struct gw_api *api)
{
    api->paused = set_new();
    struct gw_pause_set *s = api->paused;
    if (api->ops == NULL || gw__pause_replicated(api) ||
        gw_opstore_load_pauses(api->ops, load_one, s) != SL_OK) {
        return;
    }
    forget_deleted(api, s);
    if (s->count == 0) {
        return;
    }
    sl_log(SL_LOG_INFO, LOG_MOD, "%zu queue(s) paused by an operator", s->count);
    for (size_t i = 0; i < s->count; i++) {
        if ((s->items[i].flags & GW_PAUSE_DEQUEUE) != 0) {
            (void)part_queue_set_dequeue_paused(api->engine, s->items[i].queue_id, true);
        }
    }
}

static void pause_loop_drain(struct gw_api_loop *l)
{
    struct gw_pause_set *s = l->api->paused;
    for (;;) {
        struct pause_hold *mine = NULL;
        pthread_mutex_lock(&s->holds_mu);
        for (struct pause_hold *h = s->holds; h != NULL && mine == NULL; h = h->next) {
            if (h->ctx->loop == l) {
                mine = h;
            }
        }
        pthread_mutex_unlock(&s->holds_mu);
        if (mine == NULL) {
            return;
        }
        hold_answer(mine);
    }
}

static void pause_api_free(struct gw_api *api)
{
    struct gw_pause_set *s = api->paused;
    if (s == NULL) {
        return;
    }
    pthread_rwlock_destroy(&s->lock);
    pthread_mutex_destroy(&s->set_mu);
    pthread_mutex_destroy(&s->holds_mu);
    free(s->items);
    free(s);
    api->paused = NULL;
}

const struct gw_act_hooks gw__pause_hooks = {
    .api_init = pause_api_init,
    .loop_drain = pause_loop_drain,
    .api_free = pause_api_free,
};
