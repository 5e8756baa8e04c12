"""SIGTERM and SIGINT, with real processes and no spool: a child sends at about 50 000 logs/s
and publishes how many sends succeeded; the parent signals it. Every acknowledged record must
arrive, the child must end the way it would have without loghose (killed by the signal, or
KeyboardInterrupt, or its own handler's exit status), and its own handler must run."""

from __future__ import annotations

import os
import shlex
import signal
import struct
import subprocess
import sys
import textwrap
import time

import loghose
import pytest
from conftest import reaped

pytestmark = [pytest.mark.timeout(120), pytest.mark.skipif(sys.platform == "win32", reason="needs POSIX signals")]

# How a fresh interpreter is started: this one's executable, or (under qemu-user, where an ARM
# interpreter cannot exec another without binfmt) the command LOGHOSE_TEST_PYTHON names.
PYTHON = shlex.split(os.environ.get("LOGHOSE_TEST_PYTHON", "")) or [sys.executable]

CHILD = """
    import mmap, os, signal, struct, sys, threading, time, loghose
    endpoint, key_id, secret, ack, logstore, mode = sys.argv[1:7]
    if mode == "app-handler":
        def handler(signum, frame):
            sys.stderr.write("app handler ran\\n")
            sys.exit(3)
        signal.signal(signal.SIGTERM, handler)
    options = {"close_on_signal_ms": 0} if mode == "off" else {}
    p = loghose.Producer(endpoint=endpoint, project="proj", logstore=logstore, access_key_id=key_id,
                         access_key_secret=secret, linger_ms=2000, **options)
    with open(ack, "r+b") as f:
        mark = mmap.mmap(f.fileno(), 8)
    sys.stdout.write("ready\\n")
    sys.stdout.flush()
    started = time.monotonic()
    i = 0
    try:
        while True:
            p.send({"i": str(i)})
            i += 1
            struct.pack_into("<Q", mark, 0, i)
            if i % 500 == 0:
                ahead = started + i / 50_000 - time.monotonic()
                if ahead > 0:
                    time.sleep(ahead)
    except KeyboardInterrupt:
        if mode == "catch-interrupt":
            sys.stderr.write("caught KeyboardInterrupt\\n")
            sys.exit(4)
        raise
"""


