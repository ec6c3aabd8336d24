"""Offsets committed inside a transaction: written at once, visible only at the commit marker.

A consume-transform-produce application commits its consumer group's offsets *in* its
transaction (KIP-98, `sendOffsetsToTransaction`): TxnOffsetCommit reaches the group
coordinator with the producer's id and epoch. The coordinator writes the offset records to
`__consumer_offsets` at once, as a *transactional batch of that producer*, so they sit in
the partition's log like the producer's data sits in its output partitions. Until the
transaction coordinator's marker reaches that `__consumer_offsets` partition, the offsets
are *pending*: OffsetFetch answers the previous committed offset (TXN-16). The COMMIT
marker makes them the group's committed offsets; the ABORT marker drops them (Kafka:
`GroupMetadata.prepareTxnOffsetCommit`, `completePendingTxnOffsetCommit`,
`GroupCoordinator.scheduleHandleTxnCompletion`).

Loading a partition (kafka_ref/server/group_adapter.py, `read_records`) replays the same
rule: transactional offset records count from their commit marker, never when aborted,
and those of transactions still open come back as pending. A plain commit of the same
partition written after the transactional one wins, as in Kafka (the higher offset wins).

Rules: TXN-16.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

from kafka_ref.clock import Clock
from kafka_ref.common import TopicPartition
from kafka_ref.errors import ErrorCode
from kafka_ref.group import offsets_records as rec
from kafka_ref.group.group_metadata import EMPTY, GroupMetadata, OffsetAndMetadata
from kafka_ref.group.group_metadata_manager import Append, GroupMetadataManager, _store_error
from kafka_ref.record.batch import build_batch
from kafka_ref.record.record import Record

logger = logging.getLogger("kafka_ref.group.txn_offsets")

CommitCallback = Callable[[dict[TopicPartition, ErrorCode]], None]
Pending = dict[int, dict[str, dict[TopicPartition, OffsetAndMetadata]]]  # pid -> group -> tp


class TxnOffsetStore:
    """The pending transactional offsets of the groups this coordinator owns."""

    def __init__(self, manager: GroupMetadataManager, clock: Clock, append: Append) -> None:
        self.manager, self.clock, self._append = manager, clock, append
        self.pending: Pending = {}

    def commit(
        self,
        group_id: str,
        producer_id: int,
        producer_epoch: int,
        offsets: dict[TopicPartition, OffsetAndMetadata],
        callback: CommitCallback,
    ) -> None:
        """Write the offsets as the producer's transactional batch; pending once durable."""
        now = self.clock.milliseconds()
        group = self.manager.get_group(group_id)
        if group is None:
            group = self.manager.add_group(GroupMetadata(group_id, EMPTY, now))
        records = [
            Record(rec.offset_commit_key(group_id, tp), rec.offset_commit_value(om), now)
            for tp, om in offsets.items()
        ]
        batch = build_batch(
            records,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            is_transactional=True,
        )

        def done(error: ErrorCode) -> None:
            if error == ErrorCode.NO_ERROR:
                self.pending.setdefault(producer_id, {}).setdefault(group_id, {}).update(offsets)
            code = _store_error(error, for_offsets=True)
            callback(dict.fromkeys(offsets, code))

        self._append(self.manager.partition_for(group_id), batch, done)

    def complete(self, partition: int, producer_id: int, commit: bool) -> None:
        """The marker of `producer_id` reached offsets partition `partition` (TXN-16)."""
        groups = self.pending.get(producer_id, {})
        for group_id in [g for g in groups if self.manager.partition_for(g) == partition]:
            offsets = groups.pop(group_id)
            group = self.manager.get_group(group_id)
            if commit and group is not None:
                group.offsets.update(offsets)
            logger.debug(
                "%s offsets of producer %d for group %s: %s",
                "committed" if commit else "aborted",
                producer_id,
                group_id,
                sorted(offsets),
            )
        if not groups:
            self.pending.pop(producer_id, None)

    def restore(self, pending: dict[int, list[tuple[bytes, bytes | None]]]) -> None:
        """Take back the offsets of transactions still open in a loaded partition."""
        for producer_id, records in pending.items():
            for key, value in records:
                k = rec.read_key(key)
                if isinstance(k, rec.OffsetKey) and value is not None:
                    om = rec.read_offset_commit_value(value)
                    by_group = self.pending.setdefault(producer_id, {})
                    by_group.setdefault(k.group, {})[k.topic_partition] = om

    def remove(self, group_id: str, partitions: Iterable[TopicPartition]) -> None:
        """Tombstones for these offsets were written: open transactions drop them too, so
        their commit markers do not bring them back (Kafka: `replay` of an OffsetCommit
        tombstone, OFFSET-15)."""
        gone = set(partitions)
        for groups in self.pending.values():
            offsets = groups.get(group_id, {})
            for tp in gone & offsets.keys():
                del offsets[tp]

    def forget_partition(self, partition: int) -> None:
        for groups in self.pending.values():
            for group_id in [g for g in groups if self.manager.partition_for(g) == partition]:
                del groups[group_id]

    def pending_partitions(self, group_id: str) -> Iterable[TopicPartition]:
        for groups in self.pending.values():
            yield from groups.get(group_id, {})
