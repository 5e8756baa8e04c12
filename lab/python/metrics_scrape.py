"""What a scrape of one producer's metrics costs, by stage, with DESTINATIONS destinations
(each with delivered batches, so every per-destination series exists):

- ``engine``: the engine's snapshot as JSON (``Producer._native.metrics_json``), the part every
  front shares;
- ``text``: ``Producer.metrics_text()``, rendered by the engine in the Prometheus text format
  (what ``loghose.prometheus.make_wsgi_app`` answers);
- ``wsgi``: a GET of ``loghose.prometheus.start_http_server``'s ``/metrics`` (an empty registry
  beside the producer), over HTTP on 127.0.0.1, what Prometheus waits for;
- ``metrics``: ``Producer.metrics()``, the snapshot as Python dicts;
- ``collect``: ``loghose.prometheus.ProducerCollector.collect``, the families prometheus_client
  is handed;
- ``scrape``: ``prometheus_client.generate_latest`` of a registry holding only that collector,
  what ``/metrics`` answers.

Prints the median, min and max milliseconds of RUNS calls of each, and the samples and lines.

    python lab/python/metrics_scrape.py [--destinations 100] [--runs 30]
"""

from __future__ import annotations

import argparse
import statistics
import time
import urllib.request
from collections.abc import Callable

import loghose
import loghose.prometheus
from prometheus_client import CollectorRegistry, generate_latest


def timed(call: Callable[[], object], runs: int) -> str:
    spent = []
    for _ in range(runs):
        start = time.perf_counter()
        call()
        spent.append((time.perf_counter() - start) * 1000)
    return f"{statistics.median(spent):.2f} ms ({min(spent):.2f}-{max(spent):.2f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--destinations", type=int, default=100)
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    with loghose.Emulator() as emu, loghose.Producer(**{**emu.producer_options(), "linger_ms": 5}) as producer:
        for destination in range(args.destinations):
            for i in range(20):
                producer.send({"i": str(i)}, logstore=f"ls{destination:04d}")
        assert producer.flush(60) == 0
        registry = CollectorRegistry()
        collector = loghose.prometheus.register(producer, registry)
        samples = sum(len(family["samples"]) for family in producer.metrics())
        lines = len(generate_latest(registry).splitlines())
        print(f"{args.destinations} destinations: {samples} engine samples, {lines} lines of text")
        print("engine  ", timed(producer._native.metrics_json, args.runs))
        print("metrics ", timed(producer.metrics, args.runs))
        print("collect ", timed(lambda: list(collector.collect()), args.runs))
        print("scrape  ", timed(lambda: generate_latest(registry), args.runs))
        print("text    ", timed(producer.metrics_text, args.runs))
        server, _ = loghose.prometheus.start_http_server(producer, 0, "127.0.0.1", registry=CollectorRegistry())
        url = f"http://127.0.0.1:{server.server_port}/metrics"
        try:
            print("wsgi    ", timed(lambda: urllib.request.urlopen(url).read(), args.runs))
        finally:
            server.shutdown()


if __name__ == "__main__":
    main()
