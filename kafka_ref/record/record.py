"""A record: one key/value pair with a timestamp and headers, as v2 batches hold it.

Inside a v2 batch every record is written relative to the batch header, so that a record
costs a few bytes beyond its key and value (Kafka's `DefaultRecord`):

    length          varint   bytes that follow
    attributes      int8     unused, 0
    timestampDelta  varlong  timestamp - batch baseTimestamp
    offsetDelta     varint   offset - batch baseOffset
    keyLength       varint   -1 for a null key
    key             bytes
    valueLength     varint   -1 for a null value (a *tombstone* on a compacted topic)
    value           bytes
    headerCount     varint
    headers         [keyLength varint, key UTF-8, valueLength varint (-1 null), value]

Offsets and timestamps are deltas, so the broker can give a whole batch its offsets by
writing the batch's base offset alone: the records never change.

Rules: BATCH-5, BATCH-6 in spec/record.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from kafka_ref.errors import CorruptRecordError
from kafka_ref.record.varint import decode_varint, decode_varint32, encode_varint


class Header(NamedTuple):
    """A record header: a string key and a nullable bytes value."""

    key: str
    value: bytes | None


@dataclass(frozen=True, slots=True)
class Record:
    """One record. `offset` is -1 until the record is in a log (or decoded from one)."""

    key: bytes | None
    value: bytes | None
    timestamp: int = 0
    headers: tuple[Header, ...] = ()
    offset: int = -1

    @property
    def is_tombstone(self) -> bool:
        """A null value: on a compacted topic, 'delete this key'."""
        return self.value is None


def encode_record(record: Record, offset_delta: int, timestamp_delta: int) -> bytes:
    """The bytes of one record inside a batch, length prefix included."""
    parts = [b"\x00", encode_varint(timestamp_delta), encode_varint(offset_delta)]
    _append_nullable(parts, record.key)
    _append_nullable(parts, record.value)
    parts.append(encode_varint(len(record.headers)))
    for header in record.headers:
        key = header.key.encode("utf-8")
        parts.append(encode_varint(len(key)))
        parts.append(key)
        _append_nullable(parts, header.value)
    body = b"".join(parts)
    return encode_varint(len(body)) + body


def _append_nullable(parts: list[bytes], data: bytes | None) -> None:
    if data is None:
        parts.append(encode_varint(-1))
    else:
        parts.append(encode_varint(len(data)))
        parts.append(bytes(data))


def decode_record(buf: bytes | memoryview, pos: int, base_offset: int, base_timestamp: int):
    """Decode the record at `pos`; returns (Record, position after it).

    Every length is checked against the record's own declared length, so a lying length
    raises CorruptRecordError instead of reading the next record's bytes.
    """
    length, pos = decode_varint32(buf, pos)
    end = pos + length
    if length < 0 or end > len(buf):
        raise CorruptRecordError(f"record length {length} overruns the batch")
    view = memoryview(buf)[:end]
    if pos >= end:
        raise CorruptRecordError("empty record")
    pos += 1  # attributes: unused since v2
    timestamp_delta, pos = decode_varint(view, pos)
    offset_delta, pos = decode_varint32(view, pos)
    key, pos = _read_nullable(view, pos)
    value, pos = _read_nullable(view, pos)
    count, pos = decode_varint32(view, pos)
    if count < 0 or count > end - pos:
        raise CorruptRecordError(f"record declares {count} headers")
    headers = []
    for _ in range(count):
        raw_key, pos = _read_nullable(view, pos)
        if raw_key is None:
            raise CorruptRecordError("record header with a null key")
        header_value, pos = _read_nullable(view, pos)
        try:
            headers.append(Header(raw_key.decode("utf-8"), header_value))
        except UnicodeDecodeError:
            raise CorruptRecordError("record header key is not UTF-8") from None
    if pos != end:
        raise CorruptRecordError(f"record length {length} disagrees with its fields")
    record = Record(
        key, value, base_timestamp + timestamp_delta, tuple(headers), base_offset + offset_delta
    )
    return record, end


def _read_nullable(view: memoryview, pos: int):
    size, pos = decode_varint32(view, pos)
    if size == -1:
        return None, pos
    if size < 0 or pos + size > len(view):
        raise CorruptRecordError(f"field length {size} overruns the record")
    return bytes(view[pos : pos + size]), pos + size
