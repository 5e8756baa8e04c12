"""What one ``logger.info("...", extra={5 fields})`` costs the application, by handler.

Handlers, each in its own phase, phases alternated round by round in one run:

- ``null``: ``logging.NullHandler`` (the cost of ``logging`` itself);
- ``file``: ``logging.FileHandler`` writing a formatted line with the same fields to a local
  file (flushed per record, as ``FileHandler`` does);
- ``loghose``: ``loghose.logging.LoghoseHandler`` sending to the emulator;
- ``loghose-python``: the same, with its fields built in Python (a subclass's ``fields``, which
  turns the native record path off): what the native path saves;
- ``vendor``: the official SDK's ``QueuedLogHandler`` (aliyun-log-python-sdk) sending to the
  emulator (skipped when the SDK is not installed);
- ``otel-noop``: OpenTelemetry's logging bridge into a ``LoggerProvider`` with
  ``BatchLogRecordProcessor`` and an exporter that does nothing (the floor OTel itself sets;
  its queue drops what overflows, counted as lost);
- ``otel-loghose``: the same bridge into ``loghose.otel.LoghoseLogRecordProcessor``;
- ``structlog-drop``: ``structlog`` (``log.info("...", **5 fields)``, with ``add_log_level`` and
  ``TimeStamper(fmt=None)``) ending in a processor that drops the event (structlog's floor);
- ``structlog-loghose``: the same chain ending in ``LoghoseProcessor(drop=True)``;
- ``loguru-null``: ``loguru`` (``logger.info("...", **5 fields)``) into a sink that does nothing;
- ``loguru-loghose``: the same into ``loghose.loguru.LoghoseSink`` (the structlog and loguru
  kinds are skipped when their package is not installed);
- ``otel-export``: the same bridge into ``BatchLogRecordProcessor(LoghoseLogExporter)``
  (the otel kinds are skipped when ``opentelemetry-sdk`` is not installed).

The emulator runs in a child process at nice 10 (it stands in for the remote service, whose
CPU is not the application's). Per phase: ``--records`` calls in a tight loop on the main
thread, timed by wall clock (µs per call, what the caller waits) and by process CPU time (µs
per call, including the handler's own threads: compression, HTTP). After the timed loop, the
handler is closed (not timed) and the emulator's totals say how many records arrived.

    .venv/bin/python lab/python/logging_handlers.py --rounds 5 --records 20000
    .venv/bin/python lab/python/logging_handlers.py --kinds otel-noop,otel-loghose,otel-export
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import sys
import tempfile
import time
from typing import Any

from loghose.logging import LoghoseHandler
from loghose_lab import ChildEmulator

PROJECT = "bench-logging"
EXTRA = {"user": "u-12345", "path": "/api/v1/items", "status": 200, "elapsed_ms": 12.5,
         "trace_id": "4bf92f3577b34da6a3ce929d0e0e4736"}
FILE_FORMAT = ("%(asctime)s %(levelname)s %(name)s %(module)s %(funcName)s %(lineno)d %(thread)d %(process)d "
               "%(message)s user=%(user)s path=%(path)s status=%(status)s elapsed_ms=%(elapsed_ms)s "
               "trace_id=%(trace_id)s")


class PythonFieldsHandler(LoghoseHandler):
    """``LoghoseHandler`` with its fields built in Python, each record a dict."""

    def fields(self, record: logging.LogRecord) -> dict[str, Any]:
        return super().fields(record)


def make_handler(kind: str, emu: ChildEmulator, logstore: str, directory: str) -> logging.Handler:
    if kind == "null":
        return logging.NullHandler()
    if kind == "file":
        handler = logging.FileHandler(os.path.join(directory, f"{logstore}.log"))
        handler.setFormatter(logging.Formatter(FILE_FORMAT))
        return handler
    if kind == "loghose":
        return LoghoseHandler(**emu.options, project=PROJECT, logstore=logstore, close_timeout=60)
    if kind == "loghose-python":
        return PythonFieldsHandler(**emu.options, project=PROJECT, logstore=logstore, close_timeout=60)
    if kind == "vendor":
        from aliyun.log import QueuedLogHandler

        host = emu.endpoint.removeprefix("http://")
        vendor = QueuedLogHandler(host, emu.options["access_key_id"], emu.options["access_key_secret"], PROJECT,
                                  logstore, close_wait=30)
        # The SDK connects to {project}.{endpoint}, which nothing resolves: the emulator serves
        # proxy-form requests, so it is made the SDK's HTTP proxy (its session only).
        vendor.create_client()
        vendor.client._session.proxies = {"http": emu.endpoint}
        return vendor
    if kind.startswith("otel-"):
        return otel_handler(kind, emu, logstore)
    raise ValueError(kind)


class OtelBridge(logging.Handler):
    """OpenTelemetry's logging bridge over a provider of its own: closing it shuts the provider
    down (delivering what its processor holds); ``exported`` counts what a no-op exporter saw."""

    def __init__(self, handler: logging.Handler, provider: Any, exported: list[int]) -> None:
        super().__init__()
        self.handler, self.provider, self.exported = handler, provider, exported
        self.handle = handler.handle  # type: ignore[method-assign]

    def close(self) -> None:
        self.provider.shutdown()
        super().close()


def otel_handler(kind: str, emu: ChildEmulator, logstore: str) -> logging.Handler:
    from loghose.otel import LoghoseLogExporter, LoghoseLogRecordProcessor
    from opentelemetry.instrumentation.logging.handler import LoggingHandler
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import BatchLogRecordProcessor, LogRecordExporter, LogRecordExportResult
    from opentelemetry.sdk.resources import Resource

    exported = [0]

    class NoOpExporter(LogRecordExporter):
        def export(self, batch: Any) -> LogRecordExportResult:
            exported[0] += len(batch)
            return LogRecordExportResult.SUCCESS

        def shutdown(self) -> None:
            pass

        def force_flush(self, timeout_millis: int = 30000) -> bool:
            return True

    options = {**emu.options, "project": PROJECT, "logstore": logstore, "close_timeout": 60}
    processor = {
        "otel-noop": lambda: BatchLogRecordProcessor(NoOpExporter()),
        "otel-loghose": lambda: LoghoseLogRecordProcessor(**options),
        "otel-export": lambda: BatchLogRecordProcessor(LoghoseLogExporter(**options)),
    }[kind]()
    provider = LoggerProvider(resource=Resource.create({"service.name": "bench"}))
    provider.add_log_record_processor(processor)
    return OtelBridge(LoggingHandler(logger_provider=provider), provider, exported)


def library_phase(kind: str, emu: ChildEmulator, logstore: str, records: int) -> dict[str, Any]:
    """A structlog or loguru phase (see the module text)."""
    options = {**emu.options, "project": PROJECT, "logstore": logstore, "close_timeout": 60}
    extra = EXTRA
    close: Any
    if kind.startswith("structlog-"):
        import structlog
        from loghose.structlog import LoghoseProcessor

        def drop(logger: Any, method_name: str, event_dict: Any) -> Any:
            raise structlog.DropEvent

        last: Any = LoghoseProcessor(drop=True, **options) if kind == "structlog-loghose" else drop
        close = getattr(last, "close", lambda: None)
        log = structlog.wrap_logger(None, processors=[structlog.processors.add_log_level,
                                                      structlog.processors.TimeStamper(fmt=None), last])
        call = log.info
    else:
        from loghose.loguru import LoghoseSink
        from loguru import logger

        logger.remove()
        sink_id = logger.add(LoghoseSink(**options) if kind == "loguru-loghose" else (lambda message: None))
        call = logger.info

        def close() -> None:
            logger.remove(sink_id)

    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(records):
        call("request handled", **extra)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    close()
    received = emu.received(PROJECT, logstore) if kind.endswith("-loghose") else records
    return {"us_wall": wall / records * 1e6, "us_cpu": cpu / records * 1e6, "lost": records - received}


def phase(kind: str, emu: ChildEmulator, logstore: str, records: int, directory: str) -> dict[str, Any]:
    if kind.startswith(("structlog-", "loguru-")):
        return library_phase(kind, emu, logstore, records)
    logger = logging.getLogger(f"bench.{logstore}")
    logger.propagate = False
    logger.setLevel(logging.INFO)
    handler = make_handler(kind, emu, logstore, directory)
    logger.addHandler(handler)
    info = logger.info
    extra = EXTRA
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(records):
        info("request handled", extra=extra)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    logger.removeHandler(handler)
    handler.flush()  # the vendor handler's flush stops its worker once its queue is sent
    handler.close()
    if kind == "otel-noop":
        received = handler.exported[0]  # type: ignore[attr-defined]
    elif kind in ("loghose", "loghose-python", "vendor") or kind.startswith("otel-"):
        received = emu.received(PROJECT, logstore)
    else:
        received = records
    return {"us_wall": wall / records * 1e6, "us_cpu": cpu / records * 1e6, "lost": records - received}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--kinds", default="null,file,loghose,vendor")
    args = parser.parse_args(argv)
    kinds = args.kinds.split(",")
    if any(k.startswith("otel-") for k in kinds):
        try:
            import opentelemetry.instrumentation.logging.handler  # noqa: F401
            import opentelemetry.sdk._logs  # noqa: F401
        except ImportError:
            print("opentelemetry-sdk or opentelemetry-instrumentation-logging is not installed: the otel kinds are "
                  "skipped", file=sys.stderr)
            kinds = [k for k in kinds if not k.startswith("otel-")]
    for library in ("structlog", "loguru"):
        if any(k.startswith(library + "-") for k in kinds):
            try:
                __import__(library)
            except ImportError:
                print(f"{library} is not installed: its kinds are skipped", file=sys.stderr)
                kinds = [k for k in kinds if not k.startswith(library + "-")]
    if "vendor" in kinds:
        try:
            import aliyun.log  # noqa: F401
        except ImportError:
            print("aliyun-log-python-sdk is not installed: the vendor handler is skipped", file=sys.stderr)
            kinds.remove("vendor")
    emu = ChildEmulator()
    results: dict[str, list[dict[str, Any]]] = {k: [] for k in kinds}
    try:
        with tempfile.TemporaryDirectory() as directory:
            for round_no in range(args.rounds):
                order = kinds if round_no % 2 == 0 else kinds[::-1]
                for kind in order:
                    results[kind].append(phase(kind, emu, f"{kind}-{round_no}", args.records, directory))
    finally:
        emu.close()
    median = {k: {m: statistics.median(r[m] for r in rows) for m in ("us_wall", "us_cpu")}
              for k, rows in results.items()}
    print(f"logger.info (or structlog's, loguru's) with 5 extra fields, {args.records} calls per phase, "
          f"{args.rounds} rounds alternated (median, range)")
    print()
    print("| handler | µs per call (caller's wall clock) | µs of process CPU per call | lost |")
    print("|---|---:|---:|---:|")
    for kind, rows in results.items():
        walls = [r["us_wall"] for r in rows]
        cpus = [r["us_cpu"] for r in rows]
        print(f"| {kind} | {median[kind]['us_wall']:.2f} ({min(walls):.2f}–{max(walls):.2f}) | "
              f"{median[kind]['us_cpu']:.2f} ({min(cpus):.2f}–{max(cpus):.2f}) | {sum(r['lost'] for r in rows)} |")
    print()
    for ours, other in (("loghose", "null"), ("loghose-python", "null"), ("loghose", "file"),
                        ("loghose", "vendor"), ("otel-loghose", "otel-noop"),
                        ("otel-export", "otel-noop"), ("structlog-loghose", "structlog-drop"),
                        ("loguru-loghose", "loguru-null")):
        if ours in median and other in median:
            print(f"{ours} / {other}: {median[ours]['us_wall'] / median[other]['us_wall']:.2f} "
                  f"(wall), {median[ours]['us_cpu'] / median[other]['us_cpu']:.2f} (CPU)")
    # What loghose loses fails the run; what the others drop is only reported.
    ours = ("loghose", "loghose-python", "otel-loghose", "otel-export", "structlog-loghose", "loguru-loghose")
    return 1 if any(r["lost"] for kind in ours for r in results.get(kind, [])) else 0


if __name__ == "__main__":
    sys.exit(main())
