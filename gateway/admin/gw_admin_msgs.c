/*
 * gw_admin_msgs.c -- the admin API's message routes: peek (read without
 * leasing, part_peek), purge, and deleting or moving one message an
 * operator picked from a peek (part_remove, part_move of one row).
 *
 * A peeked message is named by its ref, "PARTITION-SEQUENCE": the row
 * that stores it. Rows are never reused (AUTOINCREMENT), so a stale ref
 * finds nothing rather than another message; and only a READY row is
 * deleted or moved, never one a consumer holds.
 *
 * Stack: above gw_admin_util.c and gw_attrs.c. Loop threads; the peek's
 * reads run on libuv's thread pool and answer on the loop, the writes
 * complete on the loop.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include "gw_admin_routes.h"
#include "gw_act.h"

/* ---- peek ------------------------------------------------------------------------ */

#define PEEK_DEFAULT 10

/* A string of user data: JSON text when it is UTF-8, else base64 under
 * key_b64 (a body sent through the SQS API is always UTF-8; the fallback
 * keeps a damaged row visible rather than failing the page). */
static void set_text(json_t *o, const char *key, const char *key_b64, struct sl_slice v)
{
    json_t *s = json_stringn(v.p, v.n);
    if (s != NULL) {
        json_object_set_new(o, key, s);
        return;
    }
    char *b64 = sl_xmalloc(sl_base64_encoded_len(v.n) + 1);
    sl_base64_encode((const uint8_t *)v.p, v.n, b64);
    json_object_set_new(o, key_b64, json_string(b64));
    free(b64);
}

static json_t *message_attributes_json(struct sl_slice blob)
{
    json_t *o = json_object();
    struct gw_sqs_msg_attr a[GW_SQS_MAX_MESSAGE_ATTRIBUTES];
    int n = gw__attrs_decode(blob, a, GW_SQS_MAX_MESSAGE_ATTRIBUTES);
    for (int i = 0; i < n; i++) {
        json_t *v = json_object();
        set_text(v, "DataType", "DataType", a[i].data_type);
        if (a[i].type == GW_SQS_ATTR_BINARY) {
            char *b64 = sl_xmalloc(sl_base64_encoded_len(a[i].value.n) + 1);
            sl_base64_encode((const uint8_t *)a[i].value.p, a[i].value.n, b64);
            json_object_set_new(v, "BinaryValue", json_string(b64));
            free(b64);
        } else {
            set_text(v, "StringValue", "StringValueBase64", a[i].value);
        }
        char *name = sl_xmalloc(a[i].name.n + 1);
        memcpy(name, a[i].name.p, a[i].name.n);
        name[a[i].name.n] = '\0';
        json_object_set_new(o, name, v);
        free(name);
    }
    return o;
}

/* SQS's system attributes of a stored message, as a receive would show
 * them, except that nothing here counts as a receive. */
static json_t *attributes_json(struct gw_admin_req *r, const struct part_message *m)
{
    json_t *o = json_object();
    char num[32];
    snprintf(num, sizeof num, "%" PRIu64, m->sent_ms);
    json_object_set_new(o, "SentTimestamp", json_string(num));
    snprintf(num, sizeof num, "%u", m->receive_count);
    json_object_set_new(o, "ApproximateReceiveCount", json_string(num));
    if (m->first_receive_ms != 0) {
        snprintf(num, sizeof num, "%" PRIu64, m->first_receive_ms);
        json_object_set_new(o, "ApproximateFirstReceiveTimestamp", json_string(num));
    }
    if (m->group_id != NULL) {
        json_object_set_new(o, "MessageGroupId", json_string(m->group_id));
    }
    struct gw_sqs_msg_attr sys[GW_SYSATTR_MAX];
    int n = gw__attrs_decode(m->sys_attrs, sys, GW_SYSATTR_MAX);
    for (int i = 0; i < n; i++) {
        char *name = sl_xmalloc(sys[i].name.n + 1);
        memcpy(name, sys[i].name.p, sys[i].name.n);
        name[sys[i].name.n] = '\0';
        set_text(o, name, name, sys[i].value);
        free(name);
    }
    if (m->source_queue_id != 0) {
        struct part_queue_info *src = NULL;
        if (part_queue_get(r->api->engine, m->source_queue_id, &src) == SL_OK) {
            char arn[256];
            snprintf(arn, sizeof arn, "arn:aws:sqs:%s:%s:%s", r->snap->region, src->tenant,
                     src->name);
            json_object_set_new(o, "DeadLetterQueueSourceArn", json_string(arn));
            part_queue_info_free(src);
        }
    }
    return o;
}

