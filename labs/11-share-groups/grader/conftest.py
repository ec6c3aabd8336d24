"""A real kafka-ref broker for the grader's end-to-end checks, in this process: every
share-partition on it acknowledges, times out and moves its start offset with the
student's functions, and librdkafka's ShareConsumer reads from it.

Its share group configs are Kafka's names with values small enough for a test: three
deliveries at most (`group.share.delivery.count.limit`), a 15 s acquisition lock (no lock
expires unless a test wants it to: a test that does sets the group's own
`share.record.lock.duration.ms`), heartbeats every second so that a member gets its
partitions within a second or two. Every group starts at the earliest offset
(`share.auto.offset.reset`, a group config).
"""

from __future__ import annotations

import itertools

import pytest

from kafka_ref.client.admin import Admin, ConfigResource, NewTopic
from kafka_ref.tools.lab_analysis import LabBroker

DELIVERY_COUNT_LIMIT = 3
LOCK_MS = 15_000
_names = itertools.count()


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    data = tmp_path_factory.mktemp("lab11")
    props = {
        "listeners": "PLAINTEXT://127.0.0.1:0",
        "log.dirs": str(data),
        "group.initial.rebalance.delay.ms": "0",
        "offsets.topic.num.partitions": "1",
        "share.coordinator.state.topic.num.partitions": "1",
        "group.share.delivery.count.limit": str(DELIVERY_COUNT_LIMIT),
        "group.share.record.lock.duration.ms": str(LOCK_MS),
        "group.share.min.record.lock.duration.ms": "1000",
        "group.share.heartbeat.interval.ms": "1000",
        "group.share.min.heartbeat.interval.ms": "1000",
        "group.share.session.timeout.ms": "6000",
        "group.share.min.session.timeout.ms": "6000",
    }
    thread = LabBroker(props).start()
    yield thread
    thread.stop()


@pytest.fixture(scope="module")
def share_topic(broker):
    """`share_topic(records, partitions=1, batch=None)`: a new topic holding `records` values
    b"0", b"1", ... (round robin over its partitions; in batches of `batch` records, if
    given), and a new share group that reads it from the earliest offset. Returns (topic,
    group)."""

    def make(records: int, partitions: int = 1, batch: int | None = None) -> tuple[str, str]:
        n = next(_names)
        topic, group = f"lab11-{n}", f"lab11-group-{n}"
        configs = {"share.auto.offset.reset": "earliest"}
        with Admin(broker.bootstrap) as admin:
            admin.create_topics([NewTopic(topic, partitions, 1)])
            admin.incremental_alter_configs(
                ConfigResource(ConfigResource.GROUP, group),
                [(name, value, 0) for name, value in configs.items()],
            )
        produce(broker.bootstrap, topic, records, partitions, batch or records)
        return topic, group

    return make


def produce(bootstrap: str, topic: str, records: int, partitions: int, batch: int) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(records):
        producer.produce(topic, value=b"%d" % i, partition=i % partitions)
        if (i + 1) % batch == 0:
            producer.flush(30)  # one batch on the log
    assert producer.flush(30) == 0, "the producer could not deliver every record"
