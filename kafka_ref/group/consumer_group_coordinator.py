"""The coordinator's side of KIP-848: ConsumerGroupHeartbeat, one member at a time.

Every member of a consumer group sends ConsumerGroupHeartbeat every
`group.consumer.heartbeat.interval.ms`. `ConsumerGroupCoordinator.heartbeat` (Kafka
`GroupMetadataManager.consumerGroupHeartbeat`) handles one in five steps:

1. **Check the request** (CGRP-2): a first heartbeat (epoch 0) must give a rebalance timeout
   and a subscription and own nothing; a member id is required; an unknown assignor is
   UNSUPPORTED_ASSIGNOR, an invalid regex INVALID_REGULAR_EXPRESSION.
2. **Find the member** (CGRP-3): epoch 0 joins (a new member, a member rejoining after it was
   fenced, or a static member taking back its place, CGRP-11); -1 leaves and -2 leaves
   for a while (a static member); any other epoch must be the member's own, or its previous
   one when the answer that bumped it was lost: else FENCED_MEMBER_EPOCH, and an unknown
   member is UNKNOWN_MEMBER_ID. The client that hears these rejoins with epoch 0.
3. **Bump the group epoch** (CGRP-4) when the member is new or its subscription changed,
   or when the partitions of the subscribed topics changed (the metadata hash).
4. **Compute the target assignment** when the group epoch is ahead of it, with the
   assignor the members ask for or `group.consumer.assignors`' first (CGRP-8, CGRP-9).
5. **Reconcile the member** (reconciliation.py, CGRP-5): revoke before assign.

Every change becomes records of `__consumer_offsets` (consumer_group_records.py), and the
answer goes out once they are durable, with the member's epoch and, when it changed, the
partitions it may use now.

**Timers.** Each member has a session timer (`group.consumer.session.timeout.ms`), restarted
by each heartbeat: a silent member is fenced, removed from the group, its partitions freed
(CGRP-10). A member asked to revoke has its rebalance timeout (the client's
`max.poll.interval.ms`) to do it, or it is fenced too. A static member that left with -2
keeps its place and assignment until its session expires (CGRP-11).

A group id is either a classic group or a consumer group (CGRP-14): the first heartbeat
converts an empty classic group, a classic JoinGroup an empty consumer group back
(`GroupCoordinator`); a consumer-protocol member cannot join a classic group that has
members, nor a classic member a consumer group that has (CGRP-15).

Rules: CGRP-2..CGRP-5, CGRP-10, CGRP-11, CGRP-14, CGRP-15.
"""

from __future__ import annotations

import hashlib
import logging
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from kafka_ref.clock import Clock, Scheduler, TimerHandle
from kafka_ref.errors import ErrorCode
from kafka_ref.group import consumer_group_records as rec
from kafka_ref.group.consumer_group import (
    JOIN_EPOCH,
    LEAVE_EPOCH,
    STATIC_LEAVE_EPOCH,
    Assignment,
    ConsumerGroup,
    ConsumerGroupMember,
    MemberState,
    assignment,
    valid_regex,
)
from kafka_ref.group.consumer_group_assignors import ASSIGNORS, AssignmentSpec
from kafka_ref.group.group_metadata import DEAD, GroupMetadata
from kafka_ref.group.group_metadata_manager import GroupMetadataManager
from kafka_ref.group.offsets_records import group_metadata_key
from kafka_ref.group.reconciliation import next_member_state

if TYPE_CHECKING:
    from kafka_ref.group.rebalance import GroupConfig

logger = logging.getLogger(__name__)

OK = ErrorCode.NO_ERROR
MEMBER_ID_BY_CLIENT_VERSION = 1  # from v1 the client generates its member id


@dataclass(frozen=True)
class TopicImage:
    """A topic as the assignor needs it: name, id and number of partitions."""

    name: str
    topic_id: uuid.UUID
    partitions: int


