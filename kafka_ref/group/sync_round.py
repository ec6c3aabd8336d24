"""The SyncGroup round: the leader's assignment, handed to every member.

After the JoinGroup round every member sends SyncGroup for the new generation. The leader's
carries the assignment it computed (the assignor runs in the client:
kafka_ref/client/assignors); the others send an empty one and wait, as a callback, for the
leader's. On the leader's, the coordinator writes the group (generation, members,
assignments) to `__consumer_offsets` (group_metadata_manager.py) and, once the write is
durable, hands each member exactly the leader's assignment for this generation, nothing else
and no other generation's (REBAL-1, REBAL-2). Members the leader left out get an empty
assignment; ids it named that are not members are ignored. The group is then Stable.
(Kafka: `GroupCoordinator.handleSyncGroup`, `doSyncGroup`, `propagateAssignment`.)

What can go wrong is answered with an error the member acts on: a SyncGroup of an older
generation is ILLEGAL_GENERATION (REBAL-3), of an unknown member UNKNOWN_MEMBER_ID (REBAL-4),
during a new rebalance REBALANCE_IN_PROGRESS (join again, REBAL-5). If the group moves on while the
write is in flight (a member left, the coordinator moved), the answer is the group's error,
never a stale assignment. A SyncGroup in a Stable group (a retry, or a static member's new
instance) is answered with the assignment the member already has.

A part of `GroupRebalance` (rebalance.py).

Rules: REBAL-1, REBAL-2, REBAL-3, REBAL-4, REBAL-5 (spec/rebalance.md).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kafka_ref.errors import ErrorCode
from kafka_ref.group.group_metadata import (
    COMPLETING_REBALANCE,
    DEAD,
    EMPTY,
    PREPARING_REBALANCE,
    STABLE,
    GroupMetadata,
)

OK = ErrorCode.NO_ERROR


@dataclass
class SyncGroupResult:
    error: ErrorCode
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


SyncCallback = Callable[[SyncGroupResult], None]


class SyncRound:
    """SyncGroup: the leader's assignment to every member (a part of `GroupRebalance`)."""

    def sync_group(
        self,
        group_id: str,
        generation_id: int,
        member_id: str,
        group_instance_id: str | None,
        protocol_type: str | None,
        protocol_name: str | None,
        assignments: dict[str, bytes],
        callback: SyncCallback,
    ) -> None:
        """Get this member's assignment; the leader's call carries everyone's (REBAL-1)."""
        error = self.group_status(group_id)
        if error == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
            error = ErrorCode.REBALANCE_IN_PROGRESS  # the rebalance was lost: join again
        group = self.manager.get_group(group_id) if error == OK else None
        if error == OK:
            error = self._sync_error(
                group, generation_id, member_id, group_instance_id, protocol_type, protocol_name
            )
        if error != OK:
            return callback(SyncGroupResult(error))
        assert group is not None
        member = group.get(member_id)
        if group.is_(STABLE):  # a retry, or a static member's new instance
            self._synced(group, member_id)
            self.arm_heartbeat(group, member)
            return callback(
                SyncGroupResult(OK, group.protocol_type, group.protocol_name, member.assignment)
            )
        member.awaiting_sync_callback = callback
        self._synced(group, member_id)
        if not group.is_leader(member_id):
            return
        # members the leader left out get an empty assignment; unknown ids are ignored
        assignment = {m: bytes(assignments.get(m, b"")) for m in group.members}
        generation = group.generation_id

        def stored(error: ErrorCode) -> None:
            # the group may have moved on while the write was in flight
            if not group.is_(COMPLETING_REBALANCE) or group.generation_id != generation:
                return
            if error != OK:
                self._reset_and_propagate_assignment_error(group, error)
                return self._maybe_prepare_rebalance(group)
            for mid, m in group.members.items():
                m.assignment = assignment.get(mid, b"")
            group.transition_to(STABLE, self._now())
            self._propagate_assignment(group, OK)

        self.manager.store_group(group, assignment, stored)

    def _sync_error(self, group, generation_id, member_id, instance_id, ptype, pname):
        if group is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if group.is_(DEAD):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if group.is_static_member_fenced(member_id, instance_id):
            return ErrorCode.FENCED_INSTANCE_ID
        if not group.has(member_id):
            return ErrorCode.UNKNOWN_MEMBER_ID
        if generation_id != group.generation_id:
            return ErrorCode.ILLEGAL_GENERATION
        if (ptype is not None and ptype != group.protocol_type) or (
            pname is not None and pname != group.protocol_name
        ):
            return ErrorCode.INCONSISTENT_GROUP_PROTOCOL
        if group.is_(EMPTY):
            return ErrorCode.UNKNOWN_MEMBER_ID
        if group.is_(PREPARING_REBALANCE):
            return ErrorCode.REBALANCE_IN_PROGRESS
        return OK

    def _reset_and_propagate_assignment_error(self, group, error: ErrorCode) -> None:
        for member in group.members.values():
            member.assignment = b""
        self._propagate_assignment(group, error)

    def _propagate_assignment(self, group: GroupMetadata, error: ErrorCode) -> None:
        ok = error == OK
        for member in list(group.members.values()):
            result = SyncGroupResult(
                error,
                group.protocol_type if ok else None,
                group.protocol_name if ok else None,
                member.assignment,
            )
            if self._invoke_sync(member, result):
                # its session may have expired unnoticed while it waited: start it afresh
                self.arm_heartbeat(group, member)
