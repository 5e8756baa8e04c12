"""Scenario S3 from Python: an HTTP service that logs one access record per request.

A small Starlette app under uvicorn (one worker, its own access log off) answers ``GET /`` with
a short JSON body; a middleware logs one record per request through ``logging`` with five
fields (method, path, status, duration, client). ``wrk`` (Debian's) loads it on 127.0.0.1.
Phases, alternated: ``none`` (the same middleware, timing the request, without the log call),
``null`` (the log call, to a
``logging.NullHandler``: what ``logging`` itself costs), ``loghose`` (``LoghoseHandler`` to the
emulator), ``file`` (``logging.FileHandler`` to a local file, one formatted line per request).
Each phase starts a fresh service process, runs ``wrk -t2 -c50 -d<seconds>s``, stops the service
with SIGTERM (uvicorn shuts down, ``logging.shutdown()`` delivers) and checks that every record
it logged arrived. The emulator runs in a child process at nice 10.

    .venv/bin/python lab/python/s3_asgi.py --seconds 10 --phases none,loghose,file,none,loghose,file

Needs ``starlette``, ``uvicorn`` (pip) and ``wrk`` (apt); ``lab/scripts/python-logging.sh`` installs them.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def serve(mode: str, port: int, options_json: str, log_file: str) -> None:
    """The service process: logs per request as `mode` says, prints how many it logged at exit."""
    import logging

    import uvicorn
    from starlette.applications import Starlette
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    logger = logging.getLogger("access")
    logger.setLevel(logging.INFO)
    logger.propagate = False
    if mode == "loghose":
        from loghose.logging import LoghoseHandler

        logger.addHandler(LoghoseHandler(**json.loads(options_json), close_timeout=30))
    elif mode == "null":
        logger.addHandler(logging.NullHandler())
    elif mode == "file":
        handler = logging.FileHandler(log_file)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s method=%(method)s "
                                               "path=%(path)s status=%(status)s ms=%(ms)s client=%(client)s"))
        logger.addHandler(handler)
    logged = 0

    async def home(request: Any) -> JSONResponse:
        return JSONResponse({"ok": True, "service": "s3"})

    class AccessLog:
        def __init__(self, app: Any) -> None:
            self.app = app

        async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
            if scope["type"] != "http":
                await self.app(scope, receive, send)
                return
            start = time.perf_counter()
            status = 500

            async def send_wrapper(message: dict[str, Any]) -> None:
                nonlocal status
                if message["type"] == "http.response.start":
                    status = message["status"]
                await send(message)

            await self.app(scope, receive, send_wrapper)
            if mode == "none":
                return
            nonlocal logged
            logged += 1
            client = scope.get("client") or ("", 0)
            logger.info("request", extra={"method": scope["method"], "path": scope["path"], "status": status,
                                          "ms": round((time.perf_counter() - start) * 1000, 3),
                                          "client": client[0]})

    @contextlib.asynccontextmanager
    async def lifespan(app: Any) -> Any:
        yield
        # uvicorn raises the SIGTERM it caught again once it has stopped, which ends the
        # process (loghose's handler delivers first): the count is told at shutdown.
        print(json.dumps({"logged": logged}), flush=True)

    app = AccessLog(Starlette(routes=[Route("/", home)], lifespan=lifespan))
    config = uvicorn.Config(app, host="127.0.0.1", port=port, access_log=False, log_level="warning", lifespan="on")
    uvicorn.Server(config).run()
    logging.shutdown()


def wait_listening(port: int, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"the service did not listen on {port}")


def phase(mode: str, index: int, seconds: int, emu: Any, directory: str) -> dict[str, Any]:
    port = free_port()
    logstore = f"s3-{mode}-{index}"
    options = {**emu.options, "project": "bench-s3", "logstore": logstore}
    service = subprocess.Popen([sys.executable, __file__, "serve", mode, str(port), json.dumps(options),
                                os.path.join(directory, f"{logstore}.log")], stdout=subprocess.PIPE, text=True)
    try:
        wait_listening(port)
        out = subprocess.run(["wrk", "-t2", "-c50", f"-d{seconds}s", f"http://127.0.0.1:{port}/"],
                             capture_output=True, text=True, timeout=seconds + 60, check=True).stdout
    finally:
        service.send_signal(signal.SIGTERM)
        stdout, _ = service.communicate(timeout=60)
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]
    latency = re.search(r"Latency\s+(\S+)", out)
    logged = json.loads(stdout.strip().splitlines()[-1])["logged"]
    if mode == "loghose":
        received = emu.received("bench-s3", logstore)
    elif mode == "file":
        with open(os.path.join(directory, f"{logstore}.log")) as f:
            received = sum(1 for _ in f)
    else:
        received = logged
    return {"mode": mode, "rps": rps, "latency": latency.group(1) if latency else "?", "logged": logged,
            "lost": logged - received}


def main(argv: list[str]) -> int:
    if argv[:1] == ["serve"]:
        serve(argv[1], int(argv[2]), argv[3], argv[4])
        return 0
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--phases", default="none,loghose,file,none,loghose,file")
    args = parser.parse_args(argv)
    if shutil.which("wrk") is None:
        print("wrk is not installed (apt-get install wrk)", file=sys.stderr)
        return 2
    from loghose_lab import ChildEmulator

    emu = ChildEmulator()
    rows = []
    try:
        with tempfile.TemporaryDirectory() as directory:
            for index, mode in enumerate(args.phases.split(",")):
                row = phase(mode, index, args.seconds, emu, directory)
                print(f"  {row['mode']}: {row['rps']:.0f} requests/s, latency {row['latency']}, "
                      f"{row['logged']} logged, {row['lost']} lost", file=sys.stderr)
                rows.append(row)
    finally:
        emu.close()
    by_mode: dict[str, list[float]] = {}
    for row in rows:
        by_mode.setdefault(row["mode"], []).append(row["rps"])
    base = statistics.median(by_mode["none"]) if "none" in by_mode else None
    print(f"S3 from Python: Starlette under uvicorn (1 worker), wrk -t2 -c50, {args.seconds} s per phase, "
          f"phases {args.phases}")
    print()
    print("| logging | requests/s (median, range) | × no logging | records logged | lost |")
    print("|---|---:|---:|---:|---:|")
    for mode, values in by_mode.items():
        median = statistics.median(values)
        ratio = f"{median / base:.2f}" if base else "—"
        logged = sum(r["logged"] for r in rows if r["mode"] == mode)
        lost = sum(r["lost"] for r in rows if r["mode"] == mode)
        print(f"| {mode} | {median:.0f} ({min(values):.0f}–{max(values):.0f}) | {ratio} | {logged} | {lost} |")
    return 1 if any(r["lost"] for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
