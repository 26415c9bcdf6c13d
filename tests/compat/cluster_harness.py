"""cluster_harness.py -- a three-node sluice cluster on this machine's
loopback for the cluster tests: every node a real sluiced with its own
data_dir and its SQS, admin, Raft and peer ports on 127.0.0.1, one shared
cluster secret, each process tied to the test's life (PR_SET_PDEATHSIG),
and the faults the tests inject: SIGKILL, SIGSTOP/SIGCONT, a restart on
the node's own data_dir, and a network cut.

The cut: each node reaches each other node's Raft and peer ports through
a TCP proxy of the test's own (a node's configuration lists the others at
their proxies' addresses, itself at its real ones), so cutting a node off
closes every proxied connection to and from it and refuses new ones until
it is healed, as a partitioned network would.
"""

import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import urllib.request

import harness
from harness import BEARER_TOKEN, fail


class Proxy:
    """127.0.0.1:port -> 127.0.0.1:target, byte for byte, that can be cut."""

    def __init__(self, target):
        self.target = target
        self.cut = False
        self.lock = threading.Lock()
        self.conns = []
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self.closed:
            try:
                a, _ = self.sock.accept()
            except OSError:
                return
            if self.cut:
                a.close()
                continue
            try:
                b = socket.create_connection(("127.0.0.1", self.target), timeout=2)
            except OSError:
                a.close()
                continue
            b.settimeout(None)
            with self.lock:
                self.conns += [a, b]
            threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()
            threading.Thread(target=self._pipe, args=(b, a), daemon=True).start()

    def _pipe(self, src, dst):
        try:
            while True:
                data = src.recv(65536)
                if not data or self.cut:
                    break
                dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def set_cut(self, cut):
        self.cut = cut
        if cut:
            with self.lock:
                conns, self.conns = self.conns, []
            for s in conns:
                try:
                    s.shutdown(socket.SHUT_RDWR)
                    s.close()
                except OSError:
                    pass

    def close(self):
        self.closed = True
        self.set_cut(True)
        self.sock.close()


def reserve_ports(n):
    """n distinct free ports, and the bound sockets that hold them: while
    they are held, nothing else (a proxy binding port 0) gets one."""
    socks = []
    for _ in range(n):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.bind(("127.0.0.1", 0))
        socks.append(s)
    return [s.getsockname()[1] for s in socks], socks


class Node:
    def __init__(self, root, node_id, ports):
        self.id = node_id
        self.dir = os.path.join(root, f"node{node_id}")
        os.makedirs(self.dir)
        self.port, self.admin_port, self.raft_port, self.peer_port = ports
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.config = os.path.join(self.dir, "sluice.yaml")
        self.log_path = os.path.join(self.dir, "sluiced.log")
        self.proc = None
        self.log = None
        self.stopped = False  # SIGSTOPped
        self.cut = False  # cut off from the other nodes

    @property
    def up(self):
        return (self.proc is not None and self.proc.poll() is None and not self.stopped
                and not self.cut)


