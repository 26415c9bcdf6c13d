/*
 * gw_sqs_hot.c -- the hot message actions' decoder (why: gw_sqs_in.h):
 * the gatherer that keeps what their members hold from a stream of parse
 * events, the walk of a jansson document into those events (the strict
 * path, the query protocol), and SQS's rules applied to what was kept.
 *
 * Threading: pure; any thread. Ownership: gathered records and their
 * arrays are blocks of the request; string slices borrow from the body or
 * the document, as gw_sqs.h says.
 */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "gw_sqs_in.h"
#include "gw_sqs_message.h"

#define BIT(m) (1u << GW__SQS_IN_##m)

static const struct {
    const char *name;
    size_t len;
} member_names[GW__SQS_IN__COUNT] = {
#define GW__SQS_IN_NAME(e, n) [GW__SQS_IN_##e] = {n, sizeof(n) - 1},
    GW__SQS_IN_MEMBERS(GW__SQS_IN_NAME)
#undef GW__SQS_IN_NAME
};

static const struct {
    const char *name;
    size_t len;
} attr_names[GW__SQS_IN_ATTR__COUNT] = {
    [GW__SQS_IN_DATA_TYPE] = {"DataType", 8},
    [GW__SQS_IN_STRING_VALUE] = {"StringValue", 11},
    [GW__SQS_IN_BINARY_VALUE] = {"BinaryValue", 11},
    [GW__SQS_IN_STRING_LIST] = {"StringListValues", 16},
    [GW__SQS_IN_BINARY_LIST] = {"BinaryListValues", 16},
};

#define SEND_MEMBERS                                                                               \
    (BIT(BODY) | BIT(DELAY) | BIT(ATTRS) | BIT(SYS_ATTRS) | BIT(GROUP) | BIT(DEDUP))

/* The request members an action reads; 0 for the cold actions. */
static uint32_t request_members(enum gw_sqs_action a)
{
    switch (a) {
    case GW_SQS_ACT_SEND_MESSAGE:
        return BIT(QUEUE_URL) | SEND_MEMBERS;
    case GW_SQS_ACT_SEND_MESSAGE_BATCH:
    case GW_SQS_ACT_DELETE_MESSAGE_BATCH:
    case GW_SQS_ACT_CHANGE_MESSAGE_VISIBILITY_BATCH:
        return BIT(QUEUE_URL) | BIT(ENTRIES);
    case GW_SQS_ACT_RECEIVE_MESSAGE:
        return BIT(QUEUE_URL) | BIT(MAX_NUMBER) | BIT(VISIBILITY) | BIT(WAIT) | BIT(ATTR_NAMES) |
               BIT(SYS_NAMES) | BIT(FILTERS) | BIT(ATTEMPT_ID);
    case GW_SQS_ACT_DELETE_MESSAGE:
        return BIT(QUEUE_URL) | BIT(RECEIPT);
    case GW_SQS_ACT_CHANGE_MESSAGE_VISIBILITY:
        return BIT(QUEUE_URL) | BIT(RECEIPT) | BIT(VISIBILITY);
    default:
        return 0;
    }
}

/* The members of a batch entry an action reads. */
static uint32_t entry_members(enum gw_sqs_action a)
{
    switch (a) {
    case GW_SQS_ACT_SEND_MESSAGE_BATCH:
        return BIT(ID) | SEND_MEMBERS;
    case GW_SQS_ACT_DELETE_MESSAGE_BATCH:
        return BIT(ID) | BIT(RECEIPT);
    case GW_SQS_ACT_CHANGE_MESSAGE_VISIBILITY_BATCH:
        return BIT(ID) | BIT(RECEIPT) | BIT(VISIBILITY);
    default:
        return 0;
    }
}

bool gw__sqs_hot_action(enum gw_sqs_action a)
{
    return request_members(a) != 0;
}

static enum gw__sqs_in_kind member_kind(int m)
{
    switch (m) {
    case GW__SQS_IN_ENTRIES:
        return GW__SQS_K_ENTRIES;
    case GW__SQS_IN_ATTR_NAMES:
    case GW__SQS_IN_SYS_NAMES:
    case GW__SQS_IN_FILTERS:
        return GW__SQS_K_NAMES;
    case GW__SQS_IN_ATTRS:
    case GW__SQS_IN_SYS_ATTRS:
        return GW__SQS_K_MAP;
    default:
        return GW__SQS_K_SCALAR;
    }
}

