"""Topic configs changed live with librdkafka's admin client (CONFIG-1, CONFIG-2, CTRL-15).

`incremental_alter_configs` (IncrementalAlterConfigs, KIP-339) and `alter_configs`
(AlterConfigs) against a kafka-ref broker process: DescribeConfigs shows the new overrides,
the topic's live log applies them at once (a batch is refused with MESSAGE_TOO_LARGE as soon
as `max.message.bytes` is below its size; a raw Produce shows the code), and they survive a
restart of the broker.
"""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
)

from kafka_ref.conformance.wire import Wire, batch

pytestmark = pytest.mark.timeout(120)
SET, DELETE = AlterConfigOpType.SET, AlterConfigOpType.DELETE
APPEND, SUBTRACT = AlterConfigOpType.APPEND, AlterConfigOpType.SUBTRACT


@pytest.fixture
def admin(kafka_ref_broker):
    return AdminClient({"bootstrap.servers": kafka_ref_broker.bootstrap})


@pytest.fixture
def topic(admin, request):
    name = f"cfg-{request.node.name[:40]}"
    admin.create_topics([NewTopic(name, 1)])[name].result(10)
    return name


def incremental(admin, topic, *entries, validate_only=False):
    resource = ConfigResource(
        ConfigResource.Type.TOPIC,
        topic,
        incremental_configs=[
            ConfigEntry(name, value, incremental_operation=op) for name, value, op in entries
        ],
    )
    return admin.incremental_alter_configs([resource], validate_only=validate_only)[
        resource
    ].result(10)


def overrides(admin, topic) -> dict[str, str]:
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
    entries = admin.describe_configs([resource])[resource].result(10)
    return {k: e.value for k, e in entries.items() if e.source == 1}  # DYNAMIC_TOPIC_CONFIG


def error_of(call) -> int:
    with pytest.raises(KafkaException) as failed:
        call()
    return failed.value.args[0].code()


@pytest.mark.spec("CONFIG-2")
def test_incremental_operations_set_delete_append_and_subtract(admin, topic):
    incremental(admin, topic, ("retention.ms", "60000", SET), ("cleanup.policy", "compact", APPEND))
    assert overrides(admin, topic) == {"retention.ms": "60000", "cleanup.policy": "delete,compact"}
    incremental(
        admin, topic, ("retention.ms", None, DELETE), ("cleanup.policy", "delete", SUBTRACT)
    )
    assert overrides(admin, topic) == {"cleanup.policy": "compact"}
    incremental(admin, topic, ("segment.ms", "1000", SET), validate_only=True)
    assert overrides(admin, topic) == {"cleanup.policy": "compact"}, "validate_only changes nothing"


@pytest.mark.spec("CONFIG-2")
def test_bad_keys_values_operations_and_topics_are_refused_per_resource(admin, topic):
    assert error_of(lambda: incremental(admin, topic, ("no.such.config", "1", SET))) == (
        KafkaError.INVALID_CONFIG
    )
    assert error_of(lambda: incremental(admin, topic, ("retention.ms", "soon", SET))) == (
        KafkaError.INVALID_CONFIG
    )
    assert error_of(lambda: incremental(admin, topic, ("retention.ms", "1", APPEND))) == (
        KafkaError.INVALID_CONFIG
    )
    assert error_of(lambda: incremental(admin, "no-such-topic", ("retention.ms", "1", SET))) == (
        KafkaError.UNKNOWN_TOPIC_OR_PART
    )
    assert overrides(admin, topic) == {}


@pytest.mark.spec("CONFIG-1")
def test_alter_configs_replaces_the_whole_set(admin, topic):
    incremental(admin, topic, ("retention.ms", "60000", SET), ("segment.ms", "100000", SET))
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic, set_config={"flush.ms": "5000"})
    admin.alter_configs([resource])[resource].result(10)
    assert overrides(admin, topic) == {"flush.ms": "5000"}


@pytest.mark.spec("CTRL-15", "CONFIG-2")
def test_the_live_log_takes_the_new_config_and_keeps_it_across_a_restart(
    admin, topic, kafka_ref_broker
):
    def produce() -> int:  # one 1 kB record, its partition's error code
        wire = Wire("127.0.0.1", kafka_ref_broker.port)
        try:
            return wire.produce(topic, 0, batch([b"v" * 1000]), acks=-1).error_code
        finally:
            wire.close()

    # max.message.bytes, because one broker shows it: min.insync.replicas is capped at the
    # replication factor (Kafka's Partition.effectiveMinIsr), so one replica shows nothing
    assert produce() == KafkaError.NO_ERROR
    incremental(admin, topic, ("max.message.bytes", "500", SET))
    assert produce() == KafkaError.MSG_SIZE_TOO_LARGE
    kafka_ref_broker.restart()
    admin = AdminClient({"bootstrap.servers": kafka_ref_broker.bootstrap})
    assert overrides(admin, topic) == {"max.message.bytes": "500"}
    assert produce() == KafkaError.MSG_SIZE_TOO_LARGE
    incremental(admin, topic, ("max.message.bytes", None, DELETE))
    assert produce() == KafkaError.NO_ERROR


@pytest.mark.spec("CONFIG-8")
def test_the_replication_throttle_lists_are_topic_configs_without_a_broker_default(admin, topic):
    leader = "leader.replication.throttled.replicas"
    follower = "follower.replication.throttled.replicas"
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
    described = admin.describe_configs([resource])[resource].result(10)
    for name in (leader, follower):  # Kafka's default, no broker layer behind it
        assert (described[name].value, described[name].source) == ("", 5)
    incremental(admin, topic, (leader, "0:1,1:2", SET), (follower, "*", SET))
    assert overrides(admin, topic) == {leader: "0:1,1:2", follower: "*"}
    for bad in ("0-1", "*,0:1", "x:1"):
        assert error_of(lambda bad=bad: incremental(admin, topic, (leader, bad, SET))) == (
            KafkaError.INVALID_CONFIG
        )
    incremental(admin, topic, (leader, None, DELETE), (follower, None, DELETE))
    assert overrides(admin, topic) == {}


@pytest.mark.spec("COMPACT-28", "CONFIG-2")
def test_max_compaction_lag_is_a_topic_config_with_a_broker_default(admin, topic):
    lag, min_lag = "max.compaction.lag.ms", "min.compaction.lag.ms"
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
    described = admin.describe_configs([resource])[resource].result(10)
    assert (described[lag].value, described[lag].source) == (str(2**63 - 1), 5)  # DEFAULT_CONFIG
    # a valid key on a topic that does not exist: the topic is what is wrong
    missing = (("compression.type", "lz4", SET), (lag, "3600000", SET))
    assert error_of(lambda: incremental(admin, "no-such-topic", *missing)) == (
        KafkaError.UNKNOWN_TOPIC_OR_PART
    )
    incremental(admin, topic, ("cleanup.policy", "compact", SET), (lag, "3600000", SET))
    assert overrides(admin, topic) == {"cleanup.policy": "compact", lag: "3600000"}
    assert error_of(lambda: incremental(admin, topic, (min_lag, "7200000", SET))) == (
        KafkaError.INVALID_CONFIG  # min.compaction.lag.ms above max.compaction.lag.ms
    )
    assert error_of(lambda: incremental(admin, topic, (lag, "0", SET))) == (
        KafkaError.INVALID_CONFIG
    )
    assert overrides(admin, topic) == {"cleanup.policy": "compact", lag: "3600000"}
