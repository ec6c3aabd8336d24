"""The records of `__share_group_state`: ShareSnapshot and ShareUpdate (KIP-932).

The share coordinator keeps each share-partition's state (`SharePartitionKey`: group, topic
id, partition) as records of its internal topic, in Kafka's layouts (the kafka-share-coordinator
jar's `ShareSnapshotKey.json`, `ShareSnapshotValue.json`, `ShareUpdateKey.json`,
`ShareUpdateValue.json`; Kafka `ShareCoordinatorRecordHelpers`):

    type  key (non-flexible)             value (flexible, version 0)
    0     ShareSnapshot(group, topic, p)  snapshot epoch, state epoch, leader epoch, SPSO,
                                          delivery complete count (tagged), create and write
                                          timestamps, every state batch
    1     ShareUpdate(group, topic, p)    snapshot epoch, leader epoch, SPSO (-1: unchanged),
                                          delivery complete count (tagged), the batches
                                          that changed

A key starts with its int16 record type, a value with its int16 version (0), as the group
coordinator's records do (group/consumer_group_records.py). A **snapshot** is the whole
state; an **update** is a delta to fold into the snapshot before it (state_batches.py). A
deleted share-partition is a tombstone (null value) on its ShareSnapshot key.

Loading a partition of the topic replays its records in offset order (`ShareStateLoader` in
share_coordinator.py): the last snapshot of each key and the updates after it rebuild the
state exactly as the coordinator held it (SHARE-73). Kafka's `kafka-dump-log
--share-group-state-decoder` reads these records.

Rules: SHARE-71.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from kafka_ref.protocol.schema import Field, Message
from kafka_ref.share.persister import SharePartitionKey, StateBatch
from kafka_ref.share.state_batches import delivered_state

SHARE_SNAPSHOT = 0
SHARE_UPDATE = 1
VALUE_VERSION = 0


def _key(name: str) -> Message:
    return Message(
        name,
        api_key=None,
        valid_versions="0",
        flexible_versions="none",
        fields=[
            Field("GroupId", "string", "0", about="The group id."),
            Field("TopicId", "uuid", "0", about="The topic id."),
            Field("Partition", "int32", "0", about="The partition index."),
        ],
    )


ShareSnapshotKey = _key("ShareSnapshotKey")
ShareUpdateKey = _key("ShareUpdateKey")

_STATE_BATCH = [
    Field("FirstOffset", "int64", "0+", about="The first offset of this state batch."),
    Field("LastOffset", "int64", "0+", about="The last offset of this state batch."),
    Field("DeliveryState", "int8", "0+", about="0:Available, 2:Acked, 4:Archived."),
    Field("DeliveryCount", "int16", "0+", about="The delivery count."),
]
_DELIVERY_COMPLETE_COUNT = Field(
    "DeliveryCompleteCount",
    "int32",
    "0+",
    default=-1,
    tagged_versions="0+",
    tag=0,
    about="Offsets at or above the SPSO whose delivery is complete (KIP-1226).",
)

ShareSnapshotValue = Message(
    "ShareSnapshotValue",
    api_key=None,
    valid_versions="0",
    flexible_versions="0+",
    fields=[
        Field("SnapshotEpoch", "int32", "0+", about="The snapshot epoch."),
        Field("StateEpoch", "int32", "0+", about="The state epoch of the share-partition."),
        Field("LeaderEpoch", "int32", "0+", about="The leader epoch of the share-partition."),
        Field("StartOffset", "int64", "0+", about="The share-partition start offset."),
        _DELIVERY_COMPLETE_COUNT,
        Field("CreateTimestamp", "int64", "0+", about="When the state was created."),
        Field("WriteTimestamp", "int64", "0+", about="When the state was (re)written."),
        Field("StateBatches", "[]StateBatch", "0+", fields=_STATE_BATCH, about="The batches."),
    ],
)

ShareUpdateValue = Message(
    "ShareUpdateValue",
    api_key=None,
    valid_versions="0",
    flexible_versions="0+",
    fields=[
        Field("SnapshotEpoch", "int32", "0+", about="The snapshot epoch."),
        Field("LeaderEpoch", "int32", "0+", about="The leader epoch of the share-partition."),
        Field("StartOffset", "int64", "0+", about="The SPSO, or -1 if it is unchanged."),
        _DELIVERY_COMPLETE_COUNT,
        Field("StateBatches", "[]StateBatch", "0+", fields=_STATE_BATCH, about="The changes."),
    ],
)

Record = tuple[bytes, bytes | None]


@dataclass(frozen=True)
class ShareGroupOffset:
    """One share-partition's state as the coordinator holds it (Kafka `ShareGroupOffset`)."""

    snapshot_epoch: int
    state_epoch: int
    leader_epoch: int
    start_offset: int
    delivery_complete_count: int = -1
    create_timestamp: int = -1
    write_timestamp: int = -1
    batches: tuple[StateBatch, ...] = ()


