"""The API's edges from Python: what is stored for each kind of value (the table shared with
the Node tests), all-or-nothing send_many, and configuration errors that name the option and
never show a secret."""

from __future__ import annotations

import datetime
import decimal
import enum
import json
import pathlib
import uuid
from pathlib import Path

import loghose
import pytest

pytestmark = pytest.mark.timeout(120)

TABLE_FILE = Path(__file__).parent.parent / "tests-shared" / "values.json"
TABLE = json.loads(TABLE_FILE.read_text(encoding="utf-8"))["values"]


@pytest.fixture()
def emu():
    with loghose.Emulator() as emulator:
        yield emulator


def producer(emu, **options):
    return loghose.Producer(**{**emu.producer_options(), "linger_ms": 20, **options})


def stored(emu, logstore="logs"):
    return [dict(log["contents"]) for log in emu.logs("loghose", logstore)]


def test_a_float_is_stored_as_repr_writes_it_at_every_magnitude(emu):
    # Every way in: a dict, pairs, a logging record's extra (its native path).
    import logging
    import random
    import struct

    from loghose.logging import LoghoseHandler

    rng = random.Random(5)
    floats = [0.0, -0.0, 1.0, -1.0, 0.1, 0.2 + 0.1, 1e-4, 9.999999999999999e-05, 1e16, 9999999999999998.0,
              1e15 + 0.5, 123456789.123, 5e-324, 1.7976931348623157e308, float("inf"), float("-inf")]
    floats += [rng.uniform(-1, 1) * 10 ** rng.randint(-8, 20) for _ in range(400)]
    floats += [struct.unpack("<d", rng.getrandbits(64).to_bytes(8, "little"))[0] for _ in range(100)]
    floats = [f for f in floats if f == f]  # NaN has no id to compare by
    handler = LoghoseHandler(**emu.producer_options("proj", "floats"), linger_ms=20)
    logger = logging.getLogger("loghose.test.floats")
    logger.propagate = False
    logger.addHandler(handler)
    try:
        with producer(emu) as p:
            for i, f in enumerate(floats):
                p.send({"id": f"d{i}", "v": f})
                p.send([("id", f"p{i}"), ("v", f)])
                logger.warning("float", extra={"id": f"l{i}", "v": f})
            assert p.flush(30) == 0
    finally:
        logger.removeHandler(handler)
        handler.close()
    got = {log["id"]: log["v"] for log in stored(emu) + stored_in(emu, "proj", "floats")}
    for i, f in enumerate(floats):
        want = repr(f) if abs(f) != float("inf") else got.get(f"d{i}")
        assert (got[f"d{i}"], got[f"p{i}"], got[f"l{i}"]) == (want, want, want), f


def stored_in(emu, project, logstore):
    return [dict(log["contents"]) for log in emu.logs(project, logstore)]


@pytest.mark.parametrize("row", TABLE, ids=[row["name"] for row in TABLE])
def test_each_value_is_stored_as_the_shared_table_says(emu, row):
    value = eval(row["py"])  # noqa: S307 - the test table's own expressions
    with producer(emu) as p:
        p.send({"id": "dict", "v": value})
        p.send([("id", "pairs"), ("v", value)])
        p.send_many([{"id": "many", "v": value}])
        p.sender(["id", "v"])("sender", value)
        assert p.flush(30) == 0
    assert {log["id"]: log["v"] for log in stored(emu)} == {
        "dict": row["stored"], "pairs": row["stored"], "many": row["stored"], "sender": row["stored"]}


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


def test_a_config_type_error_names_the_option_its_type_and_unit(emu):
    with pytest.raises(loghose.ConfigError, match=r"`linger_ms`: .*expected a whole number \(milliseconds\)"):
        loghose.Producer(**emu.producer_options(), linger_ms="10")


def test_a_misspelt_option_gets_a_did_you_mean(emu):
    with pytest.raises(loghose.ConfigError, match=r"`lingr_ms`: unknown option; did you mean `linger_ms`\?"):
        loghose.Producer(**emu.producer_options(), lingr_ms=10)


