"""`loghose otlp`, the OpenTelemetry logs receiver, against the emulator: the official Python
OTLP exporters (``opentelemetry-exporter-otlp-proto-http`` and ``-grpc``, plain and gzip) send
through it while the same records go through the in-process ``LoghoseLogRecordProcessor``;
both must store the same fields. Then OTLP/JSON by hand, hostile bodies and gRPC messages
answered 4xx or an error code without harm to the receiver, backpressure answered 429 and
``RESOURCE_EXHAUSTED`` with a retry delay, the flush route, the token beyond loopback, and a
SIGTERM that delivers what is held.

The exporter runs in a child process with ``target/otlp-exporters`` first on its path
(installed there by scripts/test.sh's python-env step from tests-py/requirements-otlp.txt):
its protobuf is newer than the one the official Log Service SDK in this environment accepts."""

from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import sys
import textwrap
import urllib.error
import urllib.request
from pathlib import Path

import loghose
import pytest
from conftest import reaped

pytestmark = pytest.mark.timeout(120)

ROOT = Path(__file__).resolve().parent.parent
EXPORTERS = ROOT / "target" / "otlp-exporters"


def receiver(emu: loghose.Emulator, logstore: str, *extra: str, env: dict[str, str] | None = None):
    """Starts `loghose otlp` on free loopback ports; answers the process, its OTLP/HTTP base URL
    and its OTLP/gRPC endpoint (the first two lines it writes)."""
    environment = {
        **os.environ,
        "LOGHOSE_ENDPOINT": emu.endpoint,
        "LOGHOSE_PROJECT": "loghose",
        "LOGHOSE_LOGSTORE": logstore,
        "ALIBABA_CLOUD_ACCESS_KEY_ID": emu.access_key_id,
        "ALIBABA_CLOUD_ACCESS_KEY_SECRET": emu.access_key_secret,
        **(env or {}),
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "loghose", "otlp", "--http-addr", "127.0.0.1:0", "--grpc-addr", "127.0.0.1:0",
         "--option", "linger_ms=50", *extra],
        env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    url = process.stdout.readline().strip()
    assert url.startswith("http://127.0.0.1:"), (url, process.stderr.read() if process.poll() is not None else "")
    grpc_url = process.stdout.readline().strip()
    assert grpc_url.startswith("http://127.0.0.1:") and grpc_url != url, grpc_url
    return process, url, grpc_url


def post(url: str, body: bytes, content_type: str = "application/x-protobuf", **headers: str):
    """POSTs `body`; answers (status, body, headers) whatever the status."""
    request = urllib.request.Request(url, data=body, method="POST",
                                     headers={"Content-Type": content_type, **headers})
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(request, timeout=30) as resp:
            return resp.status, resp.read(), resp.headers
    except urllib.error.HTTPError as e:
        return e.code, e.read(), e.headers


def stored(emu: loghose.Emulator, logstore: str) -> list[dict[str, str]]:
    return [dict(log["contents"]) for log in emu.logs("loghose", logstore)]


CHILD = """
    import sys
    from opentelemetry import trace
    from opentelemetry._logs import LogRecord, SeverityNumber
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from loghose.otel import LoghoseLogRecordProcessor

    url, endpoint, key_id, secret, protocol, compression = sys.argv[1:7]
    if protocol == "grpc":
        import grpc
        from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter
        exporter = OTLPLogExporter(endpoint=url, insecure=True, compression=(
            grpc.Compression.Gzip if compression == "gzip" else grpc.Compression.NoCompression))
    else:
        from opentelemetry.exporter.otlp.proto.http import Compression
        from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
        exporter = OTLPLogExporter(endpoint=url + "/v1/logs", compression=Compression(compression))
    provider = LoggerProvider(resource=Resource.create(
        {"service.name": "checkout", "host.name": "box-1", "zone": "cn-hangzhou-h", "cpus": 4}))
    provider.add_log_record_processor(BatchLogRecordProcessor(exporter))
    provider.add_log_record_processor(LoghoseLogRecordProcessor(
        endpoint=endpoint, project="loghose", logstore="inproc", access_key_id=key_id,
        access_key_secret=secret, linger_ms=50))
    logger = provider.get_logger("shop.payments", "1.2.3")
    tracer = TracerProvider().get_tracer("t")
    bodies = ["plain <text> & more", {"order": 7, "items": ["a", 1.5, None, True]}, ["x", 2],
              None, b"raw bytes", 42, 3.0, 1e20, "ünïcödé \\u2028"]
    attributes = {"user": "ann", "n": 3, "ratio": 0.25, "ok": False, "tags": ["a", "b"],
                  "big": 1e-7, "raw": b"\\x00\\x01"}
    for i, body in enumerate(bodies):
        with tracer.start_as_current_span(f"span-{i}"):
            logger.emit(LogRecord(body=body, severity_number=SeverityNumber.WARN, severity_text="WARN",
                                  attributes={**attributes, "i": i}))
    logger.emit(LogRecord(body="outside a span", attributes={"i": len(bodies)}))
    provider.force_flush()
    provider.shutdown()
    print("sent", len(bodies) + 1)
"""


