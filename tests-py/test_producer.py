"""The Python front against the embedded emulator: delivery, conversions, errors, futures,
callbacks, full buffers, threads, memory, and the stubs."""

from __future__ import annotations

import ast
import concurrent.futures
import gc
import logging
import os
import sys
import threading
import time
import weakref
from pathlib import Path

import loghose
import pytest
from loghose import _native

pytestmark = pytest.mark.timeout(120)


@pytest.fixture()
def emu():
    with loghose.Emulator() as emulator:
        yield emulator


def producer(emu, **options):
    return loghose.Producer(**{**emu.producer_options(), "linger_ms": 20, "backoff_base_ms": 10,
                               "backoff_max_ms": 100, **options})


def contents(log):
    return dict(log["contents"])


def test_every_record_arrives_once_with_converted_values(emu):
    with producer(emu, topic="t", source="10.0.0.1", tags={"env": "test"}) as p:
        for i in range(1000):
            p.send({"id": str(i), "n": i, "f": 0.5, "ok": i % 2 == 0, "raw": b"bytes"})
        p.send([("id", "pairs"), ("dup", "1"), ("dup", "2")], topic="other", time=1_700_000_000.25)
        assert p.flush(30) == 0
    logs = emu.logs("loghose", "logs")
    ids = sorted(contents(log)["id"] for log in logs)
    assert ids == sorted([str(i) for i in range(1000)] + ["pairs"])
    first = next(log for log in logs if contents(log)["id"] == "7")
    assert first["contents"] == [["id", "7"], ["n", "7"], ["f", "0.5"], ["ok", "false"], ["raw", "bytes"]]
    assert (first["topic"], first["source"]) == ("t", "10.0.0.1")
    assert ["env", "test"] in first["tags"]
    pairs = next(log for log in logs if contents(log)["id"] == "pairs")
    assert pairs["contents"] == [["id", "pairs"], ["dup", "1"], ["dup", "2"]]
    assert (pairs["topic"], pairs["time"], pairs["time_ns"]) == ("other", 1_700_000_000, 250_000_000)


def test_each_route_of_send_stores_its_time_and_refuses_the_same_way(emu):
    """`send(d)` and `send(d, time=None)` take the engine's plain add (no options read);
    `send(d, time=t)` and any other keyword take the general one; a dict that needs converting
    takes the scratch path. Each must store its record with the right time, and refuse a bad
    key by name and a closed producer alike."""
    p = producer(emu, topic="routes")
    before = int(time.time())
    p.send({"id": "plain"})
    p.send({"id": "plain-none"}, time=None)
    p.send({"id": "timed"}, time=1_700_000_000.5)
    p.send({"id": "plain-scratch", "raw": b"bytes"})
    p.send({"id": "method"}, topic=None)
    for bad in ({"__time__": "1"}, ({"id": "x", "__time__": 1})):
        with pytest.raises(loghose.InvalidRecordError, match="__time__"):
            p.send(bad)
    assert p.flush(30) == 0
    after = int(time.time())
    logs = {contents(log)["id"]: log for log in emu.logs("loghose", "logs")}
    assert sorted(logs) == ["method", "plain", "plain-none", "plain-scratch", "timed"]
    assert (logs["timed"]["time"], logs["timed"]["time_ns"]) == (1_700_000_000, 500_000_000)
    for name in ("plain", "plain-none", "plain-scratch", "method"):
        assert before <= logs[name]["time"] <= after, name
        assert logs[name]["topic"] == "routes"
    assert p.stats()["invalid"] == 2
    p.close()
    for args, kwargs in (((({"id": "late"}),), {}), (({"id": "late"},), {"time": 1})):
        with pytest.raises(loghose.ProducerClosedError):
            p.send(*args, **kwargs)


