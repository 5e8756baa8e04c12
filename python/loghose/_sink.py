"""What the ``logging`` handler, the structlog processor and the loguru sink share: a producer
of their own (built from the producer's options) or one passed in, renewed in a forked child,
and closed within a bound, ``close_timeout``, which is also how long the producer may take to
deliver when the process ends (see ``loghose._exit``).

Runs on the thread that logs. A handler that built its own producer builds a new one on a
forked child's first record (the parent's producer and its threads stay the parent's), and on
the first record after it was closed; a producer passed in stays the caller's business, in the
child as elsewhere.
"""

from __future__ import annotations

import os
import threading
import traceback
from collections.abc import Callable
from typing import Any

from . import Producer

#: Forks this process has been through (counted in the child): cheaper to compare per record
#: than ``os.getpid()``, a system call.
_forks = 0


def _after_fork_in_child() -> None:
    global _forks
    _forks += 1


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


class OwnedProducer:
    """A producer built from ``options`` (and closed by :meth:`close`), or ``producer``."""

    def __init__(self, producer: Producer | None, options: dict[str, Any], close_timeout: float) -> None:
        if producer is not None and options:
            raise TypeError(f"pass either producer= or the producer's options, not both: {sorted(options)}")
        self._options = options
        self.owns = producer is None
        self._close_timeout = close_timeout
        self._producer = producer if producer is not None else Producer(**options)
        self._hold_at_exit(self._producer)
        self._pid = os.getpid()
        self._forks = _forks
        self._renew = threading.Lock()
        #: Called with each producer this object builds after the first (a forked child's,
        #: one after close): the integrations' metrics follow the producer records go to.
        self.on_renewal: list[Callable[[Producer], None]] = []

    @property
    def producer(self) -> Producer:
        """The producer records went to last (see :meth:`live`)."""
        return self._producer

    @property
    def close_timeout(self) -> float:
        return self._close_timeout

    @close_timeout.setter
    def close_timeout(self, value: float) -> None:
        self._close_timeout = value
        self._hold_at_exit(self._producer)

    def _hold_at_exit(self, producer: Producer) -> None:
        # The producer waits at exit as long as ``close`` would: exactly, when it is this
        # object's own; when it was passed in, as long as the longest of its users asks.
        if self.owns or producer._exit_timeout is None:
            producer._exit_timeout = self._close_timeout
        else:
            producer._exit_timeout = max(producer._exit_timeout, self._close_timeout)

    def live(self) -> Producer:
        """The producer the next record goes to: in a forked child, the child's own; after
        :meth:`close`, a new one (as ``logging.FileHandler`` reopens its file: ``dictConfig``
        closes every handler it replaces, and a logger may still hold one)."""
        producer = self._producer
        if self.owns and (self._forks != _forks or producer.closed):
            with self._renew:
                if self._forks != _forks or self._producer.closed:
                    # The parent's producer and its threads stay the parent's.
                    self._producer = Producer(**self._options)
                    self._hold_at_exit(self._producer)
                    self._pid = os.getpid()
                    self._forks = _forks
                    for renewed in self.on_renewal:
                        renewed(self._producer)
                producer = self._producer
        return producer

    def flush(self, timeout: float) -> int:
        """Waits up to ``timeout`` seconds for delivery; never raises (runs at exit)."""
        try:
            if self._pid == os.getpid() and not self._producer.closed:
                return self._producer.flush(timeout)
        except Exception:  # noqa: BLE001 - flush runs from shutdown hooks at exit
            pass
        return 0

    def close(self, timeout: float) -> None:
        """Delivers what is pending (up to ``timeout`` seconds) and closes the producer if it
        is this object's own; never raises (runs at exit)."""
        try:
            if self.owns and self._pid == os.getpid() and not self._producer.closed:
                self._producer.close(timeout)
        except Exception:  # noqa: BLE001 - close runs from shutdown hooks at exit
            pass


class ProducerSink:
    """The base of the three integrations: the producer they send to, ``close_timeout`` and
    ``failures``."""

    def __init__(self, producer: Producer | None, options: dict[str, Any], close_timeout: float) -> None:
        # A value without a text form is written with str(): logging never fails a record for it.
        self._owned = OwnedProducer(producer, {"default": str, **options} if options else {}, close_timeout)
        #: Records that could not be sent.
        self.failures = 0

    @property
    def producer(self) -> Producer:
        """The producer records went to last (a new one is built in a forked child, and after close)."""
        return self._owned.producer

    @property
    def close_timeout(self) -> float:
        """Seconds ``close`` waits for delivery, and the producer at the process's end."""
        return self._owned.close_timeout

    @close_timeout.setter
    def close_timeout(self, value: float) -> None:
        self._owned.close_timeout = value


def exception_text(exc_info: Any) -> str | None:
    """The traceback text of ``exc_info`` (an exception, a ``sys.exc_info()`` triple, or
    ``True`` for the exception being handled), or None when there is none."""
    if exc_info is True:
        import sys

        exc_info = sys.exc_info()
    if isinstance(exc_info, BaseException):
        exc_info = (type(exc_info), exc_info, exc_info.__traceback__)
    if isinstance(exc_info, tuple) and len(exc_info) == 3 and exc_info[0] is not None:
        return "".join(traceback.format_exception(*exc_info)).rstrip("\n")
    return None