def exporters_env() -> dict[str, str]:
    """The environment of a child that imports the exporters (skips where they are missing)."""
    if not EXPORTERS.is_dir():
        message = f"{EXPORTERS} is missing: bash scripts/test.sh python-env installs the exporters"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    # Installed for the main environment's interpreter; another (the newest runtimes' run of the
    # suite) may not load their compiled parts.
    installed_for = (EXPORTERS / ".python-version").read_text().strip()
    running = f"{sys.version_info[0]}.{sys.version_info[1]}"
    if installed_for != running:
        pytest.skip(f"the exporters in {EXPORTERS} are installed for Python {installed_for}, not {running}")
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(EXPORTERS), *sys.path[1:]])}


def run_exporter(url: str, emu: loghose.Emulator, protocol: str, compression: str) -> None:
    child = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(CHILD), url, emu.endpoint, emu.access_key_id,
         emu.access_key_secret, protocol, compression],
        env=exporters_env(), capture_output=True, text=True, timeout=60)
    assert child.returncode == 0, child.stderr
    assert child.stdout.strip() == "sent 10"


@pytest.mark.parametrize("protocol", ["http", "grpc"])
@pytest.mark.parametrize("compression", ["none", "gzip"])
def test_the_official_exporter_stores_what_the_in_process_processor_stores(protocol, compression):
    with loghose.Emulator() as emu:
        process, url, grpc_url = receiver(emu, "received")
        with reaped(process):
            run_exporter(grpc_url if protocol == "grpc" else url, emu, protocol, compression)
            status, body, _ = post(url + "/flush?timeout_ms=20000", b"", "application/json")
            assert status == 200, body
            assert json.loads(body)["pending"] == 0
            received = stored(emu, "received")
            in_process = stored(emu, "inproc")
            process.send_signal(signal.SIGTERM)
            assert process.wait(timeout=30) == 0, process.stderr.read()
    assert len(received) == 10
    key = lambda fields: int(json.loads(fields["attribute"])["i"])  # noqa: E731
    assert sorted(received, key=key) == sorted(in_process, key=key)
    first = sorted(received, key=key)[0]
    assert (first["service"], first["host"], first["otlp.name"], first["otlp.version"]) == (
        "checkout", "box-1", "shop.payments", "1.2.3")
    assert first["content"] == "plain <text> & more"
    assert len(first["traceID"]) == 32 and len(first["spanID"]) == 16
    assert {f["content"] for f in received} >= {"", "42", "100000000000000000000"}


def delimited(tag: int, inner: bytes) -> bytes:
    """A length-delimited protobuf field: `tag` (field number and wire type 2), then `inner`."""
    length, n = bytearray(), len(inner)
    while n >= 0x80:
        length.append(n & 0x7F | 0x80)
        n >>= 7
    return bytes([tag, *length, n]) + inner