@dataclass(frozen=True)
class ConsumerHeartbeat:
    """A ConsumerGroupHeartbeat request, as values (None or -1: unchanged)."""

    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: tuple[str, ...] | None = None
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    owned: Assignment | None = None
    client_id: str = ""
    client_host: str = ""
    api_version: int = 1


@dataclass(frozen=True)
class ConsumerHeartbeatResult:
    error: ErrorCode
    message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: Assignment | None = None  # None: unchanged


class HeartbeatError(Exception):
    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code


def metadata_hash(topics: Iterable[TopicImage]) -> int:
    """A digest of the subscribed topics' ids and partition counts: when it changes the group
    epoch is bumped (Kafka `computeMetadataHash`, with another digest)."""
    digest = hashlib.sha256()
    for t in sorted(topics, key=lambda t: t.name):
        digest.update(f"{t.name}/{t.topic_id}/{t.partitions};".encode())
    return int.from_bytes(digest.digest()[:8], "big", signed=True)


class ConsumerGroupCoordinator:
    """Consumer groups' heartbeats, timers and records, over the shared group cache."""

    def __init__(
        self,
        config: GroupConfig,
        clock: Clock,
        schedule: Scheduler,
        manager: GroupMetadataManager,
        group_status: Callable[[str], ErrorCode],
        new_uuid: Callable[[], str],
    ) -> None:
        self.config = config
        self.clock = clock
        self._schedule = schedule
        self.manager = manager
        self._group_status = group_status
        self._new_uuid = new_uuid
        self._session_timers: dict[tuple[str, str], TimerHandle] = {}
        # the group configs of a group (GroupConfigs.for_group; CONFIG-14): none by default
        self.group_configs: Callable[[str], Mapping[str, Any]] = lambda group_id: {}
        self._rebalance_timers: dict[tuple[str, str], TimerHandle] = {}

    def heartbeat_interval_ms(self, group_id: str) -> int:
        """The group's `consumer.heartbeat.interval.ms`, else the broker's."""
        configs = self.group_configs(group_id)
        return configs.get(
            "consumer.heartbeat.interval.ms", self.config.group_consumer_heartbeat_interval_ms
        )

    def session_timeout_ms(self, group_id: str) -> int:
        """The group's `consumer.session.timeout.ms`, else the broker's."""
        configs = self.group_configs(group_id)
        return configs.get(
            "consumer.session.timeout.ms", self.config.group_consumer_session_timeout_ms
        )

    def _now(self) -> int:
        return self.clock.milliseconds()

    # == the heartbeat ==================================================================
    def heartbeat(
        self,
        hb: ConsumerHeartbeat,
        topics: list[TopicImage],
        callback: Callable[[ConsumerHeartbeatResult], None],
    ) -> None:
        """Handle one heartbeat; `callback(result)` once its records are durable."""
        error = self._group_status(hb.group_id)
        if error != OK:
            return callback(ConsumerHeartbeatResult(error))
        records: list[rec.Record] = []
        try:
            result = self._heartbeat(hb, topics, records)
        except HeartbeatError as err:
            return callback(ConsumerHeartbeatResult(err.code, str(err)))

        def written(error: ErrorCode) -> None:
            callback(result if error == OK else ConsumerHeartbeatResult(error))

        self.manager.append_records(hb.group_id, records, written)

    def _heartbeat(
        self, hb: ConsumerHeartbeat, topics: list[TopicImage], records: list[rec.Record]
    ) -> ConsumerHeartbeatResult:
        hb = self._validate(hb)
        group = self._group_for(hb, records)
        if hb.member_epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
            return self._leave(group, hb, records)
        member, replaced = self._member_for(group, hb, records)
        updated = _with_request(member or ConsumerGroupMember(hb.member_id), hb)
        group.update_member(updated)
        if member is None or _metadata(updated) != _metadata(member):
            records.append(rec.member_metadata_record(group.group_id, updated))
        bump = member is None or _subscription(updated) != _subscription(member)
        names = group.subscribed_topics(t.name for t in topics)
        subscribed = [t for t in topics if t.name in names]
        new_hash = metadata_hash(subscribed)
        if bump or new_hash != group.metadata_hash:
            group.group_epoch += 1
            group.metadata_hash = new_hash
            records.append(rec.group_epoch_record(group))
        if group.group_epoch > group.target_assignment_epoch:
            self._compute_target(group, subscribed, records)
        reconciled = next_member_state(
            updated,
            group.target_assignment_epoch,
            group.target_assignment.get(updated.member_id, {}),
            group.owner_of,
            hb.owned,
        )
        if reconciled != updated or member is None or replaced:
            group.update_member(reconciled)
            records.append(rec.current_assignment_record(group.group_id, reconciled))
        self._schedule_timers(group, reconciled)
        full = hb.rebalance_timeout_ms != -1 and hb.owned is not None
        changed = member is None or reconciled.assigned != member.assigned
        return ConsumerHeartbeatResult(
            OK,
            member_id=reconciled.member_id,
            member_epoch=reconciled.member_epoch,
            heartbeat_interval_ms=self.heartbeat_interval_ms(group.group_id),
            assignment=reconciled.assigned if changed or full or replaced else None,
        )

    def _validate(self, hb: ConsumerHeartbeat) -> ConsumerHeartbeat:
        """Kafka `throwIfConsumerGroupHeartbeatRequestIsInvalid` (CGRP-2)."""

        def invalid(message: str) -> HeartbeatError:
            return HeartbeatError(ErrorCode.INVALID_REQUEST, message)

        if not hb.group_id:
            raise invalid("GroupId can't be empty.")
        if hb.instance_id == "":
            raise invalid("InstanceId can't be empty.")
        if hb.rack_id == "":
            raise invalid("RackId can't be empty.")
        if not hb.member_id:
            if hb.api_version >= MEMBER_ID_BY_CLIENT_VERSION or hb.member_epoch != JOIN_EPOCH:
                raise invalid("MemberId can't be empty.")
            hb = replace(hb, member_id=self._new_uuid())  # v0: the coordinator's id
        if hb.member_epoch == JOIN_EPOCH:
            if hb.rebalance_timeout_ms == -1:
                raise invalid("RebalanceTimeoutMs must be provided in first request.")
            if hb.owned:
                raise invalid("TopicPartitions must be empty when (re-)joining.")
            if hb.subscribed_topic_names is None and hb.subscribed_topic_regex is None:
                raise invalid(
                    "SubscribedTopicNames or SubscribedTopicRegex must be set in first request."
                )
        elif hb.member_epoch == STATIC_LEAVE_EPOCH and hb.instance_id is None:
            raise invalid("InstanceId can't be null.")
        elif hb.member_epoch < STATIC_LEAVE_EPOCH:
            raise invalid(f"MemberEpoch is invalid: {hb.member_epoch}.")
        if hb.server_assignor is not None and hb.server_assignor not in self._assignors():
            raise HeartbeatError(
                ErrorCode.UNSUPPORTED_ASSIGNOR,
                f"ServerAssignor {hb.server_assignor} is not supported. Supported assignors: "
                f"{', '.join(self._assignors())}.",
            )
        if hb.subscribed_topic_regex and not valid_regex(hb.subscribed_topic_regex):
            raise HeartbeatError(
                ErrorCode.INVALID_REGULAR_EXPRESSION,
                f"SubscribedTopicRegex `{hb.subscribed_topic_regex}` is not a valid regular "
                "expression.",
            )
        return hb

    def _assignors(self) -> list[str]:
        return [a for a in self.config.group_consumer_assignors if a in ASSIGNORS]

    def _group_for(self, hb: ConsumerHeartbeat, records: list[rec.Record]) -> ConsumerGroup:
        """The consumer group, created (or converted from an empty classic group) on a join."""
        group = self.manager.get_group(hb.group_id)
        if group is not None and group.is_(DEAD):
            group = None
        if isinstance(group, ConsumerGroup):
            return group
        joining = hb.member_epoch == JOIN_EPOCH
        if group is None:
            if not joining:
                raise HeartbeatError(
                    ErrorCode.GROUP_ID_NOT_FOUND, f"Consumer group {hb.group_id} not found."
                )
            return self.manager.add_group(ConsumerGroup(hb.group_id, self._now()))
        assert isinstance(group, GroupMetadata)
        if not joining or group.members:  # a classic group in use (CGRP-15)
            raise HeartbeatError(
                ErrorCode.GROUP_ID_NOT_FOUND, f"Group {hb.group_id} is not a consumer group."
            )
        return self.convert_from_classic(group, records)

    def convert_from_classic(
        self, classic: GroupMetadata, records: list[rec.Record]
    ) -> ConsumerGroup:
        """An empty classic group becomes a consumer group, keeping its offsets (CGRP-14)."""
        if classic.generation_id > 0:
            records.append((group_metadata_key(classic.group_id), None))
        group = ConsumerGroup(classic.group_id, self._now())
        group.offsets = classic.offsets
        group.pending_offset_commits = classic.pending_offset_commits
        self.manager.groups[classic.group_id] = group
        logger.info("converted empty classic group %s to a consumer group", group.group_id)
        return group

    def _member_for(
        self, group: ConsumerGroup, hb: ConsumerHeartbeat, records: list[rec.Record]
    ) -> tuple[ConsumerGroupMember | None, bool]:
        """(the member before this heartbeat or None for a new one, whether a static member
        took back its place under a new member id)."""
        member = group.members.get(hb.member_id)
        if hb.member_epoch != JOIN_EPOCH:
            if member is None:
                raise HeartbeatError(
                    ErrorCode.UNKNOWN_MEMBER_ID,
                    f"Member {hb.member_id} is not a member of group {group.group_id}.",
                )
            _check_epoch(member, hb)
            return member, False
        if hb.instance_id is not None:
            previous_id = group.static_members.get(hb.instance_id)
            if previous_id is not None and previous_id != hb.member_id:
                previous = group.members[previous_id]
                if previous.member_epoch != STATIC_LEAVE_EPOCH:
                    raise HeartbeatError(
                        ErrorCode.UNRELEASED_INSTANCE_ID,
                        f"Static member {previous_id} with instance id {hb.instance_id} "
                        "is not released yet.",
                    )
                return self._replace_static_member(group, previous, hb, records), True
        if member is None and len(group.members) >= self.config.group_consumer_max_size:
            raise HeartbeatError(
                ErrorCode.GROUP_MAX_SIZE_REACHED,
                f"The consumer group has reached its maximum capacity of "
                f"{self.config.group_consumer_max_size} members.",
            )
        return member, False

    def _replace_static_member(
        self,
        group: ConsumerGroup,
        previous: ConsumerGroupMember,
        hb: ConsumerHeartbeat,
        records: list[rec.Record],
    ) -> ConsumerGroupMember:
        """The static member comes back under a new id with its epoch and assignment: no
        rebalance (CGRP-11). Kafka `consumerGroupStaticMemberGroupJoin`."""
        target = group.target_assignment.get(previous.member_id, {})
        self._remove(group, previous.member_id, records)
        epoch = previous.previous_member_epoch  # the one it had before it left with -2
        member = previous.with_changes(
            member_id=hb.member_id, member_epoch=epoch, previous_member_epoch=epoch
        )
        group.update_member(member)
        group.target_assignment[member.member_id] = target
        records.append(rec.member_metadata_record(group.group_id, member))
        records.append(rec.target_member_record(group.group_id, member.member_id, target))
        return member

    def _leave(
        self, group: ConsumerGroup, hb: ConsumerHeartbeat, records: list[rec.Record]
    ) -> ConsumerHeartbeatResult:
        """Epoch -1 leaves the group; -2, a static member's, keeps its place for a while."""
        member = group.members.get(hb.member_id)
        if member is None:
            raise HeartbeatError(
                ErrorCode.UNKNOWN_MEMBER_ID,
                f"Member {hb.member_id} is not a member of group {group.group_id}.",
            )
        if hb.member_epoch == STATIC_LEAVE_EPOCH and member.instance_id is not None:
            left = member.with_changes(
                member_epoch=STATIC_LEAVE_EPOCH, previous_member_epoch=member.member_epoch
            )
            group.update_member(left)
            records.append(rec.current_assignment_record(group.group_id, left))
            self._cancel(self._rebalance_timers, group.group_id, member.member_id)
        else:
            self.fence(group, member.member_id, records, reason="left the group")
        return ConsumerHeartbeatResult(OK, member_id=hb.member_id, member_epoch=hb.member_epoch)

    def _compute_target(
        self, group: ConsumerGroup, subscribed: list[TopicImage], records: list[rec.Record]
    ) -> None:
        """A new target assignment for the group epoch (CGRP-8)."""
        name = group.preferred_server_assignor() or self._assignors()[0]
        by_name = {t.name: t for t in subscribed}
        spec = AssignmentSpec(
            subscriptions={
                m.member_id: frozenset(t.topic_id for n, t in by_name.items() if m.subscribes_to(n))
                for m in group.members.values()
            },
            partitions={t.topic_id: t.partitions for t in subscribed},
            current=dict(group.target_assignment),
        )
        target = ASSIGNORS[name](spec)
        for member_id, partitions in target.items():
            if group.target_assignment.get(member_id) != partitions:
                records.append(rec.target_member_record(group.group_id, member_id, partitions))
        group.target_assignment = target
        group.target_assignment_epoch = group.group_epoch
        records.append(rec.target_epoch_record(group, self._now()))

    # == leaving and fencing ============================================================
    def fence(
        self, group: ConsumerGroup, member_id: str, records: list[rec.Record], *, reason: str
    ) -> None:
        """Remove a member and free its partitions; the group epoch moves on (CGRP-10)."""
        logger.info("member %s of group %s is removed: %s", member_id, group.group_id, reason)
        self._remove(group, member_id, records)
        group.group_epoch += 1
        records.append(rec.group_epoch_record(group))

    def _remove(self, group: ConsumerGroup, member_id: str, records: list[rec.Record]) -> None:
        group.remove_member(member_id)
        records.extend(rec.member_tombstones(group.group_id, member_id))
        self._cancel(self._session_timers, group.group_id, member_id)
        self._cancel(self._rebalance_timers, group.group_id, member_id)

    def _fence_and_write(self, group: ConsumerGroup, member_id: str, reason: str) -> None:
        if self.manager.get_group(group.group_id) is not group or member_id not in group.members:
            return
        records: list[rec.Record] = []
        self.fence(group, member_id, records, reason=reason)
        self.manager.append_records(group.group_id, records, lambda error: None)

    # == timers =========================================================================
    def _timer(self, delay_ms: int, fn: Callable[[], None]) -> TimerHandle:
        return self._schedule(max(delay_ms, 0) / 1000.0, fn)

    @staticmethod
    def _cancel(timers: dict[tuple[str, str], TimerHandle], group_id: str, member_id: str):
        timer = timers.pop((group_id, member_id), None)
        if timer is not None:
            timer.cancel()

    def start_session_timer(self, group: ConsumerGroup, member_id: str) -> None:
        """(Re)start the member's session: silent that long, it is fenced (CGRP-10)."""
        key = (group.group_id, member_id)
        self._cancel(self._session_timers, *key)

        def expire() -> None:
            self._session_timers.pop(key, None)
            self._fence_and_write(group, member_id, "its session expired")

        timeout = self.session_timeout_ms(group.group_id)
        self._session_timers[key] = self._timer(timeout, expire)

    def _schedule_timers(self, group: ConsumerGroup, member: ConsumerGroupMember) -> None:
        self.start_session_timer(group, member.member_id)
        key = (group.group_id, member.member_id)
        if member.state is not MemberState.UNREVOKED_PARTITIONS:
            self._cancel(self._rebalance_timers, *key)
        elif key not in self._rebalance_timers:
            epoch = member.member_epoch

            def expire() -> None:
                self._rebalance_timers.pop(key, None)
                now = group.members.get(member.member_id)
                if (
                    now is not None
                    and now.state is MemberState.UNREVOKED_PARTITIONS
                    and now.member_epoch == epoch
                ):
                    self._fence_and_write(group, member.member_id, "it did not revoke in time")

            self._rebalance_timers[key] = self._timer(member.rebalance_timeout_ms, expire)

    def cancel_group_timers(self, group: ConsumerGroup) -> None:
        for member_id in group.members:
            self._cancel(self._session_timers, group.group_id, member_id)
            self._cancel(self._rebalance_timers, group.group_id, member_id)

    def stop(self) -> None:
        for timers in (self._session_timers, self._rebalance_timers):
            for timer in timers.values():
                timer.cancel()
            timers.clear()


