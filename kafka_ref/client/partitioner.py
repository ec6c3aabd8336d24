"""The partitioner: which partition of a topic a record goes to.

A topic is split into partitions, and a producer must pick one for every record. Kafka's
Java client decides in this order (`KafkaProducer.partition`, `DefaultPartitioner`):

1. **An explicit partition** given with the record is used as it is (after checking that
   the topic has that many partitions).
2. **A key** is hashed: `toPositive(murmur2(keyBytes)) % numPartitions`. The same key always
   lands on the same partition (as long as the partition count does not change), which is
   what gives Kafka its per-key ordering. Every client that wants to co-partition with Java
   producers must use *exactly* this hash: MurmurHash2, 32-bit, seed `0x9747b28c`, the
   bytes read as little-endian 4-byte words, and Java's signed int arithmetic.
   `toPositive(n)` is `n & 0x7fffffff`, not `abs(n)`: `abs(Integer.MIN_VALUE)` is negative
   in Java (`Utils.toPositive`, `Utils.murmur2`).
3. **No key: sticky partitioning** (KIP-480). Older clients spread keyless records
   round-robin, one record per partition, which makes many tiny batches. The sticky
   partitioner instead picks one partition at random and *sticks* to it until the batch
   for that partition is closed (full, or drained by the sender); then it switches to
   another partition. Keyless records thus fill whole batches, one partition at a time,
   and still spread evenly over time. The accumulator tells the partitioner when a new
   batch is needed (`on_new_batch`), as Java's `RecordAccumulator.append(...,
   abortOnNewBatch=true)` does. (Kafka 3.3 refined this into the "uniform sticky"
   partitioner of KIP-794, which also weighs partitions by queue size; the idea is the same.)

`murmur2` returns Java's signed 32-bit int, so the values match the Java client's own test
vectors (`UtilsTest.testMurmur2`: `murmur2("21") == -973932308`).

`murmur2`, `partition_for_key` and `choose_sticky_partition` are seams (kafka_ref/seams.py):
lab 02 (labs/02-producer) replaces them with a student's code.

Spec rules: CLIENT-2, CLIENT-3, CLIENT-4 (spec/client.md).
"""

from __future__ import annotations

import random
import struct
from collections.abc import Sequence
from typing import Protocol

from kafka_ref.errors import ErrorCode, KafkaError
from kafka_ref.seams import seam

_SEED = 0x9747B28C
_M = 0x5BD1E995
_R = 24
_MASK32 = 0xFFFFFFFF
_WORDS = struct.Struct("<I")


@seam
def murmur2(data: bytes | bytearray | memoryview) -> int:
    """MurmurHash2 of `data` exactly as Kafka's `Utils.murmur2`: a signed 32-bit int."""
    data = bytes(data)
    length = len(data)
    h = (_SEED ^ length) & _MASK32
    whole = length & ~3
    for (k,) in _WORDS.iter_unpack(data[:whole]):  # 4 bytes at a time, little-endian
        k = (k * _M) & _MASK32
        k ^= k >> _R
        k = (k * _M) & _MASK32
        h = (h * _M) & _MASK32
        h ^= k
    rest = length & 3  # the last 1-3 bytes; Java's switch falls through 3 -> 2 -> 1
    if rest == 3:
        h ^= data[whole + 2] << 16
    if rest >= 2:
        h ^= data[whole + 1] << 8
    if rest >= 1:
        h ^= data[whole]
        h = (h * _M) & _MASK32
    h ^= h >> 13
    h = (h * _M) & _MASK32
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h  # Java's int is signed


def to_positive(number: int) -> int:
    """Kafka's `Utils.toPositive`: clear the sign bit (not abs, which overflows in Java)."""
    return number & 0x7FFFFFFF


@seam
def partition_for_key(key_bytes: bytes, num_partitions: int) -> int:
    """The partition of a keyed record: `toPositive(murmur2(key)) % numPartitions`."""
    return to_positive(murmur2(key_bytes)) % num_partitions


class PartitionView(Protocol):
    """What a partitioner needs to know about a topic (a `Cluster` provides it)."""

    def partition_count(self, topic: str) -> int | None: ...

    def available_partitions(self, topic: str) -> Sequence[int]: ...


class StickyPartitionCache:
    """The current sticky partition per topic, and the rule for moving on (KIP-480).

    Kafka: `org.apache.kafka.clients.producer.internals.StickyPartitionCache`.
    """

    def __init__(self, rng: random.Random | None = None) -> None:
        self._rng = rng or random.Random()
        self._sticky: dict[str, int] = {}

    def partition(self, topic: str, cluster: PartitionView) -> int:
        """The partition keyless records of `topic` go to now."""
        current = self._sticky.get(topic)
        return current if current is not None else self.next_partition(topic, cluster, -1)

    def next_partition(self, topic: str, cluster: PartitionView, previous: int) -> int:
        """Called when `previous` needs a new batch: switch away from it, if it is the sticky one.

        A different partition than `previous` is picked at random among those with a leader
        (any partition if none has one). If the sticky partition has already moved on
        (another thread switched it), it is kept.
        """
        current = self._sticky.get(topic)
        if current is not None and current != previous:
            return current
        new = choose_sticky_partition(
            list(cluster.available_partitions(topic)),
            cluster.partition_count(topic) or 1,
            current,
            self._rng,
        )
        self._sticky[topic] = new
        return new


@seam
def choose_sticky_partition(
    available: Sequence[int], partition_count: int, current: int | None, rng: random.Random
) -> int:
    """The next sticky partition of a topic (CLIENT-4): a partition with a leader
    (`available`), chosen at random with `rng`, and never `current` again when another one is
    available; any of the `partition_count` partitions when none has a leader."""
    if not available:
        return rng.randrange(partition_count)
    if len(available) == 1:
        return available[0]
    new = current
    while new is None or new == current:
        new = available[rng.randrange(len(available))]
    return new


class DefaultPartitioner:
    """Kafka's default partitioner: explicit partition, else murmur2 of the key, else sticky."""

    def __init__(self, rng: random.Random | None = None) -> None:
        self.sticky = StickyPartitionCache(rng)

    def partition(
        self,
        topic: str,
        key_bytes: bytes | None,
        cluster: PartitionView,
        partition: int | None = None,
    ) -> int:
        count = cluster.partition_count(topic)
        if not count:
            raise KafkaError(
                f"topic {topic} has no known partitions", code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            )
        if partition is not None:
            if not 0 <= partition < count:
                raise KafkaError(
                    f"Invalid partition given with record: {partition} is not in the range "
                    f"[0...{count})",
                    code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                )
            return partition
        if key_bytes is not None:
            return partition_for_key(key_bytes, count)
        return self.sticky.partition(topic, cluster)

    def on_new_batch(self, topic: str, cluster: PartitionView, previous_partition: int) -> None:
        """The accumulator needs a new batch for `previous_partition`: time to switch."""
        self.sticky.next_partition(topic, cluster, previous_partition)
