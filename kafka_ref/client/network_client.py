"""The network client: connections to every broker, driven by one `poll` loop.

A producer or consumer talks to many brokers at once: Produce and Fetch go to each
partition's leader, Metadata to whichever broker is least busy. Kafka's `NetworkClient`
gathers this into one object with a simple contract, which this module follows:

* `ready(node)` - is there a connection to this broker that can take another request
  (connected, fewer than `max.in.flight.requests.per.connection` requests waiting)? It
  connects on demand; a broker that refused us is left alone for `reconnect.backoff.ms`,
  doubled after each failure up to `reconnect.backoff.max.ms`.
* `send(node, api_key, body, callback=...)` - write a request now; its callback runs when
  the answer (or a failure: disconnection, timeout) arrives.
* `poll(timeout_ms)` - the heartbeat of the client: send a Metadata request if the cluster
  view is due for a refresh, wait (`select`) until a response arrives on any connection or
  the timeout passes, complete the requests that were answered, and fail those that timed
  out. Every callback runs inside `poll`, on the thread that calls it.
* `wakeup()` - interrupt a `poll` that is waiting, from another thread (the producer's
  `send` wakes the sender thread this way when a batch is ready).

The metadata refresh is the network client's own business (Kafka's `DefaultMetadataUpdater`):
whenever `Metadata.time_to_next_update` reaches zero and no Metadata request is in flight,
one goes to the least loaded broker, and the answer replaces the cluster view. A lost
connection also asks for a refresh, since a broker that went away may have led partitions.

Spec rules: CLIENT-10, CLIENT-12 (spec/client.md).
"""

from __future__ import annotations

import contextlib
import logging
import select
import socket
import time
from collections.abc import Callable
from typing import Any

from kafka_ref.client.cluster_view import Metadata, Node
from kafka_ref.client.connection import (
    BrokerConnection,
    ClientRequest,
    NetworkError,
    RequestTimedOutError,
)
from kafka_ref.errors import KafkaError
from kafka_ref.protocol import ApiKey
from kafka_ref.protocol.messages import MetadataRequest
from kafka_ref.security.client_security import PLAINTEXT, AuthenticationError, ClientSecurity

log = logging.getLogger("kafka_ref.client")


def now_ms() -> int:
    """Monotonic milliseconds: the clock of every client timer (never the wall clock)."""
    return time.monotonic_ns() // 1_000_000


