"""The quorum's log on kafka-ref's own partition log (Kafka: `KafkaRaftLog`, once
`KafkaMetadataLog`).

`__cluster_metadata-0` is a Kafka log like any other: segments, indexes and a
`leader-epoch-checkpoint` in a partition directory. This class is the `ReplicatedLog` the
quorum core declares (replicated_log.py), made of kafka-ref's `Log` (kafka_ref/log/log.py)
and the leader epoch cache of ISR replication (kafka_ref/replication/leader_epoch.py), so
the same two classes answer "where does epoch E end?" for both kinds of replication.

A leader's append stamps its epoch into each batch's `partitionLeaderEpoch` (the log writes
it in place, outside the CRC) and, when the epoch is new, records in the cache where it
starts *before* the batch is written, as Kafka's `UnifiedLog.append` does; a follower's
append records the epoch of each batch it copies. Every append is followed by the quorum's
`flush` before it counts (RAFT-8).

After a crash `open` recovers the log (a torn or unflushed tail is cut by kafka-ref's
recovery), drops cache entries beyond the recovered end, and re-reads the epochs of the
batches the cache may have missed (an append whose checkpoint write the crash interrupted).

**Snapshots** live beside the segments, as Kafka's `KafkaMetadataLog` keeps them: one file
each, `<end offset>-<epoch>.checkpoint` (raft/snapshots.py, META-5),
written whole through a `.part` file and a rename. The log start offset is always the end
offset of the earliest snapshot kept (or 0): `delete_before_snapshot` deletes the older
snapshots first, then moves the log start (`Log.delete_records_before`, which drops the
segments wholly below it), so that a crash in between leaves a log start that a snapshot
still covers. `open` takes the log start from the earliest snapshot, and a log that ends
below the latest snapshot (a crash while a follower installed one) starts afresh at its end.

Rules: RAFT-8, RAFT-22.
"""

from __future__ import annotations

import logging
import os

from kafka_ref.clock import Clock
from kafka_ref.config import LogConfig
from kafka_ref.log.log import Log
from kafka_ref.log.validator import AppendOrigin
from kafka_ref.raft import snapshots as snapshot_files
from kafka_ref.raft.messages import OffsetAndEpoch
from kafka_ref.record.batch import BatchHeader, iter_batch_headers
from kafka_ref.replication.leader_epoch import UNDEFINED_EPOCH, LeaderEpochFileCache

logger = logging.getLogger("kafka_ref.raft.kafka_raft_log")

METADATA_TOPIC = "__cluster_metadata"  # Kafka: Topic.CLUSTER_METADATA_TOPIC_NAME