static json_t *message_json(struct gw_admin_req *r, const struct part_message *m)
{
    char ref[48];
    snprintf(ref, sizeof ref, "%u-%" PRIu64, m->partition, m->sequence);
    json_t *o = json_pack("{s:s, s:s}", "ref", ref, "id", m->message_id);
    set_text(o, "body", "body_base64", m->body);
    json_object_set_new(o, "attributes", attributes_json(r, m));
    json_object_set_new(o, "message_attributes", message_attributes_json(m->attrs));
    json_object_set_new(o, "receive_count", json_integer(m->receive_count));
    json_object_set_new(o, "first_receive_ms", json_integer((json_int_t)m->first_receive_ms));
    json_object_set_new(o, "last_receive_ms", json_integer((json_int_t)m->last_receive_ms));
    json_object_set_new(o, "sent_ms", json_integer((json_int_t)m->sent_ms));
    json_t *source = json_null();
    struct part_queue_info *src = NULL;
    if (m->source_queue_id != 0 &&
        part_queue_get(r->api->engine, m->source_queue_id, &src) == SL_OK) {
        source = json_string(src->name);
        part_queue_info_free(src);
    }
    json_object_set_new(o, "source_queue", source);
    json_object_set_new(o, "group_id", m->group_id ? json_string(m->group_id) : json_null());
    return o;
}

/* The reads of a peek run on libuv's thread pool: a few ms a partition
 * of SQLite I/O that the loop's other exchanges should not wait behind. */
struct peek_job {
    uv_work_t work;
    struct gw_admin_req *r;
    uint64_t queue_id;
    uint32_t max;
    int status;
    uint32_t skipped;
    struct part_peek_list list;
};

static void peek_work(uv_work_t *w)
{
    struct peek_job *j = w->data;
    j->status = part_peek(j->r->api->engine, j->queue_id, j->max, &j->list, &j->skipped);
}

static void peek_done(uv_work_t *w, int status)
{
    (void)status;
    struct peek_job *j = w->data;
    struct gw_admin_req *r = j->r;
    if (j->status != SL_OK) {
        gw__admin_fail_storage(r, j->status, "The queue");
    } else {
        json_t *msgs = json_array();
        for (size_t i = 0; i < j->list.count; i++) {
            json_array_append_new(msgs, message_json(r, &j->list.items[i]));
        }
        gw__admin_json(
            r, 200,
            json_pack("{s:o, s:I}", "messages", msgs, "partitions_unread", (json_int_t)j->skipped));
    }
    part_peek_list_free(&j->list);
    free(j);
}

void gw__admin_peek(struct gw_admin_req *r)
{
    struct gw_queue q;
    if (gw__admin_queue(r, r->seg[1], r->seg[2], &q) != SL_OK) {
        return;
    }
    char buf[16];
    const char *max_text = gw__admin_query(r, "max", buf, sizeof buf);
    long max = PEEK_DEFAULT;
    if (max_text != NULL) {
        char *end;
        max = strtol(max_text, &end, 10);
        if (*max_text == '\0' || *end != '\0' || max < 1 || max > PART_PEEK_MAX) {
            gw__admin_fail(r, 400, "BadRequest", "max must be a whole number from 1 to %d.",
                           PART_PEEK_MAX);
            return;
        }
    }
    struct peek_job *j = sl_xcalloc(1, sizeof *j);
    j->r = r;
    j->queue_id = q.id;
    j->max = (uint32_t)max;
    j->work.data = j;
    if (uv_queue_work(r->l->base.loop, &j->work, peek_work, peek_done) != 0) {
        free(j);
        gw__admin_fail(r, 503, "ServiceUnavailable", "The gateway is shutting down.");
    }
}

/* ---- purge ------------------------------------------------------------------------- */

static void purged(struct part_cookie cookie, int status, const struct part_result *res)
{
    struct gw_admin_req *r = cookie.ptr;
    if (status != SL_OK) {
        gw__admin_fail_storage(r, status, "The queue");
        return;
    }
    snprintf(r->detail, sizeof r->detail, "purged=%" PRIu64, res->purged);
    gw__admin_json(r, 200, json_pack("{s:I}", "purged", (json_int_t)res->purged));
}

void gw__admin_purge(struct gw_admin_req *r)
{
    struct gw_queue q;
    if (gw__admin_parse_body(r, NULL) != SL_OK ||
        gw__admin_queue(r, r->seg[1], r->seg[2], &q) != SL_OK) {
        return;
    }
    int rc = part_purge(r->l->base.part, q.id, (struct part_cookie){.ptr = r}, purged);
    if (rc != SL_OK) {
        gw__admin_fail_storage(r, rc, "The queue");
    }
}

/* ---- one message -------------------------------------------------------------------- */

