"""The machinery both segment indexes share: a preallocated, memory-mapped file of entries.

A segment's `.index` and `.timeindex` files are arrays of fixed-size entries, sorted, so a
lookup is a binary search. Kafka's `AbstractIndex` gives both the same life cycle, and so
does this class:

* **Preallocate.** A new index file is created at `segment.index.bytes`, rounded down to a
  whole number of entries, and filled with zeros. The file never grows while the segment is
  active, so `is_full` is simply "every slot used", which is one of the reasons a segment
  rolls (SEG-5).
* **Memory-map.** The file is mapped with `mmap`: an append writes a few bytes into the
  page cache through the map, with no system call; a lookup reads the map. Nothing of the
  index lives in Python objects, so a million entries cost no Python memory. The map
  holds no file descriptor (file_map.py: Python's own `mmap` keeps one per map) and is
  advised random access (`madvise(MADV_RANDOM)`, INDEX-8): the kernel otherwise answers
  the first touch of a page by reading the pages around it too (`read_ahead_kb`, 8 MiB on
  some virtual disks), which for a preallocated file means zero-filling megabytes of page
  cache per new segment. An append touches one page and a binary search a few scattered
  ones, so reading around them only costs: with thousands of partitions, each new
  segment's first append took milliseconds.
* **Trim.** When the segment stops being active (roll or close) the file is cut to the bytes
  its entries use (INDEX-6). A closed segment's index file is exactly `entries * size` bytes.
* **Zero tail.** Every byte after the last entry is zero; truncation zeroes what it drops.
  That is what lets a preallocated index be reopened after a crash: the entries are the
  prefix up to the last non-zero slot (the first entry alone may legitimately be all zeros).
  Kafka instead counts `size / entry_size` entries and always rebuilds an active segment's
  index after an unclean shutdown; kafka-ref does both.
* **Warm section.** Appends and most lookups (consumers that keep up) touch the end of the
  file, so a lookup searches the last 8 KiB of entries first: those pages stay hot in the
  page cache and a tail lookup never faults in cold pages (Kafka KAFKA-6430). The search
  itself, and this wrapper around it, are in offset_index.py.

Nothing in an index is checksummed. It is a cache of facts that the `.log` file holds, so a
missing or corrupt index is simply rebuilt from the log (INDEX-7, DUR-4).

Rules: INDEX-1, INDEX-6, INDEX-7, INDEX-8 (with offset_index.py), TIDX-1 (with time_index.py).
"""

from __future__ import annotations

import contextlib
import os
from typing import ClassVar

from kafka_ref.errors import InvalidConfigError, KafkaStorageError
from kafka_ref.log.file_map import FileMap


class IndexCorruptError(KafkaStorageError):
    """An index file fails its sanity check (Kafka: CorruptIndexException). Rebuild it."""


class IndexOffsetOverflowError(ValueError):
    """An offset cannot be stored relative to the segment base in 4 bytes."""


class InvalidIndexEntryError(ValueError):
    """An append would break the index's ordering (Kafka: InvalidOffsetException)."""


