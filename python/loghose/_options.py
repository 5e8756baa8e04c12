"""The producer's options as a typed dictionary, so a type checker catches a misspelt or
mistyped option (``Producer(lingr_ms=10)``, ``Producer(linger_ms="10")``) before it runs.

Generated from the engine's table of options (core/src/producer/config/options.rs) by
core/tests/generated_options.rs; edit the table, then run
``LOGHOSE_REGENERATE=1 cargo test -p loghose --test generated_options``.
At run time the engine checks every value again and raises ``ConfigError`` naming the
option, its expected type and unit, with a "did you mean" for a misspelt name.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Literal, TypedDict


class ProducerOptions(TypedDict, total=False):
    """Every option of a producer (all optional here; ``endpoint``, ``project`` and
    ``logstore`` are required by the engine; keys not given come from the default credential
    chain)."""

    #: Service endpoint, `http://` or `https://` (scheme optional, `http` by default), e.g.
    #: `https://cn-hangzhou.log.aliyuncs.com` or the emulator's `http://127.0.0.1:PORT`. A host name is addressed as
    #: `{project}.{host}`; an IP address is connected to directly with `Host: {project}.{ip}`. Required.
    endpoint: str

    #: Default project of records. Required, 3 to 63 of [a-z0-9-], beginning and ending with a letter or digit.
    project: str

    #: Default logstore of records. Required, 3 to 63 of [a-z0-9_-], beginning and ending with a letter or digit.
    logstore: str

    #: AccessKeyId (with `access_key_secret`), unless `api_key` or a credentials provider is used. With no credentials
    #: given at all, the default credential chain finds them: `ALIBABA_CLOUD_ACCESS_KEY_ID`,
    #: `ALIBABA_CLOUD_ACCESS_KEY_SECRET` and `ALIBABA_CLOUD_SECURITY_TOKEN`, then an OIDC role, the CLI's and the shared
    #: profile files, the ECS instance role, `ALIBABA_CLOUD_CREDENTIALS_URI` (docs/credentials.md). Default empty.
    access_key_id: str

    #: AccessKeySecret. Default empty.
    access_key_secret: str

    #: STS security token, with a temporary key. Default none.
    security_token: str | None

    #: API key sent as `Authorization: Bearer`; exclusive with access keys. Default none.
    api_key: str | None

    #: Signature version: `v1` (HMAC-SHA1, every SDK's default) or `v4` (SLS4-HMAC-SHA256, needs `region`). Default
    #: `v1`.
    signature_version: Literal["v1", "v4"]

    #: Region for signature v4, e.g. `cn-hangzhou`. Default none.
    region: str | None

    #: Default topic (`__topic__`). Default empty. Up to 128 bytes.
    topic: str

    #: Default source (`__source__`). When absent: this host's outbound IP address. Default none. Up to 128 bytes.
    source: str | None

    #: Tags added to every group, in order, before `__pack_id__`. Keys are 1 to 128 bytes and not `__pack_id__`. Default
    #: none.
    tags: Mapping[str, str] | Iterable[tuple[str, str]]

    #: A batch seals when its raw (uncompressed) size reaches this many bytes (the service takes log groups of up to 5
    #: MiB; the rest is room for topic, source and tags). Default 3 MiB. 1 byte to 4 MiB.
    batch_max_bytes: int

    #: A batch seals when it holds this many logs. Default 4096. 1 to 40 960.
    batch_max_count: int

    #: A batch seals this long after its first log; 0 sends every add at once. Default 2000 ms. 0 ms to 1 h.
    linger_ms: int

    #: Raw bytes held in open, sealed, in-flight and retrying batches at most. Default 64 MiB. 1 byte to 1 TiB, at least
    #: `batch_max_bytes`.
    buffer_max_bytes: int

    #: When the buffer is full, an add waits up to this long for room, then fails with `BufferFull`. 0: fail at once,
    #: never block the caller. Default 0 ms. 0 ms to 1 h.
    max_block_ms: int

    #: The fewest batches at once an adaptive destination (`send_concurrency_mode`) is cut to. Default 1. 1 to 1024.
    send_concurrency_min: int

    #: Batches being sent at once, over every destination; with `send_concurrency_mode` `adaptive`, also the most one
    #: destination may be given. Default 8. 1 to 1024, at least `send_concurrency_min`.
    send_concurrency: int

    #: `adaptive`: each destination (project and logstore) is given as many batches at once as its round trips allow,
    #: from 2, doubling while they stay flat, halved when the service pushes back (403, 429, 503, a timeout) and cut by
    #: a tenth when round trips rise; after a push back its requests are also paced to a rate that grows back slowly
    #: (docs/network.md). `fixed`: always `send_concurrency`, never paced. Default `adaptive`.
    send_concurrency_mode: Literal["adaptive", "fixed"]

    #: Body compression. Default `lz4`.
    compression: Literal["lz4", "zstd", "deflate", "none"]

    #: TCP connect timeout. Default 10 s. 1 ms to 10 min.
    connect_timeout_ms: int

    #: Whole-request timeout. Default 15 s. 1 ms to 1 h.
    request_timeout_ms: int

    #: Attempts per batch, the first included; 1 means no retry. Default 10. 1 to 1 000 000.
    max_attempts: int

    #: First retry delay (full jitter: each delay is random in `[0, min(cap, base·2^n)]`; after a quota answer (403,
    #: 429) at least 500 ms, spread over as much again). Default 200 ms. 1 ms to 1 h.
    backoff_base_ms: int

    #: Longest retry delay. Default 10 s. 1 ms to 1 h, at least `backoff_base_ms`.
    backoff_max_ms: int

    #: A batch not delivered this long after its first log fails. Default 10 min. 1 ms to 30 days.
    delivery_timeout_ms: int

    #: Extra attempts after a 401 (credentials may rotate meanwhile). Default 3. 0 to 1000.
    unauthorized_attempts: int

    #: PEM file of an extra CA to trust for HTTPS (certificate checks stay on). Default none.
    ca_file: str | None

    #: Connect to this `host:port` whatever the endpoint resolves to (the request keeps its Host). Default none.
    remote_address: str | tuple[str, int] | None

    #: Map shard keys onto `shard_buckets` evenly spread hash keys (md5), as the Go and Java producers do. Off: shard
    #: keys are sent as given (hex). Default `false`.
    adjust_shard_hash: bool

    #: Buckets for `adjust_shard_hash`. Default 64. A power of two, 1 to 256.
    shard_buckets: int

    #: Add the `__pack_id__` tag (`PREFIX-SEQ`), stable across retries. Default `true`.
    pack_id: bool

    #: Which field keys an add accepts: `service` (what the service accepts: 1 to 128 bytes of UTF-8 without control
    #: characters, not a reserved name) or `strict` (also `[A-Za-z_][A-Za-z0-9_]*`). Default `service`.
    key_policy: Literal["service", "strict"]

    #: How long dropping a producer (Rust), or closing it when the environment exits (Node), waits for delivery. Default
    #: 2000 ms. 0 ms to 10 min.
    drop_timeout_ms: int

    #: A directory where every accepted record is also kept until its batch is delivered, so that a killed process loses
    #: nothing: the next producer opened on the directory sends what was left. Producers share it: each takes a slot
    #: directory of its own under it (`slot-<n>`), so the worker processes of a pre-fork server can all be given the
    #: same `spool_dir`; what a process that died left in its slot is sent by the next producer that takes the slot, or
    #: within about a second by a live producer on the same directory that finds it unheld. Created private to the user
    #: (0700, files 0600). Absent: memory only. Default none.
    spool_dir: str | None

    #: How many producers may hold a slot of `spool_dir` at once; one more is refused with the spool-locked error naming
    #: the directory and a holder's pid (1: one producer per directory). Default 64. 1 to 1024.
    spool_slots: int

    #: Most bytes of spool files on disk, per producer (per slot); beyond it records wait or fail as for a full buffer.
    #: Default 1 GiB. 1 MiB to 1 PiB.
    spool_max_bytes: int

    #: How far the spool is synced to disk: `none` (survives the process's death, not a power loss), `batch` (each batch
    #: synced before it is sent; when the disk fails the sync, written again on a fresh file) or `interval:<ms>` (a
    #: power loss loses at most the last interval). Whatever it says, a close that leaves records in the spool syncs
    #: them first, and a clean close syncs the directory after deleting its files. Default `none`.
    spool_sync: str

    #: How long the Python and Node fronts spend delivering what is held when the process gets SIGTERM or SIGINT, before
    #: letting the signal take its usual course (the application's own handler, or the default: the process ends by that
    #: signal). 0 turns the handling off. The Rust engine itself installs no handler: a Rust application calls `close`
    #: from its own. Default 5000 ms. 0 ms to 10 min.
    close_on_signal_ms: int

    #: How much of each log's time is written: `s` (seconds only, what the vendor's C producer writes; reads the coarse
    #: clock), `ms` or `ns`. Fewer sub-second digits compress better when many records share a millisecond; `ns` keeps
    #: the order of records within one. Default `ns`.
    time_precision: Literal["s", "ms", "ns"]
