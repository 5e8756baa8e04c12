"""The spool from Python, with real processes: a child sending through a producer with a
``spool_dir`` is killed (SIGKILL; TerminateProcess on Windows) at random instants, twenty
times on the same directory; every record it acknowledged must arrive once a producer is
opened on the directory again."""

from __future__ import annotations

import os
import random
import struct
import subprocess
import sys
import textwrap
import time
from collections import Counter

import loghose
import pytest

pytestmark = pytest.mark.timeout(180)

CHILD = """
    import mmap, struct, sys, time, loghose
    endpoint, key_id, secret, spool, ack, run = sys.argv[1:7]
    p = loghose.Producer(endpoint=endpoint, project="proj", logstore="spooled", access_key_id=key_id,
                         access_key_secret=secret, spool_dir=spool, linger_ms=50, batch_max_count=500)
    with open(ack, "r+b") as f:
        mark = mmap.mmap(f.fileno(), 8)
    started = time.monotonic()
    i = 0
    while True:
        try:
            p.send({"run": run, "i": str(i)})
        except loghose.BufferFullError:
            time.sleep(0.001)
            continue
        i += 1
        struct.pack_into("<Q", mark, 0, i)
        # About 50 000 a second.
        if i % 500 == 0:
            ahead = started + i / 50_000 - time.monotonic()
            if ahead > 0:
                time.sleep(ahead)
"""


def test_sigkill_twenty_times_loses_nothing_acknowledged(tmp_path):
    spool = tmp_path / "spool"
    ack = tmp_path / "ack"
    marks = []
    with loghose.Emulator() as emu:
        for run in range(20):
            ack.write_bytes(bytes(8))
            child = subprocess.Popen([sys.executable, "-c", textwrap.dedent(CHILD), emu.endpoint,
                                      emu.access_key_id, emu.access_key_secret, str(spool), str(ack), str(run)])
            time.sleep(random.uniform(0.5, 1.5))
            child.kill()  # SIGKILL; on Windows TerminateProcess: no handler, no flush runs
            child.wait(timeout=30)
            with open(ack, "rb") as f:
                marks.append(struct.unpack("<Q", f.read(8))[0])
        with loghose.Producer(**emu.producer_options("proj", "spooled"), spool_dir=str(spool)) as p:
            assert p.close(60) == 0
            stats = p.stats()
        seen = Counter((int(dict(log["contents"])["run"]), int(dict(log["contents"])["i"]))
                       for log in emu.logs("proj", "spooled"))
        lost = sum(1 for run, mark in enumerate(marks) for i in range(mark) if (run, i) not in seen)
        duplicated = sum(n - 1 for n in seen.values())
        counters = emu.counters()
    print(f"20 kills: {sum(marks)} acknowledged, {lost} lost, {duplicated} duplicated "
          f"({counters['duplicate_groups']} groups), {stats['replayed_batches']} batches replayed at the end")
    assert sum(marks) > 0
    assert lost == 0
    # A healthy disk: no sync failed, nothing sent without a durable copy.
    assert (stats["spool_sync_failures"], stats["spool_not_durable"], stats["spool_degraded"]) == (0, 0, False)
    # Duplicates only from batches in flight at a kill: at most 8 (send_concurrency) per kill.
    assert counters["duplicate_groups"] <= 20 * 8
    assert not any(p.suffix in (".spl", ".spb") for p in spool.rglob("*")), "a clean close leaves no spool file"


