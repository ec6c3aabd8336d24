"""Has a newer epoch carry on from the last sequence instead of starting at 0 (IDEM-6)."""

from __future__ import annotations

from kafka_ref.errors import (
    InvalidProducerEpochError,
    InvalidRecordError,
    OutOfOrderSequenceError,
    UnknownProducerIdError,
)
from kafka_ref.log.producer_entry import BatchMetadata, ProducerStateEntry
from kafka_ref.record.batch import BatchHeader

WRAP = 2**31  # sequences wrap after 2**31 - 1 to 0


def check_client_batch(
    pid: int, entry: ProducerStateEntry | None, header: BatchHeader
) -> BatchMetadata | None:
    epoch, first = header.producer_epoch, header.base_sequence
    if first < 0 or epoch < 0:
        raise InvalidRecordError(f"producer {pid}: sequence {first} and epoch {epoch} must be >= 0")
    if entry is None:
        if first == 0:
            return None
        raise UnknownProducerIdError(
            f"producer {pid} has no state here; it starts at {first}, not 0"
        )
    if epoch < entry.producer_epoch:
        raise InvalidProducerEpochError(
            f"producer {pid}: epoch {epoch} is older than {entry.producer_epoch}"
        )
    previous = entry.batches[-1].last_seq if entry.batches else -1
    if epoch > entry.producer_epoch:
        if first == (previous + 1) % WRAP:
            return None
        raise OutOfOrderSequenceError(f"producer {pid}: new epoch {epoch} starts at {first}")
    previous = entry.batches[-1].last_seq if entry.batches else -1
    if first == (previous + 1) % WRAP:
        return None
    last = (first + header.last_offset_delta) % WRAP  # the batch's last sequence, wrapped
    for batch in entry.batches:
        if batch.first_seq == first and batch.last_seq == last:
            return batch
    raise OutOfOrderSequenceError(f"producer {pid}: sequence {first} does not follow {previous}")
