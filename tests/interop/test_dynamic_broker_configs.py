"""Dynamic broker configs with librdkafka's admin client (CONFIG-4, CONFIG-5, CONFIG-6).

A broker process of its own (broker id 0, `log.retention.hours=5` in its static
configuration): per-broker and cluster-default layers set with IncrementalAlterConfigs
and AlterConfigs on resource type BROKER, DescribeConfigs naming each layer, the refusals,
and the live effect of a new log default on a running topic (a raw Produce shows
MESSAGE_TOO_LARGE as soon as the broker's `message.max.bytes` default is below its batch).
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

from kafka_ref.client.admin import Admin
from kafka_ref.client.admin import ConfigResource as OurResource
from kafka_ref.conformance.wire import Wire, batch
from kafka_ref.protocol.messages import ApiKey, IncrementalAlterConfigsRequest
from kafka_ref.tools.server_process import free_port
from tests.interop.conftest import BrokerProcess

pytestmark = pytest.mark.timeout(120)
SET, DELETE = AlterConfigOpType.SET, AlterConfigOpType.DELETE
BROKER = ConfigResource.Type.BROKER
DYNAMIC_BROKER, DYNAMIC_DEFAULT, STATIC, DEFAULT = 2, 3, 4, 5


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    base = tmp_path_factory.mktemp("dynamic")
    process = BrokerProcess(str(base / "data"), free_port(), {"log.retention.hours": 5})
    process.start()
    yield process
    process.stop()


class Clients(AdminClient):
    """librdkafka's admin client, knowing its bootstrap for our own."""

    def __init__(self, bootstrap: str) -> None:
        super().__init__({"bootstrap.servers": bootstrap})
        self.bootstrap = bootstrap


@pytest.fixture
def admin(broker):
    return Clients(broker.bootstrap)


def alter(admin, name: str, *entries, validate_only: bool = False) -> None:
    """librdkafka for a broker id; our admin client for the cluster level (name ""), which
    librdkafka cannot name."""
    if name == "":
        with Admin(admin.bootstrap) as ours:
            changes = [(k, v, op.value) for k, v, op in entries]
            ours.incremental_alter_configs(OurResource(OurResource.BROKER, ""), changes)
        return
    resource = ConfigResource(
        BROKER,
        name,
        incremental_configs=[ConfigEntry(k, v, incremental_operation=op) for k, v, op in entries],
    )
    admin.incremental_alter_configs([resource], validate_only=validate_only)[resource].result(10)


def describe(admin, name: str) -> dict:
    if name == "":
        with Admin(admin.bootstrap) as ours:
            resource = OurResource(OurResource.BROKER, "")
            return ours.describe_configs([resource])[resource]
    resource = ConfigResource(BROKER, name)
    return admin.describe_configs([resource])[resource].result(10)


def in_force(admin, key: str) -> tuple[str, int]:
    entry = describe(admin, "0")[key]
    return entry.value, int(entry.source)


def refusal(call) -> KafkaError:
    with pytest.raises(KafkaException) as failed:
        call()
    return failed.value.args[0]


@pytest.mark.spec("CONFIG-4")
def test_per_broker_beats_cluster_default_beats_static_beats_default(admin):
    assert in_force(admin, "log.retention.ms") == (str(5 * 3_600_000), STATIC)
    assert in_force(admin, "log.segment.bytes") == ("1073741824", DEFAULT)
    alter(admin, "", ("log.retention.ms", "7000", SET), ("log.segment.bytes", "2000000", SET))
    assert in_force(admin, "log.retention.ms") == ("7000", DYNAMIC_DEFAULT)
    assert in_force(admin, "log.segment.bytes") == ("2000000", DYNAMIC_DEFAULT)
    alter(admin, "0", ("log.retention.ms", "1000", SET))
    assert in_force(admin, "log.retention.ms") == ("1000", DYNAMIC_BROKER)
    admin.create_topics([NewTopic("layered", 1)])["layered"].result(10)
    topic = ConfigResource(ConfigResource.Type.TOPIC, "layered")
    retention = admin.describe_configs([topic])[topic].result(10)["retention.ms"]
    assert (retention.value, int(retention.source)) == ("1000", DYNAMIC_BROKER), "BROKER-37"
    entry = describe(admin, "0")["log.retention.ms"]
    assert not entry.is_read_only and entry.source == DYNAMIC_BROKER
    default_level = describe(admin, "")  # the cluster level lists only its own configs
    assert {k: (e.value, e.source) for k, e in default_level.items()} == {
        "log.retention.ms": ("7000", DYNAMIC_DEFAULT),
        "log.segment.bytes": ("2000000", DYNAMIC_DEFAULT),
    }
    alter(admin, "0", ("log.retention.ms", None, DELETE))
    assert in_force(admin, "log.retention.ms") == ("7000", DYNAMIC_DEFAULT)
    alter(admin, "", ("log.retention.ms", None, DELETE), ("log.segment.bytes", None, DELETE))
    assert in_force(admin, "log.retention.ms") == (str(5 * 3_600_000), STATIC)
    assert in_force(admin, "log.segment.bytes") == ("1073741824", DEFAULT)