def run_child(emu: loghose.Emulator, tmp_path, logstore: str, mode: str, signum: int):
    ack = tmp_path / f"ack-{logstore}"
    ack.write_bytes(bytes(8))
    child = subprocess.Popen([sys.executable, "-c", textwrap.dedent(CHILD), emu.endpoint, emu.access_key_id,
                              emu.access_key_secret, str(ack), logstore, mode],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    with reaped(child):
        assert child.stdout is not None
        assert child.stdout.readline() == "ready\n"
        # Signalled once it has sent more than 10 000 records (about 1 s; longer on a loaded machine).
        deadline = time.monotonic() + 30
        while struct.unpack("<Q", ack.read_bytes())[0] <= 10_000 and time.monotonic() < deadline:
            time.sleep(0.05)
        os.kill(child.pid, signum)
        _, stderr = child.communicate(timeout=30)
    acknowledged = struct.unpack("<Q", ack.read_bytes())[0]
    seen = {int(dict(log["contents"])["i"]) for log in emu.logs("proj", logstore)}
    lost = sum(1 for i in range(acknowledged) if i not in seen)
    print(f"{mode} {signal.Signals(signum).name}: exit {child.returncode}, {acknowledged} acknowledged, "
          f"{lost} lost")
    return child.returncode, stderr, acknowledged, lost


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_delivers_everything_and_ends_the_process_as_it_would_have(tmp_path, signum):
    with loghose.Emulator() as emu:
        code, stderr, acknowledged, lost = run_child(emu, tmp_path, f"default-{signum}", "default", signum)
    assert acknowledged > 10_000
    assert lost == 0
    # Killed by the signal, as without loghose: SIGTERM by its default action, SIGINT by the
    # KeyboardInterrupt that reached the application and ended the interpreter.
    assert code == -signum, stderr
    if signum == signal.SIGINT:
        assert "KeyboardInterrupt" in stderr


def test_the_applications_handler_still_runs_and_sets_the_exit_status(tmp_path):
    with loghose.Emulator() as emu:
        code, stderr, acknowledged, lost = run_child(emu, tmp_path, "app-handler", "app-handler", signal.SIGTERM)
    assert "app handler ran" in stderr
    assert code == 3
    assert acknowledged > 10_000
    assert lost == 0


def test_keyboard_interrupt_still_reaches_the_application(tmp_path):
    with loghose.Emulator() as emu:
        code, stderr, acknowledged, lost = run_child(emu, tmp_path, "catch-interrupt", "catch-interrupt",
                                                     signal.SIGINT)
    assert "caught KeyboardInterrupt" in stderr
    assert code == 4
    assert lost == 0


def test_turned_off_the_signal_ends_the_process_at_once_and_the_open_batch_is_lost(tmp_path):
    # What close_on_signal_ms=0 means (and what happened before): the default action, no delivery.
    with loghose.Emulator() as emu:
        code, _, acknowledged, lost = run_child(emu, tmp_path, "off", "off", signal.SIGTERM)
    assert code == -signal.SIGTERM
    assert acknowledged > 10_000
    assert lost > 0


def test_handlers_are_left_alone_off_the_main_thread_and_when_ignored():
    import threading

    import loghose._signals as signals

    previous = signal.getsignal(signal.SIGTERM)
    result: list[bool] = []
    thread = threading.Thread(target=lambda: result.append(signals.install(lambda: ())))
    thread.start()
    thread.join()
    assert result == [False]
    assert signal.getsignal(signal.SIGTERM) is previous
    script = textwrap.dedent("""
        import signal, loghose
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        with loghose.Emulator() as emu:
            p = loghose.Producer(**emu.producer_options("proj", "ignored"))
            assert signal.getsignal(signal.SIGTERM) is signal.SIG_IGN
            assert signal.getsignal(signal.SIGINT) is not signal.default_int_handler
            p.close()
        print("ok")
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "ok", done.stderr


def test_a_second_signal_ends_a_stuck_delivery_at_once():
    with loghose.Emulator() as emu:
        emu.inject("hang", ms=60_000, count=1000)
        script = textwrap.dedent(f"""
            import sys, time, loghose
            p = loghose.Producer(endpoint={emu.endpoint!r}, project="proj", logstore="stuck",
                                 access_key_id={emu.access_key_id!r}, access_key_secret={emu.access_key_secret!r},
                                 close_on_signal_ms=30_000)
            p.send({{"i": "1"}})
            print("ready", flush=True)
            time.sleep(60)
        """)
        child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
        with reaped(child):
            assert child.stdout is not None and child.stdout.readline() == "ready\n"
            os.kill(child.pid, signal.SIGTERM)
            time.sleep(0.5)
            assert child.poll() is None, "the first SIGTERM waits for delivery (up to 30 s here)"
            second = time.monotonic()
            os.kill(child.pid, signal.SIGTERM)
            child.wait(timeout=20)
        assert child.returncode == -signal.SIGTERM
        assert time.monotonic() - second < 5


STUCK = """
    import ctypes, sys, loghose
    endpoint, key_id, secret, logstore = sys.argv[1:5]
    p = loghose.Producer(endpoint=endpoint, project="proj", logstore=logstore, access_key_id=key_id,
                         access_key_secret=secret, linger_ms=60_000)
    for i in range(1000):
        p.send({"i": str(i)})
    # A C call that sleeps through signals without returning to Python (a futex wait restarts
    # after each), as a multiprocessing worker does on a lock a signal just missed: Python's
    # handler can never run.
    libc = ctypes.CDLL(None)
    mutex = ctypes.create_string_buffer(64)
    libc.pthread_mutex_lock(mutex)
    sys.stdout.write("stuck\\n")
    sys.stdout.flush()
    libc.pthread_mutex_lock(mutex)
"""


@pytest.mark.skipif(sys.platform != "linux", reason="a zeroed buffer is a mutex with glibc or musl")
def test_a_main_thread_that_cannot_run_the_handler_still_delivers_and_ends_by_the_signal():
    with loghose.Emulator() as emu:
        child = subprocess.Popen([*PYTHON, "-c", textwrap.dedent(STUCK), emu.endpoint, emu.access_key_id,
                                  emu.access_key_secret, "stuck"],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        with reaped(child):
            assert child.stdout is not None
            assert child.stdout.readline() == "stuck\n"
            started = time.monotonic()
            os.kill(child.pid, signal.SIGTERM)
            _, stderr = child.communicate(timeout=30)
            took = time.monotonic() - started
        seen = {int(dict(log["contents"])["i"]) for log in emu.logs("proj", "stuck")}
    # The watchdog delivered the open batch (the linger was a minute away) and the process ended
    # by SIGTERM, as the default would have ended it.
    assert child.returncode == -signal.SIGTERM, stderr
    assert seen == set(range(1000))
    print(f"stuck main thread: delivered and ended in {took:.2f} s")
    assert took < 10


FORKED_STUCK = """
    import ctypes, os, sys, loghose
    endpoint, key_id, secret, logstore = sys.argv[1:5]
    p = loghose.Producer(endpoint=endpoint, project="proj", logstore=logstore, access_key_id=key_id,
                         access_key_secret=secret)
    pid = os.fork()
    if pid == 0:
        # A forked child that makes no producer of its own (a pool worker waiting for its first
        # task), stuck where Python's handler cannot run.
        libc = ctypes.CDLL(None)
        mutex = ctypes.create_string_buffer(64)
        libc.pthread_mutex_lock(mutex)
        sys.stdout.write(f"stuck {os.getpid()}\\n")
        sys.stdout.flush()
        libc.pthread_mutex_lock(mutex)
    _, status = os.waitpid(pid, 0)
    sys.stdout.write(f"child ended {os.waitstatus_to_exitcode(status)}\\n")
    sys.stdout.flush()
"""


@pytest.mark.skipif(sys.platform != "linux", reason="a zeroed buffer is a mutex with glibc or musl")
def test_a_forked_child_without_a_producer_still_ends_by_the_signal():
    with loghose.Emulator() as emu:
        parent = subprocess.Popen([*PYTHON, "-c", textwrap.dedent(FORKED_STUCK), emu.endpoint,
                                   emu.access_key_id, emu.access_key_secret, "forked"],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                  start_new_session=True)
        assert parent.stdout is not None
        with reaped(parent, group=True):
            stuck = parent.stdout.readline()
            assert stuck.startswith("stuck "), stuck
            started = time.monotonic()
            os.kill(int(stuck.split()[1]), signal.SIGTERM)
            out, stderr = parent.communicate(timeout=30)
    # The child inherited the handler, not the parent's watchdog thread: it arms its own at the
    # fork, so the signal ends it as the default would have (it was never ended before).
    assert out == f"child ended {-signal.SIGTERM}\n", stderr
    assert time.monotonic() - started < 10


EXITING = """
    import sys, loghose
    endpoint, key_id, secret, logstore = sys.argv[1:5]
    p = loghose.Producer(endpoint=endpoint, project="proj", logstore=logstore, access_key_id=key_id,
                         access_key_secret=secret, linger_ms=60_000)
    for i in range(100):
        p.send({"i": str(i)})
    sys.stdout.write("exiting\\n")
    sys.stdout.flush()
    # The end of the script: loghose's exit hook closes the producer, which the slow service
    # keeps waiting while the signal arrives.
"""


@pytest.mark.skipif(sys.platform != "linux", reason="a zeroed buffer is a mutex with glibc or musl")
def test_a_second_signal_ends_the_watchdogs_delivery_at_once():
    # The main thread cannot run Python's handler (stuck in a C call), so the watchdog delivers
    # natively, and the service hangs: that delivery would take all of close_on_signal_ms. A
    # second SIGTERM must end the process at once all the same, though no Python code can run to
    # see it.
    with loghose.Emulator() as emu:
        emu.inject("hang", ms=60_000, count=1000)
        script = STUCK.replace("linger_ms=60_000", "linger_ms=60_000, close_on_signal_ms=30_000")
        child = subprocess.Popen([*PYTHON, "-c", textwrap.dedent(script), emu.endpoint, emu.access_key_id,
                                  emu.access_key_secret, "stuck"],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        with reaped(child):
            assert child.stdout is not None
            assert child.stdout.readline() == "stuck\n"
            os.kill(child.pid, signal.SIGTERM)
            time.sleep(1.0)  # past the watchdog's grace: it is delivering now
            assert child.poll() is None, "the first SIGTERM waits for delivery (up to 30 s here)"
            second = time.monotonic()
            os.kill(child.pid, signal.SIGTERM)
            child.communicate(timeout=20)
            took = time.monotonic() - second
    assert child.returncode == -signal.SIGTERM
    assert took < 5, f"the second SIGTERM took {took:.1f} s to end the process"


def test_a_signal_during_the_exit_time_close_waits_for_that_delivery():
    with loghose.Emulator() as emu:
        emu.inject("latency", ms=1500, window_ms=60_000)
        child = subprocess.Popen([sys.executable, "-c", textwrap.dedent(EXITING), emu.endpoint,
                                  emu.access_key_id, emu.access_key_secret, "exiting"],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        with reaped(child):
            assert child.stdout is not None
            assert child.stdout.readline() == "exiting\n"
            time.sleep(0.5)
            os.kill(child.pid, signal.SIGTERM)
            _, stderr = child.communicate(timeout=30)
        seen = {int(dict(log["contents"])["i"]) for log in emu.logs("proj", "exiting")}
    # Ended by the signal, as it would have been, and only once the close it interrupted was done.
    assert child.returncode == -signal.SIGTERM, stderr
    assert seen == set(range(100)), stderr
