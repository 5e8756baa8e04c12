"""Process-level behaviour, each in a subprocess: Ctrl-C during flush, interpreter exit with
pending records, and fork."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import loghose
import pytest
from conftest import reaped

pytestmark = pytest.mark.timeout(90)


def run(code: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=60, **kwargs)


def test_exit_with_pending_records_delivers_them_and_exits_zero():
    with loghose.Emulator() as emu:
        started = time.monotonic()
        result = run(f"""
            import loghose
            p = loghose.Producer(endpoint={emu.endpoint!r}, project="exit", logstore="logs",
                                 access_key_id={emu.access_key_id!r}, access_key_secret={emu.access_key_secret!r},
                                 linger_ms=60000)
            for i in range(5000):
                p.send({{"i": str(i)}})
            # no flush, no close: interpreter exit must deliver within the bound
        """)
        assert result.returncode == 0, result.stderr
        assert time.monotonic() - started < 30
        assert emu.totals("exit", "logs")["logs"] == 5000


def test_ctrl_c_interrupts_flush():
    with loghose.Emulator() as emu:
        emu.inject("hang", ms=60_000, count=1000)
        proc = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
            import loghose, sys, time
            p = loghose.Producer(endpoint={emu.endpoint!r}, project="proj", logstore="logs",
                                 access_key_id={emu.access_key_id!r}, access_key_secret={emu.access_key_secret!r},
                                 linger_ms=0, request_timeout_ms=120000)
            p.send({{"i": "1"}})
            print("flushing", flush=True)
            try:
                p.flush()
            except KeyboardInterrupt:
                print("interrupted", flush=True)
                p.close(timeout=0.2)
                sys.exit(0)
            sys.exit(3)
        """)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        with reaped(proc):
            assert proc.stdout.readline().strip() == "flushing"
            time.sleep(0.5)
            sent = time.monotonic()
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=30)
        assert proc.returncode == 0, err
        assert "interrupted" in out
        assert time.monotonic() - sent < 5


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_fork_child_gets_a_clear_error_and_a_fresh_producer_works():
    with loghose.Emulator() as emu:
        result = run(f"""
            import os, sys, loghose
            opts = dict(endpoint={emu.endpoint!r}, project="fork", logstore="logs",
                        access_key_id={emu.access_key_id!r}, access_key_secret={emu.access_key_secret!r}, linger_ms=10)
            parent = loghose.Producer(**opts)
            parent.send({{"who": "parent"}})
            pid = os.fork()
            if pid == 0:
                try:
                    parent.send({{"who": "inherited"}})
                    os._exit(5)
                except loghose.LoghoseError as e:
                    assert "fork" in str(e), e
                child = loghose.Producer(**opts)
                child.send({{"who": "child"}})
                os._exit(0 if child.flush(20) == 0 else 6)
            _, status = os.waitpid(pid, 0)
            assert parent.flush(20) == 0
            sys.exit(os.waitstatus_to_exitcode(status))
        """)
        assert result.returncode == 0, result.stderr + result.stdout
        who = sorted(dict(log["contents"])["who"] for log in emu.logs("fork", "logs"))
        assert who == ["child", "parent"]
