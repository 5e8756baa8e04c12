"""A web service that logs one access record per request through Python's ``logging``.

The handler is configured with ``logging.config.dictConfig``, as a service's settings would;
each request's method, path, status and duration go as fields. The example serves on a free
port of 127.0.0.1, sends itself 200 requests, then stops; at exit the handler delivers what it
holds.

    python examples/python/web_service.py
"""

from __future__ import annotations

import logging
import logging.config
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from _destination import destination

access = logging.getLogger("access")


class Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 (the name http.server calls)
        started = time.perf_counter()
        body = b"hello\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        access.info("request served", extra={"method": "GET", "path": self.path, "status": 200,
                                             "ms": round((time.perf_counter() - started) * 1000, 3)})

    def log_message(self, format: str, *args: object) -> None:
        pass  # the access record above replaces http.server's stderr line


def main() -> None:
    with destination("access") as (options, emu):
        logging.config.dictConfig({
            "version": 1,
            "handlers": {"loghose": {"class": "loghose.logging.LoghoseHandler", "topic": "web", **options}},
            "loggers": {"access": {"handlers": ["loghose"], "level": "INFO", "propagate": False}},
        })
        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        port = server.server_address[1]
        for i in range(200):
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/items/{i}", timeout=10) as answer:
                answer.read()
        server.shutdown()
        handler = logging.getHandlerByName("loghose") if hasattr(logging, "getHandlerByName") else access.handlers[0]
        assert handler is not None
        handler.flush()
        stats = handler.producer.stats()  # type: ignore[attr-defined]
        print(f"200 requests served, {stats['delivered']} access records delivered")
        if emu is not None:
            # Stored per shard, so not in the order sent: every path, each once.
            paths = sorted(dict(log["contents"])["path"] for log in emu.logs("examples", "access"))
            every = paths == sorted(f"/items/{i}" for i in range(200))
            print(f"the emulator holds {len(paths)} records, one for each path requested: {every}")
        logging.shutdown()


if __name__ == "__main__":
    main()
