"""test_prometheus.py -- a Prometheus-style scrape of the admin listener's
/metrics over HTTP/1.1 (Prometheus's scraper speaks HTTP/1.1 to a cleartext
target) with the bearer token, after some SQS traffic from boto3, and the
exposition checked by Debian's `promtool check metrics`. Every line
promtool prints (errors and lint problems alike) fails the test: the
metrics are ours, so there is no lint finding we would argue away."""

import http.client
import json
import re
import subprocess
import sys

from harness import (BEARER_TOKEN, REGION, TENANTS, Sluiced, Steps, eq, fail, ok,
                     require_program)

PROMTOOL = "/usr/bin/promtool"


def scrape(server, token):
    """GET /metrics over HTTP/1.1; returns (status, headers, body)."""
    conn = http.client.HTTPConnection("127.0.0.1", server.admin_port, timeout=10)
    headers = {"Accept": "text/plain;version=0.0.4;q=1,*/*;q=0.1",
               "User-Agent": "Prometheus/2.42.0"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    try:
        conn.request("GET", "/metrics", headers=headers)
        r = conn.getresponse()
        eq(r.version, 11, "the answer's HTTP version")
        return r.status, r.headers, r.read()
    finally:
        conn.close()


def sample(text, name, labels):
    """The value of the sample name{labels...} (labels a dict), or None."""
    for line in text.splitlines():
        m = re.match(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$", line)
        if not m or m.group(1) != name:
            continue
        have = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(3) or ""))
        if all(have.get(k) == v for k, v in labels.items()):
            return float(m.group(4))
    return None


def sqs_json(server, action, request):
    """One signed SQS call. The traffic only has to be counted; it goes over
    HTTP/2 so that this test depends on nothing but the scrape."""
    key, secret = TENANTS["alpha"]
    r = subprocess.run(["curl", "-sS", "--http2-prior-knowledge", "--max-time", "10",
                        "--aws-sigv4", f"aws:amz:{REGION}:sqs", "--user", f"{key}:{secret}",
                        "-H", "Content-Type: application/x-amz-json-1.0",
                        "-H", f"X-Amz-Target: AmazonSQS.{action}",
                        "--data-binary", json.dumps(request), "-w", "\n%{http_code}",
                        server.endpoint + "/"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=20, check=False)
    out, _, status = r.stdout.decode().rpartition("\n")
    if r.returncode != 0 or status != "200":
        fail(f"{action} over HTTP/2: curl {r.returncode}, HTTP {status}: {out} "
             f"{r.stderr.decode().strip()}")
    return json.loads(out)


def body(steps):
    require_program(PROMTOOL, "prometheus")
    with Sluiced() as server:
        steps.step("SQS traffic (curl's SigV4 signer, JSON 1.0 over HTTP/2)")
        url = sqs_json(server, "CreateQueue", {"QueueName": "scraped"})["QueueUrl"]
        sqs_json(server, "SendMessage", {"QueueUrl": url, "MessageBody": "counted"})
        eq(len(sqs_json(server, "ReceiveMessage", {"QueueUrl": url}).get("Messages", [])), 1,
           "received")

        steps.step("/metrics without credentials is 401, a wrong token 403")
        status, headers, _ = scrape(server, None)
        eq(status, 401, "no credentials")
        ok((headers.get("WWW-Authenticate") or "").startswith("Bearer"),
           f"401 carries WWW-Authenticate: Bearer, got {headers.get('WWW-Authenticate')!r}")
        eq(scrape(server, "not-the-token")[0], 403, "a wrong token")

        steps.step("scrape /metrics over HTTP/1.1 with the bearer token")
        status, headers, data = scrape(server, BEARER_TOKEN)
        eq(status, 200, "scrape status")
        ok((headers.get("Content-Type") or "").startswith("text/plain; version=0.0.4"),
           f"Content-Type of the text format 0.0.4, got {headers.get('Content-Type')!r}")
        text = data.decode("utf-8")
        ok(sample(text, "sluice_requests_total",
                  {"tenant": "alpha", "action": "SendMessage", "outcome": "ok"}) == 1,
           "sluice_requests_total counts alpha's SendMessage once")
        ok((sample(text, "sluice_queue_requests_total",
                   {"tenant": "alpha", "queue": "scraped", "action": "ReceiveMessage"})
            or 0) >= 1, "sluice_queue_requests_total has the queue's receive")

        steps.step("promtool check metrics")
        r = subprocess.run([PROMTOOL, "check", "metrics"], input=data, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=30, check=False)
        out = r.stdout.decode(errors="replace").strip()
        if r.returncode != 0 or out:
            fail(f"promtool check metrics exited {r.returncode}: {out}")
        print(f"[prometheus] {len(text.splitlines())} lines, promtool clean", flush=True)


if __name__ == "__main__":
    sys.exit(Steps("prometheus").run(body))
