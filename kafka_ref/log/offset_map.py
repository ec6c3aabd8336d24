"""The cleaner's offset map: key -> offset of the key's latest record, in bounded memory.

Compaction needs one fact per key: "which offset holds your latest record?". The cleaner
scans the dirty part of the log once, writing `map[key] = offset` for every keyed record
(later records overwrite earlier ones), and then keeps a record only if its offset is the
one the map holds (COMPACT-1).

A real log holds millions of keys with values of any size, so Kafka's map does not store
keys at all. `SkimpyOffsetMap` (Kafka: `kafka.log.SkimpyOffsetMap`) is one preallocated
byte array of fixed-size slots:

    slot = MD5(key) (16 bytes) | offset (int64, 8 bytes)          24 bytes per slot

A key is hashed with MD5 and the digest is the slot's identity; the slot index comes from
the digest's bytes, with open addressing (the next probe reads the next 4 bytes of the
digest, then counts up) on collision. Two different keys with the same 16-byte digest
would be merged: Kafka accepts that risk (about 2^-64 for a billion keys), and so does
this module. An all-zero slot means "empty".

The map's memory is fixed (`log.cleaner.dedupe.buffer.size`, 128 MiB shared by all
cleaner threads in Kafka) and it is only filled to a load factor
(`log.cleaner.io.buffer.load.factor`, 0.9) so probes stay short. When it is full the
cleaner stops reading, and cleans only up to `latest_offset`: the rest of the dirty log
waits for the next round (COMPACT-5). That is why `latest_offset` exists: it is the last
offset the map has *seen* (keyed or not), the end of what this round may clean.

*What* the map holds is one pure function, `build_offset_map`: given the dirty section's
batches in offset order, the key -> latest offset dict and the last offset covered, stopping
when the map would exceed its capacity. *How* Kafka holds it in bounded memory is
`SkimpyOffsetMap`, which the cleaner fills from that dict. (The dict holds the keys
themselves, at most the map's capacity of them, for the length of one scan: the price of a
rule a student can write as a plain function.) `build_offset_map` is a seam
(kafka_ref/seams.py): lab 08 (labs/08-compaction) replaces it with a student's code.

Rules: COMPACT-1, COMPACT-5 (with cleaner.py).
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Iterable, Sequence

from kafka_ref.seams import seam

HASH_SIZE = 16  # MD5 digest
BYTES_PER_ENTRY = HASH_SIZE + 8
DEFAULT_MEMORY = 4 * 1024 * 1024  # Kafka's default is 128 MiB for all cleaner threads
DEFAULT_LOAD_FACTOR = 0.9

_OFFSET = struct.Struct(">q")
_PROBE = struct.Struct(">i")
_EMPTY = bytes(BYTES_PER_ENTRY)


MappedBatch = tuple[int, Sequence[tuple[int, "bytes | None"]]]
"""One batch as the map sees it: (last offset, [(offset, key), ...]); a control batch (a
transaction marker) has no records to map."""


@seam
def build_offset_map(
    batches: Iterable[MappedBatch], start: int, max_keys: int
) -> tuple[dict[bytes, int], int]:
    """The cleaner's offset map over the dirty section (Kafka `Cleaner.buildOffsetMap`).

    `batches`: the dirty section's batches in offset order, from the one holding `start`,
    each `(last_offset, records)` with `records` the batch's `(offset, key)` pairs in order.
    Returns `(offsets, latest)`: `offsets[key]` is the offset of the key's last record at or
    after `start` (a record before `start` is already clean; a record with no key is not
    mapped); `latest` is the last offset the map covers, -1 if it covers nothing: after
    each whole batch, that batch's last offset (so a batch's gaps and markers are covered).

    The map holds at most `max_keys` keys. Before mapping each keyed record, if the map
    already holds `max_keys` keys, stop at once (even if that key is mapped already, as
    Kafka does) and return what was mapped, with `latest` the last offset mapped: the round
    cleans only up to there, and the rest waits for the next round (COMPACT-5). Read the
    batches lazily: a full map must not read the rest of the log.
    """
    offsets: dict[bytes, int] = {}
    latest = -1
    for last_offset, records in batches:
        for offset, key in records:
            if key is None or offset < start:
                continue
            if len(offsets) >= max_keys:  # Kafka: size >= slots x load factor
                return offsets, latest
            offsets[key] = offset
            latest = offset
        latest = last_offset
    return offsets, latest


class OffsetMapFullError(RuntimeError):
    """A put of a new key into a map whose slots are all used."""


class SkimpyOffsetMap:
    """An open-addressing hash table of (MD5(key), offset) slots in one bytearray."""

    def __init__(self, memory: int = DEFAULT_MEMORY, load_factor: float = DEFAULT_LOAD_FACTOR):
        self.slots = memory // BYTES_PER_ENTRY
        if self.slots < 1:
            raise ValueError(f"{memory} bytes cannot hold one {BYTES_PER_ENTRY}-byte slot")
        self.load_factor = load_factor
        self._bytes = bytearray(self.slots * BYTES_PER_ENTRY)
        self.size = 0  # slots in use
        self.lookups = 0
        self.probes = 0
        self._latest_offset = -1

    # ---------------------------------------------------------------- geometry
    @property
    def max_desired_size(self) -> int:
        """Entries the cleaner puts before it calls the map full (slots x load factor)."""
        return max(1, int(self.slots * self.load_factor))

    @property
    def is_full(self) -> bool:
        return self.size >= self.max_desired_size

    @property
    def utilization(self) -> float:
        return self.size / self.slots

    @property
    def latest_offset(self) -> int:
        """The last offset put or seen; -1 for an empty map."""
        return self._latest_offset

    def update_latest_offset(self, offset: int) -> None:
        """Record that the scan has read up to `offset` (a batch's last offset)."""
        self._latest_offset = offset

    # ---------------------------------------------------------------- hashing
    @staticmethod
    def _hash(key: bytes) -> bytes:
        return hashlib.md5(key, usedforsecurity=False).digest()

    def _position_of(self, digest: bytes, attempt: int) -> int:
        """Kafka's probe sequence: 4 digest bytes at `attempt` (capped), plus the overflow."""
        (probe,) = _PROBE.unpack_from(digest, min(attempt, HASH_SIZE - 4))
        probe += max(0, attempt - HASH_SIZE + 4)
        self.probes += 1
        return (abs(probe) % self.slots) * BYTES_PER_ENTRY

    # ---------------------------------------------------------------- operations
    def put(self, key: bytes, offset: int) -> None:
        """Map `key` to `offset` (a later put for the same key overwrites)."""
        self.lookups += 1
        digest = self._hash(key)
        pos, found = self._find(digest)
        if not found:
            if self.size >= self.slots:
                raise OffsetMapFullError("attempt to add a new key to a full offset map")
            self._bytes[pos : pos + HASH_SIZE] = digest
            self.size += 1
        _OFFSET.pack_into(self._bytes, pos + HASH_SIZE, offset)
        self._latest_offset = offset

    def _find(self, digest: bytes) -> tuple[int, bool]:
        """(position, found): the slot holding `digest`, else the first empty slot probed.

        The probe sequence visits every slot within `slots + 12` attempts, so a map that
        is not full always ends on an empty slot.
        """
        for attempt in range(self.slots + HASH_SIZE):
            pos = self._position_of(digest, attempt)
            if self._bytes[pos : pos + HASH_SIZE] == digest:
                return pos, True
            if self._bytes[pos : pos + BYTES_PER_ENTRY] == _EMPTY:
                return pos, False
        return -1, False

    def get(self, key: bytes) -> int:
        """The offset of `key`'s latest record, or -1 when the key is not in the map."""
        self.lookups += 1
        pos, found = self._find(self._hash(key))
        if not found:
            return -1
        return _OFFSET.unpack_from(self._bytes, pos + HASH_SIZE)[0]

    def __contains__(self, key: bytes) -> bool:
        return self.get(key) >= 0

    def __len__(self) -> int:
        return self.size

    def clear(self) -> None:
        """Empty the map for the next log (Kafka zeroes its buffer; a fresh zeroed
        bytearray of the same size is the fast way to do that in Python)."""
        self._bytes = bytearray(len(self._bytes))
        self.size = 0
        self.lookups = 0
        self.probes = 0
        self._latest_offset = -1
