"""A leader's ISR changes go to the controller (KIP-497; Kafka: `AlterPartitionManager`).

A partition leader decides that a follower joins its ISR (ISR-2) or leaves it (ISR-3), but
in ZooKeeper mode with KIP-497 it does not write the partition's state znode itself: it
sends the controller an AlterPartition request with the new ISR, its leader epoch, and the
partition epoch (the state znode's version) its decision was based on, together with its
own broker id and broker epoch. The controller checks them, writes the new state and
answers with it (CTRL-22); until the answer comes, the leader counts the *maximal* ISR, the
old one and the proposed one together, for its high watermark (ISR-5).

Before KIP-497 the leader wrote the znode with a compare-and-set, and the controller
learned about it late, through `/isr_change_notification`, so its cache of partition
states could be behind the truth in ZooKeeper; with AlterPartition the controller makes
every change and its cache is the truth.

The request goes to the controller: in ZooKeeper mode the broker that `/controller` names,
over the inter-broker channel (`ZkControllerDestination`); in KRaft the active controller,
over the controller listener (server/node_to_controller.py, KBROKER-14), whose answer comes
once its PartitionChangeRecord is committed. A KRaft leader sends v3 (KIP-903): each ISR
member with its broker epoch, its own current one, -1 for a follower (kafka-ref's
followers fetch at v10, which carries no broker epoch; Kafka's leader also sends -1 for a
follower whose epoch it has not seen, and the controller checks only the epochs given,
KCTRL-8). The broker's image then brings the same
change, which the partition has applied already. If the controller cannot be reached (it
is failing over), the change is refused with NETWORK_EXCEPTION after a pause, and the
leader proposes it again at its next decision; an answer with an error means the
controller knows better (a newer leader epoch or partition epoch, a LeaderAndIsr or a
metadata record on its way).

Rules: CTRL-22, ISR-5, KBROKER-14, KBROKER-20.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable
from typing import Any, Protocol

from kafka_ref.cluster.zk_metadata import ZkClusterMetadata
from kafka_ref.errors import ErrorCode
from kafka_ref.protocol.messages import AlterPartitionRequest, ApiKey
from kafka_ref.protocol.types import ZERO_UUID
from kafka_ref.replication.messages import AlterIsr, AlterIsrResult, LeaderAndIsr
from kafka_ref.security.inter_broker import InterBrokerSecurity
from kafka_ref.server.inter_broker_channel import InterBrokerChannel

logger = logging.getLogger("kafka_ref.server.alter_partition_manager")

ALTER_PARTITION_VERSION = 0  # by topic name, to ZooKeeper mode's controller
ALTER_PARTITION_BY_ID = 3  # by topic id, each ISR member's epoch: KRaft's (KIP-903)
RETRY_BACKOFF_S = 0.1


class ControllerDestination(Protocol):
    """Where the requests go: `request` raises a ConnectionError when nobody answers."""

    async def request(self, api_key: int, version: int, body: Any) -> Any: ...

    def close(self) -> None: ...


class ZkControllerDestination:
    """The broker `/controller` names, over the inter-broker channel (ZooKeeper mode)."""

    def __init__(self, metadata: ZkClusterMetadata, security: InterBrokerSecurity) -> None:
        self.metadata = metadata
        self.channel = InterBrokerChannel(  # with the inter-broker listener's security (SEC-21)
            metadata, f"broker-{metadata.endpoint.node_id}-alter-partition", security
        )

    async def request(self, api_key: int, version: int, body: Any) -> Any:
        return await self.channel.request(self.metadata.controller_id, api_key, version, body)

    def close(self) -> None:
        self.channel.close()


class AlterPartitionManager:
    """Sends this broker's AlterPartition requests to the controller."""

    def __init__(
        self,
        broker_id: int,
        broker_epoch: Callable[[], int],
        destination: ControllerDestination,
        topic_id: Callable[[str], uuid.UUID | None] | None = None,
    ) -> None:
        self.broker_id = broker_id
        self.broker_epoch = broker_epoch  # the current registration's (KIP-380, KIP-631)
        self.destination = destination
        # KRaft names topics by id (v2, KIP-841); ZooKeeper mode's controller by name (v0)
        self.topic_id = topic_id
        self.version = ALTER_PARTITION_VERSION if topic_id is None else ALTER_PARTITION_BY_ID
        self._tasks: set[asyncio.Task] = set()

    def submit(
        self,
        alter: AlterIsr,
        replicas: tuple[int, ...],
        on_result: Callable[[AlterIsrResult], None],
    ) -> None:
        """Send `alter`; `on_result` gets the controller's answer, on the event loop."""
        task = asyncio.get_running_loop().create_task(self._send(alter, replicas, on_result))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _send(
        self,
        alter: AlterIsr,
        replicas: tuple[int, ...],
        on_result: Callable[[AlterIsrResult], None],
    ) -> None:
        topic_id = self.topic_id(alter.topic) if self.topic_id is not None else None
        if self.topic_id is not None and topic_id is None:  # deleted meanwhile
            on_result(AlterIsrResult(*alter.tp, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
            return
        epoch = self.broker_epoch()
        partition = AlterPartitionRequest.PartitionData(
            partition_index=alter.partition,
            leader_epoch=alter.leader_epoch,
            partition_epoch=alter.version,
        )
        if self.version >= 3:  # NewIsrWithEpochs: ours known, the followers' not (-1)
            partition.new_isr_with_epochs = [
                AlterPartitionRequest.BrokerState(
                    broker_id=b, broker_epoch=epoch if b == self.broker_id else -1
                )
                for b in alter.new_isr
            ]
        else:
            partition.new_isr = list(alter.new_isr)
        body = AlterPartitionRequest(
            broker_id=self.broker_id,
            broker_epoch=epoch,
            topics=[
                AlterPartitionRequest.TopicData(
                    topic_name=alter.topic,
                    topic_id=topic_id or ZERO_UUID,
                    partitions=[partition],
                )
            ],
        )
        try:
            response = await self.destination.request(ApiKey.ALTER_PARTITION, self.version, body)
        except ConnectionError as err:  # nobody answered: no controller, or it is moving
            logger.info("AlterPartition for %s-%d not sent: %s", *alter.tp, err)
            await asyncio.sleep(RETRY_BACKOFF_S)  # the leader proposes again after this
            on_result(AlterIsrResult(*alter.tp, ErrorCode.NETWORK_EXCEPTION))
            return
        on_result(self._result(alter, replicas, topic_id, response))

    @staticmethod
    def _result(
        alter: AlterIsr, replicas: tuple[int, ...], topic_id: uuid.UUID | None, response: object
    ) -> AlterIsrResult:
        error = ErrorCode(response.error_code)  # type: ignore[attr-defined]
        found = [
            p
            for t in response.topics  # type: ignore[attr-defined]
            if (t.topic_id == topic_id if topic_id is not None else t.topic_name == alter.topic)
            for p in t.partitions
            if p.partition_index == alter.partition
        ]
        if error == ErrorCode.NO_ERROR and not found:
            error = ErrorCode.UNKNOWN_SERVER_ERROR  # a controller that skipped our partition
        if error != ErrorCode.NO_ERROR or found[0].error_code != ErrorCode.NO_ERROR:
            return AlterIsrResult(*alter.tp, ErrorCode(found[0].error_code) if found else error)
        p = found[0]
        state = LeaderAndIsr(
            *alter.tp, p.leader_id, p.leader_epoch, tuple(p.isr), replicas, p.partition_epoch
        )
        return AlterIsrResult(*alter.tp, ErrorCode.NO_ERROR, state)

    def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        self.destination.close()
