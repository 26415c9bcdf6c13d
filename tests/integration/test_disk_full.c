/*
 * test_disk_full.c -- a real full disk, end to end: the real sluiced runs
 * with its data_dir on a small tmpfs this test mounts (as root; skipped,
 * passing, where mounting is not permitted), the low-disk watermark off
 * and durability fsync, so that SQLite itself hits SQLITE_FULL:
 *  - sends go through until one answers a retryable 503
 *    ServiceUnavailable, never a 500 and never a 200 that was not stored;
 *  - while the disk is full the counts are right, receives return the
 *    stored messages, /healthz answers and no partition stops;
 *  - deletes give space back and sends work again without a restart;
 *  - after SIGTERM and a restart on the same directory exactly the
 *    acknowledged and not deleted messages are there;
 *  - full again, it restarts on the full disk and serves what it holds.
 * The harness's own temp dir keeps the configuration and the log
 * (SLUICE_IT_KEEP=1 keeps it); the tmpfs is always unmounted at exit.
 *
 * What makes it work (docs/partitions.md, "A full disk is transient"):
 * message bodies live apart from the rows a lease rewrites, checkpoints
 * come sooner as free space shrinks, and a space reserve given back at the
 * first SQLITE_FULL lets the last checkpoint run.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "it_harness.h"
#include "it_sqs.h"

#define TMPFS_SIZE "size=8m"
#define BODY_LEN ((size_t)32 * 1024)
#define MAX_SENDS 2000
#define MAX_MSGS (MAX_SENDS + 64)
#define FULL_MESSAGE "The disk is full or nearly full; retry later."

struct msg {
    char id[64];
    int idx; /* the number in the body, "m%05d:" */
    bool deleted;
    bool seen; /* received after the restart */
};

static struct it_server srv;
static char mnt[64];
static bool mounted;
static struct msg msgs[MAX_MSGS];
static size_t n_msgs;
static char body[BODY_LEN + 1];

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Runs at every exit, IT_REQUIRE's included: the server must be gone
 * before the tmpfs can be unmounted. */
static void cleanup(void)
{
    it_server_cleanup(&srv);
    if (mounted) {
        if (umount2(mnt, 0) != 0 && umount2(mnt, MNT_DETACH) != 0)
            fprintf(stderr, "it: could not unmount %s: %s\n", mnt, strerror(errno));
        mounted = false;
    }
    if (mnt[0] != '\0')
        rmdir(mnt);
}

/* Replaces the first occurrence of from in buf by to. */
static bool replace(char *buf, size_t cap, const char *from, const char *to)
{
    char *p = strstr(buf, from);
    size_t lf = strlen(from), lt = strlen(to), rest = strlen(p != NULL ? p + lf : "");
    if (p == NULL || strlen(buf) - lf + lt >= cap)
        return false;
    memmove(p + lt, p + lf, rest + 1);
    for (size_t i = 0; i < lt; i++) /* into the middle of buf: no terminator */
        p[i] = to[i];
    return true;
}

static struct msg *find(const char *id)
{
    for (size_t i = 0; i < n_msgs; i++) {
        if (strcmp(msgs[i].id, id) == 0)
            return &msgs[i];
    }
    return NULL;
}

static size_t live_count(void)
{
    size_t n = 0;
    for (size_t i = 0; i < n_msgs; i++)
        n += !msgs[i].deleted;
    return n;
}

/* A 32 KiB body numbered idx, its filler varying with idx. */
static void make_body(int idx)
{
    int n = snprintf(body, sizeof(body), "m%05d:", idx);
    unsigned x = 2463534242u ^ (unsigned)idx * 2654435761u;
    for (size_t i = (size_t)n; i < BODY_LEN; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        body[i] = (char)('a' + x % 26);
    }
    body[BODY_LEN] = '\0';
}

/* A 503 must be SQS's retryable ServiceUnavailable with the disk message. */
static void check_full_reply(const struct it_reply *r, const char *what)
{
    IT_CHECK(r->status == 503);
    if (r->status != 503) {
        fprintf(stderr, "%s answered %ld: %s\n", what, r->status,
                r->body != NULL ? r->body : "(no body)");
        return;
    }
    IT_STREQ(r->query_error, "ServiceUnavailable;Receiver");
    IT_STREQ(it_str(r, "message"), FULL_MESSAGE);
}

