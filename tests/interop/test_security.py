"""confluent-kafka and kafka-python over SASL_SSL, SASL_PLAINTEXT and mTLS, with their usual
settings, against a kafka-ref broker process with all four listeners.

The broker is configured only with Kafka's property names (tests/certs.py); its SCRAM user is
created with `kafka-ref users` before it starts. Each client produces and then consumes in a
group (FindCoordinator and Metadata answer with the client's own listener, SEC-2).
"""

from __future__ import annotations

import pathlib
import socket
import subprocess
import sys
import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaError, Producer
from kafka import KafkaConsumer, KafkaProducer

from kafka_ref.tools.server_process import ServerProcess, free_port
from tests.certs import PLAIN_JAAS, SCRAM_USERS, make_pki, secure_broker_props
from tests.unit.security.conftest import port, start_secure_broker

pytestmark = pytest.mark.timeout(120)

RECORDS = 50
ALICE = SCRAM_USERS["alice"]
assert 'user_alice="alice-secret"' in PLAIN_JAAS


@pytest.fixture(scope="module")
def secure(tmp_path_factory):
    """(broker, pki, ports by listener name)."""
    base = tmp_path_factory.mktemp("secure-interop")
    pki = make_pki(str(base))
    data = base / "data"
    data.mkdir()
    add = f"SCRAM-SHA-512=[password={ALICE}],SCRAM-SHA-256=[iterations=8192,password={ALICE}]"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "kafka_ref.cli",
            "users",
            "--data-dir",
            str(data),
            "--alter",
            "--add-config",
            add,
            "--entity-name",
            "alice",
        ],
        check=True,
        capture_output=True,
    )
    ports = dict(
        zip(
            ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"),
            (free_port() for _ in range(4)),
            strict=True,
        )
    )
    props = {**secure_broker_props(pki, tuple(ports.values())), "log.dirs": str(data)}
    cmd = [sys.executable, "-m", "kafka_ref.cli", "broker"]
    for key, value in props.items():
        cmd += ["--config", f"{key}={value}"]
    broker = ServerProcess("kafka-ref broker", cmd, ports["PLAINTEXT"], str(base / "broker.log"))
    broker.start()
    for listener_port in ports.values():  # every listener accepts once the broker is ready
        socket.create_connection(("127.0.0.1", listener_port), timeout=5).close()
    yield broker, pki, ports
    broker.stop()


def confluent_settings(secure, how: str) -> dict:
    _broker, pki, ports = secure
    if how == "sasl_ssl_scram":
        return {
            "bootstrap.servers": f"127.0.0.1:{ports['SASL_SSL']}",
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.username": "alice",
            "sasl.password": ALICE,
            "ssl.ca.location": pki.ca,
        }
    if how == "sasl_plaintext_plain":
        return {
            "bootstrap.servers": f"127.0.0.1:{ports['SASL_PLAINTEXT']}",
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN",
            "sasl.username": "alice",
            "sasl.password": "alice-secret",
        }
    return {
        "bootstrap.servers": f"127.0.0.1:{ports['SSL']}",
        "security.protocol": "SSL",
        "ssl.ca.location": pki.ca,
        "ssl.certificate.location": pki.client_cert,
        "ssl.key.location": pki.client_key,
    }


def kafka_python_settings(secure, how: str) -> dict:
    _broker, pki, ports = secure
    if how == "sasl_ssl_scram":
        return dict(
            bootstrap_servers=f"127.0.0.1:{ports['SASL_SSL']}",
            security_protocol="SASL_SSL",
            sasl_mechanism="SCRAM-SHA-512",
            sasl_plain_username="alice",
            sasl_plain_password=ALICE,
            ssl_cafile=pki.ca,
        )
    if how == "sasl_plaintext_plain":
        return dict(
            bootstrap_servers=f"127.0.0.1:{ports['SASL_PLAINTEXT']}",
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanism="PLAIN",
            sasl_plain_username="alice",
            sasl_plain_password="alice-secret",
        )
    return dict(
        bootstrap_servers=f"127.0.0.1:{ports['SSL']}",
        security_protocol="SSL",
        ssl_cafile=pki.ca,
        ssl_certfile=pki.client_cert,
        ssl_keyfile=pki.client_key,
    )


