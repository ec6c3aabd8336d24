"""The group coordinator's side of a share group (KIP-932): ShareGroupHeartbeat.

Every member of a share group sends ShareGroupHeartbeat every
`group.share.heartbeat.interval.ms`. `ShareGroupCoordinator.heartbeat` (Kafka
`GroupMetadataManager.shareGroupHeartbeat`) handles one as the consumer group coordinator
handles ConsumerGroupHeartbeat (kafka_ref/group/consumer_group_coordinator.py), in fewer
steps, since nothing is revoked and there are no static members nor regexes:

1. **Check the request** (SHARE-40): a member id and a group id are required, a rack id
   may not be empty, a join (epoch 0) must subscribe to some topic, an epoch below -1 is
   invalid: INVALID_REQUEST with Kafka's messages.
2. **Find the group and the member** (SHARE-41): epoch 0 joins (creating the group),
   -1 leaves; any other epoch must be the member's, or its previous one (the answer that
   bumped it was lost): else FENCED_MEMBER_EPOCH; an unknown member is UNKNOWN_MEMBER_ID,
   an unknown group GROUP_ID_NOT_FOUND, and so is a group of another type. A join beyond
   `group.share.max.size` members is GROUP_MAX_SIZE_REACHED.
3. **Bump the group epoch** (SHARE-42) when a member joins, leaves or changes its
   subscription, or the subscribed topics' partitions change (the metadata hash), or
   share-partitions become initialized (step 6).
4. **Compute the target assignment** with the `simple` assignor (share_group_assignor.py)
   when the group epoch is ahead of it.
5. **Bring the member to its target** (SHARE-43): at once, epoch and assignment.
6. **Initialize share-partitions** (SHARE-46): a partition of a subscribed topic that has
   no state at the share coordinator yet is written as *initializing*
   (ShareGroupStatePartitionMetadata), then `Persister.initialize` is called for it with
   the group epoch as state epoch and start offset -1 (the share-partition applies
   `share.auto.offset.reset` when it first loads it). Once initialized it is recorded as
   such and the group epoch is bumped, so the next heartbeat hands it out. A failed
   initialization leaves the initializing set, and a later heartbeat retries it.

Every change becomes records of `__consumer_offsets` (share_group_records.py) and the
answer goes out once they are durable, with the member's epoch and, when it joined or its
assignment changed, its assignment.

**Sessions.** Each heartbeat restarts the member's session timer
(`group.share.session.timeout.ms`); a member silent that long is removed from the group,
which bumps the group epoch, and its partitions go to the others (SHARE-41).

Rules: SHARE-40..SHARE-43, SHARE-46, SHARE-51.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kafka_ref.clock import Clock, Scheduler, TimerHandle
from kafka_ref.errors import ErrorCode
from kafka_ref.group.consumer_group import Assignment
from kafka_ref.group.consumer_group_coordinator import HeartbeatError, TopicImage, metadata_hash
from kafka_ref.group.group_metadata import DEAD
from kafka_ref.group.group_metadata_manager import GroupMetadataManager
from kafka_ref.share import share_group_records as rec
from kafka_ref.share.persister import Persister, SharePartitionKey, ShareStateSummary
from kafka_ref.share.share_group import (
    JOIN_EPOCH,
    LEAVE_EPOCH,
    ShareGroup,
    ShareGroupMember,
    add_partitions,
    remove_partitions,
    state_pairs,
)
from kafka_ref.share.share_group_assignor import ShareAssignmentSpec, simple_assign

if TYPE_CHECKING:
    from kafka_ref.group.rebalance import GroupConfig

logger = logging.getLogger(__name__)

OK = ErrorCode.NO_ERROR
UNINITIALIZED_START_OFFSET = -1  # Kafka `PartitionFactory.UNINITIALIZED_START_OFFSET`

Spawn = Callable[[Coroutine[Any, Any, Any]], Any]
"""Runs a persister call: `loop.create_task` in the broker."""


@dataclass(frozen=True)
class ShareHeartbeat:
    """A ShareGroupHeartbeat request, as values (None: unchanged)."""

    group_id: str
    member_id: str
    member_epoch: int
    rack_id: str | None = None
    subscribed_topic_names: tuple[str, ...] | None = None
    client_id: str = ""
    client_host: str = ""


@dataclass(frozen=True)
class ShareHeartbeatResult:
    error: ErrorCode
    message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: Assignment | None = None  # None: unchanged


class ShareGroupCoordinator:
    """Share groups' heartbeats, sessions, records and share-partition initialization."""

    def __init__(
        self,
        config: GroupConfig,
        clock: Clock,
        schedule: Scheduler,
        manager: GroupMetadataManager,
        group_status: Callable[[str], ErrorCode],
        persister: Callable[[], Persister],
        spawn: Spawn,
    ) -> None:
        self.config = config
        self.clock = clock
        self._schedule = schedule
        self.manager = manager
        self._group_status = group_status
        self.persister = persister
        self._spawn = spawn
        self._session_timers: dict[tuple[str, str], TimerHandle] = {}
        # the group configs of a group (GroupConfigs.for_group; CONFIG-14): none by default
        self.group_configs: Callable[[str], Mapping[str, Any]] = lambda group_id: {}

    def heartbeat_interval_ms(self, group_id: str) -> int:
        """The group's `share.heartbeat.interval.ms`, else the broker's."""
        configs = self.group_configs(group_id)
        return configs.get(
            "share.heartbeat.interval.ms", self.config.group_share_heartbeat_interval_ms
        )

    def session_timeout_ms(self, group_id: str) -> int:
        """The group's `share.session.timeout.ms`, else the broker's."""
        configs = self.group_configs(group_id)
        return configs.get("share.session.timeout.ms", self.config.group_share_session_timeout_ms)

    def _now(self) -> int:
        return self.clock.milliseconds()

    # == the heartbeat ==================================================================
    def heartbeat(
        self,
        hb: ShareHeartbeat,
        topics: list[TopicImage],
        callback: Callable[[ShareHeartbeatResult], None],
    ) -> None:
        """Handle one heartbeat; `callback(result)` once its records are durable."""
        try:
            _validate(hb)
        except HeartbeatError as err:
            return callback(ShareHeartbeatResult(err.code, str(err) or None))
        error = self._group_status(hb.group_id)
        if error != OK:
            return callback(ShareHeartbeatResult(error))
        records: list[rec.Record] = []
        try:
            result, group = self._heartbeat(hb, topics, records)
        except HeartbeatError as err:
            return callback(ShareHeartbeatResult(err.code, str(err)))
        to_initialize = self._start_initializing(group, topics, records)

        def written(error: ErrorCode) -> None:
            if error == OK:
                self._initialize(group, to_initialize)
            elif to_initialize:  # not recorded as initializing: forget it, a retry will ask
                for topic_id, parts in to_initialize.items():
                    remove_partitions(group.initializing, topic_id, parts)
            callback(result if error == OK else ShareHeartbeatResult(error))

        self.manager.append_records(hb.group_id, records, written)

    def _heartbeat(
        self, hb: ShareHeartbeat, topics: list[TopicImage], records: list[rec.Record]
    ) -> tuple[ShareHeartbeatResult, ShareGroup]:
        group = self._group_for(hb)
        if hb.member_epoch == LEAVE_EPOCH:
            member = self._known_member(group, hb.member_id)
            self.fence(group, member.member_id, records, reason="left the group")
            result = ShareHeartbeatResult(OK, member_id=hb.member_id, member_epoch=LEAVE_EPOCH)
            return result, group
        member = self._member_for(group, hb)
        updated = _with_request(member or ShareGroupMember(hb.member_id), hb)
        group.update_member(updated)
        if member is None or updated != member:
            records.append(rec.member_metadata_record(group.group_id, updated))
        bump = member is None or updated.subscribed_topic_names != member.subscribed_topic_names
        names = group.subscribed_topic_names()
        new_hash = metadata_hash(t for t in topics if t.name in names)
        if bump or new_hash != group.metadata_hash:
            group.group_epoch += 1
            group.metadata_hash = new_hash
            records.append(rec.group_epoch_record(group))
        if group.group_epoch > group.target_assignment_epoch:
            self._compute_target(group, topics, records)
        reconciled = _reconcile(updated, group)
        if reconciled != updated or member is None:
            group.update_member(reconciled)
            records.append(rec.current_assignment_record(group.group_id, reconciled))
        self.start_session_timer(group, reconciled.member_id)
        joined = hb.member_epoch == JOIN_EPOCH
        changed = member is None or reconciled.assigned != member.assigned
        return ShareHeartbeatResult(
            OK,
            member_id=reconciled.member_id,
            member_epoch=reconciled.member_epoch,
            heartbeat_interval_ms=self.heartbeat_interval_ms(group.group_id),
            assignment=reconciled.assigned if joined or changed else None,
        ), group

    def _group_for(self, hb: ShareHeartbeat) -> ShareGroup:
        """The share group, created on a join (Kafka `getOrMaybeCreatePersistedShareGroup`)."""
        group = self.manager.get_group(hb.group_id)
        if group is not None and group.is_(DEAD):
            group = None
        if group is None:
            if hb.member_epoch != JOIN_EPOCH:
                raise HeartbeatError(
                    ErrorCode.GROUP_ID_NOT_FOUND, f"Share group {hb.group_id} not found."
                )
            return self.manager.add_group(ShareGroup(hb.group_id, self._now()))
        if not isinstance(group, ShareGroup):  # a group id has one type
            raise HeartbeatError(
                ErrorCode.GROUP_ID_NOT_FOUND, f"Group {hb.group_id} is not a share group."
            )
        return group

    @staticmethod
    def _known_member(group: ShareGroup, member_id: str) -> ShareGroupMember:
        member = group.members.get(member_id)
        if member is None:
            raise HeartbeatError(
                ErrorCode.UNKNOWN_MEMBER_ID,
                f"Member {member_id} is not a member of group {group.group_id}.",
            )
        return member

    def _member_for(self, group: ShareGroup, hb: ShareHeartbeat) -> ShareGroupMember | None:
        """The member before this heartbeat, or None for a new one (SHARE-41)."""
        if hb.member_epoch != JOIN_EPOCH:
            member = self._known_member(group, hb.member_id)
            _check_epoch(member, hb.member_epoch)
            return member
        member = group.members.get(hb.member_id)
        max_size = self.config.group_share_max_size
        if member is None and len(group.members) >= max_size:
            raise HeartbeatError(
                ErrorCode.GROUP_MAX_SIZE_REACHED,
                f"The share group has reached its maximum capacity of {max_size} members.",
            )
        return member

    def _compute_target(
        self, group: ShareGroup, topics: list[TopicImage], records: list[rec.Record]
    ) -> None:
        """A new target assignment for the group epoch, of initialized partitions only."""
        ids = {t.name: t.topic_id for t in topics}
        assignable = group.assignable_partitions()
        spec = ShareAssignmentSpec(
            subscriptions={
                m.member_id: frozenset(ids[n] for n in m.subscribed_topic_names if n in ids)
                for m in group.members.values()
            },
            partitions={t: parts for t, parts in assignable.items() if t in ids.values()},
            current=dict(group.target_assignment),
        )
        target = simple_assign(spec)
        for member_id, partitions in target.items():
            if group.target_assignment.get(member_id) != partitions:
                records.append(rec.target_member_record(group.group_id, member_id, partitions))
        group.target_assignment = target
        group.target_assignment_epoch = group.group_epoch
        records.append(rec.target_epoch_record(group, self._now()))

    # == share-partitions ===============================================================
    def _start_initializing(
        self, group: ShareGroup, topics: list[TopicImage], records: list[rec.Record]
    ) -> dict:
        """The subscribed topics' partitions without a state yet become initializing
        (Kafka `maybeCreateInitializeShareGroupStateRequest`, SHARE-46)."""
        names = group.subscribed_topic_names()
        known = group.state_partitions()
        wanted: dict = {}
        for t in topics:
            if t.name not in names:
                continue
            missing = {p for p in range(t.partitions) if (t.topic_id, p) not in known}
            if missing:
                wanted[t.topic_id] = frozenset(missing)
                add_partitions(group.initializing, t.topic_id, t.name, missing)
        if wanted:
            records.append(rec.state_partition_metadata_record(group))
        return wanted

    def _initialize(self, group: ShareGroup, wanted: dict) -> None:
        """Ask the persister to initialize each share-partition, off the heartbeat."""
        if not wanted:
            return
        persister, state_epoch = self.persister(), group.group_epoch
        keys = [
            SharePartitionKey(group.group_id, topic_id, p)
            for topic_id, parts in sorted(wanted.items())
            for p in sorted(parts)
        ]

        async def initialize_all() -> None:
            errors = {
                key: await persister.initialize(key, state_epoch, UNINITIALIZED_START_OFFSET)
                for key in keys
            }
            self._initialized(group, errors)

        self._spawn(initialize_all())

    def _initialized(self, group: ShareGroup, errors: dict[SharePartitionKey, ErrorCode]) -> None:
        """Record the outcome: done partitions become assignable, and the group epoch
        moves on so that the next heartbeat assigns them (Kafka
        `initializeShareGroupState`, `uninitializeShareGroupState`)."""
        if self.manager.get_group(group.group_id) is not group or group.dead:
            return
        done = [key for key, error in errors.items() if error == OK]
        for key, error in errors.items():
            name, _ = group.initializing.get(key.topic_id, ("", frozenset()))
            remove_partitions(group.initializing, key.topic_id, [key.partition])
            if error == OK:
                add_partitions(group.initialized, key.topic_id, name, [key.partition])
            else:
                logger.warning("share-partition %s not initialized: %s", key, error.name)
        records = [rec.state_partition_metadata_record(group)]
        if done:
            group.group_epoch += 1
            records.append(rec.group_epoch_record(group))
        self.manager.append_records(group.group_id, records, lambda error: None)

    def delete_state(self, group: ShareGroup, callback: Callable[[ErrorCode], None]) -> None:
        """Delete every share-partition state of the group (DeleteGroups): the persister's
        `delete_state` for each, then `callback(first error or NO_ERROR)`."""
        keys = [
            SharePartitionKey(group.group_id, t, p) for t, p in sorted(group.state_partitions())
        ]
        persister = self.persister()

        async def delete_all() -> None:
            errors = [await persister.delete_state(key) for key in keys]
            callback(next((e for e in errors if e != OK), OK))

        self._spawn(delete_all())

    # == leaving and sessions ===========================================================
    def fence(
        self, group: ShareGroup, member_id: str, records: list[rec.Record], *, reason: str
    ) -> None:
        """Remove a member; the group epoch moves on (Kafka `shareGroupFenceMember`)."""
        logger.info("member %s of share group %s is removed: %s", member_id, group.group_id, reason)
        group.remove_member(member_id)
        records.extend(rec.member_tombstones(group.group_id, member_id))
        self._cancel(group.group_id, member_id)
        group.group_epoch += 1
        records.append(rec.group_epoch_record(group))

    def start_session_timer(self, group: ShareGroup, member_id: str) -> None:
        """(Re)start the member's session: silent that long, it is removed (SHARE-41)."""
        key = (group.group_id, member_id)
        self._cancel(*key)

        def expire() -> None:
            self._session_timers.pop(key, None)
            if self.manager.get_group(group.group_id) is not group:
                return
            if member_id not in group.members:
                return
            records: list[rec.Record] = []
            self.fence(group, member_id, records, reason="its session expired")
            self.manager.append_records(group.group_id, records, lambda error: None)

        delay_s = self.session_timeout_ms(group.group_id) / 1000.0
        self._session_timers[key] = self._schedule(delay_s, expire)

    def _cancel(self, group_id: str, member_id: str) -> None:
        timer = self._session_timers.pop((group_id, member_id), None)
        if timer is not None:
            timer.cancel()

    def cancel_group_timers(self, group: ShareGroup) -> None:
        for member_id in group.members:
            self._cancel(group.group_id, member_id)

    def stop(self) -> None:
        for timer in self._session_timers.values():
            timer.cancel()
        self._session_timers.clear()


