"""The rebalance: who is in a group and who reads what, as one state machine.

A consumer group's coordinator (Kafka: `GroupCoordinator`) keeps, for every group, its
members (`MemberMetadata`, group_metadata.py: member id, instance id, client id and host,
timeouts, protocols, assignment, and what it waits for). `GroupRebalance` is everything that
moves a group between its states. It is driven by two kinds of events, and by nothing else:

* **requests**: JoinGroup (`join_group`), SyncGroup (`sync_group`), Heartbeat (`heartbeat`)
  and LeaveGroup (`leave_group`), whose values are in messages.py;
* **timers** of the injected `Scheduler` (asyncio's `call_later` in the broker,
  `ManualScheduler` in tests): nothing here reads a wall clock.

**The named transitions** (group_metadata.py draws them, REBAL-15) are one method each:

* PREPARE_REBALANCE, Empty, Stable or CompletingRebalance -> PreparingRebalance:
  `_prepare_rebalance`, when a member joins, leaves, expires or changes its subscription;
* COMPLETE_JOIN, PreparingRebalance -> CompletingRebalance, and COMPLETE_EMPTY_JOIN,
  PreparingRebalance -> Empty: `_complete_join`, when the JoinGroup round ends;
* COMPLETE_SYNC, CompletingRebalance -> Stable: `_complete_sync`, when the leader's
  assignment is stored;
* REMOVE_GROUP, any state -> Dead: `unload_group` when the coordinator moves away (the
  coordinator itself removes deleted and expired groups).

Each ends by asserting what the new state holds (`GroupMetadata.check_state`, REBAL-28).

**A rebalance is two rounds** (Kafka `handleJoinGroup`, `handleSyncGroup`):

1. **JoinGroup.** Every member sends the protocols it supports (for consumers: assignor
   names, each with its subscription). A new member first gets its id (KIP-394, REBAL-10);
   a static member (KIP-345, `group.instance.id`) that restarts takes its old place under a
   new id and fences the old one (REBAL-11). The round ends when every known member has
   rejoined or the rebalance timeout runs out (REBAL-7); then the generation is bumped, a
   protocol all members support chosen, a leader kept or elected, and every JoinGroup
   answered; only the leader's answer lists the members (REBAL-9).
2. **SyncGroup.** The leader runs the assignor (in the client: kafka_ref/client/assignors)
   and sends the result; once it is stored in `__consumer_offsets`, each member gets exactly
   its part (REBAL-1, REBAL-2). The group is Stable.

Between rebalances members heartbeat within their session timeout (REBAL-6) or leave
(REBAL-12); a request of another generation is ILLEGAL_GENERATION (REBAL-3), of an unknown
member UNKNOWN_MEMBER_ID (REBAL-4), and during a rebalance REBALANCE_IN_PROGRESS, which tells
the member to rejoin (REBAL-5).

**The timers**, each a handle on the record it belongs to:

* the **session timer** (`member.heartbeat_timer`), restarted by every heartbeat, commit and
  answer: a member silent for its session timeout is removed (REBAL-6); a new member's
  first one is Kafka's 5-minute new-member join timeout;
* the **join timer** (`group.join_timer`) ends the JoinGroup round: an
  `InitialDelayedJoin` for an Empty group's first members (REBAL-8, REBAL-17), a
  `DelayedJoin` at the rebalance timeout otherwise (REBAL-7);
* the **pending-sync timer** (`group.sync_timer`): members that do not SyncGroup within the
  rebalance timeout are removed (REBAL-13);
* the **pending-member timer** (`_pending_timers`): an id handed out with
  MEMBER_ID_REQUIRED and never used is forgotten after the session timeout (REBAL-10).

A member that waits for the coordinator waits as a callback on its record
(`awaiting_join_callback`, `awaiting_sync_callback`), answered exactly once
(`GroupMetadata.invoke_join`, `invoke_sync`). The coordinator (coordinator.py) owns one
`GroupRebalance` and adds committed offsets and the admin APIs.

Rules: REBAL-1..REBAL-15, REBAL-17, REBAL-19..REBAL-22, REBAL-28 (spec/rebalance.md).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from kafka_ref.clock import Clock, Scheduler, TimerHandle
from kafka_ref.errors import ErrorCode
from kafka_ref.group.consumer_group import ConsumerGroup
from kafka_ref.group.group_metadata import (
    COMPLETE_SYNC,
    COMPLETING_REBALANCE,
    DEAD,
    EMPTY,
    PREPARE_REBALANCE,
    PREPARING_REBALANCE,
    REMOVE_GROUP,
    STABLE,
    GroupMetadata,
    MemberMetadata,
)
from kafka_ref.group.group_metadata_manager import GroupMetadataManager
from kafka_ref.group.messages import (
    JoinCallback,
    JoinedMember,
    JoinGroupResult,
    JoinRequest,
    LeaveResult,
    LeavingMember,
    SyncCallback,
    SyncGroupResult,
)

logger = logging.getLogger(__name__)

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
    # the consumer group protocol (KIP-848, consumer_group_coordinator.py)
    group_consumer_heartbeat_interval_ms: int = 5000  # group.consumer.heartbeat.interval.ms
    group_consumer_session_timeout_ms: int = 45000  # group.consumer.session.timeout.ms
    group_consumer_assignors: tuple[str, ...] = ("uniform", "range")  # group.consumer.assignors
    group_consumer_max_size: int = 2**31 - 1  # group.consumer.max.size
    # share groups (KIP-932, kafka_ref/share/share_group_coordinator.py)
    group_share_heartbeat_interval_ms: int = 5000  # group.share.heartbeat.interval.ms
    group_share_session_timeout_ms: int = 45000  # group.share.session.timeout.ms
    group_share_max_size: int = 200  # group.share.max.size


class GroupRebalance:
    """Members, sessions and the two rounds of a rebalance, for the manager's groups."""

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
        self.active = True
        self._pending_timers: dict[tuple[str, str], TimerHandle] = {}

    def _now(self) -> int:
        return self.clock.milliseconds()

    def group_status(self, group_id: str | None, *, allow_empty_id: bool = False) -> ErrorCode:
        """Kafka `validateGroupStatus`: is this broker the group's coordinator right now?"""
        if group_id is None or (group_id == "" and not allow_empty_id):
            return ErrorCode.INVALID_GROUP_ID
        if not self.active:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if self.manager.is_group_loading(group_id):
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        if not self.manager.is_group_local(group_id):
            return ErrorCode.NOT_COORDINATOR
        return OK

    # == JoinGroup ======================================================================
    # Kafka `handleJoinGroup`, `doNewMemberJoinGroup`, `doCurrentMemberJoinGroup`. What a
    # JoinGroup does depends on who sends it and on the group's state:
    # * a new member (no member id) first gets an id with MEMBER_ID_REQUIRED (KIP-394,
    #   REBAL-10), then joins with it, which adds it and starts a rebalance;
    # * a known member rejoins: during PreparingRebalance its JoinGroup waits for the round
    #   to end; during CompletingRebalance the same protocols mean a retry whose answer got
    #   lost; in a Stable group only the leader, or a member whose subscription changed,
    #   starts a new rebalance;
    # * a static member (KIP-345) that restarts takes its old place (REBAL-11).
    # Errors come first: a session timeout outside the configured bounds (REBAL-14),
    # protocols the group does not share, a full group, an id it does not know (REBAL-4).

    def join_group(
        self,
        group_id: str,
        member_id: str,
        group_instance_id: str | None,
        require_known_member_id: bool,
        client_id: str,
        client_host: str,
        rebalance_timeout_ms: int,
        session_timeout_ms: int,
        protocol_type: str,
        protocols: list[tuple[str, bytes]],
        callback: JoinCallback,
        *,
        reason: str | None = None,
        supports_skip_assignment: bool = False,
    ) -> None:
        """Join (or rejoin); `callback` runs now or when the rebalance completes.

        `reason` (JoinGroup v8+) is only logged (REBAL-20); `supports_skip_assignment`
        (v9+) changes the answer to a static leader that rejoins a Stable group (REBAL-21)."""
        request = JoinRequest(
            member_id=member_id,
            group_instance_id=group_instance_id,
            require_known_member_id=require_known_member_id,
            client_id=client_id,
            client_host=client_host,
            rebalance_timeout_ms=rebalance_timeout_ms,
            session_timeout_ms=session_timeout_ms,
            protocol_type=protocol_type,
            protocols=[(name, bytes(data)) for name, data in protocols],
            reason=reason,
            supports_skip_assignment=supports_skip_assignment,
        )
        logger.info(
            "member %r (instance %r) joins group %s; client reason: %s",
            member_id,
            group_instance_id,
            group_id,
            reason or "not provided",
        )
        error = self.group_status(group_id)
        if error != OK:
            return callback(JoinGroupResult(error, member_id=member_id))
        cfg = self.config
        if not cfg.group_min_session_timeout_ms <= session_timeout_ms:
            return callback(JoinGroupResult(ErrorCode.INVALID_SESSION_TIMEOUT, member_id=member_id))
        if session_timeout_ms > cfg.group_max_session_timeout_ms:
            return callback(JoinGroupResult(ErrorCode.INVALID_SESSION_TIMEOUT, member_id=member_id))
        group = self.manager.get_group(group_id)
        if isinstance(group, ConsumerGroup):  # a KIP-848 group (CGRP-14, CGRP-15)
            if group.members:
                error = ErrorCode.INCONSISTENT_GROUP_PROTOCOL
                return callback(JoinGroupResult(error, member_id=member_id))
            group = self.manager.convert_to_classic(group)
        if group is None:
            if member_id:  # a member id, but no group: it was removed long ago
                return callback(JoinGroupResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id=member_id))
            group = self.manager.add_group(GroupMetadata(group_id, EMPTY, self._now()))
        if not self._accept_joining_member(group, member_id):
            return callback(JoinGroupResult(ErrorCode.GROUP_MAX_SIZE_REACHED))
        if not member_id:
            self._join_new_member(group, request, callback)
        else:
            self._join_known_member(group, request, callback)
        if group.is_(PREPARING_REBALANCE):
            self._try_complete_join(group)

    def _accept_joining_member(self, group: GroupMetadata, member_id: str) -> bool:
        """group.max.size (Kafka `acceptJoiningMember`): members already in are always let in."""
        if group.is_(EMPTY) or group.is_(DEAD) or group.has(member_id):
            return True
        if group.is_(PREPARING_REBALANCE):
            return group.num_awaiting_join() < self.config.group_max_size
        return len(group.members) < self.config.group_max_size

    def _join_new_member(
        self, group: GroupMetadata, request: JoinRequest, callback: JoinCallback
    ) -> None:
        """Kafka `doNewMemberJoinGroup`: a member without an id gets one."""
        if group.is_(DEAD):
            return callback(JoinGroupResult(ErrorCode.COORDINATOR_NOT_AVAILABLE))
        if not group.supports_protocols(request.protocol_type, request.protocol_names()):
            return callback(JoinGroupResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL))
        instance_id = request.group_instance_id
        prefix = instance_id if instance_id is not None else request.client_id
        new_id = f"{prefix}-{self._new_uuid()}"
        if instance_id is not None:
            old_id = group.current_static_member_id(instance_id)
            if old_id is not None:
                return self._replace_static_member(group, old_id, new_id, request, callback)
            return self._add_member_and_rebalance(group, new_id, request, callback)
        if request.require_known_member_id:  # KIP-394: hand out the id, expect a second join
            group.pending_members.add(new_id)
            self._start_pending_member_timer(group, new_id, request.session_timeout_ms)
            return callback(JoinGroupResult(ErrorCode.MEMBER_ID_REQUIRED, member_id=new_id))
        self._add_member_and_rebalance(group, new_id, request, callback)

    def _join_known_member(
        self, group: GroupMetadata, request: JoinRequest, callback: JoinCallback
    ) -> None:
        """Kafka `doCurrentMemberJoinGroup`: a member joins with the id it was given."""
        member_id, instance_id = request.member_id, request.group_instance_id

        def error(code: ErrorCode) -> None:
            callback(JoinGroupResult(code, member_id=member_id))

        if group.is_(DEAD):
            return error(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        if not group.supports_protocols(request.protocol_type, request.protocol_names()):
            return error(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        if group.is_pending_member(member_id):
            self._cancel_pending_member_timer(group, member_id)
            return self._add_member_and_rebalance(group, member_id, request, callback)
        if group.is_static_member_fenced(member_id, instance_id):
            return error(ErrorCode.FENCED_INSTANCE_ID)
        if not group.has(member_id) or (
            instance_id is not None and group.current_static_member_id(instance_id) is None
        ):
            return error(ErrorCode.UNKNOWN_MEMBER_ID)
        current = group.get(member_id)
        if group.is_(PREPARING_REBALANCE):
            return self._update_member_and_rebalance(group, current, request, callback)
        if group.is_(COMPLETING_REBALANCE):
            if current.matches(request.protocols):
                # a retry of a join whose answer got lost: answer again, same generation
                return callback(self._join_result(group, current))
            return self._update_member_and_rebalance(group, current, request, callback)
        if group.is_(STABLE):
            # the leader rejoins to trigger a rebalance (e.g. new partitions); others only when
            # their subscription changed
            if group.is_leader(member_id) or not current.matches(request.protocols):
                return self._update_member_and_rebalance(group, current, request, callback)
            return callback(self._join_result(group, current, with_members=False))
        return error(ErrorCode.UNKNOWN_MEMBER_ID)  # Empty: it missed its removal

    def _add_member_and_rebalance(
        self, group: GroupMetadata, member_id: str, request: JoinRequest, callback: JoinCallback
    ) -> None:
        """Kafka `addMemberAndRebalance`: the member is in, and a rebalance starts (or the one
        under way waits for it too)."""
        member = MemberMetadata(
            member_id=member_id,
            group_instance_id=request.group_instance_id,
            client_id=request.client_id,
            client_host=request.client_host,
            rebalance_timeout_ms=request.rebalance_timeout_ms,
            session_timeout_ms=request.session_timeout_ms,
            protocol_type=request.protocol_type,
            supported_protocols=request.protocols,
            is_new=True,
        )
        if group.is_(PREPARING_REBALANCE) and group.generation_id == 0:
            group.new_member_added = True  # extends the initial delay (REBAL-8)
        group.add(member, callback)
        # A new member cannot heartbeat until it has its generation; still, do not wait for
        # a client that went away forever (Kafka's 5-minute new-member join timeout).
        self.start_session_timer(group, member, NEW_MEMBER_JOIN_TIMEOUT_MS)
        self._maybe_prepare_rebalance(group)

    @staticmethod
    def _update_member(
        group: GroupMetadata,
        member: MemberMetadata,
        request: JoinRequest,
        callback: JoinCallback | None,
    ) -> None:
        """Kafka `updateMember`: the member rejoins with new timeouts and protocols."""
        member.rebalance_timeout_ms = request.rebalance_timeout_ms
        member.session_timeout_ms = request.session_timeout_ms
        group.update_member(member, request.protocols, callback)

    def _update_member_and_rebalance(
        self,
        group: GroupMetadata,
        member: MemberMetadata,
        request: JoinRequest,
        callback: JoinCallback,
    ) -> None:
        self._update_member(group, member, request, callback)
        self._maybe_prepare_rebalance(group)

    def _replace_static_member(
        self,
        group: GroupMetadata,
        old_id: str,
        new_id: str,
        request: JoinRequest,
        callback: JoinCallback,
    ) -> None:
        """A static member rejoins with a new member id (KIP-345, REBAL-11). In a Stable
        group whose protocol does not change, a v9+ leader gets the members and
        SkipAssignment (KIP-814, REBAL-21): it knows its group again without assigning."""
        instance_id = request.group_instance_id
        assert instance_id is not None, "only a static member is replaced"
        current_leader = group.leader_id or ""
        old = group.get(old_id)
        # the old instance is a zombie now: answer what it waits for with FENCED_INSTANCE_ID
        group.invoke_join(old, JoinGroupResult(ErrorCode.FENCED_INSTANCE_ID, member_id=old_id))
        group.invoke_sync(old, SyncGroupResult(ErrorCode.FENCED_INSTANCE_ID))
        replaced = group.replace_static_member(instance_id, old_id, new_id)
        old_protocols = replaced.supported_protocols
        self.start_session_timer(group, replaced)
        self._update_member(group, replaced, request, callback)
        if group.is_(STABLE):
            if group.protocol_name != group.select_protocol():
                return self._maybe_prepare_rebalance(group)
            # Same protocol: keep the generation and the assignment; persist the new member
            # id. The answer names the old leader id, so that the new instance, even if it
            # is the leader, does not compute an assignment a Stable group would not use.
            generation = group.generation_id

            def stored(error: ErrorCode) -> None:
                if error != OK:  # undo, so the old id keeps working
                    group.update_member(replaced, old_protocols, None)
                    if group.members.get(new_id) is replaced:
                        group.replace_static_member(instance_id, new_id, old_id)
                    self.start_session_timer(group, replaced)
                    return callback(
                        JoinGroupResult(
                            error,
                            generation,
                            group.protocol_type,
                            group.protocol_name,
                            current_leader,
                        )
                    )
                if request.supports_skip_assignment:  # `supportsSkippingAssignment`
                    is_leader = group.is_leader(new_id)
                    result = JoinGroupResult(
                        OK,
                        generation,
                        group.protocol_type,
                        group.protocol_name,
                        group.leader_id or "",
                        new_id,
                        self._joined_members(group) if is_leader else [],
                        skip_assignment=is_leader,
                    )
                else:
                    result = JoinGroupResult(
                        OK,
                        generation,
                        group.protocol_type,
                        group.protocol_name,
                        current_leader,
                        new_id,
                    )
                group.invoke_join(replaced, result)

            assignment = {m.member_id: m.assignment for m in group.members.values()}
            self.manager.store_group(group, assignment, stored)
        elif group.is_(COMPLETING_REBALANCE):
            # the leader may be assigning to the old id right now: start over
            self._prepare_rebalance(group)

    @staticmethod
    def _joined_members(group: GroupMetadata) -> list[JoinedMember]:
        """The members with their metadata for the chosen protocol: the leader's answer."""
        return [JoinedMember(*m) for m in group.current_member_metadata()]

    def _join_result(
        self, group: GroupMetadata, member: MemberMetadata, *, with_members: bool = True
    ) -> JoinGroupResult:
        """The answer of the current generation to `member` (only the leader gets the list)."""
        members = []
        if with_members and group.is_leader(member.member_id):
            members = self._joined_members(group)
        return JoinGroupResult(
            OK,
            group.generation_id,
            group.protocol_type,
            group.protocol_name,
            group.leader_id or "",
            member.member_id,
            members,
        )

    # == SyncGroup ======================================================================
    # Kafka `handleSyncGroup`, `doSyncGroup`, `propagateAssignment`. After the join round
    # every member sends SyncGroup for the new generation; the leader's carries the
    # assignment. The others wait, as a callback, until the leader's assignment is stored
    # in `__consumer_offsets`; then each gets exactly its part of this generation's
    # (REBAL-1, REBAL-2): members the leader left out an empty one, ids it named that are
    # not members nothing. If the group moves on while the write is in flight, the answer
    # is the group's error, never a stale assignment. A SyncGroup in a Stable group (a
    # retry, or a static member's new instance) gets the assignment the member has.

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
        group = self.manager.get_classic_group(group_id) if error == OK else None
        if error == OK:
            error = sync_error(
                group, generation_id, member_id, group_instance_id, protocol_type, protocol_name
            )
        if error != OK:
            return callback(SyncGroupResult(error))
        assert group is not None
        member = group.get(member_id)
        if group.is_(STABLE):  # a retry, or a static member's new instance
            self._synced(group, member_id)
            self.start_session_timer(group, member)
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
            self._complete_sync(group, assignment)

        self.manager.store_group(group, assignment, stored)

    def _reset_and_propagate_assignment_error(self, group: GroupMetadata, error: ErrorCode):
        for member in group.members.values():
            member.assignment = b""
        self._propagate_assignment(group, error)

    def _propagate_assignment(self, group: GroupMetadata, error: ErrorCode) -> None:
        """Answer every waiting SyncGroup: its own assignment, or `error` (REBAL-1)."""
        ok = error == OK
        for member in list(group.members.values()):
            result = SyncGroupResult(
                error,
                group.protocol_type if ok else None,
                group.protocol_name if ok else None,
                member.assignment,
            )
            if group.invoke_sync(member, result):
                # its session may have expired unnoticed while it waited: start it afresh
                self.start_session_timer(group, member)

    # == Heartbeat and LeaveGroup =======================================================
    # A member stays in its group by heartbeating within its session timeout (Kafka
    # `handleHeartbeat`); one silent for longer is removed and the others rebalance
    # (REBAL-6). A heartbeat during a rebalance is answered REBALANCE_IN_PROGRESS (REBAL-5).
    # A member that leaves on purpose (Kafka `handleLeaveGroup`) is removed at once, and
    # the group rebalances without waiting for a timeout (REBAL-12); since KIP-345 an admin
    # can remove a static member by its instance id, and since LeaveGroup v3 one request
    # removes a batch, each member answered alone (REBAL-22).

    def heartbeat(
        self, group_id: str, member_id: str, group_instance_id: str | None, generation_id: int
    ) -> ErrorCode:
        error = self.group_status(group_id)
        if error == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
            return OK  # the member will learn what happened at its next rebalance
        if error != OK:
            return error
        group = self.manager.get_classic_group(group_id)
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
        self.start_session_timer(group, group.get(member_id))
        if group.is_(PREPARING_REBALANCE):
            return ErrorCode.REBALANCE_IN_PROGRESS
        return OK

    def leave_group(
        self, group_id: str, members: list[LeavingMember]
    ) -> tuple[ErrorCode, list[LeaveResult]]:
        """Members leave now instead of at their session timeout (KIP-345: by instance id).

        The reason a member gives (LeaveGroup v5+) is only logged (REBAL-20). Each member
        gets its own answer (REBAL-22)."""
        members = [LeavingMember(*m) for m in members]
        error = self.group_status(group_id)
        if error != OK:
            return error, []
        group = self.manager.get_classic_group(group_id)
        if group is None:
            return OK, [
                LeaveResult(m.member_id, m.instance_id, ErrorCode.UNKNOWN_MEMBER_ID)
                for m in members
            ]
        if group.is_(DEAD):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, []
        results = []
        for member_id, instance_id, reason in members:
            logger.info(
                "member %r (instance %r) leaves group %s; client reason: %s",
                member_id,
                instance_id,
                group_id,
                reason or "not provided",
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
            results.append(LeaveResult(member_id, instance_id, code))
        return OK, results

    def _remove_member_and_update_group(self, group: GroupMetadata, member: MemberMetadata):
        """Kafka `removeMemberAndUpdateGroup`: answer what the member waits for, remove it,
        and rebalance (Stable, CompletingRebalance) or let the round under way complete
        without it (PreparingRebalance)."""
        # a member that timed out while its JoinGroup waited gets an answer it can act on
        group.invoke_join(member, JoinGroupResult(ErrorCode.UNKNOWN_MEMBER_ID))
        group.invoke_sync(member, SyncGroupResult(ErrorCode.UNKNOWN_MEMBER_ID))
        self._cancel_session_timer(member)
        group.remove(member.member_id)
        if group.is_(STABLE) or group.is_(COMPLETING_REBALANCE):
            self._maybe_prepare_rebalance(group)
        elif group.is_(PREPARING_REBALANCE):
            self._try_complete_join(group)

    def _remove_pending_member(self, group: GroupMetadata, member_id: str) -> None:
        group.pending_members.discard(member_id)
        self._cancel_pending_member_timer(group, member_id)
        if group.is_(PREPARING_REBALANCE):
            self._try_complete_join(group)

    # == The transitions ================================================================
    # Each method makes one named transition of group_metadata.py and ends by asserting
    # what the new state holds (REBAL-28).

    def _maybe_prepare_rebalance(self, group: GroupMetadata) -> None:
        if group.can_rebalance():
            self._prepare_rebalance(group)

    def _prepare_rebalance(self, group: GroupMetadata) -> None:
        """PREPARE_REBALANCE (Kafka `prepareRebalance`): every member must rejoin. A member
        waiting for its assignment hears REBALANCE_IN_PROGRESS; the round ends on a timer:
        an InitialDelayedJoin for an Empty group, else a DelayedJoin, which completes at
        once if every member has already rejoined."""
        if group.is_(COMPLETING_REBALANCE):
            self._reset_and_propagate_assignment_error(group, ErrorCode.REBALANCE_IN_PROGRESS)
        self._cancel_pending_sync_timer(group)
        group.pending_sync_members.clear()
        self._cancel_join_timer(group)
        initial = group.is_(EMPTY)
        group.transition(PREPARE_REBALANCE, self._now())
        if initial:  # even with a delay of 0: the join completes on the timer (REBAL-17)
            delay = self.config.group_initial_rebalance_delay_ms
            remaining = max(group.rebalance_timeout_ms() - delay, 0)
            self._start_initial_delayed_join(group, delay, remaining)
        else:
            group.join_is_initial = False
            if not self._try_complete_join(group):
                self._start_delayed_join(group)
        group.check_state()

    def _try_complete_join(self, group: GroupMetadata) -> bool:
        """Kafka `DelayedJoin.tryComplete`: end the round now if every member has rejoined
        (never an InitialDelayedJoin, which completes on its timer, REBAL-17)."""
        if group.join_is_initial or not group.is_(PREPARING_REBALANCE):
            return False
        if not group.has_all_members_joined():
            return False
        self._cancel_join_timer(group)
        self._complete_join(group)
        return True

    def _complete_join(self, group: GroupMetadata) -> None:
        """COMPLETE_JOIN or COMPLETE_EMPTY_JOIN (Kafka `onCompleteJoin`): members that did
        not rejoin are removed, a static one excepted (REBAL-7); the generation is bumped, a
        protocol and a leader chosen (REBAL-9) and every waiting JoinGroup answered; then
        each member must SyncGroup within the rebalance timeout (REBAL-13)."""
        for member in group.not_yet_rejoined_members():
            if not member.is_static_member:  # static members wait for their session timeout
                self._cancel_session_timer(member)
                group.remove(member.member_id)
        if group.is_(DEAD):
            return
        if not group.maybe_elect_new_joined_leader() and group.members:
            # nobody rejoined (only absent static members left): wait for their timeouts
            self._start_delayed_join(group)
            return group.check_state()
        group.init_next_generation(self._now())
        if group.is_(EMPTY):
            group.check_state()
            # nothing waits for this write; a lost one leaves an older generation, harmless
            return self.manager.store_group(group, {}, lambda error: None)
        for member in list(group.members.values()):
            group.invoke_join(member, self._join_result(group, member))
            self.start_session_timer(group, member)
            member.is_new = False
        self._start_pending_sync_timer(group)
        group.check_state()

    def _complete_sync(self, group: GroupMetadata, assignment: dict[str, bytes]) -> None:
        """COMPLETE_SYNC: the leader's assignment is stored; every member gets its part."""
        for member_id, member in group.members.items():
            member.assignment = assignment.get(member_id, b"")
        group.transition(COMPLETE_SYNC, self._now())
        self._propagate_assignment(group, OK)
        group.check_state()

    def unload_group(self, group: GroupMetadata) -> None:
        """REMOVE_GROUP (Kafka `onGroupUnloaded`): Dead, timers stopped, waiting members sent
        to look for the new coordinator."""
        previous = group.state
        group.transition(REMOVE_GROUP, self._now())
        self.cancel_group_timers(group)
        for member in list(group.members.values()):
            if previous is PREPARING_REBALANCE:
                result = JoinGroupResult(ErrorCode.NOT_COORDINATOR, member_id=member.member_id)
                group.invoke_join(member, result)
            group.invoke_sync(member, SyncGroupResult(ErrorCode.NOT_COORDINATOR))

    # == The timers =====================================================================

    def _timer(self, delay_ms: int, fn: Callable[[], None]) -> TimerHandle:
        return self._schedule(max(delay_ms, 0) / 1000.0, fn)

    def start_session_timer(
        self, group: GroupMetadata, member: MemberMetadata, timeout_ms: int | None = None
    ) -> None:
        """(Re)start the member's session timer (Kafka `completeAndScheduleNextExpiration`):
        a member silent for its session timeout is removed (REBAL-6)."""
        self._cancel_session_timer(member)

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

    @staticmethod
    def _cancel_session_timer(member: MemberMetadata) -> None:
        if member.heartbeat_timer is not None:
            member.heartbeat_timer.cancel()
            member.heartbeat_timer = None

    def _start_delayed_join(self, group: GroupMetadata) -> None:
        """Kafka `DelayedJoin`: complete when all joined, or at the rebalance timeout (the
        largest of the members' `rebalance_timeout_ms`, REBAL-7)."""

        def expire() -> None:
            group.join_timer = None
            if group.is_(PREPARING_REBALANCE):
                self._complete_join(group)

        group.join_timer = self._timer(group.rebalance_timeout_ms(), expire)

    def _start_initial_delayed_join(
        self, group: GroupMetadata, delay_ms: int, remaining_ms: int
    ) -> None:
        """Kafka `InitialDelayedJoin`: wait the delay, and again (up to the rebalance timeout)
        for as long as new members keep arriving (REBAL-8). It never completes early, not even
        with a delay of 0: it completes on its timer with the members joined by then, pending
        ones not waited for (REBAL-17)."""
        group.join_is_initial = True

        def expire() -> None:
            group.join_timer = None
            if not group.is_(PREPARING_REBALANCE):
                return
            if group.new_member_added and remaining_ms != 0:
                group.new_member_added = False
                next_delay = min(self.config.group_initial_rebalance_delay_ms, remaining_ms)
                self._start_initial_delayed_join(group, next_delay, max(remaining_ms - delay_ms, 0))
            else:
                group.join_is_initial = False
                self._complete_join(group)

        group.join_timer = self._timer(delay_ms, expire)

    def _start_pending_sync_timer(self, group: GroupMetadata) -> None:
        """REBAL-13 (Kafka 3.0's pending-sync timeout): members that do not SyncGroup within
        the rebalance timeout are removed and the group rebalances, so a leader that died
        after JoinGroup does not stall its group."""
        group.pending_sync_members = set(group.members)
        generation = group.generation_id

        def expire() -> None:
            group.sync_timer = None
            ok_state = group.is_(COMPLETING_REBALANCE) or group.is_(STABLE)
            if generation != group.generation_id or not ok_state:
                return
            for member_id in list(group.pending_sync_members):
                member = group.remove(member_id)
                if member is not None:
                    self._cancel_session_timer(member)
            self._prepare_rebalance(group)

        group.sync_timer = self._timer(group.rebalance_timeout_ms(), expire)

    def _synced(self, group: GroupMetadata, member_id: str) -> None:
        group.pending_sync_members.discard(member_id)
        if not group.pending_sync_members:
            self._cancel_pending_sync_timer(group)

    def _start_pending_member_timer(
        self, group: GroupMetadata, member_id: str, timeout_ms: int
    ) -> None:
        """KIP-394: a member that got its id but never joins with it is forgotten after its
        session timeout (REBAL-10)."""

        def expire() -> None:
            self._pending_timers.pop((group.group_id, member_id), None)
            if group.is_pending_member(member_id):
                self._remove_pending_member(group, member_id)

        self._pending_timers[(group.group_id, member_id)] = self._timer(timeout_ms, expire)

    def _cancel_pending_member_timer(self, group: GroupMetadata, member_id: str) -> None:
        timer = self._pending_timers.pop((group.group_id, member_id), None)
        if timer is not None:
            timer.cancel()

    @staticmethod
    def _cancel_join_timer(group: GroupMetadata) -> None:
        if group.join_timer is not None:
            group.join_timer.cancel()
            group.join_timer = None

    @staticmethod
    def _cancel_pending_sync_timer(group: GroupMetadata) -> None:
        if group.sync_timer is not None:
            group.sync_timer.cancel()
            group.sync_timer = None

    def cancel_group_timers(self, group: GroupMetadata) -> None:
        """Every timer of the group and its members (the group is Dead)."""
        self._cancel_join_timer(group)
        self._cancel_pending_sync_timer(group)
        for member in group.members.values():
            self._cancel_session_timer(member)
        for member_id in list(group.pending_members):
            self._cancel_pending_member_timer(group, member_id)

    def stop(self) -> None:
        """The broker shuts down: refuse new requests, cancel the pending-member timers."""
        self.active = False
        for timer in self._pending_timers.values():
            timer.cancel()
        self._pending_timers.clear()


def sync_error(
    group: GroupMetadata | None,
    generation_id: int,
    member_id: str,
    instance_id: str | None,
    protocol_type: str | None,
    protocol_name: str | None,
) -> ErrorCode:
    """Why a SyncGroup is refused, if it is: a member of another generation (REBAL-3), an
    unknown one (REBAL-4), or one that must rejoin first (REBAL-5); protocols that are not
    the group's (REBAL-19)."""
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
    if (protocol_type is not None and protocol_type != group.protocol_type) or (
        protocol_name is not None and protocol_name != group.protocol_name
    ):
        return ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    if group.is_(EMPTY):
        return ErrorCode.UNKNOWN_MEMBER_ID
    if group.is_(PREPARING_REBALANCE):
        return ErrorCode.REBALANCE_IN_PROGRESS
    return OK
