"""Membership between rebalances: heartbeats, sessions, and leaving.

A member stays in its group by heartbeating within its session timeout (Kafka:
`GroupCoordinator.handleHeartbeat`; each heartbeat restarts the member's session timer,
`completeAndScheduleNextExpiration`). A member silent for its session timeout is removed and
the others rebalance (REBAL-6), except one parked in a JoinGroup or SyncGroup: it waits for
the coordinator, it is not silent (Kafka `hasSatisfiedHeartbeat`). A heartbeat during a
rebalance is answered REBALANCE_IN_PROGRESS, which tells the member to rejoin (REBAL-5);
from a generation that is over, ILLEGAL_GENERATION (REBAL-3); from a member the group does
not know, or no longer knows because it was removed, UNKNOWN_MEMBER_ID (REBAL-4), which
tells the client to join again as a new member.

A member that leaves on purpose (LeaveGroup, Kafka `handleLeaveGroup`) is removed at once and
the group rebalances without waiting for a timeout (REBAL-12); since KIP-345 an admin can
remove a static member by its `group.instance.id`. Removing a member answers whatever it was
waiting for (UNKNOWN_MEMBER_ID) and either starts a rebalance (Stable, CompletingRebalance)
or lets the one under way complete without it (PreparingRebalance).

A pending member (KIP-394: it has its id but has not joined with it yet) has a timer of its
own: if it never comes back within its session timeout it is forgotten (REBAL-10).

A part of `GroupRebalance` (rebalance.py).

Since LeaveGroup v3 one request removes a batch of members, each by member id and/or
instance id and each with its own answer (REBAL-22); v5 adds a reason per member, logged
(REBAL-20).

Rules: REBAL-3, REBAL-4, REBAL-5, REBAL-6, REBAL-12, REBAL-20, REBAL-22 (spec/rebalance.md).
"""

from __future__ import annotations

import logging

from kafka_ref.errors import ErrorCode
from kafka_ref.group.group_metadata import (
    COMPLETING_REBALANCE,
    DEAD,
    EMPTY,
    PREPARING_REBALANCE,
    STABLE,
    GroupMetadata,
    MemberMetadata,
)
from kafka_ref.group.join_round import JoinGroupResult
from kafka_ref.group.sync_round import SyncGroupResult

logger = logging.getLogger("kafka_ref.group.rebalance")

OK = ErrorCode.NO_ERROR


class MemberSessions:
    """Heartbeat, LeaveGroup, session timers and removal (a part of `GroupRebalance`)."""

    def heartbeat(
        self, group_id: str, member_id: str, group_instance_id: str | None, generation_id: int
    ) -> ErrorCode:
        error = self.group_status(group_id)
        if error == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
            return OK  # the member will learn what happened at its next rebalance
        if error != OK:
            return error
        group = self.manager.get_group(group_id)
        if group is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if group.is_(DEAD):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if group.is_static_member_fenced(member_id, group_instance_id):
            return ErrorCode.FENCED_INSTANCE_ID
        if not group.has(member_id) or group.is_(EMPTY):
            return ErrorCode.UNKNOWN_MEMBER_ID
        if generation_id != group.generation_id:
            return ErrorCode.ILLEGAL_GENERATION
        self.arm_heartbeat(group, group.get(member_id))
        if group.is_(PREPARING_REBALANCE):
            return ErrorCode.REBALANCE_IN_PROGRESS
        return OK

    def leave_group(
        self, group_id: str, members: list[tuple[str | None, ...]]
    ) -> tuple[ErrorCode, list[tuple[str, str | None, ErrorCode]]]:
        """Members leave now instead of at their session timeout (KIP-345: by instance id).

        Each member is (member id, instance id) or, from LeaveGroup v5, (member id, instance
        id, reason): the reason is only logged (REBAL-20). Each gets its own answer
        (REBAL-22)."""
        error = self.group_status(group_id)
        if error != OK:
            return error, []
        group = self.manager.get_group(group_id)
        if group is None:
            return OK, [(m, i, ErrorCode.UNKNOWN_MEMBER_ID) for m, i in members]
        if group.is_(DEAD):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, []
        results = []
        for member_id, instance_id, *reason in members:
            why = reason[0] if reason and reason[0] else "not provided"
            logger.info(
                "member %r (instance %r) leaves group %s; client reason: %s",
                member_id,
                instance_id,
                group_id,
                why,
            )
            if not member_id:  # an admin removing a static member by its instance id
                current = group.current_static_member_id(instance_id)
                if current is None:
                    code = ErrorCode.UNKNOWN_MEMBER_ID
                else:
                    self._remove_member_and_update_group(group, group.get(current))
                    code = OK
            elif group.is_pending_member(member_id):
                self._remove_pending_member(group, member_id)
                code = OK
            elif group.is_static_member_fenced(member_id, instance_id):
                code = ErrorCode.FENCED_INSTANCE_ID
            elif not group.has(member_id):
                code = ErrorCode.UNKNOWN_MEMBER_ID
            else:
                self._remove_member_and_update_group(group, group.get(member_id))
                code = OK
            results.append((member_id, instance_id, code))
        return OK, results

    def arm_heartbeat(self, group, member: MemberMetadata, timeout_ms: int | None = None):
        """(Re)start the member's session timer (Kafka `completeAndScheduleNextExpiration`)."""
        self._cancel_heartbeat(member)

        def expire() -> None:
            member.heartbeat_timer = None
            if group.is_(DEAD) or group.members.get(member.member_id) is not member:
                return
            # Kafka `hasSatisfiedHeartbeat`: a known member parked in a JoinGroup or SyncGroup
            # is waiting for the coordinator, not silent; its timer restarts when answered.
            if not member.is_new and (member.is_awaiting_join or member.is_awaiting_sync):
                return
            self._remove_member_and_update_group(group, member)

        timeout = member.session_timeout_ms if timeout_ms is None else timeout_ms
        member.heartbeat_timer = self._timer(timeout, expire)

    def _remove_member_and_update_group(self, group, member: MemberMetadata) -> None:
        # a member that timed out while its JoinGroup waited gets an answer it can act on
        group.invoke_join(member, JoinGroupResult(ErrorCode.UNKNOWN_MEMBER_ID))
        self._invoke_sync(member, SyncGroupResult(ErrorCode.UNKNOWN_MEMBER_ID))
        self._cancel_heartbeat(member)
        group.remove(member.member_id)
        if group.is_(STABLE) or group.is_(COMPLETING_REBALANCE):
            self._maybe_prepare_rebalance(group)
        elif group.is_(PREPARING_REBALANCE):
            self._try_complete_join(group)

    def _remove_pending_member(self, group: GroupMetadata, member_id: str) -> None:
        group.pending_members.discard(member_id)
        self._cancel_pending_timer(group, member_id)
        if group.is_(PREPARING_REBALANCE):
            self._try_complete_join(group)

    def _arm_pending_member(self, group: GroupMetadata, member_id: str, timeout_ms: int) -> None:
        def expire() -> None:
            self._pending_timers.pop((group.group_id, member_id), None)
            if group.is_pending_member(member_id):
                self._remove_pending_member(group, member_id)

        self._pending_timers[(group.group_id, member_id)] = self._timer(timeout_ms, expire)

    def _cancel_pending_timer(self, group: GroupMetadata, member_id: str) -> None:
        timer = self._pending_timers.pop((group.group_id, member_id), None)
        if timer is not None:
            timer.cancel()

    @staticmethod
    def _cancel_heartbeat(member: MemberMetadata) -> None:
        if member.heartbeat_timer is not None:
            member.heartbeat_timer.cancel()
            member.heartbeat_timer = None
