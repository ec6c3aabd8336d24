"""The records of `__consumer_offsets`: how groups and committed offsets are stored.

The coordinator keeps no files of its own. Every commit and every completed rebalance becomes a
record of the internal, compacted topic `__consumer_offsets`, and a coordinator that takes over
a partition of that topic rebuilds its groups by reading the partition from the start
(OFFSET-4). Compaction keeps the newest record per key, so the key says *what* a record is
about and the value is its latest state; a null value (a tombstone) deletes it (OFFSET-5).

Both key and value start with an int16 **version** that says how to read the rest (Kafka's
`GroupMetadataManager.readMessageKey`; since Kafka 3.5 the same layouts are generated from
`group-coordinator/src/main/resources/common/message/*.json`):

    OffsetCommitKey    version 0 or 1: group string, topic string, partition int32
    GroupMetadataKey   version 2:      group string

    OffsetCommitValue  v0: offset int64, metadata string, timestamp int64
                       v1: offset, metadata, commitTimestamp int64, expireTimestamp int64
                       v2: offset, metadata, commitTimestamp
                       v3: offset, leaderEpoch int32, metadata, commitTimestamp
    GroupMetadataValue v0-v3: protocolType string, generation int32, protocol string?,
                       leader string?, currentStateTimestamp int64 (v2+),
                       members [memberId string, groupInstanceId string? (v3+), clientId
                       string, clientHost string, rebalanceTimeout int32 (v1+),
                       sessionTimeout int32, subscription bytes, assignment bytes]

(`string` is an int16 length and UTF-8; `string?` is nullable, length -1; `bytes` an int32
length.) We write what Kafka 2.1+ writes: OffsetCommitKey v1, OffsetCommitValue v3 (v1 only
for a commit with an explicit expire timestamp, since only v1 can hold one), GroupMetadataKey
v2, GroupMetadataValue v3. Every version is read, so a log written by any Kafka since 0.9
loads. Kafka 3.5+ adds flexible v4 values; we do not read those. Keys of versions 3 to 9 are
the records of KIP-848's consumer groups, which consumer_group_records.py reads.

Rules: OFFSET-3 (metadata kept byte for byte), OFFSET-4, OFFSET-5, OFFSET-9 (the layouts).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from kafka_ref.common import OffsetAndMetadata, TopicPartition
from kafka_ref.group import consumer_group_records
from kafka_ref.group.consumer_group import ConsumerGroup
from kafka_ref.group.group_metadata import EMPTY, STABLE, GroupMetadata, MemberMetadata
from kafka_ref.protocol.schema import Field, Message
from kafka_ref.share import share_group_records
from kafka_ref.share.share_group import ShareGroup

OFFSET_COMMIT_KEY_VERSION = 1
GROUP_METADATA_KEY_VERSION = 2
OFFSET_COMMIT_VALUE_VERSION = 3
OFFSET_COMMIT_VALUE_VERSION_EXPIRE = 1
GROUP_METADATA_VALUE_VERSION = 3

OffsetCommitKey = Message(
    "OffsetCommitKey",
    api_key=None,
    valid_versions="0-1",
    flexible_versions="none",
    fields=[
        Field("Group", "string", "0+"),
        Field("Topic", "string", "0+"),
        Field("Partition", "int32", "0+"),
    ],
)

GroupMetadataKey = Message(
    "GroupMetadataKey",
    api_key=None,
    valid_versions="2",
    flexible_versions="none",
    fields=[Field("Group", "string", "2")],
)

OffsetCommitValue = Message(
    "OffsetCommitValue",
    api_key=None,
    valid_versions="0-3",
    flexible_versions="none",
    fields=[
        Field("Offset", "int64", "0+"),
        Field("LeaderEpoch", "int32", "3+", default=-1),
        Field("Metadata", "string", "0+"),
        Field("CommitTimestamp", "int64", "0+"),
        Field("ExpireTimestamp", "int64", "1", default=-1),
    ],
)

GroupMetadataValue = Message(
    "GroupMetadataValue",
    api_key=None,
    valid_versions="0-3",
    flexible_versions="none",
    fields=[
        Field("ProtocolType", "string", "0+"),
        Field("Generation", "int32", "0+"),
        Field("Protocol", "string", "0+", nullable_versions="0+", default=None),
        Field("Leader", "string", "0+", nullable_versions="0+", default=None),
        Field("CurrentStateTimestamp", "int64", "2+", default=-1),
        Field(
            "Members",
            "[]MemberMetadata",
            "0+",
            fields=[
                Field("MemberId", "string", "0+"),
                Field("GroupInstanceId", "string", "3+", nullable_versions="3+", default=None),
                Field("ClientId", "string", "0+"),
                Field("ClientHost", "string", "0+"),
                Field("RebalanceTimeout", "int32", "1+"),
                Field("SessionTimeout", "int32", "0+"),
                Field("Subscription", "bytes", "0+"),
                Field("Assignment", "bytes", "0+"),
            ],
        ),
    ],
)


class UnknownRecordVersionError(ValueError):
    """A key or value version this code does not know (a newer Kafka wrote it)."""


@dataclass(frozen=True)
class OffsetKey:
    group: str
    topic_partition: TopicPartition


@dataclass(frozen=True)
class GroupKey:
    group: str


def _i16(version: int) -> bytes:
    return version.to_bytes(2, "big", signed=True)


def _version(data: bytes | memoryview) -> tuple[int, memoryview]:
    view = memoryview(data)
    if len(view) < 2:
        raise UnknownRecordVersionError("a record key or value shorter than its version")
    return int.from_bytes(view[:2], "big", signed=True), view[2:]


# -- writing ------------------------------------------------------------------------
def offset_commit_key(group: str, tp: TopicPartition) -> bytes:
    value = OffsetCommitKey(group=group, topic=tp.topic, partition=tp.partition)
    return _i16(OFFSET_COMMIT_KEY_VERSION) + OffsetCommitKey.encode(1, value)


def group_metadata_key(group: str) -> bytes:
    key = GroupMetadataKey(group=group)
    return _i16(GROUP_METADATA_KEY_VERSION) + GroupMetadataKey.encode(2, key)


def offset_commit_value(om: OffsetAndMetadata) -> bytes:
    """v3, or v1 when the commit has an explicit expire timestamp (Kafka 2.1+)."""
    version = OFFSET_COMMIT_VALUE_VERSION if om.expire_timestamp is None else 1
    value = OffsetCommitValue(
        offset=om.offset,
        leader_epoch=om.leader_epoch,
        metadata=om.metadata,
        commit_timestamp=om.commit_timestamp,
        expire_timestamp=-1 if om.expire_timestamp is None else om.expire_timestamp,
    )
    return _i16(version) + OffsetCommitValue.encode(version, value)


def group_metadata_value(group: GroupMetadata, assignment: dict[str, bytes]) -> bytes:
    """GroupMetadataValue v3 of `group` with each member's `assignment` (default: empty)."""
    members = []
    for m in group.members.values():
        members.append(
            GroupMetadataValue.MemberMetadata(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                client_id=m.client_id,
                client_host=m.client_host,
                rebalance_timeout=m.rebalance_timeout_ms,
                session_timeout=m.session_timeout_ms,
                # the metadata of the chosen protocol only (Kafka stores just that one)
                subscription=m.metadata(group.protocol_name) if group.protocol_name else b"",
                assignment=assignment.get(m.member_id, b""),
            )
        )
    value = GroupMetadataValue(
        protocol_type=group.protocol_type or "",
        generation=group.generation_id,
        protocol=group.protocol_name,
        leader=group.leader_id,
        current_state_timestamp=(
            -1 if group.current_state_timestamp is None else group.current_state_timestamp
        ),
        members=members,
    )
    version = GROUP_METADATA_VALUE_VERSION
    return _i16(version) + GroupMetadataValue.encode(version, value)