class AbstractIndex:
    """A sorted array of fixed-size entries in a memory-mapped, preallocated file."""

    entry_size: ClassVar[int]

    def __init__(self, path: str | os.PathLike, base_offset: int, max_index_size: int) -> None:
        self.path = os.fspath(path)
        self.base_offset = base_offset
        self.max_index_size = max_index_size
        self._file_map: FileMap | None = None  # the mapping (file_map.py)
        self._mm = None  # its bytes: a writable buffer for struct.pack_into / unpack_from
        newly_created = not os.path.exists(self.path)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            if newly_created:
                size = self._round_down(max_index_size)
                if size < self.entry_size:
                    raise InvalidConfigError(
                        f"segment.index.bytes {max_index_size} cannot hold one "
                        f"{self.entry_size}-byte entry of {os.path.basename(self.path)}"
                    )
                os.ftruncate(fd, size)  # a hole of zeros: preallocated space
            self._length = os.fstat(fd).st_size
            self._map(fd)
        finally:
            os.close(fd)
        self._entries = 0 if newly_created else self._count_entries()
        self._after_load()

    # ----------------------------------------------------------------- subclass hooks
    def _after_load(self) -> None:
        """Cache whatever the subclass keeps about its last entry."""

    # The value lookups search by, at the start of each entry: the relative offset (int32)
    # for OffsetIndex, the timestamp (int64) for TimeIndex.
    _key_struct: ClassVar = None

    def _relative_offset(self, slot: int) -> int:
        raise NotImplementedError

    def _check_order(self, previous: tuple | None, entry: tuple) -> bool:
        """True when `entry` may follow `previous` (raw tuples as stored; None: first)."""
        raise NotImplementedError

    _struct: ClassVar = None  # a struct.Struct of one entry

    # ----------------------------------------------------------------- geometry
    @classmethod
    def _round_down(cls, size: int) -> int:
        return size - size % cls.entry_size

    @property
    def entries(self) -> int:
        return self._entries

    @property
    def max_entries(self) -> int:
        return self._length // self.entry_size

    @property
    def length(self) -> int:
        """The file's size in bytes (preallocated space included)."""
        return self._length

    @property
    def size_in_bytes(self) -> int:
        """Bytes the entries use."""
        return self._entries * self.entry_size

    def is_full(self) -> bool:
        return self._entries >= self.max_entries

    @property
    def free_entries(self) -> int:
        """Entries an append may still add (0 when `is_full`)."""
        return max(self.max_entries - self._entries, 0)

    def relative_offset(self, offset: int) -> int:
        relative = offset - self.base_offset
        if not 0 <= relative <= 0x7FFFFFFF:
            raise IndexOffsetOverflowError(
                f"offset {offset} does not fit 4 bytes relative to base {self.base_offset}"
            )
        return relative

    def can_append_offset(self, offset: int) -> bool:
        return 0 <= offset - self.base_offset <= 0x7FFFFFFF

    # ----------------------------------------------------------------- file handling
    def _map(self, fd: int) -> None:
        # An empty file cannot be mapped: a trimmed index with no entries has no map. The
        # map holds no descriptor and is advised random access (file_map.py, INDEX-8).
        self._file_map = FileMap(fd, self._length) if self._length else None
        self._mm = self._file_map.buffer if self._file_map else None

    def _unmap(self) -> None:
        if self._file_map is not None:
            self._mm = None  # first: nothing may touch the bytes once they are unmapped
            self._file_map.close()
            self._file_map = None

    def _raw(self, slot: int) -> tuple:
        return self._struct.unpack_from(self._mm, slot * self.entry_size)

    def _slot_is_zero(self, slot: int) -> bool:
        start = slot * self.entry_size
        return self._mm[start : start + self.entry_size] == bytes(self.entry_size)

    def _count_entries(self) -> int:
        """Entries in an existing file: everything up to the last non-zero slot.

        Preallocated space is a zero suffix, so "slot is non-zero" is true then false over
        slots 1..n-1 and a binary search finds the boundary. Slot 0 is special: a
        legitimate first entry may be all zeros (relative offset 0, position 0).
        """
        slots = self._length // self.entry_size
        if slots == 0:
            return 0
        lo, hi, last = 1, slots - 1, 0
        while lo <= hi:
            mid = (lo + hi) // 2
            if self._slot_is_zero(mid):
                hi = mid - 1
            else:
                last, lo = mid, mid + 1
        if last:
            return last + 1
        return 0 if self._slot_is_zero(0) else 1

    def sanity_check(self) -> None:
        """Raise IndexCorruptError unless the file is whole entries, in order, then zeros."""
        name = os.path.basename(self.path)
        if self._length % self.entry_size:
            raise IndexCorruptError(
                f"index {name} has {self._length} bytes, not a multiple of {self.entry_size}"
            )
        if self._mm is None:
            return
        used = self._entries * self.entry_size
        previous = None
        for entry in self._struct.iter_unpack(self._mm[:used]):
            if not self._check_order(previous, entry):
                raise IndexCorruptError(f"index {name}: entry {entry} does not follow {previous}")
            previous = entry
        if self._mm[used:].count(0) != self._length - used:
            raise IndexCorruptError(f"index {name} has bytes after its last entry")

    def resize(self, new_size: int) -> bool:
        """Set the file (and map) to `new_size` rounded down to whole entries."""
        rounded = self._round_down(new_size)
        if rounded == self._length:
            return False
        self._unmap()
        fd = os.open(self.path, os.O_RDWR | os.O_CLOEXEC)
        try:
            os.ftruncate(fd, rounded)  # growing adds zeros: the zero-tail rule holds
            self._length = rounded
            self._map(fd)
        finally:
            os.close(fd)
        if self._entries > self.max_entries:
            # Shrinking dropped entries: the cached last entry must be read again.
            self._entries = self.max_entries
            self._after_load()
        return True

    def trim_to_valid_size(self) -> None:
        self.resize(self.size_in_bytes)

    def _truncate_to_entries(self, entries: int) -> None:
        if entries < self._entries:
            # Zero what we drop, so that a reopen (after a crash) does not count it again.
            start, end = entries * self.entry_size, self._entries * self.entry_size
            self._mm[start:end] = bytes(end - start)
        self._entries = entries
        self._after_load()

    def reset(self) -> None:
        """Drop every entry and grow back to the maximum size (recovery rebuilds from here)."""
        self._truncate_to_entries(0)
        self.resize(self.max_index_size)

    def truncate_to(self, offset: int) -> None:
        """Remove every entry whose offset is >= `offset`."""
        relative = offset - self.base_offset
        lo, hi = 0, self._entries  # first slot with relative offset >= target
        while lo < hi:
            mid = (lo + hi) // 2
            if self._relative_offset(mid) < relative:
                lo = mid + 1
            else:
                hi = mid
        self._truncate_to_entries(lo)

    def _key_at(self, slot: int) -> int:
        """The key lookups search by, of one slot: see `_key_struct`."""
        return self._key_struct.unpack_from(self._mm, slot * self.entry_size)[0]

    def flush(self) -> None:
        if self._file_map is not None:
            self._file_map.flush()

    def close_handler(self) -> None:
        """Unmap without trimming (the disk may have failed, or the file is being deleted)."""
        self._unmap()

    def close(self) -> None:
        self.trim_to_valid_size()
        self.close_handler()

    def rename_to(self, path: str | os.PathLike) -> None:
        os.replace(self.path, path)  # the map follows the inode, not the name
        self.path = os.fspath(path)

    def delete(self) -> None:
        self.close_handler()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)
