"""test_celery.py -- a Celery worker (Debian's python3-celery 5.2 with
python3-kombu 5.2's SQS transport, which polls through pycurl) runs tasks
end to end against a real sluiced: this process sends them through kombu's
producer (boto3, query protocol over HTTP/1.1), a `celery worker --pool
solo` subprocess long-polls, runs and acknowledges them (its receives are
kombu's own signed form POSTs through pycurl; its deletes go through
boto3), and afterwards the queue holds nothing, visible or in flight.

What the worker's long poll puts on the wire is kombu's, not botocore's
(kombu/asynchronous/aws/connection.py, make_request):

    POST /alpha/celery-compat HTTP/1.1
    Content-Type: application/x-www-form-urlencoded
    Authorization: AWS4-HMAC-SHA256 ... SignedHeaders=host;x-amz-date ...

    MaxNumberOfMessages=N&AttributeName.1=ApproximateReceiveCount&
    WaitTimeSeconds=1&Action=ReceiveMessage          (one line on the wire)

It has no Version parameter: a server that requires Version refuses every
receive (kombu's _on_list_ready raises on a 4xx answer) and the tasks never
run, so this test fails against it, in the step that waits for them."""

import json
import os
import signal
import subprocess
import sys
import tempfile
import time

from harness import REGION, TENANTS, Sluiced, Steps, dies_with_us, eq, fail, ok, require_module

HERE = os.path.dirname(os.path.abspath(__file__))
TASKS = 6
DEADLINE_S = 60


def log_tail(path, n=3000):
    with open(path, "rb") as f:
        return f.read()[-n:].decode("utf-8", "replace")


def first_error(path):
    """The worker log's first ERROR or CRITICAL record, or None."""
    with open(path, "rb") as f:
        for line in f.read().decode("utf-8", "replace").splitlines():
            if "ERROR/" in line or "CRITICAL/" in line:
                return line.strip()
    return None


def stop_worker(worker, log_path):
    """Warm shutdown (SIGTERM: finish the current task, then exit 0)."""
    if worker.poll() is None:
        worker.send_signal(signal.SIGTERM)
        try:
            worker.wait(timeout=20)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait()
            fail(f"the worker did not stop within 20 s of SIGTERM: {log_tail(log_path)}")
    return worker.returncode


def sqs_client(key, secret, server):
    import boto3  # pylint: disable=import-outside-toplevel
    return boto3.session.Session().client("sqs", endpoint_url=server.endpoint,
                                          region_name=REGION, aws_access_key_id=key,
                                          aws_secret_access_key=secret)


def queue_left(key, secret, server):
    """celery-compat's (visible, in flight) counts, as SQS reports them."""
    sqs = sqs_client(key, secret, server)
    url = sqs.get_queue_url(QueueName="celery-compat")["QueueUrl"]
    a = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=[
        "ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"])["Attributes"]
    return (a["ApproximateNumberOfMessages"], a["ApproximateNumberOfMessagesNotVisible"])


def body(steps):
    require_module("celery", "python3-celery")
    require_module("kombu", "python3-kombu")
    require_module("pycurl", "python3-pycurl")
    require_module("boto3", "python3-boto3")
    key, secret = TENANTS["alpha"]
    with Sluiced() as server, tempfile.TemporaryDirectory(prefix="sluice-celery-") as out:
        os.environ.update({
            "SLUICE_COMPAT_KEY": key,
            "SLUICE_COMPAT_SECRET": secret,
            "SLUICE_COMPAT_HOSTPORT": f"127.0.0.1:{server.port}",
            "SLUICE_COMPAT_OUT": out,
        })
        import celery_tasks  # pylint: disable=import-outside-toplevel

        steps.step("start a worker: celery worker --pool solo")
        log_path = os.path.join(out, "worker.log")
        env = dict(os.environ, PYTHONPATH=HERE, PYTHONUNBUFFERED="1")
        with open(log_path, "wb") as log:
            worker = subprocess.Popen(
                [sys.executable, "-m", "celery", "-A", "celery_tasks", "worker", "--pool", "solo",
                 "--loglevel", "INFO", "--without-gossip", "--without-mingle",
                 "--without-heartbeat", "--hostname", "compat@%h"],
                cwd=out, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                preexec_fn=dies_with_us())
        try:
            steps.step(f"send {TASKS} tasks through kombu's producer")
            sent = {}
            for i in range(TASKS - 1):
                r = celery_tasks.add.delay(i, 100 * i)
                sent[r.id] = {"task": "add", "result": i + 100 * i}
            text = "h\u00e9llo \u2603 \U0001f600 <&>"
            r = celery_tasks.echo.delay(text)
            sent[r.id] = {"task": "echo", "result": text}

            steps.step("the worker runs every task")
            deadline = time.monotonic() + DEADLINE_S
            done = set()
            while time.monotonic() < deadline:
                done = {f for f in os.listdir(out) if f in sent}
                if len(done) == TASKS or worker.poll() is not None:
                    break
                # An error in kombu's polling stops the worker's consumer
                # for good: waiting longer would only hide the reason.
                error = first_error(log_path)
                if error:
                    fail(f"the worker logged an error after {len(done)}/{TASKS} tasks: {error}")
                time.sleep(0.2)
            if worker.poll() is not None:
                fail(f"the worker exited ({worker.returncode}) after {len(done)}/{TASKS} "
                     f"tasks: {log_tail(log_path)}")
            if len(done) != TASKS:
                fail(f"{len(done)}/{TASKS} tasks ran within {DEADLINE_S} s; worker log: "
                     f"{log_tail(log_path)}")
            for task_id, want in sent.items():
                with open(os.path.join(out, task_id), encoding="utf-8") as f:
                    eq(json.load(f), want, f"task {task_id}'s result")

            # A task's result file can appear before the worker's
            # DeleteMessage for it has come back; stopping the worker then
            # makes it restore that message ("Restoring 1 unacknowledged
            # message(s)"), which would be the test's race, not the
            # server's. So the acknowledgements are awaited while the
            # worker still runs, and the queue is checked again after.
            steps.step("the worker acknowledges every task while it runs")
            deadline = time.monotonic() + 10
            while queue_left(key, secret, server) != ("0", "0") and \
                    time.monotonic() < deadline:
                time.sleep(0.2)
        finally:
            code = stop_worker(worker, log_path)
        eq(code, 0, "the worker's exit status after a warm shutdown")
        ok("Traceback" not in log_tail(log_path, 1 << 20),
           f"no traceback in the worker log: {log_tail(log_path)}")

        steps.step("every task was acknowledged: the queue is empty")
        sqs = sqs_client(key, secret, server)
        url = sqs.get_queue_url(QueueName="celery-compat")["QueueUrl"]
        left = queue_left(key, secret, server)
        if left != ("0", "0"):
            peek = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10,
                                       AttributeNames=["All"]).get("Messages", [])
            fail(f"messages left in celery-compat (visible, in flight): {left}; "
                 f"visible ones: {peek}; worker log: {log_tail(log_path, 20000)}")


if __name__ == "__main__":
    sys.exit(Steps("celery").run(body))
