"""The v0/v1 message format (LEGACY-1..LEGACY-9): layout, wrappers, offsets, bad input."""

import struct
import zlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafka_ref.errors import (
    CorruptRecordError,
    ErrorCode,
    InvalidRecordError,
    KafkaError,
    UnsupportedCompressionTypeError,
    UnsupportedForMessageFormatError,
)
from kafka_ref.record.batch import BatchHeader, RecordBatch, TimestampType, build_batch, peek_magic
from kafka_ref.record.batch import validate_batch as validate_v2
from kafka_ref.record.compression import (
    LZ4_MAGIC,
    Compression,
    compress,
    decompress,
    lz4_header_checksum,
)
from kafka_ref.record.legacy import build_message_set as build
from kafka_ref.record.legacy import (
    encode_message,
    iter_messages,
    iter_records,
    read_message,
    to_v2_batch,
    unwrap,
)
from kafka_ref.record.record import Header, Record
from tests.unit.record.conftest import legacy_record_lists, without_offset

magics = st.sampled_from([0, 1])
legacy_codecs = st.sampled_from(
    [Compression.NONE, Compression.GZIP, Compression.SNAPPY, Compression.LZ4]
)


def _wrapper(magic: int, inner: bytes, *, offset: int, codec=Compression.GZIP, ts=0, attrs=0):
    """A wrapper message around `inner`, compressed as the magic requires."""
    value = compress(codec, inner, lz4_broken_checksum=magic == 0)
    return encode_message(offset, None, value, magic=magic, timestamp=ts, attributes=codec | attrs)


@pytest.mark.spec("LEGACY-1")
def test_entry_layout_and_overhead():
    v0 = encode_message(7, b"k", b"value", magic=0)
    v1 = encode_message(7, b"k", b"value", magic=1, timestamp=123)
    assert len(v0) == 26 + 6 and len(v1) == 34 + 6
    offset, size, _crc, magic, attributes = struct.unpack_from(">qiIbb", v1)
    assert (offset, size, magic, attributes) == (7, len(v1) - 12, 1, 0)
    assert struct.unpack_from(">qi", v1, 18) == (123, 1)
    assert v0[18:] == b"\x00\x00\x00\x01k\x00\x00\x00\x05value"
    null = encode_message(0, None, None, magic=0)
    assert null[-8:] == b"\xff" * 8
    message, end = read_message(null)
    assert (message.key, message.value, end, message.size) == (None, None, 26, 26)


@pytest.mark.spec("LEGACY-1", "LEGACY-4")
@given(legacy_record_lists, magics, st.integers(0, 2**40))
def test_uncompressed_round_trip(records, magic, base):
    data = build(records, magic=magic, base_offset=base)
    messages = list(iter_messages(data))
    assert len(messages) == len(records)
    assert sum(m.size for m in messages) == len(data)
    decoded = list(iter_records(data))
    assert [r.offset for r in decoded] == list(range(base, base + len(records)))
    assert [(r.key, r.value) for r in decoded] == [(r.key, r.value) for r in records]
    expected = [r.timestamp for r in records] if magic else [-1] * len(records)
    assert [r.timestamp for r in decoded] == expected
    assert all(
        m.timestamp_type == (None if magic == 0 else TimestampType.CREATE_TIME) for m in messages
    )


@pytest.mark.spec("LEGACY-5", "LEGACY-6", "LEGACY-7")
@given(legacy_record_lists, magics, legacy_codecs, st.integers(0, 2**40), st.booleans())
def test_round_trip_every_codec(records, magic, codec, base, append_time):
    ts_type = TimestampType.LOG_APPEND_TIME if append_time else TimestampType.CREATE_TIME
    data = build(records, magic=magic, compression=codec, base_offset=base, timestamp_type=ts_type)
    decoded = list(iter_records(data))
    assert [r.offset for r in decoded] == list(range(base, base + len(records)))
    assert [(r.key, r.value) for r in decoded] == [(r.key, r.value) for r in records]
    if magic == 1 and codec and append_time:
        wrapper = next(iter_messages(data))
        assert {r.timestamp for r in decoded} == {wrapper.timestamp}
    elif magic == 1:
        assert [r.timestamp for r in decoded] == [r.timestamp for r in records]


