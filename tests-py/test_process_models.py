"""Services as they really run: multiprocessing in every start method, celery's prefork pool,
uvicorn workers, gunicorn with a spool, a server that captures signals before the application,
and the exit timeout. Each starts the real server or pool (the applications are in
``tests-py/servers``) against an emulator in this process and counts every record that
arrives; none may be lost, and none may arrive twice."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections import Counter
from pathlib import Path

import loghose
import pytest
from conftest import reaped

pytestmark = [pytest.mark.timeout(180), pytest.mark.skipif(sys.platform == "win32", reason="needs fork and signals")]

SERVERS = Path(__file__).resolve().parent / "servers"


def environment(emu: loghose.Emulator, logstore: str, **extra: str) -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(SERVERS), LOGHOSE_TEST_ENDPOINT=emu.endpoint,
               LOGHOSE_TEST_KEY_ID=emu.access_key_id, LOGHOSE_TEST_KEY_SECRET=emu.access_key_secret,
               LOGHOSE_TEST_LOGSTORE=logstore)
    env.update(extra)
    return env


def messages(emu: loghose.Emulator, logstore: str) -> Counter[str]:
    return Counter(dict(log["contents"])["message"] for log in emu.logs("proj", logstore))


def kinds(seen: Counter[str]) -> Counter[str]:
    """How many records of each kind (a message's first word) arrived."""
    counted: Counter[str] = Counter()
    for message, n in seen.items():
        counted[message.split()[0]] += n
    return counted


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_until_serving(port: int, server: subprocess.Popen) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert server.poll() is None, "the server ended before it served"
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5).read()
            return
        except OSError:
            time.sleep(0.2)
    raise AssertionError("the server never answered")


def requests(port: int, count: int) -> list[threading.Thread]:
    """``count`` requests at once, each on a thread of its own (started, not joined)."""
    threads = [threading.Thread(target=lambda: urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=30).read())
               for _ in range(count)]
    for thread in threads:
        thread.start()
    return threads


