"""test_boto3_edges.py -- Debian's boto3 (the SQS query protocol over
HTTP/1.1) and botocore's signer at the edges of what stock clients send
and receive: every character SQS allows in a body and an attribute,
through the XML reply, with the MD5 digests compared against what the
client parsed; pipelined requests around a query error; a client that
half-closes after its request; a GET whose query botocore signs with a
space; a presigned URL whose query is altered after signing; a custom
attribute type label the XML reply cannot carry; an upload over the HTTP
cap, refused in a shape the client can parse; a message within SQS's
1 MiB limit whose form encoding is three times as long. Requests boto3
will not send are signed with botocore's own SigV4Auth and written to a
raw socket. Each check runs on its own queue and reports on its own; the
closing line names the checks that failed."""

import socket
import sys
import time
import types
import urllib.parse

from harness import (REGION, TENANTS, Sluiced, Steps, eq, fail, md5_hex,
                     md5_of_message_attributes, ok, require_module)

VERSION = "2012-11-05"


def client(boto3, endpoint, key, secret):
    from botocore.config import Config

    # No retries: a failure must show at once, not after backoff.
    return boto3.session.Session().client(
        "sqs", endpoint_url=endpoint, region_name=REGION, aws_access_key_id=key,
        aws_secret_access_key=secret,
        config=Config(retries={"total_max_attempts": 1}, connect_timeout=5, read_timeout=30))


def plain_attrs(attrs):
    out = {}
    for name, a in attrs.items():
        b = {"DataType": a["DataType"]}
        if "BinaryValue" in a:
            b["BinaryValue"] = bytes(a["BinaryValue"])
        else:
            b["StringValue"] = a["StringValue"]
        out[name] = b
    return out


def receive_all(sqs, url, want):
    """Receives until want messages came (or 10 s pass), deleting each."""
    got = []
    deadline = time.monotonic() + 10
    while len(got) < want and time.monotonic() < deadline:
        r = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=1,
                                MessageAttributeNames=["All"])
        for m in r.get("Messages", []):
            got.append(m)
            sqs.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
    eq(len(got), want, "messages received")
    return got


def check_received(m, body, attrs, what):
    """The message as boto3 parsed it equals what was sent, and the digests
    the server sent are those of what the client parsed."""
    eq(m["Body"], body, f"{what}: body as parsed")
    eq(m["MD5OfBody"], md5_hex(m["Body"]), f"{what}: MD5OfBody of the parsed body")
    if attrs:
        parsed = plain_attrs(m.get("MessageAttributes", {}))
        eq(parsed, attrs, f"{what}: attributes as parsed")
        eq(m.get("MD5OfMessageAttributes"), md5_of_message_attributes(parsed),
           f"{what}: MD5OfMessageAttributes of the parsed attributes")


# ---- raw HTTP/1.1 with botocore's signer -------------------------------------

def signed_form(endpoint, params, key, secret, extra_headers=None):
    """A query-protocol POST signed by botocore, as raw bytes."""
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    body = urllib.parse.urlencode(params).encode()
    req = AWSRequest(method="POST", url=endpoint + "/", data=body,
                     headers={"Content-Type": "application/x-www-form-urlencoded; charset=utf-8"})
    SigV4Auth(Credentials(key, secret), "sqs", REGION).add_auth(req)
    host = urllib.parse.urlsplit(endpoint).netloc
    lines = [f"POST / HTTP/1.1", f"Host: {host}"]
    for name, value in req.headers.items():
        lines.append(f"{name}: {value}")
    for line in extra_headers or []:
        lines.append(line)
    lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def read_all(sock, timeout):
    """Everything the server sends until it closes or timeout passes."""
    sock.settimeout(0.2)
    data = b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            chunk = sock.recv(65536)
        except socket.timeout:
            continue
        except ConnectionResetError:
            break
        if not chunk:
            break
        data += chunk
    return data


def connect(server):
    return socket.create_connection(("127.0.0.1", server.port), timeout=5)


# ---- the steps ------------------------------------------------------------------

