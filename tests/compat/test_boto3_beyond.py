"""test_boto3_beyond.py -- Debian's boto3 (the SQS query protocol over
HTTP/1.1) reaches sluice's features beyond SQS (docs/api.md, "Beyond
SQS") unpatched: a priority queue made with CreateQueue's Attributes,
priorities sent as the sluice.Priority message attribute (SendMessage and
SendMessageBatch) and received lowest first across the tenant's shard of
two partitions, the attribute MD5s compared with what the client sent and
parsed; a bad priority refused in a shape botocore parses; idempotent
sends with MessageDeduplicationId on a standard queue answering the
first MessageId, batch entries one by one; an exclusive queue handing
out one message per key value; a queue created by its first send for a
tenant with auto_create_queues; filtered receives and the filtered depth
(SluiceFilterKeys, sluice.Filter entries) through boto3's own protocol
and through query-protocol forms that botocore signs."""

import socket
import sys

from harness import REGION, TENANTS, Sluiced, Steps, eq, md5_of_message_attributes, ok, \
    require_module
from test_boto3_edges import read_all, signed_form


class AutoCreateSluiced(Sluiced):
    """sluiced whose tenant alpha has its queues created by their first
    send (auto_create_queues; beta keeps the default, off)."""

    def _config(self):
        alpha_secret = f"    secret_access_key: {TENANTS['alpha'][1]}\n"
        return super()._config().replace(
            alpha_secret, alpha_secret + "    auto_create_queues: true\n", 1)


def client(boto3, endpoint, key, secret):
    from botocore.config import Config

    # No retries: a failure must show at once, not after backoff.
    return boto3.session.Session().client(
        "sqs", endpoint_url=endpoint, region_name=REGION, aws_access_key_id=key,
        aws_secret_access_key=secret,
        config=Config(retries={"total_max_attempts": 1}, connect_timeout=5, read_timeout=30))


def prio(value, data_type="Number"):
    return {"sluice.Priority": {"DataType": data_type, "StringValue": value}}


