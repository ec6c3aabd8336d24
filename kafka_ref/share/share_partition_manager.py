"""The share-partition manager: a broker's share-partitions, their log and their persister.

The share-partition (`share_partition.py`) is a pure state machine. This is its broker glue
(Kafka: `kafka.server.share.SharePartitionManager`, `DelayedShareFetch`):

* it **owns** the share-partitions of the partitions this broker leads, one per (group,
  topic partition), and the broker's share sessions (`share_session.py`);
* it **loads** a share-partition from the `Persister` the first time a member uses it, and
  again whenever the partition's leader epoch changed since (the old leader's acquisitions
  are gone; only what was written survives). A state never started (SPSO -1) starts where
  `share.auto.offset.reset` says: the high watermark (latest, the default), the log start
  (earliest), or the first record at or after now - duration (`by_duration:PnDTnHnMn.nS`),
  and that start is written at once, so that the next leader starts there too;
* it **reads the log** for an acquisition, from the share-partition's next fetch offset up to
  the high watermark (read_committed: the LSO, the batches of aborted transactions archived),
  and keeps, of the batches read, those that overlap what was acquired;
* it **writes** the changed state batches after acknowledgements, releases and lock
  expiries, and answers a request only once that write is done (Kafka writes before it
  answers the acknowledgement);
* it **times** the acquisition locks: at a lock's deadline the records come back (or are
  archived), the state is written, and a waiting ShareFetch on that partition is woken;
* it **ends sessions** whose member left or whose connection closed (the socket server's
  disconnect listener): what they held comes back at once, as at a lock's deadline.

Rules: SHARE-16, SHARE-19 .. SHARE-22, SHARE-25.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from kafka_ref.clock import Clock, Scheduler, TimerHandle
from kafka_ref.errors import ErrorCode, KafkaError
from kafka_ref.record.batch import iter_batch_headers
from kafka_ref.share.persister import Persister, SharePartitionKey
from kafka_ref.share.share_partition import (
    AcquiredRecords,
    AcquireMode,
    FetchedBatch,
    SharePartition,
    SharePartitionConfig,
)
from kafka_ref.share.share_session import ShareSession, ShareSessionCache

logger = logging.getLogger("kafka_ref.share")

LATEST, EARLIEST, BY_DURATION = "latest", "earliest", "by_duration:"


@dataclass(frozen=True)
class GroupShareConfig:
    """A share group's own settings (the group configs of KIP-932)."""

    auto_offset_reset: str = LATEST  # share.auto.offset.reset
    read_committed: bool = False  # share.isolation.level=read_committed
    record_lock_duration_ms: int | None = None  # share.record.lock.duration.ms; None: broker's
    delivery_count_limit: int | None = None  # share.delivery.count.limit; None: broker's
    max_record_locks: int | None = None  # share.partition.max.record.locks; None: broker's


@dataclass
class _Entry:
    """A loaded share-partition, the topic it reads and its lock timer."""

    share_partition: SharePartition
    topic: str
    timer: TimerHandle | None = None


@dataclass(frozen=True)
class Acquisition:
    """What one partition gives a member: the batches read and the offsets it now holds."""

    records: bytes
    acquired: list[AcquiredRecords]


