"""The broker side of the share coordinator: its topic, its appends, its partition lifecycle.

The share coordinator (kafka_ref/share/share_coordinator.py) is pure: it decides, and says
which record to write. This adapter connects it to the broker where Kafka's `BrokerServer`
wires its `ShareCoordinatorService`, exactly as group_adapter.py and txn_adapter.py do for
the other two coordinators:

* **The state topic.** `ensure_share_state_topic` creates `__share_group_state` the first
  time a key's coordinator is looked for (FindCoordinator key type 2):
  `share.coordinator.state.topic.num.partitions` partitions (50), replication factor
  `share.coordinator.state.topic.replication.factor` (3) capped at the live brokers as
  kafka-ref does for `__consumer_offsets`, and Kafka's topic configs
  (`ShareCoordinatorService.shareGroupStateTopicConfigs`): `cleanup.policy=delete` with
  `retention.ms=-1` (Kafka does not compact it: a ShareUpdate's key is the same for every
  update of a share-partition, so compaction would keep only the last one; Kafka deletes the
  prefix no snapshot needs any more instead), `min.insync.replicas` =
  `share.coordinator.state.topic.min.isr` (2) capped at the factor, `segment.bytes` =
  `share.coordinator.state.topic.segment.bytes` and `compression.type=producer` (SHARE-78).
* **Appends.** `append` writes the coordinator's batch to `__share_group_state-<p>` with
  acks=all and calls back when the ISR has it, or with REQUEST_TIMED_OUT after
  `share.coordinator.write.timeout.ms` (`DelayedCoordinatorAppend`).
* **Leadership.** When this broker leads a partition of the topic (at start, at creation;
  in ZooKeeper and KRaft modes whenever the metadata makes it leader, through the modes'
  `follow_coordinator`) the coordinator loads it up to its log end; losing the leadership
  unloads it (SHARE-73).
* **Finding the coordinator.** `coordinator_of(key)` is the live broker leading the key's
  partition, or None.

Rules: SHARE-70, SHARE-78.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable

from kafka_ref.cluster.metadata import BrokerEndpoint, ClusterMetadataApi, TopicExistsError
from kafka_ref.config import LogConfig
from kafka_ref.errors import ErrorCode, KafkaError
from kafka_ref.server.group_adapter import COORDINATOR, DelayedCoordinatorAppend, read_records
from kafka_ref.server.inter_broker_channel import live_broker
from kafka_ref.server.kafka_config import KafkaConfig
from kafka_ref.server.replica_manager import ReplicaManager
from kafka_ref.share.share_coordinator import (
    SHARE_GROUP_STATE_TOPIC,
    ShareCoordinator,
    ShareCoordinatorConfig,
    partition_for,
)

logger = logging.getLogger("kafka_ref.server.share_coordinator_adapter")

REQUIRED_ACKS = -1


def share_coordinator_config(config: KafkaConfig) -> ShareCoordinatorConfig:
    return ShareCoordinatorConfig(
        num_partitions=config["share.coordinator.state.topic.num.partitions"],
        snapshot_update_records_per_snapshot=config[
            "share.coordinator.snapshot.update.records.per.snapshot"
        ],
    )


def share_state_topic_configs(config: KafkaConfig, factor: int) -> dict[str, str]:
    """The topic configs of `__share_group_state` (Kafka `shareGroupStateTopicConfigs`)."""
    return {
        "cleanup.policy": "delete",
        "retention.ms": "-1",
        "compression.type": "producer",
        "segment.bytes": str(config["share.coordinator.state.topic.segment.bytes"]),
        "min.insync.replicas": str(min(config["share.coordinator.state.topic.min.isr"], factor)),
    }


def ensure_share_state_topic(controller: ClusterMetadataApi, config: KafkaConfig) -> ErrorCode:
    """Create `__share_group_state` if it does not exist (SHARE-78); NO_ERROR when it
    exists afterwards, else COORDINATOR_NOT_AVAILABLE (retriable)."""
    if controller.topic(SHARE_GROUP_STATE_TOPIC) is not None:
        return ErrorCode.NO_ERROR
    factor = min(
        config["share.coordinator.state.topic.replication.factor"], len(controller.brokers())
    )
    try:
        controller.create_topic(
            SHARE_GROUP_STATE_TOPIC,
            config["share.coordinator.state.topic.num.partitions"],
            factor,
            share_state_topic_configs(config, factor),
        )
    except TopicExistsError:
        pass
    except (KafkaError, OSError) as err:
        logger.error("cannot create %s: %s", SHARE_GROUP_STATE_TOPIC, err)
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    return ErrorCode.NO_ERROR


class ShareCoordinatorAdapter:
    """Builds the `ShareCoordinator` and feeds it `__share_group_state` (a
    `MetadataListener`)."""

    def __init__(
        self,
        config: KafkaConfig,
        controller: ClusterMetadataApi,
        replica_manager: ReplicaManager,
        clock,
    ) -> None:
        self.config, self.controller, self.replica_manager = config, controller, replica_manager
        self.write_timeout_ms = config["share.coordinator.write.timeout.ms"]
        self.coordinator = ShareCoordinator(
            share_coordinator_config(config), clock, self.append, self.partition_count
        )

    def partition_count(self, topic_id: uuid.UUID) -> int | None:
        """A topic's partitions by id, None if the cluster has no such topic (Kafka: the
        coordinator's metadata image)."""
        for meta in self.controller.topics():
            if meta.topic_id == topic_id:
                return meta.partitions
        return None

    def coordinator_of(self, key: str) -> BrokerEndpoint | None:
        """The live broker leading the partition of a FindCoordinator key
        `group:topicId:partition`, or None (SHARE-70)."""
        partition = partition_for(key, self.coordinator.config.num_partitions)
        state = self.controller.partition_state(SHARE_GROUP_STATE_TOPIC, partition)
        return live_broker(self.controller, state.leader) if state is not None else None

    def find_coordinator(self, coordinator_key: str) -> int | None:
        """The node id of a key's share coordinator, as FindCoordinator key type 2 answers
        it (creating the topic on first use), or None while there is none: what the
        broker's `DefaultStatePersister` asks before each request."""
        if ensure_share_state_topic(self.controller, self.config) != ErrorCode.NO_ERROR:
            return None
        leader = self.coordinator_of(coordinator_key)
        return leader.node_id if leader is not None else None

    # ------------------------------------------------------------------ writes
    def append(self, partition: int, batch: bytes, on_done: Callable[[ErrorCode], None]) -> None:
        tp = (SHARE_GROUP_STATE_TOPIC, partition)
        records = {tp: memoryview(batch)}
        result = self.replica_manager.append_records(records, REQUIRED_ACKS, COORDINATOR)[tp]
        if result.error != ErrorCode.NO_ERROR or result.info is None:
            logger.warning("append to %s-%d failed: %s", *tp, result.error.name)
            on_done(result.error)
            return
        delayed = DelayedCoordinatorAppend(
            self.replica_manager, tp, result.info.last_offset + 1, self.write_timeout_ms, on_done
        )
        self.replica_manager.produce_purgatory.try_complete_else_watch(delayed, [tp])

    # ------------------------------------------------------------------ leadership
    def start(self) -> None:
        """Load the partitions of `__share_group_state` this broker leads."""
        for (topic, index), partition in sorted(self.replica_manager.partitions.items()):
            if topic == SHARE_GROUP_STATE_TOPIC and partition.is_leader:
                self.elect(index)

    def elect(self, index: int) -> None:
        """Load the partition up to its log end (as group_adapter's `elect` explains)."""
        partition = self.replica_manager.get_partition(SHARE_GROUP_STATE_TOPIC, index)
        self.coordinator.on_elected(index, read_records(partition.log, partition.log_end_offset))

    def resign(self, index: int) -> None:
        self.coordinator.on_resigned(index)

    def on_partitions_created(self, topic: str, partitions: range) -> None:
        if topic == SHARE_GROUP_STATE_TOPIC:
            for index in partitions:
                self.elect(index)

    def on_topic_deleted(self, topic: str, partitions: int) -> None:
        if topic == SHARE_GROUP_STATE_TOPIC:
            for index in range(partitions):
                self.coordinator.on_resigned(index)

    def on_topic_config(self, topic: str, config: LogConfig) -> None:
        """The coordinator's logs follow their config through the ReplicaManager."""

    def shutdown(self) -> None:
        self.coordinator.shutdown()
