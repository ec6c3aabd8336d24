"""Log compaction: keep the latest record of every key, forever, at its original offset.

With `cleanup.policy=compact` a topic is a *changelog*: what matters is the latest value of
each key (a user's address, a consumer group's committed offset in `__consumer_offsets`).
The log cleaner (Kafka's `LogCleaner`, whose worker is `Cleaner`) rewrites old segments,
dropping every record that a later record with the same key has superseded. What is left
still reads like a log: same offsets, same order, only with gaps.

    before   offset  0    1    2    3    4    5    6      (6 is in the active segment)
             key     a    b    a    c    b    a    d
             value   a1   b1   a2   c1   null a3   d1     (b's null value is a tombstone)
    after    offset            3    4    5    6
             key               c    b    a    d
             value             c1   null a3   d1

**Clean and dirty.** The cleaner remembers, per partition, how far it has cleaned: the
*first dirty offset*, kept in `cleaner-offset-checkpoint` at the data directory's root.
Below it the log is clean (each key at most once); from it to the *first uncleanable
offset* it is dirty. The active segment is never cleaned (COMPACT-3), nor any segment
holding a record newer than `min.compaction.lag.ms` (COMPACT-7), and a log is cleaned only
when its *dirty ratio* exceeds `min.cleanable.dirty.ratio` (COMPACT-4). Those decisions,
and the checkpoint, belong to the cleaner manager (cleaner_manager.py, Kafka
`LogCleanerManager`); this module is the worker that cleans a range it is given.

**One round** (`Cleaner.clean`, Kafka `Cleaner.doClean`):

1. Scan the dirty section once and build the offset map key -> latest offset
   (offset_map.py). If the map fills up, the round stops there: its end offset is the last
   offset mapped + 1, and the rest waits for the next round (COMPACT-5).
2. Take every non-active segment from the log's start up to that end offset, clean *and*
   dirty (a clean record may be superseded by a dirty one), in groups whose total size fits
   one segment (`segment.bytes`, and the index limits): small cleaned segments merge.
3. For each group write one new segment `<first base>.log.cleaned` (+ indexes), keeping a
   record when (COMPACT-1, Kafka `shouldRetainRecord`): it lies past the map's end; or it
   has a key, its offset is >= map[key] (or the key is not in the map), and it is not an
   expired tombstone. Records with a null key are dropped: Kafka rejects them on produce
   to a compacted topic, so any found here are debris (COMPACT-9). Batches of aborted
   transactions are removed whole (COMPACT-23); markers stay while their transaction has
   data left, then go after `delete.retention.ms` (COMPACT-12, COMPACT-24): the walk over
   the transactions is cleaned_transactions.py.
4. Swap the group in crash-safely (`Log.replace_segments`, COMPACT-10): `.cleaned` ->
   `.swap` (the commit point), the old segments out of the log and off the disk, `.swap`
   -> live names. On load, a `.cleaned` file is an uncommitted round and is deleted; a
   `.swap` completes the swap (recovery.py, DUR-11).
5. The manager writes the round's end offset as the new first dirty offset.

**Batches** (COMPACT-2, COMPACT-8). A batch whose records all survive is copied byte for
byte. A thinned batch is re-encoded with the same base offset, the surviving records'
offset deltas, and the *original* lastOffsetDelta, producer id/epoch, base sequence,
transactional/control flags, leader epoch and codec: offsets never move, and the batch
still ends where it ended, so a producer's sequence state can be rebuilt from it. A batch
with no survivors is dropped, unless it is the last batch of a producer the producer state
still holds: then it stays with no records (Kafka's RETAIN_EMPTY, COMPACT-27), so state
rebuilt from the log still knows the producer's last sequence and epoch.

**Tombstones** (COMPACT-6). A null value deletes its key, but it must stay long enough for
every consumer to see it. kafka-ref follows KIP-534 (Kafka 3.1): when the cleaner first
writes a batch holding a tombstone, it stamps the batch with a *delete horizon*
(attributes bit 6 `hasDeleteHorizonMs`, baseTimestamp = now + `delete.retention.ms`; the
records' timestamp deltas are relative to it, so their timestamps do not change). A later
round at or after the horizon drops the tombstone. The horizon travels with the batch, so
it survives restarts and replication, and it depends on the clock, not on file mtimes.
(Before KIP-534 Kafka kept a tombstone while its segment's last-modified time +
delete.retention.ms was in the future, which a copied or touched file silently changes.)
A round runs only when there is dirty data, so a tombstone past its horizon goes at the
next round after the horizon, not at the horizon itself.

**Transactions** (KIP-98's cleaner). The offset map skips the records of aborted
transactions, so an aborted record never supersedes a committed one; the rewrite removes
them, and the kept ABORT markers carry their `.txnindex` entries into the cleaned segment.
The manager never lets a round reach the last stable offset (COMPACT-25), so an open
transaction is never touched. Committed transactional records are compacted by key like
any others.

Not yet: cleaning is single-threaded and synchronous: the broker calls `LogCleaner.clean(log, now)`
(cleaner_manager.py) from its background loop (Kafka: `log.cleaner.backoff.ms`).

The two rules of a round are pure functions and seams (kafka_ref/seams.py) that lab 08
(labs/08-compaction) replaces with a student's code: `build_offset_map` (offset_map.py, step
1) and `should_retain` (here, step 3's rule). The cleaner calls both through their modules.

Rules: COMPACT-1, COMPACT-2, COMPACT-5, COMPACT-6, COMPACT-8..COMPACT-13, COMPACT-23,
COMPACT-24, COMPACT-27 in
spec/retention.md (with offset_map.py and cleaner_manager.py).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from kafka_ref.log import offset_map as dedupe
from kafka_ref.log.cleaned_transactions import CleanedTransactionMetadata
from kafka_ref.log.log import Log
from kafka_ref.log.offset_map import MappedBatch, SkimpyOffsetMap
from kafka_ref.log.segment import Segment
from kafka_ref.record.batch import (
    ATTR_DELETE_HORIZON,
    BatchHeader,
    RecordBatch,
    build_batch,
)
from kafka_ref.record.record import Record
from kafka_ref.seams import seam

logger = logging.getLogger("kafka_ref.log.cleaner")

INT32_MAX = 2**31 - 1


@dataclass
class CleanerStats:
    """What one cleaning round did (Kafka: `CleanerStats`)."""

    first_dirty_offset: int = 0
    end_offset: int = 0  # the new first dirty offset
    map_entries: int = 0
    segments_cleaned: int = 0  # old segments rewritten
    segments_written: int = 0  # new segments swapped in
    bytes_read: int = 0
    bytes_written: int = 0
    records_read: int = 0
    records_removed: int = 0
    tombstones_removed: int = 0
    null_keys_removed: int = 0
    batches_removed: int = 0
    aborted_records_removed: int = 0

    @property
    def bytes_freed(self) -> int:
        return self.bytes_read - self.bytes_written


class Cleaner:
    """One round of compaction over one log (Kafka: `Cleaner`)."""

    def __init__(self, offset_map: SkimpyOffsetMap | None = None) -> None:
        self.offset_map = offset_map if offset_map is not None else SkimpyOffsetMap()
        self._last_batches: dict[int, tuple[int | None, int]] = {}  # see _emptied

    def clean(self, log: Log, first_dirty: int, first_uncleanable: int, now: int) -> CleanerStats:
        """Compact `log` for the dirty range [first_dirty, first_uncleanable)."""
        stats = CleanerStats(first_dirty_offset=first_dirty, end_offset=first_dirty)
        self.build_offset_map(log, first_dirty, first_uncleanable)
        end_offset = self.offset_map.latest_offset + 1
        if end_offset <= first_dirty:
            return stats  # nothing dirty to clean
        stats.end_offset = end_offset
        stats.map_entries = len(self.offset_map)
        self._last_batches = log.producer_state.last_records_of_active_producers()
        active = log.active_segment
        segments = [s for s in log.segments if s is not active and s.base_offset < end_offset]
        config = log.config
        txns = CleanedTransactionMetadata()  # one walk over all groups (COMPACT-12, -23, -24)
        for group in group_segments_by_size(
            segments, config.segment_bytes, config.segment_index_bytes
        ):
            self.clean_segments(log, group, now, stats, txns)
        return stats

    # ------------------------------------------------------------------ the offset map
    def build_offset_map(self, log: Log, start: int, end: int) -> None:
        """map[key] = latest offset over the dirty range; stops early if the map fills up."""
        omap = self.offset_map
        omap.clear()
        capacity = omap.max_desired_size
        txns = CleanedTransactionMetadata()  # aborted records never enter the map (COMPACT-23)
        txns.add_aborted_transactions_of(log, start, end)
        batches = dirty_batches(log, start, end, txns)
        offsets, latest = dedupe.build_offset_map(batches, start, capacity)
        for key, offset in offsets.items():
            omap.put(key, offset)
        omap.update_latest_offset(latest)
        if len(offsets) >= capacity:
            logger.info(
                "%s: offset map full (%d keys); cleaning up to offset %d",
                log.name,
                len(offsets),
                latest,
            )

    # ------------------------------------------------------------------ rewriting
    def clean_segments(
        self,
        log: Log,
        group: Sequence[Segment],
        now: int,
        stats: CleanerStats,
        txns: CleanedTransactionMetadata,
    ):
        """Write `group` as one `.cleaned` segment, then swap it in (COMPACT-10)."""
        cleaned = log.new_cleaned_segment(group[0].base_offset)
        txns.write_into(cleaned)  # the ABORT markers kept here index here
        try:
            for i, source in enumerate(group):
                # The whole segment's range: its entries must all reach the cleaned index.
                upper = group[i + 1].base_offset if i + 1 < len(group) else source.next_offset
                txns.add_aborted_transactions_of(log, source.base_offset, upper)
                self.clean_into(source, cleaned, now, log.config.delete_retention_ms, stats, txns)
            # Keep the newest mtime (Kafka does), for anything that falls back on it.
            mtime = max(os.stat(s.log.path).st_mtime_ns for s in group)
            os.utime(cleaned.log.path, ns=(mtime, mtime))
        except Exception:  # an error, not a crash: drop the half-written segment
            cleaned.close()
            cleaned.delete()
            raise
        log.replace_segments([cleaned], list(group))
        stats.segments_cleaned += len(group)
        stats.segments_written += 1
        logger.info(
            "%s: cleaned segments %s into segment %d (%d -> %d bytes)",
            log.name,
            [s.base_offset for s in group],
            cleaned.base_offset,
            sum(s.size for s in group),
            cleaned.size,
        )

    def clean_into(
        self,
        source: Segment,
        dest: Segment,
        now: int,
        delete_retention_ms: int,
        stats: CleanerStats,
        txns: CleanedTransactionMetadata,
    ) -> None:
        """Copy the records of `source` that survive into `dest`, batch by batch."""
        for position in source.log.batch_positions():
            raw = source.log.read(position.position, position.size)
            stats.bytes_read += len(raw)
            kept = self.filter_batch(raw, now, delete_retention_ms, stats, txns)
            if kept is None:
                stats.batches_removed += 1
                continue
            # One append per batch: an index entry per interval. A cleaned segment cannot
            # roll, and its batches, written one by one, can want more entries than the
            # source's appends of several batches did: what does not fit is left out (the
            # index stays sparse and sound; SEG-9's last resort).
            dest.append(kept, index_what_fits=True)
            stats.bytes_written += len(kept)

    def filter_batch(
        self,
        raw: bytes,
        now: int,
        delete_retention_ms: int,
        stats: CleanerStats,
        txns: CleanedTransactionMetadata,
    ) -> bytes | None:
        """The batch as it survives cleaning: the same bytes, a thinned copy, or None."""
        batch = RecordBatch(raw)
        header = batch.header
        horizon = header.base_timestamp if header.attributes & ATTR_DELETE_HORIZON else None
        if header.is_control:
            return self._filter_marker(batch, raw, now, delete_retention_ms, horizon, txns)
        records = list(batch.records())
        stats.records_read += len(records)
        if txns.on_batch_read(batch):  # a batch of an aborted transaction (COMPACT-23)
            stats.records_removed += len(records)
            stats.aborted_records_removed += len(records)
            return self._emptied(header)
        kept = [r for r in records if self._should_retain(r, horizon, now, stats)]
        stats.records_removed += len(records) - len(kept)
        if not kept:
            return self._emptied(header)
        if horizon is None and any(r.value is None for r in kept):
            horizon = now + delete_retention_ms  # KIP-534: first cleaning of a tombstone
        elif len(kept) == len(records):
            return raw  # untouched: keep the producer's bytes (and compression) as they are
        return encode_cleaned_batch(header, kept, horizon)

    def _filter_marker(
        self,
        batch: RecordBatch,
        raw: bytes,
        now: int,
        delete_retention_ms: int,
        horizon: int | None,
        txns: CleanedTransactionMetadata,
    ) -> bytes | None:
        """A control batch: kept while its transaction has data in the log (COMPACT-12),
        then stamped with a delete horizon and removed by a round at or after it
        (COMPACT-24, Kafka `checkBatchRetention`)."""
        if not txns.on_control_batch_read(batch):
            return raw
        if batch.header.records_count == 0:  # emptied already: kept only for its producer
            return self._emptied(batch.header)
        if horizon is None:  # its transaction's data is gone: start the horizon now
            records = list(batch.records())
            return encode_cleaned_batch(batch.header, records, now + delete_retention_ms)
        return self._emptied(batch.header) if now >= horizon else raw

    def _emptied(self, header: BatchHeader) -> bytes | None:
        """A batch that loses every record goes, unless it is its producer's last batch:
        then it stays, with no records, so producer state rebuilt from the log still has
        the producer's last sequence (or, for a marker, its epoch) (COMPACT-27, Kafka
        `isBatchLastRecordOfProducer`, `BatchRetention.RETAIN_EMPTY`)."""
        last = self._last_batches.get(header.producer_id) if header.has_producer_id else None
        if last is None:
            return None
        last_data_offset, epoch = last
        if last_data_offset is not None:
            keep = header.last_offset == last_data_offset
        else:
            keep = header.is_control and header.producer_epoch == epoch
        return encode_cleaned_batch(header, [], None) if keep else None

    def _should_retain(
        self, record: Record, horizon: int | None, now: int, stats: CleanerStats
    ) -> bool:
        map_end = self.offset_map.latest_offset
        mapped = record.key is not None and record.offset <= map_end
        latest = self.offset_map.get(record.key) if mapped else -1
        tombstone = record.value is None
        keep = should_retain(record.offset, record.key, tombstone, latest, map_end, horizon, now)
        if not keep and record.offset <= map_end:
            if record.key is None:
                stats.null_keys_removed += 1
            elif tombstone and record.offset >= latest:
                stats.tombstones_removed += 1
        return keep


def dirty_batches(
    log: Log, start: int, end: int, txns: CleanedTransactionMetadata
) -> Iterator[MappedBatch]:
    """The batches of the non-active segments that may hold offsets in [start, end), lazily,
    as `build_offset_map` reads them: (last offset, [(offset, key), ...]). A marker, and a
    batch of an aborted transaction, count as a batch with no keys (COMPACT-23)."""
    active = log.active_segment
    for segment in log.segments:
        if segment is active or segment.base_offset >= end:
            return
        if segment.next_offset <= start:
            continue
        for position in segment.log.batch_positions():
            if position.last_offset < start:
                continue
            batch = RecordBatch(segment.log.read(position.position, position.size))
            if batch.header.is_control:  # markers have no key to map
                txns.on_control_batch_read(batch)
                yield position.last_offset, ()
            elif txns.on_batch_read(batch):  # aborted: its keys must not supersede others
                yield position.last_offset, ()
            else:
                yield position.last_offset, [(r.offset, r.key) for r in batch.records()]


@seam
def should_retain(
    offset: int,
    key: bytes | None,
    is_tombstone: bool,
    latest: int,
    map_end: int,
    delete_horizon: int | None,
    now: int,
) -> bool:
    """Does the cleaner keep this record? (Kafka `Cleaner.shouldRetainRecord`.)

    `offset`, `key`, `is_tombstone` (a null value): the record. `latest`: the offset map's
    entry for `key` (the offset of its latest record in the dirty section), -1 if the key is
    not in the map. `map_end`: the last offset the map covers. `delete_horizon`: the batch's
    delete horizon (KIP-534), None if the cleaner has not stamped one yet. `now`: the clock.

    Keep a record that lies past `map_end` (this round did not look at it, COMPACT-5).
    Otherwise drop a record with no key (COMPACT-9) and a record that a later record of its
    key supersedes (COMPACT-1); keep the key's latest record, unless it is a tombstone whose
    delete horizon has come (`now >= delete_horizon`, COMPACT-6).
    """
    if offset > map_end:
        return True  # past what this round mapped: not ours to judge (COMPACT-5)
    if key is None:
        return False  # COMPACT-9
    if offset < latest:
        return False  # superseded (COMPACT-1)
    # The key's latest record stays, unless it is a tombstone past its horizon (COMPACT-6).
    return not (is_tombstone and delete_horizon is not None and now >= delete_horizon)


def encode_cleaned_batch(header: BatchHeader, records: Sequence[Record], horizon: int | None):
    """Re-encode a thinned batch: everything but the records kept from `header` (COMPACT-8).

    Each record keeps its offset delta and the batch keeps its last offset, so offsets and
    producer state survive. With a delete horizon, baseTimestamp is the horizon and
    attributes bit 6 is set; record timestamps are unchanged (build_batch takes each
    record's delta from whichever base is used). Under LogAppendTime every decoded record
    carries the batch's max timestamp, so that is kept too.
    """
    return build_batch(
        records,
        base_offset=header.base_offset,
        compression=header.compression,
        producer_id=header.producer_id,
        producer_epoch=header.producer_epoch,
        base_sequence=header.base_sequence,
        is_transactional=header.is_transactional,
        is_control=header.is_control,
        partition_leader_epoch=header.partition_leader_epoch,
        timestamp_type=header.timestamp_type,
        offset_deltas=[r.offset - header.base_offset for r in records],
        last_offset_delta=header.last_offset_delta,
        delete_horizon_ms=horizon,
    )


def group_segments_by_size(
    segments: Sequence[Segment], max_size: int, max_index_size: int
) -> list[list[Segment]]:
    """Consecutive segments merged while the group fits one segment (Kafka:
    `groupSegmentsBySize`): total .log size <= segment.bytes, each index within
    segment.index.bytes, and every offset within 2^31 - 1 of the group's base offset."""
    groups: list[list[Segment]] = []
    i = 0
    while i < len(segments):
        group = [segments[i]]
        log_size = segments[i].size
        index_size = segments[i].offset_index.size_in_bytes
        time_index_size = segments[i].time_index.size_in_bytes
        i += 1
        while i < len(segments):
            nxt = segments[i]
            if (
                log_size + nxt.size > max_size
                or index_size + nxt.offset_index.size_in_bytes > max_index_size
                or time_index_size + nxt.time_index.size_in_bytes > max_index_size
                or (nxt.size and nxt.next_offset - 1 - group[0].base_offset > INT32_MAX)
            ):
                break
            group.append(nxt)
            log_size += nxt.size
            index_size += nxt.offset_index.size_in_bytes
            time_index_size += nxt.time_index.size_in_bytes
            i += 1
        groups.append(group)
    return groups
