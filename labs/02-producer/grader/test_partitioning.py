"""Lab 02 grader, partitioning: which partition each record goes to (CLIENT-2, CLIENT-4).

The oracle for murmur2 is not kafka-ref: it is Kafka's own test vectors and kafka-python's
murmur2, which follows the Java client. The sticky partitioner is checked through kafka-ref's
`DefaultPartitioner`, which calls your `choose_sticky_partition`, and our producer sends
through both to a real broker.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kafka.partitioner.default import murmur2 as kafka_python_murmur2

from kafka_ref.client import partitioner
from kafka_ref.client.producer import Producer

JAVA_MURMUR2 = {  # Kafka's UtilsTest.testMurmur2
    b"21": -973932308,
    b"foobar": -790332482,
    b"a-little-bit-long-string": -985981536,
    b"a-little-bit-longer-string": -1486304829,
    b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
    b"abc": 479470107,
}


def java_murmur2(key: bytes) -> int:
    """kafka-python's murmur2 (unsigned) as Java's signed int."""
    h = kafka_python_murmur2(key)
    return h - (1 << 32) if h & 0x80000000 else h


def java_partition(key: bytes, partitions: int) -> int:
    return (java_murmur2(key) & 0x7FFFFFFF) % partitions


@pytest.mark.spec("CLIENT-2")
def test_murmur2_matches_kafkas_test_vectors():
    assert {k: partitioner.murmur2(k) for k in JAVA_MURMUR2} == JAVA_MURMUR2


@pytest.mark.spec("CLIENT-2")
@given(st.binary(max_size=64))
def test_murmur2_agrees_with_the_java_client_on_any_key(key):
    assert partitioner.murmur2(key) == java_murmur2(key)


@pytest.mark.spec("CLIENT-2")
@given(st.binary(max_size=32), st.integers(1, 1000))
def test_a_key_goes_where_the_java_client_sends_it(key, partitions):
    assert partitioner.partition_for_key(key, partitions) == java_partition(key, partitions)


@pytest.mark.spec("CLIENT-2")
def test_our_producer_puts_each_key_where_the_java_client_would(broker, create_topic):
    create_topic("keyed", 7)
    producer = Producer(broker.bootstrap, linger_ms=0)
    try:
        keys = [f"user-{i}".encode() for i in range(50)]
        futures = {key: producer.send("keyed", b"v", key=key) for key in keys}
        placed = {key: future.result(30).partition for key, future in futures.items()}
    finally:
        producer.close()
    assert placed == {key: java_partition(key, 7) for key in keys}


@st.composite
def sticky_choices(draw):
    count = draw(st.integers(1, 12))
    available = sorted(draw(st.sets(st.integers(0, count - 1), max_size=count)))
    current = draw(st.none() | st.integers(0, count - 1))
    return available, count, current, draw(st.randoms(use_true_random=False))


@pytest.mark.spec("CLIENT-4")
@given(sticky_choices())
def test_the_next_sticky_partition_has_a_leader_and_is_new(choice):
    available, count, current, rng = choice
    chosen = partitioner.choose_sticky_partition(available, count, current, rng)
    if not available:
        assert 0 <= chosen < count
    elif len(available) == 1:
        assert chosen == available[0]
    else:
        assert chosen in available and chosen != current


@pytest.mark.spec("CLIENT-4")
def test_the_sticky_partition_is_chosen_at_random():
    rng = random.Random(4)
    seen = {partitioner.choose_sticky_partition([0, 1, 2, 3], 4, None, rng) for _ in range(200)}
    assert seen == {0, 1, 2, 3}


@pytest.mark.spec("CLIENT-4")
def test_keyless_records_fill_one_partition_at_a_time(broker, create_topic):
    """With a small batch.size, keyless records form full batches, each on one partition,
    and the producer moves to another partition for the next batch."""
    create_topic("keyless", 4)
    producer = Producer(broker.bootstrap, linger_ms=1000, batch_size=2000)
    try:
        futures = [producer.send("keyless", b"x" * 100) for _ in range(200)]
        partitions = [future.result(30).partition for future in futures]
    finally:
        producer.close()
    runs = [p for i, p in enumerate(partitions) if i == 0 or partitions[i - 1] != p]
    assert len(set(partitions)) > 1, "keyless records must spread over partitions"
    assert len(runs) <= 200 * 120 // 2000 + 2, f"{len(runs)} runs: records did not stick"