/* ---- the gatherer ------------------------------------------------------------- */

void gw__sqs_gather_init(struct gw__sqs_gather *g, struct gw_sqs_dec *d, struct gw__sqs_obj_in *req)
{
    memset(g, 0, sizeof(*g));
    memset(req, 0, sizeof(*req));
    g->d = d;
    g->req = req;
}

/* Room for one more slice in *items (n used of *cap), in the request's
 * blocks: outgrown arrays stay there until the request ends, at most as
 * much again as the last. Returns SL_OK or SL_ENOMEM. */
static int grow(struct gw_sqs_dec *d, struct sl_slice **items, size_t n, size_t *cap)
{
    if (n < *cap) {
        return SL_OK;
    }
    size_t cap2 = *cap > 0 ? 2 * *cap : 16;
    struct sl_slice *p = gw__sqs_dec_alloc(d, cap2, sizeof(*p));
    if (p == NULL) {
        return SL_ENOMEM;
    }
    if (n > 0) {
        memcpy(p, *items, n * sizeof(*p));
    }
    *items = p;
    *cap = cap2;
    return SL_OK;
}

static void *alloc_once(struct gw_sqs_dec *d, void **slot, size_t count, size_t size)
{
    if (*slot == NULL) {
        *slot = gw__sqs_dec_alloc(d, count, size);
    }
    return *slot;
}

static int push(struct gw__sqs_gather *g, enum gw__sqs_in_kind kind, uint32_t members, void *rec,
                struct gw_sqs_val *self)
{
    SL_ASSERT(g->n_frames < GW__SQS_MAX_FRAMES);
    g->frames[g->n_frames++] = (struct gw__sqs_frame){kind, members, rec, self};
    return SL_OK;
}

/* A batch entry's record, cleared for a new value (its arrays kept for
 * reuse, so that an entry given again costs no memory). */
static void entry_reset(struct gw__sqs_obj_in *e, enum gw_sqs_jtype self)
{
    e->self = self;
    memset(e->m, 0, sizeof(e->m));
    e->has_body_md5 = false;
}

/* The container (array or not) that starts at a member's value target,
 * read as kind, whose owner record is rec. */
static int begin_member(struct gw__sqs_gather *g, struct gw_sqs_val *target,
                        enum gw__sqs_in_kind kind, void *rec, int member, bool array)
{
    struct gw_sqs_dec *d = g->d;
    *target = (struct gw_sqs_val){.type = array ? GW_SQS_J_ARRAY : GW_SQS_J_OBJECT};
    struct gw__sqs_obj_in *obj = rec;
    if (kind == GW__SQS_K_ENTRIES && array) {
        void **slot = (void **)&obj->entries;
        if (alloc_once(d, slot, GW_SQS_MAX_BATCH_ENTRIES, sizeof(*obj->entries)) == NULL) {
            return SL_ENOMEM;
        }
        return push(g, GW__SQS_K_ENTRIES, 0, obj, target);
    }
    if (kind == GW__SQS_K_NAMES && array) {
        struct gw__sqs_names_in **names = &obj->names[member - GW__SQS_IN_ATTR_NAMES];
        if (alloc_once(d, (void **)names, 1, sizeof(**names)) == NULL) {
            return SL_ENOMEM;
        }
        (*names)->n = 0;
        (*names)->first_other = GW_SQS_J_ABSENT;
        return push(g, GW__SQS_K_NAMES, 0, *names, target);
    }
    if (kind == GW__SQS_K_MAP && !array) {
        struct gw__sqs_map_in **map = &obj->maps[member - GW__SQS_IN_ATTRS];
        if (alloc_once(d, (void **)map, 1, sizeof(**map)) == NULL) {
            return SL_ENOMEM;
        }
        (*map)->n_kept = 0;
        (*map)->n_extra = 0;
        (*map)->size = 0;
        return push(g, GW__SQS_K_MAP, 0, *map, target);
    }
    if (kind == GW__SQS_K_ATTR && !array) {
        struct gw__sqs_attr_in *attr = rec;
        memset(attr->m, 0, sizeof(attr->m));
        return push(g, GW__SQS_K_ATTR, 0, attr, target);
    }
    if (kind == GW__SQS_K_LIST && array) {
        return push(g, GW__SQS_K_LIST, 0, NULL, target);
    }
    g->skip = 1;
    return SL_OK;
}