def _validate(hb: ShareHeartbeat) -> None:
    """Kafka `throwIfShareGroupHeartbeatRequestIsInvalid` (SHARE-40): a blank string is
    empty, as Java's `trim().isEmpty()`."""

    def invalid(message: str) -> HeartbeatError:
        return HeartbeatError(ErrorCode.INVALID_REQUEST, message)

    if not hb.member_id:  # Kafka's answer to an empty member id has no message
        raise invalid("")
    if not hb.member_id.strip():
        raise invalid("MemberId can't be empty.")
    if not hb.group_id.strip():
        raise invalid("GroupId can't be empty.")
    if hb.rack_id is not None and not hb.rack_id.strip():
        raise invalid("RackId can't be empty.")
    if hb.member_epoch == JOIN_EPOCH:
        if not hb.subscribed_topic_names:
            raise invalid("SubscribedTopicNames must be set in first request.")
    elif hb.member_epoch < LEAVE_EPOCH:
        raise invalid("MemberEpoch is invalid.")


def _check_epoch(member: ShareGroupMember, received: int) -> None:
    """Kafka `throwIfShareGroupMemberEpochIsInvalid` (SHARE-41)."""
    if received > member.member_epoch:
        raise HeartbeatError(
            ErrorCode.FENCED_MEMBER_EPOCH,
            f"The share group member has a greater member epoch ({received}) than the one "
            f"known by the group coordinator ({member.member_epoch}). The member must abandon "
            "all its partitions and rejoin.",
        )
    if received < member.member_epoch and received != member.previous_member_epoch:
        raise HeartbeatError(
            ErrorCode.FENCED_MEMBER_EPOCH,
            f"The share group member has a smaller member epoch ({received}) than the one "
            f"known by the group coordinator ({member.member_epoch}), and it does not match "
            f"the previous member epoch ({member.previous_member_epoch}). The member must "
            "abandon all its partitions and rejoin.",
        )


