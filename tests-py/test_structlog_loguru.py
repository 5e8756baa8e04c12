"""structlog and loguru into the emulator: the processor and the sink as their docs show them,
every field, exceptions, bound context, structured values, failures counted, and delivery at
close."""

from __future__ import annotations

import datetime
import os
import subprocess
import sys
import textwrap

import loghose
import pytest

pytestmark = pytest.mark.timeout(120)

structlog = pytest.importorskip("structlog")
loguru = pytest.importorskip("loguru")

from loghose.loguru import LoghoseSink  # noqa: E402
from loghose.structlog import LoghoseProcessor  # noqa: E402


@pytest.fixture()
def emu():
    with loghose.Emulator() as emulator:
        yield emulator


def options(emu, logstore):
    return {**emu.producer_options(logstore=logstore), "linger_ms": 10}


def stored(emu, logstore):
    """The logs in the order they were logged (their times): records of one producer may
    arrive in different batches, in either order."""
    logs = [{**dict(log["contents"]), "__time_ns__": log["time_ns"], "__time__": log["time"]}
            for log in emu.logs("loghose", logstore)]
    return sorted(logs, key=lambda log: (log["__time__"], log["__time_ns__"] or 0))


@pytest.fixture()
def structlog_config():
    yield
    structlog.reset_defaults()


def test_structlog_events_arrive_with_every_key_and_the_chain_still_renders(emu, structlog_config, capsys):
    processor = LoghoseProcessor(**options(emu, "structlog"))
    structlog.configure(processors=[structlog.contextvars.merge_contextvars, structlog.processors.add_log_level,
                                    structlog.processors.TimeStamper(fmt=None), processor,
                                    structlog.processors.JSONRenderer()],
                        logger_factory=structlog.PrintLoggerFactory())
    log = structlog.get_logger().bind(request_id="r-1")
    log.info("user logged in", user="bob", attempts=3, roles=["admin", "dev"],
             at=datetime.date(2026, 12, 1))
    try:
        raise ZeroDivisionError("division by zero")
    except ZeroDivisionError:
        log.error("it broke", exc_info=True)
    log.warning("odd", thing=object())
    assert processor.producer.flush(30) == 0
    processor.close()
    logs = stored(emu, "structlog")
    assert [entry["event"] for entry in logs] == ["user logged in", "it broke", "odd"]
    first = logs[0]
    assert {k: first[k] for k in ("level", "user", "attempts", "roles", "at", "request_id")} == {
        "level": "info", "user": "bob", "attempts": "3", "roles": '["admin","dev"]', "at": "2026-12-01",
        "request_id": "r-1"}
    # TimeStamper(fmt=None) gives a float: the log's own time, to the microsecond.
    assert abs(first["__time__"] + first["__time_ns__"] / 1e9 - float(first["timestamp"])) < 1e-5
    assert "ZeroDivisionError: division by zero" in logs[1]["exception"]
    assert "Traceback" in logs[1]["exception"] and "exc_info" not in logs[1]
    assert logs[2]["thing"].startswith("<object object at ")
    # The rest of the chain ran: JSON lines on stdout, one per event.
    assert capsys.readouterr().out.count("\n") == 3


def test_structlog_drop_ends_the_chain_and_failures_are_counted(emu, structlog_config, capsys):
    processor = LoghoseProcessor(**options(emu, "drop"), drop=True)
    structlog.configure(processors=[processor, structlog.processors.JSONRenderer()],
                        logger_factory=structlog.PrintLoggerFactory())
    log = structlog.get_logger()
    log.info("kept")
    log.info("bad key", **{"__time__": "reserved"})
    assert processor.failures == 1
    assert processor.producer.flush(30) == 0
    processor.close()
    assert capsys.readouterr().out == ""
    assert [entry["event"] for entry in stored(emu, "drop")] == ["kept"]


