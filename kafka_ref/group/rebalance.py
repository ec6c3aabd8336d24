"""The rebalance protocol: how members join a group, and how each gets its share.

A rebalance is a two-round protocol run by the broker that coordinates the group (Kafka:
`GroupCoordinator.handleJoinGroup`, `handleSyncGroup`):

1. **JoinGroup.** Every member sends the protocols it supports (for consumers: assignor names,
   each with its subscription). The first join of an Empty group waits
   `group.initial.rebalance.delay.ms` so that members starting together land in one
   generation (REBAL-8); afterwards a rebalance ends when every known member has rejoined, or
   when the rebalance timeout (the largest of the members') runs out, and members that did not
   rejoin are dropped (REBAL-7). The coordinator then bumps the generation, picks a protocol
   all members support, keeps or elects a leader and answers every JoinGroup; only the
   leader's answer lists the members and their metadata (REBAL-9).
2. **SyncGroup.** The leader runs the assignor and sends the result; the others send an
   empty SyncGroup and wait. On the leader's, the coordinator stores the group (generation,
   members, assignments) and hands each member exactly the leader's assignment for this
   generation, nothing else and no other generation's (REBAL-1, REBAL-2). The group is Stable.

Since KIP-394 (JoinGroup v4) a new member first gets its id with MEMBER_ID_REQUIRED and must
join again with it, so a client that times out and retries cannot leave ghost members behind
(REBAL-10). A **static member** (KIP-345,
`group.instance.id`) that restarts rejoins under its instance id and gets its old place and
assignment back without a rebalance; the member id it replaced is fenced (REBAL-11). Members
that never send SyncGroup after a rebalance are removed after the rebalance timeout
(REBAL-13, Kafka 3.0's pending-sync timeout).

Membership itself (sessions, heartbeats, leaving, the timers) is membership.py, which this
class extends.

Rules: REBAL-1, REBAL-2, REBAL-7..REBAL-11, REBAL-13 (spec/rebalance.md).
"""

from __future__ import annotations

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
from kafka_ref.group.membership import (
    NEW_MEMBER_JOIN_TIMEOUT_MS,
    OK,
    GroupMembership,
    JoinCallback,
    JoinedMember,
    JoinGroupResult,
    SyncCallback,
    SyncGroupResult,
)


class GroupRebalance(GroupMembership):
    """JoinGroup and SyncGroup: the two rounds of a rebalance."""

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
        error = self._group_status(group_id)
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
        self._arm_heartbeat(group, new, NEW_MEMBER_JOIN_TIMEOUT_MS)
        self._maybe_prepare_rebalance(group)

    @staticmethod
    def _update_member(current: MemberMetadata, member, protocols, callback) -> None:
        current.rebalance_timeout_ms, current.session_timeout_ms = member[0], member[1]
        current.supported_protocols = protocols
        current.awaiting_join_callback = callback

    def _update_member_and_rebalance(self, group, current, member, protocols, callback):
        self._update_member(current, member, protocols, callback)
        self._maybe_prepare_rebalance(group)

    def _replace_static_member(self, group, instance_id, old_id, new_id, member, protocols, cb):
        """A static member rejoins with a new member id (KIP-345, REBAL-11)."""
        current_leader = group.leader_id or ""
        old = group.get(old_id)
        # the old instance is a zombie now: answer what it waits for with FENCED_INSTANCE_ID
        self._invoke_join(old, JoinGroupResult(ErrorCode.FENCED_INSTANCE_ID, member_id=old_id))
        self._invoke_sync(old, SyncGroupResult(ErrorCode.FENCED_INSTANCE_ID))
        replaced = group.replace_static_member(instance_id, old_id, new_id)
        old_protocols = replaced.supported_protocols
        self._arm_heartbeat(group, replaced)
        self._update_member(replaced, member, protocols, cb)
        if group.is_(STABLE):
            if group.protocol_name != group.select_protocol():
                return self._maybe_prepare_rebalance(group)
            # Same protocol: keep the generation and the assignment; persist the new member
            # id. The answer names the old leader id, so that the new instance, even if it
            # is the leader, does not compute an assignment a Stable group would not use.
            generation = group.generation_id

            def stored(error: ErrorCode) -> None:
                if error != OK:  # undo, so the old id keeps working
                    replaced.supported_protocols = old_protocols
                    replaced.awaiting_join_callback = None
                    if group.members.get(new_id) is replaced:
                        group.replace_static_member(instance_id, new_id, old_id)
                    self._arm_heartbeat(group, replaced)
                    return cb(JoinGroupResult(error, generation, group.protocol_type,
                                              group.protocol_name, current_leader))  # fmt: skip
                self._invoke_join(replaced, JoinGroupResult(
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
        delay = self.config.group_initial_rebalance_delay_ms
        if initial and delay > 0:
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
        for as long as new members keep arriving (REBAL-8)."""
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
            self._invoke_join(member, self._join_result(group, member))
            self._arm_heartbeat(group, member)
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
        error = self._group_status(group_id)
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
            self._arm_heartbeat(group, member)
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
                self._arm_heartbeat(group, member)
