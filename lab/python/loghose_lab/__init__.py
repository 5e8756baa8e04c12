"""The seed benchmark scenarios, run from Python, with their figures as data.

``loghose_lab.run("s1", rates=[1000, 200_000], seconds=5)`` runs a scenario and returns its
rows: a list of dicts (one per rate, size or case), with a ``to_frame()`` that makes a pandas
DataFrame when pandas is installed. ``python -m loghose_lab --scenario s2 [--json]`` is the
same from the command line (``bash scripts/run.sh`` runs it with ``lab/python`` on the path).
The lab is not part of the ``loghose`` package: it drives the installed package (and the few
``bench_*`` functions of its native module, the lab's Rust harness) from a checkout.

The scenarios (``docs/scenarios.md``):

- ``s1`` server: the C producer's server benchmark (``server`` preset) at fixed rates, then
  unthrottled;
- ``s1r``: the same with access logs varied as real ones are (S1-R: the engine's pool of
  records, the same in every harness); both with ``api="sender"`` add through
  ``Producer.sender`` instead of ``send``;
- ``s2`` pi: the same workload with the ``pi`` preset at 10 … 20 000 logs/s, pinned to one core,
  memory reported as growth over the idle process, and (with valgrind) instructions per send;
- ``s4`` timers: many open batches (one per distinct ``source``) waiting for their linger;
- ``s5`` fleet: 100 000 devices at 10 000 and 20 000 logs/s, backlog and add-to-delivery
  latency; and the memory of many idle producers in one process;
- ``s6`` payload: one large value per record, sent one at a time, latency per size; and per
  codec the compression ratio and the time to compress 1 MB.

Every scenario checks what it measured: each log it added is counted at the emulator (0 lost,
0 duplicated), and a row says so in ``lost`` and ``duplicates``.

How it runs: ``run`` starts the scenario in a child Python process (so the CPU, memory and
threads measured are the producer's, not a notebook's) which starts the emulator in a process
of its own at nice 10 (it stands in for the remote service). The child reports progress and
rows as JSON lines; ``run`` shows progress in a notebook or on a terminal (not in a pipe or a
log unless ``progress=True``): through ``tqdm`` when it is installed (a widget in Jupyter),
otherwise as a text bar on stderr.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from typing import Any

import loghose
from loghose import _native

# The lab's children run this package too: its folder goes on their path.
_LAB_PATH = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _child_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (_LAB_PATH, env.get("PYTHONPATH")) if p)
    return env


SCENARIOS = ("s1", "s1r", "s2", "s4", "s5", "s6")

# S5's idle producers are measured this long after their last report: past the 5 s after
# which a producer's report thread ends.
IDLE_SECONDS = 6.0

# S4 counts "while waiting" from this long after the adds (or a quarter of a shorter window).
SETTLE_SECONDS = 5

# S1's records (docs/scenarios.md), built in the loop as the C benchmark builds its arguments.
ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789!@#$%^&*()_+"
TOPIC = "test_topic"
TAGS = {f"tag_{i}": f"val_{i}" for i in range(1, 6)}
LOG_B = {
    "LogHub": "Real-time log collection and consumption",
    "Search/Analytics": "Query and real-time analysis",
    "Visualized": "dashboard and report functions",
    "Interconnection": "Grafana and JDBC/SQL92",
}

# What each scenario runs when not told otherwise (the vendor's rates; 10 s per rate).
DEFAULTS: dict[str, dict[str, Any]] = {
    "s1": {"rates": [1000, 10_000, 100_000, 200_000], "seconds": 10, "unthrottled_seconds": 10,
           "preset": "server", "api": "send"},
    "s1r": {"rates": [1000, 10_000, 100_000, 200_000], "seconds": 10, "unthrottled_seconds": 10,
            "preset": "server", "api": "send"},
    "s2": {"rates": [10, 100, 1000, 10_000, 20_000], "seconds": 10, "preset": "pi", "core": 0,
           "instructions": None, "instruction_sends": 4000},
    "s4": {"open_batches": [100_000], "lingers_ms": [1000, 60_000], "seconds": 20},
    "s5": {"devices": 100_000, "rates": [10_000, 20_000], "seconds": 60, "key": "shard_key",
           "sample_every": 50, "tenants": 10_000},
    "s6": {"sizes": [1 << 10, 16 << 10, 256 << 10, 512 << 10, 1 << 20], "count": 50,
           "codecs": ["none", "lz4", "zstd", "deflate"], "codec_rounds": 20},
}


class Rows(list):  # type: ignore[type-arg]
    """A scenario's rows: a list of dicts, one per rate, size or case."""

    def to_frame(self) -> Any:
        """The rows as a pandas DataFrame (needs pandas)."""
        try:
            import pandas  # type: ignore[import-untyped,unused-ignore]
        except ImportError as e:
            raise ImportError("Rows.to_frame() needs pandas: pip install pandas") from e
        return pandas.DataFrame(list(self))


