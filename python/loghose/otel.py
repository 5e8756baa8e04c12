"""OpenTelemetry logs into Log Service: a log record processor and a log exporter for the
OpenTelemetry Python SDK (``opentelemetry-sdk``).

::

    import logging
    from opentelemetry.sdk._logs import LoggerProvider, LoggingHandler
    from opentelemetry.sdk.resources import Resource
    from loghose.otel import LoghoseLogRecordProcessor

    provider = LoggerProvider(resource=Resource.create({"service.name": "checkout"}))
    provider.add_log_record_processor(LoghoseLogRecordProcessor(**options))
    logging.getLogger().addHandler(LoggingHandler(logger_provider=provider))

:class:`LoghoseLogRecordProcessor` hands each record straight to the producer as it is emitted:
the producer batches, compresses and retries on its own threads, so no second batching thread
and queue sit in front of it (use it in place of ``BatchLogRecordProcessor``).
:class:`LoghoseLogExporter` is for a pipeline composed by hand
(``BatchLogRecordProcessor(LoghoseLogExporter(**options))``).

Each record becomes one log with the fields of the OpenTelemetry Collector's Log Service
exporter, which Log Service dashboards for OpenTelemetry data expect: ``host`` and ``service``
(the resource's ``host.name`` and ``service.name``), ``resource`` (its other attributes),
``otlp.name`` and ``otlp.version`` (the instrumentation scope), ``timeUnixNano``,
``severityNumber``, ``severityText``, ``attribute`` (the record's attributes), ``content`` (the
body), ``flags``, ``traceID`` and ``spanID`` (lowercase hex, empty outside a span). ``resource``
and ``attribute`` are compact JSON objects with sorted keys whose values are text (numbers and
booleans as written, lists and maps as JSON); a structured body is JSON too. The log's time is
the record's timestamp (else when it was observed). One difference: a record without a body is
stored with an empty ``content`` (the Collector's exporter drops it; nothing is dropped here).

Runs on the thread that emits; never raises into the application (a record that cannot be sent
is counted in ``failures`` and reported once per error type on the ``loghose`` logger).
``shutdown`` (called by ``LoggerProvider.shutdown``, and at exit) delivers within
``close_timeout`` and closes the producer the processor built; ``force_flush`` waits for
delivery. Fork-safe like the other integrations: a forked child gets a producer of its own on
its first record. Needs ``opentelemetry-sdk`` 1.39 or later (``pip install 'loghose[otel]'``).

Both report the SDK's own log-pipeline metrics (``otel.sdk.processor.log.processed``,
``.queue.size``, ``otel.sdk.exporter.log.exported``, ``.inflight``,
``otel.sdk.exporter.operation.duration``) through ``meter_provider=`` or the global
``MeterProvider`` (see ``loghose._otel_metrics``).
"""

from __future__ import annotations

import base64
import decimal
import json
import logging
import re
from collections.abc import Mapping, Sequence
from json.encoder import encode_basestring as _string
from typing import Any

from opentelemetry.metrics import MeterProvider
from opentelemetry.sdk._logs import LogRecordProcessor, ReadableLogRecord, ReadWriteLogRecord
from opentelemetry.sdk._logs.export import LogRecordExporter, LogRecordExportResult

from . import Producer
from ._otel_metrics import SdkMetrics, error_type
from ._sink import ProducerSink

_log = logging.getLogger("loghose")

#: JSON as the Collector's exporter writes it (Go's encoding/json): compact, keys sorted,
#: non-ASCII kept, and the characters HTML treats specially escaped.
_GO_SPECIAL = re.compile("[<>&\u2028\u2029]")
# Made once: json.dumps with options builds an encoder per call.
_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def _go_escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def _json(value: Any) -> str:
    text = _ENCODER.encode(value)
    # Searched first: nearly every record has none of them.
    return _GO_SPECIAL.sub(_go_escape, text) if _GO_SPECIAL.search(text) else text