/* An element of the list being read: counted, and kept when a string
 * list's. */
static int list_element(struct gw__sqs_gather *g, const struct gw__sqs_frame *f,
                        const struct gw_sqs_val *v)
{
    f->self->n++;
    if (f->kind != GW__SQS_K_NAMES) {
        return SL_OK;
    }
    struct gw__sqs_names_in *names = f->rec;
    if (v->type != GW_SQS_J_STRING) {
        if (names->first_other == GW_SQS_J_ABSENT) {
            names->first_other = v->type;
        }
        return SL_OK;
    }
    if (grow(g->d, &names->items, names->n, &names->cap) != SL_OK) {
        return SL_ENOMEM;
    }
    names->items[names->n++] = v->s;
    return SL_OK;
}

int gw__sqs_gather_value(struct gw__sqs_gather *g, const struct gw_sqs_val *v)
{
    if (g->skip > 0) {
        return SL_OK;
    }
    if (g->n_frames == 0) {
        g->root = *v;
        return SL_OK;
    }
    struct gw__sqs_frame *f = &g->frames[g->n_frames - 1];
    if (f->kind == GW__SQS_K_ENTRIES) {
        size_t i = f->self->n++;
        if (i < GW_SQS_MAX_BATCH_ENTRIES) {
            entry_reset(&((struct gw__sqs_obj_in *)f->rec)->entries[i], v->type);
        }
        return SL_OK;
    }
    if (f->kind == GW__SQS_K_NAMES || f->kind == GW__SQS_K_LIST) {
        return list_element(g, f, v);
    }
    struct gw_sqs_val *target = g->pending;
    g->pending = NULL;
    if (target == NULL) {
        return SL_OK;
    }
    *target = *v;
    if (f->kind == GW__SQS_K_OBJ && g->pending_member == GW__SQS_IN_BODY) {
        /* the MD5 now, while the body's bytes are in cache */
        struct gw__sqs_obj_in *obj = f->rec;
        obj->has_body_md5 = v->type == GW_SQS_J_STRING && !v->has_bad;
        if (obj->has_body_md5) {
            gw_sqs_md5(v->s.p, v->s.n, obj->body_md5);
        }
    }
    return SL_OK;
}

int gw__sqs_gather_begin(struct gw__sqs_gather *g, bool array)
{
    if (g->skip > 0) {
        g->skip++;
        return SL_OK;
    }
    enum gw_sqs_jtype type = array ? GW_SQS_J_ARRAY : GW_SQS_J_OBJECT;
    if (g->n_frames == 0) {
        g->root = (struct gw_sqs_val){.type = type};
        if (array) {
            g->skip = 1;
            return SL_OK;
        }
        return push(g, GW__SQS_K_OBJ, request_members(g->d->r->action), g->req, &g->root);
    }
    struct gw__sqs_frame *f = &g->frames[g->n_frames - 1];
    if (f->kind == GW__SQS_K_ENTRIES) {
        size_t i = f->self->n++;
        if (i >= GW_SQS_MAX_BATCH_ENTRIES) {
            g->skip = 1;
            return SL_OK;
        }
        struct gw__sqs_obj_in *e = &((struct gw__sqs_obj_in *)f->rec)->entries[i];
        entry_reset(e, type);
        if (array) {
            g->skip = 1;
            return SL_OK;
        }
        return push(g, GW__SQS_K_OBJ, entry_members(g->d->r->action), e, NULL);
    }
    if (f->kind == GW__SQS_K_NAMES || f->kind == GW__SQS_K_LIST) {
        struct gw_sqs_val v = {.type = type};
        g->skip = 1;
        return list_element(g, f, &v);
    }
    struct gw_sqs_val *target = g->pending;
    g->pending = NULL;
    if (target == NULL) {
        g->skip = 1;
        return SL_OK;
    }
    if (f->kind == GW__SQS_K_OBJ && g->pending_member == GW__SQS_IN_BODY) {
        ((struct gw__sqs_obj_in *)f->rec)->has_body_md5 = false;
    }
    return begin_member(g, target, g->pending_kind, g->pending_rec, g->pending_member, array);
}

