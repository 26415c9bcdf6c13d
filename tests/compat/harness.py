"""harness.py -- shared by the Python-driven compatibility tests: starts a
real sluiced (127.0.0.1, ephemeral ports, a temporary data dir, two test
tenants and an admin with a bearer token), checks that Debian's client
packages are present, runs a test's steps with a clear closing line, and
computes SQS's message digests the clients themselves do not check.

Run with Debian's /usr/bin/python3 (tests/compat/CMakeLists.txt does): the
tier tests the clients Debian ships, not whatever pip put first on PATH.
"""

import ctypes
import hashlib
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import traceback

_LIBC = ctypes.CDLL(None, use_errno=True)
_PR_SET_PDEATHSIG = 1


def dies_with_us():
    """A preexec_fn for subprocess.Popen: the child gets SIGKILL when this
    process (the thread that started it) dies, so a killed test leaves no
    server or worker running. A parent that died before the prctl is
    caught by the getppid() check after it."""
    parent = os.getpid()

    def preexec():
        if _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0 or os.getppid() != parent:
            os._exit(124)
    return preexec


REGION = "us-east-1"
TENANTS = {
    "alpha": ("AKIDALPHA", "alpha-secret"),
    "beta": ("AKIDBETA", "beta-secret"),
}
ADMIN = ("admin", "admin-secret")
BEARER_TOKEN = "compat-metrics-token"


class Failure(Exception):
    """A check that did not hold; its message says what was expected."""


def fail(msg):
    raise Failure(msg)


def eq(actual, expected, what):
    if actual != expected:
        fail(f"{what}: expected {expected!r}, got {actual!r}")


def ok(cond, what):
    if not cond:
        fail(what)


def build_dir():
    default = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "build")
    return os.environ.get("SLUICE_BUILD_DIR", default)


def require_module(module, package):
    """Imports module or fails naming the Debian package that provides it."""
    try:
        return __import__(module)
    except ImportError as exc:
        fail(f"python module {module} is missing ({exc}): install Debian's {package} "
             "(scripts/setup does)")


def require_program(path, package):
    """Returns path when it is an executable, else fails naming the package."""
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        fail(f"{path} is missing: install Debian's {package} (scripts/setup does)")
    return path


def _free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _healthy(port):
    # HTTP/2 prior knowledge answers on every sluiced, before and after
    # HTTP/1.1 support, so readiness never depends on what is under test.
    r = subprocess.run(["curl", "-sf", "--http2-prior-knowledge", "--max-time", "1",
                        f"http://127.0.0.1:{port}/healthz"],
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, check=False)
    return r.returncode == 0 and r.stdout.strip() == b"ok"


def config_lines(port, admin_port, data_dir, partitions=4, shard_size=2, durability="os",
                 tenant_extra=()):
    """The lines of a test node's sluice.yaml: its listeners on loopback,
    the admin with a bearer token, and the test tenants (each followed by
    tenant_extra's lines)."""
    lines = [
        f"listen: 127.0.0.1:{port}",
        f"region: {REGION}",
        f"data_dir: {data_dir}",
        f"partitions: {partitions}",
        f"shard_size: {shard_size}",
        f"durability: {durability}",
        "io_threads: 2",
        "log_requests: false",
        "admin:",
        f"  listen: 127.0.0.1:{admin_port}",
        f"  access_key_id: {ADMIN[0]}",
        f"  secret_access_key: {ADMIN[1]}",
        f"  bearer_token: {BEARER_TOKEN}",
        "tenants:",
    ]
    for name, (key, secret) in TENANTS.items():
        lines += [f"  {name}:", f"    access_key_id: {key}",
                  f"    secret_access_key: {secret}"]
        lines += list(tenant_extra)
    return lines


