"""test_awscli.py -- Debian's aws CLI (awscli 2.9: the SQS query protocol
over HTTP/1.1) runs the common flow against a real sluiced, one
`aws --endpoint-url URL sqs COMMAND --flags` subprocess per call, the way
a shell script would. Credentials come from the environment only: the
CLI's config and credentials files point at empty files so that the
user's own profile cannot leak in."""

import base64
import json
import os
import re
import subprocess
import sys
import tempfile

from harness import REGION, TENANTS, Sluiced, Steps, eq, fail, require_program
from sqs_flow import run_flow

AWS = "/usr/bin/aws"


def _flag(name):
    return "--" + re.sub(r"(?<!^)(?=[A-Z])", "-", name).lower()


def _value(v):
    # Scalars as they are typed on a command line; structures as JSON, which
    # the CLI accepts for every structure, list and map parameter.
    if isinstance(v, (dict, list)):
        return json.dumps(v)
    return str(v)


class CliClient:
    def __init__(self, endpoint, key, secret, home):
        self.endpoint = endpoint
        empty = os.path.join(home, "empty")
        open(empty, "w", encoding="utf-8").close()
        self.env = {
            "PATH": "/usr/bin:/bin",
            "HOME": home,
            "LANG": "C.UTF-8",
            "AWS_ACCESS_KEY_ID": key,
            "AWS_SECRET_ACCESS_KEY": secret,
            "AWS_DEFAULT_REGION": REGION,
            "AWS_CONFIG_FILE": empty,
            "AWS_SHARED_CREDENTIALS_FILE": empty,
            "AWS_PAGER": "",
            "AWS_EC2_METADATA_DISABLED": "true",
            "AWS_MAX_ATTEMPTS": "1",
            "AWS_RETRY_MODE": "standard",
        }

    def run(self, op, **params):
        argv = [AWS, "--endpoint-url", self.endpoint, "--output", "json",
                "--cli-binary-format", "base64", "sqs", op.replace("_", "-")]
        for name, v in params.items():
            argv += [_flag(name), _value(v)]
        return subprocess.run(argv, env=self.env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, timeout=60, check=False)

    def call(self, op, **params):
        r = self.run(op, **params)
        if r.returncode != 0:
            fail(f"aws sqs {op.replace('_', '-')} exited {r.returncode}: "
                 f"{r.stderr.decode(errors='replace').strip()}")
        out = r.stdout.decode().strip()
        return json.loads(out) if out else {}

    @staticmethod
    def bin_in(data):
        return base64.b64encode(data).decode()

    @staticmethod
    def bin_out(value):
        return base64.b64decode(value)

    def error_code(self, op, **params):
        r = self.run(op, **params)
        err = r.stderr.decode(errors="replace")
        # 254: the service answered with an error (the CLI's documented
        # return codes); the message names the code and the operation.
        eq(r.returncode, 254, f"aws sqs {op}: exit status (stderr: {err.strip()})")
        m = re.search(r"An error occurred \(([^)]+)\) when calling the (\w+) operation", err)
        if not m:
            fail(f"aws sqs {op}: no service error on stderr: {err.strip()}")
        return m.group(1)


def body(steps):
    require_program(AWS, "awscli")
    with Sluiced() as server, tempfile.TemporaryDirectory(prefix="sluice-awscli-") as home:
        client = CliClient(server.endpoint, *TENANTS["alpha"], home)
        version = subprocess.run([AWS, "--version"], env=client.env, stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, check=False).stdout.decode().strip()
        print(f"[awscli] {version}", flush=True)
        run_flow(steps, client, server.endpoint, prefix="cli")


if __name__ == "__main__":
    sys.exit(Steps("awscli").run(body))
