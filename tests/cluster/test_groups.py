"""Consumer groups on three real brokers: the coordinator moves with its partition's leader.

A group's coordinator is the broker leading the group's partition of `__consumer_offsets`
(BROKER-44), whichever broker a client asks. Its commits are acknowledged only once the
partition's ISR has them (BROKER-47), so when that broker is killed with SIGKILL the new
leader, which was in the ISR, has every acknowledged commit; it loads the partition
(BROKER-46) and becomes the coordinator. A confluent-kafka consumer keeps committing
through the failover, and a new member of the group resumes exactly where it committed.
"""

from __future__ import annotations

import signal
import time

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from kafka_ref.group.group_metadata_manager import partition_for
from kafka_ref.protocol.messages import ApiKey, FindCoordinatorRequest
from kafka_ref.server.group_adapter import OFFSETS_TOPIC
from tests.cluster.conftest import BROKER_CONFIGS, wait_for
from tests.cluster.test_controller import create_topic

pytestmark = pytest.mark.timeout(120)

MESSAGES = 60


def find_coordinator(cluster, broker_id: int, group: str) -> tuple[int, int]:
    body = FindCoordinatorRequest(key=group, key_type=0)
    response = cluster.request(broker_id, ApiKey.FIND_COORDINATOR, body)
    return response.error_code, response.node_id


def consumer(cluster, group: str) -> Consumer:
    return Consumer(
        {
            "bootstrap.servers": cluster.bootstrap(),
            "group.id": group,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "session.timeout.ms": 10000,
            "topic.metadata.refresh.interval.ms": 1000,
        }
    )


def take(c: Consumer, n: int, timeout: float = 30.0) -> list[int]:
    """The next `n` values the consumer reads."""
    values: list[int] = []
    deadline = time.monotonic() + timeout
    while len(values) < n and time.monotonic() < deadline:
        msg = c.poll(0.5)
        if msg is not None and not msg.error():
            values.append(int(msg.value()))
    assert len(values) == n, f"read {values}, wanted {n} values"
    return values


def commit(c: Consumer, topic: str, offset: int, timeout: float = 40.0) -> None:
    """Commit synchronously, retrying while the group looks for its (new) coordinator."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            result = c.commit(offsets=[TopicPartition(topic, 0, offset)], asynchronous=False)
            if result and result[0].error is None:
                return
            error = result[0].error if result else "no result"
        except KafkaException as exc:
            error = exc
        if time.monotonic() > deadline:
            raise AssertionError(f"commit of offset {offset} kept failing: {error}")
        c.poll(0.2)


@pytest.mark.spec("BROKER-44", "BROKER-46", "BROKER-47")
def test_a_group_survives_the_kill_of_its_coordinator(cluster, topic_name):
    create_topic(cluster, topic_name, partitions=1, rf=3)
    producer = Producer({"bootstrap.servers": cluster.bootstrap(), "acks": "all"})
    for i in range(MESSAGES):
        producer.produce(topic_name, b"%d" % i, partition=0)
    assert producer.flush(30) == 0
    group = f"group-{topic_name}"
    home = partition_for(group, BROKER_CONFIGS["offsets.topic.num.partitions"])

    first = consumer(cluster, group)
    first.subscribe([topic_name])
    assert take(first, 20) == list(range(20))
    commit(first, topic_name, 20)

    # Every broker names the same coordinator: the leader of the group's partition
    state = cluster.state(OFFSETS_TOPIC, home)
    assert len(state.replicas) == 3, "offsets.topic.replication.factor 3 on three brokers"
    answers = {find_coordinator(cluster, b, group) for b in (1, 2, 3)}
    assert answers == {(0, state.leader)}
    wait_for(lambda: len(cluster.state(OFFSETS_TOPIC, home).isr) == 3, what="a full ISR")

    victim = state.leader
    cluster.stop(victim, signal.SIGKILL)
    new = wait_for(
        lambda: (s := cluster.state(OFFSETS_TOPIC, home)).leader not in (victim, -1) and s,
        what="a new leader of the group's partition",
    )
    survivors = [b for b in (1, 2, 3) if b != victim]
    wait_for(
        lambda: all(find_coordinator(cluster, b, group) == (0, new.leader) for b in survivors),
        what="every live broker to name the new coordinator",
    )

    # The same member goes on: the new coordinator has its commit and takes new ones
    assert take(first, 20) == list(range(20, 40))
    commit(first, topic_name, 40)
    first.close()

    second = consumer(cluster, group)
    try:
        second.subscribe([topic_name])
        assert take(second, 5) == list(range(40, 45)), "not resumed from the committed offset"
        committed = second.committed([TopicPartition(topic_name, 0)], timeout=10)
        assert committed[0].offset == 40
    finally:
        second.close()
