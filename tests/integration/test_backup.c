/*
 * test_backup.c -- online backup and restore against the real sluiced:
 *  - a backup taken (POST /api/backup) while a second thread keeps
 *    sending batches holds every message acknowledged before it started
 *    and none deleted before then, checked message by message after
 *    `sluiced --restore` into a fresh data directory;
 *  - queue attributes, a pause and the move-task history (as of the
 *    backup) come back;
 *  - GET /api/backup tells the copies from the hashing of the files for
 *    the manifest (step copying, hashing, done), with the hashing's own
 *    bytes, which end at the manifest's total;
 *  - the manifest lists every file with its size and SHA-256, and
 *    restore refuses a damaged backup, a data directory holding anything
 *    (a stray part-*.db-wal) and a directory without a manifest;
 *  - a restore cut short (a file size limit) leaves no data directory and
 *    no scratch directory behind, and the next one succeeds into an
 *    empty data directory;
 *  - bad input: a relative or non-empty directory, one holding a planted
 *    symlink (not followed), one others may write to (400), and a
 *    tenant's keys (403).
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "it_sqs.h"

#define TOKEN "backup-token_1"
#define KEPT 300   /* sent and kept before the backup */
#define DELETED 60 /* of them, deleted before the backup */

static const char tenants_yaml[] = IT_TENANTS_YAML_WITH_TOKEN(TOKEN);

static struct it_server srv;
static char *queue_url;
static atomic_bool stop_load;
static atomic_int load_sent;

/* POST path with body on the admin listener, with the bearer token, or
 * signed with key (a tenant's: IT_SECRET) when it is not NULL; a backup
 * answers when its copy is done, hence the long timeout. The status; the
 * parsed answer into *out (the caller's) unless out is NULL. */
static long admin_post(const char *path, const char *body, json_t **out, const char *key)
{
    struct it_admin_call call = {.method = "POST",
                                 .path = path,
                                 .body = body,
                                 .token = key == NULL ? TOKEN : NULL,
                                 .key = key,
                                 .secret = key != NULL ? IT_SECRET : NULL,
                                 .timeout_ms = 120000};
    struct it_reply r = it_admin_as(&srv, &call);
    long status = r.status;
    if (out != NULL) {
        *out = json_incref(r.json);
    }
    if (status != 200 && out == NULL) {
        fprintf(stderr, "POST %s: %ld %s\n", path, status, r.body);
    }
    it_reply_free(&r);
    return status;
}

/* Whether doc's member is the string want. */
static bool member_is(const json_t *doc, const char *member, const char *want)
{
    const char *v = it_jstr(doc, member);
    return v != NULL && strcmp(v, want) == 0;
}

/* Whether doc is a backup status whose step and hashing bytes agree: a
 * known step, the hashing's bytes within its total, and none hashed
 * while copying. */
static bool step_consistent(const json_t *doc)
{
    const char *step = it_jstr(doc, "step");
    json_int_t total = json_integer_value(json_object_get(doc, "hash_bytes_total"));
    json_int_t done = json_integer_value(json_object_get(doc, "hash_bytes_done"));
    if (step == NULL || done < 0 || done > total) {
        fprintf(stderr, "backup status without a consistent step: %s %lld/%lld\n",
                step ? step : "(none)", (long long)done, (long long)total);
        return false;
    }
    return member_is(doc, "step", "copying")
               ? done == 0
               : member_is(doc, "step", "hashing") || member_is(doc, "step", "done");
}

/* A backup started with "wait": false and followed: every status names
 * its step, and the finished one has hashed exactly the manifest's
 * bytes. */
