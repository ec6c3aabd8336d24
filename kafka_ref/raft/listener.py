"""What the quorum tells the application: committed batches, and who leads (Kafka:
`RaftClient.Listener`, the `ListenerContext` of `KafkaRaftClient.pollListeners`).

The quorum replicates opaque records; the application (KRaft's controllers and brokers,
which fold the records into their `MetadataImage`) learns of them through a listener:

* `handle_commit(batch)`: one batch whose every record is below the high watermark, in
  log order, each batch once. A record is told only once it is committed, so nothing a
  listener has heard is ever taken back: a truncation never reaches below the high
  watermark (RAFT-7).
* `handle_leader_change(leader)`: the epoch's leader, once known, or `NOT_SET`. When the
  local node is the new leader, the listener hears it only after it has been told every
  batch before the epoch's first offset (the leader's LeaderChange record): an active
  controller must have replayed what earlier leaders committed before it decides
  anything (Kafka: `maybeFireLeaderChange` waits for `nextExpectedOffset` to reach the
  `epochStartOffset`).
* `handle_load_snapshot(snapshot)` (KIP-630): the application's whole state at the
  snapshot's end offset, to rebuild from instead of what it held. A listener hears it when
  the records it would read next are no longer in the log (a follower installed the
  leader's snapshot, or the log was cut past it), and first of all when it starts on a log
  with a snapshot: a restarted node loads its latest snapshot, then replays the log from
  its end (Kafka: `handleLoadSnapshot`). Every snapshot covers only committed records
  (RAFT-21), so loading one takes back nothing either.

The client calls its listeners at the end of every `poll`, after the event has moved the
high watermark or the state. Control batches (LeaderChange) are not data: a listener sees
them only as the offsets it skips.

Rules: RAFT-17, RAFT-24.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from kafka_ref.raft.election_state import NOT_SET
from kafka_ref.raft.messages import OffsetAndEpoch
from kafka_ref.raft.replicated_log import ReplicatedLog
from kafka_ref.record.batch import HEADER_SIZE, BatchHeader, RecordBatch

READ_MAX_BYTES = 1 << 20  # one read of the log per listener per poll, at most


@dataclass(frozen=True, slots=True)
class LeaderAndEpoch:
    leader_id: int
    epoch: int


@dataclass(frozen=True, slots=True)
class CommittedBatch:
    """A batch of committed data records: its first and last offset, the epoch of the
    leader that appended it, its records as (offset, value), and its size in the log (what
    a `SnapshotGenerator` counts)."""

    base_offset: int
    last_offset: int
    epoch: int
    records: tuple[tuple[int, bytes | None], ...]
    size_in_bytes: int = 0


@dataclass(frozen=True, slots=True)
class LoadedSnapshot:
    """A snapshot for the application to load: its id (the epoch of the last record it
    covers, and its end offset) and the bytes the application wrote into it."""

    snapshot_id: OffsetAndEpoch
    data: bytes


class RaftListener(Protocol):
    def handle_commit(self, batch: CommittedBatch) -> None: ...

    def handle_load_snapshot(self, snapshot: LoadedSnapshot) -> None: ...

    def handle_leader_change(self, leader: LeaderAndEpoch) -> None: ...


class ListenerContext:
    """One listener's place in the log and the last leader it was told."""

    def __init__(self, listener: RaftListener) -> None:
        self.listener = listener
        self.next_offset = 0  # the first offset not yet told
        self.last_leader: LeaderAndEpoch | None = None
        self.started = False  # told anything yet (a snapshot, or a batch)

    def maybe_load_snapshot(self, log: ReplicatedLog) -> None:
        """Tell the listener the latest snapshot when it starts, or when the log no longer
        holds the records it would hear next (RAFT-24; Kafka: `pollListener`)."""
        latest = log.latest_snapshot_id
        behind = self.next_offset < log.start_offset
        if latest is None or latest.offset <= self.next_offset:
            assert not behind, f"records below the log start {log.start_offset} in no snapshot"
            return
        if self.started and not behind:
            return  # the log still holds what it reads next: replay it
        data = log.read_snapshot(latest)
        assert data is not None, f"the latest snapshot {latest} cannot be read"
        self.listener.handle_load_snapshot(LoadedSnapshot(latest, data))
        self.next_offset = latest.offset
        self.started = True

    def deliver(self, log: ReplicatedLog, high_watermark: int) -> None:
        """Tell the listener the snapshot it needs, if any, then every whole batch below the
        high watermark it has not heard."""
        self.maybe_load_snapshot(log)
        self.started = True
        while self.next_offset < high_watermark:
            data = log.read(self.next_offset, READ_MAX_BYTES)
            told = self.next_offset
            pos = 0
            while len(data) - pos >= HEADER_SIZE:
                header = BatchHeader.parse(data, pos)
                if pos + header.size > len(data):
                    break  # a read may end inside a batch: the next read starts there
                batch = RecordBatch(data, pos)
                pos += header.size
                if header.last_offset < self.next_offset:
                    continue  # a read starts at the batch holding the offset
                if header.last_offset >= high_watermark:
                    return  # not wholly committed yet
                if not header.is_control:
                    records = tuple((r.offset, r.value) for r in batch.records())
                    self.listener.handle_commit(
                        CommittedBatch(
                            header.base_offset,
                            header.last_offset,
                            header.partition_leader_epoch,
                            records,
                            header.size,
                        )
                    )
                self.next_offset = header.next_offset
            if self.next_offset == told:
                return  # nothing whole to read (a batch larger than one read)

    def maybe_fire_leader_change(
        self, leader: LeaderAndEpoch, local_id: int, epoch_start_offset: int | None
    ) -> None:
        """Tell the listener of a new leader; of the local node's leadership only once it has
        heard every batch before the epoch began."""
        if leader == self.last_leader:
            return
        # the local leader waits for its listener to catch up (one that resigned first, and
        # so has no epoch start offset any more, is never announced)
        local = leader.leader_id == local_id and leader.leader_id != NOT_SET
        if local and (epoch_start_offset is None or self.next_offset < epoch_start_offset):
            return
        self.last_leader = leader
        self.listener.handle_leader_change(leader)
