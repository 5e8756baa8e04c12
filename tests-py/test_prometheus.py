"""The producer's metrics through a real ``prometheus_client`` registry, served over HTTP by
``prometheus_client``'s own server and read back with its text parser, under faults: counts
agree with ``stats()`` and with what the emulator stored; retries and failures show by status
and error code; a producer gone leaves the registry empty. The engine's own rendering
(``metrics_text``, ``loghose.prometheus.start_http_server``) exposes the same samples."""

from __future__ import annotations

import gc
import time
import urllib.error
import urllib.request

import loghose
import loghose.prometheus
import pytest
from prometheus_client import CollectorRegistry, Counter, generate_latest, start_http_server
from prometheus_client.parser import text_string_to_metric_families

pytestmark = pytest.mark.timeout(120)


@pytest.fixture()
def emu():
    with loghose.Emulator() as emulator:
        yield emulator


def scrape(port: int) -> dict[str, list]:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(f"http://127.0.0.1:{port}/metrics", timeout=10) as resp:
        text = resp.read().decode()
    return {f.name: f.samples for f in text_string_to_metric_families(text)}


def value(samples, name: str, **labels: str) -> float:
    return sum(s.value for s in samples if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()))


def test_a_scraped_registry_agrees_with_stats_and_the_emulator_under_faults(emu):
    registry = CollectorRegistry()
    server, thread = start_http_server(0, addr="127.0.0.1", registry=registry)
    port = server.server_port
    try:
        emu.inject("error", status=503, code="ServerBusy", count=2)
        emu.inject("error", status=400, code="ParameterInvalid", count=1)
        with loghose.Producer(**{**emu.producer_options(), "linger_ms": 20, "backoff_base_ms": 10,
                                 "batch_max_count": 10}) as p:
            loghose.prometheus.register(p, registry)
            for i in range(50):
                p.send({"id": str(i)}, logstore="other" if i % 5 == 0 else None)
            with pytest.raises(loghose.InvalidRecordError):
                p.send({"": "no key"})
            p.flush(30)
            stats = p.stats()
            families = scrape(port)

            delivered = families["loghose_records_delivered"]
            assert value(delivered, "loghose_records_delivered_total") == stats["delivered"]
            stored = sum((emu.totals("loghose", ls) or {"logs": 0})["logs"] for ls in ("logs", "other"))
            assert stats["delivered"] == stored
            assert value(delivered, "loghose_records_delivered_total", logstore="other") == \
                (emu.totals("loghose", "other") or {"logs": 0})["logs"]
            failed = families["loghose_records_failed"]
            assert value(failed, "loghose_records_failed_total", error_code="ParameterInvalid") == stats["failed"] == 10
            assert stats["delivered"] + stats["failed"] == 50
            retries = families["loghose_request_retries"]
            assert value(retries, "loghose_request_retries_total") == stats["retried"] == 2
            durations = families["loghose_request_duration_seconds"]
            assert value(durations, "loghose_request_duration_seconds_count", status="503") == 2
            assert value(durations, "loghose_request_duration_seconds_count", status="400") == 1
            inf = value(durations, "loghose_request_duration_seconds_bucket", le="+Inf")
            assert inf == value(durations, "loghose_request_duration_seconds_count") >= 7
            refused = families["loghose_records_refused"]
            assert value(refused, "loghose_records_refused_total", reason="invalid") == stats["invalid"] == 1
            assert value(families["loghose_records_accepted"], "loghose_records_accepted_total") == 50
            assert value(families["loghose_buffer_capacity_bytes"], "loghose_buffer_capacity_bytes") > 0
            latency = families["loghose_delivery_latency_seconds"]
            assert value(latency, "loghose_delivery_latency_seconds_count") == stats["batches_delivered"]
        del p
        gc.collect()
        assert "loghose_records_delivered" not in scrape(port)
    finally:
        server.shutdown()
        thread.join(10)


