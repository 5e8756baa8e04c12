"""`loghose otlp` measured: records per CPU-second of the receiver process for the OTLP/HTTP
exporters' default batch (512 records, protobuf, as the official Python exporter encodes them),
the round trip of each request (p50, p99: what the receiver adds in front of an exporter), and
the receiver's resident memory at rest and after the load; beside it, in the same run, the same
records emitted in process through the Python SDK into ``LoghoseLogRecordProcessor`` (CPU of
this process per record, the SDK's own work included).

The receiver is the installed package's command (``python -m loghose otlp``); the emulator runs
in this process, so the receiver's CPU is its own. Every record is counted at the emulator; a
run that loses one fails. Needs the official exporters' packages (``target/otlp-exporters``,
installed by ``bash scripts/test.sh python-env``) for the protobuf encoding.

    PYTHONPATH=lab/python .venv/bin/python lab/python/otlp_receiver.py [--seconds 5] [--rounds 3]
"""

from __future__ import annotations

import argparse
import http.client
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "target" / "otlp-exporters"))

import loghose  # noqa: E402
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest  # noqa: E402
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, InstrumentationScope, KeyValue  # noqa: E402
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord, ResourceLogs, ScopeLogs  # noqa: E402
from opentelemetry.proto.resource.v1.resource_pb2 import Resource  # noqa: E402

BATCH = 512


def text(value: str) -> AnyValue:
    return AnyValue(string_value=value)


def request_body() -> bytes:
    """512 access-log records, as an SDK's batch of them is encoded."""
    now = time.time_ns()
    records = [
        LogRecord(time_unix_nano=now + i, severity_number=9, severity_text="INFO",
                  body=text(f"GET /api/v1/orders/{i} HTTP/1.1 200 512 0.{i % 1000:03d}"),
                  attributes=[KeyValue(key="http.method", value=text("GET")),
                              KeyValue(key="http.status_code", value=AnyValue(int_value=200)),
                              KeyValue(key="client.address", value=text(f"10.0.{i % 256}.{i % 200}"))],
                  trace_id=i.to_bytes(16, "big"), span_id=(i + 1).to_bytes(8, "big"), flags=1)
        for i in range(BATCH)
    ]
    resource = Resource(attributes=[KeyValue(key="service.name", value=text("checkout")),
                                    KeyValue(key="host.name", value=text("box-1"))])
    return ExportLogsServiceRequest(resource_logs=[ResourceLogs(
        resource=resource, scope_logs=[ScopeLogs(scope=InstrumentationScope(name="app"), log_records=records)])],
    ).SerializeToString()


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mb(pid: int, field: str = "VmRSS") -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return 0.0


def receiver_round(seconds: float, body: bytes) -> dict[str, float]:
    with loghose.Emulator(retention_bytes=64 << 20) as emu:
        env = {**os.environ, "LOGHOSE_ENDPOINT": emu.endpoint, "LOGHOSE_PROJECT": "lab",
               "LOGHOSE_LOGSTORE": "otlp", "ALIBABA_CLOUD_ACCESS_KEY_ID": emu.access_key_id,
               "ALIBABA_CLOUD_ACCESS_KEY_SECRET": emu.access_key_secret}
        argv = [sys.executable, "-m", "loghose", "otlp", "--http-addr", "127.0.0.1:0", "--grpc-addr", "off"]
        child = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, text=True)
        try:
            host, port = child.stdout.readline().strip().removeprefix("http://").split(":")
            time.sleep(0.5)
            rest = rss_mb(child.pid)
            cpu_before = cpu_seconds(child.pid)
            conn = http.client.HTTPConnection(host, int(port), timeout=30)
            latencies, sent = [], 0
            deadline = time.monotonic() + seconds
            while time.monotonic() < deadline:
                started = time.perf_counter()
                conn.request("POST", "/v1/logs", body, {"Content-Type": "application/x-protobuf"})
                answer = conn.getresponse()
                answer.read()
                latencies.append(time.perf_counter() - started)
                if answer.status != 200:
                    raise SystemExit(f"the receiver answered {answer.status}")
                sent += BATCH
            conn.request("POST", "/flush?timeout_ms=60000", b"")
            flushed = conn.getresponse()
            flushed.read()
            if flushed.status != 200:
                raise SystemExit("the flush did not complete")
            cpu = cpu_seconds(child.pid) - cpu_before
            loaded, peak = rss_mb(child.pid), rss_mb(child.pid, "VmHWM")
        finally:
            child.terminate()
            child.wait(timeout=60)
        stored = (emu.totals("lab", "otlp") or {}).get("logs", 0)
    if stored != sent:
        raise SystemExit(f"{sent} records sent, {stored} stored")
    latencies.sort()
    return {"records_per_cpu_s": sent / cpu, "requests_per_s": len(latencies) / seconds,
            "p50_ms": 1000 * latencies[len(latencies) // 2], "p99_ms": 1000 * latencies[int(len(latencies) * 0.99)],
            "rss_rest_mb": rest, "rss_loaded_mb": loaded, "rss_peak_mb": peak}


def in_process_round(records: int) -> float:
    """Records per CPU-second of this process through the SDK and the in-process processor."""
    from loghose.otel import LoghoseLogRecordProcessor
    from opentelemetry._logs import LogRecord as SdkRecord
    from opentelemetry._logs import SeverityNumber
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk.resources import Resource as SdkResource

    with loghose.Emulator(retention_bytes=64 << 20) as emu:
        provider = LoggerProvider(resource=SdkResource.create({"service.name": "checkout", "host.name": "box-1"}))
        provider.add_log_record_processor(LoghoseLogRecordProcessor(**emu.producer_options("lab", "inproc")))
        logger = provider.get_logger("app")
        started = time.process_time()
        for i in range(records):
            logger.emit(SdkRecord(body=f"GET /api/v1/orders/{i} HTTP/1.1 200 512 0.{i % 1000:03d}",
                                  severity_number=SeverityNumber.INFO, severity_text="INFO",
                                  attributes={"http.method": "GET", "http.status_code": 200,
                                              "client.address": f"10.0.{i % 256}.{i % 200}"}))
        provider.shutdown()
        cpu = time.process_time() - started
        stored = (emu.totals("lab", "inproc") or {}).get("logs", 0)
    if stored != records:
        raise SystemExit(f"{records} records emitted, {stored} stored")
    return records / cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    body = request_body()
    rows, in_process = [], []
    for _ in range(args.rounds):
        rows.append(receiver_round(args.seconds, body))
        in_process.append(in_process_round(100_000))
    print(f"batches of {BATCH} records, {len(body)} bytes, {args.rounds} rounds of {args.seconds:g} s; medians (range)")
    for key in rows[0]:
        values = [row[key] for row in rows]
        print(f"  receiver {key}: {statistics.median(values):,.1f} ({min(values):,.1f}-{max(values):,.1f})")
    print(f"  in-process processor records_per_cpu_s: {statistics.median(in_process):,.0f} "
          f"({min(in_process):,.0f}-{max(in_process):,.0f})")


if __name__ == "__main__":
    main()
