"""cluster_harness.py -- a three-node sluice cluster on this machine's
loopback for the cluster tests: every node a real sluiced with its own
data_dir and its SQS, admin, Raft and peer ports on 127.0.0.1, one shared
cluster secret, each process tied to the test's life (PR_SET_PDEATHSIG),
and the faults the tests inject: SIGKILL, SIGSTOP/SIGCONT and a restart on
the node's own data_dir.
"""

import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request

import harness
from harness import BEARER_TOKEN, fail


class Node:
    def __init__(self, root, node_id):
        self.id = node_id
        self.dir = os.path.join(root, f"node{node_id}")
        os.makedirs(self.dir)
        self.port = harness._free_port()
        self.admin_port = harness._free_port()
        self.raft_port = harness._free_port()
        self.peer_port = harness._free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.config = os.path.join(self.dir, "sluice.yaml")
        self.log_path = os.path.join(self.dir, "sluiced.log")
        self.proc = None
        self.log = None
        self.stopped = False  # SIGSTOPped

    @property
    def up(self):
        return self.proc is not None and self.proc.poll() is None and not self.stopped


class Cluster:
    """Three nodes (size of them); use as a context manager."""

    def __init__(self, size=3, partitions=4, shard_size=4, rate=5000, clustered=True):
        self.root = tempfile.mkdtemp(prefix="sluice-cluster-")
        self.partitions = partitions
        self.shard_size = shard_size
        self.rate = rate  # each tenant's requests_per_second and burst
        self.clustered = clustered  # False: one node without a cluster: section (baselines)
        self.secret = os.path.join(self.root, "cluster.secret")
        with open(self.secret, "wb") as f:
            f.write(os.urandom(48))
        self.nodes = [Node(self.root, i + 1) for i in range(size)]

    def _config(self, node):
        lines = harness.config_lines(node.port, node.admin_port, f"{node.dir}/data",
                                     self.partitions, self.shard_size, "fsync",
                                     [f"    limits: {{requests_per_second: {self.rate}, "
                                      f"burst: {self.rate}}}"])
        if not self.clustered:
            return "\n".join(lines) + "\n"
        lines += [
            "cluster:",
            f"  node_id: {node.id}",
            f"  raft: 127.0.0.1:{node.raft_port}",
            f"  peer: 127.0.0.1:{node.peer_port}",
            f"  secret_file: {self.secret}",
            f"  replication: {len(self.nodes)}",
            "  nodes:",
        ]
        for n in self.nodes:
            lines.append(f"    - {{id: {n.id}, raft: 127.0.0.1:{n.raft_port}, "
                         f"peer: 127.0.0.1:{n.peer_port}, api: 127.0.0.1:{n.port}}}")
        return "\n".join(lines) + "\n"

    def start(self, node):
        binary = os.path.join(harness.build_dir(), "sluiced")
        if not os.access(binary, os.X_OK):
            fail(f"no sluiced at {binary}: build first or set SLUICE_BUILD_DIR")
        with open(node.config, "w", encoding="utf-8") as f:
            f.write(self._config(node))
        node.log = open(node.log_path, "ab")
        node.proc = subprocess.Popen([binary, "--config", node.config], stdin=subprocess.DEVNULL,
                                     stdout=node.log, stderr=subprocess.STDOUT,
                                     preexec_fn=harness.dies_with_us())
        node.stopped = False
        deadline = time.monotonic() + 15
        while not harness._healthy(node.port):
            if node.proc.poll() is not None:
                fail(f"node {node.id} exited early ({node.proc.returncode}): "
                     f"{self.log_tail(node)}")
            if time.monotonic() > deadline:
                fail(f"node {node.id} did not become healthy: {self.log_tail(node)}")
            time.sleep(0.05)

    def __enter__(self):
        try:
            for node in self.nodes:
                self.start(node)
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def kill(self, node):
        node.proc.send_signal(signal.SIGKILL)
        node.proc.wait()
        node.proc = None
        node.log.close()

    def pause(self, node):
        node.proc.send_signal(signal.SIGSTOP)
        node.stopped = True

    def resume(self, node):
        node.proc.send_signal(signal.SIGCONT)
        node.stopped = False

    def metrics(self, node):
        req = urllib.request.Request(f"http://127.0.0.1:{node.admin_port}/metrics",
                                     headers={"Authorization": f"Bearer {BEARER_TOKEN}"})
        with urllib.request.urlopen(req, timeout=5) as r:
            return r.read().decode()

    def leaders(self, node):
        """partition -> the node id node believes leads it (0: none)."""
        text = self.metrics(node)
        return {int(p): int(float(v)) for p, v in
                re.findall(r'^sluice_partition_leader_node\{partition="(\d+)"\} (\S+)$', text,
                           re.M)}

    def wait_leaders(self, timeout=30):
        """Waits until a live node knows a live leader for every partition;
        returns partition -> leader id."""
        deadline = time.monotonic() + timeout
        live = {n.id for n in self.nodes if n.up}
        while True:
            for node in self.nodes:
                if not node.up:
                    continue
                try:
                    got = self.leaders(node)
                except OSError:
                    continue
                if len(got) == self.partitions and all(v in live for v in got.values()):
                    return got
            if time.monotonic() > deadline:
                fail("the partitions have no live leaders")
            time.sleep(0.1)

    def busiest(self):
        """The live node that leads the most partitions."""
        leaders = self.wait_leaders()
        counts = {}
        for v in leaders.values():
            counts[v] = counts.get(v, 0) + 1
        return self.nodes[max(counts, key=counts.get) - 1]

    def log_tail(self, node, n=3000):
        try:
            with open(node.log_path, "rb") as f:
                return f.read()[-n:].decode("utf-8", "replace")
        except OSError:
            return "(no log)"

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None and os.environ.get("SLUICE_CLUSTER_KEEP") and shutil.which("gdb"):
            for node in self.nodes:  # where each live node's threads are
                if node.proc is not None and node.proc.poll() is None:
                    with open(os.path.join(node.dir, "stacks.txt"), "w") as f:
                        subprocess.run(["gdb", "-p", str(node.proc.pid), "-batch", "-ex",
                                        "thread apply all bt 12"], stdout=f,
                                       stderr=subprocess.STDOUT, check=False, timeout=60)
        for node in self.nodes:
            if node.proc is not None:
                if node.stopped:
                    node.proc.send_signal(signal.SIGCONT)
                node.proc.send_signal(signal.SIGKILL)
                node.proc.wait()
                node.log.close()
                node.proc = None
        if exc_type is not None:
            for node in self.nodes:
                print(f"--- node {node.id} log (tail)\n{self.log_tail(node)}")
        if os.environ.get("SLUICE_CLUSTER_KEEP"):
            print(f"kept {self.root}")  # for a post-mortem of a failed run
        else:
            shutil.rmtree(self.root, ignore_errors=True)
        return False
