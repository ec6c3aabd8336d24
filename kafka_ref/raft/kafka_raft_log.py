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

Rules: RAFT-8.
"""

from __future__ import annotations

import os

from kafka_ref.clock import Clock
from kafka_ref.config import LogConfig
from kafka_ref.log.log import Log
from kafka_ref.log.validator import AppendOrigin
from kafka_ref.raft.messages import OffsetAndEpoch
from kafka_ref.record.batch import iter_batch_headers
from kafka_ref.replication.leader_epoch import UNDEFINED_EPOCH, LeaderEpochFileCache

METADATA_TOPIC = "__cluster_metadata"  # Kafka: Topic.CLUSTER_METADATA_TOPIC_NAME


class KafkaRaftLog:
    """A `ReplicatedLog` over a `Log` and its `LeaderEpochFileCache`, on real files."""

    def __init__(self, log: Log, epochs: LeaderEpochFileCache) -> None:
        self.log = log
        self.epochs = epochs

    @classmethod
    def open(cls, directory: str | os.PathLike, config: LogConfig, clock: Clock) -> KafkaRaftLog:
        """Open (after a crash: recover) the log in `directory`, and its epoch cache."""
        log = Log.open(directory, config, clock, clean_shutdown=False)
        log.flush()  # what recovery kept is on disk; from here on only new appends are at risk
        epochs = LeaderEpochFileCache.load(directory)
        epochs.truncate_from_end(log.log_end_offset)
        latest = epochs.entries[-1].start_offset if epochs.entries else log.log_start_offset
        raft_log = cls(log, epochs)
        raft_log._assign_epochs(raft_log.read_all(latest))
        return raft_log

    # ------------------------------------------------------------------ state
    @property
    def end_offset(self) -> int:
        return self.log.log_end_offset

    @property
    def last_fetched_epoch(self) -> int:
        return self.epochs.latest_epoch

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
        self.log.truncate_to(offset)
        self.epochs.truncate_from_end(self.end_offset)

    def flush(self) -> None:
        self.log.flush()

    # ------------------------------------------------------------------ reads
    def read(self, offset: int, max_bytes: int) -> bytes:
        if offset >= self.end_offset:
            return b""
        return self.log.read(offset, max_bytes).read_bytes()

    def read_all(self, offset: int = 0) -> bytes:
        """Every batch from the one holding `offset` to the end."""
        return self.read(offset, max(self.log.size_in_bytes, 1))

    def close(self) -> None:
        self.log.close()
