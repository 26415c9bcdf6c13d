"""test_cluster_ops.py -- what on-call sees of a three-node cluster on
this machine's loopback (cluster_harness.py):

- /metrics of a node shows every group's leader, term, commit and applied
  index;
- /healthz answers 200 "ok" on every node; with two of the three nodes
  SIGSTOPped the third answers 503 naming the groups without a quorum
  (the catalog and every partition), and 200 again once they resume.
"""

import re
import sys
import time
import urllib.error
import urllib.request

import cluster_harness
from harness import Steps, eq, fail, ok


def healthz(port):
    """(status, body) of GET /healthz over HTTP/1.1; (0, "") if no answer."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=3) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
    except OSError:
        return 0, ""


def wait_healthz(port, status, timeout):
    """Polls /healthz until it answers status; returns the last body."""
    deadline = time.monotonic() + timeout
    while True:
        got, body = healthz(port)
        if got == status:
            return body
        if time.monotonic() > deadline:
            fail(f"/healthz of :{port}: wanted {status} within {timeout} s, got {got} {body!r}")
        time.sleep(0.2)


def series(text, name):
    """{labels: value} of one family in a /metrics text."""
    return {m[0]: float(m[1]) for m in
            re.findall(rf"^{name}(\{{[^}}]*\}})? (\S+)$", text, re.M)}


def check_metrics(steps, cluster):
    steps.step("/metrics: every group's leader, term, commit and applied index")
    node = cluster.nodes[0]
    text = cluster.metrics(node)
    eq(series(text, "sluice_cluster_nodes_configured"), {"": 3.0}, "nodes configured")
    for fam in ("leader_node", "raft_term", "raft_commit_index", "raft_applied_index",
                "raft_snapshot_bytes"):
        got = series(text, f"sluice_partition_{fam}")
        eq(len(got), cluster.partitions, f"sluice_partition_{fam}: one per partition")
    terms = series(text, "sluice_partition_raft_term")
    ok(all(v >= 1 for v in terms.values()), f"every partition has had a term: {terms}")
    commits = series(text, "sluice_partition_raft_commit_index")
    ok(all(v >= 1 for v in commits.values()), f"every partition committed: {commits}")
    ok(series(text, "sluice_cluster_catalog_raft_commit_index")[""] >= 1, "catalog committed")


def check_quorum(steps, cluster):
    steps.step("/healthz is 200 ok on every node")
    for n in cluster.nodes:
        eq(healthz(n.port), (200, "ok"), f"node {n.id} /healthz")

    steps.step("two of three nodes SIGSTOPped: the third's /healthz is 503, naming the groups")
    one, others = cluster.nodes[0], cluster.nodes[1:]
    for n in others:
        cluster.pause(n)
    # 503 "catching up" once the catalog's leader is lost; "no quorum:
    # catalog, partition 0, ..." after two election timeouts (1 s each, up
    # to 2 s) without a leader: allow a loaded machine ten times that.
    wait_healthz_body(one.port, lambda b: b.startswith("no quorum: catalog") and all(
        re.search(rf"\bpartition {p}\b", b) for p in range(cluster.partitions)), 40)
    text = cluster.metrics(one)
    eq(set(series(text, "sluice_partition_leader_node").values()), {0.0},
       "no partition leader known on the lone node")

    steps.step("the two resume: /healthz is 200 ok again")
    for n in others:
        cluster.resume(n)
    for n in cluster.nodes:
        eq(wait_healthz(n.port, 200, 40), "ok", f"node {n.id} healthy again")
    cluster.wait_leaders()


def wait_healthz_body(port, pred, timeout):
    """Polls /healthz until it answers 503 with a body pred accepts."""
    deadline = time.monotonic() + timeout
    while True:
        got, body = healthz(port)
        if got == 503 and pred(body):
            return body
        if time.monotonic() > deadline:
            fail(f"/healthz of :{port}: {got} {body!r} does not name every group")
        time.sleep(0.2)


def body(steps):
    with cluster_harness.Cluster(partitions=4) as cluster:
        cluster.wait_leaders()
        check_metrics(steps, cluster)
        check_quorum(steps, cluster)


if __name__ == "__main__":
    sys.exit(Steps("cluster_ops").run(body))
