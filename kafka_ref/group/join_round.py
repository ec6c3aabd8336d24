"""The JoinGroup round: members announce themselves, and the coordinator gathers them.

A member sends JoinGroup with the protocols it supports (for consumers: assignor names, each
with its subscription), its session timeout and its rebalance timeout (a consumer's
`max.poll.interval.ms`). What happens depends on who it is and on the group's state (Kafka:
`GroupCoordinator.handleJoinGroup`, `doNewMemberJoinGroup`, `doCurrentMemberJoinGroup`):

* **A new member** (no member id). Since KIP-394 (JoinGroup v4) it first gets an id with
  MEMBER_ID_REQUIRED and must join again with it, so a client that times out and retries
  cannot leave ghost members behind (REBAL-10); until it does, it is a *pending* member.
  Joining adds it to the group and starts a rebalance (or joins the one under way).
* **A known member** rejoins: during PreparingRebalance its JoinGroup waits (as a callback)
  until the round completes (delayed_join.py); during CompletingRebalance the same protocols
  mean a retry whose answer got lost and are answered again; in a Stable group only the
  leader, or a member whose subscription changed, starts a new rebalance.
* **A static member** (KIP-345, `group.instance.id`) that restarts joins with no member id
  but its instance id: it gets its old place and assignment back without a rebalance, under a
  new member id, and the old member id is fenced with FENCED_INSTANCE_ID (REBAL-11).

Errors come first: a session timeout outside `group.min.session.timeout.ms` ..
`group.max.session.timeout.ms` is INVALID_SESSION_TIMEOUT (REBAL-14), protocols the group does not
share are INCONSISTENT_GROUP_PROTOCOL, a full group (`group.max.size`) is
GROUP_MAX_SIZE_REACHED, and an id the group does not know is UNKNOWN_MEMBER_ID (REBAL-4).
When the round completes, every member gets the generation, the chosen protocol and the
leader's id; only the leader's answer lists the members and their metadata (REBAL-9).

A part of `GroupRebalance` (rebalance.py).

Newer JoinGroup versions add little here: v8 a `reason`, only logged (REBAL-20); v9 lets a
static leader that rejoins a Stable group learn the members without assigning (KIP-814,
REBAL-21).

Rules: REBAL-4, REBAL-9, REBAL-10, REBAL-11, REBAL-14, REBAL-20, REBAL-21 (spec/rebalance.md).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field

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
from kafka_ref.group.sync_round import SyncGroupResult

logger = logging.getLogger("kafka_ref.group.rebalance")

OK = ErrorCode.NO_ERROR
NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000  # Kafka's NewMemberJoinTimeoutMs


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
    skip_assignment: bool = False  # JoinGroup v9+: the leader must not assign (REBAL-21)


JoinCallback = Callable[[JoinGroupResult], None]


class JoinRound:
    """JoinGroup: new, known and static members (a part of `GroupRebalance`)."""

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
            self._join_new_member(
                group,
                group_instance_id,
                require_known_member_id,
                member,
                protocols,
                callback,
                supports_skip_assignment,
            )
        else:
            self._join_current_member(
                group, member_id, group_instance_id, member, protocols, callback
            )
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
        self, group, instance_id, require_known_id, member, protocols, callback, skip_assignment
    ):
        if group.is_(DEAD):
            return callback(JoinGroupResult(ErrorCode.COORDINATOR_NOT_AVAILABLE))
        if not group.supports_protocols(member[4], [n for n, _ in protocols]):
            return callback(JoinGroupResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL))
        new_id = f"{instance_id if instance_id is not None else member[2]}-{self._new_uuid()}"
        if instance_id is not None:
            old_id = group.current_static_member_id(instance_id)
            if old_id is not None:
                return self._replace_static_member(
                    group,
                    instance_id,
                    old_id,
                    new_id,
                    member,
                    protocols,
                    callback,
                    skip_assignment,
                )
            return self._add_member_and_rebalance(
                group, new_id, instance_id, member, protocols, callback
            )
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
            return self._add_member_and_rebalance(
                group, member_id, instance_id, member, protocols, callback
            )
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
            OK,
            group.generation_id,
            group.protocol_type,
            group.protocol_name,
            group.leader_id or "",
            member.member_id,
            members,
        )

    def _add_member_and_rebalance(self, group, member_id, instance_id, member, protocols, cb):
        rebalance_timeout, session_timeout, client_id, client_host, protocol_type = member
        new = MemberMetadata(
            member_id,
            instance_id,
            client_id,
            client_host,
            rebalance_timeout,
            session_timeout,
            protocol_type,
            protocols,
        )
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

    def _replace_static_member(
        self, group, instance_id, old_id, new_id, member, protocols, cb, skip_assignment
    ):
        """A static member rejoins with a new member id (KIP-345, REBAL-11). In a Stable
        group whose protocol does not change, a v9+ leader gets the members and
        SkipAssignment (KIP-814, REBAL-21): it knows its group again without assigning."""
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
                    return cb(
                        JoinGroupResult(
                            error,
                            generation,
                            group.protocol_type,
                            group.protocol_name,
                            current_leader,
                        )
                    )
                if skip_assignment:  # Kafka `JoinGroupRequest.supportsSkippingAssignment`
                    is_leader = group.is_leader(new_id)
                    members = [JoinedMember(*m) for m in group.current_member_metadata()]
                    result = JoinGroupResult(
                        OK,
                        generation,
                        group.protocol_type,
                        group.protocol_name,
                        group.leader_id or "",
                        new_id,
                        members if is_leader else [],
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
