"""The group coordinator: one object per broker for every group whose home it leads.

A consumer asks any broker FindCoordinator(group) and is sent to the leader of partition
`abs(hash(group)) % 50` of `__consumer_offsets` (REBAL-16): that broker's `GroupCoordinator`
runs the group's rebalances (its `GroupRebalance`, rebalance.py) and keeps its committed
offsets (Kafka: `GroupCoordinator`, `handleCommitOffsets`, `handleFetchOffsets`,
`handleDescribeGroup`, `handleListGroups`, `handleDeleteGroups`, `onElection`,
`onResignation`; Kafka 4's `GroupMetadataManager` and `OffsetMetadataManager` for the newer
versions' rules).

**Committed offsets.** A commit says "the group has processed this partition up to here".
Only a member of the group's current generation may commit, because after a rebalance its
partitions may belong to someone else (OFFSET-8); a commit with generation -1 and no member
id comes from outside group management (admin tools, consumers with `assign()`) and is
accepted only while the group has no members. A commit is durable when its record is in
`__consumer_offsets`: it survives a coordinator restart and compaction (OFFSET-4, OFFSET-5),
the metadata string comes back byte for byte (OFFSET-3), and a partition never committed
fetches as offset -1 (OFFSET-1). `offsets.retention.minutes` removes offsets of groups that
have been Empty that long (KIP-211, OFFSET-6).

**Lifecycle.** The broker calls `on_elected(partition, records)` when it becomes leader of an
offsets partition: the coordinator replays the records and re-arms the session timers of the
loaded members (members that do not come back expire). `on_resigned` drops the partition's
groups, answering waiting members NOT_COORDINATOR so they look for the new coordinator.
A group is deleted only when Empty (OFFSET-7). Offsets of topics no member subscribes to
can be deleted at any time (OffsetDelete, KIP-496, OFFSET-15).

**Versions.** Newer versions of OffsetCommit change little here: v6 carries the leader epoch
kept with the offset (OFFSET-10), v7 the static member's instance id, checked like the member
id (OFFSET-12), and from v9 a member of a group that does not exist hears GROUP_ID_NOT_FOUND
instead of ILLEGAL_GENERATION (OFFSET-11).

**Two kinds of group.** A group id is a classic group (`GroupMetadata`, whose rebalances
`self.rebalance` runs) or a KIP-848 consumer group (`ConsumerGroup`, whose heartbeats
`self.consumer` handles, consumer_group_coordinator.py); both live in the manager's one cache
and keep their offsets alike. A consumer group checks commits and fetches by member epoch
(CGRP-12), is listed with its type and described by ConsumerGroupDescribe (CGRP-16).

Rules: REBAL-16, OFFSET-1..OFFSET-15 (spec/rebalance.md, spec/offsets.md); rebalance.py has
REBAL-1..REBAL-13; CGRP-12, CGRP-14, CGRP-16 (spec/consumer_group.md).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass

from kafka_ref.clock import Clock, Scheduler
from kafka_ref.common import OffsetAndMetadata, TopicPartition
from kafka_ref.errors import ErrorCode
from kafka_ref.group.consumer_group import ConsumerGroup
from kafka_ref.group.consumer_group_coordinator import ConsumerGroupCoordinator
from kafka_ref.group.group_metadata import (
    COMPLETING_REBALANCE,
    DEAD,
    EMPTY,
    PREPARING_REBALANCE,
    REMOVE_GROUP,
    STABLE,
    GroupMetadata,
)
from kafka_ref.group.group_metadata_manager import (
    Append,
    AppendCallback,
    GroupMetadataManager,
    Records,
)
from kafka_ref.group.messages import JoinedMember, JoinGroupResult, SyncGroupResult
from kafka_ref.group.rebalance import OK, GroupConfig, GroupRebalance
from kafka_ref.group.txn_offsets import TxnOffsetStore
from kafka_ref.share.persister import NoOpPersister, Persister
from kafka_ref.share.share_group import ShareGroup
from kafka_ref.share.share_group_coordinator import (
    ShareGroupAdmin,
    ShareGroupCoordinator,
    Spawn,
    run_now,
)

__all__ = [
    "Append",
    "AppendCallback",
    "GroupConfig",
    "GroupCoordinator",
    "GroupOverview",
    "GroupSummary",
    "JoinGroupResult",
    "JoinedMember",
    "MemberSummary",
    "Records",
    "SyncGroupResult",
]

CommitCallback = Callable[[dict[TopicPartition, ErrorCode]], None]
OFFSET_COMMIT_GROUP_ID_NOT_FOUND_VERSION = 9  # the KIP-848 OffsetCommit (OFFSET-11)
CLASSIC_GROUP_TYPE = "classic"  # Kafka `Group.GroupType.CLASSIC`; ConsumerGroup's is "consumer"


@dataclass
class MemberSummary:
    """A member as DescribeGroups returns it, metadata and assignment as raw bytes (Kafka's
    GroupCoordinator `MemberSummary`); the admin client decodes them (admin_groups.py)."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes
    assignment: bytes


