"""Fixtures shared by the Python tests.

`emulator` starts the `loghose-emulator` command-line server on a free port (the binary the
Rust build produces; `LOGHOSE_EMULATOR_BIN` overrides its path) and stops it afterwards.

`sls_client` is the official `aliyun-log-python-sdk` LogClient pointed at it. With an endpoint
that carries a port, the SDK connects to `{project}.{endpoint}`, a name nothing resolves; the
fixture makes the emulator the SDK's HTTP proxy instead, and the emulator serves proxy-form
requests like any other, taking the project from the Host header as the service does. No name
resolution, no privileged port and no /etc/hosts edit are needed, so it works the same in CI.

`reaped` keeps a test's child process from outliving the test when an assertion or a timeout
ends it early.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ACCESS_KEY_ID = "py-interop-id"
ACCESS_KEY_SECRET = "py-interop-secret"
STS_ID = "STS.py-interop"
STS_SECRET = "py-sts-secret"
STS_TOKEN = "py-sts-token-CAIS+/=="


@contextlib.contextmanager
def reaped(process: subprocess.Popen, *, group: bool = False) -> Iterator[subprocess.Popen]:
    """Yields `process`; one still running when the block ends (an assertion failed, a wait
    timed out) is killed and waited for, so it cannot hold ports, files or a CPU into the next
    test. With `group`, its whole process group goes (a server's workers too): start it with
    `start_new_session=True`."""
    try:
        yield process
    finally:
        if process.poll() is None:
            if group:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
            else:
                process.kill()
            process.wait()
        elif group:
            # The leader is gone; workers it left behind are not.
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)


@dataclass
class RunningEmulator:
    endpoint: str
    port: int
    process: subprocess.Popen

    def api(self, path: str, data: bytes | None = None, method: str | None = None) -> bytes:
        """Calls the emulator's own /_emulator/ JSON API (no proxy)."""
        request = urllib.request.Request(self.endpoint + "/_emulator/" + path, data=data, method=method)
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with opener.open(request, timeout=10) as resp:
            return resp.read()


def emulator_binary() -> Path:
    override = os.environ.get("LOGHOSE_EMULATOR_BIN")
    if override:
        return Path(override)
    for profile in ("debug", "release"):
        candidate = ROOT / "target" / profile / "loghose-emulator"
        if candidate.exists():
            return candidate
    subprocess.run(["cargo", "build", "-p", "loghose", "--bin", "loghose-emulator"], cwd=ROOT, check=True, timeout=900)
    return ROOT / "target" / "debug" / "loghose-emulator"


@pytest.fixture()
def emulator():
    args = [
        str(emulator_binary()),
        "--port", "0",
        "--access-key-id", ACCESS_KEY_ID,
        "--access-key-secret", ACCESS_KEY_SECRET,
        "--sts-key", f"{STS_ID}:{STS_SECRET}:{STS_TOKEN}",
        "--shards", "2",
    ]
    process = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
    try:
        line = process.stdout.readline().strip()
        assert line.startswith("http://127.0.0.1:"), f"unexpected first line {line!r}"
        yield RunningEmulator(endpoint=line, port=int(line.rsplit(":", 1)[1]), process=process)
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            raise


@pytest.fixture()
def via_emulator_proxy(emulator, monkeypatch):
    """Routes the SDK's HTTP through the emulator, whatever host name it builds."""
    for name in ("NO_PROXY", "no_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", emulator.endpoint)
    monkeypatch.setenv("http_proxy", emulator.endpoint)
    return emulator


@pytest.fixture()
def sls_client(via_emulator_proxy):
    from aliyun.log import LogClient

    return LogClient(f"127.0.0.1:{via_emulator_proxy.port}", ACCESS_KEY_ID, ACCESS_KEY_SECRET, source="10.1.2.3")
