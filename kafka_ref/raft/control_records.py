"""The batches the quorum writes: the leader's LeaderChange control record, and data.

A new leader's first act is to append a **LeaderChange** control record in its own epoch
(Kafka: `LeaderChangeMessage`, control record type 2, written by
`LeaderState.appendStartOfEpochControlRecords`).
It is not a formality: a leader may count a majority only for entries of its own epoch
(RAFT-6), and until one of them is committed, entries left by earlier leaders cannot be;
the control record is that first entry, so committing it commits everything before it at
once (the Raft paper's no-op entry, section 8).

Its bytes are Kafka's: a control batch of one record whose key is (version 0, type 2) and
whose value is `LeaderChangeMessage` version 0 in the flexible encoding (int16 version,
int32 LeaderId, compact arrays of Voters and GrantingVoters, each an int32 VoterId and
empty tagged fields). Data batches hold the application's records, opaque bytes here; the
metadata records of KRaft will be their values later.

Rules: RAFT-6.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass

from kafka_ref.record.batch import RecordBatch, build_batch
from kafka_ref.record.control import CONTROL_KEY, CURRENT_CONTROL_KEY_VERSION
from kafka_ref.record.record import Record

LEADER_CHANGE = 2  # Kafka: ControlRecordType.LEADER_CHANGE
LEADER_CHANGE_VERSION = 0


@dataclass(frozen=True, slots=True)
class LeaderChangeMessage:
    """Who leads the new epoch, the voters, and who voted for it."""

    leader_id: int
    voters: tuple[int, ...]
    granting_voters: tuple[int, ...]

    def encode(self) -> bytes:
        def voters(ids: Sequence[int]) -> bytes:  # a compact array: length + 1 as a varint
            return bytes([len(ids) + 1]) + b"".join(struct.pack(">i", v) + b"\x00" for v in ids)

        assert len(self.voters) < 127 and len(self.granting_voters) < 127
        head = struct.pack(">hi", LEADER_CHANGE_VERSION, self.leader_id)
        return head + voters(self.voters) + voters(self.granting_voters) + b"\x00"


def leader_change_batch(message: LeaderChangeMessage, epoch: int, now_ms: int) -> bytes:
    """The control batch a leader appends at the start of its epoch."""
    key = CONTROL_KEY.pack(CURRENT_CONTROL_KEY_VERSION, LEADER_CHANGE)
    return build_batch(
        [Record(key, message.encode(), now_ms)], is_control=True, partition_leader_epoch=epoch
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
