"""The replica manager: the partitions this broker hosts, and the one place for their HW.

A broker does not append to logs directly from request handlers. Kafka's `KafkaApis` hands
produce and fetch requests to the `ReplicaManager`, which finds each partition's `Partition`
object and goes through it to the `Log`. The indirection matters because a partition is
more than its log: it has a leader, replicas, an ISR and a **high watermark** (HW), the
offset below which records are committed (replicated to the whole ISR). Consumers only ever
see records below the HW (BROKER-20), so no consumer can read a record that a leader
failover could still lose.

On this single broker the ISR is the leader alone, so the HW is the log end offset, and it
is computed in exactly one place, `Partition.high_watermark`. Replication (a later issue)
replaces that line with Kafka's `Partition.maybeIncrementLeaderHW`: HW = min LEO over the
ISR. Everything else already reads the HW through it: fetch bounds, ListOffsets "latest",
DeleteRecords' upper bound, retention's and the cleaner's upper bound.

`append_records` is Kafka's `ReplicaManager.appendRecords`: per partition, find the leader
partition, append (the log validates each batch: CRC, sizes, magic, and assigns offsets in
place, without decoding a record), and collect a per-partition error code rather than
failing the request. After the appends it wakes the delayed fetches watching those
partitions (the purgatory). For `acks=all` Kafka would now park a `DelayedProduce` until
the HW passes the appended offsets; the hook is marked below.

`read` is `ReplicaManager.readFromLocalLog` for one partition: file slices of whole
batches, bounded by the HW and by the byte limits, at least one batch when asked.

**Leader or follower (ZooKeeper mode).** On a single broker every partition is led here
(`make_leader`). In a cluster the controller decides, and `become_leader_or_follower(state)`
applies its decision (Kafka: `ReplicaManager.becomeLeaderOrFollower`): the partition (and
its log) exists on every replica; it records the leader, the leader epoch, the replicas
and the ISR; a state with a lower leader epoch than the applied one is ignored. Produce,
Fetch and ListOffsets reach a partition through `get_partition`, which answers
NOT_LEADER_OR_FOLLOWER on a broker that does not lead it, so clients refresh their
metadata and go to the leader (CTRL-10). Followers do not replicate yet: the replication
core (kafka_ref/replication/) is wired in next, starting its fetcher in
`Partition.make_follower` and computing the HW over the ISR; until then the ISR is what
the controller wrote and the leader's HW is its own log end.

Rules: BROKER-14, BROKER-20, BROKER-26, BROKER-29, BROKER-42, CTRL-10.
"""

from __future__ import annotations

import logging
from collections.abc import Hashable
from dataclasses import dataclass

from kafka_ref.cluster.metadata import PartitionState, UnknownTopicOrPartitionError
from kafka_ref.errors import ErrorCode, KafkaError, OffsetOutOfRangeError
from kafka_ref.log.log import Log, LogReadInfo
from kafka_ref.log.log_manager import LogManager
from kafka_ref.log.validator import AppendInfo
from kafka_ref.server.purgatory import DelayedOperationPurgatory

logger = logging.getLogger("kafka_ref.server.replica_manager")

TopicPartition = tuple[str, int]


class NotEnoughReplicasError(KafkaError):
    code = ErrorCode.NOT_ENOUGH_REPLICAS


class PolicyViolationError(KafkaError):
    code = ErrorCode.POLICY_VIOLATION


class NotLeaderOrFollowerError(KafkaError):
    code = ErrorCode.NOT_LEADER_OR_FOLLOWER


@dataclass(frozen=True, slots=True)
class PartitionAppendResult:
    """The outcome of one partition's append (Kafka: `LogAppendResult`)."""

    error: ErrorCode
    info: AppendInfo | None = None
    message: str = ""