class KafkaRaftLog:
    """A `ReplicatedLog` over a `Log` and its `LeaderEpochFileCache`, on real files."""

    def __init__(self, log: Log, epochs: LeaderEpochFileCache) -> None:
        self.log = log
        self.epochs = epochs
        self.snapshots = _snapshot_ids(log.dir)  # oldest first, each (epoch, end offset)

    @classmethod
    def open(cls, directory: str | os.PathLike, config: LogConfig, clock: Clock) -> KafkaRaftLog:
        """Open (after a crash: recover) the log in `directory`, its epoch cache and its
        snapshots."""
        snapshots = _snapshot_ids(os.fspath(directory))
        start = snapshots[0].offset if snapshots else 0
        log = Log.open(directory, config, clock, clean_shutdown=False, log_start_offset=start)
        log.flush()  # what recovery kept is on disk; from here on only new appends are at risk
        epochs = LeaderEpochFileCache.load(directory)
        epochs.truncate_from_end(log.log_end_offset)
        raft_log = cls(log, epochs)
        if snapshots and snapshots[-1].offset > log.log_end_offset:
            raft_log._start_at_latest_snapshot()  # an install the crash interrupted
        epochs.truncate_from_start(log.log_start_offset)
        latest = epochs.entries[-1].start_offset if epochs.entries else log.log_start_offset
        raft_log._assign_epochs(raft_log.read_all(latest))
        return raft_log

    # ------------------------------------------------------------------ state
    @property
    def end_offset(self) -> int:
        return self.log.log_end_offset

    @property
    def start_offset(self) -> int:
        return self.log.log_start_offset

    @property
    def last_fetched_epoch(self) -> int:
        """The epoch of the last batch; of the latest snapshot when the log holds none past
        it (a follower that just installed one: Kafka's `lastFetchedEpoch`)."""
        if self.epochs.latest_epoch == UNDEFINED_EPOCH and self.snapshots:
            assert self.end_offset == self.snapshots[-1].offset, (
                f"log end {self.end_offset} without epochs, past the snapshot {self.snapshots[-1]}"
            )
            return self.snapshots[-1].epoch
        return self.epochs.latest_epoch

    @property
    def earliest_snapshot_id(self) -> OffsetAndEpoch | None:
        """The snapshot at the log start offset (a bootstrap snapshot 0-0 counts)."""
        if self.snapshots and self.snapshots[0].offset == self.start_offset:
            return self.snapshots[0]
        return None

    @property
    def latest_snapshot_id(self) -> OffsetAndEpoch | None:
        return self.snapshots[-1] if self.snapshots else None

    def end_offset_for_epoch(self, epoch: int) -> OffsetAndEpoch:
        """The largest epoch <= `epoch` held here and where it ends (the next epoch's start,
        or the log end); (-1, 0) when no epoch that old is held."""
        latest = self.epochs.latest_epoch
        if latest == UNDEFINED_EPOCH or epoch < 0:
            return OffsetAndEpoch(UNDEFINED_EPOCH, 0)
        if epoch >= latest:
            return OffsetAndEpoch(latest, self.end_offset)
        found = self.epochs.end_offset_for(epoch, self.end_offset)
        return OffsetAndEpoch(found.epoch, found.end_offset)

    # ------------------------------------------------------------------ changes
    def append_as_leader(self, batches: bytes, epoch: int) -> tuple[int, int]:
        self.epochs.assign(epoch, self.end_offset)
        info = self.log.append(batches, leader_epoch=epoch, origin=AppendOrigin.COORDINATOR)
        return info.first_offset, info.last_offset

    def append_as_follower(self, batches: bytes) -> tuple[int, int]:
        self._assign_epochs(batches)
        info = self.log.append(batches, assign_offsets=False)
        return info.first_offset, info.last_offset

    def _assign_epochs(self, batches: bytes) -> None:
        for _, header in iter_batch_headers(batches):
            if header.partition_leader_epoch > self.epochs.latest_epoch:
                self.epochs.assign(header.partition_leader_epoch, header.base_offset)

    def truncate_to(self, offset: int) -> None:
        # below the log start is the snapshot's, which is committed: no leader asks for it
        assert offset >= self.start_offset, f"truncation to {offset}, below the log start"
        self.log.truncate_to(offset)
        self.epochs.truncate_from_end(self.end_offset)

    def flush(self) -> None:
        self.log.flush()

    # ------------------------------------------------------------------ snapshots
    def create_snapshot(self, snapshot_id: OffsetAndEpoch, data: bytes) -> None:
        """Write a snapshot durably (Kafka: `createNewSnapshot`, then `freeze`)."""
        assert self.start_offset <= snapshot_id.offset <= self.end_offset, (
            f"a snapshot at {snapshot_id.offset} outside the log [{self.start_offset}, "
            f"{self.end_offset}]"
        )
        self._write_snapshot(snapshot_id, data)

    def _write_snapshot(self, snapshot_id: OffsetAndEpoch, data: bytes) -> None:
        snapshot_files.write_snapshot(self.log.dir, _file_id(snapshot_id), data)
        self.snapshots = sorted({*self.snapshots, snapshot_id}, key=lambda s: s.offset)

    def snapshot_id_at(self, end_offset: int) -> OffsetAndEpoch:
        """The id a snapshot ending at `end_offset` gets: the epoch of the record before."""
        earliest = self.earliest_snapshot_id
        if earliest is not None and end_offset == earliest.offset:
            return earliest
        assert self.start_offset < end_offset <= self.end_offset, (
            f"no record before {end_offset} in [{self.start_offset}, {self.end_offset})"
        )
        return OffsetAndEpoch(self.epochs.epoch_for_offset(end_offset - 1), end_offset)

    def read_snapshot(self, snapshot_id: OffsetAndEpoch) -> bytes | None:
        if snapshot_id not in self.snapshots:
            return None
        path = os.path.join(self.log.dir, snapshot_files.snapshot_file_name(_file_id(snapshot_id)))
        with open(path, "rb") as f:
            return f.read()

    def delete_before_snapshot(self, snapshot_id: OffsetAndEpoch) -> bool:
        """Cut the log up to `snapshot_id` (Kafka: `deleteBeforeSnapshot`): the older
        snapshots go first, then the log start moves and the segments below it are deleted.
        Never past the latest snapshot: what the log drops, a snapshot holds (RAFT-22)."""
        if snapshot_id not in self.snapshots or snapshot_id.offset <= self.start_offset:
            return False
        assert snapshot_id.offset <= self.end_offset, f"{snapshot_id} is past the log end"
        self._delete_snapshots_before(snapshot_id.offset)
        self.log.delete_records_before(snapshot_id.offset)
        self.epochs.truncate_from_start(snapshot_id.offset)
        return True

    def maybe_clean(self, now_ms: int, max_bytes: int, max_ms: int) -> bool:
        """Cut the log up to the latest snapshot once it holds more than `max_bytes`, or its
        first record is older than `max_ms` (Kafka: `maybeClean`, by retention bytes and
        by retention ms). True if the log start moved."""
        latest = self.latest_snapshot_id
        if latest is None or latest.offset <= self.start_offset:
            return False  # nothing a snapshot covers that the log could drop
        first = self.read(self.start_offset, 1)
        oldest_ms = BatchHeader.parse(first, 0).max_timestamp if first else now_ms
        if self.log.size_in_bytes > max_bytes or now_ms - oldest_ms > max_ms:
            return self.delete_before_snapshot(latest)
        return False

    def install_snapshot(self, snapshot_id: OffsetAndEpoch, data: bytes) -> None:
        """Keep the leader's snapshot, then empty the log to start at its end (Kafka:
        `onSnapshotFrozen`, `truncateToLatestSnapshot`): every record the log held is older
        than the snapshot, or of a history the snapshot replaces (RAFT-23)."""
        self._write_snapshot(snapshot_id, data)
        self._start_at_latest_snapshot()
        logger.info(
            "%s: installed the snapshot %s; the log starts there", self.log.name, snapshot_id
        )

    def _start_at_latest_snapshot(self) -> None:
        latest = self.snapshots[-1]
        self._delete_snapshots_before(latest.offset)
        self.log.truncate_fully_and_start_at(latest.offset)
        self.log.flush()
        self.epochs.clear()

    def _delete_snapshots_before(self, offset: int) -> None:
        for old in [s for s in self.snapshots if s.offset < offset]:
            name = snapshot_files.snapshot_file_name(_file_id(old))
            os.remove(os.path.join(self.log.dir, name))
            self.snapshots.remove(old)

    # ------------------------------------------------------------------ reads
    def read(self, offset: int, max_bytes: int) -> bytes:
        if offset >= self.end_offset:
            return b""
        assert offset >= self.start_offset, f"a read at {offset}, below the log start"
        return self.log.read(offset, max_bytes).read_bytes()

    def read_all(self, offset: int = 0) -> bytes:
        """Every batch from the one holding `offset` (the log start, if later) to the end."""
        return self.read(max(offset, self.start_offset), max(self.log.size_in_bytes, 1))

    def close(self) -> None:
        self.log.close()


def _file_id(snapshot_id: OffsetAndEpoch) -> snapshot_files.OffsetAndEpoch:
    """The file's (end offset, epoch) of the core's (epoch, end offset)."""
    return snapshot_files.OffsetAndEpoch(snapshot_id.offset, snapshot_id.epoch)


def _snapshot_ids(directory: str) -> list[OffsetAndEpoch]:
    """The finished snapshots in `directory`, oldest first."""
    if not os.path.isdir(directory):
        return []
    return [OffsetAndEpoch(s.epoch, s.offset) for s in snapshot_files.list_snapshots(directory)]
