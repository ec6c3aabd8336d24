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
  append's error code (NO_ERROR, or e.g. NOT_ENOUGH_REPLICAS); with replication the write
  waits in the produce purgatory like an acks=all produce and `on_done` runs when the high
  watermark passes the batch, or with REQUEST_TIMED_OUT after `offsets.commit.timeout.ms`
  (BROKER-47). Mapping those codes to the coordinator's
  (COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR, ...) is the coordinator's business, as in
  Kafka's `GroupMetadataManager`.
* **Election and resignation.** When this broker becomes leader of a partition of the
  offsets topic (at start, and when the topic is created) the coordinator loads the
  partition: `on_elected(p, records)` with every (key, value) up to the log end offset, in
  offset order, control batches skipped (`read_records`; Kafka:
  `GroupMetadataManager.doLoadGroupsAndOffsets`). Until then its groups answer
  COORDINATOR_LOAD_IN_PROGRESS or NOT_COORDINATOR. Deleting the topic resigns every
  partition (`on_resigned`), as a lost leadership does (BROKER-46). In ZooKeeper mode
  (server/zk_mode.py, `CoordinatorLeadership`) the controller's LeaderAndIsr states load a
  partition when this broker becomes its leader and unload it when it stops leading.
* **Finding the coordinator.** `coordinator_of(group_id)` is the broker that leads the
  group's partition (`partition_for`), or None while it has no leader (BROKER-44).
* **Housekeeping.** The broker runs `run_offset_expiration` every
  `offsets.retention.check.interval.ms` and calls `shutdown` before the logs close.

Rules: BROKER-44, BROKER-45, BROKER-46, BROKER-47.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator

from kafka_ref.cluster.embedded import EmbeddedController
from kafka_ref.cluster.metadata import BrokerEndpoint, ClusterMetadataApi, TopicExistsError
from kafka_ref.config import LogConfig
from kafka_ref.errors import ErrorCode, KafkaError
from kafka_ref.group.coordinator import GroupConfig, GroupCoordinator
from kafka_ref.log.log import Log
from kafka_ref.log.validator import AppendOrigin
from kafka_ref.record.batch import RecordBatch
from kafka_ref.record.control import read_marker
from kafka_ref.server.kafka_config import KafkaConfig
from kafka_ref.server.purgatory import DelayedOperation
from kafka_ref.server.replica_manager import ReplicaManager
from kafka_ref.share.persister import Persister
from kafka_ref.share.share_group_coordinator import Spawn, run_now

logger = logging.getLogger("kafka_ref.server.group_adapter")

OFFSETS_TOPIC = "__consumer_offsets"  # Kafka: Topic.GROUP_METADATA_TOPIC_NAME
REQUIRED_ACKS = -1  # coordinator writes wait for the whole ISR (Kafka: acks=all)
COORDINATOR = AppendOrigin.COORDINATOR


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
        group_consumer_heartbeat_interval_ms=config["group.consumer.heartbeat.interval.ms"],
        group_consumer_session_timeout_ms=config["group.consumer.session.timeout.ms"],
        group_consumer_assignors=tuple(config["group.consumer.assignors"]),
        group_consumer_max_size=config["group.consumer.max.size"],
        group_share_heartbeat_interval_ms=config["group.share.heartbeat.interval.ms"],
        group_share_session_timeout_ms=config["group.share.session.timeout.ms"],
        group_share_max_size=config["group.share.max.size"],
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


def coordinator_of(
    controller: ClusterMetadataApi, coordinator: GroupCoordinator, group_id: str
) -> BrokerEndpoint | None:
    """The live broker leading the group's `__consumer_offsets` partition (Kafka:
    `KafkaApis.handleFindCoordinatorRequest` -> `partitionFor` + the partition's leader),
    or None while the partition has no leader, or its leader is not registered (yet)."""
    state = controller.partition_state(OFFSETS_TOPIC, coordinator.partition_for(group_id))
    if state is None or state.leader < 0:
        return None
    for broker in controller.brokers():
        if broker.node_id == state.leader:
            return broker
    return None


Held = dict[int, dict[bytes | None, bytes | None]]  # producer id -> its records, by key


def read_records(
    log: Log, high_watermark: int, pending: Held | None = None
) -> Iterator[tuple[bytes | None, bytes | None]]:
    """(key, value) of every record in `log` below `high_watermark`, in offset order.

    Records below the log start offset (after DeleteRecords) are skipped. A value of None
    is a tombstone: the key was deleted. The records of a transactional batch (offsets
    committed in a transaction, TXN-16) are held back until their producer's marker: a
    COMMIT yields them there, an ABORT drops them, and those of a transaction still open
    at the end go into `pending`. A plain record of the same key written after a held one
    replaces it (the higher offset wins, as in Kafka).
    """
    start, held = log.log_start_offset, {}
    for batch in _batches(log, high_watermark):
        header = batch.header
        if header.is_control:
            records = held.pop(header.producer_id, {})
            if records and read_marker(bytes(batch)).is_commit:
                yield from records.items()
            continue
        for record in batch.records():
            if record.offset >= high_watermark:
                break
            if record.offset < start:
                continue
            key, value = _bytes(record.key), _bytes(record.value)
            if header.is_transactional:
                held.setdefault(header.producer_id, {})[key] = value
                continue
            for records in held.values():
                records.pop(key, None)
            yield key, value
    if pending is not None:
        pending.update(held)


def _batches(log: Log, high_watermark: int) -> Iterator[RecordBatch]:
    for segment in log.segments:
        if segment.base_offset >= high_watermark:
            return
        for position in segment.log.batch_positions():
            if position.base_offset >= high_watermark:
                return
            if position.last_offset >= log.log_start_offset:
                yield RecordBatch(segment.log.read(position.position, position.size))


