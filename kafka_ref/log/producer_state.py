"""Producer state: what each producer last wrote, so that a retried batch is not written twice.

A producer that gets no answer to a produce request cannot know whether the batch was
appended (the response was lost) or not (the request was lost), so it sends it again.
Without help from the broker, a retry after a lost response writes the records a second
time. The idempotent producer (KIP-98) numbers its batches, and each partition keeps, per
producer id, its epoch and its last five batches (producer_entry.py). This module is the
partition's whole table of them (Kafka: `ProducerStateManager`).

**How it plugs in** (LOG-19). The log knows nothing of this table: it calls the
`ProducerStateHooks` it declares (log.py), and a broker opens its logs with
this class as theirs (`Log.open(..., producer_state=ProducerStateManager)`). It also gives
every segment its `.txnindex` (`segment_indexes`, txn_index.py), which the segment keeps in
step with its `.log` without reading it.

**Appending** (IDEM-1). `prepare_append` checks every batch of an append that carries a
producer id (`check_client_batch` for a client's batch on the leader) after the batches are
validated and *before* a byte is written; a failure raises and changes nothing; an append
made of retries is answered with the original offsets and writes nothing (IDEM-3). After
the write, `complete_append` takes the new batches into the state. A follower's batches go
in unchecked, so a follower that becomes leader recognises retries too (IDEM-11).

**Surviving restarts** (IDEM-9). The state is a function of the log's batch headers, so it
can always be rebuilt by reading them (no record is decoded). To make that cheap it is
written to `<offset>.snapshot` files (producer_snapshot.py) at every segment roll and at a
clean close; loading reads the newest snapshot not beyond the log end and replays the
headers after it; a missing or corrupt snapshot falls back to an older one or to the whole
log. Truncation reloads the state the same way from the nearest snapshot below the new end
(IDEM-12); deleted segments take their snapshots with them (IDEM-13). A producer not heard
from for `producer.id.expiration.ms` is forgotten (`remove_expired_producers`, IDEM-14).

**Transactions** (KIP-98, spec/transactions.md). A producer's first transactional batch
opens its transaction in this partition (`current_txn_first_offset`), and the marker the
coordinator writes closes it (`_update_txn`, TXN-2); a marker from an older producer or
coordinator epoch is refused (TXN-3). The open transactions, and the finished ones whose
marker is not yet below the high watermark, hold the LSO (isolation.py, TXN-4): the
partition says when the HW moves (`on_high_watermark_updated`), and the finished ones below
it are forgotten then, never while the LSO is read (TXN-25). The snapshot keeps each open
transaction's first offset (TXN-5). An ABORT marker produces a `CompletedTxn`, written into
the `.txnindex` of the segment that took the marker; replaying after recovery writes the
entries back (TXN-6, TXN-7).

Rules: LOG-19 in spec/log.md; IDEM-1, IDEM-3, IDEM-9, IDEM-11..IDEM-14 in
spec/idempotence.md; TXN-2..TXN-7, TXN-25 in spec/transactions.md.
"""

from __future__ import annotations

import bisect
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kafka_ref.errors import CorruptRecordError, InvalidRecordError, OutOfOrderSequenceError
from kafka_ref.log.producer_entry import (
    BatchMetadata,
    ProducerStateEntry,
    append_time,
    apply_batch,
    check_client_batch,
    check_epoch,
    check_marker,
    check_txn_batch,
)
from kafka_ref.log.producer_snapshot import (
    CorruptSnapshotError,
    SnapshotEntry,
    delete_snapshot,
    list_snapshots,
    read_snapshot,
    write_snapshot,
)
from kafka_ref.log.txn_index import TXN_SEGMENT_INDEXES, AbortedTxn, transaction_index
from kafka_ref.log.validator import AppendInfo, AppendOrigin
from kafka_ref.record.batch import BatchHeader
from kafka_ref.record.control import EndTransactionMarker, read_marker, read_markers

if TYPE_CHECKING:
    from kafka_ref.log.log import Log
    from kafka_ref.log.segment import Segment

__all__ = ["AppendOrigin", "CompletedTxn", "ProducerStateEntry", "ProducerStateManager"]

logger = logging.getLogger("kafka_ref.log.producer_state")

DEFAULT_PRODUCER_ID_EXPIRATION_MS = 86_400_000  # producer.id.expiration.ms


Markers = dict[int, EndTransactionMarker]  # base offset of a control batch -> its marker
TxnBatch = tuple[int, BatchHeader, EndTransactionMarker | None]  # base offset, header, marker


