"""Requests from one broker to another: the coordinators' side channel (Kafka:
`InterBrokerSendThread` over a `NetworkClient` of its own).

Two of a broker's parts talk to other brokers without being replication:

* the transaction coordinator sends **WriteTxnMarkers** to the leader of every partition
  of a decided transaction (Kafka: `TransactionMarkerChannelManager`);
* a partition leader asks the transaction coordinator whether a partition is part of a
  producer's transaction before the transaction's first write there, with
  **AddPartitionsToTxn** v4 `verify_only` (KIP-890; Kafka: `AddPartitionsToTxnManager`).

Each keeps an `InterBrokerChannel`: one connection per destination broker, opened on first
use from the broker's address in the cluster metadata (with the inter-broker listener's
TLS and SASL, follower_connection.py), and one request at a time on it.
`send` hands the answer to a callback. The destination may be this very broker (always, on
one broker): given the broker's `Loopback` (server/loopback.py), `send` then runs the
request through the broker's own handlers instead of a socket, and a handler that answers
at once answers before `send` returns (TXN-24). A request over a socket that fails (the
broker is gone, refuses the connection, closes it, or does not answer within `timeout_s`)
drops the connection and is answered with a `BrokerUnavailableError`; the caller decides
whether to retry, and the next request connects again to the address the metadata names
*then*, so a broker that restarted on another port is found.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from kafka_ref.cluster.metadata import BrokerEndpoint, ClusterMetadataApi
from kafka_ref.security.inter_broker import InterBrokerSecurity
from kafka_ref.server.follower_connection import FetcherConnection
from kafka_ref.server.loopback import Loopback

logger = logging.getLogger("kafka_ref.server.inter_broker_channel")

OnResponse = Callable[[Any], None]  # a response body, or a BrokerUnavailableError
REQUEST_TIMEOUT_S = 30.0  # Kafka: request.timeout.ms of the inter-broker clients


class BrokerUnavailableError(ConnectionError):
    """The destination broker could not be reached or did not answer."""


def live_broker(controller: ClusterMetadataApi, node_id: int) -> BrokerEndpoint | None:
    """The registered broker `node_id`, or None (not registered, or no leader: -1)."""
    return next((b for b in controller.brokers() if b.node_id == node_id), None)


class InterBrokerChannel:
    """Connections to other brokers, one request at a time each."""

    def __init__(
        self,
        controller: ClusterMetadataApi,
        client_id: str,
        security: InterBrokerSecurity,
        timeout_s: float = REQUEST_TIMEOUT_S,
        loopback: Loopback | None = None,
    ) -> None:
        self.controller, self.client_id, self.timeout_s = controller, client_id, timeout_s
        self.security = security  # the inter-broker listener's TLS and SASL (SEC-21)
        self.loopback = loopback  # requests to this broker itself, when given
        self._tasks: set[asyncio.Task] = set()  # requests of `send` on their way
        self._connections: dict[int, tuple[FetcherConnection, asyncio.Lock]] = {}

    def send(
        self, node_id: int, api_key: int, version: int, body: Any, on_response: OnResponse
    ) -> None:
        """Send `body` to broker `node_id`; `on_response` gets the decoded response or a
        `BrokerUnavailableError` (this broker through the loopback: at once if it can)."""
        if self.loopback is not None and node_id == self.loopback.node_id:

            def answered(result: Any) -> None:
                if isinstance(result, ConnectionError):
                    result = BrokerUnavailableError(f"this broker: {result}")
                on_response(result)

            self.loopback.send(api_key, version, body, self.client_id, answered)
            return
        task = asyncio.get_running_loop().create_task(self.request(node_id, api_key, version, body))
        self._tasks.add(task)
        task.add_done_callback(lambda done: self._finished(done, on_response))

    def _finished(self, task: asyncio.Task, on_response: OnResponse) -> None:
        self._tasks.discard(task)
        if task.cancelled():  # the channel closed: nobody waits for the answer
            return
        error = task.exception()
        if error is not None and not isinstance(error, BrokerUnavailableError):
            raise error  # a bug: the loop's exception handler reports it
        on_response(error or task.result())

    async def request(self, node_id: int, api_key: int, version: int, body: Any) -> Any:
        """Send `body` to broker `node_id` over a socket; the decoded response."""
        try:
            connection, lock = await self._connection(node_id)
            async with lock:
                return await asyncio.wait_for(
                    connection.request(api_key, version, body, self.client_id), self.timeout_s
                )
        except (OSError, EOFError, asyncio.IncompleteReadError, TimeoutError) as err:
            self.drop(node_id)
            raise BrokerUnavailableError(f"broker {node_id}: {err or type(err).__name__}") from err

    async def _connection(self, node_id: int) -> tuple[FetcherConnection, asyncio.Lock]:
        if node_id not in self._connections:
            broker = live_broker(self.controller, node_id)
            if broker is None:
                raise BrokerUnavailableError(f"broker {node_id} is not registered")
            connection = await asyncio.wait_for(
                FetcherConnection.open(broker.host, broker.port, self.security, self.client_id),
                self.timeout_s,
            )
            if node_id in self._connections:  # another request connected meanwhile
                connection.close()
            else:
                self._connections[node_id] = (connection, asyncio.Lock())
        return self._connections[node_id]

    def drop(self, node_id: int) -> None:
        entry = self._connections.pop(node_id, None)
        if entry is not None:
            entry[0].close()

    def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        for node_id in list(self._connections):
            self.drop(node_id)