def test_dicts_read_the_same_on_the_direct_path_and_the_general_one(emu):
    """A dict's str keys and values are read straight from CPython; every other value takes the
    general conversion, which may run Python code. Both must store the same fields."""

    class Text(str):
        pass

    class Loud(int):
        def __str__(self):
            # Python code during a send, logging through the same producer.
            p.send({"id": "from-__str__"})
            return "loud"

    with producer(emu) as p:
        p.send({"id": "mixed", "s": "text", "n": 5, "t": Text("sub"), "b": b"raw", "u": "日志 🚀", "e": ""})
        p.send([("id", "mixed-pairs"), ("s", "text"), ("n", 5), ("t", Text("sub")), ("b", b"raw"),
                ("u", "日志 🚀"), ("e", "")])
        p.send({"id": "loud", "v": Loud(1)})
        with pytest.raises(loghose.InvalidRecordError):
            p.send({"id": "bad", "\x00key": "v"})
        # A lone surrogate cannot be UTF-8: it is stored as U+FFFD, as the Node front does.
        p.send({"id": "surrogate", "v": "\udc80"})

        class Shrinking(int):
            def __str__(self):
                record.clear()
                return "1"

        record = {"id": "resized", "v": Shrinking(1), "w": "x"}
        with pytest.raises(RuntimeError, match="changed size"):
            p.send(record)
        assert p.flush(30) == 0
    by_id = {contents(log)["id"]: log["contents"] for log in emu.logs("loghose", "logs")}
    assert sorted(by_id) == ["from-__str__", "loud", "mixed", "mixed-pairs", "surrogate"]
    assert by_id["surrogate"] == [["id", "surrogate"], ["v", "\ufffd"]]
    expected = [["s", "text"], ["n", "5"], ["t", "sub"], ["b", "raw"], ["u", "日志 🚀"], ["e", ""]]
    assert by_id["mixed"] == [["id", "mixed"], *expected]
    assert by_id["mixed-pairs"] == [["id", "mixed-pairs"], *expected]
    assert by_id["loud"] == [["id", "loud"], ["v", "loud"]]


def test_send_takes_every_form_of_call_and_reads_every_kind_of_str(emu):
    """``send(contents)`` is a native fastcall entry that reads compact ASCII strings inline;
    every other call goes on to the full method, and other strings through CPython's UTF-8."""
    with producer(emu) as p:
        assert p.send.__name__ == "send"
        p.send({"id": "ascii", "k": "v" * 100, "empty": ""})
        p.send({"id": "kinds", "café": "é", "ÿ": "latin-1 range", "日志": "两字节", "🚀": "four 🚀 bytes"})
        p.send(contents={"id": "keyword"})
        p.send({"id": "topic"}, topic="t", time=1700000000)
        p.send([("id", "tuple-pairs")])
        with pytest.raises(TypeError):
            p.send()
        with pytest.raises(TypeError):
            p.send({"a": "1"}, {"b": "2"})
        with pytest.raises(TypeError):
            p.send({"a": "1"}, colour="blue")
        assert p.flush(30) == 0
    by_id = {contents(log)["id"]: log for log in emu.logs("loghose", "logs")}
    assert sorted(by_id) == ["ascii", "keyword", "kinds", "topic", "tuple-pairs"]
    assert by_id["ascii"]["contents"] == [["id", "ascii"], ["k", "v" * 100], ["empty", ""]]
    assert by_id["kinds"]["contents"] == [["id", "kinds"], ["café", "é"], ["ÿ", "latin-1 range"],
                                          ["日志", "两字节"], ["🚀", "four 🚀 bytes"]]
    assert (by_id["topic"]["topic"], by_id["topic"]["time"]) == ("t", 1700000000)


def test_send_many_and_destinations(emu):
    with producer(emu) as p:
        assert p.send_many([{"i": str(i)} for i in range(50)]) == 50
        p.send({"where": "elsewhere"}, logstore="other", project="proj2")
        p.send({"sharded": "yes"}, shard_key="ff")
        assert p.flush(30) == 0
    assert emu.totals("loghose", "logs")["logs"] == 51
    assert contents(emu.logs("proj2", "other")[0]) == {"where": "elsewhere"}
    sharded = next(log for log in emu.logs("loghose", "logs") if "sharded" in contents(log))
    assert sharded["shard"] == 1


