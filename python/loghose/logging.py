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
Values that are not already text or numbers become text: containers as compact JSON,
``datetime``/``date`` as ISO 8601, ``None`` as ``null``, anything else by ``str``.

Guarantees: ``emit`` runs on the logging thread and never raises into the application; a
record that cannot be sent (an invalid key, a full buffer after ``max_block_ms``, a closed
producer) goes to ``handleError`` (the standard "--- Logging error ---" report unless
``logging.raiseExceptions`` is off) and is counted in ``failures``. It never blocks longer than
the producer's ``max_block_ms`` (0 by default: a full buffer fails at once). ``flush`` waits up
to ``flush_timeout`` seconds, ``close`` (and ``logging.shutdown()``, at exit) up to
``close_timeout``. Fork-safe: in a forked child, a handler that built its own producer builds
a new one on the child's first record (a producer passed in stays the caller's business).
"""

from __future__ import annotations

import datetime as _datetime
import json
import logging
import os
import threading
from typing import Any

from . import Producer

#: Attributes every LogRecord has; anything else on a record came from ``extra``.
_STANDARD = frozenset(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {"message", "asctime", "taskName"}


def _text(value: Any) -> Any:
    """A field value the producer takes: text and numbers as they are, the rest as text."""
    if isinstance(value, (str, bytes, int, float)):
        return value
    if value is None:
        return "null"
    if isinstance(value, (_datetime.datetime, _datetime.date, _datetime.time)):
        return value.isoformat()
    if isinstance(value, (dict, list, tuple)):
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)
    return str(value)


class LoghoseHandler(logging.Handler):
    """Sends each record to Log Service through a ``loghose.Producer``; see the module text."""

    def __init__(self, level: int | str = logging.NOTSET, *, producer: Producer | None = None,
                 flush_timeout: float = 5.0, close_timeout: float = 10.0, **options: Any) -> None:
        super().__init__(level)
        if producer is not None and options:
            raise TypeError(f"pass either producer= or the producer's options, not both: {sorted(options)}")
        self._options = options
        self._owns = producer is None
        self._producer = producer if producer is not None else Producer(**options)
        self._pid = os.getpid()
        self._renew = threading.Lock()
        self.flush_timeout = flush_timeout
        self.close_timeout = close_timeout
        #: Records that could not be sent (each went to ``handleError``).
        self.failures = 0

    @property
    def producer(self) -> Producer:
        """The producer records go to (in a forked child, the child's own)."""
        if self._pid != os.getpid() and self._owns:
            with self._renew:
                if self._pid != os.getpid():
                    # The parent's producer and its threads stay the parent's.
                    self._producer = Producer(**self._options)
                    self._pid = os.getpid()
        return self._producer

    def fields(self, record: logging.LogRecord) -> dict[str, Any]:
        """The log's fields for ``record`` (override to choose others)."""
        message = self.format(record) if self.formatter is not None else record.getMessage()
        fields: dict[str, Any] = {
            "level": record.levelname,
            "logger": record.name,
            "message": message,
            "module": record.module,
            "function": record.funcName,
            "line": record.lineno,
            "thread": record.thread,
            "thread_name": record.threadName,
            "process": record.process,
        }
        if record.exc_info:
            if not record.exc_text:
                record.exc_text = _FORMATTER.formatException(record.exc_info)
            fields["exception"] = record.exc_text
        elif record.exc_text:
            fields["exception"] = record.exc_text
        if record.stack_info:
            fields["stack"] = _FORMATTER.formatStack(record.stack_info)
        for key, value in vars(record).items():
            if key not in _STANDARD and not key.startswith("_"):
                fields[key] = _text(value)
        for key in ("thread", "process"):
            if fields[key] is None:
                del fields[key]
        return fields

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.producer.send(self.fields(record), time=record.created)
        except Exception:
            self.failures += 1
            self.handleError(record)

    def flush(self) -> None:
        """Waits up to ``flush_timeout`` seconds for what was sent to be delivered."""
        try:
            if self._pid == os.getpid() and not self._producer.closed:
                self._producer.flush(self.flush_timeout)
        except Exception:  # noqa: BLE001 - flush runs from logging.shutdown at exit
            pass

    def close(self) -> None:
        """Delivers what is pending (up to ``close_timeout`` seconds) and closes the producer
        if the handler built it."""
        try:
            if self._owns and self._pid == os.getpid() and not self._producer.closed:
                self._producer.close(self.close_timeout)
        except Exception:  # noqa: BLE001 - close runs from logging.shutdown at exit
            pass
        finally:
            super().close()


_FORMATTER = logging.Formatter()

__all__ = ["LoghoseHandler"]