@dataclass(frozen=True)
class ShareUpdate:
    """A ShareUpdate record's value: the delta a write made."""

    snapshot_epoch: int
    leader_epoch: int
    start_offset: int
    delivery_complete_count: int
    batches: tuple[StateBatch, ...]


def _i16(n: int) -> bytes:
    return n.to_bytes(2, "big", signed=True)


def _encode_key(record_type: int, key: SharePartitionKey) -> bytes:
    schema = ShareSnapshotKey if record_type == SHARE_SNAPSHOT else ShareUpdateKey
    body = schema(group_id=key.group_id, topic_id=key.topic_id, partition=key.partition)
    return _i16(record_type) + schema.encode(0, body)


def _wire_batches(schema: Message, batches: tuple[StateBatch, ...]) -> list:
    return [
        schema.StateBatch(
            first_offset=b.first_offset,
            last_offset=b.last_offset,
            delivery_state=int(b.delivery_state),
            delivery_count=b.delivery_count,
        )
        for b in batches
    ]


def _batches(wire: list) -> tuple[StateBatch, ...]:
    return tuple(
        StateBatch(
            b.first_offset, b.last_offset, delivered_state(b.delivery_state), b.delivery_count
        )
        for b in wire
    )


# -- writing (Kafka `ShareCoordinatorRecordHelpers`) ------------------------------------
def snapshot_record(key: SharePartitionKey, state: ShareGroupOffset) -> Record:
    value = ShareSnapshotValue(
        snapshot_epoch=state.snapshot_epoch,
        state_epoch=state.state_epoch,
        leader_epoch=state.leader_epoch,
        start_offset=state.start_offset,
        delivery_complete_count=state.delivery_complete_count,
        create_timestamp=state.create_timestamp,
        write_timestamp=state.write_timestamp,
        state_batches=_wire_batches(ShareSnapshotValue, state.batches),
    )
    body = _i16(VALUE_VERSION) + ShareSnapshotValue.encode(VALUE_VERSION, value)
    return _encode_key(SHARE_SNAPSHOT, key), body


def update_record(key: SharePartitionKey, update: ShareUpdate) -> Record:
    value = ShareUpdateValue(
        snapshot_epoch=update.snapshot_epoch,
        leader_epoch=update.leader_epoch,
        start_offset=update.start_offset,
        delivery_complete_count=update.delivery_complete_count,
        state_batches=_wire_batches(ShareUpdateValue, update.batches),
    )
    body = _i16(VALUE_VERSION) + ShareUpdateValue.encode(VALUE_VERSION, value)
    return _encode_key(SHARE_UPDATE, key), body


def tombstone(key: SharePartitionKey) -> Record:
    """A deleted share-partition (Kafka `newShareStateTombstoneRecord`)."""
    return _encode_key(SHARE_SNAPSHOT, key), None


# -- reading ---------------------------------------------------------------------------
def record_type(key: bytes | memoryview) -> int:
    return int.from_bytes(bytes(key[:2]), "big", signed=True)


def decode_key(key: bytes | memoryview) -> tuple[int, SharePartitionKey]:
    kind = record_type(key)
    schema = ShareSnapshotKey if kind == SHARE_SNAPSHOT else ShareUpdateKey
    k = schema.decode(0, memoryview(key)[2:])
    return kind, SharePartitionKey(k.group_id, uuid.UUID(bytes=k.topic_id.bytes), k.partition)


def decode_snapshot(value: bytes | memoryview) -> ShareGroupOffset:
    v = ShareSnapshotValue.decode(VALUE_VERSION, memoryview(value)[2:])
    return ShareGroupOffset(
        snapshot_epoch=v.snapshot_epoch,
        state_epoch=v.state_epoch,
        leader_epoch=v.leader_epoch,
        start_offset=v.start_offset,
        delivery_complete_count=v.delivery_complete_count,
        create_timestamp=v.create_timestamp,
        write_timestamp=v.write_timestamp,
        batches=_batches(v.state_batches),
    )


def decode_update(value: bytes | memoryview) -> ShareUpdate:
    v = ShareUpdateValue.decode(VALUE_VERSION, memoryview(value)[2:])
    return ShareUpdate(
        snapshot_epoch=v.snapshot_epoch,
        leader_epoch=v.leader_epoch,
        start_offset=v.start_offset,
        delivery_complete_count=v.delivery_complete_count,
        batches=_batches(v.state_batches),
    )
