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


# Worked out with kafka-python's murmur2 (the Java client's, as an unsigned int): every length
# of tail (0 to 3 bytes after the last whole word), bytes >= 0x80, and hashes of both signs.
MORE_MURMUR2 = {
    b"": 275646681,
    b"a": -1563381124,
    b"ab": 316155434,
    b"abcd": -1323649548,
    b"abcde": 461995741,
    b"abcdefg": -346467175,
    b"\xff\xff\xff\xff": 644171429,
    b"\x80\x00\x00\x00\xff": -829566077,
}


@pytest.mark.spec("CLIENT-2")
@pytest.mark.parametrize(
    ("key", "expected"),
    [*JAVA_MURMUR2.items(), *MORE_MURMUR2.items()],
    ids=[f"{len(k)} bytes {k[:12]!r}" for k in [*JAVA_MURMUR2, *MORE_MURMUR2]],
)
def test_murmur2_matches_kafkas_test_vectors(key, expected):
    got = partitioner.murmur2(key)
    assert got == expected, (
        f"murmur2({key!r}), a key of {len(key)} bytes ({len(key) // 4} whole words, a tail of "
        f"{len(key) % 4}): Java's Utils.murmur2 gives {expected}, got {got}"
    )


@pytest.mark.spec("CLIENT-2")
@given(st.binary(max_size=64))
def test_murmur2_agrees_with_the_java_client_on_any_key(key):
    assert partitioner.murmur2(key) == java_murmur2(key)


@pytest.mark.spec("CLIENT-2")
@given(st.binary(max_size=32), st.integers(1, 1000))
def test_a_key_goes_where_the_java_client_sends_it(key, partitions):
    got = partitioner.partition_for_key(key, partitions)
    assert got == java_partition(key, partitions), f"{key!r} of {partitions}: got {got}"


# (key, partitions, where Java sends it): toPositive(murmur2(key)) % partitions, by hand
PARTITION_CASES = {
    "a key with a positive hash (b'abc', 479470107)": (b"abc", 7, 4),
    "a key with a negative hash (b'21', -973932308): toPositive, not abs": (b"21", 7, 3),
    "a key with a negative hash (b'abcdefg', -346467175)": (b"abcdefg", 7, 4),
    "a key with a negative hash (b'a', -1563381124) of 1000 partitions": (b"a", 1000, 524),
    "the empty key is a key (b'', 275646681)": (b"", 7, 2),
    "one partition": (b"21", 1, 0),
}


@pytest.mark.spec("CLIENT-2")
@pytest.mark.parametrize(
    ("key", "partitions", "expected"), PARTITION_CASES.values(), ids=PARTITION_CASES
)
def test_a_key_goes_to_the_partition_worked_by_hand(key, partitions, expected):
    got = partitioner.partition_for_key(key, partitions)
    assert got == expected, (
        f"key {key!r}, {partitions} partitions: toPositive(murmur2(key)) % {partitions} is "
        f"{expected}, got {got}"
    )


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
    where = f"available {available} of {count}, current {current}: got {chosen!r}"
    if not available:
        assert chosen in range(count), where
    elif len(available) == 1:
        assert chosen == available[0], where
    else:
        assert chosen in available and chosen != current, where


# (available, partition count, current, the partitions it may choose): over 200 draws with
# seeded rngs, it must choose only among those, and, when they are several, each of them
STICKY_CASES = {
    "at the start, 4 available: any of them": ([0, 1, 2, 3], 4, None, {0, 1, 2, 3}),
    "current 2 of 4 available: any other": ([0, 1, 2, 3], 4, 2, {0, 1, 3}),
    "current 3, the last, of 4 available: any other": ([0, 1, 2, 3], 4, 3, {0, 1, 2}),
    "two available, current one of them: the other": ([1, 3], 4, 1, {3}),
    "2 of 4 available, current 0: the other with a leader": ([0, 2], 4, 0, {2}),
    "the current partition has no leader: any available": ([0, 1], 4, 3, {0, 1}),
    "one available, the current one: that one": ([3], 4, 3, {3}),
    "one available, not the current one: that one": ([1], 4, 3, {1}),
    "none available, at the start: any partition": ([], 4, None, {0, 1, 2, 3}),
    "none available, current 2: any partition": ([], 4, 2, {0, 1, 2, 3}),
    "none available of 1: partition 0": ([], 1, 0, {0}),
}


@pytest.mark.spec("CLIENT-4")
@pytest.mark.parametrize(
    ("available", "count", "current", "allowed"), STICKY_CASES.values(), ids=STICKY_CASES
)
def test_the_next_sticky_partition_on_cases_worked_by_hand(available, count, current, allowed):
    where = f"available {available} of {count} partitions, current {current}"
    seen = set()
    for seed in range(200):
        chosen = partitioner.choose_sticky_partition(available, count, current, random.Random(seed))
        assert chosen in allowed, (
            f"{where}: the choice must be one of {sorted(allowed)}, got {chosen!r}"
        )
        seen.add(chosen)
    if len(available) > 1:
        assert seen == allowed, (
            f"{where}: over 200 seeds each of {sorted(allowed)} must be chosen at random, "
            f"only {sorted(seen)} were"
        )


@pytest.mark.spec("CLIENT-4")
def test_the_sticky_partition_is_chosen_at_random():
    rng = random.Random(4)
    seen = {partitioner.choose_sticky_partition([0, 1, 2, 3], 4, None, rng) for _ in range(200)}
    assert seen == {0, 1, 2, 3}, f"200 choices among [0, 1, 2, 3] from one rng gave {sorted(seen)}"


@pytest.mark.spec("CLIENT-4")
def test_the_sticky_partition_is_drawn_from_the_rng_it_is_given():
    """The same seed, the same choice: the choice comes from `rng`, so a producer (or the
    simulator) seeded the same way spreads its records the same way."""
    for seed in range(50):
        for available, current in (([0, 1, 2, 3, 4, 5, 6, 7], 3), ([], None)):
            first = partitioner.choose_sticky_partition(available, 8, current, random.Random(seed))
            again = partitioner.choose_sticky_partition(available, 8, current, random.Random(seed))
            assert first == again, (
                f"available {available} of 8, current {current}, two rngs of seed {seed}: "
                f"chose {first} then {again}; draw with the rng you are given"
            )


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
