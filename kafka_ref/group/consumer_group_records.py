"""A consumer group's records in `__consumer_offsets` (KIP-848), and how they load back.

A classic group is one GroupMetadata record rewritten at every rebalance (offsets_records.py).
A consumer group changes at every heartbeat that moves something, so Kafka splits it into
small records, each keyed by what it describes, which compaction keeps one of (Kafka's
`CoordinatorRecordHelpers`; the layouts are the kafka-group-coordinator jar's JSON files):

    type  key (non-flexible)          value (flexible, version 0)
    3     ConsumerGroupMetadata        group epoch, metadata hash (tagged)
    5     ConsumerGroupMemberMetadata  a member's subscription, ids, rebalance timeout, assignor
    6     ...TargetAssignmentMetadata  the target assignment's epoch
    7     ...TargetAssignmentMember    a member's target partitions
    8     ...CurrentMemberAssignment   a member's epoch, state, assigned and revoking partitions

A key starts with its int16 record type (the JSON's `apiKey`), a value with its int16
version, then the fields. A member that leaves gets tombstones for its three records (8, 7
and 5, in that order); a deleted group for all of them, then 6 and 3 (Kafka
`createGroupTombstoneRecords`). Loading replays the records in offset order into groups
(`ConsumerGroupLoader`): a coordinator that moves or restarts has every member back with its
epoch and assignment (CGRP-13). Type 4 (ConsumerGroupPartitionMetadata, replaced by the
metadata hash in Kafka 4) and 9 (regular expressions, which kafka-ref resolves on each
heartbeat instead) are not written and are skipped when read.

Rules: CGRP-13.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from kafka_ref.group.consumer_group import (
    Assignment,
    ConsumerGroup,
    ConsumerGroupMember,
    MemberState,
    assignment,
)
from kafka_ref.protocol.schema import Field, Message, StructSchema

GROUP_METADATA = 3
PARTITION_METADATA = 4
MEMBER_METADATA = 5
TARGET_ASSIGNMENT_METADATA = 6
TARGET_ASSIGNMENT_MEMBER = 7
CURRENT_MEMBER_ASSIGNMENT = 8
REGULAR_EXPRESSION = 9
RECORD_TYPES = frozenset(range(GROUP_METADATA, REGULAR_EXPRESSION + 1))
VALUE_VERSION = 0


def key_schema(name: str, *fields: str) -> Message:
    """A record key's schema: string fields, version 0, not flexible (Kafka's
    `coordinator-key` JSONs; share groups' records use it too)."""
    return Message(
        name,
        api_key=None,
        valid_versions="0",
        flexible_versions="none",
        fields=[Field(f, "string", "0") for f in fields],
    )


GroupKey = key_schema("ConsumerGroupMetadataKey", "GroupId")
MemberKey = key_schema("ConsumerGroupMemberMetadataKey", "GroupId", "MemberId")

GroupMetadataValue = Message(
    "ConsumerGroupMetadataValue",
    api_key=None,
    valid_versions="0",
    flexible_versions="0+",
    fields=[
        Field("Epoch", "int32", "0+"),
        Field("MetadataHash", "int64", "0+", default=0, tagged_versions="0+", tag=0),
    ],
)

MemberMetadataValue = Message(
    "ConsumerGroupMemberMetadataValue",
    api_key=None,
    valid_versions="0",
    flexible_versions="0+",
    fields=[
        Field("InstanceId", "string", "0+", nullable_versions="0+"),
        Field("RackId", "string", "0+", nullable_versions="0+"),
        Field("ClientId", "string", "0+"),
        Field("ClientHost", "string", "0+"),
        Field("SubscribedTopicNames", "[]string", "0+"),
        Field("SubscribedTopicRegex", "string", "0+", nullable_versions="0+"),
        Field("RebalanceTimeoutMs", "int32", "0+", default=-1),
        Field("ServerAssignor", "string", "0+", nullable_versions="0+"),
        # ClassicMemberMetadata (tag 0): for classic members in a consumer group, which
        # kafka-ref does not have (CGRP-15); an unknown tag is skipped when read
    ],
)

TargetMetadataValue = Message(
    "ConsumerGroupTargetAssignmentMetadataValue",
    api_key=None,
    valid_versions="0",
    flexible_versions="0+",
    fields=[
        Field("AssignmentEpoch", "int32", "0+"),
        Field("AssignmentTimestamp", "int64", "0+", default=0, tagged_versions="0+", tag=0),
    ],
)

_TOPIC_PARTITION = [Field("TopicId", "uuid", "0+"), Field("Partitions", "[]int32", "0+")]

TargetMemberValue = Message(
    "ConsumerGroupTargetAssignmentMemberValue",
    api_key=None,
    valid_versions="0",
    flexible_versions="0+",
    fields=[Field("TopicPartitions", "[]TopicPartition", "0+", fields=_TOPIC_PARTITION)],
)

