"""Control batches: the commit and abort markers that end a transaction in a partition.

A transactional producer writes ordinary batches with the *transactional* attribute bit
(bit 4) set. Whether their records count is decided later, by the transaction coordinator,
which writes a **marker** into every partition the transaction touched: a batch with both
the transactional and the *control* bit (bit 5) set, holding exactly one control record
(Kafka: `ControlRecordType`, `EndTransactionMarker`, `MemoryRecords.withEndTransactionMarker`).

    batch header   producerId, producerEpoch of the transaction; baseSequence -1;
                   attributes 0x30 (transactional | control), no compression
    record key     version int16 (0), type int16 (0 = ABORT, 1 = COMMIT)
    record value   version int16 (0), coordinatorEpoch int32

The marker takes one offset of its own. Consumers never see it as a record; a
read_committed consumer uses the ABORT marker to know where an aborted transaction of
that producer ends (kafka_ref/client/consumer_fetch.py), and the broker uses both kinds to
close the producer's open transaction (kafka_ref/log/producer_state.py).

Rules: TXN-1.
"""

from __future__ import annotations

import contextlib
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from enum import IntEnum

from kafka_ref.errors import InvalidRecordError
from kafka_ref.record.batch import BatchHeader, RecordBatch, build_batch
from kafka_ref.record.record import Record

CONTROL_KEY = struct.Struct(">hh")  # version, type
MARKER_VALUE = struct.Struct(">hi")  # version, coordinator epoch
CURRENT_CONTROL_KEY_VERSION = 0
CURRENT_END_TXN_MARKER_VERSION = 0  # Kafka: EndTransactionMarker.CURRENT_END_TXN_MARKER_VERSION


class ControlRecordType(IntEnum):
    """The type in a control record's key (Kafka: `ControlRecordType`): the transaction
    markers, and the KRaft quorum's own records (kraft_control.py)."""

    ABORT = 0
    COMMIT = 1
    LEADER_CHANGE = 2  # KIP-595: a new leader's first record in its epoch
    SNAPSHOT_HEADER = 3  # KIP-630: the first record of a snapshot
    SNAPSHOT_FOOTER = 4  # KIP-630: the last record of a snapshot
    KRAFT_VERSION = 5  # KIP-853: the kraft.version feature
    KRAFT_VOTERS = 6  # KIP-853: the set of voters


@dataclass(frozen=True, slots=True)
class EndTransactionMarker:
    """What a marker says: commit or abort, and which coordinator epoch wrote it."""

    control_type: ControlRecordType
    coordinator_epoch: int

    @property
    def is_commit(self) -> bool:
        return self.control_type == ControlRecordType.COMMIT


def build_marker_batch(
    producer_id: int,
    producer_epoch: int,
    marker: EndTransactionMarker,
    timestamp: int,
    *,
    partition_leader_epoch: int = -1,
) -> bytes:
    """One control batch holding `marker`, as Kafka's `MemoryRecords.withEndTransactionMarker`."""
    key = CONTROL_KEY.pack(CURRENT_CONTROL_KEY_VERSION, marker.control_type)
    value = MARKER_VALUE.pack(CURRENT_END_TXN_MARKER_VERSION, marker.coordinator_epoch)
    return build_batch(
        [Record(key, value, timestamp)],
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        is_transactional=True,
        is_control=True,
        partition_leader_epoch=partition_leader_epoch,
    )


def read_marker(buf: bytes | memoryview, pos: int = 0) -> EndTransactionMarker:
    """The marker of the control batch at `pos` (Kafka: `EndTransactionMarker.deserialize`).

    A control batch whose key names another type (LEADER_CHANGE and the other KRaft types)
    or that cannot be read raises InvalidRecordError.
    """
    header = BatchHeader.parse(buf, pos)
    if not header.is_control:
        raise InvalidRecordError(f"batch at offset {header.base_offset} is not a control batch")
    record = next(RecordBatch(buf, pos).records(), None)
    if record is None or record.key is None or len(record.key) < CONTROL_KEY.size:
        raise InvalidRecordError(f"control batch at {header.base_offset} has no control key")
    _, kind = CONTROL_KEY.unpack_from(record.key)
    if kind not in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
        raise InvalidRecordError(f"control batch at {header.base_offset}: unknown type {kind}")
    value = record.value or b""
    if len(value) < MARKER_VALUE.size:
        raise InvalidRecordError(f"end transaction marker at {header.base_offset} is too short")
    _, coordinator_epoch = MARKER_VALUE.unpack_from(value)
    return EndTransactionMarker(ControlRecordType(kind), coordinator_epoch)


def read_markers(
    buf: bytes | memoryview, batches: Sequence[tuple[int, BatchHeader]]
) -> dict[int, EndTransactionMarker]:
    """Base offset -> marker of each control batch among `batches`, laid end to end in
    `buf` (an append's bytes); a control batch of another kind is left out."""
    markers, pos = {}, 0
    for base_offset, header in batches:
        if header.is_control:
            with contextlib.suppress(InvalidRecordError):
                markers[base_offset] = read_marker(buf, pos)
        pos += header.size
    return markers


__all__ = [
    "ControlRecordType",
    "EndTransactionMarker",
    "build_marker_batch",
    "read_marker",
    "read_markers",
]