def _with_request(member: ShareGroupMember, hb: ShareHeartbeat) -> ShareGroupMember:
    """The member with what the heartbeat changed (a null field changes nothing)."""
    changes: dict = {"client_id": hb.client_id, "client_host": hb.client_host}
    if hb.rack_id is not None:
        changes["rack_id"] = hb.rack_id
    if hb.subscribed_topic_names is not None:
        changes["subscribed_topic_names"] = tuple(sorted(set(hb.subscribed_topic_names)))
    return member.with_changes(**changes)


def _reconcile(member: ShareGroupMember, group: ShareGroup) -> ShareGroupMember:
    """Straight to the target: nothing to revoke first (Kafka
    `ShareGroupAssignmentBuilder`, SHARE-43)."""
    epoch = group.target_assignment_epoch
    target = group.target_assignment.get(member.member_id, {})
    if member.member_epoch == epoch and member.assigned == target:
        return member
    assert epoch >= member.member_epoch, "a member epoch never goes back (SHARE-43)"
    return member.with_changes(
        member_epoch=epoch, previous_member_epoch=member.member_epoch, assigned=target
    )


def run_now(coroutine: Coroutine[Any, Any, Any]) -> None:
    """A `Spawn` without an event loop: runs a persister call that never waits (the
    `NoOpPersister`'s) to its end at once; one that would wait is a mistake here."""
    try:
        coroutine.send(None)
    except StopIteration:
        return
    coroutine.close()
    raise RuntimeError("a persister call waited: run the coordinator with an event loop's spawn")


