"""Restart the broker process, cleanly and by kill -9, and read everything again (BROKER-36, 39).

Runs after the client modules (file order), so `produced` holds all their topics; it also
produces a topic of its own so it stands alone.
"""

from __future__ import annotations

import signal

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from kafka_ref.conformance.cluster import wait_for
from tests.interop.conftest import T_BASE, Produced, consume_produced

pytestmark = pytest.mark.timeout(180)


def check_everything(broker, produced) -> None:
    """One consumer reads every partition of every produced topic from the beginning."""
    metadata = AdminClient({"bootstrap.servers": broker.bootstrap}).list_topics(timeout=10)
    assignment = [
        TopicPartition(topic, p, OFFSET_BEGINNING)
        for topic in produced
        for p in metadata.topics[topic].partitions
    ]
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "restart"})
    consumer.assign(assignment)
    expected = sum(len(records) for records in produced.values())
    got = consume_produced(consumer, produced, expected)
    for topic, records in produced.items():
        assert got[topic] == records, topic


@pytest.fixture(scope="module")
def own_topic(kafka_ref_broker, produced):
    producer = Producer({"bootstrap.servers": kafka_ref_broker.bootstrap, "acks": "all"})
    reports: list = []
    for i in range(3000):  # auto-created by the producer's Metadata request
        producer.produce(
            "restart-auto",
            key=b"%d" % i,
            value=b"r" * 100,
            timestamp=T_BASE + i,
            on_delivery=lambda err, msg: reports.append((err, msg)),
        )
    assert producer.flush(30) == 0
    assert all(err is None for err, _ in reports)
    produced["restart-auto"] = sorted(
        Produced(m.partition(), m.offset(), m.key(), m.value(), m.timestamp()[1])
        for _, m in reports
    )
    return "restart-auto"


@pytest.mark.spec("BROKER-36", "BROKER-39")
def test_clean_restart_serves_everything(kafka_ref_broker, produced, own_topic):
    assert kafka_ref_broker.restart(signal.SIGTERM) == 0
    assert "shut down cleanly" in kafka_ref_broker.log()
    check_everything(kafka_ref_broker, produced)


@pytest.mark.spec("BROKER-36", "BROKER-39")
def test_restart_after_kill_9_serves_everything(kafka_ref_broker, produced, own_topic):
    starts = kafka_ref_broker.log().count("broker 0 started")
    kafka_ref_broker.restart(signal.SIGKILL)
    # The port accepts connections a moment before the broker logs that it started
    wait_for(
        lambda: kafka_ref_broker.log().count("broker 0 started") > starts,
        what="the restarted broker's start in its log",
    )
    assert "(unclean shutdown)" in kafka_ref_broker.log().rsplit("broker 0 started", 2)[-2]
    check_everything(kafka_ref_broker, produced)
