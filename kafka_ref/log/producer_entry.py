"""One producer's state in one partition, and the checks a new batch must pass against it.

An idempotent producer (KIP-98) writes three numbers into every batch header: its
**producer id** (PID, from InitProducerId), its **epoch** (raised by a newer incarnation
of the same producer, which fences the older "zombie"), and the **base sequence**, the
number of the batch's first record, counted per partition from 0 and wrapping after
2^31-1 to 0. The last record's sequence is base sequence + lastOffsetDelta.

For each producer id a partition keeps a `ProducerStateEntry`: the epoch and the
`BatchMetadata` of the last five batches (last sequence and offset, how many offsets the
batch spans, when it was appended). Five, because a producer keeps at most five requests
in flight per connection (Kafka: `ProducerStateEntry.NUM_BATCHES_TO_RETAIN`).

`check_client_batch` (a seam, kafka_ref/seams.py, that lab 06 replaces with a student's
code) is what the leader asks of a producer's batch before anything is written (Kafka:
`ProducerAppendInfo.checkProducerEpoch`, `checkSequence`, and
`ProducerStateEntry.findDuplicateBatch`):

* same epoch, first sequence = last sequence + 1: in order, appended (IDEM-2);
* same epoch, the same first and last sequence as one of the five: a **duplicate**; the
  append writes nothing and answers the *original* offsets (IDEM-3);
* same epoch, anything else: OUT_OF_ORDER_SEQUENCE_NUMBER (IDEM-4);
* an older epoch: INVALID_PRODUCER_EPOCH (IDEM-5); a newer epoch must start at 0 (IDEM-6);
* a producer id without state: only sequence 0 starts it, anything else is
  UNKNOWN_PRODUCER_ID (IDEM-7; Kafka 2.x, see spec/idempotence.md for Kafka 2.5+);
* a producer id with a negative sequence or epoch: INVALID_RECORD (IDEM-8).

Who appends decides what is checked (`AppendOrigin`, validator.py): a client gets every check (and a
producer inside a transaction must write transactional batches, TXN-2), the transaction
coordinator's markers the producer and coordinator epoch checks only (TXN-3), a follower
none (IDEM-11).

"Append time" is the broker's clock when a batch was appended. A copied or replayed batch
carries no such time unless the topic uses LogAppendTime, so `append_time` uses the time
of the copy or replay: a producer is never forgotten earlier than
producer.id.expiration.ms after its last batch (IDEM-14). Kafka uses the batch's max
timestamp, the producer's clock under CreateTime, so a producer writing old timestamps
expires at once.

Rules: IDEM-2..IDEM-8, IDEM-11, IDEM-14.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from kafka_ref.errors import (
    ErrorCode,
    InvalidProducerEpochError,
    InvalidRecordError,
    KafkaError,
    OutOfOrderSequenceError,
    UnknownProducerIdError,
)
from kafka_ref.record.batch import BatchHeader, TimestampType
from kafka_ref.seams import seam


class InvalidTxnStateError(KafkaError):
    """A producer with an open transaction writes a non-transactional batch (Kafka:
    InvalidTxnStateException)."""

    code = ErrorCode.INVALID_TXN_STATE


class TransactionCoordinatorFencedError(KafkaError):
    """A marker from an older coordinator epoch than the last one seen for the producer."""

    code = ErrorCode.TRANSACTION_COORDINATOR_FENCED


NUM_BATCHES_TO_RETAIN = 5  # Kafka: ProducerStateEntry.NUM_BATCHES_TO_RETAIN
INT32_MAX = 2**31 - 1
NO_SEQUENCE = NO_EPOCH = -1


def increment_sequence(sequence: int, increment: int) -> int:
    """sequence + increment, wrapping after 2^31-1 to 0 (Kafka: incrementSequence)."""
    if sequence > INT32_MAX - increment:
        return increment - (INT32_MAX - sequence) - 1
    return sequence + increment


def decrement_sequence(sequence: int, decrement: int) -> int:
    if sequence < decrement:
        return INT32_MAX - (decrement - sequence) + 1
    return sequence - decrement


def in_sequence(last_sequence: int, next_sequence: int) -> bool:
    """Is `next_sequence` the one after `last_sequence` (IDEM-2, with the wrap)?"""
    return next_sequence == last_sequence + 1 or (next_sequence == 0 and last_sequence == INT32_MAX)


def last_sequence_of(header: BatchHeader) -> int:
    return increment_sequence(header.base_sequence, header.last_offset_delta)


@dataclass(frozen=True, slots=True)
class BatchMetadata:
    """One remembered batch (Kafka: `BatchMetadata`): last sequence and offset, and span."""

    last_seq: int
    last_offset: int
    offset_delta: int
    timestamp: int

    @property
    def first_seq(self) -> int:
        return decrement_sequence(self.last_seq, self.offset_delta)

    @property
    def first_offset(self) -> int:
        return self.last_offset - self.offset_delta


@dataclass(slots=True)
class ProducerStateEntry:
    """One producer id's state in one partition (Kafka: `ProducerStateEntry`)."""

    producer_id: int
    producer_epoch: int = NO_EPOCH
    batches: deque[BatchMetadata] = field(
        default_factory=lambda: deque(maxlen=NUM_BATCHES_TO_RETAIN)
    )
    last_timestamp: int = -1
    coordinator_epoch: int = -1  # the coordinator epoch of the last marker (TXN-3)
    current_txn_first_offset: int = -1  # first offset of the open transaction, or -1 (TXN-2)

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else NO_SEQUENCE

    def find_duplicate(self, epoch: int, first_seq: int, last_seq: int) -> BatchMetadata | None:
        if epoch != self.producer_epoch:
            return None
        for batch in self.batches:
            if batch.first_seq == first_seq and batch.last_seq == last_seq:
                return batch
        return None

    def update_epoch(self, epoch: int, timestamp: int) -> None:
        if epoch != self.producer_epoch:  # a new epoch forgets the old epoch's batches
            self.producer_epoch = epoch
            self.batches.clear()
        self.last_timestamp = max(self.last_timestamp, timestamp)

    def add_batch(self, epoch: int, batch: BatchMetadata) -> None:
        self.update_epoch(epoch, batch.timestamp)
        self.batches.append(batch)  # the deque drops the oldest beyond five

    def copy(self) -> ProducerStateEntry:
        return ProducerStateEntry(
            self.producer_id,
            self.producer_epoch,
            deque(self.batches, NUM_BATCHES_TO_RETAIN),
            self.last_timestamp,
            self.coordinator_epoch,
            self.current_txn_first_offset,
        )

    def key(self) -> tuple:
        """Everything but the times: what a rebuild from the log must reproduce."""
        spans = [(b.first_seq, b.last_seq, b.first_offset, b.last_offset) for b in self.batches]
        return (self.producer_id, self.producer_epoch, tuple(spans))


