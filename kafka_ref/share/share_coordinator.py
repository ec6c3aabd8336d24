"""The share coordinator: where share-partition state outlives its leader (KIP-932).

The leader of a partition keeps, for each share group reading it, which records are
acquired, acknowledged or archived (the share-partition). That state must survive the
leader, so the leader hands it, through a `Persister`, to the **share coordinator**: a
coordinator like the group and the transaction coordinators, whose log is the internal topic
`__share_group_state`. Each share-partition (`SharePartitionKey`: group, topic id,
partition) lives in the partition of that topic its key `group:topicId:partition` hashes to
(`abs(key.hashCode) % share.coordinator.state.topic.num.partitions`, Kafka
`ShareCoordinatorService.partitionFor`), and the broker leading that partition is its
coordinator (FindCoordinator key type 2).

Per key the coordinator holds (Kafka `ShareCoordinatorShard`, `ShareGroupOffset`):

* the **state epoch**, set by InitializeShareGroupState, which the share group coordinator
  bumps when it resets a share-partition (its start offset altered, its state deleted);
* the **leader epoch** of the partition leader that last wrote or read it: a stale leader
  is fenced (FENCED_LEADER_EPOCH), as a stale state epoch is (FENCED_STATE_EPOCH);
* the **share-partition start offset** (SPSO), below which every record is done;
* the **state batches** above the SPSO (state_batches.py).

The five state RPCs (APIs 83-87) are its operations:

* **InitializeShareGroupState** writes a fresh ShareSnapshot (state epoch, SPSO, no
  batches) under the next snapshot epoch;
* **WriteShareGroupState** folds the leader's changed batches into the state, cut at the
  new SPSO: a ShareUpdate with the delta, or, every
  `share.coordinator.snapshot.update.records.per.snapshot` (500) updates of a key, a full
  ShareSnapshot, so that loading never replays more than that many updates per key;
* **ReadShareGroupState** answers the state; a read under a newer leader epoch records it
  (a ShareUpdate without batches), fencing the old leader's later writes;
* **ReadShareGroupStateSummary** answers the SPSO and epochs, without the batches;
* **DeleteShareGroupState** writes a tombstone on the key's ShareSnapshot key.

A write is answered only once its record is committed (acks=all on `__share_group_state`,
server/share_coordinator_adapter.py); the state changes by **replaying** that record, the
same code that loads the partition when this broker becomes its leader, so a coordinator
rebuilt from the log holds exactly what the one that wrote it held (SHARE-73). The
operations of one partition run one at a time, each seeing the state its predecessors
committed (Kafka's runtime runs a shard's writes in order on one thread).

Kafka 4.4's refusals (ShareCoordinatorShard's `maybeGet...Error`): INVALID_REQUEST for a
negative partition, leader epoch or state epoch, and for a read or write of a
share-partition never initialized; FENCED_LEADER_EPOCH and FENCED_STATE_EPOCH for an epoch
below the one stored; UNKNOWN_TOPIC_OR_PARTITION for a partition the cluster does not have;
NOT_COORDINATOR when this broker does not lead the key's partition of `__share_group_state`.

Rules: SHARE-70, SHARE-73..SHARE-77.
"""

from __future__ import annotations

import dataclasses
import logging
import uuid
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from kafka_ref.clock import Clock
from kafka_ref.errors import ErrorCode
from kafka_ref.group.group_metadata_manager import java_abs, java_string_hashcode
from kafka_ref.record.batch import build_batch
from kafka_ref.record.record import Record
from kafka_ref.share import share_coordinator_records as rec
from kafka_ref.share.persister import SharePartitionKey, ShareState, ShareStateSummary, StateBatch
from kafka_ref.share.share_coordinator_records import ShareGroupOffset, ShareUpdate
from kafka_ref.share.state_batches import combine

logger = logging.getLogger("kafka_ref.share.share_coordinator")

SHARE_GROUP_STATE_TOPIC = "__share_group_state"  # Kafka: Topic.SHARE_GROUP_STATE_TOPIC_NAME

Records = Iterable[tuple[bytes | None, bytes | None]]
Append = Callable[[int, bytes, Callable[[ErrorCode], None]], None]
Result = tuple[ErrorCode, str | None]  # an answer of Initialize, Write, Delete
PartitionCount = Callable[[uuid.UUID], int | None]  # a topic id's partitions, None: unknown

