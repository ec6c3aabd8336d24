"""A producer batch: the records on their way to one partition, sent as one.

The producer never sends a record alone. Each record joins the open `ProducerBatch` of its
partition (Kafka's `ProducerBatch`), and the batch travels as a unit: one v2 record batch
(`kafka_ref.record.batch`) in one Produce request, answered with one base offset. This
module is the batch itself; the queues of batches and when they leave are the record
accumulator's (accumulator.py).

**Filling** (CLIENT-5). A record is not encoded when it joins: the batch is encoded once,
when it is drained. To know whether a record still fits under `batch.size`, the batch adds
up an *upper bound* of each record's encoded size, `estimate_size` (Kafka:
`DefaultRecord.sizeInUpperBound`; a seam, kafka_ref/seams.py, that lab 09 replaces): five
varints and the attributes at most, the key, the value and the headers. A first record
always fits, so a record larger than batch.size gets a batch of its own. An estimate
below the real size would let batches outgrow batch.size; one far above it leaves room
unused.

**Closing** (CLIENT-6). `close()` encodes the batch once, compressed with the producer's
codec as a whole, so the codec sees the repetition between records. A closed batch takes
no more records. With idempotence it carries the producer id, epoch and base sequence the
transaction manager gave it at drain (IPROD-2); if an epoch bump renumbers a batch in
flight, it is encoded again, since the CRC covers those fields (`reset_producer_state`).

**Completing.** Every record's future completes when its batch does: offset = the batch's
base offset (assigned by the broker) + the record's index in the batch, or the batch's
error for each of them (`done`). A batch that has waited longer than
`delivery.timeout.ms` since it was created has `expired`.

Spec rules: CLIENT-5, CLIENT-6 (spec/client.md); IPROD-2 (spec/idempotent_producer.md).
"""

from __future__ import annotations

import concurrent.futures
import logging
import threading
from collections.abc import Callable
from typing import NamedTuple

from kafka_ref.client.cluster_view import TopicPartition
from kafka_ref.client.idempotence import NO_PRODUCER, ProducerIdAndEpoch
from kafka_ref.record.batch import HEADER_SIZE, build_batch
from kafka_ref.record.compression import Compression
from kafka_ref.record.record import Header, Record
from kafka_ref.seams import seam

log = logging.getLogger("kafka_ref.client")

Callback = Callable[["RecordMetadata | None", "Exception | None"], None]


class RecordMetadata(NamedTuple):
    """Where a record landed: what a producer's future resolves to."""

    topic: str
    partition: int
    offset: int  # -1 with acks=0: the broker does not say
    timestamp: int  # the create time, or the broker's time on a LogAppendTime topic
    serialized_key_size: int = -1
    serialized_value_size: int = -1


class FutureRecordMetadata(concurrent.futures.Future):
    """A `concurrent.futures.Future` of a `RecordMetadata` (Kafka's FutureRecordMetadata)."""


@seam
def estimate_size(key: bytes | None, value: bytes | None, headers: tuple[Header, ...]) -> int:
    """An upper bound of a record's encoded size (Kafka: DefaultRecord.sizeInUpperBound):
    whether a record still fits in its batch's batch.size is decided with it (CLIENT-5; a
    seam, kafka_ref/seams.py, that lab 09 replaces with a student's code)."""
    size = 21 + len(key or b"") + len(value or b"")  # 5 varints and attributes, at most
    for header in headers:
        size += 10 + len(header.key.encode("utf-8", "surrogateescape")) + len(header.value or b"")
    return size


class ProducerBatch:
    """Records on their way to one partition, sent together (Kafka's ProducerBatch)."""

    def __init__(
        self,
        tp: TopicPartition,
        capacity: int,
        compression: Compression,
        now: int,
        *,
        transactional: bool = False,
    ) -> None:
        self.tp, self.capacity, self.compression = tp, capacity, compression
        self.transactional = transactional  # the batch header's transactional bit
        self.created_ms = self.last_attempt_ms = now
        self.records: list[Record] = []
        self.thunks: list[tuple[FutureRecordMetadata, Callback | None]] = []
        self.estimated_size = HEADER_SIZE
        self.attempts = 0
        self.built: bytes | None = None  # the encoded v2 batch, once drained
        self.completed = threading.Event()
        self.producer, self.base_sequence = NO_PRODUCER, -1  # set when drained (idempotence)
        self.sent_as: tuple[ProducerIdAndEpoch, int] | None = None  # ... as last sent

    def try_append(self, record: Record, callback: Callback | None) -> FutureRecordMetadata | None:
        """Add a record if it fits (a first record always does); None if it does not."""
        size = estimate_size(record.key, record.value, record.headers)
        if self.built is not None or (self.records and self.estimated_size + size > self.capacity):
            return None
        self.records.append(record)
        future = FutureRecordMetadata()
        self.thunks.append((future, callback))
        self.estimated_size += size
        return future

    @property
    def is_full(self) -> bool:
        return self.built is not None or self.estimated_size >= self.capacity

    @property
    def record_count(self) -> int:
        return len(self.records)

    @property
    def last_sequence(self) -> int:
        """The sequence of the last record (wrapping past int32 max, like the base)."""
        last = self.base_sequence + self.record_count - 1
        return last - 2**31 if last > 2**31 - 1 else last

    def set_producer_state(self, producer: ProducerIdAndEpoch, base_sequence: int) -> None:
        self.producer, self.base_sequence = producer, base_sequence

    @property
    def answer_is_stale(self) -> bool:
        """Was the attempt being answered sent before an epoch bump renumbered the batch?"""
        return self.sent_as is not None and self.sent_as != (self.producer, self.base_sequence)

    def reset_producer_state(self, producer: ProducerIdAndEpoch, base_sequence: int) -> None:
        """A new epoch renumbered this in-flight batch: re-encode it (the CRC covers both)."""
        self.set_producer_state(producer, base_sequence)
        if self.built is not None:
            self.built = None
            self.close()

    def close(self) -> bytes:
        """Encode the batch (once): a v2 record batch, compressed as configured (CLIENT-6)."""
        if self.built is None:
            self.built = build_batch(
                self.records,
                compression=self.compression,
                producer_id=self.producer.producer_id,
                producer_epoch=self.producer.epoch,
                base_sequence=self.base_sequence,
                is_transactional=self.transactional,
            )
        return self.built

    def done(self, base_offset: int, log_append_time: int, error: Exception | None = None) -> bool:
        """Complete every record's future (and callback); False if already completed."""
        if self.completed.is_set():
            return False
        for index, (record, (future, callback)) in enumerate(
            zip(self.records, self.thunks, strict=True)
        ):
            metadata = None
            if error is None:
                metadata = RecordMetadata(
                    self.tp.topic,
                    self.tp.partition,
                    base_offset + index if base_offset >= 0 else -1,
                    log_append_time if log_append_time >= 0 else record.timestamp,
                    len(record.key) if record.key is not None else -1,
                    len(record.value) if record.value is not None else -1,
                )
            if callback is not None:
                try:
                    callback(metadata, error)
                except Exception:  # a user's bug must not kill the sender thread
                    log.exception("error in a producer callback for %s", self.tp)
            if error is None:
                future.set_result(metadata)
            else:
                future.set_exception(error)
        self.completed.set()
        return True

    def expired(self, delivery_timeout_ms: int, now: int) -> bool:
        return now - self.created_ms >= delivery_timeout_ms
