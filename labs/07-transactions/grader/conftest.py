"""A real kafka-ref broker for the grader's end-to-end check, in this process: its logs
bound read_committed fetches with the student's LSO, and our consumer filters with the
student's read_committed rule."""

from __future__ import annotations

import pytest

from kafka_ref.server.broker_process import BrokerThread
from kafka_ref.server.kafka_config import KafkaConfig


@pytest.fixture(scope="module")
def kafka_ref_broker(tmp_path_factory):
    data = tmp_path_factory.mktemp("lab07")
    props = {"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": str(data)}
    thread = BrokerThread(KafkaConfig.from_props(props)).start()
    yield thread
    thread.stop()