@pytest.mark.parametrize("shape", ["closejoin", "with", "recycle", "process"])
@pytest.mark.parametrize("method", ["fork", "forkserver", "spawn"])
def test_multiprocessing_children_deliver_every_record(method, shape):
    # Fork and forkserver children end with os._exit, skipping atexit: multiprocessing's own
    # finalizers deliver. `with Pool` terminates its workers by SIGTERM; `recycle` replaces
    # each worker after one task; `process` is a single Process child.
    with loghose.Emulator() as emu:
        logstore = f"pool-{method}-{shape}"
        result = subprocess.run([sys.executable, str(SERVERS / "pool_app.py"), method, shape],
                                env=environment(emu, logstore), capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, result.stderr
        assert "Logging error" not in result.stderr, result.stderr
        seen = messages(emu, logstore)
    tasks = 1 if shape == "process" else 4
    assert sum(seen.values()) == tasks * 1000
    assert len(seen) == tasks * 1000  # every record once


def test_celery_prefork_children_recycled_every_two_tasks_deliver_every_record(tmp_path):
    # billiard ends a pool child with os._exit, skipping even multiprocessing's finalizers;
    # celery's worker_process_shutdown signal comes just before.
    celery_app = pytest.importorskip("celery")
    assert celery_app
    broker = tmp_path / "broker"
    broker.mkdir()
    with loghose.Emulator() as emu:
        env = environment(emu, "celery", LOGHOSE_TEST_BROKER=str(broker))
        send = "import celery_app\nfor n in range(8): celery_app.work.delay(n)"
        sender = subprocess.run([sys.executable, "-c", send], env=env, cwd=tmp_path, capture_output=True, text=True,
                                timeout=60)
        assert sender.returncode == 0, sender.stderr
        worker = subprocess.Popen([sys.executable, "-m", "celery", "-A", "celery_app", "worker", "--pool=prefork",
                                   "--concurrency=2", "--max-tasks-per-child=2", "--loglevel=WARNING",
                                   "--without-heartbeat", "--without-mingle", "--without-gossip"],
                                  env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                  start_new_session=True)
        with reaped(worker, group=True):
            try:
                deadline = time.monotonic() + 60
                while any(broker.iterdir()) and time.monotonic() < deadline:
                    time.sleep(0.2)
                assert not any(broker.iterdir()), "the worker did not take every task"
                # The last tasks taken are done, and their child recycled, within a few seconds.
                deadline = time.monotonic() + 30
                while sum(messages(emu, "celery").values()) < 4000 and time.monotonic() < deadline:
                    time.sleep(0.2)
            finally:
                worker.send_signal(signal.SIGTERM)
                output, _ = worker.communicate(timeout=60)
        seen = messages(emu, "celery")
    tasks = Counter(message for message in seen if message.startswith("task "))
    assert sum(tasks.values()) == 4000, output[-3000:]
    assert len(tasks) == 4000


@pytest.mark.parametrize("spooled", [False, True], ids=["memory", "spool"])
def test_uvicorn_workers_deliver_what_requests_in_flight_and_the_shutdown_log_after_sigterm(tmp_path, spooled):
    # uvicorn captures SIGTERM before it imports the application, restores the default when
    # it has shut down, and raises the signal again: the worker dies by it, with no atexit.
    # With a spool, both workers share one spool_dir (a slot each).
    pytest.importorskip("uvicorn")
    port = free_port()
    spool = tmp_path / "spool"
    with loghose.Emulator() as emu:
        env = environment(emu, "uvicorn", **({"LOGHOSE_TEST_SPOOL": str(spool)} if spooled else {}))
        server = subprocess.Popen([sys.executable, "-m", "uvicorn", "asgi_app:app", "--workers", "2", "--port",
                                   str(port), "--log-level", "warning"], env=env,
                                  cwd=SERVERS, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                  start_new_session=True)
        with reaped(server, group=True):
            try:
                wait_until_serving(port, server)
                in_flight = requests(port, 20)
                time.sleep(0.5)  # every request started, none ended
            finally:
                server.send_signal(signal.SIGTERM)
                output, _ = server.communicate(timeout=60)
        for thread in in_flight:
            thread.join(timeout=30)
        seen = kinds(messages(emu, "uvicorn"))
    assert server.returncode == 0, output
    assert seen["startup"] == 2, output
    assert seen["request"] == 2 * 21, output  # the first request (the readiness check) and 20 in flight
    assert seen["shutdown"] == 2 * 100, output
    if spooled:
        assert sorted(p.name for p in spool.iterdir()) == ["slot-0", "slot-1"]
        assert not any(p.suffix in (".spl", ".spb") for p in spool.rglob("*"))


def test_a_signal_captured_before_the_handler_then_raised_again_loses_nothing():
    with loghose.Emulator() as emu:
        result = subprocess.run([sys.executable, str(SERVERS / "captured_signal.py")],
                                env=environment(emu, "captured"), capture_output=True, text=True, timeout=60)
        seen = kinds(messages(emu, "captured"))
    assert result.returncode == -signal.SIGTERM, result.stderr  # ended by the signal, as it would have
    assert seen == {"before": 100, "after": 100}


def test_the_exit_waits_for_the_handlers_close_timeout_and_no_longer_than_the_records_need():
    with loghose.Emulator() as emu:
        emu.inject("latency", ms=2500, logstore="slow-handler")
        started = time.monotonic()
        result = subprocess.run([sys.executable, str(SERVERS / "slow_exit.py"), "handler"],
                                env=environment(emu, "slow-handler", LOGHOSE_TEST_CLOSE_TIMEOUT="30"),
                                capture_output=True, text=True, timeout=60)
        took = time.monotonic() - started
        assert result.returncode == 0, result.stderr
        assert emu.totals("proj", "slow-handler")["logs"] == 1000
    # More than the global default (1 s here), as long as the records needed, far below 30 s.
    assert 2.5 <= took < 15, took


def test_a_producer_without_a_timeout_of_its_own_gets_the_default_and_says_what_it_gave_up():
    with loghose.Emulator() as emu:
        emu.inject("latency", ms=4000, logstore="slow-producer")
        started = time.monotonic()
        result = subprocess.run([sys.executable, str(SERVERS / "slow_exit.py"), "producer"],
                                env=environment(emu, "slow-producer"), capture_output=True, text=True, timeout=60)
        took = time.monotonic() - started
    assert result.returncode == 0, result.stderr
    assert took < 3.5, took  # the one-second default, not the four seconds the records need
    assert "1000 record(s) for proj/slow-producer failed for good" in result.stderr, result.stderr


def children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry.name))
    return found


def get(port: int, request: int) -> None:
    urllib.request.urlopen(f"http://127.0.0.1:{port}/?id={request}", timeout=30).read()


