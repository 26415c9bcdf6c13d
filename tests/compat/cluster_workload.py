"""cluster_workload.py -- the stock boto3 workload the cluster tests run
(test_cluster_failover.py, test_cluster_rolling.py): producers of batches,
a FIFO producer with deduplication ids, and consumers, each request to a
random live node's endpoint (or every request to one endpoint, a load
balancer's), recording every acknowledgement so that afterwards a checker
can prove that no acknowledged send was lost, no acknowledged delete came
back and FIFO order held."""

import random
import threading
import time

import harness
from harness import TENANTS, eq

boto3 = harness.require_module("boto3", "python3-boto3")
harness.require_module("botocore", "python3-botocore")
import botocore.config as botocore_config  # noqa: E402  (after the module checks)


class Workload:
    """Producers, a FIFO producer and consumers over the live endpoints,
    recording every acknowledgement."""

    def __init__(self, cluster, std_url, fifo_url, endpoint=None):
        """endpoint: every request goes there (a load balancer in front of
        the nodes) instead of to a random live node."""
        self.cluster = cluster
        self.endpoint = endpoint
        self.std_url = std_url
        self.fifo_url = fifo_url
        key, secret = TENANTS["alpha"]
        cfg = botocore_config.Config(retries={"max_attempts": 8, "mode": "standard"},
                                     connect_timeout=2, read_timeout=20)
        self.clients = {n.id: boto3.client("sqs", endpoint_url=n.endpoint,
                                           region_name=harness.REGION,
                                           aws_access_key_id=key, aws_secret_access_key=secret,
                                           config=cfg)
                        for n in cluster.nodes}
        if endpoint is not None:
            self.front = boto3.client("sqs", endpoint_url=endpoint, region_name=harness.REGION,
                                      aws_access_key_id=key, aws_secret_access_key=secret,
                                      config=cfg)
        self.lock = threading.Lock()
        self.acked_sends = set()
        self.received = {}        # body -> deliveries
        self.deleted_at = {}      # MessageId -> monotonic time its delete was acknowledged
        self.back_after_delete = []
        self.fifo_sent = {}       # group -> last acknowledged n
        self.fifo_seen = {}       # group -> highest n delivered the first time
        self.fifo_deleted = {}    # group -> highest n whose delete was acknowledged
        self.fifo_errors = []
        self.errors = []
        self.stop_producing = threading.Event()
        self.stop_consuming = threading.Event()

    def client(self):
        if self.endpoint is not None:
            return None, self.front
        live = [n for n in self.cluster.nodes if n.up]
        node = random.choice(live)
        return node, self.clients[node.id]

    def note_error(self, node, exc):
        # A node that was down when the request ended is no fault of the
        # cluster: its clients fail over to another endpoint.
        if node is None or node.up:
            with self.lock:
                where = "front" if node is None else f"node {node.id}"
                self.errors.append(f"{where}: {type(exc).__name__}: {exc}")

    def produce(self, tid):
        n = 0
        while not self.stop_producing.is_set():
            bodies = [f"std-{tid}-{n + i}" for i in range(5)]
            node, c = self.client()
            try:
                c.send_message_batch(QueueUrl=self.std_url, Entries=[
                    {"Id": str(i), "MessageBody": b} for i, b in enumerate(bodies)])
                with self.lock:
                    self.acked_sends.update(bodies)
            except Exception as exc:  # unacknowledged: may or may not be stored
                self.note_error(node, exc)
            n += 5

    def produce_fifo(self):
        groups = [f"g{i}" for i in range(4)]
        nxt = {g: 0 for g in groups}
        while not self.stop_producing.is_set():
            g = random.choice(groups)
            n = nxt[g]
            node, c = self.client()
            try:
                # A retry of the same message carries the same deduplication
                # id, so the group's order is the acknowledged order.
                c.send_message(QueueUrl=self.fifo_url, MessageBody=f"{g}:{n}",
                               MessageGroupId=g, MessageDeduplicationId=f"{g}-{n}")
                with self.lock:
                    self.acked_sends.add(f"{g}:{n}")
                    self.fifo_sent[g] = n
                nxt[g] = n + 1
            except Exception as exc:
                self.note_error(node, exc)

    def take(self, url, fifo):
        node, c = self.client()
        try:
            r = c.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=1,
                                  VisibilityTimeout=8)
        except Exception as exc:
            self.note_error(node, exc)
            return 0
        msgs = r.get("Messages", [])
        with self.lock:
            for m in msgs:
                b = m["Body"]
                # By MessageId: a send retried after an unanswered attempt
                # that did commit is stored twice (at-least-once, as SQS),
                # under two ids; a deleted id must never come back.
                if m["MessageId"] in self.deleted_at:
                    self.back_after_delete.append(f"{b} ({m['MessageId']})")
                self.received[b] = self.received.get(b, 0) + 1
                if fifo:
                    g, n = b.split(":")
                    n = int(n)
                    seen = self.fifo_seen.get(g, -1)
                    if n > seen + 1:
                        self.fifo_errors.append(f"{g}: {n} delivered before {seen + 1}")
                    if n <= self.fifo_deleted.get(g, -1):
                        self.fifo_errors.append(f"{g}: {n} delivered after its delete")
                    self.fifo_seen[g] = max(seen, n)
        if not msgs:
            return 0
        node, c = self.client()
        try:
            r = c.delete_message_batch(QueueUrl=url, Entries=[
                {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(msgs)])
            done = time.monotonic()
            with self.lock:
                for s in r.get("Successful", []):
                    m = msgs[int(s["Id"])]
                    b = m["Body"]
                    self.deleted_at[m["MessageId"]] = done
                    if fifo:
                        g, n = b.split(":")
                        self.fifo_deleted[g] = max(self.fifo_deleted.get(g, -1), int(n))
        except Exception as exc:
            self.note_error(node, exc)
        return len(msgs)

    def consume(self, url, fifo):
        while not self.stop_consuming.is_set():
            self.take(url, fifo)

    def start(self):
        self.threads = [threading.Thread(target=self.produce, args=(t,)) for t in range(2)]
        self.threads.append(threading.Thread(target=self.produce_fifo))
        self.consumers = [threading.Thread(target=self.consume, args=(self.std_url, False))
                          for _ in range(2)]
        self.consumers.append(threading.Thread(target=self.consume, args=(self.fifo_url, True)))
        for t in self.threads + self.consumers:
            t.daemon = True
            t.start()

    def stop(self):
        self.stop_producing.set()
        for t in self.threads:
            t.join(timeout=60)
        # Drain: consume until every acknowledged send was received, or
        # nothing more comes for a while.
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with self.lock:
                missing = self.acked_sends - set(self.received)
            if not missing:
                break
            time.sleep(0.5)
        self.stop_consuming.set()
        for t in self.consumers:
            t.join(timeout=60)

    def check(self):
        """After stop(): what the acknowledgements promise held."""
        lost = sorted(self.acked_sends - set(self.received))
        eq(lost[:10], [], f"acknowledged sends lost ({len(lost)} of {len(self.acked_sends)})")
        eq(self.back_after_delete[:10], [], "acknowledged deletes that came back")
        eq(self.fifo_errors[:10], [], "FIFO order or deletion broken")
        eq(self.errors[:10], [], "client errors the SDK did not retry away")
        print(f"  {len(self.acked_sends)} sends acknowledged, {len(self.received)} distinct "
              f"received, {sum(self.received.values())} deliveries, {len(self.deleted_at)} "
              f"deletes", flush=True)
