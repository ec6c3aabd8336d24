"""The record accumulator: where a producer's records wait to become batches.

`producer.send()` does not send anything. It appends the record to a *batch* for its
partition in the **RecordAccumulator** and returns a future at once; a background thread,
the **Sender**, later takes whole batches out and ships them, many partitions per Produce
request. Batching is the producer's main lever on throughput: one request carries
thousands of records, and a codec compresses a whole batch as one blob (v2 record batches,
`kafka_ref.record.batch`), seeing the repetition between records.

The structure is one queue (deque) of `ProducerBatch`es per partition:

    clicks-0: [batch 16 KiB full] [batch 9 KiB filling]   <- append goes to the last one
    clicks-1: [batch 2 KiB filling]

Two settings decide when a batch may leave (`ready`, Kafka's `RecordAccumulator.ready`):

* `batch.size` (16384 bytes): a batch that is full - or any batch that is not the last of
  its queue - is sendable at once. A record larger than batch.size gets a batch of its own.
* `linger.ms`: a batch that is not full waits at most this long for company. 0 sends as
  soon as the sender looks; a few ms trade a little latency for much larger batches.

Also sendable at once: everything during `flush()` or `close()`, and everything when the
memory (`buffer.memory`) is exhausted and `send()` is blocked waiting for room. The rule is
one function, `batch_is_sendable`, a seam that lab 02 replaces (kafka_ref/seams.py).

The sender asks `ready(cluster)` which *brokers* have a sendable batch, then `drain`s,
for each such broker, the first batch of every partition it leads, up to
`max.request.size` per request. Draining closes a batch: it is encoded as a v2 record
batch (with the codec), and the partition's next record starts a new batch - which is the
moment the sticky partitioner moves on (KIP-480, partitioner.py). A batch that failed
with a retriable error goes back to the *front* of its queue (`reenqueue`) and waits
`retry.backoff.ms` before it may be drained again. A batch that has waited longer than
`delivery.timeout.ms` since it was created expires with a timeout.

The batches themselves, how records join one, how it is encoded and how its records'
futures complete, are producer_batch.py's.

With `enable.idempotence`, `drain` asks the transaction manager (transaction_manager.py)
whether a partition's first batch may leave (for a transactional producer: only once the
partition is in the transaction), and stamps a new batch with the producer id, epoch and
the partition's next sequence number before encoding it; `reenqueue` puts a retried batch
back in sequence order. A transactional producer's batches carry the transactional bit,
and an abort fails the batches never drained (`abort_undrained_batches`).

Spec rules: CLIENT-4, CLIENT-5, CLIENT-6, CLIENT-7, CLIENT-8 (spec/client.md);
IPROD-2, IPROD-3, IPROD-4 (spec/idempotent_producer.md).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from typing import TYPE_CHECKING, NamedTuple

from kafka_ref.client.cluster_view import Cluster, TopicPartition
from kafka_ref.client.producer_batch import (
    Callback,
    FutureRecordMetadata,
    ProducerBatch,
    estimate_size,
)
from kafka_ref.errors import ErrorCode, KafkaError
from kafka_ref.record.batch import HEADER_SIZE
from kafka_ref.record.compression import Compression
from kafka_ref.record.record import Record
from kafka_ref.seams import seam

if TYPE_CHECKING:
    from kafka_ref.client.transaction_manager import TransactionManager


class RecordAppendResult(NamedTuple):
    future: FutureRecordMetadata | None
    batch_is_full: bool  # wake the sender: something is sendable now
    new_batch_created: bool
    abort_for_new_batch: bool  # the sticky partitioner should pick again (KIP-480)


class ReadyCheckResult(NamedTuple):
    ready_nodes: set[int]
    next_ready_check_delay_ms: int
    unknown_leader_topics: set[str]


@seam
def batch_is_sendable(full: bool, waited_ms: int, linger_ms: int, forced: bool) -> bool:
    """May a partition's first batch leave now? (CLIENT-5; Kafka `RecordAccumulator.ready`)

    `full`: the batch is full, or another batch waits behind it; `waited_ms`: since it was
    created (or last tried); `linger_ms`: how long a batch that is not full may wait for
    company; `forced`: a flush or close is in progress, or `send()` waits for memory."""
    return full or waited_ms >= linger_ms or forced


class RecordAccumulator:
    """Per-partition queues of batches, shared by `send()` and the Sender thread."""

    def __init__(
        self,
        *,
        batch_size: int = 16_384,
        compression: Compression = Compression.NONE,
        linger_ms: int = 5,
        retry_backoff_ms: int = 100,
        delivery_timeout_ms: int = 120_000,
        buffer_memory: int = 33_554_432,
        transaction_manager: TransactionManager | None = None,
    ) -> None:
        self.batch_size, self.compression, self.linger_ms = batch_size, compression, linger_ms
        self.retry_backoff_ms, self.delivery_timeout_ms = retry_backoff_ms, delivery_timeout_ms
        self.buffer_memory, self.transaction_manager = buffer_memory, transaction_manager
        self._batches: dict[TopicPartition, deque[ProducerBatch]] = {}
        self._incomplete: set[ProducerBatch] = set()
        self._muted: set[TopicPartition] = set()
        self._drain_index: dict[int, int] = {}
        self._memory_used = 0
        self._waiting_for_memory = 0
        self._flushes_in_progress = 0
        self.closed = False
        self._lock = threading.Condition()

    def append(
        self,
        tp: TopicPartition,
        record: Record,
        callback: Callback | None,
        now: int,
        *,
        abort_on_new_batch: bool = False,
        max_block_ms: int = 60_000,
    ) -> RecordAppendResult:
        """Add a record to the last batch of its partition, or start a new batch."""
        with self._lock:
            if self.closed:
                raise KafkaError("producer closed while send in progress")
            queue = self._batches.setdefault(tp, deque())
            if queue:
                future = queue[-1].try_append(record, callback)
                if future is not None:
                    return RecordAppendResult(
                        future, len(queue) > 1 or queue[-1].is_full, False, False
                    )
            if abort_on_new_batch:  # let the partitioner choose again before a new batch
                return RecordAppendResult(None, False, False, True)
            capacity = max(
                self.batch_size,
                estimate_size(record.key, record.value, record.headers) + HEADER_SIZE,
            )
            self._allocate(capacity, max_block_ms)
            tm = self.transaction_manager
            transactional = tm is not None and tm.is_transactional
            batch = ProducerBatch(tp, capacity, self.compression, now, transactional=transactional)
            future = batch.try_append(record, callback)
            queue.append(batch)
            self._incomplete.add(batch)
            return RecordAppendResult(future, len(queue) > 1 or batch.is_full, True, False)

    def _allocate(self, size: int, max_block_ms: int) -> None:
        """Reserve batch memory, waiting for the sender to free some (Kafka's BufferPool)."""
        self._waiting_for_memory += 1
        try:
            ok = self._lock.wait_for(
                lambda: self._memory_used + size <= self.buffer_memory or self._memory_used == 0,
                max_block_ms / 1000,
            )
        finally:
            self._waiting_for_memory -= 1
        if not ok:
            raise KafkaError(
                "Failed to allocate memory within the configured max blocking time "
                f"{max_block_ms} ms.",
                code=ErrorCode.REQUEST_TIMED_OUT,
            )
        self._memory_used += size

    def ready(self, cluster: Cluster, now: int) -> ReadyCheckResult:
        """Which brokers lead a partition with a sendable batch, and when to look again."""
        ready: set[int] = set()
        unknown: set[str] = set()
        next_delay = 2**31 - 1  # nothing queued: no reason to look again
        with self._lock:
            exhausted = self._waiting_for_memory > 0
            for tp, queue in self._batches.items():
                if not queue:
                    continue
                leader = cluster.leader_for(tp)
                if leader is None:
                    unknown.add(tp.topic)
                    continue
                if leader in ready or tp in self._muted:
                    continue
                first = queue[0]
                waited = now - first.last_attempt_ms
                backing_off = first.attempts > 0 and waited < self.retry_backoff_ms
                time_to_wait = self.retry_backoff_ms if backing_off else self.linger_ms
                sendable = batch_is_sendable(
                    len(queue) > 1 or first.is_full,
                    waited,
                    time_to_wait,
                    exhausted or self.closed or self._flushes_in_progress > 0,
                )
                if sendable and not backing_off:
                    ready.add(leader)
                else:
                    next_delay = min(next_delay, max(time_to_wait - waited, 0))
        return ReadyCheckResult(ready, next_delay, unknown)

    def drain(
        self, cluster: Cluster, nodes: set[int], max_request_size: int, now: int
    ) -> dict[int, list[ProducerBatch]]:
        """Take the first batch of each partition led by each node, up to max_request_size."""
        drained: dict[int, list[ProducerBatch]] = {}
        with self._lock:
            for node in nodes:
                parts = cluster.partitions_for_node(node)
                batches, size = [], 0
                start = self._drain_index.get(node, 0) % max(len(parts), 1)
                for i in range(len(parts)):  # start elsewhere each time: no partition starves
                    tp = parts[(start + i) % len(parts)]
                    queue = self._batches.get(tp)
                    if not queue or tp in self._muted:
                        continue
                    first = queue[0]
                    if first.attempts > 0 and now - first.last_attempt_ms < self.retry_backoff_ms:
                        continue
                    if batches and size + first.estimated_size > max_request_size:
                        break
                    tm = self.transaction_manager
                    if tm is not None:  # idempotence: may it go, and with which sequence?
                        if tm.should_stop_drain(first):
                            continue
                        tm.assign_sequence(first)
                    queue.popleft()
                    size += len(first.close())
                    first.sent_as = (first.producer, first.base_sequence)
                    batches.append(first)
                self._drain_index[node] = start + 1
                if batches:
                    drained[node] = batches
        return drained

    def reenqueue(self, batch: ProducerBatch, now: int) -> None:
        """Put a failed batch back at the front of its queue, to retry after the backoff."""
        with self._lock:
            batch.attempts += 1
            batch.last_attempt_ms = now
            queue = self._batches.setdefault(batch.tp, deque())
            if self.transaction_manager is not None:
                self.transaction_manager.insert_in_sequence_order(queue, batch)
            else:
                queue.appendleft(batch)

    def expired_batches(self, now: int) -> list[ProducerBatch]:
        """Batches still queued past delivery.timeout.ms: the sender fails them."""
        expired = []
        with self._lock:
            for queue in self._batches.values():
                while queue and queue[0].expired(self.delivery_timeout_ms, now):
                    expired.append(queue.popleft())
        return expired

    def deallocate(self, batch: ProducerBatch) -> None:
        """A batch is finished for good: forget it and free its memory."""
        with self._lock:
            if batch in self._incomplete:
                self._incomplete.discard(batch)
                self._memory_used -= batch.capacity
                self._lock.notify_all()

    def mute(self, tp: TopicPartition) -> None:
        """One batch at a time for `tp` (max.in.flight=1 keeps order across retries)."""
        with self._lock:
            self._muted.add(tp)

    def unmute(self, tp: TopicPartition) -> None:
        with self._lock:
            self._muted.discard(tp)

    def has_undrained(self) -> bool:
        with self._lock:
            return any(self._batches.values())

    def has_incomplete(self) -> bool:
        with self._lock:
            return bool(self._incomplete)

    def begin_flush(self) -> None:
        with self._lock:
            self._flushes_in_progress += 1

    def await_flush_completion(self, timeout_s: float | None) -> bool:
        """Wait for every batch that exists now to complete; False on timeout."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        try:
            with self._lock:
                pending = list(self._incomplete)
            for batch in pending:
                remaining = None if deadline is None else max(deadline - time.monotonic(), 0)
                if not batch.completed.wait(remaining):
                    return False
            return True
        finally:
            with self._lock:
                self._flushes_in_progress -= 1

    def abort_undrained_batches(self, error: Exception) -> None:
        """Fail the batches never drained (a transaction aborts); drained ones, retries
        among them, must still finish: the broker may have written them (Kafka's
        abortUndrainedBatches)."""
        with self._lock:
            undrained = [b for q in self._batches.values() for b in q if b.built is None]
            for queue in self._batches.values():
                for batch in undrained:
                    if batch in queue:
                        queue.remove(batch)
        for batch in undrained:
            batch.done(-1, -1, error)
            self.deallocate(batch)

    def abort_incomplete(self, error: Exception) -> None:
        """Fail every batch not yet completed (a forced close)."""
        with self._lock:
            pending = list(self._incomplete)
            for queue in self._batches.values():
                queue.clear()
        for batch in pending:
            batch.done(-1, -1, error)
            self.deallocate(batch)

    def close(self) -> None:
        """No more appends; everything queued becomes sendable at once."""
        with self._lock:
            self.closed = True
            self._lock.notify_all()
