"""The sparse offset index: from an offset to a byte position in the segment's `.log` file.

A consumer asks for offset 1 234 567. The segment's `.log` file is a gigabyte of batches
with no fixed size, so where do the bytes start? Kafka keeps, next to each `.log`, an
`.index` file (Kafka's `OffsetIndex`) that answers "roughly where": one entry every
`index.interval.bytes` (4096 by default) of appended data, mapping an offset to the file
position of a batch. A lookup finds the greatest entry <= the target by binary search, and
the segment then scans forward over batch *headers* (never records) from that position
(INDEX-5). The index is *sparse*: one entry per ~4 KiB costs 8 bytes, so a 1 GiB segment
needs a 2 MiB index, small enough to stay in the page cache. The search is
`largest_lower_bound`, the time index's too; `warm_largest_lower_bound` wraps it with
Kafka's cache optimisation (search the end of the file first).

On disk (INDEX-1), an array of 8-byte big-endian entries, preallocated to
`segment.index.bytes` (rounded down to a multiple of 8) and memory-mapped:

    0   relativeOffset  int32   offset - the segment's base offset (the file name)
    4   position        int32   byte position of a batch in the .log file

Storing the offset relative to the base offset halves the entry; it is also why a segment
must roll before its offsets span more than 2^31 (SEG-5). Entries strictly increase in both
offset and position (INDEX-2). A lookup below the first entry answers (base offset, 0): the
start of the segment (INDEX-3).

Kafka's entries map the *largest* offset of an append to the position where that append
starts (see segment.py); the lookup is still correct because the entry's position is a
batch boundary at or before the batch holding any offset >= the entry's offset.

Rules: INDEX-1, INDEX-2, INDEX-3, INDEX-6, INDEX-7.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import NamedTuple

from kafka_ref.log.abstract_index import AbstractIndex, InvalidIndexEntryError
from kafka_ref.seams import seam


class OffsetPosition(NamedTuple):
    """An offset and the file position of the batch to start scanning from."""

    offset: int
    position: int


_ENTRY = struct.Struct(">ii")
_INT = struct.Struct(">i")
WARM_BYTES = 8192  # the tail of an index that appends and most lookups touch


@seam
def largest_lower_bound(key_at: Callable[[int], int], target: int, lo: int, hi: int) -> int:
    """The sparse index's lookup: the greatest slot in lo..hi whose key is <= `target`.

    Keys increase with slots (INDEX-2, TIDX-2), so "key <= target" is true and then false
    along the slots, and halving the range finds where it turns: O(log n) reads of the
    file. Returns lo - 1 when every key in the range is above `target` (-1 for the whole
    index: the target comes before the first entry, INDEX-3).
    """
    while lo <= hi:
        mid = (lo + hi) // 2
        if key_at(mid) <= target:
            lo = mid + 1
        else:
            hi = mid - 1
    return hi


@seam
def needs_index_entry(bytes_since_last_entry: int, index_interval_bytes: int) -> bool:
    """The sparse index's entry rule (INDEX-4): a batch gets an entry, pointing at its start,
    when more than `index.interval.bytes` were appended since the last entry. Appends and
    recovery both ask it, so an index rebuilt from the log equals the one appends wrote."""
    return bytes_since_last_entry > index_interval_bytes


def warm_largest_lower_bound(
    key_at: Callable[[int], int], entries: int, entry_size: int, target: int
) -> int:
    """`largest_lower_bound` over `entries` slots, searching the warm tail first.

    The last WARM_BYTES of entries are the pages appends and keeping-up consumers touch.
    When the target is at or past the first warm entry, the search stays in the warm tail,
    and a lookup near the end never reads a cold page (Kafka KAFKA-6430); otherwise it
    searches the rest. The answer is the same either way.
    """
    first_warm = max(0, entries - 1 - WARM_BYTES // entry_size)
    if entries and key_at(first_warm) <= target:
        return largest_lower_bound(key_at, target, first_warm, entries - 1)
    return largest_lower_bound(key_at, target, 0, first_warm - 1)


class OffsetIndex(AbstractIndex):
    """A segment's `.index` file (Kafka: `OffsetIndex`)."""

    entry_size = 8
    _struct = _ENTRY

    def _after_load(self) -> None:
        last = self.last_entry()
        self._last_offset, self._last_position = last.offset, last.position

    _key_struct = _INT

    def _relative_offset(self, slot: int) -> int:
        return _INT.unpack_from(self._mm, slot * 8)[0]

    def _check_order(self, previous: tuple | None, entry: tuple) -> bool:
        if previous is None:
            return entry[0] >= 0 and entry[1] >= 0
        return entry[0] > previous[0] and entry[1] > previous[1]

    def entry(self, slot: int) -> OffsetPosition:
        if not 0 <= slot < self._entries:
            raise IndexError(f"slot {slot} of an index with {self._entries} entries")
        relative, position = _ENTRY.unpack_from(self._mm, slot * 8)
        return OffsetPosition(self.base_offset + relative, position)

    def last_entry(self) -> OffsetPosition:
        if self._entries == 0:
            return OffsetPosition(self.base_offset, 0)
        return self.entry(self._entries - 1)

    @property
    def last_offset(self) -> int:
        return self._last_offset

    def lookup(self, target_offset: int) -> OffsetPosition:
        """The greatest entry with offset <= target, or (base offset, 0) when there is none."""
        slot = warm_largest_lower_bound(
            self._key_at, self._entries, self.entry_size, target_offset - self.base_offset
        )
        if slot < 0:
            return OffsetPosition(self.base_offset, 0)
        return self.entry(slot)

    def lookup_by_position(self, position: int) -> OffsetPosition:
        """The greatest entry with position <= `position` (its position is a batch start).

        Positions increase with offsets, so the same binary search works on them; a read
        uses this to find a batch boundary near its size limit without scanning from the
        start of the read.
        """
        lo, hi = 0, self._entries - 1
        found = -1
        while lo <= hi:
            mid = (lo + hi) // 2
            if _ENTRY.unpack_from(self._mm, mid * 8)[1] <= position:
                found, lo = mid, mid + 1
            else:
                hi = mid - 1
        return self.entry(found) if found >= 0 else OffsetPosition(self.base_offset, 0)

    def append(self, offset: int, position: int) -> None:
        """Add an entry; offset and position must both exceed the last entry's (INDEX-2)."""
        if self.is_full():
            raise InvalidIndexEntryError(f"index {self.path} is full ({self._entries} entries)")
        if self._entries and (offset <= self._last_offset or position <= self._last_position):
            raise InvalidIndexEntryError(
                f"entry ({offset}, {position}) does not follow "
                f"({self._last_offset}, {self._last_position}) in {self.path}"
            )
        _ENTRY.pack_into(self._mm, self._entries * 8, self.relative_offset(offset), position)
        self._entries += 1
        self._last_offset, self._last_position = offset, position
