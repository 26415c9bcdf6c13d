/*
 * gw_admin_ops.c -- the admin API's operations on the gateway itself:
 * pause and resume a queue (gw_pause.c), reload the configuration with
 * its diagnostics, and take a backup (gw_backup.c) -- on libuv's thread
 * pool, since the copies take as long as the data is large. The answer
 * comes when the manifest is written, or at once (202, "wait": false)
 * with the backup then followed on GET /api/backup: a backup of many GB
 * outlasts any sane request timeout, so sluicectl starts and follows.
 *
 * Reload: the file is validated here, on the loop thread, so that the
 * answer carries every diagnostic; a valid file is then applied by the
 * main thread's SIGHUP path (the one place that swaps configurations and
 * resizes the connection caps), which the route triggers by raising
 * SIGHUP at its own process. The answer says what the file holds; the log says when it went
 * live (normally within a loop turn).
 *
 * Stack: above gw_admin_util.c, gw_admin_read.c (the queue object) and
 * gw_pause.c. Loop threads.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <uv.h>

#include "gw_admin_routes.h"
#include "gw_backup.h"
#include "gw_act.h"

/* ---- pause / resume ------------------------------------------------------------- */

/* The answer: the queue as it is now. */
static void answer_paused(struct gw_admin_req *r, uint64_t queue_id)
{
    json_t *o = gw__admin_queue_json(r, queue_id, false);
    if (o == NULL) {
        gw__admin_fail_storage(r, SL_ENOTFOUND, "The queue");
        return;
    }
    gw__admin_json(r, 200, o);
}

/* A cluster's pause, committed (or not) by the catalog's leader. */
static void pause_replicated(struct part_cookie cookie, int status, const struct part_result *res)
{
    struct gw_admin_req *r = cookie.ptr;
    if (status != SL_OK) {
        gw__admin_fail_storage(r, status, "The queue");
        return;
    }
    answer_paused(r, res->queue != NULL ? res->queue->id : cookie.id);
}

static void set_pause(struct gw_admin_req *r, bool pause)
{
    static const char *const fields[] = {"enqueue", "dequeue", NULL};
    struct gw_queue q;
    bool enq, deq;
    if (gw__admin_parse_body(r, fields) != SL_OK) {
        return;
    }
    /* No field: both directions; otherwise only those set true. */
    bool named = json_object_size(r->body) > 0;
    if (gw__admin_body_bool(r, "enqueue", !named, &enq) != SL_OK ||
        gw__admin_body_bool(r, "dequeue", !named, &deq) != SL_OK ||
        gw__admin_queue(r, r->seg[1], r->seg[2], &q) != SL_OK) {
        return;
    }
    unsigned which = (enq ? GW_PAUSE_ENQUEUE : 0u) | (deq ? GW_PAUSE_DEQUEUE : 0u);
    unsigned before, after;
    if (gw__pause_replicated(r->api)) {
        /* Every node must hold it: the replicated catalog's, through its
         * leader, answered once a majority holds it. */
        before = gw__pause_flags(r->api, q.id);
        after = pause ? before | which : before & ~which;
        snprintf(r->detail, sizeof r->detail, "queue=%s/%s paused=%s->%s", q.tenant, q.name,
                 gw__pause_name(before), gw__pause_name(after));
        int rc = after == before ? SL_OK
                                 : part_queue_set_pause(r->l->base.part, q.id, after,
                                                        (struct part_cookie){.ptr = r, .id = q.id},
                                                        pause_replicated);
        if (after == before) {
            answer_paused(r, q.id);
        } else if (rc != SL_OK) {
            gw__admin_fail_storage(r, rc, "The queue");
        }
        return;
    }
    int rc = gw__pause_set(r->api, q.id, which, pause, &before, &after);
    snprintf(r->detail, sizeof r->detail, "queue=%s/%s paused=%s->%s", q.tenant, q.name,
             gw__pause_name(before), gw__pause_name(after));
    if (rc != SL_OK) {
        gw__admin_fail(r, 500, "InternalError",
                       "The pause could not be recorded durably (ops.db); nothing changed.");
        return;
    }
    answer_paused(r, q.id);
}

void gw__admin_pause(struct gw_admin_req *r)
{
    set_pause(r, true);
}

void gw__admin_resume(struct gw_admin_req *r)
{
    set_pause(r, false);
}

/* ---- reload ------------------------------------------------------------------------ */

