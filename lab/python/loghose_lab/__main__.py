"""``python -m loghose_lab [--scenario s1] [--rates 1000,200000] [--seconds 10] [--json]`` runs a
seed scenario (s1, s1r, s2, s4, s5, s6) from Python against the emulator and prints its tables,
or its rows as JSON. ``--compare N`` (s1) also measures dict vs list-of-pairs vs ``send_many``.

``python -m loghose_lab emulator`` and ``python -m loghose_lab count PRESET N OPTIONS`` are the
harness's own children (the emulator process; the sends counted under callgrind).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import traceback
from typing import Any

import loghose
from loghose import _native

import loghose_lab as bench_module
from loghose_lab import TAGS, TOPIC, ChildEmulator

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

    meter = bench_module._Meter(emu, "compare", project="bench-s1")
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
    counted = meter.result(sent)
    return {"us": {style: statistics.median(us) for style, us in rounds.items()},
            "received": counted["received"], "lost": counted["lost"]}


def _markdown(rows: list[dict[str, Any]]) -> str:
    """Rows as markdown tables (the engine's table writer: one table per shape of row)."""
    return _native.bench_markdown(json.dumps([list(row.items()) for row in rows]))


def bench(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m loghose_lab", description=bench_module.__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scenario", default="s1", choices=bench_module.SCENARIOS)
    parser.add_argument("--rates", help="logs/s, comma-separated (s1, s1r, s2, s5)")
    parser.add_argument("--seconds", type=int, help="seconds per rate or case")
    parser.add_argument("--unthrottled-seconds", type=int, help="s1, s1r: seconds of the unthrottled run (0 skips it)")
    parser.add_argument("--preset", choices=["server", "pi"], help="s1, s1r, s2: the producer preset")
    parser.add_argument("--param", action="append", default=[], metavar="NAME=JSON",
                        help="any other parameter of the scenario, e.g. --param open_batches=[10000]")
    parser.add_argument("--params", help=argparse.SUPPRESS)
    parser.add_argument("--events", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--json", action="store_true", help="print the rows as a JSON array instead of tables")
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                        help="show progress (default: when stderr is a terminal)")
    parser.add_argument("--compare", type=int, default=0, metavar="N",
                        help="s1: also compare send styles over N records")
    args = parser.parse_args(argv)
    params: dict[str, Any] = json.loads(args.params) if args.params else {}
    if args.rates:
        params["rates"] = [int(r) for r in args.rates.split(",") if r]
    for name in ("seconds", "unthrottled_seconds", "preset"):
        if getattr(args, name) is not None:
            params[name] = getattr(args, name)
    for item in args.param:
        name, _, value = item.partition("=")
        try:
            params[name] = json.loads(value)
        except ValueError:
            params[name] = value
    try:
        params = bench_module._checked(args.scenario, params)
    except (TypeError, ValueError) as e:
        parser.error(str(e))
    if args.events:
        # The child side of loghose_lab.run: every event a JSON line, as it happens.
        rows: list[dict[str, Any]] = []

        def emit(event: dict[str, Any]) -> None:
            if "row" in event:
                rows.append(event["row"])
            print(json.dumps(event), flush=True)

        # Exit status 0: every check held; 1: a check failed; 3: the scenario itself broke.
        try:
            bench_module.run_here(args.scenario, params, emit)
        except Exception:
            traceback.print_exc()
            return 3
        return 1 if any(bench_module.failed(r) for r in rows) else 0
    rows = list(bench_module.run(args.scenario, progress=args.progress, **params))
    failed = any(bench_module.failed(r) for r in rows)
    if args.compare:
        emu = bench_module.ChildEmulator()
        try:
            c = compare(emu, args.compare)
        finally:
            emu.close()
        failed |= c["lost"] != 0
    if args.json:
        print(json.dumps(rows, indent=1))
    else:
        print(f"Scenario {args.scenario} from Python, emulator in a child process: "
              f"{json.dumps({k: v for k, v in params.items() if not isinstance(v, list) or len(v) < 8})}")
        print()
        print(_markdown(rows))
        if args.compare:
            print(f"| send style (6 fields, built in the loop; median of {COMPARE_ROUNDS} rounds) | µs per record |")
            print("|---|---:|")
            for style, us in c["us"].items():
                print(f"| {style} | {us:.3f} |")
            print(f"\n{c['received']} records received, {c['lost']} lost")
    if failed:
        print(f"{args.scenario} FAILED: logs were lost, duplicated or left pending", file=sys.stderr)
        return 1
    return 0


def serve_emulator() -> int:
    # The emulator stands in for the remote service, which takes none of the producer's CPU:
    # at nice 10 it runs on what the benchmarked process leaves instead of taking half the cores.
    _native.bench_serve_emulator(64 << 20)
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["emulator"]:
        return serve_emulator()
    if argv[:1] == ["count"] and len(argv) == 4:
        return bench_module.count_sends(argv[1], int(argv[2]), json.loads(argv[3]))
    return bench(argv)


if __name__ == "__main__":
    sys.exit(main())
