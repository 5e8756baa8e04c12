"""Where the examples send: the service named by the environment, or an embedded emulator.

Set ``LOGHOSE_ENDPOINT`` (and ``LOGHOSE_PROJECT``, ``LOGHOSE_LOGSTORE``, with keys in
``ALIBABA_CLOUD_ACCESS_KEY_ID`` / ``ALIBABA_CLOUD_ACCESS_KEY_SECRET`` or any source of the default
credential chain) to send to your project; without it each example starts the embedded
emulator and shows what arrived there.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any

import loghose


@contextlib.contextmanager
def destination(logstore: str) -> Iterator[tuple[dict[str, Any], loghose.Emulator | None]]:
    """Producer options for `logstore`, and the emulator when there is no service."""
    endpoint = os.environ.get("LOGHOSE_ENDPOINT")
    if endpoint:
        yield ({"endpoint": endpoint, "project": os.environ.get("LOGHOSE_PROJECT", "my-project"),
                "logstore": os.environ.get("LOGHOSE_LOGSTORE", logstore)}, None)
        return
    with loghose.Emulator() as emu:
        yield dict(emu.producer_options("examples", logstore)), emu
