"""A script that follows a log file as ``tail -F`` does and sends each new line as a record.

A writer thread stands in for your application: it appends lines to a file, rotates it once
(renames it and starts a new one), and stops. The follower reads what is appended, notices the
rotation by the file's identity, finishes the old file and goes on with the new one. (The
``loghose pipe --follow FILE`` command does the same from the shell.)

    python examples/python/follow_file.py
"""

from __future__ import annotations

import os
import tempfile
import threading
import time
from pathlib import Path

import loghose
from _destination import destination

LINES = 1000


def write_and_rotate(path: Path, done: threading.Event) -> None:
    for i in range(LINES):
        if i == LINES // 2:
            path.rename(path.with_suffix(".log.1"))  # rotated: a new file takes the name
        with path.open("a") as f:
            f.write(f"line {i}: user=ada action=view\n")
        if i % 100 == 0:
            time.sleep(0.01)
    done.set()


def follow(path: Path, producer: loghose.Producer, done: threading.Event) -> int:
    sent, handle, identity, partial = 0, None, None, ""
    while True:
        if handle is None and path.exists():
            handle = path.open()
            identity = os.fstat(handle.fileno()).st_ino
        if handle is not None:
            for chunk in iter(handle.readline, ""):
                partial += chunk
                if partial.endswith("\n"):
                    producer.send({"content": partial.rstrip("\n"), "file": path.name})
                    sent, partial = sent + 1, ""
            if path.exists() and os.stat(path).st_ino != identity:
                handle.close()  # read to its end above: go on with the new file
                handle = None
                continue
        if done.is_set() and handle is not None and handle.tell() == os.fstat(handle.fileno()).st_size:
            return sent
        time.sleep(0.05)


def main() -> None:
    with destination("files") as (options, emu), tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "app.log"
        done = threading.Event()
        writer = threading.Thread(target=write_and_rotate, args=(path, done))
        with loghose.Producer(**options, linger_ms=200) as producer:
            writer.start()
            sent = follow(path, producer, done)
            writer.join()
        print(f"followed {sent} lines across one rotation; undelivered: {producer.stats()['failed']}")
        if emu is not None:
            print(f"the emulator holds {len(emu.logs('examples', 'files'))} of them")


if __name__ == "__main__":
    main()
