"""loghose: a fast, lossless log producer for Alibaba Cloud Log Service (SLS).

The engine is native (``loghose._native``); this package is its thin Python front::

    from loghose import Producer

    with Producer(endpoint="https://cn-hangzhou.log.aliyuncs.com", project="my-project", logstore="app-logs",
                  access_key_id="...", access_key_secret="...") as producer:
        producer.send({"level": "INFO", "msg": "hello"})

Threading: ``send`` may be called from any thread. Reports (``on_delivery``, futures) are
delivered on the producer's reporter thread, in batches; asyncio futures are resolved on their
own loop with one ``call_soon_threadsafe`` per batch of reports. ``flush``/``close`` release the
GIL and can be interrupted with Ctrl-C. Producers still open when the process ends deliver
within their exit timeout: at interpreter exit, and at the end of a multiprocessing or celery
child, which skips ``atexit`` (see ``loghose._exit``); on SIGTERM and SIGINT they deliver within
``close_on_signal_ms`` before the signal takes its usual course (see ``loghose._signals``); a
producer inherited through ``fork()`` raises :class:`LoghoseError` in the child (create a new
one there).
"""

from __future__ import annotations

from ._async_producer import AsyncProducer
from ._display import LiveView, Stats
from ._emulator import Emulator
from ._native import DeliveryReport, engine_version
from ._options import ProducerOptions
from ._producer import CloseResult, Producer
from .errors import (
    BufferFullError,
    ConfigError,
    DeliveryError,
    InvalidRecordError,
    LoghoseError,
    ProducerClosedError,
    SpoolLockedError,
)

#: This package's version (the engine's: one version for the wheel, the addon and the crate).
__version__ = engine_version()

#: Seconds a producer still open when the process ends may take to deliver what it holds,
#: unless it says otherwise (``exit_timeout=``, or the ``close_timeout`` of a handler using it).
#: Read at exit, so it may be set any time before.
EXIT_TIMEOUT = 5.0

# The public classes are documented, and shown, as this package's.
for _public in (Producer, AsyncProducer, Emulator, LiveView, Stats):
    _public.__module__ = __name__
del _public

__all__ = [
    "AsyncProducer",
    "BufferFullError",
    "CloseResult",
    "ConfigError",
    "DeliveryError",
    "DeliveryReport",
    "Emulator",
    "InvalidRecordError",
    "LiveView",
    "LoghoseError",
    "Producer",
    "ProducerClosedError",
    "ProducerOptions",
    "SpoolLockedError",
    "Stats",
    "__version__",
    "engine_version",
]
