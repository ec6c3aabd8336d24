"""Snapshot files beside the quorum's log: their names and how they are written (Kafka:
`Snapshots`, `FileRawSnapshotWriter`; KIP-630).

A snapshot is a file in the log's directory named by its id, the end offset (exclusive:
the first offset *not* in it) and the epoch of the last record in it:

    00000000000000004321-0000000002.checkpoint       end offset 4321, epoch 2

It is written to `<id>.checkpoint.part`, fsynced, and renamed to `<id>.checkpoint`
(`FileRawSnapshotWriter.freeze`): a crash leaves a `.part` that is ignored, never a half
snapshot under the final name. What the file holds is the application's (for KRaft's
metadata: kafka_ref/metadata/snapshot.py).

Rules: META-5.
"""

from __future__ import annotations

import os
import re
from typing import NamedTuple

from kafka_ref.files import write_atomically

SUFFIX = ".checkpoint"
PARTIAL_SUFFIX = SUFFIX + ".part"
DELETE_SUFFIX = SUFFIX + ".deleted"
_NAME = re.compile(r"^(\d{20})-(\d{10})(\.checkpoint(?:\.part|\.deleted)?)$")


class OffsetAndEpoch(NamedTuple):
    """A snapshot's id (Kafka: `OffsetAndEpoch`): its end offset and the last record's epoch."""

    offset: int
    epoch: int


BOOTSTRAP_SNAPSHOT_ID = OffsetAndEpoch(0, 0)  # Kafka: Snapshots.BOOTSTRAP_SNAPSHOT_ID


def snapshot_file_name(snapshot_id: OffsetAndEpoch) -> str:
    """`<20-digit end offset>-<10-digit epoch>.checkpoint` (Kafka: `Snapshots.snapshotPath`)."""
    return f"{snapshot_id.offset:020d}-{snapshot_id.epoch:010d}{SUFFIX}"


def parse_snapshot_name(name: str) -> tuple[OffsetAndEpoch, str] | None:
    """The id and suffix of a snapshot file name (`.checkpoint`, `.checkpoint.part`,
    `.checkpoint.deleted`), or None for any other file (Kafka: `Snapshots.parse`)."""
    match = _NAME.match(name)
    if match is None:
        return None
    return OffsetAndEpoch(int(match.group(1)), int(match.group(2))), match.group(3)


def list_snapshots(log_dir: str) -> list[OffsetAndEpoch]:
    """The ids of the finished snapshots in a partition directory, oldest first."""
    found = []
    for name in os.listdir(log_dir):
        parsed = parse_snapshot_name(name)
        if parsed is not None and parsed[1] == SUFFIX:
            found.append(parsed[0])
    return sorted(found)


def write_snapshot(log_dir: str, snapshot_id: OffsetAndEpoch, data: bytes) -> str:
    """Write a snapshot's bytes under its name, through `.checkpoint.part`, fsynced, renamed
    (Kafka: `FileRawSnapshotWriter.freeze`). Returns the path."""
    os.makedirs(log_dir, exist_ok=True)
    path = os.path.join(log_dir, snapshot_file_name(snapshot_id))
    write_atomically(path, data, tmp_suffix=".part")
    return path
