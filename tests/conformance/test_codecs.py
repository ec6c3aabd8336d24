"""Compression codecs over the wire: what a broker must accept, refuse, and hand back intact.

Batches are compressed here with the codec libraries themselves (gzip, cramjam's snappy and
zstd, lz4.frame), in each of the forms real producers write: raw and xerial-framed snappy,
LZ4 frames with and without checksums, gzip and zstd streams of several members or frames,
zstd without a content size. Each must come back from a fetch as the same records, decoded by
hand (kafka_ref.conformance.records). The hypothesis test draws random batches (null keys and
values, headers, timestamp deltas) and a codec, and round-trips them through Produce and
Fetch.

Refusals (CODEC-2, CODEC-4, CODEC-6) are checked on a compacted topic: Kafka decompresses
every produced batch, kafka-ref only where compaction needs the keys (see test_records.py),
so that is where every broker must find that the data does not decompress.
"""

from __future__ import annotations

import gzip
import struct

import cramjam
import lz4.frame
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_ref.conformance.records import (
    GZIP,
    LZ4,
    NONE,
    SNAPPY,
    ZSTD,
    RawRecord,
    encode_record,
    parse_batches,
    raw_batch,
)

UNKNOWN_SERVER_ERROR, CORRUPT_MESSAGE, INVALID_RECORD, UNSUPPORTED_COMPRESSION_TYPE = -1, 2, 87, 76
# What a broker may answer data that does not decompress (CODEC-2): kafka-ref names the
# damage (CORRUPT_MESSAGE); Kafka answers what its decompressing stream threw: a generic
# KafkaException (UNKNOWN_SERVER_ERROR), or records that end early (INVALID_RECORD).
NOT_DECOMPRESSED = frozenset({CORRUPT_MESSAGE, INVALID_RECORD, UNKNOWN_SERVER_ERROR})
# A codec id of 5-7 (CODEC-1): kafka-ref UNSUPPORTED_COMPRESSION_TYPE; Kafka's
# CompressionType.forId throws IllegalArgumentException, UNKNOWN_SERVER_ERROR.
UNKNOWN_CODEC = frozenset({UNSUPPORTED_COMPRESSION_TYPE, UNKNOWN_SERVER_ERROR})
_TOPICS: dict[str, str] = {}  # hypothesis examples share one topic per test


@pytest.fixture
def topic(target, wire):
    target.require("create-topics")
    name = target.topic_name("codec")
    assert wire.create_topic(name) == 0
    return name


@pytest.fixture
def decoded_topic(target, wire):
    target.require("create-topics")
    name = target.topic_name("decoded")
    assert wire.create_topic(name, **{"cleanup.policy": "compact"}) == 0
    return name


def sample(n: int = 20, size: int = 40) -> list[RawRecord]:
    return [
        RawRecord(b"key%d" % i, bytes([65 + i % 26]) * size, [("h", b"%d" % i)], i)
        for i in range(n)
    ]


def plain(recs: list[RawRecord]) -> bytes:
    return b"".join(encode_record(r, i) for i, r in enumerate(recs))


def produce_section(wire, topic: str, codec: int, recs: list[RawRecord], data: bytes):
    return wire.produce(topic, 0, raw_batch(recs, attributes=codec, records_section=data))


def read_back(wire, topic: str, offset: int) -> list[dict]:
    part = wire.fetch(topic, 0, offset)
    assert part.error_code == 0
    batches = parse_batches(bytes(part.records))
    return [r for b in batches for r in b.records if r["offset"] >= offset]


def same(got: list[dict], recs: list[RawRecord], base: int, base_ts: int = 1_700_000_000_000):
    want = [
        {
            "offset": base + i,
            "timestamp": base_ts + r.timestamp_delta,
            "key": r.key,
            "value": r.value,
            "headers": list(r.headers),
        }
        for i, r in enumerate(recs)
    ]
    assert got[: len(want)] == want


def assert_round_trip(wire, topic: str, codec: int, data: bytes, recs: list[RawRecord]) -> None:
    resp = produce_section(wire, topic, codec, recs, data)
    assert resp.error_code == 0, f"codec {codec}: produce failed with {resp.error_code}"
    same(read_back(wire, topic, resp.base_offset), recs, resp.base_offset)


def assert_refused(wire, topic: str, codec: int, data: bytes, codes=NOT_DECOMPRESSED):
    before = wire.fetch(topic, 0, 0).high_watermark
    resp = produce_section(wire, topic, codec, sample(2), data)
    assert resp.error_code in codes
    assert wire.fetch(topic, 0, 0).high_watermark == before, "nothing appended"


