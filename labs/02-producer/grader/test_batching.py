"""Lab 02 grader, batching: when a partition's batch may leave (CLIENT-5).

Your `batch_is_sendable` decides for every partition, each time our producer's sender looks;
the accumulator calls it with the batch's state. The end-to-end check reads the batches the
broker wrote, with dump-log's reader.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafka_ref.client import accumulator
from kafka_ref.client.producer import Producer
from kafka_ref.common import TopicPartition
from kafka_ref.record.record import Record


@pytest.mark.spec("CLIENT-5")
@given(st.booleans(), st.integers(0, 10_000), st.integers(0, 10_000), st.booleans())
def test_a_batch_leaves_when_full_lingered_or_forced(full, waited, linger, forced):
    expected = full or waited >= linger or forced
    got = accumulator.batch_is_sendable(full, waited, linger, forced)
    assert got is expected, f"full={full}, waited {waited} ms, linger.ms {linger}, forced={forced}"


# (full, waited ms, linger.ms, forced, may the batch leave?)
SENDABLE_CASES = {
    "full, just created": (True, 0, 100, False, True),
    "not full, one ms short of linger.ms": (False, 99, 100, False, False),
    "not full, waited exactly linger.ms": (False, 100, 100, False, True),
    "not full, waited past linger.ms": (False, 101, 100, False, True),
    "linger.ms 0, just created": (False, 0, 0, False, True),
    "not full, just created, flush() in progress": (False, 0, 100, True, True),
    "full, flush() in progress": (True, 0, 100, True, True),
    "full and waited past linger.ms": (True, 500, 100, False, True),
    "not full, just created, nothing forces it": (False, 0, 5, False, False),
}


@pytest.mark.spec("CLIENT-5")
@pytest.mark.parametrize(
    ("full", "waited", "linger", "forced", "expected"), SENDABLE_CASES.values(), ids=SENDABLE_CASES
)
def test_when_a_batch_may_leave_on_cases_worked_by_hand(full, waited, linger, forced, expected):
    got = accumulator.batch_is_sendable(full, waited, linger, forced)
    assert got is expected, (
        f"full={full}, waited {waited} ms, linger.ms {linger}, forced={forced}: the batch "
        f"{'may leave' if expected else 'must wait'}, got {got!r}"
    )


class OneLeader:
    """Every partition is led by broker 1 (what `ready` asks the cluster)."""

    def leader_for(self, tp):
        return 1


@pytest.mark.spec("CLIENT-5")
def test_the_accumulator_holds_a_lone_record_for_linger_ms():
    acc = accumulator.RecordAccumulator(batch_size=16_384, linger_ms=100)
    acc.append(TopicPartition("t", 0), Record(None, b"v", 0), None, 0)
    assert acc.ready(OneLeader(), 10).ready_nodes == set()  # appended at time 0 (ms)
    assert acc.ready(OneLeader(), 150).ready_nodes == {1}


@pytest.mark.spec("CLIENT-5")
def test_linger_gathers_records_into_few_batches(broker, create_topic):
    """50 records sent within linger.ms, on one partition: a few batches, not 50."""
    create_topic("lingering", 1)
    producer = Producer(broker.bootstrap, linger_ms=300)
    try:
        futures = [producer.send("lingering", b"v%d" % i, partition=0) for i in range(50)]
        offsets = [f.result(30).offset for f in futures]
    finally:
        producer.close()
    assert offsets == list(range(50))
    log = broker.broker.log_manager.get_log("lingering", 0)
    batches = broker.call(lambda: [h for s in log.segments for _, h in s.log.headers_from(0)])
    assert len(batches) <= 3, f"{len(batches)} batches for 50 records sent within linger.ms"
