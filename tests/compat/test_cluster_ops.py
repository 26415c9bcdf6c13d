"""test_cluster_ops.py -- what on-call sees of a three-node cluster on
this machine's loopback (cluster_harness.py), and the deployment people
copy:

- /metrics of a node shows every group's leader, term, commit and applied
  index, and every cluster metric the alert rules and the dashboard query
  (tools/ops/; test_ops_monitoring.py checks the others on one node);
- /healthz answers 200 "ok" on every node; with two of the three nodes
  SIGSTOPped the third answers 503 naming the groups without a quorum
  (the catalog and every partition), and `sluicectl cluster status`
  shows them without a leader; 200 again once they resume;
- scripts/cluster starts three nodes and Debian's HAProxy on ports of the
  test's choosing, boto3 sends and receives a message through HAProxy
  over HTTP/1.1 and curl over h2c, and `scripts/cluster stop` leaves no
  process behind; nor does the death of the process that started it.
"""

import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

import harness
from harness import REGION, Steps, eq, fail, ok, require_program

boto3 = harness.require_module("boto3", "python3-boto3")
import cluster_harness  # noqa: E402  (after the module check)

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
RULES = os.path.join(ROOT, "tools", "ops", "sluice-alerts.yml")
DASHBOARD = os.path.join(ROOT, "tools", "ops", "sluice-dashboard.json")
SCRIPT = os.path.join(ROOT, "scripts", "cluster")
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


def sluicectl(node, *args):
    """sluicectl ARGS against node's admin port with the harness's admin
    keys; its output (it must exit 0)."""
    binary = os.path.join(harness.build_dir(), "sluicectl")
    env = {"HOME": "/nonexistent", "PATH": os.environ.get("PATH", ""),
           "SLUICE_ADMIN_ENDPOINT": f"http://127.0.0.1:{node.admin_port}",
           "SLUICE_ADMIN_TOKEN": harness.BEARER_TOKEN}
    r = subprocess.run([binary, *args], env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=30, check=False)
    out = r.stdout.decode(errors="replace")
    eq(r.returncode, 0, f"sluicectl {' '.join(args)} ({out})")
    return out


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
    out = sluicectl(one, "cluster", "status")
    print(out, flush=True)
    ok(re.search(r"^catalog\s+none\s.*\bno quorum$", out, re.M),
       "sluicectl cluster status: the catalog has no leader and no quorum")
    eq(len(re.findall(r"^partition \d+\s+none\s.*\bno quorum$", out, re.M)),
       cluster.partitions, "sluicectl cluster status: every partition without a quorum")

    steps.step("the two resume: /healthz is 200 ok again, sluicectl shows leaders")
    for n in others:
        cluster.resume(n)
    for n in cluster.nodes:
        eq(wait_healthz(n.port, 200, 40), "ok", f"node {n.id} healthy again")
    cluster.wait_leaders()
    out = sluicectl(one, "cluster", "status")
    ok("node 1 of 3, serving" in out and "(this node)" in out, f"the header and nodes: {out}")
    ok("none" not in out and "no quorum" not in out, f"every group has a leader again: {out}")


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


def port_free(port):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def script_pids(root):
    """The pids scripts/cluster recorded under root."""
    pids = []
    for dirpath, _, files in os.walk(root):
        for f in files:
            if f.endswith(".pid"):
                with open(os.path.join(dirpath, f), encoding="ascii") as fh:
                    pids.append(int(fh.read().strip()))
    return pids