def test_otlp_json_and_hostile_bodies(tmp_path):
    with loghose.Emulator() as emu:
        process, url, _ = receiver(emu, "json", "--max-body-bytes", "65536", "--max-decoded-bytes", "1048576",
                                "--max-elements", "100000")
        with reaped(process):
            request = {"resourceLogs": [{
                "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "api"}}]},
                "scopeLogs": [{"scope": {"name": "json-scope"}, "logRecords": [
                    {"timeUnixNano": "1700000000123456789", "severityNumber": 17, "severityText": "ERROR",
                     "body": {"stringValue": "from JSON"},
                     "attributes": [{"key": "count", "value": {"intValue": "12"}}],
                     "traceId": "5b8efff798038103d269b633813fc60c", "spanId": "eee19b7ec3c1b174"},
                    {"observedTimeUnixNano": "1700000001000000000"},
                ]}]}]}
            status, body, headers = post(url + "/v1/logs", json.dumps(request).encode(), "application/json")
            assert status == 200, body
            assert headers["Content-Type"] == "application/json"
            assert "rejectedLogRecords" not in body.decode()
            # Hostile or wrong: each refused by status, the receiver unharmed.
            bomb = gzip.compress(bytes(8 << 20))
            # 300 000 empty attributes of one record: 600 KB that would decode to tens of MB.
            attributes = b"\x32\x00" * 300_000
            many = delimited(0x0A, delimited(0x12, delimited(0x12, attributes)))
            refusals = [
                (post(url + "/v1/logs", b"\x0a\xff\xff\xff\xff\x0f"), 400),  # truncated protobuf
                (post(url + "/v1/logs", b"{not json", "application/json"), 400),
                (post(url + "/v1/logs", b"x", "text/plain"), 415),
                (post(url + "/v1/logs", b"x", "application/x-protobuf", **{"Content-Encoding": "br"}), 415),
                (post(url + "/v1/logs", bomb, "application/x-protobuf", **{"Content-Encoding": "gzip"}), 413),
                (post(url + "/v1/logs", bytes(70_000)), 413),
                (post(url + "/v1/logs", gzip.compress(many), **{"Content-Encoding": "gzip"}), 413),
                (post(url + "/v1/logs", b"[" * 5000 + b"]" * 5000, "application/json"), 400),
                (post(url + "/elsewhere", b""), 404),
            ]
            assert [got[0] for got, _ in refusals] == [want for _, want in refusals], [
                (got[0], got[1][:100]) for got, _ in refusals]
            status, body, _ = post(url + "/flush", b"")
            assert status == 200 and json.loads(body)["pending"] == 0, body
            fields = sorted(stored(emu, "json"), key=lambda f: f["timeUnixNano"], reverse=True)
            assert [f["content"] for f in fields] == ["from JSON", ""]
            assert fields[0]["service"] == "api" and fields[0]["otlp.name"] == "json-scope"
            assert fields[0]["attribute"] == '{"count":"12"}'
            assert fields[0]["traceID"] == "5b8efff798038103d269b633813fc60c"
            assert (fields[0]["severityNumber"], fields[0]["severityText"]) == ("17", "ERROR")
            logs = emu.logs("loghose", "json")
            times = sorted(log["time"] for log in logs)
            assert times == [1700000000, 1700000001]
            process.send_signal(signal.SIGTERM)
            assert process.wait(timeout=30) == 0


def test_beyond_loopback_a_token_is_required_and_checked():
    with loghose.Emulator() as emu:
        base = {"LOGHOSE_ENDPOINT": emu.endpoint, "LOGHOSE_PROJECT": "loghose", "LOGHOSE_LOGSTORE": "tokened",
                "ALIBABA_CLOUD_ACCESS_KEY_ID": emu.access_key_id,
                "ALIBABA_CLOUD_ACCESS_KEY_SECRET": emu.access_key_secret}
        refused = subprocess.run([sys.executable, "-m", "loghose", "otlp", "--http-addr", "0.0.0.0:0"],
                                 env={**os.environ, **base}, capture_output=True, text=True, timeout=30)
        assert refused.returncode == 2 and "--token" in refused.stderr
        process, url, _ = receiver(emu, "tokened", "--token", "s3cret")
        with reaped(process):
            empty = b"{}"
            assert post(url + "/v1/logs", empty, "application/json")[0] == 401
            assert post(url + "/v1/logs", empty, "application/json", Authorization="Bearer wrong")[0] == 401
            assert post(url + "/v1/logs", empty, "application/json", Authorization="Bearer s3cret")[0] == 200
            process.send_signal(signal.SIGTERM)
            assert process.wait(timeout=30) == 0


def otlp_json(first: int, count: int) -> bytes:
    """An OTLP/JSON request of `count` records whose bodies are `first`, `first + 1`, ..."""
    records = [{"body": {"stringValue": str(i)}} for i in range(first, first + count)]
    return json.dumps({"resourceLogs": [{"scopeLogs": [{"logRecords": records}]}]}).encode()