def test_bad_input_raises_typed_errors_and_loses_nothing_else(emu):
    with producer(emu) as p:
        p.send({"id": "before"})
        with pytest.raises(TypeError, match="'k'|\"k\""):
            p.send({"k": object()})
        with pytest.raises(TypeError, match="key"):
            p.send({1: "v"})
        with pytest.raises(TypeError):
            p.send(42)
        with pytest.raises(loghose.InvalidRecordError, match="__time__"):
            p.send({"__time__": "x"})
        with pytest.raises(ValueError, match="UTF-8"):
            p.send({"k": b"\xff\xfe"})
        with pytest.raises(loghose.InvalidRecordError, match="limit"):
            p.send({"k": "v" * (1024 * 1024 + 1)})
        with pytest.raises(loghose.InvalidRecordError, match="shard_key"):
            p.send({"k": "v"}, shard_key="not-hex")
        with pytest.raises(TypeError, match=r"takes 1 positional argument \(contents\) but 2 were given"):
            p.send({"k": "v"}, "positional-topic")
        with pytest.raises(TypeError, match="unexpected keyword argument 'tpoic'"):
            p.send({"k": "v"}, tpoic="typo")
        with pytest.raises(TypeError, match="argument 'topic' must be str or None, not int"):
            p.send({"k": "v"}, topic=5)
        with pytest.raises(TypeError, match="multiple values for argument 'contents'"):
            p.send({"k": "v"}, contents={"k": "v"})  # type: ignore[misc]
        with pytest.raises(TypeError, match="missing 1 required argument: 'contents'"):
            p.send(topic="t")  # type: ignore[call-arg]
        p.send({"id": "after"})
        assert p.flush(30) == 0
        assert p.stats()["invalid"] >= 5
    assert sorted(contents(log)["id"] for log in emu.logs("loghose", "logs")) == ["after", "before"]


def test_config_errors_name_the_key(emu):
    with pytest.raises(loghose.ConfigError, match="lingerMs"):
        loghose.Producer(**emu.producer_options(), lingerMs=5)
    with pytest.raises(loghose.ConfigError, match="batch_max_count"):
        loghose.Producer(**emu.producer_options(), batch_max_count=0)
    with pytest.raises(loghose.ConfigError, match="desktop"):
        loghose.Producer.from_preset("desktop", **emu.producer_options())
    with pytest.raises(TypeError):
        loghose.Producer(emu.endpoint)  # keyword-only


def test_futures_resolve_with_reports_and_fail_with_delivery_errors(emu):
    with producer(emu) as p:
        futures = [p.send_future({"i": str(i)}) for i in range(20)]
        reports = [f.result(timeout=30) for f in concurrent.futures.as_completed(futures, timeout=30)]
        assert all(r.delivered and r.attempts == 1 and len(r.request_id) == 24 for r in reports)
        assert sum(len(set(r.tickets) & set(range(1, 21))) > 0 for r in reports) >= 1
    with loghose.Emulator(auto_create=False) as strict:
        with producer(strict) as p:
            failed = p.send_future({"i": "x"})
            with pytest.raises(loghose.DeliveryError) as info:
                failed.result(timeout=30)
            assert (info.value.code, info.value.http_status, info.value.attempts) == ("ProjectNotExist", 404, 1)
            assert info.value.request_id


def test_on_delivery_gets_report_batches_and_survives_a_raising_callback(emu, caplog):
    seen = []
    calls = []
    first_call = threading.Event()

    def on_delivery(reports):
        calls.append(threading.current_thread() is threading.main_thread())
        if len(calls) == 1:
            first_call.set()
            raise RuntimeError("user bug")
        seen.extend(reports)

    with caplog.at_level(logging.ERROR, logger="loghose"):
        with producer(emu, on_delivery=on_delivery, linger_ms=0) as p:
            p.send({"first": "1"})
            assert p.flush(30) == 0
            # flush() waits for delivery, not for the callback: the reporter thread may hand
            # the first report over together with later ones unless it has run already.
            assert first_call.wait(30)
            for i in range(10):
                p.send({"i": str(i)})
            assert p.flush(30) == 0
        # close() waited for the reporter thread, so every callback has run by now.
        assert p.stats()["callback_errors"] == 1
    assert sum(r.records for r in seen) == 10
    assert not any(calls), "reports arrive on the producer's reporter thread, not the caller's"
    assert "on_delivery callback raised" in caplog.text