@pytest.mark.parametrize("preload", [True, False], ids=["preload", "no-preload"])
def test_gunicorn_workers_share_one_spool_dir_and_a_killed_workers_records_arrive_once(tmp_path, preload):
    # Every worker takes a slot of its own under the one spool_dir (the master too, with
    # --preload). A worker SIGKILLed with its records still in the open batch leaves its slot
    # behind: the worker that replaces it takes the slot and sends them when it first logs,
    # or, if a sibling looks first (the replacement may not be given a request for a while),
    # the sibling does. Either way they arrive while the server runs, once.
    pytest.importorskip("gunicorn")
    port = free_port()
    spool = tmp_path / "spool"
    with loghose.Emulator() as emu:
        trace = tmp_path / "served"
        env = environment(emu, "gunicorn", LOGHOSE_TEST_SPOOL=str(spool), LOGHOSE_TEST_LINGER_MS="60000",
                          LOGHOSE_TEST_TRACE=str(trace))
        server = subprocess.Popen([sys.executable, "-m", "gunicorn", "-w", "3", "-b", f"127.0.0.1:{port}",
                                   "--graceful-timeout", "30", *(["--preload"] if preload else []), "wsgi_app:app"],
                                  env=env, cwd=SERVERS, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                  start_new_session=True)
        with reaped(server, group=True):
            try:
                wait_until_serving(port, server)
                for n in range(300):
                    get(port, n)
                workers = children(server.pid)
                assert len(workers) == 3, workers
                os.kill(workers[0], signal.SIGKILL)
                deadline = time.monotonic() + 30
                while ((len(children(server.pid)) < 3 or workers[0] in children(server.pid))
                       and time.monotonic() < deadline):
                    time.sleep(0.1)
                for n in range(300, 600):
                    get(port, n)
                served = dict(reversed(line.split()) for line in trace.read_text().splitlines())
                dead = {f"request {n}" for n in range(300) if served[str(n)] == str(workers[0])}
                deadline = time.monotonic() + 20
                while not dead <= set(messages(emu, "gunicorn")) and time.monotonic() < deadline:
                    time.sleep(0.1)
                late = dead - set(messages(emu, "gunicorn"))
            finally:
                server.send_signal(signal.SIGTERM)
                output, _ = server.communicate(timeout=60)
        seen = messages(emu, "gunicorn")
    assert "Logging error" not in output, output
    assert server.returncode == 0, output
    answered = Counter(message for message in seen if message != "request -")
    arrived = sorted(int(m.split()[1]) for m in answered)
    if arrived != list(range(600)):
        missing: Counter[str] = Counter(served.get(str(n), "?") for n in set(range(600)) - set(arrived))
        files = sorted(f"{p.relative_to(spool)} {p.stat().st_size}" for p in spool.rglob("*") if p.is_file())
        raise AssertionError(f"{600 - len(set(arrived))} records missing; by the process that served them "
                             f"(killed: {workers[0]}): {dict(missing)}; served per process: "
                             f"{dict(Counter(served.values()))}; spool files: {files}\n{output[-3000:]}")
    assert max(answered.values()) == 1  # none twice
    assert not late, f"{len(late)} of the killed worker's {len(dead)} records arrived only at the stop"
    # A slot per producer at once: three workers and, with --preload, the master; the
    # replacement took the dead worker's slot (the lowest free one), or the next one when a
    # sibling held the dead slot to send its records just then.
    slots = sorted(p.name for p in spool.iterdir())
    expected = [f"slot-{n}" for n in range(4 if preload else 3)]
    assert slots in (expected, [*expected, f"slot-{len(expected)}"]), slots
    assert not any(p.suffix in (".spl", ".spb") for p in spool.rglob("*")), "a clean stop leaves no spool file"


def settled_count(emu, logstore):
    """How many records the emulator holds once no more arrive for half a second."""
    count = sum(messages(emu, logstore).values())
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        time.sleep(0.5)
        again = sum(messages(emu, logstore).values())
        if again == count:
            break
        count = again
    return count


@pytest.mark.parametrize("spooled", [False, True], ids=["memory", "spool"])
def test_os_exit_loses_the_open_batches_unless_a_spool_keeps_them(tmp_path, spooled):
    spool = tmp_path / "spool"
    with loghose.Emulator() as emu:
        env = environment(emu, "hard-exit", **({"LOGHOSE_TEST_SPOOL": str(spool)} if spooled else {}))
        result = subprocess.run([sys.executable, str(SERVERS / "hard_exit.py")], env=env, capture_output=True,
                                text=True, timeout=60)
        assert result.returncode == 0, result.stderr
        # A batch written to the socket just before the exit may still be on its way in.
        before = settled_count(emu, "hard-exit")
        if spooled:
            with loghose.Producer(**emu.producer_options("proj", "hard-exit"), spool_dir=str(spool)) as next_one:
                assert next_one.flush(30) == 0
        seen = messages(emu, "hard-exit")
    # Full batches were sent as they filled; nothing ran at the exit, so the open batches went
    # with the process.
    assert 0 < before < 10_000
    if spooled:
        # Every record, from the spool; a batch in flight at the exit may be sent again.
        assert set(seen) == {f"record {i}" for i in range(10_000)}
        twice = sum(seen.values()) - 10_000
        print(f"os._exit with a spool: {twice} records sent twice")
        assert twice <= before  # only batches sent before the exit, again
    else:
        assert sum(seen.values()) == before