/* The attribute key names in map: a kept one (again), a new kept one, or
 * one past them, only counted. Returns its record or NULL. */
static int map_key(struct gw__sqs_gather *g, struct gw__sqs_map_in *map, struct sl_slice key,
                   struct gw__sqs_attr_in **out)
{
    *out = NULL;
    for (size_t i = 0; i < map->n_kept; i++) {
        if (sl_slice_eq(map->kept[i].name, key)) {
            *out = &map->kept[i];
            return SL_OK;
        }
    }
    if (map->n_kept < GW_SQS_MAX_MESSAGE_ATTRIBUTES) {
        *out = &map->kept[map->n_kept++];
        **out = (struct gw__sqs_attr_in){.name = key};
        return SL_OK;
    }
    if (grow(g->d, &map->extra, map->n_extra, &map->cap_extra) != SL_OK) {
        return SL_ENOMEM;
    }
    map->extra[map->n_extra++] = key;
    return SL_OK;
}

int gw__sqs_gather_key(struct gw__sqs_gather *g, struct sl_slice key)
{
    g->pending = NULL;
    if (g->skip > 0) {
        return SL_OK;
    }
    SL_ASSERT(g->n_frames > 0);
    struct gw__sqs_frame *f = &g->frames[g->n_frames - 1];
    if (f->kind == GW__SQS_K_OBJ) {
        struct gw__sqs_obj_in *obj = f->rec;
        for (int m = 0; m < GW__SQS_IN__COUNT; m++) {
            if ((f->members & (1u << m)) != 0 && key.n == member_names[m].len &&
                memcmp(key.p, member_names[m].name, key.n) == 0) {
                g->pending = &obj->m[m];
                g->pending_kind = member_kind(m);
                g->pending_rec = obj;
                g->pending_member = m;
                break;
            }
        }
    } else if (f->kind == GW__SQS_K_ATTR) {
        struct gw__sqs_attr_in *attr = f->rec;
        for (int m = 0; m < GW__SQS_IN_ATTR__COUNT; m++) {
            if (key.n == attr_names[m].len && memcmp(key.p, attr_names[m].name, key.n) == 0) {
                g->pending = &attr->m[m];
                g->pending_kind = m == GW__SQS_IN_STRING_LIST || m == GW__SQS_IN_BINARY_LIST
                                      ? GW__SQS_K_LIST
                                      : GW__SQS_K_SCALAR;
                g->pending_rec = attr;
                g->pending_member = -1;
                break;
            }
        }
    } else if (f->kind == GW__SQS_K_MAP) {
        struct gw__sqs_attr_in *attr;
        if (map_key(g, f->rec, key, &attr) != SL_OK) {
            return SL_ENOMEM;
        }
        if (attr != NULL) {
            g->pending = &attr->self;
            g->pending_kind = GW__SQS_K_ATTR;
            g->pending_rec = attr;
            g->pending_member = -1;
        }
    }
    return SL_OK;
}

static int slice_cmp(const void *a, const void *b)
{
    const struct sl_slice *x = a, *y = b;
    int c = memcmp(x->p, y->p, SL_MIN(x->n, y->n));
    return c != 0 ? c : (x->n > y->n) - (x->n < y->n);
}

/* Sets a map's size: its kept keys and the distinct ones past them (none
 * of which is a kept one). */
static void map_close(struct gw__sqs_map_in *map)
{
    size_t distinct = 0;
    if (map->n_extra > 0) {
        qsort(map->extra, map->n_extra, sizeof(*map->extra), slice_cmp);
        distinct = 1;
        for (size_t i = 1; i < map->n_extra; i++) {
            distinct += !sl_slice_eq(map->extra[i], map->extra[i - 1]);
        }
    }
    map->size = map->n_kept + distinct;
}

void gw__sqs_gather_end(struct gw__sqs_gather *g)
{
    g->pending = NULL;
    if (g->skip > 0) {
        g->skip--;
        return;
    }
    SL_ASSERT(g->n_frames > 0);
    struct gw__sqs_frame *f = &g->frames[--g->n_frames];
    if (f->kind == GW__SQS_K_MAP) {
        map_close(f->rec);
    }
}

/* ---- the strict path: a jansson document as events ----------------------------- */