class Partition:
    """One partition this broker leads (Kafka: `Partition`)."""

    def __init__(self, topic: str, index: int, log: Log, broker_id: int) -> None:
        self.topic = topic
        self.index = index
        self.log = log
        self.leader_id = broker_id
        self.broker_id = broker_id
        self.leader_epoch = 0
        self.isr: tuple[int, ...] = (broker_id,)
        self.replicas: tuple[int, ...] = (broker_id,)

    def __repr__(self) -> str:
        return f"Partition({self.topic}-{self.index}, hw={self.high_watermark})"

    @property
    def is_leader(self) -> bool:
        return self.leader_id == self.broker_id

    def apply_state(self, state: PartitionState) -> bool:
        """Take the controller's leader, epoch, replicas and ISR; False if `state` is older
        than the applied epoch (Kafka: `Partition.makeLeader` / `makeFollower`)."""
        if state.leader_epoch < self.leader_epoch:
            return False
        self.leader_id, self.leader_epoch = state.leader, state.leader_epoch
        self.replicas, self.isr = tuple(state.replicas), tuple(state.isr)
        return True

    @property
    def high_watermark(self) -> int:
        """The committed bound. One broker: the ISR is the leader, so HW = its LEO."""
        return self.log.log_end_offset

    @property
    def last_stable_offset(self) -> int:
        """Bound of read_committed consumers; = HW until transactions exist."""
        return self.high_watermark

    @property
    def log_start_offset(self) -> int:
        return self.log.log_start_offset

    def append_records_to_leader(self, records: memoryview, required_acks: int) -> AppendInfo:
        """Kafka `Partition.appendRecordsToLeader`: min.insync.replicas, then the log."""
        min_isr = self.log.config.min_insync_replicas
        if required_acks == -1 and len(self.isr) < min_isr:
            raise NotEnoughReplicasError(
                f"The size of the current ISR {len(self.isr)} is insufficient to satisfy the"
                f" min.isr requirement of {min_isr} for partition {self.topic}-{self.index}"
            )
        return self.log.append(records, leader_epoch=self.leader_epoch)

    def read(
        self, offset: int, max_bytes: int, *, min_one_batch: bool, read_committed: bool = False
    ) -> LogReadInfo:
        """Whole batches from the one holding `offset`, below the HW (or LSO)."""
        bound = self.last_stable_offset if read_committed else self.high_watermark
        return self.log.read(offset, max_bytes, max_offset=bound, min_one_batch=min_one_batch)

    def bytes_available(self, offset: int, limit: int, read_committed: bool = False) -> int:
        """How many fetchable bytes lie at `offset` (for DelayedFetch's min_bytes check)."""
        bound = self.last_stable_offset if read_committed else self.high_watermark
        if offset >= bound:
            return 0
        return self.read(offset, limit, min_one_batch=True, read_committed=read_committed).size

    def delete_records_before(self, offset: int) -> int:
        """DeleteRecords: -1 means the HW; above the HW is out of range. Returns low watermark."""
        if not self.log.config.delete:
            raise PolicyViolationError(
                f"Records of partition {self.topic}-{self.index} with cleanup.policy=compact"
                " cannot be deleted"
            )
        hw = self.high_watermark
        target = hw if offset == -1 else offset
        if target < 0 or target > hw:
            raise OffsetOutOfRangeError(
                f"Cannot increment the log start offset to {target} of partition"
                f" {self.topic}-{self.index} since it is larger than the high watermark {hw}"
            )
        self.log.delete_records_before(target)
        return self.log.log_start_offset


