"""The controller's channel to the brokers: LeaderAndIsr, UpdateMetadata and StopReplica
over the wire, in order, per broker (Kafka: `ControllerChannelManager`,
`RequestSendThread`, `ControllerBrokerRequestBatch`).

ZooKeeper is where the controller's decisions are *kept* (CTRL-4: every write fenced by the
controller epoch); the wire is how brokers *learn* them. After an event the controller has
written its decisions, and then sends:

* **LeaderAndIsr** to the live replicas of each partition it changed: become leader or
  follower in the new leader epoch (CTRL-10);
* **UpdateMetadata** to every live broker: the new states for its metadata cache, which
  answers Metadata (CTRL-11). It also lists the live brokers, each with every listener's
  endpoint and its rack: the only way a broker learns who registered or left, since only
  the controller watches `/brokers/ids` (CTRL-31). A broker that just registered gets one
  with every partition, before its LeaderAndIsr (CTRL-21, CTRL-32: the controller sends it
  as a batch of its own, broker_change.py);
* **StopReplica** to the replicas of a deleted topic: stop fetching and delete the log.

`ControllerBrokerRequestBatch` collects what one event decided and builds one request per
broker and kind, each carrying the controller's id and epoch and the receiver's broker
epoch (the czxid of its registration, KIP-380). The broker refuses a request from an older
controller or for an earlier registration of itself (CTRL-19, CTRL-20), so neither a
deposed controller that wakes up from a pause nor a request that outlived its receiver's
restart changes anything.

`ControllerChannelManager` sends them. Each live broker has its own queue and its own
sender task (Kafka: one `RequestSendThread` per broker): requests leave in the order the
controller queued them, one at a time, and a request that fails (the broker is not
listening yet, closed the connection, did not answer) is sent again after a pause, as long
as the broker stays registered. When the broker leaves, its queue goes with it; when it
registers again it gets a new queue, and the controller sends it everything it must know.
The controller decides on its own thread; the senders run on the broker's event loop, over
an `InterBrokerChannel` (the connections every inter-broker request uses, with the
inter-broker listener's security), so the manager hands work from one to the other with
`call_soon_threadsafe`.

Rules: CTRL-19, CTRL-20, CTRL-21, CTRL-23, CTRL-31, CTRL-32.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterable
from typing import Any

from kafka_ref.cluster.metadata import BrokerEndpoint, PartitionState
from kafka_ref.errors import ErrorCode
from kafka_ref.protocol.messages import (
    ApiKey,
    LeaderAndIsrRequest,
    StopReplicaRequest,
    UpdateMetadataRequest,
)
from kafka_ref.security.inter_broker import InterBrokerSecurity
from kafka_ref.security.listeners import SECURITY_PROTOCOLS
from kafka_ref.server.inter_broker_channel import BrokerUnavailableError, InterBrokerChannel

logger = logging.getLogger("kafka_ref.cluster.controller_channel")

LEADER_AND_ISR_VERSION, STOP_REPLICA_VERSION, UPDATE_METADATA_VERSION = 4, 3, 6
RETRY_BACKOFF_S = 0.1  # Kafka's RequestSendThread waits 100 ms before it sends again

Request = tuple[int, int, Any]  # api key, version, body


def _state_fields(s: PartitionState) -> dict:
    """A partition state as LeaderAndIsr and UpdateMetadata both carry it."""
    return dict(
        partition_index=s.partition,
        controller_epoch=s.controller_epoch,
        leader=s.leader,
        leader_epoch=s.leader_epoch,
        isr=list(s.isr),
        zk_version=s.zk_version,
        replicas=list(s.replicas),
    )


def _by_topic(states: Iterable[PartitionState]) -> dict[str, list[PartitionState]]:
    topics: dict[str, list[PartitionState]] = {}
    for state in sorted(states, key=lambda s: (s.topic, s.partition)):
        topics.setdefault(state.topic, []).append(state)
    return topics


class ControllerBrokerRequestBatch:
    """What one controller event decided, as one request per broker and kind."""

    def __init__(self, controller_id: int, controller_epoch: int) -> None:
        self.controller_id, self.controller_epoch = controller_id, controller_epoch
        self.leader_and_isr: dict[int, dict[tuple[str, int], PartitionState]] = {}
        self.update_metadata: dict[int, dict[tuple[str, int], PartitionState]] = {}
        self.stop_replica: dict[int, list[tuple[str, int, int]]] = {}  # topic, partition, epoch

    def add_leader_and_isr(self, brokers: Iterable[int], state: PartitionState) -> None:
        for broker in brokers:
            self.leader_and_isr.setdefault(broker, {})[(state.topic, state.partition)] = state

    def add_update_metadata(self, brokers: Iterable[int], states: Iterable[PartitionState]) -> None:
        states = list(states)
        for broker in brokers:  # a broker with no new state still learns the live brokers
            queued = self.update_metadata.setdefault(broker, {})
            queued.update(((s.topic, s.partition), s) for s in states)

    def add_stop_replica(self, broker: int, topic: str, partition: int, leader_epoch: int) -> None:
        self.stop_replica.setdefault(broker, []).append((topic, partition, leader_epoch))

    def requests(self, live: dict[int, tuple[BrokerEndpoint, int]]) -> list[tuple[int, Request]]:
        """(broker, request) in Kafka's order: LeaderAndIsr, then UpdateMetadata, then
        StopReplica; only to live brokers, each with its broker epoch."""
        out: list[tuple[int, Request]] = []
        for broker, states in sorted(self.leader_and_isr.items()):
            if broker in live:
                out.append((broker, self._leader_and_isr(live, live[broker][1], states.values())))
        for broker, states in sorted(self.update_metadata.items()):
            if broker in live:
                out.append((broker, self._update_metadata(live, live[broker][1], states.values())))
        for broker, partitions in sorted(self.stop_replica.items()):
            if broker in live:
                out.append((broker, self._stop_replica(live[broker][1], partitions)))
        return out

    def _leader_and_isr(self, live: dict, broker_epoch: int, states: Iterable) -> Request:
        body = LeaderAndIsrRequest(
            controller_id=self.controller_id,
            controller_epoch=self.controller_epoch,
            broker_epoch=broker_epoch,
            topic_states=[
                LeaderAndIsrRequest.LeaderAndIsrTopicState(
                    topic_name=topic,
                    partition_states=[
                        LeaderAndIsrRequest.LeaderAndIsrPartitionState(
                            **_state_fields(s),
                            adding_replicas=[],
                            removing_replicas=[],
                        )
                        for s in partitions
                    ],
                )
                for topic, partitions in _by_topic(states).items()
            ],
            live_leaders=[
                LeaderAndIsrRequest.LeaderAndIsrLiveLeader(
                    broker_id=b, host_name=live[b][0].host, port=live[b][0].port
                )
                for b in sorted({s.leader for s in states} & set(live))
            ],
        )
        return ApiKey.LEADER_AND_ISR, LEADER_AND_ISR_VERSION, body

    def _update_metadata(self, live: dict, broker_epoch: int, states: Iterable) -> Request:
        body = UpdateMetadataRequest(
            controller_id=self.controller_id,
            controller_epoch=self.controller_epoch,
            broker_epoch=broker_epoch,
            topic_states=[
                UpdateMetadataRequest.UpdateMetadataTopicState(
                    topic_name=topic,
                    partition_states=[
                        UpdateMetadataRequest.UpdateMetadataPartitionState(
                            **_state_fields(s),
                            offline_replicas=[r for r in s.replicas if r not in live],
                        )
                        for s in partitions
                    ],
                )
                for topic, partitions in _by_topic(states).items()
            ],
            live_brokers=[_live_broker(endpoint) for endpoint, _ in live.values()],
        )
        return ApiKey.UPDATE_METADATA, UPDATE_METADATA_VERSION, body

    def _stop_replica(self, broker_epoch: int, partitions: list[tuple[str, int, int]]) -> Request:
        topics: dict[str, list[Any]] = {}
        for topic, partition, epoch in sorted(partitions):
            topics.setdefault(topic, []).append(
                StopReplicaRequest.StopReplicaPartitionState(
                    partition_index=partition, leader_epoch=epoch, delete_partition=True
                )
            )
        body = StopReplicaRequest(
            controller_id=self.controller_id,
            controller_epoch=self.controller_epoch,
            broker_epoch=broker_epoch,
            topic_states=[
                StopReplicaRequest.StopReplicaTopicState(topic_name=t, partition_states=p)
                for t, p in topics.items()
            ],
        )
        return ApiKey.STOP_REPLICA, STOP_REPLICA_VERSION, body


def _live_broker(endpoint: BrokerEndpoint) -> Any:
    listeners = endpoint.endpoints or ()
    return UpdateMetadataRequest.UpdateMetadataBroker(
        id=endpoint.node_id,
        endpoints=[
            UpdateMetadataRequest.UpdateMetadataEndpoint(
                port=e.port,
                host=e.host,
                listener=e.listener,
                security_protocol=SECURITY_PROTOCOLS.index(e.protocol),
            )
            for e in listeners
        ]
        or [
            UpdateMetadataRequest.UpdateMetadataEndpoint(
                port=endpoint.port, host=endpoint.host, listener="PLAINTEXT", security_protocol=0
            )
        ],
        rack=endpoint.rack,
    )


class ControllerChannelManager:
    """A queue and a sender per live broker (Kafka: `ControllerChannelManager`)."""

    def __init__(
        self, loop: asyncio.AbstractEventLoop, controller_id: int, security: InterBrokerSecurity
    ) -> None:
        self.loop, self.controller_id = loop, controller_id
        self._brokers: dict[int, BrokerEndpoint] = {}  # where the senders connect
        self._channel = InterBrokerChannel(
            self,  # type: ignore[arg-type]  # brokers(): the controller's live brokers
            f"controller-{controller_id}",
            security,  # the inter-broker listener's TLS and SASL (SEC-21)
        )
        self._senders: dict[int, tuple[asyncio.Queue, asyncio.Task]] = {}
        # (broker, api key, response): the controller reads LeaderAndIsr answers (CTRL-30)
        self.on_response: Callable[[int, int, Any], None] | None = None

    def brokers(self) -> list[BrokerEndpoint]:
        """The brokers the controller sends to (InterBrokerChannel finds addresses here)."""
        return list(self._brokers.values())

    # ------------------------------------------------------------------ controller thread
    def _call(self, fn: Callable[..., None], *args: Any) -> None:
        with contextlib.suppress(RuntimeError):  # the loop is closed: the broker stopped
            self.loop.call_soon_threadsafe(fn, *args)

    def add_broker(self, endpoint: BrokerEndpoint) -> None:
        self._call(self._add, endpoint)

    def remove_broker(self, broker_id: int) -> None:
        self._call(self._remove, broker_id)

    def send(self, broker_id: int, request: Request, epoch: int) -> None:
        self._call(self._enqueue, broker_id, request, epoch)

    def shutdown(self) -> None:
        """Drop every queue (the controller resigned or the broker stops)."""
        self._call(self._remove_all)

    # ------------------------------------------------------------------ the loop
    def _add(self, endpoint: BrokerEndpoint) -> None:
        self._remove(endpoint.node_id)  # a new registration: a new queue, a new connection
        self._brokers[endpoint.node_id] = endpoint
        queue: asyncio.Queue = asyncio.Queue()
        task = self.loop.create_task(self._send_loop(endpoint.node_id, queue))
        self._senders[endpoint.node_id] = (queue, task)

    def _remove(self, broker_id: int) -> None:
        self._brokers.pop(broker_id, None)
        sender = self._senders.pop(broker_id, None)
        if sender is not None:
            sender[1].cancel()
        self._channel.drop(broker_id)

    def _remove_all(self) -> None:
        for broker_id in list(self._senders):
            self._remove(broker_id)

    def _enqueue(self, broker_id: int, request: Request, epoch: int) -> None:
        sender = self._senders.get(broker_id)
        if sender is not None:  # a broker that left meanwhile needs nothing any more
            sender[0].put_nowait((request, epoch))

    async def _send_loop(self, broker_id: int, queue: asyncio.Queue) -> None:
        """Kafka's `RequestSendThread.doWork`: one request at a time, retried until answered."""
        while True:
            (api_key, version, body), epoch = await queue.get()
            while True:
                try:
                    response = await self._channel.request(broker_id, api_key, version, body)
                except BrokerUnavailableError as err:
                    logger.debug("controller %d: %s; sending again", self.controller_id, err)
                    await asyncio.sleep(RETRY_BACKOFF_S)
                    continue
                except Exception:  # a bug, not the network: the next requests still leave
                    name = ApiKey(api_key).name
                    logger.exception(
                        "controller %d: %s to %d failed", self.controller_id, name, broker_id
                    )
                    response = None
                break
            if self.on_response is not None:
                self.on_response(broker_id, api_key, response)
            error = ErrorCode.NO_ERROR if response is None else ErrorCode(response.error_code)
            if error != ErrorCode.NO_ERROR:
                logger.warning(
                    "controller %d (epoch %d): broker %d refused %s: %s",
                    self.controller_id,
                    epoch,
                    broker_id,
                    ApiKey(api_key).name,
                    error.name,
                )