@pytest.mark.spec("LEGACY-6", "LEGACY-7")
@pytest.mark.parametrize("magic", [0, 1])
def test_wrapper_offsets_and_timestamps(magic):
    records = [Record(b"a", b"1", 50), Record(b"b", b"2", 70), Record(b"c", b"3", 60)]
    data = build(records, magic=magic, compression=Compression.GZIP, base_offset=100)
    (wrapper,) = iter_messages(data)
    assert wrapper.offset == 102  # the last inner message's absolute offset
    assert wrapper.key is None
    inner = list(iter_messages(decompress(Compression.GZIP, wrapper.value)))
    if magic == 1:
        assert [m.offset for m in inner] == [0, 1, 2]  # relative (KIP-31)
        assert wrapper.timestamp == 70  # the largest inner timestamp
    else:
        assert [m.offset for m in inner] == [100, 101, 102]  # absolute
        assert wrapper.timestamp == -1
    assert [r.offset for r in unwrap(wrapper)] == [100, 101, 102]


@pytest.mark.spec("LEGACY-6")
def test_v1_wrapper_offset_zero_means_base_zero():
    inner = build([Record(b"a", b"1", 5), Record(b"b", b"2", 6)], magic=1)
    assert [r.offset for r in iter_records(_wrapper(1, inner, offset=0))] == [0, 1]
    assert [r.offset for r in iter_records(_wrapper(1, inner, offset=41))] == [40, 41]
    with pytest.raises(InvalidRecordError, match="below its last inner offset"):
        list(iter_records(_wrapper(1, build([Record(b"a", b"1")] * 6, magic=1), offset=3)))


@pytest.mark.spec("LEGACY-7")
def test_log_append_time_wrapper_overrides_inner_timestamps():
    inner = build([Record(b"a", b"1", 5), Record(b"b", b"2", 6)], magic=1)
    create = _wrapper(1, inner, offset=1, ts=999)
    append = _wrapper(1, inner, offset=1, ts=999, attrs=0x08)
    assert [r.timestamp for r in iter_records(create)] == [5, 6]
    assert [r.timestamp for r in iter_records(append)] == [999, 999]


@pytest.mark.spec("LEGACY-2")
@given(legacy_record_lists, magics, legacy_codecs, st.data())
def test_crc32_covers_magic_to_the_end(records, magic, codec, data):
    built = build(records, magic=magic, compression=codec)
    first, end = read_message(built)
    assert first.crc == zlib.crc32(built[16:end])
    i = data.draw(st.integers(16, end - 1))
    flipped = bytearray(built)
    flipped[i] ^= data.draw(st.integers(1, 255))
    with pytest.raises(CorruptRecordError) as info:
        read_message(bytes(flipped))
    assert info.value.code == ErrorCode.CORRUPT_MESSAGE
    flipped = bytearray(built)
    flipped[data.draw(st.integers(0, 7))] ^= 1  # the offset is outside the CRC
    read_message(bytes(flipped))


@pytest.mark.spec("LEGACY-2")
@pytest.mark.parametrize(
    ("name", "edit"),
    [
        ("size below the minimum", lambda b: struct.pack_into(">i", b, 8, 13)),
        ("negative size", lambda b: struct.pack_into(">i", b, 8, -1)),
        ("size overruns", lambda b: struct.pack_into(">i", b, 8, 2**31 - 1)),
        ("size shorter than fields", lambda b: struct.pack_into(">i", b, 8, len(b) - 13)),
        ("key length lies", lambda b: struct.pack_into(">i", b, 26, 100)),
        ("key length -2", lambda b: struct.pack_into(">i", b, 26, -2)),
        ("value length lies", lambda b: struct.pack_into(">i", b, 31, 2)),
    ],
)
def test_forged_lengths_are_corrupt(name, edit):
    data = bytearray(encode_message(0, b"k", b"value", magic=1, timestamp=1))
    edit(data)
    struct.pack_into(">I", data, 12, zlib.crc32(data[16:]))  # a valid CRC over the lie
    with pytest.raises(CorruptRecordError):
        read_message(bytes(data))
    assert name