/* SendMessage of message number idx. Returns the status (0: none); a 200
 * is recorded as acknowledged. */
static long send_numbered(const char *url, int idx)
{
    make_body(idx);
    struct it_reply r =
        it_call(&srv, "SendMessage", json_pack("{s:s, s:s}", "QueueUrl", url, "MessageBody", body));
    long status = r.status;
    if (status == 200) {
        const char *id = it_str(&r, "MessageId");
        char md5[33];
        it_md5_hex(body, BODY_LEN, md5);
        IT_STREQ(it_str(&r, "MD5OfMessageBody"), md5);
        IT_CHECK(id != NULL && strlen(id) < sizeof(msgs[0].id) && find(id) == NULL);
        if (id != NULL && strlen(id) < sizeof(msgs[0].id) && n_msgs < MAX_MSGS) {
            snprintf(msgs[n_msgs].id, sizeof(msgs[0].id), "%s", id);
            msgs[n_msgs].idx = idx;
            n_msgs++;
        }
    } else {
        check_full_reply(&r, "SendMessage");
    }
    it_reply_free(&r);
    return status;
}

/* Checks a received message against what was sent; returns its record. */
static struct msg *check_received(const json_t *m)
{
    const char *id = it_jstr(m, "MessageId");
    const char *b = it_jstr(m, "Body");
    struct msg *g = id != NULL ? find(id) : NULL;
    IT_CHECK(g != NULL);
    if (g == NULL) {
        fprintf(stderr, "received a message never acknowledged: %s\n", id ? id : "(no id)");
        return NULL;
    }
    make_body(g->idx);
    IT_CHECK(b != NULL && strcmp(b, body) == 0);
    return g;
}

/* DeleteMessage, retried while the WAL cannot grow (503). */
static bool delete_handle(const char *url, const char *handle)
{
    for (int attempt = 0; attempt < 50; attempt++) {
        struct it_reply d =
            it_call(&srv, "DeleteMessage",
                    json_pack("{s:s, s:s}", "QueueUrl", url, "ReceiptHandle", handle));
        long status = d.status;
        if (status != 200)
            check_full_reply(&d, "DeleteMessage");
        it_reply_free(&d);
        if (status == 200)
            return true;
        if (status != 503)
            return false;
        sleep_ms(100);
    }
    return false;
}

/* Sends numbered messages until one answers 503; false if none did. */
static bool fill_disk(const char *url, int *next_idx)
{
    for (int i = 0; i < MAX_SENDS; i++) {
        long status = send_numbered(url, (*next_idx)++);
        if (status != 200)
            return status == 503;
    }
    return false;
}

/* Checks and deletes every message r received, each of which must be one
 * of msgs[from..] and not deleted yet; returns how many it deleted. */
static size_t delete_received(const char *url, const struct it_reply *r, size_t from)
{
    size_t n = 0;
    for (size_t i = 0; i < it_message_count(r); i++) {
        const json_t *m = json_array_get(it_messages(r), i);
        struct msg *g = check_received(m);
        IT_CHECK(g == NULL || (g >= &msgs[from] && !g->deleted));
        bool ok = delete_handle(url, it_jstr(m, "ReceiptHandle"));
        IT_CHECK(ok);
        if (ok && g != NULL && !g->deleted) {
            g->deleted = true;
            n++;
        }
    }
    return n;
}

/* Receives (VisibilityTimeout 120) and deletes every visible message,
 * each of which must be one of msgs[from..] and not deleted yet; returns
 * how many. */
static size_t drain_from(const char *url, size_t from)
{
    size_t n = 0;
    for (int round = 0, busy = 0; round < 400 && busy < 50; round++) {
        struct it_reply r = it_receive(
            &srv, url,
            json_pack("{s:i, s:i}", "MaxNumberOfMessages", 10, "VisibilityTimeout", 120));
        long status = r.status;
        size_t count = status == 200 ? it_message_count(&r) : 0;
        if (status != 200)
            check_full_reply(&r, "ReceiveMessage");
        if (count > 0)
            n += delete_received(url, &r, from);
        it_reply_free(&r);
        if (status == 200 && count == 0)
            break;
        if (status != 200 && status != 503)
            break;
        busy = status == 503 ? busy + 1 : 0;
        if (status == 503)
            sleep_ms(100);
    }
    return n;
}

