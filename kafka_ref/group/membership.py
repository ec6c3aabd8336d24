"""Group membership: who is in a group, and how the coordinator notices who is gone.

A consumer group's coordinator (Kafka: `GroupCoordinator`) keeps, for every group, its
members: each with the member id the coordinator gave it, its session timeout, its client id
and host, the protocols it supports and its current assignment (group_metadata.py). This
module holds that bookkeeping and everything that ends a membership:

* **Heartbeat.** Between rebalances every member heartbeats within its session timeout.
  A member silent for its session timeout is removed and the others rebalance (REBAL-6);
  a heartbeat during a rebalance is answered REBALANCE_IN_PROGRESS, which tells the member
  to rejoin (REBAL-5). Requests from a generation that is over are ILLEGAL_GENERATION
  (REBAL-3); from a member the group does not know, UNKNOWN_MEMBER_ID (REBAL-4).
* **LeaveGroup.** A member that leaves on purpose is removed at once and the group
  rebalances without waiting for a timeout (REBAL-12); since KIP-345 an admin can remove a
  static member by its `group.instance.id`.
* **Timers.** Every timeout is a timer of the injected `Scheduler` (asyncio's `call_later`
  in the broker, `ManualScheduler` in tests): nothing here reads a wall clock.

How members join and get their share, the rebalance itself, is rebalance.py, which builds on
this class; `coordinator.py` adds committed offsets and the group admin APIs on top.

Rules: REBAL-3..REBAL-6, REBAL-12 (spec/rebalance.md).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kafka_ref.clock import Clock, Scheduler
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
from kafka_ref.group.group_metadata_manager import GroupMetadataManager

OK = ErrorCode.NO_ERROR
NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000  # Kafka's NewMemberJoinTimeoutMs


@dataclass
class GroupConfig:
    """Broker configs of the coordinator, with Kafka's names and defaults."""

    group_min_session_timeout_ms: int = 6000  # group.min.session.timeout.ms
    group_max_session_timeout_ms: int = 1800000  # group.max.session.timeout.ms
    group_initial_rebalance_delay_ms: int = 3000  # group.initial.rebalance.delay.ms
    group_max_size: int = 2**31 - 1  # group.max.size
    offsets_topic_num_partitions: int = 50  # offsets.topic.num.partitions
    offsets_retention_minutes: int = 10080  # offsets.retention.minutes
    offsets_retention_check_interval_ms: int = 600000  # offsets.retention.check.interval.ms
    offset_metadata_max_bytes: int = 4096  # offset.metadata.max.bytes


@dataclass
class JoinedMember:
    member_id: str
    group_instance_id: str | None
    metadata: bytes


@dataclass
class JoinGroupResult:
    error: ErrorCode
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str = ""
    member_id: str = ""
    members: list[JoinedMember] = field(default_factory=list)  # the leader's answer only


@dataclass
class SyncGroupResult:
    error: ErrorCode
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


JoinCallback = Callable[[JoinGroupResult], None]
SyncCallback = Callable[[SyncGroupResult], None]


class GroupMembership:
    """Members, sessions, Heartbeat and LeaveGroup over the manager's groups."""

    def __init__(
        self,
        config: GroupConfig,
        clock: Clock,
        schedule: Scheduler,
        manager: GroupMetadataManager,
        new_uuid: Callable[[], str] | None = None,
    ) -> None:
        self.config = config
        self.clock = clock
        self._schedule = schedule
        self.manager = manager
        self._new_uuid = new_uuid or (lambda: str(uuid.uuid4()))
        self._active = True
        self._pending_timers: dict[tuple[str, str], Any] = {}

    def _now(self) -> int:
        return self.clock.milliseconds()

    def _timer(self, delay_ms: int, fn: Callable[[], None]) -> Any:
        return self._schedule(max(delay_ms, 0) / 1000.0, fn)

    def _group_status(self, group_id: str | None, *, allow_empty_id: bool = False) -> ErrorCode:
        """Kafka `validateGroupStatus`: is this broker the group's coordinator right now?"""
        if group_id is None or (group_id == "" and not allow_empty_id):
            return ErrorCode.INVALID_GROUP_ID
        if not self._active:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if self.manager.is_group_loading(group_id):
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        if not self.manager.is_group_local(group_id):
            return ErrorCode.NOT_COORDINATOR
        return OK

    # -- the rebalance's hooks (rebalance.py) -------------------------------------------
    def _maybe_prepare_rebalance(self, group: GroupMetadata) -> None:
        """Start a rebalance if the group's state allows one (GroupRebalance)."""
        raise NotImplementedError

    def _try_complete_join(self, group: GroupMetadata) -> bool:
        """Complete the join phase if every member has rejoined (GroupRebalance)."""
        raise NotImplementedError

    # -- Heartbeat and LeaveGroup ---------------------------------------------------
    def heartbeat(
        self, group_id: str, member_id: str, group_instance_id: str | None, generation_id: int
    ) -> ErrorCode:
        error = self._group_status(group_id)
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
        self._arm_heartbeat(group, group.get(member_id))
        if group.is_(PREPARING_REBALANCE):
            return ErrorCode.REBALANCE_IN_PROGRESS
        return OK

    def leave_group(
        self, group_id: str, members: list[tuple[str, str | None]]
    ) -> tuple[ErrorCode, list[tuple[str, str | None, ErrorCode]]]:
        """Members leave now instead of at their session timeout (KIP-345: by instance id)."""
        error = self._group_status(group_id)
        if error != OK:
            return error, []
        group = self.manager.get_group(group_id)
        if group is None:
            return OK, [(m, i, ErrorCode.UNKNOWN_MEMBER_ID) for m, i in members]
        if group.is_(DEAD):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, []
        results = []
        for member_id, instance_id in members:
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

    # -- removal and timers ---------------------------------------------------------
    def _remove_member_and_update_group(self, group, member: MemberMetadata) -> None:
        # a member that timed out while its JoinGroup waited gets an answer it can act on
        self._invoke_join(member, JoinGroupResult(ErrorCode.UNKNOWN_MEMBER_ID))
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

    def _arm_heartbeat(self, group, member: MemberMetadata, timeout_ms: int | None = None):
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

    @staticmethod
    def _cancel_timer(group: GroupMetadata, name: str) -> None:
        timer = getattr(group, name)
        if timer is not None:
            timer.cancel()
            setattr(group, name, None)

    @staticmethod
    def _invoke_join(member: MemberMetadata, result: JoinGroupResult) -> bool:
        callback, member.awaiting_join_callback = member.awaiting_join_callback, None
        if callback is not None:
            callback(result)
        return callback is not None

    @staticmethod
    def _invoke_sync(member: MemberMetadata, result: SyncGroupResult) -> bool:
        callback, member.awaiting_sync_callback = member.awaiting_sync_callback, None
        if callback is not None:
            callback(result)
        return callback is not None
