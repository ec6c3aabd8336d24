"""The partitioner: murmur2 exactly as Java (and kafka-python), explicit partitions, sticky."""

from __future__ import annotations

import itertools
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.partitioner.default import DefaultPartitioner as KafkaPythonPartitioner
from kafka.partitioner.default import murmur2 as kafka_python_murmur2

from kafka_ref.client.accumulator import RecordAccumulator
from kafka_ref.client.cluster_view import Cluster
from kafka_ref.client.partitioner import (
    DefaultPartitioner,
    StickyPartitionCache,
    murmur2,
    partition_for_key,
    to_positive,
)
from kafka_ref.common import TopicPartition
from kafka_ref.errors import KafkaError
from kafka_ref.record.record import Record
from tests.unit.client.conftest import metadata_response

# Kafka's own vectors: clients/src/test/java/org/apache/kafka/common/utils/UtilsTest.java
JAVA_MURMUR2 = {
    b"21": -973932308,
    b"foobar": -790332482,
    b"a-little-bit-long-string": -985981536,
    b"a-little-bit-longer-string": -1486304829,
    b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
    b"abc": 479470107,
}
# kafka-python's test_partitioner: DefaultPartitioner over 1000 partitions, "compared with
# output from Kafka's org.apache.kafka.clients.producer.Partitioner"
JAVA_PARTITIONS_OF_1000 = {
    b"": 681,
    b"a": 524,
    b"ab": 434,
    b"abc": 107,
    b"123456789": 566,
    b"\x00 ": 742,
}


@pytest.mark.spec("CLIENT-2")
@pytest.mark.parametrize(("key", "expected"), JAVA_MURMUR2.items())
def test_murmur2_matches_the_java_client_vectors(key, expected):
    assert murmur2(key) == expected


@pytest.mark.spec("CLIENT-2")
@pytest.mark.parametrize(("key", "expected"), JAVA_PARTITIONS_OF_1000.items())
def test_partition_for_key_matches_the_java_partitioner(key, expected):
    assert partition_for_key(key, 1000) == expected


class KafkaPythonCluster:
    """The part of kafka-python's ClusterMetadata its partitioner reads."""

    def __init__(self, partitions: int) -> None:
        self.count = partitions

    def topics(self):
        return {"t"}

    def partitions_for_topic(self, topic):
        return set(range(self.count))

    available_partitions_for_topic = partitions_for_topic


@pytest.mark.spec("CLIENT-2")
@settings(max_examples=500)
@given(st.binary(max_size=200), st.integers(min_value=1, max_value=10_000))
def test_murmur2_agrees_with_kafka_python(key, partitions):
    # kafka-python returns the unsigned 32-bit value of the same hash
    assert murmur2(key) & 0xFFFFFFFF == kafka_python_murmur2(key)
    theirs = KafkaPythonPartitioner().partition(
        "t", key, key, None, None, KafkaPythonCluster(partitions)
    )
    assert partition_for_key(key, partitions) == theirs


@pytest.mark.spec("CLIENT-2")
def test_murmur2_agrees_with_kafka_python_on_many_seeded_keys():
    rng = random.Random(2024)
    for _ in range(5000):
        key = rng.randbytes(rng.randrange(64))
        assert murmur2(key) & 0xFFFFFFFF == kafka_python_murmur2(key), key


@pytest.mark.spec("CLIENT-2")
def test_to_positive_clears_the_sign_bit_rather_than_negating():
    assert to_positive(-(2**31)) == 0  # abs() would overflow in Java
    assert to_positive(-1) == 0x7FFFFFFF
    assert to_positive(5) == 5


def cluster(partitions: int = 4, leaderless: tuple[int, ...] = ()) -> Cluster:
    leaders = [-1 if i in leaderless else 1 for i in range(partitions)]
    return Cluster.from_metadata_response(metadata_response({"t": leaders}))


@pytest.mark.spec("CLIENT-3")
def test_an_explicit_partition_wins_over_the_key_and_must_exist():
    partitioner = DefaultPartitioner()
    assert partitioner.partition("t", b"some key", cluster(), partition=3) == 3
    with pytest.raises(KafkaError, match="not in the range"):
        partitioner.partition("t", b"k", cluster(), partition=4)
    with pytest.raises(KafkaError):
        partitioner.partition("unknown", b"k", cluster())


@pytest.mark.spec("CLIENT-4")
def test_keyless_records_stick_until_the_partitioner_is_told_of_a_new_batch():
    partitioner = DefaultPartitioner(random.Random(7))
    view = cluster(4, leaderless=(2,))
    first = partitioner.partition("t", None, view)
    assert all(partitioner.partition("t", None, view) == first for _ in range(100))
    seen = {first}
    for _ in range(50):
        before = partitioner.partition("t", None, view)
        partitioner.on_new_batch("t", view, before)
        after = partitioner.partition("t", None, view)
        assert after != before  # switches away ...
        assert after != 2  # ... to a partition that has a leader
        seen.add(after)
    assert seen == {0, 1, 3}


@pytest.mark.spec("CLIENT-4")
def test_a_new_batch_of_another_partition_does_not_move_the_sticky_one():
    cache = StickyPartitionCache(random.Random(1))
    view = cluster(4)
    sticky = cache.partition("t", view)
    other = (sticky + 1) % 4
    assert cache.next_partition("t", view, other) == sticky


@pytest.mark.spec("CLIENT-4")
def test_sticky_switches_when_the_accumulator_needs_a_new_batch():
    """The producer's two-step append (KIP-480): full batch -> abort -> pick again."""
    partitioner = DefaultPartitioner(random.Random(3))
    view = cluster(3)
    accumulator = RecordAccumulator(batch_size=1000, linger_ms=0)
    partitions = []
    for i in range(40):
        record = Record(None, b"x" * 100, 1000 + i)
        chosen = partitioner.partition("t", None, view)
        result = accumulator.append(
            TopicPartition("t", chosen), record, None, 0, abort_on_new_batch=True
        )
        if result.abort_for_new_batch:
            partitioner.on_new_batch("t", view, chosen)
            chosen = partitioner.partition("t", None, view)
            result = accumulator.append(TopicPartition("t", chosen), record, None, 0)
        partitions.append(chosen)
    # runs of one partition, each filling a ~1000-byte batch (8 records of ~121 bytes)
    runs = [len(list(g)) for _, g in itertools.groupby(partitions)]
    assert len(runs) >= 4
    assert all(run >= 7 for run in runs[:-1])
