"""The KRaft quorum's control records: leader changes, snapshot bounds, the voters.

Besides the transaction markers (control.py), Kafka's Raft log (KIP-595) writes control
batches of its own into `__cluster_metadata`. Like a marker, each is a v2 batch with the
control attribute bit set, producer id -1, and records whose key is `version int16 = 0,
type int16`; the value is a small flexible message, written at version 0 *without* a
version prefix (Kafka: `ControlRecordUtils`, whose `*_CURRENT_VERSION` constants are the
versions readers assume):

    type  ControlRecordType  value                  written
    2     LEADER_CHANGE      LeaderChangeMessage    by a new leader, first in its epoch
    3     SNAPSHOT_HEADER    SnapshotHeaderRecord   first record of a snapshot (KIP-630)
    4     SNAPSHOT_FOOTER    SnapshotFooterRecord   last record of a snapshot
    5     KRAFT_VERSION      KRaftVersionRecord     kraft.version (KIP-853)
    6     KRAFT_VOTERS       VotersRecord           the set of voters (KIP-853)

The batch is not transactional, and its partitionLeaderEpoch is the epoch of the leader
that wrote it (Kafka: `MemoryRecords.withLeaderChangeMessage`, `MemoryRecordsBuilder.
appendSnapshotHeaderMessage`). Consumers never see control records; a Raft reader hands
them to the quorum, not to the state machine (the metadata image never sees them).

Rule: META-4.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kafka_ref.errors import InvalidRecordError
from kafka_ref.protocol.errors import ProtocolDecodeError
from kafka_ref.protocol.schema import Field, Message, StructSchema
from kafka_ref.record.batch import NO_PRODUCER_EPOCH, NO_PRODUCER_ID, build_batch
from kafka_ref.record.control import CONTROL_KEY, CURRENT_CONTROL_KEY_VERSION, ControlRecordType
from kafka_ref.record.record import Record

_VOTER = StructSchema(  # LeaderChangeMessage's common struct: one Voter for both lists
    "Voter",
    [
        Field("VoterId", "int32", "0+", about="The ID of the voter."),
        Field("VoterDirectoryId", "uuid", "1+", about="The directory id of the voter."),
    ],
)

LeaderChangeMessage = Message(
    "LeaderChangeMessage",
    api_key=None,
    valid_versions="0-1",  # v1 adds VoterDirectoryId (KIP-853)
    flexible_versions="0+",
    fields=[
        Field("Version", "int16", "0+", about="The version of the leader change message."),
        Field("LeaderId", "int32", "0+", about="The ID of the newly elected leader."),
        Field(
            "Voters",
            "[]Voter",
            "0+",
            about="The set of voters in the quorum for this epoch.",
            fields=_VOTER,
        ),
        Field(
            "GrantingVoters",
            "[]Voter",
            "0+",
            about="The voters who voted for the leader at the time of election.",
            fields=_VOTER,
        ),
    ],
)

SnapshotHeaderRecord = Message(
    "SnapshotHeaderRecord",
    api_key=None,
    valid_versions="0",
    flexible_versions="0+",
    fields=[
        Field("Version", "int16", "0+", about="The version of the snapshot header record."),
        Field(
            "LastContainedLogTimestamp",
            "int64",
            "0+",
            about="The append time of the last record from the log contained in this snapshot.",
        ),
    ],
)

SnapshotFooterRecord = Message(
    "SnapshotFooterRecord",
    api_key=None,
    valid_versions="0",
    flexible_versions="0+",
    fields=[
        Field("Version", "int16", "0+", about="The version of the snapshot footer record."),
    ],
)

KRaftVersionRecord = Message(
    "KRaftVersionRecord",
    api_key=None,
    valid_versions="0",
    flexible_versions="0+",
    fields=[
        Field("Version", "int16", "0+", about="The version of the kraft version record."),
        Field("KRaftVersion", "int16", "0+", about="The kraft protocol version."),
    ],
)

VotersRecord = Message(
    "VotersRecord",
    api_key=None,
    valid_versions="0",
    flexible_versions="0+",
    fields=[
        Field("Version", "int16", "0+", about="The version of the voters record."),
        Field(
            "Voters",
            "[]Voter",
            "0+",
            about="The set of voters in the quorum for this epoch.",
            fields=[
                Field("VoterId", "int32", "0+", about="The replica id of the voter."),
                Field("VoterDirectoryId", "uuid", "0+", about="The directory id of the voter."),
                Field(
                    "Endpoints",
                    "[]Endpoint",
                    "0+",
                    about="The endpoints that can be used to communicate with the voter.",
                    fields=[
                        Field("Name", "string", "0+", about="The name of the endpoint."),
                        Field("Host", "string", "0+", about="The hostname."),
                        Field("Port", "uint16", "0+", about="The port."),
                    ],
                ),
                Field(
                    "KRaftVersionFeature",
                    "KRaftVersionFeature",
                    "0+",
                    about="The range of versions of the protocol that the replica supports.",
                    fields=[
                        Field("MinSupportedVersion", "int16", "0+", about="The minimum version."),
                        Field("MaxSupportedVersion", "int16", "0+", about="The maximum version."),
                    ],
                ),
            ],
        ),
    ],
)

KRAFT_CONTROL_MESSAGES: dict[ControlRecordType, Message] = {
    ControlRecordType.LEADER_CHANGE: LeaderChangeMessage,
    ControlRecordType.SNAPSHOT_HEADER: SnapshotHeaderRecord,
    ControlRecordType.SNAPSHOT_FOOTER: SnapshotFooterRecord,
    ControlRecordType.KRAFT_VERSION: KRaftVersionRecord,
    ControlRecordType.KRAFT_VOTERS: VotersRecord,
}
CURRENT_VERSION = 0  # Kafka: ControlRecordUtils.*_CURRENT_VERSION, all 0 in Kafka 4.4


def control_record(control_type: ControlRecordType, message: Any, timestamp: int) -> Record:
    """One KRaft control record: Kafka's control key, the message at version 0 as value."""
    schema = KRAFT_CONTROL_MESSAGES[control_type]
    key = CONTROL_KEY.pack(CURRENT_CONTROL_KEY_VERSION, control_type)
    return Record(key, schema.encode(CURRENT_VERSION, message), timestamp)