class ReplicaManager:
    """The partitions of this broker (Kafka: `ReplicaManager`)."""

    def __init__(
        self, broker_id: int, log_manager: LogManager, fetch_purgatory: DelayedOperationPurgatory
    ) -> None:
        self.broker_id = broker_id
        self.log_manager = log_manager
        self.fetch_purgatory = fetch_purgatory
        self.partitions: dict[TopicPartition, Partition] = {}

    # ------------------------------------------------------------------ metadata changes
    def make_leader(self, topic: str, index: int) -> Partition:
        """Host a partition as its leader, creating its log if needed."""
        partition = self.partitions.get((topic, index))
        if partition is None:
            log = self.log_manager.get_or_create_log(topic, index)
            partition = Partition(topic, index, log, self.broker_id)
            self.partitions[(topic, index)] = partition
        return partition

    def become_leader_or_follower(self, state: PartitionState) -> Partition | None:
        """Apply the controller's state of one partition this broker replicates (CTRL-10).

        Returns the partition, or None if the state was stale and ignored. The replication
        wiring hooks in here: a new leader epoch as follower starts fetching from
        `state.leader`, as leader it resets the followers' progress.
        """
        partition = self.make_leader(state.topic, state.partition)  # hosts the replica
        was_leader = partition.is_leader
        if not partition.apply_state(state):
            logger.info("ignoring state with an old leader epoch: %s", state)
            return None
        if was_leader != partition.is_leader:
            logger.info(
                "%s-%d: %s (leader %d, epoch %d)", state.topic, state.partition,
                "leader" if partition.is_leader else "follower", state.leader, state.leader_epoch,
            )  # fmt: skip
        self.wake((state.topic, state.partition))  # waiting fetches re-check (NOT_LEADER)
        return partition

    def on_partition_state(self, state: PartitionState) -> None:
        self.become_leader_or_follower(state)

    def on_partitions_created(self, topic: str, partitions: range) -> None:
        for index in partitions:
            self.make_leader(topic, index)

    def on_topic_deleted(self, topic: str, partitions: int) -> None:
        for index in range(partitions):
            self.partitions.pop((topic, index), None)
            self.log_manager.delete_log(topic, index)
            self.fetch_purgatory.check_and_complete((topic, index))  # waiting fetches answer

    # ------------------------------------------------------------------ lookups
    def get_partition(self, topic: str, index: int) -> Partition:
        """The partition this broker *leads*; clients talk to leaders only."""
        partition = self.partitions.get((topic, index))
        if partition is None:
            raise UnknownTopicOrPartitionError(
                f"This server does not host this topic-partition {topic}-{index}"
            )
        if not partition.is_leader:
            raise NotLeaderOrFollowerError(
                f"Broker {self.broker_id} is not the leader of {topic}-{index}"
                f" (leader {partition.leader_id}, epoch {partition.leader_epoch})"
            )
        return partition

    def high_watermark(self, topic: str, index: int) -> int | None:
        partition = self.partitions.get((topic, index))
        return None if partition is None else partition.high_watermark

    # ------------------------------------------------------------------ produce
    def append_records(
        self, entries: dict[TopicPartition, memoryview], required_acks: int
    ) -> dict[TopicPartition, PartitionAppendResult]:
        """Append to each leader partition; errors are per partition (BROKER-14)."""
        results: dict[TopicPartition, PartitionAppendResult] = {}
        for tp, records in entries.items():
            try:
                partition = self.get_partition(*tp)
                info = partition.append_records_to_leader(records, required_acks)
                results[tp] = PartitionAppendResult(ErrorCode.NO_ERROR, info)
            except KafkaError as err:
                message = str(err.args[0]) if err.args else ""
                results[tp] = PartitionAppendResult(err.code, None, message)
                logger.debug("append to %s-%d failed: %s", tp[0], tp[1], err)
            except OSError as err:  # the disk failed us: a storage error, not a crash
                results[tp] = PartitionAppendResult(ErrorCode.KAFKA_STORAGE_ERROR, None, str(err))
                logger.error("append to %s-%d failed: %s", tp[0], tp[1], err)
        for tp, result in results.items():
            if result.error == ErrorCode.NO_ERROR and result.info and result.info.size:
                self.wake(tp)
        # Hook for replication: with acks=-1, Kafka parks a DelayedProduce here until the
        # HW passes each partition's last appended offset. One broker: already complete.
        return results

    def wake(self, key: Hashable) -> None:
        """New data (or a HW move) on a partition: let the waiting fetches re-check."""
        self.fetch_purgatory.check_and_complete(key)

    # ------------------------------------------------------------------ housekeeping
    def all_partitions(self) -> list[Partition]:
        return list(self.partitions.values())
