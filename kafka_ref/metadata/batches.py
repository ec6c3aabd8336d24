"""Metadata records in record batches, as a KRaft leader writes `__cluster_metadata`.

The metadata log is an ordinary Kafka partition (`__cluster_metadata-0`) of v2 record
batches (kafka_ref/record/batch.py), so Kafka's tools read it like any other. What the Raft
leader writes into it differs from a producer's batches in a few fixed ways (Kafka:
`BatchBuilder`, `BatchAccumulator`):

* producer id -1, producer epoch -1, base sequence -1: no idempotence, the leader is the
  only writer;
* partitionLeaderEpoch is the leader's epoch, set when the batch is built (a broker stamps
  it on append; here the writer is the leader);
* CreateTime, with baseTimestamp = maxTimestamp = the append time and every record's
  timestamp delta 0: the time the leader accepted the records;
* every record has a null key and no headers; its value is the serde's frame and message.

Control batches (the leader change a new leader writes first, a snapshot's header and
footer) carry KRaft's control records (kafka_ref/record/kraft_control.py) and are never
handed to the metadata image. A reader gets `MetadataBatch`es in log order, each either data
(records) or control (control records), checked by CRC (Kafka: `RecordsIterator`, `Batch`).

Rule: META-3.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from kafka_ref.metadata.serde import ApiMessageAndVersion, deserialize, serialize
from kafka_ref.record.batch import (
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    RecordBatch,
    build_batch,
    validate_batch,
    walk_buffer,
)
from kafka_ref.record.compression import Compression
from kafka_ref.record.control import ControlRecordType
from kafka_ref.record.kraft_control import read_kraft_control
from kafka_ref.record.record import Record


def build_metadata_batch(
    records: Sequence[ApiMessageAndVersion],
    *,
    base_offset: int,
    leader_epoch: int,
    append_time: int,
    compression: Compression = Compression.NONE,
) -> bytes:
    """One data batch of metadata records, byte for byte as Kafka's `BatchBuilder` makes it."""
    if not records:
        raise ValueError("a metadata batch holds at least one record")
    return build_batch(
        [Record(None, serialize(entry), append_time) for entry in records],
        base_offset=base_offset,
        compression=compression,
        producer_id=NO_PRODUCER_ID,
        producer_epoch=NO_PRODUCER_EPOCH,
        partition_leader_epoch=leader_epoch,
    )


@dataclass(frozen=True, slots=True)
class MetadataBatch:
    """One batch of the metadata log, decoded (Kafka: `Batch`): data or control."""

    base_offset: int
    last_offset: int
    epoch: int  # partitionLeaderEpoch: the epoch of the leader that wrote it
    append_time: int  # maxTimestamp
    size: int
    is_control: bool
    records: list[ApiMessageAndVersion] = field(default_factory=list)
    control: list[tuple[ControlRecordType, Any]] = field(default_factory=list)


def read_metadata_batches(
    buf: bytes | memoryview, *, partial_tail: bool = False
) -> Iterator[MetadataBatch]:
    """Every batch in `buf` (a `.log` segment's bytes, a snapshot, a fetch answer), decoded.

    A batch that fails its CRC raises CorruptRecordError; a record value that does not parse,
    MetadataParseError. With `partial_tail` a last batch cut short ends the walk (the active
    segment of a running node may end in one).
    """
    for span in walk_buffer(buf, partial_tail=partial_tail):
        header = validate_batch(buf, span.position)
        batch = RecordBatch(buf, span.position)
        records, control = [], []
        for record in batch.records():
            if header.is_control:
                control.append(read_kraft_control(record))
            else:
                records.append(deserialize(record.value or b""))
        yield MetadataBatch(
            header.base_offset,
            header.last_offset,
            header.partition_leader_epoch,
            header.max_timestamp,
            header.size,
            header.is_control,
            records,
            control,
        )


def read_metadata_records(buf: bytes | memoryview) -> list[ApiMessageAndVersion]:
    """The metadata records of `buf`'s data batches, in order; control batches left out."""
    return [entry for batch in read_metadata_batches(buf) for entry in batch.records]
