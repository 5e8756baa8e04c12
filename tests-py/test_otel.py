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
from opentelemetry.sdk._logs import LoggerProvider, LoggingHandler  # noqa: E402
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
