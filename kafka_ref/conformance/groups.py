"""Consumer-group requests at the wire level: a member you can drive one request at a time.

A real consumer runs the classic group protocol for you (JoinGroup, SyncGroup, Heartbeat,
OffsetCommit...) and so can never send a *stale* generation on purpose. `Member` can: each
method sends one request from this member's own connection and returns the decoded answer,
and `send_join`/`finish_join` split JoinGroup in two, because a JoinGroup is parked until
every member has joined, so a test with two members must have both requests in flight.

The protocol type is "consumer" with opaque metadata and assignments: the coordinator never
reads them (the assignor runs in the leader client), which is exactly what lets a test check
that member A receives the bytes the leader gave A and nothing else (REBAL-1).
"""

from __future__ import annotations

import select
import time
from typing import Any

from kafka_ref.conformance.wire import COORDINATOR_NOT_READY, Wire, retrying
from kafka_ref.protocol.messages import (
    ApiKey,
    DeleteGroupsRequest,
    DescribeGroupsRequest,
    FindCoordinatorRequest,
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    ListGroupsRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
    SyncGroupRequest,
)

MEMBER_ID_REQUIRED, NOT_COORDINATOR = 79, 16
JOIN_V, SYNC_V, HEARTBEAT_V, LEAVE_V, COMMIT_V, FETCH_V = 5, 3, 3, 1, 3, 3
# The versions a `Member` speaks unless told others (the newer ones: test_group_versions.py)
MEMBER_VERSIONS = {
    ApiKey.JOIN_GROUP: JOIN_V,
    ApiKey.SYNC_GROUP: SYNC_V,
    ApiKey.HEARTBEAT: HEARTBEAT_V,
    ApiKey.LEAVE_GROUP: LEAVE_V,
}


def coordinator(wire: Wire, group: str) -> tuple[str, int]:
    """(host, port) of the group's coordinator, by FindCoordinator v1 (retried while the
    broker is still creating or loading `__consumer_offsets`).

    When that is the broker `wire` talks to, also until it answers for the group: a new
    KRaft broker names itself coordinator before it has loaded the partition, and answers
    NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS meanwhile (clients retry those)."""
    body = FindCoordinatorRequest(key=group, key_type=0)
    resp = retrying(lambda: wire.request(ApiKey.FIND_COORDINATOR, 1, body))
    if resp.error_code != 0:
        raise RuntimeError(f"FindCoordinator({group}) failed with {resp.error_code}")
    if (resp.host, resp.port) == wire.address:
        retrying(lambda: describe(wire, group), COORDINATOR_NOT_READY | {NOT_COORDINATOR})
    return resp.host, resp.port


