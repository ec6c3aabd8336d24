"""The cleaner manager: which logs to compact, from where to where, and the checkpoint.

The cleaner (cleaner.py) compacts a range of offsets. Deciding *which* range, and whether
a log is worth cleaning at all, is the job of Kafka's `LogCleanerManager`; the broker's
periodic call is `LogCleaner.clean(log, now)`, which does what one pass of Kafka's
`CleanerThread` does for one log:

1. **Read the checkpoint.** `cleaner-offset-checkpoint`, at the root of the data directory,
   holds one line `topic partition offset` per compacted log: the *first dirty offset*,
   where the last round stopped. Its format is that of every Kafka checkpoint file (a
   version line, a count, the entries; DUR-7), and it is replaced atomically (write a
   `.tmp`, fsync, rename, fsync the directory: checkpoints.py). A checkpoint below the log
   start offset (retention or DeleteRecords removed that data) or above the log end offset
   (the log was truncated) is replaced by the log start offset (COMPACT-5).
2. **Find the cleanable range** (`cleanable_offsets`, Kafka `cleanableOffsets`): from the
   first dirty offset to the *first uncleanable offset*, the smallest of the active
   segment's base offset (COMPACT-3), the high watermark or last stable offset if given,
   and the base of the first dirty segment holding a record newer than
   `min.compaction.lag.ms` (COMPACT-7). It is then moved down to a segment boundary.
3. **Measure the dirty ratio** (`LogToClean`): dirty bytes (segments from the one holding
   the first dirty offset up to the first uncleanable one) / all those bytes plus the clean
   bytes (segments wholly below the first dirty offset). Clean only if the ratio is
   strictly greater than `min.cleanable.dirty.ratio` (COMPACT-4): compaction rewrites the
   whole clean part too, so it pays only when enough of the log is garbage. One exception
   (KIP-354, COMPACT-28): a dirty non-active segment whose first batch is older than
   `max.compaction.lag.ms` makes the log due now (`max_compaction_delay`), whatever its
   ratio, so that no record waits longer than that to be compacted.
4. **Clean**, then write the round's end offset as the new checkpoint.

Retention of `compact,delete` logs is not done here: the broker runs `LogRetention.run`
on every log, and the two never run at the same time on one log (the core is called by
one thread at a time; Kafka coordinates them with the manager's in-progress states).

Rules: COMPACT-3, COMPACT-4, COMPACT-5, COMPACT-7, COMPACT-25, COMPACT-28 in
spec/retention.md.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass

from kafka_ref.log.checkpoints import CheckpointError, OffsetCheckpointFile
from kafka_ref.log.cleaner import Cleaner, CleanerStats
from kafka_ref.log.log import Log
from kafka_ref.log.offset_map import SkimpyOffsetMap

logger = logging.getLogger("kafka_ref.log.cleaner_manager")

CLEANER_OFFSET_CHECKPOINT = "cleaner-offset-checkpoint"


@dataclass(frozen=True, slots=True)
class LogToClean:
    """A log's clean/dirty split and its dirty ratio (Kafka: `LogToClean`)."""

    first_dirty_offset: int
    first_uncleanable_offset: int
    clean_bytes: int
    cleanable_bytes: int
    # a dirty record is older than max.compaction.lag.ms: clean whatever the ratio
    need_compaction_now: bool = False

    @property
    def total_bytes(self) -> int:
        return self.clean_bytes + self.cleanable_bytes

    @property
    def cleanable_ratio(self) -> float:
        return self.cleanable_bytes / self.total_bytes if self.total_bytes else 0.0


def cleanable_offsets(
    log: Log, checkpoint: int | None, now: int, max_offset: int | None = None
) -> tuple[int, int]:
    """(first dirty offset, first uncleanable offset) (Kafka: `cleanableOffsets`).

    The checkpoint is ignored when it is below the log start (retention or DeleteRecords
    removed the data) or above the log end (the log was truncated). The uncleanable bound
    is the smallest of the active segment's base, `max_offset` (the broker passes the last
    stable offset: the high watermark unless a transaction is open, COMPACT-25), and the
    first dirty segment holding a record newer than now - min.compaction.lag.ms
    (COMPACT-3, COMPACT-7).
    """
    start = log.log_start_offset
    dirty = checkpoint if checkpoint is not None else start
    if not start <= dirty <= log.log_end_offset:
        if checkpoint is not None:
            logger.warning("%s: resetting cleaner checkpoint %d to %d", log.name, dirty, start)
        dirty = start
    active = log.active_segment
    bounds = [active.base_offset]
    if max_offset is not None:
        bounds.append(max_offset)
    lag = log.config.min_compaction_lag_ms
    if lag > 0:
        for segment in log.segments:
            if segment is active:
                break
            if segment.next_offset > dirty and segment.largest_timestamp > now - lag:
                bounds.append(segment.base_offset)
                break
    return dirty, min(bounds)