def values(topic: str) -> list[bytes]:
    return [f"{topic}-{i}-".encode() + b"x" * 1000 for i in range(RECORDS)]


def confluent_round_trip(settings: dict, topic: str) -> list[bytes]:
    producer = Producer(settings)
    for value in values(topic):
        producer.produce(topic, value)
    assert producer.flush(30) == 0
    consumer = Consumer({**settings, "group.id": f"g-{topic}", "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    got: list[bytes] = []
    deadline = time.monotonic() + 30
    while len(got) < RECORDS and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            got.append(message.value())
    consumer.close()
    return got


def kafka_python_round_trip(settings: dict, topic: str) -> list[bytes]:
    producer = KafkaProducer(**settings)
    for value in values(topic):
        producer.send(topic, value)
    producer.flush(30)
    producer.close()
    consumer = KafkaConsumer(topic, group_id=f"g-{topic}", auto_offset_reset="earliest", **settings)
    got: list[bytes] = []
    deadline = time.monotonic() + 30
    while len(got) < RECORDS and time.monotonic() < deadline:
        for records in consumer.poll(timeout_ms=500).values():
            got.extend(r.value for r in records)
    consumer.close()
    return got


HOW = ["sasl_ssl_scram", "sasl_plaintext_plain", "ssl_mtls"]
RULES = {"sasl_ssl_scram": "SEC-10", "sasl_plaintext_plain": "SEC-8", "ssl_mtls": "SEC-4"}


@pytest.mark.parametrize(
    "how", [pytest.param(h, marks=pytest.mark.spec(RULES[h], "SEC-1")) for h in HOW]
)
def test_confluent_kafka_produces_and_consumes(secure, how):
    topic = f"ck-{how}-{uuid.uuid4().hex[:6]}"
    assert confluent_round_trip(confluent_settings(secure, how), topic) == values(topic)


@pytest.mark.parametrize(
    "how", [pytest.param(h, marks=pytest.mark.spec(RULES[h], "SEC-1")) for h in HOW]
)
def test_kafka_python_produces_and_consumes(secure, how):
    topic = f"kp-{how}-{uuid.uuid4().hex[:6]}"
    assert kafka_python_round_trip(kafka_python_settings(secure, how), topic) == values(topic)


@pytest.mark.spec("SEC-7")
def test_confluent_kafka_reports_a_wrong_password(secure):
    errors: list[KafkaError] = []
    settings = {**confluent_settings(secure, "sasl_ssl_scram"), "sasl.password": "not-it"}
    producer = Producer({**settings, "error_cb": errors.append})
    deadline = time.monotonic() + 10
    while not errors and time.monotonic() < deadline:
        producer.poll(0.2)
    assert errors and errors[0].code() == KafkaError._AUTHENTICATION
    assert "invalid credentials with SASL mechanism SCRAM-SHA-512" in errors[0].str()
    log = pathlib.Path(secure[0].log_path).read_text()
    assert "not-it" not in log and ALICE not in log


@pytest.mark.spec("SEC-9")
def test_librdkafka_re_authenticates_on_the_same_connection(tmp_path):
    pki = make_pki(str(tmp_path))
    broker = start_secure_broker(pki, tmp_path / "data", **{"connections.max.reauth.ms": 1000})
    failed: list = []
    producer = Producer(
        {
            "bootstrap.servers": f"127.0.0.1:{port(broker, 'SASL_PLAINTEXT')}",
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "SCRAM-SHA-256",
            "sasl.username": "alice",
            "sasl.password": ALICE,
            "on_delivery": lambda err, _msg: err and failed.append(err),
        }
    )

    def sessions() -> dict[int, int]:
        connections = broker.broker.socket_server.connections
        return broker.call(lambda: {id(c): c.authenticator.session_expires_ns for c in connections})

    try:
        producer.produce("reauth", b"first")
        assert producer.flush(10) == 0
        before, started = sessions(), time.monotonic()
        while time.monotonic() - started < 2.5:  # two and a half session lifetimes
            producer.produce("reauth", b"more")
            producer.poll(0.1)
        assert producer.flush(10) == 0 and not failed
        after = sessions()
        kept = before.keys() & after.keys()
        assert kept and all(after[c] > before[c] for c in kept)  # renewed, not reconnected
    finally:
        broker.stop()
