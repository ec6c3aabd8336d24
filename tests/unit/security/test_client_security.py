"""kafka-ref's own clients over TLS and SASL (SEC-24, SEC-25), against the secure test broker.

The producer, consumer (in a group, so its heartbeat thread's connection logs in too) and
admin reach the SASL_SSL listener with SCRAM-SHA-512, the SSL listener with a client
certificate (mTLS), and the SASL_PLAINTEXT listener with PLAIN, each configured by Kafka's
client property names.
"""

from __future__ import annotations

import time
import uuid

import pytest

from kafka_ref.client import connection
from kafka_ref.client.admin import Admin, NewTopic
from kafka_ref.client.consumer import Consumer
from kafka_ref.client.producer import Producer
from kafka_ref.common import TopicPartition
from kafka_ref.security.client_security import (
    AuthenticationError,
    ClientSecurity,
    ClientSecurityError,
)
from tests.certs import SCRAM_USERS, make_pki
from tests.unit.security.conftest import port

SCRAM_JAAS = (
    "org.apache.kafka.common.security.scram.ScramLoginModule required "
    'username="alice" password="{password}";'
)


def sasl_ssl_scram(pki, password: str = SCRAM_USERS["alice"]) -> dict[str, str]:
    return {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.jaas.config": SCRAM_JAAS.format(password=password),
        "ssl.truststore.location": pki.ca,
    }


def mtls(pki, tmp_path) -> dict[str, str]:
    keystore = tmp_path / "client-keystore.pem"  # Kafka's PEM keystore: key, then chain
    with open(pki.client_key) as key, open(pki.client_cert) as cert:
        keystore.write_text(key.read() + cert.read())
    return {
        "security.protocol": "SSL",
        "ssl.truststore.location": pki.ca,
        "ssl.keystore.location": str(keystore),
    }


def sasl_plaintext_plain() -> dict[str, str]:
    return {  # librdkafka's names for the credentials
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": "alice",
        "sasl.password": "alice-secret",
    }


def round_trip(bootstrap: str, security: dict[str, str]) -> None:
    """Create a topic (admin), write three records (producer), read them back in a group
    (consumer): every connection of every client must log in."""
    topic, group = f"sec-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}"
    with Admin(bootstrap, security=security) as admin:
        admin.create_topics([NewTopic(topic, 2, 1)])
        assert topic in admin.list_topics()
    producer = Producer(bootstrap, security=security)
    try:
        for i in range(3):
            producer.send(topic, f"v{i}".encode(), key=f"k{i}".encode()).result(timeout=30)
    finally:
        producer.close()
    consumer = Consumer(bootstrap, group_id=group, auto_offset_reset="earliest", security=security)
    try:
        consumer.subscribe([topic])
        values: set[bytes] = set()
        for _ in range(60):
            values |= {r.value for r in consumer.poll(1.0)}
            if len(values) == 3:
                break
        assert values == {b"v0", b"v1", b"v2"}
        consumer.commit()  # through the group coordinator's own connection
    finally:
        consumer.close()


@pytest.mark.spec("SEC-24")
def test_clients_over_sasl_ssl_with_scram_sha_512(secure_broker, pki):
    round_trip(f"127.0.0.1:{port(secure_broker, 'SASL_SSL')}", sasl_ssl_scram(pki))


@pytest.mark.spec("SEC-24")
def test_clients_over_mtls(secure_broker, pki, tmp_path):
    round_trip(f"127.0.0.1:{port(secure_broker, 'SSL')}", mtls(pki, tmp_path))


@pytest.mark.spec("SEC-24", "SEC-25")
def test_librdkafkas_pem_locations_work_too(secure_broker, pki):
    """ssl.ca.location, ssl.certificate.location and ssl.key.location: mTLS as confluent-kafka
    is configured, so one properties file serves both."""
    security = {
        "security.protocol": "SSL",
        "ssl.ca.location": pki.ca,
        "ssl.certificate.location": pki.client_cert,
        "ssl.key.location": pki.client_key,
    }
    with Admin(f"127.0.0.1:{port(secure_broker, 'SSL')}", security=security) as admin:
        admin.list_topics()  # the listener requires a client certificate


@pytest.mark.spec("SEC-24")
def test_clients_over_sasl_plaintext_with_plain(secure_broker):
    round_trip(f"127.0.0.1:{port(secure_broker, 'SASL_PLAINTEXT')}", sasl_plaintext_plain())