@pytest.mark.spec("LEGACY-2")
@given(legacy_record_lists, magics, st.data())
def test_truncated_message_set_is_corrupt(records, magic, data):
    built = build(records, magic=magic)
    cut = data.draw(st.integers(1, len(built) - 1))
    ends = {0}
    for m in iter_messages(built):
        ends.add(max(ends) + m.size)
    if cut not in ends:
        with pytest.raises(CorruptRecordError):
            list(iter_messages(built[:cut]))


@pytest.mark.spec("LEGACY-3")
def test_magic_sits_at_byte_16_in_every_format():
    v0 = encode_message(0, b"k", b"v", magic=0)
    v1 = encode_message(0, b"k", b"v", magic=1)
    v2 = build_batch([Record(b"k", b"v")])
    assert [peek_magic(v0), peek_magic(v1), peek_magic(v2)] == [0, 1, 2]
    for legacy in (v0, v1):
        with pytest.raises(CorruptRecordError):
            BatchHeader.parse(legacy)
    with pytest.raises(CorruptRecordError, match="magic 2"):
        read_message(v2)
    with pytest.raises(CorruptRecordError, match="already a v2 batch"):
        to_v2_batch(v2)
    with pytest.raises(UnsupportedForMessageFormatError) as info:
        encode_message(0, b"k", b"v", magic=2)
    assert info.value.code == ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT


@pytest.mark.spec("LEGACY-4")
def test_attributes_codecs_and_no_headers():
    for codec_id in (4, 5, 6, 7):
        data = encode_message(0, None, b"x", magic=1, attributes=codec_id)
        with pytest.raises(UnsupportedCompressionTypeError):
            list(iter_records(data))
    with pytest.raises(UnsupportedCompressionTypeError):
        build([Record(b"k", b"v")], compression=Compression.ZSTD)
    with pytest.raises(UnsupportedForMessageFormatError):
        build([Record(b"k", b"v", 0, (Header("h", b"x"),))])
    (message,) = iter_messages(encode_message(0, b"k", b"v", magic=1, attributes=0x08))
    assert message.timestamp_type == TimestampType.LOG_APPEND_TIME
    (message,) = iter_messages(encode_message(0, b"k", b"v", magic=0, attributes=0x08))
    assert message.timestamp_type is None  # bit 3 means nothing in v0
    assert build([], magic=1, compression=Compression.GZIP) == b""


@pytest.mark.spec("LEGACY-5")
@pytest.mark.parametrize("magic", [0, 1])
def test_wrapper_defects_are_invalid(magic):
    one = build([Record(b"a", b"1")], magic=magic)
    other = build([Record(b"a", b"1")], magic=1 - magic)
    nested = build([Record(b"a", b"1")], magic=magic, compression=Compression.GZIP)
    null_value = encode_message(0, None, None, magic=magic, attributes=Compression.GZIP)
    cases = {
        "null value": null_value,
        "empty inner set": _wrapper(magic, b"", offset=0),
        "nested compression": _wrapper(magic, nested, offset=0),
        "magic mismatch": _wrapper(magic, other, offset=0),
    }
    for name, data in cases.items():
        with pytest.raises(InvalidRecordError) as info:
            list(iter_records(data))
        assert info.value.code == ErrorCode.INVALID_RECORD, name
    assert len(list(iter_records(_wrapper(magic, one, offset=0)))) == 1
    with pytest.raises(CorruptRecordError):  # garbage instead of gzip
        list(iter_records(encode_message(0, None, b"junk", magic=magic, attributes=1)))
    with pytest.raises(CorruptRecordError):  # inner set cut short
        list(iter_records(_wrapper(magic, one[:-3], offset=0)))