def alive(pid):
    """True while pid is a process that is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def check_script(steps):
    require_program("/usr/sbin/haproxy", "haproxy")
    root = tempfile.mkdtemp(prefix="sluice-cluster-script-")
    # Node N uses BASE+10N .. +3: a base whose twelve ports are free now.
    # Below the kernel's ephemeral range (32768 up), which a connection's
    # own end could take meanwhile.
    base = None
    for _ in range(50):
        candidate = random.randrange(20000, 32000, 100)
        if port_free(candidate + 50) and all(port_free(candidate + 10 * n + k)
                                             for n in (1, 2, 3) for k in range(4)):
            base = candidate
            break
    if base is None:
        fail("no free block of ports for scripts/cluster")
    front = base + 50
    # SLUICE_CLUSTER_OWNER: should this test be killed, a watcher stops it all.
    env = dict(os.environ, SLUICE_CLUSTER_DIR=root, SLUICE_CLUSTER_PORT=str(front),
               SLUICE_CLUSTER_BASE=str(base), SLUICE_BUILD_DIR=harness.build_dir(),
               SLUICE_CLUSTER_OWNER=str(os.getpid()))
    pids = []
    try:
        steps.step("scripts/cluster starts three nodes and HAProxy")
        r = subprocess.run([SCRIPT], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           timeout=90, check=False)
        out = r.stdout.decode(errors="replace")
        pids = script_pids(root)
        eq(r.returncode, 0, f"scripts/cluster exit status ({out})")
        ok(f"http://127.0.0.1:{front}" in out and "scripts/cluster stop" in out,
           f"it prints the endpoint and how to stop: {out}")
        eq(len(pids), 5, "three nodes, HAProxy and the owner's watcher recorded")
        with open(os.path.join(root, "haproxy.cfg"), encoding="utf-8") as f:
            ok("option httpchk GET /healthz" in f.read(), "HAProxy checks /healthz")

        steps.step("boto3 through HAProxy (HTTP/1.1): create, send, receive, delete")
        endpoint = f"http://127.0.0.1:{front}"
        sqs = boto3.client("sqs", endpoint_url=endpoint, region_name=REGION,
                           aws_access_key_id="default", aws_secret_access_key="default")
        url = sqs.create_queue(QueueName="through-haproxy")["QueueUrl"]
        eq(url, f"{endpoint}/default/through-haproxy", "the queue URL names HAProxy's address")
        # A queue made through one node may reach the third node a
        # heartbeat after CreateQueue answered (its barrier commits on a
        # majority, which need not include it; HAProxy's round robin then
        # finds it missing there): wait until every node knows it.
        for n in (1, 2, 3):
            node = boto3.client("sqs", endpoint_url=f"http://127.0.0.1:{base + 10 * n}",
                                region_name=REGION, aws_access_key_id="default",
                                aws_secret_access_key="default")
            deadline = time.monotonic() + 10
            while True:
                try:
                    node.get_queue_url(QueueName="through-haproxy")
                    break
                except node.exceptions.QueueDoesNotExist:
                    if time.monotonic() > deadline:
                        fail(f"node {n} does not know the queue 10 s after CreateQueue")
                    time.sleep(0.05)
        sqs.send_message(QueueUrl=url, MessageBody="hello through haproxy")
        msgs = sqs.receive_message(QueueUrl=url, WaitTimeSeconds=10).get("Messages", [])
        eq([m["Body"] for m in msgs], ["hello through haproxy"], "the message came back")
        sqs.delete_message(QueueUrl=url, ReceiptHandle=msgs[0]["ReceiptHandle"])

        steps.step("h2c with prior knowledge through HAProxy")
        c = subprocess.run(["curl", "-sS", "--http2-prior-knowledge", "--max-time", "10",
                            "-w", "\n%{http_version}", "--aws-sigv4", f"aws:amz:{REGION}:sqs",
                            "--user", "default:default",
                            "-H", "Content-Type: application/x-amz-json-1.0",
                            "-H", "X-Amz-Target: AmazonSQS.ListQueues", "--data", "{}",
                            endpoint + "/"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=20, check=False)
        reply, _, version = c.stdout.decode().rpartition("\n")
        eq(version, "2", f"HTTP/2 to HAProxy ({c.stderr.decode()})")
        eq(json.loads(reply).get("QueueUrls"), [url], "ListQueues over h2c")

        steps.step("scripts/cluster stop leaves no process")
        r = subprocess.run([SCRIPT, "stop"], env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=60, check=False)
        eq(r.returncode, 0, f"scripts/cluster stop ({r.stdout.decode(errors='replace')})")
        eq([p for p in pids if alive(p)], [], "processes left after stop")
        eq(script_pids(root), [], "pid files left after stop")

        steps.step("its owner killed, scripts/cluster's watcher stops everything")
        owner = subprocess.Popen(["sleep", "600"], preexec_fn=harness.dies_with_us())
        env["SLUICE_CLUSTER_OWNER"] = str(owner.pid)
        r = subprocess.run([SCRIPT], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           timeout=90, check=False)
        pids = script_pids(root)
        eq(r.returncode, 0, f"scripts/cluster again ({r.stdout.decode(errors='replace')})")
        eq(len(pids), 5, "three nodes, HAProxy and the watcher again")
        owner.kill()
        owner.wait()
        deadline = time.monotonic() + 40
        while [p for p in pids if alive(p)] and time.monotonic() < deadline:
            time.sleep(0.2)
        eq([p for p in pids if alive(p)], [], "processes left 40 s after the owner died")
    finally:
        for p in pids:
            if alive(p):
                os.kill(p, signal.SIGKILL)
        shutil.rmtree(root, ignore_errors=True)


def body(steps):
    with cluster_harness.Cluster(partitions=4) as cluster:
        cluster.wait_leaders()
        check_metrics(steps, cluster)
        check_quorum(steps, cluster)
    check_script(steps)


if __name__ == "__main__":
    sys.exit(Steps("cluster_ops").run(body))
