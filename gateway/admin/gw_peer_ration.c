/*
 * gw_peer_ration.c -- a GCRA meter per client address (gw_peer_ration.h).
 * A flat table searched in full: it serves failed console logins and
 * admin authentications, rare events and admin requests, so a scan of up
 * to a thousand 16-byte keys under one mutex (about a microsecond) costs
 * nothing that matters and leaves no hash for a client to aim at.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "gw_peer_ration.h"
#include "pol.h"
#include "sl.h"

struct ration_slot {
    bool used;
    uint8_t peer[16];
    uint64_t last_ns; /* last charge */
    struct pol_gcra meter;
};

struct gw_peer_ration {
    pthread_mutex_t mu;
    double per_second;
    uint32_t burst;
    uint32_t nslots;
    struct ration_slot slots[];
};

struct gw_peer_ration *gw__peer_ration_new(double per_second, uint32_t burst, uint32_t slots)
{
    SL_ASSERT(slots > 0);
    struct gw_peer_ration *r =
        sl_xcalloc(1, sizeof(*r) + (size_t)slots * sizeof(struct ration_slot));
    pthread_mutex_init(&r->mu, NULL);
    r->per_second = per_second;
    r->burst = burst;
    r->nslots = slots;
    return r;
}

void gw__peer_ration_free(struct gw_peer_ration *r)
{
    if (r == NULL) {
        return;
    }
    pthread_mutex_destroy(&r->mu);
    free(r);
}

/* The meter a peer address spends: an IPv4 address (mapped) is its own;
 * an IPv6 one counts by its /64, the prefix one host or one subscriber
 * usually holds whole, so walking through its addresses buys no new
 * budget. */
static void peer_key(const uint8_t peer[16], uint8_t key[16])
{
    static const uint8_t v4_mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    memcpy(key, peer, 16);
    if (memcmp(peer, v4_mapped, sizeof v4_mapped) != 0) {
        memset(key + 8, 0, 8);
    }
}

/* Under mu: the slot of key (peer_key), or NULL. */
static struct ration_slot *find(struct gw_peer_ration *r, const uint8_t key[16])
{
    for (uint32_t i = 0; i < r->nslots; i++) {
        if (r->slots[i].used && memcmp(r->slots[i].peer, key, 16) == 0) {
            return &r->slots[i];
        }
    }
    return NULL;
}

/* Under mu: the slot a new peer takes (see gw__peer_ration_charge). */
static struct ration_slot *victim(struct gw_peer_ration *r, uint64_t now_ns)
{
    struct ration_slot *oldest = &r->slots[0];
    for (uint32_t i = 0; i < r->nslots; i++) {
        struct ration_slot *s = &r->slots[i];
        if (!s->used || pol_gcra_available(&s->meter, now_ns) >= r->burst) {
            return s;
        }
        if (s->last_ns < oldest->last_ns) {
            oldest = s;
        }
    }
    return oldest;
}

bool gw__peer_ration_allowed(struct gw_peer_ration *r, const uint8_t peer[16], uint64_t now_ns)
{
    uint8_t key[16];
    peer_key(peer, key);
    pthread_mutex_lock(&r->mu);
    struct ration_slot *s = find(r, key);
    bool allowed = s == NULL || pol_gcra_available(&s->meter, now_ns) > 0;
    pthread_mutex_unlock(&r->mu);
    return allowed;
}

void gw__peer_ration_charge(struct gw_peer_ration *r, const uint8_t peer[16], uint64_t now_ns)
{
    uint8_t key[16];
    peer_key(peer, key);
    pthread_mutex_lock(&r->mu);
    struct ration_slot *s = find(r, key);
    if (s == NULL) {
        s = victim(r, now_ns);
        s->used = true;
        memcpy(s->peer, key, 16);
        pol_gcra_init(&s->meter, r->per_second, r->burst);
    }
    s->last_ns = now_ns;
    (void)pol_gcra_take(&s->meter, 1, POL_PPM, now_ns, NULL);
    pthread_mutex_unlock(&r->mu);
}