def test_loguru_messages_arrive_with_every_field_and_bound_extras(emu):
    from loguru import logger

    sink = LoghoseSink(**options(emu, "loguru"))
    handler_id = logger.add(sink, level="DEBUG")
    try:
        logger.bind(request_id="r-2", tags={"a": 1}).info("hello {}", "world")
        try:
            raise ValueError("bad value")
        except ValueError:
            logger.exception("caught")
        with logger.contextualize(job="nightly"):
            logger.debug("in context")
    finally:
        logger.remove(handler_id)  # stops the sink: delivers and closes its producer
    assert sink.producer.closed
    logs = stored(emu, "loguru")
    assert [entry["message"] for entry in logs] == ["hello world", "caught", "in context"]
    first = logs[0]
    assert {k: first[k] for k in ("level", "logger", "module", "function", "request_id", "tags")} == {
        "level": "INFO", "logger": __name__, "module": "test_structlog_loguru",
        "function": "test_loguru_messages_arrive_with_every_field_and_bound_extras", "request_id": "r-2",
        "tags": '{"a":1}'}
    assert first["process"] == str(os.getpid())
    assert int(first["line"]) > 0 and first["thread_name"] == "MainThread"
    assert "ValueError: bad value" in logs[1]["exception"] and logs[1]["level"] == "ERROR"
    assert logs[2]["job"] == "nightly" and logs[2]["level"] == "DEBUG"


def test_loguru_reports_a_record_it_could_not_send_and_goes_on(emu, capsys):
    from loguru import logger

    sink = LoghoseSink(**options(emu, "loguru-bad"))
    handler_id = logger.add(sink)
    try:
        logger.bind(**{"__source__": "reserved"}).info("refused")
        logger.info("fine")
    finally:
        logger.remove(handler_id)
    assert sink.failures == 1
    assert "InvalidRecordError" in capsys.readouterr().err  # loguru's catch=True report
    assert [entry["message"] for entry in stored(emu, "loguru-bad")] == ["fine"]


def test_loguru_delivers_at_interpreter_exit(emu):
    script = textwrap.dedent(f"""
        from loguru import logger
        from loghose.loguru import LoghoseSink
        logger.remove()
        logger.add(LoghoseSink(endpoint={emu.endpoint!r}, project="loghose", logstore="exit",
                               access_key_id={emu.access_key_id!r}, access_key_secret={emu.access_key_secret!r},
                               linger_ms=60000))
        for i in range(500):
            logger.info("n {{}}", i)
    """)
    subprocess.run([sys.executable, "-c", script], check=True, timeout=60)
    assert len(emu.logs("loghose", "exit")) == 500


def _native_and_python(emu, send_native, fields_and_time):
    """What the native path stored (None when it declined, and then nothing may be stored) and
    what the Python path stores for the same event."""
    producer = loghose.Producer(**options(emu, "native"))
    sent = send_native(producer._native)
    producer.close()
    reference = loghose.Producer(**options(emu, "python"), default=str)
    fields, time = fields_and_time()
    reference.send(fields, time=time)
    reference.close()
    (expected,) = emu.logs("loghose", "python")
    if not sent:
        assert emu.logs("loghose", "native") == []
        return None, expected
    (written,) = emu.logs("loghose", "native")
    return written, expected


#: (case, method name, event dict, whether the native path writes it itself)
EVENTS = [
    ("every direct kind", "info", {"event": "kinds", "level": "info", "s": "text", "u": "ünïcødé ✓", "i": -7,
                                   "big": 2**62, "f": 0.1, "t": True, "n": None, "timestamp": 1764800000.123456},
     True),
    ("level from the method", "warning", {"event": "no level", "timestamp": 1764800000.5}, True),
    ("an int timestamp", "info", {"event": "int time", "timestamp": 1764800001}, True),
    ("a bool timestamp", "info", {"event": "bool time", "timestamp": True}, True),
    ("a container", "info", {"event": "container", "d": {"a": [1, 2]}, "timestamp": 1764800000.0}, False),
    ("a key that is not a str", "info", {"event": "key", b"raw": "bytes", "timestamp": 1764800000.0}, False),
    ("exc_info", "error", {"event": "failed", "exc_info": False, "timestamp": 1764800000.0}, False),
    ("a lone surrogate", "info", {"event": "bad \udcff", "timestamp": 1764800000.0}, False),
]


