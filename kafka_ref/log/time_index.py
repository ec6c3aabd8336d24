"""The time index: from a timestamp to the offset where records at or after it may start.

ListOffsets asks "which offset did the log have at 09:00 yesterday?", and time-based
retention asks "is every record in this segment older than 7 days?". Each segment answers
both with a `.timeindex` file (Kafka's `TimeIndex`), a sparse index beside the offset index.

On disk (TIDX-1), an array of 12-byte big-endian entries, preallocated and memory-mapped
exactly like the offset index (see abstract_index.py):

    0   timestamp       int64   the largest record timestamp seen so far in the segment
    8   relativeOffset  int32   offset of the batch holding it - the segment's base offset

An entry (T, o) means "no record before o's batch has a timestamp above T", so a record with
a timestamp > T can only come after o. Record timestamps are the producer's and need not
increase, which is why the index records the running *maximum*: an entry is appended only
when its timestamp is greater than the last entry's (TIDX-2), making timestamps strictly
increasing and offsets non-decreasing, and a binary search valid.

A lookup returns the greatest entry whose timestamp is <= the target, or (-1, base offset)
when there is none (TIDX-3); the segment then scans forward from the offset index's
position for that offset. Kafka appends a time index entry together with each offset index
entry, plus one final entry for the segment's largest timestamp when the segment stops
being active; the index counts as full one slot early to keep room for that entry (TIDX-4).

Rules: TIDX-1, TIDX-2, TIDX-3, TIDX-4.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from kafka_ref.log.abstract_index import AbstractIndex, InvalidIndexEntryError
from kafka_ref.log.offset_index import warm_largest_lower_bound

NO_TIMESTAMP = -1


class TimestampOffset(NamedTuple):
    timestamp: int
    offset: int


_ENTRY = struct.Struct(">qi")
_LONG = struct.Struct(">q")
_INT = struct.Struct(">i")


class TimeIndex(AbstractIndex):
    """A segment's `.timeindex` file (Kafka: `TimeIndex`)."""

    entry_size = 12
    _struct = _ENTRY

    def _after_load(self) -> None:
        self._last = self._read_last_entry()

    _key_struct = _LONG

    def _relative_offset(self, slot: int) -> int:
        return _INT.unpack_from(self._mm, slot * 12 + 8)[0]

    def _check_order(self, previous: tuple | None, entry: tuple) -> bool:
        if previous is None:
            return entry[1] >= 0
        return entry[0] > previous[0] and entry[1] >= previous[1]

    def is_full(self) -> bool:
        # One slot stays free for the largest-timestamp entry written at roll/close.
        return self._entries >= self.max_entries - 1

    @property
    def free_entries(self) -> int:
        return max(self.max_entries - 1 - self._entries, 0)

    def entry(self, slot: int) -> TimestampOffset:
        if not 0 <= slot < self._entries:
            raise IndexError(f"slot {slot} of a time index with {self._entries} entries")
        timestamp, relative = _ENTRY.unpack_from(self._mm, slot * 12)
        return TimestampOffset(timestamp, self.base_offset + relative)

    def _read_last_entry(self) -> TimestampOffset:
        if self._entries == 0:
            return TimestampOffset(NO_TIMESTAMP, self.base_offset)
        return self.entry(self._entries - 1)

    def last_entry(self) -> TimestampOffset:
        return self._last

    def lookup(self, target_timestamp: int) -> TimestampOffset:
        """The greatest entry with timestamp <= target, or (-1, base offset) if none."""
        slot = warm_largest_lower_bound(
            self._key_at, self._entries, self.entry_size, target_timestamp
        )
        if slot < 0:
            return TimestampOffset(NO_TIMESTAMP, self.base_offset)
        return self.entry(slot)

    def maybe_append(self, timestamp: int, offset: int, skip_full_check: bool = False) -> bool:
        """Append (timestamp, offset) if the timestamp is greater than the last entry's.

        `skip_full_check` is for the final entry at roll or close, which uses the reserved
        slot. Returns whether an entry was written.
        """
        if not skip_full_check and self.is_full():
            raise InvalidIndexEntryError(f"time index {self.path} is full")
        last = self._last
        if self._entries and offset < last.offset:
            raise InvalidIndexEntryError(
                f"offset {offset} is below the last time index offset {last.offset}"
            )
        if self._entries and timestamp < last.timestamp:
            raise InvalidIndexEntryError(
                f"timestamp {timestamp} is below the last indexed timestamp {last.timestamp}"
            )
        if timestamp <= last.timestamp or self._entries >= self.max_entries:
            return False
        _ENTRY.pack_into(self._mm, self._entries * 12, timestamp, self.relative_offset(offset))
        self._entries += 1
        self._last = TimestampOffset(timestamp, offset)
        return True
