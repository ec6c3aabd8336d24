"""Reading a log: from an offset, or a timestamp, to the bytes of whole batches.

A fetch names a partition and an offset; the answer is bytes the broker can hand to
`sendfile` unchanged. No record is decoded on the way: the read works out *file
positions*, and the bytes between them leave as they are (`FileSlice`, file_records.py).
Three lookups get there, each cheaper than reading the data:

1. **Which segment** (LOG-16). The log keeps its segments' base offsets in a sorted list;
   the segment holding an offset is the one with the last base offset <= it, found by
   binary search (`bisect`). A thousand segments cost ten comparisons.
2. **Which batch** (INDEX-5). Inside that segment the sparse offset index gives a position
   at or before the offset, and a forward scan over batch headers finds the first batch
   whose last offset is >= it (`Segment.translate_offset`).
3. **How far** (LOG-6, KIP-74). The read takes whole batches up to `max_bytes`, jumping
   through the index to near the limit (`Segment.read`); when the next batch does not fit,
   it stops there. But the first batch is always returned, even when it is larger than
   `max_bytes`: otherwise a consumer could be stuck forever behind one big batch.

The read starts with the batch that *contains* the requested offset (LOG-3). A consumer
asking for offset 5 of a batch holding 3..7 gets the whole batch and drops 3 and 4 itself;
returning the next batch instead would skip 5..7 for good (LOG-4, a real bug in a
Kafka-compatible broker). It stops before `max_offset`, the high watermark for a
consumer, so nothing uncommitted leaves (LOG-7): the bound is translated to a file
position in the segment that holds it. A read may cross segments, and a segment with
nothing left at or after the offset (compaction removed those batches) is passed over;
when no batch at all is left below the bound, the answer's next offset is the bound, so
the consumer moves on instead of asking again.

One more read answers from the segments' time indexes: **by timestamp** (ListOffsets,
LOG-15), the first offset whose record timestamp is >= the target. Segments whose largest
timestamp is older are skipped without reading their records; in the first one that
qualifies, the time index gives a starting position and only the one batch that must hold
the answer is decoded (`Segment.find_offset_by_timestamp`). The targets -2 (earliest) and
-1 (latest) are the log's bounds, and -3 (KIP-734) the offset of the largest timestamp.

Rules: LOG-3..LOG-7, LOG-15, LOG-16.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence

from kafka_ref.log.file_records import FileSlice, LogReadInfo
from kafka_ref.log.segment import Segment, TimestampAndOffset

EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, MAX_TIMESTAMP = -2, -1, -3  # ListOffsets targets


def read_segments(
    segments: Sequence[Segment],
    bases: Sequence[int],
    offset: int,
    max_bytes: int,
    *,
    upper: int,
    log_start: int,
    log_end: int,
    min_one_batch: bool,
) -> LogReadInfo:
    """Whole batches from the one containing `offset`, up to `max_bytes`, below `upper`
    (LOG-3..LOG-7). `bases` are the segments' base offsets, in order (LOG-16); `offset` is
    in [log_start, log_end] (Log.read checks it)."""
    fetch_offset = offset
    slices: list[FileSlice] = []
    first_offset, next_offset, remaining = -1, offset, max_bytes
    i = bisect.bisect_right(bases, offset) - 1
    while 0 <= i < len(segments) and offset < upper:
        segment = segments[i]
        segment_end = bases[i + 1] if i + 1 < len(bases) else log_end
        max_position = None
        if upper < segment_end:  # the bound falls in this segment: stop at its batch
            bound = segment.translate_offset(upper)
            max_position = bound.position if bound else None
        first_piece = min_one_batch and not slices
        piece = segment.read(offset, max(remaining, 0), max_position, first_piece)
        if piece is None:  # nothing at or after `offset` here: go on to the next
            i += 1
            continue
        if piece.length == 0:
            break
        slices.append(piece)
        remaining -= piece.length
        if first_offset < 0:
            first_offset = piece.first_offset
        offset = next_offset = piece.next_offset
        visible_end = segment.size if max_position is None else max_position
        if piece.position + piece.length < visible_end:
            break  # stopped by the size limit inside this segment
        i += 1
    else:
        if not slices and i >= len(segments):  # no batch at all in [offset, upper)
            next_offset = upper  # (compaction removed them): continue from the bound
    return LogReadInfo(fetch_offset, first_offset, next_offset, slices, log_start, log_end)


def lookup_timestamp(
    segments: Sequence[Segment], timestamp: int, log_start: int, log_end: int
) -> TimestampAndOffset | None:
    """ListOffsets: the first offset whose record timestamp is >= `timestamp` (LOG-15).

    -2 (earliest) and -1 (latest) give the log start and end offsets; -3 the first record
    carrying the largest timestamp (KIP-734): in the segment that reached it first, the first
    batch whose max timestamp it is (Kafka: `UnifiedLog.fetchOffsetByTimestamp`,
    `RecordBatch.offsetOfMaxTimestamp`). None when no record is that recent.
    """
    if timestamp == EARLIEST_TIMESTAMP:
        return TimestampAndOffset(-1, log_start, -1)
    if timestamp == LATEST_TIMESTAMP:
        return TimestampAndOffset(-1, log_end, -1)
    if timestamp == MAX_TIMESTAMP:
        latest = max(segments, key=lambda s: s.max_timestamp_so_far.timestamp, default=None)
        if latest is None or latest.max_timestamp_so_far.timestamp < 0:
            return None
        return latest.find_offset_by_timestamp(latest.max_timestamp_so_far.timestamp, 0)
    for segment in segments:
        largest = segment.largest_record_timestamp
        if largest is not None and largest >= timestamp:
            found = segment.find_offset_by_timestamp(timestamp, log_start)
            if found is not None:
                return found
    return None
