"""The producer's metrics through a real ``prometheus_client`` registry, served over HTTP by
``prometheus_client``'s own server and read back with its text parser, under faults: counts
agree with ``stats()`` and with what the emulator stored; retries and failures show by status
and error code; a producer gone leaves the registry empty."""

from __future__ import annotations

import gc
import urllib.request

import loghose
import loghose.prometheus
import pytest
from prometheus_client import CollectorRegistry, start_http_server
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