class SharePartitionManager:
    """The share-partitions of one broker (Kafka `SharePartitionManager`)."""

    def __init__(
        self,
        replica_manager: Any,
        persister: Persister,
        clock: Clock,
        schedule: Scheduler,
        config: SharePartitionConfig,
        max_sessions: int,
        group_config: Callable[[str], GroupShareConfig] = lambda group: GroupShareConfig(),
    ) -> None:
        self.replica_manager, self.persister, self.clock = replica_manager, persister, clock
        self.schedule, self.config, self.group_config = schedule, config, group_config
        self.sessions = ShareSessionCache(max_sessions)
        self.entries: dict[SharePartitionKey, _Entry] = {}
        self._loading: dict[SharePartitionKey, asyncio.Future] = {}
        self._tasks: set[asyncio.Task] = set()

    # -- loading --------------------------------------------------------------------------

    async def share_partition(self, key: SharePartitionKey, topic: str) -> SharePartition:
        """The loaded share-partition of `key`, read from the persister if this broker has
        none for the partition's current leader epoch. Raises the partition's KafkaError
        (NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION) or the persister's."""
        partition = self.replica_manager.get_partition(topic, key.partition, require_leader=True)
        entry = self.entries.get(key)
        if entry is not None and entry.share_partition.leader_epoch == partition.leader_epoch:
            return entry.share_partition
        pending = self._loading.get(key)
        if pending is not None:
            await asyncio.shield(pending)
            return await self.share_partition(key, topic)
        self._loading[key] = asyncio.get_running_loop().create_future()
        try:
            state = await self.persister.read_state(key, partition.leader_epoch)
            if state.error != ErrorCode.NO_ERROR:
                raise KafkaError(state.error_message or "", code=state.error)
            reset = self._reset_offset(partition, self.group_config(key.group_id))
            config = self.partition_config(key.group_id)
            sp = SharePartition.from_state(state, reset, config, self.clock)
            sp.leader_epoch = partition.leader_epoch
            self._drop(key)
            self.entries[key] = _Entry(sp, topic)
            if state.start_offset < 0:  # the reset start must outlive this leader
                error = await self.persist(key)
                if error != ErrorCode.NO_ERROR:
                    self._drop(key)
                    raise KafkaError(code=error)
            return sp
        finally:
            self._loading.pop(key).set_result(None)

    def partition_config(self, group_id: str) -> SharePartitionConfig:
        """The limits of the group's share-partitions: the broker's, with the group's
        `share.record.lock.duration.ms`, `share.delivery.count.limit` and
        `share.partition.max.record.locks` on top (read at every acquisition, so a changed
        group config holds from the next one; CONFIG-14)."""
        group = self.group_config(group_id)
        own = {
            "record_lock_duration_ms": group.record_lock_duration_ms,
            "delivery_count_limit": group.delivery_count_limit,
            "max_record_locks": group.max_record_locks,
        }
        return replace(self.config, **{k: v for k, v in own.items() if v is not None})

    def _reset_offset(self, partition: Any, group: GroupShareConfig) -> int:
        """Where a share-partition never started begins (`share.auto.offset.reset`)."""
        if group.auto_offset_reset == EARLIEST:
            return partition.log_start_offset
        if group.auto_offset_reset.startswith(BY_DURATION):
            duration = parse_duration_ms(group.auto_offset_reset.removeprefix(BY_DURATION))
            found = partition.log.offset_for_timestamp(self.clock.milliseconds() - duration)
            return found.offset if found is not None else partition.high_watermark
        return partition.high_watermark

    def _drop(self, key: SharePartitionKey) -> None:
        entry = self.entries.pop(key, None)
        if entry is not None and entry.timer is not None:
            entry.timer.cancel()

    # -- acquiring ------------------------------------------------------------------------

    def can_acquire(self, key: SharePartitionKey) -> bool:
        """Would a fetch of `key` find records to acquire now? (A waiting ShareFetch's
        condition: records below the bound and room to acquire them.)"""
        entry = self.entries.get(key)
        if entry is None:
            return True  # not loaded yet: let the fetch try
        partition = self.replica_manager.partitions.get((entry.topic, key.partition))
        if partition is None or not partition.is_leader:
            return True  # the answer is an error now
        sp = entry.share_partition
        bound = self._bound(partition, key.group_id)
        return sp.can_acquire() and max(sp.next_fetch_offset(), sp.start_offset) < bound

    def _bound(self, partition: Any, group_id: str) -> int:
        if self.group_config(group_id).read_committed:
            return partition.last_stable_offset
        return partition.high_watermark

    async def acquire(
        self,
        key: SharePartitionKey,
        topic: str,
        member_id: str,
        max_records: int,
        max_bytes: int,
        mode: AcquireMode,
    ) -> Acquisition:
        """Read the log for `member_id` and acquire what is available (Kafka
        `SharePartition.acquire` after `ReplicaManager.readFromLog`)."""
        sp = await self.share_partition(key, topic)
        sp.config = self.partition_config(key.group_id)
        partition = self.replica_manager.get_partition(topic, key.partition, require_leader=True)
        sp.move_start(partition.log_start_offset)
        if self._expire(key):
            await self.persist(key)
        bound = self._bound(partition, key.group_id)
        start = sp.next_fetch_offset()
        if not sp.can_acquire() or start >= bound:
            return Acquisition(b"", [])
        read_committed = self.group_config(key.group_id).read_committed
        info = partition.read(start, max_bytes, min_one_batch=True, read_committed=read_committed)
        data = info.read_bytes()
        # Which batches belong to aborted transactions, as a read_committed consumer tells
        # (Kafka `CompletedFetch`): a producer's transaction is open from its first offset
        # to its abort marker.
        pending = sorted(partition.aborted_transactions(info), key=lambda t: t.first_offset)
        open_aborted: set[int] = set()
        spans: list[tuple[int, int, FetchedBatch]] = []  # (position, size, batch)
        for position, header in iter_batch_headers(data):
            while pending and pending[0].first_offset <= header.last_offset:
                open_aborted.add(pending.pop(0).producer_id)
            is_aborted = False
            if header.is_control:
                open_aborted.discard(header.producer_id)  # its marker ends the transaction
            elif header.is_transactional:
                is_aborted = header.producer_id in open_aborted
            batch = FetchedBatch(header.base_offset, header.last_offset, is_aborted)
            spans.append((position, header.size, batch))
        acquired = sp.acquire(
            member_id, [b for _, _, b in spans], max_records=max_records, bound=bound, mode=mode
        )
        self._arm_timer(key)
        kept = b"".join(
            data[position : position + size]
            for position, size, batch in spans
            if any(
                a.first_offset <= batch.last_offset and batch.first_offset <= a.last_offset
                for a in acquired
            )
        )
        return Acquisition(kept, acquired)

    # -- acknowledging, releasing, persisting ---------------------------------------------

    async def persist(self, key: SharePartitionKey) -> ErrorCode:
        """Write what changed in `key`'s share-partition (WriteShareGroupState)."""
        entry = self.entries.get(key)
        if entry is None or not entry.share_partition.has_changes():
            return ErrorCode.NO_ERROR
        sp = entry.share_partition
        start, batches = sp.take_changes()
        return await self.persister.write_state(
            key, sp.state_epoch, sp.leader_epoch, start, batches, sp.delivery_complete_count
        )

    def release_session(self, session: ShareSession) -> list[SharePartitionKey]:
        """A session ended: its member's records on its partitions are released. Returns
        the keys whose state changed (to persist)."""
        changed = []
        for topic_id, partition in session.partitions:
            key = SharePartitionKey(session.group_id, topic_id, partition)
            entry = self.entries.get(key)
            if entry is not None and entry.share_partition.release_member(session.member_id):
                changed.append(key)
        return changed

    def end_session(self, session: ShareSession) -> None:
        """A session ended without its member's epoch -1 (replaced, its member gone, its
        connection closed): what the member held is released and written in the
        background, and a ShareFetch waiting on those partitions may acquire it now (Kafka
        `SharePartitionManager.releaseSession`)."""
        for key in self.release_session(session):
            self.spawn(self.persist(key))
            self.wake(key)

    def member_left(self, group_id: str, member_id: str) -> None:
        """A member left its share group (the share group coordinator's news): its session
        ends and what it holds is released."""
        session = self.sessions.remove(group_id, member_id)
        if session is not None:
            self.end_session(session)

    def connection_closed(self, connection_id: str) -> None:
        """A client's connection closed (the socket server's disconnect listener, Kafka
        `ShareSessionCache.ClientConnectionDisconnectListener`): the sessions opened on it
        end at once, rather than when their members' locks expire (SHARE-25)."""
        for session in self.sessions.remove_connection(connection_id):
            logger.debug("share session of %s ends with its connection", session.member_id)
            self.end_session(session)

    def spawn(self, work: Any) -> None:
        """Run `work` on the loop, keeping a reference until it is done."""
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # -- acquisition locks ----------------------------------------------------------------

    def _expire(self, key: SharePartitionKey) -> bool:
        entry = self.entries.get(key)
        return entry is not None and entry.share_partition.expire_locks()

    def _arm_timer(self, key: SharePartitionKey) -> None:
        """One timer per share-partition, at its earliest lock deadline."""
        entry = self.entries[key]
        if entry.timer is not None:
            entry.timer.cancel()
            entry.timer = None
        deadline = entry.share_partition.next_lock_deadline()
        if deadline is None:
            return
        delay_s = max(deadline - self.clock.milliseconds(), 0) / 1000
        entry.timer = self.schedule(delay_s, lambda: self._on_lock_timeout(key))

    def _on_lock_timeout(self, key: SharePartitionKey) -> None:
        entry = self.entries.get(key)
        if entry is None:
            return
        entry.timer = None
        if self._expire(key):
            self.spawn(self.persist(key))
            self.wake(key)
        self._arm_timer(key)

    def wake(self, key: SharePartitionKey) -> None:
        """Records of `key` came back (released, expired, or the start offset moved and
        widened the in-flight window): a ShareFetch waiting on its partition may acquire
        them now (Kafka `ReplicaManager.completeDelayedShareFetchRequest`)."""
        entry = self.entries.get(key)
        if entry is not None:
            self.replica_manager.fetch_purgatory.check_and_complete((entry.topic, key.partition))

    def shutdown(self) -> None:
        for key in list(self.entries):
            self._drop(key)


_DURATION = re.compile(
    r"P(?:(?P<days>\d+)D)?(?:T(?:(?P<hours>\d+)H)?(?:(?P<minutes>\d+)M)?"
    r"(?:(?P<seconds>\d+(?:\.\d+)?)S)?)?"
)


def parse_duration_ms(text: str) -> int:
    """An ISO-8601 duration `PnDTnHnMn.nS` (Java's `Duration.parse`) in milliseconds."""
    match = _DURATION.fullmatch(text.strip().upper())
    if match is None or text.strip().upper() in ("P", "PT"):
        raise ValueError(f"not an ISO-8601 duration: {text!r}")
    parts = {k: float(v) for k, v in match.groupdict().items() if v is not None}
    return int(datetime.timedelta(**parts).total_seconds() * 1000)
