/*
 * test_sqs_fifo_groups.c -- a FIFO message group whose messages sit on
 * two partitions, against the real sluiced over HTTP/2 (P = 2): moves
 * into a FIFO queue happen in place, so a group can end up on its
 * queue's home and on the partition a message was moved in on. Whatever
 * brought it there -- a dead-letter move, the admin API's single-message
 * move, a redrive with a destination, a shard that grew under live groups
 * -- at most one receive may hold a group's messages at a time and the
 * group drains in order; after kill -9 too.
 *
 * Queues of the default DeduplicationScope (queue) live on their name's
 * home; the tests find two names with different homes by sending a probe
 * and reading the partition from its receipt handle (docs/partitions.md,
 * "Receipt handles": a version byte, then the partition, big-endian).
 * Consumers receive concurrently, as streams of one HTTP/2 connection
 * over TLS (this libcurl multiplexes only there).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "it_sqs.h"

static struct it_server srv;

#define ARN(name) "arn:aws:sqs:" IT_REGION ":" IT_TENANT ":" name

static char *fifo_queue(const char *name, const char *policy)
{
    json_t *a = json_pack("{s:s}", "FifoQueue", "true");
    if (policy != NULL) {
        json_object_set_new(a, "RedrivePolicy", json_string(policy));
    }
    return it_create_queue(&srv, name, a);
}

static void fsend(const char *url, const char *body, const char *group)
{
    struct it_reply r = it_call(&srv, "SendMessage",
                                json_pack("{s:s,s:s,s:s,s:s}", "QueueUrl", url, "MessageBody", body,
                                          "MessageGroupId", group, "MessageDeduplicationId", body));
    IT_OK(&r);
    it_reply_free(&r);
}

static struct it_reply receive(const char *url, int max, int vis)
{
    return it_receive(&srv, url,
                      json_pack("{s:i,s:i}", "MaxNumberOfMessages", max, "VisibilityTimeout", vis));
}

static const char *body_of(const struct it_reply *r, size_t i)
{
    return it_jstr(json_array_get(it_messages(r), i), "Body");
}

/* The partition in a receipt handle (URL-safe base64 of version(1) |
 * partition(4, big-endian) | ...), or -1. */