def body(steps):
    boto3 = require_module("boto3", "python3-boto3")
    with AutoCreateSluiced() as server:
        sqs = client(boto3, server.endpoint, *TENANTS["alpha"])

        steps.step("a priority queue, made with CreateQueue's attributes")
        url = sqs.create_queue(QueueName="beyond-prio",
                               Attributes={"SluicePriority": "true"})["QueueUrl"]
        got = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
        eq(got.get("SluicePriority"), "true", "SluicePriority in GetQueueAttributes All")

        steps.step("priorities sent, each attribute MD5 as the client computes it")
        sent = sqs.send_message(QueueUrl=url, MessageBody="p50", MessageAttributes=prio("50"))
        eq(sent["MD5OfMessageAttributes"], md5_of_message_attributes(prio("50")),
           "SendMessage MD5OfMessageAttributes")
        order = [900, -3, 7, 7000, 12, 0, 31, 8]
        entries = [{"Id": f"e{i}", "MessageBody": f"p{p}",
                    "MessageAttributes": prio(str(p), "Number.deadline")}
                   for i, p in enumerate(order)]
        res = sqs.send_message_batch(QueueUrl=url, Entries=entries)
        eq(len(res.get("Successful", [])), len(order), "batch entries stored")
        for entry in res["Successful"]:
            i = int(entry["Id"][1:])
            eq(entry["MD5OfMessageAttributes"],
               md5_of_message_attributes(prio(str(order[i]), "Number.deadline")),
               f"batch entry {entry['Id']} MD5OfMessageAttributes")

        steps.step("received lowest priority first, one at a time")
        bodies = []
        for _ in range(len(order) + 3):
            msgs = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=1,
                                       VisibilityTimeout=60,
                                       MessageAttributeNames=["All"]).get("Messages", [])
            if not msgs:
                break
            m = msgs[0]
            eq(m["MD5OfMessageAttributes"], md5_of_message_attributes(m["MessageAttributes"]),
               "received MD5OfMessageAttributes")
            bodies.append(m["Body"])
        want = [f"p{p}" for p in sorted(order + [50])]
        eq(bodies, want, "receive order")

        steps.step("a bad priority is refused in botocore's shape, nothing stored")
        try:
            sqs.send_message(QueueUrl=url, MessageBody="bad", MessageAttributes=prio("1.5"))
        except sqs.exceptions.ClientError as exc:
            eq(exc.response["Error"]["Code"], "InvalidParameterValue", "error code")
            eq(exc.response["ResponseMetadata"]["HTTPStatusCode"], 400, "status")
        else:
            ok(False, "a priority of 1.5 was accepted")
        attrs = sqs.get_queue_attributes(QueueUrl=url,
                                         AttributeNames=["ApproximateNumberOfMessages"])
        eq(attrs["Attributes"]["ApproximateNumberOfMessages"], "0", "ready after the refusal")

        steps.step("idempotent sends: the first MessageId, batch entries one by one")
        url = sqs.create_queue(QueueName="beyond-idem",
                               Attributes={"SluiceIdempotentSends": "true"})["QueueUrl"]
        first = sqs.send_message(QueueUrl=url, MessageBody="order",
                                 MessageDeduplicationId="order-1")["MessageId"]
        again = sqs.send_message(QueueUrl=url, MessageBody="order",
                                 MessageDeduplicationId="order-1")["MessageId"]
        eq(again, first, "a retried send's MessageId")
        res = sqs.send_message_batch(QueueUrl=url, Entries=[
            {"Id": "a", "MessageBody": "a", "MessageDeduplicationId": "order-2"},
            {"Id": "b", "MessageBody": "b", "MessageDeduplicationId": "order-1"},
            {"Id": "c", "MessageBody": "c", "MessageDeduplicationId": "order-2"},
        ])
        ids = {e["Id"]: e["MessageId"] for e in res.get("Successful", [])}
        eq(len(ids), 3, "batch entries answered")
        eq(ids["b"], first, "entry b repeats order-1")
        eq(ids["c"], ids["a"], "entry c repeats entry a")
        attrs = sqs.get_queue_attributes(QueueUrl=url,
                                         AttributeNames=["ApproximateNumberOfMessages"])
        eq(attrs["Attributes"]["ApproximateNumberOfMessages"], "2", "messages stored")

        steps.step("an exclusive queue: one message in flight per key value")
        url = sqs.create_queue(QueueName="beyond-excl",
                               Attributes={"SluiceExclusivityKey": "project"})["QueueUrl"]
        for body, project in [("a1", "a"), ("a2", "a"), ("b1", "b")]:
            sqs.send_message(QueueUrl=url, MessageBody=body, MessageAttributes={
                "project": {"DataType": "String", "StringValue": project}})
        got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", [])
        eq(sorted(m["Body"] for m in got), ["a1", "b1"], "first receive: one per value")
        eq(sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", []), [],
           "second receive while both values are held")
        a1 = next(m for m in got if m["Body"] == "a1")
        sqs.delete_message(QueueUrl=url, ReceiptHandle=a1["ReceiptHandle"])
        got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", [])
        eq([m["Body"] for m in got], ["a2"], "after a1's delete")
        try:
            sqs.send_message(QueueUrl=url, MessageBody="no key")
        except sqs.exceptions.ClientError as exc:
            eq(exc.response["Error"]["Code"], "MissingParameter", "a send without the key")
        else:
            ok(False, "a send without the exclusivity key was accepted")

        steps.step("a queue created by its first send (auto_create_queues)")
        url = f"{server.endpoint}/alpha/beyond-auto"
        sqs.send_message(QueueUrl=url, MessageBody="first")
        eq(sqs.get_queue_url(QueueName="beyond-auto")["QueueUrl"], url, "GetQueueUrl")
        got = sqs.receive_message(QueueUrl=url).get("Messages", [])
        eq([m["Body"] for m in got], ["first"], "the first message")
        beta = client(boto3, server.endpoint, *TENANTS["beta"])
        try:
            beta.send_message(QueueUrl=f"{server.endpoint}/beta/beyond-auto", MessageBody="x")
        except beta.exceptions.QueueDoesNotExist:
            pass
        else:
            ok(False, "beta, without auto_create_queues, created a queue")


        filtered(steps, sqs, server)


