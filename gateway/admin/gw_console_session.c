/*
 * gw_console_session.c -- the console's session table (gw_console_session.h):
 * a fixed array of slots behind one mutex. A handful of operators log in,
 * so a scan beats any index, and a fixed size bounds what a stream of
 * logins can allocate.
 *
 * Each slot keeps digests, never a cookie: the SHA-256 of the cookie value
 * (compared with CRYPTO_memcmp over every slot, so a lookup's time does not
 * depend on which slot, if any, matches) and the SHA-256 of the admin
 * secret the login proved.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/sha.h>

#include "gw_console_session.h"

#define NS_PER_S 1000000000ull
#define TOKEN_BYTES 32u

struct slot {
    bool used;
    unsigned char id_hash[SHA256_DIGEST_LENGTH];
    unsigned char cred_hash[SHA256_DIGEST_LENGTH];
    char csrf[GW_CONSOLE_TOKEN_CAP];
    char label[GW_CONSOLE_LABEL_CAP];
    uint64_t opened_ns, used_ns;
};

struct gw_console_sessions {
    pthread_mutex_t lock;
    struct slot slots[GW_CONSOLE_MAX_SESSIONS];
};

struct gw_console_sessions *gw__console_sessions_new(void)
{
    struct gw_console_sessions *s = sl_xcalloc(1, sizeof(*s));
    pthread_mutex_init(&s->lock, NULL);
    return s;
}

void gw__console_sessions_free(struct gw_console_sessions *s)
{
    if (s == NULL) {
        return;
    }
    pthread_mutex_destroy(&s->lock);
    OPENSSL_cleanse(s->slots, sizeof(s->slots));
    free(s);
}

static void digest(struct sl_slice in, unsigned char out[SHA256_DIGEST_LENGTH])
{
    SHA256((const unsigned char *)in.p, in.n, out);
}

static void random_token(char out[GW_CONSOLE_TOKEN_CAP])
{
    uint8_t raw[TOKEN_BYTES];
    sl_random_bytes(raw, sizeof(raw));
    sl_hex_encode(raw, sizeof(raw), out);
    OPENSSL_cleanse(raw, sizeof(raw));
}

static bool expired(const struct slot *slot, uint64_t now_ns)
{
    return now_ns - slot->used_ns >= GW_CONSOLE_IDLE_S * NS_PER_S ||
           now_ns - slot->opened_ns >= GW_CONSOLE_LIFETIME_S * NS_PER_S;
}

static void end(struct slot *slot)
{
    OPENSSL_cleanse(slot, sizeof(*slot));
}

/* A free or expired slot, else the least recently used one. */
static struct slot *slot_for_login(struct gw_console_sessions *s, uint64_t now_ns)
{
    struct slot *lru = &s->slots[0];
    for (size_t i = 0; i < GW_CONSOLE_MAX_SESSIONS; i++) {
        struct slot *slot = &s->slots[i];
        if (!slot->used || expired(slot, now_ns)) {
            return slot;
        }
        if (slot->used_ns < lru->used_ns) {
            lru = slot;
        }
    }
    return lru;
}

void gw__console_session_open(struct gw_console_sessions *s, struct sl_slice credential,
                              uint64_t now_ns, struct gw_console_login *out)
{
    random_token(out->cookie);
    random_token(out->csrf);
    struct slot fresh = {.used = true, .opened_ns = now_ns, .used_ns = now_ns};
    digest(sl_slice_cstr(out->cookie), fresh.id_hash);
    digest(credential, fresh.cred_hash);
    unsigned char again[SHA256_DIGEST_LENGTH];
    SHA256(fresh.id_hash, sizeof(fresh.id_hash), again);
    sl_hex_encode(again, (GW_CONSOLE_LABEL_CAP - 1) / 2, fresh.label);
    memcpy(fresh.csrf, out->csrf, sizeof(fresh.csrf));
    memcpy(out->label, fresh.label, sizeof(out->label));

    pthread_mutex_lock(&s->lock);
    struct slot *slot = slot_for_login(s, now_ns);
    end(slot);
    *slot = fresh;
    pthread_mutex_unlock(&s->lock);
    OPENSSL_cleanse(&fresh, sizeof(fresh));
}

/* The slot whose id hash is h, or NULL. Every used slot is compared, so
 * the time does not say which one matched. Called with the lock held. */
static struct slot *find_locked(struct gw_console_sessions *s,
                                const unsigned char h[SHA256_DIGEST_LENGTH])
{
    struct slot *found = NULL;
    for (size_t i = 0; i < GW_CONSOLE_MAX_SESSIONS; i++) {
        struct slot *slot = &s->slots[i];
        if (CRYPTO_memcmp(slot->id_hash, h, SHA256_DIGEST_LENGTH) == 0 && slot->used) {
            found = slot;
        }
    }
    return found;
}

int gw__console_session_find(struct gw_console_sessions *s, struct sl_slice cookie,
                             struct sl_slice credential, uint64_t now_ns,
                             struct gw_console_session_view *out)
{
    unsigned char h[SHA256_DIGEST_LENGTH], cred[SHA256_DIGEST_LENGTH];
    digest(cookie, h);
    digest(credential, cred);
    int rc = SL_ENOTFOUND;
    pthread_mutex_lock(&s->lock);
    struct slot *slot = find_locked(s, h);
    if (slot != NULL &&
        (expired(slot, now_ns) || CRYPTO_memcmp(slot->cred_hash, cred, sizeof(cred)) != 0)) {
        end(slot);
    } else if (slot != NULL) {
        slot->used_ns = now_ns;
        memcpy(out->csrf, slot->csrf, sizeof(out->csrf));
        memcpy(out->label, slot->label, sizeof(out->label));
        uint64_t idle_left = GW_CONSOLE_IDLE_S;
        uint64_t life_left = GW_CONSOLE_LIFETIME_S - (now_ns - slot->opened_ns) / NS_PER_S;
        out->expires_in_s = SL_MIN(idle_left, life_left);
        rc = SL_OK;
    }
    pthread_mutex_unlock(&s->lock);
    return rc;
}

int gw__console_session_close(struct gw_console_sessions *s, struct sl_slice cookie)
{
    unsigned char h[SHA256_DIGEST_LENGTH];
    digest(cookie, h);
    pthread_mutex_lock(&s->lock);
    struct slot *slot = find_locked(s, h);
    if (slot != NULL) {
        end(slot);
    }
    pthread_mutex_unlock(&s->lock);
    return slot != NULL ? SL_OK : SL_ENOTFOUND;
}

bool gw__console_csrf_equal(const char *expected, struct sl_slice presented)
{
    unsigned char a[SHA256_DIGEST_LENGTH], b[SHA256_DIGEST_LENGTH];
    digest(sl_slice_cstr(expected), a);
    digest(presented, b);
    return expected[0] != '\0' && CRYPTO_memcmp(a, b, sizeof(a)) == 0;
}

size_t gw__console_sessions_live(struct gw_console_sessions *s, uint64_t now_ns)
{
    size_t n = 0;
    pthread_mutex_lock(&s->lock);
    for (size_t i = 0; i < GW_CONSOLE_MAX_SESSIONS; i++) {
        n += s->slots[i].used && !expired(&s->slots[i], now_ns);
    }
    pthread_mutex_unlock(&s->lock);
    return n;
}