def run(scenario: str, *, progress: bool | None = None, **params: Any) -> Rows:
    """Runs ``scenario`` (``"s1"``, ``"s1r"``, ``"s2"``, ``"s4"``, ``"s5"`` or ``"s6"``) in a child process
    and returns its rows. ``params`` override the scenario's defaults (``DEFAULTS[scenario]``),
    e.g. ``rates=[1000, 20_000], seconds=5``. ``progress``: None shows it in a notebook or when
    stderr is a terminal, True always, False never. Raises ``RuntimeError`` (with the
    child's error output) when the scenario could not run; a scenario that ran but lost logs
    returns its rows, whose ``lost``/``duplicates`` say so."""
    params = _checked(scenario, params)
    bar = _Progress(progress)
    with tempfile.TemporaryFile("w+") as errors:
        child = subprocess.Popen([sys.executable, "-m", "loghose_lab", "--scenario", scenario, "--events",
                                  "--params", json.dumps(params)],
                                 stdout=subprocess.PIPE, stderr=errors, text=True, env=_child_env())
        assert child.stdout is not None
        rows = Rows()
        try:
            for line in child.stdout:
                event = json.loads(line)
                if "row" in event:
                    rows.append(event["row"])
                elif "progress" in event:
                    bar.update(**event["progress"])
        except BaseException:
            # Interrupted (Ctrl-C, a notebook's stop button): the scenario stops too; its
            # emulator ends when its input closes.
            child.kill()
            raise
        finally:
            bar.close()
            status = child.wait()
        # 0: every check held; 1: a check failed (the rows say which); else the scenario broke.
        if status not in (0, 1):
            errors.seek(0)
            raise RuntimeError(f"scenario {scenario} failed (exit status {status}):\n{errors.read()[-4000:]}")
    return rows


def _checked(scenario: str, params: dict[str, Any]) -> dict[str, Any]:
    if scenario not in DEFAULTS:
        raise ValueError(f"unknown scenario {scenario!r}: one of {', '.join(SCENARIOS)}")
    unknown = sorted(set(params) - set(DEFAULTS[scenario]))
    if unknown:
        raise TypeError(f"scenario {scenario} has no parameter {unknown[0]!r}: "
                        f"it takes {', '.join(DEFAULTS[scenario])}")
    return {**DEFAULTS[scenario], **params}


class _Progress:
    """tqdm when installed (``tqdm.auto``: a widget in Jupyter), else a text bar on a terminal."""

    def __init__(self, wanted: bool | None) -> None:
        self.bars: dict[str, Any] = {}
        self.tqdm: Any = None
        try:
            from tqdm.auto import tqdm  # type: ignore[import-untyped,unused-ignore]

            self.tqdm = tqdm
        except ImportError:
            pass
        # By default only where someone watches: a terminal, or a notebook (tqdm's widget).
        self.enabled = wanted if wanted is not None else (sys.stderr.isatty() or "ipykernel" in sys.modules)

    def update(self, label: str, done: int, total: int) -> None:
        if not self.enabled:
            return
        if self.tqdm is not None:
            bar = self.bars.get(label)
            if bar is None:
                bar = self.bars[label] = self.tqdm(total=total, desc=label, leave=True)
            bar.update(done - bar.n)
            if done >= total:
                bar.close()
            return
        width = 30
        filled = width * done // max(total, 1)
        sys.stderr.write(f"\r{label:<28} [{'#' * filled}{'.' * (width - filled)}] {done}/{total}")
        if done >= total:
            sys.stderr.write("\n")
        sys.stderr.flush()

    def close(self) -> None:
        """Ends the progress bars."""
        for bar in self.bars.values():
            bar.close()


