"""Codecs (CODEC-1..CODEC-6): round trips, both snappy framings, Kafka's LZ4 frame, bombs."""

import contextlib
import gzip
import os
import random
import struct

import lz4.frame
import pytest
import snappy
import zstandard
from hypothesis import given
from hypothesis import strategies as st
from kafka import codec as kp

from kafka_ref.errors import (
    CorruptRecordError,
    ErrorCode,
    KafkaError,
    MessageTooLargeError,
    UnsupportedCompressionTypeError,
)
from kafka_ref.record.compression import (
    XERIAL_MAGIC,
    Compression,
    compress,
    decompress,
    lz4_header_checksum,
    xxhash32,
)

payloads = st.one_of(
    st.binary(max_size=300),
    st.builds(lambda b, n: b * n, st.binary(min_size=1, max_size=20), st.integers(1, 5000)),
)
real_codecs = [c for c in Compression if c]


@pytest.mark.spec("CODEC-1")
def test_codec_ids_and_names():
    assert [int(c) for c in Compression] == [0, 1, 2, 3, 4]
    assert Compression.from_name("LZ4") == Compression.LZ4
    assert Compression.from_name("uncompressed") == Compression.NONE
    assert Compression.from_attributes(0x0B) == Compression.LZ4  # bit 3 is not the codec
    for bad in (5, 6, 7):
        with pytest.raises(UnsupportedCompressionTypeError) as info:
            Compression.from_attributes(bad)
        assert info.value.code == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
        with pytest.raises(UnsupportedCompressionTypeError):
            decompress(bad, b"x")
        with pytest.raises(UnsupportedCompressionTypeError):
            compress(bad, b"x")
    with pytest.raises(UnsupportedCompressionTypeError):
        Compression.from_name("brotli")


@pytest.mark.spec("CODEC-2")
@given(payloads, st.sampled_from(list(Compression)), st.booleans())
def test_round_trip(data, codec, xerial):
    packed = compress(codec, data, xerial=xerial)
    assert decompress(codec, packed) == data
    assert decompress(codec, memoryview(bytearray(packed))) == data


@pytest.mark.spec("CODEC-2")
@pytest.mark.parametrize("codec", real_codecs)
@pytest.mark.parametrize("garbage", [b"", b"\x05", random.Random(64).randbytes(64), b"\xff" * 300])
def test_garbage_is_corrupt(codec, garbage):
    with pytest.raises(CorruptRecordError) as info:
        decompress(codec, garbage)
    assert info.value.code == ErrorCode.CORRUPT_MESSAGE


@pytest.mark.spec("CODEC-2")
@given(st.sampled_from(real_codecs), payloads, st.data())
def test_damaged_data_never_raises_a_foreign_exception(codec, data, draw):
    packed = bytearray(compress(codec, data, xerial=draw.draw(st.booleans())))
    for _ in range(draw.draw(st.integers(1, 3))):
        packed[draw.draw(st.integers(0, len(packed) - 1))] = draw.draw(st.integers(0, 255))
    del packed[draw.draw(st.integers(0, len(packed))) :]
    with contextlib.suppress(KafkaError):  # decoding the damage is fine too
        decompress(codec, bytes(packed), max_size=1 << 20)


@pytest.mark.spec("CODEC-3")
@given(payloads)
def test_snappy_reads_both_framings(data):
    raw = snappy.compress(data)
    framed = kp.snappy_encode(data, xerial_compatible=True)
    assert framed.startswith(XERIAL_MAGIC)
    assert decompress(Compression.SNAPPY, raw) == data
    assert decompress(Compression.SNAPPY, framed) == data
    if data:  # kafka-python takes a bare 16-byte xerial header for raw snappy
        assert kp.snappy_decode(compress(Compression.SNAPPY, data)) == data
    assert snappy.decompress(compress(Compression.SNAPPY, data, xerial=False)) == data


@pytest.mark.spec("CODEC-3")
def test_xerial_layout_matches_kafka_python():
    data = bytes(range(256)) * 300  # 76800 bytes: three 32 KiB blocks
    ours = compress(Compression.SNAPPY, data)
    assert ours[:16] == XERIAL_MAGIC + struct.pack(">ii", 1, 1)
    assert ours == kp.snappy_encode(data)  # same blocks, same raw snappy
    little_endian = ours[:8] + struct.pack("<ii", 1, 1) + ours[16:]  # some writers do this
    assert decompress(Compression.SNAPPY, little_endian) == data


@pytest.mark.spec("CODEC-3")
@pytest.mark.parametrize(
    "data",
    [
        XERIAL_MAGIC + b"\x00\x00\x00\x01",  # header cut short
        XERIAL_MAGIC + struct.pack(">iii", 1, 1, 50) + b"abc",  # block overruns
        XERIAL_MAGIC + struct.pack(">iii", 1, 1, -1),  # negative block length
        XERIAL_MAGIC + struct.pack(">ii", 1, 1) + b"\x00\x00",  # length cut short
    ],
)
def test_bad_xerial_framing_is_corrupt(data):
    with pytest.raises(CorruptRecordError):
        decompress(Compression.SNAPPY, data)