@pytest.mark.parametrize(("case", "method", "event", "native"), EVENTS, ids=[e[0] for e in EVENTS])
def test_structlog_native_path_writes_exactly_what_the_python_path_builds(emu, case, method, event, native):
    written, expected = _native_and_python(emu, lambda n: n.send_event_dict(dict(event), method),
                                           lambda: LoghoseProcessor._fields(method, dict(event)))
    if native:
        assert (written["contents"], written["time"], written["time_ns"]) == (
            expected["contents"], expected["time"], expected["time_ns"])
    else:
        assert written is None


def test_structlog_event_without_a_numeric_timestamp_is_stamped_now(emu):
    before = datetime.datetime.now().timestamp()
    written, expected = _native_and_python(
        emu, lambda n: n.send_event_dict({"event": "text time", "timestamp": "2026-12-04T00:00:00Z"}, "info"),
        lambda: LoghoseProcessor._fields("info", {"event": "text time", "timestamp": "2026-12-04T00:00:00Z"}))
    assert written["contents"] == expected["contents"]
    assert before - 1 <= written["time"] <= datetime.datetime.now().timestamp() + 1


def _loguru_record(*args, **extra):
    from loguru import logger

    captured = []
    handler_id = logger.add(lambda message: captured.append(message.record))
    try:
        logger.bind(**extra).info(*args)
    finally:
        logger.remove(handler_id)
    (record,) = captured
    return record


def _zone(hours, minutes=0):
    return datetime.timezone(datetime.timedelta(hours=hours, minutes=minutes))


#: (case, change to the captured record, whether the native path writes it itself)
LOGURU_RECORDS = [
    ("every direct kind", lambda r: r["extra"].update(
        {"s": "text", "u": "ünïcødé ✓", "i": -7, "big": 2**62, "f": 0.1, "t": True, "n": None}), True),
    ("no extra", lambda r: None, True),
    ("UTC", lambda r: r.update(time=datetime.datetime(2026, 12, 4, 1, 2, 3, 456789, tzinfo=_zone(0))), True),
    ("east of UTC, across a day", lambda r: r.update(
        time=datetime.datetime(2026, 1, 1, 0, 30, 0, 1, tzinfo=_zone(5, 30))), True),
    ("west of UTC, a leap day", lambda r: r.update(
        time=datetime.datetime(2024, 2, 29, 23, 59, 59, 999999, tzinfo=_zone(-8))), True),
    ("the epoch", lambda r: r.update(time=datetime.datetime(1970, 1, 1, tzinfo=_zone(0))), True),
    ("a naive time", lambda r: r.update(time=datetime.datetime(2026, 12, 4, 1, 2, 3)), False),
    ("a container", lambda r: r["extra"].update(d={"a": [1, 2]}), False),
    ("an extra named as a field", lambda r: r["extra"].update(message="replaced"), False),
    ("an exception", lambda r: r.update(exception=r["thread"]), False),
]


@pytest.mark.parametrize(("case", "change", "native"), LOGURU_RECORDS, ids=[r[0] for r in LOGURU_RECORDS])
def test_loguru_native_path_writes_exactly_what_the_python_path_builds(emu, case, change, native):
    record = _loguru_record("hello {}", "there", request_id="r-3")
    change(record)
    fields = (lambda: (LoghoseSink._fields(record), record["time"].timestamp())) if record["exception"] is None \
        else (lambda: ({"message": "unused"}, None))
    written, expected = _native_and_python(emu, lambda n: n.send_loguru_record(record), fields)
    if native:
        assert (written["contents"], written["time"], written["time_ns"]) == (
            expected["contents"], expected["time"], expected["time_ns"])
    else:
        assert written is None
