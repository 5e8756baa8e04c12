"""The handler every server application here logs through, pointed at the test's emulator by
the environment (``LOGHOSE_TEST_*``), and the logger it is on."""

from __future__ import annotations

import logging
import os
from typing import Any

from loghose.logging import LoghoseHandler


def options() -> dict[str, Any]:
    """The producer's options: the emulator, the logstore and, when set, the spool."""
    env = os.environ
    options: dict[str, Any] = {
        "endpoint": env["LOGHOSE_TEST_ENDPOINT"], "project": "proj", "logstore": env["LOGHOSE_TEST_LOGSTORE"],
        "access_key_id": env["LOGHOSE_TEST_KEY_ID"], "access_key_secret": env["LOGHOSE_TEST_KEY_SECRET"],
    }
    if env.get("LOGHOSE_TEST_SPOOL"):
        options["spool_dir"] = env["LOGHOSE_TEST_SPOOL"]
    return options


def handler(**extra: Any) -> LoghoseHandler:
    return LoghoseHandler(**options(), **extra)


def logger(name: str = "app", **extra: Any) -> logging.Logger:
    """A logger of its own with the handler on it, at INFO (servers set the root's level)."""
    log = logging.getLogger(name)
    log.addHandler(handler(**extra))
    log.setLevel(logging.INFO)
    log.propagate = False
    return log
