"""test_cluster_failover.py -- a three-node cluster under the stock boto3
(Debian's python3-boto3) and @aws-sdk/client-sqs v3 (tests/sdk's
cluster-client.mjs), their workload spread over the three nodes'
endpoints, while the node that leads the most partitions is killed with
SIGKILL, then (after it came back) one is SIGSTOPped for longer than the
election timeout, and then one is cut off the network (every connection
to and from it through the test's proxies dropped) and healed; the cut
node answers a send with 503, never an acknowledgement. A checker that
recorded every acknowledgement proves afterwards:
  - no acknowledged send is lost (every one is received);
  - no acknowledged delete comes back (nothing is received after the
    acknowledgement of its delete);
  - FIFO order held within every group, and a FIFO message is not
    delivered again once deleted;
a node restarted on its data_dir catches up and serves, and so does a
node restarted from an empty data_dir.

Every client error during the faults must be one the SDK retried: a
request that still fails after botocore's retries fails the test unless
it was made to the node that is down at that moment.
"""

import json
import os
import shutil
import subprocess
import sys
import time

import harness
from harness import TENANTS, Steps, eq, fail, ok

boto3 = harness.require_module("boto3", "python3-boto3")
harness.require_module("botocore", "python3-botocore")
import botocore.config as botocore_config  # noqa: E402  (after the module checks)
import cluster_harness  # noqa: E402
from cluster_workload import Workload  # noqa: E402

PHASE_S = 6


def start_js_client(cluster, url, seconds):
    """@aws-sdk/client-sqs v3 over HTTP/2, from tests/sdk (whose modules
    npm installs: the sdk_install test, as scripts/test runs it)."""
    sdk = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "sdk")
    node = shutil.which("node")
    ok(node is not None, "node is missing: install Debian's nodejs (scripts/setup does)")
    ok(os.path.isdir(os.path.join(sdk, "node_modules", "@aws-sdk", "client-sqs")),
       "tests/sdk/node_modules has no @aws-sdk/client-sqs: run npm ci there (sdk_install)")
    return subprocess.Popen([node, "cluster-client.mjs", url, str(seconds)] +
                            [n.endpoint for n in cluster.nodes], cwd=sdk,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=harness.dies_with_us())


def check_js(out):
    received = {b for kind, b, _ in out["events"] if kind == "r"}
    lost = sorted(set(out["sent"]) - received)
    eq(lost[:10], [], f"JS: acknowledged sends lost ({len(lost)} of {len(out['sent'])})")
    deleted, back = set(), []
    for kind, body, mid in out["events"]:
        if kind == "d":
            deleted.add(mid)
        elif mid in deleted:
            back.append(body)
    eq(back[:10], [], "JS: acknowledged deletes that came back")
    # Only the node that was stopped may fail a request past the retries:
    # a client bound to it waits out its stall.
    ok(len(out["errors"]) <= 3, f"JS: errors past the SDK's retries: {out['errors'][:5]}")
    ok(len(out["sent"]) > 0, "JS: nothing was acknowledged")
    print(f"  JS: {len(out['sent'])} sends acknowledged, {len(received)} received", flush=True)


