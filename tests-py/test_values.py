"""The API's edges from Python: what is stored for each kind of value (the table shared with
the Node tests), all-or-nothing send_many, and configuration errors that name the option and
never show a secret."""

from __future__ import annotations

import json
from pathlib import Path

import loghose
import pytest

pytestmark = pytest.mark.timeout(120)

TABLE = json.loads((Path(__file__).parent.parent / "tests-shared" / "values.json").read_text())["values"]


@pytest.fixture()
def emu():
    with loghose.Emulator() as emulator:
        yield emulator


def producer(emu, **options):
    return loghose.Producer(**{**emu.producer_options(), "linger_ms": 20, **options})


def stored(emu, logstore="logs"):
    return [dict(log["contents"]) for log in emu.logs("loghose", logstore)]


@pytest.mark.parametrize("row", TABLE, ids=[row["name"] for row in TABLE])
def test_each_value_is_stored_as_the_shared_table_says(emu, row):
    value = eval(row["py"])  # noqa: S307 - the test table's own expressions
    with producer(emu) as p:
        p.send({"id": "dict", "v": value})
        p.send([("id", "pairs"), ("v", value)])
        p.send_many([{"id": "many", "v": value}])
        assert p.flush(30) == 0
    assert {log["id"]: log["v"] for log in stored(emu)} == {
        "dict": row["stored"], "pairs": row["stored"], "many": row["stored"]}


def test_a_lone_surrogate_in_a_key_is_stored_as_the_replacement_character(emu):
    with producer(emu) as p:
        p.send({"k\ud800": "v", "id": "key"})
        assert p.flush(30) == 0
    assert stored(emu) == [{"k\ufffd": "v", "id": "key"}]


@pytest.mark.parametrize("bad_at", [0, 2, 4])
@pytest.mark.parametrize("bad", [{"k": object()}, {"__time__": "reserved"}, {"k": b"\xff"}, 42],
                         ids=["type", "reserved-key", "not-utf8", "not-a-record"])
def test_send_many_with_a_bad_record_queues_nothing(emu, bad_at, bad):
    records = [{"id": str(i)} for i in range(5)]
    records[bad_at] = bad
    with producer(emu) as p:
        with pytest.raises((TypeError, loghose.InvalidRecordError), match=f"^record {bad_at}: "):
            p.send_many(records)
        assert p.flush(30) == 0
        stats = p.stats()
        assert (stats["accepted"], stats["invalid"]) == (0, 1)
        # The same records without the bad one go through, every one of them.
        assert p.send_many(records[:bad_at] + records[bad_at + 1:]) == 4
        assert p.flush(30) == 0
    assert sorted(log["id"] for log in stored(emu)) == [str(i) for i in range(5) if i != bad_at]


def test_send_many_is_refused_whole_when_the_buffer_has_no_room(emu):
    with producer(emu, buffer_max_bytes=2048, batch_max_bytes=1024, linger_ms=60_000) as p:
        records = [{"id": str(i), "v": "x" * 200} for i in range(20)]
        with pytest.raises(loghose.BufferFullError):
            p.send_many(records)
        stats = p.stats()
        assert (stats["accepted"], stats["dropped"]) == (0, 20)
        assert p.send_many(records[:3]) == 3
    assert len(stored(emu)) == 3


@pytest.mark.parametrize("option", ["access_key_id", "access_key_secret", "security_token", "api_key"])
def test_a_config_error_never_shows_a_secret(emu, option):
    options = {**emu.producer_options(), option: 987654321}
    with pytest.raises(loghose.ConfigError) as raised:
        loghose.Producer(**options)
    assert option in str(raised.value)
    assert "987654321" not in str(raised.value)


def test_a_config_type_error_names_the_option(emu):
    with pytest.raises(loghose.ConfigError, match="linger_ms"):
        loghose.Producer(**emu.producer_options(), linger_ms="10")


@pytest.mark.parametrize("shards", [0, 101, 4294967295])
def test_the_emulator_refuses_a_shard_count_the_service_would(emu, shards):
    with pytest.raises(loghose.ConfigError, match="1 to 100"):
        emu.create_logstore("proj", "huge", shards)
    assert emu.totals("proj", "huge") is None
    with pytest.raises(loghose.ConfigError, match="shard_count"):
        loghose.Emulator(shard_count=shards)
