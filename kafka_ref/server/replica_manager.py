"""The replica manager: the partitions this broker hosts, as leader or follower.

A broker does not append to logs directly from request handlers. Kafka's `KafkaApis` hands
produce and fetch requests to the `ReplicaManager`, which finds each partition's `Partition`
object and goes through it to the `Log`. The indirection matters because a partition is
more than its log: it has a leader, replicas, an ISR and a **high watermark** (HW), the
offset below which records are committed (replicated to the whole ISR). Consumers only ever
see records below the HW (BROKER-20, REPL-2), so no consumer can read a record that a
leader failover could still lose.

The `Partition` is the replication core's (kafka_ref/replication/partition.py). This
module drives it, and nothing in it reads the wall clock or touches a socket: the clock,
the purgatories' timers (`schedule`, `loop.call_later`), `defer` (`loop.call_soon`), the
AlterPartition sender and the fetcher manager are injected. So the simulator
(kafka_ref/sim/broker.py) runs this very class on a simulated clock and network (SIM-2):

* **one broker (embedded mode)**: every partition is led here in leader epoch 0 with an
  ISR of this broker alone (`make_leader`), so each append moves the HW to the log end at
  once, and acks=all is complete when the append returns;
* **ZooKeeper mode**: `become_leader_or_follower(state)` applies the controller's state of
  a partition from its LeaderAndIsr request (Kafka: `ReplicaManager.becomeLeaderOrFollower`).
  A newer leader epoch makes the partition leader (`Partition.make_leader`: a new leader's
  followers' progress starts unknown, ISR-4; a broker that stays leader keeps it) or
  follower (`make_follower`, then the
  replica fetcher of the leader's broker takes the partition, server/follower_fetcher.py);
  an older epoch is ignored (CTRL-5); the same epoch is one this broker applied already
  (the controller sends every state again when it fails over). `stop_replica` is
  StopReplica's: stop fetching, forget, delete.

`append_records` is Kafka's `ReplicaManager.appendRecords`: per partition, find the leader
partition, append (the log validates each batch and assigns offsets in place, stamping the
leader epoch, REPL-9) and collect a per-partition error code rather than failing the
request (BROKER-14). acks=all with an ISR below `min.insync.replicas` appends nothing
(NOT_ENOUGH_REPLICAS, REPL-5); otherwise an acks=all append waits in the produce purgatory
as a `DelayedProduce` (below) until `check_enough_replicas_reach_offset` says the ISR has
it (REPL-4, REPL-11); the produce handler's subclass answers with a Produce response.

`fetch_as_leader` serves a follower's fetch (Kafka: `ReplicaManager.fetchMessages` with a
replica id): the fetch offset is the follower's LEO, which may add it to the ISR and move
the HW (REPL-3, ISR-2); `last_offset_for_leader_epoch` its OffsetsForLeaderEpoch
(TRUNC-4). Whenever the HW moves, the delayed produces and the consumers' delayed fetches of
that partition re-check (`_on_high_watermark`).

**ISR changes** (ISR-2, ISR-3, ISR-5) are proposed by the partition and sent here through
`alter_partition`: in ZooKeeper mode the `AlterPartitionManager`, an AlterPartition request
to the controller (KIP-497, CTRL-22), whose answer is applied when it comes; until then
the partition counts the maximal ISR (ISR-5). On one broker there is nobody to ask, and the
change applies at once. `shrink_isrs` runs every replica.lag.time.max.ms / 2.

`replication-offset-checkpoint` (REPL-10) holds every partition's HW: read at start (a
partition starts with its checkpointed HW), written periodically and at shutdown. Each
data directory has its own file, for the partitions it holds (DUR-13).

**A failed log directory** (DUR-16, KIP-112; Kafka: `ReplicaManager.handleLogDirFailure`).
When the log manager takes a directory offline, every partition in it goes offline on this
broker: its fetcher stops, its waiting produces and fetches answer, and from then on
requests for it answer KAFKA_STORAGE_ERROR, LeaderAndIsr included, which is how the
controller learns which replicas are gone (CTRL-30). `log_dir_failed` then tells the
controller (ZooKeeper mode: a log dir event notification). The partitions of the other
directories are untouched. DescribeLogDirs reports the directory with KAFKA_STORAGE_ERROR.

Rules: BROKER-14, BROKER-20, BROKER-26, BROKER-29, BROKER-42, CTRL-5, CTRL-10, CTRL-22,
REPL-2..REPL-5, REPL-10, ISR-2, ISR-3, DUR-16.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from typing import Any

from kafka_ref.clock import Clock, SystemClock
from kafka_ref.cluster.metadata import PartitionState, UnknownTopicOrPartitionError
from kafka_ref.common import TopicPartition
from kafka_ref.config import LogConfig
from kafka_ref.errors import ErrorCode, KafkaError, KafkaStorageError, NotLeaderOrFollowerError
from kafka_ref.log.checkpoints import REPLICATION_OFFSET_CHECKPOINT
from kafka_ref.log.isolation import READ_COMMITTED
from kafka_ref.log.log import LogReadInfo
from kafka_ref.log.log_manager import LogManager
from kafka_ref.log.validator import AppendInfo, AppendOrigin
from kafka_ref.metrics.recorders import BrokerTopicStats
from kafka_ref.replication.leader_epoch import LeaderEpochFileCache
from kafka_ref.replication.messages import (
    AlterIsr,
    AlterIsrResult,
    EpochRequest,
    EpochResult,
    FetchRequest,
    FetchResult,
    LeaderAndIsr,
)
from kafka_ref.replication.partition import (
    Partition,
    read_high_watermarks,
    write_high_watermarks,
)
from kafka_ref.replication.replica_selector import (
    ClientMetadata,
    ReplicaSelector,
    find_preferred_read_replica,
)
from kafka_ref.server.purgatory import DelayedOperation, DelayedOperationPurgatory

logger = logging.getLogger("kafka_ref.server.replica_manager")

AlterPartitionSender = Callable[[AlterIsr, tuple[int, ...], Callable[[AlterIsrResult], None]], None]


@dataclass(frozen=True, slots=True)
class PartitionAppendResult:
    """The outcome of one partition's append (Kafka: `LogAppendResult`)."""

    error: ErrorCode
    info: AppendInfo | None = None
    message: str = ""
    record_errors: tuple[tuple[int, str], ...] = ()  # (index in batch, why): KIP-467
    # A failed append reports the log start offset of the partition, except for the failures
    # Kafka treats as known (_KNOWN_APPEND_FAILURES): -1 (BROKER-14).
    log_start_offset: int = -1