@dataclass(frozen=True, slots=True)
class CompletedTxn:
    """A transaction a marker just ended in this partition (Kafka: `CompletedTxn`), with
    the LSO it leaves behind: the first offset of the oldest other open transaction, or
    the offset after the marker (Kafka: `ProducerStateManager.lastStableOffset`)."""

    producer_id: int
    first_offset: int
    last_offset: int
    is_aborted: bool
    last_stable_offset: int

    def aborted_entry(self) -> AbortedTxn:
        return AbortedTxn(
            self.producer_id, self.first_offset, self.last_offset, self.last_stable_offset
        )


Application = tuple[int, BatchHeader, int, int]  # producer id, header, base offset, time


@dataclass(slots=True)
class PendingAppend:
    """The state an append would leave (Kafka: the `ProducerAppendInfo`s of one append):
    each batch to apply to its producer's entry, in order, or the earlier append this one
    duplicates; and the transactional batches and markers that open or close transactions
    (TXN-2)."""

    applied: tuple[Application, ...] = ()
    duplicate: AppendInfo | None = None
    txn_batches: tuple[TxnBatch, ...] = ()


_NOTHING = PendingAppend()  # an append without producer ids: shared, never changed


class ProducerStateManager:
    """The producer state of one partition log, and its snapshot files: a log's
    `ProducerStateHooks` (log.py). Not thread-safe."""

    segment_indexes = TXN_SEGMENT_INDEXES  # each segment's `.txnindex` (TXN-6)

    def __init__(self, directory: str) -> None:
        self.dir = directory
        self._entries: dict[int, ProducerStateEntry] = {}
        self._snapshots: list[int] = []
        self.map_end_offset = 0  # every batch below it is in the state (Kafka: lastMapOffset)
        self._replayed = 0
        self._ongoing: dict[int, int] = {}  # producer id -> first offset of its open txn
        self._unreplicated: list[CompletedTxn] = []  # completed, marker not yet below the HW

    def load(self, log: Log, now: int, rebuilt_from: int | None) -> None:
        """The state of `log` after loading: newest usable snapshot + replay (IDEM-9);
        the replay starts at or below `rebuilt_from`, to rebuild `.txnindex` files (TXN-7)."""
        self._snapshots = list_snapshots(self.dir)
        self.truncate_and_reload(log, now, rebuilt_from)
        if self._replayed and log.log_end_offset not in self._snapshots:
            self.take_snapshot(log.log_end_offset)  # the next load starts here

    # ------------------------------------------------------------------ views
    def last_entry(self, producer_id: int) -> ProducerStateEntry | None:
        return self._entries.get(producer_id)

    @property
    def active_producers(self) -> dict[int, ProducerStateEntry]:
        return dict(self._entries)

    @property
    def snapshot_offsets(self) -> list[int]:
        return list(self._snapshots)

    @property
    def ongoing_transactions(self) -> dict[int, int]:
        """Producer id -> first offset of each open transaction (TXN-2)."""
        return dict(self._ongoing)

    def producer_epoch(self, producer_id: int) -> int | None:
        """The producer's last epoch here (its batches' or its last marker's), or None."""
        entry = self._entries.get(producer_id)
        return None if entry is None else entry.producer_epoch

    def has_ongoing_transaction(self, producer_id: int, producer_epoch: int) -> bool:
        """Whether the producer has a transaction open here at this epoch (Kafka:
        `UnifiedLog.hasOngoingTransaction`). Under transactions v2 a batch of the next
        transaction, one epoch up, is not part of the one still open (TXN-95)."""
        return producer_id in self._ongoing and self.producer_epoch(producer_id) == producer_epoch

    def on_high_watermark_updated(self, high_watermark: int) -> None:
        """The partition moved the HW: forget the finished transactions whose marker is
        below it (Kafka: `onHighWatermarkUpdated`); replicated, they no longer hold the
        LSO back. The one place the HW changes this state (TXN-25)."""
        if self._unreplicated:
            self._unreplicated = [t for t in self._unreplicated if t.last_offset >= high_watermark]

    @property
    def unreplicated_transactions(self) -> list[tuple[int, int]]:
        """(first offset, marker offset) of the finished transactions whose marker was not
        yet below the HW at the last `on_high_watermark_updated`: with the open ones, those
        whose marker is not below the HW hold the LSO (isolation.py, TXN-4; Kafka:
        `firstUnstableOffset`)."""
        return [(t.first_offset, t.last_offset) for t in self._unreplicated]

    def last_records_of_active_producers(self) -> dict[int, tuple[int | None, int]]:
        """Producer id -> (offset of its last data batch, or None; its epoch): what the
        cleaner must keep (Kafka `UnifiedLog.lastRecordsOfActiveProducers`)."""
        return {
            pid: (entry.batches[-1].last_offset if entry.batches else None, entry.producer_epoch)
            for pid, entry in self._entries.items()
        }

    # ------------------------------------------------------------------ append
    def prepare_append(
        self, records: memoryview, info: AppendInfo, now: int, origin: AppendOrigin
    ) -> PendingAppend:
        """Check the batches of an append against the state; raise, or say what changes.

        Nothing changes until `complete_append`. A client's batches on the leader get the
        checks of IDEM-2..IDEM-8 and may turn out to be a duplicate; a coordinator's only
        the epoch check, and its markers (read from `records`) the coordinator epoch's
        (TXN-3); a follower's are taken as they are (IDEM-11).
        """
        client = origin is AppendOrigin.CLIENT
        leader = origin is not AppendOrigin.REPLICATION
        markers = read_markers(records, info.batches)  # the transaction markers, if any
        applied: list[Application] = []
        duplicates: list[BatchMetadata] = []
        txn_batches: list[TxnBatch] = []
        # A producer's entry as this append's earlier batches leave it, copied only when a
        # producer has a second batch in the append: a produce request's one batch is
        # checked against the state itself, without a copy.
        scratch: dict[int, ProducerStateEntry] = {}
        writers: set[int] = set()  # the producers of this append's batches so far
        for base_offset, header in info.batches:
            pid = header.producer_id
            if client and header.is_control:
                raise InvalidRecordError("clients are not allowed to write control batches")
            if pid < 0:
                continue
            if pid in writers and pid not in scratch:
                scratch[pid] = self._entry_so_far(pid, applied)
            entry = scratch[pid] if pid in scratch else self._entries.get(pid)
            if client:
                duplicate = check_client_batch(pid, entry, header)
                if duplicate is not None:
                    duplicates.append(duplicate)
                    continue
                check_txn_batch(pid, entry, header)
            elif leader:
                self._check_leader_batch(pid, entry, base_offset, header, markers)
            if header.is_transactional:
                txn_batches.append((base_offset, header, markers.get(base_offset)))
            application = (pid, header, base_offset, now if leader else append_time(header, now))
            applied.append(application)
            writers.add(pid)
            if pid in scratch:
                apply_batch(scratch[pid], *application[1:])
        if duplicates:
            if len(duplicates) != len(info.batches):  # only possible with several batches
                raise OutOfOrderSequenceError("an append mixes retried and new batches")
            return PendingAppend(duplicate=_duplicate_info(info, duplicates[0], duplicates[-1]))
        if not applied:
            return _NOTHING
        return PendingAppend(tuple(applied), txn_batches=tuple(txn_batches))

    def _entry_so_far(self, pid: int, applied: list[Application]) -> ProducerStateEntry:
        """A copy of `pid`'s entry with this append's batches so far applied to it."""
        current = self._entries.get(pid)
        entry = current.copy() if current is not None else ProducerStateEntry(pid)
        for p, header, base_offset, ts in applied:
            if p == pid:
                apply_batch(entry, header, base_offset, ts)
        return entry

    @staticmethod
    def _check_leader_batch(
        pid: int, entry: ProducerStateEntry | None, base: int, header: BatchHeader, markers: Markers
    ) -> None:
        marker = markers.get(base) if header.is_control else None
        if marker is None:
            check_epoch(pid, entry, header.producer_epoch)
        else:
            check_marker(pid, entry, header.producer_epoch, marker.coordinator_epoch)

    def complete_append(
        self, pending: PendingAppend, segment: Segment, log_end_offset: int
    ) -> None:
        """Take the appended batches into the state; the `segment` that took them indexes
        the transactions their ABORT markers ended (TXN-6)."""
        for txn in self._commit(pending, log_end_offset):
            if txn.is_aborted:
                transaction_index(segment).append(txn.aborted_entry())

    def _commit(self, pending: PendingAppend, map_end_offset: int) -> list[CompletedTxn]:
        """Take the appended batches into the state; the transactions their markers ended."""
        for pid, header, base_offset, ts in pending.applied:
            entry = self._entries.get(pid)
            if entry is None:
                entry = self._entries[pid] = ProducerStateEntry(pid)
            apply_batch(entry, header, base_offset, ts)
        completed = []
        for base_offset, header, marker in pending.txn_batches:
            txn = self._update_txn(header.producer_id, base_offset, header, marker)
            if txn is not None:
                completed.append(txn)
        self.map_end_offset = map_end_offset
        return completed

    def _update_txn(
        self, pid: int, base_offset: int, header: BatchHeader, marker: EndTransactionMarker | None
    ) -> CompletedTxn | None:
        """A transactional batch opens the producer's transaction; a marker closes it
        (Kafka: `ProducerAppendInfo.appendDataBatch`, `appendEndTxnMarker`; TXN-2)."""
        entry = self._entries.setdefault(pid, ProducerStateEntry(pid))
        if not header.is_control:
            if entry.current_txn_first_offset < 0:
                entry.current_txn_first_offset = self._ongoing[pid] = base_offset
            return None
        if marker is None:  # a control batch of another kind: no transaction ends
            return None
        first = entry.current_txn_first_offset
        first = base_offset if first < 0 else first
        entry.current_txn_first_offset, entry.coordinator_epoch = -1, marker.coordinator_epoch
        self._ongoing.pop(pid, None)
        lso = min(self._ongoing.values(), default=base_offset + 1)
        txn = CompletedTxn(pid, first, base_offset, not marker.is_commit, lso)
        self._unreplicated.append(txn)
        return txn

    # ------------------------------------------------------------------ snapshots
    def take_snapshot(self, offset: int) -> None:
        """Write the state (every batch below `offset`) to `<offset>.snapshot`."""
        if offset in self._snapshots:
            return  # a snapshot names the same state at the same offset
        entries = []
        for pid in sorted(self._entries):
            e = self._entries[pid]
            txn = (e.coordinator_epoch, e.current_txn_first_offset)
            if not e.batches:
                entries.append(
                    SnapshotEntry(pid, e.producer_epoch, -1, -1, 0, e.last_timestamp, *txn)
                )
            for b in e.batches:  # oldest first: Kafka keeps the last one it reads (IDEM-10)
                batch = (b.last_seq, b.last_offset, b.offset_delta, b.timestamp)
                entries.append(SnapshotEntry(pid, e.producer_epoch, *batch, *txn))
        write_snapshot(self.dir, offset, entries)
        bisect.insort(self._snapshots, offset)
        logger.debug("%s: producer snapshot at %d (%d producers)", self.dir, offset, len(entries))

    def on_roll(self, log: Log) -> None:
        """At a roll: snapshot at the new segment's base; keep the snapshots of the last two
        segments and from the segment holding the recovery point (Kafka:
        `minSnapshotsOffsetToRetain`), which is all a crash can need."""
        bases = [s.base_offset for s in log.segments]
        self.take_snapshot(bases[-1])
        holder = bases[max(bisect.bisect_right(bases, log.recovery_point) - 1, 0)]
        self.delete_snapshots_before(min(bases[max(len(bases) - 2, 0)], holder))

    def delete_snapshots_before(self, offset: int) -> None:
        """Delete the snapshots below `offset` (those of deleted segments, IDEM-13)."""
        while self._snapshots and self._snapshots[0] < offset:
            delete_snapshot(self.dir, self._snapshots.pop(0))

    # ------------------------------------------------------------------ truncation, loading
    def truncate_and_reload(self, log: Log, now: int, rebuild_from: int | None = None) -> None:
        """Rebuild the state for the log as it is now (after loading or truncation): drop
        snapshots beyond its end, read the newest remaining one that is valid (and not
        beyond `rebuild_from`), replay the batch headers after it (IDEM-9, IDEM-12)."""
        end, start = log.log_end_offset, log.log_start_offset
        while self._snapshots and self._snapshots[-1] > end:
            delete_snapshot(self.dir, self._snapshots.pop())
        self._entries.clear()
        self._ongoing.clear()
        self._unreplicated.clear()
        self.map_end_offset = start
        limit = end if rebuild_from is None else min(end, rebuild_from)
        while self._snapshots:
            usable = [o for o in self._snapshots if o <= limit]
            if not usable:
                break
            offset = usable[-1]
            try:
                entries = read_snapshot(self.dir, offset)
            except CorruptSnapshotError as err:
                logger.warning("%s: %s; trying an older snapshot", self.dir, err)
                self._snapshots.remove(offset)
                delete_snapshot(self.dir, offset)
                continue
            self._load_entries(entries)
            self.map_end_offset = max(offset, start)
            break
        self._replayed = self._replay(log.segments, self.map_end_offset, end, now)
        self.map_end_offset = end

    def truncate_fully_and_start_at(self, offset: int) -> None:
        self._entries.clear()
        self._ongoing.clear()
        self._unreplicated.clear()
        self.delete_snapshots_before(2**63 - 1)
        self.map_end_offset = offset

    def _load_entries(self, entries: list[SnapshotEntry]) -> None:
        for e in entries:
            entry = self._entries.get(e.producer_id)
            if entry is None:
                entry = self._entries[e.producer_id] = ProducerStateEntry(e.producer_id)
            entry.coordinator_epoch = e.coordinator_epoch
            entry.current_txn_first_offset = e.current_txn_first_offset
            if e.current_txn_first_offset >= 0:  # an open transaction survives (TXN-5)
                self._ongoing[e.producer_id] = e.current_txn_first_offset
            if e.last_offset < 0:
                entry.update_epoch(e.epoch, e.timestamp)
            else:
                batch = BatchMetadata(e.last_sequence, e.last_offset, e.offset_delta, e.timestamp)
                entry.add_batch(e.epoch, batch)

    def _replay(self, segments: Sequence[Segment], start: int, end: int, now: int) -> int:
        """Apply the headers of every batch in [start, end) without validation; count them."""
        bases = [s.base_offset for s in segments]
        first = max(bisect.bisect_right(bases, start) - 1, 0)
        count = 0
        for segment in segments[first:]:
            if segment.base_offset >= end:
                break
            found = segment.translate_offset(start) if start > segment.base_offset else None
            position = found.position if found is not None else 0
            try:
                for at, header in segment.log.headers_from(position):
                    if header.base_offset >= end:
                        break
                    if header.last_offset < start or header.producer_id < 0:
                        continue
                    entry = self._entries.setdefault(
                        header.producer_id, ProducerStateEntry(header.producer_id)
                    )
                    apply_batch(entry, header, header.base_offset, append_time(header, now))
                    count += 1
                    if header.is_transactional:
                        self._replay_txn(segment, at, header)
            except CorruptRecordError as err:  # recovery keeps a valid log; never crash here
                logger.error("%s: cannot read batch headers for producer state: %s", self.dir, err)
        if count:
            logger.info("%s: replayed %d producer batches in [%d, %d)", self.dir, count, start, end)
        return count

    def _replay_txn(self, segment: Segment, position: int, header: BatchHeader) -> None:
        """Track a replayed transactional batch; an ABORT marker missing from its segment's
        `.txnindex` (reset by recovery) is added back (TXN-7)."""
        marker = None
        if header.is_control:
            try:
                marker = read_marker(segment.log.read(position, header.size))
            except InvalidRecordError:  # a control batch of another kind
                marker = None
        txn = self._update_txn(header.producer_id, header.base_offset, header, marker)
        if txn is not None and txn.is_aborted:
            index = transaction_index(segment)
            if index.last_offset is None or txn.last_offset > index.last_offset:
                index.append(txn.aborted_entry())

    # ------------------------------------------------------------------ expiration
    def remove_expired_producers(
        self, now: int, expiration_ms: int = DEFAULT_PRODUCER_ID_EXPIRATION_MS
    ) -> list[int]:
        """Forget producers idle for `expiration_ms` (Kafka: removeExpiredProducers, IDEM-14)."""
        expired = [
            pid
            for pid, e in self._entries.items()
            if e.current_txn_first_offset < 0 and now - e.last_timestamp >= expiration_ms
        ]
        for pid in expired:
            del self._entries[pid]
        if expired:
            logger.info("%s: expired producer ids %s", self.dir, expired)
        return expired


def _duplicate_info(info: AppendInfo, first: BatchMetadata, last: BatchMetadata) -> AppendInfo:
    """What a duplicate answers: the original offsets, nothing appended (IDEM-3)."""
    return AppendInfo(
        first_offset=first.first_offset,
        last_offset=last.last_offset,
        max_timestamp=last.timestamp,
        offset_of_max_timestamp=last.last_offset,
        record_count=0,
        batch_count=0,
        size=0,
        log_append_time=last.timestamp if info.log_append_time >= 0 else -1,
        log_start_offset=info.log_start_offset,
    )
