"""A broker the tools' tests drive their commands against, in this process."""

from __future__ import annotations

import pytest

from kafka_ref.server.broker_process import BrokerThread
from kafka_ref.server.kafka_config import KafkaConfig


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    props = {
        "listeners": "PLAINTEXT://127.0.0.1:0",
        "log.dirs": str(tmp_path_factory.mktemp("edges")),
        "group.initial.rebalance.delay.ms": "0",
    }
    thread = BrokerThread(KafkaConfig.from_props(props)).start()
    yield thread
    thread.stop()