def test_full_buffer_raises_at_once_or_after_blocking(emu):
    emu.inject("hang", ms=3000, count=100)
    small = {"batch_max_bytes": 1024, "buffer_max_bytes": 4096, "linger_ms": 0, "request_timeout_ms": 5000}
    # A compressed batch gives back what its body does not use of its reservation: values that
    # do not compress keep the buffer full until a batch settles, which the hang delays.
    value = os.urandom(450).hex()
    with producer(emu, **small) as p:
        with pytest.raises(loghose.BufferFullError) as info:
            for _ in range(100):
                p.send({"v": value})
        assert isinstance(info.value, BufferError)
        assert "4096" in str(info.value)
        assert p.stats()["dropped"] == 1
        p.close(timeout=0.1)
    with producer(emu, max_block_ms=200, **small) as p:
        with pytest.raises(loghose.BufferFullError, match="waited"):
            for _ in range(100):
                p.send({"v": value})
        p.close(timeout=0.1)
    emu.clear_faults()


def test_a_batch_stored_then_refused_is_retried_and_counted_as_a_duplicate(emu):
    emu.inject("store_then_error", count=1)
    with producer(emu, linger_ms=0) as p:
        p.send({"id": "once"})
        assert p.flush(10) == 0
    counters = emu.counters()
    assert (counters["accepted_requests"], counters["duplicate_groups"]) == (2, 1)
    logs = emu.logs("loghose", "logs")
    assert [contents(log)["id"] for log in logs] == ["once", "once"]
    assert len({dict(log["tags"])["__pack_id__"] for log in logs}) == 1


def test_records_that_fail_with_nobody_told_are_warned_about_once_with_the_cause(caplog):
    caplog.set_level(logging.WARNING, logger="loghose")
    options = dict(endpoint="http://127.0.0.1:9", project="proj", logstore="logs", access_key_id="id",
                   access_key_secret="secret", max_attempts=1, linger_ms=10)
    p = loghose.Producer(**options)
    for i in range(10):
        p.send({"i": str(i)})
    # flush tells "gave up" from "all delivered": the ten failed since the previous flush...
    assert p.flush(20) == 10
    # ...and only those: the next flush has nothing new to report.
    assert p.flush(20) == 0
    assert p.close(5) == 10
    warnings = [r for r in caplog.records if r.name == "loghose" and r.levelno == logging.WARNING]
    assert len(warnings) == 1, [r.getMessage() for r in warnings]
    text = warnings[0].getMessage()
    assert "10 record(s) for proj/logs failed for good" in text, text
    assert "127.0.0.1:9" in text and "refused" in text.lower(), text
    # Told through a callback or a future: no warning.
    caplog.clear()
    told = []
    with loghose.Producer(**options, on_delivery=told.extend) as q:
        q.send({"i": "x"})
        with pytest.raises(loghose.DeliveryError):
            q.send_future({"i": "y"}).result(timeout=20)
    assert told and not [r for r in caplog.records if r.name == "loghose"]


def test_closed_producer_refuses_records(emu):
    p = producer(emu)
    p.send({"a": "1"})
    assert p.close(10) == 0
    assert p.closed
    with pytest.raises(loghose.ProducerClosedError):
        p.send({"a": "2"})
    assert p.close(1) == 0  # idempotent


def test_eight_threads_send_at_once(emu):
    with producer(emu) as p:
        def work(t):
            for i in range(2000):
                p.send({"t": str(t), "i": str(i)})

        threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert p.flush(60) == 0
    keys = {(contents(log)["t"], contents(log)["i"]) for log in emu.logs("loghose", "logs")}
    assert len(keys) == 16_000


def rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    import resource  # Unix only; Linux reads /proc above

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


@pytest.mark.skipif(sys.platform == "win32", reason="reads RSS from /proc or getrusage")
def test_a_million_sends_keep_memory_stable():
    with loghose.Emulator(retention_bytes=8 << 20) as emu:
        with producer(emu, max_block_ms=60_000, linger_ms=200) as p:
            record = {"msg": "a fairly ordinary log line with some text", "level": "INFO"}
            for _ in range(100_000):
                p.send(record)
            p.flush(60)
            gc.collect()
            warm = rss_mb()
            for _ in range(900_000):
                p.send(record)
            assert p.flush(120) == 0
            gc.collect()
            after = rss_mb()
            assert p.stats()["delivered"] == 1_000_000
        assert emu.counters()["logs"] == 1_000_000
    assert after - warm < 40, f"RSS grew from {warm:.1f} MB to {after:.1f} MB"