TOPIC_PARTITIONS = StructSchema(
    "TopicPartitions",
    [
        *_TOPIC_PARTITION,
        Field(
            "AssignmentEpochs",
            "[]int32",
            "0+",
            nullable_versions="0+",
            default=None,
            tagged_versions="0+",
            tag=0,
        ),
    ],
)

CurrentAssignmentValue = Message(
    "ConsumerGroupCurrentMemberAssignmentValue",
    api_key=None,
    valid_versions="0",
    flexible_versions="0+",
    fields=[
        Field("MemberEpoch", "int32", "0+"),
        Field("PreviousMemberEpoch", "int32", "0+"),
        Field("State", "int8", "0+"),
        Field("AssignedPartitions", "[]TopicPartitions", "0+", fields=TOPIC_PARTITIONS),
        Field("PartitionsPendingRevocation", "[]TopicPartitions", "0+", fields=TOPIC_PARTITIONS),
    ],
)

_KEYS = {
    GROUP_METADATA: GroupKey,
    TARGET_ASSIGNMENT_METADATA: GroupKey,
    MEMBER_METADATA: MemberKey,
    TARGET_ASSIGNMENT_MEMBER: MemberKey,
    CURRENT_MEMBER_ASSIGNMENT: MemberKey,
}

Record = tuple[bytes, bytes | None]


def _i16(n: int) -> bytes:
    return n.to_bytes(2, "big", signed=True)


def encode_key(schema: Message, record_type: int, group_id: str, member_id: str | None) -> bytes:
    """A key: its int16 record type, then its fields."""
    values = {"group_id": group_id}
    if member_id is not None:
        values["member_id"] = member_id
    return _i16(record_type) + schema.encode(0, schema(**values))


def encode_value(schema: Message, value) -> bytes:
    """A value: its int16 version (0), then its fields."""
    return _i16(VALUE_VERSION) + schema.encode(VALUE_VERSION, value)


def _encode_key(record_type: int, group_id: str, member_id: str | None = None) -> bytes:
    return encode_key(_KEYS[record_type], record_type, group_id, member_id)


def topic_partitions(a: Assignment, struct) -> list:
    """An assignment as a record's TopicPartitions structs, by topic id."""
    return [struct(topic_id=t, partitions=sorted(parts)) for t, parts in sorted(a.items())]


# -- writing (Kafka `CoordinatorRecordHelpers`) ----------------------------------------
def group_epoch_record(group: ConsumerGroup) -> Record:
    value = GroupMetadataValue(epoch=group.group_epoch, metadata_hash=group.metadata_hash)
    return _encode_key(GROUP_METADATA, group.group_id), encode_value(GroupMetadataValue, value)


def member_metadata_record(group_id: str, member: ConsumerGroupMember) -> Record:
    value = MemberMetadataValue(
        instance_id=member.instance_id,
        rack_id=member.rack_id,
        client_id=member.client_id,
        client_host=member.client_host,
        subscribed_topic_names=list(member.subscribed_topic_names),
        subscribed_topic_regex=member.subscribed_topic_regex,
        rebalance_timeout_ms=member.rebalance_timeout_ms,
        server_assignor=member.server_assignor,
    )
    key = _encode_key(MEMBER_METADATA, group_id, member.member_id)
    return key, encode_value(MemberMetadataValue, value)


def target_epoch_record(group: ConsumerGroup, now_ms: int) -> Record:
    value = TargetMetadataValue(
        assignment_epoch=group.target_assignment_epoch, assignment_timestamp=now_ms
    )
    key = _encode_key(TARGET_ASSIGNMENT_METADATA, group.group_id)
    return key, encode_value(TargetMetadataValue, value)


def target_member_record(group_id: str, member_id: str, target: Assignment) -> Record:
    value = TargetMemberValue(
        topic_partitions=topic_partitions(target, TargetMemberValue.TopicPartition)
    )
    key = _encode_key(TARGET_ASSIGNMENT_MEMBER, group_id, member_id)
    return key, encode_value(TargetMemberValue, value)


def current_assignment_record(group_id: str, member: ConsumerGroupMember) -> Record:
    struct = TOPIC_PARTITIONS.cls
    value = CurrentAssignmentValue(
        member_epoch=member.member_epoch,
        previous_member_epoch=member.previous_member_epoch,
        state=int(member.state),
        assigned_partitions=topic_partitions(member.assigned, struct),
        partitions_pending_revocation=topic_partitions(member.pending_revocation, struct),
    )
    key = _encode_key(CURRENT_MEMBER_ASSIGNMENT, group_id, member.member_id)
    return key, encode_value(CurrentAssignmentValue, value)


