"""``loghose.logging.LoghoseHandler`` against the emulator: configured by ``dictConfig``, every
field mapping, ``extra`` values of every kind, exceptions and stacks, failures that never reach
the application, ``logging.shutdown()`` at exit, and a forked child."""

from __future__ import annotations

import datetime
import logging
import logging.config
import os
import subprocess
import sys
import textwrap
import threading
import uuid

import loghose
import pytest
from loghose.logging import LoghoseHandler


def fields_of(emu: loghose.Emulator, logstore: str) -> list[dict[str, str]]:
    """The logs' fields in the order they were logged (their times): records of one producer
    may arrive in different batches, in either order."""
    logs = sorted(emu.logs("proj", logstore), key=lambda log: (log["time"], log["time_ns"] or 0))
    return [dict(log["contents"]) for log in logs]


@pytest.fixture
def emu():
    with loghose.Emulator() as emulator:
        yield emulator


@pytest.fixture
def fresh_logger():
    name = f"test.{uuid.uuid4().hex}"
    log = logging.getLogger(name)
    log.propagate = False
    log.setLevel(logging.DEBUG)
    yield log
    for handler in list(log.handlers):
        log.removeHandler(handler)
        handler.close()


def test_dictconfig_builds_it_and_every_field_arrives(emu, fresh_logger):
    logging.config.dictConfig({
        "version": 1,
        "incremental": False,
        "disable_existing_loggers": False,
        "handlers": {"sls": {"class": "loghose.logging.LoghoseHandler", "level": "INFO",
                             **emu.producer_options("proj", "from-config"), "linger_ms": 10}},
        "loggers": {fresh_logger.name: {"handlers": ["sls"], "level": "DEBUG", "propagate": False}},
    })
    handler = fresh_logger.handlers[0]
    assert isinstance(handler, LoghoseHandler)
    when = datetime.datetime(2026, 12, 1, 8, 30, tzinfo=datetime.timezone.utc)
    fresh_logger.debug("below the handler's level")
    fresh_logger.info("user %s logged in", "ana", extra={"user": {"id": 7, "roles": ["admin"]}, "at": when,
                                                         "attempts": 3, "ratio": 0.5, "nothing": None})
    try:
        raise ValueError("boom")
    except ValueError:
        fresh_logger.exception("it failed")
    fresh_logger.warning("where am I", stack_info=True)
    handler.flush()
    logs = sorted(fields_of(emu, "from-config"), key=lambda f: f["message"])
    assert [f["message"] for f in logs] == ["it failed", "user ana logged in", "where am I"]
    failed, login, where = logs
    assert login["level"] == "INFO"
    assert login["logger"] == fresh_logger.name
    assert login["module"] == "test_logging_handler"
    assert login["function"] == "test_dictconfig_builds_it_and_every_field_arrives"
    assert int(login["line"]) > 0
    assert login["thread"] == str(threading.get_ident())
    assert login["thread_name"] == threading.current_thread().name
    assert login["process"] == str(os.getpid())
    assert login["user"] == '{"id":7,"roles":["admin"]}'
    assert login["at"] == "2026-12-01T08:30:00+00:00"
    assert (login["attempts"], login["ratio"], login["nothing"]) == ("3", "0.5", "null")
    assert failed["level"] == "ERROR"
    assert "ValueError: boom" in failed["exception"] and "Traceback" in failed["exception"]
    assert "test_dictconfig_builds_it_and_every_field_arrives" in where["stack"]
    # The log's time is the record's.
    times = [log["time"] for log in emu.logs("proj", "from-config")]
    assert all(abs(t - datetime.datetime.now().timestamp()) < 60 for t in times)


def test_a_formatter_makes_the_message(emu, fresh_logger):
    handler = LoghoseHandler(**emu.producer_options("proj", "formatted"), linger_ms=10)
    handler.setFormatter(logging.Formatter("%(levelname)s|%(name)s|%(message)s"))
    fresh_logger.addHandler(handler)
    fresh_logger.error("disk %d%% full", 93)
    handler.flush()
    assert fields_of(emu, "formatted")[0]["message"] == f"ERROR|{fresh_logger.name}|disk 93% full"