class Member:
    """One group member with its own connection to the coordinator."""

    def __init__(
        self,
        wire: Wire,
        group: str,
        session_timeout_ms: int = 10000,
        *,
        rebalance_timeout_ms: int = 10000,
        instance_id: str | None = None,
        versions: dict[int, int] | None = None,
        protocols: list[tuple[str, bytes]] | None = None,
    ) -> None:
        self.wire, self.group = wire, group
        self.versions = {**MEMBER_VERSIONS, **(versions or {})}
        self.protocols = protocols  # (name, metadata); default: "range" with the join's bytes
        self.session_timeout_ms = session_timeout_ms
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.instance_id = instance_id  # group.instance.id: a static member (KIP-345)
        self.member_id = ""
        self.generation = -1
        self.leader = ""
        self.members: list[Any] = []

    def _join_body(self, metadata: bytes) -> Any:
        return JoinGroupRequest(
            group_id=self.group,
            session_timeout_ms=self.session_timeout_ms,
            rebalance_timeout_ms=self.rebalance_timeout_ms,
            member_id=self.member_id,
            group_instance_id=self.instance_id,
            protocol_type="consumer",
            protocols=[
                JoinGroupRequest.JoinGroupRequestProtocol(name=name, metadata=data)
                for name, data in (self.protocols or [("range", metadata)])
            ],
        )

    def get_member_id(self) -> int:
        """The first JoinGroup with an empty id: MEMBER_ID_REQUIRED hands us one (KIP-394).

        Returns the error code (0 if the broker does not use KIP-394 and let us in at once;
        the answer is then pending in a full join, which the caller finishes). Retried while
        a new coordinator is not ready: it answers NOT_COORDINATOR until it has started
        loading its partition, COORDINATOR_LOAD_IN_PROGRESS while it loads."""
        resp = retrying(
            lambda: self.wire.request(
                ApiKey.JOIN_GROUP, self.versions[ApiKey.JOIN_GROUP], self._join_body(b"m")
            ),
            COORDINATOR_NOT_READY | {NOT_COORDINATOR},
        )
        if resp.error_code == MEMBER_ID_REQUIRED:
            self.member_id = resp.member_id
        else:
            self._take(resp)
        return resp.error_code

    def send_join(self, metadata: bytes = b"m") -> None:
        self.wire.send(
            ApiKey.JOIN_GROUP, self.versions[ApiKey.JOIN_GROUP], self._join_body(metadata)
        )

    def finish_join(self) -> Any:
        resp = self.wire.receive()
        self._take(resp)
        return resp

    def _take(self, resp: Any) -> None:
        if resp.error_code == 0:
            self.member_id, self.generation = resp.member_id, resp.generation_id
            self.leader, self.members = resp.leader, list(resp.members)

    def join(self, metadata: bytes = b"m") -> Any:
        self.send_join(metadata)
        return self.finish_join()

    @property
    def is_leader(self) -> bool:
        return self.member_id == self.leader

    def send_sync(self, assignments: dict[str, bytes] | None = None, generation: int | None = None):
        body = SyncGroupRequest(
            group_id=self.group,
            generation_id=self.generation if generation is None else generation,
            member_id=self.member_id,
            group_instance_id=self.instance_id,
            assignments=[
                SyncGroupRequest.SyncGroupRequestAssignment(member_id=m, assignment=a)
                for m, a in (assignments or {}).items()
            ],
        )
        self.wire.send(ApiKey.SYNC_GROUP, self.versions[ApiKey.SYNC_GROUP], body)

    def sync(self, assignments: dict[str, bytes] | None = None, generation: int | None = None):
        self.send_sync(assignments, generation)
        return self.wire.receive()

    def heartbeat(self, generation: int | None = None, member_id: str | None = None) -> int:
        body = HeartbeatRequest(
            group_id=self.group,
            generation_id=self.generation if generation is None else generation,
            member_id=self.member_id if member_id is None else member_id,
            group_instance_id=self.instance_id,
        )
        return self.wire.request(ApiKey.HEARTBEAT, self.versions[ApiKey.HEARTBEAT], body).error_code

    def leave(self) -> int:
        """LeaveGroup for this member alone: its error (the member's own from v3)."""
        version = self.versions[ApiKey.LEAVE_GROUP]
        identity = LeaveGroupRequest.MemberIdentity(
            member_id=self.member_id, group_instance_id=self.instance_id
        )
        body = LeaveGroupRequest(group_id=self.group, member_id=self.member_id, members=[identity])
        resp = self.wire.request(ApiKey.LEAVE_GROUP, version, body)
        return resp.members[0].error_code if version >= 3 and resp.members else resp.error_code


def describe(wire: Wire, group: str) -> Any:
    """DescribeGroups v0 for one group: error_code, group_state, protocol_type, members."""
    body = DescribeGroupsRequest(groups=[group])
    return wire.request(ApiKey.DESCRIBE_GROUPS, 0, body).groups[0]


def list_groups(wire: Wire) -> dict[str, str]:
    """ListGroups v0: {group id: protocol type}."""
    resp = wire.request(ApiKey.LIST_GROUPS, 0, ListGroupsRequest())
    assert resp.error_code == 0
    return {g.group_id: g.protocol_type for g in resp.groups}


def delete_groups(wire: Wire, groups: list[str]) -> dict[str, int]:
    """DeleteGroups v0: {group id: error code}."""
    resp = wire.request(ApiKey.DELETE_GROUPS, 0, DeleteGroupsRequest(groups_names=groups))
    return {r.group_id: r.error_code for r in resp.results}


def form_group(members: list[Member], timeout: float = 30.0) -> None:
    """Bring every member into one generation: ids first, then joins until they meet.

    All joins go out at once, but with no initial rebalance delay the first ones may complete
    a generation alone (REBAL-17); the JoinGroups of the others then wait, parked, until those
    join again. So whenever no answer comes for a moment, every member already answered joins
    again, until all are answered in one generation."""
    for m in members:
        if m.get_member_id() not in (0, MEMBER_ID_REQUIRED):
            raise RuntimeError("JoinGroup refused a new member")
    join_together(members, timeout)


