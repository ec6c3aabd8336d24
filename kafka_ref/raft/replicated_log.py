"""The log the quorum replicates, as the core sees it (Kafka: `ReplicatedLog`).

The quorum core does not care how the log is stored; it declares what it needs, and
kafka_raft_log.py gives it kafka-ref's own partition log on real files (so that the
`__cluster_metadata` log is a Kafka log like any other: segments, indexes, a leader epoch
checkpoint). What the core asks of a log:

* its **end offset** and the **epoch of its last batch** (together, how up to date it is);
* **where an epoch ends** (`end_offset_for_epoch`), the leader epoch cache's question of
  KIP-101: the leader answers it to tell a follower where their logs part;
* **append as leader**: whole batches, given offsets from the end and stamped with the
  leader's epoch; **append as follower**: the leader's batches unchanged;
* **truncate** to an offset, **read** whole batches from an offset, and **flush**: Kafka's
  Raft fsyncs what it appended before it counts it (a leader before its own end offset
  moves, a follower before its next fetch tells the leader how far it is), so an entry
  counted towards a majority survives any crash (RAFT-8).

`validate_offset_and_epoch` is the leader's check of a fetch (Kafka:
`ReplicatedLog.validateOffsetAndEpoch`): a follower at (fetch offset, last fetched epoch)
agrees with the leader's log if the leader's log holds that epoch and the epoch does not
end before the fetch offset. Otherwise the answer is the diverging epoch: the largest epoch
the leader knows up to the follower's, and where it ends on the leader (RAFT-7).
`truncation_offset` is the follower's side: where it cuts its log on such an answer.

**Snapshots** (KIP-630). The log also holds snapshots: files, each the application's state
after every record below its end offset, named by that end offset and the epoch of the last
record it covers (its `OffsetAndEpoch`, Kafka's snapshot id). What the core asks of them:

* **create** a snapshot from the application's bytes (`create_snapshot`), only at an offset
  the quorum committed (RAFT-21), and **read** one back (`read_snapshot`);
* **delete before a snapshot** (`delete_before_snapshot`): the log start offset moves up to
  a snapshot's end offset and the segments wholly below it go; never past the latest
  snapshot, so whatever the log no longer holds a snapshot does (RAFT-22);
* **install** a snapshot copied from the leader (`install_snapshot`): the file, then the
  log emptied to start at its end offset (Kafka: `truncateToLatestSnapshot`), so that
  nothing older than the snapshot is left below the records fetched next (RAFT-23).

`snapshot_for_fetch` is the leader's check of a fetch before `validate_offset_and_epoch`
(Kafka: the SNAPSHOT answer of `ReplicatedLog.validateOffsetAndEpoch`): a follower that
fetches below the log start offset, or at it with another epoch than the snapshot there,
or with an epoch older than that snapshot's, must load the latest snapshot first.

Rules: RAFT-7, RAFT-8, RAFT-22, RAFT-23.
"""

from __future__ import annotations

from typing import Protocol

from kafka_ref.raft.messages import OffsetAndEpoch
from kafka_ref.seams import seam


