"""The producer's metrics in a ``prometheus_client`` registry (extra ``loghose[prometheus]``).

::

    from prometheus_client import start_http_server
    import loghose.prometheus

    loghose.prometheus.register(producer)   # the default registry
    start_http_server(9464)                 # http://localhost:9464/metrics

Each scrape reads a snapshot from the engine (``Producer.metrics()``): the counters ``stats()``
reads and the per-destination meters the I/O threads keep; nothing is counted twice and nothing
runs on the send path. Names, types, units, help texts and labels come from the engine's table
(``loghose_records_delivered_total{project,logstore}``, ``loghose_request_duration_seconds``…),
the same the command serves with ``--metrics-addr`` and Node registers with prom-client.

The collector holds its producer weakly: a producer that is closed and gone leaves its series
out of the next scrape. Several producers in one registry need a ``const_labels`` each
(e.g. ``{"producer": "audit"}``), or their series would clash.

prometheus_client builds and formats every line in Python (about 8 µs a line: 30 ms for a
producer with 100 destinations). Where that matters, serve the engine's own rendering instead
(``Producer.metrics_text``, under 1 ms for the same producer), with the registry's other
metrics after it::

    loghose.prometheus.start_http_server(producer, 9464)   # not register() as well

:func:`make_wsgi_app` is the same as a WSGI application, for a server of your own.
"""

from __future__ import annotations

import json
import threading
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any
from wsgiref.simple_server import WSGIRequestHandler, make_server

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.exposition import ThreadingWSGIServer, generate_latest
from prometheus_client.registry import REGISTRY, CollectorRegistry
from prometheus_client.utils import floatToGoString

from . import _native

if TYPE_CHECKING:
    from . import AsyncProducer, Producer

__all__ = ["ProducerCollector", "make_wsgi_app", "register", "start_http_server"]

# The engine renders the text format 0.0.4 (prometheus_client's own lines are compatible with it).
TEXT_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

_TABLE: list[dict[str, Any]] = json.loads(_native.metric_table_json())


def _family(spec: Mapping[str, Any], label_names: list[str]) -> Metric:
    kinds: dict[str, type[Metric]] = {
        "counter": CounterMetricFamily, "gauge": GaugeMetricFamily, "histogram": HistogramMetricFamily,
    }
    name: str = spec["name"]
    help_text: str = spec["help"]
    unit: str = spec["unit"]
    return kinds[spec["type"]](name, help_text, labels=label_names, unit=unit)  # type: ignore[call-arg]


class ProducerCollector:
    """A ``prometheus_client`` collector of one producer's metrics."""

    def __init__(self, producer: Producer | AsyncProducer,
                 const_labels: Mapping[str, str] | None = None) -> None:
        # An AsyncProducer sends through the Producer it holds.
        inner: Producer = producer._producer if hasattr(producer, "_producer") else producer
        self._producer: weakref.ref[Producer] = weakref.ref(inner)
        self._const = dict(const_labels or {})

    def describe(self) -> Iterator[Metric]:
        """The families without samples (how a registry learns the names it will hold)."""
        for spec in _TABLE:
            yield _family(spec, [*self._const, *spec["labels"]])

    def collect(self) -> Iterator[Metric]:
        """The producer's metrics as Prometheus metric families (the registry calls it at scrape time)."""
        producer = self._producer()
        if producer is None:
            return
        for spec in producer.metrics():
            family = _family(spec, [*self._const, *spec["labels"]])
            for sample in spec["samples"]:
                labels = [*self._const.values(), *sample["labels"].values()]
                histogram = sample.get("histogram")
                if histogram is None:
                    family.add_metric(labels, sample["value"])  # type: ignore[attr-defined]
                    continue
                buckets: list[tuple[str, float]] = [
                    (floatToGoString(bound), count)  # type: ignore[no-untyped-call]
                    for bound, count in zip(histogram["bounds"], histogram["cumulative"], strict=True)
                ]
                buckets.append(("+Inf", histogram["count"]))
                family.add_metric(labels, buckets, histogram["sum"])  # type: ignore[attr-defined]
            yield family


def register(producer: Producer | AsyncProducer, registry: CollectorRegistry = REGISTRY,
             const_labels: Mapping[str, str] | None = None) -> ProducerCollector:
    """Registers ``producer``'s metrics with ``registry`` (the default one unless given);
    returns the collector, for ``registry.unregister``."""
    collector = ProducerCollector(producer, const_labels)
    registry.register(collector)
    return collector


def make_wsgi_app(producer: Producer | AsyncProducer, registry: CollectorRegistry | None = REGISTRY,
                  const_labels: Mapping[str, str] | None = None) -> Callable[..., Iterable[bytes]]:
    """A WSGI application answering every GET with ``producer``'s metrics rendered by the engine
    (``Producer.metrics_text``), then ``registry``'s (the default one unless given; ``None``:
    the producer's alone). The registry must not also hold a collector of the same producer
    (from :func:`register`): its series would be exposed twice. Holds the producer weakly."""
    inner: Producer = producer._producer if hasattr(producer, "_producer") else producer
    ref: weakref.ref[Producer] = weakref.ref(inner)
    labels = dict(const_labels or {})
    inner.metrics_text(labels)  # a label name that cannot be used fails here, not at each scrape

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if environ.get("REQUEST_METHOD", "GET") not in ("GET", "HEAD"):
            start_response("405 Method Not Allowed", [("Allow", "GET, HEAD")])
            return [b""]
        live = ref()
        body = live.metrics_text(labels).encode() if live is not None else b""
        if registry is not None:
            body += generate_latest(registry)
        start_response("200 OK", [("Content-Type", TEXT_CONTENT_TYPE), ("Content-Length", str(len(body)))])
        return [b""] if environ.get("REQUEST_METHOD") == "HEAD" else [body]

    return app


class _QuietHandler(WSGIRequestHandler):
    """Scrapes are not written to stderr."""

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the base's name)
        pass


def start_http_server(producer: Producer | AsyncProducer, port: int, addr: str = "0.0.0.0",
                      registry: CollectorRegistry | None = REGISTRY,
                      const_labels: Mapping[str, str] | None = None) -> tuple[ThreadingWSGIServer, threading.Thread]:
    """Serves :func:`make_wsgi_app` at ``http://addr:port/`` (any path; ``/metrics`` by
    convention) on a daemon thread, as ``prometheus_client.start_http_server`` does; returns the
    server and its thread (``server.shutdown()`` stops it). Port 0 picks a free port
    (``server.server_port``)."""
    app = make_wsgi_app(producer, registry, const_labels)
    server = make_server(addr, port, app, ThreadingWSGIServer, handler_class=_QuietHandler)
    thread = threading.Thread(target=server.serve_forever, name="loghose-metrics", daemon=True)
    thread.start()
    return server, thread
