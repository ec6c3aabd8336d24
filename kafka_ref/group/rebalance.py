"""The rebalance protocol: one state machine for who is in a group and who reads what.

A consumer group's coordinator (Kafka: `GroupCoordinator`) keeps, for every group, its
members: each with the member id the coordinator gave it, its session timeout, its client id
and host, the protocols it supports and its current assignment (group_metadata.py, where the
group's states live: Empty, PreparingRebalance, CompletingRebalance, Stable, Dead). This
class is everything that moves a group between those states. A rebalance is a two-round
protocol (Kafka: `handleJoinGroup`, `handleSyncGroup`):

1. **JoinGroup.** Every member sends the protocols it supports (for consumers: assignor names,
   each with its subscription). The first join of an Empty group waits
   `group.initial.rebalance.delay.ms` so that members starting together land in one
   generation (REBAL-8); a delay of 0 is still a timer, so the join completes right after
   the JoinGroup with whoever joined by then, and later members start the next rebalance
   (REBAL-17); afterwards a rebalance ends when every known member has rejoined, or
   when the rebalance timeout (the largest of the members') runs out, and members that did not
   rejoin are dropped (REBAL-7). The coordinator then bumps the generation, picks a protocol
   all members support, keeps or elects a leader and answers every JoinGroup; only the
   leader's answer lists the members and their metadata (REBAL-9).
2. **SyncGroup.** The leader runs the assignor (in the client: kafka_ref/client/assignors) and
   sends the result; the others send an empty SyncGroup and wait. On the leader's, the
   coordinator stores the group (generation, members, assignments) and hands each member
   exactly the leader's assignment for this generation, nothing else and no other
   generation's (REBAL-1, REBAL-2). The group is Stable.

Between rebalances membership is kept alive and ended here too:

* **Heartbeat.** Every member heartbeats within its session timeout. A member silent for its
  session timeout is removed and the others rebalance (REBAL-6); a heartbeat during a
  rebalance is answered REBALANCE_IN_PROGRESS, which tells the member to rejoin (REBAL-5).
  Requests from a generation that is over are ILLEGAL_GENERATION (REBAL-3); from a member
  the group does not know, UNKNOWN_MEMBER_ID (REBAL-4).
* **LeaveGroup.** A member that leaves on purpose is removed at once and the group
  rebalances without waiting for a timeout (REBAL-12); since KIP-345 an admin can remove a
  static member by its `group.instance.id`.

Since KIP-394 (JoinGroup v4) a new member first gets its id with MEMBER_ID_REQUIRED and must
join again with it, so a client that times out and retries cannot leave ghost members behind
(REBAL-10). A **static member** (KIP-345, `group.instance.id`) that restarts rejoins under its
instance id and gets its old place and assignment back without a rebalance; the member id it
replaced is fenced (REBAL-11). Members that never send SyncGroup after a rebalance are removed
after the rebalance timeout (REBAL-13, Kafka 3.0's pending-sync timeout).

**Timers.** Every timeout (session, join, pending sync, pending member) is a timer of the
injected `Scheduler` (asyncio's `call_later` in the broker, `ManualScheduler` in tests):
nothing here reads a wall clock. The coordinator (coordinator.py) owns one `GroupRebalance`
and adds committed offsets and the admin APIs; this file is long because it is one idea.

Rules: REBAL-1..REBAL-13, REBAL-17 (spec/rebalance.md).
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
        self._pending_timers: dict[tuple[str, str], Any] = {}

    def _now(self) -> int:
        return self.clock.milliseconds()

    def _timer(self, delay_ms: int, fn: Callable[[], None]) -> Any:
        return self._schedule(max(delay_ms, 0) / 1000.0, fn)

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

    # -- Heartbeat and LeaveGroup ---------------------------------------------------
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
        self, group_id: str, members: list[tuple[str, str | None]]
    ) -> tuple[ErrorCode, list[tuple[str, str | None, ErrorCode]]]:
        """Members leave now instead of at their session timeout (KIP-345: by instance id)."""
        error = self.group_status(group_id)
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

    # -- JoinGroup ------------------------------------------------------------------
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
    ) -> None:
        """Join (or rejoin); `callback` runs now or when the rebalance completes."""
        error = self.group_status(group_id)
        if error != OK:
            return callback(JoinGroupResult(error, member_id=member_id))
        cfg = self.config
        if not cfg.group_min_session_timeout_ms <= session_timeout_ms:
            return callback(JoinGroupResult(ErrorCode.INVALID_SESSION_TIMEOUT, member_id=member_id))
        if session_timeout_ms > cfg.group_max_session_timeout_ms:
            return callback(JoinGroupResult(ErrorCode.INVALID_SESSION_TIMEOUT, member_id=member_id))
        protocols = [(name, bytes(data)) for name, data in protocols]
        member = (rebalance_timeout_ms, session_timeout_ms, client_id, client_host, protocol_type)
        group = self.manager.get_group(group_id)
        if group is None:
            if member_id:  # a member id, but no group: it was removed long ago
                return callback(JoinGroupResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id=member_id))
            group = self.manager.add_group(GroupMetadata(group_id, EMPTY, self._now()))
        if not self._accept_joining_member(group, member_id):
            return callback(JoinGroupResult(ErrorCode.GROUP_MAX_SIZE_REACHED))
        if not member_id:
            self._join_new_member(group, group_instance_id, require_known_member_id, member,
                                  protocols, callback)  # fmt: skip
        else:
            self._join_current_member(group, member_id, group_instance_id, member, protocols,
                                      callback)  # fmt: skip
        if group.is_(PREPARING_REBALANCE):
            self._try_complete_join(group)

    def _accept_joining_member(self, group: GroupMetadata, member_id: str) -> bool:
        """group.max.size (Kafka `acceptJoiningMember`): members already in are always let in."""
        if group.is_(EMPTY) or group.is_(DEAD) or group.has(member_id):
            return True
        if group.is_(PREPARING_REBALANCE):
            return group.num_awaiting_join() < self.config.group_max_size
        return len(group.members) < self.config.group_max_size

    def _join_new_member(self, group, instance_id, require_known_id, member, protocols, callback):
        if group.is_(DEAD):
            return callback(JoinGroupResult(ErrorCode.COORDINATOR_NOT_AVAILABLE))
        if not group.supports_protocols(member[4], [n for n, _ in protocols]):
            return callback(JoinGroupResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL))
        new_id = f"{instance_id if instance_id is not None else member[2]}-{self._new_uuid()}"
        if instance_id is not None:
            old_id = group.current_static_member_id(instance_id)
            if old_id is not None:
                return self._replace_static_member(group, instance_id, old_id, new_id, member,
                                                   protocols, callback)  # fmt: skip
            return self._add_member_and_rebalance(group, new_id, instance_id, member, protocols,
                                                  callback)  # fmt: skip
        if require_known_id:  # KIP-394: hand out the id, expect a second join with it
            group.pending_members.add(new_id)
            self._arm_pending_member(group, new_id, member[1])
            return callback(JoinGroupResult(ErrorCode.MEMBER_ID_REQUIRED, member_id=new_id))
        self._add_member_and_rebalance(group, new_id, None, member, protocols, callback)

    def _join_current_member(self, group, member_id, instance_id, member, protocols, callback):
        def error(code: ErrorCode) -> None:
            callback(JoinGroupResult(code, member_id=member_id))

        if group.is_(DEAD):
            return error(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        if not group.supports_protocols(member[4], [n for n, _ in protocols]):
            return error(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        if group.is_pending_member(member_id):
            self._cancel_pending_timer(group, member_id)
            return self._add_member_and_rebalance(group, member_id, instance_id, member,
                                                  protocols, callback)  # fmt: skip
        if group.is_static_member_fenced(member_id, instance_id):
            return error(ErrorCode.FENCED_INSTANCE_ID)
        if not group.has(member_id) or (
            instance_id is not None and group.current_static_member_id(instance_id) is None
        ):
            return error(ErrorCode.UNKNOWN_MEMBER_ID)
        current = group.get(member_id)
        if group.is_(PREPARING_REBALANCE):
            return self._update_member_and_rebalance(group, current, member, protocols, callback)
        if group.is_(COMPLETING_REBALANCE):
            if current.matches(protocols):
                # a retry of a join whose answer got lost: answer again, same generation
                return callback(self._join_result(group, current))
            return self._update_member_and_rebalance(group, current, member, protocols, callback)
        if group.is_(STABLE):
            # the leader rejoins to trigger a rebalance (e.g. new partitions); others only when
            # their subscription changed
            if group.is_leader(member_id) or not current.matches(protocols):
                return self._update_member_and_rebalance(
                    group, current, member, protocols, callback
                )
            return callback(self._join_result(group, current, with_members=False))
        return error(ErrorCode.UNKNOWN_MEMBER_ID)  # Empty: it missed its removal

    def _join_result(
        self, group: GroupMetadata, member: MemberMetadata, *, with_members: bool = True
    ) -> JoinGroupResult:
        members = []
        if with_members and group.is_leader(member.member_id):
            members = [JoinedMember(*m) for m in group.current_member_metadata()]
        return JoinGroupResult(
            OK, group.generation_id, group.protocol_type, group.protocol_name,
            group.leader_id or "", member.member_id, members,
        )  # fmt: skip

    def _add_member_and_rebalance(self, group, member_id, instance_id, member, protocols, cb):
        rebalance_timeout, session_timeout, client_id, client_host, protocol_type = member
        new = MemberMetadata(member_id, instance_id, client_id, client_host, rebalance_timeout,
                             session_timeout, protocol_type, protocols)  # fmt: skip
        new.is_new = True
        if group.is_(PREPARING_REBALANCE) and group.generation_id == 0:
            group.new_member_added = True  # extends the initial delay
        group.add(new, cb)
        # A new member cannot heartbeat until it has its generation; still, do not wait for
        # a client that went away forever (Kafka's 5-minute new-member join timeout).
        self.arm_heartbeat(group, new, NEW_MEMBER_JOIN_TIMEOUT_MS)
        self._maybe_prepare_rebalance(group)

    @staticmethod
    def _update_member(group, current: MemberMetadata, member, protocols, callback) -> None:
        current.rebalance_timeout_ms, current.session_timeout_ms = member[0], member[1]
        group.update_member(current, protocols, callback)

    def _update_member_and_rebalance(self, group, current, member, protocols, callback):
        self._update_member(group, current, member, protocols, callback)
        self._maybe_prepare_rebalance(group)

    def _replace_static_member(self, group, instance_id, old_id, new_id, member, protocols, cb):
        """A static member rejoins with a new member id (KIP-345, REBAL-11)."""
        current_leader = group.leader_id or ""
        old = group.get(old_id)
        # the old instance is a zombie now: answer what it waits for with FENCED_INSTANCE_ID
        group.invoke_join(old, JoinGroupResult(ErrorCode.FENCED_INSTANCE_ID, member_id=old_id))
        self._invoke_sync(old, SyncGroupResult(ErrorCode.FENCED_INSTANCE_ID))
        replaced = group.replace_static_member(instance_id, old_id, new_id)
        old_protocols = replaced.supported_protocols
        self.arm_heartbeat(group, replaced)
        self._update_member(group, replaced, member, protocols, cb)
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
                    self.arm_heartbeat(group, replaced)
                    return cb(JoinGroupResult(error, generation, group.protocol_type,
                                              group.protocol_name, current_leader))  # fmt: skip
                group.invoke_join(replaced, JoinGroupResult(
                    OK, generation, group.protocol_type, group.protocol_name, current_leader,
                    new_id,
                ))  # fmt: skip

            assignment = {m.member_id: m.assignment for m in group.members.values()}
            self.manager.store_group(group, assignment, stored)
        elif group.is_(COMPLETING_REBALANCE):
            # the leader may be assigning to the old id right now: start over
            self._prepare_rebalance(group)

    # -- the rebalance --------------------------------------------------------------
    def _maybe_prepare_rebalance(self, group: GroupMetadata) -> None:
        if group.can_rebalance():
            self._prepare_rebalance(group)

    def _prepare_rebalance(self, group: GroupMetadata) -> None:
        if group.is_(COMPLETING_REBALANCE):
            self._reset_and_propagate_assignment_error(group, ErrorCode.REBALANCE_IN_PROGRESS)
        self._cancel_timer(group, "sync_timer")
        group.pending_sync_members.clear()
        self._cancel_timer(group, "join_timer")
        initial = group.is_(EMPTY)
        group.transition_to(PREPARING_REBALANCE, self._now())
        if initial:  # even with a delay of 0: the join completes on the timer (REBAL-17)
            delay = self.config.group_initial_rebalance_delay_ms
            self._watch_initial_join(group, delay, max(group.rebalance_timeout_ms() - delay, 0))
        else:
            group.join_is_initial = False
            if not self._try_complete_join(group):
                self._watch_join(group)

    def _watch_join(self, group: GroupMetadata) -> None:
        """Kafka `DelayedJoin`: complete when all joined, or at the rebalance timeout."""

        def expire() -> None:
            group.join_timer = None
            if group.is_(PREPARING_REBALANCE):
                self._on_complete_join(group)

        group.join_timer = self._timer(group.rebalance_timeout_ms(), expire)

    def _watch_initial_join(self, group: GroupMetadata, delay_ms: int, remaining_ms: int) -> None:
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
                self._watch_initial_join(group, next_delay, max(remaining_ms - delay_ms, 0))
            else:
                group.join_is_initial = False
                self._on_complete_join(group)

        group.join_timer = self._timer(delay_ms, expire)

    def _try_complete_join(self, group: GroupMetadata) -> bool:
        if group.join_is_initial or not group.is_(PREPARING_REBALANCE):
            return False
        if not group.has_all_members_joined():
            return False
        self._cancel_timer(group, "join_timer")
        self._on_complete_join(group)
        return True

    def _on_complete_join(self, group: GroupMetadata) -> None:
        """The join round is over (Kafka `onCompleteJoin`)."""
        for member in group.not_yet_rejoined_members():
            if not member.is_static_member:  # static members wait for their session timeout
                self._cancel_heartbeat(member)
                group.remove(member.member_id)
        if group.is_(DEAD):
            return
        if not group.maybe_elect_new_joined_leader() and group.members:
            # nobody rejoined (only absent static members left): wait for their timeouts
            return self._watch_join(group)
        group.init_next_generation(self._now())
        if group.is_(EMPTY):
            # nothing waits for this write; a lost one leaves an older generation, harmless
            return self.manager.store_group(group, {}, lambda error: None)
        for member in list(group.members.values()):
            group.invoke_join(member, self._join_result(group, member))
            self.arm_heartbeat(group, member)
            member.is_new = False
        self._watch_pending_sync(group)

    def _watch_pending_sync(self, group: GroupMetadata) -> None:
        """REBAL-13: members that do not SyncGroup within the rebalance timeout are removed."""
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
                    self._cancel_heartbeat(member)
            self._prepare_rebalance(group)

        group.sync_timer = self._timer(group.rebalance_timeout_ms(), expire)

    def _synced(self, group: GroupMetadata, member_id: str) -> None:
        group.pending_sync_members.discard(member_id)
        if not group.pending_sync_members:
            self._cancel_timer(group, "sync_timer")

    # -- SyncGroup ------------------------------------------------------------------
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
            error = self._sync_error(group, generation_id, member_id, group_instance_id,
                                     protocol_type, protocol_name)  # fmt: skip
        if error != OK:
            return callback(SyncGroupResult(error))
        assert group is not None
        member = group.get(member_id)
        if group.is_(STABLE):  # a retry, or a static member's new instance
            self._synced(group, member_id)
            self.arm_heartbeat(group, member)
            return callback(SyncGroupResult(OK, group.protocol_type, group.protocol_name,
                                            member.assignment))  # fmt: skip
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

    # -- removal and timers ---------------------------------------------------------
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

    def unload_group(self, group: GroupMetadata) -> None:
        """Kafka `onGroupUnloaded`: Dead, timers stopped, waiting members sent elsewhere."""
        previous = group.state
        group.transition_to(DEAD, self._now())
        self.cancel_group_timers(group)
        for member in list(group.members.values()):
            if previous is PREPARING_REBALANCE:
                result = JoinGroupResult(ErrorCode.NOT_COORDINATOR, member_id=member.member_id)
                group.invoke_join(member, result)
            self._invoke_sync(member, SyncGroupResult(ErrorCode.NOT_COORDINATOR))

    def cancel_group_timers(self, group: GroupMetadata) -> None:
        self._cancel_timer(group, "join_timer")
        self._cancel_timer(group, "sync_timer")
        for member in group.members.values():
            self._cancel_heartbeat(member)
        for member_id in list(group.pending_members):
            self._cancel_pending_timer(group, member_id)

    def stop(self) -> None:
        """The broker shuts down: refuse new requests, cancel the pending-member timers."""
        self.active = False
        for timer in self._pending_timers.values():
            timer.cancel()
        self._pending_timers.clear()

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
    def _invoke_sync(member: MemberMetadata, result: SyncGroupResult) -> bool:
        callback, member.awaiting_sync_callback = member.awaiting_sync_callback, None
        if callback is not None:
            callback(result)
        return callback is not None
