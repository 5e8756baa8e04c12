"""``LoghoseHandler``: the standard library's ``logging`` into Log Service.

A ``logging.Handler`` that turns each ``LogRecord`` into one log's fields and hands it to a
``loghose.Producer`` (its own, built from the producer's keyword options, or one passed in)::

    import logging
    from loghose.logging import LoghoseHandler

    logging.getLogger().addHandler(LoghoseHandler(endpoint=..., project=..., logstore=..., ...))

or from configuration, by class path, the options as keyword arguments::

    logging.config.dictConfig({"version": 1,
        "handlers": {"sls": {"class": "loghose.logging.LoghoseHandler", "endpoint": ..., ...}},
        "root": {"handlers": ["sls"], "level": "INFO"}})

Fields: ``level``, ``logger``, ``message`` (``getMessage()``, or the formatter's output when
the handler has one), ``module``, ``function``, ``line``, ``thread``, ``thread_name``,
``process``, ``exception`` and ``stack`` (rendered as text, when present), then every ``extra``
attribute, under its own name. The log's time is ``record.created`` (to the microsecond).
Values that are not already text or numbers become text as the producer converts them
(containers as compact JSON, dates as ISO 8601, ``None`` as ``null``...); anything without a
text form is written with ``str``.

As the vendor's handler can, ``extract_json=True`` adds the fields of a message that is a JSON
object, and ``extract_kv=True`` those of ``key=value`` pairs in the message (values quoted
with ``"`` may hold spaces); the message itself is kept.

Unless a subclass overrides ``fields`` (or a formatter or an extraction is set), the fields are
read natively from the record and written straight into the batch, with no dict built; a record
with an exception, a stack or a value to convert takes the Python path, with the same result.

Guarantees: ``emit`` runs on the logging thread and never raises into the application; a
record that cannot be sent (an invalid key, a full buffer after ``max_block_ms``, a closed
producer) goes to ``handleError`` (the standard "--- Logging error ---" report unless
``logging.raiseExceptions`` is off) and is counted in ``failures``. It never blocks longer than
the producer's ``max_block_ms`` (0 by default: a full buffer fails at once). ``flush`` waits up
to ``flush_timeout`` seconds, ``close`` (and ``logging.shutdown()``, at exit) up to
``close_timeout``, which is also how long its producer may take to deliver when the process
ends in ways that skip ``logging.shutdown`` (a multiprocessing or celery child; see
``loghose._exit``). Fork-safe: in a forked child, a handler that built its own producer builds
a new one on the child's first record (a producer passed in stays the caller's business).
"""

from __future__ import annotations

import itertools
import json
import logging
import re
from typing import Any

from . import Producer, _native, _sink
from ._sink import ProducerSink, exception_text
from .errors import ProducerClosedError

