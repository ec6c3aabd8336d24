"""The broker side of the group coordinator: its topic, its appends, its partition lifecycle.

The group coordinator (kafka_ref/group/) is a pure state machine. It keeps every group's
members and committed offsets in memory and makes them durable as records of the internal,
compacted topic `__consumer_offsets`; but it never touches a log, a socket or the event
loop itself. This module is the adapter that connects it to the broker, in the places where
Kafka's `BrokerServer` wires its `GroupCoordinator`:

* **The offsets topic.** `ensure_offsets_topic` creates `__consumer_offsets` through the
  controller the first time a client looks for a coordinator (FindCoordinator) or asks for
  the topic in Metadata (Kafka: `AutoTopicCreationManager` with
  `GroupCoordinator.groupMetadataTopicConfigs`): `offsets.topic.num.partitions` partitions
  (50), configs `cleanup.policy=compact`, `segment.bytes=offsets.topic.segment.bytes`
  (100 MiB) and `compression.type=producer`, replication factor
  `offsets.topic.replication.factor` (3). kafka-ref caps the factor at the number of live
  brokers, as Kafka did before KIP-115 (0.11), so a single broker works with the default;
  Kafka since 0.11 answers COORDINATOR_NOT_AVAILABLE until enough brokers are up
  (BROKER-44, BROKER-45). The topic is internal: Metadata marks it `is_internal`.
* **Appends.** The coordinator's `append(partition, batch, on_done)` becomes a write to
  `__consumer_offsets-<partition>` through the `ReplicaManager` with acks=-1 (Kafka:
  `GroupMetadataManager.appendForGroup` -> `ReplicaManager.appendRecords`). On a single
  broker the append is committed when it returns, so `on_done` runs at once with the
  append's error code (NO_ERROR, or e.g. NOT_ENOUGH_REPLICAS); with replication it will run
  when the high watermark passes the batch. Mapping those codes to the coordinator's
  (COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR, ...) is the coordinator's business, as in
  Kafka's `GroupMetadataManager`.
* **Election and resignation.** When this broker becomes leader of a partition of the
  offsets topic (at start, and when the topic is created) the coordinator loads the
  partition: `on_elected(p, records)` with every (key, value) up to the high watermark, in
  offset order, control batches skipped (`read_records`; Kafka:
  `GroupMetadataManager.doLoadGroupsAndOffsets`). Until then its groups answer
  COORDINATOR_LOAD_IN_PROGRESS or NOT_COORDINATOR. Deleting the topic resigns every
  partition (`on_resigned`), as a lost leadership does (BROKER-46).
* **Housekeeping.** The broker runs `run_offset_expiration` every
  `offsets.retention.check.interval.ms` and calls `shutdown` before the logs close.

Rules: BROKER-44, BROKER-45, BROKER-46.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator

from kafka_ref.cluster.embedded import EmbeddedController
from kafka_ref.cluster.metadata import TopicExistsError
from kafka_ref.errors import ErrorCode, KafkaError
from kafka_ref.group.coordinator import GroupConfig, GroupCoordinator
from kafka_ref.log.log import Log
from kafka_ref.record.batch import RecordBatch
from kafka_ref.server.kafka_config import KafkaConfig
from kafka_ref.server.replica_manager import ReplicaManager

logger = logging.getLogger("kafka_ref.server.group_adapter")

OFFSETS_TOPIC = "__consumer_offsets"  # Kafka: Topic.GROUP_METADATA_TOPIC_NAME
REQUIRED_ACKS = -1  # coordinator writes wait for the whole ISR (Kafka: acks=all)


def group_config(config: KafkaConfig) -> GroupConfig:
    """The coordinator's settings from the broker configs of the same names."""
    return GroupConfig(
        group_min_session_timeout_ms=config["group.min.session.timeout.ms"],
        group_max_session_timeout_ms=config["group.max.session.timeout.ms"],
        group_initial_rebalance_delay_ms=config["group.initial.rebalance.delay.ms"],
        group_max_size=config["group.max.size"],
        offsets_topic_num_partitions=config["offsets.topic.num.partitions"],
        offsets_retention_minutes=config["offsets.retention.minutes"],
        offsets_retention_check_interval_ms=config["offsets.retention.check.interval.ms"],
        offset_metadata_max_bytes=config["offset.metadata.max.bytes"],
    )


