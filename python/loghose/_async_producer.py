"""The asyncio front: :class:`AsyncProducer` holds a :class:`Producer`; ``send`` returns a
future of the caller's loop, resolved there when its batch's report comes (one
``call_soon_threadsafe`` per loop and batch of reports); ``flush`` and ``close`` wait in the
loop's executor, so the loop never blocks on delivery."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from ._display import LiveView, Stats
from ._native import DeliveryReport
from ._producer import CloseResult, Contents, Producer

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from ._options import ProducerOptions


class AsyncProducer:
    """The asyncio front: ``send`` returns an awaitable resolved on the caller's loop. Takes
    the same arguments as :class:`Producer`."""

    def __init__(self, *, credentials_provider: Any = None, default: Callable[[Any], Any] | None = None,
                 exit_timeout: float | None = None, **options: Unpack[ProducerOptions]) -> None:
        self._producer = Producer(credentials_provider=credentials_provider, default=default,
                                  exit_timeout=exit_timeout, **options)

    @classmethod
    def from_preset(cls, preset: str, **options: Any) -> AsyncProducer:
        self = cls.__new__(cls)
        self._producer = Producer.from_preset(preset, **options)
        return self

    def send(self, contents: Contents, **options: Any) -> asyncio.Future[DeliveryReport]:
        """Queues one record; await the result for its :class:`DeliveryReport`."""
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        self._producer._track(contents, (loop, future), options)
        return future

    def send_nowait(self, contents: Contents, **options: Any) -> None:
        """Queues one record without tracking it (the fast path)."""
        self._producer.send(contents, **options)

    async def flush(self, timeout: float | None = None) -> int:
        """Sends what is open and waits up to ``timeout`` seconds, off the event loop; returns how many records are
        still pending (0: all settled).
        """
        return await asyncio.get_running_loop().run_in_executor(None, self._producer.flush, timeout)

    async def close(self, timeout: float | None = None) -> CloseResult:
        """:meth:`Producer.close` off the event loop: its :class:`CloseResult`."""
        return await asyncio.get_running_loop().run_in_executor(None, self._producer.close, timeout)

    @property
    def server_address(self) -> tuple[str, int]:
        """The endpoint's host and port (:attr:`Producer.server_address`)."""
        return self._producer.server_address

    def stats(self) -> Stats:
        """The counters (:meth:`Producer.stats`)."""
        return self._producer.stats()

    def live_view(self, interval: float = 0.5) -> LiveView:
        """:meth:`Producer.live_view`."""
        return self._producer.live_view(interval)

    def __repr__(self) -> str:
        return repr(self._producer).replace("loghose.Producer", "loghose.AsyncProducer", 1)

    def metrics(self) -> list[dict[str, Any]]:
        """A snapshot of the metrics (:meth:`Producer.metrics`)."""
        return self._producer.metrics()

    def metrics_text(self, const_labels: Mapping[str, str] | None = None) -> str:
        """The metrics in the Prometheus text format (:meth:`Producer.metrics_text`)."""
        return self._producer.metrics_text(const_labels)

    async def __aenter__(self) -> AsyncProducer:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