class Sluiced:
    """A running sluiced; use as a context manager. endpoint is the SQS
    listener's URL, admin_endpoint the admin listener's."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="sluice-compat-")
        self.port = _free_port()
        self.admin_port = _free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.admin_endpoint = f"http://127.0.0.1:{self.admin_port}"
        self.proc = None
        self.log_path = os.path.join(self.dir, "sluiced.log")

    def _config(self):
        return "\n".join(config_lines(self.port, self.admin_port, f"{self.dir}/data")) + "\n"

    def __enter__(self):
        binary = os.path.join(build_dir(), "sluiced")
        if not os.access(binary, os.X_OK):
            fail(f"no sluiced at {binary}: build first or set SLUICE_BUILD_DIR")
        require_program(shutil.which("curl") or "/usr/bin/curl", "curl")
        config = os.path.join(self.dir, "sluice.yaml")
        with open(config, "w", encoding="utf-8") as f:
            f.write(self._config())
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen([binary, "--config", config], stdin=subprocess.DEVNULL,
                                     stdout=self.log, stderr=subprocess.STDOUT,
                                     preexec_fn=dies_with_us())
        try:
            self._wait_healthy()
        except BaseException:
            self.__exit__(*sys.exc_info())
            raise
        return self

    def _wait_healthy(self):
        deadline = time.monotonic() + 10
        while not _healthy(self.port):
            if self.proc.poll() is not None:
                fail(f"sluiced exited early ({self.proc.returncode}): {self.log_tail()}")
            if time.monotonic() > deadline:
                fail(f"sluiced did not become healthy in 10 s: {self.log_tail()}")
            time.sleep(0.05)

    def log_tail(self, n=2000):
        try:
            with open(self.log_path, "rb") as f:
                return f.read()[-n:].decode("utf-8", "replace")
        except OSError:
            return "(no log)"

    def stop(self):
        """SIGTERM and wait; returns the exit status (None if it had to be
        killed)."""
        if self.proc is None:
            return None
        code = None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                code = self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        else:
            code = self.proc.returncode
        self.proc = None
        self.log.close()
        return code

    def __exit__(self, exc_type, exc, tb):
        code = self.stop()
        if exc_type is None and code != 0:
            fail(f"sluiced exited {code} on SIGTERM, not 0: {self.log_tail()}")
        if exc_type is not None:
            print(f"--- sluiced log (tail)\n{self.log_tail()}", file=sys.stderr)
        shutil.rmtree(self.dir, ignore_errors=True)
        return False


def _md5_attr_part(data):
    return struct.pack(">I", len(data)) + data


def md5_of_message_attributes(attrs):
    """SQS's digest of message attributes ("Calculating the MD5 message
    digest for message attributes", Amazon SQS Developer Guide): for each
    attribute in name order, the length-prefixed name, data type, a
    transport byte (1 string, 2 binary) and the length-prefixed value.
    attrs maps name -> {"DataType", "StringValue" or "BinaryValue" (bytes)}."""
    h = hashlib.md5()
    for name in sorted(attrs):
        a = attrs[name]
        h.update(_md5_attr_part(name.encode()))
        h.update(_md5_attr_part(a["DataType"].encode()))
        if "BinaryValue" in a:
            h.update(b"\x02" + _md5_attr_part(bytes(a["BinaryValue"])))
        else:
            h.update(b"\x01" + _md5_attr_part(a["StringValue"].encode()))
    return h.hexdigest()


def md5_hex(text):
    return hashlib.md5(text.encode()).hexdigest()


class Steps:
    """Runs named steps in order, printing each, and ends with one closing
    line: 'compat NAME: PASS (n steps)' or 'compat NAME: FAIL in STEP: why'."""

    def __init__(self, name):
        self.name = name
        self.count = 0
        self.current = "setup"

    def step(self, title):
        self.current = title
        self.count += 1
        print(f"[{self.name}] {self.count}. {title}", flush=True)

    def run(self, body):
        started = time.monotonic()
        try:
            body(self)
        except Failure as exc:
            print(f"compat {self.name}: FAIL in '{self.current}': {exc}", flush=True)
            return 1
        except Exception as exc:  # a client exception is a failure too
            traceback.print_exc()
            print(f"compat {self.name}: FAIL in '{self.current}': "
                  f"{type(exc).__name__}: {exc}", flush=True)
            return 1
        print(f"compat {self.name}: PASS ({self.count} steps, "
              f"{time.monotonic() - started:.1f} s)", flush=True)
        return 0
