"""Opening a partition's directory: finish interrupted work, load segments, recover the tail.

When a broker starts, each partition directory holds whatever the last run left: segments,
perhaps half-renamed files of a compaction, perhaps a tail torn by a crash. Kafka's
`LogLoader` turns that into a consistent log in four steps, and so does `load_log`:

1. **Temporary files** (DUR-11). Segment replacement (compaction) writes new segments as
   `*.cleaned`, renames them to `*.swap` once complete and flushed (the commit point),
   deletes the old segments, then drops the `.swap` suffix. So at startup: `*.deleted`
   files are removed; `*.cleaned` files are an uncommitted replacement and are removed;
   `*.swap` files are a committed one: the old segments they replace (their files whose
   base offset falls in [first swap base, last swap next offset)) are removed and the
   suffix is dropped. A `.swap` at or above the lowest `.cleaned` base
   offset belongs to a replacement whose commit did not finish (renames go from the highest
   base offset down) and is removed with it, so the whole replacement rolls back.
2. **Segments.** Every `<20 digits>.log` becomes a segment, with the files a plug-in of the
   log keeps per segment (`plugin_indexes`, segment.py). An index file without its log
   is an orphan and goes (it is derived data). A segment whose `.index` or `.timeindex` is
   missing is rebuilt from its log: deleting an index file is always safe (DUR-4). A
   segment that recovery will not visit has its indexes sanity-checked, and a corrupt one
   is rebuilt (INDEX-7; the check and the rebuild of one segment are segment_recovery.py's).
   Files that are not segment files are left alone.
3. **Recovery** (DUR-1, DUR-2, DUR-5). Unless the broker shut down cleanly (DUR-6), every
   segment from the one holding the *recovery point* onward (the offset below which data
   was fsynced) is re-read batch by batch with CRC checks; the first bad batch and
   everything after it, including later segments, is removed. What survives is a prefix
   of what was written, and no offset of it moves.
4. **Offsets.** The log start offset is the checkpointed one or the first segment's base,
   whichever is larger; if the log ends below it (files deleted by hand) the log restarts
   empty at the log start offset, as Kafka does. The last segment's indexes grow back to
   `segment.index.bytes` so it can take appends again.

Then `Log` has its producer state load itself for the recovered log (log.py, LOG-19),
told the first segment whose files were rebuilt: a plug-in's files of those segments are
empty and are filled again as it replays them (for a broker's logs, producer_state.py:
IDEM-9, TXN-7). Files of a plug-in that are not per segment (a producer snapshot is named
by an offset like a segment, but describes the log up to it) are never touched here.

Rules: DUR-1, DUR-2, DUR-4, DUR-5, DUR-11, INDEX-7.
"""

from __future__ import annotations

import bisect
import logging
import os
import re
from dataclasses import dataclass

from kafka_ref.clock import Clock
from kafka_ref.config import LogConfig
from kafka_ref.errors import CorruptRecordError
from kafka_ref.files import fsync_directory
from kafka_ref.log.abstract_index import IndexCorruptError
from kafka_ref.log.file_records import FileRecords
from kafka_ref.log.segment import (
    CLEANED_SUFFIX,
    DELETED_SUFFIX,
    INDEX_SUFFIX,
    LOG_SUFFIX,
    NO_SEGMENT_INDEXES,
    SWAP_SUFFIX,
    TIME_INDEX_SUFFIX,
    Segment,
    SegmentIndexes,
    roll_jitter_ms,
)
from kafka_ref.log.segment_recovery import check_segment, recover_segment

logger = logging.getLogger("kafka_ref.log.recovery")

# <base offset: 20 digits><.kind>[.cleaned|.swap|.deleted]; kind is log, index, timeindex,
# or a plug-in's file named the same way (.txnindex, .snapshot).
_SEGMENT_FILE = re.compile(r"(\d{20})(\.[a-z]+)(\.cleaned|\.swap|\.deleted)?")


@dataclass
class LoadedLog:
    segments: list[Segment]
    log_start_offset: int
    recovery_point: int
    # The base of the first segment whose files were rebuilt, or None: the producer state
    # replays from there, which rebuilds those segments' plug-in files (TXN-7).
    rebuilt_from: int | None = None


