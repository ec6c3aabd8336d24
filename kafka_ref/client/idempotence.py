"""The idempotent producer: producer id, epoch and one sequence number per partition.

A producer that retries can write a record twice: the broker appended the batch, the
answer got lost, the producer sent the batch again. With `enable.idempotence` the broker
can tell (KIP-98). The producer asks once for a **producer id** (PID) with an
**InitProducerId** request (null transactional id, any broker) and gets epoch 0. Every batch
then carries, in its v2 header, the PID, the epoch and a **base sequence**: the number of
its first record in the stream of records this producer sent to this partition. The
partition leader remembers the last five batches of each PID (kafka_ref/log/producer_state.py)
and answers a resent one with its original offsets instead of appending it again.

    partition clicks-0     batch A        batch B         batch C
    records                0..9           10..24          25..25
    baseSequence           0              10              25      (next sequence: 26)

This module is the idempotent half of Kafka's `TransactionManager`; the transactional half,
built on it, is transaction_manager.py. It is called by the Sender thread only, and holds:

* `producer_id_and_epoch` (a `ProducerIdAndEpoch`) - from InitProducerId, which the
  transaction manager sends; until it arrives nothing is drained.
* per partition (`PartitionEntry`, Kafka's `TxnPartitionEntry`): the PID/epoch its sequences
  belong to, the next sequence, the last acknowledged sequence, and the *in-flight* batches:
  drained, with a sequence, not yet completed (sent, or back in the queue for a retry).

**Sequences are assigned when a batch is drained** (`assign_sequence`, called from
`RecordAccumulator.drain`): baseSequence = the partition's next sequence, which then grows by
the record count, wrapping from 2**31-1 to 0 (IPROD-2). A batch keeps its sequence for
every retry and is resent byte for byte (IPROD-3).

**Order across retries** (IPROD-4). Up to five batches per partition may be in flight
(`max.in.flight.requests.per.connection` <= 5, and the broker remembers five batches). If
one fails, the broker answers the ones behind it with OUT_OF_ORDER_SEQUENCE_NUMBER (it sees a
gap); they are retried too. A retried batch goes back into its queue *in sequence order*
(`insert_in_sequence_order`) and may only leave when it is the partition's first in-flight
batch (`should_stop_drain`): retries go one at a time, lowest sequence first, and new
batches wait behind them.

**Epoch bump** (KIP-360, IPROD-5). Two answers to the batch that *is* the next expected
one (last acked sequence + 1) mean the broker's and the producer's views of the sequence
disagree for good (for an idempotent producer; a transactional one aborts instead, see
transaction_manager.py):
* OUT_OF_ORDER_SEQUENCE_NUMBER: a real gap, records were lost between;
* UNKNOWN_PRODUCER_ID: the partition lost the producer's state (it expired, or the log was
  deleted). (Java bumps on this answer for any batch; see `can_retry` for why we do not.)
A batch with a sequence that fails for good (retries or delivery.timeout.ms exhausted, a
non-retriable error) leaves a gap as well. In each case the Java idempotent producer, and
this one, **bumps the epoch locally** - epoch + 1 with the same producer id, no request:
an idempotent producer owns its PID alone, and a broker accepts a newer epoch starting
at sequence 0. For the partitions that hit the error, the batches still in flight are
renumbered from 0 under the new epoch, in their order (`start_sequences_at_beginning`),
and retried. Every other partition keeps its old epoch until its own in-flight batches are
done, then starts over at sequence 0 with the new epoch (`assign_sequence`); no new batch is
drained there before that. At epoch 32767 the producer id is dropped instead and a fresh
InitProducerId fetches a new one (on a v3+ broker the Java client sends its PID and epoch in
InitProducerId for the bump; an idempotent producer owns its id alone, and the local bump
needs no request at all - a transactional one does send it, see transaction_manager.py).
The broker's UNKNOWN_PRODUCER_ID answers carry log_start_offset -1, so the Java branch
that first compares it with the last acknowledged offset is not taken here.

Kafka: `TransactionManager` (`bumpIdempotentEpochAndResetIdIfNeeded`, `canRetry`,
`handleCompletedBatch`, `handleFailedBatch`), `TxnPartitionMap.startSequencesAtBeginning`,
`RecordAccumulator.shouldStopDrainBatchesForPartition`, `ProducerIdAndEpoch`;
`DefaultRecordBatch.incrementSequence`. KIP-98, KIP-360, KIP-679.

Spec rules: IPROD-1 .. IPROD-7 (spec/idempotent_producer.md).
"""

from __future__ import annotations

import logging
from collections import deque
from typing import NamedTuple, Protocol

from kafka_ref.common import TopicPartition
from kafka_ref.errors import ErrorCode, KafkaError
from kafka_ref.record.batch import NO_PRODUCER_EPOCH, NO_PRODUCER_ID

log = logging.getLogger("kafka_ref.client")