header_names = st.text(min_size=0, max_size=8)
maybe_bytes = st.none() | st.binary(max_size=64)
raw_records = st.builds(
    RawRecord,
    key=maybe_bytes,
    value=maybe_bytes,
    headers=st.lists(st.tuples(header_names, maybe_bytes), max_size=3),
    timestamp_delta=st.integers(0, 10**6),
)


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    codec=st.sampled_from([NONE, GZIP, SNAPPY, LZ4, ZSTD]),
    recs=st.lists(raw_records, min_size=1, max_size=12),
)
@pytest.mark.spec("CODEC-1", "BATCH-5", "BATCH-10", "CODEC-6")
def test_random_batches_round_trip_through_every_codec(target, wire, codec, recs):
    target.require("create-topics")
    if "rt" not in _TOPICS:
        _TOPICS["rt"] = target.topic_name("roundtrip")
        assert wire.create_topic(_TOPICS["rt"]) == 0
    topic = _TOPICS["rt"]
    resp = wire.produce(topic, 0, raw_batch(recs, attributes=codec))
    assert resp.error_code == 0, f"codec {codec}: {resp.error_code}"
    part = wire.fetch(topic, 0, resp.base_offset)
    batches = [b for b in parse_batches(bytes(part.records)) if b.base_offset == resp.base_offset]
    assert batches, "the produced batch is the first one fetched"
    # compression.type=producer (the default): the batch keeps the producer's codec
    assert batches[0].attributes & 0x07 == codec
    same(batches[0].records, recs, resp.base_offset)


@pytest.mark.spec("CODEC-1")
def test_codec_ids_5_to_7_are_unsupported(wire, topic):
    for codec in (5, 6, 7):
        assert_refused(wire, topic, codec, plain(sample(2)), UNKNOWN_CODEC)


@pytest.mark.spec("CODEC-2")
def test_a_records_section_that_does_not_decompress_is_corrupt(wire, decoded_topic):
    topic = decoded_topic
    for codec in (GZIP, SNAPPY, LZ4, ZSTD):
        assert_refused(wire, topic, codec, b"this is not compressed data at all")


def xerial(data: bytes, block: int = 32 * 1024, version_order: str = ">") -> bytes:
    out = bytearray(b"\x82SNAPPY\x00" + struct.pack(version_order + "ii", 1, 1))
    for i in range(0, len(data), block):
        chunk = bytes(cramjam.snappy.compress_raw(data[i : i + block]))
        out += struct.pack(">i", len(chunk)) + chunk
    return bytes(out)


@pytest.mark.spec("CODEC-3")
def test_snappy_raw_and_xerial_framed_are_both_read(wire, topic):
    recs = sample(60, 1500)  # about 90 KiB: several 32 KiB xerial blocks
    data = plain(recs)
    assert len(data) > 64 * 1024
    assert_round_trip(wire, topic, SNAPPY, bytes(cramjam.snappy.compress_raw(data)), recs)
    assert_round_trip(wire, topic, SNAPPY, xerial(data), recs)
    # the version fields are ignored: some writers put them in the wrong byte order
    assert_round_trip(wire, topic, SNAPPY, xerial(data, version_order="<"), recs)


@pytest.mark.spec("CODEC-4")
def test_lz4_frames_with_independent_blocks_are_read(wire, topic):
    recs = sample(60, 1500)
    data = plain(recs)
    kafka_style = lz4.frame.compress(
        data, block_size=lz4.frame.BLOCKSIZE_MAX64KB, block_linked=False, content_checksum=False
    )
    assert kafka_style[:4] == b"\x04\x22\x4d\x18"
    assert_round_trip(wire, topic, LZ4, kafka_style, recs)
    # checksums, a content size and 4 MiB blocks: what Lz4BlockInputStream also reads
    checked = lz4.frame.compress(
        data,
        block_size=lz4.frame.BLOCKSIZE_MAX4MB,
        block_linked=False,
        content_checksum=True,
        block_checksum=True,
        store_size=True,
    )
    assert_round_trip(wire, topic, LZ4, checked, recs)


@pytest.mark.spec("CODEC-4")
def test_lz4_dependent_blocks_or_a_bad_header_checksum_are_refused(wire, decoded_topic):
    topic = decoded_topic
    data = plain(sample(60, 1500))
    linked = lz4.frame.compress(data, block_size=lz4.frame.BLOCKSIZE_MAX64KB, block_linked=True)
    assert_refused(wire, topic, LZ4, linked)
    frame = bytearray(
        lz4.frame.compress(data, block_size=lz4.frame.BLOCKSIZE_MAX64KB, block_linked=False)
    )
    frame[6] ^= 0xFF  # the header checksum byte (after magic, FLG, BD)
    assert_refused(wire, topic, LZ4, bytes(frame))


@pytest.mark.spec("CODEC-6")
def test_gzip_members_and_zstd_frames_are_standard_streams(wire, decoded_topic):
    topic = decoded_topic
    recs = sample(10)
    data = plain(recs)
    half = len(encode_record(recs[0], 0)) * 5 + 3  # a member boundary inside a record
    two_members = gzip.compress(data[:half]) + gzip.compress(data[half:])
    assert_round_trip(wire, topic, GZIP, two_members, recs)
    one = gzip.compress(data)
    assert_refused(wire, topic, GZIP, one[:-6])  # truncated: no CRC and size trailer
    assert_refused(wire, topic, GZIP, one + b"garbage!")
    # zstd-jni's stream (the Java client) writes no content size: frame descriptor bit 6-7 = 0
    streamed = cramjam.zstd.Compressor()
    streamed.compress(data)
    no_size = bytes(streamed.finish())
    assert no_size[4] & 0xC0 == 0 and not no_size[4] & 0x20
    assert_round_trip(wire, topic, ZSTD, no_size, recs)
    frames = bytes(cramjam.zstd.compress(data[:half])) + bytes(cramjam.zstd.compress(data[half:]))
    assert_round_trip(wire, topic, ZSTD, frames, recs)