# The append failures Kafka's `ReplicaManager.appendToLocalLog` answers without the log start
# offset (`UNKNOWN_LOG_APPEND_INFO`); every other one carries it (`processFailedRecord`).
_KNOWN_APPEND_FAILURES = frozenset(
    {
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.MESSAGE_TOO_LARGE,
        ErrorCode.RECORD_LIST_TOO_LARGE,
        ErrorCode.CORRUPT_MESSAGE,
        ErrorCode.KAFKA_STORAGE_ERROR,
    }
)


class ReplicaManager:
    """The partitions of this broker (Kafka: `ReplicaManager`)."""

    def __init__(
        self,
        broker_id: int,
        log_manager: LogManager,
        fetch_purgatory: DelayedOperationPurgatory,
        *,
        clock: Clock | None = None,
        produce_purgatory: DelayedOperationPurgatory | None = None,
        replica_lag_time_max_ms: int,  # the broker config, declared in its table
        defer: Callable[[Callable[[], None]], Any] | None = None,
        partition_known: Callable[[str, int], bool] | None = None,
        replica_selector: ReplicaSelector | None = None,
        broker_racks: Callable[[str | None], Mapping[int, str | None]] | None = None,
    ) -> None:
        self.broker_id = broker_id
        # `replica.selector.class`: which replica a consumer should read from (REPL-14), and
        # the rack of every live broker with an endpoint on a listener (Kafka:
        # `MetadataCache.getPartitionReplicaEndpoints`)
        self.replica_selector = replica_selector
        self.broker_racks = broker_racks or (lambda listener: {})
        # Whether the cluster's metadata has the partition (Kafka: `MetadataCache.contains`):
        # a partition known there but not hosted here is NOT_LEADER_OR_FOLLOWER, not unknown.
        self.partition_known = partition_known or (lambda topic, index: False)
        self.log_manager = log_manager
        self.clock = clock or SystemClock()
        self.fetch_purgatory = fetch_purgatory
        self.produce_purgatory = produce_purgatory or DelayedOperationPurgatory(
            "Produce", fetch_purgatory._schedule
        )
        self.replica_lag_time_max_ms = replica_lag_time_max_ms
        # Wake-ups caused while a delayed operation completes run after it (loop.call_soon)
        self._defer = defer or (lambda fn: fn())
        self.partitions: dict[TopicPartition, Partition] = {}
        self.alter_partition: AlterPartitionSender | None = (
            None  # ZooKeeper mode: to the controller
        )
        self.fetcher_manager: Any = None  # ZooKeeper mode: ReplicaFetcherManager
        self.topic_stats = BrokerTopicStats()  # the produce and fetch meters (MET-1)
        self.isr_shrinks = self.isr_expands = 0  # ISR changes written (MET-4)
        self.offline_partitions: set[TopicPartition] = set()  # in a failed log dir (DUR-16)
        self.log_dir_failed: Callable[[str], None] | None = None  # ZooKeeper mode: notify
        log_manager.log_dir_failure_listeners.append(self._on_log_dir_failure)
        self._checkpointed_hws = {  # per log dir, as Kafka's highWatermarkCheckpoints
            log_dir: read_high_watermarks(self._hw_checkpoint(log_dir))
            for log_dir in log_manager.log_dirs
        }

    @staticmethod
    def _hw_checkpoint(log_dir: str) -> str:
        return os.path.join(log_dir, REPLICATION_OFFSET_CHECKPOINT)

    # ------------------------------------------------------------------ hosting partitions
    def _host(self, topic: str, index: int) -> tuple[Partition, bool]:
        """The partition, created (with its log) if this broker did not host it yet."""
        partition = self.partitions.get((topic, index))
        if partition is not None:
            return partition, False
        self._check_online((topic, index))
        log = self.log_manager.get_or_create_log(topic, index)
        partition = Partition(
            topic,
            index,
            self.broker_id,
            log,
            LeaderEpochFileCache.load(log.dir),
            self.clock,
            replica_lag_time_max_ms=self.replica_lag_time_max_ms,
            high_watermark=self._checkpointed_hws[log.parent_dir].get((topic, index), 0),
            isolation=READ_COMMITTED,  # read_committed reads (isolation.py, TXN-4, TXN-8)
        )
        self.partitions[(topic, index)] = partition
        return partition, True

    def make_leader(self, topic: str, index: int) -> Partition:
        """One broker: lead the partition in epoch 0, the ISR being this broker alone."""
        partition, created = self._host(topic, index)
        if created:
            me = (self.broker_id,)
            partition.make_leader(LeaderAndIsr(topic, index, self.broker_id, 0, me, me))
        return partition

    def become_leader_or_follower(self, state: PartitionState) -> Partition | None:
        """Apply the controller's state of one partition this broker replicates (CTRL-10).

        Returns the partition, or None if the state was stale and ignored (CTRL-5).
        """
        tp = (state.topic, state.partition)
        if self.broker_id not in state.replicas:  # KRaft: moved away by a reassignment
            if tp in self.partitions or tp in self.log_manager.logs:
                logger.info("%s-%d: no longer a replica here, deleting it", *tp)
                self.stop_replica(tp, delete=True)
            return None
        partition, _ = self._host(*tp)
        if state.leader_epoch < partition.leader_epoch:
            logger.info("ignoring state with an old leader epoch: %s", state)
            return None
        leader = None if state.leader < 0 else state.leader
        decision = LeaderAndIsr(
            *tp,
            leader,
            state.leader_epoch,
            tuple(state.isr),
            tuple(state.replicas),
            state.zk_version,
        )
        if state.leader_epoch == partition.leader_epoch:
            if state.zk_version > partition.version:  # replicas or ISR changed (KBROKER-6)
                partition.update_assignment_and_isr(decision)
                self._on_high_watermark(tp)
            return partition  # else: an ISR change by this epoch's leader, applied already
        fetchers = self.fetcher_manager
        if fetchers is not None:
            fetchers.remove_partition(tp)
        if leader == self.broker_id:
            partition.make_leader(decision)
        else:
            partition.make_follower(decision)
            if fetchers is not None and leader is not None:
                fetchers.add_partition(partition, leader)
        self._on_high_watermark(tp)  # waiting produces and fetches re-check (NOT_LEADER...)
        return partition

    def on_partition_state(self, state: PartitionState) -> None:
        """A partition of this broker changed (LeaderAndIsr in ZooKeeper mode, the published
        image in KRaft). A log in a failed directory raises KafkaStorageError: ZooKeeper's
        controller hears it in the LeaderAndIsr answer (CTRL-30), KRaft's publisher keeps the
        partition offline and applies the rest (KBROKER-21)."""
        self.become_leader_or_follower(state)

    def on_partitions_created(self, topic: str, partitions: range) -> None:
        for index in partitions:
            self.make_leader(topic, index)

    def on_topic_config(self, topic: str, config: LogConfig) -> None:
        """A topic's config overrides changed: its live logs take the new config (CTRL-15;
        Kafka: `TopicConfigHandler` -> `Log.updateConfig`)."""
        self.log_manager.update_config(topic, config)

    def on_topic_deleted(self, topic: str, partitions: int) -> None:
        for index in range(partitions):
            self.stop_replica((topic, index), delete=True)
        self.topic_stats.forget(topic)

    def stop_replica(self, tp: TopicPartition, delete: bool) -> None:
        """Stop fetching and forget the partition; with `delete` its log goes too (Kafka:
        `ReplicaManager.stopReplicas`). Waiting produces and fetches answer at once."""
        if self.fetcher_manager is not None:
            self.fetcher_manager.remove_partition(tp)
        self.partitions.pop(tp, None)
        if delete:
            self.offline_partitions.discard(tp)  # its topic is gone: nothing left to serve
        if delete:
            self.log_manager.delete_log(*tp)
        self.fetch_purgatory.check_and_complete(tp)
        self.produce_purgatory.check_and_complete(tp)

    # ------------------------------------------------------------------ failed log dirs
    def _on_log_dir_failure(self, log_dir: str) -> None:
        # After the operation that failed: it may be iterating over the partitions
        self._defer(lambda: self.handle_log_dir_failure(log_dir))

    def handle_log_dir_failure(self, log_dir: str) -> None:
        """The log manager took `log_dir` offline: its partitions go offline here (DUR-16)."""
        failed = [tp for tp, p in self.partitions.items() if p.log.parent_dir == log_dir]
        for tp in failed:
            if self.fetcher_manager is not None:
                self.fetcher_manager.remove_partition(tp)
            del self.partitions[tp]
            self.offline_partitions.add(tp)
            self.fetch_purgatory.check_and_complete(tp)
            self.produce_purgatory.check_and_complete(tp)
        logger.error(
            "partitions %s are offline: log directory %s failed",
            sorted(f"{t}-{i}" for t, i in failed),
            log_dir,
        )
        if self.log_dir_failed is not None:
            self.log_dir_failed(log_dir)

    def _check_online(self, tp: TopicPartition) -> None:
        if tp in self.offline_partitions:
            raise KafkaStorageError(f"{tp[0]}-{tp[1]} is in an offline log directory")

    def storage_failed(self, tp: TopicPartition, err: BaseException) -> None:
        """A read or write of `tp`'s log failed (DUR-15, DUR-16)."""
        log = self.log_manager.logs.get(tp)
        if log is not None:
            self.log_manager.handle_io_error(log.parent_dir, f"append to {tp[0]}-{tp[1]}", err)

    # ------------------------------------------------------------------ lookups
    def get_partition(self, topic: str, index: int, require_leader: bool = True) -> Partition:
        """The partition this broker *leads*: clients talk to leaders, but for a consumer's
        fetch from v11, which a follower serves too (`require_leader=False`, BROKER-78).
        A partition the metadata knows but this broker does not host is
        NOT_LEADER_OR_FOLLOWER (Kafka: `ReplicaManager.getPartitionOrError`)."""
        self._check_online((topic, index))
        partition = self.partitions.get((topic, index))
        if partition is None:
            if self.partition_known(topic, index):
                raise NotLeaderOrFollowerError(
                    f"Broker {self.broker_id} hosts no replica of {topic}-{index}"
                )
            raise UnknownTopicOrPartitionError(
                f"This server does not host this topic-partition {topic}-{index}"
            )
        if require_leader and not partition.is_leader:
            raise NotLeaderOrFollowerError(
                f"Broker {self.broker_id} is not the leader of {topic}-{index}"
                f" (leader {partition.leader_id}, epoch {partition.leader_epoch})"
            )
        return partition

    def find_preferred_read_replica(
        self, partition: Partition, client: ClientMetadata, fetch_offset: int
    ) -> int | None:
        """The replica a consumer's fetch should go to instead of this leader, or None
        (Kafka: `ReplicaManager.findPreferredReadReplica`; replica_selector.py, REPL-15)."""
        if self.replica_selector is None:
            return None
        return find_preferred_read_replica(
            self.replica_selector,
            partition,
            client,
            fetch_offset,
            self.clock.milliseconds(),
            self.broker_racks(client.listener_name),
        )

    def high_watermark(self, topic: str, index: int) -> int | None:
        partition = self.partitions.get((topic, index))
        return None if partition is None else partition.high_watermark

    # ------------------------------------------------------------------ produce
    def append_records(
        self,
        entries: dict[TopicPartition, memoryview],
        required_acks: int,
        origin: AppendOrigin = AppendOrigin.CLIENT,
    ) -> dict[TopicPartition, PartitionAppendResult]:
        """Append to each leader partition; errors are per partition (BROKER-14). The
        transaction coordinator's markers come with `origin` COORDINATOR (TXN-1)."""
        results: dict[TopicPartition, PartitionAppendResult] = {}
        for tp, records in entries.items():
            try:
                partition = self.get_partition(*tp)
                hw = partition.high_watermark
                info = partition.append_records_to_leader(records, required_acks, origin)
                results[tp] = PartitionAppendResult(ErrorCode.NO_ERROR, info)
                self.topic_stats.produced(tp[0], info.record_count, info.size, False)
                if partition.high_watermark > hw:  # an ISR of one: committed at once
                    self.produce_purgatory.check_and_complete(tp)
            except KafkaError as err:
                message = str(err.args[0]) if err.args else ""
                record_errors = getattr(err, "record_errors", ())
                start = -1 if err.code in _KNOWN_APPEND_FAILURES else self._log_start(tp)
                results[tp] = PartitionAppendResult(err.code, None, message, record_errors, start)
                self.topic_stats.produced(tp[0], 0, 0, True)
                if err.code == ErrorCode.KAFKA_STORAGE_ERROR:
                    self.storage_failed(tp, err)
                logger.debug("append to %s-%d failed: %s", tp[0], tp[1], err)
            except OSError as err:  # the disk failed us: a storage error, not a crash
                results[tp] = PartitionAppendResult(ErrorCode.KAFKA_STORAGE_ERROR, None, str(err))
                self.topic_stats.produced(tp[0], 0, 0, True)
                self.storage_failed(tp, err)
        for tp, result in results.items():
            if result.error == ErrorCode.NO_ERROR and result.info and result.info.size:
                self.wake(tp)  # consumers' long polls, and followers' (new data to copy)
        return results

    def _log_start(self, tp: TopicPartition) -> int:
        partition = self.partitions.get(tp)
        return partition.log_start_offset if partition is not None else -1

    def wake(self, key: Hashable) -> None:
        """New data (or a HW move) on a partition: let the waiting fetches re-check."""
        self.fetch_purgatory.check_and_complete(key)

    def _on_high_watermark(self, tp: TopicPartition) -> None:
        """The HW (or the leadership) moved: delayed produces and fetches re-check."""

        def wake() -> None:
            self.produce_purgatory.check_and_complete(tp)
            self.fetch_purgatory.check_and_complete(tp)

        self._defer(wake)

    # ------------------------------------------------------------------ followers' fetches
    def fetch_as_leader(
        self, request: FetchRequest, records_of: Callable[[LogReadInfo], Any]
    ) -> FetchResult:
        """A follower's fetch of one partition (REPL-3, ISR-2): records from its LEO, not
        bounded by the HW; its LEO may move the HW and add it to the ISR. `records_of`
        makes the response's records of the log's read (`Partition.fetch`)."""
        if request.tp in self.offline_partitions:
            return FetchResult(ErrorCode.KAFKA_STORAGE_ERROR)
        partition = self.partitions.get(request.tp)
        if partition is None:
            return FetchResult(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        hw = partition.high_watermark
        result = partition.fetch(request, records_of)
        self.propagate_isr_change(partition)
        if partition.high_watermark > hw:
            self._on_high_watermark(request.tp)
        return result

    def last_offset_for_leader_epoch(self, request: EpochRequest) -> EpochResult:
        """A follower's OffsetsForLeaderEpoch for one partition (TRUNC-4; Kafka:
        `ReplicaManager.lastOffsetForLeaderEpoch`)."""
        if request.tp in self.offline_partitions:
            return EpochResult(ErrorCode.KAFKA_STORAGE_ERROR)
        partition = self.partitions.get(request.tp)
        if partition is None:
            return EpochResult(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        return partition.last_offset_for_leader_epoch(request)

    def check_enough_replicas_reach_offset(
        self, tp: TopicPartition, required_offset: int
    ) -> tuple[bool, ErrorCode]:
        """Is an acks=all append to `tp` ending before `required_offset` done, and how
        (REPL-4, REPL-6)? A partition no longer hosted here is done: it failed."""
        partition = self.partitions.get(tp)
        if partition is None:
            return True, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        return partition.check_enough_replicas_reach_offset(required_offset)

    # ------------------------------------------------------------------ ISR changes
    def propagate_isr_change(self, partition: Partition) -> None:
        """Send the partition's proposed ISR change, if any; its answer applies later (ISR-5)."""
        alter = partition.take_alter_isr()
        if alter is None:
            return
        if self.alter_partition is None:  # one broker: nobody else to ask
            state = LeaderAndIsr(
                *alter.tp,
                self.broker_id,
                alter.leader_epoch,
                alter.new_isr,
                partition.replicas,
                alter.version + 1,
            )
            self._on_alter_isr_result(
                partition, AlterIsrResult(*alter.tp, ErrorCode.NO_ERROR, state)
            )
        else:
            self.alter_partition(
                alter, partition.replicas, lambda r: self._on_alter_isr_result(partition, r)
            )

    def _on_alter_isr_result(self, partition: Partition, result: AlterIsrResult) -> None:
        """The controller's answer: the new ISR, or an error (a LeaderAndIsr is coming, or
        the controller was unreachable and the leader proposes again)."""
        if self.partitions.get((partition.topic, partition.index)) is not partition:
            return  # stopped or deleted while the request was out
        hw, before = partition.high_watermark, len(partition.isr)
        partition.on_alter_isr_result(result)
        if len(partition.isr) < before:  # Kafka: IsrShrinksPerSec, IsrExpandsPerSec
            self.isr_shrinks += 1
        elif len(partition.isr) > before:
            self.isr_expands += 1
        if result.error == ErrorCode.NO_ERROR:
            logger.info("%r: ISR now %s", partition, partition.isr)
        else:
            logger.info("%r: ISR change refused: %s", partition, result.error.name)
        if partition.high_watermark > hw:
            self._on_high_watermark((partition.topic, partition.index))

    def shrink_isrs(self) -> None:
        """Kafka's isr-expiration task: drop followers that lag (ISR-3)."""
        for partition in list(self.partitions.values()):
            partition.maybe_shrink_isr()
            self.propagate_isr_change(partition)

    # ------------------------------------------------------------------ log directories
    def describe_log_dirs(
        self, wanted: Callable[[TopicPartition], bool]
    ) -> list[tuple[str, dict[TopicPartition, tuple[int, int]] | None]]:
        """Per log dir (in `log.dirs` order), its wanted partitions with their size in
        bytes and offset lag (Kafka: `ReplicaManager.describeLogDirs`, BROKER-52): the lag
        is how far the high watermark is past the log end offset, never negative, as
        Kafka's `getLogEndOffsetLag` computes it for a current (not future) log. An
        offline directory has None (DUR-16)."""
        result: list[tuple[str, dict[TopicPartition, tuple[int, int]] | None]] = []
        for log_dir in self.log_manager.log_dirs:
            if log_dir in self.log_manager.offline_dirs:
                result.append((log_dir, None))
                continue
            found = {}
            for tp, log in sorted(self.log_manager.logs_in(log_dir).items()):
                if wanted(tp):
                    hw = self.high_watermark(*tp)
                    lag = 0 if hw is None else max(hw - log.log_end_offset, 0)
                    found[tp] = (log.size_in_bytes, lag)
            result.append((log_dir, found))
        return result

    # ------------------------------------------------------------------ housekeeping
    def all_partitions(self) -> list[Partition]:
        return list(self.partitions.values())

    def checkpoint_high_watermarks(self) -> None:
        """Write `replication-offset-checkpoint` (REPL-10) in every online log dir; one that
        fails goes offline (DUR-16)."""
        for log_dir in self.log_manager.online_dirs:
            partitions = [p for p in self.all_partitions() if p.log.parent_dir == log_dir]
            try:
                write_high_watermarks(self._hw_checkpoint(log_dir), partitions)
            except OSError as err:
                self.log_manager.handle_io_error(log_dir, "writing the HW checkpoint", err)


class DelayedProduce(DelayedOperation):
    """An acks=all append waiting for the ISR (Kafka: `DelayedProduce`, REPL-4, REPL-11).

    `required` holds, per partition appended to, the offset the HW must reach: one past
    its batch. A partition is done when `check_enough_replicas_reach_offset` says so, with
    its error in `errors` if it failed (NOT_ENOUGH_REPLICAS_AFTER_APPEND, not the leader any
    more); the operation completes when every partition is done, or at its timeout with the
    partitions still `waiting`, which were never acknowledged (REQUEST_TIMED_OUT).
    `on_complete` answers: the produce handler's subclass (server/handlers/produce.py)
    builds a Produce response, the simulator's sends its own message."""

    def __init__(
        self, replica_manager: ReplicaManager, timeout_ms: int, required: dict[TopicPartition, int]
    ) -> None:
        super().__init__(timeout_ms)
        self.replica_manager = replica_manager
        self.errors: dict[TopicPartition, ErrorCode] = {}
        self.waiting = {tp: offset for tp, offset in required.items() if not self._done(tp, offset)}

    def _done(self, tp: TopicPartition, required_offset: int) -> bool:
        done, error = self.replica_manager.check_enough_replicas_reach_offset(tp, required_offset)
        if done and error != ErrorCode.NO_ERROR:
            self.errors[tp] = error
        return done

    def try_complete(self) -> bool:
        for tp, required_offset in list(self.waiting.items()):
            if self._done(tp, required_offset):
                del self.waiting[tp]
        return self.force_complete() if not self.waiting else False