def test_spool_options_are_checked_and_producers_share_a_directory_in_slots(tmp_path):
    with loghose.Emulator() as emu:
        with pytest.raises(loghose.ConfigError, match="spool_sync"):
            loghose.Producer(**emu.producer_options(), spool_dir=str(tmp_path), spool_sync="sometimes")
        with pytest.raises(loghose.ConfigError, match="spool_slots"):
            loghose.Producer(**emu.producer_options(), spool_dir=str(tmp_path), spool_slots=0)
        with loghose.Producer(**emu.producer_options(), spool_dir=str(tmp_path), spool_sync="interval:100") as p:
            # A second producer takes a slot of its own; with one slot allowed it is refused,
            # by a class of its own, naming the holder.
            with loghose.Producer(**emu.producer_options(), spool_dir=str(tmp_path)) as second:
                second.send({"b": "2"})
            with pytest.raises(loghose.SpoolLockedError, match=str(os.getpid())) as refused:
                loghose.Producer(**emu.producer_options(), spool_dir=str(tmp_path), spool_slots=1)
            assert not isinstance(refused.value, loghose.ConfigError)
            p.send({"a": "1"})
        report_seen = emu.logs("loghose", "logs")
        assert sorted(tuple(log["contents"][0]) for log in report_seen) == [("a", "1"), ("b", "2")]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["slot-0", "slot-1"]
    if sys.platform != "win32":  # Windows keeps access in ACLs, not mode bits
        assert all(oct(p.stat().st_mode & 0o777) == oct(0o700) for p in [tmp_path / "slot-0", tmp_path / "slot-1"])


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_never_writes_into_its_parents_spool(tmp_path):
    spool = tmp_path / "spool"
    with loghose.Emulator() as emu:
        parent = loghose.Producer(**emu.producer_options("proj", "forked"), spool_dir=str(spool), linger_ms=60_000)
        for i in range(1000):
            parent.send({"who": "parent", "i": str(i)})
        # The spool files only: opening and closing the lock file here would drop this process's
        # POSIX record lock on it (the kernel releases it when any descriptor of it closes).
        # Files in use only (segments and batch files begin with their magic): the parent's own
        # preparer thread may make spare files meanwhile.
        def in_use() -> dict[str, bytes]:
            slot = spool / "slot-0"
            files = {p.name: p.read_bytes() for p in [*slot.glob("*.spl"), *slot.glob("*.spb")]}
            return {name: data for name, data in files.items() if data[:8] in (b"LGHSPL01", b"LGHBAT01")}

        before = in_use()
        assert before, "the parent's records are in the spool"
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child reports through its exit status
            status = 0
            try:
                parent.send({"who": "child"})
                status = 1
            except loghose.LoghoseError:
                pass
            # The parent's slot is the parent's: a producer made here takes another.
            own = loghose.Producer(**emu.producer_options("proj", "forked"), spool_dir=str(spool))
            own.send({"who": "child", "i": "-1"})
            if own.close(20) != 0:
                status = 2
            try:
                parent.flush(1)
                status = 4  # a child cannot deliver its parent's records
            except loghose.LoghoseError:
                pass
            parent.close(1)
            os._exit(status)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        # Not a byte of the spool changed in the child.
        assert in_use() == before
        assert parent.close(30) == 0
        logs = [dict(log["contents"]) for log in emu.logs("proj", "forked")]
    assert sorted(int(f["i"]) for f in logs) == list(range(-1, 1000))
    assert [f["who"] for f in logs].count("child") == 1
    assert not any(p.suffix in (".spl", ".spb") for p in spool.rglob("*"))


def test_records_a_close_leaves_in_the_spool_are_kept_not_failed(tmp_path, caplog):
    # The service hangs; close gives up after a second. With a spool, the records stay there
    # for the next producer: close says nothing was lost, stats count them as kept, the
    # future fails with KeptInSpool, and the warning says not to send them again.
    spool = str(tmp_path / "spool")
    with loghose.Emulator() as emu:
        emu.inject("hang", ms=20_000, window_ms=3_000)
        options = {**emu.producer_options("proj", "kept"), "spool_dir": spool, "linger_ms": 50,
                   "request_timeout_ms": 20_000}
        producer = loghose.Producer(**options)
        tracked = producer.send_future({"i": "tracked"})
        for i in range(99):
            producer.send({"i": str(i)})
        time.sleep(0.3)
        with caplog.at_level("WARNING", logger="loghose"):
            closed = producer.close(1)
        # Nothing lost: everything kept, and synced to disk by the close.
        assert closed == 0 and isinstance(closed, loghose.CloseResult)
        assert (closed.undelivered, closed.kept, closed.kept_not_durable) == (0, 100, 0)
        assert repr(closed).startswith("CloseResult(lost=0, undelivered=0, kept=100,"), repr(closed)
        assert str(closed) == "0"
        stats = producer.stats()
        assert (stats["failed"], stats["kept"], stats["failures_by_code"]) == (0, 99 + 1, {})
        with pytest.raises(loghose.DeliveryError) as failed:
            tracked.result(timeout=5)
        assert failed.value.code == "KeptInSpool" and failed.value.report.kept
        warned = " ".join(r.getMessage() for r in caplog.records)
        assert "99 record(s) for proj/kept were not delivered before the producer closed" in warned, warned
        assert "kept in spool_dir" in warned and "failed for good" not in warned, warned
        # Every batch settled (as kept): the slot was let go at the close, so the next producer
        # takes it (one slot only) while the closed one is still alive, and sends them.
        emu.clear_faults()
        with loghose.Producer(**options, spool_slots=1) as following:
            assert following.flush(30) == 0
        del producer
        got = Counter(dict(log["contents"])["i"] for log in emu.logs("proj", "kept"))
    assert len(got) == 100 and set(got.values()) == {1}


def test_a_close_without_a_spool_counts_what_it_gave_up_as_lost():
    # The same hang without a spool: what close gives up on is lost, and the result says so
    # both as its int and by name.
    with loghose.Emulator() as emu:
        emu.inject("hang", ms=20_000, window_ms=3_000)
        producer = loghose.Producer(**emu.producer_options("proj", "lost"), linger_ms=50,
                                    request_timeout_ms=20_000)
        for i in range(40):
            producer.send({"i": str(i)})
        time.sleep(0.3)
        closed = producer.close(1)
        assert (int(closed), closed.undelivered, closed.kept, closed.kept_not_durable) == (40, 40, 0, 0)
        assert closed.lost == 40 and closed.failed and closed.failed[0].records > 0