# == the admin's side (KIP-932's DescribeShareGroupOffsets, AlterShareGroupOffsets,
# DeleteShareGroupOffsets), as Kafka's `GroupCoordinatorService` does them ==============
Pair = tuple[uuid.UUID, int]
AdminCallback = Callable[[ErrorCode, "str | None", dict], None]
# The partitions' end offsets for the lag: {(topic id, partition): (offset, error)}, the
# answers of ListOffsets LATEST, read_uncommitted, from each partition's leader (Kafka
# `PartitionMetadataClient.listLatestOffsets`)
EndOffsets = Callable[[list[Pair]], Awaitable[dict[Pair, tuple[int, ErrorCode]]]]
# Kafka's `Errors.message()` of the errors an end offset can fail with
END_OFFSET_MESSAGES = {
    ErrorCode.LEADER_NOT_AVAILABLE: (
        "There is no leader for this topic-partition as we are in the middle of a "
        "leadership election."
    ),
    ErrorCode.NETWORK_EXCEPTION: "The server disconnected before a response was received.",
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: "This server does not host this topic-partition.",
}


@dataclass(frozen=True)
class SharePartitionOffsets:
    """One share-partition in DescribeShareGroupOffsets' answer: its start offset and
    leader epoch as the share coordinator keeps them, and its lag (-1: unknown)."""

    start_offset: int = -1
    leader_epoch: int = -1
    lag: int = -1
    error: ErrorCode = OK
    error_message: str | None = None


