"""A share group's records in `__consumer_offsets` (KIP-932), and how they load back.

A share group is kept like a KIP-848 consumer group (kafka_ref/group/consumer_group_records.py):
small records keyed by what they describe, which compaction keeps one of, with their own
record types (the kafka-group-coordinator jar's JSON files, Kafka's
`GroupCoordinatorRecordHelpers.newShareGroup*Record`):

    type  key (non-flexible)                     value (flexible, version 0)
    10    ShareGroupMemberMetadata               a member's rack, client, subscribed topics
    11    ShareGroupMetadata                     group epoch, metadata hash
    12    ShareGroupTargetAssignmentMetadata     the target assignment's epoch
    13    ShareGroupTargetAssignmentMember       a member's target partitions
    14    ShareGroupCurrentMemberAssignment      a member's epochs, state, assigned partitions
    15    ShareGroupStatePartitionMetadata       share-partitions initializing, initialized,
                                                 deleting

A member that leaves gets tombstones for 14, 13 and 10; a deleted group for every member's,
then 12, 15 and 11 (Kafka `createGroupTombstoneRecords`). Loading replays the records in
offset order (`ShareGroupLoader`): a coordinator that moves or restarts has every member back
with its epoch and assignment, and knows which share-partitions it initialized (SHARE-45).

Rules: SHARE-45.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from kafka_ref.group.consumer_group import Assignment, assignment
from kafka_ref.group.consumer_group_records import (
    Record,
    encode_key,
    encode_value,
    key_schema,
    record_type,
    topic_partitions,
)
from kafka_ref.protocol.schema import Field, Message, StructSchema
from kafka_ref.share.share_group import (
    ShareGroup,
    ShareGroupMember,
    ShareMemberState,
    TopicPartitions,
)

MEMBER_METADATA = 10
GROUP_METADATA = 11
TARGET_ASSIGNMENT_METADATA = 12
TARGET_ASSIGNMENT_MEMBER = 13
CURRENT_MEMBER_ASSIGNMENT = 14
STATE_PARTITION_METADATA = 15
RECORD_TYPES = frozenset(range(MEMBER_METADATA, STATE_PARTITION_METADATA + 1))


def _value(name: str, fields: list[Field]) -> Message:
    return Message(name, api_key=None, valid_versions="0", flexible_versions="0+", fields=fields)


GroupKey = key_schema("ShareGroupMetadataKey", "GroupId")
MemberKey = key_schema("ShareGroupMemberMetadataKey", "GroupId", "MemberId")

GroupMetadataValue = _value(
    "ShareGroupMetadataValue", [Field("Epoch", "int32", "0+"), Field("MetadataHash", "int64", "0+")]
)
MemberMetadataValue = _value(
    "ShareGroupMemberMetadataValue",
    [
        Field("RackId", "string", "0+", nullable_versions="0+"),
        Field("ClientId", "string", "0+"),
        Field("ClientHost", "string", "0+"),
        Field("SubscribedTopicNames", "[]string", "0+"),
    ],
)
TargetMetadataValue = _value(
    "ShareGroupTargetAssignmentMetadataValue",
    [
        Field("AssignmentEpoch", "int32", "0+"),
        Field("AssignmentTimestamp", "int64", "0+", default=0, tagged_versions="0+", tag=0),
    ],
)
_TOPIC_PARTITION = [Field("TopicId", "uuid", "0+"), Field("Partitions", "[]int32", "0+")]
TargetMemberValue = _value(
    "ShareGroupTargetAssignmentMemberValue",
    [Field("TopicPartitions", "[]TopicPartition", "0+", fields=_TOPIC_PARTITION)],
)
CurrentAssignmentValue = _value(
    "ShareGroupCurrentMemberAssignmentValue",
    [
        Field("MemberEpoch", "int32", "0+"),
        Field("PreviousMemberEpoch", "int32", "0+"),
        Field("State", "int8", "0+"),
        Field("AssignedPartitions", "[]TopicPartitions", "0+", fields=_TOPIC_PARTITION),
    ],
)
_TOPIC_PARTITIONS_INFO = StructSchema(
    "TopicPartitionsInfo",
    [
        Field("TopicId", "uuid", "0+"),
        Field("TopicName", "string", "0+"),
        Field("Partitions", "[]int32", "0+"),
    ],
)
StatePartitionMetadataValue = _value(
    "ShareGroupStatePartitionMetadataValue",
    [
        Field("InitializingTopics", "[]TopicPartitionsInfo", "0+", fields=_TOPIC_PARTITIONS_INFO),
        Field("InitializedTopics", "[]TopicPartitionsInfo", "0+", fields=_TOPIC_PARTITIONS_INFO),
        Field(
            "DeletingTopics",
            "[]TopicInfo",
            "0+",
            fields=[Field("TopicId", "uuid", "0+"), Field("TopicName", "string", "0+")],
        ),
    ],
)

_KEYS = {
    GROUP_METADATA: GroupKey,
    TARGET_ASSIGNMENT_METADATA: GroupKey,
    STATE_PARTITION_METADATA: GroupKey,
    MEMBER_METADATA: MemberKey,
    TARGET_ASSIGNMENT_MEMBER: MemberKey,
    CURRENT_MEMBER_ASSIGNMENT: MemberKey,
}


def _key(kind: int, group_id: str, member_id: str | None = None) -> bytes:
    return encode_key(_KEYS[kind], kind, group_id, member_id)


# -- writing (Kafka `GroupCoordinatorRecordHelpers`) ------------------------------------
def group_epoch_record(group: ShareGroup) -> Record:
    value = GroupMetadataValue(epoch=group.group_epoch, metadata_hash=group.metadata_hash)
    return _key(GROUP_METADATA, group.group_id), encode_value(GroupMetadataValue, value)


def member_metadata_record(group_id: str, member: ShareGroupMember) -> Record:
    value = MemberMetadataValue(
        rack_id=member.rack_id,
        client_id=member.client_id,
        client_host=member.client_host,
        subscribed_topic_names=list(member.subscribed_topic_names),
    )
    key = _key(MEMBER_METADATA, group_id, member.member_id)
    return key, encode_value(MemberMetadataValue, value)


def target_epoch_record(group: ShareGroup, now_ms: int) -> Record:
    value = TargetMetadataValue(
        assignment_epoch=group.target_assignment_epoch, assignment_timestamp=now_ms
    )
    return _key(TARGET_ASSIGNMENT_METADATA, group.group_id), encode_value(
        TargetMetadataValue, value
    )


def target_member_record(group_id: str, member_id: str, target: Assignment) -> Record:
    struct = TargetMemberValue.TopicPartition
    value = TargetMemberValue(topic_partitions=topic_partitions(target, struct))
    key = _key(TARGET_ASSIGNMENT_MEMBER, group_id, member_id)
    return key, encode_value(TargetMemberValue, value)


def current_assignment_record(group_id: str, member: ShareGroupMember) -> Record:
    value = CurrentAssignmentValue(
        member_epoch=member.member_epoch,
        previous_member_epoch=member.previous_member_epoch,
        state=int(member.state),
        assigned_partitions=topic_partitions(
            member.assigned, CurrentAssignmentValue.TopicPartitions
        ),
    )
    key = _key(CURRENT_MEMBER_ASSIGNMENT, group_id, member.member_id)
    return key, encode_value(CurrentAssignmentValue, value)


def state_partition_metadata_record(group: ShareGroup) -> Record:
    """Which share-partitions the group initialized, is initializing, is deleting."""
    v = StatePartitionMetadataValue

    def infos(topics: TopicPartitions) -> list:
        return [
            _TOPIC_PARTITIONS_INFO.cls(topic_id=t, topic_name=name, partitions=sorted(parts))
            for t, (name, parts) in sorted(topics.items())
        ]

    value = v(
        initializing_topics=infos(group.initializing),
        initialized_topics=infos(group.initialized),
        deleting_topics=[
            v.TopicInfo(topic_id=t, topic_name=name) for t, name in sorted(group.deleting.items())
        ],
    )
    return _key(STATE_PARTITION_METADATA, group.group_id), encode_value(v, value)


def member_tombstones(group_id: str, member_id: str) -> list[Record]:
    """A member that left: its current assignment, target and metadata, in Kafka's order."""
    return [
        (_key(t, group_id, member_id), None)
        for t in (CURRENT_MEMBER_ASSIGNMENT, TARGET_ASSIGNMENT_MEMBER, MEMBER_METADATA)
    ]


