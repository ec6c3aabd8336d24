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

The request goes to the broker that `/controller` names, over the inter-broker channel.
If the controller cannot be reached (it is failing over), the change is refused with
NETWORK_EXCEPTION after a pause, and the leader proposes it again at its next decision;
an answer with an error means the controller knows better (a newer leader epoch or
partition epoch, a LeaderAndIsr on its way).

Rules: CTRL-22, ISR-5.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from kafka_ref.cluster.zk_metadata import ZkClusterMetadata
from kafka_ref.errors import ErrorCode
from kafka_ref.protocol.messages import AlterPartitionRequest, ApiKey
from kafka_ref.replication.messages import AlterIsr, AlterIsrResult, LeaderAndIsr
from kafka_ref.security.inter_broker import InterBrokerSecurity
from kafka_ref.server.inter_broker_channel import BrokerUnavailableError, InterBrokerChannel

logger = logging.getLogger("kafka_ref.server.alter_partition_manager")

ALTER_PARTITION_VERSION = 0
RETRY_BACKOFF_S = 0.1


class AlterPartitionManager:
    """Sends this broker's AlterPartition requests to the controller."""

    def __init__(self, metadata: ZkClusterMetadata, security: InterBrokerSecurity) -> None:
        self.metadata = metadata
        self.broker_id = metadata.endpoint.node_id
        self.channel = InterBrokerChannel(  # with the inter-broker listener's security (SEC-21)
            metadata, f"broker-{self.broker_id}-alter-partition", security
        )
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
        body = AlterPartitionRequest(
            broker_id=self.broker_id,
            broker_epoch=self.metadata.broker_epoch,
            topics=[
                AlterPartitionRequest.TopicData(
                    topic_name=alter.topic,
                    partitions=[
                        AlterPartitionRequest.PartitionData(
                            partition_index=alter.partition,
                            leader_epoch=alter.leader_epoch,
                            new_isr=list(alter.new_isr),
                            partition_epoch=alter.version,
                        )
                    ],
                )
            ],
        )
        try:
            response = await self.channel.request(
                self.metadata.controller_id, ApiKey.ALTER_PARTITION, ALTER_PARTITION_VERSION, body
            )
        except BrokerUnavailableError as err:
            logger.info("AlterPartition for %s-%d not sent: %s", *alter.tp, err)
            await asyncio.sleep(RETRY_BACKOFF_S)  # the leader proposes again after this
            on_result(AlterIsrResult(*alter.tp, ErrorCode.NETWORK_EXCEPTION))
            return
        on_result(self._result(alter, replicas, response))

    @staticmethod
    def _result(alter: AlterIsr, replicas: tuple[int, ...], response: object) -> AlterIsrResult:
        error = ErrorCode(response.error_code)  # type: ignore[attr-defined]
        found = [
            p
            for t in response.topics  # type: ignore[attr-defined]
            if t.topic_name == alter.topic
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
        self.channel.close()
