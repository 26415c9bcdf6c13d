/*
 * gw_admin_cluster.c -- GET /api/cluster: a cluster's node as it sees the
 * cluster (docs/admin.md): its id, the nodes of its configuration, whether
 * it can serve, and each Raft group's leader, term, commit and applied
 * index and last snapshot. What sluicectl cluster status prints. Reads the
 * configuration and the engine's published atomics only.
 *
 * Stack: above gw_admin_util.c. Loop threads.
 */
#include <stdio.h>

#include "gw_act.h"
#include "gw_admin_routes.h"

/* One group's object; p is a partition or PART_CATALOG. */
static json_t *group_json(struct part_engine *e, uint32_t p)
{
    struct part_group_stats st;
    part_engine_group_stats(e, p, &st);
    json_t *o = json_pack(
        "{s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:b}", "group",
        p == PART_CATALOG ? "catalog" : "partition", "leader", (json_int_t)st.leader, "term",
        (json_int_t)st.term, "commit_index", (json_int_t)st.commit_index, "applied_index",
        (json_int_t)st.applied_index, "lag",
        (json_int_t)(st.commit_index > st.applied_index ? st.commit_index - st.applied_index : 0),
        "snapshot_bytes", (json_int_t)st.snapshot_bytes, "voters", (json_int_t)st.voters,
        "no_quorum", st.no_quorum);
    if (p != PART_CATALOG) {
        json_object_set_new(o, "partition", json_integer((json_int_t)p));
    }
    return o;
}

void gw__admin_get_cluster(struct gw_admin_req *r)
{
    struct part_engine *e = r->api->engine;
    uint16_t self = part_engine_node_id(e);
    if (self == 0) {
        gw__admin_fail(r, 409, "NotACluster",
                       "This node runs alone: its configuration has no cluster: section.");
        return;
    }
    json_t *nodes = json_array();
    const struct cfg_cluster *c = &r->snap->cluster;
    for (size_t i = 0; i < c->node_count; i++) {
        const struct cfg_cluster_node *n = &c->nodes[i];
        char api[300], raft[300], peer[300];
        snprintf(api, sizeof api, "%s:%u", n->api.host, n->api.port);
        snprintf(raft, sizeof raft, "%s:%u", n->raft.host, n->raft.port);
        snprintf(peer, sizeof peer, "%s:%u", n->peer.host, n->peer.port);
        json_array_append_new(nodes, json_pack("{s:I, s:s, s:s, s:s, s:b, s:b}", "id",
                                               (json_int_t)n->id, "api", api, "raft", raft, "peer",
                                               peer, "self", n->id == self, "reachable",
                                               part_engine_node_reachable(e, n->id)));
    }
    json_t *groups = json_array();
    json_array_append_new(groups, group_json(e, PART_CATALOG));
    uint32_t np = part_engine_partitions(e);
    for (uint32_t p = 0; p < np; p++) {
        json_array_append_new(groups, group_json(e, p));
    }
    gw__admin_json(r, 200,
                   json_pack("{s:I, s:b, s:o, s:o}", "node_id", (json_int_t)self, "ready",
                             part_engine_ready(e), "nodes", nodes, "groups", groups));
}