# ---------------------------------------------------------------------------------------------
# The child side: the scenarios themselves.

Emit = Callable[[dict[str, Any]], None]


def add_s1_pair(send: Any, index: int) -> None:
    """One S1 iteration, as the C benchmark's loop: both records built here from literals, the
    iteration number formatted as text."""
    send({"content_key_1": "1abcdefghijklmnopqrstuvwxyz0123456789!@#$%^&*()_+"
                           "abcdefghijklmnopqrstuvwxyz0123456789!@#$%^&*()_+"
                           "abcdefghijklmnopqrstuvwxyz0123456789!@#$%^&*()_+",
          "content_key_2": "2abcdefghijklmnopqrstuvwxyz0123456789!@#$%^&*()_+",
          "content_key_3": "3abcdefghijklmnopqrstuvwxyz0123456789!@#$%^&*()_+",
          "content_key_4": "4abcdefghijklmnopqrstuvwxyz0123456789!@#$%^&*()_+",
          "content_key_5": "5abcdefghijklmnopqrstuvwxyz0123456789!@#$%^&*()_+",
          "content_key_6": "6abcdefghijklmnopqrstuvwxyz0123456789!@#$%^&*()_+",
          "content_key_7": "7abcdefghijklmnopqrstuvwxyz0123456789!@#$%^&*()_+",
          "content_key_8": "8abcdefghijklmnopqrstuvwxyz0123456789!@#$%^&*()_+",
          "content_key_9": "9abcdefghijklmnopqrstuvwxyz0123456789!@#$%^&*()_+",
          "index": str(index)})
    send({"LogHub": "Real-time log collection and consumption",
          "Search/Analytics": "Query and real-time analysis",
          "Visualized": "dashboard and report functions",
          "Interconnection": "Grafana and JDBC/SQL92"})


class _S1R:
    """S1-R's records (the engine's pool, the same in every harness): log ``n`` is record
    ``n % len(pool)`` with the first 12 hex digits of its ``request_id`` set to ``n``."""

    pool: list[dict[str, str]] = []
    tails: list[str] = []

    @classmethod
    def load(cls) -> None:
        if not cls.pool:
            cls.pool = [dict(field.split("=", 1) for field in line.split("\t"))
                        for line in _native.bench_s1r_pool().splitlines()]
            cls.tails = [record["request_id"][12:] for record in cls.pool]

    @classmethod
    def raw_bytes_per_log(cls) -> float:
        cls.load()
        return sum(len(k) + len(v) for record in cls.pool for k, v in record.items()) / len(cls.pool)


def add_s1r_pair(send: Any, index: int) -> None:
    """Two S1-R logs (numbers ``2 * index`` and the next), each its pool record copied with its
    number formatted into the request id, as S1 formats its index."""
    pool, tails = _S1R.pool, _S1R.tails
    for n in (2 * index, 2 * index + 1):
        at = n % 4096
        record = pool[at].copy()
        record["request_id"] = f"{n:012x}{tails[at]}"
        send(record)


