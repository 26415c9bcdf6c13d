"""celery_tasks.py -- the Celery application of test_celery.py: kombu's
SQS transport (Debian's python3-kombu 5.2) pointed at a sluiced through the
broker URL's host and port (kombu builds its endpoint from them; `is_secure`
False makes it http), tasks that leave their result in a file because SQS
offers Celery no result backend. Configured from the environment that
test_celery.py sets, so the worker subprocess and the producer share it."""

import json
import os
from urllib.parse import quote

from celery import Celery

KEY = os.environ["SLUICE_COMPAT_KEY"]
SECRET = os.environ["SLUICE_COMPAT_SECRET"]
HOSTPORT = os.environ["SLUICE_COMPAT_HOSTPORT"]
OUT_DIR = os.environ["SLUICE_COMPAT_OUT"]

app = Celery("compat")
app.conf.update(
    broker_url=f"sqs://{quote(KEY, safe='')}:{quote(SECRET, safe='')}@{HOSTPORT}",
    broker_transport_options={
        "region": "us-east-1",
        "is_secure": False,
        "queue_name_prefix": "celery-",
        "visibility_timeout": 60,
        # Long polls of 1 s and a short idle interval keep the test quick.
        "wait_time_seconds": 1,
        "polling_interval": 0.2,
    },
    task_default_queue="compat",
    # A broker that does not answer ends the worker rather than being
    # retried forever: the test is bounded and must report it.
    broker_connection_retry=False,
    broker_connection_max_retries=1,
    worker_prefetch_multiplier=1,
)


def _record(task_id, value):
    path = os.path.join(OUT_DIR, task_id)
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        json.dump(value, f)
    os.rename(path + ".tmp", path)  # the test never sees half a file


@app.task(bind=True)
def add(self, x, y):
    _record(self.request.id, {"task": "add", "result": x + y})
    return x + y


@app.task(bind=True)
def echo(self, text):
    _record(self.request.id, {"task": "echo", "result": text})
    return text
