"""Delivery on SIGTERM and SIGINT, then the signal's usual course.

``docker stop`` and Kubernetes send SIGTERM, whose default ends a Python process at once: no
``atexit``, so whatever a producer still held was lost. When a producer with
``close_on_signal_ms > 0`` (the default, 5 000) is created on the main thread, this module puts
one handler on SIGTERM and SIGINT for the whole process, unless the signal is ignored
(``SIG_IGN``) or was set outside Python. On a signal the handler, on the main thread:

- if the signal's previous disposition was the default (``SIG_DFL``: the process would end),
  closes every live producer within the bound (new sends raise ``ProducerClosedError`` from
  then on), puts the default back and raises the signal again, so the process ends by it
  exactly as it would have (exit status -15 for SIGTERM);
- otherwise (Python's ``KeyboardInterrupt`` for SIGINT, or the application's own handler, set
  before the producer), waits within the bound for the records accepted before the signal, then
  calls the previous handler, which goes on as it would have: ``KeyboardInterrupt`` still
  reaches the application, its handler still runs. What the application sends after that is
  delivered by ``close`` or at exit, as usual; and if the application then ends the process by
  the signal itself, putting the default back and raising it again (as servers that capture
  signals before importing the application do: uvicorn), that goes through this handler too:
  from the first such signal on, ``signal.signal(SIGTERM or SIGINT, SIG_DFL)`` installs this
  handler with the default as the one to pass on to, so the re-raised signal closes every
  producer within the bound before it ends the process. (``signal.getsignal`` then answers
  this handler, as it does whenever the default was in place when a producer was made.)

Two cases go straight to the previous handler: a second signal while the first is being
handled (a second Ctrl-C, or a second SIGTERM, ends things at once), and SIGINT while the main
thread is already waiting in a producer's ``flush`` or ``close`` (Ctrl-C there means "stop
waiting", as it always did).

A handler the application sets after the producer replaces this one; the application then
decides (``sys.exit`` from it still delivers through ``atexit``). Threads other than the main
one never install anything (Python allows handlers only there).

Where the handler stands in for the default, a native watchdog (``loghose._native``, Unix)
backs it: Python runs handlers only between bytecodes on the main thread, and a main thread
asleep in a system call that the signal just missed (a multiprocessing pool worker stopped by
``terminate()``, waiting on the task queue's lock) would never run it, where the default would
have ended the process. If this handler has not started a quarter of a second after the
signal, the watchdog delivers natively within the same bound and ends the process by the
signal. A forked child keeps the handler and gets a watchdog of its own at the fork.
"""

from __future__ import annotations

import functools
import os
import signal
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any, Protocol

from . import _native

#: Signals handled, and the handler each had before (what the process would have done).
_previous: dict[int, Any] = {}
_lock = threading.Lock()
#: Whether a signal is being handled (a second one goes straight to the previous handler).
_handling = False
#: How many flush/close calls the main thread is in (see ``waiting``).
_waiting = 0


@contextmanager
def waiting() -> Iterator[None]:
    """Marks a flush or close in progress (counted when on the main thread)."""
    global _waiting
    main = threading.current_thread() is threading.main_thread()
    if main:
        _waiting += 1
    try:
        yield
    finally:
        if main:
            _waiting -= 1


class _Held(Protocol):
    """What this module needs of a producer (``loghose.Producer``)."""

    _pid: int
    _close_on_signal_ms: int

    def close(self, timeout: float | None = None) -> int: ...

    def _flush_accepted(self, timeout: float) -> int: ...

    def _seal(self) -> None: ...


_producers: Callable[[], Iterable[_Held]] = lambda: ()  # noqa: E731 - replaced by install()