# -- reading ------------------------------------------------------------------------
def read_key(key: bytes | memoryview) -> OffsetKey | GroupKey:
    """Which record this is (Kafka `readMessageKey`); raises UnknownRecordVersionError."""
    version, body = _version(key)
    if version in (0, 1):
        k = OffsetCommitKey.decode(version, body)
        return OffsetKey(k.group, TopicPartition(k.topic, k.partition))
    if version == GROUP_METADATA_KEY_VERSION:
        return GroupKey(GroupMetadataKey.decode(version, body).group)
    raise UnknownRecordVersionError(f"unknown __consumer_offsets key version {version}")


def read_offset_commit_value(value: bytes | memoryview) -> OffsetAndMetadata:
    version, body = _version(value)
    if not 0 <= version <= 3:
        raise UnknownRecordVersionError(f"unknown OffsetCommitValue version {version}")
    v = OffsetCommitValue.decode(version, body)
    expire = v.expire_timestamp if version == 1 and v.expire_timestamp != -1 else None
    return OffsetAndMetadata(
        offset=v.offset,
        metadata=v.metadata,
        leader_epoch=v.leader_epoch,
        commit_timestamp=v.commit_timestamp,
        expire_timestamp=expire,
    )


def read_group_metadata_value(group_id: str, value: bytes | memoryview) -> GroupMetadata:
    """The stored group: Stable in its stored generation if it has members, else Empty
    (Kafka `readGroupMessageValue` + `GroupMetadata.loadGroup`). Each member's stored
    subscription becomes its only supported protocol, as in Kafka."""
    version, body = _version(value)
    if not 0 <= version <= 3:
        raise UnknownRecordVersionError(f"unknown GroupMetadataValue version {version}")
    v = GroupMetadataValue.decode(version, body)
    state_ts = None if v.current_state_timestamp == -1 else v.current_state_timestamp
    group = GroupMetadata(group_id, STABLE if v.members else EMPTY, state_ts)
    group.generation_id = v.generation
    group.protocol_name = v.protocol
    for m in v.members:
        rebalance_timeout = m.rebalance_timeout if version >= 1 else m.session_timeout
        member = MemberMetadata(
            member_id=m.member_id,
            group_instance_id=m.group_instance_id,
            client_id=m.client_id,
            client_host=m.client_host,
            rebalance_timeout_ms=rebalance_timeout,
            session_timeout_ms=m.session_timeout,
            protocol_type=v.protocol_type,
            supported_protocols=[(v.protocol or "", bytes(m.subscription))],
            assignment=bytes(m.assignment),
        )
        group.add(member, None)
    group.protocol_type = v.protocol_type or None  # as stored, whatever `add` set
    group.leader_id = v.leader
    return group


