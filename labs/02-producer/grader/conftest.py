"""A real kafka-ref broker for the grader's end-to-end checks, in this process: it runs the
same seams as the producer, so the student's code is what the whole path runs."""

from __future__ import annotations

import pytest

from kafka_ref.client.admin import Admin, NewTopic
from kafka_ref.server.broker_process import BrokerThread
from kafka_ref.server.kafka_config import KafkaConfig


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    data = tmp_path_factory.mktemp("lab02")
    props = {"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": str(data)}
    thread = BrokerThread(KafkaConfig.from_props(props)).start()
    thread.data_dir = data
    yield thread
    thread.stop()


@pytest.fixture(scope="module")
def create_topic(broker):
    """`create_topic(name, partitions)` on the broker."""

    def create(name: str, partitions: int) -> None:
        admin = Admin(broker.bootstrap)
        try:
            admin.create_topics([NewTopic(name, partitions, 1)])
        finally:
            admin.close()

    return create
