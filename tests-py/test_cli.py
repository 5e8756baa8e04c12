"""The `loghose` command as the wheel installs it (a console script) and as `python -m loghose`:
the engine's `send`, `pipe` and `emulator` in a child Python process, against the emulator."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

import loghose
import pytest

pytestmark = pytest.mark.timeout(120)


@pytest.fixture()
def emu():
    with loghose.Emulator() as emulator:
        yield emulator


def env_for(emu: loghose.Emulator, logstore: str, home: Path) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(home),
        "LOGHOSE_ENDPOINT": emu.endpoint,
        "LOGHOSE_PROJECT": "loghose",
        "LOGHOSE_LOGSTORE": logstore,
        "ALIBABA_CLOUD_ACCESS_KEY_ID": emu.access_key_id,
        "ALIBABA_CLOUD_ACCESS_KEY_SECRET": emu.access_key_secret,
    }


def contents(emu: loghose.Emulator, logstore: str) -> list[dict[str, str]]:
    return [dict(log["contents"]) for log in emu.logs("loghose", logstore)]


def test_the_console_script_is_installed_beside_the_interpreter():
    script = Path(sys.executable).parent / "loghose"
    assert script.exists() or shutil.which("loghose"), "the wheel installs a `loghose` command"
    out = subprocess.run([str(script), "--help"], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0
    assert "send" in out.stdout and "pipe" in out.stdout


def test_send_and_pipe_through_python_reach_the_emulator(emu, tmp_path):
    env = env_for(emu, "cli", tmp_path)
    sent = subprocess.run([sys.executable, "-m", "loghose", "send", "k=v", "n=1"],
                          env=env, capture_output=True, text=True, timeout=60)
    assert sent.returncode == 0, sent.stderr
    piped = subprocess.run([sys.executable, "-m", "loghose", "pipe"], input="a\nb\nc\n",
                           env=env, capture_output=True, text=True, timeout=60)
    assert piped.returncode == 0, piped.stderr
    got = contents(emu, "cli")
    assert {"k": "v", "n": "1"} in got
    assert sorted(r["content"] for r in got if "content" in r) == ["a", "b", "c"]
    # Not delivered (nothing listens on port 9): exit status 1, the reason on stderr.
    env["LOGHOSE_ENDPOINT"] = "http://127.0.0.1:9"
    failed = subprocess.run([sys.executable, "-m", "loghose", "send", "--option", "delivery_timeout_ms=1500",
                             "k=v"], env=env, capture_output=True, text=True, timeout=60)
    assert failed.returncode == 1
    assert "not delivered" in failed.stderr
    # A usage error: status 2.
    usage = subprocess.run([sys.executable, "-m", "loghose", "send", "no-equals"], env=env,
                           capture_output=True, text=True, timeout=60)
    assert usage.returncode == 2


def test_the_emulator_command_serves_on_its_port_until_sigterm(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "loghose", "emulator", "--port", str(port)],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == f"http://127.0.0.1:{port}"
        # Stays up with its input closed (it serves until told to stop).
        with pytest.raises(subprocess.TimeoutExpired):
            proc.wait(timeout=1)
        env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path)}
        sent = subprocess.run([sys.executable, "-m", "loghose", "send", "--endpoint", f"http://127.0.0.1:{port}",
                               "--project", "loghose", "--logstore", "served", "--access-key-id",
                               "loghose-emulator", "--access-key-secret", "loghose-emulator-secret", "k=v"],
                              env=env, capture_output=True, text=True, timeout=60)
        assert sent.returncode == 0, sent.stderr
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
