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
"""

from __future__ import annotations

import json
import weakref
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import REGISTRY, CollectorRegistry
from prometheus_client.utils import floatToGoString

from . import _native

if TYPE_CHECKING:
    from . import AsyncProducer, Producer

__all__ = ["ProducerCollector", "register"]

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
