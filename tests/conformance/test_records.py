"""The record batch format on the wire: the header layout, the CRC, varints, and validation.

Batches here are written and read by hand (kafka_ref.conformance.records), not with the
broker's own record module, so a test can send exactly the malformed batch a rule is about
with a correct CRC (a wrong length, an over-long varint, a count that disagrees) and check
the stored bytes field by field. Every refused batch is also checked to have appended
nothing: a broker that answers an error but keeps half the batch breaks the rule too.

The checks of the records *inside* a batch (BATCH-5, BATCH-6) use a compacted topic: Kafka
decodes every produced record on any topic, but kafka-ref keeps records opaque on the
append path (kafka_ref/log/validator.py, "bytes on the hot path") except where compaction
needs their keys, so a compacted topic is where both brokers must decode, and refuse.
"""

from __future__ import annotations

import struct
import zlib

import pytest

from kafka_ref.conformance.records import (
    HEADER_SIZE,
    ZSTD,
    RawRecord,
    crc32c,
    encode_record,
    parse_batches,
    raw_batch,
    varint,
)

CORRUPT_MESSAGE, INVALID_RECORD = 2, 87
UNSUPPORTED_COMPRESSION_TYPE = 76


@pytest.fixture
def topic(target, wire):
    target.require("create-topics")
    name = target.topic_name("rec")
    assert wire.create_topic(name) == 0
    return name


@pytest.fixture
def decoded_topic(target, wire):
    """A compacted topic: one whose records every broker decodes on append (see above)."""
    target.require("create-topics")
    name = target.topic_name("decoded")
    assert wire.create_topic(name, **{"cleanup.policy": "compact"}) == 0
    return name


def records(n: int, tag: str = "r") -> list[RawRecord]:
    return [
        RawRecord(f"k{i}".encode(), f"{tag}{i}".encode(), timestamp_delta=3 * i) for i in range(n)
    ]


def refused(wire, topic: str, data: bytes, version: int = 7) -> int:
    """The error code of producing `data`, checking that nothing was appended."""
    before = wire.fetch(topic, 0, 0).high_watermark
    code = wire.produce(topic, 0, data, version=version).error_code
    assert wire.fetch(topic, 0, 0).high_watermark == before, "a refused batch appended records"
    return code


def fetched(wire, topic: str, offset: int = 0):
    part = wire.fetch(topic, 0, offset)
    assert part.error_code == 0
    return bytes(part.records), parse_batches(bytes(part.records))


@pytest.mark.spec("BATCH-1", "BATCH-10", "BATCH-7")
def test_a_stored_batch_has_the_v2_header_layout(wire, topic):
    sent = raw_batch(records(3), base_timestamp=1_700_000_000_000)
    assert wire.produce(topic, 0, sent).error_code == 0
    buf, (got,) = fetched(wire, topic)
    assert buf[16] == 2, "magic 2 at byte 16"
    assert struct.unpack_from(">i", buf, 8)[0] + 12 == len(got.raw)
    assert got.raw[HEADER_SIZE:] == sent[HEADER_SIZE:], "the records start at byte 61"
    # BATCH-10: offsets and timestamps are the header's plus each record's delta
    assert [r["offset"] for r in got.records] == [0, 1, 2]
    assert [r["timestamp"] for r in got.records] == [1_700_000_000_000 + d for d in (0, 3, 6)]
    assert got.base_timestamp == 1_700_000_000_000 and got.max_timestamp == got.base_timestamp + 6
    # BATCH-7: no codec, CreateTime, not transactional, not control, bits 7-15 unused
    assert got.attributes == 0


@pytest.mark.spec("BATCH-7")
def test_attributes_carry_the_timestamp_type_and_nothing_unused(target, wire):
    target.require("create-topics")
    name = target.topic_name("lat")
    assert wire.create_topic(name, **{"message.timestamp.type": "LogAppendTime"}) == 0
    assert wire.produce(name, 0, raw_batch(records(2))).error_code == 0
    _, (got,) = fetched(wire, name)
    assert got.attributes & 0x08, "bit 3: LogAppendTime"
    assert got.attributes & ~0x0F == 0, "no transactional, control, horizon or unused bit"


@pytest.mark.spec("BATCH-1", "BROKER-27")
def test_a_legacy_message_set_is_an_invalid_record(wire, topic):
    # magic 1 (KIP-32): offset, size, crc (zlib CRC-32 from magic on), magic, attributes,
    # timestamp, key, value; its magic byte too sits at byte 16
    body = struct.pack(">bbqi", 1, 0, 1_700_000_000_000, -1) + struct.pack(">i", 5) + b"value"
    message = struct.pack(">I", zlib.crc32(body)) + body
    legacy = struct.pack(">qi", 0, len(message)) + message
    assert legacy[16] == 1
    assert refused(wire, topic, legacy) == INVALID_RECORD, "Produce v3+ takes magic 2 only"


@pytest.mark.spec("BROKER-27")
def test_a_partition_holds_exactly_one_batch(wire, topic):
    one = raw_batch(records(1))
    assert refused(wire, topic, one + raw_batch(records(1))) == INVALID_RECORD, "two batches"
    assert refused(wire, topic, b"") == INVALID_RECORD, "no batch"
    assert refused(wire, topic, one[:-3]) == INVALID_RECORD, "no whole batch"
    # bytes after the batch that do not make a second one are dropped, not refused
    assert wire.produce(topic, 0, one + b"\x00" * 7).error_code == 0
    assert wire.produce(topic, 0, one).error_code == 0
    assert [len(b.raw) for b in fetched(wire, topic)[1]] == [len(one), len(one)]