static int walk(struct gw__sqs_gather *g, const json_t *v)
{
    int rc = SL_OK;
    if (json_is_object(v) || json_is_array(v)) {
        rc = gw__sqs_gather_begin(g, json_is_array(v));
        /* what the gatherer skips needs no walking */
        if (rc == SL_OK && g->skip == 0 && json_is_object(v)) {
            const char *key;
            size_t key_len;
            json_t *value;
            json_object_keylen_foreach((json_t *)v, key, key_len, value)
            {
                rc = gw__sqs_gather_key(g, (struct sl_slice){key, key_len});
                if (rc == SL_OK) {
                    rc = walk(g, value);
                }
                if (rc != SL_OK) {
                    return rc;
                }
            }
        } else if (rc == SL_OK && g->skip == 0) {
            for (size_t i = 0; i < json_array_size(v) && rc == SL_OK; i++) {
                rc = walk(g, json_array_get(v, i));
            }
        }
        gw__sqs_gather_end(g);
        return rc;
    }
    struct gw_sqs_val x;
    gw__sqs_val_of(v, &x);
    if (x.type == GW_SQS_J_STRING) {
        (void)gw__sqs_text_scan(x.s, &x.has_bad, &x.bad); /* jansson checked the UTF-8 */
    }
    return gw__sqs_gather_value(g, &x);
}

int gw__sqs_hot_decode_doc(struct gw_sqs_dec *d, const json_t *doc)
{
    struct gw__sqs_gather g;
    struct gw__sqs_obj_in req;
    gw__sqs_gather_init(&g, d, &req);
    int rc = walk(&g, doc);
    return rc != SL_OK ? rc : gw__sqs_hot_validate(&g);
}

/* ---- SQS's rules ------------------------------------------------------------------- */

static int member_queue(struct gw_sqs_dec *d, const struct gw__sqs_obj_in *in,
                        struct gw_sqs_queue_ref *q)
{
    return gw__sqs_val_queue(d, &in->m[GW__SQS_IN_QUEUE_URL], q);
}

static bool batch_id_valid(struct sl_slice id)
{
    if (id.n == 0 || id.n > GW_SQS_MAX_BATCH_ID_LEN) {
        return false;
    }
    for (size_t i = 0; i < id.n; i++) {
        char c = id.p[i];
        bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                  c == '-' || c == '_';
        if (!ok) {
            return false;
        }
    }
    return true;
}

/* Entries of a batch: present, 1..10 objects, each with a valid Id, Ids
 * distinct. entry_name words EmptyBatchRequest ("SendMessageBatchRequestEntry"). */
static int batch_entries(struct gw_sqs_dec *d, const struct gw__sqs_obj_in *in,
                         const char *entry_name, struct sl_slice ids[GW_SQS_MAX_BATCH_ENTRIES],
                         size_t *count_out)
{
    bool has;
    const struct gw_sqs_val *arr = &in->m[GW__SQS_IN_ENTRIES];
    int rc = gw__sqs_val_container(arr, GW_SQS_J_ARRAY, "Entries", true, &has, d->err);
    if (rc != SL_OK) {
        return rc;
    }
    size_t n = arr->n;
    if (n == 0) {
        return gw_sqs_err_set(d->err, GW_SQS_E_EMPTY_BATCH_REQUEST,
                              "There should be at least one %s in the request.", entry_name);
    }
    if (n > GW_SQS_MAX_BATCH_ENTRIES) {
        return gw_sqs_err_set(d->err, GW_SQS_E_TOO_MANY_ENTRIES_IN_BATCH_REQUEST,
                              "Maximum number of entries per request are %u. You have sent %zu.",
                              GW_SQS_MAX_BATCH_ENTRIES, n);
    }
    for (size_t i = 0; i < n; i++) {
        const struct gw__sqs_obj_in *e = &in->entries[i];
        if (e->self != GW_SQS_J_OBJECT) {
            return gw__sqs_jtype_error(e->self, "a Structure", d->err);
        }
        rc = gw__sqs_val_string(&e->m[GW__SQS_IN_ID], "Id", false, &ids[i], NULL, d->err);
        if (rc != SL_OK) {
            return rc;
        }
        if (!batch_id_valid(ids[i])) {
            return gw_sqs_err_set(d->err, GW_SQS_E_INVALID_BATCH_ENTRY_ID, NULL);
        }
    }
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < i; j++) {
            if (sl_slice_eq(ids[i], ids[j])) {
                return gw_sqs_err_set(d->err, GW_SQS_E_BATCH_ENTRY_IDS_NOT_DISTINCT,
                                      "Id %.*s repeated.", (int)ids[i].n, ids[i].p);
            }
        }
    }
    *count_out = n;
    return SL_OK;
}

