"""The producer's options as a typed dictionary, so a type checker catches a misspelt or
mistyped option (``Producer(lingr_ms=10)``, ``Producer(linger_ms="10")``) before it runs.

The engine's ``ProducerConfig`` is the one source of the options, their defaults, units and
ranges; this is its Python spelling, and ``tests-py/test_typing.py`` checks that the two list
the same names. At run time the engine checks every value again and raises ``ConfigError``
naming the option, its expected type and unit, with a "did you mean" for a misspelt name.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Literal, TypedDict


class ProducerOptions(TypedDict, total=False):
    """Every option of a producer (all optional here; ``endpoint``, ``project``, ``logstore``
    and credentials are required by the engine unless the environment supplies the keys)."""

    endpoint: str
    project: str
    logstore: str
    access_key_id: str
    access_key_secret: str
    security_token: str | None
    api_key: str | None
    signature_version: Literal["v1", "v4"]
    region: str | None
    topic: str
    source: str | None
    tags: Mapping[str, str] | Iterable[tuple[str, str]]
    batch_max_bytes: int
    batch_max_count: int
    linger_ms: int
    buffer_max_bytes: int
    max_block_ms: int
    send_concurrency: int
    compression: Literal["none", "lz4", "zstd", "deflate"]
    connect_timeout_ms: int
    request_timeout_ms: int
    max_attempts: int
    backoff_base_ms: int
    backoff_max_ms: int
    delivery_timeout_ms: int
    unauthorized_attempts: int
    ca_file: str | None
    remote_address: str | tuple[str, int] | None
    adjust_shard_hash: bool
    shard_buckets: int
    pack_id: bool
    key_policy: Literal["service", "strict"]
    drop_timeout_ms: int
    spool_dir: str | None
    spool_slots: int
    spool_max_bytes: int
    spool_sync: str
    close_on_signal_ms: int
    time_precision: Literal["s", "ms", "ns"]
