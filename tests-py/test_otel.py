"""OpenTelemetry logs into the emulator: the processor and the exporter with the real OTel SDK,
every case of the shared field table (tests-shared/otel.json, which the Node front reads too)
checked field by field, the logging bridge inside a real span, read back with the official SDK
too, failures counted, and shutdown's delivery."""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path

import loghose
import pytest

pytestmark = pytest.mark.timeout(120)

pytest.importorskip("opentelemetry.sdk._logs")

from loghose.otel import LoghoseLogExporter, LoghoseLogRecordProcessor  # noqa: E402
from opentelemetry import trace  # noqa: E402
from opentelemetry._logs import LogRecord, SeverityNumber  # noqa: E402
from opentelemetry.sdk._logs import LoggerProvider, LoggingHandler, ReadWriteLogRecord  # noqa: E402
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor, LogRecordExportResult  # noqa: E402
from opentelemetry.sdk.resources import Resource  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags  # noqa: E402

TABLE = json.loads((Path(__file__).resolve().parent.parent / "tests-shared" / "otel.json").read_text())["cases"]
FIELDS = list(TABLE[0]["stored"])


@pytest.fixture()
def emu():
    with loghose.Emulator() as emulator:
        yield emulator


def options(emu, logstore):
    return {**emu.producer_options(logstore=logstore), "linger_ms": 10}


def stored(emu, logstore):
    return [dict(log["contents"]) | {"__time__": log["time"]} for log in emu.logs("loghose", logstore)]


def emit_case(case, processor_or_exporter_pipeline):
    """Emits the table's record through a real LoggerProvider with its resource and scope."""
    provider = LoggerProvider(resource=Resource(case["resource"]))
    provider.add_log_record_processor(processor_or_exporter_pipeline)
    scope = case["scope"]
    logger = provider.get_logger(scope["name"], scope.get("version"))
    context = None
    if case["trace_id"]:
        span = NonRecordingSpan(SpanContext(int(case["trace_id"], 16), int(case["span_id"], 16), is_remote=False,
                                            trace_flags=TraceFlags(case["trace_flags"])))
        context = trace.set_span_in_context(span)
    number = case["severity_number"]
    logger.emit(LogRecord(timestamp=int(case["timestamp_ns"]), context=context, body=case["body"],
                          severity_number=SeverityNumber(number), severity_text=case["severity_text"],
                          attributes=case["attributes"]))
    return provider


@pytest.mark.parametrize("shape", ["processor", "exporter"])
def test_every_case_of_the_shared_table_is_stored_field_by_field(emu, shape):
    for n, case in enumerate(TABLE):
        logstore = f"otel-{shape}-{n}"
        sink = (LoghoseLogRecordProcessor(**options(emu, logstore)) if shape == "processor"
                else BatchLogRecordProcessor(LoghoseLogExporter(**options(emu, logstore))))
        provider = emit_case(case, sink)
        provider.shutdown()  # delivers and closes the producer the integration built
        [log] = stored(emu, logstore)
        assert {k: log[k] for k in FIELDS} == case["stored"], case["name"]
        assert set(log) == {*FIELDS, "__time__"}, case["name"]
        assert log["__time__"] == case["time"], case["name"]