NEGATIVE_PARTITION_ID = "The partition id cannot be a negative number."
NEGATIVE_LEADER_EPOCH = "The leader epoch cannot be a negative number."
NEGATIVE_STATE_EPOCH = "The state epoch cannot be a negative number."
WRITE_UNINITIALIZED = "Write operation on uninitialized share partition not allowed."
READ_UNINITIALIZED = "Read operation on uninitialized share partition not allowed."
OK: Result = (ErrorCode.NO_ERROR, None)
# Kafka's `Errors.message()` of the refusals that carry no message of their own: Kafka 4.4
# answers each refusal with one
KAFKA_MESSAGES = {
    ErrorCode.FENCED_LEADER_EPOCH: (
        "The leader epoch in the request is older than the epoch on the broker."
    ),
    ErrorCode.FENCED_STATE_EPOCH: (
        "The coordinator rejected the request because the state epoch did not match."
    ),
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: "This server does not host this topic-partition.",
}


def refused(error: ErrorCode) -> Result:
    return error, KAFKA_MESSAGES[error]


@dataclass(frozen=True)
class ShareCoordinatorConfig:
    """The share coordinator's settings (Kafka `ShareCoordinatorConfig`)."""

    num_partitions: int = 50  # share.coordinator.state.topic.num.partitions
    snapshot_update_records_per_snapshot: int = 500


def partition_for(coordinator_key: str, num_partitions: int) -> int:
    """Kafka `ShareCoordinatorService.partitionFor`: `Utils.abs(key.hashCode) % n` of the
    FindCoordinator key `group:topicId:partition` (SHARE-70)."""
    return java_abs(java_string_hashcode(coordinator_key)) % num_partitions


def delivery_complete_count(current: ShareGroupOffset, start_offset: int, count: int) -> int:
    """The count of a write (KIP-1226): a write at the same SPSO keeps the larger count, one
    behind it the current count, one ahead of it its own (Kafka `generateShareStateRecord`)."""
    if start_offset == current.start_offset:
        return max(count, current.delivery_complete_count)
    return current.delivery_complete_count if start_offset < current.start_offset else count


def apply_update(current: ShareGroupOffset, update: ShareUpdate) -> ShareGroupOffset:
    """The state after `update` (Kafka `ShareCoordinatorShard.merge`): the SPSO never moves
    back (-1: unchanged), the batches are combined and cut at it (SHARE-72)."""
    start = max(current.start_offset, update.start_offset)
    return dataclasses.replace(
        current,
        leader_epoch=update.leader_epoch if update.leader_epoch != -1 else current.leader_epoch,
        start_offset=start,
        delivery_complete_count=delivery_complete_count(
            current, update.start_offset, update.delivery_complete_count
        ),
        batches=combine(current.batches, update.batches, start),
    )


