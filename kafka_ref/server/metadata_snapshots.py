"""A KRaft node writes snapshots of its metadata image (Kafka: `SnapshotGenerator`, which
`SnapshotEmitter` writes with `RecordsSnapshotWriter`; KIP-630).

Every KRaft node, controller or broker, keeps the metadata log, and so every node writes
snapshots of it: the quorum (kafka_ref/raft/) then cuts its log behind them and sends them
to followers too far behind. `MetadataSnapshotter` is one more listener of the node's Raft
client (RAFT-17): it folds every committed batch into its own `MetadataImage`, counts the
bytes with a `SnapshotGenerator` (`metadata.log.max.record.bytes.between.snapshots`,
`metadata.log.max.snapshot.interval.ms`), and when it is time writes the image as a
snapshot file (metadata/snapshot.py: header, the image's records, footer; META-5, META-6)
at the offset it has been told up to, so a committed one (RAFT-21). It writes outside the
listener's call, on the next turn of the event loop, as Kafka's generator hands the work
to its own thread.

A snapshot it loads (at a restart, or one its node copied from the leader, RAFT-24)
replaces its image, as it does the active controller's and the broker's.

Rules: RAFT-21, RAFT-24, META-12.
"""

from __future__ import annotations

import asyncio
import logging

from kafka_ref.clock import Clock
from kafka_ref.metadata import snapshot as snapshot_files
from kafka_ref.metadata.image import EMPTY, MetadataImage, load
from kafka_ref.metadata.serde import deserialize
from kafka_ref.raft.listener import CommittedBatch, LeaderAndEpoch, LoadedSnapshot
from kafka_ref.raft.snapshot_generator import SnapshotGenerator
from kafka_ref.server.raft_manager import RaftManager

logger = logging.getLogger("kafka_ref.server.metadata_snapshots")


def load_snapshot_image(snapshot: LoadedSnapshot) -> MetadataImage:
    """The metadata image a snapshot the quorum tells holds (`handle_load_snapshot`)."""
    snapshot_id = snapshot.snapshot_id
    file_id = snapshot_files.OffsetAndEpoch(snapshot_id.offset, snapshot_id.epoch)
    return snapshot_files.snapshot_image(snapshot.data, file_id)


class MetadataSnapshotter:
    """Folds the committed metadata, and writes it as a snapshot when the generator says."""

    def __init__(self, raft: RaftManager, clock: Clock) -> None:
        self.raft = raft
        self.clock = clock
        config = raft.config
        self.generator = SnapshotGenerator(
            config.max_bytes_between_snapshots,
            config.max_snapshot_interval_ms,
            clock.milliseconds(),
        )
        self.image = EMPTY
        self.next_offset = 0  # past the last record folded into the image
        self._scheduled = False
        raft.register(self)

    # ------------------------------------------------------------------ the raft listener
    def handle_commit(self, batch: CommittedBatch) -> None:
        records = [deserialize(value) for _, value in batch.records if value is not None]
        self.image = load(records, self.image)
        self.next_offset = batch.last_offset + 1
        self.generator.record_batch(batch.size_in_bytes)
        if not self._scheduled and self.generator.should_snapshot(self.clock.milliseconds()):
            self._scheduled = True
            asyncio.get_running_loop().call_soon(self.write_snapshot)

    def handle_load_snapshot(self, snapshot: LoadedSnapshot) -> None:
        self.image = load_snapshot_image(snapshot)
        self.next_offset = snapshot.snapshot_id.offset

    def handle_leader_change(self, leader: LeaderAndEpoch) -> None:
        """Nothing to do: every node snapshots, leader or not."""

    # ------------------------------------------------------------------ writing
    def write_snapshot(self) -> None:
        """The image, as a snapshot at the offset it was told up to (RAFT-21)."""
        self._scheduled = False
        client, log = self.raft.client, self.raft.log
        if client is None or log is None or self.next_offset == 0:
            return
        latest = log.latest_snapshot_id
        if latest is not None and latest.offset >= self.next_offset:
            return
        now = self.clock.milliseconds()
        snapshot_id = log.snapshot_id_at(self.next_offset)
        data = snapshot_files.snapshot_batches(
            snapshot_files.OffsetAndEpoch(snapshot_id.offset, snapshot_id.epoch),
            self.image.records(),
            last_contained_log_timestamp=now,
            now=now,
            kraft_version=0,  # kafka-ref's quorum has static voters: no VotersRecord
        )
        client.create_snapshot(self.next_offset, data, now)
        self.generator.snapshot_written(now)
        logger.info(
            "raft %d: snapshot %s written, %d bytes; log start %d",
            self.raft.node_id,
            snapshot_id,
            len(data),
            log.start_offset,
        )
