"""A log segment: one `.log` file of batches plus its two indexes.

A partition's log is too big and too long-lived for one file: old data must be deleted
(retention) or rewritten (compaction) cheaply, and a crash should only ever put the tail at
risk. So the log is cut into *segments* (Kafka's `LogSegment`). Each is named by its *base
offset*, an offset <= every offset in it and > every offset in the segments before it,
written as 20 digits (SEG-1):

    00000000000000368769.log         the batches, end to end (file_records.py)
    00000000000000368769.index       offset -> position, sparse (offset_index.py)
    00000000000000368769.timeindex   timestamp -> offset, sparse (time_index.py)

A log that plugs in producer state may give each segment further files of its own (a
`SegmentIndex` per file kind: transactions keep a `.txnindex` of aborted transactions,
txn_index.py). The segment never reads them; it creates them with its own files and
truncates, flushes, renames and deletes them with them, so they stay in step.

Only the last segment, the *active* one, is appended to. It *rolls* (a new active segment
starts) when the next append would take it past `segment.bytes`, when `segment.ms` has
passed, when an index is full, or when an offset would not fit 4 bytes relative to the base
(`should_roll`, SEG-3..SEG-5); and when one append of many batches would need more index
entries than are left, since an index never drops an entry (SEG-9).

**Appending** (Kafka `LogSegment.append`) writes the bytes with one `pwrite`, then walks the
appended batch headers: at each batch, if more than `index.interval.bytes` have been
appended since the last index entry, it adds an entry (the batch's last offset -> the
batch's position) and a time index entry for the largest timestamp so far (INDEX-4,
TIDX-4). The first batch of a segment never gets an entry: a lookup that finds nothing
starts at position 0 anyway. Kafka decides once per append, and its recovery once per
batch; kafka-ref decides per batch in both, so a rebuilt index is the index appends wrote,
and an index that lacks entries can be recognized (INDEX-7). For the usual append of one
batch the two are the same.

**Finding an offset** (`translate_offset`) is an index lookup, then a forward scan over batch
headers to the first batch whose last offset is >= the target: the batch that *contains*
it (INDEX-5). A read starts there, never after it (LOG-3).

**Recovery** after a crash, the check of a segment's indexes against its file and their
rebuild from it, is segment_recovery.py's.

**Truncation** (`truncate_to`) works on whole batches: a batch that holds the target offset
is removed entirely, even the part below it (Kafka `LogSegment.truncateTo`, LOG-13).

Rules: SEG-1..SEG-8, INDEX-4, INDEX-5, TIDX-4.
"""

from __future__ import annotations

import contextlib
import os
import random
import struct
from collections.abc import Callable, Mapping
from typing import Protocol

from kafka_ref.clock import Clock
from kafka_ref.config import LogConfig
from kafka_ref.log.file_records import BatchPosition, FileRecords, FileSlice, TimestampAndOffset
from kafka_ref.log.offset_index import OffsetIndex, needs_index_entry
from kafka_ref.log.time_index import NO_TIMESTAMP, TimeIndex, TimestampOffset
from kafka_ref.record.batch import HEADER_SIZE, BatchHeader, walk_buffer

LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX = ".log", ".index", ".timeindex"
CLEANED_SUFFIX, SWAP_SUFFIX, DELETED_SUFFIX = ".cleaned", ".swap", ".deleted"
# baseOffset, batchLength, partitionLeaderEpoch, magic, lastOffsetDelta (23), maxTimestamp (35)
_BATCH_FIELDS = struct.Struct(">qiib6xi8xq")
_JUMP_DISTANCE = 64 * 1024  # beyond this, finding a read's end jumps via the index


class SegmentIndex(Protocol):
    """A file a plug-in of the log keeps beside each segment's own three (the transactions'
    `.txnindex`, txn_index.py): made with the segment, and kept in step with its `.log`."""

    path: str

    def truncate_to(self, offset: int) -> None: ...

    def flush(self) -> None: ...

    def rename_to(self, path: str) -> None: ...

    def delete(self) -> None: ...

    def sanity_check(self) -> None:
        """Raise an `IndexCorruptError` if the file cannot be trusted (segment_recovery.py)."""

    def reset(self) -> None:
        """Forget every entry: recovery rebuilds the file (the plug-in replays the log)."""


