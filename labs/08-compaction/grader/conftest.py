"""A real kafka-ref broker for the grader's end-to-end check, in this process: its cleaner
runs every 100 ms (log.cleaner.backoff.ms) and calls the student's rules."""

from __future__ import annotations

import pytest

from kafka_ref.server.broker import BrokerThread
from kafka_ref.server.kafka_config import KafkaConfig


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    data = tmp_path_factory.mktemp("lab08")
    props = {
        "listeners": "PLAINTEXT://127.0.0.1:0",
        "log.dirs": str(data),
        "log.cleaner.backoff.ms": "100",
    }
    thread = BrokerThread(KafkaConfig.from_props(props)).start()
    yield thread
    thread.stop()