@pytest.mark.spec("BROKER-27")
def test_zstd_needs_produce_v7(target, wire, topic):
    if not target.capabilities.supports(0, 3):
        pytest.skip("the target does not advertise Produce v3")
    zstd = raw_batch(records(2), attributes=ZSTD)
    assert refused(wire, topic, zstd, version=3) == UNSUPPORTED_COMPRESSION_TYPE
    assert wire.produce(topic, 0, zstd, version=7).error_code == 0


@pytest.mark.spec("BATCH-2")
def test_batch_length_must_fit_the_batch(wire, topic):
    good = raw_batch(records(2))
    # a batchLength below 49, with the bytes cut to it (more bytes after it would be a
    # second batch, which BROKER-27 refuses first with INVALID_RECORD)
    short = raw_batch(records(2), batch_length=40)[: 40 + 12]
    assert refused(wire, topic, short) == CORRUPT_MESSAGE, "batchLength 40"
    # below the smallest record of any format: corrupt before the batch is even read
    assert refused(wire, topic, raw_batch(records(2), batch_length=-1)) == CORRUPT_MESSAGE
    # longer than the bytes sent: no whole batch at all (BROKER-27)
    too_long = raw_batch(records(2), batch_length=len(good) - 12 + 10)
    assert refused(wire, topic, too_long) == INVALID_RECORD, "runs past the bytes sent"
    assert refused(wire, topic, good[:-3]) == INVALID_RECORD, "cut short"
    assert wire.produce(topic, 0, good).error_code == 0


@pytest.mark.spec("BATCH-3")
def test_the_crc_is_crc32c_from_the_attributes_on(wire, topic):
    plain = raw_batch(records(2))
    zlib_crc = zlib.crc32(plain[21:])
    assert refused(wire, topic, raw_batch(records(2), crc=zlib_crc)) == CORRUPT_MESSAGE
    flipped = bytearray(plain)
    flipped[25] ^= 0x01  # lastOffsetDelta: inside the CRC
    assert refused(wire, topic, bytes(flipped)) == CORRUPT_MESSAGE
    # the leader epoch lies outside the CRC: changing it keeps the batch valid
    outside = raw_batch(records(2), leader_epoch=77)
    assert outside[17:] == plain[17:]
    assert wire.produce(topic, 0, outside).error_code == 0
    _, (got,) = fetched(wire, topic)
    assert got.crc == crc32c(got.raw[21:]), "the stored CRC is CRC-32C over bytes 21.."


@pytest.mark.spec("BATCH-4")
def test_a_produced_batch_starts_at_base_offset_zero(wire, topic):
    # the base offset lies outside the CRC too, but a producer sends 0: the broker numbers
    assert refused(wire, topic, raw_batch(records(2), base_offset=12345)) == INVALID_RECORD
    assert wire.produce(topic, 0, raw_batch(records(2))).error_code == 0


def section(recs: list[bytes]) -> bytes:
    return b"".join(recs)


@pytest.mark.spec("BATCH-5")
def test_records_must_agree_with_their_lengths_and_count(wire, decoded_topic):
    topic = decoded_topic
    r0, r1 = encode_record(RawRecord(b"k", b"v0"), 0), encode_record(RawRecord(b"k", b"v1"), 1)
    # a record whose length says one byte more than its fields use (the next record's
    # first byte would be swallowed): the two records no longer agree with the section
    longer = varint(len(r1) - 1 + 1) + r1[1:]
    cases = {
        "length too long": section([r0, longer]),
        "trailing bytes after the last record": section([r0, r1]) + b"\x00",
        "a key running past the record": section([r0, varint(6) + b"\x00\x00\x02\x14kk"]),
    }
    for what, data in cases.items():
        bad = raw_batch([RawRecord(b"k", b"v0"), RawRecord(b"k", b"v1")], records_section=data)
        assert refused(wire, topic, bad) == INVALID_RECORD, what
    fewer = raw_batch(
        [RawRecord(b"k", b"v0")], records_section=r0, records_count=2, last_offset_delta=1
    )
    assert refused(wire, topic, fewer) == INVALID_RECORD, "fewer records than recordsCount"
    ok = raw_batch([RawRecord(b"k", b"v0"), RawRecord(b"k", b"v1")], records_section=r0 + r1)
    assert wire.produce(topic, 0, ok).error_code == 0


@pytest.mark.spec("BATCH-6")
def test_an_over_long_varint_is_invalid_record(wire, decoded_topic):
    topic = decoded_topic
    # offsetDelta 0 written in six bytes: a 32-bit varint takes at most five
    fields = b"\x00" + varint(0) + b"\x80\x80\x80\x80\x80\x00" + varint(1) + b"k"
    fields += varint(1) + b"v" + varint(0)
    bad = raw_batch([RawRecord(b"k", b"v")], records_section=varint(len(fields)) + fields)
    assert refused(wire, topic, bad) == INVALID_RECORD
    # the same record with its varints in their shortest form is fine
    assert wire.produce(topic, 0, raw_batch([RawRecord(b"k", b"v")])).error_code == 0
    _, (got,) = fetched(wire, topic)
    assert got.records[0]["key"] == b"k" and got.records[0]["value"] == b"v"


@pytest.mark.spec("BATCH-8")
def test_a_producer_batch_has_dense_offsets(wire, topic):
    three = records(3)
    assert refused(wire, topic, raw_batch(three, last_offset_delta=1)) == INVALID_RECORD
    assert refused(wire, topic, raw_batch(three, last_offset_delta=5)) == INVALID_RECORD
    assert refused(wire, topic, raw_batch([], last_offset_delta=-1)) == INVALID_RECORD, "empty"
    assert wire.produce(topic, 0, raw_batch(three)).error_code == 0