def append_time(header: BatchHeader, now: int) -> int:
    """A copied or replayed batch's append time: its own under LogAppendTime, else `now`."""
    if header.timestamp_type == TimestampType.LOG_APPEND_TIME:
        return header.max_timestamp
    return now


def apply_batch(entry: ProducerStateEntry, header: BatchHeader, base_offset: int, ts: int) -> None:
    if header.is_control or header.base_sequence < 0:  # a marker: epoch only, no sequence
        entry.update_epoch(header.producer_epoch, ts)
        return
    delta = header.last_offset_delta
    batch = BatchMetadata(last_sequence_of(header), base_offset + delta, delta, ts)
    entry.add_batch(header.producer_epoch, batch)


@seam
def check_client_batch(
    pid: int, entry: ProducerStateEntry | None, header: BatchHeader
) -> BatchMetadata | None:
    """IDEM-2..IDEM-8 for one client batch: raise, or return the batch it duplicates."""
    epoch, first = header.producer_epoch, header.base_sequence
    if first < 0 or epoch < 0:
        raise InvalidRecordError(
            f"producer {pid}: a batch with a producer id needs a sequence and an epoch,"
            f" got sequence {first}, epoch {epoch}"
        )
    if entry is None:
        if first != 0:
            raise UnknownProducerIdError(
                f"no state for producer {pid} (expired or deleted with the log); its first"
                f" batch here has sequence {first}, not 0"
            )
        return None
    check_epoch(pid, entry, epoch)
    if epoch > entry.producer_epoch:
        if first != 0:
            raise OutOfOrderSequenceError(
                f"producer {pid}: a new epoch {epoch} must start at sequence 0, not {first}"
            )
        return None
    if in_sequence(entry.last_seq, first):  # the usual case: the next batch
        return None
    duplicate = entry.find_duplicate(epoch, first, last_sequence_of(header))
    if duplicate is not None:
        return duplicate
    raise OutOfOrderSequenceError(
        f"producer {pid} epoch {epoch}: sequence {first} does not follow {entry.last_seq}"
    )


def check_txn_batch(pid: int, entry: ProducerStateEntry | None, header: BatchHeader) -> None:
    """A producer inside a transaction writes transactional batches only (TXN-2)."""
    if header.is_transactional or entry is None or entry.current_txn_first_offset < 0:
        return
    raise InvalidTxnStateError(
        f"producer {pid} has a transaction open since offset {entry.current_txn_first_offset}"
        " and writes a non-transactional batch"
    )


def check_marker(pid: int, entry: ProducerStateEntry | None, epoch: int, coord_epoch: int) -> None:
    """A marker may not come from an older producer epoch or coordinator epoch (TXN-3)."""
    check_epoch(pid, entry, epoch)
    if entry is not None and coord_epoch < entry.coordinator_epoch:
        raise TransactionCoordinatorFencedError(
            f"marker for producer {pid} from coordinator epoch {coord_epoch}, older than"
            f" {entry.coordinator_epoch}"
        )


def check_epoch(pid: int, entry: ProducerStateEntry | None, epoch: int) -> None:
    if entry is not None and epoch < entry.producer_epoch:
        raise InvalidProducerEpochError(
            f"producer {pid} has epoch {epoch}, older than the current {entry.producer_epoch}"
        )
