/*
 * test_cluster_config.c -- the cluster: section from the outside:
 * `sluiced --check-config` accepts a valid one (exit 0) and refuses two
 * nodes with one id, or a node list that disagrees with this node's own
 * addresses, with FILE:LINE:COLUMN (exit 1); a cluster of one node runs,
 * serves SQS from its replicated groups, shows its leaders and counts a
 * stranger refused on its Raft port in /metrics, shows each group's term,
 * commit and applied index moving with the sends and a snapshot's size
 * once one is taken, answers /healthz 200, and keeps what it
 * acknowledged across a restart; and a SIGHUP that adds the section to a running node
 * is logged as needing a restart while the node goes on serving.
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "it_harness.h"
#include "it_sqs.h"

#define TOKEN "cluster-token_1"

#define NODE_2 "    - {id: 2, raft: 127.0.0.1:7002, peer: 127.0.0.1:7102, api: 127.0.0.1:9334}\n"
#define NODE_3 "    - {id: 3, raft: 127.0.0.1:7003, peer: 127.0.0.1:7103, api: 127.0.0.1:9344}\n"

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    IT_REQUIRE(f != NULL);
    fputs(text, f);
    fclose(f);
}

/* A cluster section for node 1 with its secret at secret; nodes holds the
 * lines of the list. */
static void cluster_yaml(char *buf, size_t cap, const char *secret, const char *nodes)
{
    snprintf(buf, cap,
             "cluster:\n"
             "  node_id: 1\n"
             "  raft: 127.0.0.1:7001\n"
             "  peer: 127.0.0.1:7101\n"
             "  secret_file: %s\n"
             "  nodes:\n"
             "%s",
             secret, nodes);
}

/* `sluiced --check-config path`: its exit status; *err gets its stderr. */
static int check_config(const char *path, char **err)
{
    char args[600];
    snprintf(args, sizeof(args), "--check-config '%s'", path);
    return it_run_sluiced(args, err);
}

static bool expect_in(const char *text, const char *want)
{
    if (strstr(text, want) != NULL)
        return true;
    fprintf(stderr, "wanted: %s\nstderr was: %s\n", want, text);
    return false;
}

/* An SQS call, retried while the node answers 503 (no leader elected yet:
 * what an SDK's retries do); the last answer is in *r. */
static void sqs_retrying(const struct it_server *s, const char *action, const char *json,
                         struct it_response *r)
{
    for (int i = 0; i < 100; i++) {
        IT_REQUIRE(it_sqs(s, action, json, IT_KEY, IT_SECRET, r) == 0);
        if (r->status != 503)
            return;
        it_response_free(r);
        it_sleep_ms(100);
    }
}

/* The sum of a per-partition family over partitions 0 and 1 (the
 * harness's two). */
static double partitions_sum(const struct it_server *s, const char *family)
{
    double sum = 0;
    for (int p = 0; p < 2; p++) {
        char series[128];
        snprintf(series, sizeof(series), "%s{partition=\"%d\"}", family, p);
        double v = it_metric(s, series);
        IT_CHECK(v >= 0);
        sum += v;
    }
    return sum;
}

/* Polls until partitions_sum(family) reaches want (the Raft thread
 * publishes the numbers every 20 ms): false if it never does within 100
 * looks. */
static bool partitions_reach(const struct it_server *s, const char *family, double want)
{
    for (int i = 0; i < 100; i++) {
        if (partitions_sum(s, family) >= want)
            return true;
        it_sleep_ms(50);
    }
    return false;
}

/* Polls until every partition's applied index has reached its commit
 * index (the Raft thread publishes them every 20 ms): false if it never
 * does within 100 looks. */
static bool applied_reaches_commit(const struct it_server *s)
{
    for (int i = 0; i < 100; i++) {
        bool all = true;
        for (int p = 0; p < 2; p++) {
            char c[128], a[128];
            snprintf(c, sizeof(c), "sluice_partition_raft_commit_index{partition=\"%d\"}", p);
            snprintf(a, sizeof(a), "sluice_partition_raft_applied_index{partition=\"%d\"}", p);
            double commit = it_metric(s, c);
            all = all && commit > 0 && it_metric(s, a) == commit;
        }
        if (all)
            return true;
        it_sleep_ms(50);
    }
    return false;
}