ALLOWED = [
    ("carriage return", "line one\rline two"),
    ("CRLF and LF", "a\r\nb\nc\r\n"),
    ("lone CR at the ends", "\rmiddle\r"),
    ("CDATA end", "]]> and ]]]]><![CDATA[>"),
    ("markup", "&amp; <tag attr=\"v\" other='w'> & < > \" '"),
    ("tab and spaces", "\t  leading and trailing  \t"),
    ("white space only", " \t\r\n "),
    ("non-BMP", "\U0001F600 \U0001D11E \U00010000 \U0010FFFF"),
    ("range edges", "\x20\x7e\x7f\x80\u00a0\ud7ff\ue000\ufffd"),
    ("everything at once", "\t\n\r ]]>&<>\"'\u00e9\u4e2d\U0001F600\ufffd"),
]


def characters_round_trip(steps, env):
    sqs, url = env.sqs, env.url
    steps.step("every character SQS allows survives the XML reply, digests match")
    for what, text in ALLOWED:
        attrs = {
            "s": {"DataType": "String", "StringValue": text},
            "t": {"DataType": "String.label", "StringValue": text},
            "b": {"DataType": "Binary", "BinaryValue": text.encode("utf-8")},
        }
        r = sqs.send_message(QueueUrl=url, MessageBody=text, MessageAttributes=attrs)
        eq(r["MD5OfMessageBody"], md5_hex(text), f"{what}: MD5OfMessageBody of SendMessage")
        eq(r["MD5OfMessageAttributes"], md5_of_message_attributes(attrs),
           f"{what}: MD5OfMessageAttributes of SendMessage")
        m = receive_all(sqs, url, 1)[0]
        check_received(m, text, attrs, what)

    steps.step("the same characters in a batch")
    entries = [{"Id": f"e{i}", "MessageBody": text,
                "MessageAttributes": {"s": {"DataType": "String", "StringValue": text}}}
               for i, (_, text) in enumerate(ALLOWED)]
    r = sqs.send_message_batch(QueueUrl=url, Entries=entries)
    eq(len(r.get("Successful", [])), len(entries), "batch: successful entries")
    for s in r["Successful"]:
        text = ALLOWED[int(s["Id"][1:])][1]
        eq(s["MD5OfMessageBody"], md5_hex(text), f"batch {s['Id']}: MD5OfMessageBody")
    got = receive_all(sqs, url, len(entries))
    for m in got:
        text = m["Body"]
        ok(text in [t for _, t in ALLOWED], f"batch: a body that was not sent: {text!r}")
        check_received(m, text, {"s": {"DataType": "String", "StringValue": text}}, "batch")


def data_type_label_control(steps, env):
    sqs, url, client_error = env.sqs, env.url, env.client_error
    # A custom type label ("String.<label>") the XML reply cannot carry:
    # either it is refused, or it must come back exactly, digest and all.
    steps.step("a DataType label with a control character is refused or round-trips")
    attrs = {"a": {"DataType": "String.x\x01y", "StringValue": "v"}}
    try:
        sqs.send_message(QueueUrl=url, MessageBody="label", MessageAttributes=attrs)
    except client_error as exc:
        code = exc.response["Error"]["Code"]
        ok(code in ("InvalidParameterValue", "InvalidMessageContents"),
           f"refused with {code}, expected InvalidParameterValue or InvalidMessageContents")
        return
    m = receive_all(sqs, url, 1)[0]
    check_received(m, "label", attrs, "DataType String.x\\x01y")


def large_non_ascii(steps, env):
    sqs, url = env.sqs, env.url
    # 800,000 bytes of UTF-8 (under SQS's 1 MiB); its form encoding is
    # 2,400,000 bytes, and botocore's JSON (\u00e9) would be as long.
    steps.step("a message under 1 MiB of non-ASCII text is accepted")
    text = "\u00e9" * 400000
    try:
        r = sqs.send_message(QueueUrl=url, MessageBody=text)
    except Exception as exc:  # pylint: disable=broad-except
        fail(f"SendMessage of {len(text.encode())} UTF-8 bytes failed: "
             f"{type(exc).__name__}: {str(exc)[:300]}")
    eq(r["MD5OfMessageBody"], md5_hex(text), "MD5OfMessageBody")
    m = receive_all(sqs, url, 1)[0]
    eq(m["Body"] == text, True, "the large body as received")


