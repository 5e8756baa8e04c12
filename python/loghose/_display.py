"""How a producer's figures read where people look: a short ``repr`` in a terminal, an HTML
table in a notebook (``_repr_html_``), and a live view that updates one output in place while a
throughput experiment runs.

The live view runs a daemon thread that reads ``stats()`` every ``interval`` seconds and
updates its IPython display by id (``display(..., display_id=True)``, then ``update``); outside
IPython it prints a line per update instead. It needs nothing beyond IPython, which a notebook
already has. It stops when asked, when its producer closes or is collected (it holds the
producer weakly, so a view left running never keeps a re-run cell's producer alive), or at exit;
what it shows is read, never changed.
"""

from __future__ import annotations

import html
import sys
import threading
import time
import weakref
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._producer import Producer

#: The counters a summary names first, in this order (the rest follow in the HTML table).
_SUMMARY = ("accepted", "delivered", "failed", "kept", "dropped", "invalid", "retried", "queued_records",
            "queued_bytes", "in_flight_batches")


def _table(rows: list[tuple[str, Any]], caption: str) -> str:
    cells = "".join(
        f"<tr><th style='text-align:left'>{html.escape(str(k))}</th>"
        f"<td style='text-align:right'>{html.escape(_shown(v))}</td></tr>"
        for k, v in rows
    )
    return f"<table><caption style='text-align:left'>{html.escape(caption)}</caption>{cells}</table>"


def _shown(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, float):
        return f"{value:,.1f}"
    return f"{value:,}"


class Stats(dict[str, Any]):
    """A producer's counters (``Producer.stats()``): a ``dict``, which also reads well — its
    ``repr`` names the main counters, and a notebook shows it as a table."""

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}={self[k]}" for k in _SUMMARY if k in self)
        return f"Stats({shown}, ...{len(self) - sum(k in self for k in _SUMMARY)} more)"

    def _repr_html_(self) -> str:
        first = [(k, self[k]) for k in _SUMMARY if k in self]
        rest = [(k, v) for k, v in self.items() if k not in _SUMMARY and not isinstance(v, (dict, list))]
        nested = [(k, v) for k, v in self.items() if isinstance(v, (dict, list)) and v]
        return _table(first + rest + nested, "loghose producer stats")


class LiveView:
    """What a producer has done so far — delivered, refused, queued, in flight, and the rate of
    delivery — shown in one notebook output that updates in place every ``interval`` seconds
    until :meth:`stop` (or the producer closes). Made by :meth:`Producer.live_view`; a context
    manager."""

    def __init__(self, producer: Producer, interval: float = 0.5) -> None:
        if interval <= 0:
            raise ValueError(f"interval: {interval!r} is not a positive number of seconds")
        self._producer = weakref.ref(producer)
        self._shown_as = repr(producer)
        self._interval = interval
        self._stop = threading.Event()
        self._started = time.monotonic()
        self._last = (self._started, 0)
        self._rate = 0.0
        self._stats = producer.stats()
        self._handle: Any = None
        try:
            import IPython
            import IPython.display

            # Untyped functions, called through Any.
            kernel: Any = IPython.get_ipython
            show: Any = IPython.display.display
            if kernel() is not None:
                self._handle = show(self, display_id=True)
        except ImportError:
            pass
        if self._handle is None:
            print(self, file=sys.stderr)
        self._thread = threading.Thread(target=self._run, name="loghose-live-view", daemon=True)
        self._thread.start()

    def _read(self) -> bool:
        """Reads the counters; False when the producer is gone (what was last read stays)."""
        producer = self._producer()
        if producer is None:
            return False
        self._shown_as = repr(producer)
        stats = producer.stats()
        now = time.monotonic()
        then, delivered_then = self._last
        if now > then:
            self._rate = (stats["delivered"] - delivered_then) / (now - then)
        self._last = (now, stats["delivered"])
        self._stats = stats
        return not producer.closed

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            if not self.refresh():
                break

    def refresh(self) -> bool:
        """Reads the counters now and updates the view; False once the producer is closed or
        gone (the view then shows what it last read)."""
        live = self._read()
        if self._handle is not None:
            self._handle.update(self)
        else:
            print(self, file=sys.stderr)
        return live

    def stop(self) -> None:
        """Stops updating, after one last update with the counters as they are now."""
        self._stop.set()
        self._thread.join()
        self.refresh()

    def __enter__(self) -> LiveView:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _figures(self) -> list[tuple[str, Any]]:
        s = self._stats
        return [
            ("delivered", s["delivered"]),
            ("delivered per second", round(self._rate, 1)),
            ("refused (failed, dropped, invalid)", s["failed"] + s["dropped"] + s["invalid"]),
            ("kept in the spool", s["kept"]),
            ("queued records", s["queued_records"]),
            ("queued bytes", s["queued_bytes"]),
            ("batches in flight", s["in_flight_batches"]),
            ("seconds", round(time.monotonic() - self._started, 1)),
        ]

    def __repr__(self) -> str:
        return "LiveView(" + ", ".join(f"{k}: {_shown(v)}" for k, v in self._figures()) + ")"

    def _repr_html_(self) -> str:
        return _table(self._figures(), f"loghose: {self._shown_as}")
