"""Single v2 records (BATCH-5, BATCH-12): round trips, and records that lie about themselves."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafka_ref.errors import ErrorCode, InvalidRecordError, KafkaError
from kafka_ref.record.record import (
    Header,
    MalformedRecordError,
    Record,
    decode_record,
    encode_record,
)
from kafka_ref.record.varint import encode_varint
from tests.unit.record.conftest import headers, int32s, nullable_bytes, records_with_headers


@pytest.mark.spec("BATCH-5")
def test_docstring_example_bytes():
    assert encode_record(Record(b"k", b"v"), 0, 0).hex(" ") == "10 00 00 00 02 6b 02 76 00"


@pytest.mark.spec("BATCH-5", "BATCH-10")
@given(records_with_headers, int32s, st.integers(-(2**40), 2**40), st.integers(0, 2**40))
def test_record_round_trip(record, offset_delta, timestamp_delta, base_offset):
    data = encode_record(record, offset_delta, timestamp_delta)
    decoded, end = decode_record(b"\x07" + data, 1, base_offset, 1000)
    assert end == 1 + len(data)
    assert decoded == Record(
        record.key, record.value, 1000 + timestamp_delta, record.headers, base_offset + offset_delta
    )


@pytest.mark.spec("BATCH-5")
def test_null_and_empty_are_different():
    null, _ = decode_record(encode_record(Record(None, None), 0, 0), 0, 0, 0)
    empty, _ = decode_record(encode_record(Record(b"", b""), 0, 0), 0, 0, 0)
    assert (null.key, null.value) == (None, None) and null.is_tombstone
    assert (empty.key, empty.value) == (b"", b"") and not empty.is_tombstone


@pytest.mark.spec("BATCH-12")
@given(headers)
def test_headers_round_trip_with_null_values_and_unicode_keys(hdrs):
    record, _ = decode_record(encode_record(Record(b"k", b"v", 0, hdrs), 0, 0), 0, 0, 0)
    assert record.headers == hdrs


@pytest.mark.spec("BATCH-12")
def test_header_key_that_is_not_utf8_round_trips_byte_for_byte():
    raw = encode_record(Record(b"k", b"v", 0, (Header("ab", b"1"),)), 0, 0)
    forged = bytearray(raw)
    forged[forged.index(b"ab")] = 0xFF  # an invalid UTF-8 start byte
    record, _ = decode_record(bytes(forged), 0, 0, 0)
    assert record.headers[0].key == "\udcffb"
    assert encode_record(record, 0, 0) == bytes(forged)


@pytest.mark.spec("BATCH-12")
def test_header_key_must_be_a_string():
    with pytest.raises(InvalidRecordError):
        encode_record(Record(b"k", b"v", 0, (Header(None, b"x"),)), 0, 0)
    with pytest.raises(InvalidRecordError):
        encode_record(Record(b"k", b"v", 0, (Header("\ud800", b"x"),)), 0, 0)


def _body(*fields: bytes) -> bytes:
    """A record from raw fields, with a correct length prefix."""
    body = b"".join(fields)
    return encode_varint(len(body)) + body


V = encode_varint
OK_TAIL = [V(1), b"k", V(1), b"v", V(0)]


@pytest.mark.spec("BATCH-5", "BATCH-12")
@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("empty buffer", b""),
        ("length zero", V(0)),
        ("negative length", V(-5) + b"\x00" * 8),
        ("length overruns", V(40) + b"\x00" * 8),
        ("length shorter than fields", V(5) + _body(b"\x00", V(0), V(0), *OK_TAIL)[1:]),
        ("length longer than fields", _body(b"\x00", V(0), V(0), *OK_TAIL, b"\x00")),
        ("key length lies", _body(b"\x00", V(0), V(0), V(30), b"k", V(1), b"v", V(0))),
        ("key length -2", _body(b"\x00", V(0), V(0), V(-2), V(1), b"v", V(0))),
        ("value length lies", _body(b"\x00", V(0), V(0), V(1), b"k", V(9), b"v", V(0))),
        ("header count lies", _body(b"\x00", V(0), V(0), V(1), b"k", V(1), b"v", V(3))),
        ("negative header count", _body(b"\x00", V(0), V(0), V(1), b"k", V(1), b"v", V(-1))),
        ("null header key", _body(b"\x00", V(0), V(0), V(-1), V(-1), V(1), V(-1), V(-1))),
        ("header value lies", _body(b"\x00", V(0), V(0), V(-1), V(-1), V(1), V(1), b"h", V(7))),
        ("offset delta beyond int32", _body(b"\x00", V(0), V(2**40), *OK_TAIL)),
        ("varint too long", _body(b"\x00", b"\xff" * 11, V(0), *OK_TAIL)),
    ],
)
def test_malformed_records_raise_invalid_record(name, data):
    with pytest.raises(MalformedRecordError) as info:
        decode_record(data, 0, 0, 0)
    assert info.value.code == ErrorCode.INVALID_RECORD, name


@pytest.mark.spec("BATCH-5")
def test_header_count_is_checked_before_reading_headers():
    """A forged count of two billion fails at once, not after reading what is there."""
    data = _body(b"\x00", V(0), V(0), V(1), b"k", V(1), b"v", V(2**31 - 1), V(1), b"h", V(-1))
    with pytest.raises(MalformedRecordError, match="declares 2147483647 headers"):
        decode_record(data, 0, 0, 0)


@pytest.mark.spec("BATCH-5")
@given(records_with_headers, st.data())
def test_any_corruption_of_a_record_raises_a_kafka_error_or_decodes(record, data):
    raw = bytearray(encode_record(record, 3, 5))
    i = data.draw(st.integers(0, len(raw) - 1))
    raw[i] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(raw)))
    try:
        _, end = decode_record(bytes(raw[:cut]), 0, 0, 0)
    except KafkaError:
        return
    assert end <= cut


@pytest.mark.spec("BATCH-5")
@given(nullable_bytes)
def test_offset_delta_beyond_int32_cannot_be_encoded(value):
    with pytest.raises(InvalidRecordError):
        encode_record(Record(b"k", value), 2**31, 0)
