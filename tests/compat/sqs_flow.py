"""sqs_flow.py -- the one SQS flow every Python-driven client of the
compatibility tier runs (boto3 in-process, the aws CLI as subprocesses).

A client is an adapter with:
  call(op, **params) -> dict   op in botocore's snake_case (create_queue),
                               params and result in botocore's shapes
  bin_in(bytes) / bin_out(v)   how the client carries a Binary attribute
  error_code(op, **params)     runs a call that must fail; returns the SQS
                               error code as the client reports it, after
                               checking the client's own error type

Neither botocore nor the aws CLI checks SQS's MD5 digests, so the flow
checks every MD5OfMessageBody / MD5OfMessageAttributes it is given.
"""

import json
import time

from harness import eq, md5_hex, md5_of_message_attributes, ok

TRACE = "Root=1-5759e988-bd862e3fe1be46a994272793"


def _attrs(client):
    return {
        "kind": {"DataType": "String", "StringValue": "greeting \u00e9\u4e2d"},
        "n": {"DataType": "Number", "StringValue": "42.5"},
        "blob": {"DataType": "Binary", "BinaryValue": client.bin_in(b"\x00\x01bytes\xff")},
    }


def _plain(client, attrs):
    """attrs with Binary values as bytes, for the digest and comparisons."""
    out = {}
    for name, a in attrs.items():
        b = dict(a)
        if "BinaryValue" in b:
            b["BinaryValue"] = client.bin_out(b["BinaryValue"])
        out[name] = b
    return out


def _check_sent(what, reply, body, attrs_plain):
    eq(reply.get("MD5OfMessageBody"), md5_hex(body), f"{what}: MD5OfMessageBody")
    if attrs_plain:
        eq(reply.get("MD5OfMessageAttributes"), md5_of_message_attributes(attrs_plain),
           f"{what}: MD5OfMessageAttributes")
    ok(len(reply.get("MessageId", "")) == 36, f"{what}: a MessageId, got {reply!r}")


def _receive_all(client, url, want, **params):
    """Receives until want messages are held (in flight) or 10 s pass."""
    got = {}
    deadline = time.monotonic() + 10
    while len(got) < want and time.monotonic() < deadline:
        r = client.call("receive_message", QueueUrl=url, MaxNumberOfMessages=10,
                        WaitTimeSeconds=1, **params)
        for m in r.get("Messages", []):
            got[m["MessageId"]] = m
    eq(len(got), want, f"messages received from {url}")
    return got


def _queue_counts(client, url):
    a = client.call("get_queue_attributes", QueueUrl=url,
                    AttributeNames=["ApproximateNumberOfMessages",
                                    "ApproximateNumberOfMessagesNotVisible"])["Attributes"]
    return (a["ApproximateNumberOfMessages"], a["ApproximateNumberOfMessagesNotVisible"])


