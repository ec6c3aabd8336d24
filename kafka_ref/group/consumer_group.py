"""A group of the consumer group protocol (KIP-848): epochs, members, target and ownership.

A classic group (group_metadata.py) rebalances in rounds that stop every member, and lets a
client-side leader decide who reads what. A consumer group of KIP-848 is driven by the
coordinator alone, through three numbers and two assignments (Kafka `ConsumerGroup`,
`ConsumerGroupMember`):

* the **group epoch** is bumped whenever what the assignment depends on changes: a member
  joins or leaves, a subscription changes, a subscribed topic gains partitions (CGRP-4);
* the **target assignment** is what the server-side assignor computed for the group epoch
  `target_assignment_epoch` (consumer_group_assignors.py): where each member should end up;
* each member has its **member epoch** and its **current assignment**: the partitions it may
  use now (`assigned`), and those it must give up (`pending_revocation`). A member reaches
  the target one heartbeat at a time (reconciliation.py); its epoch catches up with the
  target's once it owns exactly its target partitions (CGRP-5).

The group also knows, for every partition, which member owns it (in `assigned` or
`pending_revocation`): `owners`. A partition has at most one owner, the invariant the
whole protocol exists for, and `update_member` asserts it (CGRP-6).

The group's state is derived, never set (Kafka `maybeUpdateGroupState`): Empty without
members; Assigning while the target lags the group epoch; Reconciling while some member has
not reached the target; Stable otherwise.

The group shares the coordinator's cache with classic groups (`GroupMetadataManager.groups`,
one group type per id) and keeps its committed offsets the same way (`offsets`,
`pending_offset_commits`), so committing and fetching offsets is common code.

Rules: CGRP-4..CGRP-6 (spec/consumer_group.md).
"""

from __future__ import annotations

import enum
import re
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

from kafka_ref.common import OffsetAndMetadata, TopicPartition

CONSUMER_GROUP_TYPE = "consumer"  # Kafka `Group.GroupType.CONSUMER`
CONSUMER_PROTOCOL_TYPE = "consumer"

Assignment = Mapping[uuid.UUID, frozenset[int]]
"""Partitions by topic id; a topic with no partitions is left out."""

EMPTY_ASSIGNMENT: Assignment = {}

# Kafka `ConsumerGroupHeartbeatRequest.JOIN_GROUP_MEMBER_EPOCH` and its leave epochs
JOIN_EPOCH = 0
LEAVE_EPOCH = -1
STATIC_LEAVE_EPOCH = -2


def assignment(pairs: Iterable[tuple[uuid.UUID, Iterable[int]]]) -> dict[uuid.UUID, frozenset]:
    """An assignment from (topic id, partitions) pairs: merged, empty topics dropped."""
    merged: dict[uuid.UUID, set[int]] = {}
    for topic_id, partitions in pairs:
        merged.setdefault(topic_id, set()).update(partitions)
    return {t: frozenset(p) for t, p in merged.items() if p}


def partitions_of(a: Assignment) -> set[tuple[uuid.UUID, int]]:
    """Every (topic id, partition) of an assignment."""
    return {(t, p) for t, parts in a.items() for p in parts}


class ConsumerGroupState(enum.Enum):
    """Kafka `ConsumerGroup.ConsumerGroupState`."""

    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"

    @property
    def wire_name(self) -> str:
        return self.value


class MemberState(enum.IntEnum):
    """Where a member is on its way to the target (Kafka `MemberState`, stored as int8)."""

    UNREVOKED_PARTITIONS = 0  # it must first give up `pending_revocation`
    UNRELEASED_PARTITIONS = 1  # at the target epoch, waiting for others to release some
    STABLE = 2  # owns its target assignment, or all of it it can have
    UNKNOWN = 127


@dataclass(frozen=True)
class ConsumerGroupMember:
    """A member as a value (Kafka `ConsumerGroupMember`): every change makes a new one, so
    the old and the new can be compared (which records to write, what to answer)."""

    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    rebalance_timeout_ms: int = -1
    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: MemberState = MemberState.STABLE
    assigned: Assignment = field(default_factory=dict)
    pending_revocation: Assignment = field(default_factory=dict)

    def with_changes(self, **changes) -> ConsumerGroupMember:
        return replace(self, **changes)

    def subscribes_to(self, topic: str) -> bool:
        """By name, or by the regex matched against the whole name (RE2/J `matches`);
        internal topics are not skipped, as Kafka's coordinator does not skip them."""
        if topic in self.subscribed_topic_names:
            return True
        regex = self.subscribed_topic_regex
        return bool(regex) and _full_match(regex, topic)

    def is_reconciled_to(self, target_epoch: int) -> bool:
        return self.state is MemberState.STABLE and self.member_epoch == target_epoch

    def owned_partitions(self) -> set[tuple[uuid.UUID, int]]:
        return partitions_of(self.assigned) | partitions_of(self.pending_revocation)


def _full_match(regex: str, topic: str) -> bool:
    try:
        return re.fullmatch(regex, topic) is not None
    except re.error:
        return False


def valid_regex(regex: str) -> bool:
    """Does Python's `re` compile it? (INVALID_REGULAR_EXPRESSION otherwise, CGRP-12)."""
    try:
        re.compile(regex)
    except re.error:
        return False
    return True