@dataclass
class GroupSummary:
    """A group as DescribeGroups returns it (Kafka's GroupCoordinator `GroupSummary`)."""

    group_id: str
    state: str  # Kafka's wire name: "Stable", "Empty", ... "Dead" for an unknown group
    protocol_type: str
    protocol_name: str
    members: list[MemberSummary]
    group_type: str = CLASSIC_GROUP_TYPE  # "consumer": a KIP-848 group, not described here


@dataclass
class GroupOverview:
    """A group as ListGroups returns it (Kafka's `ListedGroup`)."""

    group_id: str
    protocol_type: str
    state: str
    group_type: str = CLASSIC_GROUP_TYPE


class GroupCoordinator:
    """The broker's group coordinator: its groups' rebalances (`self.rebalance`), their
    committed offsets, the admin APIs and the partitions it loads and unloads."""

    def __init__(
        self,
        config: GroupConfig,
        clock: Clock,
        schedule: Scheduler,
        append: Append,
        *,
        new_uuid: Callable[[], str] | None = None,
        share_persister: Callable[[], Persister] | None = None,
        spawn: Spawn = run_now,
    ) -> None:
        self.config, self.clock = config, clock
        self.manager = manager = GroupMetadataManager(
            config.offsets_topic_num_partitions, clock, append
        )
        self.rebalance = GroupRebalance(config, clock, schedule, manager, new_uuid)
        self.consumer = ConsumerGroupCoordinator(  # KIP-848's groups
            config,
            clock,
            schedule,
            manager,
            self.rebalance.group_status,
            new_uuid or (lambda: str(uuid.uuid4())),
        )
        noop = NoOpPersister()
        self.share = ShareGroupCoordinator(  # KIP-932's groups
            config,
            clock,
            schedule,
            manager,
            self.rebalance.group_status,
            share_persister or (lambda: noop),
            spawn,
        )
        self.share_admin = ShareGroupAdmin(self.share)  # their offsets (SHARE-49)
        self.txn_offsets = TxnOffsetStore(manager, clock, append)  # TXN-16

    def _now(self) -> int:
        return self.clock.milliseconds()

    def partition_for(self, group_id: str) -> int:
        """The `__consumer_offsets` partition that is the group's home (REBAL-16)."""
        return self.manager.partition_for(group_id)

    # -- offsets --------------------------------------------------------------------
    def commit_offsets(
        self,
        group_id: str,
        member_id: str,
        group_instance_id: str | None,
        generation_id: int,
        offsets: dict[TopicPartition, OffsetAndMetadata],
        callback: CommitCallback,
        api_version: int = 2,
    ) -> None:
        """Store offsets; `callback({partition: error})` once they are durable or refused.

        The coordinator stamps `commit_timestamp` with its clock (OffsetCommit v2+ carries no
        timestamp); `expire_timestamp` is kept as given (set it from a v2-v4 retention time).
        `api_version` is the OffsetCommit version: from v9 a member of a group that does not
        exist hears GROUP_ID_NOT_FOUND (OFFSET-11)."""

        def refuse(error: ErrorCode) -> None:
            callback(dict.fromkeys(offsets, error))

        error = self.rebalance.group_status(group_id, allow_empty_id=True)
        if error != OK:
            return refuse(error)
        group = self.manager.get_group(group_id)
        if group is None:
            if generation_id >= 0:  # a member of a group that no longer exists (OFFSET-11)
                # Kafka `OffsetMetadataManager.validateOffsetCommit`: v9 answers what the
                # KIP-848 consumer understands; older versions keep ILLEGAL_GENERATION.
                return refuse(
                    ErrorCode.GROUP_ID_NOT_FOUND
                    if api_version >= OFFSET_COMMIT_GROUP_ID_NOT_FOUND_VERSION
                    else ErrorCode.ILLEGAL_GENERATION
                )
            group = self.manager.add_group(GroupMetadata(group_id, EMPTY, self._now()))
        if isinstance(group, ShareGroup):  # it commits no offsets (SHARE-47)
            return refuse(ErrorCode.GROUP_ID_NOT_FOUND)
        if isinstance(group, ConsumerGroup):
            error = _validate_consumer_commit(group, member_id, generation_id, api_version)
        else:
            error = self._validate_offset_commit(group, generation_id, member_id, group_instance_id)
        if error != OK:
            return refuse(error)
        if isinstance(group, GroupMetadata):  # (a commit is no heartbeat under KIP-848)
            if group.is_(COMPLETING_REBALANCE):
                # a valid member that has not got its assignment yet: it should not commit
                return refuse(ErrorCode.REBALANCE_IN_PROGRESS)
            if group.is_(STABLE) or group.is_(PREPARING_REBALANCE):
                # during PreparingRebalance commits are still allowed: the heartbeat answer
                # tells the member to rejoin. A commit is a sign of life (a heartbeat).
                self.rebalance.start_session_timer(group, group.get(member_id))
        now = self._now()
        stamped = {tp: om._replace(commit_timestamp=now) for tp, om in offsets.items()}
        self.manager.store_offsets(group, stamped, callback, self.config.offset_metadata_max_bytes)

    def commit_txn_offsets(
        self,
        group_id: str,
        producer_id: int,
        producer_epoch: int,
        offsets: dict[TopicPartition, OffsetAndMetadata],
        callback: CommitCallback,
        member: tuple[str, str | None, int] = ("", None, -1),
    ) -> None:
        """TxnOffsetCommit: pending until the transaction's marker (txn_offsets.py).

        `member` is (member id, group instance id, generation) from v3 (KIP-447): a
        producer whose consumer was fenced out of the group is refused like a stale
        OffsetCommit (TXN-83); older versions send ("", None, -1) and are not checked."""
        error = self.rebalance.group_status(group_id, allow_empty_id=True)
        if error == OK:
            group = self.manager.get_group(group_id)
            if group is None:
                group = self.manager.add_group(GroupMetadata(group_id, EMPTY, self._now()))
            member_id, instance_id, generation_id = member
            if isinstance(group, ShareGroup):  # (SHARE-47)
                error = ErrorCode.GROUP_ID_NOT_FOUND
            elif isinstance(group, ConsumerGroup):
                error = _validate_consumer_commit(
                    group, member_id, generation_id, transactional=True
                )
            else:
                error = self._validate_offset_commit(
                    group, generation_id, member_id, instance_id, transactional=True
                )
        if error != OK:
            return callback(dict.fromkeys(offsets, error))
        now = self._now()
        stamped = {tp: om._replace(commit_timestamp=now) for tp, om in offsets.items()}
        self.txn_offsets.commit(group_id, producer_id, producer_epoch, stamped, callback)

    def complete_txn_offsets(self, partition: int, producer_id: int, commit: bool) -> None:
        """A transaction marker reached `__consumer_offsets-<partition>` (TXN-16)."""
        self.txn_offsets.complete(partition, producer_id, commit)

    def _validate_offset_commit(
        self, group, generation_id, member_id, instance_id, *, transactional: bool = False
    ) -> ErrorCode:
        """Kafka `ClassicGroup.validateOffsetCommit` (OFFSET-8, OFFSET-12, TXN-83)."""
        if group.is_(DEAD):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if generation_id < 0 and group.is_(EMPTY):
            return OK  # from outside group management (admin tools, `assign()`): allowed
        if generation_id >= 0 or member_id or instance_id is not None:
            if instance_id is not None:
                current = group.current_static_member_id(instance_id)
                if current is None:
                    return ErrorCode.UNKNOWN_MEMBER_ID
                if current != member_id:
                    return ErrorCode.FENCED_INSTANCE_ID
            elif not group.has(member_id):
                return ErrorCode.UNKNOWN_MEMBER_ID
            if generation_id != group.generation_id:
                return ErrorCode.ILLEGAL_GENERATION
            return OK
        if not transactional and not group.is_(EMPTY):  # from outside a group with members
            return ErrorCode.UNKNOWN_MEMBER_ID  # (TxnOffsetCommit v0-v2 name no member)
        return OK

    def fetch_offsets(
        self,
        group_id: str,
        partitions: list[TopicPartition] | None,
        member: tuple[str | None, int] = (None, -1),
    ) -> tuple[ErrorCode, dict[TopicPartition, OffsetAndMetadata | None]]:
        """Committed offsets whatever the group's state; None = never committed (-1).

        `member` is OffsetFetch v9's (member id, member epoch): a consumer group checks them
        (Kafka `ConsumerGroup.validateOffsetFetch`, CGRP-12); a classic group does not."""
        error = self.rebalance.group_status(group_id, allow_empty_id=True)
        if error != OK:
            return error, {}
        group = self.manager.get_group(group_id)
        if isinstance(group, ShareGroup):  # (SHARE-47)
            return ErrorCode.GROUP_ID_NOT_FOUND, {}
        member_id, member_epoch = member
        if isinstance(group, ConsumerGroup) and not (member_id is None and member_epoch < 0):
            known = group.members.get(member_id or "")
            if known is None:
                return ErrorCode.UNKNOWN_MEMBER_ID, {}
            if member_epoch != known.member_epoch:
                return ErrorCode.STALE_MEMBER_EPOCH, {}
        return OK, self.manager.get_offsets(group_id, partitions)

    def unstable_offsets(self, group_id: str) -> set[TopicPartition]:
        """The group's partitions with a transactional commit not yet decided: OffsetFetch
        with `require_stable` answers UNSTABLE_OFFSET_COMMIT for them (KIP-447, TXN-84)."""
        return set(self.txn_offsets.pending_partitions(group_id))

    def run_offset_expiration(self) -> int:
        """Expire offsets past `offsets.retention.minutes` and drop groups left with nothing
        (Kafka `cleanupGroupMetadata`, every offsets.retention.check.interval.ms). Returns how
        many offsets went."""
        now = self._now()
        retention_ms = self.config.offsets_retention_minutes * 60_000
        groups = [  # a share group's place is its share-partitions': it does not expire
            g for g in self.manager.current_groups() if not isinstance(g, ShareGroup)
        ]
        return self.manager.cleanup_group_metadata(
            groups, lambda g: g.remove_expired_offsets(now, retention_ms)
        )

    # -- admin ----------------------------------------------------------------------
    def describe_group(self, group_id: str) -> tuple[ErrorCode, GroupSummary]:
        error = self.rebalance.group_status(group_id, allow_empty_id=True)
        group = self.manager.get_group(group_id) if error == OK else None
        if isinstance(group, (ConsumerGroup, ShareGroup)):  # their own Describe (CGRP-16)
            return error, GroupSummary(
                group_id, DEAD.wire_name, "", "", [], group_type=group.group_type
            )
        if group is None:
            return error, GroupSummary(group_id, DEAD.wire_name, "", "", [])
        stable = group.is_(STABLE) and group.protocol_name is not None
        members = [
            MemberSummary(
                m.member_id,
                m.group_instance_id,
                m.client_id,
                m.client_host,
                m.metadata(group.protocol_name or "") if stable else b"",
                m.assignment if stable else b"",
            )
            for m in group.members.values()
        ]
        protocol = group.protocol_name if stable else ""
        return OK, GroupSummary(
            group_id, group.state.wire_name, group.protocol_type or "", protocol or "", members
        )

    def delete_offsets(
        self,
        group_id: str,
        partitions: list[TopicPartition],
        callback: Callable[[ErrorCode, dict[TopicPartition, ErrorCode]], None],
    ) -> None:
        """OffsetDelete (Kafka `OffsetMetadataManager.deleteOffsets`, OFFSET-15): tombstones
        for the group's offsets of partitions no member subscribes to; `callback(error,
        {partition: error})` once they are durable. A partition of a topic a member
        subscribes to is GROUP_SUBSCRIBED_TO_TOPIC and keeps its offset."""
        error = self.rebalance.group_status(group_id)
        group = self.manager.get_group(group_id) if error == OK else None
        if error == OK:
            error = self._validate_offset_delete(group)
        if error != OK:
            return callback(error, {})
        assert group is not None
        pending = set(self.txn_offsets.pending_partitions(group_id))
        results: dict[TopicPartition, ErrorCode] = {}
        doomed: list[TopicPartition] = []
        for tp in partitions:
            if group.is_subscribed_to_topic(tp.topic):
                results[tp] = ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC
                continue
            results[tp] = OK
            # a tombstone where there is something to delete: committed or still pending
            if tp in group.offsets or tp in pending:
                doomed.append(tp)
        self.txn_offsets.remove(group_id, doomed)

        def deleted(error: ErrorCode) -> None:
            callback(error, results if error == OK else {})

        self.manager.delete_offsets(group, list(dict.fromkeys(doomed)), deleted)

    @staticmethod
    def _validate_offset_delete(group: GroupMetadata | None) -> ErrorCode:
        """Kafka `ClassicGroup.validateOffsetDelete`: an unknown or Dead group is
        GROUP_ID_NOT_FOUND; one with members that are not consumers NON_EMPTY_GROUP (what
        they read cannot be told)."""
        if group is None or group.is_(DEAD) or isinstance(group, ShareGroup):  # (SHARE-47)
            return ErrorCode.GROUP_ID_NOT_FOUND
        if not group.is_(EMPTY) and not group.uses_consumer_group_protocol():
            return ErrorCode.NON_EMPTY_GROUP
        return OK

    def list_groups(
        self, states_filter: list[str] = (), types_filter: list[str] = ()
    ) -> tuple[ErrorCode, list[GroupOverview]]:
        """The groups of the partitions this broker leads, Dead ones left out; with a states
        filter (ListGroups v4+) only groups in one of those states, with a types filter
        (v5+) only groups of one of those types, both compared ignoring case (Kafka
        `GroupMetadataManager.listGroups`, REBAL-24)."""
        if not self.rebalance.active:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, []
        error = ErrorCode.COORDINATOR_LOAD_IN_PROGRESS if self.manager.is_loading() else OK
        states = {state.strip().lower() for state in states_filter}
        types = {group_type.lower() for group_type in types_filter}
        overviews = [
            GroupOverview(g.group_id, g.protocol_type or "", g.state.wire_name, _type(g))
            for g in self.manager.current_groups()
            if not g.is_(DEAD)
            and (not states or g.state.wire_name.lower() in states)
            and (not types or _type(g) in types)
        ]
        return error, overviews

    def delete_groups(self, group_ids: list[str]) -> dict[str, ErrorCode]:
        """Delete Empty groups and their offsets, with tombstones (OFFSET-7)."""
        errors: dict[str, ErrorCode] = {}
        eligible = []
        for group_id in group_ids:
            error = self.rebalance.group_status(group_id, allow_empty_id=True)
            group = self.manager.get_group(group_id) if error == OK else None
            if error != OK:
                errors[group_id] = error
            elif group is None or group.is_(DEAD):
                errors[group_id] = ErrorCode.GROUP_ID_NOT_FOUND
            elif not group.is_(EMPTY):
                errors[group_id] = ErrorCode.NON_EMPTY_GROUP
            else:
                group.transition(REMOVE_GROUP, self._now())
                eligible.append(group)
                errors[group_id] = OK

        def remove_all(group: GroupMetadata) -> dict[TopicPartition, OffsetAndMetadata]:
            removed, group.offsets = group.offsets, {}
            return removed

        self.manager.cleanup_group_metadata(eligible, remove_all)
        for group in eligible:
            if isinstance(group, ConsumerGroup):
                self.consumer.cancel_group_timers(group)
            elif isinstance(group, ShareGroup):  # and its share-partitions' state (SHARE-48)
                self.share.cancel_group_timers(group)
                self.share.delete_state(group, lambda error: None)
            else:
                self.rebalance.cancel_group_timers(group)
        return errors

    # -- partition lifecycle ----------------------------------------------------------
    def on_elected(self, partition: int, records: Records) -> None:
        """This broker now leads `__consumer_offsets-<partition>`: load its groups."""
        for group in self.manager.load(partition, records):
            for member in list(group.members.values()):  # those that do not come back expire
                if isinstance(group, ConsumerGroup):
                    self.consumer.start_session_timer(group, member.member_id)
                elif isinstance(group, ShareGroup):
                    self.share.start_session_timer(group, member.member_id)
                else:
                    self.rebalance.start_session_timer(group, member)

    def on_resigned(self, partition: int) -> None:
        """Another broker leads the partition now: forget its groups."""
        for group in self.manager.unload(partition):
            if isinstance(group, ConsumerGroup):
                self.consumer.cancel_group_timers(group)
                group.transition(REMOVE_GROUP, self._now())
            elif isinstance(group, ShareGroup):
                self.share.cancel_group_timers(group)
                group.transition(REMOVE_GROUP, self._now())
            else:
                self.rebalance.unload_group(group)
        self.txn_offsets.forget_partition(partition)

    def begin_loading(self, partition: int) -> None:
        """Mark a partition as loading (for a broker that loads asynchronously)."""
        self.manager.begin_loading(partition)

    def is_loading(self, partition: int | None = None) -> bool:
        if partition is None:
            return self.manager.is_loading()
        return partition in self.manager.loading_partitions

    def owns(self, partition: int) -> bool:
        return partition in self.manager.owned_partitions

    def shutdown(self) -> None:
        self.rebalance.stop()
        self.consumer.stop()
        self.share.stop()
        for partition in list(self.manager.owned_partitions | self.manager.loading_partitions):
            self.on_resigned(partition)


