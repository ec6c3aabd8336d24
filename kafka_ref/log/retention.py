"""Retention: deleting old data, a whole segment at a time.

A Kafka log is not a database table: with `cleanup.policy=delete` (the default) it keeps
data for a while and then throws the oldest away. It never deletes single records. It
deletes whole *segments*, oldest first, by unlinking their files: that is why the log is
cut into segments at all (segment.py), and why retention costs nothing per record. Kafka's
code is `UnifiedLog.deleteOldSegments`, which runs three checks, each one over the log as
the previous one left it:

1. `deleteLogStartOffsetBreachedSegments` (any cleanup.policy): a segment is deleted when
   the *next* segment's base offset is <= the log start offset, i.e. every offset in it is
   below the log start offset. The log start offset moves up through DeleteRecords (LOG-14)
   or a checkpoint; this check removes the files it left behind (RET-4).
2. `deleteRetentionSizeBreachedSegments` (`retention.bytes`, -1 = off): while the log is
   larger than retention.bytes, delete the oldest segment *if the log would still hold at
   least retention.bytes without it*. Retention keeps at least retention.bytes, it is not a
   cap (RET-3).
3. `deleteRetentionMsBreachedSegments` (`retention.ms`, -1 = off): delete a segment when
   `now - largest timestamp > retention.ms`. The age of a segment is the age of its
   *newest* record (the segment's largest record timestamp; the file's mtime if no record
   carries one), so a segment goes only when everything in it has expired (RET-2).

Each check walks the segments from the oldest and stops at the first that must stay: what
retention deletes is always a prefix of the log, so no offset between the log start and the
log end ever goes missing. It never deletes the active segment (RET-1). Kafka goes one step
further: when every segment, the active one included, has expired, it rolls a new empty
active segment first and deletes the old one. kafka-ref leaves the active segment alone;
it becomes deletable once it rolls (segment.ms, segment.bytes). Nor does retention delete a
segment that holds offsets at or above the high watermark, so the log start offset can
never pass it (RET-7). After deleting, the log start offset rises to the base offset of
the first remaining segment (RET-5), and the producer snapshots below it go with the
segments (producer_state.py, IDEM-13).

**Deleting files under readers' feet.** A fetch may be sending bytes from a segment (with
`sendfile`) at the moment retention deletes it. Kafka renames the files `*.deleted` and
unlinks them `file.delete.delay.ms` (60 s) later. kafka-ref unlinks at once but keeps the
descriptor open: on POSIX an unlinked file stays readable through every open descriptor
and its space is freed when the last one closes, here when the last `FileSlice` referring to
the segment's file is dropped. In-flight reads stay valid, new reads no longer see the
segment (RET-8), and there is no timer to run. A crash leaves no `.deleted` files; the loader
removes any it finds (DUR-11). `file.delete.delay.ms` is therefore accepted but unused.

The broker calls `LogRetention.run(log, now)` periodically (Kafka:
`log.retention.check.interval.ms`, 5 minutes) for every log; the core has no timer.

Rules: RET-1..RET-8 in spec/retention.md.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from kafka_ref.log.log import Log
from kafka_ref.log.segment import Segment

logger = logging.getLogger("kafka_ref.log.retention")

# A predicate over (segment, the segment after it or None): "delete this one?".
SegmentPredicate = Callable[[Segment, "Segment | None"], bool]


@dataclass(frozen=True, slots=True)
class DeletedSegment:
    """One segment retention removed, and why."""

    base_offset: int
    next_offset: int
    size: int
    largest_timestamp: int
    reason: str  # "log-start-offset" | "retention.bytes" | "retention.ms"


@dataclass
class RetentionResult:
    """What one run of retention did to one log."""

    deleted: list[DeletedSegment] = field(default_factory=list)
    log_start_offset: int = 0

    @property
    def segments_deleted(self) -> int:
        return len(self.deleted)

    @property
    def bytes_freed(self) -> int:
        return sum(d.size for d in self.deleted)

    @property
    def records_deleted(self) -> int:
        """Offsets removed (gaps left by compaction included)."""
        return sum(d.next_offset - d.base_offset for d in self.deleted)


def deletable_segments(
    log: Log, predicate: SegmentPredicate, high_watermark: int | None = None
) -> list[Segment]:
    """The oldest segments, in order, for which `predicate` holds (Kafka: `deletableSegments`).

    The walk stops at the first segment that must stay, at the active segment, and at the
    first segment whose offsets reach the high watermark (default: the log end offset).
    """
    segments = log.segments
    hw = log.log_end_offset if high_watermark is None else high_watermark
    deletable: list[Segment] = []
    for i, segment in enumerate(segments[:-1]):  # never the active segment (RET-1)
        following = segments[i + 1]
        if following.base_offset > hw or not predicate(segment, following):
            break
        deletable.append(segment)
    return deletable


def log_start_offset_breached(log: Log, high_watermark: int | None = None) -> list[Segment]:
    """Segments wholly below the log start offset (Kafka: deleteLogStartOffsetBreached...)."""
    start = log.log_start_offset
    return deletable_segments(
        log,
        lambda _s, following: following is not None and following.base_offset <= start,
        high_watermark,
    )


def retention_size_breached(log: Log, high_watermark: int | None = None) -> list[Segment]:
    """Oldest segments whose removal keeps the log >= retention.bytes (RET-3)."""
    limit = log.config.retention_bytes
    size = log.size_in_bytes
    if limit < 0 or size < limit:
        return []
    excess = size - limit

    def should_delete(segment: Segment, _following: Segment | None) -> bool:
        nonlocal excess
        if excess - segment.size >= 0:
            excess -= segment.size
            return True
        return False

    return deletable_segments(log, should_delete, high_watermark)


def retention_ms_breached(log: Log, now: int, high_watermark: int | None = None) -> list[Segment]:
    """Oldest segments whose newest record is older than retention.ms (RET-2)."""
    limit = log.config.retention_ms
    if limit < 0:
        return []
    return deletable_segments(
        log, lambda segment, _f: now - segment.largest_timestamp > limit, high_watermark
    )


class LogRetention:
    """Kafka's `UnifiedLog.deleteOldSegments`, as a function of (log, now)."""

    @staticmethod
    def run(log: Log, now: int, *, high_watermark: int | None = None) -> RetentionResult:
        """Apply the log start offset, then retention.bytes, then retention.ms (if delete).

        `high_watermark` bounds what may go (RET-7); None means the log end offset (a log
        without replication). Returns the segments deleted, oldest first.
        """
        result = RetentionResult(log_start_offset=log.log_start_offset)
        checks: list[tuple[str, Callable[[], list[Segment]]]] = [
            ("log-start-offset", lambda: log_start_offset_breached(log, high_watermark))
        ]
        if log.config.delete:  # RET-6: time and size retention only under delete
            checks.append(("retention.bytes", lambda: retention_size_breached(log, high_watermark)))
            checks.append(("retention.ms", lambda: retention_ms_breached(log, now, high_watermark)))
        for reason, find in checks:
            result.deleted.extend(_delete(log, find(), reason, now))
        result.log_start_offset = log.log_start_offset
        return result


def _delete(log: Log, segments: Sequence[Segment], reason: str, now: int) -> list[DeletedSegment]:
    if not segments:
        return []
    done = [
        DeletedSegment(s.base_offset, s.next_offset, s.size, s.largest_timestamp, reason)
        for s in segments
    ]
    log.delete_segments(list(segments))  # unlinks; raises the log start offset (RET-5)
    for d in done:
        logger.info(
            "%s: deleted segment %d (offsets %d..%d, %d bytes, largest timestamp %d, now %d) by %s",
            log.name,
            d.base_offset,
            d.base_offset,
            d.next_offset - 1,
            d.size,
            d.largest_timestamp,
            now,
            reason,
        )
    logger.info("%s: log start offset is now %d", log.name, log.log_start_offset)
    return done