class NetworkClient:
    """Connections by node id, and the poll loop that drives them (Kafka's NetworkClient)."""

    def __init__(
        self,
        metadata: Metadata,
        *,
        client_id: str,
        request_timeout_ms: int = 30_000,
        max_in_flight: int = 5,
        reconnect_backoff_ms: int = 50,
        reconnect_backoff_max_ms: int = 1000,
        security: ClientSecurity = PLAINTEXT,
    ) -> None:
        self.metadata = metadata
        self.security = security
        self.client_id = client_id
        self.request_timeout_ms = request_timeout_ms
        self.max_in_flight = max_in_flight
        self.reconnect_backoff_ms = reconnect_backoff_ms
        self.reconnect_backoff_max_ms = reconnect_backoff_max_ms
        self._failures: dict[int, int] = {}  # consecutive failed connects: exponential backoff
        self._connections: dict[int, BrokerConnection] = {}
        self._backoff_until: dict[int, int] = {}
        self._metadata_in_flight = False
        # Nodes outside the cluster metadata: a group coordinator gets its own connection
        # under a second id (Kafka: Integer.MAX_VALUE - node id), so that a JoinGroup the
        # broker holds for seconds never queues behind, or ahead of, the Fetch requests.
        self._extra_nodes: dict[int, Node] = {}
        self._wake_r, self._wake_w = socket.socketpair()  # wakeup() writes, poll() selects
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self.last_error: KafkaError | None = None  # why the last connection attempt failed

    # -- connections -------------------------------------------------------------------

    def connection(self, node_id: int) -> BrokerConnection:
        """The connection to `node_id`, opened (and versions negotiated) if needed."""
        conn = self._connections.get(node_id)
        if conn is not None and conn.connected:
            return conn
        node = self._extra_nodes.get(node_id) or self.metadata.fetch().node(node_id)
        if node is None:
            raise NetworkError(f"node {node_id} is not in the cluster metadata")
        if conn is not None:
            self._forget(node_id)
        conn = BrokerConnection(
            node.host,
            node.port,
            node_id=node_id,
            client_id=self.client_id,
            request_timeout_ms=self.request_timeout_ms,
            security=self.security,
        )
        try:
            conn.connect()
        except KafkaError as err:
            self.last_error = err
            self._back_off(node_id)
            if isinstance(err, AuthenticationError):  # raised to the caller at once (SEC-24)
                self.metadata.set_auth_error(err)
                raise
            # Kafka's NetworkClient says so at WARN, at every attempt: a tool pointed at the
            # wrong address tells its user at once, not when its timeout ends.
            log.warning(
                "[%s] Connection to node %d (%s:%d) could not be established. Node may not "
                "be available.",
                self.client_id,
                node_id,
                node.host,
                node.port,
            )
            raise
        self._failures.pop(node_id, None)
        if self.metadata.auth_error is not None:
            self.metadata.set_auth_error(None)
        self._connections[node_id] = conn
        return conn

    def add_node(self, node: Node) -> None:
        """Make `node` reachable by its id although Metadata does not list it."""
        if self._extra_nodes.get(node.node_id) != node:
            self._forget(node.node_id)
            self._extra_nodes[node.node_id] = node

    def _forget(self, node_id: int) -> None:
        conn = self._connections.pop(node_id, None)
        if conn is not None:
            conn.close()

    def is_ready(self, node_id: int) -> bool:
        conn = self._connections.get(node_id)
        return conn is not None and conn.connected and len(conn.in_flight) < self.max_in_flight

    def ready(self, node_id: int) -> bool:
        """Can a request go to `node_id` now? Connects (blocking) if needed, unless the node
        is in its reconnect backoff."""
        if self.is_ready(node_id):
            return True
        if node_id in self._connections and self._connections[node_id].connected:
            return False  # connected, but too many requests in flight
        if now_ms() < self._backoff_until.get(node_id, 0):
            return False
        try:
            self.connection(node_id)
        except KafkaError as err:
            log.debug("connection to node %s failed: %s", node_id, err)
            self.metadata.request_update()
            return False
        return self.is_ready(node_id)

    def in_flight_count(self, node_id: int | None = None) -> int:
        conns = self._connections.values() if node_id is None else [self._connections.get(node_id)]
        return sum(len(c.in_flight) for c in conns if c is not None)

    def least_loaded_node(self) -> int | None:
        """The broker with the fewest requests in flight, preferring open connections."""
        best, best_load = None, None
        for node in self.metadata.fetch().nodes:
            conn = self._connections.get(node.node_id)
            if conn is not None and conn.connected:
                load = len(conn.in_flight)
            elif now_ms() >= self._backoff_until.get(node.node_id, 0):
                load = self.max_in_flight  # a new connection costs a little more
            else:
                continue
            if best_load is None or load < best_load:
                best, best_load = node.node_id, load
        return best

    # -- requests --------------------------------------------------------------------

    def send(
        self,
        node_id: int,
        api_key: int,
        body: Any,
        *,
        callback: Callable[[ClientRequest], None] | None = None,
        expect_response: bool = True,
    ) -> ClientRequest:
        """Send now. A broker we cannot reach, or one that lacks a version of the API we
        speak, fails the request: its callback runs with the error, nothing is raised."""
        try:
            conn = self.connection(node_id)
        except KafkaError as err:
            request = ClientRequest(node_id, api_key, -1, -1, body, callback)
            request.complete(error=err)
            return request
        try:
            request = conn.send(api_key, body, callback=callback, expect_response=expect_response)
        except KafkaError as err:  # no common version, or a body that cannot be encoded
            request = ClientRequest(node_id, api_key, -1, -1, body, callback)
            request.complete(error=err)
            return request
        if not conn.connected:
            self._disconnected(node_id)
        return request

    def poll(self, timeout_ms: int) -> list[ClientRequest]:
        """Refresh metadata if due, wait for responses up to `timeout_ms`, complete them."""
        timeout_ms = min(timeout_ms, self._maybe_update_metadata())
        timeout_ms = min(timeout_ms, self._time_to_next_timeout())
        completed: list[ClientRequest] = []
        waiting = [c for c in self._connections.values() if c.connected and c.in_flight]
        buffered = [c for c in waiting if c.has_buffered_data()]  # TLS: select cannot see it
        timeout_s = 0 if buffered else max(timeout_ms, 0) / 1000
        readable, _, _ = select.select([self._wake_r, *waiting], [], [], timeout_s)
        for conn in dict.fromkeys([*readable, *buffered]):
            if conn is self._wake_r:  # wakeup(): drain the byte(s) and carry on
                try:
                    while self._wake_r.recv(1024):
                        pass
                except BlockingIOError:
                    pass
            else:
                completed.extend(conn.receive(0))
        now = time.monotonic()
        known = {node.node_id for node in self.metadata.fetch().nodes} | set(self._extra_nodes)
        for node_id, conn in list(self._connections.items()):
            completed.extend(conn.expire(now))
            if not conn.connected:
                self._disconnected(node_id)
            elif node_id not in known and not conn.in_flight:
                self._forget(node_id)  # a bootstrap connection: the broker has a real id now
        return completed

    def _disconnected(self, node_id: int) -> None:
        self._forget(node_id)
        self._back_off(node_id)
        self.metadata.request_update()  # whatever it led may have moved

    def _back_off(self, node_id: int) -> None:
        """reconnect.backoff.ms, doubling per failure up to reconnect.backoff.max.ms."""
        failures = self._failures[node_id] = self._failures.get(node_id, 0) + 1
        delay = min(self.reconnect_backoff_ms * 2 ** (failures - 1), self.reconnect_backoff_max_ms)
        self._backoff_until[node_id] = now_ms() + delay

    def _time_to_next_timeout(self) -> int:
        oldest = [c.in_flight[0].created for c in self._connections.values() if c.in_flight]
        if not oldest:
            return self.request_timeout_ms
        return max(int((min(oldest) - time.monotonic()) * 1000) + self.request_timeout_ms, 0)

    def wakeup(self) -> None:
        """Make a waiting `poll` return now (safe from any thread)."""
        with contextlib.suppress(OSError):  # BlockingIOError: already woken; or closed
            self._wake_w.send(b"x")

    def send_and_wait(
        self, node_id: int | None, api_key: int, body: Any, timeout_ms: int | None = None
    ) -> Any:
        """Send to `node_id` (None: the least loaded broker) and poll until answered."""
        timeout_ms = self.request_timeout_ms if timeout_ms is None else timeout_ms
        if node_id is None:
            node_id = self.least_loaded_node()
            if node_id is None:
                raise self.last_error or NetworkError("no broker is reachable")
        request = self.send(node_id, api_key, body)
        deadline = now_ms() + timeout_ms
        while not request.done:
            remaining = deadline - now_ms()
            if remaining <= 0:
                raise RequestTimedOutError(
                    f"no answer to {ApiKey(api_key).name} in {timeout_ms} ms"
                )
            self.poll(remaining)
        if request.error is not None:
            raise request.error
        return request.response

    # -- metadata --------------------------------------------------------------------

    def _maybe_update_metadata(self) -> int:
        """Send a Metadata request if one is due; return ms until the next may be."""
        now = now_ms()
        wait = self.metadata.time_to_next_update(now)
        if wait > 0 or self._metadata_in_flight:
            return wait if not self._metadata_in_flight else self.request_timeout_ms
        node_id = self.least_loaded_node()
        if node_id is None:
            return self.reconnect_backoff_ms
        if not self.ready(node_id):
            self.metadata.failed_update(now)
            return self.reconnect_backoff_ms
        topics = self.metadata.build_request_topics()
        request = MetadataRequest(
            topics=None
            if topics is None
            else [MetadataRequest.MetadataRequestTopic(name=t) for t in topics],
            allow_auto_topic_creation=self.metadata.allow_auto_topic_creation,
        )
        self._metadata_in_flight = True
        self.send(node_id, ApiKey.METADATA, request, callback=self._handle_metadata)
        return self.request_timeout_ms

    def _handle_metadata(self, request: ClientRequest) -> None:
        self._metadata_in_flight = False
        if request.error is not None:
            log.debug("metadata request failed: %s", request.error)
            self.metadata.failed_update(now_ms())
            return
        cluster = self.metadata.update(request.response, now_ms())
        for topic, error in cluster.topic_errors.items():
            log.debug("metadata for %s: %s", topic, error.name)

    def await_metadata(self, timeout_ms: int) -> None:
        """Refresh the cluster view now and wait for the answer (blocking callers)."""
        version = self.metadata.request_update()
        deadline = now_ms() + timeout_ms
        while self.metadata.version <= version:
            self.metadata.maybe_throw_auth_failure()  # refused: no use waiting (SEC-24)
            remaining = deadline - now_ms()
            if remaining <= 0:
                raise self.last_error or RequestTimedOutError(
                    f"no metadata from any broker within {timeout_ms} ms"
                )
            self.poll(remaining)

    def close(self) -> None:
        for node_id in list(self._connections):
            self._forget(node_id)
        self._wake_r.close()
        self._wake_w.close()
