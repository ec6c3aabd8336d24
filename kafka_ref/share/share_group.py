"""A share group (KIP-932): members that read the same topics as one queue.

A consumer group (kafka_ref/group/consumer_group.py) gives each partition to one member at
a time; a share group lets several members read the same partition, the share-partition on
its leader handing each record to one of them (share_partition.py). Who reads which
partitions is still the group coordinator's decision, and its bookkeeping is KIP-848's
(Kafka `ShareGroup`, `ShareGroupMember`), minus what exclusive ownership needed:

* the **group epoch** is bumped when a member joins or leaves, a subscription changes, or
  the subscribed topics' partitions change (SHARE-42);
* the **target assignment** is what the `simple` assignor computed for the group epoch
  `target_assignment_epoch` (share_group_assignor.py);
* each member has its **member epoch** and its **assignment**. There is nothing to revoke
  first, since a partition may have several readers, so a member reaches its target in the
  heartbeat that sees it: its epoch jumps to the target's and its assignment becomes the
  target's (Kafka `ShareGroupAssignmentBuilder`, SHARE-43).

The group state is derived (Kafka `ShareGroup.ShareGroupState`): Empty without members,
Stable with some, Dead once deleted or unloaded.

A share group also remembers which of its share-partitions have a state at the share
coordinator (Kafka's ShareGroupStatePartitionMetadata): `initializing` (asked for),
`initialized` (done: the assignor may hand them out) and `deleting` (their state is being
removed). Only initialized partitions are assigned (SHARE-46).

A share group commits no offsets to `__consumer_offsets`: where it is in each partition is
its share-partitions' start offsets, kept by the share coordinator. `offsets` is here, and
empty, so the code the coordinator shares among group types can treat it like the others.

Rules: SHARE-42, SHARE-43, SHARE-46 (spec/share_groups.md).
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

from kafka_ref.common import OffsetAndMetadata, TopicPartition
from kafka_ref.group.consumer_group import Assignment, partitions_of

SHARE_GROUP_TYPE = "share"  # Kafka `Group.GroupType.SHARE`
SHARE_PROTOCOL_TYPE = "share"  # Kafka `ShareGroup.PROTOCOL_TYPE`

# Kafka `ShareGroupHeartbeatRequest.JOIN_GROUP_MEMBER_EPOCH`, `LEAVE_GROUP_MEMBER_EPOCH`
JOIN_EPOCH = 0
LEAVE_EPOCH = -1

TopicPartitions = dict[uuid.UUID, tuple[str, frozenset[int]]]
"""Share-partitions by topic id: (topic name, partitions), as ShareGroupStatePartitionMetadata
keeps them."""


class ShareGroupState(enum.Enum):
    """Kafka `ShareGroup.ShareGroupState`."""

    EMPTY = "Empty"
    STABLE = "Stable"
    DEAD = "Dead"

    @property
    def wire_name(self) -> str:
        return self.value


class ShareMemberState(enum.IntEnum):
    """A share member's state (Kafka `MemberState`, stored as int8): a share member is
    always STABLE, for it never waits for another member to release a partition."""

    STABLE = 2


@dataclass(frozen=True)
class ShareGroupMember:
    """A member as a value (Kafka `ShareGroupMember`): every change makes a new one."""

    member_id: str
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()
    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: ShareMemberState = ShareMemberState.STABLE
    assigned: Assignment = field(default_factory=dict)

    def with_changes(self, **changes) -> ShareGroupMember:
        return replace(self, **changes)

    def subscribes_to(self, topic: str) -> bool:
        return topic in self.subscribed_topic_names


class ShareGroup:
    """One share group (Kafka `ShareGroup`)."""

    group_type = SHARE_GROUP_TYPE
    protocol_type = SHARE_PROTOCOL_TYPE

    def __init__(self, group_id: str, now_ms: int | None = None) -> None:
        self.group_id = group_id
        self.group_epoch = 0
        self.metadata_hash = 0  # of the subscribed topics' partition counts (SHARE-42)
        self.target_assignment_epoch = 0
        self.target_assignment: dict[str, Assignment] = {}
        self.members: dict[str, ShareGroupMember] = {}
        # ShareGroupStatePartitionMetadata (SHARE-46)
        self.initializing: TopicPartitions = {}
        self.initialized: TopicPartitions = {}
        self.deleting: dict[uuid.UUID, str] = {}
        self.dead = False
        self.offsets: dict[TopicPartition, OffsetAndMetadata] = {}  # always empty
        self.pending_offset_commits: dict[TopicPartition, int] = {}
        self.current_state_timestamp: int | None = now_ms

    # -- state ----------------------------------------------------------------------
    @property
    def state(self) -> ShareGroupState:
        if self.dead:
            return ShareGroupState.DEAD
        return ShareGroupState.STABLE if self.members else ShareGroupState.EMPTY

    def is_(self, state) -> bool:
        """The state by its wire name, as the code shared with the other group types asks."""
        return self.state.wire_name == state.wire_name

    def transition(self, transition, now_ms: int) -> None:
        """The one transition a share group makes, to Dead (deleted or unloaded)."""
        assert transition.target.wire_name == ShareGroupState.DEAD.wire_name, transition
        self.dead = True
        self.current_state_timestamp = now_ms

    @property
    def generation_id(self) -> int:
        return self.group_epoch

    def uses_consumer_group_protocol(self) -> bool:
        return False

    # -- members --------------------------------------------------------------------
    def update_member(self, member: ShareGroupMember) -> None:
        self.members[member.member_id] = member

    def remove_member(self, member_id: str) -> ShareGroupMember | None:
        self.target_assignment.pop(member_id, None)
        return self.members.pop(member_id, None)

    def subscribed_topic_names(self) -> set[str]:
        return {t for m in self.members.values() for t in m.subscribed_topic_names}

    def is_subscribed_to_topic(self, topic: str) -> bool:
        return any(m.subscribes_to(topic) for m in self.members.values())

    def remove_expired_offsets(
        self, now_ms: int, retention_ms: int
    ) -> dict[TopicPartition, OffsetAndMetadata]:
        """A share group has no committed offsets to expire."""
        return {}

    # -- share-partitions (ShareGroupStatePartitionMetadata) ---------------------------
    def assignable_partitions(self) -> dict[uuid.UUID, frozenset[int]]:
        """What the assignor may hand out: the initialized share-partitions (SHARE-46)."""
        return as_assignment(self.initialized)

    def state_partitions(self) -> set[tuple[uuid.UUID, int]]:
        """Every share-partition that may have a state at the share coordinator: the ones
        initialized and the ones being initialized (a group deletion removes them all)."""
        return state_pairs(self.initialized) | state_pairs(self.initializing)

    def check_invariants(self) -> None:
        """A member at the target's epoch holds its target; nothing is assigned that is not
        initialized (SHARE-43, SHARE-46)."""
        initialized = state_pairs(self.initialized)
        for member in self.members.values():
            assert member.member_epoch <= self.group_epoch, member
            assert partitions_of(member.assigned) <= initialized, (
                f"{member.member_id} assigned a share-partition not initialized"
            )
            if member.member_epoch == self.target_assignment_epoch:
                target = self.target_assignment.get(member.member_id, {})
                assert member.assigned == target, member

    def __repr__(self) -> str:
        return (
            f"ShareGroup({self.group_id!r}, {self.state.wire_name}, epoch={self.group_epoch}, "
            f"target={self.target_assignment_epoch}, members={list(self.members)})"
        )


def state_pairs(topics: TopicPartitions) -> set[tuple[uuid.UUID, int]]:
    """Every (topic id, partition) of a ShareGroupStatePartitionMetadata set."""
    return {(t, p) for t, (_, parts) in topics.items() for p in parts}


def add_partitions(
    topics: TopicPartitions, topic_id: uuid.UUID, name: str, partitions: Iterable[int]
) -> None:
    """Merge partitions of a topic into a ShareGroupStatePartitionMetadata set."""
    _, known = topics.get(topic_id, (name, frozenset()))
    topics[topic_id] = (name, known | frozenset(partitions))


def remove_partitions(
    topics: TopicPartitions, topic_id: uuid.UUID, partitions: Iterable[int]
) -> None:
    if topic_id not in topics:
        return
    name, known = topics[topic_id]
    left = known - frozenset(partitions)
    if left:
        topics[topic_id] = (name, left)
    else:
        del topics[topic_id]


def as_assignment(topics: Mapping[uuid.UUID, tuple[str, frozenset[int]]]) -> Assignment:
    return {t: parts for t, (_, parts) in topics.items() if parts}