def run_flow(steps, client, endpoint, tenant="alpha", prefix="compat"):
    region = "us-east-1"
    name = f"{prefix}-main"
    dlq_name = f"{prefix}-dlq"
    want_url = f"{endpoint}/{tenant}/{name}"

    steps.step("create a queue with attributes and tags")
    url = client.call("create_queue", QueueName=name,
                      Attributes={"VisibilityTimeout": "30", "MessageRetentionPeriod": "3600",
                                  "MaximumMessageSize": "262144"},
                      tags={"team": "compat"})["QueueUrl"]
    eq(url, want_url, "CreateQueue's QueueUrl")
    a = client.call("get_queue_attributes", QueueUrl=url, AttributeNames=["All"])["Attributes"]
    eq(a.get("VisibilityTimeout"), "30", "VisibilityTimeout")
    eq(a.get("MessageRetentionPeriod"), "3600", "MessageRetentionPeriod")
    eq(a.get("MaximumMessageSize"), "262144", "MaximumMessageSize")
    eq(a.get("QueueArn"), f"arn:aws:sqs:{region}:{tenant}:{name}", "QueueArn")
    eq(client.call("get_queue_url", QueueName=name)["QueueUrl"], url, "GetQueueUrl")

    steps.step("send with String, Number and Binary attributes")
    attrs = _attrs(client)
    plain = _plain(client, attrs)
    body = "hello, sluice \u2603"
    sent = client.call("send_message", QueueUrl=url, MessageBody=body, MessageAttributes=attrs,
                       MessageSystemAttributes={"AWSTraceHeader": {
                           "DataType": "String", "StringValue": TRACE}})
    _check_sent("SendMessage", sent, body, plain)
    ok(sent.get("MD5OfMessageSystemAttributes"), "SendMessage: MD5OfMessageSystemAttributes")

    steps.step("send a batch")
    entries = [{"Id": f"e{i}", "MessageBody": f"batch body {i}"} for i in range(3)]
    entries[1]["MessageAttributes"] = attrs
    entries[2]["DelaySeconds"] = 0
    batch = client.call("send_message_batch", QueueUrl=url, Entries=entries)
    eq(batch.get("Failed", []), [], "SendMessageBatch: Failed")
    eq(sorted(e["Id"] for e in batch["Successful"]), ["e0", "e1", "e2"],
       "SendMessageBatch: Successful ids")
    for e in batch["Successful"]:
        i = int(e["Id"][1:])
        _check_sent(f"SendMessageBatch entry {e['Id']}", e, entries[i]["MessageBody"],
                    plain if i == 1 else None)

    steps.step("receive with system and message attribute names")
    got = _receive_all(client, url, 4, AttributeNames=["All"], MessageAttributeNames=["All"],
                       VisibilityTimeout=30)
    ok(sent["MessageId"] in got, "the single send is among the received")
    for m in got.values():
        eq(m["MD5OfBody"], md5_hex(m["Body"]), f"MD5OfBody of {m['MessageId']}")
        eq(m["Attributes"].get("ApproximateReceiveCount"), "1", "ApproximateReceiveCount")
        eq(m["Attributes"].get("SenderId"), tenant, "SenderId")
        ok(m["Attributes"].get("SentTimestamp", "").isdigit(), "SentTimestamp")
        if "MessageAttributes" in m:
            ma = _plain(client, m["MessageAttributes"])
            eq(ma, plain, "message attributes received")
            eq(m.get("MD5OfMessageAttributes"), md5_of_message_attributes(ma),
               "MD5OfMessageAttributes received")
    one = got[sent["MessageId"]]
    eq(one["Body"], body, "body")
    eq(one["Attributes"].get("AWSTraceHeader"), TRACE, "AWSTraceHeader")
    eq(sum(1 for m in got.values() if "MessageAttributes" in m), 2,
       "messages carrying attributes")

    steps.step("change visibility")
    client.call("change_message_visibility", QueueUrl=url,
                ReceiptHandle=one["ReceiptHandle"], VisibilityTimeout=0)
    again = _receive_all(client, url, 1, AttributeNames=["ApproximateReceiveCount"])
    m = again.get(sent["MessageId"])
    ok(m is not None, "the message made visible again is received")
    eq(m["Attributes"].get("ApproximateReceiveCount"), "2", "receive count after visibility 0")
    got[m["MessageId"]] = m

    steps.step("delete a batch")
    handles = [{"Id": f"d{i}", "ReceiptHandle": m["ReceiptHandle"]}
               for i, m in enumerate(got.values())]
    d = client.call("delete_message_batch", QueueUrl=url, Entries=handles)
    eq(d.get("Failed", []), [], "DeleteMessageBatch: Failed")
    eq(len(d["Successful"]), 4, "DeleteMessageBatch: Successful")
    eq(_queue_counts(client, url), ("0", "0"), "visible and in-flight after the delete")

    steps.step("redrive policy: a message reaches the dead-letter queue")
    dlq = client.call("create_queue", QueueName=dlq_name)["QueueUrl"]
    dlq_arn = client.call("get_queue_attributes", QueueUrl=dlq,
                          AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    policy = json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": 1})
    client.call("set_queue_attributes", QueueUrl=url, Attributes={"RedrivePolicy": policy})
    a = client.call("get_queue_attributes", QueueUrl=url,
                    AttributeNames=["RedrivePolicy"])["Attributes"]
    eq(json.loads(a["RedrivePolicy"]), json.loads(policy), "RedrivePolicy read back")
    poison = client.call("send_message", QueueUrl=url, MessageBody="poison")
    first = client.call("receive_message", QueueUrl=url, VisibilityTimeout=0,
                        WaitTimeSeconds=1).get("Messages", [])
    eq([m["Body"] for m in first], ["poison"], "first receive gets the message")
    # The second receive finds the count past maxReceiveCount: moved, not returned.
    second = client.call("receive_message", QueueUrl=url, WaitTimeSeconds=0)
    eq(second.get("Messages", []), [], "second receive from the source queue")
    dead = _receive_all(client, dlq, 1, AttributeNames=["All"])
    m = dead.get(poison["MessageId"])
    ok(m is not None, f"the poison message is in the DLQ: {list(dead)}")
    eq(m["Body"], "poison", "DLQ body")
    eq(m["Attributes"].get("DeadLetterQueueSourceArn"),
       f"arn:aws:sqs:{region}:{tenant}:{name}", "DeadLetterQueueSourceArn")

    steps.step("list queues, tags and dead-letter source queues")
    urls = client.call("list_queues", QueueNamePrefix=f"{prefix}-").get("QueueUrls", [])
    eq(sorted(urls), sorted([url, dlq]), "ListQueues")
    client.call("tag_queue", QueueUrl=url, Tags={"stage": "test", "owner": "sluice"})
    client.call("untag_queue", QueueUrl=url, TagKeys=["owner"])
    eq(client.call("list_queue_tags", QueueUrl=url).get("Tags"),
       {"team": "compat", "stage": "test"}, "ListQueueTags")
    eq(client.call("list_dead_letter_source_queues", QueueUrl=dlq).get("queueUrls"), [url],
       "ListDeadLetterSourceQueues")

    steps.step("purge")
    for i in range(3):
        client.call("send_message", QueueUrl=url, MessageBody=f"to purge {i}")
    eq(_queue_counts(client, url), ("3", "0"), "before the purge")
    client.call("purge_queue", QueueUrl=url)
    eq(_queue_counts(client, url), ("0", "0"), "after the purge")

    steps.step("delete the queues")
    client.call("delete_queue", QueueUrl=url)
    client.call("delete_queue", QueueUrl=dlq)
    eq(client.call("list_queues", QueueNamePrefix=f"{prefix}-").get("QueueUrls", []), [],
       "ListQueues after DeleteQueue")

    steps.step("a typed error: a queue that does not exist")
    code = client.error_code("get_queue_url", QueueName=name)
    eq(code, "AWS.SimpleQueueService.NonExistentQueue", "error code for a deleted queue")
    code = client.error_code("send_message", QueueUrl=f"{endpoint}/{tenant}/{prefix}-never",
                             MessageBody="x")
    eq(code, "AWS.SimpleQueueService.NonExistentQueue", "error code for a never-created queue")

