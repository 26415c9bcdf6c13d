"""test_cluster_ops.py -- what on-call sees of a three-node cluster on
this machine's loopback (cluster_harness.py):

- /metrics of a node shows every group's leader, term, commit and applied
  index, and every cluster metric the alert rules and the dashboard query
  (tools/ops/; test_ops_monitoring.py checks the others on one node);
- /healthz answers 200 "ok" on every node; with two of the three nodes
  SIGSTOPped the third answers 503 naming the groups without a quorum
  (the catalog and every partition), and 200 again once they resume.
"""

import os
import re
import sys
import time
import urllib.error
import urllib.request

import cluster_harness
from harness import Steps, eq, fail, ok

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
RULES = os.path.join(ROOT, "tools", "ops", "sluice-alerts.yml")
DASHBOARD = os.path.join(ROOT, "tools", "ops", "sluice-dashboard.json")
CLUSTER_ONLY = re.compile(r"^sluice_(cluster_|partition_raft_|partition_leader_node$)")


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

    steps.step("every cluster metric the rules and the dashboard query is exposed by a node")
    wanted = set()
    for path in (RULES, DASHBOARD):
        with open(path, encoding="utf-8") as f:
            queried = re.findall(r"\bsluice_[a-z0-9_]+\b", f.read())
        found = {m for m in queried if CLUSTER_ONLY.match(m)}
        ok(len(found) >= 3, f"{os.path.basename(path)} queries the cluster: {sorted(found)}")
        wanted |= found
    exposed = set(re.findall(r"^(sluice_[a-z0-9_]+)[{ ]", text, re.M))
    eq(sorted(wanted - exposed), [], "cluster metrics queried but not exposed")


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
