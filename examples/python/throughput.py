"""A throughput experiment: how many records a second this machine sends from Python, and what
the producer does meanwhile.

Records of the same keys go through ``producer.sender(keys)`` (the keys checked once, the
values passed in order). The experiment runs for ``SECONDS`` (default 3), then prints the rate
of sends, the rate of delivery and the producer's counters. In a notebook, wrap the loop in
``with producer.live_view():`` to watch it (docs/guides/jupyter.md).

    python examples/python/throughput.py [SECONDS]
"""

from __future__ import annotations

import sys
import time

import loghose
from _destination import destination


def main(seconds: float) -> None:
    with destination("throughput") as (options, emu):
        with loghose.Producer(**options) as producer:
            access = producer.sender(["method", "path", "status", "ms", "agent"])
            sent, started = 0, time.perf_counter()
            while time.perf_counter() - started < seconds:
                for i in range(1000):
                    access("GET", f"/items/{i}", 200, 1.5, "curl/8.5")
                sent += 1000
            adding = time.perf_counter() - started
            producer.flush(60)
            total = time.perf_counter() - started
        stats = producer.stats()
        print(f"{sent:,} records in {adding:.1f} s: {sent / adding:,.0f} sends/s, "
              f"{stats['delivered'] / total:,.0f} delivered/s, {stats['failed']} failed")
        print(repr(stats))
        if emu is not None:
            print("the emulator counted", emu.totals("examples", "throughput"))


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 3.0)