#: Attributes every LogRecord has; anything else on a record came from ``extra``.
_STANDARD = frozenset(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {"message", "asctime", "taskName"}
#: How many attributes ``LogRecord.__init__`` sets (the extras follow them).
_RECORD_ATTRIBUTES = len(vars(logging.LogRecord("", 0, "", 0, "", (), None)))

# The native path reads records with this layout (see `emit`).
_native.set_log_record_layout(_STANDARD, _RECORD_ATTRIBUTES, logging.LogRecord)

_KEY_VALUE = re.compile(r'([A-Za-z_][\w.\-]*)=("(?:[^"\\]|\\.)*"|[^\s,;]*)')


def key_values(message: str) -> dict[str, str]:
    """The ``key=value`` pairs of ``message`` (a quoted value loses its quotes)."""
    pairs = {}
    for key, value in _KEY_VALUE.findall(message):
        if len(value) >= 2 and value[0] == value[-1] == '"':
            value = value[1:-1].replace('\\"', '"')
        pairs[key] = value
    return pairs


class LoghoseHandler(ProducerSink, logging.Handler):
    """Sends each record to Log Service through a ``loghose.Producer``; see the module text.
    ``failures`` counts the records that could not be sent (each went to ``handleError``)."""

    def __init__(self, level: int | str = logging.NOTSET, *, producer: Producer | None = None,
                 flush_timeout: float = 5.0, close_timeout: float = 10.0, extract_json: bool = False,
                 extract_kv: bool = False, **options: Any) -> None:
        # The producer first: a handler whose producer cannot be built must not be registered
        # with logging (which would call its flush and close at shutdown).
        ProducerSink.__init__(self, producer, options, close_timeout)
        logging.Handler.__init__(self, level)
        self.flush_timeout = flush_timeout
        self._extract_json = extract_json
        self._extract_kv = extract_kv
        self._native_fields = False
        self._choose_path()

    def _choose_path(self) -> None:
        # The fields as `fields` makes them are written natively from the record (no dict in
        # between) unless a subclass makes its own or a message is to be parsed; see `emit`.
        self._native_fields = (type(self).fields is LoghoseHandler.fields and not self._extract_json
                               and not self._extract_kv)

    @property
    def extract_json(self) -> bool:
        """Whether a message that is a JSON object adds its fields."""
        return self._extract_json

    @extract_json.setter
    def extract_json(self, value: bool) -> None:
        self._extract_json = value
        self._choose_path()

    @property
    def extract_kv(self) -> bool:
        """Whether ``key=value`` pairs in a message add their fields."""
        return self._extract_kv

    @extract_kv.setter
    def extract_kv(self, value: bool) -> None:
        self._extract_kv = value
        self._choose_path()

    def fields(self, record: logging.LogRecord) -> dict[str, Any]:
        """The log's fields for ``record`` (override to choose others)."""
        message = self.format(record) if self.formatter is not None else record.getMessage()
        return self._fields(record, message)

    def _fields(self, record: logging.LogRecord, message: str) -> dict[str, Any]:
        fields: dict[str, Any] = {
            "level": record.levelname,
            "logger": record.name,
            "message": message,
            "module": record.module,
            "function": record.funcName,
            "line": record.lineno,
        }
        if record.thread is not None:
            fields["thread"] = record.thread
            fields["thread_name"] = record.threadName
        if record.process is not None:
            fields["process"] = record.process
        if record.exc_info:
            if not record.exc_text:
                record.exc_text = exception_text(record.exc_info)
            fields["exception"] = record.exc_text
        elif record.exc_text:
            fields["exception"] = record.exc_text
        if record.stack_info:
            fields["stack"] = _FORMATTER.formatStack(record.stack_info)
        if self._extract_json and message.startswith("{"):
            try:
                parsed = json.loads(message)
            except ValueError:
                parsed = None
            if isinstance(parsed, dict):
                fields.update((str(k), v) for k, v in parsed.items() if str(k) not in fields)
        if self._extract_kv and "=" in message:
            fields.update((k, v) for k, v in key_values(message).items() if k not in fields)
        attributes = record.__dict__
        # `extra` (and what a record factory adds) comes after the attributes every record
        # has: only the tail is looked at, in order.
        if len(attributes) > _RECORD_ATTRIBUTES:
            for key in itertools.islice(attributes, _RECORD_ATTRIBUTES, None):
                if key not in _STANDARD and key[:1] != "_":
                    fields[key] = attributes[key]
        return fields

    def handle(self, record: logging.LogRecord) -> Any:
        """Filters and emits ``record`` without the handler's lock: ``emit`` is safe from any
        thread (the producer takes its own, finer locks), so threads that log at once do not
        queue behind one another here."""
        if self.filters:
            result = self.filter(record)
            if not result:
                return result
            if isinstance(result, logging.LogRecord):
                record = result
        # What `emit` does for most records, in this one frame: the native path, to a producer
        # of this process (a forked child's first record, a closed producer, an exception or a
        # stack take the long way).
        owned = self._owned
        if self._native_fields and self.formatter is None and owned._forks == _sink._forks:
            try:
                # The message is made natively, as `getMessage` makes it.
                if owned._producer._native.send_log_record(record):
                    return record
            except ProducerClosedError:
                pass  # `emit` builds the handler's own producer again, or reports it
            except Exception:
                self.failures += 1
                self.handleError(record)
                return record
        self.emit(record)
        return record

    def emit(self, record: logging.LogRecord) -> None:
        """Sends ``record`` (``logging`` calls it); a record that cannot be sent goes to ``handleError`` and is counted
        in ``failures``.
        """
        try:
            producer = self._owned.live()
            # The native path writes what `fields` would, straight from the record; it declines
            # (and the fields are built here) for an exception, a stack, or a value to convert.
            if self._native_fields and self.formatter is None:
                message = record.getMessage()
                if not producer._native.send_log_record(record, message):
                    producer.send(self._fields(record, message), time=record.created)
                return
            producer.send(self.fields(record), time=record.created)
        except Exception:
            self.failures += 1
            self.handleError(record)

    def flush(self) -> None:
        """Waits up to ``flush_timeout`` seconds for what was sent to be delivered."""
        self._owned.flush(self.flush_timeout)

    def close(self) -> None:
        """Delivers what is pending (up to ``close_timeout`` seconds) and closes the producer
        if the handler built it."""
        try:
            self._owned.close(self.close_timeout)
        finally:
            super().close()


_FORMATTER = logging.Formatter()

__all__ = ["LoghoseHandler", "key_values"]
