"""A bare WSGI application for gunicorn: each request logs one record naming the request
(``/?id=N`` logs ``request N``) before it is answered. The handler is built at import: in the
master with ``--preload``, in each worker without. ``LOGHOSE_TEST_LINGER_MS`` holds records
in the open batch (and the spool) as long as asked. ``LOGHOSE_TEST_TRACE`` names a file where
each request's process id is noted too (what the test reports when a record is missing)."""

import os
from urllib.parse import parse_qs

import sink

log = sink.logger("wsgi", linger_ms=int(os.environ.get("LOGHOSE_TEST_LINGER_MS", "2000")))
trace = os.environ.get("LOGHOSE_TEST_TRACE")


def app(environ, start_response):
    request = parse_qs(environ.get("QUERY_STRING", "")).get("id", ["-"])[0]
    log.info("request %s", request)
    if trace:
        fd = os.open(trace, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, f"{os.getpid()} {request}\n".encode())
        finally:
            os.close(fd)
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"ok"]