@pytest.mark.parametrize("shards", [0, 101, 4294967295])
def test_the_emulator_refuses_a_shard_count_the_service_would(emu, shards):
    with pytest.raises(loghose.ConfigError, match="1 to 100"):
        emu.create_logstore("proj", "huge", shards)
    assert emu.totals("proj", "huge") is None
    with pytest.raises(loghose.ConfigError, match="shard_count"):
        loghose.Emulator(shard_count=shards)


# ---- Values as applications have them: converted only when not str/bytes/int/float/bool ----

class Colour(enum.Enum):
    RED = "red"
    DEEP = 3


WHEN = datetime.datetime(2026, 12, 1, 3, 4, 5, 678901, tzinfo=datetime.timezone.utc)
ID = uuid.UUID("12345678-1234-5678-1234-567812345678")

CONVERTED = [
    ("nested dict", {"a": {"b": 1}, "c": [1, "x", None]}, '{"a":{"b":1},"c":[1,"x",null]}'),
    ("list", [1, 2.5, True, "é"], '[1,2.5,true,"é"]'),
    ("tuple", ("a", 1), '["a",1]'),
    ("set", {7}, "[7]"),
    ("None", None, "null"),
    ("datetime", WHEN, "2026-12-01T03:04:05.678901+00:00"),
    ("date", datetime.date(2026, 12, 1), "2026-12-01"),
    ("time", datetime.time(3, 4, 5), "03:04:05"),
    ("UUID", ID, "12345678-1234-5678-1234-567812345678"),
    ("Decimal", decimal.Decimal("1.10"), "1.10"),
    ("Path", pathlib.PurePosixPath("/var/log/app.log"), "/var/log/app.log"),
    ("Enum str", Colour.RED, "red"),
    ("Enum int", Colour.DEEP, "3"),
    ("exception", ValueError("bad input"), "ValueError: bad input"),
    ("bytearray", bytearray(b"raw"), "raw"),
    ("inside JSON", {"when": WHEN, "id": ID, "c": Colour.RED, "d": decimal.Decimal("2")},
     '{"when":"2026-12-01T03:04:05.678901+00:00","id":"12345678-1234-5678-1234-567812345678","c":"red","d":"2"}'),
]


@pytest.mark.parametrize(("value", "text"), [row[1:] for row in CONVERTED], ids=[row[0] for row in CONVERTED])
def test_structured_values_are_stored_as_text(emu, value, text):
    with producer(emu) as p:
        p.send({"id": "dict", "v": value})
        p.send([("id", "pairs"), ("v", value)])
        p.send_many([{"id": "many", "v": value}])
        p.sender(["id", "v"])("sender", value)
        assert p.flush(30) == 0
    assert {log["id"]: log["v"] for log in stored(emu)} == {"dict": text, "pairs": text, "many": text, "sender": text}


def test_a_sender_stores_what_send_stores_and_checks_its_keys_once(emu):
    with producer(emu) as p:
        log = p.sender(("id", "level", "msg", "n"))
        rows = [("ascii", "info", "signed in", 1), ("unicode", "警告", "日志服务 🚀", -7.5),
                ("empty", "", "", 0), ("surrogate", "\udcff", "x", True), ("converted", b"raw", {"a": [1]}, None)]
        for row in rows:
            log(*row)
            p.send(dict(zip(("id", "level", "msg", "n"), (f"{row[0]}-send", *row[1:]), strict=True)))
        with pytest.raises(TypeError, match=r"this sender takes 4 values \(id, level, msg, n\), not 2"):
            log("one", "two")
        with pytest.raises(TypeError, match="value of field 'msg'"):
            log("x", "y", Point(1, 2), 1)
        with pytest.raises(loghose.InvalidRecordError, match="__time__"):
            p.sender(["ok", "__time__"])
        with pytest.raises(TypeError):
            p.sender("level")
        with pytest.raises(TypeError):
            p.sender([])
        assert log.keys == ["id", "level", "msg", "n"]
        assert p.flush(30) == 0
    logs = {log["id"]: log for log in stored(emu)}
    assert len(logs) == 2 * len(rows)
    for row in rows:
        by_sender, by_send = dict(logs[row[0]]), dict(logs[f"{row[0]}-send"])
        del by_sender["id"], by_send["id"]
        assert by_sender == by_send, row
    with pytest.raises(loghose.ProducerClosedError):
        log("late", "info", "after close", 1)


