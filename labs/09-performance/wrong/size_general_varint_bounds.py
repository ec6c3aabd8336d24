"""Bounds every varint by its general maximum (5 bytes, 10 for the timestamp), as Kafka's
sizeInUpperBound does for some: more than 16 bytes above the real size of small records."""

from __future__ import annotations

from kafka_ref.record.record import Header

LARGEST_TIMESTAMP_DELTA = 2**27 - 1
LARGEST_OFFSET_DELTA = 8191


def varint_size(n: int) -> int:
    """Bytes of a varint: one per 7 bits of the zigzag-encoded value."""
    zigzag = 2 * n if n >= 0 else -2 * n - 1
    size = 1
    while zigzag >= 0x80:
        zigzag >>= 7
        size += 1
    return size


def nullable_size(data: bytes | None) -> int:
    """A length (-1 for None) and the bytes."""
    return varint_size(-1) if data is None else varint_size(len(data)) + len(data)


def estimate_size(key: bytes | None, value: bytes | None, headers: tuple[Header, ...]) -> int:
    body = 1 + 10 + 5
    body += 5 + len(key or b"") + 5 + len(value or b"")
    body += 5
    for header in headers:
        body += 5 + len(header.key.encode("utf-8")) + 5 + len(header.value or b"")
    return 5 + body