# A plug-in's segment files: kind (the file's suffix, e.g. ".txnindex") -> how to open one,
# given its path and the segment's base offset.
SegmentIndexes = Mapping[str, Callable[[str, int], SegmentIndex]]
NO_SEGMENT_INDEXES: SegmentIndexes = {}


def segment_path(directory: str, base_offset: int, kind: str, suffix: str = "") -> str:
    """`<dir>/<base offset as 20 digits><kind><suffix>`, e.g. 00000000000000000042.log.swap."""
    return os.path.join(directory, f"{base_offset:020d}{kind}{suffix}")


def roll_jitter_ms(config: LogConfig, base_offset: int) -> int:
    """Kafka subtracts a random jitter (< segment.jitter.ms) from segment.ms so that many
    partitions created together do not all roll at once; seeded here by the base offset so
    that a run is reproducible."""
    if config.segment_jitter_ms <= 0:
        return 0
    return random.Random(base_offset).randrange(min(config.segment_jitter_ms, config.segment_ms))


class SegmentIndexFullError(ValueError):
    """An append would need more index entries than the segment's indexes have left.

    Raised before a byte is written: the log rolls and appends to the new segment. An
    index that drops entries would leave offsets a lookup cannot find quickly, and a
    rebuilt index that differs from the appended one (INDEX-7)."""


