"""Snapshots of the metadata log (KIP-630): the state at an offset, so the log can be cut.

A log that only grows would take ever longer to replay. So every node now and then writes
its metadata image (image.py) as the records that rebuild it, into a *snapshot*: the state
after every record below an end offset. Once a snapshot exists, the log before it may be
deleted, and a node that starts, or a follower too far behind, loads the snapshot and then
replays the log from its end offset.

A snapshot is a file in the partition's directory (`__cluster_metadata-0/`) named by its id,
the end offset (exclusive: the offset of the first record *not* in it) and the epoch of the
last record in it (Kafka: `Snapshots.filenameFromSnapshotId`):

    00000000000000004321-0000000002.checkpoint       end offset 4321, epoch 2

and it holds v2 batches, numbered from offset 0, partitionLeaderEpoch = the snapshot's epoch
(Kafka: `RecordsSnapshotWriter`):

    control batch   SnapshotHeaderRecord (lastContainedLogTimestamp), then, when the quorum
                    supports reconfiguration (kraft.version 1), KRaftVersionRecord and
                    VotersRecord
    data batches    the image's records
    control batch   SnapshotFooterRecord

A reader checks the header comes first and the footer last (Kafka: `RecordsSnapshotReader`).
A snapshot is written to `<id>.checkpoint.part`, fsynced, and renamed to `<id>.checkpoint`
(Kafka: `FileRawSnapshotWriter.freeze`): a crash leaves a `.part` that is ignored, never a
half snapshot under the final name. The snapshot `0-0` is the *bootstrap* snapshot that
`kafka-storage format` writes (the first feature levels, SCRAM users).

The file's name, its `.part` and its listing are the quorum's (kafka_ref/raft/snapshots.py,
as Kafka's `Snapshots` is in its raft module); this module is what is in the file.

Rules: META-5 (the file and its name), META-6 (header first, footer last), META-12.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kafka_ref.errors import CorruptRecordError
from kafka_ref.metadata.batches import MetadataBatch, build_metadata_batch, read_metadata_batches
from kafka_ref.metadata.image import EMPTY, MetadataImage, load
from kafka_ref.metadata.serde import ApiMessageAndVersion, serialize
from kafka_ref.raft.snapshots import (
    BOOTSTRAP_SNAPSHOT_ID,
    DELETE_SUFFIX,
    PARTIAL_SUFFIX,
    SUFFIX,
    OffsetAndEpoch,
    list_snapshots,
    parse_snapshot_name,
    snapshot_file_name,
    write_snapshot,
)
from kafka_ref.record.control import ControlRecordType
from kafka_ref.record.kraft_control import (
    CURRENT_VERSION,
    KRaftVersionRecord,
    SnapshotFooterRecord,
    SnapshotHeaderRecord,
    build_kraft_control_batch,
)

# the file's name and its writing are the quorum's; a reader of snapshots finds them here too
__all__ = [
    "BOOTSTRAP_SNAPSHOT_ID",
    "DELETE_SUFFIX",
    "PARTIAL_SUFFIX",
    "SUFFIX",
    "CorruptSnapshotError",
    "OffsetAndEpoch",
    "Snapshot",
    "list_snapshots",
    "parse_snapshot",
    "parse_snapshot_name",
    "read_snapshot",
    "snapshot_batches",
    "snapshot_file_name",
    "snapshot_image",
    "write_snapshot",
]
MAX_BATCH_BYTES = 8 * 1024 * 1024  # Kafka: KafkaRaftClient.MAX_BATCH_SIZE_BYTES


class CorruptSnapshotError(CorruptRecordError):
    """A snapshot file that does not open with a header or close with a footer."""


def snapshot_batches(
    snapshot_id: OffsetAndEpoch,
    records: Sequence[ApiMessageAndVersion],
    *,
    last_contained_log_timestamp: int,
    now: int,
    kraft_version: int = 1,
    voters: Any = None,
    max_batch_bytes: int = MAX_BATCH_BYTES,
) -> bytes:
    """The bytes of a snapshot: header batch, the records in batches of at most
    `max_batch_bytes` of values (one record at least), footer batch (Kafka:
    `RecordsSnapshotWriter`). `voters`, a VotersRecord, needs `kraft_version` 1."""
    assert voters is None or kraft_version >= 1, "a voter set needs kraft.version 1"
    epoch = snapshot_id.epoch
    header: list[tuple[ControlRecordType, Any]] = [
        (
            ControlRecordType.SNAPSHOT_HEADER,
            SnapshotHeaderRecord(
                version=CURRENT_VERSION, last_contained_log_timestamp=last_contained_log_timestamp
            ),
        )
    ]
    if kraft_version >= 1:  # KRaftVersion.isReconfigSupported
        header.append(
            (
                ControlRecordType.KRAFT_VERSION,
                KRaftVersionRecord(version=CURRENT_VERSION, k_raft_version=kraft_version),
            )
        )
        if voters is not None:
            header.append((ControlRecordType.KRAFT_VOTERS, voters))
    parts = [build_kraft_control_batch(header, base_offset=0, leader_epoch=epoch, timestamp=now)]
    offset = len(header)
    for chunk in _chunks(records, max_batch_bytes):
        parts.append(
            build_metadata_batch(chunk, base_offset=offset, leader_epoch=epoch, append_time=now)
        )
        offset += len(chunk)
    footer = [(ControlRecordType.SNAPSHOT_FOOTER, SnapshotFooterRecord(version=CURRENT_VERSION))]
    parts.append(
        build_kraft_control_batch(footer, base_offset=offset, leader_epoch=epoch, timestamp=now)
    )
    return b"".join(parts)


def _chunks(
    records: Sequence[ApiMessageAndVersion], max_bytes: int
) -> list[list[ApiMessageAndVersion]]:
    chunks: list[list[ApiMessageAndVersion]] = []
    size = 0
    for entry in records:
        value = len(serialize(entry))
        if not chunks or size + value > max_bytes:
            chunks.append([])
            size = 0
        chunks[-1].append(entry)
        size += value
    return chunks


@dataclass(frozen=True, slots=True)
class Snapshot:
    """A snapshot read back: its id, its header and the records it holds."""

    snapshot_id: OffsetAndEpoch
    last_contained_log_timestamp: int
    control: list[tuple[ControlRecordType, Any]]  # every control record, header to footer
    records: list[ApiMessageAndVersion]
    batches: list[MetadataBatch]


def read_snapshot(path: str) -> Snapshot:
    """Read and check a snapshot file: its name, header first, footer last, whole batches."""
    parsed = parse_snapshot_name(os.path.basename(path))
    if parsed is None or parsed[1] != SUFFIX:
        raise CorruptSnapshotError(f"{os.path.basename(path)} is not a snapshot file name")
    with open(path, "rb") as f:
        return parse_snapshot(f.read(), parsed[0], path)


def parse_snapshot(data: bytes, snapshot_id: OffsetAndEpoch, name: str = "snapshot") -> Snapshot:
    """Check and read a snapshot's bytes (a file's, or a FetchSnapshot's copy): header
    first, footer last, whole batches."""
    path = name
    batches = list(read_metadata_batches(data))
    if not batches or not batches[0].is_control or not batches[0].control:
        raise CorruptSnapshotError(f"{path}: first batch is not a control batch with a record")
    first_type, header = batches[0].control[0]
    if first_type != ControlRecordType.SNAPSHOT_HEADER:
        raise CorruptSnapshotError(
            f"{path}: first control record is not a snapshot header ({first_type.name})"
        )
    last = batches[-1]
    if not last.is_control or [t for t, _ in last.control] != [ControlRecordType.SNAPSHOT_FOOTER]:
        raise CorruptSnapshotError(f"{path}: last batch is not a snapshot footer")
    return Snapshot(
        snapshot_id,
        header.last_contained_log_timestamp,
        [entry for batch in batches for entry in batch.control],
        [entry for batch in batches for entry in batch.records],
        batches,
    )


def snapshot_image(data: bytes, snapshot_id: OffsetAndEpoch) -> MetadataImage:
    """The metadata image a snapshot's bytes hold: its records replayed from the empty image
    (what a node rebuilds from when it loads a snapshot, RAFT-24; META-9)."""
    return load(parse_snapshot(data, snapshot_id).records, EMPTY)
