"""Dynamic broker configs applied to a running broker's parts (CONFIG-6), in-process.

Each key is altered with our admin client over the wire; the test then looks at the part
the key drives: the request handler pool, the KIP-890 verification switch, the cleaner's
task. (The log defaults' effect on live logs is in tests/interop/test_dynamic_broker_configs.py.)
"""

from __future__ import annotations

import pytest

from kafka_ref.client.admin import Admin, ConfigResource
from kafka_ref.server.dynamic_config import DynamicBrokerConfig
from kafka_ref.server.kafka_config import KafkaConfig

SET, DELETE = 0, 1


def alter(broker, name: str, *changes) -> None:
    with Admin(broker.bootstrap) as admin:
        admin.incremental_alter_configs(ConfigResource(ConfigResource.BROKER, name), changes)


@pytest.mark.spec("CONFIG-6")
def test_num_io_threads_resizes_the_request_handlers(make_broker):
    broker = make_broker(props={"broker.id": 1, "num.io.threads": 2})
    assert len(broker.broker.handler_pool.workers) == 2
    alter(broker, "1", ("num.io.threads", "5", SET))
    assert len(broker.broker.handler_pool.workers) == 5
    alter(broker, "", ("num.io.threads", "1", SET))  # below the broker's own layer: no effect
    assert len(broker.broker.handler_pool.workers) == 5
    alter(broker, "1", ("num.io.threads", None, DELETE))  # the cluster default now
    assert len(broker.broker.handler_pool.workers) == 1
    alter(broker, "1", ("num.io.threads", "3", SET))  # one handler served the request
    assert len(broker.broker.handler_pool.workers) == 3
    assert all(not task.done() for task in broker.broker.handler_pool.workers)


@pytest.mark.spec("CONFIG-6")
def test_verification_and_cleaner_backoff_follow_their_configs(make_broker):
    broker = make_broker(props={"broker.id": 1})
    apis = broker.broker.apis
    assert apis.add_partitions.enabled
    alter(broker, "1", ("transaction.partition.verification.enable", "false", SET))
    assert not apis.add_partitions.enabled
    before = broker.broker.tasks._cleaner_task
    alter(broker, "1", ("log.cleaner.backoff.ms", "250", SET))
    after = broker.broker.tasks._cleaner_task
    assert broker.call(lambda: before.done() or before.cancelling() > 0), "the old one stops"
    assert after is not before and not after.done()
    assert broker.broker.config["log.cleaner.backoff.ms"] == 250


@pytest.mark.spec("CONFIG-6")
def test_a_stored_key_that_no_longer_validates_is_skipped_not_fatal():
    config = KafkaConfig.from_props({"log.retention.hours": "5"})
    dynamic = DynamicBrokerConfig(config)
    dynamic.update("1", {"log.retention.ms": "1000", "num.partitions": "9", "num.io.threads": "x"})
    assert dynamic.per_broker == {"log.retention.ms": "1000"}
    assert config["log.retention.ms"] == 1000 and config["num.partitions"] == 1
    assert config.log_config().retention_ms == 1000
