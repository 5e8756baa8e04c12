"""The `loghose` command of another platform (run by scripts/platforms/test.sh with this
machine's own loghose package, whose emulator serves on 127.0.0.1): `loghose pipe --preset pi`
with a spool follows a file of 20 000 lines, is SIGKILLed once it has read them all (nothing
delivered: the emulator hangs every request), then runs again on the same spool with no input
and delivers what the first one accepted. Every line must arrive; none may be lost.

    python check-command.py WORKDIR COMMAND...   (COMMAND: the runner and the binary)
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import loghose

LINES = 20_000


def read_position(pid: int, path: Path) -> int:
    """How far process `pid` has read the file `path` (from /proc, -1 when it has it not open)."""
    fds = Path(f"/proc/{pid}/fd")
    for fd in fds.iterdir():
        try:
            if Path(os.readlink(fd)) == path:
                info = (Path(f"/proc/{pid}/fdinfo") / fd.name).read_text()
                return int(info.split("pos:", 1)[1].split()[0])
        except OSError:
            continue
    return -1


def main() -> None:
    work, command = Path(sys.argv[1]).resolve(), sys.argv[2:]
    work.mkdir(parents=True, exist_ok=True)
    log = work / "app.log"
    log.write_text("".join(f"line {i}\n" for i in range(LINES)))
    spool = work / "spool"
    with loghose.Emulator() as emu:
        env = dict(os.environ, LOGHOSE_ENDPOINT=emu.endpoint, LOGHOSE_PROJECT="pi-box", LOGHOSE_LOGSTORE="piped",
                   ALIBABA_CLOUD_ACCESS_KEY_ID=emu.access_key_id, ALIBABA_CLOUD_ACCESS_KEY_SECRET=emu.access_key_secret)
        options = ["--preset", "pi", "--option", f"spool_dir={spool}"]
        emu.inject("hang", ms=600_000)
        started = time.monotonic()
        first = subprocess.Popen([*command, "pipe", *options, "--follow", str(log), "--from-start"], env=env)
        deadline = time.monotonic() + 120
        while read_position(first.pid, log) < log.stat().st_size:
            assert first.poll() is None, f"the first command ended: {first.returncode}"
            assert time.monotonic() < deadline, "the first command did not read the file in 120 s"
            time.sleep(0.1)
        time.sleep(1.0)  # the last lines read are sent into the spool
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=30)
        assert emu.totals("pi-box", "piped") is None, "delivered while the emulator hung"
        print(f"first run: read {LINES} lines in {time.monotonic() - started:.1f} s, SIGKILLed, nothing delivered")
        emu.clear_faults()
        second = subprocess.run([*command, "pipe", *options], env=env, stdin=subprocess.DEVNULL,
                                capture_output=True, text=True, timeout=300)
        assert second.returncode == 0, second.stderr
        seen = {dict(entry["contents"])["content"] for entry in emu.logs("pi-box", "piped")}
        stored = emu.totals("pi-box", "piped")
    lost = LINES - len(seen & {f"line {i}" for i in range(LINES)})
    print(f"second run: {stored['logs'] if stored else 0} stored, {lost} of {LINES} lost")
    assert lost == 0


if __name__ == "__main__":
    main()
