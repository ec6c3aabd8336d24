"""Keeps h as a signed Java int all along and shifts with Python's >> (Java's >>, which
copies the sign bit), where murmur2 (CLIENT-2) uses >>>: wrong when bit 31 is set."""

from __future__ import annotations

import random
import struct
from collections.abc import Sequence

SEED, M, R, MASK = 0x9747B28C, 0x5BD1E995, 24, 0xFFFFFFFF


def signed(n: int) -> int:
    n &= MASK
    return n - (1 << 32) if n & 0x80000000 else n


def murmur2(data: bytes) -> int:
    length = len(data)
    h = signed(SEED ^ length)
    whole = length & ~3
    for (k,) in struct.iter_unpack("<i", data[:whole]):
        k = signed(k * M)
        k = signed(k ^ (k >> R))
        k = signed(k * M)
        h = signed(h * M)
        h = signed(h ^ k)
    rest = length & 3
    if rest == 3:
        h = signed(h ^ (data[whole + 2] << 16))
    if rest >= 2:
        h = signed(h ^ (data[whole + 1] << 8))
    if rest >= 1:
        h = signed(h ^ data[whole])
        h = signed(h * M)
    h = signed(h ^ (h >> 13))
    h = signed(h * M)
    h = signed(h ^ (h >> 15))
    return h


def partition_for_key(key_bytes: bytes, num_partitions: int) -> int:
    return (murmur2(key_bytes) & 0x7FFFFFFF) % num_partitions


def choose_sticky_partition(
    available: Sequence[int], partition_count: int, current: int | None, rng: random.Random
) -> int:
    if not available:
        return rng.randrange(partition_count)
    if len(available) == 1:
        return available[0]
    others = [p for p in available if p != current]
    return others[rng.randrange(len(others))]


def batch_is_sendable(full: bool, waited_ms: int, linger_ms: int, forced: bool) -> bool:
    return full or waited_ms >= linger_ms or forced
