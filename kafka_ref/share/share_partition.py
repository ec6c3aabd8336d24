"""The share-partition: one share group's view of one topic partition, a queue on a log (KIP-932).

A consumer group gives each partition to one member and keeps one number per partition, the
committed offset. A share group lets all its members fetch the same partition at once, so
the leader of the partition must know, record by record, who holds what. That knowledge is
the share-partition (Kafka: `kafka.server.share.SharePartition`), one per (group, topic
partition) on the partition's leader:

* the **share-partition start offset (SPSO)**: every record below it is done;
* the **share-partition end offset (SPEO)**: no record at or above it was ever delivered;
* between them the **in-flight records**, each in one state with a **delivery count**:

      AVAILABLE    may be handed to a member (again)
      ACQUIRED     handed to one member, under an acquisition lock with a deadline
      ACKNOWLEDGED the member processed it (ACCEPT): done
      ARCHIVED     rejected, delivered too often, aborted or not a record (GAP): done

A fetch **acquires** available records for one member: each acquisition raises the record's
delivery count and locks it for `group.share.record.lock.duration.ms`. The member then
**acknowledges** what it holds: ACCEPT (1) -> ACKNOWLEDGED, RELEASE (2) -> AVAILABLE again,
REJECT (3) -> ARCHIVED, GAP (0) for offsets inside a fetched batch that are no records
(compacted away, control records) -> ARCHIVED; RENEW (4, ShareFetch/ShareAcknowledge v2)
extends the lock. A record whose lock expires, or whose member leaves, becomes AVAILABLE
again, unless its delivery count reached `group.share.delivery.count.limit`: then it is
ARCHIVED, so a poison record cannot circle forever. The SPSO moves up over every prefix of
done records; the records ahead of the SPEO are acquired only while the in-flight window
(SPEO - SPSO) is below `group.share.partition.max.record.locks`.

This module is a pure state machine driven by a `Clock`: no I/O, no asyncio. The broker
glue (`share_partition_manager.py`) reads the log and hands it the fetched batches, and
writes the `StateBatch`es it produces to the `Persister` (`persister.py`). An offset between
the SPSO and the SPEO that has no in-flight entry is no record (the log skipped it: a
compacted batch); the SPSO passes it.

Three rules of the state machine are small pure functions it asks, each a seam that lab 11
hands to students (kafka_ref/seams.py): `acknowledge_record`, what one acknowledgement does
to one record (the holder's check, the new state, the delivery count, RENEW's lock);
`release_on_lock_timeout`, what the lock timer does to a record a member holds (Kafka's
`AcquisitionLockTimerTask`); and `next_start_offset`, where the SPSO moves over the done
records (Kafka's `findLastOffsetAcknowledged`). They see an in-flight record as an
`InFlightState` (a NamedTuple of Kafka's `InFlightState` fields) and answer with plain
values; the share-partition checks the acknowledgement batches, applies their answers all
or nothing, and keeps the records, the locks and the persisted changes.

Rules: SHARE-1 .. SHARE-12, SHARE-51.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

from kafka_ref.clock import Clock
from kafka_ref.errors import ErrorCode
from kafka_ref.seams import seam
from kafka_ref.share.persister import RecordState, ShareState, StateBatch

DONE = frozenset({RecordState.ACKNOWLEDGED, RecordState.ARCHIVED})


class AcknowledgeType(enum.IntEnum):
    """What a member says about a record it holds (Kafka `AcknowledgeType`)."""

    GAP = 0  # not a record: a compacted offset or a control record inside an acquired batch
    ACCEPT = 1
    RELEASE = 2
    REJECT = 3
    RENEW = 4  # v2 (KIP-1222): keep the lock for another lock duration


class AcquireMode(enum.IntEnum):
    """ShareFetch v2's ShareAcquireMode (KIP-1206)."""

    BATCH_OPTIMIZED = 0  # MaxRecords may be exceeded to finish a fetched batch
    RECORD_LIMIT = 1  # never more than MaxRecords