def _pair_adder(producer: loghose.Producer, scenario: str, api: str) -> Callable[[int], None]:
    """A function adding iteration ``index``'s two logs of ``scenario`` through ``send`` or,
    with ``api`` "sender", through senders of the records' keys (``Producer.sender``)."""
    send = producer.send
    if api != "sender":
        add = add_s1r_pair if scenario == "s1r" else add_s1_pair
        return lambda index: add(send, index)
    if scenario == "s1r":
        keys = list(_S1R.pool[0])
        if len(keys) != 10 or keys[8] != "request_id":
            raise RuntimeError(f"unexpected S1-R keys: {keys}")
        rows = [tuple(record.values()) for record in _S1R.pool]
        tails = _S1R.tails
        log = producer.sender(keys)

        def add_real(index: int) -> None:
            for n in (2 * index, 2 * index + 1):
                at = n % 4096
                v = rows[at]
                log(v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], f"{n:012x}{tails[at]}", v[9])
        return add_real
    log_a = producer.sender([f"content_key_{d}" for d in range(1, 10)] + ["index"])
    log_b = producer.sender(["LogHub", "Search/Analytics", "Visualized", "Interconnection"])

    def add_s1(index: int) -> None:
        log_a("1abcdefghijklmnopqrstuvwxyz0123456789!@#$%^&*()_+abcdefghijklmnopqrstuvwxyz0123456789!@#$%^&*()_+"
              "abcdefghijklmnopqrstuvwxyz0123456789!@#$%^&*()_+",
              "2abcdefghijklmnopqrstuvwxyz0123456789!@#$%^&*()_+", "3abcdefghijklmnopqrstuvwxyz0123456789!@#$%^&*()_+",
              "4abcdefghijklmnopqrstuvwxyz0123456789!@#$%^&*()_+", "5abcdefghijklmnopqrstuvwxyz0123456789!@#$%^&*()_+",
              "6abcdefghijklmnopqrstuvwxyz0123456789!@#$%^&*()_+", "7abcdefghijklmnopqrstuvwxyz0123456789!@#$%^&*()_+",
              "8abcdefghijklmnopqrstuvwxyz0123456789!@#$%^&*()_+", "9abcdefghijklmnopqrstuvwxyz0123456789!@#$%^&*()_+",
              str(index))
        log_b("Real-time log collection and consumption", "Query and real-time analysis",
              "dashboard and report functions", "Grafana and JDBC/SQL92")
    return add_s1


def _sample() -> dict[str, float]:
    """The process's CPU time and memory now (the engine's harness reads them, as for every
    front): ``cpu_seconds``, ``rss_mb``, ``anon_mb``, ``peak_rss_mb``, ``threads``."""
    sample: dict[str, float] = json.loads(_native.bench_process_sample())
    return sample


def rss_mb() -> float:
    """This process's resident memory, MB (Linux; 0 elsewhere)."""
    return _sample()["rss_mb"]


def _percentile(values: list[float], q: float) -> float | None:
    return _native.bench_percentile(values, q)


def _slope(values: list[int]) -> float:
    """The least-squares slope of ``values`` against their index."""
    return _native.bench_slope([float(v) for v in values])


class ChildEmulator:
    """The emulator in a child process at nice 10 (its work is not the producer's)."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "loghose_lab", "emulator"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, env=_child_env())
        assert self.proc.stdout is not None
        info = json.loads(self.proc.stdout.readline())
        self.endpoint = info["endpoint"]
        self.options = {"endpoint": info["endpoint"], "access_key_id": info["access_key_id"],
                        "access_key_secret": info["access_key_secret"]}

    def received(self, project: str, logstore: str) -> int:
        """How many logs the emulator holds for ``project``/``logstore``."""
        return _Meter(self, logstore, project).result(0)["received"]

    def close(self) -> None:
        """Stops the emulator child process."""
        if self.proc.stdin:
            self.proc.stdin.close()
        self.proc.wait(timeout=30)


class _Meter:
    """One run's measure, by the engine's harness: the exactly-once check of a logstore (logs
    read back against logs sent, batches the emulator saw twice while it was open) and the
    process's CPU time and memory between ``begin`` and ``stop``; the run's row."""

    def __init__(self, emu: ChildEmulator, logstore: str, project: str = "bench") -> None:
        self._meter = _native.BenchMeter(emu.endpoint, project, logstore)

    def begin(self) -> None:
        self._meter.begin()

    def stop(self) -> None:
        self._meter.stop()

    def result(self, sent: int) -> dict[str, int]:
        counted: dict[str, int] = json.loads(self._meter.counted(sent))
        return counted

    def rate_row(self, **run: Any) -> dict[str, Any]:
        return dict(json.loads(self._meter.rate_row(json.dumps(run))))

    def unthrottled_row(self, **run: Any) -> dict[str, Any]:
        return dict(json.loads(self._meter.unthrottled_row(json.dumps(run))))


def _seconds_loop(seconds: int, label: str, emit: Emit, body: Callable[[int], None]) -> list[float]:
    """Calls ``body(second)`` at the start of each second and sleeps out the rest; returns how
    long each call took."""
    took = []
    t0 = time.perf_counter()
    for second in range(seconds):
        start = time.perf_counter()
        body(second)
        took.append(time.perf_counter() - start)
        emit({"progress": {"label": label, "done": second + 1, "total": seconds}})
        rest = t0 + second + 1 - time.perf_counter()
        if rest > 0:
            time.sleep(rest)
    return took


def _rate_row(emu: ChildEmulator, emit: Emit, scenario: str, preset: str, rate: int, seconds: int,
              idle: dict[str, float], api: str = "send") -> dict[str, Any]:
    logstore = f"{scenario}-rate-{rate}"
    meter = _Meter(emu, logstore)
    producer = loghose.Producer.from_preset(preset, **emu.options, project="bench", logstore=logstore,
                                            topic=TOPIC, tags=TAGS)
    refused = 0
    pairs = max(rate // 2, 1)
    next_index = 0
    add_pair = _pair_adder(producer, scenario, api)

    def second_of_sends(_second: int) -> None:
        nonlocal refused, next_index
        for _ in range(pairs):
            try:
                add_pair(next_index)
            except loghose.BufferFullError:
                refused += 1
            next_index += 1

    meter.begin()
    took = _seconds_loop(seconds, f"{scenario} {rate} logs/s", emit, second_of_sends)
    pending = producer.flush(120)
    meter.stop()
    producer.close(10)
    raw = _S1R.raw_bytes_per_log() if scenario == "s1r" else None
    return meter.rate_row(scenario=scenario, preset=preset, pairs_per_second=pairs, took_seconds=took,
                          refused=refused, pending=pending, idle=idle, raw_bytes_per_log=raw)


def s1(emu: ChildEmulator, emit: Emit, p: dict[str, Any], scenario: str = "s1") -> None:
    """Scenario S1 (and S1-R with ``scenario='s1r'``): the C producer's server benchmark, across rates, then
    unthrottled.
    """
    idle = _sample()
    for rate in p["rates"]:
        emit({"row": _rate_row(emu, emit, scenario, p["preset"], rate, p["seconds"], idle, p["api"])})
    if p["unthrottled_seconds"]:
        emit({"row": _unthrottled(emu, emit, p["preset"], p["unthrottled_seconds"], scenario, p["api"])})


def s1r(emu: ChildEmulator, emit: Emit, p: dict[str, Any]) -> None:
    """S1's method with access logs varied as real ones are (S1-R)."""
    _S1R.load()
    s1(emu, emit, p, "s1r")


