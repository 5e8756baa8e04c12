"""The lab's scenarios from Python (``loghose_lab``) (short versions): each one's correctness check holds (every
log added is counted at the emulator, none lost, none duplicated), and its rows carry the
figures the scenario reports. Timings are not asserted here; BENCHMARKS.md records them."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import loghose_lab as bench
import pytest

pytestmark = pytest.mark.timeout(240)


def checked(row: dict) -> None:
    assert (row["lost"], row["duplicates"], row.get("pending", 0)) == (0, 0, 0), row


def test_s1r_sends_the_pools_access_logs_and_loses_none():
    rows = bench.run("s1r", rates=[2000], seconds=2, unthrottled_seconds=1, progress=False)
    rate, unthrottled = rows
    checked(rate)
    checked(unthrottled)
    assert (rate["scenario"], unthrottled["scenario"]) == ("s1r", "s1r")
    assert rate["received"] == 4000 and unthrottled["received"] > 0
    # About 240 bytes of keys and values a log (S1's average is about 450).
    assert 400 < rate["raw_kb_s"] < 550, rate
    bench._S1R.load()
    assert len(bench._S1R.pool) == 4096 and len({r["request_id"] for r in bench._S1R.pool}) == 4096
    sent = []
    bench.add_s1r_pair(sent.append, 2048)
    assert [r["request_id"][:12] for r in sent] == [f"{4096:012x}", f"{4097:012x}"]
    assert {k: v for k, v in sent[0].items() if k != "request_id"} == {
        k: v for k, v in bench._S1R.pool[0].items() if k != "request_id"}


def test_s2_pi_preset_pinned_to_one_core_with_memory_growth():
    rows = bench.run("s2", rates=[100, 4000], seconds=2, instructions=False, progress=False)
    assert [r["rate"] for r in rows] == [100, 4000]
    for row in rows:
        checked(row)
        assert row["preset"] == "pi" and row["pinned_core"] == 0
        assert row["received"] == row["rate"] * 2
        assert row["rss_growth_mb"] < row["rss_mb"] and row["us_per_send"] > 0
        assert row["instructions_per_send"] is None


def test_s2_instructions_per_send_counted_by_callgrind():
    pytest.importorskip("shutil").which("valgrind") or pytest.skip("valgrind is not installed")
    per_send = bench.instructions_per_send("pi", 400)
    # CPython building two dicts and the native call: more than a few hundred instructions,
    # far less than a millisecond's worth.
    assert per_send is not None and 500 < per_send < 100_000, per_send


def test_s4_open_batches_flush_at_their_linger_and_are_refilled():
    rows = bench.run("s4", open_batches=[3000], lingers_ms=[500, 60_000], seconds=2, progress=False)
    short, long = rows
    for row in rows:
        checked(row)
        assert row["open_batches"] == 3000 and row["received"] == row["adds"]
        assert row["bytes_per_open_batch"] >= 0 and row["us_per_add"] > 0
    # Linger 0.5 s over 2 s: refilled at 0.5, 1.0 and 1.5 s; linger 60 s: never.
    assert short["refills"] == 3 and short["adds"] == 4 * 3000, short
    assert long["refills"] == 0 and long["adds"] == 3000, long


def test_s5_fleet_backlog_latency_and_idle_tenants():
    rows = bench.run("s5", devices=5000, rates=[3000], seconds=3, tenants=400, sample_every=10, progress=False)
    fleet, tenants = rows
    checked(fleet)
    assert fleet["received"] == 9000 and len(fleet["backlog"]) == 3
    assert fleet["backlog_trend_per_s"] == pytest.approx(bench._slope(fleet["backlog"]))
    assert fleet["latency_samples"] == 900 and 0 < fleet["latency_p50_ms"] <= fleet["latency_p99_ms"]
    checked(tenants)
    assert tenants["tenants"] == 400 and tenants["received"] == 400
    # Enough tenants that their memory outweighs what the fleet's producer gave back meanwhile
    # (with 40, the difference could come out negative).
    assert 0 < tenants["kb_per_idle_producer"] < 200, tenants
    # Idle producers hold no thread of their own (the I/O threads are the engine's, shared).
    assert tenants["threads_per_producer"] <= 0, tenants


def test_s5_devices_as_source():
    [fleet] = bench.run("s5", devices=300, rates=[600], seconds=2, key="source", tenants=0, progress=False)
    checked(fleet)
    assert fleet["key"] == "source" and fleet["received"] == 1200


def test_s6_payload_latency_per_size_and_codecs():
    rows = bench.run("s6", sizes=[1024, 256 << 10], count=4, codec_rounds=2, progress=False)
    sizes = [r for r in rows if "size" in r]
    assert [r["size"] for r in sizes] == [1024, 256 << 10]
    assert all(0 < r["latency_p50_ms"] <= r["latency_p99_ms"] for r in sizes)
    [check] = [r for r in rows if r.get("check") == "payload"]
    checked(check)
    assert check["received"] == 8
    codecs = {r["codec"]: r for r in rows if "codec" in r}
    assert set(codecs) == {"none", "lz4", "zstd", "deflate"}
    assert codecs["none"]["ratio"] == pytest.approx(1.0, abs=0.01)
    # Text like real logs: compresses, but nothing like S1's 100:1.
    assert 3 < codecs["lz4"]["ratio"] < 8 and codecs["zstd"]["ratio"] > codecs["lz4"]["ratio"]


def test_backlog_trend_is_the_least_squares_slope():
    assert bench._slope([5, 5, 5, 5]) == 0
    assert bench._slope([0, 10, 20, 30]) == pytest.approx(10)
    # A sawtooth around a flat line (a backlog that keeps up) has almost no trend.
    assert abs(bench._slope([0, 100, 200, 0, 100, 200, 0, 100, 200])) < 20
    assert bench._slope([7]) == 0


def test_compress_gives_the_bytes_the_producer_sends():
    import lz4.block
    from loghose import _native

    data = bench.payload(100_000).encode()
    packed = _native.compress("lz4", data)
    assert isinstance(packed, bytes) and len(packed) < len(data) / 3
    assert lz4.block.decompress(packed, uncompressed_size=len(data)) == data
    assert _native.compress("none", data) == data
    with pytest.raises(ValueError, match="gzip"):
        _native.compress("gzip", data)


def test_payload_is_seeded_and_sized():
    assert bench.payload(5000) == bench.payload(5000)
    assert len(bench.payload(12345)) == 12345


def test_bad_scenario_and_parameter_are_named():
    with pytest.raises(ValueError, match="unknown scenario 's3'"):
        bench.run("s3")
    with pytest.raises(TypeError, match="scenario s2 has no parameter 'rate'"):
        bench.run("s2", rate=5)


def test_cli_json_and_bad_parameter():
    result = subprocess.run([sys.executable, "-m", "loghose_lab", "--scenario", "s4", "--json",
                             "--param", "open_batches=[500]", "--param", "lingers_ms=[60000]", "--seconds", "1"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    import json

    [row] = json.loads(result.stdout)
    assert row["open_batches"] == 500 and row["lost"] == 0
    bad = subprocess.run([sys.executable, "-m", "loghose_lab", "--scenario", "s6", "--param", "speed=3"],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "scenario s6 has no parameter 'speed'" in bad.stderr


def test_rows_to_frame():
    rows = bench.Rows([{"rate": 1, "lost": 0}, {"rate": 2, "lost": 0}])
    try:
        import pandas  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="pip install pandas"):
            rows.to_frame()
        return
    frame = rows.to_frame()
    assert list(frame["rate"]) == [1, 2]


def test_text_progress_bar_when_asked(monkeypatch):
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)  # as if tqdm were not installed
    bar = bench._Progress(True)
    bar.update("s2 100 logs/s", 1, 2)
    bar.update("s2 100 logs/s", 2, 2)
    assert "[###############...............] 1/2" in err.getvalue() and err.getvalue().endswith("2/2\n")
    quiet = bench._Progress(False)
    quiet.update("x", 1, 1)
    assert err.getvalue().count("\n") == 1


def test_a_scenario_that_breaks_raises_with_the_childs_error():
    broke = r"(?s)scenario s5 failed \(exit status 3\).*s5 key must be shard_key or source"
    with pytest.raises(RuntimeError, match=broke):
        bench.run("s5", devices=10, rates=[10], seconds=1, key="tenant", tenants=0, progress=False)


def test_tqdm_progress_when_installed(monkeypatch):
    pytest.importorskip("tqdm")
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    bar = bench._Progress(True)
    assert bar.tqdm is not None
    bar.update("s4 batches", 1, 3)
    bar.update("s4 batches", 3, 3)
    assert bar.bars["s4 batches"].n == 3 and bar.bars["s4 batches"].total == 3
    bar.close()
    # Not on a terminal, not in a notebook, not asked: nothing is drawn.
    assert bench._Progress(None).enabled is ("ipykernel" in sys.modules)


def test_an_interrupted_run_stops_its_scenario(monkeypatch):
    started = []
    real_popen = subprocess.Popen

    def popen(*args, **kwargs):
        child = real_popen(*args, **kwargs)
        started.append(child)
        return child

    monkeypatch.setattr(subprocess, "Popen", popen)

    class Interrupt(Exception):
        pass

    def interrupt(self, **progress):
        raise Interrupt

    monkeypatch.setattr(bench._Progress, "update", interrupt)
    with pytest.raises(Interrupt):
        bench.run("s4", open_batches=[100], lingers_ms=[60_000], seconds=60, progress=True)
    # The child was stopped at the first progress event, not left to run its 60 s.
    assert started[0].poll() is not None


def test_the_logging_handlers_benchmark_runs_every_phase_and_loses_nothing():
    # A short run: that every phase builds, sends and is counted (the figures are BENCHMARKS.md's).
    script = Path(__file__).resolve().parent.parent / "logging_handlers.py"
    done = subprocess.run([sys.executable, str(script), "--rounds", "1", "--records", "300", "--kinds",
                           "null,loghose,vendor,otel-noop,otel-loghose,otel-export"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    for kind in ("loghose", "vendor", "otel-noop", "otel-loghose", "otel-export"):
        assert f"| {kind} |" in done.stdout and done.stdout.split(f"| {kind} |")[1].split("\n")[0].endswith("| 0 |")
