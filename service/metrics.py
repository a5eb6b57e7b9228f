"""Prometheus metrics of one app: its own registry, so two apps in one process never mix.

Series: ``hlo_layout_http_requests_total{route,method,status}``,
``hlo_layout_http_request_seconds{route}``, ``hlo_layout_operation_seconds{operation}``
(time spent in a worker, i.e. parse + solve), ``hlo_layout_outcomes_total{operation,outcome}``
(``ok`` or the failure type), ``hlo_layout_cache_lookups_total{result}``,
``hlo_layout_worker_restarts_total{reason}`` and the pool gauges ``hlo_layout_workers_busy``
and ``hlo_layout_jobs_waiting``. ``route`` is the route template (``/v1/batches/{batch_id}``),
never the raw path, so the label set stays bounded.
"""

from __future__ import annotations

from typing import Callable

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)

_LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)


class Metrics:
    content_type = CONTENT_TYPE_LATEST

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.requests = Counter(
            "hlo_layout_http_requests", "HTTP requests answered.", ["route", "method", "status"],
            registry=r,
        )
        self.latency = Histogram(
            "hlo_layout_http_request_seconds", "HTTP request latency.", ["route"],
            buckets=_LATENCY_BUCKETS, registry=r,
        )
        self.operation_time = Histogram(
            "hlo_layout_operation_seconds", "Time spent in a worker per operation (parse + solve).",
            ["operation"], buckets=_LATENCY_BUCKETS, registry=r,
        )
        self.outcomes = Counter(
            "hlo_layout_outcomes", "Operation outcomes: ok or the failure type.",
            ["operation", "outcome"], registry=r,
        )
        self.cache_lookups = Counter(
            "hlo_layout_cache_lookups", "Result cache lookups.", ["result"], registry=r
        )
        self.worker_restarts = Counter(
            "hlo_layout_worker_restarts", "Worker processes replaced.", ["reason"], registry=r
        )
        self.busy = Gauge("hlo_layout_workers_busy", "Workers running a job.", registry=r)
        self.waiting = Gauge("hlo_layout_jobs_waiting", "Jobs waiting for a worker.", registry=r)

    def watch_pool(self, busy: Callable[[], float], waiting: Callable[[], float]) -> None:
        self.busy.set_function(busy)
        self.waiting.set_function(waiting)

    def render(self) -> bytes:
        return generate_latest(self.registry)