static void check_backup_steps(void)
{
    char dir[400], body[512];
    snprintf(dir, sizeof dir, "%s/backup-steps", srv.dir);
    snprintf(body, sizeof body, "{\"dir\":\"%s\",\"wait\":false}", dir);
    json_t *doc = NULL;
    IT_CHECK(admin_post("/api/backup", body, &doc, NULL) == 202);
    IT_CHECK(step_consistent(doc));
    json_int_t id = json_integer_value(json_object_get(doc, "id"));
    json_decref(doc);
    struct it_reply r = {0};
    for (int i = 0; i < 1200; i++) { /* a minute at most */
        it_reply_free(&r);
        r = it_admin(&srv, "GET", "/api/backup", NULL, TOKEN);
        IT_CHECK(r.status == 200 && json_integer_value(json_object_get(r.json, "id")) == id);
        IT_CHECK(step_consistent(r.json));
        if (!member_is(r.json, "state", "running")) {
            break;
        }
        it_sleep_ms(50);
    }
    IT_CHECK(member_is(r.json, "state", "done"));
    IT_CHECK(member_is(r.json, "step", "done"));
    json_int_t sum = 0;
    size_t i;
    json_t *f;
    json_array_foreach(json_object_get(json_object_get(r.json, "manifest"), "files"), i, f)
    {
        sum += json_integer_value(json_object_get(f, "bytes"));
    }
    IT_CHECK(sum > 0);
    IT_CHECK(json_integer_value(json_object_get(r.json, "hash_bytes_total")) == sum);
    IT_CHECK(json_integer_value(json_object_get(r.json, "hash_bytes_done")) == sum);
    it_reply_free(&r);
}

static void *load(void *arg)
{
    (void)arg;
    for (int n = 0; !atomic_load(&stop_load) && n < 2000; n++) {
        json_t *entries = json_array();
        for (int i = 0; i < 10; i++) {
            char id[16], body[32];
            snprintf(id, sizeof id, "e%d", i);
            snprintf(body, sizeof body, "during-%d-%d", n, i);
            json_array_append_new(entries, json_pack("{s:s, s:s}", "Id", id, "MessageBody", body));
        }
        struct it_reply r =
            it_call(&srv, "SendMessageBatch",
                    json_pack("{s:s, s:o}", "QueueUrl", queue_url, "Entries", entries));
        if (r.status == 200) {
            atomic_fetch_add(&load_sent, 10);
        }
        it_reply_free(&r);
    }
    return NULL;
}

/* Receives everything ready in url (visibility long enough to see each
 * once) into a set of bodies: body -> count. */
static json_t *drain_bodies(const char *url)
{
    json_t *seen = json_object();
    for (int empty = 0; empty < 3;) {
        struct it_reply r = it_receive(
            &srv, url,
            json_pack("{s:i, s:i}", "MaxNumberOfMessages", 10, "VisibilityTimeout", 300));
        size_t i;
        json_t *m;
        size_t n = json_array_size(it_messages(&r));
        json_array_foreach(it_messages(&r), i, m)
        {
            const char *b = it_jstr(m, "Body");
            json_t *c = json_object_get(seen, b);
            json_object_set_new(seen, b, json_integer(c != NULL ? json_integer_value(c) + 1 : 1));
        }
        it_reply_free(&r);
        empty = n == 0 ? empty + 1 : 0;
    }
    return seen;
}

/* Entries of dir whose name starts with prefix. */
static int count_prefixed(const char *dir, const char *prefix)
{
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *ent;
    while (d != NULL && (ent = readdir(d)) != NULL) {
        n += strncmp(ent->d_name, prefix, strlen(prefix)) == 0;
    }
    if (d != NULL) {
        closedir(d);
    }
    return n;
}

/* `sluiced args` with files limited to limit bytes: the copy that
 * crosses it fails with EFBIG (SIGXFSZ ignored, as sluiced inherits). */
static int run_limited(const char *args, rlim_t limit, char **err)
{
    struct rlimit before, lim;
    IT_REQUIRE(getrlimit(RLIMIT_FSIZE, &before) == 0);
    lim = before;
    lim.rlim_cur = limit;
    void (*old)(int) = signal(SIGXFSZ, SIG_IGN);
    IT_REQUIRE(setrlimit(RLIMIT_FSIZE, &lim) == 0);
    int rc = it_run_sluiced(args, err);
    IT_REQUIRE(setrlimit(RLIMIT_FSIZE, &before) == 0);
    signal(SIGXFSZ, old);
    return rc;
}

