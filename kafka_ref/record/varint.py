"""Varints: the variable-length integers inside v2 records.

A v2 record spends few bytes on small numbers. Each integer is written **zigzag** encoded
(0, -1, 1, -2, 2 ... become 0, 1, 2, 3, 4 ..., so small negative numbers stay small) and
then as a **varint**: seven bits per byte, least significant group first, the top bit set
on every byte but the last. A key length of -1 (null) costs one byte (`0x01`); a delta of
300 costs two (`0xd8 0x04`).

These are the *record-level* varints of Kafka's `ByteUtils.writeVarint/writeVarlong`. The
protocol's flexible versions use *unsigned* varints with no zigzag (kafka_ref/protocol):
keep the two apart.

Rules: BATCH-6 in spec/record.md.
"""

from __future__ import annotations

from kafka_ref.errors import CorruptRecordError

_MAX_VARINT_BYTES = 5
_MAX_VARLONG_BYTES = 10


def zigzag(value: int) -> int:
    """Signed to unsigned: 0->0, -1->1, 1->2, -2->3 (works for any width)."""
    return (value << 1) ^ (value >> 63) if value < 0 else value << 1


def unzigzag(value: int) -> int:
    return (value >> 1) ^ -(value & 1)


def encode_varint(value: int) -> bytes:
    """Zigzag varint of a signed int32 or int64 value."""
    unsigned = zigzag(value) & 0xFFFFFFFFFFFFFFFF
    out = bytearray()
    while unsigned >= 0x80:
        out.append((unsigned & 0x7F) | 0x80)
        unsigned >>= 7
    out.append(unsigned)
    return bytes(out)


def decode_varint(buf: bytes | memoryview, pos: int, max_bytes: int = _MAX_VARLONG_BYTES):
    """Decode a zigzag varint at `pos`; returns (value, new position).

    A varint that runs past the buffer, or longer than `max_bytes`, is a corrupt record.
    """
    result = shift = 0
    end = len(buf)
    for i in range(max_bytes):
        if pos + i >= end:
            raise CorruptRecordError("varint runs past the end of the record")
        byte = buf[pos + i]
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return unzigzag(result), pos + i + 1
        shift += 7
    raise CorruptRecordError(f"varint longer than {max_bytes} bytes")


def decode_varint32(buf: bytes | memoryview, pos: int):
    """Like decode_varint, limited to the 5 bytes of an int32 (Kafka's readVarint)."""
    return decode_varint(buf, pos, _MAX_VARINT_BYTES)


def varint_size(value: int) -> int:
    """Bytes encode_varint(value) takes, without building it."""
    unsigned = zigzag(value) & 0xFFFFFFFFFFFFFFFF
    size = 1
    while unsigned >= 0x80:
        unsigned >>= 7
        size += 1
    return size
