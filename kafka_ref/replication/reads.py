"""What a leader shows consumers and admins: reads below the HW, DeleteRecords.

A mixin of `Partition` (partition.py), kept apart because none of it is replication: it
only reads the partition's `high_watermark`, `log` and leader epoch `cache`. Consumers see
records below the HW only (REPL-2). DeleteRecords may move the log start up to the HW, never
past it (BROKER-26), and the epoch cache forgets what the log no longer has.

read_committed consumers (KIP-98) read below the last stable offset (LSO) instead, and get
with the records the aborted transactions they overlap. Both come from transactions, which
the log knows nothing of: the partition is given an `Isolation` that answers them (a
broker's partitions, isolation.py's `ReadCommitted`: TXN-4, TXN-8). Without one a
partition has no transactions: its LSO is its HW, and nothing is aborted.

Rules: REPL-2, BROKER-20, BROKER-26.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from kafka_ref.errors import ErrorCode, KafkaError, OffsetOutOfRangeError
from kafka_ref.log.log import LogReadInfo

if TYPE_CHECKING:
    from kafka_ref.log.log import Log
    from kafka_ref.replication.leader_epoch import LeaderEpochFileCache


class PolicyViolationError(KafkaError):
    code = ErrorCode.POLICY_VIOLATION


class AbortedTransaction(Protocol):
    """An aborted transaction a read overlaps: whose, and where it began."""

    @property
    def producer_id(self) -> int: ...

    @property
    def first_offset(self) -> int: ...


class Isolation(Protocol):
    """What read_committed needs that the log does not know (isolation.py's `ReadCommitted`)."""

    def last_stable_offset(self, log: Log, high_watermark: int) -> int:
        """The bound of read_committed reads, at most `high_watermark`."""

    def aborted_transactions(
        self, log: Log, start: int, upper: int
    ) -> Sequence[AbortedTransaction]:
        """The aborted transactions overlapping [start, upper)."""


class WithoutTransactions:
    """The `Isolation` of a partition without transactions: all below the HW is stable."""

    def last_stable_offset(self, log: Log, high_watermark: int) -> int:
        return high_watermark

    def aborted_transactions(
        self, log: Log, start: int, upper: int
    ) -> Sequence[AbortedTransaction]:
        return ()


WITHOUT_TRANSACTIONS = WithoutTransactions()


class ConsumerReads:
    """Consumer-facing reads of a partition (needs `topic`, `index`, `log`, `cache`,
    `high_watermark`, `isolation`)."""

    topic: str
    index: int
    log: Log
    cache: LeaderEpochFileCache
    high_watermark: int
    isolation: Isolation

    @property
    def last_stable_offset(self) -> int:
        """Bound of read_committed consumers, at most the HW (TXN-4, the `isolation`'s)."""
        return self.isolation.last_stable_offset(self.log, self.high_watermark)

    def read(
        self, offset: int, max_bytes: int, *, min_one_batch: bool, read_committed: bool = False
    ) -> LogReadInfo:
        """A consumer's read: file slices of whole batches below the HW or LSO (REPL-2)."""
        bound = self.last_stable_offset if read_committed else self.high_watermark
        return self.log.read(offset, max_bytes, max_offset=bound, min_one_batch=min_one_batch)

    def aborted_transactions(self, info: LogReadInfo) -> Sequence[AbortedTransaction]:
        """The aborted transactions a read_committed read must be told of (TXN-8)."""
        if not info.slices:
            return []
        return self.isolation.aborted_transactions(self.log, info.fetch_offset, info.next_offset)

    def bytes_available(self, offset: int, limit: int, read_committed: bool = False) -> int:
        """How many bytes a consumer could fetch at `offset` (DelayedFetch's min_bytes)."""
        bound = self.last_stable_offset if read_committed else self.high_watermark
        if offset >= bound:
            return 0
        return self.read(offset, limit, min_one_batch=True, read_committed=read_committed).size

    def delete_records_before(self, offset: int) -> int:
        """DeleteRecords: -1 means the HW; past the HW is out of range. Returns the new
        log start offset (the low watermark)."""
        if not self.log.config.delete:
            raise PolicyViolationError(
                f"Records of partition {self.topic}-{self.index} with cleanup.policy=compact"
                " cannot be deleted"
            )
        hw = self.high_watermark
        target = hw if offset == -1 else offset
        if target < 0 or target > hw:
            raise OffsetOutOfRangeError(
                f"Cannot increment the log start offset to {target} of partition"
                f" {self.topic}-{self.index} since it is larger than the high watermark {hw}"
            )
        self.log.delete_records_before(target)
        self.cache.truncate_from_start(self.log.log_start_offset)
        return self.log.log_start_offset
