"""SASL on the wire: the KIP-152 gate, failures, re-authentication, v0 raw tokens.

Each refusal must be clean: an answer where Kafka gives one, then the connection closes,
while another client on the same listener goes on undisturbed.
"""

from __future__ import annotations

import struct
import time

import pytest

from kafka_ref.errors import ErrorCode
from kafka_ref.protocol.messages import (
    ApiKey,
    ApiVersionsRequest,
    DescribeConfigsRequest,
    MetadataRequest,
    ProduceRequest,
    SaslAuthenticateRequest,
)
from tests.certs import SCRAM_USERS
from tests.unit.security.conftest import SecureWire, client_context, port, start_secure_broker
from tests.unit.server.conftest import batch

ALICE = SCRAM_USERS["alice"]


@pytest.fixture
def bystander(secure_broker):
    """An authenticated client that must stay undisturbed by the others' mistakes."""
    wire = SecureWire(port(secure_broker, "SASL_PLAINTEXT"))
    assert wire.scram("alice", ALICE).error_code == 0
    yield wire
    assert wire.metadata([], 5, False).brokers, "the bystander lost its connection"
    wire.close()


def principals(broker) -> set[str]:
    return broker.call(lambda: {c.principal for c in broker.broker.socket_server.connections})


@pytest.mark.spec("SEC-6")
def test_only_authentication_is_served_before_authentication(secure_broker, bystander):
    wire = SecureWire(port(secure_broker, "SASL_PLAINTEXT"))
    versions = wire.request(
        ApiKey.API_VERSIONS,
        3,
        ApiVersionsRequest(client_software_name="t", client_software_version="1"),
    )
    assert versions.error_code == 0  # ApiVersions is fine before authentication
    body = ProduceRequest(transactional_id=None, acks=1, timeout_ms=1000, topic_data=[])
    wire.send(ApiKey.PRODUCE, 7, body)
    assert wire.closed_by_broker()


@pytest.mark.spec("SEC-6")
def test_sasl_authenticate_before_sasl_handshake_closes(secure_broker, bystander):
    wire = SecureWire(port(secure_broker, "SASL_PLAINTEXT"))
    wire.send(ApiKey.SASL_AUTHENTICATE, 2, _token(b"\x00alice\x00alice-secret"))
    assert wire.closed_by_broker()


@pytest.mark.spec("SEC-6")
def test_sasl_requests_on_a_plaintext_listener_are_illegal_state(secure_broker):
    wire = SecureWire(port(secure_broker, "PLAINTEXT"))
    assert wire.handshake("PLAIN").error_code == ErrorCode.ILLEGAL_SASL_STATE
    assert wire.authenticate(b"x").error_code == ErrorCode.ILLEGAL_SASL_STATE
    assert wire.metadata([], 5, False).brokers  # and the connection goes on


@pytest.mark.spec("SEC-9")
def test_without_session_expiry_there_is_no_re_authentication(secure_broker):
    wire = SecureWire(port(secure_broker, "SASL_PLAINTEXT"))
    assert wire.plain("alice", "alice-secret").session_lifetime_ms == 0
    assert wire.handshake("PLAIN").error_code == ErrorCode.ILLEGAL_SASL_STATE
    assert wire.authenticate(b"\x00alice\x00alice-secret").error_code == (
        ErrorCode.ILLEGAL_SASL_STATE
    )
    assert wire.metadata([], 5, False).brokers  # still authenticated, still served


@pytest.mark.spec("SEC-7")
def test_an_unknown_mechanism_gets_the_enabled_list_then_closes(secure_broker, bystander):
    wire = SecureWire(port(secure_broker, "SASL_PLAINTEXT"))
    response = wire.handshake("GSSAPI")
    assert response.error_code == ErrorCode.UNSUPPORTED_SASL_MECHANISM
    assert response.mechanisms == ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]
    assert wire.closed_by_broker()


@pytest.mark.spec("SEC-7")
@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256"])
def test_a_wrong_password_fails_cleanly_then_closes(secure_broker, bystander, mechanism, caplog):
    wire = SecureWire(port(secure_broker, "SASL_PLAINTEXT"))
    if mechanism == "PLAIN":
        response = wire.plain("alice", "guess-123")
    else:
        response = wire.scram("alice", "guess-123", mechanism)
    assert response.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
    assert "Authentication failed" in response.error_message
    assert "guess-123" not in response.error_message
    assert wire.closed_by_broker()
    assert "guess-123" not in caplog.text and "alice-secret" not in caplog.text


