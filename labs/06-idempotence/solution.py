"""Lab 06, idempotence: your broker-side sequence check.

Replace the `raise NotImplementedError` with your code, then grade it:

    kafka-ref lab check 06

`check_client_batch` takes the place of kafka-ref's own of the same name in
kafka_ref/log/producer_entry.py whenever KAFKA_REF_SOLUTION names this file (the grader sets
it): every partition log, in a test and in a real broker, then asks your check of every
batch an idempotent or transactional producer sends, before a byte is written. The errors,
`BatchMetadata` and the sequence helpers imported below are yours to use. From kafka_ref you
may import anything but the modules that hold these functions (beyond the names this file
imports from them): `kafka-ref lab check` refuses a solution that reaches kafka-ref's own
code of them (LAB-5).
"""

from __future__ import annotations

from kafka_ref.errors import (  # noqa: F401  (the errors your check raises)
    InvalidProducerEpochError,
    InvalidRecordError,
    OutOfOrderSequenceError,
    UnknownProducerIdError,
)
from kafka_ref.log.producer_entry import (  # noqa: F401  (the sequence helpers are yours to use)
    BatchMetadata,
    ProducerStateEntry,
    in_sequence,
    increment_sequence,
    last_sequence_of,
)
from kafka_ref.record.batch import BatchHeader


def check_client_batch(
    pid: int, entry: ProducerStateEntry | None, header: BatchHeader
) -> BatchMetadata | None:
    """Check one producer batch on the leader against the producer's state (IDEM-2..IDEM-8;
    Kafka `ProducerAppendInfo.checkProducerEpoch`, `checkSequence`,
    `ProducerStateEntry.findDuplicateBatch`).

    `pid`: the batch's producer id (>= 0). `entry`: what the partition remembers of that
    producer, None if nothing: `entry.producer_epoch`, and `entry.batches`, its last (at
    most five) batches, oldest first, each a `BatchMetadata` with `first_seq`, `last_seq`,
    `first_offset` and `last_offset`. `header`: the new batch's header:
    `header.producer_epoch`, `header.base_sequence` (its first record's sequence) and
    `header.last_offset_delta` (records - 1).

    Sequences count per partition from 0 and wrap after 2**31 - 1 to 0: the batch's last
    sequence is its base sequence + last_offset_delta, wrapped, and the sequence after
    2**31 - 1 is 0. Return None to append the batch, or the remembered `BatchMetadata` it
    duplicates; otherwise raise, in this order of checks:

    1. a negative base sequence or epoch: `InvalidRecordError`;
    2. no entry: a batch starting at sequence 0 is appended; any other is
       `UnknownProducerIdError`;
    3. an epoch below the entry's: `InvalidProducerEpochError` (a fenced zombie);
    4. an epoch above the entry's: appended if it starts at sequence 0, else
       `OutOfOrderSequenceError`;
    5. the same epoch: appended when its base sequence follows the producer's last sequence
       (that of its newest remembered batch; -1 when none is remembered); a duplicate when
       its first and last sequence are those of one of the remembered batches (return that
       batch: the broker answers with its original offsets and writes nothing); else
       `OutOfOrderSequenceError`.

    Each error takes a message: say what was wrong, a producer reads it.
    """
    raise NotImplementedError
