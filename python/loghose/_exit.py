"""Delivery when a process ends, whichever way it ends.

A Python process can end in several ways, and only some of them run ``atexit``:

- a plain exit (the end of the script, ``sys.exit``, an uncaught exception): ``atexit`` runs,
  and :func:`close_all` (registered there by ``loghose``) delivers what every producer holds;
- a child of ``multiprocessing`` started by ``fork`` or ``forkserver`` (pool workers, a
  ``Process``): the child ends with ``os._exit`` once its target returns, so ``atexit`` never
  runs; multiprocessing runs its own finalizers first (``multiprocessing.util.Finalize``),
  and the first producer made in such a child puts :func:`close_all` among them;
- a prefork pool child of celery (billiard): it ends with ``os._exit`` too, skipping even
  multiprocessing's finalizers, but celery sends ``worker_process_shutdown`` just before;
  :func:`close_all` listens to it once celery is imported;
- a signal: see ``loghose._signals``;
- ``os._exit`` called by the application, or a hard kill (SIGKILL, the OOM killer): nothing
  runs. What was not yet delivered is lost unless the producer has a ``spool_dir``, whose
  records the next producer on it delivers.

Each producer waits up to its own exit timeout (``exit_timeout=``, or the ``close_timeout`` of
the handlers that use it, else ``loghose.EXIT_TIMEOUT``): all are sealed first so that they
deliver at once, and the exit takes as long as the slowest needs, at most the longest timeout.
What cannot be delivered in that time is reported by the producer's close (the "failed for
good" warning on the ``loghose`` logger), never dropped silently.

Runs on whichever thread ends the process (the main thread, or the one that runs
multiprocessing's or celery's hooks); never raises.
"""

from __future__ import annotations

import importlib
import os
import sys
import time
from collections.abc import Callable, Iterable
from typing import Any, Protocol


class _Held(Protocol):
    """What this module needs of a producer (``loghose.Producer``)."""

    _pid: int
    _exit_timeout: float | None

    def close(self, timeout: float | None = None) -> int: ...

    def _seal(self) -> None: ...


def close_all(producers: Iterable[_Held], default_timeout: float) -> None:
    """Seals every producer of this process, then closes each, the exit bounded by the longest
    exit timeout among them."""
    pid = os.getpid()
    held = [p for p in producers if p._pid == pid]
    if not held:
        return
    started = time.monotonic()
    for producer in held:
        _quietly(producer._seal)
    for producer in held:
        timeout = producer._exit_timeout if producer._exit_timeout is not None else default_timeout
        _quietly(producer.close, max(0.0, started + timeout - time.monotonic()))


def _quietly(action: Callable[..., object], *args: object) -> None:
    try:
        action(*args)
    except BaseException:  # noqa: BLE001 - never fail the process's exit
        pass


#: The process whose multiprocessing finalizer is in place (0: none yet).
_finalizer_pid = 0
#: The process whose after-fork hook is registered with multiprocessing (0: none yet).
_hooked_pid = 0


class _Token:
    """What multiprocessing's after-fork registry holds (weakly) for this module."""


_TOKEN = _Token()


def arm(at_exit: Callable[[], None]) -> None:
    """Makes sure ``at_exit`` runs however this process ends short of ``os._exit``: called
    each time a producer is made (cheap after the first). ``atexit`` is the caller's."""
    global _hooked_pid
    multiprocessing = sys.modules.get("multiprocessing")
    if multiprocessing is not None:
        pid = os.getpid()
        if _hooked_pid != pid:
            # A child started from this process clears the finalizers it inherited as it
            # begins, then runs the after-fork hooks: this one puts the finalizer back. It
            # also covers a forkserver child, whose producers are made while its main module
            # is imported, before that clearing.
            _hooked_pid = pid
            from multiprocessing import util

            util.register_after_fork(_TOKEN, lambda _: _add_finalizer(at_exit))
        if multiprocessing.parent_process() is not None:
            _add_finalizer(at_exit)
    celery_signals = sys.modules.get("celery.signals")
    if celery_signals is None and "celery" in sys.modules:
        celery_signals = _import_celery_signals()
    if celery_signals is not None:
        _connect_celery(celery_signals, at_exit)


def _add_finalizer(at_exit: Callable[[], None]) -> None:
    """Puts ``at_exit`` among multiprocessing's finalizers of this process, once."""
    global _finalizer_pid
    pid = os.getpid()
    if _finalizer_pid == pid:
        return
    _finalizer_pid = pid
    from multiprocessing import util

    def run() -> None:
        global _finalizer_pid
        # A producer made after this (a record logged by a later finalizer) arms a new one:
        # multiprocessing runs the finalizers registered meanwhile in its last round.
        _finalizer_pid = 0
        at_exit()

    # Priority 0: after the finalizers that stop the application's own work (a pool's, a
    # manager's), which may still log.
    util.Finalize(None, run, exitpriority=0)


def _import_celery_signals() -> Any:
    try:
        return importlib.import_module("celery.signals")
    except Exception:  # noqa: BLE001 - a broken celery install is not this package's failure
        return None


def _connect_celery(celery_signals: Any, at_exit: Callable[[], None]) -> None:
    def on_shutdown(*args: object, **kwargs: object) -> None:
        at_exit()

    # Connected once for the process and its forked children (the dispatch id keeps it one);
    # held strongly, as nothing else refers to this function.
    try:
        celery_signals.worker_process_shutdown.connect(on_shutdown, weak=False, dispatch_uid="loghose.close_all")
    except Exception:  # noqa: BLE001 - celery's signal API changed: atexit still runs elsewhere
        pass
