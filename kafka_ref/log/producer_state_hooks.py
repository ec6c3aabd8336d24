"""What the log asks of producer state, and the plain log that keeps none.

A log is a log: it validates batches, numbers them, writes them and reads them back, and
of who wrote a batch it knows only what the batch header says. Idempotence and
transactions (KIP-98) need more: a table, per producer id, of the last batches the
producer wrote and of its open transaction, kept in step with the log and saved beside it
(producer_state.py, a later chapter). The log knows nothing of that table, nor of
transactions. It declares here the points where its batches change, and calls whatever
producer state it was opened with at each of them (Kafka: the calls `UnifiedLog` makes on
its `ProducerStateManager`):

* **append** (IDEM-1): `prepare_append` sees the validated batches, with their offsets,
  before a byte is written. It may refuse the append (it raises), or find it is a retry of
  batches the log holds (`duplicate`: the log writes nothing and answers the original
  offsets). `complete_append` follows the write, with the segment that took it;
* **roll**: `on_roll`, once the new active segment is in the log;
* **truncation**: `truncate_and_reload` after the log cut its tail,
  `truncate_fully_and_start_at` after it restarted empty;
* **open**: `load`, once the segments are recovered, told the first segment whose files
  were rebuilt;
* **deletion**: `delete_snapshots_before` when retention or DeleteRecords removed the
  oldest segments;
* **close**: `take_snapshot` at the log end;
* **the high watermark**: `on_high_watermark_updated`, an explicit call of the partition
  that moved it (the log keeps no HW). Nothing else that reads the log or its producer
  state changes either (TXN-25).

Producer state may also keep files of its own per segment (`segment_indexes`, opened by
the log with each segment: the transactions' `.txnindex`). The one thing the log's parts
read back is for the cleaner (`last_records_of_active_producers`): the last batch of each
producer it knows, which compaction must keep.

A plain log is opened with `NoProducerState` (`Log.open`'s default): every batch is
written as it comes, no producer id is checked, no file is kept. A broker opens its logs
with `ProducerStateManager` (producer_state.py), the state the rest of the notes build on.

Rules: LOG-19, IDEM-1, TXN-25.
"""

from __future__ import annotations

from typing import Protocol

from kafka_ref.log.segment import NO_SEGMENT_INDEXES, Segment, SegmentedLog, SegmentIndexes
from kafka_ref.log.validator import AppendInfo, AppendOrigin


class PreparedAppend(Protocol):
    """What `prepare_append` decided, for `complete_append` (Kafka: the append's
    `ProducerAppendInfo`s)."""

    @property
    def duplicate(self) -> AppendInfo | None:
        """The original append's answer when every batch is a retry: nothing is written."""


class ProducerStateHooks(Protocol):
    """What the log needs of producer state (implemented by `ProducerStateManager`)."""

    @property
    def segment_indexes(self) -> SegmentIndexes:
        """The files this state keeps per segment, by kind (segment.py)."""

    def load(self, log: SegmentedLog, now: int, rebuilt_from: int | None) -> None:
        """At open: the state of the recovered `log`; segments from `rebuilt_from` on had
        their files rebuilt, and this state's files among them are empty."""

    def prepare_append(
        self, records: memoryview, info: AppendInfo, now: int, origin: AppendOrigin
    ) -> PreparedAppend:
        """Check the validated batches of an append before a byte is written; raise to
        refuse it. Changes nothing."""

    def complete_append(
        self, prepared: PreparedAppend, segment: Segment, log_end_offset: int
    ) -> None:
        """The batches are in `segment`, the log ends at `log_end_offset`: take them in."""

    def on_roll(self, log: SegmentedLog) -> None:
        """The log rolled: its last segment is new and empty."""

    def truncate_and_reload(self, log: SegmentedLog, now: int) -> None:
        """The log lost its tail: the state must be the one of what is left."""

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """The log was emptied and starts over at `offset`."""

    def delete_snapshots_before(self, offset: int) -> None:
        """The segments below `offset` were deleted."""

    def take_snapshot(self, offset: int) -> None:
        """Save the state of every batch below `offset` (the log closes)."""

    def on_high_watermark_updated(self, high_watermark: int) -> None:
        """The partition moved the HW: what is below it is replicated."""

    def last_records_of_active_producers(self) -> dict[int, tuple[int | None, int]]:
        """Producer id -> (offset of its last data batch, or None; its epoch)."""


class _NothingPrepared:
    duplicate = None


_NOTHING_PREPARED = _NothingPrepared()


class NoProducerState:
    """The producer state of a plain log: none. Every append is written, nothing is kept."""

    segment_indexes = NO_SEGMENT_INDEXES

    def __init__(self, directory: str) -> None:
        self.dir = directory

    def load(self, log: SegmentedLog, now: int, rebuilt_from: int | None) -> None:
        pass

    def prepare_append(
        self, records: memoryview, info: AppendInfo, now: int, origin: AppendOrigin
    ) -> PreparedAppend:
        return _NOTHING_PREPARED

    def complete_append(
        self, prepared: PreparedAppend, segment: Segment, log_end_offset: int
    ) -> None:
        pass

    def on_roll(self, log: SegmentedLog) -> None:
        pass

    def truncate_and_reload(self, log: SegmentedLog, now: int) -> None:
        pass

    def truncate_fully_and_start_at(self, offset: int) -> None:
        pass

    def delete_snapshots_before(self, offset: int) -> None:
        pass

    def take_snapshot(self, offset: int) -> None:
        pass

    def on_high_watermark_updated(self, high_watermark: int) -> None:
        pass

    def last_records_of_active_producers(self) -> dict[int, tuple[int | None, int]]:
        return {}
