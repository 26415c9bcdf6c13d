"""test_boto3.py -- Debian's boto3 (python3-boto3 1.26, botocore 1.29:
the SQS query protocol over HTTP/1.1) runs the common flow against a real
sluiced, plus a second tenant that must not see the first one's queue."""

import sys

from harness import REGION, TENANTS, Sluiced, Steps, eq, fail, require_module
from sqs_flow import run_flow


class Boto3Client:
    def __init__(self, boto3, endpoint, key, secret):
        from botocore.config import Config

        # No retries: a failure must show at once, not after backoff.
        self.sqs = boto3.session.Session().client(
            "sqs", endpoint_url=endpoint, region_name=REGION, aws_access_key_id=key,
            aws_secret_access_key=secret,
            config=Config(retries={"total_max_attempts": 1}, connect_timeout=5,
                          read_timeout=30))

    def call(self, op, **params):
        return getattr(self.sqs, op)(**params)

    @staticmethod
    def bin_in(data):
        return data

    @staticmethod
    def bin_out(value):
        return bytes(value)

    def error_code(self, op, **params):
        try:
            self.call(op, **params)
        except self.sqs.exceptions.QueueDoesNotExist as exc:
            eq(exc.response["ResponseMetadata"]["HTTPStatusCode"], 400, f"{op}: HTTP status")
            return exc.response["Error"]["Code"]
        except Exception as exc:  # any other type is the failure reported
            fail(f"{op}: expected botocore's QueueDoesNotExist, got "
                 f"{type(exc).__name__}: {exc}")
        fail(f"{op}: the call succeeded but QueueDoesNotExist was expected")
        return None


def body(steps):
    boto3 = require_module("boto3", "python3-boto3")
    with Sluiced() as server:
        client = Boto3Client(boto3, server.endpoint, *TENANTS["alpha"])
        run_flow(steps, client, server.endpoint)

        steps.step("another tenant sees none of alpha's queues")
        client.call("create_queue", QueueName="compat-private")
        beta = Boto3Client(boto3, server.endpoint, *TENANTS["beta"])
        eq(beta.call("list_queues", QueueNamePrefix="compat-").get("QueueUrls", []), [],
           "beta's ListQueues")
        eq(beta.error_code("send_message", QueueUrl=f"{server.endpoint}/alpha/compat-private",
                           MessageBody="intruder"),
           "AWS.SimpleQueueService.NonExistentQueue", "beta sending to alpha's queue")

        steps.step("a wrong secret is refused with the client's own error")
        bad = Boto3Client(boto3, server.endpoint, TENANTS["alpha"][0], "not-the-secret")
        try:
            bad.call("list_queues")
        except bad.sqs.exceptions.ClientError as exc:
            eq(exc.response["Error"]["Code"], "SignatureDoesNotMatch", "wrong secret")
            eq(exc.response["ResponseMetadata"]["HTTPStatusCode"], 403, "wrong secret: status")
        else:
            fail("ListQueues with a wrong secret succeeded")


if __name__ == "__main__":
    sys.exit(Steps("boto3").run(body))
