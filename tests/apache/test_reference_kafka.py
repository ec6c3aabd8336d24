"""The real Apache Kafka, started by kafka-ref as the reference it is checked against.

One KRaft node takes writes and serves them back to librdkafka; three nodes replicate a
topic and keep serving it when one of them is killed (the controller quorum keeps two of
three voters). These tests fail if the pinned Kafka cannot be fetched or started: every
other test that judges kafka-ref against Kafka stands on them.
"""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kafka_ref.apache.classpath import version
from kafka_ref.apache.cluster import ApacheKafka

pytestmark = pytest.mark.timeout(240)


def produce(bootstrap: str, topic: str, values: list[bytes], acks: str = "all") -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": acks})
    failed: list[object] = []
    for value in values:
        producer.produce(topic, value, on_delivery=lambda err, _m: err and failed.append(err))
    assert producer.flush(30) == 0 and not failed, failed


def consume(bootstrap: str, topic: str, count: int) -> list[bytes]:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"read-{topic}",
            "auto.offset.reset": "earliest",
        }
    )
    consumer.subscribe([topic])
    got: list[bytes] = []
    for _ in range(60):
        for message in consumer.consume(count, timeout=1):
            assert message.error() is None, message.error()
            got.append(message.value())
        if len(got) >= count:
            break
    consumer.close()
    return got


def create_topic(bootstrap: str, topic: str, partitions: int, replication: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(topic, partitions, replication)])
    futures[topic].result(30)


@pytest.mark.spec("TOOLS-34")
def test_one_kraft_node_takes_writes_and_serves_them():
    with ApacheKafka(brokers=1) as kafka:
        create_topic(kafka.bootstrap, "one", 1, 1)
        values = [b"v%d" % i for i in range(20)]
        produce(kafka.bootstrap, "one", values)
        assert consume(kafka.bootstrap, "one", len(values)) == values
        metadata = AdminClient({"bootstrap.servers": kafka.bootstrap}).list_topics(timeout=10)
        assert sorted(metadata.brokers) == [1]


@pytest.mark.spec("TOOLS-34")
def test_three_nodes_replicate_and_survive_the_loss_of_one():
    with ApacheKafka(brokers=3, configs={"min.insync.replicas": 2}) as kafka:
        create_topic(kafka.bootstrap, "three", 1, 3)
        admin = AdminClient({"bootstrap.servers": kafka.bootstrap})
        partition = admin.list_topics("three", timeout=10).topics["three"].partitions[0]
        assert sorted(partition.replicas) == [1, 2, 3]
        produce(kafka.bootstrap, "three", [b"before"])
        leader = next(n for n in kafka.nodes if n.node_id == partition.leader)
        leader.stop(signal.SIGKILL)
        alive = ",".join(n.bootstrap for n in kafka.nodes if n is not leader)
        produce(alive, "three", [b"after"])
        assert consume(alive, "three", 2) == [b"before", b"after"]


@pytest.mark.spec("TOOLS-34")
def test_the_command_fetches_and_refuses_a_bad_broker_count():
    cmd = [sys.executable, "-m", "kafka_ref.cli", "reference-kafka"]
    fetched = subprocess.run([*cmd, "--fetch"], capture_output=True, text=True, timeout=600)
    assert fetched.returncode == 0 and f"Apache Kafka {version()}" in fetched.stdout
    bad = subprocess.run([*cmd, "--brokers", "2"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1, bad.stderr


@pytest.mark.spec("TOOLS-34")
def test_a_feature_level_is_formatted_in_and_a_bad_one_refused():
    cmd = [sys.executable, "-m", "kafka_ref.cli", "reference-kafka"]
    for bad in ("transaction.version", "transaction.version=two", "=1"):
        refused = subprocess.run([*cmd, "--feature", bad], capture_output=True, text=True)
        assert refused.returncode == 2 and refused.stderr.count("\n") == 1, refused.stderr
    with ApacheKafka(1, features={"transaction.version": 1}) as kafka:
        from kafka_ref.conformance.wire import Wire

        with Wire("127.0.0.1", kafka.nodes[0].port) as wire:
            finalized = {
                f.name: f.max_version_level for f in wire.api_versions(3).finalized_features
            }
    assert finalized["transaction.version"] == 1  # the default of Kafka 4.4 is 2
