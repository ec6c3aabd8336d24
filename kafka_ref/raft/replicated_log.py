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

Rules: RAFT-7, RAFT-8.
"""

from __future__ import annotations

from typing import Protocol

from kafka_ref.raft.messages import OffsetAndEpoch


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
        """The largest epoch <= `epoch` this log holds, and where it ends here."""
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


def end_offset_and_epoch(log: ReplicatedLog) -> OffsetAndEpoch:
    """How up to date `log` is: the epoch of its last batch and its end offset."""
    return OffsetAndEpoch(log.last_fetched_epoch, log.end_offset)


def validate_offset_and_epoch(
    log: ReplicatedLog, fetch_offset: int, last_fetched_epoch: int
) -> OffsetAndEpoch | None:
    """None if a follower at (`fetch_offset`, `last_fetched_epoch`) agrees with `log`;
    else the diverging epoch and where it ends on `log` (RAFT-7)."""
    if fetch_offset == 0 and last_fetched_epoch < 0:
        return None  # an empty log agrees with every log
    end = log.end_offset_for_epoch(last_fetched_epoch)
    if end.epoch != last_fetched_epoch or end.offset < fetch_offset:
        return end
    return None


def truncation_offset(log: ReplicatedLog, diverging: OffsetAndEpoch) -> int:
    """Where a follower cuts its log when the leader says `diverging` (Kafka:
    `truncateToEndOffset`): if the follower holds that epoch, where it ends on the leader or
    here, whichever is sooner; if not, where the follower's own last epoch below it ends.
    The next fetch checks again from there, so follower and leader meet in a few rounds."""
    local = log.end_offset_for_epoch(diverging.epoch)
    if local.epoch == diverging.epoch:
        return min(local.offset, diverging.offset)
    return local.offset