static int handle_partition(const char *h)
{
    static const char alphabet[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    unsigned char bytes[8] = {0};
    for (size_t i = 0; i < 8; i++) { /* 8 characters = 6 bytes */
        const char *c = h != NULL && h[i] != '\0' ? strchr(alphabet, h[i]) : NULL;
        if (c == NULL) {
            return -1;
        }
        unsigned v = (unsigned)(c - alphabet);
        size_t bit = i * 6;
        for (int b = 5; b >= 0; b--, bit++) {
            if (v & (1u << b)) {
                bytes[bit / 8] |= (unsigned char)(0x80u >> (bit % 8));
            }
        }
    }
    return (int)((unsigned)bytes[1] << 24 | (unsigned)bytes[2] << 16 | (unsigned)bytes[3] << 8 |
                 bytes[4]);
}

/* The partition a queue-scope FIFO queue lives on: a probe sent,
 * received and deleted. */
static int home_of(const char *url)
{
    static int probes;
    char body[32];
    snprintf(body, sizeof body, "probe-%d", probes++);
    fsend(url, body, "probe");
    struct it_reply r = receive(url, 1, 30);
    IT_REQUIRE(it_message_count(&r) == 1);
    int p = handle_partition(it_jstr(json_array_get(it_messages(&r), 0), "ReceiptHandle"));
    IT_CHECK(it_delete_received(&srv, url, &r, 0));
    it_reply_free(&r);
    IT_CHECK(p == 0 || p == 1);
    return p;
}

/* A FIFO queue named prefix-N on another partition than `other`. */
static char *queue_away_from(const char *prefix, int other, const char *policy, char *name,
                             size_t cap)
{
    for (int i = 0; i < 64; i++) {
        snprintf(name, cap, "%s-%d.fifo", prefix, i);
        char *url = fifo_queue(name, policy);
        IT_REQUIRE(url != NULL);
        if (home_of(url) != other) {
            return url;
        }
        free(url);
    }
    IT_REQUIRE(!"no queue name found on the other partition");
    return NULL;
}

static void wait_count(const char *url, long long want)
{
    for (int i = 0; i < 300 && it_queue_attr_int(&srv, url, "ApproximateNumberOfMessages") < want;
         i++) {
        it_sleep_ms(10);
    }
    IT_CHECK(it_queue_attr_int(&srv, url, "ApproximateNumberOfMessages") == want);
}

/* Several consumers' receives at once (one message each), as streams of
 * one connection. */
#define CONSUMERS 6

struct consumers {
    const char *url;
    unsigned asked;
    char bodies[CONSUMERS][32];
    char handles[CONSUMERS][128]; /* a receipt handle is 55 characters */
    unsigned got;
};

static bool consumer_next(void *user, struct it_call_spec *call)
{
    struct consumers *c = user;
    if (c->asked == CONSUMERS) {
        return false;
    }
    c->asked++;
    call->action = "ReceiveMessage";
    call->req = json_pack("{s:s,s:i,s:i}", "QueueUrl", c->url, "MaxNumberOfMessages", 1,
                          "VisibilityTimeout", 30);
    return true;
}

static void consumer_done(void *user, void *tag, const struct it_reply *r)
{
    (void)tag;
    struct consumers *c = user;
    IT_OK(r);
    for (size_t i = 0; i < it_message_count(r) && c->got < CONSUMERS; i++, c->got++) {
        json_t *m = json_array_get(it_messages(r), i);
        snprintf(c->bodies[c->got], sizeof c->bodies[0], "%s", it_jstr(m, "Body"));
        snprintf(c->handles[c->got], sizeof c->handles[0], "%s", it_jstr(m, "ReceiptHandle"));
    }
}

/* Drains url's one group with CONSUMERS concurrent receives per round:
 * exactly one of them may get a message (the group's next, in the order
 * of `want`) while the others find the group locked, wherever its other
 * messages are; then the message is deleted and the next round starts. */
static void drain_one_group(const char *url, const char *const *want, size_t nwant)
{
    size_t got = 0;
    for (int round = 0; round < 20 && got < nwant; round++) {
        struct consumers c = {.url = url};
        IT_CHECK(it_call_many(&srv, CONSUMERS, consumer_next, consumer_done, &c) == 0);
        IT_CHECK(c.got == 1);
        for (unsigned i = 0; i < c.got; i++) {
            if (c.got > 1) {
                fprintf(stderr, "round %d: %s in flight beside others\n", round, c.bodies[i]);
            }
            IT_STREQ(c.bodies[i], got < nwant ? want[got] : "(none)");
            got++;
            struct it_reply d =
                it_call(&srv, "DeleteMessage",
                        json_pack("{s:s,s:s}", "QueueUrl", url, "ReceiptHandle", c.handles[i]));
            IT_OK(&d);
            it_reply_free(&d);
        }
        if (c.got == 0) {
            break;
        }
    }
    IT_CHECK(got == nwant);
    struct it_reply r = receive(url, 10, 30);
    IT_CHECK(it_message_count(&r) == 0);
    it_reply_free(&r);
}

/* ---- a dead-letter move into a DLQ on another partition -------------------- */

static void dead_letter_move(void)
{
    char *dlq = fifo_queue("dl-dlq.fifo", NULL);
    IT_REQUIRE(dlq != NULL);
    int home = home_of(dlq);
    char name[64];
    char *src = queue_away_from(
        "dl-src", home,
        "{\"deadLetterTargetArn\":\"" ARN("dl-dlq.fifo") "\",\"maxReceiveCount\":\"1\"}", name,
        sizeof name);
    fsend(src, "A", "g");
    struct it_reply r = receive(src, 10, 0); /* once; visible again at once */
    IT_CHECK(it_message_count(&r) == 1);
    it_reply_free(&r);
    r = receive(src, 10, 30); /* over the count: it moves, in place */
    IT_CHECK(it_message_count(&r) == 0);
    it_reply_free(&r);
    wait_count(dlq, 1);
    /* a later message of the group sent to the DLQ itself: its home */
    fsend(dlq, "B", "g");
    const char *want[] = {"A", "B"};
    drain_one_group(dlq, want, 2);
    free(src);
    free(dlq);
}

/* ---- the admin API's single-message move -------------------------------------- */

static bool peek_ref(const char *queue, const char *body, char *ref, size_t cap)
{
    char path[160];
    snprintf(path, sizeof path, "/api/queues/" IT_TENANT "/%s/messages?max=100", queue);
    struct it_request req = {.method = "GET",
                             .path = path,
                             .access_key = IT_ADMIN_KEY,
                             .secret = IT_ADMIN_SECRET,
                             .admin = true};
    struct it_response resp;
    bool found = false;
    if (it_request(&srv, &req, &resp) == 0 && resp.status == 200) {
        json_t *j = json_loads(resp.body, 0, NULL);
        size_t i;
        json_t *m;
        json_array_foreach(json_object_get(j, "messages"), i, m)
        {
            if (strcmp(it_jstr(m, "body"), body) == 0) {
                snprintf(ref, cap, "%s", it_jstr(m, "ref"));
                found = true;
            }
        }
        json_decref(j);
    }
    it_response_free(&resp);
    return found;
}

static void admin_move(const char *from, const char *body, const char *to)
{
    char ref[64], path[192], json[128];
    IT_REQUIRE(peek_ref(from, body, ref, sizeof ref));
    snprintf(path, sizeof path, "/api/queues/" IT_TENANT "/%s/messages/%s/move", from, ref);
    snprintf(json, sizeof json, "{\"destination\":\"" IT_TENANT "/%s\"}", to);
    const char *headers[] = {"content-type: application/json", NULL};
    struct it_request req = {.method = "POST",
                             .path = path,
                             .headers = headers,
                             .body = json,
                             .body_len = strlen(json),
                             .access_key = IT_ADMIN_KEY,
                             .secret = IT_ADMIN_SECRET,
                             .admin = true};
    struct it_response resp;
    IT_CHECK(it_request(&srv, &req, &resp) == 0 && resp.status == 200);
    it_response_free(&resp);
}

/* dest gets B0 (and B1) of group g on its home, then A moved in from a
 * queue on the other partition. */
static char *split_by_admin_move(const char *prefix, bool two)
{
    char dname[64], xname[64];
    snprintf(dname, sizeof dname, "%s-d.fifo", prefix);
    char *dest = fifo_queue(dname, NULL);
    IT_REQUIRE(dest != NULL);
    char *x = queue_away_from(prefix, home_of(dest), NULL, xname, sizeof xname);
    fsend(dest, "B0", "g");
    if (two) {
        fsend(dest, "B1", "g");
    }
    fsend(x, "A", "g");
    admin_move(xname, "A", dname);
    wait_count(dest, two ? 3 : 2);
    free(x);
    return dest;
}

static void move_by_admin(void)
{
    char *dest = split_by_admin_move("am", false);
    const char *split = "sluice_fifo_groups_split{tenant=\"" IT_TENANT "\",queue=\"am-d.fifo\"}";
    IT_CHECK(it_metric(&srv, split) == 1);
    const char *want[] = {"B0", "A"};
    drain_one_group(dest, want, 2);
    IT_CHECK(it_metric(&srv, split) == 0);
    free(dest);
}

/* ---- a redrive with a destination ---------------------------------------------- */

static void redrive_to_destination(void)
{
    char *dlq = fifo_queue("rd-dlq.fifo", NULL);
    IT_REQUIRE(dlq != NULL);
    /* a queue whose DLQ it is: StartMessageMoveTask moves only from DLQs */
    char *src =
        fifo_queue("rd-src.fifo",
                   "{\"deadLetterTargetArn\":\"" ARN("rd-dlq.fifo") "\","
                                                                    "\"maxReceiveCount\":\"5\"}");
    IT_REQUIRE(src != NULL);
    char name[64];
    char *dest = queue_away_from("rd-dst", home_of(dlq), NULL, name, sizeof name);
    fsend(dest, "B0", "g");
    fsend(dlq, "A1", "g");
    fsend(dlq, "A2", "g");
    char dest_arn[128];
    snprintf(dest_arn, sizeof dest_arn, ARN("%s"), name);
    struct it_reply r = it_call(
        &srv, "StartMessageMoveTask",
        json_pack("{s:s,s:s}", "SourceArn", ARN("rd-dlq.fifo"), "DestinationArn", dest_arn));
    IT_OK(&r);
    it_reply_free(&r);
    wait_count(dest, 3);
    const char *want[] = {"B0", "A1", "A2"};
    drain_one_group(dest, want, 3);
    free(dest);
    free(src);
    free(dlq);
}

/* ---- restarts -------------------------------------------------------------------- */

static void restart(bool kill9, unsigned shard_size)
{
    struct it_options opt = {.tls = true, .admin = true, .partitions = 2, .shard_size = shard_size};
    IT_REQUIRE(it_server_bounce(&srv, &opt, kill9) == 0);
}

/* A queue with live groups on the one partition of a shard of one; the
 * shard grows to both partitions; new messages of the live groups stay
 * with their groups (sticky), so every group drains in order with one
 * receive holding it at a time. */
static void shard_grows_under_live_groups(void)
{
    enum { GROUPS = 8, OLD = 2, ALL = 4 };
    char *url =
        it_create_queue(&srv, "grow.fifo",
                        json_pack("{s:s,s:s,s:s}", "FifoQueue", "true", "DeduplicationScope",
                                  "messageGroup", "FifoThroughputLimit", "perMessageGroupId"));
    IT_REQUIRE(url != NULL);
    char body[32], group[16];
    for (int n = 0; n < ALL; n++) {
        if (n == OLD) {
            restart(false, 2);
        }
        for (int g = 0; g < GROUPS; g++) {
            snprintf(body, sizeof body, "g%d-%d", g, n);
            snprintf(group, sizeof group, "g%d", g);
            fsend(url, body, group);
        }
    }
    /* receives hold what they take: a group must never be in two */
    int holder[GROUPS];
    int next[GROUPS] = {0};
    struct it_reply held[16];
    size_t nheld = 0;
    int got = 0;
    for (int round = 0; round < 12 && got < GROUPS * ALL; round++) {
        for (int g = 0; g < GROUPS; g++) {
            holder[g] = -1;
        }
        nheld = 0;
        for (int k = 0; k < 8; k++) {
            held[nheld] = receive(url, 10, 30);
            size_t n = it_message_count(&held[nheld]);
            for (size_t i = 0; i < n; i++) {
                int g = -1, seq = -1;
                IT_CHECK(sscanf(body_of(&held[nheld], i), "g%d-%d", &g, &seq) == 2);
                if (g < 0 || g >= GROUPS) {
                    continue;
                }
                IT_CHECK(holder[g] == -1 || holder[g] == k);
                if (holder[g] != -1 && holder[g] != k) {
                    fprintf(stderr, "group g%d in receives %d and %d\n", g, holder[g], k);
                }
                holder[g] = k;
                IT_CHECK(seq == next[g]);
                next[g] = seq + 1;
                got++;
            }
            nheld++;
        }
        for (size_t k = 0; k < nheld; k++) {
            for (size_t i = 0; i < it_message_count(&held[k]); i++) {
                IT_CHECK(it_delete_received(&srv, url, &held[k], i));
            }
            it_reply_free(&held[k]);
        }
    }
    IT_CHECK(got == GROUPS * ALL);
    free(url);
}

/* kill -9 while a group sits on two partitions: the directory is rebuilt
 * from the files, oldest partition first. */
static void kill9_with_split_group(void)
{
    char *dest = split_by_admin_move("k9", true);
    restart(true, 2);
    const char *want[] = {"B0", "B1", "A"};
    drain_one_group(dest, want, 3);
    free(dest);
}

int main(void)
{
    struct it_options opt = {.tls = true, .admin = true, .partitions = 2, .shard_size = 1};
    IT_REQUIRE(it_server_start(&srv, &opt) == 0);
    shard_grows_under_live_groups(); /* restarts with a shard of 2 */
    dead_letter_move();
    move_by_admin();
    redrive_to_destination();
    kill9_with_split_group();
    IT_CHECK(it_healthz(&srv));
    IT_CHECK(it_server_stop(&srv) == 0);
    it_server_cleanup(&srv);
    return it_summary();
}
