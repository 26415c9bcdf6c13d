"""test_cluster_rolling.py -- a rolling restart of a three-node cluster
behind Debian's HAProxy, as docs/operations.md deploys it, while the stock
boto3 runs its workload through HAProxy's one endpoint: each node in turn
is stopped with SIGTERM (it drains), restarted on its data_dir, and
waited for until it is healthy and every partition has a leader again.
The checker that recorded every acknowledgement then proves that no
acknowledged send was lost, no acknowledged delete came back and FIFO
order held, and no request failed past the SDK's own retries: every error
a client saw during the restarts was a retryable one that the SDK retried
away.
"""

import sys
import time

import harness
from harness import TENANTS, Steps, ok

boto3 = harness.require_module("boto3", "python3-boto3")
import botocore.config as botocore_config  # noqa: E402  (after the module checks)
import cluster_harness  # noqa: E402
from cluster_workload import Workload  # noqa: E402

PHASE_S = 4


def main(s):
    with cluster_harness.Cluster() as cluster:
        s.step("three nodes behind HAProxy, health-checked on /healthz")
        cluster.wait_leaders()
        front = cluster.start_haproxy()
        key, secret = TENANTS["alpha"]
        cfg = botocore_config.Config(retries={"max_attempts": 8, "mode": "standard"})
        c = boto3.client("sqs", endpoint_url=front, region_name=harness.REGION,
                         aws_access_key_id=key, aws_secret_access_key=secret, config=cfg)
        std_url = c.create_queue(QueueName="rolling")["QueueUrl"]
        fifo_url = c.create_queue(QueueName="rolling.fifo",
                                  Attributes={"FifoQueue": "true"})["QueueUrl"]

        s.step("the workload runs through HAProxy")
        w = Workload(cluster, std_url, fifo_url, endpoint=front)
        w.start()
        time.sleep(PHASE_S)
        ok(len(w.acked_sends) > 0, "nothing was acknowledged through HAProxy")

        for node in cluster.nodes:
            s.step(f"restart node {node.id}: SIGTERM, start on its data_dir, wait for leaders")
            before = len(w.acked_sends)
            cluster.stop(node)
            time.sleep(PHASE_S / 2)
            cluster.start(node)  # healthy: caught up with the catalog
            cluster.wait_leaders()
            time.sleep(PHASE_S)
            ok(len(w.acked_sends) > before,
               f"no send was acknowledged while node {node.id} restarted")

        s.step("drain and check every acknowledgement")
        w.stop()
        w.check()


if __name__ == "__main__":
    sys.exit(Steps("cluster_rolling").run(main))
