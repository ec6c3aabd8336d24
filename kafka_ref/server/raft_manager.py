"""The quorum on the wire: one node's `KafkaRaftClient` run on the event loop, its messages
carried as Kafka requests between the controllers (Kafka: `KafkaRaftManager`,
`KafkaNetworkChannel`).

The Raft core (kafka_ref/raft/) is a pure state machine: values in, values out, time
passed in. The simulator drives it with a simulated clock and network; this module drives
the very same class with the real ones:

* **time**: after every event the manager asks the client how long it may sleep
  (`poll_timeout_ms`) and sets one timer on the event loop (`loop.call_later`); when it
  fires, `poll` runs the timers that fell due (an election, a fetch, a check of the quorum);
* **requests out**: the client hands `send(peer, message)` a request for another voter; the
  manager encodes it (kafka_ref/raft/wire.py), sends it on its connection to that voter (one
  per voter, opened on first use from `controller.quorum.voters`), and hands the answer back
  to the client as the response value. A peer that is down, refuses the connection or closes
  it is simply not answering: the connection is dropped and the client, which gives every
  request `request_timeout_ms`, sends again, over a new connection (RAFT-14);
* **requests in**: the controller listener's handlers call `handle_request`; the client
  answers synchronously (its `handle` sends the response before it returns), and the
  manager returns that answer as the response body.

Everything runs on the event loop's one thread, so the client never sees two events at once.

A node whose `node.id` is not in `controller.quorum.voters` runs the same client as an
**observer** (RAFT-18, RAFT-20): a broker following the metadata log. It serves no quorum
request; it fetches. To find the leader it asks the addresses of
`controller.quorum.bootstrap.servers` (the voters' addresses when that is not set). Kafka
does not know which node answers at a bootstrap address, and neither does kafka-ref: the
bootstrap servers are peers -2, -3, ... in their order (Kafka's constructor of
`KafkaRaftClient` numbers them so), and the leader they name is reached at its address in
`controller.quorum.voters`.

Rules: RAFT-14, RAFT-20.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from kafka_ref.clock import Clock
from kafka_ref.config import LogConfig
from kafka_ref.raft import wire
from kafka_ref.raft.election_state import FileQuorumStateStore
from kafka_ref.raft.kafka_raft_client import KafkaRaftClient
from kafka_ref.raft.kafka_raft_log import KafkaRaftLog
from kafka_ref.raft.listener import RaftListener
from kafka_ref.raft.messages import RaftMessage, RaftRequest
from kafka_ref.raft.quorum_config import QuorumConfig
from kafka_ref.security.inter_broker import InterBrokerSecurity
from kafka_ref.server.follower_connection import FetcherConnection

logger = logging.getLogger("kafka_ref.server.raft_manager")

Address = tuple[str, int]


def parse_quorum_voters(value: str) -> dict[int, Address]:
    """`controller.quorum.voters`: `id@host:port,...` (Kafka: `QuorumConfig.parseVoterConnections`).
    Raises ValueError naming the entry that is wrong."""
    voters: dict[int, Address] = {}
    for entry in (e.strip() for e in value.split(",") if e.strip()):
        node, sep, address = entry.partition("@")
        host, colon, port = address.rpartition(":")
        if not sep or not colon or not node.isdigit() or not port.isdigit() or not host:
            raise ValueError(
                f"controller.quorum.voters entry {entry!r} is not of the form id@host:port"
            )
        if int(node) in voters:
            raise ValueError(f"controller.quorum.voters names node {node} twice")
        voters[int(node)] = (host.strip("[]"), int(port))
    if not voters:
        raise ValueError("controller.quorum.voters names no voter")
    return voters


def parse_bootstrap_servers(value: str) -> list[Address]:
    """`controller.quorum.bootstrap.servers`: `host:port,...`, possibly empty (Kafka:
    `QuorumConfig.parseBootstrapServers`). Raises ValueError naming the entry that is wrong."""
    servers: list[Address] = []
    for entry in (e.strip() for e in value.split(",") if e.strip()):
        host, colon, port = entry.rpartition(":")
        if not colon or not port.isdigit() or not host:
            raise ValueError(
                f"controller.quorum.bootstrap.servers entry {entry!r} is not of the form host:port"
            )
        servers.append((host.strip("[]"), int(port)))
    return servers


class RaftManager:
    """This node's Raft client on the event loop, and its connections to the voters.

    `bootstrap_servers` are where an observer looks for the leader (the voters' addresses
    when empty); `directory_id` is the metadata log directory's id (`meta.properties`),
    which the node's fetches carry so that the leader describes it by it."""

    def __init__(
        self,
        node_id: int,
        voters: Mapping[int, Address],
        metadata_dir: str,
        cluster_id: str,
        clock: Clock,
        security: InterBrokerSecurity,
        config: QuorumConfig | None = None,
        log_config: LogConfig | None = None,
        rng: random.Random | None = None,
        bootstrap_servers: Sequence[Address] = (),
        directory_id: uuid.UUID | None = None,
    ) -> None:
        self.node_id = node_id
        self.voters = dict(voters)
        # Kafka's ids of the bootstrap servers: -2, -3, ... (who answers there is unknown)
        bootstrap = {-2 - i: address for i, address in enumerate(bootstrap_servers)}
        self.bootstrap_ids = tuple(bootstrap)
        self.addresses = {**self.voters, **bootstrap}
        self.directory_id = directory_id
        self.metadata_dir = metadata_dir
        self.cluster_id = cluster_id
        self.clock = clock
        self.security = security
        self.config = config or QuorumConfig()
        self.log_config = log_config or LogConfig()
        self.rng = rng or random.Random()
        self.log: KafkaRaftLog | None = None
        self.client: KafkaRaftClient | None = None
        self._connections: dict[int, FetcherConnection] = {}
        self._locks: dict[int, asyncio.Lock] = {}  # one request at a time on a connection
        self._tasks: set[asyncio.Task] = set()
        self._timer: asyncio.TimerHandle | None = None
        self._answer: RaftMessage | None = None  # the client's answer to the request in hand
        self._answering: int | None = None  # the peer whose request is in hand
        self._state: object = None  # the epoch state last logged
        self._listeners: list[RaftListener] = []  # registered on the client when it starts

    @property
    def is_observer(self) -> bool:
        """Not a voter: it follows the log without a say (RAFT-18)."""
        return self.node_id not in self.voters

    # ------------------------------------------------------------------ life
    def start(self) -> None:
        """Open the metadata log and the quorum-state file; become a voter (or an observer)."""
        self.log = KafkaRaftLog.open(self.metadata_dir, self.log_config, self.clock)
        self.client = KafkaRaftClient(
            self.node_id,
            tuple(self.voters),
            self.log,
            FileQuorumStateStore(self.metadata_dir),
            self.config,
            self.rng,
            self._send,
            self.clock.milliseconds(),
            cluster_id=self.cluster_id,
            bootstrap=self.bootstrap_ids,
            directory_id=self.directory_id,
        )
        for listener in self._listeners:
            self.client.register(listener)
        role = "observer" if self.is_observer else "voter"
        logger.info("raft %d started as %s: %r", self.node_id, role, self.client)
        self._after_event()

    def register(self, listener: RaftListener) -> None:
        """Tell `listener` the committed batches and the leader (RAFT-17), from the start of
        the log: the metadata image of this node's controller or broker."""
        self._listeners.append(listener)
        if self.client is not None:
            self.client.register(listener)
            self._after_event()

    def append(self, values: list[bytes]) -> int:
        """Append one batch as the leader (NotLeaderOrFollowerError otherwise); the offset of
        its last record. Its listeners hear it once the quorum has committed it."""
        assert self.client is not None, "the raft manager has not started"
        last = self.client.append(values, self.clock.milliseconds())
        self._after_event()
        return last

    async def shutdown(self) -> None:
        """Resign if leading (EndQuorumEpoch, so the voters need not wait for a timeout),
        then stop: timer, requests, connections, log."""
        if self.client is not None:
            self.client.resign(self.clock.milliseconds())
            await asyncio.sleep(0)  # let the EndQuorumEpoch requests leave
        if self._timer is not None:
            self._timer.cancel()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        for connection in self._connections.values():
            connection.close()
        self._connections.clear()
        if self.log is not None:
            self.log.close()
        self.client = None

    # ------------------------------------------------------------------ events
    def _after_event(self) -> None:
        """Re-arm the one timer at the client's next deadline."""
        client = self.client
        if client is None:
            return
        if client.state is not self._state:  # Kafka logs every transition at INFO
            self._state = client.state
            logger.info(
                "raft %d: %r, high watermark %d", self.node_id, client.state, client.high_watermark
            )
        if self._timer is not None:
            self._timer.cancel()
        delay_ms = client.poll_timeout_ms(self.clock.milliseconds())
        self._timer = asyncio.get_running_loop().call_later(delay_ms / 1000, self._poll)

    def _poll(self) -> None:
        if self.client is not None:
            self.client.poll(self.clock.milliseconds())
            self._after_event()

    def handle_request(self, api_key: int, version: int, body: Any) -> Any:
        """A quorum request from the controller listener: the client's answer, as a body."""
        assert self.client is not None, "the raft manager has not started"
        request = wire.request_from_wire(api_key, body)
        source = wire.request_source(request)
        self._answer, self._answering = None, source
        try:
            self.client.handle(source, request, self.clock.milliseconds())
        finally:
            answer, self._answer, self._answering = self._answer, None, None
        self._after_event()
        assert answer is not None, f"the client did not answer {request!r}"
        return wire.response_to_wire(answer, version)

    def _send(self, peer: int, message: RaftMessage) -> None:
        """The client's `send`: an answer to the request in hand, or a request to a peer."""
        if not wire.is_request(message):
            assert peer == self._answering, f"an answer to {peer}, but {self._answering} asked"
            self._answer = message
            return
        task = asyncio.get_running_loop().create_task(self._request(peer, message))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _request(self, peer: int, request: RaftRequest) -> None:
        api_key, version, body = wire.request_to_wire(request)
        try:
            async with self._locks.setdefault(peer, asyncio.Lock()):
                connection = await self._connection(peer)
                answer = await asyncio.wait_for(
                    connection.request(api_key, version, body, f"raft-client-{self.node_id}"),
                    self.config.request_timeout_ms / 1000,
                )
        except (OSError, TimeoutError) as err:
            logger.debug("raft %d: %s to %d failed: %r", self.node_id, api_key, peer, err)
            self._drop(peer)  # the client times the request out and sends it again
            return
        if self.client is None:
            return
        response = wire.response_from_wire(api_key, answer, request.correlation_id)
        self.client.handle(peer, response, self.clock.milliseconds())
        self._after_event()

    async def _connection(self, peer: int) -> FetcherConnection:
        connection = self._connections.get(peer)
        if connection is None or connection.transport is None or connection.transport.is_closing():
            host, port = self.addresses[peer]
            connection = await FetcherConnection.open(
                host, port, self.security, f"raft-client-{self.node_id}"
            )
            self._connections[peer] = connection
        return connection

    def _drop(self, peer: int) -> None:
        connection = self._connections.pop(peer, None)
        if connection is not None:
            with contextlib.suppress(Exception):
                connection.close()