def _float_text(value: float) -> str:
    """A float as the exporter writes one: the shortest digits that read back the same, never
    in exponent form."""
    text = repr(value)
    if "e" in text or "n" in text:  # an exponent, nan or inf
        if value != value:
            return "NaN"
        if text in ("inf", "-inf"):
            return "+Inf" if value > 0 else "-Inf"
        return format(decimal.Decimal(text), "f")
    return text[:-2] if text.endswith(".0") else text


def _raw(value: Any) -> Any:
    """A value inside a list or map, as JSON holds it."""
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, Mapping):
        return {str(k): _raw(v) for k, v in value.items()}
    if isinstance(value, Sequence) and not isinstance(value, str):
        return [_raw(v) for v in value]
    return value


def _text(value: Any) -> str:
    """An attribute value or body as text (the OTel data model's string form)."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _float_text(value)
    if value is None:
        return ""
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, (Mapping, Sequence)):
        return _json(_raw(value))
    return str(value)


def _object(attributes: Mapping[str, Any] | None, leave: tuple[str, ...] = ()) -> str:
    """A JSON object of the attributes' text, as `_json` writes it; built by hand, as this runs
    for every record (a third of the encoder's time)."""
    if not attributes:
        return "{}"
    # The SDK's BoundedAttributes answers every Mapping call in Python, under a lock (half the
    # cost of a record here); the dict it keeps is read directly when it has one.
    held = getattr(attributes, "_dict", None)
    if type(held) is dict:
        attributes = held
    parts = []
    for key, value in sorted(attributes.items()):
        if key in leave:
            continue
        kind = type(value)
        if kind is not str:
            value = str(value) if kind is int else _float_text(value) if kind is float else _text(value)
        parts.append(f"{_string(key)}:{_string(value)}")
    text = "{" + ",".join(parts) + "}"
    return _GO_SPECIAL.sub(_go_escape, text) if _GO_SPECIAL.search(text) else text


class _Layout:
    """Turns OTel log records into fields; the resource's and scopes' fields are worked out
    once per object (a provider has one resource and few scopes)."""

    def __init__(self) -> None:
        self._resource: Any = _Layout  # no resource seen yet
        self._resource_fields: dict[str, str] = {}
        self._scopes: dict[int, tuple[Any, str, str]] = {}

    def resource_fields(self, resource: Any) -> dict[str, str]:
        if resource is not self._resource:
            attributes = getattr(resource, "attributes", None) or {}
            self._resource_fields = {
                "host": _text(attributes.get("host.name", "")),
                "service": _text(attributes.get("service.name", "")),
                "resource": _object(attributes, ("host.name", "service.name")),
            }
            self._resource = resource
        return self._resource_fields

    def scope_fields(self, scope: Any) -> tuple[str, str]:
        held = self._scopes.get(id(scope))
        if held is None or held[0] is not scope:
            if len(self._scopes) > 1000:
                self._scopes.clear()
            held = (scope, getattr(scope, "name", None) or "", getattr(scope, "version", None) or "")
            self._scopes[id(scope)] = held
        return held[1], held[2]

    def fields(self, item: ReadWriteLogRecord | ReadableLogRecord) -> tuple[dict[str, str], float | None]:
        """The log's fields for one emitted record, and its time."""
        record = item.log_record
        resource = item.resource
        name, version = self.scope_fields(item.instrumentation_scope)
        timestamp = record.timestamp or 0
        severity = record.severity_number
        trace_id = record.trace_id or 0
        span_id = record.span_id or 0
        fields = dict(self.resource_fields(resource))
        fields["otlp.name"] = name
        fields["otlp.version"] = version
        fields["timeUnixNano"] = str(timestamp)
        fields["severityNumber"] = str(severity.value if severity is not None else 0)
        fields["severityText"] = record.severity_text or ""
        fields["attribute"] = _object(record.attributes)
        fields["content"] = _text(record.body)
        fields["flags"] = format(int(record.trace_flags or 0), "x")
        fields["traceID"] = format(trace_id, "032x") if trace_id else ""
        fields["spanID"] = format(span_id, "016x") if span_id else ""
        at = timestamp or getattr(record, "observed_timestamp", None)
        return fields, (at / 1e9 if at else None)


class _OtelSink(ProducerSink):
    def __init__(self, producer: Producer | None, close_timeout: float, options: dict[str, Any],
                 meter_provider: MeterProvider | None, *, processor: bool) -> None:
        super().__init__(producer, options, close_timeout)
        self._layout = _Layout()
        self._reported: set[type] = set()
        kind = type(self)
        self._metrics = SdkMetrics(self, f"{kind.__module__}.{kind.__qualname__}", processor=processor,
                                   meter_provider=meter_provider)
        self._owned.on_renewal.append(lambda renewed: self._metrics.watch(renewed, renewed=True))

    def _send(self, item: ReadWriteLogRecord | ReadableLogRecord) -> bool:
        try:
            fields, time = self._layout.fields(item)
            self._owned.live().send(fields, time=time)
            return True
        except Exception as error:  # noqa: BLE001 - never raise into the application's logging
            self.failures += 1
            refused = self._metrics.refused
            kind = error_type(error)
            refused[kind] = refused.get(kind, 0) + 1
            if type(error) not in self._reported:
                self._reported.add(type(error))
                _log.warning("loghose: an OpenTelemetry log record could not be sent to Log Service: %s "
                             "(counted in failures; reported once per error type)", error)
            return False

    def _flush(self, timeout_millis: float) -> bool:
        return self._owned.flush(max(0.0, timeout_millis / 1000)) == 0

    def _shutdown(self) -> None:
        self._owned.close(self.close_timeout)


class LoghoseLogRecordProcessor(_OtelSink, LogRecordProcessor):
    """Sends each OTel log record to Log Service as it is emitted; see the module text. Takes
    the producer's options, or ``producer=`` (then left open by ``shutdown``). ``failures``
    counts the records that could not be sent."""

    def __init__(self, *, producer: Producer | None = None, close_timeout: float = 10.0,
                 meter_provider: MeterProvider | None = None, **options: Any) -> None:
        _OtelSink.__init__(self, producer, close_timeout, options, meter_provider, processor=True)

    def on_emit(self, log_record: ReadWriteLogRecord) -> None:
        """Sends one OpenTelemetry log record (the SDK calls it)."""
        self._send(log_record)

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Delivers what is pending, waiting up to ``timeout_millis``; True when everything was delivered."""
        return self._flush(timeout_millis)

    def shutdown(self) -> None:
        """Delivers what is pending and closes the producer if this made it."""
        self._shutdown()


class LoghoseLogExporter(_OtelSink, LogRecordExporter):
    """An OTel log exporter to Log Service, for ``BatchLogRecordProcessor`` or
    ``SimpleLogRecordProcessor``; see the module text. ``export`` queues the batch in the
    producer and answers at once: ``SUCCESS`` when every record was queued, else ``FAILURE``
    (the others counted in ``failures``)."""

    def __init__(self, *, producer: Producer | None = None, close_timeout: float = 10.0,
                 meter_provider: MeterProvider | None = None, **options: Any) -> None:
        _OtelSink.__init__(self, producer, close_timeout, options, meter_provider, processor=False)

    def export(self, batch: Sequence[ReadableLogRecord]) -> LogRecordExportResult:
        """Sends a batch of OpenTelemetry log records (the SDK's batch processor calls it)."""
        queued = [self._send(item) for item in batch]
        return LogRecordExportResult.SUCCESS if all(queued) else LogRecordExportResult.FAILURE

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self._flush(timeout_millis)

    def shutdown(self) -> None:
        self._shutdown()


__all__ = ["LoghoseLogExporter", "LoghoseLogRecordProcessor"]