class Point:
    def __init__(self, x, y):
        self.x, self.y = x, y


def test_default_converts_what_has_no_text_form_at_the_top_and_inside_json(emu):
    with producer(emu, default=lambda o: {"x": o.x, "y": o.y}) as p:
        p.send({"id": "top", "v": Point(1, 2)})
        p.send({"id": "inside", "v": [Point(3, 4)]})
        assert p.flush(30) == 0
    assert {log["id"]: log["v"] for log in stored(emu)} == {"top": '{"x":1,"y":2}', "inside": '[{"x":3,"y":4}]'}


def test_without_default_an_unknown_value_is_a_type_error_naming_the_field(emu):
    with producer(emu) as p:
        with pytest.raises(TypeError, match=r"value of field 'where' is a Point.*default="):
            p.send({"ok": "1", "where": Point(1, 2)})
        with pytest.raises(TypeError, match=r"value of field 'deep' cannot be written as JSON.*Point"):
            p.send({"deep": {"p": Point(1, 2)}})
        stats = p.stats()
        assert (stats["accepted"], stats["invalid"]) == (0, 2)
        p.send({"ok": "2"})
        assert p.flush(30) == 0
    assert stored(emu) == [{"ok": "2"}]


def test_a_default_that_raises_is_a_type_error_naming_the_field(emu):
    def refuse(value):
        raise RuntimeError("no way")

    with producer(emu, default=refuse) as p:
        with pytest.raises(TypeError, match=r"value of field 'p': default= raised RuntimeError: no way"):
            p.send({"p": Point(1, 2)})
        with pytest.raises(TypeError, match="record 1: "):
            p.send_many([{"ok": "1"}, {"p": object()}])
        assert p.stats()["accepted"] == 0


def test_a_default_that_never_reaches_text_is_refused(emu):
    with producer(emu, default=lambda o: Point(0, 0)) as p:
        with pytest.raises(TypeError, match="keeps returning values without a text form"):
            p.send({"p": Point(1, 2)})


def test_a_plain_str_record_never_calls_the_conversion(emu):
    calls = []
    with producer(emu, default=lambda o: calls.append(o) or "x") as p:
        for i in range(100):
            p.send({"msg": "plain", "n": i, "f": 1.5, "b": True, "raw": b"x"})
        assert p.flush(30) == 0
    assert calls == []
    assert len(stored(emu)) == 100


class _Plain:
    pass


def _dict_shapes():
    deleted = {f"k{i}": str(i) for i in range(20)}
    del deleted["k3"], deleted["k10"]
    deleted["k3"] = "again"
    general = {1: "int key", "a": "1", "b": "2"}  # a non-str key makes the table general...
    del general[1]  # ...and it stays general with only str keys left
    instance = _Plain()
    instance.a, instance.b = "1", "2"  # an instance's __dict__ shares its keys (a split table)
    large = {f"key{i:04}": f"v{i}" for i in range(600)}  # two-byte indices
    for i in range(0, 600, 7):
        del large[f"key{i:04}"]
    mixed = {"s": "text", "i": 42, "f": 1.5, "b": True, "n": None}
    return {"deleted": deleted, "general": general, "split": instance.__dict__, "large": large,
            "mixed": mixed, "empty-after-delete": {"only": "x", "gone": "y"}}


@pytest.mark.parametrize("shape", list(_dict_shapes()))
def test_every_kind_of_dict_table_is_stored_field_for_field_in_order(emu, shape):
    record = _dict_shapes()[shape]
    if shape == "empty-after-delete":
        del record["gone"]
    with producer(emu) as p:
        p.send(record)
        assert p.flush(30) == 0
    def as_text(v):
        return "true" if v is True else "null" if v is None else str(v)

    expected = [(k, as_text(v)) for k, v in record.items()]
    assert [tuple(pair) for pair in emu.logs("loghose", "logs")[0]["contents"]] == expected