def offsets_topic_configs(config: KafkaConfig) -> dict[str, str]:
    """The topic configs of `__consumer_offsets` (Kafka: `groupMetadataTopicConfigs`)."""
    return {
        "cleanup.policy": "compact",
        "segment.bytes": str(config["offsets.topic.segment.bytes"]),
        "compression.type": "producer",
    }


def ensure_offsets_topic(controller: EmbeddedController, config: KafkaConfig) -> ErrorCode:
    """Create `__consumer_offsets` if it does not exist (BROKER-45).

    Returns NO_ERROR when the topic exists afterwards, else COORDINATOR_NOT_AVAILABLE, the
    retriable error a client gets while there is no coordinator to talk to.
    """
    if controller.topic(OFFSETS_TOPIC) is not None:
        return ErrorCode.NO_ERROR
    factor = min(config["offsets.topic.replication.factor"], len(controller.brokers()))
    try:
        controller.create_topic(
            OFFSETS_TOPIC,
            config["offsets.topic.num.partitions"],
            factor,
            offsets_topic_configs(config),
        )
    except TopicExistsError:
        pass
    except (KafkaError, OSError) as err:
        logger.error("cannot create %s: %s", OFFSETS_TOPIC, err)
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    return ErrorCode.NO_ERROR


def read_records(log: Log, high_watermark: int) -> Iterator[tuple[bytes | None, bytes | None]]:
    """(key, value) of every record in `log` below `high_watermark`, in offset order.

    Control batches (transaction markers) carry no group data and are skipped; records
    below the log start offset (after DeleteRecords) are skipped too. A value of None is a
    tombstone: the key was deleted.
    """
    start = log.log_start_offset
    for segment in log.segments:
        if segment.base_offset >= high_watermark:
            return
        for position in segment.log.batch_positions():
            if position.base_offset >= high_watermark:
                return
            if position.last_offset < start:
                continue
            batch = RecordBatch(segment.log.read(position.position, position.size))
            if batch.header.is_control:
                continue
            for record in batch.records():
                if record.offset >= high_watermark:
                    return
                if record.offset >= start:
                    yield _bytes(record.key), _bytes(record.value)


def _bytes(data: bytes | memoryview | None) -> bytes | None:
    return None if data is None else bytes(data)


class GroupCoordinatorAdapter:
    """Builds the `GroupCoordinator` and feeds it `__consumer_offsets` (a `MetadataListener`)."""

    def __init__(
        self,
        config: KafkaConfig,
        replica_manager: ReplicaManager,
        clock,
        schedule: Callable,
    ) -> None:
        self.replica_manager = replica_manager
        self.coordinator = GroupCoordinator(group_config(config), clock, schedule, self.append)

    # ------------------------------------------------------------------ the coordinator's writes
    def append(self, partition: int, batch: bytes, on_done: Callable[[ErrorCode], None]) -> None:
        """Append one batch to `__consumer_offsets-<partition>` with acks=-1, then `on_done`."""
        tp = (OFFSETS_TOPIC, partition)
        result = self.replica_manager.append_records({tp: memoryview(batch)}, REQUIRED_ACKS)[tp]
        if result.error != ErrorCode.NO_ERROR:
            logger.warning("append to %s-%d failed: %s", *tp, result.error.name)
        on_done(result.error)  # one broker: committed as soon as it is appended

    # ------------------------------------------------------------------ partition lifecycle
    def start(self) -> None:
        """Load every partition of the offsets topic this broker leads (at broker start)."""
        for (topic, index), _ in sorted(self.replica_manager.partitions.items()):
            if topic == OFFSETS_TOPIC:
                self.elect(index)

    def elect(self, index: int) -> None:
        partition = self.replica_manager.get_partition(OFFSETS_TOPIC, index)
        records = read_records(partition.log, partition.high_watermark)
        self.coordinator.on_elected(index, records)

    def on_partitions_created(self, topic: str, partitions: range) -> None:
        if topic == OFFSETS_TOPIC:  # the ReplicaManager, an earlier listener, made the logs
            for index in partitions:
                self.elect(index)

    def on_topic_deleted(self, topic: str, partitions: int) -> None:
        if topic == OFFSETS_TOPIC:
            for index in range(partitions):
                self.coordinator.on_resigned(index)

    # ------------------------------------------------------------------ housekeeping
    def run_offset_expiration(self) -> object:
        return self.coordinator.run_offset_expiration()

    def shutdown(self) -> None:
        self.coordinator.shutdown()