def test_a_record_that_cannot_be_sent_never_reaches_the_application(emu, fresh_logger, capsys):
    handler = LoghoseHandler(**emu.producer_options("proj", "bad-keys"), linger_ms=10)
    fresh_logger.addHandler(handler)
    fresh_logger.info("bad key", extra={"line\nbreak": 1})
    fresh_logger.info("fine", extra={"ok": 1})
    handler.flush()
    assert handler.failures == 1
    err = capsys.readouterr().err
    assert "--- Logging error ---" in err and "control character" in err
    assert [f["message"] for f in fields_of(emu, "bad-keys")] == ["fine"]
    assert handler.producer.stats()["invalid"] == 1


def test_a_producer_passed_in_is_used_and_left_open(emu, fresh_logger):
    with loghose.Producer(**emu.producer_options("proj", "shared"), linger_ms=10) as producer:
        handler = LoghoseHandler(producer=producer)
        fresh_logger.addHandler(handler)
        fresh_logger.info("through a shared producer")
        fresh_logger.removeHandler(handler)
        handler.close()
        assert not producer.closed
        assert producer.flush(10) == 0
    assert [f["message"] for f in fields_of(emu, "shared")] == ["through a shared producer"]
    with pytest.raises(TypeError, match="either producer"):
        LoghoseHandler(producer=producer, linger_ms=1)


