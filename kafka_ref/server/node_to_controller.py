"""Requests from a KRaft broker to the active controller (Kafka:
`NodeToControllerChannelManager`, `RaftControllerNodeProvider`).

A KRaft broker talks to the controllers for five things: it registers and heartbeats
(server/broker_lifecycle.py), asks for ISR changes (AlterPartition) and producer id blocks
(AllocateProducerIds), and forwards the admin requests of its clients (Envelope,
server/forwarding_manager.py). Each goes to the **active controller**, the leader of the
metadata quorum, over the controller listener: the address `controller.quorum.voters`
gives for the node the quorum names leader (the node's `RaftManager` knows it, whether it
votes or only observes).

The leader changes. A request that finds no leader known, cannot connect, loses its
connection, or is answered NOT_CONTROLLER anywhere in its response (the node it reached
no longer leads) is sent again, after `retry_backoff_s`, to whichever node leads then,
until `timeout_s` has passed; then it fails with `ControllerUnavailableError` and the caller
decides (Kafka re-queues the request at the front and waits for a new controller,
`NodeToControllerRequestThread.handleResponse`). KBROKER-10.

Each user has its own channel, as in Kafka (the heartbeats, the AlterPartition requests and
the forwarded requests each have a `NodeToControllerChannelManager`): one request at a
time on one connection, so a slow CreateTopics never delays a heartbeat.

Rules: KBROKER-10.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping
from typing import Any

from kafka_ref.errors import ErrorCode
from kafka_ref.protocol.schema import Struct
from kafka_ref.security.inter_broker import InterBrokerSecurity
from kafka_ref.server.follower_connection import FetcherConnection

logger = logging.getLogger("kafka_ref.server.node_to_controller")

Address = tuple[str, int]
RETRY_BACKOFF_S = 0.1  # Kafka: retry.backoff.ms
REQUEST_TIMEOUT_S = 30.0  # Kafka: request.timeout.ms of the channel
NO_LEADER = -1


class ControllerUnavailableError(ConnectionError):
    """No active controller answered within the request's time."""


def says_not_controller(response: Any) -> bool:
    """Whether NOT_CONTROLLER is anywhere in `response` (Kafka: `errorCounts()`)."""
    if getattr(response, "error_code", None) == ErrorCode.NOT_CONTROLLER:
        return True
    if isinstance(response, Struct):
        for attr in response._schema.attrs:
            value = getattr(response, attr)
            nested = isinstance(value, list) and value and isinstance(value[0], Struct)
            if nested and any(says_not_controller(v) for v in value):
                return True
    return False


class NodeToControllerChannel:
    """One connection to the active controller, one request at a time, re-sent to the next
    controller when this one is gone or no longer leads."""

    def __init__(
        self,
        leader_id: Callable[[], int],
        voters: Mapping[int, Address],
        client_id: str,
        *,
        security: InterBrokerSecurity | None = None,
        timeout_s: float = REQUEST_TIMEOUT_S,
        retry_backoff_s: float = RETRY_BACKOFF_S,
    ) -> None:
        self.leader_id = leader_id  # the quorum's leader as this node knows it, -1 if none
        self.voters = dict(voters)
        self.client_id = client_id
        self.security = security or InterBrokerSecurity("PLAINTEXT", None)
        self.timeout_s = timeout_s
        self.retry_backoff_s = retry_backoff_s
        self._connection: FetcherConnection | None = None
        self._connected_to = NO_LEADER
        self._lock = asyncio.Lock()
        self._tasks: set[asyncio.Task] = set()

    async def request(
        self, api_key: int, version: int, body: Any, *, timeout_s: float | None = None
    ) -> Any:
        """`body` answered by the active controller, or ControllerUnavailableError."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + (self.timeout_s if timeout_s is None else timeout_s)
        async with self._lock:
            while True:
                controller = self.leader_id()
                if controller in self.voters:
                    remaining = max(deadline - loop.time(), 0.001)
                    try:
                        response = await asyncio.wait_for(
                            self._send(controller, api_key, version, body), remaining
                        )
                    except (OSError, EOFError, asyncio.IncompleteReadError, TimeoutError) as err:
                        logger.debug("%s: controller %d: %r", self.client_id, controller, err)
                        self._drop()
                    else:
                        if not says_not_controller(response):
                            return response
                        logger.info(
                            "%s: %d is no longer the controller", self.client_id, controller
                        )
                        self._drop()
                if loop.time() + self.retry_backoff_s >= deadline:
                    raise ControllerUnavailableError(
                        f"no active controller answered {api_key} within the timeout"
                    )
                await asyncio.sleep(self.retry_backoff_s)

    async def _send(self, controller: int, api_key: int, version: int, body: Any) -> Any:
        if self._connected_to != controller or self._closed():
            self._drop()
            host, port = self.voters[controller]
            self._connection = await FetcherConnection.open(
                host, port, self.security, self.client_id
            )
            self._connected_to = controller
        assert self._connection is not None
        return await self._connection.request(api_key, version, body, self.client_id)

    def send(
        self, api_key: int, version: int, body: Any, on_response: Callable[[Any], None]
    ) -> None:
        """`request` in the background: `on_response` gets the response or the
        ControllerUnavailableError, on the event loop."""

        async def run() -> None:
            try:
                response = await self.request(api_key, version, body)
            except ControllerUnavailableError as err:
                response = err
            on_response(response)

        task = asyncio.get_running_loop().create_task(run())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _closed(self) -> bool:
        connection = self._connection
        return (
            connection is None or connection.transport is None or connection.transport.is_closing()
        )

    def _drop(self) -> None:
        if self._connection is not None:
            with contextlib.suppress(Exception):
                self._connection.close()
        self._connection, self._connected_to = None, NO_LEADER

    def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        self._drop()
