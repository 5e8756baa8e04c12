# Checked by `mypy --strict` in tests-py/test_typing.py: the documented uses type-check.
from __future__ import annotations

import concurrent.futures

import loghose
from loghose import DeliveryReport, Producer


def main(endpoint: str) -> int:
    with Producer(endpoint=endpoint, project="p", logstore="l", access_key_id="id", access_key_secret="s",
                  linger_ms=100, compression="zstd", tags={"env": "dev"}, spool_dir=None,
                  default=str, credentials_provider=lambda: ("id", "secret", None)) as producer:
        producer.send({"level": "INFO", "n": 1})
        future: concurrent.futures.Future[DeliveryReport] = producer.send_future({"msg": "tracked"})
        report = future.result(timeout=10)
        attempts: int = report.attempts
        left: int = producer.flush(5)
    version: str = loghose.__version__
    return attempts + left + len(version)