@pytest.mark.spec("CONFIG-5")
def test_only_dynamic_keys_with_valid_values_for_this_broker_are_accepted(admin, broker):
    for entries in (
        [("num.partitions", "3", SET)],  # read-only in Kafka too
        [("log.dirs", "/elsewhere", SET)],
        [("log.retention.ms", "soon", SET)],
        [("num.io.threads", "0", SET)],
    ):
        error = refusal(lambda e=entries: alter(admin, "0", *e))
        assert error.code() == KafkaError.INVALID_REQUEST, entries
    error = refusal(lambda: alter(admin, "0", ("num.partitions", "3", SET)))
    assert "Cannot update these configs dynamically: [num.partitions]" in error.str()
    alter(admin, "0", ("log.retention.ms", "1000", SET), validate_only=True)
    assert in_force(admin, "log.retention.ms")[1] == STATIC, "validate_only changes nothing"
    alter(admin, "0", ("log.segment.bytes", "3000000", SET))
    whole = ConfigResource(BROKER, "0", set_config={"log.retention.ms": "4000"})
    admin.alter_configs([whole])[whole].result(10)  # AlterConfigs: the whole layer
    assert in_force(admin, "log.retention.ms") == ("4000", DYNAMIC_BROKER)
    assert in_force(admin, "log.segment.bytes") == ("1073741824", DEFAULT), "left out: gone"
    alter(admin, "0", ("log.retention.ms", None, DELETE))
    with Wire("127.0.0.1", broker.port) as wire:  # another broker's id, sent to this one
        resource = IncrementalAlterConfigsRequest.AlterConfigsResource
        op = IncrementalAlterConfigsRequest.AlterableConfig
        body = IncrementalAlterConfigsRequest(
            resources=[
                resource(
                    resource_type=4,
                    resource_name="7",
                    configs=[op(name="log.retention.ms", config_operation=0, value="1000")],
                )
            ],
            validate_only=False,
        )
        answer = wire.request(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, body).responses[0]
        assert answer.error_code == KafkaError.INVALID_REQUEST
        assert "Unexpected broker id, expected 0, but received 7" in answer.error_message


@pytest.mark.spec("CONFIG-6")
def test_a_new_log_default_reaches_the_live_logs_and_survives_a_restart(admin, broker):
    topic = "dynamic-max-bytes"
    admin.create_topics([NewTopic(topic, 1)])[topic].result(10)

    def produce() -> int:  # one 1 kB record, its partition's error code
        with Wire("127.0.0.1", broker.port) as wire:
            return wire.produce(topic, 0, batch([b"v" * 1000]), acks=-1).error_code

    assert produce() == KafkaError.NO_ERROR
    alter(admin, "", ("message.max.bytes", "500", SET))
    assert produce() == KafkaError.MSG_SIZE_TOO_LARGE
    broker.restart()
    admin = Clients(broker.bootstrap)
    assert in_force(admin, "message.max.bytes") == ("500", DYNAMIC_DEFAULT)
    assert produce() == KafkaError.MSG_SIZE_TOO_LARGE, "the stored default, read at start"
    alter(admin, "", ("message.max.bytes", None, DELETE))
    assert produce() == KafkaError.NO_ERROR