@pytest.mark.spec("SEC-5")
def test_the_principal_is_the_sasl_user(secure_broker, pki):
    with SecureWire(port(secure_broker, "SASL_SSL"), client_context(pki)) as wire:
        before = principals(secure_broker)
        assert wire.plain("admin", "admin-secret").error_code == 0
        assert wire.metadata([], 5, False).brokers
        assert "User:admin" in principals(secure_broker) - before


@pytest.mark.spec("SEC-9")
def test_sessions_expire_and_re_authentication_renews_them(pki, tmp_path):
    broker = start_secure_broker(pki, tmp_path / "data", **{"connections.max.reauth.ms": 600})
    try:
        wire = SecureWire(port(broker, "SASL_PLAINTEXT"))
        response = wire.scram("alice", ALICE, "SCRAM-SHA-256")
        assert response.session_lifetime_ms == 600
        assert wire.metadata([], 5, False).brokers
        time.sleep(0.7)  # the session is over: only a re-authentication is accepted now
        assert wire.scram("alice", ALICE, "SCRAM-SHA-512").session_lifetime_ms == 600
        assert wire.metadata([], 5, False).brokers  # renewed
        other = SecureWire(port(broker, "SASL_PLAINTEXT"))
        assert other.plain("alice", "alice-secret").error_code == 0
        time.sleep(0.7)  # past the renewed session's lifetime
        wire.send(ApiKey.METADATA, 5, MetadataRequest(topics=[], allow_auto_topic_creation=False))
        assert wire.closed_by_broker()  # expired and not renewed: closed, no answer
        changed = other.handshake("PLAIN")
        assert changed.error_code == 0
        refused = other.authenticate(b"\x00admin\x00admin-secret")  # another principal
        assert refused.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
        assert "Cannot change principals" in refused.error_message
        assert other.closed_by_broker()
    finally:
        broker.stop()


@pytest.mark.spec("SEC-12")
def test_a_v0_handshake_takes_bare_tokens(secure_broker, bystander):
    wire = SecureWire(port(secure_broker, "SASL_PLAINTEXT"))
    assert wire.handshake("PLAIN", version=0).error_code == 0
    wire.send_raw(_frame(b"\x00alice\x00alice-secret"))
    assert wire.read_frame() == b""  # PLAIN's (empty) answer, as a bare frame
    assert wire.metadata([], 5, False).brokers
    bad = SecureWire(port(secure_broker, "SASL_PLAINTEXT"))
    assert bad.handshake("PLAIN", version=0).error_code == 0
    bad.send_raw(_frame(b"\x00alice\x00nope"))
    assert bad.closed_by_broker()


def _frame(token: bytes) -> bytes:
    return struct.pack(">i", len(token)) + token


def _token(data: bytes) -> SaslAuthenticateRequest:
    return SaslAuthenticateRequest(auth_bytes=data)


@pytest.mark.spec("SEC-7")
def test_describe_configs_shows_no_password(secure_broker):
    body = DescribeConfigsRequest(
        resources=[
            DescribeConfigsRequest.DescribeConfigsResource(
                resource_type=4,
                resource_name="0",
                configuration_keys=None,  # broker.id 0
            )
        ],
        include_synonyms=True,
    )
    wire = SecureWire(port(secure_broker, "PLAINTEXT"))
    configs = {c.name: c for c in wire.request(ApiKey.DESCRIBE_CONFIGS, 2, body).results[0].configs}
    for key in ("ssl.key.password", "sasl.jaas.config", "ssl.keystore.key"):  # the first is set
        assert configs[key].is_sensitive and configs[key].value is None
    assert (
        configs["ssl.client.auth"].value == "none" and not configs["ssl.client.auth"].is_sensitive
    )


@pytest.mark.spec("BROKER-55")
def test_a_large_frame_before_authentication_closes_the_connection(secure_broker, bystander):
    """sasl.server.max.receive.size (524288): a client that has not authenticated may not
    make the broker read a frame any larger, however far below socket.request.max.bytes."""
    over = SecureWire(port(secure_broker, "SASL_PLAINTEXT"))
    over.send_raw(struct.pack(">i", 524288 + 1) + b"\0" * 16)
    assert over.closed_by_broker()
    at_limit = SecureWire(port(secure_broker, "SASL_PLAINTEXT"))
    at_limit.send_raw(struct.pack(">i", 524288) + b"\0" * 16)  # allowed: waits for the rest
    assert not at_limit.closed_by_broker(seconds=1.0)
    at_limit.close()
    # Authenticated, a connection may send larger frames: a 600 KB produce is answered.
    wire = SecureWire(port(secure_broker, "SASL_PLAINTEXT"))
    assert wire.scram("alice", ALICE).error_code == 0
    wire.create_topic("after-authentication")
    answer = wire.produce("after-authentication", 0, batch(2, value_size=300_000))
    assert answer.error_code == 0