void gw__admin_reload(struct gw_admin_req *r)
{
    if (gw__admin_parse_body(r, NULL) != SL_OK) {
        return;
    }
    const char *path = r->api->config_path;
    if (path == NULL) {
        gw__admin_fail(r, 409, "Conflict",
                       "The gateway runs the embedded default configuration: there is no file "
                       "to re-read.");
        return;
    }
    struct cfg_snapshot *next = NULL;
    struct cfg_diags diags = {0};
    int rc = cfg_load_file(path, &next, &diags);
    json_t *list = json_array();
    for (size_t i = 0; i < diags.count; i++) {
        json_array_append_new(list, json_string(diags.items[i].text));
    }
    cfg_diags_free(&diags);
    json_t *restart = json_array();
    if (rc == 0) {
        char text[2048];
        if (cfg_restart_only_changes(r->snap, next, text, sizeof text) > 0) {
            /* one sentence per key, joined by "; " */
            for (char *at = text; at != NULL && *at != '\0';) {
                char *end = strstr(at, "; ");
                if (end != NULL) {
                    *end = '\0';
                }
                json_array_append_new(restart, json_string(at));
                at = end != NULL ? end + 2 : NULL;
            }
        }
        cfg_snapshot_unref(next);
        /* The main thread applies it (gw_main.c's SIGHUP path). */
        kill(getpid(), SIGHUP);
    }
    snprintf(r->detail, sizeof r->detail, "file=%s ok=%d diagnostics=%zu", path, rc == 0,
             json_array_size(list));
    gw__admin_json(r, 200,
                   json_pack("{s:b, s:s, s:o, s:o}", "ok", rc == 0, "file", path, "diagnostics",
                             list, "restart_needed", restart));
}

/* ---- backup ---------------------------------------------------------------------- */

/* A backup on the thread pool. r is the request waiting for its answer
 * ("wait": true), or NULL when it was answered 202 at once and the
 * outcome is read from GET /api/backup. */
struct backup_job {
    uv_work_t work;
    struct gw_api *api;
    struct gw_admin_req *r;
    json_t *manifest;
    int status;
    char err[512];
};

static void backup_work(uv_work_t *w)
{
    struct backup_job *j = w->data;
    j->status = gw__backup_run(j->api, &j->manifest, j->err, sizeof j->err);
}

static void backup_done(uv_work_t *w, int status)
{
    (void)status;
    struct backup_job *j = w->data;
    struct gw_admin_req *r = j->r;
    if (r == NULL) {
        json_decref(j->manifest);
    } else if (j->status == SL_OK) {
        json_t *st = gw__backup_status();
        gw__admin_json(
            r, 200,
            json_pack("{s:O, s:o}", "dir", json_object_get(st, "dir"), "manifest", j->manifest));
        json_decref(st);
    } else if (j->status == SL_ECLOSED) {
        gw__admin_fail(r, 503, "ServiceUnavailable",
                       "The gateway is shutting down: the backup was stopped and its partial "
                       "copy removed.");
    } else {
        gw__admin_fail(r, 500, "InternalError",
                       "The backup failed: %s. Its partial copy is removed.", j->err);
    }
    free(j);
}

void gw__admin_backup(struct gw_admin_req *r)
{
    static const char *const fields[] = {"dir", "wait", NULL};
    bool wait;
    if (gw__admin_parse_body(r, fields) != SL_OK ||
        gw__admin_body_bool(r, "wait", true, &wait) != SL_OK) {
        return;
    }
    const char *dir = json_string_value(json_object_get(r->body, "dir"));
    if (dir == NULL || dir[0] != '/') {
        gw__admin_fail(r, 400, "BadRequest",
                       "Field \"dir\" must be an absolute path on the gateway's host.");
        return;
    }
    snprintf(r->detail, sizeof r->detail, "dir=%s", dir);
    char err[512];
    uint64_t id = 0;
    int rc = gw__backup_begin(dir, &id, err, sizeof err);
    if (rc == SL_EBUSY) {
        gw__admin_fail(r, 409, "Conflict", "%s.", err);
        return;
    }
    if (rc == SL_ECLOSED) {
        gw__admin_fail(r, 503, "ServiceUnavailable", "The gateway is shutting down.");
        return;
    }
    if (rc != SL_OK) {
        gw__admin_fail(r, 400, "BadRequest", "%s.", err);
        return;
    }
    struct backup_job *j = sl_xcalloc(1, sizeof *j);
    j->api = r->api;
    j->r = wait ? r : NULL;
    j->work.data = j;
    if (uv_queue_work(r->l->base.loop, &j->work, backup_work, backup_done) != 0) {
        free(j);
        gw__backup_abandon("the gateway is shutting down");
        gw__admin_fail(r, 503, "ServiceUnavailable", "The gateway is shutting down.");
        return;
    }
    if (!wait) {
        /* the outcome is GET /api/backup's to tell (sluicectl follows it) */
        gw__admin_json(r, 202, gw__backup_status());
    }
}

void gw__admin_backup_status(struct gw_admin_req *r)
{
    gw__admin_json(r, 200, gw__backup_status());
}
