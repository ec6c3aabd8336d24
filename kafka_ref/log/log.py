"""The partition log: an append-only sequence of record batches, numbered by offset.

This is the heart of Kafka (Kafka's `UnifiedLog` over `LocalLog`). A partition is a
directory `<data-dir>/<topic>-<partition>/` of segments (segment.py); the log keeps them in
a list sorted by base offset and finds the segment for an offset by binary search over the
base offsets (`bisect`, LOG-16). Only the last segment, the *active* one, takes appends.

Three offsets describe a log (LOG-2):

* the **log end offset** (LEO): the offset the next record will get;
* the **log start offset**: the first offset that still exists; it rises when old segments
  are deleted (retention) or when a client calls DeleteRecords;
* the **recovery point**: every offset below it has been fsynced (DUR-9).

**Append** (LOG-1, LOG-8..LOG-12). The leader hands in the bytes of one or more v2 batches
as a producer sent them. Each batch is validated (length, magic 2, CRC-32C, record count)
before anything is written, so an append is all or nothing. The log then writes each
batch's base offset (= LEO) and partition leader epoch *in place*: those bytes are outside
the CRC, so no record is decoded and no checksum recomputed (LogAppendTime is the exception:
it changes covered bytes, so that batch's CRC is recomputed). Offsets are therefore dense
and increasing. A follower appends the leader's bytes unchanged (`assign_offsets=False`);
their offsets must start at or above its LEO and increase. Before a byte is written, the
log's producer state sees the batches, and may refuse them or find them a retry of batches
the log already holds: then nothing is written and the original offsets are the answer.

**Producer state plugs in** (LOG-19). The log knows nothing of transactions, nor of what a
producer wrote before. Idempotence and transactions (KIP-98) need a table, per producer id,
of its last batches and its open transaction, kept in step with the log and saved beside
it: a later chapter (producer_state.py). The log declares here what it needs of such a table,
`ProducerStateHooks`, and calls the one it was opened with where its batches change (Kafka:
the calls `UnifiedLog` makes on its `ProducerStateManager`):

* **append** (IDEM-1): `prepare_append` sees the validated batches, with their offsets,
  before a byte is written; it may refuse the append (it raises) or find it a retry of
  batches the log holds (`duplicate`: nothing is written, the original offsets are the
  answer). `complete_append` follows the write, with the segment that took it;
* **roll** (`on_roll`), **truncation** (`truncate_and_reload`, `truncate_fully_and_start_at`),
  **open** (`load`, told the first segment whose files recovery rebuilt), **deletion** of
  the oldest segments (`delete_snapshots_before`) and **close** (`take_snapshot`);
* **the high watermark**: `on_high_watermark_updated`, an explicit call of the partition
  that moved it; the log keeps no HW. Reading the log, its producer state, the HW or the
  last stable offset changes nothing (TXN-25).

The state may keep files of its own per segment (`segment_indexes`: the `.txnindex` of
transactions), which the log's segments open and keep in step without reading them. What
the log's parts read back is for the cleaner only (`last_records_of_active_producers`). A
plain log has `NoProducerState`, `Log.open`'s default: every batch is written as it comes
and no file is kept. A broker opens its logs with a `ProducerStateManager`. The last
stable offset and the aborted transactions read_committed needs come from that state, on
the read side (isolation.py), not from the log.

**Read** (LOG-3..LOG-7). A read returns file slices of whole batches, from the batch that
*contains* the requested offset, below the high watermark, at least one batch; how the
segments and their indexes are searched for it, by offset or by timestamp, is
log_read.py's.

**Flush** (DUR-9). Appends go to the page cache. The log fsyncs when `flush.messages`
records or `flush.ms` milliseconds have accumulated (both off by default: Kafka relies on
replication, not fsync, for durability), on `flush()`, and at close.

Rules: LOG-1..LOG-16, LOG-19, SEG-3..SEG-6, DUR-9, TXN-25.
"""