def member_tombstones(group_id: str, member_id: str) -> list[Record]:
    """A member that left: its current assignment, target and metadata, in Kafka's order."""
    return [
        (_encode_key(t, group_id, member_id), None)
        for t in (CURRENT_MEMBER_ASSIGNMENT, TARGET_ASSIGNMENT_MEMBER, MEMBER_METADATA)
    ]


def group_tombstones(group: ConsumerGroup) -> list[Record]:
    """A deleted group (Kafka `createGroupTombstoneRecords`)."""
    records = []
    for member_id in group.members:
        records.extend(member_tombstones(group.group_id, member_id))
    records.append((_encode_key(TARGET_ASSIGNMENT_METADATA, group.group_id), None))
    records.append((_encode_key(GROUP_METADATA, group.group_id), None))
    return records


# -- reading --------------------------------------------------------------------------
def record_type(key: bytes | memoryview) -> int:
    return int.from_bytes(bytes(key[:2]), "big", signed=True)


@dataclass
class _LoadingGroup:
    epoch: int = 0
    metadata_hash: int = 0
    target_epoch: int = 0
    exists: bool = False  # a ConsumerGroupMetadata record (or a member's) was seen
    members: dict[str, dict] = field(default_factory=dict)
    targets: dict[str, Assignment] = field(default_factory=dict)
    current: dict[str, dict] = field(default_factory=dict)


def _assignment_of(topic_partitions) -> dict[uuid.UUID, frozenset]:
    return assignment((tp.topic_id, tp.partitions) for tp in topic_partitions)


class ConsumerGroupLoader:
    """Replays consumer group records in offset order; `groups()` builds the result."""

    def __init__(self) -> None:
        self._groups: dict[str, _LoadingGroup] = {}
        self.deleted: set[str] = set()

    def replay(self, key: bytes | memoryview, value: bytes | memoryview | None) -> None:
        kind = record_type(key)
        if kind not in _KEYS:
            return  # partition metadata (4), regular expressions (9): not kept
        k = _KEYS[kind].decode(0, memoryview(key)[2:])
        member_id = getattr(k, "member_id", None)
        if value is None:
            self._tombstone(kind, k.group_id, member_id)
            return
        body = memoryview(value)[2:]
        group = self._groups.setdefault(k.group_id, _LoadingGroup())
        group.exists = True
        self.deleted.discard(k.group_id)
        if kind == GROUP_METADATA:
            v = GroupMetadataValue.decode(0, body)
            group.epoch, group.metadata_hash = v.epoch, v.metadata_hash
        elif kind == TARGET_ASSIGNMENT_METADATA:
            group.target_epoch = TargetMetadataValue.decode(0, body).assignment_epoch
        elif kind == MEMBER_METADATA:
            v = MemberMetadataValue.decode(0, body)
            group.members[member_id] = dict(
                instance_id=v.instance_id,
                rack_id=v.rack_id,
                client_id=v.client_id,
                client_host=v.client_host,
                subscribed_topic_names=tuple(v.subscribed_topic_names),
                subscribed_topic_regex=v.subscribed_topic_regex,
                rebalance_timeout_ms=v.rebalance_timeout_ms,
                server_assignor=v.server_assignor,
            )
        elif kind == TARGET_ASSIGNMENT_MEMBER:
            group.targets[member_id] = _assignment_of(
                TargetMemberValue.decode(0, body).topic_partitions
            )
        else:
            v = CurrentAssignmentValue.decode(0, body)
            group.current[member_id] = dict(
                member_epoch=v.member_epoch,
                previous_member_epoch=v.previous_member_epoch,
                state=MemberState(v.state),
                assigned=_assignment_of(v.assigned_partitions),
                pending_revocation=_assignment_of(v.partitions_pending_revocation),
            )

    def _tombstone(self, kind: int, group_id: str, member_id: str | None) -> None:
        group = self._groups.get(group_id)
        if group is None:
            return
        if kind == GROUP_METADATA:
            del self._groups[group_id]
            self.deleted.add(group_id)
        elif kind == MEMBER_METADATA:
            group.members.pop(member_id, None)
        elif kind == TARGET_ASSIGNMENT_MEMBER:
            group.targets.pop(member_id, None)
        elif kind == CURRENT_MEMBER_ASSIGNMENT:
            group.current.pop(member_id, None)

    def groups(self, now_ms: int) -> dict[str, ConsumerGroup]:
        loaded = {}
        for group_id, g in self._groups.items():
            group = ConsumerGroup(group_id, now_ms)
            group.group_epoch, group.metadata_hash = g.epoch, g.metadata_hash
            group.target_assignment_epoch = g.target_epoch
            for member_id, metadata in g.members.items():
                current = g.current.get(member_id, {})
                group.update_member(ConsumerGroupMember(member_id, **metadata, **current))
                if member_id in g.targets:
                    group.target_assignment[member_id] = g.targets[member_id]
            loaded[group_id] = group
        return loaded
