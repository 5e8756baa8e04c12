"""The embedded SLS emulator (:class:`Emulator`): the engine's Log Service emulator on a free
port of 127.0.0.1, in this process, for tests and offline development; faults injected
through it reach every producer pointed at it."""

from __future__ import annotations

import json
from typing import Any

from . import _native
from ._options import ProducerOptions


class Emulator:
    """The embedded SLS emulator, in this process: ``with Emulator() as emu: emu.endpoint``."""

    def __init__(self, **config: Any) -> None:
        self._native = _native.NativeEmulator(json.dumps(config))

    @property
    def endpoint(self) -> str:
        """The emulator's URL (``http://127.0.0.1:PORT``), for a producer's ``endpoint``."""
        return self._native.endpoint

    @property
    def access_key_id(self) -> str:
        """The access key id the emulator accepts."""
        return self._native.access_key_id

    @property
    def access_key_secret(self) -> str:
        """The secret of :attr:`access_key_id`."""
        return self._native.access_key_secret

    def producer_options(self, project: str = "loghose", logstore: str = "logs") -> ProducerOptions:
        """Options that point a Producer at this emulator."""
        return {"endpoint": self.endpoint, "project": project, "logstore": logstore,
                "access_key_id": self.access_key_id, "access_key_secret": self.access_key_secret}

    def logs(self, project: str, logstore: str) -> list[dict[str, Any]]:
        """Stored logs: time, time_ns, topic, source, tags and contents (lists of pairs), shard."""
        logs: list[dict[str, Any]] = json.loads(self._native.logs_json(project, logstore))
        return logs

    def totals(self, project: str, logstore: str) -> dict[str, int] | None:
        """How many logs and groups the logstore holds (None when it does not exist)."""
        totals: dict[str, int] | None = json.loads(self._native.totals_json(project, logstore))
        return totals

    def counters(self) -> dict[str, Any]:
        """The emulator's counters: requests, logs, bytes, rejects by error code, duplicates."""
        counters: dict[str, Any] = json.loads(self._native.counters_json())
        return counters

    def inject(self, kind: str, **fault: Any) -> None:
        """Adds a fault: ``inject("error", status=503, code="ServerBusy", count=3)``,
        ``inject("latency", ms=200, window_ms=1000)``, ``inject("reset", count=1)``,
        ``inject("hang", ms=5000, count=1)``, and, to test what a retry of a batch the server
        already kept does, ``inject("store_then_error", count=1)`` (stored, then answered 500)
        or ``inject("store_then_reset", count=1)`` (stored, then the connection dropped); the
        counters' ``duplicate_groups`` counts groups whose ``__pack_id__`` arrived twice."""
        self._native.inject_json(json.dumps({"kind": kind, **fault}))

    def clear_faults(self) -> None:
        """Removes every fault injected with :meth:`inject`."""
        self._native.clear_faults()

    def reset(self) -> None:
        """Forgets every stored log and counter, and clears the faults."""
        self._native.reset()

    def replace_sts_keys(self, keys: list[dict[str, str]]) -> None:
        """Replaces the temporary (STS) keys (``[{"id", "secret", "token"}]``): requests signed
        with a key no longer listed are refused with 401, as the service refuses an expired
        token. Start the emulator with ``sts_keys=[...]`` for the first ones."""
        self._native.replace_sts_keys_json(json.dumps(keys))

    def create_logstore(self, project: str, logstore: str, shards: int | None = None) -> None:
        """Creates ``project``/``logstore`` with ``shards`` shards (projects and logstores are also made on first
        write).
        """
        self._native.create_logstore(project, logstore, shards)

    def close(self) -> None:
        """Stops the emulator (also at the end of a ``with`` block)."""
        self._native.close()

    def __enter__(self) -> Emulator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