def test_logging_shutdown_at_exit_delivers_everything(emu):
    script = textwrap.dedent(f"""
        import logging, logging.config
        logging.config.dictConfig({{"version": 1, "handlers": {{"sls": {{
            "class": "loghose.logging.LoghoseHandler", "endpoint": {emu.endpoint!r}, "project": "proj",
            "logstore": "at-exit", "access_key_id": {emu.access_key_id!r},
            "access_key_secret": {emu.access_key_secret!r}, "linger_ms": 60000}}}},
            "root": {{"handlers": ["sls"], "level": "INFO"}}}})
        for i in range(2000):
            logging.info("record %d", i)
        # no flush, no close: the script just ends
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    messages = {f["message"] for f in fields_of(emu, "at-exit")}
    assert messages == {f"record {i}" for i in range(2000)}


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_logs_through_a_producer_of_its_own(emu, fresh_logger):
    handler = LoghoseHandler(**emu.producer_options("proj", "forked-logging"), linger_ms=10)
    fresh_logger.addHandler(handler)
    fresh_logger.info("from the parent")
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through its exit status
        try:
            fresh_logger.info("from the child")
            handler.close()
            os._exit(0 if handler.failures == 0 else 1)
        finally:
            os._exit(2)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    handler.flush()
    by_message = {f["message"]: f for f in fields_of(emu, "forked-logging")}
    assert set(by_message) == {"from the parent", "from the child"}
    assert by_message["from the child"]["process"] == str(pid)
    assert by_message["from the parent"]["process"] == str(os.getpid())


def test_json_and_key_value_messages_become_fields_when_asked(emu, fresh_logger):
    handler = LoghoseHandler(**emu.producer_options("proj", "extracted"), linger_ms=10, extract_json=True,
                             extract_kv=True)
    fresh_logger.addHandler(handler)
    fresh_logger.info('{"order": 42, "items": ["a", "b"], "level": "not-the-level"}')
    fresh_logger.info('user=bob action="log in" took_ms=12, ok=true')
    fresh_logger.info("{not json} and no pairs")
    handler.flush()
    as_json, pairs, plain = fields_of(emu, "extracted")
    assert (as_json["order"], as_json["items"], as_json["level"]) == ("42", '["a","b"]', "INFO")
    assert as_json["message"].startswith('{"order": 42')
    assert {k: pairs[k] for k in ("user", "action", "took_ms", "ok")} == {
        "user": "bob", "action": "log in", "took_ms": "12", "ok": "true"}
    assert set(plain) - {"message"} == set(as_json) - {"message", "order", "items"}


def test_without_extraction_messages_stay_whole(emu, fresh_logger):
    handler = LoghoseHandler(**emu.producer_options("proj", "not-extracted"), linger_ms=10)
    fresh_logger.addHandler(handler)
    fresh_logger.info('user=bob {"order": 42}')
    handler.flush()
    (fields,) = fields_of(emu, "not-extracted")
    assert "user" not in fields and "order" not in fields


def test_an_extra_value_without_a_text_form_is_written_with_str(emu, fresh_logger):
    class Opaque:
        def __str__(self):
            return "opaque-thing"

    handler = LoghoseHandler(**emu.producer_options("proj", "opaque"), linger_ms=10)
    fresh_logger.addHandler(handler)
    fresh_logger.info("with an object", extra={"thing": Opaque(), "nested": {"inner": Opaque()}})
    handler.flush()
    assert handler.failures == 0
    (fields,) = fields_of(emu, "opaque")
    assert (fields["thing"], fields["nested"]) == ("opaque-thing", '{"inner":"opaque-thing"}')


def test_a_handler_closed_by_a_later_dictconfig_still_delivers(emu, fresh_logger):
    # dictConfig closes every existing handler (uvicorn and many frameworks call it at start);
    # a logger configured earlier keeps its handler, which must go on working, as a
    # FileHandler reopens its file.
    handler = LoghoseHandler(**emu.producer_options("proj", "reconfigured"), linger_ms=10)
    fresh_logger.addHandler(handler)
    fresh_logger.info("before")
    logging.config.dictConfig({"version": 1, "disable_existing_loggers": False})
    fresh_logger.info("after")
    handler.flush()
    assert handler.failures == 0
    assert sorted(f["message"] for f in fields_of(emu, "reconfigured")) == ["after", "before"]
    handler.close()


def test_a_handler_whose_producer_cannot_be_built_is_never_registered(emu):
    before = len(logging._handlerList)
    with pytest.raises(loghose.ConfigError, match="logstore"):
        LoghoseHandler(**emu.producer_options("proj", "x"))
    assert len(logging._handlerList) == before


def test_threads_logging_at_once_lose_nothing_and_filters_still_apply(emu, fresh_logger):
    handler = LoghoseHandler(**emu.producer_options("proj", "threads"), linger_ms=10)
    handler.addFilter(lambda record: not record.getMessage().endswith("-skip"))
    fresh_logger.addHandler(handler)

    def work(n):
        for i in range(2000):
            fresh_logger.info("t%d-%d%s", n, i, "-skip" if i % 10 == 0 else "")

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    handler.flush()
    messages = [f["message"] for f in fields_of(emu, "threads")]
    assert len(messages) == len(set(messages)) == 8 * 1800
    assert handler.failures == 0


def _record(logger, msg, *args, extra=None, exc_info=None, stack_info=False):
    """A record as `logger.info` makes it (its caller, its extras)."""
    record = logger.makeRecord(logger.name, logging.INFO, __file__, 42, msg, args, exc_info,
                               func="caller", extra=extra, sinfo=None)
    if stack_info:
        record.stack_info = "Stack (most recent call last):\n  File x, line 1"
    return record


def _exception_info():
    try:
        raise ValueError("boom")
    except ValueError:
        return sys.exc_info()


#: (case, record arguments, whether the native path writes it itself)
RECORDS = [
    ("plain", ("plain %s", "text"), {}, True),
    ("every direct kind", ("kinds",), {"extra": {
        "s": "text", "u": "ünïcødé ✓", "i": -7, "big": 2**62, "f": 0.1, "t": True, "n": None}}, True),
    ("private and standard-looking names", ("names",), {"extra": {"_hidden": 1, "shown": 2}}, True),
    ("an int past 64 bits", ("huge",), {"extra": {"huge": 2**70}}, False),
    ("a container", ("container",), {"extra": {"d": {"a": [1, 2]}}}, False),
    ("an extra named as a field", ("named",), {"extra": {"level": "custom"}}, False),
    ("a lone surrogate", ("bad \udcff",), {}, False),
    ("an exception", ("failed",), {"exc_info": _exception_info()}, False),
    ("a stack", ("stacked",), {"stack_info": True}, False),
]


@pytest.mark.parametrize(("case", "args", "kwargs", "native"), RECORDS, ids=[r[0] for r in RECORDS])
def test_the_native_path_writes_exactly_what_fields_builds(emu, fresh_logger, case, args, kwargs, native):
    handler = LoghoseHandler(**emu.producer_options("proj", "native"), linger_ms=10)
    record = _record(fresh_logger, *args, **kwargs)
    producer = handler.producer
    assert producer._native.send_log_record(record, record.getMessage()) is native
    reference = loghose.Producer(**emu.producer_options("proj", "python"), linger_ms=10, default=str)
    reference.send(handler.fields(record), time=record.created)
    reference.close()
    handler.close()
    if native:
        (written,) = emu.logs("proj", "native")
        (expected,) = emu.logs("proj", "python")
        assert (written["contents"], written["time"], written["time_ns"]) == (
            expected["contents"], expected["time"], expected["time_ns"])
    else:
        assert emu.logs("proj", "native") == []


def test_a_record_another_handler_formatted_first_is_still_written_natively(emu, fresh_logger):
    handler = LoghoseHandler(**emu.producer_options("proj", "formatted"), linger_ms=10)
    record = _record(fresh_logger, "hello %s", "there", extra={"user": "ada"})
    logging.Formatter("%(asctime)s %(message)s").format(record)  # adds `message`, `asctime`
    assert "asctime" in vars(record)
    assert handler.producer._native.send_log_record(record, record.getMessage())
    handler.flush()
    (fields,) = fields_of(emu, "formatted")
    assert fields == {k: str(v) for k, v in handler.fields(record).items()}
    assert (fields["message"], fields["user"]) == ("hello there", "ada")
    handler.close()


def test_records_without_thread_or_process_are_written_natively_without_them(emu, fresh_logger, monkeypatch):
    monkeypatch.setattr(logging, "logThreads", False)
    monkeypatch.setattr(logging, "logProcesses", False)
    handler = LoghoseHandler(**emu.producer_options("proj", "bare"), linger_ms=10)
    fresh_logger.addHandler(handler)
    record = _record(fresh_logger, "bare")
    assert record.thread is None and record.process is None
    assert handler.producer._native.send_log_record(record, "bare")
    handler.flush()
    (fields,) = fields_of(emu, "bare")
    assert "thread" not in fields and "process" not in fields
    assert list(fields) == list(handler.fields(record))


def test_every_kind_of_record_arrives_whichever_path_it_takes(emu, fresh_logger):
    handler = LoghoseHandler(**emu.producer_options("proj", "mixed"), linger_ms=10)
    fresh_logger.addHandler(handler)
    for _case, args, kwargs, _native in RECORDS:
        extra = kwargs.get("extra")
        if kwargs.get("exc_info"):
            try:
                raise ValueError("boom")
            except ValueError:
                fresh_logger.exception(*args, extra=extra)
        else:
            fresh_logger.info(*args, extra=extra, stack_info=kwargs.get("stack_info", False))
    handler.flush()
    assert handler.failures == 0
    logged = fields_of(emu, "mixed")
    assert len(logged) == len(RECORDS)
    assert logged[1]["u"] == "ünïcødé ✓" and logged[3]["huge"] == str(2**70)
    assert logged[5]["level"] == "custom" and "exception" in logged[7] and "stack" in logged[8]


def test_the_message_made_natively_is_what_get_message_makes(emu, fresh_logger, monkeypatch):
    handler = LoghoseHandler(**emu.producer_options("proj", "messages"), linger_ms=10)
    expected = []

    def note(record):
        try:
            expected.append(record.getMessage())
        except TypeError:
            expected.append(None)
        return True

    handler.addFilter(note)
    fresh_logger.addHandler(handler)

    class Shouting(logging.LogRecord):
        def getMessage(self):  # noqa: N802 - logging's name
            return super().getMessage().upper()

    for args in [("plain",), ("100%% sure",), ("%s and %d", "x", 2), ("%(a)s/%(b)s", {"a": 1, "b": "two"}),
                 (42,), (ValueError("an exception as the message"),), ("%s", None), ("ünï %s", "cødé")]:
        fresh_logger.info(*args)
    monkeypatch.setattr(logging, "_logRecordFactory", Shouting)
    fresh_logger.info("made by a %s", "subclass")
    monkeypatch.undo()
    # A message that cannot be made goes to handleError, counted; nothing else is lost.
    monkeypatch.setattr(handler, "handleError", lambda record: None)
    fresh_logger.info("%d", "not a number")
    fresh_logger.info("after")
    handler.flush()
    assert handler.failures == 1
    assert (expected[8], expected[9], expected[10]) == ("MADE BY A SUBCLASS", None, "after")
    assert [f["message"] for f in fields_of(emu, "messages")] == expected[:9] + ["after"]
    handler.close()