def join_together(members: list[Member], timeout: float = 30.0) -> None:
    """Members that have their ids join until all are answered in one generation (see
    form_group: a join round may complete before every JoinGroup has arrived)."""
    deadline = time.monotonic() + timeout
    for m in members:
        m.send_join()
    waiting = set(members)
    while waiting or len({m.generation for m in members}) > 1 or members[0].generation < 0:
        if time.monotonic() > deadline:
            raise RuntimeError(f"no common generation: {[m.generation for m in members]}")
        by_socket = {m.wire.sock: m for m in waiting}
        ready, _, _ = select.select(list(by_socket), [], [], 0.1)
        for sock in ready:
            by_socket[sock].finish_join()
            waiting.discard(by_socket[sock])
        if not ready:  # the parked joins wait for the members already answered
            for m in members:
                if m not in waiting:
                    m.send_join()
                    waiting.add(m)


def commit(
    wire: Wire,
    group: str,
    offsets: dict[tuple[str, int], int],
    *,
    generation: int = -1,
    member_id: str = "",
    metadata: str | None = "",
    retention_ms: int = -1,
) -> dict[tuple[str, int], int]:
    """OffsetCommit v3; {(topic, partition): error code}. -1/"" commits as a non-member.

    `retention_ms` other than -1 asks for an explicit expiry (v2-v4 only; OFFSET-6)."""
    topics: dict[str, list[Any]] = {}
    for (topic, partition), offset in offsets.items():
        topics.setdefault(topic, []).append(
            OffsetCommitRequest.OffsetCommitRequestPartition(
                partition_index=partition, committed_offset=offset, committed_metadata=metadata
            )
        )
    body = OffsetCommitRequest(
        group_id=group,
        generation_id_or_member_epoch=generation,
        member_id=member_id,
        retention_time_ms=retention_ms,
        topics=[
            OffsetCommitRequest.OffsetCommitRequestTopic(name=t, partitions=p)
            for t, p in topics.items()
        ],
    )
    # retried while every partition says the coordinator is not ready (a new broker's
    # coordinator answers NOT_COORDINATOR until it has loaded its partition)
    not_ready = COORDINATOR_NOT_READY | {NOT_COORDINATOR}
    deadline = time.monotonic() + 20
    while True:
        resp = wire.request(ApiKey.OFFSET_COMMIT, COMMIT_V, body)
        errors = {
            (t.name, p.partition_index): p.error_code for t in resp.topics for p in t.partitions
        }
        if not set(errors.values()) <= not_ready or time.monotonic() > deadline:
            return errors
        time.sleep(0.05)


def fetch_offsets(wire: Wire, group: str, parts: list[tuple[str, int]]) -> dict[tuple, Any]:
    """OffsetFetch v3; {(topic, partition): partition response (committed_offset, metadata)}."""
    topics: dict[str, list[int]] = {}
    for topic, partition in parts:
        topics.setdefault(topic, []).append(partition)
    body = OffsetFetchRequest(
        group_id=group,
        topics=[
            OffsetFetchRequest.OffsetFetchRequestTopic(name=t, partition_indexes=p)
            for t, p in topics.items()
        ],
    )
    # retried while the coordinator loads its partition (a restarted broker answers
    # COORDINATOR_LOAD_IN_PROGRESS or NOT_COORDINATOR at the top level, with no partitions)
    resp = retrying(
        lambda: wire.request(ApiKey.OFFSET_FETCH, FETCH_V, body),
        COORDINATOR_NOT_READY | {NOT_COORDINATOR},
    )
    return {(t.name, p.partition_index): p for t in resp.topics for p in t.partitions}


def two_members(connect, group, **member_options: Any) -> tuple[Member, Member]:
    """Two members in one generation, (leader, follower); options go to `Member`."""
    a, b = Member(connect(), group, **member_options), Member(connect(), group, **member_options)
    form_group([a, b])
    return (a, b) if a.is_leader else (b, a)


def sync_generation(members: list[Member]) -> None:
    """The followers send SyncGroup, the leader syncs (an empty assignment), all answered."""
    leader = next(m for m in members if m.is_leader)
    for m in members:
        if m is not leader:
            m.send_sync()
    leader.sync({})
    for m in members:
        if m is not leader:
            m.wire.receive()


def form_group_again(members: list[Member]) -> None:
    """Sync the current generation, then all rejoin together into the next one."""
    sync_generation(members)
    join_together(members)  # a round may close before every rejoin arrived: again, then
    sync_generation(members)
