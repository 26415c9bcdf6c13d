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
tenant with auto_create_queues."""

import sys

from harness import REGION, TENANTS, Sluiced, Steps, eq, md5_of_message_attributes, ok, \
    require_module


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


if __name__ == "__main__":
    sys.exit(Steps("boto3 beyond").run(body))
