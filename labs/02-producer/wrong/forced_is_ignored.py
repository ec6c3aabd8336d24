"""Wrong: a batch that is not full leaves only once linger.ms has passed, even when a
flush() or close() is in progress (CLIENT-5).

`forced` is ignored: flush() then waits up to linger.ms for every partial batch, and
send() blocked on buffer memory waits for batches that could free it. Everything else is
right.
"""

from __future__ import annotations

import random
import struct
from collections.abc import Sequence

SEED, M, R, MASK = 0x9747B28C, 0x5BD1E995, 24, 0xFFFFFFFF


def murmur2(data: bytes) -> int:
    data = bytes(data)
    h = (SEED ^ len(data)) & MASK
    whole = len(data) - len(data) % 4
    for (k,) in struct.iter_unpack("<I", data[:whole]):
        k = (k * M) & MASK
        k ^= k >> R
        k = (k * M) & MASK
        h = ((h * M) & MASK) ^ k
    tail = data[whole:]
    if len(tail) == 3:
        h ^= tail[2] << 16
    if len(tail) >= 2:
        h ^= tail[1] << 8
    if tail:
        h = ((h ^ tail[0]) * M) & MASK
    h ^= h >> 13
    h = (h * M) & MASK
    h ^= h >> 15
    return h - 2**32 if h >= 2**31 else h


def partition_for_key(key_bytes: bytes, num_partitions: int) -> int:
    return (murmur2(key_bytes) & 0x7FFFFFFF) % num_partitions


def choose_sticky_partition(
    available: Sequence[int], partition_count: int, current: int | None, rng: random.Random
) -> int:
    if not available:
        return rng.randrange(partition_count)
    others = [p for p in available if p != current] or list(available)
    return others[rng.randrange(len(others))]


def batch_is_sendable(full: bool, waited_ms: int, linger_ms: int, forced: bool) -> bool:
    return full or waited_ms >= linger_ms