/* The queue and the Entries of a batch, and room for its n typed entries
 * of entry_size bytes in *entries. */
static int batch_start(struct gw_sqs_dec *d, const struct gw__sqs_obj_in *in,
                       const char *entry_name, struct gw_sqs_queue_ref *queue,
                       struct sl_slice ids[GW_SQS_MAX_BATCH_ENTRIES], size_t *n, void **entries,
                       size_t entry_size)
{
    int rc = member_queue(d, in, queue);
    if (rc == SL_OK) {
        rc = batch_entries(d, in, entry_name, ids, n);
    }
    if (rc != SL_OK) {
        return rc;
    }
    *entries = gw__sqs_dec_alloc(d, *n, entry_size);
    return *entries != NULL ? SL_OK : SL_ENOMEM;
}

static int validate_send_message(struct gw_sqs_dec *d, const struct gw__sqs_obj_in *in)
{
    struct gw_sqs_send_message_req *q = &d->r->u.send_message;
    int rc = member_queue(d, in, &q->queue);
    if (rc != SL_OK) {
        return rc;
    }
    /* one message: a content error is the request's error */
    rc = gw__sqs_decode_send_entry(d, in, &q->msg, d->err);
    if (rc == GW__SQS_ENTRY_FAILED) {
        return SL_EINVAL;
    }
    if (rc != SL_OK) {
        return rc;
    }
    if (q->msg.size > GW_SQS_MAX_MESSAGE_BYTES) {
        return gw__sqs_message_too_long(d->err);
    }
    return SL_OK;
}

static int validate_send_message_batch(struct gw_sqs_dec *d, const struct gw__sqs_obj_in *in)
{
    struct gw_sqs_send_message_batch_req *q = &d->r->u.send_message_batch;
    struct sl_slice ids[GW_SQS_MAX_BATCH_ENTRIES];
    size_t n = 0;
    void *entries = NULL;
    int rc = batch_start(d, in, "SendMessageBatchRequestEntry", &q->queue, ids, &n, &entries,
                         sizeof(*q->entries));
    if (rc != SL_OK) {
        return rc;
    }
    q->entries = entries;
    q->entry_count = n;
    for (size_t i = 0; i < n; i++) {
        struct gw_sqs_send_entry *e = &q->entries[i];
        /* an entry's failure is kept in a block only if there is one */
        struct gw_sqs_err fail;
        rc = gw__sqs_decode_send_entry(d, &in->entries[i], e, &fail);
        bool failed = rc == GW__SQS_ENTRY_FAILED;
        if (rc != SL_OK && !failed) {
            return rc;
        }
        if (!failed && e->size > GW_SQS_MAX_MESSAGE_BYTES) {
            gw__sqs_message_too_long(&fail);
            failed = true;
        }
        if (failed) {
            struct gw_sqs_err *kept = gw__sqs_dec_alloc(d, 1, sizeof(*kept));
            if (kept == NULL) {
                return SL_ENOMEM;
            }
            *kept = fail;
            e->fail = kept;
        }
        e->id = ids[i];
        q->total_size += e->size;
    }
    if (q->total_size > GW_SQS_MAX_MESSAGE_BYTES) {
        return gw_sqs_err_set(d->err, GW_SQS_E_BATCH_REQUEST_TOO_LONG,
                              "Batch requests cannot be longer than %u bytes. You have sent %zu "
                              "bytes.",
                              GW_SQS_MAX_MESSAGE_BYTES, q->total_size);
    }
    return SL_OK;
}

/* A list of strings into slices owned by the request (the gathered
 * array itself). */
static int names_list(struct gw_sqs_dec *d, const struct gw__sqs_obj_in *in, int member,
                      struct sl_slice **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    bool has;
    int rc = gw__sqs_val_container(&in->m[member], GW_SQS_J_ARRAY, member_names[member].name, false,
                                   &has, d->err);
    const struct gw__sqs_names_in *names = in->names[member - GW__SQS_IN_ATTR_NAMES];
    if (rc != SL_OK || !has || names == NULL) {
        return rc;
    }
    if (names->first_other != GW_SQS_J_ABSENT) {
        return gw__sqs_jtype_error(names->first_other, "a String", d->err);
    }
    *out = names->items;
    *n = names->n;
    return SL_OK;
}

