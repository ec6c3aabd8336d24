"""Connection quotas: how many connections a broker takes, from whom, how fast, how long.

Every open connection costs a broker a socket, a processor with its receive buffer, and a
share of the event loop; a client that opens thousands of them (a bug in a retry loop, a
misconfigured pool, an attack) can exhaust file descriptors and memory before any request
limit applies. Kafka bounds connections at accept time (KIP-402, KIP-612; Kafka:
`ConnectionQuotas`):

* `max.connections`: the broker's open connections; per listener as
  `listener.name.<listener>.max.connections`. A connection on the inter-broker listener is
  let in even when the broker-wide limit is reached (when there are other listeners), so
  replication never starves behind clients; the listener's own limit still holds;
* `max.connections.per.ip`, with `max.connections.per.ip.overrides`
  (`host:count,...`): the open connections from one address;
* `max.connection.creation.rate`: new connections per second, broker-wide and per listener
  (`listener.name.<listener>.max.connection.creation.rate`), over a one-second window.

Kafka's acceptor *waits* when `max.connections` or the creation rate is reached (the new
connections queue in the listen backlog) and closes only a connection over its address's
limit. kafka-ref accepts on asyncio's acceptor, which cannot wait, so every refused
connection is closed at once, before it is read from or costs a receive buffer, logged, and
counted by listener and reason (`kafka_server_socket_server_metrics_connection_refused_total`).
A client sees a closed connection and retries with its backoff, as after Kafka's close.

`connections.max.idle.ms` (default 600000, ten minutes) closes a connection that has read
and written nothing for that long (Kafka: `Selector` with `connectionsMaxIdleMs`): it frees
what the connection held, a partly read frame's share of the memory pool included.

Rules: BROKER-56, BROKER-57, BROKER-58, BROKER-59.
"""

from __future__ import annotations

import dataclasses
import logging
import socket
import time
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

logger = logging.getLogger("kafka_ref.server.connection_quotas")

UNLIMITED = 2**31 - 1  # Kafka's default for every limit: Integer.MAX_VALUE
RATE_WINDOW_S = 1.0


class RateWindow:
    """Connections created in the last second, to compare with a creation rate."""

    def __init__(self, rate: int) -> None:
        self.rate = rate
        self._times: deque[float] = deque()

    def full(self, now: float) -> bool:
        """Whether one more connection now would exceed the rate."""
        if self.rate >= UNLIMITED:
            return False
        while self._times and self._times[0] <= now - RATE_WINDOW_S:
            self._times.popleft()
        return len(self._times) >= self.rate

    def record(self, now: float) -> None:
        if self.rate < UNLIMITED:
            self._times.append(now)


@dataclasses.dataclass
class ListenerQuota:
    """One listener's limits and its count of open connections."""

    max_connections: int = UNLIMITED
    rate: RateWindow = dataclasses.field(default_factory=lambda: RateWindow(UNLIMITED))
    count: int = 0


class ConnectionQuotas:
    """Open connections per listener, per address and in all, checked as each one arrives."""

    def __init__(
        self,
        listeners: dict[str, ListenerQuota],
        *,
        max_connections: int = UNLIMITED,
        max_per_ip: int = UNLIMITED,
        per_ip_overrides: dict[str, int] | None = None,
        max_creation_rate: int = UNLIMITED,
        inter_broker_listener: str | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.listeners = listeners
        self.max_connections, self.max_per_ip = max_connections, max_per_ip
        self.per_ip_overrides = per_ip_overrides or {}
        self.rate = RateWindow(max_creation_rate)
        self.inter_broker_listener = inter_broker_listener
        self.clock = clock
        self.total = 0
        self.per_ip: dict[str, int] = {}
        self.refused: dict[tuple[str, str], int] = {}  # (listener, limit) -> connections

    def _protected(self, listener: str) -> bool:
        """The inter-broker listener is exempt from the broker-wide limits (Kafka:
        `protectedListener`), when clients have listeners of their own."""
        return listener == self.inter_broker_listener and len(self.listeners) > 1

    def admit(self, listener: str, ip: str) -> str | None:
        """Count a new connection in; or the name of the limit it is over (it is not counted)."""
        quota = self.listeners[listener]
        now = self.clock()
        protected = self._protected(listener)
        refused = None
        if quota.count >= quota.max_connections or (
            not protected and self.total >= self.max_connections
        ):
            refused = "max.connections"
        elif quota.rate.full(now) or (not protected and self.rate.full(now)):
            refused = "max.connection.creation.rate"
        elif self.per_ip.get(ip, 0) >= self.per_ip_overrides.get(ip, self.max_per_ip):
            refused = "max.connections.per.ip"
        if refused is not None:
            key = (listener, refused)
            self.refused[key] = self.refused.get(key, 0) + 1
            return refused
        quota.rate.record(now)
        if not protected:
            self.rate.record(now)
        quota.count += 1
        self.total += 1
        self.per_ip[ip] = self.per_ip.get(ip, 0) + 1
        return None

    def closed(self, listener: str, ip: str) -> None:
        """An admitted connection closed: its slot is free again."""
        self.listeners[listener].count -= 1
        self.total -= 1
        left = self.per_ip[ip] - 1
        if left:
            self.per_ip[ip] = left
        else:
            del self.per_ip[ip]


def parse_ip_overrides(items: Iterable[str]) -> dict[str, int]:
    """`max.connections.per.ip.overrides` (`host:count,...`) -> {address: count}.

    Host names are resolved once, at start, as Kafka's `InetAddress.getByName` does; every
    address a name resolves to gets its count. Raises ValueError naming the bad entry."""
    overrides: dict[str, int] = {}
    for item in items:
        host, sep, count = item.rpartition(":")
        if not sep or not host or not count.strip().isdigit():
            raise ValueError(f"max.connections.per.ip.overrides entry {item!r} is not host:count")
        try:
            infos = socket.getaddrinfo(host.strip().strip("[]"), None, proto=socket.IPPROTO_TCP)
        except OSError as err:
            raise ValueError(f"max.connections.per.ip.overrides: {host!r}: {err}") from None
        for info in infos:
            overrides[str(info[4][0])] = int(count)
    return overrides


def connection_quotas(config: Any, listener_names: Iterable[str]) -> ConnectionQuotas:
    """The quotas a `KafkaConfig` sets, with each listener's own limits (unlimited unless
    `listener.name.<listener>.<key>` sets them: the broker-wide key is a separate limit)."""
    listeners = {}
    for name in listener_names:
        own = config.listener_overrides.get(name.upper(), {})
        listeners[name] = ListenerQuota(
            own.get("max.connections", UNLIMITED),
            RateWindow(own.get("max.connection.creation.rate", UNLIMITED)),
        )
    return ConnectionQuotas(
        listeners,
        max_connections=config["max.connections"],
        max_per_ip=config["max.connections.per.ip"],
        per_ip_overrides=config.ip_overrides,
        max_creation_rate=config["max.connection.creation.rate"],
        inter_broker_listener=config.inter_broker_listener,
    )


def idle_connections(connections: Iterable[Any], now: float, max_idle_s: float) -> list[Any]:
    """The connections that have read and written nothing for `max_idle_s` (each has
    `last_active`, a time of the same clock as `now`)."""
    return [c for c in connections if now - c.last_active > max_idle_s]