def main(s):
    with cluster_harness.Cluster() as cluster:
        s.step("three nodes elect leaders for every partition")
        cluster.wait_leaders()
        key, secret = TENANTS["alpha"]
        cfg = botocore_config.Config(retries={"max_attempts": 8, "mode": "standard"})
        c0 = boto3.client("sqs", endpoint_url=cluster.nodes[0].endpoint,
                          region_name=harness.REGION, aws_access_key_id=key,
                          aws_secret_access_key=secret, config=cfg)
        std_url = c0.create_queue(QueueName="work")["QueueUrl"]
        fifo_url = c0.create_queue(QueueName="orders.fifo",
                                   Attributes={"FifoQueue": "true"})["QueueUrl"]

        s.step("the workload runs over all three endpoints")
        w = Workload(cluster, std_url, fifo_url)
        w.start()
        time.sleep(PHASE_S)
        ok(len(w.acked_sends) > 0, "nothing was acknowledged before the faults")

        s.step("SIGKILL the node that leads the most partitions")
        victim = cluster.busiest()
        cluster.kill(victim)
        cluster.wait_leaders()
        # The survivors serve again: sends are acknowledged once more. A
        # producer whose request was on the dead node goes on retrying it
        # in the SDK's back-off (up to 20 s a try, 8 tries), so this is
        # given that long; it is not a failover timing (loadtest's
        # cluster-bench measures that).
        before = len(w.acked_sends)
        deadline = time.monotonic() + 150
        while len(w.acked_sends) < before + 50:
            ok(time.monotonic() < deadline, "no send was acknowledged after the kill")
            time.sleep(0.2)
        time.sleep(PHASE_S)

        s.step("the killed node restarts on its data_dir and catches up")
        cluster.start(victim)
        time.sleep(PHASE_S)

        s.step("SIGSTOP the busiest node past the election timeout, then SIGCONT")
        js_url = c0.create_queue(QueueName="js-work")["QueueUrl"]
        js = start_js_client(cluster, js_url, 3 * PHASE_S)
        time.sleep(PHASE_S / 2)
        stopped = cluster.busiest()
        cluster.pause(stopped)
        time.sleep(PHASE_S)
        cluster.resume(stopped)
        time.sleep(PHASE_S)

        s.step("cut the busiest node off the network: it refuses writes, then heals")
        cut = cluster.busiest()
        cluster.cut(cut)
        cluster.wait_leaders()  # the majority elects leaders among itself
        time.sleep(3)  # past the election timeout: the cut node steps down
        lone = boto3.client("sqs", endpoint_url=cut.endpoint, region_name=harness.REGION,
                            aws_access_key_id=key, aws_secret_access_key=secret,
                            config=botocore_config.Config(retries={"total_max_attempts": 1},
                                                          read_timeout=20))
        for i in range(5):
            try:
                lone.send_message(QueueUrl=std_url, MessageBody=f"minority-{i}")
                fail(f"the cut-off node acknowledged send minority-{i}")
            except lone.exceptions.ClientError as exc:
                eq(exc.response["ResponseMetadata"]["HTTPStatusCode"], 503,
                   f"the cut-off node's answer to a send ({exc})")
        time.sleep(PHASE_S / 2)
        cluster.cut(cut, False)
        time.sleep(PHASE_S)

        s.step("drain and check every acknowledgement")
        w.stop()
        w.check()

        s.step("the JavaScript SDK's acknowledgements hold too")
        out, err = js.communicate(timeout=120)
        eq(js.returncode, 0, f"cluster-client.mjs failed: {err[-2000:]}")
        js_out = json.loads(out.strip().splitlines()[-1])
        check_js(js_out)

        s.step("the restarted node serves what is left")
        node = cluster.nodes[victim.id - 1]
        c = w.clients[node.id]
        c.send_message(QueueUrl=std_url, MessageBody="after")
        got = []
        for _ in range(20):
            r = c.receive_message(QueueUrl=std_url, MaxNumberOfMessages=10, WaitTimeSeconds=1)
            got += [m["Body"] for m in r.get("Messages", [])]
            if "after" in got:
                break
        ok("after" in got, f"the restarted node did not serve the message sent through it: {got}")

        s.step("a node restarted from an empty data_dir catches up, then serves")
        empty = next(n for n in cluster.nodes if n.id != victim.id)
        other = next(n for n in cluster.nodes if n.id not in (victim.id, empty.id))
        cluster.kill(empty)
        shutil.rmtree(os.path.join(empty.dir, "data"))
        cluster.start(empty)  # healthy: it knows the catalog's leader and is caught up
        w.clients[other.id].send_message(QueueUrl=std_url, MessageBody="after-empty")
        c = w.clients[empty.id]
        got = []
        for _ in range(20):  # each a long poll: it wakes when the entry lands here
            r = c.receive_message(QueueUrl=std_url, MaxNumberOfMessages=10, WaitTimeSeconds=1)
            got += [m["Body"] for m in r.get("Messages", [])]
            if "after-empty" in got:
                break
        ok("after-empty" in got,
           f"the node restarted empty did not serve the message sent through another: {got}")


if __name__ == "__main__":
    sys.exit(Steps("cluster_failover").run(main))