@pytest.mark.spec("LEGACY-8")
def test_magic_0_lz4_has_kafkas_broken_header_checksum():
    records = [Record(b"k", b"v" * 100)]
    v0_value = next(iter_messages(build(records, magic=0, compression=Compression.LZ4))).value
    v1_value = next(iter_messages(build(records, magic=1, compression=Compression.LZ4))).value
    broken = lz4_header_checksum(LZ4_MAGIC + b"\x60\x40")
    correct = lz4_header_checksum(b"\x60\x40")
    assert v0_value[:6] == v1_value[:6] == LZ4_MAGIC + b"\x60\x40"
    assert v0_value[6] == broken != correct == v1_value[6]
    # magic 0 reads either checksum (Kafka ignores it there) ...
    fixed = v0_value[:6] + bytes([correct]) + v0_value[7:]
    for value in (v0_value, fixed):
        data = encode_message(0, None, value, magic=0, attributes=Compression.LZ4)
        assert [r.value for r in iter_records(data)] == [b"v" * 100]
    # ... magic 1 insists on the correct one
    v1_broken = v1_value[:6] + bytes([broken]) + v1_value[7:]
    data = encode_message(0, None, v1_broken, magic=1, attributes=Compression.LZ4)
    with pytest.raises(CorruptRecordError, match="checksum"):
        list(iter_records(data))


@pytest.mark.spec("LEGACY-9")
@given(legacy_record_lists, magics, legacy_codecs, st.integers(0, 2**40))
def test_up_conversion_to_v2(records, magic, codec, base):
    data = build(records, magic=magic, compression=codec, base_offset=base)
    batch = to_v2_batch(data)
    header = validate_v2(batch)
    assert (header.base_offset, header.records_count, header.compression) == (
        base,
        len(records),
        codec,
    )
    assert (header.producer_id, header.base_sequence) == (-1, -1)
    decoded = list(RecordBatch(batch).records())
    assert [r.offset for r in decoded] == list(range(base, base + len(records)))
    expected = records if magic else [Record(r.key, r.value, -1) for r in records]
    assert [without_offset(r) for r in decoded] == expected
    assert validate_v2(to_v2_batch(data, compression=Compression.ZSTD)).compression == 4


@pytest.mark.spec("LEGACY-9")
def test_up_conversion_keeps_gaps_and_refuses_disorder():
    gappy = encode_message(10, b"a", b"1", magic=1) + encode_message(15, b"b", b"2", magic=1)
    batch = to_v2_batch(gappy)
    header = validate_v2(batch, check_count=False)
    assert (header.base_offset, header.last_offset_delta, header.records_count) == (10, 5, 2)
    backwards = encode_message(15, b"a", b"1", magic=1) + encode_message(10, b"b", b"2", magic=1)
    with pytest.raises(InvalidRecordError):
        to_v2_batch(backwards)
    with pytest.raises(InvalidRecordError):
        to_v2_batch(b"")


@pytest.mark.spec("LEGACY-2", "LEGACY-5")
@given(legacy_record_lists, magics, legacy_codecs, st.data())
def test_any_damage_raises_a_kafka_error(records, magic, codec, data):
    built = bytearray(build(records, magic=magic, compression=codec))
    for _ in range(data.draw(st.integers(1, 3))):
        built[data.draw(st.integers(0, len(built) - 1))] = data.draw(st.integers(0, 255))
    if data.draw(st.booleans()):  # re-checksum the first entry so the damage gets inside
        size = struct.unpack_from(">i", built, 8)[0]
        if 14 <= size <= len(built) - 12:
            struct.pack_into(">I", built, 12, zlib.crc32(built[16 : 12 + size]))
    try:
        list(iter_records(bytes(built), max_size=1 << 20))
        to_v2_batch(bytes(built), max_size=1 << 20)
    except KafkaError:
        pass