class Cluster:
    """Three nodes (size of them); use as a context manager."""

    def __init__(self, size=3, partitions=4, shard_size=4, rate=30000, clustered=True):
        self.root = tempfile.mkdtemp(prefix="sluice-cluster-")
        self.partitions = partitions
        self.shard_size = shard_size
        self.rate = rate  # each tenant's requests_per_second and burst
        self.clustered = clustered  # False: one node without a cluster: section (baselines)
        self.secret = os.path.join(self.root, "cluster.secret")
        with open(self.secret, "wb") as f:
            f.write(os.urandom(48))
        ports, held = reserve_ports(4 * size)
        self.nodes = [Node(self.root, i + 1, ports[4 * i:4 * i + 4]) for i in range(size)]
        # proxies[(i, j, kind)]: node i's way to node j's kind port
        self.proxies = {}
        if clustered:
            for a in self.nodes:
                for b in self.nodes:
                    if a is not b:
                        self.proxies[(a.id, b.id, "raft")] = Proxy(b.raft_port)
                        self.proxies[(a.id, b.id, "peer")] = Proxy(b.peer_port)
        for sock in held:  # the nodes bind them now
            sock.close()

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
            raft, peer = n.raft_port, n.peer_port
            if n is not node:
                raft = self.proxies[(node.id, n.id, "raft")].port
                peer = self.proxies[(node.id, n.id, "peer")].port
            lines.append(f"    - {{id: {n.id}, raft: 127.0.0.1:{raft}, "
                         f"peer: 127.0.0.1:{peer}, api: 127.0.0.1:{n.port}}}")
        return "\n".join(lines) + "\n"

    def cut(self, node, cut=True):
        """Cuts node off from the others (cut=False heals it)."""
        node.cut = cut
        for (a, b, _), p in self.proxies.items():
            if node.id in (a, b):
                p.set_cut(cut)

    def start(self, node, wait=True):
        """Starts node's sluiced; wait: until its /healthz says ok (a node
        answers 503 until a majority of the nodes is up)."""
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
        if wait:
            self.wait_healthy(node)

    def wait_healthy(self, node, timeout=15):
        deadline = time.monotonic() + timeout
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
                self.start(node, wait=False)
            for node in self.nodes:
                self.wait_healthy(node)
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def kill(self, node):
        node.proc.send_signal(signal.SIGKILL)
        node.proc.wait()
        node.proc = None
        node.log.close()

    def stop(self, node, timeout=30):
        """SIGTERM, as a rolling restart stops a node: it drains and exits."""
        node.proc.send_signal(signal.SIGTERM)
        try:
            node.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            fail(f"node {node.id} did not exit within {timeout} s of SIGTERM: "
                 f"{self.log_tail(node)}")
        node.proc = None
        node.log.close()

    def start_haproxy(self):
        """Debian's HAProxy on a loopback port in front of every node's SQS
        port, health-checked on /healthz as docs/operations.md shows;
        returns its endpoint. Stopped with the cluster."""
        binary = shutil.which("haproxy") or "/usr/sbin/haproxy"
        if not os.access(binary, os.X_OK):
            fail("haproxy is missing: install Debian's haproxy (scripts/setup does)")
        ports, held = reserve_ports(1)
        cfg = os.path.join(self.root, "haproxy.cfg")
        lines = [
            "global", "    maxconn 4096",
            "defaults", "    mode http", "    timeout connect 2s", "    timeout client 60s",
            "    timeout server 30s", "    timeout http-keep-alive 60s", "    retries 2",
            "    option redispatch", "    retry-on conn-failure empty-response",
            "frontend sqs", f"    bind 127.0.0.1:{ports[0]}", "    default_backend sluice",
            "backend sluice", "    balance roundrobin", "    option httpchk GET /healthz",
            "    http-check expect status 200",
            "    default-server check inter 500ms fall 2 rise 2 on-marked-down shutdown-sessions",
        ]
        lines += [f"    server node{n.id} 127.0.0.1:{n.port} proto h2 check-proto h1"
                  for n in self.nodes]
        with open(cfg, "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
        for sock in held:
            sock.close()
        self.haproxy_log = open(os.path.join(self.root, "haproxy.log"), "ab")
        self.haproxy = subprocess.Popen([binary, "-f", cfg], stdin=subprocess.DEVNULL,
                                        stdout=self.haproxy_log, stderr=subprocess.STDOUT,
                                        preexec_fn=harness.dies_with_us())
        deadline = time.monotonic() + 15
        while not harness._healthy(ports[0]):
            if self.haproxy.poll() is not None or time.monotonic() > deadline:
                fail(f"haproxy did not answer on 127.0.0.1:{ports[0]}")
            time.sleep(0.1)
        return f"http://127.0.0.1:{ports[0]}"

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

    haproxy = None

    def __exit__(self, exc_type, exc, tb):
        if self.haproxy is not None:
            self.haproxy.kill()
            self.haproxy.wait()
            self.haproxy_log.close()
            self.haproxy = None
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
        for p in self.proxies.values():
            p.close()
        if os.environ.get("SLUICE_CLUSTER_KEEP"):
            print(f"kept {self.root}")  # for a post-mortem of a failed run
        else:
            shutil.rmtree(self.root, ignore_errors=True)
        return False
