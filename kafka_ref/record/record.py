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

A record `b"k" -> b"v"` at delta 0 takes 9 bytes: `10 00 00 00 02 6b 02 76 00` (length 8,
attributes, two zero deltas, key length 1 and `k`, value length 1 and `v`, no headers).

Decoding trusts nothing. Every length is checked against the record's own declared length,
the header count against the bytes left, and the fields must use up the record exactly.
A record that breaks any of these raises `MalformedRecordError`, which carries Kafka's
INVALID_RECORD (Kafka: `DefaultRecord.readFrom` throws `InvalidRecordException`).

Header keys are UTF-8 strings on the wire. Kafka decodes them leniently (bad bytes become
U+FFFD); kafka-ref decodes them with `surrogateescape`, so a key that is not valid UTF-8
still decodes and encodes back to the very same bytes (a re-written batch keeps its CRC).

Rules: BATCH-5, BATCH-6, BATCH-9, BATCH-12 in spec/record.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from kafka_ref.errors import InvalidRecordError
from kafka_ref.record.varint import (
    MalformedRecordError,
    decode_varint,
    decode_varint32,
    encode_varint,
    encode_varint32,
)

__all__ = ["Header", "MalformedRecordError", "Record", "decode_record", "encode_record"]


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
    """The bytes of one record inside a batch, length prefix included.

    A field that cannot be represented (an offset delta beyond int32, a timestamp delta
    beyond int64, a header key that is not a string) raises InvalidRecordError.
    """
    parts = [b"\x00", encode_varint(timestamp_delta), encode_varint32(offset_delta)]
    _append_nullable(parts, record.key)
    _append_nullable(parts, record.value)
    parts.append(encode_varint32(len(record.headers)))
    for header in record.headers:
        try:
            key = header.key.encode("utf-8", "surrogateescape")
        except (AttributeError, UnicodeEncodeError) as err:
            raise InvalidRecordError(f"header key {header.key!r} is not a string: {err}") from None
        parts.append(encode_varint32(len(key)))
        parts.append(key)
        _append_nullable(parts, header.value)
    body = b"".join(parts)
    return encode_varint32(len(body)) + body


def _append_nullable(parts: list[bytes], data: bytes | None) -> None:
    if data is None:
        parts.append(encode_varint(-1))
    else:
        data = bytes(data)
        parts.append(encode_varint32(len(data)))
        parts.append(data)


def decode_record(
    buf: bytes | bytearray | memoryview,
    pos: int,
    base_offset: int,
    base_timestamp: int,
    *,
    log_append_time: int | None = None,
) -> tuple[Record, int]:
    """Decode the record at `pos`; returns (Record, position after it).

    `log_append_time`, when the batch is LogAppendTime, replaces every record's timestamp
    (Kafka: the batch's maxTimestamp is the time the broker appended it).
    """
    length, pos = decode_varint32(buf, pos)
    end = pos + length
    if length <= 0 or end > len(buf):
        raise MalformedRecordError(
            f"record length {length} at position {pos} overruns the {len(buf)} bytes there"
        )
    # The record's own bytes, as `bytes`: its fields cannot run past its end (Kafka reads a
    # record from a buffer limited to its length), and indexing and slicing bytes is several
    # times faster than a memoryview, which matters for compaction and the Spark sources.
    view = bytes(buf[pos:end])
    at = 1  # attributes: unused since v2, ignored like Kafka does
    timestamp_delta, at = decode_varint(view, at)
    offset_delta, at = decode_varint32(view, at)
    key, at = _read_nullable(view, at)
    value, at = _read_nullable(view, at)
    count, at = decode_varint32(view, at)
    # A header takes at least two bytes (two lengths), so a count above the bytes left lies.
    if count < 0 or 2 * count > length - at:
        raise MalformedRecordError(f"record declares {count} headers in {length - at} bytes")
    headers = []
    for _ in range(count):
        raw_key, at = _read_nullable(view, at)
        if raw_key is None:
            raise MalformedRecordError("record header with a null key")
        header_value, at = _read_nullable(view, at)
        headers.append(Header(raw_key.decode("utf-8", "surrogateescape"), header_value))
    if at != length:
        raise MalformedRecordError(f"record length {length} disagrees with its fields ({at} used)")
    timestamp = base_timestamp + timestamp_delta if log_append_time is None else log_append_time
    record = Record(key, value, timestamp, tuple(headers), base_offset + offset_delta)
    return record, end


def _read_nullable(record: bytes, pos: int) -> tuple[bytes | None, int]:
    """A varint length then that many bytes; -1 is null and any other negative is a lie."""
    size, pos = decode_varint32(record, pos)
    if size == -1:
        return None, pos
    if size < 0 or pos + size > len(record):
        raise MalformedRecordError(f"field length {size} overruns the record")
    return record[pos : pos + size], pos + size