class Segment:
    """One segment of a partition's log (Kafka: `LogSegment`). Not thread-safe."""

    def __init__(
        self,
        directory: str | os.PathLike,
        base_offset: int,
        config: LogConfig,
        clock: Clock,
        *,
        suffix: str = "",
        roll_jitter_ms: int = 0,
        plugin_indexes: SegmentIndexes = NO_SEGMENT_INDEXES,
    ) -> None:
        self.dir = os.fspath(directory)
        self.base_offset = base_offset
        self.suffix = suffix
        self.index_interval_bytes = config.index_interval_bytes
        self.max_index_size = config.segment_index_bytes
        self.roll_jitter_ms = roll_jitter_ms
        self._clock = clock
        d, size = self.dir, config.segment_index_bytes
        self.log = FileRecords(segment_path(d, base_offset, LOG_SUFFIX, suffix))
        self.offset_index = OffsetIndex(
            segment_path(d, base_offset, INDEX_SUFFIX, suffix), base_offset, size
        )
        self.time_index = TimeIndex(
            segment_path(d, base_offset, TIME_INDEX_SUFFIX, suffix), base_offset, size
        )
        self.plugin_indexes: dict[str, SegmentIndex] = {
            kind: open_index(segment_path(d, base_offset, kind, suffix), base_offset)
            for kind, open_index in plugin_indexes.items()
        }
        self.created_ms = clock.milliseconds()
        self._rolling_timestamp: int | None = None  # first batch's max timestamp
        self._max: TimestampOffset | None = None  # largest timestamp so far, lazily
        # Bytes since the append that got the last index entry (that append included).
        # Kafka starts a reopened segment at 0; counting from the file keeps entries at most
        # one interval apart across restarts (INDEX-5).
        self._bytes_since_last_index_entry = self._bytes_after_last_entry()
        self._next_offset: int | None = None

    def __repr__(self) -> str:
        return f"Segment(base_offset={self.base_offset}, size={self.size}, suffix={self.suffix!r})"

    # ------------------------------------------------------------------ state
    @property
    def size(self) -> int:
        return self.log.size

    @property
    def next_offset(self) -> int:
        """The offset after this segment's last batch (its base offset when empty)."""
        if self._next_offset is None:
            self._next_offset = self.read_next_offset()
        return self._next_offset

    def read_next_offset(self) -> int:
        last = None
        for batch in self.log.batch_positions(self.offset_index.last_entry().position):
            last = batch
        return last.last_offset + 1 if last else self.base_offset

    @property
    def max_timestamp_so_far(self) -> TimestampOffset:
        if self._max is None:
            self._max = self.time_index.last_entry()
        return self._max

    @property
    def largest_record_timestamp(self) -> int | None:
        ts = self.max_timestamp_so_far.timestamp
        return ts if ts >= 0 else None

    @property
    def last_modified_ms(self) -> int:
        return os.stat(self.log.path).st_mtime_ns // 1_000_000

    @property
    def largest_timestamp(self) -> int:
        """Largest record timestamp, or the file's mtime when no record has one (Kafka)."""
        ts = self.largest_record_timestamp
        return ts if ts is not None else self.last_modified_ms

    def first_batch_timestamp(self) -> int | None:
        """The first batch's max timestamp (segment.ms counts from it), None when empty."""
        if self._rolling_timestamp is None and self.size:
            self._rolling_timestamp = BatchHeader.parse(self.log.read(0, HEADER_SIZE)).max_timestamp
        return self._rolling_timestamp

    # ------------------------------------------------------------------ append
    def append(
        self, records: bytes | bytearray | memoryview, *, index_what_fits: bool = False
    ) -> None:
        """Append whole batches that already carry their offsets; index them (INDEX-4).

        One `pwrite` for the bytes; then, per batch, the same rule recovery uses to rebuild
        the indexes, so a rebuilt index equals the one appends wrote. Only the headers'
        offset, length and max timestamp fields are read. An append whose entries the
        indexes cannot take is refused before a byte is written (SEG-9), unless
        `index_what_fits`: the log's last resort for an empty segment whose indexes are
        smaller than one append needs (a `segment.index.bytes` of a few entries), where
        rolling again would not help.
        """
        view = memoryview(records).cast("B")
        batches = []
        for span in walk_buffer(view, header=_BATCH_FIELDS):
            base, _, _, _, delta, max_ts = span.fields
            batches.append((span.position, span.size, base + delta, max_ts))
        if not batches:
            return
        self.offset_index.relative_offset(batches[-1][2])  # refuse before writing a byte
        if not index_what_fits:
            self._check_index_room(batches)
        position = self.log.size
        self.log.append(view)
        if position == 0:
            self._rolling_timestamp = batches[0][3]
        for pos, batch_size, last_offset, max_ts in batches:
            self.index_batch(position + pos, batch_size, last_offset, max_ts)
        self._next_offset = batches[-1][2] + 1

    def index_batch(
        self, position: int, batch_size: int, last_offset: int, max_timestamp: int
    ) -> None:
        """The index-entry rule for one batch at `position` (INDEX-4, TIDX-4): the one loop
        that appends and recovery (segment_recovery.py) both run, so a rebuilt index is the
        appended one by construction. An entry when more than `index.interval.bytes` were
        written since the last one, compared before counting this batch (the entry points
        at the batch's start); the time index gets the largest timestamp so far. An entry
        an index has no room for is left out only when nothing better exists: appends
        check the room first (SEG-9); recovery rebuilds what the appends wrote."""
        if max_timestamp > self.max_timestamp_so_far.timestamp:
            self._max = TimestampOffset(max_timestamp, last_offset)
        if needs_index_entry(self._bytes_since_last_index_entry, self.index_interval_bytes):
            if not self.offset_index.is_full():
                self.offset_index.append(last_offset, position)
            if not self.time_index.is_full():
                self.time_index.maybe_append(*self.max_timestamp_so_far)
            self._bytes_since_last_index_entry = 0
        self._bytes_since_last_index_entry += batch_size

    def start_rebuild(self) -> None:
        """Recovery: empty indexes, and the entry loop back at the file's start."""
        self.offset_index.reset()
        self.time_index.reset()
        for index in self.plugin_indexes.values():
            index.reset()  # the plug-in rebuilds it as it replays the log (TXN-7)
        self._max = TimestampOffset(NO_TIMESTAMP, self.base_offset)
        self._bytes_since_last_index_entry = 0

    def _check_index_room(self, batches: list[tuple[int, int, int, int]]) -> None:
        """Refuse, before a byte is written, an append whose index entries would not fit
        (SEG-9): the same rule as the loop of `append`, counted ahead."""
        if len(batches) <= min(self.offset_index.free_entries, self.time_index.free_entries):
            return  # at most one entry per batch: room, whatever the rule decides
        offsets = times = 0
        since = self._bytes_since_last_index_entry
        max_timestamp = self.max_timestamp_so_far.timestamp
        last_time_entry = self.time_index.last_entry().timestamp
        for _, batch_size, _, batch_max_timestamp in batches:
            max_timestamp = max(max_timestamp, batch_max_timestamp)
            if needs_index_entry(since, self.index_interval_bytes):
                offsets, since = offsets + 1, 0
                if max_timestamp > last_time_entry:
                    times, last_time_entry = times + 1, max_timestamp
            since += batch_size
        if offsets > self.offset_index.free_entries or times > self.time_index.free_entries:
            raise SegmentIndexFullError(
                f"segment {self.base_offset}: this append needs {offsets} offset and {times} "
                f"time index entries; the indexes have room for "
                f"{self.offset_index.free_entries} and {self.time_index.free_entries}"
            )

    def should_roll(
        self, messages_size: int, max_timestamp: int, max_offset: int, now: int, config: LogConfig
    ) -> str | None:
        """Why the active segment must roll before this append, or None (SEG-3..SEG-5)."""
        size = self.size
        if size > config.segment_bytes - messages_size:
            return "segment.bytes"
        # segment.ms, or a compacted log's max.compaction.lag.ms when smaller (COMPACT-28)
        max_age = config.max_segment_ms
        if size > 0 and self.time_waited_for_roll(now, max_timestamp) > (
            max_age - self.roll_jitter_ms
        ):
            return "segment.ms" if max_age == config.segment_ms else "max.compaction.lag.ms"
        if self.offset_index.is_full():
            return "offset index full"
        if self.time_index.is_full():
            return "time index full"
        if not self.offset_index.can_append_offset(max_offset):
            return "relative offset overflow"
        return None

    def time_waited_for_roll(self, now: int, message_timestamp: int) -> int:
        """Kafka: the new batch's timestamp minus the first batch's, else wall-clock age."""
        first = self.first_batch_timestamp()
        if first is not None and first >= 0:
            return message_timestamp - first
        return now - self.created_ms

    # ------------------------------------------------------------------ read
    def translate_offset(self, offset: int, starting_position: int = 0) -> BatchPosition | None:
        """The first batch whose last offset is >= `offset` (INDEX-5), or None."""
        mapping = self.offset_index.lookup(offset)
        return self.log.search_for_offset(offset, max(mapping.position, starting_position))

    def read(
        self,
        start_offset: int,
        max_size: int,
        max_position: int | None = None,
        min_one_batch: bool = False,
    ) -> FileSlice | None:
        """Whole batches from the one holding `start_offset`, within `max_size` bytes.

        Returns None when no batch here ends at or after `start_offset`; an empty slice
        when the first batch is past `max_position` or does not fit (and not
        `min_one_batch`). The slice's `next_offset` is its last batch's last offset + 1.
        For a long read the end is found by jumping through the index to near the size
        limit and scanning headers from there: O(log n) plus about one index interval.
        """
        if max_size < 0:
            raise ValueError(f"max_size {max_size} < 0")
        first = self.translate_offset(start_offset)
        if first is None:
            return None
        limit_position = self.size if max_position is None else min(max_position, self.size)
        pos = first.position
        limit = min(pos + max(max_size, first.size if min_one_batch else 0), limit_position)
        if limit < first.end:
            return self.log.slice(pos, 0, first.base_offset, first.base_offset)
        if limit - first.end < HEADER_SIZE:  # no second batch can fit: skip the scan
            return self.log.slice(pos, first.size, first.base_offset, first.last_offset + 1)
        start = pos
        if limit - pos > _JUMP_DISTANCE:  # far: jump near the limit through the index
            start = max(pos, self.offset_index.lookup_by_position(limit).position)
            if start > pos:  # one entry earlier, so the scan sees the batch that ends the slice
                start = max(pos, self.offset_index.lookup_by_position(start - 1).position)
        # The first batch fits and its header is read already: the scan starts after it.
        end, next_offset = first.end, first.last_offset + 1
        for batch in self.log.batch_positions(max(start, first.end), limit_position):
            if batch.end > limit:
                break
            end, next_offset = batch.end, batch.last_offset + 1
        return self.log.slice(pos, end - pos, first.base_offset, next_offset)

    def find_offset_by_timestamp(
        self, timestamp: int, starting_offset: int
    ) -> TimestampAndOffset | None:
        """The first record at or after `starting_offset` with a timestamp >= `timestamp`.

        The time index bounds where to start; batches are skipped by their header's max
        timestamp, and only the one batch that must hold the answer is decoded.
        """
        entry = self.time_index.lookup(timestamp)
        position = self.offset_index.lookup(max(entry.offset, starting_offset)).position
        return self.log.search_for_timestamp(timestamp, position, starting_offset)

    # ------------------------------------------------------------------ recovery
    def take_file_state(self, next_offset: int, largest: TimestampOffset | None = None) -> None:
        """Take what a full read of the file found (segment_recovery.py) instead of reading
        it again: the next offset and, once the indexes are rebuilt, the largest timestamp."""
        self._next_offset = next_offset
        if largest is not None:
            self._max, self._rolling_timestamp = largest, None
            self._bytes_since_last_index_entry = self._bytes_after_last_entry()

    # ------------------------------------------------------------------ truncation
    def truncate_to(self, offset: int) -> int:
        """Drop every batch whose last offset is >= `offset` (whole batches); bytes cut."""
        mapping = self.translate_offset(offset)
        self.offset_index.truncate_to(offset)
        self.time_index.truncate_to(offset)
        for index in self.plugin_indexes.values():
            index.truncate_to(offset)
        self.resize_indexes(self.max_index_size)  # it becomes (or stays) the active one
        truncated = self.log.truncate_to(mapping.position) if mapping else 0
        if self.size == 0:
            self.created_ms, self._rolling_timestamp = self._clock.milliseconds(), None
        self._bytes_since_last_index_entry = self._bytes_after_last_entry()
        self._next_offset = None
        self._max = self._read_largest_timestamp()
        return truncated

    def _bytes_after_last_entry(self) -> int:
        return max(0, self.size - self.offset_index.last_entry().position)

    def _read_largest_timestamp(self) -> TimestampOffset:
        best = self.time_index.last_entry()
        position = self.offset_index.lookup(best.offset).position
        for _, header in self.log.headers_from(position):
            if header.max_timestamp > best.timestamp:
                best = TimestampOffset(header.max_timestamp, header.last_offset)
        return best

    # ------------------------------------------------------------------ files
    def resize_indexes(self, size: int) -> None:
        # Never below the entries (plus the time index's slot kept for the roll entry): a
        # lowered segment.index.bytes must not lose entries; the full index rolls instead.
        self.offset_index.resize(max(size, self.offset_index.size_in_bytes))
        self.time_index.resize(max(size, self.time_index.size_in_bytes + 12))

    def on_become_inactive(self) -> None:
        """At roll: record the largest timestamp, trim both indexes (SEG-7)."""
        self.time_index.maybe_append(*self.max_timestamp_so_far, skip_full_check=True)
        self.offset_index.trim_to_valid_size()
        self.time_index.trim_to_valid_size()

    def flush(self) -> None:
        """fsync the log, msync the indexes."""
        self.log.flush()
        self.offset_index.flush()
        self.time_index.flush()
        for index in self.plugin_indexes.values():
            index.flush()

    def close(self) -> None:
        if self._max is not None:
            self.time_index.maybe_append(*self._max, skip_full_check=True)
        self.offset_index.close()
        self.time_index.close()
        self.log.close()

    def change_suffix(self, old: str, new: str) -> None:
        """Rename every file from `old` to `new` suffix ("" is the live segment)."""
        if self.suffix != old:
            raise ValueError(f"segment has suffix {self.suffix!r}, not {old!r}")
        base, d = self.base_offset, self.dir
        # The .log last: once it is renamed, no file of this segment keeps the old suffix,
        # which is what the loader looks at (recovery.py, DUR-11).
        self.offset_index.rename_to(segment_path(d, base, INDEX_SUFFIX, new))
        self.time_index.rename_to(segment_path(d, base, TIME_INDEX_SUFFIX, new))
        for kind, index in self.plugin_indexes.items():
            index.rename_to(segment_path(d, base, kind, new))
        self.log.rename_to(segment_path(d, base, LOG_SUFFIX, new))
        self.suffix = new

    def delete(self) -> None:
        """Unlink the files. An in-flight FileSlice keeps the .log readable until dropped."""
        self.offset_index.delete()
        self.time_index.delete()
        for index in self.plugin_indexes.values():
            index.delete()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.log.path)
