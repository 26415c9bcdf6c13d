/*
 * test_sluicectl_cluster.c -- `sluicectl cluster status` against a real
 * sluiced: on a one-node cluster it names the node, marks it as the one
 * asked, and shows the catalog and each partition with this node as their
 * leader, a term and commit and applied indexes that have moved (--json
 * gives the same as a document); on a node without a cluster: section it
 * fails with NotACluster (exit 1). test_cluster_ops.py shows it with two
 * of three nodes stopped.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "it_harness.h"

struct run {
    int status;
    char out[1 << 16];
};

static struct run run_buf;

/* sluicectl with the admin's keys against s, stdout and stderr captured. */
static struct run *ctl(const struct it_server *s, const char *args)
{
    struct run *r = &run_buf;
    r->status = -1;
    r->out[0] = '\0';
    const char *dir = getenv("SLUICE_BUILD_DIR");
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "env -i HOME='%s' SLUICE_ADMIN_ENDPOINT='%s' SLUICE_ACCESS_KEY_ID='" IT_ADMIN_KEY
             "' SLUICE_SECRET_ACCESS_KEY='" IT_ADMIN_SECRET "' '%s/sluicectl' %s 2>&1",
             s->dir, s->admin_url, dir ? dir : ".", args);
    r->status = it_run_capture(cmd, r->out, sizeof r->out);
    return r;
}

/* Polls until the node leads every group (a one-node cluster elects
 * itself within an election timeout): false after 100 looks. */
static bool leads_all(const struct it_server *s)
{
    for (int i = 0; i < 100; i++) {
        if (it_metric(s, "sluice_cluster_catalog_leader_node") == 1 &&
            it_metric(s, "sluice_partition_leader_node{partition=\"0\"}") == 1 &&
            it_metric(s, "sluice_partition_leader_node{partition=\"1\"}") == 1)
            return true;
        it_sleep_ms(100);
    }
    return false;
}

int main(void)
{
    char dir[] = "/tmp/sluice-it-ctlcluster-XXXXXX";
    IT_REQUIRE(mkdtemp(dir) != NULL);
    char secret[256];
    snprintf(secret, sizeof secret, "%s/cluster.secret", dir);
    FILE *f = fopen(secret, "w");
    IT_REQUIRE(f != NULL);
    fputs("0123456789abcdef0123456789abcdef-ctl\n", f);
    fclose(f);

    struct it_server node;
    struct it_options opt = {0};
    char yaml[1024], raft[64], peer[64];
    snprintf(raft, sizeof raft, "127.0.0.1:%u", it_free_port());
    snprintf(peer, sizeof peer, "127.0.0.1:%u", it_free_port());
    snprintf(yaml, sizeof yaml,
             "cluster:\n"
             "  node_id: 1\n"
             "  raft: %s\n"
             "  peer: %s\n"
             "  secret_file: %s\n"
             "  replication: 1\n"
             "  nodes:\n"
             "    - {id: 1, raft: %s, peer: %s, api: 127.0.0.1:9324}\n",
             raft, peer, secret, raft, peer);
    opt.extra_yaml = yaml;
    opt.admin = true;
    IT_REQUIRE(it_server_start(&node, &opt) == 0);
    IT_REQUIRE(leads_all(&node));

    struct run *r = ctl(&node, "cluster status");
    IT_CHECK(r->status == 0);
    IT_CHECK(strstr(r->out, "node 1 of 1, serving") != NULL);
    IT_CHECK(strstr(r->out, "(this node)") != NULL);
    IT_CHECK(strstr(r->out, raft) != NULL);
    IT_CHECK(strstr(r->out, "GROUP") != NULL);
    IT_CHECK(strstr(r->out, "catalog") != NULL);
    IT_CHECK(strstr(r->out, "partition 1") != NULL);
    IT_CHECK(strstr(r->out, "no quorum") == NULL);
    IT_CHECK(strstr(r->out, "none") == NULL);
    if (it_failed > 0)
        fprintf(stderr, "sluicectl cluster status said:\n%s\n", r->out);

    r = ctl(&node, "--json cluster status");
    IT_CHECK(r->status == 0);
    json_t *doc = json_loads(r->out, 0, NULL);
    IT_REQUIRE(doc != NULL);
    IT_CHECK(json_integer_value(json_object_get(doc, "node_id")) == 1);
    IT_CHECK(json_is_true(json_object_get(doc, "ready")));
    json_t *groups = json_object_get(doc, "groups");
    IT_CHECK(json_array_size(groups) == 3); /* the catalog and the harness's two partitions */
    size_t i;
    json_t *g;
    json_array_foreach(groups, i, g)
    {
        IT_CHECK(json_integer_value(json_object_get(g, "leader")) == 1);
        IT_CHECK(json_integer_value(json_object_get(g, "term")) >= 1);
        IT_CHECK(json_integer_value(json_object_get(g, "commit_index")) >= 1);
        IT_CHECK(json_integer_value(json_object_get(g, "voters")) == 1);
        IT_CHECK(json_is_false(json_object_get(g, "no_quorum")));
    }
    IT_CHECK(strcmp(json_string_value(json_object_get(json_array_get(groups, 0), "group")),
                    "catalog") == 0);
    IT_CHECK(json_integer_value(json_object_get(json_array_get(groups, 2), "partition")) == 1);
    json_decref(doc);
    IT_CHECK(it_server_stop(&node) == 0);
    it_server_cleanup(&node);

    /* A node without a cluster: section says so. */
    struct it_server alone;
    struct it_options aopt = {.admin = true};
    IT_REQUIRE(it_server_start(&alone, &aopt) == 0);
    r = ctl(&alone, "cluster status");
    IT_CHECK(r->status == 1);
    IT_CHECK(strstr(r->out, "NotACluster") != NULL);
    IT_CHECK(it_server_stop(&alone) == 0);
    it_server_cleanup(&alone);

    unlink(secret);
    rmdir(dir);
    return it_summary();
}