@dataclass(frozen=True)
class SharePartitionConfig:
    """The limits a share-partition runs under (Kafka's `group.share.*` broker configs; the
    group configs `share.record.lock.duration.ms`... override them per group)."""

    delivery_count_limit: int
    record_lock_duration_ms: int
    max_record_locks: int

    def __post_init__(self) -> None:
        assert self.delivery_count_limit >= 1, self
        assert self.record_lock_duration_ms > 0, self
        assert self.max_record_locks >= 1, self


@dataclass(frozen=True)
class FetchedBatch:
    """The offsets one record batch read from the log spans (inclusive). `aborted`: a batch
    of an aborted transaction, under read_committed (it is archived, never delivered)."""

    first_offset: int
    last_offset: int
    aborted: bool = False


@dataclass(frozen=True)
class AcquiredRecords:
    """A run of offsets handed to a member with one delivery count (ShareFetch's
    AcquiredRecords: FirstOffset, LastOffset, DeliveryCount)."""

    first_offset: int
    last_offset: int
    delivery_count: int


@dataclass(frozen=True)
class AcknowledgementBatch:
    """ShareFetch's and ShareAcknowledge's AcknowledgementBatch: one type for the whole run,
    or one type per offset."""

    first_offset: int
    last_offset: int
    acknowledge_types: tuple[int, ...]


class InFlightState(NamedTuple):
    """One in-flight record as the share-partition's rules see it (Kafka `InFlightState`):
    its state, its delivery count (how many times it was acquired), and while ACQUIRED its
    holder and the deadline of its acquisition lock (None otherwise)."""

    state: RecordState
    delivery_count: int
    member_id: str | None = None
    lock_deadline_ms: int | None = None


class Transition(NamedTuple):
    """What one acknowledgement does to one record: refused (`error` is not NO_ERROR: the
    whole acknowledgement is, and nothing changes), or the record's state and delivery
    count after it, and whether its acquisition lock starts again (RENEW)."""

    error: ErrorCode
    state: RecordState
    delivery_count: int
    renew_lock: bool = False


def _released(delivery_count: int, delivery_count_limit: int) -> RecordState:
    """A record given back: AVAILABLE again, or ARCHIVED once it has been delivered
    `group.share.delivery.count.limit` times (SHARE-5)."""
    if delivery_count >= delivery_count_limit:
        return RecordState.ARCHIVED
    return RecordState.AVAILABLE


@seam
def acknowledge_record(
    record: InFlightState,
    member_id: str,
    ack_type: AcknowledgeType,
    delivery_count_limit: int,
) -> Transition:
    """What `member_id`'s acknowledgement `ack_type` does to `record` (SHARE-4, SHARE-5,
    SHARE-12; Kafka `SharePartition.acknowledgePerOffsetBatchRecords` and
    `InFlightState.startStateTransition`).

    Only the holder acknowledges: a record that is not ACQUIRED by `member_id` (available,
    done, or held by another member) refuses it with INVALID_RECORD_STATE. The holder's
    ACCEPT makes it ACKNOWLEDGED; REJECT and GAP make it ARCHIVED; RELEASE gives it back,
    AVAILABLE unless it has been delivered `delivery_count_limit` times (then ARCHIVED);
    RENEW keeps it ACQUIRED and starts its lock again. The delivery count is the
    acquisitions': an acknowledgement never changes it."""
    if record.state is not RecordState.ACQUIRED or record.member_id != member_id:
        return Transition(ErrorCode.INVALID_RECORD_STATE, record.state, record.delivery_count)
    count = record.delivery_count
    if ack_type is AcknowledgeType.ACCEPT:
        return Transition(ErrorCode.NO_ERROR, RecordState.ACKNOWLEDGED, count)
    if ack_type is AcknowledgeType.RELEASE:
        return Transition(ErrorCode.NO_ERROR, _released(count, delivery_count_limit), count)
    if ack_type is AcknowledgeType.RENEW:
        return Transition(ErrorCode.NO_ERROR, RecordState.ACQUIRED, count, renew_lock=True)
    return Transition(ErrorCode.NO_ERROR, RecordState.ARCHIVED, count)  # REJECT, GAP