def parse_segment_file(name: str) -> tuple[int, str, str] | None:
    """(base offset, kind, suffix) of a per-segment file name, or None."""
    match = _SEGMENT_FILE.fullmatch(name)
    if match is None:
        return None
    return int(match.group(1)), match.group(2), match.group(3) or ""


def load_log(
    directory: str,
    config: LogConfig,
    clock: Clock,
    recovery_point: int,
    log_start_offset: int | None,
    clean_shutdown: bool,
    plugin_indexes: SegmentIndexes = NO_SEGMENT_INDEXES,
) -> LoadedLog:
    """Turn a partition directory into sorted, recovered segments (Kafka `LogLoader.load`);
    each segment opens `plugin_indexes` too."""
    kinds = (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX, *plugin_indexes)
    _remove_temp_files_and_complete_swaps(directory, kinds)
    segments, rebuilt = _load_segments(
        directory, config, clock, recovery_point, clean_shutdown, plugin_indexes
    )
    if not clean_shutdown:
        recovered = _recover_unflushed(directory, segments, recovery_point, config.compact)
        rebuilt = min((x for x in (rebuilt, recovered) if x is not None), default=None)
    start_checkpoint = log_start_offset or 0
    if segments and segments[-1].next_offset < start_checkpoint:
        logger.warning(
            "%s: log end offset %d is below the log start offset %d; deleting all segments",
            directory,
            segments[-1].next_offset,
            start_checkpoint,
        )
        for segment in segments:
            segment.delete()
        segments = []
    if not segments:
        segments = [
            Segment(
                directory,
                start_checkpoint,
                config,
                clock,
                roll_jitter_ms=roll_jitter_ms(config, start_checkpoint),
                plugin_indexes=plugin_indexes,
            )
        ]
    segments[-1].resize_indexes(config.segment_index_bytes)
    log_end = segments[-1].next_offset
    return LoadedLog(
        segments,
        max(start_checkpoint, segments[0].base_offset),
        log_end if clean_shutdown else min(recovery_point, log_end),
        rebuilt,
    )


def _remove_temp_files_and_complete_swaps(directory: str, kinds: tuple[str, ...]) -> None:
    """Step 1 (DUR-11); `kinds` are the segments' file kinds (other files are not theirs)."""
    files = {}
    for name in os.listdir(directory):
        parsed = parse_segment_file(name)
        if parsed is not None and os.path.isfile(os.path.join(directory, name)):
            files[name] = parsed
    cleaned = [n for n, (_, _, suffix) in files.items() if suffix == CLEANED_SUFFIX]
    min_cleaned = min((files[n][0] for n in cleaned), default=None)
    swaps = []
    for name, (base, _, suffix) in files.items():
        path = os.path.join(directory, name)
        if suffix == DELETED_SUFFIX:
            logger.info("%s: deleting leftover %s", directory, name)
            os.unlink(path)
        elif suffix == SWAP_SUFFIX and min_cleaned is not None and base >= min_cleaned:
            logger.info("%s: deleting %s of an uncommitted replacement", directory, name)
            os.unlink(path)
        elif suffix == SWAP_SUFFIX:
            swaps.append(name)
    for name in cleaned:
        logger.info("%s: deleting uncommitted cleaned file %s", directory, name)
        os.unlink(os.path.join(directory, name))
    swap_logs = [n for n in swaps if files[n][1] == LOG_SUFFIX]
    if swap_logs:
        low = min(files[n][0] for n in swap_logs)
        high = max(_next_offset_of(os.path.join(directory, n), files[n][0]) for n in swap_logs)
        for name, (base, kind, suffix) in files.items():
            # Only a segment's own files: a producer snapshot describes offsets (IDEM-9).
            if suffix == "" and kind in kinds and low <= base < high:
                logger.info("%s: deleting %s, replaced by a committed swap", directory, name)
                os.unlink(os.path.join(directory, name))
    for name in swaps:  # a lone index .swap: its log was renamed before the crash
        logger.info("%s: completing the swap of %s", directory, name)
        final = name[: -len(SWAP_SUFFIX)]
        os.replace(os.path.join(directory, name), os.path.join(directory, final))
    if swaps or cleaned:
        fsync_directory(directory)