static int sysattr_names(struct gw_sqs_dec *d, const struct gw__sqs_obj_in *in, int member,
                         uint32_t *mask)
{
    struct sl_slice *names;
    size_t n;
    int rc = names_list(d, in, member, &names, &n);
    if (rc != SL_OK) {
        return rc;
    }
    for (size_t i = 0; i < n; i++) {
        if (sl_slice_eq_cstr(names[i], "All")) {
            *mask |= (1u << GW_SQS_SYSATTR__COUNT) - 1;
            continue;
        }
        /* Unknown names are silently ignored by SQS (research 1.3). */
        for (unsigned k = 0; k < GW_SQS_SYSATTR__COUNT; k++) {
            if (sl_slice_eq_cstr(names[i], gw_sqs_sysattr_name((enum gw_sqs_sysattr)k))) {
                *mask |= 1u << k;
            }
        }
    }
    return SL_OK;
}

static int validate_receive_message(struct gw_sqs_dec *d, const struct gw__sqs_obj_in *in)
{
    struct gw_sqs_receive_message_req *q = &d->r->u.receive_message;
    const struct gw_sqs_val *m = in->m;
    int rc = member_queue(d, in, &q->queue);
    if (rc != SL_OK) {
        return rc;
    }
    bool has_max;
    rc = gw__sqs_val_int(&m[GW__SQS_IN_MAX_NUMBER], "MaxNumberOfMessages", false, 1, 10,
                         "Must be between 1 and 10, if provided.", &q->max_number_of_messages,
                         &has_max, d->err);
    if (rc != SL_OK) {
        return rc;
    }
    if (!has_max) {
        q->max_number_of_messages = 1;
    }
    rc = gw__sqs_val_int(&m[GW__SQS_IN_VISIBILITY], "VisibilityTimeout", false, 0,
                         GW_SQS_MAX_VISIBILITY_TIMEOUT, "Must be >= 0 and <= 43200, if provided.",
                         &q->visibility_timeout, &q->has_visibility_timeout, d->err);
    if (rc != SL_OK) {
        return rc;
    }
    rc = gw__sqs_val_int(&m[GW__SQS_IN_WAIT], "WaitTimeSeconds", false, 0,
                         GW_SQS_MAX_WAIT_TIME_SECONDS, "Must be >= 0 and <= 20, if provided.",
                         &q->wait_time_seconds, &q->has_wait_time_seconds, d->err);
    if (rc != SL_OK) {
        return rc;
    }
    /* AttributeNames (deprecated) and MessageSystemAttributeNames: union (1.3) */
    rc = sysattr_names(d, in, GW__SQS_IN_ATTR_NAMES, &q->system_attributes);
    if (rc == SL_OK) {
        rc = sysattr_names(d, in, GW__SQS_IN_SYS_NAMES, &q->system_attributes);
    }
    if (rc == SL_OK) {
        rc = names_list(d, in, GW__SQS_IN_FILTERS, &q->attribute_filters,
                        &q->attribute_filter_count);
    }
    if (rc == SL_OK) { /* sluice's filtered receive (docs/api.md) */
        rc = gw_sqs_filter_parse(q->attribute_filters, q->attribute_filter_count,
                                 "MessageAttributeNames", &q->filter, d->err);
    }
    if (rc == SL_OK) {
        rc = gw__sqs_val_string(&m[GW__SQS_IN_ATTEMPT_ID], "ReceiveRequestAttemptId", false,
                                &q->receive_request_attempt_id, &q->has_receive_request_attempt_id,
                                d->err);
    }
    if (rc == SL_OK && q->has_receive_request_attempt_id &&
        !gw__sqs_token_valid(q->receive_request_attempt_id)) {
        return gw_sqs_err_set(d->err, GW_SQS_E_INVALID_PARAMETER_VALUE,
                              "Value %.*s for parameter ReceiveRequestAttemptId is invalid. "
                              "Reason: ReceiveRequestAttemptId can only include alphanumeric and "
                              "punctuation characters. 1 to 128 in length.",
                              (int)SL_MIN(q->receive_request_attempt_id.n, 128),
                              q->receive_request_attempt_id.p);
    }
    return rc;
}