def _unthrottled(emu: ChildEmulator, emit: Emit, preset: str, seconds: int, scenario: str = "s1",
                 api: str = "send") -> dict[str, Any]:
    meter = _Meter(emu, f"{scenario}-unthrottled")
    producer = loghose.Producer.from_preset(preset, **emu.options, project="bench",
                                            logstore=f"{scenario}-unthrottled", topic=TOPIC, tags=TAGS,
                                            max_block_ms=60_000)
    add_pair = _pair_adder(producer, scenario, api)
    n = 0
    meter.begin()
    t0 = time.perf_counter()
    for second in range(seconds):
        stop = t0 + second + 1
        while time.perf_counter() < stop:
            for _ in range(500):
                add_pair(n // 2)
                n += 2
        emit({"progress": {"label": f"{scenario} unthrottled", "done": second + 1, "total": seconds}})
    add_secs = time.perf_counter() - t0
    pending = producer.flush(300)
    meter.stop()
    scrape_ms = _scrape_ms(producer)
    producer.close(10)
    return meter.unthrottled_row(scenario=scenario, preset=preset, sent=n, add_seconds=add_secs, pending=pending,
                                 extra=[["scrape_ms", scrape_ms]])


def _scrape_ms(producer: loghose.Producer) -> float:
    """What a scrape of the producer's metrics costs from Python (``metrics_text``, what
    ``loghose.prometheus.make_wsgi_app`` answers): median milliseconds of 21."""
    spent = []
    for _ in range(21):
        start = time.perf_counter()
        producer.metrics_text()
        spent.append((time.perf_counter() - start) * 1000)
    return round(statistics.median(spent), 3)


def s2(emu: ChildEmulator, emit: Emit, p: dict[str, Any]) -> None:
    """Scenario S2: S1 on a Raspberry Pi's budget (the ``pi`` preset, one core)."""
    # The Pi has four slow cores; one is what a logging library may fairly take. Pinning the
    # producer's process (and its threads) to one core makes CPU % comparable with the vendor's.
    pinned = hasattr(os, "sched_setaffinity")
    if pinned:
        os.sched_setaffinity(0, {p["core"]})
    instructions = None
    if p["instructions"] or (p["instructions"] is None and shutil.which("valgrind")):
        emit({"progress": {"label": "s2 instructions (callgrind)", "done": 0, "total": 1}})
        instructions = instructions_per_send(p["preset"], p["instruction_sends"])
        emit({"progress": {"label": "s2 instructions (callgrind)", "done": 1, "total": 1}})
    idle = _sample()
    for rate in p["rates"]:
        row = _rate_row(emu, emit, "s2", p["preset"], rate, p["seconds"], idle)
        row.update(pinned_core=p["core"] if pinned else None, instructions_per_send=instructions)
        emit({"row": row})


def instructions_per_send(preset: str, sends: int) -> float | None:
    """Instructions per S1 ``send`` of the whole Python process (CPython building the record,
    the native call, the producer's threads compressing and sending to the emulator), counted
    by callgrind: a run with ``sends`` sends less a run with none, over ``sends``. The emulator
    runs in its own process, outside the count. None without valgrind."""
    if not shutil.which("valgrind"):
        return None
    emu = ChildEmulator()

    def count(n: int) -> int:
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "callgrind.out")
            subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable, "-m",
                            "loghose_lab", "count", preset, str(n), json.dumps(emu.options)],
                           env=_child_env(), check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           timeout=600)
            with open(out) as f:
                for line in f:
                    if line.startswith("summary:"):
                        return int(line.split()[1])
        raise RuntimeError("callgrind wrote no summary")

    try:
        return (count(sends) - count(0)) / sends
    finally:
        emu.close()