int main(void)
{
    struct it_options opt = {.admin = true, .tenants_yaml = tenants_yaml};
    IT_REQUIRE(it_server_start(&srv, &opt) == 0);
    queue_url = it_create_queue(
        &srv, "keep", json_pack("{s:s, s:s}", "VisibilityTimeout", "45", "DelaySeconds", "0"));
    char *dlq = it_create_queue(&srv, "keep-dlq", NULL);
    IT_REQUIRE(queue_url != NULL && dlq != NULL);
    struct it_reply r =
        it_call(&srv, "SetQueueAttributes",
                json_pack("{s:s, s:{s:s}}", "QueueUrl", queue_url, "Attributes", "RedrivePolicy",
                          "{\"deadLetterTargetArn\":\"arn:aws:sqs:us-east-1:acme:keep-dlq\","
                          "\"maxReceiveCount\":5}"));
    IT_CHECK(r.status == 200);
    it_reply_free(&r);

    /* KEPT messages acknowledged; DELETED of them deleted (acknowledged) */
    for (int i = 0; i < KEPT; i++) {
        char body[32];
        snprintf(body, sizeof body, "before-%d", i);
        free(it_send(&srv, queue_url, body));
    }
    int deleted = 0;
    char gone[DELETED][32];
    while (deleted < DELETED) {
        r = it_receive(&srv, queue_url, json_pack("{s:i}", "MaxNumberOfMessages", 10));
        size_t i;
        json_t *m;
        json_array_foreach(it_messages(&r), i, m)
        {
            if (deleted < DELETED) {
                struct it_reply d =
                    it_call(&srv, "DeleteMessage",
                            json_pack("{s:s, s:s}", "QueueUrl", queue_url, "ReceiptHandle",
                                      it_jstr(m, "ReceiptHandle")));
                IT_CHECK(d.status == 200);
                it_reply_free(&d);
                snprintf(gone[deleted++], sizeof gone[0], "%s", it_jstr(m, "Body"));
            } else {
                struct it_reply v =
                    it_call(&srv, "ChangeMessageVisibility",
                            json_pack("{s:s, s:s, s:i}", "QueueUrl", queue_url, "ReceiptHandle",
                                      it_jstr(m, "ReceiptHandle"), "VisibilityTimeout", 0));
                it_reply_free(&v);
            }
        }
        it_reply_free(&r);
    }
    IT_CHECK(admin_post("/api/queues/acme/keep-dlq/pause", "{\"enqueue\":true}", NULL, NULL) ==
             200);

    /* a move task in the history before the backup (the DLQ is empty:
     * it completes at once) */
    r = it_call(&srv, "StartMessageMoveTask",
                json_pack("{s:s}", "SourceArn", "arn:aws:sqs:us-east-1:acme:keep-dlq"));
    IT_CHECK(r.status == 200);
    it_reply_free(&r);

    /* bad input */
    json_t *doc = NULL;
    IT_CHECK(admin_post("/api/backup", "{\"dir\":\"relative/dir\"}", &doc, NULL) == 400);
    json_decref(doc);
    IT_CHECK(admin_post("/api/backup", "{}", &doc, NULL) == 400);
    json_decref(doc);
    IT_CHECK(admin_post("/api/backup", "{\"dir\":\"/tmp\"}", &doc, NULL) == 400);
    json_decref(doc);
    IT_CHECK(admin_post("/api/backup", "{\"dir\":\"/tmp/x\"}", &doc, IT_KEY) == 403);
    json_decref(doc);
    /* a planted symlink: refused, never written through */
    char planted[400], victim[450], cmd[2048];
    snprintf(planted, sizeof planted, "%s/planted", srv.dir);
    snprintf(victim, sizeof victim, "%s/victim", srv.dir);
    IT_REQUIRE(mkdir(planted, 0700) == 0);
    snprintf(cmd, sizeof cmd, "printf keep > '%s' && ln -s '%s' '%s/manifest'", victim, victim,
             planted);
    IT_REQUIRE(system(cmd) == 0);
    snprintf(cmd, sizeof cmd, "{\"dir\":\"%s\"}", planted);
    IT_CHECK(admin_post("/api/backup", cmd, &doc, NULL) == 400);
    json_decref(doc);
    struct stat vst;
    IT_CHECK(stat(victim, &vst) == 0 && vst.st_size == 4);
    /* an empty directory others may write to */
    snprintf(planted, sizeof planted, "%s/open-dir", srv.dir);
    IT_REQUIRE(mkdir(planted, 0700) == 0 && chmod(planted, 0777) == 0);
    snprintf(cmd, sizeof cmd, "{\"dir\":\"%s\"}", planted);
    IT_CHECK(admin_post("/api/backup", cmd, &doc, NULL) == 400);
    char *said = doc != NULL ? json_dumps(doc, 0) : NULL;
    IT_CHECK(said != NULL && strstr(said, "writable by it alone") != NULL);
    free(said);
    json_decref(doc);

    /* the backup, under load */
    char dir[400], body[512];
    snprintf(dir, sizeof dir, "%s/backup-1", srv.dir);
    snprintf(body, sizeof body, "{\"dir\":\"%s\"}", dir);
    pthread_t th;
    IT_REQUIRE(pthread_create(&th, NULL, load, NULL) == 0);
    while (atomic_load(&load_sent) < 50) {
        struct timespec ts = {0, 5000000};
        nanosleep(&ts, NULL);
    }
    IT_CHECK(admin_post("/api/backup", body, &doc, NULL) == 200);
    atomic_store(&stop_load, true);
    pthread_join(th, NULL);
    json_t *files = json_object_get(json_object_get(doc, "manifest"), "files");
    /* manifest, catalog.db, 2 partitions, ops.db */
    IT_CHECK(json_array_size(files) == 5);
    size_t i, largest = 0;
    json_int_t largest_bytes = 0;
    json_t *f;
    json_array_foreach(files, i, f)
    {
        json_int_t bytes = json_integer_value(json_object_get(f, "bytes"));
        IT_CHECK(strlen(it_jstr(f, "sha256")) == 64 && bytes > 0);
        if (bytes > largest_bytes) {
            largest_bytes = bytes;
            largest = i;
        }
    }
    /* the largest file comes after others: a limit just below it cuts
     * the restore short midway */
    IT_CHECK(largest > 0);
    json_decref(doc);
    IT_CHECK(it_log_contains(&srv, "[audit] principal=admin:bearer route=\"POST /api/backup\" "
                                   "status=200"));
    check_backup_steps();
    int during = atomic_load(&load_sent);
    fprintf(stderr, "sent %d messages while the backup ran\n", during);

    /* a task after the backup: not in it */
    struct timespec pause_ts = {0, 300000000};
    nanosleep(&pause_ts, NULL); /* the first one has completed */
    r = it_call(&srv, "StartMessageMoveTask",
                json_pack("{s:s}", "SourceArn", "arn:aws:sqs:us-east-1:acme:keep-dlq"));
    IT_CHECK(r.status == 200);
    it_reply_free(&r);

    /* restore into a fresh data directory, the old one moved away */
    IT_CHECK(it_server_stop(&srv) == 0);
    snprintf(cmd, sizeof cmd, "mv '%s' '%s.old'", srv.data_dir, srv.data_dir);
    IT_REQUIRE(system(cmd) == 0);
    char args[1024];
    char *err = NULL;
    snprintf(args, sizeof args, "--config '%s' --restore '%s/nothing-here'", srv.config_path,
             srv.dir);
    IT_CHECK(it_run_sluiced(args, &err) == 1);
    free(err);
    /* a damaged copy is refused */
    snprintf(cmd, sizeof cmd, "cp -r '%s' '%s-bad' && printf x >> '%s-bad/part-0001.db'", dir, dir,
             dir);
    IT_REQUIRE(system(cmd) == 0);
    snprintf(args, sizeof args, "--config '%s' --restore '%s-bad'", srv.config_path, dir);
    IT_CHECK(it_run_sluiced(args, &err) == 1);
    IT_CHECK(err != NULL && strstr(err, "does not match the manifest") != NULL);
    free(err);
    /* cut short midway: nothing of it stays */
    snprintf(args, sizeof args, "--config '%s' --restore '%s'", srv.config_path, dir);
    IT_CHECK(run_limited(args, (rlim_t)largest_bytes - 1, &err) == 1);
    IT_CHECK(err != NULL && strstr(err, "File too large") != NULL);
    free(err);
    struct stat dst;
    IT_CHECK(lstat(srv.data_dir, &dst) == -1 && errno == ENOENT);
    const char *base = strrchr(srv.data_dir, '/') + 1;
    char scratch[128];
    snprintf(scratch, sizeof scratch, "%s.restore-", base);
    IT_CHECK(count_prefixed(srv.dir, scratch) == 0);
    /* a data directory holding anything is refused, and left as it is */
    IT_REQUIRE(mkdir(srv.data_dir, 0700) == 0);
    char stray[600];
    snprintf(stray, sizeof stray, "%s/part-0001.db-wal", srv.data_dir);
    FILE *sf = fopen(stray, "w");
    IT_REQUIRE(sf != NULL);
    fclose(sf);
    IT_CHECK(it_run_sluiced(args, &err) == 1);
    IT_CHECK(err != NULL && strstr(err, "is not empty (it holds part-0001.db-wal)") != NULL);
    free(err);
    IT_CHECK(count_prefixed(srv.data_dir, "") == 3); /* ., .., the stray */
    IT_CHECK(count_prefixed(srv.dir, scratch) == 0);
    IT_REQUIRE(unlink(stray) == 0);
    /* into the empty directory it is */
    IT_CHECK(it_run_sluiced(args, &err) == 0);
    free(err);
    IT_CHECK(count_prefixed(srv.dir, scratch) == 0);
    IT_CHECK(it_run_sluiced(args, &err) == 1); /* now occupied */
    IT_CHECK(err != NULL && strstr(err, "is not empty") != NULL);
    free(err);
    IT_REQUIRE(it_server_restart(&srv) == 0);

    /* every acknowledged message from before, none deleted, a bounded
     * number of the ones sent while it ran */
    r = it_call(&srv, "GetQueueAttributes",
                json_pack("{s:s, s:[s]}", "QueueUrl", queue_url, "AttributeNames", "All"));
    json_t *attrs = json_object_get(r.json, "Attributes");
    IT_CHECK(strcmp(it_jstr(attrs, "VisibilityTimeout"), "45") == 0);
    IT_CHECK(strstr(it_jstr(attrs, "RedrivePolicy"), "keep-dlq") != NULL);
    it_reply_free(&r);
    r = it_call(&srv, "GetQueueAttributes",
                json_pack("{s:s, s:[s]}", "QueueUrl", dlq, "AttributeNames", "All"));
    const char *paused = it_jstr(json_object_get(r.json, "Attributes"), "SluicePaused");
    IT_CHECK(paused != NULL && strcmp(paused, "enqueue") == 0);
    if (paused == NULL) {
        fprintf(stderr, "attributes after restore: %s\n", r.body);
    }
    it_reply_free(&r);

    json_t *seen = drain_bodies(queue_url);
    int missing = 0, doubled = 0, back = 0, from_load = 0;
    for (int k = 0; k < KEPT; k++) {
        char b[32];
        snprintf(b, sizeof b, "before-%d", k);
        json_t *c = json_object_get(seen, b);
        bool was_deleted = false;
        for (int d = 0; d < DELETED; d++) {
            was_deleted = was_deleted || strcmp(gone[d], b) == 0;
        }
        if (was_deleted) {
            back += c != NULL;
        } else {
            missing += c == NULL;
            doubled += c != NULL && json_integer_value(c) != 1;
        }
    }
    const char *key;
    json_t *c;
    json_object_foreach(seen, key, c)
    {
        from_load += strncmp(key, "during-", 7) == 0;
    }
    fprintf(stderr, "restored: %d of the load's %d messages\n", from_load, during);
    IT_CHECK(missing == 0);
    IT_CHECK(doubled == 0);
    IT_CHECK(back == 0);
    IT_CHECK(from_load <= during);
    json_decref(seen);

    /* the ops.db of the backup: paused queue (above), the task started
     * before the backup and not the one after */
    struct it_reply tasks = it_admin(&srv, "GET", "/api/redrives", NULL, TOKEN);
    IT_CHECK(tasks.status == 200);
    IT_CHECK(json_array_size(json_object_get(tasks.json, "tasks")) == 1);
    it_reply_free(&tasks);

    free(queue_url);
    free(dlq);
    IT_CHECK(it_server_stop(&srv) == 0);
    it_server_cleanup(&srv);
    return it_summary();
}