static bool mount_tmpfs(void)
{
    snprintf(mnt, sizeof(mnt), "/tmp/sluice-tmpfs-XXXXXX");
    if (mkdtemp(mnt) == NULL) {
        mnt[0] = '\0';
        printf("skipped: cannot mount a tmpfs here (mkdtemp: %s)\n", strerror(errno));
        return false;
    }
    if (mount("tmpfs", mnt, "tmpfs", MS_NOSUID | MS_NODEV, TMPFS_SIZE) != 0) {
        printf("skipped: cannot mount a tmpfs here (mount: %s)\n", strerror(errno));
        return false;
    }
    mounted = true;
    return true;
}

int main(void)
{
    atexit(cleanup);
    if (!mount_tmpfs()) {
        it_passed++; /* not permitted here: a pass, not a failure */
        return it_summary();
    }

    /* The harness writes data_dir and durability itself: start once to get
     * the directory and port, then restart on the tmpfs with fsync. */
    struct it_options opt = {.extra_yaml = "server:\n  min_free_disk_bytes: 0\n"};
    IT_REQUIRE(it_server_start(&srv, &opt) == 0);
    IT_REQUIRE(it_server_stop(&srv) == 0);
    char yaml[8192], from[400], to[400];
    it_config_yaml(&srv, &opt, yaml, sizeof(yaml));
    snprintf(from, sizeof(from), "data_dir: %s\n", srv.data_dir);
    snprintf(to, sizeof(to), "data_dir: %s\n", mnt);
    IT_REQUIRE(replace(yaml, sizeof(yaml), from, to));
    IT_REQUIRE(replace(yaml, sizeof(yaml), "durability: os\n", "durability: fsync\n"));
    IT_REQUIRE(strstr(yaml, "partitions: 2\n") != NULL);
    IT_REQUIRE(it_server_write_config(&srv, yaml) == 0);
    IT_REQUIRE(it_server_restart(&srv) == 0);

    char *url = it_create_queue(&srv, "full", NULL);
    IT_REQUIRE(url != NULL);

    /* Fill the disk. */
    int next_idx = 0;
    IT_REQUIRE(fill_disk(url, &next_idx));
    size_t acked_full = n_msgs;
    printf("disk full after %zu acknowledged sends\n", acked_full);
    IT_CHECK(acked_full > 10);
    IT_CHECK(it_log_contains(&srv, "the disk is full"));

    /* While full: still refused, counts right, receives work, healthy. */
    IT_CHECK(send_numbered(url, next_idx++) == 503);
    IT_CHECK(it_healthz(&srv));
    IT_CHECK(it_queue_attr_int(&srv, url, "ApproximateNumberOfMessages") == (long long)acked_full);
    {
        /* VisibilityTimeout 0: the messages stay visible for what follows. */
        struct it_reply r = it_receive(
            &srv, url, json_pack("{s:i, s:i}", "MaxNumberOfMessages", 10, "VisibilityTimeout", 0));
        IT_OK(&r);
        IT_CHECK(it_message_count(&r) > 0);
        for (size_t i = 0; i < it_message_count(&r); i++)
            check_received(json_array_get(it_messages(&r), i));
        it_reply_free(&r);
    }
    IT_CHECK(it_healthz(&srv));

    /* Free space: receive and delete about half of them. */
    size_t deleted = 0, target = acked_full / 2;
    int busy = 0; /* consecutive 503 receives, bounded at 5 s */
    for (int round = 0; round < 400 && deleted < target && busy < 50; round++) {
        struct it_reply r = it_receive(
            &srv, url,
            json_pack("{s:i, s:i}", "MaxNumberOfMessages", 10, "VisibilityTimeout", 120));
        if (r.status != 200) {
            check_full_reply(&r, "ReceiveMessage");
            long status = r.status;
            it_reply_free(&r);
            if (status != 503)
                break;
            busy++;
            sleep_ms(100);
            continue;
        }
        busy = 0;
        IT_CHECK(it_message_count(&r) > 0);
        if (it_message_count(&r) == 0) {
            fprintf(stderr, "empty receive with %zu messages stored\n", live_count());
            it_reply_free(&r);
            break;
        }
        deleted += delete_received(url, &r, 0);
        it_reply_free(&r);
    }
    IT_CHECK(deleted >= target);
    printf("deleted %zu of %zu\n", deleted, acked_full);
    IT_CHECK(it_queue_attr_int(&srv, url, "ApproximateNumberOfMessages") ==
             (long long)live_count());

    /* Space is back: sends work again, without a restart. */
    int resumed = 0;
    for (int attempt = 0; attempt < 100 && resumed < 5; attempt++) {
        long status = send_numbered(url, next_idx++);
        if (status == 200) {
            resumed++;
        } else if (status == 503) {
            sleep_ms(100);
        } else {
            break;
        }
    }
    IT_CHECK(resumed == 5);
    IT_CHECK(it_healthz(&srv));
    IT_CHECK(it_queue_attr_int(&srv, url, "ApproximateNumberOfMessages") ==
             (long long)live_count());
    /* No partition took the full disk for a fatal storage error. */
    IT_CHECK(!it_log_contains(&srv, "stopped after a storage error"));

    /* A clean stop and a restart on the same directory keep exactly the
     * acknowledged, not deleted messages. */
    IT_CHECK(it_server_stop(&srv) == 0);
    IT_REQUIRE(it_server_restart(&srv) == 0);
    size_t want = live_count();
    IT_CHECK(it_queue_attr_int(&srv, url, "ApproximateNumberOfMessages") == (long long)want);
    size_t got = 0;
    for (int round = 0, empty = 0; round < 400 && got < want && empty < 3; round++) {
        struct it_reply r = it_receive(&srv, url,
                                       json_pack("{s:i, s:i, s:i}", "MaxNumberOfMessages", 10,
                                                 "VisibilityTimeout", 300, "WaitTimeSeconds", 1));
        IT_OK(&r);
        empty = it_message_count(&r) == 0 ? empty + 1 : 0;
        for (size_t i = 0; i < it_message_count(&r); i++) {
            struct msg *g = check_received(json_array_get(it_messages(&r), i));
            if (g == NULL)
                continue;
            IT_CHECK(!g->deleted);
            IT_CHECK(!g->seen);
            if (g->deleted)
                fprintf(stderr, "deleted message %s (m%05d) came back\n", g->id, g->idx);
            if (!g->deleted && !g->seen)
                got++;
            g->seen = true;
        }
        long status = r.status;
        it_reply_free(&r);
        if (status != 200)
            break;
    }
    IT_CHECK(got == want);
    for (size_t i = 0; i < n_msgs; i++) {
        if (!msgs[i].deleted && !msgs[i].seen)
            fprintf(stderr, "acknowledged message %s (m%05d) is missing\n", msgs[i].id,
                    msgs[i].idx);
    }
    printf("after the restart: %zu of %zu messages back\n", got, want);

    /* Full again, then a restart on the full disk: every partition opens
     * and serves, the counts are right, and what was sent since can be
     * received and deleted. */
    size_t before = n_msgs;
    IT_REQUIRE(fill_disk(url, &next_idx));
    size_t fresh = n_msgs - before;
    printf("full again after %zu more sends\n", fresh);
    IT_CHECK(it_server_stop(&srv) == 0);
    IT_REQUIRE(it_server_restart(&srv) == 0);
    IT_CHECK(it_healthz(&srv));
    IT_CHECK(it_queue_attr_int(&srv, url, "ApproximateNumberOfMessages") == (long long)fresh);
    IT_CHECK(it_queue_attr_int(&srv, url, "ApproximateNumberOfMessagesNotVisible") ==
             (long long)got);
    size_t drained = drain_from(url, before);
    IT_CHECK(drained == fresh);
    printf("after a restart on the full disk: %zu of %zu received and deleted\n", drained, fresh);
    IT_CHECK(!it_log_contains(&srv, "unusable"));
    IT_CHECK(!it_log_contains(&srv, "stopped after a storage error"));

    free(url);
    IT_CHECK(it_server_stop(&srv) == 0);
    return it_summary();
}
