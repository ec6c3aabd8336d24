"""Lab 09 grader: the producer's record size estimate, and the batches it makes (CLIENT-5).

Your `estimate_size` is checked against the real size of records as kafka-ref encodes
them (kafka_ref/record/record.py) on random keys, values, headers and deltas: never below,
and not far above. Then it runs in our producer: batches built by the accumulator must
stay within batch.size and hold as many records as Kafka's own bound lets in; and, end to
end, the batches a real broker stores (read back from its segment files) must too.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafka_ref.client import producer_batch
from kafka_ref.client.admin import Admin, NewTopic
from kafka_ref.client.producer import Producer
from kafka_ref.client.producer_batch import ProducerBatch
from kafka_ref.record.batch import HEADER_SIZE, iter_batch_headers
from kafka_ref.record.compression import Compression
from kafka_ref.record.record import Header, Record, encode_record

LIMIT = 8192
# Large payloads by their length (their bytes do not matter, and hypothesis draws a length
# cheaply where it could not draw 8 KiB of random bytes).
nullable = st.one_of(
    st.none(), st.binary(max_size=300), st.integers(0, LIMIT - 1).map(lambda n: b"x" * n)
)
header_lists = st.lists(
    st.builds(Header, st.text(max_size=20), st.one_of(st.none(), st.binary(max_size=40), nullable)),
    max_size=5,
).map(tuple)


def kafka_bound(key, value, headers) -> int:
    """Kafka's `sizeInUpperBound`, written here: 21 bytes and the payloads, 10 per header."""
    return (
        21
        + len(key or b"")
        + len(value or b"")
        + sum(
            10 + len(h.key.encode("utf-8", "surrogateescape")) + len(h.value or b"")
            for h in headers
        )
    )


@pytest.mark.spec("CLIENT-5")
@given(nullable, nullable, header_lists, st.integers(0, 8191), st.integers(0, 2**27 - 1))
def test_the_estimate_is_never_below_the_real_size_and_not_far_above(
    key, value, headers, offset_delta, timestamp_delta
):
    real = len(encode_record(Record(key, value, 0, headers), offset_delta, timestamp_delta))
    estimate = producer_batch.estimate_size(key, value, headers)
    assert estimate >= real, f"estimate {estimate} below the real size {real}"
    assert estimate <= real + 16 + 8 * len(headers), f"estimate {estimate}, real size {real}"


def fill(capacity: int, records: list[Record]) -> tuple[list[list[Record]], list[int]]:
    """The accumulator's batches for `records`, one partition, batch.size `capacity`."""
    batches, current = [], None
    for record in records:
        if current is None or current.try_append(record, None) is None:
            current = ProducerBatch(("t", 0), capacity, Compression.NONE, 0)
            current.try_append(record, None)
            batches.append(current)
    return [b.records for b in batches], [len(b.close()) for b in batches]


@pytest.mark.spec("CLIENT-5", "CLIENT-6")
@given(st.integers(200, 20_000), st.integers(0, 500), st.integers(1, 60), header_lists)
def test_the_accumulator_fills_batches_up_to_batch_size_and_no_further(
    batch_size, value_size, count, headers
):
    records = [Record(b"k%d" % i, b"v" * value_size, 1000 + i, headers) for i in range(count)]
    batches, sizes = fill(batch_size, records)
    bound = kafka_bound(records[0].key, records[0].value, headers) + 1  # keys grow by a byte
    for held, size in zip(batches, sizes, strict=True):
        assert len(held) == 1 or size <= batch_size, f"a batch of {size} bytes"
    for held in batches[:-1]:  # every batch but the last was closed because it was full
        assert len(held) >= max(1, (batch_size - HEADER_SIZE) // bound), (
            f"{len(held)} records in a batch of batch.size {batch_size}: room was left unused"
        )


@pytest.mark.spec("CLIENT-5", "CLIENT-6")
def test_a_real_broker_stores_batches_within_batch_size(broker):
    with Admin(broker.bootstrap) as admin:
        admin.create_topics([NewTopic("lab09", 1, 1)])
    with Producer(broker.bootstrap, linger_ms=1000, batch_size=1024) as producer:
        for i in range(200):
            producer.send("lab09", b"x" * 100, key=b"key-%03d" % i)
        producer.flush()
    directory = os.path.join(broker.data_dir, "lab09-0")
    data = b""
    for name in sorted(n for n in os.listdir(directory) if n.endswith(".log")):
        with open(os.path.join(directory, name), "rb") as segment:
            data += segment.read()
    headers = [h for _, h in iter_batch_headers(data)]
    assert sum(h.records_count for h in headers) == 200
    assert all(h.size <= 1024 for h in headers), [h.size for h in headers]
    assert all(h.records_count >= (1024 - HEADER_SIZE) // (21 + 7 + 100)
               for h in headers[:-1]), [h.records_count for h in headers]  # fmt: skip