INT32_MAX = 2**31 - 1
EPOCH_MAX = 2**15 - 1
# The broker remembers this many batches per producer and partition (Kafka's
# ProducerStateEntry.NUM_BATCHES_TO_RETAIN); more in flight could not be deduplicated.
MAX_IN_FLIGHT_BATCHES = 5
NO_LAST_ACKED_SEQUENCE = -1
_SEQUENCE_ERRORS = (
    ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
    ErrorCode.UNKNOWN_PRODUCER_ID,
    ErrorCode.INVALID_PRODUCER_EPOCH,
)


class ProducerIdAndEpoch(NamedTuple):
    """Idempotence's identity of a producer; NO_PRODUCER until InitProducerId."""

    producer_id: int = NO_PRODUCER_ID
    epoch: int = NO_PRODUCER_EPOCH


NO_PRODUCER = ProducerIdAndEpoch()


class SequencedBatch(Protocol):
    """What the sequence bookkeeping needs of a batch (the accumulator's SequencedBatch)."""

    tp: TopicPartition
    base_sequence: int

    @property
    def record_count(self) -> int: ...
    @property
    def last_sequence(self) -> int: ...
    @property
    def answer_is_stale(self) -> bool: ...
    def set_producer_state(self, producer: ProducerIdAndEpoch, base_sequence: int) -> None: ...
    def reset_producer_state(self, producer: ProducerIdAndEpoch, base_sequence: int) -> None: ...


def increment_sequence(sequence: int, increment: int) -> int:
    """sequence + increment, wrapping past int32 max to 0 (DefaultRecordBatch.incrementSequence)."""
    if sequence > INT32_MAX - increment:
        return increment - (INT32_MAX - sequence) - 1
    return sequence + increment


def is_after(sequence: int, other: int) -> bool:
    """Does `sequence` come after `other`, allowing for the wrap (Kafka compares with `>`)?"""
    if other == NO_LAST_ACKED_SEQUENCE:
        return True
    return 0 < (sequence - other) % 2**31 < 2**30


class PartitionEntry:
    """One partition's sequence state (Kafka's TxnPartitionEntry)."""

    def __init__(self, producer: ProducerIdAndEpoch) -> None:
        self.producer = producer  # the PID/epoch this partition's sequences belong to
        self.next_sequence = 0
        self.last_acked_sequence = NO_LAST_ACKED_SEQUENCE
        self.in_flight: list[SequencedBatch] = []  # in sequence order


