"""Zigzag varints (BATCH-6): round trips at the int32/int64 edges, and every bad input."""

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kafka.record.util import decode_varint as kp_decode
from kafka.record.util import encode_varint as kp_encode

from kafka_ref.errors import CorruptRecordError, ErrorCode, InvalidRecordError, KafkaError
from kafka_ref.record.varint import (
    MalformedRecordError,
    decode_uvarint,
    decode_varint,
    decode_varint32,
    encode_varint,
    encode_varint32,
    unzigzag,
    varint_size,
    zigzag,
)
from tests.unit.record.conftest import INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN, int32s, int64s

pytestmark = pytest.mark.spec("BATCH-6")


@pytest.mark.parametrize(
    ("value", "encoded"),
    [
        (0, "00"),
        (-1, "01"),
        (1, "02"),
        (-64, "7f"),
        (64, "8001"),
        (300, "d804"),
        (INT32_MAX, "feffffff0f"),
        (INT32_MIN, "ffffffff0f"),
        (INT64_MAX, "feffffffffffffffff01"),
        (INT64_MIN, "ffffffffffffffffff01"),
    ],
)
def test_known_encodings(value, encoded):
    assert encode_varint(value).hex() == encoded
    assert decode_varint(bytes.fromhex(encoded), 0) == (value, len(encoded) // 2)


@given(int64s)
def test_varlong_round_trip(value):
    data = encode_varint(value)
    assert len(data) == varint_size(value) <= 10
    assert decode_varint(b"\xaa" + data + b"\xbb", 1) == (value, 1 + len(data))
    assert unzigzag(zigzag(value)) == value and zigzag(value) >= 0


@given(int32s)
def test_varint32_round_trip_and_matches_kafka_python(value):
    data = encode_varint32(value)
    assert len(data) <= 5
    assert decode_varint32(data, 0) == (value, len(data))
    out = bytearray()
    kp_encode(value, out.append)
    assert bytes(out) == data
    assert kp_decode(data, 0) == (value, len(data))


@given(st.one_of(st.integers(max_value=INT64_MIN - 1), st.integers(min_value=INT64_MAX + 1)))
def test_encoding_refuses_values_beyond_int64(value):
    with pytest.raises(InvalidRecordError):
        encode_varint(value)


@given(st.one_of(st.integers(max_value=INT32_MIN - 1), st.integers(min_value=INT32_MAX + 1)))
def test_int32_encoding_refuses_values_beyond_int32(value):
    with pytest.raises(InvalidRecordError):
        encode_varint32(value)


@pytest.mark.parametrize(
    ("data", "decoder"),
    [
        (b"", decode_varint),
        (b"\x80", decode_varint),  # continuation bit, then nothing
        (b"\xff" * 10 + b"\x01", decode_varint),  # 11 bytes
        (b"\xff" * 9 + b"\x7f", decode_varint),  # 10 bytes but 70 bits
        (b"\xff" * 5 + b"\x01", decode_varint32),  # 6 bytes
        (b"\xff\xff\xff\xff\x1f", decode_varint32),  # 5 bytes but 33 bits
        (b"\x80\x80\x80\x80\x10", decode_varint32),  # 2**32: wraps to 0 in Java
    ],
)
def test_bad_varints_raise_malformed_record(data, decoder):
    with pytest.raises(MalformedRecordError) as info:
        decoder(data, 0)
    err = info.value
    assert isinstance(err, CorruptRecordError) and isinstance(err, InvalidRecordError)
    assert err.code == ErrorCode.INVALID_RECORD


@given(st.binary(max_size=12), st.integers(0, 12))
def test_any_bytes_decode_or_raise_a_kafka_error(data, pos):
    for decoder in (decode_varint, decode_varint32, decode_uvarint):
        try:
            value, end = decoder(data, pos)
        except KafkaError:
            continue
        assert pos < end <= len(data)
        assert isinstance(value, int)


def test_unsigned_varint_is_plain_leb128():
    assert decode_uvarint(b"\xac\x02", 0) == (300, 2)
    with pytest.raises(CorruptRecordError):
        decode_uvarint(b"\x80\x80\x80\x80\x80\x01", 0)
