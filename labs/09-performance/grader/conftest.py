"""A real kafka-ref broker for the grader's end-to-end check, in this process."""

from __future__ import annotations

import pytest

from kafka_ref.server.broker_process import BrokerThread
from kafka_ref.server.kafka_config import KafkaConfig


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    data = tmp_path_factory.mktemp("lab09")
    props = {"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": str(data)}
    thread = BrokerThread(KafkaConfig.from_props(props)).start()
    thread.data_dir = data
    yield thread
    thread.stop()
