"""The `loghose` command of another platform (run by scripts/platforms/test.sh with this
machine's own loghose package, whose emulator serves on 127.0.0.1): `loghose pipe --preset pi`
with a spool follows a file of 20 000 lines, is SIGKILLed once it has read them all (nothing
delivered: the emulator hangs every request), then runs again on the same spool with no input
and delivers what the first one accepted. Every line must arrive; none may be lost. Then a
third run reads 100 lines from a pipe it is not told has ended, with a minute's linger, and is
interrupted (SIGINT: what a terminal's Ctrl-C sends; under Wine, the Windows program's Ctrl-C,
as Wine delivers a console's): it delivers the 100 lines and exits 0; so does a fourth, whose
pipe closes just after the signal.

    python check-command.py WORKDIR COMMAND...   (COMMAND: the runner and the binary)
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
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
        env = dict(
            os.environ,
            LOGHOSE_ENDPOINT=emu.endpoint,
            LOGHOSE_PROJECT="pi-box",
            LOGHOSE_LOGSTORE="piped",
            ALIBABA_CLOUD_ACCESS_KEY_ID=emu.access_key_id,
            ALIBABA_CLOUD_ACCESS_KEY_SECRET=emu.access_key_secret,
        )
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
        second = subprocess.run(
            [*command, "pipe", *options], env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=300
        )
        assert second.returncode == 0, second.stderr
        seen = {dict(entry["contents"])["content"] for entry in emu.logs("pi-box", "piped")}
        stored = emu.totals("pi-box", "piped")
        lost = LINES - len(seen & {f"line {i}" for i in range(LINES)})
        print(f"second run: {stored['logs'] if stored else 0} stored, {lost} of {LINES} lost")
        assert lost == 0
        interrupted(command, env, emu)


def interrupted(command: list[str], env: dict[str, str], emu: loghose.Emulator) -> None:
    """Ctrl-C flushes: 100 lines read from a pipe, held by a minute's linger, are delivered when
    the command is interrupted, and it exits 0; with the pipe left open, and with the pipe
    closed just after the signal (`app | loghose pipe` in a terminal: Ctrl-C ends both)."""
    for run, ends_input in (("third", False), ("fourth", True)):
        logstore = f"interrupted-{run}"
        process = subprocess.Popen(
            [*command, "pipe", "--option", "linger_ms=60000", "--metrics-addr", "127.0.0.1:0"],
            env=dict(env, LOGHOSE_LOGSTORE=logstore),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert process.stdin is not None and process.stderr is not None
        try:
            announced = process.stderr.readline().decode()
            assert "metrics at " in announced, announced
            metrics = announced.split("metrics at ", 1)[1].strip()
            process.stdin.write(b"".join(f"kept {i}\n".encode() for i in range(100)))
            process.stdin.flush()
            # Interrupted once it has taken every line (its signal handlers are in place by then).
            deadline = time.monotonic() + 60
            while (
                "loghose_records_accepted_total 100\n"
                not in urllib.request.urlopen(metrics, timeout=10).read().decode()
            ):
                assert time.monotonic() < deadline, "the lines were not taken in 60 s"
                time.sleep(0.1)
            time.sleep(1.0)
            assert process.poll() is None and emu.totals("pi-box", logstore) is None, "sent before the linger ended"
            process.send_signal(signal.SIGINT)
            if ends_input:
                process.stdin.close()
            process.wait(timeout=60)
            stderr = process.stderr.read().decode()
        finally:
            process.kill()
        stored = emu.totals("pi-box", logstore)
        print(
            f"{run} run: interrupted{', its input ended' if ends_input else ''}: exit {process.returncode}, "
            f"{stored['logs'] if stored else 0} of 100 stored"
        )
        assert process.returncode == 0, stderr
        assert stored is not None and stored["logs"] == 100, (stored, stderr)


if __name__ == "__main__":
    main()
