"""The group metadata manager: the coordinator's groups, kept durable in `__consumer_offsets`.

Kafka gives each group a home: partition `abs(groupId.hashCode) % offsets.topic.num.partitions`
of the internal topic `__consumer_offsets` (REBAL-16). The broker that leads that partition
is the group's coordinator, and everything the group must not forget goes into that
partition as records (offsets_records.py):

* a **commit** appends one OffsetCommit record per partition; the offset becomes visible to
  OffsetFetch only once the append succeeded (Kafka keeps it as a *pending* commit until
  then), so a fetch never returns an offset that a coordinator failover would lose (OFFSET-2);
* a **completed rebalance** appends the group's GroupMetadata record: generation, protocol,
  leader and every member with its subscription and assignment;
* **deleting** a group or some of its offsets, or **expiring** offsets, appends tombstones
  (OFFSET-5, OFFSET-7, OFFSET-15).

When a broker becomes leader of an offsets partition it *loads* it: replays every record in
offset order into groups and offsets (OFFSET-4); when it stops leading, it *unloads* the
groups. While a partition loads, its groups answer COORDINATOR_LOAD_IN_PROGRESS.

Kafka: `GroupMetadataManager` (`storeGroup`, `storeOffsets`, `getOffsets`,
`loadGroupsAndOffsets`, `removeGroupsForPartition`, `cleanupGroupMetadata`).

Rules: REBAL-16, OFFSET-2, OFFSET-4, OFFSET-5, OFFSET-7, OFFSET-15.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

from kafka_ref.clock import Clock
from kafka_ref.common import OffsetAndMetadata, TopicPartition
from kafka_ref.errors import ErrorCode
from kafka_ref.group import consumer_group_records
from kafka_ref.group import offsets_records as rec
from kafka_ref.group.consumer_group import ConsumerGroup
from kafka_ref.group.group_metadata import DEAD, EMPTY, REMOVE_GROUP, GroupMetadata
from kafka_ref.record.batch import build_batch
from kafka_ref.record.record import Record
from kafka_ref.share import share_group_records
from kafka_ref.share.share_group import ShareGroup

logger = logging.getLogger("kafka_ref.group.group_metadata_manager")

AppendCallback = Callable[[ErrorCode], None]
Append = Callable[[int, bytes, AppendCallback], None]
"""append(partition, v2 batch, on_done): the broker appends to __consumer_offsets-<partition>
and calls on_done(error) once the batch is durable (acks=all)."""

Records = Iterable[tuple[bytes | None, bytes | None]]
"""(key, value) of every record of a partition in offset order; value None = tombstone."""

GROUP_METADATA_TOPIC = "__consumer_offsets"


def java_string_hashcode(s: str) -> int:
    """Java's `String.hashCode`: s[0]*31^(n-1) + ... over UTF-16 code units, as an int32."""
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def java_abs(n: int) -> int:
    """Kafka's `Utils.abs` of an int32: `Math.abs`, except that Integer.MIN_VALUE (whose
    `Math.abs` stays negative) maps to 0. Not `n & 0x7fffffff` (`Utils.toPositive`, the
    producer's partitioner): the two differ for every other negative hash."""
    return 0 if n == -(1 << 31) else abs(n)


def partition_for(group_id: str, num_partitions: int) -> int:
    """Kafka `partitionFor`: `Utils.abs(groupId.hashCode) % partitions` (REBAL-16)."""
    return java_abs(java_string_hashcode(group_id)) % num_partitions


def _store_error(error: ErrorCode, *, for_offsets: bool) -> ErrorCode:
    """Kafka's translation of append errors into errors a group member understands."""
    if error in (
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.NOT_ENOUGH_REPLICAS,
        ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
    ):
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    if error in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.KAFKA_STORAGE_ERROR):
        return ErrorCode.NOT_COORDINATOR
    if error in (
        ErrorCode.MESSAGE_TOO_LARGE,
        ErrorCode.RECORD_LIST_TOO_LARGE,
        ErrorCode.INVALID_FETCH_SIZE,
    ):
        return (
            ErrorCode.INVALID_COMMIT_OFFSET_SIZE if for_offsets else ErrorCode.UNKNOWN_SERVER_ERROR
        )
    if error == ErrorCode.REQUEST_TIMED_OUT and not for_offsets:
        return ErrorCode.REBALANCE_IN_PROGRESS
    return error