def too_large_is_parseable(steps, env):
    sqs, url, client_error = env.sqs, env.url, env.client_error
    steps.step("an upload over the HTTP cap is refused with an error boto3 can parse")
    text = "x" * 3400000  # past the HTTP layer's cap of 3 MiB + 64 KiB
    try:
        sqs.send_message(QueueUrl=url, MessageBody=text)
    except client_error as exc:
        status = exc.response["ResponseMetadata"]["HTTPStatusCode"]
        ok(status in (400, 413), f"status {status}")
        ok(exc.response["Error"]["Code"] != "", "an error code")
        return
    except Exception as exc:  # pylint: disable=broad-except
        fail(f"expected botocore's ClientError, got {type(exc).__name__}: {str(exc)[:300]}")
    fail("a 3.4 MB message was accepted")


def half_close(steps, env):
    server, sqs, url = env.server, env.sqs, env.url
    # shutdown(SHUT_WR) after a whole request says "nothing more to send",
    # not "gone" (RFC 9112 section 9.6): the answer must still come, above
    # all for a SendMessage that is stored anyway.
    steps.step("a client that half-closes after its request still gets the answer")
    key, secret = TENANTS["alpha"]
    for i in range(3):
        params = {"Action": "SendMessage", "Version": VERSION, "QueueUrl": url,
                  "MessageBody": f"half-closed {i}"}
        with connect(server) as s:
            s.sendall(signed_form(server.endpoint, params, key, secret))
            s.shutdown(socket.SHUT_WR)
            data = read_all(s, 5)
        if not data.startswith(b"HTTP/1.1 200 "):
            stored = sqs.get_queue_attributes(
                QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages"])["Attributes"]
            fail(f"SendMessage {i} then SHUT_WR: expected a 200 answer, got {data[:120]!r}; "
                 f"the queue holds {stored['ApproximateNumberOfMessages']} message(s)")
    params = {"Action": "ReceiveMessage", "Version": VERSION, "QueueUrl": url,
              "MaxNumberOfMessages": "10"}
    with connect(server) as s:
        s.sendall(signed_form(server.endpoint, params, key, secret))
        s.shutdown(socket.SHUT_WR)
        data = read_all(s, 5)
    ok(data.startswith(b"HTTP/1.1 200 "),
       f"ReceiveMessage then SHUT_WR: expected a 200 answer, got {data[:120]!r}")


def pipelined_error_in_between(steps, env):
    server = env.server
    steps.step("pipelined requests around a query error are answered in order")
    key, secret = TENANTS["alpha"]
    good = {"Action": "GetQueueUrl", "Version": VERSION, "QueueName": "pipelining"}
    bad = {"Action": "GetQueueUrl", "Version": VERSION, "QueueName": "no-such-queue"}
    with connect(server) as s:
        s.sendall(signed_form(server.endpoint, good, key, secret)
                  + signed_form(server.endpoint, bad, key, secret)
                  + signed_form(server.endpoint, good, key, secret, ["Connection: close"]))
        data = read_all(s, 5)
    heads = [h.split(b"\r\n", 1)[0] for h in data.split(b"HTTP/1.1 ")[1:]]
    eq(heads, [b"200 OK", b"400 Bad Request", b"200 OK"], "answers in order")
    ok(b"AWS.SimpleQueueService.NonExistentQueue" in data, "the middle one is the query error")


def presigned_tamper(steps, env):
    server, sqs, url = env.server, env.sqs, env.url
    # botocore presigns a query call by moving the form into the query
    # string; the signature covers "%2B" (a plus). Changing it to "+",
    # which the form decoder reads as a space, must break the signature.
    steps.step("a presigned URL's query cannot be altered after signing")
    presigned = sqs.generate_presigned_url(
        "send_message", Params={"QueueUrl": url, "MessageBody": "1+1=2"}, ExpiresIn=300)
    ok("MessageBody=1%2B1%3D2" in presigned, f"botocore's encoding: {presigned}")
    host = urllib.parse.urlsplit(presigned).netloc
    target = presigned.split(host, 1)[1]

    def post(path):
        with connect(server) as s:
            s.sendall(f"POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Length: 0\r\n"
                      "Connection: close\r\n\r\n".encode())
            return read_all(s, 5)

    eq(post(target).split(b"\r\n", 1)[0], b"HTTP/1.1 200 OK", "the presigned URL as signed")
    eq(receive_all(sqs, url, 1)[0]["Body"], "1+1=2", "the body as signed")
    answer = post(target.replace("MessageBody=1%2B1", "MessageBody=1+1"))
    status = answer.split(b"\r\n", 1)[0]
    if status == b"HTTP/1.1 200 OK":
        body = receive_all(sqs, url, 1)[0]["Body"]
        fail(f"the altered URL was accepted and stored {body!r} where {'1+1=2'!r} was signed")
    ok(b"SignatureDoesNotMatch" in answer, f"the altered URL: {answer[:200]!r}")


def get_with_space(steps, env):
    server, sqs, url = env.server, env.sqs, env.url
    # botocore's AWSRequest with params (how kombu's asynchronous SQS
    # connection sends its GET calls) puts a space on the wire as "+"
    # (urlencode) and signs it as "%20" (SigV4Auth): a server must read a
    # "+" in the query as a space when it canonicalises, as the form
    # decoder does.
    steps.step("a GET signed by botocore with a space in a value is accepted")
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    key, secret = TENANTS["alpha"]
    req = AWSRequest(method="GET", url=server.endpoint + "/",
                     params={"Action": "SendMessage", "Version": VERSION, "QueueUrl": url,
                             "MessageBody": "two words"})
    SigV4Auth(Credentials(key, secret), "sqs", REGION).add_auth(req)
    prepared = req.prepare()
    target = prepared.url.split(urllib.parse.urlsplit(prepared.url).netloc, 1)[1]
    ok("MessageBody=two+words" in target, f"botocore's wire form: {target}")
    lines = [f"GET {target} HTTP/1.1", f"Host: {urllib.parse.urlsplit(server.endpoint).netloc}"]
    lines += [f"{k}: {v}" for k, v in prepared.headers.items()]
    lines += ["Connection: close"]
    with connect(server) as s:
        s.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        answer = read_all(s, 5)
    eq(answer.split(b"\r\n", 1)[0], b"HTTP/1.1 200 OK", f"answer {answer[:400]!r}")
    eq(receive_all(sqs, url, 1)[0]["Body"], "two words", "the body as signed")


CHECKS = [
    ("characters", characters_round_trip),
    ("pipelining", pipelined_error_in_between),
    ("get-space", get_with_space),
    ("presigned", presigned_tamper),
    ("datatype", data_type_label_control),
    ("non-ascii", large_non_ascii),
    ("too-large", too_large_is_parseable),
    ("half-close", half_close),
]

def main():
    """Runs every check, each in its own Steps, so one finding does not
    hide the next; the closing line names the checks that failed."""
    boto3 = require_module("boto3", "python3-boto3")
    from botocore.exceptions import ClientError

    failed = []
    with Sluiced() as server:
        sqs = client(boto3, server.endpoint, *TENANTS["alpha"])
        for name, check in CHECKS:
            env = types.SimpleNamespace(server=server, sqs=sqs, client_error=ClientError,
                                        url=sqs.create_queue(QueueName=name)["QueueUrl"])
            if Steps(f"boto3-edges {name}").run(lambda st, c=check, e=env: c(st, e)) != 0:
                failed.append(name)
    if failed:
        print(f"compat boto3-edges: FAIL ({len(failed)} of {len(CHECKS)} checks: "
              f"{', '.join(failed)})", flush=True)
        return 1
    print(f"compat boto3-edges: PASS ({len(CHECKS)} checks)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