@seam
def release_on_lock_timeout(
    record: InFlightState, now_ms: int, delivery_count_limit: int
) -> RecordState:
    """The state of `record`, an ACQUIRED record, when the acquisition lock timer looks at
    it at `now_ms` (SHARE-6, SHARE-5; Kafka `AcquisitionLockTimerTask`,
    `SharePartition.releaseAcquisitionLockOnTimeout`).

    A lock holds until its deadline: before it the record stays ACQUIRED. At the deadline or
    after, the record is released as by RELEASE: AVAILABLE for another delivery, unless it
    has been delivered `delivery_count_limit` times, then ARCHIVED."""
    if record.lock_deadline_ms is None or now_ms < record.lock_deadline_ms:
        return record.state
    return _released(record.delivery_count, delivery_count_limit)


@seam
def next_start_offset(start_offset: int, end_offset: int, states: Mapping[int, RecordState]) -> int:
    """Where the SPSO moves after a change (SHARE-7; Kafka
    `SharePartition.findLastOffsetAcknowledged` and `maybeUpdateCachedStateAndOffsets`).

    `start_offset` is the SPSO, `end_offset` the SPEO, `states` the state of each in-flight
    record by offset. The SPSO passes every done record (ACKNOWLEDGED or ARCHIVED) and every
    offset between the two that has no record (compacted away: nothing waits on it), and
    stops at the first AVAILABLE or ACQUIRED record, or at the SPEO."""
    offset = start_offset
    while offset < end_offset:
        state = states.get(offset)
        if state is not None and state not in DONE:
            break
        offset += 1
    return offset


class _States(Mapping[int, RecordState]):
    """The in-flight records' states by offset, read-only and without a copy."""

    def __init__(self, records: dict[int, InFlightRecord]) -> None:
        self._records = records

    def __getitem__(self, offset: int) -> RecordState:
        return self._records[offset].state

    def __iter__(self) -> Iterator[int]:
        return iter(sorted(self._records))

    def __len__(self) -> int:
        return len(self._records)


@dataclass
class InFlightRecord:
    """One record between the SPSO and the SPEO."""

    state: RecordState
    delivery_count: int
    member_id: str | None = None  # the holder, while ACQUIRED
    lock_deadline_ms: int | None = None  # when the acquisition lock expires, while ACQUIRED

    def __post_init__(self) -> None:
        held = self.state is RecordState.ACQUIRED
        assert held == (self.member_id is not None) == (self.lock_deadline_ms is not None), self

    def view(self) -> InFlightState:
        """The record as the rules see it (a snapshot)."""
        return InFlightState(self.state, self.delivery_count, self.member_id, self.lock_deadline_ms)