class ShareStateShard:
    """The share-partitions of one `__share_group_state` partition (Kafka
    `ShareCoordinatorShard`). Its operations decide and return the records to write; only
    `replay` changes the state, for a write once its record is committed, at load for
    every record of the log."""

    def __init__(self, config: ShareCoordinatorConfig, partition_count: PartitionCount) -> None:
        self.config = config
        self.partition_count = partition_count
        self.states: dict[SharePartitionKey, ShareGroupOffset] = {}
        self.leader_epochs: dict[SharePartitionKey, int] = {}  # the highest seen, for fencing
        self.state_epochs: dict[SharePartitionKey, int] = {}
        self.update_counts: dict[SharePartitionKey, int] = {}  # ShareUpdates since a snapshot

    # ------------------------------------------------------------------ replay
    def replay(self, key: bytes | memoryview, value: bytes | memoryview | None) -> None:
        """Apply one record of the log (Kafka `ShareCoordinatorShard.replay`)."""
        kind, spk = rec.decode_key(key)
        if kind == rec.SHARE_SNAPSHOT and value is None:  # the share-partition was deleted
            for table in (self.states, self.leader_epochs, self.state_epochs, self.update_counts):
                table.pop(spk, None)
        elif kind == rec.SHARE_SNAPSHOT:
            state = rec.decode_snapshot(value)
            self.states[spk] = state
            self._raise_epochs(spk, state.leader_epoch, state.state_epoch)
            self.update_counts[spk] = 0
        elif kind == rec.SHARE_UPDATE and value is not None and spk in self.states:
            update = rec.decode_update(value)  # (never without a snapshot before it)
            self.states[spk] = apply_update(self.states[spk], update)
            self._raise_epochs(spk, update.leader_epoch, -1)
            self.update_counts[spk] = self.update_counts.get(spk, 0) + 1

    def _raise_epochs(self, key: SharePartitionKey, leader_epoch: int, state_epoch: int) -> None:
        self.leader_epochs[key] = max(self.leader_epochs.get(key, leader_epoch), leader_epoch)
        if state_epoch != -1:
            self.state_epochs[key] = max(self.state_epochs.get(key, state_epoch), state_epoch)

    # ------------------------------------------------------------------ the operations
    def _unknown_partition(self, key: SharePartitionKey) -> bool:
        count = self.partition_count(key.topic_id)
        return count is None or key.partition >= count

    def initialize(
        self, key: SharePartitionKey, state_epoch: int, start_offset: int, now_ms: int
    ) -> tuple[list[rec.Record], Result]:
        """InitializeShareGroupState: a fresh snapshot (Kafka `initializeState`)."""
        if key.partition < 0:
            return [], (ErrorCode.INVALID_REQUEST, NEGATIVE_PARTITION_ID)
        if state_epoch < 0:
            return [], (ErrorCode.INVALID_REQUEST, NEGATIVE_STATE_EPOCH)
        if self.state_epochs.get(key, state_epoch) > state_epoch:
            return [], refused(ErrorCode.FENCED_STATE_EPOCH)
        if self._unknown_partition(key):
            return [], refused(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        current = self.states.get(key)
        state = ShareGroupOffset(
            snapshot_epoch=current.snapshot_epoch + 1 if current is not None else 0,
            state_epoch=state_epoch,
            # Kafka writes 0 and keeps the fence in memory only; the highest leader epoch
            # seen goes into the snapshot, so a load from this snapshot on still fences
            leader_epoch=self.leader_epochs.get(key, 0),
            start_offset=start_offset,
            delivery_complete_count=-1 if start_offset == -1 else 0,
            create_timestamp=now_ms,
            write_timestamp=now_ms,
        )
        return [rec.snapshot_record(key, state)], OK

    def write(
        self,
        key: SharePartitionKey,
        state_epoch: int,
        leader_epoch: int,
        start_offset: int,
        batches: tuple[StateBatch, ...],
        now_ms: int,
        delivery_complete_count: int = -1,
    ) -> tuple[list[rec.Record], Result]:
        """WriteShareGroupState: a ShareUpdate, or every `snapshot_update_records_per_snapshot`
        updates a ShareSnapshot (Kafka `writeState`, `generateShareStateRecord`)."""
        if key.partition < 0:
            return [], (ErrorCode.INVALID_REQUEST, NEGATIVE_PARTITION_ID)
        if leader_epoch < 0:
            return [], (ErrorCode.INVALID_REQUEST, NEGATIVE_LEADER_EPOCH)
        if state_epoch < 0:
            return [], (ErrorCode.INVALID_REQUEST, NEGATIVE_STATE_EPOCH)
        current = self.states.get(key)
        if current is None:
            return [], (ErrorCode.INVALID_REQUEST, WRITE_UNINITIALIZED)
        if self.leader_epochs.get(key, leader_epoch) > leader_epoch:
            return [], refused(ErrorCode.FENCED_LEADER_EPOCH)
        if self.state_epochs.get(key, state_epoch) > state_epoch:
            return [], refused(ErrorCode.FENCED_STATE_EPOCH)
        if self._unknown_partition(key):
            return [], refused(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        record = self._state_record(
            key, current, leader_epoch, start_offset, batches, now_ms, delivery_complete_count
        )
        return [record], OK

    def _state_record(
        self,
        key: SharePartitionKey,
        current: ShareGroupOffset,
        leader_epoch: int,
        start_offset: int,
        batches: tuple[StateBatch, ...],
        now_ms: int,
        delivery_complete_count: int,
    ) -> rec.Record:
        update = ShareUpdate(
            snapshot_epoch=current.snapshot_epoch,
            leader_epoch=leader_epoch,
            start_offset=start_offset,
            delivery_complete_count=delivery_complete_count,
            batches=combine((), batches, start_offset),
        )
        if self.update_counts.get(key, 0) < self.config.snapshot_update_records_per_snapshot:
            return rec.update_record(key, update)
        merged = apply_update(current, update)  # the same state, as one snapshot (SHARE-74)
        snapshot = dataclasses.replace(
            merged,
            snapshot_epoch=current.snapshot_epoch + 1,
            create_timestamp=now_ms,
            write_timestamp=now_ms,
        )
        return rec.snapshot_record(key, snapshot)

    def read(
        self, key: SharePartitionKey, leader_epoch: int, now_ms: int
    ) -> tuple[list[rec.Record], ShareState]:
        """ReadShareGroupState (Kafka `readStateAndMaybeUpdateLeaderEpoch`): a newer leader
        epoch is recorded before the answer, fencing the previous leader (SHARE-75)."""
        if key.partition < 0:
            return [], _read_error(ErrorCode.INVALID_REQUEST, NEGATIVE_PARTITION_ID)
        if leader_epoch < 0:
            return [], _read_error(ErrorCode.INVALID_REQUEST, NEGATIVE_LEADER_EPOCH)
        current = self.states.get(key)
        if current is None:
            return [], _read_error(ErrorCode.INVALID_REQUEST, READ_UNINITIALIZED)
        if self.leader_epochs.get(key, leader_epoch) > leader_epoch:
            return [], _read_error(*refused(ErrorCode.FENCED_LEADER_EPOCH))
        if self._unknown_partition(key):
            return [], _read_error(*refused(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
        state = ShareState(
            state_epoch=current.state_epoch,
            start_offset=current.start_offset,
            leader_epoch=leader_epoch,
            batches=current.batches,
        )
        if self.leader_epochs.get(key) == leader_epoch:
            return [], state
        record = self._state_record(key, current, leader_epoch, -1, (), now_ms, -1)
        return [record], state

    def read_summary(self, key: SharePartitionKey) -> ShareStateSummary:
        """ReadShareGroupStateSummary (Kafka `readStateSummary`): the committed state; a
        share-partition never initialized answers an SPSO of -1."""
        if key.partition < 0:
            return ShareStateSummary(
                error=ErrorCode.INVALID_REQUEST, error_message=NEGATIVE_PARTITION_ID
            )
        if self._unknown_partition(key):
            error, message = refused(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
            return ShareStateSummary(error=error, error_message=message)
        current = self.states.get(key)
        if current is None:
            return ShareStateSummary(state_epoch=0, start_offset=-1, leader_epoch=0)
        return ShareStateSummary(
            state_epoch=current.state_epoch,
            start_offset=current.start_offset,
            leader_epoch=current.leader_epoch,
            delivery_complete_count=current.delivery_complete_count,
        )

    def delete(self, key: SharePartitionKey) -> tuple[list[rec.Record], Result]:
        """DeleteShareGroupState: a tombstone; nothing to write for an absent key (Kafka
        `deleteState`)."""
        if key.partition < 0:
            return [], (ErrorCode.INVALID_REQUEST, NEGATIVE_PARTITION_ID)
        if self._unknown_partition(key):
            return [], refused(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        if key not in self.states:
            return [], OK
        return [rec.tombstone(key)], OK


def _read_error(error: ErrorCode, message: str | None) -> ShareState:
    return ShareState(error=error, error_message=message)


def append_error(error: ErrorCode) -> ErrorCode:
    """A failed append of the coordinator's record, as its client hears it (Kafka
    `CoordinatorRuntime`'s translation): retriable coordinator errors, so the persister
    finds the coordinator again and retries."""
    if error in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.KAFKA_STORAGE_ERROR):
        return ErrorCode.NOT_COORDINATOR
    if error in (
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.NOT_ENOUGH_REPLICAS,
        ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
        ErrorCode.REQUEST_TIMED_OUT,
    ):
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    return ErrorCode.UNKNOWN_SERVER_ERROR


Operation = Callable[[ShareStateShard], tuple[list[rec.Record], object]]


@dataclass
class _Pending:
    """An operation waiting for its turn on its partition, with where its answer goes."""

    operation: Operation
    answer: Callable[[object], None]
    fail: Callable[[ErrorCode], None]


class ShareCoordinator:
    """The shards of the `__share_group_state` partitions this broker leads (Kafka
    `ShareCoordinatorService` over its `CoordinatorRuntime`)."""

    def __init__(
        self,
        config: ShareCoordinatorConfig,
        clock: Clock,
        append: Append,
        partition_count: PartitionCount,
    ) -> None:
        self.config, self.clock, self._append = config, clock, append
        self.partition_count = partition_count
        self.shards: dict[int, ShareStateShard] = {}
        self._queues: dict[int, deque[_Pending]] = {}  # the head is being written

    def partition_for(self, key: SharePartitionKey) -> int:
        return partition_for(key.coordinator_key, self.config.num_partitions)

    # ------------------------------------------------------------------ leadership
    def on_elected(self, partition: int, records: Records) -> None:
        """Load a partition this broker now leads: replay its records in offset order
        (SHARE-73)."""
        shard = ShareStateShard(self.config, self.partition_count)
        for key, value in records:
            if key is not None:
                shard.replay(key, value)
        self.shards[partition] = shard
        self._queues[partition] = deque()
        count = len(shard.states)
        logger.info("loaded %s-%d: %d share-partitions", SHARE_GROUP_STATE_TOPIC, partition, count)

    def on_resigned(self, partition: int) -> None:
        """Forget a partition this broker no longer leads; what waits for it hears
        NOT_COORDINATOR (the write in flight, when its append completes)."""
        self.shards.pop(partition, None)
        queue = self._queues.pop(partition, deque())
        for pending in list(queue)[1:]:
            pending.fail(ErrorCode.NOT_COORDINATOR)
        while len(queue) > 1:
            queue.pop()

    def shutdown(self) -> None:
        for partition in list(self.shards):
            self.on_resigned(partition)

    # ------------------------------------------------------------------ the operations
    def initialize(
        self,
        key: SharePartitionKey,
        state_epoch: int,
        start_offset: int,
        callback: Callable[[Result], None],
    ) -> None:
        self._submit(
            key,
            lambda shard: shard.initialize(key, state_epoch, start_offset, self._now()),
            callback,
            lambda error: callback((error, None)),
        )

    def write_state(
        self,
        key: SharePartitionKey,
        state_epoch: int,
        leader_epoch: int,
        start_offset: int,
        batches: tuple[StateBatch, ...],
        callback: Callable[[Result], None],
        delivery_complete_count: int = -1,
    ) -> None:
        def operation(shard: ShareStateShard) -> tuple[list[rec.Record], Result]:
            return shard.write(
                key,
                state_epoch,
                leader_epoch,
                start_offset,
                batches,
                self._now(),
                delivery_complete_count,
            )

        self._submit(key, operation, callback, lambda error: callback((error, None)))

    def read_state(
        self, key: SharePartitionKey, leader_epoch: int, callback: Callable[[ShareState], None]
    ) -> None:
        self._submit(
            key,
            lambda shard: shard.read(key, leader_epoch, self._now()),
            callback,
            lambda error: callback(ShareState(error=error)),
        )

    def delete_state(self, key: SharePartitionKey, callback: Callable[[Result], None]) -> None:
        self._submit(
            key, lambda shard: shard.delete(key), callback, lambda error: callback((error, None))
        )

    def read_summary(self, key: SharePartitionKey) -> ShareStateSummary:
        """The committed state, at once (Kafka: a read operation, not a write)."""
        shard = self.shards.get(self.partition_for(key))
        if shard is None:
            return ShareStateSummary(error=ErrorCode.NOT_COORDINATOR)
        return shard.read_summary(key)

    def _now(self) -> int:
        return self.clock.milliseconds()

    def _submit(
        self,
        key: SharePartitionKey,
        operation: Operation,
        answer: Callable,
        fail: Callable[[ErrorCode], None],
    ) -> None:
        partition = self.partition_for(key)
        queue = self._queues.get(partition)
        if queue is None:  # not this broker's partition (or not loaded): ask FindCoordinator
            fail(ErrorCode.NOT_COORDINATOR)
            return
        queue.append(_Pending(operation, answer, fail))
        if len(queue) == 1:
            self._run(partition, queue)

    def _run(self, partition: int, queue: deque[_Pending]) -> None:
        """Run the partition's operations in order; one that writes holds the others back
        until its record is committed (or failed)."""
        while queue and self._queues.get(partition) is queue:
            pending = queue[0]
            shard = self.shards[partition]
            records, result = pending.operation(shard)
            if not records:
                queue.popleft()
                pending.answer(result)
                continue
            self._write(partition, queue, shard, pending, records, result)
            return

    def _write(
        self,
        partition: int,
        queue: deque[_Pending],
        shard: ShareStateShard,
        pending: _Pending,
        records: list[rec.Record],
        result: object,
    ) -> None:
        def done(error: ErrorCode) -> None:
            if queue and queue[0] is pending:
                queue.popleft()
            if self.shards.get(partition) is not shard:  # resigned meanwhile
                pending.fail(ErrorCode.NOT_COORDINATOR)
                return
            if error != ErrorCode.NO_ERROR:
                pending.fail(append_error(error))
            else:
                for key, value in records:  # committed: the state moves (SHARE-73)
                    shard.replay(key, value)
                pending.answer(result)
            self._run(partition, queue)

        now = self._now()
        batch = build_batch([Record(k, v, timestamp=now) for k, v in records])
        self._append(partition, batch, done)
