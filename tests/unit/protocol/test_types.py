"""The primitive codecs in isolation: round trips, Kafka's exact bytes, and refusals."""

import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafka_ref.errors import ErrorCode
from kafka_ref.protocol import types as t
from kafka_ref.protocol.errors import ProtocolDecodeError, ProtocolEncodeError

TEXT = st.text(st.characters(codec="utf-8"), max_size=40)
NUMBERS = [
    (t.INT8, st.integers(-(2**7), 2**7 - 1)),
    (t.INT16, st.integers(-(2**15), 2**15 - 1)),
    (t.INT32, st.integers(-(2**31), 2**31 - 1)),
    (t.INT64, st.integers(-(2**63), 2**63 - 1)),
    (t.UINT16, st.integers(0, 2**16 - 1)),
    (t.UINT32, st.integers(0, 2**32 - 1)),
    (t.FLOAT64, st.floats(allow_nan=False)),
    (t.UNSIGNED_VARINT, st.integers(0, 2**32 - 1)),
    (t.VARINT, st.integers(-(2**31), 2**31 - 1)),
    (t.VARLONG, st.integers(-(2**63), 2**63 - 1)),
    (t.BOOLEAN, st.booleans()),
    (t.UUID, st.uuids()),
]
SIZED = [
    (t.STRING, TEXT),
    (t.NULLABLE_STRING, st.none() | TEXT),
    (t.COMPACT_STRING, TEXT),
    (t.COMPACT_NULLABLE_STRING, st.none() | TEXT),
    (t.BYTES, st.binary(max_size=64)),
    (t.NULLABLE_BYTES, st.none() | st.binary(max_size=64)),
    (t.COMPACT_BYTES, st.binary(max_size=64)),
    (t.COMPACT_NULLABLE_BYTES, st.none() | st.binary(max_size=64)),
    (t.RECORDS, st.none() | st.binary(max_size=64)),
    (t.COMPACT_RECORDS, st.none() | st.binary(max_size=64)),
    (t.Array(t.INT32), st.lists(st.integers(-(2**31), 2**31 - 1), max_size=5)),
    (t.Array(t.STRING, nullable=True), st.none() | st.lists(TEXT, max_size=5)),
    (t.Array(t.INT64, compact=True), st.lists(st.integers(0, 2**40), max_size=5)),
    (t.Array(t.COMPACT_STRING, True, True), st.none() | st.lists(TEXT, max_size=5)),
]


def roundtrip(codec, value):
    data = codec.encode(value)
    decoded, end = codec.decode(memoryview(b"\x99" + data + b"\x77"), 1)
    assert end == len(data) + 1, "a decoder must stop exactly at the end of its value"
    assert decoded == value
    return data


@pytest.mark.spec("PROTO-5")
@pytest.mark.parametrize("codec,values", NUMBERS, ids=[c.name for c, _ in NUMBERS])
@given(data=st.data())
def test_numbers_round_trip(codec, values, data):
    roundtrip(codec, data.draw(values))


@pytest.mark.spec("PROTO-4", "PROTO-7", "PROTO-16")
@pytest.mark.parametrize("codec,values", SIZED, ids=[c.name for c, _ in SIZED])
@given(data=st.data())
def test_sized_types_round_trip(codec, values, data):
    roundtrip(codec, data.draw(values))


