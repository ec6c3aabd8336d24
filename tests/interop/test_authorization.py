"""confluent-kafka and kafka-python against ACLs, over SASL_PLAINTEXT with PLAIN users:
what is allowed works, what is not surfaces as the client's own authorization error."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, KafkaError, Producer
from kafka import KafkaProducer
from kafka.errors import TopicAuthorizationFailedError

from kafka_ref.client.admin import NewTopic
from kafka_ref.security.acls import AclOperation, ResourceType
from tests.unit.security.authz_fixtures import PASSWORDS, acl, admin_of, ports, start_acl_broker

pytestmark = pytest.mark.timeout(60)
Op, Res = AclOperation, ResourceType


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    broker = start_acl_broker(tmp_path_factory.mktemp("acl-interop") / "data")
    with admin_of(broker) as admin:
        admin.create_topics([NewTopic("orders", 1, 1), NewTopic("audit", 1, 1)])
        admin.create_acls(
            [
                acl(Res.TOPIC, "orders", Op.WRITE),
                acl(Res.TOPIC, "orders", Op.READ),
                acl(Res.TOPIC, "audit", Op.DESCRIBE),  # may see it, may not write it
            ]
        )
    yield broker
    broker.stop()


def sasl(broker, user: str = "alice") -> dict:
    return {
        "bootstrap.servers": f"127.0.0.1:{ports(broker)['SASL_PLAINTEXT']}",
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": user,
        "sasl.password": PASSWORDS[user],
    }


@pytest.mark.spec("SEC-17")
def test_confluent_kafka_produces_where_allowed_and_is_refused_a_group(broker):
    delivered = []
    producer = Producer(sasl(broker))
    for i in range(5):
        producer.produce("orders", f"o{i}".encode(), on_delivery=lambda e, m: delivered.append(e))
    assert producer.flush(15) == 0
    assert delivered == [None] * 5  # WRITE on the topic: every record acknowledged

    consumer = Consumer(
        {**sasl(broker), "group.id": "order-readers", "auto.offset.reset": "earliest"}
    )
    consumer.subscribe(["orders"])
    deadline, error = time.monotonic() + 15, None
    try:
        while error is None and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is not None:
                error = message.error()
            assert message is None or message.error() is not None, "consumed without GROUP READ"
    finally:
        consumer.close()
    assert error is not None and error.code() == KafkaError.GROUP_AUTHORIZATION_FAILED


@pytest.mark.spec("SEC-17")
def test_kafka_python_gets_topic_authorization_failed(broker):
    producer = KafkaProducer(
        bootstrap_servers=sasl(broker)["bootstrap.servers"],
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="PLAIN",
        sasl_plain_username="alice",
        sasl_plain_password=PASSWORDS["alice"],
        retries=0,
    )
    try:
        with pytest.raises(TopicAuthorizationFailedError):
            producer.send("audit", b"not allowed").get(timeout=15)
        producer.send("orders", b"allowed").get(timeout=15)
    finally:
        producer.close(timeout=5)
