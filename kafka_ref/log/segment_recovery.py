"""Recovering a segment: trust its indexes only after a check, rebuild them from the file.

A segment's `.log` file is the data; its `.index` and `.timeindex` are derived from it and
can always be rebuilt (DUR-4). After a crash neither can be taken on trust: the tail of the
`.log` may be torn (the OS wrote part of the last append, or wrote later pages before
earlier ones), and an index may point past the data, or lack entries that appends would
have written. The loader (recovery.py, Kafka's `LogLoader`) decides which segments to visit;
this module holds what it does to one segment (Kafka: `LogSegment.sanityCheck` and
`LogSegment.recover`).

**The check** (`check_segment`, INDEX-7) is cheap: it reads only the index files and the
batch headers after the last offset index entry. The indexes must be well formed, their
last entries must point inside the log, the offset index must not lack an entry that
`index.interval.bytes` called for, and the time index must hold the largest timestamp of
the segment's last batch (a closed segment indexes it at the roll). Anything else raises
`IndexCorruptError`, and the loader rebuilds the segment.

**Recovery** (`recover_segment`, DUR-1, DUR-3) is thorough: it empties all three indexes
and walks the whole file batch by batch, in chunks of 1 MiB, checking each batch's
length, magic and CRC-32C and that its offsets follow the previous batch's and stay below
the next segment's base offset. Each valid batch goes through `Segment.index_batch`, the
very loop appends run (INDEX-4), so a rebuilt index equals the one the appends wrote by
construction, not by two loops kept alike. At the first bad batch it stops and cuts
the file there: a torn write leaves a valid prefix, and nothing before it is touched. A
plug-in's files (`Segment.plugin_indexes`) are checked with the indexes and, at a rebuild,
emptied: the plug-in fills them again as it replays the log (the transactions' `.txnindex`
from the markers, TXN-7).

Rules: DUR-1, DUR-3, INDEX-7.
"""

from __future__ import annotations

import logging

from kafka_ref.errors import CorruptRecordError, InvalidRecordError
from kafka_ref.log.abstract_index import IndexCorruptError, IndexOffsetOverflowError
from kafka_ref.log.offset_index import needs_index_entry
from kafka_ref.log.segment import Segment
from kafka_ref.record.batch import HEADER_STRUCT, BatchHeader, validate_batch, walk_batches

logger = logging.getLogger("kafka_ref.log.segment_recovery")

_RECOVERY_CHUNK = 1 << 20


def check_segment(segment: Segment) -> None:
    """Raise IndexCorruptError unless both indexes agree with the log (INDEX-7)."""
    segment.offset_index.sanity_check()
    segment.time_index.sanity_check()
    for index in segment.plugin_indexes.values():
        index.sanity_check()
    last = segment.offset_index.last_entry()
    try:
        batches = list(segment.log.batch_positions(last.position))
        if segment.offset_index.entries and (not batches or batches[0].base_offset > last.offset):
            raise IndexCorruptError(f"{segment.offset_index.path}: last entry {last}")
        newest = batches[-1] if batches else None
        newest_ts = segment.log.header_at(newest.position).max_timestamp if newest else -1
    except CorruptRecordError as err:
        raise IndexCorruptError(f"{segment.offset_index.path} disagrees with the log") from err
    next_offset = newest.last_offset + 1 if newest else segment.base_offset
    if (
        newest
        and needs_index_entry(newest.position - last.position, segment.index_interval_bytes)
        and segment.offset_index.entries < segment.max_index_size // 8
    ):  # INDEX-4 would have put an entry at a batch between them: entries are missing
        raise IndexCorruptError(f"{segment.offset_index.path} lacks entries after {last}")
    if segment.offset_index.entries and last.offset >= next_offset:
        raise IndexCorruptError(f"{segment.offset_index.path}: {last} beyond the log end")
    time_last = segment.time_index.last_entry()
    if segment.time_index.entries and time_last.offset >= next_offset:
        raise IndexCorruptError(f"{segment.time_index.path} points beyond the log end")
    if newest_ts > time_last.timestamp:  # a closed segment indexes its largest timestamp
        raise IndexCorruptError(f"{segment.time_index.path} lacks timestamp {newest_ts}")
    segment.take_file_state(next_offset)


def recover_segment(segment: Segment, next_segment_base: int | None = None) -> int:
    """Revalidate every batch, rebuild both indexes, cut a bad tail; bytes cut (DUR-1).

    A batch is bad when it is torn, not v2, fails its CRC, or breaks the offset order:
    its base offset below the previous batch's next offset, or its last offset at or
    above `next_segment_base`. The CRC does not cover the base offset and leader epoch,
    so those order checks are all that guards the offsets (as in Kafka).
    """
    limit = float("inf") if next_segment_base is None else next_segment_base
    segment.start_rebuild()
    valid = 0
    expected = segment.base_offset
    spans = walk_batches(
        segment.log.read, 0, segment.log.size, header=HEADER_STRUCT, chunk_size=_RECOVERY_CHUNK
    )
    try:
        for span in spans:
            header = BatchHeader(*span.fields)
            chunk, at = span.chunk, span.at
            if at + span.size > len(chunk):  # a batch larger than what the walk read
                chunk, at = segment.log.read(valid, span.size), 0
            validate_batch(chunk, at, check_count=False)
            if header.base_offset < expected or header.last_offset >= limit:
                raise InvalidRecordError(f"offsets {header.base_offset}.. out of order")
            segment.offset_index.relative_offset(header.last_offset)
            segment.index_batch(valid, header.size, header.last_offset, header.max_timestamp)
            valid += header.size
            expected = header.next_offset
    except (CorruptRecordError, InvalidRecordError, IndexOffsetOverflowError) as err:
        logger.warning("%s: invalid batch at position %d: %s", segment.log.path, valid, err)
    truncated = segment.log.truncate_to(valid)
    if truncated:
        logger.warning("%s: recovery truncated %d bytes", segment.log.path, truncated)
    largest = segment.max_timestamp_so_far
    segment.take_file_state(expected, largest)
    segment.offset_index.trim_to_valid_size()
    segment.time_index.maybe_append(*largest, skip_full_check=True)
    segment.time_index.trim_to_valid_size()
    return truncated
