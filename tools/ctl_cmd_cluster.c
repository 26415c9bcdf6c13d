/*
 * ctl_cmd_cluster.c -- sluicectl cluster status: a cluster's node as it
 * sees the cluster, from GET /api/cluster (docs/admin.md): the configured
 * nodes, then one row per Raft group (the catalog, then each partition)
 * with its leader, term, commit and applied index, lag and last snapshot.
 * A group with no leader shows "none", and one whose quorum is lost says
 * so, so that a dead node or a lagging follower is read off the table.
 */
#include <stdio.h>
#include <string.h>

#include "ctl_cmd.h"
#include "ctl_table.h"

static void nodes_table(const json_t *doc, FILE *out)
{
    struct ctl_table t;
    ctl_table_init(&t, (const char *[]){"NODE", "API", "RAFT", "PEER", "", NULL});
    size_t i;
    json_t *n;
    json_array_foreach(json_object_get(doc, "nodes"), i, n)
    {
        bool self = json_is_true(json_object_get(n, "self"));
        ctl_table_rowf(&t, "%lld\t%s\t%s\t%s\t%s", ctl_jint(n, "id"), ctl_jstr(n, "api"),
                       ctl_jstr(n, "raft"), ctl_jstr(n, "peer"), self ? "(this node)" : "");
    }
    ctl_table_print(&t, out);
    ctl_table_free(&t);
}

static void groups_table(const json_t *doc, FILE *out)
{
    struct ctl_table t;
    ctl_table_init(&t, (const char *[]){"GROUP", "LEADER", "TERM", "COMMIT", "APPLIED", "LAG",
                                        "SNAPSHOT_B", "STATE", NULL});
    size_t i;
    json_t *g;
    json_array_foreach(json_object_get(doc, "groups"), i, g)
    {
        char name[32], leader[24];
        if (json_object_get(g, "partition") != NULL) {
            snprintf(name, sizeof name, "partition %lld", ctl_jint(g, "partition"));
        } else {
            snprintf(name, sizeof name, "%s", ctl_jstr(g, "group"));
        }
        long long id = ctl_jint(g, "leader");
        if (id > 0) {
            snprintf(leader, sizeof leader, "%lld", id);
        } else {
            snprintf(leader, sizeof leader, "none");
        }
        const char *state = json_is_true(json_object_get(g, "no_quorum")) ? "no quorum"
                            : id == 0                                     ? "electing"
                                                                          : "ok";
        ctl_table_rowf(&t, "%s\t%s\t%lld\t%lld\t%lld\t%lld\t%lld\t%s", name, leader,
                       ctl_jint(g, "term"), ctl_jint(g, "commit_index"),
                       ctl_jint(g, "applied_index"), ctl_jint(g, "lag"),
                       ctl_jint(g, "snapshot_bytes"), state);
    }
    ctl_table_print(&t, out);
    ctl_table_free(&t);
}

int ctl_cmd_cluster_status(struct ctl *c)
{
    struct ctl_reply r;
    int rc = CTL_EXIT_ERROR;
    if (ctl_adm(c, "GET", "/api/cluster", NULL, &r)) {
        rc = CTL_EXIT_OK;
        if (c->json) {
            ctl_print_json(r.json);
        } else {
            printf("node %lld of %zu, %s\n\n", ctl_jint(r.json, "node_id"),
                   json_array_size(json_object_get(r.json, "nodes")),
                   json_is_true(json_object_get(r.json, "ready")) ? "serving"
                                                                  : "not serving (catching up)");
            nodes_table(r.json, stdout);
            fputc('\n', stdout);
            groups_table(r.json, stdout);
        }
    }
    ctl_reply_free(&r);
    return rc;
}