def count_sends(preset: str, sends: int, emulator_options: dict[str, str]) -> int:
    """The program ``instructions_per_send`` counts: ``sends`` S1 sends, then close (waiting
    for delivery). Exit status 1 when any was not delivered."""
    producer = loghose.Producer.from_preset(preset, **emulator_options, project="bench", logstore="count",
                                            topic=TOPIC, tags=TAGS, max_block_ms=60_000)
    for i in range(sends // 2):
        add_s1_pair(producer.send, i)
    return 1 if producer.close(120) else 0


def s4(emu: ChildEmulator, emit: Emit, p: dict[str, Any]) -> None:
    """Scenario S4: many open batches waiting for their linger."""
    for n in p["open_batches"]:
        for linger in p["lingers_ms"]:
            emit({"row": _timers(emu, emit, n, linger, p["seconds"])})


def _timers(emu: ChildEmulator, emit: Emit, n: int, linger_ms: int, seconds: int) -> dict[str, Any]:
    logstore = f"s4-{n}-{linger_ms}"
    check = _Meter(emu, logstore)
    sources = [f"device-{i:07d}" for i in range(n)]
    record = {"event": "tick", "status": "ok"}
    rss0 = rss_mb()
    # Room for every open batch at once: each holds one small log, but the budget charges a
    # batch's reserved size, not its content.
    producer = loghose.Producer(**emu.options, project="bench", logstore=logstore, linger_ms=linger_ms,
                                max_block_ms=60_000, buffer_max_bytes=max(64 << 20, n * 8192))
    send = producer.send
    adds = 0
    add_secs: list[float] = []

    def fill() -> None:
        nonlocal adds
        t = time.perf_counter()
        for source in sources:
            send(record, source=source)
        add_secs.append(time.perf_counter() - t)
        adds += n

    fill()
    rss_open = rss_mb()
    emit({"progress": {"label": f"s4 {n} batches, linger {linger_ms} ms", "done": 0, "total": seconds}})
    # While waiting: refill every destination once its linger has passed (each batch flushed
    # and a new one opens), so there are always about n open batches.
    cpu0, t0 = time.process_time(), time.perf_counter()
    # "While waiting" starts once the adds' own aftermath (a collection of what they left)
    # has passed: SETTLE_SECONDS in, or a quarter of a short window.
    settle = min(SETTLE_SECONDS, seconds // 4)
    cpu_settled, t_settled = cpu0, t0
    next_fill = t0 + linger_ms / 1000
    for second in range(seconds):
        if second == settle:
            cpu_settled, t_settled = time.process_time(), time.perf_counter()
        while True:
            now = time.perf_counter()
            end = t0 + second + 1
            if next_fill <= now and next_fill < t0 + seconds:
                fill()
                next_fill += linger_ms / 1000
                continue
            if now >= end:
                break
            time.sleep(min(end, next_fill) - now)
        emit({"progress": {"label": f"s4 {n} batches, linger {linger_ms} ms", "done": second + 1,
                           "total": seconds}})
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    waiting = (time.process_time() - cpu_settled) / max(time.perf_counter() - t_settled, 1e-3)
    refills = len(add_secs) - 1
    pending = producer.flush(300)
    producer.close(10)
    counted = check.result(adds)
    return {"scenario": "s4", "open_batches": n, "linger_ms": linger_ms, "seconds": seconds,
            "us_per_add": add_secs[0] * 1e6 / n, "bytes_per_open_batch": (rss_open - rss0) * (1 << 20) / n,
            "cpu_pct_waiting": waiting * 100, "cpu_pct_window": cpu / wall * 100, "refills": refills,
            "adds": adds, **counted, "pending": pending}


def s5(emu: ChildEmulator, emit: Emit, p: dict[str, Any]) -> None:
    """Scenario S5: a gateway sending for many devices, each with its own shard key."""
    for rate in p["rates"]:
        emit({"row": _fleet(emu, emit, p["devices"], rate, p["seconds"], p["key"], p["sample_every"])})
    if p["tenants"]:
        emit({"row": _tenants(emu, emit, p["tenants"])})


def _fleet(emu: ChildEmulator, emit: Emit, devices: int, rate: int, seconds: int, key: str,
           sample_every: int) -> dict[str, Any]:
    if key not in ("shard_key", "source"):
        raise ValueError(f"s5 key must be shard_key or source, not {key!r}")
    logstore = f"s5-{rate}-{key.replace('_', '-')}"
    check = _Meter(emu, logstore)
    producer = loghose.Producer.from_preset("server", **emu.options, project="bench", logstore=logstore,
                                            adjust_shard_hash=True)
    # A device's messages come in their order; devices take turns in a shuffled order, as a
    # gateway sees them.
    order = list(range(devices))
    random.Random(5).shuffle(order)
    names = [f"{i:032x}" if key == "shard_key" else f"device-{i:06d}" for i in order]
    latencies: list[float] = []
    latency_lock = threading.Lock()

    def delivered_at(added: float) -> Callable[[Any], None]:
        def done(future: Any) -> None:
            if future.exception() is None:
                with latency_lock:
                    latencies.append((time.perf_counter() - added) * 1000)
        return done

    sent = 0
    backlog: list[int] = []
    send, send_future = producer.send, producer.send_future

    def second_of_messages(_second: int) -> None:
        nonlocal sent
        for _ in range(rate):
            device = names[sent % devices]
            message = {"device": device, "temperature": str(20 + sent % 15), "seq": str(sent)}
            route: dict[str, Any] = {key: device}
            if sent % sample_every == 0:
                send_future(message, **route).add_done_callback(delivered_at(time.perf_counter()))
            else:
                send(message, **route)
            sent += 1
        stats = producer.stats()
        backlog.append(stats["accepted"] - stats["delivered"])

    cpu0, t0 = time.process_time(), time.perf_counter()
    took = _seconds_loop(seconds, f"s5 {rate} logs/s", emit, second_of_messages)
    adding_wall = time.perf_counter() - t0
    delivered_in_time = producer.stats()["delivered"]
    pending = producer.flush(300)
    cpu = time.process_time() - cpu0
    rss = rss_mb()
    producer.close(10)
    counted = check.result(sent)
    return {"scenario": "s5", "devices": devices, "key": key, "rate": rate, "seconds": seconds,
            "delivered_per_s": delivered_in_time / adding_wall, "cpu_pct": cpu / adding_wall * 100,
            "us_per_send": statistics.median(took) * 1e6 / rate,
            "backlog_max": max(backlog, default=0), "backlog_end": backlog[-1] if backlog else 0,
            # Growth: the least-squares slope of the backlog, records per second (a backlog that
            # keeps up saws with the linger around a flat line: near 0 against the rate).
            "backlog_trend_per_s": _slope(backlog), "backlog": backlog,
            "latency_p50_ms": _percentile(latencies, 0.5), "latency_p99_ms": _percentile(latencies, 0.99),
            "latency_samples": len(latencies), "rss_mb": rss, **counted, "pending": pending}


def _tenants(emu: ChildEmulator, emit: Emit, tenants: int) -> dict[str, Any]:
    """Many producers in one process, one per tenant, idle after one record each: memory and
    threads per producer (they share the engine's I/O threads; a report thread runs only
    while there are reports)."""
    check = _Meter(emu, "s5-tenants")
    start = _sample()
    rss0, threads0 = start["rss_mb"], start["threads"]
    producers = []
    for i in range(tenants):
        producers.append(loghose.Producer(**emu.options, project="bench", logstore="s5-tenants",
                                          topic=f"tenant-{i}", linger_ms=200))
        if (i + 1) % max(tenants // 20, 1) == 0:
            emit({"progress": {"label": f"s5 {tenants} producers", "done": i + 1, "total": tenants}})
    rss_made = rss_mb()
    for i, producer in enumerate(producers):
        producer.send({"tenant": str(i)})
    pending = sum(producer.flush(60) for producer in producers)
    # Idle: past the time after which a producer's report thread ends (5 s without reports).
    time.sleep(IDLE_SECONDS)
    idle = _sample()
    rss_idle, threads = idle["rss_mb"], idle["threads"]
    for producer in producers:
        producer.close(10)
    counted = check.result(tenants)
    return {"scenario": "s5", "tenants": tenants, "kb_per_idle_producer": (rss_idle - rss0) * 1024 / tenants,
            "kb_per_new_producer": (rss_made - rss0) * 1024 / tenants,
            "threads_per_producer": (threads - threads0) / tenants, **counted, "pending": pending}


def payload(size: int) -> str:
    """S6's payload: ``size`` bytes of seeded access-log text (the engine's, so every harness
    sends the same text), which compresses as real logs do (about 4:1 with lz4), not as S1's
    100:1."""
    return loghose._native.bench_payload(size)


def s6(emu: ChildEmulator, emit: Emit, p: dict[str, Any]) -> None:
    """Scenario S6: add-to-delivery latency per record size."""
    logstore = "s6-payload"
    check = _Meter(emu, logstore)
    producer = loghose.Producer(**emu.options, project="bench", logstore=logstore, linger_ms=0,
                                buffer_max_bytes=64 << 20, max_block_ms=60_000)
    sent = 0
    for size in p["sizes"]:
        value = payload(size)
        latencies = []
        for i in range(p["count"]):
            t = time.perf_counter()
            producer.send_future({"size": str(size), "i": str(i), "payload": value}).result(timeout=60)
            latencies.append((time.perf_counter() - t) * 1000)
            sent += 1
        emit({"progress": {"label": "s6 sizes", "done": p["sizes"].index(size) + 1, "total": len(p["sizes"])}})
        emit({"row": {"scenario": "s6", "size": size, "count": p["count"],
                      "latency_p50_ms": _percentile(latencies, 0.5),
                      "latency_p99_ms": _percentile(latencies, 0.99)}})
    producer.close(10)
    counted = check.result(sent)
    emit({"row": {"scenario": "s6", "check": "payload", **counted}})
    data = payload(1 << 20).encode()
    for codec in p["codecs"]:
        times = []
        size = 0
        for _ in range(p["codec_rounds"]):
            t = time.perf_counter()
            size = len(loghose._native.compress(codec, data))
            times.append(time.perf_counter() - t)
        emit({"row": {"scenario": "s6", "codec": codec, "ratio": len(data) / size,
                      "us_per_mb": statistics.median(times) * 1e6}})


def run_here(scenario: str, params: dict[str, Any], emit: Emit) -> None:
    """Runs a scenario in this process, passing each event to ``emit`` as it happens."""
    params = _checked(scenario, params)
    emu = ChildEmulator()
    try:
        {"s1": s1, "s1r": s1r, "s2": s2, "s4": s4, "s5": s5, "s6": s6}[scenario](emu, emit, params)
    finally:
        emu.close()


def failed(row: dict[str, Any]) -> bool:
    """Whether a row's correctness check failed: a log lost, duplicated, refused or left pending."""
    return any(row.get(k) for k in ("lost", "duplicates", "refused", "pending"))