def group_tombstones(group: ShareGroup) -> list[Record]:
    """A deleted group (Kafka `createGroupTombstoneRecords` for a share group)."""
    records = []
    for member_id in group.members:
        records.extend(member_tombstones(group.group_id, member_id))
    for kind in (TARGET_ASSIGNMENT_METADATA, STATE_PARTITION_METADATA, GROUP_METADATA):
        records.append((_key(kind, group.group_id), None))
    return records


# -- reading --------------------------------------------------------------------------
@dataclass
class _LoadingGroup:
    epoch: int = 0
    metadata_hash: int = 0
    target_epoch: int = 0
    members: dict[str, dict] = field(default_factory=dict)
    targets: dict[str, Assignment] = field(default_factory=dict)
    current: dict[str, dict] = field(default_factory=dict)
    partitions: object = None  # the last StatePartitionMetadataValue


def _assignment_of(topic_partitions) -> dict[uuid.UUID, frozenset]:
    return assignment((tp.topic_id, tp.partitions) for tp in topic_partitions)


class ShareGroupLoader:
    """Replays share group records in offset order; `groups()` builds the result."""

    def __init__(self) -> None:
        self._groups: dict[str, _LoadingGroup] = {}

    def replay(self, key: bytes | memoryview, value: bytes | memoryview | None) -> None:
        kind = record_type(key)
        k = _KEYS[kind].decode(0, memoryview(key)[2:])
        member_id = getattr(k, "member_id", None)
        if value is None:
            self._tombstone(kind, k.group_id, member_id)
            return
        body = memoryview(value)[2:]
        group = self._groups.setdefault(k.group_id, _LoadingGroup())
        if kind == GROUP_METADATA:
            v = GroupMetadataValue.decode(0, body)
            group.epoch, group.metadata_hash = v.epoch, v.metadata_hash
        elif kind == TARGET_ASSIGNMENT_METADATA:
            group.target_epoch = TargetMetadataValue.decode(0, body).assignment_epoch
        elif kind == STATE_PARTITION_METADATA:
            group.partitions = StatePartitionMetadataValue.decode(0, body)
        elif kind == MEMBER_METADATA:
            v = MemberMetadataValue.decode(0, body)
            group.members[member_id] = dict(
                rack_id=v.rack_id,
                client_id=v.client_id,
                client_host=v.client_host,
                subscribed_topic_names=tuple(v.subscribed_topic_names),
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
                state=ShareMemberState(v.state),
                assigned=_assignment_of(v.assigned_partitions),
            )

    def _tombstone(self, kind: int, group_id: str, member_id: str | None) -> None:
        group = self._groups.get(group_id)
        if group is None:
            return
        if kind == GROUP_METADATA:
            del self._groups[group_id]
        elif kind == STATE_PARTITION_METADATA:
            group.partitions = None
        elif kind == MEMBER_METADATA:
            group.members.pop(member_id, None)
        elif kind == TARGET_ASSIGNMENT_MEMBER:
            group.targets.pop(member_id, None)
        elif kind == CURRENT_MEMBER_ASSIGNMENT:
            group.current.pop(member_id, None)

    def groups(self, now_ms: int) -> dict[str, ShareGroup]:
        loaded = {}
        for group_id, g in self._groups.items():
            group = ShareGroup(group_id, now_ms)
            group.group_epoch, group.metadata_hash = g.epoch, g.metadata_hash
            group.target_assignment_epoch = g.target_epoch
            for member_id, metadata in g.members.items():
                current = g.current.get(member_id, {})
                group.update_member(ShareGroupMember(member_id, **metadata, **current))
                if member_id in g.targets:
                    group.target_assignment[member_id] = g.targets[member_id]
            if g.partitions is not None:
                p = g.partitions
                group.initializing = _topics(p.initializing_topics)
                group.initialized = _topics(p.initialized_topics)
                group.deleting = {t.topic_id: t.topic_name for t in p.deleting_topics}
            loaded[group_id] = group
        return loaded


def _topics(infos) -> TopicPartitions:
    return {i.topic_id: (i.topic_name, frozenset(i.partitions)) for i in infos}