def query(server, params):
    """A query-protocol form as alpha, signed by botocore: (status, body)."""
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=5)
    try:
        sock.sendall(signed_form(server.endpoint, params, *TENANTS["alpha"],
                                 extra_headers=["Connection: close"]))
        raw = read_all(sock, 10).decode()
    finally:
        sock.close()
    head, _, payload = raw.partition("\r\n\r\n")
    return int(head.split(" ", 2)[1]), payload


def filtered(steps, sqs, server):
    steps.step("filtered receives: sluice.Filter entries in MessageAttributeNames")
    url = sqs.create_queue(QueueName="beyond-filter",
                           Attributes={"SluiceFilterKeys": "project,profile"})["QueueUrl"]
    projects = ["p-1", "p-2", "p-1", "p-3", "p-1", "p-2"]
    entries = [{"Id": f"f{i}", "MessageBody": f"{p}-{i}", "MessageAttributes": {
        "project": {"DataType": "String", "StringValue": p},
        "profile": {"DataType": "Number", "StringValue": "1080" if i < 3 else "720"}}}
        for i, p in enumerate(projects)]
    eq(len(sqs.send_message_batch(QueueUrl=url, Entries=entries).get("Successful", [])), 6,
       "batch stored")
    depth_names = ["SluiceFilteredMessages", "SluiceFilteredMessagesNotVisible",
                   "sluice.Filter.project=p-1"]
    eq(sqs.get_queue_attributes(QueueUrl=url, AttributeNames=depth_names)["Attributes"],
       {"SluiceFilteredMessages": "3", "SluiceFilteredMessagesNotVisible": "0"}, "depth of p-1")
    got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=60,
                              MessageAttributeNames=["All", "sluice.Filter.project=p-1",
                                                     "sluice.Filter.profile=1080"])["Messages"]
    eq(sorted(m["Body"] for m in got), ["p-1-0", "p-1-2"], "project p-1 and profile 1080")
    for m in got:
        eq(m["MD5OfMessageAttributes"], md5_of_message_attributes(m["MessageAttributes"]),
           "a filtered message's MD5OfMessageAttributes")
    got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=60,
                              MessageAttributeNames=["sluice.Filter.project=p-1"])["Messages"]
    eq([m["Body"] for m in got], ["p-1-4"], "the last of p-1")
    eq(sqs.get_queue_attributes(QueueUrl=url, AttributeNames=depth_names)["Attributes"],
       {"SluiceFilteredMessages": "0", "SluiceFilteredMessagesNotVisible": "3"},
       "depth of p-1 with all three in flight")
    try:
        sqs.receive_message(QueueUrl=url, MessageAttributeNames=["sluice.Filter.colour=red"])
    except sqs.exceptions.ClientError as exc:
        eq(exc.response["Error"]["Code"], "InvalidParameterValue", "a key the queue does not index")
    else:
        ok(False, "a filter on an unindexed attribute was accepted")

    steps.step("filtered receives and depth over the query protocol")
    base = {"Version": "2012-11-05", "QueueUrl": url}
    status, payload = query(server, {**base, "Action": "ReceiveMessage", "MaxNumberOfMessages": "10",
                                     "MessageAttributeName.1": "All",
                                     "MessageAttributeName.2": "sluice.Filter.project=p-2"})
    eq(status, 200, "query ReceiveMessage")
    ok("<Body>p-2-1</Body>" in payload and "<Body>p-2-5</Body>" in payload
       and "p-3" not in payload, f"only p-2 over the query protocol: {payload[:400]}")
    status, payload = query(server, {**base, "Action": "GetQueueAttributes",
                                     "AttributeName.1": "SluiceFilteredMessagesNotVisible",
                                     "AttributeName.2": "sluice.Filter.project=p-2"})
    eq(status, 200, "query GetQueueAttributes")
    ok("<Name>SluiceFilteredMessagesNotVisible</Name><Value>2</Value>" in payload,
       f"query depth of p-2: {payload[:400]}")
    status, payload = query(server, {**base, "Action": "ReceiveMessage",
                                     "MessageAttributeName.1": "sluice.Filter.project"})
    eq(status, 400, "query ReceiveMessage with a bad filter")
    ok("<Code>InvalidParameterValue</Code>" in payload, f"query error shape: {payload[:400]}")


if __name__ == "__main__":
    sys.exit(Steps("boto3 beyond").run(body))
