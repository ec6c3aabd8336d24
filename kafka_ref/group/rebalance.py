"""The rebalance protocol: who is in a group and who reads what, as one state machine.

A consumer group's coordinator (Kafka: `GroupCoordinator`) keeps, for every group, its
members: each with the member id the coordinator gave it, its session timeout, its client id
and host, the protocols it supports and its current assignment (group_metadata.py, where the
group's states live: Empty, PreparingRebalance, CompletingRebalance, Stable, Dead).
`GroupRebalance` is everything that moves a group between those states. A rebalance is a
two-round protocol (Kafka: `handleJoinGroup`, `handleSyncGroup`):

1. **JoinGroup** (join_round.py). Every member sends the protocols it supports (for
   consumers: assignor names, each with its subscription). The round ends when every known
   member has rejoined or the rebalance timeout runs out (delayed_join.py: Kafka's
   `DelayedJoin`, and `InitialDelayedJoin` for a group's first members). The coordinator
   then bumps the generation, picks a protocol all members support, keeps or elects a leader
   and answers every JoinGroup; only the leader's answer lists the members.
2. **SyncGroup** (sync_round.py). The leader runs the assignor (in the client:
   kafka_ref/client/assignors) and sends the result; the coordinator stores it and hands
   each member exactly its part. The group is Stable.

Between rebalances membership is kept alive and ended by heartbeats, session timeouts and
LeaveGroup (member_sessions.py). Each of those modules is one concept and one part of this
class (a mixin); they share the state kept here: the configs, the clock, the scheduler and
the manager of the groups (group_metadata_manager.py).

**Timers.** Every timeout (session, join, pending sync, pending member) is a timer of the
injected `Scheduler` (asyncio's `call_later` in the broker, `ManualScheduler` in tests):
nothing here reads a wall clock. A member that waits for the coordinator waits as a callback
(`awaiting_join_callback`, `awaiting_sync_callback`), answered exactly once
(`GroupMetadata.invoke_join`, `_invoke_sync`). The coordinator (coordinator.py) owns one
`GroupRebalance` and adds committed offsets and the admin APIs.

Rules: REBAL-1..REBAL-13, REBAL-17 (spec/rebalance.md).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kafka_ref.clock import Clock, Scheduler
from kafka_ref.errors import ErrorCode
from kafka_ref.group.delayed_join import DelayedJoins
from kafka_ref.group.group_metadata import DEAD, PREPARING_REBALANCE, GroupMetadata, MemberMetadata
from kafka_ref.group.group_metadata_manager import GroupMetadataManager
from kafka_ref.group.join_round import JoinGroupResult, JoinRound
from kafka_ref.group.member_sessions import MemberSessions
from kafka_ref.group.sync_round import SyncGroupResult, SyncRound

OK = ErrorCode.NO_ERROR


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


class GroupRebalance(MemberSessions, JoinRound, DelayedJoins, SyncRound):
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
