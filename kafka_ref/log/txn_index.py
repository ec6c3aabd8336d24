"""The aborted transaction index: which transactions in a segment were aborted, and where.

A read_committed consumer must drop the records of aborted transactions. The records
themselves do not say so: only the ABORT marker, written later, does, and it may be far
behind them in the log, even in a later fetch. So the broker hands the consumer, with each
fetch, the list of aborted transactions that overlap the fetched range (producer id and
first offset); the consumer drops that producer's transactional batches from the first
offset on until it meets the producer's ABORT marker (kafka_ref/client/consumer_fetch.py).

Finding that list by scanning the log would cost a read of every batch. Kafka keeps, per
segment, a `.txnindex` file (Kafka: `TransactionIndex`, `AbortedTxn`): one entry per
transaction whose ABORT marker is in that segment, appended when the marker is appended.
Each entry is 34 bytes, big-endian:

    0   version           int16   0
    2   producerId        int64
    10  firstOffset       int64   the transaction's first offset in this partition
    18  lastOffset        int64   the offset of its ABORT marker
    26  lastStableOffset  int64   the partition's LSO once this transaction completed

Entries are in marker order, so their last offsets increase (TXN-6). Unlike the offset
and time indexes the file is not preallocated or memory-mapped: it is created at its first
entry and grows by appends; most segments never get one. Like them it is derived data:
recovery rebuilds it from the markers in the log (TXN-7).

The segment (segment.py) does not know this file: the producer state of a log with
transactions hands it to every segment as one of its plug-in files (`TXN_SEGMENT_INDEXES`),
which the segment truncates, flushes, renames and deletes with its own; the producer state
and the readers find it again with `transaction_index(segment)`.

`collect_aborted` answers one segment's part of a fetch: entries whose range
[firstOffset, lastOffset] overlaps [fetch offset, upper bound). It also says whether the
search can stop: once an entry's lastStableOffset reaches the upper bound, no transaction
aborted in a later segment can have started below the bound (Kafka:
`TransactionIndex.collectAbortedTxns`, `TxnIndexSearchResult`).

Rules: TXN-6, TXN-7.
"""

from __future__ import annotations

import contextlib
import os
import struct
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kafka_ref.log.abstract_index import IndexCorruptError

if TYPE_CHECKING:
    from kafka_ref.log.segment import Segment, SegmentIndexes

_ENTRY = struct.Struct(">hqqqq")
ENTRY_SIZE = _ENTRY.size  # 34
CURRENT_VERSION = 0
TXN_INDEX_SUFFIX = ".txnindex"


class CorruptTxnIndexError(IndexCorruptError):
    """A `.txnindex` that cannot be trusted (Kafka: CorruptIndexException): rebuild it."""


@dataclass(frozen=True, slots=True)
class AbortedTxn:
    """One entry of the index (Kafka: `AbortedTxn`)."""

    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int

    def encode(self) -> bytes:
        return _ENTRY.pack(
            CURRENT_VERSION,
            self.producer_id,
            self.first_offset,
            self.last_offset,
            self.last_stable_offset,
        )


class TransactionIndex:
    """A segment's `.txnindex` file (Kafka: `TransactionIndex`). Not thread-safe."""

    def __init__(self, path: str | os.PathLike, base_offset: int) -> None:
        self.path = os.fspath(path)
        self.base_offset = base_offset
        self._entries: list[AbortedTxn] = self._read() if os.path.exists(self.path) else []

    def _read(self) -> list[AbortedTxn]:
        with open(self.path, "rb") as f:
            data = f.read()
        entries = []
        for pos in range(0, len(data) - len(data) % ENTRY_SIZE, ENTRY_SIZE):
            version, *fields = _ENTRY.unpack_from(data, pos)
            if version != CURRENT_VERSION:
                raise CorruptTxnIndexError(f"{self.path}: entry version {version} at {pos}")
            entries.append(AbortedTxn(*fields))
        return entries

    @property
    def entries(self) -> list[AbortedTxn]:
        return list(self._entries)

    @property
    def last_offset(self) -> int | None:
        return self._entries[-1].last_offset if self._entries else None

    def append(self, txn: AbortedTxn) -> None:
        """Add an entry; its last offset must exceed the last entry's (TXN-6)."""
        if self._entries and txn.last_offset <= self._entries[-1].last_offset:
            raise ValueError(
                f"{self.path}: aborted txn ending at {txn.last_offset} does not follow "
                f"{self._entries[-1].last_offset}"
            )
        with open(self.path, "ab") as f:
            f.write(txn.encode())
        self._entries.append(txn)

    def collect_aborted(self, fetch_offset: int, upper_bound: int) -> tuple[list[AbortedTxn], bool]:
        """Entries overlapping [fetch_offset, upper_bound), and whether the search is done."""
        found = []
        for txn in self._entries:
            if txn.last_offset >= fetch_offset and txn.first_offset < upper_bound:
                found.append(txn)
            if txn.last_stable_offset >= upper_bound:
                return found, True
        return found, False

    def truncate_to(self, offset: int) -> None:
        """Drop the entries whose marker is at or after `offset` (log truncation)."""
        keep = [t for t in self._entries if t.last_offset < offset]
        if len(keep) != len(self._entries):
            self._entries = keep
            self._rewrite()

    def reset(self) -> None:
        """Forget every entry (recovery rebuilds them from the markers)."""
        self._entries = []
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)

    def sanity_check(self) -> None:
        """Raise CorruptTxnIndexError unless the file is whole entries in marker order."""
        if os.path.exists(self.path) and os.path.getsize(self.path) % ENTRY_SIZE:
            raise CorruptTxnIndexError(f"{self.path}: size is not a multiple of {ENTRY_SIZE}")
        lasts = [t.last_offset for t in self._entries]
        if lasts != sorted(set(lasts)) or (lasts and lasts[0] < self.base_offset):
            raise CorruptTxnIndexError(f"{self.path}: entries out of order")

    def _rewrite(self) -> None:
        if not self._entries:
            self.reset()
            return
        with open(self.path, "wb") as f:
            f.write(b"".join(t.encode() for t in self._entries))

    def flush(self) -> None:
        if os.path.exists(self.path):
            fd = os.open(self.path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)

    def rename_to(self, path: str | os.PathLike) -> None:
        path = os.fspath(path)
        if os.path.exists(self.path):
            os.replace(self.path, path)
        self.path = path

    def delete(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)


TXN_SEGMENT_INDEXES: SegmentIndexes = {TXN_INDEX_SUFFIX: TransactionIndex}


def transaction_index(segment: Segment) -> TransactionIndex:
    """The `.txnindex` of a segment of a log with transactions (Kafka: `LogSegment.txnIndex`)."""
    return segment.plugin_indexes[TXN_INDEX_SUFFIX]