def _check_epoch(member: ConsumerGroupMember, hb: ConsumerHeartbeat) -> None:
    """Kafka `throwIfMemberEpochIsInvalid` (CGRP-3): the member's epoch, or its previous one
    with nothing owned beyond what it has (the answer that bumped it was lost)."""
    received = hb.member_epoch
    if received == member.member_epoch:
        return
    lost_answer = (
        received == member.previous_member_epoch
        and received < member.member_epoch
        and hb.owned is not None
        and _is_subset(hb.owned, member.assigned)
    )
    if not lost_answer:
        side = "greater" if received > member.member_epoch else "smaller"
        raise HeartbeatError(
            ErrorCode.FENCED_MEMBER_EPOCH,
            f"The consumer group member has a {side} member epoch ({received}) than the one"
            " known by the group coordinator"
            f" ({member.member_epoch}). The member must abandon all its partitions and rejoin.",
        )


def _is_subset(owned: Assignment, assigned: Assignment) -> bool:
    return all(parts <= assigned.get(t, frozenset()) for t, parts in owned.items())


def _with_request(member: ConsumerGroupMember, hb: ConsumerHeartbeat) -> ConsumerGroupMember:
    """The member with what the heartbeat changed (a null field changes nothing)."""
    changes: dict = {"client_id": hb.client_id, "client_host": hb.client_host}
    if hb.instance_id is not None:
        changes["instance_id"] = hb.instance_id
    if hb.rack_id is not None:
        changes["rack_id"] = hb.rack_id
    if hb.rebalance_timeout_ms != -1:
        changes["rebalance_timeout_ms"] = hb.rebalance_timeout_ms
    if hb.subscribed_topic_names is not None:
        changes["subscribed_topic_names"] = tuple(sorted(hb.subscribed_topic_names))
    if hb.subscribed_topic_regex is not None:
        changes["subscribed_topic_regex"] = hb.subscribed_topic_regex or None
    if hb.server_assignor is not None:
        changes["server_assignor"] = hb.server_assignor
    return member.with_changes(**changes)


def _subscription(m: ConsumerGroupMember) -> tuple:
    return (m.subscribed_topic_names, m.subscribed_topic_regex, m.server_assignor)


def _metadata(m: ConsumerGroupMember) -> tuple:
    """What ConsumerGroupMemberMetadata stores."""
    return (
        m.instance_id,
        m.rack_id,
        m.client_id,
        m.client_host,
        _subscription(m),
        m.rebalance_timeout_ms,
    )


__all__ = [
    "ConsumerGroupCoordinator",
    "ConsumerHeartbeat",
    "ConsumerHeartbeatResult",
    "TopicImage",
    "assignment",
    "metadata_hash",
]