@dataclass
class LoadedPartition:
    """The fold of one partition's records: the latest state of every key."""

    groups: dict[str, GroupMetadata]
    offsets: dict[str, dict[TopicPartition, OffsetAndMetadata]]
    removed_groups: set[str]
    consumer_groups: dict[str, ConsumerGroup]  # KIP-848's (CGRP-13)
    share_groups: dict[str, ShareGroup]  # KIP-932's (SHARE-45)


def fold(
    records: Iterable[tuple[bytes | None, bytes | None]], now_ms: int | None = None
) -> LoadedPartition:
    """Replay a partition in offset order: later records win, tombstones delete (OFFSET-4).

    Records without a key and records of unknown versions are skipped: the first cannot be
    ours, the second were written by a newer Kafka for a feature we do not have."""
    offsets: dict[str, dict[TopicPartition, OffsetAndMetadata]] = {}
    groups: dict[str, bytes | memoryview] = {}
    removed: set[str] = set()
    consumer = consumer_group_records.ConsumerGroupLoader()
    share = share_group_records.ShareGroupLoader()
    for key, value in records:
        if key is None:
            continue
        kind = consumer_group_records.record_type(key)
        if kind in consumer_group_records.RECORD_TYPES:
            consumer.replay(key, value)
            continue
        if kind in share_group_records.RECORD_TYPES:
            share.replay(key, value)
            continue
        try:
            k = read_key(key)
        except UnknownRecordVersionError:
            continue
        if isinstance(k, OffsetKey):
            per_group = offsets.setdefault(k.group, {})
            if value is None:
                per_group.pop(k.topic_partition, None)
            else:
                try:
                    per_group[k.topic_partition] = read_offset_commit_value(value)
                except UnknownRecordVersionError:
                    continue
        elif value is None:
            groups.pop(k.group, None)
            removed.add(k.group)
        else:
            groups[k.group] = value
            removed.discard(k.group)
    loaded: dict[str, GroupMetadata] = {}
    for group_id, value in groups.items():
        try:
            loaded[group_id] = read_group_metadata_value(group_id, value)
        except UnknownRecordVersionError:
            continue
    offsets = {g: o for g, o in offsets.items() if o}
    return LoadedPartition(loaded, offsets, removed, consumer.groups(now_ms), share.groups(now_ms))
