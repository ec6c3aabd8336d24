"""A segment's `.log` file: concatenated record batches, read and written by position.

The `.log` file of a segment is nothing but v2 record batches laid end to end, exactly as
producers sent them (with the base offset and leader epoch the broker stamped). There is
no file header, no per-file checksum and no padding: the file's size is the sum of its
batches' sizes. Kafka's class for it is `FileRecords`; this one keeps the same duties:

* **append** at the end with one `pwrite` of the caller's buffer: no copy into Python
  objects, no per-record work;
* **slice**: a (file, position, length) triple that the network layer hands to
  `os.sendfile`, so fetched bytes go from the page cache to the socket without entering
  Python (`FileSlice`);
* **header scans**: to find where an offset lives, walk from a known batch start reading
  only the first 27 bytes of each batch (base offset, length, magic, last offset delta),
  jumping over the records by the length field. The records are never decoded (SEG-8).

The descriptor belongs to this object and closes when it is closed or garbage-collected.
A deleted segment is unlinked, not closed: a `FileSlice` still being sent keeps the file
readable (POSIX unlink semantics) until its last reference goes.

Rules: SEG-8 (with segment.py).
"""

from __future__ import annotations

import contextlib
import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import NamedTuple

from kafka_ref.errors import CorruptRecordError, KafkaStorageError
from kafka_ref.record.batch import (
    HEADER_SIZE,
    HEADER_STRUCT,
    BatchHeader,
    RecordBatch,
    TimestampType,
    walk_batches,
)

# baseOffset, batchLength, partitionLeaderEpoch, magic, crc, attributes, lastOffsetDelta
_PREFIX = struct.Struct(">qiibIhi")


def pread_fully(fd: int, position: int, length: int) -> bytes:
    """Up to `length` bytes at `position` (fewer only at the end of the file)."""
    chunks, done = [], 0
    while done < length:
        chunk = os.pread(fd, length - done, position + done)
        if not chunk:
            break
        chunks.append(chunk)
        done += len(chunk)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


@dataclass(frozen=True, slots=True)
class BatchPosition:
    """Where a batch is and which offsets it holds (Kafka: `LogOffsetPosition`)."""

    position: int
    size: int
    base_offset: int
    last_offset: int

    @property
    def end(self) -> int:
        return self.position + self.size


class TimestampAndOffset(NamedTuple):
    """A ListOffsets answer: the record's timestamp, its offset, its batch's leader epoch."""

    timestamp: int
    offset: int
    leader_epoch: int


@dataclass(frozen=True, slots=True)
class FileSlice:
    """`length` bytes at `position` of an open segment file: whole batches, ready to send.

    `file.fileno()` is a descriptor for `os.sendfile(socket_fd, fd, position, length)`.
    `first_offset` is the base offset of the first batch, `next_offset` the offset after
    the last one (-1 for an empty slice).
    """

    file: FileRecords
    position: int
    length: int
    first_offset: int = -1
    next_offset: int = -1

    def read_bytes(self) -> bytes:
        return self.file.read(self.position, self.length)


@dataclass(frozen=True, slots=True)
class LogReadInfo:
    """What `Log.read` returns: slices of whole batches; `next_offset` is where a
    follow-up read should start."""

    fetch_offset: int
    first_offset: int  # base offset of the first batch returned, -1 if none
    next_offset: int
    slices: list[FileSlice] = field(default_factory=list)
    log_start_offset: int = 0
    log_end_offset: int = 0

    @property
    def size(self) -> int:
        return sum(s.length for s in self.slices)

    def read_bytes(self) -> bytes:
        return b"".join(s.read_bytes() for s in self.slices)