def install(producers: Callable[[], Iterable[_Held]]) -> bool:
    """Puts the handler on SIGTERM and SIGINT (once per process); ``producers`` lists the live
    ones. Returns whether the handler is in place; never raises."""
    global _producers
    if threading.current_thread() is not threading.main_thread():
        return False
    with _lock:
        _producers = producers
        for signum in (signal.SIGTERM, signal.SIGINT):
            if signum in _previous:
                # A forked child inherits the handler; its watchdog is its own.
                if _previous[signum] is signal.SIG_DFL and signal.getsignal(signum) is _on_signal:
                    _native.arm_signal(signum)
                continue
            try:
                previous = signal.getsignal(signum)
                if previous is signal.SIG_IGN or previous is None:
                    continue  # ignored on purpose, or owned by C code: not ours to change
                signal.signal(signum, _on_signal)
            except (ValueError, OSError):
                continue  # not the main interpreter, or a platform without the signal
            _previous[signum] = previous
            if previous is signal.SIG_DFL:
                _native.arm_signal(signum)
    return bool(_previous)


def _on_signal(signum: int, frame: FrameType | None) -> None:
    global _handling
    watchdog_delivering = _native.signal_handler_started(signum)
    previous = _previous.get(signum, signal.SIG_DFL)
    ends_process = previous is signal.SIG_DFL
    if ends_process and watchdog_delivering:
        return  # the watchdog took this signal before the main thread could: it ends the process
    if _handling or (_waiting and not ends_process):
        _pass_on(signum, frame, previous)
        return
    _handling = True
    try:
        _deliver(ends_process)
    finally:
        _handling = False
    if not ends_process:
        _watch_restores()
    _pass_on(signum, frame, previous)


#: ``signal.signal`` as it was before ``_watch_restores`` (None: not watching).
_real_signal: Any = None


def _watch_restores() -> None:
    """From now on, the default put back on a handled signal keeps delivery in front of it."""
    global _real_signal
    if _real_signal is not None:
        return
    real = _real_signal = signal.signal

    @functools.wraps(real)
    def signal_keeping_delivery(signalnum: Any, handler: Any) -> Any:
        if handler == signal.SIG_DFL and signalnum in _previous and _holds_producers():
            old = real(signalnum, _on_signal)
            _previous[signal.Signals(signalnum)] = signal.SIG_DFL
            _native.arm_signal(signalnum)
            return old
        return real(signalnum, handler)

    signal.signal = signal_keeping_delivery


def _holds_producers() -> bool:
    pid = os.getpid()
    return any(p._pid == pid and p._close_on_signal_ms > 0 for p in _producers())


def _deliver(ends_process: bool) -> None:
    pid = os.getpid()
    held = [p for p in _producers() if p._pid == pid and p._close_on_signal_ms > 0]
    deadline = time.monotonic() + max((p._close_on_signal_ms for p in held), default=0) / 1000
    # Seal every producer's open batches first, so they all send at once.
    for producer in held:
        _quietly(producer._seal)
    for producer in held:
        remaining = max(0.0, deadline - time.monotonic())
        if ends_process:
            _quietly(producer.close, remaining)
        else:
            _quietly(producer._flush_accepted, remaining)


def _pass_on(signum: int, frame: FrameType | None, previous: Any) -> None:
    """The signal's own course: the previous handler, or the default action."""
    if previous is signal.SIG_DFL:
        (_real_signal or signal.signal)(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
    elif callable(previous):
        previous(signum, frame)


def _quietly(action: Callable[..., object], *args: object) -> None:
    try:
        action(*args)
    except Exception:  # noqa: BLE001 - a signal handler must reach the previous handler
        pass


def _arm_in_child() -> None:
    """A forked child keeps this handler but not the parent's watchdog thread: it gets its own
    at once, not when it first makes a producer. A pool worker forked before it logs anything
    (a forkserver's, whose server imported the application) and stopped by ``terminate()``
    while it sleeps on the task queue's lock would otherwise never end."""
    for signum, previous in list(_previous.items()):
        try:
            if previous is signal.SIG_DFL and signal.getsignal(signum) is _on_signal:
                _native.arm_signal(signum)
        except (ValueError, OSError):
            continue


# Only where the platform forks (not on Windows).
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_arm_in_child)