def test_every_record_answered_200_survives_a_sigkill_with_a_spool(tmp_path):
    spool = f"spool_dir={tmp_path / 'spool'}"
    with loghose.Emulator() as emu:
        # The service hangs: nothing is delivered before the kill; every 200 is the spool's.
        emu.inject("hang", ms=600_000)
        process, url, _ = receiver(emu, "killed", "--option", spool)
        with reaped(process):
            for n in range(20):
                status, body, _ = post(url + "/v1/logs", otlp_json(n * 50, 50), "application/json")
                assert status == 200, body
            process.send_signal(signal.SIGKILL)
            process.wait(timeout=30)
        assert emu.totals("loghose", "killed") is None
        emu.clear_faults()
        # The next receiver on the spool delivers them (replayed as it starts; its stop waits
        # for them), and goes on receiving.
        process, url, _ = receiver(emu, "killed", "--option", spool)
        with reaped(process):
            assert post(url + "/v1/logs", otlp_json(1000, 1), "application/json")[0] == 200
            process.send_signal(signal.SIGTERM)
            assert process.wait(timeout=30) == 0, process.stderr.read()
        bodies = sorted(int(fields["content"]) for fields in stored(emu, "killed"))
    assert bodies == list(range(1001))


def test_records_are_routed_by_a_resource_attribute():
    def request(resources: list[dict]) -> bytes:
        return json.dumps({"resourceLogs": [
            {"resource": {"attributes": attributes}, "scopeLogs": [{"logRecords": [{"body": {"stringValue": body}}]}]}
            for attributes, body in resources]}).encode()

    with loghose.Emulator() as emu:
        process, url, _ = receiver(emu, "fallback", "--logstore-attribute", "sls.logstore")
        with reaped(process):
            routed = [
                ([{"key": "sls.logstore", "value": {"stringValue": "orders"}}], "to orders"),
                ([{"key": "sls.logstore", "value": {"stringValue": "payments"}}], "to payments"),
                ([{"key": "service.name", "value": {"stringValue": "other"}}], "to the configured one"),
            ]
            status, body, _ = post(url + "/v1/logs", request(routed), "application/json")
            assert status == 200 and b"rejected" not in body, body
            # A logstore name the service would refuse: that record is rejected and said so.
            status, body, _ = post(url + "/v1/logs", request(
                [([{"key": "sls.logstore", "value": {"stringValue": "Not A Logstore!"}}], "refused")]),
                "application/json")
            assert status == 200 and json.loads(body)["partialSuccess"]["rejectedLogRecords"] == "1", body
            assert post(url + "/flush", b"")[0] == 200
            stores = ("orders", "payments", "fallback")
            contents = {store: [f["content"] for f in stored(emu, store)] for store in stores}
            process.send_signal(signal.SIGTERM)
            # A rejected record is a lost one: the exit status says so.
            assert process.wait(timeout=30) == 1
    assert contents == {"orders": ["to orders"], "payments": ["to payments"], "fallback": ["to the configured one"]}


# Calls LogsService/Export with raw bytes through grpcio (the exporters' gRPC), in a child with the
# exporters' path: each call of the JSON list on stdin answers [code name, RetryInfo seconds].
GRPC_CALLS = """
    import json, sys, grpc
    target = sys.argv[1]
    EXPORT = "/opentelemetry.proto.collector.logs.v1.LogsService/Export"
    RETRY_INFO = b"type.googleapis.com/google.rpc.RetryInfo"
    answers = []
    with grpc.insecure_channel(target) as channel:
        for call in json.load(sys.stdin):
            method = channel.unary_unary(call.get("method", EXPORT))
            compression = grpc.Compression.Gzip if call.get("gzip") else None
            try:
                method(bytes.fromhex(call["body"]), timeout=20, compression=compression,
                       metadata=[(k, v) for k, v in call.get("metadata", {}).items()])
                answers.append(["OK", None])
            except grpc.RpcError as e:
                details = dict(e.trailing_metadata() or ()).get("grpc-status-details-bin", b"")
                # RetryInfo { retry_delay { seconds } }: the seconds are the details' last byte.
                retry = details[-1] if RETRY_INFO in details else None
                answers.append([e.code().name, retry])
    print(json.dumps(answers))
"""


