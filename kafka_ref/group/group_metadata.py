"""A consumer group as the coordinator sees it: members, generation, state, committed offsets.

A group is a named set of members that share work. The broker that coordinates it keeps, per
group (Kafka: `GroupMetadata`, `MemberMetadata`):

* the **members**, each with the protocols it supports (for consumers: the assignor names,
  each with the member's subscription as bytes), its session and rebalance timeouts, and the
  assignment the leader gave it;
* the **generation**: a number bumped by every completed rebalance. Every request a member
  sends after joining carries it, so the coordinator can tell a member of the current
  generation from one that missed a rebalance (REBAL-4);
* the **leader** (a member, elected by the coordinator, that computes the assignment) and the
  **protocol** chosen for this generation (one every member supports, REBAL-9);
* **static members** (KIP-345): a member that joins with a `group.instance.id` keeps its place
  across restarts; `static_members` maps the instance id to its current member id;
* the **committed offsets** of the group, one per partition.

The state machine (Kafka `GroupState`, `GroupMetadata.validPreviousStates`, REBAL-15) has
five states and five named transitions (`Transition`), each allowed from a fixed set of
states; rebalance.py makes them:

    Empty --PREPARE_REBALANCE--> PreparingRebalance --COMPLETE_JOIN--> CompletingRebalance
      ^                            ^   |                                   |
      |                            |   +--COMPLETE_EMPTY_JOIN--> Empty     | COMPLETE_SYNC
      |                            |                                       v
      +----------------------------+------ PREPARE_REBALANCE ---------- Stable
    any state --REMOVE_GROUP--> Dead

PreparingRebalance collects JoinGroups; CompletingRebalance waits for the leader's
assignment; Stable hands it out. A transition from a state it does not allow is a bug and
raises. What each state holds (an Empty group has no members, a Stable one a leader among
its members, ...) is `check_state`'s (REBAL-28).

Every JoinGroup asks two questions of the whole group: does the joiner share a protocol
with every member (REBAL-9), and has every member joined yet? A group keeps both answers
as counts, as Kafka does (`supportedProtocols`, `numMembersAwaitingJoin`): how many members
support each protocol, and how many wait for their JoinGroup answer. They change only in
`add`, `remove`, `update_member` and `invoke_join`, so a join costs the same in a group of
3 members as in one of 3,000; counting the members on every join would make the rebalance
of n members cost n^2.

Rules: REBAL-4, REBAL-9, REBAL-11, REBAL-15, REBAL-28, OFFSET-6 (spec/rebalance.md,
spec/offsets.md).
"""

from __future__ import annotations

import enum
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

from kafka_ref.clock import TimerHandle
from kafka_ref.common import OffsetAndMetadata, TopicPartition
from kafka_ref.group.messages import JoinCallback, JoinGroupResult, SyncCallback, SyncGroupResult
from kafka_ref.protocol.consumer_protocol import decode_subscription
from kafka_ref.seams import seam

CONSUMER_PROTOCOL_TYPE = "consumer"