/* "P-SEQ" into its partition and row. SL_OK, or SL_EINVAL after 400. */
static int parse_ref(struct gw_admin_req *r, const char *ref, uint32_t *partition,
                     uint64_t *sequence)
{
    char *end;
    unsigned long p = strtoul(ref, &end, 10);
    unsigned long long s = 0;
    bool ok = end != ref && *end == '-' && ref[0] >= '0' && ref[0] <= '9';
    if (ok) {
        const char *at = end + 1;
        s = strtoull(at, &end, 10);
        ok = end != at && *end == '\0' && at[0] >= '0' && at[0] <= '9' && s > 0 && s <= INT64_MAX &&
             p < part_engine_partitions(r->api->engine);
    }
    if (!ok) {
        gw__admin_fail(r, 400, "BadRequest",
                       "\"%s\" is not a message ref (PARTITION-SEQUENCE, as a peek shows it).",
                       ref);
        return SL_EINVAL;
    }
    *partition = (uint32_t)p;
    *sequence = (uint64_t)s;
    return SL_OK;
}

/* A one-message write the engine refused. */
static void message_failed(struct gw_admin_req *r, int status)
{
    if (status == SL_ENOTFOUND) {
        gw__admin_fail(r, 404, "NotFound",
                       "Message %s is gone, or not ready (in flight or delayed): only a ready "
                       "message is deleted or moved.",
                       r->seg[4]);
    } else {
        gw__admin_fail_storage(r, status, "The message");
    }
}

static void removed(struct part_cookie cookie, int status, const struct part_result *res)
{
    (void)res;
    struct gw_admin_req *r = cookie.ptr;
    if (status != SL_OK) {
        message_failed(r, status);
        return;
    }
    gw__admin_json(r, 200, json_pack("{s:b}", "deleted", true));
}

void gw__admin_msg_delete(struct gw_admin_req *r)
{
    struct gw_queue q;
    uint32_t p;
    uint64_t seq;
    if (gw__admin_parse_body(r, NULL) != SL_OK ||
        gw__admin_queue(r, r->seg[1], r->seg[2], &q) != SL_OK ||
        parse_ref(r, r->seg[4], &p, &seq) != SL_OK) {
        return;
    }
    snprintf(r->detail, sizeof r->detail, "ref=%s", r->seg[4]);
    int rc = part_remove(r->l->base.part, q.id, p, seq, (struct part_cookie){.ptr = r}, removed);
    if (rc != SL_OK) {
        gw__admin_fail_storage(r, rc, "The queue");
    }
}

static void moved(struct part_cookie cookie, int status, const struct part_result *res)
{
    struct gw_admin_req *r = cookie.ptr;
    if (status == SL_OK && res->moved == 0) {
        status = SL_ENOTFOUND;
    }
    if (status != SL_OK) {
        message_failed(r, status);
        return;
    }
    const char *dest = json_string_value(json_object_get(r->body, "destination"));
    gw__admin_json(r, 200, json_pack("{s:b, s:s}", "moved", true, "destination", dest));
}

void gw__admin_msg_move(struct gw_admin_req *r)
{
    static const char *const fields[] = {"destination", NULL};
    struct gw_queue q, dst;
    uint32_t p;
    uint64_t seq;
    if (gw__admin_parse_body(r, fields) != SL_OK ||
        gw__admin_queue(r, r->seg[1], r->seg[2], &q) != SL_OK ||
        parse_ref(r, r->seg[4], &p, &seq) != SL_OK) {
        return;
    }
    const char *dest = json_string_value(json_object_get(r->body, "destination"));
    char tenant[65], name[GW_SQS_MAX_QUEUE_NAME_LEN + 1];
    if (dest == NULL ||
        gw__admin_split_queue(dest, tenant, sizeof tenant, name, sizeof name) != SL_OK) {
        gw__admin_fail(r, 400, "BadRequest",
                       "Field \"destination\" must be a queue as \"TENANT/QUEUE\".");
        return;
    }
    if (strcmp(tenant, q.tenant) != 0) {
        gw__admin_fail(r, 400, "BadRequest",
                       "A message moves only between queues of one tenant (%s).", q.tenant);
        return;
    }
    if (gw__admin_queue(r, tenant, name, &dst) != SL_OK) {
        return;
    }
    if (dst.id == q.id || dst.cfg.fifo != q.cfg.fifo) {
        gw__admin_fail(r, 400, "BadRequest",
                       "The destination must be another queue of the same type (standard or "
                       "FIFO).");
        return;
    }
    snprintf(r->detail, sizeof r->detail, "ref=%s destination=%s", r->seg[4], dest);
    const struct part_move_req req = {
        .queue_id = q.id,
        .partition = p,
        .dest_queue_id = dst.id,
        .only_sequence = seq,
    };
    int rc = part_move(r->l->base.part, &req, (struct part_cookie){.ptr = r}, moved);
    if (rc != SL_OK) {
        gw__admin_fail_storage(r, rc, "The queue");
    }
}
