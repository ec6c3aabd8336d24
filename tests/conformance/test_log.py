"""The log as a client sees it: offsets, reads inside batches, bounds, limits, stamps.

Every test here produces raw v2 batches through Produce v7 and reads them back with Fetch
v10 at chosen offsets, so it sees exactly what a broker returns, batch by batch. The
hypothesis test draws batch sizes and fetch offsets: a broker that starts a fetch at the
*next* batch when the offset falls inside one (a bug seen in Kafka-compatible brokers) fails
it on the first example with a batch of two records or more.
"""

from __future__ import annotations

import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_ref.conformance.records import RawRecord, raw_batch
from kafka_ref.conformance.wire import T0, batch, decode_batches
from kafka_ref.protocol.messages import ApiKey, DeleteRecordsRequest

OFFSET_OUT_OF_RANGE, CORRUPT_MESSAGE, MESSAGE_TOO_LARGE = 1, 2, 10
UNKNOWN_TOPIC_OR_PARTITION, UNSUPPORTED_VERSION, INVALID_RECORD = 3, 35, 87


def values(n: int, tag: str = "v") -> list[bytes]:
    return [f"{tag}{i}".encode() for i in range(n)]


def produce_batches(wire, topic: str, sizes: list[int]) -> list[int]:
    """Produce one batch per size; the base offsets the broker answered."""
    bases = []
    for i, size in enumerate(sizes):
        resp = wire.produce(topic, 0, batch(values(size, f"b{i}-")))
        assert resp.error_code == 0, f"produce failed with {resp.error_code}"
        bases.append(resp.base_offset)
    return bases


@pytest.fixture
def topic(target, wire):
    target.require("create-topics")
    name = target.topic_name("log")
    assert wire.create_topic(name) == 0
    return name


@pytest.mark.spec("LOG-1", "BROKER-14", "LOG-2")
def test_offsets_are_dense_from_the_log_end(wire, topic):
    sizes = [3, 1, 5, 2]
    bases = produce_batches(wire, topic, sizes)
    assert bases == [0, 3, 4, 9], "each batch starts at the previous log end offset"
    part = wire.fetch(topic, 0, 0)
    offsets = [r.offset for b in decode_batches(part.records) for r in b.records]
    assert offsets == list(range(11))
    assert part.high_watermark == 11 and part.log_start_offset == 0


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
@pytest.mark.spec("LOG-3", "LOG-4", "BROKER-18")
def test_fetch_returns_the_batch_containing_the_offset(target, wire, data):
    target.require("create-topics")
    sizes = data.draw(st.lists(st.integers(1, 6), min_size=1, max_size=6), label="batch sizes")
    name = target.topic_name("inside")
    assert wire.create_topic(name) == 0
    bases = produce_batches(wire, name, sizes)
    end = bases[-1] + sizes[-1]
    offset = data.draw(st.integers(0, end - 1), label="fetch offset")
    first = decode_batches(wire.fetch(name, 0, offset).records)[0]
    # LOG-3: the first batch is the one holding `offset`, never the one after it
    assert first.base_offset <= offset <= first.last_offset, (offset, first, bases)
    # LOG-4: walking from `offset` reaches every later offset once, in order
    seen = [r.offset for r in wire.read_all(name, 0, offset)]
    assert seen == list(range(offset, end))


@pytest.mark.spec("LOG-5", "BROKER-17")
def test_read_at_the_end_is_empty_and_beyond_is_out_of_range(wire, topic):
    produce_batches(wire, topic, [2])
    at_end = wire.fetch(topic, 0, 2)
    assert at_end.error_code == 0 and not decode_batches(at_end.records)
    for beyond in (3, -5):
        out = wire.fetch(topic, 0, beyond)
        assert out.error_code == OFFSET_OUT_OF_RANGE
        offsets = (out.high_watermark, out.last_stable_offset, out.log_start_offset)
        assert offsets == (-1, -1, -1), f"an error carries no offsets, got {offsets}"


@pytest.mark.spec("LOG-6", "BROKER-19")
def test_a_fetch_returns_whole_batches_and_at_least_one(wire, topic):
    big = batch([b"x" * 3000])
    assert wire.produce(topic, 0, big).error_code == 0
    produce_batches(wire, topic, [1])
    part = wire.fetch(topic, 0, 0, partition_max_bytes=100, max_bytes=100)
    got = decode_batches(part.records)
    # KIP-74: the first batch comes whole although it alone exceeds both limits
    assert len(got) == 1 and got[0].records[0].value == b"x" * 3000
    assert len(part.records) == len(big), "only whole batches, and no second one"


@pytest.mark.spec("LOG-7", "BROKER-20")
def test_fetch_reports_offsets_and_reads_below_the_high_watermark(wire, topic):
    produce_batches(wire, topic, [4, 2])
    part = wire.fetch(topic, 0, 0)
    assert (part.high_watermark, part.log_start_offset) == (6, 0)
    assert part.last_stable_offset in (6, -1)  # -1: a broker without transactions
    assert max(b.last_offset for b in decode_batches(part.records)) < part.high_watermark


@pytest.mark.spec("LOG-10", "BATCH-4", "BROKER-5")
def test_the_broker_rewrites_only_base_offset_and_leader_epoch(wire, topic):
    produce_batches(wire, topic, [3])
    sent = batch(values(2, "same"), keys=[b"a", b"b"])
    assert wire.produce(topic, 0, sent).base_offset == 3
    raw = bytes(wire.fetch(topic, 0, 3).records)
    got = decode_batches(raw)[0]
    assert got.base_offset == 3
    stored = raw[: len(sent)]
    # bytes 0-7 base offset, 12-15 partition leader epoch: the two fields the broker owns
    assert stored[8:12] == sent[8:12] and stored[16:] == sent[16:]


