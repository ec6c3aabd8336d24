"""Forgets the header count, a varint written even when there is no header."""

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
    body = 1 + varint_size(LARGEST_TIMESTAMP_DELTA) + varint_size(LARGEST_OFFSET_DELTA)
    body += nullable_size(key) + nullable_size(value)
    for header in headers:
        header_key = header.key.encode("utf-8")
        body += varint_size(len(header_key)) + len(header_key) + nullable_size(header.value)
    return varint_size(body) + body
