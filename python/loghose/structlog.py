"""structlog into Log Service: a processor that sends each event dict as one log.

::

    import structlog
    from loghose.structlog import LoghoseProcessor

    structlog.configure(processors=[structlog.processors.add_log_level, LoghoseProcessor(**options),
                                    structlog.dev.ConsoleRenderer()])

The processor sends the event dict as it stands when the processor runs (so place it after the
processors that add fields, and before the renderer) and passes it on unchanged, so the chain
renders it as before; ``LoghoseProcessor(drop=True)`` ends the chain there instead (raises
``structlog.DropEvent``). Every key becomes a field; values are converted as the producer
converts them, anything without a text form with ``str``. ``exc_info`` becomes the field
``exception`` (the traceback text) unless an earlier processor rendered it. The log's time is
the ``timestamp`` key when it is a number (``TimeStamper(fmt=None)``), else now.

Runs on the logging thread; never raises into the application (a record that cannot be sent is
counted in ``failures`` and reported once per error type on the ``loghose`` logger). Needs the
``structlog`` package (``pip install 'loghose[structlog]'``).
"""

from __future__ import annotations

import logging
from collections.abc import MutableMapping
from typing import Any

from . import Producer, _sink
from ._sink import ProducerSink, exception_text
from .errors import ProducerClosedError

_log = logging.getLogger("loghose")


class LoghoseProcessor(ProducerSink):
    """A structlog processor sending each event to Log Service; see the module text.
    ``failures`` counts the events that could not be sent."""

    def __init__(self, *, producer: Producer | None = None, drop: bool = False, close_timeout: float = 10.0,
                 **options: Any) -> None:
        super().__init__(producer, options, close_timeout)
        self.drop = drop
        self._reported: set[type] = set()
        import structlog

        self._drop_event: type[BaseException] = structlog.DropEvent

    def __call__(self, logger: Any, method_name: str, event_dict: MutableMapping[str, Any]) -> Any:
        owned = self._owned
        try:
            # Most events are written natively, straight from the dict, to a producer of this
            # process; an exception to render, a value to convert, a forked child's first
            # event or a closed producer take the long way, which stores the same.
            sent = False
            if owned._forks == _sink._forks and type(event_dict) is dict:
                try:
                    sent = owned._producer._native.send_event_dict(event_dict, method_name)
                except ProducerClosedError:
                    pass  # `live()` builds the processor's own producer again, or reports it
            if not sent:
                self._send(method_name, event_dict)
        except Exception as error:
            self.failures += 1
            if type(error) not in self._reported:
                self._reported.add(type(error))
                _log.warning("loghose: an event could not be sent to Log Service: %s (counted in failures; "
                             "reported once per error type)", error)
        if self.drop:
            raise self._drop_event
        return event_dict

    def _send(self, method_name: str, event_dict: MutableMapping[str, Any]) -> None:
        fields, time = self._fields(method_name, event_dict)
        self._owned.live().send(fields, time=time)

    @staticmethod
    def _fields(method_name: str, event_dict: MutableMapping[str, Any]) -> tuple[dict[str, Any], float | None]:
        """The fields of an event and its time, as the module text says."""
        fields = dict(event_dict)
        exc_info = fields.pop("exc_info", None)
        if exc_info and "exception" not in fields:
            text = exception_text(exc_info)
            if text is not None:
                fields["exception"] = text
        if "level" not in fields:
            fields["level"] = method_name
        stamp = fields.get("timestamp")
        return fields, stamp if isinstance(stamp, (int, float)) else None

    def close(self) -> None:
        """Delivers what is pending (up to ``close_timeout`` seconds) and closes the producer
        if the processor built it."""
        self._owned.close(self.close_timeout)


__all__ = ["LoghoseProcessor"]