def _type(group: GroupMetadata | ConsumerGroup | ShareGroup) -> str:
    """ListGroups v5's group type (Kafka `Group.GroupType`): classic, consumer or share."""
    return CLASSIC_GROUP_TYPE if isinstance(group, GroupMetadata) else group.group_type


def _validate_consumer_commit(
    group: ConsumerGroup,
    member_id: str,
    member_epoch: int,
    api_version: int = OFFSET_COMMIT_GROUP_ID_NOT_FOUND_VERSION,
    *,
    transactional: bool = False,
) -> ErrorCode:
    """Kafka `ConsumerGroup.validateOffsetCommit` (CGRP-12): from outside the group only
    while it has no members; a member with its current epoch, else STALE_MEMBER_EPOCH; a
    consumer-protocol member commits with OffsetCommit v9+."""
    if member_epoch < 0 and not group.members:
        return OK
    member = group.members.get(member_id)
    if member is None:
        return ErrorCode.UNKNOWN_MEMBER_ID
    if not transactional and api_version < OFFSET_COMMIT_GROUP_ID_NOT_FOUND_VERSION:
        return ErrorCode.UNSUPPORTED_VERSION
    if member_epoch != member.member_epoch:
        return ErrorCode.STALE_MEMBER_EPOCH
    return OK