class FileRecords:
    """An open `.log` file with its size kept in memory."""

    __slots__ = ("_fd", "path", "size")

    def __init__(self, path: str | os.PathLike, *, create: bool = True) -> None:
        self.path = os.fspath(path)
        self._fd = -1  # so that __del__ is safe if the open fails
        flags = os.O_RDWR | os.O_CLOEXEC | (os.O_CREAT if create else 0)
        self._fd = os.open(self.path, flags, 0o644)
        self.size = os.fstat(self._fd).st_size

    def fileno(self) -> int:
        return self._fd

    # ------------------------------------------------------------------ raw I/O
    def append(self, data: bytes | bytearray | memoryview) -> int:
        """Write `data` at the end; on a disk error cut the partial write and raise."""
        view = memoryview(data)
        start, done = self.size, 0
        try:
            while done < len(view):
                done += os.pwrite(self._fd, view[done:], start + done)
        except OSError as err:
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, start)
            raise KafkaStorageError(f"write to {self.path} failed: {err}") from err
        self.size += done
        return done

    def read(self, position: int, length: int) -> bytes:
        return pread_fully(self._fd, position, length)

    def truncate_to(self, size: int) -> int:
        """Cut the file to `size` bytes; returns the number of bytes removed."""
        removed = self.size - size
        if removed > 0:
            os.ftruncate(self._fd, size)
            self.size = size
        return max(removed, 0)

    def flush(self) -> None:
        os.fsync(self._fd)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __del__(self) -> None:
        with contextlib.suppress(OSError):
            self.close()

    def rename_to(self, path: str | os.PathLike) -> None:
        os.replace(self.path, path)
        self.path = os.fspath(path)

    def slice(self, position: int, length: int, first: int = -1, nxt: int = -1) -> FileSlice:
        return FileSlice(self, position, length, first, nxt)

    # ------------------------------------------------------------------ header scans
    def batch_positions(self, start: int = 0, end: int | None = None) -> Iterator[BatchPosition]:
        """Each batch from `start` (a batch boundary) to `end`, read header-first.

        Reads 16 KiB at a time and decodes 27 bytes per batch. A header that does not look
        like a v2 batch, or a batch running past `end`, raises CorruptRecordError.
        """
        end = self.size if end is None else end
        try:
            for span in walk_batches(self.read, start, end, header=_PREFIX):
                base, _, _, _, _, _, delta = span.fields
                if delta < 0:
                    raise CorruptRecordError(f"lastOffsetDelta {delta} at position {span.position}")
                yield BatchPosition(span.position, span.size, base, base + delta)
        except CorruptRecordError as err:
            raise CorruptRecordError(f"no valid batch in {self.path}: {err}") from None

    def search_for_offset(self, target: int, start: int = 0) -> BatchPosition | None:
        """The first batch from `start` whose last offset is >= target (it holds target,
        or target fell in a gap before it). None when every batch ends below target."""
        for batch in self.batch_positions(start):
            if batch.last_offset >= target:
                return batch
        return None

    def header_at(self, position: int) -> BatchHeader:
        return BatchHeader.parse(self.read(position, HEADER_SIZE))

    def headers_from(self, start: int = 0) -> Iterator[tuple[int, BatchHeader]]:
        """(position, full 61-byte header) of each batch from `start` (a batch boundary).

        For timestamp searches and for rebuilding producer state: the headers are read a
        chunk at a time, the records never. A header that does not parse, or a batch
        running past the end of the file, raises CorruptRecordError.
        """
        try:
            for span in walk_batches(self.read, start, self.size, header=HEADER_STRUCT):
                yield span.position, BatchHeader(*span.fields)
        except CorruptRecordError as err:
            raise CorruptRecordError(f"no valid batch in {self.path}: {err}") from None

    def search_for_timestamp(
        self, timestamp: int, start: int, starting_offset: int
    ) -> TimestampAndOffset | None:
        """The first record at or after `starting_offset` whose timestamp is >= `timestamp`.

        Batches are skipped by their header's max timestamp; only the batch that must hold
        the answer is decoded (ListOffsets needs the exact record offset).
        """
        for pos, header in self.headers_from(start):
            if header.max_timestamp < timestamp or header.last_offset < starting_offset:
                continue
            for record in RecordBatch(self.read(pos, header.size)).records():
                # Under LogAppendTime a record's timestamp is its batch's max timestamp.
                ts = record.timestamp
                if header.timestamp_type == TimestampType.LOG_APPEND_TIME:
                    ts = header.max_timestamp
                if ts >= timestamp and record.offset >= starting_offset:
                    return TimestampAndOffset(ts, record.offset, header.partition_leader_epoch)
        return None
