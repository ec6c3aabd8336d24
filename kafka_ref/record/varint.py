"""Varints: the variable-length integers inside v2 records.

A v2 record spends few bytes on small numbers. Each integer is written **zigzag** encoded
(0, -1, 1, -2, 2 ... become 0, 1, 2, 3, 4 ..., so small negative numbers stay small) and
then as a **varint**: seven bits per byte, least significant group first, the top bit set
on every byte but the last. A key length of -1 (null) costs one byte (`0x01`); a delta of
300 costs two (`0xd8 0x04`).

    value   zigzag   bytes
    0       0        00
    -1      1        01
    1       2        02
    -64     127      7f
    64      128      80 01
    300     600      d8 04
    int32 min       ff ff ff ff 0f    (5 bytes: the most an int32 takes)
    int64 min       ff ... ff 01      (10 bytes: the most an int64 takes)

These are the *record-level* varints of Kafka's `ByteUtils.writeVarint/readVarint` (int32:
offsetDelta, lengths, header count) and `writeVarlong/readVarlong` (int64: timestampDelta).
The protocol's flexible versions use *unsigned* varints with no zigzag (kafka_ref/protocol):
keep the two apart.

A decoder must not trust its input. A varint that runs off the end of the buffer, one with
more than 5 (int32) or 10 (int64) bytes, or one whose value does not fit its width is a
malformed record. Kafka's `readVarint` throws for the first two and silently drops the high
bits of the third; kafka-ref rejects all three, so a forged length can never turn into a
huge or negative number by wrap-around.

Rules: BATCH-6 in spec/record.md.
"""

from __future__ import annotations

from kafka_ref.errors import CorruptRecordError, InvalidRecordError

_MAX_VARINT_BYTES = 5
_MAX_VARLONG_BYTES = 10
INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1
_MASK64 = (1 << 64) - 1


class MalformedRecordError(InvalidRecordError, CorruptRecordError):
    """A record that does not parse, inside a batch whose CRC is fine.

    Kafka answers INVALID_RECORD (87) here: `DefaultRecord.readFrom` turns every underflow,
    bad varint and length that disagrees into an `InvalidRecordException`. The bytes are
    still unusable, so this is also a `CorruptRecordError`: code that catches corruption
    (log recovery, a consumer) catches this too, and the error code it carries is Kafka's.
    """


def zigzag(value: int) -> int:
    """Signed to unsigned: 0->0, -1->1, 1->2, -2->3 (Kafka: `(v << 1) ^ (v >> 63)`)."""
    return -2 * value - 1 if value < 0 else 2 * value


def unzigzag(value: int) -> int:
    """Unsigned to signed, the inverse of `zigzag`."""
    return (value >> 1) ^ -(value & 1)


def encode_varint(value: int) -> bytes:
    """Zigzag varint of a signed int64 (an int32 gives the same bytes as Kafka's writeVarint).

    A value outside int64 cannot be written: it raises InvalidRecordError instead of being
    silently truncated to its low 64 bits.
    """
    if not INT64_MIN <= value <= INT64_MAX:
        raise InvalidRecordError(f"{value} does not fit a varlong (int64)")
    unsigned = zigzag(value)
    out = bytearray()
    while unsigned >= 0x80:
        out.append((unsigned & 0x7F) | 0x80)
        unsigned >>= 7
    out.append(unsigned)
    return bytes(out)


def encode_varint32(value: int) -> bytes:
    """Like encode_varint, for a field Kafka declares int32 (offsetDelta, a length)."""
    if not INT32_MIN <= value <= INT32_MAX:
        raise InvalidRecordError(f"{value} does not fit a varint (int32)")
    return encode_varint(value)


def decode_varint(
    buf: bytes | bytearray | memoryview, pos: int, max_bytes: int = _MAX_VARLONG_BYTES
) -> tuple[int, int]:
    """Decode a zigzag varint at `pos`; returns (value, new position).

    `max_bytes` is 10 for an int64 (Kafka's readVarlong) and 5 for an int32 (readVarint).
    A varint that runs past the buffer, is longer than `max_bytes`, or whose value does not
    fit its width (64 bits, or 32 when max_bytes is 5) raises MalformedRecordError.
    """
    # Written for speed: every record of every decoded batch runs through here several times.
    end = len(buf)
    if pos >= end:
        raise MalformedRecordError("varint runs past the end of the record")
    byte = buf[pos]
    if byte < 0x80:  # most varints in a record (deltas, lengths, counts) are one byte
        return (byte >> 1) ^ -(byte & 1), pos + 1
    result, shift, i = byte & 0x7F, 7, pos + 1
    limit = min(pos + max_bytes, end)
    while i < limit:
        byte = buf[i]
        result |= (byte & 0x7F) << shift
        i += 1
        if byte < 0x80:
            if result >> (64 if max_bytes > _MAX_VARINT_BYTES else 32):
                raise MalformedRecordError(
                    f"varint does not fit in {64 if max_bytes > _MAX_VARINT_BYTES else 32} bits"
                )
            return (result >> 1) ^ -(result & 1), i
        shift += 7
    if i >= end and i < pos + max_bytes:
        raise MalformedRecordError("varint runs past the end of the record")
    raise MalformedRecordError(f"varint longer than {max_bytes} bytes")


def decode_varint32(buf: bytes | bytearray | memoryview, pos: int) -> tuple[int, int]:
    """Like decode_varint, limited to the 5 bytes and 32 bits of an int32 (readVarint)."""
    return decode_varint(buf, pos, _MAX_VARINT_BYTES)


def decode_uvarint(buf: bytes | bytearray | memoryview, pos: int, max_bytes: int = 5):
    """An *unsigned* LEB128 varint, no zigzag (snappy's length preamble uses one).

    Returns (value, new position); a truncated or over-long one raises CorruptRecordError.
    """
    result = shift = 0
    for i in range(max_bytes):
        if pos + i >= len(buf):
            raise CorruptRecordError("unsigned varint runs past the end of the data")
        byte = buf[pos + i]
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos + i + 1
        shift += 7
    raise CorruptRecordError(f"unsigned varint longer than {max_bytes} bytes")


def varint_size(value: int) -> int:
    """Bytes encode_varint(value) takes, without building it (Kafka: sizeOfVarlong)."""
    unsigned = zigzag(value) & _MASK64
    size = 1
    while unsigned >= 0x80:
        unsigned >>= 7
        size += 1
    return size
