"""Serving the metrics: an HTTP endpoint a Prometheus server scrapes.

Kafka itself only registers MBeans; an operator adds the Prometheus JMX exporter (a Java
agent) to serve them over HTTP. kafka-ref serves them itself when the broker config
`metrics.listener` names an address, `http://HOST:PORT` (`kafka-ref broker --metrics
HOST:PORT`); empty, the default, serves nothing. Any path answers with every metric in
Prometheus's text format (prometheus_client's threaded HTTP server, on its own thread, so
a slow scrape never holds up the event loop).

Each broker has its own `CollectorRegistry`: several brokers in one process (tests,
`BrokerThread`) each serve their own metrics, and nothing lands in prometheus_client's
global registry. A bad `metrics.listener` is a config error at start-up (MET-7); a port
already taken stops the broker's start like a taken listener port.

Rules: MET-7.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import Any
from urllib.parse import urlsplit

from prometheus_client import CollectorRegistry, start_http_server

from kafka_ref.metrics.collector import BrokerCollector
from kafka_ref.metrics.recorders import LoopIdleMeter

logger = logging.getLogger("kafka_ref.metrics.exporter")


def parse_metrics_listener(value: str) -> tuple[str, int] | None:
    """`http://HOST:PORT` -> (host, port); "" -> None; anything else -> ValueError."""
    if not value:
        return None
    wanted = f"metrics.listener {value!r} is not http://HOST:PORT"
    try:
        url = urlsplit(value)
        port = url.port
    except ValueError as err:  # a port that is not a number or out of range
        raise ValueError(f"{wanted}: {err}") from None
    if url.scheme != "http":
        raise ValueError(f"{wanted}: the scheme must be http")
    if port is None or url.hostname is None:
        raise ValueError(f"{wanted}: it needs a host and a port")
    if url.path not in ("", "/") or url.query or url.fragment or url.username:
        raise ValueError(f"{wanted}: nothing may follow the port")
    return url.hostname, port


class MetricsExporter:
    """One broker's registry and, while it runs, the HTTP server that serves it."""

    def __init__(self, broker: Any, address: tuple[str, int]) -> None:
        self.address = address
        self.registry = CollectorRegistry(auto_describe=False)
        self.idle = LoopIdleMeter()
        self._collector = BrokerCollector(broker, asyncio.get_running_loop(), self.idle)
        self.registry.register(self._collector)
        self._server: Any = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        assert self._server is not None, "metrics exporter not started"
        return self._server.server_port

    def start(self) -> None:
        """Bind and serve (OSError if the address cannot be bound)."""
        self.idle.install(asyncio.get_running_loop())
        host, port = self.address
        self._server, self._thread = start_http_server(port, host, registry=self.registry)
        logger.info("serving metrics on http://%s:%d/metrics", host, self.port)

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(5)
            self._thread = None