int main(void)
{
    char dir[] = "/tmp/sluice-it-cluster-XXXXXX";
    IT_REQUIRE(mkdtemp(dir) != NULL);
    char secret[256], good[256], dup[256], self[256], data[256];
    snprintf(secret, sizeof(secret), "%s/cluster.secret", dir);
    snprintf(good, sizeof(good), "%s/good.yaml", dir);
    snprintf(dup, sizeof(dup), "%s/dup.yaml", dir);
    snprintf(self, sizeof(self), "%s/self.yaml", dir);
    snprintf(data, sizeof(data), "%s/data", dir);
    write_text(secret, "0123456789abcdef0123456789abcdef-it\n");

    char section[2048], text[4096];
    cluster_yaml(section, sizeof(section), secret,
                 "    - {id: 1, raft: 127.0.0.1:7001, peer: 127.0.0.1:7101, api: "
                 "127.0.0.1:9324}\n" NODE_2 NODE_3);
    snprintf(text, sizeof(text), "listen: 127.0.0.1:9324\ndata_dir: %s\n%s", data, section);
    write_text(good, text);

    /* Lines 1-6 are the section's own keys; the list starts on line 7. */
    cluster_yaml(section, sizeof(section), secret,
                 "    - {id: 1, raft: 127.0.0.1:7001, peer: 127.0.0.1:7101, api: "
                 "127.0.0.1:9324}\n" NODE_2
                 "    - {id: 2, raft: 127.0.0.1:7003, peer: 127.0.0.1:7103, api: "
                 "127.0.0.1:9344}\n");
    write_text(dup, section);
    cluster_yaml(section, sizeof(section), secret,
                 "    - {id: 1, raft: 127.0.0.1:7011, peer: 127.0.0.1:7101, api: "
                 "127.0.0.1:9324}\n" NODE_2 NODE_3);
    write_text(self, section);

    char *err = NULL;
    IT_CHECK(check_config(good, &err) == 0);
    IT_CHECK(expect_in(err, "configuration is valid"));
    free(err);

    char want[512];
    IT_CHECK(check_config(dup, &err) == 1);
    snprintf(want, sizeof(want), "%s:9:12: node id 2 is already used by the entry on line 8", dup);
    IT_CHECK(expect_in(err, want));
    free(err);

    IT_CHECK(check_config(self, &err) == 1);
    snprintf(want, sizeof(want),
             "%s:7:21: node 1 is this node (node_id), but its raft \"127.0.0.1:7011\" differs "
             "from cluster.raft \"127.0.0.1:7001\" (line 3)",
             self);
    IT_CHECK(expect_in(err, want));
    free(err);

    /* One node of three, alone: no quorum, so it cannot know its queues.
     * It says so (503, retried by the SDKs) on /healthz, on a send (whose
     * auto-creation path once answered QueueDoesNotExist here) and on a
     * lookup, rather than claim that a queue does not exist. */
    {
        struct it_server lone;
        struct it_options lopt = {0};
        char raft[32], three[1024];
        snprintf(raft, sizeof(raft), "127.0.0.1:%u", it_free_port());
        snprintf(
            three, sizeof(three),
            "cluster:\n"
            "  node_id: 1\n"
            "  raft: %s\n"
            "  peer: 127.0.0.1:7101\n"
            "  secret_file: %s\n"
            "  nodes:\n"
            "    - {id: 1, raft: %s, peer: 127.0.0.1:7101, api: 127.0.0.1:9324}\n" NODE_2 NODE_3,
            raft, secret, raft);
        lopt.extra_yaml = three;
        lopt.start_unhealthy = true;
        IT_REQUIRE(it_server_start(&lone, &lopt) == 0);
        IT_CHECK(!it_healthz(&lone));
        char url[256], body[512];
        snprintf(url, sizeof(url), "%s/acme/anything", lone.base_url);
        snprintf(body, sizeof(body), "{\"QueueUrl\":\"%s\",\"MessageBody\":\"x\"}", url);
        struct it_response r;
        IT_REQUIRE(it_sqs(&lone, "SendMessage", body, IT_KEY, IT_SECRET, &r) == 0);
        IT_CHECK(r.status == 503 && r.body != NULL && strstr(r.body, "catching up") != NULL);
        it_response_free(&r);
        IT_REQUIRE(it_sqs(&lone, "GetQueueUrl", "{\"QueueName\":\"anything\"}", IT_KEY, IT_SECRET,
                          &r) == 0);
        IT_CHECK(r.status == 503);
        it_response_free(&r);
        IT_CHECK(it_server_stop(&lone) == 0);
        it_server_cleanup(&lone);
    }

    /* A cluster of one node runs: its catalog and partitions are Raft
     * groups (the node elects itself), and what it acknowledged survives
     * a restart, which replays the groups' logs. */
    {
        struct it_server node;
        struct it_options nopt = {0};
        char one[1024], raft[64];
        snprintf(raft, sizeof(raft), "127.0.0.1:%u", it_free_port());
        snprintf(one, sizeof(one),
                 "cluster:\n"
                 "  node_id: 1\n"
                 "  raft: %s\n"
                 "  peer: 127.0.0.1:7101\n"
                 "  secret_file: %s\n"
                 "  replication: 1\n"
                 "  snapshot_entries: 64\n"
                 "  nodes:\n"
                 "    - {id: 1, raft: %s, peer: 127.0.0.1:7101, api: 127.0.0.1:9324}\n",
                 raft, secret, raft);
        nopt.extra_yaml = one;
        nopt.admin = true;
        nopt.tenants_yaml = IT_TENANTS_YAML_WITH_TOKEN(TOKEN);
        IT_REQUIRE(it_server_start(&node, &nopt) == 0);
        struct it_response r;
        sqs_retrying(&node, "CreateQueue", "{\"QueueName\":\"replicated\"}", &r);
        IT_CHECK(r.status == 200);
        it_response_free(&r);
        char url[256], body[512];
        snprintf(url, sizeof(url), "%s/acme/replicated", node.base_url);
        snprintf(body, sizeof(body), "{\"QueueUrl\":\"%s\",\"MessageBody\":\"kept\"}", url);
        sqs_retrying(&node, "SendMessage", body, &r);
        IT_CHECK(r.status == 200);
        it_response_free(&r);
        IT_CHECK(it_log_contains(&node, "node 1 of a cluster of 1"));
        IT_CHECK(it_metric(&node, "sluice_cluster_node_id") == 1);
        IT_CHECK(it_metric(&node, "sluice_partition_leader_node{partition=\"0\"}") == 1);
        /* The images hold the schema and the message; the budget defaults
         * to half of physical memory. */
        IT_CHECK(it_metric(&node, "sluice_cluster_image_bytes") > 0);
        IT_CHECK(it_metric(&node, "sluice_cluster_image_bytes") <
                 it_metric(&node, "sluice_cluster_memory_budget_bytes"));
        IT_CHECK(it_metric(&node, "sluice_cluster_budget_refusals_total") == 0);

        /* The groups' Raft state: a term, and commit and applied indexes
         * that move with every send; the configured nodes; a snapshot's
         * size once a partition passed snapshot_entries (64) entries. */
        IT_CHECK(it_metric(&node, "sluice_cluster_nodes_configured") == 1);
        IT_CHECK(it_metric(&node, "sluice_cluster_catalog_raft_term") >= 1);
        IT_CHECK(it_metric(&node, "sluice_cluster_catalog_raft_commit_index") >= 1);
        IT_CHECK(it_metric(&node, "sluice_partition_raft_term{partition=\"1\"}") >= 1);
        IT_CHECK(applied_reaches_commit(&node));
        double commit0 = partitions_sum(&node, "sluice_partition_raft_commit_index");
        IT_CHECK(partitions_sum(&node, "sluice_partition_raft_snapshot_bytes") == 0);
        sqs_retrying(&node, "CreateQueue", "{\"QueueName\":\"busy\"}", &r);
        IT_CHECK(r.status == 200);
        it_response_free(&r);
        for (int i = 0; i < 140; i++) {
            snprintf(body, sizeof(body), "{\"QueueUrl\":\"%s/acme/busy\",\"MessageBody\":\"m%d\"}",
                     node.base_url, i);
            sqs_retrying(&node, "SendMessage", body, &r);
            IT_CHECK(r.status == 200);
            it_response_free(&r);
        }
        IT_CHECK(applied_reaches_commit(&node));
        IT_CHECK(partitions_reach(&node, "sluice_partition_raft_commit_index", commit0 + 140));
        IT_CHECK(partitions_reach(&node, "sluice_partition_raft_snapshot_bytes", 4096));
        IT_CHECK(it_healthz(&node));

        /* A stranger on the Raft port is refused and counted. */
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        IT_REQUIRE(fd >= 0);
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        sa.sin_port = htons((uint16_t)atoi(strchr(raft, ':') + 1));
        IT_REQUIRE(connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
        static const char junk[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n"
                                   "padding to a whole hello, and more of it: 0123456789";
        IT_CHECK(write(fd, junk, sizeof(junk) - 1) == (ssize_t)(sizeof(junk) - 1));
        char sink[64];
        while (read(fd, sink, sizeof(sink)) > 0) {
        }
        close(fd);
        IT_CHECK(
            it_metric(&node, "sluice_cluster_rejected_total{port=\"raft\",reason=\"bad_magic\"}") ==
            1);
        /* An operator's pause lives in the replicated catalog: it holds
         * across the restart below, and sends are refused meanwhile. */
        struct it_reply a = it_admin(&node, "POST", "/api/queues/acme/replicated/pause",
                                     "{\"enqueue\": true}", TOKEN);
        IT_CHECK(a.status == 200);
        IT_CHECK(json_is_true(json_object_get(json_object_get(a.json, "paused"), "enqueue")));
        it_reply_free(&a);
        snprintf(body, sizeof(body), "{\"QueueUrl\":\"%s\",\"MessageBody\":\"refused\"}", url);
        sqs_retrying(&node, "SendMessage", body, &r);
        IT_CHECK(r.status == 400 && r.body != NULL && strstr(r.body, "QueuePaused") != NULL);
        it_response_free(&r);
        IT_CHECK(it_server_stop(&node) == 0);
        IT_REQUIRE(it_server_restart(&node) == 0);
        sqs_retrying(&node, "SendMessage", body, &r);
        IT_CHECK(r.status == 400 && r.body != NULL && strstr(r.body, "QueuePaused") != NULL);
        it_response_free(&r);
        a = it_admin(&node, "POST", "/api/queues/acme/replicated/resume", NULL, TOKEN);
        IT_CHECK(a.status == 200);
        IT_CHECK(json_is_false(json_object_get(json_object_get(a.json, "paused"), "enqueue")));
        it_reply_free(&a);
        snprintf(body, sizeof(body), "{\"QueueUrl\":\"%s\",\"WaitTimeSeconds\":2}", url);
        bool got = false;
        for (int i = 0; i < 20 && !got; i++) {
            sqs_retrying(&node, "ReceiveMessage", body, &r);
            got = r.status == 200 && r.body != NULL && strstr(r.body, "\"Body\":\"kept\"") != NULL;
            it_response_free(&r);
        }
        IT_CHECK(got);
        IT_CHECK(it_server_stop(&node) == 0);
        it_server_cleanup(&node);
    }

    /* A reload cannot turn a running node into a cluster's. */
    struct it_server srv;
    struct it_options opt = {0};
    IT_REQUIRE(it_server_start(&srv, &opt) == 0);
    cluster_yaml(section, sizeof(section), secret,
                 "    - {id: 1, raft: 127.0.0.1:7001, peer: 127.0.0.1:7101, api: "
                 "127.0.0.1:9324}\n");
    char replication[2100];
    snprintf(replication, sizeof(replication), "%s  replication: 1\n", section);
    opt.extra_yaml = replication;
    char yaml[8192];
    it_config_yaml(&srv, &opt, yaml, sizeof(yaml));
    IT_CHECK(it_server_write_config(&srv, yaml) == 0);
    it_server_signal(&srv, SIGHUP);
    IT_CHECK(it_wait_log(&srv, "needs a restart to take effect: cluster was added", 10000));
    IT_CHECK(it_wait_log(&srv, "reload: configuration from", 10000));
    IT_CHECK(it_server_stop(&srv) == 0);
    it_server_cleanup(&srv);

    unlink(good);
    unlink(dup);
    unlink(self);
    unlink(secret);
    rmdir(dir);
    return it_summary();
}
