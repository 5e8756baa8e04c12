# Checked by `mypy --strict` in tests-py/test_typing.py: each marked line must be an error.
from __future__ import annotations

from loghose import Producer

Producer(endpoint="http://127.0.0.1:1", lingr_ms=10)  # error: misspelt
Producer(endpoint="http://127.0.0.1:1", linger_ms="10")  # error: mistyped
Producer(endpoint="http://127.0.0.1:1", compression="gzip")  # error: not a codec
report: str = Producer(endpoint="x").send_future({"a": "b"}).result()  # error: a DeliveryReport