def _bytes(data: bytes | memoryview | None) -> bytes | None:
    return None if data is None else bytes(data)


class DelayedCoordinatorAppend(DelayedOperation):
    """A coordinator write waiting for the ISR (Kafka: the `DelayedProduce` that
    `appendForGroup` parks through `ReplicaManager.appendRecords`)."""

    def __init__(
        self,
        replica_manager: ReplicaManager,
        tp: tuple[str, int],
        required_offset: int,
        timeout_ms: int,
        on_done: Callable[[ErrorCode], None],
    ) -> None:
        super().__init__(timeout_ms)
        self.replica_manager, self.tp, self.required_offset = replica_manager, tp, required_offset
        self.on_done = on_done
        self.error = ErrorCode.REQUEST_TIMED_OUT  # unless the HW passes the batch in time

    def try_complete(self) -> bool:
        partition = self.replica_manager.partitions.get(self.tp)
        if partition is None:  # the topic was deleted meanwhile
            self.error = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            return self.force_complete()
        done, error = partition.check_enough_replicas_reach_offset(self.required_offset)
        if not done:
            return False
        self.error = error
        return self.force_complete()

    def on_complete(self) -> None:
        if self.error != ErrorCode.NO_ERROR:
            logger.warning("append to %s-%d failed: %s", *self.tp, self.error.name)
        self.on_done(self.error)


class GroupCoordinatorAdapter:
    """Builds the `GroupCoordinator` and feeds it `__consumer_offsets` (a `MetadataListener`)."""

    def __init__(
        self,
        config: KafkaConfig,
        replica_manager: ReplicaManager,
        clock,
        schedule: Callable,
        share_persister: Callable[[], Persister] | None = None,
        spawn: Spawn = run_now,
    ) -> None:
        self.replica_manager = replica_manager
        self.commit_timeout_ms = config["offsets.commit.timeout.ms"]
        self.coordinator = GroupCoordinator(
            group_config(config),
            clock,
            schedule,
            self.append,
            share_persister=share_persister,  # the share coordinator's client (KIP-932)
            spawn=spawn,
        )

    # ------------------------------------------------------------------ the coordinator's writes
    def append(self, partition: int, batch: bytes, on_done: Callable[[ErrorCode], None]) -> None:
        """Append one batch to `__consumer_offsets-<partition>` with acks=-1; `on_done(error)`
        once the whole ISR has it (Kafka: `GroupMetadataManager.appendForGroup`).

        With an ISR of one (embedded mode) the HW passes the batch during the append, so
        `on_done` runs before this returns. Otherwise the write waits in the produce
        purgatory as a `DelayedCoordinatorAppend`, exactly like an acks=all produce: done
        when the HW passes the batch, REQUEST_TIMED_OUT after `offsets.commit.timeout.ms`,
        NOT_ENOUGH_REPLICAS_AFTER_APPEND or NOT_LEADER_OR_FOLLOWER if the ISR shrank or
        the leadership moved meanwhile (BROKER-47)."""
        tp = (OFFSETS_TOPIC, partition)
        records = {tp: memoryview(batch)}  # the coordinator's own writes: no sequence checks
        result = self.replica_manager.append_records(records, REQUIRED_ACKS, COORDINATOR)[tp]
        if result.error != ErrorCode.NO_ERROR or result.info is None:
            logger.warning("append to %s-%d failed: %s", *tp, result.error.name)
            on_done(result.error)
            return
        delayed = DelayedCoordinatorAppend(
            self.replica_manager, tp, result.info.last_offset + 1, self.commit_timeout_ms, on_done
        )
        self.replica_manager.produce_purgatory.try_complete_else_watch(delayed, [tp])

    # ------------------------------------------------------------------ partition lifecycle
    def start(self) -> None:
        """Load every partition of the offsets topic this broker leads (at broker start)."""
        for (topic, index), partition in sorted(self.replica_manager.partitions.items()):
            if topic == OFFSETS_TOPIC and partition.is_leader:
                self.elect(index)

    def elect(self, index: int) -> None:
        """Load the partition's groups. Up to the log end, not the HW, as Kafka's
        `doLoadGroupsAndOffsets`: a new leader's HW still lags the old leader's (followers
        learn the HW on their next fetch), yet every write the old leader acknowledged is
        in the new leader's log (it was in the ISR), and whatever the new leader holds is
        what its followers will hold. Loading to the HW would forget acknowledged commits."""
        partition = self.replica_manager.get_partition(OFFSETS_TOPIC, index)
        pending: Held = {}
        self.coordinator.on_elected(
            index, read_records(partition.log, partition.log_end_offset, pending)
        )
        self.coordinator.txn_offsets.restore(pending)  # transactions still open (TXN-16)

    def resign(self, index: int) -> None:
        self.coordinator.on_resigned(index)

    def on_partitions_created(self, topic: str, partitions: range) -> None:
        if topic == OFFSETS_TOPIC:  # the ReplicaManager, an earlier listener, made the logs
            for index in partitions:
                self.elect(index)

    def on_topic_deleted(self, topic: str, partitions: int) -> None:
        if topic == OFFSETS_TOPIC:
            for index in range(partitions):
                self.coordinator.on_resigned(index)

    def on_topic_config(self, topic: str, config: LogConfig) -> None:
        """The coordinator's logs follow their config through the ReplicaManager."""

    # ------------------------------------------------------------------ housekeeping
    def run_offset_expiration(self) -> object:
        return self.coordinator.run_offset_expiration()

    def shutdown(self) -> None:
        self.coordinator.shutdown()