from __future__ import annotations

import bisect
import logging
import os
import shutil
from collections.abc import Callable, Iterator
from typing import Protocol

from kafka_ref.clock import Clock
from kafka_ref.config import LogConfig
from kafka_ref.errors import OffsetOutOfRangeError
from kafka_ref.files import fsync_directory
from kafka_ref.log.file_records import LogReadInfo
from kafka_ref.log.log_read import lookup_timestamp, read_segments
from kafka_ref.log.recovery import LoadedLog, load_log
from kafka_ref.log.segment import (
    CLEANED_SUFFIX,
    INDEX_SUFFIX,
    LOG_SUFFIX,
    NO_SEGMENT_INDEXES,
    SWAP_SUFFIX,
    TIME_INDEX_SUFFIX,
    Segment,
    SegmentIndexes,
    SegmentIndexFullError,
    TimestampAndOffset,
    roll_jitter_ms,
    segment_path,
)
from kafka_ref.log.validator import AppendInfo, AppendOrigin, validate_and_assign
from kafka_ref.metrics.recorders import LatencyHistogram

logger = logging.getLogger("kafka_ref.log.log")


class PreparedAppend(Protocol):
    """What `prepare_append` decided, for `complete_append` (Kafka: the append's
    `ProducerAppendInfo`s)."""

    @property
    def duplicate(self) -> AppendInfo | None:
        """The original append's answer when every batch is a retry: nothing is written."""


class ProducerStateHooks(Protocol):
    """What the log needs of producer state (implemented by `ProducerStateManager`)."""

    @property
    def segment_indexes(self) -> SegmentIndexes:
        """The files this state keeps per segment, by kind (segment.py)."""

    def load(self, log: Log, now: int, rebuilt_from: int | None) -> None:
        """At open: the state of the recovered `log`; segments from `rebuilt_from` on had
        their files rebuilt, and this state's files among them are empty."""

    def prepare_append(
        self, records: memoryview, info: AppendInfo, now: int, origin: AppendOrigin
    ) -> PreparedAppend:
        """Check the validated batches of an append before a byte is written; raise to
        refuse it. Changes nothing."""

    def complete_append(
        self, prepared: PreparedAppend, segment: Segment, log_end_offset: int
    ) -> None:
        """The batches are in `segment`, the log ends at `log_end_offset`: take them in."""

    def on_roll(self, log: Log) -> None:
        """The log rolled: its last segment is new and empty."""

    def truncate_and_reload(self, log: Log, now: int) -> None:
        """The log lost its tail: the state must be the one of what is left."""

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """The log was emptied and starts over at `offset`."""

    def delete_snapshots_before(self, offset: int) -> None:
        """The segments below `offset` were deleted."""

    def take_snapshot(self, offset: int) -> None:
        """Save the state of every batch below `offset` (the log closes)."""

    def on_high_watermark_updated(self, high_watermark: int) -> None:
        """The partition moved the HW: what is below it is replicated."""

    def last_records_of_active_producers(self) -> dict[int, tuple[int | None, int]]:
        """Producer id -> (offset of its last data batch, or None; its epoch)."""


class _NothingPrepared:
    duplicate = None


_NOTHING_PREPARED = _NothingPrepared()


class NoProducerState:
    """The producer state of a plain log: none. Every append is written, nothing is kept."""

    segment_indexes = NO_SEGMENT_INDEXES

    def __init__(self, directory: str) -> None:
        self.dir = directory

    def load(self, log: Log, now: int, rebuilt_from: int | None) -> None:
        pass

    def prepare_append(
        self, records: memoryview, info: AppendInfo, now: int, origin: AppendOrigin
    ) -> PreparedAppend:
        return _NOTHING_PREPARED

    def complete_append(
        self, prepared: PreparedAppend, segment: Segment, log_end_offset: int
    ) -> None:
        pass

    def on_roll(self, log: Log) -> None:
        pass

    def truncate_and_reload(self, log: Log, now: int) -> None:
        pass

    def truncate_fully_and_start_at(self, offset: int) -> None:
        pass

    def delete_snapshots_before(self, offset: int) -> None:
        pass

    def take_snapshot(self, offset: int) -> None:
        pass

    def on_high_watermark_updated(self, high_watermark: int) -> None:
        pass

    def last_records_of_active_producers(self) -> dict[int, tuple[int | None, int]]:
        return {}