def lag_known(summary: ShareStateSummary) -> bool:
    """Can the lag be told (Kafka `shouldComputeSharePartitionLag`)? A summary without an
    error, with a start offset and a delivery complete count (-1: never written)."""
    return (
        summary.error == OK and summary.start_offset != -1 and summary.delivery_complete_count != -1
    )


def share_partition_lag(summary: ShareStateSummary, end_offset: int) -> int:
    """KIP-1226's lag: the records below the partition's end offset (its high watermark)
    whose delivery is not complete, that is the end offset minus the start offset minus
    the done records at or above it (SHARE-51). Kafka does not bound it at 0."""
    assert lag_known(summary), summary
    return end_offset - summary.start_offset - summary.delivery_complete_count


class ShareGroupAdmin:
    """Where a share group is in its partitions, read and changed through the persister.

    A share group's position in a partition is its share-partition's start offset (SPSO),
    which the share coordinator keeps: describing reads it (ReadShareGroupStateSummary),
    altering starts the share-partitions again at new offsets (InitializeShareGroupState
    with a new state epoch), deleting removes their state (DeleteShareGroupState). Altering
    and deleting need an empty group, as a running member would race them (SHARE-49)."""

    def __init__(self, coordinator: ShareGroupCoordinator) -> None:
        self.coordinator = coordinator
        # where the lag's end offsets come from; None (no broker): every lag is -1
        self.end_offsets: EndOffsets | None = None

    def _group(self, group_id: str, *, create: bool = False) -> tuple[ErrorCode, str | None, Any]:
        c = self.coordinator
        error = c._group_status(group_id)
        if error != OK:
            return error, None, None
        group = c.manager.get_group(group_id)
        if group is not None and group.is_(DEAD):
            group = None
        if group is None and create:
            return OK, None, c.manager.add_group(ShareGroup(group_id, c._now()))
        if group is None:
            return ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} not found.", None
        if not isinstance(group, ShareGroup):
            return ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a share group.", None
        return OK, None, group

    def describe_offsets(
        self, group_id: str, wanted: list[Pair] | None, callback: AdminCallback
    ) -> None:
        """`callback(error, message, {(topic id, partition): SharePartitionOffsets})`: every
        initialized share-partition when `wanted` is None; one never initialized has start
        offset -1. The lag of each share-partition whose summary has a start offset and a
        delivery complete count is its end offset minus both (SHARE-51), -1 otherwise; an
        end offset that cannot be read is the partition's error, as in Kafka's
        `computeShareGroupLagAndBuildResponse`."""
        error, message, group = self._group(group_id)
        if error != OK:
            return callback(error, message, {})
        initialized = state_pairs(group.initialized)
        pairs = sorted(initialized) if wanted is None else wanted
        persister = self.coordinator.persister()

        async def read_all() -> None:
            summaries = {}
            for topic_id, p in pairs:
                if (topic_id, p) in initialized:
                    key = SharePartitionKey(group_id, topic_id, p)
                    summaries[(topic_id, p)] = await persister.read_summary(key, 0)
                else:
                    summaries[(topic_id, p)] = ShareStateSummary()
            lagging = [pair for pair, summary in summaries.items() if lag_known(summary)]
            ends = await self.end_offsets(lagging) if lagging and self.end_offsets else {}
            callback(OK, None, {pair: _offsets(s, ends.get(pair)) for pair, s in summaries.items()})

        self.coordinator._spawn(read_all())

    def alter_offsets(
        self, group_id: str, offsets: dict[tuple[uuid.UUID, str, int], int], callback: AdminCallback
    ) -> None:
        """Start the share-partitions (topic id, topic name, partition) at the given offsets;
        `callback(error, message, {(topic id, partition): error})`. An unknown group is
        created empty, a group with members refused (NON_EMPTY_GROUP)."""
        error, message, group = self._group(group_id, create=True)
        if error == OK and group.members:
            error, message = ErrorCode.NON_EMPTY_GROUP, f"Group {group_id} is not empty."
        if error != OK:
            return callback(error, message, {})
        c = self.coordinator
        group.group_epoch += 1  # the new state epoch: older writes are fenced
        for (topic_id, name, p), _ in sorted(offsets.items()):
            remove_partitions(group.initialized, topic_id, [p])
            add_partitions(group.initializing, topic_id, name, [p])
        records = [rec.group_epoch_record(group), rec.state_partition_metadata_record(group)]
        persister, state_epoch = c.persister(), group.group_epoch

        async def initialize_all() -> None:
            errors = {}
            for (topic_id, _, p), start in sorted(offsets.items()):
                key = SharePartitionKey(group_id, topic_id, p)
                errors[key] = await persister.initialize(key, state_epoch, start)
            c._initialized(group, errors)
            callback(OK, None, {(k.topic_id, k.partition): e for k, e in errors.items()})

        def written(error: ErrorCode) -> None:
            if error != OK:
                return callback(error, None, {})
            c._spawn(initialize_all())

        c.manager.append_records(group_id, records, written)

    def delete_offsets(
        self, group_id: str, topics: dict[uuid.UUID, str], callback: AdminCallback
    ) -> None:
        """Delete the share-partitions' state of these topics (id -> name);
        `callback(error, message, {topic id: error})`. The group must be empty."""
        error, message, group = self._group(group_id)
        if error == OK and group.members:
            error, message = ErrorCode.NON_EMPTY_GROUP, f"Group {group_id} is not empty."
        if error != OK:
            return callback(error, message, {})
        c = self.coordinator
        doomed = {
            t: sorted(p for topic_id, p in group.state_partitions() if topic_id == t)
            for t in topics
        }
        for topic_id, name in topics.items():
            if doomed[topic_id]:
                group.deleting[topic_id] = name
        persister = c.persister()

        async def delete_all() -> None:
            results = {}
            for topic_id, parts in doomed.items():
                errors = [
                    await persister.delete_state(SharePartitionKey(group_id, topic_id, p))
                    for p in parts
                ]
                results[topic_id] = next((e for e in errors if e != OK), OK)
                if results[topic_id] == OK:
                    group.initialized.pop(topic_id, None)
                    group.initializing.pop(topic_id, None)
                group.deleting.pop(topic_id, None)
            c.manager.append_records(
                group_id, [rec.state_partition_metadata_record(group)], lambda error: None
            )
            callback(OK, None, results)

        def written(error: ErrorCode) -> None:
            if error != OK:
                return callback(error, None, {})
            c._spawn(delete_all())

        c.manager.append_records(group_id, [rec.state_partition_metadata_record(group)], written)


def _offsets(
    summary: ShareStateSummary, end: tuple[int, ErrorCode] | None
) -> SharePartitionOffsets:
    """A share-partition's answer from its summary and its end offset (None: not read)."""
    if not lag_known(summary) or end is None:
        return SharePartitionOffsets(
            summary.start_offset, summary.leader_epoch, -1, summary.error, summary.error_message
        )
    end_offset, error = end
    if error != OK:  # Kafka answers the partition's error alone: start offset 0, epoch 0
        return SharePartitionOffsets(0, 0, -1, error, END_OFFSET_MESSAGES.get(error))
    return SharePartitionOffsets(
        summary.start_offset, summary.leader_epoch, share_partition_lag(summary, end_offset)
    )