class ReplicatedLog(Protocol):
    """The operations the quorum core uses of its log."""

    @property
    def end_offset(self) -> int:
        """The offset the next batch will get (the log end offset)."""
        ...

    @property
    def last_fetched_epoch(self) -> int:
        """The epoch of the last batch, or -1 for an empty log."""
        ...

    def end_offset_for_epoch(self, epoch: int) -> OffsetAndEpoch:
        """The largest epoch <= `epoch` this log holds, and where it ends here (the next
        epoch's start, or the log end); (-1, 0) when it holds none that old."""
        ...

    def append_as_leader(self, batches: bytes, epoch: int) -> tuple[int, int]:
        """Append `batches` at the end, stamped with `epoch`: (first offset, last offset)."""
        ...

    def append_as_follower(self, batches: bytes) -> tuple[int, int]:
        """Append the leader's `batches` unchanged; they start at the end offset."""
        ...

    def truncate_to(self, offset: int) -> None:
        """Remove every batch at or after `offset`."""
        ...

    def read(self, offset: int, max_bytes: int) -> bytes:
        """Whole batches from the one holding `offset`: at least one if there is one."""
        ...

    def flush(self) -> None:
        """fsync everything appended."""
        ...

    @property
    def start_offset(self) -> int:
        """The log start offset: the first offset the log still holds (a snapshot's end)."""
        ...

    @property
    def earliest_snapshot_id(self) -> OffsetAndEpoch | None:
        """The snapshot at the log start offset, if the log was ever cut."""
        ...

    @property
    def latest_snapshot_id(self) -> OffsetAndEpoch | None:
        """The newest snapshot, if any."""
        ...

    def create_snapshot(self, snapshot_id: OffsetAndEpoch, data: bytes) -> None:
        """Write the snapshot `snapshot_id` durably (written whole, or not at all)."""
        ...

    def snapshot_id_at(self, end_offset: int) -> OffsetAndEpoch:
        """The id of a snapshot ending at `end_offset`: the epoch of the record before it."""
        ...

    def read_snapshot(self, snapshot_id: OffsetAndEpoch) -> bytes | None:
        """The bytes of the snapshot `snapshot_id`, None if it is not (or no longer) here."""
        ...

    def delete_before_snapshot(self, snapshot_id: OffsetAndEpoch) -> bool:
        """Move the log start offset up to `snapshot_id`'s end offset; True if it moved."""
        ...

    def maybe_clean(self, now_ms: int, max_bytes: int, max_ms: int) -> bool:
        """Cut the log up to the latest snapshot if it holds too much, or too old."""
        ...

    def install_snapshot(self, snapshot_id: OffsetAndEpoch, data: bytes) -> None:
        """Keep a snapshot copied from the leader, and empty the log to start at its end."""
        ...


def end_offset_and_epoch(log: ReplicatedLog) -> OffsetAndEpoch:
    """How up to date `log` is: the epoch of its last batch and its end offset."""
    return OffsetAndEpoch(log.last_fetched_epoch, log.end_offset)


def validate_offset_and_epoch(
    log: ReplicatedLog, fetch_offset: int, last_fetched_epoch: int
) -> OffsetAndEpoch | None:
    """None if a follower at (`fetch_offset`, `last_fetched_epoch`) agrees with `log`;
    else the diverging epoch and where it ends on `log` (RAFT-7)."""
    if fetch_offset == 0 and log.start_offset == 0:
        return None  # an empty log agrees with every log that was never cut
    end = log.end_offset_for_epoch(last_fetched_epoch)
    if end.epoch != last_fetched_epoch or end.offset < fetch_offset:
        return end
    return None


def snapshot_for_fetch(
    log: ReplicatedLog, fetch_offset: int, last_fetched_epoch: int
) -> OffsetAndEpoch | None:
    """The snapshot a follower at (`fetch_offset`, `last_fetched_epoch`) must load before it
    can fetch `log`, or None (RAFT-23; Kafka: `validateOffsetAndEpoch`'s SNAPSHOT)."""
    earliest = log.earliest_snapshot_id
    if earliest is None or (fetch_offset == 0 and log.start_offset == 0):
        return None
    if (
        fetch_offset < log.start_offset
        or (fetch_offset == log.start_offset and last_fetched_epoch != earliest.epoch)
        or last_fetched_epoch < earliest.epoch
    ):
        return log.latest_snapshot_id
    return None


@seam
def truncation_offset(log: ReplicatedLog, diverging: OffsetAndEpoch) -> int:
    """Where a follower cuts its log when the leader answers its fetch with `diverging`
    (RAFT-7; Kafka: `ReplicatedLog.truncateToEndOffset`): the largest epoch the leader holds
    up to the follower's last one, and where it ends on the leader.

    If the follower holds that epoch too, the two logs agree up to where it ends on the
    leader or here, whichever is sooner: cut there. If not, cut where the follower's own
    largest epoch below it ends (`log.end_offset_for_epoch`): what follows is of epochs the
    leader never had. The next fetch checks again from there, so follower and leader meet
    in a few rounds."""
    local = log.end_offset_for_epoch(diverging.epoch)
    if local.epoch == diverging.epoch:
        return min(local.offset, diverging.offset)
    return local.offset
