"""Makes the hash positive with abs() instead of toPositive (n & 0x7fffffff), against
CLIENT-2: every key whose hash is negative goes to another partition than Java's."""

from __future__ import annotations

import random
import struct
from collections.abc import Sequence

SEED, M, R, MASK = 0x9747B28C, 0x5BD1E995, 24, 0xFFFFFFFF


def murmur2(data: bytes) -> int:
    length = len(data)
    h = (SEED ^ length) & MASK
    whole = length & ~3
    for (k,) in struct.iter_unpack("<I", data[:whole]):
        k = (k * M) & MASK
        k ^= k >> R
        k = (k * M) & MASK
        h = (h * M) & MASK
        h ^= k
    rest = length & 3
    if rest == 3:
        h ^= data[whole + 2] << 16
    if rest >= 2:
        h ^= data[whole + 1] << 8
    if rest >= 1:
        h ^= data[whole]
        h = (h * M) & MASK
    h ^= h >> 13
    h = (h * M) & MASK
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for_key(key_bytes: bytes, num_partitions: int) -> int:
    return abs(murmur2(key_bytes)) % num_partitions


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