@pytest.mark.filterwarnings("ignore:.*LoggingHandler.*:DeprecationWarning")
@pytest.mark.parametrize("bridge", ["opentelemetry-instrumentation-logging", "opentelemetry-sdk"])
def test_the_logging_bridge_in_a_real_span_read_back_by_the_official_sdk(emu, monkeypatch, bridge):
    from aliyun.log import LogClient

    if bridge == "opentelemetry-sdk":
        handler_class = LoggingHandler
    else:
        handler_class = pytest.importorskip("opentelemetry.instrumentation.logging.handler").LoggingHandler
    processor = LoghoseLogRecordProcessor(**options(emu, "bridge"))
    provider = LoggerProvider(resource=Resource({"service.name": "checkout", "host.name": "web-1", "zone": "b"}))
    provider.add_log_record_processor(processor)
    handler = handler_class(logger_provider=provider)
    log = logging.getLogger("test_otel.bridge")
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    log.propagate = False
    tracer = TracerProvider().get_tracer("t")
    try:
        with tracer.start_as_current_span("pay") as span:
            log.warning("paid %s", 42, extra={"order": "o-1", "cents": 1250})
            context = span.get_span_context()
        try:
            raise ValueError("no stock")
        except ValueError:
            log.exception("failed")
        assert processor.force_flush(10_000)
    finally:
        log.removeHandler(handler)
        provider.shutdown()
    # The SDK connects to `{project}.{endpoint}`: the emulator serves it as its HTTP proxy.
    for name in ("NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", emu.endpoint)
    monkeypatch.setenv("http_proxy", emu.endpoint)
    client = LogClient(emu.endpoint.removeprefix("http://"), emu.access_key_id, emu.access_key_secret)
    read = []
    for shard in client.list_shards("loghose", "bridge").get_shards_info():
        cursor = client.get_cursor("loghose", "bridge", shard["shardID"], "begin").get_cursor()
        pulled = client.pull_logs("loghose", "bridge", shard["shardID"], cursor, count=100)
        read += [{c.Key: c.Value for c in entry.Contents} for group in pulled.loggroup_list.LogGroups
                 for entry in group.Logs]
    paid, failed = sorted(read, key=lambda r: r["content"], reverse=True)
    assert (paid["content"], paid["severityText"], paid["severityNumber"]) == ("paid 42", "WARN", "13")
    assert (paid["service"], paid["host"], paid["resource"]) == ("checkout", "web-1", '{"zone":"b"}')
    assert (paid["traceID"], paid["spanID"]) == (format(context.trace_id, "032x"), format(context.span_id, "016x"))
    assert paid["flags"] == format(context.trace_flags, "x") != "0"
    attributes = json.loads(paid["attribute"])
    assert (attributes["order"], attributes["cents"]) == ("o-1", "1250")
    assert paid["otlp.name"] == "test_otel.bridge"
    # Outside the span: no ids; the exception's attributes as OTel's bridge sets them.
    assert (failed["traceID"], failed["spanID"], failed["severityText"]) == ("", "", "ERROR")
    attributes = json.loads(failed["attribute"])
    assert attributes["exception.type"] == "ValueError" and "no stock" in attributes["exception.stacktrace"]


def test_a_passed_producer_is_left_open_and_records_it_refuses_are_counted_and_reported_once(emu, caplog):
    producer = loghose.Producer(**options(emu, "passed"))
    processor = LoghoseLogRecordProcessor(producer=producer)
    provider = LoggerProvider(resource=Resource({}))
    provider.add_log_record_processor(processor)
    logger = provider.get_logger("s")
    logger.emit(LogRecord(body="kept"))
    provider.shutdown()
    assert not producer.closed
    assert producer.flush(10) == 0
    assert [log["content"] for log in stored(emu, "passed")] == ["kept"]
    producer.close()
    exporter = LoghoseLogExporter(producer=producer)
    batch = [type("Item", (), {"log_record": LogRecord(body=str(n)), "resource": Resource({}),
                                "instrumentation_scope": None})() for n in range(3)]
    with caplog.at_level(logging.WARNING, logger="loghose"):
        assert exporter.export(batch) == LogRecordExportResult.FAILURE
    assert exporter.failures == 3
    assert len([r for r in caplog.records if "could not be sent" in r.getMessage()]) == 1


def test_a_record_emitted_without_a_timestamp_takes_the_time_it_was_observed(emu):
    processor = LoghoseLogRecordProcessor(**options(emu, "observed"))
    provider = LoggerProvider(resource=Resource({}))
    provider.add_log_record_processor(processor)
    before = int(time.time())
    provider.get_logger("s").emit(LogRecord(body="now"))
    provider.shutdown()
    [log] = stored(emu, "observed")
    assert log["timeUnixNano"] == "0"  # as the Collector's exporter writes an unset timestamp
    assert before <= log["__time__"] <= int(time.time())


def sdk_points(reader):
    """{(instrument name, sorted attributes): value or histogram point} from an in-memory reader."""
    points = {}
    for resource_metrics in reader.get_metrics_data().resource_metrics:
        for scope_metrics in resource_metrics.scope_metrics:
            assert scope_metrics.scope.name == "loghose"
            for metric in scope_metrics.metrics:
                for point in metric.data.data_points:
                    key = (metric.name, tuple(sorted(point.attributes.items())))
                    points[key] = point if hasattr(point, "bucket_counts") else point.value
    return points


def settled_durations(reader, batches):
    """The operation-duration points by (status, error.type), once ``batches`` batches are in
    (the histogram is fed by the reports, which may trail a flush by a moment)."""
    deadline = time.monotonic() + 10
    while True:
        durations = {(dict(k[1]).get("http.response.status_code"), dict(k[1]).get("error.type")): p
                     for k, p in sdk_points(reader).items() if k[0] == "otel.sdk.exporter.operation.duration"}
        if sum(p.count for p in durations.values()) >= batches or time.monotonic() > deadline:
            return durations
        time.sleep(0.01)


