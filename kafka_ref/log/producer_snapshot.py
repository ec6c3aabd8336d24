"""Producer state snapshots: `<offset>.snapshot` files in Kafka's format.

The producer state of a partition (producer_state.py) lives in memory, and it can always be
rebuilt by reading every batch header of the log. A long log makes that slow, so Kafka
writes the state to a *snapshot* file from time to time, named by the offset it covers up
to (exclusive), 20 digits like a segment (Kafka: `ProducerStateManager.writeSnapshot`,
`LogFileUtils.producerSnapshotFile`):

    <partition dir>/00000000000000368769.snapshot    the state of every batch below 368769

At startup the loader reads the newest snapshot that is not beyond the log end and replays
only the batch headers after it (IDEM-9).

**Format** (Kafka's, version 1, all big-endian; a Kafka broker reads kafka-ref's files):

    version        int16    1
    crc            uint32   CRC-32C of every byte after this field
    count          int32    number of entries
    entries, 46 bytes each:
      producer_id               int64
      epoch                     int16
      last_sequence             int32   of one batch
      last_offset               int64   of that batch (-1: the producer has no batch)
      offset_delta              int32   last offset - first offset of that batch
      timestamp                 int64   when that batch was appended
      coordinator_epoch         int32   of the producer's last transaction marker, or -1
      current_txn_first_offset  int64   first offset of its open transaction, or -1 (TXN-5)

Kafka writes one entry per producer: its *last* batch. So after a restart Kafka can
recognise only a retry of that last batch, not of the four before it. kafka-ref writes one
entry per *remembered* batch, oldest first, so that all five survive a restart (IDEM-10).
The layout is unchanged: a Kafka broker reading the file keeps the last entry it sees for
each producer id, which is the newest batch, exactly what it would have written itself.

A snapshot is written to `<name>.tmp`, fsynced and renamed over, so a reader sees a whole
file or none (a `.tmp` left by a crash is deleted at the next load); a file that is cut
short or fails its CRC raises `CorruptSnapshotError`, and the loader falls back to an
older snapshot or to the log itself.

Rules: IDEM-9, IDEM-10.
"""

from __future__ import annotations

import contextlib
import os
import re
import struct
from typing import NamedTuple

from crc32c import crc32c

from kafka_ref.errors import KafkaStorageError
from kafka_ref.files import write_atomically

SNAPSHOT_SUFFIX = ".snapshot"
SNAPSHOT_VERSION = 1
_NAME = re.compile(r"(\d{20})\.snapshot")
_TEMP = re.compile(r"\d{20}\.snapshot\.tmp")
_HEADER = struct.Struct(">hIi")  # version, crc, entry count
_ENTRY = struct.Struct(">qhiqiqiq")
_CRC_START = 6  # the CRC covers everything after version and crc


class CorruptSnapshotError(KafkaStorageError):
    """A snapshot file that cannot be trusted (Kafka: CorruptSnapshotException)."""


class SnapshotEntry(NamedTuple):
    """One entry of a snapshot file: a producer and one of its batches (or none)."""

    producer_id: int
    epoch: int
    last_sequence: int
    last_offset: int
    offset_delta: int
    timestamp: int
    coordinator_epoch: int = -1
    current_txn_first_offset: int = -1


def snapshot_path(directory: str, offset: int) -> str:
    return os.path.join(directory, f"{offset:020d}{SNAPSHOT_SUFFIX}")


def list_snapshots(directory: str) -> list[int]:
    """The offsets of the snapshot files in `directory`, ascending. A `.snapshot.tmp` left
    by a crash in the middle of a write is deleted: the snapshot it was to become is not."""
    offsets = []
    for name in os.listdir(directory):
        match = _NAME.fullmatch(name)
        path = os.path.join(directory, name)
        if match and os.path.isfile(path):
            offsets.append(int(match.group(1)))
        elif _TEMP.fullmatch(name):
            with contextlib.suppress(OSError):
                os.unlink(path)
    return sorted(offsets)


def encode_snapshot(entries: list[SnapshotEntry]) -> bytes:
    body = bytearray(_HEADER.size + _ENTRY.size * len(entries))
    for i, entry in enumerate(entries):
        _ENTRY.pack_into(body, _HEADER.size + i * _ENTRY.size, *entry)
    struct.pack_into(">i", body, _CRC_START, len(entries))
    _HEADER.pack_into(body, 0, SNAPSHOT_VERSION, crc32c(body[_CRC_START:]), len(entries))
    return bytes(body)


def decode_snapshot(data: bytes, where: str = "snapshot") -> list[SnapshotEntry]:
    """The entries of a snapshot file's bytes; CorruptSnapshotError if anything is off."""
    if len(data) < _HEADER.size:
        raise CorruptSnapshotError(f"{where}: {len(data)} bytes cannot hold a snapshot header")
    version, crc, count = _HEADER.unpack_from(data, 0)
    if version != SNAPSHOT_VERSION:
        raise CorruptSnapshotError(f"{where}: unknown snapshot version {version}")
    computed = crc32c(data[_CRC_START:])
    if crc != computed:
        raise CorruptSnapshotError(f"{where}: CRC {crc:#010x} != computed {computed:#010x}")
    if count < 0 or len(data) != _HEADER.size + count * _ENTRY.size:
        raise CorruptSnapshotError(f"{where}: {count} entries do not fill {len(data)} bytes")
    return [
        SnapshotEntry(*_ENTRY.unpack_from(data, _HEADER.size + i * _ENTRY.size))
        for i in range(count)
    ]


def write_snapshot(directory: str, offset: int, entries: list[SnapshotEntry]) -> str:
    path = snapshot_path(directory, offset)
    write_atomically(path, encode_snapshot(entries))
    return path


def read_snapshot(directory: str, offset: int) -> list[SnapshotEntry]:
    path = snapshot_path(directory, offset)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as err:
        raise CorruptSnapshotError(f"{path}: {err}") from err
    return decode_snapshot(data, path)


def delete_snapshot(directory: str, offset: int) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(snapshot_path(directory, offset))