class IdempotentProducerState:
    """The idempotent half of Kafka's TransactionManager, owned by the Sender thread."""

    def __init__(self, *, retry_backoff_ms: int = 100) -> None:
        self.retry_backoff_ms = retry_backoff_ms
        self.producer_id_and_epoch: ProducerIdAndEpoch = NO_PRODUCER
        self.partitions: dict[TopicPartition, PartitionEntry] = {}
        self.epoch_bump_required = False
        self._partitions_to_rewrite: set[TopicPartition] = set()
        self.fatal_error: KafkaError | None = None

    @property
    def has_producer_id(self) -> bool:
        return self.producer_id_and_epoch.producer_id >= 0

    def entry(self, tp: TopicPartition) -> PartitionEntry:
        if tp not in self.partitions:
            self.partitions[tp] = PartitionEntry(self.producer_id_and_epoch)
        return self.partitions[tp]

    # -- the producer id ----------------------------------------------------------------

    def set_producer_id_and_epoch(self, producer: ProducerIdAndEpoch) -> None:
        """InitProducerId answered: batches still in flight are renumbered under the new id."""
        log.info("producer id %d, epoch %d", producer.producer_id, producer.epoch)
        self.producer_id_and_epoch = producer
        for tp, entry in self.partitions.items():  # after a reset at EPOCH_MAX
            if entry.in_flight:
                self.start_sequences_at_beginning(tp)

    def bump_idempotent_epoch_and_reset_id_if_needed(self) -> None:
        """Apply a requested epoch bump (IPROD-5); the Sender calls this every loop."""
        if not self.epoch_bump_required:
            return
        pid, epoch = self.producer_id_and_epoch
        if epoch >= EPOCH_MAX:  # the epoch would overflow: a fresh producer id instead
            self.producer_id_and_epoch = NO_PRODUCER
        else:
            self.producer_id_and_epoch = ProducerIdAndEpoch(pid, epoch + 1)
            log.info("bumped the producer epoch to %d (producer id %d)", epoch + 1, pid)
        if self.has_producer_id:
            for tp in self._partitions_to_rewrite:
                self.start_sequences_at_beginning(tp)
        self._partitions_to_rewrite.clear()
        self.epoch_bump_required = False

    def request_epoch_bump(self, tp: TopicPartition) -> None:
        self.epoch_bump_required = True
        self._partitions_to_rewrite.add(tp)

    def start_sequences_at_beginning(self, tp: TopicPartition) -> None:
        """Renumber `tp`'s in-flight batches from 0 under the current PID/epoch, in order."""
        entry, sequence = self.entry(tp), 0
        for batch in entry.in_flight:
            batch.reset_producer_state(self.producer_id_and_epoch, sequence)
            sequence = increment_sequence(sequence, batch.record_count)
        entry.producer = self.producer_id_and_epoch
        entry.next_sequence = sequence
        entry.last_acked_sequence = NO_LAST_ACKED_SEQUENCE

    # -- drain ------------------------------------------------------------------------

    def should_stop_drain(self, batch: SequencedBatch) -> bool:
        """May `batch`, the first of its queue, not leave now? (IPROD-4)"""
        if not self.has_producer_id:
            return True
        entry = self.entry(batch.tp)
        if batch.base_sequence < 0:  # a new batch
            if entry.in_flight and entry.producer != self.producer_id_and_epoch:
                return True  # older-epoch batches still in flight: let them finish first
            return len(entry.in_flight) >= MAX_IN_FLIGHT_BATCHES
        # a retry: only the lowest in-flight sequence may go (one retry at a time)
        return bool(entry.in_flight) and entry.in_flight[0] is not batch

    def assign_sequence(self, batch: SequencedBatch) -> None:
        """Stamp a newly drained batch with PID, epoch and the next sequence (IPROD-2)."""
        if batch.base_sequence >= 0:
            return  # a retry keeps its sequence (IPROD-3)
        entry = self.entry(batch.tp)
        if entry.producer != self.producer_id_and_epoch:  # new epoch, no batch in flight
            entry.producer = self.producer_id_and_epoch
            entry.next_sequence, entry.last_acked_sequence = 0, NO_LAST_ACKED_SEQUENCE
        batch.set_producer_state(self.producer_id_and_epoch, entry.next_sequence)
        entry.next_sequence = increment_sequence(entry.next_sequence, batch.record_count)
        entry.in_flight.append(batch)

    def insert_in_sequence_order(self, queue: deque[SequencedBatch], batch: SequencedBatch) -> None:
        """Requeue a retried batch before every queued batch with a higher sequence."""
        order = self.entry(batch.tp).in_flight
        if batch not in order:
            queue.appendleft(batch)
            return
        rank = order.index(batch)
        index = 0
        while index < len(queue) and queue[index] in order and order.index(queue[index]) < rank:
            index += 1
        queue.insert(index, batch)

    # -- answers ----------------------------------------------------------------------

    def handle_completed_batch(self, batch: SequencedBatch) -> None:
        """Success, or DUPLICATE_SEQUENCE_NUMBER (the broker has it already, IPROD-6)."""
        entry = self.entry(batch.tp)
        if batch not in entry.in_flight:
            return
        entry.in_flight.remove(batch)
        if batch.answer_is_stale:
            # The attempt sent before a bump was written after all (its predecessor expired
            # after being written, say). The batches behind it were renumbered as if it would
            # be resent in the new epoch: number them afresh under yet another epoch.
            self.request_epoch_bump(batch.tp)
        elif is_after(batch.last_sequence, entry.last_acked_sequence):
            # (answers may come out of order: a batch behind a failed one can succeed when
            # the broker had the failed one after all, from an attempt whose answer was lost)
            entry.last_acked_sequence = batch.last_sequence

    def is_next_expected(self, batch: SequencedBatch) -> bool:
        """Is `batch` the one the broker expects next (last acknowledged sequence + 1)?"""
        last_acked = self.entry(batch.tp).last_acked_sequence
        return batch.base_sequence == increment_sequence(last_acked, 1)

    def can_retry(self, batch: SequencedBatch, error: ErrorCode) -> bool:
        """Kafka's TransactionManager.canRetry for an idempotent producer (IPROD-4, IPROD-5).

        Kafka tells an answer to an attempt from before a bump by `sequenceHasBeenReset`;
        kafka-ref compares the numbering the attempt was sent with (`answer_is_stale`).
        Kafka bumps on every UNKNOWN_PRODUCER_ID; kafka-ref, as for OUT_OF_ORDER, only when
        the batch is the next expected one: a broker without state answers the batches
        behind a rejected one the same way, and a bump then could renumber a batch whose
        retry is on its way - and written twice (the randomized test found this)."""
        if batch.answer_is_stale and error in _SEQUENCE_ERRORS:
            return True  # about the old numbering: resend with the new one
        if error in (ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, ErrorCode.UNKNOWN_PRODUCER_ID):
            if self.is_next_expected(batch):
                self.request_epoch_bump(batch.tp)  # the next expected batch: a real gap
            return True  # otherwise a batch ahead of it failed: retry, in order
        return error.retriable

    def handle_failed_batch(self, batch: SequencedBatch) -> None:
        """A batch failed for good; if it had a sequence, its gap needs a new epoch (IPROD-5)."""
        entry = self.entry(batch.tp)
        if batch in entry.in_flight:
            entry.in_flight.remove(batch)
            self.request_epoch_bump(batch.tp)