class Log:
    """One partition's log (Kafka: `UnifiedLog`). Not thread-safe: one caller at a time."""

    def __init__(
        self,
        directory: str,
        config: LogConfig,
        clock: Clock,
        loaded: LoadedLog,
        producer_state: ProducerStateHooks,
    ) -> None:
        self.dir = directory
        self.config = config
        self._clock = clock
        self.flush_timer = LatencyHistogram()  # the LogManager shares its own (MET-6)
        self._segments = loaded.segments
        self._bases = [s.base_offset for s in self._segments]
        self._log_start_offset = loaded.log_start_offset
        self._recovery_point = loaded.recovery_point
        self._log_end_offset = self._segments[-1].next_offset
        self._last_flush_ms = clock.milliseconds()
        self._dir_dirty = False
        self.producer_state = producer_state
        producer_state.load(self, clock.milliseconds(), loaded.rebuilt_from)

    @classmethod
    def open(
        cls,
        directory: str | os.PathLike,
        config: LogConfig,
        clock: Clock,
        recovery_point: int = 0,
        log_start_offset: int | None = None,
        clean_shutdown: bool = False,
        producer_state: Callable[[str], ProducerStateHooks] = NoProducerState,
    ) -> Log:
        """Load (and after an unclean shutdown, recover) the log in `directory`, with the
        producer state `producer_state(directory)` (LOG-19; a plain log's by default)."""
        directory = os.fspath(directory)
        os.makedirs(directory, exist_ok=True)
        state = producer_state(directory)
        loaded = load_log(
            directory,
            config,
            clock,
            recovery_point,
            log_start_offset,
            clean_shutdown,
            state.segment_indexes,
        )
        log = cls(directory, config, clock, loaded, state)
        logger.info("%s: loaded %r", log.name, log)
        return log

    def __repr__(self) -> str:
        return (
            f"Log({self.name}, segments={len(self._segments)}, start={self._log_start_offset}, "
            f"end={self._log_end_offset}, recovery_point={self._recovery_point})"
        )

    # ------------------------------------------------------------------ state
    @property
    def name(self) -> str:
        return os.path.basename(self.dir)

    @property
    def parent_dir(self) -> str:
        """The data directory (one of `log.dirs`) that holds this log (Kafka: `parentDir`)."""
        return os.path.dirname(self.dir)

    @property
    def log_end_offset(self) -> int:
        return self._log_end_offset

    @property
    def log_start_offset(self) -> int:
        return self._log_start_offset

    @property
    def recovery_point(self) -> int:
        return self._recovery_point

    @property
    def segments(self) -> tuple[Segment, ...]:
        return tuple(self._segments)

    @property
    def active_segment(self) -> Segment:
        return self._segments[-1]

    @property
    def size_in_bytes(self) -> int:
        return sum(s.size for s in self._segments)

    @property
    def unflushed_messages(self) -> int:
        return self._log_end_offset - self._recovery_point

    @property
    def last_flush_ms(self) -> int:
        return self._last_flush_ms

    def segment_for(self, offset: int) -> Segment | None:
        """The segment whose range holds `offset`: the last base offset <= it (LOG-16)."""
        i = bisect.bisect_right(self._bases, offset) - 1
        return self._segments[i] if i >= 0 else None

    # ------------------------------------------------------------------ append
    def append(
        self,
        records: bytes | bytearray | memoryview,
        *,
        leader_epoch: int = 0,
        assign_offsets: bool = True,
        origin: AppendOrigin = AppendOrigin.CLIENT,
    ) -> AppendInfo:
        """Validate, number and append one or more v2 batches (LOG-1, LOG-8..LOG-12); the
        producer state checks them before the write and takes them in after it (LOG-19)."""
        view = memoryview(records).cast("B")
        if assign_offsets and view.readonly:
            view = memoryview(bytearray(view))  # offsets are stamped into the buffer
        size = view.nbytes
        if size == 0:  # Kafka appends nothing and answers offset -1
            return AppendInfo(-1, -1, -1, -1, 0, 0, 0, -1, self._log_start_offset)
        now = self._clock.milliseconds()
        info = validate_and_assign(
            view,
            self.config,
            log_end_offset=self._log_end_offset,
            log_start_offset=self._log_start_offset,
            leader_epoch=leader_epoch,
            now=now,
            assign_offsets=assign_offsets,
            from_client=assign_offsets and origin == AppendOrigin.CLIENT,
        )
        origin = origin if assign_offsets else AppendOrigin.REPLICATION
        prepared = self.producer_state.prepare_append(view, info, now, origin)
        if prepared.duplicate is not None:  # a retry of batches the log holds: write nothing
            return prepared.duplicate
        active = self.active_segment
        reason = active.should_roll(size, info.max_timestamp, info.last_offset, now, self.config)
        if reason:
            active = self.roll(info.first_offset, reason=reason)
        try:
            active.append(view)
        except SegmentIndexFullError:  # nothing was written; a new segment takes it all
            active = self.roll(info.first_offset, reason="index full")
            active.append(view, index_what_fits=True)  # no roll can do better (SEG-9)
        self._log_end_offset = info.last_offset + 1
        self.producer_state.complete_append(prepared, active, self._log_end_offset)
        self._maybe_flush(now)
        return info

    def roll(
        self, expected_next_offset: int | None = None, *, reason: str = "requested"
    ) -> Segment:
        """Start a new active segment at max(expected_next_offset, LEO) (SEG-3..SEG-5)."""
        new_offset = max(expected_next_offset or 0, self._log_end_offset)
        active = self.active_segment
        if active.base_offset == new_offset and active.size == 0:
            return active  # rolling an empty segment onto itself is a no-op
        if os.path.exists(segment_path(self.dir, new_offset, LOG_SUFFIX)):
            raise FileExistsError(f"{self.name}: segment {new_offset} already exists")
        active.on_become_inactive()
        segment = self._new_segment(new_offset)
        self._segments.append(segment)
        self._bases.append(new_offset)
        self._dir_dirty = True
        self.producer_state.on_roll(self)
        logger.info("%s: rolled segment %d (%s)", self.name, new_offset, reason)
        return segment

    # ------------------------------------------------------------------ flush
    def _maybe_flush(self, now: int) -> None:
        if (
            self.unflushed_messages >= self.config.flush_messages
            or now - self._last_flush_ms >= self.config.flush_ms
        ):
            self.flush()

    def maybe_flush(self) -> bool:
        """The periodic check (Kafka's log flusher): flush if flush.ms has passed, or if
        rolled segments are not yet on disk. Returns whether it flushed."""
        now = self._clock.milliseconds()
        if self.unflushed_messages > 0 and now - self._last_flush_ms >= self.config.flush_ms:
            self.flush()
        elif self._recovery_point < self.active_segment.base_offset:
            self.flush(self.active_segment.base_offset)  # Kafka flushes rolled segments
        else:
            return False
        return True

    def flush(self, up_to: int | None = None) -> None:
        """fsync every segment holding offsets in [recovery point, up_to); advance it."""
        up_to = self._log_end_offset if up_to is None else min(up_to, self._log_end_offset)
        if up_to > self._recovery_point:
            with self.flush_timer.timing():  # Kafka: LogFlushStats.logFlushTimer
                first = max(bisect.bisect_right(self._bases, self._recovery_point) - 1, 0)
                last = bisect.bisect_right(self._bases, up_to - 1) - 1
                for segment in self._segments[first : last + 1]:
                    segment.flush()
                if self._dir_dirty:  # new segment files: their names must be durable too
                    fsync_directory(self.dir)
                    self._dir_dirty = False
                self._recovery_point = up_to
        self._last_flush_ms = self._clock.milliseconds()

    # ------------------------------------------------------------------ read
    def read(
        self,
        offset: int,
        max_bytes: int,
        *,
        max_offset: int | None = None,
        min_one_batch: bool = True,
    ) -> LogReadInfo:
        """Whole batches from the one containing `offset`, up to `max_bytes` (LOG-3..LOG-7;
        the walk over the segments is log_read.py's)."""
        start, end = self._log_start_offset, self._log_end_offset
        if not start <= offset <= end:
            raise OffsetOutOfRangeError(f"{self.name}: offset {offset} is not in [{start}, {end}]")
        upper = end if max_offset is None else min(max_offset, end)
        return read_segments(
            self._segments,
            self._bases,
            offset,
            max_bytes,
            upper=upper,
            log_start=start,
            log_end=end,
            min_one_batch=min_one_batch,
        )

    def segments_from(self, offset: int) -> Iterator[Segment]:
        """The segments from the one holding `offset` (the first when below it) to the
        active one, without copying the list (LOG-16)."""
        first = max(bisect.bisect_right(self._bases, offset) - 1, 0)
        for i in range(first, len(self._segments)):
            yield self._segments[i]

    def offset_for_timestamp(self, timestamp: int) -> TimestampAndOffset | None:
        """ListOffsets: the first offset whose timestamp is >= `timestamp` (LOG-15;
        log_read.py), or the log's bounds for the targets -2 and -1."""
        return lookup_timestamp(
            self._segments, timestamp, self._log_start_offset, self._log_end_offset
        )

    # ------------------------------------------------------------------ truncation
    def truncate_to(self, offset: int) -> bool:
        """Remove every batch whose last offset is >= `offset` (replication, LOG-13).

        Whole batches go: a batch holding `offset` is removed entirely, so the LEO
        afterwards is the next offset of the last remaining batch (<= `offset`; equal to it
        when `offset` is a batch boundary, which truncation points always are).
        """
        if offset < 0:
            raise ValueError(f"cannot truncate to negative offset {offset}")
        if offset >= self._log_end_offset:
            return False
        if self._bases[0] > offset:
            self.truncate_fully_and_start_at(offset)
            return True
        while self._bases[-1] > offset:
            self._bases.pop()
            self._segments.pop().delete()
        truncated = self.active_segment.truncate_to(offset)
        self._log_end_offset = self.active_segment.next_offset
        self._log_start_offset = min(self._log_start_offset, self._log_end_offset)
        self._recovery_point = min(self._recovery_point, self._log_end_offset)
        self.producer_state.truncate_and_reload(self, self._clock.milliseconds())
        end = self._log_end_offset
        logger.info(
            "%s: truncated to %d (cut %d bytes); log end %d", self.name, offset, truncated, end
        )
        return True

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Delete every segment and restart empty at `offset` (a follower far behind)."""
        for segment in self._segments:
            segment.delete()
        self._segments, self._bases = [self._new_segment(offset)], [offset]
        self._log_start_offset = self._log_end_offset = self._recovery_point = offset
        self.producer_state.truncate_fully_and_start_at(offset)
        self._dir_dirty = True
        logger.info("%s: truncated fully; starting at %d", self.name, offset)

    def delete_records_before(self, offset: int) -> bool:
        """Raise the log start offset (DeleteRecords, LOG-14) and drop wholly older segments."""
        if offset > self._log_end_offset:
            raise OffsetOutOfRangeError(
                f"{self.name}: cannot delete before {offset} > log end {self._log_end_offset}"
            )
        if offset <= self._log_start_offset:
            return False
        self._log_start_offset = offset
        holder = bisect.bisect_right(self._bases, offset) - 1  # the segment holding `offset`
        self.delete_segments(self._segments[:holder])
        return True

    # ------------------------------------------------------------------ retention/cleaner hooks
    def delete_segments(self, segments: list[Segment] | tuple[Segment, ...]) -> None:
        """Delete the oldest segments (retention). Never the active one; always a prefix,
        so that no offset between the log start and the log end goes missing."""
        count = len(segments)
        if count == 0:
            return
        if count >= len(self._segments) or list(segments) != self._segments[:count]:
            raise ValueError("only the oldest segments, never the active one, can be deleted")
        del self._segments[:count]
        del self._bases[:count]
        for segment in segments:
            segment.delete()
        self._log_start_offset = max(self._log_start_offset, self._bases[0])
        self.producer_state.delete_snapshots_before(self._bases[0])
        logger.info(
            "%s: deleted %d segments; log start now %d", self.name, count, self._log_start_offset
        )

    def new_cleaned_segment(self, base_offset: int) -> Segment:
        """An empty `.cleaned` segment for the cleaner to fill (see `replace_segments`)."""
        for kind in (
            LOG_SUFFIX,
            INDEX_SUFFIX,
            TIME_INDEX_SUFFIX,
            *self.producer_state.segment_indexes,
        ):
            path = segment_path(self.dir, base_offset, kind, CLEANED_SUFFIX)
            if os.path.exists(path):
                os.unlink(path)
        return self._new_segment(base_offset, CLEANED_SUFFIX)

    def _new_segment(self, base_offset: int, suffix: str = "") -> Segment:
        jitter = roll_jitter_ms(self.config, base_offset)
        return Segment(
            self.dir,
            base_offset,
            self.config,
            self._clock,
            suffix=suffix,
            roll_jitter_ms=jitter,
            plugin_indexes=self.producer_state.segment_indexes,
        )

    def replace_segments(self, new: list[Segment], old: list[Segment]) -> None:
        """Swap cleaned segments in for `old` ones, crash-safely (Kafka `replaceSegments`).

        1. flush `new` and rename them .cleaned -> .swap, highest base first (the last
           rename, the lowest segment's .log, is the commit);
        2. take `old` out of the log and delete their files;
        3. rename `new` .swap -> live names.
        A crash at any point is finished or rolled back by the loader (DUR-11).
        """
        new = sorted(new, key=lambda s: s.base_offset)
        if any(s is self.active_segment for s in old) or any(s not in self._segments for s in old):
            raise ValueError("can only replace inactive segments of this log")
        for segment in new:
            segment.on_become_inactive()
            segment.flush()
        for segment in reversed(new):
            segment.change_suffix(CLEANED_SUFFIX, SWAP_SUFFIX)
        fsync_directory(self.dir)
        keep = [s for s in self._segments if all(s is not o for o in old)]
        self._segments = sorted(keep + new, key=lambda s: s.base_offset)
        self._bases = [s.base_offset for s in self._segments]
        for segment in old:
            segment.delete()
        for segment in new:
            segment.change_suffix(SWAP_SUFFIX, "")
        fsync_directory(self.dir)
        logger.info("%s: replaced %d segments with %d cleaned ones", self.name, len(old), len(new))

    # ------------------------------------------------------------------ lifecycle
    def close(self) -> None:
        """Flush (the recovery point becomes the LEO), snapshot the producer state, close."""
        self.flush()
        self.producer_state.take_snapshot(self._log_end_offset)
        for segment in self._segments:
            segment.close()

    def delete(self) -> None:
        """Delete the whole partition directory."""
        for segment in self._segments:
            segment.delete()
        shutil.rmtree(self.dir, ignore_errors=True)
