#!/usr/bin/env python3
"""gen_curl_vectors.py -- writes curl_vectors.json: SigV4-signed requests as
the curl tool (libcurl's CURLOPT_AWS_SIGV4, an implementation independent of
sluice's) puts them on the wire, captured by a one-shot listener on
127.0.0.1. Each vector is the raw request (method, path, query, headers in
arrival order, body) with its Authorization header; curl picks the date
itself, so "now" is taken from the captured X-Amz-Date.

Run from tests/data/sigv4:  python3 gen_curl_vectors.py > curl_vectors.json
"""
import json
import socket
import subprocess
import sys

CASES = [
    dict(name="curl-sqs-list-queues", akid="AKIDACME", secret="acme-secret", provider="aws:amz:us-east-1:sqs",
         method="POST", target="/", headers=["Content-Type: application/x-amz-json-1.0",
                                             "X-Amz-Target: AmazonSQS.ListQueues"], body=b"{}"),
    dict(name="curl-sqs-send-unicode", akid="AKIDACME", secret="acme-secret", provider="aws:amz:us-east-1:sqs",
         method="POST", target="/", headers=["Content-Type: application/x-amz-json-1.0",
                                             "X-Amz-Target: AmazonSQS.SendMessage"],
         body=json.dumps({"QueueUrl": "http://127.0.0.1/acme/q", "MessageBody": "h\u00e9llo \u2603"},
                         ensure_ascii=False).encode()),
    dict(name="curl-query-encoded", akid="AKIDEXAMPLE", secret="wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
         provider="aws:amz:eu-west-1:sqs", method="GET", target="/?a=1&b=2&c=x%20y", headers=[], body=None),
    # curl 7.88 uses the path as sent (S3's single encoding); for every other
    # service AWS encodes the wire path once more ("/a%20b" -> "/a%2520b").
    dict(name="curl-path-encoded", akid="AKIDEXAMPLE", secret="wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
         provider="aws:amz:eu-west-1:sqs", method="GET", target="/a%20b/", headers=[], body=None,
         expect="mismatch"),
    # curl 7.88 signs the query in wire order instead of sorting it as AWS
    # requires, so AWS (and sluice) must refuse this one: "expect" records it.
    dict(name="curl-query-unsorted", akid="AKIDEXAMPLE", secret="wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
         provider="aws:amz:eu-west-1:sqs", method="GET", target="/?b=2&a=1", headers=[], body=None,
         expect="mismatch"),
    dict(name="curl-amz-meta-header", akid="AKIDOTHER", secret="another/secret+key",
         provider="aws:amz:us-east-1:sqs", method="POST", target="/tenant/queue",
         headers=["Content-Type: application/x-amz-json-1.0", "X-Amz-Target: AmazonSQS.GetQueueUrl",
                  "X-Amz-Meta-Tag: blue"], body=b'{"QueueName":"queue"}'),
]


def capture(case):
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    port = srv.getsockname()[1]
    cmd = ["curl", "-s", "-m", "5", "-X", case["method"], "--aws-sigv4", case["provider"],
           "--user", f'{case["akid"]}:{case["secret"]}']
    for h in case["headers"]:
        cmd += ["-H", h]
    if case["body"] is not None:
        cmd += ["--data-binary", "@-"]
    cmd.append(f'http://127.0.0.1:{port}{case["target"]}')
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
    if case["body"] is not None:
        proc.stdin.write(case["body"])
    proc.stdin.close()
    conn, _ = srv.accept()
    conn.settimeout(5)
    data = b""
    while b"\r\n\r\n" not in data:
        data += conn.recv(65536)
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    headers = [tuple(x.strip() for x in line.split(":", 1)) for line in lines[1:]]
    length = int(dict((k.lower(), v) for k, v in headers).get("content-length", "0"))
    while len(body) < length:
        body += conn.recv(65536)
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
    conn.close()
    srv.close()
    proc.wait(timeout=10)
    method, target, _ = lines[0].split(" ", 2)
    path, _, query = target.partition("?")
    auth = next(v for k, v in headers if k.lower() == "authorization")
    amz_date = next(v for k, v in headers if k.lower() == "x-amz-date")
    scope = auth.split("Credential=")[1].split(",")[0].split("/")
    return dict(name=case["name"], method=method, path=path, query=query,
                headers=[[k, v] for k, v in headers if k.lower() != "authorization"],
                body=body.decode(), region=scope[2], service=scope[3], access_key_id=case["akid"],
                secret=case["secret"], amz_date=amz_date, now=None, authorization=auth,
                expect=case.get("expect", "ok"))


def main():
    import calendar
    import time
    version = subprocess.run(["curl", "--version"], capture_output=True, text=True).stdout.split("\n")[0]
    vectors = []
    for case in CASES:
        v = capture(case)
        v["now"] = calendar.timegm(time.strptime(v["amz_date"], "%Y%m%dT%H%M%SZ"))
        vectors.append(v)
    json.dump({"generator": f"{version} via gen_curl_vectors.py", "vectors": vectors}, sys.stdout,
              indent=2, ensure_ascii=False)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