def max_compaction_delay(log: Log, first_dirty: int, now: int) -> int:
    """How long past max.compaction.lag.ms the oldest dirty record already is, 0 if none
    is (Kafka: `LogCleanerManager.maxCompactionDelay`). A segment's age is that of its first
    batch (its max timestamp); only the non-active segments from the one holding the first
    dirty offset count, and batches without a timestamp (<= 0) are left out."""
    active = log.active_segment
    firsts = [
        first
        for segment in log.segments
        if segment is not active and segment.next_offset > first_dirty
        if (first := segment.first_batch_timestamp()) is not None and first > 0
    ]
    clean_until = now - max(log.config.max_compaction_lag_ms, 0)
    earliest = min(firsts, default=None)
    return clean_until - earliest if earliest is not None and earliest < clean_until else 0


def log_to_clean(log: Log, first_dirty: int, uncleanable: int, now: int) -> LogToClean:
    """Measure the split; the uncleanable bound moves down to a segment's base offset."""
    holder = log.segment_for(uncleanable)
    first_uncleanable = holder.base_offset if holder is not None else log.segments[0].base_offset
    first_uncleanable = min(first_uncleanable, log.active_segment.base_offset)
    clean = sum(s.size for s in log.segments if s.next_offset <= first_dirty)
    cleanable = sum(
        s.size
        for s in log.segments
        if s.next_offset > first_dirty and s.base_offset < first_uncleanable
    )
    due = max_compaction_delay(log, first_dirty, now) > 0
    return LogToClean(first_dirty, first_uncleanable, clean, cleanable, due)


@dataclass
class CleanResult:
    """What `LogCleaner.clean` decided and did for one log."""

    cleaned: bool
    to_clean: LogToClean
    stats: CleanerStats | None = None
    reason: str = ""


class LogCleaner:
    """The entry point the broker calls periodically (Kafka: `LogCleaner` with
    `LogCleanerManager`): checkpoint, dirty ratio, one `Cleaner` round, new checkpoint."""

    def __init__(self, offset_map: SkimpyOffsetMap | None = None) -> None:
        self.cleaner = Cleaner(offset_map)

    @staticmethod
    def checkpoint_file(log: Log) -> OffsetCheckpointFile:
        """`cleaner-offset-checkpoint` in the data directory holding the log."""
        data_dir = os.path.abspath(log.parent_dir)
        return OffsetCheckpointFile(os.path.join(data_dir, CLEANER_OFFSET_CHECKPOINT))

    @staticmethod
    def topic_partition(log: Log) -> tuple[str, int]:
        topic, _, partition = log.name.rpartition("-")
        return topic, int(partition)

    @staticmethod
    def _read(file: OffsetCheckpointFile) -> dict[tuple[str, int], int]:
        """The checkpoint's entries; an unreadable file counts as empty, which is safe:
        the logs are cleaned again from their start (more work, nothing lost)."""
        try:
            return file.read()
        except CheckpointError as err:
            logger.error("%s; cleaning from the log start offsets", err)
            return {}

    def checkpoint_of(self, log: Log) -> int | None:
        return self._read(self.checkpoint_file(log)).get(self.topic_partition(log))

    def update_checkpoint(self, log: Log, offset: int) -> None:
        """Atomically record the first dirty offset of `log` (DUR-7's file format)."""
        file = self.checkpoint_file(log)
        offsets = self._read(file)
        offsets[self.topic_partition(log)] = offset
        file.write(offsets)

    def maybe_truncate_checkpoint(self, log: Log, offset: int) -> None:
        """After a truncation to `offset`: the checkpoint must not point past it."""
        current = self.checkpoint_of(log)
        if current is not None and current > offset:
            self.update_checkpoint(log, offset)

    def clean(
        self, log: Log, now: int, *, force: bool = False, max_offset: int | None = None
    ) -> CleanResult:
        """Clean `log` if it is compacted and dirty enough (COMPACT-4) or holds a dirty
        record older than max.compaction.lag.ms (COMPACT-28); `force` skips both tests
        (tools and tests). `max_offset` bounds the dirty section (the HW)."""
        first_dirty, uncleanable = cleanable_offsets(log, self.checkpoint_of(log), now, max_offset)
        to_clean = log_to_clean(log, first_dirty, uncleanable, now)
        if not log.config.compact:
            return CleanResult(False, to_clean, reason="cleanup.policy has no compact")
        ratio, minimum = to_clean.cleanable_ratio, log.config.min_cleanable_dirty_ratio
        due = to_clean.need_compaction_now and to_clean.cleanable_bytes > 0
        if not force and not due and not ratio > minimum:
            return CleanResult(False, to_clean, reason=f"dirty ratio {ratio:.3f} <= {minimum}")
        if to_clean.first_dirty_offset >= to_clean.first_uncleanable_offset:
            return CleanResult(False, to_clean, reason="nothing cleanable")
        logger.info(
            "%s: cleaning offsets [%d, %d), dirty ratio %.3f",
            log.name,
            to_clean.first_dirty_offset,
            to_clean.first_uncleanable_offset,
            ratio,
        )
        stats = self.cleaner.clean(
            log, to_clean.first_dirty_offset, to_clean.first_uncleanable_offset, now
        )
        if stats.end_offset > first_dirty:
            self.update_checkpoint(log, stats.end_offset)
        logger.info(
            "%s: cleaned up to %d: %d records removed (%d tombstones), %d bytes freed",
            log.name,
            stats.end_offset,
            stats.records_removed,
            stats.tombstones_removed,
            stats.bytes_freed,
        )
        return CleanResult(True, to_clean, stats)
