"""Lab 02, the producer: your partitioner and your batching rule.

Replace each `raise NotImplementedError` with your code, then grade it:

    kafka-ref lab check 02

Every function here takes the place of kafka-ref's own, of the same name, in our producer
(kafka_ref/client/partitioner.py and kafka_ref/client/accumulator.py), whenever
KAFKA_REF_SOLUTION names this file: the grader sets it for you. From kafka_ref you may
import anything but the modules that hold these functions (beyond the names this file
imports from them): `kafka-ref lab check` refuses a solution that reaches kafka-ref's own
code of them (LAB-5).
"""

from __future__ import annotations

import random
from collections.abc import Sequence


def murmur2(data: bytes) -> int:
    """MurmurHash2 of `data`, exactly as Kafka's Java client computes it (`Utils.murmur2`).

    32-bit MurmurHash2 with seed 0x9747b28c and m = 0x5bd1e995, r = 24: the bytes are read
    as little-endian 4-byte words; the last 1-3 bytes are mixed in as Java's switch does
    (falling through from 3 to 2 to 1); then the final avalanche (h ^= h >>> 13;
    h *= m; h ^= h >>> 15). Java's int is 32-bit and signed: keep every intermediate value
    in 32 bits, and return the result as a signed int (from -2**31 to 2**31 - 1).

    Kafka's test vectors: murmur2(b"21") == -973932308, murmur2(b"abc") == 479470107.
    """
    raise NotImplementedError


def partition_for_key(key_bytes: bytes, num_partitions: int) -> int:
    """The partition of a record with a key and no explicit partition (CLIENT-2).

    Java: `Utils.toPositive(Utils.murmur2(keyBytes)) % numPartitions`, where toPositive
    clears the sign bit (n & 0x7fffffff); it is not abs(), which overflows for -2**31.
    """
    raise NotImplementedError


def choose_sticky_partition(
    available: Sequence[int], partition_count: int, current: int | None, rng: random.Random
) -> int:
    """The next sticky partition for keyless records (CLIENT-4, KIP-480).

    Called when the current sticky partition (`current`, None at the start) needs a new
    batch. Pick at random with `rng` among `available` (the partitions that have a leader),
    never `current` again if any other is available; with exactly one available, that
    one; with none available, any partition in range(partition_count).
    """
    raise NotImplementedError


def batch_is_sendable(full: bool, waited_ms: int, linger_ms: int, forced: bool) -> bool:
    """May a partition's first batch leave now? (CLIENT-5)

    `full`: the batch is full, or another batch already waits behind it; `waited_ms`: how
    long the batch has waited; `linger_ms`: how long a batch that is not full may wait for
    more records; `forced`: a flush() or close() is in progress, or send() is blocked
    waiting for buffer memory.
    """
    raise NotImplementedError