def named(points, name, **attributes):
    return {dict(k[1]).get("error.type"): v for k, v in points.items()
            if k[0] == name and all(dict(k[1]).get(a) == b for a, b in attributes.items())}


def test_the_processor_reports_the_sdk_log_pipeline_metrics_under_faults(emu):
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader

    reader = InMemoryMetricReader()
    meters = MeterProvider(metric_readers=[reader])
    emu.inject("error", status=503, code="ServerBusy", count=2)
    emu.inject("error", status=400, code="ParameterInvalid", count=1)
    processor = LoghoseLogRecordProcessor(**options(emu, "metered"), batch_max_count=10, backoff_base_ms=10,
                                          meter_provider=meters)
    provider = LoggerProvider()
    provider.add_log_record_processor(processor)
    logger = provider.get_logger("metered")
    for i in range(40):
        logger.emit(LogRecord(body=f"record {i}", severity_number=SeverityNumber.INFO))
    assert processor.force_flush(30_000) is False  # a batch failed for good
    stats = processor.producer.stats()
    points = sdk_points(reader)
    kind = "loghose.otel.LoghoseLogRecordProcessor"
    component = {"otel.component.type": kind}
    host, port = processor.producer.server_address
    server = {**component, "server.address": host, "server.port": port}
    assert (host, port) == ("127.0.0.1", int(emu.endpoint.rsplit(":", 1)[1]))

    exported = named(points, "otel.sdk.exporter.log.exported", **server)
    assert exported == {None: stats["delivered"], "ParameterInvalid": stats["failed"]}
    assert stats["delivered"] == emu.totals("loghose", "metered")["logs"] == 30 and stats["failed"] == 10
    durations = settled_durations(reader, 4)
    # One observation per batch; the two 503s were retried, so every batch ends in 200 or 400.
    assert {k: p.count for k, p in durations.items()} == {(200, None): 3, (400, "ParameterInvalid"): 1}
    assert all(0 < p.sum < 30 for p in durations.values())
    assert named(points, "otel.sdk.processor.log.processed", **component) == {None: 40}
    assert named(points, "otel.sdk.processor.log.queue.size", **component) == {None: 0}
    assert named(points, "otel.sdk.exporter.log.inflight", **server) == {None: 0}
    names = {k[1] for k in points}
    assert all(dict(attributes)["otel.component.name"].startswith(f"{kind}/") for attributes in names)

    # A producer passed in and closed: records are refused as already_shutdown.
    with loghose.Producer(**options(emu, "metered")) as producer:
        passed = LoghoseLogRecordProcessor(producer=producer, meter_provider=meters)
    passed.on_emit(ReadWriteLogRecord(LogRecord(body="late")))
    provider.shutdown()
    points = sdk_points(reader)
    second = named(points, "otel.sdk.processor.log.processed",
                   **{"otel.component.name": passed._metrics.component["otel.component.name"]})
    assert second == {None: 0, "already_shutdown": 1}


def test_the_exporter_reports_its_records_in_flight_and_exported(emu):
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader

    reader = InMemoryMetricReader()
    exporter = LoghoseLogExporter(**options(emu, "exported"), request_timeout_ms=500, backoff_base_ms=10,
                                  meter_provider=MeterProvider(metric_readers=[reader]))
    emu.inject("hang", ms=2000, count=1)  # the first request times out, the retry is answered
    assert exporter.export([ReadWriteLogRecord(LogRecord(body=f"r{i}")) for i in range(5)]) \
        is LogRecordExportResult.SUCCESS
    points = sdk_points(reader)
    kind = "loghose.otel.LoghoseLogExporter"
    inflight = named(points, "otel.sdk.exporter.log.inflight", **{"otel.component.type": kind})
    assert inflight == {None: 5}
    assert not any(k[0].startswith("otel.sdk.processor") for k in points)
    assert exporter.force_flush(30_000)
    points = sdk_points(reader)
    assert named(points, "otel.sdk.exporter.log.inflight", **{"otel.component.type": kind}) == {None: 0}
    assert named(points, "otel.sdk.exporter.log.exported", **{"otel.component.type": kind}) == {None: 5}
    [duration] = settled_durations(reader, 1).values()
    assert duration.count == 1 and duration.sum >= 0.5  # the timed-out attempt is in the operation
    assert exporter.producer.stats()["retried"] == 1
    exporter.shutdown()