class ConsumerGroup:
    """One consumer group (Kafka `ConsumerGroup`)."""

    group_type = CONSUMER_GROUP_TYPE
    protocol_type = CONSUMER_PROTOCOL_TYPE

    def __init__(self, group_id: str, now_ms: int | None = None) -> None:
        self.group_id = group_id
        self.group_epoch = 0
        self.metadata_hash = 0  # of the subscribed topics: partitions counts (CGRP-4)
        self.target_assignment_epoch = 0
        self.target_assignment: dict[str, Assignment] = {}
        self.members: dict[str, ConsumerGroupMember] = {}
        self.static_members: dict[str, str] = {}  # instance id -> member id
        self.owners: dict[tuple[uuid.UUID, int], str] = {}  # partition -> owning member
        self.dead = False
        self.offsets: dict[TopicPartition, OffsetAndMetadata] = {}
        self.pending_offset_commits: dict[TopicPartition, int] = {}
        self.current_state_timestamp: int | None = now_ms

    # -- state ----------------------------------------------------------------------
    @property
    def state(self) -> ConsumerGroupState:
        if self.dead:
            return ConsumerGroupState.DEAD
        if not self.members:
            return ConsumerGroupState.EMPTY
        if self.group_epoch > self.target_assignment_epoch:
            return ConsumerGroupState.ASSIGNING
        if any(not m.is_reconciled_to(self.target_assignment_epoch) for m in self.members.values()):
            return ConsumerGroupState.RECONCILING
        return ConsumerGroupState.STABLE

    def is_(self, state) -> bool:
        """The state by its wire name, so the code shared with classic groups (offsets,
        listing, deletion) may ask `is_(EMPTY)` or `is_(DEAD)` of either kind."""
        return self.state.wire_name == state.wire_name

    def transition(self, transition, now_ms: int) -> None:
        """The one transition a consumer group makes, to Dead (REMOVE_GROUP: deleted,
        expired or unloaded); its other states are derived."""
        assert transition.target.wire_name == ConsumerGroupState.DEAD.wire_name, transition
        self.dead = True
        self.current_state_timestamp = now_ms

    @property
    def generation_id(self) -> int:
        return self.group_epoch

    def uses_consumer_group_protocol(self) -> bool:
        return True

    # -- members --------------------------------------------------------------------
    def owner_of(self, topic_id: uuid.UUID, partition: int) -> str | None:
        return self.owners.get((topic_id, partition))

    def update_member(self, member: ConsumerGroupMember) -> None:
        """Add or replace a member, moving the ownership of its partitions (CGRP-6)."""
        self._release(self.members.get(member.member_id))
        for tp in member.owned_partitions():
            owner = self.owners.setdefault(tp, member.member_id)
            assert owner == member.member_id, (
                f"group {self.group_id}: partition {tp} given to {member.member_id} "
                f"while {owner} still owns it"
            )
        self.members[member.member_id] = member
        if member.instance_id is not None:
            self.static_members[member.instance_id] = member.member_id

    def remove_member(self, member_id: str) -> ConsumerGroupMember | None:
        member = self.members.pop(member_id, None)
        self._release(member)
        self.target_assignment.pop(member_id, None)
        instance_id = None if member is None else member.instance_id
        if instance_id is not None and self.static_members.get(instance_id) == member_id:
            del self.static_members[instance_id]
        return member

    def _release(self, member: ConsumerGroupMember | None) -> None:
        if member is None:
            return
        for tp in member.owned_partitions():
            if self.owners.get(tp) == member.member_id:
                del self.owners[tp]

    def subscribed_topics(self, topics: Iterable[str]) -> set[str]:
        """Of the cluster's `topics`, those some member subscribes to (names or regex)."""
        names = list(topics)
        return {t for t in names if any(m.subscribes_to(t) for m in self.members.values())}

    def is_subscribed_to_topic(self, topic: str) -> bool:
        """Kafka `isSubscribedToTopic` (OffsetDelete's GROUP_SUBSCRIBED_TO_TOPIC)."""
        return any(m.subscribes_to(topic) for m in self.members.values())

    def preferred_server_assignor(self) -> str | None:
        """The assignor most members ask for (Kafka `preferredServerAssignor`)."""
        counts: dict[str, int] = {}
        for m in self.members.values():
            if m.server_assignor:
                counts[m.server_assignor] = counts.get(m.server_assignor, 0) + 1
        return max(sorted(counts), key=lambda name: counts[name]) if counts else None

    def remove_expired_offsets(
        self, now_ms: int, retention_ms: int
    ) -> dict[TopicPartition, OffsetAndMetadata]:
        """Kafka's consumer group expiry: an offset of a topic no member subscribes to
        expires `retention_ms` after its commit (OffsetExpirationConditionImpl)."""
        expired = {
            tp: om
            for tp, om in self.offsets.items()
            if not self.is_subscribed_to_topic(tp.topic)
            and tp not in self.pending_offset_commits
            and now_ms - om.commit_timestamp >= retention_ms
        }
        for tp in expired:
            del self.offsets[tp]
        return expired

    def check_invariants(self) -> None:
        """Every owned partition has exactly one owner, recorded in `owners` (CGRP-6)."""
        seen: dict[tuple[uuid.UUID, int], str] = {}
        for member in self.members.values():
            for tp in member.owned_partitions():
                assert tp not in seen, f"{tp} owned by {seen[tp]} and {member.member_id}"
                seen[tp] = member.member_id
        assert seen == self.owners, f"group {self.group_id}: owners out of date"

    def __repr__(self) -> str:
        return (
            f"ConsumerGroup({self.group_id!r}, {self.state.wire_name}, epoch={self.group_epoch}, "
            f"target={self.target_assignment_epoch}, members={list(self.members)})"
        )
