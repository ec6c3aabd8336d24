"""Dynamic broker configs: which keys Kafka accepts where (CONFIG-9), and what they change in
a running broker's parts (CONFIG-6, CONFIG-10), in-process.

Each key is altered with our admin client over the wire; the test then looks at the part
the key drives: the request handler pool, the KIP-890 verification switch, the cleaner's
task. (The log defaults' effect on live logs is in tests/interop/test_dynamic_broker_configs.py.)
"""

from __future__ import annotations

import pytest

from kafka_ref.client.admin import Admin, ConfigResource
from kafka_ref.errors import ErrorCode, KafkaError
from kafka_ref.server.dynamic_config import DynamicBrokerConfig, check_dynamic
from kafka_ref.server.kafka_config import ConfigError, KafkaConfig

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


# ---------------------------------------------------------------------- which keys (CONFIG-9)
@pytest.mark.spec("CONFIG-5", "CONFIG-9")
@pytest.mark.parametrize(
    "key,value,per_broker,refusal",
    [
        ("num.partitions", "3", True, "Cannot update these configs dynamically: [num.partitions]"),
        (
            "ssl.keystore.location",
            "/k.pem",
            True,
            "These security configs can be dynamically updated only per-listener using the "
            "listener prefix: [ssl.keystore.location]",
        ),
        ("log.retention.ms", "abc", True, "log.retention.ms"),
        (
            "sasl.jaas.config",
            "x",
            False,
            "Cannot update these configs at default cluster level, broker id must be specified: "
            "[sasl.jaas.config]",
        ),
        (
            "listener.name.plaintext.plain.sasl.jaas.config",
            "x",
            False,
            "Cannot update these configs at default cluster level, broker id must be specified: "
            "[listener.name.plaintext.plain.sasl.jaas.config]",
        ),
    ],
)
def test_kafkas_refusals_of_dynamic_broker_configs(key, value, per_broker, refusal):
    with pytest.raises(ConfigError) as err:
        check_dynamic({key: value}, per_broker=per_broker)
    assert refusal in str(err.value)


@pytest.mark.spec("CONFIG-9")
@pytest.mark.parametrize(
    "key,per_broker",
    [
        ("listener.name.sasl_plaintext.plain.sasl.jaas.config", True),
        ("listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config", True),
        ("listener.name.ssl.ssl.keystore.location", True),
        ("listener.name.ssl.ssl.client.auth", True),  # "required" below
        ("listener.name.nosuch.foo", True),
        ("sasl.enabled.mechanisms", True),
        ("ssl.client.auth", True),
        ("cordoned.log.dirs", True),
        ("background.threads", True),  # Kafka's, stored though kafka-ref has no such pool
        ("listener.name.plaintext.max.connections", False),  # a cluster-level listener key
        ("max.connections", False),
        ("some.unknown.key", False),  # Kafka stores keys it does not know
    ],
)
def test_kafkas_dynamic_keys_are_accepted(key, per_broker):
    value = "required" if key.endswith("ssl.client.auth") else "1"
    check_dynamic({key: value}, per_broker=per_broker)


@pytest.mark.spec("CONFIG-9")
def test_keys_kafka_ref_does_not_read_are_stored_and_described(make_broker):
    broker = make_broker(props={"broker.id": 1})
    alter(broker, "1", ("background.threads", "4", SET), ("listener.name.x.foo", "y", SET))
    assert broker.broker.controller.broker_configs("1") == {
        "background.threads": "4",
        "listener.name.x.foo": "y",
    }
    with Admin(broker.bootstrap) as admin:
        found = admin.describe_configs([ConfigResource(ConfigResource.BROKER, "1")])
    described = next(iter(found.values()))
    assert "background.threads" not in described  # kafka-ref lists the keys it knows
    assert described["listeners"].read_only is False  # Kafka's dynamic keys are not read-only
    assert described["num.partitions"].read_only is True


# ---------------------------------------------------------------------- applied (CONFIG-10)
PLAIN = "org.apache.kafka.common.security.plain.PlainLoginModule required"


def jaas(**users: str) -> str:
    entries = " ".join(f'user_{name}="{password}"' for name, password in users.items())
    return f"{PLAIN} {entries};"


def plain_client_works(port: int, user: str, password: str) -> bool:
    """A real client (librdkafka) authenticates with SASL PLAIN and lists the topics."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    client = AdminClient(
        {
            "bootstrap.servers": f"127.0.0.1:{port}",
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN",
            "sasl.username": user,
            "sasl.password": password,
            "retries": 0,
            "socket.timeout.ms": 3000,
        }
    )
    try:
        client.list_topics(timeout=4)
        return True
    except KafkaException:
        return False


@pytest.mark.spec("CONFIG-10")
def test_a_listeners_jaas_config_changes_who_may_log_in(make_broker):
    broker = make_broker(
        props={
            "broker.id": 1,
            "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
            "sasl.enabled.mechanisms": "PLAIN",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": jaas(alice="a-secret"),
        }
    )
    port = broker.broker.socket_server.ports["SASL_PLAINTEXT"]
    assert plain_client_works(port, "alice", "a-secret")
    assert not plain_client_works(port, "bob", "b-secret")
    key = "listener.name.sasl_plaintext.plain.sasl.jaas.config"
    alter(broker, "1", (key, jaas(bob="b-secret"), SET))
    assert plain_client_works(port, "bob", "b-secret")
    assert not plain_client_works(port, "alice", "a-secret")


@pytest.mark.spec("CONFIG-10")
def test_a_listener_setting_that_cannot_work_is_refused_and_changes_nothing(make_broker):
    broker = make_broker(
        props={
            "broker.id": 1,
            "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
            "sasl.enabled.mechanisms": "PLAIN",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": jaas(alice="a-secret"),
        }
    )
    key = "listener.name.sasl_plaintext.plain.sasl.jaas.config"
    with pytest.raises(KafkaError) as err:
        alter(broker, "1", (key, "not a jaas config", SET))
    assert err.value.code == ErrorCode.INVALID_REQUEST
    assert broker.broker.controller.broker_configs("1") == {}
    port = broker.broker.socket_server.ports["SASL_PLAINTEXT"]
    assert plain_client_works(port, "alice", "a-secret")
