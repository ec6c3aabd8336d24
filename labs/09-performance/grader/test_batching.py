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


LARGEST_OFFSET_DELTA, LARGEST_TIMESTAMP_DELTA = 8191, 2**27 - 1
KEY_8K, VALUE_8K = b"k" * (LIMIT - 1), b"v" * (LIMIT - 1)
# Records at the contract's edges, by hand: each varint the estimate must bound at its size
# boundary (a length of 63 takes 1 byte, of 64 takes 2), each special case of the layout.
EDGE_RECORDS = {
    "a null key and value, no headers": pytest.param(None, None, ()),
    "an empty key and value (lengths 0)": pytest.param(b"", b"", ()),
    "a 63-byte key and a 64-byte value (a length of 64 takes 2 bytes)": pytest.param(
        b"k" * 63, b"v" * 64, ()
    ),
    "a null key and a 100-byte value (a record of more than 64 bytes)": pytest.param(
        None, b"v" * 100, ()
    ),
    "an 8191-byte key and value, the longest": pytest.param(KEY_8K, VALUE_8K, ()),
    "one header with a null value": pytest.param(b"k", b"v", (Header("h", None),)),
    "one header with an empty key and an empty value": pytest.param(None, None, (Header("", b""),)),
    "one header with a 64-byte value": pytest.param(None, None, (Header("h", b"x" * 64),)),
    "a header key of 7 characters, 15 UTF-8 bytes": pytest.param(
        None, b"v", (Header("ключ-日本", b"x"),)
    ),
    "63 headers with empty keys and null values": pytest.param(
        None, None, (Header("", None),) * 63
    ),
    "the largest record: 8 KiB key, value and 63 headers of 8 KiB (a 4-byte length)": pytest.param(
        KEY_8K, VALUE_8K, (Header("h" * (LIMIT - 1), VALUE_8K),) * 63
    ),
}


@pytest.mark.spec("CLIENT-5")
@pytest.mark.parametrize(("key", "value", "headers"), EDGE_RECORDS.values(), ids=EDGE_RECORDS)
def test_the_estimate_bounds_records_at_the_edges_of_the_contract(key, value, headers):
    """Never below the record's size at the largest deltas (offset delta 8191, timestamp
    delta 2**27 - 1), and at most 16 bytes + 8 per header above its size at deltas 0."""
    estimate = producer_batch.estimate_size(key, value, headers)
    record = Record(key, value, 0, headers)
    largest = len(encode_record(record, LARGEST_OFFSET_DELTA, LARGEST_TIMESTAMP_DELTA))
    smallest = len(encode_record(record, 0, 0))
    allowed = smallest + 16 + 8 * len(headers)
    what = f"key {describe(key)}, value {describe(value)}, {len(headers)} headers"
    if headers:
        what += f" (the first: key {headers[0].key[:12]!r}, value {describe(headers[0].value)})"
    assert estimate >= largest, (
        f"{what}: at offset delta {LARGEST_OFFSET_DELTA} and timestamp delta 2**27 - 1 the "
        f"record takes {largest} bytes; the estimate {estimate} is below it"
    )
    assert estimate <= allowed, (
        f"{what}: at deltas 0 the record takes {smallest} bytes; the estimate {estimate} is "
        f"more than 16 + 8 x {len(headers)} bytes above it (at most {allowed})"
    )


def describe(data: bytes | None) -> str:
    return "None" if data is None else f"of {len(data)} bytes"


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
    assert all(h.records_count >= (1024 - HEADER_SIZE) // (21 + 7 + 100) for h in headers[:-1]), [
        h.records_count for h in headers
    ]