class GroupState(enum.Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"

    @property
    def wire_name(self) -> str:
        """Kafka's name of the state, as DescribeGroups and ListGroups send it."""
        return self.value


EMPTY = GroupState.EMPTY
PREPARING_REBALANCE = GroupState.PREPARING_REBALANCE
COMPLETING_REBALANCE = GroupState.COMPLETING_REBALANCE
STABLE = GroupState.STABLE
DEAD = GroupState.DEAD

ALL_STATES = frozenset(GroupState)


class Transition(NamedTuple):
    """A named move of the state machine: from any of `sources` to `target` (REBAL-15)."""

    name: str
    sources: frozenset[GroupState]
    target: GroupState


PREPARE_REBALANCE = Transition(
    "PrepareRebalance",  # Kafka `prepareRebalance`: a member joins, leaves, changes, expires
    frozenset({EMPTY, STABLE, COMPLETING_REBALANCE}),
    PREPARING_REBALANCE,
)
COMPLETE_JOIN = Transition(
    "CompleteJoin",  # Kafka `onCompleteJoin`: a new generation, its leader and protocol
    frozenset({PREPARING_REBALANCE}),
    COMPLETING_REBALANCE,
)
COMPLETE_EMPTY_JOIN = Transition(
    "CompleteEmptyJoin",  # Kafka `onCompleteJoin` when no member is left
    frozenset({PREPARING_REBALANCE}),
    EMPTY,
)
COMPLETE_SYNC = Transition(
    "CompleteSync",  # Kafka `handleSyncGroup`: the leader's assignment is stored
    frozenset({COMPLETING_REBALANCE}),
    STABLE,
)
REMOVE_GROUP = Transition(
    "RemoveGroup",  # Kafka `onGroupUnloaded`, `deleteGroups`, `cleanupGroupMetadata`
    ALL_STATES,
    DEAD,
)
TRANSITIONS = (PREPARE_REBALANCE, COMPLETE_JOIN, COMPLETE_EMPTY_JOIN, COMPLETE_SYNC, REMOVE_GROUP)


class IllegalGroupStateError(RuntimeError):
    """A transition Kafka's state machine does not have: a coordinator bug."""


@dataclass(eq=False)
class MemberMetadata:
    """One member (Kafka `MemberMetadata`). The first block is what GroupMetadataValue stores;
    the rest lives only in memory while the member waits for a rebalance."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    supported_protocols: list[tuple[str, bytes]]
    assignment: bytes = b""
    # -- runtime --
    awaiting_join_callback: JoinCallback | None = None  # its JoinGroup, waiting for the round
    awaiting_sync_callback: SyncCallback | None = None  # its SyncGroup, waiting for the leader
    is_new: bool = False  # joined, but its first rebalance has not completed yet
    heartbeat_timer: TimerHandle | None = None  # its session timer

    @property
    def is_awaiting_join(self) -> bool:
        return self.awaiting_join_callback is not None

    @property
    def is_awaiting_sync(self) -> bool:
        return self.awaiting_sync_callback is not None

    @property
    def is_static_member(self) -> bool:
        return self.group_instance_id is not None

    def protocols(self) -> list[str]:
        return [name for name, _ in self.supported_protocols]

    def metadata(self, protocol: str) -> bytes:
        for name, data in self.supported_protocols:
            if name == protocol:
                return data
        raise KeyError(f"member {self.member_id} does not support protocol {protocol!r}")

    def matches(self, protocols: list[tuple[str, bytes]]) -> bool:
        """Same protocols, same order, same metadata: a rejoin that changes nothing."""
        return [(n, bytes(d)) for n, d in protocols] == [
            (n, bytes(d)) for n, d in self.supported_protocols
        ]


@seam
def select_protocol(preferences: Sequence[Sequence[str]]) -> str:
    """Kafka `GroupMetadata.selectProtocol` (REBAL-9): the protocol a generation uses.

    `preferences`: one list per member, in the members' join order, of the protocols (for
    consumers: assignor names) it supports, most preferred first. The candidates are the
    protocols *every* member supports; each member votes for the first of its own list
    that is a candidate; the candidate with the most votes wins, and of candidates with
    equally many votes the one that got its first vote earliest (for determinism; Kafka
    leaves ties to a hash map's order). The coordinator only calls this when the members
    share at least one protocol (JoinGroup refuses a member that would break that)."""
    candidates = set.intersection(*(set(p) for p in preferences))
    votes: dict[str, int] = {}
    for protocols in preferences:
        choice = next(name for name in protocols if name in candidates)
        votes[choice] = votes.get(choice, 0) + 1
    return max(votes, key=lambda name: votes[name])  # max keeps the first of equals


@seam
def elect_joined_leader(leader_id: str, joined: Sequence[str]) -> str | None:
    """Kafka `GroupMetadata.maybeElectNewJoinedLeader` (REBAL-9): who leads the generation.

    `leader_id`: the leader of the previous generation. `joined`: the members that joined
    this rebalance, in join order. The leader stays if it joined (its assignor state and
    the members' view stay put); else the first member that joined leads; None when no
    member joined (the coordinator then waits for the rebalance timeout)."""
    if leader_id in joined:
        return leader_id
    return joined[0] if joined else None


class GroupMetadata:
    """One group's state (Kafka `GroupMetadata`). Pure data plus the transitions' bookkeeping;
    the coordinator decides when to call what."""

    def __init__(self, group_id: str, state: GroupState = EMPTY, now_ms: int | None = None):
        self.group_id = group_id
        self.state = state
        self.protocol_type: str | None = None
        self.generation_id = 0
        self.protocol_name: str | None = None
        self.leader_id: str | None = None
        self.members: dict[str, MemberMetadata] = {}
        self.static_members: dict[str, str] = {}  # group.instance.id -> member id
        self.pending_members: set[str] = set()  # KIP-394: got an id, has not joined with it
        self.pending_sync_members: set[str] = set()
        self.protocol_counts: Counter[str] = Counter()  # protocol -> members supporting it
        self.awaiting_join_count = 0  # members whose JoinGroup waits for its answer
        self.offsets: dict[TopicPartition, OffsetAndMetadata] = {}
        self.pending_offset_commits: dict[TopicPartition, int] = {}  # appends in flight
        self.current_state_timestamp: int | None = now_ms
        self.new_member_added = False  # extends the initial rebalance delay
        # runtime timers of the coordinator
        self.join_timer: TimerHandle | None = None  # DelayedJoin or InitialDelayedJoin
        self.join_is_initial = False  # the join timer is an InitialDelayedJoin
        self.sync_timer: TimerHandle | None = None  # the pending-sync timeout (REBAL-13)

    # -- state ----------------------------------------------------------------------
    def is_(self, state: GroupState) -> bool:
        return self.state is state

    def transition(self, transition: Transition, now_ms: int) -> None:
        """Make `transition`, which must be allowed from the current state (REBAL-15)."""
        if self.state not in transition.sources:
            raise IllegalGroupStateError(
                f"group {self.group_id}: {transition.name} from {self.state.wire_name} "
                f"is illegal (only from {sorted(s.wire_name for s in transition.sources)})"
            )
        self.state = transition.target
        self.current_state_timestamp = now_ms

    def can_rebalance(self) -> bool:
        return self.state in PREPARE_REBALANCE.sources

    def check_state(self) -> None:
        """Assert what the current state promises (REBAL-28); the rebalance calls this after
        each of its transitions. It reads every member: once per rebalance, not per join."""
        members, leader = self.members, self.leader_id
        if self.is_(EMPTY):
            assert not members, f"group {self.group_id} is Empty with members {list(members)}"
        elif self.is_(PREPARING_REBALANCE):
            assert self.join_timer is not None, (
                f"group {self.group_id} is PreparingRebalance with no timer to end the join"
            )
            waiting = [m.member_id for m in members.values() if m.is_awaiting_sync]
            assert not waiting and not self.pending_sync_members, (
                f"group {self.group_id} is PreparingRebalance and still waits for the "
                f"SyncGroup of {waiting or sorted(self.pending_sync_members)}"
            )
        elif self.is_(COMPLETING_REBALANCE) or self.is_(STABLE):
            name = f"group {self.group_id} ({self.state.wire_name})"
            assert self.generation_id > 0, f"{name} has no generation"
            assert leader is not None and leader in members, f"{name}: leader {leader!r}"
            assert self.protocol_name is not None, f"{name} has no protocol"
            assert self.protocol_counts[self.protocol_name] == len(members), (
                f"{name}: not every member supports {self.protocol_name!r}"
            )
            if self.is_(COMPLETING_REBALANCE):
                assert self.awaiting_join_count == 0, f"{name} still waits for JoinGroups"
            else:
                waiting = [m.member_id for m in members.values() if m.is_awaiting_sync]
                assert not waiting, f"{name} still waits for the SyncGroup of {waiting}"

    # -- members --------------------------------------------------------------------
    def has(self, member_id: str) -> bool:
        return member_id in self.members

    def get(self, member_id: str) -> MemberMetadata:
        return self.members[member_id]

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    def add(self, member: MemberMetadata, join_callback: JoinCallback | None) -> None:
        if not self.members:
            self.protocol_type = member.protocol_type
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.members[member.member_id] = member
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        self.protocol_counts.update(set(member.protocols()))
        member.awaiting_join_callback = join_callback
        self.awaiting_join_count += member.is_awaiting_join
        self.pending_members.discard(member.member_id)

    def update_member(
        self,
        member: MemberMetadata,
        protocols: list[tuple[str, bytes]],
        join_callback: JoinCallback | None,
    ) -> None:
        """A member rejoins, with these protocols, waiting for `join_callback`'s answer
        (Kafka `updateMember`); a member no longer in the group changes alone."""
        counted = self.members.get(member.member_id) is member
        if counted:
            self.protocol_counts.subtract(set(member.protocols()))
            self.awaiting_join_count -= member.is_awaiting_join
        member.supported_protocols = protocols
        member.awaiting_join_callback = join_callback
        if counted:
            self.protocol_counts.update(set(member.protocols()))
            self.awaiting_join_count += member.is_awaiting_join

    def invoke_join(self, member: MemberMetadata, result: JoinGroupResult) -> bool:
        """Answer the member's waiting JoinGroup, if one waits (Kafka
        `maybeInvokeJoinCallback`)."""
        callback, member.awaiting_join_callback = member.awaiting_join_callback, None
        if callback is None:
            return False
        if self.members.get(member.member_id) is member:
            self.awaiting_join_count -= 1
        callback(result)
        return True

    @staticmethod
    def invoke_sync(member: MemberMetadata, result: SyncGroupResult) -> bool:
        """Answer the member's waiting SyncGroup, if one waits."""
        callback, member.awaiting_sync_callback = member.awaiting_sync_callback, None
        if callback is None:
            return False
        callback(result)
        return True

    def remove(self, member_id: str) -> MemberMetadata | None:
        member = self.members.pop(member_id, None)
        if member is not None:
            self.protocol_counts.subtract(set(member.protocols()))
            self.awaiting_join_count -= member.is_awaiting_join
        instance_id = None if member is None else member.group_instance_id
        if instance_id is not None and self.static_members.get(instance_id) == member_id:
            del self.static_members[instance_id]
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)
        self.pending_members.discard(member_id)
        self.pending_sync_members.discard(member_id)
        return member

    def is_pending_member(self, member_id: str) -> bool:
        return member_id in self.pending_members

    def current_static_member_id(self, instance_id: str | None) -> str | None:
        return None if instance_id is None else self.static_members.get(instance_id)

    def is_static_member_fenced(self, member_id: str, instance_id: str | None) -> bool:
        """A known instance id mapped to another member id: the caller is a zombie (REBAL-11)."""
        current = self.current_static_member_id(instance_id)
        return current is not None and current != member_id

    def replace_static_member(self, instance_id: str, old_id: str, new_id: str) -> MemberMetadata:
        """Give a static member a new member id, keeping everything else (Kafka
        `replaceStaticMember`). The old id is fenced from now on."""
        member = self.members.pop(old_id)
        member.member_id = new_id
        self.members[new_id] = member
        if self.leader_id == old_id:
            self.leader_id = new_id
        self.static_members[instance_id] = new_id
        if old_id in self.pending_sync_members:
            self.pending_sync_members.discard(old_id)
            self.pending_sync_members.add(new_id)
        return member

    def num_awaiting_join(self) -> int:
        return self.awaiting_join_count

    def has_all_members_joined(self) -> bool:
        return self.num_awaiting_join() == len(self.members) and not self.pending_members

    def not_yet_rejoined_members(self) -> list[MemberMetadata]:
        return [m for m in self.members.values() if not m.is_awaiting_join]

    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def maybe_elect_new_joined_leader(self) -> bool:
        """Keep the leader if it rejoined, else pick a member that did; False if none did."""
        if self.leader_id is None:
            return False
        joined = [m for m, member in self.members.items() if member.is_awaiting_join]
        leader = elect_joined_leader(self.leader_id, joined)
        if leader is None:
            return False
        self.leader_id = leader
        return True

    # -- protocols ------------------------------------------------------------------
    def candidate_protocols(self) -> set[str]:
        """Protocols every member supports."""
        everyone = len(self.members)
        return {p for p, n in self.protocol_counts.items() if n == everyone} if everyone else set()

    def supports_protocols(self, protocol_type: str, protocols: list[str]) -> bool:
        """May a member with these protocols join (else INCONSISTENT_GROUP_PROTOCOL)?"""
        if self.is_(EMPTY) or not self.members:
            return bool(protocol_type) and bool(protocols)
        return self.protocol_type == protocol_type and bool(
            self.candidate_protocols() & set(protocols)
        )

    def select_protocol(self) -> str:
        """The protocol of the next generation, by the members' vote (`select_protocol`)."""
        return select_protocol([m.protocols() for m in self.members.values()])

    def init_next_generation(self, now_ms: int) -> None:
        """A rebalance completed: bump the generation, choose the protocol (REBAL-9)."""
        self.generation_id += 1
        if self.members:
            self.protocol_name = self.select_protocol()
            self.transition(COMPLETE_JOIN, now_ms)
        else:
            self.protocol_name = None
            self.transition(COMPLETE_EMPTY_JOIN, now_ms)

    def current_member_metadata(self) -> list[tuple[str, str | None, bytes]]:
        """(member id, instance id, metadata for the chosen protocol): what the leader gets."""
        assert self.protocol_name is not None
        return [
            (m.member_id, m.group_instance_id, m.metadata(self.protocol_name))
            for m in self.members.values()
        ]

    # -- offsets --------------------------------------------------------------------
    def uses_consumer_group_protocol(self) -> bool:
        """Kafka `usesConsumerGroupProtocol`: the members are consumers ("consumer")."""
        return self.protocol_type == CONSUMER_PROTOCOL_TYPE

    def subscribed_topics(self) -> set[str] | None:
        """Topics the members subscribe to, for a consumer group whose subscriptions decode
        (none for a consumer group without members); None when unknown (KIP-496 then
        expires nothing while the group is Stable). Kafka `computeSubscribedTopics`."""
        if not self.uses_consumer_group_protocol():
            return None
        if not self.members:
            return set()
        if self.protocol_name is None:
            return None
        topics: set[str] = set()
        try:
            for member in self.members.values():
                _, sub = decode_subscription(member.metadata(self.protocol_name))
                topics.update(sub.topics)
        except Exception:  # not the consumer protocol after all: be conservative
            return None
        return topics

    def is_subscribed_to_topic(self, topic: str) -> bool:
        """Kafka `isSubscribedToTopic`: may a member be reading `topic`? When the
        subscriptions cannot be told, a consumer group is taken to read every topic
        (OffsetDelete then deletes nothing of it, OFFSET-15)."""
        topics = self.subscribed_topics()
        return self.uses_consumer_group_protocol() if topics is None else topic in topics

    def remove_expired_offsets(
        self, now_ms: int, retention_ms: int
    ) -> dict[TopicPartition, OffsetAndMetadata]:
        """Kafka 2.1+ expiry (KIP-211, KIP-496; OFFSET-6): which offsets have expired, removed.

        * a commit with an explicit expire timestamp (old clients) expires at that time;
        * a group with a protocol type that is Empty: `retention_ms` after it became Empty;
        * a Stable consumer group: offsets of topics nobody subscribes to, `retention_ms`
          after their commit;
        * a group without a protocol type (simple consumers, admin tools): `retention_ms`
          after the commit.
        Offsets with an append in flight never expire.
        """
        if self.protocol_type is not None and self.is_(EMPTY):
            subscribed: set[str] = set()

            def base(om: OffsetAndMetadata) -> int:
                ts = self.current_state_timestamp
                return om.commit_timestamp if ts is None else ts
        elif self.protocol_type is None:
            subscribed = set()

            def base(om: OffsetAndMetadata) -> int:
                return om.commit_timestamp
        elif self.is_(STABLE) and (topics := self.subscribed_topics()) is not None:
            subscribed = topics

            def base(om: OffsetAndMetadata) -> int:
                return om.commit_timestamp
        else:
            return {}
        expired = {}
        for tp, om in self.offsets.items():
            if tp.topic in subscribed or tp in self.pending_offset_commits:
                continue
            if om.expire_timestamp is not None:
                if now_ms >= om.expire_timestamp:
                    expired[tp] = om
            elif now_ms - base(om) >= retention_ms:
                expired[tp] = om
        for tp in expired:
            del self.offsets[tp]
        return expired

    def __repr__(self) -> str:
        return (
            f"GroupMetadata({self.group_id!r}, {self.state.wire_name}, gen={self.generation_id}, "
            f"leader={self.leader_id!r}, members={list(self.members)})"
        )


__all__ = [
    "ALL_STATES",
    "COMPLETE_EMPTY_JOIN",
    "COMPLETE_JOIN",
    "COMPLETE_SYNC",
    "COMPLETING_REBALANCE",
    "DEAD",
    "EMPTY",
    "PREPARE_REBALANCE",
    "PREPARING_REBALANCE",
    "REMOVE_GROUP",
    "STABLE",
    "TRANSITIONS",
    "GroupMetadata",
    "GroupState",
    "IllegalGroupStateError",
    "MemberMetadata",
    "Transition",
]