def build_kraft_control_batch(
    messages: Sequence[tuple[ControlRecordType, Any]],
    *,
    base_offset: int,
    leader_epoch: int,
    timestamp: int,
) -> bytes:
    """A control batch of KRaft control records, as a Raft leader or snapshot writer builds it."""
    return build_batch(
        [control_record(kind, message, timestamp) for kind, message in messages],
        base_offset=base_offset,
        producer_id=NO_PRODUCER_ID,
        producer_epoch=NO_PRODUCER_EPOCH,
        is_control=True,
        partition_leader_epoch=leader_epoch,
    )


def read_kraft_control(record: Record) -> tuple[ControlRecordType, Any]:
    """The type and message of a KRaft control record (Kafka: `ControlRecordUtils.deserialize*`).

    A key too short, a type that is not KRaft's, or a value that does not decode raises
    InvalidRecordError.
    """
    key = record.key or b""
    if len(key) < CONTROL_KEY.size:
        raise InvalidRecordError(f"control record at {record.offset} has no control key")
    _, kind = CONTROL_KEY.unpack_from(key)
    if kind not in KRAFT_CONTROL_MESSAGES:
        raise InvalidRecordError(f"control record at {record.offset}: not a KRaft type ({kind})")
    control_type = ControlRecordType(kind)
    try:
        message = KRAFT_CONTROL_MESSAGES[control_type].decode(CURRENT_VERSION, record.value or b"")
    except ProtocolDecodeError as err:
        raise InvalidRecordError(f"{control_type.name} at {record.offset}: {err}") from None
    return control_type, message


__all__ = [
    "KRAFT_CONTROL_MESSAGES",
    "KRaftVersionRecord",
    "LeaderChangeMessage",
    "SnapshotFooterRecord",
    "SnapshotHeaderRecord",
    "VotersRecord",
    "build_kraft_control_batch",
    "control_record",
    "read_kraft_control",
]