def test_every_metric_of_the_table_is_described_with_its_unit_and_help(emu):
    registry = CollectorRegistry()
    with loghose.Producer(**emu.producer_options()) as p:
        collector = loghose.prometheus.register(p, registry, const_labels={"producer": "audit"})
        described = {m.name: m for m in collector.describe()}
        snapshot = p.metrics()
        assert [f["name"] for f in snapshot] == list(described)
        for family in snapshot:
            metric = described[family["name"]]
            assert metric.documentation == family["help"]
            assert metric.unit == family["unit"]
        p.send({"id": "1"})
        p.flush(10)
        samples = [s for m in registry.collect() for s in m.samples]
        delivered = [s for s in samples if s.name == "loghose_records_delivered_total"]
        assert delivered and all(s.labels["producer"] == "audit" for s in delivered)
        # A second collector of the same names would clash: the registry refuses it.
        with pytest.raises(ValueError, match="Duplicated"):
            loghose.prometheus.register(p, registry, const_labels={"producer": "audit"})
        registry.unregister(collector)


def series(text: str) -> dict[tuple, float]:
    """Every sample of a text exposition by name and labels (``le`` as a number)."""
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            labels = {k: (str(float(v)) if k == "le" else v) for k, v in s.labels.items()}
            out[(s.name, tuple(sorted(labels.items())))] = s.value
    return out


def test_the_engine_rendering_is_what_the_collector_yields(emu):
    """``metrics_text`` (the fast route) and the prometheus_client collector expose the same
    samples with the same values, callback errors caught in Python included."""
    def failing_callback(reports):
        raise RuntimeError("a callback that fails")

    emu.inject("error", status=503, code="ServerBusy", count=1)
    options = {**emu.producer_options(), "linger_ms": 20, "backoff_base_ms": 10}
    with loghose.Producer(**options, on_delivery=failing_callback) as p:
        for i in range(30):
            p.send({"id": str(i)}, logstore="other" if i % 3 == 0 else None)
        p.flush(30)
        # Reports reach the callback on the dispatcher's thread after flush returns: wait until
        # the count stops growing, so that both routes read the same numbers.
        errors = -1
        while errors != p.stats()["callback_errors"]:
            errors = p.stats()["callback_errors"]
            time.sleep(0.2)
        registry = CollectorRegistry()
        loghose.prometheus.register(p, registry, const_labels={"producer": "audit"})
        through_client = series(generate_latest(registry).decode())
        engine = series(p.metrics_text({"producer": "audit"}))
        assert engine == through_client
        stats = p.stats()
        assert stats["callback_errors"] >= 1
        assert engine[("loghose_report_callback_errors_total", (("producer", "audit"),))] == stats["callback_errors"]
        retries = sum(v for (name, _), v in engine.items() if name == "loghose_request_retries_total")
        assert retries == stats["retried"] == 1


def test_start_http_server_serves_the_producer_then_the_registry(emu):
    registry = CollectorRegistry()
    jobs = Counter("app_jobs", "Jobs the application ran.", registry=registry)
    jobs.inc(7)
    with loghose.Producer(**emu.producer_options()) as p:
        for name in ("logstore", "le", "9x", "__x"):
            with pytest.raises(ValueError, match=repr(name).replace("'", '"')):
                loghose.prometheus.start_http_server(p, 0, "127.0.0.1", registry, const_labels={name: "v"})
        server, thread = loghose.prometheus.start_http_server(p, 0, "127.0.0.1", registry,
                                                              const_labels={"producer": "audit"})
        try:
            p.send({"id": "1"})
            p.flush(10)
            url = f"http://127.0.0.1:{server.server_port}/metrics"
            opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
            with opener.open(url, timeout=10) as resp:
                assert resp.headers["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"
                scraped = series(resp.read().decode())
            labels = (("logstore", "logs"), ("producer", "audit"), ("project", "loghose"))
            key = ("loghose_records_delivered_total", labels)
            assert scraped[key] == p.stats()["delivered"] == 1
            assert scraped[("app_jobs_total", ())] == 7
            request = urllib.request.Request(url, method="POST", data=b"")
            with pytest.raises(urllib.error.HTTPError, match="405"):
                opener.open(request, timeout=10)
            with opener.open(urllib.request.Request(url, method="HEAD"), timeout=10) as resp:
                assert resp.status == 200 and resp.read() == b""
        finally:
            p.close()
    del p
    gc.collect()
    try:
        with opener.open(url, timeout=10) as resp:
            after = series(resp.read().decode())
        # The producer gone: the registry's metrics alone.
        assert not [name for name, _ in after if name.startswith("loghose_")]
        assert after[("app_jobs_total", ())] == 7
    finally:
        server.shutdown()
        thread.join(10)
