/*
 * cfg_snapshot.c -- the life of a configuration snapshot (atomic reference
 * count, free) and the lookups every request makes on it: access key ->
 * principal (binary search over a sorted index built once at load),
 * tenant name -> tenant (binary search over tenants sorted by name).
 *
 * Threading: a snapshot is immutable once loaded, so the lookups take no
 * lock; ref/unref are atomic (acquire-release, so the thread that frees
 * sees every write made before the other threads' last unref).
 * Ownership: the snapshot owns every string and array it points at.
 */
#include "cfg_cluster.h"
#include "cfg_int.h"
#include "cfg_value.h"

#include "sl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct cfg_snapshot *cfg_snapshot_ref(struct cfg_snapshot *s)
{
    if (s != NULL) {
        int before = __atomic_fetch_add(&s->_refs, 1, __ATOMIC_RELAXED);
        SL_ASSERT(before > 0);
    }
    return s;
}

void cfg_snapshot_unref(struct cfg_snapshot *s)
{
    if (s == NULL) {
        return;
    }
    int before = __atomic_fetch_sub(&s->_refs, 1, __ATOMIC_ACQ_REL);
    SL_ASSERT(before > 0);
    if (before == 1) {
        cfg__snapshot_free(s);
    }
}

void cfg__snapshot_free(struct cfg_snapshot *s)
{
    if (s == NULL) {
        return;
    }
    free(s->source);
    free(s->listen.host);
    free(s->tls.cert_file);
    free(s->tls.key_file);
    free(s->region);
    free(s->data_dir);
    free(s->admin.listen.host);
    free(s->admin.access_key_id);
    free(s->admin.secret_access_key);
    free(s->admin.bearer_token);
    cfg__limits_fini(&s->default_limits);
    for (size_t i = 0; i < s->tenant_count; i++) {
        cfg__limits_fini(&s->tenants[i].limits);
        free(s->tenants[i].name);
        free(s->tenants[i].access_key_id);
        free(s->tenants[i].secret_access_key);
    }
    free(s->tenants);
    cfg__cluster_fini(&s->cluster);
    free(s->_principals);
    free(s);
}

static int cmp_entry(const void *a, const void *b)
{
    const struct cfg__principal_entry *x = a;
    const struct cfg__principal_entry *y = b;
    return cfg__cmp_bytes(x->access_key_id, x->len, y->access_key_id, y->len);
}

void cfg__snapshot_index(struct cfg_snapshot *s)
{
    size_t n = s->tenant_count + (s->admin.enabled ? 1 : 0);
    struct cfg__principal_entry *idx = sl_xcalloc(n ? n : 1, sizeof(*idx));
    size_t k = 0;
    for (size_t i = 0; i < s->tenant_count; i++) {
        idx[k++] = (struct cfg__principal_entry){
            s->tenants[i].access_key_id, strlen(s->tenants[i].access_key_id), &s->tenants[i]};
    }
    if (s->admin.enabled) {
        idx[k++] = (struct cfg__principal_entry){s->admin.access_key_id,
                                                 strlen(s->admin.access_key_id), NULL};
    }
    qsort(idx, n, sizeof(*idx), cmp_entry);
    s->_principals = idx;
    s->_principal_count = n;
}

static void fill_principal(const struct cfg_snapshot *s, const struct cfg_tenant *t,
                           struct cfg_principal *out)
{
    if (t != NULL) {
        out->kind = CFG_PRINCIPAL_TENANT;
        out->secret_access_key = t->secret_access_key;
        out->tenant = t;
    } else {
        out->kind = CFG_PRINCIPAL_ADMIN;
        out->secret_access_key = s->admin.secret_access_key;
        out->tenant = NULL;
    }
}

static bool key_is(const char *have, const char *want, size_t len)
{
    return strlen(have) == len && memcmp(have, want, len) == 0;
}

bool cfg_find_principal(const struct cfg_snapshot *s, const char *access_key_id, size_t len,
                        struct cfg_principal *out)
{
    if (s->_principals == NULL) { /* hand-made snapshot: scan */
        for (size_t i = 0; i < s->tenant_count; i++) {
            if (key_is(s->tenants[i].access_key_id, access_key_id, len)) {
                fill_principal(s, &s->tenants[i], out);
                return true;
            }
        }
        if (s->admin.enabled && key_is(s->admin.access_key_id, access_key_id, len)) {
            fill_principal(s, NULL, out);
            return true;
        }
        return false;
    }
    size_t lo = 0;
    size_t hi = s->_principal_count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const struct cfg__principal_entry *e = &s->_principals[mid];
        int c = cfg__cmp_bytes(access_key_id, len, e->access_key_id, e->len);
        if (c == 0) {
            fill_principal(s, e->tenant, out);
            return true;
        }
        if (c < 0) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    return false;
}

const struct cfg_tenant *cfg_find_tenant(const struct cfg_snapshot *s, const char *name, size_t len)
{
    if (s->_principals == NULL) { /* hand-made: sorting is not guaranteed */
        for (size_t i = 0; i < s->tenant_count; i++) {
            if (key_is(s->tenants[i].name, name, len)) {
                return &s->tenants[i];
            }
        }
        return NULL;
    }
    size_t lo = 0;
    size_t hi = s->tenant_count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const struct cfg_tenant *t = &s->tenants[mid];
        int c = cfg__cmp_bytes(name, len, t->name, strlen(t->name));
        if (c == 0) {
            return t;
        }
        if (c < 0) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    return NULL;
}

