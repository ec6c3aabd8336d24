"""What members and the coordinator say to each other in a rebalance, as plain values.

The rebalance (rebalance.py) never touches a socket: the broker's request handlers
(kafka_ref/server/handlers/groups.py) and the tests turn requests into these values and
answers back into responses. Each one is a named record, field by field Kafka's:

* `JoinRequest`: one JoinGroup, as the coordinator keeps it while it handles it (Kafka
  `JoinGroupRequestData`): who the member is (member id, `group.instance.id`, client id and
  host), its two timeouts and the protocols it supports, each with its metadata (for
  consumers: an assignor name and the member's subscription).
* `JoinGroupResult` and `JoinedMember`: the answer to a JoinGroup. Every member learns the
  generation, the chosen protocol and the leader; only the leader's answer lists the members
  with their metadata, so that it can compute the assignment (REBAL-9).
* `SyncGroupResult`: the answer to a SyncGroup, the member's own assignment (REBAL-1).
* `LeavingMember`: one member a LeaveGroup names (REBAL-12, REBAL-22).

A member that waits for the coordinator waits as a callback that takes one of these answers
(`JoinCallback`, `SyncCallback`); the member record (`MemberMetadata`, group_metadata.py)
holds it until the rebalance answers it, exactly once.

Rules: REBAL-9, REBAL-20, REBAL-21, REBAL-22 (spec/rebalance.md).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple

from kafka_ref.errors import ErrorCode


@dataclass(frozen=True)
class JoinRequest:
    """One JoinGroup: the joining member as it describes itself (Kafka `JoinGroupRequest`)."""

    member_id: str  # "" for a member that joins for the first time
    group_instance_id: str | None  # KIP-345: set for a static member
    require_known_member_id: bool  # JoinGroup v4+: hand out the id first (KIP-394)
    client_id: str
    client_host: str
    rebalance_timeout_ms: int  # how long a rebalance waits for it (max.poll.interval.ms)
    session_timeout_ms: int  # how long it may stay silent
    protocol_type: str  # "consumer" for consumers
    protocols: list[tuple[str, bytes]]  # (name, metadata), most preferred first
    reason: str | None = None  # JoinGroup v8+: only logged (REBAL-20)
    supports_skip_assignment: bool = False  # JoinGroup v9+ (KIP-814, REBAL-21)

    def protocol_names(self) -> list[str]:
        return [name for name, _ in self.protocols]


@dataclass
class JoinedMember:
    """A member as the leader's JoinGroup answer lists it."""

    member_id: str
    group_instance_id: str | None
    metadata: bytes  # its metadata for the chosen protocol (a consumer's subscription)


@dataclass
class JoinGroupResult:
    error: ErrorCode
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str = ""
    member_id: str = ""
    members: list[JoinedMember] = field(default_factory=list)  # the leader's answer only
    skip_assignment: bool = False  # JoinGroup v9+: the leader must not assign (REBAL-21)


JoinCallback = Callable[[JoinGroupResult], None]


@dataclass
class SyncGroupResult:
    error: ErrorCode
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


SyncCallback = Callable[[SyncGroupResult], None]


class LeavingMember(NamedTuple):
    """One member a LeaveGroup names: by member id, or (an admin) by instance id alone."""

    member_id: str | None
    instance_id: str | None = None
    reason: str | None = None  # LeaveGroup v5+: only logged (REBAL-20)


class LeaveResult(NamedTuple):
    """The answer to one `LeavingMember` (LeaveGroup v3+ answers each alone, REBAL-22)."""

    member_id: str | None
    instance_id: str | None
    error: ErrorCode
