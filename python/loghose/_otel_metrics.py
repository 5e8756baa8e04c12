"""The OpenTelemetry SDK's own log-pipeline metrics (``otel.sdk.*``) for loghose's processor
and exporter, through the application's ``MeterProvider`` (the global one unless another is
passed; without an SDK provider every instrument is a no-op).

What each instrument reads, under the semantic conventions for SDK metrics:

- ``otel.sdk.processor.log.processed`` (processor only): records handed on to be sent (the
  producer's accepted records that left its queue for a batch in flight or done), and the
  records the processor could not hand over, by ``error.type``: ``queue_full`` (the buffer was
  full), ``already_shutdown`` (the producer was closed), else the exception's type name.
- ``otel.sdk.processor.log.queue.size`` (processor only): records accepted and not yet in a
  batch being sent. There is no ``queue.capacity``: the queue is bounded in bytes
  (``buffer_max_bytes``), not in records; ``Producer.metrics()`` has it as
  ``loghose_buffer_capacity_bytes``.
- ``otel.sdk.exporter.log.inflight``: records in batches being sent (the processor), or every
  record accepted and not yet at an outcome (the exporter, whose caller's queue is before it).
- ``otel.sdk.exporter.log.exported``: records delivered, and records failed for good with
  ``error.type`` their error code (the producer's counters, the ones ``stats()`` reads; records
  left in the spool for the next producer are not finished and not counted).
- ``otel.sdk.exporter.operation.duration``: one observation per batch, from its first request
  to its outcome (retries and their waits included), with ``http.response.status_code`` of the
  last answer and ``error.type`` when it failed.

Every instrument carries ``otel.component.type`` (the class's qualified name, as the
conventions ask of components without a standard one) and ``otel.component.name``
(``type/N``, N counting instances from 0); the exporter's also ``server.address`` and
``server.port`` (the endpoint's). Counters and gauges are the producer's counters read at
collection time (carried over when the sink moves to a new producer: a counter never goes
back); the histogram is fed from the reports the producer hands its reporter thread (one
``record`` per batch, so it may trail a flush by the moment the report takes). Nothing is added
to a record's path but one integer increment on failure.
"""

from __future__ import annotations

import itertools
import threading
import weakref
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from opentelemetry.metrics import CallbackOptions, MeterProvider, Observation, get_meter_provider
from opentelemetry.util.types import AttributeValue

from . import DeliveryReport, Producer, __version__
from .errors import BufferFullError, ProducerClosedError

if TYPE_CHECKING:
    from ._sink import ProducerSink

#: Boundaries for durations in seconds, as the conventions advise for ``*.duration``.
DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0]

_instances: dict[str, itertools.count[int]] = {}


def error_type(error: BaseException) -> str:
    """``error.type`` of a record the processor could not hand to the producer."""
    if isinstance(error, BufferFullError):
        return "queue_full"
    if isinstance(error, ProducerClosedError):
        return "already_shutdown"
    return type(error).__qualname__


class _Instruments:
    """The instruments of one meter provider, shared by every processor and exporter reporting
    to it (a meter makes an instrument once per name: a second one of the same name would not
    be observed). Each callback asks every live member for its observations."""

    def __init__(self, provider: MeterProvider) -> None:
        self.members: weakref.WeakSet[SdkMetrics] = weakref.WeakSet()
        meter = provider.get_meter("loghose", __version__)
        self.duration = meter.create_histogram(
            "otel.sdk.exporter.operation.duration", unit="s",
            description="The duration of exporting a batch of telemetry records.",
            explicit_bucket_boundaries_advisory=DURATION_BUCKETS)
        meter.create_observable_counter(
            "otel.sdk.exporter.log.exported", [self._observe("exported")], unit="{log_record}",
            description="The number of log records for which the export has finished, either successful or failed.")
        meter.create_observable_up_down_counter(
            "otel.sdk.exporter.log.inflight", [self._observe("inflight")], unit="{log_record}",
            description="The number of log records which were passed to the exporter, but that have "
                        "not been exported yet (neither successful, nor failed).")
        meter.create_observable_counter(
            "otel.sdk.processor.log.processed", [self._observe("processed")], unit="{log_record}",
            description="The number of log records for which the processing has finished, "
                        "either successful or failed.")
        meter.create_observable_up_down_counter(
            "otel.sdk.processor.log.queue.size", [self._observe("queue_size")], unit="{log_record}",
            description="The number of log records in the queue of a given instance of an SDK log processor.")

    def _observe(self, what: str) -> Callable[[CallbackOptions], Iterable[Observation]]:
        def callback(_options: CallbackOptions) -> Iterable[Observation]:
            return [point for member in list(self.members) for point in member.observe(what)]
        return callback