bool cfg_tenant_name_valid(const char *name, size_t len)
{
    return len >= 1 && len <= 64 && cfg__name_chars_valid(name, len);
}

/* ---- what a reload cannot move ------------------------------------------ */

struct change_list {
    char *buf;
    size_t cap;
    size_t used;
    int count;
};

static void add_change(struct change_list *cl, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void add_change(struct change_list *cl, const char *fmt, ...)
{
    cl->count++;
    if (cl->cap == 0) {
        return;
    }
    size_t room = cl->used < cl->cap ? cl->cap - cl->used : 0;
    if (cl->count > 1 && room > 0) {
        int n = snprintf(cl->buf + cl->used, room, "; ");
        cl->used += (size_t)n;
        room = cl->used < cl->cap ? cl->cap - cl->used : 0;
    }
    if (room > 0) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(cl->buf + cl->used, room, fmt, ap);
        va_end(ap);
        cl->used += n > 0 ? (size_t)n : 0;
    }
}

static bool str_eq(const char *a, const char *b)
{
    if (a == NULL || b == NULL) {
        return a == b;
    }
    return strcmp(a, b) == 0;
}

static bool endpoint_eq(const struct cfg_endpoint *a, const struct cfg_endpoint *b)
{
    return a->port == b->port && str_eq(a->host, b->host);
}

int cfg_restart_only_changes(const struct cfg_snapshot *old_s, const struct cfg_snapshot *new_s,
                             char *buf, size_t cap)
{
    struct change_list cl = {buf, cap, 0, 0};
    if (cap > 0) {
        buf[0] = '\0';
    }
    char a[320];
    char b[320];
    if (!endpoint_eq(&old_s->listen, &new_s->listen)) {
        add_change(&cl, "listen changed from %s to %s",
                   cfg__endpoint_str(&old_s->listen, a, sizeof(a)),
                   cfg__endpoint_str(&new_s->listen, b, sizeof(b)));
    }
    if (!str_eq(old_s->data_dir, new_s->data_dir)) {
        add_change(&cl, "data_dir changed from %s to %s", old_s->data_dir, new_s->data_dir);
    }
    if (old_s->partitions != new_s->partitions) {
        add_change(&cl, "partitions changed from %u to %u", old_s->partitions, new_s->partitions);
    }
    if (old_s->shard_size != new_s->shard_size) {
        add_change(&cl, "shard_size changed from %u to %u", old_s->shard_size, new_s->shard_size);
    }
    if (old_s->io_threads != new_s->io_threads) {
        add_change(&cl, "io_threads changed from %u to %u", old_s->io_threads, new_s->io_threads);
    }
    if (old_s->tls.enabled != new_s->tls.enabled) {
        add_change(&cl, "tls was %s", new_s->tls.enabled ? "enabled" : "disabled");
    } else if (new_s->tls.enabled && (!str_eq(old_s->tls.cert_file, new_s->tls.cert_file) ||
                                      !str_eq(old_s->tls.key_file, new_s->tls.key_file))) {
        add_change(&cl, "tls files changed");
    }
    if (old_s->admin.enabled != new_s->admin.enabled) {
        add_change(&cl, "admin was %s", new_s->admin.enabled ? "enabled" : "disabled");
    } else if (new_s->admin.enabled && !endpoint_eq(&old_s->admin.listen, &new_s->admin.listen)) {
        add_change(&cl, "admin.listen changed from %s to %s",
                   cfg__endpoint_str(&old_s->admin.listen, a, sizeof(a)),
                   cfg__endpoint_str(&new_s->admin.listen, b, sizeof(b)));
    }
    if (old_s->cluster.enabled != new_s->cluster.enabled) {
        add_change(&cl, "cluster was %s", new_s->cluster.enabled ? "added" : "removed");
    } else if (new_s->cluster.enabled &&
               cfg__cluster_changed_keys(&old_s->cluster, &new_s->cluster, a, sizeof(a)) > 0) {
        add_change(&cl, "cluster changed (%s)", a);
    }
    if (cap > 0 && cl.used >= cap) {
        buf[cap - 1] = '\0';
    }
    return cl.count;
}

/* *dst becomes a copy of src (either may be NULL). */
static void keep_str(char **dst, const char *src)
{
    if (str_eq(*dst, src)) {
        return;
    }
    free(*dst);
    *dst = src != NULL ? sl_xstrdup(src) : NULL;
}

static void keep_endpoint(struct cfg_endpoint *dst, const struct cfg_endpoint *src)
{
    keep_str(&dst->host, src->host);
    dst->port = src->port;
}

void cfg_snapshot_keep_restart_only(struct cfg_snapshot *next, const struct cfg_snapshot *running)
{
    keep_endpoint(&next->listen, &running->listen);
    keep_str(&next->data_dir, running->data_dir);
    next->partitions = running->partitions;
    next->shard_size = running->shard_size;
    next->io_threads = running->io_threads;
    next->tls.enabled = running->tls.enabled;
    keep_str(&next->tls.cert_file, running->tls.cert_file);
    keep_str(&next->tls.key_file, running->tls.key_file);
    /* admin on/off stays the file's: it also says whether the admin's
     * credentials are valid, a live key (the principal index has them). */
    if (running->admin.enabled && next->admin.enabled) {
        keep_endpoint(&next->admin.listen, &running->admin.listen);
    }
    cfg__cluster_copy(&next->cluster, &running->cluster);
}