def _next_offset_of(path: str, base_offset: int) -> int:
    records = FileRecords(path, create=False)
    next_offset = base_offset
    try:
        for batch in records.batch_positions():
            next_offset = batch.last_offset + 1
    except CorruptRecordError:
        pass  # a torn tail is recovered later; the range only needs the valid part
    finally:
        records.close()
    return next_offset


def _load_segments(
    directory: str,
    config: LogConfig,
    clock: Clock,
    recovery_point: int,
    clean_shutdown: bool,
    plugin_indexes: SegmentIndexes,
) -> tuple[list[Segment], int | None]:
    names = set()
    for name in os.listdir(directory):
        if os.path.isfile(os.path.join(directory, name)):
            names.add(name)
        elif parse_segment_file(name):
            logger.warning("%s: ignoring directory %s (named like a segment)", directory, name)
    bases = sorted(
        parsed[0]
        for name in names
        if (parsed := parse_segment_file(name)) and parsed[1:] == (LOG_SUFFIX, "")
    )
    index_kinds = (INDEX_SUFFIX, TIME_INDEX_SUFFIX, *plugin_indexes)
    for name in sorted(names):
        parsed = parse_segment_file(name)
        if (
            parsed
            and parsed[1] in index_kinds
            and parsed[2] == ""
            and f"{parsed[0]:020d}{LOG_SUFFIX}" not in names
        ):
            logger.warning("%s: deleting orphaned index %s (no .log)", directory, name)
            os.unlink(os.path.join(directory, name))
    # Recovery visits the segment holding the recovery point and everything after it.
    recover_from = len(bases) if clean_shutdown else bisect.bisect_right(bases, recovery_point) - 1
    segments, rebuilt = [], None
    for i, base in enumerate(bases):
        missing = [
            kind for kind in (INDEX_SUFFIX, TIME_INDEX_SUFFIX) if f"{base:020d}{kind}" not in names
        ]
        segment = Segment(
            directory,
            base,
            config,
            clock,
            roll_jitter_ms=roll_jitter_ms(config, base),
            plugin_indexes=plugin_indexes,
        )
        next_base = bases[i + 1] if i + 1 < len(bases) else None
        if missing:
            logger.info("%s: %s missing for segment %d; rebuilding", directory, missing, base)
            recover_segment(segment, next_base)
            rebuilt = base if rebuilt is None else rebuilt
        elif i < recover_from:
            try:
                check_segment(segment)
            except IndexCorruptError as err:
                logger.warning("%s: %s; rebuilding the indexes of segment %d", directory, err, base)
                recover_segment(segment, next_base)
                rebuilt = base if rebuilt is None else rebuilt
        segments.append(segment)
    return segments, rebuilt


def _recover_unflushed(
    directory: str, segments: list[Segment], recovery_point: int, compacted: bool
) -> int | None:
    """Recover each segment from the one holding the recovery point on (DUR-2, DUR-3).

    The first segment that loses bytes ends the log: everything after it goes, so the
    recovered log is a prefix of the one before the crash. An OS crash can also drop an
    unflushed segment's tail exactly at a batch boundary, leaving nothing to cut but a
    hole before the next segment's base offset; without compaction (whose gaps are
    legitimate) that hole ends the log too.
    """
    bases = [s.base_offset for s in segments]
    first = max(bisect.bisect_right(bases, recovery_point) - 1, 0)
    if first >= len(segments):
        return None
    for i in range(first, len(segments)):
        segment = segments[i]
        logger.info("%s: recovering unflushed segment %d", directory, segment.base_offset)
        next_base = segments[i + 1].base_offset if i + 1 < len(segments) else None
        truncated = recover_segment(segment, next_base)
        hole = not compacted and next_base is not None and segment.next_offset != next_base
        if truncated or hole:
            later = segments[i + 1 :]
            if later:
                logger.warning(
                    "%s: segment %d lost data; deleting %d later segments",
                    directory,
                    segment.base_offset,
                    len(later),
                )
            for dropped in later:
                dropped.delete()
            del segments[i + 1 :]
            break
    return segments[first].base_offset
