"""test_ops_monitoring.py -- the operations files of tools/ops against
Debian's promtool and a real sluiced:

- sluice-alerts.yml passes `promtool check rules` and its unit tests
  (sluice-alerts.test.yml) pass `promtool test rules`: each alert fires on
  the series meant to fire it and not on its look-alike;
- sluice-dashboard.json parses as a Grafana dashboard (panels with
  targets, unique ids, no overlapping grid positions);
- every sluice_* metric the rules and the dashboard query is exposed by
  /metrics of a gateway that has seen a little traffic (a queue with a
  dead-letter queue, a send, a receive), so a renamed metric cannot leave
  an alert silently watching nothing; a cluster's metrics (CLUSTER_ONLY),
  absent on one node, are checked on a cluster's node by
  test_cluster_ops.py.
"""

import json
import os
import re
import subprocess
import sys
import urllib.request

from harness import BEARER_TOKEN, REGION, TENANTS, Sluiced, Steps, eq, fail, ok, require_program

PROMTOOL = "/usr/bin/promtool"
OPS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "ops")
RULES = os.path.join(OPS, "sluice-alerts.yml")
RULE_TESTS = os.path.join(OPS, "sluice-alerts.test.yml")
DASHBOARD = os.path.join(OPS, "sluice-dashboard.json")
# Exposed only by a cluster's node.
CLUSTER_ONLY = re.compile(r"^sluice_(cluster_|partition_raft_|partition_leader_node$)")


def promtool(*args):
    r = subprocess.run([PROMTOOL, *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       timeout=60, check=False, cwd=OPS)
    out = r.stdout.decode(errors="replace")
    if r.returncode != 0:
        fail(f"promtool {' '.join(args)} exited {r.returncode}:\n{out}")
    return out


def metric_names(text):
    """sluice_* names in an expression text (label values excluded)."""
    text = re.sub(r'"[^"]*"', '""', text)
    return set(re.findall(r"\bsluice_[a-z0-9_]+\b", text))


def sqs(server, action, request):
    key, secret = TENANTS["alpha"]
    r = subprocess.run(["curl", "-sS", "--http2-prior-knowledge", "--max-time", "10",
                        "--aws-sigv4", f"aws:amz:{REGION}:sqs", "--user", f"{key}:{secret}",
                        "-H", "Content-Type: application/x-amz-json-1.0",
                        "-H", f"X-Amz-Target: AmazonSQS.{action}",
                        "--data-binary", json.dumps(request), server.endpoint + "/"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=20, check=False)
    if r.returncode != 0:
        fail(f"{action}: curl {r.returncode}: {r.stderr.decode()}")
    return json.loads(r.stdout or b"{}")


def body(steps):
    require_program(PROMTOOL, "prometheus")

    steps.step("promtool check rules")
    out = promtool("check", "rules", RULES)
    ok("SUCCESS: 7 rules found" in out, f"seven rules, clean: {out.strip()}")

    steps.step("promtool test rules")
    out = promtool("test", "rules", RULE_TESTS)
    ok("SUCCESS" in out, f"rule unit tests pass: {out.strip()}")

    steps.step("the dashboard parses and its panels are well formed")
    with open(DASHBOARD, encoding="utf-8") as f:
        dash = json.load(f)
    panels = dash.get("panels", [])
    ok(len(panels) >= 10, f"at least ten panels, got {len(panels)}")
    eq(len({p["id"] for p in panels}), len(panels), "unique panel ids")
    cells = set()
    for p in panels:
        ok(p.get("targets"), f"panel {p.get('title')!r} queries something")
        g = p["gridPos"]
        for x in range(g["x"], g["x"] + g["w"]):
            for y in range(g["y"], g["y"] + g["h"]):
                ok((x, y) not in cells, f"panel {p['title']!r} overlaps another at {(x, y)}")
                cells.add((x, y))
    titles = " ".join(p["title"] for p in panels).lower()
    for topic in ("dead-letter", "oldest", "throttled", "partition writers"):
        ok(topic in titles, f"a panel about {topic!r} (the alerts' signals)")

    wanted = set()
    for p in panels:
        for t in p["targets"]:
            wanted |= metric_names(t["expr"])
    for v in dash.get("templating", {}).get("list", []):
        q = v.get("query")
        wanted |= metric_names(q["query"] if isinstance(q, dict) else str(q or ""))
    with open(RULES, encoding="utf-8") as f:
        rule_metrics = set()
        for line in f:
            if not line.lstrip().startswith("#"):
                rule_metrics |= metric_names(line.split("sluicectl")[0])
    wanted |= rule_metrics
    ok(len(rule_metrics) >= 8, f"the rules query the metrics: {sorted(rule_metrics)}")

    with Sluiced() as server:
        steps.step("a little traffic: a queue with a DLQ, a send and a receive")
        dlq = sqs(server, "CreateQueue", {"QueueName": "mon-dlq"})["QueueUrl"]
        src = sqs(server, "CreateQueue", {"QueueName": "mon", "Attributes": {
            "RedrivePolicy": json.dumps({
                "deadLetterTargetArn": f"arn:aws:sqs:{REGION}:alpha:mon-dlq",
                "maxReceiveCount": 1})}})["QueueUrl"]
        sqs(server, "SendMessage", {"QueueUrl": src, "MessageBody": "x"})
        sqs(server, "ReceiveMessage", {"QueueUrl": src})
        sqs(server, "SendMessage", {"QueueUrl": dlq, "MessageBody": "y"})

        steps.step("every metric the rules and the dashboard query is in /metrics")
        req = urllib.request.Request(server.admin_endpoint + "/metrics",
                                     headers={"Authorization": f"Bearer {BEARER_TOKEN}"})
        with urllib.request.urlopen(req, timeout=10) as r:
            text = r.read().decode()
        exposed = set(re.findall(r"^(sluice_[a-z0-9_]+)[{ ]", text, re.M))
        missing = sorted(m for m in wanted - exposed if not CLUSTER_ONLY.match(m))
        eq(missing, [], "metrics queried but not exposed")
        ok(re.search(r'^sluice_queue_dead_letter_sources\{tenant="alpha",queue="mon-dlq"\} 1$',
                     text, re.M), "mon-dlq counts one dead-letter source")
        ok(re.search(r'^sluice_queue_dead_letter_sources\{tenant="alpha",queue="mon"\} 0$',
                     text, re.M), "mon is no DLQ")
        print(f"[ops] {len(wanted)} metrics queried, all exposed", flush=True)


if __name__ == "__main__":
    sys.exit(Steps("ops_monitoring").run(body))