def grpc_calls(grpc_url: str, calls: list[dict]) -> list[list]:
    child = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(GRPC_CALLS), grpc_url.removeprefix("http://")],
        input=json.dumps(calls), env=exporters_env(), capture_output=True, text=True, timeout=60)
    assert child.returncode == 0, child.stderr
    return json.loads(child.stdout)


def protobuf_request(bodies: list[str]) -> bytes:
    """An ExportLogsServiceRequest of one record per body (LogRecord.body: AnyValue.string_value)."""
    records = b"".join(delimited(0x12, delimited(0x2A, delimited(0x0A, b.encode()))) for b in bodies)
    return delimited(0x0A, delimited(0x12, records))


TRACES = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"


def test_grpc_refusals_say_what_is_wrong_and_whether_to_retry():
    with loghose.Emulator() as emu:
        process, url, grpc_url = receiver(emu, "viagrpc", "--token", "s3cret", "--max-decoded-bytes", "1048576",
                                          "--max-elements", "100000")
        with reaped(process):
            token = {"authorization": "Bearer s3cret"}
            many = delimited(0x0A, delimited(0x12, delimited(0x12, b"\x32\x00" * 300_000)))
            calls = [
                ({"body": protobuf_request(["one", "two"]).hex(), "metadata": token}, ["OK", None]),
                ({"body": protobuf_request(["gz"]).hex(), "metadata": token, "gzip": True}, ["OK", None]),
                ({"body": protobuf_request(["no token"]).hex()}, ["UNAUTHENTICATED", None]),
                ({"body": "0affffffff0f", "metadata": token}, ["INVALID_ARGUMENT", None]),
                # Too many elements, or too large: refused, and not to be retried (no RetryInfo).
                ({"body": many.hex(), "metadata": token, "gzip": True}, ["RESOURCE_EXHAUSTED", None]),
                ({"body": bytes(2 << 20).hex(), "metadata": token}, ["RESOURCE_EXHAUSTED", None]),
                ({"body": bytes(4 << 20).hex(), "metadata": token, "gzip": True}, ["RESOURCE_EXHAUSTED", None]),
                ({"body": "", "metadata": token, "method": TRACES}, ["UNIMPLEMENTED", None]),
            ]
            answers = grpc_calls(grpc_url, [call for call, _ in calls])
            assert answers == [want for _, want in calls]
            status, body, _ = post(url + "/flush", b"", Authorization="Bearer s3cret")
            assert status == 200, body
            assert sorted(f["content"] for f in stored(emu, "viagrpc")) == ["gz", "one", "two"]
            process.send_signal(signal.SIGTERM)
            assert process.wait(timeout=30) == 0, process.stderr.read()


def test_backpressure_is_answered_with_a_retry_delay_never_queued():
    """The service hangs and the buffer is small: once it is full, a request whose first record
    finds no room within max_block_ms is refused whole (429 with Retry-After; gRPC
    RESOURCE_EXHAUSTED with a RetryInfo), so that the exporter sends it again; nothing of it was
    taken. When the service answers again, everything that was accepted is delivered."""
    with loghose.Emulator() as emu:
        emu.inject("hang", ms=600_000)
        process, url, grpc_url = receiver(
            emu, "pressed", "--option", "buffer_max_bytes=20000", "--option", "batch_max_bytes=10000",
            "--option", "max_block_ms=50",
            # Requests the hung service holds time out and are sent again until it answers.
            "--option", "request_timeout_ms=1000", "--option", "backoff_max_ms=300", "--option", "max_attempts=1000")
        with reaped(process):
            accepted, refused = 0, None
            for n in range(100):
                status, body, headers = post(url + "/v1/logs", otlp_json(n * 50, 50), "application/json")
                if status == 429:
                    refused = headers
                    break
                assert status == 200, body
                accepted += 50 - int(json.loads(body).get("partialSuccess", {}).get("rejectedLogRecords", 0))
            assert refused is not None and refused["Retry-After"] == "1"
            assert 0 < accepted < 5000
            answers = grpc_calls(grpc_url, [{"body": protobuf_request(["refused"]).hex()}])
            assert answers == [["RESOURCE_EXHAUSTED", 1]]
            emu.clear_faults()
            status, body, _ = post(url + "/flush?timeout_ms=60000", b"")
            assert status == 200, body
            assert json.loads(body)["delivered"] == accepted
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=30)
        contents = [f["content"] for f in stored(emu, "pressed")]
    assert len(contents) == accepted and "refused" not in contents