_by_provider: weakref.WeakKeyDictionary[MeterProvider, _Instruments] = weakref.WeakKeyDictionary()
_by_provider_lock = threading.Lock()


def _instruments(provider: MeterProvider) -> _Instruments:
    with _by_provider_lock:
        instruments = _by_provider.get(provider)
        if instruments is None:
            instruments = _by_provider[provider] = _Instruments(provider)
        return instruments


class SdkMetrics:
    """The ``otel.sdk.*`` observations of one processor (``processor=True``) or exporter."""

    def __init__(self, sink: ProducerSink, component_type: str, *, processor: bool,
                 meter_provider: MeterProvider | None) -> None:
        number = next(_instances.setdefault(component_type, itertools.count()))
        self.component: dict[str, AttributeValue] = {"otel.component.type": component_type,
                                                     "otel.component.name": f"{component_type}/{number}"}
        address, port = sink.producer.server_address
        self.server: dict[str, AttributeValue] = {**self.component, "server.address": address, "server.port": port}
        self._processor = processor
        # Held weakly, as the provider holds this object: a provider outliving the processor
        # does not keep it (and its producer) alive.
        self._sink = weakref.ref(sink)
        #: Each counter as the last collection reported it, and as it stood when the sink last
        #: moved to a new producer (whose counters start at 0).
        self._last: dict[tuple[str, str | None], int] = {}
        self._base: dict[tuple[str, str | None], int] = {}
        #: Records the processor could not hand over, by ``error.type``.
        self.refused: dict[str, int] = {}
        instruments = _instruments(meter_provider or get_meter_provider())
        instruments.members.add(self)
        self._duration = instruments.duration
        self.watch(sink.producer)

    def observe(self, what: str) -> list[Observation]:
        """The observations of one instrument (``exported``, ``inflight``, ``processed``,
        ``queue_size``) at a collection."""
        sink = self._sink()
        if sink is None or (what in ("processed", "queue_size") and not self._processor):
            return []
        stats = sink.producer.stats()
        read: dict[str, Callable[[dict[str, Any]], Iterable[Observation]]] = {
            "exported": self._exported, "inflight": self._inflight,
            "processed": self._processed, "queue_size": self._queue_size,
        }
        return list(read[what](stats))

    def watch(self, producer: Producer, *, renewed: bool = False) -> None:
        """Counts the outcomes of ``producer``'s batches (each producer the sink sends to;
        ``renewed`` when it replaces the one before, whose counts carry over)."""
        if renewed:
            self._base = dict(self._last)
        me = weakref.ref(self)

        def on_reports(reports: list[DeliveryReport]) -> None:
            metrics = me()
            if metrics is not None:
                metrics._reports(reports)

        producer._report_observers.append(on_reports)

    def _reports(self, reports: list[DeliveryReport]) -> None:
        for report in reports:
            if report.kept:
                continue
            failed: dict[str, AttributeValue] = {}
            if not report.delivered:
                failed["error.type"] = report.error_code or "rejected"
            if report.attempts:
                status = 200 if report.delivered else report.http_status
                answered: dict[str, AttributeValue] = {} if status is None else {"http.response.status_code": status}
                self._duration.record(report.send_ms / 1000, {**self.server, **answered, **failed})

    def _inflight(self, stats: dict[str, Any]) -> Iterable[Observation]:
        records = stats["in_flight_records"] if self._processor else stats["queued_records"]
        yield Observation(records, self.server)

    def _queue_size(self, stats: dict[str, Any]) -> Iterable[Observation]:
        yield Observation(max(0, stats["queued_records"] - stats["in_flight_records"]), self.component)

    def _count(self, key: tuple[str, str | None], current: int) -> int:
        # Never back: the counters are read one at a time, and a new producer starts at 0.
        value = max(self._last.get(key, 0), self._base.get(key, 0) + current)
        self._last[key] = value
        return value

    def _exported(self, stats: dict[str, Any]) -> Iterable[Observation]:
        yield Observation(self._count(("exported", None), stats["delivered"]), self.server)
        codes = set(stats["failures_by_code"]) | {code for name, code in self._last if name == "failed"}
        for code in sorted(c for c in codes if c is not None):
            records = self._count(("failed", code), stats["failures_by_code"].get(code, 0))
            yield Observation(records, {**self.server, "error.type": code})

    def _processed(self, stats: dict[str, Any]) -> Iterable[Observation]:
        waiting = max(0, stats["queued_records"] - stats["in_flight_records"])
        yield Observation(self._count(("processed", None), stats["accepted"] - waiting), self.component)
        for kind, records in sorted(self.refused.items()):
            yield Observation(records, {**self.component, "error.type": kind})
