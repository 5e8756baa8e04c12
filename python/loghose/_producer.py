"""The synchronous producer: :class:`Producer` over the native engine, with what only Python
can do around it.

- ``send`` is the native per-record function bound to this producer (``bound_send``): a record
  goes from the caller's thread into the engine with no Python frame in between. Futures are
  tracked here by ticket and resolved on the reporter thread (asyncio ones on their own loop,
  one ``call_soon_threadsafe`` per loop and batch of reports).
- Callbacks run on the producer's reporter thread; one that raises is counted
  (``callback_errors``) and logged, and the producer goes on.
- Every live producer is in ``_live``: closed at interpreter exit within its exit timeout
  (``loghose._exit``), delivered on SIGTERM/SIGINT (``loghose._signals``), forgotten in a
  forked child (the parent's; using one there raises :class:`LoghoseError`).
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import itertools
import json
import logging
import os
import threading
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from . import _credentials, _exit, _native, _signals, _values
from ._display import LiveView, Stats
from ._native import DeliveryReport
from .errors import DeliveryError

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from ._options import ProducerOptions

logger = logging.getLogger("loghose")

class _UndeliveredWarnings:
    """Says, on the ``loghose`` logger, that records failed for good when nothing else was told
    (no ``on_delivery``, no future). The engine's policy decides when (at most one warning per
    error code every ten seconds, the records of the quiet time counted into the next one or
    into the one ``close`` gives, each batch once) and words it; this only logs it."""

    def __init__(self) -> None:
        self._policy = _native.UndeliveredWarnings()

    def note(self, report: DeliveryReport, records: int) -> None:
        text = self._policy.note(report, records)
        if text is not None:
            logger.warning("%s", text)

    def flush(self) -> None:
        for text in self._policy.flush():
            logger.warning("%s", text)


def _weak_reports(producer: Producer) -> Any:
    method = weakref.WeakMethod(producer._on_reports)

    def on_reports(reports: list[DeliveryReport]) -> None:
        target = method()
        if target is not None:
            target(reports)

    return on_reports


_live: weakref.WeakSet[Producer] = weakref.WeakSet()

Contents = Mapping[Any, Any] | Iterable[tuple[Any, Any]]


def _config_json(options: dict[str, Any]) -> str:
    config = dict(options)
    tags = config.get("tags")
    if isinstance(tags, Mapping):
        config["tags"] = [[str(k), str(v)] for k, v in tags.items()]
    elif tags is not None:
        config["tags"] = [[str(k), str(v)] for k, v in tags]
    address = config.get("remote_address")
    if isinstance(address, tuple):
        config["remote_address"] = f"{address[0]}:{address[1]}"
    return json.dumps(config)



class CloseResult(int):
    """What :meth:`Producer.close` left. As an ``int``: the records lost, neither delivered nor
    durably kept (``undelivered + kept_not_durable``; 0 means nothing was lost), so
    ``if producer.close(): ...`` reads as "something was lost". By name:

    - ``undelivered``: failed for good, or given up at the timeout without a spool;
    - ``kept``: left in the spool (``spool_dir``) for the next producer on it, synced to disk;
    - ``kept_not_durable``: of ``kept``, those whose files the disk failed to sync — they
      survive the process, but a power loss could lose them;
    - ``not_durable``: records delivered while their spool copy was not durable (a failing
      disk; ``stats()["spool_not_durable"]``): nothing lost, said for monitoring;
    - ``failed``: the reports of the batches that failed (the most recent 10 000).
    """

    undelivered: int
    """Failed for good, or given up at the timeout without a spool."""
    kept: int
    """Left in the spool for the next producer on it, synced to disk."""
    kept_not_durable: int
    """Of ``kept``, those whose files the disk failed to sync: a power loss could lose them."""
    not_durable: int
    """Delivered while their spool copy was not durable (a failing disk): nothing lost."""
    failed: list[DeliveryReport]
    """The reports of the batches that failed (the most recent 10 000)."""

    def __new__(
        cls,
        undelivered: int,
        kept: int = 0,
        kept_not_durable: int = 0,
        not_durable: int = 0,
        failed: Sequence[DeliveryReport] = (),
    ) -> CloseResult:
        result = super().__new__(cls, undelivered + kept_not_durable)
        result.undelivered = undelivered
        result.kept = kept
        result.kept_not_durable = kept_not_durable
        result.not_durable = not_durable
        result.failed = list(failed)
        return result

    @property
    def lost(self) -> int:
        """Records neither delivered nor durably kept (the ``int`` itself)."""
        return int(self)

    def __str__(self) -> str:
        return str(int(self))

    def __repr__(self) -> str:
        return (
            f"CloseResult(lost={int(self)}, undelivered={self.undelivered}, kept={self.kept}, "
            f"kept_not_durable={self.kept_not_durable}, not_durable={self.not_durable}, "
            f"failed={len(self.failed)} reports)"
        )


class Producer:
    """Batches, compresses, signs and ships records; see ``ProducerConfig`` for every option.

    Options are keyword-only and use the engine's names (``linger_ms``, ``batch_max_bytes``,
    ``buffer_max_bytes``, ``max_block_ms``, ``compression``, ...; typed in
    :class:`ProducerOptions`). An unknown or invalid option raises :class:`ConfigError` naming
    it, its expected type and unit.

    Credentials: ``access_key_id`` / ``access_key_secret`` (and ``security_token``), or
    ``api_key``, or ``credentials_provider`` (a callable, or an object with
    ``get_credentials()`` / ``get_credential()``, asked before every attempt so rotated STS
    tokens are picked up; see ``loghose._credentials``); with none of these, Alibaba Cloud's
    default credential chain: ``ALIBABA_CLOUD_ACCESS_KEY_ID`` / ``_SECRET`` /
    ``_SECURITY_TOKEN``, an OIDC role, the CLI's and the shared profile files, the ECS instance
    role, ``ALIBABA_CLOUD_CREDENTIALS_URI`` (docs/guides/credentials.md).

    ``exit_timeout``: seconds this producer may take, when the process ends with it still
    open, to deliver what it holds (default ``loghose.EXIT_TIMEOUT``, 5).

    Values: str, bytes, int, float and bool are stored as they are; dicts and lists as compact
    JSON, dates as ISO 8601, ``UUID``/``Decimal``/``Path`` as text, an ``Enum`` as its value,
    ``None`` as ``null``; anything else goes to ``default`` (as ``json.dumps`` takes it) or
    raises ``TypeError`` naming the field (see ``loghose._values``).
    """

    def __init__(self, *, on_delivery: Callable[[list[DeliveryReport]], object] | None = None,
                 credentials_provider: Any = None, default: Callable[[Any], Any] | None = None,
                 exit_timeout: float | None = None, **options: Unpack[ProducerOptions]) -> None:
        self._on_delivery = on_delivery
        #: Seconds this producer may take to deliver when the process ends (None: ``EXIT_TIMEOUT``).
        self._exit_timeout = exit_timeout
        self._futures: dict[int, Any] = {}
        self._futures_lock = threading.Lock()
        self._tickets = itertools.count(1)
        self._callback_errors = 0
        #: Functions the integrations attach to see every batch's report (their own metrics).
        self._report_observers: list[Callable[[list[DeliveryReport]], None]] = []
        self._undelivered = _UndeliveredWarnings()
        self._pid = os.getpid()
        # The native producer holds its report callback where Python's collector cannot see it:
        # a bound method there would keep this producer alive forever (a re-run notebook cell
        # would pile up producers and threads). It gets a weak reference instead.
        credentials = None if credentials_provider is None else _credentials.provider_function(credentials_provider)
        #: Where it sends, for its repr.
        self._destination = (options.get("endpoint", ""), options.get("project", ""), options.get("logstore", ""))
        self._native = _native.NativeProducer(_config_json(dict(options)), _weak_reports(self), credentials,
                                              _values.converter(default))
        # The hot path goes straight to native code: `send` bound to this producer.
        self.send = self._native.bound_send()  # type: ignore[method-assign]
        _live.add(self)
        _exit.arm(_close_at_exit)
        self._close_on_signal_ms = self._native.close_on_signal_ms
        if self._close_on_signal_ms > 0:
            _signals.install(lambda: list(_live))

    @classmethod
    def from_preset(cls, preset: str, **options: Any) -> Producer:
        """A producer with the ``"server"`` or ``"pi"`` batching preset, then ``options``."""
        # The values live in the engine (ProducerConfig::preset); an unknown name raises ConfigError.
        preset_options = json.loads(_native.preset_options_json(preset))
        return cls(**{**preset_options, **options})

    if TYPE_CHECKING:
        # `send` is the engine's function bound to each producer in `__init__` (one
        # implementation, no Python frame per record); this is its signature for type checkers.
        def send(self, contents: Contents, *, topic: str | None = None, source: str | None = None,
                 time: float | None = None, shard_key: str | None = None, project: str | None = None,
                 logstore: str | None = None) -> None:
            """Queues one record: a dict or (key, value) pairs of str/bytes (int, float and bool
            are converted). Fire and forget; see ``send_future`` for the outcome."""

    def sender(self, keys: Sequence[str]) -> Callable[..., None]:
        """A function that sends records of these keys, given their values in order:
        ``log = producer.sender(["level", "msg", "user"])`` then ``log("info", "signed in",
        "ana")`` sends what ``producer.send({"level": "info", "msg": "signed in", "user":
        "ana"})`` sends, for less work a record: the keys are checked once, and no dict is built
        or read. A value ``send`` would convert (bytes, a container, an object) is converted
        the same way; a call with another number of values raises TypeError. A key the
        service would refuse raises ``InvalidRecordError`` here."""
        if isinstance(keys, (str, bytes)) or not all(isinstance(k, str) for k in keys):
            raise TypeError(f"sender takes a sequence of str keys, not {keys!r:.80}")
        sender: Callable[..., None] = self._native.keyed_sender(list(keys))
        return sender

    def send_many(self, records: Iterable[Contents]) -> int:
        """Queues every record, or none of them; returns how many were queued.

        All or nothing: every record is read and checked before any is queued, so a caller
        who retries a failed call sends nothing twice. A record that cannot be sent raises
        (``TypeError`` or :class:`InvalidRecordError`, its message starting ``record N:``);
        a buffer without room for all of them raises :class:`BufferFullError`. In both cases
        nothing is queued, and the refused records are counted (``invalid`` or ``dropped``).
        """
        return self._native.send_many(records)

    def send_future(self, contents: Contents, **options: Any) -> concurrent.futures.Future[DeliveryReport]:
        """Queues one record; the future resolves with its batch's :class:`DeliveryReport`, or
        fails with :class:`DeliveryError`."""
        future: concurrent.futures.Future[DeliveryReport] = concurrent.futures.Future()
        self._track(contents, future, options)
        return future

    def _track(self, contents: Contents, target: Any, options: dict[str, Any]) -> None:
        ticket = next(self._tickets)
        with self._futures_lock:
            self._futures[ticket] = target
        try:
            self.send(contents, ticket=ticket, **options)  # type: ignore[call-arg]
        except BaseException:
            with self._futures_lock:
                self._futures.pop(ticket, None)
            raise

    def _on_reports(self, reports: list[DeliveryReport]) -> None:
        # Runs on the producer's reporter thread, once per batch of reports.
        by_loop: dict[Any, list[tuple[asyncio.Future[DeliveryReport], DeliveryReport]]] = {}
        with self._futures_lock:
            targets = [(self._futures.pop(t, None), r) for r in reports for t in r.tickets]
        for target, report in targets:
            if target is None:
                continue
            if isinstance(target, tuple):
                loop, future = target
                by_loop.setdefault(loop, []).append((future, report))
            elif report.delivered:
                target.set_result(report)
            else:
                target.set_exception(DeliveryError.from_report(report))
        for loop, items in by_loop.items():
            try:
                loop.call_soon_threadsafe(_resolve_async, items)
            except RuntimeError:
                pass  # the loop closed meanwhile; nobody awaits these futures any more
        if self._on_delivery is None:
            # Records that failed with nobody told (no callback, no future) are never only a counter.
            for report in reports:
                untold = report.records - len(report.tickets)
                if not report.delivered and untold > 0:
                    self._undelivered.note(report, untold)
        if self._on_delivery is not None:
            try:
                self._on_delivery(reports)
            except Exception:
                self._callback_errors += 1
                logger.exception("loghose: the on_delivery callback raised; the producer goes on")
        for observer in self._report_observers:
            try:
                observer(reports)
            except Exception:
                self._callback_errors += 1
                logger.exception("loghose: a report observer raised; the producer goes on")

    def flush(self, timeout: float | None = None) -> int:
        """Sends everything queued and waits up to ``timeout`` seconds (None: until done).
        Returns how many records are not delivered: still pending, plus those that failed for
        good since the previous ``flush``. 0 means everything sent was delivered."""
        with _signals.waiting():
            pending, failed = self._native.flush(timeout)
        return pending + failed

    def _seal(self) -> None:
        # Sends the open batches now, without waiting (the signal handler's first step).
        self._native.flush_accepted(0)

    def _flush_accepted(self, timeout: float) -> int:
        return self._native.flush_accepted(timeout)

    def close(self, timeout: float | None = None) -> CloseResult:
        """Refuses new records, waits up to ``timeout`` seconds for delivery, and gives up on the
        rest. Returns a :class:`CloseResult`: an ``int``, how many records were lost — neither
        delivered nor durably kept (0 means nothing was lost) — with the counts by name. Records
        given up without a spool fail with ``ProducerClosed``. With a ``spool_dir``, records
        given up stay in the spool for the next producer on it: they are kept, not failed
        (``CloseResult.kept``, ``stats()["kept"]``; their futures fail with ``KeptInSpool``),
        and the close syncs them to disk; those whose files the disk failed to sync are counted
        in ``kept_not_durable`` (and in the ``int``)."""
        # Still live while it closes: a signal that ends the process meanwhile waits for this
        # delivery too (its handler runs inside the wait) instead of cutting it short.
        with _signals.waiting():
            undelivered, kept, kept_not_durable, not_durable, failed = self._native.close(timeout)
        _live.discard(self)
        self._undelivered.flush()
        return CloseResult(undelivered, kept, kept_not_durable, not_durable, failed)

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._native.closed

    @property
    def server_address(self) -> tuple[str, int]:
        """The endpoint's host and port (the scheme's when it names none), for monitoring."""
        return self._native.server_address

    def stats(self) -> Stats:
        """Counters: accepted, delivered, failed, kept (left in the spool at close, for the
        next producer), retried, dropped, invalid, queued bytes and records, in-flight
        batches and their records, failures by code, callback errors. A ``dict`` (a
        :class:`Stats`: a notebook shows it as a table)."""
        stats = Stats(json.loads(self._native.stats_json()))
        stats["callback_errors"] += self._callback_errors
        return stats

    def live_view(self, interval: float = 0.5) -> LiveView:
        """Shows what this producer has done so far — delivered, refused, queued, in flight, the
        rate of delivery — in one notebook output updated in place every ``interval`` seconds,
        until the view's ``stop()`` (or the end of a ``with`` block, or this producer's
        close). Outside a notebook it prints a line per update to stderr."""
        return LiveView(self, interval)

    def __repr__(self) -> str:
        endpoint, project, logstore = self._destination
        state = "closed" if self.closed else "open"
        return f"<loghose.Producer {project}/{logstore} at {endpoint}, {state}>"

    def metrics(self) -> list[dict[str, Any]]:
        """A snapshot of the producer's metrics: one dict per metric of the engine's table
        (``name``, ``type``, ``unit``, ``help``, ``labels``, ``samples``), each sample with its
        ``labels`` as a dict and its ``value`` (a histogram's also ``histogram``: ``bounds``,
        ``cumulative``, ``count``, ``sum``). :mod:`loghose.prometheus` exposes them."""
        families: list[dict[str, Any]] = json.loads(self._native.metrics_json())
        for family in families:
            names = family["labels"]
            for sample in family["samples"]:
                sample["labels"] = dict(zip(names, sample["labels"], strict=True))
            if family["name"] == "loghose_report_callback_errors":
                family["samples"][0]["value"] += self._callback_errors
        return families

    def metrics_text(self, const_labels: Mapping[str, str] | None = None) -> str:
        """The metrics in the Prometheus text format (0.0.4), rendered by the engine with the
        GIL released: what a ``/metrics`` endpoint can answer without a registry (the fastest
        scrape; :func:`loghose.prometheus.make_wsgi_app` serves it). ``const_labels`` are added
        to every sample, to tell producers apart; a name Prometheus refuses or the metrics
        already carry (``project``, ``logstore``, ``le``...) raises ValueError."""
        labels = [(str(k), str(v)) for k, v in (const_labels or {}).items()]
        return self._native.metrics_text(labels, self._callback_errors)

    def __enter__(self) -> Producer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()



def _resolve_async(items: list[tuple[asyncio.Future[DeliveryReport], DeliveryReport]]) -> None:
    for future, report in items:
        if future.done():
            continue
        if report.delivered:
            future.set_result(report)
        else:
            future.set_exception(DeliveryError.from_report(report))



@atexit.register
def _close_at_exit() -> None:
    # Before the interpreter finalises (or a multiprocessing or celery child ends): deliver
    # what is held, each producer within its exit timeout, and stop threads.
    # `loghose.EXIT_TIMEOUT` is read now: an application may have set it since the import.
    import loghose

    _exit.close_all(list(_live), loghose.EXIT_TIMEOUT)


def _after_fork_in_child() -> None:
    # Producers inherited from the parent are the parent's; the child must not close them.
    _live.clear()


# Only where the platform forks (not on Windows).
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)