@pytest.mark.spec("LOG-8", "BROKER-14")
def test_a_corrupt_batch_is_refused_whole(wire, topic):
    produce_batches(wire, topic, [1])
    damaged = bytearray(batch(values(3)))
    damaged[-1] ^= 0xFF  # a record byte: the CRC no longer matches
    refused = wire.produce(topic, 0, bytes(damaged))
    assert (refused.error_code, refused.log_start_offset) == (CORRUPT_MESSAGE, -1)
    # A broken record count is the log validator's refusal: it tells the log start offset.
    miscounted = raw_batch([RawRecord(None, b"a", [])], records_count=2)
    counted = wire.produce(topic, 0, miscounted)
    assert (counted.error_code, counted.log_start_offset) == (INVALID_RECORD, 0)
    assert wire.fetch(topic, 0, 0).high_watermark == 1, "nothing of it was appended"


@pytest.mark.spec("LOG-9", "BROKER-14")
def test_a_batch_above_max_message_bytes_is_refused(target, wire):
    target.require("create-topics")
    name = target.topic_name("small")
    assert wire.create_topic(name, **{"max.message.bytes": "1000"}) == 0
    assert wire.produce(name, 0, batch([b"y" * 2000])).error_code == MESSAGE_TOO_LARGE
    assert wire.produce(name, 0, batch([b"y" * 100])).base_offset == 0


@pytest.mark.spec("LOG-11", "BROKER-28", "BATCH-9")
def test_log_append_time_stamps_the_broker_clock(target, wire):
    target.require("create-topics")
    name = target.topic_name("lat")
    assert wire.create_topic(name, **{"message.timestamp.type": "LogAppendTime"}) == 0
    before = int(time.time() * 1000)
    resp = wire.produce(name, 0, batch(values(3), ts=T0))
    after = int(time.time() * 1000)
    assert resp.error_code == 0
    got = decode_batches(wire.fetch(name, 0, 0).records)[0]
    # a generous window: the broker's clock, not the producer's T0 (2023)
    assert before - 5000 <= got.header.max_timestamp <= after + 5000
    assert resp.log_append_time_ms == got.header.max_timestamp
    assert {r.timestamp for r in got.records} == {got.header.max_timestamp}


def delete_records(wire, topic: str, offset: int):
    body = DeleteRecordsRequest(
        topics=[
            DeleteRecordsRequest.DeleteRecordsTopic(
                name=topic,
                partitions=[
                    DeleteRecordsRequest.DeleteRecordsPartition(partition_index=0, offset=offset)
                ],
            )
        ],
        timeout_ms=5000,
    )
    return wire.request(ApiKey.DELETE_RECORDS, 1, body).topics[0].partitions[0]


@pytest.mark.spec("LOG-14", "BROKER-26", "RET-5")
def test_delete_records_raises_the_log_start_offset(target, wire, topic):
    target.require("delete-records", "list-offsets")
    produce_batches(wire, topic, [2, 3])
    done = delete_records(wire, topic, 3)
    assert done.error_code == 0 and done.low_watermark == 3
    assert wire.fetch(topic, 0, 1).error_code == OFFSET_OUT_OF_RANGE
    assert wire.list_offset(topic, 0, -2).offset == 3
    # offset 3 sits inside the second batch: the read still returns it, from 3 on
    assert [r.offset for r in wire.read_all(topic, 0, 3)] == [3, 4]
    assert delete_records(wire, topic, 1).low_watermark == 3, "never moves down"


@pytest.mark.spec("BROKER-24")
def test_list_offsets_earliest_and_latest(target, wire, topic):
    target.require("list-offsets")
    assert wire.produce(topic, 0, batch(values(3), ts=T0)).error_code == 0
    assert wire.produce(topic, 0, batch(values(2), ts=T0 + 100)).error_code == 0
    assert wire.list_offset(topic, 0, -2).offset == 0
    # latest is the log end offset: the offset the next record will get, not the last one's
    assert wire.list_offset(topic, 0, -1).offset == 5


@pytest.mark.spec("BROKER-61")
def test_a_selector_newer_than_the_request_is_unsupported(target, wire, topic):
    """ListOffsets v2 (what Wire.list_offset sends) knows -1 and -2 only: -3 (max timestamp,
    v7) and any other negative target answer UNSUPPORTED_VERSION, before any lookup."""
    target.require("list-offsets")
    assert wire.produce(topic, 0, batch(values(2), ts=T0)).error_code == 0
    for selector in (-3, -4, -7):
        assert wire.list_offset(topic, 0, selector).error_code == UNSUPPORTED_VERSION, selector
        assert wire.list_offset(topic, 9, selector).error_code == UNSUPPORTED_VERSION, selector
    assert wire.list_offset(topic, 0, -1).offset == 2
    assert wire.list_offset(topic, 9, -1).error_code == UNKNOWN_TOPIC_OR_PARTITION


@pytest.mark.spec("LOG-15", "BROKER-25")
def test_list_offsets_by_timestamp(target, wire, topic):
    target.require("list-offsets")
    assert wire.produce(topic, 0, batch(values(3), ts=T0)).error_code == 0
    assert wire.produce(topic, 0, batch(values(2), ts=T0 + 100)).error_code == 0
    hit = wire.list_offset(topic, 0, T0 + 1)
    assert (hit.offset, hit.timestamp) == (1, T0 + 1)
    assert wire.list_offset(topic, 0, T0 + 50).offset == 3, "the first record at or after"
    assert wire.list_offset(topic, 0, T0 + 10_000).offset == -1, "none that recent"
