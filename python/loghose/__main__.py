"""``python -m loghose`` (and the ``loghose`` command the package installs): ``send``, ``pipe``
and ``emulator`` run the engine's command (``loghose send KEY=VALUE…``, ``loghose pipe``,
``loghose emulator --port N``; see the README's "The command line"); ``bench`` runs S1 from
Python.

``python -m loghose bench [--rates 1000,200000] [--seconds 10] [--preset server]`` runs scenario
S1 (the C producer's server benchmark) from Python against the emulator, in a child process so
the CPU and memory figures are the producer's, and prints the S1 table. ``--compare`` measures
dict vs list-of-pairs vs ``send_many``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import urllib.request
from typing import Any

import loghose

ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789!@#$%^&*()_+"
TOPIC = "test_topic"
TAGS = {f"tag_{i}": f"val_{i}" for i in range(1, 6)}
LOG_B = {
    "LogHub": "Real-time log collection and consumption",
    "Search/Analytics": "Query and real-time analysis",
    "Visualized": "dashboard and report functions",
    "Interconnection": "Grafana and JDBC/SQL92",
}
RAW_A = sum(len(k) + len(v) for k, v in [("content_key_1", "1" + ALPHABET * 3)]
            + [(f"content_key_{d}", f"{d}{ALPHABET}") for d in range(2, 10)]) + len("index") + 6
RAW_B = sum(len(k) + len(v) for k, v in LOG_B.items())


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


def cpu_seconds() -> float:
    return time.process_time()


def rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


class ChildEmulator:
    """The emulator in a child process (so its work is not counted as the producer's)."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "loghose", "bench-emulator"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        info = json.loads(self.proc.stdout.readline())
        self.endpoint = info["endpoint"]
        self.options = {"endpoint": info["endpoint"], "access_key_id": info["access_key_id"],
                        "access_key_secret": info["access_key_secret"]}

    def totals(self, project: str, logstore: str) -> dict[str, int]:
        url = f"{self.endpoint}/_emulator/totals?project={project}&logstore={logstore}"
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with opener.open(url, timeout=30) as resp:
            totals: dict[str, int] = json.loads(resp.read())
            return totals

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        self.proc.wait(timeout=30)


def progress(label: str, done: int, total: int) -> None:
    width = 30
    filled = width * done // max(total, 1)
    sys.stderr.write(f"\r{label:<24} [{'#' * filled}{'.' * (width - filled)}] {done}/{total} s")
    sys.stderr.flush()
    if done == total:
        sys.stderr.write("\n")


def run_rate(emu: ChildEmulator, preset: str, rate: int, seconds: int, show_progress: bool) -> dict[str, Any]:
    logstore = f"rate-{rate}"
    producer = loghose.Producer.from_preset(preset, **emu.options, project="bench-s1", logstore=logstore,
                                            topic=TOPIC, tags=TAGS)
    send = producer.send
    refused = 0
    burst_secs: list[float] = []
    index = 0
    cpu0, t0 = cpu_seconds(), time.perf_counter()
    for second in range(seconds):
        start = time.perf_counter()
        for _ in range(rate // 2):
            try:
                # The record is built in the loop, as an application would.
                add_s1_pair(send, index)
            except loghose.BufferFullError:
                refused += 1
            index += 1
        burst_secs.append(time.perf_counter() - start)
        if show_progress:
            progress(f"S1 {rate} logs/s", second + 1, seconds)
        rest = t0 + second + 1 - time.perf_counter()
        if rest > 0:
            time.sleep(rest)
    left = producer.flush(120)
    wall = time.perf_counter() - t0
    cpu = cpu_seconds() - cpu0
    rss = rss_mb()
    producer.close(10)
    sent = (rate // 2) * 2 * seconds
    received = emu.totals("bench-s1", logstore)["logs"]
    # The median second: one second disturbed by a collection or the machine's neighbours does
    # not move it.
    per_second = max((rate // 2) * 2, 1)
    return {"rate": rate, "us_per_send": statistics.median(burst_secs) * 1e6 / per_second,
            "raw_kb_s": (RAW_A + RAW_B) * (rate // 2) / 1024, "cpu_pct": cpu / wall * 100, "rss_mb": rss,
            # Every planned log not read back is lost, whether refused, left pending or dropped.
            "received": received, "lost": sent - received, "refused": refused, "pending": left}


def run_unthrottled(emu: ChildEmulator, preset: str, seconds: int) -> dict[str, Any]:
    producer = loghose.Producer.from_preset(preset, **emu.options, project="bench-s1", logstore="unthrottled",
                                            topic=TOPIC, tags=TAGS, max_block_ms=60_000)
    send = producer.send
    n = 0
    cpu0, t0 = cpu_seconds(), time.perf_counter()
    stop = t0 + seconds
    while time.perf_counter() < stop:
        for _ in range(500):
            add_s1_pair(send, n // 2)
            n += 2
    add_secs = time.perf_counter() - t0
    left = producer.flush(300)
    wall = time.perf_counter() - t0
    cpu = cpu_seconds() - cpu0
    producer.close(10)
    received = emu.totals("bench-s1", "unthrottled")["logs"]
    return {"added": n, "us_per_send": add_secs * 1e6 / max(n, 1), "delivered_per_s": received / wall,
            "per_cpu_second": received / max(cpu, 1e-3), "received": received,
            "lost": n - received, "pending": left}


COMPARE_ROUNDS = 5


def compare(emu: ChildEmulator, count: int) -> dict[str, Any]:
    """µs per record for a dict, a list of pairs, and send_many (records built in the loop): one
    producer, a warm-up round, then COMPARE_ROUNDS rounds with the styles alternating; the
    median round of each style, and how many records of all rounds were received and lost."""

    def dicts(send: Any, n: int) -> None:
        for i in range(n):
            send({"level": "INFO", "logger": "app.http", "msg": "request served", "status": "200",
                  "path": "/api/items", "index": str(i)})

    def pairs(send: Any, n: int) -> None:
        for i in range(n):
            send([("level", "INFO"), ("logger", "app.http"), ("msg", "request served"), ("status", "200"),
                  ("path", "/api/items"), ("index", str(i))])

    def many(send_many: Any, n: int) -> None:
        for start in range(0, n, 1000):
            send_many([{"level": "INFO", "logger": "app.http", "msg": "request served", "status": "200",
                        "path": "/api/items", "index": str(i)} for i in range(start, min(start + 1000, n))])

    producer = loghose.Producer.from_preset("server", **emu.options, project="bench-s1", logstore="compare",
                                            topic=TOPIC, tags=TAGS, max_block_ms=60_000)
    styles = {"dict": (dicts, producer.send), "pairs": (pairs, producer.send),
              "send_many": (many, producer.send_many)}
    rounds: dict[str, list[float]] = {style: [] for style in styles}
    for round_number in range(COMPARE_ROUNDS + 1):
        for style, (loop, entry) in styles.items():
            t = time.perf_counter()
            loop(entry, count)
            if round_number:
                rounds[style].append((time.perf_counter() - t) * 1e6 / count)
    producer.flush(120)
    producer.close(10)
    sent = (COMPARE_ROUNDS + 1) * len(styles) * count
    received = emu.totals("bench-s1", "compare")["logs"]
    return {"us": {style: statistics.median(us) for style, us in rounds.items()},
            "received": received, "lost": sent - received}


def bench(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m loghose bench", description=__doc__)
    parser.add_argument("--rates", default="1000,10000,100000,200000")
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--unthrottled-seconds", type=int, default=10)
    parser.add_argument("--preset", default="server", choices=["server", "pi"])
    parser.add_argument("--compare", type=int, default=0, metavar="N", help="also compare send styles over N records")
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args(argv)
    rates = [int(r) for r in args.rates.split(",") if r]
    emu = ChildEmulator()
    failed = False
    try:
        rows = [run_rate(emu, args.preset, r, args.seconds, not args.no_progress) for r in rates]
        print(f"S1 from Python, `{args.preset}` preset, {args.seconds} s per rate, emulator in a child process")
        print()
        print("| logs/s | median µs per send | raw KB/s | CPU % | RSS MB | received | lost | of which refused |")
        print("|---:|---:|---:|---:|---:|---:|---:|---:|")
        for row in rows:
            print(f"| {row['rate']} | {row['us_per_send']:.3f} | {row['raw_kb_s']:.0f} | {row['cpu_pct']:.1f} "
                  f"| {row['rss_mb']:.1f} | {row['received']} | {row['lost']} | {row['refused']} |")
            failed |= row["lost"] != 0 or row["refused"] != 0 or row["pending"] != 0
        if args.unthrottled_seconds:
            u = run_unthrottled(emu, args.preset, args.unthrottled_seconds)
            print()
            print("| unthrottled: logs added | µs per send | delivered logs/s | logs per CPU-second | lost |")
            print("|---:|---:|---:|---:|---:|")
            print(f"| {u['added']} | {u['us_per_send']:.3f} | {u['delivered_per_s']:.0f} | "
                  f"{u['per_cpu_second']:.0f} | {u['lost']} |")
            failed |= u["lost"] != 0 or u["pending"] != 0
        if args.compare:
            c = compare(emu, args.compare)
            print()
            print(f"| send style (6 fields, built in the loop; median of {COMPARE_ROUNDS} rounds) | µs per record |")
            print("|---|---:|")
            for style, us in c["us"].items():
                print(f"| {style} | {us:.3f} |")
            print(f"\n{c['received']} records received, {c['lost']} lost")
            failed |= c["lost"] != 0
    finally:
        emu.close()
    if failed:
        print("S1 FAILED: logs were lost", file=sys.stderr)
        return 1
    return 0


def serve_emulator() -> int:
    # The emulator stands in for the remote service, which takes none of the producer's CPU:
    # at nice 10 it runs on what the benchmarked process leaves instead of taking half the cores.
    os.nice(10)
    with loghose.Emulator(retention_bytes=64 << 20) as emu:
        print(json.dumps({"endpoint": emu.endpoint, "access_key_id": emu.access_key_id,
                          "access_key_secret": emu.access_key_secret}), flush=True)
        sys.stdin.read()
    return 0


ENGINE_COMMANDS = ("send", "pipe", "emulator", "help", "--help", "-h", "--version", "-V")
USAGE = """usage: loghose send [options] KEY=VALUE...   one record, waited for
       loghose pipe [options]                  a record per line of stdin (or --follow FILE)
       loghose emulator [--port N]             the local emulator, until interrupted
       loghose bench [options]                 scenario S1 from Python
(loghose COMMAND --help for the options)"""


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["bench"]:
        return bench(argv[1:])
    if argv[:1] == ["bench-emulator"]:
        return serve_emulator()
    if argv[:1] and argv[0] in ENGINE_COMMANDS:
        from loghose import _native

        try:
            return _native.cli_main(["loghose", *argv])
        except KeyboardInterrupt:
            # SIGINT already ended the command (what it held delivered); Python saw it too.
            return 130
    print(USAGE, file=sys.stderr)
    return 2


def console() -> None:
    """The ``loghose`` console script."""
    sys.exit(main())


if __name__ == "__main__":
    sys.exit(main())
