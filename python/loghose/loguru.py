"""loguru into Log Service: a sink that sends each message as one log.

::

    from loguru import logger
    from loghose.loguru import LoghoseSink

    logger.add(LoghoseSink(**options), serialize=False)

Fields: ``level``, ``logger`` (the record's name), ``message``, ``module``, ``function``,
``line``, ``thread``, ``thread_name``, ``process``, ``exception`` (the traceback text, when
there is one), then every key of ``extra`` (what ``logger.bind(...)`` and
``logger.contextualize(...)`` add) under its own name. The log's time is the record's, to the
microsecond. Values are converted as the producer converts them, anything without a text form
with ``str``.

loguru calls the sink on the logging thread (or on its queue's thread with ``enqueue=True``);
the sink never blocks beyond the producer's ``max_block_ms`` and lets loguru report a record it
could not send (``catch=True``, loguru's default, prints it to stderr), counting it in
``failures``. ``logger.remove()`` stops the sink: it delivers what is pending (up to
``close_timeout`` seconds) and closes the producer if the sink built it. Needs the ``loguru``
package (``pip install 'loghose[loguru]'``).
"""

from __future__ import annotations

from typing import Any

from . import Producer, _sink
from ._sink import ProducerSink, exception_text
from .errors import ProducerClosedError


class LoghoseSink(ProducerSink):
    """A loguru sink sending each message to Log Service; see the module text. ``failures``
    counts the messages that could not be sent."""

    def __init__(self, *, producer: Producer | None = None, close_timeout: float = 10.0, **options: Any) -> None:
        super().__init__(producer, options, close_timeout)

    def write(self, message: Any) -> None:
        """Sends one loguru message (loguru calls it)."""
        record = message.record
        owned = self._owned
        # Most records are written natively, straight from loguru's record, to a producer of
        # this process; an exception to render, a value to convert, a forked child's first
        # record or a closed producer take the long way, which stores the same.
        if owned._forks == _sink._forks and type(record) is dict:
            try:
                if owned._producer._native.send_loguru_record(record):
                    return
            except ProducerClosedError:
                pass  # `live()` builds the sink's own producer again, or reports it
            except Exception:
                self.failures += 1
                raise
        try:
            self._owned.live().send(self._fields(record), time=record["time"].timestamp())
        except Exception:
            self.failures += 1
            raise

    @staticmethod
    def _fields(record: Any) -> dict[str, Any]:
        """The fields of a loguru record, as the module text lists them."""
        thread, process = record["thread"], record["process"]
        fields: dict[str, Any] = {
            "level": record["level"].name,
            "logger": record["name"],
            "message": record["message"],
            "module": record["module"],
            "function": record["function"],
            "line": record["line"],
            "thread": thread.id,
            "thread_name": thread.name,
            "process": process.id,
        }
        exception = record["exception"]
        if exception is not None:
            text = exception_text((exception.type, exception.value, exception.traceback))
            if text is not None:
                fields["exception"] = text
        for key, value in record["extra"].items():
            fields[str(key)] = value
        return fields

    def stop(self) -> None:
        """Delivers what is pending and closes the producer if this sink made it."""
        self._owned.close(self.close_timeout)


__all__ = ["LoghoseSink"]