class GroupMetadataManager:
    """The cache of groups of the offsets partitions this broker leads, and their records."""

    def __init__(self, num_partitions: int, clock: Clock, append: Append) -> None:
        self.num_partitions = num_partitions
        self.clock = clock
        self._append = append
        self.groups: dict[str, GroupMetadata] = {}
        self.owned_partitions: set[int] = set()
        self.loading_partitions: set[int] = set()
        self.offset_commits = 0  # offsets committed (Kafka's offset-commit-count, MET-5)

    # -- ownership ------------------------------------------------------------------
    def partition_for(self, group_id: str) -> int:
        return partition_for(group_id, self.num_partitions)

    def is_group_local(self, group_id: str) -> bool:
        return self.partition_for(group_id) in self.owned_partitions

    def is_group_loading(self, group_id: str) -> bool:
        return self.partition_for(group_id) in self.loading_partitions

    def is_loading(self) -> bool:
        return bool(self.loading_partitions)

    # -- the cache ------------------------------------------------------------------
    def get_group(self, group_id: str) -> GroupMetadata | None:
        return self.groups.get(group_id)

    def get_classic_group(self, group_id: str) -> GroupMetadata | None:
        """The group if it is a classic one: to SyncGroup, Heartbeat and LeaveGroup a
        consumer group (KIP-848) is a group without their member (UNKNOWN_MEMBER_ID)."""
        group = self.groups.get(group_id)
        return group if isinstance(group, GroupMetadata) else None

    def convert_to_classic(self, group: ConsumerGroup) -> GroupMetadata:
        """An empty consumer group becomes a classic one, keeping its offsets: its records
        get tombstones (Kafka `convertToClassicGroup`, CGRP-14)."""
        assert not group.members, f"{group} is not empty"
        tombstones = consumer_group_records.group_tombstones(group)
        self._write(group.group_id, tombstones, lambda error: None)
        classic = GroupMetadata(group.group_id, EMPTY, self.clock.milliseconds())
        classic.offsets = group.offsets
        classic.pending_offset_commits = group.pending_offset_commits
        group.transition(REMOVE_GROUP, self.clock.milliseconds())
        self.groups[group.group_id] = classic
        return classic

    def add_group(self, group: GroupMetadata) -> GroupMetadata:
        """Add `group` unless one with its id is there already; returns the cached one."""
        return self.groups.setdefault(group.group_id, group)

    def current_groups(self) -> list[GroupMetadata]:
        return list(self.groups.values())

    # -- writing --------------------------------------------------------------------
    def _write(
        self, group_id: str, records: list[tuple[bytes, bytes | None]], done: AppendCallback
    ) -> None:
        now = self.clock.milliseconds()
        batch = build_batch([Record(k, v, timestamp=now) for k, v in records])
        self._append(self.partition_for(group_id), batch, done)

    def append_records(
        self, group_id: str, records: list[tuple[bytes, bytes | None]], callback: AppendCallback
    ) -> None:
        """Append a consumer group's records (consumer_group_records.py); callback(error)
        when durable, at once when there is nothing to write."""
        if not records:
            return callback(ErrorCode.NO_ERROR)
        self._write(
            group_id, records, lambda error: callback(_store_error(error, for_offsets=False))
        )

    def store_group(
        self, group: GroupMetadata, assignment: dict[str, bytes], callback: AppendCallback
    ) -> None:
        """Append the group's GroupMetadata record; callback(error) when durable."""
        key = rec.group_metadata_key(group.group_id)
        value = rec.group_metadata_value(group, assignment)
        self._write(
            group.group_id,
            [(key, value)],
            lambda error: callback(_store_error(error, for_offsets=False)),
        )

    def store_offsets(
        self,
        group: GroupMetadata,
        offsets: dict[TopicPartition, OffsetAndMetadata],
        callback: Callable[[dict[TopicPartition, ErrorCode]], None],
        max_metadata_bytes: int,
    ) -> None:
        """Append the commits; they enter `group.offsets` only when the append succeeds.

        Metadata longer than `offset.metadata.max.bytes` (counted like Java's
        `String.length`, in UTF-16 units) fails that partition alone."""

        def too_large(om: OffsetAndMetadata) -> bool:
            return len(om.metadata.encode("utf-16-le")) // 2 > max_metadata_bytes

        valid = {tp: om for tp, om in offsets.items() if not too_large(om)}
        errors = {tp: ErrorCode.OFFSET_METADATA_TOO_LARGE for tp in offsets if tp not in valid}
        if not valid:
            callback(errors)
            return
        for tp in valid:
            group.pending_offset_commits[tp] = group.pending_offset_commits.get(tp, 0) + 1
        records = [
            (rec.offset_commit_key(group.group_id, tp), rec.offset_commit_value(om))
            for tp, om in valid.items()
        ]

        def done(error: ErrorCode) -> None:
            for tp, om in valid.items():
                left = group.pending_offset_commits.get(tp, 1) - 1
                if left:
                    group.pending_offset_commits[tp] = left
                else:
                    group.pending_offset_commits.pop(tp, None)
                # a group deleted or unloaded meanwhile keeps nothing
                if error == ErrorCode.NO_ERROR and self.groups.get(group.group_id) is group:
                    group.offsets[tp] = om
                    self.offset_commits += 1
            code = _store_error(error, for_offsets=True)
            callback({**{tp: code for tp in valid}, **errors})

        self._write(group.group_id, records, done)

    def delete_offsets(
        self, group: GroupMetadata, partitions: list[TopicPartition], callback: AppendCallback
    ) -> None:
        """Append a tombstone for each of these offsets of the group; they leave
        `group.offsets` once the tombstones are durable (OffsetDelete, OFFSET-15). The group
        itself stays, Empty or not: the next expiration removes an Empty group left without
        offsets (OFFSET-6), as Kafka 4's periodic `cleanupGroupMetadata` does."""
        if not partitions:
            return callback(ErrorCode.NO_ERROR)
        tombstones: list[tuple[bytes, bytes | None]] = [
            (rec.offset_commit_key(group.group_id, tp), None) for tp in partitions
        ]

        def done(error: ErrorCode) -> None:
            if error == ErrorCode.NO_ERROR:
                for tp in partitions:
                    group.offsets.pop(tp, None)
            callback(_store_error(error, for_offsets=True))

        self._write(group.group_id, tombstones, done)

    def get_offsets(
        self, group_id: str, partitions: list[TopicPartition] | None
    ) -> dict[TopicPartition, OffsetAndMetadata | None]:
        """Committed offsets; a partition never committed maps to None (offset -1, OFFSET-1)."""
        group = self.groups.get(group_id)
        offsets = {} if group is None or group.is_(DEAD) else group.offsets
        if partitions is None:
            return dict(offsets)
        return {tp: offsets.get(tp) for tp in partitions}

    def cleanup_group_metadata(
        self,
        groups: Iterable[GroupMetadata],
        selector: Callable[[GroupMetadata], dict[TopicPartition, OffsetAndMetadata]],
    ) -> int:
        """Remove what `selector` picks from each group and write tombstones for it; a group
        left Empty without offsets becomes Dead and leaves the cache, with a tombstone for its
        GroupMetadata record unless it never had a generation (Kafka `cleanupGroupMetadata`).
        Returns how many offsets went."""
        removed_count = 0
        now = self.clock.milliseconds()
        for group in list(groups):
            removed = selector(group)
            if group.is_(EMPTY) and not group.offsets:
                group.transition(REMOVE_GROUP, now)
            tombstones: list[tuple[bytes, bytes | None]] = [
                (rec.offset_commit_key(group.group_id, tp), None) for tp in removed
            ]
            if group.is_(DEAD) and self.groups.get(group.group_id) is group:
                del self.groups[group.group_id]
                if isinstance(group, ConsumerGroup):  # its KIP-848 records (CGRP-13)
                    tombstones.extend(consumer_group_records.group_tombstones(group))
                elif isinstance(group, ShareGroup):  # its KIP-932 records (SHARE-45)
                    tombstones.extend(share_group_records.group_tombstones(group))
                # a generation 0 group only ever stored offsets: no group record to delete
                elif group.generation_id > 0:
                    tombstones.append((rec.group_metadata_key(group.group_id), None))
            if tombstones:
                # no waiting: a lost tombstone is written again by the next cleanup
                self._write(group.group_id, tombstones, lambda error: None)
                removed_count += len(removed)
        return removed_count

    # -- loading --------------------------------------------------------------------
    def begin_loading(self, partition: int) -> None:
        self.loading_partitions.add(partition)

    def load(self, partition: int, records: Records) -> list[GroupMetadata | ConsumerGroup]:
        """Replay `records` of an offsets partition into the cache (OFFSET-4).

        Groups come back Stable in their stored generation (Empty without members); offsets
        of a group without a stored GroupMetadata record get an Empty group of their own.
        Returns the loaded groups."""
        self.loading_partitions.add(partition)
        now = self.clock.milliseconds()
        try:
            folded = rec.fold(records, now)
        finally:
            self.loading_partitions.discard(partition)
        loaded: list[GroupMetadata | ConsumerGroup] = []
        for group_id in (
            folded.groups.keys()
            | folded.offsets.keys()
            | folded.consumer_groups.keys()
            | folded.share_groups.keys()
        ):
            if self.partition_for(group_id) != partition:
                logger.warning(
                    "group %r is in offsets partition %d, not its own", group_id, partition
                )
            group = (
                folded.groups.get(group_id)
                or folded.consumer_groups.get(group_id)
                or folded.share_groups.get(group_id)
                or GroupMetadata(group_id, EMPTY, now)
            )
            group.offsets = dict(folded.offsets.get(group_id, {}))
            if group.group_id in self.groups:
                continue  # Kafka keeps a group already cached
            self.groups[group_id] = group
            loaded.append(group)
        self.owned_partitions.add(partition)
        return loaded

    def unload(self, partition: int) -> list[GroupMetadata]:
        """Forget the groups of a partition this broker no longer leads; returns them."""
        self.owned_partitions.discard(partition)
        self.loading_partitions.discard(partition)
        gone = [g for g in self.groups.values() if self.partition_for(g.group_id) == partition]
        for group in gone:
            del self.groups[group.group_id]
        return gone