@pytest.mark.spec("PROTO-5")
@pytest.mark.parametrize(
    "codec,value,wire",
    [
        (t.UNSIGNED_VARINT, 0, "00"),
        (t.UNSIGNED_VARINT, 127, "7f"),
        (t.UNSIGNED_VARINT, 128, "8001"),
        (t.UNSIGNED_VARINT, 300, "ac02"),
        (t.UNSIGNED_VARINT, 2**32 - 1, "ffffffff0f"),
        (t.VARINT, 0, "00"),
        (t.VARINT, -1, "01"),
        (t.VARINT, 1, "02"),
        (t.VARINT, -64, "7f"),
        (t.VARINT, 64, "8001"),
        (t.VARINT, -(2**31), "ffffffff0f"),
        (t.VARLONG, 2**63 - 1, "feffffffffffffffff01"),
        (t.INT16, -2, "fffe"),
        (t.INT32, 1, "00000001"),
        (t.UINT16, 65535, "ffff"),
        (t.BOOLEAN, True, "01"),
        (t.UUID, uuid.UUID(int=1), "00" * 15 + "01"),
    ],
)
def test_numbers_have_kafkas_exact_encoding(codec, value, wire):
    assert codec.encode(value).hex() == wire
    assert codec.decode(bytes.fromhex(wire), 0) == (value, len(wire) // 2)


@pytest.mark.spec("PROTO-4")
@pytest.mark.parametrize(
    "codec,value,wire",
    [
        (t.STRING, "", "0000"),
        (t.STRING, "ab", "00026162"),
        (t.NULLABLE_STRING, None, "ffff"),
        (t.COMPACT_STRING, "", "01"),
        (t.COMPACT_STRING, "ab", "036162"),
        (t.COMPACT_NULLABLE_STRING, None, "00"),
        (t.STRING, "é", "0002c3a9"),
        (t.COMPACT_STRING, "é", "03c3a9"),
    ],
)
def test_strings_are_utf8_with_an_int16_or_a_compact_length(codec, value, wire):
    assert codec.encode(value).hex() == wire
    assert codec.decode(bytes.fromhex(wire), 0) == (value, len(wire) // 2)


@pytest.mark.spec("PROTO-4")
@pytest.mark.parametrize("codec,wire", [(t.STRING, "0002c328"), (t.COMPACT_STRING, "03c328")])
def test_a_string_that_is_not_utf8_is_an_invalid_request(codec, wire):
    with pytest.raises(ProtocolDecodeError, match="not valid UTF-8") as info:
        codec.decode(memoryview(bytes.fromhex(wire)), 0)
    assert info.value.code == ErrorCode.INVALID_REQUEST


@pytest.mark.spec("PROTO-7", "PROTO-16")
@pytest.mark.parametrize(
    "codec,value,wire",
    [
        (t.NULLABLE_BYTES, None, "ffffffff"),
        (t.BYTES, b"\x01", "0000000101"),
        (t.COMPACT_BYTES, b"", "01"),
        (t.COMPACT_NULLABLE_BYTES, None, "00"),
        (t.RECORDS, None, "ffffffff"),
        (t.Array(t.INT16), [1, 2], "0000000200010002"),
        (t.Array(t.INT16, nullable=True), None, "ffffffff"),
        (t.Array(t.INT16, compact=True), [], "01"),
        (t.Array(t.INT16, True, True), None, "00"),
    ],
)
def test_length_prefixed_types_have_kafkas_exact_encoding(codec, value, wire):
    assert codec.encode(value).hex() == wire
    assert codec.decode(bytes.fromhex(wire), 0)[0] == value


@pytest.mark.spec("PROTO-8")
@given(
    tags=st.dictionaries(st.integers(0, 2**31), st.binary(max_size=20), max_size=5),
)
def test_tag_buffer_round_trips_in_ascending_tag_order(tags):
    data = t.TAG_BUFFER.encode(list(tags.items()))
    decoded, end = t.TAG_BUFFER.decode(data, 0)
    assert end == len(data)
    assert [(tag, bytes(v)) for tag, v in decoded] == sorted(tags.items())


@pytest.mark.spec("PROTO-8")
def test_tag_buffer_bytes():
    assert t.TAG_BUFFER.encode([]) == b"\x00"
    assert t.TAG_BUFFER.encode([(3, b"\x05"), (1, b"")]).hex() == "02" + "0100" + "030105"
    with pytest.raises(ProtocolEncodeError, match="twice"):
        t.TAG_BUFFER.encode([(1, b""), (1, b"")])


@pytest.mark.spec("PROTO-9")
def test_records_decode_to_a_zero_copy_view_of_the_buffer():
    buf = bytearray(b"\x00\x00\x00\x03abc")
    records, end = t.RECORDS.decode(memoryview(buf), 0)
    assert isinstance(records, memoryview) and end == 7
    buf[4] = ord("X")  # the view sees the change: it shares the buffer, it is not a copy
    assert bytes(records) == b"Xbc"
    assert isinstance(t.BYTES.decode(b"\x00\x00\x00\x01a", 0)[0], bytes)


BAD_INPUT = [
    (t.INT32, "000000", "needs 4 bytes"),
    (t.INT64, "", "needs 8 bytes"),
    (t.BOOLEAN, "", "needs 1 bytes"),
    (t.UUID, "00" * 15, "needs 16 bytes"),
    (t.UNSIGNED_VARINT, "80", "cut off"),
    (t.UNSIGNED_VARINT, "ffffffffff01", "longer than 5 bytes"),
    (t.UNSIGNED_VARINT, "ffffffff7f", "out of range"),
    (t.VARLONG, "ff" * 10 + "01", "longer than 10 bytes"),
    (t.STRING, "0005616263", "needs 5 bytes but only 3"),
    (t.STRING, "ffff", "not nullable"),
    (t.STRING, "fffe", "negative length -2"),
    (t.STRING, "8000", "negative length -32768"),
    (t.STRING, "0002c328", "not valid UTF-8"),
    (t.COMPACT_STRING, "00", "not nullable"),
    (t.COMPACT_STRING, "0a61", "needs 9 bytes"),
    (t.BYTES, "7fffffff00", "needs 2147483647 bytes"),
    (t.NULLABLE_BYTES, "fffffffe", "negative length"),
    (t.RECORDS, "7fffffff", "needs 2147483647 bytes"),
    (t.COMPACT_RECORDS, "ffffffff0f", "needs 4294967294 bytes"),
    (t.Array(t.INT32), "ffffffff", "not nullable"),
    (t.Array(t.INT32), "7fffffff00000000", "cannot fit"),
    (t.Array(t.INT32, nullable=True), "fffffff0", "negative length"),
    (t.Array(t.INT32, compact=True), "ffffffff0f", "cannot fit"),
    (t.Array(t.STRING), "00000002000161ffff", "[1]"),
    (t.TAG_BUFFER, "ffffff7f", "cannot fit"),
    (t.TAG_BUFFER, "01000501", "tagged field 0 needs 5 bytes"),
]


@pytest.mark.spec("PROTO-2", "PROTO-16")
@pytest.mark.parametrize(
    "codec,wire,reason", BAD_INPUT, ids=[f"{c.name}-{w}" for c, w, _ in BAD_INPUT]
)
def test_malformed_input_raises_the_typed_decode_error(codec, wire, reason):
    with pytest.raises(ProtocolDecodeError) as info:
        codec.decode(memoryview(bytes.fromhex(wire)), 0)
    assert reason in str(info.value)
    assert info.value.code == ErrorCode.INVALID_REQUEST


@pytest.mark.spec("PROTO-16")
@pytest.mark.parametrize(
    "codec,value",
    [
        (t.INT8, 128),
        (t.INT16, 2**15),
        (t.INT32, None),
        (t.INT64, True),
        (t.INT32, 1.5),
        (t.UINT16, -1),
        (t.UNSIGNED_VARINT, -1),
        (t.UNSIGNED_VARINT, 2**32),
        (t.VARINT, 2**31),
        (t.BOOLEAN, 1),
        (t.UUID, "not-a-uuid"),
        (t.STRING, None),
        (t.STRING, b"bytes"),
        (t.STRING, "x" * 32768),
        (t.STRING, "\ud800"),
        (t.COMPACT_STRING, None),
        (t.BYTES, "text"),
        (t.Array(t.INT32), None),
        (t.Array(t.INT32), {1, 2}),
        (t.Array(t.INT8), [1, 300]),
    ],
)
def test_values_that_do_not_fit_raise_the_typed_encode_error(codec, value):
    with pytest.raises(ProtocolEncodeError):
        codec.encode(value)