@pytest.mark.spec("SEC-24")
def test_a_large_fetch_over_tls_arrives_whole(secure_broker, pki):
    """A fetch response of many TLS records (16 KB each) is read to its end."""
    bootstrap = f"127.0.0.1:{port(secure_broker, 'SASL_SSL')}"
    security, topic = sasl_ssl_scram(pki), f"big-{uuid.uuid4().hex[:8]}"
    value = bytes(range(256)) * 200  # 51 KB: each record spans several TLS records
    producer = Producer(bootstrap, security=security, batch_size=1 << 20, linger_ms=50)
    try:
        for future in [producer.send(topic, value, partition=0) for _ in range(40)]:
            future.result(timeout=30)
    finally:
        producer.close()
    consumer = Consumer(bootstrap, security=security, auto_offset_reset="earliest")
    try:
        consumer.assign([TopicPartition(topic, 0)])
        got: list[bytes] = []
        for _ in range(60):
            got += [r.value for r in consumer.poll(1.0)]
            if len(got) >= 40:
                break
        assert got == [value] * 40
    finally:
        consumer.close()


@pytest.mark.spec("SEC-24")
def test_bytes_left_decrypted_in_the_tls_layer_are_read(secure_broker, pki, monkeypatch):
    """Reads smaller than a TLS record leave its rest in the SSLSocket, where select() does
    not see it: the connection must read it before it waits on the socket again."""
    monkeypatch.setattr(connection, "RECEIVE_BYTES", 100)
    bootstrap = f"127.0.0.1:{port(secure_broker, 'SASL_SSL')}"
    with Admin(bootstrap, security=sasl_ssl_scram(pki), request_timeout_ms=20_000) as admin:
        admin.create_topics([NewTopic(f"small-reads-{uuid.uuid4().hex[:8]}", 3, 1)])
        assert admin.list_topics()


@pytest.mark.spec("SEC-24")
def test_a_wrong_password_is_an_authentication_error_naming_user_not_password(secure_broker, pki):
    """Refused at once by every client, naming mechanism and user, never the password. The
    timeouts are two minutes: a client that waited for them instead of raising the refusal
    would fail the one-minute bound (a behaviour check, far from any machine's speed)."""
    bootstrap = f"127.0.0.1:{port(secure_broker, 'SASL_SSL')}"
    security = sasl_ssl_scram(pki, password="not-the-password-17")
    started = time.monotonic()
    admin = Admin(bootstrap, security=security, request_timeout_ms=120_000)
    with admin, pytest.raises(AuthenticationError) as refused:
        admin.list_topics()
    assert time.monotonic() - started < 60
    message = str(refused.value)
    assert "'alice' with SCRAM-SHA-512" in message
    assert "not-the-password-17" not in message
    producer = Producer(bootstrap, security=security, max_block_ms=120_000)
    try:
        with pytest.raises(AuthenticationError):  # as Kafka's: send() fails the future
            producer.send("any-topic", b"x").result(timeout=30)
    finally:
        producer.close(timeout=5)
    consumer = Consumer(bootstrap, security=security, default_api_timeout_ms=120_000)
    try:
        started = time.monotonic()
        with pytest.raises(AuthenticationError):
            consumer.partitions_for_topic("any-topic")
        assert time.monotonic() - started < 60
    finally:
        consumer.close(timeout=5)


@pytest.mark.spec("SEC-24")
def test_a_broker_certificate_from_another_ca_fails_the_tls_handshake(
    secure_broker, tmp_path_factory
):
    other = make_pki(str(tmp_path_factory.mktemp("other-pki")))  # its CA did not sign the broker
    bootstrap = f"127.0.0.1:{port(secure_broker, 'SASL_SSL')}"
    security = {**sasl_ssl_scram(other), "ssl.truststore.location": other.ca}
    admin = Admin(bootstrap, security=security)
    with admin, pytest.raises(AuthenticationError, match=r"TLS handshake .* failed"):
        admin.list_topics()


