"""What a leader shows consumers and admins: reads below the HW, DeleteRecords.

A mixin of `Partition` (partition.py), kept apart because none of it is replication: it
only reads the partition's `high_watermark`, `log` and leader epoch `cache`. Consumers see
records below the HW only (REPL-2); read_committed consumers below the last stable offset
(LSO): the first offset of the oldest transaction still open, or the HW when it is lower
(kafka_ref/log/log.py, TXN-4), and with the records the aborted transactions they overlap
(TXN-8). DeleteRecords may move the log start up to
the HW, never past it (BROKER-26), and the epoch cache forgets what the log no longer has.

Rules: REPL-2, BROKER-20, BROKER-26, TXN-4, TXN-8.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_ref.errors import ErrorCode, KafkaError, OffsetOutOfRangeError
from kafka_ref.log.log import LogReadInfo
from kafka_ref.log.txn_index import AbortedTxn

if TYPE_CHECKING:
    from kafka_ref.log.log import Log
    from kafka_ref.replication.leader_epoch import LeaderEpochFileCache


class PolicyViolationError(KafkaError):
    code = ErrorCode.POLICY_VIOLATION


class ConsumerReads:
    """Consumer-facing reads of a partition (needs `topic`, `index`, `log`, `cache`,
    `high_watermark`)."""

    topic: str
    index: int
    log: Log
    cache: LeaderEpochFileCache
    high_watermark: int

    @property
    def last_stable_offset(self) -> int:
        """Bound of read_committed consumers: min(first unstable offset, HW) (TXN-4)."""
        return self.log.last_stable_offset(self.high_watermark)

    def read(
        self, offset: int, max_bytes: int, *, min_one_batch: bool, read_committed: bool = False
    ) -> LogReadInfo:
        """A consumer's read: file slices of whole batches below the HW or LSO (REPL-2)."""
        bound = self.last_stable_offset if read_committed else self.high_watermark
        return self.log.read(offset, max_bytes, max_offset=bound, min_one_batch=min_one_batch)

    def aborted_transactions(self, info: LogReadInfo) -> list[AbortedTxn]:
        """The aborted transactions a read_committed read must be told of (TXN-8)."""
        if not info.slices:
            return []
        return self.log.collect_aborted_transactions(info.fetch_offset, info.next_offset)

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