@pytest.mark.spec("CODEC-4")
def test_xxhash32_reference_values():
    assert xxhash32(b"") == 0x02CC5D05
    assert xxhash32(b"abc") == 0x32D153FF
    assert xxhash32(b"Nobody inspects the spammish repetition") == 0xE2293B2F
    assert lz4_header_checksum(b"\x60\x40") == 0x82


@pytest.mark.spec("CODEC-4")
@given(payloads)
def test_lz4_frame_is_byte_for_byte_kafkas(data):
    ours = compress(Compression.LZ4, data)
    assert ours[:7] == bytes.fromhex("04224d18604082")  # magic, FLG, BD 64 KiB, HC
    assert ours[-4:] == b"\x00\x00\x00\x00"  # end mark, no content checksum
    reference = lz4.frame.compress(
        data,
        block_size=lz4.frame.BLOCKSIZE_MAX64KB,
        block_linked=False,
        content_checksum=False,
        store_size=False,
    )
    assert ours == reference
    assert kp.lz4_decode(ours) == data


@pytest.mark.spec("CODEC-4")
def test_lz4_stores_incompressible_blocks_raw():
    data = os.urandom(70_000)
    ours = compress(Compression.LZ4, data)
    (first,) = struct.unpack_from("<I", ours, 7)
    assert first == 0x80000000 | 65536 and ours[11 : 11 + 65536] == data[:65536]
    assert decompress(Compression.LZ4, ours) == data


@pytest.mark.spec("CODEC-4")
@pytest.mark.parametrize(
    "options",
    [
        {"store_size": True},
        {"content_checksum": True},
        {"block_checksum": True},
        {"block_size": lz4.frame.BLOCKSIZE_MAX4MB},
        {"store_size": True, "content_checksum": True, "block_checksum": True},
    ],
)
def test_lz4_reads_what_kafkas_reader_reads(options):
    data = b"the quick brown fox " * 5000
    frame = lz4.frame.compress(data, block_linked=False, **options)
    assert decompress(Compression.LZ4, frame) == data


@pytest.mark.spec("CODEC-4")
def test_lz4_refuses_what_kafkas_reader_refuses():
    data = b"the quick brown fox " * 5000
    linked = lz4.frame.compress(data, block_linked=True)
    good = compress(Compression.LZ4, data)
    bad_hc = good[:6] + bytes([good[6] ^ 1]) + good[7:]
    cases = {
        "dependent blocks": linked,
        "bad header checksum": bad_hc,
        "trailing bytes": good + b"\x00",
        "two frames": good + good,
        "no end mark": good[:-4],
        "bad magic": b"\x05" + good[1:],
        "bad version": good[:4] + b"\xa0" + good[5:],
        "bad block size": good[:5] + b"\x30" + good[6:],
    }
    for name, frame in cases.items():
        with pytest.raises(CorruptRecordError):
            decompress(Compression.LZ4, frame)
        assert name


@pytest.mark.spec("CODEC-5")
@pytest.mark.parametrize("codec", real_codecs)
@pytest.mark.parametrize("xerial", [True, False])
def test_decompression_is_bounded(codec, xerial):
    bomb = compress(codec, bytes(1_000_000), xerial=xerial)
    assert len(bomb) < 50_000
    with pytest.raises(MessageTooLargeError) as info:
        decompress(codec, bomb, max_size=100_000)
    assert info.value.code == ErrorCode.MESSAGE_TOO_LARGE
    assert len(decompress(codec, bomb, max_size=1_000_000)) == 1_000_000


@pytest.mark.spec("CODEC-5")
def test_bounds_come_from_the_format_before_decompressing():
    sized = zstandard.ZstdCompressor(write_content_size=True).compress(bytes(10**6))
    unsized = zstandard.ZstdCompressor(write_content_size=False).compress(bytes(10**6))
    lz4_sized = lz4.frame.compress(bytes(10**6), block_linked=False, store_size=True)
    for codec, data in [
        (Compression.ZSTD, sized),
        (Compression.ZSTD, unsized),
        (Compression.LZ4, lz4_sized),
        (Compression.SNAPPY, snappy.compress(bytes(10**6))),
        (Compression.GZIP, gzip.compress(bytes(10**6))),
    ]:
        with pytest.raises(MessageTooLargeError, match="over the limit of 1000"):
            decompress(codec, data, max_size=1000)


@pytest.mark.spec("CODEC-6")
def test_gzip_members_and_zstd_frames():
    two_members = gzip.compress(b"hello ") + gzip.compress(b"kafka")
    assert decompress(Compression.GZIP, two_members) == b"hello kafka"
    assert decompress(Compression.GZIP, kp.gzip_encode(b"x" * 1000)) == b"x" * 1000
    with pytest.raises(CorruptRecordError, match="truncated"):
        decompress(Compression.GZIP, gzip.compress(b"hello")[:-5])
    with pytest.raises(CorruptRecordError):
        decompress(Compression.GZIP, gzip.compress(b"hello") + b"trailing garbage")
    for writer in (
        zstandard.ZstdCompressor(write_content_size=False),
        zstandard.ZstdCompressor(write_checksum=True),
    ):
        frame = writer.compress(b"zstd " * 100)
        assert decompress(Compression.ZSTD, frame) == b"zstd " * 100
        assert decompress(Compression.ZSTD, frame + frame) == b"zstd " * 200
    assert kp.zstd_decode(compress(Compression.ZSTD, b"abc" * 99)) == b"abc" * 99