static int receipt_handle(struct gw_sqs_dec *d, const struct gw__sqs_obj_in *in,
                          struct sl_slice *out)
{
    return gw__sqs_val_string(&in->m[GW__SQS_IN_RECEIPT], "ReceiptHandle", true, out, NULL, d->err);
}

static int validate_delete_message(struct gw_sqs_dec *d, const struct gw__sqs_obj_in *in)
{
    struct gw_sqs_delete_message_req *q = &d->r->u.delete_message;
    int rc = member_queue(d, in, &q->queue);
    return rc != SL_OK ? rc : receipt_handle(d, in, &q->receipt_handle);
}

static int visibility(struct gw_sqs_dec *d, const struct gw__sqs_obj_in *in, bool required,
                      int32_t *out, bool *has)
{
    return gw__sqs_val_int(&in->m[GW__SQS_IN_VISIBILITY], "VisibilityTimeout", required, 0,
                           GW_SQS_MAX_VISIBILITY_TIMEOUT, "Must be >= 0 and <= 43200, if provided.",
                           out, has, d->err);
}

static int receipt_batch(struct gw_sqs_dec *d, const struct gw__sqs_obj_in *in,
                         const char *entry_name, bool with_visibility,
                         struct gw_sqs_receipt_batch_req *q)
{
    struct sl_slice ids[GW_SQS_MAX_BATCH_ENTRIES];
    size_t n = 0;
    void *entries = NULL;
    int rc = batch_start(d, in, entry_name, &q->queue, ids, &n, &entries, sizeof(*q->entries));
    if (rc != SL_OK) {
        return rc;
    }
    q->entries = entries;
    q->entry_count = n;
    for (size_t i = 0; i < n; i++) {
        struct gw_sqs_receipt_entry *r = &q->entries[i];
        r->id = ids[i];
        rc = receipt_handle(d, &in->entries[i], &r->receipt_handle);
        if (rc == SL_OK && with_visibility) {
            rc = visibility(d, &in->entries[i], false, &r->visibility_timeout,
                            &r->has_visibility_timeout);
        }
        if (rc != SL_OK) {
            return rc;
        }
    }
    return SL_OK;
}

static int validate_change_message_visibility(struct gw_sqs_dec *d, const struct gw__sqs_obj_in *in)
{
    struct gw_sqs_change_message_visibility_req *q = &d->r->u.change_message_visibility;
    int rc = member_queue(d, in, &q->queue);
    if (rc == SL_OK) {
        rc = receipt_handle(d, in, &q->receipt_handle);
    }
    return rc != SL_OK ? rc : visibility(d, in, true, &q->visibility_timeout, NULL);
}

int gw__sqs_hot_validate(struct gw__sqs_gather *g)
{
    struct gw_sqs_dec *d = g->d;
    if (g->root.type != GW_SQS_J_OBJECT) {
        return gw__sqs_jtype_error(g->root.type, "a Structure", d->err);
    }
    const struct gw__sqs_obj_in *in = g->req;
    switch (d->r->action) {
    case GW_SQS_ACT_SEND_MESSAGE:
        return validate_send_message(d, in);
    case GW_SQS_ACT_SEND_MESSAGE_BATCH:
        return validate_send_message_batch(d, in);
    case GW_SQS_ACT_RECEIVE_MESSAGE:
        return validate_receive_message(d, in);
    case GW_SQS_ACT_DELETE_MESSAGE:
        return validate_delete_message(d, in);
    case GW_SQS_ACT_DELETE_MESSAGE_BATCH:
        return receipt_batch(d, in, "DeleteMessageBatchRequestEntry", false,
                             &d->r->u.delete_message_batch);
    case GW_SQS_ACT_CHANGE_MESSAGE_VISIBILITY:
        return validate_change_message_visibility(d, in);
    case GW_SQS_ACT_CHANGE_MESSAGE_VISIBILITY_BATCH:
        return receipt_batch(d, in, "ChangeMessageVisibilityBatchRequestEntry", true,
                             &d->r->u.change_message_visibility_batch);
    default:
        SL_ASSERT(!"a cold action has no gathered form");
        return SL_EINVAL;
    }
}