@dataclass
class SharePartition:
    """The in-flight records of one share-partition (Kafka `SharePartition`)."""

    config: SharePartitionConfig
    clock: Clock
    start_offset: int  # the SPSO
    end_offset: int  # the SPEO: one past the last offset ever delivered
    state_epoch: int = 0
    leader_epoch: int = -1
    records: dict[int, InFlightRecord] = field(default_factory=dict)
    # Offsets changed since the last `take_changes`, and whether the SPSO moved.
    _dirty: set[int] = field(default_factory=set)
    _start_moved: bool = False

    @classmethod
    def from_state(
        cls,
        state: ShareState,
        reset_offset: int,
        config: SharePartitionConfig,
        clock: Clock,
    ) -> SharePartition:
        """Rebuild a share-partition from what the persister read back. A state never
        started (SPSO -1) starts at `reset_offset`, which `share.auto.offset.reset` chose.
        Written batches hold no acquisitions (their locks died with the old leader)."""
        start = state.start_offset if state.start_offset >= 0 else reset_offset
        assert start >= 0, "an SPSO or an offset to reset to"
        partition = cls(config, clock, start, start, state.state_epoch, state.leader_epoch)
        for batch in sorted(state.batches, key=lambda b: b.first_offset):
            for offset in range(max(batch.first_offset, start), batch.last_offset + 1):
                partition.records[offset] = InFlightRecord(
                    batch.delivery_state, batch.delivery_count
                )
                partition.end_offset = offset + 1
        partition._advance_start()
        partition._dirty.clear()
        partition._start_moved = state.start_offset < 0  # the reset offset must be written
        return partition

    # -- fetching ---------------------------------------------------------------------

    def next_fetch_offset(self) -> int:
        """Where the next read of the log starts: the first AVAILABLE record, else the SPEO
        (Kafka `SharePartition.nextFetchOffset`)."""
        for offset in sorted(self.records):
            if self.records[offset].state is RecordState.AVAILABLE:
                return offset
        return self.end_offset

    def can_acquire(self) -> bool:
        """Is there anything a fetch could acquire? An AVAILABLE record, or room in the
        in-flight window for records past the SPEO (Kafka `canAcquireRecords`)."""
        if self.next_fetch_offset() < self.end_offset:
            return True
        return self.end_offset - self.start_offset < self.config.max_record_locks

    def acquire(
        self,
        member_id: str,
        batches: Iterable[FetchedBatch],
        max_records: int,
        bound: int,
        mode: AcquireMode = AcquireMode.BATCH_OPTIMIZED,
    ) -> list[AcquiredRecords]:
        """Acquire for `member_id` the AVAILABLE records of the fetched `batches`, below
        `bound` (the high watermark, or the LSO under read_committed), at most `max_records`
        of them (up to the end of a started batch in BATCH_OPTIMIZED mode). Each acquired
        record's delivery count goes up by one and it is locked until now + the lock
        duration. Records of aborted batches are archived, not acquired."""
        assert max_records > 0, max_records
        deadline = self.clock.milliseconds() + self.config.record_lock_duration_ms
        acquired: list[int] = []
        for batch in batches:
            if len(acquired) >= max_records:
                break
            for offset in range(max(batch.first_offset, self.start_offset), batch.last_offset + 1):
                if offset >= bound:
                    break
                if mode is AcquireMode.RECORD_LIMIT and len(acquired) >= max_records:
                    break
                record = self.records.get(offset)
                if record is None:
                    if offset < self.end_offset:
                        continue  # no record here (SPSO..SPEO gaps are not records)
                    if self.end_offset - self.start_offset >= self.config.max_record_locks:
                        break  # the in-flight window is full
                    record = self.records[offset] = InFlightRecord(RecordState.AVAILABLE, 0)
                    self.end_offset = offset + 1
                if record.state is not RecordState.AVAILABLE:
                    continue
                self._dirty.add(offset)
                if batch.aborted:
                    record.state = RecordState.ARCHIVED
                    continue
                record.state = RecordState.ACQUIRED
                record.delivery_count += 1
                record.member_id, record.lock_deadline_ms = member_id, deadline
                limit = self.config.delivery_count_limit
                assert record.delivery_count <= limit, (
                    f"offset {offset} acquired for delivery {record.delivery_count}, past "
                    f"group.share.delivery.count.limit {limit}: a record given back after its "
                    f"last delivery must be ARCHIVED, never AVAILABLE again (SHARE-5)"
                )
                acquired.append(offset)
        runs = self._runs(acquired)  # from the records, before the SPSO moves and forgets any
        self._advance_start()
        return runs

    def _runs(self, offsets: list[int]) -> list[AcquiredRecords]:
        """Consecutive offsets with one delivery count, as AcquiredRecords."""
        runs: list[AcquiredRecords] = []
        for offset in offsets:
            count = self.records[offset].delivery_count
            last = runs[-1] if runs else None
            if last is not None and last.last_offset + 1 == offset and last.delivery_count == count:
                runs[-1] = AcquiredRecords(last.first_offset, offset, count)
            else:
                runs.append(AcquiredRecords(offset, offset, count))
        return runs

    # -- acknowledging ----------------------------------------------------------------

    def acknowledge(self, member_id: str, batches: Iterable[AcknowledgementBatch]) -> ErrorCode:
        """Apply a member's acknowledgements, all or nothing: every offset named must be
        ACQUIRED by `member_id` (INVALID_RECORD_STATE: `acknowledge_record` decides), or
        below the SPSO (done already: ignored, as Kafka does); an offset at or past the SPEO
        was never delivered (INVALID_REQUEST). On an error nothing changes."""
        limit = self.config.delivery_count_limit
        plan: list[tuple[int, Transition]] = []
        for batch in batches:
            types = batch.acknowledge_types
            span = batch.last_offset - batch.first_offset + 1
            if span <= 0 or len(types) not in (1, span):
                return ErrorCode.INVALID_REQUEST
            for i, offset in enumerate(range(batch.first_offset, batch.last_offset + 1)):
                raw = types[0] if len(types) == 1 else types[i]
                if raw not in AcknowledgeType._value2member_map_:
                    return ErrorCode.INVALID_RECORD_STATE
                if offset < self.start_offset:
                    continue  # done already
                if offset >= self.end_offset:
                    return ErrorCode.INVALID_REQUEST  # never delivered
                record = self.records.get(offset)
                if record is None:
                    return ErrorCode.INVALID_RECORD_STATE  # no record here: never acquired
                kind = AcknowledgeType(raw)
                transition = acknowledge_record(record.view(), member_id, kind, limit)
                if transition.error != ErrorCode.NO_ERROR:
                    return transition.error  # e.g. not held by this member
                plan.append((offset, transition))
        if len({offset for offset, _ in plan}) != len(plan):
            return ErrorCode.INVALID_REQUEST  # one offset acknowledged twice
        now = self.clock.milliseconds()
        for offset, transition in plan:
            record = self.records[offset]
            deadline = record.lock_deadline_ms
            if transition.renew_lock or deadline is None:
                deadline = now + self.config.record_lock_duration_ms
            self._set(offset, transition.state, transition.delivery_count, member_id, deadline)
        self._advance_start()
        return ErrorCode.NO_ERROR

    def expire_locks(self) -> bool:
        """Let the acquisition lock timer look at every ACQUIRED record: those whose lock
        has expired are released (`release_on_lock_timeout` decides; Kafka's
        `AcquisitionLockTimerTask`). True if any was."""
        now = self.clock.milliseconds()
        limit = self.config.delivery_count_limit
        expired = False
        for offset, record in list(self.records.items()):
            if record.state is not RecordState.ACQUIRED:
                continue
            state = release_on_lock_timeout(record.view(), now, limit)
            if state != record.state:
                self._set(offset, state, record.delivery_count)
                expired = True
        self._advance_start()
        return expired

    def next_lock_deadline(self) -> int | None:
        """The earliest acquisition lock deadline, for the broker's timer."""
        deadlines = [r.lock_deadline_ms for r in self.records.values() if r.lock_deadline_ms]
        return min(deadlines, default=None)

    def release_member(self, member_id: str) -> bool:
        """A member left the group or closed its share session: what it holds is released,
        as its RELEASE would (Kafka `releaseAcquiredRecords`). True if it held anything."""
        held = [o for o, r in self.records.items() if r.member_id == member_id]
        limit = self.config.delivery_count_limit
        for offset in held:
            record = self.records[offset]
            release = acknowledge_record(record.view(), member_id, AcknowledgeType.RELEASE, limit)
            if release.error == ErrorCode.NO_ERROR:
                state, count = release.state, release.delivery_count
                self._set(offset, state, count, member_id, record.lock_deadline_ms)
        self._advance_start()
        return bool(held)

    def _set(
        self,
        offset: int,
        state: RecordState,
        delivery_count: int,
        member_id: str | None = None,
        lock_deadline_ms: int | None = None,
    ) -> None:
        """Put the record at `offset` in `state`; only an ACQUIRED record keeps a holder
        and a lock (the acknowledging member's, until `lock_deadline_ms`)."""
        record, state = self.records[offset], RecordState(state)
        held = state is RecordState.ACQUIRED
        assert not held or (member_id is not None and lock_deadline_ms is not None), (
            f"offset {offset} would be ACQUIRED by nobody ({record.state.name} before): a "
            f"record is acquired by a fetch only (SHARE-2)"
        )
        record.state, record.delivery_count = state, delivery_count
        record.member_id = member_id if held else None
        record.lock_deadline_ms = lock_deadline_ms if held else None
        self._dirty.add(offset)

    # -- the start offset ---------------------------------------------------------------

    def move_start(self, log_start_offset: int) -> None:
        """The log's start moved past the SPSO (retention, DeleteRecords): the records
        below it are gone, and so is their state (Kafka `updateCacheAndOffsets`)."""
        if log_start_offset <= self.start_offset:
            return
        for offset in [o for o in self.records if o < log_start_offset]:
            del self.records[offset]
        self.start_offset = log_start_offset
        self.end_offset = max(self.end_offset, log_start_offset)
        self._start_moved = True

    def _advance_start(self) -> None:
        """Move the SPSO over the done prefix (and over offsets that are no records), as
        `next_start_offset` says; the records below it are forgotten."""
        start = next_start_offset(self.start_offset, self.end_offset, _States(self.records))
        assert self.start_offset <= start <= self.end_offset, (
            f"the SPSO would move from {self.start_offset} to {start} with the SPEO at "
            f"{self.end_offset}: it never moves back, nor past the SPEO (SHARE-7)"
        )
        for offset in range(self.start_offset, start):
            self.records.pop(offset, None)
            self._dirty.discard(offset)
        if start != self.start_offset:
            self.start_offset, self._start_moved = start, True
        assert all(self.start_offset <= o < self.end_offset for o in self.records), self

    # -- persistence --------------------------------------------------------------------

    def state_batches(self, offsets: Iterable[int] | None = None) -> tuple[StateBatch, ...]:
        """The in-flight records (or those of `offsets`) as StateBatches: runs of consecutive
        offsets with one state and one delivery count. An ACQUIRED record is written as
        AVAILABLE with its delivery count: its lock dies with this leader."""
        chosen = sorted(self.records if offsets is None else set(offsets) & self.records.keys())
        batches: list[StateBatch] = []
        for offset in chosen:
            record = self.records[offset]
            state = RecordState.AVAILABLE if record.state is RecordState.ACQUIRED else record.state
            last = batches[-1] if batches else None
            if (
                last is not None
                and last.last_offset + 1 == offset
                and (last.delivery_state, last.delivery_count) == (state, record.delivery_count)
            ):
                batches[-1] = StateBatch(last.first_offset, offset, state, record.delivery_count)
            else:
                batches.append(StateBatch(offset, offset, state, record.delivery_count))
        return tuple(batches)

    @property
    def delivery_complete_count(self) -> int:
        """The records at or above the SPSO whose delivery is complete, ACKNOWLEDGED or
        ARCHIVED (KIP-1226): the done records the SPSO has not passed yet, as they sit
        behind one still in flight (SHARE-51). WriteShareGroupState carries it with the SPSO,
        so that the admin can tell the lag: the records below the high watermark still to
        be delivered."""
        return sum(1 for record in self.records.values() if record.state in DONE)

    def has_changes(self) -> bool:
        return bool(self._dirty) or self._start_moved

    def take_changes(self) -> tuple[int, tuple[StateBatch, ...]]:
        """What WriteShareGroupState must carry now: the SPSO and the batches changed since
        the last call (Kafka writes only the changed batches; the share coordinator merges
        them into its snapshot and drops what falls below the SPSO)."""
        batches = self.state_batches(self._dirty)
        self._dirty.clear()
        self._start_moved = False
        return self.start_offset, batches

    def snapshot(self) -> ShareState:
        """The whole state as a persister would read it back."""
        return ShareState(
            state_epoch=self.state_epoch,
            start_offset=self.start_offset,
            leader_epoch=self.leader_epoch,
            batches=self.state_batches(),
        )

    def acquired_by(self, member_id: str) -> list[int]:
        return sorted(o for o, r in self.records.items() if r.member_id == member_id)