def test_stubs_match_the_native_module():
    stub = ast.parse((Path(loghose.__file__).parent / "_native.pyi").read_text(encoding="utf-8"))
    for node in stub.body:
        if isinstance(node, ast.FunctionDef):
            assert callable(getattr(_native, node.name)), node.name
        if isinstance(node, ast.ClassDef):
            cls = getattr(_native, node.name)
            for member in node.body:
                if isinstance(member, (ast.FunctionDef, ast.AnnAssign)):
                    name = member.name if isinstance(member, ast.FunctionDef) else member.target.id
                    if name != "__init__":
                        assert hasattr(cls, name), f"{node.name}.{name} is in the stub but not the module"
    public = {n for n in dir(_native) if not n.startswith("_")}
    stubbed = {n.name for n in stub.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    assert public <= stubbed, f"not in the stub: {public - stubbed}"


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="counts threads through /proc")
def test_producers_no_longer_referenced_are_collected_with_their_threads(emu):
    # A notebook cell `p = loghose.Producer(...)` run again and again: each old producer must go,
    # threads and all, and deliver what it held on the way out.
    import weakref

    # The engine's shared I/O threads start with the first producer and stay for the process.
    loghose.Producer(**emu.producer_options("proj", "recreated")).close()
    gc.collect()
    time.sleep(0.2)
    threads_before = len(os.listdir("/proc/self/task"))
    refs = []
    started = time.monotonic()
    for i in range(20):
        p = loghose.Producer(**emu.producer_options("proj", "recreated"), linger_ms=60_000)
        p.send({"i": str(i)})
        refs.append(weakref.ref(p))
    del p
    gc.collect()
    assert [r for r in refs if r() is not None] == []
    deadline = time.monotonic() + 10
    while len(os.listdir("/proc/self/task")) > threads_before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(os.listdir("/proc/self/task")) <= threads_before
    # Dropping delivers (within drop_timeout_ms) without waiting on the GIL it holds.
    assert time.monotonic() - started < 10
    assert sorted(int(dict(log["contents"])["i"]) for log in emu.logs("proj", "recreated")) == list(range(20))


def test_outside_a_notebook_the_objects_read_well_and_a_live_view_prints_lines(capsys):
    with loghose.Emulator() as emu:
        producer = loghose.Producer(**emu.producer_options("demo", "plain"), linger_ms=20)
        assert repr(producer) == f"<loghose.Producer demo/plain at {emu.endpoint}, open>"
        with pytest.raises(ValueError, match="interval"):
            producer.live_view(0)
        with producer.live_view(0.05):
            for i in range(100):
                producer.send({"i": str(i)})
            assert producer.flush(10) == 0
        lines = capsys.readouterr().err.strip().splitlines()
        assert len(lines) >= 2 and lines[0].startswith("LiveView(delivered: 0"), lines
        assert lines[-1].startswith("LiveView(delivered: 100,"), lines
        stats = producer.stats()
        assert isinstance(stats, dict) and stats["delivered"] == 100
        assert repr(stats).startswith("Stats(accepted=100, delivered=100, failed=0, kept=0")
        assert "<table>" in stats._repr_html_()
        producer.close(5)
        assert repr(producer).endswith(", closed>")


def test_a_live_view_left_running_never_keeps_its_producer_alive(capsys):
    # A notebook cell re-run makes a new producer; the old one's view, never stopped, must not
    # keep it (and its threads) alive: the view holds it weakly and ends when it is collected.
    with loghose.Emulator() as emu:
        producer = loghose.Producer(**emu.producer_options("demo", "weak"), linger_ms=20)
        view = producer.live_view(0.05)
        producer.send({"msg": "one"})
        assert producer.flush(10) == 0
        assert view.refresh() is True
        collected = weakref.ref(producer)
        del producer
        gc.collect()
        assert collected() is None, "the view kept the producer alive"
        view._thread.join(timeout=5)
        assert not view._thread.is_alive(), "the view's thread ended with its producer"
        # Gone: the view shows what it last read.
        assert view.refresh() is False
        assert repr(view).startswith("LiveView(delivered: 1,"), repr(view)
