"""Lab 09, performance: your producer's record size estimate.

Replace the `raise NotImplementedError` with your code, then grade it:

    kafka-ref lab check 09

`estimate_size` takes the place of kafka-ref's own of the same name in
kafka_ref/client/producer_batch.py whenever KAFKA_REF_SOLUTION names this file (the grader
sets it): our producer then decides with your estimate whether a record still fits in its
partition's batch, so your function sets how full every batch is, and with it how many
requests and bytes a workload costs. From kafka_ref you may import anything but the modules
that hold these functions (beyond the names this file imports from them): `kafka-ref lab
check` refuses a solution that reaches kafka-ref's own code of them (LAB-5).
"""

from __future__ import annotations

from kafka_ref.record.record import Header


def estimate_size(key: bytes | None, value: bytes | None, headers: tuple[Header, ...]) -> int:
    """An upper bound of the bytes a record takes inside a v2 record batch (Kafka
    `DefaultRecord.sizeInUpperBound`; CLIENT-5).

    The producer does not encode a record when it is sent (the batch is encoded once, when
    it is drained), so it adds up an estimate per record and starts a new batch when the
    next record's estimate would take the batch past `batch.size`. The estimate must never
    be below the record's real size, or batches outgrow batch.size; and it should not be
    much above it, or batches leave room unused and a workload needs more requests.

    A record inside a batch is (kafka_ref/record/record.py's docstring has the layout): a
    varint length, one attributes byte, the timestamp delta (varlong) and the offset delta
    (varint), the key and the value each as a varint length (-1 for None) and the bytes,
    the header count (varint), and per header its key's UTF-8 length (varint) and bytes and
    its value's length (varint, -1 for None) and bytes. A varint takes one byte per 7 bits
    of its zigzag-encoded value.

    It must be an upper bound for every record whose key, value, header keys and header
    values are each under 8 KiB, with at most 63 headers, at an offset delta below 8192
    and a timestamp delta between 0 and 2**27 ms; and at most 16 bytes + 8 bytes per
    header above the real size of any such record (Kafka's bound is within that).
    `headers` is a tuple of `Header(key: str, value: bytes | None)`.
    """
    raise NotImplementedError