@pytest.mark.spec("SEC-24")
def test_a_mechanism_the_listener_does_not_enable_is_named(pki, tmp_path):
    from tests.unit.security.conftest import start_secure_broker

    broker = start_secure_broker(
        pki, tmp_path / "data", **{"sasl.enabled.mechanisms": "SCRAM-SHA-512"}
    )
    try:
        bootstrap = f"127.0.0.1:{port(broker, 'SASL_PLAINTEXT')}"
        admin = Admin(bootstrap, security=sasl_plaintext_plain())
        with admin, pytest.raises(AuthenticationError, match=r"PLAIN .*enabled: SCRAM-SHA-512"):
            admin.list_topics()
    finally:
        broker.stop()


@pytest.mark.spec("SEC-25")
@pytest.mark.parametrize(
    "props,fragment",
    [
        ({"security.protocol": "SASL_TLS"}, "security.protocol=SASL_TLS is not one of"),
        (
            {"security.protocol": "SASL_PLAINTEXT", "sasl.username": "a", "sasl.password": "b"},
            "sasl.mechanism=GSSAPI is not supported",
        ),
        (
            {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN"},
            "SASL needs credentials",
        ),
        (
            {
                "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism": "PLAIN",
                "sasl.jaas.config": 'PlainLoginModule required username="a";',
            },
            'needs username="..." password="..."',
        ),
        ({"sasl.mechansim": "PLAIN"}, "unknown security property sasl.mechansim"),
        ({"security.protocol": "SSL", "ssl.truststore.type": "JKS"}, "only PEM stores"),
        ({"ssl.endpoint.identification.algorithm": "http"}, "https, or empty for none"),
        (
            {"security.protocol": "SSL", "ssl.truststore.location": "/nonexistent/ca.pem"},
            "ssl.truststore: cannot load",
        ),
        (
            {"security.protocol": "SSL", "ssl.certificate.location": "/nonexistent/c.pem"},
            "go together: ssl.key.location is missing",
        ),
        (
            {
                "security.protocol": "SSL",
                "ssl.certificate.location": "/nonexistent/c.pem",
                "ssl.key.location": "/nonexistent/c.key",
            },
            "ssl.certificate.location: cannot read /nonexistent/c.pem: No such file",
        ),
    ],
)
def test_security_properties_that_cannot_work_are_refused_by_name(props, fragment):
    with pytest.raises(ClientSecurityError, match=fragment.replace("(", r"\(")):
        ClientSecurity.from_properties(props)


@pytest.mark.spec("SEC-25")
def test_the_password_stays_out_of_the_repr(pki):
    security = ClientSecurity.from_properties(sasl_ssl_scram(pki, password="hidden-pw-99"))
    assert security.username == "alice" and security.mechanism == "SCRAM-SHA-512"
    assert "hidden-pw-99" not in repr(security)
    assert security.ssl_context is not None and security.ssl_context.check_hostname
    off = {**sasl_ssl_scram(pki), "ssl.endpoint.identification.algorithm": ""}
    assert not ClientSecurity.from_properties(off).ssl_context.check_hostname


@pytest.mark.spec("SEC-24")
def test_the_heartbeat_threads_own_connection_logs_in_too(pki, tmp_path):
    """A member that does not poll for three session timeouts stays in the group: only its
    heartbeat thread, on a connection of its own, talks to the SASL_SSL listener."""
    from tests.unit.security.conftest import start_secure_broker

    broker = start_secure_broker(pki, tmp_path / "data", **{"group.min.session.timeout.ms": 200})
    bootstrap, security = f"127.0.0.1:{port(broker, 'SASL_SSL')}", sasl_ssl_scram(pki)
    admin = Admin(bootstrap, security=security)
    member = Consumer(
        bootstrap,
        group_id="hb",
        security=security,
        session_timeout_ms=1000,
        heartbeat_interval_ms=100,
    )
    try:
        admin.create_topics([NewTopic("hb-topic", 1, 1)])
        member.subscribe(["hb-topic"])
        deadline = time.monotonic() + 30
        while not member.assignment() or member.coordinator.rejoin_needed_or_pending():
            assert time.monotonic() < deadline, "the member did not join in time"
            member.poll(0.05)
        generation = member.coordinator.generation
        time.sleep(3.0)  # three session timeouts without poll()
        group = admin.describe_groups(["hb"])["hb"]
        assert group.state == "Stable"
        assert [m.member_id for m in group.members] == [generation.member_id]
    finally:
        member.close()
        admin.close()
        broker.stop()
