"""The batches the quorum writes: the leader's LeaderChange control record, and data.

A new leader's first act is to append a **LeaderChange** control record in its own epoch
(Kafka: `LeaderChangeMessage`, control record type 2, written by
`LeaderState.appendStartOfEpochControlRecords`).
It is not a formality: a leader may count a majority only for entries of its own epoch
(RAFT-6), and until one of them is committed, entries left by earlier leaders cannot be;
the control record is that first entry, so committing it commits everything before it at
once (the Raft paper's no-op entry, section 8).

Its bytes are Kafka's (kafka_ref/record/kraft_control.py, shared with the metadata log's
snapshots): a control batch of one record whose key is (version 0, type 2) and whose value
is `LeaderChangeMessage` version 0. Data batches hold the application's records, opaque
bytes here; in the controller quorum they are KRaft's metadata records.

Rules: RAFT-6.
"""

from __future__ import annotations

from collections.abc import Sequence

from kafka_ref.record.batch import RecordBatch, build_batch
from kafka_ref.record.control import ControlRecordType
from kafka_ref.record.kraft_control import LeaderChangeMessage, build_kraft_control_batch
from kafka_ref.record.record import Record


def leader_change_batch(
    leader_id: int,
    voters: Sequence[int],
    granting_voters: Sequence[int],
    epoch: int,
    now_ms: int,
) -> bytes:
    """The control batch a leader appends at the start of its epoch: who leads, the voters,
    and who voted for it."""
    message = LeaderChangeMessage(
        version=0,
        leader_id=leader_id,
        voters=[LeaderChangeMessage.Voter(voter_id=v) for v in voters],
        granting_voters=[LeaderChangeMessage.Voter(voter_id=v) for v in granting_voters],
    )
    return build_kraft_control_batch(
        [(ControlRecordType.LEADER_CHANGE, message)],
        base_offset=0,
        leader_epoch=epoch,
        timestamp=now_ms,
    )


def data_batch(values: Sequence[bytes], epoch: int, now_ms: int) -> bytes:
    """One batch of the application's records."""
    return build_batch([Record(None, v, now_ms) for v in values], partition_leader_epoch=epoch)


def batch_entries(batches: bytes) -> list[tuple[int, int, bool, bytes | None]]:
    """(offset, epoch, is control, value) of every record of whole `batches`."""
    found = []
    pos = 0
    while pos < len(batches):
        batch = RecordBatch(batches, pos)
        header = batch.header
        for record in batch.records():
            entry = (record.offset, header.partition_leader_epoch, header.is_control, record.value)
            found.append(entry)
        pos += header.size
    return found
